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

Notebooks register by group in `NOTEBOOKS` (or with `register`); ``--only`` takes
group names or notebook names.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from hedgekit.checks import count_arg, device_arg, number_arg, resolve_device
from hedgekit.errors import InputError
from hedgekit.paths import REPO_DIR
from hedgekit.repro import times
from hedgekit.repro.pool import WORKER_MEMORY, train_missing
from hedgekit.repro.report import read_manifest
from hedgekit.repro.summary import FAST_MODE, write_summary

if TYPE_CHECKING:
    from hedgekit.zoo import Spec

__all__ = ["NOTEBOOKS", "register", "notebook_dir", "select", "notebook_models", "run_notebook", "trained_in_run",
           "reproduce", "add_subcommand"]

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
    only = [s.strip() for item in only for s in item.split(",") if s.strip()]  # "--only 04,05", "--only 04 --only 05"
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
    load = _load()
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
    if load is not None:  # the machine's load beside the time it measured (issue 48 item 6): [start, end]
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

    Nothing is damaged by an interrupt (issue 45, item 4): a notebook runs into a temporary file beside its
    destination, which replaces the destination (the committed notebook with ``inplace``) only once the run
    finished; its report assets are set aside, not deleted, and put back if the run is interrupted. On Ctrl-C or
    SIGTERM the running notebook's kernel is ended, its temporary file removed, its assets put back, and the
    interrupt says which notebooks finished and which one was running (``kept``).
    """
    ran_on = str(resolve_device(device))  # "cuda" without CUDA: an InputError now, not a failure in every notebook
    out = Path(out_dir).resolve()
    src_dir = notebook_dir() if notebooks is None else Path(notebooks)
    names = select(only, registry)
    if not names:
        raise InputError("no notebook selected (the registry is empty?)")
    runs: list[dict] = []
    t_all = time.perf_counter()
    for name in names:
        echo(f"[reproduce] {name} ({'FAST' if fast else 'full'}) ...")
        params = {"FAST": bool(fast), "DEVICE": str(device)}
        rec = _run_one(src_dir / name, out, params, inplace, (kernel, timeout, progress), runs, len(names))
        rec["device"] = ran_on
        runs.append(rec)
        echo(f"[reproduce] {name}: {rec['status']} in {rec['seconds']:.0f} s" +
             (f" — {rec['error'].splitlines()[0][:200]}" if rec["error"] else "")
             + (f" (not written back; the executed notebook is {out / rec['output']})"
                if inplace and rec["status"] == "failed" else ""))
    summary = write_summary(runs, out, fast, time.perf_counter() - t_all, select(None, registry))
    echo(f"[reproduce] summary: {summary}")
    return summary


def _run_one(src: Path, out: Path, params: dict, inplace: bool, how: tuple, runs: list[dict], of: int) -> dict:
    """Run one notebook for `reproduce` into a temporary file beside its destination (``out/notebooks``, or ``src``
    with ``inplace``), then keep it (`_keep`), with its report assets in ``out/assets/<stem>``; returns its run
    record. ``params``: FAST and DEVICE (REPORT_DIR is added here); ``how``: (kernel, timeout, progress);
    ``runs``, ``of``: the records of the notebooks finished before it and how many run in all, for the line an
    interrupt prints."""
    stem = src.stem
    assets = out / "assets" / stem
    previous = _set_aside(assets)  # a fresh manifest per run; the last run's back if this one is interrupted
    dst = src if inplace else out / "notebooks" / src.name
    partial = dst.with_name(f".{stem}.{os.getpid()}.partial.ipynb")
    # Relative to the notebook's folder (papermill runs it there), so a notebook written back with
    # --inplace carries no machine-specific path in its injected-parameters cell.
    report_dir = os.path.relpath(assets, src.parent.resolve()) if src.parent.exists() else str(assets)
    try:
        rec = run_notebook(src, partial, {**params, "REPORT_DIR": report_dir}, *how)
    except KeyboardInterrupt as interrupt:
        partial.unlink(missing_ok=True)
        _put_back(assets, previous)
        finished = ", ".join(r["notebook"] for r in runs)
        interrupt.kept = (f"notebooks: {len(runs)} of {of} finished and written"
                          + (f" ({finished})" if finished else "") + f"; {src.name} was running and was not "
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
    return rec


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
                        "its spec; exit 1 if one lies outside")
    p.add_argument("--audit-seed", type=count_arg(0), default=None, metavar="S",
                   help="with --audit: the seed of the draw (default: a fresh one, printed)")
    p.add_argument("--record-cached", action="store_true",
                   help="write into the ledger the measures of every model the selected notebooks use whose "
                        "checkpoint this machine holds and the ledger does not (trained by 'train', in a notebook "
                        "or on another machine), then exit")
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
        for group, names in NOTEBOOKS.items():
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
        from hedgekit.repro.audit import audit

        return audit(a.audit, a.audit_seed, device=str(resolve_device(a.device)))
    if a.record_cached:
        from hedgekit.zoo.ledger import record_cached

        written, passed = record_cached(spec for _, spec in notebook_models(a.only, a.fast))
        for rec in written:
            print(f"[ledger] recorded {rec['model']} ({rec['group']}, trained on {rec['device']})")
        for line in passed:
            print(f"[ledger] not recorded: {line}")
        print(f"[ledger] {len(written)} record(s) written, {len(passed)} model(s) not recorded")
        return 0
    if a.times_to is not None:
        times.check_marked(a.times_to)  # before anything runs: a long run must not fail at its end
    if a.list_models or a.train_missing or a.plan:
        pairs = todo = notebook_models(a.only, a.fast)
    if a.plan or a.budget is not None:
        from hedgekit.repro.plan import plan, plan_lines

        rows = plan(pairs)
        if a.plan:
            print("\n".join(plan_lines(rows)))
        if a.budget is not None:  # the plan's models, in its order
            todo = [("plan", row.spec) for row in rows]
    if a.list_models:
        _list_models(pairs)
    if a.train_missing:
        result = train_missing(todo, a.jobs, device=a.device, stack=not a.one_by_one, budget_minutes=a.budget)
        times.record_training(a.out, result)
        print(f"[train] time table: {times.write_times(a.out, a.times_to)}")
        return 1 if result["failed"] or result["unrecorded"] else 0
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

    from hedgekit.repro.orders import LESSON_HEADING, refresh_lesson

    for name in select(a.only):
        path = notebook_dir() / name
        if not any(c.cell_type == "markdown" and LESSON_HEADING.search(c.source)
                   for c in nbformat.read(path, as_version=4).cells):
            print(f"[lessons] {name}: no lesson, left as it is")
            continue
        seconds = refresh_lesson(path, fast=a.fast, kernel=a.kernel, timeout=a.timeout or 1800)
        print(f"[lessons] {name}: set-up and lesson re-run in {seconds:.0f} s, outputs written back")
    return 0


def _list_models(pairs: Sequence[tuple[str, Spec]]) -> None:
    """``--list-models``: each notebook's checkpoints, shipped, cached or missing, and the time the missing take."""
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
