"""hedgekit.interactive.occlusion: analyse against hand-computed match probabilities of a point model, the
library's eta, the projection W^T Sigma W written out, and HIB's hedging on occluded inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.evaluation import centroids
from hedgekit.interactive import inputs, models, occlusion
from hedgekit.uncertainty import self_mismatch

HIB, MOG2, POINT = models.DEFAULT_MODEL, "MoG-2, D=2", models.POINT_MODEL


@pytest.mark.slow  # the app's fast-preset models (trained on first use, ~45 s each)
class TestAnalyse:
    def test_clean_vs_fully_occluded(self, fast_models, hib_table, test_seen):
        model = fast_models[HIB]
        clean = occlusion.analyse(model, test_seen.images[0], [], hib_table)
        dark = occlusion.analyse(model, test_seen.images[0], [[0, 0, 28, 56]], hib_table)
        assert clean.covered == 0 and dark.covered == 1
        assert not dark.image.any() and clean.image.any()
        assert dark.eta > clean.eta
        assert np.linalg.det(dark.cov_xy) > np.linalg.det(clean.cov_xy)
        for a in (clean, dark):
            assert 0 < a.eta < 1 and np.isfinite(a.xy).all() and a.trace > 0

    def test_hiding_a_digit_hedges(self, fast_models, hib_table, test_seen):
        """HIB sec. 4.2: occluded inputs get larger embeddings and a larger eta (here on 10 images)."""
        model = fast_models[HIB]
        for i in range(10):
            clean = occlusion.analyse(model, test_seen.images[i], [], hib_table)
            hidden = occlusion.analyse(model, test_seen.images[i], [inputs.full_digit_box(0)], hib_table)
            assert hidden.eta > clean.eta
            assert np.linalg.det(hidden.cov_xy) > np.linalg.det(clean.cov_xy)

    def test_top5_sorted_probabilities(self, fast_models, hib_table, test_seen):
        a = occlusion.analyse(fast_models[HIB], test_seen.images[3], [[0, 0, 10, 20]], hib_table)
        assert len(a.top) == 5 and a.top_ids.dtype == np.int64
        assert np.all(np.diff(a.top_probs) <= 0)
        assert np.all((a.top_probs >= 0) & (a.top_probs <= 1))
        assert set(a.top_ids) <= set(hib_table.class_ids.tolist())

    def test_top5_point_model_exact(self, fast_models, test_seen):
        """For a point model p(m|x,c) = sigmoid(-a ||z - c|| + b) exactly: compute it by hand."""
        model = fast_models[POINT]
        table = centroids.centroid_table(model, [test_seen], per_class=10)
        a = occlusion.analyse(model, test_seen.images[7], [], table)
        with torch.no_grad():
            z = model(torch.from_numpy(test_seen.images[7]).float()[None, None] / 255).mean[0, 0].numpy()
            d = np.linalg.norm(table.centroids - z, axis=1)
            p = torch.sigmoid(-model.match.a * torch.as_tensor(d) + model.match.b).numpy()
        np.testing.assert_allclose(a.top_probs, np.sort(p)[::-1][:5], rtol=1e-5)
        assert a.is_point and a.eta == pytest.approx(occlusion.eta_floor(model), abs=1e-6)

    def test_eta_deterministic_and_equal_to_library(self, fast_models, test_seen):
        model = fast_models[MOG2]
        img = test_seen.images[11]
        e1 = occlusion.analyse(model, img, [[2, 30, 20, 20]]).eta
        e2 = occlusion.analyse(model, img, [[2, 30, 20, 20]]).eta
        assert e1 == e2
        from hedgekit.data import occlude

        x = torch.from_numpy(occlude(img, np.array([[2, 30, 20, 20]]))).float()[None, None] / 255
        with torch.no_grad():
            assert e1 == pytest.approx(float(self_mismatch(model(x), model.match)[0]), abs=1e-6)

    def test_bad_boxes_raise(self, fast_models, test_seen):
        with pytest.raises(InputError, match="zero area"):
            occlusion.analyse(fast_models[HIB], test_seen.images[0], [[0, 0, 0, 10]])
        with pytest.raises(InputError, match="outside"):
            occlusion.analyse(fast_models[HIB], test_seen.images[0], [[0, 50, 10, 10]])
        with pytest.raises(InputError, match="28 x 56"):
            occlusion.analyse(fast_models[HIB], np.zeros((28, 28)), [])

    def test_mixture_components_and_projection(self, untrained, test_seen):
        model = untrained(dim=3)
        table = centroids.centroid_table(model, [test_seen], per_class=5)
        assert table.projected and table.projection.shape == (3, 2)
        a = occlusion.analyse(model, test_seen.images[0], [], table)
        w = table.projection
        np.testing.assert_allclose(a.comp_cov_xy[0], w.T @ np.diag(a.variances[0]) @ w, atol=1e-9)
        np.testing.assert_allclose(a.xy, a.mean @ w, atol=1e-6)
        m2 = occlusion.analyse(untrained(components=2), test_seen.images[0])
        assert m2.n_components == 2 and m2.comp_xy.shape == (2, 2) and m2.top == []


@pytest.mark.parametrize("top_k", [-1, 0, 2.0, True, None, "5"], ids=repr)
def test_analyse_refuses_a_bad_top_k(untrained, top_k):
    """top_k = -1 listed all classes but one (69 rows); any top_k that is not an integer >= 1 is refused,
    and one larger than the table lists every class once."""
    model = untrained()
    table = centroids.CentroidTable(np.arange(4), np.random.default_rng(0).normal(size=(4, 2)).astype(np.float32),
                             np.ones(4, bool), np.ones(4, np.int64), np.eye(2), 2)
    image = np.zeros((28, 56), np.uint8)
    with pytest.raises(InputError, match="top_k must be an integer >= 1"):
        occlusion.analyse(model, image, [], table, top_k=top_k)
    assert len(occlusion.analyse(model, image, [], table, top_k=99).top_ids) == 4


def test_one_analysis_checks_and_applies_its_boxes_once(untrained, monkeypatch):
    """The box walks page -> model_view -> analyse -> model_input -> check_boxes, occlude -> model;
    check_boxes and occlude run once per analysis (they ran twice: the covered fraction checked and occluded again),
    and the covered fraction is that of the union of the boxes (56 + 28 - 2 of 28 x 56 pixels)."""
    calls = []

    def counted(name, fn):
        def run(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)
        return run

    monkeypatch.setattr(inputs, "check_boxes", counted("check_boxes", inputs.check_boxes))
    monkeypatch.setattr(inputs, "occlude", counted("occlude", inputs.occlude))
    image = np.full((28, 56), 200, np.uint8)
    a = occlusion.analyse(untrained(), image, [[0, 0, 2, 28], [0, 20, 28, 1]], invert=False)
    assert sorted(calls) == ["check_boxes", "occlude"]
    assert a.covered == (56 + 28 - 2) / (28 * 56) and int((a.image == 0).sum()) == 56 + 28 - 2
