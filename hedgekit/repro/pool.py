"""``reproduce --train-missing``: the checkpoints the selected notebooks need, trained side by side (issue 45 item 3,
issue 50 items 3-4).

`train_missing` trains what `hedgekit.zoo.find_checkpoint` does not find: in this process, or in a pool of worker
processes of one torch thread each, sized by `job_limit` (cores and memory). Where a step is paid for by its kernel
launches (`hedgekit.hardware.launch_bound`: CUDA, MPS), the seeds of one spec train together as one stacked model
(`hedgekit.zoo.seed_sets`); on the CPU each model trains alone, as every recorded result was trained. Every model's
seconds and device are recorded (``result["models"]``) for the kit's time table (`hedgekit.repro.times`), and the
measures its checkpoint holds go into the ledger (`hedgekit.zoo.ledger`) as soon as it is trained, so an interrupted
run keeps the evidence of what it finished. With a budget (``reproduce --budget``) a model starts only if its
estimate (`hedgekit.interactive.models.expected_train_seconds`) ends within it.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Sequence

from hedgekit.checks import check_count, resolve_device
from hedgekit.paths import data_dir

if TYPE_CHECKING:
    from hedgekit.zoo import Spec

__all__ = ["WORKER_MEMORY", "job_limit", "train_missing"]

clock = time.monotonic  # the wall clock a budget is spent on (`train_missing`; tests replace it)

WORKER_MEMORY = 3 * 2**30  # bytes one `train_missing` worker needs at its peak: measured, see `job_limit`
MEMINFO = "/proc/meminfo"  # MemAvailable: what the kernel can give new processes without swapping
AGAIN = "to train the rest (the cached ones are not trained again)"


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


_STARTED = None  # in a `train_missing` worker: one flag per job, set when the job's training starts


def _init_worker(started=None) -> None:
    """Start of a `train_missing` worker process: one torch thread, so N workers share N cores; Ctrl-C is the
    parent's to handle (it stops the workers and prints the one line of `hedgekit.commands.run_command`), so a
    worker ignores SIGINT instead of printing a traceback of its own. SIGTERM (the parent's ``terminate``) ends it
    at once: a forked worker would otherwise inherit the parent's handler (`hedgekit.commands.Terminated`), whose
    interrupt the pool's worker loop catches before taking the next job. ``started``: shared flags, one per job,
    that `_train_job` sets (a pool does not tell a job in training from one queued for the next worker)."""
    import torch

    global _STARTED
    _STARTED = started
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    torch.set_num_threads(1)


def _end_workers(pool) -> None:
    """End ``pool``'s worker processes now and wait for them (SIGTERM, SIGKILL after 10 s), cancel the jobs still
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


def _train_job(specs: Sequence[Spec], device: str = "cpu", index: int = 0) -> list[dict]:
    """Train (and cache) one job on ``device``: one spec with `hedgekit.zoo.load_or_train`, or a seed set (several
    seeds of one spec) stacked with `hedgekit.zoo.seed_sets.train_seed_set`; runs in a worker (where it sets flag
    ``index`` of `_STARTED` first) or in this process. Returns one record per model: name, seconds (of the job, for a
    seed set), source, device, ``stacked`` (how many seeds trained together: 1 alone) and ``record``, the ledger
    record of the measures its checkpoint holds (`hedgekit.zoo.ledger.build_record`; None if it holds none), which
    the parent process writes (`_Tally.done`)."""
    from hedgekit import zoo
    from hedgekit.zoo import ledger
    from hedgekit.zoo.seed_sets import train_seed_set

    if _STARTED is not None:
        _STARTED[index] = 1
    t0 = time.perf_counter()
    if len(specs) > 1:
        trained = train_seed_set(specs, device)
    else:
        trained = [zoo.load_or_train(specs[0], progress=False, device=device)]
    seconds = time.perf_counter() - t0
    out = []
    for spec, (_m, meta) in zip(specs, trained):
        measured = ledger.checkpoint_measures(spec, meta)
        record = ledger.build_record(spec, *measured, meta, meta["path"]) if measured and meta.get("path") else None
        out.append({"name": spec.name, "seconds": seconds, "source": meta.get("source", ""),
                    "device": meta.get("device", device), "stacked": len(specs), "record": record})
    return out


class _Tally:
    """What `train_missing` has finished: ``result`` (trained, cached, failed, the models' records), the names
    ended, and the progress lines."""

    def __init__(self, missing: int, cached: list[str], echo):
        self.missing, self.echo, self.ended = missing, echo, []
        self.result: dict = {"trained": [], "cached": cached, "failed": {}, "unrecorded": {}, "over_budget": [],
                             "models": [], "seconds": 0.0}

    def failed(self, name: str, exc: BaseException) -> None:
        self.ended.append(name)
        message = f"{type(exc).__name__}: {exc}".strip()
        if isinstance(exc, BrokenProcessPool):  # a worker was killed, most often by the out-of-memory killer
            message += (f" (a worker process died: out of memory? each needs up to {WORKER_MEMORY / 2**30:.0f} GiB; "
                        f"try a smaller --jobs)")
        self.result["failed"][name] = message
        self.echo(f"[train] {name}: FAILED ({len(self.ended)}/{self.missing}) — {message.splitlines()[0][:300]}")

    def done(self, rec: dict) -> None:
        """A model ended: counted, and the measures of one trained now written into the ledger
        (`hedgekit.zoo.ledger.append`; a conflict or an unwritable ledger is reported, under ``unrecorded``)."""
        from hedgekit.errors import StorageError
        from hedgekit.zoo import ledger

        rec = dict(rec)
        record = rec.pop("record", None)
        self.ended.append(rec["name"])
        trained = rec["source"] == "trained now"  # else cached meanwhile (e.g. by another run)
        self.result["trained" if trained else "cached"].append(rec["name"])
        if trained:
            self.result["models"].append(rec)
        stacked = f", {rec['stacked']} seeds stacked" if rec["stacked"] > 1 else ""
        self.echo(f"[train] {rec['name']}: {rec['seconds']:.0f} s, {rec['source']}{stacked} "
                  f"({len(self.ended)}/{self.missing})")
        if trained and record is not None:
            try:
                ledger.append(record)
            except (ledger.LedgerConflict, StorageError) as exc:
                self.result["unrecorded"][rec["name"]] = str(exc)
                self.echo(f"[train] {rec['name']}: NOT RECORDED in the ledger — {exc}")

    def job(self, specs, recs: list[dict] | None, exc: BaseException | None) -> None:
        for rec in recs or ():
            self.done(rec)
        for spec in specs if exc is not None else ():
            self.failed(spec.name, exc)

    def kept(self, training: Sequence[str]) -> str:
        """`run_command`'s line for an interrupted run: the models trained and cached, those stopped in training,
        those not started."""
        r, left = self.result, self.missing - len(self.ended) - len(training)
        return (f"models: {len(r['trained'])} of the {self.missing} missing trained and cached"
                + (f", {len(r['failed'])} failed" if r["failed"] else "")
                + (f"; stopped in training, not saved: {', '.join(training)}" if training else "")
                + (f"; {left} not started" if left > 0 else ""))


def _jobs(todo: Sequence[Spec], device: str, stack: bool) -> list[list[Spec]]:
    """The jobs of ``todo``: with ``stack``, its seed sets stacked where the device is launch-bound
    (`hedgekit.hardware.launch_bound`, `hedgekit.zoo.seed_sets.seed_sets`); else one spec per job."""
    from hedgekit.hardware import launch_bound
    from hedgekit.zoo.seed_sets import seed_sets

    return seed_sets(todo) if stack and launch_bound(device) else [[spec] for spec in todo]


def _estimate(specs: Sequence[Spec]) -> float:
    """Seconds a job is expected to take: its models' estimates together
    (`hedgekit.interactive.models.expected_train_seconds`)."""
    from hedgekit.interactive import models

    return float(sum(models.expected_train_seconds(spec) for spec in specs))


def _take(pending: list[tuple[int, list[Spec]]], deadline: float | None) -> tuple[int, list[Spec]] | None:
    """The next job to start, removed from ``pending``: its first; with a ``deadline`` (a `clock` time), its first
    whose estimate (`_estimate`) ends by then; None when none does."""
    for i, (_, specs) in enumerate(pending):
        if deadline is None or clock() + _estimate(specs) <= deadline:
            return pending.pop(i)
    return None


def _run_pool(jobs: list[list[Spec]], device: str, workers: int, tally: _Tally, deadline: float | None) -> None:
    """The jobs in ``workers`` worker processes: forked on the CPU, spawned on CUDA (CUDA cannot be used in a forked
    child), each GPU worker with a CUDA context of its own. A job is handed to the pool when a worker is free
    (`_take`, so a budget's ``deadline`` is judged when the job can start). Ctrl-C or SIGTERM ends every worker
    first."""
    spawn = multiprocessing.get_context("spawn") if device.startswith("cuda") else None
    started = (spawn or multiprocessing).RawArray("b", len(jobs))  # `_init_worker`: set as each job starts
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(started,), mp_context=spawn)
    pending, futures = list(enumerate(jobs)), {}
    try:
        while True:
            while len(futures) < workers and (job := _take(pending, deadline)) is not None:
                futures[pool.submit(_train_job, job[1], device, job[0])] = job[1]
            if not futures:
                break
            future = next(as_completed(futures))
            exc = future.exception()
            tally.job(futures.pop(future), None if exc else future.result(), exc)
    except KeyboardInterrupt as interrupt:  # Ctrl-C or SIGTERM: end the workers before anything else
        _end_workers(pool)
        training = [s.name for specs, flag in zip(jobs, started) if flag for s in specs if s.name not in tally.ended]
        interrupt.kept, interrupt.again = tally.kept(training), AGAIN
        raise
    pool.shutdown()
    tally.result["over_budget"] = [s.name for _, specs in pending for s in specs]


