"""An iterator expression spelled as the user wrote it (Python source), for error messages.

Module-level arithmetic on iterators builds :mod:`beast.expr` trees; when one of them is where a
plain value is needed, the message shows it as source (``a * 1.5 // 1``), naming the iterators
and derived variables by the module-level names they are bound to.
"""
from __future__ import annotations

import ast
import os
import sys

from .expr import (BinOp, BoolOp, Call, Compare, Const, Expr, FuncCall, Not, Select, UnOp, Var)

_BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv,
           "%": ast.Mod, "**": ast.Pow, "&": ast.BitAnd, "|": ast.BitOr, "^": ast.BitXor,
           "<<": ast.LShift, ">>": ast.RShift}
_COMPARES = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}
# module-level code writes `and`/`or`/`not` of iterator expressions as & | ~
_LOGICAL = {"and": ast.BitAnd, "or": ast.BitOr}


def user_names() -> dict:
    """id -> name of the expressions bound to module-level names in the user's frame (the first
    frame outside the beast package)."""
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(here):
        f = f.f_back
    if f is None:
        return {}
    return {id(v): k for k, v in f.f_globals.items() if isinstance(v, Expr) and not k.startswith("_")}


def spell(expr, names: dict | None = None) -> str:
    """Python source of ``expr``; a node bound to a module-level name (``names``: id -> name, as
    :func:`user_names` gives) is spelled by that name."""
    return ast.unparse(_tree(expr, names or {}))


def _tree(e, names):
    name = names.get(id(e)) or getattr(e, "name", None) if isinstance(e, Expr) else None
    if isinstance(name, str):
        return ast.Name(name)
    sub = lambda x: _tree(x, names)  # noqa: E731
    if isinstance(e, Const) or not isinstance(e, Expr):
        return ast.Constant(e.value if isinstance(e, Const) else e)
    if isinstance(e, Var):
        return ast.Name(e.name)
    if isinstance(e, BinOp) and e.op in _BINOPS:
        return ast.BinOp(sub(e.left), _BINOPS[e.op](), sub(e.right))
    if isinstance(e, BoolOp):
        return ast.BinOp(sub(e.left), _LOGICAL[e.op](), sub(e.right))
    if isinstance(e, Compare):
        return ast.Compare(sub(e.left), [_COMPARES[e.op]()], [sub(e.right)])
    if isinstance(e, UnOp):
        return ast.UnaryOp(ast.USub() if e.op == "-" else ast.UAdd(), sub(e.operand))
    if isinstance(e, Not):
        return ast.UnaryOp(ast.Invert(), sub(e.operand))
    if isinstance(e, (Call, FuncCall)):
        return ast.Call(ast.Name(e.func), [sub(a) for a in e.args], [])
    if isinstance(e, Select):
        return ast.Call(ast.Name("select"), [sub(e.cond), sub(e.then), sub(e.orelse)], [])
    return ast.Name("<iterator>")   # an unnamed iterator (a nested range() or union())
