"""Figures of notebook 08 (Taha et al. 2019, Figs. 5-8 at kit scale). Each returns ``(fig, axes)`` and never
calls ``show()``; the data come from `hedgekit.papers.taha.protocol`."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from hedgekit.evaluation.metrics import equal_count_bins
from hedgekit.viz.style import TAB10, figure

__all__ = ["BIN_NAMES", "BIN_COLOURS", "uncertain_training_images", "ap_vs_uncertainty", "uncertain_queries",
           "pca_scatter", "detection_curves", "per_class_bars"]

BIN_NAMES = ("very low", "low", "moderate", "high", "very high")  # Figs. 7-8's five uncertainty percentile bins
BIN_COLOURS = ("#2ca02c", "#e6c229", "#ff7f0e", "#9467bd", "#d62728")  # green, yellow, orange, violet, red
_OK, _BAD = "#2ca02c", "#d62728"


def _name(names: Sequence[str] | None, c: int) -> str:
    return str(names[c]) if names is not None else str(c)


def _show_image(ax, img, title: str = "", colour: str = "black", frame: str | None = None) -> None:
    ax.imshow(np.asarray(img).squeeze(), cmap="gray_r")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=7, color=colour)
    if frame is not None:
        for s in ax.spines.values():
            s.set_edgecolor(frame)
            s.set_linewidth(2)


def uncertain_training_images(images, picked: Mapping[int, Sequence[int]], given, true, u,
                              class_names: Sequence[str] | None = None):
    """Fig. 5: one row per class (by given label), its most uncertain training images; a red title gives the
    true class of an image whose label was flipped."""
    n_rows, n_cols = len(picked), max(len(v) for v in picked.values())
    fig, axes = figure(n_rows, n_cols, figsize=(1.3 * n_cols + 1.2, 1.25 * n_rows), squeeze=False)
    for r, (c, idx) in enumerate(picked.items()):
        axes[r, 0].set_ylabel(_name(class_names, c), rotation=0, ha="right", va="center", fontsize=8)
        for j in range(n_cols):
            ax = axes[r, j]
            if j >= len(idx):
                ax.axis("off")
                continue
            i = int(idx[j])
            flipped = given[i] != true[i]
            _show_image(ax, images[i], f"σ²={u[i]:.2g}" + (f"\nis {_name(class_names, int(true[i]))}" if flipped else ""),
                        _BAD if flipped else "black", _BAD if flipped else None)
        axes[r, 0].set_yticks([])
    fig.suptitle("Fig. 5 analogue — most uncertain training images per (given) class; red: label flipped", fontsize=10)
    fig.tight_layout()
    return fig, axes


def ap_vs_uncertainty(stats: Mapping, paper_r: float | None = None):
    """Fig. 6: mean ± std of the query uncertainty per AP-percentile bin (`protocol.ap_vs_uncertainty`)."""
    fig, ax = figure(figsize=(5.2, 3.4))
    ax.errorbar(stats["percentile"], stats["u_mean"], yerr=stats["u_std"], fmt="o-", color=TAB10[0], capsize=3)
    ax.set_xlabel("query AP percentile")
    ax.set_ylabel("uncertainty σ² (mean ± std)")
    title = f"Fig. 6 analogue — Pearson r = {stats['r']:.3f}"
    if paper_r is not None:
        title += f" (paper {paper_r:.2f})"
    ax.set_title(title + f", {stats['n']} queries")
    fig.tight_layout()
    return fig, ax


def uncertain_queries(query_images, query_labels, query_u, order: Sequence[int], gallery_images, gallery_labels,
                      retrieved, class_names: Sequence[str] | None = None, bins=None):
    """Fig. 7: one row per query (``order``: query indices, e.g. the most uncertain), its top-k retrievals
    framed green (same class) or red. ``bins``: optional (Q,) uncertainty bin of every query (`BIN_NAMES`)."""
    k = retrieved.shape[1]
    fig, axes = figure(len(order), k + 1, figsize=(1.4 * (k + 1), 1.5 * len(order)), squeeze=False)
    for r, qi in enumerate(order):
        qi = int(qi)
        extra = f" ({BIN_NAMES[int(bins[qi])]})" if bins is not None else ""
        _show_image(axes[r, 0], query_images[qi], f"query: {_name(class_names, int(query_labels[qi]))}\n"
                    f"σ²={query_u[qi]:.2g}{extra}", frame="black")
        for j in range(k):
            gi = int(retrieved[qi, j])
            ok = gallery_labels[gi] == query_labels[qi]
            _show_image(axes[r, j + 1], gallery_images[gi], f"#{j + 1} {_name(class_names, int(gallery_labels[gi]))}",
                        _OK if ok else _BAD, _OK if ok else _BAD)
    fig.suptitle("Fig. 7 analogue — the most uncertain queries and their top retrievals", fontsize=10)
    fig.tight_layout()
    return fig, axes


def pca_scatter(xy, labels, u, class_names: Sequence[str] | None = None, n_bins: int = 5):
    """Fig. 8: 2-D PCA of query embeddings coloured by class (left) and by uncertainty percentile bin (right)."""
    xy, labels = np.asarray(xy), np.asarray(labels)
    fig, axes = figure(1, 2, figsize=(10, 4.4))
    for c in np.unique(labels):
        m = labels == c
        axes[0].scatter(xy[m, 0], xy[m, 1], s=4, alpha=0.6, color=TAB10[int(c) % 10], label=_name(class_names, int(c)))
    axes[0].legend(fontsize=7, markerscale=3, loc="best", frameon=False)
    axes[0].set_title("by class")
    bins = equal_count_bins(u, n_bins)
    names = BIN_NAMES if n_bins == len(BIN_NAMES) else [str(b) for b in range(n_bins)]
    colours = BIN_COLOURS if n_bins == len(BIN_COLOURS) else [TAB10[b % 10] for b in range(n_bins)]
    for b in range(n_bins):
        m = bins == b
        axes[1].scatter(xy[m, 0], xy[m, 1], s=4, alpha=0.6, color=colours[b], label=names[b])
    axes[1].legend(fontsize=7, markerscale=3, loc="best", frameon=False, title="uncertainty", title_fontsize=7)
    axes[1].set_title("by uncertainty percentile bin")
    for ax in axes:
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
    fig.suptitle(f"Fig. 8 analogue — PCA of {len(xy)} query embeddings", fontsize=10)
    fig.tight_layout()
    return fig, axes


def detection_curves(table, noise_rate: float | None = None):
    """Beyond the paper: precision and recall of each detector of flipped labels against the share removed
    (`protocol.detection_table`); cleanlab's own threshold is a single point."""
    fig, axes = figure(1, 2, figsize=(9, 3.4))
    for i, (name, sub) in enumerate(table.groupby("detector", sort=False)):
        style = dict(marker="*", ms=10, ls="none") if "own" in name else dict(marker="o", ls="-")
        for ax, key in zip(axes, ("precision", "recall")):
            ax.plot(100 * sub.fraction, sub[key], color=TAB10[i], label=name, **style)
    if noise_rate is not None:
        axes[0].axhline(noise_rate, color="grey", ls=":", lw=1, label=f"random pick ({100 * noise_rate:.0f}%)")
    for ax, key in zip(axes, ("precision", "recall")):
        ax.set_xlabel("% of training images removed")
        ax.set_ylabel(key)
        ax.set_ylim(0, 1.02)
    axes[0].legend(fontsize=7, frameon=False)
    fig.suptitle("Which training labels are flipped? uncertainty vs small loss vs cleanlab", fontsize=10)
    fig.tight_layout()
    return fig, axes


def per_class_bars(per_class: Mapping[str, Mapping[int, float]], train_counts: Mapping[int, int],
                   class_names: Sequence[str] | None = None):
    """Tables 3/4 analogue: per-class mAP of each model (``per_class``: label -> {class: mAP}), classes
    ordered from head to tail by training count (shown under each name)."""
    classes = sorted(train_counts, key=lambda c: (-train_counts[c], c))
    fig, ax = figure(figsize=(9, 3.4))
    width = 0.8 / len(per_class)
    for i, (label, vals) in enumerate(per_class.items()):
        ax.bar(np.arange(len(classes)) + (i - (len(per_class) - 1) / 2) * width, [vals[c] for c in classes], width,
               color=TAB10[i], label=label)
    ax.set_xticks(np.arange(len(classes)))
    ax.set_xticklabels([f"{_name(class_names, c)}\n{train_counts[c]}" for c in classes], fontsize=7)
    ax.set_ylabel("mAP of the class's queries")
    ax.set_title("Tables 3/4 analogue — per-class mAP, head (left) to tail (right); training images under names")
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig, ax
