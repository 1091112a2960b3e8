"""The Lua backend's errors, its 2**53 edge, functions it calls back in Python, and random
spaces against Python."""
from __future__ import annotations

import itertools
import math
import os
import tempfile

import numpy as np
import pytest
import beast  # noqa: E402
from beast.codegen.lua import print_lua  # noqa: E402
from beast.lang.devices import resolve_device  # noqa: E402
from beast.runtime.lua import LuaEnumerator, render  # noqa: E402
from beast.runtime.python import PythonEnumerator  # noqa: E402
from conftest import write_space  # noqa: E402
from unit.runtime.test_lua import (SMALL, assert_same, error_key, run_chunks, run_count)


# ---------------------------------------------------------------------------------------------
# Errors: the same message, file, line, column and configuration as the Python backend

ERRORS = """
from beast import *
mode = setting("mode", "none")
a = range(-2, 4)
b = range(3, -3, -1)
if mode == "derived":
    z = (a + 1) // (b - 1)
elif mode == "mod":
    z = a % b
elif mode == "float":
    z = (a + 0.5) // (b * 1.0)
elif mode == "pow":
    z = b ** -1
elif mode == "overflow":
    z = (a + 3) * 3037000500 * 3037000500
else:
    z = a + b


@condition
def cz(z):
    return z > 100


@condition
def cf(a, b):
    if mode != "cond":
        return False
    t = a * 2
    return t // b > 1


@condition
def ci(a, b):
    return mode == "inlined" and a % b == 1


@iterator
def d(a, b):
    if mode == "deferred":
        return range(0, 10 // (a + b))
    if mode == "nonint":
        if a == 1:
            return [1, 2, b / 2, 3]
        return a / 1
    if mode == "none":
        if a < 2:
            return 1
        return None
    if mode == "rangestep":
        return range(0, 3, a)
    if mode == "rangefloat":
        return range(0, 3 + a / 2)
    if mode == "index":
        lst = [1, 2, 3]
        return lst[a + b]
    if mode == "empty":
        lst = []
        for i in range(a):
            lst.append(i)
        return max(lst)
    if mode == "loop":
        lst = [a]
        while lst[-1] < 5:
            lst.append(lst[-1] + 1 + 7 % (b + 1))
        return lst
    return 0


@iterator
def c(a, b):
    n = 0
    while n < 4:
        if mode == "closure":
            yield 12 // (a - n)
        elif mode == "closurefloat":
            yield n if n < 2 else n / 2
        else:
            yield n
        n += 1
"""

ERROR_MODES = ["derived", "mod", "float", "pow", "overflow", "cond", "inlined", "deferred",
               "nonint", "none", "rangestep", "rangefloat", "index", "empty", "loop", "closure",
               "closurefloat"]


@pytest.mark.parametrize("mode", ERROR_MODES)
def test_errors_match_python(space_file, mode):
    space = beast.load(space_file(ERRORS), settings={"mode": mode})
    result = assert_same(space, chunk_sizes=(1, 3, 1000))
    assert isinstance(result, tuple), "the space was meant to fail"
    kind, message = result[0], result[1]
    assert kind == "EvaluationError"
    assert message and "internal error" not in message
    assert result[3] is not None   # a line


def test_error_inside_translated_function_points_at_the_operation(space_file):
    space = beast.load(space_file(ERRORS), settings={"mode": "closure"})
    assert "_b_it_c" in print_lua(space.program).translated
    with pytest.raises(beast.EvaluationError) as info:
        space.count(backend="lua")
    err = info.value
    assert err.message == "division by zero"
    line = ERRORS.lstrip("\n").splitlines()[err.lineno - 1]
    assert line[err.col:err.end_col] == "12 // (a - n)"
    assert err.config["a"] == 0 and set(err.config) <= set(space.iterators)


def test_lua_only_overflow_beyond_2_53(space_file):
    """Integers beyond 2**53 cannot be exact in LuaJIT numbers: reported, never rounded (the Python
    backend checks 64 bits, so it does not fail here)."""
    space = beast.load(space_file("""
        from beast import *
        a = range(1, 4)
        big = a * 3037000500 * 3037000
        c = condition(big % 7 == 1)
        """))
    assert space.count(backend="python") >= 0
    with pytest.raises(beast.EvaluationError) as info:
        space.count(backend="lua")
    assert info.value.message == "integer overflow in derived variable 'big'"
    assert info.value.config == {"a": 1}
    assert "2**53" in info.value.hint


