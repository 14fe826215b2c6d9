"""SNGP (URL App. B.8, eq. 7). Oracles: random Fourier features approximate the RBF kernel
(Monte Carlo over features); the GP variance after exact accumulation equals
phi^T (I + Phi^T Phi)^{-1} phi computed densely; the spectral norm of the projection is 1;
mean field with zero variance is the softmax."""
import math

import torch

from hedgekit.methods.sngp import mean_field_probs, random_features
from hedgekit.methods.upstream import build_method


def test_random_features_approximate_the_rbf_kernel():
    g = torch.Generator().manual_seed(0)
    r, l = 50_000, 1.5
    w, b = torch.randn(r, 3, generator=g, dtype=torch.float64) / l, 2 * math.pi * torch.rand(r, generator=g, dtype=torch.float64)
    h = torch.randn(5, 3, generator=g, dtype=torch.float64)
    phi = random_features(h, w, b)
    rbf = torch.exp(-torch.cdist(h, h) ** 2 / (2 * l * l))
    torch.testing.assert_close(phi @ phi.T, rbf, atol=0.02, rtol=0)


def test_gp_variance_after_exact_accumulation():
    torch.manual_seed(0)
    m = build_method("sngp", 6, 3, embed_dim=4, n_features=32, cov_momentum=1.0)
    batches = [torch.randn(8, 6) for _ in range(3)]
    phis = []
    for x in batches:
        out = m(x)
        m.on_step(x, out, torch.zeros(8, dtype=torch.long))
        phis.append(out["phi"].detach().double())
    m.eval()
    x = torch.randn(5, 6)
    out = m(x)
    big = torch.cat(phis)
    phi = out["phi"].detach().double()
    expected = (phi @ torch.linalg.inv(torch.eye(32, dtype=torch.float64) + big.T @ big) * phi).sum(-1)
    torch.testing.assert_close(out["var"].double(), expected, atol=1e-5, rtol=1e-3)
    m.reset_covariance()
    torch.testing.assert_close(m(x)["var"], out["phi"].pow(2).sum(-1))  # prior: phi^T phi


def test_spectral_norm_and_mean_field():
    torch.manual_seed(0)
    m = build_method("sngp", 20, 3, embed_dim=8)
    with torch.no_grad():
        m.project.parametrizations.weight.original.mul_(50.0)
    for _ in range(30):  # power iteration runs once per training forward
        m(torch.randn(4, 20))
    assert abs(torch.linalg.matrix_norm(m.project.weight.detach(), ord=2).item() - 1.0) < 1e-3
    logits = torch.randn(4, 3)
    torch.testing.assert_close(mean_field_probs(logits, torch.zeros(4)), logits.softmax(-1))
    torch.testing.assert_close(mean_field_probs(logits, torch.full((4,), 8 / math.pi * 3)), (logits / 2).softmax(-1))
