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
    base = by_claim["the baseline CE fails to transfer u(x) (Sec. 4.3: the baselines CE and InfoNCE)"]
    assert base.matched is True and "supervised InfoNCE rank" in base.why  # ours is not the paper's baseline
    md = v.markdown()
    assert "33 runs (11 methods x 3 seeds)" in md and "500,000" not in md


def test_side_by_side_keeps_the_papers_numbers_on_other_data_apart():
    board = benchmark.leaderboard(hand_runs())
    t = claims.side_by_side(board)
    assert "paper R-AUROC" not in t.columns and "paper R@1" not in t.columns  # ImageNet -> CUB/CARS/SOP levels
    assert "supervised MCInfoNCE" in t.index and "MCInfoNCE" not in t.index
    assert t.loc["ELK", "paper's top 3 ResNet-50"] == "yes" and t.loc["SNGP", "paper's top 3 ViT-M"] == "yes"
    assert sorted(t["rank"]) == list(range(1, 12))
    p = claims.paper_statements()
    assert p.loc["MCInfoNCE", "R-AUROC (Sec. 4.3)"] == 0.569 and p.loc["nivMF", "R@1 (Sec. 4.3)"] == 0.57
    assert math.isnan(p.loc["CE", "R-AUROC (Sec. 4.3)"])


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


# ====================================================================== every claim to every outcome it can give
def runs_of(down=None, r1=None, up=None, crop=None, seeds=3, noise=0.002, seed=0, methods=numbers.METHODS):
    """Runs with chosen per-method means (defaults: independent draws), ``seeds`` per method, small noise."""
    rng = np.random.default_rng(seed)
    base = {m: rng.uniform(0.5, 0.7) for m in methods}
    rows = []
    for k, m in enumerate(methods):
        for s in range(seeds):
            e = noise * rng.standard_normal(4)
            rows.append({"method": m, "seed": s, "down_rauroc": (down or base)[m] + e[0],
                         "down_r1": (r1 or {x: 0.5 + 0.01 * ((7 * i) % 11) for i, x in enumerate(methods)})[m] + e[1],
                         "up_rauroc": (up or {x: 0.9 - 0.01 * ((5 * i) % 11) for i, x in enumerate(methods)})[m] + e[2],
                         "up_crop": (crop or {x: 0.1 + 0.02 * ((3 * i) % 11) for i, x in enumerate(methods)})[m] + e[3],
                         "r1": 0.8, "rauroc": 0.55, "fashion_r1": 0.3, "fashion_rauroc": 0.52, "crop": 0.4,
                         "up_r1": 0.9, "up_acc": math.nan, "cpu_seconds": 10.0, "train_seconds": 8.0})
    return pd.DataFrame(rows)


M = numbers.METHODS
ORDER = {m: 0.55 + 0.01 * i for i, m in enumerate(reversed(M))}  # paper order: CE best ... MCDropout worst
UP_DOWN, CROP_DOWN = (t for *_, t in claims.CORRELATION_PAIRS[:2])
R1_DOWN = "R@1 and R-AUROC trade off (negative rank correlation)"
TOP_RN = "the paper's best three on ResNet-50 lead (App. C.6)"
TOP_VIT = "the paper's best three on ViT-Medium lead (App. C.6)"
R1 = "nivMF has the best R@1 (0.57), Losspred second (0.53) (Sec. 4.3)"
CE = "the baseline CE fails to transfer u(x) (Sec. 4.3: the baselines CE and InfoNCE)"
ENS = "ensembles fail to provide transferable uncertainty (Sec. 4.3)"
CHANCE = "u(x) learned upstream transfers zero-shot: downstream R-AUROC above chance (0.5) (Sec. 4.3)"
BELOW = "downstream R-AUROC stays below upstream (Sec. 4.5)"


def _ranked(first, value=0.6, step=0.01):
    """Downstream values ranking ``first`` (in order) on top, the other methods below in the paper's order."""
    rest = [m for m in M if m not in first]
    return {m: value - step * i for i, m in enumerate(list(first) + rest)}


