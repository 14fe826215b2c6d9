"""The figures of the SPE paper (Scott, Ridgeway & Mozer 2019), drawn from plain arrays.

Every function takes numpy arrays (no models, except the live widget), draws one figure in the
paper's style and returns ``(fig, ax)`` / ``(fig, axes)``; none calls ``show()``. Figures have an
explicit white background, so they read the same in JupyterLab's light and dark themes and in the
reproduction report. The small computations behind them (`class_sample_grid`, `on_white`,
`equiprobability_ovals`) are separate functions, tested against oracles in
``tests/test_spe_figures.py``.

=========================  =====================================================================
function                   paper
=========================  =====================================================================
`class_samples_figure`     Figure 2a: samples of the four classes, transparency = class likelihood
`interpolation_figure`     Figure 2b: the 5 x 5 grid between the four class centres
`grid_embedding_figure`    Figure 2c: its 2D SPE embedding, 0.4-sigma equiprobability ovals
`variance_sweep_figure`    Figure 3: per-axis embedding variance vs hue noise / leg length
`lshape_snapshots`         notebook: shapes and their embedding ovals (the widget's static record)
`lshape_explorer`          notebook widget: orientation / hue / noise / leg sliders, live oval
`samples_curve`            Figure 4 analogue: accuracy vs samples per training query, two samplers
`accuracy_bars`            Figure 6b/c: accuracy per corruption condition, paper vs ours
`prototype_map`            Figure 7: 2D class prototypes coloured by first / second digit
=========================  =====================================================================
"""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.offsetbox import AnnotationBbox, OffsetImage
from matplotlib.patches import Circle, Patch

from hedgekit.data.lshapes import CLASS_CENTERS, CLASS_STD, class_log_likelihood, render_lshape
from hedgekit.errors import InputError
from hedgekit.papers.hib.analysis import digit_at
from hedgekit.viz.style import FACE, TAB10, figure as _figure
from hedgekit.viz.geometry import ellipse_points

__all__ = ["TAB10", "INK", "FACE", "CLASS_COLOURS", "AXIS_GREYS", "class_sample_grid", "on_white",
           "equiprobability_ovals", "class_samples_figure", "interpolation_figure", "grid_embedding_figure",
           "variance_sweep_figure", "lshape_snapshots", "lshape_explorer", "samples_curve", "accuracy_bars",
           "prototype_map"]

INK = "#222222"
CLASS_COLOURS = (TAB10[0], TAB10[1], TAB10[2], TAB10[3])  # L-shape classes 0-3 (markers, not shape colours)
AXIS_GREYS = {"orientation": "#9a9a9a", "hue": "#111111"}  # Figure 3: grey and black bars
METHOD_COLOURS = {"SPE": TAB10[0], "HIB": TAB10[1], "PN": TAB10[2], "contrastive": TAB10[7], "point": TAB10[7]}



# ============================================================================ data behind figures
def class_sample_grid(n: int = 5, span: float = 2.0, floor: float = 0.04) -> dict:
    """Figure 2a's samples: an n x n grid per class spanning +-``span`` std in orientation and hue.

    Class k's grid is centred on ``CLASS_CENTERS[k]`` (orientation along columns, hue along rows,
    steps of ``2 span / (n - 1)`` x 30 deg). Its transparency is "set according to its class-conditional
    likelihood" (Fig. 2a caption): ``alpha = p(o, h | k) / p(centre | k)``, i.e. 1 at the centroid and
    ``exp(-(a^2 + b^2) / 2)`` at (a, b) std away (wrapped normals), floored at ``floor`` so the corners
    stay visible. Returns dict(orientation, hue, alpha, offsets) with (4, n, n) arrays and offsets (n,) in std.
    """
    if n < 2 or span <= 0 or not 0 <= floor < 1:
        raise InputError(f"need n >= 2, span > 0 and 0 <= floor < 1; got {n}, {span}, {floor}")
    offsets = np.linspace(-span, span, n)
    o = CLASS_CENTERS[:, 0, None, None] + CLASS_STD * offsets[None, None, :] + 0 * offsets[None, :, None]
    h = CLASS_CENTERS[:, 1, None, None] + CLASS_STD * offsets[None, :, None] + 0 * offsets[None, None, :]
    ll = class_log_likelihood(o, h)  # (4, n, n, 4)
    own = np.stack([ll[k, ..., k] for k in range(4)])
    centre = np.array([class_log_likelihood(*CLASS_CENTERS[k])[k] for k in range(4)])
    alpha = np.clip(np.exp(own - centre[:, None, None]), floor, 1.0)
    return dict(orientation=np.mod(o, 360.0), hue=np.mod(h, 360.0), alpha=alpha, offsets=offsets)


