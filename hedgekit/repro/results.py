"""``docs/results.md``: every reproduced table beside the paper's and every verdict tally, generated from
what the notebooks recorded, never typed by hand.

Sources, all committed:

* each notebook's committed outputs: its first cell (mode, start date, run time, written by
  `hedgekit.repro.session.Session`) and its computed verdict(s), the Markdown blocks
  "What matched, what did not, and why — ..." rendered by `hedgekit.papers.verdict.Verdict`;
* ``notebooks/report/run.json`` (run times of the committed full-mode runs) and
  ``notebooks/report/assets/<notebook>/`` (the tables the notebooks handed to the report, ours beside
  the paper's numbers from ``hedgekit/papers/*/numbers.py``); a notebook without assets there
  contributes the tables it displayed (``report.table(...)`` cells);
* the papers' numbers and comparisons that a notebook shows beside ours but no claims row decides, each with its
  reason (the section "Shown, not judged"; `hedgekit.papers.unjudged`, handed in by the command line).

    python -m hedgekit results             # writes docs/results.md
    python -m hedgekit results --check     # exit 1 if docs/results.md is not what the notebooks say

A notebook that is not a complete run is refused, by name, with exit status 2 (`hedgekit.repro.rendered.partial_run`),
so that an interrupted run can never publish a tally from the cells that happened to run.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Sequence

from hedgekit.errors import InputError
from hedgekit.paths import PACKAGE_DIR, REPO_DIR, notebook_dir
from hedgekit.repro.render_checks import damage, damage_paragraph, fewer_seeds, fewer_seeds_paragraph
from hedgekit.repro.rendered import POLICY_MARK, outputs_markdown, partial_run, verdict_blocks
from hedgekit.repro.report import read_manifest
from hedgekit.repro.catalog import select

COMMITTED_LEDGER = PACKAGE_DIR / "ledger"  # the ledger the repository ships, whose audits docs/results.md lists

__all__ = ["NotebookResults", "tally", "extras", "is_current", "html_table_markdown", "notebook_header", "collect",
           "render", "unjudged_section", "results_path", "generate", "add_subcommand"]

# the bold tally line of a verdict block; "did not" is how blocks rendered before the one vocabulary of
# `hedgekit.papers.verdict` ("not matched") read, and notebooks not re-run since still show it
_TALLY = re.compile(r"\*\*(\d+) matched, (\d+) (?:not matched|did not)(?:, (\d+) inconclusive)?\*\*")
_SEEDS = re.compile(r"(\d+) decided on trained seeds; (\d+) on evaluation repeats only")
_SANITY = re.compile(r"(\d+) sanity check\(s\) listed apart")
_CONDITIONS = re.compile(r"(\d+) condition\(s\) listed apart")
_TABLE_CALL = re.compile(r"report\.table\(\s*[\"']([^\"']+)[\"']")


@dataclass
class NotebookResults:
    """What one notebook recorded: title, mode, start date, run time (seconds), verdicts and tables."""

    name: str
    title: str
    mode: str
    started: str
    seconds: float | None
    verdicts: list[str] = field(default_factory=list)
    tables: list[tuple[str, str]] = field(default_factory=list)  # (name, Markdown table)
    forests: list[tuple[str, str]] = field(default_factory=list)  # (name, link from docs/) of the forest plots

    @property
    def counts(self) -> tuple[int, int, int]:
        """(matched, not matched, inconclusive), summed over the notebook's verdicts (sanity checks are not counted)."""
        rows = [tally(v) for v in self.verdicts]
        return tuple(sum(r[i] for r in rows) for i in range(3))

    @property
    def extras(self) -> tuple:
        """(decided on trained seeds, evaluation-only, sanity checks, conditions) summed over the verdicts (`extras`);
        a column is None when some verdict predates the claims tables and does not state it."""
        rows = [extras(v) for v in self.verdicts]
        return tuple(None if any(r[i] is None for r in rows) else sum(r[i] for r in rows) for i in range(4))

    @property
    def current_rules(self) -> bool:
        """Whether every verdict was rendered under the current rules (`is_current`): False means the notebook's
        committed run predates them and its tallies are not comparable with a current run's."""
        return all(is_current(v) for v in self.verdicts)


