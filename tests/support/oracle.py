"""A brute-force oracle for beast search spaces that does not use beast's compiler.

A space is described by a plain-Python :class:`Model`: for every iterator a function from the
environment (the values of the nodes it reads) to its list of values, for every derived variable
a function to its value, and for every condition a function to its truth value (True rejects).
The model is written independently of beast (by hand, or by ``tests/support/spacegen.py`` next to the
space-file text it generates), so comparing the two tests beast's front end, plan and backends.

The oracle:

1. computes each iterator's *superset*: its definition evaluated over the product of the
   supersets of the iterators it depends on (directly or through derived variables);
2. walks ``itertools.product`` of all supersets; a configuration survives iff every iterator value
   is one that its definition produces at that configuration -- with multiplicity: a value listed
   twice yields the configuration twice -- and no condition holds.

The result is a ``collections.Counter`` of row tuples (columns in the model's column order), so it
is compared with a backend's output regardless of enumeration order but with duplicates.

Any exception raised while evaluating the model on a configuration (ZeroDivisionError, a
non-integer value, ...) becomes :class:`OracleError`: the oracle does not evaluate in beast's
hoisted order, so such an example can only be compared between backends, not with the oracle.
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable


class OracleError(Exception):
    """The model raised while evaluating a configuration; ``cause`` is the original exception."""

    def __init__(self, message, cause=None):
        super().__init__(message)
        self.cause = cause


class TooLarge(Exception):
    """The product of the supersets is larger than the caller's limit."""


@dataclass
class ONode:
    """One node of a model.

    ``name`` is the key in the environment (derived variables that a space rebinds get one key per
    binding); ``deps`` the keys ``fn`` reads; ``fn(env)`` returns an iterator's raw values
    (scalar, list, tuple, range or generator: see :func:`values_of`), a derived value, or a
    condition's truth value."""
    name: str
    kind: str                  # "iterator" | "derived" | "condition"
    deps: tuple
    fn: Callable
    source: str = ""           # for messages: the plain-Python text of the definition


@dataclass
class Model:
    nodes: list                # in an order where every node follows the nodes it reads
    columns: tuple             # the iterators' names in the space's declaration order
    notes: list = field(default_factory=list)

    def by_kind(self, kind):
        return [n for n in self.nodes if n.kind == kind]


# -- the language's value semantics, in plain Python ---------------------------------------------

def as_int(v):
    """An iterator value: an int, or a bool counted as 0/1. Anything else is an error."""
    if type(v) is bool:
        return int(v)
    if type(v) is int:
        return v
    raise OracleError(f"non-integer iterator value {v!r}")


def values_of(result) -> list:
    """The values of an iterator definition's result: a scalar is one value; a range, list, tuple
    or generator is its values in order, duplicates kept."""
    if type(result) in (int, bool):
        return [int(result)]
    if isinstance(result, (range, list, tuple)) or hasattr(result, "__next__"):
        return [as_int(v) for v in result]
    raise OracleError(f"iterator definition gave {result!r}")


def union(a, b):
    """a's values, then b's values not yet seen; each value once."""
    return _distinct(list(a) + list(b), lambda v: True)


def intersection(a, b):
    """a's values that b also has; each value once, in a's order."""
    b = set(b)
    return _distinct(a, lambda v: v in b)


def difference(a, b):
    """a's values that b does not have; each value once, in a's order."""
    b = set(b)
    return _distinct(a, lambda v: v not in b)


def _distinct(values, keep) -> list:
    """The values that ``keep`` accepts, each once (Python equality: 1, 1.0 and True are one),
    in order; a set, so that a range of a million values is not a quadratic scan."""
    out, seen = [], set()
    for v in values:
        if v not in seen and keep(v):
            seen.add(v)
            out.append(v)
    return out


SETOPS = {"union": union, "intersection": intersection, "difference": difference}


# -- the brute force ---------------------------------------------------------------------------