def test_values_up_to_2_53_are_exact(space_file):
    space = beast.load(space_file("""
        from beast import *
        a = iterator([2**53 - 1, -(2**53 - 3)])
        b = range(1, 3)
        h = (a - b) + b
        c = condition(h != a)
        x = iterator(a // b)
        """))
    assert space.enumerate(backend="lua").tolist() == space.enumerate(backend="python").tolist()




def test_set_operation_constants_beyond_2_53_are_an_overflow_not_rounded(space_file):
    """Every constant of a set-operation operand takes part (a value past 2**53 would round, and
    2**53 and 2**53 + 1 would count as one): Lua reports an overflow when the loop is reached."""
    space = beast.load(space_file("""
        from beast import *
        a = range(1, 4)
        b = iterator(union(range(a), [2**53, 2**53 + 1]))
        """))
    assert space.count(backend="python") == space.count(backend="c") == 12
    with pytest.raises(beast.EvaluationError) as info:
        space.count(backend="lua")
    assert info.value.message == "integer overflow in iterator 'b'"
    assert info.value.config == {"a": 1} and "2**53" in info.value.hint


def test_an_iterator_value_past_2_53_is_left_out_of_the_error_configuration(space_file):
    """The value cannot be shown exactly (it rounded as a double); Python leaves the iterator out too
    where its value does not fit the rows' int64."""
    space = beast.load(space_file("""
        from beast import *
        a = range(1, 3)
        b = iterator([3, 2**55 + 3])
        """))
    with pytest.raises(beast.EvaluationError) as info:
        space.enumerate(backend="lua")
    assert info.value.message == "integer overflow in iterator 'b'" and info.value.config == {"a": 1}
    wide = beast.load(space_file("""
        from beast import *
        a = range(1, 3)
        b = iterator([3, 2**63])
        """, "wide.py"))
    errors = []
    for backend in ("lua", "python"):       # past 64 bits: refused at the literal, as in C
        with pytest.raises(beast.SpaceError) as info:
            wide.enumerate(backend=backend)
        errors.append((info.value.message, info.value.lineno, info.value.col))
    assert errors[0] == errors[1] == ("the integer 9223372036854775808 does not fit in 64 bits: beast's "
                                      "integers run from -2**63 to 2**63-1", 3, 17)


@pytest.mark.parametrize("body, config", [("int(1e300 * a) > 5", {"a": 1}), ("int(2.0**60 - a) > 5", {"a": 0})])
def test_int_of_a_float_past_2_53_is_an_integer_overflow(body, config, space_file):
    """The prelude passed "overflow" as an operand's float flag, not as the error's kind: the
    runtime replayed int() in Python, which succeeded, and said "ArithmeticError: conv int"."""
    space = beast.load(space_file(f"""
        from beast import *
        a = range(3)
        @condition
        def c(a):
            return {body}
        """))
    with pytest.raises(beast.EvaluationError) as info:
        space.count(backend="lua")
    err = info.value
    assert (err.message, err.lineno, err.col, err.config) == ("integer overflow", 5, 11, config)
    assert "2**53" in err.hint or "64-bit" in err.hint


