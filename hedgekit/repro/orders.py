"""A lesson run in the orders a learner runs its cells (issue 48, item 2: "Any order works").

A lesson notebook has three kinds of code cells, found from its headings and tags:

* the **set-up**: the code cells before the ``# Lesson`` heading (the session, the ``parameters`` cell, imports);
* the **steps**: the lesson's other code cells, from ``# Lesson`` up to the ``# Reproduction`` heading;
* the **exercises**: the lesson's cells tagged ``exercise`` (answers and their checks).

`ORDERS` names the orders the issue asks for, each as the list of cells a learner would run, and `run_order`
executes one in a fresh kernel with the notebook's default parameters (a learner's Run All), cell by cell, keeping
every cell's error instead of stopping at the first. The first order runs the whole notebook top to bottom and then
moves every live widget (`poke_widgets`): each slider to its other end and each dropdown through its options, so a
callback that a later cell broke (a rebound name, a missing figure) shows up as an error instead of dying silently
in the kernel's log. The README's test command runs that first order through nbmake: each lesson notebook's last
code cell carries `RUN_ALL_METADATA`, nbmake's ``post_cell_execute``, so the Run All test moves the widgets too.

`refresh_lesson` re-runs a committed notebook's set-up and lesson top to bottom and writes their outputs back,
keeping the reproduction's outputs of its last full run (``python -m hedgekit reproduce --lessons-only``): a lesson
cell can change without retraining every model the reproduction reads. The notebook's metadata records it
(``hedgekit.lesson_rerun``: date, commit, mode, seconds).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from hedgekit.errors import InputError
from hedgekit.repro.students import EXERCISE_TAG

__all__ = ["LessonCells", "lesson_cells", "ORDERS", "order_cells", "CellOutcome", "run_order", "poke_widgets",
           "WIDGET_POKE", "RUN_ALL_METADATA", "refresh_lesson"]

LESSON_HEADING = re.compile(r"^# Lesson\b", re.M)
REPRODUCTION_HEADING = re.compile(r"^# Reproduction\b", re.M)


@dataclass(frozen=True)
class LessonCells:
    """Indices (into ``nb.cells``) of a lesson's code cells, by kind, each in notebook order."""
    setup: list[int]
    steps: list[int]
    exercises: list[int]
    rest: list[int]  # the reproduction's code cells


def lesson_cells(nb, name: str = "notebook") -> LessonCells:
    """The set-up, steps, exercises and reproduction cells of a lesson notebook (module docstring); a notebook with
    no ``# Lesson`` heading, or no ``# Reproduction`` heading after it, is refused (`InputError`)."""
    heads = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]
    lesson = next((i for i in heads if LESSON_HEADING.search(nb.cells[i].source)), None)
    if lesson is None:
        raise InputError(f"{name}: no '# Lesson' heading; expected a lesson notebook (design.md section 5)")
    end = next((i for i in heads if i > lesson and REPRODUCTION_HEADING.search(nb.cells[i].source)), None)
    if end is None:
        raise InputError(f"{name}: no '# Reproduction' heading after '# Lesson'; expected the lesson to end there")
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    part = [i for i in code if lesson < i < end]
    exercises = [i for i in part if EXERCISE_TAG in nb.cells[i].metadata.get("tags", [])]
    return LessonCells(setup=[i for i in code if i < lesson], steps=[i for i in part if i not in exercises],
                       exercises=exercises, rest=[i for i in code if i > end])


# name -> (cells to run, given the lesson's cells); the last flag: move every widget afterwards
ORDERS = {
    "top to bottom (Run All), then the widgets moved": (lambda c: c.setup + sorted(c.steps + c.exercises) + c.rest,
                                                        True),
    "the exercises (twice) before the steps": (lambda c: c.setup + c.exercises + c.exercises + c.steps, False),
    "the steps re-run after the exercises": (lambda c: c.setup + c.steps + c.exercises + c.steps, False),
}


def order_cells(nb, order: str, name: str = "notebook") -> tuple[list[int], bool]:
    """The cell indices of ``order`` (a key of `ORDERS`) for ``nb``, and whether its widgets are moved after."""
    if order not in ORDERS:
        raise InputError(f"order must be one of {list(ORDERS)}; got {order!r}")
    cells, poke = ORDERS[order]
    return cells(lesson_cells(nb, name)), poke


