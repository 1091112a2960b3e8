"""Lower a user function body from its ``ast`` to the body IR (:mod:`beast.ir.body`), once.

This is where the meaning of a body is decided for every compiled target: which names are locals,
what folds to a constant, the static type of every local (a fixed point over its assignments:
int, bool, float, num — int or float — or list of integers), which constructs are outside the
translatable subset (:class:`~beast.ir.body.Untranslatable`, with the node and the reason: the
target then tabulates the function or calls it in Python), and the user position of every
operation that can fail.
"""
from __future__ import annotations

import ast
import builtins

from ..expr.nodes import BinOp, Call, Compare, Const, Not, Select, UnOp, Var, binop_type
from ..frontend.functions import is_vocabulary
from .desugar import desugar
from .sites import user_position
from .body import (Append, Assign, Break, Chain, Comp, ConstArr, Continue, Conv, Eager, Eval, Fold,
                   For, FuncBody, Identity, If, In, Index, ListLit, ListOf, PyBool, RangeCall, Return,
                   Scope, SetItem, SetOpCall, Sorted, SumTerm, Unpack, Untranslatable, While, Yield, ends, walk_body)

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INTISH = ("int", "bool")
NUMERIC = ("int", "bool", "float", "num")
LOCAL_TYPES = ("int", "bool", "float", "num", "list", "str")

AST_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
               ast.LShift: "<<", ast.RShift: ">>"}
AST_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
               ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in"}


def join_types(a, b):
    """The type of a variable that holds values of types a and b."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if a in INTISH and b in INTISH:
        return "int"
    if a in NUMERIC and b in NUMERIC:
        return "num"
    raise Untranslatable(None, f"a variable that holds both {a} and {b} values")


def select_type(a, b):
    """static_type's rule for select(): int/bool parts give int (bool only if both are bool)."""
    if a in INTISH and b in INTISH:
        return "bool" if a == b == "bool" else "int"
    if a == b == "float":
        return "float"
    if a in NUMERIC and b in NUMERIC:
        return "num"
    raise Untranslatable(None, f"a choice between {a} and {b} values")


def function_kind(info) -> str:
    return "closure" if info.closure else ("iterator" if info.role == "iterator" else "condition")


def lower_function(info, param_types) -> FuncBody:
    """The body IR of a user function; ``param_types``: the static type of each node argument.
    Raises :class:`~beast.ir.body.Untranslatable` when the body leaves the translatable subset."""
    return _Lowerer(info, param_types).lower()


