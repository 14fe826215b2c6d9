"""HIB as in URL (App. B.6, eq. 5). Oracle: a naive loop over pairs and paired samples with
hand-written sigmoids."""
import math

import pytest
import torch
import torch.nn.functional as F

from hedgekit.errors import InputError
from hedgekit.methods.upstream import build_method
from hedgekit.methods.url_hib import url_hib_loss


def _naive(s, labels, t, b):
    S, B, _ = s.shape
    same, diff = [], []
    for n in range(B):
        for m in range(B):
            if n == m:
                continue
            p = sum(1 / (1 + math.exp(-(t * float(s[i, n] @ s[i, m]) + b))) for i in range(S)) / S
            (same if labels[n] == labels[m] else diff).append(math.log(p))
    return -sum(same) / len(same) + sum(diff) / len(diff)


def test_url_hib_loss_against_a_loop():
    g = torch.Generator().manual_seed(0)
    s = F.normalize(torch.randn(3, 5, 4, generator=g), dim=-1)
    y = torch.tensor([0, 0, 1, 1, 2])
    m = build_method("hib", 6, 3, embed_dim=4, t=8.0, b=-2.0)
    assert url_hib_loss(s, y, m.match).item() == pytest.approx(_naive(s, y, 8.0, -2.0), rel=1e-5)
    assert not any(p.requires_grad for p in m.match.parameters())  # t and b are hyperparameters


def test_hibs_own_different_class_term_against_a_loop():
    """different="hib": -log(1 - p) for different-class pairs (HIB's term, which URL replaced by +log p)."""
    g = torch.Generator().manual_seed(1)
    s = F.normalize(torch.randn(3, 5, 4, generator=g), dim=-1)
    y = torch.tensor([0, 0, 1, 1, 2])
    t, b = 8.0, -2.0
    same, diff = [], []
    for n in range(5):
        for m in range(5):
            if n != m:
                p = sum(1 / (1 + math.exp(-(t * float(s[i, n] @ s[i, m]) + b))) for i in range(3)) / 3
                (same if y[n] == y[m] else diff).append(math.log(p) if y[n] == y[m] else math.log(1 - p))
    want = -sum(same) / len(same) - sum(diff) / len(diff)
    m = build_method("hib", 6, 3, embed_dim=4, t=t, b=b, different="hib")
    assert url_hib_loss(s, y, m.match, "hib").item() == pytest.approx(want, rel=1e-5)
    with pytest.raises(InputError, match="different"):
        build_method("hib", 6, 3, embed_dim=4, different="nope")
