"""Sequences known before the run: a set operation of constants computed once, at compile time,
for every target (so each loops over a plain list, and tightening and fusing can see it)."""
from __future__ import annotations

from ..expr.nodes import Const
from ..expr.sequences import RangeSeq, ScalarSeq, SetOpSeq, ValuesSeq, range_length


CONSTANT_SEQ_MAX = 1 << 16      # larger constant set operations stay computed at run time


def constant_seq(seq):
    """A set operation that reads no variable and calls nothing is computed once, here, for every
    target: its values in order (up to CONSTANT_SEQ_MAX of them)."""
    if isinstance(seq, SetOpSeq):
        values = constant_values(seq)
        if values is not None:
            return ValuesSeq(values)
    return seq


def constant_values(seq):
    """The values of a sequence that reads no variable and calls nothing (else None): a set
    operation of lists and constant ranges is computed once, at compile time."""
    if isinstance(seq, ValuesSeq):
        return [int(v) for v in seq.values]
    if isinstance(seq, RangeSeq):
        parts = seq.exprs()
        if all(isinstance(x, Const) and isinstance(x.value, int) for x in parts) and parts[2].value != 0:
            values = range(*(x.value for x in parts))
            return list(values) if range_length(values) <= CONSTANT_SEQ_MAX else None
        return None
    if isinstance(seq, ScalarSeq):
        if isinstance(seq.value, Const) and type(seq.value.value) in (int, bool):
            return [int(seq.value.value)]
        return None
    if isinstance(seq, SetOpSeq):
        a, b = constant_values(seq.left), constant_values(seq.right)
        if a is None or b is None:
            return None
        from ..lang.vocabulary import set_operation
        out = set_operation(seq.op, a, b)
        return out if len(out) <= CONSTANT_SEQ_MAX else None
    return None
