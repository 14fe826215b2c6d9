"""The two augmented views of the unsupervised URL heads (InfoNCE and MCInfoNCE, Kirchhof et al. 2023, App. B.2-B.3),
at kit scale and in plain torch.

The paper trains them SimCLR-style on two random views of every ImageNet image. Its official code
(github.com/mkirchhof/url, ``timm/data/ssl_dataloader.py``, ``ImagenetTransform``) draws each view as a random
resized crop of 8%-100% of the area, colour jitter, random greyscale, Gaussian blur and a horizontal flip. At kit
scale (one-channel 28 x 56 two-digit images whose class is the ordered pair of digits) colour means nothing and a
flip or an 8% crop changes the class, so a view here is (`TwoViews`):

* a random resized crop: a window of ``crop_area`` of the image's area (uniform), its aspect ratio the image's
  times a factor log-uniform in ``1/aspect..aspect``, at a uniform position, resized back to the full size;
* a small rotation of the window about its centre, uniform in ``-max_degrees..max_degrees``, and a horizontal shear
  x' = x + s y (pixels), s uniform in ``-max_shear..max_shear``;
* with probability ``stroke_p``, thicker or thinner strokes (a 3 x 3 grey dilation or erosion, equally likely):
  the kit's stand-in for the paper's photometric jitter, a change of appearance that keeps the class;
* with probability ``box_p``, one occlusion box (random erasing) of ``box_area`` of the image's area (uniform),
  aspect ratio log-uniform in 1/2..2, at a uniform position, set to 0 (the background).

Crop, rotation and shear are one affine resampling of the batch (``affine_grid`` + ``grid_sample``, bilinear, zeros
outside the image); every random number comes from the ``rng`` the trainer hands over, so a seed fixes the views.
The defaults are the best views of a search scored on 2000 held-out training images, never on the test set
(every setting tried, with its numbers: docs/recipes.md, "URL: uncertainties that learn").
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from hedgekit.errors import InputError
from hedgekit.training.batches import to_float

__all__ = ["TwoViews", "view_thetas"]


@dataclass(frozen=True)
class TwoViews:
    """One random view ``fn(x, rng) -> x`` per call (the trainer calls it once per view): module docstring.

    ``x`` is (B, C, H, W), uint8 0..255 or float in [0, 1]; the view is float32 in [0, 1] of the same shape.
    """

    crop_area: tuple[float, float] = (0.6, 1.0)
    aspect: float = 1.25
    max_degrees: float = 15.0
    max_shear: float = 0.3
    stroke_p: float = 0.5
    box_p: float = 0.5
    box_area: tuple[float, float] = (0.05, 0.15)

    def __post_init__(self) -> None:
        for name in ("crop_area", "box_area"):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi <= 1:
                raise InputError(f"{name} must be (lo, hi) with 0 < lo <= hi <= 1; got {getattr(self, name)}")
        if not (self.aspect >= 1 and 0 <= self.max_degrees <= 180 and 0 <= self.max_shear < 1
                and 0 <= self.stroke_p <= 1 and 0 <= self.box_p <= 1):
            raise InputError(f"need aspect >= 1, max_degrees in [0, 180], max_shear in [0, 1), stroke_p and box_p "
                             f"in [0, 1]; got {self}")

    def __call__(self, x: Tensor, rng: np.random.Generator) -> Tensor:
        if x.ndim != 4:
            raise InputError(f"views need a batch (B, C, H, W); got shape {tuple(x.shape)}")
        b, _, h, w = x.shape
        theta = view_thetas(b, h, w, rng, self.crop_area, self.aspect, self.max_degrees)
        shear = np.zeros((b, 2, 2))
        shear[:, 0, 0] = shear[:, 1, 1] = 1
        shear[:, 0, 1] = rng.uniform(-self.max_shear, self.max_shear, b) * h / w  # pixels -> [-1, 1] units
        theta[:, :, :2] = theta[:, :, :2] @ shear
        grid = F.affine_grid(torch.as_tensor(theta, dtype=torch.float32, device=x.device), [b, x.shape[1], h, w],
                             align_corners=False)
        out = F.grid_sample(to_float(x), grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        coin = torch.as_tensor(rng.uniform(0, 1, b), dtype=torch.float32, device=x.device)[:, None, None, None]
        thick, thin = F.max_pool2d(out, 3, 1, 1), -F.max_pool2d(-out, 3, 1, 1)
        out = torch.where(coin < self.stroke_p / 2, thick, torch.where(coin < self.stroke_p, thin, out))
        return out * ~self._boxes(b, h, w, rng, x.device)[:, None]

    def _boxes(self, b: int, h: int, w: int, rng: np.random.Generator, device) -> Tensor:
        """(B, H, W) bool: the pixels of each image's occlusion box (none where the box_p coin says no)."""
        area = rng.uniform(*self.box_area, b) * h * w
        ratio = np.exp(rng.uniform(-math.log(2), math.log(2), b))
        bh, bw = np.minimum(np.sqrt(area / ratio), h), np.minimum(np.sqrt(area * ratio), w)
        top, left = rng.uniform(0, 1, b) * (h - bh), rng.uniform(0, 1, b) * (w - bw)
        on = rng.uniform(0, 1, b) < self.box_p
        rows = torch.arange(h, device=device)[None, :, None] + 0.5
        cols = torch.arange(w, device=device)[None, None, :] + 0.5

        def t(v):
            return torch.as_tensor(v, dtype=torch.float32, device=device)[:, None, None]

        return ((rows >= t(top)) & (rows < t(top + bh)) & (cols >= t(left)) & (cols < t(left + bw))
                & torch.as_tensor(on, device=device)[:, None, None])


def view_thetas(n: int, height: int, width: int, rng: np.random.Generator, crop_area=(0.6, 1.0),
                aspect: float = 1.25, max_degrees: float = 15.0) -> np.ndarray:
    """(n, 2, 3) ``affine_grid`` matrices of `TwoViews`' crop-and-rotate: output coordinates (normalised to
    [-1, 1]) -> input coordinates = centre + R(angle) diag(w / width, h / height) out, with the rotation taken in
    pixel units (so that a non-square image turns rigidly) and the window (h, w) inside the image."""
    area = rng.uniform(*crop_area, n)
    ratio = np.exp(rng.uniform(-math.log(aspect), math.log(aspect), n))  # window's w/h over the image's
    sw, sh = np.minimum(np.sqrt(area * ratio), 1.0), np.minimum(np.sqrt(area / ratio), 1.0)  # fractions of a side
    cx, cy = rng.uniform(-1, 1, n) * (1 - sw), rng.uniform(-1, 1, n) * (1 - sh)  # centre in [-1, 1] coordinates
    angle = np.deg2rad(rng.uniform(-max_degrees, max_degrees, n))
    c, s = np.cos(angle), np.sin(angle)
    theta = np.empty((n, 2, 3))
    theta[:, 0, 0], theta[:, 0, 1] = c * sw, -s * sh * height / width
    theta[:, 1, 0], theta[:, 1, 1] = s * sw * width / height, c * sh
    theta[:, 0, 2], theta[:, 1, 2] = cx, cy
    return theta
