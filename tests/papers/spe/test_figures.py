"""Tests of hedgekit.papers.spe.figures: the data behind each SPE figure against oracles, and every
figure function on tiny synthetic inputs (what it draws is read back from the matplotlib artists).
"""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from hedgekit.data.lshapes import CLASS_CENTERS, interpolation_grid, render_batch, render_lshape  # noqa: E402
from hedgekit.errors import InputError  # noqa: E402
from hedgekit.papers.spe import figures as F  # noqa: E402
from hedgekit.viz.geometry import mahalanobis_sq  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


# --------------------------------------------------------------------------- data behind figures
def test_class_sample_grid_alpha_is_the_likelihood_ratio():
    g = F.class_sample_grid(5, span=2.0, floor=0.0)
    assert g["alpha"].shape == g["orientation"].shape == g["hue"].shape == (4, 5, 5)
    for k in range(4):
        assert g["orientation"][k, 2, 2] == CLASS_CENTERS[k, 0] and g["hue"][k, 2, 2] == CLASS_CENTERS[k, 1]
        np.testing.assert_allclose(np.diff(g["orientation"][k, 0]) % 360, 30.0)  # 1 std steps along columns
        np.testing.assert_allclose(np.diff(g["hue"][k, :, 0]) % 360, 30.0)  # and rows
        # exp(-(a^2 + b^2) / 2) at (a, b) std from the centre (the wrap-around terms are < 1e-30 at 30 deg)
        a = np.array([-2, -1, 0, 1, 2.0])
        np.testing.assert_allclose(g["alpha"][k], np.exp(-(a[:, None] ** 2 + a[None] ** 2) / 2), rtol=1e-9)
    floored = F.class_sample_grid(5, floor=0.05)
    assert floored["alpha"].min() == 0.05 and floored["alpha"].max() == 1.0
    with pytest.raises(InputError):
        F.class_sample_grid(1)


def test_on_white_keeps_colour_and_whitens_background():
    img = render_lshape(90, 90, leg_length=0.5, size=32)  # float (3, 32, 32), black background
    out = F.on_white(img)
    assert out.shape == (32, 32, 3)
    cov = img.max(0)
    bg, full = cov == 0, cov == 1
    assert bg.any() and full.any()
    np.testing.assert_allclose(out[bg], 1.0)  # black -> white
    np.testing.assert_allclose(out[full], np.moveaxis(img, 0, -1)[full])  # fully covered pixels unchanged
    part = (cov > 0) & (cov < 1)
    np.testing.assert_allclose(out[part], np.moveaxis(img, 0, -1)[part] + (1 - cov[part])[:, None], atol=1e-6)
    u8 = F.on_white((img * 255).round().astype(np.uint8)[None])
    np.testing.assert_allclose(u8[0], out, atol=1 / 255)
    with pytest.raises(InputError):
        F.on_white(np.zeros((4, 4)))


def test_equiprobability_ovals_lie_on_the_contour():
    means = np.array([[0.0, 1.0], [2.0, -3.0]])
    var = np.array([[0.5, 2.0], [3.0, 0.1]])
    ovals = F.equiprobability_ovals(means, var, n_sigma=0.4, n=50)
    assert ovals.shape == (2, 50, 2)
    for m, v, pts in zip(means, var, ovals):
        np.testing.assert_allclose(mahalanobis_sq(pts, m, np.diag(v)), 0.4**2, rtol=1e-9)  # the paper's 0.4 sigma
        np.testing.assert_allclose(pts[0], pts[-1])  # closed
        # the axis-aligned extent is n_sigma * sd in each dimension (diagonal covariance: no rotation)
        np.testing.assert_allclose(np.ptp(pts, 0), 2 * 0.4 * np.sqrt(v), rtol=2e-3)


