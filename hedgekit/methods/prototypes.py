"""Prototype classifiers: Prototypical Networks (PN) and Stochastic Prototype Embeddings (SPE).

PN (Snell et al. 2017): a class prototype is the mean of its support embeddings and
a query z is classified by a softmax over negative squared Euclidean distances,

    p(y | z) = softmax_y( -scale * ||z - c_y||^2 ),   c_y = mean_{i in S_y} z_i   (scale = 1 in Snell et al.).

SPE (Scott et al. 2019, sec. 3). Every input is a diagonal Gaussian p(z|x) = N(mu_x, diag sigma_x^2) (eq. 1)
and every instance is a noisy copy of its class prototype, rho_y = z_i + eps with
eps ~ N(0, sigma_eps^2 I) (eq. 3). With sigma_hat_i^2 = sigma_i^2 + sigma_eps^2:

* eq. 4-5, prototype = normalised product of the support Gaussians N(mu_i, sigma_hat_i^2), per dimension:
      sigma_y^2 = ( sum_i sigma_hat_i^-2 )^-1,     mu_y = sigma_y^2 * sum_i sigma_hat_i^-2 mu_i
  (a confidence-weighted average: noisy support items count less);
* eq. 6, class likelihood of a query embedding z:  p(y | z, S) ∝ N(z; mu_y, sigma_hat_y^2)  with
      sigma_hat_y^2 = sigma_y^2 + sigma_eps^2;
* eq. 7, class posterior, marginalising the query's own uncertainty (sigma_eps is *not* added to the query):
      p(y | x, S) = E_{z ~ N(mu_x, sigma_x^2)} [ N(z; mu_y, sigma_hat_y^2) / sum_c N(z; mu_c, sigma_hat_c^2) ];
* sec. 3.2.1, naive sampler: average the softmax of eq. 6 over z_s ~ N(mu_x, sigma_x^2) (reparametrised);
* eq. 8-9, intersection sampler: with sigma_xy^2 = (sigma_x^-2 + sigma_hat_y^-2)^-1 and
  mu_xy = sigma_xy^2 (sigma_x^-2 mu_x + sigma_hat_y^-2 mu_y),
      p(y | x, S) = N(mu_x; mu_y, sigma_x^2 + sigma_hat_y^2)
                    * E_{z ~ N(mu_xy, sigma_xy^2)} [ 1 / sum_c N(z; mu_c, sigma_hat_c^2) ],
  one set of samples per class y; for the cross-entropy loss only the target class is sampled.

PN as a limit (statement under eq. 7): if the query variance vanishes (sigma_x^2 -> 0) and all classes have the
same sigma_hat_y^2 = s^2 I, eq. 7 is softmax_y( -||mu_x - mu_y||^2 / (2 s^2) ): the PN posterior with
``scale = 1 / (2 s^2)``. If moreover all support variances are equal (e.g. all zero), mu_y is the plain support
mean, i.e. exactly the PN prototype. ``tests/test_prototypes.py`` checks this.

Everything works in log space: each function returns log-probabilities of shape (n_query, n_classes).
The naive estimate averages probabilities (log-mean-exp over samples), so its rows sum to one exactly. The
intersection estimate for each class y uses that class's own samples, so its rows sum to one only in
expectation (exactly in the deterministic limit sigma_x^2 = 0).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.embedding import Embedding
from hedgekit.checks import check_count, check_memory, values_checked
from hedgekit.errors import InputError

SAMPLERS = ("naive", "intersection")
LOG_2PI = math.log(2 * math.pi)
_CHUNK_ELEMENTS = 4_000_000  # elements of the largest (chunk, samples, classes, D) temporary
_TINY = 1e-30  # probabilities below this are recomputed in log space (float32 underflows near 1e-38)


# ------------------------------------------------------------------------------------------ PN
def pn_prototypes(z: Tensor, labels, n_classes: int | None = None) -> Tensor:
    """(n_classes, D) PN prototypes: the mean of each class's support embeddings z (N, D) (Snell et al. eq. 1)."""
    _check_matrix("support embeddings", z)
    labels, n = _check_labels(labels, len(z), n_classes)
    sums = z.new_zeros(n, z.shape[1]).index_add(0, labels.to(z.device), z)
    counts = torch.bincount(labels, minlength=n).to(z)
    return sums / counts.unsqueeze(1)


