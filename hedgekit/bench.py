"""Training throughput beside its floor and its ceiling (`python -m hedgekit bench [--device cpu|cuda|auto]`).

Three numbers for the same network and batch, measured in the same run on the same device so that a busy
machine slows all of them alike:

* hedgekit's training step: `hedgekit.training.fit.fit` on the device, with everything it does per step
  (class-balanced sampling, fresh occlusion, output checks, logging, the schedule), as `train --device` runs it;
* a plain PyTorch loop (`plain_step`): the same LeNet layers, the same all-pairs loss written in a few
  lines, Adam; its uint8 images and labels are on the device once, and every step draws its batch indices
  and its occlusion boxes (HIB App. A) on the device and applies the boxes as one vectorised mask
  (`occlusion_boxes`, `box_mask`), with no host synchronisation inside the loop: the floor anyone would write;
* the FLOP ceiling: the device's float32 matmul rate (`matmul_gflops`) divided by the network's training
  FLOPs per image (`train_flops_per_image`, forward + backward of the convolutions and linear layers; the loss
  and the optimiser are not counted). On CUDA the matmuls run in IEEE float32 with TF32 off
  (`hedgekit.hardware.ieee_float32`), an honest float32 ceiling; the loops keep PyTorch's defaults, under which
  cuDNN may compute convolutions in TF32, so a loop could in principle pass the ceiling.

On CUDA every clock is read after `torch.cuda.synchronize` (`synchronize`); on the CPU that is a no-op and the
code path is the same. Ratios hedgekit / plain and hedgekit / ceiling say how much of the hardware the kit uses;
medians over interleaved repeats damp the noise of a shared machine (docs/speed.md).
`layer_times` says where a step's time goes: every layer of the network timed alone, forward and
backward, with its FLOPs and the rate it reaches; their sum is the floor of any loop built from
these PyTorch layers.
"""
from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

from hedgekit.checks import resolve_device
from hedgekit.data import random_occlusion
from hedgekit.errors import InputError
from hedgekit.hardware import as_launch_bound, ieee_float32
from hedgekit.methods.contrastive import TINY
from hedgekit.methods.fast.spe import SPE
from hedgekit.nets import EmbeddingNet, build_model
from hedgekit.nets.heads import VAR_FLOOR
from hedgekit.opcount import step_counts
from hedgekit.training.captured import WARMUP, fit_captured
from hedgekit.training.episodic import EpisodicConfig, fit_episodic
from hedgekit.training.fit import TrainConfig, body_autocast, fit, memory_format
from hedgekit.training.seeds import fit_seeds
from hedgekit.training.triplets import TripletConfig, fit_triplets

DIGIT = 28  # pixels per side of one digit cell
MATMUL_N = {"cuda": 8192}  # matrix side of the ceiling's products per device type; 512 elsewhere
WARMUP_STEPS = 5  # steps of `compare`'s untimed first repeat (at most ``steps``)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA, MPS) before a clock is read; nothing to wait for on the CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def matmul_gflops(n: int | None = None, seconds: float = 0.3, device: str | torch.device = "cpu") -> float:
    """float32 GFLOP/s of ``n x n`` matrix products (2 n^3 FLOPs each) on ``device``, TF32 off
    (`hedgekit.hardware.ieee_float32`).

    ``n`` defaults to `MATMUL_N` for the device type (8192 on CUDA, enough to fill a GPU) or 512 (the CPU).
    Products run one at a time and the device is synchronised before each clock read, for at least
    ``seconds`` and 3 products.
    """
    dev = resolve_device(device)
    n = int(n or MATMUL_N.get(dev.type, 512))
    if n < 1 or not seconds >= 0:
        raise InputError(f"need n >= 1 and seconds >= 0; got n={n}, seconds={seconds}")
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    with ieee_float32(dev):
        torch.mm(a, b)  # warm-up
        synchronize(dev)
        count, t0 = 0, time.perf_counter()
        while True:
            torch.mm(a, b)
            count += 1
            synchronize(dev)
            if (elapsed := time.perf_counter() - t0) >= seconds and count >= 3:
                break
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


