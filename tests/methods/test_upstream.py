"""The contract every registered URL method keeps (hedgekit.methods.upstream), and the shared pieces.

Oracles: shapes and finiteness for every method, a gradient reaching every trainable
parameter, hand-computed entropies and Jensen-Shannon divergences."""
import math

import pytest
import torch

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods.upstream import METHODS, build_method, entropy, inverse_softplus, js_divergence, mlp

FEAT, CLASSES, DIM = 12, 5, 8


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(4).repeat_interleave(3)  # 4 classes x 3 images: every image has a positive
    return torch.randn(len(labels), FEAT, generator=g), labels


@pytest.mark.parametrize("name", sorted(METHODS))
def test_contract(name):
    torch.manual_seed(0)
    method = build_method(name, FEAT, CLASSES, DIM)
    assert method.name == name
    x, y = _batch()
    for train in (True, False):
        method.train(train)
        out = method(x)
        assert out["embedding"].shape == (len(y), DIM) and out["embedding"].dtype == torch.float32
        assert out["uncertainty"].shape == (len(y),)
        assert all(torch.isfinite(v).all() for v in out.values())
        assert isinstance(method.to_embedding(out), Embedding)
        assert ("logits" in out) == (name not in ("infonce", "mcinfonce", "hib", "infonce_2v", "mcinfonce_2v"))
        assert "logits" not in out or out["logits"].shape == (len(y), CLASSES)
    method.train()
    out = method(x)
    loss = method.loss(out, y if method.supervised else None)  # unsupervised: 2 views of 6 images, no labels
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    trainable = [(n, p) for n, p in method.named_parameters() if p.requires_grad]
    assert trainable
    for n, p in trainable:
        assert p.grad is not None and torch.isfinite(p.grad).all(), n
        assert p.grad.abs().sum() > 0, n
    method.on_step(x, out, y)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_bad_features(name):
    """The features are checked where they enter (``forward``); labels where training starts
    (tests/training/test_upstream.py), not in the losses."""
    method = build_method(name, FEAT, CLASSES, DIM)
    with pytest.raises(InputError, match=rf"\(B, {FEAT}\)"):
        method(torch.randn(3, FEAT + 1))


def test_build_method_errors():
    with pytest.raises(InputError, match="unknown URL method 'nope'"):
        build_method("nope", FEAT, CLASSES)
    with pytest.raises(InputError, match="embed_dim must be an integer >= 2"):
        build_method("ce", FEAT, CLASSES, embed_dim=0)
    with pytest.raises(InputError, match="n_classes"):
        build_method("ce", FEAT, 1)
    with pytest.raises(InputError, match="bad hyperparameters for 'ce'"):
        build_method("ce", FEAT, CLASSES, temperature=3.0)


def test_entropy_and_js_by_hand():
    p = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    torch.testing.assert_close(entropy(p), torch.tensor([math.log(2), 0.0]))
    members = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[0.3, 0.7], [0.3, 0.7]]])  # (B=2, M=2, C=2)
    # disagreeing one-hot members: H(mean) = log 2, mean H = 0; agreeing members: 0
    torch.testing.assert_close(js_divergence(members), torch.tensor([math.log(2), 0.0]))


def test_mlp_and_inverse_softplus():
    net = mlp(4, 1, hidden=7)
    assert sum(isinstance(m, torch.nn.Linear) for m in net) == 3 and net(torch.zeros(2, 4)).shape == (2, 1)
    assert torch.nn.functional.softplus(torch.tensor(inverse_softplus(3.5))).item() == pytest.approx(3.5)
    with pytest.raises(InputError):
        inverse_softplus(0.0)
