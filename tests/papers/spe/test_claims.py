"""hedgekit.papers.spe.claims: every row of the claims tables of notebooks 06-07 driven to each outcome its kind and
noise allow, through the notebook-facing functions, on hand-built numbers (no trained model).

Oracles: the paper's own cells (a gap equal to the paper's lies in its band), hand-computed t intervals over three
seeds (t(0.975, 2) = 4.303), and the review's case of SPE seeded, seen clean/clean (+6.27, se 0.83, three seeds)."""
import dataclasses
import math

import numpy as np
import pytest

import hedgekit.papers.spe.protocol as Z
from hedgekit.errors import InputError
from hedgekit.papers.spe import claims as P
from hedgekit.papers.spe import experiments as X
from hedgekit.papers.spe import numbers as N
from hedgekit.papers.verdict import (COUNTED, EVALUATION, LEVEL, NARROW, SANITY, SEEDS, SIZE, factor_band,
                                     training_context)

CONDS = list(N.CONDITION_NAMES.values())
ONE_MODEL = "one trained model"


def _by(v):
    return {c.row_id: c for c in v.claims}


# ---------------------------------------------------------------------------- the tables themselves
ALL = ((2, 2), (2, 3), (3, 2), (3, 3))
TABLES = [P.LSHAPES, P.ndigit_table(((2, 2),)), P.ndigit_table(ALL),
          P.ndigit_table(ALL, frozenset((s, c) for s in ("seen", "unseen") for c in CONDS)),
          P.ndigit_table(ALL, *2 * (frozenset((s, c) for s in ("seen", "unseen") for c in CONDS),))]


@pytest.mark.parametrize("table", TABLES)
def test_every_counted_row_declares_its_band_with_a_reason_and_its_noise(table):
    counted = [r for r in table if r.kind in COUNTED]
    assert counted and len({r.id for r in table}) == len(table)
    for r in counted:
        low, high = r.declared_band()
        assert r.reason.strip() and low < high and r.noise in (SEEDS, EVALUATION)
        assert low <= r.paper <= high  # a band around the paper's value
    for r in table:
        assert r.kind in COUNTED + (SANITY,) and r.reason.strip()
    with pytest.raises(InputError, match="declares its band"):
        dataclasses.replace(counted[0], reason=" ")


def test_table2_gaps_are_sized_by_half_to_twice_the_papers():
    gap = {r.id: r for r in P.ndigit_table(((2, 2),))}["gap pooled seen corrupt S / clean Q"]
    assert gap.kind == SIZE and gap.paper == 19.7 and gap.declared_band() == pytest.approx((9.85, 39.4))
    assert gap.noise == EVALUATION  # one trained model per setting


def test_a_tie_in_the_papers_cells_is_a_sanity_check_not_a_band_around_zero():
    """A band around a tie would match a null result (the band policy): the tied cell is shown, not counted."""
    # unseen, corrupt S / clean Q at N2D3: SPE 86.3 vs PN 86.3
    (gap,) = [r for r in P.ndigit_table(((2, 3),)) if r.id == "gap pooled unseen corrupt S / clean Q"]
    assert gap.kind == "sanity" and "tie" in gap.reason
    with pytest.raises(InputError, match="nonzero"):
        factor_band(0.0)


# ---------------------------------------------------------------------------- notebook 06
def _axes(rotated=False):
    o, h = np.meshgrid(np.linspace(90, 180, 5), np.linspace(90, 180, 5))
    z = np.stack([o + h, o - h], -1) / np.sqrt(2) if rotated else np.stack([o, h], -1)  # 45° rotated
    return Z.factor_axes(z, o, h)


def _ls(**over):
    axes = _axes()
    var = np.full((5, 5, 2), 0.1)
    var[:, 2, 0], var[2, :, 1] = 0.4, 0.4
    stats = dict(acc={2: (0.855, 0.003), 50: (0.873, 0.001)}, bayes=0.8708, axes=axes,
                 peaks=Z.ambiguity_peaks(var, axes["axis"]), axis=axes["axis"], noise=np.array([1.0, 2.0]),
                 legs=np.array([1.8, 1.9]))
    stats.update(over)
    return stats


@pytest.mark.parametrize("acc, where", [(0.855, "lies inside the band [+84.0, +88.0]"),  # 85.5 ± 0.6
                                        (0.70, "lies below the band"),
                                        (0.87, "overlaps the band [+84.0, +88.0] around")])  # 87.0 ± 2 x 0.6
