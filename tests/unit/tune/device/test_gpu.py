"""The CuPy layer (beast.tune.device.gpu) end to end without a GPU: a stand-in ``cupy`` module runs the
generated kernels on CPU threads (beast.tune.sim.hostsim) and does the array work with NumPy, so
that compilation, launch arguments, verification against matmul, timing and the runner's
pipeline all execute."""
import itertools
import os
import pickle
import re
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.lang.devices import resolve_device
from beast.errors import BeastError, DeviceError
from beast.tune import format_report, tune
from beast.tune.kernels import mma as kernel_mma
from beast.tune.sim.emulate import emulate_gemm
from beast.tune.sim.hostsim import HostModule, build_host_library, host_compiler
from beast.tune.device.measure import OK, WRONG, CompileFailure
from conftest import TESTS as TESTS_DIR

GEMM = str(Path(TESTS_DIR).parent / "spaces" / "gemm.py")
MMA = str(Path(TESTS_DIR).parent / "spaces" / "gemm_mma.py")
SMALL = dict(max_threads_per_block=64, max_threads_dim_x=16, max_threads_dim_y=16, warp_size=4,
             max_shared_mem_per_block=2048, max_shmem_per_multi_processor=16384)

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no C++20 host compiler to stand in for the GPU")


class DevArray(np.ndarray):
    """A NumPy array that answers ``.data.ptr`` like a CuPy array."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)


def dev(x):
    return np.asarray(x).view(DevArray)


class FakeRawKernel:
    compiled = 0
    local_size_bytes = 0          # a class attribute: a test may make every kernel "spill"

    def __init__(self, code, name, options=()):
        assert isinstance(options, tuple)
        self.code, self.name = code, name
        self.module = None
        self.max_dynamic_shared_size_bytes = 48 * 1024
        self.preferred_shared_memory_carveout = -1
        self.num_regs = 40

    def compile(self):
        FakeRawKernel.compiled += 1
        self.module = HostModule(self.code, [self.name])

    def __call__(self, grid, block, args, shared_mem=0):
        assert self.module is not None
        assert shared_mem <= max(48 * 1024, self.max_dynamic_shared_size_bytes)
        self.module.launch(self.name, grid, block, shared_mem, args)


    @classmethod
    def loaded(cls, module, name):
        """A kernel of a module that FakeRawModule loaded (no compile step left)."""
        self = cls("", name)
        self.module = module
        return self


def built_library(src: str, kernels: list, defines: list) -> tuple[bool, str, bytes | None]:
    """``build_host_library`` of the kernels, through a cache keyed by everything the build
    reads (the toolchain's :func:`~beast.tune.sim.hostsim.toolchain_key`, the source, the kernels,
    the defines; under ``$BEAST_CACHE_DIR``, which conftest makes per run; Ray workers inherit
    it): the suite's stand-in NVRTC builds the same kernels in many tests and processes, at 0.5 s
    of g++ each.
    Failed builds are not kept.  Returns (ok, log, the library's bytes or None)."""
    from beast.runtime import cache
    from beast.tune.sim.hostsim import toolchain_key
    what = cache.key(toolchain_key(host_compiler()), src, *kernels, "\0", *defines)
    entry = os.path.join(cache.cache_dir("fake-nvrtc"), what[:32] + ".so")
    if os.path.exists(entry):
        with open(entry, "rb") as f:
            return True, "", f.read()
    with cache.private_dir(os.path.dirname(entry)) as tmp:
        lib = os.path.join(tmp, "k.so")
        ok, log = build_host_library(src, kernels, lib, defines)
        if not ok:
            return False, log, None
        with open(lib, "rb") as f:
            data = f.read()
        cache.install(lib, entry)
    return True, log, data


class FakeNvrtc(types.ModuleType):
    """The slice of CuPy's NVRTC binding (``cupy.cuda.nvrtc``) that NvrtcCompiler uses; the
    "cubin" is a host shared library (beast.tune.sim.hostsim) holding the kernel.  It touches no
    device, as NVRTC does not."""

    class NVRTCError(RuntimeError):
        pass

    def __init__(self, archs=(50, 60, 70, 75, 80, 86, 89, 90)):
        super().__init__("cupy.cuda.nvrtc")
        self.archs = tuple(archs)
        self.programs = {}
        self.ids = itertools.count(1)
        self.calls = []

    def getVersion(self):
        return (12, 4)

    def getSupportedArchs(self):
        return self.archs

    def createProgram(self, src, name, headers, include_names):
        prog = next(self.ids)
        self.programs[prog] = {"src": src, "name": name, "log": "", "lib": None, "arch": None}
        return prog

    def compileProgram(self, prog, options):
        p = self.programs[prog]
        self.calls.append(tuple(options))
        arch = [o.split("=", 1)[1] for o in options if o.startswith("-arch=")]
        assert len(arch) == 1 and re.fullmatch(r"(sm|compute)_\d+", arch[0]), options
        p["arch"] = arch[0]
        kernels = re.findall(r'extern "C" __global__ void __launch_bounds__\(\w+\)\s*(\w+)\(', p["src"])
        defines = [o for o in options if o.startswith("-D")]
        ok, log, p["lib"] = built_library(p["src"], kernels, defines)
        p["log"] = log
        if not ok:
            raise self.NVRTCError("NVRTC_ERROR_COMPILATION (6)")

    def getCUBIN(self, prog):
        p = self.programs[prog]
        if not p["arch"].startswith("sm_"):
            raise RuntimeError("cubin is requested, but the real arch (sm_XX) is not provided")
        return p["lib"]

    def getPTX(self, prog):
        return self.programs[prog]["lib"]

    def getProgramLog(self, prog):
        return self.programs[prog]["log"]

    def destroyProgram(self, prog):
        del self.programs[prog]


class FakeRawModule:
    """``cupy.RawModule(path=...)``: loads the host library a FakeNvrtc built."""

    loaded = []

    def __init__(self, code=None, *, path=None, options=()):
        assert code is None and path is not None and path.endswith((".cubin", ".ptx"))
        self.module = HostModule.from_library(path, [])
        FakeRawModule.loaded.append(path)

    def get_function(self, name):
        return FakeRawKernel.loaded(self.module, name)


class FakeEvent:
    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


def make_fake_cupy(devices: int = 1, archs=None):
    """A stand-in ``cupy`` module; ``devices=0`` for a machine without a GPU (NVRTC still works);
    ``archs`` the architectures its NVRTC knows."""
    cp = types.ModuleType("cupy")
    cp.RawKernel = FakeRawKernel
    cp.RawModule = FakeRawModule
    cp.full = lambda shape, value, dtype=None: dev(np.full(shape, value, dtype=dtype))
    cp.asfortranarray = lambda x: dev(np.asfortranarray(x))
    cp.matmul = lambda a, b: dev(np.matmul(a, b))
    cp.abs, cp.max, cp.all, cp.isfinite = np.abs, np.max, np.all, np.isfinite
    cp.empty_like = lambda x: dev(np.empty_like(x))
    cp.zeros = lambda *a, **k: dev(np.zeros(*a, **k))

    class RandomState:
        def __init__(self, seed):
            self.rs = np.random.RandomState(seed)

        def uniform(self, low, high, size):
            return dev(self.rs.uniform(low, high, size))

    cp.random = types.SimpleNamespace(RandomState=RandomState)

    class Device:
        def __init__(self, i=0):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def device_count():
        if not devices:
            raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
        return devices

    runtime = types.SimpleNamespace(
        getDeviceCount=device_count,
        getDeviceProperties=lambda i: {"name": b"Host CPU threads", "major": 9, "minor": 0,
                                       "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 232448},
        deviceSynchronize=lambda: None)
    cp.cuda = types.SimpleNamespace(
        runtime=runtime, Device=Device, Event=FakeEvent,
        get_elapsed_time=lambda s, e: (e.t - s.t) * 1e3,
        get_current_stream=lambda: types.SimpleNamespace(synchronize=lambda: None),
        nvrtc=FakeNvrtc() if archs is None else FakeNvrtc(archs))
    return cp


@pytest.fixture
def fake_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", make_fake_cupy())


def test_backend_compiles_verifies_and_times(fake_cupy, tmp_path):
    from beast.tune.device.gpu import CupyBackend, gpu_available
    assert gpu_available()
    space = beast.load(GEMM, device=resolve_device("k40c").replace(**SMALL),
                       settings=dict(precision="single", arithmetic="complex", trans_a=1))
    backend = CupyBackend(space.settings, (37, 29, 21), max_samples=6, max_seconds=1.0)
    assert backend.device_name == "Host CPU threads"
    rows = space.enumerate()
    pick = [0, len(rows) // 2, len(rows) - 1]
    configs = [{n: int(rows[n][i]) for n in space.iterators} for i in pick]
    for cfg in configs:
        m = backend.measure(backend.compile(cfg))
        assert m.status == OK, m.error
        assert m.gflops > 0 and m.ms > 0 and m.reps >= 1 and m.extra["err_ratio"] <= 1
        assert m.extra["shmem_banks_applied"] is False
    # same source (only shmem_l1 / shmem_banks differ): the binary is reused
    before = FakeRawKernel.compiled
    again = backend.compile(dict(configs[0], shmem_l1=1 - configs[0]["shmem_l1"]))
    assert again.cached and FakeRawKernel.compiled == before
    # a configuration that Fig. 15 rejects (its reading grid of A leaves elements unloaded) is caught
    def unloaded(cfg):
        return any("no thread stored" in h for h in emulate_gemm(cfg, space.settings).hazards)

    bases = ({n: int(rows[n][i]) for n in space.iterators} for i in range(0, len(rows), 7))
    bad = next(dict(base, dim_m_a=x, dim_n_a=y) for base in bases
               for x in range(1, base["blk_k"] // base["dim_vec"] + 1) for y in range(1, base["blk_m"] + 1)
               if x * y > base["dim_m"] * base["dim_n"] and unloaded(dict(base, dim_m_a=x, dim_n_a=y)))
    m = backend.measure(backend.compile(bad))
    assert m.status == WRONG and "differs from cuBLAS" in m.error
    ref = backend.reference()
    assert ref.status == OK and ref.gflops > 0


def test_tune_runs_through_the_cupy_backend(fake_cupy, tmp_path):
    from beast.tune.device.gpu import CupyBackend
    space = beast.load(GEMM, device=resolve_device("k40c").replace(**SMALL),
                       settings=dict(precision="double", trans_b=1))
    backend = CupyBackend(space.settings, (40, 24, 33), max_samples=5, max_seconds=0.5)
    log = tmp_path / "r.jsonl"
    report = tune(space, (40, 24, 33), budget=3, strategy="random", log_path=log, backend=backend,
                  compile_workers=2)
    assert report.counts[OK] == 3 and report.reference.status == OK
    text = format_report(report)
    assert "dgemm_NT  M=40 N=24 K=33  on Host CPU threads" in text and "3 verified" in text
    lines = log.read_text().splitlines()
    assert len(lines) == 1 + 1 + 2 * 3 + 1 and '"measured": 3,' in lines[-1]   # started + result, the run's summary


def test_tune_runs_the_tensor_core_family(fake_cupy, tmp_path, monkeypatch):
    """spaces/gemm_mma.py through tune() and the CuPy backend: its kernels (warp MMAs and cp.async
    run by the host simulator) are verified against matmul, and the log names the family."""
    import json
    from beast.tune.device import gpu

    class Brief(gpu.CupyBackend):
        """The backend tune() builds, timing a few samples: host-simulated times never settle
        to 3 %, and the full loop (up to 10 s per kernel) would only measure the CPU."""
        def __init__(self, *args, **kw):
            super().__init__(*args, **dict(kw, max_samples=5, max_seconds=0.5))

    monkeypatch.setattr(gpu, "CupyBackend", Brief)
    space = beast.load(MMA, device="h100", settings=dict(arithmetic="complex", trans_a=1))
    log = tmp_path / "mma.jsonl"
    report = tune(space, (37, 45, 29), budget=2, strategy="exhaustive", log_path=log, compile_workers=2,
                  isolate=False)                          # the stand-in cupy is this process's only
    assert report.counts[OK] == 2, [r.measurement.error for r in report.results]
    assert all(r.measurement.extra["err_ratio"] <= 1 for r in report.results)
    assert "bank_size_bytes" not in report.results[0].measurement.extra
    header = json.loads(log.read_text().splitlines()[0])
    assert header["kernel_family"] == "gemm_mma" and header["kernel_version"] == kernel_mma.KERNEL_VERSION
    text = format_report(report)
    assert "zgemm_TN  M=37 N=45 K=29  on Host CPU threads (profile h100), kernel family gemm_mma" in text
    assert "(double, FP64 tensor cores)" in text
    # the same log cannot be resumed by the paper's family
    paper = beast.load(GEMM, device=resolve_device("k40c").replace(**SMALL),
                       settings=dict(precision="double", arithmetic="complex", trans_a=1))
    with pytest.raises(BeastError, match="different GEMM kernel family .*log has \"gemm_mma\", this run has \"gemm\""):
        tune(paper, (37, 45, 29), budget=3, log_path=log, isolate=False)


def test_no_cupy_means_no_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)        # import cupy -> ImportError
    from beast.tune.device.gpu import CupyBackend, gpu_available
    assert not gpu_available()
    with pytest.raises(DeviceError, match="no GPU found: CuPy is not installed"):
        CupyBackend({"precision": "single", "arithmetic": "real", "trans_a": 0, "trans_b": 0}, (8, 8, 8))


def test_compiled_on_a_machine_without_gpu_loads_and_measures(monkeypatch):
    """The split of ``beast tune --ray``: the backend's NvrtcCompiler, pickled, compiles where
    there is no device (the stand-in cupy there has none: only NVRTC), for the GPU's
    architecture; the pickled artefact loads through ``cupy.RawModule(path=...)`` on the GPU
    side and verifies and times as a compile() there does."""
    from beast.tune.device.gpu import Artifact, CupyBackend, NvrtcCompiler, gpu_available
    space = beast.load(GEMM, device=resolve_device("k40c").replace(**SMALL), settings=dict(precision="double"))
    monkeypatch.setitem(sys.modules, "cupy", make_fake_cupy())
    backend = CupyBackend(space.settings, (19, 23, 17), max_samples=4, max_seconds=0.5)
    compiler = pickle.loads(pickle.dumps(backend.compiler()))
    assert compiler.cc == (9, 0)
    rows = space.enumerate()
    configs = [{n: int(rows[n][i]) for n in space.iterators} for i in (0, len(rows) - 1)]

    cpu = make_fake_cupy(devices=0)                        # the CPU worker
    monkeypatch.setitem(sys.modules, "cupy", cpu)
    assert not gpu_available()
    artifacts = [pickle.loads(pickle.dumps(compiler.build(cfg))) for cfg in configs]
    assert all(o[0] == "-arch=sm_90" for o in cpu.cuda.nvrtc.calls)
    assert not cpu.cuda.nvrtc.programs                    # every NVRTC program destroyed
    for art, cfg in zip(artifacts, configs):
        assert art.fmt == "cubin" and art.arch == "sm_90" and art.config == cfg
        assert art.data[:4] == b"\x7fELF" and art.compile_s > 0 and "/pid" in art.built_by

    FakeRawModule.loaded.clear()
    for art in artifacts:
        m = backend.measure(backend.load(art))
        assert m.status == OK, m.error
        assert m.extra["err_ratio"] <= 1 and m.gflops > 0
    assert [p.endswith(".cubin") for p in FakeRawModule.loaded] == [True, True]
    again = backend.load(artifacts[0])                    # loaded once per binary
    assert again.cached and len(FakeRawModule.loaded) == 2
    local = backend.measure(backend.compile(configs[0]))  # the single-process path agrees
    assert local.status == OK and local.extra["err_ratio"] <= 1

    # an NVRTC that does not know sm_90 gets PTX for the newest architecture below it
    monkeypatch.setitem(sys.modules, "cupy", make_fake_cupy(devices=0, archs=(70, 75, 80)))
    ptx = compiler.build(configs[0])
    assert (ptx.fmt, ptx.arch) == ("ptx", "compute_80")
    assert ptx.key != artifacts[0].key
    assert backend.measure(backend.load(ptx)).status == OK
    assert FakeRawModule.loaded[-1].endswith(".ptx")
    monkeypatch.setitem(sys.modules, "cupy", make_fake_cupy(devices=0, archs=(95, 100)))
    with pytest.raises(CompileFailure, match="cannot compile for compute capability 9.0"):
        compiler.build(configs[0])

    # a kernel that does not compile: the compiler's log in the message, the program destroyed
    monkeypatch.setitem(sys.modules, "cupy", cpu)
    broken = NvrtcCompiler(compiler.settings, compiler.cc, ("-Dbeast_gemm=1",))
    with pytest.raises(CompileFailure, match="NVRTC_ERROR_COMPILATION") as info:
        broken.build(configs[0])
    assert "error" in info.value.message and not cpu.cuda.nvrtc.programs
    # an image the driver refuses is a compile error, not a crash
    bad = Artifact(artifacts[0].kernel, "cubin", b"not an ELF image", "sm_90", ("-DX",), 0.0, "nowhere/pid0")
    with pytest.raises(CompileFailure, match="loading the cubin \\(sm_90\\) built on nowhere/pid0"):
        backend.load(bad)
    backend.close()
    # a machine without CuPy cannot compile at all: an error about the machine, not the kernel
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(BeastError, match="cannot compile on .*: CuPy is not installed") as info:
        compiler.build(configs[0])
    assert not isinstance(info.value, CompileFailure)


def real_nvrtc():
    """CuPy's NVRTC binding when CuPy and libnvrtc are installed (no GPU needed), else None."""
    if isinstance(sys.modules.get("cupy"), types.ModuleType) and not hasattr(sys.modules["cupy"], "__file__"):
        return None                                     # a stand-in left by another test
    try:
        import cupy
        cupy.cuda.nvrtc.getVersion()
    except Exception:
        return None
    return cupy.cuda.nvrtc


@pytest.mark.skipif(real_nvrtc() is None, reason="needs CuPy and NVRTC (no GPU needed)")
def test_real_nvrtc_builds_cubin_and_ptx_without_a_gpu():
    """Where CuPy's NVRTC is installed, the code a Ray CPU worker runs builds real artefacts:
    an ELF cubin for sm_90 holding the kernel, PTX for an architecture NVRTC does not know,
    NVRTC's own log for a kernel that does not compile."""
    from beast.tune.device.gpu import NvrtcCompiler
    from beast.tune.kernels.paper import GemmSettings
    from beast.tune.driver.local import candidates
    space = beast.load(GEMM, device="h100", settings=dict(precision="single", arithmetic="complex", trans_b=1))
    config = next(candidates(space, "random", 1, {}, seed=2))
    settings = GemmSettings.from_mapping(space.settings)
    cubin = NvrtcCompiler(settings, (9, 0)).build(config)
    assert (cubin.fmt, cubin.arch) == ("cubin", "sm_90")
    assert cubin.data[:4] == b"\x7fELF" and b"beast_gemm" in cubin.data
    archs = real_nvrtc().getSupportedArchs()
    future = (max(archs) // 10 + 1, 9)                  # newer than any NVRTC knows: PTX
    ptx = NvrtcCompiler(settings, future).build(config)
    assert ptx.fmt == "ptx" and ptx.arch == f"compute_{max(archs)}"
    assert b".entry beast_gemm" in ptx.data
    with pytest.raises(CompileFailure, match="(?s)NVRTC_ERROR_COMPILATION.*error: expected") as info:
        NvrtcCompiler(settings, (9, 0), ("-Dbeast_gemm=1",)).build(config)
    assert "beast_gemm.cu" in info.value.message


def test_the_backend_cuts_a_clear_loser_and_knows_its_twins(fake_cupy):
    """CupyBackend.measure(best_ms=...): slower than 2x (1.5x when it spills) the best so far,
    a configuration is recorded from its first timings; configurations differing only in
    shmem_banks (not applied) have one identity, shmem_l1 (the carveout) makes another."""
    from beast.tune.device.gpu import CupyBackend
    space = beast.load(GEMM, device=resolve_device("k40c").replace(**SMALL), settings=dict(precision="single"))
    backend = CupyBackend(space.settings, (33, 17, 21), max_samples=6, max_seconds=1.0)
    rows = space.enumerate()
    cfg = {n: int(rows[n][0]) for n in space.iterators}
    compiled = backend.compile(cfg)
    full = backend.measure(compiled)
    assert full.status == OK and "early_cut" not in full.extra and full.ci_rel is not None
    cut = backend.measure(compiled, best_ms=full.ms / 100)
    assert cut.status == OK and cut.extra["early_cut"] is True and cut.ci_rel is None
    assert cut.extra["cut_factor"] == 2.0 and cut.extra["cutoff_ms"] == pytest.approx(full.ms / 50, abs=2e-6)
    assert cut.reps < full.reps
    kept = backend.measure(compiled, best_ms=full.ms * 10)         # far faster than the best: full loop
    assert "early_cut" not in kept.extra and kept.ci_rel is not None
    FakeRawKernel.local_size_bytes = 64                            # a spilling kernel: the stricter factor
    try:
        spilled = backend.measure(compiled, best_ms=full.ms / 100)
    finally:
        FakeRawKernel.local_size_bytes = 0
    assert spilled.extra["cut_factor"] == 1.5 and spilled.extra["local_bytes"] == 64
    twin = backend.compile(dict(cfg, shmem_banks=1 - cfg["shmem_banks"]))
    other = backend.compile(dict(cfg, shmem_l1=1 - cfg["shmem_l1"]))
    assert backend.identity(twin) == backend.identity(compiled) != backend.identity(other)
