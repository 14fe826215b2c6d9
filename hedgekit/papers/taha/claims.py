"""The claims notebook 08 checks against Taha et al. 2019: Tables 1-4 side by side and computed verdicts.

Each verdict pairs one of the paper's statements (its numbers in `hedgekit.papers.taha.numbers`) with the
numbers the notebook just measured; nothing is frozen prose (`hedgekit.papers.verdict`). Our mAP and top-k
are fractions; tables show them in points (x 100) beside the paper's percentages.

Decision rules (all in points of mAP / top-k, std = std of our runs):

* "about equal" claims: matched when |Δ| <= `SAME_TOL` points; inconclusive when |Δ| is within 2 std
  of our runs but above the tolerance; otherwise not matched.
* "A beats B" claims: matched when A - B > 0 and not within 2 std; not matched when A - B < 0 and not
  within noise; inconclusive otherwise, and whenever |A - B| < `MIN_EFFECT` points (with one run per row the
  std is unknown, and a smaller gap between two single models says nothing).
* Fig. 5: matched when the share of flipped labels among the most uncertain training images exceeds the
  overall noise rate by more than 2 binomial standard errors.
* Fig. 6: matched when r <= `R_MODERATE` (a moderate negative correlation, as the paper's -0.50).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from hedgekit.papers.taha.numbers import (FIG6_PEARSON_R, PAPER_TRAINING, TABLE1, TABLE2, TABLE3_GOAL,
                                          TABLE4_STIMULUS)
from hedgekit.papers.verdict import Verdict, models_paragraph

__all__ = ["SAME_TOL", "R_MODERATE", "MIN_EFFECT", "COLLAPSED_MAP", "TahaVerdict", "taha_training_context", "pts", "same", "beats",
           "table1_side_by_side", "table2_side_by_side", "longtail_side_by_side", "table1_verdict",
           "table2_verdict", "longtail_verdict", "detection_winner"]

SAME_TOL = 1.0  # points: the paper's hetero-vs-triplet gaps on DukeMTMC are within ~1 point (Table 1)
R_MODERATE = -0.25
MIN_EFFECT = 0.25  # points: smaller gaps between single runs are inconclusive
UNSURE = f"too small to call: |Δ| < {MIN_EFFECT} points or within 2 std of our runs"
# mAP below which a model has collapsed (all embeddings near one point): chance on 30 unseen classes is ~0.03
COLLAPSED_MAP = 0.10


def pts(x: float) -> float:
    """A fraction as points (x 100)."""
    return 100.0 * x


def _pm(mean_std: tuple[float, float]) -> str:
    m, s = mean_std
    return f"{pts(m):.2f}" + ("" if not math.isfinite(s) else f" ± {pts(s):.2f}")


def _within_noise(diff: float, std: float) -> bool:
    return std is not None and math.isfinite(std) and std > 0 and abs(diff) < 2 * std


def same(diff: float, std: float, tol: float = SAME_TOL) -> bool | None:
    """Verdict of an "about equal" claim on a difference in points (module docstring)."""
    if abs(diff) <= tol:
        return True
    return None if _within_noise(diff, std) else False


def beats(diff: float, std: float, floor: float = MIN_EFFECT) -> bool | None:
    """Verdict of an "A beats B" claim on A - B in points (module docstring)."""
    if _within_noise(diff, std) or abs(diff) < floor:
        return None
    return diff > 0


def _pooled(*stds: float) -> float:
    """Std of a difference of independent means' runs (sqrt of the summed variances); NaN if any is unknown."""
    return math.sqrt(sum(s * s for s in stds)) if all(s is not None and math.isfinite(s) for s in stds) else math.nan


# ============================================================================ tables side by side
def table1_side_by_side(summary: Mapping[str, Mapping[str, tuple[float, float]]]):
    """Table 1: rows of the paper, our mean ± std (points) beside the paper's mAP and top-5, and Δ.

    ``summary``: row label -> `protocol.mean_std` of `protocol.retrieval_metrics` runs.
    """
    import pandas as pd

    rows = []
    for label, ours in summary.items():
        paper = TABLE1[label]
        rows.append({"row": label, "mAP ours": _pm(ours["map"]), "mAP paper": paper["map"][0],
                     "Δ mAP": pts(ours["map"][0]) - paper["map"][0], "top-1 ours": _pm(ours["top1"]),
                     "top-5 ours": _pm(ours["top5"]), "top-5 paper": paper["top5"][0],
                     "Δ top-5": pts(ours["top5"][0]) - paper["top5"][0], "top-10 ours": _pm(ours["top10"])})
    return pd.DataFrame(rows).set_index("row")


