"""hedgekit.papers.verdict: rendering of computed verdicts and the noise rules."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hedgekit.errors import InputError  # noqa: E402
from hedgekit.papers import verdict as V  # noqa: E402

RNG = np.random.default_rng(0)


def test_verdict_rendering_and_noise():
    from hedgekit.papers import verdict as V

    v = V.Verdict("t")
    v.add("a | b", "1", "2", True)
    v.add("c", "1", "2", False, "because")
    v.add("d", "1", "2", None, "noise")
    md = v.markdown()
    assert "**1 matched, 1 not matched, 1 inconclusive**" in md and "a \\| b" in md
    assert "| ❌ | c | 1 | 2 | because |" in md
    assert V.binomial_se_diff(0.5, 100, 0.5, 100) == pytest.approx(math.sqrt(0.005))
    # HIB's claims (Tables 1 and 5 on evaluation repeats, the binomial noise of KNN) are tested as rows of its claims
    # table in tests/papers/hib/test_claims.py


def test_training_seconds_are_cpu_seconds_only_where_every_model_trained_on_a_cpu():
    from types import SimpleNamespace as NS

    from hedgekit.papers.verdict import training_seconds

    h100 = "cuda:0 (NVIDIA H100 80GB HBM3)"
    cpu = [NS(train_seconds=100.4, device="cpu"), NS(train_seconds=20.0, device="")]  # "": shipped, not recorded
    assert training_seconds(cpu) == "120 CPU-seconds of training in total"
    assert training_seconds([NS(train_seconds=5.0)]) == "5 CPU-seconds of training in total"  # no device field
    gpu = [NS(train_seconds=300.0, device=h100), NS(train_seconds=30.6, device=h100)]
    assert training_seconds(cpu + gpu) == ("120 CPU-seconds of training for the 2 trained on a CPU, 331 s of wall "
                                           f"time for the 2 trained on {h100}")
    assert training_seconds(gpu) == f"331 s of wall time for the 2 trained on {h100}"
    assert training_seconds(gpu + [NS(train_seconds=1.0, device="mps")]) == (
        f"331 s of wall time for the 2 trained on {h100}, 1 s of wall time for the 1 trained on mps")


def test_models_paragraph_counts_models_steps_and_seconds_and_adds_the_fast_note_only_in_fast_mode():
    from types import SimpleNamespace as NS

    from hedgekit.papers.verdict import Verdict, models_paragraph

    full = [NS(steps=1500, preset="paper", train_seconds=55.4), NS(steps=3000, preset="paper", train_seconds=80.0)]
    txt = models_paragraph(full, "GPU training", "FAST!", setup="a LeNet")
    assert txt == ("2 model(s), preset paper: 1,500/3,000 training steps each, a LeNet, 135 CPU-seconds of "
                   "training in total (the paper: GPU training).")
    assert models_paragraph([NS(steps=10, preset="fast", train_seconds=1.0)], "p", "FAST!").endswith(" FAST!")
    assert models_paragraph([], "p", "FAST!") == "No trained model was used."

    class Custom(Verdict):
        def context(self) -> str:
            return "CONTEXT"

    assert "\nCONTEXT\n" in Custom("t", full).markdown()


# ------------------------------------------------------------------ effect sizes with an interval
def test_effect_interval_is_the_student_t_interval_of_the_runs():
    from scipy import stats

    from hedgekit.papers.verdict import as_effect

    vals = [1.0, 2.0, 4.0, 3.0]
    e = as_effect(vals)
    lo, hi = e.interval()
    ref = stats.t.interval(0.95, len(vals) - 1, loc=np.mean(vals), scale=stats.sem(vals))
    assert (lo, hi) == pytest.approx(ref)
    assert V.Effect(1.0, 0.5).interval() == pytest.approx((0.0, 2.0))  # a given (mean, se), n unknown: mean ± 2 se


def test_paired_effect_uses_the_per_run_differences_and_unpaired_both_spreads():
    from hedgekit.papers.verdict import Spread, paired_effect, unpaired_effect

    level = RNG.normal(0, 1.0, 6)  # the model's level moves between runs; the gain does not
    a, b = Spread(level + 2.3), Spread(level)
    p, u = paired_effect(a, b), unpaired_effect(a, b)
    assert p.mean == pytest.approx(2.3) and p.se == pytest.approx(0.0, abs=1e-12) and p.kind == "paired"
    assert u.se == pytest.approx(math.sqrt(2 * np.var(level, ddof=1) / 6))
    # a naive second implementation of the paired s.e.
    x, y = RNG.normal(0, 1, 5), RNG.normal(0, 1, 5)
    d = x - y
    assert paired_effect(Spread(x), Spread(y)).se == pytest.approx(d.std(ddof=1) / math.sqrt(5))
    with pytest.raises(Exception, match="same number"):
        paired_effect(Spread([1.0, 2.0]), Spread([1.0]))
    one = paired_effect(Spread([1.0]), Spread([0.5]))
    assert one.noise == "one seed: evaluation noise only" and not math.isfinite(one.interval()[0])


def test_sanity_checks_are_listed_apart_and_never_counted():
    from hedgekit.papers import verdict as V

    v = V.Verdict("t")
    v.add("real", "1", "1", True)
    v.sanity("by construction", "1", "1", True, "cannot fail")
    v.sanity("broken construction", "1", "2", False, "cannot fail")
    assert v.counts == (1, 0, 0)
    assert [c.outcome for c in v.claims] == ["matched", "sanity check passed", "sanity check failed"]
    md = v.markdown()
    assert ("**1 matched, 0 not matched** (computed from the numbers above, bands held to the policy; 0 decided on trained seeds; 0 on "
            "evaluation repeats only; 2 sanity check(s) listed apart, 1 passed).") in md
    head, checks = md.split("**Sanity checks**")
    assert "by construction" not in head and "| ✔ | by construction |" in checks
    assert "| ✘ | broken construction |" in checks


def test_one_vocabulary():
    from hedgekit.papers import verdict as V

    assert V.OUTCOMES == {True: "matched", False: "not matched", None: "inconclusive"}
    import pathlib

    import hedgekit

    root = pathlib.Path(hedgekit.__file__).parent / "papers"
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert "within noise" not in text and "untested" not in text, path


@pytest.mark.parametrize("band", [(1.0, 4.0), (-1.0, 1.0)])
def test_every_interval_reads_with_its_unit_or_with_none_and_never_a_double_blank(band):
    e = V.Effect(1.5, 0.2, 5)
    assert "our 95% interval [+0.94, +2.06] points (" in V.band_verdict(e, band, unit="points")[1]
    without = V.band_verdict(e, band, unit="")[1]
    assert "our 95% interval [+0.94, +2.06] (" in without and "  " not in without


@pytest.mark.parametrize("band", [(1.0, 4.0), (-0.5, 0.5)])
def test_an_interval_bound_near_zero_shows_its_sign_with_more_decimals(band):
    e = V.Effect(0.068, 0.0681 / 4.302652729911275, 3)  # 3 runs, t(2) = 4.3027: lower bound 0.068 - 0.0681
    text = V.band_verdict(e, band, unit="", digits=3)[1]
    assert "our 95% interval [-0.0001, +0.136] (" in text, text


# ----------------------------------------------------------------------- the rules, ties at a bound, wording
@dataclass(frozen=True)
class Fixed(V.Effect):
    """An effect whose 95% interval is given exactly, so that its ends can sit at, or one ulp off, a bound."""

    lo: float = 0.0
    hi: float = 0.0

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        return self.lo, self.hi


def fixed(lo: float, hi: float) -> Fixed:
    return Fixed((lo + hi) / 2, (hi - lo) / 4, 5, "paired", "seed-to-seed spread", lo=lo, hi=hi)


def _oracle(lo: float, hi: float, band) -> bool | None:
    """The decision rule at the top of verdict.py, restated: the band is closed."""
    low, high = band
    return True if low <= lo and hi <= high else False if hi < low or lo > high else None


def _check(band, lo: float, hi: float, digits: int) -> bool | None:
    """Run `band_verdict` and check that its outcome is the rule's on the raw numbers, and that the numbers its reason
    prints give the same outcome and words: read back, the interval and band decide as the raw ones did."""
    ok, why = V.band_verdict(fixed(lo, hi), band, digits=digits)
    assert ok is _oracle(lo, hi, band), (band, lo, hi, why)
    assert V.WORDS_OF_OUTCOME[ok] in why, why
    a, b = (float(x) for x in re.search(r"our 95% interval \[(\S+), (\S+)\]", why).groups())
    assert max(abs(a - lo), abs(b - hi)) <= 0.5 * 10 ** -digits + 1e-12, why  # at least ``digits`` decimals
    shown = tuple(float(x) for x in re.search(r"the band \[(\S+), (\S+)\]", why).groups())
    assert shown == tuple(band), why  # the declared bounds print exactly (they have few decimals here)
    if ok is False:
        assert (" lies below the band " in why) == (b < shown[0]) and (" lies above the band " in why) == (
            a > shown[1]), why
    assert _oracle(a, b, shown) is ok, why
    return ok


def _near(x: float) -> list[float]:
    """x, one ulp below and one ulp above it."""
    return [math.nextafter(x, -math.inf), x, math.nextafter(x, math.inf)]


BANDS = [(0.95, 3.8), (-0.025, 0.5), (-1.0, 1.0), (-0.02, 0.02), V.factor_band(2.30), V.factor_band(-0.5),
         V.factor_band(0.057), V.tolerance_band(0.76, 0.05)]


@pytest.mark.parametrize("band", BANDS)
def test_an_interval_end_at_one_ulp_inside_or_outside_each_bound_reads_as_it_is_decided(band):
    """Each end of the interval at each bound, exactly and one ulp either side, against the other end at every bound,
    one ulp off it, and far out: every outcome of the rule is reached, and none of the texts contradicts."""
    edges = list(band)
    others = sorted({x for e in edges for x in _near(e)} | {min(edges) - 7.0, max(edges) + 7.0, sum(edges) / 2})
    seen = set()
    for x in (x for e in edges for x in _near(e)):
        for y in others:
            for digits in (2, 3):
                seen.add(_check(band, min(x, y), max(x, y), digits))
    assert seen == {True, False, None}


def test_outcome_wording_and_printed_numbers_agree_on_random_intervals_and_bands():
    """A seeded loop (deterministic, writes nothing): random bands in thousandths, one interval end at a bound or one
    ulp off it, the other anywhere or at a bound."""
    rng = np.random.default_rng(46)
    for _ in range(1500):
        band = tuple(float(x) for x in sorted(rng.choice(np.arange(-4000, 4001), 2, replace=False) / 1000))
        x = float(rng.choice([x for e in band for x in _near(e)]))
        y = float(rng.choice(band)) if rng.random() < 0.3 else float(rng.uniform(-10, 10))
        digits = int(rng.choice([2, 3]))
        if band[1] - band[0] < 10.0 ** -digits:  # narrower than the printed precision: refused, not decided
            with pytest.raises(InputError, match="narrower than the measure's printed precision"):
                V.band_verdict(fixed(min(x, y), max(x, y)), band, digits=digits)
            continue
        _check(band, min(x, y), max(x, y), digits)


def test_the_issues_boundary_examples_no_longer_contradict_themselves():
    below = math.nextafter(1.15, 0)  # one ulp below half the paper's +2.30
    ok, why = V.band_verdict(fixed(-0.45, below), V.factor_band(2.30), paper=2.30)
    assert ok is False and "[-0.45, +1.1499999999999997] points" in why and "lies below the band [+1.15, +4.60]" in why
    ok, why = V.band_verdict(fixed(-0.45, 1.15), V.factor_band(2.30), paper=2.30)  # at the edge: it reaches the band
    assert ok is None and "[-0.45, +1.15] points" in why and "overlaps the band [+1.15, +4.60]" in why
    assert V.band_verdict(fixed(-1.0, 1.0), (-1.0, 1.0)) == (True, "our 95% interval [-1.00, +1.00] points (paired, "
                                                             "seed-to-seed spread) lies inside the band [-1.00, +1.00]")
    ok, why = V.band_verdict(fixed(math.nextafter(-1.0, -2), 1.0), (-1.0, 1.0))
    assert ok is None and "[-1.0000000000000002, +1.00]" in why
    ok, why = V.band_verdict(fixed(0.1, 0.1), (0.1, 1.0), unit="")
    assert ok is True and "[+0.10, +0.10] (paired, seed-to-seed spread, SD 0: identical runs) lies inside the band [+0.10, +1.00]" in why
    ok, why = V.band_verdict(fixed(0.05, math.nextafter(0.1, 0)), (0.1, 1.0), unit="")
    assert ok is False and "+0.09999999999999999] (paired, seed-to-seed spread) lies below the band [+0.10" in why
    ok, why = V.band_verdict(fixed(math.nextafter(0.1, 0), 0.5), (0.1, 1.0), unit="")
    assert ok is None and "[+0.09999999999999999, +0.50] (paired, seed-to-seed spread) overlaps the band" in why
    # the paper's -1.05 is negative: an interval on the other side of 0 lies *above* its band, and says so
    ok, why = V.band_verdict(fixed(3.14, 3.35), V.factor_band(-1.05), paper=-1.05)
    assert ok is False and "[+3.14, +3.35] points (paired, seed-to-seed spread) lies above the band [-2.10, -0.525]" in why


def test_shown_decimals_widens_only_the_numbers_that_would_print_out_of_order():
    assert V.shown_decimals([0.11, 0.52, 1.15], 2) == [2, 2, 2]
    assert V.shown_decimals([math.nextafter(1.15, 0), 1.15], 2) == [16, 2]  # 1.1499999999999997 vs 1.15
    assert V.shown_decimals([-3e-9, 0.0], 3) == [9, 3]  # -0.000000003: not the "-0.000" that reads as 0
    assert V.shown_decimals([0.01, 0.02, 0.025], 2, exact=(2,)) == [2, 2, 3]  # a declared ±0.025 is not 0.03
    assert V.shown_decimals([0.2, 1 / 3], 2, exact=(1,)) == [2, 2]  # a bound of 16 decimals prints at digits
    assert V.shown_decimals([0.334, 1 / 3], 2, exact=(1,)) == [3, 3]  # ... and wider only where it must


def test_seeds_to_decide_is_the_smallest_seed_count_whose_interval_decides():
    # hand-computed: sd = 1 (se 1/sqrt(3) over 3 seeds), band ±1 around the mean 0: t(5)/sqrt(6) = 1.050 > 1,
    # t(6)/sqrt(7) = 0.925 < 1, so 7 seeds
    e = V.Effect(0.0, 1 / math.sqrt(3), 3, "paired")
    assert V.band_verdict(e, (-1, 1))[0] is None and V.seeds_to_decide(e, (-1, 1)) == 7.0
    rng = np.random.default_rng(46)
    for _ in range(200):
        n, mean, se = int(rng.integers(2, 8)), float(rng.normal(0, 3)), float(rng.uniform(0.05, 2))
        band = tuple(sorted(rng.normal(0, 3, 2)))
        e = V.Effect(mean, se, n)
        if V.band_verdict(e, band)[0] is not None:
            continue
        k = V.seeds_to_decide(e, band)
        assert k > n  # what the seeds we have left undecided
        if math.isfinite(k):  # the same mean and per-seed spread over k seeds decides; over k - 1 it does not
            at = lambda m: V.band_verdict(V.Effect(mean, se * math.sqrt(n / m), m), band)[0]  # noqa: E731
            assert at(int(k)) is not None and (k == 2 or at(int(k) - 1) is None), (n, mean, se, band, k)
    assert V.seeds_to_decide(V.Effect(1.0, 0.3, 5), (1.0, 2.0)) == math.inf  # the mean on an edge: never decided
    assert math.isnan(V.seeds_to_decide(V.Effect(1.0, 0.3), (0.5, 2.0)))  # a given (mean, se): runs unknown


def test_band_verdict_reaches_every_outcome_and_says_what_would_decide():
    band = V.factor_band(1.9)
    assert band == (0.95, 3.8)
    ok, why = V.band_verdict(V.Effect(2.0, 0.2, 5), band, paper=1.9)
    assert ok is True and why.endswith("lies inside the band [+0.95, +3.80] around the paper's +1.90")
    ok, why = V.band_verdict(V.Effect(0.2, 0.1, 5), band)
    assert ok is False and "lies below the band [+0.95, +3.80]" in why
    ok, why = V.band_verdict(V.Effect(9.0, 0.1, 5), band)
    assert ok is False and "lies above the band" in why
    # SPE N2D2 seen clean/clean over 3 seeds, +6.27 [2.70, 9.84] (docs/results.md): overlaps, 4 seeds would decide
    ok, why = V.band_verdict(V.Effect(6.27, 3.57 / 4.302652729911275, 3, "unpaired"), band, paper=1.9)
    assert ok is None and why.endswith("overlaps the band [+0.95, +3.80] around the paper's +1.90 without lying "
                                       "inside it; about 4 seeds per arm would decide at the observed spread (ours: 3)")
    ok, why = V.band_verdict(V.Effect(3.8, 0.5, 3), band)
    assert ok is None and "more than 50 seeds per arm (undecidable at this spread)" in why
    ok, why = V.band_verdict(V.Effect(1.0, 0.5), band)  # a given (mean, se): its n is not known
    assert ok is None and "the runs behind its standard error are not known" in why
    # evaluation repeats of one trained model: never matched, whatever the interval
    pooled = V.Effect(2.0, 0.01, 0, "unpaired", V.ONE_SEED + " (episode standard errors)")
    for e, only in ((pooled, False), (V.Effect(2.0, 0.01, 5), True), (V.Effect(0.2, 0.01, 5), True)):
        ok, why = V.band_verdict(e, band, evaluation_only=only)
        assert ok is None and why.startswith("one trained model: ") and "seed-to-seed noise" in why
    ok, why = V.band_verdict([2.0], band)
    assert ok is None and "with one run there is no interval" in why
    ok, why = V.band_verdict([math.nan, 2.0, 2.1], band)  # the NaN run is dropped and flagged
    assert ok is True and "1 non-finite run(s) dropped" in why
    ok, why = V.band_verdict([math.nan, math.inf, 2.0], band)
    assert ok is None and "with 1 finite run(s) there is no interval" in why
    assert V.tolerance_band(0.5, 0.02) == (0.48, 0.52) and V.factor_band((-0.5, -1.5), 4) == (-6.0, -0.125)


@pytest.mark.parametrize("call, match", [
    (lambda: V.factor_band(math.nan), "the paper's effect must be finite and nonzero"),
    (lambda: V.factor_band(0.0), "equivalence claim"),
    (lambda: V.factor_band((-0.5, 1.0)), "a range of one sign"),
    (lambda: V.factor_band("big"), "a number or a \\(low, high\\) range"),
    (lambda: V.factor_band(1.0, 0), "factor must be a finite number > 1"),
    (lambda: V.factor_band(1.0, 1), "factor must be a finite number > 1"),
    (lambda: V.factor_band(1.0, math.inf), "factor must be a finite number > 1"),
    (lambda: V.tolerance_band(0.5, math.nan), "tol must be a finite number > 0"),
    (lambda: V.tolerance_band(0.5, -1.0), "tol must be a finite number > 0"),
    (lambda: V.tolerance_band(math.nan, 0.1), "the paper's value must be a finite number"),
    (lambda: V.band_verdict([1.0, 2.0], (2.0, 1.0)), "low < high"),
    (lambda: V.band_verdict([1.0, 2.0], (0.0, math.nan)), "finite bounds"),
    (lambda: V.band_verdict([1.0, 2.0], 1.0), "a \\(low, high\\) pair"),
])
def test_invalid_declared_numbers_raise_input_error_saying_what_was_expected(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_fmt_reads_any_non_finite_scalar_as_n_a():
    assert V.fmt(np.float32("nan")) == V.fmt(math.inf) == V.fmt(None) == "n/a"
    assert V.fmt(np.float64(0.1234), 2, signed=True) == "+0.12" and V.fmt(3) == "3"


# -------------------------------------------------------------------------- claims as data, one engine
def _row(kind=V.SIZE, measure=lambda m: m, **kw):
    kw.setdefault("paper", 2.0)
    kw.setdefault("band", V.factor_band if kind in V.COUNTED else None)
    kw.setdefault("reason", "half to twice the paper's gap" if kind in V.COUNTED else "true by construction")
    if kind in V.COUNTED:
        kw.setdefault("compares", f"A − B: metric ({kw.get('id', 'r')})")
        kw.setdefault("null", 0.0)
    return V.Row(kw.pop("id", "r"), "A beats B", "Table 1", kind, measure, **kw)


@pytest.mark.parametrize("kind", [V.SIZE, V.LEVEL, V.RANKING])
def test_the_engine_drives_a_counted_row_to_every_outcome_on_its_band(kind):
    """Band [1, 4] (half to twice 2): inside, wholly below, wholly above, across an edge; the outcome is the band
    rule's on the interval, and the claim keeps what the forest plot draws."""
    cases = {(1.5, 3.0): True, (0.2, 0.9): False, (4.5, 6.0): False, (0.5, 2.0): None, (3.0, 5.0): None}
    for (lo, hi), want in cases.items():
        c = V.decide_row(_row(kind), fixed(lo, hi))
        assert c.matched is want and c.outcome == V.OUTCOMES[want] and not c.sanity
        assert c.interval == (lo, hi) and c.band == (1.0, 4.0) and c.paper_value == 2.0 and c.kind == kind
        assert c.why.endswith("; band: half to twice the paper's gap") and c.claim == "Table 1: A beats B"


