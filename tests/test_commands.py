"""`hedgekit.commands.run_command`: how every command ends on SIGTERM (issue 45, item 3), with a real signal."""
from __future__ import annotations

import os
import signal

from hedgekit.commands import Terminated, run_command


def test_sigterm_ends_a_command_like_ctrl_c_with_exit_143_and_the_handler_is_restored(capsys):
    before = signal.getsignal(signal.SIGTERM)
    cleaned = []

    def command(args):
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # a real signal, delivered to this (main) thread
            signal.sigtimedwait([], 1)  # never reached: the handler raised at the next bytecode
            return 0
        except KeyboardInterrupt as exc:  # what the commands' cleanup (worker pools, temp files) catches
            cleaned.append(type(exc))
            exc.kept, exc.again = "the 2 models trained before are cached", "to train the rest"
            raise

    assert run_command(command, None, ["reproduce", "--train-missing"]) == 143
    assert cleaned == [Terminated]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["terminated (SIGTERM): the 2 models trained before are cached; run `python -m hedgekit reproduce "
                   "--train-missing` again to train the rest"]
    assert signal.getsignal(signal.SIGTERM) == before  # the command's handler is not left behind


def test_ctrl_c_is_still_130_and_names_the_interrupt(capsys):
    def command(args):
        raise KeyboardInterrupt

    assert run_command(command, None, ["bench"]) == 130
    assert capsys.readouterr().err.strip().startswith("interrupted: nothing was written; run `python -m hedgekit bench`")
