"""The URL benchmark at kit scale: train every method upstream, evaluate zero-shot downstream, rank them.

Kirchhof et al. 2023 (Sec. 3-4) pretrain each of 11 methods on ImageNet and transfer them zero-shot to
CUB / CARS / SOP. Here (see `hedgekit.papers.url.protocol` for the data and metrics):

* one backbone for all methods, `LeNetBody` on 28x56 two-digit images (120 features), with the method's
  head (`hedgekit.methods.upstream.build_method`, embedding dimension 16) on top, trained jointly;
* one budget for all methods (`BUDGETS`): the same steps, batch, learning rate and schedule;
* every (method, seed, budget) run is a model of the one model store, `hedgekit.zoo`: a `hedgekit.zoo.URLSpec`
  names it (``url-ce-converged-s0``), `hedgekit.zoo.load_or_train` trains it (`train_run`) or loads it, and the
  zoo keeps it (`hedgekit.zoo.URL_FORMAT`: the JSON record of metrics, seconds and config with the weights beside
  it, under ``cache_path("url", budget)``, the record holding the weights file's SHA-256 so that the two are one
  unit: a pair that does not match, e.g. after an interrupt between the two writes, is retrained); a cached run
  whose config differs from the budget, or whose code hash differs (the method's module, the hedgekit modules it
  imports and the trainer / evaluation code: `run_config`), is stale (`hedgekit.zoo.is_stale`) and retrained, so
  `run_benchmark` resumes where it stopped and a second call trains nothing;
* a run whose training diverges, or whose embedding or u(x) is NaN or inf at evaluation, is one row that says
  "diverged at step N (seed s)" (`run_one`; issue 45 item 7): the other runs are trained, ranked and written, and
  the diverged run is not cached (the next call trains it again);
* `leaderboard` (`hedgekit.papers.url.leaderboard`): mean ± std (sample std, ddof = 1) over seeds per method;
  `write_leaderboard` writes it as CSV and Markdown under the git-ignored data cache.

This module defines what a run is for the store: `hedgekit.zoo.url_runs` imports it where a `URLSpec` is first
checked or used and calls `check_methods`, `resolve_budget`, `run_config`, `build_run_model`, `cache_root` and
`train_run` by name, so that what a test replaces here is what the store uses (issue 47: an explicit import, not a
registry this module fills when imported). The code key's module closure: `hedgekit.papers.url.code_hash`.
"""
from __future__ import annotations

import math
import os
import re
import time
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from hedgekit.checks import (MAX_THREADS, atomic_write, check_count, check_seed, check_writable, count_arg, device_arg,
                             resolve_device)
from hedgekit.hardware import device_description
from hedgekit.errors import CheckpointError, DivergedError, InputError
from hedgekit.papers.url import code_hash, protocol
from hedgekit.papers.url.code_hash import module_closure
from hedgekit.papers.url.leaderboard import (LABELS, MAY_BE_NAN, METRICS, NOT_TRAINED, TRAINED, TRAINED_AT, label,
                                             leaderboard, leaderboard_markdown, method_status, ranked, run_status,
                                             seed_rank_stability, trained_runs)
from hedgekit.papers.url.numbers import DISPLAY
from hedgekit.training.upstream import UpstreamConfig, UpstreamModel, fit_upstream, predict
from hedgekit.zoo import (URLSpec, cache_checkpoint_path, find_checkpoint, is_stale, load_or_train, load_url_run,
                          url_record)

