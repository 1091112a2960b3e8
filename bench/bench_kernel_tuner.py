"""Kernel Tuner's own search-space constructor against beast, on the same GEMM space.

``kernel_tuner.searchspace.Searchspace`` (python-constraint2, its default
PC_OptimizedBacktrackingSolver) gets the K40c GEMM space the way a Kernel Tuner user has to write
it: every parameter's full cartesian domain plus restrictions (``bench/kt_gemm.py``).  On the
full K40c profile (dims up to 1024) it does not finish in 5 minutes, so this benchmarks the
same space on scaled K40c profiles, max_threads_dim_x = max_threads_dim_y = D for
D = 16, 32, 64 (and 128 with BEAST_BENCH_KT_MAX_DIM=128: about 6 minutes) with beast on
the same scaled profiles.  Kernel Tuner's survivors must equal beast's count (the
reference); at D <= 32 the sets of configurations are compared too.

beast is timed cold (fresh BEAST_CACHE_DIR, load + generate + compile + count) as the
constructor is: both start from a description of the space and end with its survivors.
"""
from __future__ import annotations

import pytest

import beast
import kt_gemm
from conftest import GEMM, backend_or_skip, env_int

MAX_DIM = env_int("BEAST_BENCH_KT_MAX_DIM", 64)
DIMS = [d for d in (16, 32, 64, 128, 256) if d <= MAX_DIM]
SETTINGS = {"precision": "double"}

_reference: dict[int, int] = {}


def reference_count(dim: int) -> int:
    if dim not in _reference:
        space = beast.load(GEMM, device=kt_gemm.scaled_profile(dim), settings=SETTINGS)
        _reference[dim] = space.count(backend="python")
    return _reference[dim]


@pytest.mark.parametrize("dim", DIMS)
def test_kt_searchspace(benchmark, dim):
    pytest.importorskip("kernel_tuner")
    profile = kt_gemm.scaled_profile(dim)
    benchmark.group = f"kernel tuner vs beast, K40c scaled to dims {dim}"
    benchmark.extra_info.update(experiment="kernel_tuner", tool="kernel_tuner", dim=dim,
                                solver="PC_OptimizedBacktrackingSolver")
    ss = benchmark.pedantic(kt_gemm.searchspace, args=(profile,), rounds=1, iterations=1)
    expected = reference_count(dim)
    benchmark.extra_info.update(count=ss.size, beast_count=expected)
    assert ss.size == expected, f"Kernel Tuner keeps {ss.size}, beast {expected}"
    if dim <= 32:
        space = beast.load(GEMM, device=profile, settings=SETTINGS)
        rows = space.enumerate(backend="python")
        ours = {tuple(int(r[c]) for c in kt_gemm.PARAM_ORDER) for r in rows}
        idx = [ss.param_names.index(c) for c in kt_gemm.PARAM_ORDER]
        theirs = {tuple(cfg[i] for i in idx) for cfg in ss.list}
        assert ours == theirs


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("backend,mode", [("python", "cold"), ("lua", "cold"), ("c", "cold"),
                                          ("c", "warm")])
def test_beast_scaled(benchmark, dim, backend, mode, tmp_path, monkeypatch):
    """cold: fresh cache, load + generate + compile + count; warm (C): the compiled module is
    in the cache already (a second run), load + count.  One thread, like Kernel Tuner."""
    backend_or_skip(backend)
    profile = kt_gemm.scaled_profile(dim)
    threads = 1
    benchmark.group = f"kernel tuner vs beast, K40c scaled to dims {dim}"
    benchmark.extra_info.update(experiment="kernel_tuner", tool=f"beast-{backend}-{mode}",
                                dim=dim, threads=threads, mode=mode)
    counter = iter(range(1000))

    def fresh_cache():
        path = tmp_path / f"cache{next(counter)}"
        path.mkdir()
        monkeypatch.setenv("BEAST_CACHE_DIR", str(path))
        return (), {}

    def run():
        return beast.load(GEMM, device=profile, settings=SETTINGS).count(backend=backend,
                                                                          threads=threads)

    if mode == "cold":
        count = benchmark.pedantic(run, setup=fresh_cache, rounds=3, iterations=1)
    else:
        fresh_cache()
        run()
        count = benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["count"] = count
    assert count == reference_count(dim)
