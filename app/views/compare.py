"""Compare page: the same occluded input through point, HIB MoG-1, MoG-2 and SPE, side by side."""
from __future__ import annotations

from functools import partial

import numpy as np
import streamlit as st

import cached
import input_widgets
import ui
from hedgekit.data import occlude
from hedgekit.interactive.models import (DEFAULT_BETA, CompareEntry, app_models, beta_options, compare_entries,
                                         expected_train_seconds)
from hedgekit.zoo import method
from hedgekit.interactive.prototypes import APP_SUPPORT_IMAGES, spe_spec
from hedgekit.interactive.view import model_view
from hedgekit.viz import interactive as pi
from state import AppState

PER_ROW = 2  # maps per row
MAP_HEIGHT = 430
EXPLAINER = """
**What am I looking at?** The input from the playground (same image, same black
rectangles) embedded by several models, each in its own 2D space with its own class
centroids. The point model gives a dot whatever you hide; HIB models give an ellipse
that grows with occlusion, and MoG-2 can split its mass over two places when a hidden
digit could be two different things (HIB sec. 2.2, Fig. 3-4). Compare η(x) (HIB eq. 9):
a point model's η is the constant 1 − σ(b), it cannot say "I don't know".

**β** weights the KL term that pulls every embedding towards N(0, I) (HIB eq. 8, App. E):
β = 0 lets variances collapse, larger β keeps ellipses large and the map more compact.

**SPE** (Scott et al. 2019) also embeds an input as a Gaussian, but classes are *prototypes*: the product of
the Gaussians of a few training images of the class (SPE eq. 5). Its answer is the class posterior
p(y | x, S) (eq. 7): when a hidden digit could be several classes, the largest posterior drops and the
top-3 spread out. SPE is shown with its fast-preset model unless the paper one was trained.

Notebooks:
"""


def beta_picker(preset: str) -> float:
    """The radio choosing beta of the HIB models, and which betas are trained already."""
    state = AppState.get()
    opts = beta_options(preset)
    have = {b for b, ok in opts if ok}
    state.widget(st.radio, "β for the HIB models (KL weight, HIB eq. 8)", "beta", [b for b, _ in opts],
                 horizontal=True,
                 format_func=lambda b: f"β = {b:g}" + ("" if b in have or b == DEFAULT_BETA else " (not trained)"))
    listed = ", ".join(f"{b:g}" for b, ok in opts if ok) or "none yet"
    st.caption(f"Checkpoints for MoG-1 with preset `{preset}` exist for β ∈ {{{listed}}}. The default β = 1e-4 is "
               "trained on first use; other values are trained only when you ask (fast preset: about "
               f"{method('hib').train_seconds['fast']['hib']} s per model; paper preset: about "
               f"{method('hib').train_seconds['paper']['hib'] // 60} min).")
    return float(state.beta)


def column(entry: CompareEntry, beta: float, clean, boxes, image_key, color_by, zoom, dark) -> None:
    """One model's map, eta and top-3 for the input (or a button to train it first)."""
    st.markdown(f"#### {entry.title}")
    st.caption(entry.note)
    if entry.choice == "spe":
        spe_column(entry, clean, boxes, image_key, color_by, zoom, dark)
        return
    state = AppState.get()
    kind = app_models()[entry.choice]["kind"]
    b = beta if kind == "hib" else DEFAULT_BETA
    spec = cached.model_spec(entry.choice, b)
    name = spec.name
    if kind == "hib" and b != DEFAULT_BETA and not cached.has_checkpoint(spec) and name not in state.train_approved:
        st.warning(f"No checkpoint for β = {b:g} yet.")
        st.button(f"Train it now (~{expected_train_seconds(spec)} s)", key=f"hk_train_{name}",
                  on_click=state.train_approved.add, args=(name,))
        return
    model, _ = cached.get_model(spec)
    table = cached.centroids(spec)
    view = model_view(model, clean, boxes, table, state.trails.get(name, []),
                      remember=partial(state.clean_eta_for, name, image_key))
    state.trails[name] = view.trail
    a = view.analysis
    _map(entry, table, view.layers, color_by, zoom, view.extent if zoom else None, dark)
    st.metric(f"η(x), {entry.title}", f"{a.eta:.3f}", delta=ui.delta(a.eta - view.eta_clean, suffix=" vs clean"),
              delta_color="inverse")
    st.markdown("Top-3: " + ", ".join(f"**{c:02d}** ({p:.2f})" for c, p in a.top[:3]))
    if kind == "hib":
        st.caption(f"ellipse size √det Σ = {view.sqrt_det:.3g}")


