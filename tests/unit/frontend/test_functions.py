"""The front end: which free names of a body are bound, and where errors point.

- A bool constant or setting read in a body (``FLAG = True``; ``setting("flag", False)``) is a
  constant of the space, as 0 or a string is, in every kind of body (not a builtin).
- A comprehension has its own scope: ``[b for b in range(3)]`` leaves a later ``b`` free (the
  node ``b``), and its first iterable is read in the enclosing scope (``range(b)`` in
  ``[b for b in range(b)]``); list, set and dict comprehensions and generator expressions,
  nested, over node names and constants, in conditions, deferred and generator iterators.
- ``condition(lambda a: ...)`` and ``iterator(lambda a: ...)`` are functions of the space.
- An integer overflow in a derived variable or a module-level condition has a caret under the
  operation that overflowed, in every backend; a module-level operation that is a TypeError for
  every value (``a + "x"``) is refused when the space loads, at its caret; an operation a backend
  cannot compile is refused under it.

Each space runs in python, lua and C (1 and 3 threads), in enumerate and count, against the same
text run as plain Python (:func:`plain`: the iterators looped over in declaration order, every
body called as the user's own function, a free node name read from the configuration).
"""
from __future__ import annotations

import builtins
import types
from collections import Counter

import pytest

import beast
from conftest import available_backends, rows, write_space

AVAILABLE = available_backends()
RUNS = [(b, 1 if b == "c" else None) for b in AVAILABLE] + ([("c", 3)] if "c" in AVAILABLE else [])


# -- plain Python: the oracle ------------------------------------------------------------------

class _Iter:
    def __init__(self, fn=None, values=None):
        self.fn, self.values = fn, values


class _Cond:
    def __init__(self, fn):
        self.fn = fn


def _vocabulary(overrides):
    def iterator(x):
        return _Iter(fn=x) if isinstance(x, types.FunctionType) else _Iter(values=list(x))

    def condition(x=None, kind=None):
        return _Cond(x) if x is not None else _Cond

    def setting(name, default, choices=None, help=None):  # noqa: A002 - beast's signature
        return overrides.get(name, default)
    return {"iterator": iterator, "condition": condition, "setting": setting}


def plain(text, path, overrides=None):
    """('rows', Counter of rows) or ('error', exception, line in ``path``): the space file run as
    plain Python, every configuration of the declared iterators checked by every condition."""
    ns = {"__builtins__": builtins, **_vocabulary(overrides or {})}
    exec(compile(text.replace("from beast import *", ""), path, "exec"), ns)  # noqa: S102
    cols = [(k, v) for k, v in ns.items() if isinstance(v, (range, _Iter))]
    conds = [v.fn for v in ns.values() if isinstance(v, _Cond)]

    def call(fn, env):
        code = fn.__code__
        f = types.FunctionType(code, {**ns, **env})          # a free node name: its value
        return f(*(env[p] if p in env else ns[p] for p in code.co_varnames[:code.co_argcount]))

    out = Counter()

    def walk(i, env):
        if i == len(cols):
            if not any(call(c, env) for c in conds):
                out[tuple(env[k] for k, _ in cols)] += 1
            return
        name, it = cols[i]
        got = it if isinstance(it, range) else it.values if it.values is not None else call(it.fn, env)
        for v in (got if isinstance(got, (list, tuple, range, types.GeneratorType)) else [got]):
            walk(i + 1, {**env, name: int(v)})
    try:
        walk(0, {})
    except Exception as exc:  # noqa: BLE001 - Python's error is the expected outcome
        tb, line = exc.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == path:
                line = tb.tb_lineno
            tb = tb.tb_next
        return ("error", exc, line)
    return ("rows", out)


# -- beast ------------------------------------------------------------------------------------

_SPACES = {}


def _space(tmp_path_factory, name, text, overrides=None):
    """(space, path, text), each compiled once per test session."""
    key = (name, tuple(sorted((overrides or {}).items())))
    if key not in _SPACES:
        path = write_space(tmp_path_factory.mktemp("scopes"), text, f"{name}.py")
        _SPACES[key] = (beast.load(path, settings=overrides), path, open(path).read())
    return _SPACES[key]


def outcomes(space):
    """run -> ('rows', rows) | ('count', n) | ('error', message, line, col, end col, config)."""
    out = {}
    for backend, threads in RUNS:
        for mode in ("enumerate", "count"):
            try:
                if mode == "enumerate":
                    got = ("rows", rows(space.enumerate(backend=backend, threads=threads)))
                else:
                    got = ("count", space.count(backend=backend, threads=threads))
            except beast.BeastError as err:
                got = ("error", err.message, err.lineno, err.col, err.end_col, dict(err.config or {}))
            out[f"{backend}/{threads or 1}/{mode}"] = got
    return out


