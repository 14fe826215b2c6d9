"""The measurements of notebook 08: Taha et al. 2019 ("Unsupervised data uncertainty learning in visual
retrieval systems") at kit scale. Every function takes embeddings (numpy arrays) or a model plus images, and
returns plain numbers or arrays; `hedgekit.papers.taha.claims` sets them beside the paper's.

Protocol choices where the paper is silent or its data are out of reach (each tested):

* Retrieval (Tables 1-4): the test images are split per class into 25% queries and 75% gallery
  (`hedgekit.data.subsets.query_gallery_split`), ranked by Euclidean distance between embedding means
  (the paper's D, eq. 2); mAP and CMC top-k as `hedgekit.evaluation.metrics`. Table 1's test classes are the
  *unseen* 2-digit classes (re-ID identities are disjoint between training and test); Fashion-MNIST's
  queries and gallery carry clean labels, as Clothing1M's validation and test sets do (sec. 5.2).
* Uncertainty u(x) = sigma^2 = e^s, the extra output of the d + 1 head (`hedgekit.methods.het_triplet.uncertainty`).
* Gallery cleaning (Table 2): `hedgekit.evaluation.retrieval.map_after_removing_uncertain`; the random row
  removes from the same heteroscedastic model's gallery (the paper does not say which model it used).
* Beyond the paper, label-noise detection on the noisy *training* set, where we know which labels were
  flipped: three scores rank the training images, each computed on the heteroscedastic model's embedding
  (so they differ only in how they read it):

  - **uncertainty**: sigma^2 (largest first);
  - **small loss** (the small-loss criterion of co-teaching, Han et al. 2018, for an embedding): the
    soft-margin triplet loss of the image against class centroids of the given labels,
    softplus(D(z, c_y) - min_{c != y} D(z, c)) (`centroid_triplet_loss`);
  - **cleanlab** (confident learning, Northcutt et al. 2021): `cleanlab.filter.find_label_issues` on
    out-of-fold predicted probabilities from a multinomial logistic regression on the standardised embedding
    means, 5-fold (`out_of_fold_probabilities`). Logistic regression: linear in the embedding the triplet
    loss shapes, seconds on 60k x 16 numbers, calibrated enough for confident learning (a kNN's
    probabilities come in steps of 1/k and tie). The *embedding* saw every noisy label during training;
    only the classifier is out-of-fold. cleanlab picks its own number of issues (reported as such); its
    ranking at 5/10/20% uses the same probabilities' self-confidence (`cleanlab.rank.get_label_quality_scores`).

  `precision_recall_at` scores each ranking at 5/10/20% removed.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from hedgekit.data.subsets import query_gallery_split
from hedgekit.errors import InputError
from hedgekit.evaluation import metrics as M
from hedgekit.evaluation.arrays import checked_array, same_length
from hedgekit.evaluation.embedded import images_to_tensor
from hedgekit.evaluation.retrieval import map_after_removing_uncertain
from hedgekit.methods.het_triplet import uncertainty
from hedgekit.papers.verdict import Spread

__all__ = ["KS", "CLEANING_FRACTION", "DETECTION_FRACTIONS", "embed", "split", "retrieval_metrics",
           "mean_std", "cleaning_rows", "centroid_triplet_loss", "out_of_fold_probabilities", "detection_scores",
           "precision_recall_at", "detection_table", "most_uncertain_per_class", "flipped_share",
           "ap_vs_uncertainty", "top_retrievals", "pca_2d", "centre_distance_correlation", "per_class_map",
           "head_tail"]

KS = (1, 5, 10)  # CMC top-k of Table 1 (the paper prints top-5 only)
CLEANING_FRACTION = 0.2  # Table 2: 20% of the gallery removed
DETECTION_FRACTIONS = (0.05, 0.10, 0.20)


# --------------------------------------------------------------------------- embeddings and splits
def embed(model, images, batch_size: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """(N, d) embedding means and (N,) u(x) = sigma^2 = e^s of a d + 1 network (sec. 4), in eval mode."""
    with torch.no_grad():
        emb = model.embed(images_to_tensor(images), batch_size)
    return emb.mixture_mean().numpy(), uncertainty(emb).numpy()


def split(labels, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(query, gallery) indices: 25% of every class as queries (query-by-example, sec. 5.1)."""
    return query_gallery_split(np.asarray(labels), 0.25, seed)


def retrieval_metrics(emb, labels, seed: int = 0, ks: Sequence[int] = KS) -> dict:
    """Table 1's numbers on one embedded test set: mAP and top-k (fractions in [0, 1]), queries vs gallery."""
    labels = np.asarray(labels)
    q, g = split(labels, seed)
    out = {"map": M.mean_average_precision(emb[q], labels[q], emb[g], labels[g])}
    out.update({f"top{k}": v for k, v in M.top_k_accuracy(emb[q], labels[q], emb[g], labels[g], ks).items()})
    return out