def occlusion_boxes(batch: int, n_digits: int, p_occlude: float, gen: torch.Generator) -> Tensor:
    """(batch, n_digits, 4) int64 boxes (top, left, height, width) of HIB App. A's occlusion, drawn on
    ``gen``'s device: each digit occluded with chance ``p_occlude``, sides uniform in {0..28}, the corner
    uniform among the positions that keep the box in the digit's cell (the distribution of
    `hedgekit.data.occlusion.sample_digit_boxes`, another random stream); unoccluded digits get empty boxes."""
    dev, shape = gen.device, (batch, n_digits)
    occluded = torch.rand(shape, generator=gen, device=dev) < p_occlude
    height = torch.randint(0, DIGIT + 1, shape, generator=gen, device=dev) * occluded
    width = torch.randint(0, DIGIT + 1, shape, generator=gen, device=dev) * occluded
    corner = torch.rand((2, *shape), generator=gen, device=dev)
    top = (corner[0] * (DIGIT + 1 - height)).long() * occluded  # uniform in 0..28 - height
    left = (corner[1] * (DIGIT + 1 - width)).long() * occluded + DIGIT * torch.arange(n_digits, device=dev)
    return torch.stack([top, left, height, width], dim=-1)


def box_mask(boxes: Tensor, height: int, width: int) -> Tensor:
    """(B, height, width) bool mask of the pixels covered by any of the (B, n, 4) boxes, in one vectorised
    expression on the boxes' device: pixel (r, c) is in box (t, l, h, w) iff t <= r < t + h and l <= c < l + w.
    The plain loop's own line, as anyone would write it; the kit's tuned version is
    `hedgekit.data.occlusion.box_mask`."""
    top, left, h, w = (v.unsqueeze(-1) for v in boxes.unbind(-1))  # each (B, n, 1)
    rows = torch.arange(height, device=boxes.device)
    cols = torch.arange(width, device=boxes.device)
    in_rows = (rows >= top) & (rows < top + h)  # (B, n, H)
    in_cols = (cols >= left) & (cols < left + w)  # (B, n, W)
    return (in_rows.unsqueeze(-1) & in_cols.unsqueeze(-2)).any(1)


