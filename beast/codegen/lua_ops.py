"""Lua spellings of the ops of :mod:`beast.ir.ops`, shared by the Lua printer of the loop nest
(:mod:`beast.codegen.lua`) and of function bodies (:mod:`beast.codegen.lua_body`): numbers are
LuaJIT doubles, exact below 2**53; a value of static type 'num' carries an "is a float" flag."""
from __future__ import annotations

import math
import re

from ..ir.ops import minmax_order
from ..ir.record import record
from .exprs import ATOM

LUA_HELPER = {"/": "_b_tdiv", "//": "_b_fdiv", "%": "_b_mod", "**": "_b_pow"}
LUA_BITWISE = {"&": "_b_band", "|": "_b_bor"}       # Python's & and | of integers below 2**53

# Lua operator precedence (higher binds tighter)
OR, AND, CMP, CONCAT, ADD, MUL, UNARY, POW = 1, 2, 3, 4, 5, 6, 7, 8

LUA_KEYWORDS = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
                "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true",
                "until", "while"}

NUMERIC = ("int", "float", "num")
SETOP_CODES = {"union": 1, "intersection": 2, "difference": 3}
# Python's truth value of a value by its static type: the Lua text, and the operand's precedence
TRUTH = {"bool": ("{}", 0, False), "none": ("false", 0, False), "str": ('{} ~= ""', CMP, True),
         "list": ("#{} > 0", UNARY, False), **{t: ("{} ~= 0", CMP, True) for t in NUMERIC}}
# Arithmetic spelled inline, by (op, form) (None: any form): the Lua text, its precedence and the
# operands' (+, -, * may be checked around it; the others only when nothing can fail)
INLINE = {("+", None): ("{} + {}", ADD, ADD), ("-", None): ("{} - {}", ADD, ADD), ("*", None): ("{} * {}", MUL, MUL),
          ("/", None): ("{} / {}", MUL, MUL), ("%", "ii"): ("{} % {}", MUL, MUL),
          ("//", "ii"): ("_b_floor({} / {})", ATOM, MUL), ("**", "ii"): ("{} ^ {}", POW, POW)}


def lua_ident(name: str) -> str:
    """A Lua local name for a Python name (Lua keywords, non-ASCII and '_b_' names are mangled)."""
    if name.isascii() and name.isidentifier() and name not in LUA_KEYWORDS \
            and not name.startswith("_b_"):
        return name
    safe = re.sub(r"[^0-9A-Za-z_]", lambda m: f"_{ord(m.group()):x}_", name)
    return f"_b_n_{safe}"


def lua_string(s: str) -> str:
    """A Lua string literal: printable ASCII as it is (quote and backslash escaped), any other byte
    of the UTF-8 as ``\\ddd``."""
    return '"' + "".join(_LUA_BYTES[b] for b in s.encode("utf-8")) + '"'


_LUA_BYTES = [("\\" + chr(b) if chr(b) in '"\\' else chr(b)) if 32 <= b < 127 else f"\\{b:03d}" for b in range(256)]


# ---------------------------------------------------------------------------------------------
# Typed values of the expression printers

_NOCONST = object()


class V:
    """A translated expression: Lua text, its precedence, its type, and for type 'num' the Lua
    text of its "is a float" flag. ``k`` the
    Python value of a compile-time constant; ``parts`` the (start, stop, step) Vs of a range."""
    __slots__ = ("code", "prec", "ty", "flag", "k", "parts")

    def __init__(self, code, prec, ty, flag=None, k=_NOCONST, parts=None):
        self.code, self.prec, self.ty, self.flag, self.k, self.parts = code, prec, ty, flag, k, parts

    @property
    def const(self):
        return self.k is not _NOCONST

    def __repr__(self):
        return f"V({self.code!r}, {self.ty})"


def wrap(v: V, min_prec, strict=False) -> str:
    if v.prec < min_prec or (strict and v.prec == min_prec):
        return f"({v.code})"
    return v.code


