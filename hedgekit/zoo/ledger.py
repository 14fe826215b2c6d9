"""The ledger: committed, diffable evidence of every trained model a claim uses; checkpoints are only a cache.

One JSON Lines file per paper (`PAPERS`: ``hib.jsonl``, ``spe.jsonl``, ``taha.jsonl``, ``url.jsonl``) in
`ledger_dir` (``hedgekit/ledger/``, or the folder named by the environment variable ``HEDGEKIT_LEDGER``). A model
goes to the file of its paper (`paper_of`: point and HIB models to hib, PN and SPE to spe, triplet models to taha,
URL runs to url). Each line is one record, one JSON object with sorted keys, lines sorted by (model, group, code
key), so ``pandas.read_json(path, lines=True)`` reads a file (``precise_float=True`` for the floats exactly: pandas'
default parser may move the last digit) and ``git diff`` shows what a run added. A record is one model and one named
group of measures:

``model``, ``seed``, ``spec``
    the spec's name and seed, and its fields (`spec_fields`; `spec_of` rebuilds the spec from them).
``group``, ``measures``
    the group's name and its measures, name -> float (null where a measure is undefined, e.g. the Kendall taus of
    a point model). The groups a checkpoint records at training time (`checkpoint_measures`): ``table1`` for
    pair-trained models (HIB's Table 1 metrics, `hedgekit.evaluation.retrieval.table1_metrics`, and
    ``eval_images``), ``quick_check`` for prototype and triplet models (the episode accuracy or mAP their trainer
    measures, `hedgekit.zoo.recipes`). A URL run records ``benchmark``, its leaderboard metrics
    (`hedgekit.papers.url.benchmark.ledger_record`, written as each run finishes). What a notebook measures on a
    model beyond that is a group of its own, named by its paper (`hedgekit.repro.measured`, e.g. ``number_line``).
``code_key``
    what the model is beyond its name (`code_key`): 12 hex digits of the SHA-256 of the spec's training config
    (`ModelSpec.train_config` without ``precision``, which says how a model trained, not what it is: the store's
    staleness rule, `hedgekit.zoo.store.is_stale`), or of a URL run's `URLSpec.run_config` (which holds the hash
    of its code). A record whose key the current code no longer gives for its spec is history: readers pass it
    over, and a record under today's key is kept beside it. `RETIRED_CODE_KEYS` names such keys and why.
``data_fingerprint``
    the training data's fingerprint (`hedgekit.data.provenance`; "" for the generated L-shapes).
``device``, ``precision``, ``torch``, ``hedgekit``, ``train_seconds``
    where, in which precision and with which versions the model trained, and for how long. A checkpoint that
    records no device predates that field, which the kit added before any of its models trained on a GPU: cpu.
``processor`` (optional)
    for a model trained on the CPU, the processor's model name (`hedgekit.zoo.store.processor_name`, from the
    checkpoint's metadata): CPU training repeats bit for bit on one processor, not on another, whose kernels sum
    float32 in another order. Records written before this field have none; where docs/speed.md names the
    machines of the sessions that wrote them, they were AMD EPYC processors.
``job_seconds`` (optional)
    the wall seconds of the whole job that trained and measured the model in ``reproduce --train-missing``
    (training, its trainer's evaluation and the notebooks' measures; a stacked seed set's training shared evenly
    among its seeds): what a budget spends (`hedgekit.repro.plan.estimated_seconds`). Records written before this
    field, or by ``--record-cached``, have none.
``commit``, ``date``
    the commit checked out (``git rev-parse HEAD``; "" outside a git checkout) and the UTC date when the record
    was written: for a model recorded by ``reproduce --train-missing``, the day it finished training.
``checkpoint_sha256``
    the SHA-256 of the checkpoint file the measures were read from.
``tolerance``
    how far another measurement of the same model may differ and still agree (`agree`): 0 for a model trained on
    the CPU, whose training and evaluation are bit for bit repeatable; `GPU_TOLERANCE` for one trained on cuda or
    mps, whose kernels may sum in another order from one run to the next.

Writing: `append` (`record_measures`, `record_checkpoint`, `record_table1` build the record) holds an exclusive
lock on the ledger folder (``fcntl.flock``; none where the platform has no ``fcntl``), reads the file, and either
finds the (model, group, code key) already held, or writes the whole file anew through
`hedgekit.checks.write_bytes_atomic` (a temporary file in the same folder, fsynced, then ``os.replace``): a reader
sees the old file or the new, never half a line, and two runs recording at once both keep their records. A record
already held is never overwritten: equal measures (`agree`) write nothing; different ones raise `LedgerConflict`.

`check` compares a record with the one held, as `append` does, and writes nothing.

Reading: `records`, `frame`, `measures`, `seeds_of` and `ledger_meta` validate every line (an `InputError` names the
file, the line and what was expected).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime
import functools
import hashlib
import json
import math
import numbers
import os
from collections import Counter
from pathlib import Path
from typing import Mapping

from hedgekit.checks import storage_error, write_bytes_atomic
from hedgekit.errors import InputError
from hedgekit.paths import PACKAGE_DIR, REPO_DIR, git
from hedgekit.zoo.specs import ModelSpec, Spec
from hedgekit.zoo.store import find_checkpoint, is_stale, load_checkpoint, recorded_spec
from hedgekit.zoo.url_runs import URLSpec

__all__ = ["PAPERS", "GPU_TOLERANCE", "RETIRED_CODE_KEYS", "CHECKPOINT_GROUPS", "FIELDS", "OPTIONAL_FIELDS",
           "LedgerConflict", "ledger_dir", "paper_of", "ledger_path", "spec_fields", "spec_of", "code_key",
           "tolerance_for", "agree", "append", "check", "build_record", "record_measures", "checkpoint_measures",
           "record_checkpoint", "record_table1", "record_cached", "check_checkpoint", "records", "frame", "measures",
           "seeds_of", "held", "ledger_meta", "seed_sources"]

LEDGER_ENV = "HEDGEKIT_LEDGER"
PAPERS = ("hib", "spe", "taha", "url")
_PAPER_OF_KIND = {"point": "hib", "hib": "hib", "pn": "spe", "spe": "spe", "triplet": "taha", "het": "taha",
                  "url": "url"}
# |a - b| <= GPU_TOLERANCE * max(1, |a|, |b|) for a model trained on cuda or mps: absolute for measures up to 1 (AP,
# KNN accuracy, eta, variances), relative above (HIB's variance ratio, ~350). A GPU's kernels may sum in another
# order from one run to the next; float32 rounding in the forward pass moved AP by 7e-8 and the variance ratio by
# 3e-7 of itself (docs/speed.md, "The same numbers on another device"). On the CPU the recorded metrics re-evaluate
# bit for bit (same section), so a CPU record's tolerance is 0.
GPU_TOLERANCE = 1e-6
# code key -> why its recipe was retired (the records under it stay as history; readers pass them over)
RETIRED_CODE_KEYS: dict[str, str] = {}
# training family -> the group of measures its checkpoints record at training time (`checkpoint_measures`)
CHECKPOINT_GROUPS = {"pairs": "table1", "episodes": "quick_check", "triplets": "quick_check"}
# measures a checkpoint keeps beside its ``metrics`` rather than in them
_BESIDE_METRICS = ("eval_images",)
# field -> the JSON types its value may have (an int is a valid float)
FIELDS: dict[str, tuple[type, ...]] = {
    "model": (str,), "seed": (int,), "spec": (dict,), "group": (str,), "measures": (dict,), "code_key": (str,),
    "data_fingerprint": (str,), "device": (str,), "precision": (str,), "torch": (str,), "hedgekit": (str,),
    "commit": (str,), "date": (str,), "train_seconds": (float, int), "checkpoint_sha256": (str,),
    "tolerance": (float, int)}
# field -> its JSON types, for the fields a record may leave out
OPTIONAL_FIELDS: dict[str, tuple[type, ...]] = {"job_seconds": (float, int), "processor": (str,)}


class LedgerConflict(InputError):
    """A measurement of a model disagrees with the ledger's record of the same model, group and code key."""


