"""Oracle tests of hedgekit.evaluation.metrics: sklearn/scipy, brute force, hand-computed cases."""

import math

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.metrics import average_precision_score, roc_auc_score

from hedgekit.evaluation import metrics as M
from hedgekit.errors import InputError


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ----------------------------------------------------------------------------
# verification pairs and AP (HIB 4.3)
# ----------------------------------------------------------------------------
def test_verification_pairs_half_matching_distinct_deterministic(rng):
    labels = rng.integers(0, 30, size=500)
    i, j, same = M.verification_pairs(labels, n_pairs=2000, seed=7)
    assert i.dtype == np.int64 and j.dtype == np.int64 and same.dtype == bool
    assert len(i) == len(j) == len(same) == 2000
    assert same.sum() == 1000
    assert np.all(i != j)
    np.testing.assert_array_equal(same, labels[i] == labels[j])
    assert i.min() >= 0 and max(i.max(), j.max()) < len(labels)
    i2, j2, same2 = M.verification_pairs(labels, n_pairs=2000, seed=7)
    np.testing.assert_array_equal(i, i2)
    np.testing.assert_array_equal(j, j2)
    np.testing.assert_array_equal(same, same2)
    i3, _, _ = M.verification_pairs(labels, n_pairs=2000, seed=8)
    assert not np.array_equal(i, i3)
    # pairs come shuffled, not all matches first
    assert not same[:1000].all()


def test_verification_pairs_torch_and_skewed_classes():
    # one big class and many singletons: matches only from the big class
    labels = torch.tensor([0] * 5 + list(range(1, 40)))
    i, j, same = M.verification_pairs(labels, n_pairs=400, seed=0)
    lab = labels.numpy()
    assert np.all(lab[i[same]] == 0) and np.all(lab[j[same]] == 0)
    assert np.all(lab[i[~same]] != lab[j[~same]])
    assert np.all(i != j)


def test_verification_pairs_errors():
    with pytest.raises(InputError, match="no class has >= 2 items"):
        M.verification_pairs(np.arange(10), n_pairs=10)
    with pytest.raises(InputError, match="even"):
        M.verification_pairs(np.array([0, 0, 1, 1]), n_pairs=11)
    with pytest.raises(InputError, match="one label"):
        M.verification_pairs(np.zeros(10, dtype=int), n_pairs=10)
    with pytest.raises(InputError, match="empty"):
        M.verification_pairs(np.array([], dtype=int))
    with pytest.raises(InputError, match="integers"):
        M.verification_pairs(np.array([0.5, 0.5, 1.0]))


def test_average_precision_vs_sklearn(rng):
    for _ in range(5):
        is_match = rng.random(300) < 0.3
        scores = rng.normal(size=300) + is_match
        assert M.average_precision(scores, is_match) == pytest.approx(
            average_precision_score(is_match, scores), abs=1e-12
        )
    # torch inputs and 0/1 ints give the same number
    is_match = rng.random(100) < 0.5
    scores = rng.normal(size=100)
    a = M.average_precision(torch.tensor(scores, dtype=torch.float64), torch.tensor(is_match.astype(int)))
    assert a == pytest.approx(M.average_precision(scores, is_match), abs=1e-12)
    assert isinstance(a, float)


def test_average_precision_hand_computed():
    # ranking: match, non, match, non -> AP = 0.5 * 1 + 0.5 * 2/3
    assert M.average_precision([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0]) == pytest.approx(5 / 6)
    # a tie at the top is one threshold: P = 1/2 at R = 1/2, then P = 2/3 at R = 1
    assert M.average_precision([0.5, 0.5, 0.1], [True, False, True]) == pytest.approx(0.5 * 0.5 + 0.5 * 2 / 3)
    assert M.average_precision([0.3, 0.2], [1, 1]) == pytest.approx(1.0)


