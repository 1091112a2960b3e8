"""Hardware counters of a generated GEMM kernel without a GPU, from the host simulator.

:func:`simulate_counters` builds one configuration's kernel for the host simulator
(:mod:`beast.tune.sim.hostsim`) with its counting hooks switched on (``BEAST_HOST_COUNT``), runs one
block and reports, per k-tile in the steady state and per warp (:class:`KTileCounters`):

* shared-memory **wavefronts** of the fragment loads (``BEAST_LDS``) and of the ``cp.async``
  stores, and what a conflict-free layout would take;
* global **sectors** per request of the ``cp.async`` sources;
* MMA and FMA instructions, and barriers.

How.  Every hook records an event in its thread's trace, in program order: ``BEAST_LDS(x)``
records ``&x`` (as an offset in shared memory) and ``sizeof x``, ``beast_cp_async<BYTES>(dst,
src, src_bytes)`` the destination offset, the width, the source address and its bytes, the warp
MMAs and ``__syncthreads`` one event each.  The kernels' control flow is warp-uniform (every
branch of the main loop depends on block-wide values only), so the i-th event of each of a
warp's 32 lanes belongs to one warp-wide instruction: the traces are grouped by position, and a
warp whose lanes disagree in the number, kind or width of their events is reported (a
:class:`~beast.errors.BeastError`), never counted.  The block runs with ``K`` of ``K1 = 1`` and
``K2 = 1 + P`` k-tiles, ``P`` the shared-memory buffers its main loop cycles through (M and N
one block tile, so that nothing is zero-filled; :func:`ktiles`); the difference of the two runs
divided by ``P`` is one steady-state k-tile, averaged over the buffers, the prologue and the
epilogue cancelling.  Per warp is the block's total divided by its warps (``ceil(threads / 32)``);
:meth:`KTileCounters.block` gives the totals back.

The model (hardware rules, with where they are stated):

* Shared memory has 32 banks; successive 32-bit words map to successive banks, each bank
  serving 32 bits per clock, and two threads that access the same 32-bit word do not conflict
  (a read is broadcast).  CUDA C++ Programming Guide, "Compute Capability 5.x", "Shared Memory"
  (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#shared-memory-5-x); its 7.x
  section says "Otherwise, shared memory behaves the same way as for devices of compute
  capability 5.x", and the 8.x and 9.x sections change only the capacities (the carveout).
* A warp's shared-memory request is processed in passes of at most 128 bytes (the banks' 32 x 4
  bytes): a 32-bit access is one pass of 32 lanes, a 64-bit access two half-warps of 16 lanes, a
  128-bit access four quarter-warps of 8 lanes, so an ``LDS.128`` takes at least 4 wavefronts
  (NVIDIA developer forum, "Clarification: bank conflicts metric vs wavefronts for shared memory
  LDS.128", https://forums.developer.nvidia.com/t/
  clarification-bank-conflicts-metric-vs-wavefronts-for-shared-memory-lds-128/359822).  Each
  pass takes as many wavefronts
  as the most distinct words that one bank is asked for; a conflict-free layout takes one per
  pass (``*_ideal_wavefronts``).  A *wavefront* is the "work package" that L1TEX processes in one
  cycle, the work items of different wavefronts being serialized, and the wavefronts over the
  ideal are what Nsight Compute reports as bank conflicts (Nsight Compute Kernel Profiling Guide,
  "Metrics Decoder", https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html).
* A global request touches the aligned 32-byte *sectors* that its lanes' bytes fall in (the same
  guide, "Metrics Decoder": a sector is an aligned 32-byte chunk, four to a 128-byte cache line):
  ``global_sectors / global_requests`` is Nsight Compute's "sectors per request".  Lanes that
  copy no source bytes (zero-fill) touch none.  The simulated matrices are aligned to 256 bytes with leading
  dimensions rounded up to 128 bytes, as a large problem's allocation would be.
* FMA instructions: the tensor-core template's main loop has none; the paper's template does
  ``blk_k * thr_m * thr_n`` multiply-adds per thread per k-tile (four FMAs each when complex),
  one instruction per warp each: computed exactly from the layout, not counted.

The paper's template reaches these hooks where it has them: ``cp.async`` with ``async_copy=1``,
barriers, and the shared-memory reads of its multiply phase, which :func:`counting_kernel`
wraps in ``BEAST_LDS`` (``kernel_body(..., lds_hook=True)``; the GPU text has no hook).  Its
register-staged stores to shared memory and its global loads into registers are not counted.
"""
from __future__ import annotations

