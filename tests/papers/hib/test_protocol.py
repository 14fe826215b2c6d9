"""HIB's evaluation protocol (hedgekit.papers.hib.protocol) against naive loops and closed forms."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from hedgekit.embedding import Embedding  # noqa: E402
from hedgekit.errors import InputError  # noqa: E402
from hedgekit.evaluation import metrics as M  # noqa: E402
from hedgekit.nets import SoftMatch  # noqa: E402
from hedgekit.papers.hib import numbers  # noqa: E402
from hedgekit.papers.hib import protocol as P  # noqa: E402

RNG = np.random.default_rng(0)


def test_fig5_bins_match_a_naive_loop():
    """binned_accuracy / binned_average_precision (Figure 5) vs a direct sort-and-split loop."""
    rng = np.random.default_rng(3)
    n, nb = 203, 20
    eta = rng.uniform(size=n)
    correct = rng.uniform(size=n) < 1 - eta
    got = M.binned_accuracy(correct, eta, nb)
    order = np.argsort(eta, kind="stable")
    naive = []
    for b in range(nb):  # bin b holds sorted positions t with floor(t * nb / n) == b
        members = [order[t] for t in range(n) if (t * nb) // n == b]
        naive.append(np.mean([correct[i] for i in members]))
    assert np.allclose(got, naive)
    from sklearn.metrics import average_precision_score

    scores = rng.uniform(size=n)
    same = rng.uniform(size=n) < 0.5
    ap = M.binned_average_precision(scores, same, eta, nb)
    for b in range(nb):
        members = [order[t] for t in range(n) if (t * nb) // n == b]
        s, m = scores[members], same[members]
        expect = average_precision_score(m, s) if 0 < m.sum() < len(m) else np.nan
        assert (np.isnan(ap[b]) and np.isnan(expect)) or ap[b] == pytest.approx(expect)
    curve = P.binned_curve(np.vstack([got, got]))
    assert np.allclose(curve["mean"], got) and np.allclose(curve["std"], 0)


def test_match_scores_by_bin_split_pairs_by_uncertainty():
    p = np.arange(40) / 40.0
    same = np.arange(40) % 2 == 0
    u = np.arange(40)[::-1].astype(float)  # pair 39 is the most certain
    out = P.match_scores_by_bin(p, same, u, n_bins=4)
    assert sorted(out) == [0, 3]
    assert sorted(np.r_[out[0]["same"], out[0]["different"]]) == pytest.approx(p[30:])
    assert out[3]["same"].tolist() == pytest.approx(p[0:10][same[0:10]])


def test_eta_mc_converges_to_the_deterministic_eta():
    from hedgekit.uncertainty import self_mismatch

    emb = Embedding.mixture(torch.tensor([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]]),
                            torch.tensor([[[0.1, 0.2], [0.05, 0.05]], [[0.5, 0.5], [0.5, 0.5]]]))
    match = SoftMatch(2.0, 1.0)
    g = torch.Generator().manual_seed(0)
    mc = np.mean([P.eta_mc(emb, match, 8, g) for _ in range(400)], 0)
    assert mc == pytest.approx(self_mismatch(emb, match).numpy(), abs=0.01)
    point = Embedding.point(torch.zeros(3, 2))
    assert P.eta_mc(point, match, 8) == pytest.approx(np.full(3, 1 - 1 / (1 + math.exp(-1.0))))


def _tiny_set(n_per=8, classes=(12, 34, 56, 78), seed=0):
    from hedgekit.data import NDigitSet, occlude, sample_digit_boxes

    rng = np.random.default_rng(seed)
    labels = np.repeat(np.array(classes), n_per)
    digits = np.stack([labels // 10, labels % 10], 1)
    imgs = rng.integers(0, 255, (len(labels), 28, 56), dtype=np.uint8)
    boxes = sample_digit_boxes(rng, len(labels), 2, 1.0)
    return NDigitSet(imgs, occlude(imgs, boxes), labels, digits, boxes, 2, "test_seen")


def test_evaluate_repeated_follows_the_library_protocol():
    from hedgekit.evaluation.embedded import embed_set
    from hedgekit.evaluation.retrieval import knn
    from hedgekit.nets import build_model

    torch.manual_seed(0)
    model = build_model("hib", 2, 2).eval()
    ds = _tiny_set()
    es = embed_set(model, ds)
    r = P.evaluate_repeated(model, ds, "MoG-1", repeats=3, n_pairs=20, n_bins=4, es=es)
    assert r.values["ap_clean"].shape == (3,) and r.bins["knn_corrupt"].shape == (3, 4)
    for key, (probe, gallery, vote) in {"knn_clean": (False, False, "majority"), "knn_corrupt": (False, True, "majority"),
                                        "knnp_clean_clean": (False, False, "plurality"),
                                        "knnp_clean_corrupt": (True, False, "plurality"),
                                        "knnp_corrupt_clean": (False, True, "plurality")}.items():
        assert r.mean(key) == pytest.approx(knn(es, probe, gallery, vote=vote, n_bins=4)["acc"])
        assert r.std(key) == 0.0  # neighbours do not depend on sampling
    assert len(r.pairs["corrupt"]["p"]) == 20 and r.pairs["corrupt"]["same"].sum() == 10
    assert r.var_ratio == pytest.approx(r.var_corrupt / r.var_clean)
    t1 = P.table1_frame({(2, 2, "MoG-1"): r})
    assert list(t1.columns) == ["MoG-1 ours", "MoG-1 ±", "MoG-1 paper", "MoG-1 Δ"] and len(t1) == 4
    row = t1.loc[(2, 2, "KNN", "corrupt")]
    assert row["MoG-1 paper"] == 0.760 and row["MoG-1 Δ"] == pytest.approx(r.mean("knn_corrupt") - 0.760)
    t6 = P.table6_frame({(2, 2, "MoG-1"): r})
    assert len(t6) == 3 and t6.index.names == ["N", "D", "gallery", "probe"]
    assert len(P.table7_frame({(2, 2, "MoG-1"): r})) == 3
    assert len(P.table2_frame({(2, 2, "MoG-1"): r, (2, 2, "point"): r})) == 4  # point has no tau columns
    t5 = P.table5_frame({(2, 2, 0.0): r, (2, 2, 1e-4): r})
    assert t5.loc[(2, 2, "KNN corrupt"), "β=0 paper"] == 0.729 and len(t5) == 8
    with pytest.raises(InputError):
        P.evaluate_repeated(model, ds, "x", repeats=0, es=es)


def test_evaluate_repeated_ranks_each_probe_gallery_side_pair_once(monkeypatch):
    """Five KNN numbers (majority on clean / corrupt gallery, App. G's three plurality variants) need three
    rankings: the votes share the neighbours of the same (probe, gallery) sides."""
    from hedgekit.evaluation import metrics
    from hedgekit.evaluation.embedded import embed_set
    from hedgekit.nets import build_model

    torch.manual_seed(0)
    model = build_model("hib", 2, 2).eval()
    ds = _tiny_set()
    es = embed_set(model, ds)
    calls = []
    real = metrics.topk_neighbours
    monkeypatch.setattr(metrics, "topk_neighbours", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    P.evaluate_repeated(model, ds, "MoG-1", repeats=2, n_pairs=20, n_bins=4, es=es)
    assert len(calls) == 3
    calls.clear()
    P.evaluate_repeated(model, ds, "MoG-1", repeats=2, n_pairs=20, n_bins=4, es=es, plurality=False)
    assert len(calls) == 2


def test_table3_frame():
    counts = {2: dict(numbers.HIB_TABLE3[2], train_images=99_000)}
    df = P.table3_frame(counts)
    assert df.loc["train_images", "N=2 Δ"] == -1000 and df.loc["total_classes", "N=2 Δ"] == 0


@pytest.mark.parametrize("k", [0, -1, 8.0, True, None, 10**7], ids=repr)
def test_eta_mc_refuses_bad_or_huge_k_before_allocating(k):
    """K = 1e7 ran 88 s and took 11 GB; now any K that is not an integer >= 1, or whose K x K distances
    exceed the memory budget, is refused at once."""
    emb = Embedding.gaussian(torch.zeros(64, 2), torch.ones(64, 2))
    with pytest.raises(InputError, match=r"k \(Monte-Carlo samples per input\) must be an integer >= 1|K=10000000 on 64"):
        P.eta_mc(emb, SoftMatch(), k)


def _evaluation(label, n=3, d=4, **values):
    """A RepeatedEvaluation holding the given per-repetition values (tiny synthetic results)."""
    r = P.RepeatedEvaluation(label, n, d, 2, 10_000)
    r.values = {k: np.asarray(v, dtype=float) for k, v in values.items()}
    return r


def test_table4_frame_puts_both_parts_of_table4_beside_the_papers_numbers():
    acc = dict(ap_clean=[0.99, 0.99], ap_corrupt=[0.90, 0.92], knn_clean=[0.90, 0.90], knn_corrupt=[0.80, 0.80])
    tau = dict(tau_ap_clean=[0.2, 0.4], tau_ap_corrupt=[0.8, 0.8], tau_knn_clean=[0.1, 0.1], tau_knn_corrupt=[0.5, 0.3])
    results = {(3, 4, "point"): _evaluation("point", **acc), (3, 4, "MoG-1"): _evaluation("MoG-1", **acc, **tau),
               (2, 2, "MoG-2"): _evaluation("MoG-2", 2, 2, **acc, **tau)}  # another setting: ignored
    t4 = P.table4_frame(results)
    assert t4.index.names == ["N", "D", "measure", "task", "split"] and len(t4) == 4 + 4
    assert list(t4.columns[:4]) == ["point ours", "point ±", "point paper", "point Δ"] and len(t4.columns) == 12
    row = t4.loc[(3, 4, "accuracy", "AP", "corrupt")]
    assert row["point ours"] == pytest.approx(0.91) and row["point ±"] == pytest.approx(math.sqrt(2) * 0.01)
    assert row["point paper"] == 0.942 and row["point Δ"] == pytest.approx(0.91 - 0.942)
    assert row["MoG-2 paper"] == 0.948 and math.isnan(row["MoG-2 ours"]) and math.isnan(row["MoG-2 Δ"])
    row = t4.loc[(3, 4, "τ", "KNN", "corrupt")]  # part (b): MoG-1 / MoG-2 only
    assert row["MoG-1 ours"] == pytest.approx(0.4) and row["MoG-1 paper"] == 0.42
    assert row["MoG-1 Δ"] == pytest.approx(0.4 - 0.42) and row["MoG-2 paper"] == 0.35
    assert math.isnan(row["point ours"]) and math.isnan(row["point paper"])  # the paper gives no τ for point
    empty = P.table4_frame({})  # FAST mode: the paper's numbers alone
    assert empty["MoG-1 paper"].tolist() == [0.996, 0.944, 0.917, 0.816, 0.35, 0.79, 0.31, 0.42]
    assert empty.filter(like="ours").isna().all().all()


def test_pool_seeds_makes_the_seeds_the_repetitions_so_table1_shows_the_seed_mean_and_spread():
    recorded = [dict(knn_corrupt=v, ap_clean=0.9) for v in (0.80, 0.83, 0.89)]  # one evaluation per seed
    per_seed = {(2, 3, "point"): [P.RepeatedEvaluation.from_metrics("point", 2, 3, m, 10_000) for m in recorded],
                (2, 3, "MoG-1"): [_evaluation("MoG-1", 2, 3, knn_corrupt=[0.90, 0.92]),  # 10 repetitions of one seed
                                  _evaluation("MoG-1", 2, 3, knn_corrupt=[0.86, 0.86])]}  # count as its mean
    per_seed[(2, 3, "MoG-1")][0].var_clean, per_seed[(2, 3, "MoG-1")][1].var_clean = 0.1, 0.3
    pooled = P.pool_seeds(per_seed)
    point, mog1 = pooled[(2, 3, "point")], pooled[(2, 3, "MoG-1")]
    assert point.repeats == 3 and point.n_images == 10_000 and point.label == "point"
    assert point.mean("knn_corrupt") == pytest.approx(0.84)
    assert point.std("knn_corrupt") == pytest.approx(math.sqrt(((-0.04) ** 2 + (-0.01) ** 2 + 0.05**2) / 2))
    assert mog1.values["knn_corrupt"].tolist() == pytest.approx([0.91, 0.86]) and mog1.var_clean == pytest.approx(0.2)
    assert math.isnan(mog1.mean("ap_clean")) and math.isnan(point.var_clean)  # nothing recorded: nan, not 0
    row = P.table1_frame(pooled).loc[(2, 3, "KNN", "corrupt")]
    assert row["point ours"] == pytest.approx(0.84) and row["point ±"] == pytest.approx(point.std("knn_corrupt"))
    assert row["MoG-1 ours"] == pytest.approx(0.885)
    assert row["MoG-1 paper"] == numbers.HIB_TABLE1[(2, 3)]["MoG-1"]["knn_corrupt"]
    for bad in ({(2, 3, "point"): []}, {(2, 3, "point"): [{"knn_corrupt": 0.8}]}):
        with pytest.raises(InputError, match="one per seed"):
            P.pool_seeds(bad)
