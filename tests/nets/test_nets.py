"""Tests of hedgekit.nets: shapes for every kind/N/D, input validation, embed(), SoftMatch (HIB eq. 2), conv body."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.nets import EmbeddingNet, GaussianHead, PointHead, SoftMatch, build_model, model_from_config
from hedgekit.nets.backbones import ConvBody
from hedgekit.nets.embedder import build_conv_model, build_lshape_model, conv_model_from_config

KINDS = [("point", 1), ("hib", 1), ("hib", 2)]  # point, MoG-1, MoG-2


def _images(b, n_digits, seed=0, channels=1):
    return torch.rand(b, channels, 28, 28 * n_digits, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind, c", KINDS, ids=["point", "MoG-1", "MoG-2"])
@pytest.mark.parametrize("n_digits", [1, 2, 3])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_output_shapes_and_variances(kind, c, n_digits, dim):
    torch.manual_seed(0)
    model = build_model(kind, n_digits=n_digits, dim=dim, components=c)
    assert model.input_shape == (1, 28, 28 * n_digits)
    emb = model(_images(5, n_digits))
    assert isinstance(emb, Embedding)
    assert emb.mean.shape == (5, c, dim) and emb.var.shape == (5, c, dim) and emb.weights.shape == (5, c)
    assert torch.allclose(emb.weights.sum(1), torch.ones(5))
    if kind == "point":
        assert emb.is_point and torch.equal(emb.var, torch.zeros(5, 1, dim))
    else:
        assert (emb.var > 0).all() and torch.allclose(emb.weights, torch.full((5, c), 1 / c))
    # single image and 3-D (B, H, W) input for one channel
    assert len(model(_images(1, n_digits))) == 1
    out3 = model(_images(2, n_digits)[:, 0])
    assert torch.equal(out3.mean, model(_images(2, n_digits)).mean)


def test_variances_positive_even_for_extreme_features():
    head = GaussianHead(10, dim=3, components=2)
    h = torch.cat([torch.full((1, 10), -1e3), torch.full((1, 10), 1e3), torch.zeros(1, 10)])
    emb = head(h)
    assert (emb.var > 0).all() and torch.isfinite(emb.var).all()
    assert (emb.var >= 1e-6).all()  # floor keeps log-variances finite for the KL term


def test_gaussian_head_initial_variance_and_branches():
    head = GaussianHead(16, dim=2, components=3, init_var=0.05)
    assert len(head.branches) == 3  # one linear branch per component (HIB sec. 2.2)
    emb = head(torch.zeros(4, 16))  # zero features: variance = softplus(bias) + floor = init_var + 1e-6
    assert torch.allclose(emb.var, torch.full((4, 3, 2), 0.05 + 1e-6), rtol=1e-5)
    assert torch.equal(emb.mean, torch.zeros(4, 3, 2))


def test_point_head_is_linear():
    head = PointHead(4, 2)
    h = torch.randn(3, 4)
    assert torch.allclose(head(h).mean[:, 0], h @ head.linear.weight.T + head.linear.bias)


@pytest.mark.parametrize(
    "x, match",
    [
        (torch.rand(2, 1, 28, 57), r"expected images of shape \(B, 1, 28, 56\); got \(2, 1, 28, 57\)"),
        (torch.rand(2, 3, 28, 56), r"expected images of shape \(B, 1, 28, 56\)"),
        (torch.rand(28, 56), r"expected images of shape"),
        (torch.rand(2, 1, 1, 28, 56), r"expected images of shape"),
        (torch.rand(2, 28, 28), r"expected images of shape"),
        (np.zeros((2, 1, 28, 56), dtype=np.float32), r"expected a torch.Tensor of images, shape \(B, C, H, W\); got ndarray"),
    ],
    ids=["width", "channels", "2d", "5d", "3d_wrong_width", "numpy"],
)
def test_wrong_inputs_raise_clear_errors(x, match):
    model = build_model("hib", n_digits=2)
    with pytest.raises(InputError, match=match):
        model(x)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_pixels_rejected(bad):
    model = build_model("point", n_digits=2)
    x = torch.rand(3, 1, 28, 56)
    x[1, 0, 5, 7] = bad
    with pytest.raises(InputError, match="NaN or inf pixels"):
        model(x)
    with pytest.raises(InputError, match="NaN or inf pixels"):
        model.embed(x)


def test_uint8_and_double_inputs_are_converted():
    model = build_model("hib", n_digits=1).eval()
    x = torch.randint(0, 256, (2, 1, 28, 28)).float() / 255  # uint8 pixels are 0..255, divided by 255
    with torch.no_grad():
        a = model(x)
        b = model(x.double())
        c = model((x * 255).round().to(torch.uint8))
    assert torch.equal(a.mean, b.mean) and torch.equal(a.mean, c.mean)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="gaussian"), "kind must be one of"),
        (dict(kind="point", components=2), "point models have exactly one component"),
        (dict(dim=0), "must be an integer >= 1"),
        (dict(components=0), "must be an integer >= 1"),
        (dict(n_digits=0), "must be an integer >= 1"),
    ],
)
def test_build_model_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        build_model(**kwargs)


def test_model_from_config_rebuilds_same_architecture():
    model = build_model("hib", n_digits=3, dim=3, components=2, init_var=0.03)
    clone = model_from_config(model.config)
    assert clone.config == model.config
    clone.load_state_dict(model.state_dict())  # same parameter names and shapes
    x = _images(2, 3)
    model.eval(), clone.eval()
    assert torch.equal(model(x).mean, clone(x).mean) and torch.equal(model(x).var, clone(x).var)


@pytest.mark.parametrize("kind, c", KINDS, ids=["point", "MoG-1", "MoG-2"])
def test_embed_equals_forward_in_eval_mode_and_restores_mode(kind, c):
    torch.manual_seed(0)
    model = build_model(kind, n_digits=2, dim=3, components=c)
    x = _images(7, 2, seed=1)
    model.train()
    emb = model.embed(x, batch_size=3)  # chunks of 3, 3, 1
    assert model.training  # training mode restored
    model.eval()
    with torch.no_grad():
        ref = model(x)
    assert torch.allclose(emb.mean, ref.mean, atol=1e-6) and torch.allclose(emb.var, ref.var, atol=1e-6)
    assert torch.equal(emb.weights, ref.weights)
    assert not emb.mean.requires_grad and emb.mean.device.type == "cpu"
    model.embed(x)
    assert not model.training  # eval mode kept


def test_embed_restores_training_mode_after_error():
    model = build_model("hib", n_digits=1).train()
    with pytest.raises(InputError):
        model.embed(torch.rand(2, 1, 28, 30))
    assert model.training


# --------------------------------------------------------------------------- SoftMatch (eq. 2)
def test_softmatch_initial_values_and_formula():
    m = SoftMatch(a=3.0, b=-0.5)
    assert m.a.item() == pytest.approx(3.0, rel=1e-6) and m.b.item() == -0.5
    d = torch.tensor([0.0, 0.5, 1.0, 4.0])
    a = m.a.item()
    expected = torch.tensor([1 / (1 + math.exp(a * t + 0.5)) for t in d.tolist()])
    assert torch.allclose(m(d), expected, atol=1e-6)
    assert torch.allclose(m.logit(d), -a * d - 0.5, atol=1e-6)
    # default a = b = 2: 50% match probability at distance 1
    assert SoftMatch()(torch.tensor(1.0)).item() == pytest.approx(0.5, abs=1e-6)


@pytest.mark.parametrize("a", [0.0, -1.0])
def test_softmatch_rejects_non_positive_a(a):
    with pytest.raises(InputError, match="a must be > 0"):
        SoftMatch(a=a)


@pytest.mark.parametrize("raw", [-80.0, -20.0, -1.0, 0.0, 5.0, 50.0])
def test_softmatch_a_positive_for_any_raw_value(raw):
    m = SoftMatch()
    with torch.no_grad():
        m.a_raw.fill_(raw)
    assert m.a.item() > 0
    expected = max(F.softplus(torch.tensor(raw, dtype=torch.float64)).item(), 1e-6)  # documented floor
    assert m.a.item() == pytest.approx(expected, rel=1e-5)


def test_softmatch_a_stays_positive_under_gradient_descent():
    """Push a down as hard as possible: softplus keeps it > 0 (a -> 0 is the degenerate 'all pairs match')."""
    m = SoftMatch(a=1.0, b=0.0)
    d = torch.linspace(0, 5, 50)
    for _ in range(200):
        m.zero_grad()
        (-m.logit(d).mean()).backward()  # decreasing a increases every logit
        with torch.no_grad():  # plain SGD step, lr = 50
            for p in m.parameters():
                p -= 50.0 * p.grad
        assert m.a.item() > 0
    assert m.a_raw.item() < -5


def test_softmatch_a_positive_even_at_float32_underflow():
    m = SoftMatch()
    with torch.no_grad():
        m.a_raw.fill_(-200.0)
    assert m.a.item() > 0


def test_gradients_flow_to_body_head_and_match():
    model = build_model("hib", n_digits=1, dim=2, components=2)
    emb = model(_images(4, 1))
    d = (emb.mean[:, 0] - emb.mean[:, 1]).norm(dim=-1)
    (model.match(d).sum() + emb.var.sum()).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
    assert isinstance(model, EmbeddingNet)


def test_forward_and_embed_refuse_every_kind_of_bad_image_batch(bad_images):
    """0..255 floats, 1e30, NaN/inf, wrong dtypes and shapes, an empty batch: a clear InputError."""
    model = build_model("hib", n_digits=2)
    for name, _what, x, match in bad_images((1, 28, 56)):
        with pytest.raises(InputError, match=match):
            model(x)
        with pytest.raises(InputError, match=match):
            model.embed(x)


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, True, None])
def test_embed_refuses_bad_batch_sizes(batch_size):
    with pytest.raises(InputError, match="batch_size must be an integer >= 1"):
        build_model("point", n_digits=1).embed(torch.rand(2, 1, 28, 28), batch_size)


@pytest.mark.parametrize("field, value", [("dim", 0), ("dim", 2.5), ("components", True), ("n_digits", -1),
                                          ("n_digits", "2")])
def test_build_model_names_the_bad_field(field, value):
    with pytest.raises(InputError, match=f"{field} must be an integer >= 1"):
        build_model("hib", **{field: value})


@pytest.mark.parametrize("fmt", [torch.contiguous_format, torch.channels_last], ids=["NCHW", "NHWC"])
def test_lenet_body_equals_conv_relu_pool_order_bit_for_bit(fmt):
    """LeNetBody pools before its ReLUs; the paper's conv -> ReLU -> pool gives the same bits, forward and backward
    (ReLU is monotone, so it commutes with max, ties included: all-zero images make every window tie)."""
    from hedgekit.nets.backbones import LeNetBody

    torch.manual_seed(0)
    body = LeNetBody(height=28, width=56).to(memory_format=fmt)
    c1, c2 = body.conv[0], body.conv[3]
    x = _images(16, 2).to(memory_format=fmt)
    x[:4] = 0
    paper = body.fc(F.max_pool2d(F.relu(c2(F.max_pool2d(F.relu(c1(x)), 2))), 2))
    ours = body(x)
    assert torch.equal(ours, paper)
    g = torch.randn_like(ours)
    params = list(body.parameters())
    for g1, g2 in zip(torch.autograd.grad(ours, params, g), torch.autograd.grad(paper, params, g)):
        assert torch.equal(g1, g2)


def test_conv_body_shapes_init_and_config_rebuild():
    body = ConvBody(3, 64, 64, blocks=5)
    assert body.out_features == 64 * 2 * 2
    conv = body.features[0]
    assert conv.weight.std().item() == pytest.approx(math.sqrt(2 / 27), rel=0.15)  # He: sqrt(2 / fan_in)
    assert conv.bias.abs().max().item() <= 1 / math.sqrt(27)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in body.modules()) == 5
    model = build_lshape_model("hib", dim=2)
    emb = model(torch.rand(4, 3, 64, 64))
    assert emb.mean.shape == (4, 1, 2) and (emb.var > 0).all()
    again = conv_model_from_config(model.config)
    again.load_state_dict(model.state_dict())
    assert again.config == model.config and model.config["body"] == "conv"
    omniglot = build_conv_model("point", 2, in_channels=1, height=28, width=28, blocks=3)
    assert omniglot.body.out_features == 576 and omniglot(torch.rand(2, 1, 28, 28)).is_point
    with pytest.raises(InputError, match="shrink"):
        ConvBody(1, 28, 28, blocks=5)
