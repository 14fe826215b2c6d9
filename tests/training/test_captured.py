"""Tests of hedgekit.training.captured: the captured step's buffers and schedule against `fit`, on the CPU (eager) and,
where a GPU is at hand, the CUDA graph against its own eager run."""
import pytest
import torch

from hedgekit.data import random_occlusion
from hedgekit.errors import InputError
from hedgekit.nets import build_model
from hedgekit.training.captured import WARMUP, fit_captured
from hedgekit.training.fit import TrainConfig, fit


def _data():
    gen = torch.Generator().manual_seed(3)
    images = torch.randint(0, 256, (400, 28, 56), dtype=torch.uint8, generator=gen)
    return images, torch.randperm(400, generator=gen) % 20


def _runs(kind, k, device="cpu", steps=8, **captured):
    images, labels = _data()
    cfg = TrainConfig(steps=steps, classes_per_batch=8, per_class=4, k=k, log_every=1)
    out = []
    for train in (fit, fit_captured):
        torch.manual_seed(5)
        model = build_model(kind, 2, 2)
        extra = captured if train is fit_captured else {"progress": False}
        hist = train(model, images, labels, cfg, seed=1, device=device, augment=random_occlusion(0.2), **extra)
        out.append((model.cpu(), [row["loss"] for row in hist.rows]))
    return out


def test_the_captured_steps_buffers_give_fits_hib_training():
    """Same batches, boxes, noise and schedule through fixed buffers: 8 HIB steps' losses agree with `fit`'s to 1e-5
    (measured: the 7th decimal) and the weights to 1e-3 (measured 8e-6; Adam fused here, foreach in `fit`)."""
    (ref, loss_ref), (ours, loss) = _runs("hib", 4, capture=False)
    assert loss == pytest.approx(loss_ref, rel=1e-5)
    for name, w in ref.state_dict().items():
        torch.testing.assert_close(ours.state_dict()[name], w, rtol=0, atol=1e-3, msg=name)


def test_the_captured_steps_point_training_starts_as_fits():
    """A point model's first loss agrees to 1e-6, the later ones to 2% (its head's bias has a gradient of float
    noise, which Adam turns into steps of the learning rate; measured within 0.02%)."""
    (_, loss_ref), (_, loss) = _runs("point", 1, capture=False)
    assert loss[0] == pytest.approx(loss_ref[0], rel=1e-6)
    assert loss == pytest.approx(loss_ref, rel=2e-2)


@pytest.mark.parametrize("cfg, kwargs, said", [
    ({}, {"capture": True}, "needs a CUDA device"),
    ({"pairing": "two_stream"}, {}, "all pairs"),
    ({"loss": "hard"}, {}, "soft loss"),
    ({}, {"augment": lambda x, rng: x}, "occlusion"),
])
def test_fit_captured_refuses_what_it_cannot_capture(cfg, kwargs, said):
    images, labels = _data()
    kwargs = {"device": "cpu", "augment": random_occlusion(0.2), **kwargs}
    with pytest.raises(InputError, match=said):
        fit_captured(build_model("hib", 2, 2), images, labels, TrainConfig(steps=2, classes_per_batch=8, per_class=4,
                                                                          **cfg), **kwargs)


@pytest.mark.gpu
def test_the_cuda_graph_replays_the_eager_step():
    """On a GPU the captured run's losses follow `fit`'s there: the same for the eager warm-up steps, and within
    1% after (the graph's fused, capturable Adam and the device's noise offsets; tests/gpu_check.sh runs this)."""
    (_, loss_ref), (_, loss) = _runs("hib", 4, device="cuda", steps=12)
    assert loss[:WARMUP] == pytest.approx(loss_ref[:WARMUP], rel=1e-4)
    assert loss == pytest.approx(loss_ref, rel=1e-2)


@pytest.mark.parametrize("device, cfg, augment, can", [
    ("cuda", {}, random_occlusion(0.2), True),
    ("cuda", {}, None, True),
    ("cpu", {}, random_occlusion(0.2), False),  # no graphs on the CPU
    ("cuda", {"loss": "hard"}, None, False),
    ("cuda", {"pairing": "two_stream"}, None, False),
    ("cuda", {"precision": "bfloat16"}, None, False),
    ("cuda", {}, lambda x, rng: x, False),
])
def test_capturable_says_which_trainings_the_graph_can_take(device, cfg, augment, can):
    from hedgekit.training.captured import capturable

    assert capturable(TrainConfig(**cfg), device, augment) is can


def test_a_paper_pair_model_trains_captured_on_cuda_and_eagerly_elsewhere(monkeypatch):
    """The zoo's pair recipe picks the captured step where it can (stood-in trainers record which ran)."""
    from hedgekit.zoo import Spec, recipes

    images, labels = _data()
    ran = []
    monkeypatch.setattr(recipes, "load_ndigit", lambda n, split: type("S", (), {
        "images": images.numpy(), "labels": labels.numpy()})())
    monkeypatch.setattr(recipes, "eval_set", lambda spec: [])
    import hedgekit.evaluation.retrieval as retrieval

    monkeypatch.setattr(retrieval, "table1_metrics", lambda *a, **k: {})
    for name in ("fit", "fit_captured"):
        monkeypatch.setattr(recipes, name, lambda *a, _n=name, **k: ran.append(_n) or type("H", (), {"rows": []})())
    spec = Spec(kind="hib", preset="fast")
    for device in ("cpu", "cuda"):
        recipes._train_pairs(spec, "float32", False, device, None)
    assert ran == ["fit", "fit_captured"]
