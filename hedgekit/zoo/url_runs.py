"""The runs of the URL benchmark (Kirchhof et al. 2023 at kit scale) as models of the store: their spec, files,
staleness and load-or-train.

What a run is (its methods, budgets, config, model, folder and trainer) is defined by the URL paper,
`hedgekit.papers.url.recipe`, which hands itself to the store when it is imported (`register_url_runs`): the
store imports no paper (tests/test_imports.py), the paper builds on the store. A `URLSpec` is checked and used
through what was registered (`URL_RUN_FUNCTIONS`, looked up at each call, so that what a test replaces on the
recipe is what the store uses); before the URL paper is imported, building one is refused with an InputError that
says what to import. The benchmark (`hedgekit.papers.url.benchmark`), which runs the runs through the store, imports
the recipe, and so does every entry point that builds URL runs.

A `URLSpec` names a run (``url-ce-converged-s0``); the store's `find_checkpoint`, `is_stale` and `load_or_train`
(`hedgekit.zoo.store`) hand a URL run to `find_url_run`, `url_run_is_stale` and `load_or_train_url` here.

A URL run is two files (`url_run_path`): its record ``<method>-s<seed>.json`` (the metrics, config, seconds,
device and loss history the benchmark reports, and ``weights_sha256``) and its weights beside it, ``.pt``
(``{"state_dict", "meta"}``). The record names its weights' SHA-256, so the two are one unit: a pair of which one
file was rewritten or lost (an interrupt between the two writes) is not a run. Every URL run cached since the
benchmark's runs held their weights is in this format; it is read where it is, nothing is migrated.
"""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Mapping

import torch

from hedgekit.checks import atomic_write, check_seed, check_writable, resolve_device
from hedgekit.errors import CheckpointError, InputError
from hedgekit.training import distributed
from hedgekit.zoo.names import URL_KIND, url_run_name

URL_FORMAT = "hedgekit-url-run: <method>-s<seed>.json record with weights_sha256 + .pt weights"


# What the definition of the URL runs provides (`register_url_runs`): the names the store calls on it
URL_RUN_FUNCTIONS = ("check_methods", "resolve_budget", "run_config", "build_run_model", "cache_root", "train_run")
_definition = None  # what `register_url_runs` was handed; None until the URL paper is imported


def register_url_runs(definition) -> None:
    """Tell the store what a URL run is: ``definition`` (a module, or any object) has `URL_RUN_FUNCTIONS`:
    ``check_methods(methods)``, ``resolve_budget(budget)``, ``run_config(budget, method)``,
    ``build_run_model(method, seed, budget)``, ``cache_root()`` and ``train_run(spec, progress=, device=)``. The URL
    paper's `hedgekit.papers.url.recipe` calls it when it is imported; a later call replaces the earlier one.
    InputError naming what ``definition`` lacks."""
    global _definition
    missing = [name for name in URL_RUN_FUNCTIONS if not callable(getattr(definition, name, None))]
    if missing:
        raise InputError(f"a definition of URL runs needs {', '.join(URL_RUN_FUNCTIONS)}; "
                         f"{definition!r} lacks {', '.join(missing)}")
    _definition = definition


def _recipe():
    """What `register_url_runs` was handed; InputError saying what to import when nothing was."""
    if _definition is None:
        raise InputError("the store knows URL runs only once the URL paper has defined them: import "
                         "hedgekit.papers.url.recipe (or hedgekit.papers.url.benchmark) first")
    return _definition


