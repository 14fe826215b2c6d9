"""The check process of `hedgekit.repro.grade`: a fresh Python interpreter that runs the instructor's cells of a
graded notebook (each exercise's set-up cells and its check, as the reference notebook has them) and never any
student code.

It starts without the notebook's folder on ``sys.path`` (a file the student's code wrote there is not imported),
caps its own data memory (``RLIMIT_DATA``), keeps one namespace for the notebook's exercises (a check may read what
an earlier one defined) and sends nothing to the student's kernel but the arguments of a call. For each exercise
the grader sends the cells to run and the student's answers as data (`hedgekit.repro.answers`); the answers are
bound to the names the cells read, then the cells run in order, each one's error recorded, and the outcome goes
back. A student's function is a `hedgekit.repro.answers.Proxy` here: calling it sends the arguments to the grader,
which runs the function in the kernel and sends back the result as data (or the exception it raised, rebuilt under
its own name).

Messages go both ways as length-prefixed pickles over the process's stdin and stdout (its prints go to
/dev/null); those from this process are read with `hedgekit.repro.answers.loads_answer`, so even they cannot make
the grader call anything. `CheckProcess` is the grader's handle on one such process.
"""
from __future__ import annotations

import builtins
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hedgekit.repro.answers import MESSAGE_CHARS, dumps, loads_answer, rebuild_error, sync

__all__ = ["CheckProcess", "CheckerDied", "main"]

_FRAME = struct.Struct(">Q")
_BOOT = ("import os, sys\n"
         "sys.path[:] = [p for p in sys.path if p not in ('', '.', os.getcwd())]\n"
         "from hedgekit.repro.checker import main\n"
         "main(sys.argv[1:])\n")


class CheckerDied(Exception):
    """The check process ended while the grader waited for it; the text says what it wrote last."""


def _frame(message) -> bytes:
    data = pickle.dumps(message, protocol=4)
    return _FRAME.pack(len(data)) + data


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".rstrip(": ")[:MESSAGE_CHARS]


# ------------------------------------------------------------------------------ inside the check process
def _read_message(stream):
    """The next message on ``stream`` (the grader's pickles, trusted), None at its end."""
    head = stream.read(_FRAME.size)
    if len(head) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def _display(*objs, **kwargs):
    """IPython's ``display`` for the check cells (its text goes to /dev/null here)."""
    try:
        from IPython.display import display
    except ImportError:
        return print(*objs)
    return display(*objs, **kwargs)


class _Checks:
    """The check process's state: its namespace and its line to the grader."""

    def __init__(self, incoming, outgoing):
        self.incoming, self.outgoing = incoming, outgoing
        self.namespace = {"__name__": "__main__", "__builtins__": builtins, "display": _display}

    def send(self, message) -> None:
        self.outgoing.write(_frame(message))
        self.outgoing.flush()

    def call(self, key: int, name: str, args: tuple, kwargs: dict):
        """Run the student's function ``key`` in the kernel on ``args``, ``kwargs`` (what a `Proxy` does)."""
        try:
            payload = dumps((list(args), dict(kwargs)))
        except Exception as exc:
            raise TypeError(f"the check cannot pass these arguments to the student's {name}: {_error_text(exc)}") \
                from None
        self.send(("call", key, payload))
        reply = _read_message(self.incoming)
        if reply is None:
            raise SystemExit(0)  # the grader went away
        if reply[0] != "reply":
            raise RuntimeError(f"the student's {name} could not be run in the grading kernel: {reply[1]}")
        try:
            outcome = loads_answer(reply[1])
            kind = outcome[0]
        except Exception as exc:
            raise TypeError(f"the student's {name} sent back something that is not data ({_error_text(exc)})") \
                from None
        if kind == "raised" and len(outcome) == 4:
            raise rebuild_error(*outcome[1:])
        if kind == "unsendable" and len(outcome) == 2:
            raise TypeError(f"the student's {name} cannot be graded: {str(outcome[1])[:MESSAGE_CHARS]}; a check "
                            f"receives data (numbers, strings, containers, numpy arrays, torch tensors) and functions")
        if kind != "returned" or len(outcome) != 4:
            raise TypeError(f"the student's {name} sent back a malformed outcome")
        _, result, args_back, kwargs_back = outcome
        try:
            value = loads_answer(result, self.call)
        except Exception as exc:
            raise TypeError(f"the student's {name} returned something that is not data ({_error_text(exc)})") \
                from None
        pairs = list(zip(args, args_back if isinstance(args_back, list) else []))
        pairs += [(kwargs[k], v) for k, v in (kwargs_back.items() if isinstance(kwargs_back, dict) else [])
                  if k in kwargs]
        for original, back in pairs:
            if back is not None:
                try:
                    sync(original, loads_answer(back, self.call))
                except Exception:  # an argument's new state that is not data: the check keeps its own
                    pass
        return value

    def run(self, cells: list, names: list, answers: bytes | None) -> None:
        """Bind the answers the cells read, run ``cells`` ((label, source) pairs) in order and send the outcome:
        ``("done", [(label, error or None)], {name: why it could not be bound})``."""
        notes: dict[str, str] = {}
        values, errors = {}, {}
        if answers is None:
            notes["*"] = "the kernel sent no answers (its grading helper was removed or broken)"
        else:
            try:
                envelope = loads_answer(answers)
                values, errors = dict(envelope["values"]), dict(envelope["errors"])
            except Exception as exc:
                notes["*"] = f"the kernel's answers could not be read ({_error_text(exc)})"
        for name in names:
            if name in values:
                try:
                    self.namespace[name] = loads_answer(values[name], self.call)
                except Exception as exc:
                    notes[name] = f"it is not data ({_error_text(exc)})"
            elif name in errors:
                notes[name] = str(errors[name])[:MESSAGE_CHARS]
        results = []
        for label, source in cells:
            try:
                exec(compile(source, f"<{label}>", "exec"), self.namespace)
            except BaseException as exc:  # the check's verdict, or the student's error raised through a call
                results.append((label, _error_text(exc)))
            else:
                results.append((label, None))
        self.send(("done", results, notes))


