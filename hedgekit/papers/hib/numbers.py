"""The numbers HIB reports, for side-by-side comparison (facts, with attribution).

Source: Oh et al., "Modeling Uncertainty with Hedged Instance Embedding", ICLR 2019
(Tables 1-7 and Appendix D). Keys are (N, D) pairs. This module is the only place
these numbers live: notebooks, the CLI, the README check and the claims read them from here.
"""
from __future__ import annotations

# HIB Table 1: verification AP and KNN accuracy (probe clean; gallery clean / corrupt).
HIB_TABLE1 = {
    (2, 2): {"point": dict(ap_clean=0.987, ap_corrupt=0.880, knn_clean=0.871, knn_corrupt=0.583),
             "MoG-1": dict(ap_clean=0.989, ap_corrupt=0.907, knn_clean=0.879, knn_corrupt=0.760),
             "MoG-2": dict(ap_clean=0.990, ap_corrupt=0.912, knn_clean=0.888, knn_corrupt=0.757)},
    (2, 3): {"point": dict(ap_clean=0.996, ap_corrupt=0.913, knn_clean=0.942, knn_corrupt=0.874),
             "MoG-1": dict(ap_clean=0.996, ap_corrupt=0.926, knn_clean=0.953, knn_corrupt=0.909),
             "MoG-2": dict(ap_clean=0.996, ap_corrupt=0.932, knn_clean=0.939, knn_corrupt=0.885)},
    (3, 2): {"point": dict(ap_clean=0.978, ap_corrupt=0.886, knn_clean=0.554, knn_corrupt=0.274),
             "MoG-1": dict(ap_clean=0.981, ap_corrupt=0.899, knn_clean=0.591, knn_corrupt=0.350),
             "MoG-2": dict(ap_clean=0.976, ap_corrupt=0.904, knn_clean=0.540, knn_corrupt=0.351)},
    (3, 3): {"point": dict(ap_clean=0.987, ap_corrupt=0.901, knn_clean=0.795, knn_corrupt=0.522),
             "MoG-1": dict(ap_clean=0.989, ap_corrupt=0.922, knn_clean=0.770, knn_corrupt=0.555),
             "MoG-2": dict(ap_clean=0.991, ap_corrupt=0.925, knn_clean=0.766, knn_corrupt=0.598)},
}

# HIB Table 2: Kendall's tau between eta bin and performance (sign inverted).
HIB_TABLE2 = {
    (2, 2): {"MoG-1": dict(tau_ap_clean=0.74, tau_ap_corrupt=0.81, tau_knn_clean=0.71, tau_knn_corrupt=0.47),
             "MoG-2": dict(tau_ap_clean=0.43, tau_ap_corrupt=0.79, tau_knn_clean=0.57, tau_knn_corrupt=0.43)},
    (2, 3): {"MoG-1": dict(tau_ap_clean=0.68, tau_ap_corrupt=0.86, tau_knn_clean=0.72, tau_knn_corrupt=0.55),
             "MoG-2": dict(tau_ap_clean=0.48, tau_ap_corrupt=0.87, tau_knn_clean=0.47, tau_knn_corrupt=0.52)},
    (3, 2): {"MoG-1": dict(tau_ap_clean=0.63, tau_ap_corrupt=0.82, tau_knn_clean=0.76, tau_knn_corrupt=0.49),
             "MoG-2": dict(tau_ap_clean=0.28, tau_ap_corrupt=0.76, tau_knn_clean=0.29, tau_knn_corrupt=0.50)},
    (3, 3): {"MoG-1": dict(tau_ap_clean=0.51, tau_ap_corrupt=0.85, tau_knn_clean=0.74, tau_knn_corrupt=0.67),
             "MoG-2": dict(tau_ap_clean=0.39, tau_ap_corrupt=0.79, tau_knn_clean=0.54, tau_knn_corrupt=0.34)},
}

# HIB Table 4 (App. C.1): 3-digit MNIST, D = 4, the protocol of Tables 1 and 2. (a) AP and KNN accuracy of
# point / MoG-1 / MoG-2; (b) Kendall's tau between eta bin and performance (sign inverted), MoG-1 / MoG-2 only.
HIB_TABLE4 = {
    (3, 4): {"point": dict(ap_clean=0.996, ap_corrupt=0.942, knn_clean=0.914, knn_corrupt=0.803),
             "MoG-1": dict(ap_clean=0.996, ap_corrupt=0.944, knn_clean=0.917, knn_corrupt=0.816,
                           tau_ap_clean=0.35, tau_ap_corrupt=0.79, tau_knn_clean=0.31, tau_knn_corrupt=0.42),
             "MoG-2": dict(ap_clean=0.995, ap_corrupt=0.948, knn_clean=0.922, knn_corrupt=0.809,
                           tau_ap_clean=0.33, tau_ap_corrupt=0.68, tau_knn_clean=0.32, tau_knn_corrupt=0.35)},
}

