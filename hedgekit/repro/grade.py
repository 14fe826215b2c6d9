"""Grading students' lesson notebooks, one class at a time: the instructor's side, like otter-grader's ``grade``.

    python -m hedgekit grade class/*.ipynb --json grades.json
    python -m hedgekit grade answers.ipynb --reference notebooks/02_hib_embeddings.ipynb

**Which lesson, which cells**: `hedgekit.repro.exercise_plan`.

**Where things run.** Each copy gets a fresh Jupyter kernel (nbclient, ``--kernel``) in its folder, where the
student's cells run, and a fresh check process (`hedgekit.repro.checker`: a plain Python interpreter that never
runs student code), where the reference's set-up cells and check run. For each exercise the kernel runs its
answer cells and the reference's set-up cells in order; then the names the set-up cells and the check read (and
that no instructor cell binds, nor a built-in) are written by the kernel as data (`hedgekit.repro.answers`:
numbers, strings, containers, arrays, tensors; a module as its name; a function as a stand-in whose calls run in
the kernel on arguments sent as data), and the check process binds them, re-runs the set-up cells and runs the
check. A student's code therefore cannot touch the check's builtins, modules or names (``builtins.abs = ...`` in
an answer changes the kernel only), and a set-up cell the student edited is graded as the instructor wrote it.
This is isolation of memory and namespaces, not a sandbox: the kernel runs as the grading user and can write files;
grade untrusted copies in a container or as a user of their own.

**Verdicts.** An exercise passes when its cells in the check process (set-up and check) all run without an error;
an error in the student's own cells counts only through the check (a stub left above a correct answer does no
harm). Otherwise the message is, line by line: why an answer could not reach the check (an instance of the
student's own class, say), the errors of the check process's cells (``cell N: Name: text``, N the copy's cell
index; the check's assertion text for a wrong answer), then the errors of the student's cells (these first when the
check only found an answer's name undefined: they say why).

**Limits.** Each exercise has ``--timeout`` seconds for all of it, calls into the kernel included; the output of its
cells is capped at ``--max-output`` MB (characters) and the kernel's and the check process's data memory at
``--max-memory`` MB (``RLIMIT_DATA``, which counts what is allocated, where ``RLIMIT_AS`` would also count the
address space torch and CUDA reserve). Past the time or the output cap, or when the kernel or the check process
dies, the exercise fails ("timed out after N s", "its output passed the 1 MB cap", "the kernel died ..."), both are
replaced by fresh ones, and the exercises before it that ran are run again there (their results stand) before the
next one. A memory error's message names the cap.

**Output.** A table (exercise, cells, pass or fail, message) is printed per copy, and a summary row per copy after
several. A copy that cannot be graded (unreadable, no matching reference, a check cell missing, ...) is a row
"could not grade: ..." and the run goes on. The results are written as JSON after each copy: one file for all
with ``--json PATH``, else ``<notebook>.grade.json`` beside each copy. The exit status is 0 when at least one
copy was graded, whatever the scores; 2 (with the JSON written) when none could be.
"""
from __future__ import annotations

import argparse
import builtins
import json
import math
import os
import pickle
import re
import secrets
import shutil
import stat
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hedgekit.checks import count_arg, write_bytes_atomic
from hedgekit.errors import InputError
from hedgekit.repro.kernel_channels import steady_notebook_client
from hedgekit.repro import answers
from hedgekit.repro.checker import CheckerDied, CheckProcess
from hedgekit.repro.exercise_plan import Exercise, References, find_reference, plan_exercises, read_notebook

__all__ = ["TIMEOUT_S", "MAX_OUTPUT_MB", "MAX_MEMORY_MB", "Grade", "Graded", "grade_notebook", "grade_class",
           "format_table", "format_class", "add_subcommand"]

