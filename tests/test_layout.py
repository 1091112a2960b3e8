"""The package's layout rules (issue 7): the IR apart from the printers, no two modules importing
each other, small modules, and public names that exist."""
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


def _imports(name, path, top_level_only):
    """The package modules ``name`` imports (relative imports resolved)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in MODULES else base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m in MODULES and m != name}


def test_the_ir_never_imports_the_printers_or_the_runtime():
    for name, path in MODULES.items():
        if name.startswith("beast.ir"):
            bad = {m for m in _imports(name, path, top_level_only=False)
                   if m.startswith(("beast.codegen", "beast.runtime"))}
            assert not bad, f"{name} imports {sorted(bad)}"


def test_no_two_modules_import_each_other():
    graph = {name: _imports(name, path, top_level_only=True) for name, path in MODULES.items()}
    pairs = {tuple(sorted((a, b))) for a, deps in graph.items() for b in deps
             if a in graph.get(b, ()) and not (a.startswith(b + ".") or b.startswith(a + "."))}
    assert not pairs, f"modules importing each other at module level: {sorted(pairs)}"


def test_no_module_over_1000_lines():
    long = {name: n for name, path in MODULES.items()
            if (n := sum(1 for _ in open(path, encoding="utf-8"))) > 1000}
    assert not long, long


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_public_name_exists(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:          # an optional extra (ray, cupy) that this machine lacks
        pytest.skip(f"{name}: {exc}")
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"
