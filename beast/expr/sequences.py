"""The sequences an iterator runs over: ranges, value lists, user functions, set operations,
and the solved and divisor sequences that tightening makes."""
from __future__ import annotations

from .nodes import Var, walk

class Seq:
    """Base of the loop sources."""

    def exprs(self) -> tuple:
        return ()


class RangeSeq(Seq):
    """Python ``range(start, stop, step)`` over integer expressions."""
    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def exprs(self):
        return (self.start, self.stop, self.step)


def range_length(r: range) -> int:
    """``len(r)``, also past ``sys.maxsize`` (where len() raises OverflowError)."""
    try:
        return len(r)
    except OverflowError:
        return max(0, (r.stop - r.start + r.step - (1 if r.step > 0 else -1)) // r.step)


class ValuesSeq(Seq):
    """An explicit tuple of integers, in order (duplicates kept)."""
    def __init__(self, values):
        self.values = tuple(values)


class ScalarSeq(Seq):
    """One value: a constant or an integer expression."""
    def __init__(self, value):
        self.value = value

    def exprs(self):
        return (self.value,)


class CallSeq(Seq):
    """The values of a deferred (returns a scalar, list or range) or closure (yields) function."""
    def __init__(self, func: str, args: tuple, closure: bool):
        self.func, self.args, self.closure = func, tuple(args), closure

    def exprs(self):
        return self.args


class SetOpSeq(Seq):
    """union / intersection / difference of two sequences: left's order, each value once."""
    def __init__(self, op, left: Seq, right: Seq):
        self.op, self.left, self.right = op, left, right

    def exprs(self):
        return self.left.exprs() + self.right.exprs()


def free_vars(expr_or_seq) -> list:
    """Names of the Vars an expression or sequence reads, in first-appearance order."""
    out = []
    roots = expr_or_seq.exprs() if isinstance(expr_or_seq, Seq) else (expr_or_seq,)
    for root in roots:
        for e in walk(root):
            if isinstance(e, Var) and e.name not in out:
                out.append(e.name)
    return out


class SolveSeq(Seq):
    """At most one value: ``value`` when ``guard`` holds and ``value`` is one of ``base``'s values.

    Produced by tightening when an equality fixes a loop variable given the outer ones
    (``dim_m_a * dim_n_a != threads`` rejects every dim_n_a but threads // dim_m_a)."""
    def __init__(self, base: RangeSeq, value, guard):
        self.base, self.value, self.guard = base, value, guard

    def exprs(self):
        return self.base.exprs() + (self.value, self.guard)


class DivisorSeq(Seq):
    """The values of ``base`` (a range of positive integers with step 1, in order) that divide
    ``n``; all of them when ``n`` is 0. Produced by tightening for the loop around a solved one:
    only divisors of ``threads`` can be ``dim_m_a`` when ``dim_m_a * dim_n_a == threads``."""
    def __init__(self, base: RangeSeq, n):
        self.base, self.n = base, n

    def exprs(self):
        return self.base.exprs() + (self.n,)
