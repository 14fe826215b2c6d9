"""What a run of the URL benchmark is (Kirchhof et al. 2023 at kit scale): its budget, its model, the config and
code key its record must match, and how it is trained and evaluated.

This module registers itself with the model store when imported (`hedgekit.zoo.url_runs.register_url_runs`): a
run as a model of the store (`hedgekit.zoo.URLSpec`, its files, staleness and load-or-train) calls
`check_methods`, `resolve_budget`, `run_config`, `build_run_model`, `cache_root` and `train_run` here, looked up on
this module at each call so that what a test replaces here is what the store uses. The arrow runs one way: the
paper builds on the store, the store imports no paper. `hedgekit.papers.url.benchmark` runs the benchmark through
the store (runs, leaderboards, the command); this module does not import it.

* one backbone for all methods, `LeNetBody` on 28x56 two-digit images (120 features), with the method's head
  (`hedgekit.methods.upstream.build_method`, embedding dimension `EMBED_DIM`) on top, trained jointly;
* one budget for all methods (`BUDGETS`): the same steps, batch, learning rate and schedule, with per-method
  `Setting` overrides where the paper gives them (`"converged"`), and learning-rate sweeps of one
  (`sweep_budgets`);
* a run's record holds `run_config`: the budget's settings for the method and a hash of the code it executes
  (`hedgekit.papers.url.code_hash`); a record with another config is stale and retrained.
"""
from __future__ import annotations

import math
import re
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from hedgekit.checks import resolve_device
from hedgekit.data import load_ndigit, random_occlusion
from hedgekit.data.mnist import mnist_source
from hedgekit.data.ndigit import per_class_subset
from hedgekit.errors import DivergedError, InputError
from hedgekit.hardware import device_description
import hedgekit.methods
from hedgekit.methods.upstream import METHODS
from hedgekit.nets.backbones import LeNetBody
from hedgekit.papers.url import code_hash, protocol
from hedgekit.papers.url.code_hash import module_closure
from hedgekit.papers.url.leaderboard import label
from hedgekit.papers.url.numbers import DISPLAY
from hedgekit.papers.url.views import TwoViews
from hedgekit.paths import data_dir
from hedgekit.training.upstream import UpstreamConfig, UpstreamModel, fit_upstream, predict
from hedgekit.zoo.store import versions
from hedgekit.zoo.url_runs import register_url_runs

__all__ = ["EMBED_DIM", "Setting", "Budget", "BUDGETS", "LR_SWEEP", "TWO_VIEWS", "RUN_MODULES", "method_registry",
           "check_methods", "resolve_budget", "sweep_budgets", "eval_sets", "build_model", "build_run_model",
           "cache_root", "run_config", "augmentation", "train_run"]

EMBED_DIM = 16


@dataclass(frozen=True)
class Setting:
    """One method's own settings in a budget (what differs from the budget's shared `UpstreamConfig`), with the
    reason for each number in ``why``: the steps, the learning rate and the method's hyper-parameters (keyword
    arguments of its head, e.g. Losspred's ``lam``, the vMF heads' ``kappa_init``)."""

    steps: int | None = None  # None: the budget's
    lr: float | None = None  # None: the budget's
    hparams: dict = field(default_factory=dict)
    why: str = ""


@dataclass(frozen=True)
class Budget:
    """Training and evaluation budget: a shared `UpstreamConfig`, per-method `Setting` overrides (none in "fast"
    and "paper", which train every method alike) and the evaluation sets' size."""

    name: str
    train: UpstreamConfig
    eval_per_class: int  # images per class in each evaluation set (seen, unseen, Fashion pairs)
    settings: dict = field(default_factory=dict)  # method -> Setting

    def train_config(self, method: str) -> UpstreamConfig:
        """The `UpstreamConfig` of ``method``: the shared one with the method's steps and learning rate."""
        s = self.settings.get(method, Setting())
        return replace(self.train, **{k: v for k, v in (("steps", s.steps), ("lr", s.lr)) if v is not None})

    def hparams(self, method: str) -> dict:
        """The keyword arguments of ``method``'s head in this budget (empty: the head's defaults)."""
        return dict(self.settings.get(method, Setting()).hparams)


