"""InfoNCE (URL App. B.2, eq. 1, with in-batch same-class positives). Oracles: a naive double loop over
anchors and positives; u = 1 / ||e|| by hand."""
import math

import pytest
import torch

from hedgekit.methods.infonce import label_info_nce, two_view_info_nce
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


def test_infonce_head_loss_and_norm_uncertainty():
    m = build_method("infonce", 6, 4, embed_dim=4, t=5.0)
    x, y = torch.randn(6, 6), torch.tensor([0, 0, 1, 1, 2, 2])
    out = m(x)
    raw = m.project(x)
    torch.testing.assert_close(out["uncertainty"], 1 / raw.norm(dim=-1))
    torch.testing.assert_close(out["embedding"].norm(dim=-1), torch.ones(6))
    assert m.loss(out, y).item() == pytest.approx(_naive(out["embedding"].detach().double(), y, 5.0), rel=1e-5)


def _naive_two_view(e, t):
    """Eq. 1 by hand: rows 0..B-1 are view 1, B..2B-1 view 2; the negatives of pair n are the other images' views."""
    b = len(e) // 2
    total = 0.0
    for n in range(b):
        negatives = [k for k in range(2 * b) if k not in (n, n + b)]
        total += -t * float(e[n] @ e[n + b])
        for anchor in (n, n + b):
            total += math.log(sum(math.exp(t * float(e[anchor] @ e[k])) for k in negatives))
    return total / b


def test_two_view_info_nce_against_a_loop_and_a_hand_computed_case():
    g = torch.Generator().manual_seed(2)
    e = torch.nn.functional.normalize(torch.randn(6, 3, generator=g, dtype=torch.float64), dim=-1)
    assert two_view_info_nce(2.5 * e @ e.T).item() == pytest.approx(_naive_two_view(e, 2.5), rel=1e-12)
    # B = 2 images on a circle: views of image 1 at angles 0 and a, of image 2 at pi/2 and pi/2 + a; each anchor's
    # negatives are the two views of the other image; both pairs give the same value, so it is also the mean
    a, t = 0.3, 2.0
    ang = torch.tensor([0.0, math.pi / 2, a, math.pi / 2 + a], dtype=torch.float64)
    e = torch.stack([ang.cos(), ang.sin()], dim=1)
    anchor_1 = math.log(math.exp(t * math.cos(math.pi / 2)) + math.exp(t * math.cos(math.pi / 2 + a)))  # view 1 of image 1
    anchor_2 = math.log(math.exp(t * math.cos(math.pi / 2 - a)) + math.exp(t * math.cos(math.pi / 2)))  # view 2 of image 1
    assert two_view_info_nce(t * e @ e.T).item() == pytest.approx(-t * math.cos(a) + anchor_1 + anchor_2, rel=1e-12)


def test_two_view_head_is_unsupervised():
    """Its trainer never hands it a label (tests/training/test_upstream.py); the loss computes eq. 1 alone."""
    m = build_method("infonce_2v", 6, 4, embed_dim=4, t=5.0)
    out = m(torch.randn(8, 6))
    assert not m.supervised
    assert m.loss(out, None).item() == pytest.approx(_naive_two_view(out["embedding"].detach().double(), 5.0), rel=1e-5)
