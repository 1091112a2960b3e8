"""Tighter loops than a plain scan, where provably safe (the oracle tests check them).

- Solve: when the first statement of a loop body is a check that rejects every value but one
  (``dim_m_a * dim_n_a != threads`` for the loop over dim_n_a), loop over that one candidate
  (:class:`~beast.expr.SolveSeq`) instead of the whole range.
- Break: when a check is monotone in the loop variable (once true, true for every later value:
  shared memory grows with blk_k), leave the loop instead of skipping the value.

Both only drop iterations that a check would reject, so the surviving configurations and their
order are unchanged. A break is used only when the statements before the check (and the check)
cannot fail at a later value without having failed at an earlier one, so the errors are too:
that excludes an integer operation the 64-bit targets check for overflow (the intervals of the
nest's variables prove most of them in range).
"""
from __future__ import annotations

from ..expr.nodes import BinOp, BoolOp, Call, Compare, Const, Not, Select, UnOp, Var, static_type, walk
from ..expr.sequences import DivisorSeq, RangeSeq, ScalarSeq, SolveSeq, ValuesSeq, free_vars
from .nest import Check, Let, Loop, Program

INF = float("inf")


def _bound(value) -> float:
    """``value`` as a float bound; an integer past the floats' range (10**309) is +-inf, which bounds
    it as well, where float() would raise."""
    try:
        return float(value)
    except OverflowError:
        return INF if value > 0 else -INF


class _Facts:
    """Lower bounds of variables (for signs), and the lets in scope (to substitute)."""

    def __init__(self, types, checks=None):
        self.lower = {}
        self.lets = {}
        self.types = types
        self.checks = checks        # the nest's ops for a 64-bit target with intervals (PY_CHECKS)

    def may_overflow(self, e) -> bool:
        """Whether the operation ``e`` may leave 64 bits at some value (a later value may fail)."""
        if not (isinstance(e, (BinOp, UnOp)) or isinstance(e, Call) and e.func == "abs"):
            return False
        if isinstance(e, BinOp) and e.op not in ("+", "-", "*", "<<", "//", "**"):
            return False
        if self.checks is None or static_type(e, self.types) == "float":
            return self.checks is None
        try:
            op = self.checks(e)
        except Exception:  # noqa: BLE001 - what the 64-bit targets do not lower: assume it may
            return True
        from .ops import may_overflow
        return may_overflow(op)

    def lb(self, e):
        """A lower bound of an integer/float expression, or -inf when unknown."""
        if isinstance(e, Const):
            return _bound(e.value) if isinstance(e.value, (int, float)) else -INF
        if isinstance(e, Var):
            return self.lower.get(e.name, -INF)
        if isinstance(e, BinOp):
            a, b = self.lb(e.left), self.lb(e.right)
            if e.op == "+":
                return a + b
            if e.op == "*" and a >= 0 and b >= 0:
                return a * b
            # a zero divisor raises, so every value computed here has b > 0
            if e.op in ("//", "/", "%") and a >= 0 and b >= 0:
                return 0.0
            if e.op == "%" and b >= 0:
                return 0.0
            return -INF
        if isinstance(e, Call):
            bounds = [self.lb(x) for x in e.args]
            if e.func == "min":
                return min(bounds)
            if e.func == "max":
                return max(bounds)
            return 0.0
        if isinstance(e, Select):
            return min(self.lb(e.then), self.lb(e.orelse))
        return -INF

    def mono(self, e, var):
        """+1 non-decreasing, -1 non-increasing, 0 independent of ``var``; None when unknown."""
        if var not in _vars(e, self.lets):
            return 0
        if isinstance(e, Var):
            if e.name == var:
                return 1
            return self.mono(self.lets[e.name], var) if e.name in self.lets else 0
        if isinstance(e, BinOp):
            a, b = self.mono(e.left, var), self.mono(e.right, var)
            if a is None or b is None:
                return None
            if e.op == "+":
                return _join(a, b)
            if e.op == "-":
                return _join(a, -b)
            if e.op == "*":
                la, lb = self.lb(e.left), self.lb(e.right)
                if la >= 0 and lb >= 0:
                    return _join(a, b)
                return None
            if e.op in ("//", "/"):
                la, lb = self.lb(e.left), self.lb(e.right)
                if b == 0 and lb > 0:
                    return a
                if a == 0 and la >= 0 and lb >= 0 and b != 0:
                    return -b
                return None
            return None
        if isinstance(e, Call) and e.func in ("min", "max"):
            out = 0
            for x in e.args:
                m = self.mono(x, var)
                out = None if m is None or out is None else _join(out, m)
            return out
        return None

    def truth_mono(self, e, var):
        """Monotonicity of the truth value of a test (same codes as :meth:`mono`)."""
        if var not in _vars(e, self.lets):
            return 0
        if isinstance(e, Compare) and e.op in ("<", "<=", ">", ">="):
            a, b = self.mono(e.left, var), self.mono(e.right, var)
            if a is None or b is None:
                return None
            diff = _join(a, -b)
            return diff if e.op in (">", ">=") else (None if diff is None else -diff)
        if isinstance(e, BoolOp):
            return _join(self.truth_mono(e.left, var), self.truth_mono(e.right, var))
        if isinstance(e, Not):
            m = self.truth_mono(e.operand, var)
            return None if m is None else -m
        return None

    def safe_later(self, e, var, direction):
        """True if evaluating ``e`` at a later value cannot fail when it did not fail earlier."""
        for sub in walk(e):
            if self.may_overflow(sub):
                return False
            if isinstance(sub, Var) and sub.name in self.lets and var in _vars(sub, self.lets):
                if not self.safe_later(self.lets[sub.name], var, direction):
                    return False
            if isinstance(sub, BinOp) and sub.op in ("/", "//", "%"):
                m = self.mono(sub.right, var)
                if m is None:
                    return False
                if m != 0 and not (m * direction > 0 and self.lb(sub.right) >= 0):
                    return False
            elif isinstance(sub, BinOp) and sub.op == "**":
                return False
            elif not isinstance(sub, (Var, Const, BinOp, Compare, BoolOp, Not, Call, UnOp)):
                return False
        return True


