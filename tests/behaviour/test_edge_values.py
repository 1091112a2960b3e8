"""Integers at the edges of what the backends hold exactly (2**53 for LuaJIT's doubles, 2**63 for C's and
the rows' int64), in random spaces: a backend either gives the oracle's exact answer or reports the
value it cannot hold, never a rounded or wrapped one.

The spaces are small (a driver ``a`` and an iterator ``b`` from constant lists, ranges and set
operations near the edges, a derived variable, a condition) and the oracle is written here in plain
Python. An error is allowed only where some value the oracle meets (a constant, an iterator value,
an intermediate result) is past the backend's edge: 2**53 for Lua, 2**63 for C and Python; then it
must be a normal error at a line of the user's file, not an internal one.
"""
from __future__ import annotations

import ast
import os
import tempfile
from collections import Counter

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import beast
from conftest import available_backends, write_space

AVAILABLE = available_backends()
EXAMPLES = int(os.environ.get("BEAST_EDGE_EXAMPLES") or 0) or 30
EDGE = {"lua": 2 ** 53, "c": 2 ** 63, "python": 2 ** 63}     # the first magnitude a backend may refuse
BASES = [0, 2 ** 53 - 2, 2 ** 53, -(2 ** 53) - 1, 2 ** 62, 2 ** 63 - 3, -(2 ** 63)]
# within 2**53, so that Lua translates the function bodies and checks their arithmetic as it runs
NEAR = [3, 2 ** 26 + 1, -(2 ** 31), 2 ** 52, 2 ** 53 - 5, -(2 ** 53 - 5)]
FLOATS = [0.5, -1.5, 2.0 ** 53, -(2.0 ** 63), 1e300]      # in derived values and conditions
SPELL = {2 ** 53: "2**53", 2 ** 62: "2**62", 2 ** 63: "2**63"}


def const_text(v) -> str:
    """A constant as a user writes it (2**53 + 1, -(2**63), ...)."""
    if isinstance(v, float):
        return f"({v!r})"
    for base, text in SPELL.items():
        for sign in (1, -1):
            d = v - sign * base
            if abs(d) < 8:
                core = text if sign > 0 else f"-{text}"
                return f"({core} + {d})" if d > 0 else f"({core} - {-d})" if d < 0 else f"({core})"
    return f"({v})"


class Tracker:
    """The largest magnitude of an integer the oracle met (a float may be any size)."""

    def __init__(self):
        self.top = 0

    def __call__(self, v):
        if type(v) is int:
            self.top = max(self.top, abs(v))
        return v


# expressions: ("const", v) | ("var", name) | (op, left, right) | ("abs", e)
def text(e) -> str:
    if e[0] == "const":
        return const_text(e[1])
    if e[0] == "var":
        return e[1]
    if e[0] == "abs":
        return f"abs({text(e[1])})"
    return f"({text(e[1])} {e[0]} {text(e[2])})"


def consts(e, track):
    if e[0] == "const":
        track(e[1])
    for part in e[1:]:
        if isinstance(part, tuple):
            consts(part, track)


def value(e, env, track):
    if e[0] == "const":
        return track(e[1])
    if e[0] == "var":
        return track(env[e[1]])
    if e[0] == "abs":
        return track(abs(value(e[1], env, track)))
    a, b = value(e[1], env, track), value(e[2], env, track)
    ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b, "//": lambda: a // b,
           "%": lambda: a % b}
    return track(ops[e[0]]())


@st.composite
def exprs(draw, names, depth=2, floats=False):
    leaves = [st.builds(lambda b, d: ("const", b + d), st.sampled_from(BASES + NEAR), st.integers(-3, 3)),
              st.builds(lambda v: ("const", v), st.integers(-5, 5))]
    leaves += [st.builds(lambda v: ("const", v), st.sampled_from(FLOATS))] * floats
    leaf = st.one_of(*leaves, *[st.builds(lambda n: ("var", n), st.sampled_from(names))] * bool(names))
    if depth == 0 or draw(st.booleans()):
        return draw(leaf)
    op = draw(st.sampled_from(["+", "-", "*", "//", "%", "abs"] + ["/"] * floats))
    if op == "abs":
        return ("abs", draw(exprs(names, depth - 1, floats)))
    left = draw(exprs(names, depth - 1, floats))
    if op in ("//", "%", "/"):      # a non-zero constant divisor: division by zero is tested elsewhere
        divisors = [1, -1, 3, -7, 2 ** 52, 2 ** 62] + [-0.5, 3.0, 2.0 ** 53] * floats
        return (op, left, ("const", draw(st.sampled_from(divisors))))
    return (op, left, draw(exprs(names, depth - 1, floats)))


