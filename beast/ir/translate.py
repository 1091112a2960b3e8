"""Which user functions a target translates, decided once before printing.

A function is translated when its lowered body (:func:`beast.ir.lower.lower_function`) and every
expression in it (:class:`beast.ir.ops.Lowering`, for the target) stay inside what the target
holds, and the statements agree with the static types of their values (:func:`~beast.ir.ops.
store_kind`, :func:`~beast.ir.storage.return_kind`, :func:`~beast.ir.storage.element_ok`, ...). The walk
visits what a printer prints, in the order it prints it (not the branch a known test decides
away: :func:`known_truth`), so the first refusal is the one the printer would have met. Else C
tabulates the function (:mod:`beast.ir.tabulate`) and Lua calls it back in Python. The printer then
only spells a :class:`Decided` body: the copy the walk made of what it prints, its expressions
already lowered, how each name is stored and (Lua) each numeric ``for``'s limit; it can no longer
fail.

The two targets differ in their lists (``Target.tables``): C's are arrays of integers, copied on
assignment, every local starts at zero and code after a ``return`` is still printed; Lua's are
tables (item assignment holds, locals may be strings or lists), a local read before it is assigned
is refused (it would be nil), and what a return, break or continue leaves dead is neither walked
nor printed. Each target words its refusals its own way (:data:`SAYS`).
"""
from __future__ import annotations

from ..errors import SpaceError
from ..expr.nodes import Const
from .body import (Append, Assign, Break, Continue, Eval, For, FuncBody, If, Known, Return, Scope, SetItem,
                   Unpack, Untranslatable, While, Yield)
from .lower import NUMERIC, lower_function
from .ops import C64, Lowering, loop_limit
from .storage import checked_store, element_ok, list_store, local_init, return_kind, store_kind, yield_ok
from .record import record
from .tabulate import Untabulatable

NONE = Const(None)          # the value of a bare ``return`` (its op is in ``Decided.ops`` too)
TRUTHY = ("bool", "none", "str", "list", "int", "float", "num", "range")
STORES = ("list", "number", "str")      # store_kind's kinds a table target keeps: no widening, no copy


@record
class Decided:
    """One user function for one target: ``reason`` why it is not translated (None: it is), else
    its lowered ``body`` as the target prints it (a branch a known test decides away is gone: the
    ``if`` is a :class:`~beast.ir.body.Known`; a table target's statements after a return, break or
    continue too; a ``while`` carries the truth of a known test), ``ops`` (id(expr) -> Op of every
    expression the printer spells), the static ``types`` of its names (parameters and locals) and
    ``stores`` (id(statement) -> how each name an Assign, an Unpack or a For binds is stored: the
    kinds of :func:`~beast.ir.storage.store_kind`, 'clear' for C's ``l = []``) and, for a table target,
    ``limits`` (id(For) over a range -> the ops of its inclusive limit,
    :func:`~beast.ir.ops.loop_limit`: one where the step is a constant, else stop - 1 and stop + 1,
    chosen by the step's sign at run time)."""
    body: FuncBody | None = None
    ops: dict | None = None
    types: dict | None = None
    reason: str | None = None
    stores: dict | None = None
    limits: dict | None = None

    def return_kind(self, st) -> str:
        """What the @iterator's ``return`` ``st`` gives (:func:`~beast.ir.storage.return_kind` of its
        value's static type; a bare ``return`` gives None), as the walk checked it."""
        return return_kind(self.ops[id(NONE if st.value is None else st.value)].type)


# how each target words a refusal, by Target.tables ({} is the static type)
SAYS = {
    False: dict(unpack="unpacking a {}", iterate="iterating over a {}", yields="yielding a non-number",
                element="appending a {} (lists of integers only)", returns="returning a {}"),
    True: dict(iterate="iteration over a {}", yields="yield of a {}", element="a list of non-integers",
               returns="an @iterator returning a {}"),
}


def param_types(info, types, held=NUMERIC) -> list:
    """The static type of each node argument of ``info`` (``types``: the program's), as a body
    receives it: a type the target passes as it is (``held``; C: int, bool, float), else num."""
    return [t if t in held else "num" for t in (types.get(a, "num") for a in info.node_args)]


def translate_or_tabulate(info, ptypes, tabulator, target=C64, backend="C", force=False):
    """A translated :class:`Decided` body or a :class:`~beast.ir.tabulate.Table` for the user
    function ``info`` whose node arguments have the static types ``ptypes``; ``force``: tabulate
    all the same (tests). Neither: a :class:`~beast.errors.SpaceError` at the first refusal."""
    try:
        if force:
            raise Untranslatable(info.fdef, "(tabulation forced)")
        return translate(info, ptypes, target)
    except Untranslatable as why:
        node = why.node if why.node is not None and hasattr(why.node, "lineno") else info.fdef
        try:
            return tabulator.tabulate(info, ptypes)
        except Untabulatable as tab:
            raise SpaceError.at(
                node, info.filename,
                f"the {backend} backend cannot translate {why.reason} in '{info.name}', and cannot "
                f"tabulate '{info.name}' instead: {tab}",
                hint="use integers, if/elif/else, while, for over range() or a list, and local "
                     "lists of integers; or let the function's arguments take few values") from None


