"""Tests of hedgekit.training.loop: the shared loop leaves every trainer's numbers as they were,
and what `Loop` does around a trainer's step (seeding, device, refusal under torchrun, hand-back).

The oracle of the first test is the trainers before the refactor. Each run below (5 steps on small synthetic
digits, CPU, one torch thread) was executed at commit 278d30b, before the refactor, and its logged losses
(``float.hex``) and a SHA-256 of its final weights (model and SPE head) are written in `RECORDED`. With the
shared loop (`hedgekit.training.loop.Loop`) doing the set-up of `fit`, `fit_episodic`, `fit_triplets` and
`fit_upstream`, each run reproduces them bit for bit: nothing was re-recorded. (`fit_triplets` used to drop the
generator `seed_everything` returns; its losses draw no random numbers, so the loop's generator changes nothing.)
"""
import hashlib

import pytest
import torch

from hedgekit.data import random_occlusion
from hedgekit.errors import InputError
from hedgekit.methods import SPE
from hedgekit.methods.upstream import build_method
from hedgekit.nets import build_model
from hedgekit.nets.backbones import LeNetBody
from hedgekit.training import distributed
from hedgekit.training.episodic import EpisodicConfig, fit_episodic
from hedgekit.training.fit import TrainConfig, fit
from hedgekit.training.loop import Loop
from hedgekit.training.triplets import TripletConfig, fit_triplets
from hedgekit.training.upstream import UpstreamConfig, UpstreamModel, fit_upstream


def _digits():
    """48 two-digit images of 6 classes (8 each): a fixed pattern per class plus noise."""
    g = torch.Generator().manual_seed(0)
    y = torch.arange(6).repeat_interleave(8)
    protos = (torch.rand(6, 28, 56, generator=g) > 0.8).float()
    return (0.3 + 0.6 * protos[y] + 0.2 * torch.randn(len(y), 28, 56, generator=g)).clamp(0, 1), y


