"""Desugar the control flow hidden in body expressions into body statements, once for every target.

Python's ``and``/``or`` (:class:`~beast.ir.body.PyBool`), chained comparisons, comprehensions and the
folds ``sum``/``min``/``max``/``all``/``any`` evaluate lazily or loop. Here each becomes plain body
statements (assignments to fresh locals, ``if``, ``for``, ``break``, :class:`~beast.ir.body.Fail`)
ahead of the statement that uses it, so that a printer only prints loops, branches and eager
expressions. Python's order of evaluation is kept: an operand evaluated before a hoisted loop and
able to fail is computed into a local first (:meth:`_Desugar.exprs`), so the first error Python
would raise is the first one the compiled code raises.

Fresh locals are named ``hint$N``: ``$`` cannot occur in a Python name, so they never meet the
user's. The pass runs inside the lowering, before type inference, which types them like any local.
"""
from __future__ import annotations

from beast.ir.record import replace

from ..expr.nodes import BinOp, Call, Compare, Const, Not, Select, UnOp, Var, walk
from .body import (Append, Assign, Break, Chain, Comp, ConstArr, Conv, Eager, Eval, Fail, Fold, For,
                   Identity, If, In, Index, ListLit, ListOf, PyBool, RangeCall, Return, Scope, SetItem,
                   SetOpCall, Sorted, SumTerm, Unpack, Untranslatable, While, Yield)

LOOP_FOLDS = ("sum", "min", "max", "all", "any")


def _hoists(e) -> bool:
    """Whether ``e`` holds something this pass turns into statements."""
    for x in walk(e):
        if isinstance(x, (PyBool, Chain, Comp)) or isinstance(x, Fold) and x.func in LOOP_FOLDS:
            return True
    return False


def _trivial(e) -> bool:
    """Cannot fail and reads nothing a hoisted statement could change."""
    return isinstance(e, (Const, ConstArr))


def _rebuild(e, kids):
    """``e`` with new children (in the order of ``e.children()``)."""
    if isinstance(e, BinOp):
        return BinOp(e.op, kids[0], kids[1], e.pos)
    if isinstance(e, (Compare,)):
        return type(e)(e.op, kids[0], kids[1])
    if isinstance(e, UnOp):
        return UnOp(e.op, kids[0])
    if isinstance(e, Not):
        return Not(kids[0])
    if isinstance(e, Call):
        return Call(e.func, tuple(kids))
    if isinstance(e, Select):
        return Select(*kids)
    if isinstance(e, (Eager, RangeCall)):
        return type(e)(kids)
    if isinstance(e, ListLit):
        return ListLit(kids, e.is_tuple)
    if isinstance(e, In):
        return In(kids[0], kids[1], e.negate)
    if isinstance(e, Index):
        return Index(*kids)
    if isinstance(e, Conv):
        return Conv(e.to, kids[0])
    if isinstance(e, SumTerm):
        return SumTerm(kids[0], e.origin)
    if isinstance(e, Identity):
        return Identity(e.negate, kids[0], kids[1])
    if isinstance(e, SetOpCall):
        return SetOpCall(e.op, kids[0], kids[1])
    if isinstance(e, (Sorted, ListOf)):
        return type(e)(kids[0])
    if isinstance(e, Fold):
        return Fold(e.func, kids[0])
    raise TypeError(f"cannot rebuild {type(e).__name__}")


