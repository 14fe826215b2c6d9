"""hedgekit.papers.taha.claims: every row of the claims table driven to each outcome its kind allows by constructed
numbers (no trained model), through the notebook-facing verdicts; the side-by-side tables (gaps between rows of one
table only, never ours minus the paper's on other data)."""
import math
from types import SimpleNamespace

import pandas as pd
import pytest

from hedgekit.papers.taha import claims as C
from hedgekit.papers.taha import numbers as N
from hedgekit.papers.taha.experiments import TABLE1_ROWS, runs_text
from hedgekit.papers.verdict import COUNTED, SEEDS, Spread, check_table

OFFSETS = (-1.0, -0.5, 0.0, 0.5, 1.0)  # five runs around a mean; std = 0.79 x sd


def S(mean, sd=0.0005, runs=5, shared=None):
    """A Spread of ``runs`` run values (fractions) around ``mean``; ``shared``: per-run offsets added as well
    (the same model's runs move together, as with and without cleaning)."""
    vals = [mean + sd * OFFSETS[i % 5] + (shared[i] if shared else 0.0) for i in range(runs)]
    return Spread(vals)


def _by_id(v):
    return {c.row_id: c for c in v.claims}


# ---------------------------------------------------------------------------- inputs of each verdict
def _t1(tri=0.50, het=0.50, aug=0.50, aug_het=0.50, sd=0.0005, top5=0.80, runs=5, het_sd=None):
    def row(m, s=sd):
        return {"map": S(m, s, runs), "top1": S(0.6, s, runs), "top5": S(top5 + (m - 0.5), s, runs),
                "top10": S(0.9, s, runs)}
    return {"Tri": row(tri), "Tri + Hetero": row(het, sd if het_sd is None else het_sd), "Tri + Aug": row(aug),
            "Tri + Aug + Hetero": row(aug_het)}


LEVEL_RUNS = (0.01, -0.01, 0.005, -0.005, 0.0)  # run-to-run level changes of one model (1 point)


def _t2(noisy=0.6170, clean=0.5262, het=0.6227, rand=None, unc=None, sd=0.0005, runs=5, level=1.0):
    rand = het + 0.0006 if rand is None else rand
    unc = het + 0.0230 if unc is None else unc
    same = [level * x for x in LEVEL_RUNS[:runs]]  # the cleaning rows move with their model's full-gallery row
    return {"clean subset only": S(clean, sd, runs), "Tri on noisy": S(noisy, sd, runs),
            "Tri + Hetero on noisy": S(het, sd, runs, same), "random cleaning 20%": S(rand, sd, runs, same),
            "uncertainty cleaning 20%": S(unc, sd, runs, same)}


FIG = {"r": [-0.45, -0.5, -0.42, -0.48, -0.46], "flipped_top": 0.8, "noise_rate": 0.36, "n_top": 50,
       "centre_rho": [0.3, 0.28, 0.33, 0.31, 0.29]}
SHARED = [0.01, -0.02, 0.015, -0.005, 0.0]  # the het model's own level moves from run to run


def _noise(clean=0.50, noisy=0.60, het=0.60, gain=0.022, rand=0.0, jitter=0.0, r=-0.5, r_sd=0.01, sig=0.6,
           small=0.5, base=0.38, odd=0.7):
    """`noise_study.summarise`-like output; ``jitter`` moves the uncertainty-cleaned row alone from run to run (a
    noisy paired gain)."""
    unc = Spread([x + jitter * o for x, o in zip(S(het + gain, shared=SHARED).values, OFFSETS)])
    mp = {"clean subset only": S(clean), "Tri on noisy": S(noisy), "Tri + Hetero on noisy": S(het, shared=SHARED),
          "random cleaning 20%": S(het + rand, shared=SHARED), "uncertainty cleaning 20%": unc}
    det = {(d, f): S(v, 0.01) for f in (0.05, 0.1, 0.2) for d, v in
           (("uncertainty", sig), ("small loss", small), ("cleanlab", small))}
    return {"map": mp, "r": [r + r_sd * o for o in OFFSETS], "detection": det, "noise_rate": S(base, 0.0),
            "ambiguous_removed": S(0.3, 0.01), "ambiguous_gallery": S(0.1, 0.0), "odd_top": S(odd, 0.01),
            "odd_rate": S(0.48, 0.0)}


