"""Kernel Tuner in and out: beast.from_kernel_tuner keeps exactly the configurations of Kernel
Tuner 1.5's Searchspace(...).list (its own test cases, every restriction form, random spaces),
and beast.kernel_tuner.tune_kernel runs Kernel Tuner on beast's configurations."""
from __future__ import annotations

import ast
import itertools
import os
import json
import math
import warnings

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import beast
from beast.errors import BeastError

kt_searchspace = pytest.importorskip("kernel_tuner.searchspace")
constraint = pytest.importorskip("constraint")
Searchspace = kt_searchspace.Searchspace


def kt_list(tune_params, restrictions, max_threads=1024, block_size_names=None):
    kw = {} if block_size_names is None else {"block_size_names": block_size_names}
    return Searchspace(tune_params, restrictions, max_threads, **kw).list


def beast_list(tune_params, restrictions, max_threads=1024, block_size_names=None, backend=None):
    space = beast.from_kernel_tuner(tune_params, restrictions, max_threads, block_size_names)
    configs = space.to_kernel_tuner(backend=backend)[1]
    assert len(configs) == len(set(configs)) == space.count(backend=backend)
    return configs


def same_as_kernel_tuner(tune_params, restrictions, max_threads=1024, block_size_names=None,
                         backend=None):
    ref = kt_list(tune_params, restrictions, max_threads, block_size_names)
    got = beast_list(tune_params, restrictions, max_threads, block_size_names, backend)
    assert set(got) == set(ref)
    # the user's values, types included (1.5 stays a float, "string_1" a str, True a bool)
    assert {tuple(map(type, c)) for c in got} == {tuple(map(type, c)) for c in ref}
    return got


# --- Kernel Tuner's own test cases (test/test_searchspace.py of KernelTuner/kernel_tuner) ------

SIMPLE = {"x": [1, 1.5, 2, 3], "y": [4, 5.5], "z": ["string_1", "string_2"]}


@pytest.mark.parametrize("backend", ["python", "c", "lua"])
def test_kt_simple_mixed_float_string(backend):
    got = same_as_kernel_tuner(SIMPLE, ["y % x == 1"], backend=backend)
    assert len(got) == 6
    assert sorted(got, key=repr)[0] == (1.5, 4, "string_1")


def test_kt_simple_single_bool():
    same_as_kernel_tuner(dict(SIMPLE, s=[True]), ["y % x == 1"])


def _min_func(gpu1, gpu2, gpu3, gpu4):
    return min([gpu1, gpu2, gpu3, gpu4]) >= 1


def test_kt_layers_constraint_and_named_function():
    tune_params = {f"gpu{i}": list(range(42)) for i in range(1, 5)}
    got = same_as_kernel_tuner(tune_params, [constraint.ExactSumConstraint(42), _min_func])
    assert len(got) == 10660


def test_kt_sort_space_without_restrictions():
    tune_params = {f"gpu{i}": list(range(42)) for i in range(1, 4)}
    assert len(same_as_kernel_tuner(tune_params, [])) == 42 ** 3


@pytest.mark.parametrize("bound,size", [(3, 18), (2, 24)])
def test_kt_mixed_param_types(bound, size):
    tune_params = {"int_param": [1, 2, 3], "float_param": [1.0, 2.0, 3.0],
                   "str_param": ["Alpha", "Bravo", "Charlie"], "bool_param": [True, False]}
    got = same_as_kernel_tuner(tune_params, [f"int_param + float_param > {bound}",
                                             "bool_param == False"])
    assert len(got) == size
    rows = beast.from_kernel_tuner(tune_params, [f"int_param + float_param > {bound}",
                                                 "bool_param == False"]).enumerate()
    assert rows.dtype["int_param"] == np.int64 and rows.dtype["float_param"] == np.float64
    assert rows.dtype["str_param"] == object and rows.dtype["bool_param"] == object


EXPDIST = {
    "block_size_x": [1, 2, 4, 8, 16] + [32 * i for i in range(1, 33)],
    "block_size_y": [2 ** i for i in range(6)],
    "tile_size_x": list(range(1, 11)),
}


