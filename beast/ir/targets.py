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

from .record import record, replace as record_replace
from .loops import LoopTarget
from .split import Budget


@record(frozen=True)
class Target:
    """What a target's integers hold: exact within [lo, hi]. ``var_iv(name)``: the interval of an
    integer variable, when the target drops the checks that cannot fire (None: every variable may
    take any value of the width); ``fold``: the operators whose constant operands fold (None: all).
    Each backend's records are below (C: :data:`C64`; LuaJIT's 53 bits: ``LUA``, with
    ``LUA_NEST`` and ``LUA_BODY`` for its nest and its function bodies)."""
    lo: int
    hi: int
    bits: int
    var_iv: object = None
    fold: frozenset | None = None
    intervals: bool = False             # choices carry the hull of their branches' intervals
    bools_are_ints: bool = True         # else a bool in arithmetic is converted (a "conv" op)
    huge_fails: bool = False            # an integer literal beyond the width: refused, or a "huge" op
    strings: bool = False               # strings compared and chosen at run time
    eval_dead: bool = False             # the operands a constant decides away are printed all the same
    # function bodies where lists are tables of doubles (Lua): integer constants (ConstArr, constant
    # list literals) are 'list' values: a module-level one a shared 'carray', a literal a fresh
    # 'table'; other constant sequences are 'tuple' constants; list + list is 'concat'; sorted() and
    # union/intersection/difference make lists; a constant index into a constant and len() of one
    # fold; a choice may be between two lists or two strings
    tables: bool = False
    objects: bool = False               # any other constant is an 'obj' constant (kept for `is None`)
    member: bool = False                # x in (a, b, ...) over a literal: == in order ('member')
    is_none: bool = False               # `a is None` decided by the static types
    bitwise: bool = True                # else &, |, ^, <<, >> are refused
    invert: bool = True                 # else ~x is lowered as -x - 1
    fold_conv: bool = False             # bool(), float(), int() of constants fold (int() of ints only)
    index_nums: bool = False            # an index that may be a float is checked at run time

    def fits(self, v) -> bool:
        return self.lo <= v <= self.hi

    def inside(self, out_iv):
        """``out_iv`` when it is known and inside the width, else None."""
        return out_iv if out_iv is not None and self.fits(out_iv[0]) and self.fits(out_iv[1]) else None

    def known(self, a):
        """An operand's interval; an unknown one is the whole width (for deciding checks only)."""
        return a.iv if a.iv is not None else (self.lo, self.hi)


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


C64 = Target(-(1 << 63), (1 << 63) - 1, 64)     # int64_t
LUA_LIMIT = 2 ** 53             # LuaJIT's integers must stay strictly inside (-LUA_LIMIT, LUA_LIMIT)
LUA = Target(-(LUA_LIMIT - 1), LUA_LIMIT - 1, 53, fold=frozenset(("+", "-", "*", "//", "%", "/")),
             intervals=True)

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
# the nest's expressions: pure (errors are raised by helper calls), a bool in arithmetic converted,
# an integer literal beyond the width a "huge" op (it fails when reached), strings compared
LUA_NEST = record_replace(LUA, bools_are_ints=False, huge_fails=True, strings=True, eval_dead=True)
# function bodies: lists as tables, strings, any constant kept for `is None`; no bitwise operators
LUA_BODY = record_replace(LUA, bools_are_ints=False, strings=True, tables=True, objects=True,
                          member=True, is_none=True, bitwise=False, invert=False, fold_conv=True, index_nums=True)
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
