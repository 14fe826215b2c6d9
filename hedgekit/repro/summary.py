"""The reproduction report: ``summary.md``, ``summary.html`` and ``run.json`` from the notebooks' run records and
the manifests they wrote (`hedgekit.repro.report`), one section per notebook (`write_summary`)."""
from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Sequence

from hedgekit.checks import atomic_write
from hedgekit.repro.report import precision_note, read_manifest

FAST_MODE = "FAST (CI sizes: shipped paper models where they exist, else fast preset models)"

__all__ = ["FAST_MODE", "write_summary", "write_text"]


def write_summary(runs: Sequence[dict], out_dir: str | Path, fast: bool, total_seconds: float | None = None,
                  registered: Sequence[str] = ()) -> Path:
    """Build ``summary.md`` (+ ``summary.html``, ``run.json``) from run records and the notebooks' manifests.

    The report is cumulative: notebooks run into the same folder by an earlier call
    in the same mode keep their section (with the date they ran), so full-mode notebooks can be run one at
    a time and still give one report. ``total_seconds`` is this call's wall time; the header adds the
    carried-over notebooks' run times.

    Every notebook of ``registered`` (file names; `hedgekit.repro.reproduce.reproduce` passes the registry's) that
    has no record in this folder and mode is listed as "not run", with the command that adds it (``missing`` in ``run.json``): a cumulative
    report built one notebook at a time must not lose a registered notebook silently (notebook 09 was never run
    into the committed report, and nothing said so).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    now = time.strftime("%Y-%m-%d %H:%M")
    runs = [dict(r, date=r.get("date", now)) for r in runs]
    earlier = _previous_runs(out, fast, {r["notebook"] for r in runs})
    total = sum(r.get("seconds", 0.0) for r in runs) if total_seconds is None else total_seconds
    total += sum(r.get("seconds", 0.0) for r in earlier)
    runs = sorted(runs + earlier, key=lambda r: r["notebook"])
    missing = sorted(set(registered) - {r["notebook"] for r in runs})
    metas = {r["notebook"]: _read_entries(r, out) for r in runs}
    lines = _header(runs, metas, missing, fast, total)
    for r in runs:
        lines += _section(r, metas[r["notebook"]], out)
    md = "\n".join(lines) + "\n"
    path = out / "summary.md"
    write_text(path, md)
    write_text(out / "run.json", json.dumps({"fast": fast, "total_seconds": round(total, 1), "missing": missing,
                                             "runs": [{k: v for k, v in r.items() if k != "entries"} for r in runs],
                                             "meta": metas}, indent=1, default=str))
    _write_html(md, out / "summary.html")
    return path


def _read_entries(run: dict, out: Path) -> dict:
    """Put the manifest entries of ``run``'s assets into ``run["entries"]``; return its merged run information."""
    run["entries"] = read_manifest(out / run["assets"]) if run.get("assets") else []
    meta: dict = {}
    for e in run["entries"]:
        if e.get("kind") == "meta":
            meta.update(e.get("info", {}))
    return meta


def _header(runs: list[dict], metas: dict, missing: list[str], fast: bool, total: float) -> list[str]:
    """The report's title, mode, machine and versions, and the table of notebooks (the missing ones as "not run")."""
    versions = next((m["versions"] for m in metas.values() if m.get("versions")), {})
    lines = ["# hedgekit — reproduction report", "",
             f"- mode: **{FAST_MODE if fast else 'FULL (paper preset models)'}**",
             f"- written: {time.strftime('%Y-%m-%d %H:%M:%S')}",
             f"- total run time: {total:.0f} s (sum over the notebooks below; each says when it ran)",
             f"- command: `python -m hedgekit reproduce{' --fast' if fast else ''}`",
             f"- machine: {platform.platform()}, Python {sys.version.split()[0]}"]
    if versions:
        lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if k != "platform"))
    lines += ["", "| notebook | status | run time | ran on | checkpoints | items |", "|---|---|---|---|---|---|"]
    for r in runs:
        meta = metas[r["notebook"]]
        n_items = sum(e.get("kind") in ("table", "figure", "plotly", "text") for e in r["entries"])
        lines.append(f"| [{r['notebook']}]({r['output']}) | {r['status']} | {r['seconds']:.0f} s | {r['date']} | "
                     f"{len(meta.get('checkpoints', []))} | {n_items} |")
    lines += [f"| {nb} | **not run** | — | — | — | — |" for nb in missing]
    if missing:
        lines += ["", "Registered but not in this report: " + ", ".join(missing) + ". Add "
                  + ("it" if len(missing) == 1 else "each") + " with `python -m hedgekit reproduce"
                  + (" --fast" if fast else "") + " --only <notebook> --out <this folder>`."]
    return lines