__all__ = ["Setting", "Budget", "BUDGETS", "TRAINED_AT", "MAY_BE_NAN", "TRAINED", "NOT_TRAINED", "run_status",
           "method_status", "trained_runs", "ranked", "seed_rank_stability", "augmentation", "settings_table",
           "LR_SWEEP", "sweep_budgets", "sweep_runs", "METRICS", "method_registry", "check_methods", "eval_sets",
           "build_model", "cache_root", "run_spec", "run_path", "RUN_MODULES", "module_closure", "run_one",
           "diverged_record", "train_run", "load_run_model", "run_benchmark", "cached_runs", "uncertainty_extremes",
           "leaderboard", "leaderboard_markdown", "write_leaderboard", "add_subcommand", "LABELS", "label",
           "resolve_budget", "run_config", "build_run_model"]

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
    # (CE: upstream accuracy 0.75 at 200 steps, issue 35; R@1 0.82 and accuracy 0.90 at 400) and the paper
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
            "(200 steps: R@1 0.20); kappa_init 100: R@1 0.88 at 200 steps")),
        "mcinfonce_2v": Setting(hparams={"kappa_init": 100.0}, why=(
            "as mcinfonce (the same head and sampler); 400 steps: R@1 0.36, so it does not reach TRAINED_AT: two "
            "views that differ by occlusion and a 2-pixel shift do not teach 2-digit classes in this budget")),
        "infonce_2v": Setting(hparams={"t": 8.0}, why=(
            "App. B.2 searches t in [8, 64]; 400 steps: R@1 0.38 at t = 8, 0.33 at the default 16 (not trained "
            "either way, see mcinfonce_2v)")),
        "hib": Setting(steps=600, hparams={"kappa_init": 100.0, "different": "hib"}, why=(
            "eq. 5 as URL writes it (+log p for different-class pairs) did not learn in any of 4 settings "
            "(t, b, kappa_init in {16, 0, 16}, {16, 0, 100}, {8, -4, 100}, {16, 8, 100}: R@1 0.17-0.26): log p is "
            "concave, so pushing its mean down favours a few antipodal clusters over separated classes; HIB's own "
            "-log(1 - p) (which URL replaced) with kappa_init 100 as for MCInfoNCE: R@1 0.72 at 400 steps, so "
            "600 steps for a margin")),
    }),
}

def method_registry() -> dict:
    """name -> method class (`hedgekit.methods.upstream.METHODS`), in the paper's order; every method file of
    `hedgekit.methods` registers itself when imported, so all of them are imported first."""
    import importlib
    import pkgutil

    import hedgekit.methods
    from hedgekit.methods.upstream import METHODS

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
    from hedgekit.data import load_ndigit

    train = load_ndigit(2, "train")
    classes = np.unique(train.labels)
    index = np.searchsorted(classes, train.labels)
    return torch.from_numpy(train.images).unsqueeze(1), torch.from_numpy(index), classes


@lru_cache(maxsize=4)
def eval_sets(per_class: int) -> dict:
    """The three evaluation sets with ``per_class`` images per class: ``{"up", "unseen", "fashion"}`` -> (x, y)."""
    from hedgekit.data import load_ndigit
    from hedgekit.data.ndigit import per_class_subset

    out = {name: per_class_subset(load_ndigit(2, split), per_class, seed=0).tensors()
           for name, split in (("up", "test_seen"), ("unseen", "test_unseen"))}
    out["fashion"] = protocol.fashion_pairs(per_class, seed=0)
    return out


def build_model(method: str, seed: int, n_classes: int = 70, **hparams) -> UpstreamModel:
    """LeNetBody (28x56 input, 120 features) + the method's head, initialised with ``seed``."""
    from hedgekit.nets.backbones import LeNetBody

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
    from hedgekit.paths import data_dir

    return data_dir() / "url"


def run_spec(method: str, seed: int, budget) -> URLSpec:
    """The zoo's spec of a run (`hedgekit.zoo.URLSpec`), by the budget's name when that names this very budget (a
    key of `BUDGETS` or a sweep of one), else holding the ad-hoc `Budget` itself (its runs share the folder of its
    name, and a run of the other budget there is stale for it, and the other way round)."""
    b = resolve_budget(budget)
    try:
        named = resolve_budget(b.name) == b
    except InputError:  # a name no budget has
        named = False
    return URLSpec(method, b.name if named else b, check_seed(seed, "seed"))


def run_path(method: str, seed: int, budget) -> Path:
    """Where the run's JSON record lives (`hedgekit.zoo.cache_checkpoint_path`; its weights: the same path with
    ``.pt``); the folder is created."""
    path = cache_checkpoint_path(run_spec(method, seed, budget), None)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# the modules that train and evaluate every run (what `run_one` and `build_model` call besides the method's head):
