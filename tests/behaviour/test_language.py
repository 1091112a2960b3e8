"""The language on the paper's own examples: the figure spaces (spaces/fig01 .. fig06) and
spaces/features.py give the configurations the figures mean; the space files stay importable as
plain Python; settings and their choices; and the k40c GEMM DAG has the level sets of Figs. 11-15
with every condition hoisted to the loop that binds its last dependency.
"""
from __future__ import annotations

import importlib
import json
import os
import tempfile
from collections import Counter

import pytest

import beast
from conftest import SPACES, rows, write_space

R = range


def load(name, **settings):
    return beast.load(os.path.join(SPACES, name), settings=settings or None)


def check_rows(space, backend, expected, ordered=False):
    got = rows(space.enumerate(backend=backend))
    if ordered:
        assert got == expected
    else:
        assert Counter(got) == Counter(expected)
    assert space.count(backend=backend) == len(expected)


def primes_upto(n):
    return [1, 2] + [p for p in R(3, n + 1, 2) if all(p % q for q in R(3, int(p ** 0.5) + 1, 2))]


def fibonacci_upto(n):
    out, k, m = [], 1, 1
    while m <= n:
        out.append(m)
        m, k = m + k, m
    return out


# ---------------------------------------------------------------------------------------------
# The figures

def test_fig01_expression_and_list_iterators(backend):
    space = load("fig01_iterators.py")
    assert space.iterators == ("r", "fibonacci")
    check_rows(space, backend, [(r, f) for r in R(8) for f in [1, 1, 2, 3, 5, 8, 13]])
    check_rows(load("fig01_iterators.py", N=3), backend,
               [(r, f) for r in R(3) for f in [1, 1, 2, 3, 5, 8, 13]])


FIG02_EXPECTED = [(i, o, eo, ei) for o in R(32) for i in R(o) for eo in R(10) for ei in R(eo)]


def test_fig02_deferred_iterators(backend):
    space = load("fig02_deferred.py", architecture="fermi")
    assert space.iterators == ("inner", "outer", "ex_outer", "ex_inner")
    got = rows(space.enumerate(backend=backend))
    assert Counter(got) == Counter(FIG02_EXPECTED)
    # outer is the outer loop although inner is defined first: for each value of outer, inner
    # runs over range(outer) in order
    pairs = [(o, i) for i, o, eo, ei in got if eo == 9 and ei == 8]
    assert pairs == [(o, i) for o in R(32) for i in R(o)]


def test_fig02_count(backend):
    assert load("fig02_deferred.py", architecture="fermi").count(backend=backend) == len(FIG02_EXPECTED)


@pytest.mark.parametrize("architecture,n", [("kepler", 192), ("maxwell", 256)])
def test_fig02_architecture_setting(architecture, n):
    space = load("fig02_deferred.py", architecture=architecture, EX=2)
    assert space.settings["architecture"] == architecture
    got = rows(space.enumerate())
    assert sorted({o for _, o, _, _ in got}) == list(R(1, n))   # outer = 0 has no inner value
    assert len(got) == n * (n - 1) // 2


def test_fig02_definition_order_does_not_matter(tmp_path):
    """The same space with the two deferred iterators defined the other way round."""
    text = open(os.path.join(SPACES, "fig02_deferred.py")).read()
    inner = text[text.index("@iterator\ndef inner"):text.index("@iterator\ndef outer")]
    swapped = text.replace(inner, "").replace("\n\nex_outer", "\n\n" + inner + "\nex_outer")
    assert swapped.index("def outer") < swapped.index("def inner")
    other = beast.load(write_space(tmp_path, swapped, "swapped.py"), settings={"architecture": "fermi"})
    assert other.iterators == ("outer", "inner", "ex_outer", "ex_inner")
    space = load("fig02_deferred.py", architecture="fermi")

    def as_dicts(s):
        arr = s.enumerate()
        return Counter(tuple(sorted(zip(arr.dtype.names, map(int, row)))) for row in arr)

    assert as_dicts(other) == as_dicts(space)
    assert json.loads(other.dag("json"))["level_sets"][0] == ["outer", "ex_outer"]


