"""Build the loop-nest IR from the front end's plan: nest the loops, place lets and checks."""
from __future__ import annotations

from .constants import CONSTANT_SEQ_MAX, constant_seq, constant_values  # noqa: F401 - re-exported
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
