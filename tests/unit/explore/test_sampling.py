"""Uniform sampling without full enumeration: ``Space.sample``, ``beast enumerate --sample``.

The sampler maps ranks (positions in enumeration order) to survivors by descending the nest with
subtree counts (beast/explore/sampling.py, beast/ir/prefix.py). Checked here: every rank maps to the row
``enumerate()`` has there (every backend, fixed and random spaces, with tiny tables and leaves so
that the descent goes through every depth), the same seed gives the same rows in every backend,
frequencies pass a chi-square test against uniform, and the edge cases (n = 0, n >= count, bad n).
"""
from __future__ import annotations

import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, note, settings

import beast
from beast.errors import BeastError
from beast.ir.prefix import bind, truncate
from beast.runtime import get_backend
from beast.explore.sampling import Sampler
from conftest import available_backends, run_beast, write_space
from oracle import OracleError, TooLarge, brute_force
from spacegen import spaces

# Subtrees of unequal sizes at every depth (b depends on a, c on b), a condition that prunes
# inside, a solved loop and a pure tail (d, e), so that the sampler must weigh the subtrees.
UNEVEN = """
from beast import *
a = range(1, 7)
b = range(a, 13, a)
c = range(1, b + 1)
d = range(2)
e = iterator([3, 5, 7])
t = b * c

@condition
def odd_sum(a, c):
    return (a + c) % 3 == 0

@condition
def big(t):
    return t > 60
"""

SMALL = """
from beast import *
a = range(5)
b = range(a, 6)
c = iterator([1, 2])

@condition
def skip(a, b):
    return a + b == 5
"""


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    return beast.load(write_space(tmp_path_factory.mktemp("uneven"), UNEVEN))


def test_prefix_programs_split_the_enumeration(uneven):
    """The subtrees under the prefixes of every depth, in order, are the enumeration."""
    every = uneven.enumerate(backend="python")
    py = get_backend("python")
    for depth in range(len(uneven.program.loop_order) + 1):
        prefixes = np.concatenate(list(py.build(truncate(uneven.program, depth)).chunks(1 << 16)))
        matrix = np.array(prefixes.tolist(), dtype=np.int64).reshape(len(prefixes), depth)
        bound = py.build(bind(uneven.program, depth))
        counts = bound.count_each(matrix)
        assert counts.sum() == len(every)
        parts = [bound.rows_under(p, c) for p, c in zip(matrix, counts) if c]
        assert np.array_equal(np.concatenate(parts), every), f"depth {depth}"


def test_every_rank_maps_to_its_row(uneven, backend):
    every = uneven.enumerate(backend="python")
    # tiny tables and leaves: the descent goes through every depth (C compiles a program per
    # depth, so it runs the one configuration that needs them all)
    configs = ((1, 1),) if backend == "c" else ((1, 1), (4, 3), (40, 20), (1 << 18, 2048))
    for limit, leaf in configs:
        sampler = Sampler(uneven.program, backend, table_limit=limit, leaf_rows=leaf)
        sampler.enumerate_fraction = 2.0    # descend for every rank
        assert sampler.count() == len(every)
        ranks = np.random.default_rng(limit).permutation(len(every))
        assert np.array_equal(sampler.rows_at(ranks), every[ranks]), (limit, leaf)


def test_same_seed_same_rows_in_every_backend(uneven):
    expected = uneven.sample(25, seed=7, backend="python")
    assert len(np.unique(expected)) == 25
    for b in available_backends():
        assert np.array_equal(uneven.sample(25, seed=7, backend=b), expected), b
    assert np.array_equal(uneven.sample(25, seed=7, backend="python"), expected)
    assert not np.array_equal(uneven.sample(25, seed=8, backend="python"), expected)
    assert expected.dtype == uneven.dtype


