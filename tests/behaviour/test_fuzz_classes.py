"""Random spaces of the six classes of backend disagreement, each backend against plain Python.

Each space is drawn as two texts from the same choices: the space file, and a plain-Python program
that enumerates the same configurations with nested ``for`` loops over the same function bodies
(the oracle: no beast). The classes, with their variants:

- ``bool``: a bool-valued constant (``FLAG = True``, ``FLAG = K > 2``) or setting
  (``setting("flag", False)``, overridden or not) read in a ``@condition``, a deferred
  ``@iterator`` or a generator iterator, as a truth value and as a number;
- ``comprehension``: a list, set, dict or generator comprehension (nested, or whose first iterable
  reads the free name) whose variable rebinds a node name or a module constant, in every kind of
  body, followed by a read of that name (Python: the comprehension has its own scope);
- ``closure``: a generator iterator that raises after yielding (at some configurations), read by
  a ``@condition`` that C tabulates (``round``);
- ``edge``: values near 2**53 and 2**63 in lists, ranges, set operations and ``@iterator``
  results; each backend's count must be what its enumeration gives, the rows' number or the same
  error (a value past 2**63 is beast's overflow everywhere, past 2**53 also Lua's);
- ``bits``: module-level ``|``/``&``/``~`` of truth values and ``|``/``&`` of integers used as
  numbers, in arithmetic and in conditions;
- ``empty``: an empty outer iterator around a range near 2**53 or 2**62: no rows, count 0.

Every run (python, lua, C with 1 and 3 threads; enumerate and count) must give the oracle's rows,
or, where Python raises, an error of the same kind at a line that holds the failing operation; the
backends must agree with each other exactly (rows in the same order, or the same message, line,
column and configuration). More examples: ``BEAST_CLASSES_EXAMPLES=400``.
"""
from __future__ import annotations

import builtins
import os
import re
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import beast
from conftest import available_backends, rows, write_space

AVAILABLE = available_backends()
EXAMPLES = int(os.environ.get("BEAST_CLASSES_EXAMPLES") or 0) or 6       # per class
INT64_MAX = (1 << 63) - 1
EDGE = {"lua": 2 ** 53, "c": 2 ** 63, "python": 2 ** 63}     # the first magnitude a backend may refuse


class Case:
    """A drawn space: ``source`` (beast's text), ``settings``, ``program`` (the oracle's plain
    Python, defining ``_rows()``), ``columns``, ``kind`` and ``top`` (the largest integer
    magnitude the space holds, for the edge classes)."""

    def __init__(self, kind, head, iterators, functions, conditions, settings_=None, top=0):
        self.kind, self.settings, self.top = kind, settings_ or {}, top
        # module-level iterators are printed first, then the functions: that is their order
        self.columns = tuple([name for name, btext, _ in iterators if btext is not None]
                             + [name for name, btext, _ in iterators if btext is None])
        beast_lines = ["from beast import *", "", "K = 3", "N = 2"] + [b for b, _ in head] + [""]
        py_lines = ["K = 3", "N = 2"] + [p for _, p in head] + [""]
        for name, btext, _ in iterators:
            if btext is not None:
                beast_lines.append(f"{name} = {btext}")
        beast_lines.append("")
        for text in functions:
            beast_lines += text.splitlines() + [""]
            py_lines += [line for line in text.splitlines() if not line.startswith("@")] + [""]
            name = re.match(r"@\w+\s*def (\w+)", text.replace("\n", " ")).group(1)
            py_lines.append(f"_fn_{name} = {name}")     # (the loop over its values rebinds the name)
        for btext, _ in conditions:
            if btext is not None:       # (a @condition function is among the functions)
                beast_lines.append(btext)
        self.source = "\n".join(beast_lines) + "\n"
        # the oracle: every condition at the innermost loop, in declaration order
        # the loops bind module globals: a function reads a node it is not passed as a free name
        loop = ["def _rows():", f"    global {', '.join(self.columns)}"]
        indent = "    "
        for name, _, ptext in iterators:
            loop.append(f"{indent}for {name} in _values({ptext}):")
            indent += "    "
        for _, ptext in conditions:
            loop.append(f"{indent}if {ptext}:")
            loop.append(f"{indent}    continue")
        loop.append(f"{indent}yield ({', '.join(self.columns)},)")
        self.program = "\n".join(py_lines + loop) + "\n"

    def __repr__(self):
        return f"<{self.kind} space, settings={self.settings!r}:\n{self.source}>"


