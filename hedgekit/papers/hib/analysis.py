"""Analyses of the learned embedding space behind HIB's qualitative figures.

Plain numpy in, plain numpy out, so every number a figure shows can be tested:

* `digit_at`: the digit of a class at a position (Figure 10/11 colouring).
* `axis_alignment`: how axis-aligned the classes sharing a digit lie (Figure 10,
  App. D: "classes that share a tens' digit vary by x-coordinate, and classes that
  share a ones digit vary by y-coordinate").
* `number_line`, `number_line_stats`, `random_adjacency`: the 1D ordering of
  Figure 11 and the Appendix D statistics (adjacency score, mean run length),
  with the value a random ordering would get.
* `component_spread`, `gaussian_scale`, `size_stats`, `axis_ratio`: how far a
  mixture's components lie apart (Figure 7), how large and how elongated an
  embedding is (Figures 3, 4, 8, 12).
* `pick_fig4_examples`, `pick_ambiguous`: the test images Figure 4 ("03", "52")
  and Figure 1b ("17" vs "47") show.
* `occlusion_walkthrough`, `occlusion_statistics`: App. A's occlusion procedure,
  step by step, and its measured vs expected rates (notebook 01).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hedgekit.evaluation import metrics as M
from hedgekit.data.occlusion import DIGIT_SIZE, occlude, sample_digit_boxes
from hedgekit.errors import InputError

__all__ = ["digit_at", "axis_alignment", "RANDOM_ALIGNMENT", "number_line", "number_line_stats",
           "random_adjacency", "component_spread", "gaussian_scale", "pick_fig4_examples", "pick_ambiguous",
           "OcclusionWalkthrough", "occlusion_walkthrough", "nearest_classes", "occlusion_statistics",
           "size_stats", "axis_ratio"]

# E[max(|cos t|, |sin t|)] for a uniformly random direction t: (4/pi) * sin(pi/4) = 2 sqrt(2) / pi.
RANDOM_ALIGNMENT = 2.0 * math.sqrt(2.0) / math.pi


def digit_at(class_ids, position: int, n_digits: int = 2) -> np.ndarray:
    """(K,) digit at ``position`` of each class, 0 = leftmost (tens for N = 2): digit_at([47], 0) = [4]."""
    ids = np.asarray(class_ids, dtype=np.int64)
    if not 0 <= position < n_digits:
        raise InputError(f"position must be in 0..{n_digits - 1}; got {position}")
    if ids.size and (ids.min() < 0 or ids.max() >= 10**n_digits):
        raise InputError(f"class ids must lie in [0, {10**n_digits}) for n_digits={n_digits}")
    return ids // 10 ** (n_digits - 1 - position) % 10


def axis_alignment(centroids, class_ids, position: int, n_digits: int = 2) -> dict:
    """How axis-aligned the groups of classes sharing the digit at ``position`` lie (2D centroids).

    For every digit value v, the classes with v at ``position`` form a group; its
    principal direction u (first PCA axis of the group's centroids) is compared with
    the coordinate axes: alignment = max(|u_x|, |u_y|), 1 for a group spread along an
    axis, 1/sqrt(2) for one along a diagonal; `RANDOM_ALIGNMENT` (0.900) for random
    directions. Returns {"alignment": mean over groups, "x_fraction": share of groups
    spread mostly along x, "per_group": (10,) alignments (NaN for groups of < 2 classes)}.
    """
    c = np.asarray(centroids, dtype=float)
    if c.ndim != 2 or c.shape[1] != 2:
        raise InputError(f"centroids must be (K, 2); got {c.shape}")
    d = digit_at(class_ids, position, n_digits)
    if len(d) != len(c):
        raise InputError(f"{len(c)} centroids but {len(d)} class ids")
    per, along_x = np.full(10, np.nan), []
    for v in range(10):
        g = c[d == v]
        if len(g) < 2:
            continue
        _, _, vt = np.linalg.svd(g - g.mean(0), full_matrices=False)
        u = vt[0]
        per[v] = float(np.abs(u).max())
        along_x.append(abs(u[0]) >= abs(u[1]))
    return {"alignment": float(np.nanmean(per)) if np.isfinite(per).any() else math.nan,
            "x_fraction": float(np.mean(along_x)) if along_x else math.nan, "per_group": per}


# ------------------------------------------------------------------ number line
@dataclass(frozen=True)
class NumberLine:
    """Classes sorted by their 1D centroid; ``shared[t]``: classes t and t+1 share a digit."""

    order: np.ndarray  # (K,) class ids, left to right
    positions: np.ndarray  # (K,) their 1D centroids
    shared: np.ndarray  # (K-1,) bool
    labels: list


def number_line(centroids_1d, class_ids, n_digits: int = 2) -> NumberLine:
    """The Figure 11 ordering (stable sort of the 1D centroids, as `hedgekit.evaluation.metrics.adjacency_score`)."""
    cent = np.asarray(centroids_1d, dtype=float).reshape(-1)
    ids = np.asarray(class_ids, dtype=np.int64)
    if len(cent) != len(ids):
        raise InputError(f"{len(cent)} centroids but {len(ids)} class ids")
    idx = np.argsort(cent, kind="stable")
    order = ids[idx]
    digits = np.stack([digit_at(order, p, n_digits) for p in range(n_digits)], 1)
    shared = (digits[:-1] == digits[1:]).any(1)
    return NumberLine(order, cent[idx], shared, [f"{c:0{n_digits}d}" for c in order])


def number_line_stats(centroids_1d, class_ids, n_digits: int = 2) -> dict:
    """Appendix D: adjacency score (max K - 1) and mean run length, via `hedgekit.evaluation.metrics`."""
    return {"adjacency": M.adjacency_score(centroids_1d, class_ids, n_digits),
            "mean_run": M.mean_run_length(centroids_1d, class_ids, n_digits),
            "n_runs": int(len(M.digit_run_lengths(centroids_1d, class_ids, n_digits)))}


def random_adjacency(class_ids, n_digits: int = 2) -> float:
    """Expected adjacency score of a uniformly random ordering of ``class_ids``.

    Every adjacent pair of a random permutation is a uniformly random pair of distinct
    classes, so the expectation is (K - 1) x (share of class pairs with a common digit).
    For the 100 classes of 2-digit MNIST: 99 x 18/99 = 18.
    """
    ids = np.asarray(class_ids, dtype=np.int64)
    k = len(ids)
    if k < 2:
        raise InputError("need at least 2 classes")
    digits = np.stack([digit_at(ids, p, n_digits) for p in range(n_digits)], 1)
    share = (digits[:, None, :] == digits[None, :, :]).any(-1)
    n_share = (share.sum() - k) / 2  # distinct unordered pairs
    return float((k - 1) * n_share / (k * (k - 1) / 2))


# ------------------------------------------------------------------ sizes
def component_spread(means) -> np.ndarray:
    """(B,) mean Euclidean distance between the component means of each mixture (0 for C = 1).

    ``means`` (B, C, D). Figure 7's observation: corrupt inputs spread their components further.
    """
    m = np.asarray(means, dtype=float)
    if m.ndim != 3:
        raise InputError(f"means must be (B, C, D); got {m.shape}")
    c = m.shape[1]
    if c < 2:
        return np.zeros(m.shape[0])
    d = np.linalg.norm(m[:, :, None, :] - m[:, None, :, :], axis=-1)
    iu = np.triu_indices(c, 1)
    return d[:, iu[0], iu[1]].mean(1)


def gaussian_scale(total_var) -> np.ndarray:
    """(B,) geometric mean of the per-axis standard deviations, (prod_d sigma_d)^(1/D).

    The radius of the circle (sphere) with the same area (volume) as the 1-sigma
    ellipse (ellipsoid): one number per embedding for "larger ellipses".
    """
    v = np.asarray(total_var, dtype=float)
    if v.ndim != 2:
        raise InputError(f"total_var must be (B, D); got {v.shape}")
    return np.exp(0.5 * np.log(np.clip(v, 1e-30, None)).mean(1))


# ------------------------------------------------------------------ examples
def _digit_cover(boxes: np.ndarray) -> np.ndarray:
    """(M, N) fraction of each digit's 28 x 28 cell hidden by its box."""
    return boxes[..., 2] * boxes[..., 3] / float(DIGIT_SIZE * DIGIT_SIZE)


def pick_fig4_examples(boxes, eta_clean, eta_corrupt) -> list[dict]:
    """Three test images in the spirit of Figure 4: a confident clean one ("03"), a corrupt one
    with one digit mostly hidden ("52"), and the corrupt one with the highest eta.

    Args:
        boxes: (M, N, 4) occlusion boxes of the corrupt twins.
        eta_clean, eta_corrupt: (M,) eta of the clean images and of their corrupt twins.
    Returns:
        [{"index", "corrupt", "why"}] (indices may repeat if the test set is tiny).
    """
    boxes = np.asarray(boxes)
    ec, eo = np.asarray(eta_clean, dtype=float), np.asarray(eta_corrupt, dtype=float)
    cover = _digit_cover(boxes)
    out = [{"index": int(np.argmin(ec)), "corrupt": False, "why": "clean, lowest η"}]
    one_hidden = (cover.max(1) >= 0.5) & (np.sort(cover, 1)[:, :-1].max(1, initial=0.0) <= 0.1)
    if one_hidden.any():
        cand = np.flatnonzero(one_hidden)
        i = int(cand[np.argmax(eo[cand])])
        out.append({"index": i, "corrupt": True, "why": "one digit ≥ 50% hidden, the other ≤ 10%: highest η"})
    order = np.argsort(-eo, kind="stable")
    taken = {e["index"] for e in out if e["corrupt"]}
    i = int(next((j for j in order if int(j) not in taken), order[0]))
    out.append({"index": i, "corrupt": True, "why": "corrupt, highest η"})
    return out


def nearest_classes(points, centroids, class_ids) -> np.ndarray:
    """Class id of the nearest centroid to each point (..., D)."""
    p = np.asarray(points, dtype=float)
    c = np.asarray(centroids, dtype=float)
    d = np.linalg.norm(p[..., None, :] - c, axis=-1)
    return np.asarray(class_ids)[d.argmin(-1)]


def pick_ambiguous(comp_means, labels, centroids, class_ids, n_digits: int = 2) -> dict:
    """A corrupt input whose two mixture components sit at two classes sharing one digit (Figure 1b).

    Candidates: inputs whose components' nearest centroids are two different classes,
    one of them the true class, that agree on all but one digit (like "17" vs "47").
    Among them the one whose components lie furthest apart. Falls back to any input
    with two different nearest classes, then to the largest component spread.

    Returns {"index", "classes": (c1, c2), "kind": "shared-digit" | "two-classes" | "widest"}.
    """
    m = np.asarray(comp_means, dtype=float)
    if m.ndim != 3 or m.shape[1] < 2:
        raise InputError(f"comp_means must be (B, C >= 2, D); got {m.shape}")
    labels = np.asarray(labels)
    near = nearest_classes(m, centroids, class_ids)  # (B, C)
    spread = component_spread(m)
    a, b = near[:, 0], near[:, 1]
    da = np.stack([digit_at(a, p, n_digits) for p in range(n_digits)], 1)
    db = np.stack([digit_at(b, p, n_digits) for p in range(n_digits)], 1)
    differ = (da != db).sum(1)
    has_true = (a == labels) | (b == labels)
    for kind, mask in (("shared-digit", (differ == 1) & has_true), ("two-classes", a != b)):
        if mask.any():
            cand = np.flatnonzero(mask)
            i = int(cand[np.argmax(spread[cand])])
            return {"index": i, "classes": (int(a[i]), int(b[i])), "kind": kind}
    i = int(np.argmax(spread))
    return {"index": i, "classes": (int(a[i]), int(b[i])), "kind": "widest"}


# ------------------------------------------------------------------ occlusion, step by step
@dataclass(frozen=True)
class OcclusionWalkthrough:
    """App. A's occlusion of one 28 x 28 digit: the sampled size, the allowed corners, the result."""

    digit: np.ndarray  # (28, 28) uint8 input
    height: int
    width: int
    top: int
    left: int
    result: np.ndarray  # (28, 28) uint8 occluded digit

    @property
    def corner_range(self) -> tuple[int, int]:
        """Largest allowed (top, left): the box must fit, so top <= 28 - h and left <= 28 - w."""
        return DIGIT_SIZE - self.height, DIGIT_SIZE - self.width

    @property
    def box(self) -> np.ndarray:
        return np.array([self.top, self.left, self.height, self.width], dtype=np.int64)


def occlusion_walkthrough(digit, rng: np.random.Generator, min_side: int = 6) -> OcclusionWalkthrough:
    """Draw one occlusion box for ``digit`` with `hedgekit.data.sample_digit_boxes` (the real sampler).

    Boxes smaller than ``min_side`` on a side are redrawn so the picture shows something
    (only the illustration does that; the datasets use every draw).
    """
    img = np.asarray(digit)
    if img.shape != (DIGIT_SIZE, DIGIT_SIZE):
        raise InputError(f"digit must be 28 x 28; got {img.shape}")
    for _ in range(1000):
        top, left, h, w = (int(v) for v in sample_digit_boxes(rng, 1, 1, 1.0)[0, 0])
        if min(h, w) >= min_side:
            break
    return OcclusionWalkthrough(img, h, w, top, left, occlude(img, np.array([[top, left, h, w]])))


def occlusion_statistics(boxes, p_occlude: float) -> dict:
    """Measured vs expected occlusion of a split (App. A), from its (M, N, 4) boxes.

    Expected values follow `hedgekit.data.sample_digit_boxes`'s discretisation of
    L ~ U(0, 28): h, w uniform on {0, ..., 28}, so a drawn box is non-empty with
    probability (28/29)^2 and hides E[h] E[w] / 28^2 = 14^2 / 784 = 25% of its digit
    on average (the paper's continuous L gives the same 25%).
    """
    b = np.asarray(boxes)
    if b.ndim != 3 or b.shape[-1] != 4:
        raise InputError(f"boxes must be (M, N, 4); got {b.shape}")
    cover = _digit_cover(b)
    occluded = cover > 0
    p_nonempty = (DIGIT_SIZE / (DIGIT_SIZE + 1)) ** 2
    return {"digits": int(cover.size),
            "occluded_fraction": float(occluded.mean()),
            "expected_occluded_fraction": float(p_occlude * p_nonempty),
            "mean_hidden": float(cover.mean()),
            "expected_mean_hidden": float(p_occlude * (DIGIT_SIZE / 2) ** 2 / DIGIT_SIZE**2),
            "fully_hidden_fraction": float((cover >= 1.0).mean())}


def size_stats(es) -> dict:
    """Clean vs corrupt embedding sizes of an embedded test split (`hedgekit.evaluation.retrieval.EmbeddedSet`).

    scale_*: mean `gaussian_scale` (ellipse radius); frac_larger: share of images whose
    corrupt twin gets the larger ellipse; var_*: mean total variance and their ratio (the
    variance-collapse check); eta_*: mean eta (HIB eq. 9). Figures 3 and 8.
    """
    sc = gaussian_scale(es.clean.total_var().numpy())
    so = gaussian_scale(es.corrupt.total_var().numpy())
    vc, vo = float(es.clean.total_var().mean()), float(es.corrupt.total_var().mean())
    return dict(scale_clean=float(sc.mean()), scale_corrupt=float(so.mean()), frac_larger=float((so > sc).mean()),
                var_clean=vc, var_corrupt=vo, var_ratio=vo / vc if vc > 0 else math.nan,
                eta_clean=float(np.mean(es.eta_clean)), eta_corrupt=float(np.mean(es.eta_corrupt)))


def axis_ratio(var) -> float:
    """sqrt(largest / smallest variance) of one diagonal Gaussian: 1 = round, large = elongated (Figure 4)."""
    v = np.asarray(var, dtype=float).reshape(-1)
    return float(np.sqrt(v.max() / max(v.min(), 1e-30)))
