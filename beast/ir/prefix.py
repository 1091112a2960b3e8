"""Programs over the outer loops of a nest, for sampling: prefixes and the subtrees under them.

A *prefix* of depth ``d`` is a tuple of values of the ``d`` outermost loops (loop order). Two
programs derived from a tightened :class:`~beast.ir.nest.Program` let a runtime weigh and open
the subtrees under prefixes without enumerating the whole space:

- :func:`truncate`: the outer ``d`` loops with their lets and checks, emitting one row per prefix
  that passes them (the inner loops are cut off), in enumeration order;
- :func:`bind`: the whole program with its outer ``d`` loops bound to one value each, read from a
  prefix the runtime passes (:class:`PrefixValue`): counting it gives the size of the subtree
  under that prefix, enumerating it gives the subtree's survivors in enumeration order.

Concatenating the subtrees of the prefixes of :func:`truncate`, in order, gives exactly the
enumeration of the program: the statements above depth ``d`` are the same statements, evaluated
in the same order. A printer supports these programs by printing :class:`PrefixValue` ``i`` as
"element ``i`` of the prefix the runtime passes".
"""
from __future__ import annotations

from ..expr.nodes import Compare, Expr, Var
from ..expr.sequences import ScalarSeq
from .nest import Check, Emit, Loop, Program, walk_statements


class PrefixValue(Expr):
    """The value bound to loop ``index`` (0 = outermost) by the prefix the runtime passes."""
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def static_type(self) -> str:
        return "int"

    def __repr__(self):
        return f"PrefixValue({self.index})"


def nest_depth(program: Program) -> int:
    """How many loops deep the program's nest is (the length of its loop order)."""
    return len(program.loop_order)


def _check_depth(program: Program, depth: int):
    if not 0 <= depth <= len(program.loop_order):
        raise ValueError(f"depth {depth} outside 0..{len(program.loop_order)}")
    # Every loop of depth <= d must be the last statement of its block, alone: then the prefixes
    # of depth d, in order, delimit the enumeration (build_program nests loops this way).
    for st in walk_statements(program.body):
        if isinstance(st, Loop) and st.depth < depth:
            inner = [s for s in st.body if isinstance(s, Loop)]
            if len(inner) != 1 or st.body[-1] is not inner[0]:
                raise ValueError(f"loop '{st.var}' does not end with exactly one inner loop")


def truncate(program: Program, depth: int) -> Program:
    """The outer ``depth`` loops of ``program`` with their lets and checks; each surviving prefix is
    emitted as a row of the ``depth`` loop values (loop order)."""
    _check_depth(program, depth)
    columns = tuple(program.loop_order[:depth])

    def block(stmts):
        out = []
        for s in stmts:
            if isinstance(s, Loop):
                if s.depth > depth:
                    out.append(Emit(columns))
                else:
                    out.append(Loop(s.var, s.seq, block(s.body), s.node, s.depth))
            elif isinstance(s, Emit):
                out.append(Emit(columns))    # at full depth: the loop values, in loop order
            else:
                out.append(s)
        if not any(isinstance(s, (Loop, Emit)) for s in out):
            out.append(Emit(columns))
        return out

    return Program(f"{program.name}_prefix{depth}", block(program.body), columns, columns,
                   dict(program.funcs), dict(program.constants), dict(program.types))


def bind(program: Program, depth: int) -> Program:
    """``program`` with its outer ``depth`` loops each bound to one value: loop ``i`` (0-based, loop
    order) takes :class:`PrefixValue` ``i``. The lets and checks above stay, so a prefix that they
    reject has an empty subtree, and errors are those of the full program."""
    _check_depth(program, depth)

    def loop(s, block):
        if s.depth > depth:
            return Loop(s.var, s.seq, s.body, s.node, s.depth)
        return Loop(s.var, ScalarSeq(PrefixValue(s.depth - 1)), block(s.body), s.node, s.depth)

    return _rewrite_loops(program, f"bound{depth}", loop)


def _rewrite_loops(program: Program, suffix: str, loop) -> Program:
    """``program`` with every loop ``s`` replaced by ``loop(s, block)`` (``block`` rewrites a
    loop's body the same way), every other statement kept."""
    def block(stmts):
        return [loop(s, block) if isinstance(s, Loop) else s for s in stmts]

    return Program(f"{program.name}_{suffix}", block(program.body), program.columns,
                   program.loop_order, dict(program.funcs), dict(program.constants),
                   dict(program.types), origin=program.origin or program)


def member(program: Program) -> Program:
    """``program`` as a membership test: every loop keeps its sequence but skips each value other
    than the one the prefix gives it (:class:`PrefixValue`, loop order), before any statement of
    its body runs. Counting it under a full prefix (one value per loop) gives 1 when that
    configuration is a survivor and 0 when it is not; it costs a walk of each loop's sequence,
    not of the space."""

    def loop(s, block):
        skip = Check(f"_b_member_{s.var}", Compare("!=", Var(s.var), PrefixValue(s.depth - 1)), s.node)
        return Loop(s.var, s.seq, [skip] + block(s.body), s.node, s.depth)

    return _rewrite_loops(program, "member", loop)
