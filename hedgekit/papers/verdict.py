"""The computed "what matched, what did not, and why" section that ends every HIB notebook.

A :class:`Claim` pairs one statement of the paper with the number(s) the notebook
just produced, a verdict and a reason. Nothing here is frozen prose: every number
and every "why" is formatted from the arguments, e.g. "within the repetition noise"
is only said when |ours - paper| < 2 std of our repetitions, and "variance
collapse" only when the measured corrupt/clean variance ratio is small.

    v = Verdict("04 known unknowns", checkpoints=S.checkpoints)
    v.add("HIB beats point on corrupt KNN (Table 1)", paper="0.760 vs 0.583", ours="0.41 vs 0.30",
          matched=True)
    md = v.markdown()
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

__all__ = ["Claim", "Verdict", "PAPER_STEPS", "fmt", "training_context", "models_paragraph", "collapse_reason", "noise_reason",
           "binomial_se_diff", "closeness"]

PAPER_STEPS = 500_000  # HIB sec. 4.1: batch 128, 500k training iterations
VAR_RATIO_OK = 2.0  # below this corrupt/clean variance ratio, ellipses barely grow on corruption


def fmt(x, digits: int = 3, signed: bool = False) -> str:
    """Number for prose: NaN -> 'n/a'."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return f"{x:+d}" if signed else str(x)
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


@dataclass
class Claim:
    claim: str  # the paper's statement (with its figure/table)
    paper: str  # the paper's number(s)
    ours: str  # our number(s)
    matched: bool | None  # None: inconclusive (e.g. the difference is within our noise)
    why: str = ""


def training_context(checkpoints: Sequence) -> str:
    """One paragraph: which presets/steps produced the numbers, compared with the paper's training."""
    if not checkpoints:
        return "No trained model was used."
    steps = sorted({int(getattr(c, "steps", 0) or 0) for c in checkpoints})
    presets = sorted({getattr(c, "preset", "?") for c in checkpoints})
    secs = [float(getattr(c, "train_seconds", 0.0) or 0.0) for c in checkpoints]
    step_txt = "/".join(f"{s:,}" for s in steps)
    frac = 100.0 * max(steps) / PAPER_STEPS if steps and max(steps) else float("nan")
    txt = (f"{len(checkpoints)} model(s), preset {', '.join(presets)}: {step_txt} training steps each "
           f"({fmt(frac, 2)}% of the paper's {PAPER_STEPS:,} iterations; hedgekit trains on all pairs of a "
           f"class-balanced batch instead), {sum(secs):.0f} CPU-seconds of training in total.")
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
    secs = sum(float(getattr(c, "train_seconds", 0.0) or 0.0) for c in checkpoints)
    txt = (f"{len(checkpoints)} model(s), preset {', '.join(presets)}: {'/'.join(f'{s:,}' for s in steps)} training "
           f"steps each, " + (f"{setup}, " if setup else "") +
           f"{secs:.0f} CPU-seconds of training in total (the paper: {paper_training}).")
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


def noise_reason(diff: float, std: float, what: str = "std of our repetitions") -> str:
    """'within the noise' when |diff| < 2 std (``what`` names the kind of standard deviation)."""
    if std is None or not math.isfinite(std) or not math.isfinite(diff) or std <= 0:
        return ""
    if abs(diff) < 2 * std:
        return f"|Δ| = {abs(diff):.3f} is within 2 {what} ({2 * std:.3f})"
    return ""


def binomial_se_diff(p1: float, n1: int, p2: float, n2: int) -> float:
    """Standard error of the difference of two accuracies measured on n1 and n2 items."""
    return math.sqrt(max(p1 * (1 - p1), 0.0) / max(n1, 1) + max(p2 * (1 - p2), 0.0) / max(n2, 1))


def closeness(diffs: Sequence[float], tol: float = 0.02) -> tuple[int, int]:
    """(number of finite diffs with |d| <= tol, number of finite diffs)."""
    d = [x for x in diffs if x is not None and math.isfinite(x)]
    return sum(abs(x) <= tol for x in d), len(d)


@dataclass
class Verdict:
    """Claims of one notebook, rendered as Markdown."""

    title: str
    checkpoints: Sequence = ()
    claims: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def add(self, claim: str, paper: str, ours: str, matched: bool | None, why: str = "") -> Claim:
        c = Claim(claim, paper, ours, None if matched is None else bool(matched), why)
        self.claims.append(c)
        return c

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def counts(self) -> tuple[int, int, int]:
        ok = sum(c.matched is True for c in self.claims)
        bad = sum(c.matched is False for c in self.claims)
        return ok, bad, sum(c.matched is None for c in self.claims)

    def context(self) -> str:
        """The paragraph on which models produced the numbers (HIB's `training_context`; papers override it)."""
        return training_context(self.checkpoints)

    def markdown(self) -> str:
        ok, bad, untested = self.counts
        lines = [f"### What matched, what did not, and why — {self.title}", "",
                 f"**{ok} matched, {bad} did not" + (f", {untested} inconclusive" if untested else "") + "** "
                 "(computed from the numbers above).", "", self.context(), ""]
        lines += ["| | paper's claim | paper | ours | why |", "|---|---|---|---|---|"]  # ✅ ❌ – (inconclusive)
        for c in self.claims:
            mark = {True: "✅", False: "❌", None: "–"}[c.matched]
            why = c.why or ("consistent with the paper" if c.matched else "")
            lines.append(f"| {mark} | {_cell(c.claim)} | {_cell(c.paper)} | {_cell(c.ours)} | {_cell(why)} |")
        if self.notes:
            lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:  # displays as Markdown in a notebook
        return self.markdown()


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")
