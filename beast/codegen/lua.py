"""Print the loop-nest IR as a LuaJIT chunk (the Lua backend; :mod:`beast.runtime.lua_backend` runs it).

The chunk is called with one argument, a table ``{py = {ident = callable}}`` (the user functions
that could not be translated, called back in Python), and returns ``count, rows, parts``:

- ``count()``: how many configurations survive (the loop nest of the Python printer, with the same
  product-of-lengths shortcut for loops that only emit);
- ``rows(buf, cap)``: the enumeration, run in a coroutine: it writes rows of int64 into the FFI
  buffer ``buf`` (``cap`` slots, row-major in column order) and ``coroutine.yield(n)``\\ s when the
  buffer is full, receiving the next buffer as the value of the yield; it returns the number of
  slots filled in the last buffer;
- ``parts``: deep loop nests moved into functions of their own (a LuaJIT function has at most 200
  locals); the error handler treats them as part of count/rows.

Numbers. LuaJIT numbers are IEEE doubles, exact for every integer of magnitude below 2**53.
Integers (static type 'int', Program.types) are plain Lua numbers; an integer ``+ - * **`` whose
result is not known (interval analysis from the loop bounds) to stay below 2**53 is checked, and a
result of magnitude 2**53 or more raises "integer overflow": a value is never wrapped or rounded.
(The Python and C backends allow 64 bits: between 2**53 and 2**63 only the Lua backend reports an
overflow.) ``//`` is ``floor(a / b)``, exact for integers below 2**53; ``%`` uses ``fmod`` (exact)
and a sign fix, like CPython's float ``%``; float ``//`` follows CPython's float_floor_div. Floats
are Lua numbers too; where a value may be an int or a float (static type 'num') the code carries
a boolean "is a float" flag next to it (``_b_f_<name>``), so that error messages, iterator-value
checks and overflow checks see Python's types. Bools are Lua booleans, 0/1 in arithmetic.

Errors. A failing operation calls a helper that raises the Lua error ``{k, a, b, fa, fb, extra}``:
``k`` indexes :attr:`LuaSource.sites` (what failed, and where in a user function), ``a``, ``b``
the operands and ``fa``, ``fb`` their float flags (the runtime replays the operation in Python
to get Python's own exception). The runtime's ``xpcall`` handler adds the current line of the
innermost count/rows/part frame (``line_nodes``: which node, how many loops are bound) and the
locals of those frames, from which it builds the same error as the Python backend.

User functions (@iterator / @condition bodies) are translated from their AST when they use the
supported subset (:class:`FunctionTranslator`); otherwise they are called back in Python through
lupa (correct, slower; the chunk's header says which). Deferred iterators return ``start, step,
count, table, bad`` (the values are ``table[1..count]`` or ``start + j*step``; ``bad`` is the
0-based index of a non-integer value, or -1). Closure iterators (generators) fill a table that the
loop then walks: generators are pure, so eager filling gives the same values in the same order; an
error raised by the generator after its n-th value is held and re-raised after the loop body has
seen those n values, which is when Python's lazy loop raises it. (Measured on LuaJIT 2.1: a table
per call is 1.5x to 2.5x faster than a coroutine per call.)
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BeastError
from ..expr import (CallSeq, Const, DivisorSeq, RangeSeq, ScalarSeq, SetOpSeq, SolveSeq, ValuesSeq, Var,
                    free_vars)
from ..ir.body import Comp, ConstArr, ListLit
from ..ir.body import Untranslatable as _LoweringRefused
from ..ir.lower import lower_function
from .exprs import ATOM, ExprPrinter
from ..ir import Check, Emit, Let, Loop, Program, Tally, pure_nest

LIMIT = 2 ** 53          # integers must stay strictly inside (-LIMIT, LIMIT)
SAFE = LIMIT - 1

# Lua operator precedence (higher binds tighter)
OR, AND, CMP, CONCAT, ADD, MUL, UNARY, POW = 1, 2, 3, 4, 5, 6, 7, 8

LUA_KEYWORDS = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
                "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true",
                "until", "while"}

NUMERIC = ("int", "float", "num")
SETOP_CODES = {"union": 1, "intersection": 2, "difference": 3}


class Untranslatable(Exception):
    """A user function uses something the translator does not handle: call it in Python."""


class LuaCodegenError(BeastError):
    """The IR holds a construct the Lua printer cannot express."""


def lua_ident(name: str) -> str:
    """A Lua local name for a Python name (Lua keywords, non-ASCII and '_b_' names are mangled)."""
    if name.isascii() and name.isidentifier() and name not in LUA_KEYWORDS \
            and not name.startswith("_b_"):
        return name
    safe = re.sub(r"[^0-9A-Za-z_]", lambda m: f"_{ord(m.group()):x}_", name)
    return f"_b_n_{safe}"


def lua_string(s: str) -> str:
    out = ['"']
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append(f"\\{b:03d}")
    out.append('"')
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Typed values of the expression printers

_NOCONST = object()


class V:
    """A translated expression: Lua text, its precedence, its type, and for type 'num' the Lua
    text of its "is a float" flag. ``iv`` is a known (lo, hi) range of an integer value; ``k`` the
    Python value of a compile-time constant; ``parts`` the (start, stop, step) Vs of a range."""
    __slots__ = ("code", "prec", "ty", "flag", "iv", "k", "parts")

    def __init__(self, code, prec, ty, flag=None, iv=None, k=_NOCONST, parts=None):
        self.code, self.prec, self.ty, self.flag, self.iv, self.k, self.parts = \
            code, prec, ty, flag, iv, k, parts

    @property
    def const(self):
        return self.k is not _NOCONST

    def __repr__(self):
        return f"V({self.code!r}, {self.ty})"


def wrap(v: V, min_prec, strict=False) -> str:
    if v.prec < min_prec or (strict and v.prec == min_prec):
        return f"({v.code})"
    return v.code


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


def safe_iv(iv) -> bool:
    return iv is not None and -SAFE <= iv[0] and iv[1] <= SAFE


def iv_hull(a, b):
    if a is None or b is None:
        return None
    return (min(a[0], b[0]), max(a[1], b[1]))


def iv_binop(op, a, b):
    """Interval of an integer operation (None when unknown)."""
    if a is None or b is None:
        return None
    if op == "+":
        return (a[0] + b[0], a[1] + b[1])
    if op == "-":
        return (a[0] - b[1], a[1] - b[0])
    if op == "*":
        ps = [x * y for x in a for y in b]
        return (min(ps), max(ps))
    if op == "//":
        if b[0] > 0:
            cands = [x // y for x in a for y in b]
            return (min(cands), max(cands))
        m = max(abs(a[0]), abs(a[1]))
        return (-m, m)
    if op == "%":
        if b[0] > 0:
            return (0, b[1] - 1)
        if b[1] < 0:
            return (b[0] + 1, 0)
        m = max(abs(b[0]), abs(b[1]))
        return (-m, m)
    return None


def lua_number(x):
    """(text, precedence) of a Python number as a Lua literal."""
    if isinstance(x, bool):
        return ("true" if x else "false"), ATOM
    if isinstance(x, int):
        return (str(x), ATOM) if x >= 0 else (f"({x})", ATOM)
    if x != x:
        return "(0/0)", ATOM
    if x in (math.inf, -math.inf):
        return ("_b_inf" if x > 0 else "(-_b_inf)"), ATOM
    text = repr(x)
    return (text, ATOM) if not text.startswith("-") else (f"({text})", ATOM)


# ---------------------------------------------------------------------------------------------
# Error sites

@dataclass(frozen=True)
class ErrorSite:
    """What a Lua error ``{k, ...}`` means. ``kind``: 'op' (an arithmetic operation ``op`` failed:
    replay it in Python), 'overflow', 'rstep' (range() step zero), 'rbound' (a float range()
    bound), 'nonint' (an iterator value that is not an integer), 'none' (a deferred iterator
    returned None), 'index', 'setindex', 'empty' (min/max of nothing, ``op`` the function),
    'conv' (int() of a float), 'complex', 'python' (an exception raised by a Python fallback),
    'missing' (the IR calls a function ``op`` that the program does not define: NameError).
    ``where``: (filename, lineno, col, end_col) inside a user function, or None for the IR (the
    node then comes from the line of count/rows that was running)."""
    kind: str
    op: str | None = None
    where: tuple | None = None


@dataclass
class LuaSource:
    """A generated Lua chunk and what the runtime needs to run it and map its errors."""
    text: str
    line_nodes: dict              # line of the chunk -> (node, number of loops bound)
    sites: list                   # k -> ErrorSite (index 0 unused)
    names: dict                   # Python variable name -> Lua local name (count/rows frames);
                                  # a 'num' variable's float flag is the local _b_f_<lua name>
    fallbacks: dict               # ident -> kind ('cond' | 'deferred' | 'closure'): Python calls
    translated: list              # idents of the user functions translated to Lua
    untranslated_reasons: dict = field(default_factory=dict)   # ident -> why it runs in Python

    def full_text(self):
        return self.text


# ---------------------------------------------------------------------------------------------
# Operations shared by the IR printer and the function translator

class LuaOps:
    """Type-directed Lua for Python operators. Subclasses provide ``ctx`` (the program printer,
    for error sites) and ``where`` (the user location of the operation being translated)."""

    ctx = None

    def site(self, kind, op=None, node=None):
        return self.ctx.site(kind, op, self.location(node))

    def location(self, node):
        return None

    # -- conversions
    @staticmethod
    def num(v: V) -> V:
        """A bool as the int 0/1 (Python's arithmetic on bools)."""
        if v.ty == "bool":
            if v.const:
                return V(str(int(v.k)), ATOM, "int", iv=(int(v.k),) * 2, k=int(v.k))
            return V(f"({v.code} and 1 or 0)", ATOM, "int", iv=(0, 1))
        return v

    @staticmethod
    def flag(v: V) -> str:
        if v.ty == "float":
            return "true"
        if v.ty == "num":
            return v.flag
        return "false"

    def truth(self, v: V) -> str:
        """Lua boolean text of Python's truth value of ``v``."""
        if v.const and v.ty in ("int", "float", "bool", "str", "none"):
            return "true" if v.k else "false"
        if v.ty == "bool":
            return v.code
        if v.ty in NUMERIC:
            return f"{wrap(v, CMP, True)} ~= 0"
        if v.ty == "str":
            return f'{wrap(v, CMP, True)} ~= ""'
        if v.ty == "none":
            return "false"
        if v.ty == "list":
            return f"#{wrap(v, UNARY)} > 0"
        if v.ty == "range":
            a, b, c = v.parts
            return f"_b_rlen({a.code}, {b.code}, {c.code}, {self.site('overflow')}) > 0"
        raise self.unsupported(f"truth value of a {v.ty}")

    def truth_v(self, v: V) -> V:
        t = self.truth(v)
        if t in ("true", "false"):
            return V(t, ATOM, "bool", k=(t == "true"))
        prec = v.prec if v.ty == "bool" else CMP
        if v.ty == "list":
            prec = CMP
        return V(t, prec, "bool")

    def unsupported(self, what):
        return LuaCodegenError(f"the Lua backend cannot translate {what}")

    # -- arithmetic
    def arith(self, op, a: V, b: V, node=None) -> V:
        a, b = self.num(a), self.num(b)
        if a.ty not in NUMERIC or b.ty not in NUMERIC:
            raise self.unsupported(f"'{op}' on {a.ty} and {b.ty}")
        folded = self.fold_arith(op, a, b)
        if folded is not None:
            return folded
        fa, fb = self.flag(a), self.flag(b)
        both_int = a.ty == "int" and b.ty == "int"
        any_float = "float" in (a.ty, b.ty)
        ty = "int" if both_int else "float" if any_float else "num"
        flag = or_flags(fa, fb) if ty == "num" else None
        if op in ("+", "-", "*"):
            prec = ADD if op != "*" else MUL
            code = f"{wrap(a, prec)} {op} {wrap(b, prec, True)}"
            if ty == "int":
                iv = iv_binop(op, a.iv, b.iv)
                if safe_iv(iv):
                    return V(code, prec, "int", iv=iv)
                return V(f"_b_chk({code}, {self.site('overflow', op, node)})", ATOM, "int", iv=None)
            if ty == "num":
                return V(f"_b_chkn({code}, {flag}, {self.site('overflow', op, node)})", ATOM, "num", flag)
            return V(code, prec, "float")
        if op == "/":
            if b.iv is not None and (b.iv[0] > 0 or b.iv[1] < 0):
                return V(f"{wrap(a, MUL)} / {wrap(b, MUL, True)}", MUL, "float")
            k = self.site("op", "/", node)
            return V(f"_b_tdiv({a.code}, {b.code}, {k}, {fa}, {fb})", ATOM, "float")
        if op == "//":
            nonzero = b.iv is not None and (b.iv[0] > 0 or b.iv[1] < 0)
            if both_int:
                iv = iv_binop("//", a.iv, b.iv)
                if nonzero:
                    return V(f"_b_floor({wrap(a, MUL)} / {wrap(b, MUL, True)})", ATOM, "int", iv=iv)
                k = self.site("op", "//", node)
                return V(f"_b_idiv({a.code}, {b.code}, {k})", ATOM, "int", iv=iv)
            k = self.site("op", "//", node)
            return V(f"_b_fdiv({a.code}, {b.code}, {k}, {fa}, {fb})", ATOM, ty, flag)
        if op == "%":
            if both_int:
                iv = iv_binop("%", a.iv, b.iv)
                nonzero = b.iv is not None and (b.iv[0] > 0 or b.iv[1] < 0)
                small = (a.iv is not None and b.iv is not None and
                         max(map(abs, a.iv)) + max(map(abs, b.iv)) < LIMIT)
                if nonzero and small:
                    return V(f"{wrap(a, MUL)} % {wrap(b, MUL, True)}", MUL, "int", iv=iv)
                k = self.site("op", "%", node)
                return V(f"_b_mod({a.code}, {b.code}, {k}, false, false)", ATOM, "int", iv=iv)
            k = self.site("op", "%", node)
            return V(f"_b_mod({a.code}, {b.code}, {k}, {fa}, {fb})", ATOM, ty, flag)
        if op == "**":
            k = self.site("op", "**", node)
            if both_int and b.const and b.k >= 0:
                iv = None
                if a.iv is not None and b.k <= 64:
                    m = max(abs(a.iv[0]), abs(a.iv[1])) ** b.k
                    iv = (-m, m) if a.iv[0] < 0 else (a.iv[0] ** b.k, a.iv[1] ** b.k)
                if safe_iv(iv):
                    return V(f"{wrap(a, POW, True)} ^ {b.code}", POW, "int", iv=iv)
                return V(f"_b_pow({a.code}, {b.code}, {k}, false, false)", ATOM, "int")
            if any_float:
                return V(f"_b_pow({a.code}, {b.code}, {k}, {fa}, {fb})", ATOM, "float")
            # int ** int is a float when the exponent is negative
            flag = or_flags(fa, fb, f"({wrap(b, CMP)} < 0)")
            return V(f"_b_pow({a.code}, {b.code}, {k}, {fa}, {fb})", ATOM, "num", flag)
        raise self.unsupported(f"operator {op}")

    def fold_arith(self, op, a, b):
        if not (a.const and b.const) or op not in ("+", "-", "*", "//", "%", "/"):
            return None
        x, y = a.k, b.k
        if op in ("//", "%", "/") and y == 0:
            return None
        try:
            r = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y, "//": lambda: x // y,
                 "%": lambda: x % y, "/": lambda: x / y}[op]()
        except (ArithmeticError, ValueError):
            return None
        return self.const_number(r)

    def const_number(self, r):
        if isinstance(r, bool):
            return V("true" if r else "false", ATOM, "bool", k=r)
        if isinstance(r, int):
            if abs(r) >= LIMIT:
                return None
            text, prec = lua_number(r)
            return V(text, prec, "int", iv=(r, r), k=r)
        if isinstance(r, float):
            text, prec = lua_number(r)
            return V(text, prec, "float", k=r)
        return None

    def neg(self, a: V, node=None) -> V:
        a = self.num(a)
        if a.ty not in NUMERIC:
            raise self.unsupported(f"unary '-' on {a.ty}")
        if a.const:
            return self.const_number(-a.k)
        inner = wrap(a, UNARY)
        if inner.startswith("-"):
            inner = f"({inner})"
        iv = (-a.iv[1], -a.iv[0]) if a.iv is not None else None
        return V(f"-{inner}", UNARY, a.ty, a.flag, iv)

    def compare(self, op, a: V, b: V) -> V:
        if a.const and b.const and not isinstance(a.k, (list, tuple, range)) \
                and not isinstance(b.k, (list, tuple, range)):
            try:
                r = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
                     ">=": lambda x, y: x >= y, "==": lambda x, y: x == y,
                     "!=": lambda x, y: x != y}[op](a.k, b.k)
                return V("true" if r else "false", ATOM, "bool", k=bool(r))
            except TypeError:
                pass
        if op in ("==", "!="):
            if a.ty == "bool" and b.ty != "bool":
                a = self.num(a)
            elif b.ty == "bool" and a.ty != "bool":
                b = self.num(b)
            kinds = {a.ty if a.ty not in NUMERIC else "n", b.ty if b.ty not in NUMERIC else "n"}
            if len(kinds) > 1 and not kinds <= {"n", "str", "none"}:
                raise self.unsupported(f"'{op}' between {a.ty} and {b.ty}")
        else:
            a, b = self.num(a), self.num(b)
            if not ((a.ty in NUMERIC and b.ty in NUMERIC) or (a.ty == b.ty == "str")):
                raise self.unsupported(f"'{op}' between {a.ty} and {b.ty}")
        lop = "~=" if op == "!=" else op
        return V(f"{wrap(a, CMP, True)} {lop} {wrap(b, CMP, True)}", CMP, "bool")

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
        if a.ty in NUMERIC:
            if a.const:
                return V("false" if a.k else "true", ATOM, "bool", k=not a.k)
            return V(f"{wrap(a, CMP, True)} == 0", CMP, "bool")
        t = self.truth_v(a)
        if t.const:
            return V("false" if t.k else "true", ATOM, "bool", k=not t.k)
        return V(f"not {wrap(t, UNARY)}", UNARY, "bool")

    def minmax(self, fn, a: V, b: V) -> V:
        a, b = self.num(a), self.num(b)
        if a.ty not in NUMERIC or b.ty not in NUMERIC:
            raise self.unsupported(f"{fn}() of {a.ty} and {b.ty}")
        if a.const and b.const:
            return self.const_number(min(a.k, b.k) if fn == "min" else max(a.k, b.k))
        tys = {a.ty, b.ty}
        ty = "int" if tys == {"int"} else "float" if tys == {"float"} else "num"
        iv = None
        if ty == "int" and a.iv is not None and b.iv is not None:
            f = min if fn == "min" else max
            iv = (f(a.iv[0], b.iv[0]), f(a.iv[1], b.iv[1]))
        flag = None
        if ty == "num":
            flag = f"_b_{fn}f({a.code}, {b.code}, {self.flag(a)}, {self.flag(b)})"
        return V(f"_b_{fn}({a.code}, {b.code})", ATOM, ty, flag, iv)

    def abs_(self, a: V) -> V:
        a = self.num(a)
        if a.ty not in NUMERIC:
            raise self.unsupported(f"abs() of {a.ty}")
        if a.const:
            return self.const_number(abs(a.k))
        iv = None
        if a.iv is not None:
            lo, hi = a.iv
            iv = (0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))
        return V(f"_b_abs({a.code})", ATOM, a.ty, a.flag, iv)

    def select(self, c: str, a: V, b: V) -> V:
        """``a if c else b`` for Lua boolean text ``c``; a and b are evaluated lazily."""
        if c in ("true", "false"):
            return a if c == "true" else b
        if a.ty == "bool" and b.ty == "bool":
            return V(f"({c} and {wrap(a, AND)} or (not ({c}) and {wrap(b, AND)}))", ATOM, "bool")
        if a.ty == "bool" or b.ty == "bool":
            a, b = self.num(a), self.num(b)
        if a.ty in NUMERIC and b.ty in NUMERIC:
            tys = {a.ty, b.ty}
            ty = "int" if tys == {"int"} else "float" if tys == {"float"} else "num"
            flag = None
            if ty == "num":
                fa, fb = self.flag(a), self.flag(b)
                flag = f"({c} and {fa} or (not ({c}) and {fb}))" if fa != fb else fa
            return V(f"({c} and {wrap(a, AND)} or {wrap(b, OR, True)})", ATOM, ty, flag,
                     iv_hull(a.iv, b.iv) if ty == "int" else None)
        if a.ty == b.ty and a.ty in ("str", "list"):
            return V(f"({c} and {wrap(a, AND)} or {wrap(b, OR, True)})", ATOM, a.ty)
        raise self.unsupported(f"a select() between {a.ty} and {b.ty}")