def test_kt_small_searchspace():
    same_as_kernel_tuner(EXPDIST, ["block_size_x*block_size_y >= 32",
                                   "block_size_x*block_size_y <= 1024"])


def test_kt_full_searchspace_expdist():
    tune_params = dict(EXPDIST, tile_size_y=list(range(1, 11)),
                       temporal_tiling_factor=list(range(1, 11)), max_tfactor=[10],
                       loop_unroll_factor_t=list(range(1, 11)), sh_power=[0, 1],
                       blocks_per_sm=[0, 1, 2, 3, 4])
    restrictions = [
        "block_size_x*block_size_y >= 32",
        "temporal_tiling_factor % loop_unroll_factor_t == 0",
        "block_size_x*block_size_y <= 1024",
        "(block_size_x*tile_size_x + temporal_tiling_factor * 2) * (block_size_y*tile_size_y + "
        "temporal_tiling_factor * 2) * (2+sh_power) * 4 <= 49152",
        "blocks_per_sm == 0 or (((block_size_x*tile_size_x + temporal_tiling_factor * 2) * "
        "(block_size_y*tile_size_y + temporal_tiling_factor * 2) * (2+sh_power) * 4) * "
        "blocks_per_sm <= 102400)",
    ]
    space = beast.from_kernel_tuner(tune_params, restrictions)
    assert space.count() == 349853          # Kernel Tuner's test asserts this size
    assert not space.python_restrictions    # every restriction compiled


# --- every restriction form -------------------------------------------------------------------

TP = {"a": [1, 2, 3, 4], "b": [1, 2, 3, 4], "c": ["x", "y"]}
LIMIT = 3


def named_all(a, b, c):
    if a > LIMIT:
        return False
    return b <= a


def by_dict(p):
    return p["a"] * p["b"] < 8 and p["c"] == "x"