# the upstream trainer and `predict`, the zero-shot protocol, the backbone, and the data (load_ndigit,
# per_class_subset, random_occlusion); their import closures go into every run's code hash (`run_config`)
RUN_MODULES = ("hedgekit.training.upstream", "hedgekit.papers.url.protocol", "hedgekit.nets.backbones",
               "hedgekit.data", "hedgekit.data.ndigit")


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
        out["two_view_shift"] = TWO_VIEW_SHIFT
    return {**out, "hparams": hparams} if hparams else out


TWO_VIEW_SHIFT = 2  # pixels: the second augmentation of the unsupervised heads' views (kit-scale random crop)


def augmentation(method: str, cfg: UpstreamConfig):
    """The training augmentation ``fn(x, rng) -> x`` of ``method``: the per-digit occlusion of
    ``cfg.occlusion_p`` (`RandomOcclusion`, on the stored uint8 batch on the device); for an unsupervised head
    (two views, App. B.2) then a random shift of up to `TWO_VIEW_SHIFT` pixels, so the two views of an image
    differ in occlusion and position. `fit_upstream` converts the result to float."""
    from hedgekit.data import random_occlusion
    from hedgekit.training.upstream import random_shift

    occlude = random_occlusion(cfg.occlusion_p)
    if getattr(method_registry()[method], "supervised", True):
        return occlude
    shift = random_shift(TWO_VIEW_SHIFT)
    return lambda xb, rng: shift(occlude(xb, rng), rng)


def run_one(method: str, seed: int, budget="fast", retrain: bool = False, progress: bool = False,
            device: str = "cpu") -> dict:
    """Train ``method`` upstream with ``seed`` on ``device`` and evaluate it (`train_run`), or read the cached
    result (a run trained on another device serves all the same, as a checkpoint does): the run is the zoo's
    model `run_spec`, found by `hedgekit.zoo.find_checkpoint` or trained and saved by `hedgekit.zoo.load_or_train`.

    Returns the record: ``method, seed, budget, config, source ("cache" / "trained now")``, every metric of
    `protocol.evaluate`, ``train_seconds`` (wall), ``cpu_seconds`` (process CPU time of training and
    evaluation, all threads), ``eval_seconds``, ``device`` (`hedgekit.hardware.device_description`), the loss
    history and ``weights_sha256``. A run that diverges (`train_run` raises `DivergedError`) is not saved; its
    record is `diverged_record` (source "diverged", every metric NaN), so the other runs go on.
    """
    spec = run_spec(method, seed, budget)
    path = None if retrain else find_checkpoint(spec)
    if path is not None:  # the record is all a cached run needs: its weights are not loaded
        return {**url_record(path), "source": "cache"}
    try:
        _, rec = load_or_train(spec, progress=progress, device=device, retrain=True)
    except DivergedError as exc:
        return diverged_record(method, seed, spec.run_budget().name, exc)
    return {k: v for k, v in rec.items() if k != "path"}


def diverged_record(method: str, seed: int, budget: str, exc: DivergedError) -> dict:
    """The record of a run that diverged (issue 45 item 7): ``source`` "diverged", ``diverged_at`` (the step),
    ``failure`` ("diverged at step N (seed s)", the leaderboard's words), ``error`` (what was seen) and every
    metric of `METRICS` NaN, so that `run_status` never counts it as trained."""
    at = f"at step {exc.step}" if exc.step is not None else "(step unknown)"
    return {"method": method, "seed": seed, "budget": budget, "source": "diverged", **dict.fromkeys(METRICS, math.nan),
            "diverged_at": math.nan if exc.step is None else exc.step,
            "failure": f"diverged {at} (seed {seed})", "error": str(exc)}


def _diverged_step(exc: FloatingPointError) -> int | None:
    """The step of a trainer's FloatingPointError: its ``step`` if it has one, else the N of the "training
    diverged at step N" that `hedgekit.training.loop.optimise` writes; None if neither."""
    step = getattr(exc, "step", None)
    if step is None:
        found = re.search(r"\bat step (\d+)", str(exc))
        step = int(found.group(1)) if found else None
    return step


