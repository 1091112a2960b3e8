"""Print a lowered function body (:mod:`beast.ir.lower`) as a Lua function."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..expr import Const, Var
from ..ir.body import ConstArr, ListLit, Scope, walk_body
from ..ir.lower import lower_function
from ..ir.ops import range_arg_checks
from .exprs import ATOM
from .lua_ops import (ADD, LIMIT, NUMERIC, SETOP_CODES, UNARY, LuaOps, Untranslatable, V, _has_call,
                      lua_ident, lua_string, wrap)

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
        scoped = {n for st in walk_body(body.body) if isinstance(st, Scope) for n in st.names}
        decl = []
        for name in sorted(set(body.locals) - set(body.params)):
            lua, ty = lua_ident(name), body.locals[name]
            scope[name] = LocalVar(lua, ty, f"_b_f_{lua}" if ty == "num" else None)
            if name not in scoped:             # those are declared where they live (s_Scope)
                decl.extend(self.lua_names(name))
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

    def lua_names(self, name) -> list:
        """The Lua locals of a body local: its value, and for a 'num' its "is a float" flag."""
        lua = lua_ident(name)
        return [lua, f"_b_f_{lua}"] if self.body.locals[name] == "num" else [lua]

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

    def s_Scope(self, st):
        names = [x for n in st.names for x in self.lua_names(n)]
        self.emit("do")
        self.indent += 1
        if names:
            self.emit("local " + ", ".join(names))
        done = self.block(st.body)
        self.indent -= 1
        self.emit("end")
        return done

    def s_Fail(self, st):
        self.emit(f"_b_fail({self.site(st.kind, st.func, st)})")

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

    def x_Fold(self, e):
        """len(); the folds that loop are statements by now (beast.ir.desugar)."""
        v = self.ex(e.iterable)
        if v.const and isinstance(v.k, (tuple, list, str, range)):
            return self.const_number(len(v.k))
        if v.ty == "list":
            return V(f"#{wrap(v, UNARY)}", UNARY, "int")
        if v.ty == "range":
            a, b, c = v.parts
            return V(f"_b_rlen({a.code}, {b.code}, {c.code}, {self.site('overflow', None, e)})", ATOM, "int")
        raise Untranslatable(f"len() of a {v.ty}")

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
        for v in vals:
            if v.ty not in NUMERIC:
                raise Untranslatable(f"range() of a {v.ty}")
        step = vals[2]
        checks, zero = range_arg_checks([v.ty for v in vals], step.k if step.const else None)
        kb = None
        for v, check in zip(vals, checks):
            if check:               # 'fail': a float; 'nonint': a num, a float at run time
                kb = kb or self.site("rbound", None, e)
                self.emit(f"if {'true' if check == 'fail' else v.flag} then _b_fail({kb}, {v.code}) end")
        if zero:
            fail = f"_b_fail({self.site('rstep', None, e)})"
            self.emit(fail if step.const else f"if {step.code} == 0 then {fail} end")
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
        return self.fresh_list(self.ex(e.iterable), "list", "_b_copy({})")

    def x_Sorted(self, e):
        return self.fresh_list(self.ex(e.value), "sorted", "_b_sorted({})")

    def fresh_list(self, v: V, fn, of_list) -> V:
        """A new table from a list (``of_list``, the Lua call on it) or a range (its values, then
        sorted if ``fn`` is 'sorted')."""
        if v.ty == "list":
            return V(of_list.format(v.code), ATOM, "list")
        if v.ty == "range":
            a, b, c = v.parts
            values = f"_b_rlist({a.code}, {b.code}, {c.code}, 0)"
            return V(f"_b_sorted({values})" if fn == "sorted" else values, ATOM, "list")
        raise Untranslatable(f"{fn}() of a {v.ty}")

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
