"""The notebooks as a learner and as `reproduce` run them.

* **Run All**: the README's test command collects every notebook under notebooks/ as an nbmake
  item (pyproject.toml's ``addopts``: ``--nbmake``), which executes it top to bottom with its default parameters,
  in a fresh kernel, exactly as a learner's Run All does. The defaults are the quick tour (``FAST = True``:
  `test_notebooks_are_thin_and_well_formed`), so Run All is the recorded FAST run of notebooks/report/fast.json.
  The items are marked ``slow`` (tests/conftest.py) and train the ``fast`` preset models they need once per
  worker, into the session's own HEDGEKIT_DATA.
* **The parameterised run** that `python -m hedgekit reproduce` makes (papermill, ``REPORT_DIR`` set): the notebook
  hands its tables and figures to the report and its first cell records versions, mode and run time.

The ``python3`` kernelspec comes with ipykernel; if it is missing run ``python -m ipykernel install --user``.
"""
from __future__ import annotations

import re

import nbformat
import pytest

from hedgekit.paths import notebook_dir
from hedgekit.repro.catalog import NOTEBOOKS

NOTEBOOK_NAMES = [nb for group in NOTEBOOKS.values() for nb in group]


def _kernel_available(name: str = "python3") -> bool:
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        KernelSpecManager().get_kernel_spec(name)
        return True
    except Exception:
        return False


@pytest.mark.slow
def test_a_parameterised_run_hands_its_report(tmp_path):
    import papermill as pm

    if not _kernel_available():
        pytest.fail("no 'python3' Jupyter kernel: run `python -m ipykernel install --user`")
    name = "00_start_here.ipynb"
    src, out = notebook_dir() / name, tmp_path / name
    pm.execute_notebook(str(src), str(out), parameters=dict(FAST=True, REPORT_DIR=str(tmp_path / "report")),
                        kernel_name="python3", cwd=str(src.parent), progress_bar=False, execution_timeout=600)
    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    # first cell: versions and the mode, updated in place by hedgekit.repro.session.Session
    first = "".join(o.get("data", {}).get("text/markdown", "") for o in nb.cells[0].outputs)
    assert "versions:" in first and "FAST" in first and "run time:" in first
    assert (tmp_path / "report" / "manifest.json").is_file()  # handed tables/figures to the report


def test_run_all_moves_every_widget_after_the_last_cell():
    """Each notebook's last code cell carries nbmake's post_cell_execute with `orders.RUN_ALL_METADATA`: the Run All
    test then moves every live widget and fails on a callback a later cell broke."""
    from hedgekit.repro.orders import RUN_ALL_METADATA

    for name in NOTEBOOK_NAMES:
        cells = [c for c in nbformat.read(notebook_dir() / name, as_version=4).cells if c.cell_type == "code"]
        assert cells[-1].metadata.get("nbmake") == RUN_ALL_METADATA, name


@pytest.mark.slow  # a pytest with nbmake in a subprocess: two real kernels
def test_nbmake_run_all_fails_on_a_widget_a_later_cell_broke(tmp_path):
    import subprocess
    import sys

    from hedgekit.repro.orders import RUN_ALL_METADATA

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("import ipywidgets as W\nx = 1\nslider = W.IntSlider(0, 0, 3)\n"
                                          "slider.observe(lambda change: print(x + 1), names='value')"),
                nbformat.v4.new_code_cell("x = [x]  # a later cell rebinds the name the callback reads",
                                          metadata={"nbmake": RUN_ALL_METADATA})]
    nbformat.write(nb, tmp_path / "broken.ipynb")
    nb.cells[1].source = "y = [x]"
    nbformat.write(nb, tmp_path / "fine.ipynb")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbmake", "-o",
                          "addopts=", "broken.ipynb", "fine.ipynb"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    out = run.stdout + run.stderr
    assert "1 failed, 1 passed" in out and "widget callback(s) failed after Run All" in out, out


def test_every_registered_notebook_is_collected_for_run_all():
    """pyproject's addopts run nbmake over testpaths that include notebooks/ (and leave out student copies and
    reports): a notebook added to the registry is Run-All-tested without a line here."""
    import tomllib

    from hedgekit.paths import REPO_DIR

    options = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--nbmake" in options["addopts"].split() and "notebooks" in options["testpaths"]
    assert {"students", "report"} <= set(options["norecursedirs"])
    assert {p.name for p in notebook_dir().glob("*.ipynb")} == set(NOTEBOOK_NAMES)


