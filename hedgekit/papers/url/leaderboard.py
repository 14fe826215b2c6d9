"""The URL benchmark's leaderboard (Kirchhof et al. 2023, Table 1 at kit scale): which runs trained, mean ± std over
seeds per method, the ranking's stability across seeds, and the Markdown table (issue 47: split from the benchmark).

A run has learned an embedding when it clears `TRAINED_AT` (`run_status`); only the methods whose every run did
(`method_status`) are ranked (`leaderboard`, `ranked`), so that no u(x) is scored on an embedding it never learned.
"""
from __future__ import annotations

import math

import numpy as np

from hedgekit.errors import InputError
from hedgekit.papers.url.numbers import DISPLAY

__all__ = ["LABELS", "label", "METRICS", "TRAINED_AT", "MAY_BE_NAN", "TRAINED", "NOT_TRAINED", "run_status",
           "method_status", "trained_runs", "leaderboard", "ranked", "seed_rank_stability", "leaderboard_markdown"]

# Our methods' names in tables, figures and verdicts: the paper's (`numbers.DISPLAY`), except that our ``infonce``
# and ``mcinfonce`` are *supervised* (positives are other images of the same class, `hedgekit.methods.infonce`);
# the paper's unsupervised ones (two augmented views, no labels) are ``infonce_2v`` and ``mcinfonce_2v`` and carry
# the paper's names; method keys and run / checkpoint names are unchanged.
LABELS = {**DISPLAY, "infonce": "supervised InfoNCE", "mcinfonce": "supervised MCInfoNCE",
          "infonce_2v": "InfoNCE", "mcinfonce_2v": "MCInfoNCE"}


def label(method: str) -> str:
    """The name of our ``method`` in tables and figures (`LABELS`; unknown keys as they are)."""
    return LABELS.get(method, method)


# metric -> column title in the leaderboard (in order)
METRICS = {"down_rauroc": "R-AUROC (down)", "down_r1": "R@1 (down)", "rauroc": "R-AUROC unseen", "r1": "R@1 unseen",
           "fashion_rauroc": "R-AUROC Fashion", "fashion_r1": "R@1 Fashion", "crop": "crop rate unseen",
           "up_rauroc": "R-AUROC (up)", "up_r1": "R@1 (up)", "up_acc": "accuracy (up)", "up_crop": "crop rate (up)",
           "cpu_seconds": "CPU s", "train_seconds": "train s"}


# A run has learned an embedding when it clears these on the upstream (seen-class) test images: R@1, and for heads
# that classify, accuracy (NaN for the others: not checked, `MAY_BE_NAN`). Below them a method's u(x) is scored on
# an embedding it never learned (issue 35: Losspred at 0.05 accuracy), so it is not ranked.
TRAINED_AT = {"up_r1": 0.7, "up_acc": 0.7}
MAY_BE_NAN = ("up_acc",)  # the accuracy of a head without logits; every other NaN metric is a failed run
TRAINED, NOT_TRAINED = "trained", "did not train"


def run_status(runs):
    """Per run (row of ``runs``): `TRAINED` if it reaches every threshold of `TRAINED_AT`, else `NOT_TRAINED`.

    A NaN metric counts as trained only where `MAY_BE_NAN` allows it (the accuracy of a head without logits); a
    NaN upstream R@1 (a run that diverged, `diverged_record`) never does (issue 45 item 7), nor does a run with a
    ``diverged_at`` step. A missing column is not checked."""
    import pandas as pd

    ok = pd.Series(True, index=runs.index)
    for metric, low in TRAINED_AT.items():
        if metric in runs:
            v = runs[metric].astype(float)
            ok &= (v >= low) | (v.isna() & (metric in MAY_BE_NAN))
    if "diverged_at" in runs:
        ok &= runs["diverged_at"].isna()
    return ok.map({True: TRAINED, False: NOT_TRAINED})


def method_status(runs) -> dict:
    """method -> `TRAINED` if every one of its runs trained (`run_status`), else `NOT_TRAINED`."""
    st = run_status(runs).eq(TRAINED).groupby(runs["method"], sort=False).all()
    return {m: TRAINED if v else NOT_TRAINED for m, v in st.items()}


def trained_runs(runs):
    """The runs of the methods that trained (`method_status`): what rankings and correlations are computed on.
    Runs of several budgets (a sweep, `sweep_budgets`) are judged per (method, budget): each setting is a model."""
    keys = ["method", "budget"] if "budget" in runs else ["method"]
    ok = run_status(runs).eq(TRAINED).groupby([runs[k] for k in keys], sort=False).transform("all")
    return runs[ok.to_numpy(bool)]


