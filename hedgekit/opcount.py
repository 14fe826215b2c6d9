"""What a GPU pays for in one training step, counted on any device (`python -m hedgekit bench --ops`).

A small network at batch 256 is launch-bound on a GPU (design.md section 7): a step's time is about the number of
kernels it launches times a few microseconds, plus every wait of the host for the device. Both can be counted on
the CPU, before a GPU is at hand:

* **dispatched ops**: every ATen operator that reaches a backend kernel, seen by a
  `torch.utils._python_dispatch.TorchDispatchMode` (`OpCounter`). On a GPU each is (at least) one kernel launch;
  views, metadata queries and uninitialised allocations (`VIEW_OPS`) launch nothing and are counted apart;
* **host synchronisations**: the operators that make the host wait for the device's result (`SYNC_OPS`:
  `.item()`/`bool(t)`/`float(t)` reach ``aten._local_scalar_dense``; boolean-mask indexing and ``nonzero`` need
  the output's size; ``masked_select`` and ``unique`` likewise), and copies to the CPU, which read the result.

`step_counts` counts a trainer over two run lengths and reports the difference per step, so set-up (moving the data
and model, building the sampler) and the log steps (step 0 and the last, where the training loop reads the loss on
purpose: `hedgekit.training.loop.optimise`) cancel out: what is left is the cost of an ordinary step.
"""
from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from hedgekit.errors import InputError

SYNC_OPS = frozenset({
    "aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.nonzero_numpy", "aten.unique_dim",
    "aten._unique2", "aten.unique_consecutive", "aten.repeat_interleave",
})
# Operators that launch no kernel on any backend: views of existing memory, metadata queries, uninitialised allocations.
VIEW_OPS = frozenset({
    "aten.view", "aten._unsafe_view", "aten.reshape", "aten.t", "aten.transpose", "aten.permute", "aten.expand",
    "aten.unsqueeze", "aten.squeeze", "aten.slice", "aten.select", "aten.as_strided", "aten.alias", "aten.detach",
    "aten.unbind", "aten.split", "aten.split_with_sizes", "aten.chunk", "aten.diagonal", "aten.unfold",
    "aten.lift_fresh", "aten._reshape_alias", "aten.sym_size", "aten.sym_stride", "aten.sym_numel",
    "aten.sym_storage_offset", "aten.is_same_size", "aten._has_compatible_shallow_copy_type", "aten.empty",
    "aten.empty_strided", "aten.empty_like", "aten.new_empty", "aten.new_empty_strided", "aten.view_as_real",
    "aten.view_as_complex", "aten.result_type", "aten.is_nonzero",
})


def _name(func) -> str:
    """'aten.add' for aten.add.Tensor: the overload packet's qualified name."""
    packet = getattr(func, "overloadpacket", func)
    return f"{packet._qualified_op_name.replace('::', '.')}" if hasattr(packet, "_qualified_op_name") else str(packet)


def _to_host(func, args, kwargs) -> bool:
    """True for a copy whose destination is the CPU and whose source is not (it reads the device's result)."""
    name = _name(func)
    if name == "aten._to_copy":
        dev = kwargs.get("device")
        return dev is not None and torch.device(dev).type == "cpu" and args[0].device.type != "cpu"
    if name == "aten.copy_":
        return args[0].device.type == "cpu" and args[1].device.type != "cpu"
    return False


def _optimiser_counter_read(name: str, depth: int = 8) -> bool:
    """True for a scalar read made by `torch.optim` (Adam's step counter: a host tensor on every device unless the
    optimiser is capturable or fused), which waits for nothing; the CPU cannot tell it from a device read."""
    if name != "aten._local_scalar_dense":
        return False
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return False
        if f"torch{os.sep}optim{os.sep}" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


class OpCounter(TorchDispatchMode):
    """Counts the ATen operators dispatched inside the ``with`` block, by name (``ops``), and the host
    synchronisations among them (``syncs``): `SYNC_OPS` (bar the optimiser's host-side step counters), copies to
    the CPU from another device, and boolean-mask indexing (``aten.index`` or ``index_put_`` with a bool index,
    which runs ``nonzero`` inside the kernel)."""

    def __init__(self):
        super().__init__()
        self.ops: Counter = Counter()
        self.syncs: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        self.ops[name] += 1
        if (name in SYNC_OPS and not _optimiser_counter_read(name)) or _to_host(func, args, kwargs) or (
                name in ("aten.index", "aten.index_put_", "aten.index_put") and any(
                    isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (args[1] or ()) if i is not None)):
            self.syncs[name] += 1
        return func(*args, **kwargs)

    @property
    def launches(self) -> int:
        """Dispatched ops that run a kernel (all but `VIEW_OPS`)."""
        return sum(n for op, n in self.ops.items() if op not in VIEW_OPS)


@dataclass
class StepCounts:
    """Per-step means over the extra steps of the longer run: ``launches`` (ops that run a kernel), ``views``
    (metadata-only ops), ``syncs`` (host synchronisations) and the per-op breakdown of both."""

    launches: float
    views: float
    syncs: float
    ops: dict
    sync_ops: dict


def step_counts(run: Callable[[int], None], short: int = 4, long: int = 8) -> StepCounts:
    """Counts per training step of ``run(steps)``, which trains a fresh model for ``steps`` steps: the counts of
    ``run(long)`` less those of ``run(short)``, divided by ``long - short``. Set-up and the first and last
    (log) steps occur once in both runs and cancel."""
    if not (isinstance(short, int) and isinstance(long, int) and 1 <= short < long):
        raise InputError(f"need integers 1 <= short < long; got short={short!r}, long={long!r}")
    counted = []
    for steps in (short, long):
        with OpCounter() as c:
            run(steps)
        counted.append(c)
    a, b = counted
    n = long - short
    ops = {op: (b.ops[op] - a.ops[op]) / n for op in b.ops if b.ops[op] != a.ops[op]}
    syncs = {op: (b.syncs[op] - a.syncs[op]) / n for op in b.syncs if b.syncs[op] != a.syncs[op]}
    views = sum(v for op, v in ops.items() if op in VIEW_OPS)
    return StepCounts(sum(ops.values()) - views, views, sum(syncs.values()), ops, syncs)