import ctypes
import math
import os
from dataclasses import asdict, dataclass, fields
from typing import Mapping

import numpy as np

from ...errors import BeastError

#: one event of a thread's trace (``beast_host_event`` of the shim)
EVENT = np.dtype([("addr", "<u8"), ("src", "<u8"), ("kind", "<i4"), ("bytes", "<i4"),
                  ("src_bytes", "<i4"), ("pad", "<i4")])
LDS, CP_ASYNC, MMA, BARRIER = 1, 2, 3, 4
_KIND_NAMES = {LDS: "shared-memory load", CP_ASYNC: "cp.async", MMA: "MMA", BARRIER: "barrier"}

WARP = 32
BANKS = 32
BANK_BYTES = 4
PASS_BYTES = 128
SECTOR_BYTES = 32


@dataclass(frozen=True)
class KTileCounters:
    """Per k-tile and per warp, steady state (see module docstring)."""

    lds_requests: float
    lds_wavefronts: float            # shared-memory fragment loads
    lds_ideal_wavefronts: float      # what a conflict-free layout would take
    cp_async_requests: float
    cp_async_wavefronts: float       # shared-memory stores by cp.async
    cp_async_ideal_wavefronts: float
    global_requests: float
    global_sectors: float            # cp.async sources
    mma: float
    fma: float
    barriers: float
    warps: int                       # warps per block

    def sectors_per_request(self) -> float:
        """Global sectors per ``cp.async`` request (0 when there are none)."""
        return self.global_sectors / self.global_requests if self.global_requests else 0.0

    def as_dict(self) -> dict:
        """The fields, and ``sectors_per_request``."""
        return {**asdict(self), "sectors_per_request": self.sectors_per_request()}

    def block(self) -> dict:
        """The block's totals per k-tile: each counter times :attr:`warps`."""
        return {f.name: getattr(self, f.name) * self.warps for f in fields(self) if f.name != "warps"}


# ------------------------------------------------------------------ the model

