"""``python -m hedgekit reproduce``: run the reproduction notebooks and write one report.

Every registered notebook is executed with papermill (parameters ``FAST``, ``REPORT_DIR`` and ``DEVICE``, where
its missing models train); each hands its tables, figures and computed verdict to the report
through `hedgekit.repro.report`. The result is

    reports/summary.md         every reproduced table beside the paper's, the figures, run times;
                               cumulative: notebooks run earlier into the same folder and mode keep
                               their sections, so a full run can be done one notebook at a time
    reports/summary.html       the same, one self-contained page (figures linked, not inlined)
    reports/run.json           machine-readable run record (status, seconds, checkpoints)
    reports/notebooks/*.ipynb  the executed notebooks (or back into notebooks/ with --inplace)
    reports/assets/<notebook>/ the files the notebooks wrote (PNG, HTML, Markdown, CSV)

Usage::

    python -m hedgekit reproduce --fast              # CI-sized models, every notebook < 3 min
    python -m hedgekit reproduce --only hib          # the HIB notebooks with `paper` preset models
    python -m hedgekit reproduce --only hib --inplace   # ... and write outputs back into notebooks/
    python -m hedgekit reproduce --list-models       # the checkpoints a full run needs
    python -m hedgekit reproduce --only 08 --train-missing --jobs 2   # train them, two at a time, and exit
    python -m hedgekit reproduce --device cuda --train-missing        # every full-mode checkpoint on the GPU
    python -m hedgekit reproduce --device cuda                        # then the notebooks, DEVICE = "cuda"

Notebooks register by group in `NOTEBOOKS` (or with `register`); ``--only`` takes
group names or notebook names.
"""
from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import platform
import shutil
import signal
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from hedgekit.checks import check_count, count_arg, device_arg, resolve_device
from hedgekit.errors import InputError
from hedgekit.paths import REPO_DIR, data_dir
from hedgekit.repro.report import read_manifest
from hedgekit.repro.report import precision_note

FAST_MODE = "FAST (CI sizes: shipped paper models where they exist, else fast preset models)"

if TYPE_CHECKING:
    from hedgekit.zoo import Spec

__all__ = ["NOTEBOOKS", "register", "notebook_dir", "select", "notebook_models", "WORKER_MEMORY", "job_limit",
           "train_missing", "run_notebook", "trained_in_run", "reproduce", "write_summary", "add_subcommand"]

WORKER_MEMORY = 3 * 2**30  # bytes one `train_missing` worker needs at its peak: measured, see `job_limit`
MEMINFO = "/proc/meminfo"  # MemAvailable: what the kernel can give new processes without swapping

# Group -> notebooks (file names in notebooks/), in running order. SPE (06, 07) registers
# under "spe": add the file names here or call register("spe", "06_....ipynb", ...).
NOTEBOOKS: dict[str, list[str]] = {
    "start": ["00_start_here.ipynb"],  # what a hedged embedding is, a map of the kit
    "hib": ["01_ndigit_mnist.ipynb", "02_hib_embeddings.ipynb", "03_self_organization.ipynb",
            "04_known_unknowns.ipynb", "05_kl_and_soft_contrastive.ipynb"],
    "spe": ["06_spe_lshapes.ipynb", "07_spe_ndigit.ipynb"],
    "url": ["09_url_benchmark.ipynb"],
    "taha": ["08_het_triplet_retrieval.ipynb"],
}


def register(group: str, *notebooks: str) -> None:
    """Add notebooks (file names in notebooks/) to a group, keeping order and skipping duplicates."""
    names = NOTEBOOKS.setdefault(group, [])
    for nb in notebooks:
        if not nb.endswith(".ipynb"):
            raise InputError(f"notebook names end in .ipynb; got {nb!r}")
        if nb not in names:
            names.append(nb)


def notebook_dir() -> Path:
    return REPO_DIR / "notebooks"


def select(only: Sequence[str] | str | None = None, registry: dict | None = None) -> list[str]:
    """Notebooks to run: all registered (sorted by name) or those of the named groups / notebooks."""
    reg = NOTEBOOKS if registry is None else registry
    every = sorted({nb for group in reg.values() for nb in group})
    if not only:
        return every
    if isinstance(only, str):
        only = [only]
    only = [s.strip() for item in only for s in item.split(",") if s.strip()]  # "--only 04,05" and "--only 04 --only 05"
    out: list[str] = []
    for item in only:
        if item in reg:
            out += reg[item]
        else:
            match = [nb for nb in every if nb == item or nb == f"{item}.ipynb" or nb.split("_")[0] == item]
            if not match:
                raise InputError(f"--only {item!r}: not a group ({', '.join(sorted(reg))}) nor a registered notebook")
            out += match
    return list(dict.fromkeys(out))