# ---------------------------------------------------------------------------------------------
# IR expressions

class LuaExpr(ExprPrinter, LuaOps):
    """The IR's expressions (pure: errors are raised by helper calls)."""

    PREC = {"or": OR, "and": AND, "not": UNARY, "cmp": CMP, "+": ADD, "-": ADD, "*": MUL, "/": MUL,
            "//": MUL, "%": MUL, "unary": UNARY, "**": POW}

    def __init__(self, ctx):
        super().__init__(ctx.program.types, ctx.names)
        self.ctx = ctx

    def p(self, e):
        v = self.v(e)
        return v.code, v.prec

    def v(self, e) -> V:
        method = getattr(self, "v_" + type(e).__name__, None)
        if method is None:
            raise self.unsupported(f"the expression {e!r}")
        return method(e)

    def v_Const(self, e):
        x = e.value
        if isinstance(x, str):
            return V(lua_string(x), ATOM, "str", k=x)
        if x is None:
            return V("nil", ATOM, "none", k=None)
        v = self.const_number(x)
        if v is None:   # an integer constant beyond the exact range of doubles
            return V(f"_b_big({self.site('overflow')})", ATOM, "int")
        return v

    def v_Var(self, e):
        ty = self.types.get(e.name, "num")
        name = self.ctx.lname(e.name)
        if ty == "num":
            return V(name, ATOM, "num", flag=f"_b_f_{name}")
        return V(name, ATOM, ty, iv=self.ctx.ivs.get(e.name) if ty == "int" else None)

    def v_PrefixValue(self, e):
        # sampling (beast.ir.prefix): a value of the prefix the runtime stores in _b_R.pre
        return V(f"_b_R.pre[{e.index + 1}]", ATOM, "int")

    def v_BinOp(self, e):
        return self.arith(e.op, self.v(e.left), self.v(e.right))

    def v_UnOp(self, e):
        return self.neg(self.v(e.operand))

    def v_Compare(self, e):
        return self.compare(e.op, self.v(e.left), self.v(e.right))

    def v_BoolOp(self, e):
        return self.boolop(e.op, self.v(e.left), self.v(e.right))

    def v_Not(self, e):
        return self.not_(self.v(e.operand))

    def v_Call(self, e):
        args = [self.v(a) for a in e.args]
        if e.func == "abs" and len(args) == 1:
            return self.abs_(args[0])
        if e.func in ("min", "max") and len(args) >= 2:
            out = args[0]
            for a in args[1:]:
                out = self.minmax(e.func, out, a)
            return out
        raise self.unsupported(f"{e.func}() with {len(args)} arguments")

    def v_Select(self, e):
        c = self.truth(self.v(e.cond))
        return self.select(c if c in ("true", "false") else f"({c})", self.v(e.then), self.v(e.orelse))

    def v_FuncCall(self, e):
        return V(self.ctx.call_function(e.func, [self.v(a) for a in e.args]), ATOM, "bool")


