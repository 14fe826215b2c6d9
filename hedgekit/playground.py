"""The maths of the occlusion playground (``streamlit run app/main.py``), one call per update.

The app is thin: it keeps plain values in its session state and calls this module
for everything else. One occlusion update is

    boxes  = check_boxes(...)                  # user rectangles, validated
    a      = analyse(model, image, boxes, table)  # forward pass, eta, top-5, 2D geometry
    trail  = update_trail(trail, a)            # how the ellipse moved and grew
    layers = map_layers(a, trail)              # ellipse polylines etc. (figure data)

and `benchmark_update` times exactly that (HIB sec. 2.4 eta; Fig. 3-4 ellipses).

What is shown, and how it is computed:

* the class centroids (`centroid_table`): the mean over a test split's clean images
  of each image's mixture mean (HIB App. D: "centroids derived from the test set
  embeddings"), for seen and, if given, unseen classes;
* the input's embedding p(z|x): per-component means and diagonal covariances,
  and their moment-matched Gaussian; for D > 2 everything is shown through a
  fixed linear map W (PCA of the centroids): mu' = W^T mu, Sigma' = W^T Sigma W;
* eta(x) = 1 - p(m|x, x) (HIB eq. 9) computed deterministically
  (`hedgekit.uncertainty.self_mismatch`), so the gauge never flickers;
* top-k classes by p(m | x, c) = E_{z ~ p(z|x)} sigmoid(-a ||z - c|| + b) with the
  class centroid c taken as a point (HIB eq. 4 with a point for the second input);
  these are match probabilities, one per class, not a distribution over classes.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from hedgekit.checks import check_count
from hedgekit.data import NDigitSet, class_split, clip_box, occlude
from hedgekit.data.occlusion import DIGIT_SIZE, check_not_bool
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.nets import EmbeddingNet
from hedgekit.viz.geometry import Similarity, ellipse_points, moment_match, pca_basis, similarity_fit
from hedgekit.uncertainty import match_probability, self_mismatch

__all__ = [
    "APP_POINTS", "APP_CENTROID_IMAGES", "APP_THREADS", "APP_MODELS", "BETAS", "CompareEntry", "CentroidTable",
    "Analysis", "MapLayers", "app_preset", "app_spec", "load_model", "compare_entries", "beta_options",
    "expected_train_seconds", "centroid_table", "align_tables", "check_image", "check_boxes", "box_from_drag",
    "digit_box", "full_digit_box", "MAX_UPLOAD_BYTES", "MAX_UPLOAD_SIDE", "MAX_UPLOAD_FRAMES", "BLANK_CONTRAST",
    "Upload", "decode_upload", "PolarityWarning", "model_input", "image_from_bytes", "looks_inverted",
    "white_on_black", "image_from_drawing",
    "covered_fraction", "analyse", "eta_floor", "update_trail", "map_layers", "focus_extent", "anchor_point", "benchmark_update",
    "APP_GALLERY_IMAGES", "trained_or_fast", "retrieval_spec", "RetrievalGallery", "retrieval_gallery", "Retrieval",
    "retrieve", "cleaning_map", "APP_SUPPORT_IMAGES", "spe_spec", "PrototypeSet", "prototype_set",
    "prototype_posterior",
]

# QMC points for eta and the top-k match probabilities in the app: the library default,
# so the app shows exactly the eta the notebooks and the evaluation report. Measured:
# the whole update stays ~5-11 ms p95 with it, no reason to trade accuracy for speed.
APP_POINTS = 4096
APP_CENTROID_IMAGES = 30  # test images per class for the app's centroids (see `centroid_table`)
# torch intra-op threads in the app: one update is a single tiny forward pass, for which
# extra threads only add synchronisation; on 2 busy cores 2 threads made p95 10x worse
# (measured: 8 ms -> 100 ms for MoG-1). Several sessions then run side by side instead.
APP_THREADS = 1

# ----------------------------------------------------------------------- model choice
# Display name -> Spec fields (N = 2 digits; preset and beta come from the app).
APP_MODELS: dict[str, dict] = {
    "MoG-1 (HIB), D=2": dict(kind="hib", components=1, dim=2),
    "MoG-2, D=2": dict(kind="hib", components=2, dim=2),
    "point, D=2": dict(kind="point", components=1, dim=2),
    # the paper's K = 8 samples per input: with the `paper` preset's K = 4, MoG-1 at D = 3 gives every input one
    # variance and does not hedge (`hedgekit.papers.hib.experiments.hib_k`); the fast preset's K is 8 anyway
    "MoG-1 (HIB), D=3 (2D projection)": dict(kind="hib", components=1, dim=3, samples=8),
}
DEFAULT_MODEL = "MoG-1 (HIB), D=2"
POINT_MODEL = "point, D=2"
BETAS = (0.0, 1e-4, 1e-2)  # HIB App. E's range; 1e-4 is the paper's choice (sec. 4.1)
DEFAULT_BETA = 1e-4
# Wall time to train one model, measured with 1 torch thread on 2 busy CPU cores: fast preset
# 27-45 s (point, MoG-1, MoG-2, D=3); paper preset: the zoo's target of < 10 min per model.
TRAIN_SECONDS = {"fast": 45, "paper": 600}


def app_preset() -> str:
    """The preset named by env var ``HEDGEKIT_PRESET`` (default "paper"; tests use "fast")."""
    from hedgekit.zoo import PRESETS

    preset = os.environ.get("HEDGEKIT_PRESET", "paper").strip() or "paper"
    if preset not in PRESETS:
        raise InputError(f"HEDGEKIT_PRESET={preset!r} is not a preset; use one of {sorted(PRESETS)}")
    return preset


def app_spec(choice: str, preset: str | None = None, beta: float = DEFAULT_BETA, n_digits: int = 2):
    """The `hedgekit.zoo.Spec` behind a model choice of the app (`APP_MODELS` key)."""
    from hedgekit.zoo import Spec

    if choice not in APP_MODELS:
        raise InputError(f"unknown model {choice!r}; choose one of {list(APP_MODELS)}")
    fields = dict(APP_MODELS[choice])
    if fields["kind"] == "hib":
        fields["beta"] = float(beta)
    return Spec(n_digits=n_digits, preset=preset or app_preset(), **fields)


@dataclass(frozen=True)
class CompareEntry:
    """One column of the Compare page: a model choice of `APP_MODELS`, or SPE (``choice="spe"``, `spe_spec`)."""

    title: str
    choice: str  # APP_MODELS key, or "spe"
    note: str = ""


def compare_entries() -> list[CompareEntry]:
    """The Compare page's columns."""
    return [
        CompareEntry("point", POINT_MODEL, "deterministic: a dot, no uncertainty"),
        CompareEntry("HIB, MoG-1", "MoG-1 (HIB), D=2", "one Gaussian per input"),
        CompareEntry("HIB, MoG-2", "MoG-2, D=2", "two Gaussians per input"),
        CompareEntry("SPE", "spe", "stochastic prototype embeddings (Scott et al. 2019): a Gaussian per input, "
                                   "classes as prototypes"),
    ]


