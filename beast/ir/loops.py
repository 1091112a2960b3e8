"""Loop forms: how each loop of the nest runs, decided once for every target (data only).

A :class:`~beast.ir.nest.Loop`'s sequence (:mod:`beast.expr`: RangeSeq, ValuesSeq, ScalarSeq,
SolveSeq, DivisorSeq, CallSeq, SetOpSeq) is lowered here into one of a few forms; a printer only
spells them, in its own text:

- :class:`Counted`: ``range(start, stop, step)``, with each bound's check (an int as it is, a bool
  as 0/1, a float or a num checked when it runs: Python's range() refuses a float) and the sign of
  the step where the target's intervals prove it (no step-zero check, a known loop direction);
- :class:`Array`: constant integers; ``wide`` when one is outside the integers the target holds
  exactly (``LoopTarget.wide``: C refuses it before printing, Lua raises "integer overflow" when it
  is reached);
- :class:`Bind`: one value bound to the loop variable, and its non-integer check;
- :class:`Solved`: one value when a guard holds and the value is in a range (tightening);
- :class:`Divisors`: the divisors of n in a step-1 range (all of it when n == 0; when the range
  holds 0 and n != 0, Python's ``n % 0`` fails);
- :class:`Scratch`: values built before the loop runs (a :class:`Call` of a deferred or closure
  user function, a :class:`SetOp` of two such fills, or a form above as an operand), then walked,
  each value checked to be an integer; a closure's error stays *pending* until the loop has seen
  the values produced before it (when Python's lazy loop raises it);
- :class:`Fused`: a chain of perfectly nested constant loops a target runs as one
  (:mod:`beast.ir.fuse`);
- :class:`Count`: a nest that only multiplies (:func:`beast.ir.counting.pure_nest`), counted as a
  product of the lengths of its Counted/Array/Bind forms.

Which loops are at most one value long (``single``: leaving them is going on with the next
value of the loop around) is decided here too. What a target can hold is a :class:`LoopTarget`.
"""
from __future__ import annotations

import itertools
from beast.ir.record import record, replace as record_replace

from ..errors import BeastError
from ..expr.nodes import Const, Expr, static_type
from ..expr.sequences import (CallSeq, DivisorSeq, RangeSeq, ScalarSeq, SetOpSeq, SolveSeq, ValuesSeq, range_length)
from .body import Untranslatable
from .counting import pure_nest
from .fuse import fusable
from .intervals import NestIntervals
from .nest import Check, Let, Loop, Tally, walk_statements


@record
class LoopTarget:
    """How a target runs its loop nest (the backends' records: :mod:`beast.ir.targets`). ``ints``:
    the :class:`beast.ir.targets.Target` of its integers (exact in [lo, hi]; None: unbounded; else
    the nest's expressions are lowered once, for ``ints``: :attr:`LoopLowering.ops`);
    ``intervals``: integers strictly inside (-limit, limit), limit = hi + 1, have known intervals
    (checks proved away; the intervals come from the ops); ``fuse``: run short constant chains as
    one loop; ``count_safe``: a pure counting nest is one expression, so its inner sequences must
    not fail; ``split``: how much one of its functions holds (a :class:`beast.ir.split.Budget`;
    None: no limit); ``stores``: the static types a nest variable is stored as (any other: num;
    None: every type as it is); ``classes``: values keep their class when they run (Python: a
    bound value that is not statically an int is tested, a bool made an int); ``claims``: work
    items are split at most this many loops deep (None: one item); ``wide``: a constant of an
    Array the integers do not hold is "refuse"d before printing, or "check"ed when it is reached;
    ``says``: how a refusal is worded ("expr": a nest expression the ops refuse, "part": a split
    part that takes more parameters than a function can)."""
    ints: object = None         # a targets.Target
    intervals: bool = False
    fuse: bool = False
    count_safe: bool = True
    split: object = None        # beast.ir.split imports this module, not the other way
    stores: tuple | None = None
    classes: bool = False
    claims: int | None = None
    wide: str = "check"
    says: dict | None = None

    @property
    def lo(self):
        return None if self.ints is None else self.ints.lo

    @property
    def hi(self):
        return None if self.ints is None else self.ints.hi

    @property
    def limit(self):
        """Where interval analysis stops (None: none)."""
        return self.ints.hi + 1 if self.intervals else None


