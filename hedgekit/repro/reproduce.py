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
    reports/times.md           each model's and each notebook's seconds and device (`hedgekit.repro.times`)

Usage::

    python -m hedgekit reproduce --fast              # CI-sized models, every notebook < 3 min
    python -m hedgekit reproduce --only hib          # the HIB notebooks with `paper` preset models
    python -m hedgekit reproduce --only hib --inplace   # ... and write outputs back into notebooks/
    python -m hedgekit reproduce --list-models       # the checkpoints a full run needs
    python -m hedgekit reproduce --only 08 --train-missing --jobs 2   # train them, two at a time, and exit
    python -m hedgekit reproduce --only 04 --plan                     # the missing seed models, cheapest seeds first
    python -m hedgekit reproduce --train-missing --budget 120         # ... trained in that order within 2 hours
    python -m hedgekit reproduce --audit 2                            # retrain 2 ledger models, judge their measures
    python -m hedgekit reproduce --device cuda --train-missing        # every full-mode checkpoint on the GPU
    python -m hedgekit reproduce --device cuda                        # then the notebooks, DEVICE = "cuda"
    python -m hedgekit reproduce --device cuda --times-to docs/speed.md   # ... and their time table there

Each call writes ``<out>/times.md``, the time table of the models `--train-missing` trained and the notebooks
that ran (`hedgekit.repro.times`). Every model `--train-missing` trains leaves its measures in the ledger
(`hedgekit.zoo.ledger`); ``--plan`` orders the missing models (`hedgekit.repro.plan`) and ``--audit`` retrains
ledger models to check their records (`hedgekit.repro.audit`).

A notebook's run is published by replacement, never by damage: it is written into a hidden ``.partial`` folder
beside each destination, checked (valid JSON, every report asset whole), and only then moved over the earlier run;
a run that cannot be written whole (a full disk) publishes nothing and ends the command with one ``error:``
paragraph, the earlier run byte for byte as it was.

Notebooks register by group in `hedgekit.repro.catalog.NOTEBOOKS` (or with `catalog.register`); ``--only`` takes
group names or notebook names.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from hedgekit.checks import count_arg, device_arg, number_arg, resolve_device
from hedgekit.commands import TERMINATING
from hedgekit.errors import HedgekitError, InputError, StorageError
from hedgekit.paths import notebook_dir
from hedgekit.repro import catalog, times
from hedgekit.repro.audit import audit
from hedgekit.repro.catalog import notebook_models, select
from hedgekit.repro.measured import record_cached_measures
from hedgekit.repro.orders import LESSON_HEADING, number_cells, refresh_lesson
from hedgekit.repro.plan import estimated_seconds, plan, plan_lines, recorded_seeds
from hedgekit.repro.pool import WORKER_MEMORY, train_missing
from hedgekit.repro.report import not_whole, read_manifest
from hedgekit.repro.summary import FAST_MODE, write_summary
from hedgekit.zoo import SHIPPED_DIR, find_checkpoint, register_url_runs
from hedgekit.zoo.ledger import record_cached

if TYPE_CHECKING:
    from hedgekit.zoo import Spec

__all__ = ["PARTIAL", "RunNotWritten", "run_notebook", "trained_in_run", "reproduce", "add_subcommand"]

# The hidden folder beside each destination (notebooks/, <out>/notebooks, <out>/assets) where a run is written and
# checked before it replaces the earlier one: on the same file system, so that the replacement is a rename; named
# without a process id, so that the next run of the notebook finds what a killed run left and removes it; hidden,
# so that pytest (norecursedirs ".*") never collects a notebook in it.
PARTIAL = ".partial"


class RunNotWritten(HedgekitError):
    """A notebook's run could not be written whole (a full disk, a read-only place, a file written part-way): nothing
    of it was published, and the notebook's earlier run, where there is one, is as it was."""


