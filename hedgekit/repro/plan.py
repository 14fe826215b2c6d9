"""``reproduce --plan``: the missing seed models of the selected notebooks, in the order that buys seeds soonest.

A spec's seeds are its models that differ in the seed alone (``point-n2-d2-paper-s0``, ``-s1``, ...). A seed counts
as held when its checkpoint is on this machine (`hedgekit.zoo.find_checkpoint`) or the ledger holds its measures
(`hedgekit.zoo.ledger.seeds_of`, under the current code key); the seeds planned are those the notebooks list
(`hedgekit.repro.catalog.notebook_models`), so the plan adds no seed a claim does not use.

The ordering rule: a missing seed of a spec that holds h seeds is the (h + i)-th seed of its spec when it is the
i-th of the spec's missing seeds, by seed. Its tier is the first of `TIERS` it brings the spec up to: "3" (three
seeds, what a claim needs to see the retraining spread), then "5", then "more". Tier "3" comes first, then "5",
then "more"; within a tier the cheapest estimated minutes first (`hedgekit.interactive.models.expected_train_seconds`),
ties by spec name and seed. ``reproduce --train-missing --budget MINUTES`` trains in this order
(`hedgekit.repro.pool.train_missing`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

from hedgekit.interactive import models

from hedgekit.zoo import find_checkpoint, ledger

__all__ = ["TIERS", "PlanRow", "plan", "plan_lines"]

TIERS = (("3", 3), ("5", 5), ("more", None))  # (label, the seeds a spec has up to it; None: any number)


@dataclass(frozen=True)
class PlanRow:
    """One missing model of the plan: its spec, tier (`TIERS`), estimated minutes and the plan's minutes so far."""

    spec: object
    tier: str
    minutes: float
    cumulative: float


def plan(pairs: Sequence[tuple[str, object]], found: Callable[[object], bool] | None = None) -> list[PlanRow]:
    """The missing models of ``pairs`` ((notebook, spec), `hedgekit.repro.catalog.notebook_models`) in the order of
    the module docstring. ``found(spec)``: whether its checkpoint is on this machine (default
    `hedgekit.zoo.find_checkpoint`)."""
    found = found or (lambda spec: find_checkpoint(spec) is not None)
    seeds: dict[str, dict[str, object]] = {}
    for _, spec in pairs:
        seeds.setdefault(dataclasses.replace(spec, seed=0).name, {}).setdefault(spec.name, spec)
    rows = []
    for key, named in seeds.items():
        specs = sorted(named.values(), key=lambda s: s.seed)
        have = set(ledger.seeds_of(specs[0])) | {s.seed for s in specs if found(s)}
        for i, spec in enumerate([s for s in specs if s.seed not in have], 1):
            tier = next(n for n, (label, up_to) in enumerate(TIERS) if up_to is None or len(have) + i <= up_to)
            rows.append((tier, models.expected_train_seconds(spec) / 60, key, spec.seed, spec))
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
                 "each)")
    return lines
