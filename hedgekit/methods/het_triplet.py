"""Heteroscedastic triplet loss (Taha et al. 2019). The encoder emits d + 1 numbers per input (sec. 4): an
unnormalised embedding z in R^d and s = log sigma^2 (`hedgekit.nets.heads.HeteroscedasticHead`); every mined triplet
(a, p, n) costs (eq. 11; its lambda ||W||^2 is the optimiser's weight decay)

    (e^-s_a + e^-s_p + e^-s_n) * L_tri(a, p, n) / 2 + (s_a + s_p + s_n) / 2,

optimal at e^s = L_tri for a fixed L_tri: inputs whose triplets stay violated are explained as noise (sec. 2.1).
u(x) = sigma^2 = e^s. The triplets come from the miners of eq. 3 and 4 (`hedgekit.methods.mining`); where a step is launch-bound (a GPU) the losses mine with the masked forms of
`hedgekit.methods.fast.het_triplet`; what they take is checked where it enters (`hedgekit.training.triplets`).
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.checks import values_checked
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.hardware import launch_bound
from hedgekit.methods.fast.het_triplet import batch_hard_masked, semi_hard_masked, weighted_mean
from hedgekit.methods.mining import batch_all_triplets, batch_hard_triplets, semi_hard_triplets

SEMI_HARD_WINDOW = 1.0  # m of eq. 3 when the loss has a soft margin (no m of its own)
_TINY = 1e-30  # keeps sqrt's gradient finite; distances below 1e-15 are treated as 0


def heteroscedastic_triplet_loss(z: Tensor, s: Tensor, labels: Tensor, mining: str = "batch_hard",
                                 margin: float | None = None, semi_hard_margin: float | None = None):
    """Eq. 11 on z (B, D) and s (B,) = log sigma^2 (`z_and_log_var`), the rest as in `triplet_batch_loss`; returns
    (loss, stats): those of `triplet_batch_loss` and ``sigma2``, the mean e^s."""
    (a, p, n), l_tri, mined, stats = _mined_triplet_losses(z, labels, mining, margin, semi_hard_margin)
    weight = (-s[a]).exp() + (-s[p]).exp() + (-s[n]).exp()
    per_triplet = 0.5 * weight * l_tri + 0.5 * (s[a] + s[p] + s[n])  # eq. 11
    stats["sigma2"] = s.detach().exp().mean()
    return _mean(per_triplet, mined, z, s), stats


def uncertainty(emb: Embedding) -> Tensor:
    """(B,) u(x) = sigma^2 = e^s of each input (sec. 3), ``emb.uncertainty`` of a ``build_model("het")`` output: an
    `Embedding` of one isotropic Gaussian per input with sigma^2 > 0 (checked; the values where `values_checked`)."""
    if not isinstance(emb, Embedding):
        raise InputError(f"expected an Embedding; got {type(emb).__name__}")
    if emb.n_components != 1:
        raise InputError(f"expected one Gaussian per input (build_model('het')); got {emb.n_components} components")
    var = emb.var[:, 0]
    if values_checked() and (not (var > 0).all() or not (var == var[:, :1]).all()):
        raise InputError("expected an isotropic variance sigma^2 > 0 per input (build_model('het')); "
                         "got zero (point embedding) or per-axis variances")
    return var[:, 0]


def z_and_log_var(emb: Embedding) -> tuple[Tensor, Tensor]:
    """(z (B, D), s (B,)) of a ``build_model("het")`` output (checked by `uncertainty`): its mean and log sigma^2."""
    return emb.mean[:, 0], uncertainty(emb).log()


def triplet_batch_loss(z: Tensor, labels: Tensor, mining: str = "batch_hard", margin: float | None = None,
                       semi_hard_margin: float | None = None) -> tuple[Tensor, dict]:
    """Eq. 2 (the "Tri-ResNet" baseline) on z (B, D), labels (B,), averaged over the triplets ``mining`` finds (0,
    with a graph, if none). ``margin``: None for the soft margin (sec. 4.1), else the hinge's m; ``semi_hard_margin``:
    eq. 3's m (None: ``margin`` or `SEMI_HARD_WINDOW`). Stats: ``triplet`` (mean L_tri), ``active`` (share with
    D(a, n) < D(a, p) + m; m = 0 if soft), ``triplets`` (how many); 0-d tensors are read at log steps only."""
    _, l_tri, mined, stats = _mined_triplet_losses(z, labels, mining, margin, semi_hard_margin)
    return _mean(l_tri, mined, z), stats


def triplet_loss(d_ap: Tensor, d_an: Tensor, margin: float | None = None) -> Tensor:
    """Elementwise L_tri: the soft margin ln(1 + exp(D(a, p) - D(a, n))) of eq. 8 (``margin=None``, sec. 4.1), else
    eq. 2's hinge max(0, m + D(a, p) - D(a, n))."""
    return F.softplus(d_ap - d_an) if margin is None else F.relu(margin + d_ap - d_an)


def pairwise_distances(z: Tensor) -> Tensor:
    """(B, B) Euclidean distances D(z_i, z_j) of eq. 2 (not squared; eq. 8 and 11 use the same D), from explicit
    differences; where two points coincide (the diagonal) D is exactly 0 with gradient 0, ||.||'s subgradient."""
    sq = (z.unsqueeze(1) - z.unsqueeze(0)).pow(2).sum(-1)
    return torch.where(sq > _TINY, sq.clamp_min(_TINY).sqrt(), torch.zeros_like(sq))


def _mined_triplet_losses(z: Tensor, labels, mining: str, margin: float | None, semi_hard_margin: float | None):
    """((a, p, n), L_tri per triplet, mined, stats) of the batch. ``mined`` is None where the miners select (the CPU:
    the path every recorded result was trained with), else the masked forms' 0/1 weight of each triplet."""
    dist = pairwise_distances(z)
    window = semi_hard_margin if semi_hard_margin is not None else SEMI_HARD_WINDOW if margin is None else margin
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
    stats = {"triplet": _mean(l_tri.detach(), mined), "active": _mean((d_an < d_ap + (margin or 0.0)).float(), mined),
             "triplets": len(a) if mined is None else mined.sum()}
    return (a, p, n), l_tri, mined, stats


def _mean(t: Tensor, mined: Tensor | None, *inputs: Tensor) -> Tensor:
    """The mean of ``t`` over the mined triplets (weighted by ``mined`` where given); 0 where none was mined, with a
    graph through ``inputs`` (default: ``t``)."""
    if mined is not None:
        return weighted_mean(t, mined)
    return t.mean() if len(t) else sum(x.sum() for x in inputs or (t,)) * 0.0
