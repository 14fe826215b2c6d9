"""Which lesson a student's copy is, and which of its cells make each exercise: the plan `hedgekit.repro.grade`
grades a copy by.

**Which lesson.** Each copy is matched to the lesson notebook it was made from among the references (``--reference``,
repeatable, a notebook or a folder of them; default: the repository's notebooks/): by the lesson id in its
metadata (``hedgekit.lesson``, which `hedgekit.repro.students.write_students` writes into every copy; a lesson's
id is that key if it has one, else its file stem), else by the lesson number of its first line (``# 02 — ...``,
kept by every copy), else by its file name; a single ``--reference`` grades every copy that does not name another
lesson. So renamed files (``alice_02.ipynb``) of several lessons are graded in one run.

**Which cells.** An exercise of the reference is its run of ``exercise``-tagged code cells closed by one also
tagged ``check`` (the lesson convention of `hedgekit.repro.students`); a cell of it that holds a solution region is
an answer cell, any other one (not the check) a set-up cell: the instructor's code the check reads. In the copy,
each reference check is found by its cell id, else by its unchanged source, else by position among the copy's
``check``-tagged cells; a check that cannot be found makes the whole copy ungradable ("check cell N missing", N
the reference's index). The exercise's answer is every code cell of the copy from the exercise's first tagged cell
up to its check, so cells the student added (untagged) count; a set-up cell (found by id or source) is replaced by
the reference's version, and one the student deleted is put back.
"""
from __future__ import annotations

import ast
import builtins
import json
import re
from dataclasses import dataclass
from pathlib import Path

from hedgekit.errors import InputError
from hedgekit.repro.students import CHECK_TAG, EXERCISE_TAG, LESSON_KEY, has_solution, notebook_paths

__all__ = ["read_notebook", "exercises", "lesson_id", "lesson_number", "References", "find_reference", "Exercise",
           "plan_exercises"]

_BUILTINS = frozenset(dir(builtins))
_HEADER = re.compile(r"#+\s*(\d+)\b")


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


def _code(cell) -> bool:
    return cell.get("cell_type") == "code"


def exercises(nb, name: str = "notebook") -> list[list[int]]:
    """The exercises of ``nb``: for each, the indices of its ``exercise``-tagged code cells, the last one the
    ``check`` cell that closes it. `InputError` if there is none, or exercise cells follow the last check."""
    groups, current = [], []
    for index, cell in enumerate(nb.cells):
        if _code(cell) and EXERCISE_TAG in _tags(cell):
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


# ------------------------------------------------------------------------------ which lesson a copy is
def lesson_id(nb) -> str | None:
    """The lesson id in ``nb``'s metadata (``hedgekit.lesson``), None if it has none."""
    meta = nb.get("metadata")
    value = ((meta.get("hedgekit") if isinstance(meta, dict) else None) or {})
    value = value.get(LESSON_KEY) if isinstance(value, dict) else None
    return value if isinstance(value, str) and value else None


def lesson_number(nb) -> str | None:
    """The lesson number of ``nb``'s first line (``"02"`` for ``# 02 — HIB embeddings``), None if it has none."""
    for cell in nb.get("cells", [])[:1]:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)  # a raw .ipynb keeps a list of lines
        lines = [line for line in source.splitlines() if line.strip()]
        match = _HEADER.match(lines[0].strip()) if lines else None
        if match:
            return match.group(1)
    return None


class References:
    """The notebooks a class is graded against: the ``--reference`` paths (notebooks, or folders of them) or, by
    default, the repository's lesson notebooks; each parsed once for its id, and read in full once if it grades."""

    def __init__(self, given: list[Path | str] | None):
        self.explicit = bool(given)
        paths: list[Path] = []
        for item in (given or []):
            item = Path(item)
            paths += sorted(item.glob("*.ipynb")) if item.is_dir() else [item]
        self.paths = paths if self.explicit else notebook_paths()
        self._raw: dict[Path, dict | None] = {}
        self._read: dict[Path, object] = {}

    def notebook(self, path: Path):
        """The reference at ``path``, read and validated (`read_notebook`)."""
        if path not in self._read:
            self._read[path] = read_notebook(path)
        return self._read[path]

    def peek(self, path: Path) -> dict | None:
        """The JSON of the notebook at ``path`` for its id and first line, None if it is not a notebook's."""
        if path not in self._raw:
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                self._raw[path] = raw if isinstance(raw, dict) and isinstance(raw.get("cells"), list) else None
            except (OSError, ValueError):
                self._raw[path] = None
        return self._raw[path]

    def ident(self, path: Path) -> str:
        """The lesson id of the reference at ``path``: its metadata's, else its file stem."""
        raw = self.peek(path)
        return (lesson_id(raw) if raw is not None else None) or path.stem


