"""Prototypical Networks (Snell et al. 2017, eq. 1-2):

    c_k = 1/|S_k| sum_{(x_i, y_i) in S_k} f(x_i)                                    (eq. 1)
    p(y = k | x) = exp(-d(f(x), c_k)) / sum_k' exp(-d(f(x), c_k')),  d = ||.||^2     (eq. 2)

``scale`` multiplies d (1 in the paper); SPE's posterior tends to a PN with ``scale = 1 / (2 s^2)`` when every
variance vanishes (`hedgekit.methods.spe`, statement under its eq. 7; ``tests/methods/test_spe.py`` checks it).
The episode conventions shared with SPE live here too: embeddings are (N, D) matrices, labels are episode
classes 0..n_classes-1 and every class has a support item (`check_matrix`, `check_labels`).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.checks import values_checked
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError


def pn_prototypes(z: Tensor, labels, n_classes: int | None = None) -> Tensor:
    """Eq. 1: (n_classes, D) c_k, the mean of each class's support embeddings z (N, D)."""
    check_matrix("support embeddings", z)
    labels, n = check_labels(labels, len(z), n_classes)
    sums = z.new_zeros(n, z.shape[1]).index_add(0, labels.to(z.device), z)
    counts = torch.bincount(labels, minlength=n).to(z)
    return sums / counts.unsqueeze(1)


def squared_distances(a: Tensor, b: Tensor) -> Tensor:
    """(N, M) d(a_n, b_m) = ||a_n - b_m||^2, computed by differences (exact for tiny distances)."""
    return ((a.unsqueeze(1) - b.unsqueeze(0)) ** 2).sum(-1)


def pn_log_posterior(query_z: Tensor, prototypes: Tensor, scale: float | Tensor = 1.0) -> Tensor:
    """Eq. 2: (Q, C) log p(y = k | x) = log_softmax_k(-scale * ||f(x) - c_k||^2)."""
    check_matrix("query embeddings", query_z)
    check_matrix("prototypes", prototypes, query_z.shape[1])
    return F.log_softmax(-scale * squared_distances(query_z, prototypes), dim=-1)


class PN(nn.Module):
    """Prototypical Network head (Snell et al. 2017): no parameters, deterministic.

    Uses the embedding means (``Embedding.mixture_mean``), so it also works on Gaussian embeddings.
    """

    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale

    def log_posterior(self, query: Embedding, support: Embedding, support_labels,
                      n_classes: int | None = None) -> Tensor:
        """(Q, C) log p(y | query) of eq. 2 with the prototypes of eq. 1 from the support set."""
        protos = pn_prototypes(support.mixture_mean(), support_labels, n_classes)
        return pn_log_posterior(query.mixture_mean(), protos, self.scale)

    forward = log_posterior

    def loss(self, query: Embedding, query_labels, support: Embedding, support_labels,
             n_classes: int | None = None) -> Tensor:
        """Mean cross-entropy -log p(y_true | query) of the query classes."""
        log_p = self.log_posterior(query, support, support_labels, n_classes)
        y, _ = check_labels(query_labels, len(query), log_p.shape[1], "query")
        return F.nll_loss(log_p, y.to(log_p.device))


def check_matrix(name: str, t: Tensor, dim: int | None = None) -> None:
    """InputError unless ``t`` is a finite 2-D tensor (N, D), with D = ``dim`` when given."""
    if not isinstance(t, Tensor) or t.ndim != 2:
        raise InputError(f"{name} must be a 2-D tensor (N, D); got {getattr(t, 'shape', type(t).__name__)}")
    if dim is not None and t.shape[1] != dim:
        raise InputError(f"{name} must have D = {dim} columns; got shape {tuple(t.shape)}")
    if values_checked() and not torch.isfinite(t).all():
        raise InputError(f"{name} contains NaN or inf values")


def check_labels(labels, n_items: int, n_classes: int | None, what: str = "support") -> tuple[Tensor, int]:
    """(labels as a long tensor, n_classes): episode classes 0..n_classes-1; every class must have support."""
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
