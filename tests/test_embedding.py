"""Oracle tests of hedgekit.embedding.Embedding (HIB sec. 2.2: Gaussian / MoG embeddings).

Oracles: hand-written tensors, brute-force Monte Carlo with an independent mixture
sampler, explicit W^T Sigma W loops, the law of total variance written out by hand.
"""
import math

import numpy as np
import pytest
import torch

from hedgekit.embedding import Embedding, project_gaussian
from hedgekit.errors import InputError


def _random_mixture(b=3, c=2, d=2, seed=0, dtype=torch.float64, weights=None):
    g = torch.Generator().manual_seed(seed)
    mean = 2 * torch.randn(b, c, d, generator=g, dtype=dtype)
    var = 0.05 + torch.rand(b, c, d, generator=g, dtype=dtype)
    return Embedding.mixture(mean, var, weights)


def _naive_mixture_samples(emb: Embedding, n: int, seed: int) -> torch.Tensor:
    """Independent oracle sampler: component ~ Categorical(w) i.i.d., then z ~ N(mu_c, diag v_c)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(len(emb)):
        comp = torch.multinomial(emb.weights[i].double(), n, replacement=True, generator=g)
        eps = torch.randn(n, emb.dim, generator=g, dtype=emb.mean.dtype)
        out.append(emb.mean[i, comp] + emb.var[i, comp].sqrt() * eps)
    return torch.stack(out)  # (B, n, D)


# --------------------------------------------------------------------------- builders
def test_point_builder():
    z = torch.tensor([[1.0, 2.0], [3.0, -4.0], [0.0, 0.5]])
    e = Embedding.point(z)
    assert e.mean.shape == (3, 1, 2) and e.var.shape == (3, 1, 2) and e.weights.shape == (3, 1)
    assert torch.equal(e.mean[:, 0], z)
    assert torch.equal(e.var, torch.zeros(3, 1, 2))
    assert torch.equal(e.weights, torch.ones(3, 1))
    assert e.is_point and (e.batch_size, e.n_components, e.dim) == (3, 1, 2) and len(e) == 3
    assert e.uncertainty is None
    # samples of a point embedding are the point itself
    s = e.sample(5, torch.Generator().manual_seed(0))
    assert torch.equal(s, z[:, None, :].expand(3, 5, 2))


def test_gaussian_builder_diagonal_and_isotropic():
    mean = torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    var = torch.tensor([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]])
    e = Embedding.gaussian(mean, var)
    assert e.mean.shape == (2, 1, 3) and torch.equal(e.var[:, 0], var) and torch.equal(e.weights, torch.ones(2, 1))
    assert not e.is_point
    iso = Embedding.gaussian(mean, torch.tensor([[0.5], [2.0]]))  # (B, 1) isotropic (Taha et al.)
    assert torch.equal(iso.var[:, 0], torch.tensor([[0.5] * 3, [2.0] * 3]))
    u = torch.tensor([0.3, 0.7])
    assert torch.equal(Embedding.gaussian(mean, var, uncertainty=u).uncertainty, u)


def test_mixture_builder_default_equal_weights():
    mean, var = torch.zeros(4, 3, 2), torch.ones(4, 3, 2)
    e = Embedding.mixture(mean, var)
    assert torch.allclose(e.weights, torch.full((4, 3), 1 / 3))
    w = torch.tensor([[0.2, 0.3, 0.5]]).expand(4, 3)
    assert torch.equal(Embedding.mixture(mean, var, w).weights, w)


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: Embedding.point(torch.zeros(3)), r"point embeddings must have shape \(B, D\)"),
        (lambda: Embedding.point(torch.zeros(2, 3, 4)), r"point embeddings must have shape \(B, D\)"),
        (lambda: Embedding.gaussian(torch.zeros(2, 3), torch.ones(2, 2)), "gaussian needs mean"),
        (lambda: Embedding.gaussian(torch.zeros(2, 3), torch.ones(3, 3)), "gaussian needs mean"),
        (lambda: Embedding.gaussian(torch.zeros(2, 3), torch.ones(2, 3, 1)), "gaussian needs mean"),
        (lambda: Embedding(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 1)), r"mean must have shape \(B, C, D\)"),
        (lambda: Embedding(torch.zeros(2, 1, 3), torch.zeros(2, 1, 2), torch.ones(2, 1)), "var must match"),
        (lambda: Embedding(torch.zeros(2, 2, 3), torch.zeros(2, 2, 3), torch.ones(2, 1)), r"weights must have shape \(2, 2\)"),
        (lambda: Embedding.mixture(torch.zeros(2, 2, 3), torch.zeros(2, 2, 3), torch.ones(2)), "weights must have shape"),
        (lambda: Embedding.point(torch.zeros(2, 3), uncertainty=torch.zeros(3)), r"uncertainty must have shape \(2,\)"),
    ],
)
def test_shape_validation(build, match):
    with pytest.raises(InputError, match=match):
        build()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_mean_and_var_rejected(bad):
    mean, var = torch.zeros(2, 3), torch.ones(2, 3)
    mean_bad, var_bad = mean.clone(), var.clone()
    mean_bad[1, 2] = bad
    var_bad[0, 1] = bad
    with pytest.raises(InputError, match="Embedding.mean contains NaN or inf"):
        Embedding.gaussian(mean_bad, var)
    with pytest.raises(InputError, match="Embedding.mean contains NaN or inf"):
        Embedding.point(mean_bad)
    if bad != -float("inf"):
        with pytest.raises(InputError, match="Embedding.var contains NaN or inf"):
            Embedding.gaussian(mean, var_bad)
    else:
        with pytest.raises(InputError, match="Embedding.var"):
            Embedding.gaussian(mean, var_bad)


def test_negative_variance_rejected():
    var = torch.ones(2, 2, 3)
    var[1, 0, 2] = -1e-3
    with pytest.raises(InputError, match="var must be non-negative"):
        Embedding.mixture(torch.zeros(2, 2, 3), var)


@pytest.mark.parametrize("w", [[[0.5, 0.2]], [[-1.0, 2.0]], [[float("nan"), 1.0]]])
def test_bad_weights_rejected(w):
    with pytest.raises(InputError, match="weights"):
        Embedding.mixture(torch.zeros(1, 2, 2), torch.ones(1, 2, 2), torch.tensor(w))


def test_sample_k_must_be_positive():
    e = _random_mixture()
    with pytest.raises(InputError, match=r"k \(samples per input\) must be an integer >= 1; got 0"):
        e.sample(0)


# --------------------------------------------------------------------------- stratified sampling
@pytest.mark.parametrize("c, k", [(1, 8), (2, 8), (2, 2), (3, 9), (4, 8), (5, 100)])
def test_stratified_schedule_equal_weights_exact_counts(c, k):
    """HIB sec. 2.2: "we sample the same number of samples from each Gaussian component"."""
    e = Embedding.mixture(torch.zeros(6, c, 2), torch.ones(6, c, 2))
    comp = e.component_schedule(k)
    assert comp.shape == (6, k)
    counts = torch.stack([torch.bincount(row, minlength=c) for row in comp])
    assert torch.equal(counts, torch.full((6, c), k // c))


def test_stratified_schedule_unequal_weights():
    w = torch.tensor([[0.25, 0.75], [0.5, 0.5], [0.1, 0.9], [0.2, 0.8]])
    e = Embedding.mixture(torch.zeros(4, 2, 1), torch.ones(4, 2, 1), w)
    comp = e.component_schedule(20)
    counts = torch.stack([torch.bincount(row, minlength=2) for row in comp])
    # systematic resampling: count_c = k * w_c exactly when k * w_c is an integer
    assert torch.equal(counts, (20 * w).round().long())
    # with any k, counts differ from k * w_c by less than one
    for k in (3, 7, 13):
        counts = torch.stack([torch.bincount(row, minlength=2) for row in e.component_schedule(k)])
        assert ((counts - k * w).abs() < 1).all()


def test_zero_weight_component_never_sampled():
    w = torch.tensor([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    e = Embedding.mixture(torch.zeros(2, 3, 1), torch.ones(2, 3, 1), w)
    comp = e.component_schedule(10)
    assert (comp[0] == 1).all()
    assert (comp[1] != 1).all() and (comp[1] == 0).sum() == 5


def test_sample_uses_schedule_and_reparametrisation():
    """z = mu_c + sqrt(v_c) * eps with c given by the schedule (checked with a fixed eps)."""
    e = _random_mixture(b=2, c=2, d=3, seed=3)
    k = 4
    eps = torch.randn(k, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    z = e.sample(k, eps=eps)
    comp = e.component_schedule(k)
    for i in range(2):
        for j in range(k):
            c = comp[i, j]
            expected = e.mean[i, c] + e.var[i, c].sqrt() * eps[j]
            assert torch.allclose(z[i, j], expected, rtol=0, atol=1e-12)
    # (B, k, D) noise also accepted; zero noise gives the component means
    z0 = e.sample(k, eps=torch.zeros(2, k, 3))
    assert torch.equal(z0, e.mean.gather(1, comp[..., None].expand(-1, -1, 3)))


def test_sample_generator_reproducible():
    e = _random_mixture()
    a = e.sample(16, torch.Generator().manual_seed(5))
    b = e.sample(16, torch.Generator().manual_seed(5))
    c = e.sample(16, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_gaussian_sample_moments_match_parameters():
    g = torch.Generator().manual_seed(0)
    mean = torch.tensor([[0.5, -1.0], [3.0, 2.0], [0.0, 0.0]], dtype=torch.float64)
    var = torch.tensor([[0.2, 1.5], [4.0, 0.01], [1.0, 1.0]], dtype=torch.float64)
    n = 200_000
    z = Embedding.gaussian(mean, var).sample(n, g)
    se_mean = (var / n).sqrt()
    assert ((z.mean(1) - mean).abs() < 5 * se_mean).all()
    se_var = var * math.sqrt(2 / (n - 1))  # sd of the sample variance of a Gaussian
    assert ((z.var(1) - var).abs() < 5 * se_var).all()


def test_mixture_sample_moments_and_total_var_vs_monte_carlo():
    """total_var (law of total variance) and mixture_mean against brute-force Monte Carlo."""
    w = torch.tensor([[0.3, 0.7], [0.5, 0.5], [0.9, 0.1]], dtype=torch.float64)
    e = _random_mixture(b=3, c=2, d=2, seed=7, weights=w)
    n = 200_000
    naive = _naive_mixture_samples(e, n, seed=11)
    strat = e.sample(n, torch.Generator().manual_seed(12))
    tv, mm = e.total_var(), e.mixture_mean()
    for z in (naive, strat):
        assert torch.allclose(z.mean(1), mm, atol=5 * (tv / n).sqrt().max().item())
        assert torch.allclose(z.var(1), tv, rtol=0.02)
    # hand-written law of total variance for item 0
    m0 = (w[0, :, None] * e.mean[0]).sum(0)
    v0 = (w[0, :, None] * (e.var[0] + e.mean[0] ** 2)).sum(0) - m0**2
    assert torch.allclose(mm[0], m0) and torch.allclose(tv[0], v0)


def test_mixture_mean_and_total_var_hand_case():
    # 1-D mixture 0.5 N(-1, 0.5) + 0.5 N(3, 1.5): mean 1, var 0.5*(0.5+4) + 0.5*(1.5+4) = 5
    e = Embedding.mixture(torch.tensor([[[-1.0], [3.0]]]), torch.tensor([[[0.5], [1.5]]]))
    assert torch.allclose(e.mixture_mean(), torch.tensor([[1.0]]))
    assert torch.allclose(e.total_var(), torch.tensor([[5.0]]))
    # single Gaussian: total_var is the variance
    g = Embedding.gaussian(torch.tensor([[1.0, 2.0]]), torch.tensor([[0.3, 0.4]]))
    assert torch.allclose(g.total_var(), torch.tensor([[0.3, 0.4]]))


# --------------------------------------------------------------------------- projection
def test_project_matches_explicit_wt_sigma_w():
    e = _random_mixture(b=3, c=2, d=4, seed=2)
    w = torch.randn(4, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    mean, cov = e.project(w)
    assert mean.shape == (3, 2, 2) and cov.shape == (3, 2, 2, 2)
    for b in range(3):
        for c in range(2):
            sigma = torch.diag(e.var[b, c])
            assert torch.allclose(cov[b, c], w.T @ sigma @ w, atol=1e-12)
            assert torch.allclose(mean[b, c], w.T @ e.mean[b, c], atol=1e-12)
            assert torch.allclose(cov[b, c], cov[b, c].T)


def test_project_covariance_vs_projected_samples():
    e = Embedding.gaussian(torch.tensor([[1.0, -2.0, 0.5]], dtype=torch.float64),
                           torch.tensor([[0.5, 2.0, 1.0]], dtype=torch.float64))
    w = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, -2.0]], dtype=torch.float64)
    mean, cov = e.project(w)
    z = e.sample(200_000, torch.Generator().manual_seed(0))[0] @ w
    assert torch.allclose(z.mean(0), mean[0, 0], atol=0.02)
    assert torch.allclose(torch.cov(z.T), cov[0, 0], rtol=0.02, atol=0.02)


def test_project_gaussian_by_hand_on_tensors_and_arrays():
    """mu = (1, -2, 0.5), var = (0.5, 2, 1), W = [[1, 0], [1, 1], [0, -2]]: W^T mu = (1 - 2, -2 - 1) = (-1, -3);
    W^T diag(var) W = [[0.5 + 2, 2], [2, 2 + 4]] = [[2.5, 2], [2, 6]]."""
    w = [[1.0, 0.0], [1.0, 1.0], [0.0, -2.0]]
    mean, var = [1.0, -2.0, 0.5], [0.5, 2.0, 1.0]
    for lib in (np.asarray, lambda a: torch.tensor(a, dtype=torch.float64)):
        mu, cov = project_gaussian(lib(mean), lib(var), lib(w))
        np.testing.assert_allclose(np.asarray(mu), [-1.0, -3.0])
        np.testing.assert_allclose(np.asarray(cov), [[2.5, 2.0], [2.0, 6.0]])
    mu, cov = Embedding.gaussian(torch.tensor([mean]), torch.tensor([var])).project(torch.tensor(w))
    np.testing.assert_allclose(cov[0, 0].numpy(), [[2.5, 2.0], [2.0, 6.0]])
    with pytest.raises(InputError, match="must match the means"):
        project_gaussian(np.zeros(3), np.ones((3, 3)), np.eye(3))


def test_project_identity_and_bad_shape():
    e = _random_mixture(b=2, c=1, d=3)
    mean, cov = e.project(torch.eye(3, dtype=torch.float64))
    assert torch.allclose(mean, e.mean) and torch.allclose(cov, torch.diag_embed(e.var))
    with pytest.raises(InputError, match=r"projection matrix must have shape \(3, d\)"):
        e.project(torch.eye(2))
    with pytest.raises(InputError, match="projection matrix"):
        e.project(torch.ones(3))


# --------------------------------------------------------------------------- indexing and cat
def _assert_same(a: Embedding, b: Embedding):
    assert torch.equal(a.mean, b.mean) and torch.equal(a.var, b.var) and torch.equal(a.weights, b.weights)
    if a.uncertainty is None or b.uncertainty is None:
        assert a.uncertainty is None and b.uncertainty is None
    else:
        assert torch.equal(a.uncertainty, b.uncertainty)


def test_indexing_and_cat_round_trip():
    e = _random_mixture(b=5, c=2, d=3, seed=4).with_uncertainty(torch.arange(5.0))
    _assert_same(Embedding.cat([e[i] for i in range(5)]), e)
    _assert_same(Embedding.cat([e[:2], e[2:4], e[4:]]), e)
    assert len(e[3]) == 1 and torch.equal(e[3].mean[0], e.mean[3])
    assert torch.equal(e[-1].mean[0], e.mean[4]) and torch.equal(e[-2].mean[0], e.mean[3])
    idx = torch.tensor([4, 0, 0, 2])
    sub = e[idx]
    assert len(sub) == 4 and torch.equal(sub.mean, e.mean[idx]) and torch.equal(sub.uncertainty, e.uncertainty[idx])
    mask = torch.tensor([True, False, True, False, True])
    _assert_same(e[mask], Embedding.cat([e[0], e[2], e[4]]))
    _assert_same(e[np.array([1, 3])], Embedding.cat([e[1], e[3]]))


def test_cat_drops_uncertainty_when_any_part_lacks_it_and_rejects_empty():
    e = _random_mixture(b=4)
    u = e[:2].with_uncertainty(torch.ones(2))
    assert Embedding.cat([u, e[2:]]).uncertainty is None
    assert torch.equal(Embedding.cat([u, u]).uncertainty, torch.ones(4))
    with pytest.raises(InputError, match="at least one part"):
        Embedding.cat([])


def test_map_detach_to():
    mean = torch.randn(2, 3, requires_grad=True)
    e = Embedding.gaussian(mean * 1.0, torch.ones(2, 3))
    assert e.mean.requires_grad and not e.detach().mean.requires_grad
    h = e.map(lambda t: t.double())
    assert h.mean.dtype == torch.float64 and h.weights.dtype == torch.float64
    assert e.to("cpu").mean.device.type == "cpu"


@pytest.mark.parametrize("make", [np.int64, torch.tensor], ids=["numpy_int", "tensor_0d"])
def test_integer_like_index(make):
    e = _random_mixture(b=4)
    _assert_same(e[make(2)], e[2])


def test_out_of_range_index_raises():
    e = _random_mixture(b=4)
    with pytest.raises(IndexError):
        e[10]


@pytest.mark.parametrize("k", [-3, 2.0, True, None, "4"], ids=repr)
def test_sample_k_must_be_an_integer(k):
    with pytest.raises(InputError, match=r"k \(samples per input\) must be an integer >= 1"):
        _random_mixture().sample(k)


def test_sample_refuses_more_than_memory_before_allocating():
    with pytest.raises(InputError, match=r"10000000000000 samples of 3 2-D embeddings would take .*draw fewer"):
        _random_mixture().sample(10**13)