# ------------------------------------------------------------------ where, and what a record is
def ledger_dir() -> Path:
    """The ledger's folder: ``HEDGEKIT_LEDGER`` if set, else the package's ``hedgekit/ledger/``."""
    env = os.environ.get(LEDGER_ENV)
    return Path(env).expanduser() if env else PACKAGE_DIR / "ledger"


def paper_of(spec: ModelSpec | URLSpec) -> str:
    """The paper whose ledger file holds ``spec``'s records (module docstring)."""
    return _PAPER_OF_KIND[spec.kind]


def ledger_path(paper: str, folder: str | os.PathLike | None = None) -> Path:
    """``<folder>/<paper>.jsonl`` (``folder``: `ledger_dir` by default); InputError for a paper not in `PAPERS`."""
    if paper not in PAPERS:
        raise InputError(f"no ledger for paper {paper!r}; the papers are {', '.join(PAPERS)}")
    return Path(folder if folder is not None else ledger_dir()) / f"{paper}.jsonl"


def spec_fields(spec: ModelSpec | URLSpec) -> dict:
    """``spec``'s fields as plain JSON, with its ``kind``: what `spec_of` rebuilds it from (a URL run's budget by
    name)."""
    if isinstance(spec, URLSpec):
        return {"kind": spec.kind, "method": spec.method, "budget": spec.budget_name, "seed": spec.seed}
    return dataclasses.asdict(spec)


