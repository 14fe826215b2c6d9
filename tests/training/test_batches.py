"""Tests of hedgekit.training.batches and the device-resident training step.

Oracles: a brute-force per-pixel occlusion, the batch the trainers built before (float conversion first, then
the occlusion), and a count of the host synchronisations a training step asks for. A synchronisation is a
tensor turned into a Python number (aten::_local_scalar_dense: ``.item()``, ``bool(t)``, ``int(t)``) or an op whose
output size depends on the data (aten::nonzero); counted with a TorchDispatchMode, so this runs on the CPU. Adam's
step counter is a CPU tensor even for GPU weights; its ``.item()`` is no synchronisation and is not counted.
"""
import collections
import traceback

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from hedgekit.checks import deferred_value_checks, values_checked
from hedgekit.data import random_occlusion, sample_digit_boxes
from hedgekit.data.occlusion import RandomOcclusion, box_mask
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.methods import contrastive
from hedgekit.methods.fast.spe import SPE
from hedgekit.nets import build_model
from hedgekit.training.batches import DeviceImages, to_float
from hedgekit.training.episodic import EpisodicConfig, fit_episodic
from hedgekit.training.fit import TrainConfig, fit
from hedgekit.training.triplets import TripletConfig, fit_triplets
from hedgekit.training.upstream import UpstreamConfig, UpstreamModel, fit_upstream

SYNC_OPS = ("aten::_local_scalar_dense", "aten::nonzero")


def _boolean_index(func, args) -> bool:
    """Indexing with a boolean mask (``t[mask]``): its output size depends on the mask's values, so on a GPU it
    waits for them (on the CPU the kernel counts the mask itself and no aten::nonzero is dispatched)."""
    if func._schema.name not in ("aten::index", "aten::index_put", "aten::index_put_", "aten::masked_select"):
        return False
    flat = [a for arg in args for a in (arg if isinstance(arg, (list, tuple)) else [arg])]
    return any(isinstance(a, torch.Tensor) and a.dtype == torch.bool for a in flat[1:])


class SyncCounter(TorchDispatchMode):
    """Counts the synchronising ops (module docstring; boolean-mask indexing as aten::nonzero) called outside
    torch.optim."""

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = "aten::nonzero" if _boolean_index(func, args) else func._schema.name
        if name in SYNC_OPS and not any("torch/optim" in f.filename for f in traceback.extract_stack()):
            self.counts[name] += 1
        return func(*args, **(kwargs or {}))


def images_and_labels(n=240, classes=12, width=56):
    g = torch.Generator().manual_seed(0)
    return (torch.rand(n, 28, width, generator=g) * 255).to(torch.uint8), torch.arange(n) % classes


def naive_occluded(images: torch.Tensor, boxes: np.ndarray) -> torch.Tensor:
    """Float batch in [0, 1] with every pixel of every box set to 0, one pixel at a time."""
    out = images.float() / 255.0
    for b, image_boxes in enumerate(boxes):
        for top, left, h, w in image_boxes:
            for r in range(top, top + h):
                for c in range(left, left + w):
                    out[b, r, c] = 0.0
    return out


def test_box_mask_matches_brute_force_for_random_boxes_including_empty_ones():
    rng = np.random.default_rng(3)
    boxes = sample_digit_boxes(rng, 40, 3, 0.7)
    assert (boxes[..., 2:] == 0).any()  # empty boxes are part of the test
    mask = box_mask(torch.from_numpy(boxes), 28, 84)
    expected = naive_occluded(torch.full((40, 28, 84), 255, dtype=torch.uint8), boxes) == 0
    assert torch.equal(mask, expected)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_random_occlusion_keeps_dtype_and_matches_the_naive_float_batch(dtype):
    images, _ = images_and_labels()
    x = images[:32, None] if dtype == torch.uint8 else images[:32, None].float() / 255.0
    out = random_occlusion(0.5)(x, np.random.default_rng(7))
    boxes = sample_digit_boxes(np.random.default_rng(7), 32, 2, 0.5)
    assert out.dtype == dtype and out.shape == x.shape
    torch.testing.assert_close(to_float(out)[:, 0], naive_occluded(images[:32], boxes), rtol=0, atol=0)


