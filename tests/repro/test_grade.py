"""``python -m hedgekit grade`` (`hedgekit.repro.grade`) in real Jupyter kernels: a small synthetic lesson written
here (plain Python, so a kernel starts in about a second) for the verdicts, the messages, the timeout and the caps,
a class of copies with broken and renamed ones, and answers that try to reach the check; notebook 02 and its
generated student copy for "solutions score full, student copies score 0"."""
from __future__ import annotations

import copy
import json
import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from hedgekit.cli import main
from hedgekit.errors import InputError
from hedgekit.paths import notebook_dir
from hedgekit.repro.exercise_plan import exercises, plan_exercises
from hedgekit.repro.grade import Graded, format_class, format_table, grade_notebook
from hedgekit.repro.students import student_notebook, write_students

EX = {"tags": ["exercise"]}
CHECK = {"tags": ["exercise", "check"]}
LESSON = "02_hib_embeddings.ipynb"


def _lesson(square: str = "return x * x", guess: str = '"even"'):
    """Three exercises as the convention writes them; exercise 3 uses a name (``math``) imported by exercise 1."""
    return new_notebook(cells=[
        new_code_cell("LESSON_ONLY = 1  # not an exercise: never run by grade"),
        new_markdown_cell("**1.** Write `square(x)`."),
        new_code_cell(f"import math\n\n\ndef square(x):\n    ### BEGIN SOLUTION\n    {square}\n    ### END SOLUTION",
                      metadata=EX),
        new_code_cell("assert square(3) == 9, f'square(3) should be 9, got {square(3)}'", metadata=CHECK),
        new_markdown_cell("**2.** Is 2 ** 10 even or odd?"),
        new_code_cell(f"### BEGIN SOLUTION\nPARITY = {guess}  # 'even' or 'odd'\n### END SOLUTION", metadata=EX),
        new_code_cell("seen = 'even' if 2 ** 10 % 2 == 0 else 'odd'", metadata=EX),
        new_code_cell("assert PARITY == seen, f'expected {seen!r}, got {PARITY!r}'", metadata=CHECK),
        new_code_cell("### BEGIN SOLUTION\nROOT = 2.0\n### END SOLUTION", metadata=EX),
        new_code_cell("assert math.isclose(ROOT ** 2, 4.0), ROOT\nassert 'LESSON_ONLY' not in dir()", metadata=CHECK),
    ])


def _write(folder, name, nb):
    nbformat.write(nb, folder / name)
    return folder / name


def _verdicts(grades):
    return [(g.exercise, g.passed, g.message) for g in grades]


def _rows(record):
    return [(g["exercise"], g["passed"], g["message"]) for g in record["grades"]]


def test_exercises_follow_the_students_convention():
    assert exercises(_lesson()) == [[2, 3], [5, 6, 7], [8, 9]]
    nb = _lesson()
    nb.cells.append(new_code_cell("x = 1", metadata=EX))
    with pytest.raises(InputError, match=r"cells \[10\] are tagged 'exercise' but no 'check' cell follows"):
        exercises(nb, "late.ipynb")
    with pytest.raises(InputError, match="none.ipynb has no exercise"):
        exercises(new_notebook(cells=[new_code_cell("x = 1")]), "none.ipynb")


@pytest.mark.slow
def test_solution_full_student_zero_one_wrong_answer_fails_alone(tmp_path):
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    assert _verdicts(grade_notebook(reference, reference)) == [(1, True, ""), (2, True, ""), (3, True, "")]
    student = _write(tmp_path, "student.ipynb", student_notebook(_lesson()))
    assert _verdicts(grade_notebook(student, reference)) == [
        (1, False, "cell 3: NotImplementedError"),  # the stub raises when the check calls it
        (2, False, "cell 7: AssertionError: expected 'even', got Ellipsis"),  # an answer left at ...: the check says
        (3, False, "cell 9: TypeError: unsupported operand type(s) for ** or pow(): 'ellipsis' and 'int'")]
    wrong = _write(tmp_path, "wrong.ipynb", _lesson(guess='"odd"'))
    assert _verdicts(grade_notebook(wrong, reference)) == [
        (1, True, ""), (2, False, "cell 7: AssertionError: expected 'even', got 'odd'"), (3, True, "")]


@pytest.mark.slow
def test_the_reference_checks_grade_not_the_students_own(tmp_path):
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    cheat = _lesson(square="return 0")
    cheat.cells[3].source = "pass  # the student emptied the check"
    grades = grade_notebook(_write(tmp_path, "cheat.ipynb", cheat), reference)
    assert _verdicts(grades) == [(1, False, "cell 3: AssertionError: square(3) should be 9, got 0"),
                                 (2, True, ""), (3, True, "")]


