"""Tests of hedgekit.training.fit: a tiny seeded fit that learns, determinism, LR schedule, errors.

The learning problem is synthetic (no dataset needed): 10 classes of sparse random
28 x 56 patterns on a grey background plus strong pixel noise. An untrained network is
at chance; 80 steps of any of the kit's recipes must clearly beat it.
"""
import math

import numpy as np
import pytest
import torch

from hedgekit.evaluation import metrics as M
from hedgekit.data import random_occlusion
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.evaluation.retrieval import knn
from hedgekit.evaluation.embedded import EmbeddedSet
from hedgekit.nets import build_model
from hedgekit.checks import resolve_device
from hedgekit.training.fit import TrainConfig, fit
from hedgekit.training.loop import History, lr_factor
from hedgekit.uncertainty import match_probability, self_mismatch

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")

N_CLASSES = 10


def synthetic(n_per_class: int, seed: int, noise: float = 0.3):
    """Images (N, 1, 28, 56) in [0, 1]: fixed class patterns (seed 1234) + Gaussian noise (seed)."""
    protos = 0.6 * (torch.rand(N_CLASSES, 28, 56, generator=torch.Generator().manual_seed(1234)) > 0.8).float()
    y = torch.arange(N_CLASSES).repeat_interleave(n_per_class)
    x = 0.3 + protos[y] + noise * torch.randn(len(y), 28, 56, generator=torch.Generator().manual_seed(seed))
    return x.clamp(0, 1).unsqueeze(1), y


@pytest.fixture(scope="module")
def data():
    return synthetic(30, seed=0), synthetic(20, seed=1)


def evaluate(model, x, y):
    """KNN accuracy (K = 5, majority) and verification AP of p(m|x1,x2) on 1000 half-matching pairs."""
    emb = model.embed(x)
    eta = self_mismatch(emb, model.match).numpy()
    acc = knn(EmbeddedSet(emb, emb, y.numpy(), eta, eta, model.match))["acc"]
    i, j, same = M.verification_pairs(y.numpy(), 1000, seed=0)
    p = match_probability(emb[torch.as_tensor(i)], emb[torch.as_tensor(j)], model.match).numpy()
    return acc, M.average_precision(p, same)


@pytest.mark.parametrize(
    "kind, components, cfg",
    [
        ("hib", 1, dict()),  # MoG-1, all pairs in P x Q batches (default recipe)
        ("point", 1, dict(loss="hard")),  # eq. 1, all pairs
        ("hib", 2, dict(pairing="two_stream", pairs_per_batch=16)),  # MoG-2, the paper's two streams
        ("hib", 1, dict(precision="bfloat16")),  # MoG-1 with a bfloat16 body
    ],
    ids=["mog1-all-pairs", "point-hard-contrastive", "mog2-two-stream", "mog1-bfloat16"],
)
def test_tiny_fit_beats_chance(data, kind, components, cfg):
    (xtr, ytr), (xte, yte) = data
    torch.manual_seed(0)
    # 80 steps: start from small variances (the presets start at INIT_VAR = 1 and train for thousands of steps)
    model = build_model(kind, n_digits=2, dim=2, components=components, init_var=1e-2)
    acc0, ap0 = evaluate(model, xte, yte)
    assert acc0 < 0.25 and ap0 < 0.65  # the untrained network is at chance (KNN 0.1, AP 0.5)
    config = TrainConfig(steps=80, classes_per_batch=5, per_class=4, lr=3e-3, k=4, log_every=10, **cfg)
    hist = fit(model, xtr, ytr, config, seed=0, progress=False)
    acc, ap = evaluate(model, xte, yte)
    assert acc > 0.5, (acc0, acc)
    assert ap > 0.8, (ap0, ap)
    assert not model.training
    assert isinstance(hist, History) and hist.seconds > 0
    assert [r["step"] for r in hist.rows] == list(range(0, 80, 10)) + [79]
    assert hist.rows[-1]["loss"] < hist.rows[0]["loss"]
    assert all(r["a"] > 0 for r in hist.rows)
    if kind == "hib" and cfg.get("pairing", "all") == "all":
        assert {"nll_pos", "nll_neg"} <= set(hist.rows[0])