def notebook_models(only: Sequence[str] | str | None = None, fast: bool = False) -> list[tuple[str, Spec]]:
    """(notebook, spec) for every checkpoint the selected notebooks load, notebook by notebook in `select` order.

    A spec several notebooks share appears once per notebook (``--list-models`` shows each row;
    `train_missing` deduplicates by ``spec.name``).
    """
    from hedgekit.papers import hib, spe, taha

    return [(nb, spec) for nb in select(only)
            for paper in (hib, spe, taha) for spec in paper.experiments.notebook_specs(nb, fast)]


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one, else ``os.cpu_count``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """``MemAvailable`` of `MEMINFO` in bytes; None where there is no such file (macOS, Windows) or it has no line."""
    try:
        with open(MEMINFO) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def job_limit() -> tuple[int, str]:
    """(the most `train_missing` workers this machine takes now, why): one per usable core (`usable_cores`) and
    one per `WORKER_MEMORY` of available memory (`available_memory`), at least 1 (issue 45, item 3: with
    ``--jobs 1000`` and no cap, 165 workers held ~20 GB and the out-of-memory killer broke the pool).

    `WORKER_MEMORY` = 3 GiB is the largest peak resident set measured, once (2026-11-27, torch 2.13 CPU, 2 cores),
    in a worker forked from a parent that had imported hedgekit, as `train_missing`'s pool does, training one spec
    of each kind the notebooks need for 20 steps and evaluating it (`hedgekit.zoo.train_spec`), read in the worker
    as ``resource.getrusage(RUSAGE_SELF).ru_maxrss``: spe-lshapes-d2 3.0 GB (64x64 RGB L-shapes); hib-n3-d3 (K = 8)
    1.38 GB; point / pn / spe at N = 3 1.26-1.29 GB; hib / point / pn / spe / triplet / het at N = 2 0.90-1.33 GB.
    The Fashion-MNIST triplet models were not measured (that data set was not installed; its images are MNIST's
    size). The counts include the ~0.39 GB a worker shares with its parent, so the cap errs on the safe side."""
    cores, memory = usable_cores(), available_memory()
    limit, why = cores, f"{cores} usable core{'s' if cores != 1 else ''}"
    if memory is not None:
        by_memory = max(1, memory // WORKER_MEMORY)
        limit = min(limit, by_memory)
        why += (f", {memory / 2**30:.1f} GiB of memory available / {WORKER_MEMORY / 2**30:.0f} GiB per worker = "
                f"{by_memory}")
    return limit, why


_STARTED = None  # in a `train_missing` worker: one flag per model, set when the model's training starts


def _init_worker(started=None) -> None:
    """Start of a `train_missing` worker process: one torch thread, so N workers share N cores; Ctrl-C is the
    parent's to handle (it stops the workers and prints the one line of `hedgekit.commands.run_command`), so a
    worker ignores SIGINT instead of printing a traceback of its own. SIGTERM (the parent's ``terminate``) ends it
    at once: a forked worker would otherwise inherit the parent's handler (`hedgekit.commands.Terminated`), whose
    interrupt the pool's worker loop catches before taking the next model. ``started``: shared flags, one per
    model, that `_train_one` sets (a pool does not tell a model in training from one queued for the next worker)."""
    import torch

    global _STARTED
    _STARTED = started
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    torch.set_num_threads(1)


def _end_workers(pool) -> None:
    """End ``pool``'s worker processes now and wait for them (SIGTERM, SIGKILL after 10 s), cancel the models still
    queued, and remove the temporary files a worker stopped in the middle of a write left in the cache
    (`hedgekit.checks.atomic_write` names them ``<file>.<pid>.tmp``; the file itself is written whole or not at
    all)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join()
    pool.shutdown(wait=False, cancel_futures=True)
    root = data_dir()
    for process in processes:
        for tmp in root.rglob(f"*.{process.pid}.tmp") if root.is_dir() else ():
            tmp.unlink(missing_ok=True)


def _models_kept(result: dict, missing: int, ended: int, training: Sequence[str]) -> str:
    """`run_command`'s line for an interrupted `train_missing` (``missing`` models to train, ``ended`` of them
    finished, ``training`` the names in training): the models trained and cached, those stopped, those not
    started."""
    left = missing - ended - len(training)
    return (f"models: {len(result['trained'])} of the {missing} missing trained and cached"
            + (f", {len(result['failed'])} failed" if result["failed"] else "")
            + (f"; stopped in training, not saved: {', '.join(training)}" if training else "")
            + (f"; {left} not started" if left > 0 else ""))


def _train_one(spec: Spec, device: str = "cpu", index: int = 0) -> dict:
    """Train (and cache) one checkpoint on ``device`` with `hedgekit.zoo.load_or_train`; runs in a worker (where it
    sets flag ``index`` of `_STARTED` first) or in this process."""
    from hedgekit import zoo

    if _STARTED is not None:
        _STARTED[index] = 1
    t0 = time.perf_counter()
    _model, meta = zoo.load_or_train(spec, progress=False, device=device)
    return {"name": spec.name, "seconds": time.perf_counter() - t0, "source": meta.get("source", "")}


def train_missing(pairs: Sequence[tuple[str, Spec]], jobs: int = 1, echo=print, device: str = "auto") -> dict:
    """Train every checkpoint of ``pairs`` (from `notebook_models`) that `find_checkpoint` does not find, on
    ``device`` ("auto": `hedgekit.checks.resolve_device`, resolved once here).

    Specs are deduplicated by name (in listing order) before anything is dispatched, so none trains twice.
    With ``jobs`` > 1 (and more than one model missing) the models train in ``min(jobs, missing)`` worker
    processes of one torch thread each; otherwise in this process. More workers than `job_limit` allows (cores,
    memory) are lowered to it with a one-line note (issue 45, item 3). On a CUDA device the workers share the one
    GPU, each with a CUDA context of its own, and are started by "spawn" (CUDA cannot be used in a forked
    child). A model that fails is reported and the others still train. Returns ``{"trained": [...],
    "cached": [...], "failed": {name: message}, "seconds": wall time}``.

    Ctrl-C or SIGTERM (`hedgekit.commands.Terminated`) ends every worker before the interrupt goes on
    (`_end_workers`: no orphan keeps training into the cache) and sets its ``kept``: the models trained, those
    stopped in training (not saved; the workers flag each model they start), those not started.
    """
    from hedgekit.zoo import find_checkpoint

    jobs = check_count(jobs, "jobs")
    dev = str(resolve_device(device))
    distinct: dict[str, Spec] = {}
    for _nb, spec in pairs:
        distinct.setdefault(spec.name, spec)
    cached = [name for name, spec in distinct.items() if find_checkpoint(spec) is not None]
    todo = [spec for name, spec in distinct.items() if name not in cached]
    workers = min(jobs, len(todo))
    limit, why = job_limit()
    if workers > limit:
        echo(f"[train] --jobs {jobs} lowered to {limit}: {why}")
        workers = limit
    result: dict = {"trained": [], "cached": cached, "failed": {}, "seconds": 0.0}
    ended: list[str] = []  # the models of `todo` finished (trained, failed or cached meanwhile)
    t0 = time.perf_counter()
    if todo:
        echo(f"[train] {len(todo)} of {len(distinct)} checkpoints missing; training "
             + (f"in {workers} worker processes" if workers > 1 else "in this process") + f", on {dev}")

    def finished(name: str, rec: dict | None, exc: BaseException | None) -> None:
        ended.append(name)
        done = len(ended)
        if exc is not None:
            result["failed"][name] = f"{type(exc).__name__}: {exc}".strip()
            if isinstance(exc, BrokenProcessPool):  # a worker was killed, most often by the out-of-memory killer
                result["failed"][name] += (f" (a worker process died: out of memory? each needs up to "
                                           f"{WORKER_MEMORY / 2**30:.0f} GiB; try a smaller --jobs)")
            echo(f"[train] {name}: FAILED ({done}/{len(todo)}) — {result['failed'][name].splitlines()[0][:300]}")
            return
        if rec["source"] == "trained now":
            result["trained"].append(name)
        else:  # cached meanwhile (e.g. by another run)
            result["cached"].append(name)
        echo(f"[train] {name}: {rec['seconds']:.0f} s, {rec['source']} ({done}/{len(todo)})")

    if workers > 1:
        spawn = multiprocessing.get_context("spawn") if dev.startswith("cuda") else None
        started = (spawn or multiprocessing).RawArray("b", len(todo))  # `_init_worker`: set as each model starts
        pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(started,),
                                   mp_context=spawn)
        futures: dict = {}
        try:
            for index, spec in enumerate(todo):
                futures[pool.submit(_train_one, spec, dev, index)] = spec.name
            for future in as_completed(futures):
                exc = future.exception()
                finished(futures[future], None if exc else future.result(), exc)
        except KeyboardInterrupt as interrupt:  # Ctrl-C or SIGTERM: end the workers before anything else
            _end_workers(pool)
            training = [spec.name for spec, flag in zip(todo, started) if flag and spec.name not in ended]
            interrupt.kept = _models_kept(result, len(todo), len(ended), training)
            interrupt.again = "to train the rest (the cached ones are not trained again)"
            raise
        pool.shutdown()
    else:
        for spec in todo:
            try:
                rec = _train_one(spec, dev)
            except KeyboardInterrupt as interrupt:
                interrupt.kept = _models_kept(result, len(todo), len(ended), [spec.name])
                interrupt.again = "to train the rest (the cached ones are not trained again)"
                raise
            except Exception as exc:
                finished(spec.name, None, exc)
            else:
                finished(spec.name, rec, None)
    result["seconds"] = time.perf_counter() - t0
    echo(f"[train] {len(result['trained'])} trained, {len(result['cached'])} already cached"
         + (f", {len(result['failed'])} FAILED ({', '.join(result['failed'])})" if result["failed"] else "")
         + f"; wall time {result['seconds']:.0f} s")
    return result


def _tracked_kernels(kernels: list):
    """A jupyter kernel manager class that appends each of its instances to ``kernels`` (for `_end_kernels`)."""
    from jupyter_client.manager import AsyncKernelManager

    class TrackedKernelManager(AsyncKernelManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kernels.append(self)

    return TrackedKernelManager


def _end_kernels(kernels: list) -> None:
    """Kill the kernels of ``kernels`` that still run, with their process group (jupyter starts a kernel in a
    session of its own, so this ends what the notebook started too), and wait for them: after an interrupt the
    kernel must not write into the report's assets while they are put back."""
    for km in kernels:
        provisioner = getattr(km, "provisioner", None)
        process = getattr(provisioner, "process", None)
        if process is None or process.poll() is not None:
            continue
        pgid = getattr(provisioner, "pgid", None)
        try:
            os.killpg(pgid, signal.SIGKILL) if pgid and hasattr(os, "killpg") else process.kill()
        except OSError:  # ended meanwhile
            pass
        process.wait(30)


