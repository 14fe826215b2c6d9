"""Tests of hedgekit.papers.spe.protocol (the measurements of notebooks 06-07); the claims are in test_claims.py.

Nothing touches the user's cache: HEDGEKIT_DATA points to tmp_path and the shipped checkpoint folder
to an empty tmp folder; presets are shrunk to a few steps of tiny episodes, and N-digit MNIST is replaced
by a small synthetic set. Oracles: hand-built embeddings whose correlations, eta^2, prototypes and
episode accuracies are known exactly; renders recomputed directly; the SPE generative model (eq. 3),
whose sigma_eps^2 the fit must recover.
"""
import math

import numpy as np
import pytest
import torch

import hedgekit.papers.spe.protocol as Z
from hedgekit.papers.spe import numbers as N
from hedgekit.data import NDigitSet, occlude, sample_digit_boxes
from hedgekit.data.lshapes import CLASS_CENTERS, render_batch
from hedgekit.data.ndigit import spelled_number
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.pn import PN
from hedgekit.methods.fast.spe import SPE

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")


def tiny_ndigit(split: str, n_images: int, seed: int = 0) -> NDigitSet:
    """1-digit "MNIST": digit v is a fixed random glyph + noise (easy, separable); test sets fully occluded."""
    glyphs = (np.random.default_rng(1234).random((10, 28, 28)) > 0.75) * 200.0
    rng = np.random.default_rng([seed, len(split)])
    labels = rng.permutation(np.arange(n_images) % 10).astype(np.int64)
    digits = labels[:, None]
    img = np.clip(glyphs[labels] + rng.normal(0, 30, (n_images, 28, 28)), 0, 255).astype(np.uint8)
    boxes = sample_digit_boxes(rng, n_images, 1, 0.2 if split == "train" else 1.0)
    assert np.array_equal(spelled_number(digits), labels)
    return NDigitSet(img, occlude(img, boxes), labels, digits, boxes, 1, split)



# --------------------------------------------------------------------------- N-digit measurements
class CodeModel:
    """A stand-in `EmbeddingNet`: the embedding of an image is a fixed code of its pixel mean."""

    config = {"height": 2}

    def __init__(self, codes, var=0.0):
        self.codes, self.var = torch.as_tensor(codes, dtype=torch.float32), var

    def embed(self, x, batch_size=0):
        idx = torch.round(x.flatten(1).mean(1) * 100).long()
        mean = self.codes[idx]
        return Embedding.gaussian(mean, torch.full_like(mean, self.var)) if self.var else Embedding.point(mean)


def coded_set(labels, corrupt_shift=0):
    """Images whose pixel mean is label / 100 (clean) or (label + shift) / 100 (corrupt twin)."""
    from types import SimpleNamespace

    labels = np.asarray(labels)
    img = np.repeat((labels / 100.0)[:, None, None, None], 4, 1).reshape(-1, 1, 2, 2).astype(np.float32)
    cor = np.repeat(((labels + corrupt_shift) / 100.0)[:, None, None, None], 4, 1).reshape(-1, 1, 2, 2).astype(np.float32)
    return SimpleNamespace(images=img, corrupt=cor, labels=labels)


def test_episode_grid_and_evaluate_table2_on_coded_twins():
    """Codes on a line at 0, 10, 25, 45, 70; the corrupt twin of class c carries code c + 1 (an oracle)."""
    labels = np.repeat(np.arange(4), 60)
    codes = np.array([[0, 0], [10, 0], [25, 0], [45, 0], [70, 0]], dtype=float)
    sets = {"seen": coded_set(labels, corrupt_shift=1)}
    rows = Z.evaluate_table2({"PN": (CodeModel(codes), None), "SPE": (CodeModel(codes, 0.5), SPE(8, 2))}, sets,
                             n_episodes=5, n=2, d=2, k_support=10, query_per_class=5)
    acc = {(r["method"], r["condition"]): r["acc"] for r in rows}
    for m in ("PN", "SPE"):
        assert acc[(m, "clean S / clean Q")] == 100.0
        # corrupt queries of classes 0-2 sit on the next class's prototype; class 3's (code 70) is still nearest 45
        assert acc[(m, "clean S / corrupt Q")] == 25.0
        # corrupt support moves prototype c to code c + 1: clean queries of classes 1-3 go to class c - 1
        assert acc[(m, "corrupt S / clean Q")] == 25.0
    assert all(r["episodes"] == 5 and r["N"] == 2 and r["se"] == 0.0 for r in rows)
    assert {r["split"] for r in rows} == {"seen"} and len(rows) == 6