class _Desugar:
    """One pass over a lowered body; ``lw`` is the lowering (:class:`beast.ir.lower._Lowerer`),
    whose locals, type-inference records and operation positions it extends."""

    def __init__(self, lw):
        self.lw = lw
        self.count = 0
        self.numeric = []      # (local, ast node): values of and/or, which must be numbers
        self.scopes = [[]]     # the fresh locals of each statement being desugared, innermost last

    # -- bookkeeping
    def fresh(self, hint):
        self.count += 1
        name = f"{hint}${self.count}"
        self.lw.stored.add(name)
        self.scopes[-1].append(name)
        return name

    def set(self, node, name, value):
        self.lw.assigns.append((name, value))
        return Assign(node, [name], value)

    def like(self, old, new):
        """``new`` reports its errors where ``old`` was written."""
        lw = self.lw
        if new is not old and id(old) in lw.positions:
            lw.positions[id(new)] = lw.positions[id(old)]
            lw.origins[id(new)] = lw.origins.get(id(old))
            lw.keep.append(new)
        return new

    def pin(self, node, e, pre):
        """``e`` as a value that can be evaluated later: computed now into a fresh local when it
        could fail (Python would raise its error before the statements that follow)."""
        if _trivial(e) or isinstance(e, Var):     # hoisted statements bind fresh names only
            return e
        if isinstance(e, RangeCall):
            return self.like(e, RangeCall([self.pin(node, a, pre) for a in e.args]))
        t = self.fresh("t")
        pre.append(self.set(node, t, e))
        return Var(t)

    # -- statements
    def block(self, stmts):
        out = []
        for st in stmts:
            out.extend(self.stmt(st))
        return out

    def stmt(self, st):
        """The statements of ``st``; its own temporaries live in a :class:`Scope` around them (a
        nested block's statements have scopes of their own)."""
        self.scopes.append([])
        try:
            out = self._stmt(st)
        finally:
            names = self.scopes.pop()
        return [Scope(st.node, names, out)] if names else out

    def _stmt(self, st):
        node = st.node
        if isinstance(st, Assign) and len(st.names) == 1 and not st.aug:
            comp = st.value.iterable if isinstance(st.value, ListOf) else st.value
            name = st.names[0]
            if isinstance(comp, Comp) and not any(isinstance(x, Var) and x.name == name for x in walk(comp)):
                # built in place: the list has one name, as the C target requires
                return self.listcomp(comp, node, {}, name)[0]
        if isinstance(st, (Assign, Return, Yield, Eval, Append)) and st.value is not None:
            pre, v = self.expr(st.value, node, truth=isinstance(st, Return) and self.lw.kind == "condition")
            return pre + [replace(st, value=v) if v is not st.value else st]
        if isinstance(st, Unpack):
            pre, values = self.exprs(st.values, node)
            return pre + [replace(st, values=values)]
        if isinstance(st, SetItem):
            pre, (value, container, index) = self.exprs([st.value, st.container, st.index], node)
            return pre + [replace(st, value=value, container=container, index=index)]
        if isinstance(st, If):
            pre, test = self.expr(st.test, node, truth=True)
            return pre + [replace(st, test=test, body=self.block(st.body), orelse=self.block(st.orelse))]
        if isinstance(st, While):
            body = self.block(st.body)
            pre, test = self.expr(st.test, node, truth=True)
            if not pre:
                return [replace(st, test=test, body=body)]
            # the test's statements run before every test: while True: ...; if not test: break
            head = [Scope(node, self.scopes[-1][:], pre + [If(node, Not(test), [Break(node)], [])])]
            del self.scopes[-1][:]
            return [replace(st, test=Const(True), body=head + body)]
        if isinstance(st, For):
            pre, it = self.expr(st.iterable, node)
            return pre + [replace(st, iterable=it, body=self.block(st.body))]
        return [st]

    # -- expressions: (statements to run first, the expression left)
    def exprs(self, values, node, ren=None, truth=False):
        """Eagerly evaluated operands, in order; an operand before one that hoists is pinned."""
        pres, outs = [], []
        for v in values:
            p, x = self.expr(v, node, ren, truth)
            pres.append(p)
            outs.append(x)
        pre = []
        last = max((i for i, p in enumerate(pres) if p), default=-1)
        for i, (p, x) in enumerate(zip(pres, outs)):
            pre.extend(p)
            if i < last:
                outs[i] = self.pin(node, x, pre)
        return pre, outs

    def expr(self, e, node, ren=None, truth=False):
        ren = ren or {}
        if isinstance(e, Var):
            return [], (Var(ren[e.name]) if e.name in ren else e)
        if not ren and not _hoists(e):
            return [], e
        if isinstance(e, PyBool):
            return self.pybool(e, node, ren, truth)
        if isinstance(e, Chain):
            return self.chain(e, node, ren)
        if isinstance(e, Comp) or isinstance(e, ListOf) and isinstance(e.iterable, Comp):
            return self.listcomp(e if isinstance(e, Comp) else e.iterable, node, ren)
        if isinstance(e, Fold) and e.func in LOOP_FOLDS:
            return self.fold(e, node, ren)
        if isinstance(e, Select) and any(_hoists(x) for x in (e.then, e.orelse)):
            return self.select(e, node, ren)
        kids = e.children()
        if not kids:
            return [], e
        sub_truth = isinstance(e, Not) or isinstance(e, Conv) and e.to == "bool"
        pre, outs = self.exprs(kids, node, ren, sub_truth)
        if all(a is b for a, b in zip(outs, kids)):
            return pre, e
        return pre, self.like(e, _rebuild(e, outs))

    def pybool(self, e, node, ren, truth):
        """``t = a; if t: t = b; ...`` (``if not t`` for or); in a truth context, of bool(a)..."""
        t = self.fresh("and" if e.op == "and" else "or")
        if not truth:
            self.numeric.append((t, self.lw.origins.get(id(e))))
        blocks = []
        for v in e.values:
            pre, x = self.expr(v, node, ren, truth)
            if truth and not isinstance(x, (Compare, Not, In, Chain, Identity)):
                x = Conv("bool", x)
            blocks.append(pre + [self.set(node, t, x)])
        out = blocks[-1]
        for block in reversed(blocks[:-1]):
            test = Var(t) if e.op == "and" else Not(Var(t))
            out = block + [If(node, test, out, [])]
        return out, Var(t)

    def chain(self, e, node, ren):
        """``a < b < c``: ``t = a < b; if t: t = b < c`` (b computed once)."""
        t = self.fresh("cmp")
        pre, (left, right) = self.exprs(e.operands[:2], node, ren)
        right = self.pin(node, right, pre) if len(e.operands) > 2 else right
        out = pre
        block = out
        block.append(self.set(node, t, self.compare(e.ops[0], left, right)))
        last = len(e.operands) - 1
        for i, (op, operand) in enumerate(zip(e.ops[1:], e.operands[2:]), start=2):
            inner, x = self.expr(operand, node, ren)
            if i < last:
                x = self.pin(node, x, inner)
            inner.append(self.set(node, t, self.compare(op, right, x)))
            block.append(If(node, Var(t), inner, []))
            block, right = inner, x
        return out, Var(t)

    @staticmethod
    def compare(op, a, b):
        if op in ("in", "not in"):
            return In(a, b, op == "not in")
        return Compare(op, a, b)

    def select(self, e, node, ren):
        t = self.fresh("sel")
        self.numeric.append((t, self.lw.origins.get(id(e))))
        pre, cond = self.expr(e.cond, node, ren, truth=True)
        branches = []
        for branch in (e.then, e.orelse):
            p, x = self.expr(branch, node, ren)
            branches.append(p + [self.set(node, t, x)])
        return pre + [If(node, cond, *branches)], Var(t)

    def loops(self, comp, node, ren, inner, stop=None, bound=None):
        """The nested ``for``/``if`` statements of a comprehension, ``inner(ren)`` innermost.
        ``stop``: a test after each inner loop that breaks the outer ones (all/any). ``bound``:
        the comprehension's variables bound by the generators outside this one (None: this is
        the first, whose iterable is evaluated in the enclosing scope)."""
        target, iterable, ifs = comp.gens[0]
        unbound = {t for t, _, _ in comp.gens[1:]}
        if bound is not None:
            self.bound_first(comp, iterable, ({target} | unbound) - bound)
        pre, it = self.expr(iterable, node, ren)
        var = self.fresh(target)
        self.lw.assigns.append((var, ("elem", it)))
        ren = {**ren, target: var}
        bound = (bound or set()) | {target}
        for cond in ifs:
            self.bound_first(comp, cond, unbound - bound)
        if len(comp.gens) > 1:
            body = self.loops(Comp(comp.elt, comp.gens[1:]), node, ren, inner, stop, bound)
            if stop is not None:
                body.append(If(node, stop, [Break(node)], []))
        else:
            body = inner(ren)
        for cond in reversed(ifs):
            p, c = self.expr(cond, node, ren, truth=True)
            body = p + [If(node, c, body, [])]
        return pre + [For(node, var, it, body)]

    def bound_first(self, comp, e, unbound):
        """Python raises UnboundLocalError where a comprehension reads its own variable before a
        generator binds it: such a body is left to Python."""
        if unbound and any(isinstance(x, Var) and x.name in unbound for x in walk(e)):
            raise Untranslatable(self.lw.origins.get(id(comp)),
                                 "a comprehension that reads its variable before binding it")

    def listcomp(self, comp, node, ren, lst=None):
        lst = lst or self.fresh("list")
        pre = [self.set(node, lst, ListLit([]))]
        origin = self.lw.origins.get(id(comp))

        def inner(r):
            p, x = self.expr(comp.elt, node, r)
            return p + [Append(node, lst, x, origin)]

        return pre + self.loops(comp, node, ren, inner), Var(lst)

    def fold(self, e, node, ren):
        """sum/min/max/all/any as a loop over the iterable (a comprehension's loops inline)."""
        func = e.func
        acc = self.fresh(func)
        pre = [self.set(node, acc, Const({"all": True, "any": False}.get(func, 0)))]
        seen = None
        if func in ("min", "max"):
            seen = self.fresh("seen")
            pre.append(self.set(node, seen, Const(False)))

        it = e.iterable
        if isinstance(it, ListOf) and isinstance(it.iterable, Comp):
            it = it.iterable
        # all/any stop at the first deciding element of a generator, but a list (a list
        # comprehension, list(...) of one) is made whole first: every element, errors included
        eager = isinstance(it, Comp) and (not it.lazy or it is not e.iterable)

        def consume(x, body):
            if func == "sum":
                term = SumTerm(x, self.lw.origins.get(id(e)))
                body.append(self.set(node, acc, self.like(e, BinOp("+", Var(acc), term))))
            elif func in ("min", "max"):
                x = self.pin(node, x, body) if not isinstance(x, Var) else x
                better = Compare("<" if func == "min" else ">", x, Var(acc))
                take = [self.set(node, acc, x)]
                body.append(If(node, Var(seen), [If(node, better, take, [])],
                               take + [self.set(node, seen, Const(True))]))
            else:
                test = Not(x) if func == "all" else x
                decide = [self.set(node, acc, Const(func == "any"))]
                body.append(If(node, test, decide if eager else decide + [Break(node)], []))
            return body

        stop = None if func not in ("all", "any") or eager else (Not(Var(acc)) if func == "all" else Var(acc))
        if not isinstance(it, Comp):          # fold(seq) is fold(x for x in seq)
            it = Comp(Var("x"), [("x", it, ())])

        def inner(r):
            p, x = self.expr(it.elt, node, r, truth=func in ("all", "any"))
            return consume(x, p)

        pre += self.loops(it, node, ren, inner, stop)
        if seen is not None:
            pre.append(If(node, Not(Var(seen)), [self.like(e, Fail(node, "empty", func))], []))
        return pre, Var(acc)


def desugar(lowering, stmts):
    """The statements of a lowered body with its lazy and looping expressions made statements;
    returns them and the locals that hold values of and/or/if-else (numbers only)."""
    d = _Desugar(lowering)
    return d.block(stmts), d.numeric
