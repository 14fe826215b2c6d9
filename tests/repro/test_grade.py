"""``python -m hedgekit grade`` (`hedgekit.repro.grade`, issue 48 item 4) in real Jupyter kernels: a small synthetic
lesson written here (plain Python, so a kernel starts in about a second) for the verdicts, the messages and the
timeout; notebook 02 and its generated student copy for "solutions score full, student copies score 0"."""
from __future__ import annotations

import json
import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from hedgekit.cli import main
from hedgekit.errors import InputError
from hedgekit.repro.grade import exercises, format_table, grade_notebook
from hedgekit.repro.reproduce import notebook_dir
from hedgekit.repro.students import student_notebook

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
    assert _verdicts(grades) == [(1, False, "the kernel died"), (2, True, ""),
                                 (3, False, "cell 9: NameError: name 'math' is not defined")]  # exercise 1 never ran


def test_format_table_lists_every_exercise():
    from hedgekit.repro.grade import Grade

    table = format_table("a.ipynb", [Grade(1, [2, 3], True, "", 0.1), Grade(2, [5, 6], False, "cell 6: E: x\ny", 1)])
    assert table.splitlines() == ["a.ipynb: 1/2 exercises pass",
                                  "exercise  cells  result  message",
                                  "1         2,3    pass",
                                  "2         5,6    FAIL    cell 6: E: x"]


@pytest.mark.parametrize("content, says", [
    (None, "no such notebook file"),
    ("{not json", "cannot be read as a Jupyter notebook (NotJSONError"),
    ('{"notebook": true}', "cannot be read as a Jupyter notebook"),
    ("[1, 2]", "cannot be read as a Jupyter notebook"),
])
def test_an_unreadable_notebook_exits_2_with_one_paragraph(tmp_path, capsys, content, says):
    path = tmp_path / "bad.ipynb"
    if content is not None:
        path.write_text(content)
    good = _write(tmp_path, "good.ipynb", _lesson())
    assert main(["grade", str(good), str(path), "--reference", str(good)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}") and says in err and err.count("\n") == 1
    assert not (tmp_path / "good.grade.json").exists()  # refused before any notebook is graded


def test_a_notebook_without_reference_or_with_other_exercises_exits_2(tmp_path, capsys):
    path = _write(tmp_path, "99_mine.ipynb", _lesson())
    assert main(["grade", str(path)]) == 2
    assert "is not a notebook of" in capsys.readouterr().err
    shorter = _lesson()
    del shorter.cells[8:]
    assert main(["grade", str(_write(tmp_path, "short.ipynb", shorter)), "--reference", str(path)]) == 2
    assert "has 2 exercises and its reference 3" in capsys.readouterr().err


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