def test_an_evaluation_only_row_is_never_matched_and_a_borrowed_spread_is_named():
    c = V.decide_row(_row(V.LEVEL, noise=V.EVALUATION), fixed(1.5, 3.0))
    assert c.matched is None and c.why.startswith("one trained model: ") and c.noise == V.EVALUATION
    c = V.decide_row(_row(V.LEVEL, noise=V.borrowed("the seeded N2D2 row of Table 1")), fixed(1.5, 3.0))
    assert c.matched is True and "(spread borrowed: the seeded N2D2 row of Table 1)" in c.why
    with pytest.raises(InputError, match="only a level row may borrow"):
        _row(V.SIZE, noise=V.borrowed("elsewhere"))
    with pytest.raises(InputError, match="must name where"):
        V.borrowed(" ")


def test_sanity_and_condition_rows_are_listed_apart_and_never_counted():
    rows = [_row(V.SIZE, id="size"),
            _row(V.SANITY, id="s1", measure=lambda m: V.Check(True, "0.9 vs 0.8")),
            _row(V.SANITY, id="s2", measure=lambda m: V.Check(False, "0.7 vs 0.8")),
            _row(V.CONDITION, id="c1", measure=lambda m: V.Check(True, "52.1 vs 50.3"), reason="clean share chosen"),
            _row(V.LEVEL, id="absent", measure=lambda m: None)]
    v = V.Verdict("t").decide(rows, fixed(1.5, 3.0))
    assert [c.row_id for c in v.claims] == ["size", "s1", "s2", "c1"]  # the unmeasured row is left out
    assert v.counts == (1, 0, 0) and v.noise_counts == (1, 0)
    assert [c.outcome for c in v.claims[1:]] == ["sanity check passed", "sanity check failed", "condition held"]
    assert [c.row_id for c in v.checks] == ["s1", "s2"] and [c.row_id for c in v.conditions] == ["c1"]
    md = v.markdown()
    assert ("(computed from the numbers above, bands held to the policy; 1 decided on trained seeds; 0 on evaluation repeats only; 2 sanity "
            "check(s) listed apart, 1 passed; 1 condition(s) listed apart, 1 held).") in md
    assert md.index("**Conditions**") > md.index("**Sanity checks**") and "| ✔ | Table 1: A beats B | 2.00 | 52.1 vs 50.3 | clean share chosen |" in md


