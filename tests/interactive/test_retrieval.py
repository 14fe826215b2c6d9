"""hedgekit.interactive.retrieval: the gallery embedded by hand, retrieval against brute-force nearest
neighbours, cleaning against the library's mAP (Taha et al. 2019)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.interactive import prototypes, retrieval
from hedgekit.papers.taha.experiments import DIM


class TestRetrieval:
    @pytest.fixture(scope="class")
    def het(self):
        from hedgekit.zoo import Spec

        torch.manual_seed(0)
        return Spec(kind="het", data="ndigit", dim=4, preset="fast").build().eval()  # untrained, seeded

    @pytest.fixture(scope="class")
    def gallery(self, het, tiny_ndigit):
        test = tiny_ndigit(2, "test_unseen", 200, classes=[3, 14, 25, 36, 47])
        return test, retrieval.retrieval_gallery(het, test, n_images=120, occluded=0.5, seed=1)

    def test_gallery_by_hand(self, het, gallery):
        test, g = gallery
        assert len(np.intersect1d(g.index, g.query_index)) == 0 and len(g.index) + len(g.query_index) == 120
        np.testing.assert_array_equal(g.images, np.where(g.occluded[:, None, None], test.corrupt[g.index],
                                                         test.images[g.index]))
        assert 0.3 < g.occluded.mean() < 0.7
        x = torch.from_numpy(g.images).unsqueeze(1).float() / 255
        emb = het.embed(x)
        np.testing.assert_allclose(g.means, emb.mixture_mean().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g.sigma2, emb.var[:, 0, 0].numpy(), rtol=1e-5)  # isotropic: sigma^2 = e^s
        np.testing.assert_array_equal(g.labels, test.labels[g.index])

    def test_retrieve_is_brute_force_nearest(self, het, gallery):
        test, g = gallery
        i = int(g.index[3])
        removed = [0, 5, 7]
        r = retrieval.retrieve(het, test.images[i], [[0, 0, 28, 14]], g, k=6, removed=removed, exclude_index=i)
        seen = test.images[i].copy()
        seen[:, :14] = 0
        np.testing.assert_array_equal(r.image, seen)
        mean, u = (t.numpy() for t in (het.embed(torch.from_numpy(seen)[None, None].float() / 255).mixture_mean(),
                                       het.embed(torch.from_numpy(seen)[None, None].float() / 255).var[:, 0, 0]))
        cands = sorted((float(np.linalg.norm(g.means[p] - mean[0])), p) for p in range(len(g.labels))
                       if p not in removed and g.index[p] != i)
        assert r.neighbours.tolist() == [p for _, p in cands[:6]]
        np.testing.assert_allclose(r.distances, [d for d, _ in cands[:6]], rtol=1e-6)
        assert r.sigma2 == pytest.approx(float(u[0]), rel=1e-5)
        assert r.percentile == pytest.approx(np.mean(g.sigma2 < r.sigma2))

    def test_cleaning_map_removes_the_most_uncertain(self, gallery):
        from hedgekit.evaluation.metrics import mean_average_precision

        _, g = gallery
        rows = retrieval.cleaning_map(g, [0.0, 0.25])
        assert rows[0]["map"] == pytest.approx(mean_average_precision(g.query_means, g.query_labels, g.means,
                                                                      g.labels))
        n = round(0.25 * len(g.labels))
        assert set(rows[1]["removed"].tolist()) == set(np.argsort(-g.sigma2, kind="stable")[:n].tolist())

    def test_bad_arguments(self, het, gallery):
        test, g = gallery
        with pytest.raises(InputError, match="k must be"):
            retrieval.retrieve(het, test.images[0], [], g, k=0)
        with pytest.raises(InputError, match="occluded"):
            retrieval.retrieval_gallery(het, test, occluded=1.5)
        with pytest.raises(InputError, match="n_images"):
            retrieval.retrieval_gallery(het, test, n_images=10**6)

    def test_trained_or_fast(self, monkeypatch):
        from hedgekit.interactive import models

        monkeypatch.setattr(models, "find_checkpoint", lambda spec: None)
        assert retrieval.retrieval_spec(DIM, "paper").preset == "fast"
        monkeypatch.setattr(models, "find_checkpoint", lambda spec: "somewhere.pt")
        spec = retrieval.retrieval_spec(DIM, "paper")
        assert spec.preset == "paper" and spec.kind == "het" and spec.dim == DIM
        with pytest.raises(InputError, match="dim"):
            retrieval.retrieval_spec(0, "paper")
        monkeypatch.undo()
        # shipped: the compare page loads it
        assert prototypes.spe_spec("paper").name == "spe-n2-d2-intersection1-paper-s0"
