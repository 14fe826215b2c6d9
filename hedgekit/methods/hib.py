"""The HIB training objective (Oh et al. 2019, eq. 8): soft-contrastive NLL of the
Monte-Carlo match probability (eq. 5) plus beta times the KL to N(0, I),

    L = -log p(m | x1, x2) + beta * (KL(p(z1|x1) || N(0, I)) + KL(p(z2|x2) || N(0, I)))   (m: match or not),
    p(m | x1, x2) ~= 1/K^2 sum_{k1, k2} sigmoid(-a ||z1^(k1) - z2^(k2)|| + b),  z^(k) ~ p(z|x)   (eq. 5).

Two ways to form pairs, one loss:

* `hib_pair_loss`: explicit pairs (x1, x2) — the paper's two-stream batches.
* `hib_batch_loss`: every pair inside a class-balanced batch of P classes x Q
  images (our default recipe: B(B-1)/2 pairs from B forward passes).
  Positive and negative pairs are averaged separately and weighted 1:1 (the
  paper's two streams aim for the same balance); documented choice. The pair
  NLLs come from `hedgekit.methods.all_pairs.all_pairs_nll` (upper triangle only).

For point embeddings (zero variance) the samples are the mean itself, so K = 1 is
used and the loss is exactly the soft contrastive loss of eq. 3.

The functions compute the equations and nothing else: their inputs are checked where they enter the kit (issue 47
item 3): the embeddings by `hedgekit.embedding.Embedding` (and K by `Embedding.sample`), the batch, K, beta and the
memory the K x K sample pairs take by `hedgekit.training.fit.TrainConfig` (`check_pair_memory`), the labels by
`hedgekit.training.fit.fit` and the class-balanced sampler.
"""
from __future__ import annotations

import torch
from torch import Tensor

from hedgekit.checks import check_memory, check_number, values_checked
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.nets.match import SoftMatch
from hedgekit.methods.all_pairs import all_pairs_nll
from hedgekit.methods.contrastive import log_match

# The KL weight beta of eq. 8 as the paper sets it (sec. 4.1; App. E sweeps 1e-6..1e-2): the one default of every
# entry point (the CLI's --beta, `hedgekit.zoo.specs.HIBSpec`, `hedgekit.training.fit.TrainConfig`, the app).
BETA = 1e-4
# The largest KL weight a spec or config takes: at 1e6 the match term (order 1) is still above float32's resolution
# (1.2e-7) of beta x KL; beyond it the KL term drowns it and, at beta > 3.4e38 (float32's largest number), is
# infinite from the first step (issue 45 item 8).
MAX_BETA = 1e6


def check_beta(beta, name: str) -> float:
    """``beta`` as a float if it is a KL weight of eq. 8: a finite number in [0, `MAX_BETA`]; else an `InputError`
    naming ``name``. The one rule, checked where a weight enters (`hedgekit.zoo.specs.HIBSpec`,
    `hedgekit.training.fit.TrainConfig`), not inside the loss."""
    check_number(beta, name, 0.0)
    if beta > MAX_BETA:
        raise InputError(f"{name}, the KL weight of HIB eq. 8, must be <= {MAX_BETA:g}; got {beta:g}. The paper uses "
                         f"{BETA:g} (App. E: 1e-6..1e-2); a larger weight drowns the match term and can overflow the "
                         "loss")
    return float(beta)


def hib_pair_loss(
    e1: Embedding, e2: Embedding, same: Tensor, match: SoftMatch,
    k: int = 8, beta: float = BETA, generator: torch.Generator | None = None,
) -> Tensor:
    """Eq. 8 on explicit pairs: mean NLL of m_hat under eq. 5 + beta * (KL(x1) + KL(x2)); ``same`` (B,) says which
    of the B pairs (e1[i], e2[i]) match."""
    s1, s2 = _samples(e1, k, generator), _samples(e2, k, generator)  # (B, K, D)
    d = torch.cdist(s1, s2)  # (B, K1, K2)
    log_p, log_q = log_match(d, match, (-2, -1))
    nll = -torch.where(same.bool(), log_p, log_q).mean()
    return nll + _kl_term(e1, beta) + _kl_term(e2, beta)


def hib_batch_loss(
    emb: Embedding, labels: Tensor, match: SoftMatch,
    k: int = 8, beta: float = BETA, generator: torch.Generator | None = None,
) -> tuple[Tensor, dict]:
    """Eq. 8 over all B(B-1)/2 pairs of a batch; returns (loss, stats).

    The KL term is counted once per image with weight 2 * beta, matching eq. 8
    where every pair contributes the KL of both of its members.
    """
    s = _samples(emb, k, generator)  # (B, K, D)
    nll = all_pairs_nll(s, match.a, match.b, labels[:, None] == labels[None, :])  # upper triangle only
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


# Pair-matrix-sized tensors alive at once, at most: d, the logits, their two sigmoids and the negated logits in
# `log_match` (pair loss); the all-pairs loss (`all_pairs_nll`) keeps fewer (d and one sigmoid, upper triangle).
_PAIR_COPIES = 5


def check_pair_memory(images: int, k: int, all_pairs: bool = True) -> None:
    """InputError, before anything is allocated, if the HIB loss's sample-pair distances do not fit the memory
    budget (`hedgekit.checks.check_memory`): (BK)^2 for all pairs of a batch of ``images`` = B (`hib_batch_loss`),
    B K^2 for B explicit pairs (`hib_pair_loss`). Checked where a batch size and K are set
    (`hedgekit.training.fit.TrainConfig`); K counts as if every embedding were stochastic (a point embedding is its
    own single sample, but a config does not know its model)."""
    pairs = (images * k) ** 2 if all_pairs else images * k * k
    check_memory(_PAIR_COPIES * pairs, f"the HIB loss with K={k} on a batch of {images}",
                 "use a smaller K (the paper uses K = 8) or a smaller batch")


def _samples(emb: Embedding, k: int, generator: torch.Generator | None) -> Tensor:
    """(B, K, D) samples; a single point component is its own (only) sample, so K = 1."""
    if emb.n_components == 1 and emb.is_point:
        return emb.mean
    return emb.sample(k, generator)


def _kl_term(emb: Embedding, beta: float) -> Tensor:
    if beta == 0 or emb.is_point:
        return emb.mean.new_zeros(())
    return beta * kl_to_standard_normal(emb).mean()
