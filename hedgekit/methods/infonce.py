"""InfoNCE: the unsupervised contrastive baseline of URL (Kirchhof et al. 2023, sec. 4.1, App. B.2, eq. 1).

Two heads: the paper's unsupervised one (`TwoViewInfoNCE`, ``"infonce_2v"``) and a supervised kit-scale variant
(`InfoNCE`, ``"infonce"``).

Eq. 1 pulls the unit-norm embeddings of two augmented views e1+, e2+ together and
pushes them from the rest of the batch:
    L = -t e1+^T e2+ + log sum_{e-} exp(t e1+^T e-) + log sum_{e-} exp(t e2+^T e-).
Kit-scale choice (one view per image, class labels given): the positives of image n
are the other images m of its class in the batch (a class-balanced P x K batch), so
for every ordered same-class pair (n, m), n != m,
    l_nm = -t e_n^T e_m + log sum_{k != n} exp(t e_n^T e_k),
and L = mean over those pairs (:func:`label_info_nce`): the supervised variant.
The paper's own, unsupervised (:func:`two_view_info_nce`): the batch holds two augmented views of each of B
images and no labels; the negatives e- of a pair are the 2B - 2 views of the other images, and eq. 1 is
averaged over the B pairs. Summing over ordered pairs
gives both log-sum-exp terms of eq. 1. The denominator holds the whole batch but n
itself, positives included, as in SimCLR.
u(x) = 1 / ||e(x)||_2 of the embedding before normalisation: the paper uses the norm as a
heuristic (sec. 4.1) with smaller norms for unfamiliar inputs (App. C.4, "(inverse) norm").
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.methods.upstream import UpstreamMethod, positive, register


def label_info_nce(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean of l_nm over ordered same-class pairs, from (..., B, B) scaled similarities t e_n^T e_k.

    Leading dimensions (e.g. MCInfoNCE's samples) are averaged too. The batch must hold a same-class pair (else
    the mean is over no pairs: NaN); the trainer's class-balanced batches always do (`hedgekit.training.upstream`).
    """
    b = labels.shape[0]
    eye = torch.eye(b, dtype=torch.bool, device=labels.device)
    pos = (labels[:, None] == labels[None, :]) & ~eye
    log_denominator = torch.logsumexp(logits.masked_fill(eye, float("-inf")), dim=-1, keepdim=True)
    weights = pos / (pos.sum() * logits[..., 0, 0].numel())  # a mean over pairs (and leading dims), by a weighted sum
    return -((logits - log_denominator) * weights).sum()


def two_view_info_nce(logits: Tensor) -> Tensor:
    """Eq. 1 averaged over pairs, from (..., 2B, 2B) scaled similarities of the views [view 1 of images 1..B,
    view 2 of images 1..B]: pair n = (n, n + B), negatives = every view of the other images, so for each pair
        -logits[n, n+B] + logsumexp_{k not in {n, n+B}} logits[n, k] + logsumexp_{k not in {n, n+B}} logits[n+B, k].
    Leading dimensions (e.g. MCInfoNCE's samples) are averaged too.
    """
    two_b = logits.shape[-1]
    b = two_b // 2
    eye = torch.eye(two_b, dtype=torch.bool, device=logits.device)
    partner = eye.roll(b, dims=1)  # [i, (i + B) mod 2B]
    negatives = logits.masked_fill(eye | partner, float("-inf"))
    positive = (logits * partner).sum(-1)  # logits[i, partner(i)]; every pair appears twice
    per_view = torch.logsumexp(negatives, dim=-1) - positive / 2
    return per_view.sum(-1).mean() / b


@register
class InfoNCE(UpstreamMethod):
    name = "infonce"
    pairwise = True

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, t: float = 16.0):
        super().__init__(feat_dim, n_classes, embed_dim)
        self.t = positive("t", t)

    def forward(self, features: Tensor) -> dict[str, Tensor]:
        raw = self.embed(features)
        norm = raw.norm(dim=-1)
        return {"embedding": F.normalize(raw, dim=-1), "uncertainty": 1 / norm.clamp_min(1e-12)}

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        e = out["embedding"]
        return label_info_nce(self.t * e @ e.T, labels)


@register
class TwoViewInfoNCE(InfoNCE):
    """The paper's InfoNCE (App. B.2, eq. 1): positives are two augmented views of one image, no labels.

    ``supervised = False``: `hedgekit.training.upstream.fit_upstream`, the entry point, never hands it a label (its
    ``loss`` gets ``labels=None``, the `UpstreamMethod` signature)."""

    name = "infonce_2v"
    supervised = False

    def loss(self, out: dict[str, Tensor], labels: None = None) -> Tensor:
        e = out["embedding"]
        return two_view_info_nce(self.t * e @ e.T)
