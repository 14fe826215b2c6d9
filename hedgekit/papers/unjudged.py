"""Shown, not judged: the papers' numbers and comparisons that a notebook sets beside ours but that no row of a
claims table decides, each with the reason it is left undecided.

Every comparison a notebook reproduces is decided as a row of its paper's claims table (`hedgekit.papers.hib.claims`,
`hedgekit.papers.spe.claims`, `hedgekit.papers.taha.claims`, `hedgekit.papers.url.claims`; the engine is
`hedgekit.papers.verdict`). The notebooks show more of the papers than those rows decide: absolute levels measured on
other data, a figure with no number, cells that a row judges only pooled or as a gap, a statement the paper makes
without a size. `UNJUDGED` lists each of them once, so that a reader of ``docs/results.md`` (its section "Shown, not
judged", rendered by `hedgekit.repro.results.render`) can tell what the verdicts leave out and why.

A record is `Unjudged`: the paper (a key of `PAPERS`), the place in the paper (table, figure or section, as the
claims tables write it), the paper's number or statement, the notebook (file stem in ``notebooks/``) that shows our
number beside it, and why no row judges it. A record never repeats a counted row (a *size*, *level* or *ranking* row)
of the same place with the same paper value: when a row comes to judge one, the record goes
(``tests/papers/test_unjudged.py`` checks it). The paper's numbers are read from the papers' ``numbers`` modules.
"""
from __future__ import annotations

from dataclasses import dataclass

from hedgekit.papers.hib import numbers as hib
from hedgekit.papers.spe import numbers as spe
from hedgekit.papers.taha import numbers as taha
from hedgekit.papers.url import numbers as url

__all__ = ["PAPERS", "Unjudged", "UNJUDGED", "by_paper"]

# paper key -> how the results page names it
PAPERS = {"hib": "HIB (Oh et al. 2019)", "spe": "SPE (Scott et al. 2019)",
          "taha": "Taha et al. 2019 (heteroscedastic triplet)", "url": "URL (Kirchhof et al. 2023)"}


@dataclass(frozen=True)
class Unjudged:
    """One number or comparison of a paper that a notebook shows beside ours and no claims row decides.

    ``paper``: a key of `PAPERS`; ``place``: table, figure or section of the paper; ``paper_value_text``: the
    paper's number(s) or statement; ``notebook``: the stem of the notebook in ``notebooks/`` that shows ours;
    ``reason``: why no row judges it."""

    paper: str
    place: str
    paper_value_text: str
    notebook: str
    reason: str

    @property
    def paper_name(self) -> str:
        """How the results page names the paper (`PAPERS`)."""
        return PAPERS.get(self.paper, self.paper)


def _f(x: float) -> str:
    return f"{x:.3f}"


# ------------------------------------------------------------------ HIB (notebooks 03, 04, 05)
_NB3, _NB4, _NB5 = "03_self_organization", "04_known_unknowns", "05_kl_and_soft_contrastive"
_T1, _T5, _T6 = hib.HIB_TABLE1, hib.HIB_TABLE5, hib.HIB_TABLE6
_CC = ("clean", "clean")

