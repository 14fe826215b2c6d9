"""ELK: expected-likelihood-kernel proxy loss (Kirchhof et al. 2023, sec. 4.1, App. B.4, eq. 3).

Each image is a posterior zeta = vMF(e(x), kappa(x)) (e on the unit sphere, kappa from
an MLP); each class c is a learned vMF rho_c = vMF(nu_c, lam_c) with
lam_c = t * softplus(s_c) (t scales the class concentrations, App. B.4; s_c starts at
softplus(s_c) = 1). The ProxyNCA-style loss of eq. 3 is a softmax over classes of
    elk_sim(zeta, rho_c) = log int zeta(z) rho_c(z) dz
(:func:`hedgekit.methods.vmf.log_expected_likelihood`, analytic, no sampling):
    L = -elk_sim(zeta, rho_y) + log sum_c exp(elk_sim(zeta, rho_c)).
u(x) = 1 / kappa(x) (sec. 4.1).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.methods.upstream import inverse_softplus, register
from hedgekit.methods.vmf import SphericalMethod, log_expected_likelihood


class ClassVMFProxies(nn.Module):
    """C learned class directions nu_c and concentrations t * softplus(s_c), of shape ``(C, *scale_shape)``."""

    def __init__(self, n_classes: int, dim: int, t: float, scale_shape: tuple[int, ...] = ()):
        super().__init__()
        self.t = t
        self.directions = nn.Parameter(F.normalize(torch.randn(n_classes, dim), dim=-1))
        self.scale_raw = nn.Parameter(torch.full((n_classes, *scale_shape), inverse_softplus(1.0)))

    def forward(self) -> tuple[Tensor, Tensor]:
        return F.normalize(self.directions, dim=-1), self.t * F.softplus(self.scale_raw) + 1e-4


@register
class ELK(SphericalMethod):
    name = "elk"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, **hparams):
        super().__init__(feat_dim, n_classes, embed_dim, **hparams)
        self.proxies = ClassVMFProxies(n_classes, embed_dim, self.t)

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        out = super().forward(features)
        nu, lam = self.proxies()
        cos = out["embedding"] @ nu.T  # (B, C)
        out["logits"] = log_expected_likelihood(cos, out["kappa"][:, None], lam, self.embed_dim)
        return out

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        return F.cross_entropy(out["logits"], labels)
