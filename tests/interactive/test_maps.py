"""hedgekit.interactive.maps: the trail's bookkeeping, the zoom, a point model's mark placed by hand, and
sqrt(det Sigma) against a diagonal case and torch.linalg.det."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.evaluation import centroids
from hedgekit.interactive import maps, occlusion


@pytest.mark.slow  # MNIST test images
class TestMaps:
    def test_trail_bookkeeping(self, untrained, test_seen):
        model = untrained()
        trail = []
        for boxes in ([], [], [[0, 0, 28, 28]], [[0, 0, 28, 56]]):
            a = occlusion.analyse(model, test_seen.images[0], boxes)
            trail = maps.update_trail(trail, a, max_len=3)
        assert len(trail) == 3  # the repeated clean step is not added twice
        assert trail[-1]["covered"] == 1.0
        layers = maps.map_layers(a, trail, sigmas=(1, 2))
        assert len(layers.ellipses) == 2 and len(layers.trail_path) == 3 and len(layers.trail_ellipses) == 2
        lo, hi = maps.focus_extent(layers)
        assert lo[0] < a.xy[0] < lo[1] and hi[0] < a.xy[1] < hi[1]

    def test_anchor_point_by_hand(self):
        """A point at its class centroid lands on the other map's centroid of that class; an offset is scaled and
        rotated by the similarity, whatever its shift."""
        from hedgekit.viz.geometry import Similarity

        def table(xy):
            return centroids.CentroidTable(np.array([3, 5, 7]), np.asarray(xy, np.float32), np.ones(3, bool),
                                    np.ones(3, int), np.eye(2), 1)

        src, dst = table([[0, 0], [10, 0], [0, 10]]), table([[1, 1], [-4, 2], [6, -3]])
        rot = np.array([[0.0, 1.0], [-1.0, 0.0]])
        sim = Similarity(2.0, rot, np.array([100.0, 100.0]), 0.5)
        xy, c = maps.anchor_point([10, 0], src, dst, sim)
        assert c == 5 and np.allclose(xy, [-4, 2])
        xy, c = maps.anchor_point([1, 9], src, dst, sim)  # nearest to class 7, offset (1, -1)
        assert c == 7 and np.allclose(xy, np.array([6, -3]) + 2.0 * np.array([1.0, -1.0]) @ rot)

    def test_focus_extent_really_zooms(self, untrained, test_seen):
        """The zoomed view holds the ellipses and the best match, not the trail nor the point overlay."""
        model = untrained()
        table = centroids.centroid_table(model, [test_seen], per_class=2)
        a = occlusion.analyse(model, test_seen.images[0], [], table)
        trail = [{"xy": [1e3, 1e3], "cov": [[1, 0], [0, 1]], "eta": 0.5}]
        layers = maps.map_layers(a, trail, point_xy=[-1e3, -1e3])
        (x0, x1), (y0, y1) = maps.focus_extent(layers, table, a.top_ids[:1])
        pts = np.concatenate([c for _, _, c in layers.ellipses] + [table.xy[table.class_ids == a.top_ids[0]]])
        assert x0 <= pts[:, 0].min() and pts[:, 0].max() <= x1 and y0 <= pts[:, 1].min() and pts[:, 1].max() <= y1
        assert x1 - x0 == pytest.approx(1.3 * max(np.ptp(pts[:, 0]), np.ptp(pts[:, 1])), rel=1e-6)


def test_sqrt_det_of_a_diagonal_covariance():
    """diag(4, 9): det = 36, so sqrt(det) = 6 = the product of the standard deviations 2 and 3."""
    assert maps.sqrt_det(np.diag([4.0, 9.0])) == pytest.approx(6.0, rel=1e-12)
    assert maps.sqrt_det(np.zeros((2, 2))) == 0.0  # a point model's ellipse
    assert maps.sqrt_det([[1.0, 1.0 + 1e-9], [1.0 + 1e-9, 1.0]]) == 0.0  # det -2e-9 (round-off): flat


def test_sqrt_det_against_torch():
    """A random covariance A A^T + I (3 x 3 and 2 x 2) against torch.linalg.det."""
    gen = torch.Generator().manual_seed(0)
    for d in (2, 3):
        a = torch.randn(d, d, generator=gen, dtype=torch.float64)
        cov = a @ a.T + torch.eye(d, dtype=torch.float64)
        assert maps.sqrt_det(cov.numpy()) == pytest.approx(float(torch.linalg.det(cov).sqrt()), rel=1e-10)


@pytest.mark.parametrize("bad", [np.zeros(2), np.zeros((2, 3)), np.zeros((1, 2, 2))], ids=["vector", "2x3", "batch"])
def test_sqrt_det_refuses_a_non_square_matrix(bad):
    with pytest.raises(InputError, match="square"):
        maps.sqrt_det(bad)
