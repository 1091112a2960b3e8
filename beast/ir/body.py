"""The IR of user function bodies: what a @condition / @iterator body means, lowered once from its
``ast`` by :mod:`beast.ir.lower` and printed by each target.

Expressions are the loop-nest IR's (:mod:`beast.expr`) plus the constructs only function bodies
have (Python's value-returning ``and``/``or``, comparison chains, ``in``, ranges, lists,
comprehensions, folds like ``sum``/``all``, indexing and conversions). Statements are the few a
body may use: assignments, ``if``, ``while``, ``for`` over a range or a list, ``break``,
``continue``, ``return``, ``yield`` and ``list.append``. Every statement keeps its ``ast`` node
(for comments and error locations); :class:`FuncBody` holds the inferred static type of every
local and the user position of every operation that can fail.
"""
from __future__ import annotations

from beast.ir.record import field, record

from ..expr.nodes import Expr


class Untranslatable(Exception):
    """A body uses something outside the translatable subset (``node``: where, when known)."""

    def __init__(self, node, reason):
        super().__init__(reason)
        self.node, self.reason = node, reason


# ---------------------------------------------------------------------------------------------
# Expressions that only function bodies produce (never in the loop nest)

class BodyExpr(Expr):
    __slots__ = ()


class PyBool(BodyExpr):
    """Python's and/or: the value of the operand that decided."""
    __slots__ = ("op", "values")

    def __init__(self, op, values):
        self.op, self.values = op, tuple(values)

    def children(self):
        return self.values


class Chain(BodyExpr):
    __slots__ = ("ops", "operands")

    def __init__(self, ops, operands):
        self.ops, self.operands = tuple(ops), tuple(operands)

    def children(self):
        return self.operands


class Eager(BodyExpr):
    """select(c, a, b) called inside a function: every argument is evaluated."""
    __slots__ = ("args",)

    def __init__(self, args):
        self.args = tuple(args)

    def children(self):
        return self.args


class RangeCall(BodyExpr):
    __slots__ = ("args",)

    def __init__(self, args):
        self.args = tuple(args)

    def children(self):
        return self.args


class ListLit(BodyExpr):
    __slots__ = ("elts", "is_tuple")

    def __init__(self, elts, is_tuple=False):
        self.elts, self.is_tuple = tuple(elts), is_tuple

    def children(self):
        return self.elts


class ConstArr(BodyExpr):
    """Integers known at compile time; ``literal``: written out in the body (a fresh list each time
    it is evaluated), else a module-level constant (shared: never to be mutated)."""
    __slots__ = ("values", "is_tuple", "literal")

    def __init__(self, values, is_tuple, literal=True):
        self.values, self.is_tuple, self.literal = tuple(values), is_tuple, literal


class Comp(BodyExpr):
    """A list comprehension or generator expression: elt for target in iter if ... (nested).
    ``lazy``: a generator expression (its elements are made as they are consumed: all/any stop
    early); a list comprehension makes every element first, errors included."""
    __slots__ = ("elt", "gens", "lazy")

    def __init__(self, elt, gens, lazy=True):
        self.elt, self.gens = elt, tuple(gens)     # gens: (target name, iterable, (ifs...))
        self.lazy = lazy

    def children(self):
        out = [self.elt]
        for _, it, ifs in self.gens:
            out.append(it)
            out.extend(ifs)
        return tuple(out)


class ListOf(BodyExpr):
    __slots__ = ("iterable",)

    def __init__(self, iterable):
        self.iterable = iterable

    def children(self):
        return (self.iterable,)


class Fold(BodyExpr):
    """len / all / any / sum / min / max over an iterable (or a comprehension)."""
    __slots__ = ("func", "iterable")

    def __init__(self, func, iterable):
        self.func, self.iterable = func, iterable

    def children(self):
        return (self.iterable,)


class SumTerm(BodyExpr):
    """One term of a desugared ``sum()`` (``origin``: the call's ast node).  A target adds an
    integer term as it adds any integer; a float one only where this Python's ``sum()`` adds floats
    one by one (before 3.12: since then it compensates the rounding, Neumaier's summation, and the
    body is left to Python)."""
    __slots__ = ("value", "origin")

    def __init__(self, value, origin=None):
        self.value, self.origin = value, origin

    def children(self):
        return (self.value,)


class In(BodyExpr):
    __slots__ = ("item", "container", "negate")

    def __init__(self, item, container, negate):
        self.item, self.container, self.negate = item, container, negate

    def children(self):
        return (self.item, self.container)


class Index(BodyExpr):
    __slots__ = ("container", "index")

    def __init__(self, container, index):
        self.container, self.index = container, index

    def children(self):
        return (self.container, self.index)


