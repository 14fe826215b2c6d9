"""Tests of hedgekit.training.triplets: tiny seeded triplet fits (eq. 11 and the vanilla baseline), determinism,
what the variances do, and the input and config errors: TripletConfig and fit_triplets are the entry points that
check what the triplet losses take (the losses themselves compute their equations unchecked).

Data: 4 classes of 28 x 28 images, one Gaussian blob per class in its own quadrant plus pixel noise. The
classes separate within ~30 steps, after which every mined L_tri is small and eq. 11's optimum e^s = L_tri
drives the predicted variances far below their initial value of 1.
"""
import math
import re

import numpy as np
import pytest
import torch

from hedgekit.errors import InputError
from hedgekit.methods.het_triplet import uncertainty
from hedgekit.nets import build_model
from hedgekit.training.loop import History
from hedgekit.training.triplets import TripletConfig, fit_triplets

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")

CENTRES = [(7, 7), (7, 21), (21, 7), (21, 21)]


def blobs(n_per_class: int, seed: int = 0, noise: float = 0.1):
    """Images (4 n, 1, 28, 28) in [0, 1] and labels (4 n,)."""
    yy, xx = torch.meshgrid(torch.arange(28.0), torch.arange(28.0), indexing="ij")
    protos = torch.stack([torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 18.0) for cy, cx in CENTRES])
    y = torch.arange(4).repeat_interleave(n_per_class)
    x = 0.2 + 0.7 * protos[y] + noise * torch.randn(len(y), 28, 28, generator=torch.Generator().manual_seed(seed))
    return x.clamp(0, 1).unsqueeze(1), y


def _cfg(**kw):
    base = dict(steps=30, P=4, K=4, lr=3e-3, occlusion_p=0.0, log_every=10)
    return TripletConfig(**{**base, **kw})


def _model(seed=0):
    torch.manual_seed(seed)
    return build_model("het", n_digits=1, dim=4)


@pytest.fixture(scope="module")
def data():
    return blobs(12)


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_heteroscedastic_fit_lowers_the_loss_and_the_variances(data, precision):
    x, y = data
    model = _model()
    u0 = uncertainty(model.embed(x))
    rows = []
    body_dtypes = set()
    hook = model.body.register_forward_hook(lambda module, inputs, output: body_dtypes.add(output.dtype))
    hist = fit_triplets(model, x, y, _cfg(precision=precision), progress=False, callback=lambda step, row: rows.append(step))
    hook.remove()
    assert body_dtypes == {getattr(torch, precision)}
    assert isinstance(hist, History) and not model.training and hist.seconds > 0
    assert [r["step"] for r in hist.rows] == [0, 10, 20, 29] and rows == [0, 10, 20, 29]
    first, last = hist.rows[0], hist.rows[-1]
    assert {"loss", "lr", "triplet", "active", "triplets", "sigma2"} <= set(first)
    assert first["triplets"] == 16  # batch-hard: one triplet per anchor of the 4 x 4 batch
    assert first["sigma2"] == pytest.approx(1.0, abs=0.05)  # HeteroscedasticHead starts at sigma^2 = 1
    assert last["loss"] < first["loss"] - 1.0
    assert last["triplet"] < 0.5 * first["triplet"]
    # e^s tracks L_tri (its optimum): the variances fall with the triplet loss, input by input
    u = uncertainty(model.embed(x))
    assert u.max() < 0.5 * u0.min() and last["sigma2"] < 0.5


def test_baseline_trains_the_mean_only(data):
    x, y = data
    model = _model()
    s_row = model.head.linear.weight[4].detach().clone(), model.head.linear.bias[4].detach().clone()
    hist = fit_triplets(model, x, y, _cfg(heteroscedastic=False, weight_decay=0.0), progress=False)
    assert hist.rows[-1]["loss"] < 0.5 * hist.rows[0]["loss"]
    assert "sigma2" not in hist.rows[0]
    assert torch.equal(model.head.linear.weight[4], s_row[0]) and torch.equal(model.head.linear.bias[4], s_row[1])


def test_baseline_on_a_point_model(data):
    x, y = data
    torch.manual_seed(0)
    model = build_model("point", n_digits=1, dim=4)
    hist = fit_triplets(model, x, y, _cfg(heteroscedastic=False, margin=0.5, steps=12), progress=False)
    assert all(math.isfinite(r["loss"]) for r in hist.rows)


def test_semi_hard_and_hard_margin(data):
    x, y = data
    hist = fit_triplets(_model(), x, y, _cfg(mining="semi_hard", margin=0.3, steps=12, log_every=1), progress=False)
    # semi-hard: at most one triplet per anchor-positive pair, 4 x 4 x 3 = 48 in a 4 x 4 batch
    assert all(0 <= r["triplets"] <= 48 for r in hist.rows) and any(r["triplets"] > 0 for r in hist.rows)
    assert all(math.isfinite(r["loss"]) for r in hist.rows)


