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
  "diverged at step N (seed s)" (`run_one`): the other runs are trained, ranked and written, and
  the diverged run is not cached (the next call trains it again);
* the ledger (`hedgekit.zoo.ledger`, ``hedgekit/ledger/url.jsonl``) holds the evidence: ``python -m hedgekit
  url-benchmark`` records each run as it finishes (`ledger_record`, `run_one` with ``record``), every other call
  checks its runs against it, and `ledger_runs` reads a budget's recorded runs back (the app's leaderboard);
* `leaderboard` (`hedgekit.papers.url.leaderboard`): mean ± std (sample std, ddof = 1) over seeds per method;
  `write_leaderboard` writes it as CSV and Markdown under the git-ignored data cache.

What a run is (its budgets, model, config and trainer) is `hedgekit.papers.url.recipe`, which registers itself with
the store when imported (`hedgekit.zoo.register_url_runs`: the paper builds on the store, never the other way);
its names are re-exported here. The code key's module closure: `hedgekit.papers.url.code_hash`.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import torch

from hedgekit.checks import (MAX_SEEDS, MAX_THREADS, atomic_write, check_count, check_seed, check_writable, count_arg,
                             device_arg)
from hedgekit.errors import CheckpointError, DivergedError, InputError
from hedgekit.evaluation.metrics import recall_at_1
from hedgekit.papers.url import recipe
from hedgekit.papers.url.code_hash import module_closure
from hedgekit.papers.url.leaderboard import (LABELS, MAY_BE_NAN, MEASURES, METRICS, NOT_TRAINED, TRAINED, TRAINED_AT,
                                             label, leaderboard, leaderboard_markdown, method_status, ranked, run_status,
                                             seed_rank_stability, trained_runs)
from hedgekit.papers.url.numbers import DISPLAY
from hedgekit.papers.url.recipe import (BUDGETS, LR_SWEEP, RUN_MODULES, Budget, Setting, augmentation, build_model,
                                        build_run_model, cache_root, check_methods, eval_sets, method_registry,
                                        resolve_budget, run_config, sweep_budgets, train_run)
from hedgekit.training.upstream import UpstreamModel, predict
from hedgekit.zoo import (URLSpec, cache_checkpoint_path, find_checkpoint, is_stale, ledger, load_or_train,
                          load_url_run, url_record)

# What a run is (`hedgekit.papers.url.recipe`) and the leaderboard's names (`hedgekit.papers.url.leaderboard`) are
# re-exported: ``benchmark.BUDGETS``, ``benchmark.label``, ... are where notebook 09 and the app find them. This
# module calls a run's functions on `recipe`, so that what a test replaces there is what the benchmark uses too.
__all__ = ["Setting", "Budget", "BUDGETS", "TRAINED_AT", "MAY_BE_NAN", "TRAINED", "NOT_TRAINED", "run_status",
           "method_status", "trained_runs", "ranked", "seed_rank_stability", "augmentation", "settings_table",
           "LR_SWEEP", "sweep_budgets", "sweep_runs", "METRICS", "method_registry", "check_methods", "eval_sets",
           "build_model", "cache_root", "run_spec", "run_path", "RUN_MODULES", "module_closure", "run_one",
           "diverged_record", "train_run", "load_run_model", "run_benchmark", "cached_runs", "LEDGER_GROUP",
           "ledger_record", "ledger_runs", "uncertainty_extremes",
           "uncertainty_truth", "leaderboard", "leaderboard_markdown", "write_leaderboard", "add_subcommand", "LABELS",
           "label", "resolve_budget", "run_config", "build_run_model"]


# the group of a URL run's record in the ledger (`ledger_record`): the benchmark's measures of the run
LEDGER_GROUP = "benchmark"


