"""Oracle tests of hedgekit.methods (HIB eq. 1, 3, 5, 8; KL term; batch samplers).

Oracles: closed forms, 200k-sample Monte Carlo, scipy numerical integration,
hand-computed sigmoids, and naive double loops over sample pairs / batch pairs."""
import math
import numpy as np
import pytest
import torch
from scipy import integrate
from hedgekit.checks import deferred_value_checks
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods import (hard_contrastive, hard_contrastive_all_pairs, hib_batch_loss, hib_pair_loss, kl_to_standard_normal, log_match, soft_contrastive)
from hedgekit.methods.hib import all_pairs_mean_nll
from hedgekit.nets import SoftMatch


def sig(t: float) -> float:
    return 1.0 / (1.0 + math.exp(-t))


def npdf(x: float, m: float, s: float) -> float:
    return math.exp(-0.5 * ((x - m) / s) ** 2) / (s * math.sqrt(2 * math.pi))


def _match(a=2.0, b=1.0) -> SoftMatch:
    """SoftMatch in float64 with a_raw = softplus^{-1}(a) and b set in double precision (exact to ~1e-16)."""
    m = SoftMatch(a, b).double()
    with torch.no_grad():
        m.a_raw.fill_(math.log(math.expm1(a)))
        m.b.fill_(b)
    return m


# --------------------------------------------------------------------------- KL term
def test_kl_vs_monte_carlo_random_diagonal_gaussians():
    """KL(q || N(0,I)) = E_q[log q(z) - log p(z)], estimated with 200k samples."""
    g = torch.Generator().manual_seed(0)
    mu = torch.randn(4, 3, generator=g, dtype=torch.float64)
    var = 0.1 + 2 * torch.rand(4, 3, generator=g, dtype=torch.float64)
    kl = kl_to_standard_normal(Embedding.gaussian(mu, var))
    n = 200_000
    z = mu[:, None] + var.sqrt()[:, None] * torch.randn(4, n, 3, generator=g, dtype=torch.float64)
    log_q = (-0.5 * ((z - mu[:, None]) ** 2 / var[:, None] + var[:, None].log() + math.log(2 * math.pi))).sum(-1)
    log_p = (-0.5 * (z**2 + math.log(2 * math.pi))).sum(-1)
    ratio = log_q - log_p
    mc, se = ratio.mean(1), ratio.std(1) / math.sqrt(n)
    assert kl.shape == (4,)
    assert ((kl - mc).abs() < 5 * se).all(), (kl, mc, se)
    # and the closed form written out
    assert torch.allclose(kl, 0.5 * (var + mu**2 - 1 - var.log()).sum(-1))


def test_kl_zero_for_standard_normal_and_positive_otherwise():
    assert torch.equal(kl_to_standard_normal(Embedding.gaussian(torch.zeros(3, 5), torch.ones(3, 5))), torch.zeros(3))
    kl = kl_to_standard_normal(Embedding.gaussian(torch.tensor([[0.1, 0.0]]), torch.tensor([[1.0, 0.9]])))
    assert (kl > 0).all()


def test_kl_mixture_is_weighted_component_kl_and_upper_bound():
    """Mixtures: sum_c w_c KL_c >= KL(mixture || N(0,I)) (convexity), checked against Monte Carlo."""
    mean = torch.tensor([[[-1.0, 0.5], [1.5, 0.0]]], dtype=torch.float64)
    var = torch.tensor([[[0.3, 0.8], [0.5, 0.2]]], dtype=torch.float64)
    w = torch.tensor([[0.4, 0.6]], dtype=torch.float64)
    e = Embedding.mixture(mean, var, w)
    kl_c = 0.5 * (var + mean**2 - 1 - var.log()).sum(-1)
    assert torch.allclose(kl_to_standard_normal(e), (w * kl_c).sum(-1))
    # Monte-Carlo KL of the mixture itself
    n = 200_000
    normal = torch.distributions
    mix = normal.MixtureSameFamily(normal.Categorical(w[0]),
                                   normal.Independent(normal.Normal(mean[0], var[0].sqrt()), 1))
    torch.manual_seed(0)
    z = mix.sample((n,))
    std = normal.Independent(normal.Normal(torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)), 1)
    mc = (mix.log_prob(z) - std.log_prob(z)).mean()
    assert mc < kl_to_standard_normal(e)[0]


