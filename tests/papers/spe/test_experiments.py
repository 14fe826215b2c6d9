"""Tests of hedgekit.papers.spe.experiments: the model grids of notebooks 06-07."""
import dataclasses

import hedgekit.papers.spe.experiments as X
from hedgekit import zoo
from hedgekit.zoo import store


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
    assert full[0].name == "spe-n2-d2-naive1-fig4-paper-s3"
    assert full[-1].name == "spe-n2-d2-intersection81-fig4-paper-s7"
    fast = X.fig4_specs(True, seed=2)
    assert len(fast) == 2 * len(X.FAST_FIG4_SAMPLES) and {s.seed for s in fast} == {2}
    assert all(s.preset == "fast" for s in fast) and all(s.preset == "paper" for s in full)
    seeds = 2 * 2 * 4  # then seeds 1 and 2 of Table 2's PN and SPE at its four settings (`table2_seeds_by_setting`)
    assert X.notebook_specs("07", False)[-len(full) - seeds:-seeds] == X.fig4_specs(False)


def test_pn_and_spe_train_four_times_the_steps_at_n3_in_full_mode_only():
    preset_steps = X.PRESETS["paper"]["ndigit"]["steps"]
    for (n, d), four in X.table2_specs(False).items():
        want = preset_steps * (4 if n == 3 else 1)
        assert [four[k].train_config().steps for k in ("PN", "SPE")] == [want, want], (n, d)  # PN and SPE alike
        assert four["HIB"].steps is None and four["point"].steps is None  # the HIB zoo's models as they are
    assert X.table2_specs(False)[(3, 2)]["SPE"].name == "spe-n3-d2-intersection1-paper12000-s0"
    assert X.table2_specs(False)[(3, 3)]["PN"].name == "pn-n3-d3-paper12000-s0"
    assert X.table2_steps(3, 2, fast=True) is None and X.table2_steps(2, 3, fast=False) is None
    fast = X.table2_specs(True)[(2, 2)]
    assert all(s.steps is None for s in fast.values())
    assert [s.name for s in X.notebook_specs("07", False)[8:10]] == ["pn-n3-d2-paper12000-s0",
                                                                     "spe-n3-d2-intersection1-paper12000-s0"]


def test_spe_starts_its_variances_at_sigma_eps2_at_n3_d3_in_full_mode_only():
    full = X.table2_specs(False)
    assert X.TABLE2_EPS_INIT == ((3, 3),)
    assert {nd: four["SPE"].init_var for nd, four in full.items()} == {
        (2, 2): "unit", (2, 3): "unit", (3, 2): "unit", (3, 3): "eps"}
    assert full[(3, 3)]["SPE"].name == "spe-n3-d3-intersection1-veps-paper12000-s0"
    assert full[(3, 3)]["SPE"].initial_variance > 7 > full[(3, 2)]["SPE"].initial_variance
    assert all(s.init_var == "unit" for s in X.table2_specs(True)[(2, 2)].values() if s.kind == "spe")  # SPE's only
    assert all(s.init_var == "unit" for s in X.fig4_specs(False))


TABLE2_N2D2 = ["pn-n2-d2-paper-s0", "spe-n2-d2-intersection1-paper-s0", "hib-n2-d2-c1-beta0.0001-paper-s0",
               "point-n2-d2-paper-s0"]


def test_table2_holds_pn_spe_hib_and_point_per_setting_and_fast_mode_loads_the_four_shipped_n2_d2_models():
    full = X.table2_specs(False)
    assert all(list(four) == ["PN", "SPE", "HIB", "point"] for four in full.values())
    assert [s.name for s in full[(2, 2)].values()] == TABLE2_N2D2
    assert full[(3, 3)]["HIB"].name == "hib-n3-d3-c1-beta0.0001-paper-s0"
    assert set(TABLE2_N2D2) <= set(zoo.shipped_names())
    fast = X.table2_specs(True)
    assert list(fast) == [(2, 2)] and [s.name for s in fast[(2, 2)].values()] == TABLE2_N2D2
    assert X.notebook_specs("07", True)[:4] == list(fast[(2, 2)].values())


