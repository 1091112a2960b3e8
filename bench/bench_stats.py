"""``space.stats()`` on the GEMM space (spaces/gemm.py, K40c profile, double precision): the
instrumented, untightened loop nest of :mod:`beast.ir.instrument` run by each backend, next to the
normal (tightened) count. The enumerator is built once per backend outside the timing; the exact
cartesian count (:func:`beast.explore.stats.cartesian`) is timed on its own.

    python3 -m pytest bench/bench_stats.py --benchmark-only
"""
from __future__ import annotations

import pytest

import beast
from beast.ir.instrument import instrument
from beast.runtime import get_backend
from beast.explore.cartesian import cartesian
from conftest import GEMM, all_threads, backend_or_skip

SURVIVORS = 1_207_600
CASES = [("c", 1), ("c", all_threads()), ("lua", None), ("python", None)]


@pytest.fixture(scope="module")
def gemm():
    return beast.load(GEMM, device="k40c")


@pytest.mark.parametrize("backend,threads", CASES, ids=[f"{b}-{t or 1}" for b, t in CASES])
def test_stats_gemm_k40c(benchmark, gemm, backend, threads):
    backend_or_skip(backend)
    program, layout = instrument(gemm.plan, gemm.name)
    enumerator = get_backend(backend).build(program)
    survivors, counts = benchmark.pedantic(lambda: enumerator.tally(threads=threads), rounds=1, iterations=1)
    assert survivors == SURVIVORS == counts[layout.levels[-1].passed]


def test_cartesian_gemm_k40c(benchmark, gemm):
    """The exact cartesian size (tests/unit/explore/test_stats.py checks it against a hand-written sum)."""
    assert benchmark.pedantic(lambda: cartesian(gemm.plan), rounds=1, iterations=1) \
        == 136_423_918_516_708_320_149_504
