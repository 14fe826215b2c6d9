"""`hedgekit.commands.run_command`: how every command ends on SIGTERM and SIGHUP, with a real signal."""
from __future__ import annotations

import os
import signal

import pytest

from hedgekit.commands import Terminated, run_command


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_end_a_command_like_ctrl_c_and_the_handler_is_restored(capsys, signum, code):
    """SIGTERM (kill) and SIGHUP (a closed terminal) each end a command as Ctrl-C does, with exit 128 + its number.
    The signal starts at its default disposition whatever this process inherited (under ``nohup`` SIGHUP is ignored,
    and an ignored signal stays ignored: the test below)."""
    inherited = signal.signal(signum, signal.SIG_DFL)
    before = signal.getsignal(signum)
    cleaned = []

    def command(args):
        try:
            os.kill(os.getpid(), signum)  # a real signal, delivered to this (main) thread
            signal.sigtimedwait([], 1)  # never reached: the handler raised at the next bytecode
            return 0
        except KeyboardInterrupt as exc:  # what the commands' cleanup (worker pools, temp files) catches
            cleaned.append(type(exc))
            exc.kept, exc.again = "the 2 models trained before are cached", "to train the rest"
            raise

    try:
        assert run_command(command, None, ["reproduce", "--train-missing"]) == code
        assert cleaned == [Terminated]
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"terminated ({signal.Signals(signum).name}): the 2 models trained before are cached; run "
                       "`python -m hedgekit reproduce --train-missing` again to train the rest"]
        assert signal.getsignal(signum) == before  # the command's handler is not left behind
    finally:
        signal.signal(signum, inherited)


def test_a_hang_up_that_nohup_ignores_stays_ignored():
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what `nohup python -m hedgekit ...` starts with
    try:
        assert run_command(lambda args: 0 if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN else 1, None,
                           ["bench"]) == 0
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_ctrl_c_is_still_130_and_names_the_interrupt(capsys):
    def command(args):
        raise KeyboardInterrupt

    assert run_command(command, None, ["bench"]) == 130
    err = capsys.readouterr().err.strip()
    assert err.startswith("interrupted: nothing was written; run `python -m hedgekit bench`")


TRAIN = """
import os, sys, time
from pathlib import Path
from hedgekit import cli
from hedgekit.checks import atomic_write

def writing_forever(spec, progress=True, device="cpu", **_):  # stopped in the middle of writing its checkpoint
    with atomic_write(Path(os.environ["HEDGEKIT_DATA"]) / "checkpoints" / f"{spec.name}.pt") as tmp:
        tmp.write_bytes(b"half a checkpoint")
        Path(os.environ["MARKER"]).write_text("writing")
        time.sleep(120)

cli.load_or_train = writing_forever  # where `train` calls it
sys.exit(cli.main(sys.argv[1:]))
"""


def test_sigterm_to_python_m_hedgekit_train_leaves_no_partial_file_and_exits_143(tmp_path):
    """A real subprocess and a real signal: `train` (one process) ends on SIGTERM as on Ctrl-C."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    launcher, marker, data = tmp_path / "launch.py", tmp_path / "marker", tmp_path / "data"
    launcher.write_text(TRAIN)
    argv = ["train", "--kind", "point", "--preset", "fast"]
    proc = subprocess.Popen([sys.executable, str(launcher), *argv], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "HEDGEKIT_DATA": str(data),
                                                         "MARKER": str(marker)})
    deadline = time.monotonic() + 120
    while not marker.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p.name for p in (data / "checkpoints").iterdir()] == [f"point-n2-d2-fast-s0.pt.{proc.pid}.tmp"]
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip().splitlines() == [
        "terminated (SIGTERM): checkpoints are written whole or not at all: the model in training was not saved, "
        f"every model finished before is kept; run `python -m hedgekit {' '.join(argv)}` again to train it from the "
        "start"]
    assert list(Path(data / "checkpoints").iterdir()) == []
