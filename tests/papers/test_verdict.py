"""hedgekit.papers.verdict: rendering of computed verdicts and the noise rules."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

RNG = np.random.default_rng(0)


def test_verdict_rendering_and_noise():
    from hedgekit.papers import verdict as V
    from hedgekit.papers.hib.claims import known_unknowns_verdict
    from hedgekit.papers.hib.protocol import RepeatedEvaluation

    v = V.Verdict("t")
    v.add("a | b", "1", "2", True)
    v.add("c", "1", "2", False, "because")
    v.add("d", "1", "2", None, "noise")
    md = v.markdown()
    assert "**1 matched, 1 not matched, 1 inconclusive**" in md and "a \\| b" in md and "| ❌ | c | 1 | 2 | because |" in md
    assert V.noise_reason(0.01, 0.01) and not V.noise_reason(0.05, 0.01) and not V.noise_reason(0.01, 0.0)
    assert V.binomial_se_diff(0.5, 100, 0.5, 100) == pytest.approx(math.sqrt(0.005))

    def res(label, knn, ap):
        r = RepeatedEvaluation(label, 2, 2, 3, 2000)
        r.values = {"ap_corrupt": np.array(ap), "knn_corrupt": np.full(3, knn), "ap_clean": np.full(3, 0.9),
                    "knn_clean": np.full(3, 0.5)}
        return r

    out = known_unknowns_verdict({(2, 2, "point"): res("point", 0.134, [0.79, 0.80, 0.80]),
                                  (2, 2, "MoG-1"): res("MoG-1", 0.141, [0.90, 0.91, 0.90])})
    by = {c.claim.split(": ")[1]: c for c in out.claims if c.claim.startswith("Table 1 (")}
    assert by["MoG-1 beats point on corrupt verification AP"].matched is True  # +0.10, repetition std ~0.01
    knn = by["MoG-1 beats point on corrupt KNN accuracy"]
    assert knn.matched is None and "binomial" in knn.why  # +0.007 with 2000 probes: SE ~0.011

    # Table 5 goes through the same "A beats B" rule: a clear loss of beta = 1e-4 that comes with
    # collapsed variances (corrupt/clean ratio 1.1 < 2) is failed and says so, a clear win matches.
    from hedgekit.papers.hib.claims import kl_margin_verdict

    b4, b0 = res("MoG-1", 0.60, [0.90, 0.91, 0.90]), res("MoG-1", 0.70, [0.80, 0.81, 0.80])
    b4.var_clean, b4.var_corrupt = 0.5, 0.55
    b4.values["tau_knn_clean"], b0.values["tau_knn_clean"] = np.array([0.70, 0.72, 0.71]), np.array([0.20, 0.22, 0.21])
    out = kl_margin_verdict({}, {(2, 2, 0.0): b0, (2, 2, 1e-4): b4})
    by = {c.claim.split("improves ")[1]: c for c in out.claims if c.claim.startswith("Table 5")}
    assert by["KNN corrupt over β = 0"].matched is False and "variance collapse" in by["KNN corrupt over β = 0"].why
    assert "0.600 vs 0.700 (-0.100)" == by["KNN corrupt over β = 0"].ours
    assert by["τ KNN clean over β = 0"].matched is True
    assert by["τ KNN clean over β = 0"].paper == "0.800 vs 0.748 (+0.052)"  # HIB Table 5, N=2 D=2


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
def test_effect_verdict_reaches_every_outcome_and_says_by_how_much():
    from hedgekit.papers.verdict import Effect, effect_verdict

    ok, why = effect_verdict(Effect(2.0, 0.2, 5), 2.30)
    assert ok is True and "compatible" in why
    ok, why = effect_verdict(Effect(0.18, 0.01, 5), 2.30)  # the committed Taha cleaning gain
    assert ok is False and why.startswith("smaller than the paper (about 13× smaller)")
    ok, why = effect_verdict(Effect(7.0, 0.1, 5), 2.30)
    assert ok is False and why.startswith("larger than the paper (about 3× larger)")
    ok, why = effect_verdict(Effect(-1.0, 0.1, 5), 2.30)
    assert ok is False and "the opposite sign" in why
    ok, why = effect_verdict(Effect(0.0, 0.1, 5), 2.30)  # a precise zero refutes a +2.3 claim
    assert ok is False and "about zero" in why
    ok, why = effect_verdict(Effect(1.0, 1.0, 5), 2.30)  # reaches the paper and 0
    assert ok is None and "contains 0" in why
    ok, why = effect_verdict([2.3], 2.30)  # one run: no interval
    assert ok is None and "one seed" in why
    # negative effects are mirrored; a range of paper values widens the band
    assert effect_verdict(Effect(-0.5, 0.02, 5), -0.50, unit="")[0] is True
    assert effect_verdict(Effect(3.0, 0.1, 5), (0.57, 1.70))[0] is True
    assert effect_verdict(Effect(3.0, 0.1, 5), 0.57)[0] is False


def test_floor_verdict_needs_an_interval_above_zero_that_reaches_the_floor():
    from hedgekit.errors import InputError
    from hedgekit.papers.verdict import Effect, floor_verdict

    ok, why = floor_verdict(Effect(0.3, 0.02, 5), 0.1)
    assert ok is True and "excludes 0 and reaches 0.1" in why
    assert floor_verdict(Effect(0.08, 0.02, 5), 0.1)[0] is True  # interval [0.02, 0.14]: above 0, reaches 0.1
    ok, why = floor_verdict([0.01, 0.0, 0.02, 0.01, 0.015], 0.1)  # a precise near-zero: too small to count
    assert ok is False and "lies below 0.1" in why
    assert floor_verdict(Effect(-0.3, 0.02, 5), 0.1)[0] is False  # the opposite sign
    ok, why = floor_verdict([0.3, -0.2, 0.1], 0.1)
    assert ok is None and "contains 0" in why
    assert floor_verdict([0.3], 0.1)[0] is None  # one run: no interval
    with pytest.raises(InputError, match="floor"):
        floor_verdict([0.3, 0.2], 0.0)


def test_effect_interval_is_the_student_t_interval_of_the_runs():
    from scipy import stats

    from hedgekit.papers.verdict import _as_effect

    vals = [1.0, 2.0, 4.0, 3.0]
    e = _as_effect(vals)
    lo, hi = e.interval()
    ref = stats.t.interval(0.95, len(vals) - 1, loc=np.mean(vals), scale=stats.sem(vals))
    assert (lo, hi) == pytest.approx(ref)
    assert _as_effect((1.0, 0.5)).interval() == pytest.approx((0.0, 2.0))  # a given (mean, se): mean ± 2 se


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


def test_direction_and_equivalence_verdicts():
    from hedgekit.papers.verdict import Effect, direction_verdict, equivalence_verdict

    assert direction_verdict(Effect(1.0, 0.1, 5))[0] is True
    assert direction_verdict(Effect(-1.0, 0.1, 5))[0] is False
    assert direction_verdict(Effect(-1.0, 0.1, 5), sign=-1)[0] is True
    assert direction_verdict(Effect(0.1, 0.1, 5))[0] is None
    assert equivalence_verdict(Effect(0.2, 0.1, 5), 1.0)[0] is True
    assert equivalence_verdict(Effect(3.0, 0.1, 5), 1.0)[0] is False
    assert equivalence_verdict(Effect(0.8, 0.2, 5), 1.0)[0] is None


def test_sanity_checks_are_listed_apart_and_never_counted():
    from hedgekit.papers import verdict as V

    v = V.Verdict("t")
    v.add("real", "1", "1", True)
    v.sanity("by construction", "1", "1", True, "cannot fail")
    v.sanity("broken construction", "1", "2", False, "cannot fail")
    assert v.counts == (1, 0, 0)
    assert [c.outcome for c in v.claims] == ["matched", "sanity check passed", "sanity check failed"]
    md = v.markdown()
    assert "**1 matched, 0 not matched** (computed from the numbers above); 2 sanity check(s) listed apart, 1 passed." in md
    head, checks = md.split("**Sanity checks**")
    assert "by construction" not in head and "| ✔ | by construction |" in checks and "| ✘ | broken construction |" in checks


def test_one_vocabulary():
    from hedgekit.papers import verdict as V

    assert V.OUTCOMES == {True: "matched", False: "not matched", None: "inconclusive"}
    import pathlib

    import hedgekit

    root = pathlib.Path(hedgekit.__file__).parent / "papers"
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert "within noise" not in text and "untested" not in text, path


@pytest.mark.parametrize("name, args", [("effect_verdict", (2.0,)), ("direction_verdict", (1,)),
                                        ("floor_verdict", (0.1,)), ("equivalence_verdict", (1.0,))])
def test_every_interval_reads_with_its_unit_or_with_none_and_never_a_double_blank(name, args):
    from hedgekit.papers import verdict as V

    e = V.Effect(1.5, 0.2, 5)
    assert "our 95% interval [+0.94, +2.06] points (" in getattr(V, name)(e, *args, unit="points")[1]
    without = getattr(V, name)(e, *args, unit="")[1]
    assert "our 95% interval [+0.94, +2.06] (" in without and "  " not in without


@pytest.mark.parametrize("name, args", [("effect_verdict", (2.0,)), ("direction_verdict", (1,)),
                                        ("floor_verdict", (0.1,)), ("equivalence_verdict", (1.0,))])
def test_an_interval_bound_near_zero_shows_its_sign_with_more_decimals(name, args):
    from hedgekit.papers import verdict as V

    assert V._signed(-0.0004, 3) == "-0.0004" and V._signed(0.00004, 2) == "+0.00004"
    assert V._signed(-0.0004, 2) == "-0.0004" and V._signed(0.136, 3) == "+0.136"
    assert V._signed(0.0, 3) == "+0.000" and V._signed(-3e-9, 3) == "-0.000"  # beyond 3 more decimals: as before
    e = V.Effect(0.068, 0.0681 / 4.302652729911275, 3)  # 3 runs, t(2) = 4.3027: lower bound 0.068 - 0.0681
    text = getattr(V, name)(e, *args, unit="", digits=3)[1]
    assert "our 95% interval [-0.0001, +0.136] (" in text, text
