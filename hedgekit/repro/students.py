"""Student versions of the lesson notebooks, and a runner for their exercise cells.

The lessons follow nbgrader's markers (the kit's lesson convention, design notes sec. 5): solution code sits
between the comment lines ``### BEGIN SOLUTION`` and ``### END SOLUTION``; every exercise cell carries
the cell tag ``exercise``, a check cell the tags ``exercise`` and ``check``. A student version replaces
each solution region by ``raise NotImplementedError()`` at the markers' indentation, or, where the region only
assigns the answers the check reads (``GUESS_BETA_0 = "..."  # one of ...``), by the same names set to ``...``
with the region's own comments (`stub_lines`: the stub names what the check reads), and clears
the outputs of the exercise cells (they would show the answers); everything else, the check cells included,
stays as it is.

    python -m hedgekit students                      # every notebook -> notebooks/students/ (git-ignored)
    python -m hedgekit students --out /tmp/students

`run_exercises` executes a notebook's exercise cells top to bottom in one fresh namespace, as the
convention requires; `tests/test_lessons.py` runs it on the solution version (every check must pass)
and on the student version (every check must raise).
"""
from __future__ import annotations

import argparse
import copy
import linecache
import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from hedgekit.checks import write_bytes_atomic
from hedgekit.errors import InputError
from hedgekit.paths import notebook_dir

__all__ = ["BEGIN", "END", "STUB", "ANSWER_STUB", "stub_lines", "EXERCISE_TAG", "CHECK_TAG", "strip_solutions", "has_solution",
           "student_notebook", "notebook_paths", "write_students", "CellRun", "run_exercises", "add_subcommand",
           "LESSON_KEY"]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = "raise NotImplementedError()"
EXERCISE_TAG = "exercise"
CHECK_TAG = "check"
LESSON_KEY = "lesson"  # metadata["hedgekit"]["lesson"]: the lesson a copy was made from (`hedgekit.repro.grade`)


def _marker(line: str) -> str | None:
    """BEGIN or END if the line is that marker (alone on its line, any indentation), else None."""
    text = line.strip()
    return text if text in (BEGIN, END) else None


def has_solution(source: str) -> bool:
    """True if the cell source holds at least one ``### BEGIN SOLUTION`` line."""
    return any(_marker(line) == BEGIN for line in source.splitlines())


_ANSWER = re.compile(r"^(\s*)([A-Za-z_]\w*)\s*=\s*[^#=]+?(?:\s*#\s*(.*))?$")  # NAME = value  # comment
ANSWER_STUB = "..."


def stub_lines(region: list[str], indent: str) -> list[str]:
    """The student's lines for one solution region: where every line of it assigns one name on one line (an answer
    the check reads), each name set to ``...`` with "# your answer" and the line's own comment (its choices); any
    other region becomes ``raise NotImplementedError()`` at ``indent``."""
    lines = [line for line in region if line.strip()]
    answers = [_ANSWER.match(line) for line in lines]
    if not lines or not all(answers):
        return [indent + STUB]
    return [f"{m.group(1)}{m.group(2)} = {ANSWER_STUB}  # your answer" + (f"; {m.group(3)}" if m.group(3) else "")
            for m in answers]


def strip_solutions(source: str, where: str = "cell") -> str:
    """``source`` with every solution region (the marker lines included) replaced by its stub (`stub_lines`):
    ``raise NotImplementedError()`` at the BEGIN marker's indentation, or the answers' names set to ``...``.

    Raises `InputError` naming ``where`` and the line for an END without a BEGIN, a BEGIN inside a
    region (regions do not nest) and a BEGIN that is never closed.
    """
    out: list[str] = []
    opened: int | None = None  # line number (1-based) of the open BEGIN
    region: list[str] = []
    indent = ""
    for number, line in enumerate(source.splitlines(), start=1):
        marker = _marker(line)
        if marker == BEGIN:
            if opened is not None:
                raise InputError(f"{where}, line {number}: {BEGIN!r} inside the region opened on line {opened}; "
                                 f"close it with {END!r} first (regions do not nest)")
            opened, region, indent = number, [], line[:len(line) - len(line.lstrip())]
        elif marker == END:
            if opened is None:
                raise InputError(f"{where}, line {number}: {END!r} without a {BEGIN!r} before it")
            out += stub_lines(region, indent)
            opened = None
        elif opened is None:
            out.append(line)
        else:
            region.append(line)
    if opened is not None:
        raise InputError(f"{where}, line {opened}: {BEGIN!r} is never closed by {END!r}")
    return "\n".join(out) + ("\n" if source.endswith("\n") else "")


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def student_notebook(nb, name: str = "notebook"):
    """A copy of the notebook ``nb`` (an nbformat node) with its solutions replaced and the outputs of its
    exercise cells (and of any cell that held a solution) cleared; ``name`` goes into error messages."""
    out = copy.deepcopy(nb)
    for index, cell in enumerate(out.cells):
        if cell.cell_type != "code":
            continue
        solved = BEGIN in cell.source or END in cell.source
        if solved:
            cell.source = strip_solutions(cell.source, f"{name}, cell {index}")
            if BEGIN in cell.source or END in cell.source:  # a marker not alone on its line: the answer would leak
                raise InputError(f"{name}, cell {index}: a solution marker must stand alone on its line "
                                 f"(comment lines {BEGIN!r} ... {END!r})")
        if solved or EXERCISE_TAG in _tags(cell):
            cell.outputs = []
            cell.execution_count = None
    return out


