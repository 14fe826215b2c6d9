"""docs/results.md (`hedgekit.repro.results`): the committed file is what the command writes; its tallies
are the notebooks' verdict rows counted one by one; its paper columns are the papers' `numbers` modules."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from hedgekit.errors import InputError
from hedgekit.papers.hib import numbers as hib
from hedgekit.papers.spe import numbers as spe
from hedgekit.repro import results as R
from hedgekit.repro.rendered import partial_run, verdict_blocks
from hedgekit.paths import notebook_dir
from hedgekit.repro.catalog import select

MARKS = {"✅": 0, "❌": 1, "–": 2}


@pytest.fixture(scope="module")
def generated() -> str:
    from hedgekit.papers.unjudged import UNJUDGED

    return R.generate(UNJUDGED)


def _section(text: str, title: str) -> str:
    start = text.index(title)
    end = re.search(r"^##+ ", text[start + len(title):], re.M)
    return text[start:start + len(title) + end.start()] if end else text[start:]


def _rows(section: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("|---")]


def test_docs_results_is_what_the_command_writes(generated):
    assert R.results_path().read_text() == generated, "docs/results.md is stale: run `python -m hedgekit results`"


def test_docs_results_ends_with_the_ledgers_audits_as_recorded(generated):
    from hedgekit.repro.audit import audit_log, audit_section

    section = "\n".join(audit_section(audit_log(R.COMMITTED_LEDGER)))  # the committed ledger's, not the tests'
    assert "708653494" in section  # the first audit (docs/ledger.md)
    assert generated.rstrip().endswith(section) and section.startswith("## Audits of the ledger")
    assert R.render([], audits=["## Audits", "x"]).rstrip().endswith("## Audits\nx")


def test_cli_check_and_write(tmp_path, capsys):
    from hedgekit.cli import main

    out = tmp_path / "results.md"
    assert main(["results", "--out", str(out), "--check"]) == 1
    assert main(["results", "--out", str(out)]) == 0
    assert main(["results", "--out", str(out), "--check"]) == 0
    assert out.read_text() == R.results_path().read_text()


def test_tallies_are_the_verdict_rows_counted(generated):
    """Each notebook's row in the summary = its verdict tables' ✅ / ❌ / – rows, counted here one by one;
    each verdict's own bold line says the same."""
    import nbformat

    summary = {r[0]: r for r in _rows(generated.split("\n## ")[0])}
    counted_notebooks = 0
    for name in select():
        blocks = verdict_blocks(nbformat.read(notebook_dir() / name, as_version=4))
        if not blocks:
            continue
        total = [0, 0, 0]
        for block in blocks:
            counts = [0, 0, 0]
            for row in _rows(block.split("**Shown, not counted**")[0]):  # a verdict counted elsewhere counts 0
                if row[0] in MARKS:
                    counts[MARKS[row[0]]] += 1
            assert tuple(counts) == R.tally(block), block.splitlines()[0]
            total = [t + c for t, c in zip(total, counts)]
        stem = name.removesuffix(".ipynb")
        row = summary[f"[{stem}](#{stem})"]
        assert [int(c) for c in row[5:8]] == total, stem
        counted_notebooks += 1
    assert counted_notebooks >= 9
    all_row = summary["**all**"]
    assert sum(int(c.strip("*")) for c in all_row[5:8]) == sum(
        int(r[5]) + int(r[6]) + int(r[7]) for k, r in summary.items() if k.startswith("["))


def test_hib_table1_paper_columns_are_numbers_py(generated):
    section = _section(generated, "### Table 1 — AP and KNN accuracy")
    rows = _rows(section)
    header, body = rows[0], rows[1:]
    checked = 0
    for row in body:
        cells = dict(zip(header, row))
        key = f"{cells['task'].lower()}_{cells['split']}"
        for model in ("point", "MoG-1", "MoG-2"):
            expected = hib.HIB_TABLE1[(int(cells["N"]), int(cells["D"]))][model][key]
            assert float(cells[f"{model} paper"]) == pytest.approx(expected, abs=5e-4), (cells["N"], cells["D"], key)
            checked += 1
    assert checked == 4 * 4 * 3  # (N, D) in (2, 2), (2, 3), (3, 2), (3, 3); 4 metrics; 3 models


def test_spe_table2_paper_rows_are_numbers_py(generated):
    rows = _rows(_section(generated, "### Table 2 — ours beside the paper"))
    header, body = rows[0], rows[1:]
    checked = 0
    for row in body:
        cells = dict(zip(header, row))
        if cells["source"] != "paper" or cells["method"] not in ("PN", "SPE"):
            continue
        for column, value in cells.items():
            m = re.fullmatch(r"(seen|unseen) N(\d)D(\d)", column)
            if m:
                expected = spe.paper_table2(cells["condition"], cells["method"], m.group(1), int(m.group(2)),
                                            int(m.group(3)))
                assert float(value) == pytest.approx(expected, abs=5e-4), (cells["condition"], column)
                checked += 1
    assert checked == 3 * 2 * 8  # 3 conditions, PN and SPE, seen and unseen x 4 settings


