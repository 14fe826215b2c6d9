"""``reproduce --train-missing``: the checkpoints the selected notebooks need, trained side by side.

`train_missing` trains what `hedgekit.zoo.find_checkpoint` does not find: in this process, or in a pool of worker
processes of one torch thread each, sized by `job_limit` (cores and memory). Where a step is paid for by its kernel
launches (`hedgekit.hardware.launch_bound`: CUDA, MPS), the seeds of one spec train together as one stacked model
(`hedgekit.zoo.seed_sets`); on the CPU each model trains alone, as every recorded result was trained. Every model's
seconds and device are recorded (``result["models"]``) for the kit's time table (`hedgekit.repro.times`), and the
measures its checkpoint holds go into the ledger (`hedgekit.zoo.ledger`) as soon as it is trained, so an interrupted
run keeps the evidence of what it finished, and so does one whose worker process dies: that worker's model is
reported lost (with the signal or exit code that ended it) and the others go on. With a budget (``reproduce
--budget``) a model starts only if its estimate (`hedgekit.repro.plan.estimated_seconds`) ends within it.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import time
from multiprocessing import connection
from typing import TYPE_CHECKING, Sequence

from hedgekit import zoo
from hedgekit.checks import check_count, resolve_device
from hedgekit.commands import TERMINATING
from hedgekit.errors import StorageError
from hedgekit.hardware import launch_bound
from hedgekit.paths import data_dir
from hedgekit.repro.measured import measure_records
from hedgekit.repro.plan import estimated_seconds
from hedgekit.zoo import find_checkpoint, ledger
from hedgekit.zoo.seed_sets import seed_sets, train_seed_set

if TYPE_CHECKING:
    from hedgekit.zoo import Spec

__all__ = ["WORKER_MEMORY", "job_limit", "train_missing"]

clock = time.monotonic  # the wall clock a budget is spent on (`train_missing`, `_train_job`; tests replace it)

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
    one per `WORKER_MEMORY` of available memory (`available_memory`), at least 1 (with ``--jobs 1000`` and no
    cap, 165 workers held ~20 GB and the out-of-memory killer broke the pool).

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


VMSTAT = "/proc/vmstat"  # oom_kill: how many processes the kernel's out-of-memory killer has ended since boot


def _init_worker() -> None:
    """Start of a `train_missing` worker process: one torch thread, so N workers share N cores. Ctrl-C and SIGHUP
    are the parent's to handle (it ends the workers and prints the one line of `hedgekit.commands.run_command`): a
    terminal's Ctrl-C or hang-up reaches every process of its foreground group, so a worker ignores both instead of
    printing a traceback of its own or dying before the parent can say which model it held. SIGTERM (the parent's
    ``terminate``) ends it at once: a forked worker would otherwise inherit the parent's handler
    (`hedgekit.commands.Terminated`)."""
    import torch

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in TERMINATING:
        signal.signal(signum, signal.SIG_DFL if signum == signal.SIGTERM else signal.SIG_IGN)
    torch.set_num_threads(1)


def _serve(conn) -> None:
    """A worker process's life (`_Worker`): `_init_worker`, then every job the parent sends through ``conn``, trained
    (`_train_job`) and answered with ("done", its records) or ("failed", the exception), until the parent sends None
    or is gone."""
    _init_worker()
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        try:
            answer = ("done", _train_job(*job))
        except Exception as exc:
            answer = ("failed", _portable(exc))
        try:
            conn.send(answer)
        except OSError:  # the parent is gone
            return


def _portable(exc: Exception) -> Exception:
    """``exc`` if it survives the pipe to the parent (pickled and read back), else a RuntimeError with its words."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _oom_kills() -> int | None:
    """The kernel's count of out-of-memory kills (``oom_kill`` of `VMSTAT`); None where it keeps none (macOS,
    Windows, kernels before 4.13)."""
    try:
        with open(VMSTAT) as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _death(exitcode: int, kills_before: int | None) -> str:
    """How a worker process ended, in words that follow "its worker process": "was killed by signal 9 (SIGKILL)",
    "exited with code 1". A SIGKILL is said to be the out-of-memory killer's only when the kernel's count of such
    kills (`_oom_kills`) rose since ``kills_before``, taken when the worker's job started."""
    if exitcode >= 0:
        return f"exited with code {exitcode}"
    try:
        name = f" ({signal.Signals(-exitcode).name})"
    except ValueError:
        name = ""
    how = f"was killed by signal {-exitcode}{name}"
    kills = _oom_kills()
    if -exitcode == signal.SIGKILL and kills is not None and kills_before is not None and kills > kills_before:
        how += (f": out of memory (the kernel's out-of-memory killer; each worker needs up to "
                f"{WORKER_MEMORY / 2**30:.0f} GiB, try a smaller --jobs)")
    return how


