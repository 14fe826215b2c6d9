"""Tests of hedgekit.papers.url.leaderboard: mean and sample std against numpy, which runs count as trained (the
thresholds, NaN metrics, diverged runs), the ranking of trained methods only, and Kendall's tau between seeds'
rankings on hand-made orders."""
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
