"""SPE's synthetic colour-orientation "L-shapes" (Scott et al. 2019, sec. 4.1, Fig. 2-3, App. A.2).

No public code exists for this data set; this module is the kit's reference
implementation. Everything the paper states is followed; everything it leaves
open is decided here, documented, and tested in ``tests/data/test_lshapes.py``.

What the paper says (App. A.2)
------------------------------
* 64 x 64 RGB images of an "L" shape; four classes distinguished by orientation,
  colour, or both (Fig. 2a).
* Orientation class centres 90 deg and 180 deg, standard deviation 30 deg.
* Colour = HSV hue (saturation and value constant), a circular quantity with
  centres and standard deviation "in the same way as orientation": 90 and 180
  deg, std 30 deg. Instances come from a class-conditional isotropic Gaussian
  in the (orientation, hue) generative space (sec. 4.1).
* 15 % of the *training* images get Gaussian noise on the hue of each pixel
  inside the shape, with std ~ U(18 deg, 54 deg).
* Leg length ~ U(10 %, 98 %) of its original length.
* A Bayes-optimal classifier reaches "approximately 87 %" (sec. 4.1).

Choices made here (the paper is silent or vague)
------------------------------------------------
Geometry and colour (the L's strokes, its orientation convention, centring, anti-aliasing, HSV colour and
hue noise): `hedgekit.data.lshapes_render`, which renders the images.

Generative model (``sample_factors`` / ``make_lshapes``):

* Class index ``k`` has centre ``CLASS_CENTERS[k] = (orientation, hue)``:
  ``k = 0: (90, 90)``, ``1: (180, 90)``, ``2: (90, 180)``, ``3: (180, 180)``,
  i.e. orientation index ``k % 2`` and hue index ``k // 2``. This is the
  row-major order of the corners of the 5 x 5 interpolation grid of Fig. 2b
  (orientation varies along columns, hue along rows).
* Orientation and hue are the class centre plus N(0, 30^2), independently,
  wrapped to [0, 360) (a wrapped normal on each circle).
* Labels are balanced: ``n`` labels cycle 0, 1, 2, 3, ... and are then
  shuffled (equal class priors, as the Bayes accuracy assumes).
* Training sets: exactly ``round(0.15 n)`` images, chosen at random, get hue
  noise with std ~ U(18, 54) deg; the rest have 0. Test sets have none.
* Leg length ~ U(0.10, 0.98) for training *and* test images (it is part of
  the shapes' generative model; pass ``leg_length_range=(1, 1)`` for
  full-size test shapes).
* ``seed`` and the split are combined into one ``SeedSequence([seed, split])``,
  so a training and a test set with the same seed are independent. Each image
  also stores a ``noise_seed`` that seeds its own per-pixel hue-noise stream,
  so every image can be regenerated exactly from its stored factors
  (``render_batch(**ds.params())``).

Reference accuracies
--------------------
The Bayes-optimal accuracy (87.1 %, the paper's "approximately 87 %"), the nearest-prototype oracle
with k support images and the read-out of Fig. 3's factors without a network are SPE's analyses of this
data: `hedgekit.papers.spe.bayes`. Here: the class likelihood they build on (`class_log_likelihood`,
`wrapped_normal_logpdf`) and the Bayes classifier's hit rate on given factors (`bayes_hit_rate`).
"""
from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hedgekit.checks import load_checked_npz, save_checked_npz
from hedgekit.data.lshapes_render import (IMAGE_SIZE, LONG_LEG, SHORT_LEG, STROKE_WIDTH, _as_float_array,
                                          _check_hue_noise, _check_leg_length, _check_size, _to_dtype, circular_mean,
                                          circular_std, hsv_hue_to_rgb, orientation_from_centroid, render_batch,
                                          render_lshape, rgb_to_hue, wrap_degrees)
from hedgekit.errors import InputError
from hedgekit.paths import cache_path

