"""strategy="beast": beast's default search strategy inside Kernel Tuner's runner, cache and budget
(beast.kernel_tuner.strategy), in Kernel Tuner's simulation mode on the benchmark-hub copies of
tests/data and on a kernel given only by tune_params and restrictions."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.errors import BeastError
from conftest import TESTS as TESTS_DIR

pytest.importorskip("kernel_tuner")
pytest.importorskip("sklearn")

from beast.kernel_tuner import strategy as kernel_tuner_strategy                       # noqa: E402
from beast.kernel_tuner.space import tune_kernel                    # noqa: E402
from beast.search.replay import load_recorded, match_space, replay   # noqa: E402
from beast.search import DEFAULT_STRATEGY            # noqa: E402

ROOT = Path(TESTS_DIR).parent
DATA = Path(TESTS_DIR) / "data" / "benchmark_hub"


def hub_cache(tmp_path, file_name, **timings):
    """A trimmed copy of tests/data as the ``.json`` cache Kernel Tuner's simulation mode reads
    (``timings``: compile/benchmark times in ms added to every configuration); its header."""
    with gzip.open(DATA / file_name, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    for entry in data["cache"].values():
        entry.update(timings)
    path = tmp_path / file_name.replace(".json.gz", ".json")
    path.write_text(json.dumps(data))
    return str(path), data


def run_hub(tmp_path, space_name, file_name, strategy_options, **timings):
    """tune_kernel(strategy="beast") on a benchmark-hub file; (results, the file's data)."""
    cache, data = hub_cache(tmp_path, file_name, **timings)
    space = beast.load(str(ROOT / "spaces" / "real" / f"{space_name}.py"))
    block_size_names = space.module.namespace["KERNEL_TUNER"]["block_size_names"]
    size = data["problem_size"]
    source = f"__global__ void {data['kernel_name']}(float *x) {{}}"
    results, env = tune_kernel(data["kernel_name"], source, tuple(size) if isinstance(size, list) else size,
                               [np.zeros(1, np.float32)], space=space, simulation_mode=True,
                               cache=cache, quiet=True, strategy="beast",
                               strategy_options=strategy_options, block_size_names=block_size_names)
    assert env["best_config"] in results
    return results, data


def keys(results, names):
    return [",".join(str(r[n]) for n in names) for r in results]


def fraction_of_optimum(results, data):
    best = min(e["time"] for e in data["cache"].values() if not isinstance(e["time"], str))
    found = [r["time"] for r in results if "__error__" not in r]
    return best / min(found) if found else 0.0


@pytest.mark.parametrize("file_name, space_name, budget", [
    ("kt_convolution_RTX_3090.json.gz", "kt_convolution", 37),
    ("kt_gemm_RTX_3090.json.gz", "kt_gemm", 50),
])
def test_max_fevals_exactly_and_every_configuration_in_the_space(tmp_path, file_name, space_name, budget):
    results, data = run_hub(tmp_path, space_name, file_name, {"max_fevals": budget, "seed": 4})
    got = keys(results, data["tune_params_keys"])
    assert len(got) == len(set(got)) == budget
    assert set(got) <= set(data["cache"])              # the space's configurations (the file's)


def test_it_is_beasts_default_strategy_inside_kernel_tuner(tmp_path):
    # over a beast space, the pool is the survivors in the same order as replay's: with the same
    # seed, Kernel Tuner's runner sees the very configurations beast's replay proposes
    budget, seed = 60, 3
    results, data = run_hub(tmp_path, "convolution", "convolution_A4000.json.gz",
                            {"max_fevals": budget, "seed": seed})
    pool, times = match_space(beast.load(str(ROOT / "spaces" / "real" / "convolution.py")),
                              load_recorded(DATA / "convolution_A4000.json.gz"))
    optimum = float(np.nanmin(times))
    curve, best = [], np.inf
    for r in results:
        if "__error__" not in r:
            best = min(best, r["time"])
        curve.append(optimum / best if np.isfinite(best) else 0.0)
    expected = replay(pool, times, DEFAULT_STRATEGY, budget, repeats=1, seed=seed).fractions[0]
    assert np.allclose(curve, expected)


def test_near_best_on_a_small_file_within_two_percent(tmp_path):
    # 136 evaluations of 6,768 (2 %); random sampling reaches 0.85-0.93 of the optimum there
    for seed in (0, 1):
        results, data = run_hub(tmp_path, "kt_convolution", "kt_convolution_RTX_3090.json.gz",
                                {"max_fevals": 136, "seed": seed})
        assert len(results) == 136
        assert fraction_of_optimum(results, data) >= 0.95, seed


def test_time_limit_ends_the_search(tmp_path):
    # every configuration costs 1 s of simulated compile + benchmark time: 10 s is 10 evaluations
    results, data = run_hub(tmp_path, "kt_pnpoly", "kt_pnpoly_RTX_3090.json.gz",
                            {"time_limit": 10, "seed": 0},
                            compile_time=500.0, verification_time=0.0, benchmark_time=500.0)
    got = keys(results, data["tune_params_keys"])
    assert 1 <= len(got) <= 10 and len(set(got)) == len(got)


# --- any kernel: parameters of every type, Kernel Tuner's own tune_kernel ----------------------

KERNEL = "__global__ void vector_add(float *c, float *a, float *b, int n) {}"
ARGS = [np.zeros(1024, np.float32)] * 3 + [np.int32(1024)]
MIXED = {"block_size_x": [32, 64, 128, 256], "scale": [0.5, 1.5, 1.0], "kind": ["a", "b"],
         "flag": [True, False]}
MIXED_RESTRICTIONS = ["block_size_x * scale <= 192", "kind == 'a' or flag"]


def mixed_cache(tmp_path):
    """Kernel Tuner's own list of the mixed space, and a cache file that times each configuration."""
    from kernel_tuner.searchspace import Searchspace
    configs = Searchspace(MIXED, MIXED_RESTRICTIONS, 1024).list
    cache = {}
    for i, config in enumerate(configs):
        entry = dict(zip(MIXED, config))
        entry.update(time=1.0 + (i * 7919 % 97) / 10.0, compile_time=0.0, verification_time=0,
                     benchmark_time=1.0)
        cache[",".join(str(v) for v in config)] = entry
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"device_name": "sim", "kernel_name": "vector_add", "problem_size": [1024],
                                "tune_params_keys": list(MIXED), "tune_params": MIXED,
                                "objective": "time", "cache": cache}))
    return configs, str(path)


