"""``Space.contains``: exact membership without enumeration (beast.ir.prefix.member), checked
against the enumeration itself on every combination of the values the iterators take, plus
values no survivor has, in every backend; and on random spaces."""
from __future__ import annotations

import itertools
import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings

import beast
from conftest import ROOT, available_backends, write_space
from spacegen import spaces

AVAILABLE = available_backends()

SPACE = """
from beast import *

a = iterator(range(-2, 5))
b = iterator(range(a, 7, 2))
c = iterator([1, 2, 4, 8])
s = a * c

@iterator
def d(a, c):
    if a > 2:
        return [c, c + 1]
    return range(0, c)

@condition
def odd(a, b, d):
    return (a + b + d) % 3 == 0 or sum(x for x in range(d) if x % 2) > 6

big = condition(s > 20)
"""


def _membership_table(space, rows, extra, limit):
    """A table of configurations to test and whether each survives: every combination of the
    values the survivors ``rows`` take and of ``extra``, or ``limit`` of them drawn (value by
    value: the product is not built), then every survivor."""
    names = space.iterators
    survivors = {tuple(int(r[n]) for n in names) for r in rows}
    values = [sorted({int(r[n]) for r in rows} | set(extra)) for n in names]
    if math.prod(len(v) for v in values) <= limit:
        combos = list(itertools.product(*values))
    else:
        rng = np.random.default_rng(0)
        combos = [tuple(v[rng.integers(len(v))] for v in values) for _ in range(limit)]
    combos += sorted(survivors)
    table = np.zeros(len(combos), dtype=space.dtype)
    for j, n in enumerate(names):
        table[n] = [c[j] for c in combos]
    return table, np.array([c in survivors for c in combos])


def _check_against_enumeration(space, backend, extra=(-100, 99)):
    rows = space.enumerate()
    table, want = _membership_table(space, rows, extra, 20000)
    got = space.contains(table, backend=backend)
    assert got.dtype == bool and np.array_equal(got, want), backend
    assert want.any() and not want.all()      # the test means something
    return rows


@pytest.mark.parametrize("backend", AVAILABLE)
def test_contains_is_exact(tmp_path, backend):
    space = beast.load(write_space(tmp_path, SPACE))
    rows = _check_against_enumeration(space, backend)
    first = {n: int(rows[0][n]) for n in space.iterators}
    assert space.contains(first, backend=backend) is True
    assert first in space
    assert space.contains({**first, "a": 2.5}) is False          # not an integer: in no survivor
    assert space.contains({**first, "a": float(first["a"])}) is True
    assert space.contains([first, {**first, "c": 3}], backend=backend).tolist() == [True, False]


@pytest.mark.parametrize("name", ["kt_matmul.py", "dedispersion.py", "clblast_xgemm_direct.py"])
def test_contains_on_real_spaces(name):
    space = beast.load(os.path.join(ROOT, "spaces", "real", name))
    _check_against_enumeration(space, AVAILABLE[-1])


def test_contains_names_a_missing_iterator(tmp_path):
    space = beast.load(write_space(tmp_path, SPACE))
    with pytest.raises(beast.BeastError, match="no value for 'd'"):
        space.contains({"a": 0, "b": 0, "c": 1})


@settings(max_examples=int(os.environ.get("BEAST_CONTAINS_EXAMPLES") or 20), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(spaces())
def test_random_spaces_contain_exactly_their_survivors(g):
    """On random spaces (tests/support/spacegen.py): every combination of the values the survivors take,
    and of a few others (up to 3,000 of them), is a member exactly when enumeration yields it, in
    every backend (a space whose enumeration fails is not compared)."""
    note(g.numbered())
    with tempfile.TemporaryDirectory(prefix="beast-contains-") as tmp:
        space = beast.load(write_space(tmp, g.source, "generated.py"), settings=g.settings)
        try:
            if space.count(backend="lua" if "lua" in AVAILABLE else "c") > 20000:    # (random spaces can be large)
                return
            rows = space.enumerate(backend="python")
        except beast.EvaluationError:
            return
        assume(space.iterators)
        table, want = _membership_table(space, rows, (-1, 0, 1, 2, 5), 3000)
        for backend in AVAILABLE:
            assert np.array_equal(space.contains(table, backend=backend), want), backend