def codes(*vs) -> str:
    """The Lua texts of the Vs ``vs``, comma separated (arguments of a call)."""
    return ", ".join(v.code for v in vs)


def or_flags(*flags) -> str:
    """Lua text of the disjunction of "is a float" flags ('true', 'false' or an expression)."""
    parts = []
    for f in flags:
        if f == "true":
            return "true"
        if f != "false" and f not in parts:
            parts.append(f)
    if not parts:
        return "false"
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


def number(x) -> V:
    """A Python number (bool, int, float) as a Lua constant."""
    if isinstance(x, bool):
        return V("true" if x else "false", ATOM, "bool", k=x)
    if isinstance(x, int):
        return V(str(x) if x >= 0 else f"({x})", ATOM, "int", k=x)
    if x != x or x in (math.inf, -math.inf):
        text = "(0/0)" if x != x else "_b_inf" if x > 0 else "(-_b_inf)"
    else:
        text = repr(x) if not repr(x).startswith("-") else f"({x!r})"
    return V(text, ATOM, "float", k=x)


# ---------------------------------------------------------------------------------------------
# Error sites

@record(frozen=True)
class ErrorSite:
    """What a Lua error ``{k, ...}`` means. ``kind``: 'op' (an arithmetic operation ``op`` failed:
    replay it in Python), 'overflow', 'count' (the number of configurations), 'rstep' (range() step
    zero), 'rbound' (a float range() bound), 'nonint' (an iterator value that is not an integer),
    'none' (a deferred iterator returned None), 'index', 'setindex', 'empty' (min/max of nothing,
    ``op`` the function), 'conv' (int() of a float), 'complex', 'python' (an exception raised by a
    Python fallback), 'missing' (the IR calls a function ``op`` that the program does not define:
    NameError).
    ``where``: (filename, lineno, col, end_col) inside a user function, or None for the IR (the
    node then comes from the line of count/rows that was running)."""
    kind: str
    op: str | None = None
    where: tuple | None = None


# ---------------------------------------------------------------------------------------------
# The spelling of ops

