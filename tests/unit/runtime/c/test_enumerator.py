"""The C backend against the Python backend (the reference): the same rows in the same order, the
same errors (message, file, line, column, configuration), for every thread count; its arithmetic
helpers against Python's operators; the compile cache; warning-free generated C."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import beast
from beast.codegen import c as cgen
from beast.codegen.c_exprs import c_float, c_int
from beast.lang.devices import resolve_device
from beast.errors import BeastError, EvaluationError, SpaceError
from beast.ir import targets
from beast.runtime.c import build as c_build, enumerator as c_backend
from conftest import ROOT, have_cc, rows, write_space

pytestmark = pytest.mark.skipif(not have_cc(), reason="no C compiler")
GEMM = os.path.join(ROOT, "spaces", "gemm.py")


@pytest.fixture(autouse=True)
def cache_dir(tmp_path_factory, monkeypatch):
    """One private cache for the whole module (tests that look at the cache use their own)."""
    path = tmp_path_factory.getbasetemp() / "beast-c-cache"
    monkeypatch.setenv("BEAST_CACHE_DIR", str(path))
    return path


def outcome(space, backend, threads=None, chunk_size=1 << 20, check_count=True):
    """('ok', rows, count) or ('error', message, file, line, col, end, config, hint); count() must
    fail as enumerate() does."""
    try:
        parts = list(space.iterate(chunk_size, backend=backend, threads=threads))
        arr = np.concatenate(parts) if parts else np.empty(0, dtype=space.dtype)
    except EvaluationError as err:
        result = ("error", err.message, err.filename, err.lineno, err.col, err.end_col,
                  dict(err.config), err.hint)
        if not check_count:
            return result
        with pytest.raises(EvaluationError) as again:
            space.count(backend=backend, threads=threads)
        e2 = again.value
        assert ("error", e2.message, e2.filename, e2.lineno, e2.col, e2.end_col, dict(e2.config),
                e2.hint) == result, "count() and enumerate() fail differently"
        return result
    assert arr.dtype == space.dtype
    return ("ok", rows(arr), space.count(backend=backend, threads=threads))


def same_as_python(path, settings=None, threads=(1, 2, 3, 8), device=None):
    space = beast.load(path, settings=settings, device=device)
    expected = outcome(space, "python")
    for n in threads:
        got = outcome(space, "c", threads=n)
        assert got == expected, f"threads={n}"
    return space, expected


# ---------------------------------------------------------------------------------------------
# GEMM (the paper's space) on scaled-down devices

@pytest.mark.parametrize("precision", ["single", "double"])
@pytest.mark.parametrize("arithmetic", ["real", "complex"])
@pytest.mark.parametrize("trans", [(0, 0), (1, 0), (0, 1)])
def test_gemm_matches_python(precision, arithmetic, trans):
    dev = resolve_device("k40c").replace(max_threads_dim_x=16, max_threads_dim_y=16)
    settings = {"precision": precision, "arithmetic": arithmetic, "trans_a": trans[0], "trans_b": trans[1]}
    _, result = same_as_python(GEMM, settings, threads=(1, 3), device=dev)
    assert result[0] == "ok" and result[2] > 0


def test_gemm_32_threads_and_chunks():
    dev = resolve_device("k40c").replace(max_threads_dim_x=32, max_threads_dim_y=32)
    space = beast.load(GEMM, device=dev, settings={"precision": "single"})
    expected = space.enumerate(backend="python")
    assert len(expected) > 10000
    for n in (1, 2, 3, 8):
        assert np.array_equal(space.enumerate(backend="c", threads=n), expected)
        assert space.count(backend="c", threads=n) == len(expected)
    # small chunks, many threads: same rows, in order, chunk sizes as the Python backend's
    chunks = list(space.iterate(997, backend="c", threads=3))
    assert [len(c) for c in chunks[:-1]] == [997] * (len(chunks) - 1)
    assert np.array_equal(np.concatenate(chunks), expected)


def test_abandoned_stream_stops_cleanly():
    dev = resolve_device("k40c").replace(max_threads_dim_x=32, max_threads_dim_y=32)
    space = beast.load(GEMM, device=dev)
    it = space.iterate(100, backend="c", threads=4)
    first = next(it)
    it.close()
    assert np.array_equal(first, space.enumerate(backend="python")[:100])


# ---------------------------------------------------------------------------------------------
# Small spaces, one feature each

SPACES = {
    "negative_steps_empty_ranges": """
        from beast import *
        a = range(4)
        b = range(a, 0, -1)
        c = range(5, a, -2)
        d = range(a - 1)
        """,
    "values_and_scalars": """
        from beast import *
        a = range(-2, 3)
        b = iterator(a * a - 1)
        c = iterator(7)
        d = iterator(a > 0)
        e = iterator([3, 1, 3, True, False, -2])
        """,
    "set_operations": """
        from beast import *
        a = range(1, 4)
        u = union(range(a), iterator(a + 5))
        v = intersection(range(a, a + 3), range(2, 5))
        w = difference(range(0, a + 2), iterator(a))
        x = union(iterator([3, 1, 3, 2]), [2, 5, 1, 6])
        """,
    "floats_in_derived_values": """
        from beast import *
        a = range(-3, 4)
        b = range(1, 4)
        f = a / b
        g = select(a > 0, a * 1.5, a // b)
        h = (g ** 2) % 2.5
        k = min(f, g) + max(a, 0.5) - abs(g)
        m = -g // 0.75
        condition(h > k + 3)
        condition((m == 1) | (a % 3 == 0))
        condition(select(a < 0, f, 2) == -1)
        condition(b ** -1 == 0.5)
        """,
    "deferred_translated": """
        from beast import *
        shape = setting("shape", "range", choices=["range", "list", "scalar"])
        @iterator
        def inner(outer):
            k = 0
            for i in range(outer):
                k += i
            if k > 3:
                return [k, k - 1, k]
            return range(k, -1, -1)
        @iterator
        def outer():
            if shape == "range":
                return range(5)
            elif shape == "list":
                return [3, 1, 3]
            else:
                return 2
        """,
    "closure_translated": """
        from beast import *
        MAX = 40
        @iterator
        def dim_vec():
            return [1, 2]
        @iterator
        def unroll(dim_vec):
            seen = []
            n = 2
            while n <= MAX // dim_vec:
                if all(n % p for p in seen):
                    seen.append(n)
                    yield n
                n += 1
        @iterator
        def fib(dim_vec):
            a, b = 1, dim_vec
            while a < 30:
                yield a
                a, b = b, a + b
        @iterator
        def fib2(dim_vec):
            k = n = dim_vec
            while n <= 40:
                yield n
                n, k = n + k, n
        """,
    "function_bodies": """
        from beast import *
        a = range(0, 6)
        b = range(1, 4)
        @condition
        def c(a, b):
            x = [i * b for i in range(a) if i % 2 == 0]
            if len(x) and max(x) > 4:
                return True
            y = a if a > 2 else b
            z = select(a > 1, y, 0)
            return sum(x) % 3 == 1 or z in (2, 3) or 1 < a < b or a & (a - 1) == 4
        @iterator
        def d(a, b):
            out = []
            k = a
            while k > 0:
                k -= b
                if k % 2:
                    continue
                out.append(k)
                if len(out) > 2:
                    break
            return out
        @condition
        def e(a, b):
            x = a / b
            y = x * 2.5 - a
            if y >= 1.0:
                return int(y) % 2 == 0
            return abs(x) // 0.5 > 2
        """,
    "closures_and_deferred_in_set_operations": """
        from beast import *
        a = range(1, 4)
        @iterator
        def g(a):
            k = 0
            while k < a:
                yield k * k
                k += 1
        @iterator
        def h(a):
            return [a, 2 * a, a]
        u = union(g, h)
        v = intersection(h, [2, 4, 6])
        w = difference(union(g, [7, 0]), range(1, 3))
        """,
    "tabulated": """
        from beast import *
        a = range(4)
        b = range(3)
        @iterator
        def c(a, b):
            return sorted([b, a, 2])
        @condition
        def d(a, c):
            return divmod(a, 2)[1] == 1 and c > 0
        @iterator
        def e(a):
            for i, v in enumerate([a, 2, a]):
                yield v + i
        """,
    "no_iterators": """
        from beast import *
        K = 3
        """,
    "checks_before_any_loop": """
        from beast import *
        K = setting("K", 1)
        a = range(3)
        condition(K > 2)
        """,
}

ERRORS = {
    "division_by_zero_in_derived": ("""
        from beast import *
        a = range(-2, 3)
        b = range(3)
        q = 10 // (a * b - 1)
        condition(q > 100)
        """, "division by zero in derived variable 'q'"),
    "modulo_by_zero_in_inlined_condition": ("""
        from beast import *
        a = range(-2, 3)
        b = range(3)
        @condition
        def c(a, b):
            return 7 % (a + b) == 1
        """, "modulo by zero in condition 'c'"),
    "division_by_zero_in_function_body": ("""
        from beast import *
        a = range(3)
        b = range(3)
        @condition
        def c(a, b):
            x = a * 2
            if x > 1:
                x //= (b - 1)
            return x > 2
        """, "division by zero"),
    "error_after_closure_values": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            yield 1
            yield 2
            yield 10 // (a - 1)
        """, "division by zero"),
    "range_step_zero": ("""
        from beast import *
        a = range(3)
        b = range(0, 5, a - 1)
        """, "range() step is zero in iterator 'b'"),
    "range_step_zero_in_function": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            for i in range(0, 3, a - 1):
                yield i
        """, "range() step is zero"),
    "non_integer_scalar": ("""
        from beast import *
        a = range(3)
        b = iterator(select(a > 1, a / 2, a))
        """, "iterator 'b' yields a non-integer value 1.0"),
    "non_integer_in_list": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            if a == 2:
                return [1, a / 4]
            return [a]
        """, "iterator 'b' yields a non-integer value 0.5"),
    "deferred_returns_none": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            if a < 2:
                return [a]
        """, "an @iterator function returned None"),
    "index_error_in_function": ("""
        from beast import *
        a = range(4)
        @condition
        def c(a):
            x = [1, 2, 3]
            return x[a] > 1
        """, "IndexError: list index out of range"),
    "error_in_tabulated_function": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            yield 1
            yield 10 // sorted([a - 1, 5])[0]
        """, "division by zero"),
    "overflow_of_a_derived_value": ("""
        from beast import *
        a = range(1, 4)
        b = a * 2 ** 62
        condition(b < 0)
        """, "integer overflow in derived variable 'b'"),
    "pure_count_of_inner_loops": ("""
        from beast import *
        a = range(-1, 2)
        b = range(0, 4, a)
        c = range(2)
        """, "range() step is zero in iterator 'b'"),
}


