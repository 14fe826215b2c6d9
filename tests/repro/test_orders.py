"""hedgekit.repro.orders: a lesson's cells found from its headings and tags, the orders built from them, a run in a
real kernel that keeps every cell's error, catches a widget callback broken by a later cell and re-runs each step
alone after the exercises, and the static scan for exercise cells that rebind a step's names."""
from __future__ import annotations

import nbformat
import pytest

from hedgekit.errors import InputError
from hedgekit.repro.orders import (ALONE_ORDER, ORDERS, OrderCells, lesson_cells, module_bindings, order_cells,
                                   rebound_names, refresh_lesson, run_order)

new_code, new_md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell


def _lesson(step_source: str = "x = 1", widget: str = "") -> nbformat.NotebookNode:
    """A tiny lesson: set-up (0, 1), heading (2), steps (3, 5), exercise answer + check (6, 7), reproduction (9)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [new_code("import math"), new_code("SEED = 0\nFAST = True", metadata={"tags": ["parameters"]}),
                new_md("# Lesson — a tiny one"),
                new_code(step_source), new_md("## Exercises"), new_code(widget or "y = x + 1"),
                new_code("ANSWER = 2", metadata={"tags": ["exercise"]}),
                new_code("assert ANSWER == 2", metadata={"tags": ["exercise", "check"]}),
                new_md("# Reproduction — the paper"), new_code("x = [x]  # a later cell rebinds a lesson name")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_cells_are_found_by_heading_and_tag():
    c = lesson_cells(_lesson())
    assert (c.setup, c.steps, c.exercises, c.rest) == ([0, 1], [3, 5], [6, 7], [9])


def test_the_orders_of_the_issue():
    nb = _lesson()
    assert order_cells(nb, "top to bottom (Run All), then the widgets moved") == OrderCells([0, 1, 3, 5, 6, 7, 9], True,
                                                                                            [])
    assert order_cells(nb, "the exercises (twice) before the steps") == OrderCells([0, 1, 6, 7, 6, 7, 3, 5], False, [])
    assert order_cells(nb, "the steps re-run after the exercises") == OrderCells([0, 1, 3, 5, 6, 7, 3, 5], False, [])
    assert order_cells(nb, ALONE_ORDER) == OrderCells([0, 1, 3, 5, 6, 7], False, [3, 5])  # Run All's lesson, then each
    assert len(ORDERS) == 4                                                                 # step on its own


@pytest.mark.parametrize("drop, message", [("# Lesson", "no '# Lesson' heading"),
                                           ("# Reproduction", "no '# Reproduction' heading")])
def test_a_notebook_without_its_headings_is_refused(drop, message):
    nb = _lesson()
    nb.cells = [c for c in nb.cells if not c.source.startswith(drop)]
    with pytest.raises(InputError, match=message):
        lesson_cells(nb, "t.ipynb")
    with pytest.raises(InputError, match="order must be one of"):
        order_cells(_lesson(), "backwards")


@pytest.mark.slow  # starts real kernels (a few seconds each)
def test_a_run_keeps_every_error_and_catches_a_broken_widget(tmp_path):
    pytest.importorskip("ipywidgets")
    widget = ("import ipywidgets as W\nslider = W.IntSlider(0, 0, 3)\n"
              "slider.observe(lambda change: print(x + 1), names='value')")
    path = tmp_path / "lesson.ipynb"
    nbformat.write(_lesson(widget=widget), path)
    runs = run_order(path, "top to bottom (Run All), then the widgets moved", timeout=60)
    assert [r.index for r in runs] == [0, 1, 3, 5, 6, 7, 9, -1]
    assert [r.index for r in runs if r.error] == [-1]  # every cell ran; the slider's callback meets x = [1]
    assert "widget callback(s) failed after Run All" in runs[-1].error and "TypeError" in runs[-1].error

    nbformat.write(_lesson(step_source="x = ANSWER"), path)  # a step that needs an exercise's name
    runs = run_order(path, "the steps re-run after the exercises", timeout=60)
    assert [i for i, r in enumerate(runs) if r.error] == [2, 3]  # the steps fail the first time only
    assert "NameError" in runs[2].error and runs[6].error is None  # re-run after the exercises, x finds ANSWER


@pytest.mark.slow  # starts real kernels (a few seconds each)
def test_each_step_re_runs_alone_after_the_exercises(tmp_path):
    nb = _lesson()
    nb.cells[6].source = "ANSWER = 2\nx = 'an exercise reuses the name x'"  # cell 5 (y = x + 1) reads step 3's x
    path = tmp_path / "lesson.ipynb"
    nbformat.write(nb, path)
    assert not any(r.error for r in run_order(path, "the steps re-run after the exercises", timeout=60))  # 3 re-binds x
    runs = run_order(path, ALONE_ORDER, timeout=60)
    assert [(r.index, r.alone) for r in runs] == [(0, False), (1, False), (3, False), (5, False), (6, False),
                                                  (7, False), (3, True), (5, True)]
    assert [r.index for r in runs if r.error] == [5] and runs[-1].alone  # step 3's re-run does not rescue step 5
    assert "TypeError" in runs[-1].error

    nb.cells[6].source = "ANSWER = 2\nex1_x = 'its own name'"
    nbformat.write(nb, path)
    assert not any(r.error for r in run_order(path, ALONE_ORDER, timeout=60))


@pytest.mark.slow  # starts real kernels (a few seconds each)
def test_refresh_lesson_rewrites_the_lesson_and_keeps_the_rest(tmp_path):
    nb = _lesson(step_source="x = 1\nprint('mode', 'FAST' if FAST else 'full', x)")
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="header of the full run\n")]
    nb.cells[9].outputs = [nbformat.v4.new_output("stream", text="the paper's figure\n")]
    path = tmp_path / "lesson.ipynb"
    nbformat.write(nb, path)
    seconds = refresh_lesson(path, fast=False, timeout=60)
    out = nbformat.read(path, as_version=4)
    assert out.cells[3].outputs[0]["text"] == "mode full 1\n"  # the parameters overridden: full mode
    assert out.cells[0].outputs[0]["text"] == "header of the full run\n"  # kept
    assert out.cells[9].outputs[0]["text"] == "the paper's figure\n"  # the reproduction's outputs kept
    rerun = out.metadata["hedgekit"]["lesson_rerun"]
    assert rerun["mode"] == "full" and rerun["seconds"] == pytest.approx(seconds, abs=0.1)

    nb.cells[5].source = "y = undefined_name"
    nbformat.write(nb, path)
    before = path.read_bytes()
    with pytest.raises(InputError, match="cell 5 failed while its lesson was re-run; nothing was written"):
        refresh_lesson(path, timeout=60)
    assert path.read_bytes() == before


# ---------------------------------------------------------------- the static scan
@pytest.mark.parametrize("source, names", [
    ("a = b = 1\nc, (d, *e) = f\ng += 1\nh: int = 2\ndel i", {"a", "b", "c", "d", "e", "g", "h", "i"}),
    ("for j, k in pairs:\n    m = j\nwith open(p) as n:\n    pass\ntry:\n    pass\nexcept OSError as o:\n    pass",
     {"j", "k", "m", "n", "o"}),
    ("def f(x, y=1):\n    local = x\n    return local\nclass C:\n    attr = 1\nsq = lambda t: t * t", {"f", "C", "sq"}),
    ("def f():\n    global G\n    G = 1\n    other = 2", {"f", "G"}),
    ("squares = [q * q for q in range(3)]\nlast = [(w := q) for q in range(3)]", {"squares", "last", "w"}),
    ("import os.path\nimport numpy as np\nfrom math import pi, tau as t", {"os", "np", "pi", "t"}),
    ("%matplotlib inline\nshown = 1", {"shown"}),
])
def test_module_bindings(source, names):
    assert set(module_bindings(source)) == names


def test_an_exercise_that_rebinds_a_step_name_is_found():
    nb = _lesson()
    assert rebound_names(nb, "t.ipynb") == []
    nb.cells[7].source = "import math\nfrom math import sqrt\nassert ANSWER == 2"  # set-up's math: the same object
    nb.cells[3].source = "import math as math\nfrom math import sqrt\nx = 1"
    assert rebound_names(nb, "t.ipynb") == []
    nb.cells[7].source = "import cmath as math\nx, ANSWER = 0, 2\nfor y in range(2):\n    pass"
    assert rebound_names(nb, "t.ipynb") == ["t.ipynb: exercise cell 7 rebinds names the lesson's set-up or steps bind: "
                                            "math (cells 0, 3), x (cell 3), y (cell 5)"]
    nb.cells[7].source = "def check():\n    x, y = 0, 1\n    assert ANSWER == 2\ncheck()"  # a function's own names
    assert rebound_names(nb, "t.ipynb") == []
    nb.cells[3].source, nb.cells[7].source = "for _ in range(2):\n    x = 1", "for _ in range(2):\n    ANSWER = 2"
    assert rebound_names(nb, "t.ipynb") == []  # the throwaway name: no cell reads it
