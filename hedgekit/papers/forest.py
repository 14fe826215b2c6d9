"""The forest plot of a verdict: one row per sized claim, our 95% interval against the band the
claim declared around the paper's value, coloured by its outcome.

Claims carry different units (mAP points, accuracies, correlations, ranks), so every row is drawn on one common
scale: the position relative to its own band, x' = (x - m) / h for a band [m - h, m + h]. The band is then always
[-1, 1] (shaded), the paper's value a diamond inside it, and "matched" reads at a glance as "the whole bar lies in the
shaded strip": an interval that only overlaps the strip is inconclusive, one wholly beside it not matched. The raw
numbers are written at the right of each row. Bars reaching past ±`REACH` band half-widths are cut there and end in
an arrow.
"""
from __future__ import annotations

import math
import textwrap
from typing import Sequence

from hedgekit.viz.style import FACE, INK, TAB10, figure

__all__ = ["forest_rows", "forest_plot", "OUTCOME_COLOURS", "REACH"]

OUTCOME_COLOURS = {"matched": TAB10[2], "not matched": TAB10[3], "inconclusive": TAB10[7]}
REACH = 4.0  # half-widths of the band either side of its middle that the plot shows


def _relative(x: float, band: tuple[float, float]) -> float:
    low, high = band
    return (x - (low + high) / 2) / ((high - low) / 2)


def forest_rows(claims: Sequence) -> list[dict]:
    """The rows a forest plot draws: the counted claims of a claims table (`hedgekit.papers.verdict.Claim`) with a
    finite interval and a band, in order, each as a dict of the claim's text, outcome, raw interval, band, paper value
    and the interval's and paper value's positions relative to the band (``lo``, ``hi``, ``paper``; None when the
    claim states no single paper value)."""
    rows = []
    for c in claims:
        if c.sanity or c.interval is None or c.band is None:
            continue
        lo, hi = c.interval
        if not (math.isfinite(lo) and math.isfinite(hi)):
            continue
        rows.append({"claim": c.claim, "outcome": c.outcome, "interval": (lo, hi), "band": tuple(c.band),
                     "paper_value": c.paper_value,
                     "lo": _relative(lo, c.band), "hi": _relative(hi, c.band),
                     "paper": None if c.paper_value is None else _relative(c.paper_value, c.band)})
    return rows


def forest_plot(claims: Sequence, title: str = ""):
    """A matplotlib figure of `forest_rows` (the module docstring says how to read it), or None when no claim has a
    finite interval and a band (e.g. a notebook of sanity checks only)."""
    rows = forest_rows(claims)
    if not rows:
        return None
    fig, ax = figure(figsize=(9.5, 0.9 + 0.42 * len(rows)))
    ax.axvspan(-1, 1, color=TAB10[0], alpha=0.12, lw=0, label="declared band")
    ax.axvline(0, color=TAB10[0], lw=0.6, alpha=0.4)
    for y, r in enumerate(rows):
        colour = OUTCOME_COLOURS[r["outcome"]]
        lo, hi = max(r["lo"], -REACH), min(r["hi"], REACH)
        ax.plot([lo, hi], [y, y], color=colour, lw=3, solid_capstyle="butt")
        for end, cut, mark in ((lo, r["lo"] < -REACH, "<"), (hi, r["hi"] > REACH, ">")):
            if cut:
                ax.plot([end], [y], marker=mark, color=colour, ms=7)
        if r["paper"] is not None and abs(r["paper"]) <= REACH:
            ax.plot([r["paper"]], [y], marker="D", color=INK, ms=5, mfc=FACE, zorder=3)
        (a, b), (low, high) = r["interval"], r["band"]
        ax.annotate(f"[{a:.3g}, {b:.3g}] vs band [{low:.3g}, {high:.3g}]", (1.01, y), xycoords=("axes fraction",
                    "data"), va="center", fontsize=7.5, color=INK)
    ax.set_yticks(range(len(rows)), ["\n".join(textwrap.wrap(r["claim"], 58)[:2]) for r in rows], fontsize=7.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(-REACH - 0.3, REACH + 0.3)
    ax.set_xlabel("position relative to the claim's declared band (band = [-1, 1]; diamond: the paper's value)")
    handles = [ax.plot([], [], color=c, lw=3, label=o)[0] for o, c in OUTCOME_COLOURS.items()]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, frameon=False, fontsize=8)
    if title:
        fig.suptitle(title, x=0.01, ha="left", fontsize=10)
    fig.tight_layout()
    return fig
