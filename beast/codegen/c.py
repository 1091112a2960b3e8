"""Print the loop-nest IR as C99 with Python's semantics (the C backend's enumerator).

What the printed file holds, in order:

- a prelude of helpers: 64-bit integer arithmetic with Python's ``//``, ``%`` and ``**`` and
  overflow detection (``__builtin_*_overflow``), CPython's float floor division, modulo and power,
  exact int/float comparisons, a tagged number (``bn_num``) for values whose static type is
  ``num`` (int or float), value sequences and the set operations;
- the user's @iterator/@condition functions that inlining left as calls: translated to C
  (integers, floats, if/elif/else, while, for over range/lists, break/continue, return, yield,
  local lists of integers, all/any/sum/min/max/len/in over them), or, where a body uses
  something that does not translate, *tabulated*: run in Python at compile time over the finite
  domains of its arguments and printed as a sorted lookup table;
- ``bn_walk(w)``: the loop nest itself, one function for counting and for writing rows
  (``w->rows``), with hooks for the runtime's work splitting (``bn_claim``/``bn_end`` before and
  after the outer loops, see :func:`claim_depths`).

Errors never wrap: every operation that Python would refuse (division by zero, ``range()`` step
zero, a non-integer iterator value) and every 64-bit overflow stores a *site* (which statement or
which user operation), a *kind* (:data:`KINDS`) and the bound loop values in ``w``, and the walk
returns 1; the runtime turns the site into the same :class:`~beast.errors.EvaluationError` that the
Python backend raises. The printer knows nothing of compilers or threads.

Where C cannot be Python (documented, and tested where it matters):

- 64-bit integers: every ``+ - * ** -x abs << sum`` is checked, in lets, conditions, sequence
  bounds and function bodies alike ("integer overflow"); the Python backend checks only the final
  value of integer lets, so an intermediate overflow whose let value fits, or an overflow inside a
  condition or a function body, is an error in C only.
- ``int / int`` converts both operands to double first (Python rounds the exact quotient when an
  operand exceeds 2**53); a negative float raised to a fractional power is an error (Python makes a
  complex number); NaNs are never equal to each other in union/intersection/difference.
- A closure iterator runs to its end (at most 2**24 values) before its loop starts: the same values
  and errors, in the same order, unless its loop is left early by a breaking check.
- In a translated function a local read before any assignment is 0 (Python: UnboundLocalError).
  Tabulated functions are assumed to be pure (the same arguments give the same result).
- Counting a nest of loops that only multiply (no checks) gives exactly the rows-mode result, errors
  included: lengths outside in, each sequence at the first value of the loops around it.
"""
from __future__ import annotations

import ast
import builtins
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import BeastError, SpaceError
from ..expr import (BINOPS, COMPARES, BoolOp, CallSeq, Compare, Const, DivisorSeq, Not, RangeSeq,
                    ScalarSeq, Select, SetOpSeq, SolveSeq, ValuesSeq, Var)
from ..ir import Check, Emit, Let, Loop, Program, Tally, pure_nest, walk_statements
from ..ir.body import Comp, ConstArr, ListLit, PyBool, Untranslatable
from ..ir.lower import join_types as _join
from ..ir.lower import lower_function
from ..ir.lower import select_type as _select_type
from ..ir.sites import LoopValueSite, NodeSite, TableSite, UserSite
from ..ir.tabulate import MAX_VALUES, Tabulator, Untabulatable, float_bits
from .exprs import ATOM, ExprPrinter
from .python import PyExpr

# ---------------------------------------------------------------------------------------------
# Error kinds shared with the runtime (the C enum is generated from this tuple).

KINDS = ("overflow", "zero_floordiv", "zero_mod", "zero_truediv", "zero_ffloordiv", "zero_fmod",
         "zero_ftruediv", "zero_pow", "fpow_overflow", "complex_pow", "range_step_zero",
         "range_not_int", "non_integer", "returned_none", "bad_return", "exception", "table_miss",
         "no_memory", "list_index", "tuple_index", "empty_min", "empty_max", "float_inf_to_int",
         "float_nan_to_int", "too_many_values", "count_overflow", "negative_shift")
KIND = {name: i + 1 for i, name in enumerate(KINDS)}

MAX_CLAIM_DEPTH = 3          # work items are split at most this many loops deep

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
CTYPE = {"int": "int64_t", "bool": "int64_t", "float": "double", "num": "bn_num"}
ZERO = {"int": "0", "bool": "0", "float": "0.0", "num": "BN_NUM0"}
INTISH = ("int", "bool")
NUMERIC = ("int", "bool", "float", "num")
CMP_CODE = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5}

# Tests may set this to exercise tabulation on functions that translate.
FORCE_TABULATE = False


@dataclass
class CSource:
    """The printed enumerator and what the runtime needs to explain its errors."""
    text: str
    sites: list                 # site id -> NodeSite | LoopValueSite | UserSite | ExcSite | TableSite
    objects: list               # Python values a tabulated function produced that C cannot hold
    columns: tuple
    claim_depth: int            # deepest claim point (-1: the walk is one work item)
    tabulated: tuple = ()       # functions printed as tables
    translated: tuple = ()      # functions translated to C


# ---------------------------------------------------------------------------------------------
# Literals and names

def c_int(v: int) -> str:
    if not INT64_MIN <= v <= INT64_MAX:
        raise OverflowError(v)
    if v == INT64_MIN:
        return "INT64_MIN"
    if -(1 << 31) < v < (1 << 31):
        return str(v)
    return f"INT64_C({v})"


def c_float(v: float) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = repr(v)
    return text if text[0] != "-" else f"({text})"


def c_comment(text: str) -> str:
    text = text.replace("*/", "* /").replace("??", "? ?")
    text = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)
    return f"/* {text} */"


