"""Ensemble and MCDropout (URL App. B.10-B.11). Oracles: a hand-computed two-member case;
dropout with p = 0 gives identical members (zero Jensen-Shannon divergence, CE's entropy);
the average of many dropout members' logits tends to the undropped logits."""
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


def test_mcdropout_without_dropout_has_zero_disagreement_and_ce_entropy():
    torch.manual_seed(0)
    m = build_method("mcdropout", 5, 3, embed_dim=4, p=0.0, u="js")
    x = torch.randn(6, 5)
    for train in (True, False):
        m.train(train)
        torch.testing.assert_close(m(x)["uncertainty"], torch.zeros(6), atol=1e-6, rtol=0)
    m.u = "entropy"
    p = m.classifier(m.project(x)).softmax(-1)
    torch.testing.assert_close(m(x)["uncertainty"], -(p * p.log()).sum(-1))
    with pytest.raises(InputError, match=r"\[0, 1\)"):
        build_method("mcdropout", 5, 3, p=1.0)


def test_mcdropout_members_average_to_the_undropped_logits_and_eval_is_fixed():
    torch.manual_seed(0)
    m = build_method("mcdropout", 5, 3, embed_dim=4, p=0.25, n_samples=20000).eval()
    x = torch.randn(2, 5)
    out = m(x)
    torch.testing.assert_close(out["member_logits"].mean(1), m.classifier(m.project(x)), atol=0.03, rtol=0)
    torch.testing.assert_close(m(x)["uncertainty"], out["uncertainty"])  # fixed masks: no flicker
    assert out["member_logits"].std(1).min() > 0  # the members differ
