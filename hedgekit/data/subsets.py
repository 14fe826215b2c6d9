"""Training sets with a twist, for Taha et al. 2019's experiments at kit scale: labels flipped between
look-alike classes (the analogue of Clothing1M's noisy labels, sec. 5.2) and long-tailed class counts
(the analogue of HDD's imbalance, sec. 5.3). Every function is deterministic for a seed and returns the
ground truth it changed, so experiments can score what a method detects.

Two kinds of label noise:

* `lookalike_noise`: a label flips independently of its image (the "independent noise" contrast): an
  image-based sigma^2(x) has nothing to find there.
* `uncertainty_noise`: a label flips to the class a clean classifier finds most confusable, more often where
  that classifier is unsure (`flip_probabilities`), as a labeller errs on the images that are hard to tell
  apart. `clean_posterior` is that classifier; `overlay_lookalikes` adds ambiguous items with clean labels
  (two garments of look-alike classes blended), the confusing images of Clothing1M's galleries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hedgekit.errors import InputError

# Fashion-MNIST classes a person could confuse at 28 x 28 (labels of `hedgekit.data.fashion.CLASS_NAMES`):
# upper-body garments {T-shirt/top, Pullover, Dress, Coat, Shirt} and footwear {Sandal, Sneaker, Ankle boot};
# Trouser and Bag have no look-alike and keep their labels.
FASHION_LOOKALIKES = ((0, 2, 3, 4, 6), (5, 7, 9))
# Clothing1M's estimated share of wrong labels, ~38%: the estimate of the dataset's authors (Xiao et al.,
# "Learning from massive noisy labeled data for image classification", CVPR 2015), not a number of Taha et al.
CLOTHING1M_NOISE = 0.38


@dataclass(frozen=True)
class NoisyLabels:
    """Labels after flipping: ``labels`` (what training sees), ``true`` and ``flipped = labels != true``."""

    labels: np.ndarray
    true: np.ndarray
    flipped: np.ndarray

    @property
    def rate(self) -> float:
        return float(self.flipped.mean()) if len(self.flipped) else 0.0


def lookalike_noise(labels, groups=FASHION_LOOKALIKES, rate: float = CLOTHING1M_NOISE, seed: int = 0) -> NoisyLabels:
    """Flip labels to another class of the same look-alike group, so that ``rate`` of ALL labels are wrong.

    Only items whose class belongs to a group can flip; each of them flips with probability
    ``rate / (share of items in groups)`` to a uniformly chosen other class of its group (class-dependent,
    structured noise as in Clothing1M, where a knitwear item is labelled sweater, not bag).

    Raises:
        InputError: a rate outside [0, 1), overlapping groups, or a rate the groups cannot reach.
    """
    y = np.asarray(labels)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise InputError(f"labels must be a 1-D integer array; got {y.dtype} with shape {y.shape}")
    if not 0 <= rate < 1:
        raise InputError(f"rate must be in [0, 1); got {rate}")
    members = [c for g in groups for c in g]
    if len(set(members)) != len(members) or any(len(g) < 2 for g in groups):
        raise InputError(f"groups must be disjoint, with at least 2 classes each; got {groups}")
    group_of = {c: g for g in groups for c in g}
    in_group = np.isin(y, members)
    if rate > 0 and not in_group.any():
        raise InputError("no label belongs to a look-alike group; nothing can flip")
    p = rate / in_group.mean() if rate > 0 else 0.0
    if p > 1:
        raise InputError(f"only {in_group.mean():.0%} of the labels are in look-alike groups; a rate of {rate} "
                         "would need more flips than there are")
    rng = np.random.default_rng(seed)
    flip = in_group & (rng.random(len(y)) < p)
    noisy = y.copy()
    for i in np.flatnonzero(flip):
        others = [c for c in group_of[int(y[i])] if c != y[i]]
        noisy[i] = others[rng.integers(len(others))]
    return NoisyLabels(noisy, y.copy(), noisy != y)


def flip_probabilities(score, rate: float, power: float = 2.0) -> np.ndarray:
    """(N,) flip probabilities p_i = min(1, c q_i^power), q_i the percentile rank of ``score[i]`` in (0, 1]
    (ties share their mean rank), c set by bisection so that mean(p) = ``rate``: non-decreasing in the score,
    and the larger ``power``, the more the flips concentrate on the highest scores.

    Raises:
        InputError: an empty or non-finite score, a rate outside [0, 1], a power <= 0.
    """
    from scipy.stats import rankdata

    score = np.asarray(score, dtype=np.float64)
    if score.ndim != 1 or not len(score) or not np.isfinite(score).all():
        raise InputError(f"score must be a non-empty 1-D array of finite numbers; got shape {score.shape}")
    if not 0 <= rate <= 1:
        raise InputError(f"rate must be in [0, 1]; got {rate}")
    if not power > 0:
        raise InputError(f"power must be > 0; got {power}")
    base = (rankdata(score) / len(score)) ** power
    lo, hi = 0.0, 1.0
    while np.minimum(1.0, hi * base).mean() < rate:  # mean(min(1, c base)) grows with c up to 1
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.minimum(1.0, mid * base).mean() < rate else (lo, mid)
    return np.minimum(1.0, hi * base)


def _labels_and_probs(labels, probs) -> tuple[np.ndarray, np.ndarray]:
    """``labels`` as a 1-D integer array and ``probs`` as float64 (N, C) p(class | image) with every label in
    [0, C); else an `InputError` saying what was expected."""
    y = np.asarray(labels)
    probs = np.asarray(probs, dtype=np.float64)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise InputError(f"labels must be a 1-D integer array; got {y.dtype} with shape {y.shape}")
    if probs.ndim != 2 or len(probs) != len(y) or y.min(initial=0) < 0 or y.max(initial=0) >= probs.shape[1]:
        raise InputError(f"probs must be (N, C) with N = {len(y)} labels in [0, C); got shape {probs.shape}")
    return y, probs


def uncertainty_noise(labels, probs, groups=FASHION_LOOKALIKES, rate: float = CLOTHING1M_NOISE, eligible=None,
                      power: float = 2.0, seed: int = 0) -> NoisyLabels:
    """Image-dependent label noise: ``rate`` of ALL labels flip, each to the class of its look-alike group that a
    clean classifier (``probs``, (N, C) p(class | image)) rates most probable after its own, with probability
    `flip_probabilities` of the classifier's uncertainty 1 - max_c p(c | x): confusing images get wrong labels,
    clear ones rarely. Only ``eligible`` items (default: all) of a class in a group can flip.

    Raises:
        InputError: bad labels / probs shapes, overlapping groups, or a rate the eligible items cannot reach.
    """
    y, probs = _labels_and_probs(labels, probs)
    groups = _check_groups(groups)
    eligible = np.ones(len(y), bool) if eligible is None else np.asarray(eligible, dtype=bool)
    if eligible.shape != y.shape:
        raise InputError(f"eligible must be a boolean mask of {len(y)} items; got shape {eligible.shape}")
    if not 0 <= rate < 1:
        raise InputError(f"rate must be in [0, 1); got {rate}")
    can = eligible & np.isin(y, [c for g in groups for c in g])
    if rate > 0 and (not can.any() or rate * len(y) > can.sum()):
        raise InputError(f"{can.sum()} of {len(y)} labels can flip (eligible, in a look-alike group); a rate of "
                         f"{rate} needs {rate * len(y):.0f}")
    noisy = y.copy()
    if rate > 0:
        idx = np.flatnonzero(can)
        p = flip_probabilities(1.0 - probs[idx].max(1), rate * len(y) / len(idx), power)
        flip = idx[np.random.default_rng(seed).random(len(idx)) < p]
        group_of = {c: g for g in groups for c in g}
        for i in flip:
            others = [c for c in group_of[int(y[i])] if c != y[i]]
            noisy[i] = others[int(np.argmax(probs[i, others]))]  # ties -> the first class of the group
    return NoisyLabels(noisy, y.copy(), noisy != y)


def _check_groups(groups) -> tuple:
    groups = tuple(tuple(int(c) for c in g) for g in groups)
    members = [c for g in groups for c in g]
    if len(set(members)) != len(members) or any(len(g) < 2 for g in groups):
        raise InputError(f"groups must be disjoint, with at least 2 classes each; got {groups}")
    return groups


@dataclass(frozen=True)
class Overlaid:
    """Images after `overlay_lookalikes`: ``images``, the ``ambiguous`` mask, the index of the ``partner`` image
    blended into each ambiguous item and its class ``other`` (-1 elsewhere), and ``alpha``, the weight of the
    item's own image (> 1/2; 0 elsewhere)."""

    images: np.ndarray
    ambiguous: np.ndarray
    partner: np.ndarray
    other: np.ndarray
    alpha: np.ndarray


