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

import re
from ..ir.record import field, record
from pathlib import Path

from ..ir import Check, Emit, Let, Loop, Program, Tally, ops
from ..ir.body import Untranslatable as _LoweringRefused
from ..ir.loops import Array, Bind, Call, Counted, Divisors, LoopLowering, Scratch, SetOp, Solved, Target
from ..ir.split import Budget, parts
from .exprs import ATOM
from .lua_body import FunctionTranslator
from .lua_ops import (LIMIT, NUMERIC, SETOP_CODES, ErrorSite, LuaCodegenError, LuaExpr, LuaOps, Untranslatable, V,
                      lua_ident)

@record
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
# The Lua runtime helpers every chunk starts with

HELPERS = (Path(__file__).with_name("lua_prelude.lua")).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# The program printer

# integers exact strictly inside (-2**53, 2**53), with intervals; short constant chains fused.
# LuaJIT allows 200 locals per function: beyond 110 in scope a loop nest moves into a function of
# its own (beast.ir.split), counted as the locals each statement below declares.
LUA_BUDGET = Budget(limit=110, top=3, part=1, part_rows=3, param=1, num_param=2, let=1, num_let=2,
                    loop=6, loops={"Counted": 4, "Array": 5, "Bind": 2, "Solved": 2, "Call": 10,
                                   "Closure": 9},
                    fused_one=1, fused=4, params="read", max_start=190)
LUA_TARGET = Target(lo=1 - LIMIT, hi=LIMIT - 1, limit=LIMIT, fuse=True, split=LUA_BUDGET)

# what the Python stub of an untranslated function returns, and what its call returned
FALLBACK = {"cond": ("v", "v"), "deferred": ("s0, st, n, tb, bad", "s0, st, n, tb, bad"),
            "closure": ("n, bad", "n, tb, bad")}
PARAM_TYPES = ("int", "float", "num", "bool", "str")     # a user function's parameter (else num)