# HIB Table 5: single Gaussian, beta = 0 vs 1e-4.
HIB_TABLE5 = {
    (2, 2): {0.0: dict(ap_clean=0.986, ap_corrupt=0.900, knn_clean=0.867, knn_corrupt=0.729, tau_ap_clean=0.680,
                       tau_ap_corrupt=0.864, tau_knn_clean=0.748, tau_knn_corrupt=0.636),
             1e-4: dict(ap_clean=0.988, ap_corrupt=0.906, knn_clean=0.891, knn_corrupt=0.781, tau_ap_clean=0.766,
                        tau_ap_corrupt=0.836, tau_knn_clean=0.800, tau_knn_corrupt=0.609)},
    (3, 3): {0.0: dict(ap_clean=0.993, ap_corrupt=0.932, knn_clean=0.858, knn_corrupt=0.685, tau_ap_clean=0.425,
                       tau_ap_corrupt=0.677, tau_knn_clean=-0.080, tau_knn_corrupt=0.183),
             1e-4: dict(ap_clean=0.992, ap_corrupt=0.932, knn_clean=0.861, knn_corrupt=0.730, tau_ap_clean=0.630,
                        tau_ap_corrupt=0.764, tau_knn_clean=0.685, tau_knn_corrupt=0.549)},
}

# HIB Table 6: plurality-vote KNN; keys (gallery, probe).
HIB_TABLE6 = {
    (2, 2): {"point": {("clean", "clean"): 0.882, ("clean", "corrupt"): 0.435, ("corrupt", "clean"): 0.762},
             "MoG-1": {("clean", "clean"): 0.879, ("clean", "corrupt"): 0.499, ("corrupt", "clean"): 0.816}},
    (2, 3): {"point": {("clean", "clean"): 0.950, ("clean", "corrupt"): 0.516, ("corrupt", "clean"): 0.922},
             "MoG-1": {("clean", "clean"): 0.952, ("clean", "corrupt"): 0.578, ("corrupt", "clean"): 0.943}},
    (3, 2): {"point": {("clean", "clean"): 0.658, ("clean", "corrupt"): 0.293, ("corrupt", "clean"): 0.495},
             "MoG-1": {("clean", "clean"): 0.650, ("clean", "corrupt"): 0.318, ("corrupt", "clean"): 0.540}},
    (3, 3): {"point": {("clean", "clean"): 0.873, ("clean", "corrupt"): 0.447, ("corrupt", "clean"): 0.776},
             "MoG-1": {("clean", "clean"): 0.873, ("clean", "corrupt"): 0.499, ("corrupt", "clean"): 0.812}},
}

# HIB Table 7: Kendall tau, eta vs plurality KNN (MoG-1); keys (gallery, probe).
HIB_TABLE7 = {
    (2, 2): {("clean", "clean"): 0.71, ("clean", "corrupt"): 0.94, ("corrupt", "clean"): 0.46},
    (2, 3): {("clean", "clean"): 0.61, ("clean", "corrupt"): 0.89, ("corrupt", "clean"): 0.52},
    (3, 2): {("clean", "clean"): 0.72, ("clean", "corrupt"): 0.86, ("corrupt", "clean"): 0.29},
    (3, 3): {("clean", "clean"): 0.60, ("clean", "corrupt"): 0.90, ("corrupt", "clean"): 0.45},
}

# HIB Appendix D (N=2, D=1), four trials each.
HIB_NUMBER_LINE = {"hib_adjacency": (76, 80), "point_adjacency": (42, 74),
                   "hib_mean_run": 4.6, "point_mean_run": 3.0}

TABLE1_ROWS = (("ap_clean", "AP clean"), ("ap_corrupt", "AP corrupt"),
               ("knn_clean", "KNN clean"), ("knn_corrupt", "KNN corrupt"))
TABLE2_ROWS = (("tau_ap_clean", "tau AP clean"), ("tau_ap_corrupt", "tau AP corrupt"),
               ("tau_knn_clean", "tau KNN clean"), ("tau_knn_corrupt", "tau KNN corrupt"))

# HIB App. A, Table 3 (N-digit MNIST). N = 3 tests use 100 seen and 100 unseen classes.
HIB_TABLE3 = {
    2: dict(total_classes=100, train_classes=70, unseen_test_classes=30, seen_test_classes=70,
            train_images=100_000, test_images=10_000),
    3: dict(total_classes=1000, train_classes=700, unseen_test_classes=100, seen_test_classes=100,
            train_images=100_000, test_images=10_000),
}
