"""Print the loop-nest IR as a LuaJIT chunk (the Lua backend; :mod:`beast.runtime.lua` runs it).

What the chunk is called with and returns, and how it keeps Python's numbers, errors and user
functions on LuaJIT (53-bit exact integers, "is a float" flags, error sites, functions called back
in Python), is in ``docs/semantics.md``, "The Lua backend". The decisions come from ``beast.ir``:
loop forms (:mod:`~beast.ir.loops`), split nests (:mod:`~beast.ir.split`), typed ops
(:mod:`~beast.ir.ops`, spelled by :mod:`.lua_ops`) and which user functions are translated
(:mod:`~beast.ir.translate`, printed by :mod:`.lua_body`).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..ir import Check, Let, Loop, Program, Tally
from ..ir.loops import Array, Bind, Call, Counted, Divisors, Scratch, SetOp, Solved
from ..ir.lower import function_kind
from ..ir.nestplan import prepare
from ..ir.record import field, record
from ..ir.targets import LUA_FUNCS, LUA_LOOPS
from .exprs import ATOM
from .lua_body import KINDS, FunctionTranslator
from .lua_ops import NUMERIC, POLL, SETOP_CODES, ErrorSite, OpSpeller, V, codes, lua_ident, number


def _values_exact(form: Counted) -> bool:
    """A range of constant bounds whose values all lie within +-2**53, though its stop may not
    (``range(2**53 - 1, 2**53)``): its rows are exact in Lua, so its count is its known length."""
    start, step = (getattr(b.expr, "value", None) for b in (form.start, form.step))
    if not (type(start) is int and type(step) is int and form.length):
        return False
    last = start + (form.length - 1) * step
    return max(abs(start), abs(last)) < 2 ** 53


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


HELPERS = (Path(__file__).with_name("lua_prelude.lua")).read_text(encoding="utf-8")



# what the Python stub of an untranslated function returns, and what its call returned
FALLBACK = {"cond": ("v", "v"), "deferred": ("s0, st, n, tb, bad", "s0, st, n, tb, bad"),
            "closure": ("n, bad", "n, tb, bad")}


class NestSpeller(OpSpeller):
    """The nest's expressions (pure: errors are raised by helper calls), lowered for the 53-bit
    target with the nest's intervals (:data:`beast.ir.targets.LUA_NEST`) by beast.ir.nestplan."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.ops = ctx.plan.ops     # (lowered once; count and rows print each expression)

    def v(self, e) -> V:
        """The Lua of a nest expression, from its op."""
        return self.spell(self.ops[id(e)])

    def lua_name(self, name):
        return self.ctx.lname(name)

    def o_prefix(self, op):
        # sampling (beast.ir.prefix): a value of the prefix the runtime stores in _b_R.pre
        return V(f"_b_R.pre[{op.value + 1}]", ATOM, "int")

    def o_select(self, op):
        c = self.truth(self.spell(op.args[0]))
        return self.select(c if c in ("true", "false") else f"({c})", *(self.spell(x) for x in op.args[1:]),
                           op.type)

    def o_callfn(self, op):
        return V(f"{self.ctx.func_ref(op.value)}({self.ctx.call_args(op.value, [self.spell(a) for a in op.args])})",
                 ATOM, "bool")


