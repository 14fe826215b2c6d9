"""The HIB training objective (Oh et al. 2019): the NLL of the Monte-Carlo match probability plus beta times the KL
of each embedding to N(0, I), for a pair (x1, x2) with match label m_hat,

    p(m | x1, x2) ~= 1/K^2 sum_{k1, k2} sigmoid(-a ||z1^(k1) - z2^(k2)|| + b),   z^(k) ~ p(z|x)             (eq. 5)
    L = -log p(m = m_hat | x1, x2) + beta * (KL(p(z1|x1) || N(0, I)) + KL(p(z2|x2) || N(0, I)))        (eq. 8)

* `log_match_probability`: eq. 5, the log of the *mean* over the K x K sample pairs (not the mean of the logs).
* `hib_pair_loss`: eq. 8 on explicit pairs, the paper's two-stream batches.
* `hib_batch_loss`: eq. 8 over all B(B-1)/2 pairs of a class-balanced batch (our default recipe), matching and
  non-matching pairs averaged apart and weighted 1:1 (the balance the paper's two streams aim for). Their NLLs come
  from `hedgekit.methods.all_pairs.all_pairs_nll`, the fast form of `all_pairs_mean_nll` (upper triangle only).

A point embedding (zero variance) is its own single sample, K = 1: eq. 8 is then the soft contrastive loss of eq. 3.
Inputs are checked where they enter the kit: the embeddings by `hedgekit.embedding.Embedding` (K by
`Embedding.sample`), K, beta (`check_beta`) and the memory of the sample pairs (`check_pair_memory`, from
`hedgekit.methods.fast.hib`) by `hedgekit.training.fit.TrainConfig`, the labels by `hedgekit.training.fit.fit`.
"""
from __future__ import annotations

import torch
from torch import Tensor

from hedgekit.checks import check_number, values_checked
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.all_pairs import all_pairs_nll
from hedgekit.methods.contrastive import log_match
from hedgekit.methods.fast.hib import check_pair_memory
from hedgekit.nets.match import SoftMatch

__all__ = ["BETA", "MAX_BETA", "all_pairs_mean_nll", "check_beta", "check_pair_memory", "hib_batch_loss",
           "hib_pair_loss", "kl_to_standard_normal", "log_match_probability"]

# The KL weight beta of eq. 8 as the paper sets it (sec. 4.1; App. E sweeps 1e-6..1e-2): the one default of every
# entry point (the CLI's --beta, `hedgekit.zoo.specs.HIBSpec`, `hedgekit.training.fit.TrainConfig`, the app).
BETA = 1e-4
# The largest KL weight a spec or config takes: at 1e6 the match term (order 1) is still above float32's resolution
# (1.2e-7) of beta x KL; beyond it the KL term drowns it, and at beta > 3.4e38 (float32's largest) it is infinite.
MAX_BETA = 1e6


def check_beta(beta, name: str) -> float:
    """``beta`` as a float if it is a KL weight of eq. 8, a finite number in [0, `MAX_BETA`]; else an `InputError`
    naming ``name``. Checked where a weight enters (`hedgekit.zoo.specs.HIBSpec`, `hedgekit.training.fit`)."""
    check_number(beta, name, 0.0)
    if beta > MAX_BETA:
        raise InputError(f"{name}, the KL weight of HIB eq. 8, must be <= {MAX_BETA:g}; got {beta:g}. The paper uses "
                         f"{BETA:g} (App. E: 1e-6..1e-2); a larger weight drowns the match term and can overflow the "
                         "loss")
    return float(beta)


def log_match_probability(s1: Tensor, s2: Tensor, match: SoftMatch) -> tuple[Tensor, Tensor]:
    """Eq. 5: log p(m | x1, x2) and log(1 - p(m | x1, x2)) from the samples s1 (..., K1, D) of x1 and s2 (..., K2, D)
    of x2 (leading axes broadcast), p the mean of eq. 2's sigmoid(-a d + b) over the K1 x K2 distances d
    (`hedgekit.methods.contrastive.log_match`: 1 - p is averaged directly, so it keeps its precision near p = 1)."""
    return log_match(torch.cdist(s1, s2), match, (-2, -1))


