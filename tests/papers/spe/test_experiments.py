"""Tests of hedgekit.papers.spe.experiments: the model grids of notebooks 06-07."""
import hedgekit.papers.spe.experiments as X


def test_experiment_grids():
    assert X.table2_settings(True) == ((2, 2),)
    assert len(X.table2_settings(False)) == 4
    full = X.table2_specs(False)
    assert set(full) == {(2, 2), (2, 3), (3, 2), (3, 3)} and full[(3, 2)]["SPE"].n_digits == 3
    f4 = X.fig4_specs(False)
    assert sorted({(s.sampler, s.samples) for s in f4}) == sorted(
        (smp, s) for smp in ("naive", "intersection") for s in (1, 3, 9, 27, 81))
    assert {s.samples for s in X.fig4_specs(True)} == set(X.FAST_FIG4_SAMPLES)


def test_fig4_replicates_every_point_five_times_in_full_mode_and_once_in_fast_mode():
    full = X.fig4_specs(False, seed=3)
    assert X.FIG4_REPLICATIONS == 5 and len(full) == 5 * 2 * 5 and len({s.name for s in full}) == len(full)
    for sampler in ("naive", "intersection"):
        for s in X.FIG4_SAMPLES:
            assert sorted(x.seed for x in full if (x.sampler, x.samples) == (sampler, s)) == [3, 4, 5, 6, 7]
    assert [s.seed for s in full[:10]] == [3] * 10  # the first replication first
    assert full[0].name == "spe-n2-d2-naive1-fig4-paper-s3" and full[-1].name == "spe-n2-d2-intersection81-fig4-paper-s7"
    fast = X.fig4_specs(True, seed=2)
    assert len(fast) == 2 * len(X.FAST_FIG4_SAMPLES) and {s.seed for s in fast} == {2}
    assert all(s.preset == "fast" for s in fast) and all(s.preset == "paper" for s in full)
    assert X.notebook_specs("07", False)[-len(full):] == X.fig4_specs(False)


def test_pn_and_spe_train_four_times_the_steps_at_n3_in_full_mode_only():
    preset_steps = X.PRESETS["paper"]["ndigit"]["steps"]
    for (n, d), pair in X.table2_specs(False).items():
        want = preset_steps * (4 if n == 3 else 1)
        assert [s.train_config().steps for s in pair.values()] == [want, want], (n, d)  # PN and SPE alike
    assert X.table2_specs(False)[(3, 2)]["SPE"].name == "spe-n3-d2-intersection1-paper12000-s0"
    assert X.table2_specs(False)[(3, 3)]["PN"].name == "pn-n3-d3-paper12000-s0"
    assert X.table2_steps(3, 2, fast=True) is None and X.table2_steps(2, 3, fast=False) is None
    fast = X.table2_specs(True)[(2, 2)]
    assert all(s.steps is None and s.preset == "fast" for s in fast.values())
    assert [s.name for s in X.notebook_specs("07", False)[8:10]] == ["pn-n3-d2-paper12000-s0",
                                                                     "spe-n3-d2-intersection1-paper12000-s0"]
