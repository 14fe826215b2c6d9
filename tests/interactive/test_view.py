"""hedgekit.interactive.view.model_view: everything a page draws of one model, against the separate calls it
replaces (a trail of two steps equals two analyses), torch.linalg.det, and an extent that holds every ellipse."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from hedgekit.evaluation import centroids
from hedgekit.interactive import maps, occlusion
from hedgekit.interactive.view import model_view


@pytest.fixture
def setup(untrained, tiny_ndigit):
    torch.manual_seed(0)
    model = untrained()
    test = tiny_ndigit(2, "test_seen", 40, classes=[12, 34, 56, 78])
    return model, centroids.centroid_table(model, [test]), test.images[0]


def test_a_trail_of_two_steps_is_two_analyses(setup):
    model, table, image = setup
    hidden = [[0, 0, 28, 28]]
    v1 = model_view(model, image, (), table)
    v2 = model_view(model, image, hidden, table, trail=v1.trail)
    a1, a2 = occlusion.analyse(model, image, (), table), occlusion.analyse(model, image, hidden, table)
    assert v2.trail == maps.update_trail(maps.update_trail([], a1), a2) and len(v2.trail) == 2
    np.testing.assert_allclose([s["xy"] for s in v2.trail], [a1.xy, a2.xy])
    np.testing.assert_allclose(v2.analysis.cov_xy, a2.cov_xy)
    assert v2.analysis.eta == a2.eta and v2.analysis.top == a2.top
    assert v1.eta_clean == v2.eta_clean == a1.eta  # the clean image's eta, whatever is hidden
    np.testing.assert_allclose(v2.layers.trail_path, [a1.xy, a2.xy])  # the map draws both steps
    assert len(v2.layers.trail_ellipses) == 1


def test_sqrt_det_is_torch_det_of_the_analysis_covariance(setup):
    model, table, image = setup
    v = model_view(model, image, [[0, 28, 28, 28]], table)
    cov = torch.as_tensor(v.analysis.cov_xy, dtype=torch.float64)
    assert v.sqrt_det == pytest.approx(float(torch.linalg.det(cov).sqrt()), rel=1e-9) and v.sqrt_det > 0


def test_extent_holds_every_ellipse_point_and_the_focused_class(setup):
    model, table, image = setup
    for focus in (None, [78]):
        v = model_view(model, image, [[0, 0, 14, 56]], table, sigmas=(1, 3), focus_ids=focus)
        (x0, x1), (y0, y1) = v.extent
        pts = np.concatenate([c for _, _, c in v.layers.ellipses])
        assert len(v.layers.ellipses) == 2 and len(pts) > 100
        ids = v.analysis.top_ids[:1] if focus is None else focus
        pts = np.concatenate([pts, table.xy[np.isin(table.class_ids, ids)]])
        assert (x0 <= pts[:, 0]).all() and (pts[:, 0] <= x1).all()
        assert (y0 <= pts[:, 1]).all() and (pts[:, 1] <= y1).all()


def test_options_reach_the_map(setup):
    """The trail is kept even when the map hides it; another model's mark and the ellipses asked for are drawn."""
    model, table, image = setup
    v1 = model_view(model, image, (), table)
    v2 = model_view(model, image, [[0, 0, 28, 28]], table, trail=v1.trail, show_trail=False, sigmas=(2,),
                    point_xy=(0.5, -0.5))
    assert len(v2.trail) == 2 and len(v2.layers.trail_path) == 1 and not v2.layers.trail_ellipses
    assert [s for _, s, _ in v2.layers.ellipses] == [2.0]
    np.testing.assert_array_equal(v2.layers.point, [0.5, -0.5])


def test_remember_decides_whether_the_clean_eta_is_computed(setup):
    model, table, image = setup
    asked = []

    def cached(compute):
        asked.append(compute)
        return 0.25

    assert model_view(model, image, (), table, remember=cached).eta_clean == 0.25  # never computed
    fresh = model_view(model, image, [[0, 0, 5, 5]], table, remember=lambda compute: compute())
    assert len(asked) == 1 and fresh.eta_clean == occlusion.analyse(model, image, (), table).eta
