"""Where beast departs from plain Python, every backend departs the same way: a complex
power is one error with one caret; C tabulates over the values its nest can hold; a condition's
result that is not a number is read for its truth; what C still refuses is located."""
from __future__ import annotations

import os

import pytest

import beast
from beast.errors import BeastError, EvaluationError
from conftest import available_backends, rows, run_beast, write_space

BACKENDS = available_backends()
COMPLEX = "a negative number raised to a fractional power (the result is complex)"

COMPLEX_POWERS = {   # text, (line, col) of the caret, message suffix
    "derived": ("""
        from beast import *
        a = range(0, 6)
        f = (a - 3) ** 0.5
        c = condition(f == 1)
        """, (3, 4), " in derived variable 'f'"),
    "inlined_condition": ("""
        from beast import *
        a = range(0, 6)
        @condition
        def c(a):
            f = (a - 3) ** 0.5
            return f > 1
        """, (5, 8), " in condition 'c'"),
    "loop_in_function": ("""
        from beast import *
        a = range(0, 6)
        @condition
        def c(a):
            t = 0.0
            for i in range(2):
                t += (a - 3 + i) ** 0.5
            return t == 1
        """, (7, 13), ""),
    "augmented_power": ("""
        from beast import *
        a = range(0, 6)
        @condition
        def c(a):
            x = a - 3.0
            if x > -10:
                x **= 1.5
            return x == 1
        """, (7, 8), ""),
    "pow_builtin": ("""
        from beast import *
        a = range(0, 6)
        @condition
        def c(a):
            return pow(a - 3, 0.5) == 1
        """, (5, 11), ""),
    "dead_local_in_iterator": ("""
        from beast import *
        a = range(0, 6)
        @iterator
        def b(a):
            v = (a - 2) ** 0.5
            if v == v:
                return range(2)
            return range(1)
        """, (5, 8), ""),
    "fractional_exponent_of_iterators": ("""
        from beast import *
        a = range(-3, 3)
        b = range(0, 3)
        f = a ** (b / 2)
        c = condition(f > 1)
        """, (4, 4), " in derived variable 'f'"),
}


@pytest.mark.parametrize("name", list(COMPLEX_POWERS))
def test_a_complex_power_is_the_same_error_in_every_backend(name, tmp_path):
    text, (line, col), suffix = COMPLEX_POWERS[name]
    space = beast.load(write_space(tmp_path, text, f"{name}.py"))
    seen = []
    for backend in BACKENDS:
        for threads in ((None, 3) if backend == "c" else (None,)):
            with pytest.raises(EvaluationError) as info:
                space.enumerate(backend=backend, threads=threads)
            err = info.value
            seen.append((err.message, err.lineno, err.col, err.end_col, err.config))
            assert err.message == COMPLEX + suffix, backend
            assert (err.lineno, err.col) == (line, col), backend
    assert len(set(map(repr, seen))) == 1, seen


def test_a_complex_power_only_at_rejected_configurations_is_no_error(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        a = range(0, 6)
        ok = condition(a < 3)
        f = (a - 3) ** 0.5
        c = condition(f == 1)
        """, "rejected.py")
    for backend in BACKENDS:
        assert rows(beast.load(path).enumerate(backend=backend)) == [(3,), (5,)], backend


TABULATED = {   # a function C cannot translate (round) of a value C cannot hold at rejected a
    "complex_at_rejected": ("""
        from beast import *
        a = range(0, 6)
        low = condition(a < 3)
        d = (a - 3) ** 0.5
        @condition
        def c(d):
            return round(d, 1) == 1.4
        """, [(3,), (4,)]),
    "past_64_bits_at_rejected": ("""
        from beast import *
        a = range(0, 6)
        low = condition(a < 1)
        d = 2 ** (64 - 64 * min(a, 1)) + a
        @condition
        def c(d):
            return round(d / 3, 1) == 1.0
        """, [(1,), (3,), (4,), (5,)]),
}


@pytest.mark.parametrize("name", list(TABULATED))
def test_c_tabulates_over_the_values_its_nest_can_hold(name, tmp_path):
    text, expected = TABULATED[name]
    path = write_space(tmp_path, text, f"{name}.py")
    for backend in BACKENDS:
        assert rows(beast.load(path).enumerate(backend=backend)) == expected, backend


NON_NUMBERS = {
    "string_choice": "return 'x' if a > 0 else ''",
    "string_if": "if a > 0:\n        return 'x'\n    return ''",
    "string_local": "s = 'x' if a > 0 else ''\n    return s",
    "string_compared": "s = 'x' if a > 0 else 'y'\n    return s == 'x'",
    "list": "return [a] if a > 0 else []",
    "none": "return None if a <= 0 else 1",
    "and_string": "return a > 0 and 'x'",
}


@pytest.mark.parametrize("name", list(NON_NUMBERS))
def test_a_condition_may_return_anything_python_tests_for_truth(name, tmp_path):
    body = NON_NUMBERS[name]
    path = write_space(tmp_path, f"from beast import *\na = range(-1, 2)\n\n@condition\ndef c(a):\n    {body}\n",
                       f"{name}.py")
    for backend in BACKENDS:
        assert rows(beast.load(path).enumerate(backend=backend)) == [(-1,), (0,)], backend


@pytest.mark.skipif("c" not in BACKENDS, reason="no C compiler")
def test_what_the_c_nest_refuses_is_located(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        a = range(-1, 2)
        s = select(a > 0, 'x', 'y')
        c = condition(s == 'x')
        """, "strings.py")
    space = beast.load(path)
    with pytest.raises(BeastError) as info:
        space.count(backend="c")
    err = info.value
    assert (err.filename, err.lineno, err.col) == (path, 3, 4)
    assert "^^^" in str(err)
    assert rows(space.enumerate(backend="auto")) == [(-1,), (0,)]