def test_any_kernel_given_by_tune_params_and_restrictions(tmp_path):
    configs, cache = mixed_cache(tmp_path)
    options = dict(restrictions=MIXED_RESTRICTIONS, simulation_mode=True, cache=cache, quiet=True,
                   strategy="beast")
    results, _ = tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED,
                             strategy_options={"max_fevals": 7, "seed": 2}, **options)
    got = [tuple(r[k] for k in MIXED) for r in results]
    assert len(got) == len(set(got)) == 7 and set(got) <= set(configs)
    assert {type(r["scale"]) for r in results} == {float} and {type(r["flag"]) for r in results} == {bool}
    # without max_fevals: every configuration, each once
    results, _ = tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED, strategy_options={"seed": 2}, **options)
    got = [tuple(r[k] for k in MIXED) for r in results]
    assert len(got) == len(set(got)) == len(configs) and set(got) == set(configs)


def test_kernel_tuners_own_tune_kernel_takes_the_module(tmp_path):
    import kernel_tuner
    configs, cache = mixed_cache(tmp_path)
    results, env = kernel_tuner.tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED,
                                            restrictions=MIXED_RESTRICTIONS, simulation_mode=True,
                                            cache=cache, quiet=True, strategy=kernel_tuner_strategy,
                                            strategy_options={"max_fevals": 9, "strategy": "local"})
    got = [tuple(r[k] for k in MIXED) for r in results]
    assert len(set(got)) == 9 and set(got) <= set(configs) and env["best_config"] in results