@pytest.mark.slow
def test_an_endless_answer_is_stopped_and_the_next_exercise_runs_in_a_new_kernel(tmp_path, capsys):
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    endless = _lesson()
    endless.cells[5].source = "while True:\n    pass"
    path = _write(tmp_path, "endless.ipynb", endless)
    assert main(["grade", str(path), "--reference", str(reference), "--timeout", "3"]) == 0
    record = json.loads((tmp_path / "endless.grade.json").read_text())  # default: beside the notebook
    assert [(g["exercise"], g["passed"], g["message"]) for g in record["grades"]] == [
        (1, True, ""), (2, False, "timed out after 3 s"), (3, True, "")]  # 3 sees exercise 1's import again
    assert 3 <= record["grades"][1]["seconds"] < 10 and (record["passed"], record["exercises"]) == (2, 3)
    out = capsys.readouterr().out
    assert f"{path}: 2/3 exercises pass" in out and "timed out after 3 s" in out


@pytest.mark.slow
def test_a_kernel_that_dies_fails_its_exercise_only(tmp_path):
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    dying = _lesson()
    dying.cells[2].source = "import os\nos._exit(1)"
    grades = grade_notebook(_write(tmp_path, "dying.ipynb", dying), reference, timeout=60)
    died = "the kernel died (a crash, an exit, or memory past the 4096 MB cap)"
    assert _verdicts(grades) == [(1, False, died), (2, True, ""),
                                 (3, False, "cell 9: NameError: name 'math' is not defined")]  # exercise 1 never ran


def test_format_table_lists_every_exercise():
    from hedgekit.repro.grade import Grade

    table = format_table("a.ipynb", [Grade(1, [2, 3], True, "", 0.1), Grade(2, [5, 6], False, "cell 6: E: x\ny", 1)])
    assert table.splitlines() == ["a.ipynb: 1/2 exercises pass",
                                  "exercise  cells  result  message",
                                  "1         2,3    pass",
                                  "2         5,6    FAIL    cell 6: E: x"]
    assert format_table("b.ipynb", [], "could not grade: check cell 3 missing: ...") == \
        "b.ipynb: could not grade: check cell 3 missing: ..."
    assert format_class([Graded("a.ipynb", grades=[Grade(1, [2, 3], True, "", 0.1)]),
                         Graded("b.ipynb", error="could not grade: check cell 3 missing")]).splitlines() == [
        "1 of 2 notebooks graded", "notebook  passed  note", "a.ipynb   1/1", "b.ipynb   -       could not grade: "
        "check cell 3 missing"]


