"""The loop nest prepared for one target, before a line of it is printed.

:func:`prepare` walks the nest in the order the target's printer prints it and decides what the
printer would otherwise decide on its way:

- every expression it prints, lowered once for the target (:attr:`NestPlan.ops`, from
  :attr:`beast.ir.loops.LoopLowering.ops`: a Let, a Check, a range bound, a bound value, a call's
  arguments), and the first one the target refuses;
- how each Let stores its value (:meth:`NestPlan.store`: :func:`beast.ir.storage.let_kind` for the
  variable's stored type, :meth:`~beast.ir.loops.LoopLowering.var_type`) and whether each Check
  can fire (:meth:`NestPlan.truth`: :func:`beast.ir.translate.known_truth` of its op);
- where deep nests split (:attr:`NestPlan.parts`, :func:`beast.ir.split.parts`), and a part too big
  for a function of the target;
- which user functions the nest calls, in the order of their first call, and what the target does
  with them (:func:`beast.ir.translate.decide_all`: C translates or tabulates only those, in that
  order; Lua decides every function), and the calls of functions the program does not define.

A refusal is raised as a :class:`Refused` (worded by ``LoopTarget.says``) after the functions
called before it are decided, so the first error is the one printing in that order would meet.
"""
from __future__ import annotations

from ..errors import BeastError
from ..frontend.locate import node_location
from .body import Untranslatable
from .loops import Bind, Call, Counted, Divisors, LoopLowering, Scratch, SetOp, Solved
from .nest import Check, Let, Loop
from .storage import let_kind
from .split import parts
from .translate import decide_all, known_truth


class Refused(BeastError):
    """The target cannot print this loop nest (the message says what)."""


