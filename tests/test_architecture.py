"""The layering of docs/architecture.md holds: imports only flow down the layers, and no two
modules import each other (directly or round a longer loop), eagerly or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"

#: The layers, lowest first; a module may import from its own layer and the ones below. Keep in
#: step with docs/architecture.md.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("workbench.errors", "workbench.fileio", "workbench.processors", "workbench.metrics",
              "workbench.taskmetrics", "workbench.procfs", "workbench.power", "workbench.nativelog",
              "workbench.timing", "workbench.names", "workbench.memorymodes", "workbench.version",
              "workbench.precisions",
              "workbench.workspace", "workbench.papers", "workbench.data")),
    ("runtime", ("workbench.runtime",)),
    ("profiles", ("workbench.profiles",)),
    ("moo", ("workbench.moo",)),
    ("solvers", ("workbench.solvers",)),
    ("host", ("workbench.host",)),
    ("systems", ("workbench.memory", "workbench.multiexit")),
    ("deploy", ("workbench.bundling",)),
    ("lab", ("workbench.lab",)),
    ("cli", ("workbench.cli", "workbench.__main__")),
]


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports(path: Path, known: set[str], root: Path = PACKAGE, *, annotations: bool = False
            ) -> set[str]:
    """Every workbench module ``path`` imports, at module level or inside functions (and under
    ``if TYPE_CHECKING:`` too when ``annotations``)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in (ast.walk(tree) if annotations else _runtime_nodes(tree)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("workbench"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("workbench"))
    out.discard(name)
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (imports for annotations never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                todo.extend(child.orelse)
                continue
            todo.append(child)


def layer_of(module: str) -> int | None:
    for k, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return k
    return None


def graph(root: Path = PACKAGE, *, annotations: bool = False) -> dict[str, set[str]]:
    mods = modules(root)
    return {m: imports(p, set(mods), root, annotations=annotations) for m, p in mods.items()}


def upward_imports(g: dict[str, set[str]]) -> list[str]:
    bad = []
    for m, targets in g.items():
        if m == "workbench":
            continue  # the front door: lazy re-exports of every layer's entry points
        lm = layer_of(m)
        for t in sorted(targets):
            lt = layer_of(t)
            if lm is None or lt is None or lt > lm:
                bad.append(f"{m} ({LAYERS[lm][0] if lm is not None else 'no layer'}) imports "
                           f"{t} ({LAYERS[lt][0] if lt is not None else 'no layer'})")
    return bad


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w == "workbench" or w not in g:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    assert [m for m in modules() if m != "workbench" and layer_of(m) is None] == []


def test_imports_only_flow_down_the_layers():
    assert upward_imports(graph()) == []


def test_no_import_cycles():
    """Annotation-only imports count: a cycle through them is still two modules that cannot be
    understood (or moved) apart."""
    assert cycles(graph(annotations=True)) == []


def unresolved(g: dict[str, set[str]]) -> list[str]:
    """Imports of workbench modules that do not exist (a function-level import runs only when
    the function does: a moved module must not leave one behind)."""
    return [f"{m} imports {t}" for m, ts in g.items() for t in sorted(ts)
            if t != "workbench" and t not in g]


def test_every_import_names_an_existing_module():
    assert unresolved(graph()) == []


@pytest.mark.parametrize("source, problem", [
    ("from ..lab import viz\n", "upward"),
    ("def f():\n    from ..solvers import rass\n", "upward"),
    ("from .rass import rass\n", "cycle"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .rass import rass\n", "cycle"),
    ("def f():\n    from .gone import x\n", "unresolved"),
])
def test_the_checks_catch_a_new_violation(tmp_path, source, problem):
    """The same scan over a copy of the package with one bad import added."""
    import shutil

    copy = tmp_path / "workbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    target = copy / ("moo/slo.py" if problem == "upward" else "solvers/result.py")
    target.write_text(target.read_text() + "\n" + source)
    g = graph(copy, annotations=problem == "cycle")
    if problem == "upward":
        assert any(v.startswith("workbench.moo.slo") for v in upward_imports(g))
    elif problem == "unresolved":
        assert unresolved(g) == ["workbench.solvers.result imports workbench.solvers.gone"]
    else:
        assert any("workbench.solvers.result" in c for c in cycles(g))



def test_every_exception_the_package_defines_derives_from_one_root():
    """One ``except WorkbenchError`` catches whatever the package raises on purpose (private
    control-flow exceptions that never leave their module apart)."""
    import importlib

    from workbench.errors import WorkbenchError

    strays = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)
                   and not n.name.startswith("_") and n.bases]
        if not classes:
            continue
        mod = importlib.import_module(name)
        for c in classes:
            obj = getattr(mod, c)
            if isinstance(obj, type) and issubclass(obj, BaseException) \
                    and not issubclass(obj, WorkbenchError):
                strays.append(f"{name}.{c}")
    assert strays == []


#: The lab's packages, lowest first (docs/architecture.md, "Inside the lab"): a lab module imports
#: only from its own package and those before it.
LAB_ORDER = ("bench", "experiments", "reproduction", "viz", "explorer", "sweep", "reports")


def lab_upward_imports(g: dict[str, set[str]]) -> list[str]:
    def rank(m: str) -> int | None:
        parts = m.split(".")
        if len(parts) < 3 or parts[:2] != ["workbench", "lab"]:
            return None
        return LAB_ORDER.index(parts[2]) if parts[2] in LAB_ORDER else -1

    bad = [f"{m} imports {t}" for m, ts in g.items() for t in sorted(ts)
           if rank(m) is not None and rank(t) is not None and rank(t) > rank(m)]
    # The explorer's computation never loads its drawing (plotly, ipywidgets).
    computing = ("workbench.lab.explorer.session", "workbench.lab.explorer.state")
    bad += [f"{m} imports {t}" for m in computing for t in sorted(g.get(m, ()))
            if t.startswith(("workbench.lab.explorer.widget", "workbench.lab.explorer.figures",
                             "workbench.lab.viz"))]
    return bad


def test_inside_the_lab_imports_flow_down_its_packages():
    assert [m for m in modules() if m.startswith("workbench.lab.")
            and m.split(".")[2] not in LAB_ORDER] == []
    assert lab_upward_imports(graph()) == []


#: Modules allowed over MAX_MODULE_LINES, each with its defence (none today), and functions over
#: MAX_FUNCTION_LINES likewise. A room that grows past its size is split along what it holds.
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80
BIG_MODULES: dict[str, str] = {}
BIG_FUNCTIONS: dict[str, str] = {}


def test_no_room_outgrows_its_size():
    """docs/development.md: modules up to 500 lines, functions up to 80 (docstring included)."""
    big_modules, big_functions = [], []
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES and name not in BIG_MODULES:
            big_modules.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                where = f"{name}:{node.lineno} {node.name}"
                if n > MAX_FUNCTION_LINES and f"{name}.{node.name}" not in BIG_FUNCTIONS:
                    big_functions.append(f"{where}: {n} lines")
    assert big_modules == [] and big_functions == []
