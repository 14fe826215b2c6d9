"""Specs: what names a trained model of the kit, and the presets each spec's recipe reads.

A spec names a trained model completely (method, data, N, D and the method's own settings, preset, seed);
``Spec(kind=..., ...)`` builds one, a `ModelSpec` of the kind's own type (its method record's ``spec_type``), which
checks its fields when it is built; its name is derived from it (`hedgekit.zoo.names`). Each method belongs to a
training *family* (its record's ``family``): pairs (`hedgekit.training.fit`), episodes (`hedgekit.training.episodic`)
or triplets (`hedgekit.training.triplets`); a spec gives its trainer's config (`train_config`) from its preset's recipe
(`PRESETS`) and builds its untrained network (`build`) and prototype head (`build_head`). Every default is written
once: in a spec type's fields, in `PRESETS`, or in `DEFAULT_SAMPLES` / `DATA_N_DIGITS` for what depends on the
data set. A run of the URL benchmark is a `hedgekit.zoo.url_runs.URLSpec` (``Spec(kind="url", ...)``).

Each kind is a registered method (`hedgekit.zoo.methods.METHODS`), whose record names its spec type, family,
head and flags; the kit's six register in `hedgekit.zoo.kit_methods`. docs/extending.md ("Adding a method") adds
one.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import numbers
from dataclasses import asdict, dataclass
from typing import ClassVar

from hedgekit.checks import MAX_STEPS, check_count, check_margin, check_seed
from hedgekit.data.ndigit import MAX_DIGITS
from hedgekit.errors import InputError
from hedgekit.methods.hib import BETA, check_beta
from hedgekit.methods.pn import PN
from hedgekit.methods.fast.spe import SAMPLERS, SPE, gamma_init
from hedgekit.nets import INIT_VAR, EmbeddingNet, model_from_config
from hedgekit.nets.backbones import LSHAPE_BLOCKS
from hedgekit.nets.embedder import MAX_COMPONENTS, MAX_DIM
from hedgekit.training.episodic import EpisodicConfig
from hedgekit.training.fit import TrainConfig
from hedgekit.training.triplets import TripletConfig
from hedgekit.zoo.methods import METHODS, PRESETS, every_flag, method
from hedgekit.zoo.names import URL_KIND, model_name
from hedgekit.zoo.url_runs import URLSpec

DATASETS = ("ndigit", "lshapes", "fashion")
DATA_NAMES = {"ndigit": "N-digit MNIST", "lshapes": "L-shapes", "fashion": "Fashion-MNIST"}
# main: the paper's setting; fig4: SPE's Figure 4 runs; aug: occlusion augmentation (Taha Table 1 "+ Aug");
# noisy / clean: Fashion-MNIST with look-alike label noise that ignores the image / its clean subset only (Taha
# Table 2, the "independent noise" contrast); ambnoisy / ambclean: the same with image-dependent noise and ambiguous
# overlaid garments (`hedgekit.zoo.recipes.triplet_data`) / its small clean subset only; longtail: decaying class
# counts (Tables 3-4)
RECIPES = ("main", "fig4", "aug", "noisy", "clean", "longtail", "ambnoisy", "ambclean")
_TRIPLET_RECIPES = {"ndigit": ("main", "aug", "longtail"),
                    "fashion": ("noisy", "clean", "longtail", "ambnoisy", "ambclean")}
LOSSES = ("soft", "hard")  # point models: soft contrastive (HIB eq. 3) or hard contrastive (eq. 1)
DEFAULT_SAMPLES = {"ndigit": 1, "lshapes": 8}  # SPE sec. 4.2: trained with s = 1; App. A.2: 8 samples per query
# Where a Gaussian head's variances start (`Spec.init_var`): "unit" = `hedgekit.nets.INIT_VAR` for every model,
# "eps" = SPE only, at sigma_eps^2's initial value (App. B), named "veps".
INIT_VARS = ("unit", "eps")

# The "amb" recipes of Taha's Table 2 (image-dependent noise, `hedgekit.zoo.recipes.triplet_data`; docs/recipes.md,
# "Taha Table 2 with image-dependent noise"): 10% of train and test images are two look-alike garments blended (own
# weight 0.55-0.7, clean label); the same 38% of all labels flip, to the class a clean classifier confuses, with
# probability growing as the square of its uncertainty's percentile; 0.5% of the labels verified clean (300 images,
# 30 per class: small enough that the clean subset alone loses to clean + noisy, the precondition of the cleaning
# claim).
_AMB = dict(ambiguous=0.1, alpha=(0.55, 0.7), clean_fraction=0.005, power=2.0)
# Taha Table 2's label noise at kit scale, in both presets: 5% of the training labels verified clean (Clothing1M's
# D_c is ~2%; 5% keeps the clean-only row trainable), the rest flipped between look-alike classes at Clothing1M's
# ~38% noise rate.
_FASHION_NOISE = dict(clean_fraction=0.05, noise=0.38, noise_seed=0, amb=_AMB)

# Preset -> recipe -> settings of the families' shared recipes, the reason for each number beside it; they join
# the kinds' own recipes (the pair-trained kinds', in their records: `hedgekit.zoo.kit_methods`) in `PRESETS`. The
# recipe of a prototype model is its data set (+ "_fig4"), of a triplet model its data set (`Spec.recipe_key`).
_SHARED_RECIPES: dict[str, dict[str, dict]] = {
    "fast": {
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
                                 **_FASHION_NOISE),
    },
    "paper": {
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
        # Table 2 analogue: all 10 classes x 10 images per batch and semi-hard mining as for Clothing1M (sec. 5.2),
        # with its label noise (`_FASHION_NOISE`).
        "triplets_fashion": dict(steps=1500, P=10, K=10, lr=1e-3, mining="semi_hard", eval_images=None,
                                 **_FASHION_NOISE),
    },
}
for _preset, _recipes in _SHARED_RECIPES.items():
    PRESETS[_preset].update(_recipes)
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

    kind: str  # each type's own default; `Spec`'s for the kit
    data: str = "ndigit"
    n_digits: int = 2
    dim: int = 2
    preset: str = "paper"
    seed: int = 0
    steps: int | None = None

    DATA: ClassVar[tuple[str, ...]] = ("ndigit",)  # the data sets they train on

    def __post_init__(self) -> None:
        kinds = [kind for kind, record in METHODS.items() if record.spec_type is type(self)]
        if self.kind not in kinds:
            raise InputError(f"{type(self).__name__} names {'/'.join(kinds)} models, not kind={self.kind!r}; build "
                             "specs with Spec(kind=...)")
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
        """Its method record's training family (`hedgekit.zoo.methods.MethodRecord.family`)."""
        return METHODS[self.kind].family

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
        """The canonical name, e.g. ``hib-n2-d2-c1-beta0.0001-paper-s0`` (`hedgekit.zoo.names.model_name`)."""
        return model_name(self)

    def name_parts(self) -> list[str]:
        """The name parts of this kind's own settings (`hedgekit.zoo.names.model_name`); a setting at its default is
        not named, so that adding one keeps every existing name."""
        return []

    @classmethod
    def completed(cls, fields: dict) -> dict:
        """``fields`` (of `Spec`) with what depends on other fields filled in, so that one model has one spec."""
        return fields

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
        return INIT_VAR

    def net_config(self) -> dict:
        """The `EmbeddingNet.config` of this spec's network (LeNet for N-digit MNIST, App. A.2 conv net for
        L-shapes); a checkpoint must record exactly this config to be loaded under this spec."""
        head = METHODS[self.kind].head
        if self.data == "lshapes":
            return build_config(head, self.dim, self.n_digits, self.components, self.initial_variance,
                                lshapes_channels=self.recipe_config()["channels"])
        return build_config(head, self.dim, self.n_digits, self.components, self.initial_variance)

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

    def _recipe_fields(self) -> dict:
        """The preset's `TrainConfig` fields for this spec (its evaluation keys left out); each kind's
        ``train_config`` adds its loss's fields to them."""
        return {k: v for k, v in self.recipe_config().items() if k not in _PAIR_EVAL_KEYS}


