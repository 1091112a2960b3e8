"""What a target's integers hold: the one record every expression op (:mod:`beast.ir.ops`) is
lowered for, and each backend's: C's 64 bits (:data:`C64`), LuaJIT's doubles exact strictly inside
(-2**53, 2**53) (:data:`LUA`, with :data:`LUA_NEST` for its nest and :data:`LUA_BODY` for its
function bodies). Standalone: the ops and the loop targets both read it."""
from __future__ import annotations

from .record import record, replace as record_replace


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


C64 = Target(-(1 << 63), (1 << 63) - 1, 64)     # int64_t
LUA_LIMIT = 2 ** 53             # LuaJIT's integers must stay strictly inside (-LUA_LIMIT, LUA_LIMIT)
LUA = Target(-(LUA_LIMIT - 1), LUA_LIMIT - 1, 53, fold=frozenset(("+", "-", "*", "//", "%", "/")),
             intervals=True)
# the nest's expressions: pure (errors are raised by helper calls), a bool in arithmetic converted,
# an integer literal beyond the width a "huge" op (it fails when reached), strings compared
LUA_NEST = record_replace(LUA, bools_are_ints=False, huge_fails=True, strings=True, eval_dead=True)
# function bodies: lists as tables, strings, any constant kept for `is None`; no bitwise operators
LUA_BODY = record_replace(LUA, bools_are_ints=False, strings=True, tables=True, objects=True,
                          member=True, is_none=True, bitwise=False, invert=False, fold_conv=True, index_nums=True)