def _run(x, y, seed, kind="hib", steps=12, **cfg):
    torch.manual_seed(123)  # same initial weights in every run
    model = build_model(kind, n_digits=2, dim=3)
    config = TrainConfig(steps=steps, classes_per_batch=4, per_class=3, k=4, log_every=1, **cfg)
    hist = fit(model, x, y, config, seed=seed, progress=False, augment=random_occlusion(0.5))
    return hist, model


@pytest.mark.parametrize("pairing", ["all", "two_stream"])
def test_same_seed_same_history(data, pairing):
    (x, y), _ = data
    h1, m1 = _run(x, y, seed=3, pairing=pairing, pairs_per_batch=16)
    torch.manual_seed(999)  # global RNG state before fit must not matter
    h2, m2 = _run(x, y, seed=3, pairing=pairing, pairs_per_batch=16)
    assert h1.rows == h2.rows  # bit-identical losses, lr, a, b, nll
    for (k, v1), v2 in zip(m1.state_dict().items(), m2.state_dict().values()):
        assert torch.equal(v1, v2), k
    h3, _ = _run(x, y, seed=4, pairing=pairing, pairs_per_batch=16)
    assert [r["loss"] for r in h3.rows] != [r["loss"] for r in h1.rows]


def test_uint8_images_train_like_float_images(data):
    (x, y), _ = data
    x8 = (x * 255).round().to(torch.uint8)
    h_u8, _ = _run(x8, y, seed=0, steps=5)
    h_f, _ = _run(x8.float() / 255.0, y, seed=0, steps=5)
    assert h_u8.rows == h_f.rows
    h_3d, _ = _run(x8[:, 0], y, seed=0, steps=5)  # (N, H, W) images
    assert h_3d.rows == h_u8.rows


def test_callback_and_logged_learning_rate(data):
    (x, y), _ = data
    calls = []
    torch.manual_seed(0)
    config = TrainConfig(steps=40, classes_per_batch=4, per_class=3, k=2, lr=0.01, warmup=0.25, log_every=7)
    hist = fit(build_model("point", n_digits=2), x, y, config, progress=False,
               callback=lambda step, row: calls.append((step, dict(row))))
    assert [s for s, _ in calls] == [0, 7, 14, 21, 28, 35, 39]
    assert [r for _, r in calls] == hist.rows
    for r in hist.rows:
        # the logged lr is the one of the next step (the scheduler has already stepped)
        assert r["lr"] == pytest.approx(0.01 * lr_factor(r["step"] + 1, 40, 0.25), rel=1e-12)


# --------------------------------------------------------------------------- LR schedule
def test_lr_factor_warmup_and_cosine_end_points():
    total, warmup = 100, 0.1  # 10 warm-up steps
    f = [lr_factor(s, total, warmup) for s in range(total + 1)]
    assert f[0] == pytest.approx(0.1) and f[4] == pytest.approx(0.5) and f[9] == pytest.approx(1.0)
    assert np.all(np.diff(f[:10]) > 0)  # linear ramp
    assert np.allclose(np.diff(f[:10]), 0.1)
    assert f[10] == pytest.approx(1.0)  # cosine starts at the peak
    assert f[55] == pytest.approx(0.5)  # half-way through the 90 cosine steps
    assert f[100] == pytest.approx(0.0, abs=1e-12)  # ... and ends at 0
    assert np.all(np.diff(f[10:]) < 0)
    # closed form of the cosine part
    for s in (10, 30, 77, 99):
        assert f[s] == pytest.approx(0.5 * (1 + math.cos(math.pi * (s - 10) / 90)))


def test_lr_factor_without_warmup_and_tiny_runs():
    assert lr_factor(0, 50, 0.0) == 1.0
    assert lr_factor(50, 50, 0.0) == pytest.approx(0.0, abs=1e-12)
    assert lr_factor(0, 1, 0.05) == 1.0  # one step: warm-up of one step reaches the full rate
    assert all(0 < lr_factor(s, 3, 0.5) <= 1 for s in range(3))


