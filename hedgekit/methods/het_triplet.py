"""Heteroscedastic triplet loss (Taha et al. 2019, "Unsupervised data uncertainty learning in visual retrieval").

The encoder emits d + 1 numbers per input (sec. 4): an unnormalised embedding z in R^d and
s = log sigma^2 (`hedgekit.nets.heads.HeteroscedasticHead`). Every mined triplet (a, p, n) costs (eq. 11)

    (e^-s_a + e^-s_p + e^-s_n) * L_tri(a, p, n) / 2 + (s_a + s_p + s_n) / 2,

averaged over the triplets of the batch; the lambda ||W||^2 of eq. 11 is the optimiser's weight decay.
For a fixed L_tri = L each s is optimal at e^s = L: an input whose triplets stay violated is
explained as noise (large sigma^2) and its triplets are down-weighted (learned attenuation, sec. 2.1).
u(x) = sigma^2 = e^s (`uncertainty`). Below the loss: the vanilla baseline (`triplet_batch_loss`, eq. 2),
L_tri (`triplet_loss`, eq. 2 / 8), D (`pairwise_distances`) and the miners, which take a distance matrix; beside
batch-hard and semi-hard mining their masked forms (`batch_hard_masked`, `semi_hard_masked`), which the losses take
where a step is launch-bound (a GPU: no host synchronisation; issue 50).

The functions compute their equations on the inputs they are given; the inputs are checked where they enter
(issue 47 item 3): `hedgekit.training.triplets.TripletConfig` (mining, margins) and `fit_triplets` (the labels, the
P x K sampler, the het model). `uncertainty` and `z_and_log_var`, which read an `Embedding` a user passes (notebook
08 reads u(x) of every test image through `hedgekit.papers.taha.protocol.embed`), check that it is a het output.
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.checks import values_checked
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.hardware import launch_bound

MININGS = ("batch_hard", "semi_hard", "batch_all")
SEMI_HARD_WINDOW = 1.0  # m of eq. 3 when the loss has a soft margin (no m of its own)
_TINY = 1e-30  # keeps sqrt's gradient finite; distances below 1e-15 are treated as 0


def heteroscedastic_triplet_loss(z: Tensor, s: Tensor, labels: Tensor, mining: str = "batch_hard",
                                 margin: float | None = None, semi_hard_margin: float | None = None):
    """Eq. 11 without the weight decay, averaged over the triplets mined in the batch; returns (loss, stats).

    Args:
        z, s: (B, D) embeddings and (B,) s = log sigma^2; from a ``build_model("het")`` output: `z_and_log_var`.
        labels, mining, margin, semi_hard_margin: as in `triplet_batch_loss`.
    Returns:
        stats of `triplet_batch_loss` and ``sigma2`` (mean e^s over the batch).
    """
    (a, p, n), l_tri, mined, stats = _mined_triplet_losses(z, labels, mining, margin, semi_hard_margin)
    weight = (-s[a]).exp() + (-s[p]).exp() + (-s[n]).exp()
    per_triplet = 0.5 * weight * l_tri + 0.5 * (s[a] + s[p] + s[n])  # eq. 11
    stats["sigma2"] = s.detach().exp().mean()  # 0-d tensors in stats are read at log steps only
    return _mean_or_zero(per_triplet, mined, z, s), stats


def uncertainty(emb: Embedding) -> Tensor:
    """(B,) u(x) = sigma^2 = e^s of each input (sec. 3): the isotropic variance of its Gaussian.

    For ``build_model("het")`` outputs this equals ``emb.uncertainty``. An entry point: ``emb`` is checked
    (`_isotropic_variance`).
    """
    return _isotropic_variance(emb)


def z_and_log_var(emb: Embedding) -> tuple[Tensor, Tensor]:
    """(z (B, D), s (B,)) of a ``build_model("het")`` output: the mean and s = log sigma^2 of its Gaussian.

    An entry point: ``emb`` is checked (`_isotropic_variance`; its values at log steps only in a training step).
    """
    return emb.mean[:, 0], _isotropic_variance(emb).log()


def triplet_batch_loss(z: Tensor, labels: Tensor, mining: str = "batch_hard", margin: float | None = None,
                       semi_hard_margin: float | None = None) -> tuple[Tensor, dict]:
    """The vanilla triplet loss of eq. 2 (the paper's "Tri-ResNet" baseline), averaged over mined triplets.

    Mining looks at the distances only (no gradient flows through the choice of triplets). If no triplet is
    mined the loss is 0 (with a graph, so ``backward`` works): semi-hard mining can find none even in a P x K
    batch of `hedgekit.training.triplets.fit_triplets`, whose sampler gives every anchor a positive and a negative.

    Args:
        z: (B, D) point embeddings (e.g. ``Embedding.mixture_mean()``).
        labels: (B,) class labels, a tensor on z's device.
        mining: one of `MININGS`: "batch_hard" (eq. 4), "semi_hard" (eq. 3) or "batch_all" (every valid triplet).
        margin: None for the soft margin (the paper's choice, sec. 4.1), else the hard margin m > 0.
        semi_hard_margin: m of eq. 3 for semi-hard mining; None uses ``margin``, or
            `SEMI_HARD_WINDOW` with the soft margin.
    Returns:
        (loss, stats) with stats ``triplet`` (mean L_tri), ``active`` (fraction of mined triplets with
        D(a, n) < D(a, p) + m, m = 0 for the soft margin: the ranking constraint is violated) and
        ``triplets`` (how many were mined).
    """
    _, l_tri, mined, stats = _mined_triplet_losses(z, labels, mining, margin, semi_hard_margin)
    return _mean_or_zero(l_tri, mined, z), stats


def triplet_loss(d_ap: Tensor, d_an: Tensor, margin: float | None = None) -> Tensor:
    """L_tri per triplet from the anchor-positive and anchor-negative distances.

    ``margin=None``: the soft margin of eq. 8 and sec. 4.1, ln(1 + exp(D(a, p) - D(a, n))).
    Otherwise the hinge of eq. 2, max(0, m + D(a, p) - D(a, n)) with m = ``margin`` > 0.

    Args:
        d_ap, d_an: distances of the same shape.
    Returns:
        Elementwise L_tri, same shape as the inputs (eq. 2's 1/b mean is left to the caller).
    """
    if margin is None:
        return F.softplus(d_ap - d_an)
    return F.relu(margin + d_ap - d_an)


# --------------------------------------------------------------------------- distances
def pairwise_distances(z: Tensor) -> Tensor:
    """(B, B) Euclidean distances D(z_i, z_j) of eq. 2.

    Not squared: eq. 2 defines D as the Euclidean distance, and eq. 8 and 11 use that same D on the
    unnormalised embedding. Computed from explicit differences (no ||a||^2 + ||b||^2 - 2ab
    cancellation). The gradient is finite everywhere: where two points coincide (the diagonal) the
    distance is exactly 0 and its gradient is 0, the subgradient of ||.|| at the origin.

    Args:
        z: (B, D) embeddings.
    """
    sq = (z.unsqueeze(1) - z.unsqueeze(0)).pow(2).sum(-1)
    nonzero = sq > _TINY
    return torch.where(nonzero, sq.clamp_min(_TINY).sqrt(), torch.zeros_like(sq))


# --------------------------------------------------------------------------- mining
def batch_hard_triplets(dist: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Batch-hard mining (eq. 4; Hermans et al. 2017): one triplet per anchor.

    For every anchor a the positive is the farthest other image of its class,
    p = argmax_i D(a, i), and the negative the nearest image of another class, n = argmin_i D(a, i).
    Anchors without another image of their class, or without any image of another class, are
    dropped. Ties go to the lowest index.

    Args:
        dist: (B, B) distance matrix, e.g. `pairwise_distances(z)`.
        labels: (B,) class labels.
    Returns:
        (anchor, positive, negative) int64 index tensors of equal length (at most B).
    """
    dist = dist.detach()
    pos, neg = _masks(labels)
    hardest_pos = torch.where(pos, dist, -math.inf).argmax(1)
    hardest_neg = torch.where(neg, dist, math.inf).argmin(1)
    anchors = torch.nonzero(pos.any(1) & neg.any(1)).squeeze(1)
    return anchors, hardest_pos[anchors], hardest_neg[anchors]


def semi_hard_triplets(dist: Tensor, labels: Tensor, margin: float) -> tuple[Tensor, Tensor, Tensor]:
    """Semi-hard mining (eq. 3; Schroff et al. 2015): one triplet per anchor-positive pair.

    Every pair (a, p) of distinct images of one class is an anchor-positive pair. Its negative is
    chosen among the semi-hard ones, D(a, p) < D(a, n) < D(a, p) + margin (strict inequalities):
    when several qualify, the nearest to the anchor (the hardest semi-hard negative; ties go to
    the lowest index); when none qualifies, the pair is dropped.

    Args:
        dist: (B, B) distance matrix, e.g. `pairwise_distances(z)`.
        labels: (B,) class labels.
        margin: the width m > 0 of the semi-hard band.
    Returns:
        (anchor, positive, negative) int64 index tensors of equal length (at most B (B - 1)).
    """
    dist = dist.detach()
    pos, neg = _masks(labels)
    d_ap = dist.unsqueeze(2)  # (a, p, 1)
    d_an = dist.unsqueeze(1)  # (a, 1, n)
    valid = pos.unsqueeze(2) & neg.unsqueeze(1) & (d_an > d_ap) & (d_an < d_ap + margin)  # (a, p, n)
    nearest = torch.where(valid, d_an, math.inf).argmin(2)
    anchors, positives = torch.nonzero(valid.any(2), as_tuple=True)
    return anchors, positives, nearest[anchors, positives]


def batch_all_triplets(dist: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Batch-all mining (Hermans et al. 2017, L_BA): every valid triplet of the batch.

    All (a, p, n) with p != a of a's class and n of another class, in lexicographic order.

    Args:
        dist: (B, B) distance matrix: not read (the triplets do not depend on it); every miner takes (dist, labels),
            so that the loss and notebook 08 call the three alike.
        labels: (B,) class labels.
    Returns:
        (anchor, positive, negative) int64 index tensors of equal length (sum over anchors of
        positives x negatives).
    """
    pos, neg = _masks(labels)
    return torch.nonzero(pos.unsqueeze(2) & neg.unsqueeze(1), as_tuple=True)


# --------------------------------------------------------------------------- helpers
def _mined_triplet_losses(z: Tensor, labels, mining: str, margin: float | None, semi_hard_margin: float | None):
    """Mine triplets on the batch's distances; return ((a, p, n), L_tri per triplet, mined, stats).

    Where a step is launch-bound (`hedgekit.hardware.launch_bound`: a GPU) batch-hard and semi-hard mining take
    their masked forms (`batch_hard_masked`, `semi_hard_masked`): (a, p, n) then has a fixed length and ``mined`` is
    its 0/1 weight (1 for a mined triplet); the means below are weighted sums, and no size depends on the distances
    (no host synchronisation, `hedgekit.opcount`). Elsewhere, and for batch-all mining, the miners select the
    triplets and ``mined`` is None: the CPU keeps the path every recorded result was trained with."""
    dist = pairwise_distances(z)
    window = _semi_hard_window(margin, semi_hard_margin)
    mined = None
    if mining == "batch_all":
        a, p, n = batch_all_triplets(dist.detach(), labels)
    elif launch_bound(dist.device):
        masked = {"batch_hard": batch_hard_masked, "semi_hard": functools.partial(semi_hard_masked, margin=window)}
        (a, p, n), valid = masked[mining](dist.detach(), labels)
        mined = valid.to(dist.dtype)
    else:
        select = {"batch_hard": batch_hard_triplets, "semi_hard": functools.partial(semi_hard_triplets, margin=window)}
        a, p, n = select[mining](dist.detach(), labels)
    d_ap, d_an = dist[a, p], dist[a, n]
    l_tri = triplet_loss(d_ap, d_an, margin)
    stats = {"triplet": _mean(l_tri, mined), "active": _mean((d_an < d_ap + (margin or 0.0)).float(), mined),
             "triplets": len(a) if mined is None else mined.sum()}
    return (a, p, n), l_tri, mined, stats


def batch_hard_masked(dist: Tensor, labels: Tensor) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
    """`batch_hard_triplets` without selecting its anchors: ((a, p, n) for every anchor a = 0..B-1, valid), with
    ``valid`` (B,) True where the anchor has another image of its class and one of another class (the anchors
    `batch_hard_triplets` keeps, with the same p and n). The selection of the plain form needs the number of valid
    anchors on the host (a ``nonzero``, one host synchronisation per step on a GPU). The loss's path where a step is
    launch-bound (`_mined_triplet_losses`); tests/methods/test_het_triplet.py checks that both forms give the same
    triplets, losses and gradients."""
    dist = dist.detach()
    pos, neg = _masks(labels)
    hardest_pos = torch.where(pos, dist, -math.inf).argmax(1)
    hardest_neg = torch.where(neg, dist, math.inf).argmin(1)
    anchors = torch.arange(len(dist), device=dist.device)
    return (anchors, hardest_pos, hardest_neg), pos.any(1) & neg.any(1)


def semi_hard_masked(dist: Tensor, labels: Tensor, margin: float) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
    """`semi_hard_triplets` without selecting its pairs: ((a, p, n) for every pair (a, p), a-major, with its
    nearest semi-hard negative n), and ``valid`` (B * B,) True where the pair is an anchor-positive pair that has
    one (the triplets `semi_hard_triplets` keeps, in its order). The loss's path where a step is launch-bound, for
    the reason of `batch_hard_masked`; tests/methods/test_het_triplet.py checks that both forms agree."""
    dist = dist.detach()
    pos, neg = _masks(labels)
    d_ap, d_an = dist.unsqueeze(2), dist.unsqueeze(1)  # (a, p, 1), (a, 1, n)
    valid = pos.unsqueeze(2) & neg.unsqueeze(1) & (d_an > d_ap) & (d_an < d_ap + margin)  # (a, p, n)
    nearest = torch.where(valid, d_an, math.inf).argmin(2)
    index = torch.arange(len(dist), device=dist.device)
    anchors, positives = index.view(-1, 1).expand_as(nearest), index.view(1, -1).expand_as(nearest)
    return (anchors.reshape(-1), positives.reshape(-1), nearest.reshape(-1)), valid.any(2).reshape(-1)


def _semi_hard_window(margin: float | None, semi_hard_margin: float | None) -> float:
    """m of eq. 3: ``semi_hard_margin``, else the loss's hard margin, else `SEMI_HARD_WINDOW` (soft margin)."""
    return semi_hard_margin if semi_hard_margin is not None else SEMI_HARD_WINDOW if margin is None else margin


def _masks(labels: Tensor) -> tuple[Tensor, Tensor]:
    """(B, B) masks: positives (same class, i != j) and negatives (other class)."""
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    return same & ~eye, ~same


def _mean(t: Tensor, mined: Tensor | None = None) -> Tensor:
    """The mean of ``t`` (over the triplets ``mined`` weighs 1, `_mined_triplet_losses`) as a detached 0-d tensor
    (0 for no triplets): a statistic read at log steps only."""
    if mined is not None:
        return (t.detach() * mined).sum() / mined.sum().clamp_min(1)
    return t.detach().mean() if len(t) else t.new_zeros(())


def _mean_or_zero(per_triplet: Tensor, mined: Tensor | None, *inputs: Tensor) -> Tensor:
    """The mean over the mined triplets (weighted by ``mined`` where given); 0, with a graph, where none was mined."""
    if mined is not None:
        return (per_triplet * mined).sum() / mined.sum().clamp_min(1)
    if len(per_triplet):
        return per_triplet.mean()
    return sum(x.sum() for x in inputs) * 0.0


def _isotropic_variance(emb) -> Tensor:
    """(B,) variance sigma^2 of an `Embedding` holding one isotropic Gaussian with sigma^2 > 0 per input."""
    if not isinstance(emb, Embedding):
        raise InputError(f"expected an Embedding; got {type(emb).__name__}")
    if emb.n_components != 1:
        raise InputError(f"expected one Gaussian per input (build_model('het')); got {emb.n_components} components")
    var = emb.var[:, 0]
    if values_checked() and (not (var > 0).all() or not (var == var[:, :1]).all()):
        raise InputError("expected an isotropic variance sigma^2 > 0 per input (build_model('het')); "
                         "got zero (point embedding) or per-axis variances")
    return var[:, 0]
