"""The GPU layer: compile, launch, verify and time generated GEMM kernels through CuPy.

CuPy is optional and imported lazily: :func:`gpu_available` answers without raising, and
:class:`CupyBackend` raises :class:`~beast.errors.DeviceError` ("no GPU found: ...") when
there is no CuPy, driver or device.

* Compilation: NVRTC through ``cupy.RawKernel`` (compiled eagerly by ``compile()``, so that
  the runner can compile ahead on CPU threads), cached in memory by the source's sha256 and
  on disk by CuPy's own kernel cache.  Configurations that differ only in ``shmem_l1`` or
  ``shmem_banks`` share a binary.
* Compilation apart from the GPU (``beast tune --ray``): :meth:`CupyBackend.compiler` gives a
  picklable :class:`NvrtcCompiler` that runs NVRTC on any CPU machine with CuPy (no device, no
  CUDA context) for the GPU's architecture and returns an :class:`Artifact` -- cubin bytes, or
  PTX when NVRTC does not know the GPU's architecture -- which :meth:`CupyBackend.load` writes
  to a file and loads with ``cupy.RawModule(path=...)`` (``cuModuleLoad``) on the GPU.
* Kernel families (:mod:`beast.tune.kernels.families`): the backend generates the paper's kernels
  (``family="gemm"``, the default) or the FP64 tensor-core ones (``"gemm_mma"``); both take the
  same arguments and report their launch the same way.
* Launch: grid ``(ceil(M/blk_m), ceil(N/blk_n))``, the kernel's block (``(dim_m, dim_n)`` for the
  paper's), dynamic shared memory ``kernel.smem_bytes`` (``blk_k*(blk_m+blk_n)*sizeof(T)`` for
  the paper's; ``max_dynamic_shared_size_bytes`` raised above 48 KiB),
  ``preferred_shared_memory_carveout`` from ``shmem_l1`` (the tensor-core kernels: 100 %).
  ``shmem_banks`` is only recorded (``shmem_banks_applied: false``): since Maxwell the bank size
  is fixed.
* Data and alignment rule: operands are stored column-major with leading dimensions rounded
  up to a multiple of ``16 // sizeof(T)`` elements (4 for float, 2 for double and single
  complex, 1 for double complex) -- a multiple of every ``dim_vec`` the kernel accepts for
  that type -- in CuPy allocations (256-byte aligned); the padding holds NaN so that a kernel
  reading it fails verification.  :func:`check_launch_rules` refuses anything else.
* Verification: one launch with ``alpha``/``beta`` not 0 or 1, against
  ``alpha * cupy.matmul(op(A), op(B)) + beta * C0`` (cuBLAS), entry by entry within
  ``c * (K + 2) * eps * (|alpha| |op(A)| |op(B)| + |beta| |C0|)`` (``c`` = 2 real, 8 complex:
  both results are within ``(K + 2) eps`` of the exact one by the usual componentwise bound).
* Timing: CUDA events around batches of launches (alpha = 1, beta = 0, as for cuBLAS),
  warm-up first, repeated until the 95 % confidence interval is within 3 % of the mean
  (:func:`beast.tune.device.measure.time_until_stable`), capped in samples and seconds.  Given the
  best time so far, a configuration whose warm-up launches are already ``early_cut`` (2) times
  slower -- ``spill_cut`` (1.5) times when it spills registers -- is recorded from them
  (``early_cut: true``): a clear loser costs three launches, not eight or more.
* Failures (compile, launch, wrong result) become :class:`Measurement` records; a CUDA error
  that leaves the context unusable raises :class:`FatalBackendError` so the run can stop
  cleanly and be resumed from its log in a fresh process.  ``beast tune`` runs the backend in
  a worker process (:mod:`beast.tune.device.isolate`, made by the picklable :class:`CupyFactory`): the
  tuner compiles with :meth:`CupyBackend.compiler`, the worker loads and measures, and a lost
  context is logged as ``context_lost`` while a fresh worker goes on.
"""
from __future__ import annotations

import hashlib
import os
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Mapping

from ...errors import BeastError, DeviceError