def squared_distances(a: Tensor, b: Tensor) -> Tensor:
    """(N, M) squared Euclidean distances, computed by differences (exact for tiny distances)."""
    return ((a.unsqueeze(1) - b.unsqueeze(0)) ** 2).sum(-1)


def pn_log_posterior(query_z: Tensor, prototypes: Tensor, scale: float | Tensor = 1.0) -> Tensor:
    """(Q, C) log p(y | z) = log_softmax_y(-scale * ||z - c_y||^2) (Snell et al. eq. 2; scale = 1 there)."""
    _check_matrix("query embeddings", query_z)
    _check_matrix("prototypes", prototypes, query_z.shape[1])
    return F.log_softmax(-scale * squared_distances(query_z, prototypes), dim=-1)


# ------------------------------------------------------------------------- Gaussian products
def gaussian_product(mean: Tensor, var: Tensor, labels, n_classes: int | None = None) -> tuple[Tensor, Tensor]:
    """Normalised product of the Gaussians N(mean_i, diag var_i) of each class (SPE eq. 4-5), per dimension.

    Returns (mu_y, sigma_y^2), each (n_classes, D):
    sigma_y^2 = (sum_i var_i^-1)^-1 and mu_y = sigma_y^2 * sum_i var_i^-1 mean_i over the items i of class y.
    For SPE prototypes pass var_i = sigma_hat_i^2 = sigma_i^2 + sigma_eps^2 (`spe_prototypes` does).
    """
    _check_matrix("support means", mean)
    _check_matrix("support variances", var, mean.shape[1])
    if var.shape != mean.shape:
        raise InputError(f"support variances {tuple(var.shape)} must match means {tuple(mean.shape)}")
    if values_checked() and (var <= 0).any():
        raise InputError("a product of Gaussians needs strictly positive variances (add sigma_eps^2 > 0)")
    labels, n = _check_labels(labels, len(mean), n_classes)
    labels = labels.to(mean.device)
    prec = var.reciprocal()
    prec_sum = mean.new_zeros(n, mean.shape[1]).index_add(0, labels, prec)
    weighted = mean.new_zeros(n, mean.shape[1]).index_add(0, labels, prec * mean)
    var_y = prec_sum.reciprocal()
    return var_y * weighted, var_y


def spe_prototypes(support: Embedding, labels, sigma_eps2: Tensor | float, n_classes: int | None = None):
    """SPE eq. 5: (mu_y, sigma_y^2) from support Gaussians with sigma_hat_i^2 = sigma_i^2 + sigma_eps^2."""
    mean, var = _single_gaussian("support", support)
    return gaussian_product(mean, var + sigma_eps2, labels, n_classes)


def gaussian_log_density(z: Tensor, mean: Tensor, var: Tensor) -> Tensor:
    """log N(z; mean_c, diag var_c) of z (..., D) under every class c: returns (..., C).

    mean and var are (C, D). Computed from differences, not a matmul expansion, so it stays exact
    when variances are tiny (the PN limit).
    """
    diff2 = (z.unsqueeze(-2) - mean) ** 2  # (..., C, D)
    return -0.5 * (diff2 / var + torch.log(var) + LOG_2PI).sum(-1)


def _log_density_around(center: Tensor, offsets: Tensor, class_mean: Tensor, class_var: Tensor) -> Tensor:
    """(Q, N, C) log N(center_q + offset_qn; mu_c, var_c): `gaussian_log_density` for many samples, fast.

    center (Q, D), offsets (Q, N, D). Expands the square around each query's centre,
    sum_d (u - m)^2 / v = sum_d u^2 / v - 2 sum_d u m / v + sum_d m^2 / v   (u = offset, m = mu_c - center),
    so the (Q, N, C) result comes from one batched matmul instead of (Q, N, C, D) temporaries (~5x faster).
    The m^2 / v term is computed from differences, so the result is exact when the offsets are zero
    (point queries); float32 rounding is ~1e-7 of the largest term, negligible unless samples lie
    hundreds of class standard deviations from the query mean.
    """
    prec = class_var.reciprocal()  # (C, D)
    rel = class_mean.unsqueeze(0) - center.unsqueeze(1)  # (Q, C, D)
    const = -0.5 * ((rel**2 * prec).sum(-1) + (torch.log(class_var) + LOG_2PI).sum(-1))  # (Q, C)
    feats = torch.cat([offsets**2, offsets], dim=-1)  # (Q, N, 2D)
    weights = torch.cat([-0.5 * prec.expand_as(rel), rel * prec], dim=-1).transpose(1, 2)  # (Q, 2D, C)
    return torch.baddbmm(const.unsqueeze(1), feats, weights)  # const + feats @ weights


