"""Loop forms (:mod:`beast.ir.loops`) written back as Python text, for the comments of generated code."""
from __future__ import annotations

from .loops import Array, Bind, Call, Counted, Divisors, SetOp, Solved


def describe(f, py) -> str:
    """The loop form ``f`` as Python; ``py(expr)``: an expression's Python text."""
    if isinstance(f, Counted):
        return f"range({', '.join(py(b.expr) for b in f.bounds)})"
    if isinstance(f, Array):
        return repr(list(f.values))
    if isinstance(f, Bind):
        return f"({py(f.value)},)"
    if isinstance(f, Call):
        return f"{f.func}({', '.join(py(a) for a in f.args)})"
    if isinstance(f, Solved):
        return f"({py(f.value)},) if {py(f.guard)} and in {describe(f.base, py)}"
    if isinstance(f, SetOp):
        return f"{f.op}({describe(f.left, py)}, {describe(f.right, py)})"
    if isinstance(f, Divisors):
        return f"divisors of {py(f.n)} in {describe(f.base, py)}"
    return describe(f.fill, py)         # Scratch