def test_the_error_comes_before_any_output_file(tmp_path):
    path = write_space(tmp_path, COMPLEX_POWERS["derived"][0], "space.py")
    out = tmp_path / "rows.csv"
    for backend in BACKENDS:
        proc = run_beast("enumerate", path, "-o", str(out), "--backend", backend)
        assert proc.returncode != 0 and COMPLEX in proc.stderr, backend
        assert not out.exists() and os.listdir(tmp_path) == ["space.py"], backend


WIDE = {   # an integer past 64 bits midway, not in the result: (text, line, col) of the error
    "derived": ("from beast import *\na = range(0, 6)\nd = a * 2 ** 62 // 8\nc = condition(d > 2 ** 60)\n",
                3, 4),
    "inlined_condition": ("from beast import *\na = range(0, 6)\n\n@condition\ndef c(a):\n"
                          "    x = a * 2 ** 62\n    return x // 8 > 2 ** 60\n", 6, 8),
    "loop_in_function": ("from beast import *\na = range(0, 6)\n\n@condition\ndef c(a):\n    t = 0\n"
                         "    for i in range(3):\n        t = t + a * 2 ** 61\n    return t > 0\n", 8, 12),
    "monotone_condition": ("from beast import *\na = range(0, 3)\n\n@condition\ndef c(a):\n"
                           "    return a * 2 ** 62 // 8 > 2 ** 57\n", 6, 11),
}


@pytest.mark.parametrize("name", list(WIDE))
def test_an_integer_past_64_bits_midway_is_an_overflow_in_python_as_in_c(name, tmp_path):
    """Python's integers are unbounded; the Python backend checks every integer operation C
    checks, so both stop at the same configuration. A loop that a monotone condition would leave
    early is not left early where a later value may overflow. Lua, exact within 2**53, reports
    its own overflow earlier."""
    text, line, col = WIDE[name]
    space = beast.load(write_space(tmp_path, text, f"{name}.py"))
    got = set()
    for backend in [b for b in BACKENDS if b != "lua"]:
        with pytest.raises(EvaluationError) as info:
            space.enumerate(backend=backend)
        err = info.value
        assert err.message.startswith("integer overflow") and err.hint.startswith("integers are 64-bit")
        got.add((err.message, err.lineno, err.col, repr(err.config)))
    assert len(got) == 1 and {(g[1], g[2]) for g in got} == {(line, col)} and "'a': 2" in next(iter(got))[3]
    if "lua" in BACKENDS:
        with pytest.raises(EvaluationError, match="integer overflow"):
            space.enumerate(backend="lua")


def test_a_constant_expression_is_folded_before_it_is_checked(tmp_path):
    """-2**63 is a constant in C, not an overflow of 2**63; a constant past 64 bits fails where it
    is reached, in every backend."""
    path = write_space(tmp_path, "from beast import *\na = range(0, 3)\n\n@condition\ndef c(a):\n"
                                 "    if a == 2:\n        return 2 ** 64 > a\n    return -2 ** 63 + a > 0\n", "fold.py")
    for backend in [b for b in BACKENDS if b != "lua"]:
        with pytest.raises(EvaluationError) as info:
            beast.load(path).enumerate(backend=backend)
        assert info.value.message.startswith("integer overflow") and info.value.config == {"a": 2}, backend