def test_fast_table2_trains_four_fast_models_when_one_of_the_four_is_not_shipped(monkeypatch):
    monkeypatch.setattr(store, "shipped_names", lambda: TABLE2_N2D2[1:])  # no PN
    fast = X.table2_specs(True)[(2, 2)]
    assert [s.name for s in fast.values()] == ["pn-n2-d2-fast-s0", "spe-n2-d2-intersection1-fast-s0",
                                                "hib-n2-d2-c1-beta0.0001-fast-s0", "point-n2-d2-fast-s0"]


def test_headline_seeds_retrain_table2s_n2_d2_pn_and_spe_with_seeds_0_to_2_in_full_mode_only():
    seeded = X.table2_seed_specs(False)
    own = X.table2_specs(False)[(2, 2)]
    for label in ("PN", "SPE"):
        assert [s.seed for s in seeded[label]] == [0, 1, 2] and seeded[label][0] == own[label]
        assert all(s.name == own[label].name.replace("-s0", f"-s{s.seed}") for s in seeded[label])
    assert X.table2_seed_specs(True) == {}
    names = [s.name for s in X.notebook_specs("07", False)]
    assert {s.name for group in seeded.values() for s in group} <= set(names) and len(names) == len(set(names))


def test_every_table2_setting_has_seeds_0_to_2_of_its_pn_and_spe_and_notebook_07_lists_them():
    by = X.table2_seeds_by_setting(False)
    assert list(by) == list(X.table2_specs(False)) and X.table2_seeds_by_setting(True) == {}
    for nd, models in by.items():
        own = X.table2_specs(False)[nd]
        for label in ("PN", "SPE"):
            assert [s.seed for s in models[label]] == [0, 1, 2] and models[label][0] == own[label]
            assert all(s == dataclasses.replace(own[label], seed=s.seed) for s in models[label])  # same recipe
    assert X.table2_seed_specs(False) == by[(2, 2)]
    names = {s.name for models in by.values() for group in models.values() for s in group}
    assert names <= {s.name for s in X.notebook_specs("07", False)}


def test_table2_seed_rows_take_the_tables_own_rows_for_seed_0_and_train_only_n2d2s_missing_seeds():
    """Seed 0 is the table's own pair (its rows as evaluated, nothing measured again); another seed's cells come
    from ``measures``, which may train at N = 2, D = 2 only; a seed not held at another setting is named."""
    own = X.table2_specs(False)
    table_rows = [dict(method=m, N=n, D=d, split="seen", condition="clean S / clean Q", acc=80.0 + n + d, se=0.5)
                  for (n, d) in own for m in ("PN", "SPE", "HIB (PN rule)")]
    asked = []

    def measures(spec, train):
        asked.append((spec.name, train))
        if (spec.n_digits, spec.dim) == (3, 3) and spec.seed == 2:
            return None  # neither here nor in the ledger
        return {"seen: clean S / clean Q": 50.0 + spec.seed, "seen: clean S / clean Q (se)": 0.4, "episodes": 1000,
                "source": "ledger", "device": "cpu", "date": "2026-11-29"}

    by_seed, missing, source = X.table2_seed_rows(own, table_rows, measures)
    assert len(by_seed) == 3 and sorted(by_seed[0], key=str) == sorted(
        [r for r in table_rows if r["method"] in ("PN", "SPE")], key=str)
    assert all(train == name.startswith(("pn-n2-d2", "spe-n2-d2")) for name, train in asked) and len(asked) == 16
    assert missing == ["pn-n3-d3-paper12000-s2", "spe-n3-d3-intersection1-veps-paper12000-s2"]
    assert len(by_seed[1]) == 8 and len(by_seed[2]) == 6  # 4 settings x 2 methods, less N3D3's at seed 2
    assert {(r["N"], r["D"], r["acc"], r["se"], r["episodes"]) for r in by_seed[1]} == {
        (n, d, 51.0, 0.4, 1000) for n, d in own}
    assert source == "14 seeds: 14 from the ledger (trained on cpu, recorded 2026-11-29)"