# --------------------------------------------------------------------------- errors
def test_divergence_raises_clear_error(data):
    (x, y), _ = data
    torch.manual_seed(0)
    model = build_model("hib", n_digits=2)
    with pytest.raises(FloatingPointError, match=r"training diverged at step \d+ .*lower the learning rate"):
        fit(model, x, y, TrainConfig(steps=30, classes_per_batch=4, per_class=3, lr=1e6), progress=False)


def test_nan_parameter_raises_diverged_at_step_0(data):
    (x, y), _ = data
    model = build_model("hib", n_digits=2)
    with torch.no_grad():
        model.match.b.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="diverged at step 0"):
        fit(model, x, y, TrainConfig(steps=5, classes_per_batch=4, per_class=3), progress=False)


def test_divergence_through_weights_raises_floating_point_error(data):
    (x, y), _ = data
    torch.manual_seed(0)
    with pytest.raises(FloatingPointError, match="diverged"):
        fit(build_model("hib", n_digits=2), x, y, TrainConfig(steps=10, classes_per_batch=4, per_class=3, lr=1e30),
            progress=False)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(loss="triplet"), r"TrainConfig.loss must be one of \('soft', 'hard'\)"),
        (dict(pairing="random"), r"TrainConfig.pairing must be one of \('all', 'two_stream'\)"),
        (dict(steps=0), "TrainConfig.steps must be an integer >= 1; got 0"),
        (dict(steps=10.0), "TrainConfig.steps must be an integer >= 1; got 10.0"),
        (dict(lr=0.0), "TrainConfig.lr must be > 0"),
        (dict(lr=-1e-3), "TrainConfig.lr must be > 0"),
        (dict(lr=float("inf")), "TrainConfig.lr must be a finite number"),
        (dict(lr="3e-3"), "TrainConfig.lr must be a finite number"),
        (dict(k=0), "TrainConfig.k must be an integer >= 1"),
        (dict(k=True), "TrainConfig.k must be an integer >= 1"),
        (dict(k=8.0), "TrainConfig.k must be an integer >= 1"),
        (dict(beta=-1e-4), "TrainConfig.beta must be >= 0"),
        (dict(beta=float("nan")), "TrainConfig.beta must be a finite number"),
        (dict(beta=float("inf")), "TrainConfig.beta must be a finite number"),
        (dict(beta=1e308), r"TrainConfig.beta, the KL weight of HIB eq. 8, must be <= 1e\+06; got 1e\+308"),
        (dict(beta=1.000001e6), "the KL weight of HIB eq. 8, must be <= 1e"),  # not "learning rate"
        (dict(per_class=1), "TrainConfig.per_class must be an integer >= 2"),
        (dict(classes_per_batch=-2), "TrainConfig.classes_per_batch must be an integer >= 2"),
        # one class: no non-matching pair for the all-pairs losses (HIB eq. 8, eq. 1); formerly refused by the losses
        (dict(classes_per_batch=1), "TrainConfig.classes_per_batch must be an integer >= 2"),
        (dict(classes_per_batch=1, loss="hard"), "TrainConfig.classes_per_batch must be an integer >= 2"),
        (dict(pairs_per_batch=0), "TrainConfig.pairs_per_batch must be an integer >= 1"),
        (dict(warmup=1.5), "TrainConfig.warmup must be <= 1"),
        (dict(occlusion_p=-0.1), "TrainConfig.occlusion_p must be >= 0"),
        (dict(margin=0.0), "TrainConfig.margin must be > 0"),
        (dict(weight_decay=-1.0), "TrainConfig.weight_decay must be >= 0"),
        (dict(precision="float16"), r"TrainConfig.precision must be one of \('float32', 'bfloat16'\)"),
        (dict(precision=torch.bfloat16), r"TrainConfig.precision must be one of"),
    ],
)
def test_train_config_rejects_bad_values(kwargs, match):
    with pytest.raises(InputError, match=match):
        TrainConfig(**kwargs)


