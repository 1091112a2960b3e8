"""Whether a target translates a user function, decided once before printing.

A function body (:mod:`beast.ir.lower`) has each expression lowered to ops (:mod:`beast.ir.ops`) for
the target here, in the order a printer spells them, and each statement checked against what the
target holds (:func:`~beast.ir.ops.store_kind`, :func:`~beast.ir.ops.return_kind`,
:func:`~beast.ir.ops.element_ok`, :func:`~beast.ir.ops.yield_ok`, the truth of a test, what a
``for`` walks). The first refusal, in printing order, is the reason the target does not translate
the function (it then calls it back or tabulates it); otherwise the printer spells the ops found
here and can no longer fail. Which branch of an ``if`` is dead (:func:`known_truth`) is decided
here too, for the checks and the printer alike.
"""
from __future__ import annotations

from beast.ir.record import record

from . import ops
from .body import (Append, Assign, Break, Continue, Eval, For, FuncBody, If, Return, Scope, SetItem, Unpack,
                   Untranslatable, While, Yield)
from .lower import lower_function

TRUTHY = ("bool", "none", "str", "list", "int", "float", "num", "range")
STORES = ("list", "number", "str")      # store_kind's kinds a table target keeps: no widening, no copy


@record
class Decided:
    """One user function for one target: ``reason`` why it is not translated (None: it is), else
    its lowered ``body``, ``ops`` (id(expr) -> Op of every expression the printer spells) and the
    static ``types`` of its names (parameters and locals)."""
    body: FuncBody | None = None
    ops: dict | None = None
    types: dict | None = None
    reason: str | None = None


def decide(info, param_types, target, forced=False) -> Decided:
    """Lower and check the function ``info`` (``param_types``: per node argument) for ``target``."""
    if forced:
        return Decided(reason="forced")
    try:
        body = lower_function(info, [param_types[a] for a in info.node_args])
        check = _Checker(body, param_types, target)
        return Decided(body, check.run(), check.types)
    except Untranslatable as why:
        return Decided(reason=str(why))


def known_truth(op):
    """Python's truth value of ``op`` where it is known without running it (a constant, or one that
    a constant test, choice or min/max step gives), else None: an ``if`` on it keeps one branch."""
    kind, args = op.kind, op.args
    if kind == "const":
        return bool(op.value) if op.type in ("int", "float", "bool", "str", "none") else None
    if kind == "then":
        return known_truth(args[1])
    if kind == "pick":
        return known_truth(args[1 + op.value])
    if kind == "minmax_call":
        last = op.value[-1]
        return bool(last.value) if last.kind == "const" else None
    if kind in ("truth", "not") or kind == "conv" and op.type == "bool":
        k = known_truth(args[0])
        return k if k is None or kind != "not" else not k
    if kind in ("and", "or"):
        k = known_truth(args[0])
        return k if k is None or k != (kind == "and") else known_truth(args[1])
    if kind in ("select", "eager"):
        k = known_truth(args[0])
        return None if k is None else known_truth(args[1 if k else 2])
    if kind == "member":
        tests, negate = op.value
        for t in tests:
            k = known_truth(t)
            if k is None or k:
                return k if k is None else not negate
        return negate
    return None


def place(filename, where):
    """The user position an error reports, (filename, line, col, end col), from a lowered position or
    an ast node of ``filename``: no columns where the node spans several lines (None: none)."""
    if where is not None and not isinstance(where, tuple):
        line = getattr(where, "lineno", None)
        where = (filename, line, getattr(where, "col_offset", None),
                 getattr(where, "end_col_offset", None) if getattr(where, "end_lineno", line) == line else None)
    return where if where is None or where[3] is not None else (where[0], where[1], None, None)


def refusal(name, type_, const) -> str:
    """Why a value of static ``type_`` cannot be stored in the local ``name`` (store_kind refused it)."""
    if type_ == "range":
        return "a range() kept in a variable"
    if type_ == "none":
        return "a local set to None"
    if type_ == "list" and const:
        return "a local bound to a module-level list"
    if type_ not in ("int", "float", "num", "bool", "str", "list"):
        return f"a local of type {type_}"
    return f"local '{name}' holds values of different types"