def mean_std(runs: Sequence[Mapping]) -> dict:
    """{key: (mean, std)} over runs (std with ddof = 1; NaN for a single run), as the paper's "mean ± std".

    Each value is a `hedgekit.papers.verdict.Spread`: a (mean, std) pair that keeps the runs' values in run
    order, so the claims can build intervals and paired differences (`hedgekit.papers.verdict.paired_effect`)."""
    if not runs:
        raise InputError("mean_std needs at least one run")
    return {key: Spread([float(r[key]) for r in runs]) for key in runs[0]}


# --------------------------------------------------------------------------- Table 2: gallery cleaning
def cleaning_rows(emb, u, labels, fraction: float = CLEANING_FRACTION, seed: int = 0) -> dict:
    """Table 2's last rows for one heteroscedastic model: mAP of the full gallery, after removing a random
    ``fraction`` of it, and after removing its ``fraction`` most uncertain images (sec. 5.2)."""
    labels = np.asarray(labels)
    q, g = split(labels, seed)
    args = (emb[q], labels[q], emb[g], labels[g], u[g])
    full, cleaned = map_after_removing_uncertain(*args, [0.0, fraction])
    (rand,) = map_after_removing_uncertain(*args, [fraction], rng=seed, random=True)
    return {"map": full["map"], "random": rand["map"], "uncertain": cleaned["map"]}


# --------------------------------------------------------------------------- beyond: detecting flipped labels
def centroid_triplet_loss(emb, labels) -> np.ndarray:
    """(N,) small-loss score: softplus(D(z, c_y) - min_{c != y} D(z, c)) with c the class centroids of the
    given (noisy) labels; the soft-margin triplet loss (eq. 8) with centroids as positive and negative."""
    emb, labels = np.asarray(emb, dtype=np.float64), np.asarray(labels)
    classes = np.unique(labels)
    if len(classes) < 2:
        raise InputError("the small-loss score needs at least two classes")
    d = torch.cdist(torch.as_tensor(emb), torch.as_tensor(M.class_centroids(emb, labels)[1]))
    own = torch.as_tensor(np.searchsorted(classes, labels))
    d_pos = d.gather(1, own[:, None]).squeeze(1)
    d_neg = d.scatter(1, own[:, None], float("inf")).min(1).values
    return F.softplus(d_pos - d_neg).numpy()


def out_of_fold_probabilities(emb, labels, folds: int = 5, seed: int = 0) -> np.ndarray:
    """(N, C) out-of-fold p(y|x) of a multinomial logistic regression on the standardised embedding means
    (module docstring: why this classifier)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
    with threadpool_limits(1):  # BLAS threads on shared cores: 25x slower (67 s vs 2.7 s for 10k images, measured)
        return cross_val_predict(clf, np.asarray(emb), np.asarray(labels), cv=cv, method="predict_proba")


def detection_scores(emb, u, labels, folds: int = 5, seed: int = 0) -> dict:
    """Scores "higher = more likely mislabelled" of the three detectors (module docstring), plus
    ``cleanlab_flagged``: the boolean mask `cleanlab.filter.find_label_issues` returns (its own count)."""
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    labels = np.asarray(labels)
    probs = out_of_fold_probabilities(emb, labels, folds, seed)
    return {"uncertainty": np.asarray(u, dtype=np.float64), "small loss": centroid_triplet_loss(emb, labels),
            "cleanlab": 1.0 - get_label_quality_scores(labels, probs, method="self_confidence"),
            "cleanlab_flagged": find_label_issues(labels, probs, n_jobs=1)}


def precision_recall_at(score, flipped, fractions: Sequence[float] = DETECTION_FRACTIONS) -> list[dict]:
    """Precision and recall of "the ``f`` highest-scoring items are the mislabelled ones", for each f.

    Ties go to the lower index (stable sort). Recall cannot exceed f / noise rate.
    """
    score = checked_array(score, "score", float)
    flipped = checked_array(flipped, "flipped", bool)
    same_length(score=score, flipped=flipped)
    if not flipped.any():
        raise InputError("no item is flipped: precision and recall of a detector are undefined")
    order = np.argsort(-score, kind="stable")
    out = []
    for f in fractions:
        if not 0 < f <= 1:
            raise InputError(f"fractions must be in (0, 1]; got {f}")
        n = max(1, int(round(f * len(score))))
        hits = int(flipped[order[:n]].sum())
        out.append({"fraction": float(f), "n": n, "precision": hits / n, "recall": hits / int(flipped.sum())})
    return out


def detection_table(scores: Mapping, flipped, fractions: Sequence[float] = DETECTION_FRACTIONS):
    """DataFrame: one row per detector and fraction (precision, recall), plus cleanlab's own flagged set."""
    import pandas as pd

    flipped = np.asarray(flipped, dtype=bool)
    rows = [dict(detector=name, **r) for name in ("uncertainty", "small loss", "cleanlab")
            for r in precision_recall_at(scores[name], flipped, fractions)]
    flagged = np.asarray(scores["cleanlab_flagged"], dtype=bool)
    n = int(flagged.sum())
    hits = int((flagged & flipped).sum())
    rows.append(dict(detector="cleanlab (own threshold)", fraction=n / len(flipped), n=n,
                     precision=hits / n if n else float("nan"), recall=hits / int(flipped.sum())))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures' data
