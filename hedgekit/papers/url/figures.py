"""Kit-scale analogues of URL's main figures (Kirchhof et al. 2023). Every function returns ``(fig, ax)``.

* `ranking` -- Fig. 1: methods ranked by downstream R-AUROC (bars, mean ± std over seeds), with R@1 beside.
* `r1_vs_rauroc` -- Fig. 2: R-AUROC against R@1, one marker per method (seeds as faint points).
* `crop_examples` -- the crop of the cropped-image rate (`hedgekit.papers.url.protocol.crop_images`).
* `correlation_scatter` -- Fig. 4: downstream R-AUROC against upstream R-AUROC (left) and against the
  upstream cropped-image rate (right), one point per run, Spearman's rho in the titles.
* `uncertainty_vs_truth` -- u(x) against the truth: per method, u's rank on the images whose R@1
  neighbour is right and on those where it is wrong, one panel per evaluation set.

A method that did not train (`hedgekit.papers.url.benchmark.method_status`) is drawn grey and hatched (bars) or as
a grey cross (points), labelled "did not train", and left out of every rho.
"""
from __future__ import annotations

import numpy as np
from matplotlib.patches import Patch, Rectangle

from hedgekit.errors import InputError
from hedgekit.papers.url import numbers, protocol
from hedgekit.papers.url.claims import spearman
from hedgekit.papers.url.leaderboard import TRAINED, UX_NOT_LEARNED, correlated_runs, label, method_status
from hedgekit.viz.style import INK, TAB10, figure

UNTRAINED = "0.6"  # grey: a method that did not train
UNTRAINED_TEXT = " (did not train)"

__all__ = ["method_colours", "crop_examples", "ranking", "r1_vs_rauroc", "correlation_scatter", "uncertainty_vs_truth"]

# R@1 right / wrong in `uncertainty_vs_truth`: tab10's blue and red
TRUTH = {True: ("R@1 right", TAB10[0]), False: ("R@1 wrong", TAB10[3])}
TRUTH_COLUMNS = ("method", "set", "u_rank", "r1_correct")
SET_TITLES = {"up": "upstream (seen digits)", "unseen": "unseen digits", "fashion": "Fashion pairs"}


def method_colours(methods) -> dict:
    """One colour per method, fixed by its place in the paper's list (the same in every figure)."""
    order, palette = list(numbers.METHODS), TAB10 + (INK,)  # 11 methods: tab10 and near-black
    return {m: palette[(order.index(m) if m in order else len(order) + i) % len(palette)] for i, m in enumerate(methods)}


def ranking(board, title: str = ""):
    """Fig. 1 analogue: horizontal bars of downstream R-AUROC and R@1 per method in the leaderboard's order, best
    R-AUROC on top, methods that did not train below them (grey, hatched). Methods in the paper's ResNet-50 top 3
    (App. C.6) are marked with a star."""
    b = board.iloc[::-1]  # the leaderboard's order (trained methods by R-AUROC, then the others), best on top
    trained = b["status"].eq(TRAINED) if "status" in b else np.ones(len(b), bool)
    fig, ax = figure(1, 2, figsize=(9, 0.35 * len(b) + 1.5), sharey=True)
    labels = [label(m) + (" *" if m in numbers.TOP3["ResNet-50"] else "") + ("" if ok else f" ({status})")
              for m, ok, status in zip(b.index, trained, b["status"] if "status" in b else [""] * len(b))]
    colours = [method_colours(b.index)[m] if ok else UNTRAINED for m, ok in zip(b.index, trained)]
    y = np.arange(len(b))
    for a, col, ref in ((ax[0], "R-AUROC (down)", 0.5), (ax[1], "R@1 (down)", None)):
        bars = a.barh(y, b[col], xerr=b[f"{col} ±"].fillna(0), color=colours, alpha=0.85, capsize=2)
        for bar, ok in zip(bars, trained):
            bar.set_hatch("" if ok else "//")
        lo = np.nanmin(b[col] - b[f"{col} ±"].fillna(0))
        a.set_xlim(max(0.0, lo - 0.05), min(1.0, np.nanmax(b[col] + b[f"{col} ±"].fillna(0)) + 0.03))
        if ref is not None:
            a.axvline(ref, color="0.5", lw=0.8, ls="--")
        a.set_xlabel(col)
    ax[0].set_yticks(y, labels)
    ax[0].set_title("uncertainty transfer (R-AUROC)")
    ax[1].set_title("embedding transfer (R@1)")
    fig.suptitle(title or "URL at kit scale: zero-shot on unseen digits + Fashion pairs (* = paper's ResNet-50 top 3)",
                 fontsize=10)
    fig.tight_layout()
    return fig, ax


