"""Tests of PN / SPE prototypes (Scott et al. 2019, eq. 3-9, App. B), episodes and episodic training.

Oracles: closed-form Gaussian products and brute-force density multiplication on grids, numerical
quadrature of eq. 7, the naive sampler with many samples, the PN limit stated under eq. 7,
hand-built embeddings whose episode accuracy is known exactly.
"""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hedgekit.embedding import Embedding
from hedgekit.data.samplers import EpisodeSampler
from hedgekit.evaluation.episodes import evaluate_episodes
from hedgekit.evaluation.embedded import EmbeddedSet, embed_set
from hedgekit.training.episodic import EpisodicConfig, fit_episodic
from hedgekit.errors import InputError
from hedgekit.methods.prototypes import (PN, SPE, gamma_init, gaussian_log_density, gaussian_product, log_posterior_intersection, log_posterior_naive, pn_log_posterior, pn_prototypes, spe_prototypes)
from hedgekit.nets import INIT_VAR, EmbeddingNet, GaussianHead, PointHead, SoftMatch
from hedgekit.nets.backbones import ConvBody
from hedgekit.nets.embedder import build_conv_model, build_lshape_model, conv_model_from_config

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
    naive = log_posterior_naive(q_mean, q_var, c_mean, c_var, s, gen(1)).exp()
    inter = log_posterior_intersection(q_mean, q_var, c_mean, c_var, s, gen(2)).exp()
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


# ----------------------------------------------------------------------------- episodes


def test_episode_sampler_counts_disjointness_and_determinism():
    labels = np.repeat(np.array([3, 7, 11, 20, 42]), [9, 12, 10, 15, 8])
    sampler = EpisodeSampler(labels, n_classes=3, k_support=4, query_per_class=4, seed=5)
    for _ in range(50):
        ep = sampler.sample()
        assert len(ep.classes) == 3 and len(set(ep.classes)) == 3
        assert len(ep.support) == 12 and len(ep.query) == 12
        assert not set(ep.support) & set(ep.query)  # disjoint
        assert len(set(ep.support)) == 12 and len(set(ep.query)) == 12
        np.testing.assert_array_equal(np.bincount(ep.support_labels), [4, 4, 4])
        np.testing.assert_array_equal(np.bincount(ep.query_labels), [4, 4, 4])
        np.testing.assert_array_equal(labels[ep.support], ep.classes[ep.support_labels])
        np.testing.assert_array_equal(labels[ep.query], ep.classes[ep.query_labels])
    a = [EpisodeSampler(labels, 3, 4, 4, seed=1).sample() for _ in range(2)]
    b = EpisodeSampler(labels, 3, 4, 4, seed=1)
    c = EpisodeSampler(labels, 3, 4, 4, seed=2)
    e1, e2 = b.sample(), c.sample()
    np.testing.assert_array_equal(a[0].support, e1.support)
    np.testing.assert_array_equal(a[0].query, a[1].query)
    assert not (np.array_equal(e1.support, e2.support) and np.array_equal(e1.classes, e2.classes))
    full = EpisodeSampler(labels, None, 2, 3).sample()  # all classes
    np.testing.assert_array_equal(full.classes, [3, 7, 11, 20, 42])


def swapped_twin_set(n_cls=5, per_class=12, seed=0):
    """Clean embeddings: tight clusters at class centres. Corrupt twin: each class sits at the *next* class's
    centre. So clean/clean and corrupt/corrupt episodes are 100% right and mixed ones 0%."""
    g = gen(seed)
    centres = torch.arange(n_cls, dtype=torch.float32)[:, None] * torch.tensor([[10.0, 0.0]])
    labels = np.repeat(np.arange(n_cls), per_class)
    noise = torch.randn(len(labels), 2, generator=g) * 0.1
    clean = centres[labels] + noise
    corrupt = centres[(labels + 1) % n_cls] + noise
    var = torch.full_like(clean, 0.05)
    return EmbeddedSet(Embedding.gaussian(clean, var), Embedding.gaussian(corrupt, var), labels)


@pytest.mark.parametrize("head", [None, SPE(20, 2)])
def test_evaluate_episodes_selects_clean_and_corrupt_twins(head):
    data = swapped_twin_set()
    kw = dict(n_episodes=20, k_support=4, query_per_class=3, n_samples=20)
    assert evaluate_episodes(None, head, data, **kw)[0] == 1.0
    assert evaluate_episodes(None, head, data, support_corrupt=True, query_corrupt=True, **kw)[0] == 1.0
    assert evaluate_episodes(None, head, data, support_corrupt=True, **kw)[0] == 0.0
    assert evaluate_episodes(None, head, data, query_corrupt=True, **kw)[0] == 0.0