def most_uncertain_per_class(u, labels, n: int = 5) -> dict[int, np.ndarray]:
    """Fig. 5: {class: indices of its n most uncertain items, most uncertain first} (classes by given label)."""
    u, labels = np.asarray(u), np.asarray(labels)
    out = {}
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        out[int(c)] = idx[np.argsort(-u[idx], kind="stable")[:n]]
    return out


def flipped_share(picked: Mapping, flipped) -> float:
    """Share of flipped labels among the items of `most_uncertain_per_class`."""
    idx = np.concatenate([np.asarray(v) for v in picked.values()])
    return float(np.asarray(flipped)[idx].mean())


def ap_vs_uncertainty(ap, u, n_bins: int = 10) -> dict:
    """Fig. 6: Pearson r between each query's AP and its uncertainty, and the mean ± std of u in equal-count
    bins of AP percentile (bin 0 = lowest AP). Queries with a NaN AP (no relevant gallery item) are left out."""
    from scipy import stats

    ap, u = np.asarray(ap, dtype=np.float64), np.asarray(u, dtype=np.float64)
    keep = np.isfinite(ap)
    ap, u = ap[keep], u[keep]
    bins = M.equal_count_bins(ap, n_bins)
    mean = np.array([u[bins == b].mean() for b in range(n_bins)])
    std = np.array([u[bins == b].std() for b in range(n_bins)])
    r = float(stats.pearsonr(ap, u)[0]) if np.ptp(ap) > 0 and np.ptp(u) > 0 else float("nan")
    return {"r": r, "percentile": (np.arange(n_bins) + 0.5) * 100 / n_bins, "u_mean": mean, "u_std": std,
            "n": int(len(ap))}


def top_retrievals(query_emb, gallery_emb, k: int = 4) -> np.ndarray:
    """Fig. 7: (Q, k) gallery indices of each query's k nearest items (Euclidean; ties -> lower index)."""
    idx, _ = M.topk_neighbours(M.euclidean_score_fn(torch.as_tensor(query_emb), torch.as_tensor(gallery_emb)),
                               len(query_emb), len(gallery_emb), k)
    return np.asarray(idx)


def pca_2d(emb) -> np.ndarray:
    """Fig. 8: (N, 2) projection on the two leading principal axes (centred, by SVD)."""
    x = np.asarray(emb, dtype=np.float64)
    x = x - x.mean(0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    return x @ vt[:2].T


def centre_distance_correlation(emb, u, labels) -> float:
    """Fig. 8's reading "points near class centres have lower uncertainty": Spearman rho between each item's
    distance to its class centroid and its uncertainty (> 0 agrees)."""
    from scipy import stats

    emb, labels = np.asarray(emb, dtype=np.float64), np.asarray(labels)
    classes, centroids = M.class_centroids(emb, labels)
    dist = np.linalg.norm(emb - centroids[np.searchsorted(classes, labels)], axis=1)
    return float(stats.spearmanr(dist, u)[0])


# --------------------------------------------------------------------------- Tables 3/4: imbalance
def per_class_map(emb, labels, seed: int = 0) -> dict:
    """Tables 3/4 on one embedded test set: ``per_class`` {class: mAP of its queries}, ``micro`` (mean AP over
    all queries) and ``macro`` (mean of the per-class values), the paper's two averages (sec. 5.3)."""
    labels = np.asarray(labels)
    q, g = split(labels, seed)
    ap = M.retrieval_average_precision(emb[q], labels[q], emb[g], labels[g])
    per = {int(c): float(np.nanmean(ap[labels[q] == c])) for c in np.unique(labels[q])}
    return {"per_class": per, "micro": float(np.nanmean(ap)), "macro": float(np.mean(list(per.values())))}


def head_tail(per_class: Mapping[int, float], train_counts: Mapping[int, int]) -> dict:
    """Mean per-class mAP of the head (the more frequent half of the training classes) and of the tail."""
    ranked = sorted(per_class, key=lambda c: (-train_counts[c], c))
    half = len(ranked) // 2
    return {"head": float(np.mean([per_class[c] for c in ranked[:half]])),
            "tail": float(np.mean([per_class[c] for c in ranked[half:]])),
            "head_classes": ranked[:half], "tail_classes": ranked[half:]}