def test_heldout_accuracy_is_a_level_of_one_trained_model_so_it_is_never_matched(acc, where):
    c = _by(P.lshapes_verdict(_ls(acc={2: (acc, 0.003 if acc != 0.87 else 0.006)})))["heldout"]
    assert c.kind == LEVEL and c.noise == EVALUATION and c.outcome == "inconclusive"
    assert c.why.startswith(ONE_MODEL) and where in c.why and "± 2 points" in c.why
    assert c.band == (84.0, 88.0) and c.paper_value == 86.0


@pytest.mark.parametrize("acc, where", [(0.8608, "lies inside the band [+0.0, +2.0]"),  # 87.08 - 86.08 = 1.0
                                        (0.80, "lies above the band"),  # 7.1 points short
                                        (0.855, "overlaps the band")])  # 1.58 ± 0.6
def test_the_gap_to_bayes_is_a_level_of_one_trained_model_within_the_rounding_of_the_papers_percents(acc, where):
    c = _by(P.lshapes_verdict(_ls(acc={2: (acc, 0.003)})))["bayes-gap"]
    assert c.outcome == "inconclusive" and c.why.startswith(ONE_MODEL) and where in c.why
    assert c.interval == pytest.approx((100 * (0.8708 - acc) - 0.6, 100 * (0.8708 - acc) + 0.6))


def test_with_trained_seeds_the_two_sizes_are_decided_over_them_and_the_one_models_rows_step_aside():
    seeds = [85.5, 86.0, 86.5]  # mean 86.0, SD 0.5: t(0.975, 2) x 0.5 / sqrt(3) = 1.242
    by = _by(P.lshapes_verdict(_ls(seeds=seeds, seed_source="3 seeds: 1 from a checkpoint on this machine, 2 from "
                                                            "the ledger (trained on cpu, recorded 2026-11-29)")))
    assert "heldout" not in by and "bayes-gap" not in by  # counted once: on the seeds
    level, gap = by["heldout.seeds"], by["bayes-gap.seeds"]
    half = 4.3027 * 0.5 / np.sqrt(3)
    assert level.interval == pytest.approx((86.0 - half, 86.0 + half), abs=1e-3) and level.outcome == "matched"
    assert "3 runs" in level.ours and "2 from the ledger" in level.ours
    assert gap.interval == pytest.approx((87.08 - 86.0 - half, 87.08 - 86.0 + half), abs=1e-3)
    assert gap.outcome == "inconclusive"  # [-0.16, +2.32] straddles the band's edges [0, 2]
    one = _by(P.lshapes_verdict(_ls(seeds=[86.0])))  # one seed has no spread: the one model's rows decide
    assert "heldout" in one and "heldout.seeds" not in one and "bayes-gap" in one


def test_the_lshapes_seeds_are_read_as_recorded_and_the_missing_ones_named():
    specs = X.lshapes_seed_specs()
    assert [s.seed for s in specs] == [0, 1, 2] and specs[0].name == "spe-lshapes-d2-intersection8-paper-s0"
    assert [s.name for s in X.notebook_specs("06", False)] == [s.name for s in specs]
    assert [s.name for s in X.notebook_specs("06", True)] == ["spe-lshapes-d2-intersection8-fast-s0"]
    metas = {0: {"metrics": {"heldout_acc": 0.86}}, 2: {"metrics": {"heldout_acc": 0.87}, "source": "ledger",
                                                        "device": "cpu", "date": "2026-11-29"}}
    accs, missing, source = X.recorded_lshapes_seeds(lambda spec: metas.get(spec.seed))
    assert accs == pytest.approx([86.0, 87.0]) and missing == [specs[1].name]
    assert source == "2 seeds: 1 from a checkpoint on this machine, 1 from the ledger (trained on cpu, recorded " \
                     "2026-11-29)"


def test_without_the_papers_support_count_the_accuracy_rows_are_left_out():
    v = P.lshapes_verdict(_ls(acc={50: (0.873, 0.001)}))
    assert "heldout" not in _by(v) and "bayes-gap" not in _by(v) and v.counts == (0, 0, 0)


def _flat_peaks():
    return Z.ambiguity_peaks(np.full((5, 5, 2), 0.1), _axes()["axis"])


