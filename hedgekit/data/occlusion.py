"""Random black occlusion of digits (HIB paper, Oh et al. 2019, Appendix A).

"A random-sized rectangular patch is identified from a random location of each
28 x 28 digit image. The patch side lengths and heights are sampled L ~ Unif(0, 28),
and then the top left patch corner coordinates are sampled so that the occluded
rectangle fits within the image." Training flips an independent coin per digit
(occlusion chance 20%); the corrupt test twin occludes every digit.

A box is an int array `(top, left, height, width)` in pixel coordinates of the image
it applies to; it covers rows top..top+height-1 and columns left..left+width-1.
A box with zero height or width covers nothing.

Box sides (`SIDES`, the ``sides`` argument): the paper's L ~ Unif(0, 28) has to be
discretised to whole pixels. "inclusive" (the default) draws each side uniformly from
{0, ..., 28}, so an "occluded" digit gets a zero-area box with probability
1 - (28/29)^2 ~ 6.8% and, at the training chance 0.2, a digit actually loses pixels
with probability 0.2 * (28/29)^2 ~ 18.6%. That a zero side is possible is the papers'
scheme: SPE App. E, which applies "the scheme used in Oh et al. (2019)", states
"if L_x = 0 or L_y = 0, the image was left unoccluded". The upper end 28 (a box may
cover the whole side) is our reading of the closed interval. "positive" draws from
{1, ..., 28}: every occluded digit loses at least one pixel, so the occluded fraction
is exactly the occlusion chance. The shipped checkpoints and cached datasets were
made with "inclusive".
"""
from __future__ import annotations

import reprlib

import numpy as np
import torch

from hedgekit.errors import InputError

DIGIT_SIZE = 28  # MNIST digits are 28 x 28 pixels
# Shortest box side each `sides` option draws (the longest is 28): the papers' {0..28} (default) or {1..28}.
_SHORTEST_SIDE = {"inclusive": 0, "positive": 1}
SIDES = tuple(_SHORTEST_SIDE)