def plain_batch(images: Tensor, labels: Tensor, batch: int, p_occlude: float, gen: torch.Generator
                ) -> tuple[Tensor, Tensor, Tensor]:
    """One batch of the plain loop, all on the images' device: ``batch`` indices drawn uniformly with ``gen``,
    the uint8 images as floats in [0, 1], occluded by fresh `occlusion_boxes` through `box_mask`.
    Returns (x (B, 1, H, W) float, y (B,), boxes (B, n_digits, 4))."""
    idx = torch.randint(len(images), (batch,), generator=gen, device=images.device)
    boxes = occlusion_boxes(batch, images.shape[-1] // DIGIT, p_occlude, gen)
    x = images[idx].masked_fill(box_mask(boxes, *images.shape[-2:]), 0).unsqueeze(1).float() / 255.0
    return x, labels[idx], boxes


def _check_plain_data(images: Tensor, labels: Tensor) -> None:
    """InputError unless images are uint8 (N, 28, 28 n) and labels (N,) integers on the same device."""
    if not isinstance(images, Tensor) or images.dtype != torch.uint8 or images.ndim != 3 or \
            images.shape[1] != DIGIT or images.shape[2] % DIGIT or not len(images):
        raise InputError("the plain loop takes uint8 images of shape (N, 28, 28 n), N >= 1; got "
                         f"{getattr(images, 'dtype', type(images).__name__)} {tuple(getattr(images, 'shape', ()))}")
    if not isinstance(labels, Tensor) or labels.shape != images.shape[:1] or labels.is_floating_point() or \
            labels.device != images.device:
        raise InputError(f"labels must be an integer tensor of shape ({len(images)},) on the images' device "
                         f"{images.device}; got {getattr(labels, 'dtype', type(labels).__name__)} "
                         f"{tuple(getattr(labels, 'shape', ()))} on {getattr(labels, 'device', None)}")


def plain_step(model: EmbeddingNet, images: Tensor, labels: Tensor, batch: int, k: int, steps: int,
               seed: int = 0, p_occlude: float = 0.2) -> float:
    """Seconds per step of a minimal loop on the device the uint8 ``images`` (N, 28, 28 n) and ``labels`` (N,)
    already live on (``model`` is moved there): `plain_batch` (indices, occlusion boxes and mask drawn on the
    device), the all-pairs soft contrastive / HIB loss (eq. 3 / eq. 5 + KL) in plain torch, Adam. Point and
    MoG-1 models. No host synchronisation inside the loop (pair means are weighted sums, not boolean
    indexing); the device is synchronised before each clock read."""
    if model.config["kind"] not in ("point", "hib") or model.config["components"] != 1:
        raise InputError("the plain loop covers point and MoG-1 models")
    _check_plain_data(images, labels)
    dev = images.device
    model.to(dev)
    gen = torch.Generator(device=dev).manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)  # PyTorch's default on a GPU, also on the CPU
    a, b = model.match.a_raw, model.match.b
    i, j = torch.triu_indices(batch, batch, 1, device=dev)
    synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(steps):
        x, y = plain_batch(images, labels, batch, p_occlude, gen)[:2]
        mean, var = _plain_forward(model, x)
        if var is None:
            z, kk = mean, 1
        else:
            eps = torch.randn(batch, k, mean.shape[1], generator=gen, device=dev)
            z, kk = (mean.unsqueeze(1) + var.sqrt().unsqueeze(1) * eps).reshape(batch * k, -1), k
        logit = (-F.softplus(a) * torch.cdist(z, z) + b).reshape(batch, kk, batch, kk)
        p = torch.sigmoid(logit).mean((1, 3))[i, j].clamp_min(TINY).log()
        q = torch.sigmoid(-logit).mean((1, 3))[i, j].clamp_min(TINY).log()
        same = (y[i] == y[j]).float()  # means over same / different pairs as weighted sums: no host sync
        pos, neg = (p * same).sum() / same.sum().clamp_min(1), (q * (1 - same)).sum() / (1 - same).sum().clamp_min(1)
        loss = -0.5 * (pos + neg)
        if var is not None:
            loss = loss + 2e-4 * 0.5 * (var + mean**2 - 1 - var.log()).sum(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    synchronize(dev)
    return (time.perf_counter() - t0) / steps


def layer_times(model: EmbeddingNet, batch: int = 256, repeats: int = 5, precision: str = "float32",
                device: str | torch.device = "cpu") -> list[dict]:
    """Each layer of ``model`` (body then head, in order) timed alone on ``device``: forward + backward of a batch.

    Every layer gets the input it sees in a training step (recorded from one forward pass of random
    images, in the training memory format of `hedgekit.training.fit.memory_format`, channels_last on
    CPU and CUDA); its input needs a gradient except for the first layer's. Returns one dict per layer:
    ``name`` (layer type -> output shape per image), ``seconds`` (median of ``repeats`` after a warm-up), ``flops`` (forward + backward,
    `torch.utils.flop_counter`; 0 for pooling, ReLU and reshapes) and ``gflops`` (their rate).
    With ``precision="bfloat16"`` the body's layers run as `fit` runs them then (`body_autocast`: bfloat16
    activations), the head in float32. The device is synchronised before each clock read (`synchronize`);
    ``model`` is left on ``device``.
    """
    batch, repeats = int(batch), int(repeats)
    if batch < 1 or repeats < 1:
        raise InputError(f"batch and repeats must be >= 1; got {batch} and {repeats}")
    dev = resolve_device(device)
    fmt = memory_format(dev)
    model = model.to(dev, memory_format=fmt).train()
    layers = [m for part in (model.body, model.head) for m in part.modules()
              if not list(m.children()) and not isinstance(m, nn.Identity)]
    x = torch.rand(batch, *model.input_shape, device=dev).to(memory_format=fmt)
    in_body = {id(m) for m in model.body.modules()}
    rows = []
    for i, layer in enumerate(layers):
        cast = body_autocast(precision if id(layer) in in_body else "float32", dev)
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
            synchronize(dev)
            t0 = time.perf_counter()
            step()
            synchronize(dev)
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
    device: str = "cpu"

    @property
    def vs_plain(self) -> float:
        return self.hedgekit / self.plain

    @property
    def vs_ceiling(self) -> float:
        return self.hedgekit / self.ceiling


def compare(kind: str, k: int, images: Tensor, labels: Tensor, steps: int = 30, repeats: int = 3,
            classes_per_batch: int = 32, per_class: int = 8, precision: str = "float32",
            device: str | torch.device = "cpu") -> Throughput:
    """hedgekit's `fit`, `plain_step` and `matmul_gflops` on the same network, batch and ``device``, interleaved
    ``repeats`` times after an untimed warm-up of both loops (`WARMUP_STEPS` steps each). ``precision`` is `fit`'s
    (`hedgekit.training.fit.TrainConfig.precision`); the plain loop and the ceiling stay float32.

    ``images``: uint8 (N, 28, 28N) training digits; ``labels`` (N,), on the CPU: `fit` gets them as
    `train --device` does, the plain loop gets one copy moved to the device before its first step.
    ``device``: "cpu", "cuda", "cuda:N", "auto" (`hedgekit.checks.resolve_device`). `fit`'s time is its
    `History.seconds`, read after its last step's logging, which reads the loss (a host synchronisation).
    Returns medians: images per second of both loops, the device's GFLOP/s and the FLOP ceiling in images
    per second.
    """
    dev = resolve_device(device)
    batch = classes_per_batch * per_class
    n_digits = images.shape[-1] // DIGIT
    on_device = images.to(dev), labels.to(dev)  # the plain loop's data, moved once
    ours, plain, rates = [], [], []
    for r in range(repeats + 1):  # repeat 0 is the warm-up
        n = steps if r else min(steps, WARMUP_STEPS)
        cfg = TrainConfig(steps=n, classes_per_batch=classes_per_batch, per_class=per_class, k=k, log_every=10**9,
                          precision=precision)
        model = build_model(kind, n_digits, 2)
        hist = fit(model, images, labels, cfg, seed=r, device=dev, progress=False, augment=random_occlusion(0.2))
        s_plain = plain_step(build_model(kind, n_digits, 2).train(), *on_device, batch, k, n, seed=r)
        if r:
            ours.append(batch * steps / hist.seconds)
            plain.append(batch / s_plain)
            rates.append(matmul_gflops(device=dev))
    gflops = statistics.median(rates)
    ceiling = gflops * 1e9 / train_flops_per_image(build_model(kind, n_digits, 2))
    return Throughput(kind, k, precision, statistics.median(ours), statistics.median(plain), ceiling, gflops, ours,
                      plain, str(dev))


# Per-step op counts (`ops_per_step`): each trainer on small synthetic uint8 data, the plain loop beside it where
# one exists (`plain_step` covers point and MoG-1 pair losses).
OPS_TRAINERS = ("point", "hib-k4", "hib-k8", "pn", "spe", "triplet", "triplet-semihard")


def ops_per_step(trainer: str, device: str | torch.device = "cpu", n_images: int = 1200):
    """(hedgekit's, the plain loop's or None) `hedgekit.opcount.StepCounts` per training step of ``trainer`` (one of
    `OPS_TRAINERS`), at the batch sizes the kit trains with (256-image pair batches, 32 x 10-image episodes, 18 x 4
    triplet batches), counted on ``device`` on random uint8 two-digit images. On the CPU the step is counted as a
    GPU runs it (`hedgekit.hardware.as_launch_bound`): every dispatched op is then a kernel launch there."""
    if trainer not in OPS_TRAINERS:
        raise InputError(f"trainer must be one of {OPS_TRAINERS}; got {trainer!r}")
    dev = resolve_device(device)
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (n_images, DIGIT, 2 * DIGIT), dtype=torch.uint8, generator=gen)
    labels = torch.randperm(n_images, generator=gen) % 40  # 40 classes of equal size: 32-class batches and episodes
    kind, _, k = trainer.partition("-k")
    quiet = dict(device=dev, progress=False, augment=random_occlusion(0.2))
    runs = {
        "point": lambda n: fit(build_model("point", 2, 2), images, labels, TrainConfig(steps=n, k=1, log_every=10**9),
                               **quiet),
        "hib": lambda n: fit(build_model("hib", 2, 2), images, labels, TrainConfig(steps=n, k=int(k or 1),
                                                                               log_every=10**9), **quiet),
        "pn": lambda n: fit_episodic(build_model("point", 2, 2), None, images, labels,
                                     EpisodicConfig(steps=n, log_every=10**9), **quiet),
        "spe": lambda n: fit_episodic(build_model("hib", 2, 2), SPE(5, 2), images, labels,
                                      EpisodicConfig(steps=n, log_every=10**9), **quiet),
        "triplet": lambda n: fit_triplets(build_model("het", 2, 4), images, labels,
                                          TripletConfig(steps=n, log_every=10**9), **quiet),
        # semi-hard mining: the shipped triplet recipes' (`hedgekit.zoo.specs.PRESETS`)
        "triplet-semihard": lambda n: fit_triplets(
            build_model("het", 2, 4), images, labels, TripletConfig(steps=n, mining="semi_hard", log_every=10**9),
            **quiet),
    }
    plain = None
    if kind in ("point", "hib"):
        on_device = images.to(dev), labels.to(dev)
        plain = step_counts(lambda n: plain_step(build_model(kind, 2, 2).train(), *on_device, 256, int(k or 1), n))
    with as_launch_bound() if dev.type == "cpu" else contextlib.nullcontext():
        ours = step_counts(runs[kind])
    return ours, plain


