"""hedgekit.evaluation.centroids: class centroids against the mean of the embeddings, by hand."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from hedgekit.evaluation import centroids


@pytest.mark.slow  # MNIST test images
def test_centroid_table_by_hand(untrained, test_seen):
    model = untrained()
    sub = test_seen.subset(np.arange(300))
    table = centroids.centroid_table(model, [sub])
    with torch.no_grad():
        z = model.embed(sub.tensors()[0]).mixture_mean().numpy()
    c = table.class_ids[0]
    np.testing.assert_allclose(table.centroids[0], z[sub.labels == c].mean(0), rtol=1e-5)
    assert table.counts.sum() == 300
    assert table.digit(0).tolist() == (table.class_ids // 10).tolist()
    assert table.digit(1).tolist() == (table.class_ids % 10).tolist()
    small = centroids.centroid_table(model, [sub], per_class=2)
    assert small.counts.max() == 2