def test_table2_cells_are_evaluate_table2s_rows_under_the_full_protocol_and_read_back_exactly(monkeypatch):
    """The ledger's ``table2_cells`` group of one model: both whole test splits, `TABLE2_EPISODES` episodes of seed
    0 per cell, each cell's accuracy and standard error by name; `table2_cell_rows` gives back the very rows."""
    labels = np.repeat(np.arange(4), 60)
    codes = np.array([[0, 0], [10, 0], [25, 0], [45, 0], [70, 0]], dtype=float)
    sets = {"seen": coded_set(labels, corrupt_shift=1), "unseen": coded_set(labels[::-1], corrupt_shift=1)}
    asked = []
    monkeypatch.setattr(Z, "ndigit_test_sets", lambda n, per_class=None, seed=0: asked.append((n, per_class)) or sets)
    monkeypatch.setattr(Z, "TABLE2_EPISODES", 5)
    model = CodeModel(codes, 0.5)
    model.config = {"height": 2, "dim": 2}
    cells = Z.table2_cells(model, SPE(8, 2))
    assert asked == [(2, None)] and cells["episodes"] == 5
    assert cells["seen: clean S / clean Q"] == 100.0 and cells["seen: corrupt S / clean Q (se)"] == 0.0
    rows = Z.evaluate_table2({"SPE": (model, SPE(8, 2))}, sets, n_episodes=5, n=2, d=2, seed=0)
    assert Z.table2_cell_rows("SPE", cells) == rows and len(rows) == 6
    read = {**cells, "source": "ledger", "device": "cpu", "date": "2026-11-29"}  # as `Session.measures` gives it
    assert Z.table2_cell_rows("SPE", read) == rows
    pn = Z.table2_cells(model, None)  # the PN rule where the model has no head
    assert Z.table2_cell_rows("PN", pn) == Z.evaluate_table2({"PN": (model, None)}, sets, 5, 2, 2)


def test_per_class_subset_and_test_sets(monkeypatch):
    ds = tiny_ndigit("test_seen", 200)
    sub = Z.per_class_subset(ds, 7, seed=3)
    assert np.array_equal(np.bincount(sub.labels), np.full(10, 7))
    assert np.array_equal(Z.per_class_subset(ds, 7, seed=3).labels, sub.labels)  # deterministic
    monkeypatch.setattr(Z, "load_ndigit", lambda n, split, seed=0: ds)
    sets = Z.ndigit_test_sets(1, 5)
    assert set(sets) == {"seen", "unseen"} and len(sets["seen"]) == 50


def test_fit_sigma_eps_recovers_the_generative_noise():
    """Eq. 3 as a generator: z_i = rho_c + eps_i, eps ~ N(0, s^2 I), tiny embedding variances. With the
    model well specified, the cross-entropy is minimised by the true s^2 (the head's only parameter)."""
    rng = np.random.default_rng(0)
    s2 = 0.5
    centres = np.stack(np.meshgrid(np.arange(6) * 1.5, np.arange(6) * 1.5), -1).reshape(-1, 2)
    labels = np.repeat(np.arange(36), 40)
    z = centres[labels] + rng.normal(0, math.sqrt(s2), (len(labels), 2))
    emb = Embedding.gaussian(torch.tensor(z, dtype=torch.float32), torch.full((len(labels), 2), 1e-4))
    head = Z.fit_sigma_eps(emb, labels, n_classes=20, k_support=5, query_per_class=10, steps=120, lr=0.1)
    assert float(head.sigma_eps2) == pytest.approx(s2, rel=0.25)
    with pytest.raises(InputError, match="labels"):
        Z.fit_sigma_eps(emb, labels[:-1])