def _const(op) -> bool:
    """Whether a printer spells the value ``op`` as a constant: a constant, or the one that a
    constant test chooses (a constant list is shared: a local never holds it)."""
    if op.kind in ("then", "pick"):
        return _const(op.args[-1 if op.kind == "then" else 1 + op.value])
    if op.kind in ("select", "eager"):
        k = known_truth(op.args[0])
        return k is not None and _const(op.args[1 if k else 2])
    return op.is_const


class _Checker:
    """Walk a body as the printer will: lower what it spells, refuse what the target cannot hold."""

    def __init__(self, body, param_types, target):
        self.body, self.ops = body, {}
        self.types = {n: body.locals.get(n, param_types[n]) for n in body.params}
        self.types.update((n, t) for n, t in body.locals.items() if n not in self.types)
        self.lowering = ops.Lowering(self.type_of, body.positions, target=target)

    def run(self) -> dict:
        if self.body.untyped:
            raise Untranslatable(None, "a local variable is read before it is assigned")
        self.block(self.body.body)
        return self.ops

    def type_of(self, name):
        if name not in self.types:
            raise Untranslatable(None, f"the name '{name}'")
        return self.types[name]

    def ex(self, e):
        op = self.ops[id(e)] = self.lowering(e)
        return op

    def truth(self, op):
        if op.type not in TRUTHY:
            raise Untranslatable(None, f"truth value of a {op.type}")
        return op

    def store(self, name, type_, const=False):
        local = self.types.get(name)
        if local is None:
            raise Untranslatable(None, f"assignment to '{name}'")
        if ops.store_kind(local, type_, const) not in STORES:
            raise Untranslatable(None, refusal(name, type_, const))

    def element(self, op):
        if not ops.element_ok(op.type):
            raise Untranslatable(None, "a list of non-integers")

    def block(self, stmts) -> bool:
        """Check statements; True when the block ends in return/break/continue (the rest is dead)."""
        for st in stmts:
            if self.statement(st):
                return True
        return False

    def statement(self, st):
        if isinstance(st, (Eval, Yield)):
            v = self.ex(st.value)
            if isinstance(st, Yield) and not ops.yield_ok(v.type):
                raise Untranslatable(None, f"yield of a {v.type}")
        elif isinstance(st, Append):
            if self.type_of(st.name) != "list":
                raise Untranslatable(None, "append() on something that is not a local list")
            self.element(self.ex(st.value))
        elif isinstance(st, Assign) and st.aug and self.type_of(st.names[0]) == "list":
            rhs = self.ex(st.value.right)
            if rhs.type != "list" or st.value.op != "+":
                raise Untranslatable(None, f"operator + on list and {rhs.type}")
        elif isinstance(st, (Assign, Unpack)):
            values = [self.ex(x) for x in ([st.value] if isinstance(st, Assign) else st.values)]
            for name, v in zip(st.names, values * len(st.names) if isinstance(st, Assign) else values):
                self.store(name, v.type, _const(v))
        elif isinstance(st, SetItem):
            v, lst = self.ex(st.value), self.ex(st.container)
            if lst.type != "list" or _const(lst):
                raise Untranslatable(None, "item assignment to something that is not a local list")
            self.ex(st.index)
            self.element(v)
        elif isinstance(st, If):
            live = known_truth(self.truth(self.ex(st.test)))
            if live is not None:
                return self.block(st.body if live else st.orelse)
            return self.block(st.body) & self.block(st.orelse)
        elif isinstance(st, (While, For)):
            if isinstance(st, While):
                self.truth(self.ex(st.test))
            else:
                it = self.ex(st.iterable)
                if it.type not in ("range", "list"):
                    raise Untranslatable(None, f"iteration over a {it.type}")
                self.store(st.name, "int")
            self.block(st.body)
        elif isinstance(st, Scope):
            return self.block(st.body)
        elif isinstance(st, Return):
            self.returns(None if st.value is None else self.ex(st.value))
        return isinstance(st, (Break, Continue, Return))

    def returns(self, v):
        kind = self.body.kind
        if kind == "condition" and v is not None:
            self.truth(v)
        elif kind == "iterator" and ops.return_kind("none" if v is None else v.type) is None:
            raise Untranslatable(None, f"an @iterator returning a {v.type}")