def test_evaluate_episodes_is_deterministic_and_reports_every_episode():
    labels = np.repeat(np.arange(6), 12)
    mean = torch.randn(len(labels), 2, generator=gen(1)) + torch.tensor(labels, dtype=torch.float32)[:, None] * 0.5
    noisy = EmbeddedSet(Embedding.gaussian(mean, torch.full_like(mean, 0.3)), None, labels)  # overlapping classes
    spe = SPE(20, 2)
    r1 = evaluate_episodes(None, spe, noisy, n_episodes=30, n_classes=4, k_support=2, query_per_class=5, seed=3)
    r2 = evaluate_episodes(None, spe, noisy, n_episodes=30, n_classes=4, k_support=2, query_per_class=5, seed=3)
    r3 = evaluate_episodes(None, spe, noisy, n_episodes=30, n_classes=4, k_support=2, query_per_class=5, seed=4)
    assert r1[0] == r2[0] and np.array_equal(r1[2], r2[2]) and not np.array_equal(r1[2], r3[2])
    assert r1[2].shape == (30,) and r1[0] == pytest.approx(r1[2].mean()) and r1[1] == pytest.approx(r1[2].std())
    assert set(np.round(r1[2] * 20).astype(int)) <= set(range(21))  # 4 classes x 5 queries per episode


# ----------------------------------------------------------------------------- models and training


class TinyMLP(nn.Module):
    def __init__(self, features=10, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU())
        self.out_features = hidden

    def forward(self, x):
        return self.net(x)


def tiny_model(kind, features=10, dim=2):
    body = TinyMLP(features)
    if kind == "point":
        head = PointHead(body.out_features, dim)
    else:
        head = GaussianHead(body.out_features, dim, 1, INIT_VAR)
    return EmbeddingNet(body, head, SoftMatch(), dict(kind=kind, in_channels=1, height=1, width=features))


def blobs(n_per_class, n_cls=12, features=10, seed=0, centre_seed=0):
    centres = np.random.default_rng(centre_seed).normal(0, 1.0, (n_cls, features))
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_cls), n_per_class)
    x = centres[labels] + rng.normal(0, 0.6, (len(labels), features))
    corrupt = x.copy()
    corrupt[:, : features // 2] = 0  # "occlude" half of the features
    # squashed into [0, 1]: EmbeddingNet takes images (pixels in [0, 1]) only
    as_img = lambda a: torch.sigmoid(torch.tensor(a, dtype=torch.float32)).reshape(len(a), 1, 1, features)
    return SimpleNamespace(images=as_img(x), corrupt=as_img(corrupt), labels=labels)


@pytest.mark.parametrize("kind, precision", [("pn", "float32"), ("spe", "float32"), ("spe", "bfloat16")])
def test_tiny_episodic_training_beats_chance(kind, precision):
    train, test = blobs(40, seed=1), blobs(30, seed=2)
    model = tiny_model("point" if kind == "pn" else "hib")
    cfg = EpisodicConfig(steps=300, n_classes=8, k_support=3, query_per_class=3, lr=3e-3, log_every=100,
                         precision=precision)
    head = SPE.for_episodes(cfg.n_classes, cfg.k_support, 2) if kind == "spe" else None
    gamma0 = None if head is None else head.gamma.item()
    body_dtypes = set()
    hook = model.body.register_forward_hook(lambda module, inputs, output: body_dtypes.add(output.dtype))
    hist = fit_episodic(model, head, train.images, torch.tensor(train.labels), cfg, seed=0, progress=False)
    hook.remove()
    assert body_dtypes == {getattr(torch, precision)}  # the body ran in the precision asked for
    assert hist.rows[-1]["loss"] < hist.rows[0]["loss"] and hist.seconds > 0
    if head is not None:
        assert head.gamma.item() != gamma0 and "sigma_eps2" in hist.rows[-1]  # sigma_eps is learned
    data = embed_set(model, test, eta=False)
    acc, _, _ = evaluate_episodes(None, head, data, n_episodes=50, k_support=5, query_per_class=10, n_samples=50)
    assert acc > 0.6  # 12-way: chance is 0.083
    acc_corrupt_query, _, _ = evaluate_episodes(None, head, data, n_episodes=50, k_support=5, query_per_class=10,
                                                query_corrupt=True, n_samples=50)
    assert acc_corrupt_query < acc


def test_fit_episodic_is_deterministic_for_a_seed():
    train = blobs(20, n_cls=6, seed=1)
    cfg = EpisodicConfig(steps=20, n_classes=4, k_support=2, query_per_class=2, log_every=5)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)  # same initial weights
        model, head = tiny_model("hib"), SPE(8, 2)
        runs.append(fit_episodic(model, head, train.images, train.labels, cfg, seed=4, progress=False).rows)
    assert [r["loss"] for r in runs[0]] == [r["loss"] for r in runs[1]]


