"""The von Mises-Fisher distribution vMF(mu, kappa) on the unit sphere S^{D-1}, shared by the
URL methods that embed onto the sphere (MCInfoNCE, ELK, nivMF, HIB; Kirchhof et al. 2023, App. B.3-B.6).

* density  vMF(z; mu, kappa) = C_D(kappa) exp(kappa mu^T z),
  C_D(kappa) = kappa^{D/2-1} / ((2 pi)^{D/2} I_{D/2-1}(kappa))  (:func:`log_vmf_normalizer`);
* d/dkappa log I_v(kappa) = I_{v+1}(kappa) / I_v(kappa) + v / kappa, so the gradient of
  log C_D is -A_D(kappa) = -I_{D/2}/I_{D/2-1}, the mean resultant length E[mu^T z] (:func:`mean_resultant_length`);
* sampling (:func:`sample_vmf`): Wood's (1994) rejection sampler for w = mu^T z, then a
  uniform direction orthogonal to mu. w is a differentiable function of kappa and the
  accepted Beta draw, so gradients reach kappa and mu (the reparametrised rejection sampler
  of Davidson et al. 2018 without its small correction term);
* :class:`SphericalMethod`: the shared head: unit-norm embedding e(x), kappa(x) from an MLP on
  the embedding, and u(x) = 1 / kappa(x) (URL sec. 4.1: "kappa(x) =: 1/u(x)").
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from scipy import special
from torch import Tensor

from hedgekit.errors import InputError
from hedgekit.methods.upstream import UpstreamMethod, count, inverse_softplus, mlp, positive


class _LogBesselI(torch.autograd.Function):
    """log I_v(x) for x > 0 from scipy's exponentially scaled ive, with its exact derivative."""

    @staticmethod
    def forward(ctx, x: Tensor, v: float) -> Tensor:
        xn = x.detach().double().cpu().numpy()
        ive_v = special.ive(v, xn)
        ctx.save_for_backward(x)
        ctx.v, ctx.ratio = v, torch.as_tensor(np.asarray(special.ive(v + 1, xn) / ive_v)).to(x)
        return torch.as_tensor(np.asarray(np.log(ive_v) + xn)).to(x)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (x,) = ctx.saved_tensors
        return grad * (ctx.ratio + ctx.v / x), None


def log_bessel_iv(v: float, x: Tensor) -> Tensor:
    """log I_v(x), elementwise for x > 0, differentiable in x."""
    if (x <= 0).any() or not torch.isfinite(x).all():
        raise InputError("log I_v(x) needs finite x > 0 (vMF concentrations must be positive)")
    return _LogBesselI.apply(x, float(v))


def log_vmf_normalizer(kappa: Tensor, dim: int) -> Tensor:
    """log C_D(kappa) of the vMF on S^{D-1} (D = ``dim``), elementwise."""
    v = dim / 2 - 1
    return v * kappa.log() - (dim / 2) * math.log(2 * math.pi) - log_bessel_iv(v, kappa)


def mean_resultant_length(kappa: Tensor, dim: int) -> Tensor:
    """A_D(kappa) = I_{D/2}(kappa) / I_{D/2-1}(kappa) = E[mu^T z] under vMF(mu, kappa) (not differentiable)."""
    k = kappa.detach().double().cpu().numpy()
    return torch.as_tensor(np.asarray(special.ive(dim / 2, k) / special.ive(dim / 2 - 1, k))).to(kappa)


def vmf_log_density(z: Tensor, mu: Tensor, kappa: Tensor) -> Tensor:
    """log vMF(z; mu, kappa) for unit z, mu (..., D) and kappa (...)."""
    return log_vmf_normalizer(kappa, z.shape[-1]) + kappa * (mu * z).sum(-1)


