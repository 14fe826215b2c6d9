"""The app's models: which zoo models its pages show, at which preset, and how they are loaded.

Every page names its models here (`app_models` for the playground and the compare page: the models each method
record offers, `hedgekit.zoo.methods.MethodRecord.app_models`; `retrieval_spec` in
`hedgekit.interactive.retrieval`, `spe_spec` in `hedgekit.interactive.prototypes`); the specs are
`hedgekit.zoo.Spec`s, loaded or trained by `load_model`.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import torch

from hedgekit.errors import InputError
from hedgekit.methods.hib import BETA
from hedgekit.zoo import METHODS, PRESETS, Spec, find_checkpoint, load_or_train, method

__all__ = ["APP_CENTROID_IMAGES", "DEFAULT_MODEL", "POINT_MODEL", "BETAS", "DEFAULT_BETA",
           "CompareEntry", "app_models", "app_preset", "app_spec", "compare_entries", "load_model",
           "expected_train_seconds", "beta_options", "trained_or_fast"]

APP_CENTROID_IMAGES = 30  # test images per class for the app's centroids (see `hedgekit.evaluation.centroids`)

DEFAULT_MODEL = "MoG-1 (HIB), D=2"
POINT_MODEL = "point, D=2"
DEFAULT_BETA = BETA  # the paper's KL weight (sec. 4.1), written once in `hedgekit.methods.hib`
BETAS = (0.0, DEFAULT_BETA, 1e-2)  # HIB App. E's range


def app_models() -> dict[str, dict]:
    """Display name -> Spec fields of every model the app offers (N = 2 digits; preset and beta come from the app):
    each registered method's ``app_models``, in the order the methods registered."""
    return {name: fields for record in METHODS.values() for name, fields in record.app_models.items()}


def app_preset() -> str:
    """The preset named by env var ``HEDGEKIT_PRESET`` (default "paper"; tests use "fast")."""
    preset = os.environ.get("HEDGEKIT_PRESET", "paper").strip() or "paper"
    if preset not in PRESETS:
        raise InputError(f"HEDGEKIT_PRESET={preset!r} is not a preset; use one of {sorted(PRESETS)}")
    return preset


def app_spec(choice: str, preset: str | None = None, beta: float = DEFAULT_BETA, n_digits: int = 2):
    """The `hedgekit.zoo.Spec` behind a model choice of the app (an `app_models` key); ``beta`` goes to the
    models whose spec has one (HIB's)."""
    models = app_models()
    if choice not in models:
        raise InputError(f"unknown model {choice!r}; choose one of {list(models)}")
    fields = dict(models[choice])
    if "beta" in {f.name for f in dataclasses.fields(method(fields["kind"]).spec_type)}:
        fields["beta"] = float(beta)
    return Spec(n_digits=n_digits, preset=preset or app_preset(), **fields)


@dataclass(frozen=True)
class CompareEntry:
    """One column of the Compare page: a model choice of `app_models`, or SPE (``choice="spe"``,
    `hedgekit.interactive.prototypes.spe_spec`)."""

    title: str
    choice: str  # app_models key, or "spe"
    note: str = ""


def compare_entries() -> list[CompareEntry]:
    """The Compare page's columns."""
    return [
        CompareEntry("point", POINT_MODEL, "deterministic: a dot, no uncertainty"),
        CompareEntry("HIB, MoG-1", "MoG-1 (HIB), D=2", "one Gaussian per input"),
        CompareEntry("HIB, MoG-2", "MoG-2, D=2", "two Gaussians per input"),
        CompareEntry("SPE", "spe", "stochastic prototype embeddings (Scott et al. 2019): a Gaussian per input, "
                                   "classes as prototypes"),
    ]


def load_model(spec, progress: bool = False, **kwargs):
    """`hedgekit.zoo.load_or_train` for the app, the notebooks and the benchmark: (model in eval mode, meta).

    Checkpoints cached by early versions of the zoo recorded ``torch.__version__`` as a
    ``TorchVersion`` (a ``str`` subclass) that ``torch.load(weights_only=True)``
    refuses; allow-listing that one harmless class keeps such caches loadable. Keyword
    arguments (e.g. ``callback``, the app's progress bar) go to `load_or_train`.
    """
    with torch.serialization.safe_globals([torch.torch_version.TorchVersion]):
        model, meta = load_or_train(spec, progress=progress, **kwargs)
    return model.eval(), meta


def expected_train_seconds(spec) -> int:
    """Rough wall time to train ``spec`` with one torch thread (the app's progress message, ``reproduce
    --list-models``, ``--plan`` and ``--budget``): its method record's ``train_seconds`` of its preset and kind (or
    kind and recipe, e.g. SPE on L-shapes; `hedgekit.zoo.kit_methods` says where the kit's were measured), times
    N / 2 for N-digit images (28 x 28N: the cost grows with the image), times K / the preset's K for a HIB model
    that draws its own samples per input, times steps / the preset's steps for a steps override. An unknown preset
    counts as ``paper``."""
    seconds = method(spec.kind).train_seconds
    table = seconds.get(spec.preset, seconds["paper"])
    base = table.get(f"{spec.kind}-{spec.recipe_key}", table[spec.kind])
    if spec.data == "ndigit":
        base *= spec.n_digits / 2
    if spec.kind == "hib" and spec.samples is not None:
        base *= spec.samples / spec.preset_k
    if spec.steps is not None:
        base = base * spec.steps / PRESETS[spec.preset][spec.recipe_key]["steps"]
    return int(round(base))


def beta_options(preset: str, choice: str = DEFAULT_MODEL) -> list[tuple[float, bool]]:
    """[(beta, checkpoint exists)] for the HIB model ``choice`` at each beta of `BETAS`."""
    return [(b, find_checkpoint(app_spec(choice, preset, b)) is not None) for b in BETAS]


def trained_or_fast(spec):
    """``spec`` if a checkpoint of it exists (shipped or cached), else the same model at the fast preset.

    Models no checkpoint ships for (the triplet models, SPE at N = 3) would take minutes at the paper preset;
    the app shows their fast twin (seconds to train) unless the paper one was trained, e.g. by a notebook.
    """
    return spec if find_checkpoint(spec) is not None else spec.at_preset("fast")
