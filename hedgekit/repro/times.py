"""The whole kit's time table: how long each model and each notebook took, and where.

``reproduce --train-missing`` records every model it trained in ``<out>/train.json`` (`record_training`: seconds,
device, how many seeds trained stacked with it, and each run's wall time); ``reproduce`` records every notebook in
``<out>/run.json`` (`hedgekit.repro.summary.write_summary`: status, seconds, device, the models it trained itself).
After either, `write_times` writes both as one Markdown table to ``<out>/times.md``, and with ``--times-to FILE``
also between the two lines `BEGIN` and `END` of FILE (e.g. docs/speed.md), replacing what was there.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from hedgekit.errors import InputError
from hedgekit.repro.summary import write_text

__all__ = ["BEGIN", "END", "check_marked", "record_training", "times_table", "write_times"]

BEGIN = "<!-- reproduce times: begin -->"
END = "<!-- reproduce times: end -->"


def check_marked(path: str | Path) -> Path:
    """``path`` if it is a file holding `BEGIN` and then `END`, each on a line of its own, once; else an InputError
    saying what to add (checked before training or running anything: a long run must not fail at its end)."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise InputError(f"--times-to {path}: cannot read it ({exc.strerror or exc})") from exc
    if lines.count(BEGIN) != 1 or lines.count(END) != 1 or lines.index(BEGIN) > lines.index(END):
        raise InputError(f"--times-to {path}: the file needs the two lines {BEGIN!r} and {END!r}, once each and in "
                         "that order, around the place the time table goes")
    return path


def record_training(out: str | Path, result: dict) -> Path:
    """Add the models `hedgekit.repro.pool.train_missing` trained (``result["models"]``) and its wall time to
    ``<out>/train.json``; a model trained again replaces its record. Returns the file's path."""
    path = Path(out) / "train.json"
    old = _load(path)
    models = {m["name"]: m for m in old.get("models", [])}
    models.update({m["name"]: {**m, "seconds": round(m["seconds"], 1)} for m in result["models"]})
    runs = old.get("runs", [])
    if result["models"]:
        runs.append({"date": time.strftime("%Y-%m-%d %H:%M"), "seconds": round(result["seconds"], 1),
                     "trained": len(result["models"])})
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({"models": list(models.values()), "runs": runs}, indent=1))
    return path


def times_table(out: str | Path) -> str:
    """The Markdown time table of ``<out>``'s ``train.json`` and ``run.json`` (either may be missing)."""
    out = Path(out)
    train, run = _load(out / "train.json"), _load(out / "run.json")
    models, notebooks = train.get("models", []), run.get("runs", [])
    wall = sum(r["seconds"] for r in train.get("runs", []))
    lines = [f"**Time table** of `python -m hedgekit reproduce` into `{out.name}/` (written "
             f"{time.strftime('%Y-%m-%d %H:%M')}).", ""]
    if models:
        lines += [f"Training (`--train-missing`): {len(models)} models in {wall:.0f} s of wall time over "
                  f"{len(train.get('runs', []))} run(s). A stacked model's seconds are its seed set's.", "",
                  "| model | device | seconds | trained |", "|---|---|---|---|"]
        lines += [f"| {m['name']} | {m['device']} | {m['seconds']:.0f} | "
                  f"{'stacked, %d seeds' % m['stacked'] if m.get('stacked', 1) > 1 else 'alone'} |" for m in models]
        lines.append("")
    if notebooks:
        mode = "FAST" if run.get("fast") else "full"
        seconds = sum(r.get("seconds", 0.0) for r in notebooks)
        lines += [f"Notebooks ({mode} mode): {len(notebooks)} in {seconds:.0f} s.", "",
                  "| notebook | status | device | seconds | of which training |", "|---|---|---|---|---|"]
        lines += [f"| {r['notebook']} | {r['status']} | {r.get('device', '-')} | {r.get('seconds', 0.0):.0f} | "
                  + (f"{r['trained']} models, {r['train_seconds']:.0f} s |" if r.get("trained") else "- |")
                  for r in notebooks]
        lines.append("")
    if models and notebooks:
        lines.append(f"Whole kit: training {wall:.0f} s + notebooks {seconds:.0f} s = {wall + seconds:.0f} s "
                     f"({(wall + seconds) / 60:.1f} min).")
    if not models and not notebooks:
        lines.append("Nothing recorded yet: no model trained by `--train-missing` and no notebook run.")
    return "\n".join(lines).rstrip() + "\n"


def write_times(out: str | Path, to: str | Path | None = None) -> Path:
    """Write `times_table` to ``<out>/times.md`` and, with ``to``, between `BEGIN` and `END` of that file
    (`check_marked`); returns the path of times.md."""
    table = times_table(out)
    path = Path(out) / "times.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, table)
    if to is not None:
        lines = check_marked(to).read_text().splitlines(keepends=True)
        begin = next(i for i, line in enumerate(lines) if line.rstrip("\n") == BEGIN)
        end = next(i for i, line in enumerate(lines) if line.rstrip("\n") == END)
        write_text(Path(to), "".join(lines[:begin + 1]) + table + "".join(lines[end:]))
    return path


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
