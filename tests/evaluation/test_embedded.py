"""hedgekit.evaluation.embedded: one EmbeddedSet for every evaluation."""
import numpy as np
import pytest
import torch

from hedgekit.evaluation.embedded import embed_set
from hedgekit.nets import build_model
from hedgekit.uncertainty import self_mismatch

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")
TINY = dict(steps=25, classes_per_batch=5, per_class=4, eval_images=100)


def test_embed_set_shapes_and_eta(tiny_ndigit):
    torch.manual_seed(0)
    model = build_model("hib", n_digits=1, dim=2, components=2)
    test = tiny_ndigit(1, "test_seen", 40, seed=6)
    es = embed_set(model, test)
    assert len(es.clean) == len(es.corrupt) == 40 and es.clean.n_components == 2
    np.testing.assert_array_equal(es.labels, test.labels)
    assert es.eta_clean.shape == es.eta_corrupt.shape == (40,)
    np.testing.assert_allclose(es.eta_corrupt, self_mismatch(es.corrupt, model.match).numpy())
    assert es.side(True)[0] is es.corrupt and es.side(False)[1] is es.eta_clean
