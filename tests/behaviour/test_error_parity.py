"""The same errors in every backend: random @condition bodies that fail in many ways (a float or
out-of-range list index, a zero or float range() step or bound, min() of nothing, int() of a float,
division and modulo by zero, a float where an integer is needed) give each backend exactly the
same outcome: the same count and rows, or the same error (message, line, columns, configuration).
The same bodies also run where no backend translates them: Lua calling every function back in
Python, and C calling every function's table.

Values stay small (far from 2**53, where Lua may differ by design: tests/behaviour/test_edge_values.py), and
no negative number is raised to a fractional power (Python makes a complex number there, where C
and Lua report an error: docs/semantics.md).
"""
from __future__ import annotations

import os
import tempfile

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import beast
from conftest import available_backends, write_space

AVAILABLE = available_backends()
EXAMPLES = int(os.environ.get("BEAST_PARITY_EXAMPLES") or 0) or 30


@st.composite
def exprs(draw, names, depth=2):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(names + ["0", "1", "2", "-1", "3", "0.5", "-1.5", "2.0", "(a / 2)"]))
    kind = draw(st.sampled_from(["bin", "bin", "bin", "call", "len", "pow"]))
    if kind == "len":
        return "len(l)"
    if kind == "pow":           # a fractional power of a non-negative number only
        base = draw(exprs(names, depth - 1))
        return draw(st.sampled_from([f"(abs({base}) ** 0.5)", f"(({base}) ** 2)", f"(({base}) ** -1)"]))
    if kind == "call":
        fn = draw(st.sampled_from(["abs", "int", "min", "max"]))
        args = [draw(exprs(names, depth - 1)) for _ in range(1 if fn in ("abs", "int") else 2)]
        return f"{fn}({', '.join(args)})"
    op = draw(st.sampled_from(["+", "-", "*", "/", "//", "%"]))
    return f"({draw(exprs(names, depth - 1))} {op} {draw(exprs(names, depth - 1))})"


@st.composite
def bodies(draw):
    names = ["a", "b", "x"]
    e = lambda depth=2: draw(exprs(names, depth))       # noqa: E731
    lines = ["x = 0", "l = [1, 2, 3]"]
    for _ in range(draw(st.integers(1, 4))):
        template = draw(st.sampled_from(["x = {0}", "x = l[{0}]", "l[{0}] = b", "l.append(a + b)",
                                         "for i in range({0}, {1}, {2}):\n    x = x + i",
                                         "x = min(range({0}, {1}))", "x = max(range({0}, 4, {1}))",
                                         "if {0} < {1}:\n    return {2} > 1"]))
        lines += template.format(e(), e(1), e(1)).splitlines()
    lines.append(f"return x {draw(st.sampled_from(['<', '>', '==']))} {e(1)}")
    return "@condition\ndef c(a, b):\n" + "".join(f"    {line}\n" for line in lines)


def outcome(space, backend):
    try:
        n = space.count(backend=backend)
        rows = space.enumerate(backend=backend)
        return ("ok", n, rows.tolist())
    except beast.EvaluationError as err:
        return ("error", err.message, err.lineno, err.col, err.end_col, dict(err.config))


def untranslated_outcomes(space, tmp, source):
    """The outcomes of Lua with every user function called back in Python (chunks of 7 rows), and
    of C with every user function tabulated."""
    from beast.ir import targets
    from beast.runtime.lua import LuaEnumerator
    lua = LuaEnumerator(space.program, force_python=tuple(space.program.funcs))
    try:
        n = lua.count()
        got = {"lua, in Python": ("ok", n, [row for c in lua.chunks(7) for row in c.tolist()])}
    except beast.EvaluationError as err:
        got = {"lua, in Python": ("error", err.message, err.lineno, err.col, err.end_col, dict(err.config))}
    saved, targets.FORCE_TABULATE = targets.FORCE_TABULATE, True
    try:    # (a file of its own: the enumerator of the translating C is cached with its space)
        got["c, tabulated"] = outcome(beast.load(write_space(tmp, source, "tabulated.py")), "c")
    finally:
        targets.FORCE_TABULATE = saved
    return got


def assert_alike(source):
    """Every backend's outcome of the space ``source`` is the first backend's."""
    note(source)
    with tempfile.TemporaryDirectory(prefix="beast-parity-") as tmp:
        space = beast.load(write_space(tmp, source, "parity.py"))
        got = {backend: outcome(space, backend) for backend in AVAILABLE}
        if set(AVAILABLE) >= {"c", "lua"}:
            got.update(untranslated_outcomes(space, tmp, source))
    first = got[AVAILABLE[0]]
    event(first[0] if first[0] == "ok" else first[1].split(":")[0][:40])
    for backend, result in got.items():
        assert result == first, f"{backend} differs from {AVAILABLE[0]}"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(bodies())
def test_random_failing_bodies_fail_alike_in_every_backend(body):
    assert_alike(f"from beast import *\na = range(-1, 3)\nb = range(0, 3, 2)\n\n{body}")


@st.composite
def iterator_bodies(draw):
    """A generator (failing after some yields, or not) or a deferred iterator, and a condition on it."""
    names = ["a", "x", "i"]
    e = lambda depth=1: draw(exprs(names, depth))       # noqa: E731
    risky = draw(st.sampled_from(["x = {0}", "x = l[{0}]", "l[{0}] = i", "x = min(range({0}, {1}))",
                                  "for j in range({0}, 3, {1}):\n    x = x + j"])).format(e(), e())
    if draw(st.booleans()):
        body = ["x = 0", "l = [1, 2, 3]", "for i in range(-1, a + 2):", "    yield i"]
        body[3:3] = ["    " + line for line in risky.splitlines()]
        body.insert(4 + len(risky.splitlines()), f"    yield {draw(st.sampled_from(['x', 'i + 1', 'int(x)']))}")
    else:
        body = ["x = 0", "i = a", "l = [1, 2, 3]", *risky.splitlines(),
                f"return {draw(st.sampled_from(['x', 'range(x)', '[x, i]', 'range(a, x, 2)', 'l']))}"]
    return "@iterator\ndef b(a):\n" + "".join(f"    {line}\n" for line in body) + \
        f"\n@condition\ndef c(a, b):\n    return b % 3 == {draw(st.integers(0, 2))}\n"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(iterator_bodies())
def test_random_failing_iterators_fail_alike_in_every_backend(body):
    assert_alike(f"from beast import *\na = range(-1, 3)\n\n{body}")
