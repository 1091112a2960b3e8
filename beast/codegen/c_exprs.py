"""The C expression compiler: Python's semantics on typed values, flattened into C statements with
explicit overflow and division checks (shared by the loop nest and the function bodies that
:mod:`beast.codegen.c` prints)."""
from __future__ import annotations

import builtins
import math
import re

from ..errors import BeastError
from ..expr import COMPARES, BoolOp, Compare, Const, Not, Select, Var, fold_binop
from ..ir.body import ConstArr, ListLit, Untranslatable
from ..ir.lower import select_type as _select_type
from .exprs import ATOM, ExprPrinter

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
CTYPE = {"int": "int64_t", "bool": "int64_t", "float": "double", "num": "bn_num"}
ZERO = {"int": "0", "bool": "0", "float": "0.0", "num": "BN_NUM0"}
INTISH = ("int", "bool")
NUMERIC = ("int", "bool", "float", "num")
CMP_CODE = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5}

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
        self.pure_printer = CExpr(self.resolve)

    # -- helpers

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
                v = self.resolve(e.name)
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
            return self.resolve(e.name).type
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
        return self.resolve(e.name)

    def v_PrefixValue(self, e):
        # sampling (beast.ir.prefix): a value of the prefix the runtime passes in w->pre
        return CVal(f"w->pre[{e.index}]", "int")

    # -- arithmetic
    def v_BinOp(self, e):
        left = self.value(e.left)
        right = self.value(e.right)
        return self.binop(e.op, left, right, self.site_of(e), e)

    def _fold(self, op, left, right):
        value = fold_binop(op, left.const, right.const)
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

    # -- function-body constructs (and/or, chains, comprehensions and folds are statements by now:
    # beast.ir.desugar)
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
        else:
            self.iterate(e.iterable, lambda v: push(v), e)
        return CVal(lst, "list")

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
        """len(); the folds that loop are statements by now (beast.ir.desugar)."""
        v = self.value(e.iterable)
        if v.type == "list":
            return CVal(f"{v}.n", "int")
        if v.type == "carray":
            return self.v_Const(Const(v.parts[1]))
        if v.type == "range":
            return CVal(f"(int64_t)bn_range_len({v.parts[0]}, {v.parts[1]}, {v.parts[2]})", "int")
        raise _Untranslatable(e, f"len() of a {v.type}")

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