def _join(a, b):
    if a is None or b is None:
        return None
    if a == 0:
        return b
    if b == 0 or a == b:
        return a
    return None


def _vars(e, lets, seen=None):
    """Variables an expression reads, looking through the lets in scope."""
    out = set()
    for name in free_vars(e):
        out.add(name)
        if name in lets and (seen is None or name not in seen):
            out |= _vars(lets[name], lets, (seen or set()) | {name})
    return out


def _step_sign(seq, facts):
    if not isinstance(seq, RangeSeq):
        return 1 if isinstance(seq, ValuesSeq) and list(seq.values) == sorted(seq.values) else None
    if isinstance(seq.step, Const):
        return 1 if seq.step.value > 0 else -1
    return 1 if facts.lb(seq.step) > 0 else None


def _seq_lower(seq, facts):
    if isinstance(seq, ValuesSeq):
        return _bound(min(seq.values)) if seq.values else INF
    if isinstance(seq, ScalarSeq):
        return facts.lb(seq.value)
    if isinstance(seq, (RangeSeq, SolveSeq)):
        base = seq.base if isinstance(seq, SolveSeq) else seq
        if isinstance(base.step, Const) and base.step.value < 0 or facts.lb(base.step) <= 0 and \
                not (isinstance(base.step, Const) and base.step.value > 0):
            return facts.lb(base.stop) + 1 if _step_sign(base, facts) == -1 else -INF
        return facts.lb(base.start)
    return -INF