class LuaPrinter:
    """Print a :class:`~beast.ir.Program` as a LuaJIT chunk."""

    MAX_LOCAL_FUNCS = 24    # more user functions than this go into a table (upvalue limit 60)

    def __init__(self, program: Program, force_python=()):
        self.program = program
        self.sites = {}             # ErrorSite -> its index k
        self.names = {}
        # every decision first (beast.ir.nestplan): the nest's ops, the user functions
        self.plan = prepare(program, LUA_LOOPS, LUA_FUNCS, ("count", "rows"), forced=set(force_python))
        self.lower = self.plan.lower                    # beast.ir.loops
        self.tables = {}            # tuple of ints -> Lua name
        self.lines = []             # the Lua function being printed: (text, (node, bound) or None)
        self.out_tables = []        # its closure iterators' tables (beast.ir.loops.Scratch of a closure)
        self.parts = []             # line lists of the functions split off deep loop nests
        self.split = {}             # id(loop) -> beast.ir.split.Part, for the function being printed
        self.nlabel = 0
        self.funcs = {}             # ident -> (kind, parameter types, why untranslated, Lua lines)
        self.ex = NestSpeller(self)

    # -- bookkeeping
    def site(self, kind, op=None, where=None) -> int:
        """The index of an error site (1, 2, ... in order of first use: LuaSource.sites)."""
        return self.sites.setdefault(ErrorSite(kind, op, where), len(self.sites) + 1)

    def lname(self, name):
        if name not in self.names:
            self.names[name] = lua_ident(name)
        return self.names[name]

    def const_table(self, values: tuple) -> str:
        return self.tables.setdefault(values, f"_b_K{len(self.tables) + 1}")

    def emit(self, depth, text, node=None, bound=None):
        """A line of the function being printed; ``node``/``bound``: what the line evaluates and how
        many loops are bound there (the error handler reads the current line)."""
        self.lines.append(("  " * depth + text, (node, bound) if node is not None else None))

    def function(self, head, first, body, last) -> list:
        """The lines of a Lua function: ``head``, ``first`` (None: none), a line declaring the tables of
        its closure iterators (one per call site, reused), the lines ``body()`` prints, ``last``."""
        saved = self.lines, self.out_tables
        self.lines, self.out_tables = [], []
        self.emit(0, head)
        if first:
            self.emit(1, first)
        slot = len(self.lines)
        self.emit(0, "")
        body()
        self.emit(1, last)
        self.emit(0, "end")
        if self.out_tables:
            self.lines[slot] = (f"  local {', '.join(self.out_tables)} = {', '.join('{}' for _ in self.out_tables)}",
                                None)
        lines, (self.lines, self.out_tables) = self.lines, saved
        return lines

    # -- user functions (which are translated: beast.ir.translate)
    def print_functions(self):
        for ident, decision in self.plan.funcs.items():
            decided = decision.done
            lines = None if decided.reason else FunctionTranslator(decided, self).translate()
            kind = KINDS[function_kind(self.program.funcs[ident])]
            self.funcs[ident] = (kind, decision.ptypes, decided.reason, lines)

    def func_ref(self, ident):
        return f"_b_F.{ident}" if len(self.funcs) > self.MAX_LOCAL_FUNCS and ident in self.funcs else ident

    def call_args(self, ident, args):
        if ident not in self.funcs:
            return codes(*args)
        out = []
        for pty, v in zip(self.funcs[ident][1].values(), args):
            v = OpSpeller.num(v) if pty in NUMERIC else v
            out += [v.code, OpSpeller.flag(v)] if pty == "num" else [v.code]
        return ", ".join(out)

    def call(self, call: Call):
        """The Lua function and arguments of a call of a user function in the nest."""
        return self.func_ref(call.func), self.call_args(call.func, [self.ex.v(a) for a in call.args])

    def function_texts(self):
        out = []
        for ident, (kind, _, _, lines) in self.funcs.items():
            if lines is not None:
                out.extend(lines)
                continue
            returns, got = FALLBACK[kind]       # a stub calling the Python function back, failing on its error
            floats = any(t in ("float", "num") for t in self.funcs[ident][1].values())
            out += [f"local function {ident}({'out, ' if kind == 'closure' else ''}...)",
                    f"  local {got}, e = _b_R.py.{ident}({'_b_k0(...)' if floats else '...'})"]
            if kind == "closure":
                out += ["  for i = 1, n do out[i] = tb[i] end", "  out.n = n"]
            out += [f"  if e ~= nil then _b_fail({self.site('python')}, e) end", f"  return {returns}", "end"]
        for ident in sorted(self.plan.missing):     # Python raises NameError when (if ever) the call runs
            out.append(f"local function {ident}() _b_fail({self.site('missing', ident)}) end")
        if len(self.funcs) > self.MAX_LOCAL_FUNCS:
            out.append("local _b_F = {" + ", ".join(f"{i} = {i}" for i in self.funcs) + "}")
        return out

    # -- sequences (the forms of beast.ir.loops)
    def range_parts(self, form: Counted):
        """Vs of start, stop, step: a bool as 0/1, a float or num checked (Python's range() TypeError)."""
        out = []
        for b in form.bounds:
            v = OpSpeller.num(self.ex.v(b.expr))
            if b.kind == "check":
                v = V(f"_b_rint({v.code}, {OpSpeller.flag(v)}, {self.site('rbound')})", ATOM, "int")
            out.append(v)
        return out

    def range_args(self, form: Counted, n=3) -> str:
        """The Lua arguments start, stop[, step] of a range() for a prelude helper."""
        return codes(*self.range_parts(form)[:n])

    def range_head(self, form: Counted) -> str:
        a, b, c = self.range_parts(form)
        if form.last:           # stop -/+ 1, as beast.ir.loops decided it
            d = self.lower.last_op(form)
            b = number(d.value) if d.kind == "const" else self.ex.spell_arith(d, b, number(1))
        else:
            b = V(f"_b_rlim({b.code}, {c.code}, {self.site('rstep')})", ATOM, "int")
        return codes(a, b, c)

    def seq_list(self, f) -> str:
        """Lua expression of a table holding a fill's values (operands of set operations, values
        built before their loop runs)."""
        if isinstance(f, Counted):
            return f"_b_rlist({self.range_args(f)}, {self.site('rstep')})"
        if isinstance(f, Divisors):
            args = self.range_args(f.base, 2)
            return f"_b_divisors({OpSpeller.num(self.ex.v(f.n)).code}, {args})"
        if isinstance(f, Array):        # (a value past 2**53 would round: every one takes part)
            return self.const_table(tuple(map(int, f.values))) if f.wide is None else f"_b_big({self.site('overflow')})"
        if isinstance(f, Bind):
            return f"{{{OpSpeller.num(self.ex.v(f.value)).code}}}"
        if isinstance(f, Solved):
            return f"_b_opt({self.solve_value(f)})"
        if isinstance(f, SetOp):
            return f"_b_setop({SETOP_CODES[f.op]}, {self.seq_list(f.left)}, {self.seq_list(f.right)})"
        if isinstance(f, Call):
            ref, args = self.call(f)
            return f"_b_clist({ref}{', ' if args else ''}{args})" if f.closure else f"_b_dlist({ref}({args}))"
        return self.seq_list(f.fill)            # Scratch

    def solve_value(self, form: Solved) -> str:
        guard = self.ex.truth(self.ex.v(form.guard))
        value = OpSpeller.num(self.ex.v(form.value))
        if form.base.unit_step:
            member = f"_b_in1({value.code}, {self.range_args(form.base, 2)})"
        else:
            member = f"_b_inrange({value.code}, {self.range_args(form.base)}, {self.site('rstep')})"
        return member if guard == "true" else f"({guard}) and {member} or nil"

    # -- statements
    def pure_count(self, count, depth, nloops):
        """Count a nest of loops that only emit (beast.ir.loops.Count) as its loops would run: the
        lengths from the outside in, each sequence evaluated at the first value of the loops around
        it (on which it does not depend), none after an empty one, each on a line of its own loop so
        that an error names that loop with those values bound; a constant past 2**53 in an Array
        fails when its loop reaches it, after the loops inside it; the sum is checked last."""
        parts = count.parts
        fails = [self.count_factor_fails(form) for _, form in parts]
        # a loop variable is bound (to its first value) only where an error's configuration needs it
        needed = [any(fails[j + 1:]) for j in range(len(parts))]
        inner = depth + 1
        self.emit(depth, "do")
        self.emit(inner, "local _b_p, _b_q, _b_m = 0, 1, 0")    # the count, the product so far, a length
        pending = []                # what closes each level, innermost last: ("end",) or a failing line
        k, have = 1, False          # the constant factor so far; whether _b_q holds the factors before it
        for j, (loop, form) in enumerate(parts):
            at, var = (loop.node, nloops + j), self.lname(loop.var)
            d = inner + sum(1 for p in pending if p[0] == "end")
            if isinstance(form, Bind):
                v = OpSpeller.num(self.ex.v(form.value))
                if needed[j] or not v.const:
                    self.emit(d, f"local {var} = {v.code}", *at)
                continue
            if isinstance(form, Array):
                values = form.values
                if not values:
                    break
                wide = None if form.wide is None else f"_b_chk({int(form.wide)}, {self.site('overflow')})"
                if values[0] == form.wide:      # the first value fails: nothing inside runs
                    self.emit(d, wide, *at)
                    break
                k *= len(values)
                if needed[j]:
                    self.emit(d, f"local {var} = {int(values[0])}", *at)
                if wide is not None:            # reached after the loops inside ran for the values before it
                    pending.append(("fail", d, wide, at))
                continue
            a, b, c = self.range_parts(form)
            if form.length is not None and (all(x.const for x in (a, b, c)) or _values_exact(form)):
                if form.length == 0:
                    break
                k *= form.length
            else:           # a length of 2**53 or more is an overflow (the range's own error: its step)
                self.emit(d, f"_b_m = _b_rlen({codes(a, b, c)}, {self.site('rstep')}, {self.site('overflow')})", *at)
                self.emit(d, "if _b_m > 0 then")
                pending.append(("end", d))
                d += 1
                self.emit(d, f"_b_q = {'_b_q * ' if have else ''}{f'{min(k, 2 ** 53)} * ' if k != 1 else ''}_b_m")
                have, k = True, 1
            if needed[j]:
                self.emit(d, f"local {var} = {a.code}", *at)
        else:               # every factor non-zero: the product (doubles; 2**53 or more fails below)
            d = inner + sum(1 for p in pending if p[0] == "end")
            factors = (["_b_q"] if have else []) + ([str(min(k, 2 ** 53))] if k != 1 or not have else [])
            self.emit(d, "_b_p = " + " * ".join(factors))
        for p in reversed(pending):
            if p[0] == "end":
                self.emit(p[1], "end")
            else:
                self.emit(p[1], p[2], *p[3])
        self.emit(inner, f"_b_n = _b_chk(_b_n + _b_p, {self.site('count')})")
        self.emit(depth, "end")

    def count_factor_fails(self, form) -> bool:
        """Whether evaluating a counting nest's factor of ``form`` can raise (a range's length at run
        time, a value that is not a constant, a constant the doubles do not hold)."""
        if isinstance(form, Bind):
            return not OpSpeller.num(self.ex.v(form.value)).const
        if isinstance(form, Array):
            return form.wide is not None
        return form.length is None or not all(x.const for x in self.range_parts(form))

    def block(self, stmts, depth, mode, loop, nloops):
        for s in stmts:
            if isinstance(s, Let):
                v, name, kind = self.ex.v(s.expr), self.lname(s.var), self.plan.store(s)
                v = v if kind == "same" else OpSpeller.num(v)
                flag = f", _b_f_{name} = {v.code}, {OpSpeller.flag(v)}" if kind == "flagged" else f" = {v.code}"
                self.emit(depth, f"local {name}{flag}", s.node, nloops)
            elif isinstance(s, Check):
                cond = self.ex.truth(self.ex.v(s.expr))
                exit_ = "return 0" if loop is None else f"goto {loop[0] if s.exit == 'continue' else loop[1]}"
                if self.plan.truth(s) is not False:
                    self.emit(depth, f"if {cond} then {exit_} end", s.node, nloops)
            elif isinstance(s, Loop) and mode == "count" and (count := self.lower.count(s)) is not None:
                self.pure_count(count, depth, nloops)
            elif isinstance(s, Loop) and (part := self.split.get(id(s))) is not None:
                self.part(part, depth, mode, nloops)        # beast.ir.split: a function of its own
            elif isinstance(s, Loop) and (fused := self.lower.fused(s)) is not None:
                self.fused_code(fused, depth, mode, nloops)     # beast.ir.fuse: loops run as one
            elif isinstance(s, Loop):
                self.loop_code(s, depth, mode, nloops)
            elif isinstance(s, Tally):
                self.emit(depth, f"_b_T[{s.slot + 1}] = _b_T[{s.slot + 1}] + 1")   # beast stats
            elif mode == "count":   # Emit
                self.emit(depth, "_b_n = _b_n + 1")
            else:
                stores = "; ".join(f"_b_buf[_b_i + {i}] = {self.lname(c)}" if i else
                                   f"_b_buf[_b_i] = {self.lname(c)}" for i, c in enumerate(s.columns))
                if stores:
                    self.emit(depth, stores)
                self.emit(depth, f"_b_i = _b_i + {max(1, len(s.columns))}")
                self.emit(depth, "if _b_i >= _b_cap then _b_buf = _b_yield(_b_i); _b_i = 0 end")

    def labels(self):
        self.nlabel += 1
        return self.nlabel, f"_b_c{self.nlabel}", f"_b_x{self.nlabel}"

    def fused_code(self, fused, depth, mode, nloops):
        n, cont, brk = self.labels()
        chain = fused.chain
        first, last = chain[0][0], chain[-1][0]
        if len(chain) == 1:
            self.emit(depth, "do", first.node, nloops)
            self.emit(depth + 1, f"local {self.lname(first.var)} = {chain[0][1][0]}", first.node, nloops)
        else:
            columns = list(zip(*fused.combinations))
            self.emit(depth, f"for _b_q{n} = 1, {len(columns[0])} do", first.node, nloops)
            for i, ((loop, _), values) in enumerate(zip(chain, columns)):
                table = self.const_table(values)
                self.emit(depth + 1, f"local {self.lname(loop.var)} = {table}[_b_q{n}]", loop.node, nloops + i)
            self.emit(depth + 1, POLL)
        # leaving a loop of one value goes on with the next combination, as a continue does
        self.block(last.body, depth + 1, mode, (cont, cont if fused.single else brk), nloops + len(chain))
        for d, line in ((depth + 1, f"::{cont}::"), (depth, "end"), (depth, f"::{brk}::")):
            self.emit(d, line)

    def part(self, part, depth, mode, nloops):
        """Print the loop nest ``part.loop`` as a function of its own and call it:
        ``_b_P[i](vars...)`` returns the count, or the buffer state."""
        args = []
        for name, flagged in zip(part.params, part.flagged):
            lua = self.lname(name)
            args += [lua, f"_b_f_{lua}"] if flagged else [lua]
        extra = [] if mode == "count" else ["_b_buf", "_b_i", "_b_cap"]
        self.parts.append(None)
        pid = len(self.parts)
        self.parts[pid - 1] = self.function(      # not loop(): this function starts with its parameters
            f"_b_P[{pid}] = function({', '.join(extra + args)})", "local _b_n = 0" if mode == "count" else None,
            lambda: self.loop_code(part.loop, 1, mode, nloops),
            "return _b_n" if mode == "count" else "return _b_buf, _b_i")
        call = f"_b_P[{pid}]({', '.join(extra + args)})"
        self.emit(depth, f"_b_n = _b_chk(_b_n + {call}, {self.site('count')})" if mode == "count" else
                  f"_b_buf, _b_i = {call}")

    def form_lines(self, form, var, n, k):
        """The Lua of a loop form around its body: (lines before, the head opening the body or None,
        the line binding the variable inside, its check, lines after the loop); ``n``: the loop's
        label number, ``k``: the error site of a non-integer value."""
        if isinstance(form, Solved):
            return [f"local {var} = {self.solve_value(form)}"], f"if {var} then", None, None, []
        if isinstance(form, Bind):
            v = OpSpeller.num(self.ex.v(form.value))
            if form.check == "flag":
                return ([f"local {var}, _b_fv{n} = {v.code}, {v.flag}"], None, None,
                        f"if _b_fv{n} then _b_nonint({k}, {var}, true) end", [])
            check = None if form.check == "none" else f"_b_nonint({k}, {var}, {OpSpeller.flag(v)})"
            return [f"local {var} = {v.code}"], None, None, check, []
        if isinstance(form, Counted):
            return [], f"for {var} = {self.range_head(form)} do", None, None, []
        j, s0, st, cnt, tb, bad = (f"_b_{x}{n}" for x in ("j", "s", "d", "n", "t", "b"))
        if isinstance(form, Array):
            value = f"{self.const_table(tuple(map(int, form.values)))}[{j}]"
            if form.wide is not None:   # checked as it is bound: the error's configuration leaves it out
                value = f"_b_chk({value}, {self.site('overflow')})"
            return [], f"for {j} = 1, {len(form.values)} do", f"local {var} = {value}", None, []
        call = form.fill if isinstance(form, Scratch) and isinstance(form.fill, Call) else None
        if call is None:        # a table of values built at run time
            check = f"if not _b_isint({var}) then _b_nonint({k}, {var}) end" if isinstance(form, Scratch) else None
            return ([f"local {tb} = {self.seq_list(form)}"], f"for {j} = 1, #{tb} do", f"local {var} = {tb}[{j}]",
                    check, [])
        ref, args = self.call(call)
        check = f"if {j} == {bad} then _b_nonint({k}, {var}, true) end"
        if not call.closure:            # (a bad scalar is reported as returned: s0 + 0 * 0 is 0.0 for -0.0)
            check = f"if {j} == {bad} then _b_nonint({k}, {tb} and {var} or {s0}, true) end"
            return ([f"local {s0}, {st}, {cnt}, {tb}, {bad} = {ref}({args})"], f"for {j} = 0, {cnt} - 1 do",
                    f"local {var} = {tb} and {tb}[{j} + 1] or {s0} + {j} * {st}", check, [])
        ok, err, out = f"_b_ok{n}", f"_b_e{n}", f"_b_o{n}"
        self.out_tables.append(out)
        return ([f"local {ok}, {cnt}, {bad} = _b_pcall({ref}, {out}{', ' if args else ''}{args})",
                 f"local {err} = nil", f"if not {ok} then {err} = {cnt}; {cnt} = {out}.n; {bad} = -1 end"],
                f"for {j} = 0, {cnt} - 1 do", f"local {var} = {out}[{j} + 1]", check,
                [f"if {err} then _b_reraise({err}) end"] if form.pending else [])

    def loop_code(self, s: Loop, depth, mode, nloops):
        n, cont, brk = self.labels()
        form = self.lower.form(s)
        before, head, bind, check, after = self.form_lines(form, self.lname(s.var), n, self.site("nonint", s.var))
        at = (s.node, nloops)
        inner = depth + 1 if before else depth          # a block (do ... end) around the loop
        if before:
            self.emit(depth, "do")
        for line in before + [head] * (head is not None):
            self.emit(inner, line, *at)
        body = inner + 1 if head else inner
        if bind:
            self.emit(body, bind, *at)
        if check:
            self.emit(body, check, s.node, nloops + 1)
        if self.lower.polls(form):
            self.emit(body, POLL)
        self.block(s.body, body, mode, (cont, cont if form.single else brk), nloops + 1)
        if form.single:                                 # Bind, Solved: no loop
            for d in ((inner, depth) if head else (depth,)):
                self.emit(d, "end")
            self.emit(depth, f"::{cont}::")
            return
        self.emit(body, f"::{cont}::")
        self.emit(inner, "end")
        for line in after:
            self.emit(inner, line, *at)
        self.emit(inner, f"::{brk}::")
        if inner != depth:
            self.emit(depth, "end")

    # -- whole chunk
    def render(self) -> LuaSource:
        p = self.program
        self.print_functions()
        mains = []
        for head, counter, mode in (("local function _b_count()", "_b_n", "count"),
                                     ("local function _b_rows(_b_buf, _b_cap)", "_b_i", "rows")):
            self.split = self.plan.parts[mode]              # beast.ir.split
            mains += self.function(head, f"local {counter} = 0", lambda: self.block(p.body, 1, mode, None, 0),
                                   f"return {counter}") + [("", None)]
        head = [f"-- beast enumerator for space {p.name!r} (LuaJIT): generated code, do not edit",
                f"-- loop order: {', '.join(p.loop_order) or '(no loops)'}"]
        head += [f"-- {ident}: {'translated to Lua' if why is None else f'called in Python ({why})'}"
                 for ident, (_, _, why, _) in self.funcs.items()]
        head += HELPERS.strip("\n").split("\n")
        many = len(self.tables) > 16
        if many:
            head.append("local _b_KT = {}")
        for values, name in self.tables.items():
            head.append(f"{f'_b_KT[{name[4:]}]' if many else f'local {name}'} = {{{', '.join(map(str, values))}}}")
        head += self.function_texts()
        if p.tallies:
            head.append("local _b_T = _b_R.tally")      # beast stats: the runtime's counters
        head.append("local _b_P = {}")
        lines = [(text, None) for text in head] + [x for f in self.parts for x in f] + mains
        lines.append(("return _b_count, _b_rows, _b_P", None))
        text = "\n".join(t for t, _ in lines) + "\n"
        if many:                # more tables than a function's upvalues: one table of them
            text = re.sub(r"\b_b_K(\d+)\b", r"_b_KT[\1]", text)
        line_nodes = {i: e for i, (_, e) in enumerate(lines, 1) if e is not None}
        for n in p.loop_order:
            self.lname(n)
        funcs = self.funcs.items()
        return LuaSource(text, line_nodes, [None, *self.sites], dict(self.names),
                         {i: f[0] for i, f in funcs if f[3] is None}, [i for i, f in funcs if f[3] is not None],
                         {i: f[2] for i, f in funcs if f[3] is None})


def print_lua(program: Program, force_python=()) -> LuaSource:
    """Generate the Lua chunk of a program (``force_python``: idents of user functions to call in
    Python even when they could be translated; for tests)."""
    return LuaPrinter(program, force_python).render()
