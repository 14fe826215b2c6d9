"""MCDropout (Kirchhof et al. 2023, sec. 4.1, App. B.11; Gal & Ghahramani 2016):

    L = 1/S sum_s CE(W (m_s * e(x)) + b, y),   m_s ~ Bernoulli(1 - p)^D / (1 - p),
    P(Y|x) = 1/S sum_s softmax(W (m_s * e(x)) + b),   u(x) = H(P(Y|x)).

A linear classifier on the dropped-out embedding, dropout rate p in [0.05, 0.25].
Every forward pass draws S = 10 dropout masks; training minimises the cross-entropy
averaged over them (the dropout loss, S draws at once). At evaluation the S members'
probabilities are averaged like :mod:`~hedgekit.methods.ensemble`, and u(x) is the entropy
of the average (default) or the Jensen-Shannon divergence between the members (``u="js"``).
Evaluation uses S masks fixed at construction, so u(x) of an input does not flicker.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.errors import InputError
from hedgekit.methods.ensemble import log_mean_probs
from hedgekit.methods.upstream import UpstreamMethod, check_kind, count, member_uncertainty, register


@register
class MCDropout(UpstreamMethod):
    name = "mcdropout"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, p: float = 0.15, n_samples: int = 10,
                 u: str = "entropy", seed: int = 0):
        super().__init__(feat_dim, n_classes, embed_dim)
        if not 0 <= p < 1:
            raise InputError(f"dropout rate p must be in [0, 1); got {p!r}")
        self.p, self.n_samples, self.u = float(p), count("n_samples", n_samples), check_kind(u)
        self.classifier = nn.Linear(embed_dim, n_classes)
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("eval_masks", self._masks((n_samples, 1, embed_dim), g))

    def _masks(self, shape, generator=None, device=None) -> Tensor:
        keep = torch.rand(shape, generator=generator, device=device) >= self.p
        return keep.float() / (1 - self.p)  # inverted dropout: E[mask] = 1

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        e = self.embed(features)
        masks = self._masks((self.n_samples, *e.shape), device=e.device) if self.training else self.eval_masks
        logits = self.classifier(masks * e).transpose(0, 1)  # (B, S, C)
        return {"embedding": e, "uncertainty": member_uncertainty(logits.softmax(-1), self.u),
                "logits": log_mean_probs(logits), "member_logits": logits}

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        logits = out["member_logits"]
        return F.cross_entropy(logits.flatten(0, 1), labels.repeat_interleave(logits.shape[1]))
