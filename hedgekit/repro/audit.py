"""``reproduce --audit K``: retrain K models of the ledger from scratch and judge each measure against the spread
of the ledger's other seeds of the same spec.

The records audited are K of those retraining can re-measure (the group a checkpoint records at training time,
`hedgekit.zoo.ledger.CHECKPOINT_GROUPS`, under the current code key), drawn with `random.Random` from a seed that is
printed (``--audit-seed`` to draw the same again). Each model is retrained from scratch in memory
(`hedgekit.zoo.store.train_spec`: no checkpoint is read from the cache or written to it) and its group measured as
its checkpoint would record it (`hedgekit.zoo.ledger.checkpoint_measures`). A retrained measure is judged against
the 95% prediction interval for one more seed from the ledger's n other seeds of the spec (`prediction_interval`):
mean +- t(0.975, n - 1) * sd * sqrt(1 + 1/n); with fewer than 2 other seeds (or an undefined measure) it cannot be
judged. The audit passes when every judged measure lies inside its interval.

Each audit is kept beside the ledger's records, one JSON line in `AUDIT_LOG` (`audit_log` reads them, with the
seed, device, what was drawn and each measure's row), and ``python -m hedgekit results`` lists them in
docs/results.md (`audit_section`).
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import math
import random
from pathlib import Path
from typing import Sequence

from hedgekit.checks import write_bytes_atomic
from hedgekit.errors import InputError
from hedgekit.paths import REPO_DIR, git
from hedgekit.repro.plan import estimated_seconds
from hedgekit.zoo import ledger, store

__all__ = ["AUDIT_LOG", "prediction_interval", "audit", "audit_log", "audit_section"]

AUDIT_LOG = "audits.jsonl"  # in `hedgekit.zoo.ledger.ledger_dir`: one line per audit, oldest first


def prediction_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """The ``level`` prediction interval for one more draw from the distribution of ``values`` (their undefined
    entries, None or NaN, left out): mean +- t((1 + level) / 2, n - 1) * sd * sqrt(1 + 1/n), sd with ddof = 1;
    None with fewer than 2 values."""
    from scipy import stats

    v = [float(x) for x in values if x is not None and not math.isnan(float(x))]
    n = len(v)
    if n < 2:
        return None
    mean = sum(v) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd * math.sqrt(1 + 1 / n)
    return mean - half, mean + half


def audit(k: int, seed: int | None = None, device: str = "cpu", echo=print, models=None, only: str = "") -> int:
    """Audit ``k`` records of the ledger (module docstring); ``seed`` draws them (None: a fresh one, printed), among
    the records of ``models`` (model names: ``reproduce --audit K --only 08`` draws among notebook 08's, ``only``
    saying so in the record) or of every model (None). Prints the draw and a table (model, measure, the ledger's
    other seeds n, interval, recorded and retrained value, inside?), appends the audit to `AUDIT_LOG` and returns the
    exit status: 0 when every judged measure lies inside its interval, else 1. InputError when ``k`` < 1 or the
    ledger holds no record retraining can re-measure."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"--audit takes how many records to retrain, a whole number >= 1; got {k!r}")
    current = []
    for rec in ledger.records():
        if models is not None and rec["model"] not in models:
            continue
        spec = ledger.spec_of(rec)
        if rec["group"] == ledger.CHECKPOINT_GROUPS.get(getattr(spec, "family", "")) \
                and rec["code_key"] == ledger.code_key(spec):
            current.append((rec, spec))
    if not current:
        raise InputError(f"the ledger ({ledger.ledger_dir()}) holds no record that retraining can re-measure")
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    chosen = random.Random(seed).sample(current, min(k, len(current)))
    echo(f"[audit] seed {seed}: {len(chosen)} of {len(current)} records drawn"
         + (f" (all there are; {k} asked)" if k > len(current) else "") + ": "
         + ", ".join(f"{rec['model']} ({rec['group']})" for rec, _ in chosen))
    rows, judged, outside = [], 0, 0
    for rec, spec in chosen:
        minutes = estimated_seconds(spec, device) / 60
        echo(f"[audit] retraining {spec.name} from scratch on {device} (~{minutes:.1f} min)")
        _, meta = store.train_spec(spec, progress=False, device=device)
        _, values = ledger.checkpoint_measures(spec, meta)
        others = [o for o, s in current if o["group"] == rec["group"] and o["seed"] != rec["seed"]
                  and o["model"] == dataclasses.replace(spec, seed=o["seed"]).name]
        for measure in sorted(rec["measures"]):
            sample = [o["measures"].get(measure) for o in others]
            interval = prediction_interval(sample)
            got = values.get(measure)
            got = math.nan if got is None else float(got)
            n = sum(x is not None for x in sample)
            if interval is None or math.isnan(got):
                verdict = f"cannot judge: {n} other seeds" if interval is None else "cannot judge: undefined"
                shown = "-"
            else:
                inside = interval[0] <= got <= interval[1]
                judged, outside = judged + 1, outside + (not inside)
                verdict, shown = ("yes" if inside else "NO"), f"[{interval[0]:.4g}, {interval[1]:.4g}]"
            rows.append((rec["model"], measure, n, shown, _value(rec["measures"][measure]), _value(got), verdict))
    echo(f"{'model':<46} {'measure':<16} {'n':>3} {'interval (95%, one more seed)':<30} {'recorded':>10} "
         f"{'retrained':>10}  inside?")
    for model, measure, n, shown, recorded, got, verdict in rows:
        echo(f"{model:<46} {measure:<16} {n:>3} {shown:<30} {recorded:>10} {got:>10}  {verdict}")
    echo(f"[audit] {judged} measures judged, {outside} outside their interval, "
         f"{len(rows) - judged} not judged; seed {seed}")
    path = _append_audit({"asked": k, "seed": seed, "only": only, "device": device,
                          "drawn": [rec["model"] for rec, _ in chosen], "judged": judged, "outside": outside,
                          "rows": [dict(zip(("model", "measure", "n", "interval", "recorded", "retrained", "inside"),
                                            row)) for row in rows]})
    echo(f"[audit] recorded in {path}")
    return 1 if outside else 0


