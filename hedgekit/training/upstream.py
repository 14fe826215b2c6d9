"""Upstream training of a URL method head on a shared backbone (Kirchhof et al. 2023, Sec. 3; App. B).

Every URL method (`hedgekit.methods.upstream`) is a head on the features of one backbone; the benchmark
trains backbone and head together on labelled seen classes, with the same backbone, optimiser, schedule,
batch sampler and step budget for every method (the paper: same backbone, 32 epochs, Lamb, warm-up and
cosine decay; App. A.3). The loop is the kit's shared `hedgekit.training.loop.Loop` (seeding, Adam with a linear
warm-up and cosine decay, divergence checks, hand-back in eval mode); only the per-step loss is new:

    features = backbone(augment(x_batch));  out = head(features);  loss = head.loss(out, y_batch)
    optimiser step
    head.on_step(features, out, y_batch)      # after the step, e.g. SNGP's precision update; most: no-op

Batches are class-balanced (P classes x Q images, `ClassBalancedSampler`) so that contrastive methods
(InfoNCE, MCInfoNCE, HIB) always find positives in the batch.

Unsupervised heads (``head.supervised = False``: the paper's two-view InfoNCE and MCInfoNCE, App. B.2-B.3) never
see a label: their batches are P * Q images drawn uniformly without replacement, each image is augmented twice
independently, the head gets the 2B views stacked (view 1 of every image, then view 2) and
``head.loss(out, None)``, and ``on_step`` gets None for the labels.

What a head's u(x) does during training (does kappa learn, or collapse to a constant?) is
`watch_row`: with ``watch=(x, y)``, every logged row of the `History` also holds the spread of u(x) (and of kappa
for the vMF heads) and the R-AUROC of u(x) on those images.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from hedgekit.data.samplers import ClassBalancedSampler
from hedgekit.checks import check_batch
from hedgekit.errors import InputError
from hedgekit.evaluation.metrics import r_auroc, recall_at_1
from hedgekit.training.batches import DeviceImages, to_float
from hedgekit.training.loop import History, Loop

# why `fit_upstream` refuses torchrun (`hedgekit.training.loop.Loop`'s single_process)
_SINGLE_PROCESS = ("the URL heads' losses and SNGP's precision update are computed per process on what it "
                   "embedded; they are not gathered over ranks as the pair, episode and triplet losses are")

__all__ = ["UpstreamConfig", "UpstreamModel", "check_upstream_labels", "fit_upstream", "predict", "uniform_batches",
           "watch_row"]


@dataclass(frozen=True)
class UpstreamConfig:
    """Hyper-parameters of `fit_upstream` (read by `hedgekit.training.loop.optimise`: steps, lr, weight_decay,
    warmup, log_every)."""

    steps: int = 1000
    classes_per_batch: int = 32  # P
    per_class: int = 4  # Q: B = P * Q = 128 images, the paper's mini-batch of 128 (App. A.3)
    lr: float = 2e-3
    weight_decay: float = 0.0
    warmup: float = 0.05
    occlusion_p: float = 0.2  # per-digit occlusion at every step (HIB App. A's corruption, the kit's augmentation)
    log_every: int = 50

    def __post_init__(self) -> None:
        if self.steps < 1 or not self.lr > 0 or self.classes_per_batch < 2 or self.per_class < 2:
            raise InputError(f"need steps >= 1, lr > 0, classes_per_batch >= 2 and per_class >= 2; got {self}")
        if not 0 <= self.occlusion_p <= 1 or not 0 <= self.warmup <= 1:
            raise InputError(f"occlusion_p and warmup must lie in [0, 1]; got {self}")
        check_batch(self, self.classes_per_batch * self.per_class, "classes_per_batch x per_class")


class UpstreamModel(nn.Module):
    """A backbone (images -> features) and a method head (features -> {"embedding", "uncertainty", ...})."""

    def __init__(self, backbone: nn.Module, head: nn.Module):
        super().__init__()
        self.backbone, self.head = backbone, head

    def forward(self, x: Tensor) -> dict:
        return self.head(self.backbone(x))


def uniform_batches(n: int, batch: int, seed: int):
    """Endless batches of ``batch`` indices into 0..n-1, uniform without replacement within a batch (no labels)."""
    if batch > n:
        raise InputError(f"a batch of {batch} images needs at least {batch} images; got {n}")
    rng = np.random.default_rng([seed, 2])
    while True:
        yield rng.choice(n, batch, replace=False)


def check_upstream_labels(head: nn.Module, y) -> Tensor:
    """``y`` as int64 (N,) if it holds a supervised head's training labels; checked once when `fit_upstream`
    starts, not in the losses, which keep only their equations.

    The labels are integer class indices 0..n_classes-1 (``head.n_classes``, where the head has one). A ``pairwise``
    head (InfoNCE, MCInfoNCE, HIB) compares the images of one class within a batch. `ClassBalancedSampler`
    guarantees that every batch holds P >= 2 classes x Q >= 2 images, so every image has a same-class and a
    different-class partner; but it draws a class with fewer than Q images with replacement, so a class with a single
    image would be paired with itself. Such a head needs two images of every class.
    """
    if not isinstance(y, Tensor) or y.ndim != 1 or y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        got = f"{y.dtype} of shape {tuple(y.shape)}" if isinstance(y, Tensor) else type(y).__name__
        raise InputError(f"labels must be an integer tensor (N,) of class indices 0..n_classes-1; got {got}")
    if not len(y):
        raise InputError("need at least one labelled training image; got none")
    y, n_classes = y.long(), getattr(head, "n_classes", None)
    lo, hi = int(y.min()), int(y.max())
    if lo < 0 or (n_classes is not None and hi >= n_classes):
        limit = "C-1" if n_classes is None else f"{n_classes - 1} (the head's n_classes = {n_classes})"
        raise InputError(f"labels must be class indices 0..{limit}; got labels {lo}..{hi}")
    if getattr(head, "pairwise", False):
        single = torch.nonzero(torch.bincount(y) == 1).flatten().tolist()
        if single:
            raise InputError(f"{getattr(head, 'name', 'this head')} compares the images of one class within a batch, "
                             f"so every class needs at least two images (the class-balanced sampler would pair a lone "
                             f"image with itself); classes {single[:10]} have one image")
    return y


def watch_row(model: UpstreamModel, x: Tensor, y) -> dict[str, float]:
    """How u(x) looks on the watched images ``x`` (float in [0, 1]) with classes ``y``, in eval mode:

    ``u_cv`` = std / mean of u(x), and for a vMF head also ``kappa_cv`` and ``kappa_mean`` of kappa(x) (0 when it
    collapsed to a constant); ``r1`` and ``rauroc``: R@1 (cosine) among these images and the R-AUROC of u(x) for
    its errors (URL sec. 3.1; NaN when every R@1 is right or every one wrong); only ``u_cv``, ``r1`` and ``rauroc``,
    NaN, when the outputs are not finite or fail the model's own checks (it diverged: `hedgekit.papers.url.protocol`
    reports it). The global random stream is
    restored afterwards, so a head that samples in eval mode (MCDropout) trains on the same stream as unwatched.
    """
    was = model.training
    try:
        with torch.random.fork_rng(devices=[x.device] if x.device.type == "cuda" else []):
            out = predict(model, x)
    except InputError:  # a model's own check of its values (e.g. a NaN kappa): diverged
        out = None
    model.train(was)
    if out is None or not (np.isfinite(out["uncertainty"]).all() and np.isfinite(out["embedding"]).all()):
        return dict.fromkeys(("u_cv", "r1", "rauroc"), float("nan"))  # diverged: the evaluation says so
    u = out["uncertainty"]
    row = {"u_cv": float(np.std(u) / np.mean(u))}
    if "kappa" in out:
        kappa = out["kappa"]
        row.update(kappa_cv=float(np.std(kappa) / np.mean(kappa)), kappa_mean=float(np.mean(kappa)))
    r1, correct = recall_at_1(out["embedding"], np.asarray(y), metric="cosine")
    row.update(r1=r1, rauroc=float(r_auroc(u, correct)) if 0 < correct.sum() < len(correct) else float("nan"))
    return row


def fit_upstream(model: UpstreamModel, x: Tensor, y: Tensor, cfg: UpstreamConfig, seed: int = 0,
                 augment=None, progress: bool = True, desc: str = "upstream",
                 device: str | torch.device | None = "cpu", watch: tuple[Tensor, object] | None = None) -> History:
    """Train ``model`` on images ``x`` (N, 1, H, W) with class indices ``y`` (N,) in 0..C-1, on ``device``.

    ``augment(x_batch, rng) -> x_batch`` (e.g. `hedgekit.data.random_occlusion`) is applied afresh at every
    step on the device (twice, one draw per view, for an unsupervised head; ``y`` is then never read) to the
    batch as ``x`` stores it (uint8 0..255 or float); what it returns goes to the backbone as float32 in [0, 1]
    (`hedgekit.training.batches.to_float`). The model stays on ``device``, in eval mode. Returns the `History`
    (loss every ``cfg.log_every`` steps, seconds).

    It trains in the default (NCHW) layout, in which the URL benchmark's recorded results were trained (channels
    last would change them at float rounding), and in one process only: under ``torchrun`` it raises an
    `InputError` (`_SINGLE_PROCESS` says why). A supervised head's labels are checked first
    (`check_upstream_labels`); an unsupervised head's never reach it: its loss and ``on_step`` get None (the labels
    are withheld here, once, rather than refused by the loss).

    ``watch=(x_watch, y_watch)``: every logged row also holds `watch_row` of those images (float in [0, 1], never
    trained on by this call unless they are in ``x``); the training itself is unchanged.
    """
    if x.ndim != 4 or len(x) != len(y):
        raise InputError(f"x must be (N, C, H, W) with one label per image; got {tuple(x.shape)} and {len(y)} labels")
    supervised = getattr(model.head, "supervised", True)
    if supervised:
        y = check_upstream_labels(model.head, y)
    loop = Loop(model, seed, device, channels_last=False, single_process=_SINGLE_PROCESS)
    rng = np.random.default_rng(seed)
    sampler = (ClassBalancedSampler(y.numpy(), cfg.classes_per_batch, cfg.per_class, seed=seed) if supervised else
               uniform_batches(len(x), cfg.classes_per_batch * cfg.per_class, seed))
    data, y_dev = DeviceImages(x, loop.device), y.to(loop.device)
    hook = getattr(model.head, "on_step", None)
    last: list = []  # the previous step's (features, out, labels), handed to the hook once its update is done

    def step_loss(step: int):
        if hook is not None and last:
            hook(*last.pop())  # step_loss(step) starts after step - 1's optimiser step
        idx = data.indices(next(sampler))  # one copy to the device for images and labels
        xb = data.batch(idx)
        views = [xb] if augment is None else [augment(xb, rng)]
        if not supervised:  # two independently augmented views of every image, no labels
            views.append(xb if augment is None else augment(xb, rng))
        yb = y_dev[idx] if supervised else None
        features = model.backbone(to_float(views[0] if len(views) == 1 else torch.cat(views)))  # one conversion
        out = model.head(features)
        loss = model.head.loss(out, yb)
        if hook is not None:
            detached = {k: v.detach() if isinstance(v, Tensor) else v for k, v in out.items()}
            last.append((features.detach(), detached, yb))
        return loss, {}

    watched = None if watch is None else (watch[0].to(loop.device), watch[1])
    hist = loop.run(cfg, step_loss, lambda stats: {} if watched is None else watch_row(model, *watched), desc,
                    progress=progress)
    if hook is not None and last:
        hook(*last.pop())
    return hist


@torch.no_grad()
def predict(model: UpstreamModel, x: Tensor, batch: int = 1000) -> dict[str, np.ndarray]:
    """e(x) as ``"embedding"`` (N, D), u(x) as ``"uncertainty"`` (N,), for heads that classify ``"logits"``
    (N, C) and for the vMF heads ``"kappa"`` (N,): float64 numpy arrays computed in eval mode on the model's
    device, ``batch`` images at a time."""
    model.eval()
    device = next(model.parameters()).device
    parts: dict[str, list] = {"embedding": [], "uncertainty": [], "logits": [], "kappa": []}
    for i in range(0, len(x), batch):
        out = model(x[i:i + batch].to(device))
        parts["embedding"].append(out["embedding"].double())
        parts["uncertainty"].append(out["uncertainty"].double().reshape(-1))
        for key in ("logits", "kappa"):
            if key in out:
                parts[key].append(out[key].double())
    return {k: torch.cat(v).cpu().numpy() for k, v in parts.items() if v}
