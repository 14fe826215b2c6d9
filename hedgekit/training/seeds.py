"""S seeds of one recipe trained as one model: seeds as a batch dimension.

Every seeded claim needs at least 3 trained seeds, and a LeNet at batch 256 fills a small part of a GPU, whose
step is paid for by its kernel launches (`hedgekit.hardware.launch_bound`). `fit_seeds` trains S models of one
pair recipe (`hedgekit.training.fit.TrainConfig`, all-pairs batches) in the launches of about one:

* the S models' weights are stacked along a new first axis (`torch.func.stack_module_state`) and one forward
  pass runs all S on their own batches (`torch.func.vmap` over `torch.func.functional_call`: batched
  convolutions and matrix products);
* the loss is HIB eq. 8 over all pairs of each seed's batch (eq. 5's Monte-Carlo match probability, positive and
  negative pairs weighted 1:1, KL weight 2 beta per image: `hedgekit.methods.hib.hib_batch_loss`), written over
  the (S, BK, BK) sample distances at once; the loss is the sum of the S seeds' losses, so each seed's weights get
  its own gradient;
* one Adam over the stacked weights is S independent Adams: every Adam operation is elementwise.

Each seed keeps what `fit` would give it: its own initialisation (the caller's model), its own batches and
occlusion draws (`ClassBalancedSampler` and a numpy generator seeded with its seed), and its own Monte-Carlo noise
(a CPU generator seeded with its seed, as `fit` draws it on the CPU). Float rounding differs from `fit`'s (another
summation order), and Adam lets such differences grow over a run as between any two float orders, so a seed
trained here is another draw of that seed's training, not a bit copy of it; tests/training/test_seeds.py states
the tolerances. Point and single-Gaussian (MoG-1) models, soft losses, all-pairs batches.
"""
from __future__ import annotations

import copy
import time
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from hedgekit.checks import check_training_set, deferred_value_checks, resolve_device
from hedgekit.data.samplers import ClassBalancedSampler
from hedgekit.errors import InputError
from hedgekit.methods.contrastive import TINY
from hedgekit.nets import EmbeddingNet
from hedgekit.training.batches import DeviceImages
from hedgekit.training.fit import TrainConfig
from hedgekit.training.loop import History, lr_factor

Augment = Callable[[Tensor, np.random.Generator], Tensor]


class _Outputs(nn.Module):
    """A model's embedding as plain tensors (mean, var of its one component) and its match's a, b: what `vmap`
    can return."""

    def __init__(self, net: EmbeddingNet):
        super().__init__()
        self.net = net

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        emb = self.net(x)
        return emb.mean[:, 0], emb.var[:, 0], self.net.match.a, self.net.match.b


def seeds_loss(mean: Tensor, var: Tensor, same: Tensor, a: Tensor, b: Tensor, eps: Tensor | None,
               beta: float) -> tuple[Tensor, Tensor]:
    """HIB eq. 8 over all pairs i < j of each of S batches at once.

    Args:
        mean, var: (S, B, D) each seed's embeddings (var unused for point models: ``eps`` None).
        same: (S, B, B) bool, True where images i and j of a seed's batch match.
        a, b: (S,) each seed's match slope and offset (HIB eq. 2).
        eps: (S, B, K, D) standard-normal noise (HIB eq. 5's K samples), or None for point models (K = 1).
        beta: the KL weight; each image's KL counts 2 beta, as in `hedgekit.methods.hib.hib_batch_loss`.

    Returns (loss (S,), nll (S, 2)): each seed's loss and its mean NLL of matching and of non-matching pairs.
    """
    s, n, dim = mean.shape
    z = mean.unsqueeze(2) if eps is None else mean.unsqueeze(2) + var.sqrt().unsqueeze(2) * eps  # (S, B, K, D)
    k = z.shape[2]
    d = torch.cdist(z.reshape(s, n * k, dim), z.reshape(s, n * k, dim)).view(s, n, k, n, k)
    logit = -a.view(s, 1, 1, 1, 1) * d + b.view(s, 1, 1, 1, 1)
    upper = torch.ones(n, n, dtype=torch.bool, device=mean.device).triu(1)
    pos, neg = (same & upper).to(mean.dtype), (~same & upper).to(mean.dtype)
    log_p = torch.sigmoid(logit).mean((2, 4)).clamp_min(TINY).log()  # (S, B, B)
    log_q = torch.sigmoid(-logit).mean((2, 4)).clamp_min(TINY).log()
    nll = torch.stack([-(log_p * pos).sum((1, 2)) / pos.sum((1, 2)), -(log_q * neg).sum((1, 2)) / neg.sum((1, 2))], 1)
    loss = 0.5 * nll.sum(1)
    if eps is not None and beta:
        loss = loss + 2 * beta * (0.5 * (var + mean**2 - 1.0 - var.log()).sum(-1)).mean(1)
    return loss, nll