def audit_log(folder=None) -> list[dict]:
    """The audits recorded in `AUDIT_LOG` of ``folder`` (default `hedgekit.zoo.ledger.ledger_dir`), oldest first;
    [] where none is."""
    path = Path(folder if folder is not None else ledger.ledger_dir()) / AUDIT_LOG
    if not path.is_file():
        return []
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except ValueError as exc:
        raise InputError(f"{path} is not JSON Lines ({exc}); restore it from git") from None


def _append_audit(entry: dict) -> Path:
    """Add ``entry`` with the date, commit and versions to `AUDIT_LOG` (written whole: `write_bytes_atomic`)."""
    import torch

    from hedgekit import __version__

    path = ledger.ledger_dir() / AUDIT_LOG
    record = {"date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
              "commit": (git(REPO_DIR, "rev-parse", "HEAD") or "").strip(), "torch": torch.__version__,
              "hedgekit": __version__, **entry}
    old = path.read_bytes() if path.is_file() else b""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, old + (json.dumps(record, sort_keys=True) + "\n").encode())
    return path


def audit_section(audits: Sequence[dict]) -> list[str]:
    """The lines of docs/results.md's section on the ledger's audits (`audit_log`): one table row per audit."""
    lines = ["## Audits of the ledger", "",
             "`python -m hedgekit reproduce --audit K` retrains K records of the ledger from scratch and judges each "
             "measure against the 95% prediction interval of the ledger's other seeds of its spec "
             "(`hedgekit/repro/audit.py`; each audit is kept in `hedgekit/ledger/audits.jsonl`).", ""]
    if not audits:
        return lines + ["No audit is recorded yet."]
    lines += ["| date | command | device | models retrained | measures judged | outside | not judged |",
              "|---|---|---|---|---|---|---|"]
    for a in audits:
        command = f"`reproduce --audit {a['asked']} --audit-seed {a['seed']}" + (f" --only {a['only']}`"
                                                                                  if a.get("only") else "`")
        lines.append(f"| {a['date']} | {command} | {a['device']} | {', '.join(a['drawn'])} | {a['judged']} | "
                     f"{a['outside']} | {len(a['rows']) - a['judged']} |")
    return lines


def _value(x) -> str:
    return "-" if x is None or math.isnan(float(x)) else f"{float(x):.4g}"
