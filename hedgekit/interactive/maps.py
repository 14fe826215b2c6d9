"""The 2D map of one model's embedding space: the input's ellipses, its trail, the zoom, other models' marks.

Plain numpy figure data (`MapLayers`), drawn by `hedgekit.viz.interactive.embedding_map` (HIB Fig. 3-4
style): n-sigma ellipse contours of every mixture component, the trail of earlier means and 1-sigma
ellipses (`update_trail`), a square around the input (`focus_extent`), and where a point model's embedding
sits on another model's map (`align_tables`, `anchor_point`). `sqrt_det` is the ellipse size shown beside it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from hedgekit.errors import InputError
from hedgekit.evaluation.centroids import CentroidTable
from hedgekit.viz.geometry import Similarity, ellipse_points, similarity_fit

if TYPE_CHECKING:
    from hedgekit.interactive.occlusion import Analysis

__all__ = ["MapLayers", "sqrt_det", "update_trail", "map_layers", "focus_extent", "align_tables", "anchor_point"]


def sqrt_det(cov) -> float:
    """sqrt(det Sigma) of a (d, d) covariance: the size of its ellipses (in 2D, the 1-sigma ellipse's area / pi).

    A tiny negative determinant (round-off on a flat ellipse) counts as 0."""
    cov = np.asarray(cov, dtype=float)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise InputError(f"a covariance must be a square (d, d) matrix; got shape {cov.shape}")
    return float(np.sqrt(max(np.linalg.det(cov), 0.0)))


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


def align_tables(src: CentroidTable, dst: CentroidTable) -> Similarity:
    """Similarity transform taking ``src``'s 2D view onto ``dst``'s, fitted on their shared classes."""
    shared, i, j = np.intersect1d(src.class_ids, dst.class_ids, return_indices=True)
    if len(shared) < 2:
        raise InputError("the two centroid tables share fewer than 2 classes")
    return similarity_fit(src.xy[i], dst.xy[j])


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
