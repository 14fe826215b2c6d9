"""The claims notebook 09 checks against URL (Kirchhof et al. 2023), as one claims table (`TABLE`): our
leaderboard beside the paper's statements, the paper's rank correlations recomputed on our runs, and the verdict,
every row decided by the one engine of `hedgekit.papers.verdict` (`Verdict.decide`: the whole 95% interval inside
the row's declared band is matched, wholly outside is not matched, else inconclusive).

Correlations are Spearman's rho over runs (one point per trained model), as the paper's Fig. 4 uses one point per
trained model (it says "Rank Corr." without naming the coefficient); the 95% interval is a percentile bootstrap over
the points. Fig. 4 pools over *hyper-parameters*, so its rows are decided on the learning-rate sweep
(`benchmark.sweep_runs`, read from the cache when `url_verdict` is not given it), never on the seed-pooled runs;
those are shown in a note for comparison.

Rankings are decided with rank sets (`leaderboard.rank_intervals`: pairwise t tests on the pooled within-method
variance over seeds, Holm-corrected over all pairs, jointly at 95%) against the band of ranks the paper's statement
allows; methods whose rank sets overlap are one tied group (`leaderboard.tied_groups`), listed in a note.

Like with like: the paper's levels (ImageNet -> CUB / CARS / SOP) and ours (seen -> unseen digits) are on
different data, so no claim compares absolute levels across them (e.g. our best R-AUROC against the paper's
0.569; "most models above 0.7 upstream" is a note); ranks and correlations within one benchmark do carry over.
Our ``infonce`` and ``mcinfonce`` are supervised (`hedgekit.papers.url.benchmark.LABELS`); the paper's unsupervised
ones are ``infonce_2v`` and ``mcinfonce_2v`` (two augmented views, no labels), and a claim about the paper's
MCInfoNCE / InfoNCE uses those when they were run (`paper_counterpart`).

Only methods that trained are ranked or correlated (`benchmark.method_status`: upstream R@1 and accuracy at least
`benchmark.TRAINED_AT`): a method that never learned an embedding scores u(x) on noise, so its ranks and its points
in a correlation would measure the budget, not the method. A method that trained but whose upstream u(x) is not
above chance on its seeds (`leaderboard.upstream_learned`) is marked "u(x) did not learn" and kept out of the
uncertainty ranking and the correlations (not out of the R@1 ranking: its embedding trained). Both are conditions
of the verdict and notes.
"""
from __future__ import annotations

import math

import numpy as np

from hedgekit.errors import InputError
from hedgekit.papers.url import benchmark, numbers
from hedgekit.papers.url.leaderboard import (NOT_TRAINED, TRAINED, TRAINED_AT, UX_NOT_LEARNED, correlated_runs,
                                             label, lower_end, rank_intervals, ranked, ranking, tied_groups,
                                             trained_runs)
from hedgekit.papers.url.numbers import DISPLAY
from hedgekit.papers.verdict import (CONDITION, RANKING, SANITY, SEEDS, Check, Interval, LEVEL, Row, Verdict,
                                     check_table, fmt, paired_effect, tolerance_band)

__all__ = ["CORRELATION_PAIRS", "spearman", "correlations", "side_by_side", "paper_statements", "ranks", "URLVerdict",
           "url_verdict", "paper_counterpart", "TABLE", "measure", "CORRELATION_TOL", "LOWER_HALF", "NotRanked"]

# the paper's method key -> ours that implements it as the paper does, where our key of that name differs
PAPER_COUNTERPART = {"infonce": "infonce_2v", "mcinfonce": "mcinfonce_2v"}


def paper_counterpart(method: str, present) -> str:
    """Our method for the paper's ``method``: the unsupervised two-view one (`PAPER_COUNTERPART`) if it is among
    ``present``, else the method of the same key."""
    ours = PAPER_COUNTERPART.get(method)
    return ours if ours is not None and ours in present else method

