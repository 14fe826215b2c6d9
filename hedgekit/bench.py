"""Training throughput beside its floor and its ceiling (`python -m hedgekit bench`).

Three numbers for the same network and batch, measured in the same run so that a busy
machine slows all of them alike:

* hedgekit's training step: `hedgekit.training.fit.fit` with everything it does per step
  (class-balanced sampling, fresh occlusion, output checks, logging, the schedule);
* a plain PyTorch loop: the same LeNet layers, the same all-pairs loss written in a few
  lines, on a batch already in memory as floats (`plain_step`): the floor anyone would write;
* the FLOP ceiling: the machine's float32 matmul rate (`matmul_gflops`) divided by the
  network's training FLOPs per image (`train_flops_per_image`, forward + backward of the
  convolutions and linear layers; the loss and the optimiser are not counted).

Ratios hedgekit / plain and hedgekit / ceiling say how much of the hardware the kit uses;
medians over interleaved repeats damp the noise of a shared machine (docs/speed.md).
`layer_times` says where a step's time goes: every layer of the network timed alone, forward and
backward, with its FLOPs and the rate it reaches; their sum is the floor of any loop built from
these PyTorch layers.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

from hedgekit.errors import InputError
from hedgekit.methods.contrastive import TINY
from hedgekit.nets import EmbeddingNet, build_model
from hedgekit.nets.heads import VAR_FLOOR


def matmul_gflops(n: int = 512, seconds: float = 0.3) -> float:
    """float32 GFLOP/s of ``n x n`` matrix products (2 n^3 FLOPs each) on the current threads."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)  # warm-up
    count, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds or count < 3:
        torch.mm(a, b)
        count += 1
    return 2 * n**3 * count / elapsed / 1e9


def train_flops_per_image(model: EmbeddingNet, batch: int = 32) -> float:
    """FLOPs of one forward + backward pass of ``model`` per image (convolutions and matmuls)."""
    x = torch.rand(batch, *model.input_shape)
    with FlopCounterMode(display=False) as counter:
        emb = model(x)
        (emb.mean.sum() + emb.var.sum()).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / batch


def _plain_forward(model: EmbeddingNet, x: Tensor) -> tuple[Tensor, Tensor | None]:
    """(mean, var) of a point (var None) or MoG-1 model straight from its layers, no `Embedding`."""
    h = model.body(x)
    if model.config["kind"] == "point":
        return model.head.linear(h), None
    out = model.head.branches[0](h)
    d = model.config["dim"]
    return out[:, :d], F.softplus(out[:, d:]) + VAR_FLOOR


