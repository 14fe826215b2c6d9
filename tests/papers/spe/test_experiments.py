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
