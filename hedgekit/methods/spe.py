"""Stochastic Prototype Embeddings (Scott et al. 2019, sec. 3). With sigma_hat_i^2 = sigma_i^2 + sigma_eps^2:

    p(z | x) = N(z; mu_x, diag sigma_x^2)                                                     (eq. 1)
    sigma_y^2 = ( sum_i sigma_hat_i^-2 )^-1,   mu_y = sigma_y^2 sum_i sigma_hat_i^-2 mu_i        (eq. 4-5)
    p(y | z, S) ∝ N(z; mu_y, sigma_hat_y^2),   sigma_hat_y^2 = sigma_y^2 + sigma_eps^2           (eq. 6)
    p(y | x, S) = E_{z ~ N(mu_x, sigma_x^2)} [ N(z; mu_y, sigma_hat_y^2) / sum_c N(z; mu_c, sigma_hat_c^2) ]  (eq. 7)

Eq. 3 makes every instance a noisy copy of its class prototype, rho_y = z_i + eps, eps ~ N(0, sigma_eps^2 I); the
prototype is then the normalised product of the support Gaussians (a confidence-weighted average: noisy support
counts less). Eq. 7 is estimated by one of two samplers (the query's own variance gets no sigma_eps^2):

* naive (sec. 3.2.1): p(y | x, S) ~= 1/S sum_s softmax_y log N(z_s; mu_y, sigma_hat_y^2),  z_s ~ N(mu_x, sigma_x^2);
* intersection (eq. 8-9): with sigma_xy^2 = (sigma_x^-2 + sigma_hat_y^-2)^-1, mu_xy = sigma_xy^2 (sigma_x^-2 mu_x +
  sigma_hat_y^-2 mu_y),  p(y | x, S) = N(mu_x; mu_y, sigma_x^2 + sigma_hat_y^2) E_{z ~ N(mu_xy, sigma_xy^2)}
  [ 1 / sum_c N(z; mu_c, sigma_hat_c^2) ], one set of samples per class y (only the target class for the loss).

PN as a limit (statement under eq. 7): if sigma_x^2 -> 0 and every class has sigma_hat_y^2 = s^2 I, eq. 7 is
softmax_y(-||mu_x - mu_y||^2 / (2 s^2)), the PN posterior (`hedgekit.methods.pn`) with ``scale = 1 / (2 s^2)``; if all
support variances are equal too, mu_y is the support mean, the PN prototype (``tests/methods/test_spe.py``).

Each function returns log-probabilities (n_query, n_classes). Naive rows sum to one exactly; intersection rows
only in expectation (exactly when sigma_x^2 = 0). The speed tricks sit in helpers beside the plain forms, each
tested against its plain form: `gaussian_log_density_around` (matmul form of `gaussian_log_density`),
`log_mean_softmax` (probability space, with a log-space fallback on underflow) and `query_chunks` (memory).

The functions compute the equations and check nothing; an episode is checked where it enters, by the head `SPE`
(the embeddings by `hedgekit.embedding.Embedding`, their dimension and C = 1, the labels by
`hedgekit.checks.check_episode_labels`, the sampler by `check_sampler`; issue 47 item 3).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.checks import check_count, check_episode_labels, check_memory
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError

SAMPLERS = ("naive", "intersection")
LOG_2PI = math.log(2 * math.pi)
CHUNK_ELEMENTS = 4_000_000  # sample values per chunk of queries (`query_chunks`)
_TINY = 1e-30  # probabilities below this are recomputed in log space (float32 underflows near 1e-38)


# ----------------------------------------------------------------------------------- eq. 4-6
def gaussian_product(mean: Tensor, var: Tensor, labels, n_classes: int | None = None) -> tuple[Tensor, Tensor]:
    """Eq. 4-5 per dimension: (mu_y, sigma_y^2), each (n_classes, D), the normalised product of the Gaussians
    N(mean_i, diag var_i) of each class: sigma_y^2 = (sum_i var_i^-1)^-1, mu_y = sigma_y^2 sum_i var_i^-1 mean_i.
    For SPE prototypes pass var_i = sigma_hat_i^2 = sigma_i^2 + sigma_eps^2 (`spe_prototypes` does), which is > 0
    since sigma_eps^2 = softplus(gamma) is; ``labels`` (N,) are episode classes 0..n_classes-1 (None: one more than
    the largest label)."""
    labels = torch.as_tensor(labels).long()
    n = int(labels.max()) + 1 if n_classes is None else int(n_classes)
    labels = labels.to(mean.device)
    prec = var.reciprocal()
    prec_sum = mean.new_zeros(n, mean.shape[1]).index_add(0, labels, prec)
    weighted = mean.new_zeros(n, mean.shape[1]).index_add(0, labels, prec * mean)
    var_y = prec_sum.reciprocal()
    return var_y * weighted, var_y


def spe_prototypes(support: Embedding, labels, sigma_eps2: Tensor | float, n_classes: int | None = None):
    """Eq. 5: (mu_y, sigma_y^2) from support Gaussians with sigma_hat_i^2 = sigma_i^2 + sigma_eps^2."""
    mean, var = _single_gaussian("support", support)
    return gaussian_product(mean, var + sigma_eps2, labels, n_classes)


def gaussian_log_density(z: Tensor, mean: Tensor, var: Tensor) -> Tensor:
    """Eq. 6's log N(z; mu_c, diag sigma_hat_c^2) of z (..., D) under every class c: (..., C); mean, var (C, D).
    Computed from differences, so it stays exact when variances are tiny (the PN limit)."""
    diff2 = (z.unsqueeze(-2) - mean) ** 2  # (..., C, D)
    return -0.5 * (diff2 / var + torch.log(var) + LOG_2PI).sum(-1)


def gaussian_log_density_around(center: Tensor, offsets: Tensor, mean: Tensor, var: Tensor) -> Tensor:
    """Speed: `gaussian_log_density` (center_q + offsets_qn, mean, var), (Q, N, C), for many samples per query.

    center (Q, D), offsets (Q, N, D). Expands the square around each query's centre,
    sum_d (u - m)^2 / v = sum_d u^2 / v - 2 sum_d u m / v + sum_d m^2 / v   (u = offset, m = mu_c - center),
    so the result comes from one batched matmul instead of (Q, N, C, D) temporaries (~5x faster). The m^2 / v
    term is computed from differences, so the result is exact for zero offsets (point queries); float32 rounding
    is ~1e-7 of the largest term, negligible unless samples lie hundreds of class standard deviations away.
    """
    prec = var.reciprocal()  # (C, D)
    rel = mean.unsqueeze(0) - center.unsqueeze(1)  # (Q, C, D)
    const = -0.5 * ((rel**2 * prec).sum(-1) + (torch.log(var) + LOG_2PI).sum(-1))  # (Q, C)
    feats = torch.cat([offsets**2, offsets], dim=-1)  # (Q, N, 2D)
    weights = torch.cat([-0.5 * prec.expand_as(rel), rel * prec], dim=-1).transpose(1, 2)  # (Q, 2D, C)
    return torch.baddbmm(const.unsqueeze(1), feats, weights)  # const + feats @ weights


# ------------------------------------------------------------------------------ eq. 7-9
def log_posterior_naive(
    query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor,
    n_samples: int = 200, generator: torch.Generator | None = None,
) -> Tensor:
    """(Q, C) log p(y | x, S) by the naive sampler (sec. 3.2.1), a Monte-Carlo estimate of eq. 7:
    z_s = mu_x + sigma_x eps_s (s = 1..S),  log p(y|x) ~= log 1/S sum_s softmax_y log N(z_s; mu_y, sigma_hat_y^2).

    Args:
        query_mean, query_var: (Q, D) query Gaussian N(mu_x, sigma_x^2) (variance may be 0).
        class_mean, class_var: (C, D) mu_y and sigma_hat_y^2 = sigma_y^2 + sigma_eps^2 (eq. 6).
    """
    q, d = query_mean.shape
    out = []
    for sl in query_chunks(q, n_samples * len(class_mean) * d):
        eps = _randn((len(query_mean[sl]), n_samples, d), query_mean, generator)
        offsets = query_var[sl].sqrt().unsqueeze(1) * eps  # z_s - mu_x, (q, S, D)
        log_lik = gaussian_log_density_around(query_mean[sl], offsets, class_mean, class_var)  # (q, S, C), eq. 6
        out.append(log_mean_softmax(log_lik))
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
    """log p(y | x, S) by the intersection sampler (eq. 8-9):

    log p(y|x) ~= log N(mu_x; mu_y, sigma_x^2 + sigma_hat_y^2) + log 1/S sum_s [ sum_c N(z_s; mu_c, sigma_hat_c^2) ]^-1
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
            target class only (all that the cross-entropy loss needs; sec. 3.2.2).
    """
    q, d = query_mean.shape
    n_cls = len(class_mean)
    if targets is not None:
        targets = torch.as_tensor(targets, device=query_mean.device).long()
    out = []
    for sl in query_chunks(q, n_samples * n_cls * d * (1 if targets is not None else n_cls)):
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
        offsets = (mu_xy - m_x).unsqueeze(2) + var_xy.sqrt().unsqueeze(2) * eps  # z - mu_x, (q, Y, S, D)
        log_dens = gaussian_log_density_around(query_mean[sl], offsets.flatten(1, 2), class_mean, class_var)
        log_norm = torch.logsumexp(log_dens, dim=-1).view(*mu_xy.shape[:2], n_samples)  # (q, Y, S)
        log_second = torch.logsumexp(-log_norm, dim=-1) - math.log(n_samples)
        res = log_first + log_second
        out.append(res[:, 0] if targets is not None else res)
    return torch.cat(out)


def log_mean_softmax(log_lik: Tensor) -> Tensor:
    """Speed: (q, C) log 1/S sum_s softmax_c(log_lik[:, s]) of log_lik (q, S, C), i.e. the plain
    logsumexp_s(log_softmax_c(log_lik)) - log S. exp/log of probabilities is ~2x faster and exact unless a class
    probability underflows; such rows are recomputed by the plain form."""
    probs = torch.softmax(log_lik, dim=-1).mean(1)  # (q, C)
    log_p = probs.clamp_min(_TINY).log()
    rows = torch.nonzero((probs < _TINY).any(1))[:, 0]
    if len(rows):
        plain = torch.logsumexp(F.log_softmax(log_lik[rows], dim=-1), dim=1) - math.log(log_lik.shape[1])
        log_p = log_p.index_put((rows,), plain)
    return log_p


def query_chunks(n_query: int, per_query: int) -> list[slice]:
    """Memory: slices of queries holding about ``CHUNK_ELEMENTS`` sample values each; InputError if one query
    alone (``per_query`` values, e.g. n_samples x classes x D) would not fit (`hedgekit.checks.check_memory`)."""
    check_memory(4 * per_query, f"sampling {per_query} values for one query",  # ~4 tensors of that size at once
                 "use fewer samples per query (n_samples; the paper's evaluation uses 200)")
    step = max(1, CHUNK_ELEMENTS // max(1, per_query))
    return [slice(i, i + step) for i in range(0, n_query, step)]


def _randn(shape, like: Tensor, generator: torch.Generator | None) -> Tensor:
    if generator is not None and generator.device != like.device:
        return torch.randn(shape, generator=generator, dtype=like.dtype).to(like.device)
    return torch.randn(shape, generator=generator, dtype=like.dtype, device=like.device)


# ---------------------------------------------------------------------------------- the head
def gamma_init(n_support: int, dim: int, gamma0: float = 0.01) -> float:
    """App. B: gamma = |S| * gamma0^(2/d), with |S| the number of support examples per training episode.

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
        check_sampler(train_sampler, train_samples)
        check_sampler(eval_sampler, eval_samples)
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
        """(mu_y, sigma_y^2), each (n_classes, D): eq. 5 with sigma_hat_i^2 = sigma_i^2 + sigma_eps^2. The entry
        point of a support set: its dimension and labels are checked here (`hedgekit.checks.check_episode_labels`)."""
        self._check_dim(support)
        labels, n = check_episode_labels(support_labels, len(support), n_classes)
        return spe_prototypes(support, labels, self.sigma_eps2, n)

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
        check_sampler(sampler, n_samples)
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
        check_sampler(sampler, n_samples)
        self._check_dim(query)
        mu_y, var_y = self.class_distributions(support, support_labels, n_classes)
        y, _ = check_episode_labels(query_labels, len(query), len(mu_y), "query")
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


def check_sampler(sampler: str, n_samples: int) -> None:
    """InputError unless ``sampler`` is one of `SAMPLERS` and ``n_samples`` an integer >= 1."""
    if sampler not in SAMPLERS:
        raise InputError(f"sampler must be one of {SAMPLERS}; got {sampler!r}")
    check_count(n_samples, "n_samples")


def _single_gaussian(name: str, emb: Embedding) -> tuple[Tensor, Tensor]:
    if not isinstance(emb, Embedding):
        raise InputError(f"{name} must be a hedgekit Embedding; got {type(emb).__name__}")
    if emb.n_components != 1:
        raise InputError(f"SPE needs single-Gaussian embeddings (C = 1); {name} has C = {emb.n_components}")
    return emb.mean[:, 0], emb.var[:, 0]
