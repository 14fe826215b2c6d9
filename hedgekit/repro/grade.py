"""Grading a student's lesson notebook (issue 48 item 4): the instructor's side, like otter-grader's ``grade``.

    python -m hedgekit grade alice/02_hib_embeddings.ipynb bob/02_hib_embeddings.ipynb
    python -m hedgekit grade answers.ipynb --reference notebooks/02_hib_embeddings.ipynb --json grades.json

Exercises follow the lesson convention of `hedgekit.repro.students`: the ``exercise``-tagged code cells, top to
bottom, run in one namespace of their own (no lesson cell runs); each exercise is the run of such cells that ends
with a cell also tagged ``check``. The student's notebook gives the answer cells; the check cells come from the
reference notebook (default: the repository's notebook of the same file name), so a check the student edited or
deleted grades nothing. Both must have the same number of exercises.

Each notebook runs in a fresh Jupyter kernel (nbclient, ``--kernel``), in the notebook's folder. An exercise passes
when all of its cells run without an error; otherwise its message is the first error (``cell N: Name: text``, the
check's assertion text for a wrong answer). Each exercise has ``--timeout`` seconds for all of its cells; past them
it fails with "timed out after N s", its kernel is replaced by a fresh one and the exercises before it whose cells all
ran are run again there (their results stand) before the next exercise; so is a kernel that died ("the kernel died").

A table (exercise, cells, pass or fail, message) is printed per notebook and the results are written as JSON: one
file for all notebooks with ``--json PATH``, else ``<notebook>.grade.json`` beside each notebook. The exit status is
0 whatever the score; 2 with one paragraph for a notebook that cannot be read (missing, not JSON, not a notebook)
or that does not follow the convention.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from hedgekit.checks import count_arg, write_bytes_atomic
from hedgekit.errors import InputError
from hedgekit.repro.students import CHECK_TAG, EXERCISE_TAG

__all__ = ["TIMEOUT_S", "Grade", "read_notebook", "exercises", "grade_notebook", "format_table", "add_subcommand"]

TIMEOUT_S = 60  # per exercise: 3x the convention's 20 s, for a loaded machine (tests/test_lessons.py)
_INDEX = "hedgekit_grade_cell"  # metadata key of a cell to run: its index in the student's notebook


@dataclass
class Grade:
    """One exercise of a graded notebook: its number (1-based), the notebook's cell indices it ran, the verdict,
    the message (empty when it passed) and the seconds it took."""

    exercise: int
    cells: list[int]
    passed: bool
    message: str
    seconds: float


def read_notebook(path: Path | str):
    """The notebook at ``path`` (an nbformat v4 node); `InputError` saying what was expected if it is missing, not
    JSON or not a valid notebook."""
    import nbformat

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such notebook file; expected the path of a .ipynb notebook to grade")
    try:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises NotJSONError, jsonschema's ValidationError, AttributeError, ...
        raise InputError(f"{path} cannot be read as a Jupyter notebook ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}); expected an .ipynb file as "
                         f"Jupyter saves it (JSON with 'cells', 'metadata', 'nbformat')") from None
    return nb


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def exercises(nb, name: str = "notebook") -> list[list[int]]:
    """The exercises of ``nb``: for each, the indices of its ``exercise``-tagged code cells, the last one the
    ``check`` cell that closes it. `InputError` if there is none, or exercise cells follow the last check."""
    groups, current = [], []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and EXERCISE_TAG in _tags(cell):
            current.append(index)
            if CHECK_TAG in _tags(cell):
                groups.append(current)
                current = []
    if current:
        raise InputError(f"{name}: cells {current} are tagged {EXERCISE_TAG!r} but no {CHECK_TAG!r} cell follows "
                         f"them; every exercise ends with a cell tagged both {EXERCISE_TAG!r} and {CHECK_TAG!r}")
    if not groups:
        raise InputError(f"{name} has no exercise: expected code cells tagged {EXERCISE_TAG!r}, each exercise closed "
                         f"by one tagged {CHECK_TAG!r} too (the lesson convention, hedgekit.repro.students)")
    return groups


def _graded_cells(student, reference, name: str) -> tuple[list[list[int]], list[list]]:
    """(the student's exercises as cell indices, per exercise the cells to run: copies of the student's answer cells
    and of the reference's check cells, each with the student's cell index in its metadata, for the messages)."""
    mine, theirs = exercises(student, name), exercises(reference, f"the reference of {name}")
    if len(mine) != len(theirs):
        raise InputError(f"{name} has {len(mine)} exercises and its reference {len(theirs)}; grade it against the "
                         f"notebook it was made from (--reference)")
    groups = []
    for own, ref in zip(mine, theirs):
        cells = [copy.deepcopy(student.cells[i]) for i in own[:-1]] + [copy.deepcopy(reference.cells[ref[-1]])]
        for cell, index in zip(cells, own):
            cell.metadata[_INDEX] = index
        groups.append(cells)
    return mine, groups


def _error(cell) -> str | None:
    """``Name: text`` of the error output a run of ``cell`` left, None if it ran."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".rstrip(": ")
    return None


class _Kernel:
    """One fresh kernel at a time for an nbclient client; `restart` replaces it."""

    def __init__(self, client):
        self.client, self._context = client, None

    def __enter__(self):
        self._context = self.client.setup_kernel()
        self._context.__enter__()
        return self

    def restart(self) -> None:
        self.__exit__(None, None, None)
        self.__enter__()

    def __exit__(self, *exc):
        context, self._context = self._context, None
        return context.__exit__(*exc) if context is not None else False