def decide(info, ptypes: dict, target, forced=False) -> Decided:
    """:func:`translate`, or the reason it refuses (``ptypes``: node argument -> static type;
    ``forced``: refuse all the same, for tests)."""
    if forced:
        return Decided(reason="forced")
    try:
        return translate(info, [ptypes[a] for a in info.node_args], target)
    except Untranslatable as why:
        return Decided(reason=str(why))


def translate(info, ptypes, target=C64) -> Decided:
    """The body of ``info`` (``ptypes``: per node argument) with its expressions lowered for
    ``target``; :class:`~beast.ir.body.Untranslatable` at the first thing the target cannot hold."""
    body = lower_function(info, ptypes)
    walk = _Walk(body, target)
    body.body = walk.run()          # what the target prints (the body was lowered for it alone)
    return Decided(body, walk.ops, walk.types, stores=walk.stores, limits=walk.limits)


def known_truth(op):
    """Python's truth value of ``op`` where it is known without running it (a constant, or one that
    a constant test, choice or min/max step gives), else None: an ``if`` on it keeps one branch."""
    kind, args = op.kind, op.args
    if kind == "const":
        return bool(op.value) if op.type in ("int", "float", "bool", "str", "none") else None
    if kind == "carray":                # constant integers (C: an array; Lua: a module-level table)
        return bool(op.value)
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


def _limits(op) -> tuple:
    """The ops of the inclusive limit of a numeric ``for`` over the range ``op`` (Decided.limits)."""
    step = op.args[2] if op.kind == "range" else None
    if step is not None and step.kind == "const":       # the sign is known (a step of 0 has failed)
        return (loop_limit("-" if step.value > 0 else "+"),)
    return loop_limit("-"), loop_limit("+")


