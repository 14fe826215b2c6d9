"""hedgekit.papers.taha.figures: every figure function returns a figure on tiny synthetic inputs, drawing what
it was given (read back from the matplotlib artists)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from hedgekit.papers.taha import figures as F  # noqa: E402
from hedgekit.papers.taha import protocol as P  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


RNG = np.random.default_rng(0)
IMAGES = RNG.integers(0, 255, size=(12, 28, 28), dtype=np.uint8)
LABELS = np.repeat([0, 1, 2], 4)


def test_uncertain_training_images_marks_flipped_in_red():
    u = RNG.random(12)
    true = LABELS.copy()
    true[0] = 2
    picked = P.most_uncertain_per_class(u, LABELS, n=3)
    fig, axes = F.uncertain_training_images(IMAGES, picked, LABELS, true, u, ["a", "b", "c"])
    assert axes.shape == (3, 3)
    titles = [ax.get_title() for ax in axes.ravel()]
    assert sum("is c" in t for t in titles) == (1 if 0 in picked[0] else 0)


def test_ap_vs_uncertainty_plots_the_bins():
    s = P.ap_vs_uncertainty(RNG.random(40), RNG.random(40), n_bins=4)
    fig, ax = F.ap_vs_uncertainty(s, paper_r=-0.5)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), s["u_mean"])
    assert "paper -0.50" in ax.get_title()


def test_uncertain_queries_grid():
    q_emb, g_emb = RNG.normal(size=(4, 2)), RNG.normal(size=(12, 2))
    top = P.top_retrievals(q_emb, g_emb, 4)
    fig, axes = F.uncertain_queries(IMAGES[:4], LABELS[:4], RNG.random(4), [2, 0], IMAGES, LABELS, top,
                                    bins=np.array([0, 1, 4, 3]))
    assert axes.shape == (2, 5)
    assert "very high" in axes[0, 0].get_title()


def test_pca_scatter_two_panels_five_bins():
    xy = RNG.normal(size=(40, 2))
    fig, axes = F.pca_scatter(xy, np.arange(40) % 3, RNG.random(40))
    assert len(axes[0].collections) == 3 and len(axes[1].collections) == 5
    assert sum(len(c.get_offsets()) for c in axes[1].collections) == 40


def test_detection_curves_and_per_class_bars():
    table = pd.DataFrame([dict(detector=d, fraction=f, precision=0.5, recall=0.2)
                          for d in ("uncertainty", "small loss", "cleanlab") for f in (0.05, 0.1)]
                         + [dict(detector="cleanlab (own threshold)", fraction=0.3, precision=0.8, recall=0.6)])
    fig, axes = F.detection_curves(table, noise_rate=0.36)
    assert len(axes[0].lines) == 5  # 4 detectors + the random-pick line
    fig, ax = F.per_class_bars({"Tri": {0: 0.9, 1: 0.5}, "Tri + Hetero": {0: 0.8, 1: 0.6}}, {0: 10, 1: 100})
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == ["1", "0"]  # head first
    assert len(ax.patches) == 4
