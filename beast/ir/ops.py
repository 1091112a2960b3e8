"""Typed, checked operations: every expression (a nest ``Let``/``Check``, a sequence bound, a
function-body expression after :mod:`beast.ir.desugar`) lowered once into one :class:`Op` per node,
with every decision a printer would otherwise make itself:

- the static type of the result (int, bool, float, num, and in bodies str, none, list, range,
  carray): :func:`beast.expr.binop_type` for arithmetic, :func:`beast.ir.lower.select_type` for
  choices;
- constant folding (:func:`beast.expr.fold_binop`, comparisons, min/max/abs, and/or/not, choices
  with a constant condition), within the target's integer width;
- the *form* of each operation: on exact integers (``ii``), on doubles (``dd``: operands converted
  to float), on values whose int/float kind is known only at run time (``nn``: operands converted to
  the tagged number); comparisons also ``di``/``id`` (a double against an exact integer);
- the *check* each operation needs on the target (:class:`Target`: its integer width, the
  intervals of its integer variables): ``overflow`` (an exact integer may leave the width),
  ``zero`` (a divisor may be 0), ``inexact`` (an integer ``%`` too large to compute through
  doubles), ``pow``/``shift`` (Python's errors of a power or a shift), ``index``/``fail`` (an index
  out of range / always), ``nonint`` (a range() bound or an int() argument that may be a
  float); None when it cannot
  fire: an interval that keeps the result inside the width, a divisor that is a non-zero constant
  or whose interval excludes 0;
- the error site: ``where`` is the user position (file, line, columns) of an operation inside a
  function body (None: the enclosing statement's site); a printer registers it after the operands.

Ops are target-neutral data; a printer spells each kind (:mod:`beast.codegen.c_exprs` for C,
:class:`beast.codegen.lua_ops.OpSpeller` for the Lua nest and function bodies). What no target can
translate raises :class:`~beast.ir.body.Untranslatable` here, in evaluation order. The statements
of a body are decided by the static types of their values too (:func:`store_kind`,
:func:`return_kind`, :func:`element_ok`, :func:`yield_ok`).
"""
from __future__ import annotations

import builtins
import sys

from ..expr.nodes import COMPARES, BoolOp, Compare, Const, Not, Select, Var, binop_type, fold_binop
from . import intervals as iv
from .body import ConstArr, ListLit, Untranslatable
from .lower import select_type
from .tabulate import float_bits
from .ints import C64, Target

INTISH = ("int", "bool")
#: sum() of floats is Neumaier's compensated summation from Python 3.12 on (a plain left-to-right
#: sum before): a body that sums floats is then left to Python (C tabulates it, Lua calls it)
COMPENSATED_SUM = sys.version_info >= (3, 12)
NUMERIC = ("int", "bool", "float", "num")
_UNARY = {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x}


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


def new_op(kind, type_, args=(), op=None, value=None, form=None, check=None, where=None, node=None,
           iv=None) -> Op:
    """``Op(...)``, built about three times faster: a class call with keywords goes through
    ``type.__call__``, which packs them into a dict for ``__init__`` (the lowering builds an op
    per expression node on every printing)."""
    self = _new_object(Op)
    self.kind, self.type, self.args, self.op, self.value = kind, type_, tuple(args), op, value
    self.form, self.check, self.where, self.node, self.iv = form, check, where, node, iv
    return self


_new_object = object.__new__


def range_arg_checks(types, step_const=None):
    """The checks of range(start, stop, step) arguments of static ``types``, made in Python's order
    (start, stop, step, then whether the step is zero): per argument 'float' (always fails: not an
    integer), 'nonint' (a run-time test of a num) or None; and the step's zero test: None (a
    constant other than 0), 'fail' (the constant 0: always fails) or 'test' (at run time)."""
    zero = "test" if step_const is None else "fail" if step_const == 0 else None
    return [("fail" if t == "float" else "nonint" if t == "num" else None) for t in types], zero


