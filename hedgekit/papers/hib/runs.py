"""What an interval of HIB's claims table is computed over (`hedgekit.papers.hib.claims`): one model's numbers per
trained seed or per evaluation repeat (`Runs`), the effects the rows' measures build from them (`gap`, `mean_tau`,
`distance`, `per_run`), and the twin rows of one comparison, on seeds or else on repeats (`twins`: counted once)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from hedgekit.papers.hib import numbers
from hedgekit.papers.verdict import EVALUATION, SEEDS, Effect, Row, binomial_se_diff, unpaired_effect

__all__ = ["TAUS", "ACCURACY", "exact", "Runs", "seed_view", "repeat_view", "per_run", "gap", "mean_tau", "distance",
           "twins"]

TAUS = ("tau_ap_clean", "tau_ap_corrupt", "tau_knn_clean", "tau_knn_corrupt")
ACCURACY = tuple(k for k, _ in numbers.TABLE1_ROWS)  # AP / KNN, clean / corrupt


def exact(x: float) -> float:
    """A difference or mean of the paper's reported decimals at 12 significant digits (0.907 - 0.880 is 0.027, not
    the 0.027000000000000024 of its float subtraction), so that bands print as the numbers they are."""
    return float(f"{x:.12g}")


@dataclass(frozen=True)
class Runs:
    """One model's numbers per run: per trained seed (``evals``: one evaluation per seed) or per evaluation repeat
    of one trained model (``evals``: that model's `hib_protocol.RepeatedEvaluation`)."""

    evals: tuple
    per_seed: bool

    def runs(self, metric: str) -> list[float]:
        if self.per_seed:
            return [e.mean(metric) for e in self.evals] if all(metric in e.values for e in self.evals) else []
        v = self.evals[0].values.get(metric)
        return [] if v is None else [float(x) for x in v]

    @property
    def noise(self) -> str:
        """What the runs' spread measures; per seed, with where the seeds came from when the evaluations say so."""
        if not self.per_seed:
            return "evaluation repeats of one trained model"
        source = getattr(self.evals[0], "source", "") if self.evals else ""
        return f"seed-to-seed spread ({source})" if source else "seed-to-seed spread"


def seed_view(seeds) -> dict:
    """(N, D, label) -> `Runs` over the seeds, for every model with two or more trained seeds."""
    return {k: Runs(tuple(evs), True) for k, evs in (seeds or {}).items() if len(evs) >= 2}


def repeat_view(results) -> dict:
    return {k: Runs((r,), False) for k, r in (results or {}).items()}


def per_run(columns: Sequence[Sequence[float]], combine: Callable, kind: str, noise: str) -> Effect | None:
    """``combine`` of the columns' values run by run, as an `Effect` over the runs (t interval over n runs)."""
    k = min((len(c) for c in columns), default=0)
    if k == 0:
        return None
    vals = [float(combine([c[i] for c in columns])) for i in range(k)]
    m = float(np.mean(vals))
    se = float(np.std(vals, ddof=1)) / math.sqrt(k) if k > 1 else math.nan
    return Effect(m, se, k, kind, noise if k > 1 else "one run: no interval")


def gap(a, b, metric: str):
    """A - B on ``metric`` (an unpaired effect of independently trained models); for KNN accuracy of one model
    per row, whose repeats do not change, the binomial standard error of the test images."""
    def build(view):
        if a not in view or b not in view:
            return None
        va, vb = view[a].runs(metric), view[b].runs(metric)
        if not va or not vb:
            return None
        if not view[a].per_seed and metric.startswith("knn") and max(np.ptp(va), np.ptp(vb)) < 1e-9:
            ra, rb = view[a].evals[0], view[b].evals[0]
            se = binomial_se_diff(ra.mean(metric), ra.n_images, rb.mean(metric), rb.n_images)
            return Effect(float(np.mean(va) - np.mean(vb)), se, 0, "unpaired",
                          f"binomial standard error of {ra.n_images} test images, one trained model per row")
        noise = view[a].noise if view[a].noise == view[b].noise else (
            f"seed-to-seed spread ({a[2]}: {getattr(view[a].evals[0], 'source', '') or 'seeds'}; {b[2]}: "
            f"{getattr(view[b].evals[0], 'source', '') or 'seeds'})" if view[a].per_seed else view[a].noise)
        return unpaired_effect(va, vb, noise=noise)
    return build


def mean_tau(key):
    """The mean of a model's four τ (Tables 2, 4), run by run."""
    def build(view):
        if key not in view or not all(view[key].runs(t) for t in TAUS):
            return None
        return per_run([view[key].runs(t) for t in TAUS], np.mean, "mean of the four τ", view[key].noise)
    return build


def distance(reference: Mapping):
    """The mean |ours - paper| over the accuracy cells of the models in the view, run by run (a level row)."""
    def build(view):
        cols = [[abs(x - ref[label][m]) for x in view[(n, d, label)].runs(m)]
                for (n, d), ref in reference.items() for label in ref if (n, d, label) in view for m in ACCURACY]
        cols = [c for c in cols if c]
        if not cols:
            return None
        noise = next(iter(view.values())).noise
        return per_run(cols, np.mean, f"mean |ours - paper| over {len(cols)} cells", noise)
    return build


def twins(id: str, results_key: str, seeds_key: str, build, **row) -> list[Row]:
    """One comparison as two rows: on trained seeds (``measured[seeds_key]``), else on the evaluation repeats of
    ``measured[results_key]`` (the second steps aside when the first is measured: counted once)."""
    def on_seeds(m):
        return build(seed_view(m.get(seeds_key)))

    def on_repeats(m):
        return None if on_seeds(m) is not None else build(repeat_view(m.get(results_key)))

    return [Row(id + ".seeds", measure=on_seeds, noise=SEEDS, **row),
            Row(id + ".repeats", measure=on_repeats, noise=EVALUATION, **row)]
