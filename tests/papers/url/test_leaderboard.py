"""Tests of hedgekit.papers.url.leaderboard: mean and sample std against numpy, which runs count as trained (the
thresholds, NaN metrics, diverged runs), the ranking of trained methods only, rank sets (their coverage simulated,
a hand-made case against a pair-by-pair Holm procedure, independence of the rows' order), and Kendall's tau between
seeds' rankings on hand-made orders."""
import math

import numpy as np
import pandas as pd
import pytest

from hedgekit.errors import InputError
from hedgekit.papers.url import leaderboard


def test_leaderboard_mean_and_sample_std_match_numpy():
    runs = pd.DataFrame({"method": ["a", "a", "a", "b", "b", "b"], "seed": [0, 1, 2] * 2,
                         "down_rauroc": [0.5, 0.6, 0.7, 0.9, 0.8, 0.85], "down_r1": [0.1, 0.2, 0.6, 0.3, 0.3, 0.3]})
    board = leaderboard.leaderboard(runs)
    assert list(board.index) == ["b", "a"]  # sorted by downstream R-AUROC
    assert board.loc["a", "R-AUROC (down)"] == pytest.approx(0.6)
    assert board.loc["a", "R-AUROC (down) ±"] == pytest.approx(np.std([0.5, 0.6, 0.7], ddof=1))
    assert board.loc["b", "R@1 (down) ±"] == pytest.approx(0.0)
    assert board.loc["a", "seeds"] == 3
    md = leaderboard.leaderboard_markdown(board)
    assert "| a | 0.600 ± 0.100 | 0.300 ± 0.265 | 3 |" in md



def _runs(table):
    """Runs from {method: [(up_r1, up_acc, down_rauroc) per seed]}."""
    return pd.DataFrame([{"method": m, "seed": s, "up_r1": r1, "up_acc": acc, "down_rauroc": d, "down_r1": 0.5}
                         for m, rows in table.items() for s, (r1, acc, d) in enumerate(rows)])



def test_status_is_computed_from_the_thresholds_and_untrained_methods_are_not_ranked():
    runs = _runs({"good": [(0.8, 0.9, 0.6), (0.75, 0.7, 0.62)],
                  "no_acc": [(0.9, math.nan, 0.55), (0.7, math.nan, 0.57)],  # a head without logits: R@1 only
                  "low_acc": [(0.9, 0.69, 0.9), (0.9, 0.9, 0.9)],  # one seed below the accuracy threshold
                  "low_r1": [(0.2, math.nan, 0.95), (0.25, math.nan, 0.93)]})
    st = leaderboard.run_status(runs)
    assert list(st) == ["trained"] * 4 + ["did not train", "trained"] + ["did not train"] * 2
    assert leaderboard.method_status(runs) == {"good": "trained", "no_acc": "trained", "low_acc": "did not train",
                                             "low_r1": "did not train"}
    board = leaderboard.leaderboard(runs)
    # the best R-AUROCs belong to methods that did not train: they come last, after the ranked ones
    assert list(board.index) == ["good", "no_acc", "low_r1", "low_acc"]
    assert list(leaderboard.ranked(board).index) == ["good", "no_acc"]
    assert board.loc["low_acc", "trained seeds"] == 1
    md = leaderboard.leaderboard_markdown(board)
    assert "did not train (1 of 2 seeds trained)" in md and "did not train (0 of 2 seeds trained)" in md
    assert set(leaderboard.trained_runs(runs)["method"]) == {"good", "no_acc"}



def test_seed_rank_stability_is_kendall_tau_between_seed_rankings():
    # seed 0 ranks a > b > c > d, seed 1 swaps c and d (5 concordant, 1 discordant pair: tau = 4/6),
    # seed 2 reverses all (tau with seed 0 = -1, with seed 1 = -4/6); "x" did not train and is left out
    order = {0: [4, 3, 2, 1], 1: [4, 3, 1, 2], 2: [1, 2, 3, 4]}
    table = {m: [(0.9, 0.9, order[s][i]) for s in range(3)] for i, m in enumerate("abcd")}
    table["x"] = [(0.1, 0.1, 10.0)] * 3
    res = leaderboard.seed_rank_stability(_runs(table))
    assert res["methods"] == 4
    assert res["pairs"][(0, 1)] == pytest.approx(4 / 6)
    assert res["pairs"][(0, 2)] == pytest.approx(-1)
    assert res["pairs"][(1, 2)] == pytest.approx(-4 / 6)
    assert res["mean"] == pytest.approx((4 / 6 - 1 - 4 / 6) / 3)
    with pytest.raises(InputError, match="no column"):
        leaderboard.seed_rank_stability(_runs(table), "nope")