# ---------------------------------------------------------------------------------------------
# The forms

@record
class Bound:
    """A range() argument: ``kind`` is "int" (as it is), "bool" (0 or 1), "check" (a float or a
    num: Python's range() TypeError when it is a float) or "bad" (not a number)."""
    expr: Expr
    type: str

    @property
    def kind(self):
        return _BOUND_KINDS.get(self.type, "bad")


_BOUND_KINDS = {"int": "int", "bool": "bool", "float": "check", "num": "check"}


@record
class Counted:
    start: Bound
    stop: Bound
    step: Bound
    step_sign: int = 0          # +1 / -1 when proved (no step-zero check), else 0
    length: int | None = None   # when every bound is a constant integer and the step is not 0
    single = False

    @property
    def bounds(self):
        return (self.start, self.stop, self.step)

    @property
    def last(self):
        """How an inclusive for-loop limit comes from ``stop`` where the step's sign is known:
        "-" (stop - 1, counting up), "+" (stop + 1, counting down), else None (decided at run
        time, with the step-zero check): :meth:`LoopLowering.last_op` gives that operation."""
        return "-" if self.step_sign > 0 else "+" if self.step_sign < 0 else None

    @property
    def unit_step(self):
        """The step is the constant 1 (membership is a comparison with the bounds)."""
        step = self.step
        return step.kind in ("int", "bool") and isinstance(step.expr, Const) and step.expr.value == 1


@record
class Array:
    values: tuple
    wide: int | None = None     # the first value the target does not hold exactly
    single = False


@record
class Bind:
    """``value`` of static ``type``; ``check`` (:func:`bind_check`): "none" (an int, or a bool as
    0/1), "always" (a float or a str: never an integer), "flag" (a num: an integer unless it is a
    float), "class" (a target whose values keep their class: anything but an int is tested when it
    runs, a bool made an int)."""
    value: Expr
    type: str
    check: str = "none"
    single = True


def bind_check(type_, classes=False) -> str:
    """The check of a value of static ``type_`` bound to a loop variable (:class:`Bind`)."""
    if classes:
        return "none" if type_ == "int" else "class"
    return "none" if type_ in ("int", "bool") else "flag" if type_ == "num" else "always"


@record
class Solved:
    guard: Expr
    value: Expr
    base: Counted
    single = True


@record
class Divisors:
    n: Expr
    base: Counted               # step 1
    single = False


@record
class Call:
    """A user function's values: a deferred one (returns a range, a list or a value) or a closure
    (a generator: its error is pending until its values have been walked)."""
    func: str
    args: tuple
    closure: bool


@record
class SetOp:
    op: str                     # "union" | "intersection" | "difference"
    left: object                # a fill: Call | SetOp | Counted | Array | Bind | Solved | Divisors
    right: object


@record
class Scratch:
    """Walk the values of ``fill``, each checked to be an integer; ``pending``: a closure's error
    is raised after the loop (it ran to its end before the loop started)."""
    fill: object
    pending: bool = False
    single = False


@record
class Fused:
    """``chain``: ((loop, values), ...) run as one loop over their combinations (one loop of one
    value: a block); ``body``: the innermost loop's statements."""
    chain: tuple
    single: bool

    @property
    def combinations(self):
        return list(itertools.product(*(vals for _, vals in self.chain)))


@record
class Count:
    """A nest that only emits: ``parts`` are (loop, form) outermost first, each form a Counted,
    an Array or a Bind (which counts 1)."""
    parts: tuple

    @property
    def factors(self):
        """The product to print, innermost first: a Counted whose length is known at run time
        only, or an int; the innermost constant lengths are folded into one int."""
        out = []
        for _, form in reversed(self.parts):
            n = 1 if isinstance(form, Bind) else len(form.values) if isinstance(form, Array) else form.length
            if n is not None and len(out) == 1 and isinstance(out[0], int):
                out[0] *= n
            else:
                out.append(form if n is None else n)
        return out


# ---------------------------------------------------------------------------------------------
# The lowering

