"""Oracle tests of hedgekit.uncertainty (HIB eq. 4 and eq. 9, sec. 2.4).

Oracles: 100k-sample brute-force Monte Carlo with an independent mixture sampler,
scipy numerical integration in 1-D, closed-form limits, hand-computed point cases.
"""
import math

import pytest
import torch
from scipy import integrate

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.nets import SoftMatch
from hedgekit.uncertainty import logdet_cov, match_probability, self_mismatch, trace_cov


def sig(t: float) -> float:
    return 1.0 / (1.0 + math.exp(-t))


def _match(a=2.0, b=2.0) -> SoftMatch:
    m = SoftMatch(a, b)
    with torch.no_grad():  # exact a and b in float64 for the oracles
        m.a_raw.fill_(math.log(math.expm1(a)))
        m.b.fill_(b)
    return m


def _mc_match_probability(e1: Embedding, e2: Embedding, a: float, b: float, n: int, seed: int) -> torch.Tensor:
    """Brute force: z1 ~ p(z|x1), z2 ~ p(z|x2) independently (component ~ Categorical(w)), mean of eq. 2."""
    g = torch.Generator().manual_seed(seed)

    def draw(e, i):
        comp = torch.multinomial(e.weights[i].double(), n, replacement=True, generator=g)
        mu, sd = e.mean[i].double()[comp], e.var[i].double().sqrt()[comp]
        return mu + sd * torch.randn(n, e.dim, generator=g, dtype=torch.float64)

    out = []
    for i in range(len(e1)):
        d = (draw(e1, i) - draw(e2, i)).norm(dim=-1)
        out.append(torch.sigmoid(-a * d + b).mean())
    return torch.stack(out)