def test_class_prototypes_spe_and_pn_match_numpy():
    rng = np.random.default_rng(1)
    labels = np.array([5, 5, 9, 9, 9, 7])
    mean = rng.normal(size=(6, 2))
    var = rng.uniform(0.1, 2.0, (6, 2))
    emb = Embedding.gaussian(torch.tensor(mean, dtype=torch.float64), torch.tensor(var, dtype=torch.float64))
    head = SPE(4, 2).double()
    ids, mu, v = Z.class_prototypes(head, emb, labels)
    assert list(ids) == [5, 7, 9]
    s = var + float(head.sigma_eps2)
    for k, c in enumerate(ids):
        p = 1 / s[labels == c]
        np.testing.assert_allclose(v[k], 1 / p.sum(0))  # eq. 5
        np.testing.assert_allclose(mu[k], (p * mean[labels == c]).sum(0) / p.sum(0))
    ids, mu, v = Z.class_prototypes(PN(), emb, labels)
    np.testing.assert_allclose(mu[2], mean[labels == 9].mean(0)) and np.testing.assert_array_equal(v, 0)


def factorial(classes, shift=(0.0, 0.0), noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    classes = np.asarray(classes)
    return np.stack([classes // 10 + shift[0], classes % 10 + shift[1]], 1) + rng.normal(0, noise, (len(classes), 2))


def test_digit_axes_eta_squared():
    ids = np.arange(100)
    np.testing.assert_allclose(Z.digit_axes(factorial(ids), ids), [[1, 0], [0, 1]], atol=1e-12)
    swapped = factorial(ids)[:, ::-1]
    np.testing.assert_allclose(Z.digit_axes(swapped, ids), [[0, 1], [1, 0]], atol=1e-12)
    # a 45-degree rotation mixes both digits equally into both axes
    rot = factorial(ids) @ (np.array([[1, 1], [-1, 1]]) / math.sqrt(2))
    np.testing.assert_allclose(Z.digit_axes(rot, ids), 0.5, atol=1e-12)


def test_unseen_placement():
    ids = np.arange(100)
    unseen = np.random.default_rng(0).choice(100, 30, replace=False)
    seen = np.setdiff1d(ids, unseen)
    res = Z.unseen_placement(factorial(seen, noise=0.1), seen, factorial(unseen, noise=0.1, seed=1), unseen)
    assert res["accuracy"] == 1.0 and list(res["axes"]) == [0, 1] and res["chance"] == pytest.approx(0.01)
    # unseen classes displaced by one digit step along z1: the first digit is read wrongly, the second right
    res = Z.unseen_placement(factorial(seen), seen, factorial(unseen, shift=(1.0, 0.0)), unseen)
    assert res["per_position"][1] == 1.0 and res["per_position"][0] < 0.2 and res["accuracy"] < 0.2


# --------------------------------------------------------------------------- L-shape measurements
def test_factor_axes_oracles():
    o, h = np.meshgrid(np.linspace(90, 180, 5), np.linspace(90, 180, 5))
    aligned = np.stack([0.03 * o, -0.05 * h], -1)
    res = Z.factor_axes(aligned, o, h)
    assert res["axis"] == {"orientation": 0, "hue": 1} and res["disentanglement"] == pytest.approx(1.0)
    assert res["sign"] == {"orientation": 1, "hue": -1}
    res = Z.factor_axes(aligned[..., ::-1], o, h)
    assert res["axis"] == {"orientation": 1, "hue": 0} and res["disentanglement"] == pytest.approx(1.0)
    rot = aligned @ (np.array([[1, 1], [-1, 1]]) / math.sqrt(2))
    assert Z.factor_axes(rot, o, h)["disentanglement"] == pytest.approx(0.0, abs=1e-12)
    t = np.deg2rad(30)
    r30 = np.stack([0.03 * o, 0.03 * h], -1) @ np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
    # corr of a 30-degree rotation of two equal, uncorrelated factors: cos 30 vs sin 30
    assert Z.factor_axes(r30, o, h)["disentanglement"] == pytest.approx(np.cos(t) - np.sin(t))


def test_ambiguity_peaks_oracle():
    n = 5
    var = np.full((n, n, 2), 0.1)
    var[:, 2, 1] = 0.4  # orientation carried by z2: variance peaks in the middle column
    var[1, :, 0] = 0.3  # hue carried by z1: peak in row 1
    res = Z.ambiguity_peaks(var, {"orientation": 1, "hue": 0})
    assert res["peak_orientation"] == 2 and res["peak_hue"] == 1 and res["middle"] == 2
    assert res["peak_ratio_orientation"] == pytest.approx(4.0) and res["peak_ratio_hue"] == pytest.approx(3.0)
    np.testing.assert_allclose(res["profile_orientation"], [0.1, 0.1, 0.4, 0.1, 0.1])


class PixelStatModel:
    """Stand-in model: variance = (mean pixel value, mean squared deviation of the pixels)."""

    config = {"height": 64}

    def embed(self, x, batch_size=0):
        flat = x.flatten(1).double()
        var = torch.stack([flat.mean(1), flat.var(1, unbiased=False)], 1)
        return Embedding.gaussian(torch.zeros_like(var), var)


def test_variance_sweep_matches_direct_rendering():
    levels = [0.0, 30.0, 60.0]
    res = Z.variance_sweep(PixelStatModel(), levels, "hue_noise", repeats=2, seed=5)
    assert res["var"].shape == (3, 2) and res["var_all"].shape == (3, 4, 2, 2) and res["example"].shape == (3, 3, 64, 64)
    # oracle: render level 30, class 2, repeat 1 by hand with the same noise seed
    from hedgekit.data.lshapes import centroid_sweep

    f = centroid_sweep(levels, "hue_noise", 2, seed=5)
    img = render_batch(CLASS_CENTERS[2, 0], CLASS_CENTERS[2, 1], 30.0, 1.0, f["noise_seed"][1, 2, 1])
    x = img.astype(np.float64).ravel()
    np.testing.assert_allclose(res["var_all"][1, 2, 1], [x.mean(), x.var()], rtol=1e-5)
    np.testing.assert_allclose(res["var"], res["var_all"].mean((1, 2)))
    assert res["var"][0, 1] < res["var"][2, 1] or res["var"][0, 1] > 0  # rendered, finite
    legs = Z.variance_sweep(PixelStatModel(), [1.0, 0.5, 0.1], "leg_length", repeats=1)
    assert np.all(np.diff(legs["var"][:, 0]) < 0)  # shorter legs, fewer lit pixels: mean pixel value drops
    np.testing.assert_allclose(Z.sweep_growth(legs["var"]), legs["var"][-1] / legs["var"][0])


class PixelMeanModel(PixelStatModel):
    """Stand-in model whose *mean* is (mean pixel value, pixel variance) and variance is constant."""

    def embed(self, x, batch_size=0):
        e = super().embed(x)
        return Embedding.gaussian(e.var[:, 0], torch.ones_like(e.var[:, 0]))


def test_variance_sweep_shift_and_class_spacing():
    res = Z.variance_sweep(PixelMeanModel(), [0.0, 40.0], "hue_noise", repeats=3, seed=1)
    m = res["mean_all"]  # (2, 4, 3, 2)
    ref = m[0].mean(1)
    expected = np.linalg.norm(m - ref[None, :, None], axis=-1).mean((1, 2))
    np.testing.assert_allclose(res["shift"], expected)
    assert res["shift"][0] == pytest.approx(0.0, abs=1e-9)  # no noise: identical renders, no shift
    assert res["shift"][1] > 0
    o, h = np.meshgrid(np.linspace(90, 180, 5), np.linspace(90, 180, 5))
    assert Z.class_spacing(np.stack([o / 45, h / 45], -1)) == pytest.approx(2.0)
    assert Z.class_spacing(np.stack([o / 45, 3 * h / 45], -1)) == pytest.approx(4.0)  # edges 2, 6, 2, 6


def test_grid_embedding_and_embed_factors_shapes():
    res = Z.grid_embedding(PixelStatModel(), 3)
    assert res["images"].shape == (3, 3, 3, 64, 64) and res["mean"].shape == (3, 3, 2) and res["var"].shape == (3, 3, 2)
    assert res["orientation"][0, -1] == 180 and res["hue"][-1, 0] == 180
    imgs, mean, var = Z.embed_factors(PixelStatModel(), [90, 180], 90.0, 0.0, 1.0)
    assert imgs.shape == (2, 3, 64, 64) and var.shape == (2, 2)
    x = imgs[1].astype(np.float64).ravel()
    np.testing.assert_allclose(var[1], [x.mean(), x.var()], rtol=1e-5)


def test_heldout_accuracy_with_perfect_codes():
    labels = np.repeat(np.arange(4), 30)
    es = Z.EmbeddedSet(Embedding.point(torch.tensor(factorial(labels * 11), dtype=torch.float32)), None, labels)
    res = Z.heldout_accuracy(None, PN(), es, (1, 5), n_episodes=3, query_per_class=4)
    assert res == {1: (1.0, 0.0), 5: (1.0, 0.0)}


@pytest.mark.parametrize("head", [PN(), SPE(8, 2)])
def test_accuracy_by_level_oracle(head):
    """200 images per class on 4 well-separated codes; the images with level 1 sit on the *next* class's
    code (misclassified whatever the rule), those with level 0 on their own."""
    labels = np.repeat(np.arange(4), 200)
    level = np.tile(np.r_[np.zeros(150), np.ones(50)], 4)
    codes = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0], [20.0, 20.0]])
    where = np.where(level == 1, (labels + 1) % 4, labels)
    z = torch.tensor(codes[where], dtype=torch.float32)
    emb = Embedding.gaussian(z, torch.full_like(z, 0.01))
    res = Z.accuracy_by_level(head, Z.EmbeddedSet(emb, None, labels), level, [0, 0.5, 1.0])
    assert [(r["n"], r["acc"]) for r in res] == [(600, 1.0), (200, 0.0)]


