"""Oracles for URL's claims and figures on hand-made runs: Spearman against scipy, the bootstrap interval, the
side-by-side table and the computed verdicts."""
import math

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hedgekit.papers.url import benchmark, claims, figures, numbers

matplotlib.use("Agg")


def hand_runs(seed=0, methods=numbers.METHODS, seeds=3):
    rng = np.random.default_rng(seed)
    rows = []
    for k, m in enumerate(methods):
        for s in range(seeds):
            up = 0.6 + 0.02 * k + 0.01 * rng.standard_normal()
            rows.append({"method": m, "seed": s, "up_rauroc": up, "down_rauroc": 0.5 + 0.01 * k + 0.005 * s,
                         "up_crop": 0.3 + 0.03 * k, "down_r1": 0.9 - 0.02 * k, "r1": 0.8, "rauroc": 0.55,
                         "fashion_r1": 0.3, "fashion_rauroc": 0.52, "crop": 0.4, "up_r1": 0.9, "up_acc": math.nan,
                         "cpu_seconds": 10.0, "train_seconds": 8.0})
    return pd.DataFrame(rows)


def test_spearman_matches_scipy_and_drops_nan_pairs():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, np.nan, 7.0])
    y = np.array([2.0, 1.0, 4.0, 3.0, 6.0, 1.0, np.nan])
    r = claims.spearman(x, y)
    ref = stats.spearmanr(x[:5], y[:5])
    assert r["n"] == 5
    assert r["rho"] == pytest.approx(ref.statistic) and r["p"] == pytest.approx(ref.pvalue)
    assert r["lo"] <= r["rho"] <= r["hi"]
    assert math.isnan(claims.spearman([1, 2], [3, 4])["rho"])  # fewer than 3 pairs
    assert math.isnan(claims.spearman([1, 1, 1], [3, 4, 5])["rho"])  # constant


def test_correlations_on_a_hand_made_leaderboard():
    runs = hand_runs()
    c = claims.correlations(runs)
    crop = c.loc[claims.CORRELATION_PAIRS[1][3]]
    assert crop["rho"] == pytest.approx(stats.spearmanr(runs["up_crop"], runs["down_rauroc"]).statistic)
    r1 = c.loc[claims.CORRELATION_PAIRS[2][3]]
    assert r1["rho"] < -0.9 and math.isnan(r1["paper"])  # built anti-monotone
    assert c.loc[claims.CORRELATION_PAIRS[0][3], "paper"] == 0.09


def test_verdict_counts_follow_the_numbers():
    runs = hand_runs()
    board = benchmark.leaderboard(runs)
    v = claims.url_verdict(runs, board, "paper")
    by_claim = {c.claim: c for c in v.claims}
    # R@1 and R-AUROC were built anti-monotone: a significant negative correlation, as the paper says
    assert by_claim["R@1 and R-AUROC trade off (negative rank correlation)"].matched is True
    # the best methods by R-AUROC are the last three of the paper's list (Losspred, Ensemble, MCDropout)
    assert by_claim["the paper's best three on ResNet-50 lead (App. C.6)"].matched is False
    assert by_claim["ensembles fail to provide transferable uncertainty (Sec. 4.3)"].matched is False
    assert by_claim["the baselines (CE, InfoNCE) fail to transfer u(x) (Sec. 4.3)"].matched is True
    md = v.markdown()
    assert "33 runs (11 methods x 3 seeds)" in md and "500,000" not in md


def test_side_by_side_lists_the_papers_numbers():
    board = benchmark.leaderboard(hand_runs())
    t = claims.side_by_side(board)
    assert t.loc["MCInfoNCE", "paper R-AUROC"] == 0.569 and t.loc["nivMF", "paper R@1"] == 0.57
    assert t.loc["ELK", "top 3 ResNet-50"] == "yes" and t.loc["SNGP", "top 3 ViT-M"] == "yes"
    assert sorted(t["rank"]) == list(range(1, 12))


@pytest.mark.parametrize("fn", ["ranking", "r1_vs_rauroc", "correlation_scatter"])
def test_figures_return_fig_and_axes(fn):
    runs = hand_runs()
    arg = benchmark.leaderboard(runs) if fn == "ranking" else runs
    fig, ax = getattr(figures, fn)(arg)
    assert fig.axes and ax is not None


def test_bootstrap_rhos_are_spearman_of_the_resamples():
    # the vectorised bootstrap equals scipy's rho on each resample (same generator stream)
    x, y = np.array([3.0, 1.0, 4.0, 1.5, 5.0, 9.0]), np.array([2.0, 7.0, 1.0, 8.0, 2.5, 8.5])
    r = claims.spearman(x, y, n_boot=200, seed=3)
    i = np.random.default_rng(3).integers(0, 6, (200, 6))
    ref = [stats.spearmanr(x[k], y[k]).statistic for k in i if np.ptp(x[k]) > 0 and np.ptp(y[k]) > 0]
    assert (r["lo"], r["hi"]) == pytest.approx(tuple(np.percentile(ref, [2.5, 97.5])))


def test_crop_examples_draw_images_and_their_crops():
    import torch

    sets = {k: (torch.rand(5, 1, 28, 56), torch.arange(5)) for k in ("up", "unseen")}
    fig, ax = figures.crop_examples(sets, n=2)
    assert ax.shape == (2, 4) and len(ax[0, 0].patches) == 1


def test_every_method_gets_its_own_colour():
    colours = figures.method_colours(numbers.METHODS)
    assert len(set(colours.values())) == len(numbers.METHODS)
