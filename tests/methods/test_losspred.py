"""Losspred (URL App. B.9, eq. 8). Oracles: the loss by hand; the regression target is detached
(the classifier's gradient equals that of CE alone); kappa's gradient is 2 lambda (kappa - CE) / B."""
import pytest
import torch
import torch.nn.functional as F

from hedgekit.methods.upstream import build_method


def test_loss_value_and_detached_target():
    torch.manual_seed(0)
    m = build_method("losspred", 5, 3, embed_dim=4, lam=0.3)
    x, y = torch.randn(4, 5), torch.tensor([0, 1, 2, 0])
    out = m(x)
    kappa = out["uncertainty"]
    kappa.retain_grad()
    ce = F.cross_entropy(out["logits"], y, reduction="none")
    loss = m.loss(out, y)
    assert loss.item() == pytest.approx((ce.mean() + 0.3 * ((kappa - ce) ** 2).mean()).item(), rel=1e-6)
    (g_total,) = torch.autograd.grad(loss, m.classifier.weight, retain_graph=True)
    (g_ce,) = torch.autograd.grad(ce.mean(), m.classifier.weight, retain_graph=True)
    torch.testing.assert_close(g_total, g_ce)  # no gradient from the L2 term into the classifier
    loss.backward()
    torch.testing.assert_close(kappa.grad, 2 * 0.3 * (kappa - ce).detach() / 4)
