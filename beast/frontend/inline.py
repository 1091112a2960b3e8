"""Inline simple user functions into the expression IR.

A @condition whose body is ``return <expr>`` becomes an expression; a deferred @iterator whose
body, after folding the ``if`` tests on settings and constants, returns a ``range(...)``, a list
or a scalar becomes a value sequence. Every backend then prints them directly. Anything else
stays a function call (translated or tabulated by the backend).
"""
from __future__ import annotations

import ast

from ..expr.nodes import (BinOp, BoolOp, Call, Compare, Const, Not, Select, UnOp, Var, evaluate, static_type, walk)
from ..expr.sequences import RangeSeq, ScalarSeq, ValuesSeq

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_SCALARS = (bool, int, float, str)


class CannotInline(Exception):
    pass


def _fold(e):
    """Evaluate an operation whose operands are all constants (never a division by zero)."""
    kids = e.children()
    if kids and all(isinstance(k, Const) for k in kids):
        try:
            value = evaluate(e, {})
        except (ArithmeticError, TypeError, ValueError):
            return e
        if isinstance(value, _SCALARS):
            return Const(value)
    return e


class _Translator:
    def __init__(self, info, filename):
        self.info = info
        self.filename = filename
        self.nodes = set(info.node_args)
        self.locals = {}
        self.risky = []         # values of locals that may raise (a division, a power, a call)

    def name(self, node, truth=False):
        if node.id in self.locals:
            return _truth_of(self.locals[node.id]) if truth else self.locals[node.id]
        if node.id in self.nodes:
            return Var(node.id)
        if node.id in self.info.constants and isinstance(self.info.constants[node.id], _SCALARS):
            return Const(self.info.constants[node.id])
        if node.id in ("True", "False"):
            return Const(node.id == "True")
        raise CannotInline(node.id)

    def where(self, node):
        """(file, line, col, end col) of an operation of the body, for its errors' caret."""
        end = node.end_col_offset if node.end_lineno == node.lineno else None
        return (self.filename, node.lineno, node.col_offset, end)

    def expr(self, node, truth=False):
        """Translate; ``truth`` marks positions where only the truth value matters (and/or allowed)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, _SCALARS):
            if truth and isinstance(node.value, str):       # only its truth value is read
                return Const(bool(node.value))
            return Const(node.value)
        if isinstance(node, ast.Name):
            return self.name(node, truth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in self.info.constants:
            value = getattr(self.info.constants[node.value.id], node.attr, None)
            if isinstance(value, _SCALARS):
                return Const(value)
            raise CannotInline(node.attr)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            out = BinOp(_BINOPS[type(node.op)], self.expr(node.left), self.expr(node.right))
            out.pos = self.where(node)      # a division by zero, a complex power, an overflow
            return _fold(out)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                out = UnOp("-", self.expr(node.operand))
                out.pos = self.where(node)
                return _fold(out)
            if isinstance(node.op, ast.UAdd):
                return self.expr(node.operand)
            if isinstance(node.op, ast.Not):
                return _simplify_not(self.expr(node.operand, truth=True))
        if isinstance(node, ast.Compare) and all(type(op) in _CMPOPS for op in node.ops):
            parts, left = [], self.expr(node.left)
            for op, comp in zip(node.ops, node.comparators):
                right = self.expr(comp)
                parts.append(_fold(Compare(_CMPOPS[type(op)], left, right)))
                left = right
            out = parts[0]
            for p in parts[1:]:
                out = _simplify_bool("and", out, p)
            return out
        if isinstance(node, ast.BoolOp) and truth:
            op = "and" if isinstance(node.op, ast.And) else "or"
            out = self.expr(node.values[0], truth=True)
            for v in node.values[1:]:
                out = _simplify_bool(op, out, self.expr(v, truth=True))
            return out
        if isinstance(node, ast.IfExp):
            cond = self.expr(node.test, truth=True)
            if isinstance(cond, Const):
                return self.expr(node.body if cond.value else node.orelse, truth)
            return Select(cond, self.expr(node.body, truth), self.expr(node.orelse, truth))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords \
                and node.func.id in ("min", "max", "abs") and node.args \
                and node.func.id not in self.locals:
            args = [self.expr(a) for a in node.args]
            if node.func.id == "abs":
                if len(args) != 1:
                    raise CannotInline("abs")
                return _fold(Call("abs", (args[0],)))
            if len(args) < 2:
                raise CannotInline(node.func.id)
            out = args[0]
            for a in args[1:]:
                out = _fold(Call(node.func.id, (out, a)))
            return out
        raise CannotInline(type(node).__name__)

    def assigned(self, node):
        """The value of a local: remembered when evaluating it may raise, since Python raises
        there even where the value is never used (see :func:`_keeps_errors`)."""
        value = self.expr(node)
        if _may_raise(value):
            self.risky.append(value)
        return value

    def body(self, stmts):
        """Symbolically execute straight-line code with constant-folded ifs; returns the Return value."""
        for stmt in stmts:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue   # docstring
            if isinstance(stmt, ast.Pass):
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name):
                self.locals[stmt.targets[0].id] = self.assigned(stmt.value)
                continue
            if isinstance(stmt, ast.If):
                cond = self.expr(stmt.test, truth=True)
                if not isinstance(cond, Const):
                    raise CannotInline("if")
                result = self.body(stmt.body if cond.value else stmt.orelse)
                if result is not None:
                    return result
                continue
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                return stmt.value
            raise CannotInline(type(stmt).__name__)
        return None


def _simplify_bool(op, a, b):
    if isinstance(b, Const) and bool(b.value) == (op == "and"):
        return _as_bool(a)          # x and True, x or False: x (evaluated all the same)
    if isinstance(a, Const):
        if op == "and":
            return _as_bool(b) if a.value else Const(False)
        return Const(True) if a.value else _as_bool(b)
    return BoolOp(op, a, b)


def _truth_of(e):
    """``e`` where only its truth value is read: a string constant (directly or as a choice's
    branch) becomes its truth value, which every backend can hold."""
    if isinstance(e, Const) and isinstance(e.value, str):
        return Const(bool(e.value))
    if isinstance(e, Select):
        return Select(e.cond, _truth_of(e.then), _truth_of(e.orelse))
    return e


def _as_bool(e):
    if isinstance(e, Const):
        return Const(bool(e.value))
    return e if static_type(e) == "bool" else BoolOp("and", Const(True), e)


def _simplify_not(e):
    return Const(not e.value) if isinstance(e, Const) else Not(e)


def inline_condition(info):
    """The condition's expression, or None when the body is not a single return of an expression."""
    t = _Translator(info, info.filename)
    try:
        value = t.body(info.fdef.body)
        if value is None:
            return None
        out = t.expr(value, truth=True)
        return out if _keeps_errors(out, t.risky) and not _holds_str(out) else None
    except CannotInline:
        return None


