"""Training embedding models on pairs: point (soft or hard contrastive) and HIB (Oh et al. 2019).

hedgekit's recipe (the paper trained 500k steps x 128 pairs on a GPU; `hedgekit.zoo.PRESETS`
fits minutes on two CPU cores; docs/recipes.md says how it was found):

* class-balanced batches of P classes x Q images and *all* B(B-1)/2 pairs in the
  batch (`hedgekit.methods.hib.hib_batch_loss`) instead of B/2 pairs per batch;
* fresh occlusion of each training digit with probability 0.2 at every step
  (HIB App. A's corruption process, re-sampled instead of frozen once);
* Adam with a linear warm-up and a cosine decay of the learning rate (`lr_factor`).

The paper's two-stream pairing is available too (``pairing="two_stream"``). Seeding, the device, torchrun, the
loop and the hand-back of the model are the shared `hedgekit.training.loop.Loop`'s; `fit` draws a batch and
computes its loss.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from hedgekit.checks import check_batch, check_fields, check_training_set
from hedgekit.embedding import Embedding
from hedgekit.data.samplers import ClassBalancedSampler, two_stream_pairs
from hedgekit.methods import contrastive_from_distance, hard_contrastive_all_pairs, hib_batch_loss, hib_pair_loss
from hedgekit.methods.hib import BETA, check_beta, check_pair_memory
from hedgekit.nets import EmbeddingNet
from hedgekit.nets.match import SoftMatch
from hedgekit.training.batches import DeviceImages
from hedgekit.training.loop import (PRECISIONS, History, Loop, body_autocast, lr_factor, memory_format, optimise,
                                    seed_everything)

# fit's own names, and the shared loop's (`hedgekit.training.loop`) that modules outside hedgekit.training
# import from here (bench, cli, tests/test_bench.py)
__all__ = ["PRECISIONS", "History", "TrainConfig", "body_autocast", "fit", "hard_pair_loss", "lr_factor",
           "memory_format", "optimise", "pair_loss", "seed_everything", "soft_pair_loss"]


@dataclass
class TrainConfig:
    """Hyper-parameters of `fit`. Presets live in `hedgekit.zoo.PRESETS`.

    The entry point of the pair losses' inputs (the losses in `hedgekit.methods` compute their
    equations unchecked): a batch of P >= 2 classes of Q >= 2 images has matching and non-matching pairs, M > 0,
    K >= 1, beta by `hedgekit.methods.hib.check_beta`, and the K x K sample pairs of the HIB loss must fit memory
    (`hedgekit.methods.hib.check_pair_memory`, for loss="soft").
    """

    steps: int = 3000
    classes_per_batch: int = 32  # P
    per_class: int = 8  # Q: B = P * Q images per step
    lr: float = 3e-3
    weight_decay: float = 0.0
    warmup: float = 0.05  # fraction of steps with linear warm-up
    k: int = 8  # Monte-Carlo samples per input (HIB eq. 5, K = 8)
    beta: float = BETA  # KL weight (HIB eq. 8), checked by `hedgekit.methods.hib.check_beta`
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
        check_fields(self, counts=dict(steps=1, classes_per_batch=2, per_class=2, k=1, pairs_per_batch=1, log_every=1),
                     positive=("lr", "margin"), non_negative=("weight_decay",),
                     fractions=("warmup", "occlusion_p"),
                     choices=dict(loss=("soft", "hard"), pairing=("all", "two_stream"), precision=PRECISIONS))
        check_batch(self, self.classes_per_batch * self.per_class, "classes_per_batch x per_class")
        check_batch(self, 2 * self.pairs_per_batch, "2 x pairs_per_batch")
        check_beta(self.beta, "TrainConfig.beta")
        if self.loss == "soft":
            all_pairs = self.pairing == "all"
            check_pair_memory(self.classes_per_batch * self.per_class if all_pairs else self.pairs_per_batch, self.k,
                              all_pairs)


# The step losses `fit` calls, one per method record (`hedgekit.zoo.methods.MethodRecord.loss`): ``loss(emb, match,
# y, cfg, gen, pair_idx) -> (loss, stats)`` on the batch's embeddings, with ``pair_idx`` = (i, j, same) for the
# two-stream pairing and None for all pairs in the batch.
def soft_pair_loss(emb: Embedding, match: SoftMatch, y: Tensor, cfg: TrainConfig, gen, pair_idx=None):
    """HIB's loss (eq. 5 with the KL term of eq. 8, weight ``cfg.beta``, ``cfg.k`` samples per input): HIB's
    record's; with beta = 0 on a point embedding, the soft contrastive loss (eq. 3)."""
    if pair_idx is None:
        return hib_batch_loss(emb, y, match, cfg.k, cfg.beta, gen)
    i, j, same = pair_idx
    return hib_pair_loss(emb[i], emb[j], same, match, cfg.k, cfg.beta, gen), {}


