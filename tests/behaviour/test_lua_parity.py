"""The Lua backend gives plain Python's outcome where it once departed, checked in every
backend (C with 1 and 3 threads), in enumerate and in count:

- beast's ``|``, ``&``, ``~`` of truth values, comparisons and ``select`` used as numbers: Lua
  printed ``x and 1 or 0`` around an ``or`` without parentheses (silently wrong in a condition, an
  internal error in arithmetic);
- a counting nest evaluated every length at once: an empty outer loop did not stop an inner range
  past 2**53 from failing, and the error named the outer iterator;
- a constant past 2**53 in an iterator was counted where enumerating it fails: a count raises what
  the enumeration raises (message, line, column, configuration);
- a literal past 64 bits is refused at its caret, with the same words in every backend.

The expected rows are computed here in plain Python (beast's ``&``/``|``/``~`` of truth values are
``and``/``or``/``not``, ``select(c, x, y)`` is ``x if c else y``).
"""
from __future__ import annotations

import pytest

import beast
from conftest import available_backends, rows, write_space

AVAILABLE = available_backends()
RUNS = [(b, None) for b in AVAILABLE if b != "c"] + ([("c", 1), ("c", 3)] if "c" in AVAILABLE else [])
A, B = range(0, 6), range(0, 3)

needs_lua = pytest.mark.skipif("lua" not in AVAILABLE, reason="the Lua backend is not available")


def outcome(space, backend, threads, mode):
    """('rows', rows) / ('count', n) / ('error', message, line, col, configuration) /
    ('refused', message, line, col)."""
    try:
        if mode == "count":
            return ("count", space.count(backend=backend, threads=threads))
        return ("rows", rows(space.enumerate(backend=backend, threads=threads)))
    except beast.EvaluationError as err:
        return ("error", err.message, err.lineno, err.col, dict(err.config))
    except beast.SpaceError as err:
        return ("refused", err.message, err.lineno, err.col)


def every_outcome(space, runs=None):
    """{"backend/threads/mode": outcome} over ``runs`` (default: every backend)."""
    return {f"{b}/{t}/{m}": outcome(space, b, t, m) for b, t in (runs or RUNS) for m in ("enumerate", "count")}


def assert_rows_everywhere(space, expected):
    for name, got in every_outcome(space).items():
        want = ("count", len(expected)) if name.endswith("count") else ("rows", expected)
        assert got == want, f"{name}: {got} != {want}"


def load(tmp_path, name, text):
    # one file name per space: an error's source line is read back through linecache
    return beast.load(write_space(tmp_path, "from beast import *\n" + text, name + ".py"))


# ---------------------------------------------------------------------------------------------
# Truth values used as numbers (class 5)

# (beast's module-level expression, the same in plain Python), each an integer value
VALUES = [
    ("((a > 2) | (b < 1)) * 3", "((a > 2) or (b < 1)) * 3"),
    ("3 * ((a > 2) | (b < 1)) - 1", "3 * ((a > 2) or (b < 1)) - 1"),
    ("((a > 2) & (b < 1)) + 1", "((a > 2) and (b < 1)) + 1"),
    ("~(a > 1) + 1", "(not (a > 1)) + 1"),
    ("1 - ~((a > 2) | (b < 1))", "1 - (not ((a > 2) or (b < 1)))"),
    ("~((a > 2) & (b < 1) | (a == b)) * 2 - 1", "(not (((a > 2) and (b < 1)) or (a == b))) * 2 - 1"),
    ("-((a > 2) | (b < 1))", "-((a > 2) or (b < 1))"),
    ("abs(-((a > 2) | (b < 1)))", "abs(-((a > 2) or (b < 1)))"),
    ("((a > 2) | (b < 1)) // 1 + ((a < 1) | (b > 1)) % 2", "((a > 2) or (b < 1)) // 1 + ((a < 1) or (b > 1)) % 2"),
    ("((a > 2) | (b < 1)) ** 2 + a", "((a > 2) or (b < 1)) ** 2 + a"),
    ("a // (((a > 2) | (b < 1)) + 1)", "a // (((a > 2) or (b < 1)) + 1)"),
    ("select((a > 2) | (b < 1), a > 1, b > 0) * 2", "((a > 1) if ((a > 2) or (b < 1)) else (b > 0)) * 2"),
    ("select(a > 1, (a > 2) | (b < 2), 5) + 1", "(((a > 2) or (b < 2)) if a > 1 else 5) + 1"),
    ("select(a > 3, 0, (a < 1) | (b > 1))", "0 if a > 3 else ((a < 1) or (b > 1))"),
    ("select((a > 3) & (b > 0), (a < 1) | (b > 1), ~(b > 0)) * a",
     "(((a < 1) or (b > 1)) if ((a > 3) and (b > 0)) else (not (b > 0))) * a"),
    ("(a > 1) + (b > 1)", "(a > 1) + (b > 1)"),
    ("a * (b > 0) + ((a > 1) == (b > 0))", "a * (b > 0) + ((a > 1) == (b > 0))"),
    ("((a > 2) | (b < 1)) == 1", "((a > 2) or (b < 1)) == 1"),
    ("((a > 1) > (b > 1)) + ((a > 1) < 2)", "((a > 1) > (b > 1)) + ((a > 1) < 2)"),
    ("((a > 1) != (b > 0)) * 2", "((a > 1) != (b > 0)) * 2"),
    ("((a > 2) | False) * 2 + (True & (a < 2))", "((a > 2) or False) * 2 + (True and (a < 2))"),
    ("(a | b) * 2 + (a & 3)", "(a | b) * 2 + (a & 3)"),
    ("((a | b) > 2) | (a == 0)", "((a | b) > 2) or (a == 0)"),
    ("min((a > 1) | (b > 1), b) + max(a > 1, b > 0)", "min((a > 1) or (b > 1), b) + max(a > 1, b > 0)"),
    ("sum([(a > 1) | (b < 1), b > 0, a])", "sum([(a > 1) or (b < 1), b > 0, a])"),
    ("t * 2 + ~t", "t * 2 + (not t)"),
    ("(t + u) * (a + 1)", "(t + u) * (a + 1)"),
    ("select(t, a, b) + t", "(a if t else b) + t"),
]
# derived truth values the expressions above read
DERIVED = "t = (a > 2) | (b < 1)\nu = ~t & (a > 0)\n"


