"""Measures a notebook takes from a trained model beyond its trainer's, kept in the ledger like the trainer's own.

A checkpoint records what its trainer measured (the ledger's ``table1`` or ``quick_check`` group). Some claims read
more from a model: notebook 03's App. D counts the adjacency of its number line (the ledger's ``number_line``
group). A paper names such groups for its specs (``experiments.model_measures``, gathered by
`hedgekit.repro.catalog.model_measures`: group -> function of the trained model and its checkpoint's metadata),
and then:

* ``reproduce --train-missing`` measures each group on every model it trains and records it as the model ends
  (`measure_records`, called in the worker; the parent writes the records);
* ``reproduce --record-cached`` measures and records the groups of the checkpoints already on the machine
  (`record_cached_measures`), e.g. models trained before their group existed;
* a notebook reads a group with `hedgekit.repro.session.Session.measures`: measured on the model where its
  checkpoint is here (and checked against the ledger's record, `hedgekit.zoo.ledger.check`), else the ledger's
  record, else measured on the model trained now.

Measuring reads the model in eval mode on the CPU; on the CPU it repeats bit for bit, so a record's measures and a
later measurement of the same checkpoint agree exactly.
"""
from __future__ import annotations

from typing import Callable, Iterable

from hedgekit.errors import InputError
from hedgekit.interactive.models import load_model
from hedgekit.repro.catalog import model_measures
from hedgekit.zoo import find_checkpoint, ledger

__all__ = ["measure_of", "measure_records", "record_cached_measures"]


def measure_of(spec, group: str) -> Callable:
    """The function measuring ``group`` on the trained model ``spec`` (`hedgekit.repro.catalog.model_measures`);
    InputError naming the groups ``spec`` has when it has no such group."""
    groups = model_measures(spec)
    if group not in groups:
        raise InputError(f"{spec.name} has no measure group {group!r}; its groups: "
                         + (", ".join(sorted(groups)) or "none"))
    return groups[group]


def measure_records(spec, model, meta: dict) -> list[dict]:
    """The ledger records (`hedgekit.zoo.ledger.build_record`, nothing written) of every group
    `hedgekit.repro.catalog.model_measures` names for ``spec``, measured on its trained ``model`` (moved to the
    CPU); ``meta``: its checkpoint's metadata, with ``path``. [] when it has no such group or no checkpoint file."""
    groups = model_measures(spec)
    if not groups or not meta.get("path"):
        return []
    model = model.cpu()
    return [ledger.build_record(spec, group, measure(model, meta), meta, meta["path"])
            for group, measure in groups.items()]


def record_cached_measures(specs: Iterable, folder=None) -> tuple[list[dict], list[str]]:
    """Measure and record (`hedgekit.zoo.ledger.append`) every group `hedgekit.repro.catalog.model_measures` names
    for each of ``specs`` that the ledger does not hold yet, on its checkpoint where it is shipped or cached here
    (nothing trains). Returns (records written, "name: group: why" for each group not recorded: no checkpoint
    here). A measurement that contradicts a record raises `hedgekit.zoo.ledger.LedgerConflict`."""
    written, passed = [], []
    for spec in {s.name: s for s in specs}.values():
        todo = {g: m for g, m in model_measures(spec).items() if ledger.held(spec, g, folder) is None}
        if not todo:
            continue
        if find_checkpoint(spec) is None:
            passed += [f"{spec.name}: {g}: no checkpoint on this machine" for g in todo]
            continue
        model, meta = load_model(spec, progress=False)
        model = model.cpu()
        for group, measure in todo.items():  # only the groups not held: none is measured twice
            record = ledger.build_record(spec, group, measure(model, meta), meta, meta["path"])
            written.append(ledger.append(record, folder))
    return written, passed