BUDGETS = {
    # fast: CI and FAST notebooks; 20 steps of 128 images and 6 images per class in each evaluation set
    # (~5 s per run) -- enough to run every code path, not to rank methods: the numbers are mostly noise
    "fast": Budget("fast", UpstreamConfig(steps=20, log_every=5), eval_per_class=6),
    # paper: the full-mode notebook; 200 steps of 128 images (~0.26 epochs of the 100k training images; CE
    # reaches ~0.8 R@1 on the unseen digits) and 25 images per class (750 unseen-digit, 1750 seen-digit and
    # 2500 Fashion-pair images) keep 11 methods x 3 seeds within about 30 minutes on 2 shared cores
    "paper": Budget("paper", UpstreamConfig(steps=200, log_every=25), eval_per_class=25),
    # converged: every method trains until it has learned an embedding (upstream R@1 and accuracy >= TRAINED_AT),
    # with the paper's per-method hyper-parameters where App. B gives them and a small search where it does not
    # (the search and its numbers: docs/recipes.md, "URL: a budget where every method learns"). Shared: 400 steps
    # (CE: upstream accuracy 0.75 at 200 steps; R@1 0.82 and accuracy 0.90 at 400) and the paper
    # budget's lr and evaluation sets; the table holds only what differs from them.
    "converged": Budget("converged", UpstreamConfig(steps=400, log_every=50), eval_per_class=25, settings={
        "losspred": Setting(hparams={"lam": 0.1}, why=(
            "App. B.9 searches lambda in [0.01, 0.99]; at the kit's default 0.5 the squared error of kappa(x) "
            "against the initial CE (~log 70 = 4.2) dominates the loss and its gradient, which reaches the "
            "embedding through the kappa MLP, collapses the features (200 steps: accuracy 0.08); lambda 0.1: "
            "accuracy 0.88 at 400 steps (0.05: 0.74 at 200)")),
        "mcinfonce": Setting(hparams={"kappa_init": 100.0}, why=(
            "App. B.3 makes kappa's start a hyper-parameter; at the default kappa_init 16 (in 16 dimensions a vMF "
            "sample keeps little of its mean) the loss falls to log(B - 1) = 4.84, every embedding at one point "
            "(200 steps: R@1 0.20); kappa_init 100: R@1 0.88 at 200 steps (kappa = softplus); with "
            "kappa = 1/u: R@1 0.92 at 400 steps on 2000 held-out training images")),
        "mcinfonce_2v": Setting(steps=1000, hparams={"kappa_init": 100.0}, why=(
            "the head and start of mcinfonce, the views and steps of infonce_2v (R@1 0.61 at 400 steps on 2000 "
            "held-out training images, infonce_2v 0.60)")),
        "infonce_2v": Setting(steps=1000, hparams={"t": 8.0}, why=(
            "App. B.2 searches t in [8, 64]: R@1 0.38 at t = 8, 0.33 at the default 16 (views of a "
            "2-pixel shift); with TWO_VIEWS R@1 on 2000 held-out training images 0.60 at 400 steps, "
            "0.64 at 1000 and 0.61 at 2000 (flat from step 500 on): 1000 steps, the plateau; the shared lr 2e-3: "
            "6e-3 gave 0.63 at 1000 steps (0.62 at 400), 1e-3 0.54 at 400. Below TRAINED_AT: docs/recipes.md, "
            "\"URL: uncertainties that learn\"")),
        "hib": Setting(steps=600, hparams={"different": "hib"}, why=(
            "eq. 5 as URL writes it (+log p for different-class pairs) did not learn in any of 4 settings "
            "(t, b, kappa_init in {16, 0, 16}, {16, 0, 100}, {8, -4, 100}, {16, 8, 100}: R@1 0.17-0.26): log p is "
            "concave, so pushing its mean down favours a few antipodal clusters over separated classes; HIB's own "
            "-log(1 - p) (which URL replaced): R@1 0.72 at 400 steps (kappa = softplus, kappa_init 100), so 600 "
            "steps for a margin. With kappa = 1/u the default kappa_init 16: R@1 0.88 and 0.86, upstream "
            "R-AUROC 0.58 and 0.55 on 2000 held-out training images (seeds 0, 1), against 0.49 at kappa_init 100 "
            "and 0.46 at 1000 (seed 0)")),
    }),
}


