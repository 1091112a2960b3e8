"""``beast tune --ray``: how the measuring work scales over GPUs, with a stand-in device.

Each "GPU" is a Ray fake GPU whose backend sleeps: ``BEAST_BENCH_RAY_MEASURE_S`` per measurement
(default 0.1 s, the order of a real verify-and-time) and ``BEAST_BENCH_RAY_COMPILE_S`` per compile
(default 0.05 s).  Sleeping needs no CPU, so the 2-core machine shows the dispatcher's scaling and
overhead rather than its own speed.  ``BEAST_BENCH_RAY_CONFIGS`` configurations (default 48) of the
K40c GEMM space, random strategy; the single-process :func:`beast.tune.tune` with the same backend
is the baseline.  Per case: wall time of the whole call (``wall_s``, Ray worker start included)
until the first progress call (``start_s``: space loaded, Ray workers started, reference taken)
and from the first to the last result (``steady_s``), as ``extra_info``.

    python3 -m pytest bench/bench_ray.py --benchmark-only --benchmark-json=bench/results/ray.json
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import GEMM, env_int

ray = pytest.importorskip("ray")

import beast  # noqa: E402
from beast.tune import tune  # noqa: E402
from beast.tune.measure import OK, Measurement  # noqa: E402
from beast.tune.ray_runner import tune_ray  # noqa: E402

MAX_GPUS = 4
CONFIGS = env_int("BEAST_BENCH_RAY_CONFIGS", 48)
MEASURE_S = float(os.environ.get("BEAST_BENCH_RAY_MEASURE_S", "0.1"))
COMPILE_S = float(os.environ.get("BEAST_BENCH_RAY_COMPILE_S", "0.05"))


class SleepBackend:
    """A device that takes ``measure_s`` to measure and ``compile_s`` to compile."""

    device_name = "Sleeping GPU"

    def __init__(self, compile_s: float, measure_s: float):
        self.compile_s, self.measure_s = compile_s, measure_s

    def compile(self, config):
        time.sleep(self.compile_s)
        return config

    def measure(self, config):
        time.sleep(self.measure_s)
        g = float(config["blk_m"] * config["blk_n"])
        return Measurement(OK, ms=1.0 / g, gflops=g)


@dataclass(frozen=True)
class SleepFactory:
    compile_s: float
    measure_s: float

    def __call__(self):
        return SleepBackend(self.compile_s, self.measure_s)


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    here = str(Path(__file__).resolve().parent)
    ray.init(num_cpus=2, num_gpus=MAX_GPUS, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": here}})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def space():
    return beast.load(str(GEMM), device="k40c", settings={"precision": "single"})


def timed(benchmark, run):
    marks = []

    def progress(done, total, best):
        marks.append(time.perf_counter())

    def once():
        marks.clear()
        t0 = time.perf_counter()
        report = run(progress)
        benchmark.extra_info["wall_s"] = time.perf_counter() - t0
        benchmark.extra_info["start_s"] = marks[0] - t0 if marks else None
        benchmark.extra_info["steady_s"] = marks[-1] - marks[1] if len(marks) > 2 else None
        return report

    report = benchmark.pedantic(once, rounds=1, iterations=1)
    assert report.measured == CONFIGS and report.counts[OK] == CONFIGS
    benchmark.extra_info.update(configs=CONFIGS, measure_s=MEASURE_S, compile_s=COMPILE_S)
    return report


def test_single_process(benchmark, space):
    benchmark.group = "tune: workers"
    benchmark.extra_info["gpus"] = "1 (no Ray)"
    timed(benchmark, lambda progress: tune(space, (256, 256, 256), budget=CONFIGS, strategy="random",
                                           backend=SleepBackend(COMPILE_S, MEASURE_S), progress=progress,
                                           compile_workers=2))


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_ray(benchmark, cluster, space, gpus):
    benchmark.group = "tune: workers"
    benchmark.extra_info["gpus"] = gpus
    report = timed(benchmark, lambda progress: tune_ray(
        space, (256, 256, 256), budget=CONFIGS, strategy="random", num_workers=gpus, compile_workers=2,
        backend_factory=SleepFactory(COMPILE_S, MEASURE_S), progress=progress))
    assert len(report.per_worker) == gpus
