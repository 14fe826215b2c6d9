"""Tests of hedgekit.papers.url.leaderboard: mean and sample std against numpy, which runs count as trained (the
thresholds, NaN metrics, diverged runs), the ranking of trained methods only, and Kendall's tau between seeds'
rankings on hand-made orders."""
import math
from pathlib import Path

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


# ---------------------------------------------------------------- u(x) above chance, rank intervals, tied groups
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


def test_rank_intervals_are_a_seeded_bootstrap_over_seeds():
    runs = _down({"a": [0.60, 0.64, 0.58], "b": [0.61, 0.59, 0.65], "c": [0.2, 0.3, 0.25], "one": [0.62]})
    r = leaderboard.rank_intervals(runs, n_boot=500, seed=3)
    pd.testing.assert_frame_equal(r, leaderboard.rank_intervals(runs, n_boot=500, seed=3))  # deterministic
    methods, means, n, ranks = leaderboard.bootstrap_ranks(runs, n_boot=500, seed=3)
    # each resample's ranks by hand, from the same generator stream
    rng = np.random.default_rng(3)
    values = {m: runs.loc[runs["method"] == m, "down_rauroc"].to_numpy() for m in methods}
    draws = np.stack([rng.choice(values[m], (500, len(values[m]))).mean(1) for m in methods], axis=1)
    by_hand = np.array([[1 + (row > row[j]).sum() + 0.5 * ((row == row[j]).sum() - 1) for j in range(4)]
                        for row in draws])
    np.testing.assert_array_equal(ranks, by_hand)
    assert r.loc["c", "rank lo"] == r.loc["c", "rank hi"] == 4  # always last
    assert (r.loc["one", "rank lo"], r.loc["one", "rank hi"]) == (1, 4)  # one seed cannot place it
    with pytest.raises(InputError, match="no column"):
        leaderboard.rank_intervals(runs, "nope")


def test_ranking_has_tied_groups_of_the_ranked_methods_only():
    runs = _up({"a": [0.8, 0.8, 0.8], "b": [0.8, 0.8, 0.8], "flat": [0.45, 0.46, 0.44]})
    runs["down_rauroc"] = np.repeat([0.7, 0.6, 0.9], 3) + np.tile([0.0, 0.01, -0.01], 3)
    r = leaderboard.ranking(runs)
    assert list(r.index) == ["a", "b"] and list(r["tied group"]) == [1, 2]
    assert leaderboard.ranking(_up({"flat": [0.4, 0.4]})).empty


def test_the_shipped_converged_leaderboard_reads_back_and_matches_the_committed_one(tmp_path):
    runs, source = leaderboard.converged_runs()
    assert "converged" in source and set(runs["budget"]) == {"converged"} and len(runs) == 39
    board = leaderboard.leaderboard(runs)
    # the committed leaderboard of notebook 09 (full mode): every mean +- std cell of every method
    committed = (Path(__file__).resolve().parents[3] / "notebooks/report/assets/09_url_benchmark/leaderboard.md")
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:4] for line in committed.read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| method")}
    for method, row in board.iterrows():
        cells = rows[leaderboard.label(method)]
        for cell, col in zip(cells, ("R-AUROC (down)", "R@1 (down)", "R-AUROC unseen")):
            assert cell == f"{row[col]:.3f} ± {row[col + ' ±']:.3f}", (method, col)
    path = leaderboard.write_converged(runs, "a test", tmp_path / "c.json")
    back, src = leaderboard.converged_runs(path)
    assert src == "a test"
    pd.testing.assert_frame_equal(back.reset_index(drop=True), runs.reset_index(drop=True), check_dtype=False)
    with pytest.raises(InputError, match="no shipped leaderboard"):
        leaderboard.converged_runs(tmp_path / "missing.json")


def test_runs_recorded_before_the_crop_correlation_show_a_dash_not_a_failure():
    shipped, _ = leaderboard.converged_runs()  # runs recorded before issue 49 item 3 had no crop_corr columns
    old = shipped.drop(columns=[c for c in ("crop_corr", "up_crop_corr") if c in shipped])
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


def test_the_shipped_leaderboard_is_package_data():
    import tomllib

    root = Path(__file__).resolve().parents[3]
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["hedgekit"]
    assert "papers/url/converged.json" in data and leaderboard.CONVERGED == root / "hedgekit/papers/url/converged.json"