# (x metric, y metric, key in numbers.CORRELATIONS or None, label)
CORRELATION_PAIRS = (
    ("up_rauroc", "down_rauroc", "up_vs_down_rauroc", "upstream R-AUROC vs downstream R-AUROC (Fig. 4 left)"),
    ("up_crop", "down_rauroc", "crop_vs_down_rauroc", "upstream crop rate vs downstream R-AUROC (Fig. 4 right)"),
    ("down_r1", "down_rauroc", None, "downstream R@1 vs downstream R-AUROC (App. C.2, across runs)"),
)


def spearman(x, y, n_boot: int = 2000, seed: int = 0) -> dict:
    """Spearman's rho of paired values (NaN pairs dropped), its p-value and a 95% percentile-bootstrap interval.

    Returns ``{"rho", "p", "lo", "hi", "n"}``; rho is NaN with fewer than 3 pairs or a constant input.
    """
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    nan = {"rho": math.nan, "p": math.nan, "lo": math.nan, "hi": math.nan, "n": n}
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return nan
    res = stats.spearmanr(x, y)
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, (n_boot, n))
    rx, ry = stats.rankdata(x[i], axis=1), stats.rankdata(y[i], axis=1)  # Spearman = Pearson of the ranks
    rx, ry = rx - rx.mean(1, keepdims=True), ry - ry.mean(1, keepdims=True)
    den = np.sqrt((rx ** 2).sum(1) * (ry ** 2).sum(1))
    ok = den > 0  # resamples with a constant side have no rho
    boot = (rx * ry).sum(1)[ok] / den[ok]
    lo, hi = np.percentile(boot, [2.5, 97.5]) if len(boot) else (math.nan, math.nan)
    return {"rho": float(res.statistic), "p": float(res.pvalue), "lo": float(lo), "hi": float(hi), "n": n}


def correlations(runs):
    """The paper's metric correlations recomputed on our runs of the methods that trained and whose u(x) learned
    (`leaderboard.correlated_runs`): a DataFrame indexed by pair label with ``rho, p, lo, hi, n`` and the paper's
    value (NaN where the paper gives a count, not a value)."""
    import pandas as pd

    runs = correlated_runs(runs)
    rows = {}
    for a, b, key, title in CORRELATION_PAIRS:
        r = spearman(runs[a], runs[b])
        r["paper"] = numbers.CORRELATIONS[key][0] if key else math.nan
        rows[title] = r
    return pd.DataFrame.from_dict(rows, orient="index")


def ranks(board, column: str, statuses=(TRAINED,)) -> dict:
    """method -> rank (1 = best, highest mean) by a leaderboard column, among the methods whose status is one of
    ``statuses`` (default: the ranked ones, `ranked`; R@1 also ranks those whose u(x) did not learn)."""
    rows = board[board["status"].isin(statuses)] if "status" in board else ranked(board)
    order = rows[column].sort_values(ascending=False, kind="stable").index
    return {m: i + 1 for i, m in enumerate(order)}


def _groups_text(runs) -> tuple[dict, dict]:
    """method -> "k of K" (its tied group) and method -> "[lo, hi]" (its rank set) of `ranking`; empty when the
    runs cannot be ranked (one run per method)."""
    try:
        r = ranking(runs)
    except InputError:
        return {}, {}
    groups = int(r["tied group"].max()) if len(r) else 0
    return ({m: f"{int(k)} of {groups}" for m, k in r["tied group"].items()},
            {m: f"[{x['rank lo']:g}, {x['rank hi']:g}]" for m, x in r.iterrows()})