def _mangle(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", lambda m: f"_{ord(m.group()):x}_", name)


_Untranslatable = Untranslatable




# ---------------------------------------------------------------------------------------------
# The C prelude: Python's arithmetic on 64-bit integers and doubles.

_PRELUDE = (Path(__file__).with_name("c_prelude.h")).read_text(encoding="utf-8")


def _prelude(ncols, nseq, ntally=0):
    kinds = "enum {\n" + "".join(f"    BN_K_{k.upper()} = {KIND[k]},\n" for k in KINDS) + "};"
    text = _PRELUDE.replace("@KINDS@", kinds).replace("@MAX_VALUES@", str(MAX_VALUES))
    return f"#define BN_NCOLS {ncols}\n#define BN_NSEQ {nseq}\n#define BN_NTALLY {ntally}\n" + text


# ---------------------------------------------------------------------------------------------
# Compiled values and code buffers

class CVal:
    """A compiled value: side-effect-free C text of a static type (int, bool, float, num; list or
    range inside functions; str and none only as constants)."""
    __slots__ = ("text", "type", "const", "parts")
    NONE = object()

    def __init__(self, text, type_, const=NONE, parts=None):
        self.text, self.type, self.const, self.parts = text, type_, const, parts

    @property
    def is_const(self):
        return self.const is not CVal.NONE

    def __str__(self):
        return self.text


class _Code:
    """Lines of C with indentation; ``capture`` collects a nested block to splice later."""

    def __init__(self, indent=1):
        self.lines = []
        self.indent = indent

    def __call__(self, text):
        self.lines.append("    " * self.indent + text)

    def open(self, text):
        self(text)
        self.indent += 1

    def close(self, text="}"):
        self.indent -= 1
        self(text)

    def capture(self):
        return _Capture(self)


class _Capture:
    def __init__(self, code):
        self.code = code

    def __enter__(self):
        self.saved = self.code.lines
        self.code.lines = []
        self.code.indent += 1
        return self

    def __exit__(self, *exc):
        self.lines = self.code.lines
        self.code.lines = self.saved
        self.code.indent -= 1
        return False


class CExpr(ExprPrinter):
    """C spelling of pure integer expressions (comparisons, logic, choices of variables and
    constants): they cannot fail, so they print as one C expression with minimal parentheses."""
    PREC = {"or": 1, "and": 2, "cmp": 4, "not": 9, "unary": 9}
    NONASSOC = {"cmp"}

    def __init__(self, resolve):
        super().__init__()
        self.resolve = resolve

    def p_Var(self, e):
        return self.resolve(e.name).text, ATOM

    def fmt_const(self, v):
        text = c_int(int(v))
        return text, (self.PREC["unary"] if text.startswith("-") else ATOM)

    def fmt_not(self, operand):
        return f"!{operand}"

    def fmt_boolop(self, e, left, right):
        return f"{left} {'&&' if e.op == 'and' else '||'} {right}"

    def fmt_select(self, cond, then, orelse):
        return f"({cond} ? {then} : {orelse})"


# ---------------------------------------------------------------------------------------------
# The expression compiler: Python semantics, flattened into C statements with explicit checks.

class _Gen:
    """Compile expressions into ``code``. ``resolve(name) -> CVal``; ``ctx`` supplies the failure
    statements (``fail(site, kind)``, ``fail_prop()``) and, in functions, list temporaries."""

    def __init__(self, unit, code, resolve, ctx):
        self.unit, self.code, self.resolve, self.ctx = unit, code, resolve, ctx
        self.site = 0           # the statement's site (IR) or the function's fallback site
        self.pos = {}           # id(expr) -> site of that operation (function bodies)
        self.origins = {}       # id(expr) -> its ast node (function bodies)
        self.scopes = []        # comprehension variables: [{name: CVal}]
        self.pure_printer = CExpr(self.lookup)

    # -- helpers
    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.resolve(name)

    def site_of(self, e):
        return self.pos.get(id(e), self.site)

    def tmp(self, type_):
        name = self.unit.tmp()
        self.code(f"{CTYPE[type_]} {name};")
        return name

    def let(self, type_, text):
        name = self.unit.tmp()
        self.code(f"{CTYPE[type_]} {name} = {text};")
        return CVal(name, type_)

    def stable(self, v):
        """``v`` as a name or literal (so that it can be repeated without recomputation)."""
        if v.is_const or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v.text or ""):
            return v
        return self.let(v.type, v.text)

    def fail(self, site, kind):
        return self.ctx.fail(site, kind)

    def check(self, call, site, ret_type, out_type):
        """``out = helper(&out, ...)``: a helper returning an error kind (0: fine)."""
        t = self.tmp(out_type)
        self.code(f"if (BN_UNLIKELY(bn_e = {call.format(out='&' + t)})) {self.fail(site, 'bn_e')}")
        return CVal(t, ret_type)

    # -- conversions
    def to_num(self, v):
        if v.type == "num":
            return v.text
        if v.type == "float":
            return f"bn_nf({v.text})"
        if v.type in INTISH:
            return f"bn_ni({v.text})"
        raise _Untranslatable(None, f"a {v.type} used as a number")

    def to_double(self, v):
        if v.type == "float":
            return v.text
        if v.type in INTISH:
            return f"(double)({v.text})"
        if v.type == "num":
            return f"bn_tod({v.text})"
        raise _Untranslatable(None, f"a {v.type} used as a number")

    def convert(self, v, to):
        if v.type == to or (v.type in INTISH and to in INTISH):
            return v.text
        if to == "num":
            return self.to_num(v)
        if to == "float" and v.type in INTISH:
            return f"(double)({v.text})"
        raise BeastError(f"internal error: cannot store a {v.type} value as {to}")

    def truth_of(self, v):
        t = v.type
        if v.is_const and t in ("int", "bool", "float", "str", "none"):
            return "1" if v.const else "0"
        if t == "bool":
            return v.text
        if t == "int":
            return f"({v.text} != 0)"
        if t == "float":
            return f"({v.text} != 0.0)"
        if t == "num":
            return f"bn_truth({v.text})"
        if t == "list":
            return f"({v.text}.n != 0)"
        if t == "range":
            a, b, c = v.parts
            return f"(bn_range_len({a}, {b}, {c}) != 0u)"
        raise _Untranslatable(None, f"the truth value of a {t}")

    def truth(self, e):
        return self.truth_of(self.value(e))

    # -- entry point
    def value(self, e) -> CVal:
        if isinstance(e, Const):
            return self.v_Const(e)
        if self._pure(e):
            text, prec = self.pure_printer.p(e)
            return CVal(text if prec >= ATOM else f"({text})", self._pure_type(e))
        method = getattr(self, "v_" + type(e).__name__, None)
        if method is None:
            raise _Untranslatable(e, f"the expression {type(e).__name__}")
        return method(e)

    def _pure(self, e):
        if isinstance(e, Const):
            return type(e.value) in (int, bool) and INT64_MIN <= e.value <= INT64_MAX
        if isinstance(e, Var):
            try:
                v = self.lookup(e.name)
            except _Untranslatable:
                return False
            return v.type in INTISH and not v.is_const
        if isinstance(e, Compare):
            return all(self._pure(x) for x in (e.left, e.right))
        if isinstance(e, (BoolOp, Not, Select)) and type(e) in (BoolOp, Not, Select):
            return all(self._pure(x) for x in e.children())
        return False

    def _pure_type(self, e):
        if isinstance(e, (Compare, BoolOp, Not)):
            return "bool"
        if isinstance(e, Const):
            return "bool" if isinstance(e.value, bool) else "int"
        if isinstance(e, Var):
            return self.lookup(e.name).type
        return _select_type(self._pure_type(e.then), self._pure_type(e.orelse))

    # -- leaves
    def v_Const(self, e):
        v = e.value
        if isinstance(v, bool):
            return CVal("1" if v else "0", "bool", v)
        if isinstance(v, int):
            try:
                return CVal(c_int(v), "int", v)
            except OverflowError:
                raise _Untranslatable(e, f"the integer {v}, which does not fit in 64 bits") from None
        if isinstance(v, float):
            return CVal(c_float(v), "float", v)
        if isinstance(v, str):
            return CVal(None, "str", v)
        if v is None:
            return CVal(None, "none", None)
        raise _Untranslatable(e, f"a constant of type {type(v).__name__}")

    def v_Var(self, e):
        return self.lookup(e.name)

    def v_PrefixValue(self, e):
        # sampling (beast.ir.prefix): a value of the prefix the runtime passes in w->pre
        return CVal(f"w->pre[{e.index}]", "int")

    # -- arithmetic
    def v_BinOp(self, e):
        left = self.value(e.left)
        right = self.value(e.right)
        return self.binop(e.op, left, right, self.site_of(e), e)

    def _fold(self, op, left, right):
        fn = BINOPS.get(op) or {"&": int.__and__, "|": int.__or__, "^": int.__xor__,
                                "<<": int.__lshift__, ">>": int.__rshift__}.get(op)
        try:
            a, b = left.const, right.const
            if op in ("&", "|", "^", "<<", ">>"):
                value = fn(a, b) if not (isinstance(a, bool) and isinstance(b, bool) and op in "&|^") \
                    else bool(fn(a, b))
            else:
                value = fn(a, b)
        except (ArithmeticError, ValueError, TypeError):
            return None
        if isinstance(value, bool):
            return CVal("1" if value else "0", "bool", value)
        if isinstance(value, int) and INT64_MIN <= value <= INT64_MAX:
            return CVal(c_int(value), "int", value)
        if isinstance(value, float):
            return CVal(c_float(value), "float", value)
        return None

    def binop(self, op, left, right, site, node=None):
        lt, rt = left.type, right.type
        if lt not in NUMERIC or rt not in NUMERIC:
            raise _Untranslatable(node, f"'{op}' on {lt} and {rt} values")
        if left.is_const and right.is_const:
            folded = self._fold(op, left, right)
            if folded is not None:
                return folded
        if op == "/":
            return self._truediv(left, right, site)
        if op in ("&", "|", "^", "<<", ">>"):
            if lt not in INTISH or rt not in INTISH:
                raise _Untranslatable(node, f"'{op}' on {lt} values")
            if op in ("<<", ">>"):
                fn = "bn_lshift_ii" if op == "<<" else "bn_rshift_ii"
                return self.check(f"{fn}({{out}}, {left}, {right})", site, "int", "int")
            return CVal(f"({left} {op} {right})", "bool" if lt == rt == "bool" else "int")
        if lt in INTISH and rt in INTISH:
            if op in ("+", "-", "*"):
                name = {"+": "add", "-": "sub", "*": "mul"}[op]
                t = self.tmp("int")
                self.code(f"if (BN_UNLIKELY(__builtin_{name}_overflow({left}, {right}, &{t}))) "
                          f"{self.fail(site, 'BN_K_OVERFLOW')}")
                return CVal(t, "int")
            if op == "//":
                return self.check(f"bn_floordiv_ii({{out}}, {left}, {right})", site, "int", "int")
            if op == "%":
                return self.check(f"bn_mod_ii({{out}}, {left}, {right})", site, "int", "int")
            if op == "**":
                if right.is_const and right.const >= 0:
                    return self.check(f"bn_pow_ii({{out}}, {left}, {right})", site, "int", "int")
                return self.check(f"bn_pow_nn({{out}}, bn_ni({left}), bn_ni({right}))", site, "num", "num")
        if "float" not in (lt, rt):      # num with int or num: decided at run time
            fn = {"+": "add", "-": "sub", "*": "mul", "//": "floordiv", "%": "mod", "**": "pow"}[op]
            return self.check(f"bn_{fn}_nn({{out}}, {self.to_num(left)}, {self.to_num(right)})",
                              site, "num", "num")
        a, b = self.to_double(left), self.to_double(right)
        if op in ("+", "-", "*"):
            return CVal(f"({a} {op} {b})", "float")
        fn = {"//": "floordiv", "%": "mod", "**": "pow"}[op]
        return self.check(f"bn_{fn}_dd({{out}}, {a}, {b})", site, "float", "float")

    def _truediv(self, left, right, site):
        if left.type in INTISH and right.type in INTISH:
            if not (right.is_const and right.const != 0):
                self.code(f"if (BN_UNLIKELY({right} == 0)) {self.fail(site, 'BN_K_ZERO_TRUEDIV')}")
            return self.let("float", f"(double)({left}) / (double)({right})")
        if "float" not in (left.type, right.type):
            return self.check(f"bn_truediv_nn({{out}}, {self.to_num(left)}, {self.to_num(right)})",
                              site, "float", "float")
        b = self.stable(CVal(self.to_double(right), "float"))
        if not (right.is_const and right.const != 0):
            self.code(f"if (BN_UNLIKELY({b} == 0.0)) {self.fail(site, 'BN_K_ZERO_FTRUEDIV')}")
        return CVal(f"({self.to_double(left)} / {b})", "float")

    def v_UnOp(self, e):
        v = self.value(e.operand)
        site = self.site_of(e)
        if v.type not in NUMERIC:
            raise _Untranslatable(e, f"'{e.op}' on a {v.type} value")
        if v.is_const:
            try:
                value = {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x}[e.op](v.const)
                return self.v_Const(Const(value))
            except (TypeError, _Untranslatable):
                pass
        if e.op == "+":
            return CVal(v.text, "int" if v.type == "bool" else v.type)
        if e.op == "~":
            if v.type not in INTISH:
                raise _Untranslatable(e, "'~' on a float")
            return CVal(f"(~{v})", "int")
        if v.type in INTISH:
            s = self.stable(v)
            self.code(f"if (BN_UNLIKELY({s} == INT64_MIN)) {self.fail(site, 'BN_K_OVERFLOW')}")
            return CVal(f"(-{s})", "int")
        if v.type == "float":
            return CVal(f"(-{v})", "float")
        return self.check(f"bn_neg_n({{out}}, {v})", site, "num", "num")

    # -- comparisons and logic
    def v_Compare(self, e):
        return self.compare(e.op, self.value(e.left), self.value(e.right), e)

    def compare(self, op, a, b, node=None):
        if a.is_const and b.is_const:
            try:
                value = COMPARES[op](a.const, b.const)
                return CVal("1" if value else "0", "bool", bool(value))
            except TypeError:
                raise _Untranslatable(node, f"'{op}' between {a.type} and {b.type}") from None
        if a.type not in NUMERIC or b.type not in NUMERIC:
            if op in ("==", "!=") and (a.type in ("str", "none") or b.type in ("str", "none")) \
                    and a.type != b.type:
                value = op == "!="
                return CVal("1" if value else "0", "bool", value)
            raise _Untranslatable(node, f"'{op}' between {a.type} and {b.type} values")
        if a.type in INTISH and b.type in INTISH or a.type == b.type == "float":
            return CVal(f"({a} {op} {b})", "bool")
        if "num" in (a.type, b.type):
            cmp = f"bn_cmp_nn({self.to_num(a)}, {self.to_num(b)})"
        elif a.type == "float":
            cmp = f"bn_cmp_di({a}, {b})"
        else:
            cmp = f"bn_cmp_id({a}, {b})"
        return CVal(f"bn_cmpres({cmp}, {CMP_CODE[op]})", "bool")

    def _lazy(self, first_text, then_fn, negate):
        """``t = first; if (t) t = then()`` (and) or ``if (!t)`` (or), the second part lazily."""
        with self.code.capture() as cap:
            rest = then_fn()
        if not cap.lines:
            return CVal(f"({first_text} {'||' if negate else '&&'} {rest})", "bool")
        t = self.unit.tmp()
        self.code(f"int64_t {t} = {first_text};")
        self.code(f"if ({'!' if negate else ''}{t}) {{")
        self.code.lines.extend(cap.lines)
        self.code(f"    {t} = {rest};")
        self.code("}")
        return CVal(t, "bool")

    def v_BoolOp(self, e):
        left = self.value(e.left)
        if left.is_const and left.type in ("int", "bool", "float", "str", "none"):
            decided = bool(left.const) != (e.op == "and")
            if decided:
                return CVal("1" if left.const else "0", "bool", bool(left.const))
            right = self.value(e.right)
            if right.is_const:
                return CVal("1" if right.const else "0", "bool", bool(right.const))
            return CVal(self.truth_of(right), "bool")
        return self._lazy(self.truth_of(left), lambda: self.truth(e.right), e.op == "or")

    def v_Not(self, e):
        v = self.value(e.operand)
        if v.is_const:
            return CVal("0" if v.const else "1", "bool", not v.const)
        return CVal(f"(!{self.truth_of(v)})", "bool")

    def v_Select(self, e):
        cond = self.value(e.cond)
        if cond.is_const:
            return self.value(e.then if cond.const else e.orelse)
        c = self.truth_of(cond)
        with self.code.capture() as cap_then:
            then = self.value(e.then)
        with self.code.capture() as cap_else:
            orelse = self.value(e.orelse)
        rtype = _select_type(then.type, orelse.type)
        a, b = self.convert(then, rtype), self.convert(orelse, rtype)
        if not cap_then.lines and not cap_else.lines:
            return CVal(f"({c} ? {a} : {b})", rtype)
        t = self.tmp(rtype)
        self.code(f"if ({c}) {{")
        self.code.lines.extend(cap_then.lines)
        self.code(f"    {t} = {a};")
        self.code("} else {")
        self.code.lines.extend(cap_else.lines)
        self.code(f"    {t} = {b};")
        self.code("}")
        return CVal(t, rtype)

    def v_Call(self, e):
        args = [self.value(a) for a in e.args]
        site = self.site_of(e)
        for a in args:
            if a.type not in NUMERIC:
                raise _Untranslatable(e, f"{e.func}() of a {a.type}")
        if e.func == "abs":
            if len(args) != 1:
                raise _Untranslatable(e, "abs() with several arguments")
            v = args[0]
            if v.is_const:
                return self.v_Const(Const(abs(v.const)))
            if v.type in INTISH:
                s = self.stable(v)
                self.code(f"if (BN_UNLIKELY({s} == INT64_MIN)) {self.fail(site, 'BN_K_OVERFLOW')}")
                return CVal(f"({s} < 0 ? -{s} : {s})", "int")
            if v.type == "float":
                return CVal(f"fabs({v})", "float")
            return self.check(f"bn_abs_n({{out}}, {v})", site, "num", "num")
        out = args[0]
        for b in args[1:]:
            out = self.minmax(e.func, out, b)
        if len(args) == 1:
            raise _Untranslatable(e, f"{e.func}() of one number")
        return out

    def minmax(self, func, a, b):
        if a.is_const and b.is_const:
            return self.v_Const(Const(getattr(builtins, func)(a.const, b.const)))
        sign = "<" if func == "min" else ">"
        if a.type in INTISH and b.type in INTISH or a.type == b.type == "float":
            a, b = self.stable(a), self.stable(b)
            rtype = "float" if a.type == "float" else ("bool" if a.type == b.type == "bool" else "int")
            return CVal(f"({b} {sign} {a} ? {b} : {a})", rtype)
        return CVal(f"bn_{func}_nn({self.to_num(a)}, {self.to_num(b)})", "num")

    def v_Sorted(self, e):
        raise _Untranslatable(self.origins.get(id(e)), "the call sorted()")

    def v_SetOpCall(self, e):
        raise _Untranslatable(self.origins.get(id(e)), f"the call {e.op}()")

    def v_Identity(self, e):
        raise _Untranslatable(None, "'is' comparisons")

    def v_FuncCall(self, e):
        info = self.unit.program.funcs.get(e.func)
        if info is None:
            raise BeastError(f"internal error: unknown function {e.func}")
        fname = self.unit.function(info)
        args = [self.value(a) for a in e.args]
        params = self.unit.param_types(info)
        texts = [self.convert(a, t) for a, t in zip(args, params)]
        t = self.tmp("int")
        self.code(f"if (BN_UNLIKELY({fname}(w, &{t}{''.join(', ' + x for x in texts)}))) {self.ctx.fail_prop()}")
        return CVal(t, "bool")

    # -- function-body constructs
    def v_PyBool(self, e):
        values = list(e.values)
        first = self.value(values[0])
        rest = values[1:]
        if not rest:
            return first
        if first.is_const and first.type in ("int", "bool", "float", "str", "none"):
            decided = bool(first.const) != (e.op == "and")
            if decided:
                return first
            return self.v_PyBool(PyBool(e.op, rest)) if len(rest) > 1 else self.value(rest[0])
        # general case: the result type is the join of every operand's type
        with self.code.capture() as cap:
            tail = self.v_PyBool(PyBool(e.op, rest)) if len(rest) > 1 else self.value(rest[0])
        rtype = _join(first.type, tail.type)
        if rtype not in NUMERIC:
            raise _Untranslatable(e, f"'{e.op}' of {first.type} and {tail.type} values")
        t = self.tmp(rtype)
        self.code(f"{t} = {self.convert(first, rtype)};")
        test = self.truth_of(CVal(t, rtype))
        self.code(f"if ({'' if e.op == 'and' else '!'}{test}) {{")
        self.code.lines.extend(cap.lines)
        self.code(f"    {t} = {self.convert(tail, rtype)};")
        self.code("}")
        return CVal(t, rtype)

    def v_Chain(self, e):
        operands = list(e.operands)
        a = self.value(operands[0])
        return self._chain(a, list(e.ops), operands[1:], e)

    def _chain(self, a, ops, rest, node):
        b = self.stable(self.value(rest[0]))
        op = ops[0]
        first = self._cmp_or_in(op, a, b, node)
        if len(ops) == 1:
            return first
        return self._lazy(self.truth_of(first), lambda: self.truth_of(self._chain(b, ops[1:], rest[1:], node)),
                          False)

    def _cmp_or_in(self, op, a, b, node):
        if op in ("in", "not in"):
            return self.contains(a, b, op == "not in", node)
        return self.compare(op, a, b, node)

    def v_In(self, e):
        item = self.value(e.item)
        cont = self.value(e.container)
        return self.contains(item, cont, e.negate, e)

    def contains(self, item, cont, negate, node):
        if item.type not in NUMERIC:
            if item.is_const and cont.is_const:
                try:
                    value = (item.const in cont.const) != negate
                except TypeError:
                    raise _Untranslatable(node, "'in' on these values") from None
                return CVal("1" if value else "0", "bool", value)
            raise _Untranslatable(node, f"'in' with a {item.type} value")
        x = self.stable(item)
        if cont.type == "range":
            a, b, c = cont.parts
            if x.type in INTISH:
                test = f"bn_range_has({a}, {b}, {c}, {x})"
            else:
                test = f"bn_range_has_d({a}, {b}, {c}, {self.to_double(x)})"
        elif cont.type == "list":
            test = f"bn_list_has(&{cont}, {x})" if x.type in INTISH else \
                f"bn_list_has_d(&{cont}, {self.to_double(x)})"
        elif cont.type == "carray":
            arr, n = cont.parts
            if n == 0:
                test = "0"
            else:
                test = f"bn_ints_has({arr}, {n}, {x})" if x.type in INTISH else \
                    f"bn_ints_has_d({arr}, {n}, {self.to_double(x)})"
        else:
            raise _Untranslatable(node, f"'in' on a {cont.type}")
        return CVal(f"(!{test})" if negate else test, "bool")

    def v_Eager(self, e):
        c, a, b = (self.value(x) for x in e.args)
        rtype = _select_type(a.type, b.type)
        return CVal(f"({self.truth_of(c)} ? {self.convert(a, rtype)} : {self.convert(b, rtype)})", rtype)

    def v_RangeCall(self, e):
        args = [self.value(a) for a in e.args]
        a, b, c = self.range_args(args, self.site_of(e), e)
        return CVal(None, "range", parts=(a, b, c))

    def range_args(self, args, site, node=None):
        """Validate range(start, stop, step) as Python does (step first); C texts of the three."""
        start, stop, step = args
        for v in (step, start, stop):
            if v.type not in NUMERIC:
                raise _Untranslatable(node, f"range() of a {v.type}")
        out = {}
        for name, v in (("step", step), ("start", start), ("stop", stop)):
            if v.type == "float":
                self.code(self.fail(site, "BN_K_RANGE_NOT_INT"))
                out[name] = "0"
            elif v.type == "num":
                s = self.stable(v)
                self.code(f"if (BN_UNLIKELY({s}.f)) {self.fail(site, 'BN_K_RANGE_NOT_INT')}")
                out[name] = f"{s}.i"
            else:
                out[name] = self.stable(v).text
            if name == "step" and not (v.is_const and v.const != 0):
                self.code(f"if (BN_UNLIKELY({out['step']} == 0)) {self.fail(site, 'BN_K_RANGE_STEP_ZERO')}")
        return out["start"], out["stop"], out["step"]

    def v_ConstArr(self, e):
        arr = self.unit.int_array(e.values)
        return CVal(arr, "carray", e.values, parts=(arr, len(e.values)))

    def v_ListLit(self, e):
        return self.materialize(e)

    def v_Comp(self, e):
        return self.materialize(e)

    def v_ListOf(self, e):
        return self.materialize(e)

    def materialize(self, e):
        """A fresh list (function-level temporary) holding the values of ``e``."""
        lst = self.ctx.new_list()
        self.code(f"{lst}.n = 0;")
        site = self.site_of(e)

        def push(v):
            if v.type not in INTISH:
                raise _Untranslatable(e, f"a list of {v.type} values (lists of integers only)")
            self.code(f"if (BN_UNLIKELY(bn_e = bn_list_push(&{lst}, {v}))) {self.fail(site, 'bn_e')}")

        if isinstance(e, ListLit):
            for x in e.elts:
                push(self.value(x))
        elif isinstance(e, Comp):
            self.comprehension(e, push)
        else:
            self.iterate(e.iterable, lambda v: push(v), e)
        return CVal(lst, "list")

    def comprehension(self, e, body, gens=None):
        gens = list(e.gens if gens is None else gens)
        target, iterable, ifs = gens[0]

        def inner(v):
            var = self.unit.tmp()
            vt = "int" if v.type in INTISH else v.type
            if vt not in NUMERIC:
                raise _Untranslatable(e, f"a comprehension over {v.type} values")
            self.code(f"{CTYPE[vt]} {var} = {self.convert(v, vt)};")
            self.code(f"(void){var};")
            self.scopes.append({target: CVal(var, vt)})
            try:
                for cond in ifs:
                    self.code(f"if (!{self.truth(cond)}) continue;")
                if len(gens) > 1:
                    self.comprehension(e, body, gens[1:])
                else:
                    body(self.value(e.elt))
            finally:
                self.scopes.pop()

        self.iterate(iterable, inner, e)

    def iterate(self, iterable, body, node, value=None):
        """Run ``body(CVal)`` for each value of an iterable: a range, a list, a constant array."""
        cont = value if value is not None else self.value(iterable)
        i = self.unit.tmp()
        if cont.type == "range":
            a, b, c = cont.parts
            n = self.unit.tmp()
            self.code(f"uint64_t {n} = bn_range_len({a}, {b}, {c});")
            self.code.open(f"for (uint64_t {i} = 0; {i} < {n}; {i}++) {{")
            body(CVal(f"bn_range_at({a}, {c}, {i})", "int"))
            self.code.close()
        elif cont.type == "list":
            self.code.open(f"for (int64_t {i} = 0; {i} < {cont}.n; {i}++) {{")
            body(CVal(f"{cont}.v[{i}]", "int"))
            self.code.close()
        elif cont.type == "carray":
            arr, n = cont.parts
            if n:
                self.code.open(f"for (int64_t {i} = 0; {i} < {n}; {i}++) {{")
                body(CVal(f"{arr}[{i}]", "int"))
                self.code.close()
        else:
            raise _Untranslatable(node, f"iterating over a {cont.type}")

    def v_Fold(self, e):
        func = e.func
        site = self.site_of(e)
        it = e.iterable
        if func == "len":
            v = self.value(it)
            if v.type == "list":
                return CVal(f"{v}.n", "int")
            if v.type == "carray":
                return self.v_Const(Const(v.parts[1]))
            if v.type == "range":
                return CVal(f"(int64_t)bn_range_len({v.parts[0]}, {v.parts[1]}, {v.parts[2]})", "int")
            raise _Untranslatable(e, f"len() of a {v.type}")
        done = self.unit.tmp()
        if func in ("all", "any"):
            r = self.let("bool", "1" if func == "all" else "0")

            def body(v):
                test = self.truth_of(v)
                if func == "all":
                    self.code(f"if (!{test}) {{ {r} = 0; goto {done}; }}")
                else:
                    self.code(f"if ({test}) {{ {r} = 1; goto {done}; }}")
        elif func == "sum":
            r = self.let("int", "0")

            def body(v):
                if v.type not in INTISH:
                    raise _Untranslatable(e, f"sum() of {v.type} values")
                self.code(f"if (BN_UNLIKELY(__builtin_add_overflow({r}, {v}, &{r}))) "
                          f"{self.fail(site, 'BN_K_OVERFLOW')}")
        elif func in ("min", "max"):
            r = self.let("int", "0")
            seen = self.let("bool", "0")
            sign = "<" if func == "min" else ">"

            def body(v):
                if v.type not in INTISH:
                    raise _Untranslatable(e, f"{func}() of {v.type} values")
                x = self.stable(v)
                self.code(f"if (!{seen} || {x} {sign} {r}) {{ {r} = {x}; {seen} = 1; }}")
        else:
            raise _Untranslatable(e, f"{func}()")
        if isinstance(it, Comp):
            self.comprehension(it, body)
        else:
            self.iterate(it, body, e)
        self.code(f"goto {done};")
        self.code(f"{done}:;")
        if func in ("min", "max"):
            kind = "BN_K_EMPTY_MIN" if func == "min" else "BN_K_EMPTY_MAX"
            self.code(f"if (BN_UNLIKELY(!{seen})) {self.fail(site, kind)}")
        return CVal(r.text, "bool" if func in ("all", "any") else "int")

    def v_Index(self, e):
        cont = self.value(e.container)
        idx = self.value(e.index)
        site = self.site_of(e)
        if idx.type not in INTISH:
            raise _Untranslatable(e, f"an index of type {idx.type}")
        if cont.type == "list":
            n, data, kind = f"{cont}.n", f"{cont}.v", "BN_K_LIST_INDEX"
        elif cont.type == "carray":
            if cont.parts[1] == 0:
                self.code(self.fail(site, "BN_K_TUPLE_INDEX" if e.container.is_tuple else "BN_K_LIST_INDEX"))
                return CVal("0", "int")
            n, data = str(cont.parts[1]), cont.parts[0]
            kind = "BN_K_TUPLE_INDEX" if isinstance(e.container, ConstArr) and e.container.is_tuple \
                else "BN_K_LIST_INDEX"
        else:
            raise _Untranslatable(e, f"indexing a {cont.type}")
        i = self.let("int", idx.text)
        self.code(f"if ({i} < 0) {i} += {n};")
        self.code(f"if (BN_UNLIKELY({i} < 0 || {i} >= {n})) {self.fail(site, kind)}")
        return CVal(f"{data}[{i}]", "int")

    def v_Conv(self, e):
        v = self.value(e.value)
        site = self.site_of(e)
        if v.type not in NUMERIC:
            raise _Untranslatable(e, f"{e.to}() of a {v.type}")
        if e.to == "bool":
            return CVal(self.truth_of(v), "bool")
        if e.to == "float":
            return CVal(self.to_double(v), "float")
        if v.type in INTISH:
            return CVal(v.text, "int")
        if v.type == "float":
            return self.check(f"bn_d2i({{out}}, {v})", site, "int", "int")
        s = self.stable(v)
        t = self.tmp("int")
        self.code(f"if ({s}.f) {{ if (BN_UNLIKELY(bn_e = bn_d2i(&{t}, {s}.d))) {self.fail(site, 'bn_e')} }}"
                  f" else {t} = {s}.i;")
        return CVal(t, "int")