class LoopLowering:
    """The loop forms of one program for one :class:`LoopTarget`."""

    def __init__(self, program, target: LoopTarget):
        self.program, self.types = program, program.types
        self.target = target
        self.lo, self.hi = target.lo, target.hi     # (LoopTarget's properties, read once)
        self.ivs = self.ops = None
        self._stored = None if target.stores is None else _stored(program, target.stores)
        if target.ints is not None:
            # the nest's expressions lowered once (beast.ir.ops), for the intervals and the printer;
            # imported here: a target without integers (the Python printer's) does not need the ops
            from . import ops
            types, ints, ivs = program.types, target.ints, {}
            if target.intervals:
                ints = record_replace(ints, var_iv=ivs.get)
            type_of = self.var_type if self._stored is not None else lambda name: types.get(name, "num")
            self.ops = ops.Lowering(type_of, target=ints, memo=True)
            if target.intervals:
                self.ivs = NestIntervals(program, target.limit, ivs, self.ops)
        self._forms = {}            # id(loop) -> (loop, form)
        self._fused = {}            # id(loop) -> (loop, Fused or None): printers ask at every level
        self._counts = {}           # id(loop) -> (loop, Count or None): split and the printer ask
        self._limits = {}           # id(form) -> (form, op): count and rows print each for-loop

    def var_type(self, name) -> str:
        """The static type the target stores the nest variable ``name`` as (``LoopTarget.stores``:
        a loop's is an int; a let's its own type where the target holds it, else num)."""
        if self._stored is None:
            return self.types.get(name, "num")
        t = self._stored.get(name)
        if t is None:
            raise BeastError(f"internal error: the loop nest reads '{name}', which it does not define")
        return t

    def work_items(self) -> list:
        """The loops whose runs are the work items of a threaded run (:func:`claim_chain`, at most
        ``LoopTarget.claims`` deep; empty: the whole walk is one item)."""
        return [] if self.target.claims is None else claim_chain(self.program, self.target.claims)

    def to_bool(self, e) -> bool:
        """Whether the operand ``e`` of beast's ``&``/``|`` is converted to a bool: its static type
        is not one (the value of ``&``/``|`` is a bool in every backend; Python's and/or return an
        operand)."""
        return static_type(e, self.types) != "bool"

    @staticmethod
    def _memo(table, key, make):
        """``make()`` once per loop or form (the entry keeps ``key`` alive, so its id stays its own)."""
        hit = table.get(id(key))
        if hit is None:
            hit = table[id(key)] = (key, make())
        return hit[1]

    def form(self, loop):
        """The form of ``loop``'s sequence (never Fused: see :meth:`fused`)."""
        hit = self._forms.get(id(loop))         # (_memo's, inline: printers ask for every loop)
        if hit is None:
            form = self.seq(loop.seq)
            wide = _wide(form) if self.target.wide == "refuse" else None
            if wide is not None:
                raise BeastError(f"iterator '{loop.var}' has the value {wide}, which does not fit in "
                                 f"{self.target.ints.bits} bits")
            hit = self._forms[id(loop)] = (loop, form)
        return hit[1]

    @staticmethod
    def polls(form) -> bool:
        """Whether a loop of ``form`` polls for a stop request (Ctrl-C) as it iterates: every
        form that can run many times (not Bind's or Solved's one value), so that no loop runs
        long unchecked (targets without Python's own signal checks print the poll)."""
        return not isinstance(form, (Bind, Solved))

    def fused(self, loop):
        """A :class:`Fused` chain starting at ``loop`` where the target fuses, else None."""
        if not self.target.fuse:
            return None
        return self._memo(self._fused, loop, lambda: self._fuse(loop))

    def _fuse(self, loop):
        chain = fusable(loop, self.target.limit)
        return None if chain is None else Fused(tuple(chain), len(chain[-1][1]) == 1)

    def count(self, loop):
        """A :class:`Count` of the nest at ``loop`` when it only multiplies, else None."""
        hit = self._counts.get(id(loop))        # (as in form)
        if hit is None:
            hit = self._counts[id(loop)] = (loop, self._count(loop))
        return hit[1]

    def _count(self, loop):
        nest = pure_nest(loop, self.types, inner_safe=self.target.count_safe)
        if nest is None:
            return None
        return Count(tuple((l, self.form(l)) for l in nest))

    def seq(self, seq):
        if isinstance(seq, RangeSeq):
            return self.counted(seq)
        if isinstance(seq, ValuesSeq):
            return self.array(seq.values)
        if isinstance(seq, ScalarSeq):
            t = static_type(seq.value, self.types)
            return Bind(seq.value, t, bind_check(t, self.target.classes))
        if isinstance(seq, SolveSeq):
            return Solved(seq.guard, seq.value, self.counted(seq.base))
        if isinstance(seq, DivisorSeq):
            return Divisors(seq.n, self.counted(seq.base))
        if isinstance(seq, (CallSeq, SetOpSeq)):
            return Scratch(self.fill(seq), isinstance(seq, CallSeq) and seq.closure)
        raise TypeError(f"internal error: unknown sequence {seq!r}")

    def fill(self, seq):
        if isinstance(seq, CallSeq):
            return Call(seq.func, tuple(seq.args), seq.closure)
        if isinstance(seq, SetOpSeq):
            return SetOp(seq.op, self.fill(seq.left), self.fill(seq.right))
        return self.seq(seq)

    def counted(self, seq: RangeSeq) -> Counted:
        start, stop, step = (Bound(x, static_type(x, self.types)) for x in seq.exprs())
        sign = 0
        if self.ivs is not None and step.kind in ("int", "bool"):
            iv = self.ivs.of(step.expr)
            sign = 1 if iv is not None and iv[0] > 0 else -1 if iv is not None and iv[1] < 0 else 0
        consts = [int(x.expr.value) for x in (start, stop, step)
                  if isinstance(x.expr, Const) and type(x.expr.value) in (int, bool)]
        length = range_length(range(*consts)) if len(consts) == 3 and consts[2] != 0 else None
        if length is not None and self.hi is not None and length > self.hi:
            length = None       # counted at run time, where the target reports what it cannot hold
        return Counted(start, stop, step, sign, length)

    def last_op(self, form: Counted):
        """The op of a Counted form's inclusive for-loop limit, stop -/+ 1 (:attr:`Counted.last`,
        where the target lowers its nest): folded where the stop is a constant, else
        :func:`beast.ir.ops.arith`'s op with its interval. Never checked: the stop is an integer the
        target holds (checked where it is computed), and one past it is still exact (an empty range
        whose stop is at the limit is no overflow). None where the stop does not lower (the printer
        reports that)."""
        return self._memo(self._limits, form, lambda: self._limit(form.stop, form.last))

    def _limit(self, stop, last):
        from . import ops           # (as in __init__: only a target that lowers its nest gets here)
        if stop.kind != "check":    # (a "check" bound: an int known at run time only)
            try:
                b = self.ops.num(self.ops(stop.expr))
            except Untranslatable:
                return None
            if b.kind == "const":
                v = int(b.value) - 1 if last == "-" else int(b.value) + 1
                return ops.new_op("const", "int", (b,), value=v, iv=(v, v))
        else:
            b = ops.operand("int")
        op = ops.arith(last, b, ops.operand("int", True, 1, (1, 1)), self.ops.target)
        op.check = None             # (a fresh op, ours alone)
        return op

    def array(self, values) -> Array:
        lo, hi = self.lo, self.hi
        wide = next((v for v in values if not lo <= v <= hi), None) if lo is not None else None
        return Array(tuple(values), wide)


def _stored(program, stores) -> dict:
    """Each nest variable's stored type (:meth:`LoopLowering.var_type`)."""
    out = {}
    for st in walk_statements(program.body):
        if isinstance(st, Loop):
            out[st.var] = "int"
        elif isinstance(st, Let):
            t = program.types.get(st.var, st.type)
            out[st.var] = t if t in stores else "num"
    return out


def _wide(f):
    """The first constant of an Array in the form ``f`` (or its fills) that the target does not
    hold exactly, else None."""
    if isinstance(f, Array):
        return f.wide
    if isinstance(f, Scratch):
        return _wide(f.fill)
    if isinstance(f, SetOp):
        left = _wide(f.left)
        return left if left is not None else _wide(f.right)
    return None


def claim_chain(program, max_depth) -> list:
    """The loops whose runs are the work items of a threaded run, outermost first: down from the
    top, each block that is lets and checks then one loop as its last statement gives that loop,
    at most ``max_depth + 1`` of them (empty: the whole walk is one item)."""
    chain, block = [], program.body
    while len(chain) <= max_depth and block and isinstance(block[-1], Loop) \
            and all(isinstance(s, (Let, Check, Tally)) for s in block[:-1]):
        chain.append(block[-1])
        block = block[-1].body
    return chain
