"""Episodic training of prototype models: Prototypical Networks and SPE (Scott et al. 2019, sec. 3-4).

Each step draws one episode (n classes x (k support + q query) training images), embeds support and
query in one forward pass, forms prototypes from the support set and minimises the cross-entropy of
the query classes: -log p(y | x, S) of SPE eq. 7 (intersection sampler, 1 sample by default, sec. 4.2)
or of the PN softmax (``head=None``).

hedgekit's CPU recipe (the paper: lr 1e-3 halved every 50 epochs, early stopping, GPU): Adam with a
linear warm-up and cosine decay (`hedgekit.training.loop.lr_factor`), fresh per-digit occlusion at every
step via ``augment`` (App. E: each training digit occluded with probability 0.2), smaller episodes.

SPE embedding variances start near sigma_eps^2 (`hedgekit.nets.heads.INIT_VAR`), not near zero,
from where they collapse (docs/recipes.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from hedgekit.data.samplers import EpisodeSampler
from hedgekit.checks import check_batch, check_fields, check_training_set
from hedgekit.methods.pn import PN
from hedgekit.methods.fast.spe import SAMPLERS, SPE
from hedgekit.training.batches import DeviceImages
from hedgekit.training.loop import PRECISIONS, History, Loop, body_autocast


@dataclass
class EpisodicConfig:
    """Hyper-parameters of `fit_episodic` (defaults: 2-digit MNIST, LeNet body, CPU)."""

    steps: int = 3000  # ~3-4 CPU-minutes on one thread (measured ~64 ms/step PN, ~74 ms/step SPE, 320 images)
    n_classes: int = 32  # classes per training episode: with 10 images each, 320 images per step (~ the
    #   256-image batches of `hedgekit.training.fit`); the paper used all 70 with 50 support each (3500+ images/step)
    k_support: int = 5  # support per class: noisy prototypes teach tight clusters; tests use 50 (App. A.3)
    query_per_class: int = 5  # queries per class: 160 cross-entropy terms per step
    lr: float = 3e-3  # the paper starts at 1e-3 for 50+ epochs; with ~1k-3k steps and a cosine decay 3e-3
    #   learns faster (docs/recipes.md)
    weight_decay: float = 0.0
    warmup: float = 0.05  # fraction of steps with linear warm-up, then cosine decay to 0
    sampler: str = "intersection"  # SPE training sampler (sec. 4.2: intersection with s = 1)
    samples: int = 1  # s, samples per training query (Figure 4: s in {1, 3, 9, 27, 81})
    log_every: int = 50
    precision: str = "float32"  # or "bfloat16": the body under bfloat16 autocast (`training.loop.body_autocast`)

    def __post_init__(self) -> None:
        check_fields(self, counts=dict(steps=1, n_classes=2, k_support=1, query_per_class=1, samples=1, log_every=1),
                     positive=("lr",), non_negative=("weight_decay",), fractions=("warmup",),
                     choices=dict(sampler=SAMPLERS, precision=PRECISIONS))
        check_batch(self, self.n_classes * (self.k_support + self.query_per_class),
                    "n_classes x (k_support + query_per_class)")


def fit_episodic(
    model,
    head: SPE | PN | None,
    images: Tensor,
    labels,
    cfg: EpisodicConfig | None = None,
    seed: int = 0,
    device: str | torch.device | None = "cpu",
    progress: bool = True,
    augment: Callable[[Tensor, np.random.Generator], Tensor] | None = None,
    callback: Callable[[int, dict], None] | None = None,
) -> History:
    """Train ``model`` (and the head's sigma_eps) in place on episodes from images (N, [C,] H, W) and labels (N,).

    Args:
        head: an `SPE` (its gamma is trained too) or None / `PN` for a Prototypical Network, which uses
            the embedding means (``Embedding.mixture_mean``).
        images: float in [0, 1] or uint8.
        augment: ``augment(batch, rng) -> batch`` on every batch on the training device, before the forward
            pass, e.g. ``hedgekit.data.occlusion.random_occlusion(0.2)`` (as `hedgekit.training.fit.fit`).
        callback: ``callback(step, row)`` at every log step.

    Under ``torchrun`` (after `hedgekit.training.distributed.init_from_env`) it trains as `hedgekit.training.fit.fit`
    does: every rank draws the same episode, embeds its share of it and gathers the whole episode, so every rank
    computes the loss of the whole episode, prototypes from the whole support set.
    The head (SPE's sigma_eps, gamma) is not in `DistributedDataParallel`:
    it starts from rank 0's values and, computed from the same gathered embeddings and the same seeded
    Monte-Carlo draws on every rank, its gradient and updates are the same on every rank
    (tests/training/test_distributed.py).
    Returns:
        `History`; rows hold step, loss, acc (training-query accuracy with the training sampler), lr,
        var (mean embedding variance) and, for SPE, sigma_eps2.
    """
    cfg = EpisodicConfig() if cfg is None else cfg
    if not isinstance(images, Tensor):
        images = torch.as_tensor(images)
    check_training_set(images, labels, model)
    head = PN() if head is None else head
    is_spe = isinstance(head, SPE)
    # find_unused_parameters: the episode losses leave the model's match parameters (a, b) unused
    loop = Loop(model, seed, device, heads=(head,), find_unused_parameters=True)
    rng = np.random.default_rng([seed, 1])  # augmentation stream, independent of the episode stream
    episodes = EpisodeSampler(labels, cfg.n_classes, cfg.k_support, cfg.query_per_class, seed)
    data = DeviceImages(images, loop.device, loop.memory_format)
    n_support = cfg.n_classes * cfg.k_support
    # SPE's sampler (sec. 4.2); PN's posterior is exact and draws nothing
    sampler_kw = dict(sampler=cfg.sampler, n_samples=cfg.samples, generator=loop.noise) if is_spe else {}

    def step_loss(step: int):
        ep = episodes.sample()
        x = data.batch(np.concatenate([ep.support, ep.query]), augment, rng)
        with body_autocast(cfg.precision, loop.device):
            emb = loop.embed(x)
        support, query = emb[:n_support], emb[n_support:]
        s_lab, q_lab = data.indices(ep.support_labels), data.indices(ep.query_labels)
        loss = head.loss(query, q_lab, support, s_lab, ep.n_classes, **sampler_kw)
        return loss, dict(emb=emb, query=query, support=support, s_lab=s_lab, q_lab=q_lab, n=ep.n_classes)

    def log_row(st: dict) -> dict:
        with torch.no_grad():
            log_p = head.log_posterior(st["query"].detach(), st["support"].detach(), st["s_lab"], st["n"], **sampler_kw)
            row = {"acc": float((log_p.argmax(1) == st["q_lab"]).float().mean()), "var": float(st["emb"].var.mean())}
        if is_spe:
            row["sigma_eps2"] = float(head.sigma_eps2.detach())
        return row

    return loop.run(cfg, step_loss, log_row, "train SPE" if is_spe else "train PN", progress, callback)