def leaderboard(runs, metrics=None):
    """Mean and sample std (ddof = 1) over seeds per method: the methods that trained first, sorted by downstream
    R-AUROC, then the ones that did not (`method_status`, also sorted; they are not ranked).

    Columns: ``<title>`` and ``<title> ±`` for each metric of ``METRICS`` present in ``runs``, ``seeds``,
    ``trained seeds`` (runs that reach `TRAINED_AT`) and ``status``: `TRAINED`, `NOT_TRAINED`, or for a method
    with runs that diverged (`diverged_record`) their ``failure``s, e.g. "diverged at step 10 (seed 1)". Means
    and stds are over the runs that did not diverge (their metrics are NaN).
    """
    import pandas as pd

    metrics = [m for m in (metrics or METRICS) if m in runs.columns]
    if runs.empty:
        raise InputError("no runs to rank")
    g = runs.groupby("method", sort=False)
    out = pd.DataFrame(index=pd.Index(list(g.groups), name="method"))
    for m in metrics:
        out[METRICS[m]] = g[m].mean()
        out[f"{METRICS[m]} ±"] = g[m].std(ddof=1)
    out["seeds"] = g.size()
    out["trained seeds"] = run_status(runs).eq(TRAINED).groupby(runs["method"], sort=False).sum()
    out["status"] = pd.Series(method_status(runs))
    if "failure" in runs:
        failures = runs.dropna(subset=["failure"]).groupby("method", sort=False)["failure"].agg(", ".join)
        out.loc[failures.index, "status"] = failures
    key = METRICS["down_rauroc"] if "down_rauroc" in metrics else out.columns[0]
    out["_order"] = out["status"].ne(TRAINED)
    return out.sort_values(["_order", key], ascending=[True, False]).drop(columns="_order")


def ranked(board):
    """The rows of a `leaderboard` that are ranked: the methods that trained."""
    return board[board["status"] == TRAINED] if "status" in board else board


def seed_rank_stability(runs, metric: str = "down_rauroc") -> dict:
    """How stable the ranking of the trained methods (`trained_runs`) by ``metric`` is across seeds: each seed's
    runs rank the methods, and Kendall's tau (tau-b, `scipy.stats.kendalltau`) is computed for every pair of seeds
    over the methods both seeds ran. Returns ``{"pairs": {(seed_a, seed_b): tau}, "mean": mean tau, "methods": n}``
    (tau NaN for a pair with fewer than 2 common methods or a constant ranking; ``mean`` over the finite ones)."""
    from itertools import combinations

    from scipy import stats

    if metric not in runs:
        raise InputError(f"runs have no column {metric!r}")
    runs = trained_runs(runs)
    table = runs.pivot_table(index="method", columns="seed", values=metric, aggfunc="mean")
    pairs = {}
    for a, b in combinations(table.columns, 2):
        both = table[[a, b]].dropna()
        tau = stats.kendalltau(both[a], both[b]).statistic if len(both) >= 2 else math.nan
        pairs[(int(a), int(b))] = float(tau)
    finite = [t for t in pairs.values() if math.isfinite(t)]
    return {"pairs": pairs, "mean": float(np.mean(finite)) if finite else math.nan, "methods": len(table)}


def leaderboard_markdown(board, digits: int = 3) -> str:
    """The leaderboard as Markdown with "mean ± std" cells (method names as `label` gives them, "—" where no run
    has the metric), and its status ("did not train (k of n seeds trained)" for a method that is not ranked,
    "diverged at step N (seed s); k of n seeds trained" for one with a run that diverged)."""
    extra = ("seeds", "trained seeds", "status")
    head = ["method"] + [c for c in board.columns if not c.endswith(" ±") and c not in extra] + ["seeds"]
    head += ["status"] if "status" in board else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for method, row in board.iterrows():
        cells = [label(method)]
        for c in head[1:head.index("seeds")]:
            mean, std = row[c], row.get(f"{c} ±", math.nan)
            nd = 0 if c.endswith(" s") else digits
            cells.append("—" if not math.isfinite(mean) else
                         f"{mean:.{nd}f}" + (f" ± {std:.{nd}f}" if math.isfinite(std) else ""))
        cells.append(str(int(row["seeds"])))
        if "status" in board:
            counts = f"{int(row['trained seeds'])} of {int(row['seeds'])} seeds trained"
            cells.append(row["status"] if row["status"] == TRAINED else f"{row['status']} ({counts})"
                         if row["status"] == NOT_TRAINED else f"{row['status']}; {counts}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