# ---------------------------------------------------------------------------------------------
# User functions

@dataclass
class LocalVar:
    lua: str
    ty: str
    flag: str | None = None   # Lua name of the "is a float" flag (type 'num')


def _where(position):
    """A lowered position as the Lua error sites keep it (no columns for a multi-line node)."""
    if position is None:
        return None
    filename, lineno, col, end = position
    return (filename, lineno, None, None) if end is None else position


class FunctionTranslator(LuaOps):
    """Print one lowered @iterator / @condition body (:mod:`beast.ir.lower`) as a Lua function.

    Kinds: 'cond' returns a Lua boolean (the truth of the Python result); 'deferred' returns
    ``start, step, count, table, bad``; 'closure' takes a table first, appends the yielded values
    to it (keeping ``out.n``), and returns ``count, bad``. The static types of the locals come
    from the lowering; what Lua cannot hold raises :class:`Untranslatable` (the function is then
    called in Python)."""

    def __init__(self, info, ctx, param_types):
        self.info = info
        self.ctx = ctx
        self.param_types = param_types
        self.body = lower_function(info, [param_types[a] for a in info.node_args])
        self.kind = {"closure": "closure", "iterator": "deferred", "condition": "cond"}[self.body.kind]

    # -- errors
    def location(self, node):
        if node is None:
            return None
        if isinstance(node, ast.AST):
            lineno = getattr(node, "lineno", None)
            col = getattr(node, "col_offset", None)
            end = getattr(node, "end_col_offset", None)
            if getattr(node, "end_lineno", lineno) != lineno:
                col = end = None
            return (self.info.filename, lineno, col, end)
        return _where(self.body.positions.get(id(node)))

    def unsupported(self, what):
        return Untranslatable(what)

    # -- output
    def emit(self, text):
        self.out.append("    " * self.indent + text)

    def tmp(self):
        self.ntmp += 1
        return f"_b_t{self.ntmp}"

    def label(self):
        self.nlabel += 1
        return f"_b_l{self.nlabel}"

    def hoist(self, v: V) -> V:
        """Evaluate ``v`` now into a temporary (keeping its type)."""
        if v.const or v.prec == ATOM and re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", v.code):
            return v
        t = self.tmp()
        if v.ty == "num":
            self.emit(f"local {t}, {t}f = {v.code}, {v.flag}")
            return V(t, ATOM, "num", flag=f"{t}f", iv=v.iv)
        if v.ty == "range":
            return v
        self.emit(f"local {t} = {v.code}")
        return V(t, ATOM, v.ty, iv=v.iv)

    def hoist_always(self, v: V) -> V:
        if v.const or v.ty == "range":
            return v
        t = self.tmp()
        if v.ty == "num":
            self.emit(f"local {t}, {t}f = {v.code}, {v.flag}")
            return V(t, ATOM, "num", flag=f"{t}f")
        self.emit(f"local {t} = {v.code}")
        return V(t, ATOM, v.ty)

    # -- the function
    def translate(self) -> list:
        body = self.body
        if body.untyped:
            raise Untranslatable("a local variable is read before it is assigned")
        self.out, self.indent, self.ntmp, self.nlabel = [], 1, 0, 0
        self.loops = []          # continue labels of the enclosing Python loops
        self.scopes = [{}]
        scope = self.scopes[0]
        params, entry = [], []
        for name in body.params:
            lua = lua_ident(name)
            pty = self.param_types[name]
            params.append(lua)
            if pty == "num":
                params.append(f"_b_f_{lua}")
            ty = body.locals.get(name, pty)
            scope[name] = LocalVar(lua, ty, f"_b_f_{lua}" if ty == "num" else None)
            if ty != pty:
                if pty == "bool":
                    entry.append(f"{lua} = {lua} and 1 or 0")
                if ty == "num" and pty != "num":
                    entry.append(f"local _b_f_{lua} = {'true' if pty == 'float' else 'false'}")
        decl = []
        for name in sorted(set(body.locals) - set(body.params)):
            lua, ty = lua_ident(name), body.locals[name]
            scope[name] = LocalVar(lua, ty, f"_b_f_{lua}" if ty == "num" else None)
            decl.append(lua)
            if ty == "num":
                decl.append(f"_b_f_{lua}")
        if self.kind == "closure":
            params.insert(0, "_b_out")
        for line in entry:
            self.emit(line)
        for i in range(0, len(decl), 50):
            self.emit("local " + ", ".join(decl[i:i + 50]))
        if self.kind == "closure":
            self.emit("local _b_n = 0")
            self.emit("_b_out.n = 0")
        if not self.block(body.body):
            self.emit_return(None, None)
        head = f"local function {self.info.ident}({', '.join(params)})"
        return [head] + self.out + ["end"]

    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # -- statements
    def block(self, stmts) -> bool:
        """Print statements; True when the block ends in return/break/continue."""
        for st in stmts:
            if getattr(self, "s_" + type(st).__name__)(st):
                return True
        return False

    def s_Eval(self, st):
        v = self.ex(st.value)
        if not v.const and v.ty != "range":
            self.emit(f"local {self.tmp()} = {v.code}")

    def s_Append(self, st):
        lst = self.ex(Var(st.name))
        if lst.ty != "list" or lst.const:
            raise Untranslatable("append() on something that is not a local list")
        lst = self.hoist(lst)
        val = self.num(self.ex(st.value))
        if val.ty != "int":
            raise Untranslatable("a list of non-integers")
        self.emit(f"{lst.code}[#{lst.code} + 1] = {val.code}")

    def assign_name(self, name, v: V):
        var = self.lookup(name)
        if var is None:
            raise Untranslatable(f"assignment to '{name}'")
        if v.ty == "range":
            raise Untranslatable("a range() kept in a variable")
        if v.ty == "none":
            raise Untranslatable("a local set to None")
        if v.ty == "list" and v.const:
            raise Untranslatable("a local bound to a module-level list")
        if v.ty not in ("int", "float", "num", "bool", "str", "list"):
            raise Untranslatable(f"a local of type {v.ty}")
        if var.ty in ("int", "num", "float"):
            v = self.num(v)
        if _join(var.ty, v.ty) != var.ty:
            raise Untranslatable(f"local '{name}' holds values of different types")
        if var.ty == "num":
            self.emit(f"{var.lua}, {var.flag} = {v.code}, {self.flag(v)}")
            return
        self.emit(f"{var.lua} = {v.code}")

    def s_Assign(self, st):
        if st.aug:
            cur = self.ex(Var(st.names[0]))
            if cur.ty == "list":
                rhs = self.ex(st.value.right)
                if rhs.ty != "list" or st.value.op != "+":
                    raise Untranslatable(f"operator + on list and {rhs.ty}")
                self.emit(f"_b_extend({cur.code}, {rhs.code})")
                return False
        if len(st.names) == 1:
            self.assign_name(st.names[0], self.ex(st.value))
            return False
        v = self.hoist_always(self.ex(st.value))
        for name in st.names:
            self.assign_name(name, v)
        return False

    def s_Unpack(self, st):
        vals = [self.hoist_always(self.ex(x)) for x in st.values]
        for name, v in zip(st.names, vals):
            self.assign_name(name, v)

    def s_SetItem(self, st):
        v = self.hoist_always(self.ex(st.value))
        lst = self.ex(st.container)
        if lst.ty != "list" or lst.const:
            raise Untranslatable("item assignment to something that is not a local list")
        lst = self.hoist(lst)
        idx = self.num(self.ex(st.index))
        val = self.num(v)
        if val.ty != "int":
            raise Untranslatable("a list of non-integers")
        k = self.site("setindex", None, st.target)
        self.emit(f"_b_setidx({lst.code}, {idx.code}, {val.code}, {k}, {self.flag(idx)})")

    def s_If(self, st):
        test = self.truth(self.ex(st.test))
        if test == "true":
            return self.block(st.body)
        if test == "false":
            return self.block(st.orelse)
        self.emit(f"if {test} then")
        self.indent += 1
        a = self.block(st.body)
        self.indent -= 1
        b = False
        if st.orelse:
            self.emit("else")
            self.indent += 1
            b = self.block(st.orelse)
            self.indent -= 1
        self.emit("end")
        return a and b

    def s_While(self, st):
        cont = self.label()
        self.emit("while true do")
        self.indent += 1
        test = self.truth(self.ex(st.test))
        if test != "true":
            self.emit(f"if not ({test}) then break end")
        self.loops.append(cont)
        self.block(st.body)
        self.loops.pop()
        self.emit(f"::{cont}::")
        self.indent -= 1
        self.emit("end")

    def s_For(self, st):
        it = self.ex(st.iterable)
        cont = self.label()

        def body(elem):
            self.assign_name(st.name, elem)
            self.loops.append(cont)
            self.block(st.body)
            self.loops.pop()
            self.emit(f"::{cont}::")

        self.iterate(it, body)

    def s_Break(self, st):
        self.emit("do break end")
        return True

    def s_Continue(self, st):
        self.emit(f"goto {self.loops[-1]}")
        return True

    def s_Return(self, st):
        self.emit_return(self.ex(st.value) if st.value is not None else None, st.node)
        return True

    def s_Yield(self, st):
        self.yield_(st.value)

    def emit_return(self, v, node):
        if self.kind == "closure":
            self.emit("do return _b_n, -1 end")
            return
        if self.kind == "cond":
            self.emit(f"do return {self.truth(v) if v is not None else 'false'} end")
            return
        # deferred iterator: start, step, count, table, bad
        if v is None or v.ty == "none":
            k = self.site("none", None, node)
            self.emit(f"do return _b_fail({k}) end")
            return
        if v.ty == "range":
            a, b, c = v.parts
            k = self.site("overflow", None, node)
            self.emit(f"do return {a.code}, {c.code}, _b_rlen({a.code}, {b.code}, {c.code}, {k}), nil, -1 end")
            return
        if v.ty == "list":
            v = self.hoist(v)
            self.emit(f"do return 0, 0, #{v.code}, {v.code}, -1 end")
            return
        v = self.num(v)
        if v.ty == "int":
            self.emit(f"do return {v.code}, 0, 1, nil, -1 end")
        elif v.ty == "float":
            self.emit(f"do return {v.code}, 0, 1, nil, 0 end")
        elif v.ty == "num":
            v = self.hoist(v)
            self.emit(f"do return {v.code}, 0, 1, nil, ({v.flag} and 0 or -1) end")
        else:
            raise Untranslatable(f"an @iterator returning a {v.ty}")

    def yield_(self, e):
        v = self.num(self.ex(e))
        if v.ty == "int":
            self.emit(f"_b_n = _b_n + 1; _b_out[_b_n] = {v.code}; _b_out.n = _b_n")
        elif v.ty in ("float", "num"):
            v = self.hoist(v)
            self.emit(f"_b_n = _b_n + 1; _b_out[_b_n] = {v.code}; _b_out.n = _b_n")
            test = "true" if v.ty == "float" else v.flag
            self.emit(f"if {test} then return _b_n, _b_n - 1 end")
        else:
            raise Untranslatable(f"yield of a {v.ty}")

    # -- iteration over a list / range value
    def iterate(self, it: V, body):
        """Emit a loop over ``it`` calling ``body(elem V)`` inside it."""
        if it.ty == "range":
            a, b, c = it.parts
            v = self.tmp()
            if c.const:
                lim = f"{wrap(b, ADD)} - 1" if c.k > 0 else f"{wrap(b, ADD)} + 1"
            else:
                lim = f"({c.code} > 0) and ({b.code} - 1) or ({b.code} + 1)"
            self.emit(f"for {v} = {a.code}, {lim}, {c.code} do")
            self.indent += 1
            body(V(v, ATOM, "int"))
            self.indent -= 1
            self.emit("end")
            return
        if it.ty == "list":
            it = self.hoist(it)
            j, v = self.tmp(), self.tmp()
            self.emit(f"local {j} = 0")
            self.emit("while true do")
            self.indent += 1
            self.emit(f"{j} = {j} + 1")
            self.emit(f"local {v} = {it.code}[{j}]")
            self.emit(f"if {v} == nil then break end")
            body(V(v, ATOM, "int"))
            self.indent -= 1
            self.emit("end")
            return
        raise Untranslatable(f"iteration over a {it.ty}")

    # -- expressions
    def ex(self, e) -> V:
        method = getattr(self, "x_" + type(e).__name__, None)
        if method is None:
            raise Untranslatable(f"the expression {type(e).__name__}")
        return method(e)

    def const_v(self, x):
        if x is None:
            return V("nil", ATOM, "none", k=None)
        if isinstance(x, str):
            return V(lua_string(x), ATOM, "str", k=x)
        if isinstance(x, (bool, int, float)):
            v = self.const_number(x)
            if v is None:
                raise Untranslatable("an integer constant beyond 2**53")
            return v
        if isinstance(x, range):
            parts = tuple(self.const_number(y) for y in (x.start, x.stop, x.step))
            if any(p is None for p in parts):
                raise Untranslatable("a huge range")
            return V("nil", ATOM, "range", k=x, parts=parts)
        if isinstance(x, (list, tuple)):
            if all(isinstance(y, (bool, int)) and abs(y) < LIMIT for y in x):
                name = self.ctx.const_table(tuple(int(y) for y in x))
                return V(name, ATOM, "list", k=tuple(x))
            if all(isinstance(y, (bool, int, float, str)) or y is None for y in x):
                return V("nil", ATOM, "tuple", k=tuple(x))    # for `in`, len() and constant indexing
            raise Untranslatable("a constant list of other values")
        return V("nil", ATOM, "obj", k=x)

    def x_Const(self, e):
        return self.const_v(e.value)

    def x_ConstArr(self, e):
        if e.literal and all(abs(v) < LIMIT for v in e.values):     # a fresh table, as Python makes
            return V("{" + ", ".join(str(v) for v in e.values) + "}", ATOM, "list")
        return self.const_v(tuple(e.values) if e.is_tuple else list(e.values))

    def x_Var(self, e):
        var = self.lookup(e.name)
        if var is None:
            raise Untranslatable(f"the name '{e.name}'")
        if var.ty == "num":
            return V(var.lua, ATOM, "num", flag=var.flag)
        return V(var.lua, ATOM, var.ty)

    def x_BinOp(self, e):
        a = self.ex(e.left)
        if a.ty == "list":
            a = self.hoist(a)
        b = self.ex(e.right)
        if a.ty == "list" and b.ty == "list" and e.op == "+":
            return V(f"_b_concat({a.code}, {b.code})", ATOM, "list")
        if e.op in ("&", "|", "^", "<<", ">>"):
            raise Untranslatable(f"operator {e.op}")
        if a.ty not in NUMERIC + ("bool",) or b.ty not in NUMERIC + ("bool",):
            raise Untranslatable(f"operator {e.op} on {a.ty} and {b.ty}")
        return self.arith(e.op, a, b, e)

    def x_UnOp(self, e):
        a = self.ex(e.operand)
        if e.op == "-":
            return self.neg(a, e)
        if e.op == "+":
            return self.num(a)
        a = self.num(a)
        if a.ty != "int":
            raise Untranslatable("~ of a non-integer")
        return self.arith("-", self.neg(a, e), self.const_number(1), e)

    def x_Not(self, e):
        return self.not_(self.ex(e.operand))

    def x_PyBool(self, e):
        # Python's and/or: the value is an operand (evaluated lazily)
        op, vals = e.op, e.values
        first = self.ex(vals[0])
        # all bool and no side statements: a plain Lua expression
        mark = len(self.out)
        rest = []
        pure = True
        for x in vals[1:]:
            before = len(self.out)
            v = self.ex(x)
            if len(self.out) != before:
                pure = False
            rest.append(v)
        if pure and first.ty == "bool" and all(v.ty == "bool" for v in rest) and \
                not any(_has_call(v.code) for v in rest):
            out = first
            for v in rest:
                out = self.boolop(op, out, v)
            return out
        del self.out[mark:]
        ty = None
        for t in [first.ty] + [v.ty for v in rest]:
            ty = _join(ty, t) if ty is not None else t
            if ty is None:
                raise Untranslatable("and/or over values of different types")
        if ty not in ("int", "float", "num", "bool", "str"):
            raise Untranslatable(f"and/or over {ty}")
        t = self.tmp()
        tf = f"{t}f"
        self.emit(f"local {t}, {tf}")

        def store(v):
            if ty in ("int", "num", "float"):
                v = self.num(v)
            self.emit(f"{t} = {v.code}" + (f"; {tf} = {self.flag(v)}" if ty == "num" else ""))

        store(first)
        result = V(t, ATOM, ty, flag=tf if ty == "num" else None)
        depth = 0
        for x in vals[1:]:
            cond = self.truth(V(t, ATOM, ty, flag=tf if ty == "num" else None))
            self.emit(f"if {cond if op == 'and' else f'not ({cond})'} then")
            self.indent += 1
            depth += 1
            store(self.ex(x))
        for _ in range(depth):
            self.indent -= 1
            self.emit("end")
        return result

    def x_Compare(self, e):
        return self.compare1(e.op, self.ex(e.left), self.ex(e.right))

    def x_In(self, e):
        x = self.ex(e.item)
        if isinstance(e.container, ListLit) and not _all_const(e.container):
            out = self.member_of_literal(x, [self.ex(y) for y in e.container.elts])
        elif isinstance(e.container, ConstArr) and e.container.literal:
            out = self.member_of_literal(x, [self.const_v(y) for y in e.container.values])
        else:
            out = self.contains(self.ex(e.container), x)
        return self.not_(out) if e.negate else out

    def x_Identity(self, e):
        a, b = self.ex(e.left), self.ex(e.right)
        if a.ty == "none" or b.ty == "none":
            same = (a.ty == b.ty) != e.negate
            return V("true" if same else "false", ATOM, "bool", k=same)
        raise Untranslatable("'is'")

    def x_Chain(self, e):
        # a < b < c evaluates b once and stops at the first false
        left = self.ex(e.operands[0])
        r = self.tmp()
        self.emit(f"local {r} = false")
        depth = 0
        for i, (op, comp) in enumerate(zip(e.ops, e.operands[1:])):
            right = self.hoist(self.ex(comp))
            if op in ("in", "not in"):
                test = self.contains(right, left)
                test = self.not_(test) if op == "not in" else test
            else:
                test = self.compare1(op, left, right)
            if i == len(e.ops) - 1:
                self.emit(f"{r} = {test.code}")
            else:
                self.emit(f"if {self.truth(test)} then")
                self.indent += 1
                depth += 1
            left = right
        for _ in range(depth):
            self.indent -= 1
            self.emit("end")
        return V(r, ATOM, "bool")

    def compare1(self, op, a, b):
        if a.ty in ("list", "range", "obj", "tuple") or b.ty in ("list", "range", "obj", "tuple"):
            raise Untranslatable(f"comparison of {a.ty} and {b.ty}")
        return self.compare(op, a, b)

    def member_of_literal(self, x: V, elts) -> V:
        """``x in (a, b, ...)``: Python compares with == in order (the elements are evaluated first)."""
        x = self.hoist(x)
        elts = [self.hoist(y) for y in elts]
        out = V("false", ATOM, "bool", k=False)
        for y in elts:
            out = self.boolop("or", out, self.compare("==", x, y))
        return out

    def contains(self, container, x):
        if container.ty == "tuple":
            return self.member_of_literal(x, [self.const_v(y) for y in container.k])
        x = self.num(x)
        if x.ty not in NUMERIC:
            raise Untranslatable(f"'in' with a {x.ty}")
        if container.ty == "list":
            return V(f"_b_inlist({container.code}, {x.code})", ATOM, "bool")
        if container.ty == "range":
            a, b, c = container.parts
            return V(f"(_b_inrange({x.code}, {a.code}, {b.code}, {c.code}, 0) ~= nil)", ATOM, "bool")
        raise Untranslatable(f"'in' over a {container.ty}")

    def x_Select(self, e):
        c = self.truth(self.ex(e.cond))
        if c == "true":
            return self.ex(e.then)
        if c == "false":
            return self.ex(e.orelse)
        t = self.tmp()
        self.emit(f"local {t}, {t}f")
        self.emit(f"if {c} then")
        self.indent += 1
        a = self.ex(e.then)
        mark_a = len(self.out)
        self.indent -= 1
        self.emit("else")
        self.indent += 1
        b = self.ex(e.orelse)
        self.indent -= 1
        ty = _join(a.ty, b.ty)
        if ty not in ("int", "float", "num", "bool", "str", "list"):
            raise Untranslatable("a conditional expression over different types")
        # insert the stores at the end of each branch
        av = self.num(a) if ty in NUMERIC else a
        bv = self.num(b) if ty in NUMERIC else b
        store_a = "    " * (self.indent + 1) + f"{t} = {av.code}" + (
            f"; {t}f = {self.flag(av)}" if ty == "num" else "")
        self.out.insert(mark_a, store_a)
        self.indent += 1
        self.emit(f"{t} = {bv.code}" + (f"; {t}f = {self.flag(bv)}" if ty == "num" else ""))
        self.indent -= 1
        self.emit("end")
        return V(t, ATOM, ty, flag=f"{t}f" if ty == "num" else None)

    def x_Eager(self, e):
        c = self.hoist_always(self.truth_v(self.ex(e.args[0])))
        a = self.hoist_always(self.ex(e.args[1]))
        b = self.hoist_always(self.ex(e.args[2]))
        return self.select(c.code, a, b)

    def x_ListLit(self, e):
        if _all_const(e):
            return self.const_v(tuple(x.value for x in e.elts) if e.is_tuple else [x.value for x in e.elts])
        vals = []
        for x in e.elts:
            v = self.num(self.ex(x))
            if v.ty != "int":
                raise Untranslatable("a list of non-integers")
            vals.append(v.code)
        return V("{" + ", ".join(vals) + "}", ATOM, "list")

    def x_Comp(self, e):
        t = self.tmp()
        self.emit(f"local {t} = {{}}")

        def elt():
            v = self.num(self.ex(e.elt))
            if v.ty != "int":
                raise Untranslatable("a list of non-integers")
            self.emit(f"{t}[#{t} + 1] = {v.code}")

        self.comprehension(e.gens, elt)
        return V(t, ATOM, "list")

    def comprehension(self, gens, inner):
        """Nested loops of a comprehension's generators (fresh scope), calling ``inner()``."""
        self.scopes.append({})

        def level(i):
            if i == len(gens):
                inner()
                return
            target, iterable, ifs = gens[i]
            it = self.ex(iterable)

            def body(elem):
                lua = f"{lua_ident(target)}_{self.tmp()}"
                self.scopes[-1][target] = LocalVar(lua, "int")
                self.emit(f"local {lua} = {elem.code}")
                depth = 0
                for cond in ifs:
                    self.emit(f"if {self.truth(self.ex(cond))} then")
                    self.indent += 1
                    depth += 1
                level(i + 1)
                for _ in range(depth):
                    self.indent -= 1
                    self.emit("end")

            self.iterate(it, body)

        level(0)
        self.scopes.pop()

    def x_Fold(self, e):
        fn, arg = e.func, e.iterable
        if fn == "len":
            v = self.ex(arg)
            if v.const and isinstance(v.k, (tuple, list, str, range)):
                return self.const_number(len(v.k))
            if v.ty == "list":
                return V(f"#{wrap(v, UNARY)}", UNARY, "int")
            if v.ty == "range":
                a, b, c = v.parts
                return V(f"_b_rlen({a.code}, {b.code}, {c.code}, {self.site('overflow', None, e)})",
                         ATOM, "int")
            raise Untranslatable(f"len() of a {v.ty}")
        r = self.tmp()
        done = self.label()
        if fn in ("all", "any"):
            self.emit(f"local {r} = {'true' if fn == 'all' else 'false'}")
        elif fn == "sum":
            self.emit(f"local {r} = 0")
        else:
            self.emit(f"local {r} = nil")
        kovf = self.site("overflow", None, e)

        def consume(v):
            if fn == "all":
                self.emit(f"if not ({self.truth(v)}) then {r} = false; goto {done} end")
            elif fn == "any":
                self.emit(f"if {self.truth(v)} then {r} = true; goto {done} end")
            else:
                v = self.num(v)
                if v.ty != "int":
                    raise Untranslatable(f"{fn}() of non-integers")
                if fn == "sum":
                    self.emit(f"{r} = _b_chk({r} + {v.code}, {kovf})")
                else:
                    cmp = "<" if fn == "min" else ">"
                    v = self.hoist(v)
                    self.emit(f"if {r} == nil or {v.code} {cmp} {r} then {r} = {v.code} end")

        if isinstance(arg, Comp):
            self.comprehension(arg.gens, lambda: consume(self.ex(arg.elt)))
        else:
            self.iterate(self.ex(arg), consume)
        self.emit(f"::{done}::")
        if fn in ("min", "max"):
            k = self.site("empty", fn, e)
            self.emit(f"if {r} == nil then _b_fail({k}) end")
        return V(r, ATOM, "bool" if fn in ("all", "any") else "int")

    def x_Call(self, e):
        if e.func == "abs":
            return self.abs_(self.ex(e.args[0]))
        out = self.ex(e.args[0])
        for a in e.args[1:]:
            if _has_call(out.code):
                out = self.hoist(out)
            out = self.minmax(e.func, out, self.ex(a))
        return out

    def x_RangeCall(self, e):
        vals = [self.hoist(self.num(self.ex(a))) for a in e.args]
        kb = None
        for v in vals:
            if v.ty in ("float", "num"):
                kb = kb or self.site("rbound", None, e)
                test = "true" if v.ty == "float" else v.flag
                self.emit(f"if {test} then _b_fail({kb}, {v.code}) end")
            elif v.ty != "int":
                raise Untranslatable(f"range() of a {v.ty}")
        step = vals[2]
        if step.const:
            if step.k == 0:
                self.emit(f"_b_fail({self.site('rstep', None, e)})")
        else:
            self.emit(f"if {step.code} == 0 then _b_fail({self.site('rstep', None, e)}) end")
        return V("nil", ATOM, "range", parts=tuple(vals))

    def x_Conv(self, e):
        if e.to == "bool":
            return self.truth_v(self.ex(e.value))
        v = self.num(self.ex(e.value))
        if e.to == "int":
            if v.ty == "int":
                return v
            if v.ty in ("float", "num"):
                k = self.site("conv", "int", e)
                return V(f"_b_toint({v.code}, {self.flag(v)}, {k})", ATOM, "int")
            raise Untranslatable(f"int() of a {v.ty}")
        if v.ty in NUMERIC:
            if v.const:
                return self.const_number(float(v.k))
            return V(v.code, v.prec, "float")
        raise Untranslatable(f"float() of a {v.ty}")

    def x_ListOf(self, e):
        if isinstance(e.iterable, Comp):
            return self.x_Comp(e.iterable)
        v = self.ex(e.iterable)
        if v.ty == "list":
            return V(f"_b_copy({v.code})", ATOM, "list")
        if v.ty == "range":
            a, b, c = v.parts
            return V(f"_b_rlist({a.code}, {b.code}, {c.code}, 0)", ATOM, "list")
        raise Untranslatable(f"list() of a {v.ty}")

    def x_Sorted(self, e):
        v = self.ex(e.value)
        if v.ty == "list":
            return V(f"_b_sorted({v.code})", ATOM, "list")
        if v.ty == "range":
            a, b, c = v.parts
            return V(f"_b_sorted(_b_rlist({a.code}, {b.code}, {c.code}, 0))", ATOM, "list")
        raise Untranslatable(f"sorted() of a {v.ty}")

    def x_SetOpCall(self, e):
        a = self.hoist_always(self.materialize(self.ex(e.left)))
        b = self.materialize(self.ex(e.right))
        return V(f"_b_setop({SETOP_CODES[e.op]}, {a.code}, {b.code})", ATOM, "list")

    def materialize(self, v: V) -> V:
        """A list V for an operand of union/intersection/difference (Python: list(_b_vals(x)))."""
        if v.ty == "list":
            return v
        if v.ty == "range":
            a, b, c = v.parts
            return V(f"_b_rlist({a.code}, {b.code}, {c.code}, 0)", ATOM, "list")
        v = self.num(v)
        if v.ty == "int":
            return V(f"{{{v.code}}}", ATOM, "list")
        raise Untranslatable(f"a set operation on a {v.ty}")

    def x_Index(self, e):
        lst = self.ex(e.container)
        idx = self.num(self.ex(e.index))
        if lst.const and idx.const and isinstance(lst.k, (list, tuple)):
            try:
                return self.const_v(lst.k[idx.k])
            except (IndexError, TypeError):
                pass
        if lst.ty != "list":
            raise Untranslatable(f"indexing a {lst.ty}")
        if idx.ty not in NUMERIC:
            raise Untranslatable(f"an index of type {idx.ty}")
        k = self.site("index", None, e)
        return V(f"_b_idx({lst.code}, {idx.code}, {k}, {self.flag(idx)})", ATOM, "int")