def run_notebook(src: Path, dst: Path, parameters: dict, kernel: str = "python3", timeout: int | None = None,
                 progress: bool = False) -> dict:
    """Execute one notebook with papermill into ``dst``; never raises (errors are returned in the record), except on
    Ctrl-C or SIGTERM (`hedgekit.commands.Terminated`): then the notebook's kernel is ended (`_end_kernels`) and
    the interrupt goes on; ``dst`` is then a partial run (papermill writes it cell by cell). The kernel is stopped
    at once when the run ends (nbclient's ``shutdown_kernel="immediate"``): a graceful shutdown of a kernel still in
    a cell, as after an interrupt, makes it print a traceback of its own."""
    import papermill as pm

    rec: dict = {"notebook": src.name, "output": str(dst), "status": "ok", "error": "", "seconds": 0.0}
    if not src.is_file():
        rec.update(status="missing", error=f"{src} does not exist")
        return rec
    dst.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    kernels: list = []
    try:
        pm.execute_notebook(str(src), str(dst), parameters=parameters, kernel_name=kernel, cwd=str(src.parent),
                            progress_bar=progress, execution_timeout=timeout, log_output=False,
                            kernel_manager_class=_tracked_kernels(kernels), shutdown_kernel="immediate")
    except KeyboardInterrupt:
        _end_kernels(kernels)
        # nbclient's task for the cell in progress fails with DeadKernelError once garbage, unread: asyncio would log
        # that at exit as "Task exception was never retrieved", a traceback after the interrupt's one line
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise
    except Exception as exc:  # PapermillExecutionError carries the cell's traceback
        name = type(exc).__name__
        detail = getattr(exc, "evalue", None) or str(exc)
        rec.update(status="failed", error=f"{name}: {detail}".strip()[:2000],
                   cell=getattr(exc, "exec_count", None))
        if not getattr(exc, "evalue", None):
            rec["traceback"] = traceback.format_exc()[-4000:]
    rec["seconds"] = round(time.perf_counter() - t0, 1)
    return rec