def _values(result):
    """An iterator definition's values, in plain Python (a scalar is one value, a bool 0/1)."""
    if type(result) in (int, bool):
        return [int(result)]
    out = []
    for v in result:
        if type(v) not in (int, bool):
            raise TypeError(f"non-integer iterator value {v!r}")
        out.append(int(v))
    return out


def oracle(case):
    """Counter of rows, or the exception plain Python raises."""
    g = {"__builtins__": builtins, "_values": _values}
    exec(compile(case.program, "<oracle>", "exec"), g)  # noqa: S102 - the oracle runs its own text
    try:
        return Counter(g["_rows"]())
    except Exception as exc:  # noqa: BLE001 - the user's error, compared with beast's
        return exc


# -- the classes --------------------------------------------------------------------------------

SMALL = st.integers(0, 3)


def _sample(draw, options):
    return draw(st.sampled_from(options))


@st.composite
def bool_spaces(draw):
    source = _sample(draw, ["const", "const", "setting"])
    value = draw(st.booleans())
    if source == "const":
        name = "FLAG"
        spelled = _sample(draw, [repr(value), repr(value), "K > 2" if value else "K > 5",
                                 "not K" if not value else "bool(K)"])
        head = [(f"FLAG = {spelled}", f"FLAG = {spelled}")]
        overrides = {}
    else:
        name = "flag"
        default = draw(st.booleans())
        overridden = draw(st.booleans()) or value != default
        head = [(f'flag = setting("flag", {default!r})', f"flag = {value if overridden else default!r}")]
        if not overridden:
            value = default
        overrides = {"flag": _sample(draw, [value, str(value).lower()])} if overridden else {}
    k = draw(SMALL)
    where = _sample(draw, ["condition", "deferred", "closure"])
    test = _sample(draw, [f"{name} and a > {k}", f"not {name} or b == {k}", f"(a + {name}) % 2 == 0",
                          f"{name} == (b > a)", f"a > {k} if {name} else b == 1",
                          f"b * {name} > {k}"])
    functions, conditions = [], []
    iters = [("a", "range(4)", "range(4)")]
    if where == "condition":
        iters.append(("b", "range(3)", "range(3)"))
        body = _sample(draw, [[f"return {test}"], [f"t = {name}", "if t:", f"    return {test}", "return b == 2"]])
        functions.append("@condition\ndef c(a, b):\n" + "".join(f"    {line}\n" for line in body))
        conditions.append((None, "_fn_c(a, b)"))
    else:
        if where == "deferred":
            body = _sample(draw, [[f"if {name}:", "    return [a, a + 1]", "return range(a + 1)"],
                                  [f"return range(a + {name} + 1)"],
                                  [f"return a + {name}"],
                                  [f"x = {name} * 2", "return [a, x]"]])
        else:
            body = _sample(draw, [[f"for j in range(a + {name} + 1):", "    yield j"],
                                  [f"if {name}:", "    yield a", "yield a + 1"],
                                  ["j = 0", f"while j < 2 + {name}:", "    yield j", "    j += 1"]])
        functions.append("@iterator\ndef b(a):\n" + "".join(f"    {line}\n" for line in body))
        iters.append(("b", None, "_fn_b(a)"))
        cond = _sample(draw, [f"b % 3 == {k % 3}", f"a + b == {k + 1}"])
        conditions.append((f"c = condition({cond})", cond))
    return Case(f"bool in a {where}", head, iters, functions, conditions, overrides)


COMPREHENSIONS = [   # {v}: the rebound name; {e}: an expression of it
    "len([{v} for {v} in range(3)])",
    "len({{{v} for {v} in range(3)}})",
    "len({{{v}: {v} + 1 for {v} in range(3)}})",
    "sum({v} for {v} in range(3))",
    "len([[{v} for {v} in range(2)] for {v} in range(2)])",
    "sum([x + {v} for x in range(2) for {v} in range(2)])",
    "len([{v} for {v} in range({v} + 1)])",                 # the first iterable reads the free name
    "max([{v} * 2 for {v} in range(1, {v} + 2)])",
]


