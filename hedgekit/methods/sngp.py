"""SNGP: spectral-normalised neural Gaussian process (Kirchhof et al. 2023, App. B.8, eq. 7; Liu et al. 2020).

The embedding h(x) comes from a spectrally normalised projection (largest singular value 1,
so distances in feature space are not blown up; the paper normalises every layer, we
normalise the head's). Random Fourier features phi(h) = sqrt(2/R) cos(W h + b), W ~ N(0, I/l^2),
b ~ U(0, 2 pi) frozen (:func:`random_features`; phi(x)^T phi(y) ~ exp(-||h(x) - h(y)||^2 / (2 l^2))).
The class logits are a GP with the Laplace posterior of eq. 7,
    N(phi^T beta, phi^T (I + Phi^T Phi)^{-1} phi),
trained on the mean logits with cross-entropy. Phi^T Phi is accumulated by :meth:`SNGP.on_step`
as a discounted sum P <- m P + Phi_batch^T Phi_batch (``cov_momentum`` m < 1 forgets the features
of early training; m = 1 is eq. 7 exactly over every batch since :meth:`SNGP.reset_covariance`).
Class probabilities use the mean-field approximation softmax(mean / sqrt(1 + pi/8 var)), and
u(x) = H(P(Y|x)) (sec. 4.1).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.parametrizations import spectral_norm

from hedgekit.errors import InputError
from hedgekit.methods.upstream import UpstreamMethod, count, entropy, positive, register

MEAN_FIELD_FACTOR = math.pi / 8  # Liu et al. 2020, the probit approximation of the softmax


def random_features(h: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """phi(h) = sqrt(2/R) cos(h W^T + b) for h (B, D), w (R, D), b (R,)."""
    return math.sqrt(2 / w.shape[0]) * torch.cos(h @ w.T + b)


def mean_field_probs(mean: Tensor, var: Tensor) -> Tensor:
    """softmax(mean / sqrt(1 + pi/8 var)) for logit means (B, C) and one variance per input (B,)."""
    return (mean / torch.sqrt(1 + MEAN_FIELD_FACTOR * var).unsqueeze(-1)).softmax(-1)


@register
class SNGP(UpstreamMethod):
    name = "sngp"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, n_features: int = 256,
                 lengthscale: float = 1.0, cov_momentum: float = 0.999, seed: int = 0):
        super().__init__(feat_dim, n_classes, embed_dim)
        if not 0 < cov_momentum <= 1:
            raise InputError(f"cov_momentum must be in (0, 1]; got {cov_momentum!r}")
        self.cov_momentum, r = float(cov_momentum), count("n_features", n_features)
        self.project = spectral_norm(self.project)
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("rff_w", torch.randn(r, embed_dim, generator=g) / positive("lengthscale", lengthscale))
        self.register_buffer("rff_b", 2 * math.pi * torch.rand(r, generator=g))
        self.register_buffer("precision", torch.eye(r))
        self.beta = nn.Linear(r, n_classes, bias=False)

    def reset_covariance(self) -> None:
        """Start the accumulation of Phi^T Phi again (P = I)."""
        self.precision.copy_(torch.eye(len(self.precision), device=self.precision.device))

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        h = self.embed(features)
        phi = random_features(h, self.rff_w, self.rff_b)
        mean = self.beta(phi)
        var = (phi * torch.linalg.solve(self.precision, phi.T).T).sum(-1)  # phi^T P^{-1} phi
        return {"embedding": h, "uncertainty": entropy(mean_field_probs(mean, var)), "logits": mean, "phi": phi,
                "var": var}

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        return F.cross_entropy(out["logits"], labels)

    @torch.no_grad()
    def on_step(self, features: Tensor, out: dict[str, Tensor], labels: Tensor) -> None:
        phi = out["phi"].detach()
        eye = torch.eye(len(self.precision), device=phi.device)
        # discount only the data part, keep the prior's I
        self.precision.copy_(eye + self.cov_momentum * (self.precision - eye) + phi.T @ phi)