def trained_in_run(assets: str | Path) -> tuple[int, float]:
    """(models, seconds): the checkpoints a notebook trained during its run, as the header of that run lists them
    (source "trained now", the last run-information entry of its manifest in ``assets``), and their recorded
    training seconds; (0, 0.0) when it trained none or wrote no manifest. `reproduce` records them in a run's
    record, so that a full-mode time can be read as the time with every checkpoint cached."""
    metas = [e.get("info", {}) for e in read_manifest(assets)
             if e.get("kind") == "meta" and "checkpoints" in e.get("info", {})]
    trained = [c for c in (metas[-1]["checkpoints"] if metas else []) if c.get("source") == "trained now"]
    return len(trained), float(sum(float(c.get("train_seconds") or 0.0) for c in trained))


def reproduce(fast: bool = False, only: Sequence[str] | str | None = None, out_dir: str | Path = "reports",
              inplace: bool = False, kernel: str = "python3", timeout: int | None = None,
              registry: dict | None = None, notebooks: Path | None = None, progress: bool = True,
              echo=print, device: str = "auto") -> Path:
    """Execute the selected notebooks and write ``<out_dir>/summary.md``; returns its path.

    Args:
        fast: pass ``FAST=True`` (CI sizes: shipped `paper` models where they exist, else `fast` ones)
            instead of FULL mode.
        only: group names ("hib", "spe") or notebook names/prefixes ("04"); default all.
        inplace: write executed notebooks back into notebooks/ (outputs kept) instead of
            ``<out_dir>/notebooks``; a notebook that failed is not written back (its executed copy goes to
            ``<out_dir>/notebooks``, where its error can be read).
        device: the notebooks' ``DEVICE`` parameter ("auto", "cpu", "cuda", ...): where they train the models
            they do not find (`hedgekit.repro.session.Session.configure`).
        registry, notebooks: another registry / notebook folder (tests).

    Nothing is damaged by an interrupt (issue 45, item 4): a notebook runs into a temporary file beside its
    destination, which replaces the destination (the committed notebook with ``inplace``) only once the run
    finished; its report assets are set aside, not deleted, and put back if the run is interrupted. On Ctrl-C or
    SIGTERM the running notebook's kernel is ended, its temporary file removed, its assets put back, and the
    interrupt says which notebooks finished and which one was running (``kept``).
    """
    resolve_device(device)  # "cuda" without CUDA: an InputError now, not a failure in every notebook
    out = Path(out_dir).resolve()
    src_dir = notebook_dir() if notebooks is None else Path(notebooks)
    names = select(only, registry)
    if not names:
        raise InputError("no notebook selected (the registry is empty?)")
    runs = []
    t_all = time.perf_counter()
    for name in names:
        src = src_dir / name
        stem = Path(name).stem
        assets = out / "assets" / stem
        previous = _set_aside(assets)  # a fresh manifest per run; the last run's back if this one is interrupted
        dst = src if inplace else out / "notebooks" / name
        partial = dst.with_name(f".{stem}.{os.getpid()}.partial.ipynb")
        echo(f"[reproduce] {name} ({'FAST' if fast else 'full'}) ...")
        # Relative to the notebook's folder (papermill runs it there), so a notebook written back with
        # --inplace carries no machine-specific path in its injected-parameters cell.
        report_dir = os.path.relpath(assets, src.parent.resolve()) if src.parent.exists() else str(assets)
        try:
            rec = run_notebook(src, partial, {"FAST": bool(fast), "REPORT_DIR": report_dir, "DEVICE": str(device)},
                               kernel, timeout, progress)
        except KeyboardInterrupt as interrupt:
            partial.unlink(missing_ok=True)
            _put_back(assets, previous)
            finished = ", ".join(r["notebook"] for r in runs)
            interrupt.kept = (f"notebooks: {len(runs)} of {len(names)} finished and written"
                              + (f" ({finished})" if finished else "") + f"; {name} was running and was not "
                              f"written: {dst} and its report assets are as they were")
            raise
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)
        rec["output"] = str(_keep(partial, dst, rec, inplace, out))
        n_trained, train_seconds = trained_in_run(assets)
        if n_trained:  # part of the run time went into training what it did not find
            rec.update(trained=n_trained, train_seconds=round(train_seconds, 1))
        rec["assets"] = str(assets.relative_to(out))
        rec["output"] = Path(os.path.relpath(Path(rec["output"]).resolve(), out)).as_posix()
        runs.append(rec)
        echo(f"[reproduce] {name}: {rec['status']} in {rec['seconds']:.0f} s" +
             (f" — {rec['error'].splitlines()[0][:200]}" if rec["error"] else "")
             + (f" (not written back; the executed notebook is {out / rec['output']})"
                if inplace and rec["status"] == "failed" else ""))
    total = time.perf_counter() - t_all
    summary = write_summary(runs, out, fast, total, registry)
    echo(f"[reproduce] summary: {summary}")
    return summary