def _random_embedding(b, c, d, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    mean = scale * torch.randn(b, c, d, generator=g)
    var = (0.02 + 0.6 * torch.rand(b, c, d, generator=g)) * scale**2
    w = torch.rand(b, c, generator=g) + 0.2
    return Embedding.mixture(mean, var, w / w.sum(1, keepdim=True))


# --------------------------------------------------------------------------- eq. 4 vs Monte Carlo
@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("c1, c2", [(1, 1), (2, 1), (2, 3)])
def test_match_probability_vs_monte_carlo(dim, c1, c2):
    a, b = 1.5, 1.0
    e1 = _random_embedding(4, c1, dim, seed=10 * dim + c1)
    e2 = _random_embedding(4, c2, dim, seed=100 + 10 * dim + c2)
    p = match_probability(e1, e2, _match(a, b))
    mc = _mc_match_probability(e1, e2, a, b, n=100_000, seed=dim)
    assert p.shape == (4,)
    assert (p - mc).abs().max().item() < 0.005, (p, mc)
    assert ((p > 0) & (p < 1)).all()
    # symmetric in its two arguments (up to the quasi-Monte-Carlo error: -u uses other points)
    assert torch.allclose(match_probability(e2, e1, _match(a, b)), p, atol=2e-3)


def test_self_mismatch_vs_monte_carlo_for_mixtures():
    """eta = 1 - p(m|x,x) with two *independent* draws from the same mixture (HIB eq. 9)."""
    a, b = 2.0, 2.0
    e = _random_embedding(5, 2, 2, seed=3)
    eta = self_mismatch(e, _match(a, b))
    mc = 1 - _mc_match_probability(e, e, a, b, n=100_000, seed=4)
    assert (eta - mc).abs().max().item() < 0.005


def test_match_probability_1d_vs_numerical_integration():
    a, b = 2.0, 1.0
    cases = [(0.3, 0.25, -0.4, 0.64), (0.0, 1e-2, 0.0, 1e-2), (1.0, 2.0, -2.0, 0.5)]
    e1 = Embedding.gaussian(torch.tensor([[c[0]] for c in cases]), torch.tensor([[c[1]] for c in cases]))
    e2 = Embedding.gaussian(torch.tensor([[c[2]] for c in cases]), torch.tensor([[c[3]] for c in cases]))
    p = match_probability(e1, e2, _match(a, b))
    for i, (m1, v1, m2, v2) in enumerate(cases):
        s1, s2 = math.sqrt(v1), math.sqrt(v2)

        def f(z2, z1):
            return (sig(-a * abs(z1 - z2) + b) * math.exp(-0.5 * ((z1 - m1) / s1) ** 2 - 0.5 * ((z2 - m2) / s2) ** 2)
                    / (2 * math.pi * s1 * s2))

        exact, _ = integrate.dblquad(f, m1 - 8 * s1, m1 + 8 * s1, m2 - 8 * s2, m2 + 8 * s2, epsabs=1e-9)
        assert p[i].item() == pytest.approx(exact, abs=2e-3), (i, p[i].item(), exact)


def test_match_probability_mixture_of_far_points_hand_case():
    """Two tiny-variance components 0 and 3 (weights 0.7/0.3) vs a point at 0: sum_c w_c sigmoid(-a d_c + b)."""
    a, b = 2.0, 1.0
    mean = torch.tensor([[[0.0, 0.0], [3.0, 0.0]]])
    e1 = Embedding.mixture(mean, torch.full_like(mean, 1e-10), torch.tensor([[0.7, 0.3]]))
    e2 = Embedding.point(torch.zeros(1, 2))
    p = match_probability(e1, e2, _match(a, b)).item()
    assert p == pytest.approx(0.7 * sig(b) + 0.3 * sig(-3 * a + b), abs=1e-4)
    # eta of the mixture itself: components pair up with prob 0.7^2 + 0.3^2 at distance 0, else distance 3
    eta = self_mismatch(e1, _match(a, b)).item()
    assert eta == pytest.approx(1 - (0.58 * sig(b) + 0.42 * sig(-3 * a + b)), abs=1e-4)


# --------------------------------------------------------------------------- point embeddings: exact
def test_point_embeddings_exact():
    a, b = 1.7, 0.4
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(20, 3, generator=g), torch.randn(20, 3, generator=g)
    p = match_probability(Embedding.point(z1), Embedding.point(z2), _match(a, b))
    d = (z1 - z2).norm(dim=-1)
    assert torch.allclose(p, torch.sigmoid(-a * d + b), atol=1e-6)
    eta = self_mismatch(Embedding.point(z1), _match(a, b))
    assert torch.allclose(eta, torch.full((20,), 1 - sig(b)), atol=1e-6)


# --------------------------------------------------------------------------- eta limits and properties
@pytest.mark.parametrize("dim", [1, 2, 5])
def test_eta_limits(dim):
    b = 2.0
    m = _match(2.0, b)
    mean = torch.randn(3, dim)
    tiny = self_mismatch(Embedding.gaussian(mean, torch.full((3, dim), 1e-12)), m)
    assert torch.allclose(tiny, torch.full((3,), 1 - sig(b)), atol=1e-4)
    huge = self_mismatch(Embedding.gaussian(mean, torch.full((3, dim), 1e6)), m)
    assert (huge > 0.99).all() and (huge <= 1).all()


def test_eta_deterministic_and_batch_independent():
    e = _random_embedding(7, 2, 3, seed=1)
    m = _match()
    e1, e2 = self_mismatch(e, m), self_mismatch(e, m)
    assert torch.equal(e1, e2)  # bit-identical: no flicker in the app
    # one item alone gets the same value as inside a batch (the chunk size does not matter either)
    for i in range(7):
        assert torch.allclose(self_mismatch(e[i], m), e1[i:i + 1], rtol=0, atol=1e-7)
    assert torch.allclose(match_probability(e, e, m, chunk=2), 1 - e1, rtol=0, atol=1e-7)


def test_eta_increases_with_variance():
    m = _match(2.0, 2.0)
    variances = torch.logspace(-4, 2, 25)
    for dim in (1, 2, 3):
        mean = torch.zeros(25, dim)
        eta = self_mismatch(Embedding.gaussian(mean, variances[:, None].expand(25, dim).contiguous()), m)
        assert (eta.diff() > 0).all(), eta
    # anisotropic: growing one axis only also increases eta
    var = torch.ones(10, 2) * 0.1
    var[:, 0] = torch.linspace(0.1, 5, 10)
    assert (self_mismatch(Embedding.gaussian(torch.zeros(10, 2), var), m).diff() > 0).all()


def test_match_probability_errors():
    m = _match()
    e = _random_embedding(3, 1, 2, seed=0)
    with pytest.raises(InputError, match="equal size and dimension"):
        match_probability(e, e[:2], m)
    with pytest.raises(InputError, match="equal size and dimension"):
        match_probability(e, _random_embedding(3, 1, 3, seed=0), m)


def test_match_probability_empty_batch():
    e = _random_embedding(3, 2, 2, seed=0)
    assert match_probability(e[:0], e[:0], _match()).shape == (0,)
    assert self_mismatch(e[:0], _match()).shape == (0,)


# --------------------------------------------------------------------------- volumetric measures
def test_trace_and_logdet_closed_forms():
    mean = torch.tensor([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]], dtype=torch.float64)
    var = torch.tensor([[0.5, 2.0, 4.0], [1.0, 1.0, 1e-3]], dtype=torch.float64)
    e = Embedding.gaussian(mean, var)
    assert torch.allclose(trace_cov(e), torch.tensor([6.5, 2.001], dtype=torch.float64))
    assert torch.allclose(logdet_cov(e), torch.log(torch.tensor([0.5 * 2 * 4, 1e-3], dtype=torch.float64)))
    # mixture: 0.5 N(-1, 0.5) + 0.5 N(3, 1.5) in 1-D has variance 5 (law of total variance)
    mix = Embedding.mixture(torch.tensor([[[-1.0], [3.0]]]), torch.tensor([[[0.5], [1.5]]]))
    assert trace_cov(mix).item() == pytest.approx(5.0)
    assert logdet_cov(mix).item() == pytest.approx(math.log(5.0))
    # point embeddings: zero trace, finite (clamped) logdet
    pt = Embedding.point(torch.ones(2, 2))
    assert torch.equal(trace_cov(pt), torch.zeros(2))
    assert torch.isfinite(logdet_cov(pt)).all()