def main(argv: list[str]) -> None:
    """The check process: ``argv`` is ``[memory cap in bytes (0: none)]``; messages on stdin, answers on stdout."""
    incoming, outgoing = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    quiet = os.open(os.devnull, os.O_RDWR)
    os.dup2(quiet, 0)
    os.dup2(quiet, 1)
    sys.stdin, sys.stdout = open(os.devnull), open(os.devnull, "w")
    cap = int(argv[0]) if argv else 0
    if cap > 0:
        try:
            import resource

            _, hard = resource.getrlimit(resource.RLIMIT_DATA)
            cap = cap if hard == resource.RLIM_INFINITY else min(cap, hard)
            resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
        except (ImportError, ValueError, OSError):  # a system without the limit: the checks run uncapped
            pass
    checks = _Checks(incoming, outgoing)
    while True:
        message = _read_message(incoming)
        if message is None:
            return
        if message[0] == "run":
            checks.run(*message[1:])


# ------------------------------------------------------------------------------ the grader's side
class CheckProcess:
    """A check process for the notebook in ``folder`` (its working directory), its data memory capped at
    ``memory_mb`` MB (0: no cap). `run` runs one exercise's cells in it; `close` ends it."""

    def __init__(self, folder: Path | str, memory_mb: int = 0):
        self._stderr = tempfile.TemporaryFile()
        self._limit = memory_mb * 2 ** 20 if memory_mb else 2 ** 34  # the largest message accepted from it
        self.process = subprocess.Popen([sys.executable, "-c", _BOOT, str(memory_mb * 2 ** 20)], cwd=str(folder),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)

    def _died(self) -> CheckerDied:
        self.process.poll()
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - 1500))
        tail = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        code = self.process.returncode
        return CheckerDied(f"the check process ended{'' if code is None else f' (exit status {code})'}"
                           + (f": {tail[-1]}" if tail else ""))

    def _send(self, message) -> None:
        try:
            self.process.stdin.write(_frame(message))
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def _read(self, size: int, deadline: float) -> bytes:
        fd, buffer = self.process.stdout.fileno(), bytearray()
        while len(buffer) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("the check process did not finish in time")
            chunk = os.read(fd, min(size - len(buffer), 1 << 20))
            if not chunk:
                raise self._died()
            buffer += chunk
        return bytes(buffer)

    def _receive(self, deadline: float):
        (size,) = _FRAME.unpack(self._read(_FRAME.size, deadline))
        if size > self._limit:
            raise CheckerDied(f"the check process sent a message of {size} bytes, more than the memory cap")
        return loads_answer(self._read(size, deadline))

    def run(self, cells: list, names: list, answers: bytes | None, on_call, deadline: float):
        """Run ``cells`` ((label, source) pairs) after binding ``names`` from ``answers`` (`answers.export`'s
        bytes, None if the kernel sent none), before ``deadline`` (`time.monotonic`). ``on_call(key, payload,
        deadline)`` runs a student's function in the kernel and returns ``("reply", bytes)`` or ``("broken",
        why)``. Returns ([(label, error or None)], {name: why it was not bound}). `TimeoutError` past the
        deadline, `CheckerDied` if the process ends; either way the process is of no further use."""
        self._send(("run", list(cells), list(names), answers))
        while True:
            message = self._receive(deadline)
            if message[0] == "call":
                self._send(on_call(message[1], message[2], deadline))
            elif message[0] == "done":
                return list(message[1]), dict(message[2])
            else:
                raise CheckerDied(f"the check process sent an unknown message {message[0]!r:.40}")

    def close(self) -> None:
        """End the process (at once) and free its files."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self._stderr):
            try:
                stream.close()
            except OSError:
                pass
