"""What every trainer shares: seeding, the device and its memory format, distributed wrapping, the optimisation
loop with its logging and divergence checks, and the hand-back of the trained model.

A trainer (`hedgekit.training.fit.fit`, `hedgekit.training.episodic.fit_episodic`,
`hedgekit.training.triplets.fit_triplets`, `hedgekit.training.upstream.fit_upstream`) keeps only how it draws a
batch and computes a loss::

    loop = Loop(model, seed, device)               # seed, move to the device in its layout, wrap for torchrun
    data = DeviceImages(images, loop.device, loop.memory_format)

    def step_loss(step):                           # the trainer's own part
        x = data.batch(next(sampler), augment, rng)
        return loss_of(loop.embed(x)), stats

    return loop.run(cfg, step_loss, log_row, desc, progress, callback)   # `optimise`, then the hand-back

The loop reads ``cfg.steps``, ``lr``, ``weight_decay``, ``warmup`` and ``log_every``; Adam with a linear warm-up
and a cosine decay (`lr_factor`); loss, weights and the model's value checks are read at the log steps only.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from hedgekit.checks import deferred_value_checks, resolve_device
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.hardware import launch_bound
from hedgekit.training import distributed

__all__ = ["PRECISIONS", "History", "Loop", "body_autocast", "lr_factor", "memory_format", "optimise",
           "seed_everything"]

PRECISIONS = ("float32", "bfloat16")


def body_autocast(precision: str, device: torch.device):
    """The context a training forward pass runs in: bfloat16 autocast for ``precision="bfloat16"``, else none.

    Autocast runs convolutions and linear layers in bfloat16 (float32 weights are cast on the fly, gradients
    come back in float32); `hedgekit.nets.EmbeddingNet` turns it off for its head, so means, variances, the
    loss and Adam's state stay float32. It pays on CPUs with native bfloat16 (AVX512-BF16, AMX; GPUs); elsewhere
    bfloat16 is emulated and slower. Speed and results against float32: docs/speed.md.
    """
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {PRECISIONS}; got {precision!r}")
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bfloat16")


def seed_everything(seed: int) -> torch.Generator:
    """Seed torch and numpy's legacy global state; return a dedicated CPU generator."""
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    return torch.Generator().manual_seed(seed)


def lr_factor(step: int, total: int, warmup: float) -> float:
    """Linear warm-up over ``warmup * total`` steps, then cosine decay to 0."""
    w = max(1, int(warmup * total))
    if step < w:
        return (step + 1) / w
    return 0.5 * (1 + math.cos(math.pi * (step - w) / max(1, total - w)))


@dataclass
class History:
    """Per-log-step training record; `rows` is a list of dicts (step, loss, lr, a, b, ...)."""

    rows: list = field(default_factory=list)
    seconds: float = 0.0

    def last(self, key: str):
        return self.rows[-1][key] if self.rows else None


def memory_format(device: torch.device) -> torch.memory_format:
    """channels_last (NHWC) for training convolutions on CPU and CUDA, the default layout elsewhere.

    Every trainer trains in it (`Loop`) and hands the model back in the default layout. On 2 CPU cores a LeNet
    training step took 1.45x less time in NHWC, and bfloat16 pays only in NHWC (docs/speed.md); the convolution
    kernels differ, so results differ from NCHW at float rounding.
    """
    return torch.channels_last if device.type in ("cpu", "cuda") else torch.contiguous_format


