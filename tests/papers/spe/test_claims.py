"""hedgekit.papers.spe.claims: every claim of notebooks 06-07 driven to each outcome it can give by constructed
numbers (table-driven)."""
import numpy as np
import pytest

import hedgekit.papers.spe.protocol as Z
from hedgekit.papers.spe import claims as P
from hedgekit.papers.spe import numbers as N

CONDS = list(N.CONDITION_NAMES.values())


def _by(v):
    return {c.claim: c for c in v.claims}


# ---------------------------------------------------------------------------- notebook 06
def _ls(**over):
    o, h = np.meshgrid(np.linspace(90, 180, 5), np.linspace(90, 180, 5))
    var = np.full((5, 5, 2), 0.1)
    var[:, 2, 0], var[2, :, 1] = 0.4, 0.4
    axes = Z.factor_axes(np.stack([o, h], -1), o, h)
    stats = dict(acc={2: (0.855, 0.003)}, bayes=0.8708, oracle={2: 0.8597}, axes=axes,
                 peaks=Z.ambiguity_peaks(var, axes["axis"]), axis=axes["axis"], noise=np.array([1.0, 2.0]),
                 legs=np.array([1.8, 1.9]))
    stats.update(over)
    return stats


def _flat_peaks():
    o, h = np.meshgrid(np.linspace(90, 180, 5), np.linspace(90, 180, 5))
    axes = Z.factor_axes(np.stack([o, h], -1), o, h)
    return Z.ambiguity_peaks(np.full((5, 5, 2), 0.1), axes["axis"])


def _rotated_axes():
    o, h = np.meshgrid(np.linspace(90, 180, 5), np.linspace(90, 180, 5))
    z = np.stack([o + h, o - h], -1) / np.sqrt(2)  # 45° rotated
    return Z.factor_axes(z, o, h)


ACC = "sec. 4.1: held-out accuracy of the 2D SPE ≈ 86%"
BAYES = "sec. 4.1: the SPE is close to the Bayes-optimal classifier (≈ 87%)"
DIS = "Figure 2c: the two generative factors are disentangled onto the two embedding axes"
PEAK = "Figure 2c: instances halfway between two classes on one dimension have maximal variance along it"
NOISE = "Figure 3 (left): more hue noise → more variance on the hue axis, not on the orientation axis"
LEGS = "Figure 3 (right): shorter legs → more variance on both axes"


@pytest.mark.parametrize("stats, claim, outcome", [
    (_ls(), ACC, "matched"),
    (_ls(acc={2: (0.70, 0.003)}), ACC, "not matched"),
    (_ls(), BAYES, "matched"),
    (_ls(oracle={}), BAYES, "not matched"),
    (_ls(), DIS, "matched"),
    (_ls(axes=_rotated_axes()), DIS, "not matched"),
    (_ls(), PEAK, "matched"),
    (_ls(peaks=_flat_peaks()), PEAK, "not matched"),
    (_ls(), NOISE, "matched"),
    (_ls(noise=np.array([1.0, 1.0])), NOISE, "not matched"),
    (_ls(), LEGS, "matched"),
    (_ls(legs=np.array([1.0, 1.9])), LEGS, "not matched"),
])
def test_notebook_06_claims_reach_every_outcome(stats, claim, outcome):
    assert _by(P.lshapes_verdict(stats))[claim].outcome == outcome


# ---------------------------------------------------------------------------- notebook 07
def _rows(acc, se=0.1):
    return [dict(method=m, N=2, D=2, split=s, condition=c, acc=acc(m, s, c), se=se)
            for m in ("PN", "SPE", "HIB (PN rule)", "HIB (SPE rule)", "point (PN rule)")
            for s in ("seen", "unseen") for c in CONDS]


def paper(m, s, c):
    return N.paper_table2(c, {"HIB (PN rule)": "HIB", "HIB (SPE rule)": "HIB", "point (PN rule)": "contrastive"}
                          .get(m, m), s, 2, 2)


VS = "Table 2 (N2D2), seen, corrupt S / clean Q: SPE vs PN"  # the paper: 92.4 vs 72.7 (+19.7)
ACC2 = "Table 2 SPE accuracy, seen, clean S / clean Q (N2D2)"
HIB6 = ("Figure 6b/c: SPE outperforms HIB in all six comparisons (our HIB through the better of the PN and SPE "
        "episode rules)")


def _shift(method, delta, base=paper):
    return lambda m, s, c: base(m, s, c) + (delta if m == method else 0.0)