def _state_hash(*modules) -> str:
    h = hashlib.sha256()
    for module in modules:
        for key, value in module.state_dict().items():
            h.update(key.encode())
            h.update(value.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def _run(name: str) -> tuple[list[str], str]:
    """The logged losses (hex) and the weights' hash of one 5-step run."""
    x, y = _digits()
    torch.manual_seed(3)
    if name.startswith("fit"):
        kind, extra = name.split("-")[1], {}
        if name.endswith("two_stream"):
            extra = dict(pairing="two_stream", pairs_per_batch=8)
        elif name.endswith("hard"):
            extra = dict(loss="hard")
        model = build_model(kind, n_digits=2, dim=3)
        hist = fit(model, x, y, TrainConfig(steps=5, classes_per_batch=4, per_class=3, k=4, log_every=1, **extra),
                   seed=5, progress=False, augment=random_occlusion(0.5))
        modules = (model,)
    elif name.startswith("episodic"):
        spe = name.endswith("spe")
        model = build_model("hib" if spe else "point", n_digits=2, dim=3)
        cfg = EpisodicConfig(steps=5, n_classes=3, k_support=2, query_per_class=2, log_every=1)
        head = SPE.for_episodes(3, 2, dim=3) if spe else None  # None: a Prototypical Network
        hist = fit_episodic(model, head, x, y, cfg, seed=5, progress=False, augment=random_occlusion(0.5))
        modules = (model, head) if spe else (model,)
    elif name.startswith("upstream"):
        method = name.split("-")[1]
        torch.manual_seed(3)
        model = UpstreamModel(LeNetBody(features=20), build_method(method, 20, 6, embed_dim=3))
        cfg = UpstreamConfig(steps=5, classes_per_batch=3, per_class=2, log_every=1)
        hist = fit_upstream(model, x[:, None], y, cfg, seed=5, augment=random_occlusion(0.5), progress=False)
        modules = (model,)
    else:
        model = build_model("het", n_digits=2, dim=3)
        hist = fit_triplets(model, x, y, TripletConfig(steps=5, P=4, K=3, log_every=1, occlusion_p=0.5), seed=5,
                            progress=False)
        modules = (model,)
    return [float(r["loss"]).hex() for r in hist.rows], _state_hash(*modules)


RUNS = ["fit-point", "fit-hib", "fit-hib-two_stream", "fit-point-hard", "episodic-pn", "episodic-spe", "triplets-het",
        "upstream-sngp", "upstream-infonce_2v"]

# Recorded from commit 278d30b (the trainers before hedgekit.training.loop) with this file's ``__main__``, once on
# each processor the kit has run on: float32 sums come out in another order on another processor's kernels
# (CPU training repeats bit for bit on one processor, not across them). The AMD EPYC (family 26, AVX512-BF16, no
# AMX) first; then an Intel Xeon with AMX, where commit 278d30b's trainers gave the second entry of every run
# and today's loop gives the same.
RECORDED = {  # run: ((hash of the final weights, logged losses as float.hex), one per processor)
    "fit-point": (
        ("fc2409e0199d5499", ["0x1.00a6700000000p+0", "0x1.9212b40000000p-1", "0x1.ab90a80000000p-1",
                              "0x1.09443a0000000p+0", "0x1.7bf7e80000000p-1"]),
        ("e66b7cec6e1dd756", ["0x1.00a6700000000p+0", "0x1.92103c0000000p-1", "0x1.aafad80000000p-1",
                              "0x1.0c608c0000000p+0", "0x1.7f5bcc0000000p-1"]),
    ),
    "fit-hib": (
        ("9e147e1f72fc97f1", ["0x1.108c1a0000000p+0", "0x1.f4beaa0000000p-1", "0x1.055f4e0000000p+0",
                              "0x1.e045fc0000000p-1", "0x1.e4c0640000000p-1"]),
        ("94a19223b5879d19", ["0x1.108c1a0000000p+0", "0x1.f4beaa0000000p-1", "0x1.055f500000000p+0",
                              "0x1.e045f80000000p-1", "0x1.e4c0680000000p-1"]),
    ),
    "fit-hib-two_stream": (
        ("02f6ae5e4d803cd3", ["0x1.3cde6a0000000p+0", "0x1.3bc56a0000000p+0", "0x1.43cf760000000p+0",
                              "0x1.df35020000000p-1", "0x1.7480320000000p-1"]),
        ("3881a81cb0dfeeb7", ["0x1.3cde6a0000000p+0", "0x1.3bc56a0000000p+0", "0x1.43cf7c0000000p+0",
                              "0x1.df35000000000p-1", "0x1.74802e0000000p-1"]),
    ),
    "fit-point-hard": (
        ("f53480746009c683", ["0x1.72be6a0000000p-2", "0x1.8652860000000p-2", "0x1.1715ca0000000p-2",
                              "0x1.b204d00000000p-2", "0x1.e58c880000000p-3"]),
        ("fe1a7d234aa5adc6", ["0x1.72be6a0000000p-2", "0x1.867f9c0000000p-2", "0x1.16fd2e0000000p-2",
                              "0x1.b06e100000000p-2", "0x1.e6ced80000000p-3"]),
    ),
    "episodic-pn": (
        ("4322603a9b636fdc", ["0x1.1860d40000000p+0", "0x1.0c471e0000000p+0", "0x1.0f79ba0000000p+0",
                              "0x1.e7fa760000000p-1", "0x1.f7ad700000000p-1"]),
        ("8ec9727cc7295e28", ["0x1.1860d40000000p+0", "0x1.0c46fc0000000p+0", "0x1.0f7a0e0000000p+0",
                              "0x1.e7f2220000000p-1", "0x1.f79d460000000p-1"]),
    ),
    "episodic-spe": (
        ("aae81a8156e2d94a", ["0x1.1db83e0000000p+0", "0x1.30a9ae0000000p+0", "0x1.22ff2c0000000p+0",
                              "0x1.08b1ea0000000p+0", "0x1.c31f700000000p-1"]),
        ("7b5674911b166c75", ["0x1.1db8400000000p+0", "0x1.30a9ae0000000p+0", "0x1.22ff2c0000000p+0",
                              "0x1.08b1e80000000p+0", "0x1.c31f700000000p-1"]),
    ),
    "triplets-het": (
        ("267a3668ee579d5f", ["0x1.3226260000000p+0", "0x1.1d09260000000p+0", "0x1.1bab8a0000000p+0",
                              "0x1.13c9960000000p+0", "0x1.1fdf9e0000000p+0"]),
        ("90442e73170d8663", ["0x1.3226260000000p+0", "0x1.1d09260000000p+0", "0x1.1baad60000000p+0",
                              "0x1.137e3a0000000p+0", "0x1.1ca1760000000p+0"]),
    ),
    "upstream-sngp": (
        ("e6bf3b87ffd0400a", ["0x1.c8ef120000000p+0", "0x1.d5387a0000000p+0", "0x1.d3bca80000000p+0",
                              "0x1.c613020000000p+0", "0x1.ca1c0e0000000p+0"]),
        ("3ddc73823a60549f", ["0x1.c8ef120000000p+0", "0x1.d5387a0000000p+0", "0x1.d3bca60000000p+0",
                              "0x1.c613020000000p+0", "0x1.ca1c0e0000000p+0"]),
    ),
    "upstream-infonce_2v": (
        ("63ae7efdbbfae8d6", ["0x1.46e79e0000000p+4", "0x1.7a445e0000000p+4", "0x1.4305ce0000000p+4",
                              "0x1.47f1f20000000p+4", "0x1.479a2e0000000p+4"]),
        ("64c5ae20e44fa59e", ["0x1.46e79e0000000p+4", "0x1.7a44600000000p+4", "0x1.4305d00000000p+4",
                              "0x1.47f1f20000000p+4", "0x1.479a2e0000000p+4"]),
    ),
}


@pytest.fixture
def one_thread():
    """One torch thread, as recorded: other thread counts split reductions differently."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("run", RUNS)
def test_each_trainer_reproduces_its_losses_and_weights_from_before_the_shared_loop(run, one_thread):
    losses, weights = _run(run)
    assert (weights, losses) in RECORDED[run], (
        f"{run}: {(weights, losses)} is none of the recorded values; on a processor not recorded yet, run "
        "commit 278d30b's trainers with this file's __main__ and add its entry")



# ------------------------------------------------------------------ Loop around a step
def test_loop_seeds_trains_in_channels_last_and_hands_back_in_eval_mode_and_the_default_layout():
    model, head = build_model("point", n_digits=1, dim=2), torch.nn.Linear(2, 1)
    torch.manual_seed(11)
    expected_noise = torch.randn(3, generator=torch.Generator().manual_seed(4))
    loop = Loop(model, 4, "cpu", heads=(head,))
    assert torch.equal(torch.randn(3, generator=loop.noise), expected_noise) and loop.noise is loop.generator
    assert torch.equal(torch.randn(3), torch.randn(3, generator=torch.Generator().manual_seed(4)))  # global seed 4
    assert model.training and head.training and loop.memory_format == torch.channels_last
    assert model.body.conv[0].weight.is_contiguous(memory_format=torch.channels_last)
    x = torch.rand(4, 1, 28, 28).contiguous(memory_format=torch.channels_last)
    seen = []

    def step_loss(step):
        seen.append(step)
        return (loop.embed(x).mean ** 2).sum() + head(torch.ones(2)).sum() ** 2, {"extra": torch.tensor(2.0)}

    before = head.weight.detach().clone()
    hist = loop.run(TrainConfig(steps=5, log_every=2, warmup=0.0), step_loss, lambda st: {"x": st["extra"]}, "t",
                    progress=False)
    assert seen == [0, 1, 2, 3, 4] and [r["step"] for r in hist.rows] == [0, 2, 4]
    assert [r["x"] for r in hist.rows] == [2.0, 2.0, 2.0]
    # the rate after each logged step: lr x lr_factor(step + 1, 5, 0) = 3e-3 x (1 + cos(pi step / 4)) / 2
    assert [r["lr"] for r in hist.rows] == pytest.approx([3e-3, 1.5e-3, 0.0])
    assert not torch.equal(head.weight, before)  # the heads' parameters are trained with the model's
    assert not model.training and not head.training
    assert all(p.is_contiguous() and p.device.type == "cpu" for p in model.parameters())


def test_loop_keeps_the_default_layout_when_asked():
    model = build_model("point", n_digits=1, dim=2)
    assert Loop(model, 0, "cpu", channels_last=False).memory_format == torch.contiguous_format
    assert model.body.conv[0].weight.is_contiguous()


def test_a_single_process_trainer_refuses_a_process_group_saying_why(monkeypatch):
    monkeypatch.setattr(distributed, "context", lambda: distributed.Context(0, 2))
    with pytest.raises(InputError, match=r"one process only \(its loss is per process\); run it without torchrun"):
        Loop(build_model("point", n_digits=1), 0, "cpu", single_process="its loss is per process")


if __name__ == "__main__":  # prints RECORDED's entries afresh: python tests/training/test_loop.py
    torch.set_num_threads(1)
    for run in RUNS:
        losses, weights = _run(run)
        print(f'    "{run}": ("{weights}", {losses}),'.replace("'", '"'))