TIMEOUT_S = 60  # per exercise: 3x the convention's 20 s, for a loaded machine (tests/test_lessons.py)
MAX_OUTPUT_MB = 1  # per exercise, all of its cells' output (characters)
MAX_MEMORY_MB = 4096  # data memory of the kernel and of the check process
_INIT_TIMEOUT_S = 60  # the kernel's set-up (memory cap, answers helper)
_BUILTINS = frozenset(dir(builtins))
_HEADER = re.compile(r"#+\s*(\d+)\b")


@dataclass
class Grade:
    """One exercise of a graded notebook: its number (1-based), the notebook's cell indices it ran, the verdict,
    the message (empty when it passed) and the seconds it took."""

    exercise: int
    cells: list[int]
    passed: bool
    message: str
    seconds: float


@dataclass
class Graded:
    """One copy of a class run: its path, the reference it was graded against and how that was found (None if
    none was), its grades, and ``error`` ("could not grade: ...") when it could not be graded."""

    notebook: str
    reference: str | None = None
    matched_by: str | None = None
    grades: list[Grade] = field(default_factory=list)
    error: str | None = None


# ------------------------------------------------------------------------------ running a copy
class _Stop(Exception):
    """An exercise stopped before its check finished (timeout, output cap, a death); ``str`` says which."""


def _client_class():
    from nbclient.exceptions import CellExecutionComplete
    from nbformat.v4 import new_output

    class Client(steady_notebook_client()):
        """nbclient's client keeping only the error outputs of a cell, counting the size of the rest against the
        output cap and killing the kernel past it (`capped` then says so)."""

        cap = MAX_OUTPUT_MB * 10 ** 6
        used = 0
        capped = False

        def reset_output(self) -> None:
            self.used, self.capped = 0, False

        def process_message(self, msg, cell, cell_index):
            kind, content = msg["msg_type"], msg["content"]
            if "execution_count" in content:
                cell["execution_count"] = content["execution_count"]
            if kind == "status":
                if content.get("execution_state") == "idle":
                    raise CellExecutionComplete()
                return None
            if kind == "error":
                cell.outputs.append(new_output("error", ename=str(content.get("ename", "Error")),
                                               evalue=str(content.get("evalue", ""))[:4000], traceback=[]))
                return None
            if kind in ("execute_input", "clear_output"):
                return None
            if kind == "stream":
                self.used += len(content.get("text") or "")
            else:  # display data, results, widget messages: the size of their payloads
                data = content.get("data")
                self.used += sum(len(v) if isinstance(v, str) else len(str(v)) for v in data.values()) \
                    if isinstance(data, dict) else len(str(data or ""))
            if self.used > self.cap and not self.capped:
                self.capped = True
                process = getattr(getattr(self.km, "provisioner", None), "process", None)
                if process is not None:
                    process.kill()  # nbclient sees a dead kernel within a second
            return None

    return Client