def train_run(spec: URLSpec, progress: bool = False, device: str = "cpu") -> tuple[UpstreamModel, dict]:
    """Train the run ``spec`` names (`build_model`, `fit_upstream` with the budget's config for the method and its
    `augmentation`) on ``device`` and evaluate it by the zero-shot protocol (`protocol.evaluate` on `eval_sets`):
    the URL family's trainer of `hedgekit.zoo.load_or_train`. Returns (model on the CPU, record without
    ``source``; `run_one` lists its fields). A training that diverges (FloatingPointError from the loop) or a
    model whose embedding or u(x) is not finite at evaluation (after the last step, ``steps - 1``) raises
    `DivergedError` with the step."""
    method, seed, b = spec.method, spec.seed, spec.run_budget()
    dev = resolve_device(device)
    x, y, classes = _train_data()
    cpu0, t0 = time.process_time(), time.perf_counter()
    model = build_model(method, seed, n_classes=len(classes), **b.hparams(method))
    cfg = b.train_config(method)
    try:
        hist = fit_upstream(model, x, y, cfg, seed=seed, augment=augmentation(method, cfg), progress=progress,
                            desc=f"{label(method)} s{seed}", device=dev)
    except FloatingPointError as exc:
        raise DivergedError(f"{label(method)} seed {seed}: {exc}", _diverged_step(exc)) from exc
    train_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        metrics = protocol.evaluate(lambda xs: predict(model, xs), eval_sets(b.eval_per_class),
                                    {int(c): i for i, c in enumerate(classes)}, crop_seed=seed)
    except FloatingPointError as exc:
        raise DivergedError(f"{label(method)} seed {seed}: {exc} after the last training step "
                            f"({cfg.steps - 1})", cfg.steps - 1) from exc
    rec = {"method": method, "seed": seed, "budget": b.name, "config": run_config(b, method), **metrics,
           "train_seconds": train_seconds, "eval_seconds": time.perf_counter() - t1,
           "cpu_seconds": time.process_time() - cpu0, "threads": torch.get_num_threads(),
           "device": device_description(dev), "history": [{"step": r["step"], "loss": r["loss"]} for r in hist.rows]}
    return model.cpu(), rec


def load_run_model(method: str, seed: int, budget="fast") -> UpstreamModel:
    """The trained model of a cached run (InputError with the command that trains it if there is none or it is
    stale, CheckpointError with the one that retrains it if its weights do not load: `hedgekit.zoo.load_url_run`)."""
    b = resolve_budget(budget)
    spec = run_spec(method, seed, b)
    record = cache_checkpoint_path(spec, None)
    rec = url_record(record)
    if not record.with_suffix(".pt").is_file() or rec is None or is_stale(record, spec):
        raise InputError(f"no {b.name} run of {method} with seed {seed} yet; train it with "
                         f"`python -m hedgekit url-benchmark --methods {method} --seeds {seed + 1}"
                         f"{'' if b.name == 'paper' else ' --budget ' + b.name}`")
    try:
        model, _ = load_url_run(record, spec)
    except CheckpointError as exc:
        raise CheckpointError(f"{exc}; retrain with `python -m hedgekit url-benchmark --methods {method} --seeds "
                              f"{seed + 1} --retrain{'' if b.name == 'paper' else ' --budget ' + b.name}`") from exc
    return model