def all_pairs_mean_nll(samples: Tensor, match: SoftMatch, same: Tensor) -> Tensor:
    """(2,) [mean -log p over the matching pairs i < j, mean -log(1 - p) over the others] of a batch's samples
    (B, K, D), by eq. 5 on every pair of inputs; ``same`` (B, B) bool. The plain form of
    `hedgekit.methods.all_pairs.all_pairs_nll`, which `hib_batch_loss` uses."""
    log_p, log_q = log_match_probability(samples.unsqueeze(1), samples.unsqueeze(0), match)  # (B, B)
    upper = torch.ones_like(same).triu(1)
    return torch.stack([-log_p[upper & same].mean(), -log_q[upper & ~same].mean()])


def hib_pair_loss(
    e1: Embedding, e2: Embedding, same: Tensor, match: SoftMatch,
    k: int = 8, beta: float = BETA, generator: torch.Generator | None = None,
) -> Tensor:
    """Eq. 8 on explicit pairs: the mean NLL of m_hat under eq. 5 + beta * (KL(x1) + KL(x2)); ``same`` (B,) says which
    of the B pairs (e1[i], e2[i]) match."""
    log_p, log_q = log_match_probability(_samples(e1, k, generator), _samples(e2, k, generator), match)  # (B,)
    nll = -torch.where(same.bool(), log_p, log_q).mean()
    return nll + _kl_term(e1, beta) + _kl_term(e2, beta)


def hib_batch_loss(
    emb: Embedding, labels: Tensor, match: SoftMatch,
    k: int = 8, beta: float = BETA, generator: torch.Generator | None = None,
) -> tuple[Tensor, dict]:
    """Eq. 8 over all B(B-1)/2 pairs of a batch; returns (loss, stats). Each image's KL counts once with weight
    2 beta, as in eq. 8, where every pair brings the KL of both its members."""
    nll = all_pairs_nll(_samples(emb, k, generator), match.a, match.b, labels[:, None] == labels[None, :])
    pos, neg = nll[0], nll[1]
    loss = 0.5 * (pos + neg) + _kl_term(emb, 2 * beta)
    stats = {"nll_pos": pos.detach(), "nll_neg": neg.detach()}  # 0-d tensors: read at log steps only (`optimise`)
    return loss, stats


def kl_to_standard_normal(emb: Embedding) -> Tensor:
    """(B,) KL(p(z|x) || N(0, I)) = 0.5 * sum(v + mu^2 - 1 - log v) per component.

    For mixtures (no closed form) this returns sum_c w_c KL(N_c || N(0, I)), an
    upper bound on the mixture's KL by convexity; exact for C = 1.
    """
    v, mu = emb.var, emb.mean
    if _has_zero_variance(emb):
        raise InputError("the KL term needs strictly positive variances (point embeddings have none)")
    kl_c = 0.5 * (v + mu**2 - 1.0 - v.log()).sum(-1)  # (B, C)
    return (emb.weights * kl_c).sum(-1)


def _has_zero_variance(emb: Embedding) -> bool:
    """Whether some variance is <= 0: told by ``emb.stochastic`` when its maker knew (False: a point embedding),
    else read from the values, except inside `hedgekit.checks.deferred_value_checks` (then assumed not)."""
    if emb.stochastic is not None:
        return not emb.stochastic
    return values_checked() and bool((emb.var <= 0).any())


def _samples(emb: Embedding, k: int, generator: torch.Generator | None) -> Tensor:
    """(B, K, D) samples; a single point component is its own (only) sample, so K = 1."""
    if emb.n_components == 1 and emb.is_point:
        return emb.mean
    return emb.sample(k, generator)


def _kl_term(emb: Embedding, beta: float) -> Tensor:
    if beta == 0 or emb.is_point:
        return emb.mean.new_zeros(())
    return beta * kl_to_standard_normal(emb).mean()
