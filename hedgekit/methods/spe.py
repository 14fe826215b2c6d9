"""Stochastic Prototype Embeddings (Scott et al. 2019, sec. 3), one plain function per equation. Each instance is a
noisy copy of its class prototype (eq. 3); with sigma_hat_i^2 = sigma_i^2 + sigma_eps^2:

    sigma_y^2 = ( sum_i sigma_hat_i^-2 )^-1,   mu_y = sigma_y^2 sum_i sigma_hat_i^-2 mu_i        (eq. 4-5)
    p(y | z, S) ∝ N(z; mu_y, sigma_hat_y^2),   sigma_hat_y^2 = sigma_y^2 + sigma_eps^2           (eq. 6)
    p(y | x, S) = E_{z ~ N(mu_x, sigma_x^2)} [ N(z; mu_y, sigma_hat_y^2) / sum_c N(z; mu_c, sigma_hat_c^2) ]  (eq. 7)

`naive_sampler` (sec. 3.2.1) and `intersection_sampler` (eq. 8-9) estimate eq. 7; as sigma_x^2 -> 0 with equal class
variances it is the PN posterior (`hedgekit.methods.pn`, scale 1 / (2 sigma_hat^2)). The head `SPE` and the samplers'
fast forms, which the kit runs, live in `hedgekit.methods.fast.spe`, which builds on this page (never the other
way); the head checks an episode where it enters, these functions only the embeddings' type.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError

LOG_2PI = math.log(2 * math.pi)


def gaussian_product(mean: Tensor, var: Tensor, labels, n_classes: int | None = None) -> tuple[Tensor, Tensor]:
    """Eq. 4-5 per dimension: (mu_y, sigma_y^2), each (n_classes, D), the normalised product of the Gaussians
    N(mean_i, diag var_i) of each class y; ``labels`` (N,) in 0..n_classes-1 (None: one more than the largest)."""
    labels = torch.as_tensor(labels).long()
    n = int(labels.max()) + 1 if n_classes is None else int(n_classes)
    labels = labels.to(mean.device)
    prec = var.reciprocal()
    prec_sum = mean.new_zeros(n, mean.shape[1]).index_add(0, labels, prec)
    weighted = mean.new_zeros(n, mean.shape[1]).index_add(0, labels, prec * mean)
    var_y = prec_sum.reciprocal()
    return var_y * weighted, var_y


def spe_prototypes(support: Embedding, labels, sigma_eps2: Tensor | float, n_classes: int | None = None):
    """Eq. 5: (mu_y, sigma_y^2) from the support Gaussians with sigma_hat_i^2 = sigma_i^2 + sigma_eps^2 (> 0, as
    sigma_eps^2 = softplus(gamma) is)."""
    mean, var = _single_gaussian("support", support)
    return gaussian_product(mean, var + sigma_eps2, labels, n_classes)


def gaussian_log_density(z: Tensor, mean: Tensor, var: Tensor) -> Tensor:
    """Eq. 6's log N(z; mu_c, diag sigma_hat_c^2) of z (..., D) under every class c: (..., C); mean, var (C, D).
    From differences, so it stays exact when variances are tiny (the PN limit)."""
    diff2 = (z.unsqueeze(-2) - mean) ** 2  # (..., C, D)
    return -0.5 * (diff2 / var + torch.log(var) + LOG_2PI).sum(-1)


def naive_sampler(query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor,
                  n_samples: int = 200, generator: torch.Generator | None = None) -> Tensor:
    """(Q, C) log p(y | x, S) by the naive sampler (sec. 3.2.1), a Monte-Carlo estimate of eq. 7:
    z_s = mu_x + sigma_x eps_s (s = 1..S),  log p(y|x) ~= log 1/S sum_s softmax_y log N(z_s; mu_y, sigma_hat_y^2).
    query_*: (Q, D) N(mu_x, sigma_x^2) (the variance may be 0); class_*: (C, D) mu_y and sigma_hat_y^2 (eq. 6)."""
    eps = _randn((len(query_mean), n_samples, query_mean.shape[1]), query_mean, generator)
    z = query_mean.unsqueeze(1) + query_var.sqrt().unsqueeze(1) * eps  # (Q, S, D)
    log_p = F.log_softmax(gaussian_log_density(z, class_mean, class_var), dim=-1)  # (Q, S, C)
    return torch.logsumexp(log_p, dim=1) - math.log(n_samples)


def intersection(query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor):
    """Eq. 8: (mu_xy, sigma_xy^2) of the Gaussian proportional to N(z; mu_x, sigma_x^2) N(z; mu_y, sigma_hat_y^2), the
    arguments broadcast; with s_y = sigma_hat_y^2, sigma_xy^2 = sigma_x^2 s_y / (sigma_x^2 + s_y) and mu_xy =
    (s_y mu_x + sigma_x^2 mu_y) / (sigma_x^2 + s_y): the paper's precision form, finite for point queries too."""
    total = query_var + class_var
    return (class_var * query_mean + query_var * class_mean) / total, query_var * class_var / total


