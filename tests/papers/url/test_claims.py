"""Oracles for URL's claims and figures on hand-made runs: Spearman against scipy, its bootstrap interval, the
side-by-side table, and the claims table (`claims.TABLE`): every row driven to every outcome its kind allows through
the engine on hand-built measurements, and the review's findings through `url_verdict`."""
import math

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hedgekit.papers.url import benchmark, claims, figures, leaderboard, numbers

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


def test_verdict_follows_the_numbers():
    runs = hand_runs()
    v = claims.url_verdict(runs, benchmark.leaderboard(runs), "paper")
    by_id = {c.row_id: c for c in v.claims}
    # R@1 and R-AUROC were built anti-monotone: a negative correlation, shown (a sanity check: no size in the paper)
    assert by_id["c2-trade-off"].outcome == "sanity check passed"
    # the best methods by R-AUROC are the last three of the paper's list (Losspred, Ensemble, MCDropout), in every
    # resample (the seeds' noise is below the methods' gaps)
    assert by_id["c6-top3-resnet50"].outcome == "not matched" and by_id["s43-ensemble-fails"].outcome == "not matched"
    assert by_id["s43-ce-fails"].outcome == "matched"  # CE is the worst
    md = v.markdown()
    assert "33 runs (11 methods x 3 seeds)" in md and "500,000" not in md


def test_side_by_side_keeps_the_papers_numbers_on_other_data_apart():
    board = benchmark.leaderboard(hand_runs())
    t = claims.side_by_side(board)
    assert "paper R-AUROC" not in t.columns and "paper R@1" not in t.columns  # ImageNet -> CUB/CARS/SOP levels
    assert "supervised MCInfoNCE" in t.index and "MCInfoNCE" not in t.index
    assert t.loc["ELK", "paper's top 3 ResNet-50"] == "yes" and t.loc["SNGP", "paper's top 3 ViT-M"] == "yes"
    assert sorted(t["rank"]) == list(range(1, 12)) and "tied group" not in t
    groups = claims.side_by_side(board, hand_runs())
    # neighbours 0.01 apart with a seed spread of 0.005 (t = 2.4 on 22 df) are not separable after Holm over 55
    # pairs, methods two apart are (t = 4.9): each rank set reaches its neighbours, and the sets chain into one group
    assert groups.loc["MCDropout", "tied group"] == "1 of 1" and groups.loc["MCDropout", "rank interval"] == "[1, 2]"
    assert groups.loc["ELK", "rank interval"] == "[7, 9]"  # 8th of 11
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


# ====================================================================== the claims table, every row to every outcome
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
ROWS = {r.id: r for r in claims.TABLE}
UP_DOWN, CROP_DOWN, R1_DOWN = (t for *_, t in claims.CORRELATION_PAIRS)


def decided(row_id, measured):
    """The claim the engine makes of row ``row_id`` on ``measured`` (None: left out)."""
    v = claims.URLVerdict("t").decide([ROWS[row_id]], measured)
    return v.claims[0] if v.claims else None


def base_measured(sweep=True):
    runs = runs_of()
    return claims.measure(runs, benchmark.leaderboard(runs), runs if sweep else None)


def with_correlation(title, lo, hi, rho=None, n=32):
    """``base_measured`` with the sweep's correlation ``title`` set to [lo, hi] around rho."""
    m = base_measured()
    m["fig4"] = m["fig4"].copy()
    m["fig4"].loc[title, ["rho", "lo", "hi", "n"]] = [(lo + hi) / 2 if rho is None else rho, lo, hi, n]
    return m


@pytest.mark.parametrize("row_id, title, lo, hi, outcome", [
    ("fig4-up-down", UP_DOWN, -0.1, 0.3, "matched"),  # inside 0.09 +- 0.3
    ("fig4-up-down", UP_DOWN, 0.45, 0.8, "not matched"),
    ("fig4-up-down", UP_DOWN, 0.14, 0.68, "inconclusive"),  # the committed sweep's 0.45 [0.14, 0.68]
    ("fig4-crop-down", CROP_DOWN, 0.3, 0.8, "matched"),
    ("fig4-crop-down", CROP_DOWN, -0.5, 0.2, "not matched"),
    ("fig4-crop-down", CROP_DOWN, -0.008, 0.713, "inconclusive"),  # the review: this interval contains 0
])
def test_correlation_rows_reach_every_outcome(row_id, title, lo, hi, outcome):
    c = decided(row_id, with_correlation(title, lo, hi))
    assert c.outcome == outcome and c.kind == "level" and c.interval == (lo, hi)
    assert "learning-rate sweep" in c.ours