def test_random_occlusion_rejects_batches_that_are_not_digit_rows():
    with pytest.raises(InputError, match="28 x 28N"):
        random_occlusion(0.2)(torch.zeros(4, 1, 32, 32), np.random.default_rng(0))
    with pytest.raises(InputError, match="p_occlude"):
        RandomOcclusion(1.5)


def test_device_batch_is_the_batch_the_trainers_built_before():
    """Old path: float conversion, then occlusion on the float batch; new: occlusion on uint8, float in the model."""
    images, _ = images_and_labels()
    idx = np.array([5, 3, 200, 3, 17])
    data = DeviceImages(images, torch.device("cpu"), torch.channels_last)
    new = data.batch(idx, random_occlusion(0.6), np.random.default_rng(1))
    assert new.dtype == torch.uint8 and new.is_contiguous(memory_format=torch.channels_last)
    old = random_occlusion(0.6)(images[torch.as_tensor(idx)].float().div(255.0).unsqueeze(1), np.random.default_rng(1))
    assert torch.equal(to_float(new), old)


def test_other_augmentations_get_a_float_batch_in_unit_range():
    images, _ = images_and_labels()
    seen = []

    def augment(x, rng):
        seen.append((x.dtype, float(x.min()), float(x.max())))
        return x

    DeviceImages(images, torch.device("cpu")).batch(np.arange(8), augment, np.random.default_rng(0))
    dtype, lo, hi = seen[0]
    assert dtype == torch.float32 and 0.0 <= lo and hi <= 1.0 and hi > 0.5


# ------------------------------------------------------------------ no synchronisation inside a step
def _count(train, steps: int) -> collections.Counter:
    with SyncCounter() as counter:
        train(steps)
    return counter.counts


def _extra_syncs(train) -> dict:
    """Synchronisations of 6 more non-log steps: runs of 4 and 10 steps log at their first and last step only."""
    short, long = _count(train, 4), _count(train, 10)
    return {op: long[op] - short[op] for op in SYNC_OPS}


def _trainers():
    images, labels = images_and_labels()
    occlusion = random_occlusion(0.3)
    big = 10**6

    def pairs(loss, pairing="all"):
        return lambda steps: fit(build_model("hib" if loss == "soft" else "point", dim=2, height=28, width=56),
                                 images, labels, TrainConfig(steps=steps, classes_per_batch=6, per_class=4, k=4,
                                                             loss=loss, pairing=pairing, pairs_per_batch=16,
                                                             log_every=big), progress=False, augment=occlusion)

    def spe(steps):
        fit_episodic(build_model("hib", dim=2, height=28, width=56), SPE(5, 2), images, labels,
                     EpisodicConfig(steps=steps, n_classes=4, log_every=big), progress=False, augment=occlusion)

    def triplets(steps):
        fit_triplets(build_model("het", dim=4, height=28, width=56), images, labels,
                     TripletConfig(steps=steps, P=4, K=4, log_every=big), progress=False)

    def upstream(steps):
        from hedgekit.methods.ce import CE
        from hedgekit.nets.backbones import LeNetBody

        model = UpstreamModel(LeNetBody(1, 28, 56), CE(120, 12, embed_dim=8))
        fit_upstream(model, images.unsqueeze(1), labels, UpstreamConfig(steps=steps, classes_per_batch=4, per_class=4,
                                                                        log_every=big), augment=occlusion,
                     progress=False)

    return {"hib-all-pairs": (pairs("soft"), 0), "point-hard": (pairs("hard"), 0),
            "hib-two-stream": (pairs("soft", "two_stream"), 0), "spe-episodes": (spe, 0),
            "het-triplets": (triplets, 1), "upstream-ce": (upstream, 0)}


@pytest.mark.parametrize("name", list(_trainers()))
def test_a_training_step_does_not_wait_for_the_device(name, monkeypatch):
    """Between log steps no step reads a tensor's value on the host. Triplet mining keeps one data-dependent
    selection per step (its triplets are index tensors whose length depends on the batch). The pair losses'
    masked sums take their GPU path here (on the CPU they select, which costs no wait there)."""
    monkeypatch.setattr(contrastive, "_selects", lambda x: False)
    train, nonzero_per_step = _trainers()[name]
    extra = _extra_syncs(train)
    assert extra == {"aten::_local_scalar_dense": 0, "aten::nonzero": 6 * nonzero_per_step}, extra


