"""Print the loop-nest IR as C99 with Python's semantics (the C backend's enumerator): a prelude
(``c_prelude.h``), the user functions (translated by :mod:`beast.codegen.c_body`, or tabulated),
and ``bn_walk(w)``, the nest. What the file holds and where C cannot be Python: "The C backend"
in ``docs/semantics.md``."""
from __future__ import annotations

from ..ir.record import record
from pathlib import Path

from ..errors import BeastError
from ..ir import Check, Emit, Let, Loop, Program, Tally, walk_statements
from ..ir.describe import describe
from ..ir.loops import Array, Bind, Call, Counted, Divisors, Scratch, Solved
from ..ir.nestplan import prepare
from ..ir.sites import KIND, KINDS, LoopValueSite, NodeSite, UserSite
from ..ir.targets import C_FUNCS, C_LOOPS
from ..ir.tabulate import MAX_VALUES, Table, Tabulator
from .c_body import _FuncGen, print_table
from .c_exprs import CTYPE, ZERO, CVal, _Code, _Gen, _mangle, c_comment, c_int, c_prologue
from .python import PyExpr

SETOP = {"union": 0, "intersection": 1, "difference": 2}


@record
class CSource:
    """The printed enumerator and what the runtime needs to explain its errors."""
    text: str
    sites: list                 # site id -> NodeSite | LoopValueSite | UserSite | ExcSite | TableSite
    objects: list               # Python values a tabulated function produced that C cannot hold
    columns: tuple
    claim_depth: int            # deepest claim point (-1: the walk is one work item)
    tabulated: tuple = ()       # functions printed as tables
    translated: tuple = ()      # functions translated to C


# ---------------------------------------------------------------------------------------------
# The C prelude: Python's arithmetic on 64-bit integers and doubles.

# the error kinds and limits are filled in once: the prelude is the same for every program
_KINDS_ENUM = "enum {\n" + "".join(f"    BN_K_{k.upper()} = {KIND[k]},\n" for k in KINDS) + "};"
_PRELUDE = (Path(__file__).with_name("c_prelude.h")).read_text(encoding="utf-8")
_PRELUDE = _PRELUDE.replace("@KINDS@", _KINDS_ENUM).replace("@MAX_VALUES@", str(MAX_VALUES))


def _prelude(ncols, nseq, ntally=0):
    return f"#define BN_NCOLS {ncols}\n#define BN_NSEQ {nseq}\n#define BN_NTALLY {ntally}\n" + _PRELUDE


def runtime_prelude() -> str:
    """The prelude without a space's sizes: what beast's runtime (``c_driver.c``) is compiled with."""
    return _PRELUDE


# ---------------------------------------------------------------------------------------------
# The unit: global state of one printing

class _Unit:
    def __init__(self, program, decisions):
        self.program = program
        self.decisions = decisions  # ident -> beast.ir.translate.Decision
        self.sites = [None]
        self.site_ids = {}
        self.objects = []
        self.statics = []
        self.functions = {}        # ident -> (C name, text)
        self.tabulated, self.translated = [], []
        self.ntmp = 0
        self.nseq = 0
        self.arrays = {}

    def tmp(self):
        self.ntmp += 1
        return f"bn_t{self.ntmp}"

    def site(self, info):
        self.sites.append(info)
        return len(self.sites) - 1

    def user_site(self, filename, lineno, col, end):
        k = (filename, lineno, col, end)
        if k not in self.site_ids:
            self.site_ids[k] = self.site(UserSite(*k))
        return self.site_ids[k]

    def object(self, v):
        """The index of a Python value a table holds that C cannot (``CSource.objects``)."""
        self.objects.append(v)
        return len(self.objects) - 1

    def int_array(self, values):
        values = tuple(values)
        if values not in self.arrays:
            name = f"bn_vals{len(self.arrays) + 1}"
            body = ", ".join(c_int(v) for v in values) or "0"
            self.statics.append(f"static const int64_t {name}[] BN_UNUSED = {{{body}}};")
            self.arrays[values] = name
        return self.arrays[values]

    def function(self, ident):
        """The C name of the user function ``ident`` and its parameters' types, printed at its
        first call (translated or tabulated: beast.ir.translate.decide_all)."""
        decision = self.decisions[ident]
        if ident not in self.functions:
            fname = f"bn_fn_{_mangle(ident)}"
            self.functions[ident] = (fname, None)
            done, name = decision.done, self.program.funcs[ident].name
            if isinstance(done, Table):
                text = print_table(self, done, fname)
                self.tabulated.append(name)
            else:
                text = _FuncGen(self, done, fname).translate()
                self.translated.append(name)
            self.functions[ident] = (fname, text)
        return self.functions[ident][0], decision.ptypes.values()