def test_pooled_sweep_runs_are_judged_per_setting():
    runs = _runs({"a": [(0.9, 0.9, 0.6)], "b": [(0.9, 0.9, 0.7)]})
    low = runs.assign(budget="x-lr2x", up_r1=[0.9, 0.1])  # b did not train at the doubled learning rate
    pooled = pd.concat([runs.assign(budget="x"), low], ignore_index=True)
    kept = leaderboard.trained_runs(pooled)
    assert sorted(zip(kept["method"], kept["budget"])) == [("a", "x"), ("a", "x-lr2x"), ("b", "x")]



def test_nan_metrics_never_count_as_trained():
    runs = _runs({"ok": [(0.9, 0.9, 0.6)], "nan_r1": [(math.nan, 0.9, 0.6)], "no_logits": [(0.9, math.nan, 0.6)],
                  "all_nan": [(math.nan, math.nan, math.nan)]})
    assert list(leaderboard.run_status(runs)) == ["trained", "did not train", "trained", "did not train"]
    runs["diverged_at"] = [math.nan, math.nan, 4, math.nan]  # a diverged run is not trained whatever its numbers
    assert list(leaderboard.run_status(runs)) == ["trained", "did not train", "did not train", "did not train"]


# -------------------------------------------------------------------- u(x) above chance, rank sets, tied groups
def _up(table):
    """Runs from {method: [upstream R-AUROC per seed]}, every run trained."""
    return pd.DataFrame([{"method": m, "seed": s, "up_r1": 0.9, "up_acc": 0.9, "up_rauroc": u, "down_rauroc": 0.6,
                          "down_r1": 0.5} for m, us in table.items() for s, u in enumerate(us)])


def test_upstream_u_is_above_chance_by_the_t_interval_of_its_seeds():
    from scipy import stats

    # 0.545 +- 0.02 over 3 seeds: mean - 2 se = 0.522 is above chance, but mean - t(2) se = 0.495 is not; "edge"
    # puts the interval's lower end exactly on 0.5 (a tie at the bound is not above it)
    sd = 0.02
    half = stats.t.ppf(0.975, 2) * sd / math.sqrt(3)
    runs = _up({"clear": [0.8, 0.82, 0.84], "below": [0.46, 0.43, 0.49], "edge": [0.5 + half + d for d in (-sd, 0, sd)],
                "t_not_2se": [0.545 - sd, 0.545, 0.545 + sd], "one": [0.51]})
    learned = leaderboard.upstream_learned(runs)
    assert learned == {"clear": True, "below": False, "edge": False, "t_not_2se": False, "one": True}
    board = leaderboard.leaderboard(runs)
    assert board.loc["below", "status"] == leaderboard.UX_NOT_LEARNED == board.loc["t_not_2se", "status"]
    assert list(leaderboard.ranked(board).index) == ["clear", "one"]
    # listed after the ranked methods and before the ones that did not train
    runs.loc[runs["method"] == "one", "up_r1"] = 0.1
    order = list(leaderboard.leaderboard(runs)["status"])
    assert order == ["trained"] + [leaderboard.UX_NOT_LEARNED] * 3 + ["did not train"]


def _down(table):
    return pd.DataFrame([{"method": m, "seed": s, "down_rauroc": v} for m, vs in table.items()
                         for s, v in enumerate(vs)])


def test_clearly_separated_methods_are_singleton_groups():
    runs = _down({"a": [0.9, 0.91, 0.89], "b": [0.7, 0.71, 0.69], "c": [0.5, 0.51, 0.49]})
    r = leaderboard.rank_intervals(runs)
    assert list(r.index) == ["a", "b", "c"] and list(r["rank"]) == [1, 2, 3]
    assert list(r["rank lo"]) == [1, 2, 3] == list(r["rank hi"])
    assert leaderboard.tied_groups(r) == [["a"], ["b"], ["c"]]