@dataclass(frozen=True)
class PointSpec(PairSpec):
    """A point embedding (contrastive): ``loss`` "soft" (HIB eq. 3) or "hard" (eq. 1, with ``margin`` M)."""

    kind: str = "point"
    loss: str = "soft"
    margin: float = 1.0

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

    def name_parts(self) -> list[str]:
        return ["hard", f"m{self.margin:g}"] if self.loss == "hard" else []

    def train_config(self) -> TrainConfig:
        return TrainConfig(**{**self._recipe_fields(), "beta": 0.0, "loss": self.loss, "margin": self.margin})


@dataclass(frozen=True)
class HIBSpec(PairSpec):
    """HIB's MoG-C (Oh et al. 2019): ``components`` C, KL weight ``beta`` (eq. 8) and ``samples`` K per input
    (eq. 5): None follows the preset's K (`preset_k`); another K is kept and named (``k8``)."""

    kind: str = "hib"
    components: int = 1
    beta: float = BETA
    samples: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_counts(self, ("components",))
        check_beta(self.beta, "Spec.beta")
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

    def name_parts(self) -> list[str]:
        parts = [f"c{self.components}", "beta" + f"{self.beta:g}".replace("-", "_")]
        return parts + ([f"k{self.samples}"] if self.samples is not None else [])

    @classmethod
    def completed(cls, fields: dict) -> dict:
        """K = the preset's K is written None (`samples`)."""
        preset = fields.get("preset", cls.preset)
        if preset in PRESETS and fields.get("samples") == _preset_k(preset):
            fields["samples"] = None
        return fields

    def train_config(self) -> TrainConfig:
        """The preset's recipe with HIB's loss: ``beta`` goes from here straight into `TrainConfig.beta`."""
        own_k = {"k": self.samples} if self.samples is not None else {}
        return TrainConfig(**{**self._recipe_fields(), "beta": self.beta, "loss": "soft", "margin": 1.0, **own_k})


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

    def name_parts(self) -> list[str]:
        return [self.recipe] if self.recipe != "main" else []

    def train_config(self) -> EpisodicConfig:
        r = self.recipe_config()
        return EpisodicConfig(steps=r["steps"], n_classes=4 if self.data == "lshapes" else r["n_classes"],
                              k_support=r["k_support"], query_per_class=r["query_per_class"], lr=r["lr"],
                              log_every=_log_every(r["steps"]), **self._sampler_config())

    def _sampler_config(self) -> dict:
        return {}


