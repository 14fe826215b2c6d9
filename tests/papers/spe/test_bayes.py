"""Oracle tests of hedgekit.papers.spe.bayes: the Bayes-optimal and prototype-oracle accuracies on L-shapes and
the read-out of Fig. 3's factors (Scott et al. 2019, sec. 4.1, App. A.2).

Oracles: the closed-form Bayes accuracy against quadrature, Monte Carlo and the per-axis side rule; the
prototype oracle against a naive loop over episodes and its limits; factors read back from the pixels.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hedgekit.data import lshapes as L
from hedgekit.errors import InputError
from hedgekit.papers.spe import bayes as B


def circ_diff(a, b):
    """Signed circular difference a - b in [-180, 180)."""
    return (np.asarray(a, dtype=float) - b + 180.0) % 360.0 - 180.0


def test_readout_sweep_reads_the_factors_back_from_figure_3s_images():
    bayes = B.bayes_optimal_accuracy()
    clean = B.readout_sweep([0.98, 0.3, 0.1], "leg_length", 2)
    np.testing.assert_allclose(clean["orientation_error"], 0.0, atol=1e-6)   # axis-aligned centroids
    np.testing.assert_allclose(clean["hue_error"], 0.0, atol=1e-6)           # one hue per shape
    np.testing.assert_allclose(clean["accuracy"], bayes, atol=1e-12)
    np.testing.assert_allclose(clean["level"], [0.98, 0.3, 0.1])
    # hue noise: the weighted circular mean of N_eff independent pixel hues errs by ~ sigma / sqrt(N_eff)
    noisy = B.readout_sweep([0.0, 36.0], "hue_noise", 16, seed=3)
    w = L.render_batch(90.0, 90.0, 0.0, 1.0, dtype=np.float32).max(axis=0).astype(float)
    n_eff = w.sum() ** 2 / (w ** 2).sum()
    assert noisy["hue_error"][0] == pytest.approx(0.0, abs=1e-6)
    assert noisy["hue_error"][1] == pytest.approx(36.0 / np.sqrt(n_eff), rel=0.25)
    a1 = B.bayes_accuracy_1d()
    assert noisy["accuracy"][1] == pytest.approx(a1 * B.bayes_accuracy_1d(np.hypot(30.0, noisy["hue_error"][1])), abs=1e-12)
    assert noisy["accuracy"][1] < noisy["accuracy"][0]
    for args, kwargs, match in ((([1.0], "blur"), {}, "factor"), (([0.0],), dict(class_std=-1.0), "class_std"),
                                (([0.0, 18.0],), dict(repeats=10**4), "at most"), (([float("nan")],), {}, "NaN")):
        with pytest.raises(InputError, match=match):
            B.readout_sweep(*args, **kwargs)


def test_prototype_oracle_matches_a_naive_loop_over_episodes():
    """Second implementation: the same draws, features from the 4-class posterior, one query at a time."""
    e, k, q, seed = 12, 2, 3, 5
    factors = L.CLASS_CENTERS[:, None, None, :] + np.random.default_rng(seed).normal(0.0, L.CLASS_STD, (4, e, k + q, 2))
    correct = 0
    for ep in range(e):
        feats = {}
        for c in range(4):
            post = L.class_posterior(factors[c, ep, :, 0], factors[c, ep, :, 1])       # (k + q, 4)
            feats[c] = np.stack([post[:, 1] + post[:, 3], post[:, 2] + post[:, 3]], axis=1)
        protos = [feats[c][:k].mean(axis=0) for c in range(4)]
        for c in range(4):
            for z in feats[c][k:]:
                correct += int(np.argmin([((z - p) ** 2).sum() for p in protos]) == c)
    assert B.prototype_oracle_accuracy(k, e, q, seed) == pytest.approx(correct / (4 * e * q), abs=1e-12)


def test_prototype_oracle_tends_to_bayes_and_pays_for_few_support_images():
    bayes = B.bayes_optimal_accuracy()
    n_e, q = 500, 25
    se = np.sqrt(bayes * (1 - bayes) / (4 * n_e * q))
    many = B.prototype_oracle_accuracy(200, n_e, q, seed=1)
    assert abs(many - bayes) < 4 * se + 0.002          # + the prototypes' residual spread at k = 200
    few = [B.prototype_oracle_accuracy(k, n_e, q, seed=1) for k in (1, 2)]
    assert few[0] < few[1] < many - 4 * se             # k = 2: ~0.860, a point below Bayes
    # limits: no overlap -> perfect; no information (huge spread: every posterior ~0.5) -> chance
    assert B.prototype_oracle_accuracy(2, 50, 10, class_std=3.0) == 1.0
    assert abs(B.prototype_oracle_accuracy(2, 200, 25, class_std=1e4) - 0.25) < 0.02


@pytest.mark.parametrize("kwargs, match", [
    (dict(k_support=0), "k_support"), (dict(k_support=2.5), "k_support"), (dict(k_support=True), "k_support"),
    (dict(k_support=2, n_episodes=0), "n_episodes"), (dict(k_support=2, query_per_class=-1), "query_per_class"),
    (dict(k_support=2, class_std=0.0), "class_std"), (dict(k_support=2, class_std=float("nan")), "class_std"),
    (dict(k_support=10**6, n_episodes=10**3), "fit in memory"),
])
def test_prototype_oracle_rejects_bad_arguments(kwargs, match):
    with pytest.raises(InputError, match=match):
        B.prototype_oracle_accuracy(**kwargs)


def test_bayes_accuracy_closed_form_quadrature_and_monte_carlo():
    a1 = B.bayes_accuracy_1d()
    assert a1 == pytest.approx(B.bayes_accuracy_1d(method="quadrature"), abs=1e-9)
    assert a1 == pytest.approx(stats.norm.cdf(1.5) - stats.norm.cdf(-4.5), abs=1e-12)
    exact = B.bayes_optimal_accuracy()
    assert exact == pytest.approx(a1 ** 2, abs=1e-15)
    assert exact == pytest.approx(0.870842, abs=1e-6)          # golden number
    assert abs(exact - 0.87) < 0.005                            # the paper: "approximately 87 %"
    n = 300_000
    mc = B.bayes_optimal_accuracy(n_mc=n, seed=0, exact=False)
    se = np.sqrt(exact * (1 - exact) / n)
    assert abs(mc - exact) < 4 * se
    # the factorisation: joint accuracy = product of per-axis accuracies
    f = L.sample_factors(n, seed=5, train=False)
    o_idx, h_idx = f["labels"] % 2, f["labels"] // 2
    o_pred = (np.abs(circ_diff(f["orientation"], 180.0)) < np.abs(circ_diff(f["orientation"], 90.0))).astype(int)
    h_pred = (np.abs(circ_diff(f["hue"], 180.0)) < np.abs(circ_diff(f["hue"], 90.0))).astype(int)
    pred = L.class_log_likelihood(f["orientation"], f["hue"]).argmax(axis=1)
    np.testing.assert_array_equal(pred, o_pred + 2 * h_pred)   # Bayes rule = nearest centre per axis
    assert abs(np.mean(o_pred == o_idx) - a1) < 4 * np.sqrt(a1 * (1 - a1) / n)
    # more overlap -> lower accuracy; well-separated -> ~1
    assert B.bayes_optimal_accuracy(class_std=45.0) < exact < B.bayes_optimal_accuracy(class_std=10.0)
    assert B.bayes_accuracy_1d(class_std=45.0) == pytest.approx(B.bayes_accuracy_1d(45.0, method="quadrature"),
                                                                abs=1e-9)


def test_bayes_accuracy_1d_rejects_an_unknown_method():
    with pytest.raises(InputError, match="method must be 'closed' or 'quadrature'"):
        B.bayes_accuracy_1d(method="mc")
    with pytest.raises(InputError, match="class_std"):
        B.bayes_accuracy_1d(class_std=0.0)
