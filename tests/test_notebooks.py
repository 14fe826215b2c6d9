"""The notebooks as a learner and as `reproduce` run them.

* **Run All** (issue 48, item 1): the README's test command collects every notebook under notebooks/ as an nbmake
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

import nbformat
import pytest

from hedgekit.repro.reproduce import NOTEBOOKS, notebook_dir

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