def test_html_table_markdown_of_a_dataframe():
    df = pd.DataFrame({"ours": [0.5, float("nan")], "paper": ["a|b", "c"]},
                      index=pd.Index(["AP", "KNN"], name="metric"))
    assert R.html_table_markdown(df.to_html()) == ("| metric | ours | paper |\n|---|---|---|\n"
                                                   "| AP | 0.5 | a\\|b |\n| KNN | — | c |")
    with pytest.raises(InputError, match="no <table> rows"):
        R.html_table_markdown("<p>no table</p>")


def test_tally_needs_the_bold_line():
    assert R.tally("### What matched ...\n\n**3 matched, 2 did not** (computed)") == (3, 2, 0)
    assert R.tally("**0 matched, 1 did not, 4 inconclusive**") == (0, 1, 4)
    # the one vocabulary of hedgekit.papers.verdict; sanity checks after the tally are not counted
    assert R.tally("**2 matched, 5 not matched, 1 inconclusive** (computed); 6 sanity check(s) listed apart") == (2, 5, 1)
    assert R.tally("**0 matched, 0 not matched** (computed from the numbers above); 6 sanity check(s)") == (0, 0, 0)
    # which rules rendered a block: the claims tables (the tally line says what decided), or the ones before
    assert R.is_current(CURRENT) and not R.is_current("**2 matched, 5 not matched** (computed)")
    assert not R.is_current("**3 matched, 2 did not**")
    assert not R.is_current(CURRENT.replace(", bands held to the policy", ""))  # claims tables before the band policy
    from hedgekit.papers import verdict as V
    from hedgekit.repro.rendered import POLICY_MARK

    assert V.POLICY_MARK == POLICY_MARK and R.is_current(V.Verdict("t").markdown())  # what the engine writes
    assert not R.is_current("no tally at all")
    with pytest.raises(InputError, match="no '\\*\\*N matched"):
        R.tally("### What matched, what did not, and why — x\n\nnothing")


CURRENT = ("**2 matched, 1 not matched** (computed from the numbers above, bands held to the policy; 2 decided on trained seeds; 1 on "
           "evaluation repeats only; 4 sanity check(s) listed apart, 4 passed; 1 condition(s) listed apart, 1 held).")


def test_the_note_on_earlier_rules_appears_only_while_a_notebook_has_them():
    current = R.NotebookResults("04_x", "x", "full", "2026-11-27 03:30", 60.0, verdicts=[CURRENT])
    earlier = R.NotebookResults("07_y", "y", "full", "2026-11-26 11:56", 60.0, verdicts=[
        "**3 matched, 2 not matched** (computed from the numbers above); 6 sanity check(s) listed apart, 6 passed."])
    oldest = R.NotebookResults("08_z", "z", "full", "2026-11-25 11:56", 60.0, verdicts=["**3 matched, 2 did not**"])
    text = R.render([current])
    assert "says *earlier* under *rules*" not in text and "1 of the 1 notebooks with verdicts" in text
    assert "| current | 2 | 1 | 0 | 2 | 1 | 4 | 1 |" in text and "| **all** | | | | | **2** | **1** | **0** | **2** |" in text
    text = R.render([current, earlier, oldest])
    assert "says *earlier* under *rules*" in text and "1 of the 3 notebooks with verdicts" in text
    assert "| *earlier* | 3 | 2 | 0 | — | — | 6 | — |" in text and "| *earlier* | 3 | 2 | 0 | — | — | 0 | — |" in text
    assert "| **all** | | | | | **8** | **5** | **0** | — | — | **10** | — |" in text


def test_the_extra_columns_are_read_from_each_verdicts_tally_line():
    assert R.extras(CURRENT) == (2, 1, 4, 1) and R.is_current(CURRENT)
    older = "**0 matched, 0 not matched** (computed from the numbers above); 6 sanity check(s) listed apart, 6 passed."
    assert R.extras(older) == (None, None, 6, None) and not R.is_current(older)
    no_conditions = CURRENT.replace("; 1 condition(s) listed apart, 1 held", "")
    assert R.extras(no_conditions) == (2, 1, 4, 0)


# ---------------------------------------------------------------------------- partial runs are refused
def _point_results_at(monkeypatch, folder, names):
    """`python -m hedgekit results` reads ``names`` in ``folder`` instead of the committed notebooks."""
    from hedgekit.repro import catalog

    monkeypatch.setattr(catalog, "NOTEBOOKS", {"x": list(names)})
    monkeypatch.setattr(R, "notebook_dir", lambda: folder)


