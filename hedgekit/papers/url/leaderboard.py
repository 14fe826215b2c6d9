"""The URL benchmark's leaderboard (Kirchhof et al. 2023, Table 1 at kit scale): which runs trained, mean ± std over
seeds per method, the ranking's stability across seeds, and the Markdown table.

A run has learned an embedding when it clears `TRAINED_AT` (`run_status`); only the methods whose every run did
(`method_status`) are ranked (`leaderboard`, `ranked`), so that no u(x) is scored on an embedding it never learned.
A method that learned an embedding but whose upstream u(x) is not above chance on its seeds (`upstream_learned`) is
marked `UX_NOT_LEARNED` and kept out of the uncertainty ranking too.

Rankings are decided with rank sets that hold at the seeds we have (design notes sec. 6): `rank_sets` compares every
pair of methods by a t test on the pooled within-method variance over seeds, Holm-corrected over all pairs (Holm
1979), and places each method between the methods it is separable from; `rank_intervals` computes them from runs,
and `tied_groups` joins methods whose rank sets overlap into one tied group.
"""
from __future__ import annotations

import math

import numpy as np

from hedgekit.errors import InputError
from hedgekit.papers.url.numbers import DISPLAY

__all__ = ["LABELS", "label", "METRICS", "TRAINED_AT", "MAY_BE_NAN", "TRAINED", "NOT_TRAINED", "run_status",
           "method_status", "trained_runs", "leaderboard", "ranked", "MEASURES", "seed_rank_stability", "leaderboard_markdown",
           "CHANCE", "UX_NOT_LEARNED", "upstream_learned", "lower_end", "correlated_runs", "ALPHA", "rank_sets",
           "rank_intervals", "tied_groups", "ranking"]

# Our methods' names in tables, figures and verdicts: the paper's (`numbers.DISPLAY`), except that our ``infonce``
# and ``mcinfonce`` are *supervised* (positives are other images of the same class, `hedgekit.methods.infonce`);
# the paper's unsupervised ones (two augmented views, no labels) are ``infonce_2v`` and ``mcinfonce_2v`` and carry
# the paper's names; method keys and run / checkpoint names are unchanged.
LABELS = {**DISPLAY, "infonce": "supervised InfoNCE", "mcinfonce": "supervised MCInfoNCE",
          "infonce_2v": "InfoNCE", "mcinfonce_2v": "MCInfoNCE"}


def label(method: str) -> str:
    """The name of our ``method`` in tables and figures (`LABELS`; unknown keys as they are)."""
    return LABELS.get(method, method)


# metric -> column title in the leaderboard (in order). Each crop rate has the official code's second cropping metric
# beside it, Spearman's rho between -u of a crop and the share it kept (``crop_corr``, `protocol.evaluate_set`).
# Runs recorded before it (older cached runs) lack it: a column no run has is left out, and a method whose runs lack
# it shows "—" (`leaderboard_markdown`).
METRICS = {"down_rauroc": "R-AUROC (down)", "down_r1": "R@1 (down)", "rauroc": "R-AUROC unseen", "r1": "R@1 unseen",
           "fashion_rauroc": "R-AUROC Fashion", "fashion_r1": "R@1 Fashion", "crop": "crop rate unseen",
           "crop_corr": "crop rho unseen", "up_rauroc": "R-AUROC (up)", "up_r1": "R@1 (up)", "up_acc": "accuracy (up)",
           "up_crop": "crop rate (up)", "up_crop_corr": "crop rho (up)", "cpu_seconds": "CPU s",
           "train_seconds": "train s"}
# The metrics a run's ledger record holds as its measures (`hedgekit.papers.url.benchmark.ledger_record`): all but
# the seconds, which say how long a run took, not what it measured (the record keeps ``train_seconds`` beside them)
MEASURES = tuple(m for m in METRICS if not m.endswith("_seconds"))


# A run has learned an embedding when it clears these on the upstream (seen-class) test images: R@1, and for heads
# that classify, accuracy (NaN for the others: not checked, `MAY_BE_NAN`). Below them a method's u(x) is scored on
# an embedding it never learned (Losspred at the `paper` budget: 0.05 accuracy), so it is not ranked.
TRAINED_AT = {"up_r1": 0.7, "up_acc": 0.7}
MAY_BE_NAN = ("up_acc",)  # the accuracy of a head without logits; every other NaN metric is a failed run
TRAINED, NOT_TRAINED = "trained", "did not train"
# A method whose upstream R-AUROC is not above chance (`upstream_learned`): its embedding trained, its u(x) did not,
# so it is kept out of the uncertainty ranking and the correlations (ELK at 0.46 and nivMF at 0.45 would be ranked)
UX_NOT_LEARNED = "u(x) did not learn"
CHANCE = 0.5  # R-AUROC of a u(x) that ranks the retrieval errors at random
ALPHA = 0.05  # family-wise error rate of `rank_sets`' pairwise comparisons: the sets hold jointly at 95%


