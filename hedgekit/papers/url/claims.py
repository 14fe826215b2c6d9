"""The claims notebook 09 checks against URL (Kirchhof et al. 2023): our leaderboard beside the paper's
statements, the paper's rank correlations recomputed on our runs, and computed verdicts. Every number in a
verdict is formatted from the runs it is given (see `hedgekit.papers.verdict`).

Correlations are Spearman's rho over runs (one point per method and seed), as the paper's Fig. 4 uses one
point per trained model (it says "Rank Corr." without naming the coefficient); the 95% interval is a
percentile bootstrap over runs. A numeric correlation claim is matched when the paper's value lies inside
our interval.

Like with like: the paper's levels (ImageNet -> CUB / CARS / SOP) and ours (seen -> unseen digits) are on
different data, so no claim compares absolute levels across them (e.g. our best R-AUROC against the paper's
0.569; "most models above 0.7 upstream" is a note); ranks and correlations within one benchmark do carry over.
Our ``infonce`` and ``mcinfonce`` are supervised (`hedgekit.papers.url.benchmark.LABELS`); the paper's unsupervised
ones are ``infonce_2v`` and ``mcinfonce_2v`` (two augmented views, no labels), and a claim about the paper's
MCInfoNCE / InfoNCE uses those when they were run (`paper_counterpart`).

Only methods that trained are ranked or correlated (`benchmark.method_status`: upstream R@1 and accuracy at least
`benchmark.TRAINED_AT`): a method that never learned an embedding scores u(x) on noise, so its ranks and its points
in a correlation would measure the budget, not the method. They are listed in a note of the verdict.
"""
from __future__ import annotations

import math

import numpy as np

from hedgekit.papers.url import numbers
from hedgekit.papers.url.leaderboard import NOT_TRAINED, TRAINED_AT, label, method_status, ranked, trained_runs
from hedgekit.papers.url.numbers import DISPLAY
from hedgekit.papers.verdict import Verdict, direction_verdict, fmt, paired_effect

__all__ = ["CORRELATION_PAIRS", "spearman", "correlations", "side_by_side", "paper_statements", "ranks", "URLVerdict",
           "url_verdict", "paper_counterpart"]

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
    """The paper's metric correlations recomputed on our runs of the methods that trained (`trained_runs`): a
    DataFrame indexed by pair label with ``rho, p, lo, hi, n`` and the paper's value (NaN where the paper gives a
    count, not a value)."""
    import pandas as pd

    runs = trained_runs(runs)
    rows = {}
    for a, b, key, title in CORRELATION_PAIRS:
        r = spearman(runs[a], runs[b])
        r["paper"] = numbers.CORRELATIONS[key][0] if key else math.nan
        rows[title] = r
    return pd.DataFrame.from_dict(rows, orient="index")


def ranks(board, column: str) -> dict:
    """method -> rank (1 = best, highest mean) by a leaderboard column, among the methods that trained (`ranked`)."""
    order = ranked(board)[column].sort_values(ascending=False, kind="stable").index
    return {m: i + 1 for i, m in enumerate(order)}


