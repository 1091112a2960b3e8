"""What each compiled backend's integers hold, and how its loop nest runs: the one place that says it.

Two records describe a target, at two levels:

- :class:`beast.ir.ops.Target` (the *integers*): the exact integer width every expression op is
  lowered for (checks, folding); C's are 64-bit (:data:`C64`), LuaJIT's doubles hold integers
  exactly strictly inside (-2**53, 2**53) (:data:`LUA`). A printer derives its per-lowering
  variants from these (``record.replace``: :data:`LUA_NEST`, :data:`LUA_BODY`).
- :class:`beast.ir.loops.LoopTarget` (the *nest*): those integers, whether loop-variable intervals
  prove checks away, fused constant chains, one-expression counting and the split budget
  (:data:`C_LOOPS`, :data:`LUA_LOOPS`). The Python backend's integers are unbounded: its
  LoopTarget (in :mod:`beast.codegen.python`) has no integer record, so that printer does not import
  the ops.
"""
from __future__ import annotations

from . import ops
from .record import replace as record_replace
from .loops import LoopTarget
from .split import Budget

C64 = ops.C64                   # int64_t
LUA_LIMIT = 2 ** 53             # LuaJIT's integers must stay strictly inside (-LUA_LIMIT, LUA_LIMIT)
LUA = ops.Target(-(LUA_LIMIT - 1), LUA_LIMIT - 1, 53, fold=frozenset(("+", "-", "*", "//", "%", "/")),
                 intervals=True)

# a counting nest evaluates each length in turn, so any sequence may fail
C_LOOPS = LoopTarget(C64, count_safe=False)

# LuaJIT allows 200 locals per function: beyond 110 in scope a loop nest moves into a function of
# its own (beast.ir.split), counted as the locals each statement declares.
LUA_BUDGET = Budget(limit=110, top=3, part=1, part_rows=3, param=1, num_param=2, let=1, num_let=2,
                    loop=6, loops={"Counted": 4, "Array": 5, "Bind": 2, "Solved": 2, "Call": 10,
                                   "Closure": 9},
                    fused_one=1, fused=4, params="read", max_start=190)
# the nest's expressions: pure (errors are raised by helper calls), a bool in arithmetic converted,
# an integer literal beyond the width a "huge" op (it fails when reached), strings compared
LUA_NEST = record_replace(LUA, bools_are_ints=False, huge_fails=True, strings=True, eval_dead=True)
# function bodies: lists as tables, strings, any constant kept for `is None`; no bitwise operators
LUA_BODY = record_replace(LUA, bools_are_ints=False, strings=True, tables=True, objects=True,
                          member=True, is_none=True, bitwise=False, invert=False, fold_conv=True, index_nums=True)
# intervals prove checks away; short constant chains are fused
LUA_LOOPS = LoopTarget(LUA_NEST, intervals=True, fuse=True, split=LUA_BUDGET)