def _dedent(text):
    return textwrap.dedent(text).lstrip("\n")


@pytest.mark.parametrize("name", sorted(SPACES))
def test_feature_spaces_match_python(tmp_path, name):
    path = write_space(tmp_path, _dedent(SPACES[name]))
    space, result = same_as_python(path)
    if name != "checks_before_any_loop":
        assert result[0] == "ok" and result[2] > 0, "a feature space should have survivors"


def test_settings_variants_match_python(tmp_path):
    path = write_space(tmp_path, _dedent(SPACES["deferred_translated"]))
    for shape in ("list", "scalar"):
        same_as_python(path, {"shape": shape})
    path = write_space(tmp_path, _dedent(SPACES["checks_before_any_loop"]), "k.py")
    _, result = same_as_python(path, {"K": "3"})
    assert result == ("ok", [], 0)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_python(tmp_path, name):
    text, message = ERRORS[name]
    path = write_space(tmp_path, _dedent(text))
    space = beast.load(path)
    got = outcome(space, "c", threads=1)
    assert got[0] == "error" and got[1] == message, got
    assert got[2] == path and got[3] is not None
    for n in (2, 3, 8):
        assert outcome(space, "c", threads=n) == got
    python = outcome(space, "python")
    if name != "overflow_of_a_derived_value" or _python_checks_overflow(space):
        assert python == got