def _section(r: dict, meta: dict, out: Path) -> list[str]:
    """One notebook's section: its status and run time, its error, its checkpoints and every item it reported."""
    lines = ["", "---", "", f"## {Path(r['notebook']).stem}", "",
             f"status **{r['status']}**, run time {r['seconds']:.0f} s"
             + (f" (notebook's own clock {meta['runtime_s']:.0f} s)" if meta.get("runtime_s") else "")
             + f"; executed notebook: [{r['output']}]({r['output']})"]
    if r["error"]:
        lines += ["", "```", r["error"], "```"]
    if meta.get("checkpoints"):
        lines += ["", "<details><summary>checkpoints that produced these outputs</summary>", ""]
        lines += [f"- `{c['name']}` — {c['source']}, {c['steps']} steps"
                  f"{precision_note(c.get('precision', 'float32'))}, trained {c['train_seconds']:.0f} s"
                  f"{' on ' + c['device'] if c.get('device') else ''}, "
                  f"sha256 {c['sha256']}" for c in meta["checkpoints"]]
        lines += ["", "</details>"]
    base = Path(r["assets"])
    for e in r["entries"]:
        kind = e.get("kind")
        if kind == "table":
            lines += ["", f"### {e['name']}", "", _read(out / base / e["file"])]
            if e.get("note"):
                lines += ["", f"*{e['note']}*"]
        elif kind == "figure":
            lines += ["", f"### {e['name']}", "", f"![{e['name']}]({(base / e['file']).as_posix()})"]
            if e.get("caption"):
                lines += ["", f"*{e['caption']}*"]
        elif kind == "plotly":
            lines += ["", f"### {e['name']}", "", f"[open the interactive figure]({(base / e['file']).as_posix()})"]
        elif kind == "text":
            lines += ["", _read(out / base / e["file"])]
    return lines


def _read(p: Path) -> str:
    try:
        return p.read_text().strip()
    except OSError as exc:
        return f"*(could not read {p.name}: {exc})*"


def _previous_runs(out: Path, fast: bool, replaced: set[str]) -> list[dict]:
    """Run records of an earlier call into the same folder and mode, for notebooks not run again now.

    A corrupt or other-mode ``run.json`` contributes nothing: one summary never mixes FAST and full runs.
    """
    try:
        old = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(old, dict) or old.get("fast") != fast:
        return []
    return [dict(r) for r in old.get("runs", []) if isinstance(r, dict) and r.get("notebook") not in replaced
            and (out / r.get("assets", "-")).is_dir()]


def write_text(path: Path, text: str) -> None:
    """``path.write_text(text)``, whole or not at all (`hedgekit.checks.atomic_write`): an interrupt while the report
    is written leaves the previous one."""
    with atomic_write(path) as tmp:
        tmp.write_text(text)


def _write_html(md: str, path: Path) -> None:
    try:
        import mistune

        body = mistune.create_markdown(plugins=["table"], escape=False)(md)
    except Exception:  # pragma: no cover - mistune ships with nbconvert
        import html

        body = f"<pre>{html.escape(md)}</pre>"
    css = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
           "background:#fff;color:#222}table{border-collapse:collapse;font-size:.85em;margin:.5em 0}"
           "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}img{max-width:100%}"
           "code,pre{background:#f4f4f4}")
    write_text(path, f"<!doctype html><html><head><meta charset='utf-8'><title>hedgekit reproduction</title>"
                      f"<style>{css}</style></head><body>{body}</body></html>")
