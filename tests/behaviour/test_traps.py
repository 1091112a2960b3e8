"""Traps in the language: what a Python programmer would misread is either Python's own
meaning, the same in every backend, or an error at its caret.

- ``&`` and ``|`` at module level: logical and/or on truth values, Python's bitwise and/or on
  integers (as in a @condition), refused between a truth value and an integer or on a float;
  ``~`` is logical not of a truth value, refused on an integer (Python's ~x is -x - 1); in a
  function body, ``~`` of a comparison (always true in Python) is refused.
- a condition's value is a truth value or an integer (``condition(a % 2)``: odd); a float is
  refused at its caret.
- reading a device attribute that does not exist is an error at the caret with the closest name;
  ``beast devices --fields`` lists every attribute a space file can read.
"""
from __future__ import annotations

import dataclasses
import os

import pytest

import beast
from beast.lang.devices import DeviceProfile, device_attributes
from beast.errors import EvaluationError, SpaceError
from conftest import ROOT, rows, run_beast, write_space
from behaviour.test_errors import check_cli, check_report


def survivors(path, backend):
    space = beast.load(path)
    return space.count(backend=backend), rows(space.enumerate(backend=backend))


# ---------------------------------------------------------------------------------------------
# & | ~ at module level


def test_bitwise_and_of_integers_means_what_a_condition_function_means(backend, tmp_path):
    """The issue's reproducer: `(block & (block - 1)) != 0` (not a power of two) kept 1 survivor at
    module level, where & was logical, and 4 in a @condition, where it is Python's bitwise and."""
    module = write_space(tmp_path, """
        from beast import *
        block = range(1, 9)
        not_a_power_of_two = condition((block & (block - 1)) != 0)
        """, "module.py")
    function = write_space(tmp_path, """
        from beast import *
        block = range(1, 9)
        @condition
        def not_a_power_of_two(block):
            return (block & (block - 1)) != 0
        """, "function.py")
    expected = (4, [(1,), (2,), (4,), (8,)])
    assert survivors(module, backend) == expected
    assert survivors(function, backend) == expected


A = [0, 1, 2, 3, 5, 6, 7, 12, -1, -2, -3, -8, -13, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 5,
     -2**32, -2**32 - 7, 2**40 + 12345, -(2**40) - 99, 2**52 + 3, -(2**52) - 5, 2**53 - 1]
B = [0, 1, 3, 6, -1, -4, -7, 2**31 + 9, -2**31, 2**32 + 3, 2**45 - 1, -(2**45) + 3, 2**53 - 1]


def test_bitwise_values_agree_in_every_backend(backend, tmp_path):
    """Python's & and | of negative numbers and of numbers past 32 bits (LuaJIT's bit library has
    32), in lets, iterator values and conditions."""
    path = write_space(tmp_path, f"""
        from beast import *
        a = iterator({A})
        b = iterator({B})
        x = iterator(a & b)
        y = iterator(a | b)
        z = iterator((a & b) | (a - 1 & 5))
        odd_and = condition((a & b) % 2 == 1)
        """, "bits.py")
    expected = [(a, b, a & b, a | b, (a & b) | (a - 1 & 5)) for a in A for b in B if (a & b) % 2 != 1]
    assert all(-2**53 < v < 2**53 for row in expected for v in row)
    count, got = survivors(path, backend)
    assert count == len(expected) and sorted(got) == sorted(expected)


def test_a_bitwise_result_of_2_to_the_53_is_an_overflow_in_lua_only(backend, tmp_path):
    """-8 & (-2**53 + 3) is -2**53: a 64-bit value (Python, C), beyond LuaJIT's exact doubles."""
    path = write_space(tmp_path, """
        from beast import *
        a = iterator([-8])
        b = iterator([-2**53 + 3])
        x = iterator(a & b)
        """, "edge.py")
    if backend != "lua":
        assert survivors(path, backend) == (1, [(-8, -2**53 + 3, -2**53)])
        return
    with pytest.raises(EvaluationError) as info:
        survivors(path, backend)
    assert info.value.message == "integer overflow in iterator 'x'" and info.value.lineno == 4


