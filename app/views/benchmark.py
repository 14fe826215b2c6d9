"""Benchmark page: the URL benchmark's leaderboard at kit scale (Kirchhof et al. 2023) from the runs the committed
ledger holds (`benchmark.ledger_runs`, ``hedgekit/ledger/url.jsonl``: on a fresh clone too), else from this machine's
cached runs, with its rank sets and tied groups; and the unseen-class images one method is most and least uncertain
about (`hedgekit.papers.url.benchmark`, from a cached run's weights)."""
from __future__ import annotations

import numpy as np
import streamlit as st
from state import AppState

from hedgekit.errors import HedgekitError, InputError
from hedgekit.papers.url import benchmark
from hedgekit.papers.url.leaderboard import UX_NOT_LEARNED, ranking
from hedgekit.zoo import ledger

K = 8  # images shown per row (most and least uncertain)
COMMAND = "python -m hedgekit url-benchmark --fast"
FULL_COMMAND = "python -m hedgekit url-benchmark --budget converged --seeds 3"
EXPLAINER = """
**What am I looking at?** The URL benchmark (Kirchhof et al. 2023) asks whether a model's uncertainty u(x),
learned on one data set (*upstream*), still says something on classes it never saw (*downstream*, zero-shot).
Here every method trains the same small network on the seen 2-digit MNIST classes; it is then evaluated on the
unseen 2-digit classes and on pairs of Fashion-MNIST items. **R-AUROC** is how well u(x) predicts whether an image's
nearest neighbour has the wrong class (0.5 = no better than chance); **R@1** is how often it has the right one.
The leaderboard is the mean over seeds, ranked by downstream R-AUROC (click a column to sort by it). Each rank has
a set of ranks it may truly take: every pair of methods is compared by a t test on the seeds' spread (pooled over
all methods), corrected for the number of pairs (Holm), so that all the sets hold together with 95% confidence;
methods whose sets overlap cannot be told apart by these seeds and share a **tied group**. Methods whose u(x) is
not above chance upstream (its upstream R-AUROC's 95% interval over seeds does not lie above 0.5) are marked *u(x)
did not learn*, and methods that did not learn an embedding (upstream R@1 or accuracy < 0.7 in some seed) *did not
train*: both are listed last and not ranked. Below, one method's most and least uncertain unseen-class images: a
useful u(x) puts the ambiguous, badly written digits on the first row.
"""


def _budget_with_runs():
    """(budget name, runs, source): the first of the converged, paper and fast budgets with runs, read from the
    ledger (`benchmark.ledger_runs`: every seed it holds under today's code, whether or not its weights are here;
    source "ledger") or, where it holds none of that budget, from this machine's cache (`benchmark.cached_runs`,
    e.g. runs notebook 09 trained; source "cache"); (None, None, "") when there are none."""
    for name in ("converged", "paper", "fast"):
        for source, read in (("ledger", benchmark.ledger_runs), ("cache", benchmark.cached_runs)):
            runs = read(name)
            if not runs.empty:
                return name, runs, source
    return None, None, ""


@st.cache_data(show_spinner="Scoring the unseen-class images…", max_entries=16)
def _extremes(method: str, seed: int, budget: str, run_file: str, mtime_ns: int) -> dict:
    """`benchmark.uncertainty_extremes`, computed once per cached run file (and its modification time)."""
    return benchmark.uncertainty_extremes(method, seed, budget, k=K)


def leaderboard_frame(board, ranks=None):
    """The leaderboard as the app shows it: one sortable row per method, "mean ± std" columns folded into two
    numbers each (so the columns fit a 1280 px window), method names as `benchmark.label` gives them; given the
    ``ranks`` (`leaderboard.ranking`), each ranked method's tied group, rank and rank set come first, as text ("—"
    for a method that is not ranked)."""
    frame = board[[c for c in board.columns if not c.endswith(" ±") and c != "trained seeds"]].copy()
    if ranks is not None and len(ranks):
        cells = {m: (f"{int(r['tied group'])}", f"{r['rank']:g}", f"{r['rank lo']:g}–{r['rank hi']:g}")
                 for m, r in ranks.iterrows()}
        for k, column in enumerate(("tied group", "rank", "rank 95% set")):
            frame.insert(k, column, [cells[m][k] if m in cells else "—" for m in frame.index])
    frame.index = [benchmark.label(m) for m in frame.index]
    frame.index.name = "method"
    return frame


