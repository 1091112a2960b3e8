"""Print a user function body (translated: :mod:`beast.ir.translate`) as a C function, or its
table (:mod:`beast.ir.tabulate`) as C arrays and a lookup."""
from __future__ import annotations

import ast

from ..ir.storage import local_init, table_values
from ..ir.sites import TableSite, user_position
from ..ir.translate import NONE
from .c_exprs import CTYPE, ZERO, CVal, _Code, _Gen, _mangle, c_comment, c_int, c_prologue


class _FuncGen:
    """Print one translated user function (:class:`beast.ir.translate.Decided`) as C."""

    def __init__(self, unit, translated, fname):
        self.unit, self.fname = unit, fname
        self.decided, self.body, self.stores = translated, translated.body, translated.stores
        self.info, self.kind, self.ptypes = self.body.info, self.body.kind, self.body.ptypes
        self.code = _Code(1)
        self.locals = {}          # name -> CVal (C variable)
        self.gen = _Gen(unit, self.code, self.locals.__getitem__, lambda bound: "bn_rc = 1; goto bn_out;",
                        translated.ops)

    def site(self, node):
        """The site of an ast node (where the lowering places its operations); none: the enclosing one."""
        return self.gen.site_at(user_position(self.info.filename, node))

    # -- statements
    def translate(self):
        params = {p: f"p_{_mangle(p)}" for p in self.body.params}      # name -> C parameter
        for p, cname in params.items():
            if p not in self.body.locals:
                self.locals[p] = CVal(cname, self.ptypes[p])
        decls = []
        for name, ltype in self.body.locals.items():
            cname = f"l_{_mangle(name)}"
            init = local_init(name, ltype, params)
            value = ZERO[ltype]
            if init == "list":
                self.gen.lists.append(cname)
            elif init == "param":
                value = self.gen.convert(CVal(params[name], self.ptypes[name]), ltype)
            decls.append(f"{CTYPE[ltype]} {cname} = {value};")
            self.locals[name] = CVal(cname, ltype)
        self.gen.site = self.site(self.info.fdef)
        self.statements(self.body.body)
        out_type = "bn_seq *out" if self.kind != "condition" else "int64_t *out"
        decls += [f"bn_list {name} = BN_LIST0;" for name in self.gen.lists if not name.startswith("l_")]
        used = ["w", "out", "bn_e", *params.values()] + [self.locals[n].text for n in self.body.locals]
        signature = "".join(f", {CTYPE[self.ptypes[p]]} {cname}" for p, cname in params.items())
        lines = [f"static int {self.fname}(bn_w *w, {out_type}{signature})", "{"]
        lines += c_prologue(["int bn_rc = 0, bn_e = 0;"] + decls, used) + self.code.lines
        lines += ["bn_out:"]              # (every body ends in a return: beast.ir.lower)
        lines += [f"    free({name}.v);" for name in self.gen.lists]
        lines += ["    return bn_rc;", "}"]
        return "\n".join(lines)

    def statements(self, body):
        for st in body:
            self.statement(st)

    def assign(self, name, value, kind):
        """Store ``value`` in the local ``name`` as beast.ir.translate decided (``kind``)."""
        target = self.locals[name]
        if kind == "fill":
            arr, n = value.parts
            self.code(f"{target}.n = 0;")
            if n:
                self.gen.push_each(n, f"bn_list_push(&{target}, {arr}[{{i}}])", self.gen.site)
        elif kind == "list":
            self.gen.call(f"bn_list_copy(&{target}, &{value})", self.gen.site)
        else:
            self.code(f"{target} = {self.gen.convert(value, target.type)};")

    def statement(self, st):
        gen = self.gen
        saved = gen.site
        gen.site = self.site(st.node)
        if st.node is not None:             # (the return the lowering adds at the end has none)
            self.code(c_comment(f"line {st.node.lineno}: {ast.unparse(st.node).splitlines()[0]}"))
        try:
            getattr(self, "s_" + type(st).__name__)(st)
        finally:
            gen.site = saved

    def s_Unpack(self, st):
        values = []
        for v in st.values:      # every value first, then the assignments (a copy each)
            v = self.gen.value(v)
            values.append(v if v.is_const else self.gen.let(v.type, v.text))
        for n, v, kind in zip(st.names, values, self.stores[id(st)]):
            self.assign(n, v, kind)

    def s_Assign(self, st):
        gen, kinds = self.gen, self.stores[id(st)]
        if kinds[0] == "clear":
            for n in st.names:
                self.code(f"{self.locals[n]}.n = 0;")
            return
        value = gen.value(st.value)
        if len(st.names) > 1 and kinds[0] not in ("fill", "list"):     # a number: computed once
            value = gen.stable(value)
        for n, kind in zip(st.names, kinds):
            self.assign(n, value, kind)

    def s_If(self, st):
        gen, code = self.gen, self.code
        code.open(f"if ({gen.truth_of(gen.value(st.test))}) {{")
        self.statements(st.body)
        if st.orelse:
            code.close("} else {")
            code.indent += 1
            self.statements(st.orelse)
        code.close()

    def s_Known(self, st):
        self.gen.value(st.test)
        self.statements(st.body)

    def poll(self):
        """A loop of the user's code polls for a stop request as the loop nest's loops do; a stop
        leaves the function as the error ``cancelled``, which the runtime never reports (it
        stops the run for Ctrl-C)."""
        self.code(f"if (BN_STOPPED()) {self.gen.fail(0, 'BN_K_CANCELLED')}")

    def s_While(self, st):
        gen, code = self.gen, self.code
        code.open("for (;;) {")
        self.poll()
        v = gen.value(st.test)
        if st.known is None:
            code(f"if (!{gen.truth_of(v)}) break;")
        elif not st.known:
            code("break;")
        self.statements(st.body)
        code.close()

    def s_For(self, st):
        def body(v):
            self.poll()
            self.assign(st.name, v, *self.stores[id(st)])
            self.statements(st.body)
        self.gen.iterate(self.gen.value(st.iterable), body)

    def s_Scope(self, st):
        self.statements(st.body)          # C declares every local at the top of the function

    def s_Fail(self, st):
        kind = {"min": "BN_K_EMPTY_MIN", "max": "BN_K_EMPTY_MAX"}[st.func]
        self.code(self.gen.fail(self.gen.site_at(self.body.positions.get(id(st))), kind))

    def s_Break(self, st):
        self.code(f"{type(st).__name__.lower()};")      # break; or continue;

    s_Continue = s_Break

    def s_Eval(self, st):
        self.gen.value(st.value)

    def s_Yield(self, st):
        self.gen.to_seq("out", self.gen.value(st.value))

    def s_Append(self, st):
        v = self.gen.value(st.value)
        self.gen.call(f"bn_list_push(&{self.locals[st.name]}, {v})", self.gen.site)

    def s_Return(self, st):
        gen, code = self.gen, self.code
        if self.kind != "closure":          # (a closure's result: the values pushed; a generator returns None)
            v = gen.value(st.value if st.value is not None else NONE)
            if self.kind == "condition":
                code(f"*out = {gen.truth_of(v)};")
            elif self.decided.return_kind(st) == "none":
                code("out->kind = BN_SEQ_NONE;")
            else:
                gen.to_seq("out", v)
        code("goto bn_out;")


