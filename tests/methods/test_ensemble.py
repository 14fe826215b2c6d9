"""Ensemble (URL App. B.10). Oracle: a hand-computed two-member case (entropy, JS divergence, loss)."""
import math

import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.methods.upstream import build_method


def test_two_member_ensemble_by_hand():
    m = build_method("ensemble", 2, 2, embed_dim=2, members=2, u="js")
    with torch.no_grad():
        m.project.weight.copy_(torch.eye(2)); m.project.bias.zero_()
        # member 1: logits (e1, 0); member 2: logits (0, e1)
        m.heads.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])); m.heads.bias.zero_()
    out = m(torch.tensor([[math.log(3.0), 0.0]]))
    p1, p2 = torch.tensor([0.75, 0.25]), torch.tensor([0.25, 0.75])
    h = lambda p: -(p * p.log()).sum()
    mean = (p1 + p2) / 2  # (0.5, 0.5)
    assert out["uncertainty"].item() == pytest.approx((h(mean) - (h(p1) + h(p2)) / 2).item(), rel=1e-5)
    assert m.loss(out, torch.tensor([0])).item() == pytest.approx(math.log(2), rel=1e-5)
    m.u = "entropy"
    assert m(torch.tensor([[math.log(3.0), 0.0]]))["uncertainty"].item() == pytest.approx(math.log(2), rel=1e-5)
    with pytest.raises(InputError, match="'entropy'"):
        build_method("ensemble", 2, 2, u="variance")
