"""A lesson run in the orders a learner runs its cells: any order must work.

A lesson notebook has three kinds of code cells, found from its headings and tags:

* the **set-up**: the code cells before the ``# Lesson`` heading (the session, the ``parameters`` cell, imports);
* the **steps**: the lesson's other code cells, from ``# Lesson`` up to the ``# Reproduction`` heading;
* the **exercises**: the lesson's cells tagged ``exercise`` (answers and their checks).

`ORDERS` names the orders a lesson must survive, each as the list of cells a learner would run, and `run_order`
executes one in a fresh kernel with the notebook's default parameters (a learner's Run All), cell by cell, keeping
every cell's error instead of stopping at the first. The first order runs the whole notebook top to bottom and then
moves every live widget (`poke_widgets`): each slider to its other end and each dropdown through its options, so a
callback that a later cell broke (a rebound name, a missing figure) shows up as an error instead of dying silently
in the kernel's log. The README's test command runs that first order through nbmake: each lesson notebook's last
code cell carries `RUN_ALL_METADATA`, nbmake's ``post_cell_execute``, so the Run All test moves the widgets too.
The last order runs the set-up and the lesson top to bottom, exercises included, and then re-runs each step *alone*:
every re-run starts from the names the top-to-bottom run left (`keep_names`, `restore_names`), as when a learner
goes back to one step after the exercises, so an exercise that rebinds a step's name fails the step that reads it.

`rebound_names` is the static side of that order: a scan of the lesson's code (module-level bindings, found with
`ast`) for exercise cells that bind a name the set-up or a step binds. An exercise keeps its own names (a prefix,
or a function's locals); an import of the same object under the same name (``import torch`` again) rebinds nothing.

`refresh_lesson` re-runs a committed notebook's set-up and lesson top to bottom and writes their outputs back,
keeping the reproduction's outputs of its last full run (``python -m hedgekit reproduce --lessons-only``): a lesson
cell can change without retraining every model the reproduction reads. The notebook's metadata records it
(``hedgekit.lesson_rerun``: date, commit, mode, seconds).
"""
from __future__ import annotations

import ast
import importlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hedgekit.checks import write_bytes_atomic
from hedgekit.errors import InputError
from hedgekit.repro.kernel_channels import steady_notebook_client
from hedgekit.repro.session import restate_header
from hedgekit.repro.students import EXERCISE_TAG

__all__ = ["LessonCells", "lesson_cells", "Order", "ORDERS", "ALONE_ORDER", "OrderCells", "order_cells", "CellOutcome",
           "run_order", "poke_widgets", "keep_names", "restore_names", "WIDGET_POKE", "RUN_ALL_METADATA",
           "module_bindings", "rebound_names", "number_cells", "refresh_lesson"]

LESSON_HEADING = re.compile(r"^# Lesson\b", re.M)
REPRODUCTION_HEADING = re.compile(r"^# Reproduction\b", re.M)


@dataclass(frozen=True)
class LessonCells:
    """Indices (into ``nb.cells``) of a lesson's code cells, by kind, each in notebook order."""
    setup: list[int]
    steps: list[int]
    exercises: list[int]
    rest: list[int]  # the reproduction's code cells


def lesson_cells(nb, name: str = "notebook") -> LessonCells:
    """The set-up, steps, exercises and reproduction cells of a lesson notebook (module docstring); a notebook with
    no ``# Lesson`` heading, or no ``# Reproduction`` heading after it, is refused (`InputError`)."""
    heads = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]
    lesson = next((i for i in heads if LESSON_HEADING.search(nb.cells[i].source)), None)
    if lesson is None:
        raise InputError(f"{name}: no '# Lesson' heading; expected a lesson notebook (design.md section 5)")
    end = next((i for i in heads if i > lesson and REPRODUCTION_HEADING.search(nb.cells[i].source)), None)
    if end is None:
        raise InputError(f"{name}: no '# Reproduction' heading after '# Lesson'; expected the lesson to end there")
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    part = [i for i in code if lesson < i < end]
    exercises = [i for i in part if EXERCISE_TAG in nb.cells[i].metadata.get("tags", [])]
    return LessonCells(setup=[i for i in code if i < lesson], steps=[i for i in part if i not in exercises],
                       exercises=exercises, rest=[i for i in code if i > end])