class NestPlan:
    """The decisions of :func:`prepare` for one program and one target. ``modes``: the walks its
    printer makes, in order: "count" and "rows" (a function each: counting nests are products in
    "count"), or "both" (one walk, each counting nest's lengths printed before its loop)."""

    def __init__(self, program, loops, funcs, modes):
        self.program, self.funcs_target = program, funcs
        self.lower = LoopLowering(program, loops)
        self.says = loops.says or {}
        self.ops = {}               # id(expr) -> its op: every expression the printer prints
        self.stores = {}            # id(let) -> let_kind of its value
        self.truths = {}            # id(check) -> whether it fires: True, False or None (unknown)
        self.calls = []             # idents of the defined functions called, in order of first call
        self.missing = []           # idents called that the program does not define (stubs)
        self.funcs = {}             # ident -> beast.ir.translate.Decision (prepare)
        self.parts = {}             # mode -> id(loop) -> beast.ir.split.Part
        self.error = None           # the first refusal, raised by prepare
        self.at = None              # the front end's node of the statement being decided
        try:
            for mode in modes:
                self.parts[mode] = parts(self.lower, program.body, mode) if mode != "both" else {}
                self.block(program.body, mode)
        except BeastError as err:
            self.error = err

    # -- what the printer reads
    def store(self, let) -> str:
        """How ``let`` stores its value (:func:`beast.ir.storage.let_kind`)."""
        return self.stores[id(let)]

    def truth(self, check):
        """Whether ``check`` leaves: True (always), False (never), None (decided when it runs)."""
        return self.truths[id(check)]

    # -- the walk, in print order
    def block(self, stmts, mode):
        stores, truths = self.stores, self.truths
        for s in stmts:
            self.at = getattr(s, "node", None) or self.at
            if isinstance(s, Loop):
                self.loop(s, mode)
            elif id(s) in stores or id(s) in truths:    # decided in an earlier walk
                continue
            elif isinstance(s, Let):
                op = self.expr(s.expr)
                local = self.lower.var_type(s.var)
                kind = stores[id(s)] = let_kind(local, op.type)
                if kind is None:
                    raise BeastError(f"internal error: cannot store a {op.type} value as {local}")
            elif isinstance(s, Check):
                truths[id(s)] = known_truth(self.expr(s.expr))

    def loop(self, s, mode):
        form = self.lower.form(s)
        count = self.lower.count(s) if mode != "rows" else None
        if count is not None and mode == "count":      # each length (or bound value), outside in
            for _, f in count.parts:
                if isinstance(f, (Bind, Counted)):
                    self.form(f)
            return
        if count is not None:                           # each length, then the loop itself
            for _, f in count.parts:
                if isinstance(f, (Bind, Counted)):
                    self.form(f)
        part = self.parts.get(mode, {}).get(id(s))
        if part is not None and not part.fits:
            raise self.refused(self.says["part"].format(s.var, len(part.params)))
        fused = self.lower.fused(s) if part is None else None
        if fused is not None:
            self.block(fused.chain[-1][0].body, mode)
            return
        self.form(form)
        self.block(s.body, mode)

    def form(self, f):
        """The expressions of a loop form or a fill, as its values are printed."""
        if isinstance(f, Counted):
            self.exprs(b.expr for b in f.bounds)
            if f.last:                  # a for-loop limit the target computes as stop -/+ 1
                self.lower.last_op(f)
        elif isinstance(f, Bind):
            self.expr(f.value)
        elif isinstance(f, Solved):
            self.exprs((f.guard, f.value))
            self.form(f.base)
        elif isinstance(f, Divisors):
            self.expr(f.n)
            self.form(f.base)
        elif isinstance(f, Scratch):
            self.form(f.fill)
        elif isinstance(f, Call):
            self.call(f.func)
            self.exprs(f.args)
        elif isinstance(f, SetOp):
            self.form(f.left)
            self.form(f.right)

    def exprs(self, es):
        for e in es:
            self.expr(e)

    def expr(self, e):
        """The op of ``e``, lowered once; a call met for the first time is the nest's."""
        op = self.ops.get(id(e))
        if op is not None:
            return op
        lowering = self.lower.ops
        calls = lowering.calls
        try:
            op = lowering(e)
        except Untranslatable as why:
            raise self.refused(self.says["expr"].format(why.reason), why.node) from None
        if lowering.calls != calls:
            self.op_calls(op)
        self.ops[id(e)] = op
        return op

    def refused(self, message, expr=None) -> Refused:
        """A refusal at the user's statement being decided: under the operation ``expr`` where the
        front end recorded its columns, else at the statement's name, or the call on its line."""
        node = self.at
        if node is None or getattr(node, "filename", None) is None:
            return Refused(message)
        pos = getattr(expr, "pos", None)
        if isinstance(pos, tuple) and pos[0] == node.filename and pos[2] is not None:
            return Refused(message, *pos)
        return Refused(message, *node_location(node))

    def op_calls(self, op):
        """The calls in ``op`` in the order they are printed (a function before its arguments)."""
        if op.kind == "callfn":
            self.call(op.value)
        elif op.kind == "error":        # an argument the target refuses, met after the function
            raise self.refused(self.says["expr"].format(op.value.reason))
        for a in op.args:
            self.op_calls(a)

    def call(self, ident):
        if ident in self.program.funcs:
            if ident not in self.calls:
                self.calls.append(ident)
        elif not self.funcs_target.stubs:
            raise BeastError(f"internal error: unknown function {ident}")
        elif ident not in self.missing:
            self.missing.append(ident)


def prepare(program, loops, funcs, modes, tabulator=None, forced=()) -> NestPlan:
    """The :class:`NestPlan` of ``program`` for a target's ``loops`` (a
    :class:`~beast.ir.loops.LoopTarget`) and ``funcs`` (a :class:`~beast.ir.targets.FuncTarget`),
    printed in ``modes``; its user functions decided (``tabulator``, ``forced``:
    :func:`~beast.ir.translate.decide_all`). Raises the first refusal."""
    plan = NestPlan(program, loops, funcs, modes)
    plan.funcs = decide_all(program, funcs, tabulator, forced, plan.calls if funcs.tabulate else None)
    if plan.error is not None:
        raise plan.error
    return plan
