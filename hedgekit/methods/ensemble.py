"""Shallow deep ensemble (Kirchhof et al. 2023, sec. 4.1, App. B.10; Lee et al. 2015 heads).

M = 10 linear classifier heads share the embedding e(x); their softmax probabilities are
averaged, P(Y|x) = 1/M sum_m softmax(W_m e + b_m), and the average is trained with
cross-entropy: L = -log P(y|x). u(x) is either the entropy H(P(Y|x)) (default) or the
Jensen-Shannon divergence between the members, H(P(Y|x)) - 1/M sum_m H(p_m) (``u="js"``);
the paper tests both (sec. 4.1).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hedgekit.methods.upstream import UpstreamMethod, check_kind, count, member_uncertainty, register


def log_mean_probs(member_logits: Tensor) -> Tensor:
    """(B, C) log (1/M sum_m softmax(member_logits_m)) for member logits (B, M, C), computed stably."""
    return torch.logsumexp(F.log_softmax(member_logits, -1), 1) - math.log(member_logits.shape[1])


@register
class Ensemble(UpstreamMethod):
    name = "ensemble"

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, members: int = 10, u: str = "entropy"):
        super().__init__(feat_dim, n_classes, embed_dim)
        self.members, self.u = count("members", members, 2), check_kind(u)
        self.heads = nn.Linear(embed_dim, members * n_classes)  # M heads in one matrix

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        e = self.embed(features)
        logits = self.heads(e).view(-1, self.members, self.n_classes)  # (B, M, C)
        return {"embedding": e, "uncertainty": member_uncertainty(logits.softmax(-1), self.u),
                "logits": log_mean_probs(logits), "member_logits": logits}

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        return F.nll_loss(out["logits"], labels)