def spec_of(record: Mapping) -> ModelSpec | URLSpec:
    """The spec a record names, rebuilt from its ``spec`` fields (`hedgekit.zoo.Spec`); InputError if they do not
    build one, or build one of another name or seed than the record's."""
    try:
        spec = Spec(**record["spec"])
    except (InputError, TypeError) as exc:
        raise InputError(f"its spec {record['spec']!r} does not build a model spec ({exc})") from exc
    if spec.name != record["model"] or spec.seed != record["seed"]:
        raise InputError(f"its spec builds {spec.name!r} (seed {spec.seed}), not the record's model "
                         f"{record['model']!r} (seed {record['seed']})")
    return spec


def code_key(spec: ModelSpec | URLSpec) -> str:
    """12 hex digits of the SHA-256 of what ``spec`` is beyond its name (module docstring): its training config
    without ``precision``, or a URL run's `URLSpec.run_config`."""
    if isinstance(spec, URLSpec):
        config = spec.run_config()
    else:
        config = {k: v for k, v in dataclasses.asdict(spec.train_config()).items() if k != "precision"}
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=repr).encode()).hexdigest()[:12]


def tolerance_for(device: str) -> float:
    """A record's ``tolerance``: 0 for a model trained on the CPU, `GPU_TOLERANCE` on any other device."""
    return 0.0 if device.split(":")[0].strip().lower() == "cpu" else GPU_TOLERANCE


def agree(a: float | None, b: float | None, tolerance: float) -> bool:
    """Whether two measurements of one measure agree: both undefined (None or NaN), or
    |a - b| <= tolerance * max(1, |a|, |b|) (tolerance 0: exactly equal)."""
    a, b = (math.nan if v is None else float(v) for v in (a, b))
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))


