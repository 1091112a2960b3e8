"""Print a lowered function body (:mod:`beast.ir.lower`) as a Lua function: the body and its ops come
checked from :func:`beast.ir.translate.decide` (what Lua cannot hold was refused there)."""
from __future__ import annotations

import ast
import re

from ..ir import ops, storage
from ..ir.translate import place
from .exprs import ATOM
from .lua_ops import POLL, SETOP_CODES, UNARY, OpSpeller, V, codes, lua_ident, number, wrap

KINDS = {"closure": "closure", "iterator": "deferred", "condition": "cond"}
ONE = number(1)


class FunctionTranslator(OpSpeller):
    """Print one lowered @iterator / @condition body as a Lua function.

    Kinds: 'cond' returns a Lua boolean (the truth of the Python result); 'deferred' returns
    ``start, step, count, table, bad``; 'closure' takes a table first, appends the yielded values
    to it (keeping ``out.n``), and returns ``count, bad``."""

    def __init__(self, decided, ctx):
        self.body, self.ops, self.types, self.ctx = decided.body, decided.ops, decided.types, ctx
        self.decided, self.limits = decided, decided.limits
        self.info, self.kind, self.bound = self.body.info, KINDS[self.body.kind], {}

    def location(self, node):
        """Where an error reports: an op's position, a statement's ast node or a lowered node."""
        if node is not None and not isinstance(node, tuple):
            node = place(self.info.filename, node) if isinstance(node, ast.AST) else self.body.positions.get(id(node))
        return place(None, node)

    # -- output
    def emit(self, text):
        self.out.append("    " * self.indent + text)

    def tmp(self):
        self.ntmp += 1
        return f"_b_t{self.ntmp}"

    def inside(self, fn, *args):
        """``fn(*args)``, its lines one level further in."""
        self.indent += 1
        out = fn(*args)
        self.indent -= 1
        return out

    def hoist(self, v: V, always=False) -> V:
        """Evaluate ``v`` now into a temporary (keeping its type): unless it is a constant, a range or
        (not ``always``) a name."""
        name = v.prec == ATOM and re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", v.code)
        if v.const or v.ty == "range" or name and not always:
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
        self.out, self.indent, self.ntmp, self.nlabel = [], 1, 0, 0
        self.loops = []          # continue labels of the enclosing Python loops
        params = ["_b_out"] if self.kind == "closure" else []
        for name in body.params:
            lua, pty = lua_ident(name), body.ptypes[name]
            params += [lua, f"_b_f_{lua}"] if pty == "num" else [lua]
            as_int, flag = storage.param_entry(self.types[name], pty)
            if as_int:
                self.emit(f"{lua} = {lua} and 1 or 0")
            if flag is not None:
                self.emit(f"local _b_f_{lua} = {'true' if flag else 'false'}")
        decl = [x for n in sorted(set(body.locals) - set(body.params) - body.scoped) for x in self.lua_names(n)]
        for i in range(0, len(decl), 50):
            self.emit("local " + ", ".join(decl[i:i + 50]))
        if self.kind == "closure":
            self.emit("local _b_n = 0")
            self.emit("_b_out.n = 0")
        self.block(body.body)
        return [f"local function {self.info.ident}({', '.join(params)})"] + self.out + ["end"]

    def lua_names(self, name) -> list:
        """The Lua locals of a body local: its value, and for a 'num' its "is a float" flag."""
        lua = lua_ident(name)
        return [lua, f"_b_f_{lua}"] if self.body.locals[name] == "num" else [lua]

    # -- statements
    def block(self, stmts):
        for st in stmts:
            getattr(self, "s_" + type(st).__name__)(st)

    def s_Eval(self, st):
        v = self.ex(st.value)
        if not v.const and v.ty != "range":
            self.emit(f"local {self.tmp()} = {v.code}")

    def s_Append(self, st):
        lst = self.o_var(ops.Op("var", self.types[st.name], value=st.name))
        self.emit(f"{lst.code}[#{lst.code} + 1] = {self.num(self.ex(st.value)).code}")

    def assign_name(self, name, v: V):
        ty, lua = self.types[name], lua_ident(name)
        v = v if ty == "bool" else self.num(v)
        self.emit(f"{lua}, _b_f_{lua} = {v.code}, {self.flag(v)}" if ty == "num" else f"{lua} = {v.code}")

    def s_Assign(self, st):
        v = self.ex(st.value)
        v = v if len(st.names) == 1 else self.hoist(v, True)
        for name in st.names:
            self.assign_name(name, v)

    def s_Unpack(self, st):
        vals = [self.hoist(self.ex(x), True) for x in st.values]
        for name, v in zip(st.names, vals):
            self.assign_name(name, v)

    def s_SetItem(self, st):
        v = self.hoist(self.ex(st.value), True)
        lst = self.hoist(self.ex(st.container))
        idx = self.num(self.ex(st.index))
        k = self.site("setindex", None, st.target)
        self.emit(f"_b_setidx({lst.code}, {idx.code}, {self.num(v).code}, {k}, {self.flag(idx)})")

    def s_If(self, st):
        self.emit(f"if {self.truth(self.ex(st.test))} then")
        self.inside(self.block, st.body)
        if st.orelse:
            self.emit("else")
            self.inside(self.block, st.orelse)
        self.emit("end")

    def s_Known(self, st):
        self.ex(st.test)
        self.block(st.body)

    def s_While(self, st):
        self.emit("while true do")
        self.inside(self.loop_body, st.body, self.exit_test, st)
        self.emit("end")

    def exit_test(self, st):
        v = self.ex(st.test)
        if st.known is None:
            self.emit(f"if not ({self.truth(v)}) then break end")
        elif not st.known:
            self.emit("do break end")

    def loop_body(self, stmts, head, *args):
        """A Python loop's body: ``head(*args)`` (its test, or the binding of its variable), then the
        statements and their continue label."""
        self.nlabel += 1
        cont = f"_b_l{self.nlabel}"
        self.emit(POLL)                     # as the loop nest's loops do (the prelude's _b_poll)
        head(*args)
        self.loops.append(cont)
        self.block(stmts)
        self.loops.pop()
        self.emit(f"::{cont}::")

    def s_For(self, st):
        it = self.ex(st.iterable)
        if it.ty == "range":                # a numeric for: its limit one short of the stop
            a, b, c = it.parts
            v, inner = self.tmp(), []
            last = [self.spell_arith(d, b, ONE).code for d in self.limits[id(st)]]
            lim = last[0] if len(last) == 1 else f"({c.code} > 0) and ({last[0]}) or ({last[1]})"
            self.emit(f"for {v} = {a.code}, {lim}, {c.code} do")
        else:                               # a list, up to the first nil: it may grow in the loop
            it = self.hoist(it)
            j, v = self.tmp(), self.tmp()
            inner = [f"{j} = {j} + 1", f"local {v} = {it.code}[{j}]", f"if {v} == nil then break end"]
            self.emit(f"local {j} = 0")
            self.emit("while true do")
        for line in inner:
            self.inside(self.emit, line)
        self.inside(self.loop_body, st.body, self.assign_name, st.name, V(v, ATOM, "int"))
        self.emit("end")

    def s_Scope(self, st):
        names = [x for n in st.names for x in self.lua_names(n)]
        self.emit("do")
        if names:
            self.inside(self.emit, "local " + ", ".join(names))
        self.inside(self.block, st.body)
        self.emit("end")

    def s_Fail(self, st):
        self.emit(f"_b_fail({self.site(st.kind, st.func, st)})")

    def s_Break(self, st):
        self.emit(f"goto {self.loops[-1]}" if type(st).__name__ == "Continue" else "do break end")

    s_Continue = s_Break

    def s_Return(self, st):
        v, node = self.ex(st.value) if st.value is not None else None, st.node
        if self.kind != "deferred":         # a closure returns its count; a condition its truth
            out = "_b_n, -1" if self.kind == "closure" else self.truth(v) if v is not None else "false"
        else:                               # deferred iterator: start, step, count, table, bad
            kind = self.decided.return_kind(st)
            if kind == "none":
                out = f"_b_fail({self.site('none', None, node)})"
            elif kind == "range":
                a, b, c = v.parts
                k = self.site("overflow", None, node)
                out = f"{a.code}, {c.code}, _b_rlen({a.code}, {b.code}, {c.code}, {k}), nil, -1"
            elif kind == "list":
                v = self.hoist(v)
                out = f"0, 0, #{v.code}, {v.code}, -1"
            else:                           # one number; bad is -1, or 0 for a float
                v = self.num(v)
                v = self.hoist(v) if v.ty == "num" else v
                bad = {"float": "0", "int": "-1"}.get(v.ty) or f"({v.flag} and 0 or -1)"
                out = f"{v.code}, 0, 1, nil, {bad}"
        self.emit(f"do return {out} end")

    def s_Yield(self, st):
        v = self.num(self.ex(st.value))
        if v.ty != "int":
            v = self.hoist(v)
        self.emit(f"_b_n = _b_n + 1; _b_out[_b_n] = {v.code}; _b_out.n = _b_n")
        if v.ty != "int":
            self.emit(f"if {'true' if v.ty == 'float' else v.flag} then return _b_n, _b_n - 1 end")

    # -- expressions: their ops come from beast.ir.translate (lowered for LUA_BODY), spelled by o_*
    def ex(self, e) -> V:
        self.bound = {}
        return self.spell(self.ops[id(e)])

    def spell(self, op) -> V:
        v = self.bound.get(id(op))
        return v if v is not None else super().spell(op)

    def o_carray(self, op):             # a module-level list of integers: a shared table
        return V(self.ctx.const_table(op.value), ATOM, "list", k=op.value)

    def o_table(self, op):              # a list literal of integers: a fresh table, as Python makes
        return V("{" + ", ".join(str(v) for v in op.value) + "}", ATOM, "list")

    def o_list(self, op):
        return V("{" + ", ".join(self.num(self.spell(x)).code for x in op.args) + "}", ATOM, "list")

    def o_concat(self, op):
        a = self.hoist(self.spell(op.args[0]))
        return V(f"_b_concat({a.code}, {self.spell(op.args[1]).code})", ATOM, "list")

    def o_member(self, op):             # x in (a, b, ...): == in order, after every element
        for a in op.args:
            self.bound[id(a)] = self.hoist(self.spell(a))
        tests, negate = op.value
        out = V("false", ATOM, "bool", k=False)
        for t in tests:
            out = self.boolop("or", out, self.spell(t))
        return self.not_(out) if negate else out

    def o_in(self, op):
        x, cont = (self.spell(a) for a in op.args)
        x = self.num(x)
        if cont.ty == "list":
            out = V(f"_b_inlist({cont.code}, {x.code})", ATOM, "bool")
        else:
            out = V(f"(_b_inrange({x.code}, {codes(*cont.parts)}, 0) ~= nil)", ATOM, "bool")
        return self.not_(out) if op.value else out

    def o_select(self, op):             # a lazy choice: statements storing into a temporary
        c = self.truth(self.spell(op.args[0]))
        if c in ("true", "false"):
            return self.spell(op.args[1 if c == "true" else 2])
        ty, t = op.type, self.tmp()
        self.emit(f"local {t}, {t}f")
        self.emit(f"if {c} then")
        for word, arg in (("else", op.args[1]), ("end", op.args[2])):
            v = self.inside(self.spell, arg)
            self.inside(self.emit, f"{t} = {v.code}" + (f"; {t}f = {self.flag(v)}" if ty == "num" else ""))
            self.emit(word)
        return V(t, ATOM, ty, flag=f"{t}f" if ty == "num" else None)

    def o_eager(self, op):
        c = self.hoist(self.truth_v(self.spell(op.args[0])), True)
        a, b = (self.hoist(self.spell(x), True) for x in op.args[1:])
        return self.select(c.code, a, b, op.type)

    def o_len(self, op):
        v = self.spell(op.args[0])
        if v.ty == "list":
            return V(f"#{wrap(v, UNARY)}", UNARY, "int")
        return V(f"_b_rlen({codes(*v.parts)}, {self.site('overflow', None, op.node)})", ATOM, "int")

    def o_range(self, op):
        vals = [self.hoist(self.num(self.spell(a))) for a in op.args]
        checks, zero = op.value
        kb = None
        for v, check in zip(vals, checks):
            if check:               # 'fail': a float; 'nonint': a num, a float at run time
                kb = kb or self.site("rbound", None, op.where)
                self.emit(f"if {'true' if check == 'fail' else v.flag} then _b_fail({kb}, {v.code}) end")
        if zero:
            fail = f"_b_fail({self.site('rstep', None, op.where)})"
            self.emit(fail if zero == "fail" else f"if {vals[2].code} == 0 then {fail} end")
        return V("nil", ATOM, "range", parts=tuple(vals))

    def o_list_of(self, op):
        v = self.spell(op.args[0])
        return V(f"_b_copy({v.code})", ATOM, "list") if v.ty == "list" else self.materialize(v)

    def o_sorted(self, op):
        return V(f"_b_sorted({self.materialize(self.spell(op.args[0])).code})", ATOM, "list")

    def o_setop(self, op):
        a = self.hoist(self.materialize(self.spell(op.args[0])), True)
        b = self.materialize(self.spell(op.args[1]))
        return V(f"_b_setop({SETOP_CODES[op.value]}, {a.code}, {b.code})", ATOM, "list")

    def materialize(self, v: V) -> V:
        """A list V of the values of ``v``: a list, a range, or (an operand of union, intersection,
        difference) one number (Python: list(_b_vals(x)))."""
        if v.ty == "list":
            return v
        if v.ty == "range":
            return V(f"_b_rlist({codes(*v.parts)}, 0)", ATOM, "list")
        return V(f"{{{self.num(v).code}}}", ATOM, "list")

    def o_index(self, op):
        lst, idx = (self.spell(a) for a in op.args)
        k = self.site("index", None, op.where)
        return V(f"_b_idx({lst.code}, {idx.code}, {k}, {self.flag(idx)})", ATOM, "int")