def _run(client, cells: list, budget: float) -> tuple[str | None, float]:
    """Run ``cells`` in order within ``budget`` seconds: (the first error, None if all ran; seconds taken).
    Raises nbclient's CellTimeoutError past the budget."""
    from nbclient.exceptions import CellTimeoutError

    t0, first = time.perf_counter(), None
    for number, cell in enumerate(cells):
        left = budget - (time.perf_counter() - t0)
        if left <= 0:
            raise CellTimeoutError("no time left")
        client.timeout = max(1, math.ceil(left))
        client.execute_cell(cell, number)
        error = _error(cell)
        if error is not None and first is None:
            first = f"cell {cell.metadata[_INDEX]}: {error}"
    return first, time.perf_counter() - t0


def _plan(path: Path, reference: Path | str | None) -> tuple[list[list[int]], list[list]]:
    """`_graded_cells` of the notebook at ``path`` and its reference (default: the repository's notebook of the same
    file name); `InputError` before any kernel starts if either cannot be read or graded."""
    from hedgekit.repro.reproduce import notebook_dir

    if reference is None:
        reference = notebook_dir() / path.name
        if not reference.is_file():
            raise InputError(f"{path}: {path.name} is not a notebook of {notebook_dir()}, so its check cells are "
                             f"unknown; give the notebook its exercises come from with --reference")
    return _graded_cells(read_notebook(path), read_notebook(reference), str(path))


def grade_notebook(path: Path | str, reference: Path | str | None = None, kernel: str = "python3",
                   timeout: float = TIMEOUT_S) -> list[Grade]:
    """Grade the notebook at ``path`` against the checks of ``reference`` (default: the repository's notebook of
    the same file name) in a fresh ``kernel``, ``timeout`` seconds per exercise (see the module's docstring)."""
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from nbformat.v4 import new_notebook

    path = Path(path)
    mine, groups = _plan(path, reference)
    client = NotebookClient(new_notebook(cells=[c for g in groups for c in g]), kernel_name=kernel,
                            allow_errors=True, shutdown_kernel="immediate",
                            resources={"metadata": {"path": str(path.resolve().parent)}})
    grades: list[Grade] = []
    finished: list[list] = []  # the exercises whose cells all ran (passed or failed)
    replay: list[list] = []  # those to run again in a new kernel first: the namespace the next exercise expects
    try:
        with _Kernel(client) as kernel_now:
            for number, (cells, own) in enumerate(zip(groups, mine), start=1):
                t0 = time.perf_counter()
                try:
                    for done in replay:
                        _run(client, copy.deepcopy(done), timeout)
                    replay = []
                    error, seconds = _run(client, cells, timeout)
                except (CellTimeoutError, DeadKernelError) as exc:
                    why = "the kernel died" if isinstance(exc, DeadKernelError) else f"timed out after {timeout:g} s"
                    grades.append(Grade(number, own, False, why, time.perf_counter() - t0))
                    kernel_now.restart()
                    replay = list(finished)
                    continue
                finished.append(cells)
                grades.append(Grade(number, own, error is None, error or "", seconds))
    except NoSuchKernel:
        raise InputError(f"no Jupyter kernel named {kernel!r}: give --kernel a name that `jupyter kernelspec list` "
                         f"lists") from None
    return grades


def format_table(name: str, grades: list[Grade]) -> str:
    """The printed table of one notebook: a head line with the score, then one row per exercise."""
    rows = [("exercise", "cells", "result", "message")]
    rows += [(str(g.exercise), ",".join(map(str, g.cells)), "pass" if g.passed else "FAIL", g.message.splitlines()[0]
              if g.message else "") for g in grades]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{name}: {sum(g.passed for g in grades)}/{len(grades)} exercises pass"]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _record(path: Path, grades: list[Grade]) -> dict:
    return {"notebook": str(path), "passed": sum(g.passed for g in grades), "exercises": len(grades),
            "grades": [asdict(g) for g in grades]}


# ------------------------------------------------------------------------------ CLI
def add_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``grade`` on an argparse sub-parser set (for `hedgekit.cli`)."""
    p = subparsers.add_parser("grade", help="run each exercise's check against students' notebooks; print a table, "
                              "write JSON", description=__doc__.split("\n\n")[0])
    p.add_argument("notebooks", nargs="+", metavar="NOTEBOOK", help="a student's .ipynb file")
    p.add_argument("--reference", default=None, help="the notebook whose check cells grade them (default: "
                   "notebooks/ of the repository, same file name)")
    p.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: python3)")
    p.add_argument("--timeout", type=count_arg(1, 86_400), default=TIMEOUT_S,
                   help=f"seconds per exercise (default: {TIMEOUT_S})")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="one JSON file for all notebooks (default: <notebook>.grade.json beside each)")
    p.set_defaults(fn=_cmd)
    return p


def _cmd(a) -> int:
    paths = [Path(p) for p in a.notebooks]
    for path in paths:  # every notebook and reference readable before any kernel starts
        _plan(path, a.reference)
    records = []
    for path in paths:
        grades = grade_notebook(path, a.reference, a.kernel, a.timeout)
        print(format_table(str(path), grades), flush=True)
        records.append(_record(path, grades))
        if a.json is None:
            out = path.with_name(f"{path.stem}.grade.json")
            write_bytes_atomic(out, (json.dumps(records[-1], indent=1) + "\n").encode("utf-8"))
            print(f"wrote {out}")
    if a.json is not None:
        write_bytes_atomic(Path(a.json), (json.dumps({"notebooks": records}, indent=1) + "\n").encode("utf-8"))
        print(f"wrote {a.json}")
    return 0