@pytest.mark.parametrize("restrictions", [
    "a < b",                                   # one string, not in a list
    ["3 <= a * b < 9"],                        # a chained comparison
    ["not (a == b) and c != 'y'", "a / b > 0.5"],   # not, and, true division
    [lambda p: p["a"] > 1, "b != a"],          # a lambda over the parameter dict
    [lambda a, b, c: a % b == 0],              # a lambda with named parameters
    lambda p: p["a"] * p["b"] < 8 and p["c"] == "x",   # a monolithic callable
    by_dict,                                   # a function of the dict
    [named_all],                               # named parameters, reads a module constant
    [constraint.MaxProdConstraint(6), constraint.MinSumConstraint(3)],   # over all parameters
    [constraint.AllDifferentConstraint()],
    ["a != b != c"],                           # python-constraint: all different
], ids=lambda r: re.sub(r" at 0x[0-9a-f]+", "", repr(r))[:40])     # ids the same in every process (xdist)
def test_restriction_forms(restrictions):
    tune_params = TP
    if any(type(r).__module__.startswith("constraint") for r in np.atleast_1d(restrictions)) \
            or restrictions == ["a != b != c"]:
        tune_params = {"a": [1, 2, 3, 4], "b": [1, 2, 3, 4], "c": [1, 2, 3]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # every one of these compiles
        space = beast.from_kernel_tuner(tune_params, restrictions)
    assert not space.python_restrictions
    same_as_kernel_tuner(tune_params, restrictions)


def brute_force(tune_params, keep):
    names = list(tune_params)
    return {c for c in itertools.product(*tune_params.values()) if keep(dict(zip(names, c)))}


def test_tuple_form_binds_positionally():
    # (function, [names]): the function gets those parameters, in that order
    got = beast_list(TP, [(lambda x, y: x < y, ["b", "a"])])
    assert set(got) == brute_force(TP, lambda p: p["b"] < p["a"])


def test_constraint_with_variables_and_sets():
    restrictions = [(constraint.InSetConstraint({1, 3}), ["a"]),
                    (constraint.ExactProdConstraint(4), ["a", "b"])]
    got = beast_list(TP, restrictions)
    assert set(got) == brute_force(TP, lambda p: p["a"] in (1, 3) and p["a"] * p["b"] == 4)


def uses_math(a, b, c):
    return math.log2(a) < 1.5


def test_untranslatable_restriction_is_honoured_with_a_warning():
    with pytest.warns(UserWarning, match="uses_math.*cannot be compiled.*math") as record:
        space = beast.from_kernel_tuner(TP, [uses_math, "a < b < 4"])
    assert record[0].filename == __file__      # the warning points at the caller
    assert space.python_restrictions == ("<uses_math>",)
    with pytest.warns(UserWarning, match="uses_math"):        # again, for the second space
        same_as_kernel_tuner(TP, [uses_math, "a < b < 4"])
    assert space.count() == len(space.enumerate()) == 6
    chunks = list(space.iterate(chunk_size=1))
    assert sum(len(c) for c in chunks) == 6


def test_block_size_limit():
    tp = {"block_size_x": [16, 32, 64, 128], "block_size_y": [1, 2, 4, 8, 16], "q": [1, 2]}
    same_as_kernel_tuner(tp, ["q == 2 or block_size_x > 16"], max_threads=512)
    tp = {"bx": [16, 32, 64, 128], "by": [1, 2, 4, 8, 16]}
    got = same_as_kernel_tuner(tp, None, max_threads=256, block_size_names=["bx", "by"])
    assert max(x * y for x, y in got) == 256


def test_rows_carry_the_users_values():
    space = beast.from_kernel_tuner(SIMPLE, ["y % x == 1"])
    rows = space.enumerate()
    assert rows.dtype.names == ("x", "y", "z")
    assert rows.dtype["x"] == object and rows.dtype["y"] == object   # mixed int and float
    assert beast.from_kernel_tuner({"f": [0.5, 1.5]}).dtype["f"] == np.float64
    tune_params, configs = space.to_kernel_tuner()
    assert tune_params == SIMPLE and (3, 4, "string_1") in configs


def test_plain_integer_space_keeps_int64_columns():
    space = beast.from_kernel_tuner({"a": [1, 2, 4], "b": [3, 5]}, ["a * b > 4"])
    assert space.dtype == np.dtype([("a", np.int64), ("b", np.int64)])
    assert space.enumerate().tolist() == [(1, 5), (2, 3), (2, 5), (4, 3), (4, 5)]


def test_numpy_values():
    tune_params = {"a": np.arange(1, 5), "f": np.array([0.5, 1.5]), "s": np.array(["u", "v"])}
    got = beast_list(tune_params, ["a * f > 1", "s == 'u'"])
    assert set(got) == brute_force({k: v.tolist() for k, v in tune_params.items()},
                                   lambda p: p["a"] * p["f"] > 1 and p["s"] == "u")


def test_restrictions_are_hoisted_conditions():
    space = beast.from_kernel_tuner({"a": list(range(8)), "b": list(range(8)), "c": list(range(8))},
                                    ["a % 2 == 0", "b > a"])
    assert len(space.conditions) == 2
    dag = space.dag
    checks = {name: dag.depth[name] for name in space.conditions}
    assert sorted(checks.values()) == [1, 2]   # a's check right after a's loop, b's after b's


def test_errors_name_the_restriction():
    with pytest.raises(BeastError, match="unknown_name"):
        beast.from_kernel_tuner(TP, ["a < unknown_name"])
    with pytest.raises(BeastError, match="not a Python expression"):
        beast.from_kernel_tuner(TP, ["a <"])
    with pytest.raises(BeastError, match="tune_params"):
        beast.from_kernel_tuner({}, [])


def test_to_kernel_tuner_of_a_beast_space(tmp_path):
    path = tmp_path / "s.py"
    path.write_text("from beast import *\na = range(1, 5)\nb = range(a, 5)\n"
                    "odd = condition((a + b) % 2 == 1)\n")
    tune_params, configs = beast.load(path).to_kernel_tuner()
    assert tune_params == {"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]}
    assert configs == [(1, 1), (1, 3), (2, 2), (2, 4), (3, 3), (4, 4)]
    assert all(type(v) is int for c in configs for v in c)


# --- random spaces ------------------------------------------------------------------------------

NAMES = ["p0", "p1", "p2", "p3"]
VALUES = {
    "int": st.lists(st.integers(1, 12), min_size=1, max_size=4, unique=True),
    "float": st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 2.5, 4.0]), min_size=1, max_size=3,
                      unique=True),
    "str": st.lists(st.sampled_from(["u", "v", "w"]), min_size=1, max_size=3, unique=True),
    "bool": st.lists(st.booleans(), min_size=1, max_size=2, unique=True),
}


