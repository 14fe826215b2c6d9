"""The numbers and findings of Kirchhof, Mucsányi, Oh & Kasneci, "URL: A Representation Learning Benchmark for
Transferable Uncertainty Estimates" (NeurIPS 2023, Datasets and Benchmarks), for side-by-side comparison
(facts, with attribution). This module is the only place they live.

The paper has no table of per-method R-AUROC or R@1 values: per-method results appear only in its figures
(Fig. 1 bars, Fig. 2 scatter). What is stated in the text is copied here: the headline averages (Sec. 4.3,
zero-shot, CUB/CARS/SOP averaged over 3 datasets x 3 seeds; the backbone is not named), the "top 3" per
backbone (App. C.6), each method's statements per backbone, the compute table (App. C.7 Table 1) and the
rank correlations between metrics (Sec. 4.5, 4.6, App. C.2).
"""
from __future__ import annotations

METHODS = ("ce", "infonce", "mcinfonce", "elk", "nivmf", "hib", "hetxl", "sngp", "losspred", "ensemble", "mcdropout")
DISPLAY = {"ce": "CE", "infonce": "InfoNCE", "mcinfonce": "MCInfoNCE", "elk": "ELK", "nivmf": "nivMF", "hib": "HIB",
           "hetxl": "HET-XL", "sngp": "SNGP", "losspred": "Losspred", "ensemble": "Ensemble",
           "mcdropout": "MCDropout"}
FAMILY = {"ce": "baseline", "infonce": "baseline", "mcinfonce": "probabilistic embedding",
          "elk": "probabilistic embedding", "nivmf": "probabilistic embedding", "hib": "probabilistic embedding",
          "hetxl": "probabilistic embedding", "sngp": "direct variance", "losspred": "direct variance",
          "ensemble": "ensemble", "mcdropout": "ensemble"}

# Sec. 4.3 (zero-shot, average over CUB, CARS, SOP and 3 seeds; backbone not named in the sentence)
HEADLINE_R_AUROC = {"mcinfonce": 0.569, "losspred": 0.568}  # best and second-best average R-AUROC
HEADLINE_R1 = {"nivmf": 0.57, "losspred": 0.53}  # best and second-best average R@1
MANY_SHOT_R_AUROC = 0.68  # Sec. 4.2: ResNet-50 CE trained on the downstream classes (upper reference)
UPSTREAM_R_AUROC_MAJORITY = 0.7  # Sec. 4.5: "the majority of models achieves an R-AUROC above 0.7" upstream
ELK_VIT_CROP = 0.99  # App. C.3: ELK ViTs' cropped-image rate, even downstream
BEST_IMAGENET_TOP1 = 0.84  # App. C.3: CE ViT and nivMF ViT

# App. C.6: "the best three pretrained models" per backbone
TOP3 = {"ResNet-50": ("elk", "mcinfonce", "nivmf"), "ViT-Medium": ("elk", "losspred", "sngp")}
# Fig. 2 caption: the method that transfers best per backbone
BEST = {"ResNet-50": "mcinfonce", "ViT-Medium": "losspred"}

# Statements in the text, per backbone (Secs. 4.3-4.5, App. C.1-C.4), and App. C.7 Table 1:
# parameters (M), first-epoch time (s, ImageNet training + evaluation on 8 downstream sets), inference ms/sample.
RESNET50 = {
    "ce": ("baseline fails to transfer u(x); among the best two by R@1 when tuned for R@1", 25.6, 5971, 3.7),
    "infonce": ("baseline fails; no R@1/R-AUROC trade-off; positive rank correlation of R@1 and R-AUROC", 23.5, 6703, 3.7),
    "mcinfonce": ("best in both metrics among ResNets; top 3; no trade-off", 27.7, 6656, 3.8),
    "elk": ("'decent' on both backbones; top 3", 29.8, 6703, 3.8),
    "nivmf": ("'closely followed' MCInfoNCE; top 3", 29.8, 6256, 3.8),
    "hib": ("—", 29.8, 7279, 3.8),
    "hetxl": ("good OOD and mixed ID+OOD R-AUROC (run on A100)", 33.9, 4189, 2.3),
    "sngp": ("good OOD and mixed ID+OOD R-AUROC", 28.7, 7632, 3.7),
    "losspred": ("—", 29.8, 6526, 3.7),
    "ensemble": ("'Ensembles fail to provide transferable uncertainty estimates'", 46.0, 6002, 3.7),
    "mcdropout": ("no trade-off", 25.6, 7105, 13.1),
}
VIT_MEDIUM = {
    "ce": ("baseline fails; among the best two by R@1; ImageNet top-1 0.84", 38.9, 4922, 2.8),
    "infonce": ("baseline fails; good OOD", 38.3, 7804, 2.7),
    "mcinfonce": ("no trade-off", 41.0, 9883, 2.4),
    "elk": ("'decent' on both backbones; top 3; crop rate 0.99", 41.5, 4838, 2.7),
    "nivmf": ("no trade-off; positive rank correlation; ImageNet top-1 0.84", 41.5, 4121, 2.4),
    "hib": ("-0.21 R@1 for +0.01 R-AUROC (Fig. 3 trade-off)", 41.5, 3950, 2.5),
    "hetxl": ("no trade-off; positive rank correlation; good OOD", 39.4, 4205, 2.4),
    "sngp": ("top 3; direct variance 'has an edge on the ViTs'", 42.0, 4811, 2.9),
    "losspred": ("best among ViTs (Fig. 2); top 3", 41.5, 3814, 2.6),
    "ensemble": ("no trade-off; fails to transfer; good OOD", 44.0, 4107, 2.5),
    "mcdropout": ("good OOD (ViT only)", 38.9, 4721, 9.6),
}
BACKBONES = {"ResNet-50": RESNET50, "ViT-Medium": VIT_MEDIUM}

# Rank correlations between metrics (the paper says "Rank Corr." without naming Spearman or Kendall).
CORRELATIONS = {
    "up_vs_down_rauroc": (0.09, "upstream vs downstream R-AUROC, all hyperparameters (Fig. 4 left, Sec. 4.5)"),
    "crop_vs_down_rauroc": (0.54, "upstream cropped-image rate vs downstream R-AUROC, all hyperparameters "
                                  "(Fig. 4 right, Sec. 4.5)"),
    "human_vs_rauroc": (0.80, "human alignment a(f) vs R-AUROC on 5 Schmarje et al. datasets (Fig. 5 left)"),
    "crop_vs_rauroc_human_sets": (0.71, "crop detection vs R-AUROC on the 5 Schmarje et al. datasets (Fig. 5 right)"),
}
# App. C.2: R@1 vs R-AUROC within a model across hyperparameters is negative in 15 of 22 models.
R1_VS_RAUROC_NEGATIVE = (15, 22)
# Sec. 4.4: 14 of the 22 models show large R@1 / R-AUROC trade-offs between their best settings.
TRADEOFF_MODELS = (14, 22)
PAPER_TRAINING = ("ImageNet-1k upstream, 32 epochs from a pretrained ResNet-50 / ViT-Medium, Lamb, batch 2048, "
                  "10 hyper-parameter searches per method, 3.2 GPU-years in total (App. A.3, C.7)")
