"""Heteroscedastic triplet loss (Taha et al. 2019, "Unsupervised data uncertainty learning in visual retrieval").

The encoder emits d + 1 numbers per input (sec. 4): an unnormalised embedding z in R^d and
s = log sigma^2 (`hedgekit.nets.heads.HeteroscedasticHead`). Every mined triplet (a, p, n) costs (eq. 11)

    (e^-s_a + e^-s_p + e^-s_n) * L_tri(a, p, n) / 2 + (s_a + s_p + s_n) / 2,

averaged over the triplets of the batch; the lambda ||W||^2 of eq. 11 is the optimiser's weight decay.
For a fixed L_tri = L each s is optimal at e^s = L: an input whose triplets stay violated is
explained as noise (large sigma^2) and its triplets are down-weighted (learned attenuation, sec. 2.1).

Pieces, readable in this order:

* `pairwise_distances`: D(., .) of eq. 2, the Euclidean distance. Not squared: eq. 2 defines D as
  the Euclidean distance, and eq. 8 and 11 use that same D on the unnormalised embedding.
* `batch_hard_triplets` (eq. 4, Hermans et al. 2017), `semi_hard_triplets` (eq. 3, Schroff et al. 2015) and
  `batch_all_triplets` (Hermans et al.'s L_BA, every valid triplet): index tensors (anchor, positive,
  negative) mined inside a P x K batch.
* `triplet_loss`: L_tri per triplet, soft margin ln(1 + exp(.)) (eq. 8, sec. 4.1) or hard margin (eq. 2).
* `triplet_batch_loss`: the vanilla baseline (eq. 2, mean over mined triplets) on point embeddings.
* `heteroscedastic_triplet_loss`: eq. 11 on an `Embedding` or on (z, s).
* `uncertainty`: u(x) = sigma^2 = e^s.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError

MININGS = ("batch_hard", "semi_hard", "batch_all")
SEMI_HARD_WINDOW = 1.0  # m of eq. 3 when the loss has a soft margin (no m of its own)
_TINY = 1e-30  # keeps sqrt's gradient finite; distances below 1e-15 are treated as 0


# --------------------------------------------------------------------------- distances
def pairwise_distances(z: Tensor) -> Tensor:
    """(B, B) Euclidean distances D(z_i, z_j) of eq. 2.

    Computed from explicit differences (no ||a||^2 + ||b||^2 - 2ab cancellation). The gradient
    is finite everywhere: where two points coincide (the diagonal) the distance is exactly 0 and
    its gradient is 0, the subgradient of ||.|| at the origin.

    Args:
        z: (B, D) embeddings.
    """
    if not isinstance(z, Tensor) or z.ndim != 2:
        raise InputError(f"z must be a (B, D) tensor of embeddings; got {_shape(z)}")
    _check_finite("z", z)
    sq = (z.unsqueeze(1) - z.unsqueeze(0)).pow(2).sum(-1)
    nonzero = sq > _TINY
    return torch.where(nonzero, sq.clamp_min(_TINY).sqrt(), torch.zeros_like(sq))


# --------------------------------------------------------------------------- mining
def batch_hard_triplets(z_or_dist: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Batch-hard mining (eq. 4; Hermans et al. 2017): one triplet per anchor.

    For every anchor a the positive is the farthest other image of its class,
    p = argmax_i D(a, i), and the negative the nearest image of another class, n = argmin_i D(a, i).
    Anchors without another image of their class, or without any image of another class, are
    dropped. Ties go to the lowest index.

    Args:
        z_or_dist: (B, D) embeddings or a (B, B) distance matrix (e.g. `pairwise_distances`). A
            square input with a zero diagonal that is symmetric and non-negative is read as distances.
        labels: (B,) class labels.
    Returns:
        (anchor, positive, negative) int64 index tensors of equal length (at most B).
    """
    dist = _as_distances(z_or_dist)
    pos, neg = _masks(_check_labels(labels, dist))
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
    _check_margin(margin, "margin")
    dist = _as_distances(dist, need_dist=True)
    pos, neg = _masks(_check_labels(labels, dist))
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
        dist: (B, B) distance matrix (only its shape is used) or (B, D) embeddings.
        labels: (B,) class labels.
    Returns:
        (anchor, positive, negative) int64 index tensors of equal length (sum over anchors of
        positives x negatives).
    """
    if not isinstance(dist, Tensor) or dist.ndim != 2:
        raise InputError(f"expected (B, D) embeddings or a (B, B) distance matrix; got {_shape(dist)}")
    pos, neg = _masks(_check_labels(labels, dist))
    return torch.nonzero(pos.unsqueeze(2) & neg.unsqueeze(1), as_tuple=True)


# --------------------------------------------------------------------------- losses
def triplet_loss(d_ap: Tensor, d_an: Tensor, margin: float | None = None) -> Tensor:
    """L_tri per triplet from the anchor-positive and anchor-negative distances.

    ``margin=None``: the soft margin of eq. 8 and sec. 4.1, ln(1 + exp(D(a, p) - D(a, n))).
    Otherwise the hinge of eq. 2, max(0, m + D(a, p) - D(a, n)) with m = ``margin`` > 0.

    Args:
        d_ap, d_an: distances of the same shape.
    Returns:
        Elementwise L_tri, same shape as the inputs (eq. 2's 1/b mean is left to the caller).
    """
    if not isinstance(d_ap, Tensor) or not isinstance(d_an, Tensor) or d_ap.shape != d_an.shape:
        raise InputError(f"d_ap and d_an must be tensors of one shape; got {_shape(d_ap)} and {_shape(d_an)}")
    if margin is None:
        return F.softplus(d_ap - d_an)
    _check_margin(margin, "margin", ", or None for the soft margin")
    return F.relu(margin + d_ap - d_an)


def triplet_batch_loss(z: Tensor, labels: Tensor, mining: str = "batch_hard", margin: float | None = None,
                       semi_hard_margin: float | None = None) -> tuple[Tensor, dict]:
    """The vanilla triplet loss of eq. 2 (the paper's "Tri-ResNet" baseline), averaged over mined triplets.

    Args:
        z: (B, D) point embeddings (e.g. ``Embedding.mixture_mean()``).
        labels, mining, margin, semi_hard_margin: as in `heteroscedastic_triplet_loss`.
    Returns:
        (loss, stats): stats ``triplet``, ``active`` and ``triplets`` as in `heteroscedastic_triplet_loss`.
    """
    if not isinstance(z, Tensor) or z.ndim != 2:
        raise InputError(f"z must be a (B, D) tensor of embeddings; got {_shape(z)}")
    _, l_tri, stats = _mined_triplet_losses(z, labels, mining, margin, semi_hard_margin)
    return _mean_or_zero(l_tri, z), stats


def heteroscedastic_triplet_loss(emb_or_zs: Embedding | tuple[Tensor, Tensor], labels: Tensor,
                                 mining: str = "batch_hard", margin: float | None = None,
                                 semi_hard_margin: float | None = None) -> tuple[Tensor, dict]:
    """Eq. 11 without the weight-decay term, averaged over the N triplets mined in the batch.

    Per triplet (a, p, n): (e^-s_a + e^-s_p + e^-s_n) L_tri(a, p, n) / 2 + (s_a + s_p + s_n) / 2,
    where L_tri is `triplet_loss` on Euclidean distances (`pairwise_distances`). Mining looks at
    the distances only (no gradient flows through the choice of triplets). If semi-hard mining
    finds no triplet in a valid batch the loss is 0 (with a graph, so ``backward`` works) and
    ``stats["triplets"]`` is 0.

    Args:
        emb_or_zs: an `Embedding` of one isotropic Gaussian per input (``build_model("het")``),
            read as z = mean and s = log var; or a pair (z (B, D), s (B,) or (B, 1)).
        labels: (B,) class labels; a batch needs two images of one class and one of another.
        mining: "batch_hard" (eq. 4), "semi_hard" (eq. 3) or "batch_all" (every valid triplet).
        margin: None for the soft margin (the paper's choice, sec. 4.1), else the hard margin m > 0.
        semi_hard_margin: m of eq. 3 for semi-hard mining; None uses ``margin``, or
            `SEMI_HARD_WINDOW` with the soft margin.
    Returns:
        (loss, stats) with stats ``triplet`` (mean L_tri), ``sigma2`` (mean e^s over the batch),
        ``active`` (fraction of mined triplets with D(a, n) < D(a, p) + m, m = 0 for the soft
        margin: the ranking constraint is violated) and ``triplets`` (how many were mined).
    """
    z, s = _z_and_s(emb_or_zs)
    (a, p, n), l_tri, stats = _mined_triplet_losses(z, labels, mining, margin, semi_hard_margin)
    weight = (-s[a]).exp() + (-s[p]).exp() + (-s[n]).exp()
    per_triplet = 0.5 * weight * l_tri + 0.5 * (s[a] + s[p] + s[n])
    stats["sigma2"] = float(s.detach().exp().mean())
    return _mean_or_zero(per_triplet, z, s), stats


def uncertainty(emb: Embedding) -> Tensor:
    """(B,) u(x) = sigma^2 = e^s of each input (sec. 3): the isotropic variance of its Gaussian.

    For ``build_model("het")`` outputs this equals ``emb.uncertainty``.
    """
    return _isotropic_var(emb)


# --------------------------------------------------------------------------- helpers
def _mined_triplet_losses(z: Tensor, labels, mining: str, margin: float | None, semi_hard_margin: float | None):
    """Mine triplets on the batch's distances; return ((a, p, n), L_tri per triplet, stats)."""
    if mining not in MININGS:
        raise InputError(f"mining must be one of {MININGS}; got {mining!r}")
    if margin is not None:
        _check_margin(margin, "margin", ", or None for the soft margin")
    dist = pairwise_distances(z)
    a, p, n = _mine(dist.detach(), labels, mining, margin, semi_hard_margin)
    d_ap, d_an = dist[a, p], dist[a, n]
    l_tri = triplet_loss(d_ap, d_an, margin)
    stats = {"triplet": _mean(l_tri), "active": _mean((d_an < d_ap + (margin or 0.0)).float()), "triplets": len(a)}
    return (a, p, n), l_tri, stats


def _mine(dist: Tensor, labels, mining: str, margin: float | None,
          semi_hard_margin: float | None) -> tuple[Tensor, Tensor, Tensor]:
    pos, neg = _masks(_check_labels(labels, dist))
    if not (pos.any(1) & neg.any(1)).any():
        raise InputError("a batch needs two images of one class and one image of another class "
                         "(draw batches with hedgekit.data.samplers.PKSampler)")
    if mining == "batch_hard":
        return batch_hard_triplets(dist, labels)
    if mining == "batch_all":
        return batch_all_triplets(dist, labels)
    if semi_hard_margin is None:
        semi_hard_margin = SEMI_HARD_WINDOW if margin is None else margin
    _check_margin(semi_hard_margin, "semi_hard_margin")
    return semi_hard_triplets(dist, labels, semi_hard_margin)


def _masks(labels: Tensor) -> tuple[Tensor, Tensor]:
    """(B, B) masks: positives (same class, i != j) and negatives (other class)."""
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    return same & ~eye, ~same


def _check_labels(labels, batch: Tensor) -> Tensor:
    labels = torch.as_tensor(labels, device=batch.device)
    if labels.ndim != 1 or len(labels) != len(batch):
        raise InputError(f"labels must have shape ({len(batch)},), one per row of the batch; got {tuple(labels.shape)}")
    return labels


def _as_distances(x: Tensor, need_dist: bool = False) -> Tensor:
    """The (B, B) distance matrix given by ``x``, or computed from (B, D) embeddings ``x`` (detached)."""
    if not isinstance(x, Tensor) or x.ndim != 2:
        what = "a (B, B) distance matrix" if need_dist else "(B, D) embeddings or a (B, B) distance matrix"
        raise InputError(f"expected {what}; got {_shape(x)}")
    _check_finite("distances" if need_dist else "z_or_dist", x)
    if _is_distance_matrix(x):
        return x.detach()
    if need_dist:
        raise InputError(f"expected a (B, B) distance matrix (symmetric, non-negative, zero diagonal); "
                         f"got shape {tuple(x.shape)}; use pairwise_distances(z)")
    return pairwise_distances(x.detach())


def _is_distance_matrix(x: Tensor) -> bool:
    return (x.shape[0] == x.shape[1] and bool((x.diagonal() == 0).all()) and bool((x >= 0).all())
            and torch.allclose(x, x.T))


def _z_and_s(emb_or_zs) -> tuple[Tensor, Tensor]:
    """(z (B, D), s (B,)) from an Embedding or a (z, s) pair."""
    if isinstance(emb_or_zs, Embedding):
        return emb_or_zs.mean[:, 0], _isotropic_var(emb_or_zs).log()
    if not isinstance(emb_or_zs, (tuple, list)) or len(emb_or_zs) != 2:
        raise InputError(f"expected an Embedding or a pair (z, s); got {type(emb_or_zs).__name__}")
    z, s = emb_or_zs
    if not isinstance(z, Tensor) or z.ndim != 2:
        raise InputError(f"z must be a (B, D) tensor of embeddings; got {_shape(z)}")
    if not isinstance(s, Tensor) or s.shape not in ((len(z),), (len(z), 1)):
        raise InputError(f"s = log sigma^2 must have shape ({len(z)},) or ({len(z)}, 1); got {_shape(s)}")
    _check_finite("s", s)
    return z, s.reshape(len(z))


def _isotropic_var(emb: Embedding) -> Tensor:
    """(B,) variance of an Embedding holding one isotropic Gaussian with positive variance per input."""
    if not isinstance(emb, Embedding):
        raise InputError(f"expected an Embedding; got {type(emb).__name__}")
    if emb.n_components != 1:
        raise InputError(f"expected one Gaussian per input (build_model('het')); got {emb.n_components} components")
    var = emb.var[:, 0]
    if not (var > 0).all() or not (var == var[:, :1]).all():
        raise InputError("expected an isotropic variance sigma^2 > 0 per input (build_model('het')); "
                         "got zero (point embedding) or per-axis variances")
    return var[:, 0]


def _mean(t: Tensor) -> float:
    return float(t.detach().mean()) if len(t) else 0.0


def _mean_or_zero(per_triplet: Tensor, *inputs: Tensor) -> Tensor:
    if len(per_triplet):
        return per_triplet.mean()
    return sum(x.sum() for x in inputs) * 0.0


def _check_margin(margin, name: str, hint: str = "") -> None:
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not (math.isfinite(margin) and margin > 0):
        raise InputError(f"{name} must be a finite number > 0{hint}; got {margin!r}")


def _check_finite(name: str, t: Tensor) -> None:
    if not torch.isfinite(t).all():
        raise InputError(f"{name} contains NaN or inf values")


def _shape(x) -> str:
    return str(tuple(x.shape)) if isinstance(x, Tensor) else type(x).__name__