def overlay_lookalikes(images, labels, groups=FASHION_LOOKALIKES, fraction: float = 0.1,
                       alpha: tuple[float, float] = (0.55, 0.7), seed: int = 0) -> Overlaid:
    """Ambiguous items with clean labels: ``fraction`` of ALL items (drawn among the classes of look-alike groups)
    become ``round(a x + (1 - a) x')``, x' a random image of another class of the item's group and a uniform in
    ``alpha``; the label stays the item's own, the dominant garment (a > 1/2). Blends use the original images.

    Raises:
        InputError: images not (N, H, W) uint8 matching the labels, a fraction the groups cannot reach, or alpha
        outside (1/2, 1).
    """
    x = np.asarray(images)
    y = np.asarray(labels)
    if x.dtype != np.uint8 or x.ndim != 3 or len(x) != len(y):
        raise InputError(f"images must be (N, H, W) uint8 with one label each; got {x.dtype} {x.shape} for "
                         f"{len(y)} labels")
    groups = _check_groups(groups)
    lo, hi = alpha
    if not 0.5 < lo <= hi < 1:
        raise InputError(f"alpha must be a range inside (1/2, 1) so the own garment dominates; got {alpha}")
    pool = np.flatnonzero(np.isin(y, [c for g in groups for c in g]))
    n = int(round(fraction * len(y)))
    if not 0 <= fraction <= 1 or n > len(pool):
        raise InputError(f"fraction must be in [0, 1] and at most the share of items in look-alike groups "
                         f"({len(pool) / max(1, len(y)):.2f}); got {fraction}")
    rng = np.random.default_rng([seed, 2])
    pick = np.sort(rng.choice(pool, n, replace=False))
    group_of = {c: g for g in groups for c in g}
    by_class = {c: np.flatnonzero(y == c) for c in group_of}
    other, partner = np.full(len(y), -1), np.full(len(y), -1)
    weight = np.zeros(len(y))
    out = x.copy()
    for i in pick:
        choices = [c for c in group_of[int(y[i])] if c != y[i] and len(by_class[c])]
        if not choices:
            raise InputError(f"class {y[i]} has no other class of its group present to blend with")
        c = choices[rng.integers(len(choices))]
        j = by_class[c][rng.integers(len(by_class[c]))]
        a = rng.uniform(lo, hi)
        out[i] = np.rint(a * x[i].astype(np.float64) + (1 - a) * x[j]).astype(np.uint8)
        other[i], partner[i], weight[i] = c, j, a
    mask = np.zeros(len(y), bool)
    mask[pick] = True
    return Overlaid(out, mask, partner, other, weight)


