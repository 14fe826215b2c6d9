"""MCInfoNCE (Kirchhof et al. 2023, sec. 4.1, App. B.3, eq. 2): InfoNCE on vMF samples.

Each image gets a posterior vMF(e(x), kappa(x)) with kappa(x) from an MLP; eq. 2
averages the InfoNCE loss over S = 16 samples s_i drawn from the posteriors:
    L = 1/S sum_i InfoNCE(s_{.,i}).
Two heads, as in :mod:`hedgekit.methods.infonce`: the paper's unsupervised one (`TwoViewMCInfoNCE`,
``"mcinfonce_2v"``: positives are two augmented views of one image, :func:`two_view_info_nce`) and the supervised
kit-scale variant (`MCInfoNCE`, ``"mcinfonce"``: positives are the other images of the same class in the batch,
:func:`label_info_nce`). Sample i of every image is compared with sample i of the others.
u(x) = 1 / kappa(x) (sec. 4.1).
"""
from __future__ import annotations

from torch import Tensor

from hedgekit.methods.infonce import label_info_nce, two_view_info_nce
from hedgekit.methods.upstream import register
from hedgekit.methods.vmf import SphericalMethod, sample_vmf


@register
class MCInfoNCE(SphericalMethod):
    name = "mcinfonce"
    pairwise = True

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        s = sample_vmf(out["embedding"], out["kappa"], self.n_samples)  # (S, B, D)
        return label_info_nce(self.t * s @ s.transpose(1, 2), labels)


@register
class TwoViewMCInfoNCE(SphericalMethod):
    """The paper's MCInfoNCE (App. B.3, eq. 2): eq. 1 on vMF samples of two augmented views, no labels (as
    `hedgekit.methods.infonce.TwoViewInfoNCE`, ``supervised = False``: `hedgekit.training.upstream.fit_upstream`
    never hands it a label)."""

    name = "mcinfonce_2v"
    supervised = False

    def loss(self, out: dict[str, Tensor], labels: None = None) -> Tensor:
        s = sample_vmf(out["embedding"], out["kappa"], self.n_samples)  # (S, 2B, D)
        return two_view_info_nce(self.t * s @ s.transpose(1, 2))