def _end_kernels(kernels: list) -> None:
    """Kill the kernels of ``kernels`` that still run, with their process group (jupyter starts a kernel in a
    session of its own, so this ends what the notebook started too), and wait for them: after an interrupt the
    kernel must not write into the run's partial report assets while they are removed."""
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
    """Execute one notebook with papermill into ``dst``; a failure of the notebook is returned in the record, not
    raised. Raised are: an OSError of papermill's own (it could not write ``dst``: a full disk, a read-only folder),
    which is not the notebook's failure but a run that could not be written; and Ctrl-C, SIGTERM or SIGHUP
    (`hedgekit.commands.Terminated`), after the notebook's kernel is ended (`_end_kernels`). ``dst`` is then a
    partial run (papermill writes it cell by cell). The kernel is stopped at once when the run ends (nbclient's
    ``shutdown_kernel="immediate"``): a graceful shutdown of a kernel still in a cell, as after an interrupt, makes
    it print a traceback of its own."""
    import papermill as pm

    from hedgekit.repro.kernel_channels import steady_kernel_manager

    rec: dict = {"notebook": src.name, "output": str(dst), "status": "ok", "error": "", "seconds": 0.0}
    if not src.is_file():
        rec.update(status="missing", error=f"{src} does not exist")
        return rec
    dst.parent.mkdir(parents=True, exist_ok=True)
    load = _load()
    t0 = time.perf_counter()
    kernels: list = []
    try:
        pm.execute_notebook(str(src), str(dst), parameters=parameters, kernel_name=kernel, cwd=str(src.parent),
                            progress_bar=progress, execution_timeout=timeout, log_output=False,
                            kernel_manager_class=steady_kernel_manager(track=kernels), shutdown_kernel="immediate")
    except KeyboardInterrupt:
        _end_kernels(kernels)
        # nbclient's task for the cell in progress fails with DeadKernelError once garbage, unread: asyncio would log
        # that at exit as "Task exception was never retrieved", a traceback after the interrupt's one line
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise
    except Exception as exc:  # PapermillExecutionError carries the cell's traceback
        if isinstance(exc, OSError) and exc.errno is not None:  # not a cell's timeout (a TimeoutError, no errno)
            _end_kernels(kernels)
            if progress:  # papermill's progress bar may be left mid-line: what is printed next starts a line
                print(file=sys.stderr)
            raise
        name = getattr(exc, "ename", None) or type(exc).__name__  # a cell's own exception, not papermill's wrapper
        detail = getattr(exc, "evalue", None) or str(exc)
        rec.update(status="failed", error=f"{name}: {detail}".strip()[:2000],
                   cell=getattr(exc, "exec_count", None))
        if not getattr(exc, "evalue", None):
            rec["traceback"] = traceback.format_exc()[-4000:]
    rec["seconds"] = round(time.perf_counter() - t0, 1)
    if load is not None:  # the machine's load beside the time it measured: [start, end]
        rec["load"] = [load, _load()]
    return rec


def _load() -> float | None:
    """The machine's 1-minute load average (None where the system does not report one)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


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

    A run is published by replacement, never by damage (`_run_one`): each notebook runs into a `PARTIAL` folder
    beside its destination, its executed notebook and report assets are checked there and only then replace the
    earlier ones. A run that cannot be written whole (a full disk: papermill, nbformat or a report writer failing
    part-way) publishes nothing and stops the command with `RunNotWritten`, once the summary lists the notebooks
    that finished before it; the earlier run of that notebook is byte for byte as it was. On Ctrl-C, SIGTERM or
    SIGHUP the running notebook's kernel is ended, its partial files removed, and the interrupt says which
    notebooks finished and which one was running (``kept``).
    """
    ran_on = str(resolve_device(device))  # "cuda" without CUDA: an InputError now, not a failure in every notebook
    out = Path(out_dir).resolve()
    src_dir = notebook_dir() if notebooks is None else Path(notebooks)
    names = select(only, registry)
    if not names:
        raise InputError("no notebook selected (the registry is empty?)")
    runs: list[dict] = []
    unwritten: _NotPublished | None = None
    t_all = time.perf_counter()
    for name in names:
        echo(f"[reproduce] {name} ({'FAST' if fast else 'full'}) ...")
        params = {"FAST": bool(fast), "DEVICE": str(device)}
        try:
            rec = _run_one(src_dir / name, out, params, inplace, (kernel, timeout, progress), runs, len(names))
        except _NotPublished as exc:
            unwritten = exc
            break
        rec["device"] = ran_on
        echo(f"[reproduce] {name}: {rec['status']} in {rec['seconds']:.0f} s" +
             (f" — {rec['error'].splitlines()[0][:200]}" if rec["error"] else "")
             + (f" (not written back; the executed notebook is {out / rec['output']})"
                if inplace and rec["status"] == "failed" else ""))
    if unwritten is not None:
        summary = None
        if runs:  # the summary lists the notebooks that finished before it, where it can be written
            with contextlib.suppress(StorageError):
                summary = write_summary(runs, out, fast, time.perf_counter() - t_all, select(None, registry))
        raise RunNotWritten(unwritten.paragraph(runs, summary, inplace))
    summary = write_summary(runs, out, fast, time.perf_counter() - t_all, select(None, registry))
    echo(f"[reproduce] summary: {summary}")
    return summary