@pytest.mark.parametrize("k", [0, -1, 2.5, 8.0, True, None, "8"], ids=repr)
def test_bad_k_is_refused_by_the_config_and_by_the_sampler(k):
    """K enters through `TrainConfig` (what `fit` hands the HIB losses) or, for a loss called by hand, through
    `Embedding.sample`; the losses themselves only compute eq. 5 / 8."""
    with pytest.raises(InputError, match="TrainConfig.k must be an integer >= 1"):
        TrainConfig(k=k)
    with pytest.raises(InputError, match=r"k \(samples per input\) must be an integer >= 1"):
        Embedding.gaussian(torch.zeros(4, 2), torch.ones(4, 2)).sample(k)


@pytest.mark.parametrize("k", [10**5, 10**7])
def test_a_pair_matrix_larger_than_memory_is_refused_by_the_config(k):
    """K x K sample pairs of B inputs: (BK)^2 distances for all pairs, B K^2 for explicit pairs; K = 1e7 would need
    petabytes. Refused when the config is made, before anything is allocated, with the advice; a hard-contrastive
    config draws no samples and is not refused."""
    with pytest.raises(InputError, match=rf"HIB loss with K={k} on a batch of 256 would take .*smaller K"):
        TrainConfig(classes_per_batch=32, per_class=8, k=k)
    pairs = 8 if k > 10**6 else 256
    with pytest.raises(InputError, match=rf"HIB loss with K={k} on a batch of {pairs} would take"):
        TrainConfig(pairing="two_stream", pairs_per_batch=pairs, k=k)
    assert TrainConfig(loss="hard", k=k).k == k


@pytest.mark.parametrize("kwargs", [dict(log_every=0), dict(lr=float("nan"))], ids=["log_every0", "lr_nan"])
def test_train_config_rejects_log_every_zero_and_nan_lr(kwargs):
    with pytest.raises(InputError):
        TrainConfig(**kwargs)


def test_fit_input_errors(data):
    (x, y), _ = data
    model = build_model("point", n_digits=2)
    cfg = TrainConfig(steps=1, classes_per_batch=4, per_class=3)
    with pytest.raises(InputError, match="300 images but 299 labels"):
        fit(model, x, y[:-1], cfg, progress=False)
    with pytest.raises(InputError, match="images must be float in \\[0, 1\\] or uint8"):
        fit(model, (x * 255).long(), y, cfg, progress=False)
    with pytest.raises(InputError, match="only 10"):
        fit(model, x, y, TrainConfig(steps=1, classes_per_batch=11, per_class=3), progress=False)


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else (
        "mps" if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available() else "cpu")
    assert resolve_device(None).type == expected and resolve_device("auto").type == expected
@pytest.mark.slow  # times real training steps (~6 s)