def _all_const(e) -> bool:
    return all(isinstance(x, Const) for x in e.elts) and bool(e.elts)


def _join(a, b):
    if a is None:
        return b
    if b is None or a == b:
        return a
    s = {a, b}
    if s == {"bool", "int"}:
        return "int"
    if s <= {"bool", "int", "float", "num"}:
        return "num"
    return None


def _has_call(code: str) -> bool:
    return "(" in code and "_b_" in code


# ---------------------------------------------------------------------------------------------
# The Lua runtime helpers every chunk starts with

HELPERS = (Path(__file__).with_name("lua_prelude.lua")).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# The program printer

class LuaPrinter:
    """Print a :class:`~beast.ir.Program` as a LuaJIT chunk."""

    MAX_LOCAL_FUNCS = 24    # more user functions than this go into a table (upvalue limit 60)

    def __init__(self, program: Program, force_python=()):
        self.program = program
        self.force_python = set(force_python)
        self.sites = [None]
        self.site_index = {}
        self.names = {}
        self.ivs = {}
        self.tables = {}            # tuple of ints -> Lua name
        self.fn = None              # the Lua function being printed (_FnOut)
        self.parts = []             # line lists of the functions split off deep loop nests
        self.defined = []           # Python variables in scope, in order of definition
        self.nlabel = 0
        self.func_kinds = {}        # ident -> 'cond' | 'deferred' | 'closure'
        self.translated = {}        # ident -> Lua lines
        self.fallbacks = {}
        self.reasons = {}
        self.param_types = {}
        self.func_ref = {}
        self.missing = set()
        self.ex = LuaExpr(self)

    # -- bookkeeping
    def site(self, kind, op=None, where=None) -> int:
        key = ErrorSite(kind, op, where)
        if key not in self.site_index:
            self.site_index[key] = len(self.sites)
            self.sites.append(key)
        return self.site_index[key]

    def lname(self, name):
        if name not in self.names:
            self.names[name] = lua_ident(name)
        return self.names[name]

    def const_table(self, values: tuple) -> str:
        if values not in self.tables:
            self.tables[values] = f"_b_K{len(self.tables) + 1}"
        return self.tables[values]

    def new_label(self):
        self.nlabel += 1
        return self.nlabel

    def emit(self, depth, text, node=None, bound=None):
        """A line of the function being printed; ``node``/``bound``: what the line evaluates and how
        many loops are bound there (the error handler reads the current line)."""
        self.fn.lines.append(("  " * depth + text, (node, bound) if node is not None else None))

    # -- user functions
    def prepare_functions(self):
        p = self.program
        for ident, info in p.funcs.items():
            kind = "closure" if info.closure else ("deferred" if info.role == "iterator" else "cond")
            self.func_kinds[ident] = kind
            ptypes = {a: p.types.get(a, "num") for a in info.node_args}
            for a, t in ptypes.items():
                if t not in ("int", "float", "num", "bool", "str"):
                    ptypes[a] = "num"
            self.param_types[ident] = ptypes
            if ident in self.force_python:
                self.fallbacks[ident] = kind
                self.reasons[ident] = "forced"
                continue
            mark = (len(self.sites), dict(self.site_index), dict(self.tables))
            try:
                self.translated[ident] = FunctionTranslator(info, self, ptypes).translate()
            except (Untranslatable, _LoweringRefused) as exc:
                del self.sites[mark[0]:]
                self.site_index, self.tables = mark[1], mark[2]
                self.fallbacks[ident] = kind
                self.reasons[ident] = str(exc)
        use_table = len(p.funcs) > self.MAX_LOCAL_FUNCS
        for ident in p.funcs:
            self.func_ref[ident] = f"_b_F.{ident}" if use_table else ident

    def call_args(self, ident, args):
        info = self.program.funcs.get(ident)
        if info is None:
            # Python raises NameError when (if ever) the call runs: so does the stub
            self.missing.add(ident)
            self.func_ref.setdefault(ident, ident)
            return ", ".join(v.code for v in args)
        ptypes = self.param_types[ident]
        out = []
        for name, v in zip(info.node_args, args):
            pty = ptypes[name]
            if pty in ("int", "float", "num") and v.ty == "bool":
                v = LuaOps.num(v)
            out.append(v.code)
            if pty == "num":
                out.append(LuaOps.flag(v))
        return ", ".join(out)

    def call_function(self, ident, args) -> str:
        if ident not in self.func_kinds:
            return f"{self.func_ref.get(ident, ident)}({self.call_args(ident, args)})"
        if self.func_kinds.get(ident) != "cond":
            raise LuaCodegenError(f"'{ident}' is not a condition function")
        return f"{self.func_ref[ident]}({self.call_args(ident, args)})"

    def function_texts(self):
        out = []
        for ident, kind in self.func_kinds.items():
            if ident in self.translated:
                out.extend(self.translated[ident])
            else:
                k = self.site("python")
                py = f"_b_R.py.{ident}"
                if kind == "cond":
                    out += [f"local function {ident}(...)",
                            f"  local v, e = {py}(...)",
                            f"  if e ~= nil then _b_fail({k}, e) end",
                            "  return v",
                            "end"]
                elif kind == "deferred":
                    out += [f"local function {ident}(...)",
                            f"  local s0, st, n, tb, bad, e = {py}(...)",
                            f"  if e ~= nil then _b_fail({k}, e) end",
                            "  return s0, st, n, tb, bad",
                            "end"]
                else:
                    out += [f"local function {ident}(out, ...)",
                            f"  local n, tb, bad, e = {py}(...)",
                            "  for i = 1, n do out[i] = tb[i] end",
                            "  out.n = n",
                            f"  if e ~= nil then _b_fail({k}, e) end",
                            "  return n, bad",
                            "end"]
        for ident in sorted(self.missing):
            out.append(f"local function {ident}() _b_fail({self.site('missing', ident)}) end")
        if any(r.startswith("_b_F.") for r in self.func_ref.values()):
            out.append("local _b_F = {" + ", ".join(f"{i} = {i}" for i in self.func_kinds) + "}")
        return out

    # -- sequences
    def range_parts(self, seq: RangeSeq):
        """Vs of start, stop, step with bool→int and float checks (Python's range() TypeError)."""
        parts = []
        for x in seq.exprs():
            v = LuaOps.num(self.ex.v(x))
            if v.ty in ("float", "num"):
                k = self.site("rbound")
                v = V(f"_b_rint({v.code}, {LuaOps.flag(v)}, {k})", ATOM, "int")
            elif v.ty != "int":
                raise LuaCodegenError(f"a range() bound of type {v.ty}")
            parts.append(v)
        return parts

    def range_head(self, seq: RangeSeq):
        a, b, c = self.range_parts(seq)
        if c.iv is not None and c.iv[0] > 0:
            lim = self.ex.arith("-", b, self.ex.const_number(1))
        elif c.iv is not None and c.iv[1] < 0:
            lim = self.ex.arith("+", b, self.ex.const_number(1))
        else:
            lim = V(f"_b_rlim({b.code}, {c.code}, {self.site('rstep')})", ATOM, "int")
        iv = None
        if a.iv is not None and b.iv is not None:
            if c.iv is not None and c.iv[0] > 0:
                iv = (a.iv[0], max(a.iv[0], b.iv[1] - 1))
            elif c.iv is not None and c.iv[1] < 0:
                iv = (min(a.iv[1], b.iv[0] + 1), a.iv[1])
            else:
                iv = iv_hull(a.iv, b.iv)
        return f"{a.code}, {lim.code}, {c.code}", iv

    def range_len(self, seq: RangeSeq) -> str:
        a, b, c = self.range_parts(seq)
        if a.const and b.const and c.const and c.k != 0:
            return str(len(range(a.k, b.k, c.k)))
        return f"_b_rlen({a.code}, {b.code}, {c.code}, {self.site('rstep')})"

    def seq_list(self, seq) -> str:
        """Lua expression of a table holding a sequence's values (operands of set operations)."""
        if isinstance(seq, RangeSeq):
            a, b, c = self.range_parts(seq)
            return f"_b_rlist({a.code}, {b.code}, {c.code}, {self.site('rstep')})"
        if isinstance(seq, ValuesSeq):
            return self.values_table(seq.values)
        if isinstance(seq, ScalarSeq):
            v = LuaOps.num(self.ex.v(seq.value))
            return f"{{{v.code}}}"
        if isinstance(seq, CallSeq):
            args = self.call_args(seq.func, [self.ex.v(a) for a in seq.args])
            ref = self.func_ref[seq.func]
            if seq.closure:
                sep = ", " if args else ""
                return f"_b_clist({ref}{sep}{args})"
            return f"_b_dlist({ref}({args}))"
        if isinstance(seq, SolveSeq):
            return f"_b_opt({self.solve_value(seq)})"
        if isinstance(seq, DivisorSeq):
            a, b, _ = self.range_parts(seq.base)
            n = LuaOps.num(self.ex.v(seq.n))
            return f"_b_divisors({n.code}, {a.code}, {b.code})"
        if isinstance(seq, SetOpSeq):
            return f"_b_setop({SETOP_CODES[seq.op]}, {self.seq_list(seq.left)}, {self.seq_list(seq.right)})"
        raise LuaCodegenError(f"the sequence {seq!r}")

    def values_table(self, values):
        vals = tuple(int(v) for v in values)
        return self.const_table(vals)

    def solve_value(self, seq: SolveSeq) -> str:
        guard = self.ex.truth(self.ex.v(seq.guard))
        value = LuaOps.num(self.ex.v(seq.value))
        if value.ty != "int":
            raise LuaCodegenError("a solved value that is not an integer")
        a, b, c = self.range_parts(seq.base)
        if c.const and c.k == 1:
            member = f"_b_in1({value.code}, {a.code}, {b.code})"
        else:
            member = f"_b_inrange({value.code}, {a.code}, {b.code}, {c.code}, {self.site('rstep')})"
        if guard == "true":
            return member
        return f"({guard}) and {member} or nil"

    # -- statements
    def pure_count(self, loop: Loop):
        """Lua counting a loop nest that only emits (a product of lengths), or None."""
        nest = pure_nest(loop, self.program.types, inner_safe=True)
        if nest is None:
            return None
        text = None
        for l in reversed(nest):
            seq = l.seq
            if isinstance(seq, ScalarSeq):
                part = "1"
            elif isinstance(seq, ValuesSeq):
                part = str(len(seq.values))
            else:
                part = self.range_len(seq)
            if text is None:
                text = part
            elif part.isdigit() and text.isdigit():
                text = str(int(part) * int(text))
            else:
                text = f"_b_chk({part} * {text}, {self.site('overflow')})"
        return text

    def block(self, stmts, depth, mode, loop, nloops):
        for s in stmts:
            if isinstance(s, Let):
                v = self.ex.v(s.expr)
                name = self.lname(s.var)
                ty = self.program.types.get(s.var, "num")
                if ty in ("int", "float", "num") and v.ty == "bool":
                    v = LuaOps.num(v)
                if ty == "num":
                    self.emit(depth, f"local {name}, _b_f_{name} = {v.code}, {LuaOps.flag(v)}", s.node, nloops)
                    self.fn.live += 2
                else:
                    self.check_type(ty, v, s.var)
                    self.emit(depth, f"local {name} = {v.code}", s.node, nloops)
                    self.fn.live += 1
                    if ty == "int":
                        self.ivs[s.var] = v.iv
                self.defined.append(s.var)
            elif isinstance(s, Check):
                cond = self.ex.truth(self.ex.v(s.expr))
                if cond == "false":
                    continue
                if loop is None:
                    exit_ = "return 0"
                else:
                    exit_ = f"goto {loop[0] if s.exit == 'continue' else loop[1]}"
                self.emit(depth, f"if {cond} then {exit_} end", s.node, nloops)
            elif isinstance(s, Loop):
                if mode == "count":
                    fast = self.pure_count(s)
                    if fast is not None:
                        self.emit(depth, f"_b_n = _b_chk(_b_n + {fast}, {self.site('overflow')})",
                                  s.node, nloops)
                        continue
                self.loop(s, depth, mode, nloops)
            elif isinstance(s, Tally):
                self.emit(depth, f"_b_T[{s.slot + 1}] = _b_T[{s.slot + 1}] + 1")   # beast stats
            elif isinstance(s, Emit):
                if mode == "count":
                    self.emit(depth, "_b_n = _b_n + 1")
                else:
                    cols = s.columns
                    stores = "; ".join(f"_b_buf[_b_i + {i}] = {self.lname(c)}" if i else
                                       f"_b_buf[_b_i] = {self.lname(c)}" for i, c in enumerate(cols))
                    if stores:
                        self.emit(depth, stores)
                    self.emit(depth, f"_b_i = _b_i + {max(1, len(cols))}")
                    self.emit(depth, "if _b_i >= _b_cap then _b_buf = _b_yield(_b_i); _b_i = 0 end")
            else:
                raise LuaCodegenError(f"the statement {s!r}")

    def check_type(self, ty, v, name):
        if ty == v.ty or (ty == "int" and v.ty == "int"):
            return
        if ty == "float" and v.ty in ("int", "float"):
            return
        if ty == "bool" and v.ty == "bool":
            return
        if ty == "str" and v.ty == "str":
            return
        raise LuaCodegenError(f"derived variable '{name}' is {ty} but its expression is {v.ty}")

    def bind_check(self, depth, var, v: V, s, nloops, k_nonint):
        """After ``local var = value``: Python's integer check of an iterator value."""
        if v.ty == "float":
            self.emit(depth, f"_b_nonint({k_nonint}, {var}, true)", s.node, nloops + 1)
        elif v.ty == "num":
            self.emit(depth, f"if {v.flag} then _b_nonint({k_nonint}, {var}, true) end", s.node, nloops + 1)
        elif v.ty == "str":
            self.emit(depth, f"_b_nonint({k_nonint}, {var}, false)", s.node, nloops + 1)

    SPLIT_AT = 110          # locals in scope beyond which a loop nest moves to its own function

    def loop(self, s: Loop, depth, mode, nloops):
        if self.fn.live > self.SPLIT_AT:
            return self.part(s, depth, mode, nloops)
        live, ndefined = self.fn.live, len(self.defined)
        self.defined.append(s.var)
        try:
            self.loop_code(s, depth, mode, nloops)
        finally:
            self.fn.live = live
            del self.defined[ndefined:]

    def part(self, s: Loop, depth, mode, nloops):
        """Print the loop nest ``s`` as a function of its own (LuaJIT allows 200 locals per
        function) and call it: ``_b_P[i](vars...)`` returns the count, or the buffer state."""
        used = _subtree_vars(s)
        params = [n for n in self.defined if n in used]
        args = []
        for name in params:
            lua = self.lname(name)
            args.append(lua)
            if self.program.types.get(name) == "num":
                args.append(f"_b_f_{lua}")
        extra = [] if mode == "count" else ["_b_buf", "_b_i", "_b_cap"]
        self.parts.append(None)
        pid = len(self.parts)
        saved = self.fn
        self.fn = _FnOut(len(extra) + len(args) + 1)
        self.emit(0, f"_b_P[{pid}] = function({', '.join(extra + args)})")
        if mode == "count":
            self.emit(1, "local _b_n = 0")
        self.fn.reserve_slot()
        if self.fn.live > 190:
            raise LuaCodegenError(f"the loop over '{s.var}' reads {len(params)} variables: more than a "
                                  "LuaJIT function can take")
        ndefined = len(self.defined)
        self.defined.append(s.var)
        self.loop_code(s, 1, mode, nloops)     # not loop(): this function starts with its parameters
        del self.defined[ndefined:]
        self.emit(1, "return _b_n" if mode == "count" else "return _b_buf, _b_i")
        self.emit(0, "end")
        self.parts[pid - 1] = self.fn.finish()
        self.fn = saved
        if mode == "count":
            self.emit(depth, f"_b_n = _b_n + _b_P[{pid}]({', '.join(args)})")
        else:
            self.emit(depth, f"_b_buf, _b_i = _b_P[{pid}]({', '.join(extra + args)})")

    def loop_code(self, s: Loop, depth, mode, nloops):
        n = self.new_label()
        cont, brk = f"_b_c{n}", f"_b_x{n}"
        var = self.lname(s.var)
        seq = s.seq
        inner = (cont, brk)
        k_nonint = self.site("nonint", s.var)
        if isinstance(seq, RangeSeq):
            head, iv = self.range_head(seq)
            self.ivs[s.var] = iv
            self.emit(depth, f"for {var} = {head} do", s.node, nloops)
            self.fn.live += 4
            self.block(s.body, depth + 1, mode, inner, nloops + 1)
            self.emit(depth + 1, f"::{cont}::")
            self.emit(depth, "end")
            self.emit(depth, f"::{brk}::")
            return
        if isinstance(seq, ValuesSeq):
            vals = [int(x) for x in seq.values]
            table = self.values_table(vals)
            j = f"_b_j{n}"
            self.ivs[s.var] = (min(vals), max(vals)) if vals else None
            self.emit(depth, f"for {j} = 1, {len(vals)} do", s.node, nloops)
            self.fn.live += 5
            self.emit(depth + 1, f"local {var} = {table}[{j}]", s.node, nloops)
            if any(abs(x) >= LIMIT for x in vals):
                self.emit(depth + 1, f"_b_chk({var}, {self.site('overflow')})", s.node, nloops + 1)
                self.ivs[s.var] = None
            self.block(s.body, depth + 1, mode, inner, nloops + 1)
            self.emit(depth + 1, f"::{cont}::")
            self.emit(depth, "end")
            self.emit(depth, f"::{brk}::")
            return
        if isinstance(seq, (ScalarSeq, SolveSeq)):
            inner = (cont, cont)
            self.fn.live += 2
            if isinstance(seq, ScalarSeq):
                v = self.ex.v(seq.value)
                if v.ty == "bool":
                    v = LuaOps.num(v)
                self.emit(depth, "do")
                if v.ty == "num":
                    self.emit(depth + 1, f"local {var}, _b_fv{n} = {v.code}, {v.flag}", s.node, nloops)
                    v = V(var, ATOM, "num", flag=f"_b_fv{n}")
                else:
                    self.emit(depth + 1, f"local {var} = {v.code}", s.node, nloops)
                self.bind_check(depth + 1, var, v, s, nloops, k_nonint)
                self.ivs[s.var] = v.iv if v.ty == "int" else None
                self.block(s.body, depth + 1, mode, inner, nloops + 1)
                self.emit(depth, "end")
            else:
                self.emit(depth, "do")
                self.emit(depth + 1, f"local {var} = {self.solve_value(seq)}", s.node, nloops)
                self.ivs[s.var] = self.range_head(seq.base)[1]
                self.emit(depth + 1, f"if {var} then")
                self.block(s.body, depth + 2, mode, inner, nloops + 1)
                self.emit(depth + 1, "end")
                self.emit(depth, "end")
            self.emit(depth, f"::{cont}::")
            return
        self.ivs[s.var] = None
        if isinstance(seq, CallSeq):
            args = self.call_args(seq.func, [self.ex.v(a) for a in seq.args])
            ref = self.func_ref[seq.func]
            j, s0, st, cnt, tb, bad = (f"_b_{x}{n}" for x in ("j", "s", "d", "n", "t", "b"))
            self.emit(depth, "do")
            depth += 1
            if not seq.closure:
                self.emit(depth, f"local {s0}, {st}, {cnt}, {tb}, {bad} = {ref}({args})", s.node, nloops)
                self.emit(depth, f"for {j} = 0, {cnt} - 1 do")
                self.fn.live += 10
                self.emit(depth + 1, f"local {var} = {tb} and {tb}[{j} + 1] or {s0} + {j} * {st}")
                self.emit(depth + 1, f"if {j} == {bad} then _b_nonint({k_nonint}, {var}, true) end", s.node,
                          nloops + 1)
                self.block(s.body, depth + 1, mode, inner, nloops + 1)
                self.emit(depth + 1, f"::{cont}::")
                self.emit(depth, "end")
                self.emit(depth, f"::{brk}::")
                self.emit(depth - 1, "end")
                return
            ok, err, out = f"_b_ok{n}", f"_b_e{n}", f"_b_o{n}"
            self.fn.out_tables.append(out)     # one table per call site, reused (declared on top)
            self.fn.live += 9
            sep = ", " if args else ""
            self.emit(depth, f"local {ok}, {cnt}, {bad} = _b_pcall({ref}, {out}{sep}{args})", s.node, nloops)
            self.emit(depth, f"local {err} = nil")
            self.emit(depth, f"if not {ok} then {err} = {cnt}; {cnt} = {out}.n; {bad} = -1 end")
            self.emit(depth, f"for {j} = 0, {cnt} - 1 do")
            self.emit(depth + 1, f"local {var} = {out}[{j} + 1]")
            self.emit(depth + 1, f"if {j} == {bad} then _b_nonint({k_nonint}, {var}, true) end", s.node, nloops + 1)
            self.block(s.body, depth + 1, mode, inner, nloops + 1)
            self.emit(depth + 1, f"::{cont}::")
            self.emit(depth, "end")
            self.emit(depth, f"if {err} then _b_reraise({err}) end", s.node, nloops)
            self.emit(depth, f"::{brk}::")
            self.emit(depth - 1, "end")
            return
        if isinstance(seq, SetOpSeq) and constant_values(seq) is not None:
            vals = constant_values(seq)
            table = self.values_table(vals)
            j = f"_b_j{n}"
            self.emit(depth, f"for {j} = 1, {len(vals)} do", s.node, nloops)
            self.fn.live += 5
            self.emit(depth + 1, f"local {var} = {table}[{j}]", s.node, nloops)
            if any(abs(x) >= LIMIT for x in vals):
                self.emit(depth + 1, f"_b_chk({var}, {self.site('overflow')})", s.node, nloops + 1)
            self.block(s.body, depth + 1, mode, inner, nloops + 1)
            self.emit(depth + 1, f"::{cont}::")
            self.emit(depth, "end")
            self.emit(depth, f"::{brk}::")
            return
        if isinstance(seq, (SetOpSeq, DivisorSeq)):
            # a table of values built at run time; divisors are integers of a known range
            j, tb = f"_b_j{n}", f"_b_t{n}"
            if isinstance(seq, DivisorSeq):
                self.ivs[s.var] = self.range_head(seq.base)[1]
            self.emit(depth, "do")
            depth += 1
            self.fn.live += 6
            self.emit(depth, f"local {tb} = {self.seq_list(seq)}", s.node, nloops)
            self.emit(depth, f"for {j} = 1, #{tb} do")
            self.emit(depth + 1, f"local {var} = {tb}[{j}]")
            if isinstance(seq, SetOpSeq):
                self.emit(depth + 1, f"if not _b_isint({var}) then _b_nonint({k_nonint}, {var}) end",
                          s.node, nloops + 1)
            self.block(s.body, depth + 1, mode, inner, nloops + 1)
            self.emit(depth + 1, f"::{cont}::")
            self.emit(depth, "end")
            self.emit(depth, f"::{brk}::")
            self.emit(depth - 1, "end")
            return
        raise LuaCodegenError(f"the sequence {seq!r}")

    # -- whole chunk
    def render(self) -> LuaSource:
        p = self.program
        self.prepare_functions()
        mains = []
        for head, counter, mode in (("local function _b_count()", "_b_n", "count"),
                                     ("local function _b_rows(_b_buf, _b_cap)", "_b_i", "rows")):
            self.fn = _FnOut(3)
            self.emit(0, head)
            self.emit(1, f"local {counter} = 0")
            self.fn.reserve_slot()
            self.block(p.body, 1, mode, None, 0)
            self.emit(1, f"return {counter}")
            self.emit(0, "end")
            mains.append(self.fn.finish())
        head = [f"-- beast enumerator for space {p.name!r} (LuaJIT): generated code, do not edit",
                f"-- loop order: {', '.join(p.loop_order) or '(no loops)'}"]
        for ident in self.func_kinds:
            how = "translated to Lua" if ident in self.translated else \
                f"called in Python ({self.reasons.get(ident)})"
            head.append(f"-- {ident}: {how}")
        head += HELPERS.strip("\n").split("\n")
        many = len(self.tables) > 16
        if many:
            head.append("local _b_KT = {}")
        for values, name in self.tables.items():
            target = f"_b_KT[{name[4:]}]" if many else f"local {name}"
            head.append(f"{target} = {{{', '.join(str(v) for v in values)}}}")
        head += self.function_texts()
        if p.tallies:
            head.append("local _b_T = _b_R.tally")      # beast stats: the runtime's counters
        head.append("local _b_P = {}")
        lines = [(text, None) for text in head]
        for part in self.parts:
            lines += part
        for main in mains:
            lines += main + [("", None)]
        lines.append(("return _b_count, _b_rows, _b_P", None))
        out, line_nodes = [], {}
        for i, (text, entry) in enumerate(lines, 1):
            if many:
                text = re.sub(r"\b_b_K(\d+)\b", r"_b_KT[\1]", text)
            out.append(text)
            if entry is not None:
                line_nodes[i] = entry
        for n in p.loop_order:
            self.lname(n)
        return LuaSource("\n".join(out) + "\n", line_nodes, self.sites, dict(self.names),
                         dict(self.fallbacks), list(self.translated), dict(self.reasons))