class _Worker:
    """One worker process of `_run_pool` (`_serve`) and the pipe to it: `give` sends it a job, `answer` says what
    became of it. The parent hands a job only to a worker that has none, so a job is either in a worker (``job``)
    or not started."""

    def __init__(self, context):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), name="hedgekit-train-worker")
        self.process.start()
        child.close()
        self.pid, self.job, self._kills = self.process.pid, None, None

    def give(self, specs: Sequence[Spec], device: str) -> None:
        self.job, self._kills = list(specs), _oom_kills()
        self.conn.send((self.job, device))

    def handles(self) -> list:
        """What `_run_pool` waits on: its answer and its end."""
        return [self.conn, self.process.sentinel]

    def answer(self) -> tuple[str, object] | None:
        """("done", records) or ("failed", exception) for its job; ("died", how it ended, `_death`) once its process
        ended without answering (``job`` still names what it held; None: it died between jobs); None while
        neither."""
        if self.job is not None and self.conn.poll():
            try:
                return self.conn.recv()
            except (EOFError, OSError):  # the process ended before it answered
                self.process.join(10)
        if self.process.is_alive():
            return None
        self.process.join()
        return "died", _death(self.process.exitcode, self._kills)

    def stop(self) -> None:
        """Tell an idle worker to end, and wait for it (`end` if it does not within 10 s)."""
        try:
            self.conn.send(None)
        except OSError:  # already gone
            pass
        self.process.join(10)
        self.end()

    def terminate(self) -> None:
        """Send the process SIGTERM (which ends it: `_init_worker`), without waiting."""
        if self.process.is_alive():
            self.process.terminate()

    def end(self) -> None:
        """End the process now (SIGTERM, SIGKILL after 10 s) and wait for it."""
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


def _remove_temporary_files(pids: Sequence[int]) -> None:
    """Remove the temporary files that worker processes ``pids``, stopped in the middle of a write, left in the cache
    (`hedgekit.checks.atomic_write` names them ``<file>.<pid>.tmp``; the file itself is written whole or not at
    all)."""
    root = data_dir()
    for pid in pids:
        for tmp in root.rglob(f"*.{pid}.tmp") if root.is_dir() else ():
            tmp.unlink(missing_ok=True)


def _train_job(specs: Sequence[Spec], device: str = "cpu") -> list[dict]:
    """Train (and cache) one job on ``device``: one spec with `hedgekit.zoo.load_or_train`, or a seed set (several
    seeds of one spec) stacked with `hedgekit.zoo.seed_sets.train_seed_set`; runs in a worker or in this process.
    Returns one record per model: name, seconds (of the job, for a seed set), source, device, ``stacked`` (how many
    seeds trained together: 1 alone) and ``records``, the ledger records of the measures its checkpoint holds
    (`hedgekit.zoo.ledger.build_record`) and of the groups the notebooks measure on it
    (`hedgekit.repro.measured.measure_records`), which the parent process writes (`_Tally.done`); ``unmeasured``
    says why the latter are missing when measuring failed (the model stays trained and cached). Each record of a
    model trained now holds ``job_seconds``: its share of the job's training (all of it alone, an even share in a
    seed set) and its own measuring, in wall seconds."""
    t0 = clock()
    if len(specs) > 1:
        trained = train_seed_set(specs, device)
    else:
        trained = [zoo.load_or_train(specs[0], progress=False, device=device)]
    seconds = clock() - t0
    out = []
    for spec, (model, meta) in zip(specs, trained):
        t1 = clock()
        measured = ledger.checkpoint_measures(spec, meta)
        records = [ledger.build_record(spec, *measured, meta, meta["path"])] if measured and meta.get("path") else []
        unmeasured = ""
        if meta.get("source") == "trained now":
            try:
                records += measure_records(spec, model, meta)
            except Exception as exc:  # any failure: reported with the model, which stays trained and cached
                unmeasured = f"measuring it failed ({type(exc).__name__}: {exc}); `reproduce --record-cached` retries"
            job_seconds = round(seconds / len(specs) + clock() - t1, 1)
            records = [{**r, "job_seconds": job_seconds} for r in records]
        out.append({"name": spec.name, "seconds": seconds, "source": meta.get("source", ""),
                    "device": meta.get("device", device), "stacked": len(specs), "records": records,
                    "unmeasured": unmeasured})
    return out


