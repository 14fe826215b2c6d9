"""hedgekit.papers.taha.protocol against naive loops, scipy/sklearn and hand-made cases (tiny synthetic data)."""
import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.evaluation import metrics as M
from hedgekit.nets import build_model
from hedgekit.papers.taha import protocol as P


def _blobs(n_per=40, classes=4, dim=3, spread=0.3, seed=0):
    rng = np.random.default_rng(seed)
    centres = 10 * np.eye(classes, dim) if dim >= classes else 10 * rng.normal(size=(classes, dim))
    labels = np.repeat(np.arange(classes), n_per)
    return centres[labels] + spread * rng.normal(size=(len(labels), dim)), labels


def test_precision_recall_at_hand_case():
    score = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0])
    flipped = np.array([1, 0, 1, 0, 0, 0, 0, 0, 0, 1], bool)
    r10, r30, r100 = P.precision_recall_at(score, flipped, (0.1, 0.3, 1.0))
    assert (r10["n"], r10["precision"], r10["recall"]) == (1, 1.0, pytest.approx(1 / 3))
    assert (r30["n"], r30["precision"], r30["recall"]) == (3, pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert (r100["precision"], r100["recall"]) == (pytest.approx(0.3), 1.0)
    with pytest.raises(InputError, match="no item is flipped"):
        P.precision_recall_at(score, np.zeros(10, bool))


def test_centroid_triplet_loss_matches_a_loop():
    emb, labels = _blobs(n_per=5, classes=3, spread=2.0)
    got = P.centroid_triplet_loss(emb, labels)
    cents = {c: emb[labels == c].mean(0) for c in range(3)}
    for i in range(len(emb)):
        d_pos = np.linalg.norm(emb[i] - cents[labels[i]])
        d_neg = min(np.linalg.norm(emb[i] - cents[c]) for c in cents if c != labels[i])
        assert got[i] == pytest.approx(np.log1p(np.exp(d_pos - d_neg)))


def test_detectors_find_flipped_labels_in_separated_clusters():
    emb, true = _blobs(n_per=60, classes=4, spread=0.5, seed=1)
    rng = np.random.default_rng(2)
    flipped = rng.random(len(true)) < 0.1
    given = np.where(flipped, (true + 1) % 4, true)
    scores = P.detection_scores(emb, rng.random(len(true)), given, folds=3)
    rate = flipped.mean()
    for name in ("small loss", "cleanlab"):
        (r,) = P.precision_recall_at(scores[name], flipped, (rate,))
        assert r["precision"] > 0.9, name  # a flipped point sits inside another class's cluster
    assert (scores["cleanlab_flagged"] & flipped).sum() > 0.9 * flipped.sum()
    table = P.detection_table(scores, flipped, (0.05, rate))
    assert set(table.detector) == {"uncertainty", "small loss", "cleanlab", "cleanlab (own threshold)"}


def test_out_of_fold_probabilities_are_distributions():
    emb, labels = _blobs(n_per=20, classes=3)
    p = P.out_of_fold_probabilities(emb, labels, folds=4)
    assert p.shape == (60, 3)
    np.testing.assert_allclose(p.sum(1), 1.0)
    assert (p.argmax(1) == labels).mean() > 0.95


def test_retrieval_metrics_and_cleaning_rows_against_metrics():
    emb, labels = _blobs(n_per=12, classes=3, spread=3.0, seed=4)
    u = np.random.default_rng(5).random(len(labels))
    q, g = P.split(labels)
    assert len(np.intersect1d(q, g)) == 0 and len(q) == 9
    out = P.retrieval_metrics(emb, labels)
    assert out["map"] == pytest.approx(M.mean_average_precision(emb[q], labels[q], emb[g], labels[g]))
    assert out["top5"] == M.top_k_accuracy(emb[q], labels[q], emb[g], labels[g], (5,))[5]
    rows = P.cleaning_rows(emb, u, labels, 0.25)
    keep = np.setdiff1d(g, g[np.argsort(-u[g], kind="stable")[:round(0.25 * len(g))]])
    assert rows["map"] == pytest.approx(out["map"])
    assert rows["uncertain"] == pytest.approx(M.mean_average_precision(emb[q], labels[q], emb[keep], labels[keep]))
    assert 0 < rows["random"] <= 1


def test_mean_std():
    s = P.mean_std([{"a": 1.0}, {"a": 3.0}])
    assert s["a"] == (2.0, pytest.approx(np.sqrt(2)))
    assert np.isnan(P.mean_std([{"a": 1.0}])["a"][1])


def test_most_uncertain_per_class_and_flipped_share():
    u = np.array([0.1, 0.9, 0.5, 0.3, 0.8, 0.2])
    labels = np.array([0, 0, 0, 1, 1, 1])
    picked = P.most_uncertain_per_class(u, labels, n=2)
    assert [list(v) for v in picked.values()] == [[1, 2], [4, 3]]
    flipped = np.array([0, 1, 0, 0, 1, 0], bool)
    assert P.flipped_share(picked, flipped) == 0.5


def test_ap_vs_uncertainty_pearson_and_bins():
    rng = np.random.default_rng(0)
    ap = rng.random(100)
    u = 1 - ap + 0.1 * rng.random(100)
    ap[3] = np.nan  # a query without a relevant gallery item is left out
    s = P.ap_vs_uncertainty(ap, u, n_bins=4)
    keep = np.isfinite(ap)
    assert s["r"] == pytest.approx(np.corrcoef(ap[keep], u[keep])[0, 1]) and s["n"] == 99
    order = np.argsort(ap[keep], kind="stable")
    assert s["u_mean"][0] == pytest.approx(u[keep][order[:25]].mean())
    assert np.all(np.diff(s["u_mean"]) < 0)


def test_top_retrievals_is_a_sorted_brute_force():
    rng = np.random.default_rng(1)
    q, g = rng.normal(size=(5, 2)), rng.normal(size=(20, 2))
    got = P.top_retrievals(q, g, k=4)
    want = np.argsort(np.linalg.norm(q[:, None] - g[None], axis=2), axis=1)[:, :4]
    np.testing.assert_array_equal(got, want)


def test_pca_2d_matches_sklearn_up_to_sign():
    from sklearn.decomposition import PCA

    x = np.random.default_rng(2).normal(size=(50, 5)) * np.array([5, 3, 1, 0.5, 0.1])
    ours, ref = P.pca_2d(x), PCA(2).fit_transform(x)
    for j in range(2):
        assert abs(np.corrcoef(ours[:, j], ref[:, j])[0, 1]) == pytest.approx(1.0)


def test_centre_distance_correlation_is_one_when_u_is_the_distance():
    emb, labels = _blobs(n_per=10, classes=2, spread=1.0)
    cents = np.stack([emb[labels == c].mean(0) for c in (0, 1)])
    u = np.linalg.norm(emb - cents[labels], axis=1) ** 2
    assert P.centre_distance_correlation(emb, u, labels) == pytest.approx(1.0)


def test_per_class_map_micro_macro_and_head_tail():
    emb, labels = _blobs(n_per=8, classes=3, spread=4.0, seed=7)
    out = P.per_class_map(emb, labels)
    q, g = P.split(labels)
    ap = M.retrieval_average_precision(emb[q], labels[q], emb[g], labels[g])
    assert out["micro"] == pytest.approx(np.nanmean(ap))
    assert out["macro"] == pytest.approx(np.mean([np.nanmean(ap[labels[q] == c]) for c in range(3)]))
    ht = P.head_tail({0: 0.9, 1: 0.5, 2: 0.1, 3: 0.3}, {0: 100, 1: 50, 2: 5, 3: 10})
    assert ht["head_classes"] == [0, 1] and ht["head"] == pytest.approx(0.7) and ht["tail"] == pytest.approx(0.2)


def test_embed_returns_means_and_sigma2():
    torch.manual_seed(0)
    model = build_model("het", n_digits=1, dim=4)
    images = np.random.default_rng(0).integers(0, 255, size=(6, 28, 28), dtype=np.uint8)
    mean, u = P.embed(model, images)
    emb = model.embed(torch.as_tensor(images).float().div(255).unsqueeze(1))
    np.testing.assert_allclose(mean, emb.mean[:, 0].numpy() if emb.mean.ndim == 3 else emb.mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(u, emb.uncertainty.numpy(), rtol=1e-5)
    assert mean.shape == (6, 4) and u.shape == (6,)