# -------------------------------------------------------------------------------- samplers
def _check_query(query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor) -> None:
    _check_matrix("query means", query_mean)
    _check_matrix("query variances", query_var, query_mean.shape[1])
    if query_var.shape != query_mean.shape:
        raise InputError(f"query variances {tuple(query_var.shape)} must match means {tuple(query_mean.shape)}")
    if values_checked() and (query_var < 0).any():
        raise InputError("query variances must be non-negative")
    _check_matrix("class means", class_mean, query_mean.shape[1])
    _check_matrix("class variances", class_var, query_mean.shape[1])
    if values_checked() and (class_var <= 0).any():
        raise InputError("class variances sigma_hat_y^2 must be strictly positive")


def _randn(shape, like: Tensor, generator: torch.Generator | None) -> Tensor:
    if generator is not None and generator.device != like.device:
        return torch.randn(shape, generator=generator, dtype=like.dtype).to(like.device)
    return torch.randn(shape, generator=generator, dtype=like.dtype, device=like.device)


def log_posterior_naive(
    query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor,
    n_samples: int = 200, generator: torch.Generator | None = None,
) -> Tensor:
    """(Q, C) log p(y | x, S) by the naive sampler (SPE sec. 3.2.1): Monte-Carlo estimate of eq. 7.

    z_s = mu_x + sigma_x * eps_s (reparametrised, s = 1..n_samples), then
    log p(y|x) ~= log( (1/S) sum_s softmax_y log N(z_s; mu_y, sigma_hat_y^2) ).

    Args:
        query_mean, query_var: (Q, D) query Gaussian N(mu_x, sigma_x^2) (variance may be 0).
        class_mean, class_var: (C, D) mu_y and sigma_hat_y^2 = sigma_y^2 + sigma_eps^2 (eq. 6).
    """
    _check_query(query_mean, query_var, class_mean, class_var)
    _check_sampler("naive", n_samples)
    q, d = query_mean.shape
    sd = query_var.sqrt()
    out = []
    for sl in _chunks(q, n_samples * len(class_mean) * d):
        eps = _randn((len(query_mean[sl]), n_samples, d), query_mean, generator)
        offsets = sd[sl].unsqueeze(1) * eps  # z_s = mu_x + offsets, (q, S, D)
        log_lik = _log_density_around(query_mean[sl], offsets, class_mean, class_var)  # (q, S, C), eq. 6
        # log of the sample mean of the softmax; exp/log of probabilities is ~2x faster than
        # log_softmax + logsumexp and exact unless a class probability underflows (then: log space).
        probs = torch.softmax(log_lik, dim=-1).mean(1)  # (q, C)
        log_p = probs.clamp_min(_TINY).log()
        rows = torch.nonzero((probs < _TINY).any(1))[:, 0]
        if len(rows):
            exact = torch.logsumexp(F.log_softmax(log_lik[rows], dim=-1), dim=1) - math.log(n_samples)
            log_p = log_p.index_put((rows,), exact)
        out.append(log_p)
    return torch.cat(out)


def intersection(query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor):
    """Eq. 8: the Gaussian N(mu_xy, sigma_xy^2) proportional to N(z; mu_x, sigma_x^2) N(z; mu_y, sigma_hat_y^2).

    query_* broadcast against class_* (e.g. (Q, 1, D) with (C, D) -> (Q, C, D)). Written as
    sigma_xy^2 = sigma_x^2 s_y / (sigma_x^2 + s_y), mu_xy = (s_y mu_x + sigma_x^2 mu_y) / (sigma_x^2 + s_y)
    (s_y = sigma_hat_y^2), algebraically the paper's precision form but finite for point queries (sigma_x^2 = 0).
    """
    total = query_var + class_var
    return (class_var * query_mean + query_var * class_mean) / total, query_var * class_var / total


