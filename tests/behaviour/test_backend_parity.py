"""Two classes of backend disagreement and their error locations, in every backend (C with 1 and 3 threads),
in enumerate and in count, against plain Python's outcome written out by hand.

- Class 3: a closure iterator that raises after yielding, read by a function C tabulates (or
  tabulated itself): the tabulation sees the values yielded before the error, and every backend
  raises the closure's own error, at its line and configuration.
- Class 4: a count raises exactly what enumerate raises (message, line, column, configuration),
  values near and past 2**63 included.
- An integer constant past 64 bits is refused at its literal, before anything runs, in every
  backend alike (one message, the caret under the literal, no configuration), whether it is a
  range's bound, an iterator's value, a set operation's operand or a constant in a body the front
  end inlines into the loop nest.
"""
from __future__ import annotations

import pytest

import beast
from conftest import available_backends, rows, write_space

AVAILABLE = available_backends()
RUNS = [(b, None) for b in AVAILABLE if b != "c"] + ([("c", 1), ("c", 3)] if "c" in AVAILABLE else [])
WIDE = "the integer {} does not fit in 64 bits: beast's integers run from -2**63 to 2**63-1"


def _err(message, line, caret, config=None):
    return ("error", message, line, caret, config or {})


# name -> (space text, plain Python's outcome: ("rows", rows) or ("error", message, line, the text
# under the caret, configuration), whether values past 2**53 make it Lua's documented overflow)
CASES = {
    # -- class 3
    "closure_raises_after_yielding_read_by_a_table": ("""
        from beast import *
        a = range(0, 3)
        @iterator
        def b(a):
            yield a
            yield 1 // 0
        @condition
        def c(b):
            return str(b) == "1"
        """, _err("division by zero", 6, "1 // 0", {"a": 0}), False),
    "closure_raises_at_one_value_after_rows": ("""
        from beast import *
        a = range(0, 4)
        @iterator
        def b(a):
            yield a
            yield a + 1
            if a == 2:
                yield 1 // (a - 2)
        @condition
        def c(b):
            return str(b) == "1"
        """, _err("division by zero", 8, "1 // (a - 2)", {"a": 2}), False),
    "tabulated_closure_raises_after_yielding": ("""
        from beast import *
        a = range(0, 3)
        @iterator
        def b(a):
            for ch in str(a + 10):
                yield int(ch)
            if a == 1:
                yield [1, 2][a + 4]
        @condition
        def c(a, b):
            return str(a + b).endswith("2")
        """, ("error", "IndexError: list index out of range", 8, "[1, 2][a + 4]", {"a": 1}), False),
    "closure_raises_only_where_a_condition_rejects": ("""
        from beast import *
        a = range(0, 4)
        low = condition(a > 1)
        @iterator
        def b(a):
            yield a
            if a == 2:
                yield 1 // 0
            yield a + 3
        @condition
        def c(b):
            return str(b) == "3"
        """, ("rows", [(0, 0), (1, 1), (1, 4)]), False),
    # -- class 4
    "list_value_past_2_63": ("""
        from beast import *
        a = iterator([1, 2**63 + 5, 3])
        """, _err(WIDE.format(2**63 + 5), 2, "2**63 + 5"), False),
    "module_list_past_2_63": ("""
        from beast import *
        VALS = [1, -2**63 - 1]
        b = range(2)
        a = iterator(VALS)
        """, _err(WIDE.format(-2**63 - 1), 2, "-2**63 - 1"), False),
    "set_operation_past_2_63": ("""
        from beast import *
        b = range(3)
        a = iterator(union(range(b), [2**63]))
        """, _err(WIDE.format(2**63), 3, "2**63"), False),
    "values_at_the_edges_of_64_bits": ("""
        from beast import *
        a = iterator([1, 2**63 - 1, -2**63])
        b = range(2)
        c = condition(b > a)
        """, ("rows", [(1, 0), (1, 1), (2**63 - 1, 0), (2**63 - 1, 1)]), True),
    "closure_yields_past_2_63": ("""
        from beast import *
        a = range(2)
        @iterator
        def b(a):
            yield 1
            yield 2**62 * 2 + a
            yield 3
        """, _err("integer overflow", 6, "2**62 * 2", {"a": 0}), False),
    "deferred_returns_past_2_63_from_a_table": ("""
        from beast import *
        a = range(2)
        @iterator
        def b(a):
            return [1, int("9" * 20), 3]
        """, _err("integer overflow", 5, 'int("9" * 20)', {"a": 0}), False),
    "deferred_value_past_2_63_from_the_library": ("""
        from beast import *
        import math
        a = range(2)
        @iterator
        def b(a):
            return [1, math.comb(100, 50 + a)]
        """, _err("integer overflow in iterator 'b'", 5, "b", {"a": 0}), False),
    "closure_value_past_2_63_a_condition_would_reject": ("""
        from beast import *
        import math
        a = range(3)
        @iterator
        def b(a):
            yield 1
            if a == 1:
                yield math.comb(100, 50)
            yield 2
        c = condition(b > 5)
        """, _err("integer overflow in iterator 'b'", 5, "b", {"a": 1}), False),
    # -- an integer past 64 bits in a body that stays a function: the operation that leaves 64
    # bits fails when it runs (constant subexpressions that fit are folded first, as in C)
    "body_constant_past_2_63_in_a_list": ("""
        from beast import *
        a = range(2)
        @iterator
        def b(a):
            if a > 0:
                return [1, 2**63 + 5]
            v = [a, 7]
            return v
        """, _err("integer overflow", 6, "2**63", {"a": 1}), False),
    "body_constant_past_2_63_yielded": ("""
        from beast import *
        a = range(2)
        @iterator
        def b(a):
            if a > 0:
                yield (2**64 - 5) // 2 + 3 * 2**63
            yield a
        """, _err("integer overflow", 6, "2**63", {"a": 1}), False),
    "body_constant_at_2_63_minus_1": ("""
        from beast import *
        a = range(2)
        @iterator
        def b(a):
            if a > 0:
                yield 2**63 - 1
            yield a
        """, ("rows", [(0, 0), (1, 2**63 - 1), (1, 1)]), True),
    # -- where an integer past 64 bits is reported
    "range_bound_past_2_63": ("""
        from beast import *
        a = range(1, 5)
        b = range(0, 2**64)
        """, _err(WIDE.format(2**64), 3, "2**64"), False),
    "iterator_function_bound_past_2_63": ("""
        from beast import *
        x = range(1, 3)
        @iterator
        def y(x):
            return range(x, 10**30)
        """, _err(WIDE.format(10**30), 5, "10**30"), False),
    "iterator_function_local_past_2_63": ("""
        from beast import *
        x = range(1, 3)
        @iterator
        def y(x):
            n = 10**30
            return range(x, n)
        """, _err(WIDE.format(10**30), 5, "10**30"), False),
    "unreached_choice_past_2_63": ("""
        from beast import *
        x = range(1, 3)
        d = select(x > 5, 2**64, x)
        c = condition(d > 1)
        """, _err(WIDE.format(2**64), 3, "2**64"), False),
}


