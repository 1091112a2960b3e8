"""Precedence-aware printing of expressions; each target supplies its operator spellings."""
from __future__ import annotations

from ..expr.nodes import BinOp, BoolOp, Call, Compare, Const, FuncCall, Not, Select, UnOp, Var

ATOM = 100


class ExprPrinter:
    """Print an expression tree with the fewest parentheses the target's grammar allows.

    Subclasses set ``PREC`` (operator -> binding strength) and override the ``fmt_*`` hooks for the
    constructs whose spelling differs between targets (division, modulo, power, select, ...)."""

    PREC = {}
    RIGHT_ASSOC = {"**"}
    NONASSOC = set()

    def __init__(self, types=None, names=None):
        self.types = types or {}
        self.names = names or {}

    # -- entry points
    def __call__(self, e) -> str:
        return self.p(e)[0]

    def p(self, e):
        """(text, precedence) of an expression."""
        method = getattr(self, "p_" + type(e).__name__)
        return method(e)

    def wrap(self, e, min_prec, strict=False):
        text, prec = self.p(e)
        if prec < min_prec or (strict and prec == min_prec):
            return f"({text})"
        return text

    # -- leaves
    def p_Const(self, e):
        return self.fmt_const(e.value)

    def p_Var(self, e):
        return self.names.get(e.name, e.name), ATOM

    # -- operators
    def p_BinOp(self, e):
        prec = self.PREC[e.op]
        if e.op in self.RIGHT_ASSOC:
            left = self.wrap(e.left, prec, strict=True)
            right = self.wrap(e.right, self.PREC.get("unary", prec))
        else:
            left = self.wrap(e.left, prec)
            right = self.wrap(e.right, prec, strict=True)
        return self.fmt_binop(e, left, right, prec)

    def p_Compare(self, e):
        prec = self.PREC["cmp"]
        strict = "cmp" in self.NONASSOC
        return self.fmt_compare(e.op, self.wrap(e.left, prec, strict), self.wrap(e.right, prec, True)), prec

    def p_UnOp(self, e):
        prec = self.PREC["unary"]
        return f"-{self.wrap(e.operand, prec)}", prec

    def p_Not(self, e):
        prec = self.PREC["not"]
        return self.fmt_not(self.wrap(e.operand, prec)), prec

    def p_BoolOp(self, e):
        prec = self.PREC[e.op]
        return self.fmt_boolop(e, self.wrap(e.left, prec), self.wrap(e.right, prec, strict=True)), prec

    def p_Call(self, e):
        return self.fmt_call(e.func, [self(a) for a in e.args]), ATOM

    def p_FuncCall(self, e):
        return f"{e.func}({', '.join(self(a) for a in e.args)})", ATOM

    def p_Select(self, e):
        return self.fmt_select(self(e.cond), self(e.then), self(e.orelse)), ATOM

    # -- target hooks
    def fmt_const(self, v):
        raise NotImplementedError

    def fmt_binop(self, e, left, right, prec):
        return f"{left} {e.op} {right}", prec

    def fmt_compare(self, op, left, right):
        return f"{left} {op} {right}"

    def fmt_not(self, operand):
        return f"not {operand}"

    def fmt_boolop(self, e, left, right):
        return f"{left} {e.op} {right}"

    def fmt_call(self, func, args):
        return f"{func}({', '.join(args)})"

    def fmt_select(self, cond, then, orelse):
        raise NotImplementedError


__all__ = ["ExprPrinter", "ATOM", "BinOp", "BoolOp", "Call", "Compare", "Const", "FuncCall", "Not",
           "Select", "UnOp", "Var"]