def test_kl_rejects_point_embeddings():
    """A known point embedding (stochastic=False) always; unknown (None) with a zero variance only where values
    are read: inside `deferred_value_checks` the zero gives KL = inf instead, and the log step catches it."""
    with pytest.raises(InputError, match="strictly positive variances"):
        kl_to_standard_normal(Embedding.point(torch.zeros(2, 2)))
    unknown = Embedding.mixture(torch.zeros(1, 1, 2), torch.tensor([[[1.0, 0.0]]]))
    assert unknown.stochastic is None
    with pytest.raises(InputError, match="strictly positive variances"):
        kl_to_standard_normal(unknown)
    with deferred_value_checks():
        assert kl_to_standard_normal(unknown).item() == math.inf
        with pytest.raises(InputError, match="strictly positive variances"):
            kl_to_standard_normal(Embedding.point(torch.zeros(2, 2)))  # known without reading a value


# --------------------------------------------------------------------------- eq. 1 and eq. 3
def test_hard_contrastive_hand_case():
    # distances 5 (match), 1 and 3 (non-match), margin 2: losses 25, (2-1)^2 = 1, 0
    z1 = torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    z2 = torch.tensor([[3.0, 4.0], [1.0, 2.0], [0.0, 3.0]])
    same = torch.tensor([True, False, False])
    assert hard_contrastive(z1, z2, same, margin=2.0).item() == pytest.approx((25 + 1 + 0) / 3)
    # a match at distance 0 costs nothing; non-match at 0 costs M^2
    assert hard_contrastive(z1[:1], z1[:1], torch.tensor([True])).item() == 0
    assert hard_contrastive(z1[:1], z1[:1], torch.tensor([False]), margin=1.5).item() == pytest.approx(2.25)


def test_hard_contrastive_all_pairs_matches_a_loop_over_pairs():
    """Naive oracle: every pair i < j, eq. 1 by hand, matches and non-matches averaged separately then halved."""
    g = torch.Generator().manual_seed(0)
    z, y, margin = torch.randn(7, 3, generator=g), torch.tensor([0, 1, 0, 2, 1, 0, 2]), 1.7
    pos, neg = [], []
    for i in range(7):
        for j in range(i + 1, 7):
            d = float(((z[i] - z[j]) ** 2).sum().sqrt())
            (pos if y[i] == y[j] else neg).append(d**2 if y[i] == y[j] else max(margin - d, 0.0) ** 2)
    want = 0.5 * (sum(pos) / len(pos) + sum(neg) / len(neg))
    assert hard_contrastive_all_pairs(z, y, margin).item() == pytest.approx(want, rel=1e-5)


