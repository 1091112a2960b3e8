"""Errors while a space runs: each is the same EvaluationError at the user's line, with the
configuration, in every backend."""
from __future__ import annotations

import os
import re

import pytest

import beast
from beast.errors import EvaluationError, SettingError, SpaceError
from conftest import available_backends, run_beast, write_space
from behaviour.test_errors import (check_cli, check_report)


# ---------------------------------------------------------------------------------------------
# Errors while evaluating a configuration: in every backend alike

EVAL_ERRORS = {
    "division_in_a_derived_variable": ("""
        from beast import *
        a = range(3)
        b = range(2)
        q = a // b
        condition(q > 5)
        """, 4, 5, "division by zero in derived variable 'q'", "a // b", {"a": 0, "b": 0}),
    "true_division_in_a_condition": ("""
        from beast import *
        a = range(-1, 3)
        condition(3 / a > 1)
        """, 3, 11, "division by zero in condition 'condition_line_3'", "3 / a", {"a": 0}),
    "modulo_in_a_function": ("""
        from beast import *
        a = range(3)
        @condition
        def c(a):
            x = a - 1
            return 10 % x == 0
        """, 6, 12, "modulo by zero in condition 'c'", "10 % x", {"a": 1}),
    "division_in_a_range_bound": ("""
        from beast import *
        a = range(3)
        b = range(0, 10 // a)
        """, 3, 14, "division by zero in iterator 'b'", "10 // a", {"a": 0}),
    "float_division_in_a_deferred_iterator": ("""
        from beast import *
        a = range(2, -1, -1)
        @iterator
        def b(a):
            return range(int(6.0 / a))
        """, 5, 22, "division by zero[ in iterator 'b']", "6.0 / a", {"a": 0}),
    "non_integer_range_bound_at_run_time": ("""
        from beast import *
        a = range(1, 5)
        @iterator
        def b(a):
            return range(1, a / 2)
        """, 5, 12, "range() bound is not an integer ('float')", "range(1, a / 2)", {"a": 1}),
    # Python converts start, stop and step before it tests the step for zero
    "non_integer_range_start_before_a_zero_step_in_a_function": ("""
        from beast import *
        a = range(1, 3)
        @iterator
        def b(a):
            x = a / 2
            return range(x, 5, a - a)
        """, 6, 12, "range() bound is not an integer ('float')", "range(x, 5, a - a)", {"a": 1}),
    "non_integer_range_start_before_a_zero_step_in_the_nest": ("""
        from beast import *
        a = range(1, 3)
        x = select(a > 1, a, a / 2)
        b = range(x, 5, a - a)
        """, 4, 5, "range() bound is not an integer ('float') in iterator 'b'", "range(x, 5, a - a)",
        {"a": 1}),
    # a generator's return value is evaluated (and its error raised) although it is dropped
    "division_in_the_return_value_of_a_generator": ("""
        from beast import *
        a = range(1, 3)
        @iterator
        def b(a):
            yield 1
            return a // (a - a)
        """, 6, 12, "division by zero[ in iterator 'b']", "a // (a - a)", {"a": 1}),
}


def _message_matches(expected, got):
    """The name of an unnamed condition is beast's own choice; "[...]" is an optional part."""
    pattern = re.escape(expected).replace("condition_line_3", r"\S+")
    pattern = re.sub(r"\\\[(.*?)\\\]", r"(?:\1)?", pattern)
    return re.fullmatch(pattern, got)


@pytest.mark.parametrize("name", list(EVAL_ERRORS))
def test_evaluation_error(name, backend, tmp_path, request):
    text, line, col, message, caret, config = EVAL_ERRORS[name]
    path = write_space(tmp_path, text, f"{name}.py")
    space = beast.load(path)
    for call, threads in ((space.count, None), (space.enumerate, None), (space.count, 3),
                          (space.enumerate, 3)):
        with pytest.raises(EvaluationError) as info:
            call(backend=backend, threads=threads)
        err = info.value
        assert _message_matches(message, err.message), err.message
        assert err.config == config
        check_report(err, path, line, col, err.message, caret)
        cfg = ", ".join(f"{k}={v}" for k, v in config.items())
        assert str(err).splitlines()[-1] == f"configuration: {cfg}"