def clean_posterior(images, labels, components: int = 40, seed: int = 0) -> np.ndarray:
    """(N, C) p(class | image) of a small clean classifier, the "labeller" of `uncertainty_noise`: multinomial
    logistic regression on the ``components`` whitened principal components of the pixels, fit on the true
    labels and read on the same images (linear, so it does not memorise them: 84% training accuracy on
    Fashion-MNIST). Single-threaded (shared cores; `hedgekit.papers.taha.protocol`)."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    x = np.asarray(images).reshape(len(images), -1).astype(np.float32) / 255.0
    y = np.asarray(labels)
    if len(x) != len(y) or len(np.unique(y)) < 2:
        raise InputError(f"clean_posterior needs one label per image and at least 2 classes; got {len(x)} images, "
                         f"{len(y)} labels")
    with threadpool_limits(1):
        z = PCA(min(components, x.shape[1], len(x)), whiten=True, random_state=seed,
                svd_solver="randomized").fit_transform(x)
        clf = LogisticRegression(max_iter=1000).fit(z, y)
        probs = np.zeros((len(y), int(y.max()) + 1))
        probs[:, clf.classes_] = clf.predict_proba(z)
    return probs


def long_tailed(labels, ratio: float = 0.05, seed: int = 0) -> np.ndarray:
    """Sorted indices of a long-tailed subset: class c of rank r (0 = head) keeps
    ``n_max * ratio ** (r / (C - 1))`` items (exponentially decaying counts; the rarest keeps ``ratio`` of the
    largest). Classes are ranked in label order; at least one item per class is kept."""
    y = np.asarray(labels)
    if not 0 < ratio <= 1:
        raise InputError(f"ratio must be in (0, 1]; got {ratio}")
    classes = np.unique(y)
    if len(classes) < 2:
        raise InputError("a long tail needs at least 2 classes")
    n_max = min(int((y == c).sum()) for c in classes)
    rng = np.random.default_rng(seed)
    keep = []
    for r, c in enumerate(classes):
        n = max(1, int(round(n_max * ratio ** (r / (len(classes) - 1)))))
        keep.append(rng.permutation(np.flatnonzero(y == c))[:n])
    return np.sort(np.concatenate(keep))


def query_gallery_split(labels, query_fraction: float = 0.25, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(query, gallery) sorted indices: ``query_fraction`` of every class's items are queries, the rest the
    gallery, disjoint (the query-by-example protocol of Taha et al. sec. 5.1). Classes with one item go to
    the gallery."""
    y = np.asarray(labels)
    if not 0 < query_fraction < 1:
        raise InputError(f"query_fraction must be in (0, 1); got {query_fraction}")
    rng = np.random.default_rng(seed)
    query = []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        query.append(idx[: int(len(idx) * query_fraction) if len(idx) > 1 else 0])
    q = np.sort(np.concatenate(query))
    return q, np.setdiff1d(np.arange(len(y)), q)