@st.composite
def random_space(draw):
    n = draw(st.integers(2, 4))
    kinds = [draw(st.sampled_from(["int", "int", "float", "str", "bool"])) for _ in range(n)]
    tune_params = {NAMES[i]: draw(VALUES[k]) for i, k in enumerate(kinds)}
    numeric = [NAMES[i] for i, k in enumerate(kinds) if k in ("int", "float")]
    ints = [NAMES[i] for i, k in enumerate(kinds) if k == "int"]
    others = [NAMES[i] for i, k in enumerate(kinds) if k in ("str", "bool")]

    def term():
        a = draw(st.sampled_from(numeric))
        op = draw(st.sampled_from(["", "+", "-", "*", "//", "%", "/"]))
        if op == "":
            return a
        if op in ("//", "%", "/"):
            return f"{a} {op} {draw(st.integers(1, 4))}"
        b = draw(st.sampled_from(numeric + [str(draw(st.integers(0, 6)))]))
        return f"{a} {op} {b}"

    def comparison():
        if others and (not numeric or draw(st.booleans())):   # Kernel Tuner needs a parameter
            p = draw(st.sampled_from(others))
            value = draw(st.sampled_from(tune_params[p]))
            return f"{p} {draw(st.sampled_from(['==', '!=']))} {value!r}"
        return f"{term()} {draw(st.sampled_from(['<', '<=', '>', '>=', '==', '!=']))} {term()}"

    def restriction():
        form = draw(st.sampled_from(["cmp", "chain", "and", "or", "not"]))
        if form == "chain" and ints:
            a, b = draw(st.sampled_from(ints)), draw(st.sampled_from(ints))
            return f"{draw(st.integers(0, 4))} <= {a} * {b} < {draw(st.integers(4, 40))}"
        if form == "and":
            return f"{comparison()} and {comparison()}"
        if form == "or":
            return f"({comparison()}) or ({comparison()})"
        if form == "not":
            return f"not ({comparison()}) or {comparison()}"
        return comparison()

    restrictions = [restriction() for _ in range(draw(st.integers(0, 3)))]
    return tune_params, restrictions