def test_match_probability_matrix_equals_pairwise_values():
    """Every entry of the (P, G) matrix equals `match_probability` of that pair (same QMC points)."""
    from hedgekit.uncertainty import match_probability_matrix

    g = torch.Generator().manual_seed(3)
    probe = Embedding.mixture(torch.randn(4, 2, 3, generator=g), torch.rand(4, 2, 3, generator=g),
                              torch.softmax(torch.randn(4, 2, generator=g), 1))
    gallery = Embedding.gaussian(torch.randn(5, 3, generator=g), 2 * torch.rand(5, 3, generator=g))
    m = SoftMatch(1.5, 2.5)
    mat = match_probability_matrix(probe, gallery, m, n_points=32)
    assert mat.shape == (4, 5)
    for i in range(4):
        for j in range(5):
            assert mat[i, j].item() == pytest.approx(match_probability(probe[i], gallery[j], m, 32).item(), abs=1e-6)
    with pytest.raises(InputError, match="D="):
        match_probability_matrix(probe, Embedding.point(torch.zeros(2, 2)), m)


BAD_COUNTS = [0, -1, 2.5, 8.0, True, None, "64"]


@pytest.mark.parametrize("n_points", BAD_COUNTS, ids=repr)
def test_eta_refuses_bad_numbers_of_points(n_points):
    emb = Embedding.gaussian(torch.zeros(2, 2), torch.ones(2, 2))
    with pytest.raises(InputError, match="n_points must be an integer >= 1"):
        self_mismatch(emb, SoftMatch(), n_points)
    with pytest.raises(InputError, match="n_points must be an integer >= 1"):
        match_probability(emb, emb, SoftMatch(), n_points)


def test_eta_refuses_a_huge_number_of_points_before_allocating():
    emb = Embedding.gaussian(torch.zeros(300, 2), torch.ones(300, 2))
    with pytest.raises(InputError, match=r"n_points=10000000000 would take .* TB, more than .* allowed.*fewer n_points"):
        self_mismatch(emb, SoftMatch(), 10**10)


@pytest.mark.parametrize("emb", [torch.zeros(2, 1, 2), None, "emb"], ids=["tensor", "None", "str"])
def test_eta_needs_an_embedding_and_a_soft_match(emb):
    with pytest.raises(InputError, match="must be a hedgekit Embedding"):
        self_mismatch(emb, SoftMatch())
    good = Embedding.gaussian(torch.zeros(2, 2), torch.ones(2, 2))
    with pytest.raises(InputError, match=r"match must be the model's SoftMatch \(model.match\)"):
        self_mismatch(good, lambda d: d)
