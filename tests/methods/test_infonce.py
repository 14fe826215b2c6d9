"""InfoNCE (URL App. B.2, eq. 1, with in-batch same-class positives). Oracles: a naive double loop over
anchors and positives; u = 1 / ||e|| by hand."""
import math

import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.methods.infonce import label_info_nce
from hedgekit.methods.upstream import build_method


def _naive(e, labels, t):
    terms = []
    for n in range(len(e)):
        for m in range(len(e)):
            if m != n and labels[m] == labels[n]:
                denominator = sum(math.exp(t * float(e[n] @ e[k])) for k in range(len(e)) if k != n)
                terms.append(-t * float(e[n] @ e[m]) + math.log(denominator))
    return sum(terms) / len(terms)


def test_label_info_nce_against_a_loop():
    g = torch.Generator().manual_seed(1)
    e = torch.nn.functional.normalize(torch.randn(7, 4, generator=g, dtype=torch.float64), dim=-1)
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 3])  # classes 2 and 3 have no positive: anchors only in denominators
    assert label_info_nce(3.0 * e @ e.T, labels).item() == pytest.approx(_naive(e, labels, 3.0), rel=1e-12)
    with pytest.raises(InputError, match="two images of one class"):
        label_info_nce(e @ e.T, torch.arange(7))


def test_infonce_head_loss_and_norm_uncertainty():
    m = build_method("infonce", 6, 4, embed_dim=4, t=5.0)
    x, y = torch.randn(6, 6), torch.tensor([0, 0, 1, 1, 2, 2])
    out = m(x)
    raw = m.project(x)
    torch.testing.assert_close(out["uncertainty"], 1 / raw.norm(dim=-1))
    torch.testing.assert_close(out["embedding"].norm(dim=-1), torch.ones(6))
    assert m.loss(out, y).item() == pytest.approx(_naive(out["embedding"].detach().double(), y, 5.0), rel=1e-5)