def smem_wavefronts(offsets: np.ndarray, width: int, bank_bytes: int = BANK_BYTES) -> tuple[int, int]:
    """(wavefronts, ideal wavefronts) of warp-wide shared-memory requests of ``width`` bytes per
    lane: ``offsets`` is (lanes, requests) byte offsets in shared memory, one column a request.

    A pass that asks for exactly the words of an earlier pass of the same request is served with
    it (a 64- or 128-bit read of one address by the whole warp takes one wavefront, not two or
    four): without that, the broadcast reads of the H200 logs' fastest SGEMM would cap it below
    its measured time (``beast.tune.model.speed``)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lanes, n = offsets.shape
    if n == 0 or lanes == 0:
        return 0, 0
    per_pass = max(1, min(WARP, BANKS * bank_bytes // width)) if width >= bank_bytes else WARP
    words_per_lane = max(1, width // bank_bytes)
    column = np.arange(n, dtype=np.int64) * BANKS
    total = ideal = 0
    earlier = []
    for first in range(0, lanes, per_pass):
        part = offsets[first:first + per_pass] // bank_bytes
        words = (part[:, None, :] + np.arange(words_per_lane)[None, :, None]).reshape(-1, n)
        words = np.sort(words, axis=0)
        fresh = np.ones(words.shape, dtype=bool)
        fresh[1:] = words[1:] != words[:-1]             # a word asked twice is one (a broadcast)
        distinct = np.sort(np.where(fresh, words, np.iinfo(np.int64).max), axis=0)   # each column's set
        repeat = np.zeros(n, dtype=bool)
        for seen in earlier:
            if seen.shape == distinct.shape:
                repeat |= (seen == distinct).all(axis=0)
        earlier.append(distinct)
        fresh[:, repeat] = False
        slots = (words % BANKS + column)[fresh]
        per_bank = np.bincount(slots, minlength=n * BANKS).reshape(n, BANKS)
        total += int(per_bank.max(axis=1).sum())
        ideal += int(n - repeat.sum())
    return total, ideal


def global_sectors(src: np.ndarray, nbytes: np.ndarray) -> int:
    """Distinct 32-byte sectors per request, summed: ``src`` and ``nbytes`` are (lanes, requests)
    source addresses and source bytes (lanes with no bytes touch nothing)."""
    src = np.asarray(src, dtype=np.int64)
    nbytes = np.asarray(nbytes, dtype=np.int64)
    if src.size == 0:
        return 0
    live = nbytes > 0
    first = np.where(live, src // SECTOR_BYTES, -1)
    last = np.where(live, (src + np.maximum(nbytes, 1) - 1) // SECTOR_BYTES, -1)
    both = np.sort(np.concatenate([first, last]), axis=0)
    distinct = (np.diff(both, axis=0) != 0).sum(axis=0) + 1
    distinct -= (both[0] == -1)                          # the dead lanes' -1 is no sector
    return int(distinct.sum())


def warp_totals(traces: list, threads: int) -> dict:
    """The block's totals over its warps from the threads' traces (index: linear thread id)."""
    out = dict.fromkeys(("lds_requests", "lds_wavefronts", "lds_ideal_wavefronts", "cp_async_requests",
                         "cp_async_wavefronts", "cp_async_ideal_wavefronts", "global_requests",
                         "global_sectors", "mma", "barriers"), 0)
    for w in range(-(-threads // WARP)):
        lanes = [traces[t] if t < len(traces) else np.zeros(0, EVENT)
                 for t in range(w * WARP, min(threads, (w + 1) * WARP))]
        _check_uniform(w, lanes)
        if not len(lanes[0]):
            continue
        kind, width = lanes[0]["kind"], lanes[0]["bytes"]
        addr = np.stack([t["addr"] for t in lanes]).astype(np.int64)
        for k, req, wf, ideal in ((LDS, "lds_requests", "lds_wavefronts", "lds_ideal_wavefronts"),
                                  (CP_ASYNC, "cp_async_requests", "cp_async_wavefronts",
                                   "cp_async_ideal_wavefronts")):
            for b in np.unique(width[kind == k]):
                cols = (kind == k) & (width == b)
                got, best = smem_wavefronts(addr[:, cols], int(b))
                out[req] += int(cols.sum())
                out[wf] += got
                out[ideal] += best
        cp = kind == CP_ASYNC
        out["global_requests"] += int(cp.sum())
        if cp.any():
            src = np.stack([t["src"][cp] for t in lanes]).astype(np.int64)
            nbytes = np.stack([t["src_bytes"][cp] for t in lanes])
            out["global_sectors"] += global_sectors(src, nbytes)
        out["mma"] += int((kind == MMA).sum())
        out["barriers"] += int((kind == BARRIER).sum())
    return out


def _check_uniform(warp: int, lanes: list) -> None:
    first = lanes[0]
    for lane, tr in enumerate(lanes[1:], start=1):
        if len(tr) != len(first):
            raise BeastError(f"warp {warp}: lane {lane} records {len(tr)} counted events, lane 0 {len(first)}: "
                             "the kernel's control flow is not warp-uniform, so its warp-wide counters are "
                             "not defined")
        differ = (tr["kind"] != first["kind"]) | (tr["bytes"] != first["bytes"])
        if differ.any():
            i = int(np.argmax(differ))
            raise BeastError(f"warp {warp}: event {i} is a {_KIND_NAMES.get(int(tr['kind'][i]), '?')} of "
                             f"{int(tr['bytes'][i])} bytes in lane {lane} but a "
                             f"{_KIND_NAMES.get(int(first['kind'][i]), '?')} of {int(first['bytes'][i])} bytes "
                             "in lane 0: the kernel's control flow is not warp-uniform")


# ------------------------------------------------------------------ building and running

_modules: dict = {}
_scratch = None


def _build(source: str, name: str, folder: str, digest: str) -> str:
    """The counting library of ``source`` in ``folder`` (built there, through a private folder and
    a rename, when it is not there yet)."""
    from ...runtime import cache
    from .hostsim import build_host_library
    lib = os.path.join(folder, f"count_{digest[:24]}.so")
    if not os.path.exists(lib):
        with cache.private_dir(folder) as tmp:
            built = os.path.join(tmp, os.path.basename(lib))
            ok, log = build_host_library(source, [name], built, counting=True)
            if not ok:
                raise BeastError("host compilation of the kernel for counting failed:\n" + log)
            cache.install(built, lib)
    return lib


def counting_kernel(config: Mapping, settings, family: str = "gemm_mma", name: str = "beast_count"):
    """The kernel of ``config`` as the counting build runs it: the tensor-core template's own
    text (its fragment loads go through ``BEAST_LDS`` already); the paper's with its
    multiply-phase reads wrapped in ``BEAST_LDS``."""
    from ..kernels.families import get_family
    from ..kernels.paper import GemmSettings
    fam = get_family(family)
    st = fam.settings(settings.as_dict() if isinstance(settings, GemmSettings) else settings)
    if fam.name != "gemm":
        return fam.generate(config, st, name=name)
    from ..kernels import paper as kernel
    layout = kernel.GemmLayout.from_config(config, st)
    return kernel.GemmKernel(layout, name, kernel.kernel_body(layout, name, lds_hook=True))


def _library(kernel, workdir: str | None):
    """The counting build of ``kernel`` (one per source, in beast's cache or ``workdir``)."""
    from ...runtime import cache
    from .hostsim import HostModule, host_compiler, toolchain_key
    from ..kernels.paper import translation_unit
    cxx = host_compiler()
    if cxx is None:
        raise BeastError("no C++ host compiler (g++ or clang++) found to run kernels on the CPU",
                         hint="the counters come from the host simulator, which compiles the kernel for the CPU")
    source = translation_unit([kernel])
    digest = cache.key(toolchain_key(cxx), "count", source, kernel.name)
    memo = (digest, workdir or cache.cache_dir(create=False))
    if memo in _modules:
        return _modules[memo]
    try:
        folder = workdir or cache.cache_dir("hostsim-count")
        lib = _build(source, kernel.name, folder, digest)
    except OSError:                                      # no writable cache: a folder of this process
        global _scratch
        if _scratch is None:
            import tempfile
            _scratch = tempfile.TemporaryDirectory(prefix="beast-count-")
        lib = _build(source, kernel.name, _scratch.name, digest)
    module = HostModule.from_library(lib, [kernel.name])
    for fn, restype, argtypes in (("beast_host_count_clear", None, []),
                                  ("beast_host_count_threads", ctypes.c_ulonglong, []),
                                  ("beast_host_count_size", ctypes.c_ulonglong, [ctypes.c_uint]),
                                  ("beast_host_count_events", ctypes.c_void_p, [ctypes.c_uint])):
        f = getattr(module.lib, fn)
        f.restype, f.argtypes = restype, argtypes
    _modules[memo] = module
    return module


def _aligned(count: int, dtype) -> np.ndarray:
    """``count`` zeros of ``dtype`` starting on a 256-byte boundary (cudaMalloc's alignment)."""
    dtype = np.dtype(dtype)
    raw = np.zeros(count * dtype.itemsize + 256, dtype=np.uint8)
    start = -raw.ctypes.data % 256
    return raw[start:start + count * dtype.itemsize].view(dtype)


def _traces(module, kernel, ktiles: int) -> list:
    """Run one block of ``kernel`` with K = ``ktiles`` k-tiles; each thread's trace."""
    L, st = kernel.layout, kernel.settings
    m, n, k = L.blk_m, L.blk_n, ktiles * L.blk_k
    dtype = np.dtype(st.numpy_dtype)
    step = max(1, PASS_BYTES // dtype.itemsize, L.vector_width)

    def ld(rows):
        return -(-rows // step) * step

    a_rows, a_cols = (k, m) if st.trans_a else (m, k)
    b_rows, b_cols = (n, k) if st.trans_b else (k, n)
    lda, ldb = ld(a_rows), ld(b_rows)
    a, b, c = _aligned(lda * a_cols, dtype), _aligned(ldb * b_cols, dtype), _aligned(m * n, dtype)
    lib = module.lib
    lib.beast_host_count_clear()
    module.launch(kernel.name, kernel.grid(m, n), kernel.block, kernel.smem_bytes,
                  (m, n, k, 1.0, 0.0, a, lda, b, ldb, 0.0, 0.0, c, m))
    out = []
    for t in range(int(lib.beast_host_count_threads())):
        size = int(lib.beast_host_count_size(t))
        ptr = lib.beast_host_count_events(t)
        if not size or not ptr:
            out.append(np.zeros(0, EVENT))
            continue
        buf = (ctypes.c_char * (size * EVENT.itemsize)).from_address(ptr)
        out.append(np.frombuffer(buf, dtype=EVENT).copy())
    lib.beast_host_count_clear()
    return out


def _fma_per_thread(kernel) -> float:
    """Multiply-add instructions per thread per k-tile: none in the tensor-core template; the
    paper's ``blk_k * thr_m * thr_n`` multiply-adds (each four FMAs when complex)."""
    L = kernel.layout
    if getattr(kernel, "family", "gemm") != "gemm":
        return 0.0
    return float(L.blk_k * L.thr_m * L.thr_n * (4 if L.settings.is_complex else 1))


def ktiles(layout) -> tuple[int, int]:
    """The k-tiles of the two runs whose difference is the steady state: 1 and 1 + P, P the
    shared-memory buffers the main loop cycles through (``stages``; the paper's ``smem_buffers``),
    so that the difference covers each buffer once, whatever a layout does with each."""
    period = getattr(layout, "stages", None) or getattr(layout, "smem_buffers", 1)
    return 1, 1 + int(period)


def simulate_counters(config: Mapping, settings, family: str = "gemm_mma", *, workdir=None) -> KTileCounters:
    """Per-k-tile, per-warp counters of configuration ``config`` (iterator name -> value) of the
    kernel ``family`` (``"gemm_mma"`` or ``"gemm"``) under ``settings`` (the space's settings or a
    :class:`~beast.tune.kernels.paper.GemmSettings`), from the host simulator: one block, K of
    :func:`ktiles` k-tiles, built once per configuration (in beast's cache, or ``workdir``).
    A configuration the template refuses, or a kernel whose control flow is not warp-uniform,
    is a :class:`~beast.errors.BeastError`."""
    kernel = counting_kernel(config, settings, family)
    module = _library(kernel, workdir)
    threads = math.prod(kernel.block)
    k1, k2 = ktiles(kernel.layout)
    t1 = warp_totals(_traces(module, kernel, k1), threads)
    t2 = warp_totals(_traces(module, kernel, k2), threads)
    warps = -(-threads // WARP)
    per_warp = {name: (t2[name] - t1[name]) / (k2 - k1) / warps for name in t1}
    return KTileCounters(**per_warp, fma=_fma_per_thread(kernel), warps=warps)


# ------------------------------------------------------------------ the table

def _num(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"


def format_counters(counters: KTileCounters, title: str | None = None) -> str:
    """The table ``beast tune --explain`` prints: each counter per warp and for the block, with
    the conflict-free ideal of the wavefronts and the sectors per request."""
    c, w = counters, counters.warps
    rows = [
        ("shared-memory fragment loads", c.lds_requests, ""),
        ("  wavefronts", c.lds_wavefronts, _ratio(c.lds_wavefronts, c.lds_ideal_wavefronts)),
        ("cp.async stores to shared memory", c.cp_async_requests, ""),
        ("  wavefronts", c.cp_async_wavefronts, _ratio(c.cp_async_wavefronts, c.cp_async_ideal_wavefronts)),
        ("global requests (cp.async sources)", c.global_requests, ""),
        ("  sectors", c.global_sectors, f"{c.sectors_per_request():.2f} per request" if c.global_requests else ""),
        ("MMA instructions", c.mma, ""),
        ("FMA instructions", c.fma, ""),
        ("barriers", c.barriers, ""),
    ]
    head = (title or "counters") + f": per k-tile in the steady state (host simulator, {w} warp{'s' * (w != 1)})"
    width = max(len(r[0]) for r in rows)
    lines = [head, f"  {'':{width}}  {'per warp':>10}  {'block':>10}"]
    for label, value, note in rows:
        lines.append(f"  {label:{width}}  {_num(value):>10}  {_num(value * w):>10}" + (f"  {note}" if note else ""))
    return "\n".join(lines)


def _ratio(got: float, ideal: float) -> str:
    if not ideal:
        return ""
    return f"ideal {_num(ideal)} per warp ({got / ideal:.2f}x)"