def load_model(spec, progress: bool = False, **kwargs):
    """`hedgekit.zoo.load_or_train` for the app, the notebooks and the benchmark: (model in eval mode, meta).

    Checkpoints cached by early versions of the zoo recorded ``torch.__version__`` as a
    ``TorchVersion`` (a ``str`` subclass) that ``torch.load(weights_only=True)``
    refuses; allow-listing that one harmless class keeps such caches loadable. Keyword
    arguments (e.g. ``callback``, the app's progress bar) go to `load_or_train`.
    """
    from hedgekit.zoo import load_or_train

    with torch.serialization.safe_globals([torch.torch_version.TorchVersion]):
        model, meta = load_or_train(spec, progress=progress, **kwargs)
    return model.eval(), meta


def expected_train_seconds(spec) -> int:
    """Rough wall time to train ``spec`` on 2 CPU cores (for the app's progress message)."""
    base = TRAIN_SECONDS.get(spec.preset, 600)
    if spec.steps is not None:
        from hedgekit.zoo import PRESETS

        base = base * spec.steps / PRESETS[spec.preset][spec.recipe_key]["steps"]
    return int(round(base))


def beta_options(preset: str, choice: str = DEFAULT_MODEL) -> list[tuple[float, bool]]:
    """[(beta, checkpoint exists)] for the HIB model ``choice`` at each beta of `BETAS`."""
    from hedgekit.zoo import find_checkpoint

    return [(b, find_checkpoint(app_spec(choice, preset, b)) is not None) for b in BETAS]


# ----------------------------------------------------------------------- centroids
@dataclass(frozen=True, eq=False)
class CentroidTable:
    """Class centroids of one model, and the fixed 2D view of its embedding space.

    class_ids (K,) sorted; centroids (K, D); seen (K,) bool (class used in training);
    counts (K,) images per class; projection W (D, 2): identity for D = 2, else PCA
    of the centroids.
    """

    class_ids: np.ndarray
    centroids: np.ndarray
    seen: np.ndarray
    counts: np.ndarray
    projection: np.ndarray
    n_digits: int

    @property
    def xy(self) -> np.ndarray:
        """(K, 2) centroids in the 2D view."""
        return self.centroids @ self.projection

    @property
    def dim(self) -> int:
        return self.centroids.shape[1]

    @property
    def projected(self) -> bool:
        return self.dim != 2

    def digit(self, position: int) -> np.ndarray:
        """(K,) the digit at ``position`` (0 = leftmost, e.g. tens for N = 2) of every class."""
        if not 0 <= position < self.n_digits:
            raise InputError(f"position must be in 0..{self.n_digits - 1}; got {position}")
        return self.class_ids // 10 ** (self.n_digits - 1 - position) % 10

    def labels(self) -> list[str]:
        return [f"{c:0{self.n_digits}d}" for c in self.class_ids]


def centroid_table(model: EmbeddingNet, datasets: Sequence[NDigitSet], per_class: int | None = None,
                   batch_size: int = 2048) -> CentroidTable:
    """Centroids of every class in ``datasets`` (clean images), with their 2D projection.

    ``per_class`` caps the images used per class (the first ones in the split's random
    order), trading a little precision for speed: the app uses 30 (~1 s per model
    on one CPU core instead of ~8 s for all 20k test images).
    """
    from hedgekit.evaluation.metrics import class_centroids

    if not datasets:
        raise InputError("centroid_table needs at least one dataset")
    n = datasets[0].n_digits
    zs, ys = [], []
    for ds in datasets:
        if ds.n_digits != n:
            raise InputError("all datasets must have the same number of digits")
        if per_class is not None:
            ds = ds.subset(_first_per_class(ds.labels, per_class))
        x, y = ds.tensors(corrupt=False)
        zs.append(model.embed(x, batch_size).mixture_mean().numpy())
        ys.append(y.numpy())
    z, y = np.concatenate(zs), np.concatenate(ys)
    ids, cent = class_centroids(z, y)
    seen_ids, _ = class_split(n)
    counts = np.bincount(np.searchsorted(ids, y), minlength=len(ids))
    cent = cent.astype(np.float32)
    return CentroidTable(ids.astype(np.int64), cent, np.isin(ids, seen_ids), counts, pca_basis(cent), n)


def _first_per_class(labels: np.ndarray, k: int) -> np.ndarray:
    """Indices of the first ``k`` images of every class, in their original order."""
    if k < 1:
        raise InputError(f"per_class must be >= 1; got {k}")
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.searchsorted(sorted_labels, sorted_labels, side="left")
    rank = np.arange(len(labels)) - starts
    return np.sort(order[rank < k])


def align_tables(src: CentroidTable, dst: CentroidTable) -> Similarity:
    """Similarity transform taking ``src``'s 2D view onto ``dst``'s, fitted on their shared classes."""
    shared, i, j = np.intersect1d(src.class_ids, dst.class_ids, return_indices=True)
    if len(shared) < 2:
        raise InputError("the two centroid tables share fewer than 2 classes")
    return similarity_fit(src.xy[i], dst.xy[j])


# ----------------------------------------------------------------------- inputs
def check_image(image, shape: tuple[int, int] = (DIGIT_SIZE, 2 * DIGIT_SIZE)) -> np.ndarray:
    """A (H, W) uint8 image from uint8 or float-in-[0, 1] input; InputError with the reason otherwise."""
    if isinstance(image, torch.Tensor):
        image = image.detach().cpu().numpy()
    img = np.asarray(image)
    if img.ndim == 3 and img.shape[0] == 1:
        img = img[0]
    if img.ndim != 2 or img.shape != tuple(shape):
        raise InputError(f"the image must be {shape[0]} x {shape[1]} pixels (height x width, one channel); "
                         f"got shape {img.shape}")
    if img.dtype == np.uint8:
        return img
    if not np.issubdtype(img.dtype, np.number) or img.dtype == bool:
        raise InputError(f"image pixels must be numbers; got dtype {img.dtype}")
    img = img.astype(float)
    if not np.isfinite(img).all():
        raise InputError("the image contains NaN or inf pixels")
    if img.min() < 0 or img.max() > 1:
        if np.issubdtype(np.asarray(image).dtype, np.integer) and img.min() >= 0 and img.max() <= 255:
            return img.astype(np.uint8)
        raise InputError(f"float images must lie in [0, 1]; got values in [{img.min():.3g}, {img.max():.3g}]")
    return np.rint(img * 255).astype(np.uint8)