class _Lowerer:
    def __init__(self, info, param_types):
        self.info = info
        self.fdef = info.fdef
        self.kind = function_kind(info)
        self.params = list(info.node_args)
        self.ptypes = dict(zip(self.params, param_types))
        self.consts = dict(info.constants)
        self.positions, self.keep, self.origins = {}, [], {}
        self.assigns = []          # (name, expr or ("elem", iterable)) for type inference
        comp_targets = set()
        for node in ast.walk(ast.Module(body=self.fdef.body, type_ignores=[])):
            if isinstance(node, ast.comprehension):
                for t in ast.walk(node.target):
                    comp_targets.add(id(t))
        self.stored = set()
        for node in ast.walk(ast.Module(body=self.fdef.body, type_ignores=[])):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                    and id(node) not in comp_targets:
                self.stored.add(node.id)
        self.comp_names = []      # names bound by enclosing comprehensions (during conversion)

    def is_local(self, name):
        return name in self.stored or name in self.params or any(name in s for s in self.comp_names)

    def mark(self, expr, node):
        """Record where the user wrote the operation ``expr`` (its errors are reported there)."""
        where = user_position(self.info.filename, node)
        if where is not None:
            self.positions[id(expr)] = where
            self.origins[id(expr)] = node
            self.keep.append(expr)
        return expr

    # -- the whole body
    def lower(self) -> FuncBody:
        if not self.info.closure:
            for node in ast.walk(ast.Module(body=self.fdef.body, type_ignores=[])):
                if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
                    raise Untranslatable(node, "yield")
        stmts = self.statements(self.fdef.body)
        if not ends(stmts):             # falling off the end returns None
            stmts.append(Return(None, None))
        body, numeric = desugar(self, stmts)
        types = self.infer(self.assigns)
        for name, origin in numeric:
            if types[name] not in NUMERIC + ("str",):
                raise Untranslatable(origin, f"a value of and/or/if-else that is a {types[name]}")
        untyped = {name for name in self.stored if name not in self.typed}
        local_types = {}
        for name in sorted(self.stored):
            ltype = types[name]
            if name in self.params:
                ltype = join_types(ltype, self.ptypes[name])
            if ltype not in LOCAL_TYPES:
                raise Untranslatable(None, f"the local '{name}' (a {ltype})")
            local_types[name] = ltype
        scoped = {n for st in walk_body(body) if isinstance(st, Scope) for n in st.names}
        out = FuncBody(self.info, self.kind, self.params, self.ptypes, local_types, body,
                       self.positions, self.keep, untyped, self.origins, scoped)
        _check_lists(out)
        return out

    # -- statements
    def statements(self, stmts):
        out = []
        for st in stmts:
            lowered = self.statement(st)
            if isinstance(lowered, list):
                out.extend(lowered)
            elif lowered is not None:
                out.append(lowered)
        return out

    def statement(self, st):
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            if isinstance(st, ast.AnnAssign) and st.value is None:
                return None
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            value = self.cv(st.value)
            if len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)):
                tgt = targets[0]
                if not (isinstance(value, ListLit) and len(tgt.elts) == len(value.elts)
                        and all(isinstance(x, ast.Name) for x in tgt.elts)):
                    raise Untranslatable(tgt, "this assignment target")
                names = [x.id for x in tgt.elts]
                self.assigns.extend(zip(names, value.elts))
                return Unpack(st, names, list(value.elts))
            if len(targets) == 1 and isinstance(targets[0], ast.Subscript) \
                    and not isinstance(targets[0].slice, ast.Slice):
                tgt = targets[0]
                return SetItem(st, tgt, self.cv(tgt.value), self.cv(tgt.slice), value)
            for tgt in targets:
                if not isinstance(tgt, ast.Name):
                    raise Untranslatable(tgt, "this assignment target")
            names = [t.id for t in targets]
            self.assigns.extend((n, value) for n in names)
            return Assign(st, names, value)
        if isinstance(st, ast.AugAssign):
            if not isinstance(st.target, ast.Name):
                raise Untranslatable(st.target, "this assignment target")
            op = AST_BINOPS.get(type(st.op))
            if op is None:
                raise Untranslatable(st, "the '@=' operator")
            name = st.target.id
            value = self.mark(BinOp(op, Var(name), self.cv(st.value)), st)
            self.assigns.append((name, value))
            return Assign(st, [name], value, aug=True)
        if isinstance(st, ast.If):
            return If(st, self.cv(st.test), self.statements(st.body), self.statements(st.orelse))
        if isinstance(st, ast.While):
            return While(st, self.cv(st.test), self.statements(st.body))
        if isinstance(st, ast.For):
            if not isinstance(st.target, ast.Name):
                raise Untranslatable(st.target, "a for loop with a tuple target")
            iterable = self.cv(st.iter)
            if isinstance(iterable, Var):
                for sub in ast.walk(ast.Module(body=st.body, type_ignores=[])):
                    if isinstance(sub, ast.Name) and sub.id == iterable.name and isinstance(sub.ctx, ast.Store):
                        raise Untranslatable(st, f"rebinding '{iterable.name}' while iterating over it")
            self.assigns.append((st.target.id, ("elem", iterable)))
            return For(st, st.target.id, iterable, self.statements(st.body))
        if isinstance(st, ast.Break):
            return Break(st)
        if isinstance(st, ast.Continue):
            return Continue(st)
        if isinstance(st, ast.Return):
            if st.value is None:
                return Return(st, None)
            if self.kind == "closure":      # a generator's return value is evaluated, then dropped
                return [Eval(st, self.cv(st.value)), Return(st, None)]
            return Return(st, self.cv(st.value))
        if isinstance(st, ast.Expr):
            value = st.value
            if isinstance(value, ast.Constant):
                return None
            if isinstance(value, ast.Yield):
                if self.kind != "closure" or value.value is None:
                    raise Untranslatable(value, "yield" if self.kind != "closure" else "yielding a non-number")
                return Yield(st, self.cv(value.value))
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr == "append" and isinstance(value.func.value, ast.Name) \
                    and value.func.value.id in self.stored and len(value.args) == 1 and not value.keywords:
                return Append(st, value.func.value.id, self.cv(value.args[0]), value)
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                raise Untranslatable(value, f"the method call .{value.func.attr}()")
            return Eval(st, self.cv(value))
        if isinstance(st, ast.Pass):
            return None
        raise Untranslatable(st, f"the statement '{type(st).__name__}'")

    # -- AST -> expression tree
    def fold(self, node):
        """The constant value of an expression that reads no local (None when it cannot fold)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and self.is_local(sub.id):
                return None
            if isinstance(sub, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Lambda,
                                ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
                return None
        if isinstance(node, ast.Name) and node.id not in self.consts and node.id not in ("True", "False", "None"):
            return None
        env = {"__builtins__": builtins, **self.consts,
               "select": lambda c, a, b: a if c else b}
        try:
            value = eval(compile(ast.Expression(body=node), self.info.filename, "eval"), env)  # noqa: S307
        except Exception:  # noqa: BLE001 - not a foldable constant (it fails at run time)
            return None
        if value is None or isinstance(value, (bool, int, float, str)):
            if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
                return None
            return Const(value)
        if isinstance(value, (tuple, list)) and all(type(v) in (int, bool) for v in value) \
                and all(INT64_MIN <= v <= INT64_MAX for v in value):
            return ConstArr([int(v) for v in value], isinstance(value, tuple),
                            isinstance(node, (ast.List, ast.Tuple)))
        if isinstance(value, range):
            return RangeCall([Const(value.start), Const(value.stop), Const(value.step)])
        if isinstance(value, (tuple, list)) and all(
                v is None or type(v) in (bool, int, float, str) for v in value) \
                and not any(type(v) is int and not INT64_MIN <= v <= INT64_MAX for v in value):
            return ListLit([Const(v) for v in value], isinstance(value, tuple))
        return None

    def cv(self, node):
        folded = self.fold(node)
        if folded is not None:
            return folded
        method = getattr(self, "cv_" + type(node).__name__, None)
        if method is None:
            raise Untranslatable(node, self._describe(node))
        return method(node)

    @staticmethod
    def _describe(node):
        names = {ast.Attribute: "attribute access", ast.Dict: "a dict", ast.Set: "a set",
                 ast.Starred: "'*' unpacking", ast.JoinedStr: "an f-string", ast.Lambda: "lambda",
                 ast.Yield: "a yield used as a value", ast.SetComp: "a set comprehension",
                 ast.DictComp: "a dict comprehension", ast.Slice: "a slice"}
        return names.get(type(node), f"the expression '{type(node).__name__}'")

    def cv_Name(self, node):
        if self.is_local(node.id):
            return Var(node.id)
        raise Untranslatable(node, f"the name '{node.id}' as a value")

    def cv_Constant(self, node):
        return Const(node.value)

    def cv_BinOp(self, node):
        op = AST_BINOPS.get(type(node.op))
        if op is None:
            raise Untranslatable(node, "the '@' operator")
        return self.mark(BinOp(op, self.cv(node.left), self.cv(node.right)), node)

    def cv_UnaryOp(self, node):
        operand = self.cv(node.operand)
        if isinstance(node.op, ast.Not):
            return Not(operand)
        op = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}[type(node.op)]
        return self.mark(UnOp(op, operand), node)

    def cv_BoolOp(self, node):
        return PyBool("and" if isinstance(node.op, ast.And) else "or", [self.cv(v) for v in node.values])

    def cv_Compare(self, node):
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            return Identity(isinstance(node.ops[0], ast.IsNot), self.cv(node.left), self.cv(node.comparators[0]))
        ops = []
        for op in node.ops:
            if type(op) not in AST_CMPOPS:
                raise Untranslatable(node, "'is' comparisons")
            ops.append(AST_CMPOPS[type(op)])
        operands = [self.cv(node.left)] + [self.cv(c) for c in node.comparators]
        if len(ops) == 1 and ops[0] not in ("in", "not in"):
            return Compare(ops[0], operands[0], operands[1])
        if len(ops) == 1:
            return In(operands[0], operands[1], ops[0] == "not in")
        return Chain(ops, operands)

    def cv_IfExp(self, node):
        return Select(self.cv(node.test), self.cv(node.body), self.cv(node.orelse))

    def cv_List(self, node):
        return self.mark(ListLit([self.cv(e) for e in node.elts]), node)

    def cv_Tuple(self, node):
        return self.mark(ListLit([self.cv(e) for e in node.elts], True), node)

    def cv_Subscript(self, node):
        if isinstance(node.slice, ast.Slice):
            raise Untranslatable(node, "a slice")
        return self.mark(Index(self.cv(node.value), self.cv(node.slice)), node)

    def _comp(self, node):
        gens = []
        self.comp_names.append(set())
        try:
            for g in node.generators:
                if g.is_async or not isinstance(g.target, ast.Name):
                    raise Untranslatable(g, "a comprehension with a tuple target")
                it = self.cv(g.iter)
                self.comp_names[-1].add(g.target.id)
                gens.append((g.target.id, it, tuple(self.cv(c) for c in g.ifs)))
            elt = self.cv(node.elt)
        finally:
            self.comp_names.pop()
        return self.mark(Comp(elt, gens, lazy=isinstance(node, ast.GeneratorExp)), node)

    cv_ListComp = _comp
    cv_GeneratorExp = _comp

    def cv_Call(self, node):
        func = node.func
        if not isinstance(func, ast.Name) or self.is_local(func.id) or node.keywords \
                or any(isinstance(a, ast.Starred) for a in node.args):
            raise Untranslatable(node, f"the call {ast.unparse(node.func)}()")
        name, args = func.id, node.args
        if name in self.consts and not is_vocabulary(self.consts[name]):
            raise Untranslatable(node, f"the call {name}()")
        if name in ("min", "max") and len(args) >= 2:
            return self.mark(Call(name, tuple(self.cv(a) for a in args)), node)
        if name in ("min", "max", "all", "any", "sum", "len") and len(args) == 1:
            return self.mark(Fold(name, self.cv(args[0])), node)
        if name == "abs" and len(args) == 1:
            return self.mark(Call("abs", (self.cv(args[0]),)), node)
        if name == "range" and 1 <= len(args) <= 3:
            parts = [self.cv(a) for a in args]
            if len(parts) == 1:
                parts = [Const(0), parts[0], Const(1)]
            elif len(parts) == 2:
                parts.append(Const(1))
            return self.mark(RangeCall(parts), node)
        if name in ("int", "float", "bool") and len(args) == 1:
            return self.mark(Conv(name, self.cv(args[0])), node)
        if name in ("int", "float", "bool") and not args:
            return Const({"int": 0, "float": 0.0, "bool": False}[name])
        if name == "select" and len(args) == 3:
            return Eager([self.cv(a) for a in args])
        if name == "list" and len(args) == 1:
            return self.mark(ListOf(self.cv(args[0])), node)
        if name == "list" and not args:
            return ListLit([])
        if name in ("union", "intersection", "difference") and len(args) == 2:
            return self.mark(SetOpCall(name, self.cv(args[0]), self.cv(args[1])), node)
        if name == "sorted" and len(args) == 1:
            return self.mark(Sorted(self.cv(args[0])), node)
        if name == "iterator" and len(args) == 1:
            return self.cv(args[0])
        raise Untranslatable(node, f"the call {name}()")

    def infer(self, assigns):
        """Fixed point of the types of locals over every assignment."""
        env = {p: self.ptypes[p] for p in self.params if p in self.stored}
        for _ in range(20):
            changed = False
            for name, expr in assigns:
                t = self.type_of(expr, env)
                if t is None:
                    continue
                new = join_types(env.get(name), t)
                if new != env.get(name):
                    env[name] = new
                    changed = True
            if not changed:
                break
        self.typed = set(env)
        for name in self.stored:
            env.setdefault(name, "int")
        return env

    def type_of(self, e, env, scopes=None):
        """The static type of a converted expression (None when a local's type is not known yet)."""
        scopes = scopes or {}
        t = lambda x: self.type_of(x, env, scopes)  # noqa: E731
        if isinstance(e, tuple) and e and e[0] == "elem":
            return self.elem_type(e[1], env, scopes)
        if isinstance(e, Const):
            v = e.value
            return "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else \
                "float" if isinstance(v, float) else "str" if isinstance(v, str) else "none"
        if isinstance(e, Var):
            if e.name in scopes:
                return scopes[e.name]
            if e.name in env:
                return env[e.name]
            if e.name in self.params:
                return self.ptypes[e.name]
            return None
        if isinstance(e, (Compare, Not, In, Chain, Identity)):
            return "bool"
        if isinstance(e, BinOp):
            a, b = t(e.left), t(e.right)
            if a is None or b is None:
                return None
            out = binop_type(e.op, a, b, e.right.value if isinstance(e.right, Const) else None)
            if out is None:
                raise Untranslatable(e, f"'{e.op}' on {a} and {b} values")
            return out
        if isinstance(e, UnOp):
            a = t(e.operand)
            return None if a is None else ("int" if a == "bool" else a)
        if isinstance(e, (Select, Eager)):
            parts = (e.then, e.orelse) if isinstance(e, Select) else e.args[1:]
            a, b = (t(p) for p in parts)
            return None if a is None or b is None else select_type(a, b)
        if isinstance(e, Call):
            parts = [t(a) for a in e.args]
            if any(p is None for p in parts):
                return None
            if e.func == "abs":
                return "int" if parts[0] in INTISH else parts[0]
            out = parts[0]
            for p in parts[1:]:
                out = ("bool" if out == p == "bool" else "int") if out in INTISH and p in INTISH else \
                    ("float" if out == p == "float" else "num")
            return out
        if isinstance(e, PyBool):
            out = None
            for v in e.values:
                x = t(v)
                if x is None:
                    return None
                out = join_types(out, x)
            return out
        if isinstance(e, (ListLit, Comp, ListOf, ConstArr, SetOpCall, Sorted)):
            return "list"
        if isinstance(e, RangeCall):
            return "range"
        if isinstance(e, Fold):
            return "bool" if e.func in ("all", "any") else "int"
        if isinstance(e, Index):
            return "int"
        if isinstance(e, Conv):
            return {"int": "int", "float": "float", "bool": "bool"}[e.to]
        if isinstance(e, SumTerm):
            return t(e.value)
        raise Untranslatable(e, f"the expression {type(e).__name__}")

    def elem_type(self, iterable, env, scopes):
        if isinstance(iterable, (RangeCall, ListLit, Comp, ListOf, ConstArr, SetOpCall, Sorted)):
            return "int"
        if isinstance(iterable, Var):
            t = self.type_of(iterable, env, scopes)
            if t is None:
                return None
            if t == "list":
                return "int"
        raise Untranslatable(iterable, "a for loop over this iterable")



def _check_lists(body: FuncBody):
    """``append`` works on local lists only."""
    for st in walk_body(body.body):
        if isinstance(st, Append) and body.locals.get(st.name) != "list":
            raise Untranslatable(st.call, "the method call .append()")