from ..kernels.families import DEFAULT_FAMILY, get_family
from ..kernels.paper import GemmKernel, GemmSettings
from .measure import (EARLY_CUT, LAUNCH_ERROR, OK, SPILL_CUT, WRONG, CompileFailure, FatalBackendError, Measurement, cutoff_ms, gemm_flops, time_until_stable)

#: the largest grid dimension y (and z) of CUDA.
MAX_GRID_Y = 65535
#: dynamic shared memory above this needs the opt-in attribute.
DEFAULT_DYNAMIC_SMEM = 48 * 1024


def _import_cupy():
    try:
        import cupy
    except ImportError:
        raise DeviceError("no GPU found: CuPy is not installed",
                          hint="`beast tune` measures kernels on an NVIDIA GPU through CuPy "
                               "(pip install cupy-cuda12x)") from None
    except Exception as err:      # CuPy installed but CUDA libraries missing or broken
        raise DeviceError(f"no GPU found: CuPy cannot load CUDA ({err})") from None
    return cupy


def gpu_available() -> bool:
    """True when CuPy imports and the CUDA driver reports at least one device; never raises."""
    try:
        return _import_cupy().cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def require_gpu(device_id: int = 0):
    """Return the cupy module after checking that CUDA device ``device_id`` exists.

    Raises DeviceError("no GPU found: ...") otherwise, saying why."""
    cupy = _import_cupy()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:
        raise DeviceError(f"no GPU found: the CUDA driver reports: {err}",
                          hint="check the NVIDIA driver (nvidia-smi)") from None
    if count < 1:
        raise DeviceError("no GPU found: the CUDA driver sees no device")
    if not 0 <= device_id < count:
        raise DeviceError(f"no GPU found with id {device_id}: the driver sees {count} device(s)")
    return cupy


