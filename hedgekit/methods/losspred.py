"""Losspred: direct loss prediction (Kirchhof et al. 2023, sec. 4.1, App. B.9, eq. 8).

A linear classifier on the embedding plus an uncertainty module kappa(x) (a 3-layer MLP
on the embedding, softplus output, since a loss is non-negative) that regresses each
image's cross-entropy with its gradient detached:
    L = CE(x, y) + lambda (kappa(x) - CE_detached(x, y))^2,  lambda in [0.01, 0.99].
u(x) = kappa(x), the predicted loss.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.methods.upstream import UpstreamMethod, mlp, positive, register


@register
class Losspred(UpstreamMethod):
    name = "losspred"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, lam: float = 0.5):
        super().__init__(feat_dim, n_classes, embed_dim)
        self.lam = positive("lam", lam)
        self.classifier = nn.Linear(embed_dim, n_classes)
        self.kappa_net = mlp(embed_dim, 1)

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        e = self.embed(features)
        kappa = F.softplus(self.kappa_net(e)).squeeze(-1)
        return {"embedding": e, "uncertainty": kappa, "logits": self.classifier(e)}

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        ce = F.cross_entropy(out["logits"], labels, reduction="none")
        return ce.mean() + self.lam * ((out["uncertainty"] - ce.detach()) ** 2).mean()
