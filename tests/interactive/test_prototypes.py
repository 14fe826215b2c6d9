"""hedgekit.interactive.prototypes: SPE prototypes (eq. 5-6) and the posterior (eq. 7) written out."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from hedgekit.interactive import prototypes


class TestPrototypes:
    def test_prototypes_and_posterior_by_hand(self, tiny_ndigit):
        from hedgekit.methods.fast.spe import SPE
        from hedgekit.zoo import Spec

        torch.manual_seed(0)
        model = Spec(kind="spe", data="ndigit", dim=2, preset="fast").build().eval()
        head = SPE(10, 2)
        train = tiny_ndigit(2, "train", 60, classes=[12, 34, 56])
        protos = prototypes.prototype_set(model, head, train, per_class=4)
        assert protos.table.class_ids.tolist() == [12, 34, 56] and protos.table.counts.tolist() == [4, 4, 4]
        for k, c in enumerate([12, 34, 56]):  # eq. 5 written out: precision-weighted mean of the first 4 images
            x = torch.from_numpy(train.images[np.flatnonzero(train.labels == c)[:4]]).unsqueeze(1).float() / 255
            emb = model.embed(x)
            v = emb.var[:, 0] + head.sigma_eps2.detach()
            mu = (emb.mean[:, 0] / v).sum(0) / (1 / v).sum(0)
            np.testing.assert_allclose(protos.table.centroids[k], mu.numpy(), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(protos.variances[k], (1 / (1 / v).sum(0) + head.sigma_eps2).detach().numpy(),
                                       rtol=1e-4)
        img = train.images[0]
        p = prototypes.prototype_posterior(model, head, img, [[0, 0, 28, 28]], protos, seed=3)
        seen = img.copy()
        seen[:, :28] = 0
        query = model(torch.from_numpy(seen)[None, None].float() / 255)
        ref = head.log_posterior(query, protos.support, protos.support_classes, 3,
                                 generator=torch.Generator().manual_seed(3))[0].exp().detach().numpy()
        np.testing.assert_allclose(p, ref, rtol=1e-5)
        assert p.sum() == pytest.approx(1.0, abs=1e-5)
        again = prototypes.prototype_posterior(model, head, img, [[0, 0, 28, 28]], protos, seed=3)
        np.testing.assert_array_equal(p, again)
