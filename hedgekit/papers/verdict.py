"""The computed "what matched, what did not, and why" section that ends every reproduction notebook.

A :class:`Claim` pairs one statement of the paper with the number(s) the notebook
just produced, an outcome and a reason. Nothing here is frozen prose: every number
and every "why" is formatted from the arguments.

Outcomes (one vocabulary everywhere, `OUTCOMES`): a claim is **matched**, **not matched** or
**inconclusive** (our noise cannot tell). A statement that cannot fail at kit scale (true by
construction, or a tolerance wider than anything the numbers can do) is a **sanity check**
(`Verdict.sanity`): it passes or fails, is listed apart in the Markdown and is never counted in
`Verdict.counts`.

The effects the rules judge (a difference with its standard error, `Effect`; per-run values, `Spread`; paired and
unpaired differences) live in `hedgekit.papers.effects` and are re-exported here.

Band policy (design notes sec. 6; every counted row of every claims table is held to it)
----------------------------------------------------------------------------------------
A band can fail and can pass:

* **A null result cannot match.** Each counted row declares the value a result that does not show the claim gives
  (``null``: an effect of 0 for a *size* row unless said otherwise; the base rate, chance or an untrained model's
  value for a *level* or *ranking* row; for a claim that an effect is absent, the effect it denies). It must lie
  outside the band: `check_table` refuses the table otherwise.
* **A result at the band's centre can match with `POLICY_SEEDS` (10) seeds per arm or fewer** at the measured
  seed-to-seed spread (`centre_seeds`). A row that cannot is decided *inconclusive* with the reason `NARROW` ("band
  narrower than 10 seeds resolve at kit scale") and the seeds it would take; it is never quietly widened.
* **Bands live inside the measure's range** (``bounds``: τ <= 1, an accuracy <= 100): a band that reaches beyond
  it is cut there (`Row.declared_band`), and a band narrower than the row's printed precision is refused.
* **Band edges sit on the row's printed precision** (`snap_band`): each edge moves inward to the nearest number of
  ``digits`` decimals (half to twice a paper gap of 0.027 at 3 decimals is [0.014, 0.054], not [0.0135, 0.054]), so
  an edge prints as it is decided and a result that matches the printed band matches the band. A row whose band
  that would narrow by more than `SNAP_SHRINK` of its width prints with one more decimal, until it does not.
* **Each comparison is counted once**: a row names what it compares (``compares``: models, measure, protocol
  cell), and the same comparison in two named tables, or under two ids, is refused when the tables are built.

Evidence is runs with their count (`hedgekit.papers.effects`): a bare tuple, or a (mean, SD) without n, is refused;
non-finite runs are dropped and flagged, and fewer than two finite runs give no interval. A spread of exactly 0 is
printed as such and never matched on fewer than 3 runs. "Decided on trained seeds" in a tally means an interval
from at least 2 trained seeds. "Seeds to decide" is per arm, and reads "more than 50 (undecidable at this spread)"
beyond `SEEDS_CAP`.

Decision rules (design notes sec. 6)
------------------------------------
* **Intervals.** A 95% interval uses Student's t with n - 1 degrees of freedom for n runs (`Effect.interval`; a
  given (mean, se) of unknown n: mean ± 2 se). Its noise is the seed-to-seed spread of trained models wherever the
  claim compares models; a paired comparison (the same model on the same queries) takes the spread of the per-run
  differences (`paired_effect`), an unpaired one the spreads of both rows (`unpaired_effect`).
* **Equivalence** (`band_verdict`, the rule for a claim table's rows: two one-sided tests at 2.5% each). A claim
  declares, in advance and with its reason, a band around the paper's value (`factor_band`: half to twice an
  effect; `tolerance_band`: ± a tolerance). It is **matched** when the *whole* 95% interval lies inside the band,
  **not matched** when the whole interval lies outside it, and **inconclusive** otherwise, with the number of seeds
  the observed spread says would decide (`seeds_to_decide`). A wide interval is never matched. An interval from
  evaluation repeats of one trained model is never matched: it reads *inconclusive: one trained model*.
* **Claims as data.** Each paper's claims are one table of `Row` objects in ``papers/<paper>/claims.py``: the
  paper's words and place, a kind (`KINDS`: *size*, *level* and *ranking* are counted; *sanity* and *condition* are
  listed apart and never counted), the function that extracts our numbers, the paper's value, the declared band
  with its reason, and the noise (`SEEDS`, `EVALUATION` or `borrowed`). One engine (`decide`) decides every row.
* **Ties at a bound.** Outcomes are decided on the raw values, and bands are closed: an interval end exactly on a
  band's edge lies inside the band (so the interval is not outside it), and an interval end exactly at 0 contains 0.
* **The text never contradicts the numbers.** Every number of a reason prints with at least
  ``digits`` decimals, and with more wherever fewer would print two of its numbers in another order (<, =, >) than
  their raw values (`shown_decimals`): an interval end one ulp below 1.15 prints as 1.1499999999999997, never as
  1.15 beside "lies below 1.15"; a bound prints exactly where that takes at most ``digits`` + 4 decimals (a band of
  ±0.025 is never shown as ±0.03), and a band narrower than the row's printed precision is refused.
* **Invalid inputs.** A declared number (the paper's value, a factor, band or tolerance) that is NaN,
  infinite or out of range raises `InputError` saying what was expected. A *measured* value that is not a number
  gives no interval: the claim is inconclusive and says so.

    TABLE = check_table([
        Row("cleaning", "cleaning lifts mAP by 2.24 points over random removal", "Table 2", SIZE,
            lambda m: paired_effect(m["cleaned"], m["random"], scale=100), paper=2.24, band=factor_band,
            reason="half to twice the paper's gain: the mechanism may act at kit scale with another size"),
        Row("plurality", "plurality KNN >= majority KNN", "App. G", SANITY,
            lambda m: Check(m["plurality"] >= m["majority"], f"{m['plurality']:.2f} vs {m['majority']:.2f}"),
            reason="true by construction")])
    v = Verdict("08 Taha", checkpoints=S.checkpoints).decide(TABLE, measured)
    v.show(report)                        # the Markdown and the forest plot
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from functools import lru_cache
from itertools import combinations
from numbers import Real
from typing import Sequence

import numpy as np

from hedgekit.errors import InputError
from hedgekit.papers.context import (PAPER_STEPS, binomial_se_diff, collapse_reason, fmt, models_paragraph,
                                     training_context, training_seconds)
from hedgekit.papers.effects import ONE_SEED, Effect, Spread, as_effect, paired_effect, spread, unpaired_effect
from hedgekit.papers.forest import forest_plot

__all__ = ["Claim", "Verdict", "PAPER_STEPS", "OUTCOMES", "MATCHED", "NOT_MATCHED", "INCONCLUSIVE", "ONE_SEED",
           "EFFECT_FACTOR", "fmt", "training_seconds", "training_context", "models_paragraph", "collapse_reason",
           "binomial_se_diff", "Effect", "Spread", "spread", "paired_effect", "unpaired_effect", "factor_band",
           "tolerance_band", "band_verdict", "seeds_to_decide", "shown_decimals", "SEEDS_CAP", "SIZE", "LEVEL",
           "RANKING", "SANITY", "CONDITION", "KINDS", "COUNTED", "SEEDS", "EVALUATION", "BORROWED", "NOISES",
           "borrowed", "Check", "Interval", "Row", "check_table", "decide_row", "decide", "WORDS_OF_OUTCOME",
           "centre_seeds", "POLICY_SEEDS", "NARROW", "MIN_SD0_RUNS", "snap_band", "SNAP_SHRINK", "POLICY_MARK"]

MATCHED, NOT_MATCHED, INCONCLUSIVE = "matched", "not matched", "inconclusive"
OUTCOMES = {True: MATCHED, False: NOT_MATCHED, None: INCONCLUSIVE}
WORDS_OF_OUTCOME = {True: " lies inside the band ", False: " lies ", None: " overlaps the band "}  # band_verdict's
# factor_band: the band [paper / F, paper x F] around a paper's effect
EFFECT_FACTOR = 2.0
SEEDS_CAP = 50  # seeds_to_decide looks no further: beyond it a row is undecidable at the observed spread
NARROW = "band narrower than 10 seeds resolve at kit scale"  # the policy's reason for an undecidable row
MIN_SD0_RUNS = 3  # band_verdict: identical runs (spread 0) are matched only on this many runs or more
POLICY_SEEDS = 10  # the band policy: a result at a band's centre must match with this many seeds per arm or fewer
SNAP_SHRINK = 0.1  # snap_band: a band may narrow by at most this share of its width at the row's precision
POLICY_MARK = "bands held to the policy"  # the tally line's words: every row held to the band policy (read by
# `hedgekit.repro.rendered`, which names them too: a test holds the two equal)
EXACT_EXTRA = 4  # shown_decimals: a bound prints exactly where that takes at most digits + EXACT_EXTRA decimals


@dataclass
class Claim:
    """One decided statement as the verdict shows it. A row of a claims table (`Row`) decided by `decide` also
    keeps what the forest plot draws: ``interval`` (our 95% interval), ``band`` (the declared band), ``paper_value``,
    and its ``kind`` and ``noise`` (`KINDS`, `NOISES`)."""

    claim: str  # the paper's statement (with its figure/table)
    paper: str  # the paper's number(s)
    ours: str  # our number(s)
    matched: bool | None  # None: inconclusive (our noise cannot tell); for a sanity check: passed or not
    why: str = ""
    sanity: bool = False  # not counted: a sanity check, or a condition when kind == CONDITION
    kind: str = ""  # a claims-table row's kind (`KINDS`); "" for a claim added by hand
    noise: str = ""  # `SEEDS`, `EVALUATION` or a `borrowed` source; "" for a claim added by hand
    interval: tuple | None = None
    band: tuple | None = None
    paper_value: float | None = None
    row_id: str = ""
    runs: int = 0  # the runs (seeds, per arm) behind ``interval``; 0 when unknown or not a row of a claims table

    @property
    def outcome(self) -> str:
        """"matched" / "not matched" / "inconclusive", "sanity check passed/failed" or "condition held/failed"."""
        if self.kind == CONDITION:
            return "condition " + ("held" if self.matched else "failed")
        if self.sanity:
            return "sanity check " + ("passed" if self.matched else "failed")
        return OUTCOMES[self.matched]


def _check_positive(name: str, x) -> float:
    """``x`` as a float, or `InputError` unless it is a finite number > 0."""
    if isinstance(x, bool) or not isinstance(x, Real) or not (math.isfinite(x) and x > 0):
        raise InputError(f"{name} must be a finite number > 0; got {x!r}")
    return float(x)


def _cmp(a: float, b: float) -> int:
    return (a > b) - (a < b)


def shown_decimals(xs: Sequence[float], digits: int, exact: Sequence[int] = ()) -> list[int]:
    """Decimals to print each of the finite numbers ``xs`` with, so that the printed numbers never contradict the raw
    ones (the module's rule "the text never contradicts the numbers"): at least ``digits`` each, and one more for
    both numbers of any pair that would print in another order (<, =, >) than its raw values, until none does. A
    number stops widening at its exact form (the decimals of its shortest repr), where it reads back as itself, so
    this ends. The numbers at the indices ``exact`` (declared bounds) start at their exact form where that takes at
    most ``digits`` + `EXACT_EXTRA` decimals: a band of ±0.025 prints as 0.025, not 0.03."""
    xs = [float(x) for x in xs]
    full = [max(digits, -Decimal(repr(x)).as_tuple().exponent) for x in xs]
    dec = [f if i in exact and f <= digits + EXACT_EXTRA else digits for i, f in enumerate(full)]
    while True:
        shown = [float(f"{x:.{d}f}") for x, d in zip(xs, dec)]
        wider = {k for i, j in combinations(range(len(xs)), 2) if _cmp(xs[i], xs[j]) != _cmp(shown[i], shown[j])
                 for k in (i, j) if dec[k] < full[k]}
        if not wider:
            return dec
        for k in wider:
            dec[k] += 1


def _num(x: float, decimals: int, signed: bool = True) -> str:
    return f"{x:+.{decimals}f}" if signed else f"{x:.{decimals}f}"


def _interval_text(e: Effect, lo: float, hi: float, dec: Sequence[int], unit: str) -> str:
    """"our 95% interval [lo, hi] <unit> (<kind>, <noise>)" with ``dec`` = (lo's, hi's) decimals (`shown_decimals`),
    the unit left out (not a blank) when it is ""."""
    flags = (", SD 0: identical runs" if e.se == 0 else "") + (
        f", {e.dropped} non-finite run(s) dropped" if e.dropped else "")
    return (f"our 95% interval [{_num(lo, dec[0])}, {_num(hi, dec[1])}]{' ' + unit if unit else ''} "
            f"({e.kind}, {e.noise}{flags})")


def _no_interval(e: Effect, digits: int) -> str:
    """The reason of a claim whose effect has no interval: one run, or a mean or spread that is not a number."""
    if e.dropped and e.n < 2:
        return f"ours {e.text(digits)}: with {e.n} finite run(s) there is no interval"
    if e.n == 1 or e.noise.startswith(ONE_SEED):
        return f"ours {e.text(digits)}: with one run there is no interval"
    return f"ours {e.text(digits)}: no interval, since our mean or its standard error is not a number"


def _check_band(band, digits: int | None = None) -> tuple[float, float]:
    """``band`` as a (low, high) pair of finite floats with low < high, or `InputError`; with ``digits``, also
    `InputError` for a band narrower than the measure's printed precision (10^-digits): no printed number could
    show an interval inside it."""
    try:
        low, high = (float(b) for b in band)
    except (TypeError, ValueError):
        raise InputError(f"a band is a (low, high) pair of numbers; got {band!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise InputError(f"a band needs finite bounds with low < high; got ({low!r}, {high!r})")
    if digits is not None and high - low < 10.0 ** -digits:
        raise InputError(f"the band ({low!r}, {high!r}) is {high - low:.3g} wide, narrower than the measure's printed "
                         f"precision of {10.0 ** -digits:g} ({digits} decimals): widen it with its reason, or print "
                         "the measure with more decimals")
    return low, high


def _snap(x: float, digits: int, rounding: str) -> float:
    """``x`` on the grid of ``digits`` decimals, rounded the way ``rounding`` says; a float a representation error
    away from a grid point (0.24000000000000005) is that point."""
    v, step = Decimal(repr(x)), Decimal(1).scaleb(-digits)
    near = v.quantize(step, ROUND_HALF_EVEN)
    return float(near if abs(near - v) <= Decimal("1e-9") * max(1, abs(v)) else v.quantize(step, rounding))


def snap_band(band, digits: int) -> tuple[tuple[float, float], int]:
    """The band with its edges moved inward onto the grid of ``digits`` decimals, and the decimals it prints with:
    ``digits``, or more while that grid would narrow it by more than `SNAP_SHRINK` of its width (the module's rule
    "band edges sit on the row's printed precision"). Inward, so that a result inside the printed band is inside the
    band; `InputError` for a band that is no (low, high) pair, or narrower than 10^-``digits``."""
    low, high = _check_band(band, digits)
    while True:
        snapped = _snap(low, digits, ROUND_CEILING), _snap(high, digits, ROUND_FLOOR)
        if (snapped[0] - low) + (high - snapped[1]) <= SNAP_SHRINK * (high - low) or digits >= 15:
            return _check_band(snapped, digits), digits
        digits += 1


def _paper_range(paper) -> tuple[float, float]:
    """The paper's effect as a (low, high) range, both finite, nonzero and of one sign; else `InputError`."""
    lo_p, hi_p = (paper, paper) if not isinstance(paper, (tuple, list)) else paper
    try:
        lo_p, hi_p = float(lo_p), float(hi_p)
    except (TypeError, ValueError):
        raise InputError(f"the paper's effect must be a number or a (low, high) range; got {paper!r}") from None
    if not (math.isfinite(lo_p) and math.isfinite(hi_p) and lo_p * hi_p > 0):
        raise InputError(f"the paper's effect must be finite and nonzero, a range of one sign; got {paper!r} "
                         "(an effect of about 0 is an equivalence claim: use tolerance_band)")
    return min(lo_p, hi_p), max(lo_p, hi_p)


def factor_band(paper, factor: float = EFFECT_FACTOR) -> tuple[float, float]:
    """The band [|p| / F, |p| x F] on the paper's side of 0 around the paper's effect p (a nonzero number, or a
    (low, high) range of one sign when the paper states several: [|low| / F, |high| x F]): by default half to twice
    the paper's effect (`EFFECT_FACTOR`), for a mechanism that may act at kit scale with half or twice the size.
    ``factor`` must be finite and > 1 (1 leaves a band of no width, less turns it inside out)."""
    lo_p, hi_p = _paper_range(paper)
    if not (isinstance(factor, Real) and math.isfinite(factor) and factor > 1):
        raise InputError(f"factor must be a finite number > 1 (the band is paper / factor .. paper x factor); "
                         f"got {factor!r}")
    small, large = min(abs(lo_p), abs(hi_p)) / factor, max(abs(lo_p), abs(hi_p)) * factor
    return (small, large) if lo_p > 0 else (-large, -small)


def tolerance_band(paper: float, tol: float) -> tuple[float, float]:
    """The band [p - tol, p + tol] around the paper's value p (finite) for a tolerance ``tol`` (finite, > 0)."""
    tol = _check_positive("tol", tol)
    if not (isinstance(paper, Real) and math.isfinite(paper)):
        raise InputError(f"the paper's value must be a finite number; got {paper!r}")
    return _check_band((paper - tol, paper + tol))


def _band_outcome(lo: float, hi: float, low: float, high: float) -> bool | None:
    """The equivalence rule on a closed band: True inside, False wholly outside, None otherwise."""
    if low <= lo and hi <= high:
        return True
    return False if hi < low or lo > high else None


def seeds_to_decide(ours, band) -> float:
    """How many seeds per arm the observed spread says it would take for the 95% interval to decide ``band``: the
    smallest k >= 2 for which t(0.975, k - 1) x sd / sqrt(k) falls short of the distance from our mean to the band's
    nearer edge (inside: then the interval lies inside; outside: then it lies outside). sd is the per-run spread
    behind the standard error, se x sqrt(n): per arm, for an unpaired effect of n seeds per row (each row's k seeds
    alike), and per pair of runs for a paired one.

    ``math.inf`` when no number of seeds decides (our mean sits on an edge) or more than `SEEDS_CAP` would;
    ``math.nan`` when the number of runs behind the standard error is unknown (a given (mean, se)) or below 2."""
    e, (low, high) = as_effect(ours), _check_band(band)
    if e.n < 2 or not (math.isfinite(e.mean) and e.se is not None and math.isfinite(e.se)):
        return math.nan
    m = e.mean
    return _seeds_for(e.sd, min(m - low, high - m) if low <= m <= high else max(low - m, m - high))


def _seeds_for(sd: float, dist: float) -> float:
    """The smallest k in 2 .. `SEEDS_CAP` whose 95% half-width over k runs of spread ``sd`` falls short of ``dist``
    (``math.inf`` when none does)."""
    k, half_width = _unit_half_widths()
    decided = np.flatnonzero(half_width * sd < dist)
    return float(k[decided[0]]) if decided.size else math.inf


def centre_seeds(ours, band) -> float:
    """The band policy's "can pass" measure: how many seeds per arm a result at the centre of ``band`` would need
    to be matched at the observed spread of ``ours`` (`_seeds_for` of half the band's width; ``math.inf`` beyond
    `SEEDS_CAP`, ``math.nan`` without a spread of two or more runs)."""
    e, (low, high) = as_effect(ours), _check_band(band)
    if e.n < 2 or not (e.se is not None and math.isfinite(e.se)):
        return math.nan
    return _seeds_for(e.sd, (high - low) / 2)


@lru_cache(maxsize=1)
def _unit_half_widths() -> tuple[np.ndarray, np.ndarray]:
    """(k, t(0.975, k - 1) / sqrt(k)) for k = 2 .. `SEEDS_CAP`: a 95% interval's half-width over k runs of sd 1."""
    from scipy import stats

    k = np.arange(2, SEEDS_CAP + 1)
    return k, stats.t.ppf(0.975, k - 1) / np.sqrt(k)


def _seeds_text(e: Effect, band: tuple[float, float]) -> str:
    k = seeds_to_decide(e, band)
    if math.isnan(k):
        return "the runs behind its standard error are not known, so neither are the seeds that would decide"
    if math.isinf(k):
        return f"more than {SEEDS_CAP} seeds per arm (undecidable at this spread)"
    return f"about {k:.0f} seeds per arm would decide at the observed spread (ours: {e.n})"


def band_verdict(ours, band, paper: float | None = None, digits: int = 2, unit: str = "points",
                 evaluation_only: bool = False) -> tuple[bool | None, str]:
    """Outcome and reason of a claim by the equivalence rule (the module's decision rules).

    ``ours``: an `Effect` (`paired_effect`, `unpaired_effect`), a (mean, se) pair or run values. ``band``: the
    declared (low, high) band (`factor_band`, `tolerance_band`), closed. ``paper``: the paper's value, named in the
    reason. Matched when our whole 95% interval lies inside the band; not matched when it lies wholly below or above
    it; inconclusive otherwise, with the seeds that would decide (`seeds_to_decide`), or with one run.
    ``evaluation_only`` (or an effect whose noise is `ONE_SEED`'s): the interval measures evaluation repeats of one
    trained model, not seed-to-seed noise, so the claim is never matched: *inconclusive: one trained model*. A
    spread of exactly 0 (identical runs) is kept and printed, but is never matched on fewer than `MIN_SD0_RUNS`
    runs: two identical seeds say little about the seed-to-seed noise. A band narrower than the printed precision
    (``digits`` decimals) is refused."""
    low, high = _check_band(band, digits)
    e = as_effect(ours)
    lo, hi = e.interval()
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None, _no_interval(e, digits)
    dec = shown_decimals([lo, hi, low, high, 0.0], digits, exact=(2, 3, 4))  # 0: an end never prints as ±0
    where = f"the band [{_num(low, dec[2])}, {_num(high, dec[3])}]" + (
        f" around the paper's {fmt(paper, digits, signed=True)}" if paper is not None else "")
    ival = _interval_text(e, lo, hi, dec, unit)
    ok = _band_outcome(lo, hi, low, high)
    text = (f"{ival} lies inside {where}" if ok else f"{ival} lies {'below' if hi < low else 'above'} {where}"
            if ok is False else f"{ival} overlaps {where} without lying inside it")
    if evaluation_only or e.noise.startswith(ONE_SEED):
        return None, f"one trained model: {text}, but evaluation repeats do not measure the seed-to-seed noise"
    if ok and e.se == 0 and e.n < MIN_SD0_RUNS:
        return None, (f"{text}, but its spread is 0 over {e.n or 'an unknown number of'} run(s): identical runs are "
                      f"not matched on fewer than {MIN_SD0_RUNS}")
    return ok, text if ok is not None else f"{text}; {_seeds_text(e, (low, high))}"


# ------------------------------------------------------------------ claims as data
SIZE, LEVEL, RANKING, SANITY, CONDITION = "size", "level", "ranking", "sanity", "condition"
KINDS = (SIZE, LEVEL, RANKING, SANITY, CONDITION)
COUNTED = (SIZE, LEVEL, RANKING)  # sanity checks and conditions are listed apart and never counted
SEEDS, EVALUATION = "trained seeds", "evaluation repeats only"
BORROWED = "borrowed: "


def borrowed(source: str) -> str:
    """The noise of a *level* row whose spread is the seed-to-seed spread measured for the same recipe and data
    elsewhere in the notebook: ``source`` names where (the verdict shows it as borrowed)."""
    if not str(source).strip():
        raise InputError("a borrowed spread must name where it was measured; got an empty source")
    return BORROWED + str(source)


NOISES = (SEEDS, EVALUATION)  # or borrowed(source)


@dataclass(frozen=True)
class Check:
    """What a *sanity* or *condition* row measures: whether it held, and our number(s) as text."""

    passed: bool
    ours: str


@dataclass(frozen=True)
class Interval(Effect):
    """An effect whose 95% interval was computed elsewhere (a rank set from pooled variance over seeds, a
    correlation's interval): ``low`` and ``high`` are used as they are; ``mean`` is the point estimate shown; ``n``
    the seeds behind it (0 where it is not an interval over seeds). Its standard error is unknown (NaN), so no
    number of seeds is derived from it."""

    low: float = math.nan
    high: float = math.nan

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        if level != 0.95:
            raise InputError(f"an Interval holds its 95% interval only; got level={level!r}")
        return self.low, self.high

    def text(self, digits: int = 2) -> str:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return f"{self.mean:+.{digits}f} (no interval: {self.noise})"
        return (f"{self.mean:+.{digits}f}, 95% interval [{self.low:+.{digits}f}, {self.high:+.{digits}f}] "
                f"({self.kind}, {self.noise}" + (f", {self.n} runs)" if self.n else ")"))


@dataclass(frozen=True)
class Row:
    """One claim of a paper as data: a row of `<paper>/claims.py`'s claims table, decided by `decide`.

    ``id``: unique within the table; ``words``: the paper's words; ``place``: table, figure or section;
    ``kind``: one of `KINDS`; ``measure``: measured numbers (a mapping the notebook builds) -> ours: an `Effect`
    (or run values, a (mean, se) pair, an `Interval`) for a counted row, a `Check` for a sanity or condition row,
    or None when the notebook did not measure it (the row is left out); ``paper``: the paper's value (a number, a
    (low, high) range, or None for a sanity or condition row); ``band``: the declared (low, high) band, or a function
    of ``paper`` giving it (`factor_band`, `tolerance_band`); ``reason``: why that band (or, for a sanity row, why it
    cannot fail); ``noise``: `SEEDS`, `EVALUATION` or `borrowed`; ``paper_text``: the paper's number(s) as shown
    (default: ``paper`` formatted).

    The band policy's fields (module docstring) of a counted row: ``compares``: the comparison it makes (models,
    measure, protocol cell), counted once across named tables; ``null``: the value a result that does not show the
    claim gives, which must lie outside the band: no effect (0, the default of a *size* row), the base rate or
    chance of a level or a rank, or, for a claim that an effect is absent, the effect it denies; ``bounds``: the
    measure's range, where the band is cut."""

    id: str
    words: str
    place: str
    kind: str
    measure: object
    paper: object = None
    band: object = None
    reason: str = ""
    noise: str = SEEDS
    unit: str = "points"
    digits: int = 2
    paper_text: str = ""
    compares: str = ""
    null: float | None = None
    bounds: tuple | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise InputError(f"a row's kind is one of {KINDS}; row {self.id!r} has {self.kind!r}")
        if not callable(self.measure):
            raise InputError(f"row {self.id!r}: measure must be a function of the measured numbers")
        if self.kind in COUNTED:
            if self.band is None or not self.reason.strip():
                raise InputError(f"row {self.id!r}: a {self.kind} row declares its band and the band's reason")
            if not (self.noise in NOISES or self.noise.startswith(BORROWED)):
                raise InputError(f"row {self.id!r}: noise is {SEEDS!r}, {EVALUATION!r} or borrowed(...); "
                                 f"got {self.noise!r}")
            if self.noise.startswith(BORROWED) and self.kind != LEVEL:
                raise InputError(f"row {self.id!r}: only a level row may borrow a spread; this is a {self.kind} row")
            if not self.compares.strip():
                raise InputError(f"row {self.id!r}: a {self.kind} row names the comparison it makes (compares=: the "
                                 "models, the measure and the protocol cell)")
            if self.null is None and self.kind != SIZE:
                raise InputError(f"row {self.id!r}: a {self.kind} row declares the value a result with no skill would "
                                 "give (null=: the base rate, chance, or the untrained model's value)")
        if self.bounds is not None:
            lo, hi = _check_band(self.bounds)
            object.__setattr__(self, "bounds", (lo, hi))
        if self.kind in COUNTED:  # the decimals its band's edges need (`snap_band`): ``digits`` at least
            object.__setattr__(self, "digits", snap_band(self._cut_band(), self.digits)[1])

    def _cut_band(self) -> tuple[float, float]:
        low, high = _check_band(self.band(self.paper) if callable(self.band) else self.band)
        if self.bounds is not None:
            low, high = max(low, self.bounds[0]), min(high, self.bounds[1])
        return low, high

    def declared_band(self) -> tuple[float, float]:
        """The band as a checked (low, high) pair: cut at the measure's range ``bounds`` where it reaches beyond it
        (τ <= 1, an accuracy <= 100), its edges moved inward onto the row's printed precision (`snap_band`)."""
        return snap_band(self._cut_band(), self.digits)[0]

    def null_value(self) -> float:
        """What a result with no skill gives: the declared ``null``, or an effect of 0 for a size row."""
        return 0.0 if self.null is None else float(self.null)

    def shown_paper(self) -> str:
        if self.paper_text:
            return self.paper_text
        if isinstance(self.paper, (tuple, list)):
            return " to ".join(fmt(p, self.digits) for p in self.paper)
        return fmt(self.paper, self.digits) if self.paper is not None else ""


_COMPARISONS: dict[tuple[str, bool], tuple[str, str]] = {}  # (compares, on repeats) -> (table, row id)


def check_table(rows: Sequence[Row], table: str = "") -> tuple[Row, ...]:
    """``rows`` as a tuple, checked when the table is built (bands are declared in advance), or `InputError`:

    * two rows share an id, or name the same comparison (``compares``), in this table or in any other table built
      under another name (``table``): a comparison is counted once. The twins of one comparison, one decided on
      trained seeds and one on evaluation repeats of which only one is ever measured (`hedgekit.papers.hib.runs.twins`),
      are the one pair allowed. Only tables built with a name are held against each other;
    * a counted row's band fails the band policy's "can fail" half: the value a result with no skill gives
      (`Row.null_value`) lies inside it, so a null result could match (module docstring, "Band policy")."""
    rows = tuple(rows)
    seen: set[str] = set()
    for r in rows:
        if not isinstance(r, Row):
            raise InputError(f"a claims table holds Row objects; got {type(r).__name__}")
        if r.id in seen:
            raise InputError(f"claims table: the id {r.id!r} appears twice (a comparison is counted once)")
        seen.add(r.id)
    mine: dict[tuple[str, bool], str] = {}
    for r in rows:
        if r.kind not in COUNTED:
            continue
        low, high = r.declared_band()
        null = r.null_value()
        if low <= null <= high:
            raise InputError(f"row {r.id!r}: a result with no skill ({null:g}) lies inside its band [{low:g}, "
                             f"{high:g}], so a null result could match; declare a band that excludes it")
        key = (" ".join(r.compares.split()).lower(), r.noise == EVALUATION)
        prev = _COMPARISONS.get(key) if table else None
        where = (repr(mine[key]) if key in mine else
                 f"{prev[1]!r} of the table {prev[0]!r}" if prev is not None and prev[0] != table else "")
        if where:
            raise InputError(f"row {r.id!r} compares {r.compares!r}, as row {where} already does: a comparison is "
                             "counted once")
        mine[key] = r.id
    if table:  # a named table's comparisons are refused in every other named table
        _COMPARISONS.update({k: (table, rid) for k, rid in mine.items()})
    return rows


def decide_row(row: Row, measured) -> Claim | None:
    """The engine: ``row`` decided on ``measured`` (None when the row's measure gives None: not measured here).
    Counted rows: `band_verdict` on the declared band (an `EVALUATION` row is never matched; a borrowed spread is
    named in the reason); sanity and condition rows: the `Check` their measure gives."""
    got = row.measure(measured)
    if got is None:
        return None
    claim = f"{row.place}: {row.words}"
    if row.kind in (SANITY, CONDITION):
        if not isinstance(got, Check):
            raise InputError(f"row {row.id!r}: a {row.kind} row's measure returns a Check; got {type(got).__name__}")
        return Claim(claim, row.shown_paper(), got.ours, bool(got.passed), row.reason, sanity=True, kind=row.kind,
                     row_id=row.id)
    band = row.declared_band()
    e = as_effect(got)
    paper = row.paper if isinstance(row.paper, Real) else None
    ok, why = band_verdict(e, band, paper=paper, digits=row.digits, unit=row.unit,
                           evaluation_only=row.noise == EVALUATION)
    if row.noise.startswith(BORROWED):
        why += f" (spread borrowed: {row.noise[len(BORROWED):]})"
    k = centre_seeds(e, band)
    if k > POLICY_SEEDS and row.noise != EVALUATION and not e.noise.startswith(ONE_SEED):  # "can pass", measured
        ok, why = None, (f"{NARROW}: at our spread (SD {e.sd:.{row.digits + 1}g}) a result at the band's centre would "
                         f"need {'more than ' + str(SEEDS_CAP) if math.isinf(k) else f'about {k:.0f}'} seeds per arm "
                         f"to match ({why})")
    lo, hi = e.interval()
    return Claim(claim, row.shown_paper(), e.text(row.digits), ok, f"{why}; band: {row.reason}", kind=row.kind,
                 noise=row.noise, interval=(lo, hi), band=band, paper_value=paper, row_id=row.id, runs=e.n)


def decide(rows: Sequence[Row], measured, verdict: "Verdict") -> "Verdict":
    """Decide every row of a claims table on ``measured`` and add it to ``verdict`` (rows not measured are left
    out); returns ``verdict``."""
    for row in check_table(rows):
        c = decide_row(row, measured)
        if c is not None:
            verdict.claims.append(c)
    return verdict


@dataclass
class Verdict:
    """Claims of one notebook, rendered as Markdown; sanity checks listed apart and not counted."""

    title: str
    checkpoints: Sequence = ()
    claims: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    not_counted: str = ""  # why this verdict's claims are counted elsewhere (`shown_not_counted`); "" counts them

    def add(self, claim: str, paper: str, ours: str, matched: bool | None, why: str = "") -> Claim:
        c = Claim(claim, paper, ours, None if matched is None else bool(matched), why)
        self.claims.append(c)
        return c

    def sanity(self, claim: str, paper: str, ours: str, passed: bool, why: str = "") -> Claim:
        """Add a statement that cannot fail at kit scale (``why`` should say why it cannot)."""
        c = Claim(claim, paper, ours, bool(passed), why, sanity=True, kind=SANITY)
        self.claims.append(c)
        return c

    def condition(self, claim: str, paper: str, ours: str, held: bool, why: str = "") -> Claim:
        """Add a precondition of an experiment (a set-up chosen so that it holds): shown, never counted."""
        c = Claim(claim, paper, ours, bool(held), why, sanity=True, kind=CONDITION)
        self.claims.append(c)
        return c

    def shown_not_counted(self, why: str) -> "Verdict":
        """Keep this verdict's claims on show but out of every tally, because ``why``: the same comparison is counted
        in another verdict (a comparison is counted once), e.g. a contrast set-up or the seeds a design was
        chosen on beside the seeds that confirm it."""
        if not str(why).strip():
            raise InputError("shown_not_counted needs the reason the claims are counted elsewhere")
        self.not_counted = str(why).strip()
        return self

    def decide(self, rows: Sequence[Row], measured) -> "Verdict":
        """Decide a claims table's rows on ``measured`` into this verdict (`decide`)."""
        return decide(rows, measured, self)

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def counted(self) -> list:
        """The claims that count (sanity checks and conditions left out; none when `shown_not_counted`)."""
        return [] if self.not_counted else self.shown

    @property
    def shown(self) -> list:
        """The claims of the table (every claim but the sanity checks and conditions), counted or not."""
        return [c for c in self.claims if not c.sanity]

    @property
    def checks(self) -> list:
        """The sanity checks."""
        return [c for c in self.claims if c.sanity and c.kind != CONDITION]

    @property
    def conditions(self) -> list:
        """The preconditions of the experiments."""
        return [c for c in self.claims if c.kind == CONDITION]

    @property
    def counts(self) -> tuple[int, int, int]:
        """(matched, not matched, inconclusive) over the claims that count; sanity checks are not among them."""
        cs = self.counted
        return (sum(c.matched is True for c in cs), sum(c.matched is False for c in cs),
                sum(c.matched is None for c in cs))

    @property
    def noise_counts(self) -> tuple[int, int]:
        """(decided on trained seeds, evaluation repeats only) over the counted claims of claims-table rows.
        "Decided on trained seeds" is an interval from at least 2 trained seeds (a borrowed spread counts: it is a
        seed-to-seed spread); a seeds row with no interval, or with fewer runs, is in neither. Hand-added claims are
        in neither."""
        cs = self.counted
        return (sum((c.noise == SEEDS or c.noise.startswith(BORROWED)) and c.runs >= 2 and c.interval is not None
                    and all(math.isfinite(x) for x in c.interval) for c in cs),
                sum(c.noise == EVALUATION for c in cs))

    def context(self) -> str:
        """The paragraph on which models produced the numbers (HIB's `training_context`; papers override it)."""
        return training_context(self.checkpoints)

    def tally_line(self) -> str:
        """The bold tally and what stands beside it: how many counted claims were decided on trained seeds and on
        evaluation repeats only, and the sanity checks and conditions listed apart."""
        ok, bad, unsure = self.counts
        seeds, evaluation = self.noise_counts
        checks, conditions = self.checks, self.conditions
        extra = [f"{seeds} decided on trained seeds", f"{evaluation} on evaluation repeats only"]
        if checks:
            extra.append(f"{len(checks)} sanity check(s) listed apart, {sum(c.matched for c in checks)} passed")
        if conditions:
            extra.append(f"{len(conditions)} condition(s) listed apart, {sum(c.matched for c in conditions)} held")
        if self.not_counted:
            extra.append(f"{len(self.shown)} claim(s) shown, not counted")
        return (f"**{ok} matched, {bad} not matched" + (f", {unsure} {INCONCLUSIVE}" if unsure else "") + "** "
                f"(computed from the numbers above, {POLICY_MARK}; " + "; ".join(extra) + ").")

    def markdown(self) -> str:
        lines = [f"### What matched, what did not, and why — {self.title}", "", self.tally_line(), "",
                 self.context(), ""]
        if self.not_counted and self.shown:
            lines += [f"**Shown, not counted** ({self.not_counted}):", ""]
        if self.shown:
            lines += ["| | paper's claim | paper | ours | why |", "|---|---|---|---|---|"]  # ✅ ❌ – (inconclusive)
        for c in self.shown:
            mark = {True: "✅", False: "❌", None: "–"}[c.matched]
            why = c.why or ("consistent with the paper" if c.matched else "")
            lines.append(f"| {mark} | {_cell(c.claim)} | {_cell(c.paper)} | {_cell(c.ours)} | {_cell(why)} |")
        for title, rows, marks in (
                ("**Sanity checks** (statements that cannot fail at kit scale; not counted above):", self.checks,
                 ("✔", "✘", "why it cannot fail / what it shows")),
                ("**Conditions** (preconditions of an experiment, set up so that they hold; not counted above):",
                 self.conditions, ("✔", "✘", "how it was set up"))):
            if rows:
                lines += ["", title, "", f"| | statement | paper | ours | {marks[2]} |", "|---|---|---|---|---|"]
                lines += [f"| {marks[0] if c.matched else marks[1]} | {_cell(c.claim)} | {_cell(c.paper)} | "
                          f"{_cell(c.ours)} | {_cell(c.why)} |" for c in rows]
        if self.notes:
            lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines)

    def show(self, report=None, name: str = "What matched") -> None:
        """In a notebook: display this verdict's Markdown, then its forest plot (if it has sized claims), and hand
        both to ``report`` (`hedgekit.repro.report.Report`: text ``name``, figure ``name + " (forest plot)"``)."""
        from IPython.display import Markdown, display

        md, fig = self.markdown(), self.forest()
        if report is not None:
            report.text(name, md)
            if fig is not None:
                report.figure(f"{name} (forest plot)", fig)
        display(Markdown(md))
        if fig is not None:
            display(fig)
            import matplotlib.pyplot as plt

            plt.close(fig)

    def forest(self):
        """The forest plot of this verdict's sized claims (`hedgekit.papers.forest.forest_plot`), or None when no
        claim has an interval and a band."""
        return forest_plot(self.claims, title=self.title)

    def _repr_markdown_(self) -> str:  # displays as Markdown in a notebook
        return self.markdown()


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")
