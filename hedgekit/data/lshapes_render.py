"""Rendering SPE's L-shapes (Scott et al. 2019, App. A.2): one image from its factors (orientation, hue, hue noise,
leg length), the colour and circular helpers it uses, and the orientation read back from an image's centroid.

The paper states 64 x 64 RGB images of an "L" with an HSV hue and per-pixel hue noise; the rest is decided here.
Split from `hedgekit.data.lshapes`, which holds the generative model and re-exports every public name
here; tests: tests/data/test_lshapes.py.

Geometry (constants for a 64-pixel image; other sizes scale by ``size / 64``):

* The L is the union of two axis-aligned rectangles of stroke width
  ``STROKE_WIDTH = 8`` px sharing a ``8 x 8`` corner square. Beyond that square
  the *long* leg extends ``LONG_LEG = 40`` px and the *short* leg (the foot)
  ``SHORT_LEG = 20`` px at ``leg_length = 1``. The legs differ in length like
  the letter L, so mirror images are impossible and the orientation is
  unambiguous over the full circle (the L has no rotational symmetry anyway).
* "Leg length" is the length of a leg *beyond the corner square* (its inner
  edge). ``leg_length = a`` scales both legs by the same factor ``a`` (one
  factor per image; the paper speaks of "the leg length", singular, and Fig. 3
  sweeps a single leg-length axis), so the outer extents are
  ``8 + 40 a`` and ``8 + 20 a`` px. At the paper's minimum ``a = 0.10`` the
  shape is a 12 x 10 px blob with 4 px and 2 px stubs: still an L, but with
  little orientation or colour evidence, which is what Fig. 3 (right) needs.
* Orientation ``theta`` is the direction of the long leg, pointing from the
  corner to its tip, measured counter-clockwise from "right" (+x) with the
  image y axis pointing *up* (screen convention). The foot always points to
  ``theta - 90``. So ``theta = 90`` is the upright letter "L" (long leg up,
  foot to the right) and ``theta = 180`` is that L turned a quarter turn
  counter-clockwise (long leg to the left, foot up).
* Centring: the shape's bounding box (in its own unrotated frame) is centred
  on the image centre and the shape is rotated about the image centre. At full
  size the farthest shape point is sqrt(24^2 + 14^2) = 27.8 px from the
  centre, so every orientation fits with a >= 4 px black margin. The pixel-mass
  centroid is *not* at the centre: it sits on the diagonal from the bounding
  box centre towards the outer corner, at angle ``theta + 135`` deg and distance
  ``sqrt(2) (L1 - w)(L2 - w) / (2 (L1 + L2 - w))`` px (``L1, L2`` outer
  extents, ``w`` the stroke). ``orientation_from_centroid`` uses this to read
  the orientation back from an image (tests, teaching).
* Anti-aliasing: pixel coverage ``clip(0.5 - d, 0, 1)`` where ``d`` is the
  signed distance (px) from the pixel centre to the shape: exact area coverage
  for axis-aligned edges, a close approximation for rotated ones, and fully
  deterministic. ``antialias=False`` gives a hard 0/1 mask.
* Colour: HSV with saturation = value = 1 (so hue 0 = red, 120 = green,
  240 = blue; the class hues 90 and 180 are chartreuse and cyan), multiplied
  by the pixel coverage. The background is exactly black (0).
* Hue noise: every pixel with coverage > 0 gets its own hue
  ``hue + N(0, hue_noise^2)``; background pixels stay exactly 0 and the
  coverage (= the max over RGB channels, the HSV value) is unchanged. One
  standard normal is drawn per pixel of the full ``size x size`` grid (row
  major) whether or not it is inside the shape, so the random stream does not
  depend on the geometry. No draws are made when ``hue_noise == 0``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hedgekit.errors import InputError

__all__ = ["IMAGE_SIZE", "STROKE_WIDTH", "LONG_LEG", "SHORT_LEG", "render_lshape", "render_batch",
           "orientation_from_centroid", "hsv_hue_to_rgb", "rgb_to_hue", "wrap_degrees", "circular_mean",
           "circular_std"]

# --- geometry (pixels of a 64 x 64 image; scaled by size / 64) -------------------------------
IMAGE_SIZE = 64
STROKE_WIDTH = 8.0   # width of both legs
LONG_LEG = 40.0      # long leg beyond the 8 x 8 corner square, at leg_length = 1
SHORT_LEG = 20.0     # short leg (foot) beyond the corner square, at leg_length = 1

_CHUNK = 256         # images rendered at once (bounds memory: ~ 30 MB per chunk at 64 px)


# ============================================================================================
# small helpers: validation, circular statistics, colour
# ============================================================================================

def _as_float_array(name: str, x: Any) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a number or an array of numbers; got {x!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} contains NaN or inf values; pass finite numbers (degrees / fractions)")
    return arr


def _check_leg_length(arr: np.ndarray) -> None:
    if np.any(arr <= 0) or np.any(arr > 1):
        raise InputError(f"leg_length must be in (0, 1] (fraction of the full leg length); got min {arr.min()}, "
                         f"max {arr.max()}")


def _check_hue_noise(arr: np.ndarray) -> None:
    if np.any(arr < 0):
        raise InputError(f"hue_noise_deg must be >= 0 (a standard deviation in degrees); got min {arr.min()}")


def _check_size(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 16:
        raise InputError(f"size must be an integer >= 16 (pixels per side); got {size!r}")
    return int(size)


def _rng(rng: Any) -> np.random.Generator:
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise InputError(f"rng must be None, an int seed or a numpy Generator; got {type(rng).__name__}")


def wrap_degrees(x: Any) -> np.ndarray:
    """Angles reduced to [0, 360) (float64). Safe against ``-1e-20 % 360 == 360.0``."""
    out = np.mod(np.asarray(x, dtype=np.float64), 360.0)
    return np.where(out >= 360.0, 0.0, out)


def circular_mean(deg: Any, weights: Any = None, axis: int | None = None) -> np.ndarray:
    """Circular mean of angles in degrees, in [0, 360)."""
    rad = np.deg2rad(np.asarray(deg, dtype=np.float64))
    w = np.ones_like(rad) if weights is None else np.asarray(weights, dtype=np.float64)
    s = np.sum(w * np.sin(rad), axis=axis)
    c = np.sum(w * np.cos(rad), axis=axis)
    return wrap_degrees(np.rad2deg(np.arctan2(s, c)))


def circular_std(deg: Any, axis: int | None = None) -> np.ndarray:
    """Circular standard deviation ``sqrt(-2 ln R)`` in degrees (R = mean resultant length).

    For a wrapped normal N(mu, sigma^2) this equals sigma exactly (R = exp(-sigma^2 / 2)).
    """
    rad = np.deg2rad(np.asarray(deg, dtype=np.float64))
    r = np.hypot(np.mean(np.sin(rad), axis=axis), np.mean(np.cos(rad), axis=axis))
    return np.rad2deg(np.sqrt(-2.0 * np.log(np.clip(r, 1e-300, 1.0))))


def hsv_hue_to_rgb(hue_deg: Any) -> np.ndarray:
    """RGB of HSV colour (hue, saturation 1, value 1); output shape ``hue.shape + (3,)``, in [0, 1]."""
    h = wrap_degrees(hue_deg) / 60.0
    chans = []
    for n in (5.0, 3.0, 1.0):  # R, G, B  (standard HSV -> RGB with S = V = 1)
        k = np.mod(n + h, 6.0)
        chans.append(1.0 - np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0))
    return np.stack(chans, axis=-1)


def rgb_to_hue(images: Any) -> np.ndarray:
    """Per-pixel HSV hue in degrees of (..., 3, H, W) images (NaN where the pixel is grey/black)."""
    x = np.asarray(images, dtype=np.float64)
    r, g, b = x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
    mx = np.maximum(np.maximum(r, g), b)
    mn = np.minimum(np.minimum(r, g), b)
    d = mx - mn
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(mx == r, np.mod((g - b) / d, 6.0), np.where(mx == g, (b - r) / d + 2.0, (r - g) / d + 4.0))
    h = np.where(d > 0, h * 60.0, np.nan)
    return np.where(np.isnan(h), np.nan, wrap_degrees(np.nan_to_num(h)))


# ============================================================================================
# rendering
# ============================================================================================

def _box_sdf(u: np.ndarray, v: np.ndarray, cu: np.ndarray, cv: np.ndarray, hu: np.ndarray, hv: np.ndarray) -> np.ndarray:
    """Signed distance to an axis-aligned box (centre cu, cv; half sizes hu, hv); negative inside."""
    du = np.abs(u - cu) - hu
    dv = np.abs(v - cv) - hv
    outside = np.hypot(np.maximum(du, 0.0), np.maximum(dv, 0.0))
    inside = np.minimum(np.maximum(du, dv), 0.0)
    return outside + inside


def _coverage(orientation: np.ndarray, leg_length: np.ndarray, size: int, antialias: bool) -> np.ndarray:
    """(N, size, size) pixel coverage in [0, 1] of N L-shapes (1-D inputs, already validated)."""
    scale = size / IMAGE_SIZE
    w = STROKE_WIDTH * scale
    l1 = w + leg_length * LONG_LEG * scale    # outer extent along the long leg
    l2 = w + leg_length * SHORT_LEG * scale   # outer extent along the foot
    # pixel centres, y up, origin at the image centre
    coords = np.arange(size, dtype=np.float64) + 0.5 - size / 2.0
    x = coords[None, None, :]
    y = -coords[None, :, None]
    # canonical frame: the shape at theta = 90 (upright L). Rotate pixels by -(theta - 90).
    phi = np.deg2rad(orientation - 90.0)[:, None, None]
    cos, sin = np.cos(phi), np.sin(phi)
    u = cos * x + sin * y
    v = -sin * x + cos * y
    l1 = l1[:, None, None]
    l2 = l2[:, None, None]
    half_w = w / 2.0
    # long leg: u in [-l2/2, -l2/2 + w], v in [-l1/2, l1/2]
    d_long = _box_sdf(u, v, -l2 / 2.0 + half_w, 0.0, half_w, l1 / 2.0)
    # foot:     u in [-l2/2, l2/2],      v in [-l1/2, -l1/2 + w]
    d_foot = _box_sdf(u, v, 0.0, -l1 / 2.0 + half_w, l2 / 2.0, half_w)
    d = np.minimum(d_long, d_foot)
    if antialias:
        return np.clip(0.5 - d, 0.0, 1.0)
    return (d <= 0.0).astype(np.float64)


def _paint(coverage: np.ndarray, hue: np.ndarray, noise: list[np.ndarray | None]) -> np.ndarray:
    """(N, 3, S, S) float64 images: coverage times the HSV colour of each pixel's hue."""
    n, s, _ = coverage.shape
    out = np.empty((n, 3, s, s), dtype=np.float64)
    for i in range(n):
        if noise[i] is None:
            rgb = hsv_hue_to_rgb(hue[i])                       # (3,)
            out[i] = coverage[i][None] * rgb[:, None, None]
        else:
            inside = coverage[i] > 0
            pix_hue = np.where(inside, hue[i] + noise[i], hue[i])
            rgb = np.moveaxis(hsv_hue_to_rgb(pix_hue), -1, 0)  # (3, S, S)
            out[i] = coverage[i][None] * rgb
    return out


