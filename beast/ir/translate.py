"""Which user functions a target translates and which it tabulates, decided once before printing.

A function is translated when its lowered body (:func:`beast.ir.lower.lower_function`) and every
expression in it (:class:`beast.ir.ops.Lowering`, for the target) stay inside what the target
holds, and the statements agree with the static types of their values (:func:`~beast.ir.ops.
checked_store`, :func:`~beast.ir.ops.return_kind`, ...). The walk visits what a printer prints, in
the order it prints it (the branch a constant test decides, not the other), so the first refusal
is the one the printer would have met. Else the function is tabulated (:mod:`beast.ir.tabulate`),
else it is an error at the first refusal. The printer then only spells a :class:`Translated` body
(its expressions already lowered) or a :class:`~beast.ir.tabulate.Table`.
"""
from __future__ import annotations

from ..errors import SpaceError
from ..expr import Const
from .body import Append, Assign, Eval, For, If, Return, Scope, SetItem, Unpack, Untranslatable, While, Yield
from .lower import NUMERIC, lower_function
from .ops import C64, Lowering, checked_store, element_ok, list_store, local_init, return_kind, yield_ok
from .record import record
from .tabulate import Untabulatable

NONE = Const(None)          # the value of a bare ``return`` (its op is in ``Translated.ops`` too)
ITERABLE = ("range", "list", "carray")


@record
class Translated:
    """A function body a target translates: ``ops`` maps ``id(expr)`` of every expression a
    printer asks for to its lowered :class:`~beast.ir.ops.Op`."""
    body: object                # beast.ir.body.FuncBody
    ops: dict


def param_types(info, types) -> list:
    """The static type of each node argument of ``info`` (``types``: the program's), as a body
    receives it: int, bool, float, else num."""
    return [t if t in NUMERIC else "num" for t in (types.get(a, "num") for a in info.node_args)]


def translate_or_tabulate(info, ptypes, tabulator, target=C64, backend="C", force=False):
    """A :class:`Translated` body or a :class:`~beast.ir.tabulate.Table` for the user function
    ``info`` whose node arguments have the static types ``ptypes``; ``force``: tabulate all the
    same (tests). Neither: a :class:`~beast.errors.SpaceError` at the first refusal."""
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


def translate(info, ptypes, target=C64) -> Translated:
    """The body of ``info`` with its expressions lowered for ``target`` (lists: arrays of integers);
    :class:`~beast.ir.body.Untranslatable` at the first thing the target cannot hold."""
    body = lower_function(info, ptypes)
    return _Walk(body, target).run()


class _Walk:
    def __init__(self, body, target):
        self.body = body
        self.types = dict(body.ptypes)
        self.types.update(body.locals)
        self.lowering = Lowering(self.type_of, body.positions, body.origins, target)
        self.ops = {}

    def type_of(self, name):
        if name not in self.types:
            raise Untranslatable(None, f"the name '{name}'")
        return self.types[name]

    def run(self) -> Translated:
        for name, ltype in self.body.locals.items():
            local_init(name, ltype, self.body.params)
        self.block(self.body.body)
        return Translated(self.body, self.ops)

    def value(self, e):
        op = self.ops[id(e)] = self.lowering(e)
        return op

    def test(self, e):
        """A tested value: a constant decides the branch; anything else must have a truth value."""
        op = self.value(e)
        return op if op.is_const else self.lowering.truthy(op)

    def store(self, name, type_):
        checked_store(name, self.types[name], type_)

    def block(self, stmts):
        for st in stmts:
            self.statement(st)

    def statement(self, st):
        kind = self.body.kind
        if isinstance(st, Unpack):
            types = []
            for v in st.values:         # every value first, then the assignments
                t = self.value(v).type
                if t not in NUMERIC:
                    raise Untranslatable(st.node, f"unpacking a {t}")
                types.append(t)
            for n, t in zip(st.names, types):
                self.store(n, t)
        elif isinstance(st, Assign):
            if self.types[st.names[0]] == "list" and list_store(st) == "clear":
                return
            t = self.value(st.value).type
            for n in st.names:
                self.store(n, t)
        elif isinstance(st, SetItem):
            raise Untranslatable(st.target, "this assignment target")
        elif isinstance(st, If):
            op = self.test(st.test)
            if op.is_const:
                self.block(st.body if op.value else st.orelse)
            else:
                self.block(st.body)
                self.block(st.orelse)
        elif isinstance(st, While):
            self.test(st.test)
            self.block(st.body)
        elif isinstance(st, For):
            op = self.value(st.iterable)
            if op.type not in ITERABLE:
                raise Untranslatable(st.node, f"iterating over a {op.type}")
            if not (op.type == "carray" and not op.value):      # no values: nothing is printed
                self.store(st.name, "int")
                self.block(st.body)
        elif isinstance(st, Scope):
            self.block(st.body)
        elif isinstance(st, Yield):
            if not yield_ok(self.value(st.value).type):
                raise Untranslatable(st.node.value, "yielding a non-number")
        elif isinstance(st, Append):
            t = self.value(st.value).type
            if not element_ok(t):
                raise Untranslatable(st.call, f"appending a {t} (lists of integers only)")
        elif isinstance(st, Return):
            if kind == "closure":
                if st.value is not None:
                    self.value(st.value)
                return
            op = self.value(st.value if st.value is not None else NONE)
            if kind == "condition":
                self.lowering.truthy(op)
            elif return_kind(op.type) is None:
                raise Untranslatable(st.node, f"returning a {op.type}")
        elif isinstance(st, Eval):
            self.value(st.value)