def _lt(micro=0.011, tail=-0.05, sd=0.0005, runs=5, macro=-0.01):
    tri = {k: S(0.5, sd, runs) for k in ("micro", "macro", "head", "tail")}
    het = {"micro": S(0.5 + micro, sd, runs), "macro": S(0.5 + macro, sd, runs), "head": S(0.6, sd, runs),
           "tail": S(0.5 + tail, sd, runs)}
    return {"Tri": tri, "Tri + Hetero": het}


def t1(**kw):
    return lambda: C.table1_verdict(_t1(**kw))


def t2(fig=FIG, **kw):
    return lambda: C.table2_verdict(_t2(**kw), fig)


def nv(**kw):
    return lambda: C.noise_verdict(_noise(**kw))


def lt(**kw):
    return lambda: C.longtail_verdict(_lt(**kw))


M, NM, INC, PASS, FAIL, HELD, BROKE = ("matched", "not matched", "inconclusive", "sanity check passed",
                                       "sanity check failed", "condition held", "condition failed")
COMMITTED_PAIRS = [0.95, -0.13, 0.75, 0.73, 0.43]  # notebook 08's uncertainty − random per run (points)
CASES = [  # (verdict, row id, outcome): every row to every outcome its kind allows
    (t1(het=0.502), "t1-het-map", M),  # +0.2 points, interval well inside ±1
    (t1(het=0.53), "t1-het-map", NM),  # +3 points, interval outside ±1
    (t1(het=0.508, sd=0.01), "t1-het-map", INC),  # +0.8 points, interval straddles +1
    (t1(het=0.508, runs=1), "t1-het-map", INC),  # one run: no interval
    (t1(het=0.502), "t1-het-top5", M), (t1(het=0.53), "t1-het-top5", NM), (t1(het=0.508, sd=0.01), "t1-het-top5", INC),
    (t1(aug_het=0.502), "t1-aug-het-map", M), (t1(aug_het=0.53), "t1-aug-het-map", NM),
    (t1(aug_het=0.508, sd=0.01), "t1-aug-het-map", INC),
    (t1(aug_het=0.502), "t1-aug-het-top5", M), (t1(aug_het=0.53), "t1-aug-het-top5", NM),
    (t1(aug_het=0.508, sd=0.01), "t1-aug-het-top5", INC),
    (t1(tri=0.995, het=0.999), "t1-het-map-ceiling", PASS),  # both within 1 point of 100
    (t1(het=0.502, top5=0.995), "t1-het-top5-ceiling", PASS),
    (t1(aug=0.995, aug_het=0.991), "t1-aug-het-map-ceiling", PASS),
    (t1(aug_het=0.502, top5=0.995), "t1-aug-het-top5-ceiling", PASS),
    (t1(het=0.4908, aug_het=0.503), "t1-gap-closes", M),  # -0.92 -> +0.30: +1.22 as the paper
    (t1(het=0.49, aug_het=0.49), "t1-gap-closes", NM),  # no change of the gap
    (t1(het=0.45, aug_het=0.55), "t1-gap-closes", NM),  # +10 points: larger than the paper
    (t1(het=0.4908, aug_het=0.503, sd=0.02), "t1-gap-closes", INC),
    (t1(aug=0.504), "t1-aug", M),  # +0.4 points against the paper's +0.36 [0.18, 0.72]
    (t1(), "t1-aug", NM),  # no gain from augmentation
    (t1(aug=0.504, sd=0.002), "t1-aug", INC),
    (t1(het_sd=0.0001), "t1-std", PASS), (t1(het_sd=0.01), "t1-std", FAIL),
    (t1(), "t1-learned", HELD), (t1(aug=0.03), "t1-learned", BROKE),
    (t2(), "t2-noisy-vs-clean", M),
    (t2(noisy=0.672, clean=0.760), "t2-noisy-vs-clean", NM),  # the committed run: -8.6
    (t2(sd=0.05), "t2-noisy-vs-clean", INC),
    (t2(level=0.0), "t2-hetero-noisy", M),  # +0.57
    (t2(noisy=0.6722, het=0.6712, level=0.0), "t2-hetero-noisy", NM),  # -0.10 with a tight interval
    (t2(sd=0.01), "t2-hetero-noisy", INC),
    (t2(), "t2-fig6-sign", PASS), (t2(dict(FIG, r=[0.1, 0.12, 0.09])), "t2-fig6-sign", FAIL),
    (t2(dict(FIG, r=[-0.9, 0.3, -0.6, 0.2, -0.5])), "t2-fig6-sign", FAIL),  # its interval contains 0
    (t2(), "t2-fig5-base", PASS), (t2(dict(FIG, flipped_top=0.36)), "t2-fig5-base", FAIL),  # a random pick's share
    (t2(), "t2-fig8", M),
    (t2(dict(FIG, centre_rho=[-0.1, -0.12, -0.08])), "t2-fig8", NM),
    (t2(dict(FIG, centre_rho=[0.01, 0.012, 0.008, 0.011, 0.009])), "t2-fig8", NM),  # positive, too small
    (t2(dict(FIG, centre_rho=[0.3, -0.2, 0.1])), "t2-fig8", INC),
    (t2(dict(FIG, centre_rho=0.3)), "t2-fig8", INC),  # one run
    (nv(), "noise-precondition", HELD), (nv(clean=0.62), "noise-precondition", BROKE),
    (nv(), "noise-cleaning", M),  # +2.2 in every run, paired
    (nv(gain=0.0), "noise-cleaning", NM),
    (nv(gain=0.0055, jitter=0.0042), "noise-cleaning", NM),  # about the committed +0.54 [+0.02, +1.07]
    (nv(gain=0.015, jitter=0.02), "noise-cleaning", INC),  # +1.5, interval straddles 1.12
    (nv(gain=0.10), "noise-cleaning", NM),  # +10: larger than the paper
    (nv(), "noise-random", PASS), (nv(rand=0.01), "noise-random", FAIL),  # +1 point from a random removal
    (nv(), "noise-fig6", M),
    (nv(r=-0.02), "noise-fig6", NM),
    (nv(r=-0.18, r_sd=0.02), "noise-fig6", NM),  # the review's case: 2.8x smaller than -0.50, precisely
    (nv(r=-0.3, r_sd=0.2), "noise-fig6", INC),
    (nv(), "noise-fig5", PASS), (nv(odd=0.3), "noise-fig5", FAIL),
    (nv(), "noise-fig5-base", PASS), (nv(odd=0.48), "noise-fig5-base", FAIL),
    (lt(), "lt-micro", M),  # +1.1 within [0.57 / 2, 1.70 x 2]
    (lt(micro=-0.01), "lt-micro", NM), (lt(micro=0.10), "lt-micro", NM),  # +10: larger than the paper
    (lt(sd=0.02), "lt-micro", INC),
    (lt(), "lt-macro", M),  # -1.0 points against Table 3's -1.82 [-3.64, -0.91]
    (lt(macro=0.0006), "lt-macro", NM),  # the committed run: +0.06
    (lt(macro=-0.015, sd=0.01), "lt-macro", INC),
    (lt(), "lt-tail", PASS), (lt(tail=0.05), "lt-tail", FAIL), (lt(tail=-0.001, sd=0.01), "lt-tail", FAIL),
]
ALLOWED = {"size": {M, NM, INC}, "level": {M, NM, INC}, "sanity": {PASS, FAIL}, "condition": {HELD, BROKE}}
# A check at the ceiling cannot fail: both rows within SAME_TOL of 100 cannot differ by more than SAME_TOL.
CANNOT_FAIL = {r.id for r in C.TABLE if r.id.endswith("-ceiling")}


