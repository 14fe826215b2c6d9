"""hedgekit.methods.fast.spe against the plain page hedgekit.methods.spe: each fast form fed the same noise gives its
plain form's numbers, on random cases of the shapes the recipes use (hedgekit/zoo/specs.py PRESETS) and of other
dimensions; chunked evaluations equal the plain form called chunk by chunk, as the fast form draws its noise."""
import math

import pytest
import torch
import torch.nn.functional as F

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods import spe
from hedgekit.methods.fast import spe as fast

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def case(q, c, d, seed, dtype=torch.float64, point=False):
    """Random queries (Q, D) and class likelihoods (C, D) of eq. 6; query variances below the class variances (the
    intersection sampler's finite-variance regime), or 0 (point queries)."""
    g = gen(seed)
    q_mean, c_mean = torch.randn(q, d, generator=g, dtype=dtype), 1.5 * torch.randn(c, d, generator=g, dtype=dtype)
    q_var = torch.zeros(q, d, dtype=dtype) if point else 0.05 + 0.3 * torch.rand(q, d, generator=g, dtype=dtype)
    c_var = 0.4 + 0.4 * torch.rand(c, d, generator=g, dtype=dtype)
    return q_mean, q_var, c_mean, c_var


# (queries, classes, D, samples): the recipes' episodes, N-digit MNIST training (fast: 16 classes x 5 queries;
# paper: 32 x 5), Figure 4 (20 x 5, s in 1..81), L-shapes (4 x 8 training, 4 x 25 evaluation, 8 samples); then other
# dimensions. The evaluation of a 2-digit model (70 classes x 5 queries, 200 samples, in 3 chunks) uses the naive
# sampler only (App. B).
SHAPES = [(80, 16, 2, 1), (160, 32, 2, 1), (100, 20, 2, 9), (100, 20, 2, 81), (32, 4, 2, 8), (100, 4, 2, 8),
          (9, 5, 3, 4), (40, 10, 4, 16), (6, 3, 1, 5)]
EVALUATION = (350, 70, 2, 200)


def chunked_plain(plain, q_mean, q_var, c_mean, c_var, n_samples, seed, per_query, targets=None):
    """The plain form over the chunks of queries the fast form takes (`query_chunks`), from one generator."""
    g, out = gen(seed), []
    for sl in fast.query_chunks(len(q_mean), per_query):
        kw = {} if targets is None else {"targets": targets[sl]}
        out.append(plain(q_mean[sl], q_var[sl], c_mean, c_var, n_samples, g, **kw))
    return torch.cat(out)


@pytest.mark.parametrize("q, c, d, s", [*SHAPES, EVALUATION])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_naive_fast_form_equals_the_plain_sampler(q, c, d, s, dtype):
    q_mean, q_var, c_mean, c_var = case(q, c, d, q + c + s, dtype)
    got = fast.log_posterior_naive(q_mean, q_var, c_mean, c_var, s, gen(1))
    want = chunked_plain(spe.naive_sampler, q_mean, q_var, c_mean, c_var, s, 1, s * c * d)
    torch.testing.assert_close(got, want)
    assert len(fast.query_chunks(q, s * c * d)) == (3 if (q, c, d, s) == EVALUATION else 1)