def test_ranges_wider_than_2_53_between_exact_ends(space_file):
    """Ends within +-2**53 whose difference is not (it rounds as a double): range lengths, counting
    nests and membership stay exact, and only a length of 2**53 or more is an overflow (not a zero step)."""
    assert assert_same(beast.load(space_file("""
        from beast import *
        x = range(2**53 - 5, 2**53 - 1)
        y = range(-(2**53 - 1), -(2**53 - 5))
        @condition
        def c(x, y):
            return x in range(-(2**53 - 1), 2**53 - 1, 3) or y in range(2**53 - 1, -(2**53 - 1), -3)
        """)), chunk_sizes=(4096,)) == 9                # x - start rounds: 2**54 - 5 -> 2**54 - 4
    wide = assert_same(beast.load(space_file("""
        from beast import *
        a = range(3)
        b = range(a - 2**52, 2**52 + 1, 2**51)
        d = range(a, -(2**53 - 1), -(2**51))
        x = iterator([2**53 - 4, 2**53 - 3, 2**53 - 2, -(2**53 - 2)])
        @condition
        def c(a, b, x):
            return x in range(-(2**53 - 1), 2**53 - 1, 3) or len(range(-b, 2**52, 3)) > 2**51 + a
        """)), chunk_sizes=(5, 4096))
    assert wide > 0
    counted = beast.load(space_file("""
        from beast import *
        a = range(3)
        b = range(a - 2**52, 2**52 + 1, 2**51)
        d = range(a, -(2**53 - 1), -(2**51))
        """))                                   # a pure counting nest: lengths multiplied, no loop
    assert counted.count(backend="lua") == counted.count(backend="python") == 5 * 4 + 4 * 4 + 4 * 5
    space = beast.load(space_file("""
        from beast import *
        a = range(3)
        b = range(a - 2**52 - 1, 2**52 + 2)
        """))
    assert space.count(backend="python") == 3 * (2**53 + 3) - 3
    with pytest.raises(beast.EvaluationError) as info:
        space.count(backend="lua")
    assert info.value.message == "integer overflow in iterator 'b'" and "2**53" in info.value.hint


# ---------------------------------------------------------------------------------------------
# Odds and ends

def test_untranslatable_function_runs_in_python(space_file):
    space = beast.load(space_file("""
        from beast import *
        a = range(1, 20)


        @iterator
        def digits(a):
            return sorted([int(ch) for ch in str(a * 37)], reverse=True)


        @condition
        def odd(a, digits):
            q, r = divmod(a, digits + 1)
            return q % 2 == 1 or r == 0
        """))
    source = print_lua(space.program)
    assert set(source.fallbacks) == {"_b_it_digits", "_b_cond_odd"}
    assert "called in Python" in source.text
    assert assert_same(space, fallback=False) > 10


def test_empty_space_and_no_loops(space_file):
    empty = beast.load(space_file("""
        from beast import *
        a = range(3)
        b = range(a, a)
        """, "empty.py"))
    assert empty.count(backend="lua") == 0
    assert len(empty.enumerate(backend="lua")) == 0
    scalar = beast.load(space_file("""
        from beast import *
        a = iterator(5)
        c = condition(a > 10)
        """, "scalar.py"))
    assert scalar.enumerate(backend="lua").tolist() == [(5,)]
    rejected = beast.load(space_file("""
        from beast import *
        a = iterator(5)
        c = condition(a > 1)
        """, "rejected.py"))
    assert rejected.count(backend="lua") == 0


def test_threads_accepted_and_render(space_file):
    space = beast.load("spaces/gemm.py", device=SMALL)
    assert space.count(backend="lua", threads=4) == space.count(backend="python")
    files = render(space.program)
    (name, text), = files.items()
    assert name == "gemm_enumerator.lua" and "return _b_count, _b_rows" in text


# ---------------------------------------------------------------------------------------------
# Random spaces (tests/support/spacegen.py): Lua == Python, rows in order or the same error

def test_random_spaces_agree_with_python():
    pytest.importorskip("hypothesis")
    spacegen = pytest.importorskip("spacegen")
    from hypothesis import HealthCheck, given, note, settings

    examples = int(os.environ.get("BEAST_LUA_EXAMPLES") or 40)

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(spacegen.spaces())
    def check(g):
        note(g.numbered())
        note(f"settings: {g.settings}")
        with tempfile.TemporaryDirectory(prefix="beast-lua-") as tmp:
            path = write_space(tmp, g.source, "generated.py")
            space = beast.load(path, settings=g.settings)
            py = PythonEnumerator(space.program)
            expected = (run_count(py), run_chunks(py, 5))
            if "NameError" in repr(expected) or "integer overflow" in repr(expected):
                return   # see the Lua backend's notes: Python-side bugs / 64-bit vs 2**53 limits
            for lua in (LuaEnumerator(space.program),
                        LuaEnumerator(space.program, force_python=tuple(space.program.funcs))):
                got = (run_count(lua), run_chunks(lua, 5))
                if "integer overflow" in repr(got):
                    continue
                assert got == expected

    check()