@dataclass(frozen=True)
class Order:
    """A learner's order: ``cells`` gives the cells run one after the other (from a notebook's `LessonCells`);
    ``poke``: every widget is moved afterwards; ``alone``, if set, gives the cells then re-run one at a time, each
    from the names that ``cells`` left (a re-run's own bindings do not reach the next one)."""
    cells: Callable[[LessonCells], list[int]]
    poke: bool = False
    alone: Callable[[LessonCells], list[int]] | None = None


ALONE_ORDER = "each step re-run alone after the exercises"
ORDERS = {
    "top to bottom (Run All), then the widgets moved": Order(lambda c: c.setup + sorted(c.steps + c.exercises) + c.rest,
                                                             poke=True),
    "the exercises (twice) before the steps": Order(lambda c: c.setup + c.exercises + c.exercises + c.steps),
    "the steps re-run after the exercises": Order(lambda c: c.setup + c.steps + c.exercises + c.steps),
    ALONE_ORDER: Order(lambda c: c.setup + sorted(c.steps + c.exercises), alone=lambda c: list(c.steps)),
}


@dataclass(frozen=True)
class OrderCells:
    """One order's cells for one notebook: ``cells`` run in turn, then (``poke``) the widgets moved, then each cell
    of ``alone`` re-run on its own from the names ``cells`` left."""
    cells: list[int]
    poke: bool
    alone: list[int]


def order_cells(nb, order: str, name: str = "notebook") -> OrderCells:
    """The cells of ``order`` (a key of `ORDERS`) for ``nb``."""
    if order not in ORDERS:
        raise InputError(f"order must be one of {list(ORDERS)}; got {order!r}")
    o, c = ORDERS[order], lesson_cells(nb, name)
    return OrderCells(o.cells(c), o.poke, o.alone(c) if o.alone else [])


def poke_widgets() -> int:
    """Run in a notebook's kernel after Run All: move every live widget (sliders to both ends, dropdowns, toggles and
    check boxes through their values, then back) and raise a `RuntimeError` listing every callback that failed,
    raised or shown through IPython's showtraceback (an Output widget's context, ``ipywidgets.interact``). Without a
    front end an Output widget's parent-header redirection would leave the executing cell's reply unmatched, so
    while it runs an Output context writes into the running cell and keeps its error. Returns the moves made."""
    import sys
    import traceback

    import ipywidgets as w
    from IPython import get_ipython

    ip, errors = get_ipython(), []
    shown, output = ip.showtraceback, (w.Output.__enter__, w.Output.__exit__, w.Output.clear_output)

    def leave(self, etype, evalue, tb):
        if etype is not None:
            errors.append("".join(traceback.format_exception(etype, evalue, tb)))
        return True

    ip.showtraceback = lambda exc_tuple=None, *a, **k: errors.append(
        "".join(traceback.format_exception(*(exc_tuple or sys.exc_info()))))
    w.Output.__enter__, w.Output.__exit__, w.Output.clear_output = lambda self: self, leave, lambda *a, **k: None
    moved = 0
    try:
        for widget in list(w.widgets.widget._instances.values()):
            if isinstance(widget, (w.IntSlider, w.FloatSlider)):
                values = [widget.max, widget.min, widget.value]
            elif isinstance(widget, (w.Dropdown, w.RadioButtons, w.ToggleButtons, w.Select)):
                options = [v for _, v in widget._options_full]
                values = options[::-1] + [widget.value] if options else []
            elif isinstance(widget, (w.Checkbox, w.ToggleButton)):
                values = [not widget.value, widget.value]
            else:
                continue
            for v in values:
                try:
                    widget.value = v
                    moved += 1
                except Exception:
                    errors.append(traceback.format_exc())
    finally:
        ip.showtraceback = shown
        w.Output.__enter__, w.Output.__exit__, w.Output.clear_output = output
    if errors:
        raise RuntimeError(f"{len(errors)} widget callback(s) failed after Run All:\n" + "\n".join(errors))
    print(f"moved widgets {moved} times")
    return moved