def _set_aside(assets: Path) -> Path | None:
    """Move a notebook's report assets out of the way of its new run; returns where they are (None: there were none).

    A set-aside folder found already is what a killed run (SIGKILL) left: it holds the last finished run's
    assets, and ``assets`` the killed run's partial ones, which are dropped."""
    aside = assets.with_name(f".{assets.name}.previous")
    if aside.is_dir():
        shutil.rmtree(assets, ignore_errors=True)
        return aside
    if assets.is_dir():
        assets.rename(aside)
        return aside
    return None


def _put_back(assets: Path, aside: Path | None) -> None:
    """Replace an interrupted run's partial assets with those `_set_aside` kept (or with none)."""
    shutil.rmtree(assets, ignore_errors=True)
    if aside is not None:
        aside.rename(assets)


def _keep(partial: Path, dst: Path, rec: dict, inplace: bool, out: Path) -> Path:
    """Where a finished run's notebook (executed into ``partial``) goes, put there by an atomic rename: ``dst``;
    with ``inplace`` only an "ok" run replaces the notebook in notebooks/, without papermill's injected-parameters
    cell, and a failed one goes to ``out/notebooks`` instead."""
    if not partial.is_file():  # the notebook was missing: nothing ran
        return dst
    if inplace and rec["status"] != "ok":
        dst = out / "notebooks" / dst.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(partial, dst.with_name(partial.name))  # another file system, maybe: there, then renamed
        partial = dst.with_name(partial.name)
    elif inplace:
        drop_injected_parameters(partial)
    os.replace(partial, dst)
    return dst