__all__ = [
    "IMAGE_SIZE", "STROKE_WIDTH", "LONG_LEG", "SHORT_LEG", "CLASS_CENTERS", "ORIENTATION_CENTERS",
    "HUE_CENTERS", "CLASS_STD", "NOISY_FRACTION", "HUE_NOISE_RANGE", "LEG_LENGTH_RANGE",
    "LShapes", "render_lshape", "render_batch", "sample_factors", "make_lshapes", "interpolation_grid",
    "centroid_sweep", "class_log_likelihood", "class_posterior", "wrapped_normal_logpdf", "bayes_hit_rate",
    "hsv_hue_to_rgb", "rgb_to_hue", "orientation_from_centroid",
    "wrap_degrees", "circular_mean", "circular_std",
]

# --- generative model (App. A.2) ------------------------------------------------------------
ORIENTATION_CENTERS = (90.0, 180.0)
HUE_CENTERS = (90.0, 180.0)
#: (orientation, hue) of class k; orientation index k % 2, hue index k // 2.
CLASS_CENTERS = np.array([[o, h] for h in HUE_CENTERS for o in ORIENTATION_CENTERS])
CLASS_STD = 30.0                   # deg, both factors
NOISY_FRACTION = 0.15              # of training images get per-pixel hue noise
HUE_NOISE_RANGE = (18.0, 54.0)     # deg, std of the per-pixel hue noise ~ U(range)
LEG_LENGTH_RANGE = (0.10, 0.98)    # fraction of the full leg length ~ U(range)

_CACHE_VERSION = 1   # bump when rendering or sampling changes, to invalidate caches


# ============================================================================================
# validation of the generative model's arguments
# ============================================================================================

def _check_count(name: str, n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"{name} must be a positive integer; got {n!r}")
    return int(n)


def _check_range(name: str, r: Any, lo: float, hi: float, *, open_lo: bool = False) -> tuple[float, float]:
    arr = _as_float_array(name, r)
    if arr.shape != (2,) or arr[0] > arr[1] or arr[0] < lo or arr[1] > hi or (open_lo and arr[0] <= lo):
        raise InputError(f"{name} must be a pair (low, high) with {lo} {'<' if open_lo else '<='} low <= high <= {hi}; "
                         f"got {r!r}")
    return float(arr[0]), float(arr[1])


# ============================================================================================
# the generative model
# ============================================================================================

def sample_factors(n: int, seed: int = 0, train: bool = True, *, class_std: float = CLASS_STD,
                   noisy_fraction: float = NOISY_FRACTION, hue_noise_range: tuple[float, float] = HUE_NOISE_RANGE,
                   leg_length_range: tuple[float, float] = LEG_LENGTH_RANGE) -> dict[str, np.ndarray]:
    """Sample labels and generative factors of ``n`` images (no rendering; fast).

    Returns a dict with ``labels`` (int64), ``orientation``, ``hue`` (deg in [0, 360)),
    ``hue_noise`` (deg, 0 = clean), ``leg_length`` (fraction) and ``noise_seed`` (int64),
    each of shape (n,). Draw order from ``default_rng(SeedSequence([seed, split]))``
    (split 0 = train, 1 = test): label permutation, orientation normals, hue normals,
    leg lengths, [train only: which images are noisy, their noise stds], noise seeds.
    """
    n = _check_count("n", n)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer; got {seed!r}")
    class_std = float(_as_float_array("class_std", class_std))
    if class_std <= 0:
        raise InputError(f"class_std must be > 0 degrees; got {class_std}")
    noisy_fraction = float(_as_float_array("noisy_fraction", noisy_fraction))
    if not 0.0 <= noisy_fraction <= 1.0:
        raise InputError(f"noisy_fraction must be in [0, 1]; got {noisy_fraction}")
    noise_lo, noise_hi = _check_range("hue_noise_range", hue_noise_range, 0.0, np.inf)
    leg_lo, leg_hi = _check_range("leg_length_range", leg_length_range, 0.0, 1.0, open_lo=True)

    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0 if train else 1]))
    labels = rng.permutation(np.resize(np.arange(4, dtype=np.int64), n))
    centers = CLASS_CENTERS[labels]
    orientation = wrap_degrees(centers[:, 0] + class_std * rng.standard_normal(n))
    hue = wrap_degrees(centers[:, 1] + class_std * rng.standard_normal(n))
    leg_length = rng.uniform(leg_lo, leg_hi, n) if leg_hi > leg_lo else np.full(n, leg_lo)
    hue_noise = np.zeros(n)
    if train:
        n_noisy = int(round(noisy_fraction * n))
        noisy = rng.choice(n, size=n_noisy, replace=False)
        hue_noise[noisy] = rng.uniform(noise_lo, noise_hi, n_noisy)
    noise_seed = rng.integers(0, np.iinfo(np.int64).max, n, dtype=np.int64)
    return dict(labels=labels, orientation=orientation, hue=hue, hue_noise=hue_noise, leg_length=leg_length,
                noise_seed=noise_seed)