def side_by_side(board, runs=None):
    """Our leaderboard, one row per method (named by `benchmark.label`): downstream R-AUROC and R@1 (mean ± std
    over seeds) and ranks (— for a method that is not ranked: it did not train, or its u(x) did not learn), beside
    what carries over from the paper: its family, whether the paper lists the method in its top 3 per backbone
    (App. C.6). Given the ``runs``, the rank set (`leaderboard.rank_intervals`) and tied group (`tied_groups`) join
    them.
    The paper's own numbers (ImageNet -> CUB/CARS/SOP) are on other data and live apart, in `paper_statements`."""
    import pandas as pd

    rr = ranks(board, "R-AUROC (down)")
    r1 = ranks(board, "R@1 (down)", (TRAINED, UX_NOT_LEARNED))
    group, interval = _groups_text(runs) if runs is not None else ({}, {})
    rows = []
    for m, row in board.iterrows():
        rows.append({"method": label(m), "family": numbers.FAMILY.get(m, ""),
                     "ours R-AUROC": f"{row['R-AUROC (down)']:.3f} ± {row['R-AUROC (down) ±']:.3f}",
                     "rank": rr.get(m, "—"), **({"rank interval": interval.get(m, "—"),
                                                 "tied group": group.get(m, "—")} if runs is not None else {}),
                     "ours R@1": f"{row['R@1 (down)']:.3f} ± {row['R@1 (down) ±']:.3f}",
                     "rank R@1": r1.get(m, "—"), "status": row.get("status", ""),
                     "paper's top 3 ResNet-50": "yes" if m in numbers.TOP3["ResNet-50"] else "",
                     "paper's top 3 ViT-M": "yes" if m in numbers.TOP3["ViT-Medium"] else ""})
    return pd.DataFrame(rows).set_index("method")


def paper_statements(methods=numbers.METHODS):
    """The paper's own per-method numbers and statements (ImageNet upstream, zero-shot CUB/CARS/SOP; names as the
    paper writes them, its InfoNCE and MCInfoNCE unsupervised): the stated averages (Sec. 4.3, backbone not
    named) and the ResNet-50 / ViT-Medium statements. Not comparable level for level with `side_by_side`."""
    import pandas as pd

    rows = [{"method (paper)": DISPLAY.get(m, m), "R-AUROC (Sec. 4.3)": numbers.HEADLINE_R_AUROC.get(m, math.nan),
             "R@1 (Sec. 4.3)": numbers.HEADLINE_R1.get(m, math.nan),
             "ResNet-50": numbers.RESNET50.get(m, ("",))[0], "ViT-Medium": numbers.VIT_MEDIUM.get(m, ("",))[0]}
            for m in methods]
    return pd.DataFrame(rows).set_index("method (paper)")


class URLVerdict(Verdict):
    """`hedgekit.papers.verdict.Verdict` with the benchmark's training context (the base class quotes HIB's)."""

    runs_text: str = ""  # set by `url_verdict`: the runs, budget and CPU-seconds behind the numbers

    def context(self) -> str:
        return self.runs_text


def _context(runs, budget_name: str) -> str:
    cpu = runs["cpu_seconds"].sum() if "cpu_seconds" in runs else math.nan
    txt = (f"{len(runs)} runs ({runs['method'].nunique()} methods x {runs['seed'].nunique()} seeds), "
           f"{budget_name} budget, {cpu:.0f} CPU-seconds in total; the paper: {numbers.PAPER_TRAINING}.")
    if budget_name == "fast":
        txt += (" FAST mode: every method trains for seconds, so differences between methods are mostly noise; "
                "run with FAST = False for the comparison that counts.")
    return txt


# ------------------------------------------------------------------------------------------ measures of the rows
CORRELATION_TOL = 0.3  # Fig. 4's rows: the paper's rho +- this (weak stays weak, moderate stays moderate)
# "fails to transfer": a relative rank (0 = best, 1 = last) in the lower half, the middle excluded: 0.5 is where a
# method that noise cannot place sits (ranks 5-8 of 8 are 0.57-1)
LOWER_HALF = (0.55, 1.0)
RANDOM_RELATIVE_RANK = 0.5  # the expected relative rank of a method placed at random
RANDOM_RANK = 4.5  # the expected rank of a method placed at random among 8
RANDOM_WORST_OF_3 = 6.75  # the expected worst rank of 3 methods placed at random among 8: 3 x (8 + 1) / 4
STRONG_RHO = 0.7  # a strong rank correlation: what "says little" denies
R_AUROC, R1 = "down_rauroc", "down_r1"
RANKED_BY = {R_AUROC: "downstream R-AUROC", R1: "downstream R@1"}