def hard_pair_loss(emb: Embedding, match: SoftMatch, y: Tensor, cfg: TrainConfig, gen, pair_idx=None):
    """The hard contrastive loss (HIB eq. 1, margin ``cfg.margin``) on the embeddings' means."""
    z = emb.mixture_mean()
    if pair_idx is None:
        return hard_contrastive_all_pairs(z, y, cfg.margin), {}
    i, j, same = pair_idx
    return contrastive_from_distance((z[i] - z[j]).norm(dim=-1), same, cfg.margin).mean(), {}


def pair_loss(emb: Embedding, match: SoftMatch, y: Tensor, cfg: TrainConfig, gen, pair_idx=None):
    """The point record's loss and `fit`'s default: the loss ``cfg.loss`` names, "soft" (eq. 3, `soft_pair_loss`)
    or "hard" (eq. 1, `hard_pair_loss`)."""
    loss = hard_pair_loss if cfg.loss == "hard" else soft_pair_loss
    return loss(emb, match, y, cfg, gen, pair_idx)


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
    loss: Callable | None = None,
) -> History:
    """Train ``model`` in place on images (N, [C,] H, W) in [0, 1] (float or uint8) and labels (N,).

    Args:
        augment: ``augment(batch, rng) -> batch`` applied to every batch on the training device
            before the forward pass: `hedgekit.data.occlusion.random_occlusion` (fresh occlusion) gets
            the batch as stored (uint8 or float), any other function a float batch in [0, 1]
            (`hedgekit.training.batches`).
        callback: called as ``callback(step, row)`` at every log step.
        loss: the step loss, ``loss(emb, match, y, cfg, gen, pair_idx) -> (loss, stats)``: the method record's
            (`hedgekit.zoo.methods.MethodRecord.loss`, which `hedgekit.zoo.recipes` passes); None: `pair_loss`.

    Under ``torchrun`` (after `hedgekit.training.distributed.init_from_env`) every rank draws the
    same global batch and embeds its share of it; the loss is that of the whole batch (see
    `hedgekit.training.distributed`).

    Returns:
        `History` with loss, nll of positive/negative pairs, a, b, lr and the mean
        predicted variance, one row per ``cfg.log_every`` steps.
    """
    check_training_set(images, labels, model)
    loss = pair_loss if loss is None else loss
    loop = Loop(model, seed, device, find_unused_parameters=cfg.loss == "hard")  # "hard" leaves a, b unused
    dev, rng = loop.device, np.random.default_rng(seed)
    labels_np = labels.cpu().numpy()
    data = DeviceImages(images, dev, loop.memory_format)
    labels_dev = labels.to(dev)
    all_pairs = cfg.pairing == "all"
    sampler = ClassBalancedSampler(labels_np, cfg.classes_per_batch, cfg.per_class, seed) if all_pairs else None

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
            emb = loop.embed(x)
        return loss(emb, model.match, y, cfg, loop.noise, pair_idx)

    def log_row(stats: dict) -> dict:
        return {"a": model.match.a.item(), "b": model.match.b.item(), **stats}

    return loop.run(cfg, step_loss, log_row, f"train {model.config.get('kind', '')}", progress, callback)
