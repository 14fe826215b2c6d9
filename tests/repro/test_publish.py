"""`python -m hedgekit reproduce` publishes a notebook's run by replacement, never by damage: the run is written into
a hidden ``.partial`` folder beside each destination, checked (the executed notebook valid JSON, every report asset
the size its manifest records) and only then moved over the earlier run. The fault: with ``--out`` on a small full
tmpfs the command said "nothing was corrupted ... no partial file was left", yet left a truncated notebook and an
empty CSV, and a second run replaced a good earlier run of the notebook with them.

Through the real entry point (`hedgekit.cli.main`) on tiny stand-in notebooks: a full disk as papermill writes the
executed notebook (its writer stopped part-way with ENOSPC), as the notebook's own report writer writes a CSV, and a
real full tmpfs where this machine lets the test mount one; each time with a good earlier run in the same --out,
checked byte for byte afterwards, and the error paragraph checked against what is on disk.
"""
from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from hedgekit import cli
from hedgekit.repro import catalog
from hedgekit.repro import reproduce as R
from hedgekit.repro.report import MANIFEST, Report, not_whole

QUICK = ('from hedgekit.repro.report import Report\n'
         'Report(REPORT_DIR, "quick").text("Note", "quick ran, FAST=" + str(FAST))')

# a notebook with a table (Markdown + CSV), a figure and a text; with HEDGEKIT_TEST_FULL set in its kernel's
# environment its CSV writer stops part-way with ENOSPC, as on a full disk
REPORTING = '''
import errno, os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from hedgekit.repro.report import Report

if os.environ.get("HEDGEKIT_TEST_FULL"):
    def to_csv(self, path, *args, **kwargs):
        with open(path, "w") as f:
            f.write("metric,ours\\n")  # the first bytes, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    pd.DataFrame.to_csv = to_csv
report = Report(REPORT_DIR, "reporting")
report.table("Table 1", pd.DataFrame({"ours": [0.5], "paper": [0.6]}, index=["AP"]))
fig, ax = plt.subplots()
ax.plot([0, 1], [0, 1])
report.figure("Figure 1", fig)
report.text("What matched", "**1 matched**")
'''


