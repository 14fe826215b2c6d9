"""Training on several processes with `torch.distributed` (launch with ``torchrun``).

``torchrun --nproc_per_node=N -m hedgekit train ...`` starts N copies of the same command;
`init_from_env` joins them into one process group (gloo for CPU training, NCCL for CUDA,
chosen from the device) and the trainers (`hedgekit.training.fit.fit`,
`hedgekit.training.episodic.fit_episodic`, `hedgekit.training.triplets.fit_triplets`, all through
`hedgekit.training.loop.Loop`) then run unchanged:

* **Batches.** Every rank runs the same seeded sampler and augmentation, so every rank knows
  the whole global batch; rank r embeds only its contiguous share of it (`Context.share`).
  This is a rank-aware split of the sampled batch rather than a `DistributedSampler`: the
  all-pairs, episode and triplet losses need every pair of the *global* batch, and class-balanced
  batches keep their P x Q structure only when drawn whole.
* **Loss.** The shares' embeddings are gathered (`gather_embedding`, differentiable) and every
  rank computes the loss of the whole batch, so losses, mined triplets and Monte-Carlo samples
  are those of a single process with the same global batch. The gather's backward sums the
  gradient from every rank's (identical) loss, N times the single-process gradient of the
  rank's share; `DistributedDataParallel` averages over the N ranks, which gives back the
  single-process gradient of the whole batch. Modules trained beside the model on the gathered
  embeddings (`fit_episodic`'s SPE head) stay outside `DistributedDataParallel`: they start from
  rank 0's values (`broadcast`) and every rank computes the same gradient for them.
* **Outputs.** Logged rows are averaged across ranks (`Context.mean`); only rank 0
  (`Context.is_main`) shows progress bars, calls callbacks and writes checkpoints.

Results equal a single-process run up to float rounding: the convolutions see smaller
batches and the gradient is summed in a different order (docs/speed.md has the measurement).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn

from hedgekit.embedding import Embedding
from hedgekit.checks import resolve_device
from hedgekit.errors import InputError


@dataclass(frozen=True)
class Context:
    """Where this process sits: ``rank`` of ``world_size`` (1 without torch.distributed)."""

    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def bounds(self, n: int) -> np.ndarray:
        """(world_size + 1,) offsets splitting n items into contiguous shares (sizes differ by <= 1)."""
        if n < self.world_size:
            raise InputError(f"a batch of {n} items cannot be split over {self.world_size} processes")
        return np.concatenate([[0], np.cumsum([len(s) for s in np.array_split(np.arange(n), self.world_size)])])

    def share(self, n: int) -> slice:
        """This rank's contiguous share of a batch of n items."""
        b = self.bounds(n)
        return slice(int(b[self.rank]), int(b[self.rank + 1]))

    def mean(self, row: dict) -> dict:
        """The numeric values of ``row`` averaged over ranks (unchanged for a single process)."""
        if not self.active:
            return row
        keys = [k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step"]
        t = torch.tensor([float(row[k]) for k in keys], dtype=torch.float64)
        dist.all_reduce(t)
        return {**row, **dict(zip(keys, (t / self.world_size).tolist()))}


def context() -> Context:
    """The current process group's rank and size; a single process if torch.distributed is not running."""
    if dist.is_available() and dist.is_initialized():
        return Context(dist.get_rank(), dist.get_world_size())
    return Context()


def init_from_env(device: str | torch.device | None = "cpu") -> Context:
    """Join the process group ``torchrun`` describes (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``,
    ``MASTER_ADDR``, ``MASTER_PORT``); a no-op for a plain single process.

    The backend follows the device: NCCL for CUDA (each rank on GPU ``LOCAL_RANK``), gloo otherwise.
    """
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or (dist.is_available() and dist.is_initialized()):
        return context()
    if not dist.is_available():
        raise InputError("WORLD_SIZE > 1 but this torch build has no torch.distributed")
    cuda = resolve_device(device).type == "cuda"
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")
    return context()


def wrap(model: nn.Module, ctx: Context, find_unused_parameters: bool = False) -> nn.Module:
    """``model`` in `DistributedDataParallel` when ``ctx`` spans several processes (rank 0's
    weights are broadcast to all); ``model`` itself otherwise."""
    if not ctx.active:
        return model
    device = next(model.parameters()).device
    ids = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids, find_unused_parameters=find_unused_parameters)


def broadcast(module: nn.Module, ctx: Context) -> None:
    """Give ``module``'s parameters and buffers rank 0's values on every rank, as `wrap` does for the model (for
    modules trained beside it, outside `DistributedDataParallel`: `hedgekit.training.loop.Loop`'s heads)."""
    if ctx.active:
        for tensor in [*module.parameters(), *module.buffers()]:
            dist.broadcast(tensor.data, 0)


class _Gather(torch.autograd.Function):
    """All ranks' (n_r, F) shares concatenated in rank order; backward sums the gradient over ranks."""

    @staticmethod
    def forward(ctx, x: Tensor, bounds: np.ndarray, rank: int) -> Tensor:
        sizes = np.diff(bounds)
        padded = x.new_zeros((int(sizes.max()), *x.shape[1:]))
        padded[: len(x)] = x
        parts = [torch.empty_like(padded) for _ in sizes]
        dist.all_gather(parts, padded.contiguous())
        ctx.span = (int(bounds[rank]), int(bounds[rank + 1]))
        return torch.cat([p[: int(n)] for p, n in zip(parts, sizes)])

    @staticmethod
    def backward(ctx, grad: Tensor):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        lo, hi = ctx.span
        return grad[lo:hi], None, None


def gather_embedding(emb: Embedding, ctx: Context, n: int) -> Embedding:
    """The whole batch of ``n`` embeddings from every rank's share (``emb`` is this rank's), differentiable."""
    if not ctx.active:
        return emb
    b, c, d = emb.mean.shape
    fields = [emb.mean.reshape(b, -1), emb.var.reshape(b, -1), emb.weights]
    if emb.uncertainty is not None:
        fields.append(emb.uncertainty[:, None])
    whole = _Gather.apply(torch.cat(fields, 1), ctx.bounds(n), ctx.rank)
    mean, var, weights, *unc = whole.split([c * d, c * d, c] + [1] * (len(fields) - 3), 1)
    return Embedding(mean.reshape(n, c, d), var.reshape(n, c, d), weights, unc[0][:, 0] if unc else None)


def embed_share(net: nn.Module, x: Tensor, ctx: Context) -> Embedding:
    """Embed a whole batch ``x``: this rank embeds its share with ``net`` and the shares are gathered."""
    return gather_embedding(net(x[ctx.share(len(x))]), ctx, len(x))