@pytest.mark.parametrize("row, failing", [
    ("fig2c-axes", dict(axes=_axes(rotated=True))),
    ("fig2c-peak", dict(peaks=_flat_peaks())),
    ("fig3-noise", dict(noise=np.array([1.0, 1.0]))),  # neither axis grows
    ("fig3-noise", dict(noise=np.array([2.0, 2.0]))),  # both grow: not the hue axis alone
    ("fig3-legs", dict(legs=np.array([1.0, 1.9]))),  # only the hue axis grows
])
def test_figure_2c_and_3_shapes_are_sanity_checks_that_pass_and_fail(row, failing):
    good, bad = _by(P.lshapes_verdict(_ls()))[row], _by(P.lshapes_verdict(_ls(**failing)))[row]
    assert good.outcome == "sanity check passed" and bad.outcome == "sanity check failed"
    assert good.kind == SANITY and ("no number" in good.why or "no size" in good.why)


def test_lshapes_tally_counts_no_sanity_check_and_the_notes_say_what_the_numbers_show():
    v = P.lshapes_verdict(_ls(oracle={2: 0.8597}, bayes_test=0.8738))
    assert v.counts == (0, 0, 2) and v.noise_counts == (0, 2) and len(v.checks) == 4
    assert any("reach 86.0%, 1.1 points below Bayes (87.1%)" in n for n in v.notes)
    assert any("own factors: 87.4%" in n for n in v.notes)
    assert "500,000" not in v.markdown() and "sanity check(s) listed apart, 4 passed" in v.markdown()


def test_a_failed_figure_3_check_is_explained_in_a_note_from_the_readout_accuracy_and_shift():
    keep = dict(level=np.array([0.0, 54.0]), orientation_error=np.array([0.0, 0.0]), hue_error=np.array([0.0, 2.5]),
                accuracy=np.array([0.8708, 0.8702]))
    lose = dict(keep, orientation_error=np.array([0.0, 25.0]), accuracy=np.array([0.8708, 0.80]))
    v = P.lshapes_verdict(_ls(noise=np.array([1.0, 0.7]), legs=np.array([1.0, 1.0]), noise_readout=keep,
                              legs_readout=lose, noise_acc=(0.86, 0.855), legs_acc=(0.90, 0.60), noise_shift=0.1,
                              legs_shift=0.8))
    noise, legs = v.notes
    assert noise.startswith("Figure 3 (left)") and "the pixels keep both factors" in noise
    assert "0.0° (orientation) and 2.5° (hue)" in noise and "from 87.1% to 87.0%" in noise
    assert "as accurately" in noise and "0.10 class spacings" in noise  # nothing to hedge
    assert "the pixels lose evidence" in legs and "drops from 87.1% to 80.0%" in legs
    assert "classified worse (90.0% → 60.0%)" in legs and "moved, not hedged" in legs
    assert P.lshapes_verdict(_ls()).notes == []  # nothing failed, nothing to explain


# ---------------------------------------------------------------------------- notebook 07: Table 2
def _rows(acc, se=0.1, settings=((2, 2),)):
    return [dict(method=m, N=n, D=d, split=s, condition=c, acc=acc(m, s, c, n, d), se=se)
            for m in ("PN", "SPE", "HIB (PN rule)", "HIB (SPE rule)", "point (PN rule)")
            for s in ("seen", "unseen") for c in CONDS for n, d in settings]


def paper(m, s, c, n=2, d=2):
    return N.paper_table2(c, {"HIB (PN rule)": "HIB", "HIB (SPE rule)": "HIB", "point (PN rule)": "contrastive"}
                          .get(m, m), s, n, d)


def _shift(method, delta):
    return lambda m, s, c, n, d: paper(m, s, c, n, d) + (delta if m == method else 0.0)


GAP = "gap pooled seen corrupt S / clean Q"  # the paper: 92.4 vs 72.7 (+19.7)
LEVEL_ROW = "level pooled seen corrupt S / clean Q"


@pytest.mark.parametrize("acc, where", [(paper, "lies inside"), (_shift("SPE", -19.7), "lies below"),
                                        (_shift("SPE", 40.0), "lies above")])
