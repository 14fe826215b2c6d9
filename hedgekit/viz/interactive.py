"""Plotly figures of the occlusion playground (returned, never shown).

Every function takes plain data (`hedgekit.interactive` results, numpy arrays) and
returns a ``plotly.graph_objects.Figure``. Colours that must contrast with the
background (ellipses, the mixture mean, labels) come from ``dark``: pass
``dark=True`` on a dark background. Backgrounds are transparent, so the host's
theme (Streamlit, JupyterLab) shows through; class colours use the tab10 palette,
which reads on both.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from hedgekit.errors import InputError

TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
ACCENT = "#e0218a"  # point-model marker: magenta, distinct from tab10 and readable on both themes
OCCLUDER = "#ff9f1c"
DASH = {1.0: "solid", 2.0: "dash", 3.0: "dot"}
TINY = 0.03  # an ellipse narrower than this share of the map's span gets a pointer (`embedding_map`)


def ink(dark: bool) -> str:
    """Foreground colour for the theme."""
    return "#f2f2f2" if dark else "#1a1a1a"


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _figure(data: list[dict], layout: dict) -> go.Figure:
    """A Figure from plain trace/layout dicts, skipping plotly's per-property validation.

    Validation costs ~30 ms per figure, more than the whole model update; the specs
    below are checked once by the tests (``go.Figure(fig.to_dict())`` validates).
    """
    spec = {"data": data, "layout": layout}
    try:
        return go.Figure(spec, _validate=False)
    except TypeError:  # a plotly without the private flag: validate
        return go.Figure(spec)


def _layout(dark: bool, height: int, **kw) -> dict:
    layout = dict(height=height, margin=dict(l=10, r=10, t=40, b=10), paper_bgcolor="rgba(0,0,0,0)",
                  plot_bgcolor="rgba(0,0,0,0)", font=dict(color=ink(dark)))
    layout.update(kw)
    return layout


def _polylines(curves: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate (n, 2) curves into one x/y array with NaN breaks (one trace, fast to draw)."""
    if not len(curves):
        return np.zeros(0), np.zeros(0)
    gap = np.full((1, 2), np.nan)
    pts = np.concatenate([np.concatenate([np.asarray(c, dtype=float), gap]) for c in curves])
    return pts[:, 0], pts[:, 1]


