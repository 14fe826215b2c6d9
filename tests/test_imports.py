"""The kit's imports run one way: `hedgekit.papers` builds on the library, never the library on a paper.

Only the papers themselves, the two entry points that list every paper (the CLI and the notebook registry,
`hedgekit/repro/reproduce.py`) and the store's URL runs (`hedgekit/zoo/url_runs.py`, whose runs the URL paper
defines: it imports `hedgekit.papers.url.recipe` inside the one function that needs it, issue 47) may import
`hedgekit.papers`; everything else gets a paper's settings passed in (e.g. the retrieval model's dimension,
`hedgekit.interactive.retrieval.retrieval_spec`). Every import statement counts, module-level or inside a
function."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("hedgekit/papers/", "hedgekit/cli.py", "hedgekit/repro/reproduce.py", "hedgekit/zoo/url_runs.py")


def imported_modules(source: str, module: str) -> set[str]:
    """Every module an import statement of ``source`` (the code of dotted ``module``) names, relative ones resolved;
    ``from a import b`` names both ``a`` and ``a.b`` (b may be a module)."""
    package = module.split(".")
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _uses_papers(source: str, module: str) -> list[str]:
    return sorted(m for m in imported_modules(source, module) if m == "hedgekit.papers"
                  or m.startswith("hedgekit.papers."))


@pytest.mark.parametrize("source, found", [
    ("from hedgekit.papers.taha.experiments import DIM", ["hedgekit.papers.taha.experiments",
                                                          "hedgekit.papers.taha.experiments.DIM"]),
    ("def f():\n    import hedgekit.papers.url.benchmark as b\n", ["hedgekit.papers.url.benchmark"]),
    ("from hedgekit import papers", ["hedgekit.papers"]),
    ("from ..papers import hib", ["hedgekit.papers", "hedgekit.papers.hib"]),
    ("from hedgekit.viz import geometry  # hedgekit.papers in a comment", []),
])
def test_the_check_finds_every_form_of_import(source, found):
    assert _uses_papers(source, "hedgekit.interactive.retrieval") == found


def test_only_the_papers_and_the_entry_points_import_the_papers():
    offenders = {}
    for path in sorted((ROOT / "hedgekit").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(ALLOWED):
            continue
        used = _uses_papers(path.read_text(), _module_name(path))
        if used:
            offenders[rel] = used
    assert not offenders, f"modules importing hedgekit.papers (pass the paper's settings in instead): {offenders}"


def test_every_hedgekit_name_a_notebook_uses_exists():
    """Each `from hedgekit... import name` of a notebook's code cells resolves: a library move that forgets one breaks
    the notebook only when it is run."""
    import importlib

    import nbformat

    missing = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hedgekit"):
                    module = importlib.import_module(node.module)
                    missing += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                                if not hasattr(module, a.name) and importlib.util.find_spec(f"{node.module}.{a.name}") is None]
    assert not missing, f"names the notebooks use that the library does not have: {sorted(set(missing))}"


LAZY_PARTS = """
import sys
from hedgekit.papers import hib, spe, taha, url
print("EAGER", [m for m in sys.modules if m.startswith("hedgekit.papers.") and m.count(".") == 3])
for paper in (hib, spe, taha, url):
    for part in paper.__all__:
        assert getattr(paper, part) is sys.modules[f"{paper.__name__}.{part}"], part
    assert set(paper.__all__) <= set(dir(paper)), paper
    names = {}
    exec(f"from {paper.__name__} import *", names)
    assert all(names[part] is getattr(paper, part) for part in paper.__all__), paper
try:
    hib.no_such_part
except AttributeError as e:
    print("MISSING", e)
"""


def test_a_papers_parts_load_on_first_use_under_the_same_names():
    """`hedgekit.papers.lazy_parts` (issue 48 item 6): importing a paper loads only the parts that are used (the
    notebooks' first cell needs only ``experiments``), and ``paper.part``, ``dir(paper)`` and ``import *`` still give
    every part of its ``__all__``; a name that is no part is an AttributeError. In a fresh interpreter: no other test's
    imports count."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", LAZY_PARTS], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert "EAGER []" in out, out
    assert "MISSING module 'hedgekit.papers.hib' has no attribute 'no_such_part'" in out, out
