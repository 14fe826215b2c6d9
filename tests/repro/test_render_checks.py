"""hedgekit.repro.render_checks: `results` refusing a render that is not whole (cells cleared or cut short, an error,
claims missing) or that decides a claim on fewer trained seeds than the committed one, in a git repository of the
test's own; docs are left as they were."""
from __future__ import annotations

import subprocess

import nbformat
import pytest

from hedgekit import cli
from hedgekit.papers import verdict as V
from hedgekit.repro import render_checks as RS
from hedgekit.repro import results

ROWS = [V.Row("gap", "A beats B", "Table 1", V.SIZE, lambda m: m["gap"], paper=2.0, band=V.factor_band,
              reason="half to twice", compares="A − B: metric"),
        V.Row("level", "A is 3", "Table 2", V.LEVEL, lambda m: m["level"], paper=3.0, band=(2.0, 4.0),
              reason="± 1", compares="A: metric", null=0.0, noise=V.EVALUATION)]


def _notebook(gap_runs: list[float]) -> nbformat.NotebookNode:
    """A notebook whose one output is a verdict: the gap decided on ``gap_runs`` (trained seeds), the level on the
    evaluation repeats of one trained model."""
    v = V.Verdict("07 test").decide(ROWS, {"gap": gap_runs, "level": [2.9, 3.0, 3.1]})
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"step_{i}", execution_count=i + 1) for i in range(3)]
    nb.cells.append(nbformat.v4.new_code_cell("v", execution_count=4, outputs=[
        nbformat.v4.new_output("display_data", data={"text/markdown": v.markdown()})]))
    return nb


def test_claim_seeds_reads_the_runs_of_seeded_claims_and_one_for_a_single_trained_model():
    seeds = RS.claim_seeds(_notebook([2.0, 2.1, 1.9]))
    assert sorted(seeds.values()) == [1, 3] and len(seeds) == 2
    assert any(k.endswith(":: Table 1: A beats B") and v == 3 for k, v in seeds.items())


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository holding notebooks/07_test.ipynb rendered on 3 seeds, committed; `results` writes into it."""
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@t")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "notebooks" / "07_test.ipynb"
    nbformat.write(_notebook([2.0, 2.1, 1.9]), str(path))
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "render on 3 seeds")
    monkeypatch.setattr(results, "notebook_dir", lambda: tmp_path / "notebooks")
    monkeypatch.setattr(results, "select", lambda only=None, registry=None: ["07_test.ipynb"])
    monkeypatch.setattr(results, "generate", lambda unjudged=(): "generated\n")
    return path


def test_results_refuses_a_render_on_fewer_seeds_and_names_the_claim(repo, capsys):
    out = repo.parent.parent / "results.md"
    assert RS.fewer_seeds(repo) == []  # the working copy is the committed render: nothing to judge
    nbformat.write(_notebook([2.0, 2.1]), str(repo))  # re-rendered on 2 seeds
    (claim, was, now), = RS.fewer_seeds(repo)
    assert claim.endswith("Table 1: A beats B") and (was, now) == (3, 2)
    assert cli.main(["results", "--out", str(out)]) == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "07_test.ipynb:" in err and "Table 1: A beats B: 3 -> 2 seed(s)" in err and "--fewer-seeds-because" in err
    assert cli.main(["results", "--out", str(out), "--fewer-seeds-because", "seed 2's checkpoint was lost"]) == 0
    assert out.read_text() == "generated\n" and "because: seed 2's checkpoint was lost" in capsys.readouterr().out


def test_results_writes_a_render_on_as_many_seeds_or_more(repo):
    out = repo.parent.parent / "results.md"
    nbformat.write(_notebook([2.0, 2.1, 1.9, 2.05]), str(repo))  # 4 seeds
    assert RS.fewer_seeds(repo) == [] and cli.main(["results", "--out", str(out)]) == 0
    assert cli.main(["results", "--out", str(out), "--fewer-seeds-because", " "]) == 2  # no reason: refused


def test_outside_a_git_checkout_there_is_no_previous_render(tmp_path):
    path = tmp_path / "07_test.ipynb"
    nbformat.write(_notebook([2.0, 2.1, 1.9]), str(path))
    assert RS.previous_render(path) is None and RS.fewer_seeds(path) == []


def test_a_render_whose_verdict_output_was_emptied_is_refused_with_docs_untouched(repo, capsys):
    out = repo.parent.parent / "results.md"
    out.write_text("the published page\n")
    assert RS.damage(repo) == []
    nb = nbformat.read(str(repo), as_version=4)
    nb.cells[3].outputs = []  # what a crashed editor leaves: the counts kept, the verdict's output gone
    nbformat.write(nb, str(repo))
    (why,) = RS.damage(repo)
    assert why.endswith("lists 0 claims, 2 in the committed render")
    assert cli.main(["results", "--out", str(out)]) == 2 and out.read_text() == "the published page\n"
    assert "07_test.ipynb: its verdict" in capsys.readouterr().err


def test_an_error_output_or_a_verdict_with_fewer_claims_than_the_committed_render_is_damage(repo):
    nb = nbformat.read(str(repo), as_version=4)
    nb.cells[1].outputs = [nbformat.v4.new_output("error", ename="KeyError", evalue="x", traceback=[])]
    md = nb.cells[3].outputs[0]["data"]["text/markdown"]
    nb.cells[3].outputs[0]["data"]["text/markdown"] = "\n".join(
        line for line in md.splitlines() if "A beats B" not in line)  # a claim cut from the table
    nbformat.write(nb, str(repo))
    (error, fewer) = RS.damage(repo)
    assert error == "code cell(s) 2 hold an error"
    assert fewer.endswith("lists 1 claims, 2 in the committed render") and "07 test" in fewer