class _Evaluator:
    def __init__(self, model: Model):
        self.model = model
        self.nodes = {n.name: n for n in model.nodes}
        self.iterators = model.by_kind("iterator")
        self.conditions = model.by_kind("condition")
        # the iterators each node reads, directly or through derived variables
        self.ancestors = {}
        for n in model.nodes:
            anc = set()
            for d in n.deps:
                if d not in self.nodes:
                    raise ValueError(f"model node {n.name} reads unknown {d}")
                if self.nodes[d].kind == "iterator":
                    anc.add(d)
                anc |= self.ancestors[d]
            self.ancestors[n.name] = anc
        order = [it.name for it in self.iterators]
        self.anc_list = {n.name: [a for a in order if a in self.ancestors[n.name]] for n in model.nodes}
        self.memo = {}

    def value(self, env, name):
        """The value of a derived variable (computed once per environment)."""
        if name in env:
            return env[name]
        node = self.nodes[name]
        for d in node.deps:
            if d not in env:
                self.value(env, d)
        try:
            env[name] = node.fn(env)
        except OracleError:
            raise
        except Exception as exc:  # noqa: BLE001 - the model's own error, e.g. ZeroDivisionError
            raise OracleError(f"{node.name}: {type(exc).__name__}: {exc}", exc) from None
        return env[name]

    def iterator_values(self, env, it):
        key = (it.name,) + tuple(env[a] for a in self.anc_list[it.name])
        vals = self.memo.get(key)
        if vals is None:
            local = {a: env[a] for a in self.anc_list[it.name]}
            for d in it.deps:
                self.value(local, d)
            try:
                vals = values_of(it.fn(local))
            except OracleError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise OracleError(f"{it.name}: {type(exc).__name__}: {exc}", exc) from None
            self.memo[key] = vals
        return vals

    def supersets(self):
        sup = {}
        for it in self.iterators:
            seen = {}
            anc = self.anc_list[it.name]
            for combo in itertools.product(*(sup[a] for a in anc)):
                env = dict(zip(anc, combo))
                for v in self.iterator_values(env, it):
                    seen.setdefault(v, None)
            sup[it.name] = list(seen)
        return sup


def supersets(model: Model) -> dict:
    """name -> the iterator's superset (its values over the product of its dependencies' supersets)."""
    return _Evaluator(model).supersets()


def brute_force(model: Model, limit: int | None = None, stats: dict | None = None) -> Counter:
    """The surviving configurations of ``model``: a Counter of row tuples in column order.

    Raises :class:`TooLarge` when the product of the supersets exceeds ``limit`` and
    :class:`OracleError` when the model raises on some configuration. ``stats``, when given,
    receives 'product' and, per condition name, how many valid configurations it rejects."""
    ev = _Evaluator(model)
    sup = ev.supersets()
    names = [it.name for it in ev.iterators]
    size = 1
    for n in names:
        size *= len(sup[n])
    if stats is not None:
        stats["product"] = size
        stats["supersets"] = sup
        stats.update({c.name: 0 for c in ev.conditions})
    if limit is not None and size > limit:
        raise TooLarge(size)
    counter = Counter()
    for combo in itertools.product(*(sup[n] for n in names)):
        env = dict(zip(names, combo))
        mult = 1
        for it in ev.iterators:
            mult *= ev.iterator_values(env, it).count(env[it.name])
            if not mult:
                break
        if not mult:
            continue
        rejected = False
        for cond in ev.conditions:
            for d in cond.deps:
                ev.value(env, d)
            try:
                hit = bool(cond.fn(env))
            except Exception as exc:  # noqa: BLE001
                raise OracleError(f"{cond.name}: {type(exc).__name__}: {exc}", exc) from None
            if hit:
                rejected = True
                if stats is None:
                    break
                stats[cond.name] += mult
        if not rejected:
            counter[tuple(env[c] for c in model.columns)] += mult
    return counter


def rows_counter(array, columns) -> Counter:
    """A Counter of row tuples of a NumPy structured array (beast's output)."""
    cols = [array[c].tolist() for c in columns]
    return Counter(zip(*cols)) if cols else Counter()
