"""ipywidgets interactions of the HIB notebooks (returned, displayed by the notebook).

* `occlusion_explorer`: sliders place a black rectangle on one test image; the
  image, its embedding's 1/2/3-sigma ellipses over the class centroids and eta(x)
  (HIB eq. 9) are recomputed live (`hedgekit.interactive.occlusion.analyse`, deterministic).
* `row_occlusion_slider`: one slider hides the top rows of an image; its ellipse over the class centroids and
  eta(x) are redrawn (notebook 02's Explore, on the live model).
* `beta_selector`: toggle buttons switch between models trained with different KL
  weights beta (HIB App. E, Figure 12), already loaded from the checkpoint cache.

Both also work without a front end (e.g. under papermill): the initial figure is
drawn into the widget's output area, and `value`-setting from code redraws it.
"""
from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np

from hedgekit.data.occlusion import DIGIT_SIZE
from hedgekit.errors import InputError
from hedgekit.interactive.occlusion import analyse
from hedgekit.papers.hib.figures import beta_ellipses, occlusion_view

__all__ = ["occlusion_explorer", "row_occlusion_slider", "beta_selector"]


def _show(out, fig) -> None:
    """Replace what the widget's output area ``out`` shows by ``fig`` (then closed: the area keeps its image)."""
    from IPython.display import display

    out.clear_output(wait=True)
    with out:
        display(fig)
    plt.close(fig)


def occlusion_explorer(model, table, image, title: str = "", n_points: int = 4096):
    """A live occlusion control for one clean test ``image`` under ``model``.

    Args:
        model: trained `EmbeddingNet` (D = 2, or D > 2 shown through ``table``'s projection).
        table: its `hedgekit.evaluation.centroids.CentroidTable` (class centroids and 2D view).
        image: (28, 28N) uint8 clean image.
    Returns:
        an ``ipywidgets.VBox``; ``box.children[0]`` holds the sliders, and the function
        ``box.analyse()`` returns the current `hedgekit.interactive.occlusion.Analysis`.
    """
    import ipywidgets as W

    img = np.asarray(image)
    n_digits = img.shape[1] // DIGIT_SIZE
    digit = W.Dropdown(options=[(f"digit {k + 1}", k) for k in range(n_digits)], value=0, description="occlude",
                       layout=W.Layout(width="170px"))
    top = W.IntSlider(0, 0, DIGIT_SIZE - 1, description="top", continuous_update=False)
    left = W.IntSlider(0, 0, DIGIT_SIZE - 1, description="left", continuous_update=False)
    height = W.IntSlider(0, 0, DIGIT_SIZE, description="height", continuous_update=False)
    width = W.IntSlider(0, 0, DIGIT_SIZE, description="width", continuous_update=False)
    out = W.Output()
    xy = table.xy
    state: dict = {}

    def boxes():
        h = min(height.value, DIGIT_SIZE - top.value)
        w = min(width.value, DIGIT_SIZE - left.value)
        if h <= 0 or w <= 0:
            return np.zeros((0, 4), dtype=np.int64)
        return np.array([[top.value, DIGIT_SIZE * digit.value + left.value, h, w]], dtype=np.int64)

    def current():
        return analyse(model, img, boxes(), table, n_points=n_points)

    def redraw(*_):
        a = current()
        state["analysis"] = a
        comp = None if a.n_components == 1 else (a.comp_xy, a.comp_cov_xy)
        fig, _ = occlusion_view(a.image, a.boxes, xy, table.class_ids, a.xy, a.cov_xy, a.eta, table.n_digits,
                                comp_means=None if comp is None else comp[0],
                                comp_covs=None if comp is None else comp[1],
                                title=title or f"{100 * a.covered:.0f}% of the image hidden; "
                                               f"top match {a.top[0][0]:0{table.n_digits}d}" if a.top else title)
        _show(out, fig)

    for w in (digit, top, left, height, width):
        w.observe(redraw, names="value")
    redraw()
    box = W.VBox([W.HBox([digit, W.VBox([top, left]), W.VBox([height, width])]), out])
    box.analyse = lambda: state["analysis"]  # type: ignore[attr-defined]
    return box


def row_occlusion_slider(model, image, centroids, class_ids=None, description: str = "rows hidden"):
    """A slider that hides the top ``k`` rows of ``image`` (all its digits) and redraws its embedding under ``model``:
    the 1/2/3-sigma ellipse over the class ``centroids`` (C, 2) and eta(x) (HIB eq. 9).

    Every name it needs is its own (closed over when it is built), so a cell that later rebinds the notebook's names
    cannot break it. Returns an ``ipywidgets.VBox``: ``box.children[0]`` is the slider, and
    ``box.analyse()`` returns the current `hedgekit.interactive.occlusion.Analysis`."""
    import ipywidgets as W

    img, centroids = np.asarray(image), np.asarray(centroids)
    class_ids = np.arange(len(centroids)) if class_ids is None else np.asarray(class_ids)
    height, n_digits = img.shape[0], img.shape[1] // DIGIT_SIZE
    rows = W.IntSlider(value=0, min=0, max=height, description=description, continuous_update=False)
    out = W.Output()
    state: dict = {}

    def redraw(*_):
        k = rows.value
        a = state["analysis"] = analyse(model, img, [[0, 0, k, img.shape[1]]] if k else [])
        fig, _ = occlusion_view(a.image, a.boxes, centroids, class_ids, a.xy, a.cov_xy, a.eta, n_digits=n_digits,
                                title=f"{k} of {height} rows hidden; trace Σ = {a.trace:.4f}")
        _show(out, fig)

    rows.observe(redraw, names="value")
    redraw()
    box = W.VBox([rows, out])
    box.analyse = lambda: state["analysis"]  # type: ignore[attr-defined]
    return box


def beta_selector(panels: Mapping[float, Mapping], n_digits: int = 2, color_by: int = 0):
    """Toggle between embeddings of models trained with different beta (Figure 12, one panel at a time).

    ``panels``: beta -> dict(means (B, 2), covs (B, 2[, 2]), labels (B,)) from cached models.
    Returns an ``ipywidgets.VBox`` whose first child is the ToggleButtons.
    """
    import ipywidgets as W

    if not panels:
        raise InputError("beta_selector needs at least one cached model")
    betas = sorted(panels)
    buttons = W.ToggleButtons(options=[(f"β = {b:g}", b) for b in betas], value=betas[len(betas) // 2],
                              description="KL weight")
    out = W.Output()
    # Shared limits over every beta, so switching shows growth, not rescaling.
    allp = np.concatenate([np.asarray(panels[b]["means"], dtype=float) for b in betas])

    def redraw(*_):
        b = buttons.value
        p = dict(panels[b], beta=b)
        fig, axes = beta_ellipses([p], n_digits, color_by, share=False)
        fig.set_size_inches(5.2, 4.8)
        lo, hi = allp.min(0), allp.max(0)
        pad = 0.25 * float((hi - lo).max() + 1e-9)
        axes[0].set_xlim(min(lo[0] - pad, -1.2), max(hi[0] + pad, 1.2))
        axes[0].set_ylim(min(lo[1] - pad, -1.2), max(hi[1] + pad, 1.2))
        _show(out, fig)

    buttons.observe(redraw, names="value")
    redraw()
    return W.VBox([buttons, out])