def test_correlation_rows_are_left_out_without_a_sweep():
    m = base_measured(sweep=False)
    assert decided("fig4-up-down", m) is None and decided("fig4-crop-down", m) is None


def rank_frame(sets, methods=M):
    """A `leaderboard.rank_intervals` frame by hand: ``sets`` {method: rank or (lo, hi)}, the point rank the middle
    of the set; the other methods take the ranks the named ones leave, in the paper's order; 3 runs each."""
    sets = {m: (r, r) if np.isscalar(r) else r for m, r in sets.items()}
    rest = iter(r for r in range(1, len(methods) + 1) if r not in {lo for lo, _ in sets.values()})
    rows = {m: sets[m] if m in sets else (lambda r: (r, r))(next(rest)) for m in methods}
    frame = pd.DataFrame({"rank lo": [lo for lo, _ in rows.values()], "rank hi": [hi for _, hi in rows.values()]},
                         index=pd.Index(list(rows), name="method"))
    frame.insert(0, "rank", (frame["rank lo"] + frame["rank hi"]) / 2)
    frame.insert(0, "runs", 3)
    frame.insert(0, "mean", -frame["rank"])
    return frame.sort_values("rank", kind="stable")


def with_ranks(sets, metric="down_rauroc", methods=M, status=None):
    """``base_measured`` with ``metric``'s rank sets set by hand (`rank_frame`)."""
    m = base_measured()
    m["ranks"] = {**m["ranks"], metric: rank_frame(sets, methods)}
    if status is not None:
        m["status"] = status
    return m


TOP_RN = {"elk": 1, "mcinfonce": 2, "nivmf": 3}
TOP_VIT = {"elk": 1, "losspred": 2, "sngp": 3}


@pytest.mark.parametrize("row_id, sets, outcome", [
    ("c6-top3-resnet50", TOP_RN, "matched"),
    ("c6-top3-resnet50", {"elk": 9, "mcinfonce": 10, "nivmf": 11}, "not matched"),
    ("c6-top3-resnet50", {"elk": 1, "mcinfonce": 2, "nivmf": (3, 5)}, "inconclusive"),  # the worst: [3, 5]
    ("c6-top3-vit", TOP_VIT, "matched"),
    ("c6-top3-vit", {"elk": 4, "losspred": 5, "sngp": 6}, "not matched"),
    ("c6-top3-vit", {"elk": (1, 4), "losspred": 2, "sngp": 3}, "inconclusive"),  # the worst: [3, 4]
    ("s43-ensemble-fails", {"ensemble": 11}, "matched"),
    ("s43-ensemble-fails", {"ensemble": (1, 2)}, "not matched"),
    ("s43-ensemble-fails", {"ensemble": (3, 8)}, "inconclusive"),
    ("s43-ce-fails", {"ce": 7}, "matched"),  # 7th of 11: relative rank 0.6, in the lower half
    ("s43-ce-fails", {"ce": 5}, "not matched"),
    ("s43-ce-fails", {"ce": (2, 10)}, "inconclusive"),
])
def test_rank_rows_reach_every_outcome(row_id, sets, outcome):
    c = decided(row_id, with_ranks(sets))
    assert c.outcome == outcome and c.kind == "ranking"
    assert "pooled within-method variance over seeds (22 df), Holm-corrected pairwise t tests" in c.ours


def test_a_rank_rows_interval_runs_from_the_low_to_the_high_ends_of_the_rank_sets():
    c = decided("c6-top3-vit", with_ranks({"elk": (1, 4), "losspred": (2, 5), "sngp": 3}))
    assert c.interval == (3, 5)  # the worst of the low ends, the worst of the high ends
    c = decided("s43-ce-fails", with_ranks({"ce": (2, 10)}))
    assert c.interval == pytest.approx((0.1, 0.9))  # relative ranks (lo - 1) / 10, (hi - 1) / 10


@pytest.mark.parametrize("row_id, sets, outcome", [
    ("s43-r1-nivmf", {"nivmf": 1}, "matched"),
    ("s43-r1-nivmf", {"nivmf": (2, 4)}, "not matched"),
    ("s43-r1-nivmf", {"nivmf": (1, 5)}, "inconclusive"),
    ("s43-r1-losspred", {"losspred": 2}, "matched"),
    ("s43-r1-losspred", {"losspred": 9}, "not matched"),
    ("s43-r1-losspred", {"losspred": (2, 4)}, "inconclusive"),
])
def test_r1_rank_rows_reach_every_outcome(row_id, sets, outcome):
    assert decided(row_id, with_ranks(sets, metric="down_r1")).outcome == outcome


