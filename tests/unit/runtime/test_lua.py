"""The Lua backend (LuaJIT through lupa) against the Python backend: the same configurations in the
same order, the same count, the same errors (message, file, line, column, configuration), whether a
user function is translated to Lua or called back in Python."""
from __future__ import annotations

import itertools
import math
import os
import tempfile

import numpy as np
import pytest

pytest.importorskip("lupa")

import beast  # noqa: E402
from beast.codegen.lua import print_lua  # noqa: E402
from beast.lang.devices import resolve_device  # noqa: E402
from beast.runtime.lua import LuaEnumerator, render  # noqa: E402
from beast.runtime.python import PythonEnumerator  # noqa: E402
from conftest import write_space  # noqa: E402

SMALL = resolve_device("k40c").replace(max_threads_dim_x=32, max_threads_dim_y=32)


def error_key(err):
    return (type(err).__name__, err.message, err.filename, err.lineno, err.col, err.end_col,
            dict(getattr(err, "config", None) or {}), str(err))


def run_chunks(enum, chunk_size, limit=None):
    """(rows as lists of tuples per chunk, error key or None): what a consumer sees; with
    ``limit``, a consumer that stops after that many rows."""
    chunks, err, rows = [], None, 0
    try:
        gen = enum.chunks(chunk_size)
        for c in gen:
            assert c.dtype == enum.dtype and c.flags.c_contiguous
            chunks.append(c.tolist())
            rows += len(c)
            if limit is not None and rows >= limit:
                gen.close()
                break
    except beast.BeastError as exc:
        err = error_key(exc)
    return chunks, err


def run_count(enum):
    try:
        return enum.count()
    except beast.BeastError as exc:
        return error_key(exc)


def assert_same(space, chunk_sizes=(1, 7, 4096), fallback=True, prefix=None):
    """Lua (translated functions, and every function called in Python) == Python; chunks of one
    row on the first ``prefix`` rows only, when given (a chunk per row of a large space is many
    seconds of Python; the other sizes still resume at every loop depth of the whole space)."""
    py = PythonEnumerator(space.program)
    luas = [LuaEnumerator(space.program)]
    if fallback and space.program.funcs:
        luas.append(LuaEnumerator(space.program, force_python=tuple(space.program.funcs)))
    expected_count = run_count(py)
    for lua in luas:
        assert run_count(lua) == expected_count
        for size in chunk_sizes:
            limit = prefix if size == 1 else None
            assert run_chunks(lua, size, limit) == run_chunks(py, size, limit), f"chunk size {size}"
    return expected_count


# ---------------------------------------------------------------------------------------------
# The GEMM space of the paper, scaled down

@pytest.mark.parametrize("precision,arithmetic,trans_a,trans_b",
                         list(itertools.product(["single", "double"], ["real", "complex"], [0, 1], [0, 1])))
def test_gemm_matches_python(precision, arithmetic, trans_a, trans_b):
    space = beast.load("spaces/gemm.py", device=SMALL,
                       settings=dict(precision=precision, arithmetic=arithmetic, trans_a=trans_a,
                                     trans_b=trans_b))
    py = space.enumerate(backend="python")
    lua = space.enumerate(backend="lua")
    assert len(py) > 0
    assert lua.dtype == py.dtype
    assert np.array_equal(lua, py)
    assert space.count(backend="lua") == len(py)
    chunks = list(space.iterate(chunk_size=1000, backend="lua"))
    assert [len(c) for c in chunks[:-1]] == [1000] * (len(chunks) - 1)
    assert np.array_equal(np.concatenate(chunks), py)


def test_gemm_functions_run_in_lua():
    space = beast.load("spaces/gemm.py", device=SMALL)
    source = print_lua(space.program)
    assert source.fallbacks == {}
    assert "local function _b_count()" in source.text


# ---------------------------------------------------------------------------------------------
# Small spaces, one family of features each