def _holds_str(*exprs) -> bool:
    """Whether a string value is left in an expression (a choice between strings, compared later):
    the loop nests hold numbers only, so such a function stays a function."""
    return any(isinstance(x, Const) and isinstance(x.value, str) for e in exprs for x in walk(e))


_RAISING = ("//", "%", "/", "**")


def _may_raise(e) -> bool:
    """Whether evaluating ``e`` can raise: a division, a modulo, a power or a call in it."""
    return any(isinstance(x, BinOp) and x.op in _RAISING or isinstance(x, Call) and x.func != "abs"
               for x in walk(e))


def _keeps_errors(out, risky) -> bool:
    """Whether the inlined expression ``out`` still raises every error its locals' values
    (``risky``) raise in Python, where each local is evaluated where it is assigned: each must
    stand in ``out`` where it is always evaluated (no and/or/select in ``out``). A local that is
    never read, or overwritten, or read only on one side of a lazy operator keeps the body a
    function, which the backends translate statement by statement."""
    if not risky:
        return True
    nodes = list(walk(out))
    if any(isinstance(x, (BoolOp, Select)) for x in nodes):
        return False
    present = {id(x) for x in nodes}
    return all(id(v) in present for v in risky)


def returned_node(info):
    """The ``ast`` expression an inlined condition returns (None when it is not inlined)."""
    try:
        return _Translator(info, info.filename).body(info.fdef.body)
    except CannotInline:
        return None