@pytest.mark.parametrize("content, says", [
    (None, "no such notebook file"),
    ("{not json", "cannot be read as a Jupyter notebook (NotJSONError"),
    ('{"notebook": true}', "cannot be read as a Jupyter notebook"),
    ("[1, 2]", "cannot be read as a Jupyter notebook"),
])
def test_a_lone_unreadable_notebook_is_an_error_row_and_exits_2(tmp_path, capsys, content, says):
    """Nothing could be graded: exit 2 with one paragraph, and the JSON still says why."""
    path = tmp_path / "bad.ipynb"
    if content is not None:
        path.write_text(content)
    good = _write(tmp_path, "good.ipynb", _lesson())
    out = tmp_path / "grades.json"
    assert main(["grade", str(path), "--reference", str(good), "--json", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: nothing could be graded: {path}: {path}") and says in captured.err
    assert captured.err.count("\n") == 1 and f"{path}: could not grade: {path}" in captured.out
    (record,) = json.loads(out.read_text())["notebooks"]
    assert record["error"].startswith("could not grade: ") and says in record["error"] and record["grades"] == []


def test_a_copy_without_reference_or_with_a_check_cell_deleted_cannot_be_graded(tmp_path, capsys):
    path = _write(tmp_path, "99_mine.ipynb", _lesson())
    assert main(["grade", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no reference matches it among the repository's notebooks/: no reference is named 99_mine.ipynb" in err
    assert json.loads((tmp_path / "99_mine.grade.json").read_text())["error"].startswith("could not grade: no ref")
    shorter = _lesson()
    del shorter.cells[8:]
    assert main(["grade", str(_write(tmp_path, "short.ipynb", shorter)), "--reference", str(path)]) == 2
    assert "check cell 9 missing: " in capsys.readouterr().err


def test_each_check_is_found_by_id_by_source_or_by_position(tmp_path):
    """A copy keeps its cells' ids; a copy whose ids changed is matched by the checks' sources, and a check the
    student edited by its place among the copy's check-tagged cells. A set-up cell is the reference's, wherever
    the student's edited or deleted one was; cells the student added belong to the exercise."""
    reference = _lesson()
    same = student_notebook(reference)
    assert [ex.cells for ex in plan_exercises(same, reference)] == [[2, 3], [5, 6, 7], [8, 9]]
    other = _lesson()  # new ids
    other.cells[3].source = "pass  # the student emptied the check"
    other.cells[6].source = "seen = 'odd'  # the student's set-up"
    other.cells.insert(7, new_code_cell("PARITY = 'even'  # an untagged cell of the student's"))
    plans = plan_exercises(other, reference)
    assert [ex.cells for ex in plans] == [[2, 3], [5, 6, 7, 8], [9, 10]]
    assert plans[1].kernel == [("cell 5", other.cells[5].source), ("cell 6", other.cells[6].source),
                               ("cell 7", "PARITY = 'even'  # an untagged cell of the student's"),
                               ("reference cell 6", reference.cells[6].source)]  # the edited set-up ran as written
    assert plans[1].trusted == [("reference cell 6", reference.cells[6].source), ("cell 8", reference.cells[7].source)]
    assert [ex.receive for ex in plans] == [["square"], ["PARITY"], ["ROOT", "math"]]  # never `seen` nor a builtin
    deleted = student_notebook(reference)
    del deleted.cells[3]
    with pytest.raises(InputError, match=r"^check cell 3 missing: copy lacks exercise 1's \(cell 3 of ref\)"):
        plan_exercises(deleted, reference, "copy", "ref")


def test_one_copy_with_a_deleted_check_cell_is_a_row_and_the_class_goes_on(tmp_path, capsys):
    """Three copies, one without exercise 1's check cell: two are graded, the third is a "could not grade" row,
    the JSON holds all three and the exit status is 0."""
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    broken = student_notebook(_lesson())
    del broken.cells[3]
    paths = [_write(tmp_path, "alice.ipynb", _lesson()), _write(tmp_path, "bob.ipynb", broken),
             _write(tmp_path, "carol.ipynb", _lesson(guess='"odd"'))]
    out = tmp_path / "grades.json"
    assert main(["grade", *map(str, paths), "--reference", str(reference), "--json", str(out)]) == 0
    records = json.loads(out.read_text())["notebooks"]
    assert [(r["notebook"], r["passed"], r["exercises"]) for r in records] == [
        (str(paths[0]), 3, 3), (str(paths[1]), 0, 0), (str(paths[2]), 2, 3)]
    assert records[1]["error"].startswith(f"could not grade: check cell 3 missing: {paths[1]} lacks exercise 1's")
    assert records[0]["error"] is None and records[0]["reference"] == str(reference)
    printed = capsys.readouterr().out
    assert f"{paths[1]}: could not grade: check cell 3 missing" in printed and "2 of 3 notebooks graded" in printed


def _two_lessons(folder):
    """Two lessons in ``folder``: 01 (the synthetic lesson) and 02 (its first two exercises, exercise 2 asking for
    "odd"); their student copies, made by `write_students`, carry each lesson's id."""
    one = _lesson()
    one.cells[0].source = "# 01 — squares\nLESSON_ONLY = 1"
    two = _lesson(guess='"odd"')
    two.cells[0].source = "# 02 — parities\nLESSON_ONLY = 1"
    two.cells[7].source = "assert PARITY == 'odd', f'expected odd, got {PARITY!r}'"
    del two.cells[8:]
    folder.mkdir()
    return [_write(folder, "01_squares.ipynb", one), _write(folder, "02_parities.ipynb", two)]


def test_renamed_copies_are_matched_to_their_lesson_by_metadata(tmp_path):
    refs = _two_lessons(tmp_path / "lessons")
    copies = write_students(tmp_path / "copies", refs)
    assert [nbformat.read(c, as_version=4).metadata["hedgekit"]["lesson"] for c in copies] == ["01_squares",
                                                                                               "02_parities"]
    alice = tmp_path / "alice_02.ipynb"  # renamed, and its first line edited: only the metadata says lesson 02
    nb = nbformat.read(copies[1], as_version=4)
    nb.cells[0].source = "# my notes"
    nb.cells[5].source = "PARITY = 'odd'"
    nbformat.write(nb, alice)
    bob = tmp_path / "bob_01.ipynb"  # renamed, without the metadata (an older copy): its first line says lesson 01
    nb = nbformat.read(copies[0], as_version=4)
    del nb.metadata["hedgekit"]
    nbformat.write(nb, bob)
    out = tmp_path / "grades.json"
    assert main(["grade", str(alice), str(bob), "--reference", str(tmp_path / "lessons"), "--json", str(out)]) == 0
    a, b = json.loads(out.read_text())["notebooks"]
    assert (a["reference"], a["matched_by"], _rows(a)) == (str(refs[1]), "metadata", [
        (1, False, "cell 3: NotImplementedError"), (2, True, "")])
    assert (b["reference"], b["matched_by"], [g["passed"] for g in b["grades"]]) == (str(refs[0]), "header",
                                                                                   [False, False, False])


def test_an_answer_in_a_new_cell_below_the_stub_is_credited(tmp_path):
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    copy = student_notebook(_lesson())
    copy.cells.insert(3, new_code_cell("def square(x):\n    return x * x"))  # no tags: typed in a new cell
    copy.cells.insert(7, new_code_cell("PARITY = 'even'"))
    copy.cells.insert(11, new_code_cell("raise ValueError('a scratch cell that fails')"))
    grades = grade_notebook(_write(tmp_path, "new_cells.ipynb", copy), reference)
    assert _verdicts(grades) == [(1, True, ""), (2, True, ""), (3, False, (
        "cell 12: TypeError: unsupported operand type(s) for ** or pow(): 'ellipsis' and 'int'\n"
        "cell 11: ValueError: a scratch cell that fails"))]  # the check's verdict first, then the student's errors
    assert [g.cells for g in grades] == [[2, 3, 4], [6, 7, 8, 9], [10, 11, 12]]


def test_student_code_cannot_reach_the_checks(tmp_path):
    """Monkeypatched builtins and modules, an edited set-up cell and a patch made when the check calls the student's
    function change the kernel only: the wrong answers fail. An answer that is not data is refused by name."""
    lesson = _lesson()
    lesson.cells[3].source = "got = square(3)\nassert abs(got - 9) < 1e-6, f'square(3) should be 9, got {got}'"
    reference = _write(tmp_path, "ref.ipynb", lesson)
    cheat = copy.deepcopy(lesson)
    cheat.cells[2].source = ("import builtins, math\nbuiltins.abs = lambda x: 0.0\nmath.isclose = lambda *a, **k: True"
                             "\n\n\ndef square(x):\n    builtins.abs = lambda x: 0.0\n    return 0.0")
    cheat.cells[5].source = "PARITY = 'odd'"
    cheat.cells[6].source = "seen = 'odd'  # the set-up cell, edited"
    cheat.cells[8].source = "class Root(float):\n    def __pow__(self, k):\n        return 4.0\n\n\nROOT = Root(3.0)"
    assert _verdicts(grade_notebook(_write(tmp_path, "cheat.ipynb", cheat), reference)) == [
        (1, False, "cell 3: AssertionError: square(3) should be 9, got 0.0"),
        (2, False, "cell 7: AssertionError: expected 'even', got 'odd'"),
        (3, False, "cell 9: ROOT could not be passed to the check: it holds a __main__.Root object; a check receives "
                   "data (numbers, strings, lists, dicts, numpy arrays, torch tensors) and functions\n"
                   "cell 9: NameError: name 'ROOT' is not defined")]


def test_endless_output_is_capped_and_the_other_exercises_are_graded(tmp_path):
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    spam = _lesson()
    spam.cells[5].source = "PARITY = 'even'\nwhile True:\n    print('spam ' * 200)"
    grades = grade_notebook(_write(tmp_path, "spam.ipynb", spam), reference, timeout=60, max_output=1)
    assert _verdicts(grades) == [(1, True, ""), (2, False, "its output passed the 1 MB cap (--max-output) and it "
                                                           "was stopped; print less"), (3, True, "")]
    assert grades[1].seconds < 30  # stopped at the cap, long before the timeout


def test_memory_past_the_cap_is_an_error_of_its_exercise(tmp_path):
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    hungry = _lesson()
    hungry.cells[8].source = "big = bytearray(3 * 2 ** 30)\nROOT = 2.0"
    assert _verdicts(grade_notebook(_write(tmp_path, "hungry.ipynb", hungry), reference, max_memory=1024)) == [
        (1, True, ""), (2, True, ""), (3, False, "cell 8: MemoryError (past the 1024 MB memory cap, --max-memory)\n"
                                                 "cell 9: NameError: name 'ROOT' is not defined")]


@pytest.mark.slow
def test_a_class_of_ten_with_one_broken_copy(tmp_path, capsys):
    reference = _write(tmp_path, "ref.ipynb", _lesson())
    paths = [_write(tmp_path, f"student{i:02d}.ipynb", _lesson(guess='"odd"' if i % 2 else '"even"'))
             for i in range(9)]
    broken = tmp_path / "student09.ipynb"
    broken.write_text('{"cells": "not a list"')
    out = tmp_path / "class.json"
    assert main(["grade", *map(str, paths + [broken]), "--reference", str(reference), "--json", str(out)]) == 0
    records = json.loads(out.read_text())["notebooks"]
    assert [r["passed"] for r in records] == [3, 2, 3, 2, 3, 2, 3, 2, 3, 0]
    assert [r["error"] is None for r in records] == [True] * 9 + [False]
    assert records[9]["error"].startswith(f"could not grade: {broken} cannot be read as a Jupyter notebook")
    assert "9 of 10 notebooks graded" in capsys.readouterr().out


@pytest.mark.slow
def test_a_real_lesson_scores_full_and_its_student_copy_zero(tmp_path, monkeypatch):
    """Notebook 02 as shipped, and its generated student copy, against the repository's notebook (the default); the
    kernels import this checkout's hedgekit, wherever the package was installed from."""
    from hedgekit.paths import REPO_DIR

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_DIR), os.environ.get("PYTHONPATH")])))
    solution = nbformat.read(notebook_dir() / LESSON, as_version=4)
    (tmp_path / "solution").mkdir()
    (tmp_path / "student").mkdir()
    full = grade_notebook(_write(tmp_path / "solution", LESSON, solution), timeout=120)
    assert len(full) >= 2 and all(g.passed for g in full), _verdicts(full)
    zero = grade_notebook(_write(tmp_path / "student", LESSON, student_notebook(solution)), timeout=120)
    assert len(zero) == len(full) and not any(g.passed for g in zero), _verdicts(zero)
    # a function left as its stub raises; an answer left at ... fails its check, which says what it expected
    assert all("NotImplementedError" in g.message or "Ellipsis" in g.message for g in zero), _verdicts(zero)