def assert_rows_of_python(space, path, text, overrides=None):
    """Every run gives plain Python's rows (the same order in every backend) and count."""
    expected = plain(text, path, overrides)
    assert expected[0] == "rows", f"plain Python raises {expected[1]!r} at line {expected[2]}"
    got = outcomes(space)
    enumerated = [g for k, g in got.items() if k.endswith("enumerate")]
    assert all(g == enumerated[0] for g in enumerated), got
    assert enumerated[0][0] == "rows", got
    assert Counter(enumerated[0][1]) == expected[1]
    assert all(g == ("count", sum(expected[1].values())) for k, g in got.items() if k.endswith("count")), got
    return expected[1]


def assert_error_of_python(space, path, text, message, caret):
    """Every run raises one error: ``message`` at plain Python's line, the caret under ``caret``."""
    expected = plain(text, path)
    assert expected[0] == "error", f"plain Python gives rows {expected[1]}"
    got = outcomes(space)
    first = next(iter(got.values()))
    assert all(g == first for g in got.values()), got
    kind, said, line, col, end, config = first
    assert kind == "error" and said == message, first
    assert line == expected[2], (first, expected)
    source = text.splitlines()[line - 1]
    assert col is not None and source[col:end] == caret, (source[col:end], first)
    return config


# -- class 1: bool constants and settings ------------------------------------------------------

BOOLS = """
from beast import *
FLAG = True
OFF = False
ON = 2 > 1                      # a bool computed from constants
flag = setting("flag", False)
a = range(5)

@iterator
def b(a):                       # a deferred iterator: the bools pick the branch
    if flag or OFF:
        return [0]
    return range(a % 3 + FLAG)

@iterator
def g(b):                       # a generator iterator reads them as numbers
    n = b + FLAG + flag
    while n > 0 and not OFF:
        yield n
        n -= 2

@condition
def c(a):
    return FLAG and a > 3

@condition
def k(a, b, ON):                # a bool constant as a parameter
    return (a + b) * ON == 3 and not flag

@condition
def m(a, g):                    # not inlined: a local first
    t = a * FLAG + flag + g * ON
    return t == 4 and FLAG is True

n = condition(lambda g: g > 2 + OFF)
"""


@pytest.mark.parametrize("overrides", [None, {"flag": True}], ids=["default", "flag=True"])
def test_bool_constants_and_settings_are_constants_of_every_body(overrides, tmp_path_factory):
    space, path, text = _space(tmp_path_factory, "bools", BOOLS, overrides)
    got = assert_rows_of_python(space, path, text, overrides)
    assert len(got) >= 3 and len({r[0] for r in got}) >= 3        # the conditions keep some of each a


FAILING_BOOL = """
from beast import *
FLAG = True
flag = setting("flag", False)
a = range(4)

@condition
def c(a):
    return (FLAG or flag) and 6 // (a - 2) > 1
"""


def test_a_bool_constant_before_an_error_is_python_s_error(tmp_path_factory):
    space, path, text = _space(tmp_path_factory, "failing_bool", FAILING_BOOL)
    config = assert_error_of_python(space, path, text, "division by zero in condition 'c'", "6 // (a - 2)")
    assert config == {"a": 2}


# -- class 2: comprehension scopes -------------------------------------------------------------

COMPREHENSIONS = """
from beast import *
K = 3
a = range(4)
b = iterator([1, 2])

@condition
def c1(a):                      # the comprehension's b is its own; the later b is the node
    xs = [b for b in range(3)]
    return len(xs) + b * a == 7

@condition
def c2(a):                      # a generator, a set and a dict comprehension; a constant hidden
    s = sum(K for K in range(a))
    t = {b % 2 for b in range(a)}
    u = {b: K for b in range(2)}
    return s + len(t) + len(u) + K + b == 9

@condition
def c3(a):                      # nested; the first iterable reads the free name b
    xs = [[b for b in range(b)] for a in range(b)]
    return len(xs) * a == b + 4 or [b for b in range(b)] == [0, 1, 2]

@iterator
def d(a):                       # a deferred iterator
    return [x for x in range(a + b) if [b for b in range(x)] != [] and x >= b]

@iterator
def e(d):                       # a generator iterator
    for x in range(d + 1):
        if any(b > 1 for b in range(x)) or x == b:
            yield x + b
"""