def ld_multiple(settings: GemmSettings) -> int:
    """The leading-dimension multiple the harness uses: every dim_vec of the type divides it."""
    return max(1, 16 // settings.itemsize)


def check_launch_rules(kernel: GemmKernel, m: int, n: int, k: int, lda: int, ldb: int, ldc: int,
                       ptrs: tuple[int, ...] = ()) -> str | None:
    """Why the kernel must not be launched on these arguments (None when it may).

    The rules of :mod:`beast.tune.kernels.paper` (and :mod:`beast.tune.kernels.mma`): sizes
    non-negative, leading dimensions at least the stored rows, ``lda``/``ldb`` multiples of the
    vector width (``dim_vec``; ``vec``) and A/B aligned to that many elements, grid y within
    65535."""
    L, st = kernel.layout, kernel.settings
    if min(m, n, k) < 0:
        return f"negative size {m} x {n} x {k}"
    a_rows = k if st.trans_a else m
    b_rows = n if st.trans_b else k
    if lda < max(1, a_rows) or ldb < max(1, b_rows) or ldc < max(1, m):
        return f"leading dimensions lda={lda}, ldb={ldb}, ldc={ldc} smaller than the stored rows"
    v, what = L.vector_width, L.vector_name
    if v > 1:
        if lda % v or ldb % v:
            return f"{what}={v} needs lda and ldb multiples of {v} (got {lda}, {ldb})"
        for p in ptrs:
            if p % (v * st.itemsize):
                return f"{what}={v} needs A and B aligned to {v * st.itemsize} bytes"
    grid = kernel.grid(m, n)
    if grid[1] > MAX_GRID_Y:
        return f"grid y = ceil(N / blk_n) = {grid[1]} exceeds {MAX_GRID_Y}"
    return None


@dataclass
class Compiled:
    """A compiled kernel ready to launch: the generated source and CuPy's RawKernel."""

    kernel: GemmKernel
    raw: object
    compile_s: float
    cached: bool

    @property
    def config(self) -> dict:
        return self.kernel.layout.config()


@dataclass(frozen=True)
class Artifact:
    """A kernel compiled apart from the GPU, to be shipped to it: picklable, a few tens of KB.

    ``fmt`` is ``"cubin"`` (for the exact architecture ``arch``, e.g. ``"sm_90"``), ``"ptx"``
    (``"compute_XY"``: the driver JIT-compiles it at load) or a stand-in's own format;
    ``data`` the bytes; ``built_by`` where it was compiled (host/pid)."""

    kernel: GemmKernel
    fmt: str
    data: bytes
    arch: str
    options: tuple
    compile_s: float
    built_by: str

    @property
    def config(self) -> dict:
        return self.kernel.layout.config()

    @property
    def key(self) -> str:
        """What identifies the binary: same source, architecture and options, same bytes."""
        return f"{self.kernel.source_hash}-{self.arch}-{self.options!r}"


def _kernel(config: Mapping, settings: GemmSettings, family: str = DEFAULT_FAMILY) -> GemmKernel:
    """The generated kernel of ``config`` (of the kernel ``family``); a configuration it cannot be
    generated for is a CompileFailure of that configuration."""
    try:
        return get_family(family).generate(config, settings)
    except BeastError as err:
        raise CompileFailure(f"cannot generate the kernel: {err.message}") from None


def _nvrtc_arch(nvrtc, cc: tuple[int, int]) -> tuple[str, str]:
    """(``-arch`` value, format): ``sm_XY`` (cubin) when NVRTC knows the GPU's architecture,
    else PTX for the newest one it knows below it (the driver JIT-compiles PTX forward)."""
    want = cc[0] * 10 + cc[1]
    supported = getattr(nvrtc, "getSupportedArchs", None)
    archs = tuple(supported()) if supported is not None else ()
    if not archs or want in archs:
        return f"sm_{want}", "cubin"
    below = [a for a in archs if a <= want]
    if not below:
        raise CompileFailure(f"NVRTC {'.'.join(map(str, nvrtc.getVersion()))} cannot compile for "
                             f"compute capability {cc[0]}.{cc[1]} (it knows {min(archs)} to {max(archs)})")
    return f"compute_{max(below)}", "ptx"


@dataclass(frozen=True)
class NvrtcCompiler:
    """Compiles configurations with NVRTC on a CPU, for a GPU of compute capability ``cc``.

    Picklable (a Ray task carries it to CPU workers); needs CuPy's NVRTC binding
    (``cupy.cuda.nvrtc``) but no device: it never creates a CUDA context.  ``family``: the
    kernel family (:mod:`beast.tune.kernels.families`)."""

    settings: GemmSettings
    cc: tuple
    options: tuple = ()
    family: str = DEFAULT_FAMILY

    def build(self, config: Mapping) -> Artifact:
        """The :class:`Artifact` of ``config``; :class:`CompileFailure` when it does not compile."""
        kernel = _kernel(config, self.settings, self.family)
        try:
            nvrtc = _import_cupy().cuda.nvrtc
        except DeviceError as err:          # the machine, not the kernel: not a compile_error
            raise BeastError(f"cannot compile on {socket.gethostname()}: {err.message.removeprefix('no GPU found: ')}",
                             hint="every Ray node that compiles needs CuPy (pip install cupy-cuda12x)") from None
        arch, fmt = _nvrtc_arch(nvrtc, tuple(self.cc))
        options = (f"-arch={arch}", *self.options)
        t0 = time.perf_counter()
        prog = nvrtc.createProgram(kernel.source, f"{kernel.name}.cu", (), ())
        try:
            try:
                nvrtc.compileProgram(prog, options)
            except nvrtc.NVRTCError as err:
                log = nvrtc.getProgramLog(prog)
                raise CompileFailure(f"NVRTC: {err}\n{log[-3000:]}") from None
            data = nvrtc.getCUBIN(prog) if fmt == "cubin" else nvrtc.getPTX(prog)
        finally:
            nvrtc.destroyProgram(prog)
        if isinstance(data, str):                       # CuPy before v13 returns PTX as str
            data = data.encode()
        return Artifact(kernel, fmt, bytes(data), arch, tuple(self.options), time.perf_counter() - t0,
                        f"{socket.gethostname()}/pid{os.getpid()}")


class _Problem:
    """The operands of one M x N x K problem on the device, the cuBLAS reference and the error bound."""

    def __init__(self, cupy, settings: GemmSettings, size, seed: int):
        import numpy as np
        m, n, k = size
        st = settings
        self.m, self.n, self.k = m, n, k
        dtype = np.dtype(st.numpy_dtype)
        real = np.float32 if st.precision == "single" else np.float64
        mult = ld_multiple(st)
        rs = cupy.random.RandomState(seed)

        def rand(shape):
            x = rs.uniform(-1.0, 1.0, size=shape).astype(real)
            if st.is_complex:
                x = x + 1j * rs.uniform(-1.0, 1.0, size=shape).astype(real)
            return x.astype(dtype)

        def stored(rows, cols):
            """Column-major rows x cols, leading dimension padded (padding NaN)."""
            ld = max(1, -(-rows // mult) * mult)
            buf = cupy.full((max(cols, 1), ld), np.nan, dtype=dtype)
            if rows and cols:
                buf[:cols, :rows] = rand((cols, rows))
            return buf, ld, buf[:cols, :rows].T          # (buffer, ld, rows x cols view)

        a_rows, a_cols = (k, m) if st.trans_a else (m, k)
        b_rows, b_cols = (n, k) if st.trans_b else (k, n)
        self.a, self.lda, a_mat = stored(a_rows, a_cols)
        self.b, self.ldb, b_mat = stored(b_rows, b_cols)
        self.ldc = max(1, m)
        self.c0 = rand((max(n, 1), self.ldc))          # column-major M x N, ldc = M
        c0_mat = self.c0[:n, :m].T
        # cuBLAS operands: contiguous column-major copies without padding
        self.a_mat = cupy.asfortranarray(a_mat)
        self.b_mat = cupy.asfortranarray(b_mat)
        self.op_a = self.a_mat.T if st.trans_a else self.a_mat
        self.op_b = self.b_mat.T if st.trans_b else self.b_mat
        if st.is_complex:
            self.alpha, self.beta = complex(1.25, -0.5), complex(-0.75, 0.25)
        else:
            self.alpha, self.beta = 1.25, -0.75
        self.reference = self.alpha * cupy.matmul(self.op_a, self.op_b) + self.beta * c0_mat
        abs_a = cupy.abs(self.op_a).astype(np.float64)
        abs_b = cupy.abs(self.op_b).astype(np.float64)
        self.bound = abs(self.alpha) * (abs_a @ abs_b) + abs(self.beta) * cupy.abs(c0_mat).astype(np.float64)
        self.tol = (8.0 if st.is_complex else 2.0) * (k + 2) * st.eps
        self.tiny = float(np.finfo(real).tiny)
        self.out = cupy.empty_like(self.c0)

    def error_ratio(self, cupy, c_buf) -> float:
        """max |C - C_ref| / (tol * bound): at most 1 passes; NaN/inf fail."""
        if self.m == 0 or self.n == 0:
            return 0.0
        got = c_buf[:self.n, :self.m].T
        diff = cupy.abs(got - self.reference).astype("float64")
        ratio = diff / (self.tol * self.bound + self.tiny)
        worst = float(cupy.max(ratio))
        if not cupy.all(cupy.isfinite(got)):
            return float("inf")
        return worst


def _event_timer(cupy, launch):
    """``run(n)``: milliseconds, by CUDA events, for ``n`` back-to-back calls of ``launch``."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def run(n: int) -> float:
        start.record()
        for _ in range(n):
            launch()
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end)
    return run


class CupyBackend:
    """Measures GEMM configurations of one problem (settings, M x N x K) on a local GPU.

    The backend protocol the runner uses: ``device_name``, ``compile(config)`` (thread-safe,
    CPU: NVRTC), ``measure(compiled)`` (GPU thread), ``reference()`` (cuBLAS).  Ray's runner
    compiles elsewhere: ``compiler()`` (a picklable :class:`NvrtcCompiler` for this GPU) builds
    :class:`Artifact` objects on CPU workers and ``load(artifact)`` makes them ``Compiled`` here.
    ``family`` names the kernel family to generate (:mod:`beast.tune.kernels.families`).
    """

    def __init__(self, settings: GemmSettings | Mapping, size: tuple[int, int, int], *, device_id: int = 0,
                 seed: int = 0, rel_ci: float = 0.03, max_samples: int = 200, max_seconds: float = 10.0,
                 compile_options: tuple[str, ...] = (), early_cut: float | None = EARLY_CUT,
                 spill_cut: float | None = SPILL_CUT, family: str = DEFAULT_FAMILY):
        self.family = get_family(family).name
        self.cupy = require_gpu(device_id)
        self.early_cut, self.spill_cut = early_cut, spill_cut
        self.settings = settings if isinstance(settings, GemmSettings) else GemmSettings.from_mapping(settings)
        self.size = tuple(int(x) for x in size)
        self.device_id = device_id
        self.seed = seed
        self.timing_kw = dict(rel_ci=rel_ci, max_samples=max_samples, max_seconds=max_seconds)
        self.options = tuple(compile_options)
        props = self.cupy.cuda.runtime.getDeviceProperties(device_id)
        name = props.get("name", b"gpu")
        self.device_name = (name.decode(errors="replace") if isinstance(name, bytes) else str(name)).strip("\x00 ")
        self.compute_capability = (int(props["major"]), int(props["minor"]))
        self.smem_optin = int(props.get("sharedMemPerBlockOptin") or props.get("sharedMemPerBlock") or 0)
        self._cache: dict[str, object] = {}
        self._lock = threading.Lock()
        self._problem: _Problem | None = None
        self._loaded: dict[str, object] = {}
        self._workdir: tempfile.TemporaryDirectory | None = None

    # ---- compile (CPU threads)
    def compile(self, config: Mapping) -> Compiled:
        """Generate and NVRTC-compile the kernel of ``config``; CompileFailure on errors."""
        cupy = self.cupy
        kernel = _kernel(config, self.settings, self.family)
        key = kernel.source_hash + repr(self.options)
        with self._lock:
            raw = self._cache.get(key)
        if raw is not None:
            return Compiled(kernel, raw, 0.0, True)
        t0 = time.perf_counter()
        raw = cupy.RawKernel(kernel.source, kernel.name, options=self.options)
        try:
            with cupy.cuda.Device(self.device_id):
                if hasattr(raw, "compile"):
                    raw.compile()
                else:                                   # older CuPy: compiles on first access
                    raw.kernel  # noqa: B018
        except Exception as err:                        # CompileException, module load errors
            raise CompileFailure(f"{type(err).__name__}: {str(err)[-3000:]}") from None
        with self._lock:
            self._cache.setdefault(key, raw)
        return Compiled(kernel, raw, time.perf_counter() - t0, False)

    # ---- compile apart (Ray: NVRTC on CPU workers, loaded here)
    def compiler(self) -> NvrtcCompiler:
        """A picklable compiler for this GPU's architecture, to run where there is no GPU."""
        return NvrtcCompiler(self.settings, self.compute_capability, self.options, self.family)

    def load(self, artifact: Artifact) -> Compiled:
        """Load an artefact compiled by :meth:`compiler` (cached by its key): the bytes go to a
        file that ``cupy.RawModule(path=...)`` loads, its kernel as a ``RawKernel``.
        CompileFailure when the driver refuses the image."""
        cupy = self.cupy
        hit = self._loaded.get(artifact.key)
        if hit is not None:
            return Compiled(artifact.kernel, hit[1], artifact.compile_s, True)
        if self._workdir is None:
            self._workdir = tempfile.TemporaryDirectory(prefix="beast-kernels-")
        digest = hashlib.sha256(artifact.key.encode()).hexdigest()[:24]
        path = os.path.join(self._workdir.name, f"{digest}.{artifact.fmt}")
        tmp = f"{path}.{threading.get_ident()}.part"
        with open(tmp, "wb") as f:
            f.write(artifact.data)
        os.replace(tmp, path)
        try:
            with cupy.cuda.Device(self.device_id):
                module = cupy.RawModule(path=path)
                raw = module.get_function(artifact.kernel.name)
                raw.num_regs  # noqa: B018 - CuPy loads lazily: make a refused image fail here
        except Exception as err:                        # invalid image, unknown architecture
            raise CompileFailure(f"loading the {artifact.fmt} ({artifact.arch}) built on "
                                 f"{artifact.built_by}: {type(err).__name__}: {str(err)[-2000:]}") from None
        self._loaded[artifact.key] = (module, raw)       # the module outlives its kernels
        return Compiled(artifact.kernel, raw, artifact.compile_s, False)

    # ---- GPU side
    def _ensure_problem(self) -> _Problem:
        if self._problem is None:
            self._problem = _Problem(self.cupy, self.settings, self.size, self.seed)
        return self._problem

    def _args(self, p: _Problem, out, alpha, beta):
        import numpy as np
        real = np.float32 if self.settings.precision == "single" else np.float64
        alpha, beta = complex(alpha), complex(beta)
        i32 = np.int32
        return (i32(p.m), i32(p.n), i32(p.k), real(alpha.real), real(alpha.imag), p.a, i32(p.lda),
                p.b, i32(p.ldb), real(beta.real), real(beta.imag), out, i32(p.ldc))

    def _context_alive(self) -> bool:
        try:
            self.cupy.cuda.runtime.deviceSynchronize()
            self.cupy.zeros(1).sum().item()
            return True
        except Exception:
            return False

    def _failed(self, what: str, err: Exception, extra: dict) -> Measurement:
        message = f"{what}: {type(err).__name__}: {err}"
        if not self._context_alive():
            raise FatalBackendError(
                f"the CUDA context is unusable after {message}",
                hint="the log records this configuration; rerun the same command to resume after it")
        return Measurement(LAUNCH_ERROR, error=message, extra=extra)

    def identity(self, compiled: Compiled) -> tuple:
        """What the GPU runs for ``compiled``: its source (so its binary), the compile options
        and the launch (grid, block, shared memory, carveout).  Configurations of one identity
        differ only in settings the harness does not apply (``shmem_banks``): the runner
        measures them once."""
        return self.identifier()(compiled)

    def identifier(self) -> "LaunchIdentity":
        """:meth:`identity` as a picklable function, for a process that holds artefacts only
        (:mod:`beast.tune.device.isolate`)."""
        return LaunchIdentity(self.options, self.size)

    @property
    def timing_cap_s(self) -> float:
        """The most seconds the timing loop of one measurement runs (``max_seconds``)."""
        return float(self.timing_kw["max_seconds"])

    def measure(self, compiled: Compiled, best_ms: float | None = None) -> Measurement:
        """Verify one compiled configuration against cuBLAS, then time it.

        With ``best_ms`` (the best time so far), a clear loser is cut short: see
        :func:`~beast.tune.device.measure.cutoff_ms` and ``early_cut`` in the record."""
        cupy = self.cupy
        k = compiled.kernel
        L = k.layout
        raw = compiled.raw
        extra = {"compile_s": round(compiled.compile_s, 3)}
        if hasattr(L, "bank_size_bytes"):                  # the paper's kernels: asked for, not applied
            extra.update(bank_size_bytes=L.bank_size_bytes, shmem_banks_applied=False)
        extra["carveout"] = L.carveout
        with cupy.cuda.Device(self.device_id):
            p = self._ensure_problem()
            why = check_launch_rules(k, p.m, p.n, p.k, p.lda, p.ldb, p.ldc,
                                     (p.a.data.ptr, p.b.data.ptr))
            if why:
                return Measurement(LAUNCH_ERROR, error=why, extra=extra)
            smem = L.smem_bytes
            try:
                if smem > DEFAULT_DYNAMIC_SMEM:
                    raw.max_dynamic_shared_size_bytes = smem
                extra["regs"] = int(raw.num_regs)
                extra["local_bytes"] = int(raw.local_size_bytes)
            except Exception as err:
                return self._failed(f"asking for {smem} bytes of dynamic shared memory", err, extra)
            try:                        # a hint; GPUs without a unified L1/shared memory refuse it
                raw.preferred_shared_memory_carveout = L.carveout
                extra["carveout_applied"] = True
            except Exception:
                extra["carveout_applied"] = False
            grid, block = k.grid(p.m, p.n), k.block
            # verification launch
            c = p.c0.copy()
            try:
                raw(grid, block, self._args(p, c, p.alpha, p.beta), shared_mem=smem)
                cupy.cuda.get_current_stream().synchronize()
            except Exception as err:
                return self._failed("launch", err, extra)
            ratio = p.error_ratio(cupy, c)
            extra["err_ratio"] = ratio if ratio != float("inf") else "inf"
            if not ratio <= 1.0:
                return Measurement(WRONG, error=f"result differs from cuBLAS: max error {ratio:.3g} x tolerance",
                                   extra=extra)
            args = self._args(p, p.out, 1.0, 0.0)
            run = _event_timer(cupy, lambda: raw(grid, block, args, shared_mem=smem))
            cutoff, factor = cutoff_ms(best_ms, extra["local_bytes"], self.early_cut, self.spill_cut)
            try:
                timing = time_until_stable(run, cutoff_ms=cutoff, **self.timing_kw)
            except Exception as err:
                return self._failed("timed launch", err, extra)
        flops = gemm_flops(p.m, p.n, p.k, self.settings.is_complex)
        extra["converged"] = timing.converged
        if timing.cut:
            extra.update(early_cut=True, cutoff_ms=round(cutoff, 6), cut_factor=factor)
        return Measurement(OK, ms=timing.mean_ms, gflops=flops / (timing.mean_ms * 1e6) if timing.mean_ms > 0 else None,
                           ci_rel=None if timing.cut else timing.ci_rel, reps=timing.reps, extra=extra)

    def reference(self) -> Measurement:
        """Time ``cupy.matmul`` (cuBLAS) on the same operands (alpha = 1, beta = 0)."""
        cupy = self.cupy
        with cupy.cuda.Device(self.device_id):
            p = self._ensure_problem()
            run = _event_timer(cupy, lambda: cupy.matmul(p.op_a, p.op_b))
            try:
                timing = time_until_stable(run, **self.timing_kw)
            except Exception as err:
                return Measurement(LAUNCH_ERROR, error=f"cuBLAS: {type(err).__name__}: {err}")
        flops = gemm_flops(p.m, p.n, p.k, self.settings.is_complex)
        return Measurement(OK, ms=timing.mean_ms,
                           gflops=flops / (timing.mean_ms * 1e6) if timing.mean_ms > 0 else None,
                           ci_rel=timing.ci_rel, reps=timing.reps,
                           extra={"what": "cupy.matmul (cuBLAS)", "converged": timing.converged})

    def close(self) -> None:
        self._problem = None
        self._loaded.clear()
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None


@dataclass(frozen=True)
class LaunchIdentity:
    """:meth:`CupyBackend.identity` of a :class:`Compiled` or an :class:`Artifact` (both hold the
    kernel): source hash, compile ``options``, grid for ``size``, block, shared memory and
    carveout.  Picklable."""

    options: tuple
    size: tuple

    def __call__(self, compiled) -> tuple:
        k = compiled.kernel
        return (k.source_hash, tuple(self.options), k.grid(self.size[0], self.size[1]), k.block,
                k.layout.smem_bytes, k.layout.carveout)


@dataclass(frozen=True)
class CupyFactory:
    """A picklable maker of :class:`CupyBackend` (its arguments as plain data), for a process
    that measures apart from the one that tunes (:mod:`beast.tune.device.isolate`)."""

    settings: dict
    size: tuple
    seed: int = 0
    family: str = DEFAULT_FAMILY
    device_id: int = 0

    def __call__(self) -> CupyBackend:
        return CupyBackend(self.settings, self.size, device_id=self.device_id, seed=self.seed, family=self.family)


__all__ = ["gpu_available", "require_gpu", "CupyBackend", "Compiled", "Artifact", "NvrtcCompiler",
           "check_launch_rules", "ld_multiple", "LaunchIdentity", "CupyFactory"]