@pytest.mark.parametrize("name", ["division_in_a_derived_variable", "modulo_in_a_function"])
def test_evaluation_error_from_the_command(name, tmp_path):
    text, line, col, message, _, config = EVAL_ERRORS[name]
    path = write_space(tmp_path, text, f"{name}.py")
    check_cli(path, expect_in_stderr=f"{path}:{line}:{col}: error: {message}\n")
    proc = run_beast("enumerate", path, "-o", tmp_path / "out.csv")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.csv").exists()
    assert [p.name for p in tmp_path.iterdir()] == [f"{name}.py"], "no temporary file is left behind"


NON_INTEGER_YIELDS = {
    "closure_yields_a_float": ("""
        from beast import *
        a = range(1, 3)
        @iterator
        def b(a):
            yield a
            yield a / 2
        """, (3, 4, 6)),
    "deferred_returns_a_float": ("""
        from beast import *
        a = range(1, 3)
        @iterator
        def b(a):
            return a / 2
        """, (3, 4, 5)),
}


@pytest.mark.parametrize("name", list(NON_INTEGER_YIELDS))
def test_iterator_yielding_a_non_integer_at_run_time(name, backend, tmp_path):
    text, lines = NON_INTEGER_YIELDS[name]
    path = write_space(tmp_path, text, f"{name}.py")
    space = beast.load(path)
    with pytest.raises(EvaluationError) as info:
        space.enumerate(backend=backend)
    err = info.value
    assert err.message == "iterator 'b' yields a non-integer value 0.5"
    assert err.filename == path and err.lineno in lines
    assert err.config["a"] == 1


@pytest.mark.parametrize("name", list(NON_INTEGER_YIELDS))
def test_iterator_yielding_a_non_integer_has_a_caret(name, tmp_path, backend, request):
    text, lines = NON_INTEGER_YIELDS[name]
    path = write_space(tmp_path, text, f"{name}.py")
    with pytest.raises(EvaluationError) as info:
        beast.load(path).enumerate(backend=backend)
    err = info.value
    assert err.col is not None
    check_report(err, path, err.lineno, err.col + 1, err.message)


# Errors in code that beast rewrites (bindings replaced by a later line and inlined into their
# readers, @iterator functions inlined into expressions, count()'s shortcut over several loops)
# still name the line and the operation that failed.