def _py(text, a, b):
    t = (a > 2) or (b < 1)
    env = {"a": a, "b": b, "t": t, "u": (not t) and (a > 0)}
    return eval(text, {"__builtins__": {"min": min, "max": max, "sum": sum, "abs": abs}}, env)  # noqa: S307


def test_truth_values_used_as_numbers_are_python_values_in_every_backend(tmp_path):
    """Each expression is an iterator's one value: every row shows every value."""
    lines = [f"v{i} = iterator({text})" for i, (text, _) in enumerate(VALUES)]
    space = load(tmp_path, "values", "a = range(0, 6)\nb = range(0, 3)\n" + DERIVED + "\n".join(lines) + "\n")
    expected = [(a, b, *(int(_py(py, a, b)) for _, py in VALUES)) for a in A for b in B]
    assert_rows_everywhere(space, expected)


# (beast's condition, plain Python), truth values and numbers read by conditions
CONDITIONS = [
    ("(a > 2) | (b < 1)", "(a > 2) or (b < 1)"),
    ("((a > 2) | (b < 1)) == 1", "((a > 2) or (b < 1)) == 1"),
    ("((a > 2) | (b < 1)) * 3 > 2", "((a > 2) or (b < 1)) * 3 > 2"),
    ("~(a > 1) + 1 > 1", "(not (a > 1)) + 1 > 1"),
    ("((a > 2) | (b < 1)) > ((a < 4) & (b > 0))", "((a > 2) or (b < 1)) > ((a < 4) and (b > 0))"),
    ("((a > 2) | (b < 1)) == ((a < 4) & (b > 0))", "((a > 2) or (b < 1)) == ((a < 4) and (b > 0))"),
    ("((a > 1) < (b > 0)) | (a == 3)", "((a > 1) < (b > 0)) or (a == 3)"),
    ("select((a > 2) | (b < 1), a > 1, b > 0)", "(a > 1) if ((a > 2) or (b < 1)) else (b > 0)"),
    ("~t | (d > 2)", "(not t) or (d > 2)"),
    ("d * (a + 1) > 4", "d * (a + 1) > 4"),
]