def plain_step(model: EmbeddingNet, images: Tensor, labels: Tensor, batch: int, k: int, steps: int,
               seed: int = 0) -> float:
    """Seconds per step of a minimal loop: random batch of float images, the all-pairs soft
    contrastive / HIB loss (eq. 3 / eq. 5 + KL) in plain torch, Adam. Point and MoG-1 models."""
    if model.config["kind"] not in ("point", "hib") or model.config["components"] != 1:
        raise InputError("the plain loop covers point and MoG-1 models")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    a, b = model.match.a_raw, model.match.b
    iu = torch.triu_indices(batch, batch, 1)
    t0 = time.perf_counter()
    for _ in range(steps):
        idx = torch.randint(len(images), (batch,), generator=gen)
        x, y = images[idx], labels[idx]
        mean, var = _plain_forward(model, x)
        if var is None:
            z, kk = mean, 1
        else:
            z, kk = (mean.unsqueeze(1) + var.sqrt().unsqueeze(1) * torch.randn(batch, k, mean.shape[1])).reshape(
                batch * k, -1), k
        logit = (-F.softplus(a) * torch.cdist(z, z) + b).reshape(batch, kk, batch, kk)
        p = torch.sigmoid(logit).mean((1, 3))[iu[0], iu[1]].clamp_min(TINY).log()
        q = torch.sigmoid(-logit).mean((1, 3))[iu[0], iu[1]].clamp_min(TINY).log()
        same = y[iu[0]] == y[iu[1]]
        loss = -0.5 * (p[same].mean() + q[~same].mean())
        if var is not None:
            loss = loss + 2e-4 * 0.5 * (var + mean**2 - 1 - var.log()).sum(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return (time.perf_counter() - t0) / steps


def layer_times(model: EmbeddingNet, batch: int = 256, repeats: int = 5, precision: str = "float32") -> list[dict]:
    """Each layer of ``model`` (body then head, in order) timed alone: forward + backward of a batch.

    Every layer gets the input it sees in a training step (recorded from one forward pass of random
    images, in the training memory format of `hedgekit.training.fit.memory_format`, channels_last on
    CPU); its input needs a gradient except for the first layer's. Returns one dict per layer:
    ``name`` (layer type -> output shape per image), ``seconds`` (median of ``repeats`` after a warm-up), ``flops`` (forward + backward,
    `torch.utils.flop_counter`; 0 for pooling, ReLU and reshapes) and ``gflops`` (their rate).
    With ``precision="bfloat16"`` the body's layers run as `fit` runs them then (`body_autocast`: bfloat16
    activations), the head in float32.
    """
    from hedgekit.training.fit import body_autocast, memory_format

    batch, repeats = int(batch), int(repeats)
    if batch < 1 or repeats < 1:
        raise InputError(f"batch and repeats must be >= 1; got {batch} and {repeats}")
    model = model.to(memory_format=memory_format(torch.device("cpu"))).train()
    layers = [m for part in (model.body, model.head) for m in part.modules()
              if not list(m.children()) and not isinstance(m, nn.Identity)]
    x = torch.rand(batch, *model.input_shape).to(memory_format=memory_format(torch.device("cpu")))
    in_body = {id(m) for m in model.body.modules()}
    rows = []
    for i, layer in enumerate(layers):
        cast = body_autocast(precision if id(layer) in in_body else "float32", torch.device("cpu"))
        inp = (x if id(layer) in in_body else x.float()).detach().requires_grad_(i > 0)
        with torch.no_grad(), cast:
            x = layer(inp)

        def step():
            with cast:
                out = layer(inp)
            out.backward(torch.ones_like(out))

        with FlopCounterMode(display=False) as counter:
            step()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        seconds = statistics.median(times)
        flops = counter.get_total_flops()
        rows.append({"name": f"{type(layer).__name__} -> {tuple(x.shape[1:])}", "seconds": seconds, "flops": flops, "gflops": flops / seconds / 1e9})
    model.zero_grad(set_to_none=True)
    model.to(memory_format=torch.contiguous_format)
    return rows


@dataclass
class Throughput:
    """Medians over repeats, in images per second, and the ratios the bench prints."""

    kind: str
    k: int
    precision: str
    hedgekit: float
    plain: float
    ceiling: float
    gflops: float
    hedgekit_all: list
    plain_all: list

    @property
    def vs_plain(self) -> float:
        return self.hedgekit / self.plain

    @property
    def vs_ceiling(self) -> float:
        return self.hedgekit / self.ceiling


def compare(kind: str, k: int, images: Tensor, labels: Tensor, steps: int = 30, repeats: int = 3,
            classes_per_batch: int = 32, per_class: int = 8, precision: str = "float32") -> Throughput:
    """hedgekit's `fit`, `plain_step` and `matmul_gflops` on the same network and batch, interleaved
    ``repeats`` times (a warm-up of both loops comes first). ``precision`` is `fit`'s
    (`hedgekit.training.fit.TrainConfig.precision`); the plain loop and the ceiling stay float32.

    ``images``: uint8 (N, 28, 28N) training digits; ``labels`` (N,). Returns medians: images per
    second of both loops, the machine's GFLOP/s and the FLOP ceiling in images per second.
    """
    from hedgekit.data import random_occlusion
    from hedgekit.training.fit import TrainConfig, fit

    batch = classes_per_batch * per_class
    n_digits = images.shape[-1] // 28
    floats = images.unsqueeze(1).float() / 255.0
    cfg = TrainConfig(steps=steps, classes_per_batch=classes_per_batch, per_class=per_class, k=k,
                      log_every=10**9, precision=precision)
    ours, plain, rates = [], [], []
    for r in range(repeats + 1):  # repeat 0 is the warm-up
        model = build_model(kind, n_digits, 2)
        hist = fit(model, images, labels, cfg, seed=r, progress=False, augment=random_occlusion(0.2))
        s_plain = plain_step(build_model(kind, n_digits, 2).train(), floats, labels, batch, k, steps, seed=r)
        if r:
            ours.append(batch * steps / hist.seconds)
            plain.append(batch / s_plain)
            rates.append(matmul_gflops())
    gflops = statistics.median(rates)
    ceiling = gflops * 1e9 / train_flops_per_image(build_model(kind, n_digits, 2))
    return Throughput(kind, k, precision, statistics.median(ours), statistics.median(plain), ceiling, gflops, ours, plain)