def test_widened_parameters_enter_as_their_locals(space_file):
    """A bool parameter the body stores an int in enters as 0/1; an int one that takes a float gets
    its "is a float" flag (ir.storage.param_entry); the results are Python's."""
    space = beast.load(space_file("""
        from beast import *
        a = iterator(range(0, 6))
        b = iterator(range(1, 4))
        even = a % 2 == 0


        @condition
        def keep(even, b):
            if b == 2:
                even = even + 3
            if b == 3:
                b = b / 2
            return (even + b) % 2 == 1 or b > 1.2
        """))
    src = print_lua(space.program)
    assert src.translated == ["_b_cond_keep"]
    head = src.text[src.text.index("local function _b_cond_keep(even, b)"):].split("\n")[1:3]
    assert head == ["    even = even and 1 or 0", "    local _b_f_b = false"]
    assert 0 < assert_same(space) < 18


def test_a_for_loop_limit_one_past_the_2_53_edge_is_no_overflow(space_file):
    """A nest loop runs to stop - 1 (or + 1 counting down): at a stop of -(2**53 - 1) counting up,
    an empty range, that limit is -2**53, exact as a double and never a value (it was reported as
    an integer overflow, for a constant stop and for a computed one)."""
    for loop in ("b = range(a - 5, -(2**53 - 1))", "b = range(a, 2**53 - 1, -1)",
                 "n = -(2**53 - 1) + a * 0\nb = range(a - 5, n)"):
        space = beast.load(space_file("from beast import *\na = range(3)\n" + loop + "\n"))
        assert assert_same(space, chunk_sizes=(4096,)) == 0, loop


def test_prelude_range_length_and_membership_are_pythons():
    """The prelude's len(range()) and `in range()` on any ends and steps within +-2**53 (their
    differences reach 2**54): Python's answers, or an overflow only for a length past 2**53."""
    from hypothesis import given, settings, strategies as st
    from beast.codegen.lua import HELPERS
    from beast.runtime.lua import _new_runtime
    rlen, inrange = _new_runtime().execute(HELPERS.replace("local _b_R = ...", "local _b_R = {}")
                                           + "\nreturn _b_rlen, _b_inrange")
    exact = st.integers(-(2**53 - 1), 2**53 - 1)
    edge = st.one_of(exact, st.sampled_from([2**53 - 1, -(2**53 - 1), 2**53 - 2, -(2**53 - 2), 0, 1, -1]))
    step = st.one_of(st.integers(-40, 40), exact).filter(bool)

    @settings(max_examples=3000, deadline=None, derandomize=True)
    @given(edge, edge, step, edge)
    def check(a, b, c, v):
        n = len(range(a, b, c))
        if n < 2**53:
            assert rlen(a, b, c, 1) == n
        inside = inrange(v, a, b, c, 1)
        assert (inside is not None) == (v in range(a, b, c))
        if a in range(a, b, c):
            assert inrange(a, a, b, c, 1) == a

    check()


def test_luajit_does_not_fuse_multiply_add():
    """a * b + c rounds twice, as in Python: the runtime's JIT runs without its fma optimization."""
    from beast.runtime.lua import _new_runtime
    rt = _new_runtime()
    status = "return table.concat({select(2, jit.status())}, ' ')"
    assert "fma" not in rt.execute(status).split()
    if rt.execute("return pcall(jit.opt.start, '+fma')"):       # where the flag exists, it shows
        assert "fma" in rt.execute(status).split()


def test_prelude_power_of_special_values_is_pythons():
    """``**`` over zeros of both signs, ones, infinities, nan and ordinary ints and floats: the
    prelude's value where Python has one (sign of zero included), an error where Python raises
    or the result is complex (``0.0 ** -inf`` is inf, not a division by zero)."""
    from lupa import luajit21 as lupa
    from beast.codegen.lua import HELPERS
    from beast.runtime.lua import _new_runtime
    power = _new_runtime().execute(HELPERS.replace("local _b_R = ...", "local _b_R = {}")
                                   + "\nreturn function(...) local r = _b_pow(...) return r, r == 0 and 1 / r < 0 end")
    values = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 0.5, -2.0, 2.5, 1e300, 0, -2, 3, 1, -1]
    for a in values:
        for b in values:
            try:
                want = a ** b
                if isinstance(want, complex):
                    want = None
            except (ZeroDivisionError, OverflowError):
                want = None
            try:
                got, negative_zero = power(a, b, 1, isinstance(a, float), isinstance(b, float))
            except lupa.LuaError:
                got = None
            if want is None or got is None:
                assert got is None and want is None, (a, b, got, want)
            elif math.isnan(want):
                assert math.isnan(got), (a, b, got)
            else:
                assert got == want and negative_zero == (want == 0 and math.copysign(1, want) < 0), \
                    (a, b, got, want)