def run_spec(method: str, seed: int, budget) -> URLSpec:
    """The zoo's spec of a run (`hedgekit.zoo.URLSpec`), by the budget's name when that names this very budget (a
    key of `BUDGETS` or a sweep of one), else holding the ad-hoc `Budget` itself (its runs share the folder of its
    name, and a run of the other budget there is stale for it, and the other way round)."""
    b = recipe.resolve_budget(budget)
    try:
        named = recipe.resolve_budget(b.name) == b
    except InputError:  # a name no budget has
        named = False
    return URLSpec(method, b.name if named else b, check_seed(seed, "seed"))


def run_path(method: str, seed: int, budget) -> Path:
    """Where the run's JSON record lives (`hedgekit.zoo.cache_checkpoint_path`; its weights: the same path with
    ``.pt``); the folder is created."""
    path = cache_checkpoint_path(run_spec(method, seed, budget), None)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def run_one(method: str, seed: int, budget="fast", retrain: bool = False, progress: bool = False,
            device: str = "cpu", record: bool = False) -> dict:
    """Train ``method`` upstream with ``seed`` on ``device`` and evaluate it (`train_run`), or read the cached
    result (a run trained on another device serves all the same, as a checkpoint does): the run is the zoo's
    model `run_spec`, found by `hedgekit.zoo.find_checkpoint` or trained and saved by `hedgekit.zoo.load_or_train`.

    Returns the record: ``method, seed, budget, config, source ("cache" / "trained now")``, every metric of
    `protocol.evaluate`, ``train_seconds`` (wall), ``cpu_seconds`` (process CPU time of training and
    evaluation, all threads), ``eval_seconds``, ``device`` (`hedgekit.hardware.device_description`), the loss
    history and ``weights_sha256``. A run that diverges (`train_run` raises `DivergedError`) is not saved; its
    record is `diverged_record` (source "diverged", every metric NaN), so the other runs go on.

    The ledger (`hedgekit.zoo.ledger`): with ``record``, the run's `ledger_record` is added as soon as the run is
    trained or read (`hedgekit.zoo.ledger.append`: a run the ledger holds is checked, not rewritten); without it,
    the ledger is only checked (`hedgekit.zoo.ledger.check`, what a notebook does). Either way a run whose measures
    differ from the ledger's record of it raises `hedgekit.zoo.ledger.LedgerConflict`. A run of an ad-hoc budget
    (one no budget name gives) is no model the ledger can name again, and is neither recorded nor checked.
    """
    spec = run_spec(method, seed, budget)
    path = None if retrain else find_checkpoint(spec)
    if path is not None:  # the record is all a cached run needs: its weights are not loaded
        rec = {**url_record(path), "source": "cache"}
    else:
        try:
            _, rec = load_or_train(spec, progress=progress, device=device, retrain=True)
        except DivergedError as exc:
            return diverged_record(method, seed, spec.run_budget().name, exc)
        rec = dict(rec)
        path = rec.pop("path")
    if path and isinstance(spec.budget, str):  # saved (every process but a distributed worker), a named budget
        (ledger.append if record else ledger.check)(ledger_record(spec, rec, path))
    return rec


def ledger_record(spec: URLSpec, rec: dict, path: str | os.PathLike) -> dict:
    """The ledger's record of the finished run ``spec`` (`hedgekit.zoo.ledger.build_record`; nothing is written):
    group `LEDGER_GROUP`, measures the run's `MEASURES` (its leaderboard metrics without the seconds), provenance from
    its record ``rec`` (device, versions, data, train seconds) and, as the checkpoint, its weights beside its record
    file ``path`` (``.pt``, whose SHA-256 the record holds)."""
    measures = {m: rec[m] for m in MEASURES if m in rec}
    return ledger.build_record(spec, LEDGER_GROUP, measures, rec, Path(path).with_suffix(".pt"))