@pytest.mark.parametrize("verdict, row_id, outcome", CASES, ids=[f"{r}-{o}" for _, r, o in CASES])
def test_every_row_reaches_its_outcomes(verdict, row_id, outcome):
    assert _by_id(verdict())[row_id].outcome == outcome


def test_the_cases_cover_every_outcome_of_every_row():
    got = {}
    for _, row_id, outcome in CASES:
        got.setdefault(row_id, set()).add(outcome)
    for row in C.TABLE:
        want = ALLOWED[row.kind] - ({FAIL} if row.id in CANNOT_FAIL else set())
        assert got.get(row.id) == want, row.id


def test_counted_rows_declare_a_band_with_its_reason_and_trained_seeds():
    assert check_table(C.TABLE) == C.TABLE
    for row in C.TABLE:
        assert row.reason.strip() and row.words and row.place, row.id
        if row.kind in COUNTED:
            low, high = row.declared_band()
            assert low < high and row.noise == SEEDS, row.id
    ids = [r.id for r in C.TABLE]
    assert len(ids) == len(set(ids))


def test_sizes_are_decided_on_size_not_on_sign():
    # the review's Fig. 6: a precise r of -0.18, the sign of the paper's -0.50 but 2.8x weaker, is not matched (the
    # band: half the paper's -0.5001 moved inward to 2 decimals, to -1)
    c = _by_id(nv(r=-0.18, r_sd=0.02)())["noise-fig6"]
    assert c.matched is False and c.band == (-1.0, -0.26) and "lies above" in c.why
    # the committed cleaning gain, +0.54 [+0.02, +1.07] paired: positive, yet wholly below half the paper's +2.24
    result = _noise()
    rand = result["map"]["random cleaning 20%"].values
    result["map"]["uncertainty cleaning 20%"] = Spread([x + d / 100 for x, d in zip(rand, COMMITTED_PAIRS)])
    v = C.noise_verdict(result)
    c = _by_id(v)["noise-cleaning"]
    assert c.matched is False and "paired" in c.why and c.interval[0] > 0 and c.interval[1] < 1.12
    assert c.interval == pytest.approx((0.0237, 1.0683), abs=1e-3)