class Conv(BodyExpr):
    __slots__ = ("to", "value")

    def __init__(self, to, value):
        self.to, self.value = to, value

    def children(self):
        return (self.value,)


class Identity(BodyExpr):
    """``left is right`` (``negate``: ``is not``); only None can be told apart by type."""
    __slots__ = ("negate", "left", "right")

    def __init__(self, negate, left, right):
        self.negate, self.left, self.right = negate, left, right

    def children(self):
        return (self.left, self.right)


class SetOpCall(BodyExpr):
    """``union`` / ``intersection`` / ``difference`` of two lists or ranges, inside a body."""
    __slots__ = ("op", "left", "right")

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right

    def children(self):
        return (self.left, self.right)


class Sorted(BodyExpr):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def children(self):
        return (self.value,)


# ---------------------------------------------------------------------------------------------
# Statements

@record
class Stmt:
    node: object                         # the ast statement (location, comments)


@record
class Assign(Stmt):
    """``a = b = value`` (one value, every name bound to it); ``aug``: written ``a op= x``."""
    names: list
    value: Expr
    aug: bool = False


@record
class Unpack(Stmt):
    """``a, b = x, y``: every value is computed first, then the names are bound."""
    names: list
    values: list


@record
class SetItem(Stmt):
    """``container[index] = value`` (``target``: the ast subscript)."""
    target: object
    container: Expr
    index: Expr
    value: Expr


@record
class If(Stmt):
    test: Expr
    body: list
    orelse: list


@record
class While(Stmt):
    """``while test``; ``known``: the test's truth where a target knows it (set by
    :mod:`beast.ir.translate`: True, no exit test; False, the loop leaves at once)."""
    test: Expr
    body: list
    known: bool | None = None


@record
class For(Stmt):
    """``for name in iterable`` over a range, a list or a constant array."""
    name: str
    iterable: Expr
    body: list


@record
class Break(Stmt):
    pass


@record
class Continue(Stmt):
    pass


@record
class Return(Stmt):
    """``return value`` (None: a bare ``return``; a generator's always, :mod:`beast.ir.lower` evaluates
    its value before). The lowering adds one where the end of the body is reachable (``node`` None)."""
    value: Expr | None


@record
class Yield(Stmt):
    value: Expr


@record
class Append(Stmt):
    """``name.append(value)`` on a local list (``call``: the ast call)."""
    name: str
    value: Expr
    call: object = None


@record
class Known(Stmt):
    """An ``if`` whose test a target knows (:mod:`beast.ir.translate`'s copy of a body): the test is
    evaluated for its errors, then ``body``, the branch that runs."""
    test: Expr
    body: list


@record
class Scope(Stmt):
    """``body``, where the locals ``names`` (temporaries of the desugaring) live: a target with a
    limit on live locals (Lua: 200 per function) declares them here, not for the whole body."""
    names: list
    body: list


@record
class Fail(Stmt):
    """Raise the error ``kind`` of the operation ``func`` (from the desugaring: 'empty' is min()
    or max() of nothing); its position is the operation's, in ``FuncBody.positions``."""
    kind: str
    func: str


@record
class Eval(Stmt):
    """An expression evaluated for its errors only."""
    value: Expr


@record
class FuncBody:
    """A user function lowered once: ``kind`` is 'condition', 'iterator' (deferred: returns its
    values) or 'closure' (yields them); ``params`` the node arguments with their static types;
    ``locals`` every local the body binds with its type (int, bool, float, num or list);
    ``positions`` maps ``id(expr)`` of each operation that can fail to its user location
    (filename, lineno, col, end_col)."""
    info: object
    kind: str
    params: list
    ptypes: dict
    locals: dict
    body: list
    positions: dict = field(default_factory=dict)
    keep: list = field(default_factory=list)       # the expressions whose ids key ``positions``
    untyped: set = field(default_factory=set)      # locals no assignment gives a type (read as 0)
    origins: dict = field(default_factory=dict)    # id(expr) -> the ast node it was lowered from
    scoped: set = field(default_factory=set)       # the locals a Scope declares (the others: the function)


def ends(stmts) -> bool:
    """Whether ``stmts`` leave their block (a return, break or continue last, or an ``if`` or a scope
    whose every branch does): what follows them never runs."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, If):
        return ends(last.body) and ends(last.orelse)
    if isinstance(last, (Scope, Known)):
        return ends(last.body)
    return isinstance(last, (Return, Break, Continue))


def walk_body(stmts):
    """Every statement of a body, outer first."""
    for s in stmts:
        yield s
        for sub in (getattr(s, "body", None), getattr(s, "orelse", None)):
            if sub:
                yield from walk_body(sub)