def _python_checks_overflow(space):
    try:
        space.count(backend="python")
    except EvaluationError:
        return True
    return False


def test_translation_and_tabulation_are_used_where_expected(tmp_path):
    def functions(name):
        space = beast.load(write_space(tmp_path, _dedent(SPACES[name]), f"{name}.py"))
        src = space.enumerator("c").source
        return set(src.translated), set(src.tabulated)
    assert functions("closure_translated") == ({"unroll", "fib", "fib2"}, set())
    assert functions("function_bodies") == ({"c", "d", "e"}, set())
    assert functions("tabulated") == (set(), {"c", "d", "e"})


def test_an_iterator_past_the_buffer_is_an_error_at_its_yield(tmp_path):
    """A closure yielding more values than C buffers in one call (2**24): the error points at the
    yield and says what to do; auto still takes it for the backend's own limit and falls back."""
    from beast.ir.tabulate import MAX_VALUES
    from beast.runtime.auto import _limit_error
    path = write_space(tmp_path, f"""
        from beast import *

        @iterator
        def g():
            n = 0
            while n <= {MAX_VALUES}:
                yield n
                n += 1
        """)
    with pytest.raises(EvaluationError) as info:
        beast.load(path).count(backend="c", threads=1)
    err = info.value
    assert (err.filename, err.lineno, err.col) == (path, 7, 8) and "--backend python" in err.hint
    assert _limit_error(err, "c")


