"""The app's models: which zoo models its pages show, at which preset, and how they are loaded.

Every page names its models here (`APP_MODELS` for the playground and the compare page, `retrieval_spec` in
`hedgekit.interactive.retrieval`, `spe_spec` in `hedgekit.interactive.prototypes`); the specs are
`hedgekit.zoo.Spec`s, loaded or trained by `load_model`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from hedgekit.errors import InputError
from hedgekit.methods.hib import BETA
from hedgekit.zoo import PRESETS, Spec, find_checkpoint, load_or_train

__all__ = ["APP_MODELS", "APP_CENTROID_IMAGES", "DEFAULT_MODEL", "POINT_MODEL", "BETAS", "DEFAULT_BETA",
           "TRAIN_SECONDS", "CompareEntry", "app_preset", "app_spec", "compare_entries", "load_model",
           "expected_train_seconds", "beta_options", "trained_or_fast"]

APP_CENTROID_IMAGES = 30  # test images per class for the app's centroids (see `hedgekit.evaluation.centroids`)

# Display name -> Spec fields (N = 2 digits; preset and beta come from the app).
APP_MODELS: dict[str, dict] = {
    "MoG-1 (HIB), D=2": dict(kind="hib", components=1, dim=2),
    "MoG-2, D=2": dict(kind="hib", components=2, dim=2),
    "point, D=2": dict(kind="point", components=1, dim=2),
    # the paper's K = 8 samples per input: with the `paper` preset's K = 4, MoG-1 at D = 3 gives every input one
    # variance and does not hedge (`hedgekit.papers.hib.experiments.hib_k`); the fast preset's K is 8 anyway
    "MoG-1 (HIB), D=3 (2D projection)": dict(kind="hib", components=1, dim=3, samples=8),
}
DEFAULT_MODEL = "MoG-1 (HIB), D=2"
POINT_MODEL = "point, D=2"
DEFAULT_BETA = BETA  # the paper's KL weight (sec. 4.1), written once in `hedgekit.methods.hib`
BETAS = (0.0, DEFAULT_BETA, 1e-2)  # HIB App. E's range
# Seconds to train one model of a kind (or of a kind and recipe, "spe-lshapes", "spe-ndigit_fig4") at its preset's own
# steps and K, N = 2 digits, one torch thread, two models side by side on the 2-core AMD EPYC (`reproduce
# --train-missing --jobs 2`). `paper` rows from the CPU times docs/speed.md records ("Training notebooks 07's and
# 04's missing checkpoints on the 2-core CPU", session 31): HIB 18,000 steps at K = 8 2,127-2,173 s (N = 2, three
# processes on the two cores) and 2,850-3,387 s (N = 3, three to four), and the shipped K = 8 models 994 s (N = 2)
# and 1,258 s (N = 3) for 9,000 steps: ~0.0133 s per step and sample K at N = 2, so 480 s for the preset's 9,000
# steps at K = 4 (a step's cost grows with K: `expected_train_seconds`); PN 135-137 s for 3,000 steps (785-788 s for
# 12,000 at N = 3); SPE 291-299 s for 3,000 steps; SPE's Figure 4 recipe (1,500 steps of 20 classes x 6 images)
# 29-33 s. Point 118-125 s per 3,000 steps (26 Nov 2026), triplet / het 19-41 s for 1,500 steps, SPE on L-shapes
# 2,575 s (2,000 steps, busy core). `fast`: hib 15-41 s, point 18-22 s, spe 8-23 s (Figure 4 recipe: 6-8 s,
# `hedgekit.zoo.specs.PRESETS`), triplet / het 2-5 s. Most shipped checkpoints record longer times (up to 4.8x):
# older, slower training code trained them.
TRAIN_SECONDS = {
    "fast": {"hib": 30, "point": 20, "pn": 20, "spe": 20, "spe-lshapes": 30, "spe-ndigit_fig4": 8, "triplet": 5,
             "het": 5},
    "paper": {"hib": 480, "point": 480, "pn": 135, "spe": 290, "spe-lshapes": 2600, "spe-ndigit_fig4": 30,
              "triplet": 30, "het": 30},
}


def app_preset() -> str:
    """The preset named by env var ``HEDGEKIT_PRESET`` (default "paper"; tests use "fast")."""
    preset = os.environ.get("HEDGEKIT_PRESET", "paper").strip() or "paper"
    if preset not in PRESETS:
        raise InputError(f"HEDGEKIT_PRESET={preset!r} is not a preset; use one of {sorted(PRESETS)}")
    return preset


def app_spec(choice: str, preset: str | None = None, beta: float = DEFAULT_BETA, n_digits: int = 2):
    """The `hedgekit.zoo.Spec` behind a model choice of the app (`APP_MODELS` key)."""
    if choice not in APP_MODELS:
        raise InputError(f"unknown model {choice!r}; choose one of {list(APP_MODELS)}")
    fields = dict(APP_MODELS[choice])
    if fields["kind"] == "hib":
        fields["beta"] = float(beta)
    return Spec(n_digits=n_digits, preset=preset or app_preset(), **fields)


@dataclass(frozen=True)
class CompareEntry:
    """One column of the Compare page: a model choice of `APP_MODELS`, or SPE (``choice="spe"``,
    `hedgekit.interactive.prototypes.spe_spec`)."""

    title: str
    choice: str  # APP_MODELS key, or "spe"
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
    --list-models``, ``--plan`` and ``--budget``): `TRAIN_SECONDS` of its preset and kind (or kind and recipe,
    e.g. SPE on L-shapes), times N / 2 for N-digit images (28 x 28N: the cost grows with the image), times K / the
    preset's K for a HIB model that draws its own samples per input, times steps / the preset's steps for a steps
    override. An unknown preset counts as ``paper``."""
    table = TRAIN_SECONDS.get(spec.preset, TRAIN_SECONDS["paper"])
    recipe = getattr(spec, "recipe_key", spec.kind)
    base = table.get(f"{spec.kind}-{recipe}", table.get(spec.kind, max(table.values())))
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