# sequences: ("list", values) | ("range", base, lo, hi, step) (base + a + lo .. base + hi) |
# ("setop", op, left, right)
@st.composite
def seqs(draw, setop=True):
    kind = draw(st.sampled_from(["list", "range", "setop"] if setop else ["list", "range"]))
    if kind == "list":
        base = draw(st.sampled_from(BASES))
        return ("list", tuple(draw(st.lists(st.integers(-3, 3).map(lambda d: base + d), min_size=1, max_size=4))))
    if kind == "range":
        return ("range", draw(st.sampled_from(BASES)), draw(st.integers(-2, 2)), draw(st.integers(-3, 4)),
                draw(st.sampled_from([1, 2, -1, -2])))
    return ("setop", draw(st.sampled_from(["union", "intersection", "difference"])),
            draw(seqs(setop=False)), draw(seqs(setop=False)))


def seq_text(s) -> str:
    if s[0] == "list":
        return "[" + ", ".join(const_text(v) for v in s[1]) + "]"
    if s[0] == "range":
        _, base, lo, hi, step = s
        return f"range({const_text(base)} + a + {lo}, {const_text(base)} + {hi}, {step})"
    return f"{s[1]}({seq_text(s[2])}, {seq_text(s[3])})"


def seq_values(s, a, track) -> list:
    if s[0] == "list":
        return [track(v) for v in s[1]]
    if s[0] == "range":
        _, base, lo, hi, step = s
        track(base + a), track(base + a + lo), track(base + hi)     # (the text adds left to right)
        return [track(v) for v in range(base + a + lo, base + hi, step)]
    left, right = seq_values(s[2], a, track), seq_values(s[3], a, track)
    if s[1] == "union":
        left = left + right
    else:
        keep = s[1] == "intersection"
        left = [v for v in left if (v in right) == keep]
    return list(dict.fromkeys(left))        # each value once, in first-seen order


@st.composite
def edge_spaces(draw):
    seq = draw(seqs())
    derived = draw(exprs(["a", "b"], floats=True))
    cond = draw(exprs(["a", "b", "d"], depth=1, floats=True))
    cmp = draw(st.sampled_from(["<", ">", "==", "!="]))
    bound = draw(exprs([], depth=0, floats=True))
    source = "\n".join(["from beast import *", "a = range(3)", f"b = iterator({seq_text(seq)})",
                        f"d = {text(derived)}", f"c = condition({text(cond)} {cmp} {text(bound)})", ""])
    return source, seq, derived, cond, cmp, bound


def oracle(seq, derived, cond, cmp, bound):
    """The surviving (a, b) rows, and the largest magnitude met on the way."""
    track, rows = Tracker(), Counter()
    for e in (derived, cond, bound):        # a constant is a value met, reached or not
        consts(e, track)
    for a in range(3):
        env = {"a": a, "b": 0}              # what reads only a is hoisted out of b's loop (b may be empty)
        env["d"] = value(derived, env, track)
        value(cond, env, track), value(bound, env, track)
        for b in seq_values(seq, a, track):
            env = {"a": a, "b": b}
            env["d"] = value(derived, env, track)
            x, y = value(cond, env, track), value(bound, env, track)
            if not {"<": x < y, ">": x > y, "==": x == y, "!=": x != y}[cmp]:
                rows[(a, b)] += 1
    return rows, track.top


def run(space, backend, what):
    try:
        if what == "count":
            return "ok", space.count(backend=backend)
        arr = space.enumerate(backend=backend)
        return "ok", Counter(zip(arr["a"].tolist(), arr["b"].tolist()))
    except (beast.SpaceError, beast.EvaluationError) as err:     # a user's error, at a line of the file
        return "error", err


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(edge_spaces())
def test_values_past_a_backends_edge_are_reported_never_rounded(case):
    source, *model = case
    note(source)
    expected, top = oracle(*model)
    event("past 2**63" if top >= 2 ** 63 else "past 2**53" if top >= 2 ** 53 else "within 2**53")
    check_backends(source, expected, top)


