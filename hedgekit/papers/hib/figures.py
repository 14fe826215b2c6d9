"""The figures of the HIB paper (Oh et al., ICLR 2019), drawn from plain arrays.

Every function takes numpy arrays (no models), draws one figure in the paper's
style and returns ``(fig, ax)`` / ``(fig, axes)`` (matplotlib) or a plotly
``Figure`` — it never calls ``show()``. Figures have an explicit white background,
so they read the same in JupyterLab's light and dark themes and in the report.

=====================  ==========================================================
function               paper
=====================  ==========================================================
`digit_grid`           App. A: N-digit MNIST samples
`twins_figure`         App. A: clean and corrupt test twins
`occlusion_steps`      App. A: the occlusion procedure, step by step
`class_split_figure`   App. A, Table 3: seen / unseen classes
`gaussian_embeddings`  Figure 3: 2D Gaussian embeddings, clean vs corrupt
`point_vs_hedged`      Figure 4: centroids, point vs hedged, 3-sigma ellipses
`mixture_example`      Figure 1b: a 2-component embedding spanning two classes
`mixture_embeddings`   Figure 7: MoG components joined by lines, C = 2 / 4
`ellipsoids_3d`        Figure 8: 3D ellipsoids, clean vs corrupt (plotly)
`centroids_by_digit`   Figure 10: class centroids coloured by ones / tens digit
`number_line_figure`   Figure 11: classes on the number line (D = 1)
`adjacency_figure`     App. D: adjacency score per seed vs the paper's ranges
`eta_bins_figure`      Figure 5: AP and KNN accuracy per eta bin
`match_score_figure`   Figure 9 (b, c): match scores, lowest / highest eta bin
`beta_ellipses`        Figure 12: embeddings for increasing KL weight beta
`margin_figure`        Figure 6: soft vs hard contrastive loss over margins M
`occlusion_view`       notebook widget: an occluded image, its ellipse and eta
`eta_histogram`        sec. 2.4: eta of clean vs corrupt inputs
`occlusion_sweep`      sec. 2.4 / Figure 4: a growing occluder, its ellipses and eta
=====================  ==========================================================

The figures of the data (App. A) live in `hedgekit.papers.hib.data_figures` and the charts of measured numbers
(App. D, Figures 5, 6, 9, sec. 2.4's histogram) in `hedgekit.papers.hib.charts`; this module holds the
embedding-space figures and re-exports the others, so ``figures.digit_grid`` and the rest keep their names.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection, PatchCollection
from matplotlib.offsetbox import AnnotationBbox, OffsetImage
from matplotlib.patches import Ellipse, Rectangle

from hedgekit.errors import InputError
from hedgekit.papers.hib.analysis import digit_at
from hedgekit.papers.hib.charts import (adjacency_figure, eta_bins_figure, eta_histogram, margin_figure,
                                        match_score_figure)
from hedgekit.papers.hib.data_figures import _img, class_split_figure, digit_grid, occlusion_steps, twins_figure
from hedgekit.viz.geometry import ellipse_axes
from hedgekit.viz.style import FACE, INK, TAB10, figure as _figure

__all__ = ["digit_colours", "as_covs", "ellipse_collection", "digit_grid",
           "twins_figure", "occlusion_steps", "class_split_figure", "gaussian_embeddings", "point_vs_hedged",
           "mixture_example", "mixture_embeddings", "ellipsoid_mesh", "ellipsoids_3d", "centroids_by_digit",
           "number_line_figure", "adjacency_figure", "eta_bins_figure", "match_score_figure", "beta_ellipses",
           "margin_figure", "occlusion_view", "eta_histogram", "occlusion_sweep"]

def digit_colours(class_ids, position: int, n_digits: int = 2) -> np.ndarray:
    """(K, 4) RGBA tab10 colour of the digit at ``position`` (0 = leftmost) of every class."""
    return np.array([(*TAB10[d], 1.0) for d in digit_at(class_ids, position, n_digits)]).reshape(-1, 4)


def as_covs(var_or_cov) -> np.ndarray:
    """(B, 2, 2) covariances from (B, 2) diagonal variances or (B, 2, 2) matrices."""
    v = np.asarray(var_or_cov, dtype=float)
    if v.ndim == 2 and v.shape[1] == 2:
        return v[:, :, None] * np.eye(2)
    if v.ndim == 3 and v.shape[1:] == (2, 2):
        return v
    raise InputError(f"need (B, 2) variances or (B, 2, 2) covariances; got {v.shape}")


def ellipse_collection(means, covs, n_sigma: float = 1.0, colors=None, alpha: float = 0.25,
                       edge_alpha: float = 0.9, lw: float = 0.8) -> PatchCollection:
    """A PatchCollection of the n-sigma ellipses of B Gaussians (means (B, 2), covs (B, 2[, 2]))."""
    means = np.asarray(means, dtype=float).reshape(-1, 2)
    covs = as_covs(covs)
    patches = []
    for m, c in zip(means, covs):
        a, b, ang = ellipse_axes(c, n_sigma)
        patches.append(Ellipse(m, 2 * a, 2 * b, angle=ang))
    if colors is None:
        colors = [TAB10[0]] * len(patches)
    colors = np.asarray(matplotlib.colors.to_rgba_array(colors))
    if len(colors) == 1:
        colors = np.repeat(colors, len(patches), 0)
    face = colors.copy()
    face[:, 3] = alpha
    edge = colors.copy()
    edge[:, 3] = edge_alpha
    return PatchCollection(patches, facecolors=face, edgecolors=edge, linewidths=lw)


def _limits(points: Sequence[np.ndarray], pad: float = 0.06) -> tuple[tuple[float, float], tuple[float, float]]:
    allp = np.concatenate([np.asarray(p, dtype=float).reshape(-1, 2) for p in points if np.size(p)])
    lo, hi = np.nanmin(allp, 0), np.nanmax(allp, 0)
    span = max(float((hi - lo).max()), 1e-6)
    return (lo[0] - pad * span, hi[0] + pad * span), (lo[1] - pad * span, hi[1] + pad * span)


def _frame_equal(ax, pts: Sequence[np.ndarray], pad: float, title: str) -> None:
    """Fit the axes to the plotted points (padded), equal aspect, and set the title."""
    xl, yl = _limits(pts, pad=pad)
    ax.set_xlim(*xl)
    ax.set_ylim(*yl)
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(title)


def _ellipse_extent(means, covs, n_sigma) -> np.ndarray:
    covs = as_covs(covs)
    r = n_sigma * np.sqrt(np.stack([covs[:, 0, 0], covs[:, 1, 1]], 1))
    m = np.asarray(means, dtype=float).reshape(-1, 2)
    return np.concatenate([m - r, m + r])


def _digit_legend(ax, title: str, loc="upper left", **kw) -> None:
    handles = [Rectangle((0, 0), 1, 1, color=TAB10[d]) for d in range(10)]
    ax.legend(handles, [str(d) for d in range(10)], title=title, loc=loc, fontsize=7, title_fontsize=8,
              ncol=2, frameon=True, framealpha=0.9, handlelength=1.0, columnspacing=0.8, **kw)


def gaussian_embeddings(clean_mean, clean_var, corrupt_mean, corrupt_var, labels, n_digits: int = 2,
                        color_by: int = 0, n_sigma: float = 1.0, titles=("clean", "corrupt")):
    """Figure 3: 2D Gaussian embeddings of clean (left) and corrupt (right) test images.

    Means (B, 2), variances (B, 2) or covariances (B, 2, 2); ``labels`` (B,) classes,
    coloured by the digit at position ``color_by`` (0 = tens for N = 2). Both panels
    share their axes, so larger ellipses on the right mean larger uncertainty.
    """
    fig, axes = _figure(1, 2, figsize=(10, 4.8), sharex=True, sharey=True)
    cols = digit_colours(labels, color_by, n_digits)
    ext = []
    for ax, mean, var, title in zip(axes, (clean_mean, corrupt_mean), (clean_var, corrupt_var), titles):
        ax.add_collection(ellipse_collection(mean, var, n_sigma, cols, alpha=0.12, edge_alpha=0.7))
        ax.scatter(*np.asarray(mean).T, s=3, c=cols, zorder=3)
        ax.set_title(title)
        ax.set_aspect("equal", adjustable="box")
        ext.append(_ellipse_extent(mean, var, n_sigma))
    xl, yl = _limits(ext)
    axes[0].set_xlim(*xl)
    axes[0].set_ylim(*yl)
    axes[0].set_xlabel("z₁")
    axes[1].set_xlabel("z₁")
    axes[0].set_ylabel("z₂")
    _digit_legend(axes[1], "tens digit" if color_by == 0 and n_digits == 2 else f"digit {color_by + 1}",
                  loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig, axes


def _centroid_squares(ax, xy, class_ids, n_digits, color_by=0, labels=True, size=42, fontsize=6.5, alpha=0.9):
    cols = digit_colours(class_ids, color_by, n_digits)
    ax.scatter(xy[:, 0], xy[:, 1], marker="s", s=size, c=cols, edgecolors=INK, linewidths=0.4, alpha=alpha, zorder=2)
    if labels:
        for (x, y), c in zip(xy, class_ids):
            ax.annotate(f"{c:0{n_digits}d}", (x, y), fontsize=fontsize, ha="center", va="center", color=INK,
                        xytext=(0, 6), textcoords="offset points", zorder=3)


def _thumbnail(ax, image, xy, offset, zoom=0.95, color=INK):
    ab = AnnotationBbox(OffsetImage(np.asarray(image), cmap="gray", zoom=zoom), xy, xybox=offset,
                        boxcoords="offset points", frameon=True, pad=0.15,
                        bboxprops=dict(ec=color, lw=1.2), arrowprops=dict(arrowstyle="-", color=color, lw=1.0))
    ax.add_artist(ab)


def point_vs_hedged(point_centroids, hib_centroids, class_ids, examples: Sequence[Mapping], n_digits: int = 2,
                    n_sigma: float = 3.0):
    """Figure 4: class centroids (labelled squares) of a point (left) and a hedged (right) model,
    with example test images placed at their embeddings; hedged ones with n-sigma ellipses.

    ``examples``: dicts with ``image`` (H, W), ``point`` (2,), ``mean`` (2,), ``cov`` (2, 2)
    and an optional ``title``.
    """
    fig, axes = _figure(1, 2, figsize=(12, 5.6))
    offsets = [(-60, 45), (60, 45), (60, -45), (-60, -45)]
    for ax, cent, hedged, title in ((axes[0], np.asarray(point_centroids), False, "point embedding"),
                                    (axes[1], np.asarray(hib_centroids), True, f"hedged (MoG-1), {n_sigma:g}σ")):
        _centroid_squares(ax, cent, class_ids, n_digits)
        pts = [cent]
        for k, ex in enumerate(examples):
            col = TAB10[(k + 3) % 10]
            if hedged:
                ax.add_collection(ellipse_collection([ex["mean"]], [ex["cov"]], n_sigma, [col], alpha=0.18, lw=1.6))
                xy = np.asarray(ex["mean"], dtype=float)
                pts.append(_ellipse_extent([xy], [ex["cov"]], n_sigma))
            else:
                xy = np.asarray(ex["point"], dtype=float)
                pts.append(xy[None])
            ax.plot(*xy, marker="*", ms=13, color=col, mec=INK, mew=0.6, zorder=4)
            _thumbnail(ax, ex["image"], xy, offsets[k % 4], color=col)
        _frame_equal(ax, pts, 0.12, title)
    fig.tight_layout()
    return fig, axes


def mixture_example(centroids, class_ids, image, comp_means, comp_covs, highlight=(), n_digits: int = 2,
                    point_centroids=None, point_xy=None, sigmas=(1, 2, 3)):
    """Figure 1b: the mixture embedding of one ambiguous image over the class centroids.

    comp_means (C, 2) and comp_covs (C, 2[, 2]) of the input's components; ``highlight``
    the classes it hedges between (e.g. (17, 47)). With ``point_centroids`` and
    ``point_xy`` a left panel shows where a point model puts the same image.
    """
    two = point_centroids is not None and point_xy is not None
    fig, axes = _figure(1, 2 if two else 1, figsize=(11 if two else 6, 5.2), squeeze=False)
    axes = axes[0]
    hl = set(int(h) for h in highlight)
    panels = []
    if two:
        panels.append((axes[0], np.asarray(point_centroids, dtype=float), None, "point embedding"))
    panels.append((axes[-1], np.asarray(centroids, dtype=float), (comp_means, comp_covs),
                   f"{len(np.asarray(comp_means))}-component mixture"))
    for ax, cent, comps, title in panels:
        ids = np.asarray(class_ids)
        grey = ~np.isin(ids, list(hl))
        ax.scatter(cent[grey, 0], cent[grey, 1], marker="s", s=28, color="#bbbbbb", edgecolors="#888888", lw=0.3)
        for c in hl:
            j = np.flatnonzero(ids == c)
            if len(j):
                ax.scatter(cent[j, 0], cent[j, 1], marker="s", s=80, color=TAB10[3], edgecolors=INK, zorder=4)
                ax.annotate(f"{c:0{n_digits}d}", cent[j[0]], xytext=(0, 8), textcoords="offset points",
                            ha="center", fontsize=10, fontweight="bold", color=INK)
        pts = [cent]
        if comps is None:
            xy = np.asarray(point_xy, dtype=float)
            ax.plot(*xy, marker="*", ms=15, color=TAB10[0], mec=INK, zorder=5)
        else:
            means, covs = np.asarray(comps[0], dtype=float), as_covs(comps[1])
            for s in sorted(sigmas, reverse=True):
                ax.add_collection(ellipse_collection(means, covs, s, [TAB10[0]], alpha=0.10, lw=1.0))
            ax.plot(means[:, 0], means[:, 1], ls="", marker="*", ms=13, color=TAB10[0], mec=INK, zorder=5)
            pts.append(_ellipse_extent(means, covs, max(sigmas)))
            xy = means.mean(0)
        _thumbnail(ax, image, xy, (70, 60), zoom=0.9, color=TAB10[0])
        _frame_equal(ax, pts, 0.1, title)
    fig.tight_layout()
    return fig, axes


def mixture_embeddings(rows: Sequence[Mapping], n_digits: int = 2, color_by: int = 0, n_sigma: float = 1.0):
    """Figure 7: MoG embeddings, clean (left) vs corrupt (right); one row per C.

    ``rows``: dicts with ``title`` and ``clean`` / ``corrupt`` = (means (B, C, 2),
    vars (B, C, 2), labels (B,)). Each component is a 1-sigma ellipse; the
    components of one input are joined by a thin line.
    """
    fig, axes = _figure(len(rows), 2, figsize=(10, 4.6 * len(rows)), squeeze=False)
    for r, row in enumerate(rows):
        ext = []
        for c, side in enumerate(("clean", "corrupt")):
            ax = axes[r, c]
            means, var, labels = (np.asarray(a) for a in row[side])
            b, cc, _ = means.shape
            cols = digit_colours(labels, color_by, n_digits)
            ax.add_collection(ellipse_collection(means.reshape(-1, 2), var.reshape(-1, 2), n_sigma,
                                                 np.repeat(cols, cc, 0), alpha=0.12, edge_alpha=0.7, lw=0.6))
            segs = [means[i][np.r_[np.arange(cc), 0] if cc > 2 else np.arange(cc)] for i in range(b)]
            ax.add_collection(LineCollection(segs, colors=cols, linewidths=0.7, alpha=0.8))
            ax.scatter(means[..., 0].ravel(), means[..., 1].ravel(), s=4, c=np.repeat(cols, cc, 0), zorder=3)
            ax.set_title(f"{row.get('title', '')} — {side}")
            ext.append(_ellipse_extent(means.reshape(-1, 2), var.reshape(-1, 2), n_sigma))
        xl, yl = _limits(ext)
        for ax in axes[r]:
            ax.set_xlim(*xl)
            ax.set_ylim(*yl)
            ax.set_aspect("equal", adjustable="box")
    _digit_legend(axes[0, 1], "tens digit" if n_digits == 2 and color_by == 0 else f"digit {color_by + 1}",
                  loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig, axes


def ellipsoid_mesh(mean, var, n_sigma: float = 1.0, n: int = 14) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, z), each (n, n): the n-sigma ellipsoid of N(mean, diag(var)) in 3D (or a full (3, 3) cov).

    Every point p satisfies (p - m)^T Sigma^-1 (p - m) = n_sigma^2.
    """
    m = np.asarray(mean, dtype=float)
    v = np.asarray(var, dtype=float)
    if m.shape != (3,):
        raise InputError(f"mean must be (3,); got {m.shape}")
    cov = np.diag(v) if v.shape == (3,) else v
    if cov.shape != (3, 3):
        raise InputError(f"var must be (3,) or (3, 3); got {v.shape}")
    vals, vecs = np.linalg.eigh(0.5 * (cov + cov.T))
    a = vecs * np.sqrt(np.clip(vals, 0, None))
    u, w = np.meshgrid(np.linspace(0, 2 * np.pi, n), np.linspace(0, np.pi, n))
    sphere = np.stack([np.cos(u) * np.sin(w), np.sin(u) * np.sin(w), np.cos(w)])  # (3, n, n)
    pts = m[:, None, None] + n_sigma * np.einsum("ij,jkl->ikl", a, sphere)
    return pts[0], pts[1], pts[2]