def _contracted_splits(scale=0.6, seed=0):
    """Two splits of 12 classes on a grid (spacing 1) in 2-D; each image's corrupt twin is its clean embedding
    drawn towards the origin by ``scale``: a pure global contraction, which one affine map undoes exactly."""
    import numpy as np
    import torch

    from hedgekit.embedding import Embedding
    from hedgekit.evaluation.embedded import EmbeddedSet

    rng = np.random.default_rng(seed)
    out = {}
    for split, offset in (("seen", 0.0), ("unseen", 0.5)):
        centres = np.array([(i + offset, j) for i in range(-2, 2) for j in range(-1, 2)], float)  # 12 classes
        labels = np.repeat(np.arange(len(centres)), 12)
        clean = centres[labels] + 0.12 * rng.standard_normal((len(labels), 2))
        pt = lambda z: Embedding.point(torch.as_tensor(z, dtype=torch.float32))  # noqa: E731
        out[split] = EmbeddedSet(pt(clean), pt(scale * clean), labels)
    return out


def test_corrupt_support_geometry_finds_a_pure_contraction_and_undoes_it():
    sets = _contracted_splits(0.6)
    df = X.corrupt_support_geometry({"toy": None}, sets, n_episodes=40, k_support=5, query_per_class=5)
    assert list(df.split) == ["seen", "unseen"] and list(df.fit_split) == ["unseen", "seen"]
    for r in df.itertuples():
        assert abs(r.contraction - 0.6) < 1e-6  # the class means contract exactly as the embeddings do
        assert r.shift_over_spacing > 0.5 and r.own_nearest < 1  # the outer classes' prototypes land on neighbours
        assert r.clean > 95 and r.corrupt < r.clean - 10  # contracted prototypes cost accuracy ...
        assert abs(r.corrected - r.clean) < 1e-9  # ... and the affine map fitted on the other split restores it
        assert 0 <= r.clean_se < 2 and r.episodes == 40


def test_corrupt_support_geometry_without_distortion_changes_nothing_and_needs_two_splits():
    import pytest

    from hedgekit.errors import InputError

    sets = _contracted_splits(1.0)
    df = X.corrupt_support_geometry({"same": (None, None)}, sets, n_episodes=20, k_support=5)
    assert (abs(df.contraction - 1) < 1e-9).all() and (df.shift_over_spacing < 1e-6).all()
    assert (df.own_nearest == 1).all() and (abs(df.corrupt - df.clean) < 1e-9).all()
    assert (abs(df.corrected - df.clean) < 1e-9).all()
    with pytest.raises(InputError, match="two or more"):
        X.corrupt_support_geometry({"same": None}, {"seen": sets["seen"]}, n_episodes=5, k_support=5)


def test_corrupt_support_geometry_embeds_image_sets_with_the_model():
    """A stand-in model: the mean brightness of each half of the image. Occlusion only darkens, so the corrupt
    twins' embeddings move towards the origin (contraction < 1) and cost accuracy."""
    import numpy as np
    import torch

    from hedgekit.data.occlusion import occlude, sample_digit_boxes
    from hedgekit.embedding import Embedding

    class Halves:
        def embed(self, x, batch_size=None):
            w = x.shape[-1] // 2
            return Embedding.point(torch.stack([x[..., :w].mean((1, 2, 3)), x[..., w:].mean((1, 2, 3))], 1))

    rng = np.random.default_rng(0)
    sets = {}
    for split, levels in (("seen", (60, 110, 160, 210)), ("unseen", (85, 135, 185, 235))):
        pairs = [(a, b) for a in levels for b in levels]  # 16 classes: one brightness per half
        labels = np.repeat(np.arange(len(pairs)), 10)
        images = np.stack([np.concatenate([np.full((28, 28), pairs[y][0]), np.full((28, 28), pairs[y][1])], 1)
                           for y in labels]) + rng.integers(-8, 9, (len(labels), 28, 56))
        images = images.clip(0, 255).astype(np.uint8)
        corrupt = occlude(images, sample_digit_boxes(rng, len(images), 2, 1.0))
        sets[split] = type("Set", (), dict(images=images, corrupt=corrupt, labels=labels))()
    df = X.corrupt_support_geometry({"halves": Halves()}, sets, n_episodes=20, k_support=4, query_per_class=4)
    assert len(df) == 2 and (df.contraction < 0.95).all() and (df.corrupt < df.clean).all()
    assert (df.clean > 95).all()
