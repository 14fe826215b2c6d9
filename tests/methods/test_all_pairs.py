"""`all_pairs_nll`, the fast form of eq. 5 over all pairs of a batch, against its plain form on the full matrix
(`hedgekit.methods.hib.all_pairs_mean_nll`) and finite differences."""
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.methods.all_pairs import all_pairs_nll
from hedgekit.methods.contrastive import TINY
from hedgekit.methods.hib import all_pairs_mean_nll
from hedgekit.nets.match import SoftMatch


def _naive(s, match, labels):
    """The two mean NLLs from the full (B, B, K, K) distances: the plain form of the HIB page."""
    return all_pairs_mean_nll(s, match, labels[:, None] == labels[None])


def _grads(out, weights, *tensors):
    return torch.autograd.grad((out * weights).sum(), tensors)


@pytest.mark.parametrize("b,k,d,chunks", [(9, 3, 2, 1), (9, 3, 2, 4), (9, 3, 2, 9), (12, 1, 3, 5), (10, 8, 4, 3),
                                           (7, 2, 1, 20)])
def test_matches_log_match_values_and_gradients(b, k, d, chunks):
    gen = torch.Generator().manual_seed(b * 100 + k)
    s = torch.randn(b, k, d, dtype=torch.float64, generator=gen, requires_grad=True)
    labels = torch.arange(b) % 3
    match = SoftMatch(1.7, 0.4).double()
    w = torch.tensor([0.3, 0.7], dtype=torch.float64)
    ours = all_pairs_nll(s, match.a, match.b, labels[:, None] == labels[None], chunks)
    ref = _naive(s, match, labels)
    torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)
    for g1, g2 in zip(_grads(ours, w, s, match.a_raw, match.b), _grads(ref, w, s, match.a_raw, match.b)):
        torch.testing.assert_close(g1, g2, rtol=1e-10, atol=1e-12)


def test_gradcheck_finite_differences():
    gen = torch.Generator().manual_seed(0)
    s = torch.randn(6, 2, 2, dtype=torch.float64, generator=gen, requires_grad=True)
    a = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    same = labels[:, None] == labels[None]
    assert torch.autograd.gradcheck(lambda s, a, b: all_pairs_nll(s, a, b, same, 2), (s, a, b))


@pytest.mark.parametrize("classes, k, d", [(16, 8, 2), (32, 4, 2), (32, 8, 2), (32, 8, 3)])
def test_float32_batch_of_the_training_recipe(classes, k, d):
    """The recipes' batches of 8 images per class (`fast`: 16 classes, K = 8; `paper`: 32 classes, K = 4, and K = 8
    for the D = 3 models): the float32 results agree with the full matrix to rounding. The fast form's distances come
    from a (BK)-row ``cdist``, which expands the square, the plain form's from differences: gradients of up to ~1e-3
    here differ by up to ~2e-7 where two samples nearly coincide."""
    gen = torch.Generator().manual_seed(1)
    s = torch.randn(classes * 8, k, d, generator=gen, requires_grad=True)
    labels = torch.arange(classes).repeat_interleave(8)
    match = SoftMatch()
    ours = all_pairs_nll(s, match.a, match.b, labels[:, None] == labels[None])
    ref = _naive(s, match, labels)
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)
    w = torch.tensor([0.5, 0.5])
    g_ours, g_ref = _grads(ours, w, s)[0], _grads(ref, w, s)[0]
    torch.testing.assert_close(g_ours, g_ref, rtol=1e-4, atol=1e-3 * float(g_ref.abs().max()))


def test_zero_distance_pairs_get_zero_gradient():
    """Two inputs with the same point embedding: the norm's subgradient at 0 is 0, no NaN."""
    s = torch.tensor([[[0.0, 0.0]], [[0.0, 0.0]], [[1.0, 2.0]]], requires_grad=True)
    labels = torch.tensor([0, 0, 1])
    match = SoftMatch(2.0, 1.0)
    out = all_pairs_nll(s, match.a, match.b, labels[:, None] == labels[None])
    p = torch.sigmoid(torch.tensor(1.0))  # the matching pair at distance 0
    torch.testing.assert_close(out[0], -p.log())
    (g,) = torch.autograd.grad(out.sum(), s)
    assert torch.isfinite(g).all()
    # only the non-matching pairs move the points; by symmetry the two coincident points move alike
    torch.testing.assert_close(g[0], g[1])


def test_underflow_floor_like_log_match():
    """Every sample pair with |a d - b| > 87: p underflows, -log is floored at -log(1e-38), gradient 0."""
    s = torch.tensor([[[0.0]], [[100.0]], [[200.0]], [[300.0]]], requires_grad=True)
    labels = torch.tensor([0, 0, 1, 1])
    match = SoftMatch(5.0, 0.0)
    out = all_pairs_nll(s, match.a, match.b, labels[:, None] == labels[None])
    torch.testing.assert_close(out[0], -torch.tensor(TINY).log())
    (g,) = torch.autograd.grad(out[0], s)
    assert (g == 0).all()


@pytest.mark.parametrize("chunks", [0, 2.5])
def test_bad_chunks_raise_clear_errors(chunks):
    """The fast path's own tuning knob is checked here; what the loss is computed on (the samples, the batch's
    matching and non-matching pairs) is checked where it enters: `Embedding` and `TrainConfig`
    (tests/training/test_fit.py)."""
    same = torch.tensor([0, 0, 1, 1])[:, None] == torch.tensor([0, 0, 1, 1])[None]
    with pytest.raises(InputError, match="chunks must be an integer >= 1"):
        all_pairs_nll(torch.zeros(4, 1, 2), torch.tensor(1.0), torch.tensor(0.0), same, chunks)
