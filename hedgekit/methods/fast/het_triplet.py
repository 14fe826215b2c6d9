"""Batch-hard and semi-hard mining where a training step is launch-bound (a GPU): the masked forms of
`hedgekit.methods.mining.batch_hard_triplets` (eq. 4) and `semi_hard_triplets` (eq. 3).

Why: a plain miner selects the mined triplets with ``nonzero``, whose size the host must read, one host
synchronisation per step on a GPU (`hedgekit.opcount`). A masked form keeps every candidate, a number of triplets
fixed by the batch, and says by ``valid`` which are mined; the losses then take means weighted by it
(`weighted_mean`), and no size depends on a value on the device. The triplets kept are those the plain miner selects,
in its order, so losses and gradients are equal to float rounding (tests/methods/fast/test_het_triplet.py). The
losses take these forms only where `hedgekit.hardware.launch_bound` says so; the CPU keeps the plain, selecting path.

Each builds on eq. 3 or 4 for every candidate (`hedgekit.methods.mining`).
"""
from __future__ import annotations

import torch
from torch import Tensor

from hedgekit.methods.mining import hardest_per_anchor, nearest_semi_hard


def batch_hard_masked(dist: Tensor, labels: Tensor) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
    """`batch_hard_triplets` without selecting its anchors: ((a, p, n) for every anchor a = 0..B-1, valid), with
    ``valid`` (B,) True where the anchor has a positive and a negative (the anchors `batch_hard_triplets` keeps, with
    the same p and n)."""
    p, n, valid = hardest_per_anchor(dist, labels)
    return (torch.arange(len(dist), device=dist.device), p, n), valid


def semi_hard_masked(dist: Tensor, labels: Tensor, margin: float) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
    """`semi_hard_triplets` without selecting its pairs: ((a, p, n) for every pair (a, p), a-major, with its nearest
    semi-hard negative n, valid), with ``valid`` (B * B,) True where the pair is an anchor-positive pair that has one
    (the triplets `semi_hard_triplets` keeps, in its order)."""
    n, valid = nearest_semi_hard(dist, labels, margin)
    index = torch.arange(len(dist), device=dist.device)
    a, p = index.view(-1, 1).expand_as(n), index.view(1, -1).expand_as(n)
    return (a.reshape(-1), p.reshape(-1), n.reshape(-1)), valid.reshape(-1)


def weighted_mean(t: Tensor, weights: Tensor) -> Tensor:
    """The mean of ``t`` over the triplets ``weights`` gives 1 (the rest 0); 0 where there are none. The masked forms'
    mean: the plain path's ``t.mean()`` over the selected triplets."""
    return (t * weights).sum() / weights.sum().clamp_min(1)
