"""The package's layout rules: the IR apart from the printers, no import cycles (imports inside
functions count), no private name reached from another package, small files, and public names
that exist."""
from __future__ import annotations

import ast
import importlib
import os

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "beast")


def _modules():
    """(dotted name, path) of every module of the package."""
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for f in sorted(files):
            if f.endswith(".py") and f != "__main__.py":      # __main__ runs the command
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                yield rel[:-len(".__init__")] if rel.endswith(".__init__") else rel, path


MODULES = dict(_modules())


def _package(name, path):
    """The package a module belongs to (a package's ``__init__``: the package itself)."""
    return name if path.endswith("__init__.py") else name.rpartition(".")[0]


def _import_nodes(name, path, top_level_only):
    """(node, absolute module it imports from) for every import of the module."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    package = _package(name, path)
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            yield node, base
        elif isinstance(node, ast.Import):
            yield node, None


def _imports(name, path, top_level_only):
    """The package modules ``name`` imports (relative imports resolved): {module: line}."""
    out = {}
    for node, base in _import_nodes(name, path, top_level_only):
        for alias in node.names:
            if base is None:
                target = alias.name
            else:
                full = f"{base}.{alias.name}"
                target = full if full in MODULES else base
            out.setdefault(target, node.lineno)
    return {m: line for m, line in out.items() if m in MODULES and m != name}


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
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
                found.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_ir_never_imports_the_printers_or_the_runtime():
    for name, path in MODULES.items():
        if name.startswith("beast.ir"):
            bad = {m for m in _imports(name, path, top_level_only=False)
                   if m.startswith(("beast.codegen", "beast.runtime"))}
            assert not bad, f"{name} imports {sorted(bad)}"


def test_no_import_cycles_counting_imports_inside_functions():
    """Every import counts, wherever it is written (a lazy import inside a function hides a cycle
    from Python's import machinery, not from a reader), and a package's ``__init__`` counts as a
    module: a submodule imports its siblings, not its own package."""
    graph = {name: _imports(name, path, top_level_only=False) for name, path in MODULES.items()}
    cycles = _cycles(graph)
    lines = [f"{a}:{graph[a][b]} -> {b}" for cycle in cycles for a in cycle for b in graph[a] if b in cycle]
    assert not cycles, "import cycles:\n" + "\n".join(lines)


def test_no_private_name_is_used_outside_its_package():
    """``from other.package import _name`` or ``module._name`` on a module of another package:
    a private name is for its own package (a test of a module may reach into it; beast may not)."""
    found = []
    for name, path in MODULES.items():
        mine = _package(name, path)
        modules = {}                   # local name -> beast module it is bound to
        for node, base in _import_nodes(name, path, top_level_only=False):
            for alias in node.names:
                full = alias.name if base is None else f"{base}.{alias.name}"
                if full in MODULES:
                    modules[alias.asname or alias.name.split(".")[0]] = full
                    continue
                if base and base in MODULES and alias.name.startswith("_") and not alias.name.startswith("__") \
                        and _package(base, MODULES[base]) != mine:
                    found.append(f"{name}:{node.lineno} imports {alias.name} from {base}")
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                target = modules[node.value.id]
                if _package(target, MODULES[target]) != mine:
                    found.append(f"{name}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not found, "\n".join(found)


def _python_files(*tops):
    for top in tops:
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            for f in files:
                if f.endswith(".py"):
                    yield os.path.join(folder, f)


def test_no_file_over_800_lines():
    long = {os.path.relpath(path, ROOT): n for path in _python_files("beast", "tests", "bench")
            if (n := sum(1 for _ in open(path, encoding="utf-8"))) > 800}
    assert not long, long


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_public_name_exists(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:          # an optional extra (ray, cupy) that this machine lacks
        pytest.skip(f"{name}: {exc}")
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


def test_every_modules_tests_are_found_at_one_path():
    """The tests of module ``beast/<package>/<module>.py`` are ``tests/unit/<package>/test_<module>.py``
    (an aspect that needs a file of its own: ``test_<module>_<aspect>.py`` beside it); tests that
    cross modules are in ``tests/behaviour/``, helpers in ``tests/support/``: nothing else."""
    tests = os.path.join(ROOT, "tests")
    unit = os.path.join(tests, "unit")
    stray = []
    for folder, dirs, files in os.walk(unit):
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        package = os.path.relpath(folder, unit)
        for f in files:
            if not f.startswith("test_") or not f.endswith(".py"):
                continue
            parts = f[len("test_"):-3].split("_")
            names = ["_".join(parts[:k]) for k in range(len(parts), 0, -1)]
            base = os.path.join(ROOT, "beast", "" if package == "." else package)
            if not any(os.path.exists(os.path.join(base, n + ".py")) or os.path.isdir(os.path.join(base, n))
                       for n in names):
                stray.append(os.path.relpath(os.path.join(folder, f), ROOT))
    loose = [f for f in os.listdir(tests) if f.endswith(".py") and f != "conftest.py"]
    assert not stray, f"unit tests named after no module: {stray}"
    assert not loose, f"test files outside unit/, behaviour/ and support/: {loose}"
