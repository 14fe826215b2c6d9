"""The forest plot of a verdict, checked against a constructed table of claims."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hedgekit.papers import forest as F  # noqa: E402
from hedgekit.papers import verdict as V  # noqa: E402

BAND = V.factor_band  # half to twice the paper's 2.0: [1, 4], middle 2.5, half-width 1.5


def _verdict() -> V.Verdict:
    """Three sized rows (matched, not matched, inconclusive), one reaching far past the plot, a sanity row and a
    row with no interval: only the three sized rows are drawn, in order."""
    def row(i, kind=V.SIZE, **kw):
        return V.Row(f"r{i}", f"claim {i}", "Table 1", kind, lambda m, i=i: m[i], paper=2.0,
                     band=None if kind == V.SANITY else BAND,
                     reason="half to twice" if kind != V.SANITY else "by construction",
                     compares="" if kind == V.SANITY else f"A − B: metric {i}", **kw)
    rows = [row(0), row(1), row(2), row(3, V.SANITY), row(4)]
    measured = {0: V.Interval(2.0, math.nan, 3, "paired", "seeds", low=1.5, high=3.0),
                1: V.Interval(0.5, math.nan, 3, "paired", "seeds", low=0.2, high=0.8),
                2: V.Interval(6.0, math.nan, 3, "paired", "seeds", low=3.0, high=40.0),
                3: V.Check(True, "yes"), 4: [1.0]}  # one run: no interval
    return V.Verdict("constructed").decide(rows, measured)


def test_forest_rows_place_each_interval_and_paper_value_relative_to_its_band():
    rows = F.forest_rows(_verdict().claims)
    assert [r["claim"] for r in rows] == ["Table 1: claim 0", "Table 1: claim 1", "Table 1: claim 2"]
    assert [r["outcome"] for r in rows] == ["matched", "not matched", "inconclusive"]
    rel = lambda x: (x - 2.5) / 1.5  # noqa: E731  the band [1, 4] mapped to [-1, 1], by hand
    for r, (lo, hi) in zip(rows, [(1.5, 3.0), (0.2, 0.8), (3.0, 40.0)]):
        assert r["lo"] == pytest.approx(rel(lo)) and r["hi"] == pytest.approx(rel(hi))
        assert r["paper"] == pytest.approx(rel(2.0)) and r["band"] == (1.0, 4.0)
    assert -1 <= rows[0]["lo"] <= rows[0]["hi"] <= 1 and rows[1]["hi"] < -1  # matched inside, not matched outside


def test_forest_plot_draws_one_bar_per_sized_claim_in_its_outcome_colour_over_the_shaded_band():
    fig = _verdict().forest()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["Table 1: claim 0", "Table 1: claim 1", "Table 1: claim 2"]
    bars = [ln for ln in ax.lines if len(ln.get_xdata()) == 2 and ln.get_linewidth() == 3]
    assert len(bars) == 3
    want = [F.OUTCOME_COLOURS[o] for o in ("matched", "not matched", "inconclusive")]
    for bar, colour, y in zip(bars, want, range(3)):
        assert matplotlib.colors.same_color(bar.get_color(), colour) and list(bar.get_ydata()) == [y, y]
    assert bars[2].get_xdata()[1] == F.REACH  # cut at the plot's reach ...
    arrows = [ln for ln in ax.lines if ln.get_marker() == ">"]
    assert len(arrows) == 1 and arrows[0].get_xdata()[0] == F.REACH  # ... and ending in an arrow
    band = [p for p in ax.patches if p.get_label() == "declared band"]
    xs = band[0].get_path().transformed(band[0].get_patch_transform()).vertices[:, 0]  # a Rectangle or a Polygon
    assert len(band) == 1 and np.allclose([xs.min(), xs.max()], [-1, 1])
    diamonds = [ln for ln in ax.lines if ln.get_marker() == "D"]
    assert [d.get_xdata()[0] for d in diamonds] == pytest.approx([(2.0 - 2.5) / 1.5] * 3)
    plt.close(fig)


def test_a_verdict_without_sized_claims_has_no_forest_plot():
    v = V.Verdict("sanity only")
    v.sanity("by construction", "1", "1", True)
    assert v.forest() is None and F.forest_plot([]) is None