def clean_subset(n: int, fraction: float, seed: int = 0) -> np.ndarray:
    """Boolean mask of the ``fraction`` of n items whose labels are verified clean (Clothing1M's D_c)."""
    if not 0 < fraction <= 1:
        raise InputError(f"fraction must be in (0, 1]; got {fraction}")
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng([seed, 1]).permutation(n)[: max(1, int(round(n * fraction)))]] = True
    return mask


# --------------------------------------------------------------------------- noise that is not a function of the pixels
# Flip probability per ambiguity level (terciles of the clean labeller's uncertainty, least ambiguous first) of
# `ambiguity_noise`: ~38% of the single-garment labels flip on average, Clothing1M's estimate.
AMBIGUITY_FLIPS = (0.15, 0.35, 0.65)


@dataclass(frozen=True)
class AmbiguityNoisy:
    """A training set after `ambiguity_noise`: ``images`` (blends included), ``labels`` (what training sees),
    ``true`` (the dominant garment's class), ``flipped = labels != true``, the ``ambiguous`` (blended) and ``clean``
    (verified) masks, each item's ambiguity ``level`` (0 = least ambiguous; -1 for blends) and the ``alpha`` of a
    blend (its own garment's weight; 0 elsewhere)."""

    images: np.ndarray
    labels: np.ndarray
    true: np.ndarray
    flipped: np.ndarray
    ambiguous: np.ndarray
    clean: np.ndarray
    level: np.ndarray
    alpha: np.ndarray


def ambiguity_levels(probs, n_levels: int) -> np.ndarray:
    """(N,) level in 0..n_levels-1 of each item's ambiguity 1 - max_c p(c | x): equal-count bins of its percentile
    (ties share their mean rank), 0 the least ambiguous."""
    from scipy.stats import rankdata

    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or not len(probs) or not np.isfinite(probs).all():
        raise InputError(f"probs must be a non-empty (N, C) array of finite numbers; got shape {probs.shape}")
    if isinstance(n_levels, bool) or not isinstance(n_levels, int) or n_levels < 1:
        raise InputError(f"n_levels must be an integer >= 1; got {n_levels!r}")
    q = (rankdata(1.0 - probs.max(1)) - 0.5) / len(probs)  # in (0, 1)
    return np.minimum((q * n_levels).astype(int), n_levels - 1)