_HIB = [
    *(Unjudged("hib", f"Table 1 (N={n}, D={d})",
               f"MoG-2 beats point on corrupt input: AP {_f(t['MoG-2']['ap_corrupt'])} vs "
               f"{_f(t['point']['ap_corrupt'])}, KNN {_f(t['MoG-2']['knn_corrupt'])} vs "
               f"{_f(t['point']['knn_corrupt'])}", _NB4,
               "no MoG-2 gap row: only point and MoG-1 are retrained over seeds; MoG-2's cells enter Table 1's "
               "absolute-numbers row only")
      for (n, d), t in _T1.items()),
    Unjudged("hib", "Table 1",
             "MoG-1 and MoG-2 − point on clean AP and KNN: −0.029 to +0.037 over the four settings (the text: "
             "better 'especially for corrupted test images')", _NB4,
             "the text sizes HIB's gain on corrupt inputs only; the clean cells enter Table 1's absolute-numbers "
             "row only"),
    Unjudged("hib", "Table 2", "the single τ of MoG-1 and MoG-2, 16 each, 0.28 to 0.87", _NB4,
             "judged through each model's mean of its four τ per setting (a level row); a single τ is not a row"),
    Unjudged("hib", "Table 4 (N=3, D=4)",
             "the single τ of " + " and ".join(
                 f"{m} (" + ", ".join(f"{hib.HIB_TABLE4[(3, 4)][m][k]:.2f}" for k, _ in hib.TABLE2_ROWS) + ")"
                 for m in ("MoG-1", "MoG-2")),
             _NB4, "judged through each model's mean of its four τ (a level row); a single τ is not a row"),
    Unjudged("hib", "Figure 5", "performance falls from the most to the least certain η(x) bin (curves, no number)",
             _NB4, "a figure with no number; its trend is what Table 2's τ rows decide"),
    Unjudged("hib", "Figure 9 (b, c)",
             "'clearly more confusion for the highly uncertain samples' (match-score histograms, no number)", _NB4,
             "a figure with no number"),
    Unjudged("hib", "Table 6",
             "MoG-1 vs point with a clean gallery and a clean probe: "
             + ", ".join(f"{_f(t['MoG-1'][_CC])} vs {_f(t['point'][_CC])}" for t in _T6.values())
             + " (N2D2, N2D3, N3D2, N3D3)", _NB4,
             "the paper claims HIB's gain only for tasks with corrupt input; its clean/clean gaps are 0.008 or less "
             "and tie at N=3, D=3"),
    Unjudged("hib", "App. G",
             "plurality voting improves KNN over majority (Table 6 vs Table 1), point: " + ", ".join(
                 f"{_f(_T6[k]['point'][_CC])} vs {_f(_T1[k]['point']['knn_clean'])}" for k in _T6), _NB4,
             "true by construction (every majority-correct probe is plurality-correct); the sanity rows check it "
             "for MoG-1 only"),
    Unjudged("hib", "Table 6", "the absolute numbers: 24 plurality-KNN accuracies of point and MoG-1, 0.293 to 0.952",
             _NB4, "Table 6 is judged on its MoG-1 − point gaps with corrupt input; there is no absolute-numbers "
                   "row for it (Tables 1 and 4 have one)"),
    Unjudged("hib", "Table 7", "the 12 single τ of MoG-1, 0.29 to 0.94", _NB4,
             "judged only as each setting's lead of the corrupt probe's τ over the larger other τ (a size row); "
             "a single τ is not a row"),
    Unjudged("hib", "Table 5 (N=3, D=3)",
             f"β = 1e-4 vs β = 0, AP corrupt: {_f(_T5[(3, 3)][1e-4]['ap_corrupt'])} vs "
             f"{_f(_T5[(3, 3)][0.0]['ap_corrupt'])} (+0.000)", _NB5, "the paper's two cells tie"),
    Unjudged("hib", "Table 5", "the absolute numbers: 32 cells of AP, KNN and τ at β = 0 and 1e-4 (N2D2, N3D3)", _NB5,
             "Table 5 is judged on its gaps between β = 1e-4 and β = 0; there is no absolute-numbers row for it "
             "(Tables 1 and 4 have one)"),
    Unjudged("hib", "App. D",
             f"the levels of the mean run length: HIB {hib.HIB_NUMBER_LINE['hib_mean_run']}, point "
             f"{hib.HIB_NUMBER_LINE['point_mean_run']} classes", _NB3,
             "only their gap is a row; the paper does not say whether single classes count as runs, so a level "
             "depends on that choice"),
]

# ------------------------------------------------------------------ SPE (notebooks 06, 07)
_NB6, _NB7 = "06_spe_lshapes", "07_spe_ndigit"

_SPE = [
    Unjudged("spe", "sec. 4.1",
             "a Bayes optimal classifier has an accuracy of approximately "
             f"{100 * spe.SPE_LSHAPES['bayes_accuracy']:.0f}%",
             _NB6, "computed in closed form from the class distributions App. A.2 states, with no training, so it "
                   "cannot fail; it enters the SPE-to-Bayes gap row"),
    Unjudged("spe", "sec. 4.1",
             f"held-out accuracy ≈ {100 * spe.SPE_LSHAPES['spe_accuracy']:.0f}%, beside ours with 50 support "
             "images per class and on full-length legs", _NB6,
             "the paper forms prototypes from two instances per class; only that set-up on the training legs' "
             "range is a row, the others are shown for contrast"),
    Unjudged("spe", "Table 2", "SPE accuracy and SPE − PN in single (N, D) cells (24 of each)",
             _NB7, "judged pooled over the settings, like the paper's MEAN column (over trained seeds at N=2, D=2 "
                   "where they exist); a single cell is not a row"),
    Unjudged("spe", "Table 2", "the HIB rows: accuracies (Oh et al.'s), 24 cells, 31.8 to 95.2", _NB7,
             "the paper's HIB cells are Oh et al.'s 5-NN leave-one-out on ~140 images per class; ours are scored "
             "with the PN/SPE episodes (50 support per class), so the levels are not the same measurement"),
    Unjudged("spe", "Table 2", "the contrastive rows: accuracies (Oh et al.'s), 24 cells, 26.2 to 95.0", _NB7,
             "the paper's contrastive cells are Oh et al.'s 5-NN leave-one-out on ~140 images per class; ours (a "
             "point model through the PN rule) are scored with episodes, so the levels are not the same measurement"),
    Unjudged("spe", "sec. 4.3, Figure 6b/c", "SPE is worse than HIB on only 7 of the 24 individual "
             "conditions", _NB7,
             "the paper's HIB cells are Oh et al.'s 5-NN numbers, not episodes, so a cell-by-cell count mixes two "
             "protocols; the six condition means are a sanity row"),
    Unjudged("spe", "sec. 4.3", "'the deterministic methods perform consistently worse than "
             "the stochastic methods' (contrastive below HIB)", _NB7,
             "a statement with no size, about Oh et al.'s cells; PN below SPE is decided by the SPE − PN rows, "
             "contrastive below HIB is not a row"),
]

