"""Every registered reproduction notebook runs top to bottom in FAST mode (papermill, kernel python3).

FAST mode loads the shipped `paper` models where a figure's models all ship and otherwise
the `fast` preset models (trained once per test session, into the session's HEDGEKIT_DATA:
tests/conftest.py), so each notebook stays under 3 minutes on 2 CPU cores. The `python3` kernelspec comes
with ipykernel; if it is missing run ``python -m ipykernel install --user``.
"""
from __future__ import annotations

import nbformat
import pytest

from hedgekit.repro.reproduce import NOTEBOOKS, notebook_dir

pytestmark = pytest.mark.slow  # runs every notebook in FAST mode (1-3 min each)

NOTEBOOK_NAMES = [nb for group in NOTEBOOKS.values() for nb in group]


def _kernel_available(name: str = "python3") -> bool:
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        KernelSpecManager().get_kernel_spec(name)
        return True
    except Exception:
        return False


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_notebook_runs_in_fast_mode(name, tmp_path):
    import papermill as pm

    if not _kernel_available():
        pytest.fail("no 'python3' Jupyter kernel: run `python -m ipykernel install --user`")
    src = notebook_dir() / name
    out = tmp_path / name
    pm.execute_notebook(str(src), str(out), parameters=dict(FAST=True, REPORT_DIR=str(tmp_path / "report")),
                        kernel_name="python3", cwd=str(src.parent), progress_bar=False, execution_timeout=600)
    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    # first cell: versions and the mode, updated in place by hedgekit.repro.session.Session
    first = "".join(o.get("data", {}).get("text/markdown", "") for o in nb.cells[0].outputs)
    assert "versions:" in first and "FAST" in first and "run time:" in first
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assert (tmp_path / "report" / "manifest.json").is_file()  # handed tables/figures to the report


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
