"""Figures of the HIB notebooks on tiny synthetic inputs, and oracles for the data behind them."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from hedgekit import hib_analysis as A  # noqa: E402
from hedgekit import hib_protocol as P  # noqa: E402
from hedgekit import metrics as M  # noqa: E402
from hedgekit.distributions import Embedding  # noqa: E402
from hedgekit.errors import InputError  # noqa: E402
from hedgekit.models import SoftMatch  # noqa: E402
from hedgekit.plots import figures as F  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _is_fig(out):
    fig = out[0] if isinstance(out, tuple) else out
    assert isinstance(fig, matplotlib.figure.Figure)
    assert matplotlib.colors.to_hex(fig.get_facecolor()) == "#ffffff"  # readable in dark themes
    return fig


def _gauss(b=12, d=2):
    return RNG.normal(size=(b, d)), RNG.uniform(0.01, 0.2, size=(b, d)), RNG.integers(0, 100, b)


# ------------------------------------------------------------------ every figure runs
def test_notebook01_figures():
    imgs = RNG.integers(0, 255, (5, 28, 56), dtype=np.uint8)
    _is_fig(F.digit_grid(imgs, [f"{i:02d}" for i in range(5)], ncols=3))
    boxes = np.array([[[2, 3, 10, 12], [0, 30, 5, 5]]] * 5)
    _is_fig(F.twins_figure(imgs, imgs, boxes, ["a"] * 5))
    walk = A.occlusion_walkthrough(imgs[0, :, :28], np.random.default_rng(1))
    _is_fig(F.occlusion_steps(walk))
    _is_fig(F.class_split_figure(np.arange(70), np.arange(70, 100), [1, 2], [80]))
    with pytest.raises(InputError, match="overlap"):
        F.class_split_figure([1, 2], [2, 3])


def test_notebook02_figures():
    m, v, y = _gauss()
    _is_fig(F.gaussian_embeddings(m, v, m, 2 * v, y))
    cent = RNG.normal(size=(10, 2))
    ids = np.arange(10) * 7
    ex = [dict(image=np.zeros((28, 56)), point=m[0], mean=m[1], cov=np.diag(v[1])) for _ in range(3)]
    _is_fig(F.point_vs_hedged(cent, cent, ids, ex))
    _is_fig(F.mixture_example(cent, ids, np.zeros((28, 56)), m[:2], v[:2], highlight=(7, 14),
                              point_centroids=cent, point_xy=m[0]))
    _is_fig(F.mixture_example(cent, ids, np.zeros((28, 56)), m[:2], v[:2]))
    mm = RNG.normal(size=(6, 2, 2))
    vv = RNG.uniform(0.01, 0.1, (6, 2, 2))
    row = dict(title="C=2", clean=(mm, vv, y[:6]), corrupt=(mm * 2, vv, y[:6]))
    _is_fig(F.mixture_embeddings([row, row]))
    fig = F.ellipsoids_3d(RNG.normal(size=(4, 3)), np.full((4, 3), 0.1), RNG.normal(size=(4, 3)),
                          np.full((4, 3), 0.3), [1, 22, 333, 999])
    assert fig.layout.paper_bgcolor == "white" and len(fig.data) == 4 + 4 + 2
    _is_fig(F.eta_histogram(RNG.uniform(0, 0.2, 50), RNG.uniform(0.1, 0.5, 50), floor=0.05))
    _is_fig(F.occlusion_view(np.zeros((28, 56), np.uint8), [[0, 0, 5, 5]], cent, ids, m[0], np.diag(v[0]), 0.3))
    _is_fig(F.occlusion_view(np.zeros((28, 56), np.uint8), [], cent, ids, m[0], np.diag(v[0]), 0.3,
                             comp_means=m[:2], comp_covs=v[:2]))
    covs = np.stack([np.diag(x) for x in v[:3]])
    _is_fig(F.occlusion_sweep(np.zeros((3, 28, 56), np.uint8), [np.zeros((0, 4))] * 3, m[:3], covs, [0.1, 0.2, 0.3],
                              cent, ids, labels=["0%", "50%", "100%"]))


def test_notebook03_to_05_figures():
    cent = RNG.normal(size=(100, 2))
    _is_fig(F.centroids_by_digit({"point": cent, "HIB": cent * 2}, np.arange(100)))
    lines = {"HIB": A.number_line(RNG.normal(size=100), np.arange(100)),
             "point": A.number_line(RNG.normal(size=100), np.arange(100))}
    _is_fig(F.number_line_figure(lines))
    _is_fig(F.number_line_figure(lines, rank=False))
    stats = pd.DataFrame(dict(model=["HIB", "HIB", "point", "point"], seed=[0, 1, 0, 1], adjacency=[70, 75, 40, 50],
                              mean_run=[4.0, 4.5, 3.0, 2.5]))
    _is_fig(F.adjacency_figure(stats, {"HIB": (76, 80), "point": (42, 74)}, random_level=18))
    curve = P.binned_curve(RNG.uniform(size=(3, 20)))
    _is_fig(F.eta_bins_figure({(t, s): curve for t in ("AP", "KNN") for s in ("clean", "corrupt")}, "x"))
    _is_fig(F.match_score_figure({0: dict(same=RNG.uniform(size=9), different=RNG.uniform(size=9)),
                                  19: dict(same=RNG.uniform(size=9), different=np.array([]))}))
    m, v, y = _gauss()
    panels = [dict(beta=b, means=m * k, covs=v * k, labels=y) for k, b in enumerate((1e-6, 1e-4, 1e-2), 1)]
    _is_fig(F.beta_ellipses(panels))
    _is_fig(F.beta_ellipses(panels, share=False, unit_circle=False))
    _is_fig(F.margin_figure([0.5, 1, 2], dict(ap_clean=[0.9, 0.91, 0.92], knn_corrupt=[0.1, 0.2, 0.3]),
                            dict(ap_clean=0.93, knn_corrupt=0.25)))


def test_widgets_build_and_redraw():
    W = pytest.importorskip("ipywidgets")
    from hedgekit.plots.widgets import beta_selector

    m, v, y = _gauss()
    box = beta_selector({0.0: dict(means=m, covs=v, labels=y), 1e-2: dict(means=2 * m, covs=3 * v, labels=y)})
    assert isinstance(box, W.VBox)
    box.children[0].value = 0.0  # redraws without a front end


def test_occlusion_explorer_with_untrained_model():
    W = pytest.importorskip("ipywidgets")
    from hedgekit.models import build_model
    from hedgekit.playground import centroid_table
    from hedgekit.data import NDigitSet
    from hedgekit.plots.widgets import occlusion_explorer

    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 255, (6, 28, 56), dtype=np.uint8)
    digits = np.array([[1, 2], [3, 4], [1, 2], [3, 4], [5, 6], [5, 6]])
    ds = NDigitSet(imgs, imgs.copy(), digits @ np.array([10, 1]), digits, np.zeros((6, 2, 4), np.int64), 2, "test_seen")
    model = build_model("hib", 2, 2).eval()
    table = centroid_table(model, [ds])
    box = occlusion_explorer(model, table, imgs[0], n_points=256)
    assert isinstance(box, W.VBox)
    eta0 = box.analyse().eta
    sliders = box.children[0].children
    sliders[2].children[0].value = 28  # height
    sliders[2].children[1].value = 28  # width: the whole first digit hidden
    a = box.analyse()
    assert a.covered == pytest.approx(0.5) and a.eta != eta0


# ------------------------------------------------------------------ oracles
def test_digit_colours_follow_the_digit():
    ids = np.array([7, 47, 17, 40])
    ones = F.digit_colours(ids, 1)
    tens = F.digit_colours(ids, 0)
    assert np.allclose(ones[0], ones[1]) and np.allclose(ones[1], ones[2])  # 7, 47, 17 share the ones digit
    assert np.allclose(tens[1], tens[3]) and not np.allclose(tens[0], tens[1])  # 47 and 40 share the tens
    assert np.allclose(tens[0, :3], F.TAB10[0]) and np.allclose(ones[3, :3], F.TAB10[0])  # 07 -> 0, 40 -> 0
    assert A.digit_at([7, 47, 123], 0, 3).tolist() == [0, 0, 1]


def test_ellipse_collection_matches_the_covariance():
    cov = np.array([[4.0, 0.0], [0.0, 1.0]])
    pc = F.ellipse_collection([[1.0, 2.0]], [cov], n_sigma=3)
    e = pc.get_paths()[0]
    pts = pc.get_patch_transform().transform(e.vertices) if hasattr(pc, "get_patch_transform") else None
    # The patch is built from ellipse_axes: width = 2 * 3 * 2, height = 2 * 3 * 1.
    from hedgekit.plots.geometry import ellipse_axes

    a, b, ang = ellipse_axes(cov, 3)
    assert (a, b) == pytest.approx((6.0, 3.0)) and ang == pytest.approx(0.0)
    assert pts is None or np.isfinite(pts).all()
    assert F.as_covs(np.array([[4.0, 1.0]])).tolist() == [[[4.0, 0.0], [0.0, 1.0]]]
    with pytest.raises(InputError):
        F.as_covs(np.zeros((2, 3)))


def test_ellipsoid_mesh_lies_on_the_n_sigma_surface():
    mean, var = np.array([1.0, -2.0, 0.5]), np.array([0.5, 2.0, 0.1])
    x, y, z = F.ellipsoid_mesh(mean, var, n_sigma=2, n=9)
    p = np.stack([x, y, z], -1).reshape(-1, 3) - mean
    assert np.allclose((p**2 / var).sum(1), 4.0)


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


def test_axis_alignment_oracle():
    ids = np.arange(100)
    grid = np.stack([ids % 10, ids // 10], 1).astype(float)  # ones along x, tens along y: axis-aligned
    for pos in (0, 1):
        r = A.axis_alignment(grid, ids, pos)
        assert r["alignment"] == pytest.approx(1.0)
    assert A.axis_alignment(grid, ids, 0)["x_fraction"] == 1.0  # same tens digit -> vary along x
    assert A.axis_alignment(grid, ids, 1)["x_fraction"] == 0.0
    rot = grid @ np.array([[1, 1], [-1, 1]]) / math.sqrt(2)  # 45 degrees: worst case
    assert A.axis_alignment(rot, ids, 0)["alignment"] == pytest.approx(1 / math.sqrt(2))
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, 200000)
    assert np.maximum(abs(np.cos(t)), abs(np.sin(t))).mean() == pytest.approx(A.RANDOM_ALIGNMENT, abs=2e-3)


def test_number_line_agrees_with_the_metrics():
    rng = np.random.default_rng(5)
    ids = np.arange(100)
    for _ in range(5):
        c = rng.normal(size=100)
        nl = A.number_line(c, ids)
        assert int(nl.shared.sum()) == M.adjacency_score(c, ids)
        assert np.all(np.diff(nl.positions) >= 0) and len(nl.labels) == 100 and nl.labels[0] == f"{nl.order[0]:02d}"
    s = A.number_line_stats(np.arange(100.0), ids)  # 00, 01, ..., 99: only the 9 decade jumps (09|10) break
    assert s["adjacency"] == 90 and s["mean_run"] == 10 and s["n_runs"] == 10


def test_random_adjacency_closed_form_and_simulation():
    ids = np.arange(100)
    assert A.random_adjacency(ids) == pytest.approx(18.0)
    rng = np.random.default_rng(0)
    sim = np.mean([M.adjacency_score(rng.permutation(100).astype(float), ids) for _ in range(3000)])
    assert sim == pytest.approx(18.0, abs=0.3)


def test_component_spread_and_scale():
    m = np.array([[[0.0, 0.0], [3.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]]])
    assert A.component_spread(m).tolist() == [5.0, 0.0]
    tri = np.array([[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])
    assert A.component_spread(tri)[0] == pytest.approx((1 + 1 + math.sqrt(2)) / 3)
    assert A.component_spread(m[:, :1]).tolist() == [0.0, 0.0]
    assert A.gaussian_scale(np.array([[4.0, 1.0]]))[0] == pytest.approx(math.sqrt(2.0))


def test_pick_examples():
    boxes = np.zeros((4, 2, 4), np.int64)
    boxes[1, 0] = [0, 0, 28, 20]  # first digit 71% hidden, second clean
    boxes[2] = [[0, 0, 28, 28], [0, 28, 28, 28]]
    eta_c = np.array([0.3, 0.1, 0.2, 0.4])
    eta_o = np.array([0.3, 0.5, 0.9, 0.4])
    ex = A.pick_fig4_examples(boxes, eta_c, eta_o)
    assert [(e["index"], e["corrupt"]) for e in ex] == [(1, False), (1, True), (2, True)]
    cent = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    ids = np.array([17, 47, 99])
    comps = np.array([[[0.1, 0.0], [9.9, 0.0]], [[0.0, 0.2], [0.0, 9.0]], [[0.0, 0.0], [0.0, 0.1]]])
    r = A.pick_ambiguous(comps, np.array([17, 17, 99]), cent, ids)
    assert r == {"index": 0, "classes": (17, 47), "kind": "shared-digit"}
    r = A.pick_ambiguous(comps[1:], np.array([17, 99]), cent, ids)
    assert r["kind"] == "two-classes" and r["index"] == 0


def test_occlusion_walkthrough_is_the_real_occlusion():
    from hedgekit.data import occlude

    digit = RNG.integers(1, 255, (28, 28), dtype=np.uint8)
    for seed in range(20):
        w = A.occlusion_walkthrough(digit, np.random.default_rng(seed))
        assert 0 <= w.top <= w.corner_range[0] and 0 <= w.left <= w.corner_range[1]
        assert min(w.height, w.width) >= 6
        assert np.array_equal(w.result, occlude(digit, w.box[None]))
        assert (w.result == 0).sum() == w.height * w.width


def test_size_stats_and_axis_ratio():
    from hedgekit.evaluation import EmbeddedSet

    clean = Embedding.gaussian(torch.zeros(2, 2), torch.tensor([[1.0, 1.0], [4.0, 1.0]]))
    corrupt = Embedding.gaussian(torch.zeros(2, 2), torch.tensor([[4.0, 4.0], [1.0, 1.0]]))
    es = EmbeddedSet(clean, corrupt, np.array([1, 2]), np.array([0.1, 0.2]), np.array([0.3, 0.4]))
    s = A.size_stats(es)
    assert s["scale_clean"] == pytest.approx((1 + math.sqrt(2)) / 2) and s["scale_corrupt"] == pytest.approx(1.5)
    assert s["frac_larger"] == 0.5 and s["var_ratio"] == pytest.approx(2.5 / 1.75)
    assert s["eta_clean"] == pytest.approx(0.15) and s["eta_corrupt"] == pytest.approx(0.35)
    assert A.axis_ratio([4.0, 1.0]) == pytest.approx(2.0) and A.axis_ratio([2.0, 2.0]) == 1.0


def test_verdict_rendering_and_noise():
    from hedgekit import verdict as V
    from hedgekit.hib_protocol import RepeatedEvaluation
    from hedgekit.hib_verdicts import known_unknowns_verdict

    v = V.Verdict("t")
    v.add("a | b", "1", "2", True)
    v.add("c", "1", "2", False, "because")
    v.add("d", "1", "2", None, "noise")
    md = v.markdown()
    assert "**1 matched, 1 did not, 1 inconclusive**" in md and "a \\| b" in md and "| ❌ | c | 1 | 2 | because |" in md
    assert V.noise_reason(0.01, 0.01) and not V.noise_reason(0.05, 0.01) and not V.noise_reason(0.01, 0.0)
    assert V.binomial_se_diff(0.5, 100, 0.5, 100) == pytest.approx(math.sqrt(0.005))

    def res(label, knn, ap):
        r = RepeatedEvaluation(label, 2, 2, 3, 2000)
        r.values = {"ap_corrupt": np.array(ap), "knn_corrupt": np.full(3, knn), "ap_clean": np.full(3, 0.9),
                    "knn_clean": np.full(3, 0.5)}
        return r

    out = known_unknowns_verdict({(2, 2, "point"): res("point", 0.134, [0.79, 0.80, 0.80]),
                                  (2, 2, "MoG-1"): res("MoG-1", 0.141, [0.90, 0.91, 0.90])})
    by = {c.claim.split(": ")[1]: c for c in out.claims if c.claim.startswith("Table 1 (")}
    assert by["MoG-1 beats point on corrupt verification AP"].matched is True  # +0.10, repetition std ~0.01
    knn = by["MoG-1 beats point on corrupt KNN accuracy"]
    assert knn.matched is None and "binomial" in knn.why  # +0.007 with 2000 probes: SE ~0.011

    # Table 5 goes through the same "A beats B" rule: a clear loss of beta = 1e-4 that comes with
    # collapsed variances (corrupt/clean ratio 1.1 < 2) is failed and says so, a clear win matches.
    from hedgekit.hib_verdicts import kl_margin_verdict

    b4, b0 = res("MoG-1", 0.60, [0.90, 0.91, 0.90]), res("MoG-1", 0.70, [0.80, 0.81, 0.80])
    b4.var_clean, b4.var_corrupt = 0.5, 0.55
    b4.values["tau_knn_clean"], b0.values["tau_knn_clean"] = np.array([0.70, 0.72, 0.71]), np.array([0.20, 0.22, 0.21])
    out = kl_margin_verdict({}, {(2, 2, 0.0): b0, (2, 2, 1e-4): b4})
    by = {c.claim.split("improves ")[1]: c for c in out.claims if c.claim.startswith("Table 5")}
    assert by["KNN corrupt over β = 0"].matched is False and "variance collapse" in by["KNN corrupt over β = 0"].why
    assert "0.600 vs 0.700 (-0.100)" == by["KNN corrupt over β = 0"].ours
    assert by["τ KNN clean over β = 0"].matched is True
    assert by["τ KNN clean over β = 0"].paper == "0.800 vs 0.748 (+0.052)"  # HIB Table 5, N=2 D=2


def _tiny_set(n_per=8, classes=(12, 34, 56, 78), seed=0):
    from hedgekit.data import NDigitSet, occlude, sample_digit_boxes

    rng = np.random.default_rng(seed)
    labels = np.repeat(np.array(classes), n_per)
    digits = np.stack([labels // 10, labels % 10], 1)
    imgs = rng.integers(0, 255, (len(labels), 28, 56), dtype=np.uint8)
    boxes = sample_digit_boxes(rng, len(labels), 2, 1.0)
    return NDigitSet(imgs, occlude(imgs, boxes), labels, digits, boxes, 2, "test_seen")


def test_evaluate_repeated_follows_the_library_protocol():
    from hedgekit.evaluation import embed_set, knn
    from hedgekit.models import build_model

    torch.manual_seed(0)
    model = build_model("hib", 2, 2).eval()
    ds = _tiny_set()
    es = embed_set(model, ds)
    r = P.evaluate_repeated(model, ds, "MoG-1", repeats=3, n_pairs=20, n_bins=4, es=es)
    assert r.values["ap_clean"].shape == (3,) and r.bins["knn_corrupt"].shape == (3, 4)
    for key, (probe, gallery, vote) in {"knn_clean": (False, False, "majority"), "knn_corrupt": (False, True, "majority"),
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


def test_table3_frame():
    counts = {2: dict(P.HIB_TABLE3[2], train_images=99_000)}
    df = P.table3_frame(counts)
    assert df.loc["train_images", "N=2 Δ"] == -1000 and df.loc["total_classes", "N=2 Δ"] == 0