@dataclass(frozen=True)
class PNSpec(EpisodeSpec):
    """The Prototypical Network (deterministic, no sampler)."""

    kind: str = "pn"

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

    def _sampler_config(self) -> dict:
        return dict(sampler=self.sampler, samples=self.samples)

    def name_parts(self) -> list[str]:
        return [f"{self.sampler}{self.samples}"] + (["veps"] if self.init_var == "eps" else []) + super().name_parts()

    @classmethod
    def completed(cls, fields: dict) -> dict:
        """Samples per query: the data set's `DEFAULT_SAMPLES` unless given."""
        if fields.get("samples") is None:
            fields["samples"] = DEFAULT_SAMPLES.get(fields.get("data", cls.data))  # None off SPE's data: refused
        return fields

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

    def name_parts(self) -> list[str]:
        return [self.recipe] if self.recipe != "main" else []

    def train_config(self) -> TripletConfig:
        r = self.recipe_config()
        return TripletConfig(steps=r["steps"], P=r["P"], K=r["K"], lr=r["lr"], mining=r["mining"],
                             heteroscedastic=self.kind == "het", occlusion_p=0.2 if self.recipe == "aug" else 0.0,
                             log_every=_log_every(r["steps"]))


DATA_N_DIGITS = {"lshapes": 2, "fashion": 1}  # n_digits of the data sets that are not N-digit MNIST (lshapes: unused)