def test_pooled_table2_rows_have_one_trained_model_per_setting_so_they_are_never_matched(acc, where):
    by = _by(P.ndigit_verdict(dict(table=_rows(acc), settings=((2, 2),))))
    for row in (GAP, LEVEL_ROW):
        c = by[row]
        assert c.outcome == "inconclusive" and c.noise == EVALUATION and c.why.startswith(ONE_MODEL)
        assert f"{where} the band" in c.why and c.claim.startswith("Table 2 (N2D2): ")
    assert by[GAP].paper == "SPE 92.4 vs PN 72.7 (+19.7)" and by[GAP].interval[0] < by[GAP].interval[1]


def _seeds(spe, pn, cell=("seen", "corrupt S / clean Q")):
    return {cell: {"SPE": list(spe), "PN": list(pn)}}


SEEDED_GAP, SEEDED_LEVEL = "gap seeds seen corrupt S / clean Q", "level seeds seen corrupt S / clean Q"
PN3 = [72.5, 73.0, 72.0]


@pytest.mark.parametrize("spe, pn, outcome, where", [
    ([92.0, 92.5, 93.0], PN3, "matched", "lies inside"),  # +19.83 ± 4.303 x 0.41
    ([73.0, 72.0, 73.5], PN3, "not matched", "lies below"),  # a precise zero
    ([99.0, 99.5, 99.2], [52.0, 52.5, 51.8], "not matched", "lies above"),  # +47.1: over twice the paper's
    ([95.0, 60.0, 80.0], PN3, "inconclusive", "seeds per arm"),  # +5.7, seeds too spread to decide
])
def test_the_seeded_table2_gap_is_decided_on_its_size_over_the_trained_seeds(spe, pn, outcome, where):
    c = _by(P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),), seeds=_seeds(spe, pn))))[SEEDED_GAP]
    assert c.outcome == outcome and where in c.why and c.noise == SEEDS and ONE_MODEL not in c.why
    assert "3 runs" in c.ours and c.claim.startswith("Table 2 (N2D2, over trained seeds): ")
    mean = np.mean(spe) - np.mean(pn)
    se = math.sqrt(np.var(spe, ddof=1) / 3 + np.var(pn, ddof=1) / 3)
    assert c.interval == pytest.approx((mean - 4.302653 * se, mean + 4.302653 * se))


def test_the_reviews_seeded_clean_gap_of_three_times_the_paper_is_inconclusive_not_matched():
    # SPE 88.043 ± 0.295, PN 81.770 ± 1.407 over 3 seeds: +6.27 [2.70, 9.84] against the paper's +1.9 [0.95, 3.8]
    spe, pn = [88.043 - 0.295, 88.043, 88.043 + 0.295], [81.770 - 1.407, 81.770, 81.770 + 1.407]
    cell = ("seen", "clean S / clean Q")
    c = _by(P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),), seeds=_seeds(spe, pn, cell))))
    c = c["gap seeds seen clean S / clean Q"]
    assert c.outcome == "inconclusive" and "[+2.70, +9.84]" in c.why and "[+0.95, +3.80]" in c.why
    assert "about 4 seeds per arm would decide at the observed spread (ours: 3)" in c.why  # 6.27 - 3.8 > t x sd / 2


@pytest.mark.parametrize("spe, outcome", [([92.0, 92.5, 93.0], "matched"), ([80.0, 80.5, 81.0], "not matched"),
                                          ([95.0, 60.0, 80.0], "inconclusive")])
def test_the_seeded_spe_accuracy_is_a_level_within_three_points_over_the_seeds(spe, outcome):
    c = _by(P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),), seeds=_seeds(spe, PN3))))[SEEDED_LEVEL]
    assert c.outcome == outcome and c.band == pytest.approx((89.4, 95.4)) and c.noise == SEEDS


def test_one_seed_each_gives_no_interval_so_the_seeded_rows_are_inconclusive():
    by = _by(P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),), seeds=_seeds([92.0], [72.0]))))
    assert all(by[r].outcome == "inconclusive" and "with one run there is no interval" in by[r].why
               for r in (SEEDED_GAP, SEEDED_LEVEL))