def test_a_wide_interval_is_never_matched():
    c = _by_id(nv(gain=0.022, jitter=0.05)())["noise-cleaning"]  # mean +2.2 as the paper, interval far wider
    assert c.outcome == INC and ("seeds per arm would decide" in c.why or "band narrower than 10 seeds" in c.why)


def test_cleaning_is_paired_so_the_models_own_run_to_run_level_changes_do_not_hide_it():
    c = _by_id(nv(gain=0.022)())["noise-cleaning"]  # the model's level moves by 2 points between runs
    assert c.outcome == M and c.interval == pytest.approx((2.2, 2.2), abs=1e-9)


def test_each_comparison_is_counted_once_across_the_two_noise_set_ups():
    independent, dependent = C.table2_verdict(_t2(), FIG), C.noise_verdict(_noise())
    counted = [c.row_id for v in (independent, dependent) for c in v.counted]
    assert counted == ["t2-noisy-vs-clean", "t2-hetero-noisy", "t2-fig8", "noise-cleaning", "noise-fig6"]
    assert [c.row_id for c in independent.checks] == ["t2-fig6-sign", "t2-fig5-base"]
    assert [c.row_id for c in dependent.checks] == ["noise-random", "noise-fig5", "noise-fig5-base"]
    assert [c.row_id for c in dependent.conditions] == ["noise-precondition"]
    assert "1 condition(s) listed apart, 1 held" in dependent.markdown()
    # the independent set-up shows its cleaning numbers as a note, not as a claim
    (note,) = [n for n in independent.notes if n.startswith("Gallery cleaning is decided once")]
    assert "uncertainty − random cleaning -0.04" in C.table2_verdict(_t2(unc=0.6227 + 0.0002), FIG).notes[0]
    assert "(the paper: +2.24)" in note


@pytest.mark.parametrize("clean", [0.60, 0.70])
def test_cleaning_is_left_out_when_the_precondition_fails(clean):
    """A clean subset that trains as well as (or better than) clean + noisy: however large the cleaning gain, the
    cleaning row is not read; the condition shows why, and a note says so."""
    v = C.noise_verdict(_noise(clean=clean, gain=0.022))
    got = _by_id(v)
    assert "noise-cleaning" not in got and got["noise-precondition"].outcome == BROKE
    assert "Tri on noisy − clean subset only" in got["noise-precondition"].ours
    assert any(n.startswith("The cleaning row is left out: precondition failed") for n in v.notes)
    held, why = C.precondition(_noise(clean=clean)["map"])
    assert not held and "Tri on noisy" in why


def test_precondition_needs_both_noisy_rows_with_an_interval_above_zero():
    assert C.precondition(_noise()["map"])[0]
    assert not C.precondition(_noise(het=0.50)["map"])[0]  # het no better than clean only
    one_run = {k: Spread(v.values[:1]) for k, v in _noise()["map"].items()}
    assert not C.precondition(one_run)[0]  # one run: no interval, not shown to hold


def test_noise_notes_say_what_was_removed_and_what_lies_beyond_the_paper():
    notes = C.noise_verdict(_noise(sig=0.26, small=0.76)).notes
    assert notes[0] == ("Blended look-alikes are 30% of the 20% most uncertain gallery images removed (10% of the "
                        "gallery).")
    assert notes[1].startswith("Beyond the paper (not counted): σ²'s precision for flipped labels at 10% removed is "
                               "0.26; its difference in points against the base rate (0.38): -12.00, 95% interval")
    assert "; against small loss (0.76): -50.00" in notes[1] and "; against cleanlab (0.76): -50.00" in notes[1]
    no_detection = {k: v for k, v in _noise().items() if k != "detection"}
    assert not any("Beyond" in n for n in C.noise_verdict(no_detection).notes)