def ops_line(trainer: str, ours, plain) -> str:
    """One line a script can read: ``ops <trainer>: hedgekit N/step, plain M/step, hedgekit/plain R; host syncs S``
    (``plain -``, ``hedgekit/plain -`` where the trainer has no plain loop)."""
    ratio = f"{ours.launches / plain.launches:.2f}" if plain else "-"
    plain_text = f"{plain.launches:.0f}/step" if plain else "-"
    syncs = ", ".join(f"{op} {n:g}" for op, n in ours.sync_ops.items())
    return (f"ops {trainer}: hedgekit {ours.launches:.0f}/step, plain {plain_text}, hedgekit/plain "
            f"{ratio}; host syncs {ours.syncs:g}" + (f" ({syncs})" if syncs else ""))


def _per_step(run, short: int, long: int) -> float:
    """Seconds per step of ``run(steps) -> seconds`` over the steps a long run has beyond a short one: set-up,
    warm-up steps and a capture occur in both and cancel."""
    return max(run(long) - run(short), 0.0) / (long - short)


def captured_step(kind: str, k: int, images: Tensor, labels: Tensor, steps: int = 30,
                  device: str | torch.device = "cuda") -> float:
    """Seconds per step of `hedgekit.training.captured.fit_captured` (the step replayed from one CUDA graph) for the
    bench's network and batch (point or MoG-1, 32 x 8 images, HIB App. A occlusion) on ``device``; the warm-up
    and the capture are cancelled out by timing a run of ``steps`` more steps than a short one."""
    dev = resolve_device(device)

    def run(n: int) -> float:
        cfg = TrainConfig(steps=n, k=k, log_every=10**9)
        return fit_captured(build_model(kind, images.shape[-1] // DIGIT, 2), images, labels, cfg, device=dev,
                            augment=random_occlusion(0.2), progress=False).seconds

    return _per_step(run, WARMUP + 2, WARMUP + 2 + steps)


def seeds_step(n_seeds: int, images: Tensor, labels: Tensor, steps: int = 30, k: int = 8,
               device: str | torch.device = "cpu") -> float:
    """Seconds per step of ``n_seeds`` MoG-1 seeds (the bench's batch per seed: 32 x 8 images, K = ``k``, HIB App. A
    occlusion) on ``device``: `hedgekit.training.seeds.fit_seeds` training them as one model, or for
    ``n_seeds=1`` `hedgekit.training.fit.fit` training one, the run a seed costs without stacking. Each is warmed
    up by a first untimed run, and set-up cancels out (a run of ``steps`` more steps than a short one)."""
    dev = resolve_device(device)
    n_digits = images.shape[-1] // DIGIT

    def run(n: int) -> float:
        cfg = TrainConfig(steps=n, k=k, log_every=10**9)
        if n_seeds == 1:
            return fit(build_model("hib", n_digits, 2), images, labels, cfg, device=dev, progress=False,
                       augment=random_occlusion(0.2)).seconds
        models = [build_model("hib", n_digits, 2) for _ in range(n_seeds)]
        return fit_seeds(models, list(range(n_seeds)), images, labels, cfg, device=dev,
                         augment=random_occlusion(0.2), progress=False)[0].seconds

    run(2)  # warm-up: kernels chosen, memory pools filled
    return _per_step(run, 2, 2 + steps)