# ------------------------------------------------------------------ Taha et al. (notebook 08)
_NB8 = "08_het_triplet_retrieval"
_TAHA_T1 = taha.TABLE1

_TAHA = [
    Unjudged("taha", "Table 1",
             "the absolute numbers: mAP " + " / ".join(f"{v['map'][0]:.2f}" for v in _TAHA_T1.values()) + ", top-5 "
             + " / ".join(f"{v['top5'][0]:.2f}" for v in _TAHA_T1.values()) + " (DukeMTMC-reID)", _NB8,
             "levels on other data (DukeMTMC-reID people vs unseen 2-digit MNIST classes) are not comparable at kit "
             "scale: only gaps between rows are compared"),
    Unjudged("taha", "Table 1",
             f"Tri + Aug − Tri, top-5: {_TAHA_T1['Tri + Aug']['top5'][0]:.2f} vs {_TAHA_T1['Tri']['top5'][0]:.2f} "
             f"({_TAHA_T1['Tri + Aug']['top5'][0] - _TAHA_T1['Tri']['top5'][0]:+.2f})", _NB8,
             "our top-5 lies within 1 point of 100 in every row (99.43 to 99.61), so top-5 gaps sit at the ceiling "
             "(the hetero top-5 rows are sanity checks for the same reason); the augmentation gap is judged on mAP"),
    Unjudged("taha", "Table 2",
             "the absolute numbers: mAP " + " / ".join(f"{v[0]:.2f}" for v in taha.TABLE2.values())
             + " (Clothing1M)", _NB8,
             "levels on other data (Clothing1M shop photos vs Fashion-MNIST with synthetic label noise) are not "
             "comparable at kit scale: only gaps between rows are compared"),
    Unjudged("taha", "Table 2",
             f"Hetero Cleaning − Tri + Hetero: {taha.TABLE2['uncertainty cleaning 20%'][0]:.2f} vs "
             f"{taha.TABLE2['Tri + Hetero on noisy'][0]:.2f} ({taha.table2_gain('uncertainty cleaning 20%'):+.2f})",
             _NB8,
             "not a second claim: it is uncertainty vs random cleaning (+2.24, a row) plus the random removal's "
             "+0.06 (a sanity row)"),
    Unjudged("taha", "Table 4",
             "hetero − baseline, macro mAP: {1:.2f} vs {0:.2f} ({2:+.2f})".format(
                 *taha.TABLE4_STIMULUS["Macro mAP"],
                 taha.TABLE4_STIMULUS["Macro mAP"][1] - taha.TABLE4_STIMULUS["Macro mAP"][0]),
             _NB8, "it contradicts sec. 5.4's 'macro mAP decreases', which holds for Table 3 only; the macro row "
                   "follows the text (Table 3's −1.82)"),
    Unjudged("taha", "Fig. 7", "very uncertain queries retrieve look-alike classes among their top-4 (examples, no "
             "number)", _NB8, "a figure with no number"),
]

# ------------------------------------------------------------------ URL (notebook 09)
_NB9 = "09_url_benchmark"

_URL = [
    Unjudged("url", "Sec. 4.3",
             f"best average R-AUROC MCInfoNCE {url.HEADLINE_R_AUROC['mcinfonce']}, Losspred "
             f"{url.HEADLINE_R_AUROC['losspred']}", _NB9,
             "levels on other data (CUB/CARS/SOP from ImageNet-pretrained backbones vs unseen digit pairs and "
             "Fashion pairs); the two values are 0.001 apart, too close to order, and our MCInfoNCE did not train"),
    Unjudged("url", "Sec. 4.3",
             f"average R@1 nivMF {url.HEADLINE_R1['nivmf']}, Losspred {url.HEADLINE_R1['losspred']}", _NB9,
             "levels on other data (CUB/CARS/SOP vs unseen digit pairs and Fashion pairs); their order is judged "
             "by the rank rows"),
    Unjudged("url", "Sec. 4.5",
             f"the majority of models reach an upstream R-AUROC above {url.UPSTREAM_R_AUROC_MAJORITY} (ImageNet)",
             _NB9, "a level on other data (ImageNet vs the seen 2-digit classes)"),
    Unjudged("url", "Fig. 1, Fig. 2", "R-AUROC and R@1 per method and backbone (figures only)", _NB9,
             "the paper gives per-method values only in its figures, with no number to compare; its stated averages "
             "and top three are listed here or judged by rows"),
]

UNJUDGED: tuple[Unjudged, ...] = (*_HIB, *_SPE, *_TAHA, *_URL)


def by_paper() -> dict[str, int]:
    """The number of records per paper key, in the order of `PAPERS`."""
    return {p: sum(r.paper == p for r in UNJUDGED) for p in PAPERS}
