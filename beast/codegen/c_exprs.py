"""The C expression compiler: Python's semantics on typed values, flattened into C statements with
explicit overflow and division checks (shared by the loop nest and the function bodies that
:mod:`beast.codegen.c` prints)."""
from __future__ import annotations

import math
import re

from ..errors import BeastError
from ..ir.ops import INTISH, range_arg_checks

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
CTYPE = {"int": "int64_t", "bool": "int64_t", "float": "double", "num": "bn_num", "list": "bn_list"}
ZERO = {"int": "0", "bool": "0", "float": "0.0", "num": "BN_NUM0", "list": "BN_LIST0"}
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
    if text.isascii() and text.isprintable() and "*/" not in text and "??" not in text:
        return f"/* {text} */"          # the common case, without the per-character pass
    text = text.replace("*/", "* /").replace("??", "? ?")
    text = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)
    return f"/* {text} */"


def c_prologue(decls, used) -> list:
    """A C function's opening declarations, and ``(void)`` on each name that may go unused."""
    return ["    " + d for d in decls] + ["    " + " ".join(f"(void){u};" for u in used)]


def _mangle(name: str) -> str:
    if _is_c_name(name):
        return name                     # the common case, without compiling a pattern on a first run
    return re.sub(r"[^0-9A-Za-z_]", lambda m: f"_{ord(m.group()):x}_", name)


def _is_c_name(text: str) -> bool:
    """``text`` matches ``[A-Za-z_][A-Za-z0-9_]*``."""
    return text.isascii() and text.isidentifier()


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

    def capture(self, make):
        """Run ``make()`` with the lines it prints collected one level deeper: its result and those
        lines (printing stops at the first error, so nothing is restored on one)."""
        outer, self.lines = self.lines, []
        self.indent += 1
        result = make()
        self.indent -= 1
        inner, self.lines = self.lines, outer
        return result, inner


# ---------------------------------------------------------------------------------------------
# The expression printer: the typed, checked ops of beast.ir.ops, flattened into C statements.

OVERFLOW = {"+": "add", "-": "sub", "*": "mul"}
HELPER = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow",
          "<<": "lshift", ">>": "rshift"}
C_HELPER = ("//", "%", "**", "<<", ">>")
PREFIX = {"pos": "{0}", "invert": "(~{0})", "truth": "{1}", "not": "(!{1})"}
UNARY = {("neg", "ii"): "(-{0})", ("neg", "dd"): "(-{0})", ("abs", "ii"): "({0} < 0 ? -{0} : {0})",
         ("abs", "dd"): "fabs({0})"}
TRUEDIV = {"ii": ("0", "BN_K_ZERO_TRUEDIV", "bn_truediv_ii({0}, {1})"),
           "dd": ("0.0", "BN_K_ZERO_FTRUEDIV", "({0} / {1})")}
CMP = {"ii": "({0} {2} {1})", "dd": "({0} {2} {1})", "nn": "bn_cmpres(bn_cmp_nn({0}, {1}), {3})",
       "di": "bn_cmpres(bn_cmp_di({0}, {1}), {3})", "id": "bn_cmpres(bn_cmp_id({0}, {1}), {3})"}
IN_FN = {("range", "ii"): "bn_range_has({2}, {3}, {4}, {0})", ("range", "dd"): "bn_range_has_d({2}, {3}, {4}, {0})",
         ("list", "ii"): "bn_list_has(&{1}, {0})", ("list", "dd"): "bn_list_has_d(&{1}, {0})",
         ("carray", "ii"): "bn_ints_has({2}, {3}, {0})", ("carray", "dd"): "bn_ints_has_d({2}, {3}, {0})"}
TRUTH = {"bool": "{0}", "int": "({0} != 0)", "float": "({0} != 0.0)", "num": "bn_truth({0})", "list": "({0}.n != 0)",
         "range": "(bn_range_len({1}, {2}, {3}) != 0u)"}