@pytest.mark.parametrize("make, match", [
    (lambda: _row("size-ish"), "kind is one of"),
    (lambda: _row(V.SIZE, reason=" "), "declares its band and the band's reason"),
    (lambda: _row(V.LEVEL, band=None), "declares its band"),
    (lambda: _row(V.SIZE, noise="vibes"), "noise is"),
    (lambda: _row(V.SIZE, measure=3.0), "measure must be a function"),
    (lambda: V.check_table([_row(id="a"), _row(id="a")]), "appears twice"),
    (lambda: V.check_table([_row(band=(2.0, 1.0))]), "low < high"),
    (lambda: V.check_table([_row(paper=math.nan)]), "finite and nonzero"),
    (lambda: V.check_table(["a row"]), "holds Row objects"),
    (lambda: V.decide_row(_row(V.SANITY), 1.0), "returns a Check"),
])
def test_a_malformed_row_or_table_raises_input_error_when_declared(make, match):
    with pytest.raises(InputError, match=match):
        make()


def test_an_interval_from_elsewhere_is_used_as_it_is():
    """A bootstrap rank interval [1, 3] against the ranks the paper allows, [1, 5]: inside; its standard error is
    unknown, so an undecided one does not invent a number of seeds."""
    ranks = V.Interval(2.0, math.nan, 3, "bootstrap over seeds", "seed-to-seed spread", low=1.0, high=3.0)
    row = _row(V.RANKING, paper=None, band=(1.0, 5.0), reason="top half of 11", unit="", digits=0)
    assert V.decide_row(row, ranks).matched is True
    wide = V.Interval(4.0, math.nan, 3, "bootstrap over seeds", "seed-to-seed spread", low=2.0, high=8.0)
    c = V.decide_row(row, wide)
    assert c.matched is None and "not known" in c.why and c.ours.startswith("+4, 95% interval [+2, +8]")
    with pytest.raises(InputError, match="95% interval only"):
        ranks.interval(0.9)


