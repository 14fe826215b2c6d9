"""hedgekit.papers.url.figures.uncertainty_vs_truth on a constructed frame: the boxes read back from the matplotlib
artists are the quartiles of the frame's u ranks, one per (method, truth) group that has images, in the right
colour and row; the labels, the dashed chance line and the title; the frame is left as it was."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.patches import PathPatch  # noqa: E402

from hedgekit.errors import InputError  # noqa: E402
from hedgekit.papers.url import figures as F  # noqa: E402
from hedgekit.papers.url.leaderboard import label  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


METHODS, SETS = ["ce", "elk", "hib"], ["up", "fashion"]


def truth_frame() -> pd.DataFrame:
    """12 images per (method, set), the first 4 with R@1 wrong, except hib on fashion: no R@1 error."""
    rng = np.random.default_rng(0)
    rows = []
    for m in METHODS:
        for s in SETS:
            wrong = np.arange(12) < (0 if (m, s) == ("hib", "fashion") else 4)
            rows.append(pd.DataFrame({"method": m, "set": s, "image": np.arange(12), "u": rng.random(12),
                                      "r1_correct": ~wrong, "u_rank": rng.permutation(12) / 11}))
    return pd.concat(rows, ignore_index=True)


def boxes(ax) -> list[tuple]:
    """(y centre, left, right, *face colour's r g b) of every box patch of a panel."""
    out = []
    for p in ax.patches:
        if isinstance(p, PathPatch):
            v = p.get_path().vertices
            out.append((round((v[:, 1].min() + v[:, 1].max()) / 2, 6), v[:, 0].min(), v[:, 0].max(),
                        *to_rgb(p.get_facecolor())))
    return out


def test_uncertainty_vs_truth_draws_each_groups_quartiles_in_its_row_and_colour():
    frame = truth_frame()
    before = frame.copy()
    fig, axes = F.uncertainty_vs_truth(frame)
    pd.testing.assert_frame_equal(frame, before)  # not mutated
    assert len(axes) == len(SETS)
    assert fig._suptitle.get_text() == "u(x) against the truth: R@1 wrong should sit higher"
    ticks = dict(zip((t.get_text() for t in axes[0].get_yticklabels()), axes[0].get_yticks()))
    row = {m: ticks[label(m)] for m in METHODS}
    assert row["ce"] > row["elk"] > row["hib"]  # the frame's first method on top
    for ax, s in zip(axes, SETS):
        assert ax.get_title() == F.SET_TITLES[s]
        assert any(ln.get_linestyle() == "--" and list(ln.get_xdata()) == [0.5, 0.5] for ln in ax.lines)
        drawn = boxes(ax)
        expected = []
        for m in METHODS:
            for right in (True, False):
                g = frame[(frame["method"] == m) & (frame["set"] == s) & (frame["r1_correct"] == right)]
                if len(g):
                    q1, q3 = np.percentile(g["u_rank"], [25, 75])
                    expected.append((round(row[m] + (0.2 if right else -0.2), 6), q1, q3, *to_rgb(F.TRUTH[right][1])))
        assert len(drawn) == (6 if s == "up" else 5)  # hib has no R@1 error on fashion: no red box
        np.testing.assert_allclose(sorted(drawn), sorted(expected))
    legend = axes[-1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["R@1 right", "R@1 wrong"]


def test_uncertainty_vs_truth_refuses_a_frame_without_its_columns_or_rows():
    with pytest.raises(InputError, match="columns method, set, u_rank, r1_correct; missing \\['u_rank'\\]"):
        F.uncertainty_vs_truth(truth_frame().drop(columns="u_rank"))
    with pytest.raises(InputError, match="missing rows"):
        F.uncertainty_vs_truth(truth_frame().iloc[:0])
    with pytest.raises(InputError, match="non-empty table"):
        F.uncertainty_vs_truth([1, 2])