REWRITTEN = {
    "binding_replaced_under_a_module_level_if": ("""
        from beast import *
        mode = setting("mode", "b", choices=["a", "b"])
        a = range(3)
        q = 6 // a
        if mode == "b":
            q = q + 1
        condition(q > 100)
        """, 4, 5, "6 // a", {"a": 0}),
    "binding_inlined_into_the_condition_that_read_it": ("""
        from beast import *
        a = range(3)
        q = 6 // a
        c = condition(q > 100)
        q = q + 1
        d = condition(q > 200)
        """, 3, 5, "6 // a", {"a": 0}),
    "inlined_iterator_function": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            if 6 // a > 2:
                return a
            else:
                return 0
        """, 5, 8, "6 // a", {"a": 0}),
    "count_over_several_loops": ("""
        from beast import *
        a = range(2)
        b = range(3)
        c = range(10 // a)
        """, 4, 11, "10 // a", None),
}


@pytest.mark.parametrize("name", list(REWRITTEN))
def test_evaluation_error_in_rewritten_code_names_the_failing_line(name, tmp_path, backend, request):
    text, line, col, caret, config = REWRITTEN[name]
    path = write_space(tmp_path, text, f"{name}.py")
    for settings in ({"mode": "a"}, {"mode": "b"}) if "mode" in text else (None,):
        space = beast.load(path, settings=settings)
        for call in (space.count, space.enumerate):
            with pytest.raises(EvaluationError) as info:
                call(backend=backend)
            err = info.value
            assert re.match(r"division by zero", err.message)
            check_report(err, path, line, col, err.message, caret)
            if config is not None:
                assert err.config == config


def test_the_first_error_in_enumeration_order_whatever_the_threads(tmp_path, backend):
    """A space whose configurations fail in many places: every backend, with any number of
    threads, reports the first failure in enumeration order."""
    path = write_space(tmp_path, """
        from beast import *
        a = range(40)
        b = range(40)
        c = range(8)
        q = 1000 // (a * b - 600 + c)
        condition(q > 10 ** 6)
    """, "many.py")
    space = beast.load(path)
    with pytest.raises(EvaluationError) as info:
        space.enumerate(backend="python")
    first = info.value
    for threads in (None, 1, 2, 4):
        for call in (space.enumerate, space.count):
            with pytest.raises(EvaluationError) as info:
                call(backend=backend, threads=threads)
            err = info.value
            assert (err.message, err.lineno, err.config) == (first.message, first.lineno, first.config)


def test_an_iterator_value_past_64_bits_is_the_same_error_in_python_and_c(tmp_path):
    path = write_space(tmp_path, "from beast import *\na = iterator(range(0, 3))\n"
                                 "b = iterator(a * 2**62 + 2**62)\n")
    space = beast.load(path)
    errors = {}
    for backend in [b for b in ("python", "c") if b in available_backends()]:
        with pytest.raises(beast.EvaluationError) as info:
            space.enumerate(backend=backend)
        err = info.value
        errors[backend] = (err.message, err.lineno, err.col, dict(err.config))
    assert errors and all(v == ("integer overflow in iterator 'b'", 3, 4, {"a": 1}) for v in errors.values())


@pytest.mark.parametrize("expr", ["abs(a)", "a // -1", "abs(a) + 0"])
def test_overflow_of_abs_and_floor_division_at_the_bottom_of_64_bits(expr, tmp_path):
    """abs(-2**63) and -2**63 // -1 leave 64 bits: C reports it, so the Python backend checks the
    let's value too (it checked only + - * ** and unary minus). (Lua reports -2**63 itself: 2**53.)"""
    path = write_space(tmp_path, f"""
        from beast import *
        a = iterator([5, -2**63])
        b = {expr}
        c = condition(b > 7)
        """)
    for backend in [b for b in ("python", "c") if b in available_backends()]:
        with pytest.raises(EvaluationError) as info:
            beast.load(path).enumerate(backend=backend)
        err = info.value
        assert err.message == "integer overflow in derived variable 'b'", backend
        assert err.lineno == 3 and err.config == {"a": -2**63}, backend


@pytest.mark.parametrize("expr", ["2**(a + 62)", "(-2)**(a + 63) // 2"])
def test_overflow_of_a_power_that_may_be_a_float(expr, tmp_path):
    """int ** int is a float for a negative exponent, so the let's static type is num: the Python
    backend checked only int lets, and counted 2**63 where C reports the overflow."""
    path = write_space(tmp_path, f"""
        from beast import *
        a = iterator([0, -70, 1])
        b = {expr}
        c = condition(b == 7)
        """)
    for backend in [b for b in ("python", "c") if b in available_backends()]:
        with pytest.raises(EvaluationError) as info:
            beast.load(path).count(backend=backend)
        err = info.value
        assert (err.message, err.lineno, err.config) == ("integer overflow in derived variable 'b'", 3, {"a": 1})


def errors_in_every_backend(path, *fields):
    """The set of (``fields`` of the error, and repr of its configuration) that count() raises in
    each available backend (one element: they all agree)."""
    seen = set()
    for backend in available_backends():
        with pytest.raises(EvaluationError) as info:
            beast.load(path).count(backend=backend)
        seen.add(tuple(getattr(info.value, f) for f in fields) + (repr(info.value.config),))
    return seen


def test_len_of_a_range_past_2_63_values_is_an_integer_overflow_in_every_backend(tmp_path):
    """Python's len() raises OverflowError past 2**63 - 1 values; C wrapped the length to a negative
    number and went on. Every backend now says "integer overflow" at the len() call, with the hint."""
    path = write_space(tmp_path, "from beast import *\na = range(3)\n@condition\ndef c(a):\n"
                                 "    return len(range(-2**63, 2**63 - 3 + a)) % 7 == 1\n", "len_wide.py")
    assert errors_in_every_backend(path, "message", "lineno", "col", "end_col", "hint") == {
        ("integer overflow", 5, 11, 44, "integers are 64-bit in every backend", repr({"a": 0}))}


def test_a_float_power_past_the_largest_float_says_so_in_every_backend(tmp_path):
    """Python's OverflowError text is "(34, 'Numerical result out of range')" (errno ERANGE). The
    condition is inlined: the error was at its decorator's line, with no caret."""
    path = write_space(tmp_path, "from beast import *\na = range(3)\n@condition\ndef c(a):\n"
                                 "    return 10.0 ** (a * 200) > 5\n", "float_pow.py")
    assert errors_in_every_backend(path, "message", "lineno", "col") == {    # (inlined: at its name, as C's overflow)
        ("float overflow (the result is beyond the largest float, about 1.8e308) in condition 'c'", 4, 4,
         repr({"a": 2}))}


@pytest.mark.parametrize("statement, line, col", [("return l[x] > 0", 7, 11), ("l[x] = 5\n    return l[0] > 0", 7, 4)])
def test_a_float_list_index_is_the_same_type_error_in_every_backend(statement, line, col, tmp_path):
    """Lua replayed the index with the float flag read from the wrong operand, and said
    "IndexError: list index out of range"."""
    path = write_space(tmp_path, "from beast import *\na = range(3)\n@condition\ndef c(a):\n    l = [1, 2, 3]\n"
                                 f"    x = a if a > 5 else a / 1\n    {statement}\n", "float_index.py")
    assert errors_in_every_backend(path, "message", "lineno", "col") == {
        ("TypeError: list indices must be integers or slices, not float", line, col, repr({"a": 0}))}


def test_more_configurations_than_64_bits_count_is_the_same_error_in_every_backend(tmp_path):
    """C said it with a configuration (a=0, b=0) that has nothing to do with it; Python answered
    2**64; Lua said "integer overflow in iterator 'a'". Past 2**53 (and below 2**63) only Lua
    fails, with its own hint, and auto then counts in C."""
    huge = beast.load(write_space(tmp_path, "from beast import *\na = range(2**31)\nb = range(2**31)\n"
                                            "c = range(4)\n", "huge.py"))
    for backend in [b for b in ("c", "python") if b in available_backends()]:
        with pytest.raises(EvaluationError) as info:
            huge.count(backend=backend)
        err = info.value
        assert (err.message, err.lineno, err.config) == ("the number of configurations does not fit in 64 bits",
                                                         None, {}), backend
        assert "-D" in err.hint
    big = beast.load(write_space(tmp_path, "from beast import *\na = range(2**20)\nb = range(2**20)\n"
                                           "c = range(2**14)\n", "big.py"))
    assert big.count(backend="python") == big.count(backend="auto") == 2 ** 54
    if "lua" in available_backends():
        for space in (huge, big):
            with pytest.raises(EvaluationError) as info:
                space.count(backend="lua")
            assert info.value.message.startswith("the number of configurations does not fit in the Lua")
            assert "2**53" in info.value.hint and info.value.config == {}


def test_one_range_of_2_63_values_is_a_count_past_64_bits_in_python_as_in_c(tmp_path):
    """len() of a range past sys.maxsize is an OverflowError in Python: the Python backend said
    "integer overflow in iterator 'a'" where C says the count does not fit (the values do)."""
    for text in ("a = range(-2**62, 2**62)\n", "b = range(2)\na = range(-2**62, 2**62 - b)\n"):
        space = beast.load(write_space(tmp_path, "from beast import *\n" + text, "r63.py"))
        for backend in [b for b in ("c", "python") if b in available_backends()]:
            with pytest.raises(EvaluationError) as info:
                space.count(backend=backend)
            assert info.value.message == "the number of configurations does not fit in 64 bits", backend


def test_a_negative_zero_iterator_value_is_shown_as_minus_zero_in_every_backend(tmp_path):
    """lupa hands a Lua -0.0 to Python as the int 0, and a deferred iterator's scalar was rebuilt
    as s0 + 0 * 0 (0.0): Lua said "a non-integer value 0.0", with b=0.0."""
    path = write_space(tmp_path, "from beast import *\na = range(-1, 3)\n@iterator\ndef b(a):\n    x = 0\n"
                                 "    x = x / a\n    return x\n", "negative_zero.py")
    assert errors_in_every_backend(path, "message", "lineno") == {
        ("iterator 'b' yields a non-integer value -0.0", 4, repr({"a": -1, "b": -0.0}))}


def test_an_integer_that_luajit_holds_as_minus_zero_is_shown_as_0(tmp_path):
    """-x for x = 0 is -0.0 in LuaJIT: an integer iterator's value in an error's configuration is
    0, as in Python and C, not -0.0 (the error handler's mark of -0.0 is for floats)."""
    path = write_space(tmp_path, "from beast import *\ni0 = range(1)\n@iterator\ndef i2(i0):\n    x = -i0\n"
                                 "    return range(x, x + 1)\nc = condition(i2 // i0 > 1)\n", "minus_zero_int.py")
    assert errors_in_every_backend(path, "message") == {("division by zero in condition 'c'", repr({"i0": 0, "i2": 0}))}


@pytest.mark.parametrize("expr, message", [
    ("1 << a", "'<<' on an iterator value"), ("(a + 1) >> 1", "'>>' on an iterator value"),
    ("a ^ 1", "'^' on an iterator value"), ("a @ a", "'@' on an iterator value"),
    ("int(a * 0.5)", "int() of an iterator value"), ("round(a / 2)", "round() of an iterator value"),
    ("float(a)", "float() of an iterator value"), ("math.floor(a / 2)", "floor() of an iterator value"),
    ("math.ceil(a / 2)", "ceil() of an iterator value")])
def test_python_operations_beast_does_not_have_are_errors_at_their_caret(expr, message, tmp_path):
    """Python's TypeError named beast's own classes ("unsupported operand type(s) for <<: 'int' and
    'Var'", "float() argument must be ... not 'Var'") with no caret, and int() gave __index__'s
    message ("used where a plain integer is needed") at the range() around it."""
    path = write_space(tmp_path, f"import math\nfrom beast import *\na = range(3)\nb = min(3, {expr})\n", "op.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    err = info.value
    assert err.message.startswith(f"{message} at module level")
    assert (err.lineno, err.col, err.end_col) == (4, 11, 11 + len(expr)) and "@condition" in err.hint
    check_cli(path, expect_in_stderr=f"{path}:4:12: error: {message}")


def test_zero_to_a_negative_power_is_at_the_power_in_every_backend(tmp_path):
    """Python's ZeroDivisionError for 0 ** -1 had no caret: only /, // and % were looked for."""
    path = write_space(tmp_path, "from beast import *\na = range(3)\nb = range(3)\nd = a ** -1\n"
                                 "c = condition(d > 0.4)\n", "zero_power.py")
    assert errors_in_every_backend(path, "message", "lineno", "col", "end_col") == {
        ("division by zero in derived variable 'd'", 4, 4, 11, repr({"a": 0}))}


@pytest.mark.parametrize("backend", ["auto", *available_backends()])
def test_a_constant_range_past_sys_maxsize_is_a_users_error(backend, tmp_path):
    """len() of a range stops at 2**63 - 1: with -D lim=10**20, auto's work estimate, the constant
    folding of ranges and the loop lowering raised OverflowError ("beast: internal error")."""
    path = write_space(tmp_path, "from beast import *\nlim = setting('lim', 3)\na = range(lim)\nb = range(3)\n",
                       "huge_setting.py")
    with pytest.raises((SpaceError, EvaluationError)) as info:
        beast.load(path, settings={"lim": str(10 ** 20)}).count(backend=backend)
    assert info.value.filename == path and info.value.lineno == 3
    check_cli(path, "-D", f"lim={10 ** 20}", "--backend", backend, expect_in_stderr=f"{path}:3")


# ---------------------------------------------------------------------------------------------
# A file that forgot `from beast import *`: Python's range() makes constants, not iterators

def test_a_file_without_the_import_is_told_to_import_beast(tmp_path):
    hint = "add `from beast import *` at the top of the file"
    # nothing declared: the count would be 1 (one empty configuration), which is never what was meant
    path = write_space(tmp_path, "a = range(10)\nb = 3\n", "plain.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 1, 5, "'a' is Python's range, not an iterator: the file does not import beast",
                 "range(10)", hint)
    check_cli(path, expect_in_stderr="the file does not import beast")
    # Python's range() of a range
    path = write_space(tmp_path, "a = range(10)\nb = range(a)\n", "typeerror.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    assert info.value.lineno == 2 and info.value.message.startswith("TypeError")
    assert info.value.hint.endswith(hint)
    # beast's names, undefined (with a partial import too)
    for head in ("", "from beast import range\n"):
        path = write_space(tmp_path, head + "a = range(3)\n@condition\ndef c(a):\n    return a > 1\n", "names.py")
        with pytest.raises(SpaceError) as info:
            beast.load(path)
        check_report(info.value, path, 2 + bool(head), 2, "undefined name 'condition'", "condition",
                     "'condition' is beast's: " + hint)


def test_a_file_that_imports_beast_may_hold_python_ranges_and_no_iterator(tmp_path):
    for text in ("import beast\nR = range(4)\n", "from beast import *\n", "from beast import setting\nR = range(3)\n"):
        path = write_space(tmp_path, text, "ok.py")
        assert beast.load(path).count(backend="python") == 1


def test_a_string_in_the_configuration_is_quoted(backend, tmp_path):
    """A deferred iterator that returns a string yields its characters: the configuration says
    b='a', which cannot be read as "b equals the iterator a"."""
    path = write_space(tmp_path, 'from beast import *\na = range(3)\n@iterator\ndef b(a):\n    return "abc"\n', "s.py")
    with pytest.raises(EvaluationError) as info:
        beast.load(path).enumerate(backend=backend)
    assert info.value.message == "iterator 'b' yields a non-integer value 'a'"
    assert str(info.value).splitlines()[-1] == "configuration: a=0, b='a'"


def test_the_report_shows_the_file_as_it_is_now(tmp_path):
    """A file edited and loaded again in the same process (a notebook): the report quotes the new
    line, not the one Python's line cache kept from the first report."""
    path = write_space(tmp_path, "from beast import *\na = range(3)\nb = range(a, zz)\n", "edited.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    assert "b = range(a, zz)" in str(info.value)
    with open(path, "w") as fh:
        fh.write("from beast import *\na = range(3)\nbb = range(a, 2 * zz)\n")
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 3, 19, "undefined name 'zz'", "zz")


def test_a_python_error_at_module_level_has_its_caret_under_the_call_it_names(tmp_path):
    path = write_space(tmp_path, "from beast import *\na = range(3)\nb = iterator(range(a, 4), range(2))\n", "two.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 3, 5, "TypeError: iterator() takes 1 positional argument but 2 were given",
                 "iterator(range(a, 4), range(2))")


def test_len_of_a_huge_range_at_module_level(tmp_path):
    """Python's OverflowError names no call: the caret goes under len(), and the hint says how to
    count the range instead."""
    path = write_space(tmp_path, "from beast import *\nn = len(range(10**20))\na = range(3)\n", "huge.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 2, 5, "OverflowError: Python int too large to convert to C ssize_t",
                 "len(range(10**20))")
    assert "(stop - start + step - 1) // step" in info.value.hint
