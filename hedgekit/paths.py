"""Where hedgekit keeps its caches.

`HEDGEKIT_DATA` overrides everything; otherwise the repository's `data/` folder is
used when hedgekit runs from a source checkout, else `~/.cache/hedgekit`.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


def data_dir() -> Path:
    """Root of the cache (created on demand)."""
    env = os.environ.get("HEDGEKIT_DATA")
    if env:
        root = Path(env).expanduser()
    elif (REPO_DIR / "pyproject.toml").is_file() and (REPO_DIR / "data").is_dir():
        root = REPO_DIR / "data"
    else:
        root = Path.home() / ".cache" / "hedgekit"
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_path(*parts: str) -> Path:
    """`data_dir()/parts...`, with parent folders created."""
    path = data_dir().joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
