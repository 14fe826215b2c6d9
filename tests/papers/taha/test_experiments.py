"""hedgekit.papers.taha.experiments: which zoo specs each table uses, FAST vs full."""
import pytest

from hedgekit.errors import InputError
from hedgekit.papers.taha import experiments as E
from hedgekit.zoo import spec_from_name


def test_specs_per_table_and_mode():
    for fast, runs in ((True, E.FAST_RUNS), (False, E.FULL_RUNS)):
        t1, t2, lt = E.table1_specs(fast), E.table2_specs(fast), E.longtail_specs(fast)
        assert list(t1) == list(E.TABLE1_ROWS) and list(t2) == list(E.TABLE2_ROWS)
        for group, data in ((t1, "ndigit"), (t2, "fashion"), (lt, "fashion")):
            for label, specs in group.items():
                assert len(specs) == runs and len({s.seed for s in specs}) == runs
                assert all(s.data == data and s.preset == ("fast" if fast else "paper") and s.dim == E.DIM for s in specs)
        assert [s.recipe for s in t1["Tri + Aug + Hetero"]] == ["aug"] * runs
        assert t2["Tri + Hetero on noisy"][0].kind == "het" and t2["clean subset only"][0].recipe == "clean"


def test_notebook_specs_are_distinct_valid_names():
    specs = E.notebook_specs("08_het_triplet_retrieval.ipynb", fast=False, n_runs=3)
    assert len(specs) == len({s.name for s in specs}) == 27
    assert len(E.notebook_specs("08", fast=False)) == 9 * E.FULL_RUNS
    assert all(spec_from_name(s.name) == s for s in specs)
    assert [s.seed for s in specs[:9]] == [0] * 9  # run by run: a cut-short cache still has whole runs
    assert E.notebook_specs("07_spe_ndigit.ipynb", fast=True) == []


def test_runs_override_and_bad_runs():
    assert [s.seed for s in E.table1_specs(False, seed=4, n_runs=2)["Tri"]] == [4, 5]
    with pytest.raises(InputError, match="runs"):
        E.table2_specs(True, n_runs=0)