# The lines that move the widgets after Run All: the poke cell of `run_order`, and nbmake's ``post_cell_execute``
# metadata of a notebook's last code cell (`RUN_ALL_METADATA`), so the README's Run All test moves them too.
POKE_LINES = ["from hedgekit.repro.orders import poke_widgets", "poke_widgets();"]
WIDGET_POKE = "\n".join(POKE_LINES)
RUN_ALL_METADATA = {"post_cell_execute": POKE_LINES}


# Run in the kernel (through a cell of their own that binds nothing): keep the user's names, and put them back.
_KEEP = '__import__("hedgekit.repro.orders", fromlist=["keep_names"]).keep_names()'
_RESTORE = '__import__("hedgekit.repro.orders", fromlist=["restore_names"]).restore_names()'


def keep_names() -> None:
    """Run in a notebook's kernel: remember which object each of the user's names is bound to (a shallow copy of the
    namespace: objects changed in place stay changed)."""
    from IPython import get_ipython

    ip = get_ipython()
    ip._hedgekit_kept_names = dict(ip.user_ns)


def restore_names() -> None:
    """Run in a notebook's kernel after `keep_names`: bind every kept name to its kept object again and unbind the
    names bound since."""
    from IPython import get_ipython

    ip = get_ipython()
    kept = getattr(ip, "_hedgekit_kept_names", None)
    if kept is None:
        raise RuntimeError("restore_names() before keep_names(): no names were kept in this kernel")
    for name in [n for n in ip.user_ns if n not in kept]:
        del ip.user_ns[name]
    ip.user_ns.update(kept)


@dataclass
class CellOutcome:
    """One executed cell: its index (-1: the widget poke), its error text (None: it ran), and whether it was a
    re-run alone (`Order.alone`)."""
    index: int
    error: str | None
    seconds: float
    alone: bool = False


def run_order(path: Path | str, order: str, kernel: str = "python3", timeout: int = 600) -> list[CellOutcome]:
    """Execute notebook ``path``'s cells in ``order`` (`ORDERS`) in one fresh kernel, working directory the
    notebook's folder, default parameters; every cell is run even after an error, and each outcome returned. The
    cells an order re-runs alone each start from the names its other cells left (`keep_names`, `restore_names`)."""
    import nbformat
    from nbclient.exceptions import CellExecutionError

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    plan = order_cells(nb, order, path.name)
    client = steady_notebook_client()(nb, timeout=timeout, kernel_name=kernel,
                                      resources={"metadata": {"path": str(path.parent)}})
    outcomes = []
    helpers = {}  # nbclient writes a cell back at its index: the helper cells go after the notebook's own
    for key, source in (("poke", WIDGET_POKE if plan.poke else None), ("keep", _KEEP if plan.alone else None),
                        ("restore", _RESTORE if plan.alone else None)):
        if source:
            nb.cells.append(nbformat.v4.new_code_cell(source))
            helpers[key] = len(nb.cells) - 1

    def run(index: int, alone: bool = False) -> None:
        at = index if index >= 0 else helpers["poke"]
        start = time.perf_counter()
        try:
            client.execute_cell(nb.cells[at], at)
            error = None
        except CellExecutionError as e:
            error = str(e)
        outcomes.append(CellOutcome(index, error, time.perf_counter() - start, alone))

    def helper(key: str) -> None:
        try:
            client.execute_cell(nb.cells[helpers[key]], helpers[key])
        except CellExecutionError as e:
            raise RuntimeError(f"{path.name}: the kernel could not {key} its names for the re-runs alone:\n{e}"
                               ) from None

    with client.setup_kernel():
        for index in plan.cells:
            run(index)
        if plan.poke:
            run(-1)
        if plan.alone:
            helper("keep")
            for index in plan.alone:
                helper("restore")
                run(index, alone=True)
    return outcomes


