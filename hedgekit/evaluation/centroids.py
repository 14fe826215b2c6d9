"""Class centroids of one model and the fixed 2D view of its embedding space (HIB App. D, Fig. 4).

A class centroid is the mean over a split's clean images of each image's mixture mean ("centroids derived
from the test set embeddings", HIB App. D), for the seen and, if given, the unseen classes. For D > 2 the
view is a fixed linear map W (PCA of the centroids, `hedgekit.viz.geometry.pca_basis`): a point mu is drawn
at W^T mu. The app's maps, the notebooks' ellipse figures and widgets and the SPE prototypes share this table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hedgekit.data import NDigitSet, class_split
from hedgekit.errors import InputError
from hedgekit.evaluation.metrics import class_centroids
from hedgekit.nets import EmbeddingNet
from hedgekit.viz.geometry import pca_basis

__all__ = ["CentroidTable", "centroid_table", "first_per_class"]


@dataclass(frozen=True, eq=False)
class CentroidTable:
    """Class centroids of one model, and the fixed 2D view of its embedding space.

    class_ids (K,) sorted; centroids (K, D); seen (K,) bool (class used in training);
    counts (K,) images per class; projection W (D, 2): identity for D = 2, else PCA
    of the centroids.
    """

    class_ids: np.ndarray
    centroids: np.ndarray
    seen: np.ndarray
    counts: np.ndarray
    projection: np.ndarray
    n_digits: int

    @property
    def xy(self) -> np.ndarray:
        """(K, 2) centroids in the 2D view."""
        return self.centroids @ self.projection

    @property
    def dim(self) -> int:
        return self.centroids.shape[1]

    @property
    def projected(self) -> bool:
        return self.dim != 2

    def digit(self, position: int) -> np.ndarray:
        """(K,) the digit at ``position`` (0 = leftmost, e.g. tens for N = 2) of every class."""
        if not 0 <= position < self.n_digits:
            raise InputError(f"position must be in 0..{self.n_digits - 1}; got {position}")
        return self.class_ids // 10 ** (self.n_digits - 1 - position) % 10

    def labels(self) -> list[str]:
        return [f"{c:0{self.n_digits}d}" for c in self.class_ids]


def centroid_table(model: EmbeddingNet, datasets: Sequence[NDigitSet], per_class: int | None = None,
                   batch_size: int = 2048) -> CentroidTable:
    """Centroids of every class in ``datasets`` (clean images), with their 2D projection.

    ``per_class`` caps the images used per class (the first ones in the split's random
    order), trading a little precision for speed: the app uses 30 (~1 s per model
    on one CPU core instead of ~8 s for all 20k test images).
    """
    if not datasets:
        raise InputError("centroid_table needs at least one dataset")
    n = datasets[0].n_digits
    zs, ys = [], []
    for ds in datasets:
        if ds.n_digits != n:
            raise InputError("all datasets must have the same number of digits")
        if per_class is not None:
            ds = ds.subset(first_per_class(ds.labels, per_class))
        x, y = ds.tensors(corrupt=False)
        zs.append(model.embed(x, batch_size).mixture_mean().numpy())
        ys.append(y.numpy())
    z, y = np.concatenate(zs), np.concatenate(ys)
    ids, cent = class_centroids(z, y)
    seen_ids, _ = class_split(n)
    counts = np.bincount(np.searchsorted(ids, y), minlength=len(ids))
    cent = cent.astype(np.float32)
    return CentroidTable(ids.astype(np.int64), cent, np.isin(ids, seen_ids), counts, pca_basis(cent), n)


def first_per_class(labels: np.ndarray, k: int) -> np.ndarray:
    """Indices of the first ``k`` images of every class, in their original order."""
    if k < 1:
        raise InputError(f"per_class must be >= 1; got {k}")
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.searchsorted(sorted_labels, sorted_labels, side="left")
    rank = np.arange(len(labels)) - starts
    return np.sort(order[rank < k])
