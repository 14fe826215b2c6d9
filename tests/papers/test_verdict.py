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
    assert "**1 matched, 1 did not, 1 inconclusive**" in md and "a \\| b" in md and "| ❌ | c | 1 | 2 | because |" in md
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