def table2_side_by_side(summary: Mapping[str, tuple[float, float]]):
    """Table 2: row -> our mAP mean ± std (points) beside the paper's, and Δ. ``summary``: row label ->
    (mean, std) as fractions, rows as in `hedgekit.papers.taha.numbers.TABLE2`."""
    import pandas as pd

    rows = [{"row": label, "mAP ours": _pm(ours), "mAP paper": TABLE2[label][0],
             "Δ": pts(ours[0]) - TABLE2[label][0]} for label, ours in summary.items()]
    return pd.DataFrame(rows).set_index("row")


def longtail_side_by_side(ours: Mapping[str, Mapping[str, tuple[float, float]]]):
    """Tables 3/4 analogue: micro / macro / head / tail mAP for triplet and het (ours, points) beside
    the paper's micro and macro of Tables 3 and 4 (its classes are HDD's, so only the averages line up).

    ``ours``: {"Tri": {"micro": (m, s), "macro": ..., "head": ..., "tail": ...}, "Tri + Hetero": {...}}.
    """
    import pandas as pd

    rows = []
    for key, paper_key in (("micro", "Micro mAP"), ("macro", "Macro mAP"), ("head", None), ("tail", None)):
        rows.append({"average": key, "Tri ours": _pm(ours["Tri"][key]), "Hetero ours": _pm(ours["Tri + Hetero"][key]),
                     "Δ ours": pts(ours["Tri + Hetero"][key][0] - ours["Tri"][key][0]),
                     "Δ paper Table 3": (TABLE3_GOAL[paper_key][1] - TABLE3_GOAL[paper_key][0]) if paper_key else math.nan,
                     "Δ paper Table 4": (TABLE4_STIMULUS[paper_key][1] - TABLE4_STIMULUS[paper_key][0])
                     if paper_key else math.nan})
    return pd.DataFrame(rows).set_index("average")


# ============================================================================ verdicts
def taha_training_context(checkpoints: Sequence) -> str:
    """One paragraph: which presets/steps produced the numbers, compared with the paper's training."""
    return models_paragraph(
        checkpoints, PAPER_TRAINING,
        "FAST mode: one run of models trained for seconds, so absolute numbers are far below the paper's "
        "and differences between rows are mostly noise; run with FAST = False for the comparison that counts.",
        setup="a LeNet from scratch on 28 x 28N images")


class TahaVerdict(Verdict):
    """`hedgekit.papers.verdict.Verdict` with Taha et al.'s training context (the base class quotes HIB's)."""

    def context(self) -> str:
        return taha_training_context(self.checkpoints)