def _to_dtype(img: np.ndarray, dtype: Any) -> np.ndarray:
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise InputError(f"dtype must be float32, float64 or uint8; got {dtype!r}") from exc
    if dt == np.uint8:
        return np.round(img * 255.0).astype(np.uint8)
    if dt in (np.float32, np.float64):
        return img.astype(dt)
    raise InputError(f"dtype must be float32, float64 or uint8; got {dt}")


def render_lshape(orientation_deg: float, hue_deg: float, hue_noise_deg: float = 0.0, leg_length: float = 1.0,
                  rng: Any = None, size: int = IMAGE_SIZE, *, antialias: bool = True) -> np.ndarray:
    """Render one L-shape: float32 array (3, size, size) in [0, 1] on a black background.

    Args:
        orientation_deg: direction of the long leg, counter-clockwise from "right", y up
            (90 = upright letter L). Circular: 370 renders exactly like 10.
        hue_deg: HSV hue of the shape (saturation = value = 1). Circular.
        hue_noise_deg: std (deg) of independent Gaussian noise on the hue of each pixel
            inside the shape (coverage > 0); 0 = clean, no random numbers drawn.
        leg_length: fraction in (0, 1] of the full leg lengths (both legs, same factor).
        rng: None, an int seed or a ``numpy.random.Generator`` for the hue noise
            (one ``standard_normal((size, size))`` draw). None uses fresh OS entropy,
            like numpy; pass a seed or Generator for reproducible noise.
        size: image side in pixels (geometry scales with ``size / 64``).
        antialias: signed-distance anti-aliasing (default) or a hard 0/1 mask.

    See the module docstring for the geometry and its constants.
    """
    o = _as_float_array("orientation_deg", orientation_deg)
    h = _as_float_array("hue_deg", hue_deg)
    s = _as_float_array("hue_noise_deg", hue_noise_deg)
    a = _as_float_array("leg_length", leg_length)
    for name, arr in (("orientation_deg", o), ("hue_deg", h), ("hue_noise_deg", s), ("leg_length", a)):
        if arr.ndim != 0:
            raise InputError(f"render_lshape renders one image: {name} must be a scalar; use render_batch for arrays")
    _check_hue_noise(s)
    _check_leg_length(a)
    size = _check_size(size)
    noise = None
    if s > 0:
        noise = float(s) * _rng(rng).standard_normal((size, size))
    cov = _coverage(wrap_degrees(o).reshape(1), a.reshape(1), size, antialias)
    return _paint(cov, wrap_degrees(h).reshape(1), [noise])[0].astype(np.float32)