def sample_vmf(mu: Tensor, kappa: Tensor, n: int, generator: torch.Generator | None = None) -> Tensor:
    """(n, B, D) samples of vMF(mu_b, kappa_b) for unit mu (B, D) and kappa (B,); differentiable in both."""
    if mu.ndim != 2 or kappa.shape != mu.shape[:1] or mu.shape[1] < 2:
        raise InputError(f"sample_vmf needs mu (B, D>=2) and kappa (B,); got {tuple(mu.shape)} and {tuple(kappa.shape)}")
    if (kappa <= 0).any():
        raise InputError("vMF concentrations must be > 0")
    d1 = mu.shape[1] - 1  # D - 1
    k = kappa.expand(n, -1)
    b = d1 / (2 * k + torch.sqrt(4 * k**2 + d1**2))  # Wood (1994), written stably for large kappa
    x0 = (1 - b) / (1 + b)
    c = k * x0 + d1 * torch.log(1 - x0**2)
    eps = torch.empty_like(k)
    todo = torch.ones_like(k, dtype=torch.bool)
    while todo.any():  # accept a Beta draw where k w + d1 log(1 - x0 w) - c >= log U
        e = _symmetric_beta(d1, k.shape, generator).to(mu)
        u = torch.rand(k.shape, generator=generator, dtype=mu.dtype, device=mu.device)
        w = ((1 - (1 + b) * e) / (1 - (1 - b) * e)).detach()
        ok = todo & (k.detach() * w + d1 * torch.log1p(-x0.detach() * w) - c.detach() >= u.log())
        eps = torch.where(ok, e, eps)
        todo = todo & ~ok
    w = (1 - (1 + b) * eps) / (1 - (1 - b) * eps)  # (n, B), differentiable in kappa through b
    v = torch.randn(n, *mu.shape, generator=generator, dtype=mu.dtype, device=mu.device)
    v = F.normalize(v - (v * mu).sum(-1, keepdim=True) * mu, dim=-1)  # uniform direction orthogonal to mu
    return w.unsqueeze(-1) * mu + torch.sqrt((1 - w**2).clamp_min(0)).unsqueeze(-1) * v


def _symmetric_beta(dof: int, shape, generator: torch.Generator | None) -> Tensor:
    """Beta(dof/2, dof/2) draws as X / (X + Y) with X, Y ~ chi^2_dof (seedable, unlike torch's Beta)."""
    x, y = torch.randn(2, *shape, dof, generator=generator).pow(2).sum(-1)
    return x / (x + y)


class SphericalMethod(UpstreamMethod):
    """Head of the vMF methods: e(x) on the unit sphere, kappa(x) from an MLP, u(x) = 1/kappa(x).

    The last layer's bias starts kappa near ``kappa_init`` (the paper warms kappa up to a
    chosen start value, App. B.3); ``t`` is the inverse temperature of App. B (in [8, 64]).
    """

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, t: float = 16.0,
                 kappa_init: float = 16.0, n_samples: int = 16):
        super().__init__(feat_dim, n_classes, embed_dim)
        self.t, self.kappa_init = positive("t", t), positive("kappa_init", kappa_init)
        self.n_samples = count("n_samples", n_samples)
        self.kappa_net = mlp(embed_dim, 1)
        with torch.no_grad():
            self.kappa_net[-1].bias.fill_(inverse_softplus(kappa_init))

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        raw = self.embed(features)
        kappa = F.softplus(self.kappa_net(raw)).squeeze(-1) + 1e-4
        return {"embedding": F.normalize(raw, dim=-1), "kappa": kappa, "uncertainty": 1 / kappa, "norm": raw.norm(dim=-1)}


def log_expected_likelihood(mu: Tensor, kappa: Tensor, nu: Tensor, lam: Tensor) -> Tensor:
    """log int vMF(z; mu, kappa) vMF(z; nu, lam) dz = log C(kappa) + log C(lam) - log C(||kappa mu + lam nu||).

    The expected likelihood kernel (Jebara & Kondor 2003) between two vMFs, in closed form;
    shapes broadcast: mu, nu (..., D), kappa, lam (...).
    """
    d = mu.shape[-1]
    joint = (kappa.unsqueeze(-1) * mu + lam.unsqueeze(-1) * nu).norm(dim=-1).clamp_min(1e-6)
    return log_vmf_normalizer(kappa, d) + log_vmf_normalizer(lam, d) - log_vmf_normalizer(joint, d)