def test_answers_cross_as_data_and_nothing_else():
    """`hedgekit.repro.answers`: tensors, arrays, generators and containers round-trip as data, a function becomes a
    proxy, an argument's in-place change is copied back; a crafted pickle, an object array or an instance of a
    class of the student's is refused."""
    import io
    import pickle

    import numpy as np
    import torch

    from hedgekit.repro import answers

    value = {"t": torch.arange(6.0).reshape(2, 3).requires_grad_(), "b": torch.ones(2, dtype=torch.bfloat16),
             "e": torch.empty(0, 3), "a": np.arange(4, dtype=np.int16), "s": np.float32(1.5), "g": torch.Generator(),
             "r": np.random.default_rng(3), "m": np, "plain": [1, 2.5, "x", None, (True, b"y"), {3}, ...],
             "f": len}
    calls = []
    back = answers.loads_answer(answers.dumps(value, functions := {}), lambda *a: calls.append(a) or 7)
    assert torch.equal(back["t"].detach(), value["t"].detach()) and back["t"].requires_grad
    assert back["b"].dtype == torch.bfloat16 and back["e"].shape == (0, 3) and back["a"].dtype == np.int16
    assert back["s"] == np.float32(1.5) and back["m"] is np and back["plain"] == value["plain"]
    assert torch.equal(back["g"].get_state(), value["g"].get_state())
    assert back["r"].random() == np.random.default_rng(3).random()
    assert isinstance(back["f"], answers.Proxy) and back["f"]([1, 2]) == 7 and functions[calls[0][0]] is len
    x, g = torch.zeros(3), torch.Generator().manual_seed(0)
    filled, advanced = torch.ones(3), torch.Generator().manual_seed(0)
    torch.rand(2, generator=advanced)
    answers.sync(x, filled)
    answers.sync(g, advanced)
    assert torch.equal(x, filled) and torch.equal(g.get_state(), advanced.get_state())

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    with pytest.raises(pickle.UnpicklingError, match="builtins.print"):
        answers.loads_answer(pickle.dumps(Evil()))
    class Forged(pickle.Pickler):  # raw bytes claimed to be an array of object pointers
        def persistent_id(self, obj):
            return ("ndarray", "|O", (1,), b"\0" * 8) if obj == "forged" else None

    buffer = io.BytesIO()
    Forged(buffer, protocol=4).dump(["forged"])
    with pytest.raises(pickle.UnpicklingError, match="not an array of data"):
        answers.loads_answer(buffer.getvalue())
    with pytest.raises(answers.Unsendable, match="__main__|test_grade"):
        answers.dumps(type("Str", (str,), {"__module__": "__main__"})("x"), {})