def render_batch(orientation: Any, hue: Any, hue_noise: Any = 0.0, leg_length: Any = 1.0, noise_seed: Any = 0,
                 *, size: int = IMAGE_SIZE, dtype: Any = np.float32, antialias: bool = True) -> np.ndarray:
    """Render L-shapes from explicit factor arrays (Fig. 2b grid, Fig. 3 sweeps, regeneration).

    The factor arrays broadcast against each other; the output has shape
    ``broadcast_shape + (3, size, size)`` (e.g. (5, 5, 3, 64, 64) for
    ``interpolation_grid()``).

    Args:
        orientation, hue: degrees (circular).
        hue_noise: per-pixel hue-noise std in degrees (>= 0).
        leg_length: fraction in (0, 1] of the full leg lengths.
        noise_seed: seeds of the per-image hue-noise streams. An array (broadcast to
            the factors' shape) seeds image i's noise with ``default_rng(noise_seed[i])``,
            exactly as ``render_lshape(..., rng=np.random.default_rng(noise_seed[i]))``;
            a scalar ``s`` uses ``default_rng([s, i])`` for the i-th image (flat index).
            Only images with ``hue_noise > 0`` use their stream.
        dtype: float32 / float64 in [0, 1], or uint8 (``round(255 x)``).
    """
    o = _as_float_array("orientation", orientation)
    h = _as_float_array("hue", hue)
    s = _as_float_array("hue_noise", hue_noise)
    a = _as_float_array("leg_length", leg_length)
    _check_hue_noise(s)
    _check_leg_length(a)
    size = _check_size(size)
    try:
        shape = np.broadcast_shapes(o.shape, h.shape, s.shape, a.shape)
    except ValueError as exc:
        raise InputError(f"factor shapes do not broadcast: orientation {o.shape}, hue {h.shape}, "
                         f"hue_noise {s.shape}, leg_length {a.shape}") from exc
    o, h, s, a = (np.broadcast_to(arr, shape).reshape(-1) for arr in (o, h, s, a))
    n = o.size
    seeds_arr = np.asarray(noise_seed)
    if seeds_arr.dtype.kind not in "iu" or np.any(seeds_arr < 0):
        raise InputError(f"noise_seed must be non-negative integers; got dtype {seeds_arr.dtype}")
    if seeds_arr.ndim == 0:
        base = int(seeds_arr)
        seed_of = lambda i: [base, i]  # noqa: E731
    else:
        try:
            flat_seeds = np.broadcast_to(seeds_arr, shape).reshape(-1)
        except ValueError as exc:
            raise InputError(f"noise_seed shape {seeds_arr.shape} does not broadcast to {shape}") from exc
        seed_of = lambda i: int(flat_seeds[i])  # noqa: E731
    _to_dtype(np.zeros(1), dtype)  # validate dtype early
    o, h = wrap_degrees(o), wrap_degrees(h)
    out = np.empty((n, 3, size, size), dtype=np.dtype(dtype))
    for start in range(0, n, _CHUNK):
        sl = slice(start, min(n, start + _CHUNK))
        idx = range(sl.start, sl.stop)
        noise = [float(s[i]) * np.random.default_rng(seed_of(i)).standard_normal((size, size)) if s[i] > 0 else None
                 for i in idx]
        cov = _coverage(o[sl], a[sl], size, antialias)
        out[sl] = _to_dtype(_paint(cov, h[sl], noise), dtype)
    return out.reshape(shape + (3, size, size))


def orientation_from_centroid(images: Any, leg_length: Any = 1.0) -> np.ndarray:
    """Read the orientation (deg) back from rendered images via their pixel-mass centroid.

    The centroid of the L lies on the diagonal from the bounding-box centre (= image
    centre) towards the outer corner, at angle ``theta + 135`` (module docstring), so
    ``theta = atan2(centroid - centre) - 135``. Mass = max over RGB (the coverage,
    independent of the hue). Needs a visible offset: reliable for ``leg_length >= ~0.3``.
    ``leg_length`` is accepted for API symmetry and unused (the direction does not
    depend on it). Input (..., 3, H, W); output (...,) in [0, 360).
    """
    x = np.asarray(images, dtype=np.float64)
    mass = x.max(axis=-3)
    hgt, wid = mass.shape[-2:]
    xs = np.arange(wid) + 0.5 - wid / 2.0
    ys = -(np.arange(hgt) + 0.5 - hgt / 2.0)
    tot = mass.sum(axis=(-2, -1))
    cx = (mass * xs[None, :]).sum(axis=(-2, -1)) / tot
    cy = (mass * ys[:, None]).sum(axis=(-2, -1)) / tot
    return wrap_degrees(np.rad2deg(np.arctan2(cy, cx)) - 135.0)