# --------------------------------------------------------------------------- Figure 2
def test_class_samples_and_interpolation_figures():
    g = F.class_sample_grid(3)
    imgs = render_batch(g["orientation"], g["hue"], size=16)
    fig, axes = F.class_samples_figure(imgs, g["alpha"], g["orientation"], g["hue"])
    assert len(axes) == 4 and all(len(ax.images) == 1 and len(ax.patches) == 1 for ax in axes)  # mosaic + circle
    mosaic = axes[0].images[0].get_array()
    assert mosaic.shape[:2] == (3 * 16 + 2 * 2, 3 * 16 + 2 * 2)
    # the centre tile is the centroid itself, unfaded (alpha 1)
    np.testing.assert_allclose(mosaic[18:34, 18:34], F.on_white(imgs[0, 1, 1]), atol=1e-9)
    assert [t.get_text() for t in axes[1].get_xticklabels()] == ["120°", "180°", "240°"]  # +-2 std in 2 steps
    o, h = interpolation_grid(3)
    fig, ax = F.interpolation_figure(render_batch(o, h, size=16), o, h)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["90°", "135°", "180°"]
    with pytest.raises(InputError):
        F.class_samples_figure(imgs[:2], g["alpha"], g["orientation"], g["hue"])


def test_grid_embedding_figure_draws_the_ovals():
    o, h = interpolation_grid(3)
    imgs = render_batch(o, h, size=16)
    means = np.stack([o / 45.0, -h / 45.0], -1)
    var = np.full((3, 3, 2), 0.2)
    fig, ax = F.grid_embedding_figure(means, var, imgs, n_sigma=0.4)
    lines = ax.get_lines()
    assert len(lines) == 9
    expected = F.equiprobability_ovals(means.reshape(-1, 2), var.reshape(-1, 2), 0.4)
    for line, pts in zip(lines, expected):
        np.testing.assert_allclose(line.get_xydata(), pts)
    assert len([a for a in ax.artists]) == 9  # one thumbnail per shape
    with pytest.raises(InputError):
        F.grid_embedding_figure(means, var[:2], imgs)


# --------------------------------------------------------------------------- Figure 3
def test_variance_sweep_figure_bars_follow_the_axis_assignment():
    ex = render_batch(np.full(3, 90.0), 90.0, [0, 30, 60], size=16)
    left = dict(level=np.array([0, 30, 60]), var=np.array([[0.1, 0.5], [0.2, 0.6], [0.3, 0.7]]), example=ex,
                factor="hue_noise")
    right = dict(level=np.array([1.0, 0.5, 0.1]), var=np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), example=ex,
                 factor="leg_length")
    fig, axs = F.variance_sweep_figure(left, right, {"orientation": 1, "hue": 0})
    heights = [p.get_height() for p in axs[0].patches]
    # grey (orientation axis = z2) first, then black (hue axis = z1)
    assert heights == [0.5, 0.6, 0.7, 0.1, 0.2, 0.3]
    assert matplotlib.colors.to_hex(axs[0].patches[0].get_facecolor()) == F.AXIS_GREYS["orientation"]
    assert [t.get_text() for t in axs[1].get_xticklabels()] == ["100%", "50%", "10%"]
    assert [t.get_text() for t in axs[0].get_xticklabels()] == ["0°", "30°", "60°"]
    with pytest.raises(InputError):
        F.variance_sweep_figure(dict(left, var=left["var"][:2]), right, {"orientation": 1, "hue": 0})


# --------------------------------------------------------------------------- explorer
def test_lshape_snapshots():
    imgs = render_batch([90.0, 180.0], 90.0, size=16)
    fig, axs = F.lshape_snapshots(imgs, np.zeros((2, 2)), np.array([[1.0, 4.0], [0.25, 0.25]]), ["a", "b"],
                                  prototypes=np.eye(4, 2), context=np.zeros((5, 2)), limits=((-3, 3), (-3, 3)))
    assert axs.shape == (2, 2)
    solid = axs[1, 0].get_lines()[0].get_xydata()  # the 1-sigma oval of N(0, diag(1, 4))
    np.testing.assert_allclose(np.ptp(solid, 0), [2.0, 4.0], rtol=2e-3)
    assert axs[1, 1].get_xlim() == (-3, 3)
    with pytest.raises(InputError):
        F.lshape_snapshots(imgs, np.zeros((2, 2)), np.ones((2, 2)), ["a"])