def test_engine_outcome_wording_and_printed_numbers_agree_at_and_one_ulp_off_every_bound():
    """Through the engine: each interval end at, or one ulp off, each edge of random declared bands; the outcome is
    the rule's on the raw numbers and on the numbers the reason prints, and the words say the same."""
    rng = np.random.default_rng(461)
    for _ in range(600):
        low, high = sorted(rng.choice(np.arange(-4000, 4001), 2, replace=False) / 1000)
        if high - low < 0.01 or low <= 0 <= high:  # narrower than 2 decimals, or holding the null: refused
            continue
        row = _row(V.LEVEL, paper=None, band=(low, high), reason="declared")
        low, high = row.declared_band()  # on the row's printed precision
        x = float(rng.choice([v for e in (low, high) for v in _near(e)]))
        y = float(rng.choice([low, high])) if rng.random() < 0.3 else float(rng.uniform(-6, 6))
        lo, hi = min(x, y), max(x, y)
        c = V.decide_row(row, fixed(lo, hi))
        want = True if low <= lo and hi <= high else False if hi < low or lo > high else None
        if V.centre_seeds(fixed(lo, hi), (low, high)) > V.POLICY_SEEDS:  # the band policy: undecidable, said so
            assert c.matched is None and c.why.startswith(V.NARROW), c.why
            continue
        assert c.matched is want, (low, high, lo, hi, c.why)
        assert V.WORDS_OF_OUTCOME[want] in c.why, c.why
        a, b = (float(s) for s in re.search(r"our 95% interval \[(\S+), (\S+)\]", c.why).groups())
        bl, bh = (float(s) for s in re.search(r"the band \[(\S+), (\S+)\]", c.why).groups())
        assert (True if bl <= a and b <= bh else False if b < bl or a > bh else None) is want, c.why


