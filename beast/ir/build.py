"""Build the loop-nest IR from the front end's plan: nest the loops, place lets and checks."""
from __future__ import annotations

from ..expr.nodes import Const
from ..expr.sequences import RangeSeq, ScalarSeq, SetOpSeq, ValuesSeq, range_length
from .nest import Check, Emit, Let, Loop, Program
from .tighten import tighten as tighten_loops


def build_program(plan, name="space", tighten=True) -> Program:
    """Nest the plan's loops and place its lets and checks; ``tighten`` applies
    :mod:`beast.ir.tighten` (solved loops, breaking checks)."""
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
            stmts.append(Loop(it, constant_seq(nodes[it].seq), block(d + 1), nodes[it], d + 1))
        else:
            stmts.append(Emit(tuple(plan.columns)))
        return stmts

    types = {n.name: ("int" if n.role == "iterator" else n.type) for n in nodes.values()}
    program = Program(name, block(0), tuple(plan.columns), tuple(plan.loop_order), dict(model.funcs),
                      dict(model.constants), types)
    if tighten:
        tighten_loops(program)
    return program


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
