"""How every command of ``python -m hedgekit`` ends (`run_command`): exit 2 with one ``error:`` line for bad input,
missing data or a diverged training; exit 130 on Ctrl-C, 143 on SIGTERM, with one line saying what was kept and how
to resume.

Called by `hedgekit.cli.main`, the one entry point of every command (``reproduce`` included).
"""
from __future__ import annotations

import os
import shlex
import signal
import sys
import threading

from hedgekit.errors import HedgekitError

__all__ = ["run_command", "Terminated"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread while `run_command` runs a command (issue 45, item 3): every command
    ends on it exactly as on Ctrl-C (worker processes ended, temporary files removed, one line saying what was
    kept), with exit status 143 = 128 + SIGTERM instead of 130.

    A command that knows better than `_INTERRUPTED` what it kept and what running it again does sets ``kept`` and
    ``again`` on the interrupt it re-raises (e.g. `hedgekit.repro.pool.train_missing`: the models trained,
    the ones stopped)."""


def _terminate(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not interrupt the cleanup of the first
    raise Terminated


# What each command keeps when it is interrupted (Ctrl-C), and what running it again does: `run_command`'s line.
_INTERRUPTED = {
    "train": ("checkpoints are written whole or not at all: the model in training was not saved, every model "
              "finished before is kept", "to train it from the start"),
    "evaluate": ("nothing was written (a model in training was not saved)", "to evaluate again"),
    "table1": ("nothing was written", "to print the tables"),
    "bench": ("nothing was written", "to measure again"),
    "reproduce": ("the notebooks that finished are in the output folder; the one running was not written",
                  "to run the selected notebooks"),
    "url-benchmark": ("every finished run is cached, weights and metrics together; the run in progress was not "
                      "saved", "to resume (finished runs are read back, not retrained)"),
}


def run_command(fn, args, argv: list[str]) -> int:
    """``fn(args)`` as a command's exit code: 2 with one ``error:`` line for bad input, missing data or a diverged
    training; 130 on Ctrl-C and 143 on SIGTERM (`Terminated`), with one line saying what was kept and how to resume
    (the interrupt's ``kept`` and ``again`` where the command set them); 0 when a pipe's reader left.

    ``argv``: the command line after ``python -m hedgekit`` (the command that resumes is that line again).
    """
    main = threading.current_thread() is threading.main_thread()  # signal handlers are set in the main thread only
    previous = signal.signal(signal.SIGTERM, _terminate) if main else None
    try:
        return fn(args)
    except (HedgekitError, FloatingPointError) as exc:  # bad input, missing data, diverged training
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        kept, again = _INTERRUPTED.get(argv[0] if argv else "", ("nothing half-written was kept", "to start again"))
        how = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        print(f"\n{how}: {getattr(exc, 'kept', kept)}; run `python -m hedgekit {shlex.join(argv)}` again "
              f"{getattr(exc, 'again', again)}", file=sys.stderr)
        return 128 + signal.SIGTERM if isinstance(exc, Terminated) else 130
    except BrokenPipeError:  # `... | head`, `... | grep -q`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit flush
        return 0
    finally:
        if main:  # None: a handler not set from Python, which Python cannot restore; the default then
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