def ellipsoids_3d(clean_mean, clean_var, corrupt_mean, corrupt_var, labels, n_digits: int = 3,
                  color_by: int = 0, n_sigma: float = 1.0, n: int = 10, height: int = 520):
    """Figure 8: 3D Gaussian embeddings of clean (left) and corrupt (right) images, as a plotly figure.

    One translucent ellipsoid per input (coloured by the digit at ``color_by``);
    rotate, zoom and hover in JupyterLab. Both scenes share their axis ranges.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    labels = np.asarray(labels)

    digits = digit_at(labels, color_by, n_digits)
    hexes = [matplotlib.colors.to_hex(c) for c in TAB10]
    fig = make_subplots(rows=1, cols=2, specs=[[{"type": "scene"}, {"type": "scene"}]],
                        subplot_titles=("clean", "corrupt"), horizontal_spacing=0.02)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for col, (means, var) in enumerate(((clean_mean, clean_var), (corrupt_mean, corrupt_var)), start=1):
        means, var = np.asarray(means, dtype=float), np.asarray(var, dtype=float)
        for i in range(len(means)):
            x, y, z = (np.round(a, 4) for a in ellipsoid_mesh(means[i], var[i], n_sigma, n))  # small JSON
            lo = np.minimum(lo, [x.min(), y.min(), z.min()])
            hi = np.maximum(hi, [x.max(), y.max(), z.max()])
            c = hexes[digits[i]]
            fig.add_trace(go.Surface(x=x, y=y, z=z, colorscale=[[0, c], [1, c]], showscale=False, opacity=0.35,
                                     showlegend=False,
                                     hovertemplate=f"class {labels[i]:0{n_digits}d}<extra></extra>"), row=1, col=col)
        fig.add_trace(go.Scatter3d(x=means[:, 0].round(4), y=means[:, 1].round(4), z=means[:, 2].round(4), mode="markers",
                                   marker=dict(size=2, color=[hexes[d] for d in digits]), showlegend=False,
                                   hoverinfo="skip"), row=1, col=col)
    pad = 0.05 * float((hi - lo).max()) if np.isfinite(lo).all() else 0.0
    axis = lambda k, t: dict(range=[lo[k] - pad, hi[k] + pad], title=t, backgroundcolor=FACE, gridcolor="#dddddd")  # noqa: E731
    scene = dict(xaxis=axis(0, "z₁"), yaxis=axis(1, "z₂"), zaxis=axis(2, "z₃"), aspectmode="cube")
    fig.update_layout(scene=scene, scene2=scene, height=height, paper_bgcolor=FACE, plot_bgcolor=FACE,
                      font=dict(color=INK), margin=dict(l=0, r=0, t=40, b=0),
                      title=dict(text=f"3D Gaussian embeddings ({n_sigma:g}σ ellipsoids), colour = digit "
                                      f"{color_by + 1}", x=0.5))
    return fig


# =============================================================================== notebook 03


def centroids_by_digit(centroids: Mapping[str, np.ndarray], class_ids, n_digits: int = 2):
    """Figure 10: class centroids of each model (rows) coloured by ones digit (left) and tens digit (right).

    ``centroids``: model name -> (K, 2) centroids (e.g. {"point": ..., "HIB": ...}).
    """
    names = list(centroids)
    fig, axes = _figure(len(names), 2, figsize=(9.5, 4.3 * len(names)), squeeze=False)
    for r, name in enumerate(names):
        xy = np.asarray(centroids[name], dtype=float)
        for c, (pos, what) in enumerate(((n_digits - 1, "ones"), (0, "tens"))):
            ax = axes[r, c]
            _centroid_squares(ax, xy, class_ids, n_digits, color_by=pos, size=50, fontsize=6)
            ax.set_title(f"{name}: coloured by {what} digit")
            ax.set_aspect("equal", adjustable="datalim")
    _digit_legend(axes[0, 1], "digit", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig, axes


def number_line_figure(lines: Mapping[str, object], n_digits: int = 2, rank: bool = True):
    """Figure 11: each model's classes in number-line order, coloured by ones digit.

    ``lines``: model name -> `hib_analysis.NumberLine`. Adjacent classes sharing a digit
    are joined by a bar underneath (the runs of App. D). ``rank``: x = rank (readable
    labels) instead of the raw 1D centroid.
    """
    names = list(lines)
    k_max = max(len(lines[n].order) for n in names)
    fig, axes = _figure(len(names), 1, figsize=(max(10, 0.16 * k_max), 1.5 * len(names) + 0.6), squeeze=False)

    for ax, name in zip(axes[:, 0], names):
        nl = lines[name]
        x = np.arange(len(nl.order)) if rank else nl.positions
        ones = digit_at(nl.order, n_digits - 1, n_digits)
        ax.scatter(x, np.zeros_like(x, dtype=float), marker="s", s=60, c=[TAB10[d] for d in ones], edgecolors=INK,
                   lw=0.3, zorder=3)
        for xi, lab in zip(x, nl.labels):
            ax.text(xi, 0.5, lab, rotation=90, ha="center", va="bottom", fontsize=6.5, color=INK)
        segs = [[(x[t], -0.6), (x[t + 1], -0.6)] for t in np.flatnonzero(nl.shared)]
        ax.add_collection(LineCollection(segs, colors=INK, linewidths=2.5))
        ax.set_ylim(-1.2, 2.2)
        ax.set_yticks([])
        ax.set_xlim(x.min() - 1, x.max() + 1) if rank else None
        ax.set_title(f"{name}: {int(nl.shared.sum())} of {len(nl.order) - 1} neighbours share a digit",
                     fontsize=10, loc="left")
        for s in ("left", "right", "top"):
            ax.spines[s].set_visible(False)
    axes[-1, 0].set_xlabel("rank on the number line" if rank else "z")
    _digit_legend(axes[0, 0], "ones digit", loc="lower left", bbox_to_anchor=(1.0, -0.2))
    fig.tight_layout()
    return fig, axes


def beta_ellipses(panels: Sequence[Mapping], n_digits: int = 2, color_by: int = 0, n_sigma: float = 1.0,
                  share: bool = True, unit_circle: bool = True):
    """Figure 12: embeddings of corrupt test images for increasing KL weight beta (left to right).

    ``panels``: dicts with ``beta``, ``means`` (B, 2), ``covs`` (B, 2[, 2]) (a 2D view of the
    embedding; for D > 2 a linear projection) and ``labels`` (B,). ``unit_circle`` draws the
    prior N(0, I)'s n-sigma circle, which the embeddings approach as beta grows.
    """
    fig, axes = _figure(1, len(panels), figsize=(3.3 * len(panels), 3.6), squeeze=False,
                        sharex=share, sharey=share)
    ext = []
    for ax, p in zip(axes[0], panels):
        cols = digit_colours(p["labels"], color_by, n_digits)
        ax.add_collection(ellipse_collection(p["means"], p["covs"], n_sigma, cols, alpha=0.10, edge_alpha=0.6, lw=0.6))
        ax.scatter(*np.asarray(p["means"]).T, s=3, c=cols, zorder=3)
        if unit_circle:
            ax.add_patch(Ellipse((0, 0), 2 * n_sigma, 2 * n_sigma, fill=False, ec=INK, ls="--", lw=1))
        ax.set_title(f"β = {p['beta']:g}")
        ax.set_aspect("equal", adjustable="box")
        ext.append(_ellipse_extent(p["means"], p["covs"], n_sigma))
        if unit_circle:
            ext.append(np.array([[-n_sigma, -n_sigma], [n_sigma, n_sigma]]))
        if not share:
            xl, yl = _limits(ext[-2:] if unit_circle else ext[-1:])
            ax.set_xlim(*xl)
            ax.set_ylim(*yl)
    if share:
        xl, yl = _limits(ext)
        axes[0, 0].set_xlim(*xl)
        axes[0, 0].set_ylim(*yl)
    fig.tight_layout()
    return fig, axes[0]


def occlusion_view(image, boxes, centroids, class_ids, mean, cov, eta: float, n_digits: int = 2,
                   comp_means=None, comp_covs=None, title: str = "", extent=None, sigmas=(1, 2, 3)):
    """One occluded input: the image (left) and its embedding over the class centroids (right).

    ``mean`` (2,) and ``cov`` (2, 2) of the (moment-matched) embedding; optional component
    means/covs for mixtures; eta printed in the title. Used by the occlusion widget.
    """
    fig, (ax_i, ax_m) = _figure(1, 2, figsize=(10, 4.2), gridspec_kw=dict(width_ratios=[1, 1.5]))
    _img(ax_i, image, f"η(x) = {eta:.3f}", boxes)
    cent = np.asarray(centroids, dtype=float)
    _centroid_squares(ax_m, cent, class_ids, n_digits, size=26, fontsize=5.5, alpha=0.6)
    means = np.asarray(mean, dtype=float)[None] if comp_means is None else np.asarray(comp_means, dtype=float)
    covs = as_covs(np.asarray(cov)[None] if comp_covs is None else comp_covs)
    for s in sorted(sigmas, reverse=True):
        ax_m.add_collection(ellipse_collection(means, covs, s, [INK], alpha=0.08, lw=1.0))
    ax_m.plot(*np.asarray(mean, dtype=float), marker="*", ms=14, color=TAB10[3], mec=INK, zorder=5)
    if extent is None:
        xl, yl = _limits([cent, _ellipse_extent(means, covs, max(sigmas))])
    else:
        xl, yl = extent
    ax_m.set_xlim(*xl)
    ax_m.set_ylim(*yl)
    ax_m.set_aspect("equal", adjustable="box")
    ax_m.set_title(title or "embedding over the class centroids")
    fig.tight_layout()
    return fig, (ax_i, ax_m)


def occlusion_sweep(images, boxes, means, covs, etas, centroids, class_ids, n_digits: int = 2,
                    labels: Sequence[str] | None = None, n_sigma: float = 2.0):
    """A growing occluder, step by step: thumbnails (top) and their n-sigma ellipses on one map (bottom).

    images (S, H, W), boxes [(n, 4)] per step, means (S, 2), covs (S, 2, 2), etas (S,): one
    row per occlusion step of the same test image (HIB sec. 2.4: eta grows as evidence
    disappears; Figure 4: the ellipse stretches towards the classes the hidden digit allows).
    """
    s = len(images)
    if not (len(boxes) == len(means) == len(covs) == len(etas) == s) or s == 0:
        raise InputError("images, boxes, means, covs and etas need the same non-zero length")
    fig = plt.figure(figsize=(max(8, 1.9 * s), 7.2), facecolor=FACE)
    gs = fig.add_gridspec(2, s, height_ratios=[1, 4.2])
    cmap = matplotlib.colormaps["viridis"]
    cols = [cmap(k / max(1, s - 1)) for k in range(s)]
    for k in range(s):
        ax = fig.add_subplot(gs[0, k])
        _img(ax, images[k], f"{'' if labels is None else labels[k] + ', '}η={etas[k]:.3f}", boxes[k])
        for sp in ax.spines.values():
            sp.set_edgecolor(cols[k])
            sp.set_linewidth(2.5)
    ax = fig.add_subplot(gs[1, :])
    ax.set_facecolor(FACE)
    cent = np.asarray(centroids, dtype=float)
    _centroid_squares(ax, cent, class_ids, n_digits, size=26, fontsize=6, alpha=0.55)
    means = np.asarray(means, dtype=float)
    covs = as_covs(covs)
    ax.add_collection(ellipse_collection(means, covs, n_sigma, cols, alpha=0.10, edge_alpha=1.0, lw=1.6))
    ax.plot(means[:, 0], means[:, 1], color="#555555", lw=1, zorder=4)
    ax.scatter(means[:, 0], means[:, 1], c=cols, s=50, marker="*", edgecolors=INK, lw=0.5, zorder=5)
    xl, yl = _limits([cent, _ellipse_extent(means, covs, n_sigma)])
    ax.set_xlim(*xl)
    ax.set_ylim(*yl)
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(f"{n_sigma:g}σ ellipses as the occluder grows (dark → light)")
    fig.tight_layout()
    return fig, ax