def test_notebooks_are_thin_and_well_formed():
    """One `parameters` cell of literals defaulting to the quick tour (`FAST = True`: a learner's Run All trains
    nothing big), first cell prints versions, committed outputs < 5 MB."""
    import ast

    for name in NOTEBOOK_NAMES:
        path = notebook_dir() / name
        nb = nbformat.read(path, as_version=4)
        assert path.stat().st_size < 5 * 1024 * 1024, name
        assert "Session(" in nb.cells[0].source, name
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, name
        for node in ast.parse(tagged[0].source).body:
            assert isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant), (name, ast.dump(node))
        names = {t.id for node in ast.parse(tagged[0].source).body for t in node.targets}
        assert {"FAST", "SEED", "REPORT_DIR", "DEVICE"} <= names, name
        fast = [n.value.value for n in ast.parse(tagged[0].source).body if n.targets[0].id == "FAST"]
        assert fast == [True], f"{name}: Run All must play the quick tour (FAST = True); full mode is opt-in"
        configure = [c.source for c in nb.cells if "S.configure(" in c.source]  # where missing models train
        assert len(configure) == 1 and "device=DEVICE" in configure[0], name


WIDGET = "application/vnd.jupyter.widget-view+json"
STATIC = ("image/png", "image/svg+xml", "text/html")
CONTROL = re.compile(r"^(VBox|HBox|Box|GridBox|Tab|Accordion|interactive"
                     r"|\w*(Slider|Dropdown|Buttons|Select|Checkbox))\(")


def _is_control(output) -> bool:
    """A live control (a slider, a box of them, ``interact``), not a progress bar (tqdm's widget shows as text)."""
    data = output.get("data", {})
    return WIDGET in data and bool(CONTROL.match("".join(data.get("text/plain", ""))))


def widgets_without_a_record(nb) -> list[str]:
    """Cells whose committed output is a live widget but that do not say it needs a running kernel (in the cell or
    the markdown just above it) or have no static record (a figure or table in the cell or in one of the two code
    cells above it): what the static site and a reader without a kernel would be left with."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not any(_is_control(o) for o in cell.get("outputs", [])):
            continue
        above = [c for c in nb.cells[:i]]
        text = next((c.source for c in reversed(above) if c.cell_type == "markdown"), "")
        if "running kernel" not in " ".join((cell.source + " " + text).split()):
            problems.append(f"cell {i}: a widget without a line saying it needs a running kernel")
        near = [cell] + [c for c in reversed(above) if c.cell_type == "code"][:2]
        if not any(k in o.get("data", {}) for c in near for o in c.get("outputs", []) for k in STATIC):
            problems.append(f"cell {i}: a widget with no static record (figure or table) in it or just above it")
    return problems


def test_a_widget_without_its_record_is_found():
    nb = nbformat.v4.new_notebook()
    widget = nbformat.v4.new_output("display_data", data={WIDGET: {"model_id": "x"}, "text/plain": "VBox(children=()"})
    bar = nbformat.v4.new_output("display_data", data={WIDGET: {"model_id": "y"}, "text/plain": "train: 100%|##| 9/9"})
    table = nbformat.v4.new_output("execute_result", data={"text/html": "<table></table>"}, execution_count=1)
    nb.cells = [nbformat.v4.new_markdown_cell("Move the slider."),
                nbformat.v4.new_code_cell("slider", outputs=[widget]),
                nbformat.v4.new_code_cell("fit(model)", outputs=[bar])]  # a progress bar is no control
    assert widgets_without_a_record(nb) == [
        "cell 1: a widget without a line saying it needs a running kernel",
        "cell 1: a widget with no static record (figure or table) in it or just above it"]
    nb.cells[0].source += " It needs a running kernel; the table above is its record."
    nb.cells.insert(0, nbformat.v4.new_code_cell("table", outputs=[table]))
    assert widgets_without_a_record(nb) == []


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_every_widget_has_a_static_record_and_says_it_needs_a_kernel(name):
    assert widgets_without_a_record(nbformat.read(notebook_dir() / name, as_version=4)) == []


@pytest.mark.parametrize("name", [nb for nbs in NOTEBOOKS.values() for nb in nbs])
def test_committed_notebooks_number_their_executed_cells_1_2_3(name):
    """A reader sees In [1], In [2], In [3], ... as a Run All of the notebook itself numbers them: no number is
    missing where papermill's injected-parameters cell was dropped."""
    nb = nbformat.read(notebook_dir() / name, as_version=4)
    counts = [c.get("execution_count") for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert counts == list(range(1, len(counts) + 1)), counts


def test_number_cells_renumbers_executed_cells_and_their_results_in_order():
    from hedgekit.repro.orders import number_cells

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a", execution_count=1), nbformat.v4.new_markdown_cell("text"),
                nbformat.v4.new_code_cell("b", execution_count=4, outputs=[
                    nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=4)]),
                nbformat.v4.new_code_cell("", execution_count=None), nbformat.v4.new_code_cell("c", execution_count=7)]
    number_cells(nb)
    assert [c.get("execution_count") for c in nb.cells if c.cell_type == "code"] == [1, 2, None, 3]
    assert nb.cells[2].outputs[0]["execution_count"] == 2
