"""Pairwise losses on point embeddings (HIB sec. 2.1), with d = ||z1 - z2||:

    L_hard = d^2 if (x1, x2) match, max(0, M - d)^2 otherwise              (eq. 1)
    p(m | z1, z2) = sigmoid(-a d + b)                                       (eq. 2)
    L_soft = -log p(m | z1, z2) if they match, -log(1 - p(m | z1, z2)) otherwise   (eq. 3)

* `hard_contrastive`: eq. 1 (Hadsell et al. 2006) with margin M.
* `hard_contrastive_all_pairs`: eq. 1 over every pair of a batch, matches and non-matches weighted
  equally (the hard-contrastive point model of HIB's ablation, trained by `hedgekit.training.fit`).
* `log_match`: log p(m|x1,x2) and log(1 - p) as the log of the Monte-Carlo *mean*
  over K1 x K2 sample pairs (HIB eq. 5; with K = 1 and point embeddings this is
  exactly eq. 2), computed stably with logsumexp.
* `soft_contrastive`: eq. 3, the negative log-likelihood of the true match label.

Inputs are checked where they enter the kit, not here: the margin and the batch by
`hedgekit.training.fit.TrainConfig`, the embeddings by `hedgekit.embedding.Embedding`.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.hardware import launch_bound
from hedgekit.nets.match import SoftMatch

TINY = 1e-38  # smallest normal float32 is 1.18e-38


def masked_sum(x: Tensor, mask: Tensor) -> Tensor:
    """The sum of ``x`` where ``mask`` is True, as a 0-d tensor.

    On the CPU by boolean selection, ``x[mask].sum()``: the summation every recorded result was trained with.
    Elsewhere by ``where(mask, x, 0).sum()``: a selection's size depends on the mask's values, so on a GPU it
    makes the host wait for them (`hedgekit.checks.deferred_value_checks`); the two agree to float rounding.
    """
    return x[mask].sum() if _selects(x) else torch.where(mask, x, 0).sum()


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """The mean of ``x`` where ``mask`` is True (`masked_sum`'s two paths; NaN for an empty mask)."""
    return x[mask].mean() if _selects(x) else torch.where(mask, x, 0).sum() / mask.sum()


def _selects(x: Tensor) -> bool:
    """Whether `masked_sum` selects (on the CPU) or masks (where a step is launch-bound:
    `hedgekit.hardware.launch_bound`)."""
    return not launch_bound(x.device)


def hard_contrastive(z1: Tensor, z2: Tensor, same: Tensor, margin: float = 1.0) -> Tensor:
    """Eq. 1: mean of ||z1-z2||^2 for matches and max(M - ||z1-z2||, 0)^2 for non-matches; z1, z2 (B, D), same (B,)."""
    return contrastive_from_distance((z1 - z2).norm(dim=-1), same, margin).mean()


def hard_contrastive_all_pairs(z: Tensor, labels: Tensor, margin: float = 1.0) -> Tensor:
    """Eq. 1 over all B (B - 1) / 2 pairs of the batch ``z`` (B, D) with class ``labels`` (B,): the mean over the
    matching pairs plus the mean over the non-matching pairs, halved, so neither kind dominates the batch.

    A batch without matching pairs (or without non-matching ones) has no defined loss (NaN); the class-balanced
    batches of `hedgekit.training.fit` have both (`hedgekit.training.fit.TrainConfig`).
    """
    iu = torch.triu_indices(len(z), len(z), 1, device=z.device)
    same = labels[iu[0]] == labels[iu[1]]
    per = contrastive_from_distance(torch.cdist(z, z)[iu[0], iu[1]], same, margin)
    return 0.5 * (masked_mean(per, same) + masked_mean(per, ~same))


def contrastive_from_distance(d: Tensor, same: Tensor, margin: float) -> Tensor:
    """Eq. 1 elementwise on distances d (any shape) and boolean match labels; the margin M > 0 (checked by
    `hedgekit.training.fit.TrainConfig`)."""
    same = same.bool()
    return torch.where(same, d**2, F.relu(margin - d) ** 2)


def log_match(d: Tensor, match: SoftMatch, sample_dims: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """log p(m|x1,x2) and log(1 - p(m|x1,x2)) from sample distances (HIB eq. 5).

    ``d`` holds ||z1^(k1) - z2^(k2)|| with the K1 x K2 sample pairs along
    ``sample_dims``; p is the mean of sigmoid(-a d + b) over them (the log of the
    mean, not the mean of the logs). 1 - p is averaged from sigmoid(+a d - b)
    directly, so it keeps full precision when p is close to 1. The means are taken
    in probability space (half the cost of a log-sum-exp, which matters on the
    training hot path) and floored at 1e-38 before the log: exact unless every
    sample pair has |a d - b| > 87, where float32 sigmoids underflow.
    """
    logit = match.logit(d)
    p = torch.sigmoid(logit).mean(dim=sample_dims)
    q = torch.sigmoid(-logit).mean(dim=sample_dims)
    return p.clamp_min(TINY).log(), q.clamp_min(TINY).log()


def soft_contrastive(z1: Tensor, z2: Tensor, same: Tensor, match: SoftMatch) -> Tensor:
    """Eq. 3: mean over pairs of -log p(m = m_hat | z1, z2) with p from eq. 2; z1, z2 (B, D), same (B,)."""
    d = (z1 - z2).norm(dim=-1).unsqueeze(-1)
    log_p, log_q = log_match(d, match, (-1,))
    return -torch.where(same.bool(), log_p, log_q).mean()