def method_registry() -> dict:
    """name -> method class (`hedgekit.methods.upstream.METHODS`), in the paper's order; every method file of
    `hedgekit.methods` registers itself when imported, so all of them are imported first."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(hedgekit.methods.__path__):
        importlib.import_module(f"hedgekit.methods.{info.name}")
    order = list(DISPLAY)
    return dict(sorted(METHODS.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def check_methods(methods) -> list[str]:
    """A list of known method names from a list or a comma-separated string; InputError names the known ones."""
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    methods = list(dict.fromkeys(methods))
    known = method_registry()
    unknown = [m for m in methods if m not in known]
    if not methods or unknown:
        raise InputError(f"unknown method(s) {unknown or methods!r}; choose from {', '.join(known)}")
    return methods


def resolve_budget(budget) -> Budget:
    """The `Budget` named ``budget`` (a key of `BUDGETS`, or ``<key>-lr<factor>x``: a sweep budget of
    `sweep_budgets`), or ``budget`` itself if it is one."""
    if isinstance(budget, Budget):
        return budget
    base, _, factor = budget.rpartition("-lr") if isinstance(budget, str) else ("", "", "")
    if base in BUDGETS and factor.endswith("x"):
        try:
            f = float(factor[:-1])
        except ValueError:
            f = math.nan
        sweep = sweep_budgets(base, (f,)) if math.isfinite(f) and f > 0 else []
        if sweep and sweep[0].name == budget:
            return sweep[0]
    if budget not in BUDGETS:
        raise InputError(f"budget must be one of {', '.join(BUDGETS)}, or a learning-rate sweep of one named as "
                         f"`sweep_budgets` names it (e.g. converged-lr0.5x); got {budget!r}")
    return BUDGETS[budget]


@lru_cache(maxsize=1)
def _train_data():
    train = load_ndigit(2, "train")
    classes = np.unique(train.labels)
    index = np.searchsorted(classes, train.labels)
    return torch.from_numpy(train.images).unsqueeze(1), torch.from_numpy(index), classes


@lru_cache(maxsize=4)
def eval_sets(per_class: int) -> dict:
    """The three evaluation sets with ``per_class`` images per class: ``{"up", "unseen", "fashion"}`` -> (x, y)."""
    out = {name: per_class_subset(load_ndigit(2, split), per_class, seed=0).tensors()
           for name, split in (("up", "test_seen"), ("unseen", "test_unseen"))}
    out["fashion"] = protocol.fashion_pairs(per_class, seed=0)
    return out


def build_model(method: str, seed: int, n_classes: int = 70, **hparams) -> UpstreamModel:
    """LeNetBody (28x56 input, 120 features) + the method's head, initialised with ``seed``."""
    torch.manual_seed(seed)
    backbone = LeNetBody(1, 28, 56)
    head = method_registry()[method](backbone.out_features, n_classes, embed_dim=EMBED_DIM, **hparams)
    return UpstreamModel(backbone, head)


def build_run_model(method: str, seed: int, budget: Budget) -> UpstreamModel:
    """The untrained, seeded model of a run (`hedgekit.zoo.URLSpec.build`): `build_model` with the training
    classes' count and the budget's hyper-parameters for ``method``."""
    return build_model(method, seed, n_classes=len(_train_data()[2]), **budget.hparams(method))


def cache_root() -> Path:
    """``<data cache>/url``: the runs (``<budget>/<method>-s<seed>.json``) and the leaderboards."""
    return data_dir() / "url"