@settings(max_examples=int(os.environ.get("KT_EXAMPLES", 40)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_space())
def test_random_spaces_match_kernel_tuner(case):
    tune_params, restrictions = case
    try:
        kt_list(tune_params, restrictions)
    except ValueError:
        # Kernel Tuner's own solver fails on some spaces with no survivor (python-constraint:
        # "min() arg is an empty sequence"): compare with a plain-Python brute force instead
        names = list(tune_params)
        expected = {combo for combo in itertools.product(*tune_params.values())
                    if all(eval(r, {}, dict(zip(names, combo))) for r in restrictions)}  # noqa: S307
        assert set(beast_list(tune_params, restrictions, backend="python")) == expected
        return
    same_as_kernel_tuner(tune_params, restrictions, backend="python")


# --- Kernel Tuner out: tune_kernel in simulation mode --------------------------------------------

KERNEL = "__global__ void vector_add(float *c, float *a, float *b, int n) {}"


def _cache_file(tmp_path, tune_params, configs):
    """A tiny Kernel Tuner cache file: a time for every configuration."""
    cache = {}
    for i, config in enumerate(configs):
        key = ",".join(str(v) for v in config)
        entry = dict(zip(tune_params, config))
        entry.update(time=1.0 + (i * 7919 % 97) / 10.0, times=[1.0], compile_time=0.0,
                     verification_time=0, benchmark_time=1.0, strategy_time=0, framework_time=0,
                     timestamp="2025-01-01 00:00:00+00:00")
        cache[key] = entry
    doc = {"schema_version": "1.2.0", "device_name": "sim", "kernel_name": "vector_add",
           "problem_size": [1024], "tune_params_keys": list(tune_params), "tune_params": tune_params,
           "objective": "time", "cache": cache}
    path = tmp_path / "cache.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_tune_kernel_simulation_mode(tmp_path):
    from beast.kernel_tuner.space import tune_kernel
    tune_params = {"block_size_x": [32, 64, 128, 256], "tile": [1, 2, 3, 4]}
    restrictions = ["block_size_x * tile <= 256"]
    configs = kt_list(tune_params, restrictions)
    cache = _cache_file(tmp_path, tune_params, configs)
    args = [np.zeros(1024, np.float32)] * 3 + [np.int32(1024)]
    results, _ = tune_kernel("vector_add", KERNEL, 1024, args, tune_params,
                             restrictions=restrictions, simulation_mode=True, cache=cache,
                             quiet=True)
    assert {tuple(r[k] for k in tune_params) for r in results} == set(configs)
    # the same from a beast space, with a strategy
    space = beast.from_kernel_tuner(tune_params, restrictions)
    results, _ = tune_kernel("vector_add", KERNEL, 1024, args, space=space, simulation_mode=True,
                             cache=cache, quiet=True, strategy="random_sample",
                             strategy_options={"max_fevals": 5})
    assert 0 < len(results) <= 5
    assert all(tuple(r[k] for k in tune_params) in set(configs) for r in results)


def test_membership_restriction_answers_every_calling_convention():
    from kernel_tuner.util import check_restrictions
    from beast.kernel_tuner.space import _Membership
    keep = _Membership(["a", "b"], [(1, 2), (3, 4)])
    assert keep({"a": 1, "b": 2}) and keep(a=3, b=4) and keep(1, 2) and not keep({"a": 2, "b": 1})
    assert check_restrictions([keep], {"a": 3, "b": 4}, False)          # Kernel Tuner's own check
    assert not check_restrictions([keep], {"a": 3, "b": 3}, False)


# --- membership and sampling with the user's values -------------------------------------------

def _lambda_restriction(x, y, z, w):    # reads math: evaluated in Python
    return z != "string_2" or math.floor(x) > 1


def test_contains_agrees_with_is_param_config_valid():
    tune_params = dict(SIMPLE, w=[1, 2, 4])
    restrictions = ["y % x == 1 or w > 1", _lambda_restriction]      # the lambda runs in Python
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        space = beast.from_kernel_tuner(tune_params, restrictions)
    ref = Searchspace(tune_params, restrictions, 1024)
    names = list(tune_params)
    combos = list(itertools.product(*tune_params.values())) + [(7, 4, "string_1", 1), (1, 4, "other", 2)]
    got = space.contains([dict(zip(names, c)) for c in combos])
    want = [c in set(ref.list) for c in combos]
    assert got.tolist() == want and any(want) and not all(want)
    assert space.contains(dict(zip(names, ref.list[0]))) is True
    assert all(ref.is_param_config_valid(c) == w for c, w in zip(combos[:-2], want[:-2]))


def test_sample_gives_the_users_values_and_honours_python_restrictions():
    tune_params = dict(SIMPLE, w=[1, 2, 4])
    restrictions = ["y % x == 1 or w > 1", _lambda_restriction]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        space = beast.from_kernel_tuner(tune_params, restrictions)
        survivors = set(beast_list(tune_params, restrictions))
    for n in (1, 5, len(survivors), len(survivors) + 3):
        rows = space.sample(n, seed=3)
        got = [tuple(r) for r in rows.tolist()]
        assert len(got) == len(set(got)) == min(n, len(survivors))
        assert set(got) <= survivors
        assert rows.dtype == space.dtype
    assert space.sample(5, seed=3).tolist() == space.sample(5, seed=3).tolist()
    # without Python restrictions the compiled sampler is used directly, decoded
    plain = beast.from_kernel_tuner(SIMPLE, ["y % x == 1"])
    rows = plain.sample(4, seed=0)
    assert {tuple(r) for r in rows.tolist()} <= set(beast_list(SIMPLE, ["y % x == 1"]))


# --- errors in the user's terms --------------------------------------------------------------------

def _no_generated_file(err):
    text = str(err)
    assert ".py" not in text and "kt_restriction" not in text and "_kt_v_" not in text, text


@pytest.mark.parametrize("backend", ["python", "c", "lua"])
def test_a_restriction_that_raises_is_an_error_in_the_users_terms(backend):
    tune_params, restrictions = {"a": [2.0, 0.0], "b": [1, 2]}, ["b / a > 0"]
    with pytest.raises(ZeroDivisionError):          # Kernel Tuner raises too
        kt_list(tune_params, restrictions)
    space = beast.from_kernel_tuner(tune_params, restrictions)
    for run in (lambda: space.count(backend=backend), lambda: space.enumerate(backend=backend),
                lambda: space.sample(3, seed=1, backend=backend)):
        with pytest.raises(BeastError, match="restriction 'b / a > 0': division by zero") as info:
            run()
        assert info.value.config == {"a": 0.0, "b": 1}         # the user's values, not indices
        assert "configuration: a=0.0, b=1" in str(info.value)
        _no_generated_file(info.value)
    with pytest.raises(BeastError, match="'b / a > 0'") as info:
        space.contains({"a": 0.0, "b": 2})
    assert info.value.config == {"a": 0.0, "b": 2}
    # checked as soon as their parameters are bound: 'a != 0' keeps b / a from dividing by zero
    same_as_kernel_tuner(tune_params, ["b / a > 0", "a != 0"])


def test_errors_name_renamed_parameters_and_python_restrictions_as_written():
    tune_params = {"block-size": [2, 0], "range": [1, 2]}
    space = beast.from_kernel_tuner(tune_params, [(lambda x, y: y // x > 0, ["block-size", "range"])])
    with pytest.raises(BeastError, match="division by zero") as info:
        space.count()
    assert info.value.config == {"block-size": 0, "range": 1}
    _no_generated_file(info.value)
    with pytest.warns(UserWarning, match="uses_log"):
        space = beast.from_kernel_tuner({"a": [2, 0], "b": [1, 2]}, [uses_log])
    with pytest.raises(BeastError, match="restriction <uses_log> raised ValueError") as info:
        space.count()
    assert info.value.config == {"a": 0, "b": 1}


def uses_log(a, b):
    return math.log(a) < b


# --- 64-bit integers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("tune_params,restriction", [
    ({"a": [2 ** 62, 2 ** 40], "b": [2, 4]}, "a * b > 0"),
    ({"a": [2 ** 61, 2 ** 40], "b": [2, 4]}, "a * b > 0"),
    ({"a": list(range(100)), "b": [1, 2]}, "2 ** a > b"),
    ({"a": [1, 2], "b": [1, 2]}, "a < 10 ** 20"),                      # a constant past 64 bits
    ({"a": [2 ** 70, 1], "b": [1, 2]}, "a > b"),                       # a value past 64 bits
    ({"a": [2 ** 40, 3], "b": [2 ** 30, 2]}, constraint.MaxProdConstraint(2 ** 69)),
])
def test_restrictions_beyond_64_bits_are_evaluated_in_python(tune_params, restriction):
    with pytest.warns(UserWarning, match="64 bits"):
        space = beast.from_kernel_tuner(tune_params, [restriction])
    assert len(space.python_restrictions) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_as_kernel_tuner(tune_params, [restriction])


def test_restrictions_within_64_bits_stay_compiled():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        space = beast.from_kernel_tuner({"a": list(range(60)), "b": [2 ** 30, 5]},
                                        ["2 ** a > b", "a * b < 2 ** 62", "-a % 7 == b % 3"])
    assert not space.python_restrictions


@pytest.mark.parametrize("text,bounds", [
    ("a + b", (-4, 14)), ("a - b", (-5, 13)), ("a * b", (-30, 40)), ("-a", (-10, 1)),
    ("a // b", (-10, 10)), ("a % b", (-4, 4)), ("b ** 2", (-16, 16)), ("a / b", ()),
    ("min(a, b)", (-3, 10)), ("abs(b)", (0, 4)), ("a if b else 0", (-1, 10)), ("a < b", (0, 1)),
    ("f * a", ()), ("len(s) * a", None), ("2 ** 63", "overflow"), ("a * 2 ** 62", "overflow"),
])
def test_int_bounds(text, bounds):
    from beast.kernel_tuner.source import _Untranslatable, int_bounds
    leaves = {"a": (-1, 10), "b": (-3, 4), "f": ()}
    node = ast.parse(text, mode="eval").body
    if bounds == "overflow":
        with pytest.raises(_Untranslatable, match="64 bits"):
            int_bounds(node, leaves)
    else:
        assert int_bounds(node, leaves) == bounds


def several_statements(a, b):
    c = a * b
    return c > 0


def test_an_overflow_beast_cannot_foresee_is_an_error_in_the_users_values():
    space = beast.from_kernel_tuner({"a": [2 ** 62, 2 ** 40], "b": [2, 4]}, [several_statements])
    with pytest.raises(BeastError, match="restriction <several_statements>: integer overflow") as info:
        space.count()
    assert info.value.config == {"a": 2 ** 62, "b": 2}
    assert "Kernel Tuner's are Python's" in info.value.hint
    _no_generated_file(info.value)


# --- arguments -------------------------------------------------------------------------------------

@pytest.mark.parametrize("max_threads", [None, "1024", True, float("nan"), [1024]])
def test_max_threads_must_be_a_number(max_threads):
    with pytest.raises(BeastError, match="max_threads must be a number"):
        beast.from_kernel_tuner({"block_size_x": [1, 2048]}, None, max_threads)


@pytest.mark.parametrize("max_threads", [512, 1024.5, np.int64(64), float("inf")])
def test_max_threads_numbers(max_threads):
    same_as_kernel_tuner({"block_size_x": [1, 64, 512, 2048], "q": [1, 2]}, ["q > 1"], max_threads)


@pytest.mark.parametrize("name", ["__file__", "__builtins__", "__name__", "range", "min",
                                  "condition", "kt_param_1", "_kt_v_b", "class", "block-size",
                                  "x y", "1a"])
def test_parameter_names_that_a_space_file_cannot_declare(name):
    tune_params = {name: [1, 2, 3], "b": [1, 2]}
    assert beast.from_kernel_tuner(tune_params).count() == 6
    assert beast.from_kernel_tuner(tune_params).to_kernel_tuner() == (
        tune_params, [(x, y) for x in (1, 2, 3) for y in (1, 2)])
    got = same_as_kernel_tuner(tune_params, ["b > 1"])
    assert len(got) == 3
    if name.isidentifier() and name != "class":             # Kernel Tuner evaluates strings
        same_as_kernel_tuner(tune_params, [f"{name} > b"])
    space = beast.from_kernel_tuner(tune_params, [(lambda x, y: x > y, [name, "b"])])
    assert not space.python_restrictions
    assert {tuple(r) for r in space.enumerate().tolist()} == {(2, 1), (3, 1), (3, 2)}


@pytest.mark.parametrize("name", ["", 5, ("a", "b")])
def test_parameter_names_are_non_empty_strings(name):
    with pytest.raises(BeastError, match="parameter names are non-empty strings"):
        beast.from_kernel_tuner({name: [1, 2], "x": [1]})


# --- sampling ----------------------------------------------------------------------------------------

def floor_sum(x, y):        # reads math: evaluated in Python
    return math.floor(x) + y > 3


def test_sample_more_than_the_space_holds_with_python_restrictions():
    with pytest.warns(UserWarning, match="floor_sum"):
        space = beast.from_kernel_tuner({"x": [1.5, 2.5, 3.5, 4.5], "y": list(range(50))}, [floor_sum])
    everything = {tuple(r) for r in space.enumerate().tolist()}
    for n in (10 ** 30, 200, len(everything)):
        got = [tuple(r) for r in space.sample(n, seed=1).tolist()]
        assert len(got) == len(set(got)) == len(everything) and set(got) == everything
    assert len(space.sample(5, seed=1)) == 5


# --- tune_kernel(space=...) ----------------------------------------------------------------------------

def _tune(space, tmp_path, tune_params=None, cache_params=None, **kwargs):
    from beast.kernel_tuner.space import tune_kernel
    loaded = beast.load(space) if isinstance(space, str) else space
    params, configs = beast.kernel_tuner.to_kernel_tuner(loaded)
    names = list(cache_params or params)
    configs = [tuple(dict(zip(params, c))[n] for n in names) for c in dict.fromkeys(configs)]
    cache = _cache_file(tmp_path, {n: params[n] for n in names}, configs)
    args = [np.zeros(1024, np.float32)] * 3 + [np.int32(1024)]
    results, _ = tune_kernel("vector_add", KERNEL, 1024, args, tune_params, space=space,
                             simulation_mode=True, cache=cache, quiet=True, **kwargs)
    return [tuple(r[n] for n in names) for r in results], configs


REPEATS = "from beast import *\nblock_size_x = iterator([32, 64, 128])\nfib = iterator([1, 1, 2, 3])\n"
# (12 rows, 9 distinct)


def test_tune_kernel_gets_each_configuration_once(tmp_path):
    path = tmp_path / "repeats.py"
    path.write_text(REPEATS)
    assert beast.load(path).count() == 12
    got, configs = _tune(beast.load(path), tmp_path)
    assert len(configs) == 9 and sorted(got) == sorted(configs)


def test_tune_kernel_space_as_a_path(tmp_path):
    path = tmp_path / "repeats.py"
    path.write_text(REPEATS)
    got, configs = _tune(str(path), tmp_path)
    assert sorted(got) == sorted(configs)
    from beast.kernel_tuner.space import tune_kernel
    with pytest.raises(BeastError, match="space must be a beast Space or the path"):
        tune_kernel("vector_add", KERNEL, 1024, [], space=42)


def test_tune_kernel_tune_params_in_another_order(tmp_path):
    path = tmp_path / "repeats.py"
    path.write_text(REPEATS)
    tune_params = {"fib": [1, 2, 3], "block_size_x": [32, 64, 128]}
    got, configs = _tune(beast.load(path), tmp_path, tune_params,
                         cache_params=["fib", "block_size_x"])    # Kernel Tuner checks the order
    assert sorted(got) == sorted(configs) and (3, 32) in got


@pytest.mark.parametrize("tune_params,message", [
    ({"block_size_x": [32, 64], "fib": [1, 2, 3]}, r"tune_params\['block_size_x'\] lacks \[128\]"),
    ({"block_size_x": [32, 64, 128]}, r"not the space's parameters .*missing \['fib'\]"),
    ({"block_size_x": [32, 64, 128], "fib": [1, 2, 3], "z": [1]}, r"not in the space \['z'\]"),
])
def test_tune_kernel_checks_tune_params_against_the_space(tmp_path, tune_params, message):
    path = tmp_path / "repeats.py"
    path.write_text(REPEATS)
    with pytest.raises(BeastError, match=message):
        _tune(beast.load(path), tmp_path, tune_params)


def test_stats_speak_the_users_terms_and_count_the_python_restrictions():
    """stats() showed kt_param_0 / kt_restriction_1 and the survivors before the restrictions
    evaluated in Python (32 where count() is 26)."""
    import math
    import warnings

    def r(x, y):
        return math.floor(x) + y > 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sp = beast.from_kernel_tuner({"x": [1.5, 2.5, 3.5, 4.5], "y": list(range(5)), "__file__": [1, 2]},
                                     [r, "y > 0"])
    st = sp.stats(backend="python")
    assert st.survivors == sp.count(backend="python") == 26
    assert [lv.iterator for lv in st.levels] == ["y", "x", "__file__"]
    first, in_python = st.conditions
    assert first == "'y > 0'" and in_python.endswith("r> (in Python)")
    assert (st.conditions[in_python].evaluated, st.conditions[in_python].rejected) == (32, 6)
    assert sum(st.values["x"].values()) == 26 and set(st.values["x"]) == {1.5, 2.5, 3.5, 4.5}
