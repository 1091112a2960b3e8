"""Every backend against a brute-force oracle (tests/support/oracle.py) that does not use beast's compiler.

Random spaces (tests/support/spacegen.py) come with an independent plain-Python model; fixed spaces below
have their expected configurations written out in plain Python. Backends that beast does not have
yet are skipped, and start running as soon as ``beast.runtime.get_backend(name)`` finds them.

Division by zero is an error when the enumeration evaluates it, which follows beast's hoisting
plan, not the oracle's per-configuration order: when the oracle or a backend raises, the example
is not compared with the oracle, but every backend must still give exactly the same result: the
same rows in the same order, or the same error (message, file, line, configuration).
"""
from __future__ import annotations

import os
import re
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, assume, event, given, note, settings
from hypothesis import strategies as st

import beast
from conftest import available_backends, rows, write_space
from oracle import OracleError, TooLarge, brute_force
from spacegen import spaces

LIMIT = 20000          # largest product of supersets the oracle walks
# BEAST_ORACLE_SHRINK=0: report a failing random space as found, without shrinking it (shrinking
# runs every backend on hundreds of variants: minutes)
SHRINK = os.environ.get("BEAST_ORACLE_SHRINK", "1") != "0"

AVAILABLE = available_backends()
# tuned so that this file runs in well under a minute on 2 cores (with every backend, each example
# costs a C build); override with the variable
EXAMPLES = int(os.environ.get("BEAST_ORACLE_EXAMPLES") or 0) or {1: 150, 2: 100, 3: 50}[len(AVAILABLE)]


def outcome(space, backend):
    """('ok', rows in enumeration order) or ('error', message, file, line, configuration).
    count() must agree with enumerate(): the same number, or the same error (its configuration
    may stop short: count() need not bind the loops it only counts)."""
    try:
        arr = space.enumerate(backend=backend)
    except beast.EvaluationError as err:
        result = ("error", err.message, err.filename, err.lineno, dict(err.config))
        try:
            n = space.count(backend=backend)
        except beast.EvaluationError as err2:
            assert (err2.message, err2.filename, err2.lineno) == result[1:4], \
                f"{backend}: count() and enumerate() fail differently"
            assert err2.config.items() <= err.config.items(), f"{backend}: count() and enumerate() configurations"
        else:
            pytest.fail(f"{backend}: enumerate() raised {err.message!r} but count() returned {n}")
        return result
    assert arr.dtype.names == space.iterators, backend
    assert space.count(backend=backend) == len(arr), f"{backend}: count() != len(enumerate())"
    return ("ok", rows(arr))


def assert_backends_agree(outcomes):
    first = next(iter(outcomes))
    for name, got in outcomes.items():
        assert got == outcomes[first], f"backend {name!r} disagrees with {first!r}"


# ---------------------------------------------------------------------------------------------
# Random spaces