def ledger_runs(budget="converged", folder: str | os.PathLike | None = None):
    """The runs of ``budget`` the ledger holds (group `LEDGER_GROUP`, under the code key today's code gives each run:
    records of earlier code are history and left out), a DataFrame like `run_benchmark`'s, one row per run sorted by
    method and seed: ``method, seed, budget``, the measures, ``train_seconds``, ``device``, ``date``, ``commit`` and
    ``source`` "ledger"; empty (with those columns) when it holds none. Records of methods this kit no longer has are
    left out. ``folder``: the ledger's (`hedgekit.zoo.ledger.ledger_dir` by default)."""
    import pandas as pd

    name = recipe.resolve_budget(budget).name
    known = recipe.method_registry()
    keys: dict[str, str] = {}  # method -> today's code key of its runs (the seed is not in it)
    rows = []
    for r in ledger.records("url", folder):
        method = r["spec"].get("method")
        if r["group"] != LEDGER_GROUP or r["spec"].get("budget") != name or method not in known:
            continue
        if method not in keys:
            keys[method] = ledger.code_key(run_spec(method, 0, name))
        if r["code_key"] == keys[method]:
            rows.append({"method": method, "seed": r["seed"], "budget": name,
                         **{m: math.nan if v is None else v for m, v in r["measures"].items()},
                         **{k: r[k] for k in ("train_seconds", "device", "date", "commit")}, "source": "ledger"})
    columns = ["method", "seed", "budget", *MEASURES, "train_seconds", "device", "date", "commit", "source"]
    runs = pd.DataFrame(rows, columns=list(dict.fromkeys([*columns, *(k for r in rows for k in r)])))
    return runs.sort_values(["method", "seed"], ignore_index=True)


def diverged_record(method: str, seed: int, budget: str, exc: DivergedError) -> dict:
    """The record of a run that diverged: ``source`` "diverged", ``diverged_at`` (the step),
    ``failure`` ("diverged at step N (seed s)", the leaderboard's words), ``error`` (what was seen) and every
    metric of `METRICS` NaN, so that `run_status` never counts it as trained."""
    at = f"at step {exc.step}" if exc.step is not None else "(step unknown)"
    return {"method": method, "seed": seed, "budget": budget, "source": "diverged", **dict.fromkeys(METRICS, math.nan),
            "diverged_at": math.nan if exc.step is None else exc.step,
            "failure": f"diverged {at} (seed {seed})", "error": str(exc)}