def image_row(part: dict) -> None:
    """The images of one row of `benchmark.uncertainty_extremes`, with their class and u(x)."""
    for col, image, label, u in zip(st.columns(K), part["images"], part["labels"], part["u"]):
        with col:
            st.image(np.kron(image, np.ones((2, 2))).clip(0, 1), width="stretch", caption=f"{label:02d} · u {u:.3g}")


def leaderboard_notes(board, ranks, budget: str) -> None:
    """What stands above the leaderboard: the fast budget's warning, the tied groups (best first) and the methods
    that are not ranked, with why."""
    if budget == "fast":
        st.warning("This is the **fast** budget (20 steps per run): the methods have not learned an embedding, so the "
                   f"numbers sit near chance and the order is noise. For a ranking run `{FULL_COMMAND}`.")
    if ranks is not None and len(ranks):
        groups = ranks.groupby("tied group", sort=True).groups
        st.markdown("**Tied groups** by downstream R-AUROC (rank sets over seeds overlap within a group): " +
                    " > ".join("{" + ", ".join(benchmark.label(m) for m in ranks.index if m in g) + "}"
                               for g in groups.values()))
    for status in (UX_NOT_LEARNED, benchmark.NOT_TRAINED):
        names = [benchmark.label(m) for m, s in board["status"].items() if s == status]
        if names and budget != "fast":
            st.caption(f"{status}: {', '.join(names)} (listed last, not ranked" + (
                "; upstream R-AUROC not above 0.5 by its 95% interval over seeds)" if status == UX_NOT_LEARNED
                else "; upstream R@1 or accuracy below 0.7 in some seed)"))


def render() -> None:
    st.title("Benchmark: URL at kit scale")
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAINER)
    state = AppState.get()
    budget, runs, source = _budget_with_runs()
    if budget is None:
        st.info(f"No benchmark results yet: the ledger (`{ledger.ledger_path('url')}`) holds no URL run of today's "
                f"code and this machine has no cached run. Create them (a few seconds per run) from the repository "
                f"root with\n\n`{COMMAND}`\n\nthen reload this page (the converged budget, about 35 CPU-minutes: "
                f"`{FULL_COMMAND}`); each run is recorded in the ledger as it finishes.")
        return
    board = benchmark.leaderboard(runs)
    try:
        ranks = ranking(runs)
    except InputError as exc:  # one run per method: no seed noise to rank by
        ranks = None
        st.caption(f"Not ranked: {exc}.")
    st.subheader(f"Leaderboard ({budget} budget, from the " + ("ledger)" if source == "ledger" else "cache)"))
    if source == "ledger":
        st.info(f"The runs the committed ledger holds (`{ledger.ledger_path('url')}`): {len(runs)} runs of "
                f"{runs['method'].nunique()} methods, trained on {', '.join(sorted(set(runs['device'])))} "
                f"({', '.join(sorted(set(runs['date'])))}) by `python -m hedgekit url-benchmark`, which records each "
                f"run as it finishes. Retrain them on this machine with `{FULL_COMMAND} --retrain` (a CPU run "
                f"must measure the same, to the last digit), or take the quick tour with `{COMMAND}`.")
    leaderboard_notes(board, ranks, budget)
    st.dataframe(leaderboard_frame(board, ranks), width="stretch", key="bench_board",
                 column_config={"status": st.column_config.TextColumn("status", width="small")})
    if source == "ledger":
        st.caption(f"{len(runs)} runs from the ledger; mean over seeds.")
    else:
        st.caption(f"{len(runs)} cached runs under `{benchmark.cache_root() / budget}`; mean over seeds (± std in "
                   "`leaderboard-<budget>.md` beside them).")

    st.subheader("Most and least uncertain unseen-class images")
    cached = benchmark.cached_runs(budget) if source == "ledger" else runs
    if cached.empty:
        st.caption(f"They need a run's weights, and this machine has no {budget} run cached: train them with "
                   f"`python -m hedgekit url-benchmark --budget {budget}`.")
        return
    runs = cached
    methods = [m for m in board.index if m in set(runs["method"])]
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