def test_each_table2_comparison_is_counted_once_seeded_at_n2d2_and_the_other_settings_pooled():
    settings = ((2, 2), (3, 3))
    stats = dict(table=_rows(paper, settings=settings), settings=settings)
    v = P.ndigit_verdict(stats)
    # seen clean S / clean Q pooled over N2D2, N3D3 ties in the paper (91.0 vs 90.8): a sanity check, not counted;
    # each of the 6 cells has its SPE and its PN level
    assert len(v.counted) == 17 and _by(v)[GAP].claim.startswith("Table 2 (N2D2, N3D3): ")
    assert _by(v)["gap pooled seen clean S / clean Q"].kind == "sanity"
    assert _by(v)[GAP].paper == "SPE 90.1 vs PN 77.7 (+12.4)"  # (92.4 + 87.8) / 2 vs (72.7 + 82.7) / 2
    v = P.ndigit_verdict(dict(stats, seeds=_seeds([92.0, 92.5, 93.0], PN3)))
    by = _by(v)
    assert len(v.counted) == 20 and by[GAP].claim.startswith("Table 2 (N3D3): ") and SEEDED_GAP in by
    assert by[GAP].paper == "SPE 87.8 vs PN 82.7 (+5.1)" and v.noise_counts == (3, 17)
    unseeded = by["gap pooled unseen corrupt S / clean Q"]  # no seeds for this cell: N2D2 stays pooled
    assert unseeded.claim.startswith("Table 2 (N2D2, N3D3): ")
    only = P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),), seeds=_seeds([92.0, 92.5, 93.0], PN3)))
    assert GAP not in _by(only) and SEEDED_GAP in _by(only) and len(only.counted) == 18


def test_seed_accuracies_over_several_settings_average_each_seed_and_drop_a_seed_that_misses_one():
    """The paper's MEAN column per seed: a seed's mean over the settings, kept only where it has all of them."""
    def row(m, n, d, acc):
        return dict(method=m, N=n, D=d, split="seen", condition="clean S / clean Q", acc=acc, se=0.1)

    rows = [[row("SPE", 2, 3, 90.0), row("SPE", 3, 3, 80.0), row("PN", 2, 3, 70.0), row("PN", 3, 3, 60.0),
             row("SPE", 2, 2, 99.0)],
            [row("SPE", 2, 3, 92.0), row("SPE", 3, 3, 84.0), row("PN", 2, 3, 71.0)],  # its PN lacks N3D3
            [row("SPE", 3, 3, 81.0)]]  # its SPE lacks N2D3
    cell = ("seen", "clean S / clean Q")
    assert P.seed_accuracies(rows, ((2, 3), (3, 3))) == {cell: {"SPE": [85.0, 88.0], "PN": [65.0]}}
    stats = P.seed_stats(rows, ((2, 2), (2, 3), (3, 3)))
    assert stats["seeds"] == {cell: {"SPE": [99.0]}} and stats["pooled_seeds"][cell]["SPE"] == [85.0, 88.0]
    assert P.seed_stats(rows, ((2, 2),)) == {"seeds": {cell: {"SPE": [99.0]}}, "pooled_seeds": {}}


POOLED = ((2, 3), (3, 2), (3, 3))


def _pooled_seeds(spe, pn, cell=("seen", "corrupt S / clean Q")):
    return {cell: {"SPE": list(spe), "PN": list(pn)}}


@pytest.mark.parametrize("spe, pn, outcome", [
    ([88.0, 87.5, 88.5], [75.0, 74.0, 76.0], "matched"),  # +13.0 over 3 seeds, the paper's mean gap +12.6
    ([75.0, 74.5, 75.5], [75.0, 74.0, 76.0], "not matched"),  # no gap: a null result
])
def test_the_pooled_settings_are_decided_over_the_seeds_held_at_every_one_of_them(spe, pn, outcome):
    """Two or more seeds at every pooled setting turn the pooled rows from one trained model per setting into a
    t interval over the seeds' means; one seed leaves them on the episodes (never matched)."""
    settings = ((2, 2),) + POOLED
    stats = dict(table=_rows(paper, settings=settings), settings=settings, seeds=_seeds([92.0, 92.5, 93.0], PN3),
                 pooled_seeds=_pooled_seeds(spe, pn), seed_source="3 seeds: 3 from the ledger")
    v = P.ndigit_verdict(stats)
    c = _by(v)[GAP]
    assert c.outcome == outcome and c.noise == SEEDS and c.claim.startswith("Table 2 (N2D3, N3D2, N3D3, over trained")
    assert "3 runs" in c.ours and "seed-to-seed spread of the mean over N2D3, N3D2, N3D3" in c.ours
    assert c.paper == "SPE 86.1 vs PN 73.5 (+12.6)"
    se = math.sqrt(np.var(spe, ddof=1) / 3 + np.var(pn, ddof=1) / 3)
    mean = np.mean(spe) - np.mean(pn)
    assert c.interval == pytest.approx((mean - 4.302653 * se, mean + 4.302653 * se))
    assert _by(v)["gap pooled unseen corrupt S / clean Q"].noise == EVALUATION  # no seeds for that cell
    assert any("3 seeds: 3 from the ledger" in n for n in v.notes)
    one = _by(P.ndigit_verdict(dict(stats, pooled_seeds=_pooled_seeds(spe[:1], pn))))[GAP]
    assert one.noise == EVALUATION and one.why.startswith(ONE_MODEL)


