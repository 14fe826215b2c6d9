"""CE: the supervised baseline of URL (Kirchhof et al. 2023, sec. 4.1, App. B.1):

    P(Y|x) = softmax(W e(x) + b),   L = -log P(y|x),   u(x) = H(P(Y|x)) = -sum_c p_c log p_c.

A linear classifier on the embedding e(x) trained with cross-entropy; the
uncertainty is the entropy of the upstream class probabilities (sec. 4.1, "CE").
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.methods.upstream import UpstreamMethod, entropy, register


@register
class CE(UpstreamMethod):
    name = "ce"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16):
        super().__init__(feat_dim, n_classes, embed_dim)
        self.classifier = nn.Linear(embed_dim, n_classes)

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        e = self.embed(features)
        logits = self.classifier(e)
        return {"embedding": e, "uncertainty": entropy(logits.softmax(-1)), "logits": logits}

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        return F.cross_entropy(out["logits"], labels)