FEATURES = """
from beast import *

N = 6
a = range(-3, N)
b = range(a, -4, -2)                  # negative step, empty for some a
e = range(a, a + 2 * (a % 2))         # empty when a is even
s = iterator(a * 2 + 1)               # scalar
t = iterator(a > 1)                   # a bool scalar counts 0/1
v = iterator([3, 1, 3, 2])            # duplicates kept
u = union([1, 2, 3], range(2, 6))
w = intersection(range(0, 10), [8, 2, 2, 5, 11])
x = difference(range(a, 5), [0, 1])


@iterator
def d(a):
    if a % 2 == 0:
        return range(a, 10, 3)
    elif a < 0:
        return [a, -a, a, True]
    return a + 1


@iterator
def primes(a):
    seen = []
    n = 2
    while n <= a + 8:
        if all(n % p for p in seen):
            seen.append(n)
            yield n
        n += 1


@iterator
def fib():
    k = n = 1
    while n <= 20:
        yield n
        n, k = n + k, n


@iterator
def mixed(a, d):
    out = union([d, a], intersection(range(-2, 3), [x * x for x in range(3)]))
    if len(out) > 3 and out[-1] in (0, 4):
        return sorted(out)
    return list(range(min(out), max(out) + 1, 2))


r = a / 3
q = a // -3
m = a % -3
fm = (a + 0.5) % -2
fq = (a - 0.5) // 2
g = select(a > 2, a * 2, a - 1.5)
p = (a + 4) ** 2 - 2 ** (a + 3)


@condition
def c1(a, b, d):
    t = a * b
    if t > 6:
        return True
    for i in range(3):
        if (t + i) % 4 == 0:
            return False
    return d > 7


c2 = condition((r > 0.7) & (q != -1) | (fm > 1.0))
c3 = condition(fq + m > 1)
c4 = condition(~(g < 5.5) & (p % 3 == 0))


@condition
def c5(x, primes, fib, mixed):
    if primes + fib > 12 and x < 3 or fib == 13:
        return 1
    total = 0
    for i in [mixed, x]:
        total += i if i > 0 else -i
    return total > 6 and not any(k == x for k in range(mixed, 3))
"""


def test_features_match_python(space_file):
    space = beast.load(space_file(FEATURES))
    assert not print_lua(space.program).fallbacks    # every function translated
    assert assert_same(space, chunk_sizes=(1, 5, 100000), prefix=30000) > 1000


SETTINGS_SPACE = """
from beast import *
kind = setting("kind", "a", choices=["a", "b"])
MAX = 40
SIZES = (1, 2, 4, 8)
n = range(1, 5)


@iterator
def unroll(n):
    # the closure iterator of docs/language.md: primes up to MAX // n, with state
    seen = []
    k = 2
    while k <= MAX // n:
        if all(k % p for p in seen):
            seen.append(k)
            yield k
        k += 1


@iterator
def size(n):
    if kind == "a":
        return SIZES
    out = []
    for s in SIZES:
        if s % n == 0:
            continue
        out.append(s * n)
        if len(out) == 2:
            break
    return out


@condition
def odd(unroll, size):
    return (unroll * size) % 3 == 1
"""


@pytest.mark.parametrize("kind", ["a", "b"])
def test_closure_and_deferred_functions(space_file, kind):
    space = beast.load(space_file(SETTINGS_SPACE), settings={"kind": kind})
    assert assert_same(space) > 10


