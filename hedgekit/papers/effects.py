"""Effect sizes with an interval, the numbers every verdict of `hedgekit.papers.verdict` judges (issue 46 item 2;
split from it by issue 47, which re-exports every name here).

An `Effect` is a difference between two rows (in the rows' units) with its standard error and what that error
measures; its 95% interval uses Student's t with n - 1 degrees of freedom for n runs (mean ± 2 se for a given
(mean, se)). A `Spread` is (mean, std) over runs that keeps the runs' values, so that a claim can pair them:
`paired_effect` (the same model on the same data: the spread of the per-run differences) and `unpaired_effect`
(independently trained models: both rows' spreads).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from hedgekit.errors import InputError

__all__ = ["ONE_SEED", "Effect", "Spread", "spread", "paired_effect", "unpaired_effect", "as_effect"]

ONE_SEED = "one seed: evaluation noise only"


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


def as_effect(ours) -> Effect:
    """``ours`` as an `Effect`: itself, a given (mean, se) pair, or run values (their mean and standard error over
    n runs; one run has no standard error)."""
    if isinstance(ours, Effect):
        return ours
    if isinstance(ours, tuple) and len(ours) == 2 and not isinstance(ours, Spread):
        return Effect(float(ours[0]), float(ours[1]), noise="standard error as given")
    m, s, n, _ = spread(ours)
    return Effect(m, s / math.sqrt(n) if n > 1 else math.nan, n, "runs", "seed-to-seed spread" if n > 1 else ONE_SEED)