class Lowering:
    """Lower expressions to ops. ``type_of(name)``: a name's static type (raises when unknown);
    ``positions``: id(expr) -> user position (function bodies); ``origins``: id(expr) -> ast node;
    ``calls``: how many user-function calls it has lowered (a walk looks for them only then)."""

    calls = 0

    def __init__(self, type_of, positions=None, origins=None, target=C64, memo=False):
        self.type_of, self.target = type_of, target
        self.positions, self.origins = positions or {}, origins or {}
        # id(expr) -> (expr, op): only where ``type_of`` answers the same for the lowering's whole
        # life (a nest's types; not a body's scopes): the entry keeps expr alive, so its id stays
        self._memo = {} if memo else None

    def __call__(self, e) -> Op:
        memo = self._memo
        if memo is not None:
            hit = memo.get(id(e))
            if hit is not None:
                return hit[1]
        cls = e.__class__
        if cls is Const:
            op = self.const(e.value, e)
        else:
            method = _METHODS.get(cls)
            if method is None:
                method = _METHODS[cls] = getattr(Lowering, "l_" + cls.__name__, _untranslatable)
            op = method(self, e)
        if memo is not None:
            memo[id(e)] = (e, op)
        return op

    def where(self, e):
        return self.positions.get(id(e))

    # -- constants and names
    def const(self, v, node=None, args=(), where=None):
        if isinstance(v, bool):
            return new_op("const", "bool", args, value=v, where=where)
        if isinstance(v, int):
            if not self.target.fits(v) and self.target.huge_fails:
                return new_op("huge", "int", args, value=v, where=where)
            if not self.target.fits(v):
                raise Untranslatable(node, f"the integer {v}, which does not fit in {self.target.bits} bits")
            return new_op("const", "int", args, value=v, where=where, iv=(v, v))
        if isinstance(v, float):
            return new_op("const", "float", args, value=v, where=where)
        if isinstance(v, str):
            return new_op("const", "str", args, value=v, where=where)
        if v is None:
            return new_op("const", "none", args, value=None, where=where)
        if self.target.objects:
            return new_op("const", "obj", args, value=v, where=where)
        raise Untranslatable(node, f"a constant of type {type(v).__name__}")

    def sequence(self, values, node=None, fresh=False):
        """Constant values as a 'tables' target holds them: integers as a list (a fresh 'table' or a
        shared 'carray'), other numbers, strings and None as a 'tuple' constant."""
        values = tuple(values)
        if all(type(v) in (int, bool) and self.target.fits(v) for v in values):
            return new_op("table" if fresh else "carray", "list", value=tuple(int(v) for v in values), node=node)
        if all(v is None or type(v) in (bool, int, float, str) for v in values):
            return new_op("const", "tuple", value=values)
        raise Untranslatable(node, "a constant list of other values")

    def num(self, op):
        """``op`` as a number of the target: a bool becomes the int 0 or 1 where bools are no ints."""
        if op.type != "bool" or self.target.bools_are_ints:
            return op
        if op.kind == "const":
            return self.const(int(op.value), args=(op,))
        return new_op("conv", "int", (op,), form="bool", iv=(0, 1))

    def boolean(self, value, args=()):
        return new_op("const", "bool", args, value=bool(value))

    def then(self, first, op):
        """``op`` after evaluating ``first`` only for the sites it registers."""
        return op if not _has_sites(first) else new_op("then", op.type, (first, op), iv=op.iv)

    def truthy(self, op):
        """``op``, whose truth value the target can test (else Untranslatable)."""
        if op.is_const and op.type in ("int", "bool", "float", "str", "none") or \
                op.type in ("bool", "int", "float", "num", "list", "range") or \
                op.type == "str" and self.target.strings:
            return op
        raise Untranslatable(None, f"the truth value of a {op.type}")

    def l_Var(self, e):
        t = self.type_of(e.name)
        var_iv = self.target.var_iv
        return new_op("var", t, value=e.name, iv=var_iv(e.name) if var_iv and t == "int" else None)

    def l_PrefixValue(self, e):
        return new_op("prefix", "int", value=e.index)

    # -- arithmetic
    def l_BinOp(self, e):
        return self.binop(e.op, self(e.left), self(e.right), e)

    def binop(self, op, a, b, node):
        if self.target.tables and op == "+" and a.type == b.type == "list":
            return new_op("concat", "list", (a, b))
        if not self.target.bitwise and op in ("&", "|", "^", "<<", ">>"):
            raise Untranslatable(node, f"operator {op}")
        if a.type not in NUMERIC or b.type not in NUMERIC:
            raise Untranslatable(node, f"'{op}' on {a.type} and {b.type} values")
        if a.type == "bool" or b.type == "bool":
            a, b = self.num(a), self.num(b)
        out = arith(op, a, b, self.target, self.positions.get(id(node)), node)
        if out.kind == "binop" and op in ("&", "|", "^", "<<", ">>") and out.form != "ii":
            raise Untranslatable(node, f"'{op}' on {a.type} values")
        return out

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
            return new_op("pos", "int" if v.type == "bool" else v.type, (v,), where=where, iv=v.iv)
        if e.op == "~":
            if v.type not in INTISH:
                raise Untranslatable(e, "'~' on a float")
            if not self.target.invert:
                return arith("-", negate(self.num(v), self.target), self.const(1), self.target, where, e)
            return new_op("invert", "int", (v,), where=where)
        return negate(self.num(v), self.target, where)

    # -- comparisons and logic
    def l_Compare(self, e):
        return self.compare(e.op, self(e.left), self(e.right), e)

    def compare(self, op, a, b, node=None):
        if self.target.tables and {a.type, b.type} & {"list", "range", "tuple", "obj"}:
            raise Untranslatable(node, f"comparison of {a.type} and {b.type}")
        if (a.type == "bool" or b.type == "bool") and (op not in ("==", "!=") or a.type != b.type):
            a, b = self.num(a), self.num(b)        # bool == bool stays a comparison of bools
        out = compare(op, a, b)
        if out is None or out.form == "ss" and not self.target.strings:
            values = "" if a.is_const and b.is_const else " values"
            raise Untranslatable(node, f"'{op}' between {a.type} and {b.type}{values}")
        return out

    def l_BoolOp(self, e):
        a = self(e.left)
        if a.is_const and a.type in ("int", "bool", "float", "str", "none"):
            if bool(a.value) != (e.op == "and"):          # decided by the left operand
                dead = (self.truthy(self(e.right)),) if self.target.eval_dead else ()
                return self.boolean(a.value, (a,) + dead)
            b = self(e.right)
            if b.is_const:
                return self.boolean(b.value, (a, b))
            return self.then(a, new_op("truth", "bool", (self.truthy(b),)))
        return new_op(e.op, "bool", (self.truthy(a), self.truthy(self(e.right))))   # the right one lazily

    def l_Not(self, e):
        v = self(e.operand)
        if v.is_const:
            return self.boolean(not v.value, (v,))
        return new_op("not", "bool", (self.truthy(v),))

    def l_Select(self, e):
        c = self(e.cond)
        if c.is_const and self.target.eval_dead:
            a, b = self(e.then), self(e.orelse)
            pick = a if c.value else b
            return new_op("pick", pick.type, (c, a, b), value=0 if c.value else 1, iv=pick.iv)
        if c.is_const:
            return self.then(c, self(e.then if c.value else e.orelse))
        self.truthy(c)
        a, b = self(e.then), self(e.orelse)
        if self.target.strings and a.type == b.type == "str" or self.target.tables and a.type == b.type == "list":
            return new_op("select", a.type, (c, a, b))
        if (a.type == "bool") != (b.type == "bool"):
            a, b = self.num(a), self.num(b)
        t = select_type(a.type, b.type)
        hull = iv.hull(a.iv, b.iv) if self.target.intervals and t == "int" else None
        return new_op("select", t, (c, a, b), iv=hull)                # the branch taken only

    def l_Eager(self, e):
        c, a, b = (self(x) for x in e.args)
        self.truthy(c)
        if self.target.tables and a.type == b.type and a.type in ("str", "list"):
            return new_op("eager", a.type, (c, a, b))
        return new_op("eager", select_type(a.type, b.type), (c, a, b))

    def l_Call(self, e):
        args = [self(a) for a in e.args]
        where = self.where(e)
        for a in args:
            if a.type not in NUMERIC:
                raise Untranslatable(e, f"{e.func}() of a {a.type}")
        args = [self.num(a) for a in args]
        if e.func == "abs":
            if len(args) != 1:
                raise Untranslatable(e, "abs() with several arguments")
            v = args[0]
            if v.kind == "const":
                return self.const(abs(v.value), Const(abs(v.value)), args=(v,), where=where)
            return negate(v, self.target, where, "abs")
        if len(args) == 1:
            raise Untranslatable(e, f"{e.func}() of one number")
        steps, out = [], args[0]            # min/max fold pairwise, after every argument
        for b in args[1:]:
            out = minmax(e.func, out, b, self.target)
            steps.append(out)
        return new_op("minmax_call", out.type, args, e.func, value=steps, where=where, iv=out.iv)

    def l_FuncCall(self, e):
        self.calls += 1
        args = []
        for a in e.args:          # the function is printed before its arguments: errors after it
            try:
                args.append(self(a))
            except Untranslatable as why:
                args.append(new_op("error", None, value=why))
                break
        return new_op("callfn", "bool", args, value=e.func)

    def l_Sorted(self, e):
        if not self.target.tables:
            raise Untranslatable(self.origins.get(id(e)), "the call sorted()")
        v = self(e.value)
        if v.type not in ("list", "range"):
            raise Untranslatable(e, f"sorted() of a {v.type}")
        return new_op("sorted", "list", (v,))

    def l_SetOpCall(self, e):
        if not self.target.tables:
            raise Untranslatable(self.origins.get(id(e)), f"the call {e.op}()")
        args = []
        for x in (e.left, e.right):
            v = self(x)
            if v.type not in ("list", "range") + INTISH:
                raise Untranslatable(e, f"a set operation on a {v.type}")
            args.append(v)
        return new_op("setop", "list", args, value=e.op)

    def l_Identity(self, e):
        if self.target.is_none:
            a, b = self(e.left), self(e.right)
            if "none" in (a.type, b.type):
                return self.boolean((a.type == b.type) != e.negate, (a, b))
        raise Untranslatable(None, "'is' comparisons")

    # -- function-body constructs
    def l_In(self, e):
        item, elts = self(e.item), None
        if self.target.member and isinstance(e.container, ListLit) and not _all_const(e.container):
            elts = [self(x) for x in e.container.elts]
        elif self.target.member and isinstance(e.container, ConstArr) and e.container.literal:
            elts = [self.const(x) for x in e.container.values]
        else:
            cont = self(e.container)
            if self.target.member and cont.kind == "const" and cont.type == "tuple":
                elts = [self.const(x) for x in cont.value]
        if elts is not None:            # Python compares with == in order, the elements evaluated first
            tests = [self.compare("==", item, x, e) for x in elts]
            return new_op("member", "bool", [item] + elts, value=(tests, e.negate))
        if item.type not in NUMERIC:
            if item.is_const and cont.is_const:
                try:
                    return self.boolean((item.value in cont.value) != e.negate, (item, cont))
                except TypeError:
                    raise Untranslatable(e, "'in' on these values") from None
            raise Untranslatable(e, f"'in' with a {item.type} value")
        if cont.type not in ("range", "list", "carray"):
            raise Untranslatable(e, f"'in' on a {cont.type}")
        return new_op("in", "bool", (item, cont), form="ii" if item.type in INTISH else "dd", value=e.negate)

    def l_RangeCall(self, e):
        args = [self(a) for a in e.args]
        return self.range_op(args, self.where(e), e)

    def range_op(self, args, where=None, node=None):
        for v in (args[2], args[0], args[1]):
            if v.type not in NUMERIC:
                raise Untranslatable(node, f"range() of a {v.type}")
        step = args[2].value if args[2].kind == "const" else None
        checks, zero = range_arg_checks([a.type for a in args], step)
        return new_op("range", "range", args, value=(checks, zero), check="nonint", where=where)

    def l_ConstArr(self, e):
        if self.target.tables:
            return self.sequence(e.values, e, fresh=e.literal and all(self.target.fits(v) for v in e.values))
        return new_op("carray", "carray", value=tuple(e.values), node=e)

    def l_ListLit(self, e):
        if self.target.tables and _all_const(e):
            return self.sequence([x.value for x in e.elts], e)
        elts = []
        for x in e.elts:
            v = self(x)
            if v.type not in INTISH:
                raise Untranslatable(e, f"a list of {v.type} values (lists of integers only)")
            elts.append(v)
        return new_op("list", "list", elts, where=self.where(e))

    def l_ListOf(self, e):
        it = self.iterable(self(e.iterable), e)
        return new_op("list_of", "list", (it,), where=self.where(e))

    def iterable(self, cont, node):
        if cont.type not in ("range", "list", "carray"):
            raise Untranslatable(node, f"iterating over a {cont.type}")
        return cont

    def l_Fold(self, e):
        """len(); the folds that loop are statements by now (beast.ir.desugar)."""
        v = self(e.iterable)
        if v.type == "carray" or self.target.tables and v.is_const and isinstance(v.value, (tuple, str)):
            return self.const(len(v.value), args=(v,))
        if v.type == "range":
            return self.range_len(v, e)
        if v.type == "list":
            return new_op("len", "int", (v,), node=e)
        raise Untranslatable(e, f"len() of a {v.type}")

    def range_len(self, r, node):
        """len() of the range op ``r``: checked ('overflow') where the ends' intervals allow more
        values than the width holds (Python's len() raises OverflowError past 2**63 - 1)."""
        (lo0, hi0), (lo1, hi1) = (self.target.known(a) for a in r.args[:2])
        step = r.args[2]
        most = max(hi1 - lo0, hi0 - lo1, 0)
        if step.kind == "const" and step.value:
            most = -(-most // abs(int(step.value)))
        fits = self.target.fits(most)
        return new_op("len", "int", (r,), node=node, check=None if fits else "overflow", where=self.where(node),
                      iv=(0, most) if fits else None)

    def l_Index(self, e):
        cont, idx = self(e.container), self(e.index)
        if self.target.tables:
            return self.table_index(cont, self.num(idx), e)
        if idx.type not in INTISH:
            raise Untranslatable(e, f"an index of type {idx.type}")
        if cont.type == "list":
            kind = "list_index"
        elif cont.type == "carray":
            kind = "tuple_index" if isinstance(e.container, ConstArr) and e.container.is_tuple else "list_index"
        else:
            raise Untranslatable(e, f"indexing a {cont.type}")
        empty = cont.type == "carray" and not cont.value
        return new_op("index", "int", (cont, idx), value=kind, check="fail" if empty else "index",
                  where=self.where(e))

    def table_index(self, cont, idx, e):
        if cont.is_const and idx.kind == "const" and idx.type == "int":
            try:
                return self.const(cont.value[idx.value], e, args=(cont, idx))
            except IndexError:
                pass
        if cont.type != "list":
            raise Untranslatable(e, f"indexing a {cont.type}")
        if idx.type not in (NUMERIC if self.target.index_nums else INTISH):
            raise Untranslatable(e, f"an index of type {idx.type}")
        return new_op("index", "int", (cont, idx), value="list_index", check="index", where=self.where(e))

    def l_Conv(self, e):
        v = self(e.value)
        where = self.where(e)
        if self.target.fold_conv and v.kind == "const":
            if e.to == "bool" and v.type in ("int", "bool", "float", "str", "none"):
                return self.boolean(v.value, (v,))
            if e.to == "float" and v.type in NUMERIC or e.to == "int" and v.type in INTISH:
                return self.const({"float": float, "int": int}[e.to](v.value), args=(v,), where=where)
        if e.to == "bool" and self.target.tables:
            return new_op("conv", "bool", (self.truthy(v),), form=v.type, where=where)
        if v.type not in NUMERIC:
            raise Untranslatable(e, f"{e.to}() of a {v.type}")
        if e.to == "bool":
            self.truthy(v)
        check = "nonint" if e.to == "int" and v.type in ("float", "num") else None
        return new_op("conv", e.to, (v,), form=v.type, check=check, where=where)


    def l_SumTerm(self, e):
        v = self(e.value)
        if v.type in INTISH or not COMPENSATED_SUM:
            return v
        raise Untranslatable(e.origin or e, f"sum() of {'floats' if v.type == 'float' else 'numbers that may be floats'} "
                                            "(Python 3.12 and later compensate the rounding of each addition)")


def _untranslatable(self, e):
    raise Untranslatable(e, f"the expression {type(e).__name__}")


_METHODS = {}           # expression class -> its Lowering method (l_<class name>), filled as met


# ---------------------------------------------------------------------------------------------
# The decisions of one arithmetic node from its operands (kind, type, const value, interval):
# shared by the lowering above and by printers that walk expressions themselves (Lua).

def operand(type_, const=False, value=None, iv=None) -> Op:
    """An operand described by a printer: its static type, constant value and interval."""
    return new_op("const" if const else "operand", type_, value=value, iv=iv)


def constant(value, target, args=(), where=None):
    """The constant op of a folded value, or None when the target does not hold it."""
    if isinstance(value, bool):
        return new_op("const", "bool", args, value=value, where=where)
    if isinstance(value, int) and target.fits(value):
        return new_op("const", "int", args, value=value, where=where, iv=(value, value))
    if isinstance(value, float):
        return new_op("const", "float", args, value=value, where=where)
    return None


def arith(op, a, b, target, where=None, node=None) -> Op:
    """``a op b`` on two numbers: folded, or a binop with its type, form and check. The check is
    what can fail on the target beyond Python's own errors of a helper: 'overflow' (an exact
    integer leaving the width, from the operands' intervals), 'zero' (a divisor that may be 0),
    'inexact' (a % b of integers too large to compute as a - floor(a / b) * b), 'shift'; None:
    nothing can fail."""
    if a.kind == b.kind == "const" and (target.fold is None or op in target.fold):
        out = constant(fold_binop(op, a.value, b.value), target, (a, b), where)
        if out is not None:
            return out
    ta, tb = a.type, b.type
    ii = ta in INTISH and tb in INTISH
    form = "ii" if ii else "nn" if "float" not in (ta, tb) else "dd"
    t = binop_type(op, ta, tb, b.value if b.kind == "const" else None)
    check = out_iv = None
    if op in ("+", "-", "*"):
        if ii:          # checked unless both intervals are known (x * 0 is checked all the same)
            out_iv = target.inside(iv.binop(op, a.iv, b.iv))
            check = None if out_iv else "overflow"
        elif form == "nn":
            check = "overflow"
    elif op == "/":
        check = None if _never_zero(b) else "zero"
    elif op in ("<<", ">>"):
        check = "shift"
    elif op in ("&", "|") and ii:       # within the operands' bits: only LuaJIT's -2**53 is out
        out_iv = target.inside(iv.binop(op, a.iv, b.iv))
        check = None if out_iv or target.inside(iv.binop(op, target.known(a), target.known(b))) \
            else "overflow"
    elif op == "//":
        check = None if _never_zero(b) else "zero"
        if ii:
            out_iv = target.inside(iv.binop(op, a.iv, b.iv))
            check = check or (None if target.inside(iv.binop(op, target.known(a), target.known(b)))
                              else "overflow")
    elif op == "%":
        check = None if _never_zero(b) else "zero"
        if ii:
            out_iv = target.inside(iv.binop(op, a.iv, b.iv))
            small = a.iv is not None and b.iv is not None and \
                target.fits(max(map(abs, a.iv)) + max(map(abs, b.iv)))
            check = check or (None if small else "inexact")
    elif op == "**":
        if ii and t == "num":
            form = "nn"                         # 2 ** -1 is a float
        if form != "ii":
            check = "pow"                       # 0 ** -1, a complex result, a float overflow
        else:
            out_iv = target.inside(iv.power(a.iv, b.value))
            check = None if out_iv else "overflow"
    return new_op("binop", t, (a, b), op, form=form, check=check, where=where, node=node, iv=out_iv)


# the op kinds that raise nothing themselves when they have no check (huge, callfn, error do: a
# literal beyond the width, a user function's own errors, a refusal)
_QUIET = frozenset(("var", "prefix", "carray", "table", "operand", "binop", "conv", "cmp", "minmax", "pos", "neg",
                    "abs", "invert", "minmax_call", "then", "pick", "select", "eager", "and", "or", "not", "truth",
                    "member", "list", "in", "len", "sorted", "setop", "list_of", "concat"))


def can_fail(op) -> bool:
    """Whether evaluating ``op`` may raise an error at run time (an operation with a check, one that
    raises by itself, in it or its operands). A folded constant cannot (its operands are there for
    their error sites only)."""
    if op.kind == "const":
        return False
    return op.check is not None or op.kind not in _QUIET or any(can_fail(a) for a in op.args)


def may_overflow(op) -> bool:
    """Whether the integer operation ``op`` may leave the target's width where it runs: a
    constant beyond it, or an 'overflow' check (a floor division whose 'zero' check hides one:
    -2**63 // -1, unless the intervals rule it out)."""
    if op.kind == "huge":
        return True
    if op.kind == "binop" and op.op == "//" and op.check == "zero" and op.form == "ii":
        a, b = op.args
        return a.iv is None or b.iv is None or (a.iv[0] <= -(1 << 63) and b.iv[0] <= -1 <= b.iv[1])
    return op.check == "overflow"


def minmax_order(op) -> list:
    """For each argument of the min()/max() call ``op`` after the first, whether the value of the
    ones before it is computed first: where that can fail (Python evaluates the arguments in order;
    a printer that evaluates an argument's parts before the expression holding the earlier ones
    would raise a later argument's error first)."""
    out, failing = [], can_fail(op.args[0])
    for a in op.args[1:]:
        out.append(failing)
        failing = failing or can_fail(a)
    return out


def loop_limit(op) -> Op:
    """The inclusive limit of a numeric ``for`` over a range: ``stop - 1`` (``op`` "-", counting up)
    or ``stop + 1`` ("+", counting down), on a stop the printer spells. Never checked: the stop is an
    integer of a target whose width is that of a double's exact integers (LuaJIT: below 2**53 in
    magnitude), and one past it is still exact."""
    return new_op("binop", "int", (operand("int"), operand("int", True, 1, (1, 1))), op, form="ii")


def _never_zero(b) -> bool:
    """A divisor that is never 0: a non-zero constant, or an interval without 0."""
    return b.kind == "const" and b.value != 0 or iv.nonzero(b.iv)


def compare(op, a, b):
    """``a op b``: a constant when both are constants, or when the types alone decide ``==``/``!=``
    (a number, a string and None are never equal); else a cmp op with its form (``ii``, ``dd``;
    ``nn``, ``di``, ``id``: exact across int and float; ``ss``: two strings); None when Python
    raises (``1 < "a"``)."""
    if a.is_const and b.is_const:
        try:
            return new_op("const", "bool", (a, b), value=bool(COMPARES[op](a.value, b.value)))
        except TypeError:
            return None
    if a.type in NUMERIC and b.type in NUMERIC:
        if a.type in INTISH and b.type in INTISH or a.type == b.type == "float":
            form = "ii" if a.type != "float" else "dd"
        else:
            form = "nn" if "num" in (a.type, b.type) else "di" if a.type == "float" else "id"
        return new_op("cmp", "bool", (a, b), op, form=form)
    if op in ("==", "!=") and a.type != b.type and ("str" in (a.type, b.type) or "none" in (a.type, b.type)):
        return new_op("const", "bool", (a, b), value=op == "!=")
    if a.type == b.type == "str":
        return new_op("cmp", "bool", (a, b), op, form="ss")
    return None


def negate(v, target, where=None, kind="neg") -> Op:
    """``-v`` (``kind`` 'abs': ``abs(v)``) of a number that is not a constant: an integer one
    overflows only at the bottom of the width."""
    if v.type not in INTISH:
        return new_op(kind, v.type, (v,), form="dd" if v.type == "float" else "nn", where=where)
    out_iv = iv.absolute(v.iv) if kind == "abs" else \
        None if v.iv is None else target.inside((-v.iv[1], -v.iv[0]))
    return new_op(kind, "int", (v,), form="ii", check=None if target.fits(-target.known(v)[0]) else "overflow",
              where=where, iv=out_iv)


def minmax(func, a, b, target) -> Op:
    """One step of min()/max() over two numbers (a constant when both are)."""
    if a.kind == b.kind == "const":
        return constant(getattr(builtins, func)(a.value, b.value), target)
    if a.type in INTISH and b.type in INTISH:
        return new_op("minmax", "bool" if a.type == b.type == "bool" else "int", form="ii",
                  iv=iv.minmax(func, a.iv, b.iv))
    if a.type == b.type == "float":
        return new_op("minmax", "float", form="dd")
    return new_op("minmax", "num", form="nn")


def _all_const(e) -> bool:
    return bool(e.elts) and all(isinstance(x, Const) for x in e.elts)


def _has_sites(op) -> bool:
    return op.where is not None or any(_has_sites(a) for a in op.args)


__all__ = ["C64", "Lowering", "Op", "Target", "arith", "can_fail", "compare", "constant", "loop_limit", "minmax", "minmax_order", "negate", "operand", "range_arg_checks"]
