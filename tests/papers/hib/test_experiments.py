"""hedgekit.papers.hib.experiments: notebook 04's model grid with HIB Table 4 (issue 16)."""
import hedgekit.papers.hib.experiments as X

TABLE4_NAMES = ["point-n3-d4-paper-s0", "hib-n3-d4-c1-beta0.0001-k8-paper-s0",
                "hib-n3-d4-c2-beta0.0001-k8-paper-s0"]


def test_table4_specs_are_the_papers_three_models_at_n3_d4_in_full_mode_and_none_in_fast_mode():
    specs = X.table4_specs(False)
    assert [s.name for s in specs] == TABLE4_NAMES
    assert [s.label for s in specs] == ["point", "MoG-1", "MoG-2"]
    assert all(s.steps is None and s.preset == "paper" for s in specs)  # full `paper` models, not a sweep
    assert [s.seed for s in X.table4_specs(False, seed=3)] == [3, 3, 3]
    assert X.table4_specs(True) == []  # FAST mode skips Table 4 (module docstring)


def test_notebook_04_loads_table4_after_the_table1_grid():
    full = [s.name for s in X.notebook_specs("04", False)]
    assert len(full) == 3 * len(X.TABLE1_SETTINGS) + 3 and full[-3:] == TABLE4_NAMES
    assert not any("-n3-d4-" in s.name for s in X.notebook_specs("04", True))
    assert set(TABLE4_NAMES) <= {s.name for s in X.all_specs(False)}


def test_recorded_table4_lists_its_three_models_as_missing_in_an_empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))  # no cache; no Table 4 model is shipped
    assert X.recorded_table1("paper", settings=(X.TABLE4_SETTING,)) == ({}, TABLE4_NAMES)


def test_mog_models_draw_the_papers_k_8_at_d3_and_above_in_full_mode_only():
    for n, d in X.TABLE1_SETTINGS + (X.TABLE4_SETTING,):
        point, *mogs = X.table1_specs(n, d, fast=False)
        assert [m.train_config().k for m in mogs] == [X.PAPER_K if d >= 3 else 4] * 2, (n, d)
        assert all(("-k8-" in m.name) == (d >= 3) for m in mogs)
    assert all(s.samples is None for s in X.table1_specs(2, 3, fast=True)[1:])  # FAST: the fast preset's K
    assert X.embedding_specs(False)["mog1_3d"].train_config().k == X.PAPER_K
    assert X.embedding_specs(False)["mog1"].train_config().k == 4
    # notebook 05's N = 3, D = 3 models keep the preset's K (module docstring)
    assert {s.train_config().k for s in X.beta_specs(False)} == {4}