def test_equal_methods_are_one_tied_group_and_groups_join_through_a_third():
    equal = _down({"a": [0.6, 0.7, 0.5], "b": [0.6, 0.7, 0.5], "c": [0.6, 0.7, 0.5]})
    assert leaderboard.tied_groups(leaderboard.rank_intervals(equal)) == [["a", "b", "c"]]
    # a overlaps b, b overlaps c, a and c do not: one group
    r = pd.DataFrame({"rank": [1.0, 2.0, 3.0], "rank lo": [1.0, 1.0, 2.5], "rank hi": [1.5, 2.5, 3.0]},
                     index=["a", "b", "c"])
    assert leaderboard.tied_groups(r) == [["a", "b", "c"]]
    r.loc["c", "rank lo"] = 2.6  # no longer touches b
    assert leaderboard.tied_groups(r) == [["a", "b"], ["c"]]


def naive_rank_sets(runs, metric="down_rauroc", alpha=0.05):
    """Rank sets pair by pair: pooled variance, Student's t for each pair, Holm's step-down by hand (Holm 1979)."""
    from itertools import combinations

    from scipy import stats

    values = {m: v.dropna().to_numpy(float) for m, v in runs.groupby("method")[metric]}
    df = sum(len(v) - 1 for v in values.values())
    sp = math.sqrt(sum(((v - v.mean()) ** 2).sum() for v in values.values()) / df)
    p = {}
    for a, b in combinations(values, 2):
        t = (values[a].mean() - values[b].mean()) / (sp * math.sqrt(1 / len(values[a]) + 1 / len(values[b])))
        p[a, b] = 2 * stats.t.sf(abs(t), df)
    separable, k = set(), len(p)
    for step, pair in enumerate(sorted(p, key=p.get)):
        if p[pair] > alpha / (k - step):  # Holm: stop at the first pair that fails its threshold
            break
        separable.add(pair)
    sets = {}
    for m, v in values.items():
        better = sum(values[o].mean() > v.mean() for pair in separable for o in pair if m in pair and o != m)
        worse = sum(values[o].mean() < v.mean() for pair in separable for o in pair if m in pair and o != m)
        sets[m] = (1 + better, len(values) - worse)
    return sets, p


def test_rank_sets_of_a_hand_made_case_match_a_pair_by_pair_holm_procedure():
    # means 0.82, 0.775, 0.73, seed spread 0.02 (s_p = 0.02, 6 df): a vs c (t = 5.5) is separable after Holm; a vs b
    # (t = 2.76, p = 0.033) would be at 5% on its own but not after Holm's factor 2; b vs c likewise
    runs = _down({"a": [0.80, 0.82, 0.84], "b": [0.755, 0.775, 0.795], "c": [0.71, 0.73, 0.75]})
    sets, p = naive_rank_sets(runs)
    assert p["a", "b"] < 0.05 and p["b", "c"] < 0.05 and 2 * p["a", "b"] > 0.05
    assert sets == {"a": (1, 2), "b": (1, 3), "c": (2, 3)}
    r = leaderboard.rank_intervals(runs)
    assert {m: (x["rank lo"], x["rank hi"]) for m, x in r.iterrows()} == sets
    assert r["rank lo"].dtype.kind == r["rank hi"].dtype.kind == "i"
    assert leaderboard.tied_groups(r) == [["a", "b", "c"]]
    # unequal runs: a method with one run and one with a NaN run (dropped) are placed with the pooled variance
    rng = np.random.default_rng(5)
    runs = _down({m: list(mu + 0.03 * rng.standard_normal(k)) for m, mu, k in
                  (("p", 0.9, 3), ("q", 0.85, 4), ("r", 0.7, 3), ("s", 0.62, 1), ("t", 0.6, 2), ("u", 0.3, 3))})
    runs.loc[runs.index[4], "down_rauroc"] = math.nan
    r = leaderboard.rank_intervals(runs)
    assert r.loc["q", "runs"] == 3 and r.loc["s", "runs"] == 1
    assert {m: (x["rank lo"], x["rank hi"]) for m, x in r.iterrows()} == naive_rank_sets(runs)[0]


