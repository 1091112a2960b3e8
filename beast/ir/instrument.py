"""The instrumented program of ``beast stats``: the plan's loop nest with counters.

Statistics are defined on the plan *without tightening* (:func:`~beast.ir.build.build_program`
with ``tighten=False``): every loop scans its whole sequence and every condition is evaluated
where the plan hoists it, so each rejection is seen and charged to the condition that made it
(tightening would skip values that a check rejects, and the counts would depend on the optimizer).
The normal count/enumerate build is untouched: this is a separate program.

A :class:`~beast.ir.nest.Tally` statement (``counter[slot] += 1``) goes at the *points* of every
block: its entry (for a loop body: a value the loop bound, *tried*) and right after each check
(the partial configurations that passed it). Lets never reject, so

- a condition's *evaluated* count is the point just before it, *rejected* = that point minus the
  point just after it (each rejection cuts one partial configuration at the condition's depth);
- a level's *tried* count is its entry point, *passed* (went on into the next loop or to the
  emit) is the last point of its body.

The block before the first loop (depth 0: conditions on constants and settings) has points too;
its entry is reached once. The program's ``tallies`` give each slot's depth (the C runtime counts
the statements above its work split once, see :mod:`beast.runtime.c.enumerator`).
"""
from __future__ import annotations

from beast.ir.record import field, record

from .build import build_program
from .nest import Check, Emit, Loop, Program, Tally


@record
class LevelSlots:
    """The counters of one loop level (depth 1 = the outermost loop)."""
    iterator: str
    depth: int
    tried: int
    passed: int


@record
class ConditionSlots:
    """The counters around one condition: ``before`` (evaluated) and ``after`` (passed)."""
    name: str
    depth: int
    before: int
    after: int
    kind: str | None = None


@record
class Layout:
    """Which counter means what, for :func:`beast.explore.stats.collect`."""
    levels: list = field(default_factory=list)       # LevelSlots, outermost first
    conditions: list = field(default_factory=list)   # ConditionSlots, in evaluation order
    depths: list = field(default_factory=list)       # slot -> loop depth


def instrument(plan, name="space") -> tuple[Program, Layout]:
    """The untightened program of ``plan`` with :class:`Tally` counters, and their layout."""
    program = build_program(plan, f"{name}_stats", tighten=False)
    layout = Layout()

    def new_slot(depth):
        layout.depths.append(depth)
        return len(layout.depths) - 1

    def visit(stmts, depth, loop):
        point = new_slot(depth)
        out = [Tally(point, depth)]
        entry = point
        for s in stmts:
            out.append(s)
            if isinstance(s, Check):
                after = new_slot(depth)
                node = s.node
                layout.conditions.append(ConditionSlots(s.name, depth, point, after,
                                                        getattr(node, "kind", None)))
                out.append(Tally(after, depth))
                point = after
            elif isinstance(s, Loop):
                # a loop is the last statement of its block: this level passed `point`
                if loop is not None:
                    layout.levels.append(LevelSlots(loop.var, depth, entry, point))
                s.body = visit(s.body, depth + 1, s)
            elif isinstance(s, Emit) and loop is not None:
                layout.levels.append(LevelSlots(loop.var, depth, entry, point))
        return out

    program.body = visit(program.body, 0, None)
    layout.levels.sort(key=lambda lv: lv.depth)
    program.tallies = tuple(layout.depths)
    return program, layout