def test_a_comprehension_variable_does_not_hide_a_free_name(tmp_path_factory):
    space, path, text = _space(tmp_path_factory, "comprehensions", COMPREHENSIONS)
    got = assert_rows_of_python(space, path, text)
    assert len(got) >= 5 and {r[1] for r in got} == {1, 2}


FAILING_COMPREHENSION = """
from beast import *
a = range(4)
b = iterator([3, 2])

@condition
def c(a):
    xs = [b // (a - 1) for b in range(b)]
    return len(xs) > b
"""


def test_an_error_inside_a_comprehension_that_rebinds_a_node_name(tmp_path_factory):
    space, path, text = _space(tmp_path_factory, "failing_comprehension", FAILING_COMPREHENSION)
    config = assert_error_of_python(space, path, text, "division by zero", "b // (a - 1)")
    assert config["a"] == 1


def test_the_free_names_of_a_body_follow_python_s_scopes():
    import ast

    from beast.frontend.functions import free_names, function_locals
    fdef = ast.parse("def f(a):\n"
                     "    x = [b for b in range(b)]\n"
                     "    y = {k: v for k in range(3) for v in range(k + K)}\n"
                     "    z = [[c for c in range(c)] for d in range(a)]\n"
                     "    return sum(e for e in x if e > b) + len({f for f in y}) + c\n").body[0]
    assert function_locals(fdef) == {"a", "x", "y", "z"}
    assert [n for n, _ in free_names(fdef)] == ["range", "b", "K", "c", "sum", "len"]


# -- lambdas -----------------------------------------------------------------------------------

LAMBDAS = """
from beast import *
a = range(4)
b = iterator(lambda a: range(a))
c = condition(lambda a, b: a + b > 4); d = condition(lambda b: b == 1)
e = condition(lambda a, b: round(a / 3) == b and [b for b in range(2)] == [0, 1])
"""


def test_lambdas_are_conditions_and_iterators(tmp_path_factory):
    space, path, text = _space(tmp_path_factory, "lambdas", LAMBDAS)
    got = assert_rows_of_python(space, path, text)
    assert set(got) == {(2, 0), (3, 0)}
    assert list(space.conditions) == ["c", "d", "e"]


@pytest.mark.parametrize("text, message, caret", [
    ("a = range(4)\nc = condition(lambda a, k=2: a > k)\n",
     "unsupported syntax in a beast function: defaults, keyword-only or positional-only parameters", "2"),
    ("a = range(4)\nc = condition(lambda a: (lambda x: x)(a) > 1)\n",
     "unsupported syntax in a beast function: lambda", "lambda x: x"),
    ("a = range(4)\nc = condition(lambda a: b > 1)\n", "undefined name 'b'", "b"),
    ("a = range(4)\nb = range(2)\nc = condition(lambda a, q: a > q)\n",
     "parameter 'q' of 'c' names no iterator, derived variable, setting or constant", "q"),
])
def test_an_unsupported_lambda_is_an_error_at_its_caret(text, message, caret, tmp_path):
    path = write_space(tmp_path, "from beast import *\n" + text)
    with pytest.raises(beast.SpaceError) as info:
        beast.load(path)
    err = info.value
    line = open(path).read().splitlines()[err.lineno - 1]
    assert err.message == message and line[err.col:err.end_col] == caret, str(err)


def test_an_error_in_a_lambda_points_into_it(tmp_path_factory):
    text = "from beast import *\na = range(4)\nc = condition(lambda a: 6 // (a - 2) > 1)\n"
    space, path, text = _space(tmp_path_factory, "failing_lambda", text)
    config = assert_error_of_python(space, path, text, "division by zero in condition 'c'", "6 // (a - 2)")
    assert config == {"a": 2}


# -- errors at the operation that failed -------------------------------------------------------

OVERFLOWS = {       # name -> (text, message, the text under the caret, the configuration)
    "derived": ("from beast import *\na = range(1, 10**3, 100)\nbig = a ** 20\nc = condition(big < 0)\n",
                "integer overflow in derived variable 'big'", "a ** 20", {"a": 101}),
    "nested": ("from beast import *\na = range(1, 10**3, 100)\nb = range(2)\n"
               "big = b + select(a > 200, (a ** 5) * (a ** 5), 0)\nc = condition(big < 0)\n",
               "integer overflow in derived variable 'big'", "(a ** 5) * (a ** 5)", {"a": 201, "b": 0}),
}


