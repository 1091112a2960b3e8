"""Benchmarks of beast, after Luszczek et al. 2016, Section XI.  Not part of the test suite
(pytest's testpaths is tests/); run them with

    python3 -m pytest bench/ --benchmark-only

This conftest collects ``bench_*.py`` (pytest's default pattern is ``test_*.py``), puts
``bench/`` on ``sys.path`` for the ``loops`` helper package, and holds the shared fixtures.
Environment knobs (all optional):

    BEAST_BENCH_PY_ITERS    total iterations of the Python loop experiment (default 10**7)
    BEAST_BENCH_ITERS       total iterations for Lua and C (default 10**8, as in the paper)
    BEAST_BENCH_ROUNDS      rounds per loop benchmark (default 3)
    BEAST_BENCH_KT_MAX_DIM  the largest scaled max_threads_dim for Kernel Tuner (default 64;
                            128 adds about 6 minutes)
    BEAST_BENCH_C_ROUNDS, BEAST_BENCH_LUA_ROUNDS  rounds of the GEMM cases (default 5, 3)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
GEMM = ROOT / "spaces" / "gemm.py"

for p in (str(BENCH_DIR), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)


def pytest_collect_file(file_path, parent):
    # pyproject's python_files is pytest's default (test_*.py); collect bench_*.py here instead,
    # so the command needs no -o python_files=... (passing it as well would collect them twice).
    # A file named on the command line pytest collects itself, whatever its name.
    if file_path.suffix == ".py" and file_path.name.startswith("bench_") \
            and BENCH_DIR in file_path.resolve().parents \
            and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(float(value)) if value else default


def all_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@pytest.fixture(scope="session")
def c_loops(tmp_path_factory):
    import loops
    try:
        c = loops.CLoops(str(tmp_path_factory.mktemp("loops")))
    except Exception as exc:  # no compiler, no cffi
        pytest.skip(f"C loops unavailable: {exc}")
    # The C `for` loops are every language's reference: check them first against a
    # computation that shares no code with them (Python, summed row by row).
    for depth in loops.DEPTHS:
        n, _ = loops.iterations(10 ** 5, depth)
        assert c.function(depth, "for")(n) == loops.reference(10 ** 5, depth)
    return c


@pytest.fixture(scope="session")
def lua_runtime():
    import loops
    runtime = loops.lua_runtime()
    if runtime is None:
        pytest.skip("lupa with LuaJIT 2.1 (lupa.luajit21) is not installed")
    return runtime


def backend_or_skip(name: str):
    """beast's backend module ``name``, or skip the benchmark when it is not available yet."""
    import beast.runtime
    from beast.errors import BeastError
    try:
        return beast.runtime.get_backend(name)
    except BeastError as exc:
        pytest.skip(f"beast backend '{name}': {exc}")
