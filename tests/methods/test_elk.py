"""ELK (URL App. B.4, eq. 3). Oracle: the loss as a hand-written softmax cross-entropy over the
class kernels, each from scipy's Bessel function (log C_4(k) = log(k / (4 pi^2 I_1(k)))); u = 1 / kappa."""
import math

import pytest
import torch
from scipy import special

from hedgekit.methods.upstream import build_method


def test_elk_loss_is_cross_entropy_over_class_kernels():
    torch.manual_seed(0)
    m = build_method("elk", 5, 3, embed_dim=4, t=8.0)
    out, y = m(torch.randn(4, 5)), torch.tensor([0, 1, 2, 1])
    nu, lam = m.proxies()
    e, kappa = out["embedding"].double(), out["kappa"].double()

    def log_c(k):  # log C_4(k) = log(k / (4 pi^2 I_1(k)))
        return math.log(k / (4 * math.pi**2 * special.iv(1, k)))

    sims = [[log_c(kappa[n].item()) + log_c(lam[c].item()) - log_c((kappa[n] * e[n] + lam[c] * nu[c].double()).norm().item())
             for c in range(3)] for n in range(4)]
    expected = sum(-s[y[n]] + math.log(sum(math.exp(v) for v in s)) for n, s in enumerate(sims)) / 4
    assert m.loss(out, y).item() == pytest.approx(expected, rel=1e-5)
    torch.testing.assert_close(out["uncertainty"], 1 / out["kappa"])
