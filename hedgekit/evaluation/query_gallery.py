"""Retrieval mAP by query-by-example (Taha et al. 2019, sec. 5.1): a quarter of every class's images are queries,
ranked against the rest, the gallery, by Euclidean distance between embedding means.

The quick check a triplet model's checkpoint records when it is trained (`hedgekit.zoo.recipes`); the paper's
tables are measured by `hedgekit.papers.taha.protocol`.
"""
from __future__ import annotations

import numpy as np
import torch

from hedgekit.data.subsets import query_gallery_split
from hedgekit.evaluation.metrics import mean_average_precision
from hedgekit.nets import EmbeddingNet


def query_gallery_map(model: EmbeddingNet, images: np.ndarray, labels: np.ndarray, n_images: int | None) -> dict:
    """{"map", "eval_images"} of ``model`` on uint8 (N, 28, 28) ``images`` with their ``labels``: ``n_images``
    of them drawn with seed 0 (all if None), split by `hedgekit.data.subsets.query_gallery_split`."""
    idx = np.arange(len(labels))
    if n_images is not None:
        idx = np.sort(np.random.default_rng(0).permutation(len(idx))[:n_images])
    labels = np.asarray(labels)[idx]
    q, g = query_gallery_split(labels)
    emb = model.embed(torch.from_numpy(images[idx]).unsqueeze(1).float().div(255.0)).mixture_mean().numpy()
    return {"map": mean_average_precision(emb[q], labels[q], emb[g], labels[g]), "eval_images": int(len(idx))}
