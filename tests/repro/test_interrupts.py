"""Ctrl-C, SIGTERM and SIGHUP during `python -m hedgekit reproduce`, with real subprocesses and real signals: the
workers and the notebook's kernel end with the command (no process survives it), nothing half-written is left, the
committed notebook is untouched, one line says what was kept, exit 128 + the signal's number (130, 143, 129). A
worker killed outright (``kill -9``) loses its own model only, named with its signal; the models finished before
keep their ledger records. And `results` refuses the notebook a real interrupted papermill run leaves.

The subprocesses run `hedgekit.cli.main` from a small launcher script that points the command at a test registry:
in `--train-missing` mode at specs whose training (a stand-in for `hedgekit.zoo.load_or_train`, inherited by the
forked workers) logs its start and then waits two minutes before writing a checkpoint, so the signal always
arrives in the middle of training (`STAGED`: each seed's stand-in does what the test needs of it); in notebook mode
at a tiny notebook that writes a report asset, touches a marker file and then sleeps. Each test waits for those
markers before it sends the signal.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads processes from /proc (Linux)")

TRAIN = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from hedgekit import cli, zoo
    from hedgekit.checks import write_bytes_atomic
    from hedgekit.paths import cache_path
    from hedgekit.papers import hib, spe, taha
    from hedgekit.repro import catalog, pool

    def slow_training(spec, progress=True, device="cpu", **_):
        with open(Path(os.environ["HEDGEKIT_DATA"]) / "started.log", "a") as f:
            f.write(f"{spec.name} {os.getpid()}\\n")
        time.sleep(120)  # never reached in these tests: the signal comes first
        write_bytes_atomic(cache_path("checkpoints", f"{spec.name}.pt"), b"stub")
        return None, {"source": "trained now"}

    zoo.load_or_train = slow_training
    catalog.NOTEBOOKS.clear()
    catalog.NOTEBOOKS["x"] = ["01_a.ipynb"]
    pool.job_limit = lambda: (2, "the test's 2 workers")  # 2 workers on any machine
    hib.experiments.notebook_specs = lambda nb, fast: [zoo.Spec(kind="point", preset="fast", seed=s)
                                                       for s in (901, 902, 903)]
    spe.experiments.notebook_specs = taha.experiments.notebook_specs = lambda nb, fast: []
    sys.exit(cli.main(sys.argv[1:]))
""")

STAGED = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from hedgekit import cli, zoo
    from hedgekit.paths import cache_path
    from hedgekit.papers import hib, spe, taha
    from hedgekit.repro import catalog, pool

    DATA = Path(os.environ["HEDGEKIT_DATA"])

    def staged_training(spec, progress=True, device="cpu", **_):
        with open(DATA / "started.log", "a") as f:
            f.write(f"{spec.seed} {os.getpid()}\\n")
        if spec.seed == 902:
            time.sleep(120)  # never reached: the test kills this worker first
        while spec.seed == 903 and not (DATA / "go").exists():  # trains on beside it, until the test says
            time.sleep(0.05)
        path = cache_path("checkpoints", f"{spec.name}.pt")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(spec.name.encode())
        return None, {"source": "trained now", "path": str(path), "device": "cpu", "train_seconds": 1.0,
                      "metrics": {"knn_corrupt": spec.seed / 1000}, "eval_images": 2000}

    zoo.load_or_train = staged_training
    catalog.NOTEBOOKS.clear()
    catalog.NOTEBOOKS["x"] = ["01_a.ipynb"]
    pool.job_limit = lambda: (2, "the test's 2 workers")
    pool.VMSTAT = str(DATA / "vmstat")  # the kernel's count of out-of-memory kills, as the test writes it
    hib.experiments.notebook_specs = lambda nb, fast: [zoo.Spec(kind="point", preset="fast", seed=s)
                                                       for s in (901, 902, 903, 904)]
    spe.experiments.notebook_specs = taha.experiments.notebook_specs = lambda nb, fast: []
    sys.exit(cli.main(sys.argv[1:]))