def load_run_model(method: str, seed: int, budget="fast") -> UpstreamModel:
    """The trained model of a cached run (InputError with the command that trains it if there is none or it is
    stale, CheckpointError with the one that retrains it if its weights do not load: `hedgekit.zoo.load_url_run`)."""
    b = recipe.resolve_budget(budget)
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
                  device: str = "cpu", record: bool = False):
    """Every (method, seed) run, cached ones read back, missing ones trained on ``device``: a DataFrame with one
    row per run.

    ``seeds``: a number n (seeds 0..n-1) or a list of seeds. A progress bar counts runs. ``record``: add each run to
    the ledger as soon as it is trained or read, else only check it against the ledger (`run_one`).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    methods = recipe.check_methods(methods)
    b = recipe.resolve_budget(budget)
    seed_list = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else [int(s) for s in seeds]
    if not seed_list or min(seed_list) < 0:
        raise InputError(f"seeds must be a positive number or a list of non-negative seeds; got {seeds!r}")
    jobs = [(m, s) for m in methods for s in seed_list]
    rows = []
    bar = tqdm(jobs, desc=f"URL benchmark ({b.name})", disable=not progress)
    for m, s in bar:
        bar.set_postfix_str(f"{m} s{s}")
        rows.append(run_one(m, s, b, retrain=retrain, device=device, record=record))
    return pd.DataFrame([{k: v for k, v in r.items() if k not in ("config", "history")} for r in rows])


def cached_runs(budget="fast"):
    """Every complete, up-to-date cached run of ``budget`` (nothing is trained; what `hedgekit.zoo.find_checkpoint`
    finds): a DataFrame like `run_benchmark`'s, one row per run sorted by method and seed, empty when there are
    none. Runs of unknown methods are skipped."""
    import pandas as pd

    b = recipe.resolve_budget(budget)
    folder = recipe.cache_root() / b.name
    known = recipe.method_registry()
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
    x, y = recipe.eval_sets(recipe.resolve_budget(budget).eval_per_class)["unseen"]
    u = predict(model, x)["uncertainty"]
    k = min(k, len(u))

    def pick(idx):
        return {"images": x[idx, 0].numpy(), "labels": np.asarray(y)[idx], "u": u[idx]}

    return {"most": pick(np.argsort(-u, kind="stable")[:k]), "least": pick(np.argsort(u, kind="stable")[:k]),
            "n": len(u)}


def uncertainty_truth(methods, seed: int = 0, budget="fast", sets=("up", "unseen", "fashion")):
    """u(x) against the truth: for the cached run of each of ``methods`` (``seed``, ``budget``),
    every image of each of ``sets`` (names of `eval_sets`: "up" = seen digits, "unseen" = unseen digits,
    "fashion" = Fashion pairs; the run's own evaluation images) with its u(x) and whether its R@1 neighbour
    (cosine, as `protocol.evaluate_set` scores the run) shares its class. A good u(x) is high where R@1 is wrong:
    R-AUROC (Kirchhof et al. 2023, Sec. 3.1) is the AUROC of ``u`` at flagging ``~r1_correct`` per (method, set),
    so the frame recomputes the run's recorded ``up_rauroc`` / ``rauroc`` / ``fashion_rauroc``.

    Returns a DataFrame, one row per (method, set, image): ``method, set, image`` (index in the set), ``label``,
    ``u``, ``r1_correct`` and ``u_rank``: u's average rank within (method, set) scaled to [0, 1] ((rank - 1) /
    (n - 1); methods' u have different units, ranks compare). Nothing is trained: InputError (with the command that
    trains it) for a run that is not cached (`load_run_model`), and for no method, an unknown method or set.
    """
    import pandas as pd

    names = [m.strip() for m in methods.split(",") if m.strip()] if isinstance(methods, str) else list(methods)
    if not names:
        raise InputError(f"methods must name at least one method, from {', '.join(recipe.method_registry())}")
    methods = recipe.check_methods(names)
    sets = [sets] if isinstance(sets, str) else list(sets)
    b = recipe.resolve_budget(budget)
    data = recipe.eval_sets(b.eval_per_class)
    unknown = [s for s in sets if s not in data]
    if not sets or unknown:
        raise InputError(f"sets must be names of the benchmark's evaluation sets ({', '.join(data)}); "
                         f"got {unknown or sets!r}")
    models = {m: load_run_model(m, seed, b) for m in methods}  # every run checked before any is evaluated
    frames = []
    for m, model in models.items():
        for name in dict.fromkeys(sets):
            x, y = data[name]
            y = np.asarray(y)
            out = predict(model, x)
            _, correct = recall_at_1(out["embedding"], y, metric="cosine")
            u = pd.Series(out["uncertainty"])
            frames.append(pd.DataFrame({"method": m, "set": name, "image": np.arange(len(y)), "label": y, "u": u,
                                        "r1_correct": correct, "u_rank": (u.rank() - 1) / (len(u) - 1)}))
    return pd.concat(frames, ignore_index=True)


def sweep_runs(runs, seed: int = 0, factors=LR_SWEEP, progress: bool = False, device: str = "cpu"):
    """``runs``' (one budget's) runs of ``seed`` pooled with the same seed trained at every budget of
    `sweep_budgets` (cached like any run): one run per (method, setting), the paper's way of pooling its Fig. 4
    correlations over hyper-parameters rather than seeds. Methods that did not train in ``runs`` (`method_status`)
    are not swept; a sweep setting that does not train is left out later by `trained_runs` (per method and budget).
    Missing runs train on ``device``."""
    import pandas as pd

    if runs.empty or runs["budget"].nunique() != 1:
        raise InputError("sweep_runs needs the runs of one budget")
    base = recipe.resolve_budget(runs["budget"].iloc[0])
    methods = [m for m, st in method_status(runs).items() if st == TRAINED]
    own = runs[runs["seed"] == seed]
    if not methods or own.empty:
        raise InputError(f"no trained method has a run with seed {seed} to sweep")
    swept = [run_benchmark(methods, [seed], b, progress=progress, device=device)
             for b in recipe.sweep_budgets(base, factors)]
    return pd.concat([own[own["method"].isin(methods)], *swept], ignore_index=True)


def settings_table(budget="converged"):
    """The per-method settings of ``budget`` as a DataFrame, one row per method of `method_registry` (label, steps,
    learning rate, hyper-parameters, and why; "budget default" where the method has no `Setting`)."""
    import pandas as pd

    b = recipe.resolve_budget(budget)
    rows = []
    for m in recipe.method_registry():
        cfg, s = b.train_config(m), b.settings.get(m)
        rows.append({"method": label(m), "steps": cfg.steps, "lr": cfg.lr,
                     "hyper-parameters": ", ".join(f"{k}={v}" for k, v in b.hparams(m).items()) or "defaults",
                     "why": s.why if s is not None else "budget default"})
    return pd.DataFrame(rows).set_index("method")


def write_leaderboard(board, budget="fast", folder: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """Write ``leaderboard-<budget>.csv`` and ``.md`` into ``folder`` (default `cache_root`, git-ignored)."""
    name = recipe.resolve_budget(budget).name
    folder = Path(folder) if folder is not None else recipe.cache_root()
    folder.mkdir(parents=True, exist_ok=True)
    csv, md = folder / f"leaderboard-{name}.csv", folder / f"leaderboard-{name}.md"
    with atomic_write(csv) as tmp:
        board.to_csv(tmp)
    with atomic_write(md) as tmp:
        tmp.write_text(f"# URL benchmark at kit scale ({name} budget)\n\n{leaderboard_markdown(board)}\n")
    return csv, md




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
    """``python -m hedgekit url-benchmark``: run (or read back) every run, recording each in the ledger as soon as it
    finishes (`run_one` with ``record``; ``HEDGEKIT_LEDGER`` names another ledger folder), print and write the
    leaderboard. A run that diverged is its method's status in the leaderboard and one line below it; the others are
    ranked and the command exits 0. The leaderboard's folder is checked writable before anything trains."""
    torch.set_num_threads(a.threads)
    budget = "fast" if a.fast else a.budget
    methods = recipe.check_methods(a.methods or list(recipe.method_registry()))
    folder = Path(a.out) if a.out is not None else recipe.cache_root()
    # --out <a file>: refused before training
    check_writable(folder / f"leaderboard-{recipe.resolve_budget(budget).name}.md")
    runs = run_benchmark(methods, a.seeds, budget, retrain=a.retrain, progress=not a.quiet, device=a.device,
                         record=True)
    board = leaderboard(runs)
    csv, md = write_leaderboard(board, budget, a.out)
    trained, diverged = (int((runs["source"] == source).sum()) for source in ("trained now", "diverged"))
    print(f"URL benchmark ({budget} budget): {len(runs)} runs, {trained} trained now, "
          f"{len(runs) - trained - diverged} from the cache ({run_path(methods[0], 0, budget).parent})"
          + (f", {diverged} diverged (not cached: trained again next time)" if diverged else "") + "\n")
    print(leaderboard_markdown(board))
    if diverged:  # what each diverged run saw, one line each
        print("\n" + "\n".join(runs.loc[runs["source"] == "diverged", "error"]))
    print(f"\nleaderboard written to {csv} and {md}; runs recorded in {ledger.ledger_path('url')}")
    return 0


def add_subcommand(sub) -> None:
    """Register ``url-benchmark`` on the CLI's subparsers (`hedgekit.cli.build_parser`)."""
    p = sub.add_parser("url-benchmark", help="URL benchmark at kit scale: train methods upstream, rank them "
                                             "zero-shot downstream (cached, resumable)")
    p.add_argument("--methods", default="", help=f"comma-separated, from {', '.join(DISPLAY)} (default: all)")
    p.add_argument("--seeds", type=_seeds_arg, default=3, help="number of seeds per method (0..n-1), default 3")
    p.add_argument("--budget", choices=list(recipe.BUDGETS), default="paper",
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