def log_posterior_intersection(
    query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor,
    n_samples: int = 1, generator: torch.Generator | None = None, targets=None,
) -> Tensor:
    """log p(y | x, S) by the intersection sampler (SPE eq. 8-9).

    log p(y|x) ~= log N(mu_x; mu_y, sigma_x^2 + sigma_hat_y^2)
                  + log (1/S) sum_s [ sum_c N(z_s; mu_c, sigma_hat_c^2) ]^-1
    with z_s ~ N(mu_xy, sigma_xy^2) drawn separately for each class y (reparametrised). The estimate of
    p(y|x) is unbiased; its log (what the loss uses) is biased low for few samples, like the naive one.

    Caveat (heavy tails): 1 / sum_c N(z; mu_c, sigma_hat_c^2) grows like exp(+z^2 / (2 max_c sigma_hat_c^2)) far
    from the classes, so the estimator has infinite variance when, in some dimension, sigma_xy^2 exceeds about
    half the largest class variance, e.g. a query much broader than narrow, unequal class likelihoods. Mild
    violations are harmless in practice, but with class variances differing 10-50x across classes we saw
    estimates 100x too small even with 10^5 samples. With equal class variances it has finite variance iff
    sigma_x^2 < sigma_hat^2 in every dimension. Training only needs the target class and tolerates this; the
    evaluation default is the naive sampler (App. B).

    Args:
        targets: None -> (Q, C) estimates for every class; (Q,) class indices -> (Q,) estimates for the
            target class only (all that the cross-entropy loss needs; SPE sec. 3.2.2).
    """
    _check_query(query_mean, query_var, class_mean, class_var)
    _check_sampler("intersection", n_samples)
    q, d = query_mean.shape
    n_cls = len(class_mean)
    if targets is not None:
        targets = torch.as_tensor(targets, device=query_mean.device).long()
        if targets.shape != (q,) or (values_checked() and (targets.min() < 0 or targets.max() >= n_cls)):
            raise InputError(f"targets must be ({q},) class indices in 0..{n_cls - 1}")
    out = []
    for sl in _chunks(q, n_samples * n_cls * d * (1 if targets is not None else n_cls)):
        m_x, v_x = query_mean[sl].unsqueeze(1), query_var[sl].unsqueeze(1)  # (q, 1, D)
        if targets is None:
            m_y, v_y = class_mean.unsqueeze(0), class_var.unsqueeze(0)  # (1, C, D)
        else:
            m_y, v_y = class_mean[targets[sl]].unsqueeze(1), class_var[targets[sl]].unsqueeze(1)  # (q, 1, D)
        # first factor of eq. 9 (closed form)
        log_first = -0.5 * ((m_x - m_y) ** 2 / (v_x + v_y) + torch.log(v_x + v_y) + LOG_2PI).sum(-1)  # (q, Y)
        # second factor: samples from the intersection Gaussian of eq. 8
        mu_xy, var_xy = intersection(m_x, v_x, m_y, v_y)  # (q, Y, D)
        eps = _randn((*mu_xy.shape[:2], n_samples, d), query_mean, generator)
        offsets = (mu_xy - m_x).unsqueeze(2) + var_xy.sqrt().unsqueeze(2) * eps  # z = mu_x + offsets, (q, Y, S, D)
        log_dens = _log_density_around(query_mean[sl], offsets.flatten(1, 2), class_mean, class_var)  # (q, Y*S, C)
        log_norm = torch.logsumexp(log_dens, dim=-1).view(*mu_xy.shape[:2], n_samples)  # (q, Y, S)
        log_second = torch.logsumexp(-log_norm, dim=-1) - math.log(n_samples)
        res = log_first + log_second
        out.append(res[:, 0] if targets is not None else res)
    return torch.cat(out)


# ------------------------------------------------------------------------------- modules
class PN(nn.Module):
    """Prototypical Network head (Snell et al. 2017): no parameters, deterministic.

    Uses the embedding means (``Embedding.mixture_mean``), so it also works on Gaussian embeddings.
    ``sampler``, ``n_samples`` and ``generator`` are accepted and ignored, so `PN` and `SPE` share one interface.
    """

    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale

    def log_posterior(self, query: Embedding, support: Embedding, support_labels, n_classes: int | None = None,
                      sampler: str | None = None, n_samples: int | None = None,
                      generator: torch.Generator | None = None) -> Tensor:
        """(Q, C) log p(y | query) with prototypes from the support set."""
        protos = pn_prototypes(support.mixture_mean(), support_labels, n_classes)
        return pn_log_posterior(query.mixture_mean(), protos, self.scale)

    forward = log_posterior

    def loss(self, query: Embedding, query_labels, support: Embedding, support_labels,
             n_classes: int | None = None, sampler: str | None = None, n_samples: int | None = None,
             generator: torch.Generator | None = None) -> Tensor:
        """Mean cross-entropy of the query classes."""
        log_p = self.log_posterior(query, support, support_labels, n_classes)
        y, _ = _check_labels(query_labels, len(query), log_p.shape[1], "query")
        return F.nll_loss(log_p, y.to(log_p.device))