class _Tally:
    """What `train_missing` has finished: ``result`` (trained, cached, failed, lost with a worker that died, the
    models' records), the names ended, and the progress lines."""

    def __init__(self, missing: int, cached: list[str], echo):
        self.missing, self.echo, self.ended = missing, echo, []
        self.result: dict = {"trained": [], "cached": cached, "failed": {}, "lost": {}, "unrecorded": {},
                             "over_budget": [], "models": [], "seconds": 0.0}

    def failed(self, name: str, exc: BaseException) -> None:
        self.ended.append(name)
        message = f"{type(exc).__name__}: {exc}".strip()
        self.result["failed"][name] = message
        self.echo(f"[train] {name}: FAILED ({len(self.ended)}/{self.missing}) — {message.splitlines()[0][:300]}")

    def lost(self, specs: Sequence[Spec], pid: int, how: str, beside: Sequence[str], waiting: int) -> None:
        """The models of a job whose worker process ``pid`` died in training (``how``: `_death`), not saved; the line
        names them, the models ``beside`` them in the other workers (they train on) and how many are ``waiting``
        (they go on in the workers left and a new one)."""
        names = [spec.name for spec in specs]
        self.ended += names
        for name in names:
            self.result["lost"][name] = f"its worker process (pid {pid}) {how}"
        self.echo(f"[train] {', '.join(names)}: LOST ({len(self.ended)}/{self.missing}) — its worker process (pid "
                  f"{pid}) {how} in the middle of training; not saved"
                  + (f". Training on beside it: {', '.join(beside)}" if beside else "")
                  + (f". {waiting} not started yet: they go on, a new worker taking its place" if waiting else ""))

    def done(self, rec: dict) -> None:
        """A model ended: counted, and the measures of one trained now written into the ledger
        (`hedgekit.zoo.ledger.append`; a conflict or an unwritable ledger is reported, under ``unrecorded``)."""
        rec = dict(rec)
        records, unmeasured = rec.pop("records", []), rec.pop("unmeasured", "")
        self.ended.append(rec["name"])
        trained = rec["source"] == "trained now"  # else cached meanwhile (e.g. by another run)
        self.result["trained" if trained else "cached"].append(rec["name"])
        if trained:
            self.result["models"].append(rec)
        stacked = f", {rec['stacked']} seeds stacked" if rec["stacked"] > 1 else ""
        self.echo(f"[train] {rec['name']}: {rec['seconds']:.0f} s, {rec['source']}{stacked} "
                  f"({len(self.ended)}/{self.missing})")
        for record in records if trained else ():
            try:
                ledger.append(record)
            except (ledger.LedgerConflict, StorageError) as exc:
                self.result["unrecorded"][rec["name"]] = str(exc)
                self.echo(f"[train] {rec['name']}: NOT RECORDED in the ledger ({record['group']}) — {exc}")
        if trained and unmeasured:
            self.result["unrecorded"][rec["name"]] = unmeasured
            self.echo(f"[train] {rec['name']}: its notebook measures NOT RECORDED in the ledger — {unmeasured}")

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
                + (f", {len(r['lost'])} lost with a worker process that died" if r["lost"] else "")
                + (f"; stopped in training, not saved: {', '.join(training)}" if training else "")
                + (f"; {left} not started" if left > 0 else ""))


def _jobs(todo: Sequence[Spec], device: str, stack: bool) -> list[list[Spec]]:
    """The jobs of ``todo``: with ``stack``, its seed sets stacked where the device is launch-bound
    (`hedgekit.hardware.launch_bound`, `hedgekit.zoo.seed_sets.seed_sets`); else one spec per job."""
    return seed_sets(todo) if stack and launch_bound(device) else [[spec] for spec in todo]


def _estimate(specs: Sequence[Spec]) -> float:
    """Seconds a job is expected to take: its models' estimates together (`hedgekit.repro.plan.estimated_seconds`, on
    the CPU: from the ledger's times where it has them)."""
    return float(sum(estimated_seconds(spec) for spec in specs))


def _take(pending: list[tuple[int, list[Spec]]], deadline: float | None) -> tuple[int, list[Spec]] | None:
    """The next job to start, removed from ``pending``: its first; with a ``deadline`` (a `clock` time), its first
    whose estimate (`_estimate`) ends by then; None when none does."""
    for i, (_, specs) in enumerate(pending):
        if deadline is None or clock() + _estimate(specs) <= deadline:
            return pending.pop(i)
    return None