@pytest.mark.parametrize("q, c, d, s", SHAPES)
@pytest.mark.parametrize("target_only", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_intersection_fast_form_equals_the_plain_sampler(q, c, d, s, target_only, dtype):
    q_mean, q_var, c_mean, c_var = case(q, c, d, 3 * q + c + s, dtype)
    targets = torch.randint(c, (q,), generator=gen(q)) if target_only else None
    got = fast.log_posterior_intersection(q_mean, q_var, c_mean, c_var, s, gen(2), targets=targets)
    want = chunked_plain(spe.intersection_sampler, q_mean, q_var, c_mean, c_var, s, 2,
                         s * c * d * (1 if target_only else c), targets)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("sampler", ["naive", "intersection"])
def test_several_chunks_and_their_gradients(monkeypatch, sampler):
    """Chunks of 2 queries (2, 2, 1), each drawing its own noise, values and gradients alike."""
    q_mean, q_var, c_mean, c_var = case(5, 4, 3, 13)
    monkeypatch.setattr(fast, "CHUNK_ELEMENTS", 2 * 6 * 4 * 3 * (4 if sampler == "intersection" else 1))
    assert fast.query_chunks(5, 6 * 4 * 3 * (4 if sampler == "intersection" else 1)) == [slice(0, 2), slice(2, 4),
                                                                                         slice(4, 6)]
    fast_form = fast.log_posterior_naive if sampler == "naive" else fast.log_posterior_intersection
    plain_form = spe.naive_sampler if sampler == "naive" else spe.intersection_sampler
    grads = []
    for form in ("fast", "plain"):
        inputs = [t.clone().requires_grad_() for t in (q_mean, q_var, c_mean, c_var)]
        if form == "fast":
            out = fast_form(*inputs, 6, gen(3))
        else:
            g = gen(3)
            out = torch.cat([plain_form(inputs[0][sl], inputs[1][sl], *inputs[2:], 6, g)
                             for sl in (slice(0, 2), slice(2, 4), slice(4, 5))])
        grads.append((out, *torch.autograd.grad(out.exp().sum(), inputs)))
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("sampler", ["naive", "intersection"])
def test_point_queries_give_the_closed_form_in_both_forms(sampler):
    """sigma_x^2 = 0: no randomness left, log N(mu_x; mu_y, s_y) - log sum_c N(mu_x; mu_c, s_c) (statement under
    eq. 7), the PN limit."""
    q_mean, q_var, c_mean, c_var = case(12, 5, 2, 7, point=True)
    closed = F.log_softmax(spe.gaussian_log_density(q_mean, c_mean, c_var), -1)
    forms = ((fast.log_posterior_naive, spe.naive_sampler) if sampler == "naive"
             else (fast.log_posterior_intersection, spe.intersection_sampler))
    for form in forms:
        torch.testing.assert_close(form(q_mean, q_var, c_mean, c_var, 3, gen()), closed)


def test_matmul_form_equals_the_plain_density():
    g = gen(11)
    center, offsets = torch.randn(3, 4, generator=g, dtype=torch.float64), torch.randn(3, 5, 4, generator=g,
                                                                                      dtype=torch.float64)
    mean, var = torch.randn(6, 4, generator=g, dtype=torch.float64), 0.1 + torch.rand(6, 4, generator=g,
                                                                                      dtype=torch.float64)
    got = fast.gaussian_log_density_around(center, offsets, mean, var)
    torch.testing.assert_close(got, spe.gaussian_log_density(center[:, None] + offsets, mean, var))
    # the density written out once more: log N(z; mu_c, diag v_c) = sum_d -(z - mu)^2 / (2 v) - log(2 pi v) / 2
    z = center[:, None] + offsets
    written = (-0.5 * (z[..., None, :] - mean) ** 2 / var - 0.5 * torch.log(2 * math.pi * var)).sum(-1)
    torch.testing.assert_close(got, written)
    zero = fast.gaussian_log_density_around(center, torch.zeros(3, 1, 4, dtype=torch.float64), mean, var)[:, 0]
    torch.testing.assert_close(zero, spe.gaussian_log_density(center, mean, var), rtol=0, atol=1e-12)


def test_probability_space_mean_equals_the_log_space_form_even_when_a_class_underflows():
    log_lik = torch.randn(4, 7, 3, generator=gen(12))  # float32, (q, S, C)
    log_lik[2, :, 1] -= 200.0  # class 1 of query 2: probability ~e^-200, below float32's range
    plain = torch.logsumexp(F.log_softmax(log_lik, -1), 1) - math.log(7)
    got = fast.log_mean_softmax(log_lik)
    torch.testing.assert_close(got, plain)
    assert got[2, 1] < -190  # the fallback kept the tiny probability instead of clamping it to 1e-30


def test_query_chunks_cover_the_queries_in_order_and_refuse_what_cannot_fit():
    for n, per in [(350, 70 * 200 * 2), (1, 10), (1000, 1), (17, fast.CHUNK_ELEMENTS + 1)]:
        chunks = fast.query_chunks(n, per)
        assert torch.equal(torch.cat([torch.arange(n)[sl] for sl in chunks]), torch.arange(n))
        assert all(max(1, fast.CHUNK_ELEMENTS // per) == sl.stop - sl.start for sl in chunks)
    for fn in (fast.log_posterior_naive, fast.log_posterior_intersection):
        with pytest.raises(InputError, match=r"one query would take .* TB, .*fewer samples per query"):
            fn(torch.zeros(3, 2), torch.ones(3, 2), torch.zeros(4, 2), torch.ones(4, 2), 10**12)


def test_the_head_runs_the_fast_forms():
    """The head's training loss is the fast intersection sampler's cross-entropy on the target class, its posterior
    the fast naive sampler's: the path every recorded result was trained and evaluated with."""
    head = fast.SPE(8, 2).double()
    q_mean, q_var, c_mean, _ = case(6, 4, 2, 5)
    support = Embedding.gaussian(c_mean.repeat(2, 1), torch.full((8, 2), 0.1, dtype=torch.float64))
    labels, y = torch.arange(4).repeat(2), torch.tensor([0, 1, 2, 3, 0, 1])
    query = Embedding.gaussian(q_mean, q_var)
    mu, var = head.class_distributions(support, labels)
    loss = head.loss(query, y, support, labels, generator=gen(4))
    want = -fast.log_posterior_intersection(q_mean, q_var, mu, var, 1, gen(4), targets=y).mean()
    assert torch.equal(loss, want)
    log_p = head.log_posterior(query, support, labels, generator=gen(5))
    assert torch.equal(log_p, fast.log_posterior_naive(q_mean, q_var, mu, var, 200, gen(5)))