@pytest.mark.parametrize("acc, se, claim, outcome", [
    (paper, 0.1, VS, "matched"),  # the paper's +19.7
    (_shift("SPE", -19.7), 0.1, VS, "not matched"),  # a precise zero: smaller than the paper
    (_shift("SPE", 40.0), 0.1, VS, "not matched"),  # +59.7: larger than the paper
    (_shift("SPE", -12.0), 4.0, VS, "inconclusive"),  # +7.7 ± 11.3: reaches the paper and 0
    (paper, 0.1, ACC2, "matched"),
    (_shift("SPE", -10.0), 0.1, ACC2, "not matched"),
    (paper, 0.1, HIB6, "matched"),  # the paper's own cells at N2D2: SPE above HIB in all six
    (_shift("SPE", -20.0), 0.1, HIB6, "not matched"),
])
def test_notebook_07_table2_claims_reach_every_outcome(acc, se, claim, outcome):
    v = P.ndigit_verdict(dict(table=_rows(acc, se), settings=((2, 2),)))
    c = _by(v)[claim]
    assert c.outcome == outcome
    if claim == VS:
        assert "one seed: evaluation noise only" in c.why


def _fig7(first=0.9, second=0.9, placed=1.0):
    return dict(eta2=np.array([[first, 0.05], [0.05, second]]), placement=dict(accuracy=placed, chance=0.01))


F7_AXES = "Figure 7: one axis codes the first digit, the other the second (a factorial representation)"
F7_PLACE = "Figure 7: unseen classes are embedded exactly where they belong"
F4 = "Figure 4 analogue (2-digit MNIST, 1-shot 20-class): intersection s = 1 vs naive s = 9"
F4_EFF = ("Figure 4 analogue: the intersection sampler is the more sample-efficient one (above the naive sampler at "
          "equal s, averaged over s)")


def _f4(inter1=60.0, naive9=55.0, se=0.5, shift=5.0):
    return {"naive": dict(s=[1, 9], acc=[50.0, naive9], se=[se, se]),
            "intersection": dict(s=[1, 9], acc=[inter1, naive9 + shift], se=[se, se])}


@pytest.mark.parametrize("extra, claim, outcome", [
    (dict(fig7=_fig7()), F7_AXES, "matched"),
    (dict(fig7=_fig7(first=0.5)), F7_AXES, "not matched"),
    (dict(fig7=_fig7()), F7_PLACE, "matched"),
    (dict(fig7=_fig7(placed=0.1)), F7_PLACE, "not matched"),
    (dict(fig4=_f4()), F4, "matched"),
    (dict(fig4=_f4(inter1=45.0)), F4, "not matched"),
    (dict(fig4=_f4(inter1=55.2)), F4, "inconclusive"),
    (dict(fig4=_f4()), F4_EFF, "matched"),
    (dict(fig4=_f4(inter1=45.0, shift=-5.0)), F4_EFF, "not matched"),
    (dict(fig4=_f4(inter1=50.3, shift=0.3)), F4_EFF, "inconclusive"),
])
def test_notebook_07_figure_claims_reach_every_outcome(extra, claim, outcome):
    v = P.ndigit_verdict(dict(table=_rows(paper), settings=((2, 2),), **extra))
    assert _by(v)[claim].outcome == outcome


SEEDED = "Table 2 (N2D2), seen, corrupt S / clean Q: SPE vs PN over 3 / 3 trained seeds"  # the paper: +19.7


def _seeds(spe, pn):
    return {("seen", "corrupt S / clean Q"): {"SPE": list(spe), "PN": list(pn)}}


@pytest.mark.parametrize("seeds, outcome", [
    (_seeds([92.0, 92.5, 93.0], [72.5, 73.0, 72.0]), "matched"),  # +19.7 over seeds that agree
    (_seeds([73.0, 72.0, 73.5], [72.5, 73.0, 72.0]), "not matched"),  # a precise zero: smaller than the paper
    (_seeds([95.0, 60.0, 80.0], [72.5, 73.0, 72.0]), "inconclusive"),  # +5.7, seeds too spread to decide
])
def test_notebook_07_seeded_spe_vs_pn_reaches_every_outcome_on_the_seed_spread(seeds, outcome):
    v = P.ndigit_verdict(dict(table=_rows(paper, 0.1), settings=((2, 2),), seeds=seeds))
    c = _by(v)[SEEDED]
    assert c.outcome == outcome and "one seed" not in c.why
    assert VS in _by(v)  # the pooled one-seed claim stays beside it


def test_a_seeded_claim_needs_two_seeds_of_each_and_seed_accuracies_groups_rows_by_seed():
    v = P.ndigit_verdict(dict(table=_rows(paper, 0.1), settings=((2, 2),), seeds=_seeds([92.0], [72.0, 73.0])))
    assert not any("trained seeds" in name for name in _by(v))
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
    paper = N.paper_table2(cond, "SPE", "seen", 2, 2) - N.paper_table2(cond, "PN", "seen", 2, 2)
    assert row["paper gap"] == pytest.approx(paper)
    one = t.loc[("unseen", "clean S / clean Q")]  # one PN seed: no spread, and no standard error of the gap
    assert one["PN seeds"] == 1 and np.isnan(one["PN ±"]) and np.isnan(one["gap se"])
    assert one["SPE − PN"] == pytest.approx(1.5)