def _map(entry: CompareEntry, table, layers, color_by, zoom, extent, dark) -> None:
    """One column's map: large, no toolbar over it (scroll to zoom, drag to pan, double-click to reset)."""
    st.plotly_chart(pi.embedding_map(table, layers, color_by, dark=dark, show_labels=zoom, show_legend=False,
                                     height=MAP_HEIGHT, extent=extent),
                    key=f"hk_cmp_map_{entry.title}", width="stretch",
                    config={"displaylogo": False, "displayModeBar": False, "scrollZoom": True})


def spe_column(entry: CompareEntry, clean, boxes, image_key, color_by, zoom, dark) -> None:
    """SPE: the input's Gaussian among the class prototypes, and its class posterior p(y | x, S) (SPE eq. 7)."""
    state = AppState.get()
    spec = spe_spec(cached.preset_or_stop())
    model, meta = cached.get_model(spec)
    protos, _ = cached.prototypes(spec, model, meta)
    post = cached.posterior(spec, model, meta, clean, boxes)
    post_clean = float(cached.posterior(spec, model, meta, clean, np.zeros((0, 4), np.int64)).max())
    order = np.argsort(-post, kind="stable")
    top_ids = protos.table.class_ids[order[:5]]
    # the Gaussian's geometry among the prototypes; SPE's classes are its posterior, so the zoom follows that
    view = model_view(model, clean, boxes, protos.table, state.trails.get(spec.name, []), focus_ids=top_ids[:1],
                      remember=partial(state.clean_eta_for, spec.name, image_key))
    state.trails[spec.name] = view.trail
    _map(entry, protos.table, view.layers, color_by, zoom, view.extent if zoom else None, dark)
    st.metric(f"max p(y | x, S), {entry.title}", f"{post[order[0]]:.3f}",
              delta=ui.delta(post[order[0]] - post_clean, suffix=" vs clean"),
              help="The largest class posterior (SPE eq. 7, naive sampler, 200 samples, fixed seed): it drops "
                   "when the input could be several classes")
    st.markdown("Top-3: " + ", ".join(f"**{protos.table.class_ids[i]:02d}** ({post[i]:.2f})" for i in order[:3]))
    st.caption(f"ellipse size √det Σ = {view.sqrt_det:.3g}; dots are the prototypes "
               f"of the {len(protos.table.class_ids)} training classes ({APP_SUPPORT_IMAGES} training images "
               f"each, SPE eq. 5); model `{spec.name}`")


def render() -> None:
    st.title("Compare models")
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAINER + ui.notebook_links("02", "04"))
    preset = cached.preset_or_stop()
    state = AppState.get()
    top = st.columns([3, 2, 2], vertical_alignment="top")
    with top[0]:
        beta = beta_picker(preset)
    with top[1]:
        state.widget(st.radio, "Colour centroids by", "color", ["tens", "ones"], format_func=lambda v: f"{v} digit")
    with top[2]:
        state.widget(st.radio, "Map view", "map_view", ["all classes", "zoom on input"])
        st.page_link("views/playground.py", label="Edit the input", icon=":material/blur_on:",
                     help="On the occlusion playground (this page shows the same input)")

    # The same input as the playground (its settings are kept across pages).
    image_key, clean, start_boxes = input_widgets.current_image()
    input_widgets.on_image(image_key, start_boxes)
    c = st.columns([5, 1, 1, 1], vertical_alignment="center")
    boxes, _ = input_widgets.current_boxes()
    with c[0]:
        shown = occlude(clean, boxes) if len(boxes) else clean
        st.plotly_chart(pi.image_figure(shown, boxes, dark=ui.is_dark(), height=170), key="hk_cmp_img",
                        width="stretch", config={"displayModeBar": False, "staticPlot": True})
    c[1].button("Hide left", key="hk_cmp_hide0", on_click=input_widgets.hide_digit, args=(0,))
    c[2].button("Hide right", key="hk_cmp_hide1", on_click=input_widgets.hide_digit, args=(1,))
    c[3].button("Reset", key="hk_cmp_reset", on_click=input_widgets.reset)

    st.caption("Each map is its own model's 2D space. ★ = this input (mean), ellipses = 1σ/2σ/3σ, ◆ = mixture "
               "components, filled dots = seen classes, hollow dots = unseen classes, grey line = the trail.")
    entries = compare_entries()
    for row in range(0, len(entries), PER_ROW):  # two maps per row: large enough to read at 1280 px
        cols = st.columns(PER_ROW, gap="large")
        for col, entry in zip(cols, entries[row: row + PER_ROW]):
            with col:
                column(entry, beta, clean, boxes, image_key, state.color, state.map_view == "zoom on input",
                       ui.is_dark())

render()