def test_average_precision_errors():
    with pytest.raises(InputError, match="NaN or inf"):
        M.average_precision([0.1, np.nan], [1, 0])
    with pytest.raises(InputError, match="length mismatch"):
        M.average_precision([0.1, 0.2, 0.3], [1, 0])
    with pytest.raises(InputError, match="no positive"):
        M.average_precision([0.1, 0.2], [0, 0])
    with pytest.raises(InputError, match="0/1"):
        M.average_precision([0.1, 0.2], [2, 0])
    with pytest.raises(InputError, match="1-D"):
        M.average_precision(np.zeros((2, 2)), [1, 0])
    with pytest.raises(InputError, match="empty"):
        M.average_precision([], [])


# ----------------------------------------------------------------------------
# uncertainty bins and Kendall's tau (HIB 4.4)
# ----------------------------------------------------------------------------
def test_equal_count_bins_sizes_and_order(rng):
    for n, b in [(103, 20), (100, 20), (20, 20), (57, 1), (1000, 7)]:
        u = rng.normal(size=n)
        bins = M.equal_count_bins(u, b)
        sizes = np.bincount(bins, minlength=b)
        assert len(sizes) == b and sizes.sum() == n
        assert sizes.max() - sizes.min() <= 1
        # bins are contiguous in u: every item in bin t has u <= every item in bin t+1
        for t in range(b - 1):
            assert u[bins == t].max() <= u[bins == t + 1].min()
    bins = M.equal_count_bins([5.0, 1.0, 3.0, 2.0], 2)
    np.testing.assert_array_equal(bins, [1, 0, 1, 0])
    # stable: equal uncertainties keep input order
    np.testing.assert_array_equal(M.equal_count_bins(np.zeros(6), 3), [0, 0, 1, 1, 2, 2])


def test_equal_count_bins_errors():
    with pytest.raises(InputError, match="cannot fill"):
        M.equal_count_bins(np.arange(5.0), 20)
    with pytest.raises(InputError, match="empty"):
        M.equal_count_bins([], 2)
    with pytest.raises(InputError, match="NaN or inf"):
        M.equal_count_bins([1.0, np.inf], 2)


def _naive_bin_slices(n, n_bins):
    """Independent boundary rule: bin b holds ranks [ceil(b n / B), ceil((b+1) n / B))."""
    return [(math.ceil(b * n / n_bins), math.ceil((b + 1) * n / n_bins)) for b in range(n_bins)]


def test_binned_accuracy_vs_naive_loop(rng):
    for n in (200, 203):
        u = rng.random(n)
        correct = rng.random(n) < 1 - u  # accuracy falls with uncertainty
        got = M.binned_accuracy(correct, u, 20)
        order = np.argsort(u, kind="stable")
        want = []
        for lo, hi in _naive_bin_slices(n, 20):
            want.append(np.mean([correct[order[r]] for r in range(lo, hi)]))
        np.testing.assert_allclose(got, want)
    # divisible case: a plain reshape
    u = rng.random(200)
    correct = rng.random(200) < 0.5
    np.testing.assert_allclose(M.binned_accuracy(correct, u, 20), correct[np.argsort(u)].reshape(20, 10).mean(1))


def test_binned_average_precision_vs_naive_loop(rng):
    n = 400
    u = rng.random(n)
    is_match = rng.random(n) < 0.5
    scores = rng.normal(size=n) + 2 * is_match * (1 - u)
    got = M.binned_average_precision(scores, is_match, u, 10)
    order = np.argsort(u, kind="stable")
    want = [
        average_precision_score(is_match[order[lo:hi]], scores[order[lo:hi]]) for lo, hi in _naive_bin_slices(n, 10)
    ]
    np.testing.assert_allclose(got, want)


def test_binned_average_precision_single_class_bin_is_nan():
    # 4 pairs, 2 bins: the low-uncertainty bin holds only matches
    ap = M.binned_average_precision([0.9, 0.8, 0.7, 0.1], [1, 1, 1, 0], [0.1, 0.2, 0.8, 0.9], n_bins=2)
    assert np.isnan(ap[0]) and ap[1] == pytest.approx(1.0)


