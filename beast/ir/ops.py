"""Typed, checked operations: every expression (a nest ``Let``/``Check``, a sequence bound, a
function-body expression after :mod:`beast.ir.desugar`) lowered once into one :class:`Op` per node,
with every decision a printer would otherwise make itself:

- the static type of the result (int, bool, float, num, and in bodies str, none, list, range,
  carray), by :func:`beast.expr.binop_type`'s rules;
- constant folding (:func:`beast.expr.fold_binop`, comparisons, min/max/abs, and/or/not, choices
  with a constant condition), within the target's integer width;
- the *form* of each operation: on exact integers (``ii``), on doubles (``dd``: operands converted to
  float), or on values whose int/float kind is known only at run time (``nn``: operands converted to
  the tagged number); for comparisons ``di``/``id`` (an exact double-integer comparison);
- the *check* each operation needs, and whether it is needed for the target's width: ``overflow``
  (an exact integer leaving the width), ``zero`` (a divisor that can be 0), ``helper`` (a run-time
  routine that reports its own error kind: floor division, modulo, powers, shifts, int() of a
  float, ...), ``index``; an interval that keeps a result inside the width, or a constant non-zero
  divisor, drops the check;
- the error site: ``where`` is the user position (file, line, columns) of an operation inside a
  function body (None: the enclosing statement's site).

Ops are target-neutral data; a printer spells each kind from a table. What no target can translate
raises :class:`~beast.ir.body.Untranslatable` here, in evaluation order.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass

from ..expr import COMPARES, BoolOp, Compare, Const, Not, Select, Var, fold_binop
from . import intervals as iv
from .body import ConstArr, Untranslatable
from .lower import select_type

INTISH = ("int", "bool")
NUMERIC = ("int", "bool", "float", "num")
_UNARY = {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x}


@dataclass(frozen=True)
class Target:
    """What a target's integers hold: exact within [lo, hi]; ``var_iv(name)`` the interval of an
    integer variable when the target drops the overflow checks that cannot fire (None: keep all)."""
    lo: int
    hi: int
    bits: int
    var_iv: object = None

    def fits(self, v) -> bool:
        return self.lo <= v <= self.hi


C64 = Target(-(1 << 63), (1 << 63) - 1, 64)


class Op:
    """One typed operation. ``kind``: see the module docstring and :class:`Lowering`; ``args``: the
    operand ops, evaluated first, in order (for a folded constant, the operands it came from: their
    sites are registered all the same); ``value``: the constant, name, or kind-specific detail;
    ``form``: ii/dd/nn/di/id; ``check``: None, 'overflow', 'zero', 'helper', 'index', 'nonint'."""
    __slots__ = ("kind", "type", "args", "op", "value", "form", "check", "where", "node", "iv")

    def __init__(self, kind, type_, args=(), op=None, value=None, form=None, check=None, where=None,
                 node=None, iv=None):
        self.kind, self.type, self.args, self.op, self.value = kind, type_, tuple(args), op, value
        self.form, self.check, self.where, self.node, self.iv = form, check, where, node, iv

    @property
    def is_const(self):
        return self.kind in ("const", "carray")

    def __repr__(self):
        return f"Op({self.kind}, {self.type}, {self.op or ''}{self.value!r}, {list(self.args)})"


def range_arg_checks(types, step_const=None):
    """The checks of range(start, stop, step) arguments of static ``types`` (step first, as Python
    validates): per argument 'float' (always fails: not an integer), 'nonint' (a run-time test of
    a num) or None; and whether the step needs a zero test."""
    return [("fail" if t == "float" else "nonint" if t == "num" else None) for t in types], \
        not (step_const is not None and step_const != 0)


class Lowering:
    """Lower expressions to ops. ``type_of(name)``: a name's static type (raises when unknown);
    ``positions``: id(expr) -> user position (function bodies); ``origins``: id(expr) -> ast node."""

    def __init__(self, type_of, positions=None, origins=None, target=C64):
        self.type_of, self.target = type_of, target
        self.positions, self.origins = positions or {}, origins or {}

    def __call__(self, e) -> Op:
        if isinstance(e, Const):
            return self.const(e.value, e)
        if self.pure(e):
            return Op("logic", self.pure_type(e), node=e)
        method = getattr(self, "l_" + type(e).__name__, None)
        if method is None:
            raise Untranslatable(e, f"the expression {type(e).__name__}")
        return method(e)

    def where(self, e):
        return self.positions.get(id(e))

    # -- constants and names
    def const(self, v, node=None, args=(), where=None):
        if isinstance(v, bool):
            return Op("const", "bool", args, value=v, where=where)
        if isinstance(v, int):
            if not self.target.fits(v):
                raise Untranslatable(node, f"the integer {v}, which does not fit in {self.target.bits} bits")
            return Op("const", "int", args, value=v, where=where, iv=(v, v))
        if isinstance(v, float):
            return Op("const", "float", args, value=v, where=where)
        if isinstance(v, str):
            return Op("const", "str", args, value=v, where=where)
        if v is None:
            return Op("const", "none", args, value=None, where=where)
        raise Untranslatable(node, f"a constant of type {type(v).__name__}")

    def folded(self, value, args, where=None):
        """A constant result, or None when it is no value the target holds."""
        if isinstance(value, bool) or isinstance(value, float) or \
                isinstance(value, int) and self.target.fits(value):
            return self.const(value, args=args, where=where)
        return None

    def boolean(self, value, args=()):
        return Op("const", "bool", args, value=bool(value))

    def then(self, first, op):
        """``op`` after evaluating ``first`` only for the sites it registers."""
        return op if not _has_sites(first) else Op("then", op.type, (first, op), iv=op.iv)

    @staticmethod
    def truthy(op):
        """``op``, whose truth value every target can test (else Untranslatable)."""
        if op.is_const and op.type in ("int", "bool", "float", "str", "none") or \
                op.type in ("bool", "int", "float", "num", "list", "range"):
            return op
        raise Untranslatable(None, f"the truth value of a {op.type}")

    def pure(self, e):
        """An integer test or choice that cannot fail: printed as one expression."""
        if isinstance(e, Const):
            return type(e.value) in (int, bool) and self.target.fits(e.value)
        if isinstance(e, Var):
            try:
                return self.type_of(e.name) in INTISH
            except Untranslatable:
                return False
        if isinstance(e, Compare):
            return self.pure(e.left) and self.pure(e.right)
        if type(e) in (BoolOp, Not, Select):
            return all(self.pure(x) for x in e.children())
        return False

    def pure_type(self, e):
        if isinstance(e, (Compare, BoolOp, Not)):
            return "bool"
        if isinstance(e, Const):
            return "bool" if isinstance(e.value, bool) else "int"
        if isinstance(e, Var):
            return self.type_of(e.name)
        return select_type(self.pure_type(e.then), self.pure_type(e.orelse))

    def l_Var(self, e):
        t = self.type_of(e.name)
        var_iv = self.target.var_iv
        return Op("var", t, value=e.name, iv=var_iv(e.name) if var_iv and t == "int" else None)

    def l_PrefixValue(self, e):
        return Op("prefix", "int", value=e.index)

    # -- arithmetic
    def l_BinOp(self, e):
        return self.binop(e.op, self(e.left), self(e.right), e)

    def binop(self, op, a, b, node):
        where = self.where(node)
        lt, rt = a.type, b.type
        if lt not in NUMERIC or rt not in NUMERIC:
            raise Untranslatable(node, f"'{op}' on {lt} and {rt} values")
        if a.kind == b.kind == "const":
            out = self.folded(fold_binop(op, a.value, b.value), (a, b), where)
            if out is not None:
                return out
        ii = lt in INTISH and rt in INTISH
        form = "ii" if ii else "nn" if "float" not in (lt, rt) else "dd"
        mk = lambda t, check=None, form=form, out_iv=None: Op(  # noqa: E731
            "binop", t, (a, b), op, form=form, check=check, where=where, node=node, iv=out_iv)
        if op == "/":
            sure = b.kind == "const" and b.value != 0 or iv.nonzero(b.iv)
            return mk("float", "helper" if form == "nn" else None if sure else "zero")
        if op in ("&", "|", "^", "<<", ">>"):
            if not ii:
                raise Untranslatable(node, f"'{op}' on {lt} values")
            if op in ("<<", ">>"):
                return mk("int", "helper")
            return mk("bool" if lt == rt == "bool" else "int")
        if ii and op in ("+", "-", "*"):
            out_iv = self.inside(iv.binop(op, a.iv, b.iv))
            return mk("int", None if out_iv else "overflow", out_iv=out_iv)
        if ii and op == "**" and not (b.kind == "const" and b.value >= 0):
            return mk("num", "helper", "nn")
        if ii:
            out_iv = self.inside(iv.power(a.iv, b.value) if op == "**" else iv.binop(op, a.iv, b.iv))
            return mk("int", "helper", out_iv=out_iv)
        if form == "nn":
            return mk("num", "helper")
        return mk("float", None if op in ("+", "-", "*") else "helper")

    def inside(self, out_iv):
        return out_iv if out_iv is not None and self.target.fits(out_iv[0]) and self.target.fits(out_iv[1]) \
            else None

    def l_UnOp(self, e):
        v = self(e.operand)
        where = self.where(e)
        if v.type not in NUMERIC:
            raise Untranslatable(e, f"'{e.op}' on a {v.type} value")
        if v.kind == "const":
            try:
                return self.const(_UNARY[e.op](v.value), args=(v,), where=where)
            except (TypeError, Untranslatable):
                pass
        if e.op == "+":
            return Op("pos", "int" if v.type == "bool" else v.type, (v,), where=where, iv=v.iv)
        if e.op == "~":
            if v.type not in INTISH:
                raise Untranslatable(e, "'~' on a float")
            return Op("invert", "int", (v,), where=where)
        if v.type in INTISH:
            out_iv = None if v.iv is None else self.inside((-v.iv[1], -v.iv[0]))
            return Op("neg", "int", (v,), form="ii", check=None if out_iv else "overflow", where=where,
                      iv=out_iv)
        if v.type == "float":
            return Op("neg", "float", (v,), form="dd", where=where)
        return Op("neg", "num", (v,), form="nn", check="helper", where=where)

    # -- comparisons and logic
    def l_Compare(self, e):
        return self.compare(e.op, self(e.left), self(e.right), e)

    def compare(self, op, a, b, node=None):
        if a.is_const and b.is_const:
            try:
                return self.boolean(COMPARES[op](a.value, b.value), (a, b))
            except TypeError:
                raise Untranslatable(node, f"'{op}' between {a.type} and {b.type}") from None
        if a.type not in NUMERIC or b.type not in NUMERIC:
            if op in ("==", "!=") and (a.type in ("str", "none") or b.type in ("str", "none")) \
                    and a.type != b.type:
                return self.boolean(op == "!=", (a, b))
            raise Untranslatable(node, f"'{op}' between {a.type} and {b.type} values")
        if a.type in INTISH and b.type in INTISH or a.type == b.type == "float":
            form = "ii"
        else:
            form = "nn" if "num" in (a.type, b.type) else "di" if a.type == "float" else "id"
        return Op("cmp", "bool", (a, b), op, form=form)

    def l_BoolOp(self, e):
        a = self(e.left)
        if a.is_const and a.type in ("int", "bool", "float", "str", "none"):
            if bool(a.value) != (e.op == "and"):          # decided by the left operand
                return self.boolean(a.value, (a,))
            b = self(e.right)
            if b.is_const:
                return self.boolean(b.value, (a, b))
            return self.then(a, Op("truth", "bool", (self.truthy(b),)))
        return Op(e.op, "bool", (self.truthy(a), self.truthy(self(e.right))))   # the right one lazily

    def l_Not(self, e):
        v = self(e.operand)
        if v.is_const:
            return self.boolean(not v.value, (v,))
        return Op("not", "bool", (self.truthy(v),))

    def l_Select(self, e):
        c = self(e.cond)
        if c.is_const:
            return self.then(c, self(e.then if c.value else e.orelse))
        self.truthy(c)
        a, b = self(e.then), self(e.orelse)
        return Op("select", select_type(a.type, b.type), (c, a, b))       # the branch taken only

    def l_Eager(self, e):
        c, a, b = (self(x) for x in e.args)
        self.truthy(c)
        return Op("eager", select_type(a.type, b.type), (c, a, b))

    def l_Call(self, e):
        args = [self(a) for a in e.args]
        where = self.where(e)
        for a in args:
            if a.type not in NUMERIC:
                raise Untranslatable(e, f"{e.func}() of a {a.type}")
        if e.func == "abs":
            if len(args) != 1:
                raise Untranslatable(e, "abs() with several arguments")
            v = args[0]
            if v.kind == "const":
                return self.const(abs(v.value), Const(abs(v.value)), args=(v,), where=where)
            if v.type in INTISH:
                return Op("abs", "int", (v,), form="ii", check="overflow", where=where, iv=iv.absolute(v.iv))
            return Op("abs", v.type, (v,), form="dd" if v.type == "float" else "nn",
                      check="helper" if v.type == "num" else None, where=where)
        if len(args) == 1:
            raise Untranslatable(e, f"{e.func}() of one number")
        steps, out = [], args[0]            # min/max fold pairwise, after every argument
        for b in args[1:]:
            if out.kind == b.kind == "const":
                out = self.const(getattr(builtins, e.func)(out.value, b.value))
            elif out.type in INTISH and b.type in INTISH or out.type == b.type == "float":
                t = "float" if out.type == "float" else "bool" if out.type == b.type == "bool" else "int"
                out = Op("minmax", t, form="dd" if t == "float" else "ii",
                         iv=iv.minmax(e.func, out.iv, b.iv) if t != "float" else None)
            else:
                out = Op("minmax", "num", form="nn")
            steps.append(out)
        return Op("minmax_call", out.type, args, e.func, value=steps, where=where, iv=out.iv)

    def l_FuncCall(self, e):
        args = []
        for a in e.args:          # the function is printed before its arguments: errors after it
            try:
                args.append(self(a))
            except Untranslatable as why:
                args.append(Op("error", None, value=why))
                break
        return Op("callfn", "bool", args, value=e.func)

    def l_Sorted(self, e):
        raise Untranslatable(self.origins.get(id(e)), "the call sorted()")

    def l_SetOpCall(self, e):
        raise Untranslatable(self.origins.get(id(e)), f"the call {e.op}()")

    def l_Identity(self, e):
        raise Untranslatable(None, "'is' comparisons")

    # -- function-body constructs
    def l_In(self, e):
        item, cont = self(e.item), self(e.container)
        if item.type not in NUMERIC:
            if item.is_const and cont.is_const:
                try:
                    return self.boolean((item.value in cont.value) != e.negate, (item, cont))
                except TypeError:
                    raise Untranslatable(e, "'in' on these values") from None
            raise Untranslatable(e, f"'in' with a {item.type} value")
        if cont.type not in ("range", "list", "carray"):
            raise Untranslatable(e, f"'in' on a {cont.type}")
        return Op("in", "bool", (item, cont), form="ii" if item.type in INTISH else "dd", value=e.negate)

    def l_RangeCall(self, e):
        args = [self(a) for a in e.args]
        return self.range_op(args, self.where(e), e)

    def range_op(self, args, where=None, node=None):
        for v in (args[2], args[0], args[1]):
            if v.type not in NUMERIC:
                raise Untranslatable(node, f"range() of a {v.type}")
        step = args[2].value if args[2].kind == "const" else None
        checks, zero = range_arg_checks([a.type for a in args], step)
        return Op("range", "range", args, value=(checks, zero), check="nonint", where=where)

    def l_ConstArr(self, e):
        return Op("carray", "carray", value=tuple(e.values), node=e)

    def l_ListLit(self, e):
        elts = []
        for x in e.elts:
            v = self(x)
            if v.type not in INTISH:
                raise Untranslatable(e, f"a list of {v.type} values (lists of integers only)")
            elts.append(v)
        return Op("list", "list", elts, where=self.where(e))

    def l_ListOf(self, e):
        it = self.iterable(self(e.iterable), e)
        return Op("list_of", "list", (it,), where=self.where(e))

    def iterable(self, cont, node):
        if cont.type not in ("range", "list", "carray"):
            raise Untranslatable(node, f"iterating over a {cont.type}")
        return cont

    def l_Fold(self, e):
        """len(); the folds that loop are statements by now (beast.ir.desugar)."""
        v = self(e.iterable)
        if v.type == "carray":
            return self.const(len(v.value), args=(v,))
        if v.type in ("list", "range"):
            return Op("len", "int", (v,))
        raise Untranslatable(e, f"len() of a {v.type}")

    def l_Index(self, e):
        cont, idx = self(e.container), self(e.index)
        if idx.type not in INTISH:
            raise Untranslatable(e, f"an index of type {idx.type}")
        if cont.type == "list":
            kind = "list_index"
        elif cont.type == "carray":
            kind = "tuple_index" if isinstance(e.container, ConstArr) and e.container.is_tuple else "list_index"
        else:
            raise Untranslatable(e, f"indexing a {cont.type}")
        empty = cont.type == "carray" and not cont.value
        return Op("index", "int", (cont, idx), value=kind, check="fail" if empty else "index",
                  where=self.where(e))

    def l_Conv(self, e):
        v = self(e.value)
        where = self.where(e)
        if v.type not in NUMERIC:
            raise Untranslatable(e, f"{e.to}() of a {v.type}")
        if e.to == "bool":
            self.truthy(v)
        check = "helper" if e.to == "int" and v.type in ("float", "num") else None
        return Op("conv", e.to, (v,), form=v.type, check=check, where=where)


def _has_sites(op) -> bool:
    return op.where is not None or any(_has_sites(a) for a in op.args)


__all__ = ["C64", "Lowering", "Op", "Target", "range_arg_checks"]
