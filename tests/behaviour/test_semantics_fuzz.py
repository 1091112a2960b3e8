"""Random spaces of the shapes where backends once departed from Python, against a
plain-Python oracle and against each other.

Each space has two iterators, an optional module-level condition that rejects a prefix of ``a``,
a derived value ``d`` (a division, a power that is complex for some ``a``, an integer past 64
bits at one ``a``, a float) and one ``@condition`` function whose body is one of:

- a local whose value may fail and is never read (or is overwritten): its error is an effect;
- ``any``/``all``/``sum``/``min``/``max`` of a list comprehension (every element first, errors
  included) or of a generator expression (lazy);
- a complex intermediate value (a negative number to a fractional power);
- a result that is not a number (a string, a list, None), read for its truth value;
- a function of ``d`` that C cannot translate (``round``), tabulated over ``d``'s values, some of
  which only rejected configurations produce;
- an integer past 64 bits midway (``a * 2 ** 61 // 8``, a sum in a loop), which C checks and
  Python's unbounded integers are checked for too (Lua, exact within 2**53, sits this one out).

The oracle is the same text run as plain Python (tests/support/oracle.py), with beast's two departures
written out in it independently of beast: a complex power and an integer past 64 bits are errors.

Every backend (C with 1 and 3 threads) must give the oracle's rows in the same order, or, where
the oracle raises, the same error as every other backend, at a line that holds the failing
operation. More examples: ``BEAST_SEMANTICS_EXAMPLES=500``.
"""
from __future__ import annotations

import builtins
import os
import re
import tempfile
import textwrap
from collections import Counter

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import beast
from conftest import available_backends, rows, write_space
from oracle import Model, ONode, OracleError, brute_force

AVAILABLE = available_backends()
EXAMPLES = int(os.environ.get("BEAST_SEMANTICS_EXAMPLES") or 0) or 40
INT64 = (-(1 << 63), (1 << 63) - 1)


def _pow(x, y):
    """The oracle's power: Python's, but a complex result is an error (beast's departure)."""
    out = x ** y
    if isinstance(out, complex):
        raise ArithmeticError("complex")
    return out


def _checked(v):
    """The oracle's integers: 64-bit (beast's departure); a larger one is an error."""
    if type(v) is int and not INT64[0] <= v <= INT64[1]:
        raise OverflowError("integer overflow")
    return v


def power(x, y, oracle):
    return f"_pow({x}, {y})" if oracle else f"({x}) ** {y}"


# -- the pieces --------------------------------------------------------------------------------

DERIVED = {      # name -> (text, oracle text); k is a small constant
    "division": lambda k, o: f"6 // (a - {k})",
    "complex": lambda k, o: power(f"a - {k}", "0.5", o),
    "wide": lambda k, o: ("_checked(2 ** (64 - 64 * min(a, 1)) + a)" if o else "2 ** (64 - 64 * min(a, 1)) + a"),
    "float": lambda k, o: f"a * 1.5 - {k}",
}
FAILING = [lambda k, o: f"1 // (a - {k})", lambda k, o: power(f"a - {k}", "-2", o),
           lambda k, o: f"1 / (a - {k})", lambda k, o: f"1 % (a - {k})", lambda k, o: power(f"a - {k}", "0.5", o)]


@st.composite
def bodies(draw):
    """(params, body lines in beast's text, the same in the oracle's text)."""
    k = draw(st.integers(0, 3))
    shape = draw(st.sampled_from(["dead", "fold", "complex", "nonnumber", "tabulated", "wide"]))
    out = []
    for o in (False, True):
        if shape == "dead":
            fail = draw(st.sampled_from(range(len(FAILING)))) if not o else fail
            later = draw(st.sampled_from(["", "v = 0", "return a > b"])) if not o else later
            lines = [f"v = {FAILING[fail](k, o)}"] + ([later] if later else []) + ["return a + b > 4"]
            params = ["a", "b"]
        elif shape == "fold":
            fold = draw(st.sampled_from(["any", "all", "sum", "min", "max"])) if not o else fold
            lazy = draw(st.booleans()) if not o else lazy
            over = draw(st.sampled_from(["[1, a]", "[a, 1, b]", "range(a + 1)"])) if not o else over
            truth = fold in ("any", "all")
            inner = f"6 // (x - {k}){' > 1' if truth else ''} for x in {over}"
            call = f"{fold}({inner})" if lazy else f"{fold}([{inner}])"
            lines = [f"return {call}{'' if truth else ' > 2'}"]
            params = ["a", "b"]
        elif shape == "complex":
            use = draw(st.sampled_from(["f == 1", "f > 1", "abs(f) > 1", "f != f"])) if not o else use
            lines = [f"f = {power(f'a - {k}', '0.5', o)}", f"return {use}"]
            params = ["a"]
        elif shape == "nonnumber":
            form = draw(st.sampled_from(range(4))) if not o else form
            lines = [[f"return 'x' if a > {k} else ''"],
                     [f"return [a] if a > {k} else []"],
                     [f"return None if a > {k} else 1"],
                     [f"s = 'x' if a > {k} else 'y'", "return s == 'x'"]][form]
            params = ["a"]
        elif shape == "wide":       # an integer past 64 bits midway (not the result): C's overflow
            p = draw(st.sampled_from([59, 60, 61, 62])) if not o else p
            loop = draw(st.booleans()) if not o else loop
            ck = (lambda x: f"_checked({x})") if o else (lambda x: x)
            term = ck("a * 2 ** %d" % p)
            if loop:
                lines = ["t = 0", "for i in range(3):", "    t = " + ck("t + " + term), "return t > 0"]
            else:
                lines = ["return " + ck(term + " // 8") + " > 2 ** 57"]
            params = ["a"]
        else:
            digits = draw(st.sampled_from([1, 2])) if not o else digits
            target = draw(st.sampled_from([1.4, 1.0, 0.0, 3.0])) if not o else target
            lines = [f"return round(d, {digits}) == {target}"]
            params = ["d"]
        out.append(lines)
    return params, out[0], out[1], shape