def _unrun_from(nb, index: int):
    """``nb`` as papermill leaves a run stopped before cell ``index``: later code cells without count or outputs."""
    for cell in nb.cells[index:]:
        if cell.cell_type == "code":
            cell.execution_count, cell.outputs = None, []
    return nb


def test_a_crafted_partial_notebook_is_refused_by_name_with_exit_2(tmp_path, monkeypatch, capsys):
    """The fault this guards against: notebook 02 with 9 of its code cells run was published ("fast, 0 matched") with exit
    0. Now the command names it, says why, exits 2 and writes nothing; the complete notebooks still render."""
    import shutil

    import nbformat

    from hedgekit.cli import main

    name, other = "02_hib_embeddings.ipynb", "03_self_organization.ipynb"
    for nb in (name, other):
        shutil.copy(notebook_dir() / nb, tmp_path / nb)
    _point_results_at(monkeypatch, tmp_path, [name, other])
    out = tmp_path / "results.md"
    assert main(["results", "--out", str(out)]) == 0 and "## 02_hib_embeddings" in out.read_text()
    out.unlink()
    committed = nbformat.read(tmp_path / name, as_version=4)
    code = [i for i, c in enumerate(committed.cells) if c.cell_type == "code"]
    nbformat.write(_unrun_from(committed, code[9]), tmp_path / name)  # the case: 9 code cells ran
    assert main(["results", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: results are rendered from complete runs only; 02_hib_embeddings.ipynb is a partial "
                          f"run: {len(code) - 9} of its {len(code)} code cells did not run (no execution count, from "
                          f"cell {code[9] + 1} on)") and other not in err and "\n" not in err
    assert not out.exists()
    assert main(["results", "--out", str(out), "--check"]) == 2  # --check refuses too: there is nothing to compare


def test_a_notebook_with_an_injected_parameters_cell_is_refused(tmp_path, monkeypatch, capsys):
    import nbformat

    from hedgekit.cli import main

    nb = nbformat.read(notebook_dir() / "05_kl_and_soft_contrastive.ipynb", as_version=4)
    injected = nbformat.v4.new_code_cell('FAST = True\nREPORT_DIR = "../reports/assets/05"', execution_count=3)
    injected.metadata["tags"] = ["injected-parameters"]
    params = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(params + 1, injected)  # every cell run: only the injected cell gives it away
    nbformat.write(nb, tmp_path / "05_x.ipynb")
    _point_results_at(monkeypatch, tmp_path, ["05_x.ipynb"])
    assert main(["results", "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert (f"05_x.ipynb is a partial run: cell {params + 2} is papermill's injected-parameters cell, which a run "
            "written back by `reproduce --inplace` only loses once it finished") in err


def test_partial_run_rule_on_small_cases():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), nbformat.v4.new_code_cell("x = 1", execution_count=1),
                nbformat.v4.new_code_cell("   \n"),  # empty: never executed, never counts
                nbformat.v4.new_code_cell("y = 2", execution_count=2)]
    assert partial_run(nb) is None
    nb.cells[3].execution_count = None  # a cell without output may be complete; a cell without count did not run
    assert partial_run(nb) == ("1 of its 2 code cells did not run (no execution count, from cell 4 on), so the run "
                                 "stopped part-way")
    assert all(partial_run(nbformat.read(notebook_dir() / name, as_version=4)) is None for name in select())


def test_a_verdicts_forest_plot_in_the_report_is_embedded_under_its_notebook(tmp_path, monkeypatch):
    """Verdict.show hands the forest plot to the report; `collect` finds it in the notebook's assets and `render`
    embeds it, as a link relative to docs/, below the notebook's verdicts."""
    import matplotlib

    matplotlib.use("Agg")
    import nbformat
    from IPython import display as ipd

    from hedgekit.papers import verdict as V
    from hedgekit.repro.report import Report

    monkeypatch.setattr(ipd, "display", lambda *a, **k: None)  # outside a kernel: nothing to show
    v = V.Verdict("t").decide([V.Row("r", "A beats B", "Table 1", V.SIZE, lambda m: m, paper=2.0,
                                     band=V.factor_band, reason="half to twice", compares="A − B: metric")],
                                    [1.5, 2.0, 2.5])
    report_dir = tmp_path / "report"
    v.show(Report(report_dir / "assets" / "07_x"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("verdict.show(report)", execution_count=1, outputs=[
        nbformat.v4.new_output("display_data", data={"text/markdown": v.markdown()})])]
    nbformat.write(nb, tmp_path / "07_x.ipynb")
    (r,) = R.collect([tmp_path / "07_x.ipynb"], report_dir)
    assert [name for name, _ in r.forests] == ["What matched (forest plot)"]
    assert (R.REPO_DIR / "docs" / r.forests[0][1]).resolve() == (report_dir / "assets" / "07_x" /
                                                                 "what-matched-forest-plot.png").resolve()
    assert f"![What matched (forest plot)]({r.forests[0][1]})" in R.render([r])