# ------------------------------------------------------------------ writing
def append(record: Mapping, folder: str | os.PathLike | None = None) -> dict:
    """Add ``record`` to its paper's file (module docstring, "Writing"); returns the record the ledger holds.

    A record of the same model, group and code key already held either agrees (every measure, `agree` with the
    larger of the two tolerances; nothing is written) or raises `LedgerConflict`, whose message names each
    differing measure with both values, both checkpoints' SHA-256 and what to do. InputError for a malformed
    record; `hedgekit.errors.StorageError` if the folder cannot be written."""
    record = _checked(dict(record), "the record to add")
    path = ledger_path(paper_of(spec_of(record)), folder)
    with _locked(path.parent):
        held_records = _read(path)
        old = _agreeing(held_records, record, path)
        if old is not None:
            return old
        lines = sorted(held_records + [record], key=_key)
        write_bytes_atomic(path, "".join(_line(r) + "\n" for r in lines).encode())
    return record


def check(record: Mapping, folder: str | os.PathLike | None = None) -> dict | None:
    """What `append` checks, without writing: the ledger's record of ``record``'s model, group and code key if it
    holds one and every measure agrees (`agree`), None if it holds none; `LedgerConflict` if the measures differ.
    For a measurement that must not write the ledger (a notebook reading a cached run) but may not contradict it."""
    record = _checked(dict(record), "the record to check")
    path = ledger_path(paper_of(spec_of(record)), folder)
    return _agreeing(_read(path), record, path)


def record_measures(spec: ModelSpec | URLSpec, group: str, measures: Mapping, meta: Mapping,
                    checkpoint_path: str | os.PathLike, folder: str | os.PathLike | None = None) -> dict:
    """Record ``measures`` of the model ``spec`` under ``group`` (`build_record`, then `append`); returns the record
    the ledger holds."""
    return append(build_record(spec, group, measures, meta, checkpoint_path), folder)


def build_record(spec: ModelSpec | URLSpec, group: str, measures: Mapping, meta: Mapping,
                 checkpoint_path: str | os.PathLike) -> dict:
    """The record of ``measures`` (name -> number; None or NaN: undefined) of the model ``spec`` under ``group``,
    with the provenance its checkpoint metadata ``meta`` and file ``checkpoint_path`` give (module docstring);
    nothing is written."""
    versions = meta.get("versions") or {}
    device = str(meta.get("device") or "cpu")
    record = {"model": spec.name, "seed": spec.seed, "spec": spec_fields(spec), "group": group,
              "measures": {str(k): _measure(k, v) for k, v in measures.items()}, "code_key": code_key(spec),
              "data_fingerprint": str((meta.get("data") or {}).get("fingerprint", "")), "device": device,
              "precision": str((meta.get("train_config") or {}).get("precision", "float32")),
              "torch": str(versions.get("torch", "")), "hedgekit": str(versions.get("hedgekit", "")),
              "commit": _commit(), "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
              "train_seconds": float(meta.get("train_seconds", 0.0)),
              "checkpoint_sha256": _file_sha256(checkpoint_path), "tolerance": tolerance_for(device)}
    if meta.get("processor"):
        record["processor"] = str(meta["processor"])
    return _checked(record, f"the record of {spec.name}")


def checkpoint_measures(spec: ModelSpec | URLSpec, meta: Mapping) -> tuple[str, dict] | None:
    """(group, measures) a checkpoint's trainer measured (`CHECKPOINT_GROUPS`): its ``metrics`` and, for
    ``table1``, ``eval_images``; None for a URL run or a checkpoint that records no metrics."""
    group = CHECKPOINT_GROUPS.get(getattr(spec, "family", ""))
    metrics = meta.get("metrics")
    if group is None or not isinstance(metrics, Mapping):
        return None
    return group, {**metrics, **{k: meta[k] for k in _BESIDE_METRICS if k in meta}}


