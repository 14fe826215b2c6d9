"""The code a URL run executes, as module files: what `hedgekit.papers.url.benchmark.run_config` hashes into a run's
code key, so that an edit to any code the run executes makes its cached run stale.

`module_closure` follows a module's hedgekit imports (module-level and inside functions) with `ast` and
`importlib.util.find_spec`; `source_text` is the text that is hashed.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

__all__ = ["module_closure", "source_text"]


@lru_cache(maxsize=None)
def _module_file(name: str) -> str | None:
    """The source file of module ``name`` (`importlib.util.find_spec`), None if it is not a module with one."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent that is not a package (``module.function``), or no spec
        return None
    return spec.origin if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def source_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


@lru_cache(maxsize=256)
def _imported_names(text: str, name: str, is_package: bool) -> tuple[str, ...]:
    """Every module name that the source ``text`` of module ``name`` imports, anywhere in it: ``import a.b`` gives
    ``a.b``; ``from a import b`` gives ``a.b`` if that is a module, else ``a``; relative imports are resolved."""
    import ast
    import importlib.util

    package = name if is_package else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            try:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            except (ImportError, ValueError):  # a relative import above the top-level package
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append(sub if alias.name != "*" and _module_file(sub) is not None else base)
    return tuple(out)


def module_closure(modules, package: str = "hedgekit", skip=()) -> dict[str, str]:
    """``modules`` and every module of ``package`` they import, transitively: module name -> source file, sorted
    by name, each module once.

    Imports are read with `ast` from each module's source (also the ones inside functions, so the lazy imports
    count too) and resolved to files with `importlib.util.find_spec`: ``import package.x``, ``from package.x
    import y`` (the module ``package.x.y`` if there is one, else ``package.x``) and relative imports. Imports of
    other packages (torch, numpy, ...) are not followed; a package's ``__init__`` counts only when it is imported
    itself or a name is imported from it. The starting ``modules`` are always included (they may live outside
    ``package``); modules in ``skip`` are neither included nor followed, and names that do not resolve to a
    Python source file are left out.
    """
    def inside(name):
        return name == package or name.startswith(f"{package}.")

    todo, seen, out = list(modules), set(skip), {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name)
        if path is None:
            continue
        out[name] = path
        is_package = Path(path).name == "__init__.py"
        todo += [m for m in _imported_names(source_text(path), name, is_package) if inside(m) and m not in seen]
    return dict(sorted(out.items()))
