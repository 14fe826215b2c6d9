"""Effect sizes with an interval, the numbers every verdict of `hedgekit.papers.verdict` judges (it re-exports every
name here).

An `Effect` is a difference between two rows (in the rows' units) with its standard error and what that error
measures; its 95% interval uses Student's t with n - 1 degrees of freedom for n runs (mean ± 2 se for a given
(mean, se)). A `Spread` is (mean, std) over runs that keeps the runs' values, so that a claim can pair them:
`paired_effect` (the same model on the same data: the spread of the per-run differences) and `unpaired_effect`
(independently trained models: both rows' spreads).

Evidence is runs with their count: a list or array of per-seed values, a `Spread`, or an `Effect` built with its
``n``. A bare tuple is refused (two seeds and a (mean, SD) pair look alike), non-finite runs are dropped and counted,
and fewer than two finite runs give no interval.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hedgekit.errors import InputError

__all__ = ["ONE_SEED", "Effect", "Spread", "spread", "paired_effect", "unpaired_effect", "as_effect"]

ONE_SEED = "one seed: evaluation noise only"


@dataclass(frozen=True)
class Effect:
    """An effect (a difference between two rows, in the rows' units) with its standard error.

    ``n``: runs behind it (per arm for an unpaired effect; 0 when only a mean and a standard error were given, e.g.
    a binomial standard error); ``kind``: "paired", "unpaired", "runs" or "given"; ``noise``: what the standard
    error measures, quoted in reasons; ``dropped``: runs left out because their value was not a finite number.
    """

    mean: float
    se: float
    n: int = 0
    kind: str = "given"
    noise: str = "seed-to-seed spread"
    dropped: int = 0

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

    @property
    def sd(self) -> float:
        """The per-run spread behind the standard error, se x sqrt(n) (NaN for a given (mean, se))."""
        return self.se * math.sqrt(self.n) if self.n >= 1 else math.nan

    def _flags(self) -> str:
        flags = [f"{self.n} runs"] if self.n else []
        if self.se == 0:
            flags.append("SD 0: identical runs")
        if self.dropped:
            flags.append(f"{self.dropped} non-finite run(s) dropped")
        return "".join(f", {f}" for f in flags)

    def text(self, digits: int = 2) -> str:
        lo, hi = self.interval()
        if not math.isfinite(lo):
            drop = f"; {self.dropped} non-finite run(s) dropped" if self.dropped else ""
            return f"{self.mean:+.{digits}f} (no interval: {self.noise}{drop})"
        return (f"{self.mean:+.{digits}f}, 95% interval [{lo:+.{digits}f}, {hi:+.{digits}f}] "
                f"({self.kind}, {self.noise}{self._flags()})")


class Spread(tuple):
    """``(mean, std)`` over the finite runs (std with ddof = 1; NaN for fewer than two) that keeps every run's value
    in run order (`values`, non-finite ones included, so that paired rows stay aligned) and how many were not finite
    (`dropped`), so that claims can build intervals and paired differences from a summary table."""

    values: tuple
    dropped: int

    def __new__(cls, values: Sequence[float]):
        vals = _run_values(list(values) if type(values) is tuple else values)  # a Spread is built from runs
        fin = [x for x in vals if math.isfinite(x)]
        n = len(fin)
        mean = sum(fin) / n if n else math.nan
        std = math.sqrt(sum((x - mean) ** 2 for x in fin) / (n - 1)) if n > 1 else math.nan
        out = super().__new__(cls, (mean, std))
        out.values = vals
        out.dropped = len(vals) - n
        return out

    def __reduce__(self):
        return (Spread, (self.values,))


def _run_values(x) -> tuple[float, ...]:
    """The run values of a `Spread` or of a list or 1-D array of numbers, in run order. A bare tuple is refused:
    (a, b) could be two seeds or a (mean, SD) pair, and a summary without its run count cannot give an interval."""
    if isinstance(x, Spread):
        return x.values
    if isinstance(x, tuple):
        raise InputError(f"seeds are a list or 1-D array of run values (their count is its length); got the bare "
                         f"tuple {x!r}: pass a list of the runs, or an Effect(mean, se, n) for a summary with its n")
    if isinstance(x, (str, bytes, dict)) or not hasattr(x, "__len__"):
        raise InputError(f"seeds are a list or 1-D array of run values; got {type(x).__name__} {x!r}")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"seeds are a list or 1-D array of numbers; got {x!r}") from None
    if arr.ndim != 1:
        raise InputError(f"seeds are a 1-D list of run values; got an array of shape {arr.shape}")
    return tuple(float(v) for v in arr)


def _as_spread(x) -> Spread:
    """``x`` as a `Spread`: itself, or the run values of a list or 1-D array (a bare tuple is refused)."""
    return x if isinstance(x, Spread) else Spread(list(_run_values(x)))


def spread(x) -> tuple[float, float, int, tuple]:
    """(mean, std, n, values) over the finite runs of a `Spread` or a list or 1-D array of run values (`Spread`);
    a bare tuple raises `InputError` (`_run_values`)."""
    s = _as_spread(x)
    fin = tuple(v for v in s.values if math.isfinite(v))
    return s[0], s[1], len(fin), fin


def paired_effect(a, b, scale: float = 1.0, noise: str = "seed-to-seed spread") -> Effect:
    """A - B when each run measures A and B on the same model and data (e.g. mAP with and without gallery
    cleaning): the standard error of the per-run differences, not the sum of both rows' spreads.
    ``a``, ``b``: `Spread` or run values in the same run order; ``scale`` multiplies (e.g. 100 for points). A run
    whose A or B is not finite is dropped (counted in ``dropped``); fewer than two runs left give no interval."""
    va, vb = _run_values(a), _run_values(b)
    if len(va) != len(vb):
        raise InputError(f"paired runs need the same number of values; got {len(va)} and {len(vb)}")
    diffs = [scale * (x - y) for x, y in zip(va, vb) if math.isfinite(x) and math.isfinite(y)]
    m, s, n, _ = spread(diffs)
    return Effect(m, s / math.sqrt(n) if n > 1 else math.nan, n, "paired", noise if n > 1 else ONE_SEED,
                  len(va) - n)


def unpaired_effect(a, b, scale: float = 1.0, noise: str = "seed-to-seed spread") -> Effect:
    """A - B of independently trained models: se = sqrt(std_A² / n_A + std_B² / n_B) over each row's finite runs
    (non-finite ones dropped and counted); ``n`` is the smaller row's count, and a row with fewer than two runs
    gives no interval. A (mean, SD) summary is refused (`_run_values`): its SD is not a standard error."""
    sa_, sb_ = _as_spread(a), _as_spread(b)
    ma, sa, na, _ = spread(sa_)
    mb, sb, nb, _ = spread(sb_)
    n = min(na, nb)
    se = math.sqrt(sa * sa / na + sb * sb / nb) if n > 1 else math.nan
    return Effect(scale * (ma - mb), scale * se, n, "unpaired", noise if n > 1 else ONE_SEED,
                  sa_.dropped + sb_.dropped)


def as_effect(ours) -> Effect:
    """``ours`` as an `Effect`: itself, or run values (their mean and standard error over the n finite runs; fewer
    than two have no standard error). A bare tuple raises `InputError`: a summary is an `Effect` with its n."""
    if isinstance(ours, Effect):
        return ours
    s = _as_spread(ours)
    m, sd, n, _ = spread(s)
    return Effect(m, sd / math.sqrt(n) if n > 1 else math.nan, n, "runs",
                  "seed-to-seed spread" if n > 1 else ONE_SEED, s.dropped)