def on_white(images) -> np.ndarray:
    """L-shape images (..., 3, H, W) on black -> (..., H, W, 3) float on a white background.

    The renderer paints ``coverage x colour`` with HSV value 1, so the coverage is the max over RGB;
    ``out = image + (1 - coverage)`` keeps the shape's colour and turns the black background white.
    """
    x = np.asarray(images, dtype=float)
    if x.dtype == np.uint8 or x.max(initial=0.0) > 1.0 + 1e-6:
        x = x / 255.0
    if x.ndim < 3 or x.shape[-3] != 3:
        raise InputError(f"images must be (..., 3, H, W); got {x.shape}")
    cov = x.max(axis=-3, keepdims=True)
    return np.clip(np.moveaxis(x + (1.0 - cov), -3, -1), 0.0, 1.0)


def equiprobability_ovals(means, variances, n_sigma: float = 0.4, n: int = 64) -> np.ndarray:
    """(B, n, 2) closed contours of N(mean, diag var) at ``n_sigma`` standard deviations (Fig. 2c: 0.4).

    Every point x satisfies (x - mean)^T diag(var)^-1 (x - mean) = n_sigma^2.
    """
    m = np.asarray(means, dtype=float).reshape(-1, 2)
    v = np.asarray(variances, dtype=float).reshape(-1, 2)
    if len(m) != len(v):
        raise InputError(f"{len(m)} means but {len(v)} variances")
    return np.stack([ellipse_points(mi, vi, n_sigma, n) for mi, vi in zip(m, v)]) if len(m) else np.zeros((0, n, 2))


def _mosaic(tiles, alpha=None, gap: int = 3) -> np.ndarray:
    """(n, m, H, W, 3) RGB tiles (optionally faded to white by alpha (n, m)) -> one image with gaps."""
    t = np.asarray(tiles, dtype=float)
    n, m, hh, ww, _ = t.shape
    if alpha is not None:
        a = np.asarray(alpha, dtype=float)[..., None, None, None]
        t = a * t + (1 - a)
    out = np.ones((n * hh + (n - 1) * gap, m * ww + (m - 1) * gap, 3))
    for i in range(n):
        for j in range(m):
            out[i * (hh + gap): i * (hh + gap) + hh, j * (ww + gap): j * (ww + gap) + ww] = t[i, j]
    return out


def _mosaic_ticks(ax, n, m, size, gap, xlabels, ylabels):
    ax.set_xticks([j * (size + gap) + size / 2 for j in range(m)], xlabels)
    ax.set_yticks([i * (size + gap) + size / 2 for i in range(n)], ylabels)
    ax.tick_params(length=0, labelsize=7)
    for s in ax.spines.values():
        s.set_visible(False)


