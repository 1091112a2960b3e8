"""Random small beast spaces for property tests.

:func:`spaces` is a Hypothesis strategy that draws a space and returns a :class:`Generated`: the
space file's text, the settings to load it with, and an independent plain-Python
:class:`~oracle.Model` of it (tests/support/oracle.py), built from the same random choices but never from
beast's compiler. Module-level expressions are rendered twice from one small AST: once in beast's
vocabulary (``&``, ``|``, ``~``, ``select``) and once in plain Python (``and``, ``or``, ``not``, a
conditional expression), evaluated on plain integers by the oracle. Function bodies (``@iterator``
and ``@condition``) are plain Python already: the oracle executes the same body text, with every
node the body reads passed as an argument.

What is covered: expression iterators ``range(a, b, s)`` whose bounds are constants or expressions
of earlier nodes (negative steps, empty ranges), ``iterator([...])`` lists with duplicates, scalars
``iterator(expr)`` (bools count 0/1), ``union``/``intersection``/``difference`` of lists, inline
ranges, scalars and named iterators (an operand that is a named iterator stands for its values),
deferred ``@iterator`` functions with if/elif/else returning a scalar, list or range (placed
anywhere in the file, also before the iterators they read), closure iterators (generators with
while/for loops, break/continue and state), derived variables with ``+ - * // % / **``, ``min``,
``max``, ``abs`` and ``select`` (floats included), Python's bitwise ``&`` and ``|`` of integers,
module-level ``if`` on a setting that rebinds a
derived variable or picks an iterator's definition, expression conditions with ``& | ~`` and
comparisons (a number as an operand of ``& | ~`` is compared with 0: beast refuses it as it is;
named, unnamed, with a kind), ``@condition`` functions with and/or/not and chained
comparisons, and divisions whose divisor can be zero. Also: a bool constant ``FLAG``
and a bool setting ``flag`` read as truth values in every kind of body and at module level,
``& | ~`` of truth values used as numbers (0/1) at module level, and comprehensions in
``@condition`` bodies whose variable rebinds a node or a constant that the body reads again.

Most spaces keep rows: literals are drawn simplest first, ranges are mostly non-empty, set
operations mostly union or draw from few values, and while the oracle says a space keeps nothing,
the condition that rejects the most is dropped (:meth:`Builder.prune_conditions`); a space whose
model raises stays as it is, so errors remain a minority that is still checked.

Semantics modelled (docs/language.md): module-level code is Python, so a module-level expression reads
the binding current at its line, while a function reads the final binding of a name; True rejects.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field

from hypothesis import strategies as st

from oracle import SETOPS, Model, ONode, OracleError, TooLarge, brute_force, values_of

INT_LITS = [2, 3, 1, 4, 0, 5, -1, 6, 7, -2, 8]   # the simplest (first) values make non-empty ranges
DIV_LITS = [2, 3, 1, -1, 4, -2, 5, -3]
FLOAT_LITS = [0.5, 1.5, -2.0, 2.25, 3.0]
STEPS = [1, 2, -1, 3, -2, -3]
CMP_OPS = ["<", "<=", ">", ">=", "==", "!="]
KINDS = [None, None, "hard", "soft", "correctness"]
COMPREHENSIONS = ["len([{v} for {v} in range(3)])", "len({{{v} for {v} in range({v} + 1)}})",
                  "sum({v} for {v} in range(2))", "len({{{v}: 1 for {v} in range(2)}})",
                  "len([[{v} for {v} in range(2)] for {v} in range({v})])"]
PRUNE_LIMIT = 20000     # the largest product of supersets the generator walks to prune conditions


# ---------------------------------------------------------------------------------------------
# Expressions: one tree, three renderings.
#   beast(): module-level text in beast's vocabulary
#   py(names, logic): plain Python; names maps a node's file name to the text to use (its SSA key
#   in the oracle, the plain name in a function body); logic="bool" renders & | as bool-valued
#   and/or (beast's meaning), logic="python" as Python's own and/or (function bodies).

def _num_type(*types):
    if all(t in ("int", "bool") for t in types):
        return "int"
    if all(t == "float" for t in types):
        return "float"
    if "num" in types:
        return "num"
    return "float" if all(t in ("int", "bool", "float") for t in types) else "num"


class X:
    type = "int"

    def refs(self):
        out = set()
        for c in self.children():
            out |= c.refs()
        return out

    def children(self):
        return ()


class Lit(X):
    def __init__(self, v):
        self.v = v
        self.type = "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"

    def beast(self):
        return f"({self.v!r})" if (not isinstance(self.v, bool) and self.v < 0) else repr(self.v)

    def py(self, names, logic):
        return self.beast()


class Const(X):
    """A setting or constant read by name: the same text everywhere (the oracle has it as a global)."""

    def __init__(self, text, type_):
        self.text, self.type = text, type_

    def beast(self):
        return self.text

    def py(self, names, logic):
        return self.text


class Ref(X):
    def __init__(self, name, key, type_):
        self.name, self.key, self.type = name, key, type_

    def refs(self):
        return {self.name}

    def beast(self):
        return self.name

    def py(self, names, logic):
        return names.get(self.name, self.name)


class Bin(X):
    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right
        lt, rt = left.type, right.type
        if op == "/":
            self.type = "float"
        elif op == "**":
            self.type = "int" if lt in ("int", "bool") else _num_type(lt)
        else:
            self.type = _num_type(lt, rt)

    def children(self):
        return (self.left, self.right)

    def beast(self):
        return f"({self.left.beast()} {self.op} {self.right.beast()})"

    def py(self, names, logic):
        return f"({self.left.py(names, logic)} {self.op} {self.right.py(names, logic)})"


class Bits(X):
    """Python's bitwise ``&`` / ``|`` of two integers (a bool counts 0/1): in beast's vocabulary
    each operand is made an integer (``* 1``), since ``&`` of a truth value and an integer is refused
    at module level; in plain Python, as written."""
    type = "int"

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right

    def children(self):
        return (self.left, self.right)

    def beast(self):
        return f"({self.left.beast()} * 1 {self.op} {self.right.beast()} * 1)"

    def py(self, names, logic):
        return f"({self.left.py(names, logic)} {self.op} {self.right.py(names, logic)})"


class Neg(X):
    def __init__(self, operand):
        self.operand = operand
        self.type = "int" if operand.type == "bool" else operand.type

    def children(self):
        return (self.operand,)

    def beast(self):
        return f"(-{self.operand.beast()})"

    def py(self, names, logic):
        return f"(-{self.operand.py(names, logic)})"


class Cmp(X):
    type = "bool"

    def __init__(self, ops, operands):
        self.ops, self.operands = list(ops), list(operands)

    def children(self):
        return tuple(self.operands)

    def _text(self, parts):
        out = parts[0]
        for op, p in zip(self.ops, parts[1:]):
            out += f" {op} {p}"
        return f"({out})"

    def beast(self):
        assert len(self.ops) == 1, "chained comparisons exist only in function bodies"
        return self._text([o.beast() for o in self.operands])

    def py(self, names, logic):
        return self._text([o.py(names, logic) for o in self.operands])


class Logic(X):
    type = "bool"

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right   # op: "and" | "or"

    def children(self):
        return (self.left, self.right)

    def beast(self):
        sym = "&" if self.op == "and" else "|"
        return f"({truth(self.left)} {sym} {truth(self.right)})"

    def py(self, names, logic):
        left, right = self.left.py(names, logic), self.right.py(names, logic)
        if logic == "bool":
            return f"(bool({left}) {self.op} bool({right}))"
        return f"({left} {self.op} {right})"


class Not(X):
    type = "bool"

    def __init__(self, operand):
        self.operand = operand

    def children(self):
        return (self.operand,)

    def beast(self):
        return f"(~{truth(self.operand)})"

    def py(self, names, logic):
        return f"(not {self.operand.py(names, logic)})"


def truth(e):
    """``e`` as an operand of beast's logical & | ~ (which refuse an integer at module level): a
    number is compared with 0, as its truth value."""
    return e.beast() if isinstance(e, (Cmp, Logic, Not)) else f"({e.beast()} != 0)"


class Call(X):
    def __init__(self, func, args):
        self.func, self.args = func, list(args)
        if func == "abs":
            self.type = "int" if args[0].type in ("int", "bool") else args[0].type
        else:
            types = [a.type for a in args]
            self.type = "bool" if all(t == "bool" for t in types) else _num_type(*types)

    def children(self):
        return tuple(self.args)

    def beast(self):
        return f"{self.func}({', '.join(a.beast() for a in self.args)})"

    def py(self, names, logic):
        return f"{self.func}({', '.join(a.py(names, logic) for a in self.args)})"


class Sel(X):
    """``select(cond, then, orelse)``. At module level a condition that reads no node is a plain
    bool, and select() returns the branch it picks right away (``taken``): only that branch's
    nodes are read."""

    def __init__(self, cond, then, orelse, taken=None):
        self.cond, self.then, self.orelse, self.taken = cond, then, orelse, taken
        t1, t2 = then.type, orelse.type
        self.type = "bool" if t1 == t2 == "bool" else _num_type(t1, t2)

    def children(self):
        return (self.cond, self.then, self.orelse)

    def refs(self):
        if self.taken is None:
            return super().refs()
        return (self.then if self.taken else self.orelse).refs()

    def beast(self):
        return f"select({self.cond.beast()}, {self.then.beast()}, {self.orelse.beast()})"

    def py(self, names, logic):
        return (f"({self.then.py(names, logic)} if {self.cond.py(names, logic)} "
                f"else {self.orelse.py(names, logic)})")


def is_intlike(t):
    return t in ("int", "bool")