class NotRanked(Interval):
    """A ranking row's measure when a method it names is run but not ranked (it did not train, its u(x) did not
    learn) or too few methods are ranked: no interval, so the engine reads the row *inconclusive*; ``noise`` says
    why."""

    def text(self, digits: int = 2) -> str:
        return f"not ranked: {self.noise}"


def _correlation(title: str, source: str = "fig4"):
    """Measure: the correlation ``title`` (`CORRELATION_PAIRS`) of ``measured[source]`` as an `Interval` (None when
    that source was not measured)."""
    def measure(m):
        if m.get(source) is None:
            return None
        r = m[source].loc[title]
        noise = f"bootstrap over {int(r['n'])} trained models" + (", a learning-rate sweep" if source == "fig4" else "")
        return Interval(float(r["rho"]), math.nan, n=0, kind="Spearman's rho", noise=noise, low=float(r["lo"]),
                        high=float(r["hi"]))
    return measure


def _rank_measure(paper_methods, metric: str, stat, least: int, counterpart: bool = True):
    """Measure of a ranking row: ``stat(ranks, n)`` of our methods for ``paper_methods`` (their ranks, n methods
    ranked) by ``metric``, as an `Interval` from ``stat`` at the low ends to ``stat`` at the high ends of their rank
    sets (`leaderboard.rank_intervals`, jointly at 95%; every ``stat`` here is non-decreasing in each rank) around
    its value at the point ranks. None when one of them was not run; `NotRanked` when one is not ranked, fewer
    than ``least`` methods are, or the runs cannot be ranked."""
    def measure(m):
        r = m["ranks"][metric]
        methods = [] if isinstance(r, str) else list(r.index)
        ours = [paper_counterpart(p, methods) if counterpart else p for p in paper_methods]
        if any(o not in m["status"] for o in ours):
            return None
        if isinstance(r, str):
            return NotRanked(math.nan, math.nan, kind="rank", noise=r)
        out = [f"{label(o)} {m['status'][o]}" for o in ours if o not in methods]
        if out or len(methods) < least:
            why = "; ".join(out) or f"only {len(methods)} methods ranked (at least {least} to decide)"
            return NotRanked(math.nan, math.nan, kind="rank", noise=why)
        n = len(methods)
        point, lo, hi = (stat(r.loc[ours, c].to_numpy(float), n) for c in ("rank", "rank lo", "rank hi"))
        names = ", ".join(label(o) for o in ours)
        df = int(r["runs"].sum()) - n
        return Interval(float(point), math.nan, n=int(r["runs"].min()),  # seeds of the least-seeded ranked method
                        kind=f"{names} among {n} ranked by {RANKED_BY[metric]}",
                        noise=f"rank sets from pooled within-method variance over seeds ({df} df), Holm-corrected "
                              f"pairwise t tests", low=float(lo), high=float(hi))
    return measure


def _worst(r, n):
    """The worst (largest) of the ranks ``r`` (last axis: the methods), for "these are the best k"."""
    return np.max(r, axis=-1)


def _own(r, n):
    """The one method's rank."""
    return r[..., 0]


def _relative(r, n):
    """The one method's relative rank among ``n``: 0 = best, 1 = last."""
    return (r[..., 0] - 1) / (n - 1)


def _above_chance(m):
    """Sanity: some ranked method's downstream R-AUROC lies above chance by its 95% t interval over seeds."""
    runs = m["runs"]
    if runs.empty:
        return None
    low = {k: lower_end(g) for k, g in runs.groupby("method", sort=False)["down_rauroc"]}
    above = [k for k, v in low.items() if v > 0.5]
    means = runs.groupby("method")["down_rauroc"].mean()
    return Check(bool(above), f"{len(above)} of {len(low)} ranked methods above 0.5 by their 95% t interval over "
                              f"seeds (best {label(means.idxmax())} {means.max():.3f})")


