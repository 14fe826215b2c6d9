"""Prototypical Networks (Snell et al. 2017, eq. 1-2):

    c_k = 1/|S_k| sum_{(x_i, y_i) in S_k} f(x_i)                                    (eq. 1)
    p(y = k | x) = exp(-d(f(x), c_k)) / sum_k' exp(-d(f(x), c_k')),  d = ||.||^2     (eq. 2)

``scale`` multiplies d (1 in the paper); SPE's posterior tends to a PN with ``scale = 1 / (2 s^2)`` when every
variance vanishes (`hedgekit.methods.spe`, statement under its eq. 7; ``tests/methods/test_spe.py`` checks it).

`pn_prototypes` and `pn_log_posterior` compute eq. 1 and 2 on (N, D) matrices and check nothing; an episode is
checked where it enters, by the head `PN` (the embeddings by `hedgekit.embedding.Embedding`, the labels by
`hedgekit.checks.check_episode_labels`: episode classes 0..n_classes-1, every class with a support item).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.checks import check_episode_labels
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError


def pn_prototypes(z: Tensor, labels, n_classes: int | None = None) -> Tensor:
    """Eq. 1: (n_classes, D) c_k, the mean of each class's support embeddings z (N, D); ``labels`` (N,) are episode
    classes 0..n_classes-1 (n_classes None: one more than the largest label)."""
    labels = torch.as_tensor(labels).long()
    n = int(labels.max()) + 1 if n_classes is None else int(n_classes)
    sums = z.new_zeros(n, z.shape[1]).index_add(0, labels.to(z.device), z)
    counts = torch.bincount(labels, minlength=n).to(z)
    return sums / counts.unsqueeze(1)


def squared_distances(a: Tensor, b: Tensor) -> Tensor:
    """(N, M) d(a_n, b_m) = ||a_n - b_m||^2, computed by differences (exact for tiny distances)."""
    return ((a.unsqueeze(1) - b.unsqueeze(0)) ** 2).sum(-1)


def pn_log_posterior(query_z: Tensor, prototypes: Tensor, scale: float | Tensor = 1.0) -> Tensor:
    """Eq. 2: (Q, C) log p(y = k | x) = log_softmax_k(-scale * ||f(x) - c_k||^2)."""
    return F.log_softmax(-scale * squared_distances(query_z, prototypes), dim=-1)


class PN(nn.Module):
    """Prototypical Network head (Snell et al. 2017): no parameters, deterministic.

    Uses the embedding means (``Embedding.mixture_mean``), so it also works on Gaussian embeddings. The entry point
    of an episode: its labels are checked here (`hedgekit.checks.check_episode_labels`), and that query and support
    embeddings have one dimension D.
    """

    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale

    def log_posterior(self, query: Embedding, support: Embedding, support_labels,
                      n_classes: int | None = None) -> Tensor:
        """(Q, C) log p(y | query) of eq. 2 with the prototypes of eq. 1 from the support set."""
        if query.dim != support.dim:
            raise InputError(f"query and support embeddings must have one dimension D; got {query.dim} and "
                             f"{support.dim}")
        labels, n = check_episode_labels(support_labels, len(support), n_classes)
        protos = pn_prototypes(support.mixture_mean(), labels, n)
        return pn_log_posterior(query.mixture_mean(), protos, self.scale)

    forward = log_posterior

    def loss(self, query: Embedding, query_labels, support: Embedding, support_labels,
             n_classes: int | None = None) -> Tensor:
        """Mean cross-entropy -log p(y_true | query) of the query classes."""
        log_p = self.log_posterior(query, support, support_labels, n_classes)
        y, _ = check_episode_labels(query_labels, len(query), log_p.shape[1], "query")
        return F.nll_loss(log_p, y.to(log_p.device))

