"""Oracle tests of hedgekit.evaluation.neighbours (top-k neighbours, score functions, KNN votes): a full stable
sort of the score matrix, brute force, hand-computed votes."""

import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.evaluation import neighbours as N


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ----------------------------------------------------------------------------
# top-k neighbours (HIB 4.3, URL)
# ----------------------------------------------------------------------------
def _matrix_score_fn(S):
    St = torch.as_tensor(S)
    return lambda idx: St[idx]


def _brute_topk(S, k, exclude=None):
    S = np.array(S, dtype=np.float64)
    if exclude is not None:
        rows = np.flatnonzero(exclude >= 0)
        S[rows, exclude[rows]] = -np.inf
    order = np.argsort(-S, axis=1, kind="stable")[:, :k]  # ties -> lower index
    return order, np.take_along_axis(S, order, axis=1)


@pytest.mark.parametrize("with_exclude", [False, True])
def test_topk_neighbours_vs_full_sort(rng, with_exclude):
    n_probe, n_gallery, k = 157, 83, 7
    S = rng.normal(size=(n_probe, n_gallery))
    exclude = rng.integers(-1, n_gallery, size=n_probe) if with_exclude else None
    idx, sc = N.topk_neighbours(_matrix_score_fn(S), n_probe, n_gallery, k, exclude=exclude, chunk=40)
    bidx, bsc = _brute_topk(S, k, exclude)
    assert idx.shape == (n_probe, k) and idx.dtype == np.int64
    np.testing.assert_array_equal(idx, bidx)
    np.testing.assert_allclose(sc, bsc)
    if with_exclude:
        assert not np.any(idx == exclude[:, None])


def test_topk_neighbours_ties_go_to_lower_index(rng):
    # integer scores: many ties, including at the k-th place
    n_probe, n_gallery, k = 60, 30, 5
    S = rng.integers(0, 4, size=(n_probe, n_gallery)).astype(np.float32)
    exclude = rng.integers(-1, n_gallery, size=n_probe)
    for ex in (None, exclude):
        idx, sc = N.topk_neighbours(_matrix_score_fn(S), n_probe, n_gallery, k, exclude=ex, chunk=17)
        bidx, bsc = _brute_topk(S, k, ex)
        np.testing.assert_array_equal(idx, bidx)
        np.testing.assert_array_equal(sc, bsc)
        assert sc.dtype == np.float32


def test_topk_neighbours_does_not_depend_on_the_chunk(rng):
    """One probe per call, a few, and the whole matrix at once: the same neighbours and scores, bit for bit
    (exclusions and ties at the k-th place included), and equal to a full stable sort."""
    n_probe, n_gallery, k = 61, 29, 4
    S = rng.integers(0, 6, size=(n_probe, n_gallery)).astype(np.float32)
    exclude = rng.integers(-1, n_gallery, size=n_probe)
    runs = [N.topk_neighbours(_matrix_score_fn(S), n_probe, n_gallery, k, exclude=exclude, chunk=c)
            for c in (1, 7, n_probe, 10 * n_probe)]
    bidx, bsc = _brute_topk(S, k, exclude)
    for idx, sc in runs:
        np.testing.assert_array_equal(idx, bidx)
        np.testing.assert_array_equal(sc, bsc)
        assert idx.dtype == np.int64 and sc.dtype == np.float32