def _down_below_up(m):
    """Sanity: the paired (per run) upstream minus downstream R-AUROC of the ranked methods lies above 0."""
    runs = m["runs"]
    if len(runs) < 2:
        return None
    gap = paired_effect(runs["up_rauroc"].to_numpy(float), runs["down_rauroc"].to_numpy(float),
                        noise="spread over runs")
    lo, _ = gap.interval()
    return Check(bool(lo > 0), f"up - down = {gap.text(3)}")


def _trade_off(m):
    """Sanity: R@1 and R-AUROC downstream are negatively correlated over the seeds' runs (interval below 0)."""
    r = m["pooled"].loc[CORRELATION_PAIRS[2][3]]
    if not math.isfinite(r["lo"]):
        return None
    return Check(bool(r["hi"] < 0), f"rho = {fmt(r['rho'], 2)} [{fmt(r['lo'], 2)}, {fmt(r['hi'], 2)}], "
                                    f"n = {int(r['n'])} runs")


def _trained(m):
    """Condition: every method trained an embedding (`method_status`)."""
    st = m["status"]
    bad = [label(k) for k, v in st.items() if v not in (TRAINED, UX_NOT_LEARNED)]
    return Check(not bad, f"{len(st) - len(bad)} of {len(st)} methods trained" +
                 (f"; did not train: {', '.join(bad)}" if bad else ""))


def _ux_learned(m):
    """Condition: every method that trained has a u(x) above chance upstream (`upstream_learned`)."""
    st, up = m["status"], m["board"]["R-AUROC (up)"] if "R-AUROC (up)" in m["board"] else None
    bad = [k for k, v in st.items() if v == UX_NOT_LEARNED]
    n = sum(v in (TRAINED, UX_NOT_LEARNED) for v in st.values())
    return Check(not bad, f"{n - len(bad)} of {n} trained methods" + (
        "; not above chance: " + ", ".join(f"{label(k)} ({up[k]:.3f})" if up is not None else label(k) for k in bad)
        if bad else ""))


