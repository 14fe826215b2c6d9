"""HIB's figures of its data (Oh et al., ICLR 2019, App. A, Table 3), drawn from plain arrays: N-digit MNIST
samples, clean and corrupt twins, the occlusion procedure step by step, and the seen / unseen class split.

Like every figure of `hedgekit.papers.hib.figures` (which re-exports these): numpy arrays in, ``(fig, ax)`` /
``(fig, axes)`` out, a white background, never ``show()``. `_img` also draws the occluded images of the
occlusion figures there.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib
import numpy as np
from matplotlib.patches import Rectangle

from hedgekit.errors import InputError
from hedgekit.viz.style import INK, OCCLUDER, figure as _figure

__all__ = ["digit_grid", "twins_figure", "occlusion_steps", "class_split_figure"]


def _img(ax, image, title=None, boxes=()):
    ax.imshow(np.asarray(image), cmap="gray", vmin=0, vmax=255 if np.asarray(image).dtype == np.uint8 else 1,
              interpolation="nearest")
    for top, left, h, w in np.asarray(boxes).reshape(-1, 4):
        if h > 0 and w > 0:
            ax.add_patch(Rectangle((left - 0.5, top - 0.5), w, h, fill=False, ec=OCCLUDER, lw=1.5))
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)


# =============================================================================== notebook 01


def digit_grid(images, titles: Sequence[str] | None = None, ncols: int = 6, title: str | None = None,
               scale: float = 1.0):
    """A grid of N-digit images (App. A). images (M, 28, 28N); titles (M,) e.g. the class labels."""
    images = np.asarray(images)
    if images.ndim != 3 or len(images) == 0:
        raise InputError(f"images must be a non-empty (M, H, W) array; got {images.shape}")
    m = len(images)
    ncols = min(ncols, m)
    nrows = -(-m // ncols)
    h, w = images.shape[1:]
    fig, axes = _figure(nrows, ncols, figsize=(scale * ncols * (0.45 + w / 40), scale * nrows * (0.35 + h / 40)),
                        squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        if k < m:
            _img(ax, images[k], None if titles is None else titles[k])
        else:
            ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig, axes


def twins_figure(clean, corrupt, boxes, titles: Sequence[str] | None = None):
    """Clean test images (top row) and their corrupt twins with the boxes outlined (bottom row)."""
    clean, corrupt = np.asarray(clean), np.asarray(corrupt)
    if clean.shape != corrupt.shape or clean.ndim != 3:
        raise InputError(f"clean and corrupt must be equal (M, H, W) arrays; got {clean.shape}, {corrupt.shape}")
    m = len(clean)
    h, w = clean.shape[1:]
    fig, axes = _figure(2, m, figsize=(m * (0.4 + w / 40), 2 * (0.45 + h / 40)), squeeze=False)
    for k in range(m):
        _img(axes[0, k], clean[k], None if titles is None else titles[k])
        _img(axes[1, k], corrupt[k], None, boxes[k])
    axes[0, 0].set_ylabel("clean", fontsize=9)
    axes[1, 0].set_ylabel("corrupt", fontsize=9)
    fig.tight_layout()
    return fig, axes


def occlusion_steps(walk):
    """App. A's occlusion of one digit in five panels (``walk``: `hib_analysis.OcclusionWalkthrough`).

    1 the digit; 2 the box size h, w ~ U{0..28}; 3 where its top-left corner may go
    (shaded: top <= 28 - h, left <= 28 - w) and the uniform draw; 4 the box; 5 black fill.
    """
    fig, axes = _figure(1, 5, figsize=(11, 2.7))
    t_max, l_max = walk.corner_range
    _img(axes[0], walk.digit, "1. a 28×28 digit")
    _img(axes[1], walk.digit, f"2. size h={walk.height}, w={walk.width}\n~ U{{0..28}} each")
    axes[1].add_patch(Rectangle((-0.5, -0.5), walk.width, walk.height, fill=False, ec=OCCLUDER, lw=1.5, ls="--"))
    _img(axes[2], walk.digit, f"3. corner uniform in\ntop≤{t_max}, left≤{l_max}")
    axes[2].add_patch(Rectangle((-0.5, -0.5), l_max + 1, t_max + 1, color=OCCLUDER, alpha=0.35, lw=0))
    axes[2].plot([walk.left - 0.5], [walk.top - 0.5], marker="o", color=OCCLUDER, mec="white", ms=7)
    _img(axes[3], walk.digit, f"4. box at ({walk.top}, {walk.left})", [walk.box])
    _img(axes[4], walk.result, "5. filled black")
    for ax in axes:
        ax.set_xlim(-0.5, 27.5)
        ax.set_ylim(27.5, -0.5)
    fig.tight_layout()
    return fig, axes


def class_split_figure(seen, unseen, test_seen=(), test_unseen=()):
    """2-digit classes as a 10 x 10 grid (rows: tens digit, columns: ones digit), coloured by split.

    ``test_seen`` / ``test_unseen``: the classes the (capped) test splits actually use,
    drawn bold. App. A / Table 3: 70 seen classes (training and "seen" test), 30 unseen.
    """
    seen, unseen = np.asarray(seen), np.asarray(unseen)
    if len(np.intersect1d(seen, unseen)):
        raise InputError("seen and unseen classes overlap")
    grid = np.full((10, 10), np.nan)
    grid[seen // 10, seen % 10] = 1.0
    grid[unseen // 10, unseen % 10] = 0.0
    fig, ax = _figure(figsize=(4.6, 4.4))
    cmap = matplotlib.colors.ListedColormap(["#fdd49e", "#9ecae1"])
    ax.imshow(grid, cmap=cmap, vmin=0, vmax=1)
    bold = set(np.asarray(test_seen).tolist()) | set(np.asarray(test_unseen).tolist())
    for c in range(100):
        ax.text(c % 10, c // 10, f"{c:02d}", ha="center", va="center", fontsize=8, color=INK,
                fontweight="bold" if c in bold else "normal")
    ax.set_xticks(range(10))
    ax.set_yticks(range(10))
    ax.set_xlabel("ones digit")
    ax.set_ylabel("tens digit")
    ax.legend([Rectangle((0, 0), 1, 1, color="#9ecae1"), Rectangle((0, 0), 1, 1, color="#fdd49e")],
              [f"seen ({len(seen)})", f"unseen ({len(unseen)})"], loc="upper center", bbox_to_anchor=(0.5, -0.12),
              ncol=2, frameon=False)
    ax.set_title("2-digit MNIST class split")
    fig.tight_layout()
    return fig, ax


# =============================================================================== notebook 02
