"""How every command of ``python -m hedgekit`` ends (`run_command`): exit 2 with one ``error:`` line for bad input,
missing data or a diverged training; exit 130 on Ctrl-C with one line saying what was kept and how to resume.

Shared by `hedgekit.cli` and `hedgekit.repro.reproduce` (whose own ``main`` is the same command).
"""
from __future__ import annotations

import os
import shlex
import sys

from hedgekit.errors import HedgekitError

__all__ = ["run_command"]


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
    training; 130 with one line saying what was kept and how to resume on Ctrl-C; 0 when a pipe's reader left.

    ``argv``: the command line after ``python -m hedgekit`` (the command that resumes is that line again).
    """
    try:
        return fn(args)
    except (HedgekitError, FloatingPointError) as exc:  # bad input, missing data, diverged training
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept, again = _INTERRUPTED.get(argv[0] if argv else "", ("nothing half-written was kept", "to start again"))
        print(f"\ninterrupted: {kept}; run `python -m hedgekit {shlex.join(argv)}` again {again}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `... | head`, `... | grep -q`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit flush
        return 0