def test_the_unsupervised_infonce_row_reaches_every_outcome_and_is_left_out_when_not_run():
    methods = M + ("infonce_2v",)
    status = {m: "trained" for m in methods}
    for sets, outcome in (({"infonce_2v": 12}, "matched"), ({"infonce_2v": 1}, "not matched"),
                          ({"infonce_2v": (1, 12)}, "inconclusive")):
        assert decided("s43-infonce-fails", with_ranks(sets, methods=methods, status=status)).outcome == outcome
    assert decided("s43-infonce-fails", base_measured()) is None  # infonce_2v not run: nothing to decide


def test_a_rank_row_naming_a_method_that_is_not_ranked_is_inconclusive_and_says_why():
    methods = [m for m in M if m != "elk"]  # ELK trained, but its u(x) did not learn: not in the ranking
    status = {m: "trained" for m in M} | {"elk": leaderboard.UX_NOT_LEARNED}
    c = decided("c6-top3-resnet50", with_ranks({"mcinfonce": 1, "nivmf": 2}, methods=methods, status=status))
    assert c.outcome == "inconclusive" and c.ours == "not ranked: ELK u(x) did not learn"
    few = with_ranks({"ensemble": 3}, methods=("ce", "ensemble", "hib"), status={m: "trained" for m in M})
    assert decided("s43-ensemble-fails", few).ours == "not ranked: only 3 methods ranked (at least 4 to decide)"


def test_runs_of_one_seed_are_not_ranked_and_say_why():
    runs = runs_of(seeds=1)
    board = benchmark.leaderboard(runs)
    v = claims.url_verdict(runs, board, sweep=runs)
    c = {c.row_id: c for c in v.claims}["s43-ce-fails"]
    assert c.outcome == "inconclusive" and c.ours.startswith("not ranked: ") and "at least 2 runs" in c.ours
    assert any(n.startswith("Not ranked by downstream R-AUROC: ") for n in v.notes)
    side = claims.side_by_side(board, runs)
    assert set(side["rank interval"]) == {"—"} == set(side["tied group"])


def test_the_tops_use_the_papers_unsupervised_mcinfonce_when_it_is_ranked():
    methods = M + ("mcinfonce_2v",)
    status = {m: "trained" for m in methods}
    top = {"elk": 1, "mcinfonce_2v": 2, "nivmf": 3, "mcinfonce": 12}
    c = decided("c6-top3-resnet50", with_ranks(top, methods=methods, status=status))
    assert c.matched is True and "ELK, MCInfoNCE, nivMF among 12" in c.ours
    c = decided("c6-top3-resnet50", with_ranks(TOP_RN))  # not run: our supervised one stands in
    assert "supervised MCInfoNCE" in c.ours
    assert claims.paper_counterpart("mcinfonce", ["mcinfonce"]) == "mcinfonce"


def _chance_runs(lows):
    """Runs of three seeds per method whose downstream R-AUROC is 0.5 + d +- 0.02 (d from ``lows``)."""
    return runs_of(down={m: 0.5 + lows.get(m, -0.1) for m in M}, noise=0.0).assign(
        down_rauroc=lambda r: r["down_rauroc"] + 0.02 * (r["seed"] - 1))


def test_above_chance_uses_the_t_quantile_for_three_seeds():
    # mean 0.53, sd 0.02 over 3 seeds: mean - 2 se = 0.507 > 0.5, but mean - t(2) se = 0.480: not above chance
    runs = _chance_runs({"ce": 0.03, "hib": 0.06})
    c = {c.row_id: c for c in claims.url_verdict(runs, benchmark.leaderboard(runs)).claims}["s43-above-chance"]
    assert c.outcome == "sanity check passed" and c.ours.startswith("1 of 11 ranked methods above 0.5")
    runs = _chance_runs({"ce": 0.03})
    c = {c.row_id: c for c in claims.url_verdict(runs, benchmark.leaderboard(runs)).claims}["s43-above-chance"]
    assert c.outcome == "sanity check failed" and c.ours.startswith("0 of 11")