def notebook_paths(folder: Path | None = None) -> list[Path]:
    """Every numbered notebook (``NN_*.ipynb``) of ``folder`` (default: the repository's notebooks/), by name."""
    return sorted((folder or notebook_dir()).glob("[0-9][0-9]_*.ipynb"))


def write_students(out_dir: Path | str, sources: list[Path] | None = None) -> list[Path]:
    """Write the student version of every notebook of ``sources`` (default: `notebook_paths`) into
    ``out_dir``, same file names, each carrying its lesson's id in its metadata (``hedgekit.lesson``: the
    source's own if it has one, else its file stem), by which `hedgekit.repro.grade` finds the lesson of a
    renamed copy; returns the paths written. Nothing is written if one notebook has malformed markers. Each
    file is written whole or not at all (`hedgekit.checks.write_bytes_atomic`): a read-only ``out_dir``, a
    file in its place or a full disk is a `hedgekit.errors.StorageError`, and no half-written notebook is left."""
    import nbformat

    sources = notebook_paths() if sources is None else [Path(p) for p in sources]
    versions = [(src.name, student_notebook(nbformat.read(src, as_version=4), src.name)) for src in sources]
    for src, (_, nb) in zip(sources, versions):
        nb.metadata.setdefault("hedgekit", {}).setdefault(LESSON_KEY, src.stem)
    out = Path(out_dir)
    written = []
    for name, nb in versions:
        text = nbformat.writes(nb)
        written.append(write_bytes_atomic(out / name, (text if text.endswith("\n") else text + "\n").encode("utf-8")))
    return written


@dataclass
class CellRun:
    """One exercise cell run by `run_exercises`: its index in the notebook, tags, error (None: it ran)."""

    index: int
    tags: list[str]
    seconds: float
    error: BaseException | None = None
    trace: str = field(default="", repr=False)

    @property
    def is_check(self) -> bool:
        return CHECK_TAG in self.tags


def run_exercises(nb, name: str = "notebook") -> list[CellRun]:
    """Execute the ``exercise``-tagged code cells of ``nb`` in order, in one fresh namespace, in this
    process; a cell that raises is recorded and the next cell still runs. ``display`` is provided as a
    kernel provides it. Raises `InputError` if the notebook has no exercise cell."""
    cells = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and EXERCISE_TAG in _tags(c)]
    if not cells:
        raise InputError(f"{name} has no code cell tagged {EXERCISE_TAG!r}")
    from IPython.display import display

    namespace: dict = {"__name__": "__exercises__", "display": display}
    runs = []
    for index, cell in cells:
        filename = f"<{name} cell {index}>"
        linecache.cache[filename] = (len(cell.source), None, cell.source.splitlines(True), filename)  # tracebacks
        t0 = time.perf_counter()
        try:
            exec(compile(cell.source, filename, "exec"), namespace)
        except Exception as exc:  # recorded: a student version's cells are meant to raise
            runs.append(CellRun(index, _tags(cell), time.perf_counter() - t0, exc, traceback.format_exc()))
        else:
            runs.append(CellRun(index, _tags(cell), time.perf_counter() - t0))
    return runs


# ------------------------------------------------------------------------------ CLI
def add_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``students`` on an argparse sub-parser set (for `hedgekit.cli`)."""
    p = subparsers.add_parser("students", help="write the student versions of the notebooks (solutions removed)",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="output folder (default: notebooks/students, git-ignored)")
    p.set_defaults(fn=_cmd)
    return p


def _cmd(a) -> int:
    out = Path(a.out) if a.out else notebook_dir() / "students"
    written = write_students(out)
    print(f"{len(written)} student notebooks written to {out}")
    return 0