def _r1_rank(nivmf, losspred):
    """R@1 values putting nivMF at rank ``nivmf`` and Losspred at ``losspred`` (1 = best)."""
    others = iter(m for m in M if m not in ("nivmf", "losspred"))
    order = [None] * len(M)
    order[nivmf - 1], order[losspred - 1] = "nivmf", "losspred"
    order = [o or next(others) for o in order]
    return {m: 0.9 - 0.02 * i for i, m in enumerate(order)}


WEAK = {m: 0.5 + 0.1 * ((7 * i) % 11) / 10 for i, m in enumerate(M)}  # scrambled against the defaults


@pytest.mark.parametrize("runs, claim, outcome", [
    (runs_of(seeds=3, noise=0.05), UP_DOWN, "matched"),  # independent: rho near 0, the paper's 0.09 inside
    (runs_of(up=ORDER, down=ORDER), UP_DOWN, "not matched"),  # monotone: rho = 1
    (runs_of(seeds=1, methods=M[:2]), UP_DOWN, "inconclusive"),  # 2 runs: no interval
    (runs_of(crop=ORDER, down=ORDER, noise=0.05), CROP_DOWN, "matched"),
    (runs_of(crop=ORDER, down={m: -v for m, v in ORDER.items()}), CROP_DOWN, "not matched"),
    (runs_of(r1=ORDER, down={m: 1 - v for m, v in ORDER.items()}), R1_DOWN, "matched"),
    (runs_of(r1=ORDER, down=ORDER), R1_DOWN, "not matched"),
    (runs_of(seeds=3, noise=0.05), R1_DOWN, "inconclusive"),
    (runs_of(down=_ranked(["elk", "mcinfonce", "nivmf"])), TOP_RN, "matched"),
    (runs_of(down=_ranked(["ce", "hib", "sngp"])), TOP_RN, "not matched"),
    (runs_of(methods=("ce", "elk", "nivmf", "hib")), TOP_RN, "inconclusive"),  # too few methods run
    (runs_of(down=_ranked(["elk", "losspred", "ce"])), TOP_VIT, "matched"),
    (runs_of(down=_ranked(["ce", "hib", "nivmf"])), TOP_VIT, "not matched"),
    (runs_of(r1=_r1_rank(1, 2)), R1, "matched"),
    (runs_of(r1=_r1_rank(1, 9)), R1, "not matched"),  # the bug: only nivMF's rank was checked
    (runs_of(r1=_r1_rank(2, 1)), R1, "not matched"),
    (runs_of(down=_ranked([m for m in M if m != "ce"])), CE, "matched"),  # CE last
    (runs_of(down=_ranked(["ce"])), CE, "not matched"),
    (runs_of(down=_ranked(["elk"])), ENS, "matched"),
    (runs_of(down=_ranked(["ensemble"])), ENS, "not matched"),
    (runs_of(), CHANCE, "matched"),
    (runs_of(down={m: 0.45 for m in M}), CHANCE, "not matched"),
    (runs_of(), BELOW, "matched"),
    (runs_of(up={m: 0.4 for m in M}), BELOW, "not matched"),
    (runs_of(up=WEAK, down={m: WEAK[m] - 0.001 * (1 if i % 2 else -1) for i, m in enumerate(M)}, noise=0.0),
     BELOW, "inconclusive"),
])
def test_url_claims_reach_every_outcome(runs, claim, outcome):
    v = claims.url_verdict(runs, benchmark.leaderboard(runs), "paper")
    assert {c.claim: c for c in v.claims}[claim].outcome == outcome


def test_losspred_ninth_of_eleven_fails_the_r1_claim_and_says_so():
    runs = runs_of(r1=_r1_rank(1, 9))
    c = {c.claim: c for c in claims.url_verdict(runs, benchmark.leaderboard(runs)).claims}[R1]
    assert c.matched is False and c.ours == "nivMF 1.; Losspred 9. of 11 by R@1" and c.why == "Losspred is 9., not 2."


