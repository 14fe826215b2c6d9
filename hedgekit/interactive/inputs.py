"""The app's inputs, checked: an image (an array, an uploaded file or a drawing) and the rectangles hiding it.

Every input becomes what the models read, MNIST-like: a (28, 28N) uint8 image of white digits on black. Bad
input gets an `InputError` saying what was expected: `check_image` and `check_boxes` for arrays, `box_from_drag`
for mouse rectangles, `decode_upload` for any bytes (size and header checked before a pixel is decoded),
`image_from_drawing` for a canvas; `model_input` is the one path of an (image, boxes) pair into a model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from hedgekit.data import clip_box, occlude
from hedgekit.data.occlusion import DIGIT_SIZE, box_mask, check_not_bool
from hedgekit.errors import InputError

__all__ = ["MAX_UPLOAD_BYTES", "MAX_UPLOAD_SIDE", "MAX_UPLOAD_FRAMES", "BLANK_CONTRAST", "Upload", "PolarityWarning",
           "check_image", "check_boxes", "box_from_drag", "image_from_bytes", "decode_upload", "looks_inverted",
           "white_on_black", "image_from_drawing", "digit_box", "full_digit_box", "covered_fraction", "model_input"]


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


# Uploads (`decode_upload`): the file and its header are checked before any pixel is decoded.
MAX_UPLOAD_BYTES = 5_000_000  # a 4096 x 4096 photo as JPEG is ~2-4 MB; a 56 x 28 PNG under 10 kB
MAX_UPLOAD_SIDE = 4096  # pixels per side; larger images are refused from their header alone
_BIT_DEPTHS = (8, 10, 12, 14, 16, 32)  # 2**k - 1 is the white of a k-bit integer image


MAX_UPLOAD_FRAMES = 100  # frames of an animated image (GIF, APNG, WebP, TIFF pages) searched for a non-blank one
BLANK_CONTRAST = 24  # gray levels: an image whose pixels span fewer is blank (a JPEG of white paper spans a few)
_ORIENTATION = 0x0112  # the EXIF tag; values 5-8 turn the stored image by 90 degrees (width and height swap)
_INTEGER_MODES = ("I", "I;16", "I;16B", "I;16L", "I;16N", "F")  # PIL's 16/32-bit integer and float gray modes


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
    size, is refused; a fully transparent one (every pixel's alpha 0) is refused as such.
    MNIST digits are white on black: ``invert=None`` inverts images whose border is mostly
    bright (dark digits on paper, `looks_inverted`), with a note; True/False force it. An
    image of exactly ``shape`` is used as is; a larger one (e.g. a photo of two digits) is
    cropped, scaled and centred per digit like MNIST (`image_from_drawing`).
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
            transparent = True  # every frame looked at so far has alpha 0 everywhere
            for frame in range(min(n_frames, MAX_UPLOAD_FRAMES)):
                im.seek(frame)
                im.load()
                shown = ImageOps.exif_transpose(im)
                gray = _gray_pixels(shown)
                if not _is_blank(gray):
                    break
                transparent = transparent and _fully_transparent(shown)
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
        why = "no digit to read (the model needs two digits side by side)"
        if transparent:
            raise InputError(f"the image is fully transparent (every pixel's alpha is 0){frames}, {why}")
        raise InputError(f"the image is blank{frames}: every pixel is gray level {gray.min():.0f} to "
                         f"{gray.max():.0f}, {why}")
    if n_frames > 1:
        skipped = f" (the first {frame} are blank)" if frame > 1 else " (the first is blank)" if frame else ""
        notes.append(f"an image of {n_frames} frames (an animated GIF, ...): frame {frame + 1} is used{skipped}")
    img, note = white_on_black(gray, invert)
    notes += [note] if note else []
    if img.shape != tuple(shape):
        img = image_from_drawing(img, w_min // DIGIT_SIZE)
    return Upload(img, tuple(notes))


def _fully_transparent(im) -> bool:
    """Whether every pixel of a decoded PIL image is transparent (alpha 0), as `_gray_pixels` reads alpha: an alpha
    band or a transparent colour, in any mode but the integer and float ones (which carry no alpha)."""
    if im.mode in _INTEGER_MODES or ("A" not in im.getbands() and "transparency" not in im.info):
        return False
    return im.convert("RGBA").getchannel("A").getextrema()[1] == 0


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
    if im.mode in _INTEGER_MODES:
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
    stays black (like an occluded digit); an empty drawing, or one with NaN or infinite
    pixels (a NaN background would give an all-black image), raises InputError.
    """
    from PIL import Image

    arr = np.asarray(drawing)
    bad = int(arr.size - np.isfinite(arr.astype(float)).sum())
    if bad:
        raise InputError(f"the drawing has {bad} NaN or infinite value{'s' * (bad > 1)}; pixels must be finite numbers "
                         "(0 = background, 255 = stroke)")
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
    """Fraction of the image's pixels hidden by the union of ``boxes`` (checked by `check_boxes`)."""
    return _hidden_fraction(check_boxes(boxes, image_shape), image_shape)


def _hidden_fraction(boxes: np.ndarray, image_shape: tuple[int, int]) -> float:
    """`covered_fraction` of boxes that `check_boxes` has passed: the mean of their union's `box_mask`."""
    if len(boxes) == 0:
        return 0.0
    return float(box_mask(torch.from_numpy(boxes)[None], *image_shape[-2:]).numpy().mean())


class PolarityWarning(UserWarning):
    """An input array looked like dark digits on a light background and was inverted (`model_input`)."""


def model_input(image, boxes, shape: tuple[int, int],
                invert: bool | None = None) -> tuple[np.ndarray, np.ndarray, float, str]:
    """(occluded image, boxes, covered fraction, note): the one path of an (image, boxes) pair into a model, shared
    by `analyse`, `retrieve` and `prototype_posterior`. ``image`` passes `check_image`; ``boxes`` pass
    `check_boxes` and black out the image through `occlude`, each once per input, and the
    covered fraction is read from the checked boxes (`covered_fraction`). Polarity as for uploads
    (`white_on_black`): with ``invert=None`` an image that `looks_inverted` (black digits on white) is inverted
    before the boxes black out its pixels, the note says so and a `PolarityWarning` is issued. True / False force
    the inversion (False: the image is used as given)."""
    import warnings

    img, note = white_on_black(check_image(image, shape).astype(float), invert)
    if note:
        warnings.warn(note, PolarityWarning, stacklevel=4)  # the caller of analyse (under its no_grad wrapper)
    boxes = check_boxes(boxes, shape)
    return (occlude(img, boxes) if len(boxes) else img), boxes, _hidden_fraction(boxes, shape), note