def record_checkpoint(path_or_spec, folder: str | os.PathLike | None = None, group: str | None = None) -> dict:
    """Record the group a checkpoint's trainer measured (`checkpoint_measures`), read from its metadata (no
    re-evaluation); `append`. ``path_or_spec``: a checkpoint file, or a spec whose checkpoint
    `hedgekit.zoo.find_checkpoint` finds. InputError if there is none, if it records no spec or no measures, if
    its group is not ``group`` (when given), or if it was trained with another recipe than its spec names today
    (`hedgekit.zoo.is_stale`: its code key would not describe it)."""
    if isinstance(path_or_spec, (str, os.PathLike)):
        path = Path(path_or_spec)
        if not path.is_file():
            raise InputError(f"no checkpoint at {path}")
    else:
        path = find_checkpoint(path_or_spec)
        if path is None:
            raise InputError(f"no checkpoint of {path_or_spec.name} on this machine (shipped or cached): train it "
                             f"(`python -m hedgekit reproduce --train-missing`), or record it where it is")
    _, meta = load_checkpoint(path)
    spec = recorded_spec(meta, path)
    if spec is None:
        raise InputError(f"{path} records no spec of a zoo model: nothing to record it under")
    measured = checkpoint_measures(spec, meta)
    if measured is None:
        raise InputError(f"{path} records no metrics")
    if group is not None and measured[0] != group:
        raise InputError(f"{path} holds a {spec.kind} model, whose checkpoint records {measured[0]}, not {group}")
    if is_stale(path, spec):
        raise InputError(f"{path} was trained with another recipe than {spec.name} names today; retrain it "
                         f"before recording it")
    return record_measures(spec, *measured, meta, path, folder)


def record_cached(specs, folder: str | os.PathLike | None = None) -> tuple[list[dict], list[str]]:
    """Bring home what this machine trained: `record_checkpoint` for each of ``specs`` whose checkpoint is shipped
    or cached here, records measures and is not yet held (`held`), e.g. a model trained by ``python -m hedgekit
    train``, inside a notebook, or on a lent GPU machine. Returns (records written, names passed over with the
    reason: no checkpoint here, no measures in it, or another recipe than its spec names today)."""
    written, passed = [], []
    for spec in {s.name: s for s in specs}.values():
        group = CHECKPOINT_GROUPS.get(getattr(spec, "family", ""))
        if group is None or held(spec, group, folder) is not None:
            continue
        if find_checkpoint(spec) is None:
            passed.append(f"{spec.name}: no checkpoint on this machine")
            continue
        try:
            written.append(record_checkpoint(spec, folder))
        except LedgerConflict:
            raise
        except InputError as exc:
            passed.append(f"{spec.name}: {exc}")
    return written, passed


def record_table1(path_or_spec, folder: str | os.PathLike | None = None) -> dict:
    """The ``table1`` group of a pair-trained (point or HIB) checkpoint: `record_checkpoint` with
    ``group="table1"``."""
    return record_checkpoint(path_or_spec, folder, group="table1")


def check_checkpoint(spec: ModelSpec | URLSpec, meta: Mapping, folder: str | os.PathLike | None = None) -> None:
    """`LedgerConflict` if the ledger holds ``spec``'s checkpoint group (`held`) and the measures recorded in the
    loaded checkpoint ``meta`` (``meta["path"]``: its file, for the message) do not agree with it; nothing where
    the ledger holds no record of it."""
    measured = checkpoint_measures(spec, meta)
    if measured is None:
        return
    group, values = measured
    old = held(spec, group, folder)
    if old is None:
        return
    path = meta.get("path") or ""
    device = str(meta.get("device") or "cpu")
    new = {"model": spec.name, "group": group, "measures": {k: _measure(k, v) for k, v in values.items()},
           "device": device, "tolerance": tolerance_for(device),
           "checkpoint_sha256": _file_sha256(path) if path and Path(path).is_file() else "unknown",
           **({"processor": str(meta["processor"])} if meta.get("processor") else {})}
    _raise_unless_agree(old, new, ledger_path(paper_of(spec), folder))