@st.composite
def comprehension_spaces(draw):
    where = _sample(draw, ["condition", "condition", "deferred", "closure"])
    comp = _sample(draw, COMPREHENSIONS)
    k = draw(st.integers(2, 6))
    iters = [("a", "range(4)", "range(4)"), ("b", "iterator([1, 2, 4])", "[1, 2, 4]")]
    functions, conditions = [], []
    if where == "condition":
        v = _sample(draw, ["a", "b", "N"])
        params = _sample(draw, [["a", "b"], ["a"], ["b", "a"]])   # a free name: read, not passed
        t = comp.format(v=v)
        body = [f"t = {t}", f"return {v} + t > {k} and a != b"]
        functions.append(f"@condition\ndef c({', '.join(params)}):\n" + "".join(f"    {x}\n" for x in body))
        conditions.append((None, f"_fn_c({', '.join(params)})"))
    else:
        v = _sample(draw, ["a", "N"])
        iters = [("a", "range(4)", "range(4)")]
        t = comp.format(v=v)
        if where == "deferred":
            body = [f"t = {t}", f"return range({v}, {v} + t % 3 + 1)"]
        else:
            body = [f"t = {t}", f"for j in range(t % 3 + 1):", f"    yield {v} + j"]
        functions.append("@iterator\ndef b(a):\n" + "".join(f"    {x}\n" for x in body))
        iters.append(("b", None, "_fn_b(a)"))
        conditions.append((f"c = condition((a + b) % 3 == {k % 3})", f"(a + b) % 3 == {k % 3}"))
    return Case(f"comprehension in a {where}", [], iters, functions, conditions)


@st.composite
def closure_spaces(draw):
    k = draw(st.integers(0, 4))
    fail = _sample(draw, [f"1 // (a - {k})", f"7 % (a - {k})", f"[1, 2, 3][a + {k - 2}]"])
    shape = _sample(draw, ["after one", "in a loop", "after the loop"])
    if shape == "after one":
        body = ["yield a", f"yield {fail}"]
    elif shape == "in a loop":
        body = ["for j in range(3):", "    yield j + a", f"    if j == {draw(st.integers(0, 2))}:",
                f"        x = {fail}", "        yield x"]
    else:
        body = ["j = 0", "while j < 2:", "    yield j * a", "    j += 1", f"return {fail}"]
    digits = _sample(draw, [0, 1])
    target = _sample(draw, [0.5, 1, 2])
    params = _sample(draw, [["b"], ["a", "b"]])
    test = f"round(b / 3, {digits}) > {target}" if params == ["b"] else f"round(a * b / 2, {digits}) == {target}"
    functions = ["@iterator\ndef b(a):\n" + "".join(f"    {x}\n" for x in body),
                 f"@condition\ndef c({', '.join(params)}):\n    return {test}\n"]
    iters = [("a", "range(4)", "range(4)"), ("b", None, "_fn_b(a)")]
    return Case(f"closure raising {shape}", [], iters, functions, [(None, f"_fn_c({', '.join(params)})")])


BIGS = [2 ** 53, 2 ** 53 - 1, -(2 ** 53), 2 ** 62, INT64_MAX - 1, 2 ** 63, -(2 ** 63), -(2 ** 63) - 1]


def big_text(v):
    """``v`` as a user writes it: 2**53 + 1, -(2**63) - 1, ..."""
    for base, text in ((2 ** 63, "2**63"), (2 ** 62, "2**62"), (2 ** 53, "2**53")):
        for sign in (1, -1):
            d = v - sign * base
            if abs(d) < 8:
                core = text if sign > 0 else f"-({text})"
                return f"({core} + {d})" if d > 0 else f"({core} - {-d})" if d < 0 else f"({core})"
    return f"({v})"