def _error(cell) -> str | None:
    """``Name: text`` of the error output a run of ``cell`` left, None if it ran."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".rstrip(": ")
    return None


_MEMORY = re.compile(r"MemoryError|can't allocate memory|Cannot allocate memory|Unable to allocate")
_EMPTY = pickle.dumps({"values": {}, "errors": {}}, protocol=4)  # the answers of an exercise whose check reads none


class _Copy:
    """One copy being graded: its kernel, its check process and a private folder for the answers they pass."""

    def __init__(self, path: Path, kernel: str, timeout: float, max_output: int, max_memory: int):
        from nbformat.v4 import new_code_cell, new_notebook

        self.path, self.timeout, self.max_memory = path, timeout, max_memory
        self.client = _client_class()(new_notebook(cells=[new_code_cell("")]), kernel_name=kernel, allow_errors=True,
                                      shutdown_kernel="immediate",
                                      resources={"metadata": {"path": str(path.resolve().parent)}})
        self.client.cap = max_output * 10 ** 6
        self.folder = Path(tempfile.mkdtemp(prefix="hedgekit-grade-"))
        self.checker = None
        self._context = None

    # -- life cycle
    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        self.checker = CheckProcess(self.path.resolve().parent, self.max_memory)
        self._context = self.client.setup_kernel()
        self._context.__enter__()
        self.client.reset_output()
        self._init_kernel()

    def _stop(self) -> None:
        checker, self.checker = self.checker, None
        if checker is not None:
            checker.close()
        context, self._context = self._context, None
        if context is not None:
            try:
                context.__exit__(None, None, None)
            except Exception:  # a kernel already dead or killed: nothing left to shut down
                pass

    def restart(self) -> None:
        self._stop()
        self._start()

    def __exit__(self, *exc):
        self._stop()
        shutil.rmtree(self.folder, ignore_errors=True)
        return False

    def _init_kernel(self) -> None:
        """Cap the kernel's data memory and give it the answers helper (`hedgekit.repro.answers`)."""
        source = Path(answers.__file__).read_text(encoding="utf-8")
        cap = self.max_memory * 2 ** 20
        code = ("def __hedgekit_grade_init(source, cap):\n"
                "    import types\n"
                "    if cap:\n"
                "        try:\n"
                "            import resource\n"
                "            hard = resource.getrlimit(resource.RLIMIT_DATA)[1]\n"
                "            cap = cap if hard == resource.RLIM_INFINITY else min(cap, hard)\n"
                "            resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))\n"
                "        except (ImportError, ValueError, OSError):\n"
                "            pass\n"
                "    module = types.ModuleType('hedgekit_grade_answers')\n"
                "    exec(compile(source, '<hedgekit grade: answers>', 'exec'), module.__dict__)\n"
                "    return module\n"
                f"__hedgekit_grade__ = __hedgekit_grade_init({source!r}, {cap})\n"
                "del __hedgekit_grade_init\n")
        try:
            error = self._cell(code, time.monotonic() + _INIT_TIMEOUT_S, hidden=True)
        except _Stop as stop:
            error = str(stop)
        if error is not None:
            raise InputError(f"the grading kernel could not be prepared ({error}); is --kernel a Python kernel?")

    # -- running
    def _cell(self, source: str, deadline: float, hidden: bool = False) -> str | None:
        """Run ``source`` in the kernel before ``deadline``: its error (``Name: text``), None if it ran. `_Stop`
        past the deadline, past the output cap or when the kernel dies."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError
        from nbformat.v4 import new_code_cell

        left = deadline - time.monotonic()
        if left <= 0:
            raise _Stop(f"timed out after {self.timeout:g} s")
        cell = new_code_cell(source)
        self.client.timeout = max(1, math.ceil(left))
        try:
            self.client.execute_cell(cell, 0, store_history=not hidden)
        except CellTimeoutError:
            raise _Stop(f"timed out after {self.timeout:g} s") from None
        except DeadKernelError:
            if not self.client.capped:
                cap = f", or memory past the {self.max_memory} MB cap" if self.max_memory else ""
                raise _Stop(f"the kernel died (a crash, an exit{cap})") from None
        if self.client.capped:
            raise _Stop(f"its output passed the {self.client.cap / 10 ** 6:g} MB cap (--max-output) and it was "
                        f"stopped; print less")
        return _error(cell)

    def _file(self, name: str) -> Path:
        """A fresh path in the private folder (a random name: the kernel cannot have put a link there first)."""
        return self.folder / f"{name}-{secrets.token_hex(8)}.pkl"

    def _take(self, path: Path) -> bytes | None:
        """The bytes the kernel wrote to ``path`` (then removed), None if it wrote none, something that is not a
        regular file (a link, a pipe, a device) or more than the memory cap."""
        limit = self.max_memory * 2 ** 20 if self.max_memory else 2 ** 34
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
                return None
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read(limit + 1)
            return data if len(data) <= limit else None
        finally:
            os.close(fd)
            path.unlink(missing_ok=True)

    def _put(self, path: Path, data: bytes) -> None:
        """Write ``data`` to the new file ``path`` (refusing to follow or replace anything already there)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def _export(self, names: list[str], deadline: float) -> bytes | None:
        out = self._file("answers")
        error = self._cell(f"__hedgekit_grade__.export(globals(), {names!r}, {str(out)!r})", deadline, hidden=True)
        return None if error is not None else self._take(out)

    def _call(self, key, payload, deadline: float):
        """Run the student's function ``key`` in the kernel on the arguments ``payload`` (a check process's call)."""
        if not isinstance(key, int) or not isinstance(payload, bytes):
            return ("broken", "a malformed call")
        request, response = self._file("call"), self._file("result")
        try:
            self._put(request, payload)
        except OSError as exc:
            return ("broken", f"the arguments could not be written ({exc})")
        error = self._cell(f"__hedgekit_grade__.call({key!r}, {str(request)!r}, {str(response)!r})", deadline,
                           hidden=True)
        request.unlink(missing_ok=True)
        data = self._take(response)
        if error is not None or data is None:
            return ("broken", error or "the kernel wrote no result (or one larger than the memory cap)")
        return ("reply", data)

    def exercise(self, ex: Exercise) -> tuple[list[str], dict, list]:
        """Run one exercise within ``timeout`` seconds: (the errors of the kernel's cells, why names could not
        reach the check, the check process's (label, error) per cell). `_Stop` as `_cell`, and when the check
        process dies or runs out of time."""
        deadline = time.monotonic() + self.timeout
        self.client.reset_output()
        errors = []
        for label, source in ex.kernel:
            error = self._cell(source, deadline)
            if error is not None:
                errors.append(f"{label}: {error}")
        answers = self._export(ex.receive, deadline) if ex.receive else _EMPTY
        try:
            results, notes = self.checker.run(ex.trusted, ex.receive, answers, self._call, deadline)
        except TimeoutError:
            raise _Stop(f"timed out after {self.timeout:g} s") from None
        except CheckerDied as exc:
            raise _Stop(str(exc)) from None
        return errors, notes, results