@dataclass
class LShapes:
    """A sampled L-shape data set: images plus every factor needed to regenerate them.

    Attributes:
        images: (n, 3, size, size) uint8 (default; 4x smaller) or float32 in [0, 1].
        labels: (n,) int64 class index (``CLASS_CENTERS[k] = (orientation, hue)``).
        orientation, hue: (n,) degrees in [0, 360).
        hue_noise: (n,) per-pixel hue-noise std in degrees (0 = clean).
        leg_length: (n,) fraction of the full leg lengths.
        noise_seed: (n,) int64 seed of each image's hue-noise stream.
        seed, train, size, antialias: how the set was made.
    """

    images: np.ndarray
    labels: np.ndarray
    orientation: np.ndarray
    hue: np.ndarray
    hue_noise: np.ndarray
    leg_length: np.ndarray
    noise_seed: np.ndarray
    seed: int = 0
    train: bool = True
    size: int = IMAGE_SIZE
    antialias: bool = True
    config: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def bayes_accuracy(self) -> float:
        """Accuracy of the Bayes classifier on this set's own true factors (arg-max of
        :func:`class_log_likelihood`): the ceiling for these very images. It differs from the population
        rate `hedgekit.papers.spe.bayes.bayes_optimal_accuracy` by the set's sampling noise, about ``sqrt(A (1 - A) / n)``
        (0.005 for 4,000 images)."""
        if len(self) == 0:
            raise InputError("the set has no images; a Bayes accuracy needs at least one")
        return bayes_hit_rate(self.orientation, self.hue, self.labels, self.config.get("class_std", CLASS_STD))

    def params(self) -> dict[str, np.ndarray]:
        """The factor arrays, as keyword arguments of :func:`render_batch`."""
        return dict(orientation=self.orientation, hue=self.hue, hue_noise=self.hue_noise,
                    leg_length=self.leg_length, noise_seed=self.noise_seed)

    def rerender(self, dtype: Any = None) -> np.ndarray:
        """Regenerate the images from the stored factors (identical to ``images`` for the same dtype)."""
        return render_batch(**self.params(), size=self.size, antialias=self.antialias,
                            dtype=self.images.dtype if dtype is None else dtype)

    def to_tensors(self, device: Any = None):
        """(images float32 in [0, 1] of shape (n, 3, S, S), labels int64) as torch tensors."""
        import torch

        x = torch.from_numpy(np.ascontiguousarray(self.images))
        x = x.float().div_(255.0) if x.dtype == torch.uint8 else x.float()
        return x.to(device), torch.from_numpy(self.labels).to(device)


