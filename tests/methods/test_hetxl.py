"""HET-XL (URL App. B.7, eq. 6). Oracles: the matrix determinant lemma vs a dense logdet;
the Monte-Carlo covariance of the low-rank noise; without noise the loss is plain CE."""
import math

import pytest
import torch
import torch.nn.functional as F

from hedgekit.methods.hetxl import low_rank_logdet, low_rank_noise
from hedgekit.methods.upstream import build_method


def test_low_rank_logdet_against_dense():
    g = torch.Generator().manual_seed(0)
    v, d = torch.randn(3, 2, 5, generator=g, dtype=torch.float64), torch.rand(3, 5, generator=g, dtype=torch.float64) + 0.1
    dense = v.transpose(1, 2) @ v + torch.diag_embed(d)
    torch.testing.assert_close(low_rank_logdet(v, d), torch.logdet(dense))


def test_noise_covariance_monte_carlo():
    g = torch.Generator().manual_seed(1)
    v, d = torch.randn(1, 1, 3, generator=g, dtype=torch.float64), torch.tensor([[0.5, 1.0, 2.0]], dtype=torch.float64)
    eps = low_rank_noise(v, d, torch.randn(200_000, 1, 4, generator=g, dtype=torch.float64))[:, 0]
    torch.testing.assert_close(eps.T @ eps / len(eps), v[0].T @ v[0] + torch.diag(d[0]), atol=0.05, rtol=0.02)


def test_without_noise_it_is_a_tempered_softmax_classifier():
    torch.manual_seed(0)
    m = build_method("hetxl", 5, 3, embed_dim=4, u="logdet")
    with torch.no_grad():
        m.cov.weight.zero_(); m.cov.bias.zero_(); m.cov.bias[4:].fill_(-30.0)  # V = 0, d = softplus(-30) + 1e-4 ~ 1e-4
    x, y = torch.randn(6, 5), torch.tensor([0, 1, 2, 0, 1, 2])
    out = m(x)
    tau = F.softplus(m.tau_raw) + 1e-3
    assert m.loss(out, y).item() == pytest.approx(F.cross_entropy(m.classifier(m.project(x)) / tau, y).item(), abs=1e-3)
    torch.testing.assert_close(out["uncertainty"], torch.full((6,), 4 * math.log(1e-4)), atol=1e-3, rtol=0)