def _chi2_critical(df, z=3.719):
    """The upper 0.9999 quantile of chi-square with ``df`` degrees (Wilson-Hilferty)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def _chi2(observed, expected):
    return float(((observed - expected) ** 2 / expected).sum())


def test_frequencies_are_uniform(space_file):
    """Single draws (multinomial) and draws of several (each survivor's inclusion count) pass a
    chi-square test against uniform, with the descent forced through small subtrees of unequal
    sizes."""
    space = beast.load(space_file(SMALL))
    every = space.enumerate(backend="python")
    index = {row: i for i, row in enumerate(every.tolist())}
    m = len(every)
    sampler = Sampler(space.program, "python", table_limit=2, leaf_rows=2)
    draws = 50 * m
    single = np.zeros(m)
    for seed in range(draws):
        single[index[sampler.sample(1, seed=seed)[0].item()]] += 1
    assert _chi2(single, draws / m) < _chi2_critical(m - 1)
    k, trials = 5, 8 * m
    included = np.zeros(m)
    for seed in range(trials):
        got = [index[r] for r in sampler.sample(k, seed=10**6 + seed).tolist()]
        assert len(set(got)) == k
        included[got] += 1
    assert _chi2(included, trials * k / m) < _chi2_critical(m - 1)


def test_all_or_more_than_all_is_a_permutation(space_file):
    space = beast.load(space_file(SMALL))
    every = space.enumerate(backend="python")
    for n in (len(every), len(every) + 10, 10**9):
        got = space.sample(n, seed=3, backend="python")
        assert len(got) == len(every)
        assert sorted(got.tolist()) == sorted(every.tolist())
    assert not np.array_equal(space.sample(len(every), seed=3, backend="python"), every)


def test_zero_and_bad_sizes(space_file):
    space = beast.load(space_file(SMALL))
    empty = space.sample(0, seed=1, backend="python")
    assert len(empty) == 0 and empty.dtype == space.dtype
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(BeastError, match="sample size"):
            space.sample(bad, backend="python")
    with pytest.raises(BeastError, match="seed"):
        space.sample(2, seed="x", backend="python")


def test_empty_space(space_file):
    space = beast.load(space_file("""
        from beast import *
        a = range(3)
        b = range(a, 2)

        @condition
        def never(a, b):
            return True
    """))
    for b in available_backends():
        assert len(space.sample(5, seed=0, backend=b)) == 0


def test_table_is_kept_on_disk(uneven, tmp_path, monkeypatch):
    monkeypatch.setenv("BEAST_CACHE_DIR", str(tmp_path))
    first = Sampler(uneven.program, "python", table_limit=10)
    rows = first.sample(6, seed=2)
    saved = list((tmp_path / "sample").glob("*.npz"))
    assert len(saved) == 1
    second = Sampler(uneven.program, "python", table_limit=10)
    second.table_depth = None   # the table must come from the file, not from probing again
    assert np.array_equal(second.sample(6, seed=2), rows)


def test_cli_sample(tmp_path):
    path = write_space(tmp_path, UNEVEN)
    out = tmp_path / "s.csv"
    proc = run_beast("enumerate", path, "--backend", "python", "--sample", 12, "--seed", 4, "-o", out)
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text().splitlines()
    space = beast.load(path)
    expected = space.sample(12, seed=4, backend="python")
    assert lines[0] == ",".join(space.iterators)
    assert [tuple(map(int, x.split(","))) for x in lines[1:]] == expected.tolist()
    npy = tmp_path / "s.npy"
    proc = run_beast("enumerate", path, "--backend", "c", "--sample", 12, "--seed", 4, "-o", npy)
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.load(npy), expected)
    proc = run_beast("enumerate", path, "--seed", 4, "-o", tmp_path / "x.csv")
    assert proc.returncode != 0 and "--seed needs --sample" in proc.stderr


def _every_rank(g, backend):
    note(g.numbered())
    note(f"settings: {g.settings}")
    try:
        expected = brute_force(g.model, limit=4000)
    except (TooLarge, OracleError):
        assume(False)
    assume(expected)
    with tempfile.TemporaryDirectory(prefix="beast-sample-") as tmp:
        space = beast.load(write_space(tmp, g.source, "generated.py"), settings=g.settings)
        try:
            every = space.enumerate(backend="python")
        except BeastError:
            assume(False)
        sampler = Sampler(space.program, backend, table_limit=2, leaf_rows=1)
        sampler.enumerate_fraction = 2.0    # descend for every rank
        ranks = np.random.default_rng(len(every)).permutation(len(every))[: max(1, len(every) // 3)]
        assert np.array_equal(sampler.rows_at(ranks), every[ranks])


RANDOM = dict(deadline=None, report_multiple_bugs=False,
              phases=(Phase.explicit, Phase.reuse, Phase.generate),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large])


@settings(max_examples=int(os.environ.get("BEAST_SAMPLING_EXAMPLES") or 30), **RANDOM)
@given(spaces())
def test_random_spaces_every_rank(g):
    """On random spaces (tests/support/spacegen.py), with two-prefix tables and one-row leaves, the ranks
    map to the rows the full enumeration (Python backend) has there."""
    _every_rank(g, "python")


@pytest.mark.skipif("lua" not in available_backends(), reason="the Lua backend is not available")
@settings(max_examples=15, **RANDOM)
@given(spaces())
def test_random_spaces_every_rank_lua(g):
    """The same in Lua (its prefix values come from a table the runtime fills)."""
    _every_rank(g, "lua")


def test_errors_of_the_space_are_reported(space_file):
    """A space whose enumeration divides by zero fails the same way when sampled."""
    path = space_file("""
        from beast import *
        a = range(4)
        b = range(a, 5)
        q = 12 // (b - 3)

        @condition
        def small(q):
            return q < -100
    """)
    space = beast.load(path)
    for b in available_backends():
        with pytest.raises(BeastError, match="division by zero") as info:
            space.sample(3, seed=0, backend=b)
        assert info.value.filename == path