class _FnOut:
    """The lines of one Lua function being printed, and how many locals are in scope."""

    def __init__(self, live=0):
        self.lines = []
        self.live = live
        self.out_tables = []
        self.slot = None

    def reserve_slot(self):
        """Keep a line for the tables of the closure iterators (declared once per call)."""
        self.lines.append(("", None))
        self.slot = len(self.lines) - 1

    def finish(self):
        if self.out_tables:
            indent = "  "
            self.lines[self.slot] = (indent + "local " + ", ".join(self.out_tables) + " = " +
                                     ", ".join("{}" for _ in self.out_tables), None)
        return self.lines


def _subtree_vars(loop: Loop) -> set:
    """Every variable a loop nest reads (sequences, expressions, emitted columns)."""
    from ..ir import walk_statements
    out = set()
    for st in walk_statements([loop]):
        if isinstance(st, Loop):
            out |= set(free_vars(st.seq))
        elif isinstance(st, (Let, Check)):
            out |= set(free_vars(st.expr))
        elif isinstance(st, Emit):
            out |= set(st.columns)
    return out


def constant_values(seq):
    """The values of a sequence that reads no variable and calls nothing (else None): a set
    operation of lists and constant ranges is computed once, at compile time."""
    if isinstance(seq, ValuesSeq):
        return [int(v) for v in seq.values]
    if isinstance(seq, RangeSeq):
        parts = seq.exprs()
        if all(isinstance(x, Const) and isinstance(x.value, int) for x in parts) and parts[2].value != 0:
            return list(range(*(x.value for x in parts)))
        return None
    if isinstance(seq, ScalarSeq):
        if isinstance(seq.value, Const) and type(seq.value.value) in (int, bool):
            return [int(seq.value.value)]
        return None
    if isinstance(seq, SetOpSeq):
        a, b = constant_values(seq.left), constant_values(seq.right)
        if a is None or b is None:
            return None
        from ..lang import set_operation
        return set_operation(seq.op, a, b)
    return None


def print_lua(program: Program, force_python=()) -> LuaSource:
    """Generate the Lua chunk of a program (``force_python``: idents of user functions to call in
    Python even when they could be translated; for tests)."""
    return LuaPrinter(program, force_python).render()