# ------------------------------------------------------------------ reading
def records(paper: str | None = None, folder: str | os.PathLike | None = None) -> list[dict]:
    """Every record of ``paper``'s file (all papers if None), in file order, those of retired recipes included;
    [] for a paper with no file yet. InputError for a malformed line (file:line and what was expected), and for the
    URL runs' records before the URL paper is imported (it defines their specs: `hedgekit.zoo.url_runs`)."""
    papers = PAPERS if paper is None else (paper,)
    return [r for p in papers for r in _read(ledger_path(p, folder))]


def frame(paper: str | None = None, folder: str | os.PathLike | None = None):
    """`records` as a pandas DataFrame, one row per record, one column per field (``measures`` and ``spec`` hold
    dicts; an optional field, `OPTIONAL_FIELDS`, NaN where a record has none): what ``pandas.read_json(path,
    lines=True, dtype=False, convert_dates=False, precise_float=True)`` reads from the files."""
    import pandas as pd

    return pd.DataFrame(records(paper, folder), columns=sorted({**FIELDS, **OPTIONAL_FIELDS}))


def held(spec: ModelSpec | URLSpec, group: str, folder: str | os.PathLike | None = None) -> dict | None:
    """The record of ``spec``'s model and ``group`` under its current code key (`code_key`), or None."""
    key = (spec.name, group, code_key(spec))
    return next((r for r in _read(ledger_path(paper_of(spec), folder)) if _key(r) == key), None)


def measures(model_name: str, group: str, folder: str | os.PathLike | None = None) -> dict | None:
    """The measures (name -> float, NaN where undefined) of model ``model_name``'s ``group`` under the code key the
    current code gives its spec; None if the ledger holds none. Only the file of its paper is read (a name begins
    with its kind, `paper_of`), so that reading a HIB model's measures needs no other paper's specs (a URL run's
    are known only once the URL paper is imported, `hedgekit.zoo.url_runs`)."""
    paper = _PAPER_OF_KIND.get(model_name.split("-")[0])
    for r in records(paper, folder) if paper is not None else ():
        if r["model"] == model_name and r["group"] == group and r["code_key"] == code_key(spec_of(r)):
            return _floats(r["measures"])
    return None


def seeds_of(spec: ModelSpec | URLSpec, group: str | None = None, folder: str | os.PathLike | None = None) -> list[int]:
    """The seeds the ledger holds records of (of ``group``, or any) for ``spec`` with any seed, under the current
    code key, sorted."""
    key = code_key(spec)
    return sorted({r["seed"] for r in _read(ledger_path(paper_of(spec), folder))
                   if (group is None or r["group"] == group) and r["code_key"] == key
                   and r["model"] == dataclasses.replace(spec, seed=r["seed"]).name})


def ledger_meta(spec: ModelSpec | URLSpec, folder: str | os.PathLike | None = None) -> dict | None:
    """The ledger's record of ``spec``'s checkpoint group (`CHECKPOINT_GROUPS`) in the form of a checkpoint's
    metadata, for a model whose checkpoint is not on this machine: ``metrics`` (NaN where undefined), the
    measures a checkpoint keeps beside them (``eval_images``), ``name``, ``seed``, ``train_config`` (the spec's,
    in the record's precision), ``device``, ``date``, ``train_seconds``, ``source`` "ledger", ``path`` (the ledger
    file), ``sha256`` (the checkpoint's) and the ``record`` itself; None if the ledger holds no such record."""
    group = CHECKPOINT_GROUPS.get(getattr(spec, "family", ""))
    rec = held(spec, group, folder) if group is not None else None
    if rec is None:
        return None
    values = _floats(rec["measures"])
    beside = {k: int(values.pop(k)) for k in _BESIDE_METRICS if k in values}
    return {"name": rec["model"], "seed": rec["seed"], "metrics": values, **beside,
            "train_config": {**dataclasses.asdict(spec.train_config()), "precision": rec["precision"]},
            "device": rec["device"], "date": rec["date"], "train_seconds": rec["train_seconds"],
            "source": "ledger", "path": str(ledger_path(paper_of(spec), folder)), "sha256": rec["checkpoint_sha256"],
            "record": rec}


