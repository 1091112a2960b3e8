"""The loop-nest IR shared by the Python, C and Lua printers.

A program is a tree of statements:

- ``Loop(var, seq, body)``: bind ``var`` to each value of ``seq`` in turn and run ``body``;
- ``Let(var, expr)``: compute a derived variable;
- ``Check(name, expr)``: if ``expr`` is true the configuration is rejected: skip to the next
  iteration of the innermost enclosing loop (before any loop: the space is empty);
- ``Emit(columns)``: a surviving configuration, the iterator values in declaration order.

It is built once from the front end's :class:`~beast.frontend.plan.Plan`; every printer walks the
same tree, so the three backends evaluate the same things in the same order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..expr import Expr, Seq


@dataclass
class Loop:
    var: str
    seq: Seq
    body: list
    node: object = None          # the front end's Node (for locations)
    depth: int = 0


@dataclass
class Let:
    var: str
    expr: Expr
    type: str = "num"
    node: object = None


@dataclass
class Check:
    """Reject when ``expr`` is true. ``exit`` is "continue" (skip this value) or "break" (tightening
    proved that every later value of the innermost loop is rejected too: leave that loop)."""
    name: str
    expr: Expr
    node: object = None
    exit: str = "continue"


@dataclass
class Emit:
    columns: tuple


@dataclass
class Program:
    """A whole enumerator: the statement tree plus what it calls and reads."""
    name: str
    body: list
    columns: tuple                       # iterator names in declaration order
    loop_order: tuple                    # iterator names from outermost to innermost
    funcs: dict = field(default_factory=dict)      # ident -> FuncInfo
    constants: dict = field(default_factory=dict)  # names read by functions -> values
    types: dict = field(default_factory=dict)      # variable -> static type


def build_program(plan, name="space", tighten=True) -> Program:
    """Nest the plan's loops and place its lets and checks; ``tighten`` applies
    :mod:`beast.codegen.tighten` (solved loops, breaking checks)."""
    model = plan.model
    nodes = model.nodes

    def step(kind, nm):
        node = nodes[nm]
        if kind == "let":
            return Let(nm, node.expr, node.type, node)
        return Check(nm, node.expr, node)

    def block(d):
        stmts = [step(kind, nm) for kind, nm in plan.steps[d]]
        if d < len(plan.loop_order):
            it = plan.loop_order[d]
            stmts.append(Loop(it, nodes[it].seq, block(d + 1), nodes[it], d + 1))
        else:
            stmts.append(Emit(tuple(plan.columns)))
        return stmts

    types = {n.name: ("int" if n.role == "iterator" else n.type) for n in nodes.values()}
    program = Program(name, block(0), tuple(plan.columns), tuple(plan.loop_order), dict(model.funcs),
                      dict(model.constants), types)
    if tighten:
        from .tighten import tighten as tighten_loops
        tighten_loops(program)
    return program


def walk_statements(stmts):
    """Yield every statement of a tree, outer first."""
    for s in stmts:
        yield s
        if isinstance(s, Loop):
            yield from walk_statements(s.body)


def pure_nest(loop: Loop, types: dict, inner_safe: bool = False):
    """The loops ``[loop, ...]`` (outermost first) of a nest that only emits, so that counting it
    is the product of the sequences' lengths; None when the nest does more.

    No sequence may read the variable of a loop around it. With ``inner_safe``, every sequence
    but the outermost must also be one whose evaluation cannot fail (for printers that evaluate
    all the lengths in one expression, where an error must still name the right loop)."""
    from ..expr import CallSeq, DivisorSeq, ScalarSeq, SetOpSeq, SolveSeq, free_vars, static_type
    seq = loop.seq
    if isinstance(seq, (CallSeq, SetOpSeq, SolveSeq, DivisorSeq)) or (
            isinstance(seq, ScalarSeq) and static_type(seq.value, types) != "int"):
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
    from ..expr import BinOp, Const, RangeSeq, walk
    if isinstance(seq, RangeSeq) and not (isinstance(seq.step, Const) and seq.step.value != 0):
        return False
    return not any(isinstance(e, BinOp) and e.op in ("/", "//", "%", "**")
                   for x in seq.exprs() for e in walk(x))