def inline_iterator(info, types=None):
    """The deferred iterator's value sequence, or None when it must stay a function.

    ``if`` tests that fold on settings and constants pick their branch; a test on iterator values
    whose branches both return a range or a scalar becomes one range with select() bounds."""
    if info.closure:
        return None
    try:
        seq = _seq_of(info.fdef.body, _Translator(info, info.filename), types)
    except CannotInline:
        return None
    return None if _holds_str(*seq.exprs()) else seq


def _seq_of(stmts, t, types):
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = t.expr(stmt.value)
            if _may_raise(value):       # a deferred iterator keeps such a local's error as a function
                raise CannotInline("a local that may raise")
            t.locals[stmt.targets[0].id] = value
            continue
        if isinstance(stmt, ast.If):
            rest = list(stmts[i + 1:])
            cond = t.expr(stmt.test, truth=True)
            if isinstance(cond, Const):
                return _seq_of(list(stmt.body if cond.value else stmt.orelse) + rest, t, types)
            then = _seq_of(list(stmt.body) + rest, _fork(t), types)
            orelse = _seq_of(list(stmt.orelse) + rest, _fork(t), types)
            a, b = _as_range(then), _as_range(orelse)
            return RangeSeq(*(x if isinstance(x, Const) and isinstance(y, Const) and x.value == y.value
                              else Select(cond, x, y) for x, y in zip(a, b)))
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            return _value_seq(stmt.value, t, types)
        raise CannotInline(type(stmt).__name__)
    raise CannotInline("no return")


def _fork(t):
    other = _Translator(t.info, t.filename)
    other.locals = dict(t.locals)
    return other


def _as_range(seq):
    """(start, stop, step) of a range or a one-value sequence, with a non-zero constant step."""
    if isinstance(seq, RangeSeq) and isinstance(seq.step, Const) and seq.step.value != 0:
        return seq.start, seq.stop, seq.step
    if isinstance(seq, ScalarSeq):
        return seq.value, _fold(BinOp("+", seq.value, Const(1))), Const(1)
    if isinstance(seq, ValuesSeq) and len(seq.values) == 1:
        v = seq.values[0]
        return Const(v), Const(v + 1), Const(1)
    raise CannotInline("branches")


def _value_seq(value, t, types):
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id == "range" and not value.keywords and 1 <= len(value.args) <= 3 \
            and "range" not in t.locals:
        args = [t.expr(a) for a in value.args]
        if any(static_type(a, types) not in ("int", "bool") for a in args):
            raise CannotInline("range bound type")
        if len(args) == 1:
            args = [Const(0), args[0], Const(1)]
        elif len(args) == 2:
            args.append(Const(1))
        if isinstance(args[2], Const) and args[2].value == 0:
            raise CannotInline("zero step")
        return RangeSeq(*args)
    if isinstance(value, (ast.List, ast.Tuple)):
        items = [t.expr(v) for v in value.elts]
        if all(isinstance(i, Const) and type(i.value) is int for i in items):
            return ValuesSeq(i.value for i in items)
        raise CannotInline("list")
    scalar = t.expr(value)
    if static_type(scalar, types) == "int" and not any(isinstance(e, Const) and type(e.value) is bool
                                                        for e in walk(scalar)):
        return ScalarSeq(scalar)
    raise CannotInline("scalar")