def drop_injected_parameters(path: Path) -> None:
    """Remove papermill's ``injected-parameters`` cell from the notebook at ``path`` (outputs of the others kept).

    A notebook written back into notebooks/ must run by hand as its own parameters cell says: the injected cell
    would override it (e.g. point ``REPORT_DIR`` at the committed report). No-op if the file is missing."""
    import nbformat

    if not path.is_file():
        return
    nb = nbformat.read(path, as_version=4)
    kept = [c for c in nb.cells if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]
    if len(kept) != len(nb.cells):
        nb.cells = kept
        nbformat.write(nb, path)


def _read(p: Path) -> str:
    try:
        return p.read_text().strip()
    except OSError as exc:
        return f"*(could not read {p.name}: {exc})*"


def _previous_runs(out: Path, fast: bool, replaced: set[str]) -> list[dict]:
    """Run records of an earlier call into the same folder and mode, for notebooks not run again now.

    A corrupt or other-mode ``run.json`` contributes nothing: one summary never mixes FAST and full runs.
    """
    try:
        old = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(old, dict) or old.get("fast") != fast:
        return []
    return [dict(r) for r in old.get("runs", []) if isinstance(r, dict) and r.get("notebook") not in replaced
            and (out / r.get("assets", "-")).is_dir()]


