"""Tests of hedgekit.bench: the FLOP count against a hand count, the plain loop's contract, the ratios."""
import numpy as np
import pytest
import torch

from hedgekit import bench
from hedgekit.errors import InputError
from hedgekit.nets import build_model


def _lenet_flops(width: int, dim: int) -> tuple[int, int]:
    """Hand count (2 FLOPs per multiply-add) of LeNetBody + point head on a 28 x width image:
    (forward FLOPs, FLOPs of the first convolution)."""
    conv1 = 6 * 28 * width * (1 * 5 * 5) * 2
    conv2 = 16 * 14 * (width // 2) * (6 * 5 * 5) * 2
    fc = 16 * 7 * (width // 4) * 120 * 2
    return conv1 + conv2 + fc + 120 * dim * 2, conv1


@pytest.mark.parametrize("n_digits", [1, 2])
def test_training_flops_are_three_forward_passes_minus_the_image_gradient(n_digits):
    """Backward = gradient of every layer's input and of its weights (2x the forward each), except the
    input gradient of the first convolution: the images need none."""
    flops = bench.train_flops_per_image(build_model("point", n_digits, 2))
    forward, conv1 = _lenet_flops(28 * n_digits, 2)
    assert flops == 3 * forward - conv1  # 7.716 MFLOP for 2-digit images
    # per image: the batch size used for counting does not matter
    assert bench.train_flops_per_image(build_model("point", n_digits, 2), batch=4) == flops


def test_matmul_rate_is_positive_and_finite():
    rate = bench.matmul_gflops(n=64, seconds=0.01)
    assert np.isfinite(rate) and rate > 0


def _digits(n_classes=4, per_class=6):
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (n_classes * per_class, 28, 56), dtype=torch.uint8, generator=g), \
        torch.arange(n_classes).repeat_interleave(per_class)


@pytest.mark.parametrize("kind, k", [("point", 1), ("hib", 3)])
def test_plain_step_trains_the_same_network(kind, k):
    images, labels = _digits()
    model = build_model(kind, 2, 2)
    before = [p.detach().clone() for p in model.parameters()]
    seconds = bench.plain_step(model, images.unsqueeze(1).float() / 255, labels, batch=8, k=k, steps=2)
    assert seconds > 0
    body_changed = [not torch.equal(b, p) for b, p in zip(before, model.parameters())]
    assert all(body_changed[:4])  # both convolutions were updated


def test_plain_step_refuses_mixtures():
    images, labels = _digits()
    with pytest.raises(InputError, match="point and MoG-1"):
        bench.plain_step(build_model("hib", 2, 2, components=2), images.unsqueeze(1).float(), labels, 8, 2, 1)


def test_compare_reports_medians_and_ratios():
    images, labels = _digits()
    r = bench.compare("point", 1, images, labels, steps=1, repeats=1, classes_per_batch=2, per_class=3)
    assert len(r.hedgekit_all) == len(r.plain_all) == 1
    assert r.hedgekit == r.hedgekit_all[0] > 0 and r.plain == r.plain_all[0] > 0 and r.gflops > 0
    assert r.vs_plain == pytest.approx(r.hedgekit / r.plain)
    assert r.vs_ceiling == pytest.approx(r.hedgekit / r.ceiling)
    assert r.ceiling == pytest.approx(r.gflops * 1e9 / bench.train_flops_per_image(build_model("point", 2, 2)))


def test_layer_times_cover_every_layer_and_their_flops_sum_to_the_training_count():
    """One row per leaf layer of body and head, in order; FLOPs per layer add up to `train_flops_per_image`
    (the first convolution needs no input gradient), pooling and ReLU count none."""
    model = build_model("point", 2, 2)
    rows = bench.layer_times(model, batch=4, repeats=1)
    names = [r["name"].split(" ")[0] for r in rows]
    assert names == ["Conv2d", "MaxPool2d", "ReLU", "Conv2d", "MaxPool2d", "ReLU", "Flatten", "Linear", "ReLU",
                     "Linear"]
    assert rows[0]["name"].endswith("(6, 28, 56)") and rows[-1]["name"].endswith("(2,)")
    assert sum(r["flops"] for r in rows) / 4 == bench.train_flops_per_image(build_model("point", 2, 2))
    assert all(r["flops"] == 0 for r in rows if r["name"].startswith(("MaxPool2d", "ReLU", "Flatten")))
    assert all(r["seconds"] > 0 for r in rows)
    assert not any(p.grad is not None for p in model.parameters())  # gradients of the timing runs are dropped


@pytest.mark.parametrize("kwargs", [dict(batch=0), dict(repeats=0)])
def test_layer_times_refuses_empty_runs(kwargs):
    with pytest.raises(InputError, match=">= 1"):
        bench.layer_times(build_model("point", 2, 2), **kwargs)


def test_layer_times_in_bfloat16_cover_the_same_layers_and_flops():
    """With a bfloat16 body every layer is still timed once, with the same FLOP count; unknown precisions fail."""
    rows32 = bench.layer_times(build_model("point", 2, 2), batch=4, repeats=1)
    rows16 = bench.layer_times(build_model("point", 2, 2), batch=4, repeats=1, precision="bfloat16")
    assert [(r["name"], r["flops"]) for r in rows16] == [(r["name"], r["flops"]) for r in rows32]
    assert all(r["seconds"] > 0 for r in rows16)
    with pytest.raises(InputError, match="precision must be one of"):
        bench.layer_times(build_model("point", 2, 2), batch=4, repeats=1, precision="float16")


def test_compare_times_the_precision_it_is_given(monkeypatch):
    """compare hands its precision to `fit` (the runs it times), not only to the result it returns."""
    from hedgekit.training import fit as fit_module

    used, real_fit = [], fit_module.fit
    monkeypatch.setattr(fit_module, "fit", lambda model, x, y, cfg, **kw: used.append(cfg.precision) or
                        real_fit(model, x, y, cfg, **kw))
    images, labels = _digits()
    r = bench.compare("hib", 2, images, labels, steps=1, repeats=1, classes_per_batch=2, per_class=3,
                      precision="bfloat16")
    assert used == ["bfloat16", "bfloat16"]  # the warm-up and the timed repeat
    assert r.precision == "bfloat16" and r.hedgekit > 0