@settings(max_examples=EXAMPLES, deadline=None, report_multiple_bugs=False,
          phases=tuple(Phase) if SHRINK else (Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(spaces(), st.sampled_from([False, False, False, True]))
def test_random_spaces_match_oracle_and_backends_agree(g, keep_empty):
    note(g.numbered())
    note(f"settings: {g.settings}")
    try:
        expected = brute_force(g.model, limit=LIMIT)
    except TooLarge:
        assume(False)
    except OracleError as err:
        expected = err
    # most random spaces with no survivor at all are skipped before the (costly) backends run
    assume(expected or keep_empty)
    with tempfile.TemporaryDirectory(prefix="beast-oracle-") as tmp:
        path = write_space(tmp, g.source, "generated.py")
        space = beast.load(path, settings=g.settings)
        assert space.iterators == g.columns, "output columns are the iterators in declaration order"
        outcomes = {b: outcome(space, b) for b in AVAILABLE}
    assert_backends_agree(outcomes)
    result = outcomes[AVAILABLE[0]]
    if result[0] == "error":
        event("a backend raised: not compared with the oracle")
        message, filename, lineno, config = result[1:]
        note(f"error: {message} at line {lineno}, {config}")
        assert re.match(r"(division|modulo) by zero", message), message
        assert filename == path and lineno is not None
        line = g.source.splitlines()[lineno - 1]
        assert "/" in line or "%" in line, f"line {lineno} divides nothing: {line!r}"
        assert set(config) <= set(g.columns)
        return
    if isinstance(expected, OracleError):
        event("the oracle raised: not compared with the oracle")
        return
    event("compared with the oracle" + (" (empty)" if not expected else ""))
    assert Counter(result[1]) == expected


# ---------------------------------------------------------------------------------------------
# Fixed spaces, one feature each, with the expected configurations in plain Python.
# ``ordered``: the enumeration order is fixed by the language (one iterator, or a chain where
# each iterator depends on the one before), so the rows are compared in order.

R = range   # plain Python inside the expected values

FIXED = {
    "range_negative_step_chain": (
        """
        from beast import *
        a = range(4)
        b = range(a, 0, -1)
        """, {}, True,
        [(a, b) for a in R(4) for b in R(a, 0, -1)]),
    "range_one_two_three_arguments_and_empty_ranges": (
        """
        from beast import *
        a = range(3)
        b = range(a, 2)
        c = range(5, a, -2)
        d = range(a - 1)
        """, {}, False,
        [(a, b, c, d) for a in R(3) for b in R(a, 2) for c in R(5, a, -2) for d in R(a - 1)]),
    "list_with_duplicates_and_bools": (
        """
        from beast import *
        a = iterator([3, 1, 3, True, False, -2])
        """, {}, True,
        [(3,), (1,), (3,), (1,), (0,), (-2,)]),
    "scalar_iterators": (
        """
        from beast import *
        a = range(-2, 3)
        b = iterator(a * a - 1)
        c = iterator(7)
        d = iterator(a > 0)
        """, {}, False,
        [(a, a * a - 1, 7, int(a > 0)) for a in R(-2, 3)]),
    "union_each_value_once_in_order": (
        """
        from beast import *
        u = union(iterator([3, 1, 3, 2]), [2, 5, 1, 6])
        """, {}, True, [(3,), (1,), (2,), (5,), (6,)]),
    "intersection_in_first_operands_order": (
        """
        from beast import *
        u = intersection([5, 1, 2, 1, 7], range(0, 6))
        """, {}, True, [(5,), (1,), (2,)]),
    "difference_in_first_operands_order": (
        """
        from beast import *
        u = difference(range(6), iterator([1, 4, 4]))
        """, {}, True, [(0,), (2,), (3,), (5,)]),
    "set_operations_of_dependent_operands": (
        """
        from beast import *
        a = range(1, 4)
        u = union(range(a), iterator(a + 5))
        v = intersection(range(a, a + 3), range(2, 5))
        w = difference(range(0, a + 2), iterator(a * 1))   # iterator(a) would be a itself
        """, {}, False,
        [(a, u, v, w) for a in R(1, 4) for u in list(R(a)) + [a + 5]
         for v in [x for x in R(a, a + 3) if x in R(2, 5)]
         for w in [x for x in R(0, a + 2) if x != a]]),
    "set_operation_of_a_named_iterator_means_its_values": (
        """
        from beast import *
        a = range(1, 3)
        b = range(a, 4)
        u = union(b, [9])
        """, {}, False,
        [(a, b, u) for a in R(1, 3) for b in R(a, 4) for u in list(R(a, 4)) + [9]]),
    "deferred_if_elif_else_scalar_list_range": (
        """
        from beast import *
        @iterator
        def inner(outer):
            return range(outer)
        @iterator
        def outer():
            if shape == "range":
                return range(4)
            elif shape == "list":
                return [3, 1, 3]
            else:
                return 2
        shape = setting("shape", "range", choices=["range", "list", "scalar"])
        """, {}, True,
        [(i, o) for o in R(4) for i in R(o)]),
    "deferred_list_shape": (
        "@deferred_if_elif_else_scalar_list_range", {"shape": "list"}, True,
        [(i, o) for o in [3, 1, 3] for i in R(o)]),
    "deferred_scalar_shape": (
        "@deferred_if_elif_else_scalar_list_range", {"shape": "scalar"}, True,
        [(i, 2) for i in R(2)]),
    "deferred_local_variable_and_free_name": (
        """
        from beast import *
        vec = iterator([1, 2])
        blk = range(1, 5)
        @iterator
        def dim(blk):
            x = blk // vec          # vec: a free name, still a dependency
            if x == 0:
                x = 1
            return range(x, 0, -1)
        """, {}, False,
        [(v, b, d) for v in [1, 2] for b in R(1, 5) for d in R(max(b // v, 1), 0, -1)]),
    "deferred_list_comprehension": (
        """
        from beast import *
        a = range(4)
        @iterator
        def sq(a):
            return [x * x for x in range(a) if x != 1]
        """, {}, True,
        [(a, s) for a in R(4) for s in [x * x for x in R(a) if x != 1]]),
    "closure_with_list_state_and_for_break": (
        """
        from beast import *
        LIMIT = 30
        @iterator
        def squarefree():
            found = []
            n = 1
            while n <= LIMIT:
                ok = True
                for p in [4, 9, 25]:
                    if n % p == 0:
                        ok = False
                        break
                if ok:
                    found.append(n)
                    yield n
                n += 1
        """, {}, True,
        [(n,) for n in R(1, 31) if n % 4 and n % 9 and n % 25]),
    "closure_with_argument_and_tuple_assignment": (
        """
        from beast import *
        base = range(1, 4)
        @iterator
        def walk(base):
            a, b = base, base + 1
            while a < 12:
                yield a
                a, b = b, a + b
        """, {}, True,
        [(1, 1), (1, 2), (1, 3), (1, 5), (1, 8), (2, 2), (2, 3), (2, 5), (2, 8), (3, 3), (3, 4),
         (3, 7), (3, 11)]),
    "derived_integer_arithmetic_python_semantics": (
        """
        from beast import *
        a = range(-4, 5)
        b = iterator([-3, -2, 2, 3])
        fd = iterator(a // b)
        md = iterator(a % b)
        pw = iterator(b ** 2 - a ** 3)
        mm = iterator(min(a, b, 1) + max(a, -b) + abs(a - 2 * b))
        sl = iterator(select(a > b, a - b, -(b - a) * 3))
        ng = iterator(-a // 3 + -(a % -3))
        """, {}, False,
        [(a, b, a // b, a % b, b ** 2 - a ** 3, min(a, b, 1) + max(a, -b) + abs(a - 2 * b),
          (a - b) if a > b else -(b - a) * 3, -a // 3 + -(a % -3))
         for a in R(-4, 5) for b in [-3, -2, 2, 3]]),
    "derived_float_arithmetic_python_semantics": (
        """
        from beast import *
        a = range(-4, 5)
        b = iterator([-3, -2, 2, 3])
        td = a / b
        ff = (a / 2) // b
        fm = (a / 2) % b
        k1 = range(-20, 21)
        k2 = range(-20, 21)
        k3 = range(-20, 21)
        c1 = condition(abs(td * 6 - k1) > 0.001)
        c2 = condition(ff != k2)
        c3 = condition(fm * 2 != k3)
        """, {}, False,
        [(a, b, round(a / b * 6), int((a / 2) // b), int((a / 2) % b * 2))
         for a in R(-4, 5) for b in [-3, -2, 2, 3]]),
    "float_derived_compared_with_ints": (
        """
        from beast import *
        a = range(1, 9)
        half = a / 2
        third = a / 3
        reject = condition((half == 2) | (third > 2.0) | (half + third == 2.5))
        """, {}, True,
        [(a,) for a in R(1, 9) if not (a / 2 == 2 or a / 3 > 2.0 or a / 2 + a / 3 == 2.5)]),
    "settings_and_module_level_if_rebinding": (
        """
        from beast import *
        mode = setting("mode", "small", choices=["small", "big"])
        n = setting("n", 3)
        a = range(1, n + 1)
        w = a * 2
        c1 = condition(w > 4)        # the binding of w at this line
        if mode == "big":
            w = w * 10
        v = iterator(w)              # the rebinding
        @condition
        def c2(w):                   # a function reads the final binding
            return w == 40
        """, {}, False,
        [(a, 2 * a) for a in R(1, 4) if 2 * a <= 4]),
    "settings_big": (
        "@settings_and_module_level_if_rebinding", {"mode": "big", "n": "4"}, False,
        [(a, 20 * a) for a in R(1, 5) if 2 * a <= 4 and 20 * a != 40]),
    "expression_and_function_conditions": (
        """
        from beast import *
        a = range(6)
        b = range(6)
        c1 = condition((a > 3) & ~(b == 0) | (a == b))
        condition(a + b == 7, kind="soft")
        @condition(kind="correctness")
        def c3(a, b):
            return 0 < a < b <= 4 and not (a % 2 == 0) or b == 5 and a == 0
        @condition
        def c4(a):
            if a == 1:
                return b == 3       # b: a free name
            return False
        """, {}, False,
        [(a, b) for a in R(6) for b in R(6)
         if not ((a > 3 and b != 0) or a == b)
         and not a + b == 7
         and not ((0 < a < b <= 4 and not a % 2 == 0) or (b == 5 and a == 0))
         and not (a == 1 and b == 3)]),
    "short_circuit_guards_a_division": (
        """
        from beast import *
        a = range(-2, 3)
        b = range(-2, 3)
        c1 = condition((b != 0) & (a // b > 0))
        @condition
        def c2(a, b):
            return b == 0 or a % b == 1
        """, {}, False,
        [(a, b) for a in R(-2, 3) for b in R(-2, 3)
         if not (b != 0 and a // b > 0) and not (b == 0 or a % b == 1)]),
    "constant_condition_true_empties_the_space": (
        """
        from beast import *
        mode = setting("mode", "x", choices=["x", "y"])
        a = range(3)
        condition(mode == "x")
        """, {}, True, []),
    "constant_condition_false_keeps_everything": (
        "@constant_condition_true_empties_the_space", {"mode": "y"}, True, [(0,), (1,), (2,)]),
    "no_iterator_survives_everything_rejected_early": (
        """
        from beast import *
        a = range(50)
        b = range(50)
        c = range(50)
        condition(a >= 0)
        """, {}, False, []),
    "minmax_of_many_and_constants": (
        """
        from beast import *
        a = range(4)
        b = range(4)
        m = iterator(min(a, b, 2) * 10 + max(3 - a, b, 1))
        """, {}, False,
        [(a, b, min(a, b, 2) * 10 + max(3 - a, b, 1)) for a in R(4) for b in R(4)]),
}


def _fixed(name):
    text, settings_, ordered, expected = FIXED[name]
    if text.startswith("@"):
        text = FIXED[text[1:]][0]
    return text, settings_, ordered, expected


@pytest.mark.parametrize("name", list(FIXED))
def test_fixed_space(name, backend, space_file):
    text, settings_, ordered, expected = _fixed(name)
    space = beast.load(space_file(text), settings=settings_)
    arr = space.enumerate(backend=backend)
    got = rows(arr)
    if ordered:
        assert got == expected
    else:
        assert Counter(got) == Counter(expected)
    assert space.count(backend=backend) == len(expected)


@pytest.mark.parametrize("name", list(FIXED))
def test_fixed_space_matches_python_backend_in_order_and_in_chunks(name, backend, space_file):
    text, settings_, _, _ = _fixed(name)
    space = beast.load(space_file(text), settings=settings_)
    reference = rows(space.enumerate(backend="python"))
    assert rows(space.enumerate(backend=backend)) == reference
    chunks = list(space.iterate(chunk_size=3, backend=backend))
    assert all(0 < len(c) <= 3 for c in chunks)
    assert all(c.dtype.names == space.iterators for c in chunks)
    assert [r for c in chunks for r in rows(c)] == reference


def test_enumerate_of_an_empty_space_has_the_columns(backend, space_file):
    space = beast.load(space_file("""
        from beast import *
        a = range(3)
        b = range(a, a)
    """))
    arr = space.enumerate(backend=backend)
    assert arr.shape == (0,) and arr.dtype.names == ("a", "b")
    assert list(space.iterate(backend=backend)) == [] or all(len(c) == 0 for c in space.iterate(backend=backend))
    assert space.count(backend=backend) == 0


def test_oracle_agrees_with_the_fixed_expectations():
    """The oracle itself, on a hand-made model of one fixed space (so it is tested too)."""
    from oracle import Model, ONode
    model = Model([
        ONode("a", "iterator", (), lambda env: range(4)),
        ONode("b", "iterator", ("a",), lambda env: range(env["a"], 0, -1)),
        ONode("dup", "iterator", (), lambda env: [7, 7]),
        ONode("c", "condition", ("a", "b"), lambda env: env["a"] == env["b"] == 2),
    ], ("a", "b", "dup"))
    got = brute_force(model)
    assert got == Counter({(a, b, 7): 2 for a in R(4) for b in R(a, 0, -1) if not a == b == 2})