@st.composite
def edge_spaces(draw):
    big = _sample(draw, BIGS) + draw(st.integers(-2, 2))
    top = abs(big)          # the largest magnitude the space holds, exactly
    B = big_text(big)
    form = _sample(draw, ["list", "range", "setop", "deferred", "closure"])
    functions = []
    if form == "list":
        b = (f"iterator([1, {B}])", f"[1, {B}]")
    elif form == "range":
        n = draw(st.integers(1, 3))
        b = (f"range({B}, {B} + {n})", f"range({B}, {B} + {n})")
        top = max(top, abs(big + n))
    elif form == "setop":
        b = (f"union([1, 2], [{B}, 2])", f"[1, 2, {B}]")
    elif form == "deferred":
        functions.append(f"@iterator\ndef b(a):\n    return [a, {B}]\n")
        b = (None, "_fn_b(a)")
    else:
        functions.append(f"@iterator\ndef b(a):\n    yield a\n    yield {B} - a\n")
        top = max(top, abs(big - 2))
        b = (None, "_fn_b(a)")
    iters = [("a", "range(3)", "range(3)"), ("b", *b)]
    conditions = []
    if draw(st.booleans()):
        cond = _sample(draw, ["b == 1", "a == 1", "b % 2 == 0"])
        conditions.append((f"c = condition({cond})", cond))
    return Case(f"edge: {form}", [], iters, functions, conditions, top=top)


@st.composite
def bits_spaces(draw):
    k1, k2 = draw(SMALL), draw(SMALL)
    logic = [(f"((a > {k1}) | (b < {k2}))", f"(bool(a > {k1}) or bool(b < {k2}))"),
             (f"((a == {k1}) & (b != {k2}))", f"(bool(a == {k1}) and bool(b != {k2}))"),
             (f"(~(a > {k1}))", f"(not (a > {k1}))"),
             (f"(((a > {k1}) | (a < {k2 - 1})) & (b == {k2 % 2}))",
              f"((bool(a > {k1}) or bool(a < {k2 - 1})) and bool(b == {k2 % 2}))"),
             ("(a | b)", "(a | b)"), (f"(a & (b + {k2}))", f"(a & (b + {k2}))")]
    x = _sample(draw, logic)
    y = _sample(draw, logic)
    m = _sample(draw, [1, 2, -1])
    use = _sample(draw, ["derived", "condition", "iterator"])
    t = draw(st.integers(0, 3))
    head, conditions = [], []
    iters = [("a", "range(5)", "range(5)"), ("b", "range(3)", "range(3)")]
    if use == "derived":
        head_beast = f"d = {x[0]} * {m} + {y[0]}"
        conditions.append((f"{head_beast}\nc = condition(d > {t})", f"({x[1]} * {m} + {y[1]}) > {t}"))
    elif use == "condition":
        conditions.append((f"c = condition({x[0]} + {y[0]} * {m} > {t})", f"({x[1]} + {y[1]} * {m}) > {t}"))
    else:
        iters.append(("e", f"range({x[0]} + 1)", f"range({x[1]} + 1)"))
        conditions.append((f"c = condition({y[0]} * {m} == {t % 2})", f"({y[1]} * {m}) == {t % 2}"))
    return Case(f"bits used as numbers in a {use}", head, iters, [], conditions)


@st.composite
def empty_spaces(draw):
    outer = _sample(draw, [("range(0)", "range(0)"), ("range(3, 1)", "range(3, 1)"),
                           ("iterator([])", "[]"), ("difference([1], [1])", "[]")])
    big = _sample(draw, [2 ** 53, 2 ** 62]) + draw(st.integers(0, 5))
    B = big_text(big)
    inner = _sample(draw, [(f"range(0, {B})", f"range(0, {B})"), (f"range({B}, {B} + 3)", f"range({B}, {B} + 3)"),
                           (f"range(a, {B})", f"range(a, {B})"), (f"iterator([1, {B}])", f"[1, {B}]")])
    iters = [("a", *outer)]
    if draw(st.booleans()):
        iters.append(("b", "range(2)", "range(2)"))
    iters.append(("d", *inner))
    # no loop inside the empty one runs: no value is met, so every backend gives no rows
    return Case("empty outer loop", [], iters, [], [])