def gamma_init(n_support: int, dim: int, gamma0: float = 0.01) -> float:
    """SPE App. B: gamma = |S| * gamma0^(2/d), with |S| the number of support examples per training episode.

    Used as the raw parameter directly (the paper applies no softplus^-1), so the initial
    sigma_eps^2 = softplus(|S| * gamma0^(2/d)).
    """
    if n_support < 1 or dim < 1 or gamma0 <= 0:
        raise InputError(f"need n_support >= 1, dim >= 1 and gamma0 > 0; got {n_support}, {dim}, {gamma0}")
    return n_support * gamma0 ** (2.0 / dim)


class SPE(nn.Module):
    """Stochastic Prototype Embedding head (Scott et al. 2019): learns sigma_eps^2 = softplus(gamma) (App. B).

    Args:
        n_support: |S| of App. B, the number of support examples per *training* episode
            (n_classes x k_support; see `SPE.for_episodes`). Only used to initialise gamma.
        dim: embedding dimension d.
        gamma0: App. B's constant (0.01 for all models in the paper).
        train_sampler, train_samples: used by `loss` (paper: intersection, 1 sample; sec. 4.2).
        eval_sampler, eval_samples: used by `log_posterior` (paper: naive, 200 samples; App. B).
    """

    def __init__(self, n_support: int, dim: int, gamma0: float = 0.01, *,
                 train_sampler: str = "intersection", train_samples: int = 1,
                 eval_sampler: str = "naive", eval_samples: int = 200):
        super().__init__()
        _check_sampler(train_sampler, train_samples)
        _check_sampler(eval_sampler, eval_samples)
        self.dim = dim
        self.gamma = nn.Parameter(torch.tensor(gamma_init(n_support, dim, gamma0)))
        self.train_sampler, self.train_samples = train_sampler, train_samples
        self.eval_sampler, self.eval_samples = eval_sampler, eval_samples

    @classmethod
    def for_episodes(cls, n_classes: int, k_support: int, dim: int, **kwargs) -> "SPE":
        """SPE whose gamma is initialised for training episodes of n_classes x k_support support items."""
        return cls(n_classes * k_support, dim, **kwargs)

    @property
    def sigma_eps2(self) -> Tensor:
        """sigma_eps^2 = softplus(gamma) (App. B)."""
        return F.softplus(self.gamma)

    def prototypes(self, support: Embedding, support_labels, n_classes: int | None = None) -> tuple[Tensor, Tensor]:
        """(mu_y, sigma_y^2), each (n_classes, D): eq. 5 with sigma_hat_i^2 = sigma_i^2 + sigma_eps^2."""
        self._check_dim(support)
        return spe_prototypes(support, support_labels, self.sigma_eps2, n_classes)

    def class_distributions(self, support: Embedding, support_labels, n_classes: int | None = None):
        """(mu_y, sigma_hat_y^2 = sigma_y^2 + sigma_eps^2): the class likelihoods of eq. 6."""
        mu, var = self.prototypes(support, support_labels, n_classes)
        return mu, var + self.sigma_eps2

    def log_posterior(self, query: Embedding, support: Embedding, support_labels, n_classes: int | None = None,
                      sampler: str | None = None, n_samples: int | None = None,
                      generator: torch.Generator | None = None) -> Tensor:
        """(Q, C) log p(y | x, S) of eq. 7; defaults to the evaluation sampler (naive, 200 samples)."""
        sampler = self.eval_sampler if sampler is None else sampler
        n_samples = self.eval_samples if n_samples is None else n_samples
        _check_sampler(sampler, n_samples)
        self._check_dim(query)
        mu_y, var_y = self.class_distributions(support, support_labels, n_classes)
        q_mean, q_var = _single_gaussian("query", query)
        fn = log_posterior_naive if sampler == "naive" else log_posterior_intersection
        return fn(q_mean, q_var, mu_y, var_y, n_samples, generator)

    forward = log_posterior

    def loss(self, query: Embedding, query_labels, support: Embedding, support_labels,
             n_classes: int | None = None, sampler: str | None = None, n_samples: int | None = None,
             generator: torch.Generator | None = None) -> Tensor:
        """Mean cross-entropy -log p(y_true | x, S); defaults to the training sampler (intersection, 1 sample).

        With the intersection sampler only the target class is sampled (sec. 3.2.2).
        """
        sampler = self.train_sampler if sampler is None else sampler
        n_samples = self.train_samples if n_samples is None else n_samples
        _check_sampler(sampler, n_samples)
        self._check_dim(query)
        mu_y, var_y = self.class_distributions(support, support_labels, n_classes)
        y, _ = _check_labels(query_labels, len(query), len(mu_y), "query")
        y = y.to(mu_y.device)
        q_mean, q_var = _single_gaussian("query", query)
        if sampler == "intersection":
            log_p = log_posterior_intersection(q_mean, q_var, mu_y, var_y, n_samples, generator, targets=y)
        else:
            log_p = log_posterior_naive(q_mean, q_var, mu_y, var_y, n_samples, generator).gather(1, y[:, None])[:, 0]
        return -log_p.mean()

    def _check_dim(self, emb: Embedding) -> None:
        if isinstance(emb, Embedding) and emb.dim != self.dim:
            raise InputError(f"this SPE was built for D = {self.dim}; got embeddings with D = {emb.dim}")

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, sigma_eps2={float(self.sigma_eps2.detach()):.4g}, "
                f"train={self.train_sampler}x{self.train_samples}, eval={self.eval_sampler}x{self.eval_samples}")


