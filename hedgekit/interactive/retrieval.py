"""The Retrieval page (Taha et al. 2019, sec. 5.1 query-by-example): a query's uncertainty and nearest gallery
images under a heteroscedastic triplet model, and the gallery cleaned of its most uncertain images (Table 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from hedgekit.checks import check_count
from hedgekit.data import NDigitSet
from hedgekit.data.subsets import query_gallery_split
from hedgekit.errors import InputError
from hedgekit.evaluation.retrieval import map_after_removing_uncertain
from hedgekit.interactive.inputs import model_input
from hedgekit.interactive.models import app_preset, trained_or_fast
from hedgekit.nets import EmbeddingNet
from hedgekit.zoo import Spec

__all__ = ["APP_GALLERY_IMAGES", "APP_OCCLUDED_GALLERY", "retrieval_spec", "RetrievalGallery", "retrieval_gallery",
           "Retrieval", "retrieve", "cleaning_map"]

APP_GALLERY_IMAGES = 2000  # unseen-class test images on the Retrieval page: 25% queries, 75% gallery
APP_OCCLUDED_GALLERY = 0.5  # share of gallery images replaced by their occluded twin (the "bad shots")

def retrieval_spec(dim: int, preset: str | None = None, n_digits: int = 2):
    """The heteroscedastic triplet model of the Retrieval page, embedding in ``dim`` dimensions: the app passes
    notebook 08's Table 1 "Tri + Hetero" model's (N-digit MNIST, trained on the seen classes;
    `hedgekit.papers.taha.experiments.DIM`), via `trained_or_fast`."""
    return trained_or_fast(Spec(kind="het", data="ndigit", n_digits=n_digits, dim=check_count(dim, "dim"),
                                recipe="main", preset=preset or app_preset()))


@dataclass(frozen=True, eq=False)
class RetrievalGallery:
    """Queries and gallery of the Retrieval page, embedded once (Taha et al. sec. 5.1 query-by-example).

    Gallery: images (G, H, W) uint8 as the model saw them, labels (G,), means (G, D), sigma2 (G,) the
    heteroscedastic uncertainty, occluded (G,) bool, index (G,) position in the test split. Queries (clean):
    query_means (Q, D), query_labels (Q,), query_index (Q,).
    """

    images: np.ndarray
    labels: np.ndarray
    means: np.ndarray
    sigma2: np.ndarray
    occluded: np.ndarray
    index: np.ndarray
    query_means: np.ndarray
    query_labels: np.ndarray
    query_index: np.ndarray


def _embed_images(model: EmbeddingNet, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(means (n, D), uncertainty (n,)) of uint8 images: the model's own u(x) (sigma^2 for the het head)."""
    x = torch.from_numpy(np.ascontiguousarray(images)).unsqueeze(1).float().div(255.0)
    emb = model.embed(x)
    u = emb.uncertainty if emb.uncertainty is not None else emb.total_var()
    return emb.mixture_mean().numpy().astype(np.float64), u.numpy().astype(np.float64)


def retrieval_gallery(model: EmbeddingNet, test: NDigitSet, n_images: int = APP_GALLERY_IMAGES,
                      occluded: float = APP_OCCLUDED_GALLERY, seed: int = 0) -> RetrievalGallery:
    """Embed ``n_images`` of ``test`` (seeded), split 25/75 into clean queries and a gallery
    (`hedgekit.data.subsets.query_gallery_split`) in which a share ``occluded`` of the images is the
    test set's occluded twin: the uncertain gallery items that cleaning should remove (Taha Table 2)."""
    if not 0 <= occluded <= 1:
        raise InputError(f"occluded must be a share in [0, 1]; got {occluded}")
    if not 4 <= n_images <= len(test.labels):
        raise InputError(f"n_images must be in 4..{len(test.labels)}; got {n_images}")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.permutation(len(test.labels))[:n_images])
    q, g = query_gallery_split(test.labels[idx], seed=seed)
    bad = rng.random(len(g)) < occluded
    images = np.where(bad[:, None, None], test.corrupt[idx[g]], test.images[idx[g]])
    means, sigma2 = _embed_images(model, images)
    q_means, _ = _embed_images(model, test.images[idx[q]])
    return RetrievalGallery(images, test.labels[idx[g]], means, sigma2, bad, idx[g], q_means,
                            test.labels[idx[q]], idx[q])


@dataclass(frozen=True, eq=False)
class Retrieval:
    """One query against the gallery: its embedding, uncertainty and nearest gallery items."""

    image: np.ndarray  # (H, W) uint8, the occluded query as the model saw it
    mean: np.ndarray  # (D,)
    sigma2: float  # the query's uncertainty u(x) (sigma^2, Taha eq. 11)
    percentile: float  # share of the gallery with a smaller sigma^2
    neighbours: np.ndarray  # (k,) gallery positions, nearest first
    distances: np.ndarray  # (k,) Euclidean distances


@torch.no_grad()
def retrieve(model: EmbeddingNet, image, boxes, gallery: RetrievalGallery, k: int = 8, removed=(),
             exclude_index: int | None = None) -> Retrieval:
    """Embed ``image`` with ``boxes`` blacked out; its ``k`` nearest gallery items by Euclidean distance
    (ties: lower gallery position first), leaving out the ``removed`` gallery positions and the gallery item
    that is the query's own test image (``exclude_index``, a test-split index). An image of dark digits on a
    light background is inverted first, with a `PolarityWarning` (`model_input`)."""
    shape = tuple(model.input_shape[1:])
    seen, boxes, _, _ = model_input(image, boxes, shape)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a positive integer; got {k!r}")
    mean, u = _embed_images(model.eval(), seen[None])
    keep = np.ones(len(gallery.labels), dtype=bool)
    keep[np.asarray(removed, dtype=np.int64)] = False
    if exclude_index is not None:
        keep &= gallery.index != exclude_index
    pos = np.flatnonzero(keep)
    d = np.linalg.norm(gallery.means[pos] - mean[0], axis=1)
    order = np.lexsort((pos, d))[:k]
    return Retrieval(seen, mean[0], float(u[0]), float((gallery.sigma2 < u[0]).mean()), pos[order], d[order])


def cleaning_map(gallery: RetrievalGallery, fractions: Sequence[float], random: bool = False) -> list[dict]:
    """mAP and top-1 of the clean queries after removing each fraction of the gallery, most uncertain first
    (or at random): `hedgekit.evaluation.retrieval.map_after_removing_uncertain` (Taha et al. Table 2)."""
    return map_after_removing_uncertain(gallery.query_means, gallery.query_labels, gallery.means, gallery.labels,
                                        gallery.sigma2, fractions, random=random)
