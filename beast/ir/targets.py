"""What each backend's integers hold, how its loop nest runs and what it does with user functions:
the one place that says it.

Three records describe a target, at three levels:

- :class:`Target` (the *integers*): the exact integer width every expression op
  (:mod:`beast.ir.ops`) is lowered for (checks, folding); C's are 64-bit (:data:`C64`), LuaJIT's
  doubles hold integers exactly strictly inside (-2**53, 2**53) (:data:`LUA`), with variants for
  its nest and its function bodies (``record.replace``: :data:`LUA_NEST`, :data:`LUA_BODY`).
- :class:`beast.ir.loops.LoopTarget` (the *nest*): those integers, whether loop-variable intervals
  prove checks away, fused constant chains, one-expression counting, the split budget, what its
  variables are stored as, work items, and how it words a refusal (:data:`C_LOOPS`,
  :data:`LUA_LOOPS`, :data:`PY_LOOPS`: Python's integers are unbounded, so it has no integer
  record and its printer does not import the ops).
- :class:`FuncTarget` (the *user functions*): what their bodies are lowered for, the parameter
  types passed as they are, and what happens to a function the target does not translate
  (:data:`C_FUNCS`: tabulated; :data:`LUA_FUNCS`: called back in Python).
"""
from __future__ import annotations

from .ints import C64, LUA, LUA_BODY, LUA_LIMIT, LUA_NEST, Target  # noqa: F401 - the records, re-exported
from .record import record, replace as record_replace
from .loops import LoopTarget
from .split import Budget


@record(frozen=True)
class FuncTarget:
    """What a target does with the user functions its nest calls (:func:`beast.ir.translate.
    decide_all`). ``ops``: the :class:`Target` their bodies are lowered for; ``params``: the static
    types a node argument is passed as (any other: num); ``backend``: its name in a refusal;
    ``tabulate``: a function it does not translate is tabulated in Python (only the functions the
    nest calls: tabulating runs user code), else called back in Python (every function);
    ``stubs``: a call of a function the program does not define fails when it runs (Python's
    NameError), else it is an internal error before printing."""
    ops: Target
    params: tuple
    backend: str
    tabulate: bool = False
    stubs: bool = False


# a counting nest evaluates each length in turn, so any sequence may fail; work items are split at
# most 3 loops deep; a nest variable is an int64_t, a double or a tagged number (bn_num)
C_LOOPS = LoopTarget(C64, count_safe=False, stores=("int", "bool", "float", "num"), claims=3, wide="refuse",
                     says={"expr": "the C backend cannot compile {} in the loop nest"})

# LuaJIT allows 200 locals per function: beyond 110 in scope a loop nest moves into a function of
# its own (beast.ir.split), counted as the locals each statement declares.
LUA_BUDGET = Budget(limit=110, top=3, part=1, part_rows=3, param=1, num_param=2, let=1, num_let=2,
                    loop=6, loops={"Counted": 4, "Array": 5, "Bind": 2, "Solved": 2, "Call": 10,
                                   "Closure": 9},
                    fused_one=1, fused=4, params="read", max_start=190)
# intervals prove checks away; short constant chains are fused
LUA_LOOPS = LoopTarget(LUA_NEST, intervals=True, fuse=True, split=LUA_BUDGET,
                       says={"expr": "the Lua backend cannot translate {}",
                             "part": "the loop over '{}' reads {} variables: more than a LuaJIT function can take"})

# Python refuses more than 20 nested blocks: deeper loops move into functions of their own (the
# cost in scope is the indentation depth); its integers are unbounded and its values keep their
# class (a bool bound to a loop variable becomes an int when it runs)
PY_LOOPS = LoopTarget(split=Budget(limit=15, top=1, part=1), classes=True)
# what the Python printer asks of the 64-bit targets: which integer operations of the nest may leave
# 64 bits (C checks them; Python's unbounded integers are checked there too), with the intervals of
# the nest's variables proving most of them away
PY_CHECKS = LoopTarget(record_replace(C64, intervals=True), intervals=True)

# C passes int, bool and float as they are (any other as a tagged number) and tabulates what it
# does not translate; Lua passes strings too and calls what it does not translate back in Python
C_FUNCS = FuncTarget(C64, ("int", "bool", "float", "num"), "C", tabulate=True)
LUA_FUNCS = FuncTarget(LUA_BODY, ("int", "float", "num", "bool", "str"), "Lua", stubs=True)

# Tests set this to tabulate the functions a tabulating target would translate
# (beast.ir.translate.decide_all reads it when it runs).
FORCE_TABULATE = False