def r1_vs_rauroc(runs, x: str = "down_r1", y: str = "down_rauroc"):
    """Fig. 2 analogue: one marker per method at its mean (R@1, R-AUROC), error bars = std over seeds (a grey
    cross for a method that did not train)."""
    fig, ax = figure(figsize=(5.5, 4.2))
    colours = method_colours(runs["method"].unique())
    status = method_status(runs)
    for m, g in runs.groupby("method", sort=False):
        ok = status[m] == TRAINED
        c = colours[m] if ok else UNTRAINED
        ax.scatter(g[x], g[y], color=c, alpha=0.25, s=12)
        ax.errorbar(g[x].mean(), g[y].mean(), xerr=g[x].std(ddof=1) if len(g) > 1 else None,
                    yerr=g[y].std(ddof=1) if len(g) > 1 else None, fmt="o" if ok else "x", color=c, capsize=2,
                    label=label(m) + ("" if ok else UNTRAINED_TEXT))
    ax.axhline(0.5, color="0.5", lw=0.8, ls="--")
    ax.set_xlabel("R@1 (downstream)")
    ax.set_ylabel("R-AUROC (downstream)")
    ax.legend(fontsize=7, ncol=2, frameon=False)
    ax.set_title("R-AUROC vs R@1 (cf. the paper's Fig. 2)")
    fig.tight_layout()
    return fig, ax


def correlation_scatter(runs):
    """Fig. 4 analogue: downstream R-AUROC vs upstream R-AUROC and vs upstream crop rate, one point per run; rho
    over the runs of the methods that trained and whose u(x) learned (`correlated_runs`), the others drawn as grey
    crosses."""
    fig, ax = figure(1, 2, figsize=(9.5, 4), sharey=True)
    colours = method_colours(runs["method"].unique())
    kept = correlated_runs(runs)
    status = {m: TRAINED if m in set(kept["method"]) else st if st != TRAINED else UX_NOT_LEARNED
              for m, st in method_status(runs).items()}
    for a, col, key, name in ((ax[0], "up_rauroc", "up_vs_down_rauroc", "upstream R-AUROC"),
                              (ax[1], "up_crop", "crop_vs_down_rauroc", "upstream cropped-image rate")):
        for m, g in runs.groupby("method", sort=False):
            ok = status[m] == TRAINED
            a.scatter(g[col], g["down_rauroc"], color=colours[m] if ok else UNTRAINED, marker="o" if ok else "x",
                      s=18, label=label(m) + ("" if ok else f" ({status[m]}), not in rho"))
        r = spearman(kept[col], kept["down_rauroc"])
        a.set_title(f"rho = {r['rho']:.2f} (paper {numbers.CORRELATIONS[key][0]:.2f})")
        a.set_xlabel(name)
    ax[0].set_ylabel("downstream R-AUROC")
    ax[1].legend(fontsize=7, ncol=2, frameon=False)
    fig.suptitle("What upstream tells about downstream uncertainty (cf. the paper's Fig. 4)", fontsize=10)
    fig.tight_layout()
    return fig, ax