def _run_pool(jobs: list[list[Spec]], device: str, workers: int, tally: _Tally, deadline: float | None) -> None:
    """The jobs in up to ``workers`` worker processes (`_Worker`): forked on the CPU, spawned on CUDA (CUDA cannot
    be used in a forked child), each GPU worker with a CUDA context of its own. A job is handed to a worker when it
    is free (`_take`, so a budget's ``deadline`` is judged when the job can start).

    A worker that dies (the out-of-memory killer, a ``kill -9``) takes only its own job with it (`_Tally.lost`,
    with the signal or exit code); the other workers train on, and the jobs not started go on in a new worker.
    Ctrl-C, SIGTERM or SIGHUP ends every worker first and names the models they held (``kept``)."""
    context = multiprocessing.get_context("spawn" if device.startswith("cuda") else None)
    pending, crew = list(enumerate(jobs)), []
    try:
        while True:
            for worker in [w for w in crew if w.job is None] + [None] * (workers - len(crew)):
                if (job := _take(pending, deadline)) is None:
                    break
                if worker is None:
                    worker = _Worker(context)
                    crew.append(worker)
                worker.give(job[1], device)
            if all(w.job is None for w in crew):
                break
            answers = [(w, answer) for w in list(crew) if (answer := w.answer()) is not None]
            if not answers:
                connection.wait([handle for w in crew for handle in w.handles()])
                continue
            for worker, (kind, value) in answers:
                specs, worker.job = worker.job, None
                if kind == "died":
                    crew.remove(worker)
                    worker.end()
                    _remove_temporary_files([worker.pid])
                    beside = [s.name for w in crew if w.job for s in w.job]
                    if specs:
                        tally.lost(specs, worker.pid, value, beside, sum(len(job) for _, job in pending))
                    else:
                        tally.echo(f"[train] a worker process (pid {worker.pid}) that held no model {value}")
                else:
                    tally.job(specs, value if kind == "done" else None, value if kind == "failed" else None)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM or SIGHUP: end the workers before anything else
        training = [s.name for w in crew if w.job for s in w.job]
        _end_workers(crew)
        interrupt.kept, interrupt.again = tally.kept(training), AGAIN
        raise
    except BaseException:
        _end_workers(crew)
        raise
    for worker in crew:
        worker.stop()
    tally.result["over_budget"] = [s.name for _, specs in pending for s in specs]


def _end_workers(crew: Sequence[_Worker]) -> None:
    """End every worker process of ``crew`` now and wait for them (`_Worker.end`), then remove the temporary files
    one stopped in the middle of a write left in the cache (`_remove_temporary_files`)."""
    for worker in crew:  # all at once, then each waited for
        worker.terminate()
    for worker in crew:
        worker.end()
    _remove_temporary_files([worker.pid for worker in crew])


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
    """Train every checkpoint of ``pairs`` (from `hedgekit.repro.catalog.notebook_models`) that `find_checkpoint`
    does not find, on ``device`` ("auto": `hedgekit.checks.resolve_device`, resolved once here).

    Specs are deduplicated by name (in listing order) before anything is dispatched, so none trains twice. On a
    launch-bound device the seeds of one spec form one job (`_jobs`; ``stack=False``: every model alone, e.g. to
    compare the two on a GPU, where the one-by-one path captures each step as a CUDA graph). With ``jobs`` > 1 (and
    more than one job) the jobs run in ``min(jobs, jobs to run)`` worker processes (`_run_pool`); otherwise in this
    process. More workers than `job_limit` allows (cores, memory) are lowered to it with a one-line note. A model
    that fails is reported and the others still train; so do they when a worker process dies (`_run_pool`: its model
    is reported lost, with the signal or exit code). Each model trained is recorded in the ledger as soon as it ends
    (`_Tally.done`). With ``budget_minutes`` the jobs start in the order given (``reproduce
    --budget`` gives `hedgekit.repro.plan.plan`'s), each only if the wall time spent so far plus its estimate
    (`hedgekit.repro.plan.estimated_seconds`) fits in the budget; a job that does not fit is passed
    over for a later one that does, and none starts once none fits. Returns ``{"trained": [...], "cached": [...],
    "failed": {name: message}, "lost": {name: how its worker process died}, "unrecorded": {name: why the ledger
    refused it}, "over_budget": [names not started], "models": [record of each model trained, `_train_job`],
    "seconds": wall time}``.

    Ctrl-C, SIGTERM or SIGHUP (`hedgekit.commands.Terminated`) ends every worker before the interrupt goes on
    (`_end_workers`: no orphan keeps training into the cache) and sets its ``kept``: the models trained, those
    stopped in training (not saved), those not started.
    """
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
         + (f", {len(result['lost'])} LOST with a worker process that died ("
            + "; ".join(f"{name}: {how}" for name, how in result["lost"].items()) + ")" if result["lost"] else "")
         + (f", {len(result['unrecorded'])} NOT RECORDED in the ledger" if result["unrecorded"] else "")
         + (f", {len(result['over_budget'])} over budget" if result["over_budget"] else "")
         + f"; wall time {result['seconds']:.0f} s")
    return result