# ============================================================================ Figure 2
def class_samples_figure(images, alpha, orientation, hue, offsets=None):
    """Figure 2a: one panel per class, an n x n grid of samples over +-2 std in orientation (columns)
    and hue (rows), each faded by its class-conditional likelihood; the class centroid is circled.

    images (4, n, n, 3, H, W) as rendered (black background); alpha, orientation, hue (4, n, n) from
    `class_sample_grid`. Axis ticks give the orientation / hue in degrees.
    """
    imgs = np.asarray(images)
    if imgs.ndim != 6 or imgs.shape[0] != 4:
        raise InputError(f"images must be (4, n, n, 3, H, W); got {imgs.shape}")
    n, size, gap = imgs.shape[1], imgs.shape[-1], max(2, imgs.shape[-1] // 16)
    fig, axes = _figure(1, 4, figsize=(13, 3.7))
    for k, ax in enumerate(axes):
        ax.imshow(_mosaic(on_white(imgs[k]), np.asarray(alpha)[k], gap), interpolation="nearest")
        c = (n - 1) / 2 * (size + gap) + size / 2
        ax.add_patch(Circle((c, c), 0.62 * size, fill=False, ec=INK, lw=1.4))
        _mosaic_ticks(ax, n, n, size, gap, [f"{v:.0f}°" for v in np.asarray(orientation)[k, 0]],
                      [f"{v:.0f}°" for v in np.asarray(hue)[k, :, 0]])
        o0, h0 = np.asarray(orientation)[k, n // 2, n // 2], np.asarray(hue)[k, n // 2, n // 2]
        ax.set_title(f"class {k}: orientation {o0:.0f}°, hue {h0:.0f}°", fontsize=9.5)
        ax.set_xlabel("orientation", fontsize=8)
        if k == 0:
            ax.set_ylabel("hue", fontsize=8)
    fig.suptitle("Figure 2a — samples of the four classes (±2 std; transparency = class likelihood)", fontsize=11)
    fig.tight_layout()
    return fig, axes


def interpolation_figure(images, orientation, hue):
    """Figure 2b: the n x n grid with the class centroids in the corners and linear interpolation in
    the generative space between them (orientation along columns, hue along rows)."""
    imgs = np.asarray(images)
    if imgs.ndim != 5:
        raise InputError(f"images must be (n, n, 3, H, W); got {imgs.shape}")
    n, size, gap = imgs.shape[0], imgs.shape[-1], max(2, imgs.shape[-1] // 16)
    fig, ax = _figure(figsize=(4.6, 4.6))
    ax.imshow(_mosaic(on_white(imgs), None, gap), interpolation="nearest")
    _mosaic_ticks(ax, n, n, size, gap, [f"{v:.0f}°" for v in np.asarray(orientation)[0]],
                  [f"{v:.0f}°" for v in np.asarray(hue)[:, 0]])
    ax.set_xlabel("orientation")
    ax.set_ylabel("hue")
    ax.set_title("Figure 2b — interpolation between the class centres", fontsize=10)
    fig.tight_layout()
    return fig, ax


def _thumb(ax, image_hwc, xy, zoom):
    ab = AnnotationBbox(OffsetImage(image_hwc, zoom=zoom), xy, frameon=False, pad=0.0, zorder=3)
    ax.add_artist(ab)


def grid_embedding_figure(means, variances, images, n_sigma: float = 0.4, axis_names=("$z_1$", "$z_2$"),
                          zoom: float = 0.3, title: str = "Figure 2c — 2D SPE embedding of the grid"):
    """Figure 2c: every grid shape plotted at the mean of p(z|x), with its equiprobability oval at
    ``n_sigma`` standard deviations (the paper: 0.4).

    means, variances (n, n, 2) or (B, 2); images (n, n, 3, H, W) or (B, 3, H, W).
    """
    m = np.asarray(means, dtype=float).reshape(-1, 2)
    v = np.asarray(variances, dtype=float).reshape(-1, 2)
    imgs = np.asarray(images)
    imgs = imgs.reshape(-1, *imgs.shape[-3:])
    if not len(m) == len(v) == len(imgs):
        raise InputError(f"means {m.shape}, variances {v.shape} and images {imgs.shape} must match")
    ovals = equiprobability_ovals(m, v, n_sigma)
    fig, ax = _figure(figsize=(5.6, 5.3))
    for pts in ovals:  # a light fill under the shape, the outline above it (ovals can be smaller than a shape)
        ax.fill(pts[:, 0], pts[:, 1], color="#999999", alpha=0.25, lw=0, zorder=1)
        ax.plot(pts[:, 0], pts[:, 1], color=INK, lw=1.0, alpha=0.9, zorder=4)
    for img, xy in zip(on_white(imgs), m):
        _thumb(ax, img, xy, zoom)
    allp = np.concatenate([ovals.reshape(-1, 2), m])
    lo, hi = allp.min(0), allp.max(0)
    pad = 0.12 * float((hi - lo).max() + 1e-9)
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.set_xlabel(axis_names[0])
    ax.set_ylabel(axis_names[1])
    ax.set_title(f"{title}\n(ovals: {n_sigma:g}-σ equiprobability contours)", fontsize=10)
    fig.tight_layout()
    return fig, ax


# ============================================================================ Figure 3
def variance_sweep_figure(left: Mapping, right: Mapping, axes: Mapping[str, int],
                          axis_names: Mapping[str, str] | None = None):
    """Figure 3: the embedding variance on each axis as hue noise grows (left) and legs shorten (right).

    ``left`` / ``right``: dict(level (L,), var (L, D), example (L, 3, H, W), factor) from
    `hedgekit.papers.spe.protocol.variance_sweep`. ``axes``: which embedding coordinate carries orientation and
    hue (`hedgekit.papers.spe.protocol.factor_axes`). Grey bars: the orientation axis; black: the hue axis (the
    paper's grey/black = horizontal/vertical dimension; we name the axis by the factor it codes).
    Under each group, the class-0 centroid at that level.
    """
    names = dict(orientation="orientation axis", hue="hue axis") if axis_names is None else dict(axis_names)
    fig, axs = _figure(1, 2, figsize=(11, 4.2))
    for ax, panel in zip(axs, (left, right)):
        lv = np.asarray(panel["level"], dtype=float)
        var = np.asarray(panel["var"], dtype=float)
        if var.shape[0] != len(lv):
            raise InputError(f"var must have one row per level; got {var.shape} for {len(lv)} levels")
        x = np.arange(len(lv))
        w = 0.36
        for off, key in ((-w / 2, "orientation"), (w / 2, "hue")):
            j = axes[key]
            ax.bar(x + off, var[:, j], w, color=AXIS_GREYS[key], label=f"{names[key]} ($z_{j + 1}$)")
        ax.set_xticks(x, [f"{v:g}°" if panel.get("factor") == "hue_noise" else f"{100 * v:.0f}%" for v in lv])
        ax.set_ylabel("embedding variance σ²")
        ax.set_xlabel("per-pixel hue-noise std" if panel.get("factor") == "hue_noise" else
                      "leg length (fraction of full)")
        ex = panel.get("example")
        if ex is not None:  # thumbnails between the axis and the tick labels
            ax.tick_params(axis="x", pad=30, length=0)
            for xi, img in zip(x, on_white(np.asarray(ex))):
                ab = AnnotationBbox(OffsetImage(img, zoom=0.36), (xi, 0), xybox=(0, -16), xycoords=("data", "axes fraction"),
                                    boxcoords="offset points", frameon=False)
                ax.add_artist(ab)
        sns_despine(ax)
    axs[0].set_title("harder to discern the hue", fontsize=10)
    axs[1].set_title("harder to discern hue and orientation", fontsize=10)
    axs[0].legend(frameon=False, fontsize=8)
    fig.suptitle("Figure 3 — uncertainty on the two embedding axes", fontsize=11)
    fig.tight_layout()
    return fig, axs


def sns_despine(ax) -> None:
    for s in ("top", "right"):
        ax.spines[s].set_visible(False)


# ============================================================================ live explorer
def lshape_snapshots(images, means, variances, titles: Sequence[str], prototypes=None, context=None,
                     axis_names=("$z_1$", "$z_2$"), limits=None, n_sigmas=(1.0, 2.0)):
    """Shapes (top row) and their embedding p(z|x) (bottom row): the mean and 1/2-sigma ovals over the
    four class prototypes (coloured crosses) and, in grey, the embedding of the Figure 2b grid.

    The widget's static record (papermill saves no live widgets) and the widget's own drawing.
    images (K, 3, H, W); means, variances (K, 2); prototypes (4, 2); context (M, 2) grey points;
    limits ((x0, x1), (y0, y1)) fixed axes so views are comparable.
    """
    imgs = np.asarray(images)
    m = np.asarray(means, dtype=float).reshape(-1, 2)
    v = np.asarray(variances, dtype=float).reshape(-1, 2)
    k = len(m)
    if not len(imgs) == len(v) == len(titles) == k:
        raise InputError("need one image, mean, variance and title per snapshot")
    fig, axs = _figure(2, k, figsize=(2.9 * k, 5.9), squeeze=False, gridspec_kw=dict(height_ratios=[1, 1.25]))
    for i in range(k):
        a_img, a_emb = axs[0, i], axs[1, i]
        a_img.imshow(on_white(imgs[i]), interpolation="nearest")
        a_img.set_xticks([])
        a_img.set_yticks([])
        a_img.set_title(titles[i], fontsize=8.5)
        if context is not None:
            c = np.asarray(context, dtype=float).reshape(-1, 2)
            a_emb.scatter(c[:, 0], c[:, 1], s=8, color="#b0b0b0", zorder=1, label="grid (Fig. 2c)")
        if prototypes is not None:
            for cls, p in enumerate(np.asarray(prototypes, dtype=float).reshape(-1, 2)):
                a_emb.scatter(*p, marker="P", s=70, color=CLASS_COLOURS[cls % 4], edgecolors=INK, lw=0.5, zorder=4,
                              label=f"class {cls}")
        for ns, ls in zip(n_sigmas, ("-", "--", ":")):
            pts = equiprobability_ovals(m[i], v[i], ns)[0]
            a_emb.plot(pts[:, 0], pts[:, 1], ls, color=INK, lw=1.2, zorder=3)
        a_emb.scatter(*m[i], s=18, color=INK, zorder=5)
        if limits is not None:
            a_emb.set_xlim(*limits[0])
            a_emb.set_ylim(*limits[1])
        a_emb.set_aspect("equal", adjustable="box")
        a_emb.set_xlabel(axis_names[0], fontsize=8)
        a_emb.set_ylabel(axis_names[1], fontsize=8)
        a_emb.tick_params(labelsize=7)
        a_emb.text(0.02, 0.98, f"σ² = ({v[i, 0]:.3f}, {v[i, 1]:.3f})", transform=a_emb.transAxes, va="top",
                   fontsize=7, color=INK)
    if prototypes is not None:
        axs[1, 0].legend(fontsize=6.5, loc="lower left", frameon=True, framealpha=0.85, handletextpad=0.2)
    fig.tight_layout()
    return fig, axs


def lshape_explorer(model, prototypes=None, context=None, axis_names=("$z_1$", "$z_2$"), limits=None,
                    seed: int = 0):
    """ipywidgets panel: orientation / hue / hue-noise / leg-length sliders redraw the L-shape and its
    embedding oval live (render with `hedgekit.data.lshapes.render_lshape`, embed with ``model``).

    Returns an ``ipywidgets.VBox``; ``box.current()`` returns the last (image, mean, var). The hue noise
    uses a fixed seed, so the same slider values always give the same image.
    """
    import ipywidgets as W
    import torch
    from IPython.display import display

    sl = dict(orientation=W.FloatSlider(135.0, min=0, max=360, step=5, description="orientation °"),
              hue=W.FloatSlider(135.0, min=0, max=360, step=5, description="hue °"),
              noise=W.FloatSlider(0.0, min=0, max=90, step=3, description="hue noise °"),
              legs=W.FloatSlider(0.98, min=0.1, max=1.0, step=0.02, description="leg length"))
    for w in sl.values():
        w.continuous_update = False
        w.style.description_width = "90px"
    out = W.Output()
    state: dict = {}
    size = int(model.config.get("height", 64))

    def redraw(*_):
        img = render_lshape(sl["orientation"].value, sl["hue"].value, sl["noise"].value, sl["legs"].value,
                            rng=seed, size=size)
        with torch.no_grad():
            emb = model.embed(torch.from_numpy(img)[None])
        mean, var = emb.mixture_mean()[0].numpy(), emb.total_var()[0].numpy()
        state.update(image=img, mean=mean, var=var)
        title = (f"o {sl['orientation'].value:.0f}°, h {sl['hue'].value:.0f}°, noise {sl['noise'].value:.0f}°, "
                 f"legs {100 * sl['legs'].value:.0f}%")
        fig, _ = lshape_snapshots(img[None], mean[None], var[None], [title], prototypes, context, axis_names,
                                  limits)
        fig.set_size_inches(4.2, 6.6)
        out.clear_output(wait=True)
        with out:
            display(fig)
        plt.close(fig)

    for w in sl.values():
        w.observe(redraw, names="value")
    redraw()
    box = W.VBox([W.HBox([W.VBox([sl["orientation"], sl["hue"]]), W.VBox([sl["noise"], sl["legs"]])]), out])
    box.current = lambda: (state["image"], state["mean"], state["var"])  # type: ignore[attr-defined]
    box.sliders = sl  # type: ignore[attr-defined]
    return box


# ============================================================================ Figures 4, 6, 7
def samples_curve(curves: Mapping[str, Mapping], title: str = "", paper_note: str = ""):
    """Figure 4 analogue: test accuracy vs samples per training query s, one line per sampler.

    ``curves``: sampler -> dict(s (S,), acc (S,) in %, se (S,) in %) (error bars: +-1 standard error).
    """
    fig, ax = _figure(figsize=(5.6, 4.0))
    styles = {"naive": dict(color=TAB10[1], marker="o"), "intersection": dict(color=TAB10[0], marker="s")}
    for name, c in curves.items():
        s = np.asarray(c["s"], dtype=float)
        ax.errorbar(s, c["acc"], yerr=c.get("se"), capsize=3, lw=1.6, ms=5, label=f"{name} sampler",
                    **styles.get(name, {}))
    allx = sorted({float(x) for c in curves.values() for x in np.asarray(c["s"]).ravel()})
    ax.set_xscale("log", base=3 if all(round(np.log(x) / np.log(3), 6) % 1 == 0 for x in allx) else 10)
    ax.set_xticks(allx, [f"{x:g}" for x in allx])
    ax.minorticks_off()
    ax.set_xlabel("samples per training query, s")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title or "Figure 4 analogue — sample efficiency of the two samplers", fontsize=10)
    if paper_note:
        ax.text(0.01, 0.01, paper_note, transform=ax.transAxes, fontsize=7, color="#555555", va="bottom")
    ax.legend(frameon=False)
    sns_despine(ax)
    fig.tight_layout()
    return fig, ax


def accuracy_bars(rows: Sequence[Mapping], splits=("seen", "unseen"), title: str = ""):
    """Figure 6b/c: mean accuracy per corruption condition, one bar per method and source.

    ``rows``: dicts with split, condition (e.g. "clean S / clean Q"), method ("HIB", "SPE", ...),
    source ("paper" or "ours"), acc (%), se (% or NaN). Paper bars are hatched and lighter; ours solid
    with +-1 standard-error bars. One panel per split (b: seen classes, c: unseen classes).
    """
    rows = list(rows)
    if not rows:
        raise InputError("accuracy_bars needs at least one row")
    conds = list(dict.fromkeys(r["condition"] for r in rows))
    series = list(dict.fromkeys((r["method"], r["source"]) for r in rows))
    fig, axs = _figure(1, len(splits), figsize=(5.6 * len(splits), 4.2), squeeze=False)
    w = 0.8 / len(series)
    for ax, split, letter in zip(axs[0], splits, "bc"):
        for i, (method, source) in enumerate(series):
            vals, errs = [], []
            for c in conds:
                hit = [r for r in rows if r["split"] == split and r["condition"] == c and r["method"] == method
                       and r["source"] == source]
                vals.append(hit[0]["acc"] if hit else np.nan)
                errs.append(hit[0].get("se", np.nan) if hit else np.nan)
            x = np.arange(len(conds)) - 0.4 + w * (i + 0.5)
            col = METHOD_COLOURS.get(method.split(" ")[0], TAB10[(i + 3) % 10])
            paper = source == "paper"
            ax.bar(x, vals, w, color=col, alpha=0.45 if paper else 1.0, hatch="//" if paper else None,
                   edgecolor=INK if paper else col, lw=0.5, label=f"{method} ({source})")
            e = np.asarray(errs, dtype=float)
            if np.isfinite(e).any():
                ax.errorbar(x, vals, yerr=np.where(np.isfinite(e), e, 0), fmt="none", ecolor=INK, capsize=2, lw=0.8)
        ax.set_xticks(np.arange(len(conds)), conds, fontsize=8)
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"({letter}) {split} classes", fontsize=10)
        sns_despine(ax)
    axs[0, -1].legend(fontsize=7, frameon=False, loc="upper right", ncol=2)
    fig.suptitle(title or "Figure 6b/c — N-digit MNIST accuracy by condition", fontsize=11)
    fig.tight_layout()
    return fig, axs


def prototype_map(prototypes, class_ids, unseen=None, n_digits: int = 2, title: str = ""):
    """Figure 7: class prototype means in 2D, written as their class label; coloured by the first digit
    (left) and by the second digit (right). Unseen (never trained) classes get a black box.

    prototypes (K, 2); class_ids (K,); unseen (K,) bool.
    """
    mu = np.asarray(prototypes, dtype=float)
    ids = np.asarray(class_ids)
    if mu.ndim != 2 or mu.shape[1] != 2 or len(mu) != len(ids):
        raise InputError(f"prototypes must be (K, 2) with one class id each; got {mu.shape}, {ids.shape}")
    un = np.zeros(len(ids), dtype=bool) if unseen is None else np.asarray(unseen, dtype=bool)
    fig, axs = _figure(1, 2, figsize=(11, 5.2))
    lo, hi = mu.min(0), mu.max(0)
    pad = 0.06 * float((hi - lo).max() + 1e-9)
    for ax, pos, what in zip(axs, (0, n_digits - 1), ("first", "second" if n_digits == 2 else "last")):
        digits = digit_at(ids, pos, n_digits)
        for (x, y), c, d, u in zip(mu, ids, digits, un):
            ax.text(x, y, f"{c:0{n_digits}d}", color=TAB10[d], fontsize=8.5, fontweight="bold", ha="center",
                    va="center", bbox=dict(boxstyle="square,pad=0.15", fc=FACE, ec=INK, lw=1.0) if u else None)
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
        ax.set_ylim(lo[1] - pad, hi[1] + pad)
        ax.set_title(f"coloured by {what} digit", fontsize=10)
        ax.set_xlabel("$z_1$")
        ax.set_ylabel("$z_2$")
    handles = [Patch(color=TAB10[d], label=str(d)) for d in range(10)]
    if un.any():
        handles.append(Patch(fc=FACE, ec=INK, label="unseen class"))
    axs[1].legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle(title or "Figure 7 — 2D SPE prototypes of 2-digit MNIST test classes", fontsize=11)
    fig.tight_layout()
    return fig, axs
