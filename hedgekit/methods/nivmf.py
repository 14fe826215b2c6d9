"""nivMF: non-isotropic vMF class proxies (Kirchhof et al. 2023, App. B.5, eq. 4; Kirchhof et al. 2022).

As ELK, but class c is a non-isotropic vMF with direction nu_c and one concentration
per axis, K_c = diag(k_c), k_c = t * softplus(s_c). We define it as the vMF pulled back
through the map f_c(z) = K_c z / ||K_c z|| of the sphere onto itself:
    log nivMF(z; nu_c, K_c) = log vMF(f_c(z); K_c nu_c / ||K_c nu_c||, ||K_c nu_c||)
                              + log det K_c - D log ||K_c z||,
where det K_c / ||K_c z||^D is the change-of-variables factor of f_c, so the density is
normalised on S^{D-1} and equals vMF(z; nu_c, k) when K_c = k I
(:func:`nivmf_log_density`). The expected likelihood with the image posterior
zeta = vMF(e(x), kappa(x)) has no closed form; eq. 4 estimates it with S = 16 samples
s_i ~ zeta: approx_elk_sim = log (1/S) sum_i nivMF(s_i; nu_c, K_c), and
    L = -approx_elk_sim(zeta, rho_y) + log sum_c exp(approx_elk_sim(zeta, rho_c)).
u(x) = 1 / kappa(x) (sec. 4.1).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.methods.elk import ClassVMFProxies
from hedgekit.methods.upstream import register
from hedgekit.methods.vmf import SphericalMethod, log_vmf_normalizer, sample_vmf


def nivmf_log_density(z: Tensor, nu: Tensor, k: Tensor) -> Tensor:
    """(..., C) log nivMF(z; nu_c, diag(k_c)) for unit z (..., D), unit nu (C, D) and k (C, D) > 0.

    Written with matrix products, as ||K z||^2 = z^2 . k^2 and (K z)^T (K nu) = z . (k^2 nu):
    log C_D(||K nu||) + (K z)^T (K nu) / ||K z|| + log det K - (D/2) log ||K z||^2.
    """
    k2 = k**2
    kz_sq = (z**2) @ k2.T  # (..., C)
    return (log_vmf_normalizer((k2 * nu**2).sum(-1).sqrt(), z.shape[-1]) + (z @ (k2 * nu).T) / kz_sq.sqrt()
            + k.log().sum(-1) - z.shape[-1] / 2 * kz_sq.log())


@register
class NIVMF(SphericalMethod):
    name = "nivmf"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, **hparams):
        super().__init__(feat_dim, n_classes, embed_dim, **hparams)
        self.proxies = ClassVMFProxies(n_classes, embed_dim, self.t, scale_shape=(embed_dim,))

    def approx_elk_sim(self, samples: Tensor) -> Tensor:
        """(B, C) Monte-Carlo log expected likelihood from samples (S, B, D) of the image posteriors."""
        nu, k = self.proxies()
        log_lik = nivmf_log_density(samples, nu, k)  # (S, B, C)
        return torch.logsumexp(log_lik, 0) - math.log(samples.shape[0])

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        """Adds ``logits`` = log nivMF(e(x); nu_c, K_c), the kappa -> infinity limit of eq. 4's kernel
        (deterministic, for upstream class predictions; training uses the sampled kernel)."""
        out = super().forward(features)
        out["logits"] = nivmf_log_density(out["embedding"], *self.proxies())
        return out

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        s = sample_vmf(out["embedding"], out["kappa"], self.n_samples)
        return F.cross_entropy(self.approx_elk_sim(s), labels)
