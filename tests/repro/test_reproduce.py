"""`python -m hedgekit reproduce`: registry, report hand-off and summary, on a tiny fake notebook."""
from __future__ import annotations

import json
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from hedgekit import cli  # noqa: E402
from hedgekit.repro import pool as P  # noqa: E402
from hedgekit.repro import catalog  # noqa: E402
from hedgekit.repro import reproduce as R  # noqa: E402
from hedgekit.errors import InputError  # noqa: E402
from hedgekit.paths import notebook_dir  # noqa: E402
from hedgekit.repro.report import Report, dataframe_markdown, read_manifest, slug  # noqa: E402
from hedgekit.repro.summary import write_summary  # noqa: E402

FAKE = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from hedgekit.repro.report import Report
report = Report(REPORT_DIR, "fake")
report.table("Table 1 (fake)", pd.DataFrame({"ours": [0.5], "paper": [0.6], "Δ": [-0.1]}, index=["AP"]))
fig, ax = plt.subplots()
ax.plot([0, 1], [0, FAST + 1])
report.figure("Figure 1", fig)
report.text("What matched", "**1 matched, 0 did not** — FAST=" + str(FAST))
report.meta(mode="fast" if FAST else "full", runtime_s=0.1, checkpoints=[])
"""


def _notebook(path, body, fail=False):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('FAST = False\nREPORT_DIR = ""')
    params.metadata["tags"] = ["parameters"]
    cells = [nbformat.v4.new_code_cell("x = 1"), params, nbformat.v4.new_code_cell(body)]
    if fail:
        cells.append(nbformat.v4.new_code_cell("raise ValueError('boom in the notebook')"))
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_registry_and_selection():
    assert catalog.NOTEBOOKS["hib"][0] == "01_ndigit_mnist.ipynb" and len(catalog.NOTEBOOKS["hib"]) == 5
    assert "spe" in catalog.NOTEBOOKS
    reg = {"hib": ["01_a.ipynb", "02_b.ipynb"], "spe": ["06_c.ipynb"]}
    assert catalog.select(None, reg) == ["01_a.ipynb", "02_b.ipynb", "06_c.ipynb"]
    assert catalog.select("spe", reg) == ["06_c.ipynb"]
    assert catalog.select(["02", "spe"], reg) == ["02_b.ipynb", "06_c.ipynb"]
    assert catalog.select("hib,02_b", reg) == ["01_a.ipynb", "02_b.ipynb"]
    assert catalog.select(["06,01", "02"], reg) == ["06_c.ipynb", "01_a.ipynb", "02_b.ipynb"]  # argparse append + commas
    with pytest.raises(InputError, match="not a group"):
        catalog.select("nope", reg)
    for nb in catalog.NOTEBOOKS["hib"]:
        assert (notebook_dir() / nb).is_file(), nb


def test_register(monkeypatch):
    monkeypatch.setattr(catalog, "NOTEBOOKS", {"hib": ["01_a.ipynb"]})
    catalog.register("spe", "06_spe.ipynb", "07_spe.ipynb", "06_spe.ipynb")
    assert catalog.NOTEBOOKS["spe"] == ["06_spe.ipynb", "07_spe.ipynb"]
    with pytest.raises(InputError, match="ipynb"):
        catalog.register("spe", "08_no_suffix")


def test_report_is_a_noop_without_a_folder(tmp_path):
    r = Report("", "x")
    assert not r.enabled
    assert r.table("t", "| a |") is None and r.text("t", "x") is None and r.meta(a=1) is None
    fig, _ = plt.subplots()
    assert r.figure("f", fig) is None
    plt.close(fig)
    assert list(tmp_path.iterdir()) == []


def test_report_writes_files_and_manifest(tmp_path):
    r = Report(tmp_path / "nb", "nb")
    df = pd.DataFrame({"ours": [0.5, float("nan")], "paper": [0.6, 0.7]}, index=pd.Index(["a", "b"], name="metric"))
    r.table("Table 1", df, note="n")
    r.table("Table 1", "| x |\n|---|\n| 1 |")  # same name: a second file, not an overwrite
    fig, _ = plt.subplots()
    r.figure("Fig 3", fig)
    plt.close(fig)
    import plotly.graph_objects as go

    r.figure("Fig 8", go.Figure(go.Scatter(x=[1], y=[2])))
    r.text("verdict", "**ok**")
    entries = read_manifest(tmp_path / "nb")
    assert [e["kind"] for e in entries] == ["table", "table", "figure", "plotly", "text"]
    assert entries[0]["file"] == "table-1.md" and entries[1]["file"] == "table-1-2.md"
    md = (tmp_path / "nb" / "table-1.md").read_text()
    assert "| metric | ours | paper |" in md and "| b | — | 0.700 |" in md
    assert (tmp_path / "nb" / "table-1.csv").is_file() and (tmp_path / "nb" / "fig-3.png").stat().st_size > 1000
    assert (tmp_path / "nb" / "plotly.min.js").is_file()  # offline plotly
    import plotly

    html = (tmp_path / "nb" / "fig-8.html").read_text()  # ... and the CDN when plotly.min.js is left out
    cdn = f"https://cdn.plot.ly/plotly-{plotly.offline.get_plotlyjs_version()}.min.js"
    assert html.count(cdn) == 1 and html.index('src="plotly.min.js"') < html.index(cdn) < html.index("newPlot")
    Report(tmp_path / "nb", "nb").text("again", "x")  # a re-opened report appends
    assert len(read_manifest(tmp_path / "nb")) == 6
    with pytest.raises(InputError):
        r.table("bad", 3)
    with pytest.raises(InputError):
        r.figure("bad", object())


def test_helpers():
    assert slug("Table 1 (N=2, D=2)") == "table-1-n-2-d-2" and slug("!!") == "item"
    assert dataframe_markdown(pd.DataFrame({"a": [1.23456], "b": ["x|y"]})) == "| a | b |\n|---|---|\n| 1.235 | x\\|y |"


def test_write_summary_without_running(tmp_path):
    r = Report(tmp_path / "assets" / "01_x", "01_x")
    r.table("T", pd.DataFrame({"ours": [1.0]}))
    r.meta(runtime_s=2.0, checkpoints=[dict(name="m", source="cache", steps=5, train_seconds=1.0, sha256="abc"),
                                       dict(name="g", source="trained now", steps=5, train_seconds=1.0, sha256="d",
                                            device="cuda:0 (Card)")], versions={"torch": "x"})
    runs = [dict(notebook="01_x.ipynb", output="notebooks/01_x.ipynb", status="ok", error="", seconds=3.0,
                 assets="assets/01_x"),
            dict(notebook="02_y.ipynb", output="notebooks/02_y.ipynb", status="failed", error="ValueError: boom",
                 seconds=1.0, assets="assets/02_y")]
    path = write_summary(runs, tmp_path, fast=True, total_seconds=4.0)
    md = path.read_text()
    today = time.strftime("%Y-%m-%d")
    assert "FAST" in md and f"| [01_x.ipynb](notebooks/01_x.ipynb) | ok | 3 s | {today}" in md and " | 2 | 1 |" in md
    assert "ValueError: boom" in md and "`m` — cache, 5 steps, trained 1 s, sha256 abc" in md and "torch x" in md
    assert "`g` — trained now, 5 steps, trained 1 s on cuda:0 (Card), sha256 d" in md  # where it trained, if recorded
    assert (tmp_path / "summary.html").read_text().count("<table>") >= 2
    assert json.loads((tmp_path / "run.json").read_text())["runs"][1]["status"] == "failed"


def test_trained_in_run_counts_the_checkpoints_the_last_run_trained_and_their_seconds(tmp_path):
    assert R.trained_in_run(tmp_path / "none") == (0, 0.0)  # no manifest: nothing trained
    r = Report(tmp_path / "nb", "nb")
    r.meta(runtime_s=1.0, checkpoints=[dict(name="old", source="trained now", train_seconds=99.0)])  # an earlier entry
    r.table("T", pd.DataFrame({"ours": [1.0]}))
    assert R.trained_in_run(tmp_path / "nb") == (1, 99.0)
    r.meta(runtime_s=2.0, checkpoints=[dict(name="a", source="cache", train_seconds=500.0),
                                       dict(name="b", source="trained now", train_seconds=30.5),
                                       dict(name="c", source="trained now", train_seconds=12.0),
                                       dict(name="d", source="shipped", train_seconds=800.0)])
    assert R.trained_in_run(tmp_path / "nb") == (2, 42.5)  # the last run's header wins
    r.meta(runtime_s=3.0, checkpoints=[dict(name="a", source="cache", train_seconds=500.0)])
    assert R.trained_in_run(tmp_path / "nb") == (0, 0.0)


def test_a_registered_notebook_that_never_ran_is_listed_as_not_run(tmp_path):
    """The committed report lacked notebook 09 without saying so: every registered notebook shows up."""
    reg = {"hib": ["01_x.ipynb"], "url": ["09_z.ipynb"]}
    Report(tmp_path / "assets" / "01_x", "01_x").table("T", pd.DataFrame({"ours": [1.0]}))
    rec = dict(notebook="01_x.ipynb", output="notebooks/01_x.ipynb", status="ok", error="", seconds=3.0,
               assets="assets/01_x")
    md = write_summary([rec], tmp_path, fast=False, total_seconds=3.0,
                       registered=catalog.select(None, reg)).read_text()
    assert "| 09_z.ipynb | **not run** | — | — | — | — |" in md
    assert "Registered but not in this report: 09_z.ipynb. Add it with `python -m hedgekit reproduce --only" in md
    assert json.loads((tmp_path / "run.json").read_text())["missing"] == ["09_z.ipynb"]
    # once it has run (a later call into the same folder), it is no longer missing
    Report(tmp_path / "assets" / "09_z", "09_z").table("U", pd.DataFrame({"ours": [2.0]}))
    rec9 = dict(rec, notebook="09_z.ipynb", output="notebooks/09_z.ipynb", assets="assets/09_z")
    md = write_summary([rec9], tmp_path, fast=False, total_seconds=3.0,
                       registered=catalog.select(None, reg)).read_text()
    assert "not run" not in md and "[09_z.ipynb]" in md and "[01_x.ipynb]" in md
    assert json.loads((tmp_path / "run.json").read_text())["missing"] == []
@pytest.mark.slow  # starts a Jupyter kernel (~8 s)


def test_reproduce_runs_a_fake_notebook(tmp_path):
    src = tmp_path / "nbs"
    src.mkdir()
    _notebook(src / "01_fake.ipynb", FAKE)
    _notebook(src / "02_broken.ipynb", "y = 2", fail=True)
    reg = {"hib": ["01_fake.ipynb", "02_broken.ipynb", "03_missing.ipynb"]}
    out = tmp_path / "reports"
    lines = []
    summary = R.reproduce(fast=True, only="hib", out_dir=out, registry=reg, notebooks=src, progress=False,
                          echo=lines.append)
    md = summary.read_text()
    run = json.loads((out / "run.json").read_text())
    status = {r["notebook"]: r["status"] for r in run["runs"]}
    assert status == {"01_fake.ipynb": "ok", "02_broken.ipynb": "failed", "03_missing.ipynb": "missing"}
    assert "boom in the notebook" in md
    assert "### Table 1 (fake)" in md and "| AP | 0.500 | 0.600 | -0.100 |" in md
    assert "![Figure 1](assets/01_fake/figure-1.png)" in md and (out / "assets/01_fake/figure-1.png").is_file()
    assert "FAST=True" in md  # the parameter reached the notebook
    executed = nbformat.read(out / "notebooks" / "01_fake.ipynb", 4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in executed.cells)
    assert any("summary" in s for s in lines)


def test_inplace_writes_back(tmp_path):
    src = tmp_path / "nbs"
    src.mkdir()
    _notebook(src / "01_fake.ipynb", "print('hello from', FAST)")
    R.reproduce(fast=True, out_dir=tmp_path / "r", inplace=True, registry={"x": ["01_fake.ipynb"]}, notebooks=src,
                progress=False, echo=lambda *_: None)
    nb = nbformat.read(src / "01_fake.ipynb", 4)
    assert "hello from True" in nb.cells[-1].outputs[0]["text"]
    # written back without papermill's injected-parameters cell: run by hand, the notebook's own parameters hold
    assert not any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    assert sum("parameters" in c.metadata.get("tags", []) for c in nb.cells) == 1


def test_inplace_does_not_write_back_a_failed_run(tmp_path):
    """A run that failed is a partial run: the notebook in notebooks/ keeps its committed outputs, and the executed
    copy, where the error can be read, goes to the output folder."""
    src = tmp_path / "nbs"
    src.mkdir()
    _notebook(src / "01_fake.ipynb", "print('ran')", fail=True)
    before = (src / "01_fake.ipynb").read_bytes()
    lines = []
    R.reproduce(fast=True, out_dir=tmp_path / "r", inplace=True, registry={"x": ["01_fake.ipynb"]}, notebooks=src,
                progress=False, echo=lines.append)
    assert (src / "01_fake.ipynb").read_bytes() == before and [p.name for p in src.iterdir()] == ["01_fake.ipynb"]
    executed = nbformat.read(tmp_path / "r" / "notebooks" / "01_fake.ipynb", 4)
    assert executed.cells[-1].outputs[0]["evalue"] == "boom in the notebook"
    assert json.loads((tmp_path / "r" / "run.json").read_text())["runs"][0]["output"] == "notebooks/01_fake.ipynb"
    assert any(line.startswith("[reproduce] 01_fake.ipynb: failed in ") and line.endswith(
        f"(not written back; the executed notebook is {tmp_path / 'r' / 'notebooks' / '01_fake.ipynb'})")
        for line in lines), lines


def test_main_lists(capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    assert "hib: 01_ndigit_mnist.ipynb" in capsys.readouterr().out
    assert cli.main(["reproduce", "--list-models", "--fast", "--only", "04"]) == 0
    out = capsys.readouterr().out
    assert "point-n2-d2-paper-s0                         shipped" in out  # FAST mode loads the shipped trio
    assert "hib-n2-d2-c2-beta0.0001-paper-s0             shipped" in out and "-n3-d4-" not in out
    assert cli.main(["reproduce", "--list-models", "--only", "04"]) == 0  # full mode: Table 4's models, to train first
    out = [line.split()[1] for line in capsys.readouterr().out.splitlines()[1:-1]]
    assert len(out) == 15 + 30 and out[12:15] == ["point-n3-d4-paper-s0", "hib-n3-d4-c1-beta0.0001-k8-paper-s0",
                                                  "hib-n3-d4-c2-beta0.0001-k8-paper-s0"]
    assert out[-1] == "hib-n3-d4-c2-beta0.0001-k8-paper-s2"  # then the seeds of every model, Table 4's last
    assert cli.main(["reproduce", "--list-models", "--only", "spe"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["notebook", "checkpoint", "status"]
    assert out[-1].startswith("85 distinct checkpoints: ") and "missing" in out[-1]
    # 06: its model and, in full mode, that model's seeds 1 and 2 (sec. 4.1 decided over trained seeds)
    assert [line.split()[1] for line in out if line.startswith("06")] == [
        f"spe-lshapes-d2-intersection8-paper-s{s}" for s in range(3)]
    seven = [line.split()[1] for line in out if line.startswith("07")]
    # (PN, SPE, HIB, point) x 4 settings + Fig. 4 x 5 + seeds 1, 2 of each setting's PN and SPE
    assert len(seven) == 4 * 4 + 50 + 4 * 4 and len(set(seven)) == len(seven)
    assert {"pn-n3-d2-paper12000-s0", "hib-n3-d3-c1-beta0.0001-paper-s0",
            "spe-n2-d2-naive81-fig4-paper-s0"} <= set(seven)
    assert cli.main(["reproduce", "--only", "nope"]) == 2


def test_all_specs_are_consistent():
    from hedgekit.papers.hib import experiments as X
    from hedgekit.zoo import shipped_names

    fast, full = X.all_specs(True), X.all_specs(False)
    shipped = set(shipped_names())  # FAST mode loads a figure's shipped `paper` models (`zoo.shipped_or_fast`)
    assert all(s.preset == "fast" or s.name in shipped for s in fast) and all(s.preset == "paper" for s in full)
    assert len({s.name for s in full}) == len(full) and len(full) > len(fast)
    assert len(X.notebook_specs("04", False)) == 12 + 3 + 30 and X.notebook_specs("01", False) == []  # + Table 4,
    # + 2 more seeds of point, MoG-1 and MoG-2 at the four settings of Table 1 and Table 4's
    assert [s.seed for s in X.number_line_specs(False)["hib_d1"]] == [0, 1, 2, 3]


def test_the_models_a_notebook_reads_from_the_ledger_are_its_seeds_beyond_the_ones_it_loads():
    """Each paper's ``notebook_record_specs``: in full mode the seeds a notebook decides on from their records, of
    its `notebook_specs`, never a model whose checkpoint a cell loads (a table's own seed 0, seed 0's number
    line, Figure 4's runs); in FAST mode only 03's number-line seeds."""
    from hedgekit.papers.hib import experiments as X
    from hedgekit.papers.spe import experiments as SX

    for paper, nb in [(X, "03"), (X, "04"), (X, "05"), (SX, "06"), (SX, "07")]:
        listed = {s.name for s in paper.notebook_specs(nb, False)}
        read = [s.name for s in paper.notebook_record_specs(nb, False)]
        assert read and len(set(read)) == len(read) and set(read) <= listed, nb
    seeds = {nb: {s.seed for s in paper.notebook_record_specs(nb, False)}
             for paper, nb in [(X, "03"), (X, "04"), (X, "05"), (SX, "06"), (SX, "07")]}
    assert seeds == {"03": {1, 2, 3}, "04": {1, 2}, "05": {1, 2}, "06": {1, 2}, "07": {1, 2}}
    assert len(X.notebook_record_specs("04", False)) == 2 * 15  # Table 1's 12 models and Table 4's 3
    assert len(X.notebook_record_specs("05", False)) == 2 * 4  # Table 5's 4 models
    nl = X.number_line_specs(True)
    assert X.notebook_record_specs("03", True) == [nl["point_d1"][1], nl["hib_d1"][1]]
    assert X.notebook_record_specs("04", True) == SX.notebook_record_specs("07", True) == []
    assert X.notebook_record_specs("02", False) == SX.notebook_record_specs("08", False) == []


def test_sweeps_train_a_quarter_of_the_steps_and_tables_and_the_number_line_the_full_preset():
    from hedgekit.papers.hib import experiments as X
    from hedgekit.zoo import PRESETS

    full = {kind: PRESETS["paper"][kind]["steps"] for kind in ("point", "hib")}
    soft, hard = X.margin_specs()
    nl = X.number_line_specs(False)
    sweeps = [soft, *hard, *X.beta_specs(False)]
    assert len(sweeps) == 11 and all(s.steps * X.SWEEP_DIVISOR == full[s.kind] for s in sweeps)
    assert {s.train_config().steps for s in hard} == {3000} and X.beta_specs(False)[0].train_config().steps == 2250
    assert all(s.steps is None for s in [*X.notebook_specs("02", False), *X.notebook_specs("03", False)])
    # notebook 04: full `paper` models, some cells longer (`table1_training`), never a shortened sweep
    assert all(s.steps is None or s.steps > PRESETS["paper"][s.kind]["steps"] for s in X.notebook_specs("04", False))
    assert len(nl["point_d1"]) == len(nl["hib_d1"]) == 4
    # App. D's HIB models draw the paper's K = 8 in FULL mode, the `fast` preset's own K in FAST mode
    assert [s.name for s in nl["hib_d1"]] == [f"hib-n2-d1-c1-beta0.0001-k8-paper-s{s}" for s in range(4)]
    assert [s.name for s in X.number_line_specs(True)["hib_d1"]] == [f"hib-n2-d1-c1-beta0.0001-fast-s{s}"
                                                                      for s in range(2)]
    assert all(s.steps is None for group in X.table5_specs().values() for s in group)
    assert all(s.steps is None for s in X.all_specs(True))  # FAST models are never shortened further
    assert X.sweep(nl["d2"][0]).name == "point-n2-d2-paper3000-s0"


def test_summary_is_cumulative_within_one_mode(tmp_path):
    """Notebooks run one call at a time into one folder give one report; a FAST run never mixes with full."""
    def run(name, fast, status="ok"):
        Report(tmp_path / "assets" / name, name).table(f"T {name}", pd.DataFrame({"ours": [1.0]}))
        rec = dict(notebook=f"{name}.ipynb", output=f"notebooks/{name}.ipynb", status=status, error="", seconds=5.0,
                   assets=f"assets/{name}")
        return write_summary([rec], tmp_path, fast=fast, total_seconds=5.0).read_text()

    run("02_y", fast=False)
    md = run("01_x", fast=False, status="failed")
    assert md.index("[01_x.ipynb]") < md.index("[02_y.ipynb]")  # registry (name) order, not call order
    assert "### T 01_x" in md and "### T 02_y" in md and "total run time: 10 s" in md
    md = run("01_x", fast=False)  # a re-run replaces its own record instead of adding one
    records = json.loads((tmp_path / "run.json").read_text())["runs"]
    assert [r["notebook"] for r in records] == ["01_x.ipynb", "02_y.ipynb"] and records[0]["status"] == "ok"
    assert all(r["date"] for r in records)
    md = run("01_x", fast=True)  # another mode starts a new report
    assert "02_y" not in md and "total run time: 5 s" in md
    (tmp_path / "run.json").write_text("{not json")  # a corrupt record is ignored, not fatal
    assert "01_x" in run("01_x", fast=True)


@pytest.mark.slow  # starts python -m hedgekit in subprocesses (~15 s)
def test_cli_output_into_a_closed_pipe_is_quiet():
    """`python -m hedgekit ... | head` must not end in a BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first line is written
    try:
        proc = subprocess.run([sys.executable, "-u", "-m", "hedgekit", "reproduce", "--list"], stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


# ----------------------------------------------------------- --train-missing [--jobs N]
def _fake_load_or_train(spec, progress=True, device="cpu", **_):
    """Stand-in for `hedgekit.zoo.load_or_train` (module level: forked workers inherit it): appends the name to
    HEDGEKIT_DATA/calls.log, fails for seed 13, else writes a stub checkpoint that `find_checkpoint` then finds."""
    import os
    from pathlib import Path

    from hedgekit.paths import cache_path

    assert progress is False  # no progress bars from workers
    with open(Path(os.environ["HEDGEKIT_DATA"]) / "calls.log", "a") as f:
        f.write(f"{spec.name} {os.getpid()} {device}\n")
    if spec.seed == 13:
        raise RuntimeError(f"boom while training {spec.name}")
    if spec.seed in (66, 67):  # a worker killed outright; 67: by the out-of-memory killer, which the kernel counts
        import signal

        if spec.seed == 67:
            (Path(os.environ["HEDGEKIT_DATA"]) / "vmstat").write_text("oom_kill 1\n")
        os.kill(os.getpid(), signal.SIGKILL)
    path = cache_path("checkpoints", f"{spec.name}.pt")
    path.parent.mkdir(parents=True, exist_ok=True)  # cache_path creates nothing
    path.write_bytes(b"stub")
    return None, {"source": "trained now"}


def _machine(monkeypatch, tmp_path, cores: int, available_gib: float | None):
    """`job_limit` sees ``cores`` usable cores and a /proc/meminfo with ``available_gib`` GiB available (None: no
    such file, as on macOS)."""
    meminfo = tmp_path / "meminfo"
    if available_gib is not None:
        meminfo.write_text(f"MemTotal:       99999999 kB\nMemFree:        1 kB\n"
                           f"MemAvailable:   {int(available_gib * 2**20)} kB\nBuffers:  1 kB\n")
    monkeypatch.setattr(P, "MEMINFO", str(meminfo))
    monkeypatch.setattr(P, "usable_cores", lambda: cores)


@pytest.fixture
def fake_zoo(tmp_path, monkeypatch):
    """An empty cache in tmp_path, fake training, and notebooks whose specs the test names:
    ``fake_zoo({"01_a.ipynb": [seed, ...], ...})`` registers them (point models, fast preset, those seeds)
    and returns ``calls()``, the names the fake trained, in order (``calls("pid")``: the processes, ``calls("device")``
    the devices)."""
    import torch

    from hedgekit import zoo
    from hedgekit.papers import hib, spe, taha

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)  # --out's default, reports/, receives train.json and times.md
    monkeypatch.setattr(zoo, "load_or_train", _fake_load_or_train)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # --device auto: cpu, forked workers, even on a GPU
    _machine(monkeypatch, tmp_path, cores=64, available_gib=1024)  # --jobs is not capped unless a test says so
    log = tmp_path / "calls.log"

    def setup(seeds_per_notebook: dict):
        monkeypatch.setattr(catalog, "NOTEBOOKS", {"x": list(seeds_per_notebook)})
        monkeypatch.setattr(hib.experiments, "notebook_specs", lambda nb, fast: [
            zoo.Spec(kind="point", preset="fast" if fast else "paper", seed=s) for s in seeds_per_notebook[nb]])
        for paper in (spe, taha):
            monkeypatch.setattr(paper.experiments, "notebook_specs", lambda nb, fast: [])

        def calls(column: str = "name") -> list:
            rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
            return [{"name": name, "pid": int(pid), "device": device}[column] for name, pid, device in rows]

        return calls

    return setup


def test_train_missing_trains_each_missing_spec_once_and_skips_cached(fake_zoo, tmp_path, capsys):
    import re

    calls = fake_zoo({"01_a.ipynb": [901, 902], "02_b.ipynb": [902, 903]})  # 902 shared by both notebooks
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "point-n2-d2-fast-s903.pt").write_bytes(b"stub")  # already cached
    assert cli.main(["reproduce", "--list-models", "--fast"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + 4 + 1 and out[-1].startswith("3 distinct checkpoints: 1 cached or shipped, 2 missing")
    assert cli.main(["reproduce", "--train-missing", "--fast"]) == 0
    assert calls() == ["point-n2-d2-fast-s901", "point-n2-d2-fast-s902"]  # listing order, 902 once, 903 skipped
    out = capsys.readouterr().out
    assert "[train] 2 of 3 checkpoints missing; training in this process" in out
    assert re.search(r"^\[train\] point-n2-d2-fast-s901: \d+ s, trained now \(1/2\)$", out, re.M) and "(2/2)" in out
    assert "[train] 2 trained, 1 already cached; wall time" in out and "notebook" not in out  # no notebook ran
    assert cli.main(["reproduce", "--train-missing", "--fast", "--only", "02"]) == 0  # everything is cached now
    assert len(calls()) == 2 and "[train] 0 trained, 2 already cached" in capsys.readouterr().out
    assert cli.main(["reproduce", "--train-missing", "--only", "01"]) == 0  # full mode: other names (paper preset)
    assert calls()[2:] == ["point-n2-d2-paper-s901", "point-n2-d2-paper-s902"]


def test_seeds_the_notebooks_read_from_the_ledger_are_not_trained_where_it_holds_them(fake_zoo, tmp_ledger,
                                                                                      monkeypatch, capsys):
    """01_a reads seeds 902-904 from the ledger where it holds them (a paper's ``notebook_record_specs``); the ledger
    holds 902 and 903 (every group: their trainer's, no notebook measures them); 02_b loads 903's checkpoint. So 902
    alone is neither listed missing nor trained."""
    from hedgekit.papers import hib
    from hedgekit.repro import plan
    from hedgekit.zoo import Spec

    monkeypatch.setattr(plan, "model_measures", lambda spec: {})

    calls = fake_zoo({"01_a.ipynb": [901, 902, 903, 904], "02_b.ipynb": [903]})
    monkeypatch.setattr(hib.experiments, "notebook_record_specs", lambda nb, fast: [
        Spec(kind="point", preset="paper", seed=s) for s in (902, 903, 904)] if nb == "01_a.ipynb" else [])
    for seed in (902, 903):
        tmp_ledger(Spec(kind="point", preset="paper", seed=seed), {"knn_clean": 0.5})
    assert catalog.ledger_read_models() == {f"point-n2-d2-paper-s{s}" for s in (902, 904)}
    assert catalog.ledger_read_models("01") == {f"point-n2-d2-paper-s{s}" for s in (902, 903, 904)}
    assert cli.main(["reproduce", "--list-models"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(None, 2)[1:] for line in out[1:-1]] == [
        ["point-n2-d2-paper-s901", "missing"], ["point-n2-d2-paper-s902", "in the ledger"],
        ["point-n2-d2-paper-s903", "missing"], ["point-n2-d2-paper-s904", "missing"],
        ["point-n2-d2-paper-s903", "missing"]]
    assert out[-1].startswith("4 distinct checkpoints: 0 cached or shipped, 1 in the ledger (the notebooks read "
                              "their records; no checkpoint needed), 3 missing")
    assert cli.main(["reproduce", "--train-missing"]) == 0
    assert calls() == ["point-n2-d2-paper-s901", "point-n2-d2-paper-s903", "point-n2-d2-paper-s904"]
    assert "[train] 1 seed model left out: the notebooks read them from the ledger" in capsys.readouterr().out
    assert cli.main(["reproduce", "--train-missing", "--only", "01"]) == 0  # 903 is read from the ledger here
    assert len(calls()) == 3 and "[train] 0 trained, 2 already cached" in capsys.readouterr().out


class _InlineWorker:
    """`P._Worker` stand-in: runs each job at once, in this process (so a stand-in trainer's state is shared), and
    records the start method of each worker built (``built``)."""
    built: list = []

    def __init__(self, context):
        _InlineWorker.built.append(context.get_start_method())
        self.pid, self.job, self._answer = 0, None, None

    def give(self, specs, device):
        self.job = list(specs)
        try:
            self._answer = ("done", P._train_job(specs, device))
        except Exception as exc:
            self._answer = ("failed", exc)

    def answer(self):
        answer, self._answer = self._answer, None
        return answer

    def handles(self):
        return []

    def stop(self):
        pass

    terminate = end = stop


@pytest.fixture
def inline_workers(monkeypatch):
    """`P._Worker` replaced by `_InlineWorker`; returns the start methods of the workers built, in order."""
    monkeypatch.setattr(P, "_Worker", _InlineWorker)
    monkeypatch.setattr(_InlineWorker, "built", [])
    return _InlineWorker.built


def test_jobs_trains_in_a_pool_of_workers_never_more_than_the_jobs(fake_zoo, inline_workers, capsys):
    import multiprocessing
    import pickle

    from hedgekit.zoo import Spec

    calls = fake_zoo({"01_a.ipynb": [901, 902], "02_b.ipynb": [903]})
    assert cli.main(["reproduce", "--train-missing", "--fast", "--only", "01", "--jobs", "2"]) == 0
    default = multiprocessing.get_context().get_start_method()  # on the CPU: the platform's (fork on Linux)
    assert inline_workers == [default] * 2 and len(calls()) == 2
    assert "training in 2 worker processes" in capsys.readouterr().out
    assert cli.main(["reproduce", "--train-missing", "--fast", "--jobs", "4"]) == 0  # 1 missing: no pool, this process
    assert len(inline_workers) == 2 and len(calls()) == 3 and "training in this process" in capsys.readouterr().out
    assert cli.main(["reproduce", "--train-missing", "--jobs", "4"]) == 0  # 3 missing: never more workers than models
    assert len(inline_workers) == 2 + 3 and len(calls()) == 6
    spec = Spec(kind="point", preset="fast", seed=901)  # what a real worker is sent
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert pickle.loads(pickle.dumps(P._serve)) is P._serve  # a spawned worker's target


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_failing_spec_fails_the_run_and_the_others_still_train(fake_zoo, capsys, jobs):
    """--jobs 2 uses real (forked) worker processes; the fake training is inherited from this process."""
    import multiprocessing
    import os

    if jobs != "1" and multiprocessing.get_start_method() != "fork":
        pytest.skip("the fake training reaches the workers by fork only")
    calls = fake_zoo({"01_a.ipynb": [901, 13], "02_b.ipynb": [902]})
    assert cli.main(["reproduce", "--train-missing", "--fast", "--jobs", jobs]) == 1
    assert sorted(calls()) == ["point-n2-d2-fast-s13", "point-n2-d2-fast-s901", "point-n2-d2-fast-s902"]
    out = capsys.readouterr().out
    assert "[train] point-n2-d2-fast-s13: FAILED" in out and "RuntimeError: boom while training" in out
    assert "[train] 2 trained, 0 already cached, 1 FAILED (point-n2-d2-fast-s13)" in out
    assert cli.main(["reproduce", "--train-missing", "--fast", "--jobs", jobs]) == 1  # only the failed one again
    assert calls()[3:] == ["point-n2-d2-fast-s13"]
    first = calls("pid")[:3]  # the second call had one model to train: this process
    assert (set(first) == {os.getpid()}) == (jobs == "1")  # --jobs 2: trained in worker processes only
    assert (os.getpid() in first) == (jobs == "1")


@pytest.mark.parametrize("cores, gib, limit", [(16, 7.5, 2), (2, 100, 2), (16, None, 16), (8, 1, 1), (3, 9, 3)])
def test_job_limit_is_the_cores_and_the_memory_at_worker_memory_each(monkeypatch, tmp_path, cores, gib, limit):
    """One worker per usable core and per `WORKER_MEMORY` (3 GiB) of MemAvailable, at least 1."""
    _machine(monkeypatch, tmp_path, cores, gib)
    got, why = P.job_limit()
    assert got == limit and why.startswith(f"{cores} usable core")
    assert ("GiB of memory available / 3 GiB per worker = " in why) == (gib is not None)


def test_the_real_machine_has_a_job_limit_of_at_least_one():
    import os

    limit, why = P.job_limit()
    assert 1 <= limit <= (os.cpu_count() or 1) and "usable core" in why


def test_jobs_beyond_the_limit_is_lowered_with_a_one_line_note(fake_zoo, inline_workers, tmp_path, monkeypatch,
                                                                capsys):
    """`--jobs 1000` once started 165 workers on 2 cores and the OOM killer broke the pool: now the pool gets the
    limit and one line says why; a request within the limit is left alone."""
    calls = fake_zoo({"01_a.ipynb": [901, 902, 903, 904, 905]})
    _machine(monkeypatch, tmp_path, cores=16, available_gib=9.5)  # memory: 3 workers
    assert cli.main(["reproduce", "--train-missing", "--jobs", "1000"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("[train] --jobs 1000 lowered to 3: 16 usable cores, 9.5 GiB of memory available / 3 GiB per "
                      "worker = 3")
    assert len(inline_workers) == 3 and len(calls()) == 5 and "training in 3 worker processes" in out[1]
    _machine(monkeypatch, tmp_path, cores=2, available_gib=9.5)  # cores: 2
    assert cli.main(["reproduce", "--train-missing", "--fast", "--jobs", "2"]) == 0  # within the limit: no note
    assert len(inline_workers) == 3 + 2 and "lowered" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--help"])
    assert "lowered to that, with a one-line note" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("seed, how", [(66, "was killed by signal 9 (SIGKILL)"),
                                       (67, "was killed by signal 9 (SIGKILL): out of memory (the kernel's "
                                            "out-of-memory killer; each worker needs up to 3 GiB, try a smaller "
                                            "--jobs)")],
                         ids=["kill-9", "oom-killer"])
def test_a_worker_that_dies_loses_its_model_alone_and_says_how_it_died(fake_zoo, tmp_path, monkeypatch, capsys,
                                                                       seed, how):
    """Real forked workers; the one given ``seed`` kills itself with SIGKILL (67: after the kernel's count of
    out-of-memory kills rose). The fault was 'BrokenProcessPool (a worker process died: out of memory? ...)' for
    every model, the others too. Now that model alone is lost, with its signal, and memory is named only when the
    kernel counted an out-of-memory kill; the others train."""
    import multiprocessing

    if multiprocessing.get_start_method() != "fork":
        pytest.skip("the fake training reaches the workers by fork only")
    (tmp_path / "vmstat").write_text("oom_kill 0\n")
    monkeypatch.setattr(P, "VMSTAT", str(tmp_path / "vmstat"))
    calls = fake_zoo({"01_a.ipynb": [seed, 901, 902, 903]})
    assert cli.main(["reproduce", "--train-missing", "--fast", "--jobs", "2"]) == 1
    out = capsys.readouterr().out
    lost = f"point-n2-d2-fast-s{seed}"
    assert sorted(calls()) == sorted([lost] + [f"point-n2-d2-fast-s{s}" for s in (901, 902, 903)])
    line = next(line for line in out.splitlines() if line.startswith(f"[train] {lost}: LOST ("))
    dead = f"its worker process (pid {calls('pid')[0]}) {how}"
    assert f"{dead} in the middle of training; not saved" in line
    assert ("memory" in out) == (seed == 67) and "FAILED" not in out and "BrokenProcessPool" not in out
    assert f"[train] 3 trained, 0 already cached, 1 LOST with a worker process that died ({lost}: {dead})" in out
    assert calls("pid")[0] not in calls("pid")[1:]  # the others trained in the other worker (and a new one)


@pytest.mark.parametrize("value", ["0", "x", "1.5"])
def test_jobs_must_be_a_positive_integer(capsys, value):
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", "--train-missing", "--jobs", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --jobs: expected an integer >= 1; got '{value}'" in err and "Traceback" not in err


def test_a_worker_leaves_ctrl_c_and_a_hang_up_to_the_parent():
    """`train_missing`'s workers ignore SIGINT and SIGHUP (no traceback of their own; the parent names their models
    in its one line) and end on SIGTERM (the parent's ``terminate``)."""
    import signal

    import torch

    signals = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM)
    before, threads = {s: signal.getsignal(s) for s in signals}, torch.get_num_threads()
    try:
        P._init_worker()
        assert [signal.getsignal(s) for s in signals] == [signal.SIG_IGN, signal.SIG_IGN, signal.SIG_DFL]
        assert torch.get_num_threads() == 1
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        torch.set_num_threads(threads)


def test_ctrl_c_during_parallel_training_stops_the_workers_and_propagates(monkeypatch):
    """Ctrl-C while `train_missing --jobs 2` waits: every worker process is terminated (all at once, then each waited
    for), and the KeyboardInterrupt reaches the command's handler (`hedgekit.commands.run_command`) naming the models
    the workers held and the one not started."""
    from hedgekit.zoo import Spec

    calls = []

    class Training(_InlineWorker):
        def give(self, specs, device):
            self.job = list(specs)

        def answer(self):
            raise KeyboardInterrupt  # Ctrl-C while the parent waits for an answer

        def terminate(self):
            calls.append("terminate")

        def end(self):
            calls.append("end")

    monkeypatch.setattr(P, "_Worker", Training)
    monkeypatch.setattr(P, "find_checkpoint", lambda spec: None)
    monkeypatch.setattr(P, "job_limit", lambda: (2, "2 usable cores"))
    specs = [("02", Spec(kind="hib", preset="fast", seed=s)) for s in (0, 1, 2)]
    with pytest.raises(KeyboardInterrupt) as interrupt:
        P.train_missing(specs, jobs=2, echo=lambda line: None)
    assert calls == ["terminate", "terminate", "end", "end"]
    assert interrupt.value.kept == ("models: 0 of the 3 missing trained and cached; stopped in training, not saved: "
                                    f"{specs[0][1].name}, {specs[1][1].name}; 1 not started")


def test_each_model_trained_is_recorded_in_the_ledger_as_it_ends_and_an_interrupt_keeps_those(fake_zoo, tmp_ledger,
                                                                                              monkeypatch, capsys):
    """A stand-in trainer that writes a checkpoint file and returns the measures a pair-trained checkpoint holds
    (knn_corrupt = seed / 1000) after spending seed - 880 seconds on the stand-in wall clock `P.clock`; seed 903 is
    interrupted (Ctrl-C) after 901 and 902 ended. Each record keeps its job's wall seconds."""
    from hedgekit import zoo
    from hedgekit.paths import cache_path
    from hedgekit.zoo import Spec, ledger

    now = [0.0]
    monkeypatch.setattr(P, "clock", lambda: now[0])

    def fake_load_or_train(spec, progress=True, device="cpu", **_):
        if spec.seed == 903:
            raise KeyboardInterrupt
        now[0] += spec.seed - 880
        path = cache_path("checkpoints", f"{spec.name}.pt")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(spec.name.encode())
        return None, {"source": "trained now", "path": str(path), "device": "cpu", "train_seconds": 3.0,
                      "metrics": {"knn_corrupt": spec.seed / 1000}, "eval_images": 2000}

    fake_zoo({"01_a.ipynb": [901, 902, 903]})
    monkeypatch.setattr(zoo, "load_or_train", fake_load_or_train)
    with pytest.raises(KeyboardInterrupt) as interrupt:
        P.train_missing(catalog.notebook_models("01", fast=True), echo=lambda line: None)
    assert interrupt.value.kept.startswith("models: 2 of the 3 missing trained and cached")
    assert [(r["model"], r["measures"]) for r in ledger.records("hib")] == [
        (f"point-n2-d2-fast-s{s}", {"knn_corrupt": s / 1000, "eval_images": 2000.0}) for s in (901, 902)]
    assert ledger.seeds_of(Spec(kind="point", preset="fast")) == [901, 902]
    assert [(r["job_seconds"], r["train_seconds"]) for r in ledger.records("hib")] == [(21.0, 3.0), (22.0, 3.0)]
    # a model retrained under a recorded name that measures otherwise: trained and cached, not recorded, exit 1
    tmp_ledger(Spec(kind="point", preset="fast", seed=904), {"knn_corrupt": 0.5, "eval_images": 2000})
    fake_zoo({"01_a.ipynb": [904]})
    monkeypatch.setattr(zoo, "load_or_train", fake_load_or_train)
    assert cli.main(["reproduce", "--train-missing", "--fast"]) == 1
    out = capsys.readouterr().out
    assert "point-n2-d2-fast-s904: NOT RECORDED in the ledger (table1) — The ledger" in out
    assert "knn_corrupt 0.5 (ledger) against 0.904 (new)" in out and "1 trained, 0 already cached, 1 NOT RECORDED" in out


# ----------------------------------------------------------- --device
def test_the_device_reaches_every_model_trained_and_auto_is_resolved(fake_zoo, capsys):
    calls = fake_zoo({"01_a.ipynb": [901, 902], "02_b.ipynb": [903]})
    assert cli.main(["reproduce", "--train-missing", "--fast", "--only", "01", "--device", "cpu"]) == 0
    assert calls("device") == ["cpu", "cpu"] and "training in this process, on cpu" in capsys.readouterr().out
    assert cli.main(["reproduce", "--train-missing", "--fast"]) == 0  # the default, auto: cpu on a machine without CUDA
    assert calls("device") == ["cpu"] * 3


def test_jobs_on_cuda_share_the_gpu_in_spawned_processes(fake_zoo, inline_workers, monkeypatch, capsys):
    """CUDA cannot be used in a forked child: on cuda the N workers are spawned (on the CPU: the default start)."""
    import multiprocessing

    import torch

    from hedgekit.zoo import seed_sets

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # what a GPU machine says; nothing touches CUDA
    monkeypatch.setattr(seed_sets, "stackable", lambda spec: False)  # one job per seed: this test is about the pool
    calls = fake_zoo({"01_a.ipynb": [901, 902], "02_b.ipynb": [903, 904]})
    assert cli.main(["reproduce", "--train-missing", "--fast", "--only", "01", "--jobs", "2"]) == 0  # auto: cuda here
    assert inline_workers == ["spawn"] * 2 and calls("device") == ["cuda"] * 2
    assert "training in 2 worker processes, on cuda" in capsys.readouterr().out
    assert cli.main(["reproduce", "--train-missing", "--fast", "--only", "02", "--jobs", "2", "--device", "cpu"]) == 0
    assert inline_workers[2:] == [multiprocessing.get_context().get_start_method()] * 2
    assert calls("device")[2:] == ["cpu"] * 2


@pytest.mark.parametrize("device, message", [
    ("tpu", "argument --device: 'tpu' is not a device; use cpu, cuda, cuda:N, mps or auto"),
    ("cuda", "argument --device: device 'cuda': CUDA is not available on this machine"),
    ("cuda:0", "argument --device: device 'cuda:0': CUDA is not available on this machine")])
def test_a_bad_device_or_cuda_without_cuda_is_exit_2_with_a_message(monkeypatch, capsys, device, message):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for argv in (["reproduce", "--train-missing", "--device", device], ["reproduce", "--device", device]):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and message in err and "Traceback" not in err


def test_reproduce_hands_the_device_to_the_notebooks_as_DEVICE(tmp_path, monkeypatch):
    import torch

    ran = []

    def fake_run(src, dst, parameters, *args):
        ran.append(parameters)
        return {"notebook": src.name, "output": str(dst), "status": "ok", "error": "", "seconds": 0.0}

    monkeypatch.setattr(R, "run_notebook", fake_run)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    reg = {"x": ["01_a.ipynb"]}
    for device in ("cpu", "auto"):
        R.reproduce(fast=True, out_dir=tmp_path / "r", registry=reg, notebooks=tmp_path, device=device,
                    echo=lambda *_: None)
    assert [p["DEVICE"] for p in ran] == ["cpu", "auto"] and ran[0]["FAST"] is True  # the kernel resolves auto
    with pytest.raises(InputError, match="CUDA is not available"):  # refused before any notebook runs
        R.reproduce(fast=True, out_dir=tmp_path / "r", registry=reg, notebooks=tmp_path, device="cuda")
    assert len(ran) == 2


def test_train_missing_writes_the_time_table_and_times_to_puts_it_in_a_marked_file(fake_zoo, tmp_path, capsys):
    from hedgekit.repro.times import BEGIN, END

    calls = fake_zoo({"01_a.ipynb": [901, 902]})
    doc = tmp_path / "speed.md"
    doc.write_text("# Speed\n")
    assert cli.main(["reproduce", "--train-missing", "--times-to", str(doc)]) == 2  # refused before training
    assert calls() == [] and "--times-to" in capsys.readouterr().err
    doc.write_text(f"# Speed\n{BEGIN}\n{END}\nend\n")
    assert cli.main(["reproduce", "--train-missing", "--out", "r", "--times-to", str(doc)]) == 0
    table = (tmp_path / "r" / "times.md").read_text()
    assert "| point-n2-d2-paper-s901 | cpu | 0 | alone |" in table and "2 models in" in table
    assert doc.read_text() == f"# Speed\n{BEGIN}\n{table}{END}\nend\n"
    assert "[train] time table: r/times.md" in capsys.readouterr().out


def test_on_a_launch_bound_device_a_specs_seeds_train_as_one_job_unless_one_by_one(fake_zoo, monkeypatch, capsys):
    """On cuda the missing seeds of one spec form one job of the pool (`hedgekit.zoo.seed_sets.train_seed_set`, here a
    stand-in that records its sets); ``--one-by-one`` trains each alone, as the CPU always does."""
    import torch

    sets = []

    def stacked(specs, device):
        sets.append(([s.name for s in specs], device))
        return [_fake_load_or_train(s, progress=False, device=device) for s in specs]

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # what a GPU machine says; nothing touches CUDA
    monkeypatch.setattr(P, "train_seed_set", stacked)
    calls = fake_zoo({"01_a.ipynb": [901, 902], "02_b.ipynb": [902, 903, 904]})
    assert cli.main(["reproduce", "--train-missing", "--fast", "--only", "01"]) == 0
    assert sets == [(["point-n2-d2-fast-s901", "point-n2-d2-fast-s902"], "cuda")]
    out = capsys.readouterr().out
    assert "on cuda; 1 seed set stacked" in out
    assert "point-n2-d2-fast-s902: 0 s, trained now, 2 seeds stacked (2/2)" in out
    assert cli.main(["reproduce", "--train-missing", "--fast", "--one-by-one"]) == 0  # 903 and 904 alone
    assert len(sets) == 1 and calls()[2:] == ["point-n2-d2-fast-s903", "point-n2-d2-fast-s904"]
    assert "stacked" not in capsys.readouterr().out


def test_record_cached_writes_the_held_checkpoints_measures_once_and_says_what_it_left(tmp_ledger, monkeypatch,
                                                                                        capsys):
    from hedgekit.zoo import Spec, ledger

    specs = [Spec(kind="hib", components=2, preset="paper"), Spec(kind="hib", components=2, preset="paper", seed=9)]
    # shipped; absent (a MoG-2: no group beyond its trainer's)
    monkeypatch.setattr(R, "notebook_models", lambda only, fast: [("04_x.ipynb", s) for s in specs])
    assert cli.main(["reproduce", "--record-cached", "--only", "04"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"[ledger] recorded {specs[0].name} (table1, trained on cpu)",
                   f"[ledger] not recorded: {specs[1].name}: no checkpoint on this machine",
                   "[ledger] 1 record(s) written, 1 not recorded"]
    assert [r["model"] for r in ledger.records("hib")] == [specs[0].name]
    assert cli.main(["reproduce", "--record-cached", "--only", "04"]) == 0  # held: nothing written again
    assert capsys.readouterr().out.splitlines()[-1] == "[ledger] 0 record(s) written, 1 not recorded"


def test_a_workers_death_is_told_by_its_exit_code_or_signal_and_memory_only_when_the_kernel_counted_it(tmp_path,
                                                                                                     monkeypatch):
    vmstat = tmp_path / "vmstat"
    monkeypatch.setattr(P, "VMSTAT", str(vmstat))
    assert P._oom_kills() is None  # no such file (macOS, Windows)
    vmstat.write_text("pgfault 12\noom_kill 4\n")
    assert P._oom_kills() == 4
    assert P._death(3, 4) == "exited with code 3"
    assert P._death(-15, 3) == "was killed by signal 15 (SIGTERM)"  # a count that rose says nothing of a SIGTERM
    assert P._death(-9, 4) == P._death(-9, None) == "was killed by signal 9 (SIGKILL)"
    assert P._death(-9, 3).startswith("was killed by signal 9 (SIGKILL): out of memory (the kernel's out-of-memory")
