"""Embedding heads: map body features to an :class:`~hedgekit.distributions.Embedding`.

* `PointHead`: one linear layer to R^D (contrastive / Prototypical Networks).
* `GaussianHead`: C linear branches, one per mixture component, each with 2D
  outputs (mean, variance) on the shared body (HIB sec. 2.2 "one linear layer per
  branch"; C = 1 is MoG-1, also the SPE support embedding of SPE App. A.3).

Variances go through softplus (SPE App. B: "guaranteed non-negative by using a
softplus transfer function") plus a floor of 1e-6 so log-variances stay finite. All
code that needs log sigma^2 takes ``log(var)`` of this one variance: a single
parametrisation, so sampling and the KL term can never disagree (design note on a
known bug elsewhere).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..distributions import Embedding

VAR_FLOOR = 1e-6


class PointHead(nn.Module):
    def __init__(self, in_features: int, dim: int):
        super().__init__()
        self.linear = nn.Linear(in_features, dim)
        nn.init.xavier_uniform_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, h: Tensor) -> Embedding:
        return Embedding.point(self.linear(h))


class GaussianHead(nn.Module):
    """C diagonal Gaussians per input (C = 1: single Gaussian).

    Args:
        init_var: variance every component starts with (via the bias of the
            variance outputs). A small but non-negligible start (1e-2 with means of
            order 1) lets the loss grow variances where inputs are ambiguous instead
            of having to climb out of a collapsed state.
    """

    def __init__(self, in_features: int, dim: int, components: int = 1, init_var: float = 1e-2):
        super().__init__()
        self.dim, self.components = dim, components
        self.branches = nn.ModuleList(nn.Linear(in_features, 2 * dim) for _ in range(components))
        raw = math.log(math.expm1(init_var))  # softplus^{-1}(init_var)
        for lin in self.branches:
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)
            with torch.no_grad():
                lin.weight[dim:].mul_(0.1)
                lin.bias[dim:].fill_(raw)

    def forward(self, h: Tensor) -> Embedding:
        out = torch.stack([b(h) for b in self.branches], dim=1)  # (B, C, 2D)
        mean, raw = out[..., : self.dim], out[..., self.dim :]
        return Embedding.mixture(mean, F.softplus(raw) + VAR_FLOOR)
