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
from hedgekit.methods.vmf import SphericalMethod, sample_vmf, vmf_log_density


def nivmf_log_density(z: Tensor, nu: Tensor, k: Tensor) -> Tensor:
    """log nivMF(z; nu, diag(k)) for unit z, nu (..., D) and axis concentrations k (..., D) > 0."""
    kz, knu = k * z, k * nu
    scale = knu.norm(dim=-1)
    return (vmf_log_density(F.normalize(kz, dim=-1), knu / scale.unsqueeze(-1), scale)
            + k.log().sum(-1) - z.shape[-1] * kz.norm(dim=-1).log())


@register
class NIVMF(SphericalMethod):
    name = "nivmf"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, **hparams):
        super().__init__(feat_dim, n_classes, embed_dim, **hparams)
        self.proxies = ClassVMFProxies(n_classes, embed_dim, self.t, scale_shape=(embed_dim,))

    def approx_elk_sim(self, samples: Tensor) -> Tensor:
        """(B, C) Monte-Carlo log expected likelihood from samples (S, B, D) of the image posteriors."""
        nu, k = self.proxies()
        log_lik = nivmf_log_density(samples[:, :, None], nu, k)  # (S, B, C)
        return torch.logsumexp(log_lik, 0) - math.log(samples.shape[0])

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        self.check_labels(out, labels)
        s = sample_vmf(out["embedding"], out["kappa"], self.n_samples)
        return F.cross_entropy(self.approx_elk_sim(s), labels)