def _with_cap(message: str, max_memory: int) -> str:
    if max_memory and _MEMORY.search(message):
        return f"{message} (past the {max_memory} MB memory cap, --max-memory)"
    return message


def _verdict(ex: Exercise, errors: list[str], notes: dict, results: list, seconds: float,
             max_memory: int) -> Grade:
    failed = [f"{label}: {error}" for label, error in results if error is not None]
    passed = not failed and len(results) == len(ex.trusted)
    if passed:
        return Grade(ex.number, ex.cells, True, "", seconds)
    check = ex.trusted[-1][0]
    why = [f"{check}: the kernel's answers could not be read: {text}" if name == "*" else
           f"{check}: {name} could not be passed to the check: {text}; a check receives data (numbers, strings, "
           f"lists, dicts, numpy arrays, torch tensors) and functions" for name, text in notes.items()]
    missing = failed and re.search(r"NameError: name '(\w+)' is not defined$", failed[0])
    lines = why + (errors + failed if missing and missing.group(1) in ex.receive else failed + errors)
    message = "\n".join(_with_cap(line, max_memory) for line in lines) or f"{check}: the check did not run"
    return Grade(ex.number, ex.cells, False, message, seconds)


class _NoKernel(InputError):
    """The --kernel named does not exist: no copy can be graded."""