def crop_examples(sets: dict, n: int = 3, seed: int = 0):
    """Images of each evaluation set (``{"up", "unseen", "fashion"}`` -> (x, y)) above their crops (the crop of
    the cropped-image rate, drawn with the same generator as the benchmark's ``crop_seed``)."""
    names = list(sets)
    fig, ax = figure(2, n * len(names), figsize=(1.6 * n * len(names), 2.2))
    rng = np.random.default_rng(seed)
    for j, name in enumerate(names):
        x, y = sets[name]
        idx = rng.choice(len(x), n, replace=False)
        boxes = protocol.crop_boxes(n, x.shape[-2], x.shape[-1], rng)
        crops = protocol.crop_images(x[idx], boxes)
        for k in range(n):
            a, b = ax[0, j * n + k], ax[1, j * n + k]
            a.imshow(x[idx[k], 0], cmap="gray_r", vmin=0, vmax=1)
            top, left, h, w = boxes[k]
            a.add_patch(Rectangle((left - 0.5, top - 0.5), w, h, fill=False, ec="tab:orange", lw=1))
            b.imshow(crops[k, 0], cmap="gray_r", vmin=0, vmax=1)
            a.set_title(f"{name} {int(y[idx[k]])}", fontsize=7)
            for c in (a, b):
                c.set_xticks([])
                c.set_yticks([])
    ax[0, 0].set_ylabel("image", fontsize=8)
    ax[1, 0].set_ylabel("crop", fontsize=8)
    fig.tight_layout()
    return fig, ax


def uncertainty_vs_truth(frame):
    """u(x) against the truth: for each method (rows, the leaderboard's `label`, the frame's order
    top down) two horizontal boxes of u's rank within (method, set), over the images whose R@1 neighbour is right
    (blue) and over those where it is wrong (red); one panel per set, a dashed line at 0.5. A u(x) that flags
    R@1 errors (Kirchhof et al. 2023, Sec. 3.1: R-AUROC is the AUROC of u at flagging them) puts the red box to
    the right of the blue one. ``frame``: `hedgekit.papers.url.benchmark.uncertainty_truth` (columns ``method,
    set, u_rank, r1_correct``; not modified). A group with no image (e.g. no R@1 error) has no box."""
    missing = [c for c in TRUTH_COLUMNS if c not in getattr(frame, "columns", ())]
    if missing or len(frame) == 0:
        raise InputError(f"frame must be a non-empty table of benchmark.uncertainty_truth with columns "
                         f"{', '.join(TRUTH_COLUMNS)}; missing {missing or 'rows'}")
    methods, sets = list(dict.fromkeys(frame["method"])), list(dict.fromkeys(frame["set"]))
    fig, ax = figure(1, len(sets), figsize=(3.6 * len(sets) + 1.2, 0.55 * len(methods) + 1.6), sharey=True,
                     squeeze=False)
    ax = ax[0]
    y = {m: len(methods) - 1 - i for i, m in enumerate(methods)}  # the frame's first method on top
    for a, name in zip(ax, sets):
        in_set = frame[frame["set"] == name]
        for right, (_, colour) in TRUTH.items():
            groups = [(m, g["u_rank"].to_numpy()) for m, g in in_set[in_set["r1_correct"] == right].groupby(
                "method", sort=False)]
            if not groups:
                continue
            a.boxplot([v for _, v in groups], positions=[y[m] + (0.2 if right else -0.2) for m, _ in groups],
                      orientation="horizontal", widths=0.32, patch_artist=True, showfliers=False, manage_ticks=False,
                      boxprops={"facecolor": colour, "alpha": 0.6}, medianprops={"color": INK})
        a.axvline(0.5, color="0.5", lw=0.8, ls="--")
        a.set_xlim(0, 1)
        a.set_xlabel("rank of u(x) (0: most certain)", fontsize=8)
        a.set_title(SET_TITLES.get(name, name), fontsize=10)
    ax[0].set_yticks([y[m] for m in methods], [label(m) for m in methods])
    ax[0].set_ylim(-0.6, len(methods) - 0.4)
    ax[-1].legend([Patch(facecolor=c, alpha=0.6) for _, c in TRUTH.values()], [t for t, _ in TRUTH.values()],
                  fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: no box hidden
    fig.suptitle("u(x) against the truth: R@1 wrong should sit higher", fontsize=10)
    fig.tight_layout()
    return fig, ax

