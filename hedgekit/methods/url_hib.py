"""HIB as re-implemented by URL (Kirchhof et al. 2023, App. B.6, eq. 5).

Posteriors vMF(e(x), kappa(x)) on the unit sphere; S = 16 samples s_{n,i} per image. The
match probability of images n, m pairs sample i with sample i:
    p_nm = 1/S sum_i sigmoid(t s_{n,i}^T s_{m,i} + b)
(the paper writes a sum; the mean keeps p a probability). This is HIB eq. 5 with a cosine
instead of a Euclidean distance: with d = 1 - s^T s', sigmoid(t s^T s' + b) =
sigmoid(-a d + b') for a = t, b' = t + b, so the log of the Monte-Carlo mean is
hedgekit's HIB :func:`~hedgekit.methods.contrastive.log_match` with a fixed
:class:`~hedgekit.nets.match.SoftMatch` (t in [8, 64] and b in [-8, 8] are hyperparameters).
Eq. 5, without self-pairs and without HIB's KL prior (URL's changes):
    L = -mean_{same} log p_nm + mean_{different} log p_nm.
URL changed the second term from HIB's -log(1 - p_nm) ("which stabilized training", App. B.6);
``different="hib"`` restores it: L = -mean_{same} log p_nm - mean_{different} log(1 - p_nm).
u(x) = 1 / kappa(x) (the paper's reimplementation; sec. 4.1 writes sigma(x) =: u(x)).
"""
from __future__ import annotations

import torch
from torch import Tensor

from hedgekit.errors import InputError
from hedgekit.methods.contrastive import log_match
from hedgekit.methods.upstream import register
from hedgekit.methods.vmf import SphericalMethod, sample_vmf
from hedgekit.nets.match import SoftMatch


DIFFERENT = ("url", "hib")  # the different-class term: URL's +log p (eq. 5) or HIB's -log(1 - p)


def url_hib_loss(samples: Tensor, labels: Tensor, match: SoftMatch, different_term: str = "url") -> Tensor:
    """Eq. 5 from vMF samples (S, B, D) of a batch with integer labels (B,); ``different_term="hib"``: HIB's
    -log(1 - p) for the different-class pairs instead of URL's +log p. The batch must hold same-class and
    different-class pairs (else a mean over no pairs: NaN); the trainer's class-balanced batches of P >= 2 classes x
    Q >= 2 images always do (`hedgekit.training.upstream`)."""
    b = labels.shape[0]
    log_p, log_q = log_match(1 - samples @ samples.transpose(1, 2), match, (0,))  # (B, B)
    eye = torch.eye(b, dtype=torch.bool, device=labels.device)
    same = (labels[:, None] == labels[None, :]) & ~eye
    different = labels[:, None] != labels[None, :]
    apart = log_p if different_term == "url" else -log_q
    return -(log_p * same).sum() / same.sum() + (apart * different).sum() / different.sum()


@register
class URLHIB(SphericalMethod):
    name = "hib"
    pairwise = True

    def __init__(self, feat_dim: int, n_classes: int, embed_dim: int = 16, b: float = 0.0, different: str = "url",
                 **hparams):
        super().__init__(feat_dim, n_classes, embed_dim, **hparams)
        if different not in DIFFERENT:
            raise InputError(f"different must be one of {DIFFERENT}; got {different!r}")
        self.match = SoftMatch(a=self.t, b=self.t + b).requires_grad_(False)
        self.different = different

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        return url_hib_loss(sample_vmf(out["embedding"], out["kappa"], self.n_samples), labels, self.match,
                            self.different)