def test_truth_values_used_as_numbers_in_conditions_keep_python_rows(tmp_path):
    """The issue's ``(a > 2) | (a < 1)`` compared with 1 kept rows Python rejects; each condition
    here acts on its own slot ``s`` (a condition, a derived variable, a select, a @condition)."""
    text = ["s = range(0, %d)" % (len(CONDITIONS) + 2), "a = range(0, 6)", "b = range(0, 3)",
            "t = (a > 2) | (b < 1)", "d = ((a > 2) | (b < 1)) * 3 + ~(b > 0)"]
    preds = []
    for i, (cond, py) in enumerate(CONDITIONS):
        text.append(f"c{i} = condition((s == {i}) & ({cond}))")
        preds.append(py)
    n = len(CONDITIONS)
    text += [f"k{n} = condition(select(s == {n}, ((a > 2) | (b < 1)) * (a - 2), 0))",
             "@condition", "def body(s, a, b):",
             f"    return s == {n + 1} and ((a > 2 or b < 1) * 3 + (not a > 3) > 3)"]
    preds += ["((a > 2) or (b < 1)) * (a - 2)", "((a > 2 or b < 1) * 3 + (not a > 3) > 3)"]
    space = load(tmp_path, "conditions", "\n".join(text) + "\n")

    def rejected(s, a, b):
        t = (a > 2) or (b < 1)
        env = {"a": a, "b": b, "t": t, "d": ((a > 2) or (b < 1)) * 3 + (not (b > 0))}
        return bool(eval(preds[s], {}, env))  # noqa: S307

    expected = [(s, a, b) for s in range(len(preds)) for a in A for b in B if not rejected(s, a, b)]
    outcomes = every_outcome(space)
    first = outcomes[f"{RUNS[0][0]}/{RUNS[0][1]}/enumerate"]
    assert first[0] == "rows" and sorted(first[1]) == sorted(expected)
    for name, got in outcomes.items():
        assert got == (("count", len(expected)) if name.endswith("count") else first), name


def test_the_issue_example_in_a_condition_and_in_arithmetic(tmp_path):
    """Lua kept 1 to 4 where Python keeps 1 and 2, and failed with "attempt to perform arithmetic
    on a boolean value" once the value was multiplied."""
    space = load(tmp_path, "issue5", "a = range(0, 5)\nc = condition(((a > 2) | (a < 1)) == 1)\n")
    assert_rows_everywhere(space, [(1,), (2,)])
    space = load(tmp_path, "issue5b", "a = range(0, 5)\nd = ((a > 2) | (a < 1)) * 3\nc = condition(d > 1)\n")
    assert_rows_everywhere(space, [(1,), (2,)])


# ---------------------------------------------------------------------------------------------
# A count raises what the enumeration raises, and nothing in a loop that never runs (classes 6, 4)

@pytest.mark.parametrize("name, text", [
    ("empty_range", "d = range(0, 0)\ne = range(0, 2**60)\n"),
    ("empty_list", "d = iterator([])\ne = range(2**60, 2**60 + 3)\n"),
    ("empty_middle", "a = range(2)\nd = range(a, 0)\ne = range(d, 2**60)\n"),
    ("empty_setting", "n = setting('n', 0)\nd = range(n)\ne = iterator(2**60)\nf = range(3)\n"),
])
def test_a_count_raises_nothing_inside_a_loop_that_never_runs(name, text, tmp_path):
    """The issue's: an empty outer iterator and an inner range past 2**53 gave 0 rows everywhere,
    but Lua's count raised "integer overflow in iterator 'd'" (the empty one)."""
    assert_rows_everywhere(load(tmp_path, name, text), [])


@needs_lua
@pytest.mark.parametrize("name, text, error", [
    ("wide_outer", "a = iterator([1, 2**53 + 1])\nb = range(3)\n", ("integer overflow in iterator 'a'", 2, {})),
    ("wide_inner", "b = range(3)\na = iterator([1, 2**53 + 1])\n", ("integer overflow in iterator 'a'", 3, {"b": 0})),
    ("wide_first", "b = range(1, 3)\na = iterator([2**55, 1])\nc = range(2)\n",
     ("integer overflow in iterator 'a'", 3, {"b": 1})),
    ("wide_over_empty", "a = iterator([1, 2**53 + 1])\nb = range(0)\n", ("integer overflow in iterator 'a'", 2, {})),
    ("wide_range", "a = range(2**60, 2**60 + 3)\nb = range(2)\n", ("integer overflow in iterator 'a'", 2, {})),
    ("wide_scalar", "a = range(2)\nb = iterator(2**60)\nc = range(4)\n", ("integer overflow in iterator 'b'", 3, {"a": 0})),
    ("wide_stop", "a = range(1, 5)\nb = range(0, 2**60)\n", ("integer overflow in iterator 'b'", 3, {"a": 1})),
])
def test_lua_counts_raise_what_lua_enumerations_raise(name, text, error, tmp_path):
    """Lua's ``iterator([1, 2**53 + 1])`` counted 6 where enumerating it fails; past 2**53 only Lua
    fails (its documented overflow): its count says exactly what its enumeration says."""
    space = load(tmp_path, name, text)
    got = {mode: outcome(space, "lua", None, mode) for mode in ("enumerate", "count")}
    assert got["enumerate"] == got["count"], got
    kind, message, line, col, config = got["count"]
    assert (kind, message, line, config) == ("error", *error)
    # the caret: under the range(...) or iterator(...) call of the iterator that fails
    source = (tmp_path / f"{name}.py").read_text().splitlines()[line - 1]
    assert source[col:].startswith(("range(", "iterator(")), (source, col)


