"""MCInfoNCE (Kirchhof et al. 2023, sec. 4.1, App. B.3, eq. 2): InfoNCE on vMF samples.

Each image gets a posterior vMF(e(x), kappa(x)) with kappa(x) from an MLP; eq. 2
averages the InfoNCE loss over S = 16 samples s_i drawn from the posteriors:
    L = 1/S sum_i InfoNCE(s_{.,i}).
Same kit-scale choice as :mod:`hedgekit.methods.infonce`: positives are the other
images of the same class in the batch (:func:`label_info_nce`), sample i of every
image is compared with sample i of the others. u(x) = 1 / kappa(x) (sec. 4.1).
"""
from __future__ import annotations

from torch import Tensor

from hedgekit.methods.infonce import label_info_nce
from hedgekit.methods.upstream import register
from hedgekit.methods.vmf import SphericalMethod, sample_vmf


@register
class MCInfoNCE(SphericalMethod):
    name = "mcinfonce"

    def loss(self, out: dict[str, Tensor], labels: Tensor) -> Tensor:
        self.check_labels(out, labels)
        s = sample_vmf(out["embedding"], out["kappa"], self.n_samples)  # (S, B, D)
        return label_info_nce(self.t * s @ s.transpose(1, 2), labels)