class _NotPublished(Exception):
    """`_run_one`'s word that the run of ``name`` could not be written whole and that nothing of it was published
    (its partial files are removed): ``cause`` in words, ``code`` the errno of the OSError behind it (None: a check
    found the damage), ``dst`` and ``assets`` the notebook and report folder the run would have replaced."""

    def __init__(self, name: str, cause: str, code: int | None, dst: Path, assets: Path):
        super().__init__(cause)
        self.name, self.cause, self.code, self.dst, self.assets = name, cause, code, dst, assets

    def paragraph(self, runs: list[dict], summary: Path | None, inplace: bool) -> str:
        """The one paragraph `RunNotWritten` says, each word checked against the disk: what failed; that the
        earlier run is as it was (or that there was none); the notebooks finished before it and whether the
        summary lists them (``summary`` None: it could not be written either); what to do."""
        if self.dst.exists():
            state = (f"{self.dst} and its report assets in {self.assets} are as the earlier run left them"
                     if self.assets.is_dir() else f"{self.dst} is as the earlier run left it")
        else:
            state = f"{self.dst} was not written"
        before = ""
        if len(runs) == 1:
            before = f" The notebook run before it, {runs[0]['notebook']}, finished and was written"
        elif runs:
            before = (f" The {len(runs)} notebooks run before it finished and were written "
                      f"({', '.join(r['notebook'] for r in runs)})")
        if runs:
            before += ("; the summary lists " + ("it." if len(runs) == 1 else "them.") if summary is not None else
                       ", but the summary could not be updated: it is as it was.")
        read_only = self.code in (errno.EROFS, errno.EACCES, errno.EPERM)
        fix = (("Make the output folders writable" if read_only else "Free some space")
               + ("" if inplace else ", or choose another place with --out,") + " and run the command again.")
        return (f"{self.name} was not written: {self.cause}. Nothing of this run was published: {state}, and no "
                f"partial file was left.{before} {fix}")


def _run_one(src: Path, out: Path, params: dict, inplace: bool, how: tuple, runs: list[dict], of: int) -> dict:
    """Run one notebook for `reproduce` and publish it; returns its run record, which it appends to ``runs`` (the
    records of the notebooks finished before it; ``of``: how many run in all, for the line an interrupt prints).
    ``params``: FAST and DEVICE (REPORT_DIR is added here); ``how``: (kernel, timeout, progress).

    The executed notebook is written into `PARTIAL` beside its destination (``out/notebooks``, or ``src`` with
    ``inplace``) and the report assets into ``out/assets/.partial/<stem>``; they are checked there (`_checked`) and
    then moved over the earlier ones (`_swap`). Whatever fails on the way (an OSError of papermill, nbformat or a
    rename; a notebook that is not valid JSON; assets that are not whole) removes the partial files and raises
    `_NotPublished`; an interrupt removes them too, and says what was kept."""
    assets = out / "assets" / src.stem
    dst = src if inplace else out / "notebooks" / src.name
    staged, staged_assets = _partial(dst), _partial(assets)
    partials = (staged, _partial(out / "notebooks" / src.name), staged_assets)
    _sweep(partials, assets, dst)
    if not src.is_file():  # "missing": nothing ran, nothing is replaced
        rec = run_notebook(src, dst, params)
        rec.update(output=Path(os.path.relpath(dst.resolve(), out)).as_posix(), assets="")  # no report of this run
        runs.append(rec)
        return rec
    for folder in (staged.parent, staged_assets.parent):  # a read-only or blocked --out is reported before the run
        folder.mkdir(parents=True, exist_ok=True)
    # Relative to the notebook's folder (papermill runs it there), so a notebook written back with
    # --inplace carries no machine-specific path in its injected-parameters cell.
    report_dirs = [os.path.relpath(a, src.parent.resolve()) for a in (staged_assets, assets)]
    rec: dict = {}
    try:
        rec = run_notebook(src, staged, {**params, "REPORT_DIR": report_dirs[0]}, *how)
        staged, dst = _checked(rec, staged, dst, staged_assets, assets, report_dirs, inplace, out)
        rec.update(output=Path(os.path.relpath(dst.resolve(), out)).as_posix(), assets=str(assets.relative_to(out)))
        with _held_signals():  # published and recorded as such, or neither
            _swap(staged, dst, staged_assets, assets)
            runs.append(rec)
    except OSError as exc:
        _discard(*partials)
        step = "publishing the run" if rec else "writing the executed notebook"
        raise _NotPublished(src.name, f"{step} failed ({exc.strerror or exc})", exc.errno, dst, assets) from exc
    except _NotPublished:
        _discard(*partials)
        raise
    except KeyboardInterrupt as interrupt:
        _discard(*partials)
        interrupt.kept = _interrupted(runs, of, None if runs and runs[-1] is rec else (src.name, dst))
        raise
    n_trained, train_seconds = trained_in_run(assets)
    if n_trained:  # part of the run time went into training what it did not find
        rec.update(trained=n_trained, train_seconds=round(train_seconds, 1))
    return rec