def sample_digit_boxes(
    rng: np.random.Generator, n_images: int, n_digits: int, p_occlude: float, sides: str = "inclusive"
) -> np.ndarray:
    """Occlusion boxes for `n_images` images of `n_digits` side-by-side 28x28 digits.

    Returns an int64 array (n_images, n_digits, 4) in image coordinates: digit j spans
    columns 28j..28j+27. Each digit is occluded independently with probability
    `p_occlude`; its height and width are then independent uniform integers in
    {0, ..., 28} for ``sides="inclusive"`` (the default: HIB App. A's L ~ Unif(0, 28)
    with SPE App. E's zero sides, so an occluded digit still gets an empty box with
    probability 1 - (28/29)^2 ~ 6.8%) or in {1, ..., 28} for ``sides="positive"`` (every
    occluded digit loses pixels); see the module docstring. Its top-left corner is
    uniform among the positions that keep the box inside the digit's cell. Digits that
    are not occluded get the empty box (0, 28j, 0, 0). `p_occlude=1.0` gives the corrupt
    twin. For "inclusive" the random stream is the one every cached dataset was built with.
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}.")
    if not 0.0 <= p_occlude <= 1.0:
        raise InputError(f"p_occlude must be in [0, 1], got {p_occlude}.")
    if n_images < 0 or n_digits < 1:
        raise InputError(f"need n_images >= 0 and n_digits >= 1, got {n_images} and {n_digits}.")
    shortest = _shortest_side(sides)
    shape = (n_images, n_digits)
    occluded = rng.random(shape) < p_occlude
    height = rng.integers(shortest, DIGIT_SIZE + 1, shape) * occluded
    width = rng.integers(shortest, DIGIT_SIZE + 1, shape) * occluded
    top = rng.integers(0, DIGIT_SIZE + 1 - height) * occluded  # high is exclusive
    left = rng.integers(0, DIGIT_SIZE + 1 - width) * occluded + DIGIT_SIZE * np.arange(n_digits)
    return np.stack([top, left, height, width], axis=-1).astype(np.int64)


def _shortest_side(sides) -> int:
    """The smallest box side that ``sides`` (one of `SIDES`) draws: 0 or 1; InputError for anything else."""
    if not isinstance(sides, str) or sides not in SIDES:
        raise InputError(f"sides must be one of {SIDES} (box sides uniform on {{0..28}} or {{1..28}}), got {sides!r}.")
    return _SHORTEST_SIDE[sides]


def check_not_bool(boxes, what: str = "boxes") -> None:
    """InputError if ``boxes`` (an array, tensor or nested list) holds booleans: True would silently count as a
    1-pixel side (``[True] * 4`` as the box (1, 1, 1, 1)); a box is four pixel counts."""
    dtype = getattr(boxes, "dtype", None)
    if dtype is not None:
        bad = dtype == torch.bool if isinstance(boxes, torch.Tensor) else np.dtype(dtype) == np.bool_
    else:
        def has_bool(v) -> bool:
            return isinstance(v, (bool, np.bool_)) or (isinstance(v, (list, tuple)) and any(has_bool(u) for u in v))

        bad = has_bool(boxes)
    if bad:
        raise InputError(f"{what} must be whole pixel numbers (top, left, height, width), not True / False; "
                         f"got {reprlib.repr(boxes)}")


def occlude(images, boxes):
    """Black out (fill with 0) `boxes` in `images`; returns a new array of the same type.

    images: (H, W) or (B, H, W), a numpy array or torch tensor of any dtype (the
    result keeps type, dtype and device; the input is never modified).
    boxes: (n, 4) for one image or (B, n, 4) for a batch, integer
    (top, left, height, width); every box must lie inside the image, zero-area
    boxes are allowed and change nothing.
    """
    is_tensor = isinstance(images, torch.Tensor)
    if not is_tensor and not isinstance(images, np.ndarray):
        raise InputError(f"images must be a numpy array or torch tensor, got {type(images).__name__}.")
    if images.ndim not in (2, 3):
        raise InputError(f"images must be (H, W) or (B, H, W), got shape {tuple(images.shape)}.")
    if (images.is_floating_point() if is_tensor else np.issubdtype(images.dtype, np.floating)):
        if bool(torch.isnan(images).any() if is_tensor else np.isnan(images).any()):
            raise InputError("images contain NaN.")
    check_not_bool(boxes)
    boxes = np.asarray(boxes.cpu() if isinstance(boxes, torch.Tensor) else boxes)
    if not np.issubdtype(boxes.dtype, np.integer):
        raise InputError(f"boxes must be integers (top, left, height, width), got dtype {boxes.dtype}.")
    if boxes.ndim != images.ndim or boxes.shape[-1] != 4 or (
        images.ndim == 3 and boxes.shape[0] != images.shape[0]
    ):
        want = "(n, 4)" if images.ndim == 2 else f"({images.shape[0]}, n, 4)"
        raise InputError(f"boxes for images of shape {tuple(images.shape)} must be {want}, got {boxes.shape}.")
    height, width = images.shape[-2:]
    top, left, h, w = np.moveaxis(boxes, -1, 0)
    if (h < 0).any() or (w < 0).any():
        raise InputError("box height and width must be >= 0 (use clip_box for dragged rectangles).")
    if (top < 0).any() or (left < 0).any() or (top + h > height).any() or (left + w > width).any():
        raise InputError(f"boxes must lie fully inside the {height}x{width} image (use clip_box).")

    mask = box_mask(torch.from_numpy(boxes if boxes.ndim == 3 else boxes[None]), height, width)
    mask = mask.reshape(images.shape)
    if is_tensor:
        return images.masked_fill(mask.to(images.device), 0)
    out = images.copy()
    out[mask.numpy()] = 0
    return out


def box_mask(boxes: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Boolean (B, H, W) mask of the pixels covered by any of the (B, n, 4) integer boxes, on the boxes' device.

    Vectorised over the batch: a box covers the outer product of its row test (B, H) and column test (B, W);
    the n box slots (one per digit, 1-3) are combined with a loop over the slots. The products run in uint8,
    about 3x faster on a CPU than boolean broadcasting (docs/speed.md).
    """
    rows = torch.arange(height, device=boxes.device)
    cols = torch.arange(width, device=boxes.device)
    top, left, h, w = (boxes[..., i, None] for i in range(4))  # each (B, n, 1)
    in_rows = ((rows >= top) & (rows < top + h)).to(torch.uint8)  # (B, n, H)
    in_cols = ((cols >= left) & (cols < left + w)).to(torch.uint8)  # (B, n, W)
    mask = in_rows[:, 0, :, None] * in_cols[:, 0, None, :]
    for k in range(1, boxes.shape[1]):
        mask |= in_rows[:, k, :, None] * in_cols[:, k, None, :]
    return mask.bool()