def is_current(block: str) -> bool:
    """True for a verdict rendered under the current rules of `hedgekit.papers.verdict`: every counted claim a row
    of a claims table decided by the equivalence rule (its tally line says how many were decided on trained seeds)
    and every band held to the band policy (its tally line says so, `POLICY_MARK`); False for one rendered before
    (the claims tables before the band policy, the overlap and sign rules, or the older "N matched, M did not")."""
    m = _TALLY.search(block)
    return m is not None and _SEEDS.search(block) is not None and POLICY_MARK in block


def extras(block: str) -> tuple[int | None, int | None, int, int | None]:
    """(decided on trained seeds, on evaluation repeats only, sanity checks, conditions) as a verdict block's tally
    line states them; None for what a block rendered before the claims tables does not state (sanity checks were
    stated then too, 0 when none)."""
    seeds, sanity, conditions = _SEEDS.search(block), _SANITY.search(block), _CONDITIONS.search(block)
    return (int(seeds.group(1)) if seeds else None, int(seeds.group(2)) if seeds else None,
            int(sanity.group(1)) if sanity else 0, (int(conditions.group(1)) if conditions else 0) if seeds else None)


def tally(block: str) -> tuple[int, int, int]:
    """(matched, not matched, inconclusive) as a verdict block states it in its bold line."""
    m = _TALLY.search(block)
    if m is None:
        raise InputError(f"no '**N matched, M not matched**' line in the verdict {block.splitlines()[0]!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


class _Rows(HTMLParser):
    """The rows of the first <table> of an HTML fragment (pandas' DataFrame HTML), as lists of cell texts."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._done = False

    def handle_starttag(self, tag, attrs):
        if self._done:
            return
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._done = True

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_table_markdown(html: str) -> str:
    """A GitHub-Markdown table from a DataFrame's HTML; the index name row pandas adds under the header
    (a name in the first cell, the rest empty) becomes the header's first cell; NaN prints as an em dash
    (as in `hedgekit.repro.report.dataframe_markdown`)."""
    parser = _Rows()
    parser.feed(html)
    rows = [r for r in parser.rows if r]
    if not rows:
        raise InputError("no <table> rows in the HTML output")
    header, body = rows[0], rows[1:]
    if body and body[0][0] and not any(body[0][1:]):
        header = [body[0][0]] + header[1:]
        body = body[1:]
    width = len(header)

    def line(cells):
        cells = ["—" if c == "NaN" else c for c in (cells + [""] * width)[:width]]
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "|".join("---" for _ in header) + "|"] + [line(r) for r in body])


def _displayed_tables(nb) -> list[tuple[str, str]]:
    """(name, Markdown) of every ``report.table("name", ...)`` cell's displayed table (Markdown or HTML)."""
    out = []
    for cell in nb.cells:
        m = _TABLE_CALL.search(cell.source) if cell.cell_type == "code" else None
        if m is None:
            continue
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if data.get("text/html") and "<table" in "".join(data["text/html"]):
                out.append((m.group(1), html_table_markdown("".join(data["text/html"]))))
                break
            if "|---" in "".join(data.get("text/markdown", "")):
                out.append((m.group(1), "".join(data["text/markdown"]).strip()))
                break
    return out


def notebook_header(nb) -> dict:
    """Title (first line of the first cell), mode, start date and run time (first cell's output)."""
    first = nb.cells[0]
    text = "\n".join(outputs_markdown(first))
    mode = re.search(r"^mode: \*\*(\w+)", text, re.M)
    started = re.search(r"— started (\d{4}-\d\d-\d\d \d\d:\d\d)", text)
    seconds = re.search(r"^run time: (\d+(?:\.\d+)?) s", text, re.M)
    return {"title": first.source.splitlines()[0].lstrip("# ").strip() if first.source else "",
            "mode": mode.group(1).lower() if mode else "unknown",
            "started": started.group(1) if started else "",
            "seconds": float(seconds.group(1)) if seconds else None}


def collect(notebooks: list[Path], report_dir: Path) -> list[NotebookResults]:
    """The recorded results of each notebook (in the given order); run times from ``report_dir/run.json``
    where it has the notebook, else from the notebook's first cell.

    Raises InputError naming every notebook that is a partial run (`partial_run`), before anything is rendered.
    """
    import nbformat

    run = report_dir / "run.json"
    runs = {r["notebook"]: r for r in json.loads(run.read_text())["runs"]} if run.is_file() else {}
    books = {path: nbformat.read(path, as_version=4) for path in notebooks}
    partial = {path: why for path, nb in books.items() if (why := partial_run(nb)) is not None}
    if partial:
        raise InputError("results are rendered from complete runs only; "
                         + "; ".join(f"{path.name} is a partial run: {why}" for path, why in partial.items())
                         + ". Put back the committed notebook (`git checkout -- notebooks/<name>`) or run it again "
                         "to the end (`python -m hedgekit reproduce --only <prefix> --inplace`)")
    out = []
    for path, nb in books.items():
        head = notebook_header(nb)
        if path.name in runs and runs[path.name].get("status") == "ok":
            head["seconds"] = float(runs[path.name]["seconds"])
        assets = report_dir / "assets" / path.stem
        entries = read_manifest(assets)
        tables = [(e["name"], (assets / e["file"]).read_text().strip()) for e in entries
                  if e.get("kind") == "table"] or _displayed_tables(nb)
        forests = [(e["name"], _relative_link(assets / e["file"])) for e in entries
                   if e.get("kind") == "figure" and e["name"].endswith(FOREST_SUFFIX)]
        out.append(NotebookResults(path.stem, verdicts=verdict_blocks(nb), tables=tables, forests=forests, **head))
    return out


FOREST_SUFFIX = " (forest plot)"  # the name `hedgekit.papers.verdict.Verdict.show` gives a verdict's forest plot


def _relative_link(path: Path) -> str:
    """``path`` as a link from docs/results.md (a path relative to docs/, with forward slashes)."""
    import os

    return Path(os.path.relpath(Path(path).resolve(), REPO_DIR / "docs")).as_posix()


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "not recorded"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def render(results: list[NotebookResults], unjudged: Sequence = (), audits: Sequence[str] = ()) -> str:
    """docs/results.md: a tally table over all notebooks, then per notebook its verdicts and tables, then what the
    notebooks show of the papers but no claims row decides (`unjudged_section` of ``unjudged``, e.g.
    `hedgekit.papers.unjudged.UNJUDGED`), then ``audits`` (the lines of `hedgekit.repro.audit.audit_section`). The
    note on *earlier* rules appears only while some notebook's committed run predates them."""
    results = [r for r in results if r.verdicts or r.tables]  # e.g. 00_start_here records no results
    lines = ["# Results: every notebook's verdicts and tables, ours beside the papers'", "",
             "Generated by `python -m hedgekit results` from the committed notebook outputs and "
             "`notebooks/report/` (the paper's numbers come from `hedgekit/papers/*/numbers.py`); do not edit "
             "by hand. Run times are those of the committed runs, on 2 CPU cores that were often shared with "
             "other jobs. The notebooks' full reports, figures included: "
             "[`notebooks/report/summary.md`](../notebooks/report/summary.md).", ""]
    lines += _what_changed(results) + DECISION_RULES
    lines += ["| notebook | mode | run | run time | rules | matched | not matched | inconclusive | decided on seeds | "
              "evaluation-only | sanity (not counted) | conditions |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    total, extra = [0, 0, 0], [0, 0, 0, 0]
    for r in results:
        counts, more = r.counts, r.extras
        total = [t + c for t, c in zip(total, counts)]
        extra = [None if e is None or m is None else e + m for e, m in zip(extra, more)]
        rules = ("current" if r.current_rules else "*earlier*") if r.verdicts else "—"
        lines.append(f"| [{r.name}](#{_anchor(r.name)}) | {r.mode} | {r.started or '—'} | {_duration(r.seconds)} | "
                     f"{rules} | " + " | ".join(map(str, counts)) + " | " +
                     " | ".join("—" if m is None else str(m) for m in more) + " |")
    lines.append("| **all** | | | | | " + " | ".join(f"**{t}**" for t in total) + " | " +
                 " | ".join("—" if e is None else f"**{e}**" for e in extra) + " |")
    for r in results:
        lines += ["", f"## {r.name}", "", f"*{r.title}* — {r.mode} mode, run {r.started or '(date not recorded)'}, "
                  f"{_duration(r.seconds)}.", ""]
        for block in r.verdicts:
            lines += [block, ""]
        lines += [f"![{name}]({link})\n" for name, link in r.forests]
        for name, table in r.tables:
            lines += [f"### {name}", "", table, ""]
    lines += ["", *unjudged_section(unjudged)]
    lines += ["", *audits] if audits else []
    return "\n".join(lines).rstrip() + "\n"


UNJUDGED_HEADING = "## Shown, not judged"


def unjudged_section(records: Sequence) -> list[str]:
    """The lines of the section "Shown, not judged": one table row per record of ``records``
    (`hedgekit.papers.unjudged.Unjudged`), in their order: paper, place, the paper's number or statement, the
    notebook that shows ours (a link to its section) and why no claims row decides it."""

    def cell(text: str) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = [UNJUDGED_HEADING, "",
             "What the notebooks show of the papers, ours beside it, but no row of a claims table decides, with the "
             "reason (`hedgekit/papers/unjudged.py`). None of it is counted in the tallies above.", "",
             "| paper | place | the paper's number or statement | notebook showing ours | why not judged |",
             "|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {cell(r.paper_name)} | {cell(r.place)} | {cell(r.paper_value_text)} | "
                     f"[{r.notebook}](#{_anchor(r.notebook)}) | {cell(r.reason)} |")
    return lines


DECISION_RULES = [  # the rules at the top of hedgekit/papers/verdict.py, for the reader of this page
    "How a claim is decided (`hedgekit/papers/verdict.py`):", "",
    "- **matched**: the whole 95% interval lies inside the band the claim's row declares around the paper's value, "
    "with its reason (two one-sided tests); **not matched**: it lies wholly outside; **inconclusive**: anything else, "
    "with the number of seeds the observed spread says would decide.",
    "- Intervals use Student's t for the number of trained seeds. A claim measured on evaluation repeats of one "
    "trained model is never matched (*inconclusive: one trained model*); a level may borrow the seed spread measured "
    "for the same recipe elsewhere in its notebook, and says so.",
    "- **Band policy** (held by every counted row, and tested): a null result cannot match (no effect, the base "
    "rate, chance or the effect a claim denies lies outside the band); a result at the band's centre would match "
    "with 10 seeds per arm or fewer at the measured spread, else the row is *inconclusive: band narrower than 10 "
    "seeds resolve at kit scale*; bands are cut at the measure's range; their edges sit on the row's printed "
    "precision (moved inward: a result inside the printed band is inside the band); a band narrower than the printed "
    "precision is refused; each row names the comparison it makes, and the same comparison twice is refused.",
    "- Evidence is runs with their count: a bare (mean, SD) is refused, non-finite runs are dropped and flagged, a "
    "spread of 0 is never matched on fewer than 3 runs, and *decided on seeds* means an interval from at least 2 "
    "trained seeds. Seeds to decide are per arm, and read *more than 50 (undecidable at this spread)* beyond 50.",
    "- Rankings are decided on rank sets from the pooled within-method variance over seeds with Holm-corrected "
    "pairwise t tests (valid with 3 seeds, independent of row order); methods that noise cannot separate are tied.",
    "- Sanity checks (true by construction, or a sign the paper gives no size for) and conditions (a set-up chosen "
    "so that it holds) are listed apart and never counted; each comparison is counted once.",
    "- A number printed at the precision shown gives the same outcome as the raw value; an interval end exactly on a "
    "band's edge lies inside the band.", ""]
BEFORE_CLAIMS_TABLES = (60, 31, 21)  # the tally of the committed runs before the claims tables (docs/results.md, session 26)


def _what_changed(results: list[NotebookResults]) -> list[str]:
    """The head's two sentences on what changed from the tally before the claims tables, and why; while a notebook's
    committed run predates them, one more line on its *earlier* tallies."""
    with_verdicts = [r for r in results if r.verdicts]
    current = [r for r in with_verdicts if r.current_rules]
    ok, bad, unsure = BEFORE_CLAIMS_TABLES
    lines = [f"Before the claims tables the committed runs tallied {ok} matched, {bad} not matched and "
             f"{unsure} inconclusive, many decided on a sign or on an interval that merely overlapped the paper's "
             "band. Now every counted claim is a row of its paper's claims table, decided by one engine on the "
             "equivalence rule (matched only when the whole 95% interval lies inside the band the row declares, "
             "with sanity checks and conditions listed apart and never counted); "
             f"{len(current)} of the {len(with_verdicts)} notebooks with verdicts are rendered under it and the band "
             "policy so far.", ""]
    if len(current) < len(with_verdicts):
        lines += ["A notebook whose committed run predates the current rules (the claims tables, or the band policy "
                  "below) says *earlier* under *rules*: its tallies are as that run rendered them, not recomputed, its "
                  "bands may break the policy, and where the run predates the claims tables its columns for seeds, "
                  "evaluation-only claims and conditions read —. Re-running it in full mode (`python -m hedgekit reproduce --only NN "
                  "--inplace`, with the checkpoints `reproduce --list-models` names) updates them.", ""]
    return lines


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def results_path() -> Path:
    return REPO_DIR / "docs" / "results.md"


def generate(unjudged: Sequence = ()) -> str:
    """The text of docs/results.md for the repository's notebooks and committed report, with ``unjudged``'s
    section and the committed ledger's audits (`render`; the ledger in the package, whatever ``HEDGEKIT_LEDGER``
    says, as the notebooks are the committed ones)."""
    from hedgekit.repro.audit import audit_log, audit_section  # the trainers: only where the audits are listed

    return render(collect([notebook_dir() / nb for nb in select()], notebook_dir() / "report"), unjudged,
                  audit_section(audit_log(COMMITTED_LEDGER)))


# ------------------------------------------------------------------------------ CLI
def add_subcommand(subparsers, unjudged: Sequence = ()) -> argparse.ArgumentParser:
    """Register ``results`` on an argparse sub-parser set (for `hedgekit.cli`, which hands in the papers'
    `hedgekit.papers.unjudged.UNJUDGED`)."""
    p = subparsers.add_parser("results", help="write docs/results.md from the notebooks' recorded results",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="output file (default: docs/results.md)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is out of date")
    p.add_argument("--fewer-seeds-because", default=None, metavar="REASON",
                   help="write even though a notebook decides claims on fewer trained seeds than its previous "
                        "committed render did (without it: exit 2, naming the claims)")
    p.set_defaults(fn=_cmd, unjudged=tuple(unjudged))
    return p


def _cmd(a) -> int:
    if a.fewer_seeds_because is not None and not a.fewer_seeds_because.strip():
        raise InputError("--fewer-seeds-because needs the reason")
    damaged = {nb: problems for nb in select() if (problems := damage(notebook_dir() / nb))}
    if damaged:
        print(damage_paragraph(damaged), file=sys.stderr)
        return 2
    drops = {nb: rows for nb in select() if (rows := fewer_seeds(notebook_dir() / nb))}
    if drops and not a.fewer_seeds_because:
        print(fewer_seeds_paragraph(drops), file=sys.stderr)
        return 2
    if drops:
        print(f"fewer seeds than the previous render in {', '.join(drops)}, because: {a.fewer_seeds_because}")
    path = Path(a.out) if a.out else results_path()
    text = generate(a.unjudged)
    if a.check:
        current = path.read_text() if path.is_file() else ""
        if current != text:
            print(f"{path} is out of date: run `python -m hedgekit results`", file=sys.stderr)
            return 1
        print(f"{path} is up to date")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")
    return 0