def _interrupted(runs: list[dict], of: int, running: tuple[str, Path] | None) -> str:
    """The line an interrupt prints: the notebooks finished and written, and the one ``running`` (its name and
    destination), which was not written."""
    finished = ", ".join(r["notebook"] for r in runs)
    return (f"notebooks: {len(runs)} of {of} finished and written" + (f" ({finished})" if finished else "")
            + (f"; {running[0]} was running and was not written: {running[1]} and its report assets are as they "
               f"were" if running else ""))


def _partial(path: Path) -> Path:
    """Where ``path`` (a notebook or a report folder) is written before it replaces the one at ``path``."""
    return path.parent / PARTIAL / path.name


def _aside(staged_assets: Path) -> Path:
    """Where `_swap` sets the earlier report assets aside while the new ones take their place."""
    return staged_assets.with_name(f"{staged_assets.name}.earlier")


def _sweep(partials: Sequence[Path], assets: Path, dst: Path) -> None:
    """Remove what a run of this notebook that was killed outright (SIGKILL, a power cut) left: its ``partials``
    (notebook and report assets), and the earlier assets set aside by a `_swap` it did not finish, which go back
    where they were if nothing took their place. Also removes the ``.<stem>.<pid>.partial.ipynb`` files that earlier
    versions of this command left beside the notebook when killed."""
    aside = _aside(_partial(assets))
    if aside.is_dir():
        if assets.exists():
            shutil.rmtree(aside)
        else:
            aside.rename(assets)
    for stale in dst.parent.glob(f".{dst.stem}.*.partial.ipynb"):
        stale.unlink(missing_ok=True)
    _discard(*partials)


def _discard(*paths: Path) -> None:
    """Remove ``paths`` (files or folders) and the `PARTIAL` folders they leave empty."""
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    for folder in {path.parent for path in paths}:
        with contextlib.suppress(OSError):  # not empty (another notebook's partial run), or already gone
            folder.rmdir()


def _checked(rec: dict, staged: Path, dst: Path, staged_assets: Path, assets: Path, report_dirs: list[str],
             inplace: bool, out: Path) -> tuple[Path, Path]:
    """Check a finished run in its partial place; returns (where its notebook is now, where it goes).

    The executed notebook must be valid JSON; its REPORT_DIR is pointed at the published assets, and with
    ``inplace`` an "ok" run loses papermill's injected-parameters cell while a failed one goes to ``out/notebooks``
    instead (`_finish_notebook`). The report assets must be whole (`hedgekit.repro.report.not_whole`). Raises
    `_NotPublished` for a check that fails, OSError for a write that does."""
    ok = rec["status"] == "ok"
    _finish_notebook(staged, *report_dirs, drop_injected=inplace and ok, name=rec["notebook"], dst=dst,
                     assets=assets)
    if inplace and not ok:
        dst = out / "notebooks" / dst.name
        moved = _partial(dst)
        moved.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(staged, moved)  # another file system, maybe: copied there whole, then renamed
        _discard(staged)
        staged = moved
    problem = not_whole(staged_assets)
    if problem is not None:
        error = f" (the notebook failed: {rec['error'].splitlines()[0][:300]})" if rec["error"] else ""
        raise _NotPublished(rec["notebook"], f"its report assets are not whole: {problem}{error}", None, dst, assets)
    return staged, dst


