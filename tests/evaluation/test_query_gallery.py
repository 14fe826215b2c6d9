"""hedgekit.evaluation.query_gallery against a naive loop: every query ranks the gallery by distance, AP by hand."""
from types import SimpleNamespace

import numpy as np
import pytest

from hedgekit.data.subsets import query_gallery_split
from hedgekit.evaluation.query_gallery import query_gallery_map


class MeanPixel:
    """A stand-in model whose 1-D embedding of an image is its mean pixel value in [0, 1]."""

    def embed(self, x):
        return SimpleNamespace(mixture_mean=lambda: x.mean(dim=(1, 2, 3)).unsqueeze(1))


def _naive_map(values, labels):
    """mAP of 1-D embeddings: each query's gallery sorted by distance, AP = mean precision at each relevant hit."""
    q, g = query_gallery_split(labels)
    aps = []
    for i in q:
        order = g[np.argsort(np.abs(values[g] - values[i]), kind="stable")]
        hits = labels[order] == labels[i]
        aps.append(np.mean([hits[: k + 1].sum() / (k + 1) for k in np.flatnonzero(hits)]))
    return float(np.mean(aps))


def _images():
    """3 classes x 12 images of one grey value each, overlapping between neighbouring classes: class c holds
    30c + 4i (+1 for class 2), so that no two images of different classes are equally far from any query."""
    labels = np.repeat(np.arange(3), 12)
    values = labels * 30 + np.tile(np.arange(12) * 4, 3) + (labels == 2)
    return np.broadcast_to(values[:, None, None], (36, 28, 28)).astype(np.uint8), labels, values / 255.0


def test_map_equals_a_naive_loop_over_queries_on_overlapping_classes():
    images, labels, values = _images()
    out = query_gallery_map(MeanPixel(), images, labels, None)
    assert out["eval_images"] == 36 and 0.5 < out["map"] < 1.0  # the classes overlap: not every query is perfect
    assert out["map"] == pytest.approx(_naive_map(values, labels), abs=1e-12)


def test_a_subset_is_drawn_with_seed_0_and_counted():
    images, labels, values = _images()
    idx = np.sort(np.random.default_rng(0).permutation(36)[:24])
    out = query_gallery_map(MeanPixel(), images, labels, 24)
    assert out["eval_images"] == 24
    assert out["map"] == pytest.approx(_naive_map(values[idx], labels[idx]), abs=1e-12)
