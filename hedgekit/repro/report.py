"""How a notebook hands its tables, figures and verdicts to the reproduction report.

`python -m hedgekit reproduce` (`hedgekit.repro.reproduce`) executes every registered
notebook with papermill and passes it a parameter ``REPORT_DIR`` (one folder per
notebook). The notebook opens a :class:`Report` on that folder and calls

    report.table("Table 1", dataframe_or_markdown)
    report.figure("Figure 3", fig)              # matplotlib figure or plotly figure
    report.text("What matched", markdown)
    report.meta(mode="fast", checkpoints=[...])

Each call writes a file into the folder and appends an entry to its
``manifest.json`` (in call order, with the size of every file it wrote) and returns None (so a call ending a notebook
cell displays nothing), from which `hedgekit.repro.summary.write_summary`
builds ``reports/summary.md``. With ``REPORT_DIR = ""`` (the default when a
notebook is opened by hand) every call is a no-op that returns None, so the
notebooks never depend on the report machinery.

Formats: tables as Markdown (``.md``) and CSV when given a DataFrame; matplotlib
figures as PNG on a white background (readable in light and dark viewers);
plotly figures as standalone HTML sharing one ``plotly.min.js`` in the folder
(works offline); where that file is absent (the committed report in
``notebooks/report/`` leaves the 4.6 MB library out) the page loads the same plotly
version from its CDN instead.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hedgekit.checks import atomic_write
from hedgekit.errors import InputError
from hedgekit.paths import REPO_DIR

MANIFEST = "manifest.json"
PLOTLY_JS = "plotly.min.js"  # the plotly library the HTML figures of a folder share
__all__ = ["Report", "MANIFEST", "slug", "dataframe_markdown", "read_manifest", "not_whole"]


def slug(name: str) -> str:
    """A file-name-safe version of ``name``: 'Table 1 (N=2, D=2)' -> 'table-1-n-2-d-2'."""
    s = re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")
    return s or "item"


def dataframe_markdown(df, floatfmt: str = ".3f") -> str:
    """A GitHub-Markdown table of a DataFrame (index included when it is named or not a RangeIndex).

    Written here rather than with ``DataFrame.to_markdown`` so that the optional
    ``tabulate`` package is not needed. NaN prints as an em dash.
    """
    import math

    import pandas as pd

    frame = df
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.name is not None:
        frame = frame.reset_index()

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "—" if math.isnan(v) else format(v, floatfmt)
        if v is None:
            return "—"
        return str(v).replace("|", "\\|").replace("\n", " ")

    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)


def read_manifest(folder: str | Path) -> list[dict]:
    """The entries a notebook wrote into ``folder`` (empty if it wrote none)."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return []
    return json.loads(path.read_text())["entries"]


COMMITTED_ASSETS = Path("notebooks") / "report" / "assets"  # relative to the repository: the committed report's assets


def recorded_entry(notebook: str, name: str, folder: str | Path | None = None, kind: str | None = None) -> dict:
    """The entry ``name`` that ``notebook`` wrote into its report folder (default: the committed full-mode report,
    `COMMITTED_ASSETS` / ``notebook``), for a FAST run to show a study it does not rerun: ``kind`` ("table",
    "text" or "figure"), ``markdown`` (a table's or text's Markdown), ``frame`` (a table's CSV, as written, its index
    as columns) and ``figure`` (a figure's path). ``kind`` picks one of a figure and a table recorded under one name
    (default: the first entry of that name). Raises `InputError` when the folder or the entry is missing."""
    import pandas as pd

    folder = Path(folder) if folder is not None else REPO_DIR / COMMITTED_ASSETS / notebook.removesuffix(".ipynb")
    try:
        entry = next(e for e in read_manifest(folder) if e.get("name") == name and kind in (None, e.get("kind")))
    except StopIteration:
        what = f"{kind} " if kind else ""
        raise InputError(f"{folder} holds no {what}entry {name!r}: run `python -m hedgekit reproduce --only "
                         f"{notebook[:2]}` (full mode) to record it") from None
    out = {"kind": entry["kind"], "markdown": None, "frame": None, "figure": None}
    if entry["kind"] == "figure":
        out["figure"] = folder / entry["file"]
    else:
        out["markdown"] = (folder / entry["file"]).read_text()
    if entry.get("csv"):
        out["frame"] = pd.read_csv(folder / entry["csv"])
    return out


