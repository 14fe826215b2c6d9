"""Everything a page draws of one model for one occluded input, in one call (`model_view`).

One update of a map page is

    a      = analyse(model, image, boxes, table)   # forward pass, eta, top-k, 2D geometry
    clean  = analyse(model, image, (), table).eta  # the clean image's eta, for the "vs clean" delta
    trail  = update_trail(trail, a)                # how the ellipse moved and grew
    layers = map_layers(a, trail)                  # ellipse contours etc. (figure data)
    extent = focus_extent(layers, table, ...)      # the "zoom on input" square

plus the ellipse size sqrt(det Sigma) (`hedgekit.interactive.maps.sqrt_det`): HIB sec. 2.4 eta, Fig. 3-4 ellipses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from hedgekit.evaluation.centroids import CentroidTable
from hedgekit.interactive.maps import MapLayers, focus_extent, map_layers, sqrt_det, update_trail
from hedgekit.interactive.occlusion import APP_POINTS, Analysis, analyse
from hedgekit.nets import EmbeddingNet

__all__ = ["ModelView", "model_view"]

Extent = tuple[tuple[float, float], tuple[float, float]]


@dataclass(frozen=True, eq=False)
class ModelView:
    """What a page draws of one model for one input (`model_view`)."""

    analysis: Analysis  # the occluded input (`hedgekit.interactive.occlusion.analyse`)
    eta_clean: float  # eta of the same image with nothing hidden
    trail: list[dict]  # the trail with this step (`update_trail`): what the page keeps for the next update
    layers: MapLayers  # the map's figure data
    sqrt_det: float  # sqrt(det Sigma) of the moment-matched 2D covariance: the ellipse size (0 for a point model)
    extent: Extent  # ((xmin, xmax), (ymin, ymax)) around the input and the classes it is zoomed on


def model_view(model: EmbeddingNet, image, boxes=(), table: CentroidTable | None = None, trail: Sequence[dict] = (),
               *, sigmas: Sequence[float] = (1, 2, 3), show_trail: bool = True, point_xy=None, focus_ids=None,
               remember: Callable[[Callable[[], float]], float] | None = None, n_points: int = APP_POINTS) -> ModelView:
    """Analyse ``image`` with ``boxes`` hidden under ``model`` and build what a page draws of it.

    Args:
        model, image, boxes, table: as for `hedgekit.interactive.occlusion.analyse` (``table``: the model's
            `CentroidTable`, or an SPE `PrototypeSet.table`).
        trail: the trail so far (`update_trail` steps, plain dicts); ``ModelView.trail`` is the new one.
        sigmas: the n-sigma ellipses drawn; ``show_trail``: whether the map draws the trail (it is kept anyway).
        point_xy: another model's mark on this map (`hedgekit.interactive.maps.anchor_point`), or None.
        focus_ids: the class ids the extent zooms on beside the input (default: the best match).
        remember: how the caller remembers the clean image's eta across updates: ``remember(compute)`` returns
            a remembered value or ``compute()`` (e.g. the app's session cache); None computes it every time.
        n_points: points per ellipse contour (`analyse`; the app's default `APP_POINTS`).
    """
    a = analyse(model, image, boxes, table, n_points=n_points)

    def clean() -> float:
        return analyse(model, image, (), table, n_points=n_points).eta

    new_trail = update_trail(trail, a)
    layers = map_layers(a, new_trail if show_trail else (), sigmas=sigmas, point_xy=point_xy)
    focus = a.top_ids[:1] if focus_ids is None else np.asarray(focus_ids)
    return ModelView(analysis=a, eta_clean=float(clean() if remember is None else remember(clean)), trail=new_trail,
                     layers=layers, sqrt_det=sqrt_det(a.cov_xy), extent=focus_extent(layers, table, focus))
