"""The desugaring of body expressions (beast.ir.desugar): and/or, chained comparisons, if-else,
comprehensions and the folds sum/min/max/all/any become statements once, for C and Lua alike.

Random @condition bodies built from those constructs (lazy operands that divide by zero, folds
over empty ranges, comprehension variables that shadow locals, folds in while tests) must give
exactly what Python gives, rows or error, in every backend, and must be translated, not
tabulated (C) or called back in Python (Lua).
"""
from __future__ import annotations

import os
import textwrap

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import beast
from beast.expr.nodes import walk
from beast.ir.body import Chain, Comp, Fold, PyBool, Untranslatable, walk_body
from beast.ir.lower import lower_function
from conftest import available_backends, write_space
from behaviour.test_oracle import assert_backends_agree, outcome

AVAILABLE = available_backends()
NAMES = ("a", "b", "x")          # x: a local that comprehensions shadow


def _exprs(depth):
    atom = st.one_of(st.sampled_from(NAMES), st.integers(-3, 4).map(str))
    if depth == 0:
        return atom
    sub = _exprs(depth - 1)
    arith = st.tuples(sub, st.sampled_from(["+", "-", "*", "//", "%"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
    cmp = st.tuples(sub, st.sampled_from(["<", "<=", "==", "!="]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
    boolean = st.tuples(sub, st.sampled_from(["and", "or"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
    chain = st.tuples(sub, sub, sub).map(lambda t: f"({t[0]} < {t[1]} <= {t[2]})")
    ifexp = st.tuples(sub, sub, sub).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})")
    bound = st.one_of(sub, st.integers(-1, 4).map(str))
    gen = st.tuples(st.sampled_from(["x", "y"]), bound, st.one_of(st.none(), sub)).map(
        lambda t: f"for {t[0]} in range({t[1]})" + (f" if {t[2]}" if t[2] else ""))
    gens = st.lists(gen, min_size=1, max_size=2).map(" ".join)
    fold = st.tuples(st.sampled_from(["sum", "min", "max", "any", "all", "len"]), sub, gens,
                     st.booleans()).map(
        lambda t: f"{t[0]}([{t[1]} {t[2]}])" if t[3] or t[0] == "len" else f"{t[0]}({t[1]} {t[2]})")
    over_range = st.tuples(st.sampled_from(["sum", "min", "max"]), bound).map(lambda t: f"{t[0]}(range({t[1]}))")
    return st.one_of(atom, arith, cmp, boolean, chain, ifexp, fold, over_range)


@st.composite
def bodies(draw):
    lines = ["x = a - b"]
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["assign", "if", "while", "list"]))
        e = draw(_exprs(2))
        if kind == "assign":
            lines.append(f"x = {e}")
        elif kind == "if":
            lines += [f"if {e}:", f"    x = {draw(_exprs(1))}", "else:", f"    x = x + 1"]
        elif kind == "while":
            lines += ["i = 0", f"while i < 3 and {e}:", "    i += 1", "x = x + i"]
        else:
            lines += [f"L = [{draw(_exprs(1))} for y in range(b + 2)]", "x = x + sum(L) + len(L)"]
    lines.append(f"return {draw(_exprs(2))}")
    return "\n".join(lines)


def _space(body):
    return ("from beast import *\n\na = iterator(range(-2, 4))\nb = iterator(range(-1, 3))\n\n"
            "@condition\ndef c(a, b):\n" + textwrap.indent(body, "    ") + "\n")


@settings(max_examples=int(os.environ.get("BEAST_DESUGAR_EXAMPLES") or 25), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(body=bodies())
def test_desugared_bodies_match_python_in_every_backend(tmp_path_factory, body):
    text = _space(body)
    note(text)
    space = beast.load(write_space(tmp_path_factory.mktemp("d"), text))
    translated = True
    for info in space.program.funcs.values():      # none when the front end inlined the body
        try:
            _assert_desugared(lower_function(info, ["int"] * len(info.node_args)))
        except Untranslatable as why:              # left to Python, on purpose
            assert "before binding it" in why.reason
            translated = False
    outcomes = {b: outcome(space, b) for b in AVAILABLE}
    assert_backends_agree(outcomes)
    if not translated:
        return
    if "c" in AVAILABLE:
        assert space.enumerator("c").source.tabulated == ()
    if "lua" in AVAILABLE:
        assert space.enumerator("lua").source.fallbacks == {}


def _assert_desugared(lowered):
    for stmt in walk_body(lowered.body):
        for e in _stmt_exprs(stmt):
            assert not any(isinstance(x, (PyBool, Chain, Comp)) or isinstance(x, Fold) and x.func != "len"
                           for x in walk(e)), "left for the printers"


def _stmt_exprs(stmt):
    for field in ("value", "test", "iterable", "container", "index"):
        e = getattr(stmt, field, None)
        if e is not None and hasattr(e, "children"):
            yield e
    yield from (v for v in getattr(stmt, "values", ()) if hasattr(v, "children"))


SPACE = """
from beast import *

a = iterator(range(-2, 4))
b = iterator(range(-1, 3))

@condition
def c(a, b):
{body}
"""


@pytest.mark.parametrize("body,error", [
    # Python evaluates a // b before the sum: the division's error comes first
    ("return a // (b - b) + sum(x for x in range(a))", "division by zero"),
    # the right operand of `and` never runs when the left is false
    ("return a > 100 and min(range(-a)) > 0", None),
    # min() of nothing, reported at the call
    ("x = 5\nreturn min(y for y in range(a) if y > x)", "empty"),
    # a comprehension reads its own variable before a later generator binds it (Python raises)
    ("x = a - b\nreturn sum(a for y in range(a) if x for x in range(a))", "x"),
    ("return [1 for y in range(2) for z in range(z)]", "z"),
    # a comprehension's variable does not leak into the function
    ("x = 7\nL = [x * 2 for x in range(b + 1)]\nreturn x != 7 or len(L) > 2", None),
])
def test_desugaring_keeps_python_order_and_scope(tmp_path, body, error):
    space = beast.load(write_space(tmp_path, SPACE.format(body=textwrap.indent(body, "    "))))
    outcomes = {b: outcome(space, b) for b in AVAILABLE}
    assert_backends_agree(outcomes)
    result = next(iter(outcomes.values()))
    if error is None:
        assert result[0] == "ok" and result[1], result
    else:
        assert result[0] == "error" and error in result[1], result


def test_a_scalar_that_fails_is_evaluated_when_counted(tmp_path):
    """The count of a nest that only multiplies still evaluates a scalar that can fail."""
    path = write_space(tmp_path, "from beast import *\ni0 = range(1)\ni1 = range(abs(i0) + 1)\n"
                                 "i2 = iterator(i0 // i0)\n")
    space = beast.load(path)
    for b in AVAILABLE:
        with pytest.raises(beast.EvaluationError, match="division by zero"):
            space.count(backend=b)


def test_many_folds_in_one_function_stay_within_luajits_local_limit(tmp_path):
    """The desugaring's temporaries live in a Scope around their statement (Lua: a do ... end
    block), so a long body does not reach LuaJIT's 200 locals per function."""
    lines = ["from beast import *", "a = iterator(range(1, 4))", "b = iterator(range(0, 3))",
             "@condition", "def c(a, b):", "    t = 0"]
    lines += [f"    t = t + min(x * {i % 5 + 1} for x in range(a + 1) if x != b + 5) + sum(y for y in range(b + 1))"
              for i in range(70)]
    lines.append("    return t % 11 == 0")
    space = beast.load(write_space(tmp_path, "\n".join(lines) + "\n"))
    outcomes = {b: outcome(space, b) for b in AVAILABLE}
    assert_backends_agree(outcomes)
    assert next(iter(outcomes.values()))[0] == "ok"
    if "lua" in AVAILABLE:
        assert space.enumerator("lua").source.fallbacks == {}
    if "c" in AVAILABLE:
        assert space.enumerator("c").source.tabulated == ()


@pytest.mark.parametrize("body, error", [
    ("return any([6 // x > 2 for x in [1, a]])", True),      # a list is made whole: a = 0 fails
    ("return all([6 // x < 0 for x in [1, a]])", True),
    ("return any(list(6 // x > 2 for x in [1, a]))", True),
    ("return any(6 // x > 2 for x in [1, a])", False),       # a generator stops at the first True
    ("return all(6 // x < 0 for x in [1, a])", False),       # ... and at the first False
])
def test_all_and_any_over_a_list_comprehension_make_the_whole_list(tmp_path, body, error):
    path = write_space(tmp_path, "from beast import *\na = range(0, 3)\n\n@condition\ndef c(a):\n    "
                       + body + "\n")
    space = beast.load(path)
    got = {b: outcome(space, b) for b in AVAILABLE}
    assert_backends_agree(got)
    result = next(iter(got.values()))
    assert (result[0] == "error") == error, result
    if error:
        assert "division by zero" in result[1] and result[4] == {"a": 0}


@pytest.mark.parametrize("body", [
    "v = 1 // a\n    return False",                 # a local never read
    "v = a ** -2\n    return False",
    "v = 1 / a\n    return False",
    "v = 1 % a\n    v = 3\n    return v > 5",       # overwritten before it is read
    "v = 6 // a\n    return a > 5 and v > 2",       # read only where `and` may skip it
])
def test_a_local_that_raises_raises_though_its_value_is_unused(tmp_path, body):
    """Python evaluates a local where it is assigned: its error stands even when the value is
    never used, in a @condition and in a deferred @iterator, in every backend."""
    for text in (f"@condition\ndef c(a):\n    {body}\n",
                 f"@iterator\ndef b(a):\n    {body.replace('return', 'w =')}\n    return range(0, 2)\n"):
        path = write_space(tmp_path, "from beast import *\na = range(-1, 2)\n\n" + text)
        space = beast.load(path)
        got = {b: outcome(space, b) for b in AVAILABLE}
        assert_backends_agree(got)
        result = next(iter(got.values()))
        assert result[0] == "error" and result[3] == 6 and result[4] == {"a": 0}, result   # the assignment
