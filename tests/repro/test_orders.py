"""hedgekit.repro.orders: a lesson's cells found from its headings and tags, the orders built from them, and a run
in a real kernel that keeps every cell's error and catches a widget callback broken by a later cell."""
from __future__ import annotations

import nbformat
import pytest

from hedgekit.errors import InputError
from hedgekit.repro.orders import ORDERS, lesson_cells, order_cells, refresh_lesson, run_order

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
    assert order_cells(nb, "top to bottom (Run All), then the widgets moved") == ([0, 1, 3, 5, 6, 7, 9], True)
    assert order_cells(nb, "the exercises (twice) before the steps") == ([0, 1, 6, 7, 6, 7, 3, 5], False)
    assert order_cells(nb, "the steps re-run after the exercises") == ([0, 1, 3, 5, 6, 7, 3, 5], False)
    assert len(ORDERS) == 3


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