# the modules that train and evaluate every run (what `train_run` and `build_model` call besides the method's head):
# the upstream trainer and `predict`, the zero-shot protocol, the backbone, the data (load_ndigit,
# per_class_subset, random_occlusion) and the unsupervised heads' views; their import closures go into every run's
# code hash (`run_config`)
RUN_MODULES = ("hedgekit.training.upstream", "hedgekit.papers.url.protocol", "hedgekit.nets.backbones",
               "hedgekit.data", "hedgekit.data.ndigit", "hedgekit.papers.url.views")


def _code_files(method: str) -> dict[str, str]:
    """The files hashed into ``method``'s runs (see `run_config`): module name -> source file."""
    import inspect

    registry = method_registry()
    module = inspect.getmodule(registry[method])
    own = module_closure([module.__name__]) if module is not None else {}
    # hedgekit.methods' __init__ (imported by training.fit) imports every method so that they register; the other
    # methods' own modules do not run in this method's runs, so they are left out (unless this method imports them)
    others = {getattr(inspect.getmodule(cls), "__name__", None) for cls in registry.values()} - set(own)
    return dict(sorted({**module_closure(RUN_MODULES, skip=others), **own}.items()))


def run_config(budget: Budget, method: str) -> dict:
    """What a cached run must match, else it is retrained: the budget (training config, evaluation images per
    class, embedding dimension) and ``code``, a hash of the code the run executes.

    ``code`` is the first 12 hex digits of the sha256 over the method class's qualified name, then the module name
    and source text of every file of `_code_files`, in sorted module-name order: the method's own module plus
    every hedgekit module it imports, transitively (`module_closure`: e.g. nivmf's closure holds methods/vmf.py,
    methods/elk.py and methods/upstream.py), united with the closures of `RUN_MODULES`, the modules that train
    and evaluate every run (the upstream trainer, the protocol, the backbone, the data), minus the other methods'
    own modules. So an edit to shared code that a run executes (a base class, the trainer, a metric) makes the
    cached run stale, not only an edit to the method's file. This module itself is not hashed: what it sets for a
    run (the budget, ``EMBED_DIM``) is in the config explicitly, and its leaderboard and app helpers do not change
    results. Comments and docstrings count as edits too (the text is hashed, not the compiled code).
    Records written before this key existed (``method_source``: the method's file only) no longer match: stale.
    This is what `hedgekit.zoo.is_stale` compares for a URL run (`hedgekit.zoo.URLSpec.run_config`).
    """
    import hashlib

    cls = method_registry()[method]
    h = hashlib.sha256(f"{cls.__module__}.{cls.__qualname__}\0".encode())  # no files for a class defined in __main__
    for name, path in _code_files(method).items():
        h.update(f"{name}\0{code_hash.source_text(path)}\0".encode())
    out = {"train": asdict(budget.train_config(method)), "eval_per_class": budget.eval_per_class,
           "embed_dim": EMBED_DIM, "code": h.hexdigest()[:12]}
    hparams = budget.hparams(method)
    if not getattr(cls, "supervised", True):
        out["views"] = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(TWO_VIEWS).items()}  # as JSON
    return {**out, "hparams": hparams} if hparams else out


# the unsupervised heads' views (`hedgekit.papers.url.views`; the search: docs/recipes.md, "URL:
# uncertainties that learn")
TWO_VIEWS = TwoViews()


def augmentation(method: str, cfg: UpstreamConfig):
    """The training augmentation ``fn(x, rng) -> x`` of ``method``: the per-digit occlusion of
    ``cfg.occlusion_p`` (`RandomOcclusion`, on the stored uint8 batch on the device); for an unsupervised head
    (two views, App. B.2) then `TWO_VIEWS` (a random resized crop, a small turn and shear, thicker or thinner
    strokes and an occlusion box), drawn afresh for each view. `fit_upstream` converts the result to float."""
    occlude = random_occlusion(cfg.occlusion_p)
    if getattr(method_registry()[method], "supervised", True):
        return occlude
    return lambda xb, rng: TWO_VIEWS(occlude(xb, rng), rng)