def test_a_verdict_shown_not_counted_lists_its_claims_under_its_reason_and_adds_nothing_to_any_tally():
    rows = [_row(V.SIZE, id="size"), _row(V.CONDITION, id="c1", measure=lambda m: V.Check(True, "52 vs 50"),
                                          reason="clean share chosen")]
    counted = V.Verdict("t").decide(rows, fixed(1.5, 3.0))
    shown = V.Verdict("t").decide(rows, fixed(1.5, 3.0)).shown_not_counted("seeds 0-4 chose the design")
    assert counted.counts == (1, 0, 0) and counted.noise_counts == (1, 0)
    assert shown.counts == (0, 0, 0) and shown.noise_counts == (0, 0) and shown.counted == []
    assert [c.row_id for c in shown.shown] == ["size"] and [c.row_id for c in shown.conditions] == ["c1"]
    md = shown.markdown()
    assert "**0 matched, 0 not matched** (computed from the numbers above, bands held to the policy; 0 decided on trained seeds; " in md
    assert "; 1 claim(s) shown, not counted)." in md
    assert "**Shown, not counted** (seeds 0-4 chose the design):" in md
    assert md.index("**Shown, not counted**") < md.index("| ✅ | Table 1: A beats B |")  # the claim is still listed
    assert counted.markdown().count("Table 1: A beats B") == md.count("Table 1: A beats B")
    from hedgekit.repro.results import extras, tally
    assert tally(md) == (0, 0, 0) and extras(md) == (0, 0, 0, 1)
    assert shown.forest() is not None  # the claim is still drawn
    for why in ("", "  "):
        with pytest.raises(InputError, match="needs the reason"):
            V.Verdict("t").shown_not_counted(why)