def check_boxes(boxes, image_shape: tuple[int, int] = (DIGIT_SIZE, 2 * DIGIT_SIZE)) -> np.ndarray:
    """(n, 4) int64 boxes (top, left, height, width), each non-empty and inside the image.

    Raises InputError naming the bad box: not 4 integers (True / False, NaN and fractions are
    refused), zero area, a negative height or width, or reaching outside the image (use
    `box_from_drag` for mouse rectangles, which clips and orders their corners).
    """
    h, w = image_shape[-2:]
    if boxes is None:
        return np.zeros((0, 4), dtype=np.int64)
    check_not_bool(boxes)
    try:
        arr = np.asarray(boxes, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"boxes must be (top, left, height, width) quadruples; got {boxes!r}") from exc
    if arr.size == 0:
        return np.zeros((0, 4), dtype=np.int64)
    if arr.ndim == 1:
        arr = arr[None]
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise InputError(f"boxes must be (top, left, height, width) quadruples; got an array of shape {arr.shape}")
    out = []
    for k, box in enumerate(arr, 1):
        if not np.isfinite(box).all() or not np.all(box == np.round(box)):
            raise InputError(f"rectangle {k} must be 4 whole pixel numbers (top, left, height, width); "
                             f"got {box.tolist()}")
        top, left, bh, bw = (int(v) for v in box)
        if bh < 0 or bw < 0:
            raise InputError(f"rectangle {k} (top {top}, left {left}, {bh} x {bw} px) has a negative height or "
                             "width: a box counts pixels down and right of (top, left) (`box_from_drag` orders a "
                             "rectangle dragged up or left)")
        if bh == 0 or bw == 0:
            raise InputError(f"rectangle {k} (top {top}, left {left}, {bh} x {bw} px) has zero area: "
                             "drag or set a larger one")
        if top < 0 or left < 0 or top + bh > h or left + bw > w:
            raise InputError(f"rectangle {k} (top {top}, left {left}, {bh} x {bw} px) reaches outside the "
                             f"{h} x {w} image")
        out.append((top, left, bh, bw))
    return np.array(out, dtype=np.int64).reshape(-1, 4)


def box_from_drag(x_range, y_range, image_shape: tuple[int, int] = (DIGIT_SIZE, 2 * DIGIT_SIZE)) -> np.ndarray:
    """The pixel box (top, left, height, width) of a rectangle dragged on the image.

    ``x_range``/``y_range`` are in plot coordinates where pixel (r, c) is centred at
    (x=c, y=r) and covers [c - 0.5, c + 0.5] (heatmap/image convention). The
    rectangle is clipped to the image (`hedgekit.data.clip_box`); InputError if it is
    empty (a click, not a drag) or lies entirely outside the image.
    """
    try:
        x0, x1 = (float(v) for v in x_range)
        y0, y1 = (float(v) for v in y_range)
    except (TypeError, ValueError) as exc:
        raise InputError(f"a dragged rectangle needs two x and two y values; got {x_range!r}, {y_range!r}") from exc
    if not np.isfinite([x0, x1, y0, y1]).all():
        raise InputError("the dragged rectangle has non-finite corners")
    if abs(x1 - x0) < 0.5 or abs(y1 - y0) < 0.5:
        raise InputError("the dragged rectangle has (almost) zero area: drag across at least one pixel")
    box = clip_box((min(y0, y1) + 0.5, min(x0, x1) + 0.5, abs(y1 - y0), abs(x1 - x0)), image_shape)
    if box is None:
        raise InputError(f"the dragged rectangle lies outside the {image_shape[-2]} x {image_shape[-1]} image")
    return box


# Uploads (`image_from_bytes`): the file and its header are checked before any pixel is decoded.
MAX_UPLOAD_BYTES = 5_000_000  # a 4096 x 4096 photo as JPEG is ~2-4 MB; a 56 x 28 PNG under 10 kB
MAX_UPLOAD_SIDE = 4096  # pixels per side; larger images are refused from their header alone
_BIT_DEPTHS = (8, 10, 12, 14, 16, 32)  # 2**k - 1 is the white of a k-bit integer image


MAX_UPLOAD_FRAMES = 100  # frames of an animated image (GIF, APNG, WebP, TIFF pages) searched for a non-blank one
BLANK_CONTRAST = 24  # gray levels: an image whose pixels span fewer is blank (a JPEG of white paper spans a few)
_ORIENTATION = 0x0112  # the EXIF tag; values 5-8 turn the stored image by 90 degrees (width and height swap)


@dataclass(frozen=True, eq=False)
class Upload:
    """A decoded upload (`decode_upload`): the (H, W) uint8 image the model gets and what was done to get it."""

    image: np.ndarray
    notes: tuple[str, ...] = ()  # e.g. "inverted ...", "frame 3 of 5 ..."; the app shows them under the image


def image_from_bytes(data: bytes, shape: tuple[int, int] = (DIGIT_SIZE, 2 * DIGIT_SIZE),
                     invert: bool | None = None) -> np.ndarray:
    """The image of `decode_upload` (without its notes)."""
    return decode_upload(data, shape, invert).image