def run_benchmark(methods, seeds=3, budget="fast", retrain: bool = False, progress: bool = True,
                  device: str = "cpu"):
    """Every (method, seed) run, cached ones read back, missing ones trained on ``device``: a DataFrame with one
    row per run.

    ``seeds``: a number n (seeds 0..n-1) or a list of seeds. A progress bar counts runs.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    methods = check_methods(methods)
    b = resolve_budget(budget)
    seed_list = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else [int(s) for s in seeds]
    if not seed_list or min(seed_list) < 0:
        raise InputError(f"seeds must be a positive number or a list of non-negative seeds; got {seeds!r}")
    jobs = [(m, s) for m in methods for s in seed_list]
    rows = []
    bar = tqdm(jobs, desc=f"URL benchmark ({b.name})", disable=not progress)
    for m, s in bar:
        bar.set_postfix_str(f"{m} s{s}")
        rows.append(run_one(m, s, b, retrain=retrain, device=device))
    return pd.DataFrame([{k: v for k, v in r.items() if k not in ("config", "history")} for r in rows])


def cached_runs(budget="fast"):
    """Every complete, up-to-date cached run of ``budget`` (nothing is trained; what `hedgekit.zoo.find_checkpoint`
    finds): a DataFrame like `run_benchmark`'s, one row per run sorted by method and seed, empty when there are
    none. Runs of unknown methods are skipped."""
    import pandas as pd

    b = resolve_budget(budget)
    folder = cache_root() / b.name
    known = method_registry()
    rows = []
    for path in sorted(folder.glob("*-s*.json")) if folder.is_dir() else []:
        method, _, seed = path.stem.rpartition("-s")
        if method not in known or not seed.isdigit():
            continue
        found = find_checkpoint(run_spec(method, int(seed), b))
        rec = url_record(found) if found is not None else None
        if rec is not None:
            rows.append({k: v for k, v in rec.items() if k not in ("config", "history")} | {"source": "cache"})
    return pd.DataFrame(rows)


def uncertainty_extremes(method: str, seed: int = 0, budget="fast", k: int = 8) -> dict:
    """The ``k`` downstream images (unseen 2-digit classes, the run's own evaluation subset `eval_sets`) that the
    cached run of ``method`` is most and least uncertain about (Kirchhof et al. 2023, Fig. 1 style).

    Returns ``{"most": ..., "least": ...}``, each ``{"images": (k, 28, 56) float in [0, 1], "labels": (k,),
    "u": (k,)}``, most uncertain first in "most" and least uncertain first in "least", plus ``"n"``: the images
    scored. InputError (with the command that trains it) when the run is not cached.
    """
    k = check_count(k, "k", 1)
    model = load_run_model(method, seed, budget)
    x, y = eval_sets(resolve_budget(budget).eval_per_class)["unseen"]
    u = predict(model, x)["uncertainty"]
    k = min(k, len(u))

    def pick(idx):
        return {"images": x[idx, 0].numpy(), "labels": np.asarray(y)[idx], "u": u[idx]}

    return {"most": pick(np.argsort(-u, kind="stable")[:k]), "least": pick(np.argsort(u, kind="stable")[:k]),
            "n": len(u)}


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


def sweep_runs(runs, seed: int = 0, factors=LR_SWEEP, progress: bool = False, device: str = "cpu"):
    """``runs``' (one budget's) runs of ``seed`` pooled with the same seed trained at every budget of
    `sweep_budgets` (cached like any run): one run per (method, setting), the paper's way of pooling its Fig. 4
    correlations over hyper-parameters rather than seeds. Methods that did not train in ``runs`` (`method_status`)
    are not swept; a sweep setting that does not train is left out later by `trained_runs` (per method and budget).
    Missing runs train on ``device``."""
    import pandas as pd

    if runs.empty or runs["budget"].nunique() != 1:
        raise InputError("sweep_runs needs the runs of one budget")
    base = resolve_budget(runs["budget"].iloc[0])
    methods = [m for m, st in method_status(runs).items() if st == TRAINED]
    own = runs[runs["seed"] == seed]
    if not methods or own.empty:
        raise InputError(f"no trained method has a run with seed {seed} to sweep")
    swept = [run_benchmark(methods, [seed], b, progress=progress, device=device) for b in sweep_budgets(base, factors)]
    return pd.concat([own[own["method"].isin(methods)], *swept], ignore_index=True)


def settings_table(budget="converged"):
    """The per-method settings of ``budget`` as a DataFrame, one row per method of `method_registry` (label, steps,
    learning rate, hyper-parameters, and why; "budget default" where the method has no `Setting`)."""
    import pandas as pd

    b = resolve_budget(budget)
    rows = []
    for m in method_registry():
        cfg, s = b.train_config(m), b.settings.get(m)
        rows.append({"method": label(m), "steps": cfg.steps, "lr": cfg.lr,
                     "hyper-parameters": ", ".join(f"{k}={v}" for k, v in b.hparams(m).items()) or "defaults",
                     "why": s.why if s is not None else "budget default"})
    return pd.DataFrame(rows).set_index("method")


def write_leaderboard(board, budget="fast", folder: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """Write ``leaderboard-<budget>.csv`` and ``.md`` into ``folder`` (default `cache_root`, git-ignored)."""
    name = resolve_budget(budget).name
    folder = Path(folder) if folder is not None else cache_root()
    folder.mkdir(parents=True, exist_ok=True)
    csv, md = folder / f"leaderboard-{name}.csv", folder / f"leaderboard-{name}.md"
    with atomic_write(csv) as tmp:
        board.to_csv(tmp)
    with atomic_write(md) as tmp:
        tmp.write_text(f"# URL benchmark at kit scale ({name} budget)\n\n{leaderboard_markdown(board)}\n")
    return csv, md


MAX_SEEDS = 1000  # seeds per method: 3 in the paper's protocol; 1000 x 11 methods would train for days


def _seeds_arg(text: str) -> int:
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds takes a number of seeds (e.g. 3); got {text!r}") from None
    if not 1 <= n <= MAX_SEEDS:
        raise argparse.ArgumentTypeError(f"--seeds must be in 1..{MAX_SEEDS}; got {n}")
    return n


def cmd_url_benchmark(a) -> int:
    """``python -m hedgekit url-benchmark``: run (or read back) every run, print and write the leaderboard. A run
    that diverged is its method's status in the leaderboard and one line below it; the others are ranked and the
    command exits 0 (issue 45 item 7). The leaderboard's folder is checked writable before anything trains."""
    torch.set_num_threads(a.threads)
    budget = "fast" if a.fast else a.budget
    methods = check_methods(a.methods or list(method_registry()))
    folder = Path(a.out) if a.out is not None else cache_root()
    check_writable(folder / f"leaderboard-{resolve_budget(budget).name}.md")  # --out <a file>: refused before training
    runs = run_benchmark(methods, a.seeds, budget, retrain=a.retrain, progress=not a.quiet, device=a.device)
    board = leaderboard(runs)
    csv, md = write_leaderboard(board, budget, a.out)
    trained, diverged = (int((runs["source"] == source).sum()) for source in ("trained now", "diverged"))
    print(f"URL benchmark ({budget} budget): {len(runs)} runs, {trained} trained now, "
          f"{len(runs) - trained - diverged} from the cache ({run_path(methods[0], 0, budget).parent})"
          + (f", {diverged} diverged (not cached: trained again next time)" if diverged else "") + "\n")
    print(leaderboard_markdown(board))
    if diverged:  # what each diverged run saw, one line each
        print("\n" + "\n".join(runs.loc[runs["source"] == "diverged", "error"]))
    print(f"\nleaderboard written to {csv} and {md}")
    return 0


