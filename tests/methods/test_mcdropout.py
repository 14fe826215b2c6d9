"""MCDropout (URL App. B.11). Oracles: dropout with p = 0 gives identical members (zero Jensen-Shannon
divergence, CE's entropy); the average of many dropout members' logits tends to the undropped logits."""
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.methods.upstream import build_method


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