def test_no_claim_compares_absolute_levels_on_other_data():
    runs = runs_of()
    v = claims.url_verdict(runs, benchmark.leaderboard(runs))
    assert not any("0.569" in c.claim or "0.569" in c.paper or "0.7" in c.paper for c in v.claims)
    assert any("not compared" in n for n in v.notes) and any("not a claim" in n for n in v.notes)


def test_our_infonce_is_named_supervised_everywhere_but_keeps_its_key():
    assert benchmark.label("infonce") == "supervised InfoNCE" and benchmark.label("mcinfonce") == "supervised MCInfoNCE"
    assert benchmark.label("ce") == "CE" and numbers.DISPLAY["infonce"] == "InfoNCE"  # the paper's name
    board = benchmark.leaderboard(runs_of())
    assert "| supervised InfoNCE |" in benchmark.leaderboard_markdown(board)
    assert "infonce" in board.index


def test_methods_that_did_not_train_are_left_out_of_ranks_and_correlations():
    runs = runs_of(down=_ranked(["elk", "mcinfonce", "nivmf"]), up=ORDER, crop=ORDER)
    kept = runs.copy()
    # Losspred and ELK did not learn an embedding (ELK in one seed only); give them the extreme values that would
    # move a rank and a correlation if they counted
    bad = runs["method"].eq("losspred") | (runs["method"].eq("elk") & runs["seed"].eq(1))
    runs.loc[runs["method"].eq("losspred"), ["up_acc", "down_rauroc", "up_rauroc"]] = [0.05, 0.99, 0.01]
    runs.loc[bad & runs["method"].eq("elk"), "up_r1"] = 0.3
    board = benchmark.leaderboard(runs)
    assert set(board.index[-2:]) == {"elk", "losspred"} and set(board["status"][-2:]) == {"did not train"}
    rr = claims.ranks(board, "R-AUROC (down)")
    assert "losspred" not in rr and "elk" not in rr and len(rr) == 9
    ref = claims.correlations(kept[~kept["method"].isin(["elk", "losspred"])])
    pd.testing.assert_frame_equal(claims.correlations(runs), ref)
    v = claims.url_verdict(runs, board)
    assert any("Did not train" in n and "Losspred" in n and "ELK" in n for n in v.notes)
    top = {c.claim: c for c in v.claims}[TOP_RN]
    assert top.matched is None and "ELK" not in top.ours  # ELK led, but it did not train: 2 of the 3 ranked
    table = claims.side_by_side(board)
    assert table.loc["Losspred", "rank"] == "—" and table.loc["Losspred", "status"] == "did not train"
    for fn, arg in (("ranking", board), ("r1_vs_rauroc", runs), ("correlation_scatter", runs)):
        fig, ax = getattr(figures, fn)(arg)
        texts = [t.get_text() for a in fig.axes for t in a.get_yticklabels() + (a.get_legend().get_texts()
                                                                                if a.get_legend() else [])]
        assert any("Losspred" in t and "did not train" in t for t in texts), fn
    fig, ax = figures.correlation_scatter(runs)
    assert f"{ref.iloc[0]['rho']:.2f}" in ax[0].get_title()


def test_the_papers_mcinfonce_is_our_two_view_one_when_it_was_run():
    methods = numbers.METHODS + ("mcinfonce_2v",)
    runs = runs_of(down=_ranked(["elk", "mcinfonce_2v", "nivmf"]), methods=methods)
    top = {c.claim: c for c in claims.url_verdict(runs, benchmark.leaderboard(runs)).claims}[TOP_RN]
    assert top.matched is True and "unsupervised, ours supervised" not in top.why
    assert claims.paper_counterpart("mcinfonce", ["mcinfonce"]) == "mcinfonce"
    assert benchmark.label("mcinfonce_2v") == "MCInfoNCE" and benchmark.label("infonce_2v") == "InfoNCE"