def test_logical_and_or_not_of_truth_values_are_unchanged(backend, tmp_path):
    """On truth values & | ~ stay short-circuit and, or, not: `b != 0` guards the division."""
    path = write_space(tmp_path, """
        from beast import *
        a = range(-3, 4)
        b = range(-2, 3)
        big = a > 0
        c = condition((b != 0) & (a // b > 0) | ~big & (a != -3) | (a & b == 1) & True)
        """, "logic.py")
    expected = [(a, b) for a in range(-3, 4) for b in range(-2, 3)
                if not (b != 0 and a // b > 0 or not a > 0 and a != -3 or (a & b) == 1)]
    count, got = survivors(path, backend)
    assert count == len(expected) and sorted(got) == sorted(expected)


# (expression, col, message, caret, hint) of a condition on line 3, with block = range(1, 9)
OPERATOR_ERRORS = {
    "truth_and_integer": (
        "(block > 1) & (block % 4)", 15,
        "'&' of a truth value and an integer at module level: '&' is logical and on truth values and "
        "bitwise and on integers", "(block > 1) & (block % 4)",
        "for logical and, make the integer a truth value: (block % 4) != 0; for Python's bitwise and "
        "of the two, write it in a @condition function"),
    "integer_or_constant_truth": (
        "block | (block > 3)", 15,
        "'|' of a truth value and an integer at module level: '|' is logical or on truth values and "
        "bitwise or on integers", "block | (block > 3)",
        "for logical or, make the integer a truth value: block != 0; for Python's bitwise or of the "
        "two, write it in a @condition function"),
    "truth_and_python_int": (
        "(block > 1) & 1", 15,
        "'&' of a truth value and an integer at module level: '&' is logical and on truth values and "
        "bitwise and on integers", "(block > 1) & 1", None),
    "or_of_a_float": (
        "(block > 2) | (block / 3)", 15,
        "'|' on a float (block / 3) at module level: '|' takes truth values (logical or) or integers "
        "(bitwise or)", "(block > 2) | (block / 3)",
        "compare it for a truth value ((block / 3) > 0), or use // for an integer quotient"),
    "invert_of_an_integer": (
        "(block > 2) & ~(block % 2)", 29,
        "'~' on an integer at module level: beast's ~ is logical not (of a truth value), Python's ~ "
        "of an integer is -x - 1", "~(block % 2)",
        "for logical not write (block % 2) == 0; for Python's bitwise not write -(block % 2) - 1"),
    "invert_of_a_float": (
        "~(block * 0.5)", 15, "'~' on a float at module level: ~ is logical not of a truth value",
        "~(block * 0.5)", "compare the value for a truth value: ~(block * 0.5 > 0)"),
}


@pytest.mark.parametrize("name", list(OPERATOR_ERRORS))
def test_an_operator_with_two_meanings_is_an_error_at_its_caret(name, tmp_path):
    expr, col, message, caret, hint = OPERATOR_ERRORS[name]
    path = write_space(tmp_path, f"from beast import *\nblock = range(1, 9)\nc = condition({expr})\n",
                       f"{name}.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 3, col, message, caret, hint)
    check_cli(path, expect_in_stderr=f"{path}:3:{col}: error: {message}")


def test_the_caret_finds_the_operation_among_others_on_its_line(tmp_path):
    path = write_space(tmp_path, "from beast import *\na = range(4)\nb = range(4)\n"
                                 "c = condition((a & b > 1) & (b | a > 2) | (a > 0) & (b % 3))\n", "many.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    line = open(path).read().splitlines()[3]
    check_report(info.value, path, 4, line.index("(a > 0) & (b % 3)") + 1, info.value.message,
                 "(a > 0) & (b % 3)")


def test_invert_of_a_truth_value_in_a_function_body_is_an_error(tmp_path):
    """~(a > b) in Python is -1 or -2: true either way, so the condition rejected everything."""
    path = write_space(tmp_path, """
        from beast import *
        a = range(1, 9)
        b = range(1, 9)
        @condition
        def c(a, b):
            ok = a > b and b > 1
            return ~(a > b) or ~ok and ~(b < 2 or a < 2)
        """, "body_invert.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 7, 12, "'~' of a truth value in a function body is Python's bitwise "
                 "not: ~True is -2 and ~False is -1, and both are true", "~(a > b)",
                 "use not: not (a > b) (at module level, ~ is beast's logical not)")
    check_cli(path, expect_in_stderr=f"{path}:7:12: error: '~' of a truth value")


def test_invert_of_an_integer_in_a_function_body_is_pythons(backend, tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        a = range(-3, 4)
        @condition
        def c(a):
            return ~a > 0
        """, "body_int_invert.py")
    assert survivors(path, backend) == (5, [(-1,), (0,), (1,), (2,), (3,)])


# ---------------------------------------------------------------------------------------------
# The value of a condition


def test_a_float_condition_is_an_error_at_its_caret(tmp_path):
    path = write_space(tmp_path, "from beast import *\na = range(1, 4)\nb = range(1, 4)\n"
                                 "ratio = condition(a / b)\n", "ratio.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 4, 19, "the value of a condition is a float: a / b; a condition is a "
                 "truth value (True rejects) or an integer (not 0 rejects)", "a / b",
                 "compare it (condition(a / b > 1)), or use // for an integer quotient")
    check_cli(path, expect_in_stderr=f"{path}:4:19: error: the value of a condition is a float")


@pytest.mark.parametrize("line, col, caret", [
    ("q = a / b\nc = condition(q, kind='soft')", 5, "q"),
    ("c = condition(1.5)", 4, "1.5"),
    ("c = condition(min(a * 0.5, b / 2))", 4, "min(a * 0.5, b / 2)"),
])
def test_every_float_condition_is_refused(line, col, caret, tmp_path):
    text = "from beast import *\na = range(1, 4)\nb = range(1, 4)\n" + line + "\n"
    path = write_space(tmp_path, text, "float_condition.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    lineno = text.count("\n")
    check_report(info.value, path, lineno, text.splitlines()[-1].index(caret) + 1,
                 info.value.message, caret)
    assert info.value.message.startswith(f"the value of a condition is a float: {caret};")


def test_an_inlined_condition_function_returning_a_float_is_refused(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        a = range(1, 4)
        b = range(1, 4)
        @condition
        def ratio(a, b):
            return a / b
        """, "ratio_function.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 6, 12, "the value of condition 'ratio' is a float: a / b; a condition "
                 "is a truth value (True rejects) or an integer (not 0 rejects)", "a / b",
                 "compare it (return a / b > 1), or use // for an integer quotient")


def test_an_integer_condition_is_pythons_truth_value(backend, tmp_path):
    """`condition(a % 2)` is the idiom for "a is odd": an integer rejects when it is not 0."""
    path = write_space(tmp_path, "from beast import *\na = range(-4, 5)\nodd = condition(a % 2)\n", "odd.py")
    assert survivors(path, backend) == (5, [(-4,), (-2,), (0,), (2,), (4,)])
    path = write_space(tmp_path, """
        from beast import *
        a = range(-4, 5)
        odd = condition(a % 2)
        outside = condition(a // 3)
        """, "odd_inside.py")
    assert survivors(path, backend) == (2, [(0,), (2,)])


# ---------------------------------------------------------------------------------------------
# Device attributes


def test_a_device_attribute_typo_is_an_error_at_its_caret(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        dev = device()
        blk = range(1, 65)
        sms = range(1, dev.multiprocessor_count + 1)
        """, "typo.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 4, 16, "the device has no attribute 'multiprocessor_count'",
                 "dev.multiprocessor_count", "did you mean 'multi_processor_count'? "
                 "(`beast devices --fields` lists the device's attributes)")
    check_cli(path, expect_in_stderr=f"{path}:4:16: error: the device has no attribute")


def test_a_device_attribute_typo_in_a_function_is_an_error_before_it_runs(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        dev = device()
        blk = range(1, 65)
        @condition
        def too_many(blk):
            return blk > dev.max_thread_per_block
        """, "typo_function.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 6, 18, "the device has no attribute 'max_thread_per_block'",
                 "dev.max_thread_per_block", "did you mean 'max_threads_per_block'? "
                 "(`beast devices --fields` lists the device's attributes)")


def test_a_device_attribute_nothing_resembles_lists_the_fields(tmp_path):
    path = write_space(tmp_path, "from beast import *\nx = range(device().tensor_cores)\n", "far.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 2, 11, "the device has no attribute 'tensor_cores'",
                 "device().tensor_cores", "`beast devices --fields` lists the device's attributes")


def test_any_attribute_typo_at_module_level_gets_a_caret_and_a_guess(tmp_path):
    path = write_space(tmp_path, "import math\nfrom beast import *\nx = range(1, 4)\ny = x * math.pie\n",
                       "math_typo.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, 4, 9, "AttributeError: module 'math' has no attribute 'pie'",
                 "math.pie", "did you mean 'pi'?")


def test_devices_fields_lists_every_field_with_unit_and_meaning():
    listed = {name: (unit, meaning) for name, unit, meaning in device_attributes()}
    for f in dataclasses.fields(DeviceProfile):
        assert f.name in listed and all(listed[f.name]), f.name
    proc = run_beast("devices", "--fields")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for name, unit, meaning in device_attributes():
        assert any(line.split()[:2] == [name, unit] and line.endswith(meaning) for line in lines), name
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        assert "beast devices --fields" in fh.read()


def test_every_listed_attribute_can_be_read_in_a_space(tmp_path):
    names = [name.split("(")[0] for name, _, _ in device_attributes()]
    reads = "\n".join(f"v{i} = dev.{name}" for i, name in enumerate(names))
    path = write_space(tmp_path, f"from beast import *\ndev = device()\n{reads}\na = range(dev.warp_size)\n")
    assert beast.load(path, device="h100").count() == 32


def test_the_intervals_of_bitwise_results_hold_every_value():
    """The Lua nest leaves out an overflow check where the interval of a & b or a | b stays inside
    2**53: the interval must hold every result (brute force over small intervals)."""
    import itertools
    from beast.ir.intervals import binop
    bounds = [(0, 0), (0, 5), (3, 9), (-1, 0), (-8, -3), (-6, 7), (-20, 13), (16, 33)]
    for op, a, b in itertools.product("&|", bounds, bounds):
        lo, hi = binop(op, a, b)
        for x in range(a[0], a[1] + 1):
            for y in range(b[0], b[1] + 1):
                value = x & y if op == "&" else x | y
                assert lo <= value <= hi, (op, a, b, x, y)