@pytest.mark.parametrize("fn", [contrastive.masked_sum, contrastive.masked_mean])
def test_masked_sums_give_the_selections_result_on_both_paths(fn, monkeypatch):
    g = torch.Generator().manual_seed(0)
    x, mask = torch.randn(40, 30, generator=g, dtype=torch.float64), torch.rand(40, 30, generator=g) > 0.7
    on_cpu = fn(x, mask)
    assert on_cpu == (x[mask].sum() if fn is contrastive.masked_sum else x[mask].mean())  # the selection itself
    monkeypatch.setattr(contrastive, "_selects", lambda t: False)
    torch.testing.assert_close(fn(x, mask), on_cpu, rtol=1e-12, atol=1e-12)


def test_the_counter_sees_a_synchronisation():
    x = torch.ones(3)
    with SyncCounter() as counter:
        bool(x.sum() > 0)
        torch.nonzero(x)
        x[x > 0]  # boolean mask
        x[torch.tensor([0, 2])]  # integer indices: no synchronisation
    assert counter.counts == {"aten::_local_scalar_dense": 1, "aten::nonzero": 2}


# ------------------------------------------------------------------ deferred checks
def test_value_checks_are_deferred_only_inside_the_block_and_nest():
    bad = torch.full((2, 1, 3), float("nan"))
    assert values_checked()
    with deferred_value_checks():
        assert not values_checked()
        Embedding(bad, torch.ones(2, 1, 3), torch.ones(2, 1))  # not read
        with deferred_value_checks(False):  # a log step inside: still deferred by the outer block
            assert not values_checked()
    assert values_checked()
    with pytest.raises(InputError, match="NaN"):
        Embedding(bad, torch.ones(2, 1, 3), torch.ones(2, 1))


def test_deferred_steps_still_report_a_divergence_at_the_next_log_step():
    images, labels = images_and_labels()
    model = build_model("hib", dim=2, height=28, width=56)
    cfg = TrainConfig(steps=12, classes_per_batch=6, per_class=4, k=2, log_every=5)

    def poison(step, row):  # after the log step 5, the weights turn NaN
        if step == 5:
            with torch.no_grad():
                model.head.branches[0].weight.fill_(float("nan"))

    with pytest.raises(FloatingPointError, match="step 10"):
        fit(model, images, labels, cfg, progress=False, callback=poison)


@pytest.mark.parametrize("stochastic, var, ok", [(True, 1.0, True), (True, 0.0, False), (False, 0.0, True),
                                                 (False, 0.5, False), (None, 0.0, True)])
def test_declared_stochastic_is_verified_against_the_variances(stochastic, var, ok):
    mean = torch.zeros(3, 1, 2)
    make = lambda: Embedding(mean, torch.full_like(mean, var), torch.ones(3, 1), stochastic=stochastic)  # noqa: E731
    if ok:
        emb = make()
        assert emb.is_point == (var == 0)
        assert emb[1:].stochastic == stochastic and Embedding.cat([emb, emb]).stochastic == stochastic
    else:
        with pytest.raises(InputError, match="stochastic"):
            make()


def test_point_and_hib_models_declare_their_kind():
    x = torch.rand(4, 1, 28, 56)
    assert build_model("point", dim=2, height=28, width=56)(x).stochastic is False
    assert build_model("hib", dim=2, components=2, height=28, width=56)(x).stochastic is True


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_training_matches_cpu_training_closely():
    images, labels = images_and_labels()
    cfg = TrainConfig(steps=20, classes_per_batch=6, per_class=4, k=4, log_every=10)
    runs = {}
    for device in ("cpu", "cuda"):
        torch.manual_seed(0)
        model = build_model("hib", dim=2, height=28, width=56)
        hist = fit(model, images, labels, cfg, device=device, progress=False, augment=random_occlusion(0.2))
        runs[device] = (model.cpu(), hist.rows[-1]["loss"])
    assert runs["cuda"][1] == pytest.approx(runs["cpu"][1], rel=0.05)