def run_status(runs):
    """Per run (row of ``runs``): `TRAINED` if it reaches every threshold of `TRAINED_AT`, else `NOT_TRAINED`.

    A NaN metric counts as trained only where `MAY_BE_NAN` allows it (the accuracy of a head without logits); a
    NaN upstream R@1 (a run that diverged, `diverged_record`) never does, nor does a run with a
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


def upstream_learned(runs, metric: str = "up_rauroc") -> dict:
    """method -> whether its upstream u(x) is above chance, decided on its runs (seeds): the lower end of the 95% t
    interval of its mean upstream R-AUROC (t with n - 1 degrees of freedom for n runs) lies above `CHANCE`. With one
    run there is no interval and its value decides (`lower_end`). NaN values (diverged runs) are dropped; a method
    with none, or runs without the column, counts as learned (nothing to decide on: `method_status` handles failed
    runs)."""
    if metric not in runs:
        return {m: True for m in runs["method"].unique()}
    out = {}
    for m, v in runs.groupby("method", sort=False)[metric]:
        v = v.astype(float).dropna().to_numpy()
        out[m] = bool(lower_end(v) > CHANCE) if len(v) else True
    return out


def lower_end(values) -> float:
    """The lower end of the 95% t interval of the mean of ``values`` (t with n - 1 degrees of freedom for n values;
    the value itself for one)."""
    from scipy import stats

    v = np.asarray(values, float)
    n = len(v)
    return float(v.mean() - (stats.t.ppf(0.975, n - 1) * v.std(ddof=1) / math.sqrt(n) if n > 1 else 0.0))


def correlated_runs(runs):
    """The runs that rankings of u(x) and its correlations are computed on: those of the methods that trained
    (`trained_runs`) and whose u(x) learned upstream (`upstream_learned`, decided on these runs)."""
    runs = trained_runs(runs)
    learned = upstream_learned(runs)
    return runs[runs["method"].map(learned).astype(bool).to_numpy()]


def rank_sets(means, runs, pooled_var, df: int):
    """Simultaneous rank sets (1 = best, the highest mean) of M methods from their means over seeds.

    Every pair (i, j) is compared by Student's t on the pooled within-method variance s_p^2 (the seeds' noise,
    taken as common to the methods): t = (mean_i - mean_j) / (s_p sqrt(1/n_i + 1/n_j)), two-sided, with ``df``
    degrees of freedom (the sum over methods of n_i - 1). Holm's step-down procedure (Holm 1979) over all
    M(M - 1)/2 pairs keeps the family-wise error rate at `ALPHA`: the k-th smallest p-value is multiplied by
    (K - k + 1) for K pairs, made non-decreasing, and compared with `ALPHA`. A pair whose adjusted test rejects is
    *separable*, ordered by its means. Method i's rank set is the integers from 1 + (the methods separably better
    than i) to M - (the methods separably worse than i): every set holds its method's true rank (for equal true
    means, one of their ranks) unless some pair is separated wrongly.

    Holm rather than Tukey's HSD: it holds for any dependence between the pairwise tests and for unequal numbers of
    runs per method (runs with NaN values are dropped), and each decision is a t test that can be checked by hand;
    Tukey's studentized range is exact only with equal runs per method, where it would separate a few more pairs.

    ``means``: (..., M), the leading axes independent leaderboards (e.g. simulated ones); ``runs``: (M,) runs per
    method; ``pooled_var``: s_p^2, shaped like ``means`` without its last axis; ``df`` > 0. Returns integer arrays
    ``(lo, hi)`` shaped like ``means``. With no seed noise (s_p = 0) every gap between means separates."""
    from scipy import stats

    means, n = np.asarray(means, float), np.asarray(runs, float)
    m = means.shape[-1]
    i, j = np.triu_indices(m, 1)
    gap = means[..., i] - means[..., j]
    se = np.sqrt(np.asarray(pooled_var, float)[..., None] * (1 / n[i] + 1 / n[j]))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(gap == 0, 0.0, np.abs(gap) / se)
    p = 2 * stats.t.sf(t, df)
    order = np.argsort(p, axis=-1, kind="stable")
    steps = len(i) - np.arange(len(i))  # Holm's multipliers K, K - 1, ..., 1
    adjusted = np.maximum.accumulate(np.minimum(1.0, steps * np.take_along_axis(p, order, -1)), axis=-1)
    reject = np.empty(p.shape, bool)
    np.put_along_axis(reject, order, adjusted <= ALPHA, axis=-1)
    separable = np.zeros(means.shape + (m,), bool)
    separable[..., i, j] = separable[..., j, i] = reject
    above = means[..., None, :] > means[..., :, None]  # [..., a, b]: b's mean above a's
    lo = 1 + (separable & above).sum(-1)
    hi = m - (separable & above.swapaxes(-1, -2)).sum(-1)
    return lo, hi


def rank_intervals(runs, metric: str = "down_rauroc"):
    """Each method's rank by ``metric`` (1 = best, the highest mean over its runs; ties share their average rank)
    and its rank set (`rank_sets`: Holm-corrected pairwise t tests on the pooled within-method variance over
    seeds, jointly at 95%).

    ``runs``: one row per run, with ``method`` and ``metric``; NaN values are dropped, and a method left with no
    run is left out. Methods are taken in order of their names and each one's values sorted, so the order of the
    rows does not matter. A method with one run is placed with the pooled variance of the others' seeds; at least
    one method needs two runs (`InputError` otherwise, as for a missing column or no values).

    Returns a DataFrame indexed by method, best first (equal means: by name): ``mean``, ``runs``, ``rank``, and
    the rank set's integer ends ``rank lo``, ``rank hi``."""
    import pandas as pd
    from scipy import stats

    if metric not in runs:
        raise InputError(f"runs have no column {metric!r}")
    values = {m: np.sort(v.astype(float).dropna().to_numpy()) for m, v in runs.groupby("method")[metric]}
    values = {m: values[m] for m in sorted(values) if len(values[m])}
    if not values:
        raise InputError(f"no run has a value of {metric!r} to rank")
    methods = list(values)
    n = np.array([len(values[m]) for m in methods])
    means = np.array([values[m].mean() for m in methods])
    df = int((n - 1).sum())
    if df == 0:
        raise InputError(f"ranking by {metric!r} needs at least 2 runs (seeds) of some method to measure the seeds' "
                         f"noise; each of the {len(methods)} methods has 1")
    pooled = sum(((values[m] - mu) ** 2).sum() for m, mu in zip(methods, means)) / df
    lo, hi = rank_sets(means, n, pooled, df)
    out = pd.DataFrame({"mean": means, "runs": n, "rank": stats.rankdata(-means), "rank lo": lo, "rank hi": hi},
                       index=pd.Index(methods, name="method"))
    return out.sort_values("rank", kind="stable")


