"""`fit`'s pair training with the whole step captured once and replayed as one CUDA graph.

On a GPU a LeNet step at batch 256 costs its ~190 kernel launches (`hedgekit.opcount`), not its arithmetic. A CUDA
graph (`torch.cuda.CUDAGraph`) records the step once, gather, occlusion, forward, loss, backward and Adam, and
replays it with one launch. That needs a step whose shapes and memory never change and that never waits for the
host, so `fit_captured` keeps every input of the step in a fixed buffer:

* the batch's indices and occlusion boxes are drawn on the host, exactly as `hedgekit.training.fit.fit` draws them
  (`ClassBalancedSampler`, `hedgekit.data.occlusion.sample_digit_boxes` from a numpy generator seeded with
  ``seed``), and copied into device buffers before each replay;
* the gather and the box mask run inside the graph (`hedgekit.data.occlusion.box_mask`);
* the learning rate is a device tensor that the schedule (`lr_factor`) refills before each replay, and Adam is
  fused and capturable (its step counter on the device);
* the Monte-Carlo noise comes from the device's generator, whose offset a captured graph advances at each replay.

The first `WARMUP` steps run eagerly (on a side stream, as CUDA requires before a capture), then step `WARMUP` is
captured and every later step is a replay. Loss, weights and the model's value checks are read at the log steps
only, as `optimise` does. Without CUDA (``capture=False``) the same buffers and step run eagerly: that is the path
the CPU tests compare with `fit` (tests/training/test_captured.py). Point and HIB models, the soft loss on all
pairs, float32.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from hedgekit.checks import check_training_set, deferred_value_checks, resolve_device
from hedgekit.data.occlusion import RandomOcclusion, box_mask, sample_digit_boxes
from hedgekit.data.samplers import ClassBalancedSampler
from hedgekit.errors import InputError
from hedgekit.methods import hib_batch_loss
from hedgekit.nets import EmbeddingNet
from hedgekit.training import distributed
from hedgekit.training.batches import DeviceImages
from hedgekit.training.fit import TrainConfig, pair_loss, soft_pair_loss
from hedgekit.training.loop import History, lr_factor, memory_format, seed_everything

WARMUP = 3  # eager steps before the capture (cuDNN and Adam's state are set up in them)


def _check(cfg: TrainConfig, augment) -> None:
    if cfg.loss != "soft" or cfg.pairing != "all" or cfg.precision != "float32":
        raise InputError("fit_captured takes the soft loss on all pairs in float32 (TrainConfig's defaults); got "
                         f"loss={cfg.loss!r}, pairing={cfg.pairing!r}, precision={cfg.precision!r}")
    if augment is not None and not isinstance(augment, RandomOcclusion):
        raise InputError("fit_captured draws only HIB App. A's occlusion (hedgekit.data.random_occlusion) inside "
                         f"the graph; got augment={augment!r}")


def capturable(cfg: TrainConfig, device: str | torch.device, augment, loss=None) -> bool:
    """Whether `fit_captured` can train ``cfg`` with `fit`'s step loss ``loss`` on ``device``: a CUDA device, one
    process (not torchrun), the soft loss (`soft_pair_loss`, which the captured step computes; ``loss`` None or
    `pair_loss` picks it for ``cfg.loss`` "soft") on all pairs in float32, HIB App. A's occlusion or none."""
    return (torch.device(device).type == "cuda" and not distributed.context().active and cfg.loss == "soft"
            and loss in (None, pair_loss, soft_pair_loss)
            and cfg.pairing == "all" and cfg.precision == "float32"
            and (augment is None or isinstance(augment, RandomOcclusion)))


