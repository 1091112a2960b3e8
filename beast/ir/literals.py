"""Integer literals a target cannot hold: found once, reported at the literal in the user's file."""
from __future__ import annotations

from ..errors import SpaceError, short_int
from ..expr.nodes import Const, walk
from ..expr.sequences import SetOpSeq, ValuesSeq
from ..frontend.locate import locate_constant
from .nest import Check, Let, Loop, walk_statements


def _roots(stmt):
    if isinstance(stmt, Loop):
        yield from _seq_roots(stmt.seq)
    elif isinstance(stmt, (Let, Check)):
        yield stmt.expr


def _seq_roots(seq):
    """The expressions of a loop's sequence, its constants as Consts, set-operation operands included."""
    if isinstance(seq, ValuesSeq):
        yield from (Const(v) for v in seq.values)
    elif isinstance(seq, SetOpSeq):
        yield from _seq_roots(seq.left)
        yield from _seq_roots(seq.right)
    else:
        yield from seq.exprs()


def check_integer_width(program, bits: int, target: str):
    """Raise a :class:`~beast.errors.SpaceError` at the first integer constant of the loop nest that
    does not fit in ``bits``-bit two's complement, before anything runs (``target``: the backend
    asking; the message is the same in every backend, which refuses such a literal alike)."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    for stmt in walk_statements(program.body):
        for root in _roots(stmt):
            for e in walk(root):
                if isinstance(e, Const) and type(e.value) is int and not lo <= e.value <= hi:
                    raise _too_wide(stmt.node, e.value, bits, target)


def _too_wide(node, value, bits, target):
    shown = short_int(value)        # ("a 5000-digit integer" where no short form names it)
    subject = shown if shown.startswith("a ") else f"the integer {shown}"
    message = (f"{subject} does not fit in {bits} bits: beast's integers run from "
               f"-2**{bits - 1} to 2**{bits - 1}-1")
    hint = "use a smaller number, or a float (for example 2.0**63)"
    filename = getattr(node, "filename", None)
    lineno = getattr(node, "lineno", None)
    where = locate_constant(filename, lineno, value) if filename and lineno else None
    # a module-level constant read by name (VALS = [1, 2**64]): the nearest earlier statement
    # that holds the literal (an error path only, so a scan of the lines above is cheap enough)
    for earlier in range(lineno - 1, 0, -1) if where is None and filename and lineno else ():
        where = locate_constant(filename, earlier, value)
        if where is not None:
            break
    if where is not None:
        return SpaceError.at(where, filename, message, hint=hint)
    return SpaceError(message, filename, lineno, hint=hint)