def find_reference(path: Path, nb, references: References) -> tuple[Path, str]:
    """The reference of the copy ``nb`` read from ``path``, and what matched it: ``"metadata"`` (its lesson id),
    ``"header"`` (the lesson number of its first line), ``"file name"`` or ``"--reference"`` (the only one given).
    `InputError` saying what was tried if none matches."""
    tried = []

    def tell(what: str, hits: list) -> str:
        return f"{what}, {'as several references do' if hits else 'and no reference is'}"

    own = lesson_id(nb)
    if own is not None:
        hits = [p for p in references.paths if references.ident(p) == own]
        if len(hits) == 1:
            return hits[0], "metadata"
        tried.append(tell(f"its metadata names lesson {own!r}", hits))
    number = lesson_number(nb)
    if number is not None:
        hits = [p for p in references.paths if (n := references.peek(p)) is not None and lesson_number(n) == number]
        if len(hits) == 1:
            return hits[0], "header"
        tried.append(tell(f"its first line names lesson {number}", hits))
    hits = [p for p in references.paths if p.name == path.name]
    if len(hits) == 1:
        return hits[0], "file name"
    tried.append(f"no reference is named {path.name}")
    if references.explicit and len(references.paths) == 1:
        only = references.paths[0]
        ref = references.peek(only)
        theirs = (lesson_id(ref), lesson_number(ref)) if ref is not None else (None, None)
        if own is not None and theirs[0] not in (None, own):
            tried.append(f"the one --reference, {only}, is lesson {theirs[0]!r}")
        elif number is not None and theirs[1] not in (None, number):
            tried.append(f"the one --reference, {only}, is lesson {theirs[1]}")
        else:
            return only, "--reference"
    where = "the --reference notebooks" if references.explicit else "the repository's notebooks/"
    raise InputError(f"no reference matches it among {where}: {'; '.join(tried)}; give --reference the lesson "
                     f"notebook it was made from")


# ------------------------------------------------------------------------------ which cells run where
@dataclass
class Exercise:
    """One exercise as graded: its number, the copy's cells it covers (the check's last), the (label, source)
    cells the kernel runs, the (label, source) cells the check process runs (the reference's set-up cells, then
    its check) and the names the check process takes from the kernel."""

    number: int
    cells: list[int]
    kernel: list[tuple[str, str]]
    trusted: list[tuple[str, str]]
    receive: list[str]


def _python(source: str) -> str | None:
    """``source`` as Python (IPython's %magics and !commands rewritten as IPython runs them), None if it is not."""
    try:
        ast.parse(source)
        return source
    except SyntaxError:
        pass
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
        ast.parse(source)
        return source
    except Exception:
        return None


def _names(source: str) -> tuple[set[str], set[str]]:
    """(the global names ``source`` reads, at its top level or inside its functions, classes and comprehensions;
    the global names it binds); both empty if it is not Python."""
    import symtable

    code = _python(source)
    if code is None:
        return set(), set()
    top = symtable.symtable(code, "<cell>", "exec")
    reads = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    binds = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    tables = list(top.get_children())
    while tables:
        table = tables.pop()
        tables += table.get_children()
        for sym in table.get_symbols():
            if sym.is_global() and sym.is_referenced():
                reads.add(sym.get_name())
            if sym.is_declared_global() and sym.is_assigned():
                binds.add(sym.get_name())
    return reads, binds