# Lua says its own 53-bit overflow for these 
LUA_PENDING = ("deferred_value_past_2_63_from_the_library", "closure_value_past_2_63_a_condition_would_reject")


@pytest.fixture(scope="module")
def spaces(tmp_path_factory):
    """Each case's space, loaded once (its enumerators are built once per backend)."""
    root = tmp_path_factory.mktemp("parity")
    out = {}
    for name, (text, _, _) in CASES.items():
        path = write_space(root, text, f"{name}.py")
        out[name] = (path, beast.load(path))
    return out


def _outcome(space, path, backend, threads, mode):
    try:
        if mode == "count":
            return ("count", space.count(backend=backend, threads=threads))
        return ("rows", rows(space.enumerate(backend=backend, threads=threads)))
    except beast.BeastError as err:
        assert err.filename == path, (err.filename, err.message)
        assert err.col is not None and err.end_col is not None, f"no caret: {err}"
        line = open(path, encoding="utf-8").read().splitlines()[err.lineno - 1]
        caret = line.encode()[err.col:err.end_col].decode()
        return ("error", err.message, err.lineno, caret, dict(getattr(err, "config", {})))


@pytest.mark.parametrize("mode", ["enumerate", "count"])
@pytest.mark.parametrize("backend, threads", RUNS, ids=[f"{b}-{t}" if t else b for b, t in RUNS])
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_backend_gives_plain_pythons_outcome(spaces, name, backend, threads, mode):
    _, expected, past_53 = CASES[name]
    if backend == "lua" and past_53:
        pytest.skip("values past 2**53: the Lua backend's documented overflow")
    path, space = spaces[name]
    got = _outcome(space, path, backend, threads, mode)
    if expected[0] == "rows":
        want = ("count", len(expected[1])) if mode == "count" else expected
    else:
        want = expected
    if backend == "lua" and got != want and name in LUA_PENDING:
        pytest.xfail("a value past 2**63 from a user function: the Lua backend's")
    assert got == want
