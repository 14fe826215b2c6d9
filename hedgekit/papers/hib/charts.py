"""HIB's charts of measured numbers (Oh et al., ICLR 2019), drawn from plain arrays: App. D's adjacency score per
seed against the paper's ranges, Figure 5's AP and KNN accuracy per eta bin, Figure 9's match scores in the lowest
and highest eta bins, Figure 6's soft vs hard contrastive loss over margins, and sec. 2.4's eta of clean vs
corrupt inputs.

Like every figure of `hedgekit.papers.hib.figures` (which re-exports these): numpy arrays in, ``(fig, ax)`` out,
a white background, never ``show()``.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.patches import Rectangle

from hedgekit.viz.style import INK, TAB10, figure as _figure

__all__ = ["adjacency_figure", "eta_bins_figure", "match_score_figure", "margin_figure", "eta_histogram"]


def adjacency_figure(stats, paper_ranges: Mapping[str, tuple] | None = None, random_level: float | None = None,
                     paper_runs: Mapping[str, float] | None = None):
    """Appendix D: adjacency score and mean run length per seed (dots) for each model, with the
    paper's adjacency ranges (bands) and mean run lengths (bars).

    ``stats``: DataFrame with columns ``model``, ``seed``, ``adjacency``, ``mean_run``.
    ``paper_ranges``: model -> (low, high) adjacency; ``paper_runs``: model -> mean run length.
    """
    import pandas as pd

    df = pd.DataFrame(stats)
    models = list(dict.fromkeys(df["model"]))
    fig, axes = _figure(1, 2, figsize=(9, 3.4))
    for k, m in enumerate(models):
        sub = df[df["model"] == m]
        col = TAB10[k]
        axes[0].scatter(np.full(len(sub), k) + np.linspace(-0.1, 0.1, len(sub)), sub["adjacency"], color=col, zorder=3)
        axes[1].scatter(np.full(len(sub), k) + np.linspace(-0.1, 0.1, len(sub)), sub["mean_run"], color=col, zorder=3)
        if paper_ranges and m in paper_ranges:
            lo, hi = paper_ranges[m]
            axes[0].add_patch(Rectangle((k - 0.3, lo), 0.6, max(hi - lo, 0.5), color=col, alpha=0.18, lw=0,
                                        label="paper" if k == 0 else None))
        if paper_runs and m in paper_runs:
            axes[1].plot([k - 0.3, k + 0.3], [paper_runs[m]] * 2, color=col, lw=3, alpha=0.5,
                         label="paper" if k == 0 else None)
    if random_level is not None:
        axes[0].axhline(random_level, color="#888888", ls=":", lw=1)
        axes[0].text(len(models) - 0.5, random_level, "random order", fontsize=8, color="#666666", va="bottom",
                     ha="right")
    for ax, t in zip(axes, ("adjacency score (max 99)", "mean run length (classes)")):
        ax.set_xticks(range(len(models)))
        ax.set_xticklabels(models)
        ax.set_xlim(-0.6, len(models) - 0.4)
        ax.set_title(t)
    axes[0].set_ylim(0, 100)
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(frameon=False, fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig, axes


# =============================================================================== notebook 04


def eta_bins_figure(curves: Mapping[tuple[str, str], object], title: str = ""):
    """Figure 5: AP (left) and KNN accuracy (right) per eta bin, clean and corrupt inputs.

    ``curves``: (task, split) with task in {"AP", "KNN"} and split in {"clean",
    "corrupt"} -> DataFrame with ``bin``, ``mean``, ``std`` (`hib_protocol.binned_curve`).
    Uncertainty rises to the right; the shaded band is ±1 std over repetitions.
    """
    fig, axes = _figure(1, 2, figsize=(10, 3.6))
    for ax, task in zip(axes, ("AP", "KNN")):
        for split, col, mk in (("clean", TAB10[0], "o"), ("corrupt", TAB10[3], "s")):
            df = curves.get((task, split))
            if df is None:
                continue
            x, y, s = np.asarray(df["bin"]), np.asarray(df["mean"], float), np.nan_to_num(np.asarray(df["std"], float))
            ax.plot(x + 1, y, marker=mk, ms=4, color=col, label=split)
            ax.fill_between(x + 1, y - s, y + s, color=col, alpha=0.15, lw=0)
        ax.set_xlabel("η(x) bin (1 = most certain)")
        ax.set_ylabel("average precision" if task == "AP" else "KNN accuracy")
        ax.set_xticks([1, 5, 10, 15, 20])
        ax.legend(frameon=False)
        ax.set_title("verification" if task == "AP" else "identification")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig, axes


def match_score_figure(scores: Mapping[int, Mapping[str, np.ndarray]], n_bins: int = 20, title: str = ""):
    """Figure 9 (b, c): histograms of p(m|x1,x2) of same / different pairs, one panel per eta bin.

    ``scores``: bin index -> {"same": scores, "different": scores}
    (`hib_protocol.match_scores_by_bin`).
    """
    keys = sorted(scores)
    fig, axes = _figure(1, len(keys), figsize=(4.6 * len(keys), 3.4), sharey=False, squeeze=False)
    bins = np.linspace(0, 1, 26)
    for ax, b in zip(axes[0], keys):
        for kind, col in (("same", TAB10[2]), ("different", TAB10[3])):
            v = np.asarray(scores[b][kind], dtype=float)
            if len(v):
                ax.hist(v, bins=bins, color=col, alpha=0.55, density=True, label=f"{kind} ({len(v)})")
        which = "lowest" if b == 0 else ("highest" if b == n_bins - 1 else f"bin {b + 1}")
        ax.set_title(f"{which} uncertainty (bin {b + 1}/{n_bins})")
        ax.set_xlabel("match score p(m | x₁, x₂)")
        ax.legend(frameon=False, fontsize=8)
    axes[0, 0].set_ylabel("density")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig, axes


# =============================================================================== notebook 05


def margin_figure(margins, hard: Mapping[str, Sequence[float]], soft: Mapping[str, float], title: str = ""):
    """Figure 6 (App. B): AP and KNN accuracy of hard contrastive point models over margins M
    (lines), beside the soft contrastive model, which has no margin (horizontal lines).

    ``hard``: metric -> values per margin; ``soft``: metric -> value. Metrics are any of
    ``ap_clean, ap_corrupt, knn_clean, knn_corrupt``.
    """
    m = np.asarray(margins, dtype=float)
    fig, axes = _figure(1, 2, figsize=(10, 3.6))
    for ax, task in zip(axes, ("ap", "knn")):
        for split, col in (("clean", TAB10[0]), ("corrupt", TAB10[3])):
            key = f"{task}_{split}"
            if key in hard:
                ax.plot(m, hard[key], marker="o", color=col, label=f"hard contrastive, {split}")
            if key in soft:
                ax.axhline(soft[key], color=col, ls="--", label=f"soft contrastive, {split}")
        ax.set_xscale("log")
        ax.set_xticks(m)
        ax.set_xticklabels([f"{v:g}" for v in m])
        ax.minorticks_off()
        ax.set_xlabel("margin M")
        ax.set_ylabel("verification AP" if task == "ap" else "KNN accuracy")
        ax.legend(frameon=False, fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig, axes


# =============================================================================== widgets / misc


def eta_histogram(eta_clean, eta_corrupt, floor: float | None = None, title: str = "η(x) = 1 − p(m | x, x)"):
    """Distribution of eta (HIB eq. 9) for clean and corrupt test images; ``floor`` = 1 - sigmoid(b)."""
    ec, eo = np.asarray(eta_clean, dtype=float), np.asarray(eta_corrupt, dtype=float)
    fig, ax = _figure(figsize=(6.2, 3.3))
    lo, hi = float(min(ec.min(), eo.min())), float(max(ec.max(), eo.max()))
    bins = np.linspace(lo, hi if hi > lo else lo + 1e-3, 40)
    ax.hist(ec, bins=bins, alpha=0.55, color=TAB10[0], label=f"clean (mean {ec.mean():.3f})", density=True)
    ax.hist(eo, bins=bins, alpha=0.55, color=TAB10[3], label=f"corrupt (mean {eo.mean():.3f})", density=True)
    if floor is not None:
        ax.axvline(floor, color=INK, ls=":", lw=1)
        ax.text(floor, ax.get_ylim()[1] * 0.95, " floor 1−σ(b)", fontsize=8, va="top")
    ax.set_xlabel("η(x)")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig, ax
