"""How the URL benchmark measures a trained model (Kirchhof et al. 2023, Sec. 3, Algorithm 1, Sec. 4.5), at kit scale.

Data (kit scale of the paper's ImageNet -> CUB / CARS / SOP zero-shot transfer):

* upstream = the 70 seen classes of 2-digit MNIST (`load_ndigit(2, "train")`, evaluated on "test_seen");
* downstream, zero-shot = the 30 unseen 2-digit classes ("test_unseen") and a cross-domain set,
  2-item Fashion-MNIST (`fashion_pairs`): two Fashion-MNIST test items side by side, class = the pair of
  item classes (100 classes), built like N-digit MNIST so the same 28x56 backbone reads it.

Metrics (`evaluate`): R@1 and R-AUROC (`hedgekit.evaluation.metrics.recall_at_1`, `r_auroc`) on every set;
R@1 uses cosine similarity like the official code (``recall_at_1(..., metric="cosine")``); upstream
classification accuracy for heads that output logits; with the crops of `crop_images` (every image cropped, a
kept area drawn per image), the cropped-image rate (`crop_uncertainty_rate`) and the official code's second
cropping metric ``rcorr_crop_unc``, Spearman's rho between -u(crop) and the share of the image kept
(`crop_uncertainty_correlation`).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from hedgekit.data.fashion import load_fashion
from hedgekit.errors import InputError
from hedgekit.evaluation.metrics import crop_uncertainty_correlation, crop_uncertainty_rate, r_auroc, recall_at_1

__all__ = ["CROP_AREA", "crop_boxes", "kept_fraction", "crop_images", "fashion_pairs", "evaluate_set", "evaluate"]

# The paper never says how its crop is made (Sec. 4.5, App. C.3: "a cropped version of an image"). Ours is
# an ImageNet-style random resized crop at kit scale: keep a random window of 25%-50% of the image's area
# with the image's own aspect ratio (so 14x28 to 20x40 pixels of a 28x56 two-digit image: each digit loses
# strokes, none disappears), at a uniform position, resized back to the full size with bilinear
# interpolation. Zooming in hides information, so a good u(x) should rise. The area is drawn per image, so the crop
# correlation (`crop_uncertainty_correlation`) has sizes to rank; the official code (github.com/mkirchhof/url,
# validate.py) draws per image too: a centre crop keeping a side fraction ~ U(0.1, 0.75) of the shorter side (an
# area of 1% to 56%), a wider range than ours, which keeps both digits of a kit image readable.
CROP_AREA = (0.25, 0.5)


def crop_boxes(n: int, height: int, width: int, rng: np.random.Generator, area=CROP_AREA) -> np.ndarray:
    """(n, 4) float boxes (top, left, h, w) in pixels: area fraction ~ U(area), aspect ratio of the image,
    position uniform inside the image (`CROP_AREA`)."""
    lo, hi = area
    if not 0 < lo <= hi <= 1:
        raise InputError(f"area must be (lo, hi) with 0 < lo <= hi <= 1; got {area}")
    side = np.sqrt(rng.uniform(lo, hi, n))  # the same fraction of each side keeps the aspect ratio
    h, w = side * height, side * width
    top, left = rng.uniform(0, 1, n) * (height - h), rng.uniform(0, 1, n) * (width - w)
    return np.stack([top, left, h, w], axis=1)


def kept_fraction(boxes, height: int, width: int) -> np.ndarray:
    """(n,) share of the image's area each box (top, left, h, w) of `crop_boxes` keeps: h w / (height width), the
    crop fraction `crop_uncertainty_correlation` ranks."""
    b = np.asarray(boxes, dtype=float)
    if b.ndim != 2 or b.shape[1] != 4:
        raise InputError(f"boxes must be (n, 4) (top, left, h, w); got shape {b.shape}")
    return b[:, 2] * b[:, 3] / (height * width)


def crop_images(x: torch.Tensor, boxes) -> torch.Tensor:
    """Crop the window ``boxes[i]`` = (top, left, h, w) (pixels, may be fractional) of every image of
    ``x`` (B, C, H, W) and resize it back to (H, W) with bilinear interpolation (`crop_boxes`).

    Implemented as one affine resampling (``affine_grid`` + ``grid_sample``, pixel-centre convention): the
    output pixel centres are spread evenly over the window, so a box of the whole image returns the image.
    """
    if x.ndim != 4:
        raise InputError(f"x must be (B, C, H, W); got shape {tuple(x.shape)}")
    b = torch.as_tensor(np.asarray(boxes), dtype=x.dtype)
    if b.shape != (len(x), 4):
        raise InputError(f"boxes must be ({len(x)}, 4) (top, left, h, w); got {tuple(b.shape)}")
    height, width = x.shape[-2:]
    top, left, h, w = b.unbind(1)
    if (h <= 0).any() or (w <= 0).any() or (top < 0).any() or (left < 0).any() \
            or (top + h > height + 1e-6).any() or (left + w > width + 1e-6).any():
        raise InputError("crop boxes must have positive size and lie inside the image")
    theta = torch.zeros(len(x), 2, 3, dtype=x.dtype)
    theta[:, 0, 0], theta[:, 1, 1] = w / width, h / height
    theta[:, 0, 2] = (2 * left + w) / width - 1  # window centre in [-1, 1] coordinates
    theta[:, 1, 2] = (2 * top + h) / height - 1
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def fashion_pairs(n_per_class: int, seed: int = 0, fashion=None) -> tuple[torch.Tensor, torch.Tensor]:
    """2-item Fashion-MNIST: (x (M, 1, 28, 56) in [0, 1], y (M,) = 10 * left item class + right item class).

    ``n_per_class`` images for each of the 100 ordered class pairs, items drawn uniformly with replacement
    from the Fashion-MNIST *test* split (``fashion``, default `load_fashion("test")`), deterministic in ``seed``.
    """
    if n_per_class < 1:
        raise InputError(f"n_per_class must be >= 1; got {n_per_class}")
    if fashion is None:
        fashion = load_fashion("test")
    rng = np.random.default_rng([seed, 7031])
    labels = np.repeat(np.arange(100), n_per_class)
    by_class = [np.flatnonzero(fashion.labels == c) for c in range(10)]
    if any(len(m) == 0 for m in by_class):
        raise InputError("the Fashion-MNIST set must hold every one of its 10 classes")
    picks = [[m[rng.integers(len(m))] for m in (by_class[lab // 10], by_class[lab % 10])] for lab in labels]
    picks = np.asarray(picks)
    images = np.concatenate([fashion.images[picks[:, 0]], fashion.images[picks[:, 1]]], axis=2)
    return torch.from_numpy(images).unsqueeze(1).float().div_(255.0), torch.from_numpy(labels)


def _safe_r_auroc(u, correct) -> float:
    try:
        return r_auroc(u, correct)
    except InputError:  # all R@1 correct (or all wrong), or a non-finite u(x): undefined
        return math.nan


def _check_finite_outputs(out: dict, name: str) -> None:
    """FloatingPointError if the model's embedding or u(x) holds NaN or inf: the model diverged;
    its metrics would be undefined, not a result."""
    for key, what in (("embedding", "the embedding"), ("uncertainty", "u(x)")):
        values = np.asarray(out[key], dtype=float)
        bad = int((~np.isfinite(values.reshape(len(values), -1))).any(1).sum())
        if bad:
            raise FloatingPointError(f"{what} is NaN or inf for {bad} of {len(values)} images of the {name}")


def evaluate_set(predict, x: torch.Tensor, y, crop_seed: int | None = None, name: str = "evaluation set") -> dict:
    """R@1 (cosine), R-AUROC and, with ``crop_seed``, the cropped-image rate and crop correlation of one set.

    ``predict(x) -> {"embedding", "uncertainty", ["logits"]}`` (`hedgekit.training.upstream.predict`).
    Returns ``{"r1", "rauroc"[, "crop", "crop_corr"], "u_mean"}``: every image is cropped once (`crop_boxes`,
    seeded by ``crop_seed``); ``crop`` is the share whose crop gets a higher u (`crop_uncertainty_rate`) and
    ``crop_corr`` Spearman's rho between -u of the crops and their `kept_fraction` (`crop_uncertainty_correlation`:
    NaN when u of the crops is constant). An embedding or u(x) with NaN or inf (on the images or
    their crops) raises FloatingPointError naming the set (``name``): the model diverged.
    """
    out = predict(x)
    _check_finite_outputs(out, name)
    r1, correct = recall_at_1(out["embedding"], np.asarray(y), metric="cosine")
    res = {"r1": r1, "rauroc": _safe_r_auroc(out["uncertainty"], correct),
           "u_mean": float(np.mean(out["uncertainty"]))}
    if crop_seed is not None:
        rng = np.random.default_rng(crop_seed)
        boxes = crop_boxes(len(x), x.shape[-2], x.shape[-1], rng)
        cropped = predict(crop_images(x, boxes))
        _check_finite_outputs(cropped, f"{name} (cropped)")
        res["crop"] = crop_uncertainty_rate(out["uncertainty"], cropped["uncertainty"])
        res["crop_corr"] = crop_uncertainty_correlation(cropped["uncertainty"],
                                                        kept_fraction(boxes, x.shape[-2], x.shape[-1]))
    res["_out"] = out
    return res


def evaluate(predict, sets: dict, upstream_labels_to_index: dict | None = None, crop_seed: int = 0) -> dict:
    """Every benchmark metric of one trained model.

    ``sets``: ``{"up": (x, y), "unseen": (x, y), "fashion": (x, y)}`` (`hedgekit.papers.url.benchmark.eval_sets`).
    ``upstream_labels_to_index``: class -> logit index, for the upstream accuracy of heads with logits.
    Returns flat metrics: ``up_acc, up_r1, up_rauroc, up_crop, up_crop_corr, r1, rauroc, crop, crop_corr`` (unseen
    digits), ``fashion_r1, fashion_rauroc, fashion_crop, fashion_crop_corr``, and ``down_r1, down_rauroc`` (mean of
    the two downstream sets, like the paper's average over its downstream datasets). A model whose embedding or u(x) is NaN or inf on
    any set raises FloatingPointError (`evaluate_set`).
    """
    up = evaluate_set(predict, *sets["up"], crop_seed=crop_seed, name="upstream test set")
    unseen = evaluate_set(predict, *sets["unseen"], crop_seed=crop_seed + 1, name="unseen-digit set")
    fashion = evaluate_set(predict, *sets["fashion"], crop_seed=crop_seed + 2, name="Fashion-pair set")
    acc = math.nan
    logits = up["_out"].get("logits")
    if logits is not None and upstream_labels_to_index is not None:
        target = np.array([upstream_labels_to_index[int(c)] for c in np.asarray(sets["up"][1])])
        acc = float(np.mean(logits.argmax(1) == target))
    return {"up_acc": acc, "up_r1": up["r1"], "up_rauroc": up["rauroc"], "up_crop": up["crop"],
            "up_crop_corr": up["crop_corr"], "r1": unseen["r1"], "rauroc": unseen["rauroc"], "crop": unseen["crop"],
            "crop_corr": unseen["crop_corr"], "fashion_r1": fashion["r1"], "fashion_rauroc": fashion["rauroc"],
            "fashion_crop": fashion["crop"], "fashion_crop_corr": fashion["crop_corr"],
            "down_r1": (unseen["r1"] + fashion["r1"]) / 2, "down_rauroc": (unseen["rauroc"] + fashion["rauroc"]) / 2}
