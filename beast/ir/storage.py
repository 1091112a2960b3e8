"""How body statements store their values, decided from static types: shared by the C and Lua
body printers, which only spell the decisions (a list filled or copied, a number widened, a
let's storage, a parameter's entry, a tabulated function's table)."""
from __future__ import annotations

from ..expr.nodes import Var
from .body import ListLit, Untranslatable
from .ints import C64
from .ops import INTISH, NUMERIC
from .tabulate import float_bits


# body printers, which only spell them.

def store_kind(local, value, shared=False):
    """How a value of static type ``value`` is assigned to a local of type ``local``: 'list' (a list
    from a list value), 'fill' (a list from constant values, ``shared``: a module-level one: their
    copy), 'number' (a number of a type the local holds: int or bool into int, any into num),
    'widen' (a number the local's type does not hold: converted where the target can), 'str';
    None: refused."""
    if local == "list":
        if value not in ("list", "carray"):
            return None
        return "fill" if value == "carray" or shared else "list"
    if local in NUMERIC and value in NUMERIC:
        held = value == local or local == "num" or local == "int" and value == "bool"
        return "number" if held else "widen"
    return "str" if local == value == "str" else None


def list_store(st, aliases=False):
    """How ``names = value`` (a body ``Assign`` whose first target is a list local) stores: 'clear'
    (an empty literal: the lists are emptied), 'value' (the value is lowered, then stored with
    :func:`store_kind`). Refused where the target cannot: ``+=`` and, where lists
    are copied rather than shared (``aliases`` False), one list under two names."""
    if st.aug:
        raise Untranslatable(st.node, "'+=' on a list")
    if isinstance(st.value, Var) and not aliases:
        raise Untranslatable(None, f"'{st.names[0]} = {st.value.name}' (two names for one list)")
    return "clear" if isinstance(st.value, ListLit) and not st.value.elts else "value"


def local_init(name, type_, params):
    """How a body local of static ``type_`` starts: 'list' (empty), 'param' (a parameter of the same
    name, converted to the local's type), 'zero'; refused: a local of another type."""
    if type_ not in ("list",) + NUMERIC:
        raise Untranslatable(None, f"the local '{name}' (a {type_})")
    return "list" if type_ == "list" else "param" if name in params else "zero"


def checked_store(name, local, value, shared=False):
    """:func:`store_kind`, refusing what a target cannot store (the message names the local)."""
    kind = store_kind(local, value, shared)
    if local == "list" and kind not in ("fill", "list"):
        raise Untranslatable(None, f"assigning a {value} to the list '{name}'")
    if local != "list" and kind not in ("number", "widen"):
        raise Untranslatable(None, f"assigning a {value} to '{name}'")
    return kind


def return_kind(type_):
    """What an @iterator's ``return`` of a value of static type ``type_`` gives: 'none' (Python's
    error when the iterator is used), 'range', 'list' (its values: a list or constant integers),
    'number' (one value); None: refused."""
    if type_ in ("none", "range"):
        return type_
    if type_ in ("list", "carray"):
        return "list"
    return "number" if type_ in NUMERIC else None


def element_ok(type_) -> bool:
    """Whether a value of static type ``type_`` can be appended to (or stored in) a list: lists
    hold integers only."""
    return type_ in INTISH


def yield_ok(type_) -> bool:
    """Whether a value of static type ``type_`` can be yielded: iterators yield numbers."""
    return type_ in NUMERIC


# ---------------------------------------------------------------------------------------------
# Tabulated functions (beast.ir.tabulate): the arrays a target stores a table as.

TABLE_KINDS = {"values": 0, "range": 1, "none": 2, "badret": 3}


def table_values(table, intern):
    """The results of an iterator's :class:`~beast.ir.tabulate.Table` as flat arrays: per entry its
    kind (:data:`TABLE_KINDS`), the offsets of each entry's values (one more than the entries), and
    the 64-bit values with their tags (0: an integer; 1: a float's bits; 2: an object, its index from
    ``intern(v)``; a range's three bounds and a badret message's index are tagged 0)."""
    kinds, offs, vals, tags = [], [0], [], []
    for _, (kind, payload, _err) in table.entries:
        kinds.append(TABLE_KINDS.get(kind, 0))
        if kind == "range":
            items = [(0, x) for x in payload]
        elif kind == "badret":
            items = [(0, intern(payload))]
        elif kind == "none":
            items = []
        else:
            items = [(0, int(v)) if type(v) in (int, bool) and C64.fits(v) else
                     (1, float_bits(v)) if type(v) is float else (2, intern(v)) for v in payload]
        tags += [t for t, _ in items]
        vals += [v for _, v in items]
        offs.append(len(vals))
    return kinds, offs, vals, tags


# ---------------------------------------------------------------------------------------------
# Conversions decided by static types alone (the Lua printer spells them)

def let_kind(local, value):
    """How a nest ``Let`` binds a value of static type ``value`` to its variable of static type
    ``local``: 'flagged' (a num: the value as a number, a bool as 0/1, with its "is a float" flag),
    'number' (an int or a float: a bool as 0/1; a float holds an int), 'same' (any other type: a
    value of that type, as it is); None: refused (a type the variable does not hold)."""
    if local == "num":
        return "flagged"
    if local in ("int", "float"):
        return "number" if value in INTISH or value == local else None
    return "same" if value == local else None


def param_entry(local, param):
    """How a body parameter passed as static type ``param`` enters its local, typed ``local`` by the
    lowering (wider where the body stores other numbers in it: :func:`store_kind`'s 'widen'):
    ``(as_int, flag)``; ``as_int``: a bool parameter of a wider local becomes the int 0/1; ``flag``:
    the "is a float" flag a num local of a parameter of another type starts with (True for a
    float), None where there is none to set."""
    if local == param:
        return False, None
    return param == "bool", (param == "float" if local == "num" else None)


__all__ = ["TABLE_KINDS", "checked_store", "element_ok", "let_kind", "list_store", "local_init", "param_entry", "return_kind", "store_kind", "table_values", "yield_ok"]