def test_batch_all_mining_trains_on_every_triplet(data):
    x, y = data
    hist = fit_triplets(_model(), x, y, _cfg(steps=3, mining="batch_all", log_every=1), progress=False)
    assert [r["triplets"] for r in hist.rows] == [16 * 3 * 12] * 3  # 4 x 4 batch: anchors x positives x negatives


def test_same_seed_same_history_and_uint8_images(data):
    x, y = data
    x8 = (x * 255).round().to(torch.uint8)
    runs = [fit_triplets(_model(), x8, y, _cfg(steps=8, log_every=1), seed=3, progress=False) for _ in range(2)]
    assert [r["loss"] for r in runs[0].rows] == [r["loss"] for r in runs[1].rows]
    other = fit_triplets(_model(), x8, y, _cfg(steps=8, log_every=1), seed=4, progress=False)
    assert [r["loss"] for r in other.rows] != [r["loss"] for r in runs[0].rows]


def test_default_occlusion_and_custom_augment(data):
    x, y = data
    calls = []

    def augment(batch, rng):
        calls.append(batch.shape)
        return batch

    fit_triplets(_model(), x, y.numpy(), _cfg(steps=3, occlusion_p=1.0), progress=False, augment=augment)
    assert calls == [(16, 1, 28, 28)] * 3  # augment replaces the default occlusion
    grey = torch.full((48, 28, 28), 0.5)  # (N, H, W) images without a single black pixel
    for p, occluded in ((1.0, True), (0.0, False)):
        model, seen = _model(), []
        model.register_forward_pre_hook(lambda mod, args, seen=seen: seen.append(args[0].clone()))
        hist = fit_triplets(model, grey, y, _cfg(steps=3, occlusion_p=p), progress=False)
        assert [r["step"] for r in hist.rows] == [0, 2]
        assert bool((torch.cat(seen) == 0).any()) == occluded  # fresh black boxes only with occlusion_p > 0
    with pytest.raises(InputError, match=r"occlusion_p > 0 needs one-channel 28 x 28N digit images"):
        fit_triplets(build_model("het", n_digits=1, dim=4, width=30), torch.rand(16, 1, 28, 30),
                     torch.arange(4).repeat(4), _cfg(occlusion_p=0.2))


@pytest.mark.parametrize("field, value", [
    ("steps", 0), ("P", 1), ("K", 1), ("log_every", 0), ("steps", 2.5), ("lr", 0.0), ("lr", math.nan),
    ("weight_decay", -1e-4), ("warmup", 1.5), ("occlusion_p", -0.1), ("mining", "hardest"), ("margin", 0.0),
    ("margin", -1.0), ("semi_hard_margin", math.inf), ("heteroscedastic", "yes"), ("precision", "float16"),
])
def test_config_errors_name_the_field(field, value):
    with pytest.raises(InputError, match=rf"TripletConfig\.{field} must"):
        TripletConfig(**{field: value})


@pytest.mark.parametrize("field", ["margin", "semi_hard_margin"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1.0, 0.0, "0.5", True, [1.0]])
def test_a_margin_is_a_finite_number_above_zero_or_none(field, value):
    """m of eq. 2 (``margin``) and of eq. 3 (``semi_hard_margin``), checked once when the config is built."""
    with pytest.raises(InputError, match=rf"TripletConfig\.{field} must be a finite number > 0, or None; "
                                         rf"got {re.escape(repr(value))}$"):
        TripletConfig(mining="semi_hard", **{field: value})
    for ok in (None, 1e-3, 2, 0.5):
        assert getattr(TripletConfig(mining="semi_hard", **{field: ok}), field) == ok


@pytest.mark.parametrize("value", ["hardest", "batch-hard", None, 0])
def test_the_mining_is_one_of_three(value):
    with pytest.raises(InputError, match=rf"TripletConfig\.mining must be one of \('batch_hard', 'semi_hard', "
                                         rf"'batch_all'\); got {re.escape(repr(value))}$"):
        TripletConfig(mining=value)


