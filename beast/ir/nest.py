"""The loop-nest IR shared by the Python, C and Lua printers (data only).

A program is a tree of statements:

- ``Loop(var, seq, body)``: bind ``var`` to each value of ``seq`` in turn and run ``body``;
- ``Let(var, expr)``: compute a derived variable;
- ``Check(name, expr)``: if ``expr`` is true the configuration is rejected: skip to the next
  iteration of the innermost enclosing loop (before any loop: the space is empty);
- ``Emit(columns)``: a surviving configuration, the iterator values in declaration order;
- ``Tally(slot)``: add one to counter ``slot`` (only in the instrumented programs of
  :mod:`beast.ir.instrument`, for ``beast stats``).

It is built once from the front end's :class:`~beast.frontend.plan.Plan`; every printer walks the
same tree, so the three backends evaluate the same things in the same order.
"""
from __future__ import annotations

from beast.ir.record import field, record

from ..expr.nodes import BinOp, Call, Const, Expr, UnOp, walk
from ..expr.sequences import Seq, free_vars


@record
class Loop:
    var: str
    seq: Seq
    body: list
    node: object = None          # the front end's Node (for locations)
    depth: int = 0


@record
class Let:
    """``var = expr`` of static ``type``. ``may_overflow``: a let whose integer value could leave the
    64-bit range (it adds, subtracts, multiplies, powers, shifts left, negates, takes abs() or
    floor-divides: -2**63 // -1), of type int or num (an int or a float: 2**n is a float for n < 0):
    C and Lua compute in 64 bits and fail there, so a target with unbounded integers checks it to
    report the same overflow."""
    var: str
    expr: Expr
    type: str = "num"
    node: object = None

    @property
    def may_overflow(self) -> bool:
        # asked by the one printer that checks it (Python), not paid for on every load
        return self.type in ("int", "num") and any(
            isinstance(e, BinOp) and (e.op in ("+", "-", "*", "**", "<<") or e.op == "//" and not (
                isinstance(e.right, Const) and e.right.value != -1))
            or isinstance(e, UnOp) or isinstance(e, Call) and e.func == "abs" for e in walk(self.expr))


@record
class Check:
    """Reject when ``expr`` is true. ``exit`` is "continue" (skip this value) or "break" (tightening
    proved that every later value of the innermost loop is rejected too: leave that loop)."""
    name: str
    expr: Expr
    node: object = None
    exit: str = "continue"


@record
class Emit:
    columns: tuple


@record
class Tally:
    """Add one to the run's counter ``slot`` (summed over threads by the runtime). ``depth``: the
    number of loops around it (the C runtime counts the statements above its work split once)."""
    slot: int
    depth: int = 0


@record
class Program:
    """A whole enumerator: the statement tree plus what it calls and reads."""
    name: str
    body: list
    columns: tuple                       # iterator names in declaration order
    loop_order: tuple                    # iterator names from outermost to innermost
    funcs: dict = field(default_factory=dict)      # ident -> FuncInfo
    constants: dict = field(default_factory=dict)  # names read by functions -> values
    types: dict = field(default_factory=dict)      # variable -> static type
    tallies: tuple = ()                  # instrumented programs: the depth of each Tally slot
    # a rewritten program (beast.ir.prefix): the one it came from, whose loops give the user
    # functions' argument domains (not compared, not shown)
    origin: object = field(default=None, repr=False, compare=False)


def walk_statements(stmts):
    """Yield every statement of a tree, outer first."""
    for s in stmts:
        yield s
        if isinstance(s, Loop):
            yield from walk_statements(s.body)


def reads(loop: Loop) -> set:
    """Every variable a loop nest reads (sequences, expressions, emitted columns)."""
    out = set()
    for st in walk_statements([loop]):
        if isinstance(st, Loop):
            out |= set(free_vars(st.seq))
        elif isinstance(st, (Let, Check)):
            out |= set(free_vars(st.expr))
        elif isinstance(st, Emit):
            out |= set(st.columns)
    return out