# ---------------------------------------------------------------------------------------------
# The loop nest

class CPrinter:
    """Print a :class:`~beast.ir.Program` as C."""

    def __init__(self, program: Program, pyfuncs=None):
        self.program = program
        self._pyfuncs = pyfuncs
        # every decision first (beast.ir.nestplan): the nest's ops, the user functions it calls
        self.plan = prepare(program, C_LOOPS, C_FUNCS, ("both",), Tabulator(program, self.pyfuncs))
        self.unit = _Unit(program, self.plan.funcs)
        self.lower = self.plan.lower
        self.code = _Code(1)
        self.gen = _Gen(self.unit, self.code, self.resolve, self.leave, self.plan.ops)
        self.py = PyExpr(program.types, self.lower.to_bool)
        self.loop_vars = {}        # var -> CVal (its C variable)
        self.derived = {}          # var -> CVal
        self.fail_used = set()
        self.nloops = 0
        self.claims = self.lower.work_items()
        self.claim_depth = len(self.claims) - 1
        for st in walk_statements(program.body):
            if isinstance(st, Loop):
                self.loop_vars[st.var] = CVal(f"v_{_mangle(st.var)}", "int")
            elif isinstance(st, Let):
                self.derived[st.var] = CVal(f"d_{_mangle(st.var)}", self.lower.var_type(st.var))

    def pyfuncs(self):
        if callable(self._pyfuncs):
            self._pyfuncs = self._pyfuncs()
        return self._pyfuncs

    def resolve(self, name):
        v = self.loop_vars.get(name) or self.derived.get(name)
        if v is not None:
            return v
        raise BeastError(f"internal error: the loop nest reads '{name}', which it does not define")

    def leave(self, bound):
        """Go to the failure label of ``bound`` (default: the statement's) loops."""
        bound = self.gen.bound if bound is None else bound
        self.fail_used.add(bound)
        return f"w->nbound = {bound}; goto bn_f{bound};"

    def at(self, site, bound):
        """Attribute errors to ``site`` and ``bound`` loops from now on."""
        self.gen.site, self.gen.bound = site, bound

    def node_site(self, stmt, lets):
        return self.unit.site(NodeSite(getattr(stmt, "node", None), stmt, tuple(lets)))

    # -- statements
    def block(self, stmts, depth, loops, lets):
        """``loops``: label ids of the enclosing loops (innermost last); ``lets``: lets in scope."""
        lets = list(lets)
        code = self.code
        for s in stmts:
            if isinstance(s, Let):
                code(c_comment(f"let {s.var} = {self.py(s.expr)}"))
                self.at(self.node_site(s, lets), depth)
                d = self.derived[s.var]
                code(f"{d} = {self.gen.convert(self.gen.value(s.expr), d.type)};")
                lets.append(s)
            elif isinstance(s, Check):
                code(c_comment(f"check {s.name}: {self.py(s.expr)}" + (" (break)" if s.exit == "break" else "")))
                self.at(self.node_site(s, lets), depth)
                value, fires = self.gen.value(s.expr), self.plan.truth(s)
                label = ("bn_b" if s.exit == "break" else "bn_n") + str(loops[-1]) if loops else None
                self.used_labels.add(label)     # (None: no loop around, nothing to label)
                target = f"goto {label};" if label else "return 0;"
                if fires:
                    code(target)
                elif fires is None:
                    code(f"if ({self.gen.truth_of(value)}) {target}")
            elif isinstance(s, Loop):
                claim = any(s is c for c in self.claims)
                if claim:
                    code("if (BN_UNLIKELY(__atomic_load_n(w->cancel, __ATOMIC_RELAXED))) return 2;")
                    code(f"if (w->split == {depth}) {{ int bn_c = bn_claim(w); if (bn_c < 0) return 2; "
                         f"if (bn_c == 0) goto bn_s{depth}; }}")
                self.loop(s, depth, loops, lets)
                if claim:
                    code(f"if (w->split == {depth} && bn_end(w) < 0) return 2;")
                    code(f"bn_s{depth}:;")
            elif isinstance(s, Tally):
                code(f"w->tally[{s.slot}]++;")
            elif isinstance(s, Emit):
                code("if (w->rows) {")
                code("    int64_t *bn_r = bn_row(w);")
                code(f"    if (BN_UNLIKELY(!bn_r)) {self.gen.fail(0, 'BN_K_NO_MEMORY', depth)}")
                for j, col in enumerate(s.columns):
                    code(f"    bn_r[{j}] = {self.resolve(col).text};")
                code("} else {")
                code("    w->count++;")
                code("}")
            else:
                raise BeastError(f"internal error: unknown statement {s!r}")

    # -- pure counting (as the Python backend's count mode does it)
    def pure_count(self, count, depth, lets):
        """Count a nest of loops that only multiply, as the loops would: lengths from the outside
        in, each sequence evaluated at the first value of the loops around it (its value does not
        depend on them), none after an empty one; an error names that loop and the values bound."""
        code = self.code
        pc, done = self.unit.tmp(), self.unit.tmp()
        code(f"int64_t {pc} = 1;")
        for j, (l, form) in enumerate(count.parts):
            site = self.node_site(l, lets)
            var = self.loop_vars[l.var]
            self.at(site, depth + j)
            if isinstance(form, Bind):
                code(f"{var} = {self.gen.value(form.value)};")
            elif isinstance(form, Array) and not form.values:
                code(f"{pc} = 0;")
                code(f"goto {done};")
            elif isinstance(form, Array):
                code(f"{var} = {c_int(form.values[0])};")
                self.gen.guard(f"__builtin_mul_overflow({pc}, {len(form.values)}, &{pc})", site,
                               "BN_K_COUNT_OVERFLOW")
            else:
                a, b, c = self.range(form, site)
                m = self.unit.tmp()
                code(f"uint64_t {m} = bn_range_len({a}, {b}, {c});")
                code(f"if ({m} == 0u) {{ {pc} = 0; goto {done}; }}")
                self.gen.guard(f"{m} > (uint64_t)INT64_MAX || __builtin_mul_overflow({pc}, (int64_t){m}, &{pc})",
                               site, "BN_K_COUNT_OVERFLOW")
                code(f"{var} = {a};")
        code(f"goto {done};")
        code(f"{done}:")
        code(f"if (BN_UNLIKELY(__builtin_add_overflow(w->count, {pc}, &w->count))) "
             f"{self.gen.fail(0, 'BN_K_COUNT_OVERFLOW', depth)}")

    # -- loops (the forms of beast.ir.loops)
    def loop(self, s, depth, loops, lets):
        code = self.code
        self.nloops += 1
        lid = self.nloops
        var = self.loop_vars[s.var]
        site = self.node_site(s, lets)
        form = self.lower.form(s)
        code(c_comment(f"for {s.var} in {describe(form, self.py)}"))
        count = self.lower.count(s)
        if count is not None:
            code.open("if (!w->rows) {")
            self.pure_count(count, depth, lets)
            code.close("} else {")
            code.indent += 1
        code.open("{")
        self.at(site, depth)
        if isinstance(form, Counted):
            a, b, c = self.range(form, site)
            n, i = self.unit.tmp(), self.unit.tmp()
            code(f"uint64_t {n} = bn_range_len({a}, {b}, {c});")
            code.open(f"for (uint64_t {i} = 0; {i} < {n}; {i}++) {{")
            code(f"{var} = bn_range_at({a}, {c}, {i});")
        elif isinstance(form, Array):
            i = self.unit.tmp()
            arr = self.unit.int_array(form.values) if form.values else None
            code.open(f"for (int64_t {i} = 0; {i} < {len(form.values)}; {i}++) {{")
            code(f"{var} = {arr}[{i}];" if arr else f"{var} = 0;")
        elif isinstance(form, Bind):
            self.bind(var, self.gen.value(form.value), form.check, s, depth)
            code.open("{")
        elif isinstance(form, (Solved, Divisors)):
            v, head = self.values(form, site)
            code.open(f"{head}) {{")
            code(f"{var} = {v};")
        else:   # Scratch
            q = self.scratch(f"bn_q{lid}")
            self.fill(form.fill, q, site, s)
            i, x = self.unit.tmp(), self.unit.tmp()
            code.open(f"for (int64_t {i} = 0; {i} < {q}->n; {i}++) {{")
            code(f"bn_num {x} = bn_seq_get({q}, {i});")
            self.bind(var, CVal(x, "num"), "flag", s, depth)
        if self.lower.polls(form):
            code("BN_POLL();")
        self.block(s.body, depth + 1, loops + [lid], lets)
        if f"bn_n{lid}" in self.used_labels:
            code(f"bn_n{lid}:;")
        code.close()
        if isinstance(form, Solved):
            code.close()
        if isinstance(form, Scratch) and form.pending:
            code(f"if (BN_UNLIKELY({q}->pkind)) {self.gen.fail(f'{q}->psite', f'{q}->pkind', depth)}")
        code.close()
        if count is not None:
            code.close()
        if f"bn_b{lid}" in self.used_labels:
            code(f"bn_b{lid}:;")

    def scratch(self, q):
        """Name the walk's next scratch sequence ``q``."""
        self.code(f"bn_seq *{q} = &w->seqs[{self.unit.nseq}];")
        self.unit.nseq += 1
        return q

    def range(self, form, site):
        return self.gen.range_args([self.gen.value(b.expr) for b in form.bounds], site)

    def bind(self, var, value, check, s, depth):
        """``var = value`` with a non-integer ``check`` (:class:`~beast.ir.loops.Bind`'s)."""
        code = self.code
        if check == "none":
            code(f"{var} = {value};")
            return
        vsite = self.unit.site(LoopValueSite(s.node, s.var))
        if check == "always":
            code(f"w->bad = bn_nf({value}); {self.gen.fail(vsite, 'BN_K_NON_INTEGER', depth)}")
            code(f"{var} = 0;")
            return
        v = self.gen.stable(value)
        code(f"if (BN_UNLIKELY({v}.f)) {self.gen.fail(vsite, 'BN_K_NON_INTEGER', depth, f'w->bad = {v}; ')}")
        code(f"{var} = {v}.i;")

    def values(self, form, site, reset=None):
        """Start a Solved or Divisors form's values, for its loop or its scratch fill (after
        ``reset``): the value (int64) and the unclosed ``if (``/``while (`` test that opens it (a
        Solved form's guard block stays open)."""
        gen, code = self.gen, self.code
        if isinstance(form, Solved):
            if reset:
                code(reset)
            code.open(f"if ({gen.truth_of(gen.value(form.guard))}) {{")
            v = gen.stable(gen.value(form.value))     # an integer (beast.ir.tighten solves integers only)
            a, b, c = self.range(form.base, site)
            return v, f"if (bn_range_has({a}, {b}, {c}, {v})"
        it = self.unit.tmp()        # the divisor iteration: n, then start and stop, as Python
        n, a, b = (gen.stable(gen.value(x)) for x in (form.n, form.base.start.expr, form.base.stop.expr))
        gen.guard(f"{n} != 0 && bn_divs_direct({a}, {b}) && {a} <= 0 && {b} > 0", site, "BN_K_ZERO_MOD")
        code(f"bn_divs {it};")
        code(f"bn_divs_init(&{it}, {n}, {a}, {b});")
        if reset:
            code(reset)
        v = self.unit.tmp()
        code(f"int64_t {v};")
        return v, f"while (bn_divs_next(&{it}, &{v})"

    def fill(self, f, q, site, loop):
        """Fill the scratch sequence ``q`` (immediate errors fail now; a closure's stay pending)."""
        code, gen = self.code, self.gen
        if isinstance(f, Call):
            fname, args = gen.user_call(f.func, lambda: [gen.value(a) for a in f.args])
            code(f"bn_seq_reset({q});")
            call = f"{fname}(w, {q}{args})"
            if f.closure:
                code(f"if (BN_UNLIKELY({call})) {{ {q}->psite = w->site; {q}->pkind = w->kind; }}")
            else:
                code(f"if (BN_UNLIKELY({call})) {self.gen.fail_prop()}")
                vsite = self.unit.site(LoopValueSite(loop.node, loop.var))
                gen.guard(f"{q}->kind == BN_SEQ_NONE", vsite, "BN_K_RETURNED_NONE")
                code(f"if (BN_UNLIKELY({q}->kind == BN_SEQ_BADRET)) "
                     f"{self.gen.fail(vsite, 'BN_K_BAD_RETURN', first=f'w->bad.i = {q}->extra; ')}")
        elif isinstance(f, Counted):
            gen.to_seq(q, CVal(None, "range", parts=self.range(f, site)))
        elif isinstance(f, Array):
            arr = self.unit.int_array(f.values) if f.values else "NULL"
            code(f"bn_seq_ints({q}, {arr}, {len(f.values)});")
        elif isinstance(f, Bind):
            v = gen.value(f.value)
            code(f"bn_seq_reset({q});")
            gen.to_seq(q, v)
        elif isinstance(f, (Solved, Divisors)):
            v, head = self.values(f, site, reset=f"bn_seq_reset({q});")
            push = f"BN_UNLIKELY(bn_e = bn_seq_push({q}, bn_ni({v})))) {self.gen.fail(site, 'bn_e')}"
            if isinstance(f, Solved):
                code(f"{head} && {push}")
                code.close()
            else:
                code(f"{head})")
                code(f"    if ({push}")
        else:   # SetOp
            ql, qr = self.scratch(self.unit.tmp()), self.scratch(self.unit.tmp())
            self.fill(f.left, ql, site, loop)
            self.fill(f.right, qr, site, loop)
            for side in (ql, qr):       # the error a side's fill left pending
                code(f"if (BN_UNLIKELY({side}->pkind)) {gen.fail(f'{side}->psite', f'{side}->pkind')}")
            gen.call(f"bn_setop({q}, {SETOP[f.op]}, {ql}, {qr})", site)

    # -- the file
    def render(self) -> CSource:
        p = self.program
        self.used_labels = set()
        self.block(p.body, 0, [], [])
        walk_lines = self.code.lines
        out = [f"/* beast enumerator for space {p.name!r}: generated code, do not edit */",
               c_comment(f"loop order: {', '.join(p.loop_order) or '(no loops)'}"),
               c_comment(f"columns: {', '.join(p.columns) or '(none)'}"),
               _prelude(len(p.columns), self.unit.nseq, len(p.tallies)),
               f"#define BN_CLAIM_DEPTH {self.claim_depth}", ""]
        out += self.unit.statics
        out += [""] + [line for _, text in self.unit.functions.values() for line in (text, "")]
        names = list(self.loop_vars.values()) + list(self.derived.values())
        decls = ["int bn_e = 0;"] + [f"{CTYPE[v.type]} {v} = {ZERO[v.type]};" for v in names]
        used = ["bn_e"] + [v.text for v in names]
        out += ["static int bn_walk(bn_w *w)", "{"] + c_prologue(decls, used) + walk_lines + ["    return 0;"]
        # failures: record the bound loop values (loop order), deepest first, falling through
        for b in range(max(self.fail_used, default=-1), -1, -1):
            out += [f"bn_f{b}:"] if b in self.fail_used else []
            if b > 0:
                name = p.loop_order[b - 1] if b - 1 < len(p.loop_order) else None
                out.append(f"    w->cfg[{b - 1}] = {self.loop_vars.get(name) or 0};")
        out += ["    return 1;", "}"] if self.fail_used else ["}"]
        out += ["", "BN_HIDDEN const bn_space bn_the_space = {BN_NCOLS, BN_NSEQ, BN_NTALLY, BN_CLAIM_DEPTH, bn_walk};"]
        text = "\n".join(out) + "\n"
        return CSource(text, self.unit.sites, self.unit.objects, tuple(p.columns), self.claim_depth,
                       tuple(self.unit.tabulated), tuple(self.unit.translated))


def print_c(program: Program, pyfuncs=None) -> CSource:
    """Generate the C enumerator of a program. ``pyfuncs``: the user functions compiled in Python
    (ident -> callable, or a callable returning that dict), needed only to tabulate."""
    return CPrinter(program, pyfuncs).render()