# ------------------------------------------------------------------ malformed evidence and the band policy
@pytest.mark.parametrize("call", [
    lambda: V.as_effect((0.42, 1.69)),  # two seeds, or a (mean, se)? refused either way
    lambda: V.spread((0.42, 1.69)),
    lambda: V.unpaired_effect((0.5, 0.1), (0.3, 0.1)),  # (mean, SD) pairs without n
    lambda: V.paired_effect((0.5, 0.6), [0.3, 0.4]),
    lambda: V.band_verdict((1.0, 0.5), (0.5, 2.0)),
    lambda: V.as_effect([[1.0, 2.0], [3.0, 4.0]]),  # not 1-D
    lambda: V.as_effect("0.5"),
])
def test_a_bare_tuple_or_a_summary_without_its_run_count_is_refused(call):
    with pytest.raises(InputError, match="seeds are a"):
        call()


def test_two_seeds_as_a_list_give_their_t_interval_not_a_mean_and_se():
    from scipy import stats

    lo, hi = V.as_effect([0.42, 1.69]).interval()
    ref = stats.t.interval(0.95, 1, loc=np.mean([0.42, 1.69]), scale=stats.sem([0.42, 1.69]))
    assert (lo, hi) == pytest.approx(ref) and lo < -5  # t(1) = 12.7: two seeds say little