def decode_upload(data: bytes, shape: tuple[int, int] = (DIGIT_SIZE, 2 * DIGIT_SIZE),
                  invert: bool | None = None) -> Upload:
    """Decode an uploaded image file (PNG, JPEG, GIF, ...) to a (H, W) uint8 grayscale image of ``shape``.

    Safe for any bytes: the file size and the header's width and height are checked before
    any pixel is decoded (at most `MAX_UPLOAD_BYTES`, `MAX_UPLOAD_SIDE` px per side, at least
    ``shape``), and any decoding failure (not an image, truncated, decompression bomb,
    unsupported mode) becomes an InputError saying what was expected. The sizes are those the
    image is shown at: a JPEG's EXIF orientation (a photo taken sideways) is applied first.

    Modes are converted by their real range: a 16-bit (or 10/12/14-bit) grayscale image is
    scaled from the smallest 2^k - 1 that holds its brightest pixel, so it does not come out
    black; colour (RGB, CMYK, palette) becomes luminance; transparent pixels become
    background, white behind dark ink and black behind light ink. An animated image (GIF, ...)
    gives its first frame that is not blank, and a note says which. A blank image (all its
    pixels within `BLANK_CONTRAST` gray levels: all black, all white, any flat gray), of any
    size, is refused. MNIST digits are white on black: ``invert=None`` inverts images whose
    border is mostly bright (dark digits on paper, `looks_inverted`), with a note; True/False
    force it. An image of exactly ``shape`` is used as is; a larger one (e.g. a photo of two
    digits) is cropped, scaled and centred per digit like MNIST (`image_from_drawing`).
    """
    import io

    from PIL import Image, ImageOps

    if not data:
        raise InputError("the uploaded file is empty")
    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(f"the file is {len(data) / 1e6:.1f} MB; images up to {MAX_UPLOAD_BYTES / 1e6:.0f} MB "
                         "are accepted (a 56 x 28 PNG is a few kB)")
    h_min, w_min = shape
    notes = []
    try:
        with Image.open(io.BytesIO(data)) as im:  # lazy: reads the header only
            w, h = im.size
            if max(w, h) > MAX_UPLOAD_SIDE:
                raise InputError(f"the image is {w} x {h} pixels; at most {MAX_UPLOAD_SIDE} x {MAX_UPLOAD_SIDE} "
                                 f"are accepted (the model needs {w_min} x {h_min})")
            if im.getexif().get(_ORIENTATION, 1) in (5, 6, 7, 8):  # shown turned by 90 degrees
                w, h = h, w
            if w < w_min or h < h_min:
                raise InputError(f"the image is {w} x {h} pixels (width x height) but needs at least {w_min} x "
                                 f"{h_min}: {w_min // DIGIT_SIZE} digits of 28 x 28 side by side (larger images "
                                 "are scaled down)")
            n_frames = getattr(im, "n_frames", 1)
            for frame in range(min(n_frames, MAX_UPLOAD_FRAMES)):
                im.seek(frame)
                im.load()
                gray = _gray_pixels(ImageOps.exif_transpose(im))
                if not _is_blank(gray):
                    break
    except InputError:
        raise
    except Image.DecompressionBombError as exc:
        raise InputError(f"the image is too large to decode safely; at most {MAX_UPLOAD_SIDE} x {MAX_UPLOAD_SIDE} "
                         f"pixels are accepted ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - any decoder failure on untrusted bytes is a bad file
        raise InputError("the uploaded file is not an image that can be read (try a PNG or JPEG): "
                         f"{type(exc).__name__}: {exc}") from exc
    if _is_blank(gray):
        frames = "" if n_frames == 1 else (f" (all {n_frames} frames)" if n_frames <= MAX_UPLOAD_FRAMES
                                           else f" (its first {MAX_UPLOAD_FRAMES} frames)")
        raise InputError(f"the image is blank{frames}: every pixel is gray level {gray.min():.0f} to "
                         f"{gray.max():.0f}, no digit to read (the model needs two digits side by side)")
    if n_frames > 1:
        skipped = f" (the first {frame} are blank)" if frame > 1 else " (the first is blank)" if frame else ""
        notes.append(f"an image of {n_frames} frames (an animated GIF, ...): frame {frame + 1} is used{skipped}")
    img, note = white_on_black(gray, invert)
    notes += [note] if note else []
    if img.shape != tuple(shape):
        img = image_from_drawing(img, w_min // DIGIT_SIZE)
    return Upload(img, tuple(notes))


def _is_blank(gray: np.ndarray) -> bool:
    """Whether an image's pixels (gray levels 0..255) span fewer than `BLANK_CONTRAST` levels: nothing drawn."""
    return float(gray.max()) - float(gray.min()) < BLANK_CONTRAST


def looks_inverted(gray: np.ndarray) -> bool:
    """Whether a grayscale image (0..255) shows dark ink on a light background: its border's median is bright.
    MNIST's digits are white on black and centred, so their border is black."""
    border = np.concatenate([gray[0], gray[-1], gray[:, 0], gray[:, -1]])
    return bool(np.median(border) > 127)


def white_on_black(gray: np.ndarray, invert: bool | None = None) -> tuple[np.ndarray, str]:
    """(uint8 image, note): ``gray`` (0..255) as MNIST's white digits on black. ``invert=None`` inverts it if it
    `looks_inverted`, and the note says so ("" otherwise); True / False force it (no note)."""
    auto = invert is None
    invert = looks_inverted(gray) if auto else bool(invert)
    img = np.rint(255.0 - gray if invert else gray).astype(np.uint8)
    note = ("inverted: the image showed dark digits on a light background, and the model reads white digits "
            "on black like MNIST" if auto and invert else "")
    return img, note


def _gray_pixels(im) -> np.ndarray:
    """(H, W) float luminance in [0, 255] of a decoded PIL image (see `image_from_bytes` for the rules)."""
    if im.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        a = np.asarray(im, dtype=np.float64)
        if a.ndim != 2 or not np.isfinite(a).all() or a.min() < 0:
            raise InputError(f"the image has mode {im.mode} with negative or non-finite pixels")
        top = a.max()
        if im.mode == "F" and top <= 1:
            white = 1.0
        else:
            white = next((2.0**k - 1 for k in _BIT_DEPTHS if top <= 2.0**k - 1), top)
        return a * (255.0 / white)
    if "A" in im.getbands() or "transparency" in im.info:
        rgba = np.asarray(im.convert("RGBA"), dtype=np.float64)
        lum = rgba[..., :3] @ np.array([0.299, 0.587, 0.114])  # ITU-R 601-2, as PIL's "L"
        alpha = rgba[..., 3] / 255.0
        ink = (lum * alpha).sum() / alpha.sum() if alpha.sum() > 0 else 0.0
        background = 255.0 if ink < 128 else 0.0  # behind dark ink: paper white; behind light ink: black
        return lum * alpha + background * (1 - alpha)
    return np.asarray(im.convert("L"), dtype=np.float64)


def image_from_drawing(drawing, n_digits: int = 2, digit_box_px: int = 20) -> np.ndarray:
    """A (28, 28N) uint8 image from a free-hand drawing of N digits side by side.

    ``drawing`` is (H, W) grayscale or (H, W, 3|4) RGB(A) at any resolution (e.g. a
    280 x 560 canvas), light strokes on a dark or transparent background. Each of
    the N equal-width cells is processed like MNIST itself: crop to the ink's
    bounding box, scale its longer side to 20 px keeping the aspect ratio, then
    place it in a 28 x 28 cell with its centre of mass at the centre. An empty cell
    stays black (like an occluded digit); an empty drawing raises InputError.
    """
    from PIL import Image

    arr = np.asarray(drawing)
    if arr.ndim == 3 and arr.shape[-1] in (3, 4):
        rgb = arr[..., :3].astype(float).mean(-1)
        if arr.shape[-1] == 4:  # transparent pixels are background
            rgb = rgb * (arr[..., 3].astype(float) / 255.0)
        arr = rgb
    if arr.ndim != 2 or min(arr.shape) < 4:
        raise InputError(f"a drawing must be (H, W) or (H, W, 3|4) pixels; got shape {np.asarray(drawing).shape}")
    ink = np.clip(arr.astype(float), 0, 255)
    if ink.max() <= 0:
        raise InputError("the drawing is empty: draw two digits side by side first")
    h, w = ink.shape
    out = np.zeros((DIGIT_SIZE, DIGIT_SIZE * n_digits), dtype=np.uint8)
    for j in range(n_digits):
        cell = ink[:, round(j * w / n_digits): round((j + 1) * w / n_digits)]
        rows, cols = np.flatnonzero(cell.max(1) > 25), np.flatnonzero(cell.max(0) > 25)
        if len(rows) == 0:
            continue
        crop = cell[rows[0]: rows[-1] + 1, cols[0]: cols[-1] + 1]
        scale = digit_box_px / max(crop.shape)
        size = (max(1, round(crop.shape[1] * scale)), max(1, round(crop.shape[0] * scale)))
        small = np.asarray(Image.fromarray(crop.astype(np.uint8)).resize(size, Image.LANCZOS), dtype=float)
        small = np.clip(small, 0, 255)
        tot = small.sum()
        cy = (small.sum(1) @ np.arange(small.shape[0])) / tot if tot else small.shape[0] / 2
        cx = (small.sum(0) @ np.arange(small.shape[1])) / tot if tot else small.shape[1] / 2
        top = int(np.clip(round(DIGIT_SIZE / 2 - 0.5 - cy), 0, DIGIT_SIZE - small.shape[0]))
        left = int(np.clip(round(DIGIT_SIZE / 2 - 0.5 - cx), 0, DIGIT_SIZE - small.shape[1]))
        out[top: top + small.shape[0], DIGIT_SIZE * j + left: DIGIT_SIZE * j + left + small.shape[1]] = \
            np.rint(small).astype(np.uint8)
    return out


def digit_box(digit: int, rows: Sequence[int], cols: Sequence[int], n_digits: int = 2) -> np.ndarray | None:
    """Box over rows [r0, r1) and columns [c0, c1) of digit ``digit``'s 28 x 28 cell; None if empty."""
    if not 0 <= digit < n_digits:
        raise InputError(f"digit must be in 0..{n_digits - 1}; got {digit}")
    (r0, r1), (c0, c1) = (sorted(int(v) for v in rows), sorted(int(v) for v in cols))
    if min(r0, c0) < 0 or max(r1, c1) > DIGIT_SIZE:
        raise InputError(f"rows and columns of a digit cell must lie in 0..{DIGIT_SIZE}; got {rows}, {cols}")
    if r1 == r0 or c1 == c0:
        return None
    return np.array([r0, DIGIT_SIZE * digit + c0, r1 - r0, c1 - c0], dtype=np.int64)


def full_digit_box(digit: int, n_digits: int = 2) -> np.ndarray:
    """The box hiding digit ``digit`` completely."""
    return digit_box(digit, (0, DIGIT_SIZE), (0, DIGIT_SIZE), n_digits)


def covered_fraction(boxes, image_shape: tuple[int, int] = (DIGIT_SIZE, 2 * DIGIT_SIZE)) -> float:
    """Fraction of the image's pixels hidden by the union of ``boxes``."""
    boxes = check_boxes(boxes, image_shape)
    if len(boxes) == 0:
        return 0.0
    return float(1.0 - occlude(np.ones(image_shape[-2:], dtype=np.uint8), boxes).mean())


# ----------------------------------------------------------------------- analysis
@dataclass(frozen=True, eq=False)
class Analysis:
    """Everything the app shows about one (occluded) input under one model.

    All arrays are numpy; "xy" quantities are in the 2D view (projected by W for D > 2).
    """

    image: np.ndarray  # (H, W) uint8: the occluded image the model saw
    boxes: np.ndarray  # (n, 4) int64
    covered: float  # fraction of pixels hidden
    weights: np.ndarray  # (C,)
    means: np.ndarray  # (C, D) component means
    variances: np.ndarray  # (C, D) component variances (zeros for a point model)
    mean: np.ndarray  # (D,) mixture mean
    xy: np.ndarray  # (2,) mixture mean in the 2D view
    cov_xy: np.ndarray  # (2, 2) moment-matched covariance in the 2D view
    comp_xy: np.ndarray  # (C, 2)
    comp_cov_xy: np.ndarray  # (C, 2, 2)
    eta: float  # HIB eq. 9
    trace: float  # trace of the mixture covariance in full D (volumetric measure, HIB sec. 2.4)
    top_ids: np.ndarray  # (k,) class ids, most probable match first
    top_probs: np.ndarray  # (k,) p(m | x, centroid)
    is_point: bool
    projected: bool  # D > 2, shown through W
    note: str = ""  # what was done to the input: "inverted: ..." if it looked like dark digits on white

    @property
    def top(self) -> list[tuple[int, float]]:
        return [(int(c), float(p)) for c, p in zip(self.top_ids, self.top_probs)]

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @property
    def n_components(self) -> int:
        return self.means.shape[0]


def _repeat(emb: Embedding, k: int) -> Embedding:
    return Embedding(emb.mean.expand(k, -1, -1), emb.var.expand(k, -1, -1), emb.weights.expand(k, -1))


class PolarityWarning(UserWarning):
    """An input array looked like dark digits on a light background and was inverted (`model_input`)."""


def model_input(image, boxes, shape: tuple[int, int], invert: bool | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """(occluded image, boxes, note): the array path's checks, shared by `analyse`, `retrieve` and
    `prototype_posterior`. ``image`` passes `check_image`, ``boxes`` `check_boxes`; polarity as for uploads
    (`white_on_black`): with ``invert=None`` an image that `looks_inverted` (black digits on white) is inverted
    before the boxes black out its pixels, the note says so and a `PolarityWarning` is issued. True / False force
    the inversion (False: the image is used as given)."""
    import warnings

    img, note = white_on_black(check_image(image, shape).astype(float), invert)
    if note:
        warnings.warn(note, PolarityWarning, stacklevel=4)  # the caller of analyse (under its no_grad wrapper)
    boxes = check_boxes(boxes, shape)
    return (occlude(img, boxes) if len(boxes) else img), boxes, note


@torch.no_grad()
def analyse(model: EmbeddingNet, image, boxes=(), centroids: CentroidTable | None = None,
            n_points: int = APP_POINTS, top_k: int = 5, invert: bool | None = None) -> Analysis:
    """Embed ``image`` with ``boxes`` blacked out and compute what the playground shows.

    Args:
        model: a trained `EmbeddingNet` (eval mode is used).
        image: (H, W) uint8 or float in [0, 1], the *clean* image, white digits on black (a dark-on-light
            image is inverted, see ``invert``); ``boxes`` are applied here.
        boxes: (n, 4) rectangles (top, left, height, width), validated by `check_boxes`.
        centroids: the model's `CentroidTable`; without it there is no top-k and the
            2D view is the first two coordinates.
        n_points: QMC points for eta and the match probabilities (deterministic).
        top_k: how many best-matching classes to list: an integer >= 1, at most the table's classes.
        invert: None inverts an image of dark digits on a light background (`model_input`; ``Analysis.note``
            says so), True / False force it.
    """
    shape = tuple(model.input_shape[1:])
    seen, boxes, note = model_input(image, boxes, shape, invert)
    covered = covered_fraction(boxes, shape) if len(boxes) else 0.0
    if model.training:
        model.eval()
    device = next(model.parameters()).device
    x = torch.from_numpy(seen.astype(np.float32) / 255.0).to(device)[None, None]
    emb = model(x).to("cpu").map(lambda t: t.float())
    eta = float(self_mismatch(emb, model.match, n_points)[0])
    d = emb.dim
    if centroids is not None:
        if centroids.dim != d:
            raise InputError(f"centroid table is {centroids.dim}-D but the model embeds in {d}-D")
        w = centroids.projection
        cent = torch.as_tensor(centroids.centroids, dtype=torch.float32)
        probs = match_probability(_repeat(emb, len(cent)), Embedding.point(cent), model.match, n_points).numpy()
        k = min(check_count(top_k, "top_k"), len(probs))  # at most the table's classes
        order = np.lexsort((centroids.class_ids, -probs))[:k]  # ties: smaller class id first
        top_ids, top_probs = centroids.class_ids[order].copy(), probs[order].astype(float)
    else:
        if d < 2:
            raise InputError("1-D embeddings need a centroid table with a (1, 2) projection")
        w = np.eye(d)[:, :2]
        top_ids, top_probs = np.zeros(0, dtype=np.int64), np.zeros(0)
    means = emb.mean[0].numpy().astype(float)
    variances = emb.var[0].numpy().astype(float)
    weights = emb.weights[0].numpy().astype(float)
    comp_xy = means @ w
    comp_cov = np.einsum("di,cd,dj->cij", w, variances, w)
    xy, cov_xy = moment_match(weights, comp_xy, comp_cov)
    return Analysis(
        image=seen, boxes=boxes, covered=covered, weights=weights, means=means, variances=variances,
        mean=weights @ means, xy=xy, cov_xy=cov_xy, comp_xy=comp_xy, comp_cov_xy=comp_cov, eta=eta,
        trace=float(emb.total_var()[0].sum()), top_ids=top_ids, top_probs=top_probs,
        is_point=bool(emb.is_point), projected=d != 2, note=note,
    )


def eta_floor(model: EmbeddingNet) -> float:
    """1 - sigmoid(b): the eta of a zero-variance embedding, the smallest eta the model can give (HIB eq. 2, 9)."""
    return float(1.0 - torch.sigmoid(model.match.b.detach()).item())


# ----------------------------------------------------------------------- trail
def update_trail(trail: Sequence[dict], a: Analysis, max_len: int = 25, tol: float = 1e-9) -> list[dict]:
    """A new trail: ``trail`` plus this analysis' step (plain dicts, fit for session state).

    A step is {"xy": [x, y], "cov": [[.,.],[.,.]], "eta": float, "covered": float}.
    Nothing is added when the embedding did not move (reruns without a change);
    only the last ``max_len`` steps are kept.
    """
    step = {"xy": [float(v) for v in a.xy], "cov": [[float(v) for v in row] for row in a.cov_xy],
            "eta": float(a.eta), "covered": float(a.covered)}
    trail = list(trail)
    if trail:
        last = trail[-1]
        if (np.abs(np.subtract(last["xy"], step["xy"])).max() <= tol
                and np.abs(np.subtract(last["cov"], step["cov"])).max() <= tol):
            return trail
    return (trail + [step])[-max_len:]


@dataclass
class MapLayers:
    """Figure data of the embedding map (numpy only; plotted by `hedgekit.viz.interactive`).

    ellipses: [(component, n_sigma, (n, 2) contour)], trail_path (T, 2) past means,
    trail_ellipses [(n, 2)] 1-sigma contours of past steps (oldest first),
    components (C, 2) component means, mean (2,), point (2,) or None.
    """

    mean: np.ndarray
    components: np.ndarray
    weights: np.ndarray
    ellipses: list = field(default_factory=list)
    trail_path: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    trail_ellipses: list = field(default_factory=list)
    trail_eta: np.ndarray = field(default_factory=lambda: np.zeros(0))
    point: np.ndarray | None = None
    is_point: bool = False


def map_layers(a: Analysis, trail: Sequence[dict] = (), sigmas: Sequence[float] = (1, 2, 3), n: int = 72,
               point_xy=None) -> MapLayers:
    """Ellipse contours of every component at every n-sigma, plus the trail (HIB Fig. 3-4 style)."""
    layers = MapLayers(mean=a.xy, components=a.comp_xy, weights=a.weights, is_point=a.is_point,
                       point=None if point_xy is None else np.asarray(point_xy, dtype=float))
    if not a.is_point:
        for c in range(a.n_components):
            for s in sigmas:
                layers.ellipses.append((c, float(s), ellipse_points(a.comp_xy[c], a.comp_cov_xy[c], s, n)))
    past = list(trail)[:-1] if trail and np.allclose(trail[-1]["xy"], a.xy) else list(trail)
    steps = past + [{"xy": a.xy, "cov": a.cov_xy, "eta": a.eta}]
    layers.trail_path = np.array([s["xy"] for s in steps], dtype=float).reshape(-1, 2)
    layers.trail_eta = np.array([s["eta"] for s in steps], dtype=float)
    if not a.is_point:
        layers.trail_ellipses = [ellipse_points(s["xy"], s["cov"], 1.0, n) for s in past]
    return layers


def focus_extent(layers: MapLayers, table: CentroidTable | None = None, top_ids=(), pad: float = 0.3,
                 min_size: float = 1e-3) -> tuple[tuple[float, float], tuple[float, float]]:
    """((xmin, xmax), (ymin, ymax)): a square around the input's ellipses, components and the centroids of
    ``top_ids`` (pass the best match or two), padded by ``pad`` of its half-size; the trail and the point
    overlay are left out so the view really zooms on where the input is now."""
    pts = [layers.mean[None], layers.components] + [c for _, _, c in layers.ellipses]
    if table is not None and len(top_ids):
        pts.append(table.xy[np.isin(table.class_ids, np.asarray(top_ids))])
    allp = np.concatenate([np.asarray(p, dtype=float).reshape(-1, 2) for p in pts])
    lo, hi = allp.min(0), allp.max(0)
    centre, half = (lo + hi) / 2, max(float((hi - lo).max()) / 2 * (1 + pad), min_size)
    return (centre[0] - half, centre[0] + half), (centre[1] - half, centre[1] + half)


def anchor_point(xy, src: CentroidTable, dst: CentroidTable, sim: Similarity) -> tuple[np.ndarray, int]:
    """Where a point model's embedding ``xy`` (in ``src``'s 2D view) is drawn on another model's map.

    It sits by the ``dst`` centroid of its nearest ``src`` class (for a 2D point model, its best match),
    offset as in its own space, carried by the scale and rotation of ``sim`` (`align_tables`). A global
    similarity alone can land the point near another class when the two layouts differ (R^2 < 1); anchored,
    the mark always stands beside the class the point model matched. Returns (xy on ``dst``, that class id).
    """
    shared = np.intersect1d(src.class_ids, dst.class_ids)
    if not len(shared):
        raise InputError("the two centroid tables share no class")
    xy = np.asarray(xy, dtype=float)
    s_xy = src.xy[np.isin(src.class_ids, shared)]
    c = int(shared[np.argmin(np.linalg.norm(s_xy - xy, axis=1))])
    offset = sim.scale * (xy - src.xy[src.class_ids == c][0]) @ sim.rotation
    return dst.xy[dst.class_ids == c][0] + offset, c


# ----------------------------------------------------------------------- retrieval page (Taha et al. 2019)
APP_GALLERY_IMAGES = 2000  # unseen-class test images on the Retrieval page: 25% queries, 75% gallery
APP_OCCLUDED_GALLERY = 0.5  # share of gallery images replaced by their occluded twin (the "bad shots")


def trained_or_fast(spec):
    """``spec`` if a checkpoint of it exists (shipped or cached), else the same model at the fast preset.

    Models no checkpoint ships for (the triplet models, SPE at N = 3) would take minutes at the paper preset;
    the app shows their fast twin (seconds to train) unless the paper one was trained, e.g. by a notebook.
    """
    from hedgekit.zoo import find_checkpoint

    return spec if find_checkpoint(spec) is not None else spec.at_preset("fast")


def retrieval_spec(preset: str | None = None, n_digits: int = 2):
    """The heteroscedastic triplet model of the Retrieval page: notebook 08's Table 1 "Tri + Hetero" model
    (N-digit MNIST, trained on the seen classes; `hedgekit.papers.taha.experiments`), via `trained_or_fast`."""
    from hedgekit.papers.taha.experiments import DIM
    from hedgekit.zoo import Spec

    return trained_or_fast(Spec(kind="het", data="ndigit", n_digits=n_digits, dim=DIM, recipe="main",
                                preset=preset or app_preset()))


@dataclass(frozen=True, eq=False)
class RetrievalGallery:
    """Queries and gallery of the Retrieval page, embedded once (Taha et al. sec. 5.1 query-by-example).

    Gallery: images (G, H, W) uint8 as the model saw them, labels (G,), means (G, D), sigma2 (G,) the
    heteroscedastic uncertainty, occluded (G,) bool, index (G,) position in the test split. Queries (clean):
    query_means (Q, D), query_labels (Q,), query_index (Q,).
    """

    images: np.ndarray
    labels: np.ndarray
    means: np.ndarray
    sigma2: np.ndarray
    occluded: np.ndarray
    index: np.ndarray
    query_means: np.ndarray
    query_labels: np.ndarray
    query_index: np.ndarray


def _embed_images(model: EmbeddingNet, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(means (n, D), uncertainty (n,)) of uint8 images: the model's own u(x) (sigma^2 for the het head)."""
    x = torch.from_numpy(np.ascontiguousarray(images)).unsqueeze(1).float().div(255.0)
    emb = model.embed(x)
    u = emb.uncertainty if emb.uncertainty is not None else emb.total_var()
    return emb.mixture_mean().numpy().astype(np.float64), u.numpy().astype(np.float64)


def retrieval_gallery(model: EmbeddingNet, test: NDigitSet, n_images: int = APP_GALLERY_IMAGES,
                      occluded: float = APP_OCCLUDED_GALLERY, seed: int = 0) -> RetrievalGallery:
    """Embed ``n_images`` of ``test`` (seeded), split 25/75 into clean queries and a gallery
    (`hedgekit.data.subsets.query_gallery_split`) in which a share ``occluded`` of the images is the
    test set's occluded twin: the uncertain gallery items that cleaning should remove (Taha Table 2)."""
    from hedgekit.data.subsets import query_gallery_split

    if not 0 <= occluded <= 1:
        raise InputError(f"occluded must be a share in [0, 1]; got {occluded}")
    if not 4 <= n_images <= len(test.labels):
        raise InputError(f"n_images must be in 4..{len(test.labels)}; got {n_images}")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.permutation(len(test.labels))[:n_images])
    q, g = query_gallery_split(test.labels[idx], seed=seed)
    bad = rng.random(len(g)) < occluded
    images = np.where(bad[:, None, None], test.corrupt[idx[g]], test.images[idx[g]])
    means, sigma2 = _embed_images(model, images)
    q_means, _ = _embed_images(model, test.images[idx[q]])
    return RetrievalGallery(images, test.labels[idx[g]], means, sigma2, bad, idx[g], q_means,
                            test.labels[idx[q]], idx[q])


@dataclass(frozen=True, eq=False)
class Retrieval:
    """One query against the gallery: its embedding, uncertainty and nearest gallery items."""

    image: np.ndarray  # (H, W) uint8, the occluded query as the model saw it
    mean: np.ndarray  # (D,)
    sigma2: float  # the query's uncertainty u(x) (sigma^2, Taha eq. 11)
    percentile: float  # share of the gallery with a smaller sigma^2
    neighbours: np.ndarray  # (k,) gallery positions, nearest first
    distances: np.ndarray  # (k,) Euclidean distances


@torch.no_grad()
def retrieve(model: EmbeddingNet, image, boxes, gallery: RetrievalGallery, k: int = 8, removed=(),
             exclude_index: int | None = None) -> Retrieval:
    """Embed ``image`` with ``boxes`` blacked out; its ``k`` nearest gallery items by Euclidean distance
    (ties: lower gallery position first), leaving out the ``removed`` gallery positions and the gallery item
    that is the query's own test image (``exclude_index``, a test-split index). An image of dark digits on a
    light background is inverted first, with a `PolarityWarning` (`model_input`)."""
    shape = tuple(model.input_shape[1:])
    seen, boxes, _ = model_input(image, boxes, shape)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a positive integer; got {k!r}")
    mean, u = _embed_images(model.eval(), seen[None])
    keep = np.ones(len(gallery.labels), dtype=bool)
    keep[np.asarray(removed, dtype=np.int64)] = False
    if exclude_index is not None:
        keep &= gallery.index != exclude_index
    pos = np.flatnonzero(keep)
    d = np.linalg.norm(gallery.means[pos] - mean[0], axis=1)
    order = np.lexsort((pos, d))[:k]
    return Retrieval(seen, mean[0], float(u[0]), float((gallery.sigma2 < u[0]).mean()), pos[order], d[order])


def cleaning_map(gallery: RetrievalGallery, fractions: Sequence[float], random: bool = False) -> list[dict]:
    """mAP and top-1 of the clean queries after removing each fraction of the gallery, most uncertain first
    (or at random): `hedgekit.evaluation.retrieval.map_after_removing_uncertain` (Taha et al. Table 2)."""
    from hedgekit.evaluation.retrieval import map_after_removing_uncertain

    return map_after_removing_uncertain(gallery.query_means, gallery.query_labels, gallery.means, gallery.labels,
                                        gallery.sigma2, fractions, random=random)


# ----------------------------------------------------------------------- SPE on the compare page (Scott et al. 2019)
APP_SUPPORT_IMAGES = 20  # training images per class whose embeddings make the SPE class prototypes


def spe_spec(preset: str | None = None, n_digits: int = 2):
    """The SPE model of the compare page (notebook 07's N-digit model, D = 2), via `trained_or_fast`."""
    from hedgekit.zoo import Spec

    return trained_or_fast(Spec(kind="spe", data="ndigit", n_digits=n_digits, dim=2, preset=preset or app_preset()))


@dataclass(frozen=True, eq=False)
class PrototypeSet:
    """SPE class prototypes built from training images: the support and its classes.

    ``table`` holds the prototype means mu_y (SPE eq. 5) as a `CentroidTable` (so the map draws them like
    centroids); ``variances`` (K, D) are sigma_hat_y^2 = sigma_y^2 + sigma_eps^2, the class likelihoods'
    variances (eq. 6); ``support`` and ``support_classes`` (row -> position in ``table.class_ids``) are
    what `prototype_posterior` hands to the SPE head.
    """

    table: CentroidTable
    variances: np.ndarray
    support: Embedding
    support_classes: torch.Tensor


@torch.no_grad()
def prototype_set(model: EmbeddingNet, head, train: NDigitSet, per_class: int = APP_SUPPORT_IMAGES) -> PrototypeSet:
    """Prototypes of every class of ``train`` from its first ``per_class`` clean images (SPE eq. 5-6)."""
    ds = train.subset(_first_per_class(train.labels, per_class))
    x, _ = ds.tensors(corrupt=False)
    support = model.eval().embed(x)
    class_ids, classes = np.unique(ds.labels, return_inverse=True)
    classes = torch.as_tensor(classes, dtype=torch.long)
    mu, var = head.class_distributions(support, classes, len(class_ids))
    mu = mu.numpy().astype(np.float32)
    table = CentroidTable(class_ids.astype(np.int64), mu, np.ones(len(class_ids), dtype=bool),
                          np.bincount(classes.numpy(), minlength=len(class_ids)), pca_basis(mu), train.n_digits)
    return PrototypeSet(table, var.numpy().astype(float), support, classes)


@torch.no_grad()
def prototype_posterior(model: EmbeddingNet, head, image, boxes, protos: PrototypeSet, seed: int = 0) -> np.ndarray:
    """(K,) p(y | x, S) of the occluded ``image`` over the classes of ``protos`` (SPE eq. 7), with the head's
    evaluation sampler (naive, 200 samples) drawn from a fixed seed, so the numbers never flicker. An image of
    dark digits on a light background is inverted first, with a `PolarityWarning` (`model_input`)."""
    shape = tuple(model.input_shape[1:])
    seen, boxes, _ = model_input(image, boxes, shape)
    x = torch.from_numpy(seen.astype(np.float32) / 255.0)[None, None]
    query = model.eval()(x).to("cpu").map(lambda t: t.float())
    log_p = head.eval().log_posterior(query, protos.support, protos.support_classes, len(protos.table.class_ids),
                                      generator=torch.Generator().manual_seed(seed))
    return log_p[0].exp().numpy().astype(float)


# ----------------------------------------------------------------------- benchmark
def benchmark_update(spec_or_model, n: int = 200, *, seed: int = 0, n_points: int = APP_POINTS,
                     warmup: int = 10, figure: bool = True, split: str = "test_seen",
                     threads: int | None = APP_THREADS) -> dict:
    """Time one playground update, ``n`` times on random test images and random rectangles.

    Timed work per update (what the app does on every occlusion change): validate the
    boxes, occlude, forward pass, eta, top-5 over all centroids, 2D geometry, trail and
    ellipse contours (`map_layers`). With ``figure=True`` the plotly figures
    (`hedgekit.viz.interactive`) are also built and timed separately. Setup
    (loading the model, data and centroid table) is not timed.

    Args:
        spec_or_model: an `EmbeddingNet`, a `hedgekit.zoo.Spec` or its name
            (loaded or trained by `hedgekit.zoo.load_or_train`).
        threads: torch intra-op threads during the timing (restored afterwards);
            default `APP_THREADS`, what the app uses. None keeps the current setting.

    Returns:
        dict with p50_ms, p95_ms, mean_ms, max_ms of the update; figure_p50_ms,
        figure_p95_ms and total_p95_ms (update + figures) if ``figure``; n, n_points,
        threads (torch intra-op threads), model, setup_s.
    """
    if n < 1:
        raise InputError(f"n must be >= 1; got {n}")
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _benchmark(spec_or_model, n, seed, n_points, warmup, figure, split)
    finally:
        torch.set_num_threads(previous)


def _benchmark(spec_or_model, n, seed, n_points, warmup, figure, split) -> dict:
    from hedgekit.data import load_ndigit, sample_digit_boxes

    t_setup = time.perf_counter()
    name = getattr(spec_or_model, "name", None)
    if isinstance(spec_or_model, EmbeddingNet):
        model, name = spec_or_model, spec_or_model.config.get("kind", "model")
    else:
        from hedgekit.zoo import spec_from_name

        spec = spec_from_name(spec_or_model) if isinstance(spec_or_model, str) else spec_or_model
        model, _ = load_model(spec)
        name = spec.name
    model.eval()
    n_digits = model.config.get("n_digits", 2)
    data = load_ndigit(n_digits, split)
    table = centroid_table(model, [data], per_class=APP_CENTROID_IMAGES)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(data), warmup + n)
    boxes = sample_digit_boxes(rng, warmup + n, n_digits, 0.7)
    if figure:
        from hedgekit.viz.interactive import embedding_map, eta_gauge, image_figure
    setup_s = time.perf_counter() - t_setup
    upd, fig_ms, trail = [], [], []
    for i in range(warmup + n):
        bx = [b for b in boxes[i].tolist() if b[2] > 0 and b[3] > 0]
        t0 = time.perf_counter()
        a = analyse(model, data.images[idx[i]], bx, table, n_points=n_points)
        trail = update_trail(trail, a)
        layers = map_layers(a, trail)
        t1 = time.perf_counter()
        if figure:
            embedding_map(table, layers)
            eta_gauge(a.eta)
            image_figure(a.image, a.boxes)
        t2 = time.perf_counter()
        if i >= warmup:
            upd.append(1e3 * (t1 - t0))
            fig_ms.append(1e3 * (t2 - t1))

    def pct(v, q):
        return float(np.percentile(v, q))

    out = {"model": name, "n": n, "n_points": n_points, "threads": torch.get_num_threads(),
           "p50_ms": pct(upd, 50), "p95_ms": pct(upd, 95), "mean_ms": statistics.fmean(upd), "max_ms": max(upd),
           "setup_s": round(setup_s, 2)}
    if figure:
        tot = np.add(upd, fig_ms)
        out.update(figure_p50_ms=pct(fig_ms, 50), figure_p95_ms=pct(fig_ms, 95), total_p50_ms=pct(tot, 50),
                   total_p95_ms=pct(tot, 95))
    return out