def not_whole(folder: str | Path) -> str | None:
    """Why the report folder ``folder`` is not whole, in words, or None when it is (or does not exist): its manifest
    must be valid JSON, and every other file in it must be listed there with the size it was written at (`Report`
    records each file's size once it is written, so a write that failed part-way, e.g. on a full disk, leaves a file
    that is unlisted or of another size)."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    try:
        entries = read_manifest(folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"its {MANIFEST} cannot be read ({type(exc).__name__}: {exc})"
    sizes = {name: size for e in entries for name, size in e.get("bytes", {}).items()}
    for path in sorted(folder.iterdir()):
        if path.name == MANIFEST:
            continue
        size = path.stat().st_size if path.is_file() else None
        if path.name not in sizes:
            return (f"{path.name} ({size} bytes) is not in its {MANIFEST}: a write that failed part-way"
                    if size is not None else f"{path.name} is not a file")
        if size != sizes[path.name]:
            return f"{path.name} has {size} bytes, its {MANIFEST} says {sizes[path.name]}"
    missing = sorted(set(sizes) - {p.name for p in folder.iterdir()})
    return f"{missing[0]}, listed in its {MANIFEST}, is missing" if missing else None


class Report:
    """Writes a notebook's tables and figures into ``folder``; a no-op when ``folder`` is empty.

    Args:
        folder: the notebook's ``REPORT_DIR`` parameter ("" = do nothing).
        notebook: the notebook's name, recorded in the manifest.
    """

    def __init__(self, folder: str | Path = "", notebook: str = ""):
        self.folder = Path(folder) if str(folder) else None
        self.notebook = notebook
        self._entries: list[dict] = []
        self._names: set[str] = set()
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._entries = read_manifest(self.folder)  # re-running a cell appends, never loses entries
            self._names = {e["file"] for e in self._entries if "file" in e}

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    # ------------------------------------------------------------------ writing
    def _file(self, name: str, suffix: str) -> str:
        base = slug(name)
        fname = f"{base}{suffix}"
        k = 2
        while fname in self._names:
            fname = f"{base}-{k}{suffix}"
            k += 1
        self._names.add(fname)
        return fname

    def _add(self, entry: dict, *files: str) -> None:
        """Append ``entry`` to the manifest, with the sizes of ``files`` (those it wrote) as they are now."""
        entry = {"notebook": self.notebook, **entry, "bytes": {f: (self.folder / f).stat().st_size for f in files}}
        self._entries.append(entry)
        with atomic_write(self.folder / MANIFEST) as tmp:
            tmp.write_text(json.dumps({"notebook": self.notebook, "entries": self._entries}, indent=1, default=str))

    def table(self, name: str, table, note: str = "") -> None:
        """Record a table: a pandas DataFrame or a Markdown string."""
        if not self.enabled:
            return
        if isinstance(table, str):
            md, csv = table, None
        elif hasattr(table, "to_csv"):
            md = dataframe_markdown(table)
            csv = self._file(name, ".csv")
            table.to_csv(self.folder / csv)
        else:
            raise InputError(f"report.table needs a DataFrame or a Markdown string; got {type(table).__name__}")
        fname = self._file(name, ".md")
        (self.folder / fname).write_text(md + "\n")
        self._add({"kind": "table", "name": name, "file": fname, "csv": csv, "note": note},
                  fname, *([csv] if csv else []))

    def figure(self, name: str, fig, caption: str = "", dpi: int = 110) -> None:
        """Record a figure: a matplotlib Figure (PNG) or a plotly Figure (HTML)."""
        if not self.enabled:
            return
        if hasattr(fig, "savefig"):
            fname = self._file(name, ".png")
            fig.savefig(self.folder / fname, dpi=dpi, bbox_inches="tight", facecolor="white")
            kind = "figure"
        elif hasattr(fig, "write_html"):
            fname = self._file(name, ".html")
            fig.write_html(self.folder / fname, include_plotlyjs="directory", full_html=True)
            _add_cdn_fallback(self.folder / fname)
            kind = "plotly"
        else:
            raise InputError(f"report.figure needs a matplotlib or plotly figure; got {type(fig).__name__}")
        library = [PLOTLY_JS] if kind == "plotly" and (self.folder / PLOTLY_JS).is_file() else []
        self._add({"kind": kind, "name": name, "file": fname, "caption": caption}, fname, *library)

    def text(self, name: str, markdown: str) -> None:
        """Record a block of Markdown (e.g. the computed 'what matched' section)."""
        if not self.enabled:
            return
        fname = self._file(name, ".md")
        (self.folder / fname).write_text(markdown + "\n")
        self._add({"kind": "text", "name": name, "file": fname}, fname)

    def meta(self, **info) -> None:
        """Record run information (mode, checkpoints, run time); the last one per key wins in the summary."""
        if not self.enabled:
            return
        self._add({"kind": "meta", "info": info})


def _add_cdn_fallback(html_path: Path) -> None:
    """Load plotly from cdn.plot.ly (same version) when the page's local ``plotly.min.js`` is missing.

    A synchronous ``document.write`` right after the local script tag, so the figure's own inline
    script still finds ``window.Plotly`` defined.
    """
    import plotly

    local = f'<script charset="utf-8" src="{PLOTLY_JS}"></script>'
    html = html_path.read_text()
    if local not in html:
        raise InputError(f"{html_path.name}: plotly's local script tag not found; cannot add the CDN fallback")
    cdn = f"https://cdn.plot.ly/plotly-{plotly.offline.get_plotlyjs_version()}.min.js"
    fallback = f"<script>window.Plotly || document.write('<script src=\"{cdn}\"><\\/script>')</script>"
    html_path.write_text(html.replace(local, local + fallback, 1))


def precision_note(precision: str) -> str:
    """", bfloat16 body" for a model trained with a bfloat16 body, nothing for float32 (the default)."""
    return "" if precision == "float32" else f", {precision} body"
