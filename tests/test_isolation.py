"""Tests do not depend on each other: tests/conftest.py gives the session its own empty
HEDGEKIT_DATA outside the repository, and fails a run that changed the repository's data/ folder."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hedgekit.paths import REPO_DIR, data_dir

CONFTEST = Path(__file__).with_name("conftest.py").resolve()


def _conftest(config):
    """tests/conftest.py as pytest loaded it."""
    plugins = [p for p in config.pluginmanager.get_plugins() if getattr(p, "__file__", None)
               and Path(p.__file__).resolve() == CONFTEST]
    assert len(plugins) == 1
    return plugins[0]


def test_the_session_data_folder_is_its_own_and_outside_the_repository(tmp_path_factory):
    folder = Path(os.environ["HEDGEKIT_DATA"])
    assert data_dir() == folder
    assert folder.parent == tmp_path_factory.getbasetemp()  # this session's (this xdist worker's) own folder
    assert REPO_DIR not in folder.resolve().parents


def test_listing_changes_names_what_was_added_removed_and_changed(request, tmp_path):
    conftest = _conftest(request.config)
    (tmp_path / "ndigit").mkdir()
    (tmp_path / "ndigit" / "a.npz").write_bytes(b"12345")
    (tmp_path / "b.pt").write_bytes(b"1")
    (tmp_path / "c.json").write_bytes(b"{}")
    before = conftest.data_listing(tmp_path)
    assert conftest.listing_changes(before, conftest.data_listing(tmp_path)) == []

    (tmp_path / "ndigit" / "a.npz").write_bytes(b"123")  # another size
    st = (tmp_path / "b.pt").stat()
    os.utime(tmp_path / "b.pt", ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # same size, rewritten later
    (tmp_path / "c.json").unlink()
    (tmp_path / "url" / "fast").mkdir(parents=True)  # empty folders count too
    assert conftest.listing_changes(before, conftest.data_listing(tmp_path)) == [
        "added url", "added url/fast", "changed b.pt", "changed ndigit/a.npz", "removed c.json"]
    assert conftest.data_listing(tmp_path / "absent") == {}


INNER_CONFTEST = """
import importlib.util
import pathlib

spec = importlib.util.spec_from_file_location("hedgekit_tests_conftest", {conftest!r})
conftest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conftest)
conftest.REPO_DATA = pathlib.Path({watched!r})  # the guard watches this folder instead of the repository's data/
pytest_sessionstart, pytest_sessionfinish = conftest.pytest_sessionstart, conftest.pytest_sessionfinish
"""


def _inner_run(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess:
    """pytest in a subprocess on one test ``body``, with tests/conftest.py's guard watching ``tmp_path/watched``."""
    watched, run = tmp_path / "watched", tmp_path / "run"
    watched.mkdir(exist_ok=True)
    (watched / "README.md").write_text("as found\n")
    run.mkdir()
    (run / "conftest.py").write_text(INNER_CONFTEST.format(conftest=str(CONFTEST), watched=str(watched)))
    (run / "test_inner.py").write_text(f"import pathlib\n\n\ndef test_inner():\n    {body}\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "test_inner.py"],
                          cwd=run, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("xdist", [["-p", "no:xdist"], ["-n", "1"]], ids=["no-xdist", "xdist-worker"])
def test_a_run_that_writes_into_the_watched_folder_fails(tmp_path, xdist):
    """The inner test passes, yet the run exits 1 and names the file it left; under xdist the controller sees
    what its worker wrote."""
    r = _inner_run(tmp_path, f"(pathlib.Path({str(tmp_path / 'watched')!r}) / 'left.npz').write_bytes(b'x')",
                   *xdist)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "1 passed" in out and "ERROR: this test run changed" in out and "added left.npz" in out, out


def test_a_run_that_leaves_the_watched_folder_alone_passes(tmp_path):
    r = _inner_run(tmp_path, f"assert pathlib.Path({str(tmp_path / 'watched')!r}).is_dir()", "-p", "no:xdist")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "1 passed" in out and "ERROR" not in out, out
