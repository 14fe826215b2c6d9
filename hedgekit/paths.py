"""Where hedgekit keeps its caches.

`HEDGEKIT_DATA` overrides everything; otherwise the repository's `data/` folder is
used when hedgekit runs from a source checkout, else `~/.cache/hedgekit`.

Finding a path creates nothing, so reading a shipped or cached file works in a read-only
install; the writers (`hedgekit.checks.atomic_write`) create the folders they write into.
When the cache cannot be written (read-only folder, full disk: `hedgekit.errors.StorageError`):
data set caches are built in memory with a warning; a model that must be trained is refused
before training, naming the folder and `HEDGEKIT_DATA` as the fix (`hedgekit.zoo.load_or_train`).
"""
from __future__ import annotations

import os
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


def cache_path(*parts: str) -> Path:
    """`data_dir()/parts...`; nothing is created (a read needs no write access)."""
    return data_dir().joinpath(*parts)
