"""Benchmark page: the URL benchmark's leaderboard at kit scale (Kirchhof et al. 2023) from the cached runs, and the
unseen-class images one method is most and least uncertain about (`hedgekit.papers.url.benchmark`)."""
from __future__ import annotations

import numpy as np
import streamlit as st
from state import AppState

from hedgekit.errors import HedgekitError
from hedgekit.papers.url import benchmark
from hedgekit.papers.url.numbers import DISPLAY

K = 8  # images shown per row (most and least uncertain)
COMMAND = "python -m hedgekit url-benchmark --fast"
EXPLAINER = """
**What am I looking at?** The URL benchmark (Kirchhof et al. 2023) asks whether a model's uncertainty u(x),
learned on one data set (*upstream*), still says something on classes it never saw (*downstream*, zero-shot).
Here every method trains the same small network on the seen 2-digit MNIST classes; it is then evaluated on the
unseen 2-digit classes and on pairs of Fashion-MNIST items. **R-AUROC** is how well u(x) predicts whether an image's
nearest neighbour has the wrong class (0.5 = no better than chance); **R@1** is how often it has the right one.
The leaderboard is the mean ± std over seeds, ranked by downstream R-AUROC. Below, one method's most and least
uncertain unseen-class images: a useful u(x) puts the ambiguous, badly written digits on the first row.
"""


def _budget_with_runs():
    """(budget name, cached runs), the paper budget preferred; (None, empty) when no budget has runs."""
    for name in ("paper", "fast"):
        runs = benchmark.cached_runs(name)
        if not runs.empty:
            return name, runs
    return None, runs


@st.cache_data(show_spinner="Scoring the unseen-class images…", max_entries=16)
def _extremes(method: str, seed: int, budget: str, run_file: str, mtime_ns: int) -> dict:
    """`benchmark.uncertainty_extremes`, computed once per cached run file (and its modification time)."""
    return benchmark.uncertainty_extremes(method, seed, budget, k=K)


def image_row(part: dict) -> None:
    """The images of one row of `benchmark.uncertainty_extremes`, with their class and u(x)."""
    for col, image, label, u in zip(st.columns(K), part["images"], part["labels"], part["u"]):
        with col:
            st.image(np.kron(image, np.ones((2, 2))).clip(0, 1), width="stretch", caption=f"{label:02d} · u {u:.3g}")


def render() -> None:
    st.title("Benchmark: URL at kit scale")
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAINER)
    state = AppState.get()
    budget, runs = _budget_with_runs()
    if budget is None:
        st.info(f"No benchmark results yet. Create them (a few seconds per run) from the repository root with\n\n"
                f"`{COMMAND}`\n\nthen reload this page (without `--fast`: the paper budget, about 30 minutes).")
        return
    board = benchmark.leaderboard(runs)
    st.subheader(f"Leaderboard ({budget} budget)")
    st.markdown(benchmark.leaderboard_markdown(board))
    st.caption(f"{len(runs)} cached runs under `{benchmark.cache_root() / budget}`; "
               + ("the fast budget ranks noise, not methods: run without `--fast` for the paper budget."
                  if budget == "fast" else "mean ± sample std over seeds."))

    st.subheader("Most and least uncertain unseen-class images")
    methods = list(board.index)
    if state.bench_method not in methods:
        state.put("bench_method", methods[0])
    state.widget(st.selectbox, "Method", "bench_method", methods, format_func=lambda m: DISPLAY.get(m, m))
    method = state.bench_method
    seed = int(runs.loc[runs["method"] == method, "seed"].min())
    path = benchmark.run_path(method, seed, budget)
    try:
        ext = _extremes(method, seed, budget, str(path), path.stat().st_mtime_ns)
    except (HedgekitError, OSError) as exc:  # no data, the run vanished, its weights do not load: no traceback
        st.warning(f"Cannot score the images of {DISPLAY.get(method, method)} (seed {seed}): {exc}")
        return
    st.caption(f"Seed {seed}; {ext['n']} unseen-class test images scored, the run's own evaluation subset.")
    st.markdown(f"**Most uncertain** (largest u(x)) under {DISPLAY.get(method, method)}")
    image_row(ext["most"])
    st.markdown("**Least uncertain** (smallest u(x))")
    image_row(ext["least"])


render()