def test_pair_uncertainty():
    u = np.array([0.0, 1.0, 3.0])
    np.testing.assert_allclose(M.pair_uncertainty(u, [0, 1], [2, 2]), [1.5, 2.0])
    with pytest.raises(InputError, match="pair indices"):
        M.pair_uncertainty(u, [0], [3])


def test_kendall_tau_sign_convention_and_scipy(rng):
    assert M.kendall_tau_bins(np.linspace(1.0, 0.5, 20)) == pytest.approx(1.0)  # falls with uncertainty
    assert M.kendall_tau_bins(np.linspace(0.5, 1.0, 20)) == pytest.approx(-1.0)
    for _ in range(5):
        perf = rng.random(20)
        assert M.kendall_tau_bins(perf) == pytest.approx(-stats.kendalltau(np.arange(20), perf).statistic)
    # NaN bins are dropped, not counted
    assert M.kendall_tau_bins([0.9, np.nan, 0.8, 0.7]) == pytest.approx(1.0)
    perf = rng.random(20)
    perf[[3, 11]] = np.nan
    keep = ~np.isnan(perf)
    want = -stats.kendalltau(np.arange(20)[keep], perf[keep]).statistic
    assert M.kendall_tau_bins(torch.tensor(perf)) == pytest.approx(want)
    assert np.isnan(M.kendall_tau_bins([0.5, 0.5, 0.5]))


def test_kendall_tau_errors():
    with pytest.raises(InputError, match="at least 2 non-NaN"):
        M.kendall_tau_bins([0.5, np.nan])
    with pytest.raises(InputError, match="inf"):
        M.kendall_tau_bins([0.5, np.inf, 0.2])
    with pytest.raises(InputError, match="1-D"):
        M.kendall_tau_bins(np.zeros((2, 2)))


# ----------------------------------------------------------------------------
# URL: R@1, R-AUROC, crop rate and crop correlation
# ----------------------------------------------------------------------------
def test_recall_at_1_vs_brute_force(rng):
    n = 300
    labels = rng.integers(0, 10, size=n)
    emb = rng.normal(size=(n, 3)) + labels[:, None] * 0.3
    emb[10] = emb[20] = emb[30]  # exact duplicates: ties -> lower index
    D = np.linalg.norm(emb[:, None] - emb[None], axis=2)
    np.fill_diagonal(D, np.inf)
    nn = np.argmin(D, axis=1)  # first minimum = lower index
    want = labels[nn] == labels
    r1, correct = M.recall_at_1(torch.tensor(emb, dtype=torch.float64), labels, chunk=64, metric="euclidean")
    np.testing.assert_array_equal(correct, want)
    assert r1 == pytest.approx(want.mean())
    assert 0 < r1 < 1


def test_recall_at_1_small_and_errors():
    emb = np.array([[0.0], [0.1], [5.0], [5.2]])
    r1, correct = M.recall_at_1(emb, [0, 0, 1, 0], metric="euclidean")
    np.testing.assert_array_equal(correct, [True, True, False, False])
    assert r1 == pytest.approx(0.5)
    with pytest.raises(InputError, match="at least 2"):
        M.recall_at_1(np.zeros((1, 2)), [0])
    with pytest.raises(InputError, match="length mismatch"):
        M.recall_at_1(np.zeros((3, 2)), [0, 1])
    with pytest.raises(InputError, match="2-D"):
        M.recall_at_1(np.zeros(3), [0, 1, 2])


def brute_force_recall_at_1(emb, labels, metric):
    """Second implementation: a double loop over (query, other item), first best kept (ties -> lower index).
    Cosine as in the URL code: rows scaled to unit length first, a zero row stays zero (similarity 0)."""
    emb = np.asarray(emb, dtype=float)
    if metric == "cosine":
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        emb = emb / np.where(norms > 0, norms, 1.0)
    correct = []
    for i in range(len(emb)):
        best_score, best_j = -math.inf, None
        for j in range(len(emb)):
            if j == i:
                continue
            score = float(emb[i] @ emb[j]) if metric == "cosine" else -math.dist(emb[i], emb[j])
            if score > best_score:
                best_score, best_j = score, j
        correct.append(labels[best_j] == labels[i])
    return np.array(correct)


