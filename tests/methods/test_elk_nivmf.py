"""ELK and nivMF (URL App. B.4-B.5). Oracles: Monte Carlo of the expected likelihood kernel
E_{z ~ vMF(mu, kappa)}[vMF(z; nu, lam)]; the nivMF density integrating to one on the sphere
(Monte Carlo over uniform points) and reducing to the vMF for isotropic K; ELK's loss as a
hand-written softmax cross-entropy."""
import math

import pytest
import torch
import torch.nn.functional as F
from scipy import special

from hedgekit.methods.nivmf import nivmf_log_density
from hedgekit.methods.upstream import build_method
from hedgekit.methods.vmf import log_expected_likelihood, sample_vmf, vmf_log_density

D64 = torch.float64


def _unit(*shape, seed=0):
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=D64), dim=-1)


def test_expected_likelihood_kernel_against_monte_carlo():
    mu, nu = _unit(2, 5, seed=1), _unit(2, 5, seed=2)
    kappa, lam = torch.tensor([3.0, 10.0], dtype=D64), torch.tensor([4.0, 2.0], dtype=D64)
    z = sample_vmf(mu, kappa, 50_000, generator=torch.Generator().manual_seed(3))  # (n, 2, 5)
    lik = vmf_log_density(z, nu, lam).exp()
    rel_se = lik.std(0) / lik.mean(0) / math.sqrt(len(lik))  # standard error of log(mean), to first order
    closed = log_expected_likelihood((mu * nu).sum(-1), kappa, lam, 5)
    assert ((closed - lik.mean(0).log()).abs() < 4 * rel_se).all()


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