@pytest.mark.parametrize("body", ["q = a ** 0.5\nc = condition(q > 0)\n",
                                  "@condition\ndef c(a):\n    x = a * 1.5\n    return x ** 0.5 != 0\n"])
def test_complex_power_is_reported_as_c_reports_it(space_file, body):
    """(-8) ** 0.5 is complex in Python; beast refuses it in every backend, with one message at
    the ``**`` (Lua said 'ValueError: ... (a complex number)', at another column)."""
    from conftest import have_cc
    space = beast.load(space_file("from beast import *\na = iterator([8, -8])\n" + body))
    with pytest.raises(beast.EvaluationError) as info:
        space.count(backend="lua")
    err = info.value
    what = "derived variable 'q'" if body.startswith("q") else "condition 'c'"
    assert err.message == f"a negative number raised to a fractional power (the result is complex) in {what}"
    where = (3, 4) if body.startswith("q") else (6, 11)      # at the **
    assert (err.lineno, err.col, err.config) == (*where, {"a": -8})
    with pytest.raises(beast.EvaluationError) as py_info:
        space.count(backend="python")
    assert error_key(py_info.value) == error_key(err)
    if have_cc():
        with pytest.raises(beast.EvaluationError) as c_info:
            space.count(backend="c")
        assert error_key(c_info.value) == error_key(err)


def test_a_negative_zero_reaches_a_python_function_as_itself(tmp_path):
    """lupa hands a Lua -0.0 to Python as the int 0: the stub of a function called in Python
    marks it (the prelude's _b_k0), so math.copysign sees -0.0 as Python does; an integer held as
    -0.0 in Lua (-a at a = 0) still arrives as the int 0."""
    path = write_space(tmp_path, """
        from beast import *
        import math
        a = range(-2, 3)
        b = range(0, 2)
        y = -a
        x = a * -1.0
        @condition
        def c(y, x, b):
            return (math.copysign(1, x) < 0) == (b == 1) or str(y) == "-0"
        @iterator
        def d(x, y):
            return range(int(math.copysign(2, x)) - y, 3)
        """)
    space = beast.load(path)
    assert assert_same(space) == 17
    assert space.count(backend="lua") == space.count(backend="c") == 17


@pytest.mark.parametrize("body, message", [
    ("return a // -1.5", "iterator 'b' yields a non-integer value 0.0"),         # -1 // -1.5
    ("return a * 1.0 % 1.0", "iterator 'b' yields a non-integer value 0.0"),     # -1.0 % 1.0
    ("return select(a < 0, a * 1.0, a) % -1", "iterator 'b' yields a non-integer value -0.0")])
def test_float_floor_division_and_modulo_give_pythons_signed_zero(tmp_path, body, message):
    """A zero float quotient has the sign of a / b and a zero float remainder that of b, as in
    CPython (the Lua prelude returned fmod's sign: -0.0 where Python says 0.0); the error's value
    shows it."""
    path = write_space(tmp_path, f"from beast import *\na = range(-1, 3)\n@iterator\ndef b(a):\n    {body}\n")
    space = beast.load(path)
    for backend in ("python", "c", "lua"):
        with pytest.raises(beast.EvaluationError) as info:
            space.enumerate(backend=backend)
        assert info.value.message == message, backend
    assert_same(space)


def test_an_integer_zero_becomes_a_positive_float_zero(tmp_path):
    """Python's int has no -0: -a at a = 0 is 0, and 0 * 1.0 is 0.0. LuaJIT holds -a as -0.0,
    so an int operand of float arithmetic is normalized (x + 0) before it meets the float; a
    function called in Python (math.copysign) sees 0.0, as in Python and C."""
    path = write_space(tmp_path, """
        from beast import *
        import math
        a = range(-2, 3)
        x = -a * 1.0
        y = (a * -1) / 2
        @condition
        def c(x, y):
            return math.copysign(1, x) < 0 or math.copysign(1, y) < 0
        """)
    space = beast.load(path)
    assert assert_same(space) == 3
    assert space.count(backend="lua") == space.count(backend="c") == 3
