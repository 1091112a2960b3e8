"""Uniform sampling without full enumeration (``Space.sample``, beast/explore/sampling.py) on the H100
single-precision GEMM space with opt-in shared memory (78,298,704 survivors), C backend.

Cases, 1,000 samples each (a new seed every round):

* ``cold``:    a fresh BEAST_CACHE_DIR and a fresh ``beast.load``: compile the prefix programs,
               probe the table's depth, count the table (a walk of the whole space), descend;
* ``table``:   the programs compiled, no table on disk: a fresh ``beast.load`` counts the table;
* ``process``: the table in the cache directory: what a second ``beast enumerate --sample`` pays
               (parse, plan, load the table, descend);
* ``later``:   the same Space again: only the descent (``n`` small walks under chosen prefixes);
* ``count``:   for reference, ``Space.count`` on a built enumerator (all threads).

Each case checks the draw: ``n`` distinct rows, the same rows for the same seed, and the total
the sampler weighs against equal to the space's count.
"""
from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time

import numpy as np
import pytest

import beast
from beast.explore.sampling import LEAF_ROWS, TABLE_LIMIT
from conftest import GEMM, all_threads, backend_or_skip, env_int

SETTINGS = {"precision": "single", "shared_memory": "optin"}
EXPECTED = 78_298_704
N = env_int("BEAST_BENCH_SAMPLE_N", 1000)
ROUNDS = env_int("BEAST_BENCH_SAMPLE_ROUNDS", 3)
SEEDS = itertools.count(1)


@pytest.fixture
def cache_dir():
    old = os.environ.get("BEAST_CACHE_DIR")
    path = tempfile.mkdtemp(prefix="beast-bench-sample-")
    os.environ["BEAST_CACHE_DIR"] = path
    yield path
    if old is None:
        os.environ.pop("BEAST_CACHE_DIR", None)
    else:
        os.environ["BEAST_CACHE_DIR"] = old
    shutil.rmtree(path, ignore_errors=True)


def _load():
    return beast.load(GEMM, device="h100", settings=SETTINGS)


def _draw(space):
    seed = next(SEEDS)
    rows = space.sample(N, seed=seed, backend="c")
    return space, seed, rows


def _check(space, seed, rows):
    assert len(rows) == N and len(np.unique(rows)) == N
    assert space._samplers["c"].count() == EXPECTED
    assert np.array_equal(space.sample(N, seed=seed, backend="c"), rows)


@pytest.mark.parametrize("mode", ["cold", "table", "process", "later", "count"])
def test_sample_h100_single(benchmark, cache_dir, mode):
    backend_or_skip("c")
    benchmark.group = "sample h100 single smem=optin"
    benchmark.extra_info.update(experiment="sample", mode=mode, n=N, threads=all_threads(),
                                leaf_rows=LEAF_ROWS, table_limit=TABLE_LIMIT)
    if mode == "count":
        space = _load()
        space.enumerator("c")
        count = benchmark.pedantic(space.count, kwargs=dict(backend="c"), rounds=ROUNDS,
                                   iterations=1)
        assert count == EXPECTED
        return
    _check(*_draw(_load()))          # compiles every program a draw needs, fills the cache
    if mode == "cold":
        def setup():
            shutil.rmtree(cache_dir, ignore_errors=True)
            os.makedirs(cache_dir)
            return (), {}
        result = benchmark.pedantic(lambda: _draw(_load()), setup=setup, rounds=ROUNDS, iterations=1)
    elif mode == "table":
        def setup():
            shutil.rmtree(os.path.join(cache_dir, "sample"), ignore_errors=True)
            return (), {}
        result = benchmark.pedantic(lambda: _draw(_load()), setup=setup, rounds=ROUNDS, iterations=1)
    elif mode == "process":
        result = benchmark.pedantic(lambda: _draw(_load()), rounds=ROUNDS, iterations=1)
    else:
        space = _load()
        t0 = time.perf_counter()
        _draw(space)
        benchmark.extra_info["first_call_s"] = time.perf_counter() - t0
        result = benchmark.pedantic(lambda: _draw(space), rounds=max(ROUNDS, 5), iterations=1)
    _check(*result)