def test_nan_seeds_are_dropped_and_flagged_and_a_row_left_with_one_is_not_decided_on_seeds():
    e = V.unpaired_effect([1.0, math.nan, 1.2, 1.1], [0.5, 0.6, math.inf])
    assert (e.n, e.dropped) == (2, 2) and math.isfinite(e.interval()[0])
    p = V.paired_effect([1.0, math.nan, 1.2], [0.5, 0.6, 0.7])
    assert (p.n, p.dropped) == (2, 1) and p.mean == pytest.approx(0.5)
    rows = [_row(id="ok"), _row(id="nan")]
    v = V.Verdict("t").decide([rows[0]], [2.0, 2.1, 2.2])
    V.decide([rows[1]], [2.0, math.nan, math.nan], v)
    by = {c.row_id: c for c in v.claims}
    assert by["nan"].matched is None and "no interval" in by["nan"].why and "2 non-finite" in by["nan"].ours
    assert v.noise_counts == (1, 0) and "1 decided on trained seeds" in v.tally_line()


def test_a_zero_spread_is_printed_and_never_matched_on_fewer_than_three_runs():
    two, three = V.band_verdict([2.0, 2.0], (1.0, 4.0)), V.band_verdict([2.0, 2.0, 2.0], (1.0, 4.0))
    assert two[0] is None and "SD 0: identical runs" in two[1] and "not matched on fewer than 3" in two[1]
    assert three[0] is True and "SD 0: identical runs" in three[1]
    assert V.band_verdict([9.0, 9.0], (1.0, 4.0))[0] is False  # wholly outside: a zero spread may fail


def test_a_band_narrower_than_the_printed_precision_is_refused():
    ulp = (1.0, math.nextafter(1.0, 2.0))
    with pytest.raises(InputError, match="narrower than the measure's printed precision"):
        V.band_verdict([1.0, 1.0, 1.0], ulp)
    with pytest.raises(InputError, match="narrower than the measure's printed precision"):
        V.check_table([_row(band=ulp)])
    with pytest.raises(InputError, match="narrower than the measure's printed precision"):  # a ratio band of 1e-9
        V.check_table([_row(paper=1e-9)])


def test_an_interval_end_exactly_on_an_edge_lies_inside_the_closed_band():
    c = V.decide_row(_row(V.LEVEL, paper=None, band=(1.0, 4.0), reason="declared"), fixed(1.0, 2.0))
    assert c.matched is True


