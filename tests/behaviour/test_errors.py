"""The errors a user must get (docs/language.md, "Errors"): each at file:line:col with
the source line and a caret under the offending code, and a message that says what is wrong --
from the API (``str(err)``), and from the ``beast`` command (exit status 2, no traceback, nothing
of beast's own files on stderr). Plus division by zero while evaluating a configuration: the
message, the line, the caret and the configuration, the same in every backend.
"""
from __future__ import annotations

import os
import re

import pytest

import beast
from beast.errors import EvaluationError, SettingError, SpaceError
from conftest import available_backends, run_beast, write_space

BEAST_DIR = os.path.dirname(os.path.abspath(beast.__file__))


def check_report(err, path, line, col, message, caret=None, hint=None):
    """``str(err)``: 'path:line:col: error: message', the source line, a caret under ``caret``
    (the exact text it must underline; None: at least one ^ at the column), then the hint."""
    text = str(err)
    lines = text.splitlines()
    assert lines[0] == f"{path}:{line}:{col}: error: {message}", text
    source = open(path).read().splitlines()[line - 1].rstrip().expandtabs(1)
    assert lines[1] == "    " + source, text
    caret_line = lines[2]
    assert caret_line.startswith("    " + " " * (col - 1) + "^"), text
    assert set(caret_line.strip()) == {"^"}, text
    width = len(caret_line.strip())
    if caret is not None:
        assert source[col - 1:col - 1 + width] == caret, f"the caret underlines {source[col - 1:col - 1 + width]!r}\n{text}"
    if hint is not None:
        assert f"hint: {hint}" in lines, text
    assert err.filename == path and err.lineno == line and err.col == col - 1