@pytest.mark.parametrize("runs, row_id, outcome", [
    (runs_of(), "s45-down-below-up", "sanity check passed"),
    (runs_of(up={m: 0.55 for m in M}, down={m: 0.6 for m in M}), "s45-down-below-up", "sanity check failed"),
    (runs_of(r1={m: 0.5 + 0.01 * i for i, m in enumerate(M)}, down={m: 0.6 - 0.01 * i for i, m in enumerate(M)}),
     "c2-trade-off", "sanity check passed"),
    (runs_of(r1={m: 0.5 + 0.01 * i for i, m in enumerate(M)}, down={m: 0.5 + 0.01 * i for i, m in enumerate(M)}),
     "c2-trade-off", "sanity check failed"),
    (runs_of(), "cond-trained", "condition held"),
    (runs_of().assign(up_r1=lambda r: np.where(r["method"] == "hib", 0.3, 0.9)), "cond-trained", "condition failed"),
    (runs_of(), "cond-ux-learned", "condition held"),
    (runs_of(up={m: 0.45 if m == "elk" else 0.8 for m in M}), "cond-ux-learned", "condition failed"),
])
def test_sanity_and_condition_rows_pass_and_fail(runs, row_id, outcome):
    v = claims.url_verdict(runs, benchmark.leaderboard(runs), sweep=runs)
    c = {c.row_id: c for c in v.claims}[row_id]
    assert c.outcome == outcome and c not in v.counted  # listed apart, never counted


def test_the_table_declares_every_band_with_its_reason_and_counts_no_sign_only_claim():
    assert claims.check_table(claims.TABLE) == claims.TABLE  # unique ids, bands valid
    for row in claims.TABLE:
        assert row.reason.strip() and row.place and row.words
        if row.kind in ("size", "level", "ranking"):
            low, high = row.declared_band()
            assert low < high and row.noise == "trained seeds"
    kinds = {r.id: r.kind for r in claims.TABLE}
    assert kinds["s45-down-below-up"] == kinds["s43-above-chance"] == kinds["c2-trade-off"] == "sanity"
    assert "not stated" in ROWS["s45-down-below-up"].words


def test_flagged_methods_are_out_of_the_ranking_and_the_correlations_and_said_so():
    # ELK and nivMF trained an embedding, but their upstream u(x) is below chance (the review: 0.46 and 0.45)
    up = {m: 0.46 if m == "elk" else 0.45 if m == "nivmf" else 0.8 for m in M}
    runs = runs_of(up=up, down={m: 0.7 if m in ("elk", "nivmf") else 0.55 for m in M}, noise=0.01)
    board = benchmark.leaderboard(runs)
    assert set(board.index[-2:]) == {"elk", "nivmf"}
    assert set(board.loc[["elk", "nivmf"], "status"]) == {leaderboard.UX_NOT_LEARNED}
    assert "elk" not in claims.ranks(board, "R-AUROC (down)") and "elk" in claims.ranks(board, "R@1 (down)", (
        "trained", leaderboard.UX_NOT_LEARNED))
    kept = runs[~runs["method"].isin(["elk", "nivmf"])]
    pd.testing.assert_frame_equal(claims.correlations(runs), claims.correlations(kept))
    v = claims.url_verdict(runs, board, sweep=runs)
    assert any(n.startswith("U(x) did not learn") and "ELK, nivMF" in n for n in v.notes)
    assert {c.row_id: c for c in v.claims}["c6-top3-resnet50"].ours == ("not ranked: ELK u(x) did not learn; "
                                                                       "nivMF u(x) did not learn")
    assert claims.side_by_side(board).loc["ELK", "rank"] == "—"


def test_fig4_is_decided_on_the_sweep_and_the_seed_pooled_correlation_is_a_note():
    runs = runs_of(up={m: 0.6 + 0.02 * i for i, m in enumerate(M)}, down={m: 0.5 + 0.01 * i for i, m in enumerate(M)})
    sweep = runs_of(seeds=1, noise=0.05)
    v = claims.url_verdict(runs, benchmark.leaderboard(runs), sweep=sweep)
    c = {c.row_id: c for c in v.claims}["fig4-up-down"]
    ref = claims.spearman(sweep["up_rauroc"], sweep["down_rauroc"])
    assert c.interval == (ref["lo"], ref["hi"]) and "bootstrap over 11 trained models" in c.ours
    assert any(n.startswith("Fig. 4 is decided on the learning-rate sweep") and "rho 0.99" in n for n in v.notes)