def clip_box(box, image_shape) -> np.ndarray | None:
    """Clip a user-drawn rectangle (top, left, height, width) to an image; None if empty.

    For mouse-drawn rectangles: the box may lie partly outside the image, and a
    negative height/width means the mouse was dragged up/left from (top, left).
    Coordinates may be floats; edges are rounded to the nearest pixel boundary.
    `image_shape` is (H, W) or any shape ending in H, W. Returns an int64 box that
    `occlude` accepts, or None when nothing of the image is covered.
    """
    check_not_bool(box, "box")
    box = np.asarray(box, dtype=float)
    if box.shape != (4,) or not np.isfinite(box).all():
        raise InputError(f"box must be 4 finite numbers (top, left, height, width), got {box!r}.")
    height, width = image_shape[-2:]
    top, left, h, w = box
    y0, y1 = sorted((top, top + h))
    x0, x1 = sorted((left, left + w))
    y0, y1 = np.clip(np.rint([y0, y1]), 0, height).astype(np.int64)
    x0, x1 = np.clip(np.rint([x0, x1]), 0, width).astype(np.int64)
    if y1 <= y0 or x1 <= x0:
        return None
    return np.array([y0, x0, y1 - y0, x1 - x0], dtype=np.int64)


class RandomOcclusion:
    """App. A's training occlusion, re-drawn for every batch: ``fn(x, rng) -> x``.

    ``x`` is a batch (B, 1, 28, 28N) of uint8 or float pixels on any device; each digit is occluded
    independently with probability ``p_occlude`` using `sample_digit_boxes` with box ``sides``
    ("inclusive", the papers' and the default, or "positive"; see `SIDES`). The boxes are drawn on the host
    from ``rng`` (the random stream every shipped and cached checkpoint was trained with: a few microseconds
    for 256 images, and no wait for the device) and applied as a `box_mask` on ``x``'s device. The result
    keeps ``x``'s dtype, so the trainers occlude uint8 batches before their conversion to float
    (`hedgekit.training.batches`). Used by `hedgekit.training.fit.fit` so every step sees freshly occluded
    digits.
    """

    def __init__(self, p_occlude: float = 0.2, sides: str = "inclusive"):
        if not 0.0 <= p_occlude <= 1.0:
            raise InputError(f"p_occlude must be in [0, 1], got {p_occlude}.")
        _shortest_side(sides)
        self.p_occlude, self.sides = p_occlude, sides

    def __repr__(self) -> str:
        return f"RandomOcclusion(p_occlude={self.p_occlude}, sides={self.sides!r})"

    def __call__(self, x: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
        if x.ndim != 4 or x.shape[1] != 1 or x.shape[-2] != DIGIT_SIZE or x.shape[-1] % DIGIT_SIZE:
            raise InputError(f"occlusion needs one-channel 28 x 28N digit batches (B, 1, 28, 28N); "
                             f"got {tuple(x.shape)}")
        boxes = sample_digit_boxes(rng, x.shape[0], x.shape[-1] // DIGIT_SIZE, self.p_occlude, self.sides)
        mask = box_mask(torch.from_numpy(boxes).to(x.device, non_blocking=True), x.shape[-2], x.shape[-1])
        return x * (~mask).to(x.dtype)[:, None]  # = masked_fill(mask, 0) for pixels >= 0, ~5x faster on a CPU


def random_occlusion(p_occlude: float = 0.2, sides: str = "inclusive") -> RandomOcclusion:
    """`RandomOcclusion` (``p_occlude``, ``sides``): the augmentation every trainer re-draws at every step."""
    return RandomOcclusion(p_occlude, sides)
