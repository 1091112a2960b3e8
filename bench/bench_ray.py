"""``beast tune --ray``: compiles on CPU tasks, measurements on GPU actors, with stand-in devices.

Two stand-ins, each against the single-process :func:`beast.tune.tune` with the same backend:

* **sleep** (the dispatcher's scaling): a backend whose compile sleeps
  ``BEAST_BENCH_RAY_COMPILE_S`` (default 0.05 s) in a Ray compile task and whose measurement
  sleeps ``BEAST_BENCH_RAY_MEASURE_S`` (default 0.1 s) on a fake GPU; 1, 2 and 4 GPUs on a
  cluster of ``BEAST_BENCH_RAY_SLEEP_CPUS`` logical CPUs (default 8: sleeping needs no CPU, so
  the compile tasks are not capped by the 2 real cores).  ``BEAST_BENCH_RAY_CONFIGS``
  configurations (default 48) of the K40c GEMM space, random strategy.
* **hostsim** (real work on this machine): the host simulator of the tests
  (``tests/support/ray_hostsim.py``): every compile is a real C++ compile of the generated kernel (the
  stand-in's NVRTC) in a Ray task, every measurement real launches on CPU threads, verified
  and timed; ``BEAST_BENCH_RAY_HOSTSIM_CONFIGS`` configurations (default 24), M = N = K = 64,
  1 and 2 GPUs on a cluster of the machine's real CPUs.

Where CuPy and NVRTC are installed (no GPU needed), ``test_nvrtc_compile`` also times the real
compile a Ray task runs (``BEAST_BENCH_RAY_NVRTC_CONFIGS``, default 16, H100 SGEMM for sm_90).

Per case, as ``extra_info``: wall time of the whole call (``wall_s``, Ray worker start
included), until the first progress call (``start_s``), from the first to the last result
(``steady_s``), ``per_s`` (results per second over ``steady_s``); for hostsim also the mean
compile (``compile_s``) and measurement (``measure_s``) of one configuration and ``gpu_busy``,
the fraction of the time from the first measurement's end to the last one's, times the GPUs,
that the GPU workers spent measuring (1: no GPU ever waited for a compile).

    python3 -m pytest bench/bench_ray.py --benchmark-only --benchmark-json=bench/results/ray.json
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import GEMM, ROOT, env_int

ray = pytest.importorskip("ray")

TESTS = str(ROOT / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

import beast  # noqa: E402
from beast.lang.devices import resolve_device  # noqa: E402
from beast.tune import tune  # noqa: E402
from beast.tune.sim.hostsim import host_compiler  # noqa: E402
from beast.tune.device.measure import OK, Measurement  # noqa: E402
from beast.tune.driver.ray import tune_ray  # noqa: E402

MAX_GPUS = 4
CONFIGS = env_int("BEAST_BENCH_RAY_CONFIGS", 48)
HOSTSIM_CONFIGS = env_int("BEAST_BENCH_RAY_HOSTSIM_CONFIGS", 24)
NVRTC_CONFIGS = env_int("BEAST_BENCH_RAY_NVRTC_CONFIGS", 16)
SLEEP_CPUS = env_int("BEAST_BENCH_RAY_SLEEP_CPUS", 8)
MEASURE_S = float(os.environ.get("BEAST_BENCH_RAY_MEASURE_S", "0.1"))
COMPILE_S = float(os.environ.get("BEAST_BENCH_RAY_COMPILE_S", "0.05"))
HOSTSIM_SIZE = (64, 64, 64)


@dataclass(frozen=True)
class SleepCompiler:
    """Compiles by sleeping ``compile_s``; the artefact is the configuration."""

    compile_s: float

    def build(self, config):
        time.sleep(self.compile_s)
        return dict(config)


class SleepBackend:
    """A device that takes ``measure_s`` to measure and ``compile_s`` to compile."""

    device_name = "Sleeping GPU"

    def __init__(self, compile_s: float, measure_s: float):
        self.compile_s, self.measure_s = compile_s, measure_s

    def compiler(self):
        return SleepCompiler(self.compile_s)

    def load(self, artifact):
        return artifact

    def compile(self, config):
        return self.load(self.compiler().build(config))

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


def use_cluster(cpus: int) -> None:
    """A local Ray instance with ``cpus`` CPUs and MAX_GPUS fake GPUs (restarted when it has other CPUs)."""
    if ray.is_initialized() and ray.cluster_resources().get("CPU") == cpus:
        return
    ray.shutdown()
    path = os.pathsep.join([str(Path(__file__).resolve().parent), TESTS, str(ROOT)])
    ray.init(num_cpus=cpus, num_gpus=MAX_GPUS, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})


@pytest.fixture(scope="module", autouse=True)
def _ray_down():
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def space():
    return beast.load(str(GEMM), device="k40c", settings={"precision": "single"})


@pytest.fixture(scope="module")
def small_space():
    from test_tune_gpu import SMALL
    return beast.load(str(GEMM), device=resolve_device("k40c").replace(**SMALL), settings={"precision": "single"})


def timed(benchmark, run, configs):
    marks = []

    def progress(done, total, best):
        marks.append(time.perf_counter())

    def once():
        marks.clear()
        t0 = time.perf_counter()
        report = run(progress)
        info = benchmark.extra_info
        info["wall_s"] = time.perf_counter() - t0
        info["start_s"] = marks[0] - t0 if marks else None
        info["steady_s"] = marks[-1] - marks[1] if len(marks) > 2 else None
        info["per_s"] = (len(marks) - 2) / info["steady_s"] if info["steady_s"] else None
        info["first_s"] = marks[1] - marks[0] if len(marks) > 1 else None
        return report

    report = benchmark.pedantic(once, rounds=1, iterations=1)
    assert report.measured == configs and report.counts[OK] == configs
    benchmark.extra_info["configs"] = configs
    return report


# --------------------------------------------------------------------------- sleep

def test_sleep_single_process(benchmark, space):
    benchmark.group = "tune --ray: sleeping stand-in"
    benchmark.extra_info.update(gpus="1 (no Ray)", measure_s=MEASURE_S, compile_s=COMPILE_S)
    timed(benchmark, lambda progress: tune(space, (256, 256, 256), budget=CONFIGS, strategy="random",
                                           backend=SleepBackend(COMPILE_S, MEASURE_S), progress=progress,
                                           compile_workers=2), CONFIGS)


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_sleep_ray(benchmark, space, gpus):
    use_cluster(SLEEP_CPUS)
    benchmark.group = "tune --ray: sleeping stand-in"
    benchmark.extra_info.update(gpus=gpus, cpus=SLEEP_CPUS, measure_s=MEASURE_S, compile_s=COMPILE_S)
    report = timed(benchmark, lambda progress: tune_ray(
        space, (256, 256, 256), budget=CONFIGS, strategy="random", num_workers=gpus,
        backend_factory=SleepFactory(COMPILE_S, MEASURE_S), progress=progress), CONFIGS)
    assert len(report.per_worker) == gpus


# --------------------------------------------------------------------------- real NVRTC

def _nvrtc_available() -> bool:
    try:
        import cupy
        cupy.cuda.nvrtc.getVersion()
    except Exception:  # noqa: BLE001 - no CuPy, or no libnvrtc
        return False
    return True


@pytest.mark.skipif(not _nvrtc_available(), reason="needs CuPy and NVRTC (no GPU needed)")
def test_nvrtc_compile(benchmark):
    """What a Ray compile task costs with the real compiler: ``NvrtcCompiler.build`` (NVRTC,
    in this process, no GPU) of NVRTC_CONFIGS random configurations of the H100 SGEMM space,
    for sm_90."""
    import cupy
    from beast.tune.device.gpu import NvrtcCompiler
    from beast.tune.kernels.paper import GemmSettings
    from beast.tune.driver.local import candidates
    space = beast.load(str(GEMM), device="h100", settings={"precision": "single"})
    configs = list(candidates(space, "random", NVRTC_CONFIGS, {}, seed=7))
    compiler = NvrtcCompiler(GemmSettings.from_mapping(space.settings), (9, 0))
    walls, cpus, sizes = [], [], []

    def once():
        walls.clear(), cpus.clear(), sizes.clear()
        for cfg in configs:
            t0, c0 = time.perf_counter(), time.process_time()
            art = compiler.build(cfg)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            sizes.append(len(art.data))

    benchmark.group = "tune --ray: NVRTC compile"
    benchmark.pedantic(once, rounds=1, iterations=1)
    walls.sort(), cpus.sort()
    benchmark.extra_info.update(
        configs=len(configs), nvrtc=".".join(map(str, cupy.cuda.nvrtc.getVersion())), cupy=cupy.__version__,
        wall_median_s=walls[len(walls) // 2], wall_min_s=walls[0], wall_max_s=walls[-1],
        cpu_median_s=cpus[len(cpus) // 2], cpu_min_s=cpus[0], cpu_max_s=cpus[-1],
        cubin_kb_mean=sum(sizes) / len(sizes) / 1024)


# --------------------------------------------------------------------------- host simulator

def hostsim_costs(benchmark, report, journal: str, gpus: int) -> None:
    """Mean compile and measurement of one configuration, and how busy the "GPUs" were."""
    from ray_hostsim import read_journal
    info = benchmark.extra_info
    compiles = [r.measurement.extra.get("compile_s") for r in report.results]
    compiles = [c for c in compiles if c]
    info["compile_s"] = sum(compiles) / len(compiles) if compiles else None
    spans = [(j["t0"], j["t1"]) for j in read_journal(journal)]
    info["measure_s"] = sum(t1 - t0 for t0, t1 in spans) / len(spans)
    # from the first measurement's end to the last one's: the time each GPU spent measuring
    lo, hi = min(t1 for _, t1 in spans), max(t1 for _, t1 in spans)
    busy = sum(max(0.0, min(t1, hi) - max(t0, lo)) for t0, t1 in spans)
    info["gpu_busy"] = busy / ((hi - lo) * gpus) if hi > lo else None


needs_cxx = pytest.mark.skipif(host_compiler() is None, reason="no C++20 host compiler for the host simulator")


@needs_cxx
def test_hostsim_single_process(benchmark, small_space, tmp_path):
    from ray_hostsim import HostsimFactory
    benchmark.group = "tune --ray: host simulator"
    benchmark.extra_info["gpus"] = "1 (no Ray)"
    journal = str(tmp_path / "single.jsonl")
    backend = HostsimFactory(dict(small_space.settings), HOSTSIM_SIZE, journal)()
    try:
        report = timed(benchmark, lambda progress: tune(
            small_space, HOSTSIM_SIZE, budget=HOSTSIM_CONFIGS, strategy="random", seed=5, backend=backend,
            progress=progress, compile_workers=os.cpu_count() or 1), HOSTSIM_CONFIGS)
    finally:
        sys.modules.pop("cupy", None)
    hostsim_costs(benchmark, report, journal, 1)


@needs_cxx
@pytest.mark.parametrize("gpus", [1, 2])
def test_hostsim_ray(benchmark, small_space, tmp_path, gpus):
    from ray_hostsim import HostsimFactory
    cpus = os.cpu_count() or 1
    use_cluster(cpus)
    benchmark.group = "tune --ray: host simulator"
    benchmark.extra_info.update(gpus=gpus, cpus=cpus)
    journal = str(tmp_path / f"ray{gpus}.jsonl")
    factory = HostsimFactory(dict(small_space.settings), HOSTSIM_SIZE, journal)
    report = timed(benchmark, lambda progress: tune_ray(
        small_space, HOSTSIM_SIZE, budget=HOSTSIM_CONFIGS, strategy="random", seed=5, num_workers=gpus,
        backend_factory=factory, progress=progress), HOSTSIM_CONFIGS)
    assert len(report.per_worker) == gpus and sum(report.compiled.values()) == HOSTSIM_CONFIGS
    hostsim_costs(benchmark, report, journal, gpus)
