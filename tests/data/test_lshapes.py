"""Tests of SPE's synthetic L-shapes (hedgekit.data.lshapes, and the rendering it re-exports from
hedgekit.data.lshapes_render; Scott et al. 2019, App. A.2).

Oracles: factors read back from the pixels (hue from RGB, orientation from the pixel-mass
centroid, leg length from the pixel extent), circular statistics of large samples, the
the Bayes classifier on a set's own factors. The Bayes and oracle accuracies: tests/papers/spe/test_bayes.py.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hedgekit.data import lshapes as L
from hedgekit.errors import InputError
from hedgekit.papers.spe.bayes import bayes_optimal_accuracy


def circ_diff(a, b):
    """Signed circular difference a - b in [-180, 180)."""
    return (np.asarray(a, dtype=float) - b + 180.0) % 360.0 - 180.0


def mask_of(img):
    return np.asarray(img, dtype=float).max(axis=-3)   # HSV value = coverage


# ----------------------------------------------------------------------------------------------
# rendering: geometry and colour
# ----------------------------------------------------------------------------------------------

def test_render_shape_dtype_range_and_black_margin():
    imgs = L.render_batch(np.arange(0, 360, 7.5), 45.0, leg_length=1.0)
    assert imgs.shape == (48, 3, 64, 64) and imgs.dtype == np.float32
    assert imgs.min() >= 0.0 and imgs.max() <= 1.0
    # the full-size shape fits at every orientation with a black margin of >= 3 px
    m = mask_of(imgs)
    assert np.all(m[:, :3, :] == 0) and np.all(m[:, -3:, :] == 0)
    assert np.all(m[:, :, :3] == 0) and np.all(m[:, :, -3:] == 0)
    one = L.render_lshape(10.0, 45.0)
    assert one.shape == (3, 64, 64) and one.dtype == np.float32
    np.testing.assert_array_equal(one, L.render_batch(10.0, 45.0))


def test_upright_L_at_90_degrees_and_area():
    """theta = 90: long leg up on the left, foot to the right along the bottom (letter L)."""
    m = mask_of(L.render_lshape(90.0, 0.0, leg_length=1.0))
    rows = np.flatnonzero(m.max(axis=1) > 0.5)
    cols = np.flatnonzero(m.max(axis=0) > 0.5)
    assert len(rows) == 48 and len(cols) == 28           # outer extents 8 + 40, 8 + 20
    top, bottom, left, right = rows[0], rows[-1], cols[0], cols[-1]
    assert m[top, left] == 1 and m[bottom, left] == 1 and m[bottom, right] == 1
    assert m[top, right] == 0                             # the open corner of the L
    assert m[:, left:left + 8].min(axis=1)[top:bottom + 1].min() == 1   # the long leg is solid
    assert m.sum() == pytest.approx(8 * 48 + 20 * 8)      # area of the L (exact coverage)
    # centred: the bounding box centre is the image centre
    assert (top + bottom + 1) / 2 == 32 and (left + right + 1) / 2 == 32


def test_orientation_recoverable_over_full_circle():
    rng = np.random.default_rng(0)
    angles = np.arange(0.0, 360.0, 5.0) + rng.uniform(-2, 2, 72)
    # measured max errors: 0.09 deg (leg 1), 0.3 (0.5), 0.9 (0.1: the centroid offset is only 0.4 px)
    for leg, tol in ((1.0, 0.5), (0.5, 1.0), (0.1, 2.0)):
        imgs = L.render_batch(angles, rng.uniform(0, 360, angles.size), leg_length=leg)
        est = L.orientation_from_centroid(imgs)
        err = np.abs(circ_diff(est, angles))
        assert err.max() < tol, (leg, err.max())
    # the estimator also works on uint8 images
    imgs8 = L.render_batch(angles, 120.0, dtype=np.uint8)
    assert np.abs(circ_diff(L.orientation_from_centroid(imgs8), angles)).max() < 1.5


def test_orientation_not_symmetric_quarter_turns_differ():
    base = L.render_lshape(30.0, 100.0)
    for turn in (90.0, 180.0, 270.0):
        other = L.render_lshape(30.0 + turn, 100.0)
        assert np.abs(base - other).sum() > 100.0
    # mirror image is not produced: the foot is always clockwise of the long leg
    m = mask_of(L.render_lshape(90.0, 0.0))
    assert m[:, 32:].sum() < m[:, :32].sum()               # long leg on the left half


def test_hue_recoverable_from_mean_colour():
    hues = np.arange(0.0, 360.0, 10.0) + 3.3
    rng = np.random.default_rng(1)
    imgs = L.render_batch(rng.uniform(0, 360, hues.size), hues, leg_length=rng.uniform(0.1, 1.0, hues.size))
    pix = L.rgb_to_hue(imgs)                                # NaN on the background
    m = mask_of(imgs)
    for i, h in enumerate(hues):
        inside = m[i] > 0
        est = L.circular_mean(pix[i][inside], weights=m[i][inside])
        assert abs(circ_diff(est, h)) < 0.01
    # uint8 images: still within half a degree
    imgs8 = L.render_batch(0.0, hues, dtype=np.uint8)
    pix8 = L.rgb_to_hue(imgs8)
    for i, h in enumerate(hues):
        inside = mask_of(imgs8[i]) > 128
        assert abs(circ_diff(L.circular_mean(pix8[i][inside]), h)) < 0.5


def test_hsv_colour_convention():
    np.testing.assert_allclose(L.hsv_hue_to_rgb([0, 60, 120, 180, 240, 300, 90]),
                               [[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 1, 1], [0, 0, 1], [1, 0, 1], [0.5, 1, 0]],
                               atol=1e-12)


def test_circular_wrap():
    for o, h in ((370.0, 10.0), (-350.0, 10.0), (10.0, 370.0), (730.0, -710.0)):
        np.testing.assert_array_equal(L.render_lshape(o, h), L.render_lshape(10.0, 10.0))
    np.testing.assert_array_equal(L.render_lshape(360.0, 400.0), L.render_lshape(0.0, 40.0))
    assert L.wrap_degrees(-1e-20) == 0.0 and L.wrap_degrees(360.0) == 0.0


# ----------------------------------------------------------------------------------------------
# hue noise
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("orientation,leg", [(90.0, 1.0), (33.0, 0.6)])
def test_hue_noise_only_inside_the_shape(orientation, leg):
    clean = L.render_lshape(orientation, 135.0, 0.0, leg)
    noisy = L.render_lshape(orientation, 135.0, 40.0, leg, rng=np.random.default_rng(5))
    np.testing.assert_allclose(mask_of(noisy), mask_of(clean), atol=1e-6)   # value channel unchanged
    outside = mask_of(clean) == 0
    assert np.all(noisy[:, outside] == 0) and np.all(clean[:, outside] == 0)  # background exactly black
    inside = ~outside
    assert np.mean(np.abs(noisy - clean).sum(axis=0)[inside] > 1e-6) > 0.95  # (almost) every inside pixel changes


def test_hue_noise_spread_grows_with_std():
    """Per-pixel circular std of the hue equals the noise std (wrapped normal)."""
    spreads = []
    for sd in (0.0, 10.0, 20.0, 36.0, 54.0):
        img = L.render_lshape(90.0, 90.0, sd, 1.0, rng=np.random.default_rng(11))
        pix = L.rgb_to_hue(img)[mask_of(img) > 0]
        assert pix.size >= 544
        spreads.append(float(L.circular_std(pix)))
        if sd > 0:
            assert spreads[-1] == pytest.approx(sd, rel=0.12)
            assert abs(circ_diff(L.circular_mean(pix), 90.0)) < 4 * sd / np.sqrt(pix.size) + 0.5
    assert spreads[0] < 1e-4
    assert np.all(np.diff(spreads) > 0)


def test_hue_noise_deterministic_for_rng():
    a = L.render_lshape(10.0, 20.0, 30.0, 0.8, rng=7)
    b = L.render_lshape(10.0, 20.0, 30.0, 0.8, rng=np.random.default_rng(7))
    c = L.render_lshape(10.0, 20.0, 30.0, 0.8, rng=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # render_batch with an array of seeds reproduces render_lshape image by image
    seeds = np.array([3, 99, 12345])
    batch = L.render_batch([10.0, 200.0, 300.0], [20.0, 100.0, 250.0], [30.0, 0.0, 18.0], [0.8, 0.5, 0.2], seeds)
    for i, (o, h, s, a_) in enumerate(zip([10.0, 200.0, 300.0], [20.0, 100.0, 250.0], [30.0, 0.0, 18.0],
                                          [0.8, 0.5, 0.2])):
        np.testing.assert_array_equal(batch[i], L.render_lshape(o, h, s, a_, rng=np.random.default_rng(seeds[i])))


# ----------------------------------------------------------------------------------------------
# leg length
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("leg", [0.1, 0.25, 0.5, 0.77, 0.98, 1.0])
def test_leg_length_scales_both_legs(leg):
    """Extent beyond the 8 px stroke is proportional to leg_length, same factor for both legs."""
    m = mask_of(L.render_lshape(90.0, 60.0, leg_length=leg, antialias=True)).astype(float)
    cols = np.flatnonzero(m.sum(axis=0) > 0)
    rows = np.flatnonzero(m.sum(axis=1) > 0)
    long_extent = m[:, cols[0] + 4].sum()           # column through the long leg
    foot_extent = m[rows[-1] - 4, :].sum()          # row through the foot
    assert long_extent == pytest.approx(L.STROKE_WIDTH + leg * L.LONG_LEG, abs=1e-6)
    assert foot_extent == pytest.approx(L.STROKE_WIDTH + leg * L.SHORT_LEG, abs=1e-6)
    assert (long_extent - 8) / (foot_extent - 8) == pytest.approx(2.0, rel=1e-6)
    # rotated by a quarter turn the long leg is horizontal with the same extent
    m2 = mask_of(L.render_lshape(180.0, 60.0, leg_length=leg)).astype(float)
    assert m2.sum(axis=1).max() == pytest.approx(L.STROKE_WIDTH + leg * L.LONG_LEG, abs=1e-6)


def test_size_scaling():
    img = L.render_lshape(90.0, 0.0, size=128)
    assert img.shape == (3, 128, 128)
    assert mask_of(img).sum() == pytest.approx(4 * 544)


# ----------------------------------------------------------------------------------------------
# generative model
# ----------------------------------------------------------------------------------------------

def test_class_centres_and_index_mapping():
    np.testing.assert_array_equal(L.CLASS_CENTERS, [[90, 90], [180, 90], [90, 180], [180, 180]])
    o, h = L.interpolation_grid(5)
    assert o.shape == h.shape == (5, 5)
    np.testing.assert_allclose(o[0], [90, 112.5, 135, 157.5, 180])
    np.testing.assert_allclose(h[:, 0], [90, 112.5, 135, 157.5, 180])
    corners = np.array([[o[0, 0], h[0, 0]], [o[0, -1], h[0, -1]], [o[-1, 0], h[-1, 0]], [o[-1, -1], h[-1, -1]]])
    np.testing.assert_array_equal(corners, L.CLASS_CENTERS)
    post = L.class_posterior(corners[:, 0], corners[:, 1])
    np.testing.assert_array_equal(post.argmax(axis=1), [0, 1, 2, 3])
    grid = L.render_batch(o, h, leg_length=0.98)
    assert grid.shape == (5, 5, 3, 64, 64)


def test_class_sampling_statistics_train():
    n = 40_000
    f = L.sample_factors(n, seed=1, train=True)
    assert set(f) == {"labels", "orientation", "hue", "hue_noise", "leg_length", "noise_seed"}
    np.testing.assert_array_equal(np.bincount(f["labels"]), [n // 4] * 4)      # balanced
    for k, (co, ch) in enumerate(L.CLASS_CENTERS):
        sel = f["labels"] == k
        for name, centre in (("orientation", co), ("hue", ch)):
            x = f[name][sel]
            assert np.all((x >= 0) & (x < 360))
            assert abs(circ_diff(L.circular_mean(x), centre)) < 1.0            # SE ~ 0.3 deg
            assert float(L.circular_std(x)) == pytest.approx(30.0, abs=0.8)    # SE ~ 0.2 deg
        # orientation and hue independent within a class
        assert abs(np.corrcoef(circ_diff(f["orientation"][sel], co), circ_diff(f["hue"][sel], ch))[0, 1]) < 0.04
    noisy = f["hue_noise"] > 0
    assert noisy.sum() == round(0.15 * n)
    assert f["hue_noise"][noisy].min() >= 18 and f["hue_noise"][noisy].max() <= 54
    assert stats.kstest((f["hue_noise"][noisy] - 18) / 36, "uniform").pvalue > 1e-3
    assert f["leg_length"].min() >= 0.10 and f["leg_length"].max() <= 0.98
    assert stats.kstest((f["leg_length"] - 0.10) / 0.88, "uniform").pvalue > 1e-3
    assert np.all(f["noise_seed"] >= 0)


def test_test_split_has_no_hue_noise_and_is_independent_of_train():
    te = L.sample_factors(4000, seed=1, train=False)
    tr = L.sample_factors(4000, seed=1, train=True)
    assert np.all(te["hue_noise"] == 0)
    assert not np.allclose(te["orientation"], tr["orientation"])
    assert te["leg_length"].min() >= 0.10 and te["leg_length"].max() <= 0.98
    full = L.sample_factors(10, seed=1, train=False, leg_length_range=(1.0, 1.0))
    assert np.all(full["leg_length"] == 1.0)


def test_make_lshapes_determinism_and_regeneration():
    a = L.make_lshapes(48, seed=3)
    b = L.make_lshapes(48, seed=3)
    c = L.make_lshapes(48, seed=4)
    assert a.images.shape == (48, 3, 64, 64) and a.images.dtype == np.uint8 and len(a) == 48
    for name in ("images", "labels", "orientation", "hue", "hue_noise", "leg_length", "noise_seed"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.images, c.images)
    # factors are those of sample_factors, and every image regenerates exactly
    f = L.sample_factors(48, seed=3, train=True)
    for name, arr in f.items():
        np.testing.assert_array_equal(getattr(a, name), arr)
    assert (a.hue_noise > 0).sum() == round(0.15 * 48)
    np.testing.assert_array_equal(a.rerender(), a.images)
    np.testing.assert_array_equal(L.render_batch(**a.params(), dtype=np.uint8), a.images)
    i = int(np.flatnonzero(a.hue_noise > 0)[0])
    one = L.render_lshape(a.orientation[i], a.hue[i], a.hue_noise[i], a.leg_length[i],
                          rng=np.random.default_rng(a.noise_seed[i]))
    np.testing.assert_array_equal(np.round(one.astype(np.float64) * 255).astype(np.uint8), a.images[i])
    # float32 images: same pixels up to uint8 quantisation
    fl = L.make_lshapes(48, seed=3, dtype=np.float32)
    assert fl.images.dtype == np.float32
    assert np.abs(fl.images * 255 - a.images).max() <= 0.5 + 1e-3
    x, y = a.to_tensors()
    assert tuple(x.shape) == (48, 3, 64, 64) and str(x.dtype) == "torch.float32" and float(x.max()) <= 1.0
    assert str(y.dtype) == "torch.int64"


def test_make_lshapes_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    a = L.make_lshapes(20, seed=2, train=False, cache=True)
    files = list((tmp_path / "lshapes").glob("*.npz"))
    assert len(files) == 1 and files[0].name.startswith("test_n20_seed2_")
    b = L.make_lshapes(20, seed=2, train=False, cache=True)
    np.testing.assert_array_equal(a.images, b.images)
    np.testing.assert_array_equal(a.labels, b.labels)
    L.make_lshapes(20, seed=2, train=False, cache=True, leg_length_range=(0.5, 0.5))   # different key
    assert len(list((tmp_path / "lshapes").glob("*.npz"))) == 2


def test_centroid_sweep():
    sw = L.centroid_sweep([0.0, 18.0, 54.0], "hue_noise", repeats=2)
    assert sw["orientation"].shape == (3, 4, 2)
    np.testing.assert_array_equal(sw["orientation"][0, :, 0], L.CLASS_CENTERS[:, 0])
    np.testing.assert_array_equal(sw["hue"][0, :, 0], L.CLASS_CENTERS[:, 1])
    imgs = L.render_batch(**{k: v for k, v in sw.items() if k not in ("labels", "level")})
    assert imgs.shape == (3, 4, 2, 3, 64, 64)
    np.testing.assert_array_equal(imgs[0, :, 0], imgs[0, :, 1])         # no noise -> identical
    assert not np.array_equal(imgs[2, :, 0], imgs[2, :, 1])             # independent noise draws
    legs = L.centroid_sweep([0.1, 0.5, 1.0], "leg_length")
    assert np.all(legs["hue_noise"] == 0)
    np.testing.assert_array_equal(legs["leg_length"][:, 0, 0], [0.1, 0.5, 1.0])


# ----------------------------------------------------------------------------------------------
# likelihood and the Bayes classifier
# ----------------------------------------------------------------------------------------------

def test_class_log_likelihood_is_normalised_wrapped_normal():
    g = np.arange(0.0, 360.0, 1.0) + 0.5
    oo, hh = np.meshgrid(g, g, indexing="ij")
    ll = L.class_log_likelihood(oo, hh)
    assert ll.shape == (360, 360, 4)
    np.testing.assert_allclose(np.exp(ll).sum(axis=(0, 1)), 1.0, rtol=1e-9)   # density per deg^2
    # agrees with a brute-force wrap sum over many turns (class 3: centres 180, 180)
    x = np.array([0.0, 45.0, 135.0, 270.0, 359.0])
    y = np.array([10.0, 180.0, 300.0, 90.0, 200.0])
    wn = lambda t, mu: sum(stats.norm.pdf(t + 360.0 * k, mu, 30.0) for k in range(-20, 21))  # noqa: E731
    np.testing.assert_allclose(np.exp(L.class_log_likelihood(x, y)[:, 3]), wn(x, 180.0) * wn(y, 180.0), rtol=1e-9)
    np.testing.assert_allclose(L.class_log_likelihood(370.0, -350.0), L.class_log_likelihood(10.0, 10.0))


def test_set_bayes_accuracy_is_the_per_axis_side_rule_on_its_own_factors():
    ds = L.make_lshapes(400, seed=2, train=False, size=16)
    side = lambda deg: ((np.asarray(deg) % 360 > 135) & (np.asarray(deg) % 360 < 315)).astype(int)  # nearer 180
    pred = side(ds.orientation) + 2 * side(ds.hue)        # class k: orientation index k % 2, hue index k // 2
    assert ds.bayes_accuracy() == pytest.approx(np.mean(pred == ds.labels), abs=1e-12)
    a = bayes_optimal_accuracy()
    assert abs(ds.bayes_accuracy() - a) < 4 * np.sqrt(a * (1 - a) / len(ds))   # the population rate, up to sampling


# ----------------------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(leg_length=0.0), "leg_length"),
    (dict(leg_length=-0.2), "leg_length"),
    (dict(leg_length=1.01), "leg_length"),
    (dict(leg_length=np.nan), "NaN"),
    (dict(hue_noise_deg=-1.0), "hue_noise"),
    (dict(hue_noise_deg=np.nan), "NaN"),
    (dict(orientation_deg=np.nan), "NaN"),
    (dict(orientation_deg=np.inf), "NaN or inf"),
    (dict(hue_deg=np.nan), "NaN"),
    (dict(size=8), "size"),
    (dict(size=64.0), "size"),
    (dict(rng="seed"), "rng"),
    (dict(orientation_deg=[1.0, 2.0]), "scalar"),
])
def test_render_lshape_bad_input(kwargs, match):
    args = dict(orientation_deg=10.0, hue_deg=20.0, hue_noise_deg=5.0, leg_length=0.5)
    args.update(kwargs)
    with pytest.raises(InputError, match=match):
        L.render_lshape(**args)


def test_other_bad_input():
    with pytest.raises(InputError, match="leg_length"):
        L.render_batch([1.0, 2.0], 3.0, leg_length=[0.5, 0.0])
    with pytest.raises(InputError, match="hue_noise"):
        L.render_batch([1.0, 2.0], 3.0, hue_noise=[0.5, -1.0])
    with pytest.raises(InputError, match="NaN"):
        L.render_batch([1.0, np.nan], 3.0)
    with pytest.raises(InputError, match="broadcast"):
        L.render_batch([1.0, 2.0], [3.0, 4.0, 5.0])
    with pytest.raises(InputError, match="noise_seed"):
        L.render_batch(1.0, 2.0, noise_seed=-1)
    with pytest.raises(InputError, match="dtype"):
        L.render_batch(1.0, 2.0, dtype=np.int16)
    with pytest.raises(InputError, match="dtype"):
        L.make_lshapes(4, dtype="not-a-dtype")
    with pytest.raises(InputError, match="n must be"):
        L.make_lshapes(0)
    with pytest.raises(InputError, match="seed"):
        L.sample_factors(10, seed=-1)
    with pytest.raises(InputError, match="leg_length_range"):
        L.sample_factors(10, leg_length_range=(0.0, 0.5))
    with pytest.raises(InputError, match="leg_length_range"):
        L.sample_factors(10, leg_length_range=(0.5, 1.5))
    with pytest.raises(InputError, match="noisy_fraction"):
        L.sample_factors(10, noisy_fraction=1.5)
    with pytest.raises(InputError, match="NaN"):
        L.class_log_likelihood(np.nan, 0.0)
    with pytest.raises(InputError, match="factor"):
        L.centroid_sweep([1.0], "orientation")
    with pytest.raises(InputError, match="n >= 2"):
        L.interpolation_grid(1)
    assert issubclass(InputError, ValueError)


def test_make_lshapes_tampered_cache_is_rendered_again(tmp_path, monkeypatch):
    """A well-formed but edited cache (checksum kept) is detected and the images are rendered afresh."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    a = L.make_lshapes(12, seed=4, train=False, cache=True)
    [path] = (tmp_path / "lshapes").glob("*.npz")
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["images"] = arrays["images"][::-1].copy()
    np.savez_compressed(path, **arrays)
    np.testing.assert_array_equal(L.make_lshapes(12, seed=4, train=False, cache=True).images, a.images)
    assert not list((tmp_path / "lshapes").glob("*.tmp"))


def test_the_data_module_has_no_analyses():
    """The Bayes and oracle analyses live in hedgekit.papers.spe.bayes; hedgekit.data does not import the papers."""
    for name in ("bayes_optimal_accuracy", "prototype_oracle_accuracy", "readout_sweep", "bayes_accuracy_1d"):
        assert not hasattr(L, name), name