@dataclass(frozen=True)
class URLSpec:
    """One run of the URL benchmark (Kirchhof et al. 2023 at kit scale, `hedgekit.papers.url.recipe`, which
    defines them): the upstream ``method`` trained with ``seed`` in ``budget`` (a budget name:
    ``paper``, ``converged``, or a learning-rate sweep of one, ``converged-lr0.5x``; or a budget object that
    `resolve_budget` accepts, for an ad-hoc budget no name resolves to). Name:
    ``url-<method>-<budget>-s<seed>``, e.g. ``url-nivmf-converged-s2`` (`hedgekit.zoo.names.url_run_name`; an
    ad-hoc budget's runs are named by its name, and read back as the registered budget of that name).

    What the run is, beyond its name, is `run_config`: the budget's settings for the method and the hash of the
    code the run executes; `url_run_is_stale` compares it with what the run recorded."""

    method: str
    budget: object = "paper"
    seed: int = 0

    kind: ClassVar[str] = URL_KIND
    family: ClassVar[str] = URL_KIND

    def __post_init__(self) -> None:
        recipe = _recipe()
        if not isinstance(self.method, str) or "-" in self.method:
            raise InputError(f"URLSpec.method must be a method name; got {self.method!r}")
        recipe.check_methods([self.method])
        recipe.resolve_budget(self.budget)  # InputError naming the budgets
        check_seed(self.seed, "URLSpec.seed")

    @property
    def budget_name(self) -> str:
        """The budget's name: the folder of its runs (`url_run_path`) and part of `name`."""
        return self.budget if isinstance(self.budget, str) else self.run_budget().name

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``url-ce-converged-s0``."""
        return url_run_name(self)

    def run_budget(self):
        """The budget this run trains and is evaluated in (`hedgekit.papers.url.recipe.resolve_budget`)."""
        return _recipe().resolve_budget(self.budget)

    def run_config(self) -> dict:
        """What the run's record must hold to be current (`url_run_is_stale`,
        `hedgekit.papers.url.recipe.run_config`): the training config for the method, evaluation images per
        class, embedding dimension, the method's hyper-parameters and the code key."""
        return _recipe().run_config(self.run_budget(), self.method)

    def build(self) -> torch.nn.Module:
        """The untrained, seeded model (`hedgekit.papers.url.recipe.build_run_model`)."""
        return _recipe().build_run_model(self.method, self.seed, self.run_budget())


def url_run_path(spec: URLSpec) -> Path:
    """Where the benchmark has always kept its runs, so that every run cached before the benchmark joined the
    store is found where it is, in its format (`URL_FORMAT`): its record
    ``<cache>/url/<budget>/<method>-s<seed>.json`` (`hedgekit.papers.url.recipe.cache_root`), its weights
    beside it (``.pt``)."""
    return _recipe().cache_root() / spec.budget_name / f"{spec.method}-s{spec.seed}.json"


def url_record(path: str | Path) -> dict | None:
    """The record (JSON) of the URL run at ``path`` if it parses as an object, else None. Reads only."""
    try:
        rec = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def url_run_is_stale(path: str | Path, spec: URLSpec) -> bool:
    """True if the record at ``path`` holds another ``config`` than `URLSpec.run_config`: the budget's training
    config for the method, evaluation images per class, embedding dimension, the method's hyper-parameters and
    the code key, a hash of the code the run executes (`hedgekit.papers.url.recipe.run_config`). The code counts
    here because the runs are a leaderboard: its methods are ranked against each other, so a run measured with
    other code than today's (a fixed loss, a changed metric) must not be ranked beside the rest. The record's
    other fields (metrics, seconds, device, history) are what the run measured, not what it is."""
    rec = url_record(path)
    return rec is not None and rec.get("config") != spec.run_config()


def find_url_run(spec: URLSpec) -> Path | None:
    """The cached run's record if it parses, is not stale and names the SHA-256 of the weights beside it; an
    incomplete pair (an interrupted write) is not found. None ship with the package."""
    p = url_run_path(spec)
    rec = url_record(p)
    return p if rec is not None and not url_run_is_stale(p, spec) and _url_weights_match(p, rec) else None


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
    and `find_url_run` does not find the run, so the next call retrains."""
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
    """The model and record of the URL run at ``path`` (a record, `url_run_path`), on the CPU, in eval mode.
    CheckpointError when there is no readable record, or its weights are not the ones it names (an interrupted
    run, a replaced file) or do not load into ``spec``'s network."""
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


def load_or_train_url(spec: URLSpec, progress: bool, device: str, retrain: bool,
                      save: bool) -> tuple[torch.nn.Module, dict]:
    """`hedgekit.zoo.store.load_or_train` for a URL run: its cached pair if `find_url_run` finds it, else trained
    by `hedgekit.papers.url.recipe.train_run` and saved by `save_url_run`; ``meta`` is the run's record."""
    dev = resolve_device(device)
    path = None if retrain else find_url_run(spec)
    if path is not None:
        model, rec = load_url_run(path, spec)
        return model.to(dev), dict(rec, source="cache", path=str(path))
    save = save and distributed.context().is_main
    out = url_run_path(spec)
    if save:  # a read-only or full cache is refused before the training, not after
        check_writable(out, need=2**20)  # a URL run's weights and record: ~0.3 MB
    model, rec = _recipe().train_run(spec, progress=progress, device=device)
    if save:
        save_url_run(out, model, rec)
    return model.to(dev), dict(rec, source="trained now", path=str(out) if save else "")
