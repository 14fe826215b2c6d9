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
* :class:`SphericalMethod`: the shared head: unit-norm embedding e(x), u(x) from an MLP on the
  embedding, and kappa(x) = 1 / u(x) (URL sec. 4.1: "kappa(x) =: 1/u(x)").
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.checks import values_checked
from hedgekit.errors import InputError
from hedgekit.methods.upstream import UpstreamMethod, count, inverse_softplus, mlp, positive


class _LogBesselI(torch.autograd.Function):
    """log I_v(x) for x > 0 from scipy's exponentially scaled ive, with its exact derivative."""

    @staticmethod
    def forward(ctx, x: Tensor, v: float) -> Tensor:
        from scipy import special  # here, not at the top: scipy costs the notebooks' first cell 0.3 s

        xn = x.detach().double().cpu().numpy()
        ive_v = special.ive(v, xn)
        ctx.save_for_backward(x)
        ctx.v, ctx.ratio = v, torch.as_tensor(np.asarray(special.ive(v + 1, xn) / ive_v)).to(x)
        return torch.as_tensor(np.asarray(np.log(ive_v) + xn)).to(x)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (x,) = ctx.saved_tensors
        return grad * (ctx.ratio + ctx.v / x), None


DEBYE_MIN_ORDER = 7.0  # from v = 7 (D = 16) on, the 4-term expansion is within 1.2e-6 of log I_v(x) for all x > 0


def _log_iv_debye(v: float, x: Tensor) -> Tensor:
    """log I_v(x) by the uniform asymptotic (Debye) expansion in the order, 4 terms
    (Abramowitz & Stegun 9.7.7 with the polynomials u_1..u_4 of 9.3.9-9.3.10); pure torch."""
    z = x / v
    s = torch.sqrt(1 + z * z)
    t = 1 / s
    eta = s + torch.log(z / (1 + s))
    u1 = (3 * t - 5 * t**3) / 24
    u2 = (81 * t**2 - 462 * t**4 + 385 * t**6) / 1152
    u3 = (30375 * t**3 - 369603 * t**5 + 765765 * t**7 - 425425 * t**9) / 414720
    u4 = (4465125 * t**4 - 94121676 * t**6 + 349922430 * t**8 - 446185740 * t**10 + 185910725 * t**12) / 39813120
    series = 1 + u1 / v + u2 / v**2 + u3 / v**3 + u4 / v**4
    return v * eta - 0.5 * math.log(2 * math.pi * v) - 0.5 * torch.log(s) + torch.log(series)


def log_bessel_iv(v: float, x: Tensor) -> Tensor:
    """log I_v(x), elementwise for x > 0, differentiable in x.

    Exact (scipy) for small orders; for v >= :data:`DEBYE_MIN_ORDER` (embeddings with D >= 16) the
    Debye expansion in torch, about 30x faster on ELK's (B, C) kernel matrix and device-agnostic.
    """
    if values_checked() and ((x <= 0).any() or not torch.isfinite(x).all()):
        raise InputError("log I_v(x) needs finite x > 0 (vMF concentrations must be positive)")
    return _log_iv_debye(float(v), x) if v >= DEBYE_MIN_ORDER else _LogBesselI.apply(x, float(v))


def log_vmf_normalizer(kappa: Tensor, dim: int) -> Tensor:
    """log C_D(kappa) of the vMF on S^{D-1} (D = ``dim``), elementwise."""
    v = dim / 2 - 1
    return v * kappa.log() - (dim / 2) * math.log(2 * math.pi) - log_bessel_iv(v, kappa)


def mean_resultant_length(kappa: Tensor, dim: int) -> Tensor:
    """A_D(kappa) = I_{D/2}(kappa) / I_{D/2-1}(kappa) = E[mu^T z] under vMF(mu, kappa) (not differentiable)."""
    from scipy import special

    k = kappa.detach().double().cpu().numpy()
    return torch.as_tensor(np.asarray(special.ive(dim / 2, k) / special.ive(dim / 2 - 1, k))).to(kappa)


def vmf_log_density(z: Tensor, mu: Tensor, kappa: Tensor) -> Tensor:
    """log vMF(z; mu, kappa) for unit z, mu (..., D) and kappa (...)."""
    return log_vmf_normalizer(kappa, z.shape[-1]) + kappa * (mu * z).sum(-1)