def _swap(staged: Path, dst: Path, staged_assets: Path, assets: Path) -> None:
    """Put a checked run over the earlier one, as one step: the earlier report assets are set aside (`_aside`), the
    new ones and the notebook renamed into place, the earlier assets removed. A rename that fails puts back every
    file already moved, and the OSError goes on."""
    aside = _aside(staged_assets)
    done: list[tuple[Path, Path]] = []  # (where a folder went, where it came from), to undo on failure
    try:
        for here, there in ((assets, aside), (staged_assets, assets)):
            if here.exists():
                here.rename(there)
                done.append((there, here))
        os.replace(staged, dst)
    except OSError:
        for there, here in reversed(done):
            there.rename(here)
        raise
    shutil.rmtree(aside, ignore_errors=True)
    _discard(staged, staged_assets)


def _finish_notebook(path: Path, staged_dir: str, final_dir: str, drop_injected: bool, name: str, dst: Path,
                     assets: Path) -> None:
    """Check that the executed notebook at ``path`` is valid JSON (`_NotPublished` if not: papermill was stopped
    part-way through writing it), point its REPORT_DIR from ``staged_dir`` to ``final_dir`` (the injected-parameters
    cell and papermill's metadata) or, with ``drop_injected``, drop that cell, and write it back."""
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
    except ValueError as exc:  # nbformat's NotJSONError, or JSON that is not a notebook
        raise _NotPublished(name, f"the executed notebook papermill wrote is not valid JSON ({path.stat().st_size} "
                                  f"bytes: {str(exc).splitlines()[0][:200]})", None, dst, assets) from exc
    injected = [c for c in nb.cells if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    if drop_injected:
        nb.cells = [c for c in nb.cells if c not in injected]
        number_cells(nb)
    for cell in injected:
        cell.source = cell.source.replace(staged_dir, final_dir)
    parameters = nb.metadata.get("papermill", {}).get("parameters", {})
    if parameters.get("REPORT_DIR") == staged_dir:
        parameters["REPORT_DIR"] = final_dir
    nbformat.write(nb, path)


@contextlib.contextmanager
def _held_signals():
    """Within the block Ctrl-C, SIGTERM and SIGHUP wait: the first that comes is handled (by its own handler) as the
    block ends, so the renames inside happen all or none. Only Python handlers are held (in the main thread, where
    they run); an ignored or default disposition is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, *TERMINATING)}
    handlers = {signum: handler for signum, handler in handlers.items() if callable(handler)}
    for signum in handlers:
        signal.signal(signum, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    if came:
        handlers[came[0]](came[0], None)


# ------------------------------------------------------------------------------ CLI
def add_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``reproduce`` and its arguments on `hedgekit.cli`'s sub-parser set: the one place they are declared,
    ``python -m hedgekit reproduce`` the one way to run it."""
    p = subparsers.add_parser("reproduce", help="run the reproduction notebooks and write reports/summary.md",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--fast", action="store_true", help=f"{FAST_MODE} instead of FULL mode")
    p.add_argument("--only", action="append", default=None,
                   help="group (hib, spe) or notebook name/prefix; repeat or comma-separate")
    p.add_argument("--out", default="reports", help="output folder (default: reports)")
    p.add_argument("--inplace", action="store_true", help="write executed notebooks back into notebooks/")
    p.add_argument("--lessons-only", action="store_true",
                   help="re-run only the set-up and lesson cells of the selected notebooks (full mode unless --fast) "
                        "and write their outputs back into notebooks/, keeping the reproduction's outputs of the "
                        "last full run (after a lesson cell changed; recorded as lesson_rerun in the metadata)")
    p.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: python3)")
    p.add_argument("--timeout", type=count_arg(1), default=None, help="per-cell timeout in seconds")
    p.add_argument("--list", action="store_true", help="list the registered notebooks and exit")
    p.add_argument("--list-models", action="store_true",
                   help="list the checkpoints the notebooks need (cached or missing) and exit")
    p.add_argument("--train-missing", action="store_true",
                   help="train the checkpoints the selected notebooks need and do not find, then exit "
                        "(no notebook runs; respects --only and --fast). Where a step is launch-bound (cuda, "
                        "mps) the missing seeds of one point or MoG-1 spec train together as one stacked model, "
                        "each saved as its own checkpoint")
    p.add_argument("--jobs", type=count_arg(1), default=1,
                   help="with --train-missing: models trained side by side, in worker processes of one torch "
                        "thread each (default: 1, in this process); on cuda the N processes share the one GPU, "
                        "each with a CUDA context of its own. More than the usable cores, or than the available "
                        f"memory holds at {WORKER_MEMORY / 2**30:.0f} GiB per worker, is lowered to that, with a "
                        "one-line note")
    p.add_argument("--plan", action="store_true",
                   help="list the models the selected notebooks need that neither this machine's cache nor the "
                        "ledger holds, in training order: first those that bring a spec to 3 seeds, then to 5, the "
                        "cheapest estimated first within each (model, tier, estimated and cumulative minutes); then "
                        "exit, unless --train-missing is given too")
    p.add_argument("--budget", type=number_arg(0.0), default=None, metavar="MINUTES",
                   help="with --train-missing: train in --plan order, starting a model only if the minutes spent so "
                        "far plus its estimate fit in MINUTES; stop starting new ones when none fits")
    p.add_argument("--audit", type=count_arg(1), default=None, metavar="K",
                   help="retrain K models drawn at random from the ledger from scratch (in memory; on --device), "
                        "and check each measure against the 95%% prediction interval of the ledger's other seeds of "
                        "its spec; exit 1 if one lies outside. With --only, drawn among the selected notebooks' "
                        "models")
    p.add_argument("--audit-seed", type=count_arg(0), default=None, metavar="S",
                   help="with --audit: the seed of the draw (default: a fresh one, printed)")
    p.add_argument("--record-cached", action="store_true",
                   help="write into the ledger the measures of every model the selected notebooks use whose "
                        "checkpoint this machine holds and the ledger does not (trained by 'train', in a notebook "
                        "or on another machine): its trainer's, and those the notebooks measure on it (e.g. the "
                        "number line's), then exit")
    p.add_argument("--one-by-one", action="store_true",
                   help="with --train-missing: train every model alone, seeds of one spec included, also where a "
                        "step is launch-bound (to compare the times of the two paths)")
    p.add_argument("--device", type=device_arg, default="auto",
                   help="where missing models train, with --train-missing and in the notebooks (their DEVICE "
                        "parameter): cpu, cuda, cuda:N, mps or auto (default: cuda if available, else mps, else cpu)")
    p.add_argument("--times-to", default=None, metavar="FILE",
                   help="also write the time table (<out>/times.md: each model trained by --train-missing and each "
                        "notebook run, seconds and device) into FILE, between its lines "
                        f"'{times.BEGIN}' and '{times.END}' (e.g. docs/speed.md)")
    p.set_defaults(fn=_cmd)
    return p


def _cmd(a) -> int:
    if a.list:
        for group, names in catalog.NOTEBOOKS.items():
            print(f"{group}: {', '.join(names) if names else '(none registered)'}")
        return 0
    if a.lessons_only:
        return _refresh_lessons(a)
    if a.budget is not None and not a.train_missing:
        raise InputError("--budget applies to --train-missing: add it to train within the budget, or use --plan to "
                         "see the order and the minutes")
    if a.audit_seed is not None and a.audit is None:
        raise InputError("--audit-seed applies to --audit K")
    if a.audit is not None:
        from hedgekit.papers.url import recipe  # a paper: only in the command that needs it (tests/test_imports.py)

        register_url_runs(recipe)  # the ledger's URL records rebuild as URL runs, which the URL paper defines
        models = None if a.only is None else {spec.name for _, spec in notebook_models(a.only, a.fast)}
        return audit(a.audit, a.audit_seed, device=str(resolve_device(a.device)), models=models,
                     only=",".join(a.only or ()))
    if a.record_cached:
        specs = [spec for _, spec in notebook_models(a.only, a.fast)]
        written, passed = record_cached(specs)
        measured, not_measured = record_cached_measures(specs)
        written, passed = written + measured, passed + not_measured
        for rec in written:
            print(f"[ledger] recorded {rec['model']} ({rec['group']}, trained on {rec['device']})")
        for line in passed:
            print(f"[ledger] not recorded: {line}")
        print(f"[ledger] {len(written)} record(s) written, {len(passed)} not recorded")
        return 0
    if a.times_to is not None:
        times.check_marked(a.times_to)  # before anything runs: a long run must not fail at its end
    if a.list_models or a.train_missing or a.plan:
        pairs = todo = notebook_models(a.only, a.fast)
    if a.plan or a.budget is not None:
        rows = plan(pairs)
        if a.plan:
            print("\n".join(plan_lines(rows)))
        if a.budget is not None:  # the plan's models, in its order
            todo = [("plan", row.spec) for row in rows]
    if a.list_models or (a.train_missing and a.budget is None):
        held = _held_in_ledger(pairs, a.only, a.fast)
    if a.list_models:
        _list_models(pairs, held)
    if a.train_missing:
        if a.budget is None and held:  # (the plan's models are missing from the ledger already)
            todo = [(nb, spec) for nb, spec in pairs if spec.name not in held]
            print(f"[train] {len(held)} seed model{'s' if len(held) != 1 else ''} left out: the notebooks read "
                  "them from the ledger, which holds them (their checkpoints are not needed)")
        result = train_missing(todo, a.jobs, device=a.device, stack=not a.one_by_one, budget_minutes=a.budget)
        times.record_training(a.out, result)
        print(f"[train] time table: {times.write_times(a.out, a.times_to)}")
        return 1 if result["failed"] or result["lost"] or result["unrecorded"] else 0
    if a.list_models or a.plan:
        return 0
    summary = reproduce(fast=a.fast, only=a.only, out_dir=a.out, inplace=a.inplace, kernel=a.kernel,
                        timeout=a.timeout, device=a.device)
    print(f"[reproduce] time table: {times.write_times(a.out, a.times_to)}")
    ran = set(select(a.only))  # carried-over notebooks of earlier calls do not decide this exit code
    runs = json.loads((summary.parent / "run.json").read_text())["runs"]
    return 0 if all(r["status"] == "ok" for r in runs if r["notebook"] in ran) else 1


def _refresh_lessons(a) -> int:
    """``--lessons-only``: `hedgekit.repro.orders.refresh_lesson` on each selected notebook that has a lesson."""
    import nbformat

    for name in select(a.only):
        path = notebook_dir() / name
        if not any(c.cell_type == "markdown" and LESSON_HEADING.search(c.source)
                   for c in nbformat.read(path, as_version=4).cells):
            print(f"[lessons] {name}: no lesson, left as it is")
            continue
        seconds = refresh_lesson(path, fast=a.fast, kernel=a.kernel, timeout=a.timeout or 1800)
        print(f"[lessons] {name}: set-up and lesson re-run in {seconds:.0f} s, outputs written back")
    return 0


def _held_in_ledger(pairs: Sequence[tuple[str, Spec]], only, fast: bool) -> set[str]:
    """The names of the models of ``pairs`` that the selected notebooks read from the ledger
    (`hedgekit.repro.catalog.ledger_read_models`) and whose every group it holds (`recorded_seeds`): their
    checkpoints are not needed."""
    read = catalog.ledger_read_models(only, fast)
    return {spec.name for _, spec in pairs if spec.name in read and spec.seed in recorded_seeds(spec)}


def _list_models(pairs: Sequence[tuple[str, Spec]], in_ledger: set[str]) -> None:
    """``--list-models``: each notebook's checkpoints, shipped, cached, in the ledger (``in_ledger``: read from it,
    `_held_in_ledger`) or missing, and the time the missing take."""
    print(f"{'notebook':<34} {'checkpoint':<44} status")
    seen: dict[str, str] = {}
    missing_seconds = 0
    for nb, spec in pairs:
        path = find_checkpoint(spec)
        status = ("shipped" if path.parent == SHIPPED_DIR else "cached") if path is not None else (
            "in the ledger" if spec.name in in_ledger else "missing")
        print(f"{Path(nb).stem:<34} {spec.name:<44} {status}")
        if spec.name not in seen and status == "missing":
            missing_seconds += estimated_seconds(spec)
        seen[spec.name] = status
    n_missing = sum(s == "missing" for s in seen.values())
    n_ledger = sum(s == "in the ledger" for s in seen.values())
    print(f"{len(seen)} distinct checkpoints: {len(seen) - n_missing - n_ledger} cached or shipped, "
          + (f"{n_ledger} in the ledger (the notebooks read their records; no checkpoint needed), " if n_ledger else "")
          + f"{n_missing} missing"
          + (f" (~{missing_seconds / 60:.0f} min to train on 2 CPU cores, one at a time)" if n_missing else ""))