def optimise(params: list, cfg, step_loss: Callable[[int], tuple[Tensor, dict]],
             log_row: Callable[[dict], dict], desc: str, progress: bool = True,
             callback: Callable[[int, dict], None] | None = None) -> History:
    """The optimisation loop every trainer runs (through `Loop.run`).

    Adam on ``params`` with the warm-up + cosine schedule of `lr_factor` (``cfg.steps``,
    ``cfg.lr``, ``cfg.weight_decay``, ``cfg.warmup``); ``step_loss(step) -> (loss, stats)``
    builds one step's loss; every ``cfg.log_every`` steps (and at the last) a history row
    ``{step, loss, lr, **log_row(stats)}`` is recorded and passed to ``callback(step, row)``.
    Under torch.distributed (`hedgekit.training.distributed`) rows are averaged over the ranks
    and only rank 0 shows the progress bar and calls ``callback``.
    A non-finite loss or weight, or an `InputError` raised by the model's output checks after
    step 0, stops training with a `FloatingPointError` naming the step. Loss, weights and every check of tensor
    values (`hedgekit.checks.deferred_value_checks`) run at the log steps only (step 0, every
    ``cfg.log_every``-th and the last), because each check makes the host wait for the device; a divergence is
    reported at the first log step that sees it. ``stats`` may hold 0-d tensors: they are read (as floats) only
    at the log steps, for the same reason.
    """
    from tqdm.auto import tqdm

    # foreach on the CPU: one kernel per operation for all tensors (bit-identical to the loop; docs/speed.md);
    # fused where a step is launch-bound (a GPU): the whole update in one kernel (`hedgekit.hardware.launch_bound`)
    dev = params[0].device
    fused = launch_bound(dev) and dev.type != "mps"
    opt = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=fused or None,
                           foreach=None if fused or dev.type == "mps" else True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg.steps, cfg.warmup))
    ctx = distributed.context()
    hist, t0 = History(), time.perf_counter()
    bar = tqdm(range(cfg.steps), desc=desc, disable=not (progress and ctx.is_main), leave=False)
    for step in bar:
        log = step % cfg.log_every == 0 or step == cfg.steps - 1
        try:
            with deferred_value_checks(not log):
                loss, stats = step_loss(step)
        except InputError as exc:  # the inputs were checked by the caller: the model blew up
            if step == 0:
                raise
            raise FloatingPointError(f"training diverged at step {step} ({exc}); lower the learning rate") from exc
        if log and not torch.isfinite(loss):
            raise FloatingPointError(f"training diverged at step {step} (loss {loss.item()}); lower the learning rate")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if log and not bool(torch.stack([torch.isfinite(p).all() for p in params]).all()):
            raise FloatingPointError(f"training diverged at step {step} (non-finite weights); lower the learning rate")
        if log:
            row = {"step": step, "loss": loss, "lr": sched.get_last_lr()[0], **log_row(stats)}
            row = ctx.mean({k: v.item() if isinstance(v, Tensor) else v for k, v in row.items()})
            hist.rows.append(row)
            bar.set_postfix({k: f"{row[k]:.3f}" for k in ("loss", "acc") if k in row})
            if callback is not None and ctx.is_main:
                callback(step, row)
    hist.seconds = time.perf_counter() - t0
    return hist


class Loop:
    """One training run's shared set-up (at construction) and its optimisation and hand-back (`run`).

    Construction seeds torch and numpy (`seed_everything`), moves ``model`` to ``device`` in the training layout
    (`memory_format`, or the default layout with ``channels_last=False``) and ``heads`` (modules trained beside
    it, e.g. SPE's sigma_eps) to the device, puts both in training mode, and, under ``torchrun``
    (`hedgekit.training.distributed`), wraps ``model`` in `DistributedDataParallel` and gives every head rank
    0's weights. A trainer whose loss cannot be split over processes passes ``single_process``, the reason, and
    is refused under torchrun with an `InputError` saying it (rather than each rank training alone).

    Attributes:
        device: the resolved training device.
        memory_format: the layout the model trains in; `hedgekit.training.batches.DeviceImages` takes it.
        generator: the CPU generator `seed_everything` returned.
        noise: the generator for Monte-Carlo noise drawn on the device: ``generator`` on the CPU, None (the
            device's default generator, seeded by `seed_everything`) elsewhere.
        ctx: this process's `distributed.Context`.
    """

    def __init__(self, model: nn.Module, seed: int, device: str | torch.device | None,
                 heads: Sequence[nn.Module] = (), find_unused_parameters: bool = False,
                 channels_last: bool = True, single_process: str | None = None):
        self.ctx = distributed.context()
        if single_process is not None and self.ctx.active:
            raise InputError(f"this trainer runs in one process only ({single_process}); run it without torchrun")
        self.device = resolve_device(device)
        self.generator = seed_everything(seed)
        self.noise = self.generator if self.device.type == "cpu" else None
        self.memory_format = memory_format(self.device) if channels_last else torch.contiguous_format
        self.model, self.heads = model, tuple(heads)
        model.to(self.device, memory_format=self.memory_format).train()
        for head in self.heads:
            head.to(self.device).train()
            distributed.broadcast(head, self.ctx)
        self.net = distributed.wrap(model, self.ctx, find_unused_parameters=find_unused_parameters)

    def embed(self, x: Tensor) -> Embedding:
        """The model's embedding of the whole batch ``x``; under torchrun this rank embeds its share and the
        shares are gathered (`distributed.embed_share`)."""
        return distributed.embed_share(self.net, x, self.ctx)

    def run(self, cfg, step_loss: Callable[[int], tuple[Tensor, dict]], log_row: Callable[[dict], dict],
            desc: str, progress: bool = True, callback: Callable[[int, dict], None] | None = None) -> History:
        """`optimise` the model's and the heads' parameters, then hand them back: on the device they trained on,
        the model in the default (contiguous) layout, both in eval mode. Returns the `History`."""
        params = [p for module in (self.model, *self.heads) for p in module.parameters()]
        hist = optimise(params, cfg, step_loss, log_row, desc, progress, callback)
        self.model.to(memory_format=torch.contiguous_format).eval()
        for head in self.heads:
            head.eval()
        return hist
