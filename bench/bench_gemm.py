"""The GEMM space of the paper (spaces/gemm.py, 15 iterators, 12 conditions) counted by each
beast backend.

* K40c profile, double precision (the paper's case): every backend, one thread and all threads,
  three ways:
    - ``cold``:  a fresh BEAST_CACHE_DIR and a fresh ``beast.load``: parse, plan, generate,
                 compile (C) and count -- what a first ``beast count`` pays;
    - ``warm``:  a fresh ``beast.load`` in a cache that already holds the compiled module (the
                 second call in the same cache): parse, plan, generate, load from cache, count;
    - ``count``: ``Space.count`` on an enumerator already built in this process (enumeration
                 only).
* H100 profile with opt-in shared memory (227 KB per block; ``-D shared_memory=optin``), double
  precision, and single precision (an even larger space).

Every case checks the count against the reference: the Python backend's count.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time

import pytest

import beast
from conftest import GEMM, all_threads, backend_or_skip, env_int

# Reference counts, from the Python backend (the reference implementation):
#   python3 -c "import beast; print(beast.load('spaces/gemm.py', device=D, settings=S).count())"
EXPECTED = {
    ("k40c", "double", "default"): 1_207_600,
    ("h100", "double", "optin"): 11_158_736,
    ("h100", "single", "optin"): 39_149_352,
}
ALL = all_threads()
# Backends that accept ``threads`` and ignore it (their docstrings say so): their all-threads
# case would repeat the one-thread case, so it is skipped.
SINGLE_THREADED = {"python", "lua"}
ROUNDS = {"python": 1, "lua": env_int("BEAST_BENCH_LUA_ROUNDS", 3),
          "c": env_int("BEAST_BENCH_C_ROUNDS", 5)}


def _settings(precision, smem):
    return {"precision": precision, "shared_memory": smem}


class CacheDirs:
    """Fresh BEAST_CACHE_DIRs, removed at the end; the old value restored."""

    def __init__(self):
        self.dirs = []
        self.old = os.environ.get("BEAST_CACHE_DIR")

    def fresh(self):
        path = tempfile.mkdtemp(prefix="beast-bench-cache-")
        self.dirs.append(path)
        os.environ["BEAST_CACHE_DIR"] = path
        return path

    def close(self):
        if self.old is None:
            os.environ.pop("BEAST_CACHE_DIR", None)
        else:
            os.environ["BEAST_CACHE_DIR"] = self.old
        for path in self.dirs:
            shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cache_dirs():
    dirs = CacheDirs()
    yield dirs
    dirs.close()


def run_case(benchmark, cache_dirs, backend, threads, mode, device, precision, smem,
             rounds=None):
    backend_or_skip(backend)
    key = (device, precision, smem)
    settings = _settings(precision, smem)
    rounds = rounds or ROUNDS[backend]
    benchmark.group = f"gemm {device} {precision} smem={smem}"
    benchmark.extra_info.update(experiment="gemm", device=device, precision=precision,
                                shared_memory=smem, backend=backend, threads=threads,
                                mode=mode, rounds=rounds)

    def load_and_count():
        return beast.load(GEMM, device=device, settings=settings).count(backend=backend,
                                                                        threads=threads)

    if mode == "cold":
        def setup():
            cache_dirs.fresh()
            return (), {}
        count = benchmark.pedantic(load_and_count, setup=setup, rounds=rounds, iterations=1)
    elif mode == "warm":
        cache_dirs.fresh()
        t0 = time.perf_counter()
        first = load_and_count()             # fills the cache, not timed
        benchmark.extra_info["first_call_s"] = time.perf_counter() - t0
        count = benchmark.pedantic(load_and_count, rounds=rounds, iterations=1)
        assert count == first
    elif mode == "count":
        cache_dirs.fresh()
        space = beast.load(GEMM, device=device, settings=settings)
        space.enumerator(backend)            # build (and compile) outside the timing
        count = benchmark.pedantic(space.count, kwargs=dict(backend=backend, threads=threads),
                                   rounds=rounds, iterations=1)
    else:
        raise ValueError(mode)
    benchmark.extra_info["count"] = count
    assert count == EXPECTED[key], f"{backend} counts {count}, reference {EXPECTED[key]}"


def _threads_cases(backends):
    cases = []
    for backend in backends:
        for threads in (1, ALL):
            marks = ()
            if backend in SINGLE_THREADED and threads != 1:
                marks = pytest.mark.skip(reason=f"the {backend} backend is single-threaded "
                                                "(threads is accepted and ignored); see threads=1")
            cases.append(pytest.param(backend, threads, marks=marks,
                                      id=f"{backend}-{threads}thr"))
    return cases


@pytest.mark.parametrize("mode", ["cold", "warm", "count"])
@pytest.mark.parametrize("backend,threads", _threads_cases(["c", "lua", "python"]))
def test_gemm_k40c(benchmark, cache_dirs, backend, threads, mode):
    run_case(benchmark, cache_dirs, backend, threads, mode, "k40c", "double", "default")


@pytest.mark.parametrize("mode", ["cold", "count"])
@pytest.mark.parametrize("backend,threads", _threads_cases(["c", "lua", "python"]))
def test_gemm_h100_optin(benchmark, cache_dirs, backend, threads, mode):
    if backend == "python" and mode == "cold":
        pytest.skip("Python: count only (35 s a run here); its compile time is the same "
                    "as for the K40c")
    run_case(benchmark, cache_dirs, backend, threads, mode, "h100", "double", "optin")


@pytest.mark.parametrize("backend,threads", _threads_cases(["c", "lua"]))
def test_gemm_h100_optin_single(benchmark, cache_dirs, backend, threads):
    # Python takes about 2.5 minutes (154 s) for this one: measured once by hand (see README)
    run_case(benchmark, cache_dirs, backend, threads, "count", "h100", "single", "optin",
             rounds=1 if backend == "lua" else 3)
