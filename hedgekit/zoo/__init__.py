"""The one model store: every model of every paper is named by a spec, loaded or trained here.

A spec names a trained model completely (method, data, N, D and the method's own settings, preset, seed);
``Spec(kind=..., ...)`` builds one, a `ModelSpec` of the kind's own type (`SPEC_TYPES`). Names, e.g.::

    hib-n2-d2-c1-beta0.0001-paper-s0        HIB MoG-1 on 2-digit MNIST, D = 2 (Oh et al. 2019, Table 1)
    point-n2-d2-hard-m1-paper-s0            a point embedding with the hard contrastive loss (eq. 1)
    spe-n2-d2-intersection1-paper-s0        SPE on 2-digit MNIST (Scott et al. 2019, Table 2)
    pn-n2-d2-paper-s0                       its deterministic sibling, the Prototypical Network
    spe-lshapes-d2-intersection8-paper-s0   SPE on the synthetic L-shapes (Figures 2-3)

`load_or_train` looks for that name among the checkpoints shipped with the package
(``hedgekit/checkpoints/``), then in the cache (``data/checkpoints/``); if absent it trains the model
with a progress bar, evaluates it, and saves it with its spec, network config, training config, seed,
library versions, training history, metrics and the data it was trained on (`data_source`: the MNIST /
Fashion-MNIST fingerprint and where it was read from). A checkpoint is refused (`CheckpointError` naming
the mismatch) when it was saved for another spec, and passed over (retrained) when the preset's training
recipe has changed since (`is_stale`) or it was trained on other data than the current one (with a
warning that says why, `hedgekit.data.provenance.matches`). The shipped checkpoints, trained before the
data was recorded, carry it in a sidecar ``<name>.json`` (`write_provenance`), so their bytes are unchanged.

Each method belongs to a training *family* (`FAMILIES`): pairs (`hedgekit.training.fit`), episodes
(`hedgekit.training.episodic`) or triplets (`hedgekit.training.triplets`). The runs of the URL benchmark
(Kirchhof et al. 2023, `hedgekit.papers.url.benchmark`) are models of the store too: a `URLSpec` names one
(``url-ce-converged-s0``), found by `find_checkpoint`, judged by `is_stale` and loaded or trained by
`load_or_train` like every other model, in their own format (`URL_FORMAT`). Adding a method is one file in
`hedgekit.methods`, one preset entry per preset in `PRESETS`, one family entry and a spec type (`SPEC_TYPES`) here.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import io
import json
import math
import numbers
import platform
import sys
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, ClassVar, Mapping

import numpy as np
import torch

from hedgekit.checks import (MAX_STEPS, atomic_write, check_count, check_margin, check_number, check_seed,
                             check_writable, resolve_device, write_bytes_atomic)
from hedgekit.data import load_ndigit, make_lshapes, random_occlusion
from hedgekit.data.ndigit import per_class_subset
from hedgekit.data.provenance import Source, matches
from hedgekit.errors import CheckpointError, DataNotFoundError, InputError
from hedgekit.hardware import device_description, resolve_precision
from hedgekit.evaluation.episodes import evaluate_episodes
from hedgekit.methods.prototypes import PN, SAMPLERS, SPE, gamma_init
from hedgekit.nets import EmbeddingNet, model_from_config
from hedgekit.paths import PACKAGE_DIR, cache_path
from hedgekit.training import distributed
from hedgekit.training.episodic import EpisodicConfig, fit_episodic
from hedgekit.training.fit import History, TrainConfig, fit, seed_everything
from hedgekit.training.triplets import TripletConfig, fit_triplets

SHIPPED_DIR = PACKAGE_DIR / "checkpoints"
FORMAT = "hedgekit-checkpoint-v2"  # v2: the SHA-256 covers config and metadata too, not only the weights
_LEGACY_FORMAT = "hedgekit-checkpoint-v1"  # still read (caches of earlier versions): its hash covers the weights only

KINDS = ("point", "hib", "pn", "spe", "triplet", "het")
FAMILIES = {"point": "pairs", "hib": "pairs", "pn": "episodes", "spe": "episodes", "triplet": "triplets",
            "het": "triplets"}
DATASETS = ("ndigit", "lshapes", "fashion")
DATA_NAMES = {"ndigit": "N-digit MNIST", "lshapes": "L-shapes", "fashion": "Fashion-MNIST"}
# main: the paper's setting; fig4: SPE's Figure 4 runs; aug: occlusion augmentation (Taha Table 1 "+ Aug");
# noisy / clean: Fashion-MNIST with look-alike label noise that ignores the image / its clean subset only (Taha
# Table 2, the "independent noise" contrast); ambnoisy / ambclean: the same with image-dependent noise and ambiguous
# overlaid garments (`triplet_data`) / its small clean subset only; longtail: decaying class counts (Tables 3-4)
RECIPES = ("main", "fig4", "aug", "noisy", "clean", "longtail", "ambnoisy", "ambclean")
_TRIPLET_RECIPES = {"ndigit": ("main", "aug", "longtail"),
                    "fashion": ("noisy", "clean", "longtail", "ambnoisy", "ambclean")}
LOSSES = ("soft", "hard")  # point models: soft contrastive (HIB eq. 3) or hard contrastive (eq. 1)
DEFAULT_SAMPLES = {"ndigit": 1, "lshapes": 8}  # SPE sec. 4.2: trained with s = 1; App. A.2: 8 samples per query
# Where a Gaussian head's variances start (`Spec.init_var`): "unit" = `hedgekit.nets.INIT_VAR` for every model,
# "eps" = SPE only, at sigma_eps^2's initial value (App. B), named "veps".
INIT_VARS = ("unit", "eps")

# The "amb" recipes of Taha's Table 2 (image-dependent noise, `triplet_data`; docs/recipes.md, "Taha Table 2 with
# image-dependent noise"): 10% of train and test images are two look-alike garments blended (own weight 0.55-0.7,
# clean label); the same 38% of all labels flip, to the class a clean classifier confuses, with probability
# growing as the square of its uncertainty's percentile; 0.5% of the labels verified clean (300 images, 30 per
# class: small enough that the clean subset alone loses to clean + noisy, the precondition of the cleaning claim).
_AMB = dict(ambiguous=0.1, alpha=(0.55, 0.7), clean_fraction=0.005, power=2.0)

# Preset -> recipe -> settings, the reason for each number beside it. The recipe of a spec is its kind for
# pair-trained models and its data set (+ "_fig4") for prototype models (`Spec.recipe_key`).
PRESETS: dict[str, dict[str, dict]] = {
    "fast": {
        # CI and FAST notebooks: seconds per model. 400 (point) / 300 (HIB) steps of 16 classes x 8 images learn
        # a usable 2-digit embedding (clearly above chance) in ~30 s; evaluation on 2000 test images.
        "point": dict(steps=400, classes_per_batch=16, per_class=8, lr=3e-3, eval_images=2000),
        "hib": dict(steps=300, classes_per_batch=16, per_class=8, lr=3e-3, eval_images=2000),
        # 2-digit MNIST, SPE Table 2 / Figures 6-7. 300 steps of 16 classes x (5 support + 5 query) = 160
        # images per step: 11-12 s per model on one quiet core (3-10x that on a busy shared machine).
        "ndigit": dict(steps=300, n_classes=16, k_support=5, query_per_class=5, lr=3e-3,
                       eval_episodes=20, eval_k=50),  # quick check saved with the model: 20 episodes, 50 support
        # Figure 4 analogue: few-shot training episodes like the paper's 1-shot 20-class task; 200 short
        # steps (120 images each): 6-8 s per run, ~30 s for the four FAST runs (2 samplers x s in {1, 9}).
        "ndigit_fig4": dict(steps=200, n_classes=20, k_support=1, query_per_class=5, lr=3e-3,
                            eval_episodes=20, eval_k=1),
        # L-shapes, Figures 2-3. App. A.2's net with 16 instead of 64 filters per block (~6x cheaper); 600 steps
        # of 4 classes x (2 support + 8 query) on 4000 rendered training images (6 epochs): 23 s on a quiet core.
        "lshapes": dict(steps=600, channels=16, n_train=4000, n_test=2000, k_support=2, query_per_class=8,
                        lr=3e-3, eval_episodes=50, eval_query=25),  # quick check: 50 4-way episodes x 25 queries
        # Taha et al. at kit scale, seconds per model: 150 steps of P x K batches.
        "triplets_ndigit": dict(steps=150, P=18, K=4, lr=1e-3, mining="semi_hard", eval_images=2000),
        "triplets_fashion": dict(steps=150, P=10, K=10, lr=1e-3, mining="semi_hard", eval_images=2000,
                                 clean_fraction=0.05, noise=0.38, noise_seed=0, amb=_AMB),
    },
    "paper": {
        # HIB Table 1 fidelity: 32 classes x 8 images, all 32,640 pairs per step (HIB sec. 4.1: 500k steps x 128
        # pairs). Steps fit 10 CPU-minutes per model on 2 cores: 470 s (point) and 385 s (MoG-1) on idle cores.
        # HIB draws K = 4 samples per input instead of the paper's 8: a step costs ~50 ms instead of 70-107 ms,
        # so 9,000 steps fit where 5,000 did at K = 8, and the longer run is what counts (docs/recipes.md).
        # At D >= 3 K = 4 collapses MoG-1's variances; those notebook models ask for K = 8 (`Spec.samples`,
        # `hedgekit.papers.hib.experiments.hib_k`).
        "point": dict(steps=12000, classes_per_batch=32, per_class=8, lr=3e-3, eval_images=None),
        "hib": dict(steps=9000, k=4, classes_per_batch=32, per_class=8, lr=3e-3, eval_images=None),
        # SPE Table 2: 3000 steps of 32 classes x 10 images, lr 3e-3 cosine (SPE 310 s, PN 229 s for N=2, D=2 on
        # one quiet core). The paper used all 70 classes x 50 support per episode, early stopping, a GPU.
        "ndigit": dict(steps=3000, n_classes=32, k_support=5, query_per_class=5, lr=3e-3,
                       eval_episodes=100, eval_k=50),
        # Figure 4: 1500 steps per run (10 runs: 2 samplers x s in {1, 3, 9, 27, 81}); ~1-2 CPU-min each.
        "ndigit_fig4": dict(steps=1500, n_classes=20, k_support=1, query_per_class=5, lr=3e-3,
                            eval_episodes=200, eval_k=1),
        # App. A.2: 64 filters per block, 2 support per class, 8 samples per query; lr 1e-3 with a cosine decay
        # instead of 1e-4 + early stopping; 20k training images (the paper does not say how many); ~9 CPU-min.
        "lshapes": dict(steps=2000, channels=64, n_train=20000, n_test=4000, k_support=2, query_per_class=8,
                        lr=1e-3, eval_episodes=200, eval_query=25),
        # Taha Table 1 analogue: the paper's P = 18 identities x K = 4 images (sec. 5.1), but semi-hard mining
        # instead of its batch-hard: from scratch, batch-hard drove every embedding to one point (loss stuck at
        # ln 2) in 3 of 4 seeds, and with occlusion even after a batch-all warm-up (docs/recipes.md).
        # 1,500 steps of 72 images take ~1-1.5 CPU-minutes per model, so 5 runs x 4 rows stay within the hour.
        "triplets_ndigit": dict(steps=1500, P=18, K=4, lr=1e-3, mining="semi_hard", eval_images=None),
        # Table 2 analogue: all 10 classes x 10 images per batch and semi-hard mining as for Clothing1M (sec. 5.2);
        # 5% of the training labels verified clean (Clothing1M's D_c is ~2%; 5% keeps the clean-only row
        # trainable), the rest flipped between look-alike classes at Clothing1M's ~38% noise rate.
        "triplets_fashion": dict(steps=1500, P=10, K=10, lr=1e-3, mining="semi_hard", eval_images=None,
                                 clean_fraction=0.05, noise=0.38, noise_seed=0, amb=_AMB),
    },
}
_PAIR_EVAL_KEYS = ("eval_images",)


@dataclass(frozen=True)
class ModelSpec:
    """Everything that identifies one trained model of the kit: the fields every kind shares.

    Build one with `Spec` (``Spec(kind="hib", components=2)``), which picks the kind's type below. Each type
    carries only the fields that mean something for its kind and checks them when it is built:

    * `PointSpec` (point): ``loss`` "soft" (soft contrastive, HIB eq. 3) or "hard" (eq. 1, ``margin`` M);
    * `HIBSpec` (hib, MoG-C of Oh et al. 2019): ``components`` C, ``beta`` (KL weight of eq. 8), ``samples``
      K, the Monte-Carlo samples per input of eq. 5 (None: the preset's K);
    * `PNSpec` (pn, Prototypical Network) and `SPESpec` (spe, Scott et al. 2019): ``recipe`` "main" or "fig4"
      (the few-shot episodes of SPE's Figure 4); SPE's ``sampler``, ``samples`` per query and ``init_var``;
    * `TripletSpec` (triplet, het; Taha et al. 2019): ``recipe`` (`_TRIPLET_RECIPES` of its data set).

    Shared fields: ``kind``; ``data`` "ndigit" (N-digit MNIST, LeNet body), "lshapes" (SPE's synthetic
    L-shapes; pn/spe) or "fashion" (Fashion-MNIST; triplet/het); ``n_digits`` N (N-digit MNIST; fixed by the
    other data sets: `DATA_N_DIGITS`) and ``dim`` D; ``preset`` (a key of `PRESETS`); ``seed``; ``steps``
    (overrides the preset's, the name then reads e.g. ``paper600``). Sizes are bounded before anything is built:
    N <= 6 (`hedgekit.data.ndigit.MAX_DIGITS`), D and C by `hedgekit.nets.embedder.MAX_DIM` and
    `MAX_COMPONENTS`, steps by `hedgekit.checks.MAX_STEPS`, the seed to 0..2^63 - 1 (`hedgekit.checks.check_seed`).
    """

    kind: str = "hib"
    data: str = "ndigit"
    n_digits: int = 2
    dim: int = 2
    preset: str = "paper"
    seed: int = 0
    steps: int | None = None

    KINDS: ClassVar[tuple[str, ...]] = ()  # the kinds this type names
    DATA: ClassVar[tuple[str, ...]] = ("ndigit",)  # the data sets they train on

    def __post_init__(self) -> None:
        if self.kind not in type(self).KINDS:
            raise InputError(f"{type(self).__name__} names {'/'.join(type(self).KINDS)} models, not "
                             f"kind={self.kind!r}; build specs with Spec(kind=...)")
        if self.data not in DATASETS:
            raise InputError(f"data must be one of {DATASETS}; got {self.data!r}")
        if self.data not in type(self).DATA:
            raise InputError(f"{self.kind} models train on {' or '.join(DATA_NAMES[d] for d in type(self).DATA)}; "
                             f"got data={self.data!r}")
        if self.preset not in PRESETS:
            raise InputError(f"unknown preset {self.preset!r}; choose one of {sorted(PRESETS)}")
        _check_counts(self, ("n_digits", "dim") + (("steps",) if self.steps is not None else ()))
        check_seed(self.seed, "Spec.seed")
        if self.data in DATA_N_DIGITS and self.n_digits != DATA_N_DIGITS[self.data]:
            raise InputError(f"n_digits applies to N-digit MNIST only ({self.data} models have n_digits="
                             f"{DATA_N_DIGITS[self.data]}); got {self.n_digits!r}")

    # ------------------------------------------------------------------ names
    @property
    def family(self) -> str:
        return FAMILIES[self.kind]

    @property
    def components(self) -> int:
        """Gaussians per input: 1 for every kind but HIB's mixtures (`HIBSpec.components`)."""
        return 1

    def at_preset(self, preset: str, steps: int | None = None) -> "ModelSpec":
        """The same model at another preset (and step count); a HIB spec's own K (``samples``) is kept, the
        preset's K follows the new preset."""
        return Spec(**{**asdict(self), "preset": preset, "steps": steps})

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``hib-n2-d2-c1-beta0.0001-paper-s0`` (`spec_from_name` reads it back)."""
        parts = [self.kind, self.data if self.data != "ndigit" else f"n{self.n_digits}", f"d{self.dim}"]
        parts += self._name_parts()
        parts.append(self.preset if self.steps is None else f"{self.preset}{self.steps}")
        parts.append(f"s{self.seed}")
        return "-".join(parts)

    def _name_parts(self) -> list[str]:
        return []

    # ------------------------------------------------------------------ recipes
    def recipe_config(self) -> dict:
        """A copy of the preset's settings for this spec (``steps`` overridden if given)."""
        r = copy.deepcopy(PRESETS[self.preset][self.recipe_key])
        if self.steps is not None:
            r["steps"] = self.steps
        return r

    @property
    def initial_variance(self) -> float:
        """The variance a Gaussian head starts with: `hedgekit.nets.INIT_VAR` (SPE may choose another)."""
        from hedgekit.nets import INIT_VAR

        return INIT_VAR

    def net_config(self) -> dict:
        """The `EmbeddingNet.config` of this spec's network (LeNet for N-digit MNIST, App. A.2 conv net for
        L-shapes); a checkpoint must record exactly this config to be loaded under this spec."""
        head = {"point": "point", "pn": "point", "hib": "hib", "spe": "hib", "triplet": "het", "het": "het"}[self.kind]
        if self.data == "lshapes":
            return build_config(head, self.dim, lshapes_channels=self.recipe_config()["channels"],
                                init_var=self.initial_variance)
        return build_config(head, self.dim, n_digits=self.n_digits, components=self.components,
                            init_var=self.initial_variance)

    def build(self) -> EmbeddingNet:
        """The untrained network."""
        return model_from_config(self.net_config())

    def build_head(self) -> SPE | PN | None:
        """A fresh prototype head (`EpisodeSpec`); None for the other families."""
        return None


@dataclass(frozen=True)
class PairSpec(ModelSpec):
    """The pair-trained kinds (`hedgekit.training.fit`): `PointSpec`, `HIBSpec`; N-digit MNIST, main recipe."""

    @property
    def recipe_key(self) -> str:
        """The `PRESETS` entry of this spec: its kind."""
        return self.kind

    def train_config(self) -> TrainConfig:
        kw = {k: v for k, v in self.recipe_config().items() if k not in _PAIR_EVAL_KEYS}
        return TrainConfig(**{**kw, **self._loss_config()})

    def _loss_config(self) -> dict:
        raise NotImplementedError


@dataclass(frozen=True)
class PointSpec(PairSpec):
    """A point embedding (contrastive): ``loss`` "soft" (HIB eq. 3) or "hard" (eq. 1, with ``margin`` M)."""

    kind: str = "point"
    loss: str = "soft"
    margin: float = 1.0

    KINDS: ClassVar[tuple[str, ...]] = ("point",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.loss not in LOSSES:
            raise InputError(f"Spec.loss must be one of {LOSSES}; got {self.loss!r}")
        check_margin(self.margin, "Spec.margin")
        if self.loss == "soft" and self.margin != 1.0:
            raise InputError(f"Spec.margin is the hard contrastive loss's M (eq. 1); with loss='soft' leave it out "
                             f"(got {self.margin!r})")

    @property
    def label(self) -> str:
        return "point"

    def _name_parts(self) -> list[str]:
        return ["hard", f"m{self.margin:g}"] if self.loss == "hard" else []

    def _loss_config(self) -> dict:
        return dict(beta=0.0, loss=self.loss, margin=self.margin)


@dataclass(frozen=True)
class HIBSpec(PairSpec):
    """HIB's MoG-C (Oh et al. 2019): ``components`` C, KL weight ``beta`` (eq. 8) and ``samples`` K per input
    (eq. 5): None follows the preset's K (`preset_k`); another K is kept and named (``k8``)."""

    kind: str = "hib"
    components: int = 1
    beta: float = 1e-4
    samples: int | None = None

    KINDS: ClassVar[tuple[str, ...]] = ("hib",)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_counts(self, ("components",))
        check_number(self.beta, "Spec.beta", 0.0)
        if self.samples is not None:
            check_count(self.samples, "HIB's samples per input (K)")
            if self.samples == self.preset_k:
                raise InputError(f"samples={self.samples} is the {self.preset} preset's K: write samples=None "
                                 "(Spec(...) does), so that one model has one name")

    @property
    def preset_k(self) -> int:
        """HIB's samples per input K in this spec's preset (`TrainConfig`'s K = 8 where the preset names none)."""
        return _preset_k(self.preset)

    @property
    def label(self) -> str:
        return f"MoG-{self.components}"

    def _name_parts(self) -> list[str]:
        parts = [f"c{self.components}", "beta" + f"{self.beta:g}".replace("-", "_")]
        return parts + ([f"k{self.samples}"] if self.samples is not None else [])

    def _loss_config(self) -> dict:
        own_k = {"k": self.samples} if self.samples is not None else {}
        return dict(beta=self.beta, loss="soft", margin=1.0, **own_k)


@dataclass(frozen=True)
class EpisodeSpec(ModelSpec):
    """The episode-trained kinds (`hedgekit.training.episodic`): `PNSpec`, `SPESpec`; ``recipe`` "main", or
    "fig4" (SPE's Figure 4 few-shot episodes, N-digit MNIST only)."""

    recipe: str = "main"

    DATA: ClassVar[tuple[str, ...]] = ("ndigit", "lshapes")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.recipe not in ("main", "fig4"):
            raise InputError(f"{self.kind} models train with the main (or fig4) recipe; got recipe={self.recipe!r}")
        if self.recipe == "fig4" and self.data != "ndigit":
            raise InputError("the Figure 4 recipe is defined for N-digit MNIST only")

    @property
    def recipe_key(self) -> str:
        """The `PRESETS` entry of this spec: its data set and recipe."""
        return self.data if self.recipe == "main" else f"{self.data}_{self.recipe}"

    def _name_parts(self) -> list[str]:
        return [self.recipe] if self.recipe != "main" else []

    def train_config(self) -> EpisodicConfig:
        r = self.recipe_config()
        return EpisodicConfig(steps=r["steps"], n_classes=4 if self.data == "lshapes" else r["n_classes"],
                              k_support=r["k_support"], query_per_class=r["query_per_class"], lr=r["lr"],
                              log_every=max(1, min(50, r["steps"] // 20)), **self._sampler_config())

    def _sampler_config(self) -> dict:
        return {}


@dataclass(frozen=True)
class PNSpec(EpisodeSpec):
    """The Prototypical Network (deterministic, no sampler)."""

    kind: str = "pn"

    KINDS: ClassVar[tuple[str, ...]] = ("pn",)

    @property
    def label(self) -> str:
        return "PN"

    def build_head(self) -> PN:
        return PN()


@dataclass(frozen=True)
class SPESpec(EpisodeSpec):
    """Stochastic Prototype Embeddings (Scott et al. 2019): the training ``sampler`` and ``samples`` per query
    (`Spec` fills the data set's `DEFAULT_SAMPLES`: 1 on N-digit MNIST, 8 on L-shapes) and ``init_var``, where
    the variances start: "unit" (`hedgekit.nets.INIT_VAR`) or "eps" (named ``veps``): at sigma_eps^2's initial
    value, softplus(|S| gamma0^(2/d)) of App. B for the recipe's training episodes (`initial_variance`), 7.43
    for D = 3 and 32 x 5 support images against 1.78 for D = 2. The paper does not say where they start."""

    kind: str = "spe"
    sampler: str = "intersection"
    samples: int | None = None
    init_var: str = "unit"

    KINDS: ClassVar[tuple[str, ...]] = ("spe",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sampler not in SAMPLERS:
            raise InputError(f"sampler must be one of {SAMPLERS}; got {self.sampler!r}")
        if self.samples is None:
            raise InputError("SPESpec needs samples per query (Spec(kind='spe', ...) fills the data set's default, "
                             f"{DEFAULT_SAMPLES})")
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise InputError(f"samples must be an integer >= 1; got {self.samples!r}")
        if self.init_var not in INIT_VARS:
            raise InputError(f"Spec.init_var must be one of {INIT_VARS}; got {self.init_var!r}")

    @property
    def label(self) -> str:
        """'SPE', or e.g. 'SPE (naive, s=9)' when the sampler or samples differ from the paper's."""
        if self.recipe == "fig4" or self.samples != DEFAULT_SAMPLES[self.data] or self.sampler != "intersection":
            return f"SPE ({self.sampler}, s={self.samples})"
        return "SPE"

    def _name_parts(self) -> list[str]:
        return [f"{self.sampler}{self.samples}"] + (["veps"] if self.init_var == "eps" else []) + super()._name_parts()

    def _sampler_config(self) -> dict:
        return dict(sampler=self.sampler, samples=self.samples)

    @property
    def initial_variance(self) -> float:
        """`INIT_VAR`, or for init_var "eps" sigma_eps^2 at initialisation, softplus(gamma) with App. B's gamma
        for this recipe's episodes (`SPE.for_episodes`)."""
        if self.init_var == "unit":
            return super().initial_variance
        cfg = self.train_config()
        return math.log1p(math.exp(gamma_init(cfg.n_classes * cfg.k_support, self.dim)))

    def build_head(self) -> SPE:
        """A fresh SPE head, gamma initialised by App. B for this recipe's episodes."""
        cfg = self.train_config()
        return SPE.for_episodes(cfg.n_classes, cfg.k_support, self.dim, train_sampler=self.sampler,
                                train_samples=self.samples)


@dataclass(frozen=True)
class TripletSpec(ModelSpec):
    """Triplet retrieval (Taha et al. 2019): "triplet" (eq. 2) or "het" (eq. 11) on N-digit MNIST or
    Fashion-MNIST, with a ``recipe`` of `_TRIPLET_RECIPES` (occlusion augmentation only with "aug")."""

    kind: str = "het"
    recipe: str = "main"

    KINDS: ClassVar[tuple[str, ...]] = ("triplet", "het")
    DATA: ClassVar[tuple[str, ...]] = tuple(_TRIPLET_RECIPES)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.recipe not in _TRIPLET_RECIPES[self.data]:
            raise InputError(f"{self.kind} models train on {sorted(_TRIPLET_RECIPES)} with recipes "
                             f"{_TRIPLET_RECIPES}; got data={self.data!r}, recipe={self.recipe!r}")

    @property
    def label(self) -> str:
        return "triplet + hetero" if self.kind == "het" else "triplet"

    @property
    def recipe_key(self) -> str:
        """The `PRESETS` entry of this spec: ``triplets_<data>``."""
        return f"triplets_{self.data}"

    def _name_parts(self) -> list[str]:
        return [self.recipe] if self.recipe != "main" else []

    def train_config(self) -> TripletConfig:
        r = self.recipe_config()
        return TripletConfig(steps=r["steps"], P=r["P"], K=r["K"], lr=r["lr"], mining=r["mining"],
                             heteroscedastic=self.kind == "het", occlusion_p=0.2 if self.recipe == "aug" else 0.0,
                             log_every=max(1, min(50, r["steps"] // 20)))


URL_KIND = "url"  # the kind of `URLSpec`: not in `KINDS`, which are the `EmbeddingNet` models of `Spec`'s fields


@dataclass(frozen=True)
class URLBenchmark:
    """What defines a URL run, passed in by the paper that has them: `hedgekit.papers.url.benchmark` registers
    one when it is imported (`register_url_benchmark`), since the store imports no paper (tests/test_imports.py).

    ``check_method(method)``: InputError for an unknown method; ``budget(name)``: the `Budget` of that name
    (InputError for an unknown one); ``run_config(budget, method)``: what a run's record must hold to be current
    (`is_stale`); ``build(method, seed, budget)``: the untrained, seeded model; ``root()``: the folder of the
    runs; ``train(spec, progress, device)``: (model on the CPU, record), the URL family's trainer."""

    check_method: Callable[[str], object]
    budget: Callable[[str], object]
    run_config: Callable[[object, str], dict]
    build: Callable[[str, int, object], torch.nn.Module]
    root: Callable[[], Path]
    train: Callable[..., tuple]


_URL_BENCHMARK: list[URLBenchmark] = []  # the registered one (at most one)


def register_url_benchmark(benchmark: URLBenchmark) -> None:
    """Make ``benchmark`` the definition of URL runs (`URLSpec`), replacing any earlier one."""
    _URL_BENCHMARK[:] = [benchmark]


def _url_benchmark() -> URLBenchmark:
    if not _URL_BENCHMARK:
        raise InputError("URL runs are defined by hedgekit.papers.url.benchmark: import it before naming one")
    return _URL_BENCHMARK[0]


@dataclass(frozen=True)
class URLSpec:
    """One run of the URL benchmark (Kirchhof et al. 2023 at kit scale, `hedgekit.papers.url.benchmark`, which
    defines them: `URLBenchmark`): the upstream ``method`` trained with ``seed`` in ``budget`` (a budget name:
    ``paper``, ``converged``, or a learning-rate sweep of one, ``converged-lr0.5x``; or a budget object that
    `URLBenchmark.budget` accepts, for an ad-hoc budget no name resolves to). Name:
    ``url-<method>-<budget>-s<seed>``, e.g. ``url-nivmf-converged-s2`` (`spec_from_name` reads it back; an
    ad-hoc budget's runs are named by its name, and read back as the registered budget of that name).

    What the run is, beyond its name, is `run_config`: the budget's settings for the method and the hash of the
    code the run executes; `is_stale` compares it with what the run recorded."""

    method: str
    budget: object = "paper"
    seed: int = 0

    kind: ClassVar[str] = URL_KIND
    family: ClassVar[str] = URL_KIND

    def __post_init__(self) -> None:
        bench = _url_benchmark()
        if not isinstance(self.method, str) or "-" in self.method:
            raise InputError(f"URLSpec.method must be a method name; got {self.method!r}")
        bench.check_method(self.method)
        bench.budget(self.budget)  # InputError naming the budgets
        check_seed(self.seed, "URLSpec.seed")

    @property
    def budget_name(self) -> str:
        """The budget's name: the folder of its runs (`cache_checkpoint_path`) and part of `name`."""
        return self.budget if isinstance(self.budget, str) else self.run_budget().name

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``url-ce-converged-s0``."""
        return f"{URL_KIND}-{self.method}-{self.budget_name}-s{self.seed}"

    def run_budget(self):
        """The budget this run trains and is evaluated in (`URLBenchmark.budget`)."""
        return _url_benchmark().budget(self.budget)

    def run_config(self) -> dict:
        """What the run's record must hold to be current (`is_stale`, `URLBenchmark.run_config`): the training
        config for the method, evaluation images per class, embedding dimension, the method's hyper-parameters and
        the code key."""
        return _url_benchmark().run_config(self.run_budget(), self.method)

    def build(self) -> torch.nn.Module:
        """The untrained, seeded model (`URLBenchmark.build`)."""
        return _url_benchmark().build(self.method, self.seed, self.run_budget())


SPEC_TYPES: dict[str, type[ModelSpec]] = {"point": PointSpec, "hib": HIBSpec, "pn": PNSpec, "spe": SPESpec,
                                          "triplet": TripletSpec, "het": TripletSpec}
DATA_N_DIGITS = {"lshapes": 2, "fashion": 1}  # n_digits of the data sets that are not N-digit MNIST (lshapes: unused)
# Why a field is refused for a kind that does not have it (`Spec`)
_NOT_FOR = {"components": "only HIB models are mixtures; the others have one component",
            "beta": "only HIB has a KL term (eq. 8)",
            "loss": "the soft or hard contrastive loss is for point models",
            "margin": "the hard contrastive loss's margin is for point models",
            "sampler": "only SPE samples", "samples": "K is HIB's, samples per query SPE's",
            "init_var": "init_var='eps' starts the variances at SPE's sigma_eps^2: spe models only",
            "recipe": "point and hib models have one recipe"}


def Spec(kind: str = "hib", **fields) -> ModelSpec:  # noqa: N802 (named like the type it builds)
    """The spec of a ``kind`` model: ``Spec(kind="hib", components=2, preset="paper")`` is a `HIBSpec`.

    The one constructor of specs: it picks the kind's type (`SPEC_TYPES`), refuses a field that does not apply to
    the kind (InputError saying why; ``components=1`` is accepted everywhere, as every other kind has one) and fills
    what depends on other fields, so that one model has one spec and one name: ``n_digits`` of L-shapes and
    Fashion-MNIST (`DATA_N_DIGITS`), SPE's samples per query (`DEFAULT_SAMPLES` of the data set), HIB's K
    (None when it equals the preset's). The type then checks every field. ``Spec(kind="url", method=..., budget=...,
    seed=...)`` is a `URLSpec` (a run of the URL benchmark).
    """
    if kind == URL_KIND:
        return URLSpec(**fields)
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}; got {kind!r}")
    cls = SPEC_TYPES[kind]
    own = {f.name for f in dataclasses.fields(cls)}
    if "components" not in own and fields.get("components", 1) == 1:
        fields.pop("components", None)
    refused = sorted(set(fields) - own)
    if refused:
        why = "; ".join(f"{name}: {_NOT_FOR.get(name, 'no such field')}" for name in refused)
        raise InputError(f"Spec.{', Spec.'.join(refused)} {'does' if len(refused) == 1 else 'do'} not apply to {kind} "
                         f"models ({why}); {kind} models take {', '.join(sorted(own - {'kind'}))}")
    fields = {k: int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
              for k, v in fields.items()}  # numpy integers as int: one spec, one name, plain metadata
    data = fields.get("data", "ndigit")
    if data in DATA_N_DIGITS:
        n = fields.setdefault("n_digits", DATA_N_DIGITS[data])
        if n != DATA_N_DIGITS[data]:
            raise InputError(f"n_digits applies to N-digit MNIST only; {data} models take no n_digits (got {n!r})")
    if kind == "spe" and fields.get("samples") is None:
        fields["samples"] = DEFAULT_SAMPLES.get(data, 1)
    if kind == "hib" and fields.get("preset", "paper") in PRESETS and fields.get("samples") == \
            _preset_k(fields.get("preset", "paper")):
        fields["samples"] = None
    return cls(kind=kind, **fields)


def _preset_k(preset: str) -> int:
    """HIB's samples per input K in ``preset`` (`TrainConfig`'s K = 8 where the preset names none)."""
    return int(PRESETS[preset]["hib"].get("k", TrainConfig.k))


def _check_counts(spec: ModelSpec, names: tuple[str, ...]) -> None:
    """The sizes of ``spec`` within their bounds (`hedgekit.nets.embedder.check_model_size` checks the memory)."""
    from hedgekit.data.ndigit import MAX_DIGITS
    from hedgekit.nets.embedder import MAX_COMPONENTS, MAX_DIM

    bounds = {"n_digits": (MAX_DIGITS, ""), "dim": (MAX_DIM, " (the embedding dimension)"),
              "components": (MAX_COMPONENTS, " (HIB's mixture components)"), "steps": (MAX_STEPS, " (training steps)")}
    for name in names:
        maximum, why = bounds[name]
        check_count(getattr(spec, name), f"Spec.{name}", 1, maximum, why)


def build_config(head: str, dim: int, n_digits: int = 2, components: int = 1,
                 lshapes_channels: int | None = None, init_var: float | None = None) -> dict:
    """`EmbeddingNet.config` without building the network (`hedgekit.nets.embedder` builders record the same);
    ``init_var`` None means `hedgekit.nets.INIT_VAR`."""
    from hedgekit.nets import INIT_VAR
    from hedgekit.nets.backbones import LSHAPE_BLOCKS

    init_var = INIT_VAR if init_var is None else float(init_var)
    if lshapes_channels is not None:
        return dict(body="conv", kind=head, dim=dim, in_channels=3, height=64, width=64, blocks=LSHAPE_BLOCKS,
                    channels=lshapes_channels, components=1, init_var=init_var)
    return dict(kind=head, n_digits=n_digits, dim=dim, components=components, in_channels=1, height=28,
                width=28 * n_digits, init_var=init_var)


def spec_from_name(name: str) -> ModelSpec | URLSpec:
    """Inverse of `Spec.name` (and of `URLSpec.name`); `InputError` for anything that is not a canonical name."""
    parts = str(name).split("-")
    if parts[0] == URL_KIND:
        return _url_spec_from_name(str(name), parts)
    try:
        kw: dict = {"kind": parts[0]}
        if parts[1] in ("lshapes", "fashion"):
            kw["data"] = parts[1]
        elif parts[1][0] == "n":
            kw["n_digits"] = int(parts[1][1:])
        else:
            raise ValueError
        if parts[2][0] != "d":
            raise ValueError
        kw["dim"] = int(parts[2][1:])
        rest = parts[3:]
        if kw["kind"] == "hib":
            if rest[0][0] != "c" or not rest[1].startswith("beta"):
                raise ValueError
            kw["components"], kw["beta"] = int(rest[0][1:]), float(rest[1][4:].replace("_", "-"))
            rest = rest[2:]
            if rest[0][:1] == "k" and rest[0][1:].isdigit():
                kw["samples"] = int(rest[0][1:])
                rest = rest[1:]
        if rest[0] == "hard":
            kw["loss"], kw["margin"] = "hard", float(rest[1][1:])
            rest = rest[2:]
        if kw["kind"] == "spe":
            sampler = rest[0].rstrip("0123456789")
            kw["sampler"], kw["samples"] = sampler, int(rest[0][len(sampler):])
            rest = rest[1:]
            if rest[0] == "veps":
                kw["init_var"] = "eps"
                rest = rest[1:]
        if rest[0] in RECIPES:
            kw["recipe"] = rest[0]
            rest = rest[1:]
        preset = rest[0].rstrip("0123456789")
        kw["preset"] = preset
        if rest[0] != preset:
            kw["steps"] = int(rest[0][len(preset):])
        if len(rest) != 2 or rest[1][0] != "s":
            raise ValueError
        kw["seed"] = int(rest[1][1:])
    except (IndexError, ValueError, TypeError) as exc:
        raise InputError(f"{name!r} is not a hedgekit model name like 'hib-n2-d2-c1-beta0.0001-paper-s0' or "
                         f"'spe-n2-d2-intersection1-paper-s0'") from exc
    spec = Spec(**kw)  # its own checks name a bad field (unknown preset, sampler, ...)
    if spec.name != name:
        raise InputError(f"{name!r} is not a canonical model name (did you mean {spec.name!r}?)")
    return spec


def _url_spec_from_name(name: str, parts: list[str]) -> URLSpec:
    """``url-<method>-<budget>-s<seed>`` (the budget may hold dashes: ``converged-lr0.5x``) as a `URLSpec`."""
    if len(parts) < 4 or not parts[-1][:1] == "s" or not parts[-1][1:].isdigit():
        raise InputError(f"{name!r} is not a URL run name like 'url-ce-converged-s0'")
    spec = URLSpec(parts[1], "-".join(parts[2:-1]), int(parts[-1][1:]))
    if spec.name != name:
        raise InputError(f"{name!r} is not a canonical URL run name (did you mean {spec.name!r}?)")
    return spec


def versions() -> dict:
    import hedgekit

    return {"hedgekit": hedgekit.__version__, "torch": str(torch.__version__), "numpy": str(np.__version__),
            "python": sys.version.split()[0], "platform": platform.platform()}


# ------------------------------------------------------------------ checkpoints
def save_checkpoint(path: str | Path, model: EmbeddingNet, meta: dict) -> Path:
    """Save weights + config + metadata; written atomically, with a SHA-256 over all three (`_payload_hash`).

    A read-only folder or a full disk raises `hedgekit.errors.StorageError` (`hedgekit.checks.write_bytes_atomic`).

    Non-finite weights are refused (CheckpointError): a diverged model is never cached.
    """
    path = Path(path)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    _check_finite_weights(state, path)
    payload = {"format": FORMAT, "config": model.config, "meta": meta, "state_dict": state}
    payload["sha256"] = _payload_hash(payload)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return write_bytes_atomic(path, buffer.getvalue())  # StorageError (read-only, disk full): nothing half-written


def _state_hash(state: dict) -> str:
    """SHA-256 of the weights alone (names and bytes): the whole hash of legacy v1 checkpoints."""
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode())
        h.update(state[k].numpy().tobytes())
    return h.hexdigest()


def _payload_hash(payload: dict) -> str:
    """SHA-256 of a v2 checkpoint: format, config and metadata as canonical JSON, then the weights' hash,
    so that an edited name, spec or metric is detected as surely as an edited weight."""
    def canonical(obj):  # dict keys of any type, in one order; tuples as lists
        if isinstance(obj, Mapping):
            return [[repr(k), canonical(v)] for k, v in sorted(obj.items(), key=lambda kv: repr(kv[0]))]
        return [canonical(v) for v in obj] if isinstance(obj, (list, tuple)) else obj

    header = json.dumps(canonical({k: payload[k] for k in ("format", "config", "meta")}), default=repr)
    return hashlib.sha256(header.encode() + _state_hash(payload["state_dict"]).encode()).hexdigest()


def _check_finite_weights(state: dict, path: Path) -> None:
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise CheckpointError(f"{path}: weights {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} hold NaN or inf "
                              "(the training diverged or the file was altered); delete it to retrain")


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[EmbeddingNet, dict]:
    """Load a checkpoint written by `save_checkpoint`; CheckpointError if missing, corrupt, altered (hash),
    holding NaN/inf weights, or saved under a model name whose network it does not have (`check_matches`)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # truncated zip, random bytes, pickle errors...
        first = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        raise CheckpointError(f"{path} is not a readable hedgekit checkpoint (corrupt or truncated: "
                              f"{type(exc).__name__}: {first}); delete it to retrain") from exc
    if not isinstance(payload, dict) or payload.get("format") not in (FORMAT, _LEGACY_FORMAT):
        raise CheckpointError(f"{path} is not a {FORMAT} file; delete it to retrain")
    if not isinstance(payload.get("state_dict"), dict) or not isinstance(payload.get("meta"), dict) \
            or not isinstance(payload.get("config"), dict) \
            or not all(isinstance(v, torch.Tensor) for v in payload["state_dict"].values()):
        raise CheckpointError(f"{path} lacks its weights, config or metadata (incomplete file); delete it to retrain")
    state = payload["state_dict"]
    legacy = payload["format"] == _LEGACY_FORMAT
    if (_state_hash(state) if legacy else _payload_hash(payload)) != payload.get("sha256"):
        what = "weights" if legacy else "weights, config or metadata"
        raise CheckpointError(f"{path}: {what} do not match their recorded SHA-256 (file corrupted or edited); "
                              "delete it to retrain")
    _check_finite_weights(state, path)
    try:
        model = model_from_config(payload["config"])
        model.load_state_dict(state)
    except Exception as exc:
        raise CheckpointError(f"{path}: weights do not fit the recorded model config ({exc})") from exc
    meta = payload["meta"]
    if "data" not in meta and path.with_suffix(".json").is_file():
        meta = dict(meta, data=_sidecar_data(path))
    try:
        spec = spec_from_name(meta["name"]) if "name" in meta else None
    except InputError:
        spec = None  # a checkpoint of a model outside the zoo's names
    if spec is not None:
        check_matches(spec, model, meta, path)
    return model.to(device).eval(), meta


def find_checkpoint(spec: ModelSpec) -> Path | None:
    """The shipped checkpoint named like ``spec``, else the cached one, else None. Reads only.

    A checkpoint trained with another recipe than the one the preset now names (`is_stale`) is passed
    over, so a changed preset retrains instead of reusing old weights; so is one trained on other data than
    the current (`data_source`, `hedgekit.data.provenance.matches`), with a warning that says why.

    A URL run (`URLSpec`; none ship) is found in the cache when its record parses, is not stale and names the
    SHA-256 of the weights beside it (`url_record`); an incomplete pair (an interrupted write) is not found.
    """
    if isinstance(spec, URLSpec):
        p = cache_checkpoint_path(spec, None)
        rec = url_record(p)
        return p if rec is not None and not is_stale(p, spec) and _url_weights_match(p, rec) else None
    current = data_source(spec)
    for p in (SHIPPED_DIR / f"{spec.name}.pt", cache_checkpoint_path(spec, current)):
        if p.is_file() and not is_stale(p, spec):
            st = p.stat()
            reason = matches(_recorded(str(p), st.st_mtime_ns, st.st_size).get("data"), current)
            if reason is None:
                return p
            warnings.warn(f"not reusing {p}: {reason}", stacklevel=2)
    return None


def data_source(spec: ModelSpec) -> Source | None:
    """The data ``spec`` trains on now (`hedgekit.data.mnist.mnist_source`, `hedgekit.data.fashion.fashion_source`),
    None for the generated L-shapes or when the data is not installed (nothing to compare a checkpoint with).
    InputError when the data is not what it is named (e.g. Fashion-MNIST given as MNIST)."""
    from hedgekit.data.fashion import fashion_source
    from hedgekit.data.mnist import mnist_source

    try:
        return {"ndigit": mnist_source, "fashion": fashion_source}.get(spec.data, lambda: None)()
    except DataNotFoundError:
        return None


def cache_checkpoint_path(spec: ModelSpec | URLSpec, source: Source | None) -> Path:
    """``<cache>/checkpoints/<name>.pt``; for data other than the real MNIST / Fashion-MNIST the name gains its
    fingerprint (``<name>.mnist-<fingerprint>.pt``), so models of different data never overwrite each other.

    A URL run (`URLSpec`) lives where the benchmark has always kept its runs, so that every run cached before the
    benchmark joined the store is found where it is, in its format (`URL_FORMAT`): its record
    ``<cache>/url/<budget>/<method>-s<seed>.json`` (`URLBenchmark.root`), its weights beside it (``.pt``).
    ``source`` is not used: the data's code is in the run's code key (`URLSpec.run_config`)."""
    if isinstance(spec, URLSpec):
        return _url_benchmark().root() / spec.budget_name / f"{spec.method}-s{spec.seed}.json"
    other = "" if source is None or source.real else f".{source.dataset}-{source.fingerprint}"
    return cache_path("checkpoints", f"{spec.name}{other}.pt")


def write_provenance(path: str | Path, source: Source) -> Path:
    """Record the data a checkpoint was trained on beside it, in ``<name>.json``, leaving its bytes (and so its
    weights) unchanged: the one-time migration of the shipped checkpoints, trained before the data was recorded.
    The sidecar names the SHA-256 of the file it describes; `load_checkpoint` adds its ``data`` to the meta."""
    path = Path(path)
    sidecar = {"checkpoint": path.name, "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
               "data": source.record()}
    return write_bytes_atomic(path.with_suffix(".json"), (json.dumps(sidecar, indent=1) + "\n").encode())


def _sidecar_data(path: Path) -> dict:
    """The ``data`` of ``path``'s sidecar (`write_provenance`); CheckpointError if it describes other bytes."""
    sidecar = path.with_suffix(".json")
    try:
        info = json.loads(sidecar.read_text())
        ok = info["file_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and isinstance(info["data"], dict)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{sidecar} is not a readable provenance sidecar ({exc}); delete it") from exc
    if not ok:
        raise CheckpointError(f"{sidecar} describes other bytes than {path} (the checkpoint was replaced); delete "
                              "the sidecar, or both to retrain")
    return info["data"]


# Values of TrainConfig.loss written by earlier versions of the kit, and what they are called now.
_LEGACY_LOSS = {"vib": "soft", "contrastive": "hard"}


def is_stale(path: str | Path, spec: ModelSpec | URLSpec) -> bool:
    """True if the checkpoint at ``path`` was trained otherwise than ``spec`` now says: the one staleness rule of
    the store. What is compared depends on the kind:

    * point, hib, pn, spe, triplet, het (`ModelSpec`): the recorded ``train_config`` against
      ``spec.train_config()``, the preset's recipe. Fields the checkpoint does not record (added to the config
      later) count as their defaults. The code is not compared: these checkpoints ship with the package and are
      retrained only when their recipe changes (their metrics are re-measured by `refresh_metrics`, and
      tests/test_shipped.py checks them against the current code).
    * url (`URLSpec`): the record's ``config`` against `URLSpec.run_config`: the budget's training config for
      the method, evaluation images per class, embedding dimension, the method's hyper-parameters and the code
      key, a hash of the code the run executes (`hedgekit.papers.url.benchmark._config`). The code counts here
      because the runs are a leaderboard: its methods are ranked against each other, so a run measured with
      other code than today's (a fixed loss, a changed metric) must not be ranked beside the rest. The record's
      other fields (metrics, seconds, history) are what the run measured, not what it is.

    For every kind ``precision`` and the device (``meta["device"]``, the record's ``device``) are not compared:
    they say how the model was trained, not what it is (`train_spec`). An unreadable file is not stale: loading
    it raises the `CheckpointError` that says what is wrong (a URL run that does not parse is not found,
    `find_checkpoint`). The recorded config is read once per file version (the app asks on every rerun).
    """
    if isinstance(spec, URLSpec):
        rec = url_record(path)
        return rec is not None and rec.get("config") != spec.run_config()
    st = Path(path).stat()
    stored = _recorded(str(path), st.st_mtime_ns, st.st_size).get("train_config")
    if not isinstance(stored, dict):
        return False
    current_cfg = spec.train_config()
    defaults, current = asdict(type(current_cfg)()), asdict(current_cfg)
    stored = dict(stored)
    if "loss" in stored:
        stored["loss"] = _LEGACY_LOSS.get(stored["loss"], stored["loss"])
    return any(stored.get(k, defaults[k]) != v for k, v in current.items() if k != "precision")


@functools.lru_cache(maxsize=256)
def _recorded(path: str, mtime_ns: int, size: int) -> dict:
    """The ``train_config`` and ``data`` a checkpoint file records (the latter also from its sidecar,
    `write_provenance`), {} if unreadable; keyed by the file's modification time and size so that a
    rewritten file is read again. Read-only: loading the file raises what is wrong with it."""
    try:
        meta = torch.load(path, map_location="cpu", weights_only=True).get("meta", {})
        if "data" not in meta and Path(path).with_suffix(".json").is_file():
            meta = dict(meta, data=_sidecar_data(Path(path)))
        return {k: meta[k] for k in ("train_config", "data") if k in meta}
    except Exception:
        return {}


def check_matches(spec: ModelSpec, model: EmbeddingNet, meta: Mapping, path: str | Path = "") -> None:
    """`CheckpointError` unless a loaded checkpoint was saved for ``spec``: same name, same network config."""
    where = f"{path}: " if path else ""
    recorded = meta.get("name")
    if recorded != spec.name:
        raise CheckpointError(f"{where}checkpoint was saved for {recorded!r}, not {spec.name!r}; "
                              "delete it (or rename it to its own name) to retrain")
    expected = spec.net_config()
    diff = {k: (model.config.get(k), v) for k, v in expected.items() if model.config.get(k) != v}
    got_shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    want_shapes = {k: tuple(v.shape) for k, v in spec.build().state_dict().items()}
    shapes = [f"{k} {got_shapes.get(k)} (expected {want_shapes.get(k)})" for k in sorted(set(got_shapes) | set(want_shapes))
              if got_shapes.get(k) != want_shapes.get(k)]
    if diff or shapes:
        said = ", ".join([f"{k}={got!r} (expected {want!r})" for k, (got, want) in diff.items()] + shapes[:3])
        raise CheckpointError(f"{where}network of the checkpoint does not match {spec.name!r} (D={spec.dim}, "
                              f"C={spec.components}): {said}; delete it to retrain")


# ------------------------------------------------------------------ URL runs
# A URL run is two files (`cache_checkpoint_path`): its record ``<method>-s<seed>.json`` (the metrics, config,
# seconds, device and loss history the benchmark reports, and ``weights_sha256``) and its weights beside it,
# ``.pt`` (``{"state_dict", "meta"}``). The record names its weights' SHA-256, so the two are one unit: a pair of
# which one file was rewritten or lost (an interrupt between the two writes) is not a run. Every URL run cached
# since the benchmark's runs held their weights is in this format; it is read where it is, nothing is migrated.
URL_FORMAT = "hedgekit-url-run: <method>-s<seed>.json record with weights_sha256 + .pt weights"


def url_record(path: str | Path) -> dict | None:
    """The record (JSON) of the URL run at ``path`` if it parses as an object, else None. Reads only."""
    try:
        rec = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def _url_weights_match(path: Path, rec: Mapping) -> bool:
    """Whether the weights beside the record ``path`` are the ones the record ``rec`` was written with."""
    weights = Path(path).with_suffix(".pt")
    try:
        st = weights.stat()
    except OSError:
        return False
    return rec.get("weights_sha256") == _file_sha256(str(weights), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    """SHA-256 of a file's bytes, read once per file version (its modification time and size are in the key)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_url_run(path: str | Path, model: torch.nn.Module, rec: dict) -> None:
    """Write a URL run (`URL_FORMAT`): its weights (``.pt``, with the record's method, seed, budget and config),
    then its record (``path``) holding the weights file's SHA-256 (added to ``rec``), each atomically
    (`hedgekit.checks.atomic_write`). Interrupted between the two, the new weights do not match the old record
    and `find_checkpoint` does not find the run, so the next call retrains."""
    path = Path(path)
    weights = path.with_suffix(".pt")
    with atomic_write(weights) as tmp:
        torch.save({"state_dict": model.state_dict(),
                    "meta": {k: rec[k] for k in ("method", "seed", "budget", "config")}}, tmp)
    st = weights.stat()
    rec["weights_sha256"] = _file_sha256(str(weights), st.st_mtime_ns, st.st_size)
    with atomic_write(path) as tmp:
        tmp.write_text(json.dumps(rec, indent=1, allow_nan=True))


def load_url_run(path: str | Path, spec: URLSpec) -> tuple[torch.nn.Module, dict]:
    """The model and record of the URL run at ``path`` (a record, `cache_checkpoint_path`), on the CPU, in eval
    mode. CheckpointError when there is no readable record, or its weights are not the ones it names (an
    interrupted run, a replaced file) or do not load into ``spec``'s network."""
    path = Path(path)
    rec = url_record(path)
    if rec is None:
        raise CheckpointError(f"no readable URL run record at {path}")
    weights = path.with_suffix(".pt")
    model = spec.build()
    try:
        if not _url_weights_match(path, rec):
            raise CheckpointError("they are not the weights its metrics were measured on (an interrupted run, "
                                  "or the file was replaced)")
        model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True)["state_dict"])
    except Exception as exc:  # truncated, corrupt, another run's or another model's weights
        raise CheckpointError(f"the weights {weights} do not load ({type(exc).__name__}: {exc})") from exc
    return model.eval(), rec


# ------------------------------------------------------------------ load or train
def eval_set(spec: ModelSpec):
    """The seen-class test images a pair-trained checkpoint's recorded metrics were computed on."""
    test = load_ndigit(spec.n_digits, "test_seen")
    n_eval = PRESETS[spec.preset][spec.recipe_key]["eval_images"]
    if n_eval is not None:
        test = test.subset(np.random.default_rng(0).permutation(len(test))[:n_eval])
    return test


def _train_pairs(spec: ModelSpec, cfg: TrainConfig, progress: bool, device: str,
                 callback) -> tuple[EmbeddingNet, None, History, dict]:
    """Point / HIB: `hedgekit.training.fit` on N-digit MNIST, then HIB's Table 1 metrics, measured on the training
    device (`hedgekit.evaluation.retrieval.table1_metrics`); the model is handed back on the CPU."""
    from hedgekit.evaluation.retrieval import table1_metrics

    train = load_ndigit(spec.n_digits, "train")
    x, y = torch.from_numpy(train.images), torch.from_numpy(train.labels)
    seed_everything(spec.seed)  # the initial weights too: one name, one model
    model = spec.build()
    hist = fit(model, x, y, cfg, seed=spec.seed, device=device, progress=progress,
               augment=random_occlusion(cfg.occlusion_p), callback=callback)
    test = eval_set(spec)
    metrics = table1_metrics(model.eval(), test, progress=progress)
    return model.cpu(), None, hist, {"metrics": metrics, "eval_images": len(test)}


def _train_episodes(spec: ModelSpec, cfg: EpisodicConfig, progress: bool, device: str,
                    callback) -> tuple[EmbeddingNet, SPE | PN, History, dict]:
    """PN / SPE: `hedgekit.training.episodic` on N-digit MNIST or L-shapes, then a quick episode check."""
    r = spec.recipe_config()
    if spec.data == "lshapes":
        train = make_lshapes(r["n_train"], seed=spec.seed, train=True, cache=True)
        images, labels, augment = torch.from_numpy(train.images), train.labels, None
    else:
        train = load_ndigit(spec.n_digits, "train")
        # SPE App. E: every training digit occluded with probability 0.2, redrawn at every step.
        images, labels, augment = torch.from_numpy(train.images), train.labels, random_occlusion(0.2)
    seed_everything(spec.seed)  # the initial weights too, so a name always means the same model
    model, head = spec.build(), spec.build_head()
    hist = fit_episodic(model, head, images, labels, cfg, seed=spec.seed, device=device, progress=progress,
                        augment=augment, callback=callback)
    model, head = model.cpu().eval(), head.cpu().eval()
    return model, head, hist, {"metrics": episode_metrics(spec, model, head), "recipe": r,
                               "head": head_meta(head)}


def episode_metrics(spec: ModelSpec, model: EmbeddingNet, head) -> dict:
    """A cheap accuracy check stored with a prototype checkpoint (not the notebooks' evaluation)."""
    r = spec.recipe_config()
    if spec.data == "lshapes":
        test = make_lshapes(r["n_test"], seed=spec.seed, train=False, cache=True)
        mean, std, _ = evaluate_episodes(model, head, test, n_episodes=r["eval_episodes"], n_classes=4,
                                         k_support=r["k_support"], query_per_class=r["eval_query"])
        return {"heldout_acc": mean, "heldout_std": std, "episodes": r["eval_episodes"], "k_support": r["k_support"]}
    # eval_k support + 5 queries per class is all an episode needs: embed no more test images than that
    test = per_class_subset(load_ndigit(spec.n_digits, "test_seen"), r["eval_k"] + 5, spec.seed)
    n_cls = len(np.unique(test.labels)) if spec.recipe == "main" else min(20, len(np.unique(test.labels)))
    mean, std, _ = evaluate_episodes(model, head, test, n_episodes=r["eval_episodes"], n_classes=n_cls,
                                     k_support=r["eval_k"], query_per_class=5)
    return {"seen_clean_acc": mean, "seen_clean_std": std, "episodes": r["eval_episodes"], "k_support": r["eval_k"],
            "n_classes": n_cls}


def triplet_data(spec: Spec, split: str = "train") -> dict:
    """The data of a triplet model: {"images", "labels"} and, for Fashion-MNIST "noisy", ``true`` labels,
    ``flipped`` and ``clean`` masks; "longtail" keeps exponentially decaying class counts
    (`hedgekit.data.subsets`). ``split``: "train", or "test" (N-digit MNIST: the unseen classes).

    "ambnoisy" / "ambclean" (the image-dependent analogue of Clothing1M): train and test images carry an
    ``ambiguous`` mask (`hedgekit.data.subsets.overlay_lookalikes`, clean labels); the training labels flip by
    `hedgekit.data.subsets.uncertainty_noise` under `clean_posterior` (neither clean-subset nor ambiguous items
    flip); "ambclean" is the clean subset alone."""
    from hedgekit.data.fashion import load_fashion
    from hedgekit.data.subsets import clean_subset, long_tailed, lookalike_noise

    r = spec.recipe_config()
    if spec.data == "fashion" and spec.recipe.startswith("amb"):
        a = r["amb"]
        out = _ambiguous_fashion(split, a["ambiguous"], tuple(a["alpha"]), a["clean_fraction"], r["noise"],
                                 a["power"], r["noise_seed"])
        out = {k: v.copy() for k, v in out.items()}
        return {k: v[out["clean"]] for k, v in out.items()} if split == "train" and spec.recipe == "ambclean" else out
    if spec.data == "ndigit":
        ds = load_ndigit(spec.n_digits, "train" if split == "train" else "test_unseen")
        out = {"images": ds.images, "labels": ds.labels}
    else:
        ds = load_fashion("train" if split == "train" else "test")
        out = {"images": ds.images, "labels": ds.labels.copy()}
        if split == "train" and spec.recipe in ("noisy", "clean"):
            clean = clean_subset(len(ds.labels), r["clean_fraction"], r["noise_seed"])
            noisy = lookalike_noise(ds.labels, rate=r["noise"], seed=r["noise_seed"])
            labels = np.where(clean, ds.labels, noisy.labels)
            out = {"images": ds.images, "labels": labels, "true": ds.labels.copy(), "flipped": labels != ds.labels,
                   "clean": clean}
            if spec.recipe == "clean":
                out = {k: v[clean] for k, v in out.items()}
    if split == "train" and spec.recipe == "longtail":
        keep = long_tailed(out["labels"], seed=r.get("noise_seed", 0))
        out = {k: v[keep] for k, v in out.items()}
    return out


@functools.lru_cache(maxsize=2)
def _ambiguous_fashion(split: str, fraction: float, alpha: tuple, clean_fraction: float, noise: float, power: float,
                       seed: int) -> dict:
    """`triplet_data`'s "amb" Fashion-MNIST split (computed once per process: the classifier takes ~10 s)."""
    from hedgekit.data.fashion import load_fashion
    from hedgekit.data.subsets import clean_posterior, clean_subset, overlay_lookalikes, uncertainty_noise

    ds = load_fashion("train" if split == "train" else "test")
    amb = overlay_lookalikes(ds.images, ds.labels, fraction=fraction, alpha=alpha,
                             seed=seed if split == "train" else seed + 1)
    out = {"images": amb.images, "labels": ds.labels.copy(), "ambiguous": amb.ambiguous}
    if split != "train":
        return out
    clean = clean_subset(len(ds.labels), clean_fraction, seed)
    noisy = uncertainty_noise(ds.labels, clean_posterior(amb.images, ds.labels, seed=seed), rate=noise,
                              eligible=~clean & ~amb.ambiguous, power=power, seed=seed)
    return {**out, "labels": noisy.labels, "true": noisy.true, "flipped": noisy.flipped, "clean": clean}


def _train_triplets(spec: Spec, cfg: TripletConfig, progress: bool, device: str,
                    callback) -> tuple[EmbeddingNet, None, History, dict]:
    """Triplet / heteroscedastic triplet (Taha et al. 2019): `hedgekit.training.triplets`, then a quick mAP."""
    from hedgekit.data.subsets import query_gallery_split
    from hedgekit.evaluation.metrics import mean_average_precision

    data = triplet_data(spec)
    seed_everything(spec.seed)
    model = spec.build()
    hist = fit_triplets(model, torch.from_numpy(data["images"]), torch.from_numpy(np.asarray(data["labels"])),
                        cfg, seed=spec.seed, device=device, progress=progress, callback=callback)
    model = model.cpu().eval()
    test = triplet_data(spec, "test")
    n_eval = spec.recipe_config()["eval_images"]
    idx = np.arange(len(test["labels"]))
    if n_eval is not None:
        idx = np.sort(np.random.default_rng(0).permutation(len(idx))[:n_eval])
    q, g = query_gallery_split(test["labels"][idx])
    emb = model.embed(torch.from_numpy(test["images"][idx]).unsqueeze(1).float().div(255.0)).mixture_mean().numpy()
    labels = test["labels"][idx]
    return model, None, hist, {"metrics": {"map": mean_average_precision(emb[q], labels[q], emb[g], labels[g]),
                                           "eval_images": int(len(idx))}}


# family -> trainer(spec, cfg, progress, device, callback) -> (model, head or None, History, checkpoint metadata)
TRAINERS = {"pairs": _train_pairs, "episodes": _train_episodes, "triplets": _train_triplets}


def head_meta(head: SPE | PN) -> dict:
    """The prototype head's parameters as checkpoint metadata (SPE's gamma is its only learned number)."""
    if isinstance(head, SPE):
        return {"kind": "spe", "gamma": float(head.gamma.detach()), "sigma_eps2": float(head.sigma_eps2.detach()),
                "dim": head.dim, "train_sampler": head.train_sampler, "train_samples": head.train_samples,
                "eval_sampler": head.eval_sampler, "eval_samples": head.eval_samples}
    return {"kind": "pn", "scale": float(getattr(head, "scale", 1.0))}


def prototype_head(meta: Mapping) -> SPE | PN:
    """The PN / SPE head recorded in a prototype checkpoint's metadata (`CheckpointError` if there is none)."""
    info = meta.get("head")
    if not isinstance(info, Mapping):
        raise CheckpointError(f"{meta.get('name', 'this checkpoint')!r} has no prototype-head metadata "
                              "(not a PN / SPE checkpoint)")
    if info.get("kind") == "pn":
        return PN(info.get("scale", 1.0))
    head = SPE(1, int(info["dim"]), train_sampler=info["train_sampler"], train_samples=int(info["train_samples"]),
               eval_sampler=info.get("eval_sampler", "naive"), eval_samples=int(info.get("eval_samples", 200)))
    with torch.no_grad():
        head.gamma.fill_(float(info["gamma"]))
    return head.eval()


def train_spec(spec: ModelSpec, progress: bool = True, device: str = "cpu", callback=None,
               precision: str = "float32") -> tuple[EmbeddingNet, dict]:
    """Train the model ``spec`` names and evaluate it; returns (model, meta), model on the CPU.

    ``callback(step, row)`` is forwarded to the trainer (e.g. the app's progress bar). ``precision`` is the
    trainer's (`hedgekit.training.fit.body_autocast`): like ``device`` it says how to train, not what, so it is
    not part of the name; the checkpoint records it in ``meta["train_config"]``. ``"bfloat16"`` on a device that
    only emulates it trains in float32, with a warning (`hedgekit.hardware.resolve_precision`). ``device`` ("auto":
    `hedgekit.checks.resolve_device`) is recorded in ``meta["device"]`` (`hedgekit.hardware.device_description`,
    e.g. "cpu" or "cuda:0 (NVIDIA H100 80GB HBM3)"); `is_stale` never reads it.
    """
    t0 = time.perf_counter()
    dev = resolve_device(device)
    cfg = replace(spec.train_config(), precision=resolve_precision(precision, dev))
    model, _head, hist, extra = TRAINERS[spec.family](spec, cfg, progress, str(dev), callback)
    meta = {"spec": asdict(spec), "name": spec.name, "train_config": asdict(cfg), "device": device_description(dev),
            "seed": spec.seed,
            "train_seconds": round(hist.seconds, 1), "total_seconds": round(time.perf_counter() - t0, 1),
            **extra, "history": hist.rows, "versions": versions(), "data": _data_record(spec)}
    return model, meta


def _data_record(spec: ModelSpec) -> dict:
    """What a checkpoint records of its training data (`data_source`; L-shapes: the generator)."""
    source = data_source(spec)
    if source is None:
        return {"dataset": spec.data, "origin": "generated by hedgekit.data.lshapes" if spec.data == "lshapes"
                else "not installed"}
    return source.record()


def load_or_train(spec: ModelSpec, progress: bool = True, device: str = "cpu", retrain: bool = False,
                  save: bool = True, callback=None, precision: str = "float32") -> tuple[EmbeddingNet, dict]:
    """The model named by ``spec``: loaded if a checkpoint exists, else trained (and cached).

    ``device`` and ``precision`` say how a missing model is trained (`train_spec`); a checkpoint trained on
    another device or in another precision serves the name all the same (`is_stale` ignores both). The model is
    returned on ``device`` ("auto": `hedgekit.checks.resolve_device`).

    Loading needs no write access. A model that has to be trained and saved needs a writable cache with room
    for it: a read-only or full one is refused before training (`hedgekit.errors.StorageError` naming the
    folder and ``HEDGEKIT_DATA``, the fix); ``save=False`` trains in memory instead.

    Returns (model, meta); ``meta["source"]`` says "shipped", "cache" or "trained now" and ``meta["path"]``
    where the checkpoint is ("" if not saved). Prototype models carry their head in ``meta["head"]``
    (`prototype_head`). For a URL run (`URLSpec`; ``callback`` and ``precision`` do not apply) ``meta`` is the
    run's record (`url_record`) and the model an `hedgekit.training.upstream.UpstreamModel`.
    """
    if isinstance(spec, URLSpec):
        return _load_or_train_url(spec, progress, device, retrain, save)
    device = resolve_device(device)
    path = None if retrain else find_checkpoint(spec)
    if path is not None:
        model, meta = load_checkpoint(path, device)
        check_matches(spec, model, meta, path)
        return model, dict(meta, source="shipped" if path.parent == SHIPPED_DIR else "cache", path=str(path))
    save = save and distributed.context().is_main  # under torchrun only rank 0 writes
    out = cache_checkpoint_path(spec, data_source(spec))
    if save:  # a read-only or full cache is refused before minutes of training, not after
        check_writable(out, need=_checkpoint_bytes(spec))
    model, meta = train_spec(spec, progress=progress, device=device, callback=callback, precision=precision)
    out = save_checkpoint(out, model, meta) if save else None
    return model.to(device), dict(meta, source="trained now", path=str(out or ""))


def _load_or_train_url(spec: URLSpec, progress: bool, device: str, retrain: bool,
                       save: bool) -> tuple[torch.nn.Module, dict]:
    """`load_or_train` for a URL run: its cached pair if `find_checkpoint` finds it, else trained by
    `URLBenchmark.train` and saved by `save_url_run`."""
    dev = resolve_device(device)
    path = None if retrain else find_checkpoint(spec)
    if path is not None:
        model, rec = load_url_run(path, spec)
        return model.to(dev), dict(rec, source="cache", path=str(path))
    save = save and distributed.context().is_main
    out = cache_checkpoint_path(spec, None)
    if save:  # a read-only or full cache is refused before the training, not after
        check_writable(out, need=2**20)  # a URL run's weights and record: ~0.3 MB
    model, rec = _url_benchmark().train(spec, progress=progress, device=device)
    if save:
        save_url_run(out, model, rec)
    return model.to(dev), dict(rec, source="trained now", path=str(out) if save else "")


def _checkpoint_bytes(spec: ModelSpec) -> int:
    """Roughly the size of ``spec``'s checkpoint: its weights plus 256 KB of metadata (the history)."""
    return sum(t.numel() * t.element_size() for t in spec.build().state_dict().values()) + 2**18


def refresh_metrics(path: str | Path) -> dict:
    """Re-evaluate a pair-trained checkpoint with the current evaluation code and store the metrics in it.

    Used after a change to `hedgekit.evaluation.retrieval` so that shipped checkpoints record what
    the code computes today (tests/test_shipped.py checks exactly that). A provenance sidecar
    (`write_provenance`) keeps the data record and is rewritten for the new bytes.
    """
    from hedgekit.evaluation.retrieval import table1_metrics

    model, meta = load_checkpoint(path)
    sidecar_data = meta.pop("data") if Path(path).with_suffix(".json").is_file() else None
    meta["metrics"] = table1_metrics(model, eval_set(spec_from_name(meta["name"])))
    save_checkpoint(path, model, meta)
    if sidecar_data is not None:
        write_provenance(path, Source(**sidecar_data))
    return meta["metrics"]


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.pt"))


def shipped_or_fast(paper: list[ModelSpec], fast: list[ModelSpec]) -> list[ModelSpec]:
    """FAST mode's models for one figure or table: ``paper`` if every one of them ships with the package
    (`shipped_names`), else ``fast``. All or none, so a figure never sets a `paper` model beside a `fast`
    one. The notebooks' FAST mode uses it where a `fast` model would not show the effect a figure is about
    (`hedgekit.papers.hib.experiments`, `hedgekit.papers.spe.experiments`)."""
    shipped = set(shipped_names())
    return list(paper) if all(s.name in shipped for s in paper) else list(fast)
