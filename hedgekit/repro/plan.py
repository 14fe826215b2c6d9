"""``reproduce --plan``: the missing seed models of the selected notebooks, in the order that buys seeds soonest.

A spec's seeds are its models that differ in the seed alone (``point-n2-d2-paper-s0``, ``-s1``, ...). A seed counts
as held when its checkpoint is on this machine (`hedgekit.zoo.find_checkpoint`) or the ledger holds every group of
measures the notebooks read from it: its trainer's and those a notebook measures on it (`recorded_seeds`). The
seeds planned are those the notebooks list (`hedgekit.repro.catalog.notebook_models`), so the plan adds no seed a
claim does not use.

The ordering rule: a missing seed of a spec that holds h seeds is the (h + i)-th seed of its spec when it is the
i-th of the spec's missing seeds, by seed. Its tier is the first of `TIERS` it brings the spec up to: "3" (three
seeds, what a claim needs to see the retraining spread), then "5", then "more". Tier "3" comes first, then "5",
then "more"; within a tier the cheapest estimated minutes first (`estimated_seconds`), ties by spec name and seed.
``reproduce --train-missing --budget MINUTES`` trains in this order (`hedgekit.repro.pool.train_missing`).

The estimate learns from the ledger (`estimated_seconds`): a record keeps its model's wall seconds, so a spec
trained before at another seed is expected to take what it took (the median), and a spec never trained is expected
to take the method record's figure (`hedgekit.interactive.models.expected_train_seconds`) times how far that figure
has been from the ledger's times for the same kind of model. The figures alone were measured once, on an idle core;
the ledger's times were taken where the kit is filled, 2-core machines training beside other work (docs/speed.md),
which is what a budget has to plan for. A budget spends a job's wall time, training and measuring
(``job_seconds``); a record from before that field keeps only its training time (``train_seconds``), which is
scaled by the median job / training ratio of the records of the same kind that hold both (1 while none does).
"""
from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

from hedgekit.interactive import models

from hedgekit.repro.catalog import model_measures
from hedgekit.zoo import find_checkpoint, ledger

__all__ = ["TIERS", "PlanRow", "estimated_seconds", "recorded_seeds", "plan", "plan_lines"]

TIERS = (("3", 3), ("5", 5), ("more", None))  # (label, the seeds a spec has up to it; None: any number)


def estimated_seconds(spec, device: str = "cpu", folder=None) -> float:
    """Wall seconds that training and measuring ``spec`` on ``device`` is expected to take, from the ledger's records
    on that device (``folder``: `hedgekit.zoo.ledger.ledger_dir` by default) of the file of its paper, each timed
    by `_job_seconds`: the median time of the records of the same spec at any seed; else the static figure
    (`models.expected_train_seconds`) times the median of time / static figure over the records of the same kind,
    preset and recipe (failing that, kind and preset); else the static figure. Records of any code key count: what
    a recipe costs to train does not depend on what it measured."""
    static = float(models.expected_train_seconds(spec))
    base = dataclasses.replace(spec, seed=0).name
    held = [r for r in ledger.records(ledger.paper_of(spec), folder) if r.get("device") == device
            and isinstance(r.get("train_seconds"), (int, float)) and r["train_seconds"] > 0]
    overhead: dict[str, list[float]] = {}  # kind -> job / training seconds of the records that hold both
    for r in held:
        if isinstance(r.get("job_seconds"), (int, float)):
            overhead.setdefault(r["spec"].get("kind"), []).append(r["job_seconds"] / r["train_seconds"])
    same, ratios = [], {}
    for r in held:
        seen = ledger.spec_of(r)
        seconds = _job_seconds(r, overhead.get(seen.kind))
        if dataclasses.replace(seen, seed=0).name == base:
            same.append(seconds)
        elif seen.kind == spec.kind and seen.preset == spec.preset:
            ratio = seconds / max(models.expected_train_seconds(seen), 1)
            ratios.setdefault(seen.recipe_key, []).append(ratio)
            ratios.setdefault(None, []).append(ratio)
    if same:
        return float(statistics.median(same))
    ratio = ratios.get(spec.recipe_key) or ratios.get(None)
    return static * statistics.median(ratio) if ratio else static


def _job_seconds(record, overhead: list[float] | None) -> float:
    """``record``'s job seconds; for a record without them, its training seconds times the median of ``overhead``
    (job / training seconds of the records of its kind that hold both; 1 while none does)."""
    if isinstance(record.get("job_seconds"), (int, float)):
        return float(record["job_seconds"])
    return float(record["train_seconds"]) * (statistics.median(overhead) if overhead else 1.0)


@dataclass(frozen=True)
class PlanRow:
    """One missing model of the plan: its spec, tier (`TIERS`), estimated minutes and the plan's minutes so far."""

    spec: object
    tier: str
    minutes: float
    cumulative: float


def recorded_seeds(spec) -> set[int]:
    """The seeds of ``spec`` (at any seed) whose every group the ledger holds under the current code key
    (`hedgekit.zoo.ledger.seeds_of`): its checkpoint's group (`hedgekit.zoo.ledger.CHECKPOINT_GROUPS`; any group
    for a spec without one) and each group `hedgekit.repro.catalog.model_measures` names for it."""
    groups = [ledger.CHECKPOINT_GROUPS.get(getattr(spec, "family", ""))] + list(model_measures(spec))
    return set.intersection(*(set(ledger.seeds_of(spec, group)) for group in groups))


def plan(pairs: Sequence[tuple[str, object]], found: Callable[[object], bool] | None = None,
         device: str = "cpu") -> list[PlanRow]:
    """The missing models of ``pairs`` ((notebook, spec), `hedgekit.repro.catalog.notebook_models`) in the order of
    the module docstring, estimated for ``device`` (`estimated_seconds`). ``found(spec)``: whether its checkpoint is
    on this machine (default `hedgekit.zoo.find_checkpoint`)."""
    found = found or (lambda spec: find_checkpoint(spec) is not None)
    seeds: dict[str, dict[str, object]] = {}
    for _, spec in pairs:
        seeds.setdefault(dataclasses.replace(spec, seed=0).name, {}).setdefault(spec.name, spec)
    rows = []
    for key, named in seeds.items():
        specs = sorted(named.values(), key=lambda s: s.seed)
        have = recorded_seeds(specs[0]) | {s.seed for s in specs if found(s)}
        for i, spec in enumerate([s for s in specs if s.seed not in have], 1):
            tier = next(n for n, (label, up_to) in enumerate(TIERS) if up_to is None or len(have) + i <= up_to)
            rows.append((tier, estimated_seconds(spec, device) / 60, key, spec.seed, spec))
    out, total = [], 0.0
    for tier, minutes, _, _, spec in sorted(rows, key=lambda r: r[:4]):
        total += minutes
        out.append(PlanRow(spec, TIERS[tier][0], minutes, total))
    return out


def plan_lines(rows: Sequence[PlanRow]) -> list[str]:
    """``--plan``'s table: model, tier, estimated minutes, cumulative minutes; then a summary line."""
    lines = [f"{'model':<46} {'tier':>4} {'est. min':>9} {'cumulative min':>15}"]
    lines += [f"{r.spec.name:<46} {r.tier:>4} {r.minutes:>9.1f} {r.cumulative:>15.1f}" for r in rows]
    lines.append(f"{len(rows)} missing models, ~{rows[-1].cumulative if rows else 0:.0f} min in all (one torch thread "
                 "each; estimates from the ledger's times where it has them)")
    return lines