def write_summary(runs: Sequence[dict], out_dir: str | Path, fast: bool, total_seconds: float | None = None,
                  registry: dict | None = None) -> Path:
    """Build ``summary.md`` (+ ``summary.html``, ``run.json``) from run records and the notebooks' manifests.

    The report is cumulative: notebooks run into the same folder by an earlier call
    in the same mode keep their section (with the date they ran), so full-mode notebooks can be run one at
    a time and still give one report. ``total_seconds`` is this call's wall time; the header adds the
    carried-over notebooks' run times.

    Every notebook of ``registry`` (default `NOTEBOOKS`) that has no record in this folder and mode is listed
    as "not run", with the command that adds it (``missing`` in ``run.json``): a cumulative report built one
    notebook at a time must not lose a registered notebook silently (notebook 09 was never run into the
    committed report, and nothing said so).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    now = time.strftime("%Y-%m-%d %H:%M")
    runs = [dict(r, date=r.get("date", now)) for r in runs]
    earlier = _previous_runs(out, fast, {r["notebook"] for r in runs})
    total = sum(r.get("seconds", 0.0) for r in runs) if total_seconds is None else total_seconds
    total += sum(r.get("seconds", 0.0) for r in earlier)
    runs = sorted(runs + earlier, key=lambda r: r["notebook"])
    missing = sorted(set(select(None, registry)) - {r["notebook"] for r in runs})
    metas = {}
    for r in runs:
        entries = read_manifest(out / r["assets"]) if r.get("assets") else []
        r["entries"] = entries
        meta: dict = {}
        for e in entries:
            if e.get("kind") == "meta":
                meta.update(e.get("info", {}))
        metas[r["notebook"]] = meta
    versions = next((m["versions"] for m in metas.values() if m.get("versions")), {})
    lines = ["# hedgekit — reproduction report", "",
             f"- mode: **{FAST_MODE if fast else 'FULL (paper preset models)'}**",
             f"- written: {time.strftime('%Y-%m-%d %H:%M:%S')}",
             f"- total run time: {total:.0f} s (sum over the notebooks below; each says when it ran)",
             f"- command: `python -m hedgekit reproduce{' --fast' if fast else ''}`",
             f"- machine: {platform.platform()}, Python {sys.version.split()[0]}"]
    if versions:
        lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if k != "platform"))
    lines += ["", "| notebook | status | run time | ran on | checkpoints | items |", "|---|---|---|---|---|---|"]
    for r in runs:
        meta = metas[r["notebook"]]
        n_items = sum(e.get("kind") in ("table", "figure", "plotly", "text") for e in r["entries"])
        lines.append(f"| [{r['notebook']}]({r['output']}) | {r['status']} | {r['seconds']:.0f} s | {r['date']} | "
                     f"{len(meta.get('checkpoints', []))} | {n_items} |")
    lines += [f"| {nb} | **not run** | — | — | — | — |" for nb in missing]
    if missing:
        lines += ["", "Registered but not in this report: " + ", ".join(missing) + ". Add "
                  + ("it" if len(missing) == 1 else "each") + " with `python -m hedgekit reproduce"
                  + (" --fast" if fast else "") + " --only <notebook> --out <this folder>`."]
    for r in runs:
        meta = metas[r["notebook"]]
        lines += ["", "---", "", f"## {Path(r['notebook']).stem}", "",
                  f"status **{r['status']}**, run time {r['seconds']:.0f} s"
                  + (f" (notebook's own clock {meta['runtime_s']:.0f} s)" if meta.get("runtime_s") else "")
                  + f"; executed notebook: [{r['output']}]({r['output']})"]
        if r["error"]:
            lines += ["", "```", r["error"], "```"]
        if meta.get("checkpoints"):
            lines += ["", "<details><summary>checkpoints that produced these outputs</summary>", ""]
            lines += [f"- `{c['name']}` — {c['source']}, {c['steps']} steps"
                      f"{precision_note(c.get('precision', 'float32'))}, trained {c['train_seconds']:.0f} s"
                      f"{' on ' + c['device'] if c.get('device') else ''}, "
                      f"sha256 {c['sha256']}" for c in meta["checkpoints"]]
            lines += ["", "</details>"]
        base = Path(r["assets"])
        for e in r["entries"]:
            kind = e.get("kind")
            if kind == "table":
                lines += ["", f"### {e['name']}", "", _read(out / base / e["file"])]
                if e.get("note"):
                    lines += ["", f"*{e['note']}*"]
            elif kind == "figure":
                lines += ["", f"### {e['name']}", "", f"![{e['name']}]({(base / e['file']).as_posix()})"]
                if e.get("caption"):
                    lines += ["", f"*{e['caption']}*"]
            elif kind == "plotly":
                lines += ["", f"### {e['name']}", "",
                          f"[open the interactive figure]({(base / e['file']).as_posix()})"]
            elif kind == "text":
                lines += ["", _read(out / base / e["file"])]
    md = "\n".join(lines) + "\n"
    path = out / "summary.md"
    _write_text(path, md)
    _write_text(out / "run.json", json.dumps({"fast": fast, "total_seconds": round(total, 1), "missing": missing,
                                             "runs": [{k: v for k, v in r.items() if k != "entries"} for r in runs],
                                             "meta": metas}, indent=1, default=str))
    _write_html(md, out / "summary.html")
    return path


def _write_text(path: Path, text: str) -> None:
    """``path.write_text(text)``, whole or not at all (`hedgekit.checks.atomic_write`): an interrupt while the report
    is written leaves the previous one."""
    from hedgekit.checks import atomic_write

    with atomic_write(path) as tmp:
        tmp.write_text(text)


def _write_html(md: str, path: Path) -> None:
    try:
        import mistune

        body = mistune.create_markdown(plugins=["table"], escape=False)(md)
    except Exception:  # pragma: no cover - mistune ships with nbconvert
        import html

        body = f"<pre>{html.escape(md)}</pre>"
    css = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
           "background:#fff;color:#222}table{border-collapse:collapse;font-size:.85em;margin:.5em 0}"
           "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}img{max-width:100%}"
           "code,pre{background:#f4f4f4}")
    _write_text(path, f"<!doctype html><html><head><meta charset='utf-8'><title>hedgekit reproduction</title>"
                      f"<style>{css}</style></head><body>{body}</body></html>")


# ------------------------------------------------------------------------------ CLI
def add_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``reproduce`` and its arguments on `hedgekit.cli`'s sub-parser set: the one place they are declared,
    ``python -m hedgekit reproduce`` the one way to run it (issue 47 item 4: one command-line module)."""
    p = subparsers.add_parser("reproduce", help="run the reproduction notebooks and write reports/summary.md",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--fast", action="store_true", help=f"{FAST_MODE} instead of FULL mode")
    p.add_argument("--only", action="append", default=None,
                   help="group (hib, spe) or notebook name/prefix; repeat or comma-separate")
    p.add_argument("--out", default="reports", help="output folder (default: reports)")
    p.add_argument("--inplace", action="store_true", help="write executed notebooks back into notebooks/")
    p.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: python3)")
    p.add_argument("--timeout", type=count_arg(1), default=None, help="per-cell timeout in seconds")
    p.add_argument("--list", action="store_true", help="list the registered notebooks and exit")
    p.add_argument("--list-models", action="store_true",
                   help="list the checkpoints the notebooks need (cached or missing) and exit")
    p.add_argument("--train-missing", action="store_true",
                   help="train the checkpoints the selected notebooks need and do not find, then exit "
                        "(no notebook runs; respects --only and --fast)")
    p.add_argument("--jobs", type=count_arg(1), default=1,
                   help="with --train-missing: models trained side by side, in worker processes of one torch "
                        "thread each (default: 1, in this process); on cuda the N processes share the one GPU, "
                        "each with a CUDA context of its own. More than the usable cores, or than the available "
                        f"memory holds at {WORKER_MEMORY / 2**30:.0f} GiB per worker, is lowered to that, with a "
                        "one-line note")
    p.add_argument("--device", type=device_arg, default="auto",
                   help="where missing models train, with --train-missing and in the notebooks (their DEVICE "
                        "parameter): cpu, cuda, cuda:N, mps or auto (default: cuda if available, else mps, else cpu)")
    p.set_defaults(fn=_cmd)
    return p