def test_a_pooled_row_needs_every_setting_it_pools_and_a_nan_accuracy_reads_as_no_interval():
    v = P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2), (3, 3))))  # N3D3 not run
    assert not v.counted and [c.row_id for c in v.checks] == []
    nan = _rows(lambda m, s, c, n, d: math.nan if m == "SPE" else paper(m, s, c, n, d))
    by = _by(P.ndigit_verdict(dict(table=nan, settings=((2, 2),))))
    assert by[GAP].outcome == "inconclusive" and "no interval" in by[GAP].why
    assert "fig6-hib" not in by  # no comparison could be made: left out


# ---------------------------------------------------------------------------- notebook 07: Figures 4, 6b/c, 7
def _fig7(first=0.9, second=0.9, placed=1.0):
    return dict(eta2=np.array([[first, 0.05], [0.05, second]]), placement=dict(accuracy=placed, chance=0.01))


def _f4(inter1=60.0, naive9=55.0, se=0.5, shift=5.0):
    return {"naive": dict(s=[1, 9], acc=[50.0, naive9], se=[se, se]),
            "intersection": dict(s=[1, 9], acc=[inter1, naive9 + shift], se=[se, se])}


@pytest.mark.parametrize("row, good, bad", [
    ("fig6-hib", dict(), dict(table=_rows(_shift("SPE", -20.0)))),
    ("fig7-axes", dict(fig7=_fig7()), dict(fig7=_fig7(first=0.5))),
    ("fig7-axes", dict(fig7=_fig7()), dict(fig7=dict(_fig7(), eta2=np.array([[0.9, 0.9], [0.05, 0.05]])))),
    ("fig7-place", dict(fig7=_fig7()), dict(fig7=_fig7(placed=0.1))),
    ("fig4-s1", dict(fig4=_f4()), dict(fig4=_f4(inter1=45.0))),  # 60 vs 55 ± 2 x 0.71; 45 vs 55
    ("fig4-s1", dict(fig4=_f4()), dict(fig4=_f4(inter1=55.2))),  # +0.2: the interval contains 0
    ("fig4-efficiency", dict(fig4=_f4()), dict(fig4=_f4(inter1=45.0, shift=-5.0))),
    ("fig4-efficiency", dict(fig4=_f4()), dict(fig4=_f4(inter1=50.3, shift=0.3))),  # +0.3 ± 0.71
])
def test_figure_claims_are_sanity_checks_that_pass_and_fail(row, good, bad):
    base = dict(table=_rows(paper), settings=((2, 2),))
    ok, fail = (_by(P.ndigit_verdict({**base, **over}))[row] for over in (good, bad))
    assert ok.outcome == "sanity check passed" and fail.outcome == "sanity check failed" and ok.kind == SANITY


def test_figure_4_reads_the_replications_with_a_t_interval_over_the_runs():
    runs = [dict(sampler=smp, s=s, acc=a + (s == 81) * 10.0, se=0.2)
            for smp, base in (("naive", 60.0), ("intersection", 61.0)) for s in (1, 81) for a in (base - 1, base + 1)]
    by = _by(P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),), fig4=Z.fig4_curves(runs))))
    s1, eff = by["fig4-s1"], by["fig4-efficiency"]
    # intersection s = 1: 61 ± 1 (sem of 2 runs) vs naive s = 81: 70 ± 1; t(0.975, 1) = 12.706
    assert s1.outcome == "sanity check failed" and "naive s = 81: -9.0" in s1.ours and "2 runs" in s1.ours
    assert "[-27.0, +9.0]" in s1.ours  # -9 ± 12.706 x sqrt(2)
    assert eff.outcome == "sanity check failed" and "mean over s = 1, 81 (+1.0, +1.0)" in eff.ours
    assert "No trained model" in P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),))).markdown()