def tied_groups(intervals) -> list[list]:
    """Methods that noise cannot separate, as tied groups (best first): methods whose rank sets overlap (a shared
    end counts) are in one group, and so, transitively, are methods joined through a third. ``intervals``:
    `rank_intervals`' frame. Within a group, methods keep their order by rank. Clear separation gives one method
    per group; methods that the seeds cannot order give one group."""
    order = intervals.sort_values(["rank lo", "rank"], kind="stable")
    groups, reach = [], -math.inf
    for m, row in order.iterrows():
        if row["rank lo"] > reach:
            groups.append([])
        groups[-1].append(m)
        reach = max(reach, row["rank hi"])
    rank = intervals["rank"]
    return sorted((sorted(g, key=lambda m: rank[m]) for g in groups), key=lambda g: rank[g[0]])


def ranking(runs, metric: str = "down_rauroc"):
    """The uncertainty ranking of ``runs``: `rank_intervals` of the methods that trained and whose u(x) learned
    (`correlated_runs`) with a ``tied group`` column (1 = the best group, `tied_groups`); empty when none did."""
    import pandas as pd

    runs = correlated_runs(runs)
    if runs.empty:
        return pd.DataFrame(columns=["mean", "runs", "rank", "rank lo", "rank hi", "tied group"])
    out = rank_intervals(runs, metric)
    out["tied group"] = pd.Series({m: k for k, g in enumerate(tied_groups(out), 1) for m in g})
    return out


def leaderboard(runs, metrics=None):
    """Mean and sample std (ddof = 1) over seeds per method: the ranked methods first, sorted by downstream
    R-AUROC, then the others (also sorted; they are not ranked): the ones whose u(x) did not learn (`upstream_learned`)
    and the ones that did not train (`method_status`).

    Columns: ``<title>`` and ``<title> ±`` for each metric of ``METRICS`` present in ``runs``, ``seeds``,
    ``trained seeds`` (runs that reach `TRAINED_AT`) and ``status``: `TRAINED`, `UX_NOT_LEARNED`, `NOT_TRAINED`, or for
    a method
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
    learned = upstream_learned(runs)
    out.loc[[m for m, ok in learned.items() if not ok and out.loc[m, "status"] == TRAINED], "status"] = UX_NOT_LEARNED
    if "failure" in runs:
        failures = runs.dropna(subset=["failure"]).groupby("method", sort=False)["failure"].agg(", ".join)
        out.loc[failures.index, "status"] = failures
    key = METRICS["down_rauroc"] if "down_rauroc" in metrics else out.columns[0]
    out["_order"] = out["status"].ne(TRAINED).astype(int) + (~out["status"].isin([TRAINED, UX_NOT_LEARNED])).astype(int)
    return out.sort_values(["_order", key], ascending=[True, False]).drop(columns="_order")


def ranked(board):
    """The rows of a `leaderboard` that are ranked: the methods that trained and whose u(x) learned."""
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
