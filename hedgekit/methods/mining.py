"""Triplet mining (Taha et al. 2019, sec. 3): which (anchor, positive, negative) triplets of a batch a triplet loss
(`hedgekit.methods.het_triplet`, eq. 2 and 11) averages over, from the batch's (B, B) distances and labels. Batch-hard
(eq. 4; Hermans et al. 2017), semi-hard (eq. 3; Schroff et al. 2015) and batch-all. Each selects its triplets with
``nonzero``; their masked forms, for a launch-bound step, are in `hedgekit.methods.fast.het_triplet`.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

MININGS = ("batch_hard", "semi_hard", "batch_all")


def batch_hard_triplets(dist: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Batch-hard mining (eq. 4; Hermans et al. 2017): (anchor, positive, negative) int64 indices, one triplet per
    anchor that has a positive and a negative; dist (B, B), e.g. `pairwise_distances(z)`, labels (B,)."""
    p, n, valid = hardest_per_anchor(dist, labels)
    a = torch.nonzero(valid).squeeze(1)
    return a, p[a], n[a]


def hardest_per_anchor(dist: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Eq. 4 for every anchor a: p = argmax_i D(a, i) over the other images of its class, n = argmin_i D(a, i) over
    the other classes (ties to the lowest index), and whether a has both; each (B,)."""
    dist, (pos, neg) = dist.detach(), _masks(labels)
    return (torch.where(pos, dist, -math.inf).argmax(1), torch.where(neg, dist, math.inf).argmin(1),
            pos.any(1) & neg.any(1))


def semi_hard_triplets(dist: Tensor, labels: Tensor, margin: float) -> tuple[Tensor, Tensor, Tensor]:
    """Semi-hard mining (eq. 3; Schroff et al. 2015): (anchor, positive, negative) int64 indices, one triplet per pair
    (a, p) of distinct images of one class that has a semi-hard negative, the band's width m = ``margin`` > 0."""
    n, valid = nearest_semi_hard(dist, labels, margin)
    a, p = torch.nonzero(valid, as_tuple=True)
    return a, p, n[a, p]


def nearest_semi_hard(dist: Tensor, labels: Tensor, margin: float) -> tuple[Tensor, Tensor]:
    """Eq. 3 for every pair (a, p): the nearest negative n with D(a, p) < D(a, n) < D(a, p) + m (ties to the lowest
    index), and whether (a, p) is an anchor-positive pair that has one; each (B, B)."""
    pos, neg = _masks(labels)
    d_ap, d_an = dist.detach().unsqueeze(2), dist.detach().unsqueeze(1)  # (a, p, 1), (a, 1, n)
    valid = pos.unsqueeze(2) & neg.unsqueeze(1) & (d_an > d_ap) & (d_an < d_ap + margin)  # (a, p, n)
    return torch.where(valid, d_an, math.inf).argmin(2), valid.any(2)


def batch_all_triplets(dist: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Batch-all mining (Hermans et al. 2017): every (a, p, n), p != a of a's class, n of another, in lexicographic
    order; ``dist`` is not read (every miner takes (dist, labels))."""
    pos, neg = _masks(labels)
    return torch.nonzero(pos.unsqueeze(2) & neg.unsqueeze(1), as_tuple=True)


def _masks(labels: Tensor) -> tuple[Tensor, Tensor]:
    """(B, B) masks: positives (same class, i != j) and negatives (other class)."""
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    return same & ~torch.eye(len(labels), dtype=torch.bool, device=labels.device), ~same
