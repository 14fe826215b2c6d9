"""SPE as the kit runs it: the fast forms of the samplers of `hedgekit.methods.spe` and the head `SPE` that uses them.

* `log_posterior_naive` is the fast form of `hedgekit.methods.spe.naive_sampler` and `log_posterior_intersection` of
  `hedgekit.methods.spe.intersection_sampler`: from the same noise they give the same estimates, to float rounding
  (tests/methods/fast/test_spe.py). They exist because evaluation draws 200 samples per query for every class:
  eq. 6 for many samples per query comes from one batched matmul (`gaussian_log_density_around`, ~5x faster than
  the (Q, S, C, D) differences of `hedgekit.methods.spe.gaussian_log_density`), the naive mean is taken in
  probability space (`log_mean_softmax`, ~2x faster) and the queries go in chunks of bounded memory
  (`query_chunks`, which refuses one query that alone would not fit). Each chunk draws its own noise, so with more
  than one chunk the plain form matches when called chunk by chunk.
* `SPE`: the head, App. B's learned sigma_eps^2 = softplus(gamma) with the paper's samplers (training: intersection,
  1 sample; evaluation: naive, 200). The entry point of an episode: it checks the embeddings (`Embedding`, their
  dimension and C = 1), the labels (`hedgekit.checks.check_episode_labels`) and the sampler (`check_sampler`).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.checks import check_count, check_episode_labels, check_memory
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.spe import LOG_2PI, _randn, _single_gaussian, intersection_terms, spe_prototypes

__all__ = ["CHUNK_ELEMENTS", "SAMPLERS", "SPE", "check_sampler", "gamma_init", "gaussian_log_density_around",
           "log_mean_softmax", "log_posterior_intersection", "log_posterior_naive", "query_chunks"]

SAMPLERS = ("naive", "intersection")
CHUNK_ELEMENTS = 4_000_000  # sample values per chunk of queries (`query_chunks`)
_TINY = 1e-30  # probabilities below this are recomputed in log space (float32 underflows near 1e-38)


def log_posterior_naive(
    query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor,
    n_samples: int = 200, generator: torch.Generator | None = None,
) -> Tensor:
    """(Q, C) log p(y | x, S) by the naive sampler (sec. 3.2.1): the fast form of
    `hedgekit.methods.spe.naive_sampler`, with the same arguments."""
    q, d = query_mean.shape
    out = []
    for sl in query_chunks(q, n_samples * len(class_mean) * d):
        eps = _randn((len(query_mean[sl]), n_samples, d), query_mean, generator)
        offsets = query_var[sl].sqrt().unsqueeze(1) * eps  # z_s - mu_x, (q, S, D)
        log_lik = gaussian_log_density_around(query_mean[sl], offsets, class_mean, class_var)  # (q, S, C), eq. 6
        out.append(log_mean_softmax(log_lik))
    return torch.cat(out)


def log_posterior_intersection(
    query_mean: Tensor, query_var: Tensor, class_mean: Tensor, class_var: Tensor,
    n_samples: int = 1, generator: torch.Generator | None = None, targets=None,
) -> Tensor:
    """log p(y | x, S) by the intersection sampler (eq. 8-9): the fast form of
    `hedgekit.methods.spe.intersection_sampler` (see there for ``targets`` and the estimator's heavy tails)."""
    q, d = query_mean.shape
    n_y = len(class_mean) if targets is None else 1
    if targets is not None:
        targets = torch.as_tensor(targets, device=query_mean.device).long()
    out = []
    for sl in query_chunks(q, n_samples * len(class_mean) * d * n_y):
        m_x, log_first, mu_xy, var_xy = intersection_terms(query_mean[sl], query_var[sl], class_mean, class_var,
                                                           None if targets is None else targets[sl])
        eps = _randn((*mu_xy.shape[:2], n_samples, d), query_mean, generator)
        offsets = (mu_xy - m_x).unsqueeze(2) + var_xy.sqrt().unsqueeze(2) * eps  # z - mu_x, (q, Y, S, D)
        log_dens = gaussian_log_density_around(query_mean[sl], offsets.flatten(1, 2), class_mean, class_var)
        log_norm = torch.logsumexp(log_dens, dim=-1).view(*mu_xy.shape[:2], n_samples)  # (q, Y, S)
        log_p = log_first + (torch.logsumexp(-log_norm, dim=-1) - math.log(n_samples))
        out.append(log_p if targets is None else log_p[:, 0])
    return torch.cat(out)


def gaussian_log_density_around(center: Tensor, offsets: Tensor, mean: Tensor, var: Tensor) -> Tensor:
    """`hedgekit.methods.spe.gaussian_log_density` (center_q + offsets_qn, mean, var), (Q, N, C), for many samples
    per query: center (Q, D), offsets (Q, N, D).

    Expands the square around each query's centre,
    sum_d (u - m)^2 / v = sum_d u^2 / v - 2 sum_d u m / v + sum_d m^2 / v   (u = offset, m = mu_c - center),
    so the result comes from one batched matmul instead of (Q, N, C, D) temporaries. The m^2 / v term is computed
    from differences, so the result is exact for zero offsets (point queries); float32 rounding is ~1e-7 of the
    largest term, negligible unless samples lie hundreds of class standard deviations away.
    """
    prec = var.reciprocal()  # (C, D)
    rel = mean.unsqueeze(0) - center.unsqueeze(1)  # (Q, C, D)
    const = -0.5 * ((rel**2 * prec).sum(-1) + (torch.log(var) + LOG_2PI).sum(-1))  # (Q, C)
    feats = torch.cat([offsets**2, offsets], dim=-1)  # (Q, N, 2D)
    weights = torch.cat([-0.5 * prec.expand_as(rel), rel * prec], dim=-1).transpose(1, 2)  # (Q, 2D, C)
    return torch.baddbmm(const.unsqueeze(1), feats, weights)  # const + feats @ weights


def log_mean_softmax(log_lik: Tensor) -> Tensor:
    """(q, C) log 1/S sum_s softmax_c(log_lik[:, s]) of log_lik (q, S, C): the fast form of the naive sampler's
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