def check_cli(path, *args, expect_in_stderr):
    """The command fails with status 2 and the same report, without a traceback."""
    proc = run_beast("count", path, *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert expect_in_stderr in proc.stderr
    assert "Traceback" not in proc.stderr
    assert BEAST_DIR not in proc.stderr and "beast/" not in proc.stderr.replace(path, "")
    assert "internal error" not in proc.stderr


# ---------------------------------------------------------------------------------------------
# Errors found when the space is compiled: (source, line, col, message, caret, hint)

COMPILE_ERRORS = {
    # -- unsupported syntax in a function body that a backend must translate
    "try_in_condition": ("""
        from beast import *
        a = range(3)
        @condition
        def c(a):
            try:
                return a > 1
            except Exception:
                return False
        """, 5, 5, "unsupported syntax in a beast function: 'try'", "t", None),
    "lambda_in_iterator": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            f = lambda x: x + 1
            return range(f(a))
        """, 5, 9, "unsupported syntax in a beast function: lambda", "lambda x: x + 1", None),
    "fstring_in_condition": ("""
        from beast import *
        a = range(3)
        @condition
        def c(a):
            return f"{a}" == "1"
        """, 5, 12, "unsupported syntax in a beast function: f-string", 'f"{a}"', None),
    "import_in_function": ("""
        from beast import *
        a = range(3)
        @condition
        def c(a):
            import math
            return math.sqrt(a) > 1
        """, 5, 5, "unsupported syntax in a beast function: 'import'", "import math", None),
    "with_in_function": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            with open("x") as fh:
                return 1
        """, 5, 5, "unsupported syntax in a beast function: 'with'", None, None),
    "nested_def": ("""
        from beast import *
        a = range(3)
        @condition
        def c(a):
            def helper(x):
                return x
            return helper(a) > 1
        """, 5, 5, "unsupported syntax in a beast function: 'nested def'", None, None),
    "else_on_a_loop": ("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            for i in range(a):
                yield i
            else:
                yield 9
        """, 5, 5, "unsupported syntax in a beast function: 'else' on a loop", None,
        "use a flag variable"),
    "star_args": ("""
        from beast import *
        a = range(3)
        @condition
        def c(*args):
            return False
        """, 4, 8, "unsupported syntax in a beast function: *args", "args", None),
    # -- an undefined name
    "undefined_name_at_module_level": ("""
        from beast import *
        a = range(3)
        x = blk_q + 1
        """, 3, 5, "undefined name 'blk_q'", "blk_q", None),
    "undefined_name_in_a_function": ("""
        from beast import *
        a = range(3)
        @condition
        def c(a):
            return a > limit_q
        """, 5, 16, "undefined name 'limit_q'", "limit_q", None),
    "expression_iterator_used_before_its_definition": ("""
        from beast import *
        ex_inner = range(ex_outer)
        ex_outer = range(100)
        """, 2, 18, "undefined name 'ex_outer'", "ex_outer",
        "'ex_outer' is defined later, at line 3: expression iterators must be defined before use "
        "(or use an @iterator function, which may come in any order)"),
    "parameter_naming_a_condition": ("""
        from beast import *
        a = range(3)
        low = condition(a < 1)
        @condition
        def c(a, low):
            return a > low
        """, 5, 10, "'c' reads 'low', which is a condition: functions read iterators, derived variables, "
        "settings and constants", "low",
        "a condition prunes, it has no value: name its test as a derived variable (low_test = ...), read "
        "that, and write low = condition(low_test)"),
    "function_reading_a_condition": ("""
        from beast import *
        a = range(3)
        low = condition(a < 1)
        @condition
        def c(a):
            return a > low
        """, 6, 16, "'c' reads 'low', which is a condition: functions read iterators, derived variables, "
        "settings and constants", "low",
        "a condition prunes, it has no value: name its test as a derived variable (low_test = ...), read "
        "that, and write low = condition(low_test)"),
    "parameter_naming_nothing": ("""
        from beast import *
        a = range(3)
        @condition
        def c(a, zz):
            return a > zz
        """, 4, 10, "parameter 'zz' of 'c' names no iterator, derived variable, setting or constant",
        "zz", None),
    # -- a module-level if/while on an iterator value
    "module_level_if_on_an_iterator": ("""
        from beast import *
        a = range(3)
        b = 1
        if a > 1:
            b = 2
        """, 4, 4, "module-level `if` on an iterator value", "a > 1", "use select() or a @condition"),
    "module_level_while_on_an_iterator": ("""
        from beast import *
        a = range(3)
        while a < 2:
            a = a + 1
        """, 3, 7, "module-level `while` on an iterator value", "a < 2", "use select() or a @condition"),
    "conditional_expression_on_an_iterator": ("""
        from beast import *
        a = range(3)
        b = 1 if a > 1 else 2
        """, 3, 10, "conditional expression on an iterator value", "a > 1", "use select(cond, a, b)"),
    "and_or_on_iterators": ("""
        from beast import *
        a = range(3)
        condition(a > 1 and a < 3)
        """, 3, 11, "`and`/`or` on an iterator value", "a > 1 and a < 3",
        "use & and | between truth values: (a > 1) & (b != 0) (or a @condition)"),
    "chained_comparison_on_iterators": ("""
        from beast import *
        a = range(3)
        condition(0 < a < 2)
        """, 3, 11, "chained comparison on iterator values", "0 < a < 2", None),
    "membership_of_an_iterator": ("""
        from beast import *
        a = range(3)
        condition(a in range(0, 2**40, 3))
        """, 3, 11, "`in` on an iterator value at module level", "a in range(0, 2**40, 3)",
        "test membership in a @condition function"),     # never lists the 2**40 / 3 values
    # -- a non-integer range bound
    "float_expression_range_bound": ("""
        from beast import *
        a = range(1, 5)
        b = range(1, a / 2)
        """, 3, 5, "range() stop is not an integer (it is a float expression)", "range(1, a / 2)",
        "use // for integer division"),
    "float_constant_range_bound": ("""
        from beast import *
        a = range(0.5, 3)
        """, 2, 5, "range() start is not an integer: 0.5", "range(0.5, 3)", "use // for integer division"),
    # -- an iterator that yields a non-integer (known when compiling)
    "float_in_a_value_list": ("""
        from beast import *
        a = iterator([1, 2.5])
        """, 2, 5, "iterator values must be integers, got 2.5", "iterator([1, 2.5])", None),
    "float_scalar_iterator": ("""
        from beast import *
        a = range(3)
        b = iterator(a / 2)
        """, 3, 5, "iterator value is not an integer", "iterator(a / 2)", "use // for integer division"),
}


@pytest.mark.parametrize("name", list(COMPILE_ERRORS))
def test_compile_error_report(name, tmp_path):
    text, line, col, message, caret, hint = COMPILE_ERRORS[name]
    path = write_space(tmp_path, text, f"{name}.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, line, col, message, caret, hint)


@pytest.mark.parametrize("name", list(COMPILE_ERRORS))
def test_compile_error_from_the_command(name, tmp_path):
    text, line, col, message, _, _ = COMPILE_ERRORS[name]
    path = write_space(tmp_path, text, f"{name}.py")
    check_cli(path, expect_in_stderr=f"{path}:{line}:{col}: error: {message}\n")


# An iterator expression where a list needs constant values: the message spells the expression
# as the user wrote it (never an object's repr), the caret underlines it when it is on that line.
# (source, line, col, message, caret, hint)
EXPRESSIONS_IN_A_LIST = {
    "float_expression_in_a_union": ("""
        from beast import *
        a = iterator(range(1, 4))
        b = union(range(a), [a * 1.5 // 1, 3])
        """, 3, 22, "iterator values must be integers, got a * 1.5 // 1", "a * 1.5 // 1",
        "iterator values are integers; use // for integer division"),
    "derived_variable_in_a_list": ("""
        from beast import *
        a = iterator(range(1, 4))
        x = a * 2
        b = intersection([x, 3], range(a))
        """, 4, 19, "iterator values in a list must be constants, got x", "x",
        "a value computed from iterators is an iterator of one value: union([...], x)"),
    "list_built_on_another_line": ("""
        from beast import *
        a = iterator(range(1, 4))
        vals = [3, -(a % 2) / 4 + min(a, 2), (select(a > 1, a, 2) != 0) & ~(a == 2)]
        b = union(range(a), vals)
        """, 4, 5, "iterator values must be integers, got -(a % 2) / 4 + min(a, 2)",
        "union(range(a), vals)", "iterator values are integers; use // for integer division"),
    "integer_expression_in_a_value_list": ("""
        from beast import *
        a = iterator(range(1, 4))
        b = iterator([1, (a + 1) * 3, 7])
        """, 3, 18, "iterator values in a list must be constants, got (a + 1) * 3", "(a + 1) * 3",
        "a value computed from iterators is an iterator of one value: union([...], (a + 1) * 3)"),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS_IN_A_LIST))
def test_expression_in_a_value_list(name, backend, tmp_path):
    """The same report from the API and from the command, whichever backend is asked for."""
    text, line, col, message, caret, hint = EXPRESSIONS_IN_A_LIST[name]
    path = write_space(tmp_path, text, f"{name}.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path).count(backend=backend)
    check_report(info.value, path, line, col, message, caret, hint)
    assert " object at 0x" not in str(info.value)
    check_cli(path, "--backend", backend, expect_in_stderr=str(info.value) + "\n")


def test_expression_spelled_with_every_operator():
    from beast.expr.nodes import Const, Var
    from beast.lang.vocabulary import select
    from beast.expr.nodes import spell
    a, b = Var("a"), Var("b")
    e = select((a < b) | ~(a != 2) & (b >= 1), abs(-a) ** 2 % 3, (a - b) / (b + 1.5))
    assert spell(e) == "select((a < b) | ~(a != 2) & (b >= 1), abs(-a) ** 2 % 3, (a - b) / (b + 1.5))"
    assert spell(a * Const(2), {id(a): "blk"}) == "blk * 2"


CYCLE = """
    from beast import *
    @iterator
    def a(b):
        return range(b)
    @iterator
    def b(a):
        return range(a)
"""


def test_cycle_is_an_error_that_names_the_cycle(tmp_path):
    path = write_space(tmp_path, CYCLE, "cycle.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    err = info.value
    assert re.fullmatch(r"dependency cycle: (a -> b -> a|b -> a -> b)", err.message), err.message
    assert err.filename == path and err.lineno in (2, 3, 5, 6)
    check_cli(path, expect_in_stderr=f"error: {err.message}")


def test_cycle_report_has_a_column_and_a_caret(tmp_path):
    path = write_space(tmp_path, CYCLE, "cycle.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    err = info.value
    assert err.col is not None
    check_report(err, path, err.lineno, err.col + 1, err.message)
    underlined = open(path).read().splitlines()[err.lineno - 1][err.col:]
    assert re.match(r"\b[ab]\b", underlined), "the caret is under a name of the cycle"


# ---------------------------------------------------------------------------------------------
# Settings given with -D

SETTINGS_SPACE = """
    from beast import *
    precision = setting("precision", "double", choices=["single", "double"])
    n = setting("n", 3)
    a = range(n)
"""


def test_undeclared_setting(tmp_path):
    """The report points at the declaration it was most likely meant for (the close match), else
    at the first setting the space declares, else at its beast import, and names the settings."""
    path = write_space(tmp_path, SETTINGS_SPACE, "s.py")
    with pytest.raises(SettingError) as info:
        beast.load(path, settings={"nn": "4"})
    err = info.value
    assert err.message == "setting 'nn' is not declared by s.py"
    assert err.hint == "did you mean 'n'?"
    assert (err.lineno, err.col) == (3, 4) and "^^^" in str(err)      # n = setting("n", 3)
    with pytest.raises(SettingError) as info:
        beast.load(path, settings={"zzz": "4"})
    assert info.value.hint == ("settings declared by the space: precision, n; a space declares one with "
                               "zzz = setting('zzz', default)")
    assert (info.value.lineno, info.value.col) == (2, 12)
    check_cli(path, "-D", "zzz=1", expect_in_stderr="error: setting 'zzz' is not declared by s.py")
    bare = write_space(tmp_path, "from beast import *\na = range(3)\n", "bare.py")
    with pytest.raises(SettingError) as info:
        beast.load(bare, settings={"zzz": "4"})
    assert (info.value.lineno, info.value.col) == (1, 0)


def test_setting_value_outside_its_choices(tmp_path):
    path = write_space(tmp_path, SETTINGS_SPACE, "s.py")
    with pytest.raises(SettingError) as info:
        beast.load(path, settings={"precision": "half"})
    message = "setting 'precision' = 'half' is not one of its choices: 'single', 'double'"
    check_report(info.value, path, 2, 13, message,
                 'setting("precision", "double", choices=["single", "double"])')
    check_cli(path, "-D", "precision=half", expect_in_stderr=f"{path}:2:13: error: {message}\n")


def test_setting_value_of_the_wrong_type(tmp_path):
    path = write_space(tmp_path, SETTINGS_SPACE, "s.py")
    with pytest.raises(SettingError) as info:
        beast.load(path, settings={"n": "abc"})
    check_report(info.value, path, 3, 5, "setting 'n': expected an integer, got 'abc'", 'setting("n", 3)')
    check_cli(path, "-D", "n=abc", expect_in_stderr="error: setting 'n': expected an integer, got 'abc'")
    assert "2**10" in info.value.hint
    for bad in ("2**-1", "1/2", "1 // 0", "1 << -1", "2**100000", "n + 1", "3.0", "__import__('os')"):
        with pytest.raises(SettingError, match="expected an integer"):
            beast.load(path, settings={"n": bad})


def test_an_integer_setting_may_be_integer_arithmetic(tmp_path):
    path = write_space(tmp_path, SETTINGS_SPACE, "s.py")
    for text, value in (("2**10", 1024), ("-(3 * 4)", -12), ("1 << 4", 16), ("(2**10) // 3 % 100", 41),
                        ("0x10 + 1_000", 1016), ("10**20", 10**20), ("08", 8), (" 12 ", 12), ("-0b11", -3)):
        assert beast.load(path, settings={"n": text}).settings["n"] == value, text
    assert run_beast("count", path, "-D", "n=2**3", "--backend", "python").stdout == "8\n"


def test_malformed_define_and_missing_file_and_unknown_device(tmp_path):
    path = write_space(tmp_path, SETTINGS_SPACE, "s.py")
    for args, text in ((["-D", "n"], "-D expects NAME=VALUE"),
                       (["--device", "nosuch"], "unknown device 'nosuch'")):
        check_cli(path, *args, expect_in_stderr=text)
    check_cli(str(tmp_path / "missing.py"), expect_in_stderr="cannot read space file")


def test_python_syntax_error(tmp_path):
    path = write_space(tmp_path, "from beast import *\na = range(3\n", "syn.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    assert info.value.lineno == 2 and info.value.message.startswith("syntax error")
    check_cli(path, expect_in_stderr=f"{path}:2:")


@pytest.mark.parametrize("text, line, col, message, caret", [
    ("from beast import *\na = range(3)\n@condition\ndef c(a, a):\n    return a > 1\n", 4, 10,
     "syntax error: duplicate argument 'a' in function definition", "a"),
    ("from beast import *\na = range(3)\n@condition\ndef c(a):\n    nonlocal a\n    return a > 1\n", 5, 5,
     "syntax error: name 'a' is parameter and nonlocal", "nonlocal a"),
])
def test_syntax_error_that_only_compile_finds(text, line, col, message, caret, tmp_path):
    """compile() refuses what ast.parse accepts: a normal error at file:line:col, exit status 2."""
    path = write_space(tmp_path, text, "compile_only.py")
    with pytest.raises(SpaceError) as info:
        beast.load(path)
    check_report(info.value, path, line, col, message, caret)
    check_cli(path, expect_in_stderr=f"{path}:{line}:{col}: error: {message}\n")


@pytest.mark.parametrize("text, line, col, value, caret", [
    ("from beast import *\nc = range(3)\nx = condition(c > 2**63)\n", 3, 19, 2 ** 63, "2**63"),
    ("from beast import *\nc = range(3)\nx = condition(\n    c > -2**64 + c)\n", 4, 9, -2 ** 64, "-2**64"),
    ("from beast import *\nc = range(3)\ny = iterator([1, 12345678901234567890123])\n", 3, 18,
     12345678901234567890123, "12345678901234567890123"),
    ("from beast import *\nc = range(3)\ny = iterator(union(range(c), difference([5, 2**63], [1])))\n", 3, 45,
     2 ** 63, "2**63"),
    ("from beast import *\nc = range(3)\n@condition\ndef k(c):\n    return (c + (-2**63 - 1)) % 7 == 1\n", 5, 18,
     -2 ** 63 - 1, "-2**63 - 1"),       # an inlined condition: its line was the decorator's, with no caret
])
def test_integer_literal_too_wide_for_c_points_at_the_literal(text, line, col, value, caret, tmp_path):
    path = write_space(tmp_path, text, "wide.py")
    space = beast.load(path)
    with pytest.raises(SpaceError) as info:
        space.count(backend="c")
    message = f"the integer {value} does not fit in 64 bits: beast's integers run from -2**63 to 2**63-1"
    check_report(info.value, path, line, col, message, caret, hint=None)
    assert "2.0**63" in info.value.hint
    with pytest.raises(SpaceError) as same:        # the Python backend refuses it alike
        space.count(backend="python")
    check_report(same.value, path, line, col, message, caret, hint=None)
    check_cli(path, "--backend", "c", expect_in_stderr=f"{path}:{line}:{col}: error: {message}\n")
