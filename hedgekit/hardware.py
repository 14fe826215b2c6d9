"""What the machine offers that changes how hedgekit trains: native bfloat16, the CPU features behind it, the
device a model trained on, as its checkpoint records it (`device_description`), and full float32 on a GPU where
a result must match the CPU's (`ieee_float32`).

A bfloat16 body (`hedgekit.training.fit.body_autocast`) pays only where the hardware computes in bfloat16:
CPUs with AVX512-BF16 or AMX, and CUDA GPUs of compute capability 8.0 or later. Elsewhere PyTorch emulates
bfloat16 and a step is several times slower than float32 (docs/speed.md has the measurements), so
`resolve_precision` falls back to float32 there with a one-line notice.

``HEDGEKIT_NATIVE_BF16=1`` (or ``0``) overrides the detection, e.g. on a CPU whose flags this module cannot read.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import platform
import warnings
from pathlib import Path

import torch

__all__ = ["BF16_FLAGS", "as_launch_bound", "cpu_flags", "cpu_summary", "device_description", "launch_bound",
           "native_bfloat16", "resolve_precision"]

BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # the x86 flags of a CPU that computes bfloat16 natively
_SHOWN = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")  # what `bench` prints beside its figures
_CPUINFO = Path("/proc/cpuinfo")


def cpu_flags(cpuinfo: Path = _CPUINFO) -> frozenset[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (Linux); empty where that file does not exist."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):  # x86, ARM
            return frozenset(value.split())
    return frozenset()


def cpu_summary(cpuinfo: Path = _CPUINFO) -> str:
    """One line for `bench`: the CPU's relevant flags (+ present, - absent) and whether bfloat16 is native."""
    flags = cpu_flags(cpuinfo)
    marks = " ".join(("+" if f in flags else "-") + f for f in _SHOWN) if flags else "flags unknown"
    native = "native" if native_bfloat16("cpu", cpuinfo) else "emulated (slower than float32)"
    if os.environ.get("HEDGEKIT_NATIVE_BF16", "").strip() in ("0", "1"):
        native += " (set by HEDGEKIT_NATIVE_BF16)"
    return f"CPU {platform.machine() or '?'}: {marks}; torch kernels {torch.backends.cpu.get_cpu_capability()}; bfloat16 {native}"


def native_bfloat16(device: str | torch.device = "cpu", cpuinfo: Path = _CPUINFO) -> bool:
    """True where ``device`` computes bfloat16 in hardware.

    CUDA: ``torch.cuda.is_bf16_supported()``. CPU: one of `BF16_FLAGS` in the CPU's flags (Linux x86); a CPU
    whose flags cannot be read counts as emulating (the safe answer: float32 is never the slow choice).
    Other devices (MPS): not native. ``HEDGEKIT_NATIVE_BF16`` = 1 / 0 overrides the answer.
    """
    env = os.environ.get("HEDGEKIT_NATIVE_BF16", "").strip()
    if env in ("0", "1"):
        return env == "1"
    kind = torch.device(device).type
    if kind == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if kind == "cpu":
        return bool(cpu_flags(cpuinfo) & set(BF16_FLAGS))
    return False


def resolve_precision(precision: str, device: str | torch.device = "cpu") -> str:
    """The precision to train in: ``precision``, except ``"bfloat16"`` on a device that only emulates it,
    which becomes ``"float32"`` with a one-line warning (the result is the same model, trained faster)."""
    if precision == "bfloat16" and not native_bfloat16(device):
        warnings.warn(f"bfloat16 is emulated on this {torch.device(device).type} (no AVX512-BF16 / AMX): training "
                      "in float32 instead, which is faster here (set HEDGEKIT_NATIVE_BF16=1 to force bfloat16)",
                      stacklevel=2)
        return "float32"
    return precision


def device_description(device: str | torch.device) -> str:
    """``device`` (resolved: `hedgekit.checks.resolve_device`) as a checkpoint records it: its type ("cpu", "mps"),
    or for CUDA its index and card, e.g. "cuda:0 (NVIDIA H100 80GB HBM3)" (a bare "cuda" is the current device)."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return dev.type
    index = torch.cuda.current_device() if dev.index is None else dev.index
    return f"cuda:{index} ({torch.cuda.get_device_name(index)})"


@contextlib.contextmanager
def ieee_float32(device: str | torch.device):
    """On a CUDA device, convolutions and matrix products in full float32 (no TensorFloat-32) inside the block;
    elsewhere nothing changes. The previous settings are restored on exit, also after an error.

    cuDNN convolutions default to TF32 on Ampere and later GPUs, which rounds every operand to a 10-bit mantissa
    (relative error up to 2^-11 ~ 5e-4, against float32's 6e-8): Table 1's metrics recorded in float32 on the CPU
    would not be reproduced within 1e-4 (`hedgekit.evaluation.embedded.embed_set`), and a matmul ceiling would not
    be a float32 one (`hedgekit.bench.matmul_gflops`). Uses the per-backend ``fp32_precision`` where it exists
    (torch >= 2.9), else ``allow_tf32``.
    """
    if torch.device(device).type != "cuda":
        yield
        return
    conv, mm = getattr(torch.backends.cudnn, "conv", None), torch.backends.cuda.matmul
    if conv is not None and hasattr(mm, "fp32_precision"):
        flags, full = ((conv, "fp32_precision"), (mm, "fp32_precision")), "ieee"
    else:
        flags, full = ((torch.backends.cudnn, "allow_tf32"), (mm, "allow_tf32")), False
    before = [getattr(obj, name) for obj, name in flags]
    for obj, name in flags:
        setattr(obj, name, full)
    try:
        yield
    finally:
        for (obj, name), value in zip(flags, before):
            setattr(obj, name, value)


_AS_LAUNCH_BOUND = contextvars.ContextVar("as_launch_bound", default=False)


def launch_bound(device: str | torch.device) -> bool:
    """Whether a training step on ``device`` is paid for by its kernel launches rather than its arithmetic.

    True on CUDA and MPS: a LeNet at batch 256 reaches about 1% of an H100's FLOP ceiling, so a step costs about
    its number of kernels (design.md section 7) and the kit takes the path with fewer, larger ones: the all-pairs
    loss over the whole pair matrix in one block (`hedgekit.methods.all_pairs.all_pairs_nll`), masked sums instead
    of boolean selections (`hedgekit.methods.contrastive.masked_sum`), fused Adam (`hedgekit.training.loop.optimise`).
    False on the CPU, where arithmetic is what costs and the path every recorded result was trained with stays.
    Inside `as_launch_bound` it is True on every device.
    """
    return _AS_LAUNCH_BOUND.get() or torch.device(device).type in ("cuda", "mps")


@contextlib.contextmanager
def as_launch_bound():
    """Inside the block, `launch_bound` is True on every device: the CPU runs the step a GPU runs, so its kernels
    and host synchronisations can be counted without a GPU (`hedgekit.opcount`, `bench --ops`)."""
    token = _AS_LAUNCH_BOUND.set(True)
    try:
        yield
    finally:
        _AS_LAUNCH_BOUND.reset(token)