@pytest.mark.parametrize("row", [0, 20, 39], ids=["first chunk", "middle chunk", "last chunk"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_topk_neighbours_refuses_a_non_finite_score_in_any_chunk(rng, row, bad):
    """The check runs once, after the last chunk: a NaN/+inf in any chunk still gives the same InputError."""
    S = rng.normal(size=(40, 30))
    S[row, 11] = bad
    for chunk in (8, 40):
        with pytest.raises(InputError, match="^score_fn returned NaN or inf scores$"):
            N.topk_neighbours(_matrix_score_fn(S), 40, 30, 3, exclude=np.arange(40) % 30, chunk=chunk)


def test_euclidean_score_fn_vs_numpy(rng):
    P, G = rng.normal(size=(50, 3)), rng.normal(size=(70, 3))
    fn = N.euclidean_score_fn(torch.tensor(P), G)
    got = fn(torch.tensor([3, 0, 49])).numpy()
    want = -np.linalg.norm(P[[3, 0, 49], None, :] - G[None], axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    idx, sc = N.topk_neighbours(fn, 50, 70, 5, chunk=16)
    D = np.linalg.norm(P[:, None] - G[None], axis=2)
    np.testing.assert_array_equal(idx, np.argsort(D, axis=1, kind="stable")[:, :5])
    np.testing.assert_allclose(-sc, np.sort(D, axis=1)[:, :5], rtol=1e-12)


def test_topk_neighbours_errors(rng):
    S = rng.normal(size=(4, 3))
    fn = _matrix_score_fn(S)
    with pytest.raises(InputError, match="larger than the gallery"):
        N.topk_neighbours(fn, 4, 3, 4)
    with pytest.raises(InputError, match="larger than the gallery"):
        N.topk_neighbours(fn, 4, 3, 3, exclude=np.array([0, -1, -1, -1]))
    with pytest.raises(InputError, match="length mismatch"):
        N.topk_neighbours(fn, 4, 3, 1, exclude=np.array([0, 1]))
    with pytest.raises(InputError, match="exclude values"):
        N.topk_neighbours(fn, 4, 3, 1, exclude=np.array([0, 1, 2, 3]))
    with pytest.raises(InputError, match="expected"):
        N.topk_neighbours(fn, 4, 5, 1)
    with pytest.raises(InputError, match="NaN or inf"):
        N.topk_neighbours(lambda idx: torch.full((len(idx), 3), float("nan")), 4, 3, 1)
    S_nan = rng.normal(size=(40, 30))
    S_nan[17, 29] = np.nan  # a single NaN anywhere in the matrix is caught
    with pytest.raises(InputError, match="NaN or inf"):
        N.topk_neighbours(_matrix_score_fn(S_nan), 40, 30, 3, chunk=8)
    S_inf = rng.normal(size=(40, 30))
    S_inf[33, 2] = np.inf
    with pytest.raises(InputError, match="NaN or inf"):
        N.topk_neighbours(_matrix_score_fn(S_inf), 40, 30, 3, chunk=8)
    with pytest.raises(InputError, match="k must be an integer >= 1"):
        N.topk_neighbours(fn, 4, 3, 0)
    with pytest.raises(InputError, match="D=3 but gallery has D=2"):
        N.euclidean_score_fn(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(InputError, match="NaN or inf"):
        N.euclidean_score_fn(np.full((2, 2), np.inf), np.zeros((2, 2)))


# ----------------------------------------------------------------------------
# KNN votes (HIB 4.3 majority, Appendix G plurality)
# ----------------------------------------------------------------------------
def test_knn_votes_hand_cases():
    nl = np.array(
        [
            [1, 1, 2, 2, 3],  # 2-2-1: no majority; plurality tie 1/2, closest is 1
            [2, 1, 1, 2, 3],  # tie 1/2, closest of the tied classes is 2
            [3, 1, 1, 2, 2],  # tie 1/2; 3 is closest but not tied -> 1
            [4, 4, 4, 1, 2],  # 3 of 5 > 5/2: majority 4
            [0, 5, 6, 7, 8],  # all different: plurality = closest, no majority
        ]
    )
    pred, support = N.knn_predict(nl, "plurality")
    np.testing.assert_array_equal(pred, [1, 2, 1, 4, 0])
    np.testing.assert_array_equal(support, [2, 2, 2, 3, 1])
    pred, support = N.knn_predict(nl, "majority")
    np.testing.assert_array_equal(pred, [-1, -1, -1, 4, -1])
    np.testing.assert_array_equal(support, [2, 2, 2, 3, 1])

    true = np.array([1, 1, 2, 4, 0])
    acc, correct = N.knn_accuracy(nl, true, "majority")
    np.testing.assert_array_equal(correct, [False, False, False, True, False])
    assert acc == pytest.approx(0.2)
    acc, correct = N.knn_accuracy(nl, true, "plurality")
    np.testing.assert_array_equal(correct, [True, False, False, True, True])
    assert acc == pytest.approx(0.6)


def test_majority_needs_strictly_more_than_half():
    # k = 4: 2 of 4 (= k/2) is not a majority, 3 of 4 is
    nl = torch.tensor([[1, 1, 2, 3], [1, 2, 1, 1], [7, 7, 8, 8]])
    acc, correct = N.knn_accuracy(nl, [1, 1, 7], "majority")
    np.testing.assert_array_equal(correct, [False, True, False])
    assert acc == pytest.approx(1 / 3)
    # plurality: [7,7,8,8] tie -> closest (7)
    _, correct = N.knn_accuracy(nl, [1, 1, 7], "plurality")
    np.testing.assert_array_equal(correct, [True, True, True])
    # k = 1: the single neighbour is a majority
    _, correct = N.knn_accuracy([[3], [4]], [3, 3], "majority")
    np.testing.assert_array_equal(correct, [True, False])


def test_knn_errors():
    with pytest.raises(InputError, match="vote must be one of"):
        N.knn_predict([[1, 2]], "mode")
    with pytest.raises(InputError, match="2-D"):
        N.knn_predict([1, 2, 3])
    with pytest.raises(InputError, match="non-negative"):
        N.knn_predict([[1, -2]])
    with pytest.raises(InputError, match="length mismatch"):
        N.knn_accuracy([[1, 2], [1, 1]], [1, 2, 3])