# ---------------------------------------------------------------- the static side: names an exercise rebinds
def _python(source: str) -> str:
    """A cell's source as Python: IPython's %magics and !commands rewritten as IPython runs them."""
    try:
        ast.parse(source)
        return source
    except SyntaxError:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)


class _Bindings(ast.NodeVisitor):
    """The module-level names a cell binds: name -> what ("import <module>", "from <module> import <name>", or
    "bound" for an assignment, a ``for``/``with``/``except`` target, a ``def``/``class``, a ``del`` or a walrus)."""

    def __init__(self):
        self.names: dict[str, str] = {}
        self.scope = 0  # > 0 inside a def, lambda or class body: its names are its own
        self.globals: list[set[str]] = []  # each enclosing function's ``global`` names

    def bind(self, name: str, what: str = "bound") -> None:
        if self.scope == 0 or (self.globals and name in self.globals[-1]):
            self.names[name] = what

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.bind(node.id)

    def visit_NamedExpr(self, node):  # a walrus binds in the enclosing scope, even inside a comprehension
        self.bind(node.target.id)
        self.visit(node.value)

    def visit_comprehension_scope(self, node):  # a comprehension's own targets are local to it
        for generator in node.generators:
            self.visit(generator.iter)
            for test in generator.ifs:
                self.visit_walrus_only(test)
        for part in ("elt", "key", "value"):
            if getattr(node, part, None) is not None:
                self.visit_walrus_only(getattr(node, part))

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_comprehension_scope

    def visit_walrus_only(self, node):
        for sub in ast.walk(node):
            if isinstance(sub, ast.NamedExpr):
                self.bind(sub.target.id)

    def _body(self, node, names: set[str]):
        self.scope += 1
        self.globals.append(names)
        for child in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(child)
        self.globals.pop()
        self.scope -= 1

    def visit_FunctionDef(self, node):
        self.bind(node.name)
        for expr in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(expr)
        declared = {n for sub in ast.walk(node) if isinstance(sub, ast.Global) for n in sub.names}
        self._body(node, declared)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        for expr in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(expr)
        self._body(node, set())

    def visit_ClassDef(self, node):
        self.bind(node.name)
        for expr in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(expr)
        self._body(node, set())

    def visit_Import(self, node):
        for alias in node.names:
            if alias.asname:
                self.bind(alias.asname, f"import {alias.name}")
            else:
                top = alias.name.split(".")[0]
                self.bind(top, f"import {top}")

    def visit_ImportFrom(self, node):
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name != "*":
                self.bind(alias.asname or alias.name, f"from {module} import {alias.name}")

    def visit_ExceptHandler(self, node):
        if node.name:
            self.bind(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name:
            self.bind(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        if node.name:
            self.bind(node.name)

    def visit_MatchMapping(self, node):
        if node.rest:
            self.bind(node.rest)
        self.generic_visit(node)


def module_bindings(source: str) -> dict[str, str]:
    """The names a cell's code binds at module level, each with how (`_Bindings`); `InputError` if it does not
    parse."""
    try:
        tree = ast.parse(_python(source))
    except SyntaxError as e:
        raise InputError(f"a cell does not parse as Python ({e.msg}, line {e.lineno})") from None
    visitor = _Bindings()
    visitor.visit(tree)
    return visitor.names


_MISSING = object()


def _imported(what: str):
    """The object an import binding (`_Bindings`) names, or `_MISSING` if it cannot be imported here."""
    try:
        if what.startswith("import "):
            return importlib.import_module(what.split()[1])
        _, module, _, name = what.split()
        if module.startswith("."):
            return _MISSING
        owner = importlib.import_module(module)
        return getattr(owner, name) if hasattr(owner, name) else importlib.import_module(f"{module}.{name}")
    except Exception:  # any failure: the two bindings cannot be shown to be the same object
        return _MISSING


def _same_import(a: str, b: str) -> bool:
    if a == b:
        return a != "bound"
    if a == "bound" or b == "bound":
        return False
    x, y = _imported(a), _imported(b)
    return x is not _MISSING and x is y


def rebound_names(nb, name: str = "notebook") -> list[str]:
    """One line per exercise cell that binds a name the set-up or a step binds (an import of the same object under
    the same name excepted, and the throwaway ``_``, which no cell reads), naming the names and the cells that bind
    them; empty when every exercise keeps its own names."""
    c = lesson_cells(nb, name)
    lesson: dict[str, list[tuple[int, str]]] = {}
    for index in c.setup + c.steps:
        for bound, what in module_bindings(nb.cells[index].source).items():
            lesson.setdefault(bound, []).append((index, what))
    problems = []
    for index in c.exercises:
        clashes = {bound: sorted({i for i, _ in lesson[bound]})
                   for bound, what in module_bindings(nb.cells[index].source).items()
                   if bound in lesson and bound.strip("_")
                   and not all(_same_import(what, w) for _, w in lesson[bound])}
        if clashes:
            listed = ", ".join(f"{n} (cell{'s' if len(cells) > 1 else ''} {', '.join(map(str, cells))})"
                               for n, cells in sorted(clashes.items()))
            problems.append(f"{name}: exercise cell {index} rebinds names the lesson's set-up or steps bind: {listed}")
    return problems


def number_cells(nb) -> None:
    """Number the executed code cells of ``nb`` 1, 2, 3, ... in order (their ``execute_result`` outputs alike), as
    a Run All of the notebook itself numbers them: once papermill's injected-parameters cell is dropped, its number
    would otherwise be missing from the sequence."""
    k = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.get("execution_count") is None:
            continue
        k += 1
        cell.execution_count = k
        for out in cell.get("outputs", []):
            if "execution_count" in out:
                out["execution_count"] = k


def refresh_lesson(path: Path | str, fast: bool = False, kernel: str = "python3", timeout: int = 1800) -> float:
    """Re-run notebook ``path``'s set-up and lesson cells in one fresh kernel (``FAST = fast``, no report folder) and
    write their outputs back into ``path``; the first cell's output (the session header of the last full run) and
    the reproduction's outputs stay as they are. A cell that fails stops it, and nothing is written
    (`hedgekit.errors.InputError` naming the cell). Returns the seconds it took."""
    import copy
    import datetime
    import subprocess

    import nbformat
    from nbclient.exceptions import CellExecutionError

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    c = lesson_cells(nb, path.name)
    params = [i for i in c.setup if "parameters" in nb.cells[i].metadata.get("tags", [])]
    if len(params) != 1:
        raise InputError(f"{path.name}: expected one cell tagged 'parameters' before the lesson; found {len(params)}")
    first = copy.deepcopy(nb.cells[c.setup[0]])  # the session header of the last full run stays
    nb.cells.append(nbformat.v4.new_code_cell(f"FAST = {bool(fast)}\nREPORT_DIR = ''"))  # the run's values
    run = [(i, nb.cells[i]) for i in c.setup[: c.setup.index(params[0]) + 1]] + [(len(nb.cells) - 1, nb.cells[-1])]
    run += [(i, nb.cells[i]) for i in c.setup[c.setup.index(params[0]) + 1:] + sorted(c.steps + c.exercises)]
    client = steady_notebook_client()(nb, timeout=timeout, kernel_name=kernel,
                                      resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in run:
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as e:
                raise InputError(f"{path.name}: cell {index} failed while its lesson was re-run; nothing was written:"
                                 f"\n{e}") from None
    seconds = time.perf_counter() - start
    nb.cells.pop()
    for out in first.get("outputs", []):  # its sentence on the modes quotes its own run's time (restate_header)
        for mime in ("text/markdown", "text/plain"):
            if mime in out.get("data", {}):
                out["data"][mime] = restate_header("".join(out["data"][mime]), path.stem)
    nb.cells[c.setup[0]] = first
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=path.parent, capture_output=True,
                            text=True).stdout.strip() or "?"
    nb.metadata.setdefault("hedgekit", {})["lesson_rerun"] = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "commit": commit,
        "mode": "FAST" if fast else "full", "seconds": round(seconds, 1)}
    number_cells(nb)
    write_bytes_atomic(path, nbformat.writes(nb).encode() + b"\n")
    return seconds