def test_bad_training_inputs(data):
    x, y = data
    cfg = _cfg(steps=2)
    with pytest.raises(InputError, match=r"48 images but 47 labels"):
        fit_triplets(_model(), x, y[:-1], cfg, progress=False)
    with pytest.raises(InputError, match=r"images must be float in \[0, 1\] or uint8 \(0..255\); got dtype torch.int32"):
        fit_triplets(_model(), x.to(torch.int32), y, cfg, progress=False)
    bad = x.clone()
    bad[3, 0, 5, 5] = math.nan
    with pytest.raises(InputError, match="training images contain NaN or inf"):
        fit_triplets(_model(), bad, y, cfg, progress=False)
    with pytest.raises(InputError, match=r"expected a torch.Tensor of training images"):
        fit_triplets(_model(), x.numpy(), y, cfg, progress=False)
    with pytest.raises(InputError, match="P = 5 classes per batch but the labels hold only 4"):
        fit_triplets(_model(), x, y, _cfg(P=5), progress=False)
    with pytest.raises(InputError, match=r"K = 13 images per class but class 0 has 12 image\(s\)"):
        fit_triplets(_model(), x, y, _cfg(K=13), progress=False)
    with pytest.raises(InputError, match=r"expected training images of shape \(B, 1, 28, 56\)"):
        fit_triplets(build_model("het", n_digits=2, dim=4), x, y, cfg, progress=False)
    torch.manual_seed(0)
    with pytest.raises(InputError, match=r"heteroscedastic=True trains eq. 11, whose s = log sigma\^2 only a "
                                         r"build_model\('het'\) network emits .* this model's head is a PointHead"):
        fit_triplets(build_model("point", n_digits=1, dim=4), x, y, cfg, progress=False)


def _refused_at_the_start(x, labels, cfg, match, model=None):
    """fit_triplets refuses ``labels`` with an InputError matching ``match`` before its first step."""
    steps = []
    with pytest.raises(InputError, match=match):
        fit_triplets(model or _model(), x, labels, cfg, progress=False, callback=lambda step, row: steps.append(step))
    assert steps == []


@pytest.mark.parametrize("labels, match", [
    (lambda y: y.reshape(12, 4), r"labels must be one class label per image, shape \(N,\); got \(12, 4\)"),
    (lambda y: y[:40], r"48 images but 40 labels; need one label per image"),
    (lambda y: y.float().masked_fill(y == 3, math.nan), r"labels contain NaN or inf; every training image needs a"),
    (lambda y: np.where(y.numpy() == 0, np.inf, y.numpy()), r"labels contain NaN or inf"),
    (lambda y: y % 2 == 0, r"labels must be class labels, integers or strings \(one per image\); got dtype bool"),
    (lambda y: y.to(torch.complex64), r"labels must be class labels, .*; got dtype complex64"),
    (lambda y: [None if i == 5 else int(c) for i, c in enumerate(y)],
     r"labels must be class labels, .*; got dtype object"),
], ids=["2-d", "too-few", "nan", "inf", "bool", "complex", "object"])
def test_the_labels_are_checked_where_training_starts(data, labels, match):
    x, y = data
    _refused_at_the_start(x, labels(y), _cfg(P=2, K=2), match)


def test_the_sampler_gives_every_anchor_a_positive_and_a_negative_or_refuses_the_set(data):
    """The PK sampler built at the start: P >= 2 classes of K >= 2 distinct images per batch, or an InputError."""
    x, y = data
    cfg = _cfg(P=2, K=2)
    _refused_at_the_start(x, torch.zeros(48, dtype=torch.long), cfg,  # one class: no negative
                          r"P = 2 classes per batch but the labels hold only 1 classes")
    _refused_at_the_start(x, torch.arange(48), cfg,  # 48 classes of one image each: no positive
                          r"K = 2 images per class but class 0 has 1 image\(s\), class 1 has 1 image\(s\)")
    lone = y.clone()
    lone[0] = 7  # classes 0..3 keep 11 or 12 images; class 7 has one
    _refused_at_the_start(x, lone, cfg, r"K = 2 images per class but class 7 has 1 image\(s\); lower K")
    hist = fit_triplets(_model(), x, y, _cfg(steps=2, log_every=1, P=2, K=2), progress=False)
    assert [r["triplets"] for r in hist.rows] == [4, 4]  # batch-hard: one triplet per anchor of every 2 x 2 batch


def test_string_and_float_labels_train_as_their_classes(data):
    x, y = data
    ref = [r["loss"] for r in fit_triplets(_model(), x, y, _cfg(steps=2, log_every=1), progress=False).rows]
    names = np.array(["a", "b", "c", "d"])[y.numpy()]
    for labels in (names, y.to(torch.bfloat16) / 2 - 0.5, y.numpy().astype(np.float32)):
        hist = fit_triplets(_model(), x, labels, _cfg(steps=2, log_every=1), progress=False)
        assert hist.rows[0]["triplets"] == 16 and [r["loss"] for r in hist.rows] == ref


def test_fit_triplets_refuses_every_kind_of_bad_training_images(bad_images):
    for name, _what, x, match in bad_images((1, 28, 28), n=4):
        with pytest.raises(InputError, match=match):
            fit_triplets(_model(), x, torch.arange(len(x)) % 2, _cfg(steps=1), progress=False)
