"""Where hedgekit keeps its caches, and where the repository's notebooks are (`notebook_dir`).

`HEDGEKIT_DATA` overrides everything; otherwise the repository's `data/` folder is
used when hedgekit runs from a source checkout, else `~/.cache/hedgekit`.

Finding a path creates nothing, so reading a shipped or cached file works in a read-only
install; the writers (`hedgekit.checks.atomic_write`) create the folders they write into.
When the cache cannot be written (read-only folder, full disk: `hedgekit.errors.StorageError`):
data set caches are built in memory with a warning; a model that must be trained is refused
before training, naming the folder and `HEDGEKIT_DATA` as the fix (`hedgekit.zoo.load_or_train`).
The message's other folder is suggested only once it is checked writable (`writable_fallback`:
with a read-only HOME, ``~/hedgekit-data`` is not suggested), and `moved_by` says what moves a path elsewhere.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


def data_dir() -> Path:
    """Root of the cache (not created here: `hedgekit.checks.atomic_write` creates what it writes)."""
    env = os.environ.get("HEDGEKIT_DATA")
    if env:
        root = Path(env).expanduser()
    elif (REPO_DIR / "pyproject.toml").is_file() and (REPO_DIR / "data").is_dir():
        root = REPO_DIR / "data"
    else:
        root = Path.home() / ".cache" / "hedgekit"
    return root


def notebook_dir() -> Path:
    """The repository's notebooks/ folder: the lessons, their committed runs and report (`hedgekit.repro`)."""
    return REPO_DIR / "notebooks"


def cache_path(*parts: str) -> Path:
    """`data_dir()/parts...`; nothing is created (a read needs no write access)."""
    return data_dir().joinpath(*parts)


def is_within(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """True if ``path`` is ``folder`` or lies below it (both made absolute; symbolic links are not followed)."""
    path, folder = Path(os.path.abspath(path)), Path(os.path.abspath(folder))
    return path == folder or folder in path.parents


def moved_by(path: str | os.PathLike) -> str | None:
    """What puts ``path`` elsewhere: ``HEDGEKIT_DATA`` for a path in the cache (`data_dir`), else None (a command's
    own flag, e.g. ``--out``, is known to the command line only: `hedgekit.cli`)."""
    return "HEDGEKIT_DATA" if is_within(path, data_dir()) else None


def writable_fallback(name: str, avoid: str | os.PathLike | None = None) -> Path | None:
    """``~/<name>`` or else ``<temporary folder>/<name>``: the first whose nearest existing folder takes a new file
    (probed with an anonymous temporary file, so nothing is left behind), on another file system than ``avoid``
    (the full disk) if given; None if neither. A suggestion in an error message is checked with this first."""
    avoid_dev = _device(avoid) if avoid is not None else None
    for base in (Path.home(), Path(tempfile.gettempdir())):
        candidate = base / name
        folder = existing_parent(candidate)
        if not folder.is_dir() or (avoid_dev is not None and _device(folder) == avoid_dev):
            continue
        try:
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError:
            continue
        return candidate
    return None


def existing_parent(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    while not (path.exists() or path.is_symlink()) and path != path.parent:
        path = path.parent
    return path


def _device(path: str | os.PathLike) -> int | None:
    try:
        return os.stat(existing_parent(Path(path))).st_dev
    except OSError:
        return None


def git(root: str | os.PathLike, *args: str) -> str | None:
    """The output of ``git -C root ARGS``; None outside a git checkout, without git, or when the command fails."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