FLOAT_SUMS = """
    from beast import *
    a = range(0, 12)

    @condition
    def tenths(a):
        return sum(0.1 for x in range(a)) == a / 10

    @condition
    def halves(a):
        return sum([x * 0.5 for x in range(a)]) > 10.0

    @condition
    def ints(a):
        return sum(x for x in range(a)) + sum([True, a > 3]) > 40
    """


@pytest.mark.parametrize("compensated", [False, True])
def test_float_sums_are_left_to_python_where_it_compensates_them(tmp_path, monkeypatch, compensated):
    """From Python 3.12 on, sum() of floats compensates the rounding of each addition (Neumaier):
    sum([0.1] * 10) == 1.0 there, 0.9999999999999999 before; a body that sums floats is then
    tabulated (and Lua calls it back), one that sums integers and bools is still translated.
    Either way every backend gives this Python's rows (the check of the C and Lua printers' plain
    sum is the other parameter)."""
    from beast.ir import ops
    monkeypatch.setattr(ops, "COMPENSATED_SUM", compensated)
    path = write_space(tmp_path, _dedent(FLOAT_SUMS), f"sums{int(compensated)}.py")
    space = beast.load(path)
    src = space.enumerator("c").source
    floats = {"tenths", "halves"}
    assert (set(src.translated), set(src.tabulated)) == \
        (({"ints"}, floats) if compensated else ({"ints"} | floats, set()))
    want = [(a,) for a in range(12)
            if not (sum(0.1 for x in range(a)) == a / 10 or sum([x * 0.5 for x in range(a)]) > 10.0
                    or sum(x for x in range(a)) + sum([True, a > 3]) > 40)]
    if compensated or sys.version_info < (3, 12):
        same_as_python(path, threads=(1, 3))
        assert rows(space.enumerate(backend="lua")) == want
    else:                       # a plain sum on a Python that compensates: the rows it would give
        assert rows(space.enumerate(backend="c")) != want


@pytest.mark.parametrize("name", ["closure_translated", "function_bodies", "deferred_translated",
                                  "closures_and_deferred_in_set_operations"])
def test_forced_tabulation_matches_python(tmp_path, monkeypatch, name):
    monkeypatch.setattr(targets, "FORCE_TABULATE", True)
    path = write_space(tmp_path, _dedent(SPACES[name]))
    space, _ = same_as_python(path, threads=(1, 3))
    assert space.enumerator("c").source.translated == ()


def test_untranslatable_and_untabulatable_function_is_a_located_error(tmp_path):
    path = write_space(tmp_path, _dedent("""
        from beast import *
        a = range(100000)
        b = range(100000)
        @condition
        def c(a, b):
            return sorted([a, b])[0] == 3
        """))
    space = beast.load(path)
    with pytest.raises(SpaceError) as info:
        space.count(backend="c")
    err = info.value
    assert err.filename == path and err.lineno == 6
    assert "cannot translate" in err.message and "cannot tabulate" in err.message


def test_first_error_in_enumeration_order_wins_for_any_thread_count(tmp_path):
    # errors in many work items; the first one in enumeration order is reported
    path = write_space(tmp_path, _dedent("""
        from beast import *
        a = range(0, 300)
        b = range(40)
        c = range(5)
        q = 7 // (b + c - (a % 11) - 30)
        condition(q > 100)
        """))
    space = beast.load(path)
    expected = outcome(space, "python")
    assert expected[0] == "error"
    for n in (1, 2, 3, 8):
        assert outcome(space, "c", threads=n) == expected


