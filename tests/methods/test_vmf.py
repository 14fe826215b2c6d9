"""vMF pieces of the URL sphere methods (hedgekit.methods.vmf).

Oracles: the closed form C_3(kappa) = kappa / (4 pi sinh kappa), numerical integration of the
density over S^{D-1} (via the marginal of w = mu^T z), scipy's Bessel functions, finite
differences for the gradients, Monte Carlo moments of the sampler, and Monte Carlo of the expected
likelihood kernel E_{z ~ vMF(mu, kappa)}[vMF(z; nu, lam)]."""
import math

import numpy as np
import pytest
import torch
from scipy import integrate, special

from hedgekit.errors import InputError
from hedgekit.methods.vmf import (log_bessel_iv, log_expected_likelihood, log_vmf_normalizer, mean_resultant_length, sample_vmf,
                                  vmf_log_density)


def _sphere_area(d):
    return 2 * math.pi ** (d / 2) / math.gamma(d / 2)


def test_normalizer_closed_form_in_3d():
    k = torch.tensor([0.1, 1.0, 7.0, 300.0], dtype=torch.float64)
    expected = k.log() - math.log(4 * math.pi) - (k + torch.log(-torch.expm1(-2 * k)) - math.log(2))  # log(k / (4 pi sinh k))
    torch.testing.assert_close(log_vmf_normalizer(k, 3), expected)


@pytest.mark.parametrize("d,kappa", [(8, 3.0), (16, 20.0), (5, 0.5)])
def test_density_integrates_to_one(d, kappa):
    # integral over S^{D-1} = area(S^{D-2}) * int_{-1}^{1} C exp(kappa w) (1 - w^2)^{(D-3)/2} dw
    c = math.exp(log_vmf_normalizer(torch.tensor(kappa, dtype=torch.float64), d).item())
    mass, _ = integrate.quad(lambda w: c * math.exp(kappa * w) * (1 - w * w) ** ((d - 3) / 2), -1, 1)
    assert mass * _sphere_area(d - 1) == pytest.approx(1.0, rel=1e-7)


def test_log_bessel_matches_scipy_and_its_gradient_finite_differences():
    x = torch.tensor([0.05, 2.0, 40.0, 2000.0], dtype=torch.float64, requires_grad=True)
    expected = [math.log(special.iv(7, v)) for v in (0.05, 2.0, 40.0)] + [math.log(special.ive(7, 2000.0)) + 2000.0]
    torch.testing.assert_close(log_bessel_iv(7, x).detach(), torch.tensor(expected, dtype=torch.float64))
    for d in (8, 16):  # scipy's exact branch (v = 3) and the Debye branch (v = 7)
        assert torch.autograd.gradcheck(lambda t: log_vmf_normalizer(t, d), (x,))
    with pytest.raises(InputError, match="x > 0"):
        log_bessel_iv(1, torch.tensor([0.0]))


@pytest.mark.parametrize("v", [7.0, 7.5, 15.0, 31.5])
def test_debye_branch_matches_scipy_value_and_derivative(v):
    x = torch.logspace(-3, 5, 400, dtype=torch.float64, requires_grad=True)
    y = log_bessel_iv(v, x)
    xn = x.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), np.log(special.ive(v, xn)) + xn, rtol=0, atol=2e-6)
    (grad,) = torch.autograd.grad(y.sum(), x)  # d/dx log I_v = I_{v+1} / I_v + v / x
    np.testing.assert_allclose(grad.numpy(), special.ive(v + 1, xn) / special.ive(v, xn) + v / xn, rtol=1e-4)


def test_log_density_against_3d_formula():
    mu = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    z = torch.tensor([[0.6, 0.0, 0.8]], dtype=torch.float64)
    k = torch.tensor([2.0], dtype=torch.float64)
    expected = math.log(2.0 / (4 * math.pi * math.sinh(2.0))) + 2.0 * 0.8
    assert vmf_log_density(z, mu, k).item() == pytest.approx(expected, rel=1e-12)


def test_sampler_moments_and_gradient():
    g = torch.Generator().manual_seed(0)
    d = 16
    mu = torch.nn.functional.normalize(torch.randn(3, d, generator=g, dtype=torch.float64), dim=-1)
    kappa = torch.tensor([1.0, 20.0, 500.0], dtype=torch.float64, requires_grad=True)
    s = sample_vmf(mu, kappa, 20000, generator=g)  # (n, B, D)
    torch.testing.assert_close(s.norm(dim=-1), torch.ones(20000, 3, dtype=torch.float64))
    w = (s * mu).sum(-1).mean(0)
    # oracle for E[w]: numerical integration of the marginal density of w
    for i, k in enumerate(kappa.tolist()):
        dens = lambda t: math.exp(k * (t - 1)) * (1 - t * t) ** ((d - 3) / 2)
        lo = max(-1.0, 1 - 50 / k)  # the density below lo is < e^-50 of its peak
        ew = integrate.quad(lambda t: t * dens(t), lo, 1)[0] / integrate.quad(dens, lo, 1)[0]
        assert w[i].item() == pytest.approx(ew, abs=4e-3)
        assert mean_resultant_length(kappa[i:i + 1].detach(), d).item() == pytest.approx(ew, rel=1e-6)
    # the component orthogonal to mu is isotropic: its mean is ~0
    orth = s - (s * mu).sum(-1, keepdim=True) * mu
    assert orth.mean(0).abs().max() < 0.02
    # reparametrised gradient of E[w] w.r.t. kappa vs a finite difference of A_D(kappa)
    w.sum().backward()
    eps = 1e-4
    fd = (mean_resultant_length(kappa.detach() + eps, d) - mean_resultant_length(kappa.detach() - eps, d)) / (2 * eps)
    torch.testing.assert_close(kappa.grad, fd, rtol=0.1, atol=2e-5)


def test_sampler_is_finite_for_extreme_concentrations():
    mu = torch.nn.functional.normalize(torch.randn(3, 16), dim=-1)
    kappa = torch.tensor([1e-3, 1e4, 1e9], requires_grad=True)
    s = sample_vmf(mu, kappa, 64, generator=torch.Generator().manual_seed(0))
    (s * torch.randn(16)).sum().backward()
    assert torch.isfinite(s).all() and torch.isfinite(kappa.grad).all()
    assert (s[:, 2] - mu[2]).abs().max() < 1e-3  # kappa = 1e9 samples sit on the mean


def test_sampler_errors():
    with pytest.raises(InputError, match="kappa"):
        sample_vmf(torch.ones(2, 3), torch.ones(3), 4)
    with pytest.raises(InputError, match="> 0"):
        sample_vmf(torch.ones(2, 3), torch.zeros(2), 4)


def test_expected_likelihood_kernel_against_monte_carlo():
    g = torch.Generator().manual_seed(1)
    mu, nu = (torch.nn.functional.normalize(torch.randn(2, 5, generator=g, dtype=torch.float64), dim=-1) for _ in range(2))
    kappa, lam = torch.tensor([3.0, 10.0], dtype=torch.float64), torch.tensor([4.0, 2.0], dtype=torch.float64)
    z = sample_vmf(mu, kappa, 50_000, generator=torch.Generator().manual_seed(3))  # (n, 2, 5)
    lik = vmf_log_density(z, nu, lam).exp()
    rel_se = lik.std(0) / lik.mean(0) / math.sqrt(len(lik))  # standard error of log(mean), to first order
    closed = log_expected_likelihood((mu * nu).sum(-1), kappa, lam, 5)
    assert ((closed - lik.mean(0).log()).abs() < 4 * rel_se).all()