CLASSES = {"bool": bool_spaces(), "comprehension": comprehension_spaces(), "closure": closure_spaces(),
           "edge": edge_spaces(), "bits": bits_spaces(), "empty": empty_spaces()}


# -- running every backend ------------------------------------------------------------------------

def run(space, backend, threads):
    """(count outcome, enumerate outcome): ('ok', n) / ('ok', rows) or ('error', message, line,
    column, configuration)."""
    out = []
    for what in ("count", "enumerate"):
        try:
            if what == "count":
                out.append(("ok", space.count(backend=backend, threads=threads)))
            else:
                out.append(("ok", rows(space.enumerate(backend=backend, threads=threads))))
        except beast.BeastError as err:      # (an internal error too: it differs from Python's)
            out.append(("error", err.message, getattr(err, "lineno", None), getattr(err, "col", None),
                        dict(getattr(err, "config", None) or {})))
    return tuple(out)


def check(case):
    note(case.source)
    note(f"settings: {case.settings}")
    note(case.program)
    expected = oracle(case)
    with tempfile.TemporaryDirectory(prefix="beast-classes-") as tmp:
        path = write_space(tmp, case.source, "space.py")
        try:
            space = beast.load(path, settings=case.settings)
        except beast.SpaceError as err:
            # a constant past 64 bits may be refused where it is written, before any backend runs
            assert case.top >= 2 ** 63 and "does not fit in 64 bits" in err.message, err
            assert err.lineno is not None and err.col is not None, err
            event(f"{case.kind}: refused at load")
            return
        assert space.iterators == case.columns
        runs = [(b, None) for b in AVAILABLE] + ([("c", 1), ("c", 3)] if "c" in AVAILABLE else [])
        got = {f"{b}/{t}": run(space, b, t) for b, t in runs}
    lines = case.source.splitlines()
    within = {name: case.top < EDGE[name.split("/")[0]] for name in got}
    event(f"{case.kind}: " + ("Python raises" if isinstance(expected, Exception)
                              else "rows" if expected else "no rows"))
    for name, (count, enum) in got.items():
        # the count is what the enumeration gives: the rows' number, or the same error
        if enum[0] == "ok":
            assert count == ("ok", len(enum[1])), f"{name}: count {count} but {len(enum[1])} rows"
        else:
            assert count[0] == "error" and count[1:3] == enum[1:3], \
                f"{name}: enumerate raises {enum[1:3]}, count gives {count}"
        if enum[0] == "error" and not within[name]:
            # past this backend's integers: its documented overflow, at a line of the file
            assert "overflow" in enum[1] or "does not fit in 64 bits" in enum[1], f"{name}: {enum}"
            assert enum[2] is not None, f"{name}: {enum}"
            continue
        if isinstance(expected, Exception):
            assert enum[0] == "error", f"{name}: Python raises {expected!r}, beast gives rows"
            message, lineno, col = enum[1:4]
            if isinstance(expected, ZeroDivisionError):
                assert re.match(r"(integer )?(division|modulo) by zero", message), f"{name}: {message}"
            else:
                assert message.startswith(type(expected).__name__), f"{name}: {message} for {expected!r}"
            assert lineno is not None and col is not None, f"{name}: no line or caret: {enum}"
            assert re.search(r"//|%|\[", lines[lineno - 1]), f"{name}: line {lineno} fails nothing"
            continue
        assert enum[0] == "ok", f"{name}: Python gives rows, beast raises {enum}"
        assert Counter(enum[1]) == expected, f"{name}: rows differ from Python's"
    # the backends agree with each other where their integers hold every value, and those with
    # the same integers (python and C) agree everywhere: the same rows or the same error
    groups = [[name for name in got if within[name]]]
    groups += [[name for name in got if EDGE[name.split("/")[0]] == edge] for edge in set(EDGE.values())]
    for group in groups:
        for name in group:
            assert got[name] == got[group[0]], f"{name} disagrees with {group[0]}: {got[name]} != {got[group[0]]}"


@pytest.mark.parametrize("klass", sorted(CLASSES))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_issue38_classes_match_python_in_every_backend(klass, data):
    check(data.draw(CLASSES[klass], label=klass))