@pytest.mark.parametrize("name", list(OVERFLOWS))
def test_an_overflow_in_a_derived_variable_has_a_caret_in_every_backend(name, tmp_path_factory):
    text, message, caret, config = OVERFLOWS[name]
    space, path, text = _space(tmp_path_factory, f"overflow_{name}", text)
    got = outcomes(space)
    first = next(iter(got.values()))
    assert all(g == first for g in got.values()), got
    assert first[:3] == ("error", message, 3 + (name == "nested")) and first[5] == config, first
    assert text.splitlines()[first[2] - 1][first[3]:first[4]] == caret


@pytest.mark.parametrize("expr, message, caret", [
    ('a + "x"', "TypeError: unsupported operand type(s) for +: 'int' and 'str'", 'a + "x"'),
    ('(a * 2) - "x" * a', "TypeError: unsupported operand type(s) for -: 'int' and 'str'", '(a * 2) - "x" * a'),
    ('select(a > 1, "p", "q") < a', "TypeError: '<' not supported between instances of 'str' and 'int'",
     'select(a > 1, "p", "q") < a'),
    ('-select(a > 1, "p", "q")', "TypeError: bad operand type for unary -: 'str'", '-select(a > 1, "p", "q")'),
    ('"x" * 1.5 + a', "TypeError: can't multiply sequence by non-int of type 'float'", '"x" * 1.5'),
])
def test_a_module_level_type_error_is_refused_when_the_space_loads(expr, message, caret, tmp_path):
    path = write_space(tmp_path, f"from beast import *\na = range(1, 5)\nb = {expr}\nc = condition(b == 2)\n")
    with pytest.raises(beast.SpaceError) as info:
        beast.load(path)
    err = info.value
    assert (err.message, err.lineno) == (message, 3), str(err)
    assert open(path).read().splitlines()[2][err.col:err.end_col] == caret, str(err)


def test_what_python_computes_at_module_level_is_not_refused(tmp_path_factory):
    """String repetition is Python's: the Python backend gives the rows, C and Lua,
    which hold no strings in the loop nest, refuse under the operation they cannot compile."""
    text = 'from beast import *\na = range(1, 5)\ns = "x" * a\nc = condition((s == "xx") | (s == "xxx"))\n'
    space, path, text = _space(tmp_path_factory, "strings", text)
    assert rows(space.enumerate(backend="python")) == [(1,), (4,)]
    for backend in [b for b in AVAILABLE if b != "python"]:
        with pytest.raises(beast.BeastError) as info:
            space.enumerate(backend=backend)
        err = info.value
        assert "cannot" in err.message and err.lineno == 3, str(err)
        assert text.splitlines()[2][err.col:err.end_col] == '"x" * a', str(err)


def test_a_type_error_of_a_value_known_only_at_run_time_has_a_caret(tmp_path_factory):
    """A choice between a string and an integer: Python's TypeError at the first configuration
    that adds the string, under the '+'; C and Lua hold no such choice and refuse under it."""
    text = ('from beast import *\na = range(1, 5)\ns = select(a > 2, "x", 2)\nb = a + s * 2\n'
            'c = condition(b == 6)\n')
    space, path, text = _space(tmp_path_factory, "mixed", text)
    with pytest.raises(beast.EvaluationError) as info:
        space.enumerate(backend="python")
    err = info.value
    assert err.message == "TypeError: unsupported operand type(s) for +: 'int' and 'str' in derived variable 'b'"
    assert (err.lineno, text.splitlines()[3][err.col:err.end_col], err.config) == (4, "a + s * 2", {"a": 3})
    for backend in [b for b in AVAILABLE if b != "python"]:
        with pytest.raises(beast.BeastError) as info:
            space.count(backend=backend)
        err = info.value
        assert "a choice between str and int" in err.message and err.lineno == 3, str(err)
        assert text.splitlines()[2][err.col:err.end_col] == 's = select(a > 2, "x", 2)'[4:], str(err)


@pytest.mark.skipif("lua" not in AVAILABLE, reason="the Lua backend is not available")
def test_lua_s_overflow_past_2_53_has_the_caret_of_the_operation(tmp_path_factory):
    text = "from beast import *\na = range(1, 10)\nbig = 1 + a * 2 ** 50\nc = condition(big < 0)\n"
    space, path, text = _space(tmp_path_factory, "lua_overflow", text)
    assert space.count(backend="python") == 9
    with pytest.raises(beast.EvaluationError) as info:
        space.enumerate(backend="lua")
    err = info.value
    assert err.message == "integer overflow in derived variable 'big'" and err.lineno == 3
    assert text.splitlines()[2][err.col:err.end_col] in ("a * 2 ** 50", "1 + a * 2 ** 50"), str(err)
