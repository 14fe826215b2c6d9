"""How every command of ``python -m hedgekit`` ends (`run_command`): exit 2 with one ``error:`` line for bad input,
missing data or a diverged training; on Ctrl-C, SIGTERM or SIGHUP (a closed terminal or SSH session) exit 128 + the
signal's number (130, 143, 129), with one line saying what was kept and how to resume.

Called by `hedgekit.cli.main`, the one entry point of every command (``reproduce`` included).
"""
from __future__ import annotations

import os
import shlex
import signal
import sys
import threading

from hedgekit.errors import HedgekitError

__all__ = ["run_command", "Terminated", "TERMINATING"]

# The signals that end a command as Ctrl-C does (`Terminated`): kill's default, and the hang-up a closed terminal or
# SSH session sends (not on Windows, which has no SIGHUP).
TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``signum``), raised in the main thread while `run_command` runs a command: every command
    ends on it exactly as on Ctrl-C (worker processes and kernels ended, temporary files removed, one line saying
    what was kept), with exit status 128 + ``signum`` instead of 130.

    A command that knows better than `_INTERRUPTED` what it kept and what running it again does sets ``kept`` and
    ``again`` on the interrupt it re-raises (e.g. `hedgekit.repro.pool.train_missing`: the models trained,
    the ones stopped)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__()
        self.signum = signum


def _terminate(signum, frame):
    for each in TERMINATING:  # a second SIGTERM or SIGHUP does not interrupt the cleanup of the first
        signal.signal(each, signal.SIG_IGN)
    raise Terminated(signum)


# What each command keeps when it is interrupted (Ctrl-C), and what running it again does: `run_command`'s line.
_INTERRUPTED = {
    "train": ("checkpoints are written whole or not at all: the model in training was not saved, every model "
              "finished before is kept", "to train it from the start"),
    "evaluate": ("nothing was written (a model in training was not saved)", "to evaluate again"),
    "table1": ("nothing was written", "to print the tables"),
    "bench": ("nothing was written", "to measure again"),
    "reproduce": ("the notebooks that finished are in the output folder; the one running was not written",
                  "to run the selected notebooks"),
    "url-benchmark": ("every finished run is cached, weights and metrics together, and recorded in the ledger; the "
                      "run in progress was not saved", "to resume (finished runs are read back, not retrained)"),
}


def run_command(fn, args, argv: list[str]) -> int:
    """``fn(args)`` as a command's exit code: 2 with one ``error:`` line for bad input, missing data or a diverged
    training; 130 on Ctrl-C and 128 + the signal's number on SIGTERM (143) or SIGHUP (129) (`Terminated`), with one
    line saying what was kept and how to resume (the interrupt's ``kept`` and ``again`` where the command set them);
    0 when a pipe's reader left. A signal of `TERMINATING` that this process ignores (``nohup`` ignores SIGHUP) stays
    ignored.

    ``argv``: the command line after ``python -m hedgekit`` (the command that resumes is that line again).
    """
    main = threading.current_thread() is threading.main_thread()  # signal handlers are set in the main thread only
    previous = {signum: signal.getsignal(signum) for signum in TERMINATING} if main else {}
    for signum, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(signum, _terminate)
    try:
        return fn(args)
    except (HedgekitError, FloatingPointError) as exc:  # bad input, missing data, diverged training
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        kept, again = _INTERRUPTED.get(argv[0] if argv else "", ("nothing half-written was kept", "to start again"))
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        how = f"terminated ({signal.Signals(signum).name})" if isinstance(exc, Terminated) else "interrupted"
        try:
            print(f"\n{how}: {getattr(exc, 'kept', kept)}; run `python -m hedgekit {shlex.join(argv)}` again "
                  f"{getattr(exc, 'again', again)}", file=sys.stderr)
        except OSError:  # SIGHUP: the terminal that would show the line is gone
            _silence()
        return 128 + signum
    except BrokenPipeError:  # `... | head`, `... | grep -q`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit flush
        return 0
    finally:
        for signum, handler in previous.items():  # None: a handler not set from Python, which Python cannot restore
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _silence() -> None:
    """Point stdout and stderr at the null device: their terminal is gone, and a failed flush at exit would turn the
    exit status into 120."""
    null = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        os.dup2(null, stream.fileno())
