"""The numbers Taha et al. report, for side-by-side comparison (facts, with attribution): A. Taha, Y.-T. Chen,
X. Yang, T. Misu, L. Davis, "Unsupervised data uncertainty learning in visual retrieval systems" (2019), as
extracted in ../shared/reference/paper_numbers.md. This module is the only place these numbers live.

mAP and top-k are percentages as printed. The "±" values are printed as ±0.00x beside percentages; the paper
does not say on which scale (we keep them as printed and do not compare them with ours in points).
"""
from __future__ import annotations

# Table 1 — DukeMTMC-reID, mean ± std over 5 runs: row -> {"map": (mean, std), "top5": (mean, std)}.
# Our analogue's rows carry the same labels (`hedgekit.papers.taha.experiments.TABLE1_ROWS`).
TABLE1 = {
    "Tri": {"map": (56.08, 0.005), "top5": (86.76, 0.007)},
    "Tri + Hetero": {"map": (55.16, 0.002), "top5": (86.03, 0.005)},
    "Tri + Aug": {"map": (56.44, 0.006), "top5": (86.11, 0.003)},
    "Tri + Aug + Hetero": {"map": (56.74, 0.004), "top5": (86.20, 0.002)},
}
TABLE1_OTHERS = {"BoW+KISSME": 12.17, "LOMO+XQDA": 17.04, "Baseline (Zheng et al. 2016)": 44.99,
                 "PAN": 51.51, "SVDNet": 56.80}  # mAP of the other methods in Table 1, for reference

# Table 2 — Clothing1M retrieval mAP, mean ± std over 5 trials (the clean-only row has no std).
# The last two rows remove 20% of the search gallery (randomly / the most uncertain).
TABLE2 = {
    "clean subset only": (52.62, None),
    "Tri on noisy": (61.70, 0.001),
    "Tri + Hetero on noisy": (62.27, 0.001),
    "random cleaning 20%": (62.33, 0.003),
    "uncertainty cleaning 20%": (64.57, 0.002),
}
CLOTHING1M = {"clean_train": 22_933, "noisy_train": 1_024_637}
# Clothing1M's ~38% of wrong labels is not Taha et al.'s number: it is the estimate of the dataset's authors
# (T. Xiao, T. Xia, Y. Yang, C. Huang, X. Wang, "Learning from massive noisy labeled data for image
# classification", CVPR 2015); our analogue's rate is `hedgekit.data.subsets.CLOTHING1M_NOISE`.

# Tables 3 and 4 — HDD (Honda driving dataset), mAP: row -> (baseline, hetero); std values omitted.
TABLE3_GOAL = {
    "Micro mAP": (77.88, 78.45), "Macro mAP": (32.62, 30.8),
    "Intersection Passing": (89.1, 91.44), "Left turn": (81.29, 80.15), "Right Turn": (89.99, 89.19),
    "Left Lane Change": (24.65, 20.28), "Right Lane Change": (16.04, 9.19), "Crosswalk Passing": (1.13, 1.31),
    "U-turn": (3.59, 2.62), "Left Lane Branch": (14.03, 8.65), "Right Lane Branch": (2.15, 1.48),
    "Merge": (4.26, 3.62),
}
TABLE4_STIMULUS = {
    "Micro mAP": (66.50, 68.20), "Macro mAP": (35.33, 36.23),
    "Stop 4 Sign": (87.85, 89.18), "Stop 4 Light": (52.63, 49.86), "Stop 4 Congestion": (63.88, 67.88),
    "Stop 4 Others": (1.62, 1.02), "Stop 4 Pedestrian": (2.72, 2.56), "Avoid Parked Car": (3.30, 6.90),
}
# Sec. 5.4: the method is biased against minority classes, "micro mAP increases while macro mAP decreases"
# (true of Table 3 as printed, not of Table 4, where macro rises 35.33 -> 36.23).

FIG6_PEARSON_R = -0.5001  # query AP vs heteroscedastic uncertainty, Clothing1M queries
FIG8_QUERIES = 4000  # "4K random query items" in the PCA plot
UNCERTAINTY_BINS = 5  # Figs. 7-8: very low, low, moderate, high, very high (bin edges not stated)

PAPER_TRAINING = ("an ImageNet-pretrained ResNet with a fully connected head, 25k iterations of P x K batches "
                  "(18 x 4 on DukeMTMC-reID, 14 x 10 on Clothing1M), lr 3e-4 decaying to 1e-7, on a GPU")


def table2_gain(row: str) -> float:
    """A Table 2 row's mAP minus the heteroscedastic row's (points): random +0.06, uncertainty cleaning +2.30."""
    return TABLE2[row][0] - TABLE2["Tri + Hetero on noisy"][0]