def _cmd(a) -> int:
    if a.list:
        for group, names in NOTEBOOKS.items():
            print(f"{group}: {', '.join(names) if names else '(none registered)'}")
        return 0
    if a.list_models or a.train_missing:
        pairs = notebook_models(a.only, a.fast)
    if a.list_models:
        from hedgekit.interactive.models import expected_train_seconds
        from hedgekit.zoo import SHIPPED_DIR, find_checkpoint

        print(f"{'notebook':<34} {'checkpoint':<44} status")
        seen: dict[str, bool] = {}
        missing_seconds = 0
        for nb, spec in pairs:
            path = find_checkpoint(spec)
            have = path is not None
            status = "missing" if path is None else "shipped" if path.parent == SHIPPED_DIR else "cached"
            print(f"{Path(nb).stem:<34} {spec.name:<44} {status}")
            if spec.name not in seen and not have:
                missing_seconds += expected_train_seconds(spec)
            seen[spec.name] = have
        n_missing = sum(not h for h in seen.values())
        print(f"{len(seen)} distinct checkpoints: {len(seen) - n_missing} cached or shipped, {n_missing} missing"
              + (f" (~{missing_seconds / 60:.0f} min to train on 2 CPU cores, one at a time)" if n_missing else ""))
    if a.train_missing:
        return 1 if train_missing(pairs, a.jobs, device=a.device)["failed"] else 0
    if a.list_models:
        return 0
    summary = reproduce(fast=a.fast, only=a.only, out_dir=a.out, inplace=a.inplace, kernel=a.kernel,
                        timeout=a.timeout, device=a.device)
    ran = set(select(a.only))  # carried-over notebooks of earlier calls do not decide this exit code
    runs = json.loads((summary.parent / "run.json").read_text())["runs"]
    return 0 if all(r["status"] == "ok" for r in runs if r["notebook"] in ran) else 1
