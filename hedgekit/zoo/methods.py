"""Method records: one registered record per method of the zoo, read by every place that lists methods.

A `MethodRecord` says everything the kit needs to train, name, command and show one method: its ``kind`` (the
first word of its models' names), its training ``family`` (the trainer of `hedgekit.zoo.recipes.TRAINERS`), its
network's ``head`` (`hedgekit.nets.embedder.KINDS`), its ``spec_type`` (a `hedgekit.zoo.specs.ModelSpec` subclass:
its fields, their checks, its name parts `ModelSpec.name_parts`), its own recipe in each preset (``presets``, for
a kind with a recipe of its own), the ``flags`` of ``python -m hedgekit train`` that set its fields, the ``loss``
its family's training loop calls (pairs: `hedgekit.training.fit.fit`'s step loss), and what the app shows of it
(``app_models``) and how long it takes to train (``train_seconds``). Who reads it:

* `hedgekit.zoo.specs.Spec` (the spec type, the head, the family, why a field is refused), `PRESETS`;
* `hedgekit.zoo.recipes` (the loss `fit` calls), `hedgekit.cli` (``--kind`` and the flags each kind takes);
* `hedgekit.interactive.models` (the app's model list, `app_models`, and its time estimates).

`register_method` adds a record; the kit's six methods register in `hedgekit.zoo.kit_methods`, a method of your
own in its own module, imported by your code or named in ``HEDGEKIT_PLUGINS`` (`load_plugins`, which the command
line runs before it parses its flags). docs/extending.md walks through one.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Callable

from hedgekit.errors import InputError
from hedgekit.nets.embedder import KINDS as HEADS
from hedgekit.zoo.names import URL_KIND

FAMILIES = ("pairs", "episodes", "triplets")  # the trainers of `hedgekit.zoo.recipes.TRAINERS`
PLUGINS_ENV = "HEDGEKIT_PLUGINS"  # comma-separated modules that register methods (`load_plugins`)

# Preset -> recipe -> settings (each recipe's numbers, with the reason for each, where they are written: a kind's
# own recipe in its record, `hedgekit.zoo.kit_methods`; the episode and triplet families' shared recipes in
# `hedgekit.zoo.specs`). fast: CI and the FAST notebooks, seconds per model; paper: the papers' settings at
# kit scale, minutes per model on a CPU. `ModelSpec.recipe_key` names a spec's recipe.
PRESETS: dict[str, dict[str, dict]] = {"fast": {}, "paper": {}}


@dataclass(frozen=True)
class Flag:
    """One option of ``python -m hedgekit train`` / ``evaluate`` that sets the spec field ``field``.

    ``sets``: what it sets, in the words that refuse it for a kind that does not take it (the command line's
    message and `hedgekit.zoo.specs.Spec`'s); ``help``: argparse's help; ``type`` / ``choices``: argparse's;
    ``aliases``: its short forms (``("-c",)``).
    """

    field: str
    sets: str
    help: str
    type: Callable[[str], object] | None = None
    choices: tuple | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class MethodRecord:
    """Everything the kit needs about one method; see the module docstring for who reads each part.

    ``presets``: preset -> the settings of the kind's own recipe (a pair-trained kind's `recipe_key` is its
    kind), None for a kind that trains with its family's shared recipes. ``flags``: flag name (``"--beta"``) ->
    `Flag`, the options of ``train`` beyond those every kind takes. ``loss``: for the pairs family, ``loss(emb,
    match, y, cfg, gen, pair_idx) -> (loss, stats)``, the step loss `hedgekit.training.fit.fit` calls (the episode
    family's loss is its prototype head's, `ModelSpec.build_head`; the triplet family's is chosen by
    `hedgekit.training.triplets.TripletConfig.heteroscedastic`). ``app_models``: display name -> `Spec` fields
    (N = 2 digits; the app sets the preset and, for a kind with ``beta``, its β) of the models the app's playground
    and compare pages offer, {} for none. ``train_seconds``: preset -> {kind, or kind-recipe key like
    ``"spe-lshapes"``: rough seconds to train one model with one torch thread} (`hedgekit.interactive.models.
    expected_train_seconds`).
    """

    kind: str
    family: str
    head: str
    spec_type: type
    train_seconds: dict[str, dict[str, int]]
    presets: dict[str, dict] | None = None
    flags: dict[str, Flag] = field(default_factory=dict)
    loss: Callable | None = None
    app_models: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind.isidentifier() or self.kind == URL_KIND:
            raise InputError(f"MethodRecord.kind: expected a lower-case word other than {URL_KIND!r} (the first word "
                             f"of its models' names); got {self.kind!r}")
        if self.family not in FAMILIES:
            raise InputError(f"MethodRecord.family: expected one of {FAMILIES}; got {self.family!r}")
        if self.head not in HEADS:
            raise InputError(f"MethodRecord.head: expected one of {HEADS} (hedgekit.nets.embedder); got {self.head!r}")
        if not isinstance(self.spec_type, type):
            raise InputError(f"MethodRecord.spec_type: expected a ModelSpec subclass; got {self.spec_type!r}")
        if self.family == "pairs" and not callable(self.loss):
            raise InputError(f"the {self.kind} record has no loss: expected loss(emb, match, y, cfg, gen, pair_idx), "
                             "the step loss hedgekit.training.fit.fit calls for a pair-trained method")
        if self.family == "pairs" and (not isinstance(self.presets, dict) or set(self.presets) != set(PRESETS)):
            raise InputError(f"the {self.kind} record's presets: expected one recipe per preset {sorted(PRESETS)} "
                             "(a pair-trained kind's recipe is its own)")
        if not isinstance(self.train_seconds, dict) or set(self.train_seconds) != set(PRESETS) or any(
                self.kind not in seconds for seconds in self.train_seconds.values()):
            raise InputError(f"the {self.kind} record's train_seconds: expected {{preset: {{{self.kind!r}: seconds, "
                             f"...}}}} for each preset {sorted(PRESETS)}; got {self.train_seconds!r}")
        for name, flag in self.flags.items():
            if not (isinstance(name, str) and name.startswith("--") and isinstance(flag, Flag)):
                raise InputError(f"the {self.kind} record's flags: expected {{'--name': Flag(...)}}; got "
                                 f"{name!r}: {flag!r}")
        for name, fields in self.app_models.items():
            if not isinstance(fields, dict) or fields.get("kind") != self.kind:
                raise InputError(f"the {self.kind} record's app model {name!r}: expected Spec fields with "
                                 f"kind={self.kind!r}; got {fields!r}")


METHODS: dict[str, MethodRecord] = {}  # kind -> its record, in the order they registered


def register_method(record: MethodRecord) -> MethodRecord:
    """Add ``record`` to `METHODS` and its own recipes to `PRESETS`; InputError if its kind, one of its recipes
    or one of its app models is registered already, or one of its flags is defined otherwise by another record
    (a flag sets one field, whichever kind takes it: share the `Flag`)."""
    if not isinstance(record, MethodRecord):
        raise InputError(f"register_method: expected a MethodRecord; got {type(record).__name__}")
    if record.kind in METHODS:
        raise InputError(f"kind {record.kind!r} is registered already: expected one record per kind")
    for name, flag in record.flags.items():
        other = every_flag().get(name)
        if other is not None and other != flag:
            raise InputError(f"the {record.kind} record's {name}: expected the Flag other kinds register ({other}); "
                             f"got {flag}")
    taken = sorted({name for r in METHODS.values() for name in r.app_models} & set(record.app_models))
    if taken:
        raise InputError(f"the {record.kind} record's app models {taken} are shown already: expected new names")
    if record.presets is not None and any(record.kind in PRESETS[p] for p in PRESETS):
        raise InputError(f"a recipe named {record.kind!r} exists already in PRESETS: expected a new recipe key")
    for preset, settings in (record.presets or {}).items():
        PRESETS[preset][record.kind] = settings
    METHODS[record.kind] = record
    return record


def method(kind: str) -> MethodRecord:
    """The record of ``kind``; InputError naming the registered kinds for any other."""
    if kind not in METHODS:
        raise InputError(f"kind must be one of {tuple(METHODS)}; got {kind!r}")
    return METHODS[kind]


def every_flag() -> dict[str, Flag]:
    """Flag name -> `Flag` of every registered record (each defined once: `register_method`)."""
    return {name: flag for record in METHODS.values() for name, flag in record.flags.items()}


def load_plugins(value: str | None = None) -> list[str]:
    """Import the modules named in ``value`` (default: env var ``HEDGEKIT_PLUGINS``, comma-separated, e.g.
    ``my_methods,lab.toy``), each of which registers its methods when imported; returns their names. InputError if
    one cannot be imported."""
    value = os.environ.get(PLUGINS_ENV, "") if value is None else value
    names = [name.strip() for name in value.split(",") if name.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise InputError(f"{PLUGINS_ENV}: expected importable modules that register methods (comma-separated, "
                             f"on PYTHONPATH); could not import {name!r}: {exc}") from exc
    return names