def posterior_targets(labels, probs, rng: np.random.Generator) -> np.ndarray:
    """(N,) a class drawn for each item from the labeller's posterior ``probs`` (N, C) without the item's own
    class, renormalised (uniform over the other classes where they all have probability 0)."""
    y = np.asarray(labels)
    p = np.asarray(probs, dtype=np.float64).copy()
    p[np.arange(len(y)), y] = 0.0
    total = p.sum(1, keepdims=True)
    uniform = np.ones_like(p)
    uniform[np.arange(len(y)), y] = 0.0
    p = np.where(total > 0, p / np.where(total > 0, total, 1.0), uniform / (p.shape[1] - 1))
    u = rng.random(len(y))[:, None]
    return np.minimum((np.cumsum(p, 1) < u).sum(1), p.shape[1] - 1)


def ambiguity_noise(images, labels, probs, flips=AMBIGUITY_FLIPS, blends: float = 0.3,
                    alpha: tuple[float, float] = (0.55, 0.75), clean_fraction: float = 0.005,
                    groups=FASHION_LOOKALIKES, seed: int = 0) -> AmbiguityNoisy:
    """Label noise that is not a function of the pixels, drawn afresh for each ``seed``:

    * ``blends`` of ALL items are two garments of one look-alike group blended (`overlay_lookalikes`, own weight a
      uniform in ``alpha``); a blend's label is its own class with probability a, else the partner's: ambiguous
      and, 1 - a of the time, "wrong" (against the dominant garment, ``true``);
    * ``clean_fraction`` of all items, drawn among the single garments, keep their true labels (Clothing1M's D_c);
    * every other item flips at random with probability ``flips[level]``, its level the tercile (or
      ``len(flips)``-quantile) of the clean labeller's uncertainty 1 - max_c ``probs`` (`ambiguity_levels`), to a
      class drawn from that labeller's posterior without its own class (`posterior_targets`), not its arg-max.

    ``probs``: (N, C) p(class | image) of a clean labeller on the unblended images (`clean_posterior`).

    Raises:
        InputError: shapes that do not match, flip probabilities outside [0, 1], a bad fraction or alpha.
    """
    y, probs = _labels_and_probs(labels, probs)
    flips = np.asarray(flips, dtype=np.float64)
    if flips.ndim != 1 or not len(flips) or not ((flips >= 0) & (flips <= 1)).all():
        raise InputError(f"flips must be one probability in [0, 1] per ambiguity level; got {flips.tolist()}")
    if not 0 < clean_fraction < 1:
        raise InputError(f"clean_fraction must be in (0, 1); got {clean_fraction}")
    blended = overlay_lookalikes(images, y, groups, blends, alpha, seed)
    rng = np.random.default_rng([seed, 3])
    single = np.flatnonzero(~blended.ambiguous)
    clean = np.zeros(len(y), bool)
    clean[rng.choice(single, min(len(single), max(1, int(round(clean_fraction * len(y))))), replace=False)] = True
    noisy = y.copy()
    amb = np.flatnonzero(blended.ambiguous)
    partner_label = rng.random(len(amb)) >= blended.alpha[amb]  # the partner's with probability 1 - a
    noisy[amb[partner_label]] = blended.other[amb[partner_label]]
    level = np.where(blended.ambiguous, -1, ambiguity_levels(probs, len(flips)))
    can = np.flatnonzero(~blended.ambiguous & ~clean)
    flip = can[rng.random(len(can)) < flips[level[can]]]
    noisy[flip] = posterior_targets(y[flip], probs[flip], rng)
    return AmbiguityNoisy(blended.images, noisy, y.copy(), noisy != y, blended.ambiguous, clean, level, blended.alpha)
