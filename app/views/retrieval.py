"""Retrieval page: a query digit's uncertainty sigma^2 and its nearest gallery images under the heteroscedastic
triplet model (Taha et al. 2019), and what removing the most uncertain gallery images does to mAP."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import cached
import input_widgets
import ui
from hedgekit.interactive.retrieval import retrieve
from state import AppState

K = 8  # neighbours shown
CURVE = tuple(round(0.1 * i, 1) for i in range(6))  # removed fractions of the mAP curve: 0, 10, ..., 50%
EXPLAINER = """
**What am I looking at?** A *heteroscedastic triplet* model (Taha et al. 2019) maps each image to a point
in a 16-D space (for retrieval by Euclidean distance) plus one more number, s = log σ²: how unsure it is
about that image. Training weights each triplet's loss by e^(−s) and adds s (eq. 11), so images the
model cannot place well learn a large σ².

The model was trained on the seen 2-digit classes; the queries and the gallery hold the **unseen**
classes (zero-shot retrieval, like the paper's person re-identification). Half of the gallery images are
the test set's occluded twins: the "bad shots" a real gallery has. The **slider** removes the x% of the
gallery with the largest σ² and shows how the mean average precision (mAP) of the clean queries changes,
beside removing the same number at random (the paper's Table 2 "cleaning"). Your query (occlude it like
on the playground) gets its own σ² and its nearest gallery images among those kept.
"""


def _own_test_index(image_key: str) -> int | None:
    """The unseen-class test index of the input (None for other inputs), so the query never finds itself."""
    split, _, rest = image_key.partition(":")
    return int(rest.split(":")[0]) if split == "test_unseen" else None


def _test_label(image_key: str) -> int | None:
    """The class of a test-set input (None for uploads and drawings)."""
    split, _, rest = image_key.partition(":")
    return int(cached.dataset(split).labels[int(rest.split(":")[0])]) if split in input_widgets.SPLITS else None


def _first_visit() -> None:
    """On the first visit, a seen-class test input becomes an unseen-class one (the gallery's classes)."""
    state = AppState.get()
    if state.retrieval_visited:
        return
    state.retrieval_visited = True
    if state.source == "test set" and state.split == "test_seen":
        state.put("split", "test_unseen")
        state.put("class_choice", "any")
        state.put("example", 0)


def cleaning_panel(spec, model, g) -> dict:
    """The slider and what it does to mAP; returns the row of `hedgekit.interactive.retrieval.cleaning_map` it chose."""
    state = AppState.get()
    state.widget(st.slider, "Remove the most uncertain gallery images (%)", "clean_pct", 0, 50, step=5,
                 help="The images with the largest σ² go first (Taha et al. 2019, Table 2).")
    frac = state.clean_pct / 100
    base, cut = cached.cleaning(spec, model, (0.0, frac))
    rand = cached.cleaning(spec, model, (frac,), random=True)[0]
    c = st.columns(3)
    c[0].metric("mAP, σ² cleaning", f"{cut['map']:.3f}", delta=ui.delta(cut["map"] - base["map"]),
                help="Mean average precision of the clean queries once the most uncertain images are removed")
    c[1].metric("mAP, random", f"{rand['map']:.3f}", delta=ui.delta(rand["map"] - base["map"]),
                help="The same number of gallery images removed at random (the paper's baseline)")
    c[2].metric("occluded", f"{g.occluded[cut['removed']].mean():.0%}" if cut["n_removed"] else "–",
                help=f"Share of occluded images among the removed; {g.occluded.mean():.0%} of the whole gallery")
    st.caption(f"{cut['n_removed']} of {len(g.labels)} gallery images removed; mAP with the whole gallery: "
               f"{base['map']:.3f}.")
    return cut


def cleaning_curve(spec, model) -> None:
    """mAP against the share removed, most uncertain first and at random (computed once per model)."""
    curve = pd.DataFrame({"removed (%)": [100 * f for f in CURVE],
                          "most uncertain first": [r["map"] for r in cached.cleaning(spec, model, CURVE)],
                          "at random": [r["map"] for r in cached.cleaning(spec, model, CURVE, random=True)]})
    st.line_chart(curve, x="removed (%)", y=["most uncertain first", "at random"], y_label="mAP", height=220)


def neighbours(g, r) -> None:
    """The K nearest kept gallery images, nearest first."""
    cols = st.columns(K // 2)
    for rank, (p, d) in enumerate(zip(r.neighbours, r.distances)):
        with cols[rank % len(cols)]:
            st.image(np.kron(g.images[p], np.ones((3, 3), np.uint8)), width="stretch",
                     caption=f"#{rank + 1} {g.labels[p]:02d} · d {d:.2f} · σ² {g.sigma2[p]:.2f}"
                             + (" · occluded" if g.occluded[p] else ""))


def render() -> None:
    st.title("Retrieval: heteroscedastic triplet")
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAINER)
    cached.preset_or_stop()  # a bad preset stops the page before the first visit changes the input
    _first_visit()
    spec = cached.retrieval_spec()
    model, _ = cached.get_model(spec)
    g = cached.gallery(spec, model)

    left, right = st.columns([5, 6], gap="large")
    with left:
        image_key, clean, boxes, image_slot = input_widgets.input_column("Query")
    with right:
        st.subheader("Cleaning the gallery")
        cut = cleaning_panel(spec, model, g)

    r = retrieve(model, clean, boxes, g, k=K, removed=cut["removed"], exclude_index=_own_test_index(image_key))
    with image_slot:
        input_widgets.image_chart(r.image, boxes, ui.is_dark())
        clean_sigma2 = retrieve(model, clean, (), g, k=1).sigma2 if len(boxes) else r.sigma2
        st.metric("σ² of the query", f"{r.sigma2:.3f}", delta=ui.delta(r.sigma2 - clean_sigma2, suffix=" vs clean"),
                  delta_color="inverse", help="The model's own uncertainty about this image, s = log σ² (Taha et al. eq. 11)")
        st.caption(f"More uncertain than {r.percentile:.0%} of the gallery images.")
    with right:
        st.subheader(f"Top-{K} gallery neighbours")
        neighbours(g, r)
        label = _test_label(image_key)
        if label is not None and label not in set(g.labels.tolist()):
            st.info(f"Class {label:02d} is a seen class: the gallery holds only unseen classes, so no neighbour "
                    "can match. Choose *unseen classes* above.")
        st.caption(f"Model `{spec.name}` ({spec.label}); gallery: {len(g.labels)} unseen-class test images, "
                   f"{len(g.query_labels)} clean queries for the mAP.")
        cleaning_curve(spec, model)  # last: the page shows everything else while it is computed


render()
