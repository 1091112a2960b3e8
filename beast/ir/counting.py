"""Pure counting nests: loops that only multiply, so that counting them is a product of lengths."""
from __future__ import annotations

from ..expr.nodes import BinOp, Const, static_type, walk
from ..expr.sequences import CallSeq, DivisorSeq, RangeSeq, ScalarSeq, SetOpSeq, SolveSeq, free_vars
from .nest import Emit, Loop


def pure_nest(loop: Loop, types: dict, inner_safe: bool = False):
    """The loops ``[loop, ...]`` (outermost first) of a nest that only emits, so that counting it
    is the product of the sequences' lengths; None when the nest does more.

    No sequence may read the variable of a loop around it. With ``inner_safe``, every sequence
    but the outermost must also be one whose evaluation cannot fail (for printers that evaluate
    all the lengths in one expression, where an error must still name the right loop)."""
    seq = loop.seq
    # a scalar counts 1 without being evaluated: only when evaluating it cannot fail
    if isinstance(seq, (CallSeq, SetOpSeq, SolveSeq, DivisorSeq)) or (
            isinstance(seq, ScalarSeq) and (static_type(seq.value, types) != "int" or not safe_seq(seq))):
        return None
    if len(loop.body) != 1:
        return None
    inner = loop.body[0]
    if isinstance(inner, Emit):
        return [loop]
    if not isinstance(inner, Loop):
        return None
    rest = pure_nest(inner, types, inner_safe)
    if rest is None or (inner_safe and not safe_seq(inner.seq)):
        return None
    if any(loop.var in free_vars(l.seq) for l in rest):
        return None
    return [loop] + rest


def safe_seq(seq) -> bool:
    """A sequence whose evaluation cannot fail: no division, power, or step that may be zero."""
    if isinstance(seq, RangeSeq) and not (isinstance(seq.step, Const) and seq.step.value != 0):
        return False
    return not any(isinstance(e, BinOp) and e.op in ("/", "//", "%", "**")
                   for x in seq.exprs() for e in walk(x))