@pytest.mark.parametrize("emb, labels, want", [
    # two classes on two rays, different lengths: only the angle finds the own ray
    ([[1, 0], [10, 0], [0, 1], [0, 10], [9, 1]], [0, 0, 1, 1, 1],
     {"euclidean": [False, False, False, True, False], "cosine": [True, True, True, True, False]}),
    # two classes by length along almost one direction: only the distance separates them
    ([[1, 0], [1.1, 0.05], [5, 0], [5.2, 0.1]], [0, 0, 1, 1],
     {"euclidean": [True, True, True, True], "cosine": [False, False, False, False]}),
    # a zero embedding: cosine similarity 0 to everything, ties -> lower index
    ([[0, 0], [1, 0], [2, 0], [0, 1]], [0, 1, 1, 0],
     {"euclidean": [False, False, True, True], "cosine": [False, True, True, True]}),
])
def test_recall_at_1_metrics_on_hand_made_cases(emb, labels, want):
    labels = np.array(labels)
    for metric, expected in want.items():
        np.testing.assert_array_equal(brute_force_recall_at_1(emb, labels, metric), expected)  # the oracle agrees
        r1, correct = M.recall_at_1(np.array(emb, float), labels, metric=metric)
        np.testing.assert_array_equal(correct, expected)
        assert r1 == pytest.approx(np.mean(expected))
    assert want["euclidean"] != want["cosine"]


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_recall_at_1_metrics_vs_brute_force(rng, metric):
    labels = rng.integers(0, 5, size=150)
    emb = rng.normal(size=(150, 3)) * rng.uniform(0.2, 5, size=(150, 1)) + labels[:, None] * 0.5
    r1, correct = M.recall_at_1(torch.tensor(emb), labels, chunk=32, metric=metric)
    np.testing.assert_array_equal(correct, brute_force_recall_at_1(emb, labels, metric))
    assert 0 < r1 < 1
    if metric == "cosine":  # the default: the URL benchmark's
        np.testing.assert_array_equal(correct, M.recall_at_1(emb, labels)[1])
    else:
        assert not np.array_equal(correct, M.recall_at_1(emb, labels)[1])


@pytest.mark.parametrize("metric", ["manhattan", "Cosine", None])
def test_recall_at_1_unknown_metric(metric):
    with pytest.raises(InputError, match=r"metric must be one of \('euclidean', 'cosine'\)"):
        M.recall_at_1(np.zeros((3, 2)), [0, 1, 0], metric=metric)