# ---------------------------------------------------------------------------------------------
# User functions: tabulation over the finite domains of their arguments

# the key of an argument of each static type (a 'num': its tag, then its value or bits)
TABLE_KEY = {"int": ["p{i}"], "bool": ["p{i}"], "float": ["bn_dbits(p{i})"],
             "num": ["(int64_t)p{i}.f", "p{i}.f ? bn_dbits(p{i}.d) : p{i}.i"]}


def print_table(unit, table, fname):
    """Print a :class:`~beast.ir.tabulate.Table` as C arrays (:func:`beast.ir.storage.table_values`), a
    ``bn_tab`` of them and a function ``fname`` that looks its arguments up (the prelude's
    ``bn_tab_cond`` / ``bn_tab_seq``)."""
    info, ptypes, entries = table.info, table.ptypes, table.entries
    tid = unit.tmp()
    key = [k.format(i=i) for i, t in enumerate(ptypes) for k in TABLE_KEY[t]]
    errs = [unit.site(o[2]) if o[2] is not None else 0 for _, o in entries]
    out = [c_comment(f"'{info.name}' tabulated over {len(entries)} argument tuples")]

    def array(ctype, name, values):
        body = ", ".join(str(v) if ctype != "int64_t" else c_int(v) for v in values) or "0"
        out.append(f"static const {ctype} {tid}_{name}[] BN_UNUSED = {{{body}}};")
        return f"{tid}_{name}"

    arrays = [array("int64_t", "k", [k for key, _ in entries for k in key]), array("int32_t", "e", errs)]
    if info.role == "condition":
        arrays += [array("unsigned char", "r", [1 if o[1] else 0 for _, o in entries]), "NULL", "NULL", "NULL"]
        lookup, out_type = "bn_tab_cond", "int64_t *out"
    else:
        arrays += [array(ctype, name, values) for ctype, name, values in zip(
            ("unsigned char", "int64_t", "int64_t", "unsigned char"), "rovt", table_values(table, unit.object))]
        lookup, out_type = "bn_tab_seq", "bn_seq *out"
    fields = ", ".join(arrays + [str(len(entries)), str(len(key)), str(unit.site(TableSite(info.name)))])
    params = "".join(f", {CTYPE[t]} p{i}" for i, t in enumerate(ptypes))
    out += [f"static const bn_tab {tid} = {{{fields}}};", f"static int {fname}(bn_w *w, {out_type}{params})",
            "{", f"    int64_t key[{len(key) + 1}] = {{{', '.join(key + ['0'])}}};",
            f"    return {lookup}(w, &{tid}, key, out);", "}"]
    return "\n".join(out)
