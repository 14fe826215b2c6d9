"""File-system errors are answered: every command that writes (students, site, results, reproduce,
train, url-benchmark) ends with exit status 2 and one ``error:`` paragraph that names the path and the flag or
variable that moves it, for a read-only place, a file in the way, HEDGEKIT_DATA naming a file, and a full disk; a
folder is suggested only where it is writable.

Everything goes through the real entry point, `hedgekit.cli.main`. A file in the way (ENOTDIR / EEXIST) is real
everywhere, root included. A read-only folder is real (write bits removed) where permission bits stop this process
(`BITS_HOLD`); where they do not (root), ``os.mkdir`` and `hedgekit.checks._write_file` fail under it with EROFS and
the file name, as a read-only mount makes them fail.
"""
import errno
import os
import tempfile
from pathlib import Path

import pytest

from hedgekit import checks, cli, paths
from hedgekit.checks import check_writable
from hedgekit.errors import StorageError



def _bits_hold() -> bool:
    """True if a folder without write bits refuses this process a new file (not so for root, who writes anyway)."""
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o555)
        try:
            Path(folder, "probe").touch()
        except PermissionError:
            return True
        finally:
            os.chmod(folder, 0o755)
    return False


BITS_HOLD = _bits_hold()

LEADERBOARD = ["url-benchmark", "--fast", "--methods", "ce", "--seeds", "1", "--quiet"]
TRAIN = ["train", "--kind", "hib", "--preset", "fast", "--steps", "5"]


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A private HEDGEKIT_DATA, HOME and working folder, and a regular file ``afile`` in it."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("keep me\n")
    return tmp_path


def answer(capsys, argv) -> str:
    """Run ``python -m hedgekit ARGV``; check exit status 2 and one ``error:`` paragraph at the end of stderr, no
    traceback; return the paragraph."""
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and lines and lines[-1].startswith("error: "), err
    assert sum(line.startswith("error: ") for line in lines) == 1, err
    return lines[-1]


@pytest.fixture
def read_only(place, monkeypatch):
    """``place/ro``: a folder that takes no new file or folder (see the module's docstring)."""
    ro = place / "ro"
    ro.mkdir()
    if BITS_HOLD:
        ro.chmod(0o555)
        yield ro
        ro.chmod(0o755)
        return
    real_mkdir, real_write = os.mkdir, checks._write_file

    def refuse(path):
        if paths.is_within(path, ro):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(os, "mkdir", lambda path, *a, **k: refuse(path) or real_mkdir(path, *a, **k))
    monkeypatch.setattr(checks, "_write_file", lambda path, data: refuse(path) or real_write(path, data))
    yield ro


# ---------------------------------------------------------------- a file in the way


@pytest.mark.parametrize("argv", [["students"], ["site"], LEADERBOARD, ["reproduce", "--fast", "--only", "00"]],
                         ids=["students", "site", "url-benchmark", "reproduce"])
def test_out_naming_an_existing_file(place, capsys, argv):
    msg = answer(capsys, argv + ["--out", "afile"])
    assert "afile" in msg and "is a file, not a folder" in msg and "Choose a writable place with --out" in msg
    assert (place / "afile").read_text() == "keep me\n"  # the file in the way is untouched
    assert not (place / "cache").exists()  # url-benchmark: refused before anything trained


def test_results_out_below_a_file(place, capsys):
    msg = answer(capsys, ["results", "--out", "afile/results.md"])
    assert msg.startswith("error: cannot write into afile: it is a file, not a folder") and "--out" in msg


@pytest.mark.parametrize("argv", [TRAIN, LEADERBOARD], ids=["train", "url-benchmark"])
def test_hedgekit_data_naming_a_file(place, capsys, monkeypatch, argv):
    monkeypatch.setenv("HEDGEKIT_DATA", str(place / "afile"))
    msg = answer(capsys, argv)
    assert f"{place / 'afile'} is a file, not a folder" in msg
    assert f"Set HEDGEKIT_DATA to a writable folder (e.g. HEDGEKIT_DATA={place / 'home' / 'hedgekit-data'})" in msg