RANK_BAND = "decided on the rank sets over seeds (Holm-corrected, jointly at 95%) of "
TABLE = check_table((
    Row("fig4-up-down", "upstream R-AUROC says little about downstream R-AUROC (rank correlation over all "
        "hyper-parameters)", "Fig. 4 left, Sec. 4.5", LEVEL, _correlation(CORRELATION_PAIRS[0][3]),
        paper=numbers.CORRELATIONS["up_vs_down_rauroc"][0], band=lambda p: tolerance_band(p, CORRELATION_TOL),
        reason=f"the paper's rho ± {CORRELATION_TOL}: a weak correlation stays below a moderate 0.4 (the paper "
               "gives no interval); decided on our learning-rate sweep, pooled over hyper-parameters like Fig. 4",
        unit="", null=STRONG_RHO, bounds=(-1.0, 1.0),
        compares="Spearman ρ of upstream and downstream R-AUROC over the sweep (Fig. 4 left)"),
    Row("fig4-crop-down", "the upstream cropped-image rate predicts downstream R-AUROC", "Fig. 4 right, Sec. 4.5",
        LEVEL, _correlation(CORRELATION_PAIRS[1][3]), paper=numbers.CORRELATIONS["crop_vs_down_rauroc"][0],
        band=lambda p: tolerance_band(p, CORRELATION_TOL),
        reason=f"the paper's rho ± {CORRELATION_TOL}, as for Fig. 4 left: a moderate correlation, from weak (0.24) "
               "to strong (0.84); decided on our learning-rate sweep", unit="", null=0.0, bounds=(-1.0, 1.0),
        compares="Spearman ρ of the upstream cropped-image rate and downstream R-AUROC over the sweep (Fig. 4 right)"),
    Row("c6-top3-resnet50", "the best three pretrained models (ResNet-50): ELK, MCInfoNCE, nivMF", "App. C.6",
        RANKING, _rank_measure(numbers.TOP3["ResNet-50"], R_AUROC, _worst, 6), band=(1, 3),
        paper_text="ELK, MCInfoNCE, nivMF ranks 1-3", digits=1, unit="", null=RANDOM_WORST_OF_3,
        compares="worst downstream R-AUROC rank of ELK, MCInfoNCE, nivMF (App. C.6)",
        reason=RANK_BAND + "the worst rank of the three: all three in our top 3 (one backbone here, so each of the "
               "paper's backbones is a row)"),
    Row("c6-top3-vit", "the best three pretrained models (ViT-Medium): ELK, Losspred, SNGP", "App. C.6", RANKING,
        _rank_measure(numbers.TOP3["ViT-Medium"], R_AUROC, _worst, 6), band=(1, 3), digits=1, unit="",
        paper_text="ELK, Losspred, SNGP ranks 1-3", null=RANDOM_WORST_OF_3,
        compares="worst downstream R-AUROC rank of ELK, Losspred, SNGP (App. C.6)",
        reason=RANK_BAND + "the worst rank of the three: all three in our top 3"),
    Row("s43-r1-nivmf", "nivMF has the best R@1 (0.57)", "Sec. 4.3", RANKING, _rank_measure(("nivmf",), R1, _own, 4),
        band=(1, 1.5), paper_text="1st", digits=1, unit="", null=RANDOM_RANK,
        compares="nivMF: downstream R@1 rank (Sec. 4.3)",
        reason=RANK_BAND + "nivMF's R@1 rank: first, or tied for first (average rank 1.5); methods whose u(x) did "
               "not learn are ranked by R@1 (their embedding trained)"),
    Row("s43-r1-losspred", "Losspred has the second-best R@1 (0.53)", "Sec. 4.3", RANKING,
        _rank_measure(("losspred",), R1, _own, 4), band=(1.5, 2.5), paper_text="2nd", digits=1, unit="",
        null=RANDOM_RANK, compares="Losspred: downstream R@1 rank (Sec. 4.3)",
        reason=RANK_BAND + "Losspred's R@1 rank: second, or tied with the first or the third"),
    Row("s43-ce-fails", "the baseline CE fails to transfer u(x)", "Sec. 4.3", RANKING,
        _rank_measure(("ce",), R_AUROC, _relative, 4), band=LOWER_HALF, paper_text="lower ranks", unit="",
        null=RANDOM_RELATIVE_RANK, compares="CE: relative downstream R-AUROC rank (Sec. 4.3)",
        reason=RANK_BAND + "CE's relative rank (0 = best, 1 = last): 'fails' read as the lower half, the middle excluded; the paper "
               "gives no rank; our supervised InfoNCE is not the paper's baseline and is not tested here"),
    Row("s43-infonce-fails", "the unsupervised baseline InfoNCE fails to transfer u(x)", "Sec. 4.3", RANKING,
        _rank_measure(("infonce_2v",), R_AUROC, _relative, 4, counterpart=False), band=LOWER_HALF,
        null=RANDOM_RELATIVE_RANK, compares="InfoNCE (two views): relative downstream R-AUROC rank (Sec. 4.3)",
        paper_text="lower ranks", unit="", reason=RANK_BAND + "InfoNCE's (two views, unsupervised) relative rank: "
                                                  "the lower half, as for CE"),
    Row("s43-ensemble-fails", "ensembles fail to provide transferable uncertainty estimates", "Sec. 4.3", RANKING,
        _rank_measure(("ensemble",), R_AUROC, _relative, 4), band=LOWER_HALF, paper_text="lower ranks", unit="",
        null=RANDOM_RELATIVE_RANK, compares="Ensemble: relative downstream R-AUROC rank (Sec. 4.3)",
        reason=RANK_BAND + "Ensemble's relative rank: the lower half, as for CE"),
    Row("s43-above-chance", "u(x) learned upstream transfers zero-shot: downstream R-AUROC above chance (0.5)",
        "Sec. 4.3", SANITY, _above_chance, paper_text="above 0.5",
        reason="sign only: the paper's size (0.569 at best) is on other data, so no size carries over"),
    Row("s45-down-below-up", "downstream R-AUROC below upstream (not stated in the paper)", "Sec. 4.5", SANITY,
        _down_below_up, paper_text="not stated", reason="the paper does not state it (Sec. 4.5 gives the weak "
                                                         "correlation, not a drop); shown as what transfer costs here"),
    Row("c2-trade-off", "R@1 and R-AUROC trade off (negative rank correlation within a model, across "
        "hyper-parameters)", "App. C.2", SANITY, _trade_off, paper_text="negative in 15 of 22 models",
        reason="the paper gives a count of models, no size; ours pools methods and seeds, not one model's "
               "hyper-parameters, so it is shown, not counted"),
    Row("cond-trained", "every method learns an embedding upstream (the paper's models reach ImageNet top-1 up to "
        "0.84)", "App. C.3", CONDITION, _trained, paper_text="pretrained",
        reason=f"the budget was set so that the methods train (upstream R@1 and accuracy >= {TRAINED_AT['up_r1']} "
               "in every seed); one that did not is left out of every rank and correlation"),
    Row("cond-ux-learned", "u(x) learns upstream (above chance): the premise of every transfer claim",
        "Sec. 4.5", CONDITION, _ux_learned, paper_text="most above 0.7",
        reason="decided on each method's seeds: the 95% t interval of its upstream R-AUROC lies above 0.5; one "
               "whose does not is marked 'u(x) did not learn', out of the uncertainty ranking and the correlations"),
), table="URL")