def test_soft_contrastive_hand_case():
    """Eq. 2-3 with a = 2, b = 1 and distances 5, 1, 0.5, 2 written out with math.exp."""
    a, b = 2.0, 1.0
    m = _match(a, b)
    assert m.a.item() == pytest.approx(a, rel=1e-14) and m.b.item() == b
    z1 = torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [2.0, 2.0]], dtype=torch.float64)
    z2 = torch.tensor([[3.0, 4.0], [1.0, 2.0], [0.0, 0.5], [2.0, 0.0]], dtype=torch.float64)
    same = torch.tensor([True, True, False, False])
    d = [5.0, 1.0, 0.5, 2.0]
    expected = [-math.log(sig(-a * d[0] + b)), -math.log(sig(-a * d[1] + b)),
                -math.log(1 - sig(-a * d[2] + b)), -math.log(1 - sig(-a * d[3] + b))]
    got = soft_contrastive(z1, z2, same, m)
    assert got.item() == pytest.approx(sum(expected) / 4, rel=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_soft_contrastive_stable_for_large_distances(dtype):
    m = _match(5.0, 0.0).to(dtype)
    z1 = torch.zeros(1, 1, dtype=dtype)
    # -log sigmoid(-75) = 75 + log(1 + e^-75) ~ 75: no log(0) in float32 either
    z2 = torch.full((1, 1), 15.0, dtype=dtype)
    assert soft_contrastive(z1, z2, torch.tensor([True]), m).item() == pytest.approx(75.0, rel=1e-5)
    assert soft_contrastive(z1, z2, torch.tensor([False]), m).item() == pytest.approx(0.0, abs=1e-12)
    # far beyond float32 sigmoid range: still finite (never inf / NaN)
    z_far = torch.full((1, 1), 1000.0, dtype=dtype)
    for same in (True, False):
        assert math.isfinite(soft_contrastive(z1, z_far, torch.tensor([same]), m).item())


def test_soft_contrastive_gradients_reach_a_and_b():
    m = SoftMatch(2.0, 1.0)
    z1 = torch.randn(6, 2, requires_grad=True)
    soft_contrastive(z1, torch.randn(6, 2), torch.tensor([1, 0, 1, 0, 1, 0]).bool(), m).backward()
    assert m.a_raw.grad is not None and m.b.grad is not None and z1.grad is not None


# --------------------------------------------------------------------------- eq. 5: log of the mean
def test_log_match_is_log_of_mean_over_sample_pairs():
    g = torch.Generator().manual_seed(0)
    d = 2 * torch.rand(3, 4, 5, generator=g, dtype=torch.float64)  # (B, K1, K2) sample distances
    a, b = 1.7, 0.8
    log_p, log_q = log_match(d, _match(a, b), (-2, -1))
    for i in range(3):
        p = 0.0
        for k1 in range(4):
            for k2 in range(5):
                p += sig(-a * d[i, k1, k2].item() + b)
        p /= 20
        assert log_p[i].item() == pytest.approx(math.log(p), rel=1e-12)
        assert log_q[i].item() == pytest.approx(math.log(1 - p), rel=1e-12)
        mean_of_logs = sum(math.log(sig(-a * d[i, k1, k2].item() + b)) for k1 in range(4) for k2 in range(5)) / 20
        # Jensen: the log of the mean is strictly above the mean of the logs for non-constant d
        assert log_p[i].item() > mean_of_logs + 1e-3


def test_log_match_other_sample_dims_and_single_sample():
    m = _match(2.0, 2.0)
    d = torch.rand(2, 3, 4, 5, dtype=torch.float64)  # samples along dims 1 and 3, as in hib_batch_loss
    log_p, _ = log_match(d, m, (1, 3))
    naive = torch.sigmoid(-2.0 * d + 2.0).mean(dim=(1, 3)).log()
    assert torch.allclose(log_p, naive, rtol=1e-12)
    d1 = torch.tensor([[0.3]], dtype=torch.float64)
    log_p, log_q = log_match(d1, m, (-1,))
    assert log_p.item() == pytest.approx(math.log(sig(-0.6 + 2)))
    assert log_q.item() == pytest.approx(math.log(1 - sig(-0.6 + 2)))


# --------------------------------------------------------------------------- eq. 8
def test_hib_pair_loss_point_embeddings_equals_soft_contrastive():
    g = torch.Generator().manual_seed(1)
    z1, z2 = torch.randn(8, 3, generator=g), torch.randn(8, 3, generator=g)
    same = torch.tensor([1, 0, 1, 1, 0, 0, 1, 0]).bool()
    m = SoftMatch(2.0, 1.5)
    expected = soft_contrastive(z1, z2, same, m)
    got = hib_pair_loss(Embedding.point(z1), Embedding.point(z2), same, m, k=8, beta=1e-2)
    assert got.item() == pytest.approx(expected.item(), rel=1e-6)


def _random_gaussians(b, d, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return Embedding.gaussian(torch.randn(b, d, generator=g, dtype=dtype),
                              0.05 + 0.5 * torch.rand(b, d, generator=g, dtype=dtype))


def test_hib_pair_loss_equals_naive_loop():
    e1, e2 = _random_gaussians(5, 2, 0), _random_gaussians(5, 2, 1)
    same = torch.tensor([1, 0, 0, 1, 0]).bool()
    a, b, k, beta = 1.5, 0.7, 4, 0.01
    m = _match(a, b)
    loss = hib_pair_loss(e1, e2, same, m, k=k, beta=beta, generator=torch.Generator().manual_seed(3))
    g = torch.Generator().manual_seed(3)
    s1, s2 = e1.sample(k, g), e2.sample(k, g)  # same draws, same order
    nll = 0.0
    for i in range(5):
        p = sum(sig(-a * (s1[i, k1] - s2[i, k2]).norm().item() + b) for k1 in range(k) for k2 in range(k)) / k**2
        nll += -math.log(p if same[i] else 1 - p)
    kl = lambda e: (0.5 * (e.var + e.mean**2 - 1 - e.var.log()).sum(-1)).mean().item()  # noqa: E731
    assert loss.item() == pytest.approx(nll / 5 + beta * (kl(e1) + kl(e2)), rel=1e-10)


def test_hib_batch_loss_equals_naive_loop_over_all_pairs():
    b, k, beta, a, bb = 6, 3, 1e-2, 1.3, 0.4
    g = torch.Generator().manual_seed(5)
    e = Embedding.mixture(torch.randn(b, 2, 2, generator=g, dtype=torch.float64),
                          0.05 + 0.5 * torch.rand(b, 2, 2, generator=g, dtype=torch.float64))  # MoG-2
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    m = _match(a, bb)
    loss, stats_ = hib_batch_loss(e, labels, m, k=k * 2, beta=beta, generator=torch.Generator().manual_seed(9))
    s = e.sample(k * 2, torch.Generator().manual_seed(9))
    pos, neg = [], []
    for i in range(b):
        for j in range(i + 1, b):
            p = np.mean([sig(-a * (s[i, k1] - s[j, k2]).norm().item() + bb)
                         for k1 in range(2 * k) for k2 in range(2 * k)])
            (pos if labels[i] == labels[j] else neg).append(-math.log(p) if labels[i] == labels[j] else -math.log(1 - p))
    kl = kl_to_standard_normal(e).mean().item()
    expected = 0.5 * (np.mean(pos) + np.mean(neg)) + 2 * beta * kl
    assert loss.item() == pytest.approx(expected, rel=1e-10)
    assert stats_["nll_pos"] == pytest.approx(np.mean(pos), rel=1e-10)
    assert stats_["nll_neg"] == pytest.approx(np.mean(neg), rel=1e-10)
    # the plain form of the pair NLLs (eq. 5 on every pair of the batch), which `all_pairs_nll` is held to
    plain = all_pairs_mean_nll(s, m, labels[:, None] == labels[None])
    assert plain.tolist() == pytest.approx([np.mean(pos), np.mean(neg)], rel=1e-10)


def test_hib_batch_loss_point_embeddings_is_balanced_soft_contrastive():
    z = torch.randn(5, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    labels = torch.tensor([3, 3, 1, 1, 1])
    m = _match(2.0, 1.0)
    loss, _ = hib_batch_loss(Embedding.point(z), labels, m, beta=1.0)
    iu = torch.triu_indices(5, 5, 1)
    same = labels[iu[0]] == labels[iu[1]]
    per = torch.stack([soft_contrastive(z[i:i + 1], z[j:j + 1], s[None], m) for i, j, s in zip(iu[0], iu[1], same)])
    assert loss.item() == pytest.approx(0.5 * (per[same].mean() + per[~same].mean()).item(), rel=1e-12)


def test_hib_pair_loss_point_mixture_respects_weights():
    mean = torch.tensor([[[0.0], [3.0]]], dtype=torch.float64)
    w = torch.tensor([[0.9, 0.1]], dtype=torch.float64)
    e1 = Embedding.mixture(mean, torch.zeros_like(mean), w)
    e2 = Embedding.point(torch.zeros(1, 1, dtype=torch.float64))
    a, b = 2.0, 1.0
    p = 0.9 * sig(b) + 0.1 * sig(-3 * a + b)  # exact eq. 4
    # The stratified schedule represents weights to within 1/K: K = 10 is exact for 0.9 / 0.1.
    loss = hib_pair_loss(e1, e2, torch.tensor([True]), _match(a, b), k=10, beta=0.0)
    assert loss.item() == pytest.approx(-math.log(p), rel=1e-6)


# --------------------------------------------------------------------------- eq. 4 vs integration
def test_1d_match_probability_integral_vs_monte_carlo_through_log_match():
    """p(m|x1,x2) = int int sigmoid(-a|z1-z2|+b) N(z1) N(z2) dz1 dz2 (eq. 4) vs eq. 5 with K = 3000."""
    mu1, sd1, mu2, sd2, a, b = 0.3, 0.5, -0.4, 0.8, 2.0, 1.0

    def f(z2, z1):
        return sig(-a * abs(z1 - z2) + b) * npdf(z1, mu1, sd1) * npdf(z2, mu2, sd2)

    exact, _ = integrate.dblquad(f, mu1 - 8 * sd1, mu1 + 8 * sd1, mu2 - 8 * sd2, mu2 + 8 * sd2, epsabs=1e-8)
    # 1-D cross-check on the difference u = z1 - z2 ~ N(mu1 - mu2, sd1^2 + sd2^2)
    su = math.hypot(sd1, sd2)
    exact_1d, _ = integrate.quad(lambda u: sig(-a * abs(u) + b) * npdf(u, mu1 - mu2, su),
                                 mu1 - mu2 - 10 * su, mu1 - mu2 + 10 * su, points=[0.0], epsabs=1e-12)
    assert exact == pytest.approx(exact_1d, abs=1e-7)

    k, reps = 1500, 4  # 4 independent K x K estimates (eq. 5), averaged: standard error ~0.003
    g = torch.Generator().manual_seed(0)
    e1 = Embedding.gaussian(torch.full((reps, 1), mu1, dtype=torch.float64), torch.full((reps, 1), sd1**2, dtype=torch.float64))
    e2 = Embedding.gaussian(torch.full((reps, 1), mu2, dtype=torch.float64), torch.full((reps, 1), sd2**2, dtype=torch.float64))
    s1, s2 = e1.sample(k, g), e2.sample(k, g)
    log_p, log_q = log_match(torch.cdist(s1, s2), _match(a, b), (-2, -1))
    assert log_p.shape == (reps,)
    assert log_p.exp().mean().item() == pytest.approx(exact, abs=0.01)
    assert log_q.exp().mean().item() == pytest.approx(1 - exact, abs=0.01)
    assert torch.allclose(log_p.exp() + log_q.exp(), torch.ones(reps, dtype=torch.float64))
    # the pair loss is -log of that probability (same samples, same generator order)
    loss = hib_pair_loss(e1, e2, torch.ones(reps, dtype=torch.bool), _match(a, b), k=k, beta=0.0,
                         generator=torch.Generator().manual_seed(0))
    assert loss.item() == pytest.approx(-log_p.mean().item(), rel=1e-9)


def test_losses_have_finite_gradients_at_coincident_embeddings():
    """||z1 - z2|| is not differentiable at 0: the losses must still give finite (sub)gradients there."""
    labels = torch.tensor([0, 0, 1, 1])
    same = torch.tensor([True, False, True, False])
    for loss_fn in (
        lambda z: hib_batch_loss(Embedding.point(z), labels, SoftMatch())[0],
        lambda z: hib_pair_loss(Embedding.point(z), Embedding.point(z.flip(0) * 0), same, SoftMatch()),
        lambda z: soft_contrastive(z, z * 0, same, SoftMatch()),
        lambda z: hard_contrastive(z, z * 0, same),
        lambda z: hib_batch_loss(Embedding.gaussian(z, torch.full_like(z, 1e-6)), labels, SoftMatch(), k=4)[0],
    ):
        z = torch.zeros(4, 2, requires_grad=True)
        loss_fn(z).backward()
        assert torch.isfinite(z.grad).all()


def test_point_embeddings_use_one_sample_whatever_k():
    """A point embedding is its own sample (K = 1), so a large K costs nothing and is not refused."""
    emb = Embedding.point(torch.randn(64, 2, generator=torch.Generator().manual_seed(0)))
    labels = torch.arange(64) % 4
    torch.testing.assert_close(hib_batch_loss(emb, labels, _match(), 10**6)[0], hib_batch_loss(emb, labels, _match(), 1)[0])


def test_masked_sum_and_mean_select_and_mask_alike(monkeypatch):
    """The speed trick of the pair losses' masked means (`contrastive.masked_sum`, `masked_mean`): selection on the
    CPU, ``where`` on a launch-bound device (no host wait); both forms agree with a plain loop to float rounding."""
    from hedgekit.methods import contrastive

    g = torch.Generator().manual_seed(3)
    x, mask = torch.randn(7, 5, generator=g), torch.rand(7, 5, generator=g) < 0.4
    plain = sum(float(v) for v, m in zip(x.flatten(), mask.flatten()) if m)
    for selects in (True, False):
        monkeypatch.setattr(contrastive, "_selects", lambda t, s=selects: s)
        assert contrastive.masked_sum(x, mask).item() == pytest.approx(plain, rel=1e-5)
        assert contrastive.masked_mean(x, mask).item() == pytest.approx(plain / int(mask.sum()), rel=1e-5)