def _run_here(jobs: list[list[Spec]], device: str, tally: _Tally, deadline: float | None) -> None:
    pending = list(enumerate(jobs))
    while (job := _take(pending, deadline)) is not None:
        specs = job[1]
        try:
            recs = _train_job(specs, device)
        except KeyboardInterrupt as interrupt:
            interrupt.kept, interrupt.again = tally.kept([s.name for s in specs]), AGAIN
            raise
        except Exception as exc:
            tally.job(specs, None, exc)
        else:
            tally.job(specs, recs, None)
    tally.result["over_budget"] = [s.name for _, specs in pending for s in specs]


def train_missing(pairs: Sequence[tuple[str, Spec]], jobs: int = 1, echo=print, device: str = "auto",
                  stack: bool = True, budget_minutes: float | None = None) -> dict:
    """Train every checkpoint of ``pairs`` (from `hedgekit.repro.reproduce.notebook_models`) that `find_checkpoint`
    does not find, on ``device`` ("auto": `hedgekit.checks.resolve_device`, resolved once here).

    Specs are deduplicated by name (in listing order) before anything is dispatched, so none trains twice. On a
    launch-bound device the seeds of one spec form one job (`_jobs`; ``stack=False``: every model alone, e.g. to
    compare the two on a GPU, where the one-by-one path captures each step as a CUDA graph). With ``jobs`` > 1 (and
    more than one job) the jobs run in ``min(jobs, jobs to run)`` worker processes (`_run_pool`); otherwise in this
    process. More workers than `job_limit` allows (cores, memory) are lowered to it with a one-line note (issue 45,
    item 3). A model that fails is reported and the others still train. Each model trained is recorded in the ledger
    as soon as it ends (`_Tally.done`). With ``budget_minutes`` the jobs start in the order given (``reproduce
    --budget`` gives `hedgekit.repro.plan.plan`'s), each only if the wall time spent so far plus its estimate
    (`hedgekit.interactive.models.expected_train_seconds`) fits in the budget; a job that does not fit is passed
    over for a later one that does, and none starts once none fits. Returns ``{"trained": [...], "cached": [...],
    "failed": {name: message}, "unrecorded": {name: why the ledger refused it}, "over_budget": [names not started],
    "models": [record of each model trained, `_train_job`], "seconds": wall time}``.

    Ctrl-C or SIGTERM (`hedgekit.commands.Terminated`) ends every worker before the interrupt goes on
    (`_end_workers`: no orphan keeps training into the cache) and sets its ``kept``: the models trained, those
    stopped in training (not saved; the workers flag each job they start), those not started.
    """
    from hedgekit.zoo import find_checkpoint

    jobs = check_count(jobs, "jobs")
    dev = str(resolve_device(device))
    distinct: dict[str, Spec] = {}
    for _nb, spec in pairs:
        distinct.setdefault(spec.name, spec)
    cached = [name for name, spec in distinct.items() if find_checkpoint(spec) is not None]
    todo = [spec for name, spec in distinct.items() if name not in cached]
    batches = _jobs(todo, dev, stack)
    workers, (limit, why) = min(jobs, len(batches)), job_limit()
    if workers > limit:
        echo(f"[train] --jobs {jobs} lowered to {limit}: {why}")
        workers = limit
    tally, t0 = _Tally(len(todo), cached, echo), time.perf_counter()
    deadline = None if budget_minutes is None else clock() + 60 * float(budget_minutes)
    if todo:
        sets = sum(len(b) > 1 for b in batches)
        echo(f"[train] {len(todo)} of {len(distinct)} checkpoints missing; training "
             + (f"in {workers} worker processes" if workers > 1 else "in this process") + f", on {dev}"
             + (f"; {sets} seed set{'s' if sets > 1 else ''} stacked" if sets else "")
             + (f"; budget {budget_minutes:g} min: a model starts only if its estimate ends within it"
                if budget_minutes is not None else ""))
    if workers > 1:
        _run_pool(batches, dev, workers, tally, deadline)
    else:
        _run_here(batches, dev, tally, deadline)
    result = tally.result
    result["seconds"] = time.perf_counter() - t0
    if result["over_budget"]:
        echo(f"[train] not started, their estimates do not fit the {budget_minutes:g}-minute budget: "
             f"{', '.join(result['over_budget'])}")
    echo(f"[train] {len(result['trained'])} trained, {len(result['cached'])} already cached"
         + (f", {len(result['failed'])} FAILED ({', '.join(result['failed'])})" if result["failed"] else "")
         + (f", {len(result['unrecorded'])} NOT RECORDED in the ledger" if result["unrecorded"] else "")
         + (f", {len(result['over_budget'])} over budget" if result["over_budget"] else "")
         + f"; wall time {result['seconds']:.0f} s")
    return result