def make_lshapes(n: int, seed: int = 0, train: bool = True, *, size: int = IMAGE_SIZE, dtype: Any = np.uint8,
                 class_std: float = CLASS_STD, noisy_fraction: float = NOISY_FRACTION,
                 hue_noise_range: tuple[float, float] = HUE_NOISE_RANGE,
                 leg_length_range: tuple[float, float] = LEG_LENGTH_RANGE, antialias: bool = True,
                 cache: bool = False) -> LShapes:
    """Sample and render ``n`` L-shape images (SPE App. A.2; see the module docstring).

    ``train=True`` gives 15 % hue-noisy images, ``train=False`` none; the two splits use
    independent random streams even with the same seed. Rendering runs at roughly
    a few thousand images per second on one CPU core. ``cache=True`` stores / loads a
    compressed ``.npz`` under ``cache_path('lshapes', ...)`` keyed by every argument.
    """
    _to_dtype(np.zeros(1), dtype)  # validate dtype first (clear InputError)
    config = dict(n=_check_count("n", n), seed=seed, train=bool(train), size=_check_size(size),
                  dtype=np.dtype(dtype).name, class_std=float(class_std), noisy_fraction=float(noisy_fraction),
                  hue_noise_range=[float(v) for v in np.asarray(hue_noise_range, dtype=float).ravel()],
                  leg_length_range=[float(v) for v in np.asarray(leg_length_range, dtype=float).ravel()],
                  antialias=bool(antialias), version=_CACHE_VERSION)
    factors = sample_factors(n, seed, train, class_std=class_std, noisy_fraction=noisy_fraction,
                             hue_noise_range=hue_noise_range, leg_length_range=leg_length_range)
    path = None
    if cache:
        key = hashlib.sha1(repr(sorted(config.items())).encode()).hexdigest()[:12]
        path = cache_path("lshapes", f"{'train' if train else 'test'}_n{n}_seed{seed}_{key}.npz")
        if path.is_file():
            try:
                z = load_checked_npz(path, ("images", *factors))
                if z["images"].shape == (n, 3, size, size) and all(np.array_equal(z[k], v) for k, v in factors.items()):
                    return LShapes(images=z["images"], seed=seed, train=bool(train), size=size,
                                   antialias=bool(antialias), config=config, **factors)
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
                pass  # unreadable, edited (checksum) or stale cache: regenerate below
    images = render_batch(factors["orientation"], factors["hue"], factors["hue_noise"], factors["leg_length"],
                          factors["noise_seed"], size=size, dtype=dtype, antialias=antialias)
    if path is not None:
        save_checked_npz(path, images=images, **factors)
    return LShapes(images=images, seed=seed, train=bool(train), size=size, antialias=bool(antialias),
                   config=config, **factors)