def _grade(path: Path, plans: list[Exercise], kernel: str, timeout: float, max_output: int,
           max_memory: int) -> list[Grade]:
    from jupyter_client.kernelspec import NoSuchKernel

    grades: list[Grade] = []
    finished: list[Exercise] = []  # the exercises that ran to the end (passed or failed)
    replay: list[Exercise] = []  # those to run again in a new kernel first: the state the next exercise expects
    try:
        with _Copy(path, kernel, timeout, max_output, max_memory) as copy:
            for ex in plans:
                t0 = time.monotonic()
                try:
                    for done in replay:
                        copy.exercise(done)
                    replay = []
                    t1 = time.monotonic()
                    errors, notes, results = copy.exercise(ex)
                except _Stop as stop:
                    grades.append(Grade(ex.number, ex.cells, False, str(stop), time.monotonic() - t0))
                    copy.restart()
                    replay = list(finished)
                    continue
                finished.append(ex)
                grades.append(_verdict(ex, errors, notes, results, time.monotonic() - t1, max_memory))
    except NoSuchKernel:
        raise _NoKernel(f"no Jupyter kernel named {kernel!r}: give --kernel a name that `jupyter kernelspec list` "
                        f"lists") from None
    return grades


def grade_notebook(path: Path | str, reference: Path | str | None = None, kernel: str = "python3",
                   timeout: float = TIMEOUT_S, max_output: int = MAX_OUTPUT_MB,
                   max_memory: int = MAX_MEMORY_MB) -> list[Grade]:
    """Grade the copy at ``path`` against ``reference`` (default: the repository's lesson it matches, see
    `find_reference`) in a fresh ``kernel`` and check process, ``timeout`` seconds, ``max_output`` MB of output and
    ``max_memory`` MB of data memory per exercise (module docstring). `InputError` if it cannot be graded."""
    path = Path(path)
    graded = _grade_one(path, References([reference] if reference is not None else None), kernel, timeout,
                        max_output, max_memory, strict=True)
    return graded.grades


def _grade_one(path: Path, references: References, kernel: str, timeout: float, max_output: int,
               max_memory: int, strict: bool = False) -> Graded:
    """`Graded` for the copy at ``path``; with ``strict`` a copy that cannot be graded raises `InputError` instead
    of becoming an error row."""
    out = Graded(str(path))
    try:
        student = read_notebook(path)
        ref_path, out.matched_by = find_reference(path, student, references)
        out.reference = str(ref_path)
        plans = plan_exercises(student, references.notebook(ref_path), str(path), str(ref_path))
        out.grades = _grade(path, plans, kernel, timeout, max_output, max_memory)
    except _NoKernel:
        raise
    except InputError as exc:
        if strict:
            raise
        out.error = f"could not grade: {exc}"
    except Exception as exc:  # a copy that breaks the grader must not stop the class
        if strict:
            raise
        out.error = f"could not grade: the grader failed on it ({type(exc).__name__}: {exc})"
    return out


def grade_class(paths: list[Path | str], references: list[Path | str] | None = None, kernel: str = "python3",
                timeout: float = TIMEOUT_S, max_output: int = MAX_OUTPUT_MB, max_memory: int = MAX_MEMORY_MB,
                on_graded=None) -> list[Graded]:
    """Grade every copy of ``paths``, each against the reference it matches among ``references`` (notebooks or
    folders; default: the repository's lessons); a copy that cannot be graded is a `Graded` with ``error`` and the
    others still run. ``on_graded(graded)`` is called after each copy. `InputError` only if ``kernel`` does not
    exist."""
    refs = References(references)
    results = []
    for path in paths:
        results.append(_grade_one(Path(path), refs, kernel, timeout, max_output, max_memory))
        if on_graded is not None:
            on_graded(results[-1])
    return results


