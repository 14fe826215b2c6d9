"""A lesson run in the orders a learner runs its cells (issue 48, item 2: "Any order works").

A lesson notebook has three kinds of code cells, found from its headings and tags:

* the **set-up**: the code cells before the ``# Lesson`` heading (the session, the ``parameters`` cell, imports);
* the **steps**: the lesson's other code cells, from ``# Lesson`` up to the ``# Reproduction`` heading;
* the **exercises**: the lesson's cells tagged ``exercise`` (answers and their checks).

`ORDERS` names the orders the issue asks for, each as the list of cells a learner would run, and `run_order`
executes one in a fresh kernel with the notebook's default parameters (a learner's Run All), cell by cell, keeping
every cell's error instead of stopping at the first. The first order runs the whole notebook top to bottom and then
moves every live widget (`WIDGET_POKE`): each slider to its other end and each dropdown through its options, so a
callback that a later cell broke (a rebound name, a missing figure) shows up as an error instead of dying silently
in the kernel's log.

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

__all__ = ["LessonCells", "lesson_cells", "ORDERS", "order_cells", "CellOutcome", "run_order", "WIDGET_POKE",
           "refresh_lesson"]

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


# Run in the kernel after Run All: every live widget is moved; an exception in a callback, raised or shown through
# IPython's showtraceback (an Output widget's context, ipywidgets.interact), is collected and raised at the end.
WIDGET_POKE = r'''
def _hedgekit_poke_widgets():
    import traceback as _tb
    import ipywidgets as _w
    from IPython import get_ipython as _gi
    _ip, _errors = _gi(), []
    _shown, _output = _ip.showtraceback, (_w.Output.__enter__, _w.Output.__exit__, _w.Output.clear_output)

    def _exit(self, etype, evalue, tb):  # an Output widget's context: keep the error, swallow it as the kernel does
        if etype is not None:
            _errors.append("".join(_tb.format_exception(etype, evalue, tb)))
        return True

    _ip.showtraceback = lambda exc_tuple=None, *a, **k: _errors.append(
        "".join(_tb.format_exception(*(exc_tuple or __import__("sys").exc_info()))))
    # Output widgets redirect by message parent, which leaves this cell's reply unmatched without a front end: here
    # their contents go to this cell instead
    _w.Output.__enter__, _w.Output.__exit__, _w.Output.clear_output = lambda self: self, _exit, lambda *a, **k: None
    moved = 0
    try:
        for w in list(_w.widgets.widget._instances.values()):
            if isinstance(w, (_w.IntSlider, _w.FloatSlider)):
                values = [w.max, w.min, w.value]
            elif isinstance(w, (_w.Dropdown, _w.RadioButtons, _w.ToggleButtons, _w.Select)):
                values = [v for _, v in w._options_full][::-1] + [w.value] if w._options_full else []
            elif isinstance(w, (_w.Checkbox, _w.ToggleButton)):
                values = [not w.value, w.value]
            else:
                continue
            for v in values:
                try:
                    w.value = v
                    moved += 1
                except Exception:
                    _errors.append(_tb.format_exc())
    finally:
        _ip.showtraceback = _shown
        _w.Output.__enter__, _w.Output.__exit__, _w.Output.clear_output = _output
    if _errors:
        raise RuntimeError(f"{len(_errors)} widget callback(s) failed after Run All:\n" + "\n".join(_errors))
    print(f"moved widgets {moved} times")

_hedgekit_poke_widgets()
'''


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
