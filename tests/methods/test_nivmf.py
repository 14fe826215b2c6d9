"""nivMF (URL App. B.5, eq. 4). Oracles: the density reduces to the vMF for isotropic K and integrates
to one on the sphere (Monte Carlo over uniform points); with isotropic class proxies the 16-sample
kernel estimate approaches ELK's closed form (within 4 standard errors of the Monte Carlo)."""
import math

import pytest
import torch
import torch.nn.functional as F

from hedgekit.methods.nivmf import nivmf_log_density
from hedgekit.methods.upstream import build_method
from hedgekit.methods.vmf import log_expected_likelihood, sample_vmf, vmf_log_density

D64 = torch.float64


def _unit(*shape, seed=0):
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=D64), dim=-1)


def test_nivmf_isotropic_is_vmf_and_anisotropic_is_normalised():
    z, nu = _unit(6, 3, seed=4), _unit(1, 3, seed=5)
    k = torch.full((1, 3), 2.5, dtype=D64)
    torch.testing.assert_close(nivmf_log_density(z, nu, k)[:, 0], vmf_log_density(z, nu[0], torch.tensor(2.5, dtype=D64)))
    # E_{z ~ uniform(S^2)}[nivMF(z)] * area(S^2) = 1
    u = _unit(400_000, 3, seed=6)
    k = torch.tensor([[0.5, 3.0, 8.0]], dtype=D64)
    mass = nivmf_log_density(u, nu, k).exp().mean() * 4 * math.pi
    assert mass.item() == pytest.approx(1.0, abs=0.02)


def test_nivmf_monte_carlo_elk_approaches_the_closed_form_for_isotropic_classes():
    m = build_method("nivmf", 4, 3, embed_dim=4, t=2.0).double()
    with torch.no_grad():
        m.proxies.scale_raw.fill_(0.3)  # all axes equal: an isotropic vMF with lam = 2 softplus(0.3)
    mu, kappa = _unit(2, 4, seed=7), torch.tensor([1.5, 6.0], dtype=D64)
    s = sample_vmf(mu, kappa, 50_000, generator=torch.Generator().manual_seed(8))
    nu, lam = m.proxies()
    closed = log_expected_likelihood(mu @ nu.T, kappa[:, None], lam[:, 0], 4)
    lik = nivmf_log_density(s, nu, lam).exp()  # (n, B, C)
    rel_se = lik.std(0) / lik.mean(0) / math.sqrt(len(lik))
    assert ((m.approx_elk_sim(s) - closed).abs() < 4 * rel_se).all()