def seed_sources(metas) -> str:
    """Where the measures of a row's seeds came from, e.g. "3 seeds: 1 from a checkpoint on this machine, 2 from the
    ledger (trained on cpu, recorded 2026-11-28)"; ``metas``: the seeds' metadata (a checkpoint's, or `ledger_meta`),
    whose ``source`` says "trained now", "ledger", or else that a checkpoint was loaded."""
    metas = list(metas)
    now = sum(m.get("source") == "trained now" for m in metas)
    recorded = [m for m in metas if m.get("source") == "ledger"]
    loaded = len(metas) - now - len(recorded)
    parts = ([f"{now} trained now"] if now else []) \
        + ([f"{loaded} from {'a checkpoint' if loaded == 1 else 'checkpoints'} on this machine"] if loaded else [])
    if recorded:
        groups = Counter((m.get("device", "?"), m.get("date", "?")) for m in recorded)
        where = "; ".join(f"{'' if len(groups) == 1 else f'{count} '}trained on {device}, recorded {date}"
                          for (device, date), count in sorted(groups.items()))
        parts.append(f"{len(recorded)} from the ledger ({where})")
    return f"{len(metas)} seed{'' if len(metas) == 1 else 's'}: " + (", ".join(parts) if parts else "none")


# ------------------------------------------------------------------ internals
def _key(record: Mapping) -> tuple[str, str, str]:
    return record["model"], record["group"], record["code_key"]


def _line(record: Mapping) -> str:
    return json.dumps(record, sort_keys=True, allow_nan=False, ensure_ascii=False)