# ---------------------------------------------------------------------------------------------
# User functions: AST -> C (translation)

class _FuncCtx:
    """Failure statements and list temporaries inside a translated function."""

    def __init__(self, unit):
        self.unit = unit
        self.lists = []

    def fail(self, site, kind):
        return f"{{ w->site = {site}; w->kind = {kind}; bn_rc = 1; goto bn_out; }}"

    def fail_prop(self):
        raise _Untranslatable(None, "a call of another beast function")

    def new_list(self):
        name = self.unit.tmp()
        self.lists.append(name)
        return name


class _FuncGen:
    """Print one lowered user function body (:mod:`beast.ir.lower`) as C."""

    def __init__(self, unit, info, fname):
        self.unit, self.info, self.fname = unit, info, fname
        self.fdef = info.fdef
        self.body = lower_function(info, unit.param_types(info))
        self.kind = self.body.kind
        self.params = self.body.params
        self.ptypes = self.body.ptypes
        self.code = _Code(1)
        self.ctx = _FuncCtx(unit)
        self.gen = _Gen(unit, self.code, self.resolve, self.ctx)
        self.gen.pos = _Positions(unit, self.body.positions)
        self.gen.origins = self.body.origins
        self.locals = {}          # name -> CVal (C variable)

    def resolve(self, name):
        if name in self.locals:
            return self.locals[name]
        raise _Untranslatable(None, f"the name '{name}'")

    def site(self, node):
        if node is None or getattr(node, "lineno", None) is None:
            return self.gen.site
        end = node.end_col_offset if getattr(node, "end_lineno", node.lineno) == node.lineno else None
        return self.unit.user_site(self.info.filename, node.lineno, node.col_offset, end)

    # -- statements
    def translate(self):
        decls = []
        for p in self.params:
            if p not in self.body.locals:
                self.locals[p] = CVal(f"p_{_mangle(p)}", self.ptypes[p])
        for name, ltype in self.body.locals.items():
            cname = f"l_{_mangle(name)}"
            if ltype not in ("list",) + NUMERIC:
                raise _Untranslatable(None, f"the local '{name}' (a {ltype})")
            if ltype == "list":
                decls.append(f"bn_list {cname} = BN_LIST0;")
                self.ctx.lists.append(cname)
            else:
                init = ZERO[ltype]
                if name in self.params:
                    init = self.gen.convert(CVal(f"p_{_mangle(name)}", self.ptypes[name]), ltype)
                decls.append(f"{CTYPE[ltype]} {cname} = {init};")
            self.locals[name] = CVal(cname, ltype)
        self.gen.site = self.site(self.fdef)
        self.statements(self.body.body)
        # falling off the end
        if self.kind == "iterator":
            self.code("out->kind = BN_SEQ_NONE;")
        elif self.kind == "condition":
            self.code("*out = 0;")
        out_type = "bn_seq *out" if self.kind != "condition" else "int64_t *out"
        params = "".join(f", {CTYPE[self.ptypes[p]]} p_{_mangle(p)}" for p in self.params)
        lines = [f"static int {self.fname}(bn_w *w, {out_type}{params})",
                 "{", "    int bn_rc = 0, bn_e = 0;"]
        lines += ["    " + d for d in decls]
        lines += ["    " + f"bn_list {name} = BN_LIST0;" for name in self.ctx.lists
                  if not name.startswith("l_")]
        used = ["w", "out", "bn_e"] + [f"p_{_mangle(p)}" for p in self.params] + \
            [self.locals[n].text for n in self.body.locals]
        lines.append("    " + " ".join(f"(void){u};" for u in used))
        lines += self.code.lines
        lines += ["    goto bn_out;", "bn_out:"]
        lines += [f"    free({name}.v);" for name in self.ctx.lists]
        lines += ["    return bn_rc;", "}"]
        return "\n".join(lines)

    def statements(self, body):
        for st in body:
            self.statement(st)

    def assign(self, name, value):
        target = self.locals[name]
        if target.type == "list":
            if value.type == "carray":
                arr, n = value.parts
                self.code(f"{target}.n = 0;")
                if n:
                    i = self.unit.tmp()
                    self.code(f"for (int64_t {i} = 0; {i} < {n}; {i}++)")
                    self.code(f"    if (BN_UNLIKELY(bn_e = bn_list_push(&{target}, {arr}[{i}]))) "
                              f"{self.ctx.fail(self.gen.site, 'bn_e')}")
                return
            if value.type != "list":
                raise _Untranslatable(None, f"assigning a {value.type} to the list '{name}'")
            self.code(f"if (BN_UNLIKELY(bn_e = bn_list_copy(&{target}, &{value}))) "
                      f"{self.ctx.fail(self.gen.site, 'bn_e')}")
            return
        if value.type not in NUMERIC:
            raise _Untranslatable(None, f"assigning a {value.type} to '{name}'")
        self.code(f"{target} = {self.gen.convert(value, target.type)};")

    def statement(self, st):
        gen = self.gen
        saved = gen.site
        gen.site = self.site(st.node)
        self.code(c_comment(f"line {st.node.lineno}: {ast.unparse(st.node).splitlines()[0]}"))
        try:
            getattr(self, "s_" + type(st).__name__)(st)
        finally:
            gen.site = saved

    def s_Unpack(self, st):
        values = []
        for v in st.values:      # every value first, then the assignments (a copy each)
            v = self.gen.value(v)
            if v.type not in NUMERIC:
                raise _Untranslatable(st.node, f"unpacking a {v.type}")
            values.append(v if v.is_const else self.gen.let(v.type, v.text))
        for n, v in zip(st.names, values):
            self.assign(n, v)

    def s_Assign(self, st):
        gen = self.gen
        if self.locals[st.names[0]].type == "list":
            if st.aug:
                raise _Untranslatable(st.node, "'+=' on a list")
            if isinstance(st.value, Var):
                raise _Untranslatable(None, f"'{st.names[0]} = {st.value.name}' (two names for one list)")
            if isinstance(st.value, ListLit) and not st.value.elts:
                for n in st.names:
                    self.code(f"{self.locals[n]}.n = 0;")
                return
            value = gen.value(st.value)
            for n in st.names:
                self.assign(n, value)
            return
        value = gen.value(st.value)
        if len(st.names) > 1:
            value = gen.stable(value)
        for n in st.names:
            self.assign(n, value)

    def s_SetItem(self, st):
        raise _Untranslatable(st.target, "this assignment target")

    def s_If(self, st):
        gen, code = self.gen, self.code
        v = gen.value(st.test)
        if v.is_const:
            self.statements(st.body if v.const else st.orelse)
            return
        code.open(f"if ({gen.truth_of(v)}) {{")
        self.statements(st.body)
        if st.orelse:
            code.close("} else {")
            code.indent += 1
            self.statements(st.orelse)
        code.close()

    def s_While(self, st):
        gen, code = self.gen, self.code
        code.open("for (;;) {")
        v = gen.value(st.test)
        if v.is_const and not v.const:
            code("break;")
        elif not v.is_const:
            code(f"if (!{gen.truth_of(v)}) break;")
        self.statements(st.body)
        code.close()

    def s_For(self, st):
        def body(v):
            self.assign(st.name, v)
            self.statements(st.body)
        self.gen.iterate(st.iterable, body, st.node)

    def s_Break(self, st):
        self.code("break;")

    def s_Continue(self, st):
        self.code("continue;")

    def s_Eval(self, st):
        self.gen.value(st.value)

    def s_Yield(self, st):
        gen = self.gen
        v = gen.value(st.value)
        if v.type not in NUMERIC:
            raise _Untranslatable(st.node.value, "yielding a non-number")
        self.code(f"if (BN_UNLIKELY(bn_e = bn_seq_push(out, {gen.to_num(v)}))) {self.ctx.fail(gen.site, 'bn_e')}")

    def s_Append(self, st):
        gen = self.gen
        lst = self.locals[st.name]
        v = gen.value(st.value)
        if v.type not in INTISH:
            raise _Untranslatable(st.call, f"appending a {v.type} (lists of integers only)")
        self.code(f"if (BN_UNLIKELY(bn_e = bn_list_push(&{lst}, {v}))) {self.ctx.fail(gen.site, 'bn_e')}")

    def s_Return(self, st):
        gen, code = self.gen, self.code
        if self.kind == "closure":
            if st.value is not None:
                gen.value(st.value)
            code("goto bn_out;")
            return
        expr = st.value if st.value is not None else Const(None)
        if self.kind == "condition":
            v = gen.value(expr)
            code(f"*out = {gen.truth_of(v)};")
            code("goto bn_out;")
            return
        if isinstance(expr, Const) and expr.value is None:
            code("out->kind = BN_SEQ_NONE;")
        else:
            v = gen.value(expr)
            if v.type == "range":
                a, b, c = v.parts
                code(f"bn_seq_range(out, {a}, {b}, {c});")
            elif v.type == "carray":
                arr, n = v.parts
                code(f"bn_seq_ints(out, {arr if n else 'NULL'}, {n});")
            elif v.type == "list":
                i = self.unit.tmp()
                code(f"for (int64_t {i} = 0; {i} < {v}.n; {i}++)")
                code(f"    if (BN_UNLIKELY(bn_e = bn_seq_push(out, bn_ni({v}.v[{i}])))) "
                     f"{self.ctx.fail(gen.site, 'bn_e')}")
            elif v.type in NUMERIC:
                code(f"if (BN_UNLIKELY(bn_e = bn_seq_push(out, {gen.to_num(v)}))) {self.ctx.fail(gen.site, 'bn_e')}")
            else:
                raise _Untranslatable(st.node, f"returning a {v.type}")
        code("goto bn_out;")


