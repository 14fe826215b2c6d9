"""The computed "what matched, what did not, and why" section that ends every reproduction notebook.

A :class:`Claim` pairs one statement of the paper with the number(s) the notebook
just produced, an outcome and a reason. Nothing here is frozen prose: every number
and every "why" is formatted from the arguments.

Outcomes (one vocabulary everywhere, `OUTCOMES`): a claim is **matched**, **not matched** or
**inconclusive** (our noise cannot tell). A statement that cannot fail at kit scale (true by
construction, or a tolerance wider than anything the numbers can do) is a **sanity check**
(`Verdict.sanity`): it passes or fails, is listed apart in the Markdown and is never counted in
`Verdict.counts`.

A claim with a size ("+2.3 mAP") is decided on the effect size with an interval, not on its sign
(`effect_verdict`); a paired comparison (the same model on the same queries, e.g. a gallery with and
without cleaning) takes the spread of the per-run differences (`paired_effect`), an unpaired one the
spreads of both rows (`unpaired_effect`). Noise is the seed-to-seed spread of several trained models;
where only one model was trained, a claim may fall back on evaluation noise and says so ("one seed:
evaluation noise only", `ONE_SEED`).

    v = Verdict("04 known unknowns", checkpoints=S.checkpoints)
    ok, why = effect_verdict(paired_effect(cleaned, full), paper=2.30)
    v.add("Table 2: cleaning lifts mAP by 2.3 points", paper="+2.30", ours="+0.18", matched=ok, why=why)
    v.sanity("plurality KNN >= majority KNN", paper="0.80 vs 0.78", ours="0.81 vs 0.79", passed=True)
    md = v.markdown()
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from hedgekit.errors import InputError

__all__ = ["Claim", "Verdict", "PAPER_STEPS", "OUTCOMES", "MATCHED", "NOT_MATCHED", "INCONCLUSIVE", "ONE_SEED",
           "EFFECT_FACTOR", "fmt", "training_seconds", "training_context", "models_paragraph", "collapse_reason",
           "noise_reason", "binomial_se_diff", "closeness", "Effect", "Spread", "spread", "paired_effect",
           "unpaired_effect", "effect_verdict", "direction_verdict", "floor_verdict", "equivalence_verdict"]

MATCHED, NOT_MATCHED, INCONCLUSIVE = "matched", "not matched", "inconclusive"
OUTCOMES = {True: MATCHED, False: NOT_MATCHED, None: INCONCLUSIVE}
ONE_SEED = "one seed: evaluation noise only"
# effect_verdict: our effect is compatible with the paper's when our interval reaches [paper / F, paper x F]
EFFECT_FACTOR = 2.0
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
    matched: bool | None  # None: inconclusive (our noise cannot tell); for a sanity check: passed or not
    why: str = ""
    sanity: bool = False  # a statement that cannot fail at kit scale: listed apart, never counted

    @property
    def outcome(self) -> str:
        """"matched" / "not matched" / "inconclusive", or "sanity check passed" / "sanity check failed"."""
        if self.sanity:
            return "sanity check " + ("passed" if self.matched else "failed")
        return OUTCOMES[self.matched]


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


def noise_reason(diff: float, std: float, what: str = "std of our repetitions") -> str:
    """The reason of an inconclusive outcome when |diff| < 2 std ('' otherwise); ``what`` names the kind of
    standard deviation (seed-to-seed, evaluation repetitions, binomial)."""
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


# ---------------------------------------------------------------------------- effect sizes with an interval
@dataclass(frozen=True)
class Effect:
    """An effect (a difference between two rows, in the rows' units) with its standard error.

    ``n``: runs behind it (0 when only a mean and a standard error were given); ``kind``: "paired",
    "unpaired" or "given"; ``noise``: what the standard error measures, quoted in reasons.
    """

    mean: float
    se: float
    n: int = 0
    kind: str = "given"
    noise: str = "seed-to-seed spread"

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided interval: Student's t with n - 1 degrees of freedom for n >= 2 runs (paired: of the
        differences; unpaired: the smaller row's n - 1, a conservative Welch), mean ± 2 se for a given
        (mean, se); (NaN, NaN) when the standard error is unknown (one run)."""
        if not (math.isfinite(self.mean) and self.se is not None and math.isfinite(self.se)):
            return math.nan, math.nan
        if self.n >= 2:
            from scipy import stats

            q = float(stats.t.ppf(0.5 + level / 2, self.n - 1))
        else:
            q = 2.0
        return self.mean - q * self.se, self.mean + q * self.se

    def text(self, digits: int = 2) -> str:
        lo, hi = self.interval()
        if not math.isfinite(lo):
            return f"{self.mean:+.{digits}f} (no interval: {self.noise})"
        return (f"{self.mean:+.{digits}f}, 95% interval [{lo:+.{digits}f}, {hi:+.{digits}f}] "
                f"({self.kind}, {self.noise}" + (f", {self.n} runs)" if self.n else ")"))


class Spread(tuple):
    """``(mean, std)`` over runs (std with ddof = 1; NaN for one run) that keeps the runs' values in run
    order (`values`), so that claims can build intervals and paired differences from a summary table."""

    values: tuple

    def __new__(cls, values: Sequence[float]):
        vals = tuple(float(x) for x in values)
        n = len(vals)
        mean = sum(vals) / n if n else math.nan
        std = math.sqrt(sum((x - mean) ** 2 for x in vals) / (n - 1)) if n > 1 else math.nan
        out = super().__new__(cls, (mean, std))
        out.values = vals
        return out

    def __reduce__(self):
        return (Spread, (self.values,))


def spread(x) -> tuple[float, float, int, tuple | None]:
    """(mean, std, n, values) of a `Spread`, a sequence of run values, or a plain (mean, std) pair
    (n = 0 and values None: the number of runs is unknown)."""
    if isinstance(x, Spread):
        return x[0], x[1], len(x.values), x.values
    if isinstance(x, tuple) and len(x) == 2:
        m, s = x
        return float(m), float("nan") if s is None else float(s), 0, None
    s = Spread(x)
    return s[0], s[1], len(s.values), s.values


def paired_effect(a, b, scale: float = 1.0, noise: str = "seed-to-seed spread") -> Effect:
    """A - B when each run measures A and B on the same model and data (e.g. mAP with and without gallery
    cleaning): the standard error of the per-run differences, not the sum of both rows' spreads.
    ``a``, ``b``: `Spread` or run values in the same run order; ``scale`` multiplies (e.g. 100 for points).
    Without per-run values the pairing is lost: falls back on `unpaired_effect`."""
    *_, va = spread(a)
    *_, vb = spread(b)
    if va is None or vb is None:
        return unpaired_effect(a, b, scale, noise)
    if len(va) != len(vb):
        from hedgekit.errors import InputError

        raise InputError(f"paired runs need the same number of values; got {len(va)} and {len(vb)}")
    m, s, n, _ = spread([scale * (x - y) for x, y in zip(va, vb)])
    return Effect(m, s / math.sqrt(n) if n > 1 else math.nan, n, "paired", noise if n > 1 else ONE_SEED)


def unpaired_effect(a, b, scale: float = 1.0, noise: str = "seed-to-seed spread") -> Effect:
    """A - B of independently trained models: se = sqrt(std_A² / n_A + std_B² / n_B). With (mean, std) pairs
    of unknown run counts the stds are taken as standard errors (n = 0: a 2-se interval)."""
    ma, sa, na, _ = spread(a)
    mb, sb, nb, _ = spread(b)
    if na and nb:
        se = math.sqrt(sa * sa / na + sb * sb / nb) if min(na, nb) > 1 else math.nan
        n = min(na, nb)
    else:
        se, n = math.sqrt(sa * sa + sb * sb), 0
    return Effect(scale * (ma - mb), scale * se, n, "unpaired", noise if n != 1 else ONE_SEED)


def _as_effect(ours) -> Effect:
    if isinstance(ours, Effect):
        return ours
    if isinstance(ours, tuple) and len(ours) == 2 and not isinstance(ours, Spread):
        return Effect(float(ours[0]), float(ours[1]), noise="standard error as given")
    m, s, n, _ = spread(ours)
    return Effect(m, s / math.sqrt(n) if n > 1 else math.nan, n, "runs", "seed-to-seed spread" if n > 1 else ONE_SEED)


def _signed(x: float, digits: int) -> str:
    """``x`` with its sign and ``digits`` decimals, or up to 3 more where ``digits`` would print a nonzero bound as
    ±0 (an interval "[-0.000, +0.136]" that "contains 0" reads as a contradiction; "[-0.0004, +0.136]" does not)."""
    for d in range(digits, digits + 4):
        if round(abs(x), d) != 0:
            return f"{x:+.{d}f}"
    return f"{x:+.{digits}f}"


def _interval_text(e: Effect, lo: float, hi: float, digits: int, unit: str) -> str:
    """"our 95% interval [lo, hi] <unit> (<kind>, <noise>)", the unit left out (not a blank) when it is ""; a bound
    that ``digits`` would round to a signed zero gets more decimals (`_signed`)."""
    return (f"our 95% interval [{_signed(lo, digits)}, {_signed(hi, digits)}]{' ' + unit if unit else ''} "
            f"({e.kind}, {e.noise})")


def effect_verdict(ours, paper, factor: float = EFFECT_FACTOR, unit: str = "points", digits: int = 2
                   ) -> tuple[bool | None, str]:
    """Outcome and reason of a claim with a size, decided on our effect's 95% interval (`Effect.interval`).

    ``ours``: an `Effect` (`paired_effect`, `unpaired_effect`), a (mean, se) pair or run values.
    ``paper``: the paper's effect, or a (low, high) range when it states several (e.g. two tables).
    The paper's effect p (sign s) is *compatible* with ours when our interval reaches the band
    [|p| / ``factor``, |p| x ``factor``] on p's side (for a range: [|low| / F, |high| x F]); the factor (2 by
    default, `EFFECT_FACTOR`) allows for kit scale, where the same mechanism may act with half or twice the size.

    * matched: our interval reaches the band and excludes 0 (the effect is there, with a size like the paper's);
    * inconclusive: our interval reaches the band but also contains 0, or there is no interval (one run);
    * not matched, "smaller than the paper (about N× smaller)": the interval lies below the band (this includes a
      precise zero and the opposite sign); "larger than the paper (about N× larger)": it lies above the band.
    """
    e = _as_effect(ours)
    lo_p, hi_p = (paper, paper) if not isinstance(paper, (tuple, list)) else paper
    sign = 1.0 if (lo_p + hi_p) >= 0 else -1.0
    band = (min(abs(lo_p), abs(hi_p)) / factor, max(abs(lo_p), abs(hi_p)) * factor)
    paper_txt = (f"{lo_p:+.{digits}f}" if lo_p == hi_p else f"{lo_p:+.{digits}f} to {hi_p:+.{digits}f}")
    lo, hi = e.interval()
    if not math.isfinite(lo):
        return None, f"ours {e.text(digits)}: with one run there is no interval to compare with the paper's {paper_txt}"
    lo_s, hi_s = sorted((sign * lo, sign * hi))  # on the paper's side
    mean_s = sign * e.mean
    ival = _interval_text(e, lo, hi, digits, unit)
    if hi_s < band[0]:
        ratio = (f"about {min(abs(lo_p), abs(hi_p)) / mean_s:.0f}× smaller"
                 if mean_s > 0 else "about zero" if lo_s <= 0 <= hi_s else "the opposite sign")
        return False, (f"smaller than the paper ({ratio}): {ival} lies below {band[0]:.{digits}f}, half the "
                       f"paper's {paper_txt}" if factor == 2 else
                       f"smaller than the paper ({ratio}): {ival} lies below |paper| / {factor:g} = "
                       f"{band[0]:.{digits}f}")
    if lo_s > band[1]:
        ratio = mean_s / max(abs(lo_p), abs(hi_p)) if max(abs(lo_p), abs(hi_p)) > 0 else math.inf
        return False, (f"larger than the paper (about {ratio:.0f}× larger): {ival} lies above "
                       f"{factor:g} × the paper's {paper_txt}")
    if lo_s <= 0:
        return None, f"{ival} reaches the paper's {paper_txt} but also contains 0"
    return True, f"{ival} is compatible with the paper's {paper_txt} (within a factor {factor:g})"


def direction_verdict(ours, sign: int = 1, digits: int = 2, unit: str = "points") -> tuple[bool | None, str]:
    """A claim with a direction and no size ("A > B"): matched when our 95% interval lies on the side ``sign``
    (+1 or -1), not matched when it lies on the other side, inconclusive when it contains 0 or is unknown."""
    e = _as_effect(ours)
    lo, hi = e.interval()
    if not math.isfinite(lo):
        return None, f"ours {e.text(digits)}: with one run there is no interval"
    ival = _interval_text(e, lo, hi, digits, unit)
    if lo <= 0 <= hi:
        return None, f"{ival} contains 0"
    return (lo > 0) == (sign > 0), ival + (" agrees in sign" if (lo > 0) == (sign > 0) else " has the opposite sign")


def floor_verdict(ours, floor: float, digits: int = 2, unit: str = "") -> tuple[bool | None, str]:
    """A claim with a direction (positive) and no size in the paper, only the smallest effect that still reads as
    the claim (``floor`` > 0, e.g. a "small" correlation): matched when our 95% interval excludes 0 and reaches
    ``floor``; not matched when it lies wholly below ``floor`` (a precise zero, the opposite sign, or an effect
    too small to count); inconclusive when it contains 0 but reaches ``floor``, or with one run."""
    if not floor > 0:
        raise InputError(f"floor must be > 0; got {floor!r}")
    e = _as_effect(ours)
    lo, hi = e.interval()
    if not math.isfinite(lo):
        return None, f"ours {e.text(digits)}: with one run there is no interval"
    ival = _interval_text(e, lo, hi, digits, unit)
    if hi < floor:
        return False, f"{ival} lies below {floor:g}, the smallest effect that reads as the claim"
    if lo <= 0:
        return None, f"{ival} reaches {floor:g} but also contains 0"
    return True, f"{ival} excludes 0 and reaches {floor:g}"


def equivalence_verdict(ours, tol: float, digits: int = 2, unit: str = "points") -> tuple[bool | None, str]:
    """An "about equal" claim (|A - B| <= ``tol``), as an equivalence test: matched when our whole 95% interval
    lies inside [-tol, tol], not matched when it lies wholly outside, inconclusive otherwise (or one run)."""
    e = _as_effect(ours)
    lo, hi = e.interval()
    if not math.isfinite(lo):
        return None, f"ours {e.text(digits)}: with one run there is no interval"
    ival = _interval_text(e, lo, hi, digits, unit)
    if -tol <= lo and hi <= tol:
        return True, f"{ival} lies within ±{tol:g}"
    if lo > tol or hi < -tol:
        return False, f"{ival} lies outside ±{tol:g}"
    return None, f"{ival} straddles ±{tol:g}"


@dataclass
class Verdict:
    """Claims of one notebook, rendered as Markdown; sanity checks listed apart and not counted."""

    title: str
    checkpoints: Sequence = ()
    claims: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def add(self, claim: str, paper: str, ours: str, matched: bool | None, why: str = "") -> Claim:
        c = Claim(claim, paper, ours, None if matched is None else bool(matched), why)
        self.claims.append(c)
        return c

    def sanity(self, claim: str, paper: str, ours: str, passed: bool, why: str = "") -> Claim:
        """Add a statement that cannot fail at kit scale (``why`` should say why it cannot)."""
        c = Claim(claim, paper, ours, bool(passed), why, sanity=True)
        self.claims.append(c)
        return c

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def counted(self) -> list:
        """The claims that count (sanity checks left out)."""
        return [c for c in self.claims if not c.sanity]

    @property
    def checks(self) -> list:
        """The sanity checks."""
        return [c for c in self.claims if c.sanity]

    @property
    def counts(self) -> tuple[int, int, int]:
        """(matched, not matched, inconclusive) over the claims that count; sanity checks are not among them."""
        cs = self.counted
        return (sum(c.matched is True for c in cs), sum(c.matched is False for c in cs),
                sum(c.matched is None for c in cs))

    def context(self) -> str:
        """The paragraph on which models produced the numbers (HIB's `training_context`; papers override it)."""
        return training_context(self.checkpoints)

    def markdown(self) -> str:
        ok, bad, unsure = self.counts
        checks = self.checks
        passed = sum(c.matched for c in checks)
        lines = [f"### What matched, what did not, and why — {self.title}", "",
                 f"**{ok} matched, {bad} not matched" + (f", {unsure} {INCONCLUSIVE}" if unsure else "") + "** "
                 "(computed from the numbers above)" +
                 (f"; {len(checks)} sanity check(s) listed apart, {passed} passed." if checks else "."), "",
                 self.context(), ""]
        if self.counted:
            lines += ["| | paper's claim | paper | ours | why |", "|---|---|---|---|---|"]  # ✅ ❌ – (inconclusive)
        for c in self.counted:
            mark = {True: "✅", False: "❌", None: "–"}[c.matched]
            why = c.why or ("consistent with the paper" if c.matched else "")
            lines.append(f"| {mark} | {_cell(c.claim)} | {_cell(c.paper)} | {_cell(c.ours)} | {_cell(why)} |")
        if checks:
            lines += ["", "**Sanity checks** (statements that cannot fail at kit scale; not counted above):", "",
                      "| | check | paper | ours | why it cannot fail / what it shows |", "|---|---|---|---|---|"]
            for c in checks:
                mark = "✔" if c.matched else "✘"
                lines.append(f"| {mark} | {_cell(c.claim)} | {_cell(c.paper)} | {_cell(c.ours)} | {_cell(c.why)} |")
        if self.notes:
            lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:  # displays as Markdown in a notebook
        return self.markdown()


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")