def test_the_sweep_is_read_from_the_cache_when_not_given(monkeypatch):
    runs = runs_of().assign(budget="converged")
    cached = {b.name: runs_of(seeds=1, seed=k + 1).assign(budget=b.name)
              for k, b in enumerate(benchmark.sweep_budgets("converged"))}
    monkeypatch.setattr(benchmark, "cached_runs", lambda b: cached.get(b.name, pd.DataFrame()))
    v = claims.url_verdict(runs, benchmark.leaderboard(runs))
    assert "bootstrap over 33 trained models, a learning-rate sweep" in {c.row_id: c for c in v.claims}[
        "fig4-up-down"].ours  # 11 methods x (seed 0 of the runs + 2 sweep budgets)
    monkeypatch.setattr(benchmark, "cached_runs", lambda b: pd.DataFrame())
    v = claims.url_verdict(runs, benchmark.leaderboard(runs))
    assert "fig4-up-down" not in {c.row_id for c in v.claims} and any("No learning-rate sweep" in n for n in v.notes)


def test_the_verdict_lists_tied_groups():
    # three clearly separated methods and eight equal ones: the equal ones are one tied group
    down = {m: 0.8 - 0.05 * i if i < 3 else 0.6 for i, m in enumerate(M)}
    runs = runs_of(down=down, noise=0.01)
    v = claims.url_verdict(runs, benchmark.leaderboard(runs), sweep=runs)
    note = next(n for n in v.notes if n.startswith("Ranked by downstream R-AUROC in tied groups"))
    assert note.count("{") == 4 and "{CE} > {supervised InfoNCE} > {supervised MCInfoNCE} > {" in note


def test_no_claim_compares_absolute_levels_on_other_data():
    runs = runs_of()
    v = claims.url_verdict(runs, benchmark.leaderboard(runs))
    assert not any("0.569" in c.claim or "0.569" in c.paper or "0.7" in c.paper for c in v.counted)
    assert any("not compared" in n for n in v.notes) and any("not a claim" in n for n in v.notes)


def test_our_infonce_is_named_supervised_everywhere_but_keeps_its_key():
    assert benchmark.label("infonce") == "supervised InfoNCE" and benchmark.label("mcinfonce") == "supervised MCInfoNCE"
    assert benchmark.label("ce") == "CE" and numbers.DISPLAY["infonce"] == "InfoNCE"  # the paper's name
    board = benchmark.leaderboard(runs_of())
    assert "| supervised InfoNCE |" in benchmark.leaderboard_markdown(board)
    assert "infonce" in board.index


def test_methods_that_did_not_train_are_left_out_of_ranks_and_correlations():
    runs = runs_of(up={m: 0.6 + 0.02 * i for i, m in enumerate(M)}, crop={m: 0.1 + 0.02 * i for i, m in enumerate(M)})
    kept = runs.copy()
    # Losspred and ELK did not learn an embedding (ELK in one seed only); give them the extreme values that would
    # move a rank and a correlation if they counted
    bad = runs["method"].eq("losspred") | (runs["method"].eq("elk") & runs["seed"].eq(1))
    runs.loc[runs["method"].eq("losspred"), ["up_acc", "down_rauroc", "up_rauroc"]] = [0.05, 0.99, 0.99]
    runs.loc[bad & runs["method"].eq("elk"), "up_r1"] = 0.3
    board = benchmark.leaderboard(runs)
    assert set(board.index[-2:]) == {"elk", "losspred"} and set(board["status"][-2:]) == {"did not train"}
    rr = claims.ranks(board, "R-AUROC (down)")
    assert "losspred" not in rr and "elk" not in rr and len(rr) == 9
    ref = claims.correlations(kept[~kept["method"].isin(["elk", "losspred"])])
    pd.testing.assert_frame_equal(claims.correlations(runs), ref)
    v = claims.url_verdict(runs, board)
    assert any(n.startswith("Did not train") and "Losspred" in n and "ELK" in n for n in v.notes)
    assert {c.row_id: c for c in v.claims}["cond-trained"].outcome == "condition failed"
    table = claims.side_by_side(board)
    assert table.loc["Losspred", "rank"] == "—" and table.loc["Losspred", "status"] == "did not train"
    for fn, arg in (("ranking", board), ("r1_vs_rauroc", runs), ("correlation_scatter", runs)):
        fig, ax = getattr(figures, fn)(arg)
        texts = [t.get_text() for a in fig.axes for t in a.get_yticklabels() + (a.get_legend().get_texts()
                                                                                if a.get_legend() else [])]
        assert any("Losspred" in t and "did not train" in t for t in texts), fn
    fig, ax = figures.correlation_scatter(runs)
    assert f"{ref.iloc[0]['rho']:.2f}" in ax[0].get_title()