def test_cosine_score_fn_checks_like_euclidean():
    with pytest.raises(InputError, match="D=2 but gallery has D=3"):
        M.cosine_score_fn(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(InputError, match="NaN or inf"):
        M.cosine_score_fn(np.array([[np.nan, 1.0]]), np.ones((2, 2)))
    scores = M.cosine_score_fn(np.array([[3.0, 4.0]]), np.array([[1.0, 0.0], [0.0, -2.0], [0.0, 0.0]]))
    torch.testing.assert_close(scores(torch.tensor([0])), torch.tensor([[0.6, -0.8, 0.0]], dtype=torch.float64))


def test_r_auroc_vs_sklearn_and_perfect(rng):
    correct = rng.random(500) < 0.6
    u = rng.normal(size=500) + ~correct
    assert M.r_auroc(u, correct) == pytest.approx(roc_auc_score(~correct, u))
    assert M.r_auroc(~correct + 0.01 * rng.random(500), correct) == pytest.approx(1.0)  # errors most uncertain
    assert M.r_auroc(correct.astype(float), correct) == pytest.approx(0.0)
    assert M.r_auroc(np.zeros(500), correct) == pytest.approx(0.5)  # constant u = chance
    with pytest.raises(InputError, match="both correct and wrong"):
        M.r_auroc([0.1, 0.2], [True, True])
    with pytest.raises(InputError, match="both correct and wrong"):
        M.r_auroc([0.1, 0.2], [False, False])


def test_crop_uncertainty_rate():
    assert M.crop_uncertainty_rate([1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 1.0, 5.0]) == pytest.approx(0.5)  # tie = fail
    assert M.crop_uncertainty_rate(torch.zeros(3), torch.ones(3)) == 1.0
    with pytest.raises(InputError, match="length mismatch"):
        M.crop_uncertainty_rate([1.0], [1.0, 2.0])
    with pytest.raises(InputError, match="NaN or inf"):
        M.crop_uncertainty_rate([np.nan], [1.0])


def test_crop_uncertainty_correlation_hand_computed():
    u_crop = [0.5, 0.2, 0.9, 0.1, 0.4]
    kept = [0.3, 0.6, 0.25, 0.5, 0.45]
    # ranks by hand: -u = (-0.5, -0.2, -0.9, -0.1, -0.4) -> (2, 4, 1, 5, 3); kept -> (2, 5, 1, 4, 3)
    # d = (0, -1, 0, 1, 0), no ties: rho = 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 6 * 2 / 120 = 0.9
    assert M.crop_uncertainty_correlation(u_crop, kept) == pytest.approx(0.9)
    assert M.crop_uncertainty_correlation(torch.tensor(u_crop), torch.tensor(kept)) == pytest.approx(0.9)


def test_crop_uncertainty_correlation_ties_get_average_ranks():
    # -u = (-0.3, -0.3, -0.1, -0.8) -> ranks (2.5, 2.5, 4, 1) (the tie shares 2 and 3); kept -> (2, 3, 4, 1)
    # Pearson of the ranks (means 2.5): cov = 0 + 0 + 2.25 + 2.25 = 4.5, ss = 4.5 and 5 -> rho = sqrt(0.9);
    # the no-ties shortcut 1 - 6 sum(d^2) / (n (n^2 - 1)) would give 0.95 instead
    rho = M.crop_uncertainty_correlation([0.3, 0.3, 0.1, 0.8], [0.4, 0.5, 0.7, 0.2])
    assert rho == pytest.approx(math.sqrt(0.9))
    # the mirror case, ties in the kept fractions: kept (0.4, 0.4, 0.7, 0.2) -> (2.5, 2.5, 4, 1),
    # -u = (-0.5, -0.3, -0.1, -0.8) -> (2, 3, 4, 1): the same sums, rho = sqrt(0.9)
    rho = M.crop_uncertainty_correlation([0.5, 0.3, 0.1, 0.8], [0.4, 0.4, 0.7, 0.2])
    assert rho == pytest.approx(math.sqrt(0.9))


def test_crop_uncertainty_correlation_perfect_orders():
    kept = np.array([0.1, 0.3, 0.35, 0.6, 0.75])
    assert M.crop_uncertainty_correlation(1 / kept, kept) == 1.0  # less kept, more uncertain: the goal
    assert M.crop_uncertainty_correlation(kept ** 2, kept) == -1.0  # less kept, less uncertain
    assert M.crop_uncertainty_correlation(-np.log(kept), kept ** 2) == 1.0  # ranks only: side or area fraction


def test_crop_uncertainty_correlation_vs_scipy(rng):
    kept = rng.uniform(0.1, 0.75, 400)
    u_crop = -kept + rng.normal(scale=0.2, size=400)
    u_crop[:40] = np.round(u_crop[:40], 1)  # some ties
    want = stats.spearmanr(-u_crop, kept).statistic  # the official code's rcorr_crop_unc
    assert M.crop_uncertainty_correlation(u_crop, kept) == pytest.approx(want, abs=1e-12)
    assert 0.5 < want < 1


def test_crop_uncertainty_correlation_undefined_and_errors():
    assert math.isnan(M.crop_uncertainty_correlation([0.2, 0.2, 0.2], [0.3, 0.4, 0.5]))  # u(x) does not vary
    with pytest.raises(InputError, match="crop_fraction is constant"):
        M.crop_uncertainty_correlation([0.1, 0.2, 0.3], [0.4, 0.4, 0.4])
    with pytest.raises(InputError, match="at least 3"):
        M.crop_uncertainty_correlation([0.1, 0.2], [0.3, 0.4])
    with pytest.raises(InputError, match="length mismatch"):
        M.crop_uncertainty_correlation([0.1, 0.2, 0.3], [0.3, 0.4, 0.5, 0.6])
    with pytest.raises(InputError, match="1-D"):
        M.crop_uncertainty_correlation(np.zeros((3, 2)), np.full((3, 2), 0.5))
    with pytest.raises(InputError, match="NaN or inf"):
        M.crop_uncertainty_correlation([0.1, np.inf, 0.3], [0.3, 0.4, 0.5])
    with pytest.raises(InputError, match="NaN or inf"):
        M.crop_uncertainty_correlation([0.1, 0.2, 0.3], [0.3, np.nan, 0.5])
    for bad in ([0.0, 0.4, 0.5], [0.3, 0.4, 1.5]):
        with pytest.raises(InputError, match=r"in \(0, 1\]"):
            M.crop_uncertainty_correlation([0.1, 0.2, 0.3], bad)


# ----------------------------------------------------------------------------
# HIB Appendix D: number-line organisation
# ----------------------------------------------------------------------------
def _as_centroids(order, rng):
    """Class ids and centroids (shuffled) whose sorted order is `order`."""
    order = np.asarray(order)
    cent = np.sort(rng.normal(size=len(order)))
    perm = rng.permutation(len(order))
    return cent[perm], order[perm]


def test_adjacency_boustrophedon_is_maximal(rng):
    # 00..09, 19..10, 20..29, ...: every neighbour shares the tens or the ones digit
    order = np.concatenate([np.arange(10 * t, 10 * t + 10)[:: 1 if t % 2 == 0 else -1] for t in range(10)])
    cent, ids = _as_centroids(order, rng)
    assert M.adjacency_score(cent, ids) == 99
    np.testing.assert_array_equal(M.digit_run_lengths(cent, ids), [100])
    assert M.mean_run_length(cent, ids) == 100.0


def test_adjacency_numeric_order(rng):
    # 00..99 in order: the 10 decades are runs of 10; 09->10 shares nothing
    cent, ids = _as_centroids(np.arange(100), rng)
    assert M.adjacency_score(cent, ids) == 90
    np.testing.assert_array_equal(M.digit_run_lengths(cent, ids), [10] * 10)
    assert M.mean_run_length(cent, ids) == 10.0


def test_adjacency_hand_cases(rng):
    # 00,11,...,99: no neighbour shares a digit
    cent, ids = _as_centroids(np.arange(0, 100, 11), rng)
    assert M.adjacency_score(cent, ids) == 0
    assert len(M.digit_run_lengths(cent, ids)) == 0
    assert np.isnan(M.mean_run_length(cent, ids))
    # 00-01 (tens) | 12-13 (tens): 2 pairs, two runs of 2
    assert M.adjacency_score([0.0, 1.0, 2.0, 3.0], [0, 1, 12, 13]) == 2
    assert M.mean_run_length([0.0, 1.0, 2.0, 3.0], [0, 1, 12, 13]) == 2.0
    # 00-01-11 | 22-23-33-34: pairs T T F T T T -> 5; runs of 3 and 4 classes
    order = [0, 1, 11, 22, 23, 33, 34]
    cent, ids = _as_centroids(order, rng)
    assert M.adjacency_score(cent, ids) == 5
    np.testing.assert_array_equal(M.digit_run_lengths(cent, ids), [3, 4])
    assert M.mean_run_length(cent, ids) == pytest.approx(3.5)
    # a lone class between runs does not count as a run: 05-15 | 27 | 38-39
    order = [5, 15, 27, 38, 39]
    assert M.adjacency_score(np.arange(5.0), order) == 2
    assert M.mean_run_length(np.arange(5.0), order) == 2.0
    # 3 digits: 123-456 share nothing, 456-426 share hundreds and ones (one pair)
    assert M.adjacency_score([0.0, 1.0, 2.0], [123, 456, 426], n_digits=3) == 1
    assert isinstance(M.adjacency_score([0.0, 1.0], [1, 11]), int)


def test_class_centroids():
    emb = np.array([[0.0, 2.0], [2.0, 4.0], [10.0, 10.0]])
    ids, cent = M.class_centroids(emb, [7, 7, 3])
    np.testing.assert_array_equal(ids, [3, 7])
    np.testing.assert_allclose(cent, [[10.0, 10.0], [1.0, 3.0]])
    ids, cent = M.class_centroids(torch.tensor([1.0, 3.0, -1.0]), torch.tensor([4, 4, 2]))
    np.testing.assert_allclose(cent, [-1.0, 2.0])


def test_adjacency_errors():
    with pytest.raises(InputError, match="unique"):
        M.adjacency_score([0.0, 1.0], [5, 5])
    with pytest.raises(InputError, match=r"\[0, 100\)"):
        M.adjacency_score([0.0, 1.0], [5, 100])
    with pytest.raises(InputError, match="at least 2 classes"):
        M.adjacency_score([0.0], [5])
    with pytest.raises(InputError, match="length mismatch"):
        M.mean_run_length([0.0, 1.0, 2.0], [5, 6])
    with pytest.raises(InputError, match="NaN or inf"):
        M.adjacency_score([0.0, np.nan], [5, 6])


@pytest.mark.parametrize("k", [-1, 0, 2.5, 3.0, True, None, "3", 31], ids=repr)
def test_topk_neighbours_refuses_bad_k(k):
    """top_k = -1 used to return n - 1 rows; any k that is not an integer in [1, n_gallery] is refused."""
    scores = torch.as_tensor(np.random.default_rng(0).normal(size=(5, 30)))
    score = lambda idx: scores[idx]  # noqa: E731
    with pytest.raises(InputError, match="k must be an integer >= 1|k=31 is larger than the gallery"):
        M.topk_neighbours(score, 5, 30, k)
    with pytest.raises(InputError, match="k must be an integer >= 1|k = 31 exceeds the gallery size 30"):
        M.top_k_accuracy(np.zeros((5, 2)), np.arange(5), np.zeros((30, 2)), np.arange(30), ks=(1, k))


def test_one_array_check_for_floats_ints_and_bools():
    """Every metric reads its inputs through one check (`hedgekit.evaluation.arrays.checked_array`): floats, class ids / indices and 0/1
    flags each get their own dtype rule; numpy, lists and torch give the same result."""
    u, i, j = [0.2, 0.4, 1.0], [0, 2], [1, 1]
    assert M.pair_uncertainty(u, i, j).tolist() == pytest.approx([0.3, 0.7])  # (0.2 + 0.4) / 2, (1.0 + 0.4) / 2
    assert M.pair_uncertainty(torch.tensor(u), torch.tensor(i), np.array(j)).tolist() == pytest.approx([0.3, 0.7])
    assert M.r_auroc([0.9, 0.1, 0.5], [0, 1, 1]) == M.r_auroc([0.9, 0.1, 0.5], [False, True, True]) == 1.0
    for bad, match in [(dict(u=[[0.2]]), "u must be 1-D"), (dict(u=[]), "u is empty"), (dict(u=["a"]), "numeric"),
                       (dict(u=[np.inf]), "NaN or inf"), (dict(i=[0.0]), "i must hold integers")]:
        args = dict(u=u, i=[0], j=[0]) | bad
        with pytest.raises(InputError, match=match):
            M.pair_uncertainty(**args)
    with pytest.raises(InputError, match="boolean"):
        M.r_auroc([0.9, 0.1], [0, 2])
    with pytest.raises(InputError, match="boolean"):
        M.r_auroc([0.9, 0.1], ["a", "b"])