def _diverged_step(exc: FloatingPointError) -> int | None:
    """The step of a trainer's FloatingPointError: its ``step`` if it has one, else the N of the "training
    diverged at step N" that `hedgekit.training.loop.optimise` writes; None if neither."""
    step = getattr(exc, "step", None)
    if step is None:
        found = re.search(r"\bat step (\d+)", str(exc))
        step = int(found.group(1)) if found else None
    return step


def train_run(spec, progress: bool = False, device: str = "cpu") -> tuple[UpstreamModel, dict]:
    """Train the run ``spec`` (a `hedgekit.zoo.URLSpec`) names (`build_model`, `fit_upstream` with the budget's
    config for the method and its `augmentation`) on ``device`` and evaluate it by the zero-shot protocol
    (`protocol.evaluate` on `eval_sets`): the URL family's trainer of `hedgekit.zoo.load_or_train`. Returns (model
    on the CPU, record without ``source``; `hedgekit.papers.url.benchmark.run_one` lists its fields). Its
    ``history`` holds, at every log step, the loss and `hedgekit.training.upstream.watch_row` of the upstream test
    images (the spread of u(x) and kappa(x), R@1 and R-AUROC there: how u(x) learned; measured,
    never used to choose anything). A training that diverges (FloatingPointError from the loop) or a model whose
    embedding or u(x) is not finite at evaluation
    (after the last step, ``steps - 1``) raises `DivergedError` with the step."""
    method, seed, b = spec.method, spec.seed, spec.run_budget()
    dev = resolve_device(device)
    x, y, classes = _train_data()
    cpu0, t0 = time.process_time(), time.perf_counter()
    model = build_model(method, seed, n_classes=len(classes), **b.hparams(method))
    cfg, sets = b.train_config(method), eval_sets(b.eval_per_class)
    try:
        hist = fit_upstream(model, x, y, cfg, seed=seed, augment=augmentation(method, cfg), progress=progress,
                            desc=f"{label(method)} s{seed}", device=dev, watch=sets["up"])
    except FloatingPointError as exc:
        raise DivergedError(f"{label(method)} seed {seed}: {exc}", _diverged_step(exc)) from exc
    train_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        metrics = protocol.evaluate(lambda xs: predict(model, xs), sets,
                                    {int(c): i for i, c in enumerate(classes)}, crop_seed=seed)
    except FloatingPointError as exc:
        raise DivergedError(f"{label(method)} seed {seed}: {exc} after the last training step "
                            f"({cfg.steps - 1})", cfg.steps - 1) from exc
    rec = {"method": method, "seed": seed, "budget": b.name, "config": run_config(b, method), **metrics,
           "train_seconds": train_seconds, "eval_seconds": time.perf_counter() - t1,
           "cpu_seconds": time.process_time() - cpu0, "threads": torch.get_num_threads(),
           "device": device_description(dev), "versions": versions(), "data": mnist_source().record(),
           "history": [{k: v for k, v in r.items() if k != "lr"} for r in hist.rows]}
    return model.cpu(), rec


LR_SWEEP = (0.5, 2.0)  # learning-rate factors of `sweep_budgets`: the one hyper-parameter every method has


def sweep_budgets(base="converged", factors=LR_SWEEP) -> list[Budget]:
    """Budgets like ``base`` with every method's learning rate times each factor, named ``<base>-lr<factor>x``
    (their own cache folders): with ``base`` itself, a small hyper-parameter sweep to pool correlations over, the
    way the paper's Fig. 4 pools "all hyperparameters, including non-optimal ones"."""
    b = resolve_budget(base)
    out = []
    for f in factors:
        if not f > 0:
            raise InputError(f"learning-rate factors must be > 0; got {f!r}")
        settings = {m: replace(b.settings.get(m, Setting()), lr=b.train_config(m).lr * f,
                               why=f"{b.name} x {f:g} learning rate (sweep)") for m in method_registry()}
        out.append(replace(b, name=f"{b.name}-lr{f:g}x", settings=settings))
    return out


register_url_runs(sys.modules[__name__])  # the store's URL runs are this module's (`hedgekit.zoo.url_runs`)
