"""How batches are drawn: pairs, P x K batches for triplets, and episodes for prototype models.

* `ClassBalancedSampler`: batches of P classes x Q images, for all-pairs losses
  (hedgekit's default recipe: many positive pairs per batch even with 100s of classes).
* `PKSampler`: batches of P classes x K images drawn afresh for every batch, for triplet
  mining (Hermans et al. 2017; Taha et al. 2019 sec. 5.1: P = 18 identities x K = 4 images).
* `two_stream_pairs`: the paper's two streams (HIB sec. 2.3): one stream draws
  random images, the other draws images of the same class as the first, and the
  two halves are shuffled together, so about half the pairs match.
* `EpisodeSampler`: SPE / PN episodes of n classes x (k support + q query) images (SPE sec. 3).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import Tensor

from hedgekit.errors import InputError


class ClassBalancedSampler:
    """Yields index arrays of P classes x Q images each (P*Q indices), forever.

    Classes are visited in a fresh random order each pass; within a class images
    are drawn without replacement, cycling through a reshuffled list.
    """

    def __init__(self, labels, p: int, q: int, seed: int = 0):
        labels = np.asarray(labels)
        classes, inverse = np.unique(labels, return_inverse=True)
        if p > len(classes):
            raise InputError(f"P = {p} classes per batch but the data has only {len(classes)}")
        if q < 2:
            raise InputError("Q must be >= 2 so each batch holds matching pairs")
        self.p, self.q = p, q
        self.rng = np.random.default_rng(seed)
        self.members = [self.rng.permutation(np.flatnonzero(inverse == c)) for c in range(len(classes))]
        self.cursor = np.zeros(len(classes), dtype=int)
        self.class_order = np.empty(0, dtype=int)

    def _take(self, c: int) -> np.ndarray:
        m = self.members[c]
        if self.cursor[c] + self.q > len(m):
            self.members[c] = m = self.rng.permutation(m)
            self.cursor[c] = 0
        out = m[self.cursor[c] : self.cursor[c] + self.q]
        self.cursor[c] += self.q
        return out if len(out) == self.q else self.rng.choice(m, self.q, replace=True)

    def __iter__(self):
        return self

    def __next__(self) -> np.ndarray:
        if len(self.class_order) < self.p:
            # Next pass: a fresh shuffle with this pass's leftovers moved to its end, so
            # no batch holds a class twice and every class still comes once per pass.
            fresh = self.rng.permutation(len(self.members))
            fresh = np.concatenate([fresh[~np.isin(fresh, self.class_order)], fresh[np.isin(fresh, self.class_order)]])
            self.class_order = np.concatenate([self.class_order, fresh])
        chosen, self.class_order = self.class_order[: self.p], self.class_order[self.p :]
        return np.concatenate([self._take(c) for c in chosen])


def two_stream_pairs(labels, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, same) for one batch of the paper's two-stream sampler (HIB sec. 2.3)."""
    labels = np.asarray(labels)
    half = batch_size // 2
    i = rng.integers(0, len(labels), batch_size)
    j = rng.integers(0, len(labels), batch_size)
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    lo = np.searchsorted(sorted_labels, labels[i[:half]], "left")
    hi = np.searchsorted(sorted_labels, labels[i[:half]], "right")
    j[:half] = order[lo + (rng.random(half) * (hi - lo)).astype(int)]
    perm = rng.permutation(batch_size)
    i, j = i[perm], j[perm]
    return i, j, labels[i] == labels[j]


class PKSampler:
    """Yields index arrays of P classes x K images (P*K indices, class by class), forever.

    Every batch draws P distinct classes uniformly at random, then K distinct images of each
    class uniformly at random, both without replacement (Taha et al. 2019 sec. 5.1, after
    Hermans et al. 2017); batches are drawn independently of each other. Every batch is full:
    a class with fewer than K images is an error unless ``replace=True``, in which case such a
    class's K images are drawn with replacement (repeats possible; larger classes still draw
    without replacement).

    Args:
        labels: (N,) class labels (numbers or strings: anything `numpy.unique` sorts).
        p: classes per batch, 2 <= P <= number of classes (triplets need negatives).
        k: images per class, K >= 2 (triplets need positives).
        seed: seed of the sampler's own ``numpy.random.Generator``.
        replace: allow classes with fewer than K images (see above).
    """

    def __init__(self, labels, p: int, k: int, seed: int = 0, replace: bool = False):
        labels = np.asarray(labels)
        if labels.ndim != 1 or len(labels) == 0:
            raise InputError(f"labels must be a non-empty 1-D array; got shape {labels.shape}")
        if p < 2 or k < 2:
            raise InputError(f"need P >= 2 classes (negatives) and K >= 2 images per class (positives); "
                             f"got P={p}, K={k}")
        classes, inverse = np.unique(labels, return_inverse=True)
        if p > len(classes):
            raise InputError(f"P = {p} classes per batch but the labels hold only {len(classes)} classes")
        self.members = [np.flatnonzero(inverse == c) for c in range(len(classes))]
        small = [(name, len(m)) for name, m in zip(classes.tolist(), self.members) if len(m) < k]
        if small and not replace:
            listed = ", ".join(f"class {c!r} has {n} image(s)" for c, n in small[:5])
            more = f" (and {len(small) - 5} more classes)" if len(small) > 5 else ""
            raise InputError(f"K = {k} images per class but {listed}{more}; "
                             "lower K, drop those classes or pass replace=True to sample them with replacement")
        self.p, self.k = p, k
        self.rng = np.random.default_rng(seed)

    @property
    def batch_size(self) -> int:
        return self.p * self.k

    def __iter__(self):
        return self

    def __next__(self) -> np.ndarray:
        chosen = self.rng.choice(len(self.members), self.p, replace=False)
        return np.concatenate([self._take(self.members[c]) for c in chosen])

    def _take(self, members: np.ndarray) -> np.ndarray:
        return self.rng.choice(members, self.k, replace=len(members) < self.k)