class _Positions:
    """``id(expr) -> site`` of a lowered body's operations, registered as user sites on first use."""

    def __init__(self, unit, positions):
        self.unit, self.positions = unit, positions

    def get(self, key, default):
        where = self.positions.get(key)
        return default if where is None else self.unit.user_site(*where)


# ---------------------------------------------------------------------------------------------
# User functions: tabulation over the finite domains of their arguments

class _TablePrinter:
    """Print a :class:`~beast.ir.tabulate.Table` as C arrays and a lookup function."""

    def __init__(self, unit):
        self.unit = unit

    def value_tag(self, v):
        if type(v) in (int, bool) and INT64_MIN <= v <= INT64_MAX:
            return 0, int(v)
        if type(v) is float:
            return 1, float_bits(v)
        self.unit.objects.append(v)
        return 2, len(self.unit.objects) - 1

    def emit(self, table, fname):
        info, ptypes, entries = table.info, table.ptypes, table.entries
        unit = self.unit
        tid = unit.tmp()
        n = len(entries)
        width = sum(2 if t == "num" else 1 for t in ptypes)
        keys = [k for key, _ in entries for k in key]
        errs = [unit.site(o[2]) if o[2] is not None else 0 for _, o in entries]
        out = [c_comment(f"'{info.name}' tabulated over {n} argument tuples")]

        def array(ctype, name, values):
            body = ", ".join(str(v) if ctype != "int64_t" else c_int(v) for v in values) or "0"
            out.append(f"static const {ctype} {name}[] BN_UNUSED = {{{body}}};")

        array("int64_t", f"{tid}_k", keys)
        array("int32_t", f"{tid}_e", errs)
        params = "".join(f", {CTYPE[t]} p{i}" for i, t in enumerate(ptypes))
        key_parts = []
        for i, t in enumerate(ptypes):
            if t in INTISH:
                key_parts.append(f"p{i}")
            elif t == "float":
                key_parts.append(f"bn_dbits(p{i})")
            else:
                key_parts += [f"(int64_t)p{i}.f", f"p{i}.f ? bn_dbits(p{i}.d) : p{i}.i"]
        miss = unit.site(TableSite(info.name))
        body = [f"    int64_t key[{width + 1}] = {{{', '.join(key_parts + ['0'])}}};",
                f"    int64_t e = bn_tab_find({tid}_k, {n}, {width}, key);",
                "    (void)w; (void)key;",
                f"    if (BN_UNLIKELY(e < 0)) {{ w->site = {miss}; w->kind = BN_K_TABLE_MISS; return 1; }}"]
        if info.role == "condition":
            array("unsigned char", f"{tid}_v", [1 if o[1] else 0 for _, o in entries])
            sig = f"static int {fname}(bn_w *w, int64_t *out{params})"
            body.append(f"    *out = {tid}_v[e];")
        else:
            kinds, offs, vals, tags = [], [0], [], []
            for _, (kind, payload, _err) in entries:
                if kind == "range":
                    kinds.append(1)
                    vals += list(payload)
                    tags += [0, 0, 0]
                elif kind == "none":
                    kinds.append(2)
                elif kind == "badret":
                    kinds.append(3)
                    unit.objects.append(payload)
                    vals.append(len(unit.objects) - 1)
                    tags.append(0)
                else:
                    kinds.append(0)
                    for v in payload:
                        tag, bits = self.value_tag(v)
                        vals.append(bits)
                        tags.append(tag)
                offs.append(len(vals))
            array("unsigned char", f"{tid}_n", kinds)
            array("int64_t", f"{tid}_o", offs)
            array("int64_t", f"{tid}_v", vals)
            array("unsigned char", f"{tid}_t", tags)
            sig = f"static int {fname}(bn_w *w, bn_seq *out{params})"
            body += [f"    int64_t o = {tid}_o[e], m = {tid}_o[e + 1] - o, i;",
                     f"    switch ({tid}_n[e]) {{",
                     f"    case 1: bn_seq_range(out, {tid}_v[o], {tid}_v[o + 1], {tid}_v[o + 2]); break;",
                     "    case 2: out->kind = BN_SEQ_NONE; break;",
                     f"    case 3: out->kind = BN_SEQ_BADRET; out->extra = {tid}_v[o]; break;",
                     "    default:",
                     "        for (i = 0; i < m; i++) {",
                     "            bn_num x = BN_NUM0; int r;",
                     f"            x.f = {tid}_t[o + i]; x.i = {tid}_v[o + i];",
                     "            if (x.f == 1) { x.d = bn_bitsd(x.i); x.i = 0; }",
                     "            if (BN_UNLIKELY(r = bn_seq_push(out, x))) "
                     f"{{ w->site = {miss}; w->kind = r; return 1; }}",
                     "        }",
                     "    }"]
        body += [f"    if ({tid}_e[e]) {{ w->site = {tid}_e[e]; w->kind = BN_K_EXCEPTION; return 1; }}",
                 "    return 0;"]
        out += [sig, "{"] + body + ["}"]
        return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# The unit: global state of one printing