def test_fig02_expression_iterators_must_come_in_order(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        ex_inner = range(ex_outer)
        ex_outer = range(100)
    """)
    with pytest.raises(beast.SpaceError, match="undefined name 'ex_outer'"):
        beast.load(path)


@pytest.mark.parametrize("MAX", [30, 3, 100])
def test_fig03_primes(MAX, backend):
    space = load("fig03_primes.py", MAX=MAX)
    check_rows(space, backend, [(p,) for p in primes_upto(MAX)], ordered=True)


def test_fig03_primes_default():
    assert [r[0] for r in rows(load("fig03_primes.py").enumerate())] == \
        [1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29]


def test_fig04_global_scope(backend):
    expected = [(d, m, b) for d in R(32, 257, 32) for m in R(1, 9) for b in R(m, 65, m)]
    assert len(expected) == 1376
    check_rows(load("fig04_global_scope.py"), backend, expected)


@pytest.mark.parametrize("trans_a", [0, 1])
def test_fig05_local_scope_negative_step(trans_a, backend):
    space = load("fig05_local_scope.py", trans_a=trans_a)
    expected = [(m, k, n) for m in R(1, 5) for k in R(1, 4) for n in R(m if trans_a else k, 0, -1)]
    check_rows(space, backend, expected)
    got = rows(space.enumerate(backend=backend))
    for m in R(1, 5):
        for k in R(1, 4):
            top = m if trans_a else k
            assert [n for mm, kk, n in got if (mm, kk) == (m, k)] == list(R(top, 0, -1))


@pytest.mark.parametrize("MAX", [100, 1, 1000])
def test_fig06_fibonacci(MAX, backend):
    space = load("fig06_fibonacci.py", MAX=MAX)
    check_rows(space, backend, [(f,) for f in fibonacci_upto(MAX)], ordered=True)


def test_fig06_fibonacci_default():
    assert [r[0] for r in rows(load("fig06_fibonacci.py").enumerate())] == \
        [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]


# ---------------------------------------------------------------------------------------------
# spaces/features.py, transcribed into plain Python

def features_expected(mode="fast", limit=6):
    out = []
    for n in R(1, limit + 1):
        for m in R(n, 0, -2):
            for u in [4, 2, 1, 3]:
                for i in [x for x in R(1, 10, 2) if x in R(n, 8)]:
                    for d in [1, 3, 4]:
                        for tile in ([n * 2] if mode == "fast" else list(R(n, 2 * n + 1, n))):
                            half = n / 2
                            area = n * tile
                            score = area - m if m > 2 else max(area, u) + d
                            if mode == "thorough":
                                score = score * 2
                            if area > 4 * limit:
                                continue
                            if (half == 1.5 and not m == 3) or u == i:
                                continue
                            if score % 7 == 0 or 0 < d < 2 and not score > 10:
                                continue
                            out.append((n, m, u, i, d, tile))
    return out


@pytest.mark.parametrize("settings", [{}, {"mode": "thorough"}, {"mode": "thorough", "limit": "4"},
                                      {"limit": 3}], ids=["default", "thorough", "thorough-4", "limit-3"])
def test_features(settings, backend):
    space = load("features.py", **settings)
    assert space.iterators == ("n", "m", "u", "i", "d", "tile")
    expected = features_expected(settings.get("mode", "fast"), int(settings.get("limit", 6)))
    assert expected, "the example space keeps something"
    check_rows(space, backend, expected)


def test_features_rejects_with_every_condition():
    """Each condition of features.py matters: without it, more configurations survive."""
    text = open(os.path.join(SPACES, "features.py")).read()
    space = load("features.py")
    assert set(space.conditions) == {"too_big", "mixed", "unlucky"}
    kinds = {n["name"]: n["kind"] for n in json.loads(space.dag("json"))["nodes"] if n["role"] == "condition"}
    assert kinds == {"too_big": "hard", "mixed": "soft", "unlucky": "correctness"}
    base = len(space.enumerate())
    lines = text.splitlines(keepends=True)
    for start in ("too_big = condition(", "mixed = condition(", '@condition(kind="correctness")'):
        without = "".join(line for line in lines if not line.startswith(start))
        with tempfile.TemporaryDirectory() as tmp:
            path = write_space(tmp, without, "features_minus.py")
            assert len(beast.load(path).enumerate()) > base, start


# ---------------------------------------------------------------------------------------------
# Space files are plain Python modules

MODULES = ["spaces.gemm", "spaces.features"] + [f"spaces.{os.path.splitext(f)[0]}" for f in
                                                sorted(os.listdir(SPACES)) if f.startswith("fig")]


@pytest.mark.parametrize("module", MODULES)
def test_space_file_imports_as_plain_python(module):
    mod = importlib.import_module(module)
    assert any(isinstance(v, beast.Iterator) for v in vars(mod).values())


def test_plain_import_keeps_constant_iterators_listable():
    import spaces.fig01_iterators as fig01
    assert list(fig01.fibonacci) == [1, 1, 2, 3, 5, 8, 13]
    assert list(fig01.r) == list(R(8))
    import spaces.gemm as gemm
    assert list(gemm.tex_a) == [0, 1]
    assert gemm.precision == "double" and gemm.trans_a == 0


def test_constant_range_iterators_are_never_listed_to_answer_len_or_in(tmp_path):
    """len() and `in` on a constant range at module level are Python's, answered without listing
    its values (2**50 of them here)."""
    space = beast.load(write_space(tmp_path, """
        from beast import *
        big = range(-(2**50), 2**50, 2)
        a = range(len(big) // 2**48)
        b = iterator([v for v in range(10) if v in range(0, 2**62, 3) and -5 not in big])
        """))
    assert space.count() == 2**50 * 4 * 4
    big = space.module.namespace["big"]
    assert len(big) == 2**50 and 2**40 in big and 1 not in big and 2**50 not in big


def test_gemm_settings_and_choices():
    space = beast.load(os.path.join(SPACES, "gemm.py"))
    assert space.settings == {"precision": "double", "arithmetic": "real", "trans_a": 0,
                              "trans_b": 0, "shared_memory": "default"}
    decls = space.module.settings
    assert decls["precision"].choices == ("single", "double")
    assert decls["arithmetic"].choices == ("real", "complex")
    assert decls["trans_a"].choices == (0, 1) and decls["trans_b"].choices == (0, 1)
    other = beast.load(os.path.join(SPACES, "gemm.py"),
                       settings={"precision": "single", "trans_a": "1", "shared_memory": "optin"})
    assert other.settings["precision"] == "single" and other.settings["trans_a"] == 1
    with pytest.raises(beast.SettingError):
        beast.load(os.path.join(SPACES, "gemm.py"), settings={"trans_a": "2"})


# ---------------------------------------------------------------------------------------------
# The GEMM DAG (Figs. 11-16) on the paper's K40c

GEMM_DEPS = {
    # Fig. 11 (dim_m_a/dim_m_b also read dim_vec, a free name in their bodies)
    "dim_m": [], "dim_n": [], "blk_m": ["dim_m"], "blk_n": ["dim_n"], "blk_k": [], "dim_vec": [],
    "vec_mul": ["dim_vec"], "dim_m_a": ["blk_m", "blk_k", "dim_vec"], "dim_n_a": ["blk_m", "blk_k"],
    "dim_m_b": ["blk_k", "blk_n", "dim_vec"], "dim_n_b": ["blk_k", "blk_n"],
    "tex_a": [], "tex_b": [], "shmem_l1": [], "shmem_banks": [],
    # Fig. 12 (the final binding of each name; intermediate bindings are inlined)
    "threads_per_block": ["dim_m", "dim_n"], "thr_m": ["blk_m", "dim_m"], "thr_n": ["blk_n", "dim_n"],
    "regs_per_thread": ["thr_m", "thr_n"], "regs_per_block": ["regs_per_thread", "threads_per_block"],
    "shmem_per_block": ["blk_k", "blk_m", "blk_n"], "max_blocks_by_regs": ["regs_per_block"],
    "max_threads_by_regs": ["max_blocks_by_regs", "threads_per_block"],
    "max_blocks_by_shmem": ["shmem_per_block"],
    "max_threads_by_shmem": ["max_blocks_by_shmem", "threads_per_block"],
    "loads_per_thread": ["thr_m", "thr_n", "blk_k", "dim_vec"],
    "loads_per_block": ["loads_per_thread", "threads_per_block"],
    "fmas_per_thread": ["thr_m", "thr_n", "blk_k"], "fmas_per_block": ["fmas_per_thread", "threads_per_block"],
    # Figs. 13-15
    "over_max_threads": ["threads_per_block"], "over_max_regs_per_thread": ["regs_per_thread"],
    "over_max_regs_per_block": ["regs_per_block"], "over_max_shmem": ["shmem_per_block"],
    "low_occupancy_regs": ["max_threads_by_regs"], "low_occupancy_shmem": ["max_threads_by_shmem"],
    "low_fmas": ["loads_per_block", "fmas_per_block"], "partial_warps": ["threads_per_block"],
    "cant_reshape_a1": ["dim_m_a", "dim_n_a", "threads_per_block"],
    "cant_reshape_b1": ["dim_m_b", "dim_n_b", "threads_per_block"],
    "cant_reshape_a2": ["blk_m", "blk_k", "dim_m_a", "dim_n_a", "dim_vec"],
    "cant_reshape_b2": ["blk_k", "blk_n", "dim_m_b", "dim_n_b", "dim_vec"],
}
GEMM_KINDS = {c: "hard" for c in ("over_max_threads", "over_max_regs_per_thread",
                                  "over_max_regs_per_block", "over_max_shmem")}
GEMM_KINDS.update({c: "soft" for c in ("low_occupancy_regs", "low_occupancy_shmem", "low_fmas",
                                       "partial_warps")})
GEMM_KINDS.update({c: "correctness" for c in ("cant_reshape_a1", "cant_reshape_b1", "cant_reshape_a2",
                                              "cant_reshape_b2")})


def expected_levels(deps):
    levels = {}

    def level(n):
        if n not in levels:
            levels[n] = 0 if not deps[n] else 1 + max(level(d) for d in deps[n])
        return levels[n]

    for n in deps:
        level(n)
    return levels


@pytest.fixture(scope="module")
def gemm_dag():
    space = beast.load(os.path.join(SPACES, "gemm.py"), device="k40c")
    return json.loads(space.dag("json"))


def test_gemm_dag_dependencies_and_level_sets(gemm_dag):
    nodes = {n["name"]: n for n in gemm_dag["nodes"]}
    assert set(nodes) == set(GEMM_DEPS)
    for name, deps in GEMM_DEPS.items():
        assert set(nodes[name]["deps"]) == set(deps), name
    levels = expected_levels(GEMM_DEPS)
    assert {n: nodes[n]["level"] for n in nodes} == levels
    sets = [set(s) for s in gemm_dag["level_sets"]]
    assert sets == [{n for n, lv in levels.items() if lv == k} for k in R(max(levels.values()) + 1)]
    # Fig. 16: the iterators of level 0 and level 1
    assert sets[0] >= {"dim_m", "dim_n", "blk_k", "dim_vec", "tex_a", "tex_b", "shmem_l1", "shmem_banks"}
    assert {"blk_m", "blk_n", "vec_mul"} <= sets[1]
    assert {"dim_m_a", "dim_n_a", "dim_m_b", "dim_n_b"} <= sets[2]
    for name, kind in GEMM_KINDS.items():
        assert nodes[name]["kind"] == kind


def iterator_ancestors(name):
    out = set()
    for d in GEMM_DEPS[name]:
        if d in gemm_iterators():
            out.add(d)
        out |= iterator_ancestors(d)
    return out


def gemm_iterators():
    return {"dim_m", "dim_n", "blk_m", "blk_n", "blk_k", "dim_vec", "vec_mul", "dim_m_a", "dim_n_a",
            "dim_m_b", "dim_n_b", "tex_a", "tex_b", "shmem_l1", "shmem_banks"}


def test_gemm_conditions_are_hoisted(gemm_dag):
    """Each condition and derived variable sits in the loop that binds the last iterator it
    reads (directly or through derived variables): never deeper, never shallower."""
    order = gemm_dag["loop_order"]
    assert set(order) == gemm_iterators()
    position = {it: i + 1 for i, it in enumerate(order)}
    nodes = {n["name"]: n for n in gemm_dag["nodes"]}
    for name in GEMM_DEPS:
        if name in gemm_iterators():
            continue
        anc = iterator_ancestors(name)
        assert nodes[name]["depth"] == max(position[a] for a in anc), name
    # an iterator's loop is inside the loops of the iterators it reads
    for it in gemm_iterators():
        for a in iterator_ancestors(it):
            assert position[a] < position[it], (a, it)
    # the examples of the paper's Fig. 16
    assert nodes["over_max_threads"]["depth"] == max(position["dim_m"], position["dim_n"])
    assert nodes["cant_reshape_a1"]["depth"] <= position["dim_n_a"]
    assert nodes["cant_reshape_a1"]["depth"] == max(position[x] for x in ("dim_m", "dim_n", "dim_m_a", "dim_n_a"))


def test_gemm_steps_place_every_check_once(gemm_dag):
    steps = [s for depth in gemm_dag["steps"] for s in depth]
    checks = [s.split()[1] for s in steps if s.startswith("check ")]
    assert sorted(checks) == sorted(GEMM_KINDS)
    for depth, items in enumerate(gemm_dag["steps"]):
        for s in items:
            kind, name = s.split()
            node = next(n for n in gemm_dag["nodes"] if n["name"] == name)
            assert node["depth"] == depth


def test_gemm_dag_text_and_dot():
    space = beast.load(os.path.join(SPACES, "gemm.py"), device="k40c")
    text = space.dag("text")
    assert text.startswith("level sets:")
    for name in GEMM_KINDS:
        assert f"check {name}" in text
    dot = space.dag("dot")
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert '"threads_per_block" -> "over_max_threads";' in dot


# ---------------------------------------------------------------------------------------------
# Aliases, set operations on functions, count()'s shortcut (regressions: each was a beast bug)

def test_function_reading_an_alias(tmp_path, backend):
    space = beast.load(write_space(tmp_path, """
        from beast import *
        a = range(3)
        b = a
        @iterator
        def c(b):
            return range(b)
    """))
    assert space.iterators == ("a", "c")
    assert rows(space.enumerate(backend=backend)) == [(1, 0), (2, 0), (2, 1)]


def test_function_reading_two_aliases_of_one_node(tmp_path, backend):
    space = beast.load(write_space(tmp_path, """
        from beast import *
        a = range(3)
        b = a
        @iterator
        def c(a, b):
            return range(a + b)
    """))
    assert rows(space.enumerate(backend=backend)) == [(a, c) for a in R(3) for c in R(a + a)]


def test_set_operation_with_a_function_operand(tmp_path, backend):
    """A named @iterator function as an operand stands for its values."""
    space = beast.load(write_space(tmp_path, """
        from beast import *
        n = range(1, 3)
        @iterator
        def f(n):
            return range(n)
        u = union(f, [7])
    """))
    expected = [(n, f, u) for n in R(1, 3) for f in R(n) for u in list(R(n)) + [7]]
    assert Counter(rows(space.enumerate(backend=backend))) == Counter(expected)
    assert space.count(backend=backend) == len(expected)


def test_count_shortcut_with_a_dependency_two_loops_out(tmp_path, backend):
    space = beast.load(write_space(tmp_path, """
        from beast import *
        a = iterator([1, 2])
        b = iterator([1])
        c = range(a + 2)
    """))
    assert space.count(backend=backend) == 7 == len(space.enumerate(backend=backend))


SUMS = """
    from beast import *
    a = range(0, 4)
    b = range(1, 3)
    n = sum([a, b, a * b, a > 1])
    t = a * 0.0 + 0.1
    x = sum([t, t, t, t, t, t, t, t, t, t])
    c = condition(x == 1.0)
    d = condition(n > 9)

    @condition
    def e(a, b):
        return sum(0.1 for _ in range(a + b)) == (a + b) / 10
    """


@pytest.mark.parametrize("compensated", [False, True])
def test_module_level_sum_adds_as_this_python_does(tmp_path, monkeypatch, backend, compensated):
    """sum() of iterator expressions is start + x0 + x1 + ..., Python's own order. Where Python
    compensates the rounding of a float sum (3.12 and later) a module-level sum of terms that may
    be floats is refused at the call, with a caret; a sum of integers and truth values is not; in a
    function body sum() stays Python's."""
    import sys
    from beast.lang import vocabulary as lang
    monkeypatch.setattr(lang, "COMPENSATED_SUM", compensated)
    path = write_space(tmp_path, SUMS, f"sums{int(compensated)}.py")
    if compensated:
        with pytest.raises(beast.SpaceError) as info:
            beast.load(path)
        err = info.value
        assert (err.lineno, err.col) == (6, 4) and "may be floats" in err.message and "a + b + c" in err.hint
        path = write_space(tmp_path, SUMS.replace("x = sum([t, t, t, t, t, t, t, t, t, t])", "x = t"),
                           "ints.py")
    elif sys.version_info >= (3, 12):
        pytest.skip("the plain sum of floats is not this Python's")
    space = beast.load(path)
    want = [(a, b) for a in range(4) for b in range(1, 3)
            if not ((0.1 if compensated else sum([a * 0.0 + 0.1] * 10)) == 1.0
                    or sum([a, b, a * b, a > 1]) > 9
                    or sum(0.1 for _ in range(a + b)) == (a + b) / 10)]
    check_rows(space, backend, want, ordered=True)