def Spec(kind: str = "hib", **fields) -> ModelSpec:  # noqa: N802 (named like the type it builds)
    """The spec of a ``kind`` model: ``Spec(kind="hib", components=2, preset="paper")`` is a `HIBSpec`.

    The one constructor of specs: it picks the kind's type (its record's ``spec_type``,
    `hedgekit.zoo.methods.METHODS`), refuses a field that does not apply to the kind (InputError saying why, in the
    words of the flag that sets it; ``components=1`` is accepted everywhere, as every other kind has one) and fills
    what depends on other fields, so that one model has one spec and one name: ``n_digits`` of L-shapes and
    Fashion-MNIST (`DATA_N_DIGITS`), then the type's own (`ModelSpec.completed`: SPE's samples per query, HIB's K
    None when it equals the preset's). The type then checks every field. ``Spec(kind="url", method=..., budget=...,
    seed=...)`` is a `hedgekit.zoo.url_runs.URLSpec` (a run of the URL benchmark).
    """
    if kind == URL_KIND:
        return URLSpec(**fields)
    cls = method(kind).spec_type
    own = {f.name for f in dataclasses.fields(cls)}
    if "components" not in own and fields.get("components", 1) == 1:
        fields.pop("components", None)
    refused = sorted(set(fields) - own)
    if refused:
        sets = {flag.field: flag.sets for flag in every_flag().values()}
        why = "; ".join(f"{name}: {sets.get(name, 'no such field')}" for name in refused)
        raise InputError(f"Spec.{', Spec.'.join(refused)} {'does' if len(refused) == 1 else 'do'} not apply to {kind} "
                         f"models ({why}); {kind} models take {', '.join(sorted(own - {'kind'}))}")
    fields = {k: int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
              for k, v in fields.items()}  # numpy integers as int: one spec, one name, plain metadata
    data = fields.get("data", cls.data)
    if data in DATA_N_DIGITS:
        n = fields.setdefault("n_digits", DATA_N_DIGITS[data])
        if n != DATA_N_DIGITS[data]:
            raise InputError(f"n_digits applies to N-digit MNIST only; {data} models take no n_digits (got {n!r})")
    return cls(kind=kind, **cls.completed(fields))


def _preset_k(preset: str) -> int:
    """HIB's samples per input K in ``preset`` (`TrainConfig`'s K = 8 where the preset names none)."""
    return int(PRESETS[preset]["hib"].get("k", TrainConfig.k))


def _log_every(steps: int) -> int:
    """Log steps of the episode and triplet trainers: 20 rows per run, at least every 50 steps."""
    return max(1, min(50, steps // 20))


def _check_counts(spec: ModelSpec, names: tuple[str, ...]) -> None:
    """The sizes of ``spec`` within their bounds (`hedgekit.nets.embedder.check_model_size` checks the memory)."""
    bounds = {"n_digits": (MAX_DIGITS, ""), "dim": (MAX_DIM, " (the embedding dimension)"),
              "components": (MAX_COMPONENTS, " (HIB's mixture components)"), "steps": (MAX_STEPS, " (training steps)")}
    for name in names:
        maximum, why = bounds[name]
        check_count(getattr(spec, name), f"Spec.{name}", 1, maximum, why)


def build_config(head: str, dim: int, n_digits: int, components: int, init_var: float,
                 lshapes_channels: int | None = None) -> dict:
    """`EmbeddingNet.config` without building the network (`hedgekit.nets.embedder` builders record the same):
    LeNet for N-digit MNIST, or with ``lshapes_channels`` App. A.2's conv net for L-shapes (3 x 64 x 64, one
    component, ``n_digits`` unused)."""
    init_var = float(init_var)
    if lshapes_channels is not None:
        return dict(body="conv", kind=head, dim=dim, in_channels=3, height=64, width=64, blocks=LSHAPE_BLOCKS,
                    channels=lshapes_channels, components=1, init_var=init_var)
    return dict(kind=head, n_digits=n_digits, dim=dim, components=components, in_channels=1, height=28,
                width=28 * n_digits, init_var=init_var)