AS = {("int", "bool"): "{}", ("num", "int"): "bn_ni({})", ("num", "bool"): "bn_ni({})", ("num", "float"): "bn_nf({})",
      ("float", "int"): "(double)({})", ("float", "bool"): "(double)({})", ("float", "num"): "bn_tod({})"}
# a loop over a range, a list, a constant array: (before it, its header, the element); {0}-{2}: the parts
ITERATE = {"range": ("uint64_t {n} = bn_range_len({0}, {1}, {2});", "for (uint64_t {i} = 0; {i} < {n}; {i}++) {{",
                     "bn_range_at({0}, {2}, {i})"),
           "list": (None, "for (int64_t {i} = 0; {i} < {c}.n; {i}++) {{", "{c}.v[{i}]"),
           "carray": (None, "for (int64_t {i} = 0; {i} < {1}; {i}++) {{", "{0}[{i}]")}


class _Gen:
    """Print expressions into ``code``: the ops of :class:`beast.ir.ops.Lowering`, lowered already
    (``ops``: a function body's, or the nest's from :mod:`beast.ir.nestplan`). ``resolve(name) ->
    CVal``; ``leave(bound)``: the C that ends a failure (in the nest: go to the failure label of
    ``bound`` loops, default ``self.bound``; in a function: return 1)."""

    def __init__(self, unit, code, resolve, leave, ops=None):
        self.unit, self.code, self.resolve, self.leave = unit, code, resolve, leave
        self.site = 0           # the statement's site (IR) or the function's fallback site
        self.bound = 0          # in the nest: the loops bound at the statement
        self.ops = ops or {}    # id(expr) -> its op
        self.lists = []         # list temporaries (function bodies)

    # -- helpers
    def site_at(self, where):
        return self.site if where is None else self.unit.user_site(*where)

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
        if v.is_const or _is_c_name(v.text or ""):
            return v
        return self.let(v.type, v.text)

    def fail(self, site, kind, bound=None, first=""):
        """Record the error (after ``first``, a statement) and leave."""
        return f"{{ {first}w->site = {site}; w->kind = {kind}; {self.leave(bound)} }}"

    def fail_prop(self):
        """Leave with the error a callee recorded."""
        return f"{{ {self.leave(None)} }}"

    def guard(self, cond, site, kind):
        """``if (cond)``: fail at ``site`` with the error ``kind``."""
        self.code(f"if (BN_UNLIKELY({cond})) {self.fail(site, kind)}")

    def call(self, call, site):
        """A prelude call that returns an error kind (0: fine)."""
        self.guard(f"bn_e = {call}", site, "bn_e")

    def push_each(self, n, call, site):
        """``call`` (an error-returning push, ``{i}`` its index) for each index below ``n``."""
        i = self.unit.tmp()
        self.code(f"for (int64_t {i} = 0; {i} < {n}; {i}++)")
        self.code(f"    if (BN_UNLIKELY(bn_e = {call.format(i=i)})) {self.fail(site, 'bn_e')}")

    def to_seq(self, q, v):
        """Give the sequence ``q`` (fresh or reset) the values of ``v``: a range, a constant array, a
        list or one number."""
        if v.type == "range":
            self.code(f"bn_seq_range({q}, {v.parts[0]}, {v.parts[1]}, {v.parts[2]});")
        elif v.type == "carray":
            arr, n = v.parts
            self.code(f"bn_seq_ints({q}, {arr if n else 'NULL'}, {n});")
        elif v.type == "list":
            self.push_each(f"{v}.n", f"bn_seq_push({q}, bn_ni({v}.v[{{i}}]))", self.site)
        else:
            self.call(f"bn_seq_push({q}, {self.to_num(v)})", self.site)

    def check(self, call, site, type_):
        """``out = helper(&out, ...)``: a helper returning an error kind (0: fine)."""
        t = self.tmp(type_)
        self.call(call.format(out='&' + t), site)
        return CVal(t, type_)

    # -- conversions
    def to_num(self, v):
        return self.as_type(v, "num")

    def to_double(self, v):
        return self.as_type(v, "float")

    def as_type(self, v, to):
        return v.text if v.type == to else AS[to, v.type].format(v.text)

    def convert(self, v, to):
        if v.type == to or (v.type in INTISH and to in INTISH):
            return v.text
        if to == "num" or to == "float" and v.type in INTISH:
            return self.as_type(v, to)
        raise BeastError(f"internal error: cannot store a {v.type} value as {to}")

    def truth_of(self, v):
        if v.is_const and v.type in ("int", "bool", "float", "str", "none"):
            return "1" if v.const else "0"
        return TRUTH[v.type].format(v.text, *(v.parts or ()))

    # -- entry points
    def value(self, e) -> CVal:
        return self.emit(self.ops[id(e)])

    def emit(self, op) -> CVal:
        return getattr(self, "e_" + op.kind)(op)

    def operands(self, op):
        """The values of ``op``'s operands, then its site (registered after them)."""
        values = [self.emit(a) for a in op.args]
        return values, self.site_at(op.where)

    # -- leaves
    def e_const(self, op):
        if op.args or op.where is not None:     # a folded constant: its operands' sites all the same
            self.operands(op)
        v, t = op.value, op.type
        text = ("1" if v else "0") if t == "bool" else c_int(v) if t == "int" else c_float(v) if t == "float" \
            else None
        return CVal(text, t, v)

    def e_carray(self, op):
        arr = self.unit.int_array(op.value)
        return CVal(arr, "carray", op.value, parts=(arr, len(op.value)))

    def e_var(self, op):
        return self.resolve(op.value)

    def e_prefix(self, op):
        # sampling (beast.ir.prefix): a value of the prefix the runtime passes in w->pre
        return CVal(f"w->pre[{op.value}]", "int")

    def e_then(self, op):
        self.emit(op.args[0])
        return self.emit(op.args[1])

    # -- arithmetic
    def spell(self, values, form):
        """The operands' texts in ``form``: doubles (dd), nums (nn), else as they are."""
        conv = self.to_num if form == "nn" else self.to_double if form == "dd" else str
        return [conv(v) for v in values]

    def e_binop(self, op):
        (a, b), site = self.operands(op)
        o, form = op.op, op.form
        if o in OVERFLOW and form == "ii" and op.check:
            t = self.tmp("int")
            self.guard(f"__builtin_{OVERFLOW[o]}_overflow({a}, {b}, &{t})", site, "BN_K_OVERFLOW")
            return CVal(t, "int")
        if o == "/" and form != "nn":           # on doubles, the divisor tested first
            if form == "dd":
                b = self.stable(CVal(self.to_double(b), "float"))
            zero, kind, text = TRUEDIV[form]
            if op.check:
                self.guard(f"{b} == {zero}", site, kind)
            text = text.format(*self.spell((a, b), form))
            return self.let("float", text) if form == "ii" else CVal(text, "float")
        x, y = self.spell((a, b), form)
        if form == "nn" or o in C_HELPER:       # Python's semantics (floor, sign, errors) in the prelude
            return self.check(f"bn_{HELPER[o]}_{form}({{out}}, {x}, {y})", site, op.type)
        return CVal(f"({x} {o} {y})", op.type)

    def prefix_op(self, op):
        """+x, ~x, and the truth value of x or its negation ({1}), as C operators (cannot fail)."""
        (v,), _ = self.operands(op)
        return CVal(PREFIX[op.kind].format(v, self.truth_of(v) if op.type == "bool" else None), op.type)

    e_pos = e_invert = e_truth = e_not = prefix_op

    def e_neg(self, op):
        """-x and abs(x): an integer operand is repeated (stable) and may overflow at INT64_MIN;
        a num goes through the prelude (``bn_neg_n``/``bn_abs_n``)."""
        (v,), site = self.operands(op)
        if op.form == "nn":
            return self.check(f"bn_{op.kind}_n({{out}}, {v})", site, "num")
        if op.form == "ii":
            v = self.stable(v)
            if op.check:
                self.guard(f"{v} == INT64_MIN", site, "BN_K_OVERFLOW")
        return CVal(UNARY[op.kind, op.form].format(v), op.type)

    e_abs = e_neg

    def e_minmax_call(self, op):
        values, _ = self.operands(op)
        out = values[0]
        for step, b in zip(op.value, values[1:]):
            if step.kind == "const":
                out = self.e_const(step)
            elif step.form == "nn":
                out = CVal(f"bn_{op.op}_nn({self.to_num(out)}, {self.to_num(b)})", "num")
            else:
                a, b = self.stable(out), self.stable(b)
                out = CVal(f"({b} {'<' if op.op == 'min' else '>'} {a} ? {b} : {a})", step.type)
        return out

    # -- comparisons and logic
    def e_cmp(self, op):
        values, _ = self.operands(op)
        return CVal(CMP[op.form].format(*self.spell(values, op.form), op.op, CMP_CODE[op.op]), "bool")

    def lazy(self, op):
        """``t = first; if (t) t = then()`` (and) or ``if (!t)`` (or), the second part lazily."""
        first = self.truth_of(self.emit(op.args[0]))
        negate = op.kind == "or"
        rest, cap = self.code.capture(lambda: self.truth_of(self.emit(op.args[1])))
        if not cap:
            return CVal(f"({first} {'||' if negate else '&&'} {rest})", "bool")
        t = self.unit.tmp()
        self.code(f"int64_t {t} = {first};")
        self.code(f"if ({'!' if negate else ''}{t}) {{")
        self.code.lines.extend(cap)
        self.code(f"    {t} = {rest};")
        self.code("}")
        return CVal(t, "bool")

    e_and = e_or = lazy

    def e_select(self, op):
        c = self.truth_of(self.emit(op.args[0]))
        a, cap_then = self.code.capture(lambda: self.convert(self.emit(op.args[1]), op.type))
        b, cap_else = self.code.capture(lambda: self.convert(self.emit(op.args[2]), op.type))
        if not cap_then and not cap_else:
            return CVal(f"({c} ? {a} : {b})", op.type)
        t = self.tmp(op.type)
        for word, cap, x in (("if ({c}) {{", cap_then, a), ("}} else {{", cap_else, b)):
            self.code(word.format(c=c))
            self.code.lines.extend(cap)
            self.code(f"    {t} = {x};")
        self.code("}")
        return CVal(t, op.type)

    def e_eager(self, op):
        (c, a, b), _ = self.operands(op)
        return CVal(f"({self.truth_of(c)} ? {self.convert(a, op.type)} : {self.convert(b, op.type)})", op.type)

    def user_call(self, func, values):
        """The C name of the user function ``func`` (printed first) and its arguments' texts (each
        ``, arg``, as the parameter's type), from ``values()``."""
        fname, ptypes = self.unit.function(func)
        return fname, "".join(f", {self.convert(a, t)}" for a, t in zip(values(), ptypes))

    def e_callfn(self, op):
        fname, args = self.user_call(op.value, lambda: self.operands(op)[0])
        t = self.tmp("int")
        self.code(f"if (BN_UNLIKELY({fname}(w, &{t}{args}))) {self.fail_prop()}")
        return CVal(t, "bool")

    # -- function-body constructs (and/or, chains, comprehensions and folds are statements by now:
    # beast.ir.desugar)
    def e_in(self, op):
        (item, cont), _ = self.operands(op)
        x = self.stable(item)
        if cont.type == "carray" and cont.parts[1] == 0:
            test = "0"
        else:
            x = x if op.form == "ii" else self.to_double(x)
            test = IN_FN[cont.type, op.form].format(x, cont, *(cont.parts or ()))
        return CVal(f"(!{test})" if op.value else test, "bool")

    def e_range(self, op):
        args, site = self.operands(op)
        return CVal(None, "range", parts=self.range_args(args, site))

    def range_args(self, args, site):
        """Validate range(start, stop, step) as Python does (start, stop, step, then a zero step);
        C texts of the three."""
        checks, zero = range_arg_checks([v.type for v in args], args[2].const if args[2].is_const else None)
        out = []
        for v, check in zip(args, checks):
            if check == "fail":
                self.code(self.fail(site, "BN_K_RANGE_NOT_INT"))
                out.append("0")
            elif check == "nonint":
                s = self.stable(v)
                self.guard(f"{s}.f", site, "BN_K_RANGE_NOT_INT")
                out.append(f"{s}.i")
            else:
                out.append(self.stable(v).text)
        if zero:
            self.guard(f"{out[2]} == 0", site, "BN_K_RANGE_STEP_ZERO")
        return tuple(out)

    def e_list(self, op):
        """A fresh list (function-level temporary) holding the values of ``op``."""
        lst = self.unit.tmp()
        self.lists.append(lst)
        self.code(f"{lst}.n = 0;")
        site = self.site_at(op.where)

        def push(v):
            self.call(f"bn_list_push(&{lst}, {v})", site)

        if op.kind == "list":
            for x in op.args:
                push(self.emit(x))
        else:
            self.iterate(self.emit(op.args[0]), push)
        return CVal(lst, "list")

    e_list_of = e_list

    def iterate(self, cont, body):
        """Run ``body(CVal)`` for each value of ``cont``: a range, a list, a constant array."""
        i = self.unit.tmp()
        before, header, elt = ITERATE[cont.type]
        parts = cont.parts or ()
        if cont.type == "carray" and not parts[1]:
            return
        n = self.unit.tmp() if before else None
        if before:
            self.code(before.format(*parts, n=n))
        self.code.open(header.format(*parts, i=i, n=n, c=cont))
        body(CVal(elt.format(*parts, i=i, c=cont), "int"))
        self.code.close()

    def e_len(self, op):
        (v,), site = self.operands(op)
        if v.type == "list":
            return CVal(f"{v}.n", "int")
        n = f"bn_range_len({v.parts[0]}, {v.parts[1]}, {v.parts[2]})"
        if op.check == "overflow":          # more values than an int64 holds
            t = self.unit.tmp()
            self.code(f"uint64_t {t} = {n};")
            n = t
            self.guard(f"{n} > (uint64_t)INT64_MAX", site, "BN_K_OVERFLOW")
        return CVal(f"(int64_t){n}", "int")

    def e_index(self, op):
        (cont, idx), site = self.operands(op)
        kind = f"BN_K_{op.value.upper()}"
        if op.check == "fail":
            self.code(self.fail(site, kind))
            return CVal("0", "int")
        n, data = (f"{cont}.n", f"{cont}.v") if cont.type == "list" else (str(cont.parts[1]), cont.parts[0])
        i = self.let("int", idx.text)
        self.code(f"if ({i} < 0) {i} += {n};")
        self.guard(f"{i} < 0 || {i} >= {n}", site, kind)
        return CVal(f"{data}[{i}]", "int")

    def e_conv(self, op):
        (v,), site = self.operands(op)
        if op.type == "bool":
            return CVal(self.truth_of(v), "bool")
        if op.type == "float" or v.type in INTISH:
            return CVal(self.as_type(v, op.type), op.type)
        if v.type == "float":
            return self.check(f"bn_d2i({{out}}, {v})", site, "int")
        s = self.stable(v)
        t = self.tmp("int")
        self.code(f"if ({s}.f) {{ if (BN_UNLIKELY(bn_e = bn_d2i(&{t}, {s}.d))) {self.fail(site, 'bn_e')} }}"
                  f" else {t} = {s}.i;")
        return CVal(t, "int")
