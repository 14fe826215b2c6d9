"""The prose that frames a verdict: numbers formatted for reasons (`fmt`), which models produced the numbers and how
their training compares with the paper's (`training_context`, `models_paragraph`, `training_seconds`), and two
diagnoses a reason may quote (`collapse_reason`, `binomial_se_diff`). Split from `hedgekit.papers.verdict`, which
uses them and re-exports them."""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Sequence

__all__ = ["PAPER_STEPS", "VAR_RATIO_OK", "fmt", "training_seconds", "training_context", "models_paragraph",
           "collapse_reason", "binomial_se_diff"]

PAPER_STEPS = 500_000  # HIB sec. 4.1: batch 128, 500k training iterations
VAR_RATIO_OK = 2.0  # below this corrupt/clean variance ratio, ellipses barely grow on corruption


def fmt(x, digits: int = 3, signed: bool = False) -> str:
    """Number for prose: NaN or inf (a Python, NumPy or torch scalar) -> 'n/a'."""
    if x is None or (isinstance(x, Real) and not isinstance(x, Integral) and not math.isfinite(x)):
        return "n/a"
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:+d}" if signed else str(x)
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def training_seconds(checkpoints: Sequence) -> str:
    """"N CPU-seconds of training in total" when every model trained on a CPU; otherwise the total split by
    device (``CheckpointRecord.device``, `hedgekit.zoo.train_spec`'s ``meta["device"]``): a GPU's seconds are
    wall time, possibly with other models sharing the card, so they are not CPU-seconds. A model whose device was
    not recorded (the shipped checkpoints) counts as trained on a CPU: the kit trained on nothing else then."""
    by_device: dict[str, list[float]] = {}
    for c in checkpoints:
        device = str(getattr(c, "device", "") or "cpu")
        device = "cpu" if device.startswith("cpu") else device
        by_device.setdefault(device, []).append(float(getattr(c, "train_seconds", 0.0) or 0.0))
    cpu = by_device.pop("cpu", [])
    if not by_device:
        return f"{sum(cpu):.0f} CPU-seconds of training in total"
    parts = [f"{sum(cpu):.0f} CPU-seconds of training for the {len(cpu)} trained on a CPU"] if cpu else []
    parts += [f"{sum(secs):.0f} s of wall time for the {len(secs)} trained on {device}"
              for device, secs in sorted(by_device.items())]
    return ", ".join(parts)


def training_context(checkpoints: Sequence) -> str:
    """One paragraph: which presets/steps produced the numbers, compared with the paper's training."""
    if not checkpoints:
        return "No trained model was used."
    steps = sorted({int(getattr(c, "steps", 0) or 0) for c in checkpoints})
    presets = sorted({getattr(c, "preset", "?") for c in checkpoints})
    step_txt = "/".join(f"{s:,}" for s in steps)
    frac = 100.0 * max(steps) / PAPER_STEPS if steps and max(steps) else float("nan")
    txt = (f"{len(checkpoints)} model(s), preset {', '.join(presets)}: {step_txt} training steps each "
           f"({fmt(frac, 2)}% of the paper's {PAPER_STEPS:,} iterations; hedgekit trains on all pairs of a "
           f"class-balanced batch instead), {training_seconds(checkpoints)}.")
    ks = sorted({int(c.k) for c in checkpoints if getattr(c, "k", None)})
    if ks:
        txt += f" HIB models drew K = {'/'.join(map(str, ks))} samples per input (the paper: 8)."
    if "fast" in presets:
        txt += (" FAST mode: these models are trained for seconds, so their absolute numbers are far below the "
                "paper's and differences between methods are mostly noise; run the notebook with FAST = False "
                "(paper preset) for the comparison that counts.")
    return txt


def models_paragraph(checkpoints: Sequence, paper_training: str, fast_note: str, setup: str = "") -> str:
    """One paragraph for papers whose training is not HIB's: how many models, which presets and steps, the
    CPU-seconds they took, beside ``paper_training``; ``setup`` (optional) says what was trained; ``fast_note``
    is added in FAST mode. `training_context` is HIB's version (it compares with HIB's 500k iterations)."""
    if not checkpoints:
        return "No trained model was used."
    steps = sorted({int(getattr(c, "steps", 0) or 0) for c in checkpoints})
    presets = sorted({getattr(c, "preset", "?") for c in checkpoints})
    txt = (f"{len(checkpoints)} model(s), preset {', '.join(presets)}: {'/'.join(f'{s:,}' for s in steps)} training "
           f"steps each, " + (f"{setup}, " if setup else "") +
           f"{training_seconds(checkpoints)} (the paper: {paper_training}).")
    return txt + " " + fast_note if "fast" in presets else txt


def collapse_reason(var_ratio: float, var_clean: float | None = None) -> str:
    """A reason string if the clean/corrupt variances show the collapse the design notes warn about."""
    if var_ratio is None or not math.isfinite(var_ratio):
        return "the model predicts no variance (point embedding)"
    if var_ratio < VAR_RATIO_OK:
        extra = f" (mean clean variance {var_clean:.2g})" if var_clean is not None else ""
        return (f"variance collapse: corrupt inputs get only {var_ratio:.2f}x the variance of clean ones{extra}, "
                "so eta barely separates them")
    return ""


def binomial_se_diff(p1: float, n1: int, p2: float, n2: int) -> float:
    """Standard error of the difference of two accuracies measured on n1 and n2 items."""
    return math.sqrt(max(p1 * (1 - p1), 0.0) / max(n1, 1) + max(p2 * (1 - p2), 0.0) / max(n2, 1))