def test_rows_before_an_error_are_streamed_as_python_does(tmp_path):
    path = write_space(tmp_path, _dedent("""
        from beast import *
        a = range(0, 50)
        b = range(4)
        q = 1 // (a - 37)
        """) + "condition(q > 100)\n")
    space = beast.load(path)
    for backend, threads in (("python", None), ("c", 1), ("c", 3)):
        sizes = []
        with pytest.raises(EvaluationError):
            for chunk in space.iterate(7, backend=backend, threads=threads):
                sizes.append(len(chunk))
        if backend == "python":
            expected_sizes = sizes
        assert sizes == expected_sizes


# ---------------------------------------------------------------------------------------------
# Arithmetic helpers against Python's operators

_INTS = [0, 1, -1, 2, -2, 3, -3, 7, -7, 10, -10, 2 ** 31, -(2 ** 31), 2 ** 62, -(2 ** 62),
         2 ** 63 - 1, -(2 ** 63)]
_FLOATS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 3.0, -7.25, 1e300, -1e300, 1e-300,
           float("inf"), float("-inf"), 2.0 ** 53 + 2, 0.1, 9.223372036854776e18]
_INT_OPS = {"floordiv": "//", "mod": "%", "pow": "**"}
_DD_OPS = {"floordiv": "//", "mod": "%", "pow": "**"}


