"""Tests of hedgekit.methods.spe: Stochastic Prototype Embeddings (Scott et al. 2019, eq. 3-9, App. B).

Oracles: closed-form Gaussian products and brute-force density multiplication on grids, numerical
quadrature of eq. 7, the naive sampler with many samples, the PN limit stated under eq. 7, and a second
implementation of the plain samplers written out here, fed the same noise. The fast forms the kit runs are held
equal to the plain ones in tests/methods/fast/test_spe.py.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.pn import PN, pn_log_posterior, pn_prototypes
from hedgekit.methods.spe import gaussian_log_density, gaussian_product, intersection_sampler, naive_sampler, spe_prototypes
from hedgekit.methods.fast.spe import SAMPLERS, SPE, gamma_init, log_posterior_intersection, log_posterior_naive

torch.set_num_threads(1)
DT = torch.float64


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def normal_pdf(x, mu, var):
    return np.exp(-0.5 * (x - mu) ** 2 / var) / np.sqrt(2 * np.pi * var)


# ----------------------------------------------------------------------------- Gaussian products (eq. 4-5)


def test_gaussian_product_matches_hand_computed_closed_form():
    mean = torch.tensor([[0.0, 1.0], [2.0, -1.0], [5.0, 5.0]], dtype=DT)
    var = torch.tensor([[1.0, 4.0], [3.0, 4.0], [2.0, 2.0]], dtype=DT)
    mu, v = gaussian_product(mean, var, torch.tensor([0, 0, 1]))
    # class 0, dim 0: precisions 1 and 1/3 -> var 3/4, mean 3/4 * (0 + 2/3) = 1/2; dim 1: equal var -> mean 0, var 2
    torch.testing.assert_close(v, torch.tensor([[0.75, 2.0], [2.0, 2.0]], dtype=DT))
    torch.testing.assert_close(mu, torch.tensor([[0.5, 0.0], [5.0, 5.0]], dtype=DT))


def test_gaussian_product_matches_brute_force_density_product_1d():
    mean, var = torch.tensor([[-1.0], [0.5], [2.0]], dtype=DT), torch.tensor([[0.5], [2.0], [1.5]], dtype=DT)
    mu, v = gaussian_product(mean, var, torch.zeros(3, dtype=torch.long))
    x = np.linspace(-10, 10, 40001)
    dens = np.prod([normal_pdf(x, m, s) for m, s in zip(mean[:, 0].numpy(), var[:, 0].numpy())], axis=0)
    dens /= np.trapezoid(dens, x)
    grid_mean = np.trapezoid(x * dens, x)
    grid_var = np.trapezoid((x - grid_mean) ** 2 * dens, x)
    assert grid_mean == pytest.approx(mu.item(), abs=1e-6)
    assert grid_var == pytest.approx(v.item(), rel=1e-5)
    np.testing.assert_allclose(dens, normal_pdf(x, mu.item(), v.item()), atol=1e-6)


def test_gaussian_product_matches_brute_force_density_product_2d():
    """Diagonal Gaussians in 2-D: the normalised product of the densities on a grid is N(mu_y, diag sigma_y^2)."""
    mean = torch.tensor([[0.0, 1.0], [1.0, -0.5]], dtype=DT)
    var = torch.tensor([[0.6, 2.0], [1.2, 0.4]], dtype=DT)
    mu, v = gaussian_product(mean, var, torch.tensor([0, 0]))
    g = np.linspace(-6, 6, 601)
    xx, yy = np.meshgrid(g, g, indexing="ij")
    dens = np.ones_like(xx)
    for m, s in zip(mean.numpy(), var.numpy()):
        dens *= normal_pdf(xx, m[0], s[0]) * normal_pdf(yy, m[1], s[1])
    dens /= dens.sum()
    ex, ey = (dens * xx).sum(), (dens * yy).sum()
    np.testing.assert_allclose([ex, ey], mu[0].numpy(), atol=1e-6)
    np.testing.assert_allclose([(dens * (xx - ex) ** 2).sum(), (dens * (yy - ey) ** 2).sum()], v[0].numpy(), rtol=1e-4)
    assert abs((dens * (xx - ex) * (yy - ey)).sum()) < 1e-8  # the product stays diagonal


def test_spe_prototypes_add_sigma_eps_and_downweight_noisy_support():
    support = Embedding.gaussian(torch.tensor([[0.0], [10.0]], dtype=DT), torch.tensor([[0.01], [100.0]], dtype=DT))
    mu, v = spe_prototypes(support, torch.tensor([0, 0]), sigma_eps2=0.5)
    p = torch.tensor([1 / 0.51, 1 / 100.5], dtype=DT)
    torch.testing.assert_close(v, (1 / p.sum()).reshape(1, 1))
    torch.testing.assert_close(mu, (p[1] * 10 / p.sum()).reshape(1, 1))
    assert mu.item() < 0.1  # the confident item dominates; a PN would put the prototype at 5
    assert pn_prototypes(support.mean[:, 0], torch.tensor([0, 0])).item() == 5.0


# ----------------------------------------------------------------------------- class posterior (eq. 6-9)


def eq7_by_quadrature(q_mean, q_var, c_mean, c_var, half_width=6.0, n=401):
    """p(y|x,S) of eq. 7 for one 2-D query, by a Riemann sum on a grid (the oracle)."""
    g = np.linspace(-half_width, half_width, n)
    z = torch.tensor(np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2), dtype=DT)
    log_q = gaussian_log_density(z, q_mean[None], q_var[None])[:, 0]
    post = torch.softmax(gaussian_log_density(z, c_mean, c_var), dim=-1)
    w = torch.softmax(log_q, 0)  # normalised query density on the grid
    return (w[:, None] * post).sum(0)


@pytest.fixture
def posterior_case():
    g = gen(3)
    c_mean = torch.randn(4, 2, generator=g, dtype=DT) * 1.5
    c_var = 0.4 + torch.rand(4, 2, generator=g, dtype=DT) * 0.4  # sigma_hat_y^2
    q_mean = torch.randn(6, 2, generator=g, dtype=DT)
    q_var = 0.05 + torch.rand(6, 2, generator=g, dtype=DT) * 0.3  # < class variances: finite-variance regime
    return q_mean, q_var, c_mean, c_var


def test_naive_and_intersection_samplers_agree_with_quadrature_of_eq7(posterior_case):
    q_mean, q_var, c_mean, c_var = posterior_case
    exact = torch.stack([eq7_by_quadrature(q_mean[i], q_var[i], c_mean, c_var) for i in range(len(q_mean))])
    torch.testing.assert_close(exact.sum(1), torch.ones(len(q_mean), dtype=DT))
    s = 40_000
    for naive_form, intersection_form in [(naive_sampler, intersection_sampler),  # the plain forms
                                          (log_posterior_naive, log_posterior_intersection)]:  # the fast ones
        naive = naive_form(q_mean, q_var, c_mean, c_var, s, gen(1)).exp()
        inter = intersection_form(q_mean, q_var, c_mean, c_var, s, gen(2)).exp()
        # naive: mean of values in [0, 1] -> standard error <= 0.5 / sqrt(s) = 0.0025
        assert (naive - exact).abs().max() < 0.01
        assert (inter - exact).abs().max() < 0.01
        torch.testing.assert_close(naive.sum(1), torch.ones(len(q_mean), dtype=DT))  # naive rows sum to one exactly


def test_intersection_target_only_equals_full_matrix_for_point_queries(posterior_case):
    """With sigma_x^2 = 0, eq. 9 has no randomness: log N(mu_x; mu_y, s_y) - log sum_c N(mu_x; mu_c, s_c)."""
    q_mean, _, c_mean, c_var = posterior_case
    zero = torch.zeros_like(q_mean)
    closed = F.log_softmax(gaussian_log_density(q_mean, c_mean, c_var), -1)
    full = log_posterior_intersection(q_mean, zero, c_mean, c_var, 3, gen())
    naive = log_posterior_naive(q_mean, zero, c_mean, c_var, 3, gen())
    targets = torch.tensor([0, 1, 2, 3, 0, 1])
    tgt = log_posterior_intersection(q_mean, zero, c_mean, c_var, 3, gen(), targets=targets)
    torch.testing.assert_close(full, closed)
    torch.testing.assert_close(naive, closed)
    torch.testing.assert_close(tgt, closed[torch.arange(6), targets])


def test_spe_loss_uses_target_class_and_is_differentiable(posterior_case):
    q_mean, q_var, c_mean, _ = posterior_case
    spe = SPE(n_support=8, dim=2).double()
    support = Embedding.gaussian(c_mean.repeat(2, 1), torch.full((8, 2), 0.1, dtype=DT))
    s_lab = torch.arange(4).repeat(2)
    mean = q_mean.clone().requires_grad_(True)
    query = Embedding.gaussian(mean, q_var)
    y = torch.tensor([0, 1, 2, 3, 0, 1])
    for sampler, n in [("intersection", 1), ("naive", 3)]:
        loss = spe.loss(query, y, support, s_lab, sampler=sampler, n_samples=n, generator=gen())
        grads = torch.autograd.grad(loss, [mean, spe.gamma])
        assert torch.isfinite(loss) and all(torch.isfinite(g).all() for g in grads)
    # many intersection samples: the loss approaches the cross-entropy of the exact posterior
    log_p = spe.log_posterior(query, support, s_lab, sampler="naive", n_samples=40_000, generator=gen(5))
    ce = F.nll_loss(log_p, y)
    loss = spe.loss(query, y, support, s_lab, sampler="intersection", n_samples=40_000, generator=gen(6))
    assert loss.item() == pytest.approx(ce.item(), abs=0.02)


def test_pn_is_the_spe_limit_of_vanishing_variances():
    """Statement under eq. 7: sigma_x^2 -> 0 and equal prototype variances give the PN posterior.

    With all embedding variances 0 and k support items per class, sigma_hat_i^2 = sigma_eps^2, the prototype is
    the support mean, sigma_y^2 = sigma_eps^2 / k and sigma_hat_y^2 = sigma_eps^2 (1 + 1/k) for every class, so
    p(y|x) = softmax(-||mu_x - mu_y||^2 / (2 sigma_hat_y^2)): the PN posterior with temperature 2 sigma_hat_y^2.
    """
    g, k, n_cls = gen(7), 5, 6
    z_support = torch.randn(n_cls * k, 3, generator=g, dtype=DT) * 2
    labels = torch.arange(n_cls).repeat_interleave(k)
    z_query = torch.randn(20, 3, generator=g, dtype=DT) * 2
    spe = SPE(n_support=n_cls * k, dim=3).double()
    eps2 = spe.sigma_eps2.item()
    support, query = Embedding.point(z_support), Embedding.point(z_query)
    mu, var = spe.prototypes(support, labels)
    protos = pn_prototypes(z_support, labels)
    torch.testing.assert_close(mu, protos)
    torch.testing.assert_close(var, torch.full_like(var, eps2 / k))
    pn = pn_log_posterior(z_query, protos, scale=1 / (2 * eps2 * (1 + 1 / k)))
    for sampler in ("naive", "intersection"):
        log_p = spe.log_posterior(query, support, labels, sampler=sampler, n_samples=2, generator=gen())
        torch.testing.assert_close(log_p, pn)
    # tiny but non-zero variances: same argmax as the plain PN (scale 1), posterior within 1e-3
    tiny = Embedding.gaussian(z_query, torch.full_like(z_query, 1e-8))
    support_tiny = Embedding.gaussian(z_support, torch.full_like(z_support, 1e-8))
    log_p = spe.log_posterior(tiny, support_tiny, labels, generator=gen())
    assert torch.equal(log_p.argmax(1), PN().log_posterior(query, support, labels).argmax(1))
    assert (log_p.exp() - pn.exp()).abs().max() < 1e-3


def test_gamma_initialisation_follows_appendix_b():
    assert gamma_init(8, 2) == pytest.approx(8 * 0.01)
    assert gamma_init(3500, 3) == pytest.approx(3500 * 0.01 ** (2 / 3))
    spe = SPE.for_episodes(n_classes=4, k_support=2, dim=2)  # L-shapes: 4 classes x 2 support (App. A.2)
    assert spe.gamma.item() == pytest.approx(0.08)  # gamma itself, no softplus^-1
    assert spe.sigma_eps2.item() == pytest.approx(math.log1p(math.exp(0.08)))
    assert SPE(100, 2, gamma0=0.04).gamma.item() == pytest.approx(100 * 0.04)
    assert isinstance(spe.gamma, nn.Parameter)
    defaults = (spe.train_sampler, spe.train_samples, spe.eval_sampler, spe.eval_samples)
    assert defaults == ("intersection", 1, "naive", 200)


# ----------------------------------------------------------------------------- the plain samplers, written out again


def plain_log_normal(z, mean, var):
    """log N(z; mean_c, diag var_c) for z (..., D): (..., C), written out again."""
    return (-0.5 * (z[..., None, :] - mean) ** 2 / var - 0.5 * torch.log(2 * math.pi * var)).sum(-1)


@pytest.mark.parametrize("targets", [None, [2, 0, 1, 2, 1]])
def test_plain_samplers_equal_a_second_implementation_with_the_same_noise(targets):
    g = gen(13)
    q_mean, q_var = torch.randn(5, 3, generator=g, dtype=DT), 0.1 + torch.rand(5, 3, generator=g, dtype=DT)
    c_mean, c_var = torch.randn(4, 3, generator=g, dtype=DT), 0.3 + torch.rand(4, 3, generator=g, dtype=DT)
    s, n_cls = 6, len(c_mean)
    n_y = n_cls if targets is None else 1
    # naive (sec. 3.2.1): z_s = mu_x + sigma_x eps_s, log 1/S sum_s softmax_y log N(z_s; mu_y, sigma_hat_y^2)
    z = q_mean[:, None] + q_var[:, None].sqrt() * torch.randn(5, s, 3, generator=gen(1), dtype=DT)
    expected = torch.logsumexp(F.log_softmax(plain_log_normal(z, c_mean, c_var), -1), 1) - math.log(s)
    torch.testing.assert_close(naive_sampler(q_mean, q_var, c_mean, c_var, s, gen(1)), expected)
    # intersection (eq. 8-9), in the paper's precision form
    m_x, v_x = q_mean[:, None], q_var[:, None]  # (Q, 1, D)
    idx = torch.arange(n_cls) if targets is None else torch.tensor(targets)[:, None]
    m_y, v_y = c_mean[idx], c_var[idx]  # (C, D) or (Q, 1, D)
    var_xy = 1 / (1 / v_x + 1 / v_y)
    mu_xy = var_xy * (m_x / v_x + m_y / v_y)  # (Q, Y, D)
    z = mu_xy[:, :, None] + var_xy.sqrt()[:, :, None] * torch.randn(5, n_y, s, 3, generator=gen(2), dtype=DT)
    first = (-0.5 * (m_x - m_y) ** 2 / (v_x + v_y) - 0.5 * torch.log(2 * math.pi * (v_x + v_y))).sum(-1)
    second = torch.logsumexp(-torch.logsumexp(plain_log_normal(z, c_mean, c_var), -1), -1) - math.log(s)
    expected = first + second
    got = intersection_sampler(q_mean, q_var, c_mean, c_var, s, gen(2), targets=targets)
    torch.testing.assert_close(got, expected if targets is None else expected[:, 0])


# ----------------------------------------------------------------------------- errors


def test_input_errors():
    """An episode is checked where it enters, by the head `SPE` and the `Embedding`; the eq. 4-9 functions only
    compute. The product of eq. 5 needs variances > 0: the Embedding's are >= 0 and the head adds
    sigma_eps^2 = softplus(gamma) > 0."""
    z = torch.randn(6, 2)
    with pytest.raises(InputError, match="Embedding.var must be non-negative"):
        Embedding.gaussian(z, -torch.ones(6, 2))
    spe = SPE(10, 2)
    support = Embedding.gaussian(z, torch.ones(6, 2))
    with pytest.raises(InputError, match="every class needs at least one support item"):
        spe.prototypes(support, torch.tensor([0, 0, 2, 2, 2, 0]))
    with pytest.raises(InputError, match="support labels must have shape"):
        spe.log_posterior(support, support, torch.arange(5))
    with pytest.raises(InputError, match="sampler must be one of"):
        spe.log_posterior(support, support, torch.arange(6), sampler="exact")
    with pytest.raises(InputError, match="n_samples"):
        spe.log_posterior(support, support, torch.arange(6), n_samples=0)
    with pytest.raises(InputError, match="C = 1"):
        spe.log_posterior(Embedding.mixture(torch.zeros(2, 2, 2), torch.ones(2, 2, 2)), support, torch.arange(6))
    with pytest.raises(InputError, match="built for D = 2"):
        spe.log_posterior(Embedding.point(torch.zeros(2, 3)), support, torch.arange(6))
    with pytest.raises(InputError, match="query label 9 is out of range"):
        spe.loss(support, torch.tensor([0, 9, 0, 0, 0, 0]), support, torch.arange(6))
    with pytest.raises(InputError, match="gamma0"):
        SPE(10, 2, gamma0=0.0)


@pytest.mark.parametrize("n_samples", [0, -1, 2.5, True, None, "200"], ids=repr)
def test_samplers_refuse_bad_numbers_of_samples(n_samples):
    """The number of samples enters through the head, at construction or per call (`check_sampler`; a call's
    None is the head's own number)."""
    support = Embedding.gaussian(torch.zeros(4, 2), torch.ones(4, 2))
    for sampler in SAMPLERS:
        with pytest.raises(InputError, match="n_samples must be an integer >= 1"):
            SPE(4, 2, train_sampler=sampler, train_samples=n_samples)
        if n_samples is not None:
            with pytest.raises(InputError, match="n_samples must be an integer >= 1"):
                SPE(4, 2).log_posterior(support, support, torch.arange(4), sampler=sampler, n_samples=n_samples)

