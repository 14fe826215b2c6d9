"""The calibrated match probability of HIB eq. 2: p(m|z1,z2) = sigmoid(-a ||z1 - z2|| + b).

a > 0 is kept positive through softplus; b is free. Both are learned with the
embedding (HIB sec. 2.3). Starting values follow public reimplementations
(a ~ 1..5, b ~ 0..5); with unit-scale embeddings a = 2, b = 2 puts the 50% point
at distance 1.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.errors import InputError


class SoftMatch(nn.Module):
    def __init__(self, a: float = 2.0, b: float = 2.0):
        super().__init__()
        if a <= 0:
            raise InputError(f"a must be > 0 (HIB eq. 2); got {a}")
        self.a_raw = nn.Parameter(torch.tensor(math.log(math.expm1(a))))
        self.b = nn.Parameter(torch.tensor(float(b)))

    @property
    def a(self) -> Tensor:
        return F.softplus(self.a_raw).clamp_min(1e-6)  # floor: softplus underflows to 0 for a_raw < -104

    def logit(self, distance: Tensor) -> Tensor:
        """-a d + b for Euclidean distances d (any shape)."""
        return -self.a * distance + self.b

    def forward(self, distance: Tensor) -> Tensor:
        """p(m | z1, z2) for Euclidean distances d = ||z1 - z2||."""
        return torch.sigmoid(self.logit(distance))