def side_by_side(board):
    """Our leaderboard, one row per method (named by `benchmark.label`): downstream R-AUROC and R@1 (mean ± std
    over seeds) and ranks (— for a method that did not train, `benchmark.method_status`), beside what carries over from the paper: its family, whether the paper lists the method
    in its top 3 per backbone (App. C.6). The paper's own numbers (ImageNet -> CUB/CARS/SOP averages and
    per-backbone statements) are on other data and live apart, in `paper_statements`."""
    import pandas as pd

    rr, r1 = ranks(board, "R-AUROC (down)"), ranks(board, "R@1 (down)")
    rows = []
    for m, row in board.iterrows():
        rows.append({"method": label(m), "family": numbers.FAMILY.get(m, ""),
                     "ours R-AUROC": f"{row['R-AUROC (down)']:.3f} ± {row['R-AUROC (down) ±']:.3f}",
                     "rank": rr.get(m, "—"),
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


def _in_half(rank: int, n: int) -> bool:
    return rank > n / 2


def url_verdict(runs, board, budget_name: str = "paper") -> URLVerdict:
    """The paper's findings checked on our runs (one row per run) and leaderboard (`benchmark.leaderboard`)."""
    v = URLVerdict("09 URL benchmark")
    v.runs_text = _context(runs, budget_name)
    failed = [m for m, st in method_status(runs).items() if st == NOT_TRAINED]
    runs, board = trained_runs(runs), ranked(board)
    if failed:
        v.note(f"Did not train (in some seed, upstream R@1 below {TRAINED_AT['up_r1']} or accuracy below "
               f"{TRAINED_AT['up_acc']}), so left out of every rank and correlation below: "
               f"{', '.join(label(m) for m in failed)}.")
    if board.empty:
        v.note("No method trained: nothing to rank.")
        return v
    n = len(board)
    _correlation_claims(v, runs)
    _ranking_claims(v, board, n)
    _transfer_claims(v, runs, board, n)
    v.note("The paper's per-method values exist only in its figures; its stated averages (Sec. 4.3) do not name "
           "the backbone. Our R@1 uses cosine similarity like the official code.")
    return v


def _correlation_claims(v: URLVerdict, runs) -> None:
    """`url_verdict`'s rows for the paper's rank correlations (`CORRELATION_PAIRS`; App. C.2's count of negative
    within-model correlations of R@1 and R-AUROC), over the trained ``runs``."""
    corr = correlations(runs)
    for (a, b, key, title), (_, r) in zip(CORRELATION_PAIRS, corr.iterrows()):
        ours = f"rho = {fmt(r['rho'], 2)} [{fmt(r['lo'], 2)}, {fmt(r['hi'], 2)}], n = {int(r['n'])} runs"
        if key is None:  # App. C.2: a count of negative within-model correlations, not a value
            neg, total = numbers.R1_VS_RAUROC_NEGATIVE
            sig = math.isfinite(r["lo"]) and (r["hi"] < 0 or r["lo"] > 0)
            v.add("R@1 and R-AUROC trade off (negative rank correlation)", f"negative in {neg} of {total} models "
                  "(within a model, across hyper-parameters)", ours, (r["rho"] < 0) if sig else None,
                  "" if sig else "our interval contains 0; we vary seeds and methods, not hyper-parameters, so the "
                  "paper's within-model trade-off is not what this measures")
            continue
        value, where = numbers.CORRELATIONS[key]
        if not math.isfinite(r["lo"]):
            v.add(title, f"{value:.2f}", ours, None, "no interval: fewer than 3 runs or a constant metric")
            continue
        inside = r["lo"] <= value <= r["hi"]
        why = (f"the paper's {value:.2f} lies inside our 95% interval" if inside else
               f"the paper's {value:.2f} lies outside our 95% interval")
        if key == "up_vs_down_rauroc" and not inside and r["rho"] > value:
            why += ("; a hypothesis: at kit scale upstream and downstream are the same kind of images (digits), so "
                    "what a model learned about ambiguous strokes carries over, unlike ImageNet -> CUB/CARS/SOP")
        v.add(title, f"{value:.2f}", ours, inside, why)


def _ranking_claims(v: URLVerdict, board, n: int) -> None:
    """`url_verdict`'s rows for the paper's rankings (App. C.6's best three per backbone, Sec. 4.3's R@1 leaders and
    failing baselines) on the ranked ``board`` of ``n`` methods."""
    rr = ranks(board, "R-AUROC (down)")
    r1 = ranks(board, "R@1 (down)")
    ours_top3 = [m for m, k in sorted(rr.items(), key=lambda t: t[1])[:3]]
    names = ", ".join(label(m) for m in ours_top3)
    for backbone in ("ResNet-50", "ViT-Medium"):
        paper_top = [paper_counterpart(m, rr) for m in numbers.TOP3[backbone]]
        run = [m for m in paper_top if m in rr]
        hits = sum(m in ours_top3 for m in paper_top)
        caveat = ("; the paper's MCInfoNCE is unsupervised, ours supervised" if "mcinfonce" in paper_top else "")
        v.add(f"the paper's best three on {backbone} lead (App. C.6)",
              ", ".join(DISPLAY[m] for m in numbers.TOP3[backbone]), f"our top 3 by downstream R-AUROC: {names}",
              (hits >= 2) if len(run) == 3 and n >= 6 else None,
              (f"{hits} of the paper's 3 are in our top 3" + caveat) if len(run) == 3 and n >= 6 else
              "too few of these methods were run (and trained) to rank them")
    if "nivmf" in r1 and "losspred" in r1 and n >= 4:
        ok = r1["nivmf"] == 1 and r1["losspred"] == 2
        v.add("nivMF has the best R@1 (0.57), Losspred second (0.53) (Sec. 4.3)", "nivMF 1st, Losspred 2nd",
              "; ".join(f"{label(m)} {r1[m]}." for m in ("nivmf", "losspred")) + f" of {n} by R@1", ok,
              "" if ok else "; ".join(f"{label(m)} is {r1[m]}., not {want}."
                                      for m, want in (("nivmf", 1), ("losspred", 2)) if r1[m] != want))
    if "infonce_2v" in rr and n >= 4:
        ok = _in_half(rr["infonce_2v"], n)
        v.add("the unsupervised baseline InfoNCE fails to transfer u(x) (Sec. 4.3)", "below the probabilistic embeddings",
              f"{label('infonce_2v')} rank {rr['infonce_2v']} of {n}", ok,
              "InfoNCE ranks in the lower half by downstream R-AUROC" if ok else "InfoNCE ranks in the upper half")
    if "ce" in rr and n >= 4:
        ok = _in_half(rr["ce"], n)
        extra = [m for m in ("infonce", "mcinfonce") if m in rr]
        v.add("the baseline CE fails to transfer u(x) (Sec. 4.3: the baselines CE and InfoNCE)",
              "below the probabilistic embeddings", f"CE rank {rr['ce']} of {n}", ok,
              ("CE ranks in the lower half by downstream R-AUROC" if ok else
               "CE ranks in the upper half: with one small backbone and no hyper-parameter search, the simple class "
               "entropy is hard to beat")
              + ("; our InfoNCE is supervised, not the paper's unsupervised baseline, so it is not tested here ("
                 + ", ".join(f"{label(m)} rank {rr[m]}" for m in extra) + ")" if extra else ""))
    if "ensemble" in rr and n >= 4:
        ok = _in_half(rr["ensemble"], n)
        v.add("ensembles fail to provide transferable uncertainty (Sec. 4.3)", "lower ranks",
              f"Ensemble rank {rr['ensemble']} of {n}", ok, "" if ok else "Ensemble ranks in the upper half")


def _transfer_claims(v: URLVerdict, runs, board, n: int) -> None:
    """`url_verdict`'s rows and notes on transfer (Sec. 4.3, 4.5): upstream R-AUROC, downstream above chance,
    downstream below upstream, and the cross-domain Fashion pairs."""
    methods = list(board.index)
    up = board["R-AUROC (up)"]
    v.note(f"Sec. 4.5 says the majority of models reach an upstream R-AUROC above "
           f"{numbers.UPSTREAM_R_AUROC_MAJORITY} on ImageNet; ours (seen digits, other data, not a claim): "
           f"{int((up > numbers.UPSTREAM_R_AUROC_MAJORITY).sum())} of {n} above it (median {up.median():.3f}).")
    down, dstd = board["R-AUROC (down)"], board["R-AUROC (down) ±"]
    seeds = board["seeds"]
    lower = down - 2 * dstd / np.sqrt(seeds)
    above = [m for m in methods if lower[m] > 0.5]
    best = down.idxmax()
    v.add("u(x) learned upstream transfers zero-shot: downstream R-AUROC above chance (0.5) (Sec. 4.3)",
          "above 0.5", f"{len(above)} of {n} methods above 0.5 by 2 s.e. (best {label(best)} {down[best]:.3f})",
          len(above) > 0, "" if above else "no method is above chance by two standard errors")
    v.note(f"The paper's best downstream R-AUROC is {max(numbers.HEADLINE_R_AUROC.values()):.3f} on CUB/CARS/SOP; "
           "our levels are on other data (unseen digits) and are not compared with it.")
    gap = paired_effect(runs["up_rauroc"].to_numpy(float), runs["down_rauroc"].to_numpy(float),
                        noise="spread over runs")
    ok, why = direction_verdict(gap, +1, digits=3, unit="")
    v.add("downstream R-AUROC stays below upstream (Sec. 4.5)", "up > down",
          f"mean over runs of up - down = {gap.mean:+.3f} (s.e. {gap.se:.3f})", ok, why)
    fash = board["R-AUROC Fashion"] if "R-AUROC Fashion" in board else None
    if fash is not None:
        v.note(f"Cross-domain (2-item Fashion-MNIST, not in the paper): mean R-AUROC {fash.mean():.3f}, best "
               f"{label(fash.idxmax())} {fash.max():.3f}; unseen digits: mean "
               f"{board['R-AUROC unseen'].mean():.3f}.")