def _harness(tmp_path, body):
    src = cgen._prelude(0, 0)      # the runtime's hooks are declared, not called: not linked
    src += "\n#include <stdio.h>\nint main(void) {\n" + body + "\nreturn 0;\n}\n"
    c_file = tmp_path / "h.c"
    c_file.write_text(src)
    exe = tmp_path / "h"
    argv, _ = c_backend.compiler()
    subprocess.run(argv + ["-O2", "-std=gnu99", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(c_file),
                           "-lm"], check=True, capture_output=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")


def _py(op, a, b):
    try:
        r = {"//": lambda: a // b, "%": lambda: a % b, "**": lambda: a ** b, "/": lambda: a / b}[op]()
    except ZeroDivisionError:
        return "zero"
    except OverflowError:
        return "overflow"
    if isinstance(r, complex):
        return "complex"
    if isinstance(r, int) and not -(2 ** 63) <= r < 2 ** 63:
        return "overflow"
    return r


def test_integer_and_float_arithmetic_match_python(tmp_path):
    cases, lines = [], []
    for name, op in _INT_OPS.items():
        for a in _INTS:
            for b in _INTS:
                if op == "**" and not 0 <= b <= 70:
                    continue
                cases.append((op, a, b, "i"))
                lines.append(f'{{ int64_t r = 0; int e = bn_{name}_ii(&r, {c_int(a)}, {c_int(b)}); '
                             f'printf("%d %lld\\n", e, (long long)r); }}')
    for name, op in _DD_OPS.items():
        for a in _FLOATS:
            for b in _FLOATS:
                cases.append((op, a, b, "d"))
                lines.append(f'{{ double r = 0; int e = bn_{name}_dd(&r, {c_float(a)}, {c_float(b)}); '
                             f'printf("%d %a\\n", e, r); }}')
    for a in _INTS:
        for b in _FLOATS:
            cases.append(("cmp", a, b, "c"))
            lines.append(f'printf("%d\\n", bn_cmp_id({c_int(a)}, {c_float(b)}));')
    out = _harness(tmp_path, "\n".join(lines))
    kinds = {cgen.KIND["zero_floordiv"]: "zero", cgen.KIND["zero_mod"]: "zero",
             cgen.KIND["zero_ffloordiv"]: "zero", cgen.KIND["zero_fmod"]: "zero",
             cgen.KIND["zero_pow"]: "zero", cgen.KIND["overflow"]: "overflow",
             cgen.KIND["fpow_overflow"]: "overflow", cgen.KIND["complex_pow"]: "complex"}
    for (op, a, b, kind), line in zip(cases, out):
        if kind == "c":
            want = -1 if a < b else 1 if a > b else 0 if a == b else 2
            assert int(line) == want, (a, b)
            continue
        code, value = line.split()
        expected = _py(op, a, b)
        if int(code):
            if kinds[int(code)] == "complex":     # Python gives a complex number (or overflows)
                assert a < 0 and b != math.floor(b) and expected in ("complex", "overflow"), (a, b)
            else:
                assert kinds[int(code)] == expected, (a, op, b, expected)
            continue
        got = int(value) if kind == "i" else float.fromhex(value)
        assert not isinstance(expected, str), (a, op, b, got)
        if isinstance(got, float) and math.isnan(got):
            assert math.isnan(expected), (a, op, b)
        else:
            assert got == expected and math.copysign(1, got) == math.copysign(1, expected) \
                if isinstance(got, float) else got == expected, (a, op, b, got, expected)


def test_int_true_division_rounds_the_exact_quotient_once(tmp_path):
    """int / int past 2**53: Python rounds the exact quotient; dividing the operands' doubles
    rounds twice ((2**55 + 3) / 3 was 12009599006321322.0, Python's is ...324.0)."""
    import random
    rnd = random.Random(7)
    ints = _INTS + [2 ** 53 + 1, -(2 ** 53 + 1), 2 ** 55 + 3, 3 * 2 ** 60 + 5, 2 ** 53, 1 - 2 ** 63]
    ints += [rnd.randrange(-2 ** 63, 2 ** 63) >> rnd.randrange(0, 63) for _ in range(60)]
    pairs = [(a, b) for a in ints for b in ints if b != 0]
    out = _harness(tmp_path, "\n".join(f'printf("%a\\n", bn_truediv_ii({c_int(a)}, {c_int(b)}));'
                                        for a, b in pairs))
    for (a, b), line in zip(pairs, out):
        got, want = float.fromhex(line), a / b
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (a, b, got, want)
    space = write_space(tmp_path, """
        from beast import *
        a = iterator([2**55 + 3, 2**62 + 1, 3])
        b = iterator([3, 2**55 + 1])
        q = a / b
        c = condition(q == 12009599006321322.0)

        @condition
        def d(a, b):
            return a / b == 12009599006321322.0 or a / b == 0.0
        """)
    _, expected = same_as_python(space, threads=(1,))
    assert len(expected[1]) == 6


def _fma_cc():
    """A C compiler command that may fuse multiply-add on this machine (aarch64: always; x86-64:
    with -mfma where the CPU has FMA), or None."""
    import platform
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return os.environ.get("CC") or "cc"
    try:
        with open("/proc/cpuinfo") as fh:
            has_fma = " fma" in fh.read()
    except OSError:
        has_fma = False
    if machine in ("x86_64", "amd64") and has_fma:
        return (os.environ.get("CC") or "cc") + " -mfma"
    return None


def test_float_expressions_are_not_fused_into_multiply_add(tmp_path, monkeypatch):
    """a * 0.1 - b * 0.3 rounds each product as Python does: a compiler allowed to contract it
    into a fused multiply-add (GCC's default in gnu99 mode on FMA targets) rounds once and
    keeps or drops other rows, silently.  Built for an FMA target, the enumerator must still
    agree with Python; without -ffp-contract=off the same build does not (so the check bites)."""
    cc = _fma_cc()
    if cc is None:
        pytest.skip("this CPU has no fused multiply-add")
    monkeypatch.setenv("CC", cc)
    space = write_space(tmp_path, """
        from beast import *
        a = range(1, 2000)
        b = iterator([3, 7])
        x = a * 0.1 - b * 0.3
        c = condition(x * 10 == a - 3 * b)
        """)
    _, expected = same_as_python(space, threads=(1, 2))
    assert expected[0] == "ok" and len(expected[1]) == sum(
        1 for a in range(1, 2000) for b in (3, 7) if not (a * 0.1 - b * 0.3) * 10 == a - 3 * b)
    monkeypatch.setattr(c_build, "CFLAGS", tuple(f for f in c_build.CFLAGS if f != "-ffp-contract=off"))
    fused = outcome(beast.load(space), "c", threads=1)
    assert fused[0] == "ok" and fused[1] != expected[1]


# ---------------------------------------------------------------------------------------------
# The cache

def _fresh_space(tmp_path, n=3, name="space.py"):
    return beast.load(write_space(tmp_path, f"from beast import *\na = range({n})\nb = range(a)\n", name))


def test_cache_hit_miss_and_directory(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("BEAST_CACHE_DIR", str(cache))
    calls = []
    real = c_build.run_compiler
    monkeypatch.setattr(c_build, "run_compiler", lambda argv: (calls.append(argv), real(argv)))
    assert _fresh_space(tmp_path).count(backend="c") == 3
    # a fresh cache: the runtime's object and the enumerator's compile (side by side), then the link
    assert len(calls) == 3
    assert sorted(os.path.basename(c[-1]) for c in calls[:2] if "-c" in c) == ["runtime.c", "space.c"]
    assert "-shared" in calls[2] and sum(a.endswith(".o") for a in calls[2]) == 2
    built = sorted(p.name for p in (cache / "c").iterdir())
    assert len([p for p in built if p.endswith(".so")]) == 1 and not any(p.startswith(".tmp") for p in built)
    assert len([p for p in built if p.startswith("runtime-") and p.endswith(".o")]) == 1
    # a second build of the same space: no compiler
    monkeypatch.setattr(c_backend, "run_compiler", lambda argv: pytest.fail("compiled again"))
    assert _fresh_space(tmp_path).count(backend="c") == 3
    # a changed space: a new entry
    monkeypatch.setattr(c_backend, "run_compiler", lambda argv: (calls.append(argv), real(argv)))
    assert _fresh_space(tmp_path, 4).count(backend="c") == 6
    assert len(calls) == 4 and "-c" not in calls[3]     # the runtime's object is reused: one command
    assert len(list((cache / "c").glob("*.so"))) == 2 and len(list((cache / "c").glob("*.o"))) == 1


def test_concurrent_builds_share_one_entry(tmp_path):
    path = write_space(tmp_path, "from beast import *\na = range(5)\nb = range(a, 7)\n")
    cache = tmp_path / "cache"
    code = (f"import beast; s = beast.load({path!r}); print(s.count(backend='c'))")
    env = dict(os.environ, BEAST_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs == ["25"] * 4
    assert len(list((cache / "c").glob("*.so"))) == 1
    assert not [p for p in (cache / "c").iterdir() if p.name.startswith(".tmp")]


def test_cache_dir_defaults(monkeypatch, tmp_path):
    from beast.runtime import cache
    monkeypatch.delenv("BEAST_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir(create=False) == str(tmp_path / "xdg" / "beast")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir(create=False) == str(tmp_path / "home" / ".cache" / "beast")
    assert cache.key("ab", "c") != cache.key("a", "bc")


# ---------------------------------------------------------------------------------------------
# The generated C is warning-free

def test_generated_c_compiles_with_all_warnings(tmp_path):
    argv, _ = c_backend.compiler()
    programs = [beast.load(GEMM, device=resolve_device("k40c")).program]
    for name in ("closure_translated", "function_bodies", "tabulated", "set_operations",
                 "floats_in_derived_values", "values_and_scalars", "checks_before_any_loop",
                 "no_iterators"):
        programs.append(beast.load(write_space(tmp_path, _dedent(SPACES[name]), f"{name}.py")).program)
    for text, _ in ERRORS.values():
        programs.append(beast.load(write_space(tmp_path, _dedent(text), "err.py")).program)
    strict = ["-O2", "-std=gnu99", "-fPIC", "-pthread", "-Wall", "-Wextra", "-Werror"]
    runtime = None
    for i, program in enumerate(programs):
        files = c_backend.render(program)
        assert list(files)[0] == c_backend.RUNTIME_FILE and list(files)[1].endswith("_enumerator.c")
        if runtime is None:     # the runtime, the same for every space, and the enumerators
            runtime = tmp_path / c_backend.RUNTIME_FILE
            runtime.write_text(files[c_backend.RUNTIME_FILE])
            proc = subprocess.run(argv + strict + ["-c", "-o", str(tmp_path / "rt.o"), str(runtime)],
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr[-3000:]
        assert files[c_backend.RUNTIME_FILE] == runtime.read_text()
        c_file = tmp_path / f"w{i}.c"
        c_file.write_text(list(files.values())[1])
        proc = subprocess.run(argv + strict + ["-c", "-o", str(tmp_path / f"w{i}.o"), str(c_file)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
    # the two files build the shared object beast loads (as render's docstring says)
    proc = subprocess.run(argv + strict + ["-shared", "-o", str(tmp_path / "w.so"), str(tmp_path / "w0.c"),
                                           str(runtime), "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lib = c_build._get_ffi().dlopen(str(tmp_path / "w.so"))
    assert lib.bn_abi() == int(c_backend.ABI_VERSION)


def test_threads_argument_is_checked():
    dev = resolve_device("k40c").replace(max_threads_dim_x=4, max_threads_dim_y=4)
    space = beast.load(GEMM, device=dev)
    with pytest.raises(BeastError):
        space.count(backend="c", threads=0)