def test_lshape_explorer_redraws_on_slider_change():
    pytest.importorskip("ipywidgets")
    from hedgekit.nets import build_lshape_model

    torch.manual_seed(0)
    model = build_lshape_model("hib", 2, channels=4, height=32, width=32, blocks=3).eval()
    box = F.lshape_explorer(model, prototypes=np.zeros((4, 2)), seed=3)
    img0, mean0, var0 = box.current()
    expected = model.embed(torch.from_numpy(render_lshape(135, 135, 0, 0.98, rng=3, size=32))[None])
    np.testing.assert_allclose(mean0, expected.mean[0, 0].numpy(), rtol=1e-5)
    box.sliders["noise"].value = 45.0
    img1, mean1, var1 = box.current()
    assert not np.array_equal(img0, img1)
    expected = model.embed(torch.from_numpy(render_lshape(135, 135, 45, 0.98, rng=3, size=32))[None])
    np.testing.assert_allclose(var1, expected.var[0, 0].numpy(), rtol=1e-5)
    box.sliders["noise"].value = 0.0
    np.testing.assert_array_equal(box.current()[0], img0)  # deterministic: same sliders, same image


# --------------------------------------------------------------------------- Figures 4, 6, 7
def test_samples_curve():
    curves = {"naive": dict(s=[1, 3, 9], acc=[50.0, 55.0, 60.0], se=[1.0, 1.0, 1.0]),
              "intersection": dict(s=[1, 3, 9], acc=[61.0, 62.0, 63.0], se=[0.5, 0.5, 0.5])}
    fig, ax = F.samples_curve(curves, paper_note="note")
    ys = sorted(tuple(line.get_ydata()) for line in ax.get_lines() if len(line.get_ydata()) == 3)
    assert (50.0, 55.0, 60.0) in ys and (61.0, 62.0, 63.0) in ys
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["1", "3", "9"]


def test_accuracy_bars_heights():
    rows = []
    for split in ("seen", "unseen"):
        for c, cond in enumerate(("clean S / clean Q", "corrupt S / clean Q")):
            rows.append(dict(split=split, condition=cond, method="HIB", source="paper", acc=10.0 + c, se=math.nan))
            rows.append(dict(split=split, condition=cond, method="SPE", source="ours", acc=50.0 + c + (split == "unseen"),
                             se=1.0))
    fig, axs = F.accuracy_bars(rows)
    assert axs.shape == (1, 2)
    heights = [p.get_height() for p in axs[0, 1].patches]
    assert heights == [10.0, 11.0, 51.0, 52.0]
    assert axs[0, 0].patches[0].get_hatch() == "//" and axs[0, 0].patches[2].get_hatch() is None  # paper hatched
    with pytest.raises(InputError):
        F.accuracy_bars([])


def test_prototype_map_labels_and_boxes():
    ids = np.array([3, 47, 52, 90])
    mu = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 1.0], [3.0, 3.0]])
    fig, axs = F.prototype_map(mu, ids, unseen=[False, True, False, True])
    for ax, pos in zip(axs, (0, 1)):
        texts = ax.texts
        assert [t.get_text() for t in texts] == ["03", "47", "52", "90"]
        assert [t.get_bbox_patch() is not None for t in texts] == [False, True, False, True]
        digits = [int(t.get_text()[pos]) for t in texts]
        assert [matplotlib.colors.to_hex(t.get_color()) for t in texts] == \
            [matplotlib.colors.to_hex(F.TAB10[d]) for d in digits]
        np.testing.assert_allclose([t.get_position() for t in texts], mu)
    with pytest.raises(InputError):
        F.prototype_map(mu[:3], ids)
