"""Training sets with a twist, for Taha et al. 2019's experiments at kit scale: labels flipped between
look-alike classes (the analogue of Clothing1M's noisy labels, sec. 5.2) and long-tailed class counts
(the analogue of HDD's imbalance, sec. 5.3). Every function is deterministic for a seed and returns the
ground truth it changed, so experiments can score what a method detects.
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