# ------------------------------------------------------------------------------ reports
def format_table(name: str, grades: list[Grade], error: str | None = None) -> str:
    """The printed table of one notebook: a head line with the score, then one row per exercise; a notebook that
    could not be graded is one line with ``error``."""
    if error is not None:
        return f"{name}: {error.splitlines()[0]}"
    rows = [("exercise", "cells", "result", "message")]
    rows += [(str(g.exercise), ",".join(map(str, g.cells)), "pass" if g.passed else "FAIL", g.message.splitlines()[0]
              if g.message else "") for g in grades]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{name}: {sum(g.passed for g in grades)}/{len(grades)} exercises pass"]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def format_class(results: list[Graded]) -> str:
    """The summary of a class run: how many copies were graded, then one row per copy (its score, or why it could
    not be graded)."""
    rows = [("notebook", "passed", "note")]
    for r in results:
        score = "-" if r.error else f"{sum(g.passed for g in r.grades)}/{len(r.grades)}"
        rows.append((r.notebook, score, r.error.splitlines()[0] if r.error else ""))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    graded = sum(r.error is None for r in results)
    lines = [f"{graded} of {len(results)} notebooks graded"]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row[:2], widths)) + "  " + row[2] for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _record(graded: Graded) -> dict:
    return {"notebook": graded.notebook, "reference": graded.reference, "matched_by": graded.matched_by,
            "passed": sum(g.passed for g in graded.grades), "exercises": len(graded.grades),
            "grades": [asdict(g) for g in graded.grades], "error": graded.error}


def _write_json(path: Path, data: dict) -> None:
    write_bytes_atomic(path, (json.dumps(data, indent=1) + "\n").encode("utf-8"))


# ------------------------------------------------------------------------------ CLI
def add_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``grade`` on an argparse sub-parser set (for `hedgekit.cli`)."""
    p = subparsers.add_parser("grade", help="run each exercise's check against students' notebooks; print a table, "
                              "write JSON", description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="+", metavar="NOTEBOOK", help="a student's .ipynb file")
    p.add_argument("--reference", action="append", default=None, metavar="NB_OR_FOLDER",
                   help="a lesson notebook (or a folder of them) the copies were made from; repeatable; each copy is "
                        "matched to one by its metadata, first line or file name (default: the repository's "
                        "notebooks/)")
    p.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: python3)")
    p.add_argument("--timeout", type=count_arg(1, 86_400), default=TIMEOUT_S,
                   help=f"seconds per exercise (default: {TIMEOUT_S})")
    p.add_argument("--max-output", type=count_arg(1, 10_000), default=MAX_OUTPUT_MB, metavar="MB",
                   help=f"output of one exercise's cells, MB (default: {MAX_OUTPUT_MB})")
    p.add_argument("--max-memory", type=count_arg(0, 10 ** 7), default=MAX_MEMORY_MB, metavar="MB",
                   help=f"data memory of the kernel and of the check process, MB; 0: no cap (default: "
                        f"{MAX_MEMORY_MB})")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="one JSON file for all notebooks (default: <notebook>.grade.json beside each)")
    p.set_defaults(fn=_cmd)
    return p


def _cmd(a) -> int:
    paths = [Path(p) for p in a.notebooks]
    records: list[dict] = []

    def report(graded: Graded) -> None:
        path = Path(graded.notebook)
        print(format_table(str(path), graded.grades, graded.error), flush=True)
        records.append(_record(graded))
        if a.json is not None:
            _write_json(Path(a.json), {"notebooks": records})
        elif path.parent.is_dir():
            out = path.with_name(f"{path.stem}.grade.json")
            try:
                _write_json(out, records[-1])
                print(f"wrote {out}")
            except OSError as exc:  # a student's read-only folder: the class goes on
                print(f"no JSON for {path}: {exc} (--json PATH writes one file for all)", file=sys.stderr)
        else:
            print(f"no JSON for {path}: its folder does not exist (--json PATH writes one file for all)",
                  file=sys.stderr)

    try:
        results = grade_class(paths, a.reference, a.kernel, a.timeout, a.max_output, a.max_memory,
                              on_graded=report)
    except KeyboardInterrupt as exc:
        exc.kept = f"the grades of the {len(records)} notebooks graded before are written"
        raise
    if len(results) > 1:
        print("\n" + format_class(results))
    if a.json is not None:
        print(f"wrote {a.json}")
    if not any(r.error is None for r in results):
        first = results[0].error.removeprefix("could not grade: ")
        more = f" (and {len(results) - 1} more; see above)" if len(results) > 1 else ""
        raise InputError(f"nothing could be graded: {results[0].notebook}: {first}{more}")
    return 0