def _cached_sweep(runs, seed: int):
    """The learning-rate sweep of ``runs``' budget (`benchmark.sweep_runs`) as far as the cache holds it, nothing
    trained: ``runs``' runs of ``seed`` with the cached runs of that seed at every `benchmark.sweep_budgets`
    budget; None when no sweep run is cached."""
    import pandas as pd

    try:
        budgets = benchmark.sweep_budgets(runs["budget"].iloc[0]) if "budget" in runs else []
    except InputError:  # a budget with no sweep
        return None
    swept = [r[r["seed"] == seed] for r in (benchmark.cached_runs(b) for b in budgets) if not r.empty]
    swept = [r[r["method"].isin(runs["method"])] for r in swept if not r.empty]
    if not swept:
        return None
    return pd.concat([runs[runs["seed"] == seed], *swept], ignore_index=True)


def _rank_sets(runs, metric: str):
    """`leaderboard.rank_intervals` of ``runs`` by ``metric`` (no rows when there are no runs), or why the runs
    cannot be ranked (one run per method)."""
    import pandas as pd

    if runs.empty:
        return pd.DataFrame(columns=["mean", "runs", "rank", "rank lo", "rank hi"])
    try:
        return rank_intervals(runs, metric)
    except InputError as exc:
        return str(exc)


def measure(runs, board, sweep=None) -> dict:
    """What the rows of `TABLE` read (`Row.measure`): ``status`` (method -> the leaderboard's status), ``board``,
    ``runs`` (`correlated_runs`: the ranked methods), ``pooled`` (`correlations` over seeds), ``fig4``
    (`correlations` over the learning-rate ``sweep``'s runs of the methods ranked on the seeds, None without a sweep)
    and ``ranks`` (metric -> `_rank_sets`: downstream R-AUROC over the ranked methods, R@1 over every method that
    trained)."""
    ok, embedded = correlated_runs(runs), trained_runs(runs)
    sweep = sweep[sweep["method"].isin(set(ok["method"]))] if sweep is not None else None
    ranks = {metric: _rank_sets(r, metric) for metric, r in ((R_AUROC, ok), (R1, embedded))}
    return {"status": dict(board["status"]) if "status" in board else {m: TRAINED for m in board.index},
            "board": board, "runs": ok, "pooled": correlations(runs), "ranks": ranks,
            "fig4": correlations(sweep) if sweep is not None else None}


