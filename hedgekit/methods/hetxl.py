"""HET-XL: heteroscedastic classifier in the embedding space (Kirchhof et al. 2023, App. B.7, eq. 6;
Collier et al. 2023).

The embedding phi(x) gets a Gaussian N(phi(x), Sigma'(x)) with the low-rank-plus-diagonal
covariance Sigma' = V^T V + diag(d), V (rank x D) and d > 0 from a linear layer on the
embedding (rank 1 as in the paper). With S samples eps ~ N(0, Sigma') (:func:`low_rank_noise`),
eq. 6 is the cross-entropy of the Monte-Carlo mean of the tempered softmax,
    L = -log (1/S sum_s softmax(W^T (phi + eps_s) / tau))_y,  tau learned.
u(x) = H(P(Y|x)) of that mean (default), or log det Sigma'(x) (``u="logdet"``, by the matrix
determinant lemma, :func:`low_rank_logdet`); the paper tests both (sec. 4.1). Evaluation uses
S standard-normal draws fixed at construction, so u(x) of an input does not flicker.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.errors import InputError
from hedgekit.methods.ensemble import log_mean_probs
from hedgekit.methods.upstream import UpstreamMethod, count, entropy, inverse_softplus, register


def low_rank_noise(v: Tensor, d: Tensor, z: Tensor) -> Tensor:
    """eps = sum_r z_r V_r + sqrt(d) * z_0 ~ N(0, V^T V + diag(d)) for v (B, R, D), d (B, D) and
    standard normals z (S, B or 1, R + D); returns (S, B, D)."""
    r = v.shape[1]
    return torch.einsum("sbr,brd->sbd", z[..., :r].expand(-1, v.shape[0], -1), v) + d.sqrt() * z[..., r:]


def low_rank_logdet(v: Tensor, d: Tensor) -> Tensor:
    """log det(V^T V + diag(d)) = sum log d + log det(I_R + V diag(1/d) V^T) (matrix determinant lemma)."""
    inner = torch.eye(v.shape[1], dtype=v.dtype, device=v.device) + (v / d[:, None]) @ v.transpose(1, 2)
    return d.log().sum(-1) + torch.logdet(inner)


@register
class HETXL(UpstreamMethod):
    name = "hetxl"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, rank: int = 1, n_samples: int = 16,
                 u: str = "entropy", seed: int = 0):
        super().__init__(feat_dim, n_classes, embed_dim)
        if u not in ("entropy", "logdet"):
            raise InputError(f"u must be 'entropy' or 'logdet'; got {u!r}")
        self.rank, self.n_samples, self.u = count("rank", rank), count("n_samples", n_samples), u
        self.cov = nn.Linear(embed_dim, (rank + 1) * embed_dim)  # V (rank x D) and d (D)
        self.classifier = nn.Linear(embed_dim, n_classes)
        self.tau_raw = nn.Parameter(torch.tensor(inverse_softplus(1.0)))
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("eval_noise", torch.randn(n_samples, 1, rank + embed_dim, generator=g))

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        phi = self.embed(features)
        cov = self.cov(phi).view(-1, self.rank + 1, self.embed_dim)
        v, d = cov[:, :-1], F.softplus(cov[:, -1]) + 1e-4
        z = (torch.randn(self.n_samples, len(phi), self.rank + self.embed_dim, device=phi.device) if self.training
             else self.eval_noise)
        tau = F.softplus(self.tau_raw) + 1e-3
        logits = (self.classifier(phi + low_rank_noise(v, d, z)) / tau).transpose(0, 1)  # (B, S, C)
        log_p = log_mean_probs(logits)  # log E[softmax], eq. 6
        u = entropy(log_p.exp()) if self.u == "entropy" else low_rank_logdet(v, d)
        return {"embedding": phi, "uncertainty": u, "logits": log_p}

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        return F.nll_loss(out["logits"], labels)