# ---------------------------------------------------------------------------- image
def image_figure(image: np.ndarray, boxes=(), pending=(), title: str | None = None, dark: bool = False,
                 height: int = 260) -> go.Figure:
    """The (H, W) image as the model sees it, with the occluding rectangles outlined.

    Pixel (r, c) is centred at (x=c, y=r), y pointing down. An invisible marker on
    every pixel makes plotly's box-select tool (the default drag mode here) report
    the dragged rectangle; convert it with `hedgekit.interactive.inputs.box_from_drag`.
    ``pending`` boxes are drawn dashed (e.g. a rectangle set but not yet applied).
    """
    img = np.asarray(image)
    if img.ndim != 2:
        raise InputError(f"image must be (H, W); got shape {img.shape}")
    h, w = img.shape
    yy, xx = np.mgrid[0:h, 0:w]
    data = [
        dict(type="heatmap", z=img, colorscale=[[0.0, "#000000"], [1.0, "#ffffff"]], zmin=0,
             zmax=255 if img.dtype == np.uint8 else 1, showscale=False,
             hovertemplate="row %{y}, col %{x}: %{z}<extra></extra>"),
        dict(type="scatter", x=xx.ravel(), y=yy.ravel(), mode="markers", hoverinfo="none", showlegend=False,
             marker=dict(size=4, opacity=0), name="pixels"),
    ]
    shapes = []
    for dashed, group in ((False, boxes), (True, pending)):
        for top, left, bh, bw in np.asarray(group, dtype=float).reshape(-1, 4):
            shapes.append(dict(type="rect", x0=left - 0.5, x1=left + bw - 0.5, y0=top - 0.5, y1=top + bh - 0.5,
                               line=dict(color=OCCLUDER, width=2, dash="dash" if dashed else "solid"),
                               fillcolor=_rgba(OCCLUDER, 0.18)))
    for j in range(1, max(1, w // h)):  # thin separator between digit cells
        shapes.append(dict(type="line", x0=j * h - 0.5, x1=j * h - 0.5, y0=-0.5, y1=h - 0.5,
                           line=dict(color=_rgba("#888888", 0.6), width=1, dash="dot")))
    layout = _layout(
        dark, height, dragmode="select", title=dict(text=title) if title else None, clickmode="none",
        showlegend=False, shapes=shapes, uirevision="image", margin=dict(l=10, r=10, t=30 if title else 10, b=10),
        xaxis=dict(range=[-0.5, w - 0.5], showgrid=False, zeroline=False, showticklabels=False, fixedrange=True),
        yaxis=dict(range=[h - 0.5, -0.5], showgrid=False, zeroline=False, showticklabels=False, fixedrange=True,
                   scaleanchor="x", scaleratio=1),
    )
    return _figure(data, layout)


# ---------------------------------------------------------------------------- map
def embedding_map(table, layers, color_by: str = "tens", *, dark: bool = False, show_trail: bool = True,
                  show_labels: bool = True, show_legend: bool = True, point_name: str = "point model",
                  title: str | None = None, height: int = 520, extent=None) -> go.Figure:
    """The 2D embedding map: class centroids, the input's n-sigma ellipses, trail and point overlay.

    Args:
        table: `hedgekit.evaluation.centroids.CentroidTable` (centroids, seen flags, projection).
        layers: `hedgekit.interactive.maps.MapLayers` from `map_layers`.
        color_by: "tens" or "ones" (for N = 2; the digit position that colours a centroid).
        extent: optional ((xmin, xmax), (ymin, ymax)); default fits everything shown.
    """
    positions = {"tens": 0, "ones": 1}
    if color_by not in positions:
        raise InputError(f"color_by must be 'tens' or 'ones'; got {color_by!r}")
    fg = ink(dark)
    data: list[dict] = []
    xy = table.xy
    digit = table.digit(min(positions[color_by], table.n_digits - 1))
    labels = np.array(table.labels())
    for seen in (True, False):
        m = table.seen == seen
        if not m.any():
            continue
        colours = [TAB10[d] for d in digit[m]]
        data.append(dict(
            type="scatter", x=xy[m, 0], y=xy[m, 1], mode="markers+text" if show_labels else "markers",
            text=labels[m], textposition="top center", textfont=dict(size=9, color=fg),
            marker=dict(size=8, color=colours, symbol="circle" if seen else "circle-open",
                        line=dict(width=0.5 if seen else 1.5, color=fg if seen else colours)),
            name="centroids, seen classes" if seen else "centroids, unseen classes (zero-shot)",
            hovertemplate="class %{text}<extra></extra>",
        ))
    if show_trail and len(layers.trail_path) > 1:
        if layers.trail_ellipses:
            tx, ty = _polylines(layers.trail_ellipses)
            data.append(dict(type="scatter", x=tx, y=ty, mode="lines", line=dict(color=_rgba("#888888", 0.55), width=1),
                             name="trail: earlier 1σ ellipses", hoverinfo="skip"))
        p = layers.trail_path
        data.append(dict(
            type="scatter", x=p[:, 0], y=p[:, 1], mode="lines+markers",
            line=dict(color=_rgba("#888888", 0.9), width=1.5),
            marker=dict(size=5, color=layers.trail_eta, colorscale="Viridis", cmin=0, cmax=1),
            name="trail: earlier means", customdata=layers.trail_eta,
            hovertemplate="η = %{customdata:.3f}<extra>trail</extra>"))
    if layers.point is not None:  # under the input's own marks, which it may cover
        data.append(dict(
            type="scatter", x=[layers.point[0]], y=[layers.point[1]], mode="markers",
            marker=dict(size=13, symbol="x", color=_rgba(ACCENT, 0.8), line=dict(width=1, color=fg)), name=point_name,
            hovertemplate="(%{x:.3f}, %{y:.3f})<extra>" + point_name + "</extra>"))
    data.append(dict(  # under the ellipses, so a small 1σ ellipse stays visible
        type="scatter", x=[layers.mean[0]], y=[layers.mean[1]], mode="markers",
        marker=dict(size=12, symbol="star", color=_rgba(fg, 0.45), line=dict(width=1, color=ACCENT)),
        name="this input (point)" if layers.is_point else "this input (mean)",
        hovertemplate="(%{x:.3f}, %{y:.3f})<extra>this input</extra>"))
    by_sigma: dict[float, list] = {}
    for _, s, curve in layers.ellipses:
        by_sigma.setdefault(s, []).append(curve)
    for s in sorted(by_sigma):
        ex, ey = _polylines(by_sigma[s])
        trace = dict(type="scatter", x=ex, y=ey, mode="lines", name=f"{s:g}σ ellipse", hoverinfo="skip",
                     line=dict(color=fg, width=2.5 if s == min(by_sigma) else 1.3, dash=DASH.get(s, "solid")))
        if s == min(by_sigma):
            trace.update(fill="toself", fillcolor=_rgba(fg, 0.12))
        data.append(trace)
    if len(layers.components) > 1:
        data.append(dict(
            type="scatter", x=layers.components[:, 0], y=layers.components[:, 1], mode="markers+text",
            text=[f"c{c + 1}" for c in range(len(layers.components))], textposition="bottom center",
            textfont=dict(color=fg), marker=dict(size=9, symbol="diamond", color=fg),
            customdata=layers.weights, name="mixture components",
            hovertemplate="component %{text}, weight %{customdata:.2f}<extra></extra>"))
    if extent is None:
        pts = [xy, layers.mean[None]] + [c for _, _, c in layers.ellipses]
        if show_trail and len(layers.trail_path):
            pts.append(layers.trail_path)
        if layers.point is not None:
            pts.append(layers.point[None])
        allp = np.concatenate([np.asarray(p, dtype=float).reshape(-1, 2) for p in pts])
        lo, hi = allp.min(0), allp.max(0)
        pad = 0.06 * max(float((hi - lo).max()), 1e-6)
        extent = ((lo[0] - pad, hi[0] + pad), (lo[1] - pad, hi[1] + pad))
    annotations = []
    one_sigma = [c for _, s, c in layers.ellipses if s == min(by_sigma)] if by_sigma else []
    span = max(float(extent[0][1] - extent[0][0]), float(extent[1][1] - extent[1][0]))
    if one_sigma and max(float(np.ptp(np.asarray(c)[:, k])) for c in one_sigma for k in (0, 1)) < TINY * span:
        annotations.append(dict(x=float(layers.mean[0]), y=float(layers.mean[1]), ax=40, ay=-40, showarrow=True,
                                arrowhead=2, arrowcolor=ACCENT, font=dict(size=11, color=fg),
                                text=f"{min(by_sigma):g}σ ellipse: tiny at this zoom",
                                bgcolor="rgba(14,17,23,0.85)" if dark else "rgba(255,255,255,0.85)"))
    prime = "'" if table.projected else ""
    layout = _layout(
        dark, height, title=dict(text=title) if title else None, hovermode="closest", dragmode="pan",
        showlegend=show_legend, annotations=annotations,
        legend=dict(orientation="h", yanchor="top", y=-0.16, x=0, font=dict(size=11), entrywidth=0.5,
                    entrywidthmode="fraction"),  # two entries per row: the map keeps its height in narrow columns
        xaxis=dict(range=[float(v) for v in extent[0]], zeroline=False, title=dict(text=f"z₁{prime}")),
        yaxis=dict(range=[float(v) for v in extent[1]], zeroline=False, scaleanchor="x", scaleratio=1,
                   title=dict(text=f"z₂{prime}")),
    )
    return _figure(data, layout)


# ---------------------------------------------------------------------------- eta
def eta_gauge(eta: float, reference: float | None = None, *, floor: float | None = None, dark: bool = False,
              height: int = 210, title: str = "η(x) = 1 − p(m | x, x)") -> go.Figure:
    """A 0..1 gauge of eta(x) (HIB eq. 9); ``reference`` (e.g. the clean image's eta) as delta and marker.

    ``floor`` marks 1 - sigmoid(b), the smallest eta the model can give (zero variance).
    """
    if not np.isfinite(eta):
        raise InputError(f"eta must be finite; got {eta}")
    fg = ink(dark)
    gauge = dict(
        axis=dict(range=[0, 1], tickcolor=fg, tickvals=[0, 0.25, 0.5, 0.75, 1]),
        bar=dict(color=ACCENT, thickness=0.35), bgcolor="rgba(0,0,0,0)",
        steps=[dict(range=[0, 0.25], color=_rgba("#2ca02c", 0.25)),
               dict(range=[0.25, 0.5], color=_rgba("#bcbd22", 0.25)),
               dict(range=[0.5, 1], color=_rgba("#d62728", 0.22))],
    )
    trace = dict(type="indicator", mode="gauge+number", value=float(eta), gauge=gauge,
                 number=dict(valueformat=".3f", font=dict(color=fg)), title=dict(text=title, font=dict(size=14)))
    if reference is not None:
        gauge["threshold"] = dict(line=dict(color=fg, width=3), thickness=0.9, value=float(reference))
    if reference is not None and round(float(eta) - float(reference), 3) != 0:  # no "+0.000" when unchanged
        trace.update(mode="gauge+number+delta", delta=dict(reference=float(reference), valueformat=".3f",
                                                           increasing=dict(color="#d62728"),
                                                           decreasing=dict(color="#2ca02c")))
    annotations = []
    if floor is not None:
        annotations.append(dict(text=f"floor 1−σ(b) = {floor:.3f}", x=0.5, y=-0.05, xref="paper", yref="paper",
                                showarrow=False, font=dict(size=11, color=fg)))
    return _figure([trace], _layout(dark, height, margin=dict(l=25, r=25, t=50, b=20), annotations=annotations))


def top_classes_figure(top: Sequence[tuple[int, float]], n_digits: int = 2, *, dark: bool = False,
                       height: int = 200) -> go.Figure:
    """Horizontal bars of p(m | x, class centroid) for the top classes (most probable on top)."""
    fg = ink(dark)
    labels = [f"{c:0{n_digits}d}" for c, _ in top][::-1]
    probs = [float(p) for _, p in top][::-1]
    data = [dict(type="bar", x=probs, y=labels, orientation="h", marker=dict(color=ACCENT),
                 text=[f"{p:.2f}" for p in probs], textposition="auto",
                 hovertemplate="class %{y}: %{x:.3f}<extra></extra>")]
    layout = _layout(dark, height, margin=dict(l=10, r=10, t=10, b=10),
                     xaxis=dict(range=[0, 1], title=dict(text="p(m | x, centroid)"), color=fg),
                     yaxis=dict(type="category", color=fg))
    return _figure(data, layout)