def table1_verdict(summary: Mapping[str, Mapping[str, tuple[float, float]]], checkpoints: Sequence = ()) -> TahaVerdict:
    """Table 1 (sec. 5.1): hetero costs little on clean retrieval; the gap closes with augmentation."""
    v = TahaVerdict("08 Table 1 analogue: unseen-class retrieval on 2-digit MNIST", checkpoints)
    gaps = {}
    for aug, (tri, het) in {False: ("Tri", "Tri + Hetero"), True: ("Tri + Aug", "Tri + Aug + Hetero")}.items():
        for metric, name in (("map", "mAP"), ("top5", "top-5")):
            d = pts(summary[het][metric][0] - summary[tri][metric][0])
            std = pts(_pooled(summary[het][metric][1], summary[tri][metric][1]))
            paper_d = TABLE1[het][metric][0] - TABLE1[tri][metric][0]
            gaps[(aug, metric)] = (d, std)
            ok = same(d, std)
            collapsed = [r for r in (tri, het) if summary[r]["map"][0] < COLLAPSED_MAP]
            why = (f"{' and '.join(collapsed)} collapsed (mAP {', '.join(_pm(summary[r]['map']) for r in collapsed)}; "
                   "chance ≈ 3): training drove every embedding to one point (docs/recipes.md)"
                   + ("; eq. 11 down-weights the hardest triplets and hetero kept more" if het not in collapsed and d > 0
                      else "") if collapsed and ok is not True else f"|Δ| = {abs(d):.2f} ≤ {SAME_TOL:g} point" if ok else
                   f"|Δ| = {abs(d):.2f} is within 2 std of our runs ({2 * std:.2f}) but above {SAME_TOL:g} point"
                   if ok is None else
                   f"hetero {'gains' if d > 0 else 'loses'} {abs(d):.2f} points: on digits most training images are "
                   "unambiguous, so eq. 11 mostly reweights easy triplets" + ("; occlusion adds the noisy inputs "
                                                                               "eq. 11 is meant for" if aug else ""))
            v.add(f"Table 1: {het} ≈ {tri} ({name})", f"{paper_d:+.2f} points",
                  f"{d:+.2f} points ({_pm(summary[het][metric])} vs {_pm(summary[tri][metric])})", ok, why)
    (d0, s0), (d1, s1) = gaps[(False, "map")], gaps[(True, "map")]
    paper0 = TABLE1["Tri + Hetero"]["map"][0] - TABLE1["Tri"]["map"][0]
    paper1 = TABLE1["Tri + Aug + Hetero"]["map"][0] - TABLE1["Tri + Aug"]["map"][0]
    ok = beats(d1 - d0, _pooled(s0, s1))
    collapsed = [r for r in TABLE1 if summary[r]["map"][0] < COLLAPSED_MAP]
    why = ("the heteroscedastic term pays off once inputs are corrupted" if ok else UNSURE if ok is None else
           "occlusion did not favour the heteroscedastic model at this scale")
    if collapsed:  # a collapsed row makes the gap meaningless, whichever way it points
        ok, why = None, f"not a fair test: {' and '.join(collapsed)} collapsed (mAP below {pts(COLLAPSED_MAP):.0f})"
    v.add("sec. 5.1: with augmentation hetero gains relative to the vanilla triplet (the gap closes)",
          f"{paper0:+.2f} → {paper1:+.2f} points", f"{d0:+.2f} → {d1:+.2f} points", ok, why)
    s_tri, s_het = summary["Tri"]["map"][1], summary["Tri + Hetero"]["map"][1]
    if math.isfinite(s_tri) and math.isfinite(s_het):
        v.add("Table 1: hetero has the smaller std over runs (mAP)",
              f"{TABLE1['Tri + Hetero']['map'][1]} vs {TABLE1['Tri']['map'][1]}",
              f"{pts(s_het):.2f} vs {pts(s_tri):.2f} points", s_het < s_tri,
              "a std from a handful of runs is itself noisy; read this loosely")
    return v