def poke_widgets() -> int:
    """Run in a notebook's kernel after Run All: move every live widget (sliders to both ends, dropdowns, toggles and
    check boxes through their values, then back) and raise a `RuntimeError` listing every callback that failed,
    raised or shown through IPython's showtraceback (an Output widget's context, ``ipywidgets.interact``). Without a
    front end an Output widget's parent-header redirection would leave the executing cell's reply unmatched, so
    while it runs an Output context writes into the running cell and keeps its error. Returns the moves made."""
    import sys
    import traceback

    import ipywidgets as w
    from IPython import get_ipython

    ip, errors = get_ipython(), []
    shown, output = ip.showtraceback, (w.Output.__enter__, w.Output.__exit__, w.Output.clear_output)

    def leave(self, etype, evalue, tb):
        if etype is not None:
            errors.append("".join(traceback.format_exception(etype, evalue, tb)))
        return True

    ip.showtraceback = lambda exc_tuple=None, *a, **k: errors.append(
        "".join(traceback.format_exception(*(exc_tuple or sys.exc_info()))))
    w.Output.__enter__, w.Output.__exit__, w.Output.clear_output = lambda self: self, leave, lambda *a, **k: None
    moved = 0
    try:
        for widget in list(w.widgets.widget._instances.values()):
            if isinstance(widget, (w.IntSlider, w.FloatSlider)):
                values = [widget.max, widget.min, widget.value]
            elif isinstance(widget, (w.Dropdown, w.RadioButtons, w.ToggleButtons, w.Select)):
                options = [v for _, v in widget._options_full]
                values = options[::-1] + [widget.value] if options else []
            elif isinstance(widget, (w.Checkbox, w.ToggleButton)):
                values = [not widget.value, widget.value]
            else:
                continue
            for v in values:
                try:
                    widget.value = v
                    moved += 1
                except Exception:
                    errors.append(traceback.format_exc())
    finally:
        ip.showtraceback = shown
        w.Output.__enter__, w.Output.__exit__, w.Output.clear_output = output
    if errors:
        raise RuntimeError(f"{len(errors)} widget callback(s) failed after Run All:\n" + "\n".join(errors))
    print(f"moved widgets {moved} times")
    return moved


# The lines that move the widgets after Run All: the poke cell of `run_order`, and nbmake's ``post_cell_execute``
# metadata of a notebook's last code cell (`RUN_ALL_METADATA`), so the README's Run All test moves them too.
POKE_LINES = ["from hedgekit.repro.orders import poke_widgets", "poke_widgets();"]
WIDGET_POKE = "\n".join(POKE_LINES)
RUN_ALL_METADATA = {"post_cell_execute": POKE_LINES}


@dataclass
class CellOutcome:
    """One executed cell: its index (-1: the widget poke), and its error text (None: it ran)."""
    index: int
    error: str | None
    seconds: float


def run_order(path: Path | str, order: str, kernel: str = "python3", timeout: int = 600) -> list[CellOutcome]:
    """Execute notebook ``path``'s cells in ``order`` (`ORDERS`) in one fresh kernel, working directory the
    notebook's folder, default parameters; every cell is run even after an error, and each outcome returned."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    cells, poke = order_cells(nb, order, path.name)
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel,
                            resources={"metadata": {"path": str(path.parent)}})
    outcomes = []
    if poke:
        nb.cells.append(nbformat.v4.new_code_cell(WIDGET_POKE))  # nbclient writes a cell back at its index
    with client.setup_kernel():
        runs = [(i, nb.cells[i]) for i in cells] + ([(-1, nb.cells[-1])] if poke else [])
        for index, cell in runs:
            start = time.perf_counter()
            try:
                client.execute_cell(cell, index if index >= 0 else len(nb.cells) - 1)
                error = None
            except CellExecutionError as e:
                error = str(e)
            outcomes.append(CellOutcome(index, error, time.perf_counter() - start))
    return outcomes


def refresh_lesson(path: Path | str, fast: bool = False, kernel: str = "python3", timeout: int = 1800) -> float:
    """Re-run notebook ``path``'s set-up and lesson cells in one fresh kernel (``FAST = fast``, no report folder) and
    write their outputs back into ``path``; the first cell's output (the session header of the last full run) and
    the reproduction's outputs stay as they are. A cell that fails stops it, and nothing is written
    (`hedgekit.errors.InputError` naming the cell). Returns the seconds it took."""
    import copy
    import datetime
    import subprocess

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from hedgekit.checks import write_bytes_atomic

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    c = lesson_cells(nb, path.name)
    params = [i for i in c.setup if "parameters" in nb.cells[i].metadata.get("tags", [])]
    if len(params) != 1:
        raise InputError(f"{path.name}: expected one cell tagged 'parameters' before the lesson; found {len(params)}")
    first = copy.deepcopy(nb.cells[c.setup[0]])  # the session header of the last full run stays
    nb.cells.append(nbformat.v4.new_code_cell(f"FAST = {bool(fast)}\nREPORT_DIR = ''"))  # the run's values
    run = [(i, nb.cells[i]) for i in c.setup[: c.setup.index(params[0]) + 1]] + [(len(nb.cells) - 1, nb.cells[-1])]
    run += [(i, nb.cells[i]) for i in c.setup[c.setup.index(params[0]) + 1:] + sorted(c.steps + c.exercises)]
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel, resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in run:
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as e:
                raise InputError(f"{path.name}: cell {index} failed while its lesson was re-run; nothing was written:"
                                 f"\n{e}") from None
    seconds = time.perf_counter() - start
    nb.cells.pop()
    nb.cells[c.setup[0]] = first
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=path.parent, capture_output=True,
                            text=True).stdout.strip() or "?"
    nb.metadata.setdefault("hedgekit", {})["lesson_rerun"] = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "commit": commit,
        "mode": "FAST" if fast else "full", "seconds": round(seconds, 1)}
    write_bytes_atomic(path, nbformat.writes(nb).encode() + b"\n")
    return seconds