def check_backends(source, expected, top):
    """Each backend's count and rows are the oracle's, or a user's error past the backend's edge
    (``expected`` None: plain Python raised OverflowError, and every backend must fail)."""
    with tempfile.TemporaryDirectory(prefix="beast-edges-") as tmp:
        path = write_space(tmp, source, "edges.py")
        space = beast.load(path)
        for backend in AVAILABLE:
            for what in ("count", "rows"):
                kind, got = run(space, backend, what)
                event(f"{backend} {what}: {kind}")
                if kind == "ok":
                    assert expected is not None, f"{backend} {what}: an answer where Python overflows"
                    want = sum(expected.values()) if what == "count" else expected
                    assert got == want, f"{backend} {what}: a wrong answer, not an error"
                else:
                    assert top >= EDGE[backend], f"{backend} {what} failed within its edge: {got}"
                    assert got.filename == path and got.lineno is not None, f"{backend}: {got}"


# ---------------------------------------------------------------------------------------------
# The same in user functions: C and Lua translate their bodies on their own (beast.ir.translate)

class Tracked(ast.NodeTransformer):
    """The oracle's copy of a function: every arithmetic result passes through ``_t``."""

    def visit_BinOp(self, node):
        return ast.Call(ast.Name("_t", ast.Load()), [self.generic_visit(node)], [])

    def visit_Call(self, node):
        node = self.generic_visit(node)
        tracked = getattr(node.func, "id", "") in ("abs", "len", "min", "max")
        return ast.Call(ast.Name("_t", ast.Load()), [node], []) if tracked else node


@st.composite
def function_spaces(draw):
    e = lambda names, depth=2, floats=True: text(draw(exprs(names, depth, floats)))     # noqa: E731
    cmp = lambda: draw(st.sampled_from(["<", ">", "==", "!="]))    # noqa: E731
    kind = draw(st.sampled_from(["list", "range", "generator"]))
    if kind == "list":
        body = f"    return [{e(['a'], floats=False)}, {e(['a'], floats=False)}]"
    elif kind == "range":
        base = const_text(draw(st.sampled_from(BASES)))
        body = f"    return range({base} + a, {base} + {draw(st.integers(0, 4))})"
    else:
        body = f"    for i in range(a, 3):\n        yield {e(['a', 'i'], floats=False)}"
    iterator_def = f"@iterator\ndef b(a):\n{body}\n"
    edge = lambda: const_text(draw(st.sampled_from(BASES + NEAR)))     # noqa: E731
    test = draw(st.sampled_from([
        f"{e(['a', 'b', 't'], 1)} {cmp()} {e([], 0)}",
        f"b in range({edge()} + a, {edge()} + {draw(st.integers(0, 4))}, {draw(st.sampled_from([1, 3, -2]))})",
        f"t in [{edge()}, {e(['a', 'b'], 1, False)}]",
        f"min(t, b, {edge()}) {cmp()} max(b, {e([], 0)})"]))
    step = draw(st.sampled_from([1, 3, -2]))
    result = draw(st.sampled_from([f"{e(['a', 'b', 't'], 1)} % 7 == 1",
                                   f"len(range({edge()}, {edge()} + a, {step})) % 7 == 1"]))
    condition_def = (f"@condition\ndef c(a, b):\n    t = {e(['a', 'b'])}\n    if {test}:\n"
                     f"        return {result}\n    return {e(['t', 'b'], 1)} {cmp()} {e([], 0)}\n")
    return iterator_def, condition_def


def function_oracle(iterator_def, condition_def):
    track = Tracker()
    for node in ast.walk(ast.parse(iterator_def + condition_def)):     # constants, folded or not
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Constant)) \
                and not any(isinstance(x, (ast.Name, ast.Call)) for x in ast.walk(node)):
            v = eval(compile(ast.Expression(node), "<oracle>", "eval"))     # noqa: S307
            if type(v) is int:
                track(v)
    scope = {"_t": track, "iterator": lambda f: f, "condition": lambda f: f}
    tree = Tracked().visit(ast.parse(iterator_def + condition_def))
    exec(compile(ast.fix_missing_locations(tree), "<oracle>", "exec"), scope)
    rows = Counter()
    try:
        for a in range(3):
            values = scope["b"](a)
            for b in [values] if isinstance(values, int) else values:
                if not scope["c"](a, track(b)):
                    rows[(a, b)] += 1
    except OverflowError:           # len() of a range of 2**63 values or more
        return None, max(track.top, 2 ** 63)
    return rows, track.top


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(function_spaces())
def test_values_past_a_backends_edge_in_function_bodies(case):
    source = "from beast import *\na = range(3)\n\n" + "\n".join(case)
    note(source)
    expected, top = function_oracle(*case)
    event("past 2**63" if top >= 2 ** 63 else "past 2**53" if top >= 2 ** 53 else "within 2**53")
    check_backends(source, expected, top)