def test_a_collapsed_row_leaves_its_claims_out_and_fails_the_condition():
    got = _by_id(C.table1_verdict(_t1(het=0.45, aug=0.03)))
    assert {"t1-aug-het-map", "t1-aug-het-top5", "t1-gap-closes"}.isdisjoint(got)
    assert got["t1-het-map"].outcome == NM  # the rows that learned are still decided
    assert got["t1-learned"].outcome == BROKE and got["t1-learned"].ours == "collapsed: Tri + Aug (mAP 3.00 ± 0.04)"


def test_a_top5_at_the_ceiling_is_a_sanity_check_and_is_not_counted():
    v = C.table1_verdict(_t1(top5=0.995))
    got = _by_id(v)
    assert {c.row_id for c in v.checks} == {"t1-het-top5-ceiling", "t1-aug-het-top5-ceiling", "t1-std"}
    assert "t1-het-top5" not in got and got["t1-het-top5-ceiling"].why.startswith("cannot fail")
    ok, bad, unsure = v.counts
    assert ok + bad + unsure == len(v.counted) == 4  # two mAP rows, the gap change and augmentation's gain
    assert "25k iterations" in C.table1_verdict(_t1(), [SimpleNamespace(steps=1500, preset="paper",
                                                                        train_seconds=60.0)]).markdown()


def test_one_run_gives_no_std_check_and_no_interval():
    got = _by_id(C.table1_verdict(_t1(runs=1)))
    assert "t1-std" not in got
    assert got["t1-het-map"].outcome == INC and "one run" in got["t1-het-map"].why


# ---------------------------------------------------------------------------- tables
def test_table1_side_by_side_compares_gaps_within_the_table_only():
    df = C.table1_side_by_side(_t1(het=0.49, aug_het=0.503))
    assert list(df.index) == list(TABLE1_ROWS)
    assert not any(c.startswith("Δ") for c in df.columns)  # no ours - DukeMTMC column
    assert df.loc["Tri + Hetero", "gap to"] == "Tri"
    assert df.loc["Tri + Hetero", "mAP gap ours"] == pytest.approx(-1.0)
    assert df.loc["Tri + Hetero", "mAP gap paper"] == pytest.approx(55.16 - 56.08)
    assert df.loc["Tri + Aug + Hetero", "top-5 gap paper"] == pytest.approx(86.20 - 86.11)
    assert math.isnan(df.loc["Tri", "mAP gap ours"]) and math.isnan(df.loc["Tri", "mAP gap paper"])
    assert df.loc["Tri", "mAP paper (DukeMTMC)"] == N.TABLE1["Tri"]["map"][0]
    assert df.loc["Tri + Aug + Hetero", "mAP ours"] == "50.30 ± 0.04"


def test_table2_side_by_side_compares_gaps_within_the_table_only():
    df = C.table2_side_by_side(_t2(unc=0.6227 + 0.0018))
    assert not any(c.startswith("Δ") for c in df.columns)
    assert df.loc["uncertainty cleaning 20%", "gap to"] == "Tri + Hetero on noisy"
    assert df.loc["uncertainty cleaning 20%", "gap ours"] == pytest.approx(0.18)
    assert df.loc["uncertainty cleaning 20%", "gap paper"] == pytest.approx(2.30)
    assert df.loc["Tri on noisy", "gap paper"] == pytest.approx(61.70 - 52.62)
    assert math.isnan(df.loc["clean subset only", "gap ours"])


def test_longtail_side_by_side():
    df = C.longtail_side_by_side(_lt())
    assert df.loc["micro", "Δ paper Table 3"] == pytest.approx(78.45 - 77.88)
    assert df.loc["tail", "Δ ours"] == pytest.approx(-5.0)
    assert math.isnan(df.loc["head", "Δ paper Table 4"])


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
    assert "noise_rate" not in N.CLOTHING1M  # the ~38% is Xiao et al. 2015's estimate, not Taha et al.'s
    # the table's paper values are the paper's gaps at the 2 decimals it prints
    paper = {r.id: r.paper for r in C.TABLE}
    assert paper["t1-gap-closes"] == 1.22 and paper["noise-cleaning"] == 2.24 and paper["lt-micro"] == (0.57, 1.7)


def test_the_mode_line_never_prints_a_missing_run_count_as_none():
    assert runs_text(False, None) == "FULL mode: 5 run(s) per row (the paper's 5)"
    assert runs_text(True, None) == "FAST mode: 1 run(s) per row (FAST default)"
    assert runs_text(False, 3) == "FULL mode: 3 run(s) per row (set by RUNS)"