class _Walk:
    """Walk a body as the printer will: lower what it spells, refuse what the target cannot hold."""

    def __init__(self, body, target):
        self.body, self.ops, self.tables, self.says = body, {}, target.tables, SAYS[target.tables]
        self.stores, self.limits = {}, {}
        self.types = dict(body.ptypes)
        self.types.update(body.locals)
        self.lowering = Lowering(self.type_of, body.positions, body.origins, target)

    def run(self) -> dict:
        if not self.tables:
            for name, ltype in self.body.locals.items():
                local_init(name, ltype, self.body.params)
        elif self.body.untyped:         # nil in Lua (C starts every local at zero)
            raise Untranslatable(None, "a local variable is read before it is assigned")
        return self.block(self.body.body)[0]

    def type_of(self, name):
        if name not in self.types:
            raise Untranslatable(None, f"the name '{name}'")
        return self.types[name]

    def value(self, e):
        op = self.ops[id(e)] = self.lowering(e)
        return op

    def test(self, e):
        """A tested value (if, while): it must have a truth value (C: unless it is a constant)."""
        op = self.value(e)
        return op if op.is_const and not self.tables else self.truth(op)

    def truth(self, op):
        if not self.tables:
            return self.lowering.truthy(op)
        if op.type not in TRUTHY:
            raise Untranslatable(None, f"truth value of a {op.type}")
        return op

    def store(self, name, type_, const=False) -> str:
        """How a value of static ``type_`` is stored in ``name`` (``const``: one a printer spells as
        a constant)."""
        local = self.types.get(name)
        if local is None:
            raise Untranslatable(None, f"assignment to '{name}'")
        if not self.tables:
            return checked_store(name, local, type_)
        kind = store_kind(local, type_, const)
        if kind not in STORES:
            raise Untranslatable(None, refusal(name, type_, const))
        return kind

    def refuse(self, node, what, type_=None):
        raise Untranslatable(node, self.says[what].format(type_))

    def block(self, stmts) -> tuple:
        """Walk statements: the statements printed and whether they leave their block (a table
        target prints nothing after a return, break or continue: it is dead)."""
        out = []
        for st in stmts:
            st, leaves = self.statement(st)
            out.append(st)
            if leaves and self.tables:
                return out, True
        return out, False

    def statement(self, st) -> tuple:
        """Walk one statement: the statement printed (the pruned copy of a compound one) and whether
        it leaves its block."""
        tables = self.tables
        if isinstance(st, Unpack):
            values = []
            for v in st.values:         # every value first, then the assignments
                op = self.value(v)
                if not tables and op.type not in NUMERIC:
                    self.refuse(st.node, "unpack", op.type)
                values.append(op)
            self.stores[id(st)] = tuple(self.store(name, op.type, _const(op)) for name, op in zip(st.names, values))
        elif isinstance(st, Assign):
            is_list = self.types.get(st.names[0]) == "list"
            if is_list and not tables and list_store(st) == "clear":
                kinds = ("clear",) * len(st.names)
            else:
                op = self.value(st.value)
                kinds = tuple(self.store(name, op.type, _const(op)) for name in st.names)
            self.stores[id(st)] = kinds
        elif isinstance(st, SetItem):
            if not tables:
                raise Untranslatable(st.target, "this assignment target")
            v, lst = self.value(st.value), self.value(st.container)
            if lst.type != "list" or _const(lst):
                raise Untranslatable(None, "item assignment to something that is not a local list")
            self.value(st.index)
            if not element_ok(v.type):
                self.refuse(None, "element", v.type)
        elif isinstance(st, If):
            live = known_truth(self.test(st.test))
            if live is not None:            # the other branch is dead: neither walked nor printed
                body, leaves = self.block(st.body if live else st.orelse)
                return Known(st.node, st.test, body), leaves
            (body, left), (orelse, right) = self.block(st.body), self.block(st.orelse)
            return If(st.node, st.test, body, orelse), left and right
        elif isinstance(st, While):
            known = known_truth(self.test(st.test))
            return While(st.node, st.test, self.block(st.body)[0], known), False
        elif isinstance(st, For):
            op = self.value(st.iterable)
            if op.type not in ("range", "list", "carray"):     # a carray: C's constant integers
                self.refuse(st.node, "iterate", op.type)
            body, kinds = [], ()
            if not (op.type == "carray" and not op.value):      # no values: nothing is printed
                kinds = (self.store(st.name, "int"),)
                body = self.block(st.body)[0]
            st = For(st.node, st.name, st.iterable, body)
            self.stores[id(st)] = kinds
            if op.type == "range" and tables:
                self.limits[id(st)] = _limits(op)
            return st, False
        elif isinstance(st, Scope):
            body, leaves = self.block(st.body)
            return Scope(st.node, st.names, body), leaves
        elif isinstance(st, Yield):
            op = self.value(st.value)
            if not yield_ok(op.type):
                self.refuse(st.node.value, "yields", op.type)
        elif isinstance(st, Append):
            op = self.value(st.value)
            if not element_ok(op.type):
                self.refuse(st.call, "element", op.type)
        elif isinstance(st, Return):
            self.returns(st)
        elif isinstance(st, Eval):
            self.value(st.value)
        return st, isinstance(st, (Break, Continue, Return))

    def returns(self, st):
        if self.body.kind == "closure":     # a bare return (beast.ir.lower evaluates a value before)
            return
        op = self.value(st.value if st.value is not None else NONE)
        if self.body.kind == "condition":
            self.truth(op)
        elif return_kind(op.type) is None:
            self.refuse(st.node, "returns", op.type)


@record
class Decision:
    """A user function for one target, decided before printing: ``ptypes`` (node argument -> the
    static type the target passes it as: ``FuncTarget.params``, any other num) and ``done``: its
    :class:`Decided` body (translated, or why not: ``reason``) or its
    :class:`~beast.ir.tabulate.Table`."""
    ptypes: dict
    done: object


def decide_all(program, target, tabulator=None, forced=(), idents=None) -> dict:
    """ident -> :class:`Decision` of the user functions of ``program`` for ``target`` (a
    :class:`beast.ir.targets.FuncTarget`): those of ``idents``, in that order (default: all, in
    the program's order). A tabulating target tabulates what it does not translate with
    ``tabulator`` (a :class:`~beast.ir.tabulate.Tabulator`; a :class:`~beast.errors.SpaceError`
    where it cannot either); another keeps the reason (it calls the function back in Python).
    ``forced``: idents refused all the same (tests; every function of a tabulating target while
    ``beast.ir.targets.FORCE_TABULATE`` is set)."""
    from . import targets       # (read when it runs: tests set the flag)
    if target.tabulate and targets.FORCE_TABULATE:
        forced = program.funcs
    out = {}
    for ident in (program.funcs if idents is None else idents):
        info = program.funcs[ident]
        ptypes = param_types(info, program.types, target.params)
        if target.tabulate:
            done = translate_or_tabulate(info, ptypes, tabulator, target.ops, target.backend, ident in forced)
        else:
            done = decide(info, dict(zip(info.node_args, ptypes)), target.ops, ident in forced)
        out[ident] = Decision(dict(zip(info.node_args, ptypes)), done)
    return out