def test_the_same_comparison_in_two_tables_or_under_two_ids_is_refused():
    with pytest.raises(InputError, match="a comparison is counted once"):
        V.check_table([_row(id="a", compares="X − Y: AP"), _row(id="b", compares="x − y:  ap")])
    V.check_table([_row(id="a", compares="X − Y: AP (test table)")], table="test one")
    V.check_table([_row(id="a", compares="X − Y: AP (test table)")], table="test one")  # rebuilt: the same table
    with pytest.raises(InputError, match="of the table 'test one'"):
        V.check_table([_row(id="b", compares="X − Y: AP (test table)")], table="test two")
    V.check_table([_row(id="a", compares="X − Y: AP (test table)"),  # twins: on seeds, else on repeats
                   _row(id="a.repeats", compares="X − Y: AP (test table)", noise=V.EVALUATION)], table="test one")


def test_a_counted_row_names_its_comparison_and_a_level_row_its_null():
    with pytest.raises(InputError, match="names the comparison"):
        V.Row("r", "A", "T", V.SIZE, lambda m: m, paper=2.0, band=V.factor_band, reason="x")
    with pytest.raises(InputError, match="no skill"):
        V.Row("r", "A", "T", V.LEVEL, lambda m: m, band=(1, 2), reason="x", compares="A")


def test_a_null_result_inside_the_band_is_refused_when_the_table_is_built():
    with pytest.raises(InputError, match="a null result could match"):
        V.check_table([_row(V.LEVEL, paper=None, band=(0.5, 1.0), null=0.55, reason="mostly")])
    with pytest.raises(InputError, match="a null result could match"):
        V.check_table([_row(paper=None, band=(-1.0, 1.0), reason="about equal")])  # a size row's null is 0
    assert V.check_table([_row(V.LEVEL, paper=None, band=(0.6, 1.0), null=0.55, reason="mostly")])


def test_a_band_reaching_past_the_measures_range_is_cut_there():
    row = _row(V.LEVEL, paper=0.7, band=V.factor_band, bounds=(-1.0, 1.0))  # tau: [0.35, 1.4] -> [0.35, 1]
    assert row.declared_band() == (0.35, 1.0)


def test_a_band_that_ten_seeds_cannot_resolve_is_inconclusive_with_its_reason():
    """The band policy's "can pass" half: at the measured spread, a result at the band's centre must match with 10
    seeds per arm or fewer; a band of [1, 4] resolves at SD 1.5 (7 seeds) but not at SD 4 (more than 10)."""
    from scipy import stats

    k = next(k for k in range(2, 51) if stats.t.ppf(0.975, k - 1) * 1.5 / math.sqrt(k) < 1.5)  # the oracle: 7
    row = _row(paper=2.0)  # [1, 4], half-width 1.5
    tight = V.decide_row(row, [2.5 - 1.5, 2.5, 2.5 + 1.5])  # SD 1.5: a match at the centre needs 7 seeds
    wide = V.decide_row(row, [2.5 - 4.0, 2.5, 2.5 + 4.0])  # SD 4: more than 10
    assert V.centre_seeds([1.0, 2.5, 4.0], (1.0, 4.0)) == k == 7 and V.centre_seeds([-1.5, 2.5, 6.5], (1.0, 4.0)) > 10
    assert tight.matched is None and not tight.why.startswith(V.NARROW)
    assert wide.matched is None and wide.why.startswith(V.NARROW + ": at our spread (SD 4")
    outside = V.decide_row(row, [20.0, 24.0, 28.0])  # wholly above, but no band this narrow can be told at SD 4
    assert outside.matched is None and outside.why.startswith(V.NARROW)
    assert V.decide_row(row, [20.0, 20.5, 21.0]).matched is False  # a resolvable band still fails


def test_seeds_to_decide_is_per_arm_and_says_undecidable_beyond_fifty():
    ok, why = V.band_verdict(V.Effect(2.0, 1.0, 3), (1.9, 4.0))
    assert "more than 50 seeds per arm (undecidable at this spread)" in why
    ok, why = V.band_verdict(V.Effect(3.0, 0.6, 3), (1.0, 4.0))
    assert "seeds per arm would decide" in why


def test_band_edges_move_inward_onto_the_rows_printed_precision():
    assert V.snap_band((0.0135, 0.054), 3) == ((0.014, 0.054), 3)  # half of a paper gap of 0.027
    assert V.snap_band((0.24000000000000005, 0.8400000000000001), 2) == ((0.24, 0.84), 2)  # float noise is the point
    assert V.snap_band((-0.002, -0.0005), 3) == ((-0.002, -0.0005), 4)  # 3 decimals would narrow it by a third
    rng = np.random.default_rng(57)
    for _ in range(500):
        low, high = sorted(rng.uniform(-50, 50, 2))
        digits = int(rng.integers(0, 4))
        if high - low < 10.0 ** -digits:
            continue
        (a, b), d = V.snap_band((low, high), digits)
        assert low <= a < b <= high and d >= digits, (low, high, digits, a, b, d)
        assert (a - low) + (high - b) <= V.SNAP_SHRINK * (high - low) + 1e-12
        assert float(f"{a:.{d}f}") == a and float(f"{b:.{d}f}") == b  # each edge prints as it is decided

