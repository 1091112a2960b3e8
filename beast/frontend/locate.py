"""Find where in the user's file a value was written (for errors found after lowering)."""
from __future__ import annotations

import ast
import linecache


def _statement_at(filename, lineno):
    """The statement of ``filename`` that spans line ``lineno``, else the function whose lines (its
    decorators included) span it (None if unknown)."""
    text = "".join(linecache.getlines(filename))
    if not text:
        return None
    try:
        tree = ast.parse(text, filename)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.If)) \
                and node.lineno <= lineno <= (node.end_lineno or node.lineno):
            return node
    for node in tree.body:          # a function (from its decorators on): an inlined @condition's line
        if isinstance(node, ast.FunctionDef) \
                and min([node.lineno] + [d.lineno for d in node.decorator_list]) <= lineno <= node.end_lineno:
            return node
    return None


def locate_constant(filename, lineno, value):
    """The smallest ``ast`` expression on the statement at ``lineno`` that evaluates to ``value`` from
    literals alone (``2**63``, ``-1 << 70``, ``12345678901234567890``); None when there is none."""
    stmt = _statement_at(filename, lineno)
    if stmt is None:
        return None
    best = None
    for node in ast.walk(stmt):
        if not isinstance(node, ast.expr) or not all(
                isinstance(sub, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
                                 ast.expr_context)) for sub in ast.walk(node)):
            continue
        try:
            got = eval(compile(ast.Expression(node), filename, "eval"), {"__builtins__": {}})  # noqa: S307
        except Exception:  # noqa: BLE001 - not a constant expression after all
            continue
        if type(got) is type(value) and got == value:
            size = (node.end_lineno, node.end_col_offset, -node.lineno, -node.col_offset)
            if best is None or size < best[0]:
                best = (size, node)
    return best[1] if best else None


def node_location(node):
    """(file, line, col, end_col) that names a node: a function's name, or the call on its line."""
    if node.func is not None:
        fdef = node.func.fdef
        lam = getattr(fdef, "lambda_node", None)
        if lam is not None:         # condition(lambda a: ...): the lambda
            end = lam.end_col_offset if lam.end_lineno == lam.lineno else None
            return node.filename, lam.lineno, lam.col_offset, end
        line = linecache.getline(node.filename, fdef.lineno)
        col = line.find("def " + fdef.name)
        if col >= 0:
            return node.filename, fdef.lineno, col + 4, col + 4 + len(fdef.name)
        return node.filename, fdef.lineno, None, None
    line = linecache.getline(node.filename, node.lineno or 0)
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return node.filename, node.lineno, None, None
    indent = len(line) - len(line.lstrip())
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Call):
            return node.filename, node.lineno, indent + sub.col_offset, indent + sub.end_col_offset
    return node.filename, node.lineno, None, None