def test_the_pool_codes_values_and_maps_them_back():
    from kernel_tuner.searchspace import Searchspace
    searchspace = Searchspace(MIXED, MIXED_RESTRICTIONS, 1024)
    pool, back = kernel_tuner_strategy.searchspace_pool(searchspace)
    assert len(pool) == len(searchspace.list) == len(back)
    assert sorted(back.values()) == sorted(searchspace.list)
    col = dict(zip(pool.names, pool.values))
    assert col["block_size_x"].tolist() == [32, 64, 128, 256]     # integers stay themselves
    assert col["scale"].tolist() == [0, 1, 2]                      # 0.5, 1.0, 1.5 by rank
    for i in range(len(pool)):
        config = back[tuple(pool.X[i].tolist())]
        assert sorted([0.5, 1.0, 1.5]).index(config[1]) == pool.X[i][1]


def test_costs_are_positive_and_lower_is_better():
    cost = kernel_tuner_strategy._cost
    assert cost(2.5, False) == 2.5 and cost(-4.0, True) == 0.25    # GFLOP/s 4 -> 1/4
    assert cost(sys.float_info.max, False) is None and cost(sys.float_info.max, True) is None
    assert cost(0.0, False) is None and cost(0.0, True) is None


def test_bad_strategy_options_are_clear_errors(tmp_path):
    configs, cache = mixed_cache(tmp_path)
    options = dict(restrictions=MIXED_RESTRICTIONS, simulation_mode=True, cache=cache, quiet=True,
                   strategy="beast")
    with pytest.raises(BeastError, match="unknown beast strategy 'nope'"):
        tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED, strategy_options={"strategy": "nope"}, **options)
    with pytest.raises(BeastError, match="strategy_options: bad option") as err:
        tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED, strategy_options={"x0": [32]}, **options)
    assert "max_fevals" in str(err.value)
    with pytest.raises(BeastError, match="batch must be a positive integer"):
        tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED, strategy_options={"batch": 0}, **options)
    with pytest.raises(BeastError, match="one objective, not 2"):
        tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED, objectives={"time": False, "compile_time": False},
                    **options)


def test_the_seed_is_a_non_negative_integer(tmp_path):
    configs, cache = mixed_cache(tmp_path)
    options = dict(restrictions=MIXED_RESTRICTIONS, simulation_mode=True, cache=cache, quiet=True,
                   strategy="beast")
    for seed in (-1, "x", 1.5, True):
        with pytest.raises(BeastError, match=r"strategy_options seed must be a non-negative integer "
                                             r"\(0, 1, 2, ...\), not"):
            tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED,
                        strategy_options={"seed": seed, "max_fevals": 3}, **options)
    with pytest.raises(BeastError, match="tune_kernel's seed must be a non-negative integer"):
        tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED, strategy_options={"max_fevals": 3}, seed=-1,
                    **options)
    with pytest.raises(BeastError, match="batch must be a positive integer"):
        tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED, strategy_options={"batch": True}, **options)
    # a NumPy integer is that integer; tune_kernel's seed when strategy_options has none
    runs = [tune_kernel("vector_add", KERNEL, 1024, ARGS, MIXED, **options, **kw)[0]
            for kw in ({"strategy_options": {"max_fevals": 6, "seed": np.int64(5)}},
                       {"strategy_options": {"max_fevals": 6, "seed": 5}},
                       {"strategy_options": {"max_fevals": 6}, "seed": 5})]
    got = [[tuple(r[k] for k in MIXED) for r in results] for results in runs]
    assert len(got[0]) == 6 and got[0] == got[1] == got[2]