def _solve(check, var, types, facts):
    """A SolveSeq candidate (value, guard) if ``check`` rejects every value of ``var`` but one.

    ``var * g != other`` is solved only where ``g`` is known to be positive: with ``g == 0`` the
    check rejects every value or none (``0 != other``), which no single candidate expresses."""
    e = check.expr
    disjuncts = []

    def collect(x):
        if isinstance(x, BoolOp) and x.op == "or":
            collect(x.left)
            collect(x.right)
        else:
            disjuncts.append(x)
    collect(e)
    for d in disjuncts:
        if not (isinstance(d, Compare) and d.op == "!="):
            continue
        for side, other in ((d.left, d.right), (d.right, d.left)):
            if var in free_vars(other) or static_type(other, types) != "int":
                continue
            if isinstance(side, Var) and side.name == var:
                return other, Const(True), None
            if isinstance(side, BinOp) and side.op == "*":
                for f, g in ((side.left, side.right), (side.right, side.left)):
                    if isinstance(f, Var) and f.name == var and var not in free_vars(g) \
                            and static_type(g, types) == "int" and facts.lb(g) >= 1:
                        guard = BoolOp("and", Compare("!=", g, Const(0)),
                                       Compare("==", BinOp("%", other, g), Const(0)))
                        return BinOp("//", other, g), guard, (g, other)
    return None


def tighten(program: Program) -> Program:
    """Rewrite the program's loops in place with solved sequences and breaking checks."""
    from .loops import LoopLowering
    from .targets import PY_CHECKS
    facts = _Facts(program.types, LoopLowering(program, PY_CHECKS).ops)

    def visit(stmts, lets):
        for s in stmts:
            if isinstance(s, Let):
                lets[s.var] = s.expr
                facts.lower[s.var] = facts.lb(s.expr)
            elif isinstance(s, Loop):
                facts.lower[s.var] = _seq_lower(s.seq, facts)
                body = s.body
                if isinstance(s.seq, RangeSeq) and body and isinstance(body[0], Check):
                    solved = _solve(body[0], s.var, program.types, facts)
                    if solved is not None:
                        s.seq = SolveSeq(s.seq, solved[0], solved[1])
                        s.seq.divides = solved[2]
                direction = _step_sign(s.seq, facts) if not isinstance(s.seq, SolveSeq) else None
                inner_lets = dict(lets)
                facts.lets = inner_lets
                if direction is not None:
                    ok = True
                    for stmt in body:
                        if isinstance(stmt, Let):
                            inner_lets[stmt.var] = stmt.expr
                            facts.lower[stmt.var] = facts.lb(stmt.expr)
                            ok = ok and facts.safe_later(stmt.expr, s.var, direction)
                        elif isinstance(stmt, Check):
                            ok = ok and facts.safe_later(stmt.expr, s.var, direction)
                            if ok and facts.truth_mono(stmt.expr, s.var) == direction:
                                stmt.exit = "break"
                        else:
                            break
                        if not ok:
                            break
                visit(body, dict(lets))
                facts.lets = lets
                _divisors(s, facts)
    visit(program.body, {})
    return program


def _divisors(loop, facts):
    """Loop only over divisors when the loop's whole body is a loop solved by dividing by it (its
    bounds integers: a divisor loop, like a solved one, holds integers only, in every target)."""
    seq = loop.seq
    if not (isinstance(seq, RangeSeq) and isinstance(seq.step, Const) and seq.step.value == 1
            and facts.lb(seq.start) >= 1 and len(loop.body) == 1 and isinstance(loop.body[0], Loop)
            and all(static_type(b, facts.types) in ("int", "bool") for b in (seq.start, seq.stop))):
        return
    inner = loop.body[0].seq
    divides = getattr(inner, "divides", None) if isinstance(inner, SolveSeq) else None
    if divides is None:
        return
    g, n = divides
    if isinstance(g, Var) and g.name == loop.var and loop.var not in free_vars(n):
        loop.seq = DivisorSeq(seq, n)
