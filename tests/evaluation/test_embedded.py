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


def test_embed_set_refuses_every_kind_of_bad_images(bad_images):
    """Numpy arrays and lists of pixels are accepted (data sets are numpy); the rest is refused,
    including an empty set (nothing to embed: an InputError rather than an empty EmbeddedSet)."""
    from types import SimpleNamespace

    from hedgekit.errors import InputError

    model = build_model("hib", n_digits=2)
    for name, what, x, match in bad_images((1, 28, 56)):
        if what == "type":
            continue
        match = "of shape" if what == "shape" else match  # (B, C, H, W) or the model's (B, 1, 28, 56)
        labels = np.zeros(len(x), dtype=np.int64)
        with pytest.raises(InputError, match=match):
            embed_set(model, SimpleNamespace(images=x, labels=labels))
        with pytest.raises(InputError, match=match):  # the corrupt twin is checked too
            embed_set(model, SimpleNamespace(images=torch.rand(len(x), 1, 28, 56), corrupt=x, labels=labels))
    es = embed_set(model, SimpleNamespace(images=np.zeros((2, 28, 56), np.uint8), labels=np.zeros(2)), eta=False)
    assert len(es.clean) == 2
