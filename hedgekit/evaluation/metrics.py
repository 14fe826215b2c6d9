"""Evaluation metrics of HIB (Oh et al., 2019) and URL (Kirchhof et al., 2023).

Pure functions: every argument may be a numpy array or a torch tensor (any
device); results are Python ``int``/``float`` or numpy arrays. Bad input
(wrong shape, length mismatch, NaN/inf, empty, ``k`` larger than the gallery)
raises :class:`hedgekit.errors.InputError` with a message saying what is wrong.

Where each metric comes from
----------------------------
HIB, Section 4.3 (Table 1)
    :func:`verification_pairs`, :func:`average_precision` -- verification AP on
    10k test pairs, half matching; :func:`topk_neighbours`,
    :func:`knn_predict`, :func:`knn_accuracy` -- KNN identification with
    K = 5 and a *majority* vote.
HIB, Section 4.4 (Table 2, Figure 5)
    :func:`equal_count_bins`, :func:`binned_accuracy`,
    :func:`pair_uncertainty`, :func:`binned_average_precision`,
    :func:`kendall_tau_bins` -- 20 equal-count uncertainty bins and Kendall's
    tau between bin index and performance, sign inverted.
HIB, Appendix G (Tables 6, 7)
    ``knn_predict(..., vote="plurality")`` -- plurality vote, ties broken by the
    closest neighbour; gallery/probe swaps via ``topk_neighbours(exclude=...)``.
HIB, Appendix D (Figure 11)
    :func:`class_centroids`, :func:`adjacency_score`,
    :func:`digit_run_lengths`, :func:`mean_run_length` -- how well a 1D
    embedding orders the 2-digit classes on the number line.
URL, Section 3.1 and Algorithm 1 (Figures 1, 2); Sections 4.5-4.6 (Figures 4, 5)
    :func:`recall_at_1` (``metric="cosine"`` as in the URL code, the default, or
    Euclidean), :func:`r_auroc`, :func:`crop_uncertainty_rate`,
    :func:`crop_uncertainty_correlation` (the official code's ``rcorr_crop_unc``).

Conventions: a *score* is "higher = more similar / more likely a match"; an
*uncertainty* is "higher = less sure". Ties in nearest-neighbour search are
broken by the lower gallery index, so every result is deterministic.

The nearest neighbours and KNN votes live in `hedgekit.evaluation.neighbours`
and the one input check in `hedgekit.evaluation.arrays`; this module
re-exports the neighbours' public names, so ``metrics.topk_neighbours`` is the
name callers use (and the one a test replaces).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import stats
from sklearn.metrics import average_precision_score, roc_auc_score

from hedgekit.checks import check_count
from hedgekit.errors import InputError
from hedgekit.evaluation.arrays import checked_array, same_length, to_numpy
from hedgekit.evaluation.neighbours import (cosine_score_fn, euclidean_score_fn, knn_accuracy, knn_predict,
                                            topk_neighbours)

__all__ = [
    "verification_pairs",
    "average_precision",
    "topk_neighbours",
    "euclidean_score_fn",
    "cosine_score_fn",
    "knn_predict",
    "knn_accuracy",
    "equal_count_bins",
    "binned_accuracy",
    "pair_uncertainty",
    "binned_average_precision",
    "kendall_tau_bins",
    "recall_at_1",
    "r_auroc",
    "crop_uncertainty_rate",
    "crop_uncertainty_correlation",
    "class_centroids",
    "adjacency_score",
    "digit_run_lengths",
    "mean_run_length",
]

# ----------------------------------------------------------------------------
# HIB Section 4.3: verification
# ----------------------------------------------------------------------------
def verification_pairs(labels, n_pairs: int = 10_000, seed: int = 0):
    """Random test pairs for the verification task, exactly half of them matching.

    HIB Section 4.3 / Table 1: "p(m|x1, x2) for 10k pairs of test images, half
    of which are matches and half are not". Matching pairs are drawn uniformly
    from all ordered pairs (i, j), i != j, with the same label; non-matching
    pairs uniformly from all pairs with different labels. Pairs are drawn with
    replacement (a pair may repeat) and returned in random order. The result
    depends only on ``labels``, ``n_pairs`` and ``seed``.

    Args:
        labels: (n,) integer class labels of the test set.
        n_pairs: total number of pairs; must be even (half match, half not).
        seed: seed of the ``numpy.random.default_rng`` used.

    Returns:
        ``(i, j, same)``: int64 arrays (n_pairs,) of item indices and a bool
        array, True where ``labels[i] == labels[j]``.
    """
    labels = checked_array(labels, "labels", int)
    n_pairs = check_count(n_pairs, "n_pairs", minimum=2)
    if n_pairs % 2:
        raise InputError(f"n_pairs must be even (half matching, half not), got {n_pairs}")
    classes, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    weights = counts * (counts - 1)  # ordered matching pairs per class
    if weights.sum() == 0:
        raise InputError("no class has >= 2 items, so no matching pair exists")
    if len(classes) < 2:
        raise InputError("all items share one label, so no non-matching pair exists")
    rng = np.random.default_rng(seed)
    n_half = n_pairs // 2

    # matching: class with prob. ~ c(c-1), then two distinct members of it
    members = np.argsort(inverse, kind="stable")  # items grouped by class
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    cls = rng.choice(len(classes), size=n_half, p=weights / weights.sum())
    a = rng.integers(0, counts[cls])
    b = rng.integers(0, counts[cls] - 1)
    b = b + (b >= a)  # distinct from a, uniform over the others
    i_match, j_match = members[starts[cls] + a], members[starts[cls] + b]

    # non-matching: rejection sampling of uniform (i, j) with different labels
    n = len(labels)
    i_parts, j_parts, have = [], [], 0
    while have < n_half:
        i = rng.integers(0, n, size=2 * (n_half - have) + 16)
        j = rng.integers(0, n, size=i.size)
        keep = labels[i] != labels[j]
        i_parts.append(i[keep])
        j_parts.append(j[keep])
        have += int(keep.sum())
    i_non = np.concatenate(i_parts)[:n_half]
    j_non = np.concatenate(j_parts)[:n_half]

    i_all = np.concatenate([i_match, i_non]).astype(np.int64)
    j_all = np.concatenate([j_match, j_non]).astype(np.int64)
    same = np.concatenate([np.ones(n_half, bool), np.zeros(n_half, bool)])
    order = rng.permutation(n_pairs)
    return i_all[order], j_all[order], same[order]


def average_precision(scores, is_match) -> float:
    """Average precision of a match score (higher = more likely a match).

    HIB Section 4.3 / Table 1 ("Verification AP"). Equal to
    ``sklearn.metrics.average_precision_score(is_match, scores)``:
    AP = sum_n (R_n - R_{n-1}) P_n over the distinct score thresholds (no
    interpolation). Requires at least one match; with no non-matches AP = 1.
    """
    scores = checked_array(scores, "scores", float)
    is_match = checked_array(is_match, "is_match", bool)
    same_length(scores=scores, is_match=is_match)
    if not is_match.any():
        raise InputError("is_match has no positive (matching) pair; AP is undefined")
    return float(average_precision_score(is_match, scores))


# ----------------------------------------------------------------------------
# HIB Section 4.4: uncertainty bins and Kendall's tau
# ----------------------------------------------------------------------------
def equal_count_bins(u, n_bins: int = 20) -> np.ndarray:
    """Bin index of every item after sorting by uncertainty (HIB Section 4.4).

    Items are sorted by ``u`` (stable: equal values keep their input order)
    and cut into ``n_bins`` bins of equal count; when ``len(u)`` is not a
    multiple of ``n_bins`` the sizes differ by at most one. Bin 0 holds the
    lowest uncertainties. Requires ``len(u) >= n_bins`` (no empty bin).

    Returns:
        int64 array (n,) of bin indices in ``[0, n_bins)``.
    """
    u = checked_array(u, "u", float)
    n_bins = check_count(n_bins, "n_bins")
    n = len(u)
    if n < n_bins:
        raise InputError(f"{n} items cannot fill n_bins={n_bins} bins; use fewer bins")
    order = np.argsort(u, kind="stable")
    bins = np.empty(n, dtype=np.int64)
    bins[order] = (np.arange(n) * n_bins) // n
    return bins


def binned_accuracy(correct, u, n_bins: int = 20) -> np.ndarray:
    """Mean of ``correct`` in each equal-count uncertainty bin (HIB Section 4.4, Figure 5).

    Returns:
        float array (n_bins,), bin 0 = lowest uncertainty.
    """
    correct = checked_array(correct, "correct", bool)
    u = checked_array(u, "u", float)
    same_length(correct=correct, u=u)
    bins = equal_count_bins(u, n_bins)
    return np.bincount(bins, weights=correct, minlength=n_bins) / np.bincount(bins, minlength=n_bins)


def pair_uncertainty(u, i, j) -> np.ndarray:
    """Uncertainty of a pair, eta(x1, x2) = (eta(x1) + eta(x2)) / 2 (HIB Section 4.4)."""
    u = checked_array(u, "u", float)
    i, j = checked_array(i, "i", int), checked_array(j, "j", int)
    same_length(i=i, j=j)
    if min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= len(u):
        raise InputError(f"pair indices must lie in [0, {len(u)})")
    return 0.5 * (u[i] + u[j])


def binned_average_precision(scores, is_match, pair_u, n_bins: int = 20) -> np.ndarray:
    """Verification AP in each equal-count bin of pair uncertainty (HIB Section 4.4, Figure 5).

    Pairs are binned by ``pair_u`` (see :func:`pair_uncertainty`) with
    :func:`equal_count_bins` and AP (:func:`average_precision`) is computed
    per bin. A bin holding only matches or only non-matches gets NaN (AP is
    undefined or trivially 1 there); :func:`kendall_tau_bins` ignores NaN bins.

    Returns:
        float array (n_bins,), bin 0 = lowest uncertainty.
    """
    scores = checked_array(scores, "scores", float)
    is_match = checked_array(is_match, "is_match", bool)
    pair_u = checked_array(pair_u, "pair_u", float)
    same_length(scores=scores, is_match=is_match, pair_u=pair_u)
    bins = equal_count_bins(pair_u, n_bins)
    out = np.full(n_bins, np.nan)
    for b in range(n_bins):
        m = bins == b
        if is_match[m].any() and not is_match[m].all():
            out[b] = average_precision_score(is_match[m], scores[m])
    return out


def kendall_tau_bins(per_bin_performance) -> float:
    """Kendall's tau between bin index and performance, sign inverted (HIB Table 2).

    HIB Section 4.4: "Kendall's tau ... between the performance and the
    uncertainty level (bin index), inverting the sign so that positive
    correlation aligns with our goal". So +1 = performance falls strictly as
    uncertainty rises. Uses ``scipy.stats.kendalltau`` (tau-b, which handles
    ties). NaN bins (e.g. from :func:`binned_average_precision`) are dropped;
    at least two bins must remain. Returns NaN if the remaining performance is
    constant (tau undefined).
    """
    perf = to_numpy(per_bin_performance, "per_bin_performance")
    if perf.ndim != 1:
        raise InputError(f"per_bin_performance must be 1-D, got shape {tuple(perf.shape)}")
    if not np.issubdtype(perf.dtype, np.number):
        raise InputError(f"per_bin_performance must be numeric, got dtype {perf.dtype}")
    perf = perf.astype(np.float64)
    if np.isinf(perf).any():
        raise InputError("per_bin_performance contains inf")
    idx = np.arange(len(perf))
    keep = ~np.isnan(perf)
    if keep.sum() < 2:
        raise InputError(f"need at least 2 non-NaN bins for Kendall's tau, got {int(keep.sum())}")
    idx, perf = idx[keep], perf[keep]
    if np.all(perf == perf[0]):
        return float("nan")
    return float(-stats.kendalltau(idx, perf).statistic)


# ----------------------------------------------------------------------------
# URL: R@1, R-AUROC, cropped-image test
# ----------------------------------------------------------------------------
_R1_METRICS = {"euclidean": euclidean_score_fn, "cosine": cosine_score_fn}


def recall_at_1(embeddings, labels, chunk: int = 1024, metric: str = "cosine"):
    """Recall@1: does the nearest other item share the class?

    URL Section 3.1, Algorithm 1: ``is_same_class = labels == labels[next_neighbor_idx]``,
    ``r_at_1 = mean(is_same_class)``; the item itself is excluded. Ties go to the
    lower index.

    ``metric``: "cosine" (the default, :func:`cosine_score_fn`): the URL paper's R@1,
    whose code (``recall_at_one`` of github.com/mkirchhof/url) L2-normalises the
    embeddings and takes the most similar other item by inner product, as
    `hedgekit.papers.url.protocol` does; or "euclidean" (:func:`euclidean_score_fn`,
    the distance of the kit's other nearest-neighbour metrics, e.g. HIB's KNN).
    The default is the benchmark's metric, so a
    direct call gives the paper's R@1; a caller that wants Euclidean says so.

    Returns:
        ``(r1, correct)``: float and bool array (n,).
    """
    if not isinstance(metric, str) or metric not in _R1_METRICS:
        raise InputError(f"metric must be one of {tuple(_R1_METRICS)}, got {metric!r}")
    emb = checked_array(embeddings, "embeddings", float, ndim=2)
    labels = checked_array(labels, "labels", int)
    same_length(embeddings=emb, labels=labels)
    n = len(emb)
    if n < 2:
        raise InputError("recall_at_1 needs at least 2 items (one to query, one to find)")
    emb_t = torch.as_tensor(emb)
    idx, _ = topk_neighbours(
        _R1_METRICS[metric](emb_t, emb_t), n, n, 1, exclude=np.arange(n), chunk=chunk
    )
    correct = labels[idx[:, 0]] == labels
    return float(correct.mean()), correct


def r_auroc(uncertainty, r1_correct) -> float:
    """R-AUROC: AUROC of the uncertainty for predicting an R@1 *error* (URL Section 3.1).

    URL Algorithm 1: ``compute_auroc(uncertainties, not is_same_class)``. The
    probability that a wrongly embedded item gets a higher uncertainty than a
    correctly embedded one (ties count half); 0.5 = chance, 1 = perfect.
    ``sklearn.metrics.roc_auc_score`` uses the trapezoidal rule over every
    uncertainty value as threshold, like the TorchMetrics AUROC the paper
    uses (Appendix A.4).
    Undefined (InputError) if all R@1 are correct or all wrong.
    """
    u = checked_array(uncertainty, "uncertainty", float)
    correct = checked_array(r1_correct, "r1_correct", bool)
    same_length(uncertainty=u, r1_correct=correct)
    if correct.all() or not correct.any():
        raise InputError("R-AUROC needs both correct and wrong R@1 items; got only one kind")
    return float(roc_auc_score(~correct, u))


def crop_uncertainty_rate(u_full, u_crop) -> float:
    """Share of images whose cropped/corrupted version gets strictly higher uncertainty.

    URL Section 4.5, Figure 4 (right); Section 4.6, Figure 5 (right); Appendix
    C.3: "how often the model
    assigns a higher uncertainty value to a cropped version of an image than
    to the original image". Equal uncertainties count as failures.
    ``u_full[i]`` and ``u_crop[i]`` belong to the same image.
    """
    full = checked_array(u_full, "u_full", float)
    crop = checked_array(u_crop, "u_crop", float)
    same_length(u_full=full, u_crop=crop)
    return float(np.mean(crop > full))


def crop_uncertainty_correlation(u_crop, crop_fraction) -> float:
    """Spearman's rank correlation between -u of each cropped image and how much of the image the crop kept.

    The URL paper's official validation (github.com/mkirchhof/url, ``validate.py``) reports it as
    ``rcorr_crop_unc = spearmanr(-uncertainties_c, center_crop)[0]``: *every* evaluation image is cropped,
    ``center_crop[i] ~ U(crop_min, crop_max)`` (defaults 0.1 and 0.75, ``train.py``) is the fraction of the
    shorter side that image's centre crop keeps, and ``uncertainties_c`` are u(x) of the crops resized back to
    full size. Its README calls it a metric "only implemented in reference to previous works" and prefers the
    cropped-image rate (:func:`crop_uncertainty_rate`). +1: the less an image keeps, the higher its u, in
    perfect rank order; 0: u ignores the amount cropped; -1: the reverse.

    Ranks only: any increasing function of the fraction gives the same value, so the kept *area* fraction
    (`hedgekit.papers.url.protocol` passes that) and the kept *side* fraction (the official code's, before it
    rounds the crop to whole pixels) agree.
    Ties get their average rank (as ``scipy.stats.spearmanr``); rho is the Pearson correlation of the ranks.

    Args:
        u_crop: (n,) u(x) of the cropped images (higher = less sure), finite.
        crop_fraction: (n,) the fraction of image i that its crop kept, finite, in (0, 1].

    Returns:
        rho in [-1, 1]; NaN when ``u_crop`` is constant (a u(x) that does not vary has no rank order, as
        scipy's NaN). Raises InputError for fewer than 3 images, different lengths, non-1-D or non-finite input,
        a fraction outside (0, 1], or a constant ``crop_fraction`` (crops of one size leave nothing to correlate:
        the protocol must draw a size per image).
    """
    u = checked_array(u_crop, "u_crop", float)
    frac = checked_array(crop_fraction, "crop_fraction", float)
    same_length(u_crop=u, crop_fraction=frac)
    if len(u) < 3:
        raise InputError(f"a rank correlation needs at least 3 cropped images, got {len(u)}")
    if (frac <= 0).any() or (frac > 1).any():
        raise InputError("crop_fraction must lie in (0, 1] (the share of each image its crop kept)")
    if np.all(frac == frac[0]):
        raise InputError("crop_fraction is constant: every crop kept the same share, so there is nothing to "
                         "correlate; draw a crop size per image")
    if np.all(u == u[0]):
        return float("nan")
    a, b = stats.rankdata(-u), stats.rankdata(frac)  # method="average": tied values share their mean rank
    a, b = a - a.mean(), b - b.mean()  # half-integers: exact
    return float(np.clip(a @ b / math.sqrt((a @ a) * (b @ b)), -1.0, 1.0))  # Pearson's r of the ranks


# ----------------------------------------------------------------------------
# HIB Appendix D: organisation of a 1D embedding on the number line
# ----------------------------------------------------------------------------
def class_centroids(embeddings, labels):
    """Mean embedding of every class (HIB Appendix D: "centroids ... derived from the test set embeddings").

    Args:
        embeddings: (n, D) or (n,) embeddings (e.g. Gaussian means).
        labels: (n,) integer class labels.

    Returns:
        ``(class_ids, centroids)``: sorted unique labels (C,) and their means
        (C, D), or (C,) for 1-D input.
    """
    emb = to_numpy(embeddings, "embeddings")
    if emb.ndim not in (1, 2):
        raise InputError(f"embeddings must be 1-D or 2-D, got shape {tuple(emb.shape)}")
    emb = checked_array(emb, "embeddings", float, ndim=emb.ndim)
    labels = checked_array(labels, "labels", int)
    same_length(embeddings=emb, labels=labels)
    class_ids, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    flat = emb.reshape(len(emb), -1)
    sums = np.zeros((len(class_ids), flat.shape[1]))
    np.add.at(sums, inverse, flat)
    cent = sums / counts[:, None]
    return class_ids, (cent[:, 0] if emb.ndim == 1 else cent)


def _shared_digit_steps(centroids_1d, class_ids, n_digits: int) -> np.ndarray:
    """Bool (C-1,): do the classes at sorted positions t and t+1 share a digit?"""
    cent = checked_array(centroids_1d, "centroids_1d", float)
    ids = checked_array(class_ids, "class_ids", int)
    same_length(centroids_1d=cent, class_ids=ids)
    n_digits = check_count(n_digits, "n_digits")
    if len(ids) < 2:
        raise InputError("need at least 2 classes to form adjacent pairs")
    if ids.min() < 0 or ids.max() >= 10**n_digits:
        raise InputError(f"class_ids must lie in [0, {10**n_digits}) for n_digits={n_digits}")
    if len(np.unique(ids)) != len(ids):
        raise InputError("class_ids must be unique (one centroid per class)")
    ordered = ids[np.argsort(cent, kind="stable")]
    digits = (ordered[:, None] // 10 ** np.arange(n_digits)) % 10  # (C, n_digits), ones first
    return (digits[:-1] == digits[1:]).any(axis=1)


def adjacency_score(centroids_1d, class_ids, n_digits: int = 2) -> int:
    """Adjacent class pairs on the number line that share a digit (HIB Appendix D).

    Sort the classes by their 1D centroid (stable) and count neighbouring
    pairs that share the digit at some position -- for ``n_digits=2`` the ones
    or the tens digit, as in the paper. The maximum is C - 1 (99 for the 100
    classes of 2-digit MNIST). Paper: HIB 76-80, point embeddings 42-74.

    Args:
        centroids_1d: (C,) 1D centroid of each class.
        class_ids: (C,) the class of each centroid, unique, in [0, 10**n_digits);
            class 7 of 2-digit MNIST is "07".
        n_digits: N of N-digit MNIST.
    """
    return int(_shared_digit_steps(centroids_1d, class_ids, n_digits).sum())


def digit_run_lengths(centroids_1d, class_ids, n_digits: int = 2) -> np.ndarray:
    """Lengths (in classes) of the runs on the number line (HIB Appendix D).

    A run is a maximal stretch of consecutive sorted classes in which every
    adjacent pair shares a digit (see :func:`adjacency_score`); its length is
    the number of classes in it. Only runs of >= 2 classes are returned (an
    isolated class is not a run), in number-line order.
    """
    steps = _shared_digit_steps(centroids_1d, class_ids, n_digits).astype(np.int8)
    edges = np.diff(np.concatenate([[0], steps, [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return (stops - starts + 1).astype(np.int64)  # m shared steps -> m + 1 classes


def mean_run_length(centroids_1d, class_ids, n_digits: int = 2) -> float:
    """Mean number of classes per run (HIB Appendix D: HIB 4.6, point 3.0).

    The paper says "the average run contains 4.6 classes" without saying
    whether single, unconnected classes count as runs of length 1. We average
    over runs of >= 2 classes only (:func:`digit_run_lengths`); counting
    singletons would pull the mean towards 1. Returns NaN if no adjacent pair
    shares a digit (there is no run).
    """
    runs = digit_run_lengths(centroids_1d, class_ids, n_digits)
    return float(runs.mean()) if len(runs) else float("nan")


# ----------------------------------------------------------------------------
# Taha et al. 2019, sec. 5: query-by-example retrieval (mAP and top-k)
# ----------------------------------------------------------------------------
def retrieval_average_precision(query, query_labels, gallery, gallery_labels, chunk: int = 1024) -> np.ndarray:
    """(Q,) average precision of every query, ranking the gallery by Euclidean distance (nearest first).

    AP of one query = mean over its relevant gallery items (same label) of the precision at that item's rank
    (Taha et al. 2019 Tables 1-4, "mAP" = the mean over queries). Ties are broken by gallery order. A query
    with no relevant gallery item gets NaN (`mean_average_precision` leaves it out).
    """
    q, g = checked_array(query, "query", float, 2), checked_array(gallery, "gallery", float, 2)
    ql, gl = checked_array(query_labels, "query_labels", int), checked_array(gallery_labels, "gallery_labels", int)
    same_length(query=q, query_labels=ql)
    same_length(gallery=g, gallery_labels=gl)
    if q.shape[1] != g.shape[1]:
        raise InputError(f"query and gallery dimensions differ: {q.shape[1]} vs {g.shape[1]}")
    gt, glt = torch.as_tensor(g, dtype=torch.float64), torch.as_tensor(gl)
    out = np.empty(len(q))
    for i in range(0, len(q), chunk):
        d = torch.cdist(torch.as_tensor(q[i:i + chunk], dtype=torch.float64), gt)
        order = torch.sort(d, dim=1, stable=True).indices
        rel = (glt[order] == torch.as_tensor(ql[i:i + chunk])[:, None]).double()  # (q, G) relevance by rank
        hits = rel.cumsum(1)
        ranks = torch.arange(1, rel.shape[1] + 1, dtype=torch.float64)
        n_rel = rel.sum(1)
        ap = (rel * hits / ranks).sum(1) / n_rel
        out[i:i + chunk] = torch.where(n_rel > 0, ap, torch.full_like(ap, float("nan"))).numpy()
    return out


def mean_average_precision(query, query_labels, gallery, gallery_labels) -> float:
    """mAP over the queries that have at least one relevant gallery item (`retrieval_average_precision`)."""
    ap = retrieval_average_precision(query, query_labels, gallery, gallery_labels)
    if np.isnan(ap).all():
        raise InputError("no query has a relevant gallery item (no shared label); mAP is undefined")
    return float(np.nanmean(ap))


def top_k_accuracy(query, query_labels, gallery, gallery_labels, ks=(1, 5, 10)) -> dict[int, float]:
    """CMC top-k: the fraction of queries whose k nearest gallery items (Euclidean) hold one of their class."""
    q, g = checked_array(query, "query", float, 2), checked_array(gallery, "gallery", float, 2)
    ql, gl = checked_array(query_labels, "query_labels", int), checked_array(gallery_labels, "gallery_labels", int)
    same_length(query=q, query_labels=ql)
    same_length(gallery=g, gallery_labels=gl)
    ks = [check_count(k, "k") for k in ks]
    if max(ks) > len(g):
        raise InputError(f"k = {max(ks)} exceeds the gallery size {len(g)}")
    d = torch.cdist(torch.as_tensor(q, dtype=torch.float64), torch.as_tensor(g, dtype=torch.float64))
    nearest = torch.topk(d, max(ks), dim=1, largest=False).indices.numpy()
    hit = gl[nearest] == ql[:, None]
    return {k: float(hit[:, :k].any(1).mean()) for k in ks}