def sample_vmf(mu: Tensor, kappa: Tensor, n: int, generator: torch.Generator | None = None) -> Tensor:
    """(n, B, D) samples of vMF(mu_b, kappa_b) for unit mu (B, D) and kappa (B,); differentiable in both."""
    if mu.ndim != 2 or kappa.shape != mu.shape[:1] or mu.shape[1] < 2:
        raise InputError(f"sample_vmf needs mu (B, D>=2) and kappa (B,); got {tuple(mu.shape)} and {tuple(kappa.shape)}")
    if values_checked() and (kappa <= 0).any():
        raise InputError("vMF concentrations must be > 0")
    d1 = mu.shape[1] - 1  # D - 1
    k = kappa.expand(n, -1)
    b = d1 / (2 * k + torch.sqrt(4 * k**2 + d1**2))  # Wood (1994), written stably for large kappa
    b64 = b.detach().double()
    one_minus_x0 = 2 * b64 / (1 + b64)  # x0 = (1 - b) / (1 + b)
    log_one_minus_x0_sq = torch.log(4 * b64) - 2 * torch.log1p(b64)
    eps = torch.empty_like(k)
    todo = torch.ones_like(k, dtype=torch.bool)
    while todo.any():  # accept a Beta draw where kappa (w - x0) + d1 log((1 - x0 w) / (1 - x0^2)) >= log U
        e = _symmetric_beta(d1, k.shape, generator).to(b64)
        u = torch.rand(k.shape, generator=generator, dtype=torch.float64).to(b64.device)
        omw = _one_minus_w(b64, e)
        log_ratio = torch.log(one_minus_x0 + (1 - one_minus_x0) * omw) - log_one_minus_x0_sq
        ok = todo & (k.detach().double() * (one_minus_x0 - omw) + d1 * log_ratio >= u.log())
        eps = torch.where(ok, e.to(mu.dtype), eps)
        todo = todo & ~ok
    omw = _one_minus_w(b, eps)  # (n, B), differentiable in kappa through b
    v = torch.randn(n, *mu.shape, generator=generator, dtype=mu.dtype, device=mu.device)
    v = F.normalize(v - (v * mu).sum(-1, keepdim=True) * mu, dim=-1)  # uniform direction orthogonal to mu
    return (1 - omw).unsqueeze(-1) * mu + torch.sqrt(omw * (2 - omw)).unsqueeze(-1) * v


def _one_minus_w(b: Tensor, e: Tensor) -> Tensor:
    """1 - w for w = (1 - (1 + b) e) / (1 - (1 - b) e), without cancellation when w is near 1."""
    return 2 * b * e / (1 - (1 - b) * e)


def _symmetric_beta(dof: int, shape, generator: torch.Generator | None) -> Tensor:
    """Beta(dof/2, dof/2) draws as X / (X + Y) with X, Y ~ chi^2_dof (seedable, unlike torch's Beta)."""
    x, y = torch.randn(2, *shape, dof, generator=generator).pow(2).sum(-1)
    return x / (x + y)


U_EPS = 1e-6  # the floor of u(x), so kappa(x) <= 1e6 (the official code's EPS)


class SphericalMethod(UpstreamMethod):
    """Head of the vMF methods: e(x) on the unit sphere, u(x) from an MLP, kappa(x) = 1/u(x).

    u(x) = softplus(MLP(r)) + `U_EPS` on the pre-normalisation embedding r, and kappa(x) = 1 / u(x): the
    parameterisation of the paper's official code (github.com/mkirchhof/url: ``UncertaintyNetwork`` ends in a
    Softplus plus 1e-6, and the vMF losses read ``kappa = 1 / unc``, "kappa is certainty, not uncertainty"). A
    step of the MLP's output z then moves kappa by a factor (d log kappa / dz = -sigmoid(z) / u, about -1 for
    small u), so kappa can spread over orders of magnitude between images (the measurements behind this choice:
    docs/recipes.md, "URL: uncertainties that learn").

    The paper starts kappa either at random or warmed up to a fixed value (a hyperparameter, App. B.3); here the
    last layer's bias starts it near ``kappa_init``. ``t`` is the inverse temperature of App. B (searched in
    [8, 64]); ``n_samples`` the S = 16 posterior samples.
    """

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, t: float = 16.0,
                 kappa_init: float = 16.0, n_samples: int = 16):
        super().__init__(feat_dim, n_classes, embed_dim)
        self.t, self.kappa_init = positive("t", t), positive("kappa_init", kappa_init)
        self.n_samples = count("n_samples", n_samples)
        self.u_net = mlp(embed_dim, 1)
        with torch.no_grad():
            self.u_net[-1].bias.fill_(inverse_softplus(1 / kappa_init))

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        raw = self.embed(features)
        u = F.softplus(self.u_net(raw)).squeeze(-1) + U_EPS
        return {"embedding": F.normalize(raw, dim=-1), "kappa": 1 / u, "uncertainty": u}


def log_expected_likelihood(cos: Tensor, kappa: Tensor, lam: Tensor, dim: int) -> Tensor:
    """log int vMF(z; mu, kappa) vMF(z; nu, lam) dz = log C(kappa) + log C(lam) - log C(||kappa mu + lam nu||).

    The expected likelihood kernel (Jebara & Kondor 2003) between two vMFs on S^{dim-1} in closed
    form, from the cosine mu^T nu of their mean directions, since
    ||kappa mu + lam nu||^2 = kappa^2 + lam^2 + 2 kappa lam mu^T nu; shapes broadcast.
    """
    joint = (kappa**2 + lam**2 + 2 * kappa * lam * cos).clamp_min(1e-12).sqrt()
    return log_vmf_normalizer(kappa, dim) + log_vmf_normalizer(lam, dim) - log_vmf_normalizer(joint, dim)
