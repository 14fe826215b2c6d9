"""The HIB notebooks' ipywidgets (hedgekit.papers.hib.widgets) build and redraw."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _gauss(b=12, d=2):
    return RNG.normal(size=(b, d)), RNG.uniform(0.01, 0.2, size=(b, d)), RNG.integers(0, 100, b)


def test_widgets_build_and_redraw():
    W = pytest.importorskip("ipywidgets")
    from hedgekit.papers.hib.widgets import beta_selector

    m, v, y = _gauss()
    box = beta_selector({0.0: dict(means=m, covs=v, labels=y), 1e-2: dict(means=2 * m, covs=3 * v, labels=y)})
    assert isinstance(box, W.VBox)
    box.children[0].value = 0.0  # redraws without a front end


def test_occlusion_explorer_with_untrained_model():
    W = pytest.importorskip("ipywidgets")
    from hedgekit.data import NDigitSet
    from hedgekit.nets import build_model
    from hedgekit.papers.hib.widgets import occlusion_explorer
    from hedgekit.evaluation.centroids import centroid_table

    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 255, (6, 28, 56), dtype=np.uint8)
    digits = np.array([[1, 2], [3, 4], [1, 2], [3, 4], [5, 6], [5, 6]])
    ds = NDigitSet(imgs, imgs.copy(), digits @ np.array([10, 1]), digits, np.zeros((6, 2, 4), np.int64), 2, "test_seen")
    model = build_model("hib", 2, 2).eval()
    table = centroid_table(model, [ds])
    box = occlusion_explorer(model, table, imgs[0], n_points=256)
    assert isinstance(box, W.VBox)
    eta0 = box.analyse().eta
    sliders = box.children[0].children
    sliders[2].children[0].value = 28  # height
    sliders[2].children[1].value = 28  # width: the whole first digit hidden
    a = box.analyse()
    assert a.covered == pytest.approx(0.5) and a.eta != eta0


def test_row_occlusion_slider_hides_the_top_rows():
    W = pytest.importorskip("ipywidgets")
    from hedgekit.nets import build_model
    from hedgekit.papers.hib.widgets import row_occlusion_slider

    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = build_model("hib", 1, 2).eval()
    img = np.zeros((28, 28), np.uint8)
    img[4:24, 10:18] = 200  # a bright stroke on black, as MNIST draws digits
    slider_box = row_occlusion_slider(model, img, np.random.default_rng(2).normal(size=(10, 2)))
    assert isinstance(slider_box, W.VBox) and slider_box.analyse().covered == 0
    slider_box.children[0].value = 14  # half the rows: the top half of the image is black
    a = slider_box.analyse()
    assert a.covered == pytest.approx(0.5) and (a.image[:14] == 0).all() and (a.image[14:] == img[14:]).all()
    slider_box.children[0].value = 28
    assert slider_box.analyse().covered == pytest.approx(1.0)