# --------------------------------------------------------------------------- validation helpers
def _check_matrix(name: str, t: Tensor, dim: int | None = None) -> None:
    if not isinstance(t, Tensor) or t.ndim != 2:
        raise InputError(f"{name} must be a 2-D tensor (N, D); got {getattr(t, 'shape', type(t).__name__)}")
    if dim is not None and t.shape[1] != dim:
        raise InputError(f"{name} must have D = {dim} columns; got shape {tuple(t.shape)}")
    if values_checked() and not torch.isfinite(t).all():
        raise InputError(f"{name} contains NaN or inf values")


def _check_labels(labels, n_items: int, n_classes: int | None, what: str = "support") -> tuple[Tensor, int]:
    """Labels as a long tensor of episode classes 0..n_classes-1; every class must occur."""
    labels = torch.as_tensor(labels)
    if labels.ndim != 1 or len(labels) != n_items:
        raise InputError(f"{what} labels must have shape ({n_items},); got {tuple(labels.shape)}")
    if labels.is_floating_point() or labels.dtype == torch.bool:
        raise InputError(f"{what} labels must be integers 0..n_classes-1; got dtype {labels.dtype}")
    labels = labels.long()
    if n_items == 0:
        raise InputError(f"need at least one {what} item")
    if n_classes is not None and not values_checked():  # in a training step: the episode sampler made them
        return labels, int(n_classes)
    if labels.min() < 0:
        raise InputError(f"{what} labels must be episode classes 0..n_classes-1; got {int(labels.min())}")
    n = int(labels.max()) + 1 if n_classes is None else int(n_classes)
    if int(labels.max()) >= n:
        raise InputError(f"{what} label {int(labels.max())} is out of range for n_classes = {n}")
    counts = torch.bincount(labels, minlength=n)
    if what == "support" and (counts == 0).any():
        missing = torch.nonzero(counts == 0).flatten().tolist()
        raise InputError(f"every class needs at least one support item; classes {missing[:10]} have none")
    return labels, n


def _single_gaussian(name: str, emb: Embedding) -> tuple[Tensor, Tensor]:
    if not isinstance(emb, Embedding):
        raise InputError(f"{name} must be a hedgekit Embedding; got {type(emb).__name__}")
    if emb.n_components != 1:
        raise InputError(f"SPE needs single-Gaussian embeddings (C = 1); {name} has C = {emb.n_components}")
    return emb.mean[:, 0], emb.var[:, 0]


def _check_sampler(sampler: str, n_samples: int) -> None:
    if sampler not in SAMPLERS:
        raise InputError(f"sampler must be one of {SAMPLERS}; got {sampler!r}")
    check_count(n_samples, "n_samples")


def _chunks(n_query: int, per_query: int):
    """Slices of queries holding about ``_CHUNK_ELEMENTS`` sample values; InputError if one query alone (``per_query``
    values, e.g. n_samples x classes x D) would not fit the memory budget (`hedgekit.checks.check_memory`)."""
    check_memory(4 * per_query, f"sampling {per_query} values for one query",  # ~4 tensors of that size at once
                 "use fewer samples per query (n_samples; the paper's evaluation uses 200)")
    step = max(1, _CHUNK_ELEMENTS // max(1, per_query))
    return [slice(i, i + step) for i in range(0, n_query, step)]