class _Unit:
    def __init__(self, program, pyfuncs):
        self.program = program
        self._pyfuncs = pyfuncs
        self.sites = [None]
        self.site_ids = {}
        self.objects = []
        self.statics = []
        self.functions = {}        # ident -> (C name, text)
        self.tabulated, self.translated = [], []
        self.ntmp = 0
        self.nseq = 0
        self.arrays = {}
        self.keep = []             # expression nodes whose ids key positions
        self.tabulator = Tabulator(program, self.pyfuncs)
        self.tables = _TablePrinter(self)

    def pyfuncs(self):
        if callable(self._pyfuncs):
            self._pyfuncs = self._pyfuncs()
        return self._pyfuncs

    def tmp(self):
        self.ntmp += 1
        return f"bn_t{self.ntmp}"

    def seq_slot(self):
        slot = self.nseq
        self.nseq += 1
        return slot

    def site(self, info):
        self.sites.append(info)
        return len(self.sites) - 1

    def user_site(self, filename, lineno, col, end):
        k = (filename, lineno, col, end)
        if k not in self.site_ids:
            self.site_ids[k] = self.site(UserSite(*k))
        return self.site_ids[k]

    def int_array(self, values):
        values = tuple(values)
        if values not in self.arrays:
            name = f"bn_vals{len(self.arrays) + 1}"
            body = ", ".join(c_int(v) for v in values) or "0"
            self.statics.append(f"static const int64_t {name}[] BN_UNUSED = {{{body}}};")
            self.arrays[values] = name
        return self.arrays[values]

    def param_types(self, info):
        types = self.program.types
        out = []
        for a in info.node_args:
            t = types.get(a, "num")
            out.append(t if t in CTYPE else "num")
        return out

    def function(self, info):
        """The C function for a user function: translated, else tabulated, else an error."""
        if info.ident in self.functions:
            return self.functions[info.ident][0]
        fname = f"bn_fn_{_mangle(info.ident)}"
        self.functions[info.ident] = (fname, None)
        try:
            if FORCE_TABULATE:
                raise _Untranslatable(info.fdef, "(tabulation forced)")
            text = _FuncGen(self, info, fname).translate()
            self.translated.append(info.name)
        except _Untranslatable as why:
            node = why.node if why.node is not None and hasattr(why.node, "lineno") else info.fdef
            try:
                text = self.tables.emit(self.tabulator.tabulate(info, self.param_types(info)), fname)
                self.tabulated.append(info.name)
            except Untabulatable as tab:
                raise SpaceError.at(
                    node, info.filename,
                    f"the C backend cannot translate {why.reason} in '{info.name}', and cannot "
                    f"tabulate '{info.name}' instead: {tab}",
                    hint="use integers, if/elif/else, while, for over range() or a list, and local "
                         "lists of integers; or let the function's arguments take few values") from None
        self.functions[info.ident] = (fname, text)
        return fname


