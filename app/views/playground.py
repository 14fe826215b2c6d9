"""Occlusion playground (home page): black out parts of a 2-digit image and watch the embedding hedge."""
from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

import cached
import input_widgets
import ui
from hedgekit.interactive.maps import anchor_point
from hedgekit.interactive.models import POINT_MODEL, app_models
from hedgekit.interactive.occlusion import analyse, eta_floor
from hedgekit.interactive.view import model_view
from hedgekit.viz import interactive as pi
from hedgekit.viz.geometry import sigma_mass
from state import AppState

EXPLAINER = """
**What am I looking at?** A *hedged instance embedding* (HIB, Oh et al. 2019) maps an
image not to a point but to a Gaussian (or a mixture of Gaussians) in a 2D space. Each
labelled dot on the right is the centroid of a class (00–99) over the clean test
images; colour shows its tens or ones digit, so you can see the space organise itself
by digit (HIB Fig. 4, App. D). Hollow dots are classes the model never saw in training.

Black out part of the image on the left (**drag a rectangle** on it, or use the buttons
and sliders). The star is the mean of the input's embedding and the ellipses are its
1σ, 2σ and 3σ contours (in 2D they hold 39%, 86% and 99% of the probability). Hide a
digit and the ellipse grows and stretches along the direction of the classes that
digit could be: the model *hedges*. The grey trail shows where the ellipse was before.

**η(x) = 1 − p(m | x, x)** (HIB eq. 9) is the chance that two samples of the same
input's embedding would be judged a mismatch: its uncertainty, computed
deterministically here. **Top-5** lists p(m | x, c) against each class centroid c
(match probabilities, one per class; they need not sum to 1). The magenta × is where
a *point* embedding model (no uncertainty) puts the same image: beside the class it
matches best, offset from that class as in its own space (scaled and rotated by the map
that best aligns the two models' centroids).
For the D=3 model everything is shown through a fixed linear projection W (PCA of the
centroids): means W^T μ and covariances W^T Σ W. It was trained with the paper's K = 8 samples
per input: at D = 3 the kit's usual K = 4 leaves every input the same small ellipse.

Notebooks:
"""


def sidebar() -> tuple[str, str, list[float], bool, bool]:
    """The model and display settings: (model choice, colour by, sigmas, trail shown, point-model overlay)."""
    state = AppState.get()
    with st.sidebar:
        state.widget(st.selectbox, "Model", "model", list(app_models()),
                     help="point = deterministic embedding; MoG-C = HIB with C Gaussian components (HIB sec. 2.2)")
        state.widget(st.radio, "Colour centroids by", "color", ["tens", "ones"], horizontal=True,
                     format_func=lambda v: f"{v} digit")
        state.widget(st.pills, "Ellipses", "sigmas", [1.0, 2.0, 3.0], selection_mode="multi",
                     format_func=lambda s: f"{s:g}σ")
        state.widget(st.radio, "Map view", "map_view", ["all classes", "zoom on input"], horizontal=True,
                     help="Zoom on the input's ellipses and its top-5 classes (small ellipses are hard to see on "
                          "the whole map)")
        state.widget(st.toggle, "Trail", "show_trail", help="Earlier means and 1σ ellipses of this image")
        state.widget(st.toggle, "Point-model overlay", "overlay",
                     help="Where a point-embedding model puts the same input")
        st.caption(f"Preset: `{cached.preset_or_stop()}` (env `HEDGEKIT_PRESET`)")
    return state.model, state.color, sorted(state.sigmas or []), state.show_trail, state.overlay