class LuaPrinter:
    """Print a :class:`~beast.ir.Program` as a LuaJIT chunk."""

    MAX_LOCAL_FUNCS = 24    # more user functions than this go into a table (upvalue limit 60)

    def __init__(self, program: Program, force_python=()):
        self.program = program
        self.force_python = set(force_python)
        self.sites = [None]
        self.site_index = {}
        self.names = {}
        self.lower = LoopLowering(program, LUA_TARGET)   # beast.ir.loops
        self.ivs = self.lower.ivs.vars                   # beast.ir.intervals
        self.tables = {}            # tuple of ints -> Lua name
        self.fn = None              # the Lua function being printed (_FnOut)
        self.parts = []             # line lists of the functions split off deep loop nests
        self.split = {}             # id(loop) -> beast.ir.split.Part, for the function being printed
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
            self.param_types[ident] = ptypes = {a: t if t in PARAM_TYPES else "num" for a, t in ptypes.items()}
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
            if pty in NUMERIC:
                v = LuaOps.num(v)
            out.append(v.code)
            if pty == "num":
                out.append(LuaOps.flag(v))
        return ", ".join(out)

    def call_function(self, ident, args) -> str:
        if self.func_kinds.get(ident, "cond") != "cond":
            raise LuaCodegenError(f"'{ident}' is not a condition function")
        return f"{self.func_ref.get(ident, ident)}({self.call_args(ident, args)})"

    def function_texts(self):
        out = []
        for ident, kind in self.func_kinds.items():
            if ident in self.translated:
                out.extend(self.translated[ident])
            else:       # a stub calling the Python function back (lupa), then failing on its error
                returns, got = FALLBACK[kind]
                out += [f"local function {ident}({'out, ' if kind == 'closure' else ''}...)",
                        f"  local {got}, e = _b_R.py.{ident}(...)"]
                if kind == "closure":
                    out += ["  for i = 1, n do out[i] = tb[i] end", "  out.n = n"]
                out += [f"  if e ~= nil then _b_fail({self.site('python')}, e) end", f"  return {returns}", "end"]
        for ident in sorted(self.missing):
            out.append(f"local function {ident}() _b_fail({self.site('missing', ident)}) end")
        if any(r.startswith("_b_F.") for r in self.func_ref.values()):
            out.append("local _b_F = {" + ", ".join(f"{i} = {i}" for i in self.func_kinds) + "}")
        return out

    # -- sequences (the forms of beast.ir.loops)
    def range_parts(self, form: Counted):
        """Vs of start, stop, step: a bool as 0/1, a float or num checked (Python's range() TypeError)."""
        parts = []
        for b in form.bounds:
            v = LuaOps.num(self.ex.v(b.expr))
            if b.kind == "check":
                v = V(f"_b_rint({v.code}, {LuaOps.flag(v)}, {self.site('rbound')})", ATOM, "int")
            elif b.kind == "bad":
                raise LuaCodegenError(f"a range() bound of type {v.ty}")
            parts.append(v)
        return parts

    def range_head(self, form: Counted) -> str:
        a, b, c = self.range_parts(form)
        if form.last:
            lim = self.ex.arith(form.last, b, self.ex.const_number(1))
        else:
            lim = V(f"_b_rlim({b.code}, {c.code}, {self.site('rstep')})", ATOM, "int")
        return f"{a.code}, {lim.code}, {c.code}"

    def range_len(self, form: Counted) -> str:
        a, b, c = self.range_parts(form)
        return f"_b_rlen({a.code}, {b.code}, {c.code}, {self.site('rstep')})"

    def seq_list(self, f) -> str:
        """Lua expression of a table holding a fill's values (operands of set operations): one
        ``list_<form>`` per fill of beast.ir.loops."""
        return getattr(self, "list_" + type(f).__name__)(f)

    def list_Counted(self, f: Counted):
        a, b, c = self.range_parts(f)
        return f"_b_rlist({a.code}, {b.code}, {c.code}, {self.site('rstep')})"

    def list_Array(self, f: Array):
        return self.values_table(f.values)

    def list_Bind(self, f: Bind):
        return f"{{{LuaOps.num(self.ex.v(f.value)).code}}}"

    def list_Call(self, f: Call):
        ref, args = self.call_parts(f)
        return f"_b_clist({ref}{', ' if args else ''}{args})" if f.closure else f"_b_dlist({ref}({args}))"

    def list_Solved(self, f: Solved):
        return f"_b_opt({self.solve_value(f)})"

    def list_Divisors(self, f: Divisors):
        a, b, _ = self.range_parts(f.base)
        return f"_b_divisors({LuaOps.num(self.ex.v(f.n)).code}, {a.code}, {b.code})"

    def list_SetOp(self, f: SetOp):
        return f"_b_setop({SETOP_CODES[f.op]}, {self.seq_list(f.left)}, {self.seq_list(f.right)})"

    def call_parts(self, call: Call):
        """The Lua reference of a fill's user function and its arguments."""
        args = self.call_args(call.func, [self.ex.v(a) for a in call.args])   # may register a missing one
        return self.func_ref[call.func], args

    def values_table(self, values):
        return self.const_table(tuple(int(v) for v in values))

    def solve_value(self, form: Solved) -> str:
        guard = self.ex.truth(self.ex.v(form.guard))
        value = LuaOps.num(self.ex.v(form.value))
        if value.ty != "int":
            raise LuaCodegenError("a solved value that is not an integer")
        a, b, c = self.range_parts(form.base)
        if form.base.unit_step:
            member = f"_b_in1({value.code}, {a.code}, {b.code})"
        else:
            member = f"_b_inrange({value.code}, {a.code}, {b.code}, {c.code}, {self.site('rstep')})"
        if guard == "true":
            return member
        return f"({guard}) and {member} or nil"

    # -- statements
    def pure_count(self, count):
        """Lua counting a loop nest that only emits (a product of lengths, beast.ir.loops.Count)."""
        text = None
        for f in count.factors:
            part = str(f) if isinstance(f, int) else self.range_len(f)
            text = part if text is None else f"_b_chk({part} * {text}, {self.site('overflow')})"
        return text

    def block(self, stmts, depth, mode, loop, nloops):
        for s in stmts:
            if isinstance(s, Let):
                v = self.ex.v(s.expr)
                name = self.lname(s.var)
                ty = self.program.types.get(s.var, "num")
                kind = ops.let_kind(ty, v.ty)
                if kind is None:
                    raise LuaCodegenError(f"derived variable '{s.var}' is {ty} but its expression is {v.ty}")
                if kind != "same":
                    v = LuaOps.num(v)
                if kind == "flagged":
                    self.emit(depth, f"local {name}, _b_f_{name} = {v.code}, {LuaOps.flag(v)}", s.node, nloops)
                else:
                    self.emit(depth, f"local {name} = {v.code}", s.node, nloops)
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
                count = self.lower.count(s) if mode == "count" else None
                if count is not None:
                    product = self.pure_count(count)
                    self.emit(depth, f"_b_n = _b_chk(_b_n + {product}, {self.site('overflow')})", s.node, nloops)
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

    def loop(self, s: Loop, depth, mode, nloops):
        part = self.split.get(id(s))             # beast.ir.split: a function of its own
        if part is not None:
            return self.part(part, depth, mode, nloops)
        fused = self.lower.fused(s)              # beast.ir.fuse: which loops run as one
        if fused is not None:
            self.fused_code(fused, depth, mode, nloops)
        else:
            self.loop_code(s, depth, mode, nloops)

    def fused_code(self, fused, depth, mode, nloops):
        n = self.new_label()
        cont, brk = f"_b_c{n}", f"_b_x{n}"
        chain = fused.chain
        first, last = chain[0][0], chain[-1][0]
        if len(chain) == 1:
            self.emit(depth, "do", first.node, nloops)
            self.emit(depth + 1, f"local {self.lname(first.var)} = {chain[0][1][0]}", first.node, nloops)
        else:
            q = f"_b_q{n}"
            combos = fused.combinations
            self.emit(depth, f"for {q} = 1, {len(combos)} do", first.node, nloops)
            for i, (loop, _) in enumerate(chain):
                table = self.values_table(tuple(c[i] for c in combos))
                self.emit(depth + 1, f"local {self.lname(loop.var)} = {table}[{q}]", loop.node, nloops + i)
        # leaving a loop of one value goes on with the next combination, as a continue does
        self.block(last.body, depth + 1, mode, (cont, cont if fused.single else brk), nloops + len(chain))
        self.emit(depth + 1, f"::{cont}::")
        self.emit(depth, "end")
        self.emit(depth, f"::{brk}::")

    def part(self, part, depth, mode, nloops):
        """Print the loop nest ``part.loop`` as a function of its own and call it:
        ``_b_P[i](vars...)`` returns the count, or the buffer state."""
        s = part.loop
        if not part.fits:
            raise LuaCodegenError(f"the loop over '{s.var}' reads {len(part.params)} variables: more "
                                  "than a LuaJIT function can take")
        args = []
        for name in part.params:
            lua = self.lname(name)
            args.append(lua)
            if self.program.types.get(name) == "num":
                args.append(f"_b_f_{lua}")
        extra = [] if mode == "count" else ["_b_buf", "_b_i", "_b_cap"]
        self.parts.append(None)
        pid = len(self.parts)
        saved = self.fn
        self.fn = _FnOut()
        self.emit(0, f"_b_P[{pid}] = function({', '.join(extra + args)})")
        if mode == "count":
            self.emit(1, "local _b_n = 0")
        self.fn.reserve_slot()
        self.loop_code(s, 1, mode, nloops)     # not loop(): this function starts with its parameters
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
        form = self.lower.form(s)
        k_nonint = self.site("nonint", s.var)
        at = (s.node, nloops)
        check = (s.node, nloops + 1)

        def body(d):
            self.block(s.body, d, mode, (cont, cont if form.single else brk), nloops + 1)

        if isinstance(form, (Bind, Solved)):
            self.emit(depth, "do")
            if isinstance(form, Solved):
                self.emit(depth + 1, f"local {var} = {self.solve_value(form)}", *at)
                self.emit(depth + 1, f"if {var} then")
                body(depth + 2)
                self.emit(depth + 1, "end")
            else:
                v = LuaOps.num(self.ex.v(form.value))
                flag = LuaOps.flag(v) if form.check == "always" else f"_b_fv{n}"
                if form.check == "flag":
                    self.emit(depth + 1, f"local {var}, {flag} = {v.code}, {v.flag}", *at)
                else:
                    self.emit(depth + 1, f"local {var} = {v.code}", *at)
                if form.check != "none":
                    self.emit(depth + 1, f"if {flag} then _b_nonint({k_nonint}, {var}, true) end" if
                              form.check == "flag" else f"_b_nonint({k_nonint}, {var}, {flag})", *check)
                body(depth + 1)
            self.emit(depth, "end")
            self.emit(depth, f"::{cont}::")
            return
        outer = depth
        if isinstance(form, Counted):
            self.emit(depth, f"for {var} = {self.range_head(form)} do", *at)
        elif isinstance(form, Array):
            j = f"_b_j{n}"
            self.emit(depth, f"for {j} = 1, {len(form.values)} do", *at)
            self.emit(depth + 1, f"local {var} = {self.values_table(form.values)}[{j}]", *at)
            if form.wide is not None:
                self.emit(depth + 1, f"_b_chk({var}, {self.site('overflow')})", *check)
        else:
            j, s0, st, cnt, tb, bad = (f"_b_{x}{n}" for x in ("j", "s", "d", "n", "t", "b"))
            self.emit(depth, "do")
            depth += 1
            call = form.fill if isinstance(form, Scratch) and isinstance(form.fill, Call) else None
            if call is not None:
                ref, args = self.call_parts(call)
            if call is not None and not call.closure:
                self.emit(depth, f"local {s0}, {st}, {cnt}, {tb}, {bad} = {ref}({args})", *at)
                self.emit(depth, f"for {j} = 0, {cnt} - 1 do")
                self.emit(depth + 1, f"local {var} = {tb} and {tb}[{j} + 1] or {s0} + {j} * {st}")
            elif call is not None:
                ok, err, out = f"_b_ok{n}", f"_b_e{n}", f"_b_o{n}"
                self.fn.out_tables.append(out)     # one table per call site, reused (declared on top)
                sep = ", " if args else ""
                self.emit(depth, f"local {ok}, {cnt}, {bad} = _b_pcall({ref}, {out}{sep}{args})", *at)
                self.emit(depth, f"local {err} = nil")
                self.emit(depth, f"if not {ok} then {err} = {cnt}; {cnt} = {out}.n; {bad} = -1 end")
                self.emit(depth, f"for {j} = 0, {cnt} - 1 do")
                self.emit(depth + 1, f"local {var} = {out}[{j} + 1]")
            else:   # a table of values built at run time
                values = self.seq_list(form.fill if isinstance(form, Scratch) else form)
                self.emit(depth, f"local {tb} = {values}", *at)
                self.emit(depth, f"for {j} = 1, #{tb} do")
                self.emit(depth + 1, f"local {var} = {tb}[{j}]")
            if call is not None:
                self.emit(depth + 1, f"if {j} == {bad} then _b_nonint({k_nonint}, {var}, true) end", *check)
            elif isinstance(form, Scratch):
                self.emit(depth + 1, f"if not _b_isint({var}) then _b_nonint({k_nonint}, {var}) end", *check)
        body(depth + 1)
        self.emit(depth + 1, f"::{cont}::")
        self.emit(depth, "end")
        if isinstance(form, Scratch) and form.pending:
            self.emit(depth, f"if {err} then _b_reraise({err}) end", *at)
        self.emit(depth, f"::{brk}::")
        if depth != outer:
            self.emit(outer, "end")

    # -- whole chunk
    def render(self) -> LuaSource:
        p = self.program
        self.prepare_functions()
        mains = []
        for head, counter, mode in (("local function _b_count()", "_b_n", "count"),
                                     ("local function _b_rows(_b_buf, _b_cap)", "_b_i", "rows")):
            self.split = parts(self.lower, p.body, mode)     # beast.ir.split
            self.fn = _FnOut()
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
    """The lines of one Lua function being printed."""

    def __init__(self):
        self.lines = []
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


def print_lua(program: Program, force_python=()) -> LuaSource:
    """Generate the Lua chunk of a program (``force_python``: idents of user functions to call in
    Python even when they could be translated; for tests)."""
    return LuaPrinter(program, force_python).render()