# ---------------------------------------------------------------------------------------------
# The loop nest

def claim_depths(program: Program) -> int:
    """The deepest block (0 = before the first loop) that is a chain: lets and checks, then one
    loop as its last statement. Work items are the runs of that loop; -1 when there is none."""
    depth, block = -1, program.body
    d = 0
    while d <= MAX_CLAIM_DEPTH and block and isinstance(block[-1], Loop) \
            and all(isinstance(s, (Let, Check, Tally)) for s in block[:-1]):
        depth = d
        block = block[-1].body
        d += 1
    return depth


class _WalkCtx:
    def __init__(self, printer):
        self.printer = printer
        self.bound = 0

    def fail(self, site, kind):
        self.printer.fail_used.add(self.bound)
        return f"{{ w->site = {site}; w->kind = {kind}; w->nbound = {self.bound}; goto bn_f{self.bound}; }}"

    def fail_prop(self):
        self.printer.fail_used.add(self.bound)
        return f"{{ w->nbound = {self.bound}; goto bn_f{self.bound}; }}"

    def new_list(self):
        raise _Untranslatable(None, "a list in the loop nest")


class CPrinter:
    """Print a :class:`~beast.ir.Program` as C."""

    def __init__(self, program: Program, pyfuncs=None):
        self.program = program
        self.unit = _Unit(program, pyfuncs)
        self.code = _Code(1)
        self.ctx = _WalkCtx(self)
        self.gen = _Gen(self.unit, self.code, self.resolve, self.ctx)
        self.py = PyExpr(program.types)
        self.loop_vars = {}        # var -> C name
        self.derived = {}          # var -> (C name, type)
        self.fail_used = set()
        self.nloops = 0
        self.claim_depth = claim_depths(program)
        for st in walk_statements(program.body):
            if isinstance(st, Loop):
                self.loop_vars[st.var] = f"v_{_mangle(st.var)}"
            elif isinstance(st, Let):
                t = program.types.get(st.var, st.type)
                self.derived[st.var] = (f"d_{_mangle(st.var)}", t if t in CTYPE else "num")

    def resolve(self, name):
        if name in self.loop_vars:
            return CVal(self.loop_vars[name], "int")
        if name in self.derived:
            cname, t = self.derived[name]
            return CVal(cname, t)
        raise BeastError(f"internal error: the loop nest reads '{name}', which it does not define")

    def compile(self, fn, site, bound):
        """Run ``fn`` with errors attributed to ``site`` and ``bound`` loops."""
        self.gen.site, self.ctx.bound = site, bound
        try:
            return fn()
        except _Untranslatable as why:
            raise BeastError(f"the C backend cannot compile {why.reason} in the loop nest") from None

    def node_site(self, stmt, lets):
        return self.unit.site(NodeSite(getattr(stmt, "node", None), stmt, tuple(lets)))

    # -- statements
    def block(self, stmts, depth, loops, lets):
        """``loops``: label ids of the enclosing loops (innermost last); ``lets``: lets in scope."""
        lets = list(lets)
        code = self.code
        for i, s in enumerate(stmts):
            if isinstance(s, Let):
                code(c_comment(f"let {s.var} = {self.py(s.expr)}"))
                site = self.node_site(s, lets)
                cname, t = self.derived[s.var]
                value = self.compile(lambda: self.gen.value(s.expr), site, depth)
                code(f"{cname} = {self.gen.convert(value, t)};")
                lets.append(s)
            elif isinstance(s, Check):
                code(c_comment(f"check {s.name}: {self.py(s.expr)}" + (" (break)" if s.exit == "break" else "")))
                site = self.node_site(s, lets)
                test = self.compile(lambda: self.gen.truth(s.expr), site, depth)
                if not loops:
                    target = "return 0;"
                elif s.exit == "break":
                    self.used_labels.add(f"bn_b{loops[-1]}")
                    target = f"goto bn_b{loops[-1]};"
                else:
                    self.used_labels.add(f"bn_n{loops[-1]}")
                    target = f"goto bn_n{loops[-1]};"
                if test == "1":
                    code(target)
                elif test != "0":
                    code(f"if ({test}) {target}")
            elif isinstance(s, Loop):
                claim = depth <= self.claim_depth and i == len(stmts) - 1 and self.chain_ok(stmts)
                if claim:
                    code("if (BN_UNLIKELY(__atomic_load_n(w->cancel, __ATOMIC_RELAXED))) return 2;")
                    code(f"if (w->split == {depth}) {{ int bn_c = bn_claim(w); if (bn_c < 0) return 2; "
                         f"if (bn_c == 0) goto bn_s{depth}; }}")
                self.loop(s, depth, loops, lets)
                if claim:
                    code(f"if (w->split == {depth} && bn_end(w) < 0) return 2;")
                    code(f"bn_s{depth}:;")
            elif isinstance(s, Tally):
                code(f"w->tally[{s.slot}]++;")
            elif isinstance(s, Emit):
                code("if (w->rows) {")
                code("    int64_t *bn_r = bn_row(w);")
                self.ctx.bound = depth
                code(f"    if (BN_UNLIKELY(!bn_r)) {self.ctx.fail(0, 'BN_K_NO_MEMORY')}")
                for j, col in enumerate(s.columns):
                    code(f"    bn_r[{j}] = {self.resolve(col).text};")
                code("} else {")
                code("    w->count++;")
                code("}")
            else:
                raise BeastError(f"internal error: unknown statement {s!r}")

    @staticmethod
    def chain_ok(stmts):
        return all(isinstance(s, (Let, Check, Tally)) for s in stmts[:-1])

    # -- pure counting (as the Python backend's count mode does it)
    def pure_nest(self, loop):
        return pure_nest(loop, self.program.types)

    def pure_count(self, nest, depth, lets):
        """Count a nest of loops that only multiply, as the loops would: lengths from the outside
        in, each sequence evaluated at the first value of the loops around it (its value does not
        depend on them), none after an empty one; an error names that loop and the values bound."""
        code = self.code
        pc, done = self.unit.tmp(), self.unit.tmp()
        code(f"int64_t {pc} = 1;")
        for j, l in enumerate(nest):
            seq = l.seq
            site = self.node_site(l, lets)
            var = self.loop_vars[l.var]

            def body():
                if isinstance(seq, ScalarSeq):
                    v = self.gen.value(seq.value)
                    code(f"{var} = {v};")
                    return
                if isinstance(seq, ValuesSeq):
                    values = list(seq.values)
                    if not values:
                        code(f"{pc} = 0;")
                        code(f"goto {done};")
                        return
                    code(f"{var} = {c_int(values[0])};")
                    code(f"if (BN_UNLIKELY(__builtin_mul_overflow({pc}, {len(values)}, &{pc}))) "
                         f"{self.ctx.fail(site, 'BN_K_COUNT_OVERFLOW')}")
                    return
                args = [self.gen.value(x) for x in seq.exprs()]
                a, b, c = self.gen.range_args(args, site)
                m = self.unit.tmp()
                code(f"uint64_t {m} = bn_range_len({a}, {b}, {c});")
                code(f"if ({m} == 0u) {{ {pc} = 0; goto {done}; }}")
                code(f"if (BN_UNLIKELY({m} > (uint64_t)INT64_MAX || __builtin_mul_overflow({pc}, (int64_t){m}, &{pc}))) "
                     f"{self.ctx.fail(site, 'BN_K_COUNT_OVERFLOW')}")
                code(f"{var} = {a};")
            self.compile(body, site, depth + j)
        code(f"goto {done};")
        code(f"{done}:")
        code(f"if (BN_UNLIKELY(__builtin_add_overflow(w->count, {pc}, &w->count))) "
             f"{{ w->site = 0; w->kind = BN_K_COUNT_OVERFLOW; w->nbound = {depth}; goto bn_f{depth}; }}")
        self.fail_used.add(depth)

    # -- loops
    def loop(self, s, depth, loops, lets):
        code = self.code
        self.nloops += 1
        lid = self.nloops
        var = self.loop_vars[s.var]
        site = self.node_site(s, lets)
        code(c_comment(f"for {s.var} in {self.describe(s.seq)}"))
        nest = self.pure_nest(s)
        if nest is not None:
            code.open("if (!w->rows) {")
            self.pure_count(nest, depth, lets)
            code.close("} else {")
            code.indent += 1
        code.open("{")
        inner_loops = loops + [lid]
        seq = s.seq

        def body():
            self.block(s.body, depth + 1, inner_loops, lets)
            if f"bn_n{lid}" in self.used_labels:
                code(f"bn_n{lid}:;")

        if isinstance(seq, RangeSeq):
            def setup():
                args = [self.gen.value(x) for x in seq.exprs()]
                return self.gen.range_args(args, site)
            a, b, c = self.compile(setup, site, depth)
            n, i = self.unit.tmp(), self.unit.tmp()
            code(f"uint64_t {n} = bn_range_len({a}, {b}, {c});")
            code.open(f"for (uint64_t {i} = 0; {i} < {n}; {i}++) {{")
            code(f"{var} = bn_range_at({a}, {c}, {i});")
            body()
            code.close()
        elif isinstance(seq, ValuesSeq):
            i = self.unit.tmp()
            values = list(seq.values)
            for v in values:
                if not INT64_MIN <= v <= INT64_MAX:
                    raise BeastError(f"iterator '{s.var}' has the value {v}, which does not fit in 64 bits")
            arr = self.unit.int_array(values) if values else None
            code.open(f"for (int64_t {i} = 0; {i} < {len(values)}; {i}++) {{")
            code(f"{var} = {arr}[{i}];" if arr else f"{var} = 0;")
            body()
            code.close()
        elif isinstance(seq, ScalarSeq):
            value = self.compile(lambda: self.gen.value(seq.value), site, depth)
            self.assign_value(var, value, s, depth)
            code.open("{")
            body()
            code.close()
        elif isinstance(seq, SolveSeq):
            def guard():
                return self.gen.truth(seq.guard)
            g = self.compile(guard, site, depth)
            code.open(f"if ({g}) {{")

            def solve():
                v = self.gen.value(seq.value)
                if v.type not in INTISH:
                    raise _Untranslatable(None, f"a solved loop over a {v.type} value")
                v = self.gen.stable(v)
                args = [self.gen.value(x) for x in seq.base.exprs()]
                a, b, c = self.gen.range_args(args, site)
                return v, a, b, c
            v, a, b, c = self.compile(solve, site, depth)
            code.open(f"if (bn_range_has({a}, {b}, {c}, {v})) {{")
            code(f"{var} = {v};")
            body()
            code.close()
            code.close()
        elif isinstance(seq, DivisorSeq):
            it = self.unit.tmp()
            self.compile(lambda: self.divisors(seq, it, site), site, depth)
            i = self.unit.tmp()
            code(f"int64_t {i};")
            code.open(f"while (bn_divs_next(&{it}, &{i})) {{")
            code(f"{var} = {i};")
            body()
            code.close()
        else:   # CallSeq, SetOpSeq: a scratch sequence
            slot = self.unit.seq_slot()
            q = f"bn_q{lid}"
            code(f"bn_seq *{q} = &w->seqs[{slot}];")
            self.compile(lambda: self.fill(seq, q, site, s), site, depth)
            i, x = self.unit.tmp(), self.unit.tmp()
            vsite = self.unit.site(LoopValueSite(s.node, s.var))
            code.open(f"for (int64_t {i} = 0; {i} < {q}->n; {i}++) {{")
            code(f"bn_num {x} = bn_seq_get({q}, {i});")
            self.ctx.bound = depth
            code(f"if (BN_UNLIKELY({x}.f)) {{ w->bad = {x}; {self.ctx.fail(vsite, 'BN_K_NON_INTEGER')[2:]}")
            code(f"{var} = {x}.i;")
            body()
            code.close()
            if isinstance(seq, CallSeq) and seq.closure:
                self.ctx.bound = depth
                self.fail_used.add(depth)
                code(f"if (BN_UNLIKELY({q}->pkind)) {{ w->site = {q}->psite; w->kind = {q}->pkind; "
                     f"w->nbound = {depth}; goto bn_f{depth}; }}")
        code.close()
        if nest is not None:
            code.close()
        if f"bn_b{lid}" in self.used_labels:
            code(f"bn_b{lid}:;")

    def assign_value(self, var, value, s, depth):
        code = self.code
        if value.type in INTISH:
            code(f"{var} = {value};")
            return
        vsite = self.unit.site(LoopValueSite(s.node, s.var))
        self.ctx.bound = depth
        if value.type == "float":
            code(f"w->bad = bn_nf({value}); {self.ctx.fail(vsite, 'BN_K_NON_INTEGER')}")
            code(f"{var} = 0;")
            return
        v = self.gen.stable(value)
        code(f"if (BN_UNLIKELY({v}.f)) {{ w->bad = {v}; {self.ctx.fail(vsite, 'BN_K_NON_INTEGER')[2:]}")
        code(f"{var} = {v}.i;")

    def divisors(self, seq, it, site):
        """Declare and start the divisor iteration ``it`` (n, then start and stop, as Python)."""
        gen, code = self.gen, self.code
        start, stop, _ = seq.base.exprs()
        vals = [gen.stable(gen.value(x)) for x in (seq.n, start, stop)]
        for v in vals:
            if v.type not in INTISH:
                raise _Untranslatable(None, f"a divisor loop over a {v.type} value")
        n, a, b = vals
        code(f"if (BN_UNLIKELY({n} != 0 && bn_divs_direct({a}, {b}) && {a} <= 0 && {b} > 0)) "
             f"{self.ctx.fail(site, 'BN_K_ZERO_MOD')}")
        code(f"bn_divs {it};")
        code(f"bn_divs_init(&{it}, {n}, {a}, {b});")

    def fill(self, seq, q, site, loop):
        """Fill the scratch sequence ``q`` (immediate errors fail now; a closure's stay pending)."""
        code, gen = self.code, self.gen
        if isinstance(seq, CallSeq):
            info = self.program.funcs.get(seq.func)
            if info is None:
                raise BeastError(f"internal error: unknown function {seq.func}")
            fname = self.unit.function(info)
            args = [gen.value(a) for a in seq.args]
            params = self.unit.param_types(info)
            texts = [gen.convert(a, t) for a, t in zip(args, params)]
            code(f"bn_seq_reset({q});")
            call = f"{fname}(w, {q}{''.join(', ' + t for t in texts)})"
            if seq.closure:
                code(f"if (BN_UNLIKELY({call})) {{ {q}->psite = w->site; {q}->pkind = w->kind; }}")
            else:
                code(f"if (BN_UNLIKELY({call})) {self.ctx.fail_prop()}")
                vsite = self.unit.site(LoopValueSite(loop.node, loop.var))
                code(f"if (BN_UNLIKELY({q}->kind == BN_SEQ_NONE)) {self.ctx.fail(vsite, 'BN_K_RETURNED_NONE')}")
                code(f"if (BN_UNLIKELY({q}->kind == BN_SEQ_BADRET)) {{ w->bad.i = {q}->extra; "
                     f"{self.ctx.fail(vsite, 'BN_K_BAD_RETURN')[2:]}")
            return
        if isinstance(seq, RangeSeq):
            args = [gen.value(x) for x in seq.exprs()]
            a, b, c = gen.range_args(args, site)
            code(f"bn_seq_range({q}, {a}, {b}, {c});")
            return
        if isinstance(seq, ValuesSeq):
            values = list(seq.values)
            code(f"bn_seq_ints({q}, {self.unit.int_array(values) if values else 'NULL'}, {len(values)});")
            return
        if isinstance(seq, ScalarSeq):
            v = gen.value(seq.value)
            code(f"bn_seq_reset({q});")
            code(f"if (BN_UNLIKELY(bn_e = bn_seq_push({q}, {gen.to_num(v)}))) {self.ctx.fail(site, 'bn_e')}")
            return
        if isinstance(seq, SolveSeq):
            code(f"bn_seq_reset({q});")
            g = gen.truth(seq.guard)
            code.open(f"if ({g}) {{")
            v = gen.stable(gen.value(seq.value))
            if v.type not in INTISH:
                raise _Untranslatable(None, f"a solved loop over a {v.type} value")
            args = [gen.value(x) for x in seq.base.exprs()]
            a, b, c = gen.range_args(args, site)
            code(f"if (bn_range_has({a}, {b}, {c}, {v}) && BN_UNLIKELY(bn_e = bn_seq_push({q}, bn_ni({v})))) "
                 f"{self.ctx.fail(site, 'bn_e')}")
            code.close()
            return
        if isinstance(seq, DivisorSeq):
            it, v = self.unit.tmp(), self.unit.tmp()
            self.divisors(seq, it, site)
            code(f"bn_seq_reset({q});")
            code(f"int64_t {v};")
            code(f"while (bn_divs_next(&{it}, &{v}))")
            code(f"    if (BN_UNLIKELY(bn_e = bn_seq_push({q}, bn_ni({v})))) {self.ctx.fail(site, 'bn_e')}")
            return
        if isinstance(seq, SetOpSeq):
            ql, qr = self.unit.tmp(), self.unit.tmp()
            code(f"bn_seq *{ql} = &w->seqs[{self.unit.seq_slot()}];")
            code(f"bn_seq *{qr} = &w->seqs[{self.unit.seq_slot()}];")
            self.fill(seq.left, ql, site, loop)
            self.fill(seq.right, qr, site, loop)
            for side in (ql, qr):
                self.fail_used.add(self.ctx.bound)
                code(f"if (BN_UNLIKELY({side}->pkind)) {{ w->site = {side}->psite; w->kind = {side}->pkind; "
                     f"w->nbound = {self.ctx.bound}; goto bn_f{self.ctx.bound}; }}")
            op = {"union": 0, "intersection": 1, "difference": 2}[seq.op]
            code(f"if (BN_UNLIKELY(bn_e = bn_setop({q}, {op}, {ql}, {qr}))) {self.ctx.fail(site, 'bn_e')}")
            return
        raise BeastError(f"internal error: unknown sequence {seq!r}")

    def describe(self, seq):
        if isinstance(seq, RangeSeq):
            return f"range({', '.join(self.py(x) for x in seq.exprs())})"
        if isinstance(seq, ValuesSeq):
            return repr(list(seq.values))
        if isinstance(seq, ScalarSeq):
            return f"({self.py(seq.value)},)"
        if isinstance(seq, CallSeq):
            return f"{seq.func}({', '.join(self.py(a) for a in seq.args)})"
        if isinstance(seq, SolveSeq):
            return f"({self.py(seq.value)},) if {self.py(seq.guard)} and in {self.describe(seq.base)}"
        if isinstance(seq, SetOpSeq):
            return f"{seq.op}({self.describe(seq.left)}, {self.describe(seq.right)})"
        if isinstance(seq, DivisorSeq):
            return f"divisors of {self.py(seq.n)} in {self.describe(seq.base)}"
        return type(seq).__name__

    # -- the file
    def render(self) -> CSource:
        p = self.program
        self.used_labels = set()
        self.block(p.body, 0, [], [])
        walk_lines = self.code.lines
        ncols = len(p.columns)
        out = [f"/* beast enumerator for space {p.name!r}: generated code, do not edit */",
               c_comment(f"loop order: {', '.join(p.loop_order) or '(no loops)'}"),
               c_comment(f"columns: {', '.join(p.columns) or '(none)'}"),
               _prelude(ncols, self.unit.nseq, len(p.tallies)),
               f"#define BN_CLAIM_DEPTH {self.claim_depth}", ""]
        out += self.unit.statics
        out.append("")
        for ident, (fname, text) in self.unit.functions.items():
            out.append(text)
            out.append("")
        out.append("static int bn_walk(bn_w *w)")
        out.append("{")
        out.append("    int bn_e = 0;")
        for var, cname in self.loop_vars.items():
            out.append(f"    int64_t {cname} = 0;")
        for var, (cname, t) in self.derived.items():
            out.append(f"    {CTYPE[t]} {cname} = {ZERO[t]};")
        used = ["bn_e"] + list(self.loop_vars.values()) + [c for c, _ in self.derived.values()]
        out.append("    " + " ".join(f"(void){u};" for u in used))
        out += walk_lines
        out.append("    return 0;")
        # failures: record the bound loop values (loop order), deepest first, falling through
        order = list(p.loop_order)
        if self.fail_used:
            top = max(self.fail_used)
            for b in range(top, -1, -1):
                if b in self.fail_used:
                    out.append(f"bn_f{b}:")
                if b > 0:
                    name = order[b - 1] if b - 1 < len(order) else None
                    cname = self.loop_vars.get(name)
                    out.append(f"    w->cfg[{b - 1}] = {cname if cname else 0};")
            out.append("    return 1;")
        out.append("}")
        text = "\n".join(out) + "\n"
        return CSource(text, self.unit.sites, self.unit.objects, tuple(p.columns), self.claim_depth,
                       tuple(self.unit.tabulated), tuple(self.unit.translated))


def print_c(program: Program, pyfuncs=None) -> CSource:
    """Generate the C enumerator of a program. ``pyfuncs``: the user functions compiled in Python
    (ident -> callable, or a callable returning that dict), needed only to tabulate."""
    return CPrinter(program, pyfuncs).render()
