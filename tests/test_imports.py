"""The kit's imports run one way: `hedgekit.papers` builds on the library, never the library on a paper.

Only the papers themselves and the two entry points that list every paper (the CLI and the notebook registry,
`hedgekit/repro/reproduce.py`) may import `hedgekit.papers`; everything else gets a paper's settings passed in (e.g.
the retrieval model's dimension, `hedgekit.interactive.retrieval.retrieval_spec`), or a paper hands its part to the
library (the URL paper registers what a URL run is with the model store, `hedgekit.zoo.url_runs.register_url_runs`).
Every import statement counts, module-level or inside a function. The entry points import a paper's parts only
inside the command that needs them, and no module imports, through its module-level imports, a module that imports
it back (no import cycle).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the papers, the entry points, and the catalog of notebooks, which asks each paper for the models its notebooks load
ALLOWED = ("hedgekit/papers/", "hedgekit/cli.py", "hedgekit/repro/reproduce.py", "hedgekit/repro/catalog.py")
ENTRY_POINTS = ("hedgekit/cli.py", "hedgekit/repro/reproduce.py")


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


def test_the_model_store_imports_no_paper():
    """No module of `hedgekit.zoo` imports a paper, not even inside a function: the URL paper registers its runs
    with the store instead (`hedgekit.zoo.url_runs.register_url_runs`)."""
    used = {path.relative_to(ROOT).as_posix(): _uses_papers(path.read_text(), _module_name(path))
            for path in sorted((ROOT / "hedgekit" / "zoo").rglob("*.py"))}
    assert used and not any(used.values()), {k: v for k, v in used.items() if v}


def module_level_imports(source: str, module: str, is_package: bool = False) -> set[str]:
    """The modules that importing ``module`` (source ``source``) imports: its import statements outside functions
    and outside ``if TYPE_CHECKING:``, relative ones resolved; ``from a import b`` names ``a.b`` where that is a
    module of the kit (`MODULES`), else ``a``."""
    package = module if is_package else module.rpartition(".")[0]
    out = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(ast.Module(body=child.orelse, type_ignores=[]))
                continue
            if isinstance(child, ast.Import):
                out.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - child.level + 1] + ([base] if base else []))
                out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in child.names)
            visit(child)

    visit(ast.parse(source))
    return out


MODULES = {_module_name(p): p for p in sorted((ROOT / "hedgekit").rglob("*.py")) if "__pycache__" not in p.parts}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module of ``graph`` (module -> modules it imports),
    each sorted: every module of one imports every other, directly or through the rest (Tarjan's algorithm)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return cycles


@pytest.mark.parametrize("graph, cycles", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
])
def test_the_cycle_finder_on_small_graphs(graph, cycles):
    assert sorted(import_cycles(graph)) == cycles


def test_the_module_level_imports_skip_functions_and_type_checking():
    source = ("from typing import TYPE_CHECKING\nfrom hedgekit.paths import data_dir\nfrom . import store\n"
              "if TYPE_CHECKING:\n    from hedgekit.zoo import Spec\n"
              "def f():\n    from hedgekit.repro import reproduce\n")
    assert module_level_imports(source, "hedgekit.zoo.ledger") == {"typing", "hedgekit.paths", "hedgekit.zoo.store"}


def _ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycle_among_the_modules():
    """Importing a module never comes back to it through module-level imports: a cycle makes what a module sees of
    another depend on which of them was imported first. Importing ``a.b.c`` runs the packages ``a`` and ``a.b``
    first, so those count too, except a module's own packages (already being imported when it runs)."""
    graph = {}
    for m, p in MODULES.items():
        targets = {t for t in module_level_imports(p.read_text(), m, p.name == "__init__.py") if t in MODULES}
        targets |= {a for t in targets for a in _ancestors(t) if a in MODULES} - _ancestors(m)
        graph[m] = targets - {m}
    assert import_cycles(graph) == []


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_an_entry_point_imports_a_papers_parts_only_inside_the_command_that_needs_them(entry_point):
    """``python -m hedgekit --help`` and every command that needs no paper must not load one."""
    path = ROOT / entry_point
    module = _module_name(path)
    top = sorted(m for m in module_level_imports(path.read_text(), module)
                 if m == "hedgekit.papers" or m.startswith("hedgekit.papers."))
    assert top == [], f"{entry_point} imports {top} at module level"


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
    """`hedgekit.papers.lazy_parts`: importing a paper loads only the parts that are used (the
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