def test_rank_sets_do_not_depend_on_the_order_of_the_rows():
    rng = np.random.default_rng(0)
    runs = _down({f"m{k}": list(0.5 + 0.02 * (k // 2) + 0.02 * rng.standard_normal(3)) for k in range(9)})
    runs = pd.concat([runs, _down({"tie_a": [0.55, 0.56, 0.57], "tie_b": [0.57, 0.55, 0.56]})], ignore_index=True)
    runs.loc[3, "down_rauroc"] = math.nan
    ref = leaderboard.rank_intervals(runs)
    assert ref.loc["tie_a", "rank"] == ref.loc["tie_b", "rank"]  # equal means share their average rank
    for seed in range(5):
        pd.testing.assert_frame_equal(leaderboard.rank_intervals(runs.sample(frac=1, random_state=seed)), ref)
        pd.testing.assert_frame_equal(leaderboard.ranking(runs.sample(frac=1, random_state=seed).assign(
            up_r1=0.9, up_rauroc=0.8)), leaderboard.ranking(runs.assign(up_r1=0.9, up_rauroc=0.8)))


def test_identical_distributions_get_the_full_range_and_clear_gaps_singletons():
    equal = _down({m: [0.6, 0.7, 0.5] for m in "abcd"})
    r = leaderboard.rank_intervals(equal)
    assert list(r.index) == ["a", "b", "c", "d"]  # equal means: in order of name
    assert set(r["rank lo"]) == {1} and set(r["rank hi"]) == {4}
    apart = _down({m: [v - 0.01, v, v + 0.01] for m, v in zip("abcd", (0.2, 0.4, 0.6, 0.8))})
    r = leaderboard.rank_intervals(apart)
    assert list(r.index) == ["d", "c", "b", "a"] and list(r["rank lo"]) == [1, 2, 3, 4] == list(r["rank hi"])
    # no seed noise at all: every gap separates, equal means stay tied
    flat = leaderboard.rank_intervals(_down({"a": [0.5, 0.5], "b": [0.5, 0.5], "c": [0.4, 0.4]}))
    assert [tuple(x) for x in flat[["rank lo", "rank hi"]].to_numpy()] == [(1, 2), (1, 2), (3, 3)]


def test_rank_sets_refuse_what_they_cannot_rank():
    runs = _down({"a": [0.60, 0.64, 0.58], "b": [0.61]})
    with pytest.raises(InputError, match="no column 'nope'"):
        leaderboard.rank_intervals(runs, "nope")
    with pytest.raises(InputError, match="no run has a value"):
        leaderboard.rank_intervals(runs.iloc[:0])
    with pytest.raises(InputError, match="no run has a value"):
        leaderboard.rank_intervals(runs.assign(down_rauroc=math.nan))
    with pytest.raises(InputError, match="at least 2 runs"):
        leaderboard.rank_intervals(_down({"a": [0.6], "b": [0.7], "c": [0.5]}))
    with pytest.raises(InputError, match="at least 2 runs"):  # a second run that is NaN does not count
        leaderboard.rank_intervals(_down({"a": [0.6, math.nan], "b": [0.7]}))


# 8 methods' true means: two tied blocks among clear gaps, and a staircase of gaps smaller than the seed noise
# (SD 0.03), where a bootstrap over 3 seeds covers the true ranks in about 0.8 of the leaderboards
TRUE_MEANS = {"tied blocks": np.array([0.70, 0.60, 0.60, 0.60, 0.55, 0.50, 0.50, 0.30]),
              "staircase": np.linspace(0.70, 0.56, 8)}


@pytest.mark.parametrize("design", TRUE_MEANS)
@pytest.mark.parametrize("seeds", [3, 5])
def test_rank_sets_cover_the_true_ranks_with_few_seeds(design, seeds, boards=2000, sd=0.03):
    true = TRUE_MEANS[design]
    rng = np.random.default_rng(seeds)
    k = len(true)
    x = true[:, None] + sd * rng.standard_normal((boards, k, seeds))
    means, df = x.mean(-1), k * (seeds - 1)
    pooled = ((x - means[..., None]) ** 2).sum((-2, -1)) / df
    lo, hi = leaderboard.rank_sets(means, np.full(k, seeds), pooled, df)
    # a method's true ranks: its tied block, from 1 + (truly better) to k - (truly worse)
    first = 1 + (true[None, :] > true[:, None]).sum(1)
    last = k - (true[None, :] < true[:, None]).sum(1)
    coverage = ((lo <= last) & (hi >= first)).all(-1).mean()  # every set holds a rank of its block
    whole = ((lo <= first) & (hi >= last)).all(-1).mean()  # every set holds its whole block: no wrong separation
    assert coverage >= 0.93 and whole >= 0.93, (coverage, whole)
    assert (hi - lo).mean() < k - 1  # and the sets say something
    # the frame path gives the same sets
    for b in range(3):
        runs = pd.DataFrame({"method": np.repeat([f"m{i}" for i in range(k)], seeds), "down_rauroc": x[b].ravel()})
        r = leaderboard.rank_intervals(runs).loc[[f"m{i}" for i in range(k)]]
        assert list(r["rank lo"]) == list(lo[b]) and list(r["rank hi"]) == list(hi[b])


def test_ranking_has_tied_groups_of_the_ranked_methods_only():
    runs = _up({"a": [0.8, 0.8, 0.8], "b": [0.8, 0.8, 0.8], "flat": [0.45, 0.46, 0.44]})
    runs["down_rauroc"] = np.repeat([0.7, 0.6, 0.9], 3) + np.tile([0.0, 0.01, -0.01], 3)
    r = leaderboard.ranking(runs)
    assert list(r.index) == ["a", "b"] and list(r["tied group"]) == [1, 2]
    assert leaderboard.ranking(_up({"flat": [0.4, 0.4]})).empty


def test_runs_recorded_before_the_crop_correlation_show_a_dash_not_a_failure():
    old = pd.DataFrame({"method": "ce", "seed": [0, 1, 2], "budget": "converged", "down_rauroc": [0.55, 0.56, 0.57],
                        "down_r1": 0.55, "up_r1": 0.85, "up_acc": 0.9, "crop": 0.69, "up_crop": 0.89})  # no crop_corr
    board = leaderboard.leaderboard(old)
    assert "crop rho unseen" not in board and "crop rho (up)" not in board  # a column no run has is left out
    assert "crop rho" not in leaderboard.leaderboard_markdown(board)
    new = pd.DataFrame({"method": "new", "seed": [0, 1, 2], "budget": "converged", "down_rauroc": 0.6, "down_r1": 0.7,
                        "up_r1": 0.9, "crop": 0.8, "crop_corr": [0.2, 0.3, 0.4], "up_crop": 0.9,
                        "up_crop_corr": [0.5, 0.5, 0.5]})
    mixed = leaderboard.leaderboard(pd.concat([old[old["method"] == "ce"], new], ignore_index=True))
    cols = list(mixed.columns)
    assert cols.index("crop rho unseen") == cols.index("crop rate unseen") + 2  # beside the crop rate (and its ±)
    assert cols.index("crop rho (up)") == cols.index("crop rate (up)") + 2
    assert mixed.loc["new", "crop rho unseen"] == pytest.approx(0.3)
    assert mixed.loc["new", "crop rho unseen ±"] == pytest.approx(0.1)
    head, _, *rows = leaderboard.leaderboard_markdown(mixed).splitlines()
    titles = [c.strip() for c in head.strip("|").split("|")]
    cells = {r.split(" | ")[0].strip("| "): [c.strip() for c in r.strip("|").split("|")] for r in rows}
    for title in ("crop rho unseen", "crop rho (up)"):
        assert cells["CE"][titles.index(title)] == "—"  # the old run has no value: a dash
    assert cells["new"][titles.index("crop rho unseen")] == "0.300 ± 0.100"
    assert cells["new"][titles.index("crop rho (up)")] == "0.500 ± 0.000"
    assert cells["CE"][titles.index("crop rate unseen")] != "—"
