"""Integer intervals: the range of values each integer variable of the loop nest can take, for a
target whose integers are exact only strictly inside (-limit, limit) (LuaJIT's doubles: 2**53).

A target uses them to leave out a check that cannot fire: an operation whose operands' intervals
keep its result inside the limit needs no overflow check, a divisor whose interval excludes 0 no
zero check. The intervals of the loop variables and lets are computed here once, in nest order,
from the ops of :mod:`beast.ir.ops` (which carry intervals through every expression with the
interval arithmetic below). Every interval over-approximates: None means unknown.
"""
from __future__ import annotations

from ..expr.nodes import Const
from ..expr.sequences import DivisorSeq, RangeSeq, ScalarSeq, SolveSeq, ValuesSeq
from .body import Untranslatable
from .nest import Let, Loop


def within(iv, limit) -> bool:
    """Whether every value of ``iv`` is strictly inside (-limit, limit)."""
    return iv is not None and -limit < iv[0] and iv[1] < limit


def hull(a, b):
    if a is None or b is None:
        return None
    return (min(a[0], b[0]), max(a[1], b[1]))


def binop(op, a, b):
    """Interval of an integer operation (None when unknown)."""
    if a is None or b is None:
        return None
    if op == "+":
        return (a[0] + b[0], a[1] + b[1])
    if op == "-":
        return (a[0] - b[1], a[1] - b[0])
    if op == "*":
        ps = [x * y for x in a for y in b]
        return (min(ps), max(ps))
    if op == "//":
        if b[0] > 0:
            cands = [x // y for x in a for y in b]
            return (min(cands), max(cands))
        m = max(abs(a[0]), abs(a[1]))
        return (-m, m)
    if op == "%":
        if b[0] > 0:
            return (0, b[1] - 1)
        if b[1] < 0:
            return (b[0] + 1, 0)
        m = max(abs(b[0]), abs(b[1]))
        return (-m, m)
    if op in ("&", "|"):
        return bitwise(op, a, b)
    return None


def bitwise(op, a, b):
    """Interval of ``a & b`` or ``a | b`` (two's complement, as Python's integers)."""
    if op == "&" and (a[0] >= 0 or b[0] >= 0):     # no more bits than a non-negative operand
        return (0, min(x[1] for x in (a, b) if x[0] >= 0))
    if op == "|" and a[0] >= 0 and b[0] >= 0:
        return (max(a[0], b[0]), (1 << max(a[1], b[1]).bit_length()) - 1)
    k = max(abs(x) for x in a + b).bit_length()     # both fit k + 1 bits: so does the result
    return (-(1 << k), (1 << k) - 1)


def power(a, k):
    """Interval of ``a ** k`` for a constant exponent 0 <= k <= 64 (None when unknown)."""
    if a is None or not 0 <= k <= 64:
        return None
    m = max(abs(a[0]), abs(a[1])) ** k
    return (-m, m) if a[0] < 0 else (a[0] ** k, a[1] ** k)


def absolute(a):
    if a is None:
        return None
    lo, hi = a
    return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))


def minmax(func, a, b):
    if a is None or b is None:
        return None
    f = min if func == "min" else max
    return (f(a[0], b[0]), f(a[1], b[1]))


def nonzero(a) -> bool:
    return a is not None and (a[0] > 0 or a[1] < 0)


def range_values(start, stop, step):
    """Interval of the values of range(start, stop, step) from the intervals of its arguments."""
    if start is None or stop is None:
        return None
    if step is not None and step[0] > 0:
        return (start[0], max(start[0], stop[1] - 1))
    if step is not None and step[1] < 0:
        return (min(start[1], stop[0] + 1), start[1])
    return hull(start, stop)


class NestIntervals:
    """The intervals of a program's integer variables (``vars``), for integers exact strictly
    inside (-limit, limit), computed in nest order. An expression's interval is its op's
    (``lowering``: a memoizing :class:`beast.ir.ops.Lowering` whose target reads ``vars``, so the
    ops the printer spells afterwards are these, with the same intervals)."""

    def __init__(self, program, limit, vars, lowering):
        self.limit = limit
        self.types = program.types
        self.vars = vars
        self.lowering = lowering
        self._walk(program.body)

    def inside(self, iv):
        return iv if within(iv, self.limit) else None

    def _walk(self, stmts):
        for s in stmts:
            if isinstance(s, Let) and self.types.get(s.var) == "int":
                self.vars[s.var] = self.of(s.expr)
            elif isinstance(s, Loop):
                self.vars[s.var] = self.seq(s.seq)
                self._walk(s.body)

    def seq(self, seq):
        if isinstance(seq, RangeSeq):
            return range_values(*(self.of(x) for x in seq.exprs()))
        if isinstance(seq, ValuesSeq):
            vals = [int(v) for v in seq.values]
            return self.inside((min(vals), max(vals))) if vals else None
        if isinstance(seq, ScalarSeq):
            return self.of(seq.value)
        if isinstance(seq, (SolveSeq, DivisorSeq)):
            return self.seq(seq.base)
        return None

    def of(self, e):
        """The interval of ``e`` used as an integer (a bool is 0 or 1), or None (also where the
        expression does not lower: the printer reports that when it spells it)."""
        if e.__class__ is Const:        # the common leaf without an op (a bool constant: itself)
            v = e.value
            return self.inside((int(v), int(v))) if isinstance(v, int) else None
        try:
            op = self.lowering(e)
        except Untranslatable:
            return None
        ty = op.type
        return (0, 1) if ty == "bool" else op.iv if ty == "int" else None