def interpolation_grid(n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The (orientation, hue) grid of Fig. 2b: class centres in the corners, linear in between.

    Returns two (n, n) arrays: ``orientation[i, j] = linspace(90, 180, n)[j]`` (varies along
    columns) and ``hue[i, j] = linspace(90, 180, n)[i]`` (varies along rows). The corners in
    row-major order are classes 0, 1, 2, 3. Render with
    ``render_batch(*interpolation_grid(), leg_length=...)`` -> (n, n, 3, 64, 64).
    """
    n = _check_count("n", n)
    if n < 2:
        raise InputError(f"interpolation_grid needs n >= 2 to include both centres; got {n}")
    o = np.linspace(ORIENTATION_CENTERS[0], ORIENTATION_CENTERS[1], n)
    h = np.linspace(HUE_CENTERS[0], HUE_CENTERS[1], n)
    hh, oo = np.meshgrid(h, o, indexing="ij")
    return oo, hh


def centroid_sweep(levels: Any, factor: str = "hue_noise", repeats: int = 1, *, leg_length: float = 1.0,
                   seed: int = 0) -> dict[str, np.ndarray]:
    """Factors for Fig. 3: the four class centroids with one factor swept over ``levels``.

    ``factor='hue_noise'`` (Fig. 3 left): hue-noise std levels in degrees, legs at ``leg_length``.
    ``factor='leg_length'`` (Fig. 3 right): leg-length fractions, no hue noise.
    Returns render_batch keyword arrays of shape (len(levels), 4, repeats) plus ``labels`` and
    ``level`` of the same shape; ``repeats`` different noise draws per (level, class).
    """
    lv = _as_float_array("levels", levels).reshape(-1)
    repeats = _check_count("repeats", repeats)
    shape = (lv.size, 4, repeats)
    level = np.broadcast_to(lv[:, None, None], shape).copy()
    labels = np.broadcast_to(np.arange(4)[None, :, None], shape).copy()
    if factor == "hue_noise":
        _check_hue_noise(lv)
        hue_noise, legs = level, np.full(shape, float(leg_length))
    elif factor == "leg_length":
        _check_leg_length(lv)
        hue_noise, legs = np.zeros(shape), level
    else:
        raise InputError(f"factor must be 'hue_noise' or 'leg_length'; got {factor!r}")
    _check_leg_length(_as_float_array("leg_length", legs))
    rng = np.random.default_rng(seed)
    return dict(orientation=CLASS_CENTERS[labels, 0], hue=CLASS_CENTERS[labels, 1], hue_noise=hue_noise,
                leg_length=legs, noise_seed=rng.integers(0, np.iinfo(np.int64).max, shape, dtype=np.int64),
                labels=labels, level=level)


# ============================================================================================
# likelihoods and the Bayes classifier
# ============================================================================================

def wrapped_normal_logpdf(x: np.ndarray, mu: float, sigma: float, n_wrap: int) -> np.ndarray:
    """log density (per degree) of a wrapped normal N(mu, sigma^2) on [0, 360)."""
    from scipy.special import logsumexp  # here, not at the top: scipy costs the notebooks' first cell 0.3 s

    d = wrap_degrees(x - mu + 180.0) - 180.0        # in [-180, 180)
    k = np.arange(-n_wrap, n_wrap + 1) * 360.0
    z = (d[..., None] + k) / sigma
    return logsumexp(-0.5 * z * z, axis=-1) - np.log(sigma * np.sqrt(2.0 * np.pi))


def class_log_likelihood(orientation: Any, hue: Any, *, class_std: float = CLASS_STD, n_wrap: int = 3) -> np.ndarray:
    """log p(orientation, hue | class k) for the four classes, shape ``broadcast_shape + (4,)``.

    Product of two wrapped normals (sum over ``2 n_wrap + 1`` multiples of 360 deg; with
    sigma = 30 the terms beyond +-1 turn are below 1e-70 of the main one). Densities are per
    degree^2 on [0, 360)^2. Used for Fig. 2a transparency and the Bayes classifier.
    """
    o = _as_float_array("orientation", orientation)
    h = _as_float_array("hue", hue)
    class_std = float(_as_float_array("class_std", class_std))
    if class_std <= 0:
        raise InputError(f"class_std must be > 0; got {class_std}")
    if isinstance(n_wrap, bool) or not isinstance(n_wrap, (int, np.integer)) or n_wrap < 0:
        raise InputError(f"n_wrap must be a non-negative integer; got {n_wrap!r}")
    o, h = np.broadcast_arrays(o, h)
    cols = [wrapped_normal_logpdf(o, c_o, class_std, n_wrap) + wrapped_normal_logpdf(h, c_h, class_std, n_wrap)
            for c_o, c_h in CLASS_CENTERS]
    return np.stack(cols, axis=-1)


def class_posterior(orientation: Any, hue: Any, *, class_std: float = CLASS_STD) -> np.ndarray:
    """p(class | orientation, hue) with equal priors, shape ``broadcast_shape + (4,)``."""
    from scipy.special import logsumexp

    ll = class_log_likelihood(orientation, hue, class_std=class_std)
    return np.exp(ll - logsumexp(ll, axis=-1, keepdims=True))


def bayes_hit_rate(orientation: np.ndarray, hue: np.ndarray, labels: np.ndarray, class_std: float) -> float:
    """Fraction of (orientation, hue) whose arg-max of :func:`class_log_likelihood` is their label."""
    pred = np.argmax(class_log_likelihood(orientation, hue, class_std=class_std), axis=-1)
    return float(np.mean(pred == labels))