def table2_verdict(summary: Mapping[str, tuple[float, float]], fig: Mapping, checkpoints: Sequence = ()) -> TahaVerdict:
    """Table 2 (sec. 5.2) and Figs. 5, 6, 8 on noisy Fashion-MNIST.

    ``summary``: Table 2 row -> (mean, std) as fractions. ``fig``: ``r`` (Fig. 6 Pearson r, mean over runs),
    ``flipped_top`` / ``noise_rate`` / ``n_top`` (Fig. 5: share of flipped labels among the n_top most uncertain
    training images, and overall), ``centre_rho`` (Fig. 8: Spearman rho of distance-to-centroid vs uncertainty).
    """
    v = TahaVerdict("08 Table 2 analogue: Fashion-MNIST with look-alike label noise", checkpoints)
    m = {k: pts(a) for k, (a, _) in summary.items()}
    s = {k: pts(b) for k, (_, b) in summary.items()}
    d = m["Tri on noisy"] - m["clean subset only"]
    ok = beats(d, _pooled(s["Tri on noisy"], s["clean subset only"]))
    v.add("Table 2: training on clean + noisy labels beats the clean subset alone", "61.70 vs 52.62",
          f"{m['Tri on noisy']:.2f} vs {m['clean subset only']:.2f}", ok,
          "more (if noisy) data wins" if ok else UNSURE if ok is None else
          "our clean subset (5% of 60k) is large enough for 10 classes, and 38% of the rest points to look-alikes")
    d = m["Tri + Hetero on noisy"] - m["Tri on noisy"]
    ok = beats(d, _pooled(s["Tri + Hetero on noisy"], s["Tri on noisy"]))
    v.add("Table 2: hetero ≥ the triplet baseline on noisy labels", "+0.57 points", f"{d:+.2f} points", ok,
          "the learned attenuation down-weights triplets with flipped labels" if ok else
          UNSURE if ok is None else "hetero lost to the baseline on our noisy labels")
    base = "Tri + Hetero on noisy"
    d_rand = m["random cleaning 20%"] - m[base]
    ok = same(d_rand, s["random cleaning 20%"], 0.5)
    v.add("Table 2: removing a random 20% of the gallery changes nothing", "+0.06 points", f"{d_rand:+.2f} points", ok,
          "random removal keeps the class mix" if ok else UNSURE if ok is None else
          "random removal moved mAP by more than half a point")
    d_unc = m["uncertainty cleaning 20%"] - m[base]
    ok = beats(d_unc - d_rand, _pooled(s["uncertainty cleaning 20%"], s["random cleaning 20%"]))
    v.add("Table 2: removing the 20% most uncertain gallery images lifts mAP (~2 points), beyond random removal",
          "+2.30 points (random +0.06)", f"{d_unc:+.2f} points (random {d_rand:+.2f})", ok,
          "sigma^2 marks the ambiguous gallery images that pollute rankings" if ok else
          UNSURE if ok is None else "the most uncertain gallery images were not the harmful ones")
    r = fig["r"]
    ok = r <= R_MODERATE
    v.add("Fig. 6: query AP correlates negatively with its uncertainty", f"r = {FIG6_PEARSON_R:.2f}", f"r = {r:.2f}",
          ok, "uncertain queries retrieve worse" if ok else
          f"r above {R_MODERATE}: our uncertainty says little about which queries retrieve badly")
    se = math.sqrt(fig["noise_rate"] * (1 - fig["noise_rate"]) / fig["n_top"])
    ok = beats(fig["flipped_top"] - fig["noise_rate"], se, floor=0.0)
    v.add("Fig. 5: the most uncertain training images are mostly mislabelled or ambiguous", "most of the 5 per class",
          f"{100 * fig['flipped_top']:.0f}% flipped (base rate {100 * fig['noise_rate']:.0f}%)", ok,
          "sigma^2 concentrates on flipped labels" if ok else
          f"within 2 binomial std errors ({2 * se:.2f}) of a random pick of {fig['n_top']}" if ok is None else
          "fewer flipped labels than a random pick: sigma^2 marks ambiguous images of the right class instead")
    ok = fig["centre_rho"] > 0
    v.add("Fig. 8: points near their class centre have lower uncertainty", "qualitative",
          f"Spearman ρ(distance to centroid, σ²) = {fig['centre_rho']:.2f}", ok,
          "uncertainty grows towards class borders" if ok else "uncertainty does not grow away from the centres")
    return v


def longtail_verdict(ours: Mapping[str, Mapping[str, tuple[float, float]]], checkpoints: Sequence = ()) -> TahaVerdict:
    """Tables 3/4 (sec. 5.3-5.4): micro mAP rises with hetero; minority (tail) classes lose."""
    v = TahaVerdict("08 Tables 3/4 analogue: long-tailed Fashion-MNIST", checkpoints)
    tri, het = ours["Tri"], ours["Tri + Hetero"]
    d = pts(het["micro"][0] - tri["micro"][0])
    ok = beats(d, pts(_pooled(het["micro"][1], tri["micro"][1])))
    v.add("Tables 3/4: hetero raises micro mAP", "+0.57 (Table 3), +1.70 (Table 4)", f"{d:+.2f} points", ok,
          "hetero helps the frequent classes that dominate the micro average" if ok else
          UNSURE if ok is None else "hetero lowered micro mAP")
    d = pts(het["tail"][0] - tri["tail"][0])
    ok = beats(-d, pts(_pooled(het["tail"][1], tri["tail"][1])))
    v.add("sec. 5.4: hetero is biased against minority classes (tail-class mAP drops)",
          "macro −1.82 (Table 3); +0.90 (Table 4)", f"tail {d:+.2f} points", ok,
          "rare classes' triplets stay violated longer and get explained as noise" if ok else
          UNSURE if ok is None else "our tail classes did not lose with hetero")
    return v


def detection_winner(table, fraction: float) -> str:
    """The detector with the highest precision at ``fraction`` removed, in a sentence (`protocol.detection_table`)."""
    sub = table[(table.detector != "cleanlab (own threshold)") & ((table.fraction - fraction).abs() < 1e-9)]
    best = sub.sort_values("precision", ascending=False)
    first, second = best.iloc[0], best.iloc[1]
    return (f"at {100 * fraction:.0f}% removed, {first.detector} wins (precision {first.precision:.2f}, "
            f"{second.detector} {second.precision:.2f})")