def intersection_terms(query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor, targets=None):
    """Eq. 8-9 for every query x and class y (all C; with ``targets`` (Q,) the target class only): mu_x (Q, 1, D),
    eq. 9's first factor log N(mu_x; mu_y, sigma_x^2 + sigma_hat_y^2) in closed form (Q, Y), and mu_xy, sigma_xy^2
    (Q, Y, D), the Gaussian of eq. 8 that its second factor samples."""
    m_x, v_x = query_mean.unsqueeze(1), query_var.unsqueeze(1)  # (Q, 1, D)
    if targets is None:
        m_y, v_y = class_mean.unsqueeze(0), class_var.unsqueeze(0)  # (1, C, D)
    else:
        m_y, v_y = class_mean[targets].unsqueeze(1), class_var[targets].unsqueeze(1)  # (Q, 1, D)
    log_first = -0.5 * ((m_x - m_y) ** 2 / (v_x + v_y) + torch.log(v_x + v_y) + LOG_2PI).sum(-1)
    return (m_x, log_first, *intersection(m_x, v_x, m_y, v_y))


def intersection_sampler(query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor,
                         n_samples: int = 1, generator: torch.Generator | None = None, targets=None) -> Tensor:
    """log p(y | x, S) by the intersection sampler (eq. 8-9), with z_s ~ N(mu_xy, sigma_xy^2) drawn for each class y:

    log p(y|x) ~= log N(mu_x; mu_y, sigma_x^2 + sigma_hat_y^2) + log 1/S sum_s [ sum_c N(z_s; mu_c, sigma_hat_c^2) ]^-1.

    ``targets``: None -> (Q, C); (Q,) classes -> (Q,), the target class only (sec. 3.2.2). Heavy tails: the variance
    is infinite where sigma_xy^2 exceeds about half the largest class variance (class variances 10-50x apart gave
    estimates 100x too small at 10^5 samples); training tolerates it, evaluation uses the naive sampler (App. B)."""
    if targets is not None:
        targets = torch.as_tensor(targets, device=query_mean.device).long()
    _, log_first, mu_xy, var_xy = intersection_terms(query_mean, query_var, class_mean, class_var, targets)
    eps = _randn((*mu_xy.shape[:2], n_samples, mu_xy.shape[2]), query_mean, generator)
    z = mu_xy.unsqueeze(2) + var_xy.sqrt().unsqueeze(2) * eps  # (Q, Y, S, D)
    log_norm = torch.logsumexp(gaussian_log_density(z, class_mean, class_var), dim=-1)  # (Q, Y, S)
    log_p = log_first + (torch.logsumexp(-log_norm, dim=-1) - math.log(n_samples))
    return log_p if targets is None else log_p[:, 0]


def _randn(shape, like: Tensor, generator: torch.Generator | None) -> Tensor:
    """Standard normal noise of ``like``'s dtype and device, from ``generator`` wherever it lives."""
    if generator is not None and generator.device != like.device:
        return torch.randn(shape, generator=generator, dtype=like.dtype).to(like.device)
    return torch.randn(shape, generator=generator, dtype=like.dtype, device=like.device)


def _single_gaussian(name: str, emb: Embedding) -> tuple[Tensor, Tensor]:
    if not isinstance(emb, Embedding):
        raise InputError(f"{name} must be a hedgekit Embedding; got {type(emb).__name__}")
    if emb.n_components != 1:
        raise InputError(f"SPE needs single-Gaussian embeddings (C = 1); {name} has C = {emb.n_components}")
    return emb.mean[:, 0], emb.var[:, 0]