def test_python_floor_division_and_modulo_signs(space_file):
    """// floors and % takes the divisor's sign, for ints (exact up to 2**53) and floats."""
    space = beast.load(space_file("""
        from beast import *
        a = iterator([-7, -6, -1, 0, 1, 5, 7, 2**53 - 1, -(2**53 - 1), 2**52 + 3])
        b = iterator([-4, -3, -1, 1, 2, 3, 7, 2**52 - 5])
        q = iterator(a // b)
        r = iterator(a % b)
        """, "ints.py"))
    got = space.enumerate(backend="lua").tolist()
    assert len(got) == 80
    assert all((q, r) == (a // b, a % b) for a, b, q, r in got)
    assert assert_same(space, chunk_sizes=(1000,)) == 80

    space = beast.load(space_file("""
        from beast import *
        a = iterator([-7, -6, -1, 0, 1, 5, 7])
        b = iterator([-4, -3, -1, 1, 2, 3, 7])
        fm = (a + 0.25) % (b / 4)
        fd = (a - 0.75) // (b * 0.5)
        ff = condition((fm * 16 + fd) % 3 < 1)


        @iterator
        def fq(a, b):
            x = (a + 0.25) // (b * 0.5)
            y = (a - 0.75) % (b / 4)
            return int(x * 4 + y * 16) // 1


        @iterator
        def t(a, b):
            return int(a / b * 1000) + min(a, b) - max(-a, b) + abs(b) ** 2 + (-a) ** 3
        """, "floats.py"))
    assert assert_same(space, chunk_sizes=(1000,)) > 10


FUNCTIONS = """
from beast import *
LIMITS = [3, 5, 8]
MODES = ("fast", "slow")
K = 4
kind = setting("kind", "fast", choices=["fast", "slow"])
a = range(-3, 5)
b = range(0, 4)


@iterator
def comp(a, b):
    xs = [i * j for i in range(1, 4) for j in range(b, 3) if (i + j) % 2 == 0]
    ys = [v for v in xs if v not in (2, 4)]
    if len(ys) == 0:
        return b
    ys[0] = ys[0] + a
    return ys


@iterator
def chain(a, b):
    out = []
    for i in range(-2, 3):
        if -1 <= i < b <= 3:
            out.append(i)
        elif i is None or i in range(a, 5, 2):
            continue
        else:
            out.append(~i)
    return out if len(out) < 4 else [out[0], out[-1]]


@iterator
def loops(a):
    total = 0
    seen = []
    i = 0
    while True:
        i += 1
        if i > 6:
            break
        if i % 3 == 0:
            continue
        total = total + i * a
        seen.append(total)
    for s in seen:
        if s > 10:
            break
        total -= s
    return [sum(seen) % 7, min(seen), max(x + 1 for x in seen), len(range(a, 9, 3)), int(total / 3)]


@iterator
def conv(a, b):
    f = float(a) / 2
    g = bool(b) + int(f) + int(-2.5) + int(True)
    h = select(b > 1, a, b * 2)
    u = union([a, b], range(0, 3))
    if any(x > 2 for x in u) and all(x >= -3 for x in u):
        return g + h + len(u)
    return sum(u)


@condition
def cx(a, b, comp, chain, loops, conv):
    x = comp if comp > chain else chain
    y = a or b
    z = b and a
    w = (a > 0) and (b > 0) or (conv == 3)
    if x + y + z > 6 and not w:
        return True
    n, m = loops, conv
    n, m = m, n
    return (n - m) % K == 1 or LIMITS[b % 3] == x


@condition
def cy(a, b, conv):
    r = 0
    for v in LIMITS:
        r += v if v > a else -v
    if kind in ("slow", "none") and conv not in [1, 2]:
        return True
    return r > 4 and conv in LIMITS and kind in MODES
"""


@pytest.mark.parametrize("kind", ["fast", "slow"])
def test_translated_function_bodies(space_file, kind):
    """Comprehensions, chained comparisons, and/or values, loops with break/continue, tuple
    assignment, min/max/sum/all/any/len/int/float/bool/select/union, list indexing, `in`."""
    space = beast.load(space_file(FUNCTIONS), settings={"kind": kind})
    source = print_lua(space.program)
    assert not source.fallbacks, source.untranslated_reasons
    assert assert_same(space, chunk_sizes=(1, 50)) > 0


def test_lua_keywords_as_names(space_file):
    space = beast.load(space_file("""
        from beast import *
        end = range(1, 4)
        local = range(end, 5)
        nil = iterator([2, 3])
        until = end * local - nil
        goto = condition(until % 3 == 0)


        @iterator
        def repeat(end, nil):
            elseif = []
            for then in range(end, nil + 3):
                elseif.append(then)
            return elseif


        @condition
        def function(repeat, local, until):
            do = repeat + local
            return do % 4 == 1 or 7 // (until - 5) > 3
        """))
    result = assert_same(space)
    assert result[1] == "division by zero in condition 'function'"


def test_deep_nest_is_split_into_functions(space_file):
    """LuaJIT allows 200 locals per function: deep nests move into functions of their own, and
    an error deep inside still names every bound iterator."""
    lines = ["from beast import *", "a0 = range(0, 2)"]
    for i in range(1, 15):
        # the local list keeps each function a function (not inlined into a plain range)
        lines.append(f"@iterator\ndef a{i}(a{i - 1}):\n    seen = [a{i - 1}]\n    if seen[0] >= 0:\n"
                     f"        return range(a{i - 1}, a{i - 1} + 2)\n    return [1]\n")
    lines += ["z = 100 // (a14 - 14)", "c = condition(z > 1000)"]
    space = beast.load(space_file("\n".join(lines) + "\n"))
    assert "_b_P[1] = function" in print_lua(space.program).text
    result = assert_same(space, chunk_sizes=(1000,))
    assert result[1] == "division by zero in derived variable 'z'"
    assert result[6] == {f"a{i}": i for i in range(15)}