def _check(models: Sequence[EmbeddingNet], seeds: Sequence[int], cfg: TrainConfig) -> None:
    if len(models) != len(seeds) or not models:
        raise InputError(f"need one model per seed, at least one; got {len(models)} models and {len(seeds)} seeds")
    if len(set(seeds)) != len(seeds):
        raise InputError(f"seeds must differ (each seed is one training); got {list(seeds)}")
    configs = {repr(m.config) for m in models}
    if len(configs) != 1:
        raise InputError(f"all models must be built alike (one recipe); got {len(configs)} different configs")
    config = models[0].config
    if config["kind"] not in ("point", "hib") or config.get("components", 1) != 1:
        raise InputError("fit_seeds trains point and single-Gaussian (MoG-1) models; train mixtures with fit")
    if cfg.loss != "soft" or cfg.pairing != "all" or cfg.precision != "float32":
        raise InputError("fit_seeds takes the soft loss on all pairs in float32 (TrainConfig's defaults); got "
                         f"loss={cfg.loss!r}, pairing={cfg.pairing!r}, precision={cfg.precision!r}")


def fit_seeds(models: Sequence[EmbeddingNet], seeds: Sequence[int], images: Tensor, labels: Tensor,
              cfg: TrainConfig, device: str | torch.device | None = "cpu", augment: Augment | None = None,
              progress: bool = True) -> list[History]:
    """Train ``models`` (one per seed, built alike and initialised by the caller) in place, seed s on the batches,
    occlusions and Monte-Carlo noise `hedgekit.training.fit.fit` would draw for seed s; all in one stacked model
    (module docstring). Returns one `History` per seed (step, loss, lr, a, b, nll_pos, nll_neg at the log steps).

    A non-finite loss or weight of any seed at a log step stops training with a `FloatingPointError` naming the
    step and the seed.
    """
    from tqdm.auto import tqdm

    _check(models, seeds, cfg)
    for m in models:
        check_training_set(images, labels, m)
    dev = resolve_device(device)
    for m in models:
        m.to(dev).train()
    params, buffers = torch.func.stack_module_state([_Outputs(m) for m in models])
    base = copy.deepcopy(_Outputs(models[0])).to("meta")
    point = models[0].config["kind"] == "point"

    def one(p, b, x):
        return torch.func.functional_call(base, (p, b), (x,))

    forward = torch.func.vmap(one)
    data = DeviceImages(images, dev)
    labels_dev = labels.to(dev)
    labels_np = labels.cpu().numpy()
    samplers = [ClassBalancedSampler(labels_np, cfg.classes_per_batch, cfg.per_class, s) for s in seeds]
    rngs = [np.random.default_rng(s) for s in seeds]
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    weights = list(params.values())
    opt = torch.optim.Adam(weights, lr=cfg.lr, weight_decay=cfg.weight_decay,
                           **({"fused": True} if dev.type == "cuda" else {"foreach": True}))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: lr_factor(i, cfg.steps, cfg.warmup))
    hists, t0 = [History() for _ in seeds], time.perf_counter()
    for step in tqdm(range(cfg.steps), desc=f"train {len(seeds)} seeds", disable=not progress, leave=False):
        idx = [data.indices(next(sampler)) for sampler in samplers]
        x = torch.stack([data.batch(i, augment, rng) for i, rng in zip(idx, rngs)])
        y = torch.stack([labels_dev[i] for i in idx])
        with deferred_value_checks():
            mean, var, a, b = forward(params, buffers, x)
            eps = None if point else torch.stack([
                torch.randn((*mean.shape[1:2], cfg.k, mean.shape[-1]), generator=g).to(dev) for g in gens])
            loss, nll = seeds_loss(mean, var, y.unsqueeze(2) == y.unsqueeze(1), a, b, eps, cfg.beta)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        sched.step()
        if step % cfg.log_every == 0 or step == cfg.steps - 1:
            _log(hists, seeds, step, loss.detach(), nll.detach(), a.detach(), b.detach(), sched.get_last_lr()[0],
                 weights)
    seconds = time.perf_counter() - t0
    for i, m in enumerate(models):
        m.load_state_dict({name.removeprefix("net."): w[i].detach() for name, w in params.items()})
        m.eval()
        hists[i].seconds = seconds
    return hists


def _log(hists, seeds, step, loss, nll, a, b, lr, weights) -> None:
    """One history row per seed; a non-finite loss or weight stops training naming the step and the seed."""
    weights_finite = torch.stack([torch.isfinite(w.detach().reshape(len(seeds), -1)).all(1) for w in weights])
    finite = torch.isfinite(loss) & weights_finite.all(0)
    if not bool(finite.all()):
        bad = [s for s, ok in zip(seeds, finite.tolist()) if not ok]
        raise FloatingPointError(f"training diverged at step {step} (seed {bad[0]}); lower the learning rate")
    for i, h in enumerate(hists):
        h.rows.append({"step": step, "loss": float(loss[i]), "lr": lr, "a": float(a[i]), "b": float(b[i]),
                       "nll_pos": float(nll[i, 0]), "nll_neg": float(nll[i, 1])})