def _measure(name, value) -> float | None:
    """One measure as JSON: a float, or None where it is undefined (NaN); InputError for anything else."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isinf(float(value)):
        raise InputError(f"measure {name!r} must be a finite number, or None or NaN where it is undefined; "
                         f"got {value!r}")
    value = float(value)
    return None if math.isnan(value) else value


def _floats(values: Mapping) -> dict:
    return {k: math.nan if v is None else float(v) for k, v in values.items()}


def _checked(record: dict, where: str) -> dict:
    """``record`` if every field of `FIELDS` is there with its type, no field beyond them and `OPTIONAL_FIELDS`,
    each of those with its type, its measures are numbers or null and its spec rebuilds it (`spec_of`); else
    InputError naming ``where``."""
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object (one ledger record), got {type(record).__name__}")
    missing = sorted(set(FIELDS) - set(record))
    extra = sorted(set(record) - set(FIELDS) - set(OPTIONAL_FIELDS))
    if missing or extra:
        raise InputError(f"{where}: a ledger record has the fields {', '.join(sorted(FIELDS))}, and may have "
                         f"{', '.join(sorted(OPTIONAL_FIELDS))}"
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; unknown {', '.join(extra)}" if extra else ""))
    types = {**FIELDS, **OPTIONAL_FIELDS}
    wrong = [f"{k} ({type(record[k]).__name__}, expected {' or '.join(t.__name__ for t in types[k])})"
             for k in sorted(set(types) & set(record))
             if isinstance(record[k], bool) or not isinstance(record[k], types[k])]
    if wrong:
        raise InputError(f"{where}: wrong types: {', '.join(wrong)}")
    try:
        record["measures"] = {k: _measure(k, v) for k, v in record["measures"].items()}
        spec_of(record)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from exc
    return record


def _read(path: Path) -> list[dict]:
    """The records of the ledger file at ``path`` ([] if absent), checked (`_checked`), each (model, group, code
    key) once; a copy, so that callers may change what they get."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return []
    return copy.deepcopy(_parsed(str(path), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=16)
def _parsed(path: str, mtime_ns: int, size: int) -> list[dict]:
    """`_read`'s work, once per file version (its modification time and size are in the key)."""
    out, seen = [], {}
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            where = f"{path}:{number}"
            if not text.strip():
                raise InputError(f"{where}: empty line; expected one JSON object per line (a ledger record)")
            try:
                record = json.loads(text)
            except ValueError as exc:
                raise InputError(f"{where}: not JSON ({exc}); expected one JSON object per line (a ledger "
                                 f"record)") from exc
            record = _checked(record, where)
            if _key(record) in seen:
                raise InputError(f"{where}: {record['model']} / {record['group']} (code key {record['code_key']}) "
                                 f"is already recorded on line {seen[_key(record)]}; a record is held once (a merge "
                                 f"may have added it twice: keep the line that is right)")
            seen[_key(record)] = number
            out.append(record)
    return out


def _agreeing(held_records: list[dict], record: Mapping, path: Path) -> dict | None:
    """The one of ``held_records`` with ``record``'s (model, group, code key), checked to agree with it
    (`_raise_unless_agree`); None if there is none."""
    old = next((r for r in held_records if _key(r) == _key(record)), None)
    if old is not None:
        _raise_unless_agree(old, record, path)
    return old


def _raise_unless_agree(old: Mapping, new: Mapping, path: Path) -> None:
    """`LedgerConflict` (a paragraph: model, group, each differing measure with both values, both checkpoints'
    SHA-256, what to do) unless every measure of ``new`` agrees with ``old`` (`agree`, larger tolerance)."""
    tol = max(float(old["tolerance"]), float(new["tolerance"]))
    a, b = old["measures"], new["measures"]
    differ = [f"{k} {_shown(a.get(k, 'absent'))} (ledger) against {_shown(b.get(k, 'absent'))} (new)"
              for k in sorted(set(a) | set(b))
              if k not in a or k not in b or not agree(a[k], b[k], tol)]
    if not differ:
        return
    allowed = "exactly" if tol == 0 else f"within {tol:g} (x max(1, |value|))"
    spec = old["spec"]
    cached = (f"url/{spec['budget']}/{spec['method']}-s{old['seed']}.json and its .pt" if spec.get("kind") == "url"
              else f"checkpoints/{old['model']}.pt")  # where the store caches it (`hedgekit.zoo.cache_checkpoint_path`)
    raise LedgerConflict(
        f"The ledger ({path}) holds {old['model']}'s {old['group']} measures, recorded {old['date']} from checkpoint "
        f"sha256 {old['checkpoint_sha256']} trained on {_where(old)}, and a new measurement from checkpoint sha256 "
        f"{new['checkpoint_sha256']} (trained on {_where(new)}) does not agree with them {allowed}: "
        f"{'; '.join(differ)}. A record is never overwritten. The same checkpoint always measures the same; a "
        f"model retrained under this name is another draw unless it trained on the same CPU and library build (a GPU, "
        f"another CPU or another build round differently), or it was trained with other code or data. To keep the "
        f"recorded evidence, delete the new checkpoint (the cache's {cached}) and decide from the "
        f"ledger; to keep this machine's models in a ledger of their own, point {LEDGER_ENV} at another folder; if the "
        f"recorded model is the wrong one, remove its line from {path.name} in a commit that says why, then record "
        f"the new one.")


def _where(record: Mapping) -> str:
    """Where ``record``'s model trained: its device, and its processor where it names one."""
    return record["device"] + (f" ({record['processor']})" if record.get("processor") else "")


def _shown(value) -> str:
    return "null" if value is None else repr(value) if isinstance(value, float) else str(value)


@contextlib.contextmanager
def _locked(folder: Path):
    """An exclusive lock on ``folder`` (created if missing) for one read-check-write of a ledger file; no lock where
    the platform has no ``fcntl``."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY)
    except OSError as exc:
        raise storage_error(folder, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _commit() -> str:
    """``git rev-parse HEAD`` of the repository the kit runs from; "" if it is not a git checkout."""
    return (git(REPO_DIR, "rev-parse", "HEAD") or "").strip()