def test_bench_reports_the_preset_budget(capsys):
    """`python -m hedgekit bench` times point, HIB at the preset's K and at the paper's K = 8, and turns
    the preset's step counts into minutes (the 10-minute budget of the `paper` preset)."""
    from hedgekit.cli import main

    assert main(["bench", "--steps", "1", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "train point (K=1" in out and "-> paper preset: 12000 steps" in out
    assert "train hib   (K=4" in out and "-> paper preset: 9000 steps" in out and "train hib   (K=8" in out
    assert "embeddings" in out and "eta" in out
    assert out.count("all pairs, float32):") == out.count("all pairs, bfloat16):") == 3
    assert out.count("bfloat16 / float32:") == 3


def test_fit_refuses_every_kind_of_bad_training_images(data, bad_images):
    """`fit` checks the whole training set before the first step (0..255 floats would train)."""
    model = build_model("point", n_digits=2)
    cfg = TrainConfig(steps=1, classes_per_batch=2, per_class=2)
    for name, _what, x, match in bad_images((1, 28, 56), n=4):
        with pytest.raises(InputError, match=match):
            fit(model, x, torch.arange(len(x)) % 2, cfg, progress=False)


@pytest.mark.parametrize("device", ["banana", "cuda:99", "meta", 3.5])
def test_resolve_device_refuses_devices_that_do_not_exist_here(device):
    if device == "cuda:99" and torch.cuda.device_count() > 99:
        pytest.skip("a machine with 100 GPUs")
    with pytest.raises(InputError, match="device|CUDA"):
        resolve_device(device)


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_precision_runs_only_the_body_in_bfloat16(data, monkeypatch, precision):
    """TrainConfig.precision: the body's layers compute in bfloat16 (or float32); the head, the loss and
    every weight and gradient stay float32, and the body's output is the float32 net's to bfloat16 rounding."""
    from hedgekit.training import fit as fit_module

    (x, y), _ = data
    torch.manual_seed(0)
    model = build_model("hib", n_digits=2, dim=2)
    seen = {}

    def record(name):
        def hook(module, inputs, output):
            seen.setdefault(name, (inputs[0].dtype, output.dtype))
        return hook

    model.body.conv[0].register_forward_hook(record("conv"))
    model.head.branches[0].register_forward_hook(record("head"))
    step_loss = fit_module.soft_pair_loss

    def checked_step_loss(emb, *args, **kwargs):
        seen["loss autocast"] = torch.is_autocast_enabled("cpu")
        seen["embedding"] = (emb.mean.dtype, emb.var.dtype)
        return step_loss(emb, *args, **kwargs)

    fit(model, x, y, TrainConfig(steps=1, classes_per_batch=4, per_class=3, k=2, precision=precision), progress=False,
        loss=checked_step_loss)
    body = torch.bfloat16 if precision == "bfloat16" else torch.float32
    assert seen["conv"] == (torch.float32, body)  # autocast casts inside the layer
    assert seen["head"] == (torch.float32, torch.float32)
    assert seen["embedding"] == (torch.float32, torch.float32) and seen["loss autocast"] is False
    assert all(p.dtype == torch.float32 for p in model.parameters())
    # the same weights embed to within bfloat16 rounding (8 significant bits), and not bit-identically
    with fit_module.body_autocast(precision, torch.device("cpu")):
        h = model.body(x[:32])
    h32 = model.body(x[:32])
    assert h.dtype == body
    torch.testing.assert_close(h.float(), h32, rtol=0.05, atol=0.05 * h32.abs().max().item())
    assert torch.equal(h.float(), h32) == (precision == "float32")


def test_body_autocast_refuses_unknown_precisions():
    from hedgekit.training.fit import body_autocast

    with pytest.raises(InputError, match="precision must be one of"):
        body_autocast("half", torch.device("cpu"))


@pytest.mark.parametrize("trainer", ["fit", "fit_episodic", "fit_triplets"])
def test_every_trainer_convolves_channels_last_and_hands_back_contiguous_weights(data, trainer):
    """All trainers share `memory_format`: NHWC batches and weights while training on the CPU, the
    default (NCHW) layout again afterwards."""
    from hedgekit.training.episodic import EpisodicConfig, fit_episodic
    from hedgekit.training.triplets import TripletConfig, fit_triplets

    (x, y), _ = data
    model = build_model("het" if trainer == "fit_triplets" else "point", n_digits=2, dim=2)
    seen = []
    model.body.conv[3].register_forward_hook(  # the second convolution: 6 input channels make the layouts differ
        lambda module, inputs, output: seen.append(inputs[0].is_contiguous(memory_format=torch.channels_last)
                                                   and module.weight.is_contiguous(memory_format=torch.channels_last)))
    if trainer == "fit":
        fit(model, x, y, TrainConfig(steps=2, classes_per_batch=4, per_class=3), progress=False)
    elif trainer == "fit_episodic":
        fit_episodic(model, None, x, y, EpisodicConfig(steps=2, n_classes=3, k_support=2, query_per_class=2),
                     progress=False)
    else:
        fit_triplets(model, x, y, TripletConfig(steps=2, P=3, K=3, occlusion_p=0.0), progress=False)
    assert seen == [True, True]
    assert all(p.is_contiguous() for p in model.parameters())
