"""Training embedding models on pairs: point (soft or hard contrastive) and HIB (Oh et al. 2019).

hedgekit's recipe (the paper trained 500k steps x 128 pairs on a GPU; `hedgekit.zoo.PRESETS`
fits minutes on two CPU cores; docs/recipes.md says how it was found):

* class-balanced batches of P classes x Q images and *all* B(B-1)/2 pairs in the
  batch (`hedgekit.methods.hib.hib_batch_loss`) instead of B/2 pairs per batch;
* fresh occlusion of each training digit with probability 0.2 at every step
  (HIB App. A's corruption process, re-sampled instead of frozen once);
* Adam with a linear warm-up and a cosine decay of the learning rate (`lr_factor`).

The paper's two-stream pairing is available too (``pairing="two_stream"``).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from hedgekit.checks import check_batch, check_fields, check_training_set, deferred_value_checks, resolve_device
from hedgekit.embedding import Embedding
from hedgekit.errors import InputError
from hedgekit.hardware import launch_bound
from hedgekit.data.samplers import ClassBalancedSampler, two_stream_pairs
from hedgekit.methods import contrastive_from_distance, hard_contrastive_all_pairs, hib_batch_loss, hib_pair_loss
from hedgekit.nets import EmbeddingNet
from hedgekit.nets.match import SoftMatch
from hedgekit.training import distributed
from hedgekit.training.batches import DeviceImages


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


# The largest KL weight (HIB eq. 8) a config takes. The paper uses 1e-4 and App. E sweeps 1e-6..1e-2; at 1e6 the
# match term (order 1) is still above float32's resolution (1.2e-7) of beta x KL, beyond it the KL term drowns it
# and, at beta > 3.4e38 (float32's largest number), is infinite from the first step (issue 45 item 8).
MAX_BETA = 1e6


@dataclass
class TrainConfig:
    """Hyper-parameters of `fit`. Presets live in `hedgekit.zoo.PRESETS`."""

    steps: int = 3000
    classes_per_batch: int = 32  # P
    per_class: int = 8  # Q: B = P * Q images per step
    lr: float = 3e-3
    weight_decay: float = 0.0
    warmup: float = 0.05  # fraction of steps with linear warm-up
    k: int = 8  # Monte-Carlo samples per input (HIB eq. 5, K = 8)
    beta: float = 1e-4  # KL weight (HIB eq. 8)
    loss: str = "soft"  # "soft": soft contrastive (point, eq. 3) / HIB (eq. 5, 8); "hard": contrastive (eq. 1)
    margin: float = 1.0  # M of eq. 1, for loss="hard"
    pairing: str = "all"  # "all" pairs in a P x Q batch, or the paper's "two_stream"
    pairs_per_batch: int = 128  # for pairing="two_stream" (HIB sec. 4.1: batch 128)
    occlusion_p: float = 0.2  # per-digit occlusion probability at every step (HIB App. A)
    log_every: int = 50
    # "bfloat16": the network's body (convolutions, first linear layer) under bfloat16 autocast, the head, loss
    # and weights in float32 (`body_autocast`); "float32": everything in float32, as the shipped models were trained
    precision: str = "float32"

    def __post_init__(self) -> None:
        check_fields(self, counts=dict(steps=1, classes_per_batch=1, per_class=2, k=1, pairs_per_batch=1, log_every=1),
                     positive=("lr", "margin"), non_negative=("weight_decay", "beta"), fractions=("warmup", "occlusion_p"),
                     choices=dict(loss=("soft", "hard"), pairing=("all", "two_stream"), precision=PRECISIONS))
        check_batch(self, self.classes_per_batch * self.per_class, "classes_per_batch x per_class")
        check_batch(self, 2 * self.pairs_per_batch, "2 x pairs_per_batch")
        if self.beta > MAX_BETA:
            raise InputError(f"TrainConfig.beta, the KL weight of HIB eq. 8, must be <= {MAX_BETA:g}; got "
                             f"{self.beta:g}. The paper uses 1e-4 (App. E: 1e-6..1e-2); a larger weight drowns the "
                             "match term and can overflow the loss")


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


def _step_loss(emb: Embedding, match: SoftMatch, y: Tensor, cfg: TrainConfig, gen, pair_idx=None):
    """Loss and stats of one step on the batch's embeddings. ``pair_idx`` = (i, j, same) for two-stream pairing."""
    if cfg.loss == "hard":
        z = emb.mixture_mean()
        if pair_idx is None:
            return hard_contrastive_all_pairs(z, y, cfg.margin), {}
        i, j, same = pair_idx
        return contrastive_from_distance((z[i] - z[j]).norm(dim=-1), same, cfg.margin).mean(), {}
    if pair_idx is None:
        return hib_batch_loss(emb, y, match, cfg.k, cfg.beta, gen)
    i, j, same = pair_idx
    return hib_pair_loss(emb[i], emb[j], same, match, cfg.k, cfg.beta, gen), {}


