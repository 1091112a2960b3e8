"""The Lua printer's fused loops (which loops: beast.ir.fuse; printed by beast.codegen.lua): perfectly nested loops
over constant values, the innermost short, printed as one loop over their product (LuaJIT cannot
trace a nest of 1- and 2-iteration loops), and a loop of one value printed as a block. The rows,
their order, the count and the errors must stay those of the Python backend."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

pytest.importorskip("lupa")

import beast  # noqa: E402
from beast.codegen.lua import print_lua  # noqa: E402
from beast.runtime.lua import LuaEnumerator  # noqa: E402
from beast.runtime.python import PythonEnumerator  # noqa: E402


def error_key(err):
    return (type(err).__name__, err.message, err.filename, err.lineno, err.col, err.end_col,
            dict(getattr(err, "config", None) or {}), str(err))


def outcome(enum, chunk_size):
    """(count, rows per chunk) or the error key: what a user sees."""
    try:
        return enum.count(), [c.tolist() for c in enum.chunks(chunk_size)]
    except beast.BeastError as exc:
        return error_key(exc)


def fused_loops(space):
    """Iteration counts of the fused loops of both generated functions."""
    return [int(n) for n in re.findall(r"for _b_q\d+ = 1, (\d+) do", print_lua(space.program).text)]


def brute(values, keep, loop_order):
    """The survivors of a plain product over every iterator's values, in ``loop_order``."""
    names = list(values)
    rows = [dict(zip(names, combo)) for combo in itertools.product(*values.values())]
    rows = [r for r in rows if keep(r)]
    return sorted(tuple(r[n] for n in loop_order) for r in rows)


# Every space is a shape the fusion meets: a pure 2x2 pair under the last check (clblast_xgemm's
# STRM, STRN), a chain ending in a loop of one value whose check leaves that loop (dedispersion's
# block_size_z: leaving it goes on with the next combination, not out of the fused loop), a check
# that leaves a short innermost loop (that loop stays out of the chain), ranges with negative steps,
# repeated values, and a loop of one value alone.
SPACES = {
    "pure_pair": ("""
        from beast import *
        a = iterator([16, 32, 64])
        b = iterator([1, 2, 4])
        c = range(0, 2)
        d = range(0, 2)
        too_big = condition(a * b > 64)
        """, {"a": [16, 32, 64], "b": [1, 2, 4], "c": [0, 1], "d": [0, 1]},
        lambda r: not r["a"] * r["b"] > 64),
    "one_value_break": ("""
        from beast import *
        x = iterator([4, 1, 2, 8])
        y = range(32, 64, 8)
        z = iterator([1])
        u = iterator([0])
        threads = x * y * z
        too_few = condition(threads < 64)
        too_many = condition(threads > 160)
        """, {"x": [4, 1, 2, 8], "y": list(range(32, 64, 8)), "z": [1], "u": [0]},
        lambda r: 64 <= r["x"] * r["y"] * r["z"] <= 160),
    "break_in_short_inner": ("""
        from beast import *
        p = range(0, 4)
        q = range(0, 3)
        r = range(0, 3)
        s = range(0, 3)
        over = condition(p + q + r + s > 5)
        skip = condition((p + s) % 3 == 1)
        """, {"p": [0, 1, 2, 3], "q": [0, 1, 2], "r": [0, 1, 2], "s": [0, 1, 2]},
        lambda r: not (r["p"] + r["q"] + r["r"] + r["s"] > 5) and not ((r["p"] + r["s"]) % 3 == 1)),
    "negative_steps_and_repeats": ("""
        from beast import *
        m = iterator([3, 1, 3, 2])
        n = range(5, -1, -2)
        k = range(2, 0, -1)
        odd = condition((m + n + k) % 2 == 1)
        """, {"m": [3, 1, 3, 2], "n": [5, 3, 1], "k": [2, 1]},
        lambda r: (r["m"] + r["n"] + r["k"]) % 2 == 0),
}


@pytest.mark.parametrize("name", sorted(SPACES))
def test_fused_nests_match_python_and_brute_force(space_file, name):
    text, values, keep = SPACES[name]
    space = beast.load(space_file(text))
    assert fused_loops(space), "the space was meant to have a fused loop"
    py = PythonEnumerator(space.program)
    lua = LuaEnumerator(space.program)
    for size in (1, 5, 4096):
        assert outcome(lua, size) == outcome(py, size), f"chunk size {size}"
    rows = space.enumerate(backend="lua")
    order = list(space.program.loop_order)
    got = sorted(tuple(int(row[n]) for n in order) for row in rows)
    assert got == brute(values, keep, order)
    assert space.count(backend="lua") == len(rows) > 0


def test_one_value_loop_is_a_block(space_file):
    space = beast.load(space_file("""
        from beast import *
        a = range(0, 40)
        b = iterator([7])
        c = range(0, 30)
        small = condition(a + b + c > 50)
        """))
    text = print_lua(space.program).text
    assert "local b = 7" in text and not re.search(r"for \w+ = 1, 1 do", text)
    assert outcome(LuaEnumerator(space.program), 100) == outcome(PythonEnumerator(space.program), 100)


def test_errors_inside_a_fused_loop_match_python(space_file):
    space = beast.load(space_file("""
        from beast import *
        a = iterator([4, 8])
        b = range(-1, 2)
        c = range(0, 2)
        ratio = a // (b + c - 1)
        bad = condition(ratio > 100)
        """))
    assert fused_loops(space)
    expected = outcome(PythonEnumerator(space.program), 3)
    assert expected[0] == "EvaluationError" and "division by zero" in expected[1]
    assert outcome(LuaEnumerator(space.program), 3) == expected


def test_real_spaces_same_rows_as_python():
    """The real spaces whose Lua has fused loops: the same rows, in order, as the Python backend."""
    for path in ("spaces/real/clblast_xgemm.py", "spaces/real/dedispersion.py",
                 "spaces/real/hotspot.py"):
        space = beast.load(path)
        assert fused_loops(space) or "xgemm" not in path, path
        lua = space.enumerate(backend="lua")
        assert np.array_equal(lua, space.enumerate(backend="python")), path
        assert space.count(backend="lua") == len(lua), path


def _trace_events(space, mode):
    """LuaJIT's trace events ('start', 'stop', 'abort' with its error number) during one run."""
    events = []
    lua = LuaEnumerator(space.program)
    lua.lua.execute("""
        local log = ...
        jit.attach(function(what, tr, func, pc, otr) log(what, what == 'abort' and otr or -1) end, 'trace')
    """, lambda what, err: events.append((what, err)))
    if mode == "count":
        lua.count()
    else:
        for _ in lua.chunks(1 << 16):
            pass
    lua.lua.execute("jit.attach(function() end)")
    return events


def test_clblast_xgemm_rows_are_compiled():
    """clblast_xgemm's 14 short nested loops made LuaJIT abort ('leaving loop in root
    trace') until it blacklisted them and interpreted the whole enumeration (17 blacklistings).
    With the fused loops every hot loop compiles: traces are made and an abort ends in a
    blacklisting (LuaJIT's error 5, LJ_TRERR_BLACKL) at most once. LuaJIT adds random bits to a
    loop's penalty after each abort (lj_trace.c, penalty_pc; its PRNG is seeded per process), so
    which traces abort varies a little between processes: 40 runs here blacklisted nothing, one
    run in a whole suite blacklisted one loop."""
    space = beast.load("spaces/real/clblast_xgemm.py")
    events = _trace_events(space, "rows")
    assert sum(1 for what, _ in events if what == "stop") >= 10
    assert len([e for e in events if e == ("abort", 5)]) <= 1