def fit_captured(model: EmbeddingNet, images: Tensor, labels: Tensor, cfg: TrainConfig, seed: int = 0,
                 device: str | torch.device | None = "cuda", augment: RandomOcclusion | None = None,
                 capture: bool | None = None, progress: bool = True,
                 callback: Callable[[int, dict], None] | None = None) -> History:
    """Train ``model`` in place as `hedgekit.training.fit.fit` does (same batches, occlusions and schedule), with
    every step from the `WARMUP`-th on replayed from one CUDA graph where ``capture`` (default: on CUDA).
    Returns a `History` with step, loss, lr, a, b, nll_pos and nll_neg at the log steps, each also passed to
    ``callback(step, row)``; ``progress`` shows a progress bar."""
    from tqdm.auto import tqdm

    _check(cfg, augment)
    check_training_set(images, labels, model)
    dev = resolve_device(device)
    capture = dev.type == "cuda" if capture is None else bool(capture)
    if capture and dev.type != "cuda":
        raise InputError(f"a CUDA graph needs a CUDA device; got {dev} (pass capture=False to run the step eagerly)")
    gen = seed_everything(seed)
    rng = np.random.default_rng(seed)
    fmt = memory_format(dev)
    model.to(dev, memory_format=fmt).train()
    data, labels_dev = DeviceImages(images, dev, fmt), labels.to(dev)
    sampler = ClassBalancedSampler(labels.cpu().numpy(), cfg.classes_per_batch, cfg.per_class, seed)
    batch, n_digits = cfg.classes_per_batch * cfg.per_class, data.images.shape[-1] // 28
    idx_buf = torch.zeros(batch, dtype=torch.long, device=dev)
    box_buf = torch.zeros(batch, n_digits, 4, dtype=torch.long, device=dev)
    lr_buf = torch.tensor(float(cfg.lr), device=dev)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=lr_buf, weight_decay=cfg.weight_decay, fused=True, capturable=capture)
    noise = gen if dev.type == "cpu" else None  # `fit`'s generator on the CPU; the device's (graph-safe) elsewhere

    def step() -> tuple[Tensor, dict]:
        x = data.images[idx_buf]
        if augment is not None:
            x = x * (~box_mask(box_buf, *x.shape[-2:])).to(x.dtype)[:, None]
        with deferred_value_checks():
            loss, stats = hib_batch_loss(model(x.contiguous(memory_format=fmt)), labels_dev[idx_buf], model.match,
                                         cfg.k, cfg.beta, noise)
        loss.backward()
        opt.step()
        return loss, stats

    graph, hist, t0 = None, History(), time.perf_counter()
    side = torch.cuda.Stream() if capture else None
    for i in tqdm(range(cfg.steps), desc="train (captured)", disable=not progress, leave=False):
        idx_buf.copy_(torch.from_numpy(next(sampler)))
        if augment is not None:
            boxes = sample_digit_boxes(rng, batch, n_digits, augment.p_occlude, augment.sides)
            box_buf.copy_(torch.from_numpy(boxes))
        lr_buf.fill_(cfg.lr * lr_factor(i, cfg.steps, cfg.warmup))
        if not capture:
            opt.zero_grad(set_to_none=True)
            loss, stats = step()
        elif i < WARMUP:
            side.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(side):
                opt.zero_grad(set_to_none=True)
                loss, stats = step()
            torch.cuda.current_stream(dev).wait_stream(side)
        else:
            if graph is None:
                opt.zero_grad(set_to_none=True)  # the graph's backward then writes fresh gradients each replay
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    loss, stats = step()
            graph.replay()
        if i % cfg.log_every == 0 or i == cfg.steps - 1:
            _log(hist, i, loss.detach(), stats, float(lr_buf), model, params)
            if callback is not None:
                callback(i, hist.rows[-1])
    hist.seconds = time.perf_counter() - t0
    model.to(memory_format=torch.contiguous_format).eval()
    return hist


def _log(hist: History, step: int, loss: Tensor, stats: dict, lr: float, model: EmbeddingNet, params) -> None:
    """A history row; a non-finite loss or weight stops training naming the step, as `optimise` does."""
    if not bool(torch.isfinite(loss)) or not bool(torch.stack([torch.isfinite(p).all() for p in params]).all()):
        raise FloatingPointError(f"training diverged at step {step} (loss {float(loss)}); lower the learning rate")
    with torch.no_grad():
        hist.rows.append({"step": step, "loss": float(loss), "lr": lr, "a": float(model.match.a),
                          "b": float(model.match.b), **{k: float(v) for k, v in stats.items()}})