def test_conv_body_shapes_init_and_config_rebuild():
    body = ConvBody(3, 64, 64, blocks=5)
    assert body.out_features == 64 * 2 * 2
    conv = body.features[0]
    assert conv.weight.std().item() == pytest.approx(math.sqrt(2 / 27), rel=0.15)  # He: sqrt(2 / fan_in)
    assert conv.bias.abs().max().item() <= 1 / math.sqrt(27)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in body.modules()) == 5
    model = build_lshape_model("hib", dim=2)
    emb = model(torch.rand(4, 3, 64, 64))
    assert emb.mean.shape == (4, 1, 2) and (emb.var > 0).all()
    again = conv_model_from_config(model.config)
    again.load_state_dict(model.state_dict())
    assert again.config == model.config and model.config["body"] == "conv"
    omniglot = build_conv_model("point", 2, in_channels=1, height=28, width=28, blocks=3)
    assert omniglot.body.out_features == 576 and omniglot(torch.rand(2, 1, 28, 28)).is_point


# ----------------------------------------------------------------------------- errors


def test_input_errors():
    z = torch.randn(6, 2)
    with pytest.raises(InputError, match="at least one support item"):
        pn_prototypes(z, torch.tensor([0, 0, 2, 2, 2, 0]))
    with pytest.raises(InputError, match="out of range"):
        pn_prototypes(z, torch.tensor([0, 1, 2, 0, 1, 2]), n_classes=2)
    with pytest.raises(InputError, match="shape"):
        pn_prototypes(z, torch.tensor([0, 1]))
    with pytest.raises(InputError, match="NaN"):
        pn_prototypes(torch.full((2, 2), float("nan")), torch.tensor([0, 1]))
    with pytest.raises(InputError, match="integers"):
        pn_prototypes(z, torch.zeros(6))
    with pytest.raises(InputError, match="strictly positive"):
        gaussian_product(z, torch.zeros(6, 2), torch.arange(6))
    spe = SPE(10, 2)
    support = Embedding.gaussian(z, torch.ones(6, 2))
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
    with pytest.raises(InputError, match="too few instances"):
        EpisodeSampler(np.repeat([0, 1, 2], [10, 10, 3]), n_classes=3, k_support=2, query_per_class=2)
    with pytest.raises(InputError, match="n_classes must be in"):
        EpisodeSampler(np.repeat([0, 1], 10), n_classes=3)
    no_twin = EmbeddedSet(support, None, np.arange(6) % 2)
    with pytest.raises(InputError, match="no corrupt twin"):
        evaluate_episodes(None, None, no_twin, n_episodes=1, k_support=1, query_per_class=1, query_corrupt=True)
    with pytest.raises(InputError, match="sampler must be"):
        EpisodicConfig(sampler="gibbs")
    with pytest.raises(InputError, match="labels"):
        fit_episodic(tiny_model("point"), None, torch.zeros(4, 1, 1, 10), np.zeros(3, dtype=int), progress=False)
    with pytest.raises(InputError, match="shrink"):
        ConvBody(1, 28, 28, blocks=5)


@pytest.mark.parametrize("n_samples", [0, -1, 2.5, True, None, "200"], ids=repr)
def test_samplers_refuse_bad_numbers_of_samples(n_samples):
    mean, var = torch.zeros(3, 2), torch.ones(3, 2)
    with pytest.raises(InputError, match="n_samples must be an integer >= 1"):
        log_posterior_naive(mean, var, torch.zeros(4, 2), torch.ones(4, 2), n_samples)
    with pytest.raises(InputError, match="n_samples must be an integer >= 1"):
        log_posterior_intersection(mean, var, torch.zeros(4, 2), torch.ones(4, 2), n_samples)


def test_samplers_refuse_more_samples_than_memory_before_allocating():
    mean, var = torch.zeros(3, 2), torch.ones(3, 2)
    for fn in (log_posterior_naive, log_posterior_intersection):
        with pytest.raises(InputError, match=r"one query would take .* TB, .*fewer samples per query"):
            fn(mean, var, torch.zeros(4, 2), torch.ones(4, 2), 10**12)
