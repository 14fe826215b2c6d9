"""How training batches become pairs.

* `ClassBalancedSampler`: batches of P classes x Q images, for all-pairs losses
  (hedgekit's default recipe: many positive pairs per batch even with 100s of classes).
* `two_stream_pairs`: the paper's two streams (HIB sec. 2.3): one stream draws
  random images, the other draws images of the same class as the first, and the
  two halves are shuffled together, so about half the pairs match.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError


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
