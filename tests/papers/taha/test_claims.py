"""hedgekit.papers.taha.claims: decision rules on hand-made numbers, side-by-side tables against the paper's."""
import math
from types import SimpleNamespace

import pandas as pd
import pytest

from hedgekit.papers.taha import claims as C
from hedgekit.papers.taha import numbers as N
from hedgekit.papers.taha.experiments import TABLE1_ROWS


def test_same_and_beats_rules():
    assert C.same(0.5, 0.1) is True
    assert C.same(3.0, 2.0) is None  # above the tolerance, within 2 std
    assert C.same(3.0, 0.5) is False
    assert C.same(3.0, math.nan) is False
    assert C.beats(1.0, 0.2) is True and C.beats(-1.0, 0.2) is False
    assert C.beats(1.0, 1.0) is None  # within 2 std
    assert C.beats(-1.0, math.nan) is False  # one run: the sign decides ...
    assert C.beats(-0.1, math.nan) is None  # ... unless the gap is below MIN_EFFECT


def _t1(gap_noaug, gap_aug, std=0.002):
    base = {"map": (0.5, std), "top1": (0.6, std), "top5": (0.8, std), "top10": (0.9, std)}
    shift = lambda d: {k: (m + d, s) for k, (m, s) in base.items()}  # noqa: E731
    return {"Tri": base, "Tri + Hetero": shift(gap_noaug), "Tri + Aug": base, "Tri + Aug + Hetero": shift(gap_aug)}


def test_table1_side_by_side_puts_the_paper_beside_us():
    df = C.table1_side_by_side(_t1(0.0, 0.01))
    assert list(df.index) == list(TABLE1_ROWS)
    assert df.loc["Tri", "mAP paper"] == N.TABLE1["Tri"]["map"][0]
    assert df.loc["Tri", "Δ mAP"] == pytest.approx(50.0 - 56.08)
    assert df.loc["Tri + Aug + Hetero", "mAP ours"] == "51.00 ± 0.20"


def test_table1_verdict_counts():
    v = C.table1_verdict(_t1(-0.005, 0.003))  # -0.5 and +0.3 points: both "about equal", gap closes
    ok, bad, unsure = v.counts
    assert [c.matched for c in v.claims][:4] == [True, True, True, True]
    assert v.claims[4].matched is True  # -0.5 -> +0.3 with tiny std
    assert ok + bad + unsure == len(v.claims) == 6
    v = C.table1_verdict(_t1(-0.05, -0.05), [SimpleNamespace(steps=1500, preset="paper", train_seconds=60.0)])
    assert v.claims[0].matched is False and v.claims[4].matched is None  # no change of the gap: d = 0
    assert "25k iterations" in v.markdown()


def _t2(**over):
    vals = {"clean subset only": 0.50, "Tri on noisy": 0.60, "Tri + Hetero on noisy": 0.61,
            "random cleaning 20%": 0.611, "uncertainty cleaning 20%": 0.64}
    vals.update(over)
    return {k: (v, 0.001) for k, v in vals.items()}


def test_table2_side_by_side_and_verdict():
    df = C.table2_side_by_side(_t2())
    assert df.loc["uncertainty cleaning 20%", "Δ"] == pytest.approx(64.0 - 64.57)
    fig = {"r": -0.4, "flipped_top": 0.8, "noise_rate": 0.36, "n_top": 50, "centre_rho": 0.3}
    v = C.table2_verdict(_t2(), fig)
    assert v.counts == (7, 0, 0)
    v = C.table2_verdict(_t2(**{"uncertainty cleaning 20%": 0.60}), dict(fig, r=0.1, flipped_top=0.2, centre_rho=-0.1))
    assert [c.matched for c in v.claims] == [True, True, True, False, False, False, False]


def test_longtail_side_by_side_and_verdict():
    ours = {"Tri": {k: (0.5, 0.001) for k in ("micro", "macro", "head", "tail")},
            "Tri + Hetero": {"micro": (0.52, 0.001), "macro": (0.49, 0.001), "head": (0.6, 0.001), "tail": (0.45, 0.001)}}
    df = C.longtail_side_by_side(ours)
    assert df.loc["micro", "Δ paper Table 3"] == pytest.approx(78.45 - 77.88)
    assert df.loc["tail", "Δ ours"] == pytest.approx(-5.0)
    assert math.isnan(df.loc["head", "Δ paper Table 4"])
    assert C.longtail_verdict(ours).counts == (2, 0, 0)


def test_detection_winner_names_the_most_precise():
    table = pd.DataFrame([dict(detector="uncertainty", fraction=0.1, precision=0.4),
                          dict(detector="small loss", fraction=0.1, precision=0.7),
                          dict(detector="cleanlab", fraction=0.1, precision=0.6),
                          dict(detector="cleanlab (own threshold)", fraction=0.1, precision=0.99)])
    assert C.detection_winner(table, 0.1).startswith("at 10% removed, small loss wins (precision 0.70, cleanlab 0.60)")


def test_paper_numbers_are_consistent():
    assert N.table2_gain("uncertainty cleaning 20%") == pytest.approx(2.30)
    assert N.table2_gain("random cleaning 20%") == pytest.approx(0.06)
    # the paper's macro average is the mean of its per-class values (paper_numbers.md check)
    per_class = [v for k, v in N.TABLE3_GOAL.items() if "mAP" not in k]
    assert sum(b for b, _ in per_class) / len(per_class) == pytest.approx(N.TABLE3_GOAL["Macro mAP"][0], abs=0.01)


def test_fig5_claim_needs_more_than_the_base_rate():
    fig = {"r": -0.4, "flipped_top": 0.36, "noise_rate": 0.36, "n_top": 50, "centre_rho": 0.3}
    assert C.table2_verdict(_t2(), fig).claims[5].matched is None  # a random pick's share
    assert C.table2_verdict(_t2(), dict(fig, flipped_top=0.1)).claims[5].matched is False


def test_a_collapsed_row_makes_the_gap_claim_inconclusive():
    summary = _t1(0.0, 0.10)
    summary["Tri + Aug"] = {k: (0.03, 0.001) for k in ("map", "top1", "top5", "top10")}
    v = C.table1_verdict(summary)
    assert v.claims[2].matched is False and "collapsed" in v.claims[2].why
    assert v.claims[4].matched is None and "not a fair test" in v.claims[4].why