def test_a_wide_range_stop_is_reported_at_the_failing_iterator(tmp_path):
    """``a = range(1, 5)``, ``b = range(0, 2**60)``: Lua's count said "integer overflow in iterator
    'a'"; now both modes name b, with the caret under ``range(0, 2**60)``."""
    if "lua" not in AVAILABLE:
        pytest.skip("the Lua backend is not available")
    space = load(tmp_path, "wide_stop_caret", "a = range(1, 5)\nb = range(0, 2**60)\n")
    for mode in ("enumerate", "count"):
        with pytest.raises(beast.EvaluationError) as info:
            getattr(space, mode)(backend="lua")
        err = info.value
        assert (err.message, err.lineno, err.col, err.end_col, err.config) == \
            ("integer overflow in iterator 'b'", 3, 4, 19, {"a": 1})
        assert "2**53" in err.hint


@pytest.mark.parametrize("name, text, line, col, value", [
    ("past64_stop", "a = range(1, 5)\nb = range(0, 2**64)\n", 3, 13, 2 ** 64),
    ("past64_list", "a = iterator([1, 2**64])\nb = range(3)\n", 2, 17, 2 ** 64),
    ("past64_start", "b = range(3)\na = range(-2**63 - 1, 0)\n", 3, 10, -2 ** 63 - 1),
])
def test_a_literal_past_64_bits_is_refused_at_its_caret_in_every_backend(name, text, line, col, value, tmp_path):
    """Past 2**63 Python and Lua counted 3 (or named the other iterator) where C refused the literal:
    now every backend refuses it, in both modes, with the same words at the literal."""
    space = load(tmp_path, name, text)
    message = f"the integer {value} does not fit in 64 bits: beast's integers run from -2**63 to 2**63-1"
    for run, got in every_outcome(space).items():
        assert got == ("refused", message, line, col), run


@needs_lua
def test_a_lua_length_past_2_53_is_the_overflow_of_its_iterator(tmp_path):
    """Both ends are exact, the length is not: Lua's documented overflow names that iterator, with
    the values of the loops around it (auto then counts in Python or C)."""
    space = load(tmp_path, "long_range", "b = range(2)\na = range(-2**52 - 1, 2**52 + 1 + b)\n")
    with pytest.raises(beast.EvaluationError) as info:
        space.count(backend="lua")
    assert (info.value.message, info.value.lineno, info.value.config) == \
        ("integer overflow in iterator 'a'", 3, {"b": 0})
    assert "2**53" in info.value.hint
    assert space.count(backend="auto") == 2 * (2 ** 53 + 2) + 1


def test_a_counting_nest_is_counted_as_its_loops_run(tmp_path):
    """Empty lengths stop the product at any depth; the lengths that follow an empty one are not
    evaluated; a count is the product of the others (checked against Python for small ranges)."""
    cases = [("a = range(3)\nb = range(a, 2)\nc = range(5, a, -2)\nd = range(a - 1)\n",
              lambda: [(a, b, c, d) for a in range(3) for b in range(a, 2) for c in range(5, a, -2)
                       for d in range(a - 1)]),
             ("a = range(4)\nb = range(2, a)\nc = iterator([7, 8])\nd = range(a)\n",
              lambda: [(a, b, c, d) for a in range(4) for b in range(2, a) for c in (7, 8) for d in range(a)])]
    for i, (text, make) in enumerate(cases):
        space = load(tmp_path, f"nest{i}", text)
        expected = make()
        assert_rows_everywhere(space, expected)



def test_a_range_whose_stop_alone_reaches_2_53_counts_its_rows_in_lua(tmp_path):
    # its values stay below 2**53 (exact in Lua); only the exclusive stop is 2**53: enumerate gives
    # the rows, and the count must say as many (it once raised "integer overflow in iterator 'b'")
    for i, tail in enumerate(("", "@condition\ndef c(a, b):\n    return round(b / 3) < 0 and a > 5\n")):
        space = load(tmp_path, f"stop53_{i}", "a = range(3)\nb = range((2**53 - 1), (2**53 - 1) + 1)\n" + tail)
        assert_rows_everywhere(space, [(a, 2**53 - 1) for a in range(3)])
