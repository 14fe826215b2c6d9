"""Student versions (`hedgekit.repro.students`) on tiny hand-built notebooks: each expected source is
written out by hand."""
from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from hedgekit.errors import InputError
from hedgekit.repro.students import run_exercises, strip_solutions, student_notebook, write_students


def test_region_at_top_level():
    src = "x = 1\n### BEGIN SOLUTION\nMY_GUESS = f(x)\nprint(MY_GUESS)\n### END SOLUTION\nprint(x)\n"
    assert strip_solutions(src) == "x = 1\nraise NotImplementedError()\nprint(x)\n"


def test_an_answer_region_becomes_the_names_the_check_reads_with_their_choices():
    """A region that only sets the answers (one name per line) keeps the names, set to ..., and each line's own
    comment (the choices), so a learner's right answer under the stub's names is what the check reads."""
    src = ('### BEGIN SOLUTION\nGUESS_BETA_0 = "shrink to 0"  # one of "shrink to 0", "grow"\n'
           "GUESS_BETA_1 = 'move to 1'\n### END SOLUTION\ncheck(GUESS_BETA_0, GUESS_BETA_1)\n")
    assert strip_solutions(src) == ('GUESS_BETA_0 = ...  # your answer; one of "shrink to 0", "grow"\n'
                                    "GUESS_BETA_1 = ...  # your answer\ncheck(GUESS_BETA_0, GUESS_BETA_1)\n")
    assert "shrink" not in strip_solutions(src).split("# your answer")[0]  # the value is gone
    # anything else (a call with keywords, a second statement on a line, nothing at all) stays the raising stub
    for region in ("A = f(k=1)\n", "A = 1; B = 2\n", "for i in range(3):\n    A = i\n", ""):
        assert strip_solutions(f"### BEGIN SOLUTION\n{region}### END SOLUTION\n") == "raise NotImplementedError()\n"


def test_nested_indentation_keeps_the_markers_indentation():
    src = ("def f(x):\n"
           "    if x > 0:\n"
           "        ### BEGIN SOLUTION\n"
           "        y = x * 2\n"
           "        return y\n"
           "        ### END SOLUTION\n"
           "    return 0")
    assert strip_solutions(src) == ("def f(x):\n"
                                    "    if x > 0:\n"
                                    "        raise NotImplementedError()\n"
                                    "    return 0")


def test_several_regions_in_one_cell():
    src = ("def f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n\n\n"
           "def g(x):\n\t### BEGIN SOLUTION\n\treturn x - 1\n\t### END SOLUTION\n"
           "### BEGIN SOLUTION\nA = 3\n### END SOLUTION\n")
    assert strip_solutions(src) == ("def f(x):\n    raise NotImplementedError()\n\n\n"
                                    "def g(x):\n\traise NotImplementedError()\n"
                                    "A = ...  # your answer\n")


def test_a_cell_without_markers_is_unchanged():
    src = "import torch\n# ## BEGIN SOLUTION is not a marker\nx = torch.ones(2)"
    assert strip_solutions(src) == src


@pytest.mark.parametrize("src, message", [
    ("x = 1\n### END SOLUTION\n", "line 2: '### END SOLUTION' without"),
    ("### BEGIN SOLUTION\nx = 1\n", "line 1: '### BEGIN SOLUTION' is never closed"),
    ("### BEGIN SOLUTION\n  ### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", "line 2: '### BEGIN SOLUTION' inside"),
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n### END SOLUTION\n", "line 4: '### END SOLUTION' without"),
])
def test_malformed_markers_raise_a_clear_error(src, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        strip_solutions(src, "nb, cell 3")
    with pytest.raises(InputError, match="nb, cell 3"):
        strip_solutions(src, "nb, cell 3")


def _notebook():
    prompt = new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
                           metadata={"tags": ["exercise"]})
    prompt.outputs = [new_output("stream", name="stdout", text="the answer\n")]
    prompt.execution_count = 4
    check = new_code_cell("assert f(2) == 4", metadata={"tags": ["exercise", "check"]})
    check.outputs = [new_output("stream", name="stdout", text="passed\n")]
    other = new_code_cell("print('kept')")
    other.outputs = [new_output("stream", name="stdout", text="kept\n")]
    return new_notebook(cells=[new_markdown_cell("### BEGIN SOLUTION in prose stays"), other, prompt, check])


def test_student_notebook_replaces_solutions_clears_exercise_outputs_and_keeps_the_rest():
    nb = _notebook()
    student = student_notebook(nb, "tiny.ipynb")
    assert student.cells[0].source == "### BEGIN SOLUTION in prose stays"
    assert student.cells[1].outputs == nb.cells[1].outputs  # not an exercise: outputs kept
    assert student.cells[2].source == "def f(x):\n    raise NotImplementedError()"
    assert student.cells[2].outputs == [] and student.cells[2].execution_count is None
    assert student.cells[3].source == "assert f(2) == 4" and student.cells[3].outputs == []
    assert "return 2 * x" in nb.cells[2].source and nb.cells[2].outputs  # the input is not modified


def test_a_marker_not_alone_on_its_line_is_refused():
    nb = new_notebook(cells=[new_code_cell("x = 2  ### BEGIN SOLUTION\n")])
    with pytest.raises(InputError, match="tiny.ipynb, cell 0: a solution marker must stand alone"):
        student_notebook(nb, "tiny.ipynb")


def test_write_students_writes_every_notebook_or_none(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    nbformat.write(_notebook(), src / "01_a.ipynb")
    written = write_students(tmp_path / "out", [src / "01_a.ipynb"])
    assert [p.name for p in written] == ["01_a.ipynb"]
    assert "NotImplementedError" in nbformat.read(written[0], as_version=4).cells[2].source
    nbformat.write(new_notebook(cells=[new_code_cell("### END SOLUTION")]), src / "02_b.ipynb")
    with pytest.raises(InputError, match="02_b.ipynb, cell 0"):
        write_students(tmp_path / "out2", [src / "01_a.ipynb", src / "02_b.ipynb"])
    assert not (tmp_path / "out2").exists()


def test_run_exercises_runs_tagged_cells_in_one_namespace_and_records_errors():
    nb = _notebook()
    solution = run_exercises(nb, "tiny")
    assert [(r.index, r.is_check, r.error) for r in solution] == [(2, False, None), (3, True, None)]
    student = run_exercises(student_notebook(nb), "tiny")
    assert student[0].error is None  # defining the stub does not raise; calling it does
    assert isinstance(student[1].error, NotImplementedError) and "f(2)" in student[1].trace
    with pytest.raises(InputError, match="no code cell tagged 'exercise'"):
        run_exercises(new_notebook(cells=[new_code_cell("x = 1")]), "tiny")


def test_cli_students_writes_the_folder(tmp_path, capsys):
    from hedgekit.cli import main
    from hedgekit.repro.students import notebook_paths

    assert main(["students", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in notebook_paths()]
    assert f"{len(notebook_paths())} student notebooks written" in capsys.readouterr().out