def render() -> None:
    st.title("Occlusion playground")
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAINER + ui.notebook_links("02", "03", "04"))
    choice, color_by, sigmas, show_trail, overlay = sidebar()
    state = AppState.get()
    spec = cached.model_spec(choice)
    name = spec.name
    model, _ = cached.get_model(spec)
    table = cached.centroids(spec)

    left, right = st.columns([5, 6], gap="large")
    with left:
        image_key, clean, boxes, image_slot = input_widgets.input_column("Input")

    point_xy, point_top = None, None
    if overlay and choice != POINT_MODEL:
        pspec = cached.model_spec(POINT_MODEL)
        pmodel, _ = cached.get_model(pspec)
        pa = analyse(pmodel, clean, boxes, cached.centroids(pspec))
        point_xy, point_class = anchor_point(pa.xy, cached.centroids(pspec), table, cached.alignment(pspec, spec))
        point_top = pa.top

    view = model_view(model, clean, boxes, table, state.trails.get(name, []), sigmas=sigmas, show_trail=show_trail,
                      point_xy=point_xy, remember=partial(state.clean_eta_for, name, image_key))
    state.trails[name] = view.trail
    analysis, eta_clean = view.analysis, view.eta_clean
    dark = ui.is_dark()
    with image_slot:
        input_widgets.image_chart(analysis.image, analysis.boxes, dark)
        if analysis.covered >= 0.999:
            st.warning("The whole image is hidden: the model sees an all-black image. What you see is how it "
                       "hedges with no evidence at all. Undo or reset to bring the digits back.")
        if len(analysis.boxes):
            st.caption(f"{len(analysis.boxes)} rectangle(s), {analysis.covered:.0%} of the pixels hidden: "
                       + ", ".join(f"({t},{l}) {h}×{w}" for t, l, h, w in analysis.boxes.tolist()))

    with right:
        st.subheader("Embedding")
        title = (f"{choice}<br><sup>shown in 2D: μ' = Wᵀμ, Σ' = WᵀΣW, W = PCA of the class centroids</sup>"
                 if table.projected else f"{choice}: the 2D embedding")
        extent = view.extent if state.map_view == "zoom on input" else None
        st.plotly_chart(pi.embedding_map(table, view.layers, color_by, dark=dark, show_trail=show_trail, title=title,
                                         extent=extent),
                        key="hk_map", width="stretch", config={"displaylogo": False})
        if sigmas and not analysis.is_point:
            st.caption(" · ".join(f"{s:g}σ ellipse holds {sigma_mass(s):.0%}" for s in sigmas))
        if analysis.is_point:
            st.caption("A point model has no ellipse: the same input always lands on one spot, whatever you hide.")

    g, m, t = st.columns([4, 3, 4], gap="medium")
    floor = eta_floor(model)
    with g:
        st.plotly_chart(pi.eta_gauge(analysis.eta, eta_clean, floor=floor, dark=dark), key="hk_gauge", width="stretch")
    with m:
        st.metric("η(x)", f"{analysis.eta:.3f}", delta=ui.delta(analysis.eta - eta_clean, suffix=" vs clean"),
                  delta_color="inverse", help="HIB eq. 9; the gauge's black tick is the clean image's η")
        st.metric("ellipse size √det Σ", f"{view.sqrt_det:.3g}",
                  help="Square root of the determinant of the (moment-matched) 2D covariance: the 1σ area / π")
        st.metric("hidden pixels", f"{analysis.covered:.0%}")
    with t:
        st.markdown("**Top-5 classes** · p(m | x, centroid)")
        rows = [{"class": f"{c:02d}", "p(m)": p, "seen": bool(table.seen[table.class_ids == c][0])}
                for c, p in analysis.top]
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="hk_top5", width="stretch",
                     column_config={"p(m)": st.column_config.ProgressColumn("p(m | x, c)", min_value=0.0,
                                                                              max_value=1.0, format="%.3f"),
                                    "seen": st.column_config.CheckboxColumn("seen", help="class seen in training")})
        if point_top:
            st.caption(f"Point model's best match: **{point_top[0][0]:02d}** (p = {point_top[0][1]:.2f}); its × "
                       f"stands by class {point_class:02d} here, offset as in its own space.")


render()