# --------------------------------------------------------------------------- paper numbers and Figure 4's points
def test_paper_table2_and_means():
    assert N.paper_table2("corrupt S / clean Q", "SPE", "seen", 3, 2) == 76.7
    assert N.paper_table2("clean S / corrupt Q", "HIB", "unseen", 2, 3) == 57.0
    # the paper's MEAN column: SPE clean/clean seen 89.1, unseen 86.9
    all4 = ((2, 2), (2, 3), (3, 2), (3, 3))
    assert N.paper_mean("clean S / clean Q", "SPE", "seen", all4) == pytest.approx(89.1, abs=0.05)
    assert N.paper_mean("clean S / clean Q", "SPE", "unseen", all4) == pytest.approx(86.9, abs=0.05)
    assert N.paper_mean("corrupt S / clean Q", "PN", "seen", all4) == pytest.approx(73.3, abs=0.05)


def test_fig4_curves_average_replications_with_the_standard_error_of_their_mean():
    runs = [dict(sampler="naive", s=9, acc=a, se=0.4) for a in (50.0, 54.0, 58.0)]  # mean 54, std 4, sem 4 / sqrt 3
    runs += [dict(sampler="naive", s=1, acc=a, se=0.3) for a in (40.0, 42.0)]  # mean 41, std sqrt 2, sem 1
    runs += [dict(sampler="intersection", s=1, acc=61.0, se=0.25)]  # one run: its episode standard error
    c = Z.fig4_curves(runs)
    assert list(c) == ["intersection", "naive"]
    assert c["naive"]["s"] == [1, 9] and c["naive"]["acc"] == pytest.approx([41.0, 54.0])
    assert c["naive"]["se"] == pytest.approx([1.0, 4 / math.sqrt(3)])
    assert c["naive"]["runs"] == [[40.0, 42.0], [50.0, 54.0, 58.0]]
    assert c["intersection"] == dict(s=[1], acc=[61.0], se=[0.25], runs=[[61.0]])
    with pytest.raises(InputError, match="at least one"):
        Z.fig4_curves([])
    for bad in (dict(acc=math.nan, se=0.1), dict(acc=50.0, se=math.inf)):
        with pytest.raises(InputError, match="finite"):
            Z.fig4_curves([dict(sampler="naive", s=1, **bad)])