def url_verdict(runs, board, budget_name: str = "paper", sweep=None) -> URLVerdict:
    """The paper's findings (`TABLE`) decided on our runs (one row per run), leaderboard (`benchmark.leaderboard`)
    and learning-rate ``sweep`` (`benchmark.sweep_runs`; default: what the cache holds of it for the runs' first
    seed, `_cached_sweep`, and Fig. 4's rows are left out, with a note, when it holds none)."""
    v = URLVerdict("09 URL benchmark")
    v.runs_text = _context(runs, budget_name)
    if sweep is None and not runs.empty:
        sweep = _cached_sweep(runs, int(runs["seed"].min()))
    m = measure(runs, board, sweep)
    v.decide(TABLE, m)
    _notes(v, m, sweep is not None)
    return v


def _notes(v: URLVerdict, m: dict, swept: bool) -> None:
    """`url_verdict`'s notes: what was left out and why, the tied groups, the seed-pooled correlations, and the
    paper's levels on other data (Sec. 4.3, 4.5) beside ours."""
    st, board = m["status"], m["board"]
    for status, why in ((NOT_TRAINED, f"in some seed, upstream R@1 below {TRAINED_AT['up_r1']} or accuracy below "
                                      f"{TRAINED_AT['up_acc']}; left out of every rank and correlation"),
                        (UX_NOT_LEARNED, "upstream R-AUROC not above 0.5 by its 95% interval over seeds; left out of "
                                         "the uncertainty ranking and the correlations, ranked by R@1 only")):
        names = [label(k) for k, s in st.items() if s == status]
        if names:
            v.note(f"{status.capitalize()} ({why}): {', '.join(names)}.")
    r = m["ranks"][R_AUROC]
    if isinstance(r, str):
        v.note(f"Not ranked by downstream R-AUROC: {r}.")
    elif len(r):
        v.note("Ranked by downstream R-AUROC in tied groups (methods whose rank sets overlap; rank sets from the "
               "pooled within-method variance over seeds, Holm-corrected pairwise t tests, jointly at 95%): "
               + " > ".join("{" + ", ".join(label(k) for k in g) + "}" for g in tied_groups(r)) + ".")
    pooled = m["pooled"]
    v.note(("Fig. 4 is decided on the learning-rate sweep; for comparison, " if swept else
            "No learning-rate sweep was found (`benchmark.sweep_runs`), so Fig. 4's rows are not decided; ")
           + "pooled over seeds (mixing methods and seed noise, not the paper's way): " + "; ".join(
               f"{t}: rho {fmt(r['rho'], 2)} [{fmt(r['lo'], 2)}, {fmt(r['hi'], 2)}], n = {int(r['n'])}"
               for t, r in pooled.iloc[:2].iterrows()) + ".")
    if "R-AUROC (up)" in board and len(ranked(board)):
        up = ranked(board)["R-AUROC (up)"]
        v.note(f"Sec. 4.5 says the majority of models reach an upstream R-AUROC above "
               f"{numbers.UPSTREAM_R_AUROC_MAJORITY} on ImageNet; ours (seen digits, other data, not a claim): "
               f"{int((up > numbers.UPSTREAM_R_AUROC_MAJORITY).sum())} of {len(up)} ranked above it "
               f"(median {up.median():.3f}).")
    v.note(f"The paper's best downstream R-AUROC is {max(numbers.HEADLINE_R_AUROC.values()):.3f} on CUB/CARS/SOP; "
           "our levels are on other data (unseen digits) and are not compared with it.")
    if "R-AUROC Fashion" in board:
        fash = board["R-AUROC Fashion"]
        v.note(f"Cross-domain (2-item Fashion-MNIST, not in the paper): mean R-AUROC {fash.mean():.3f}, best "
               f"{label(fash.idxmax())} {fash.max():.3f}; unseen digits: mean {board['R-AUROC unseen'].mean():.3f}.")
    v.note("The paper's per-method values exist only in its figures; its stated averages (Sec. 4.3) do not name "
           "the backbone. Our R@1 uses cosine similarity like the official code.")