@pytest.mark.parametrize("name", ["x.pt", "sub/x.pt"])
def test_check_writable_knows_a_file_where_a_folder_must_be(place, monkeypatch, name):
    monkeypatch.setenv("HEDGEKIT_DATA", str(place / "afile"))
    with pytest.raises(StorageError, match="afile is a file, not a folder") as err:
        check_writable(place / "afile" / name)  # mkdir of afile: EEXIST; of afile/sub: ENOTDIR
    assert err.value.errno == (errno.EEXIST if name == "x.pt" else errno.ENOTDIR)
    assert "HEDGEKIT_DATA" in str(err.value) and (place / "afile").read_text() == "keep me\n"


# ---------------------------------------------------------------- read-only places


@pytest.mark.parametrize("argv", [["students"], ["site"], ["reproduce", "--fast", "--only", "00"], LEADERBOARD],
                         ids=["students", "site", "reproduce", "url-benchmark"])
def test_out_in_a_read_only_folder(read_only, capsys, argv):
    msg = answer(capsys, argv + ["--out", str(read_only / "out")])
    assert msg.startswith(f"error: cannot write to {read_only}") and "the folder is read-only" in msg
    assert f"Choose a writable place with --out (e.g. --out {read_only.parent / 'home' / 'out'})" in msg
    assert list(read_only.iterdir()) == []


def test_results_in_a_read_only_folder(read_only, capsys):
    msg = answer(capsys, ["results", "--out", str(read_only / "docs" / "results.md")])
    assert f"cannot write to {read_only}: the folder is read-only" in msg and "--out" in msg


@pytest.mark.parametrize("argv", [TRAIN, LEADERBOARD], ids=["train", "url-benchmark"])
def test_read_only_data_cache(read_only, capsys, monkeypatch, argv):
    monkeypatch.setenv("HEDGEKIT_DATA", str(read_only / "cache"))
    msg = answer(capsys, argv)
    assert "the folder is read-only" in msg and "Set HEDGEKIT_DATA to a writable folder" in msg


# ---------------------------------------------------------------- the suggested folder is writable


def test_a_fallback_is_suggested_only_where_it_can_be_written(place, capsys, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(place / "afile"))
    monkeypatch.setenv("HOME", str(place / "afile" / "home"))  # a HOME that cannot be written, even by root
    monkeypatch.setattr(paths.tempfile, "tempdir", str(place / "tmp"))
    (place / "tmp").mkdir()
    msg = answer(capsys, LEADERBOARD)
    assert f"(e.g. HEDGEKIT_DATA={place / 'tmp' / 'hedgekit-data'})" in msg and "home" not in msg
    monkeypatch.setattr(paths.tempfile, "tempdir", str(place / "afile" / "tmp"))  # neither can be written
    msg = answer(capsys, LEADERBOARD)
    assert "Set HEDGEKIT_DATA to a writable folder for hedgekit's caches" in msg and "e.g." not in msg


@pytest.mark.skipif(not BITS_HOLD, reason="permission bits do not stop this process (root)")
def test_a_read_only_home_is_not_suggested(place, capsys, monkeypatch):
    (place / "home").chmod(0o555)
    try:
        monkeypatch.setenv("HEDGEKIT_DATA", str(place / "afile"))
        msg = answer(capsys, LEADERBOARD)
    finally:
        (place / "home").chmod(0o755)
    assert f"(e.g. HEDGEKIT_DATA={Path(tempfile.gettempdir()) / 'hedgekit-data'})" in msg  # not ~/hedgekit-data


# ---------------------------------------------------------------- full disks


def test_students_on_a_full_disk_leave_no_partial_notebook(place, capsys, monkeypatch):
    def full(path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(checks, "_write_file", full)
    msg = answer(capsys, ["students", "--out", "s"])
    assert msg.startswith("error: no space left on device at s: writing 00_start_here.ipynb needs ")
    assert "Free some space, or choose a place on a disk with room with --out" in msg
    assert list((place / "s").iterdir()) == []


@pytest.mark.parametrize("code, named", [(errno.EIO, True), (errno.EPERM, False)], ids=["EIO", "EPERM-no-file"])
def test_other_os_errors_are_not_disguised(place, monkeypatch, code, named):
    """An I/O error is not a read-only folder, nor is an EPERM without a file (``os.kill``'s): they pass as they are."""
    from hedgekit.repro import students

    def broken(out):
        raise OSError(code, os.strerror(code), *([str(out)] if named else []))

    monkeypatch.setattr(students, "write_students", broken)
    with pytest.raises(OSError) as err:
        cli.main(["students", "--out", "s"])
    assert err.value.errno == code and not isinstance(err.value, StorageError)