""")

NOTEBOOKS = textwrap.dedent("""
    import sys
    from pathlib import Path
    from hedgekit import cli
    from hedgekit.repro import catalog, reproduce as R

    folder = Path(sys.argv[1])
    catalog.NOTEBOOKS.clear()
    catalog.NOTEBOOKS["x"] = sorted(p.name for p in folder.glob("0*.ipynb"))
    R.notebook_dir = lambda: folder
    sys.exit(cli.main(sys.argv[2:]))
""")

SLOW_CELL = """\
import os, time
from pathlib import Path
from hedgekit.repro.report import Report
Report(REPORT_DIR, "slow").text("half", "written by the run that is interrupted")
Path(os.environ["MARKER"]).write_text(str(os.getpid()))
time.sleep(120)"""


def _fixture_notebook(path: Path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('FAST = False\nREPORT_DIR = ""\nDEVICE = "auto"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), params] + [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children, their children, ...), from /proc."""
    parents = {int(p.name): _ppid(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _default_signals() -> None:
    """In the child before it runs: Ctrl-C's and SIGHUP's default dispositions, unblocked. An ignored or blocked
    signal is inherited through fork and exec (a shell that starts pytest in the background without job control
    ignores SIGINT, ``nohup`` ignores SIGHUP; a test or library earlier in the same worker may have ignored or blocked
    one): the command under test would then rightly leave it ignored, never see the signal these tests send, and the
    test would time out instead of testing it."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGHUP})


def _start(script: str, tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    launcher = tmp_path / "launch.py"
    launcher.write_text(script)
    return subprocess.Popen([sys.executable, str(launcher), *args], cwd=tmp_path, text=True,
                            preexec_fn=_default_signals,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "HEDGEKIT_DATA": str(tmp_path / "data"), **(env or {})})


def _wait_until(ready, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"never got ready (exit {proc.returncode}):\n{out[-2000:]}\n{err[-3000:]}")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen, signum: int) -> tuple[set[int], str, str]:
    """Send ``signum``; returns (the processes below it just before, stdout, stderr) once it exited."""
    below = _descendants(proc.pid)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    return below, out, err


def _no_survivor(pids: set[int]) -> None:
    deadline = time.monotonic() + 5  # SIGKILLed processes are reaped by init asynchronously
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)], "processes survived the command"


@pytest.mark.parametrize("signum, code, how", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                               (signal.SIGINT, 130, "interrupted"),
                                               (signal.SIGHUP, 129, "terminated (SIGHUP)")])
def test_a_signal_during_train_missing_ends_the_workers_and_names_the_models(tmp_path, signum, code, how):
    """The faults: SIGTERM, and later SIGHUP (a closed terminal), killed the parent alone (exit 143 / 129, no word)
    and both workers trained on for minutes as orphans, writing into the cache; Ctrl-C's line spoke of notebooks."""
    data = tmp_path / "data"
    data.mkdir()
    proc = _start(TRAIN, tmp_path, "reproduce", "--train-missing", "--fast", "--jobs", "2")
    log = data / "started.log"
    _wait_until(lambda: log.is_file() and len(log.read_text().splitlines()) == 2, proc)
    workers = {int(line.split()[1]) for line in log.read_text().splitlines()}
    below, out, err = _stop(proc, signum)
    assert workers <= below and proc.pid not in workers
    _no_survivor(below)
    assert proc.returncode == code, err
    training = sorted(line.split()[0] for line in log.read_text().splitlines())
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith(f"{how}: models: 0 of the 3 missing trained and cached; stopped in training, "
                               "not saved: ")
    assert sorted(lines[0].split("not saved: ")[1].split("; ")[0].split(", ")) == training  # not the queued one
    assert lines[0].endswith("; 1 not started; run `python -m hedgekit reproduce --train-missing --fast --jobs 2` "
                             "again to train the rest (the cached ones are not trained again)")
    assert "notebook" not in err
    time.sleep(1)  # no orphan writes into the cache afterwards either
    assert sorted(p.name for p in data.rglob("*")) == ["started.log"]


def test_kill_9_of_one_worker_loses_its_model_alone_and_the_others_train_on(tmp_path):
    """The fault: ``kill -9`` of one worker of `reproduce --train-missing --jobs 2` printed a FAILED line for every
    model left ("a worker process died: out of memory? ..."), the other worker's and those never started too, and
    named none of them for what it was. Now, with real workers: 901 trains and is recorded; 902's worker is killed;
    903 trains on in the other worker, beside it; 904, not started then, trains in a new worker. The line names
    902 and its signal (no word of memory: the kernel counted no out-of-memory kill), 903 beside it and the one not
    started; the summary counts 3 trained and 1 lost; every model trained has its ledger record; exit 1."""
    from hedgekit.zoo import ledger

    data, folder = tmp_path / "data", tmp_path / "ledger"
    data.mkdir()
    (data / "vmstat").write_text("oom_kill 0\n")
    proc = _start(STAGED, tmp_path, "reproduce", "--train-missing", "--fast", "--jobs", "2",
                  env={"HEDGEKIT_LEDGER": str(folder)})
    log = data / "started.log"

    def started() -> dict[int, int]:
        return dict(map(int, line.split()) for line in log.read_text().splitlines()) if log.is_file() else {}

    _wait_until(lambda: {901, 902, 903} <= set(started()), proc)
    below = _descendants(proc.pid)
    os.kill(started()[902], signal.SIGKILL)
    _wait_until(lambda: 904 in started(), proc)  # not started when 902's worker died: it goes on
    (data / "go").touch()
    out, err = proc.communicate(timeout=120)
    _no_survivor(below | _descendants(proc.pid))
    assert proc.returncode == 1, err
    pids = started()
    assert pids[903] == pids[901] != pids[902] and pids[904] not in (pids[901], pids[902])  # a new worker
    name = "point-n2-d2-fast-s{}".format
    assert (f"[train] {name(902)}: LOST (2/4) — its worker process (pid {pids[902]}) was killed by signal 9 "
            f"(SIGKILL) in the middle of training; not saved. Training on beside it: {name(903)}. 1 not started yet: "
            "they go on, a new worker taking its place") in out.splitlines()
    assert (f"[train] 3 trained, 0 already cached, 1 LOST with a worker process that died ({name(902)}: its worker "
            f"process (pid {pids[902]}) was killed by signal 9 (SIGKILL)); wall time") in out
    assert "FAILED" not in out and "memory" not in out and "Traceback" not in err
    assert sorted(r["model"] for r in ledger.records("hib", folder=folder)) == [name(s) for s in (901, 903, 904)]
    assert sorted(p.name for p in (data / "checkpoints").iterdir()) == [f"{name(s)}.pt" for s in (901, 903, 904)]


@pytest.mark.parametrize("signum, code, how, inplace", [(signal.SIGTERM, 143, "terminated (SIGTERM)", True),
                                                        (signal.SIGINT, 130, "interrupted", False),
                                                        (signal.SIGHUP, 129, "terminated (SIGHUP)", True)])
def test_a_signal_during_a_notebook_leaves_every_written_file_as_it_was(tmp_path, signum, code, how, inplace):
    """The faults: Ctrl-C during `reproduce --fast --only 02 --inplace` left the committed notebook with 9 of 32 code
    cells run and papermill's injected-parameters cell; without --inplace the half-run notebook was left in --out;
    SIGHUP (a closed terminal) ended the command with no word and left ``.<notebook>.<pid>.partial.ipynb`` in
    notebooks/, which no later run removed and the README's pytest then collected. Now the first notebook finishes
    and is written, the second is interrupted: its committed notebook, its earlier executed copy and its earlier
    report assets are byte for byte as before, no partial file is left (neither this run's nor those a killed run
    left: the second notebook's run removes them as it starts), the kernel is gone, and the line names the
    notebooks."""
    nbs, out = tmp_path / "nbs", tmp_path / "reports"
    nbs.mkdir()
    _fixture_notebook(nbs / "01_quick.ipynb", ["print('quick', FAST)"])
    _fixture_notebook(nbs / "02_slow.ipynb", [SLOW_CELL, "print('never')"])
    earlier_copy, earlier_assets = out / "notebooks" / "02_slow.ipynb", out / "assets" / "02_slow"
    earlier_copy.parent.mkdir(parents=True)
    earlier_copy.write_text('{"an earlier": "run"}')
    written = nbs if inplace else earlier_copy.parent
    (written / ".02_slow.4242.partial.ipynb").write_text("{")  # what a killed run of an earlier version left there
    (written / ".partial").mkdir()
    (written / ".partial" / "02_slow.ipynb").write_text("{")  # ... and of this one
    earlier_assets.mkdir(parents=True)
    (earlier_assets / "manifest.json").write_text('{"notebook": "02_slow", "entries": []}')
    before = {p: p.read_bytes() for p in (nbs / "02_slow.ipynb", earlier_copy, earlier_assets / "manifest.json")}
    marker = tmp_path / "kernel.pid"
    argv = ["reproduce", "--fast", "--out", str(out)] + (["--inplace"] if inplace else [])
    proc = _start(NOTEBOOKS, tmp_path, str(nbs), *argv, env={"MARKER": str(marker)})
    _wait_until(marker.is_file, proc)
    kernel = int(marker.read_text())
    below, stdout, err = _stop(proc, signum)
    assert kernel in below
    _no_survivor(below)
    assert proc.returncode == code, err
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(p.name for p in earlier_assets.iterdir()) == ["manifest.json"]  # the run's own asset is gone
    leftovers = [p for folder in (nbs, out) for p in folder.rglob("*") if "partial" in p.name or "previous" in p.name]
    assert leftovers == []
    quick = nbformat.read(nbs / "01_quick.ipynb" if inplace else out / "notebooks" / "01_quick.ipynb", as_version=4)
    assert "quick True" in quick.cells[-1].outputs[0]["text"]  # the finished notebook was written
    last = [line for line in err.strip().splitlines() if line.startswith(how)]
    dst = nbs / "02_slow.ipynb" if inplace else earlier_copy
    assert last == [f"{how}: notebooks: 1 of 2 finished and written (01_quick.ipynb); 02_slow.ipynb was running and "
                    f"was not written: {dst} and its report assets are as they were; run `python -m hedgekit "
                    f"{' '.join(argv)}` again to run the selected notebooks"], err
    assert "Traceback" not in err, err


def test_results_refuses_the_notebook_a_real_interrupted_run_leaves(tmp_path, monkeypatch, capsys):
    """papermill itself (what `reproduce` ran into --inplace before) interrupted by Ctrl-C mid-run: the notebook
    it leaves is refused by `results` with exit 2 and its name, with its injected-parameters cell and, once that
    is dropped, by its code cells that never ran."""
    from hedgekit.cli import main
    from hedgekit.repro import catalog, results

    _fixture_notebook(tmp_path / "in.ipynb", [SLOW_CELL, "print('never')"])
    partial, marker = tmp_path / "07_partial.ipynb", tmp_path / "kernel.pid"
    proc = subprocess.Popen([sys.executable, "-m", "papermill", "in.ipynb", partial.name, "-p", "FAST", "True"],
                            cwd=tmp_path, env={**os.environ, "MARKER": str(marker)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_signals)
    _wait_until(marker.is_file, proc)
    time.sleep(0.5)  # papermill saves the notebook after each cell: the one before the marker is in
    below, _out, _err = _stop(proc, signal.SIGINT)
    _no_survivor(below)
    monkeypatch.setattr(catalog, "NOTEBOOKS", {"x": [partial.name]})
    monkeypatch.setattr(results, "notebook_dir", lambda: tmp_path)
    assert main(["results", "--out", str(tmp_path / "results.md")]) == 2
    err = capsys.readouterr().err
    assert "07_partial.ipynb is a partial run: cell 3 is papermill's injected-parameters cell" in err
    nb = nbformat.read(partial, as_version=4)  # as --inplace writes a finished run back: no injected cell
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    nbformat.write(nb, partial)
    assert main(["results", "--out", str(tmp_path / "results.md")]) == 2
    err = capsys.readouterr().err
    assert re.search(r"07_partial.ipynb is a partial run: [12] of its 4 code cells did not run \(no execution count, "
                     r"from cell [34] on\)", err), err
    assert nbformat.read(partial, as_version=4).cells[-1].execution_count is None  # print('never') never ran
    assert not (tmp_path / "results.md").exists()