def memory_format(device: torch.device) -> torch.memory_format:
    """channels_last (NHWC) for training convolutions on CPU and CUDA, the default layout elsewhere.

    Every trainer (`fit`, `fit_episodic`, `fit_triplets`) trains in it and hands the model back in the
    default layout. On 2 CPU cores a LeNet training step took 1.45x less time in NHWC, and bfloat16
    pays only in NHWC (docs/speed.md); the convolution kernels differ, so results differ from NCHW at
    float rounding.
    """
    return torch.channels_last if device.type in ("cpu", "cuda") else torch.contiguous_format


def optimise(params: list, cfg, step_loss: Callable[[int], tuple[Tensor, dict]],
             log_row: Callable[[dict], dict], desc: str, progress: bool = True,
             callback: Callable[[int, dict], None] | None = None) -> History:
    """The training loop every trainer shares (`fit`, `hedgekit.training.episodic.fit_episodic`).

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


def fit(
    model: EmbeddingNet,
    images: Tensor,
    labels: Tensor,
    cfg: TrainConfig,
    seed: int = 0,
    device: str | torch.device | None = "cpu",
    progress: bool = True,
    augment: Callable[[Tensor, np.random.Generator], Tensor] | None = None,
    callback: Callable[[int, dict], None] | None = None,
) -> History:
    """Train ``model`` in place on images (N, [C,] H, W) in [0, 1] (float or uint8) and labels (N,).

    Args:
        augment: ``augment(batch, rng) -> batch`` applied to every batch on the training device
            before the forward pass: `hedgekit.data.occlusion.random_occlusion` (fresh occlusion) gets
            the batch as stored (uint8 or float), any other function a float batch in [0, 1]
            (`hedgekit.training.batches`).
        callback: called as ``callback(step, row)`` at every log step.

    Under ``torchrun`` (after `hedgekit.training.distributed.init_from_env`) every rank draws the
    same global batch and embeds its share of it; the loss is that of the whole batch (see
    `hedgekit.training.distributed`).

    Returns:
        `History` with loss, nll of positive/negative pairs, a, b, lr and the mean
        predicted variance, one row per ``cfg.log_every`` steps.
    """
    check_training_set(images, labels, model)
    dev = resolve_device(device)
    gen = seed_everything(seed)
    rng = np.random.default_rng(seed)
    fmt = memory_format(dev)
    model.to(dev, memory_format=fmt).train()
    labels_np = labels.cpu().numpy()
    data = DeviceImages(images, dev, fmt)
    labels_dev = labels.to(dev)
    sampler = ClassBalancedSampler(labels_np, cfg.classes_per_batch, cfg.per_class, seed) if cfg.pairing == "all" else None
    dev_gen = gen if dev.type == "cpu" else None
    ctx = distributed.context()
    net = distributed.wrap(model, ctx, find_unused_parameters=cfg.loss == "hard")  # "hard" leaves a, b unused

    def step_loss(step: int):
        if sampler is not None:
            idx, pair_idx = next(sampler), None
        else:
            i, j, same = two_stream_pairs(labels_np, cfg.pairs_per_batch, rng)
            idx, inv = np.unique(np.concatenate([i, j]), return_inverse=True)
            n = len(i)
            pair_idx = (data.indices(inv[:n]), data.indices(inv[n:]),
                        torch.from_numpy(same).to(dev, non_blocking=True))
        idx = data.indices(idx)  # one copy to the device for images and labels
        x, y = data.batch(idx, augment, rng), labels_dev[idx]
        with body_autocast(cfg.precision, dev):
            emb = distributed.embed_share(net, x, ctx)
        return _step_loss(emb, model.match, y, cfg, dev_gen, pair_idx)

    def log_row(stats: dict) -> dict:
        return {"a": model.match.a.item(), "b": model.match.b.item(), **stats}

    hist = optimise(list(model.parameters()), cfg, step_loss, log_row, f"train {model.config.get('kind', '')}",
                    progress, callback)
    model.to(memory_format=torch.contiguous_format).eval()
    return hist