@st.composite
def semantic_spaces(draw):
    """(beast file text, oracle Model, shape)."""
    a0 = draw(st.integers(-2, 1))
    a1 = draw(st.integers(a0, 6))
    nb = draw(st.integers(1, 3))
    reject = draw(st.one_of(st.none(), st.integers(0, 4)))
    dkind = draw(st.sampled_from(sorted(DERIVED)))
    dk = draw(st.integers(0, 3))
    params, body, obody, shape = draw(bodies())
    text = ["from beast import *", f"a = range({a0}, {a1})", f"b = range({nb})"]
    if reject is not None:
        text.append(f"low = condition(a < {reject})")
    text.append(f"d = {DERIVED[dkind](dk, False)}")
    text += ["", "", "@condition", f"def c({', '.join(params)}):"] + ["    " + line for line in body]
    g = {"__builtins__": builtins, "_pow": _pow, "_checked": _checked}
    exec(compile("def c({}):\n{}\n".format(", ".join(params), textwrap.indent("\n".join(obody), "    ")),
                 "<oracle>", "exec"), g)
    dcode = compile(DERIVED[dkind](dk, True), "<oracle>", "eval")
    nodes = [ONode("a", "iterator", (), lambda env: range(a0, a1)),
             ONode("b", "iterator", (), lambda env: range(nb))]
    if reject is not None:
        nodes.append(ONode("low", "condition", ("a",), lambda env: env["a"] < reject))
    nodes.append(ONode("d", "derived", ("a",), lambda env: eval(dcode, g, {"a": env["a"]})))  # noqa: S307
    func = g["c"]
    nodes.append(ONode("c", "condition", tuple(params), lambda env: func(*(env[p] for p in params))))
    return "\n".join(text) + "\n", Model(nodes, ("a", "b")), shape


def outcome(space, backend, threads=None):
    """('ok', rows) or ('error', message, line, col, configuration)."""
    try:
        return ("ok", rows(space.enumerate(backend=backend, threads=threads)))
    except beast.EvaluationError as err:
        return ("error", err.message, err.lineno, err.col, dict(err.config))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(semantic_spaces())
def test_shapes_match_python_in_every_backend(case):
    text, model, shape = case
    note(text)
    try:
        expected = brute_force(model)
    except OracleError as err:
        expected = err
    with tempfile.TemporaryDirectory(prefix="beast-semantics-") as tmp:
        space = beast.load(write_space(tmp, text, "space.py"))
        # Lua's integers are exact within 2**53 only: past it, its own documented overflow
        runs = [(b, None) for b in AVAILABLE if b != "lua" or shape != "wide"]
        runs += [("c", 1), ("c", 3)] if "c" in AVAILABLE else []
        outcomes = {f"{b}/{t}": outcome(space, b, t) for b, t in runs}
    first = next(iter(outcomes))
    for name, got in outcomes.items():
        assert got == outcomes[first], f"{name} disagrees with {first}: {got} != {outcomes[first]}"
    result = outcomes[first]
    event(f"{shape}: {'an error' if result[0] == 'error' else 'rows'}")
    if isinstance(expected, OracleError):
        assert result[0] == "error", f"Python raises ({expected}), beast gives rows"
        message, lineno, col = result[1:4]
        line = text.splitlines()[lineno - 1]
        cause = expected.cause
        if isinstance(cause, ZeroDivisionError):
            assert re.match(r"(division|modulo) by zero", message), message
        elif isinstance(cause, ArithmeticError) and str(cause) == "complex":
            assert message.startswith("a negative number raised to a fractional power"), message
            assert "**" in line, line
        elif isinstance(cause, OverflowError):
            assert message.startswith("integer overflow"), message
        else:
            assert message.startswith(type(cause).__name__), (message, cause)
        assert col is not None, f"no caret: {message}"
        return
    assert result[0] == "ok", f"Python gives rows, beast raises {result}"
    assert Counter(result[1]) == expected
    assert result[1] == [r for r in _product_order(model) if r in expected], "rows out of order"


def _product_order(model):
    rows_ = []
    for a in model.nodes[0].fn({}):
        for b in model.nodes[1].fn({}):
            rows_.append((a, b))
    return rows_
