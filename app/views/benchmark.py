"""Benchmark page: the URL benchmark's leaderboard at kit scale (Kirchhof et al. 2023) from the cached runs, and the
unseen-class images one method is most and least uncertain about (`hedgekit.papers.url.benchmark`)."""
from __future__ import annotations

import numpy as np
import streamlit as st
from state import AppState

from hedgekit.errors import HedgekitError
from hedgekit.papers.url import benchmark

K = 8  # images shown per row (most and least uncertain)
COMMAND = "python -m hedgekit url-benchmark --fast"
FULL_COMMAND = "python -m hedgekit url-benchmark --budget converged --seeds 3"
EXPLAINER = """
**What am I looking at?** The URL benchmark (Kirchhof et al. 2023) asks whether a model's uncertainty u(x),
learned on one data set (*upstream*), still says something on classes it never saw (*downstream*, zero-shot).
Here every method trains the same small network on the seen 2-digit MNIST classes; it is then evaluated on the
unseen 2-digit classes and on pairs of Fashion-MNIST items. **R-AUROC** is how well u(x) predicts whether an image's
nearest neighbour has the wrong class (0.5 = no better than chance); **R@1** is how often it has the right one.
The leaderboard is the mean ± std over seeds, ranked by downstream R-AUROC (click a column to sort by it); methods
that did not learn an embedding (upstream R@1 or accuracy < 0.7 in some seed) are listed last as *did not train*
and not ranked. Below, one method's most and least uncertain unseen-class images: a useful u(x) puts the
ambiguous, badly written digits on the first row.
"""


def _budget_with_runs():
    """(budget name, cached runs), the converged budget preferred, then paper, then fast; (None, empty) when no
    budget has runs."""
    for name in ("converged", "paper", "fast"):
        runs = benchmark.cached_runs(name)
        if not runs.empty:
            return name, runs
    return None, runs


@st.cache_data(show_spinner="Scoring the unseen-class images…", max_entries=16)
def _extremes(method: str, seed: int, budget: str, run_file: str, mtime_ns: int) -> dict:
    """`benchmark.uncertainty_extremes`, computed once per cached run file (and its modification time)."""
    return benchmark.uncertainty_extremes(method, seed, budget, k=K)


def leaderboard_frame(board):
    """The leaderboard as the app shows it: one sortable row per method, "mean ± std" columns folded into two
    numbers each (so the columns fit a 1280 px window), method names as `benchmark.label` gives them."""
    frame = board[[c for c in board.columns if not c.endswith(" ±") and c != "trained seeds"]].copy()
    frame.index = [benchmark.label(m) for m in frame.index]
    frame.index.name = "method"
    return frame


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
                f"`{COMMAND}`\n\nthen reload this page (the converged budget, about 15 CPU-minutes: `{FULL_COMMAND}`).")
        return
    board = benchmark.leaderboard(runs)
    st.subheader(f"Leaderboard ({budget} budget)")
    n_ranked = len(benchmark.ranked(board))
    if budget == "fast":
        st.warning("This is the **fast** budget (20 steps per run): the methods have not learned an embedding, so the "
                   f"numbers sit near chance and the order is noise. For a ranking run `{FULL_COMMAND}`.")
    elif n_ranked < len(board):
        st.caption(f"{len(board) - n_ranked} of {len(board)} methods did not train at this budget: listed last, "
                   "not ranked.")
    st.dataframe(leaderboard_frame(board), width="stretch", key="bench_board",
                 column_config={"status": st.column_config.TextColumn("status", width="small")})
    st.caption(f"{len(runs)} cached runs under `{benchmark.cache_root() / budget}`; mean over seeds (± std in "
               "`leaderboard-<budget>.md` beside them).")

    st.subheader("Most and least uncertain unseen-class images")
    methods = list(board.index)
    if state.bench_method not in methods:
        state.put("bench_method", methods[0])
    state.widget(st.selectbox, "Method", "bench_method", methods, format_func=benchmark.label)
    method = state.bench_method
    seed = int(runs.loc[runs["method"] == method, "seed"].min())
    path = benchmark.run_path(method, seed, budget)
    try:
        ext = _extremes(method, seed, budget, str(path), path.stat().st_mtime_ns)
    except (HedgekitError, OSError) as exc:  # no data, the run vanished, its weights do not load: no traceback
        st.warning(f"Cannot score the images of {benchmark.label(method)} (seed {seed}): {exc}")
        return
    st.caption(f"Seed {seed}; {ext['n']} unseen-class test images scored, the run's own evaluation subset.")
    st.markdown(f"**Most uncertain** (largest u(x)) under {benchmark.label(method)}")
    image_row(ext["most"])
    st.markdown("**Least uncertain** (smallest u(x))")
    image_row(ext["least"])


render()
