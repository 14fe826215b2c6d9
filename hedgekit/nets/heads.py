"""Embedding heads: map body features to an :class:`~hedgekit.embedding.Embedding`.

* `PointHead`: one linear layer to R^D (contrastive / Prototypical Networks).
* `GaussianHead`: C linear branches, one per mixture component, each with 2D
  outputs (mean, variance) on the shared body (HIB sec. 2.2 "one linear layer per
  branch"; C = 1 is MoG-1, also the SPE support embedding of SPE App. A.3).
* `HeteroscedasticHead`: d + 1 outputs, an embedding and s = log sigma^2 with variance
  exp(s) (Taha et al. 2019 eq. 11: the network regresses s; no softplus, no floor).

`GaussianHead` variances go through softplus (SPE App. B: "guaranteed non-negative by using a
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

from hedgekit.embedding import Embedding

VAR_FLOOR = 1e-6
# The variance every Gaussian component starts with, for HIB and SPE alike: the prior's scale
# (N(0, I), HIB eq. 8) and of the order of SPE's sigma_eps^2 at initialisation (App. B). The loss
# then shrinks the variances of inputs it can place precisely while ambiguous inputs keep theirs
# (docs/recipes.md: starting at 1e-2 let them collapse everywhere).
INIT_VAR = 1.0


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
            variance outputs); `INIT_VAR` by default.
    """

    def __init__(self, in_features: int, dim: int, components: int = 1, init_var: float = INIT_VAR):
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
        return Embedding.mixture(mean, F.softplus(raw) + VAR_FLOOR, stochastic=True)  # every variance >= VAR_FLOOR


class HeteroscedasticHead(nn.Module):
    """One isotropic Gaussian per input from d + 1 outputs (Taha et al. 2019, sec. 4, Figure 3).

    The first d outputs are the unnormalised embedding; the last is s = log sigma^2, the input's
    heteroscedastic uncertainty (eq. 11 regresses s rather than sigma^2). The head returns
    ``Embedding.gaussian(z, exp(s))`` with the variance broadcast over the d axes and
    ``uncertainty = exp(s)``; ``log(var)`` recovers s (to rounding).

    Args:
        init_var: sigma^2 every input starts with (the bias of s is log(init_var)).
    """

    def __init__(self, in_features: int, dim: int, init_var: float = INIT_VAR):
        super().__init__()
        self.dim = dim
        self.linear = nn.Linear(in_features, dim + 1)
        nn.init.xavier_uniform_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)
        with torch.no_grad():
            self.linear.weight[dim:].mul_(0.1)
            self.linear.bias[dim:].fill_(math.log(init_var))

    def forward(self, h: Tensor) -> Embedding:
        out = self.linear(h)
        z, var = out[:, : self.dim], out[:, self.dim].exp()
        return Embedding.gaussian(z, var.unsqueeze(1), uncertainty=var)
