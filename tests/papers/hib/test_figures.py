"""HIB's figures (hedgekit.papers.hib.figures, with the data_figures and charts it re-exports) on tiny synthetic
inputs: each runs, and oracles for what it draws."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from hedgekit.errors import InputError  # noqa: E402
from hedgekit.papers.hib import analysis as A  # noqa: E402
from hedgekit.papers.hib import figures as F  # noqa: E402
from hedgekit.papers.hib import protocol as P  # noqa: E402

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
    from hedgekit.viz.geometry import ellipse_axes

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


def test_equal_aspect_figures_draw_without_matplotlib_warnings_and_keep_one_scale(caplog):
    """Fixed limits + adjustable="datalim" made matplotlib log "Ignoring fixed x limits to fulfill fixed
    data aspect" in the notebooks' outputs. Each 2D embedding panel must draw silently, with the limits it set, at one
    scale: a data unit is as long on screen along x as along y."""
    import logging

    m, v, y = _gauss()
    cent, ids = RNG.normal(size=(10, 2)) * 3, np.arange(10) * 7
    ex = [dict(image=np.zeros((28, 56)), point=m[0], mean=m[1], cov=np.diag(v[1])) for _ in range(3)]
    mm, vv = RNG.normal(size=(6, 2, 2)), RNG.uniform(0.01, 0.1, (6, 2, 2))
    row = dict(title="C=2", clean=(mm, vv, y[:6]), corrupt=(mm * 2, vv, y[:6]))
    panels = [dict(beta=b, means=m * k, covs=v * k, labels=y) for k, b in enumerate((1e-6, 1e-4, 1e-2), 1)]
    figures = [F.gaussian_embeddings(m, v, m * [3, 0.2], 2 * v, y), F.point_vs_hedged(cent, cent * [1, 4], ids, ex),
               F.mixture_example(cent, ids, np.zeros((28, 56)), m[:2], v[:2]), F.mixture_embeddings([row]),
               F.occlusion_view(np.zeros((28, 56), np.uint8), [[0, 0, 5, 5]], cent, ids, m[0], np.diag(v[0]), 0.3),
               F.beta_ellipses(panels), F.beta_ellipses(panels, share=False, unit_circle=False)]
    with caplog.at_level(logging.WARNING, logger="matplotlib"):
        for out in figures:
            fig = _is_fig(out)
            fig.canvas.draw()
            for ax in fig.axes:
                if ax.get_aspect() == 1.0:
                    (x0, y0), (x1, _), (_, y1) = ax.transData.transform([(0, 0), (1, 0), (0, 1)])
                    assert abs(x1 - x0) == pytest.approx(abs(y1 - y0), rel=1e-6)
    assert not [r for r in caplog.records if "aspect" in r.getMessage()], caplog.text