def add_subcommand(sub) -> None:
    """Register ``url-benchmark`` on the CLI's subparsers (`hedgekit.cli.build_parser`)."""
    p = sub.add_parser("url-benchmark", help="URL benchmark at kit scale: train methods upstream, rank them "
                                             "zero-shot downstream (cached, resumable)")
    p.add_argument("--methods", default="", help=f"comma-separated, from {', '.join(DISPLAY)} (default: all)")
    p.add_argument("--seeds", type=_seeds_arg, default=3, help="number of seeds per method (0..n-1), default 3")
    p.add_argument("--budget", choices=list(BUDGETS), default="paper",
                   help="fast (seconds per run), paper (one setting for all) or converged (per-method settings)")
    p.add_argument("--fast", action="store_true", help="the fast budget (seconds per run): --budget fast")
    p.add_argument("--retrain", action="store_true", help="train even when a cached run exists")
    p.add_argument("--out", default=None, help="folder for leaderboard-<budget>.csv/.md (default: the data cache)")
    p.add_argument("--threads", type=count_arg(1, MAX_THREADS), default=1,
                   help="torch threads (default 1: the cores are shared)")
    p.add_argument("--device", type=device_arg, default="cpu",
                   help="where missing runs train: cpu (default), cuda, mps or auto")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(fn=cmd_url_benchmark)
