"""Triplet training: the heteroscedastic triplet loss of Taha et al. 2019 (eq. 11) and its vanilla baseline (eq. 2).

Each step draws a P x K batch (`hedgekit.data.samplers.PKSampler`; the paper: P = 18 identities x
K = 4 images, sec. 5.1), mines triplets inside it (batch-hard, eq. 4, or semi-hard, eq. 3) and
minimises `hedgekit.methods.het_triplet.heteroscedastic_triplet_loss` on a ``build_model("het")``
network, or with ``heteroscedastic=False`` the plain triplet loss on the embedding means.

hedgekit's CPU recipe (the paper: ResNet-50, Adam at 3e-4 for 15k iterations decaying to 1e-7 at 25k):
the shared loop `hedgekit.training.loop.Loop` (Adam, linear warm-up, cosine decay), fresh per-digit
occlusion at every step (the paper's "+ Aug" runs hide small rectangles, sec. 5.1).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from hedgekit.data.occlusion import DIGIT_SIZE, random_occlusion
from hedgekit.data.samplers import PKSampler
from hedgekit.checks import check_batch, check_fields, check_margin, check_training_set
from hedgekit.errors import InputError
from hedgekit.methods.het_triplet import heteroscedastic_triplet_loss, triplet_batch_loss, z_and_log_var
from hedgekit.methods.mining import MININGS
from hedgekit.nets.heads import HeteroscedasticHead
from hedgekit.training.batches import DeviceImages
from hedgekit.training.loop import PRECISIONS, History, Loop, body_autocast


@dataclass
class TripletConfig:
    """Hyper-parameters of `fit_triplets`. P, K, the soft margin and batch-hard mining follow the paper
    (sec. 4.1, 5.1); steps and lr are CPU-sized starting points, not yet tuned on a kit dataset.

    The entry point of the triplet losses' settings (`hedgekit.methods.het_triplet` computes its
    equations unchecked): each field is checked once, when the config is built, and the error names it.

    Attributes:
        steps: optimiser steps.
        P, K: classes per batch and images per class (sec. 5.1: 18 x 4).
        lr: peak Adam learning rate (warm-up, then cosine decay to 0).
        weight_decay: Adam's L2 coefficient, the lambda ||W||^2 term of eq. 11. Adam adds
            ``weight_decay * W`` to the gradient, the gradient of (weight_decay / 2) ||W||^2, so
            weight_decay = 2 lambda; the default reads the paper's "lambda = 10e-4" as 1e-4.
        warmup: fraction of the steps with a linear warm-up.
        mining: "batch_hard" (eq. 4), "semi_hard" (eq. 3) or "batch_all" (every valid triplet).
        margin: None for the soft margin ln(1 + exp(.)) (sec. 4.1), else the hard margin m > 0 (eq. 2).
        semi_hard_margin: m of eq. 3 for semi-hard mining; None uses ``margin``, or
            `hedgekit.methods.het_triplet.SEMI_HARD_WINDOW` with the soft margin.
        heteroscedastic: True for eq. 11 (needs a ``build_model("het")`` network); False for the
            vanilla triplet loss on the embedding means (the "Tri-ResNet" baseline).
        occlusion_p: per-digit occlusion probability at every step (28 x 28N one-channel images),
            used when `fit_triplets` gets no ``augment``; 0 disables it.
        log_every: steps between history rows.
        precision: "float32", or "bfloat16" for the body under bfloat16 autocast
            (`hedgekit.training.loop.body_autocast`; the head, loss and weights stay float32).
    """

    steps: int = 2000
    P: int = 18
    K: int = 4
    lr: float = 1e-3
    weight_decay: float = 2e-4
    warmup: float = 0.05
    mining: str = "batch_hard"
    margin: float | None = None
    semi_hard_margin: float | None = None
    heteroscedastic: bool = True
    occlusion_p: float = 0.2
    log_every: int = 50
    precision: str = "float32"

    def __post_init__(self) -> None:
        check_fields(self, counts=dict(steps=1, P=2, K=2, log_every=1), positive=("lr",),
                     non_negative=("weight_decay",), fractions=("warmup", "occlusion_p"),
                     choices=dict(mining=MININGS, precision=PRECISIONS))
        for name in ("margin", "semi_hard_margin"):  # m of eq. 2 and eq. 3
            if getattr(self, name) is not None:
                check_margin(getattr(self, name), f"TripletConfig.{name}", ", or None")
        if not isinstance(self.heteroscedastic, bool):
            raise InputError(f"TripletConfig.heteroscedastic must be True or False; got {self.heteroscedastic!r}")
        check_batch(self, self.P * self.K, "P x K")


def _check_data(model, images: Tensor, labels, cfg: TripletConfig) -> np.ndarray:
    """The training set's checks, once, where `fit_triplets` starts; returns the labels as numpy.

    Images and one label per image as `hedgekit.training.fit.fit` checks them (`check_training_set`); the labels are
    class labels: numbers or strings (anything `numpy.unique` sorts; not bool, complex or objects), no NaN or inf;
    for eq. 11 the model emits s = log sigma^2 (a `HeteroscedasticHead`, ``build_model("het")``).
    """
    if isinstance(labels, Tensor):  # bfloat16 has no numpy twin; float64 holds every value of a float label
        labels = labels.detach().cpu()
        labels = labels.double() if labels.is_floating_point() else labels
    labels = np.asarray(labels)
    check_training_set(images, labels, model)
    if labels.dtype.kind not in "iufUS":
        raise InputError(f"labels must be class labels, integers or strings (one per image); got dtype {labels.dtype}")
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise InputError("labels contain NaN or inf; every training image needs a class label")
    if cfg.heteroscedastic and not isinstance(getattr(model, "head", None), HeteroscedasticHead):
        head = type(getattr(model, "head", None)).__name__
        raise InputError(f"TripletConfig.heteroscedastic=True trains eq. 11, whose s = log sigma^2 only a "
                         f"build_model('het') network emits (a HeteroscedasticHead); this model's head is a {head}: "
                         "pass a het model, or heteroscedastic=False for the vanilla triplet loss on its means")
    return labels


def _default_augment(images: Tensor, p: float):
    """Fresh per-digit occlusion (`random_occlusion`) for one-channel 28 x 28N images; None when p = 0."""
    if p == 0:
        return None
    one_channel = images.ndim == 3 or (images.ndim == 4 and images.shape[1] == 1)
    if not one_channel or images.shape[-2] != DIGIT_SIZE or images.shape[-1] % DIGIT_SIZE:
        raise InputError(f"occlusion_p > 0 needs one-channel 28 x 28N digit images; got {tuple(images.shape)}: "
                         "set TripletConfig.occlusion_p=0 or pass augment=")
    return random_occlusion(p)


def fit_triplets(
    model,
    images: Tensor,
    labels,
    cfg: TripletConfig | None = None,
    seed: int = 0,
    device: str | torch.device | None = "cpu",
    progress: bool = True,
    augment: Callable[[Tensor, np.random.Generator], Tensor] | None = None,
    callback: Callable[[int, dict], None] | None = None,
) -> History:
    """Train ``model`` in place with triplets mined in P x K batches of images (N, [C,] H, W) and labels (N,).

    Args:
        model: an `EmbeddingNet`; ``build_model("het", ...)`` for ``cfg.heteroscedastic`` (eq. 11),
            any kind otherwise (its means are trained with the vanilla triplet loss).
        images: float in [0, 1] or uint8, finite.
        labels: (N,) class labels (tensor or array of numbers or strings); every class needs K images.
        augment: ``augment(batch, rng) -> batch`` on every batch on the training device, before the forward
            pass (as `hedgekit.training.fit.fit`); None applies ``random_occlusion(cfg.occlusion_p)`` when
            ``cfg.occlusion_p > 0``.
        callback: ``callback(step, row)`` at every log step.
    Returns:
        `History`; rows hold step, loss, lr, triplet (mean L_tri), active (fraction of violated
        triplets), triplets (how many were mined) and, for eq. 11, sigma2 (mean e^s of the batch).

    The inputs are checked here, once, before the first step (`_check_data`; the settings by `TripletConfig`); the
    losses are not. The `PKSampler` built here (without replacement) refuses labels with fewer than P classes or a
    class with fewer than K images, so every batch holds P >= 2 classes of K >= 2 distinct images: every anchor has
    a positive and a negative, batch-hard mining gives one triplet per anchor and batch-all at least one (semi-hard
    mining can find none, and the step's loss is then 0).
    """
    cfg = TripletConfig() if cfg is None else cfg
    labels_np = _check_data(model, images, labels, cfg)
    sampler = PKSampler(labels_np, cfg.P, cfg.K, seed)
    augment = _default_augment(images, cfg.occlusion_p) if augment is None else augment
    loop = Loop(model, seed, device, find_unused_parameters=True)  # the triplet losses leave a, b unused
    rng = np.random.default_rng([seed, 1])  # augmentation stream, independent of the batch stream
    all_labels = torch.as_tensor(np.unique(labels_np, return_inverse=True)[1])  # any label dtype -> int codes
    data, all_labels = DeviceImages(images, loop.device, loop.memory_format), all_labels.to(loop.device)

    def step_loss(step: int):
        idx = data.indices(next(sampler))  # one copy to the device for images and labels
        x = data.batch(idx, augment, rng)
        with body_autocast(cfg.precision, loop.device):
            emb = loop.embed(x)  # under torchrun: each rank embeds its share of the batch (training.distributed)
        y = all_labels[idx]
        if cfg.heteroscedastic:
            return heteroscedastic_triplet_loss(*z_and_log_var(emb), y, cfg.mining, cfg.margin, cfg.semi_hard_margin)
        return triplet_batch_loss(emb.mixture_mean(), y, cfg.mining, cfg.margin, cfg.semi_hard_margin)

    desc = "train het-triplet" if cfg.heteroscedastic else "train triplet"
    return loop.run(cfg, step_loss, dict, desc, progress, callback)
