"""Compare page: the same occluded input through point, HIB MoG-1 and MoG-2 (SPE to come), side by side."""
from __future__ import annotations

import numpy as np
import streamlit as st

import inputs
import models
import ui
from hedgekit import playground as pg
from hedgekit.data import occlude
from hedgekit.viz import interactive as pi
from state import AppState

EXPLAINER = """
**What am I looking at?** The input from the playground (same image, same black
rectangles) embedded by several models, each in its own 2D space with its own class
centroids. The point model gives a dot whatever you hide; HIB models give an ellipse
that grows with occlusion, and MoG-2 can split its mass over two places when a hidden
digit could be two different things (HIB sec. 2.2, Fig. 3-4). Compare η(x) (HIB eq. 9):
a point model's η is the constant 1 − σ(b), it cannot say "I don't know".

**β** weights the KL term that pulls every embedding towards N(0, I) (HIB eq. 8, App. E):
β = 0 lets variances collapse, larger β keeps ellipses large and the map more compact.

Notebooks:
"""


def beta_picker(preset: str) -> float:
    """The radio choosing beta of the HIB models, and which betas are trained already."""
    state = AppState.get()
    opts = pg.beta_options(preset)
    have = {b for b, ok in opts if ok}
    state.widget(st.radio, "β for the HIB models (KL weight, HIB eq. 8)", "beta", [b for b, _ in opts],
                 horizontal=True,
                 format_func=lambda b: f"β = {b:g}" + ("" if b in have or b == pg.DEFAULT_BETA else " (not trained)"))
    listed = ", ".join(f"{b:g}" for b, ok in opts if ok) or "none yet"
    st.caption(f"Checkpoints for MoG-1 with preset `{preset}` exist for β ∈ {{{listed}}}. The default β = 1e-4 is "
               "trained on first use; other values are trained only when you ask (fast preset: about "
               f"{pg.TRAIN_SECONDS['fast']} s per model; paper preset: about {pg.TRAIN_SECONDS['paper'] // 60} min).")
    return float(state.beta)


def column(entry: pg.CompareEntry, beta: float, clean, boxes, image_key, color_by, zoom, dark) -> None:
    """One model's map, eta and top-3 for the input (or a button to train it first)."""
    st.markdown(f"#### {entry.title}")
    st.caption(entry.note)
    if entry.choice is None:  # hook for methods not in the zoo yet (SPE)
        st.info("Coming soon. Hook: `hedgekit.playground.compare_entries()`; add the model to "
                "`APP_MODELS` once `hedgekit.zoo` can build it.")
        return
    state = AppState.get()
    kind = pg.APP_MODELS[entry.choice]["kind"]
    b = beta if kind == "hib" else pg.DEFAULT_BETA
    spec = models.model_spec(entry.choice, b)
    name = spec.name
    if kind == "hib" and b != pg.DEFAULT_BETA and not models.has_checkpoint(spec) and name not in state.train_approved:
        st.warning(f"No checkpoint for β = {b:g} yet.")
        st.button(f"Train it now (~{pg.expected_train_seconds(spec)} s)", key=f"hk_train_{name}",
                  on_click=state.train_approved.add, args=(name,))
        return
    model, _ = models.get_model(spec)
    table = models.centroids(spec)
    a = pg.analyse(model, clean, boxes, table)
    eta_clean = state.clean_eta_for(name, image_key, lambda: pg.analyse(model, clean, (), table).eta)
    trail = pg.update_trail(state.trails.get(name, []), a)
    state.trails[name] = trail
    layers = pg.map_layers(a, trail)
    extent = pg.focus_extent(layers, table, a.top_ids[:5]) if zoom else None
    st.plotly_chart(pi.embedding_map(table, layers, color_by, dark=dark, show_labels=zoom, show_legend=False,
                                     height=360, extent=extent),
                    key=f"hk_cmp_map_{entry.title}", width="stretch", config={"displaylogo": False})
    st.metric(f"η(x), {entry.title}", f"{a.eta:.3f}", delta=ui.delta(a.eta - eta_clean, suffix=" vs clean"),
              delta_color="inverse")
    st.markdown("Top-3: " + ", ".join(f"**{c:02d}** ({p:.2f})" for c, p in a.top[:3]))
    if kind == "hib":
        st.caption(f"ellipse size √det Σ = {np.sqrt(max(np.linalg.det(a.cov_xy), 0)):.3g}")
    state.compare[entry.title] = {
        "model": name, "eta": a.eta, "sqrt_det": float(np.sqrt(max(np.linalg.det(a.cov_xy), 0)))}


def render() -> None:
    st.title("Compare models")
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAINER + ui.notebook_links("02", "04"))
    preset = models.preset_or_stop()
    state = AppState.get()
    top = st.columns([3, 2, 2, 2], vertical_alignment="top")
    with top[0]:
        beta = beta_picker(preset)
    with top[1]:
        state.widget(st.radio, "Colour centroids by", "color", ["tens", "ones"], format_func=lambda v: f"{v} digit")
    with top[2]:
        state.widget(st.radio, "Map view", "map_view", ["all classes", "zoom on input"])
    with top[3]:
        st.page_link("views/playground.py", label="Edit the input on the playground",
                     icon=":material/blur_on:")

    # The same input as the playground (its settings are kept across pages).
    image_key, clean, start_boxes = inputs.current_image()
    inputs.on_image(image_key, start_boxes)
    c = st.columns([5, 1, 1, 1], vertical_alignment="center")
    boxes, _ = inputs.current_boxes()
    with c[0]:
        shown = occlude(clean, boxes) if len(boxes) else clean
        st.plotly_chart(pi.image_figure(shown, boxes, dark=ui.is_dark(), height=170), key="hk_cmp_img",
                        width="stretch", config={"displayModeBar": False, "staticPlot": True})
    c[1].button("Hide left", key="hk_cmp_hide0", on_click=inputs.hide_digit, args=(0,))
    c[2].button("Hide right", key="hk_cmp_hide1", on_click=inputs.hide_digit, args=(1,))
    c[3].button("Reset", key="hk_cmp_reset", on_click=inputs.reset)

    st.caption("Each map is its own model's 2D space. ★ = this input (mean), ellipses = 1σ/2σ/3σ, ◆ = mixture "
               "components, filled dots = seen classes, hollow dots = unseen classes, grey line = the trail.")
    entries = pg.compare_entries()
    cols = st.columns(len(entries), gap="medium")
    for col, entry in zip(cols, entries):
        with col:
            column(entry, beta, clean, boxes, image_key, state.color, state.map_view == "zoom on input", ui.is_dark())

render()