def _locate_checks(student, reference, groups: list[list[int]], name: str, ref_name: str) -> list[int]:
    """The copy's cell index of each reference check: by cell id, else by unchanged source, else by position among
    the copy's other ``check``-tagged cells. `InputError` naming the reference's check cells it lacks."""
    ref_checks = [g[-1] for g in groups]
    ref_ids = {reference.cells[i].get("id") for g in groups for i in g} - {None}
    by_id = {cell.get("id"): i for i, cell in enumerate(student.cells) if cell.get("id") and _code(cell)}
    tagged = [i for i, cell in enumerate(student.cells) if _code(cell) and CHECK_TAG in _tags(cell)]
    located: list[int | None] = [by_id.get(reference.cells[r].get("id")) for r in ref_checks]
    used = {i for i in located if i is not None}
    for k, r in enumerate(ref_checks):
        if located[k] is None:
            same = [i for i in tagged if i not in used and student.cells[i].source == reference.cells[r].source]
            if same:
                located[k] = same[0]
                used.add(same[0])
    free = [i for i in tagged if i not in used and student.cells[i].get("id") not in ref_ids]
    slots = [k for k, i in enumerate(located) if i is None]
    if slots and len(free) == len(slots):
        for k, i in zip(slots, free):
            located[k] = i
        slots = []
    if slots:
        missing = [ref_checks[k] for k in slots]
        which = ", ".join(f"exercise {k + 1}'s (cell {ref_checks[k]} of {ref_name})" for k in slots)
        raise InputError(f"check cell{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} missing: "
                         f"{name} lacks {which}, the cell tagged {EXERCISE_TAG!r} and {CHECK_TAG!r} that closes the "
                         f"exercise; paste it back from the reference, just below the exercise's answer")
    if any(a >= b for a, b in zip(located, located[1:])):
        raise InputError(f"the check cells of {name} are out of order (cells {located} for the reference's "
                         f"{ref_checks}); put each exercise back in the reference's order")
    return located


def plan_exercises(student, reference, name: str = "notebook", ref_name: str = "the reference") -> list[Exercise]:
    """The exercises of the copy ``student`` graded against ``reference``: which cells the kernel and the check
    process run for each (module docstring). `InputError` if the reference has no exercise or a check cell of it
    cannot be found in the copy."""
    groups = exercises(reference, ref_name)
    checks = _locate_checks(student, reference, groups, name, ref_name)
    exercise_ids = {reference.cells[i].get("id") for g in groups for i in g} - {None}
    lesson_ids = {c.get("id") for c in reference.cells if _code(c) and c.get("id")} - exercise_ids
    other_checks = {i for i, c in enumerate(student.cells) if _code(c) and CHECK_TAG in _tags(c)} - set(checks)
    bound: set[str] = set()
    plans, previous = [], -1
    for number, (group, check) in enumerate(zip(groups, checks), start=1):
        ids = {reference.cells[i].get("id") for i in group} - {None}
        span = [i for i in range(previous + 1, check) if _code(student.cells[i]) and i not in other_checks
                and student.cells[i].get("id") not in lesson_ids]
        start = next((p for p, i in enumerate(span) if EXERCISE_TAG in _tags(student.cells[i])
                      or student.cells[i].get("id") in ids), len(span))
        region = [i for i in span[start:] if student.cells[i].source.strip()]
        setups = [r for r in group[:-1] if not has_solution(reference.cells[r].source)]
        where: dict[int, int] = {}  # reference set-up cell -> the copy's cell that is it
        for r in setups:
            cell = reference.cells[r]
            found = [i for i in region if i not in where.values() and
                     ((cell.get("id") and student.cells[i].get("id") == cell.get("id")) or
                      student.cells[i].source == cell.source)]
            if found:
                where[r] = found[0]
        label = {r: f"cell {where[r]}" if r in where else f"reference cell {r}" for r in setups}
        replaced = {i: r for r, i in where.items()}
        kernel = [(f"cell {i}", reference.cells[replaced[i]].source if i in replaced else student.cells[i].source)
                  for i in region]
        for r in setups:  # put back a set-up cell the student deleted: before the next set-up cell found, or last
            if r not in where:
                after = next((label[q] for q in setups if q > r and q in where), None)
                at = next((p for p, (lab, _) in enumerate(kernel) if lab == after), len(kernel))
                kernel.insert(at, (label[r], reference.cells[r].source))
        trusted = [(label[r], reference.cells[r].source) for r in setups]
        trusted.append((f"cell {check}", reference.cells[group[-1]].source))
        reads: set[str] = set()
        for _, source in trusted:
            r, b = _names(source)
            reads |= r
            bound |= b
        receive = sorted(n for n in reads - bound - _BUILTINS if not n.startswith("__"))
        plans.append(Exercise(number, region + [check], kernel, trusted, receive))
        previous = check
    return plans