def test_figure_rows_are_left_out_when_not_measured_and_the_tally_counts_no_sanity_check():
    v = P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),), fig4=_f4(), fig7=_fig7()))
    assert [c.row_id for c in v.checks] == ["fig6-hib", "fig7-axes", "fig7-place", "fig4-s1", "fig4-efficiency"]
    assert v.counts == (0, 0, 18) and "Omniglot" in v.markdown()  # 6 cells x (gap, SPE level, PN level)
    bare = P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),)))
    assert [c.row_id for c in bare.checks] == ["fig6-hib"]


# ---------------------------------------------------------------------------- Table 2 and seed tables
def test_table2_side_by_side_differences():
    rows = _rows(lambda m, s, c, n, d: 50.0 + len(m))
    df = P.table2_side_by_side(rows, ((2, 2),))
    cond = "corrupt S / clean Q"
    assert df.loc[(cond, "SPE", "paper"), "seen N2D2"] == 92.4
    assert df.loc[(cond, "SPE", "ours: SPE"), "seen N2D2"] == 53.0
    assert df.loc[(cond, "SPE", "Δ SPE"), "seen N2D2"] == pytest.approx(53.0 - 92.4)
    assert df.loc[(cond, "contrastive", "ours: point (PN rule)"), "unseen N2D2"] == 50.0 + len("point (PN rule)")
    assert ("clean S / clean Q", "HIB", "Δ HIB (SPE rule)") in df.index
    two = P.table2_side_by_side([dict(r, D=3) for r in rows] + rows, ((2, 2), (2, 3)))
    assert "seen mean" in two.columns


def test_spe_verdict_replaces_hibs_training_context():
    from hedgekit.repro.session import CheckpointRecord

    rec = CheckpointRecord("spe-n2-d2-intersection1-fast-s0", "cache", "", "abc", "fast", 300, 20.0)
    md = P.SPEVerdict("x", [rec]).markdown()
    assert training_context([rec]) not in md and "300 training steps" in md and "FAST mode" in md


def test_seed_accuracies_groups_rows_by_seed_at_the_seeded_setting():
    rows = [[dict(method=m, N=n, D=2, split="seen", condition="clean S / clean Q", acc=acc + s, se=0.1)
             for m, acc in (("SPE", 90.0), ("PN", 85.0), ("HIB (PN rule)", 80.0)) for n in (2, 3)]
            for s in range(3)]
    assert P.seed_accuracies(rows) == {("seen", "clean S / clean Q"): {"SPE": [90.0, 91.0, 92.0],
                                                                       "PN": [85.0, 86.0, 87.0]}}


def test_seed_table_shows_each_methods_seed_mean_and_spread_and_the_gap_beside_the_papers():
    seeds = {**_seeds([92.0, 93.0, 94.0], [72.0, 73.0, 77.0]),
             ("unseen", "clean S / clean Q"): {"SPE": [80.0, 81.0], "PN": [79.0]}}
    t = P.seed_table(seeds)
    assert list(t.index) == [("seen", "corrupt S / clean Q"), ("unseen", "clean S / clean Q")]
    row = t.loc[("seen", "corrupt S / clean Q")]
    assert row["SPE mean"] == pytest.approx(93.0) and row["SPE ±"] == pytest.approx(1.0) and row["SPE seeds"] == 3
    assert row["PN mean"] == pytest.approx(74.0) and row["PN ±"] == pytest.approx(np.std([72, 73, 77], ddof=1))
    assert row["SPE − PN"] == pytest.approx(19.0)
    assert row["gap se"] == pytest.approx(np.sqrt(1.0 / 3 + np.var([72, 73, 77], ddof=1) / 3))
    cond = "corrupt S / clean Q"
    paper_gap = N.paper_table2(cond, "SPE", "seen", 2, 2) - N.paper_table2(cond, "PN", "seen", 2, 2)
    assert row["paper gap"] == pytest.approx(paper_gap)
    one = t.loc[("unseen", "clean S / clean Q")]  # one PN seed: no spread, and no standard error of the gap
    assert one["PN seeds"] == 1 and np.isnan(one["PN ±"]) and np.isnan(one["gap se"])
    assert one["SPE − PN"] == pytest.approx(1.5)
