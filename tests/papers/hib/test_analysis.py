"""The measurements behind HIB's figures (hedgekit.papers.hib.analysis): oracles and hand cases."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from hedgekit.embedding import Embedding  # noqa: E402
from hedgekit.evaluation import metrics as M  # noqa: E402
from hedgekit.papers.hib import analysis as A  # noqa: E402

RNG = np.random.default_rng(0)


def test_axis_alignment_oracle():
    ids = np.arange(100)
    grid = np.stack([ids % 10, ids // 10], 1).astype(float)  # ones along x, tens along y: axis-aligned
    for pos in (0, 1):
        r = A.axis_alignment(grid, ids, pos)
        assert r["alignment"] == pytest.approx(1.0)
    assert A.axis_alignment(grid, ids, 0)["x_fraction"] == 1.0  # same tens digit -> vary along x
    assert A.axis_alignment(grid, ids, 1)["x_fraction"] == 0.0
    rot = grid @ np.array([[1, 1], [-1, 1]]) / math.sqrt(2)  # 45 degrees: worst case
    assert A.axis_alignment(rot, ids, 0)["alignment"] == pytest.approx(1 / math.sqrt(2))
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, 200000)
    assert np.maximum(abs(np.cos(t)), abs(np.sin(t))).mean() == pytest.approx(A.RANDOM_ALIGNMENT, abs=2e-3)


def test_number_line_agrees_with_the_metrics():
    rng = np.random.default_rng(5)
    ids = np.arange(100)
    for _ in range(5):
        c = rng.normal(size=100)
        nl = A.number_line(c, ids)
        assert int(nl.shared.sum()) == M.adjacency_score(c, ids)
        assert np.all(np.diff(nl.positions) >= 0) and len(nl.labels) == 100 and nl.labels[0] == f"{nl.order[0]:02d}"
    s = A.number_line_stats(np.arange(100.0), ids)  # 00, 01, ..., 99: only the 9 decade jumps (09|10) break
    assert s["adjacency"] == 90 and s["mean_run"] == 10 and s["n_runs"] == 10


def test_random_adjacency_closed_form_and_simulation():
    ids = np.arange(100)
    assert A.random_adjacency(ids) == pytest.approx(18.0)
    rng = np.random.default_rng(0)
    sim = np.mean([M.adjacency_score(rng.permutation(100).astype(float), ids) for _ in range(3000)])
    assert sim == pytest.approx(18.0, abs=0.3)


def test_component_spread_and_scale():
    m = np.array([[[0.0, 0.0], [3.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]]])
    assert A.component_spread(m).tolist() == [5.0, 0.0]
    tri = np.array([[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])
    assert A.component_spread(tri)[0] == pytest.approx((1 + 1 + math.sqrt(2)) / 3)
    assert A.component_spread(m[:, :1]).tolist() == [0.0, 0.0]
    assert A.gaussian_scale(np.array([[4.0, 1.0]]))[0] == pytest.approx(math.sqrt(2.0))


def test_pick_examples():
    boxes = np.zeros((4, 2, 4), np.int64)
    boxes[1, 0] = [0, 0, 28, 20]  # first digit 71% hidden, second clean
    boxes[2] = [[0, 0, 28, 28], [0, 28, 28, 28]]
    eta_c = np.array([0.3, 0.1, 0.2, 0.4])
    eta_o = np.array([0.3, 0.5, 0.9, 0.4])
    ex = A.pick_fig4_examples(boxes, eta_c, eta_o)
    assert [(e["index"], e["corrupt"]) for e in ex] == [(1, False), (1, True), (2, True)]
    cent = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    ids = np.array([17, 47, 99])
    comps = np.array([[[0.1, 0.0], [9.9, 0.0]], [[0.0, 0.2], [0.0, 9.0]], [[0.0, 0.0], [0.0, 0.1]]])
    r = A.pick_ambiguous(comps, np.array([17, 17, 99]), cent, ids)
    assert r == {"index": 0, "classes": (17, 47), "kind": "shared-digit"}
    r = A.pick_ambiguous(comps[1:], np.array([17, 99]), cent, ids)
    assert r["kind"] == "two-classes" and r["index"] == 0


def test_occlusion_walkthrough_is_the_real_occlusion():
    from hedgekit.data import occlude

    digit = RNG.integers(1, 255, (28, 28), dtype=np.uint8)
    for seed in range(20):
        w = A.occlusion_walkthrough(digit, np.random.default_rng(seed))
        assert 0 <= w.top <= w.corner_range[0] and 0 <= w.left <= w.corner_range[1]
        assert min(w.height, w.width) >= 6
        assert np.array_equal(w.result, occlude(digit, w.box[None]))
        assert (w.result == 0).sum() == w.height * w.width


def test_size_stats_and_axis_ratio():
    from hedgekit.evaluation.embedded import EmbeddedSet

    clean = Embedding.gaussian(torch.zeros(2, 2), torch.tensor([[1.0, 1.0], [4.0, 1.0]]))
    corrupt = Embedding.gaussian(torch.zeros(2, 2), torch.tensor([[4.0, 4.0], [1.0, 1.0]]))
    es = EmbeddedSet(clean, corrupt, np.array([1, 2]), np.array([0.1, 0.2]), np.array([0.3, 0.4]))
    s = A.size_stats(es)
    assert s["scale_clean"] == pytest.approx((1 + math.sqrt(2)) / 2) and s["scale_corrupt"] == pytest.approx(1.5)
    assert s["frac_larger"] == 0.5 and s["var_ratio"] == pytest.approx(2.5 / 1.75)
    assert s["eta_clean"] == pytest.approx(0.15) and s["eta_corrupt"] == pytest.approx(0.35)
    assert A.axis_ratio([4.0, 1.0]) == pytest.approx(2.0) and A.axis_ratio([2.0, 2.0]) == 1.0