def _notebook(path: Path, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('FAST = False\nREPORT_DIR = ""\nDEVICE = "auto"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def kit(tmp_path, monkeypatch):
    """Notebooks 00_quick and 01_reporting registered in a folder of the test's own; returns that folder."""
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    _notebook(nbs / "00_quick.ipynb", QUICK)
    _notebook(nbs / "01_reporting.ipynb", REPORTING)
    monkeypatch.setattr(catalog, "NOTEBOOKS", {"x": ["00_quick.ipynb", "01_reporting.ipynb"]})
    monkeypatch.setattr(R, "notebook_dir", lambda: nbs)
    return nbs


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and lines[-1].startswith("error: "), err
    assert sum(line.startswith("error: ") for line in lines) == 1, err
    return lines[-1]


def _good_run_of_01(out: Path, capsys) -> dict[str, bytes]:
    """A good run of 01 into ``out``; returns every file under ``out``, bytes and all."""
    assert cli.main(["reproduce", "--fast", "--only", "01", "--out", str(out)]) == 0
    capsys.readouterr()
    before = _files(out)
    assert len([f for f in before if f.startswith("assets/01_reporting/")]) == 5  # md, csv, png, md, manifest
    assert "notebooks/01_reporting.ipynb" in before
    return before


def _left_as_it_was(out: Path, before: dict[str, bytes], name: str) -> None:
    """Notebook ``name``'s earlier run (its executed notebook and report assets) is byte for byte as ``before``, and
    no partial or temporary file is left anywhere under ``out``."""
    stem = Path(name).stem
    now = _files(out)
    mine = [f for f in before if f.startswith((f"assets/{stem}/", f"notebooks/{name}"))]
    assert {f: now.get(f) for f in mine} == {f: before[f] for f in mine}
    assert {f for f in now if f.startswith((f"assets/{stem}/", f"notebooks/{name}"))} == set(mine)
    assert [p for p in out.rglob("*") if ".partial" in p.parts or p.name.endswith(".tmp")] == []


@pytest.mark.slow  # three notebook runs, a kernel each (~20 s)
@pytest.mark.parametrize("fault", ["papermill", "report writer"])
def test_a_full_disk_publishes_nothing_and_the_earlier_run_is_byte_for_byte_as_it_was(kit, tmp_path, monkeypatch,
                                                                                        capsys, fault):
    """``--only 00,01`` after a good run of 01: 00 finishes and is written; 01 meets a full disk, as papermill writes
    its executed notebook (papermill's writer stops part-way with ENOSPC from its third write on) or as the
    notebook's report writer writes its CSV. 01's earlier notebook and its assets stay byte for byte, no partial
    file is left, the summary lists 00's new run beside 01's earlier one, and the paragraph says exactly that."""
    from papermill import iorw

    out = tmp_path / "out"
    before = _good_run_of_01(out, capsys)
    if fault == "papermill":
        real, writes = iorw.LocalHandler.write, []

        def full(self, buf, path):
            if "01_reporting" not in str(path):
                return real(self, buf, path)
            writes.append(path)
            if len(writes) < 3:
                return real(self, buf, path)
            real(self, buf[: len(buf) // 2], path)  # part of it, then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

        monkeypatch.setattr(iorw.LocalHandler, "write", full)
    else:
        monkeypatch.setenv("HEDGEKIT_TEST_FULL", "1")
    assert cli.main(["reproduce", "--fast", "--only", "00,01", "--out", str(out)]) == 2
    paragraph = _one_error(capsys)
    _left_as_it_was(out, before, "01_reporting.ipynb")
    cause = ("writing the executed notebook failed (No space left on device)" if fault == "papermill" else
             f"its report assets are not whole: table-1.csv (12 bytes) is not in its {MANIFEST}: a write that "
             "failed part-way (the notebook failed: OSError: [Errno 28] No space left on device")
    assert paragraph.startswith(f"error: 01_reporting.ipynb was not written: {cause}"), paragraph
    assert paragraph.endswith(
        f"Nothing of this run was published: {out / 'notebooks' / '01_reporting.ipynb'} and its report assets in "
        f"{out / 'assets' / '01_reporting'} are as the earlier run left them, and no partial file was left. The "
        "notebook run before it, 00_quick.ipynb, finished and was written; the summary lists it. Free some space, "
        "or choose another place with --out, and run the command again."), paragraph
    runs = {r["notebook"]: r for r in json.loads((out / "run.json").read_text())["runs"]}
    earlier = {r["notebook"]: r for r in json.loads(before["run.json"])["runs"]}
    assert runs["01_reporting.ipynb"] == earlier["01_reporting.ipynb"] and runs["00_quick.ipynb"]["status"] == "ok"
    assert "quick ran, FAST=True" in (out / "summary.md").read_text()


def _mount_tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir()
    if sys.platform != "linux" or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


@pytest.mark.slow  # three notebook runs, a kernel each (~20 s)
def test_a_real_full_tmpfs_publishes_nothing_and_the_paragraph_matches_the_disk(kit, tmp_path, capsys):
    """--out on a real tmpfs of 1 MiB: a good run of 01, then the disk filled but for a few pages, then ``--only
    00,01``: whichever write meets the full disk first, no notebook's earlier run is damaged, no partial file is
    left, and each clause of the error paragraph holds on disk."""
    out = tmp_path / "tmpfs"
    if not _mount_tmpfs(out, "1m"):
        pytest.skip("cannot mount a tmpfs here (not root, or not Linux); the ENOSPC test above stands in for it")
    try:
        before = _good_run_of_01(out, capsys)
        filler = out / "filler"
        with open(filler, "wb", buffering=0) as f:  # unbuffered: nothing left to write when it is closed
            with pytest.raises(OSError) as full:
                while True:
                    f.write(b"\0" * 4096)
            assert full.value.errno == errno.ENOSPC
        os.truncate(filler, filler.stat().st_size - 3 * 4096)  # three pages free: the small notebook may fit
        before = _files(out)
        assert cli.main(["reproduce", "--fast", "--only", "00,01", "--out", str(out)]) == 2
        paragraph = _one_error(capsys)
        failed = re.match(r"error: (\S+) was not written: ", paragraph)
        assert failed, paragraph
        _left_as_it_was(out, before, "01_reporting.ipynb")
        _left_as_it_was(out, before, failed[1])
        assert "no partial file was left" in paragraph
        if failed[1] == "00_quick.ipynb":  # the first one failed: nothing at all changed
            assert f"{out / 'notebooks' / '00_quick.ipynb'} was not written" in paragraph
            assert _files(out) == before and "run before it" not in paragraph
        elif "the summary lists it." in paragraph:
            runs = {r["notebook"] for r in json.loads((out / "run.json").read_text())["runs"]}
            assert runs == {"00_quick.ipynb", "01_reporting.ipynb"}
        else:
            assert "the summary could not be updated: it is as it was" in paragraph
            assert {f: _files(out)[f] for f in ("summary.md", "run.json")} == {f: before[f] for f in
                                                                                ("summary.md", "run.json")}
    finally:
        subprocess.run(["umount", str(out)], check=True)


def test_not_whole_names_a_file_a_failed_write_left(tmp_path):
    """`not_whole` (what `reproduce` checks before it publishes report assets): a whole folder passes; an unlisted
    file, a file of another size, a missing one and an unreadable manifest are each named."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    folder = tmp_path / "assets"
    report = Report(folder, "x")
    report.table("Table 1", pd.DataFrame({"a": [1.0]}))
    fig, _ = plt.subplots()
    report.figure("Figure 1", fig)
    plt.close(fig)
    assert not_whole(folder) is None and not_whole(tmp_path / "none") is None
    (folder / "extra.csv").write_text("a,")
    assert not_whole(folder) == f"extra.csv (2 bytes) is not in its {MANIFEST}: a write that failed part-way"
    (folder / "extra.csv").unlink()
    size = (folder / "figure-1.png").stat().st_size
    os.truncate(folder / "figure-1.png", 100)
    assert not_whole(folder) == f"figure-1.png has 100 bytes, its {MANIFEST} says {size}"
    (folder / "figure-1.png").unlink()
    assert not_whole(folder) == f"figure-1.png, listed in its {MANIFEST}, is missing"
    (folder / MANIFEST).write_text('{"entries": [')
    assert not_whole(folder).startswith(f"its {MANIFEST} cannot be read (JSONDecodeError")


def test_a_run_killed_outright_is_swept_by_the_next_run_of_its_notebook(tmp_path):
    """What a run killed by SIGKILL leaves (its partial notebook and assets, the earlier assets it had set aside
    while publishing, an earlier version's ``.<stem>.<pid>.partial.ipynb``) is found by name and removed as the
    next run of that notebook starts; the earlier assets go back where they were."""
    out, nbs = tmp_path / "out", tmp_path / "nbs"
    assets, dst = out / "assets" / "01_x", nbs / "01_x.ipynb"
    partial = out / "assets" / ".partial"
    for path in (nbs / ".partial" / "01_x.ipynb", nbs / ".01_x.4242.partial.ipynb", partial / "01_x" / "half.csv",
                 partial / "01_x.earlier" / "a.md"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("left")
    R._sweep([R._partial(dst), R._partial(assets)], assets, dst)
    assert _files(tmp_path) == {"out/assets/01_x/a.md": b"left"}
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "nbs", "out", "out/assets", "out/assets/01_x", "out/assets/01_x/a.md"]


def test_pytest_never_collects_a_partial_notebook(tmp_path):
    """Under the project's pytest configuration (nbmake over notebooks/), a notebook in the ``.partial`` folder is
    not collected; the notebook beside it is."""
    from hedgekit.paths import REPO_DIR

    nbs = tmp_path / "notebooks"
    (nbs / R.PARTIAL).mkdir(parents=True)
    _notebook(nbs / "01_x.ipynb", "x = 1")
    _notebook(nbs / R.PARTIAL / "01_x.ipynb", "x = 1")
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-c", str(REPO_DIR / "pyproject.toml"), "--rootdir", str(tmp_path), str(nbs)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split("::")[0] for line in done.stdout.splitlines() if ".ipynb" in line] == ["notebooks/01_x.ipynb"]