@dataclass(frozen=True)
class Episode:
    """Indices into a labelled set. Support and query are class-major (class 0's items first).

    classes: (n,) dataset labels of the episode's classes; episode label j means ``classes[j]``.
    support, support_labels: (n*k,) dataset indices and episode labels 0..n-1.
    query, query_labels: (n*q,) dataset indices and episode labels 0..n-1.
    """

    classes: np.ndarray
    support: np.ndarray
    support_labels: np.ndarray
    query: np.ndarray
    query_labels: np.ndarray

    @property
    def n_classes(self) -> int:
        return len(self.classes)


class EpisodeSampler:
    """Random episodes of ``n_classes`` x (``k_support`` + ``query_per_class``) distinct instances.

    Deterministic for a seed: the same seed gives the same sequence of episodes. Classes are drawn
    without replacement from the labels' classes (``n_classes=None``: all of them); within a class,
    support and query are drawn together without replacement, so they never share an instance.

    Args:
        labels: (N,) integer class labels of the set the indices refer to.
    """

    def __init__(self, labels, n_classes: int | None = None, k_support: int = 5, query_per_class: int = 5,
                 seed: int = 0):
        labels = np.asarray(labels.cpu() if isinstance(labels, Tensor) else labels)
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
            raise InputError(f"labels must be a 1-D integer array; got {labels.dtype} {labels.shape}")
        if k_support < 1 or query_per_class < 0:
            raise InputError(f"need k_support >= 1 and query_per_class >= 0; got {k_support}, {query_per_class}")
        self.class_ids, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
        n_all = len(self.class_ids)
        self.n_classes = n_all if n_classes is None else int(n_classes)
        if not 1 <= self.n_classes <= n_all:
            raise InputError(f"n_classes must be in 1..{n_all} (classes in the data); got {n_classes}")
        self.k, self.q = int(k_support), int(query_per_class)
        # Only classes with enough instances can take part.
        need = self.k + self.q
        usable = counts >= need
        if usable.sum() < self.n_classes:
            raise InputError(
                f"too few instances: an episode needs {need} = {self.k} support + {self.q} query per class, but only "
                f"{int(usable.sum())} classes have that many (smallest class has {counts.min()}); "
                f"lower k_support, query_per_class or n_classes")
        self.usable = np.flatnonzero(usable)
        # (n_all, max_count) table of each class's member indices, padded with -1
        order = np.argsort(inverse, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.members = np.full((n_all, counts.max()), -1, dtype=np.int64)
        cols = np.arange(len(labels)) - np.repeat(starts, counts)
        self.members[inverse[order], cols] = order
        self.counts = counts
        self.rng = np.random.default_rng(seed)

    def sample(self) -> Episode:
        rng, n, k, q = self.rng, self.n_classes, self.k, self.q
        chosen = np.sort(rng.choice(self.usable, n, replace=False))  # positions in class_ids
        keys = rng.random((n, self.members.shape[1]))
        keys[self.members[chosen] < 0] = np.inf  # padding sorts last
        pick = np.take_along_axis(self.members[chosen], np.argsort(keys, axis=1)[:, : k + q], axis=1)  # (n, k+q)
        episode_labels = np.arange(n)
        return Episode(
            classes=self.class_ids[chosen],
            support=pick[:, :k].reshape(-1),
            support_labels=np.repeat(episode_labels, k),
            query=pick[:, k:].reshape(-1),
            query_labels=np.repeat(episode_labels, q),
        )

    def __iter__(self):
        return self

    def __next__(self) -> Episode:
        return self.sample()
