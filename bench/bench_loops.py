"""The paper's loop experiment (Luszczek et al. 2016, Figs. 17-19): iterations per second of
1 to 4 nested loops in Python, Lua (LuaJIT through lupa) and C (cc -O2 -march=native).

About 10**8 iterations in all for Lua and C, as in the paper; Python runs 10**7 (ten times
fewer: 10**8 takes 15-20 s per case here) and the rate (iterations/s) is what is compared.  The
loop bodies and lengths are in ``bench/loops``.  Every case checks its result against the C
``for`` loop of the same length, so no language can skip work.  ``extra_info`` records the
iteration count; ``bench/plot_loops.py`` turns the JSON into the table and ``bench/loops.png``.
"""
from __future__ import annotations

import pytest

import loops
from conftest import env_int

PY_TOTAL = env_int("BEAST_BENCH_PY_ITERS", 10 ** 7)
TOTAL = env_int("BEAST_BENCH_ITERS", 10 ** 8)
ROUNDS = env_int("BEAST_BENCH_ROUNDS", 3)


def _run(benchmark, fn, n, iters, lang, variant, depth, c_loops, total, warmup=0):
    benchmark.group = f"loops depth {depth}"
    benchmark.extra_info.update(experiment="loops", language=lang, variant=variant,
                                depth=depth, length=n, iterations=iters, total_target=total)
    result = benchmark.pedantic(fn, args=(n,), rounds=ROUNDS, iterations=1,
                                warmup_rounds=warmup)
    expected = c_loops.function(depth, "for")(n)
    assert result == expected, f"{lang} {variant} depth {depth}: {result} != {expected}"
    benchmark.extra_info["checksum"] = int(result)


@pytest.mark.parametrize("depth", loops.DEPTHS)
@pytest.mark.parametrize("variant", loops.PY_VARIANTS)
def test_loops_python(benchmark, variant, depth, c_loops):
    n, iters = loops.iterations(PY_TOTAL, depth)
    fn = loops.python_function(depth, variant)
    _run(benchmark, fn, n, iters, "Python", variant, depth, c_loops, PY_TOTAL)


@pytest.mark.parametrize("depth", loops.DEPTHS)
@pytest.mark.parametrize("variant", loops.LUA_VARIANTS)
def test_loops_lua(benchmark, variant, depth, c_loops, lua_runtime):
    n, iters = loops.iterations(TOTAL, depth)
    fn = loops.lua_function(lua_runtime, depth, variant)
    # one warm-up round: LuaJIT records and compiles its traces during the first call
    _run(benchmark, fn, n, iters, "Lua", variant, depth, c_loops, TOTAL, warmup=1)


@pytest.mark.parametrize("depth", loops.DEPTHS)
@pytest.mark.parametrize("variant", loops.C_VARIANTS)
def test_loops_c(benchmark, variant, depth, c_loops):
    n, iters = loops.iterations(TOTAL, depth)
    benchmark.extra_info.update(compiler=c_loops.version, command=c_loops.command,
                                vectorized=bool(c_loops.vectorized))
    _run(benchmark, c_loops.function(depth, variant), n, iters, "C", variant, depth, c_loops,
         TOTAL, warmup=1)


@pytest.fixture(scope="session")
def c_loops_o3(tmp_path_factory):
    try:
        return loops.CLoops(str(tmp_path_factory.mktemp("loops_o3")), flags=("-O3", "-march=native"))
    except Exception as exc:
        pytest.skip(f"C loops unavailable: {exc}")


@pytest.mark.parametrize("depth", loops.DEPTHS)
def test_loops_c_o3(benchmark, depth, c_loops, c_loops_o3):
    """Not in the paper: the C ``for`` loop at -O3, where GCC vectorizes it (at -O2 it does not)."""
    n, iters = loops.iterations(TOTAL, depth)
    benchmark.extra_info.update(compiler=c_loops_o3.version, command=c_loops_o3.command,
                                vectorized=bool(c_loops_o3.vectorized))
    _run(benchmark, c_loops_o3.function(depth, "for"), n, iters, "C", "for-O3", depth, c_loops,
         TOTAL, warmup=1)