class OpSpeller:
    """Spell the ops of :mod:`beast.ir.ops` in Lua (``o_<kind>``; ``spell(op)`` returns the
    :class:`V` of ``op``), for the nest printer and the function-body translator alike. Subclasses
    provide ``ctx`` (the program printer, for error sites and constant tables), ``location`` (the
    user position of an operation), ``hoist`` and ``lua_name`` where theirs differ, and the
    spellings that differ: ``o_select`` and what only one of them meets."""

    ctx = None
    lua_name = staticmethod(lua_ident)      # a variable's Lua local (the nest's printer names its own)
    SPELL = {}                  # op kind -> the o_<kind> method: one lookup per op, not a getattr

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.SPELL = {name[2:]: getattr(cls, name) for name in dir(cls) if name.startswith("o_")}

    def site(self, kind, op=None, node=None):
        return self.ctx.site(kind, op, self.location(node))

    def location(self, node):
        return None

    def hoist(self, v: V, always=False) -> V:
        """``v``, evaluated before what follows is (a body stores it in a temporary; the nest's
        expressions are pure: ``v`` itself)."""
        return v

    def spell(self, op) -> V:
        return self.SPELL[op.kind](self, op)

    # -- conversions
    @staticmethod
    def num(v: V) -> V:
        """A bool as the int 0/1 (Python's arithmetic on bools)."""
        if v.ty == "bool":
            if v.const:
                return V(str(int(v.k)), ATOM, "int", k=int(v.k))
            # `x and 1 or 0` is `(x and 1) or 0`: an `or` inside x must keep its parentheses
            return V(f"({wrap(v, AND)} and 1 or 0)", ATOM, "int")
        return v

    @staticmethod
    def flag(v: V) -> str:
        if v.ty == "float":
            return "true"
        if v.ty == "num":
            return v.flag
        return "false"

    def truth(self, v: V) -> str:
        """Lua boolean text of Python's truth value of ``v`` (a type beast.ir.translate lets through)."""
        if v.const and v.ty in ("int", "float", "bool", "str", "none"):
            return "true" if v.k else "false"
        if v.ty == "range":
            return f"_b_rlen({codes(*v.parts)}, {self.site('overflow')}) > 0"
        text, prec, strict = TRUTH[v.ty]
        return text.format(wrap(v, prec, strict))

    def truth_v(self, v: V) -> V:
        t = self.truth(v)
        if t in ("true", "false"):
            return V(t, ATOM, "bool", k=(t == "true"))
        return V(t, v.prec if v.ty == "bool" else CMP, "bool")

    def spell_arith(self, d, a: V, b: V, node=None) -> V:
        """The Lua of the decided binop ``d`` on the numbers ``a`` and ``b``."""
        op, ty, form, check = d.op, d.type, d.form, d.check
        if op in LUA_BITWISE:                   # integers only (beast.ir.ops); -2**53 is an overflow
            code = f"{LUA_BITWISE[op]}({a.code}, {b.code})"
            return V(f"_b_chk({code}, {self.site('overflow', op, node)})" if check else code, ATOM, "int")
        if form != "ii" or op == "/":           # an int becomes a float: Python's int has no -0
            a, b = (V(f"({v.code} + 0)", ATOM, "int") if v.ty == "int" and not v.const else v for v in (a, b))
        k = self.site("op", op, node) if op == "**" else None     # registered even where unused
        inline = INLINE.get((op, form)) or INLINE.get((op, None))
        if inline and (not check or op in ("+", "-", "*")):
            text, prec, inner = inline
            code = text.format(wrap(a, inner, op == "**"), wrap(b, inner, True))
            if not check:
                return V(code, prec, ty)
            site = self.site("overflow", op, node)
            if form == "ii":
                return V(f"_b_chk({code}, {site})", ATOM, "int")
            flag = or_flags(self.flag(a), self.flag(b))
            return V(f"_b_chkn({code}, {flag}, {site})", ATOM, "num", flag)
        k = k or self.site("op", op, node)
        if op == "//" and form == "ii":
            return V(f"_b_idiv({a.code}, {b.code}, {k})", ATOM, "int")
        fa, fb = ("false", "false") if form == "ii" else (self.flag(a), self.flag(b))
        flag = None
        if ty == "num":                         # int ** int is a float when the exponent is negative
            flag = or_flags(fa, fb, *([f"({wrap(b, CMP)} < 0)"] if op == "**" and form == "nn" else ()))
        return V(f"{LUA_HELPER[op]}({a.code}, {b.code}, {k}, {fa}, {fb})", ATOM, ty, flag)

    def boolop(self, op, a: V, b: V) -> V:
        """beast's & and |: short-circuit, bool-valued."""
        ta, tb = self.truth_v(a), self.truth_v(b)
        if ta.const:
            if op == "and":
                return tb if ta.k else ta
            return ta if ta.k else tb
        prec = AND if op == "and" else OR
        return V(f"{wrap(ta, prec)} {op} {wrap(tb, prec, True)}", prec, "bool")

    def not_(self, a: V) -> V:
        if a.ty in NUMERIC and not a.const:
            return V(f"{wrap(a, CMP, True)} == 0", CMP, "bool")
        t = self.truth_v(a)
        if t.const:
            return V("false" if t.k else "true", ATOM, "bool", k=not t.k)
        return V(f"not {wrap(t, UNARY)}", UNARY, "bool")

    def select(self, c: str, a: V, b: V, ty) -> V:
        """``a if c else b`` of the decided type ``ty``, for Lua boolean text ``c``; a and b are
        evaluated lazily."""
        if c in ("true", "false"):
            return a if c == "true" else b
        if ty == "bool":
            return V(f"({c} and {wrap(a, AND)} or (not ({c}) and {wrap(b, AND)}))", ATOM, "bool")
        a, b = self.num(a), self.num(b)
        flag = None
        if ty == "num":
            fa, fb = self.flag(a), self.flag(b)
            flag = f"({c} and {fa} or (not ({c}) and {fb}))" if fa != fb else fa
        return V(f"({c} and {wrap(a, AND)} or {wrap(b, OR, True)})", ATOM, ty, flag)

    # -- the ops
    def o_var(self, op):
        lua = self.lua_name(op.value)
        return V(lua, ATOM, op.type, flag=f"_b_f_{lua}" if op.type == "num" else None)

    def o_const(self, op):
        for a in op.args:             # what the constant decided away (their sites all the same)
            self.spell(a)
        x = op.value
        if isinstance(x, str):
            return V(lua_string(x), ATOM, "str", k=x)
        if op.type in ("obj", "tuple"):
            return V("nil", ATOM, op.type, k=x)
        return V("nil", ATOM, "none", k=None) if x is None else number(x)

    def o_huge(self, op):             # an integer constant beyond the exact range of doubles
        return V(f"_b_big({self.site('overflow')})", ATOM, "int")

    def o_conv(self, op):             # a bool in arithmetic; int(), float(), bool() in bodies
        v = self.spell(op.args[0])
        if op.type == "bool":
            return self.truth_v(v)
        v = self.num(v)
        if op.type == "float":
            return V(v.code, v.prec, "float")
        if v.ty == "int":
            return v
        k = self.site("conv", "int", op.where)
        return V(f"_b_toint({v.code}, {self.flag(v)}, {k})", ATOM, "int")

    def o_then(self, op):
        self.spell(op.args[0])
        return self.spell(op.args[1])

    def o_pick(self, op):
        return [self.spell(a) for a in op.args][1 + op.value]

    def o_binop(self, op):
        a, b = map(self.spell, op.args)
        return self.spell_arith(op, a, b, op.where)

    def o_pos(self, op):
        return self.num(self.spell(op.args[0]))

    def o_neg(self, op):              # never checked: LUA's width is symmetric
        a = self.num(self.spell(op.args[0]))
        inner = wrap(a, UNARY)
        return V(f"-({inner})" if inner.startswith("-") else f"-{inner}", UNARY, a.ty, a.flag)

    def o_abs(self, op):
        a = self.spell(op.args[0])
        return V(f"_b_abs({a.code})", ATOM, a.ty, a.flag)

    def o_minmax_call(self, op):     # an argument that can fail evaluated before the next
        out, fn = self.spell(op.args[0]), op.op
        for d, arg, first in zip(op.value, op.args[1:], minmax_order(op)):
            a = self.hoist(out) if first else out
            b = self.num(self.spell(arg))
            flag = f"_b_{fn}f({a.code}, {b.code}, {self.flag(a)}, {self.flag(b)})" if d.type == "num" else None
            out = number(d.value) if d.kind == "const" else V(f"_b_{fn}({a.code}, {b.code})", ATOM, d.type, flag)
        return out

    def o_cmp(self, op):
        a, b = map(self.spell, op.args)
        return V(f"{wrap(a, CMP, True)} {'~=' if op.op == '!=' else op.op} {wrap(b, CMP, True)}", CMP, "bool")

    def o_and(self, op):
        return self.boolop(op.kind, *map(self.spell, op.args))

    o_or = o_and

    def o_truth(self, op):
        return self.truth_v(self.spell(op.args[0]))

    def o_not(self, op):
        return self.not_(self.spell(op.args[0]))

#: the stop poll of an iterating loop, of the nest or of the user's code (the prelude's _b_tick
#: and _b_poll: a call into Python every 65536 iterations, where Ctrl-C is raised)
POLL = "_b_tick = _b_tick - 1; if _b_tick < 0 then _b_tick = _b_poll() end"
