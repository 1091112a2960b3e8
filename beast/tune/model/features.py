"""Counters of one GEMM configuration, computed from its layout without a GPU (for :mod:`.speed_model`).

A configuration's kernel repeats one k-tile (a ``blk_k``-deep stripe or stage of A and B) per
block; :class:`Counters` holds what one block does per k-tile, summed over its warps: warp
instructions (FMA or MMA, shared-memory loads and stores, global loads), shared-memory
*wavefronts* (the passes the 32 banks need for one warp instruction: the largest number of
distinct 4-byte words any bank serves; a broadcast word counts once), global 32-byte *sectors*,
and barriers.  The loop's pattern repeats with a constant shift from one k, fragment or load to
the next, so one instruction of each kind per warp is simulated and multiplied out.

* :func:`gemm_counters` -- the paper's template (:class:`beast.tune.kernels.paper.GemmLayout`), from the
  index arithmetic of its generated source: the multiply phase's reads of ``sA``/``sB``, the
  stores of the prefetched stripe (or its ``cp.async`` copies), the stripe loads.
* :func:`mma_counters` -- the tensor-core template (:class:`beast.tune.kernels.mma.MmaLayout`):
  ``beast.tune.sim.counters.simulate_counters`` when that module is there, else the analytic
  equivalent here (fragment loads from the PTX ISA's fragment tables, ``cp.async`` copies).

Shared memory is modelled with 32 banks of 4 bytes (every GPU since Maxwell; ``bank_bytes``
lets a Kepler profile ask for 8).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

import numpy as np

from ..sim import counters

WARP = 32
BANKS = 32
SECTOR = 32


@dataclass(frozen=True)
class Counters:
    """What one block does per k-tile (sums over its warps), and the block's shape.

    ``fma``/``mma``: warp-level FMA and MMA instructions; ``lds``/``sts``: shared-memory load and
    store instructions, ``lds_wavefronts``/``sts_wavefronts`` their bank passes (``cp_async``
    copies count as stores); ``global_requests``/``global_sectors``: global load instructions and
    the 32-byte sectors they touch; ``barriers`` per k-tile; ``other``: further instructions
    (address arithmetic, loop control) per warp per k-tile, estimated; ``warps`` per block;
    ``mma_flops``: floating-point operations of one MMA (0 for CUDA-core kernels); ``source``:
    ``"analytic"`` or ``"simulated"`` (``beast.tune.sim.counters``)."""

    warps: int
    fma: float
    mma: float
    lds: float
    lds_wavefronts: float
    sts: float
    sts_wavefronts: float
    global_requests: float
    global_sectors: float
    barriers: float
    other: float = 0.0
    mma_flops: int = 0
    source: str = "analytic"

    def as_dict(self) -> dict:
        """The counters by field name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def smem_wavefronts(byte_addresses, width: int, bank_bytes: int = 4) -> int:
    """Wavefronts of one warp instruction: lane ``i`` accesses ``width`` bytes at
    ``byte_addresses[i]`` (the rule of :func:`beast.tune.sim.counters.smem_wavefronts`)."""
    addr = np.asarray(byte_addresses, dtype=np.int64)
    if addr.size == 0:
        return 0
    return counters.smem_wavefronts(addr[:, None], width, bank_bytes)[0]


def global_sectors(byte_addresses, width: int) -> int:
    """Distinct 32-byte sectors one warp instruction touches (lane ``i``: ``width`` bytes at
    ``byte_addresses[i]``; the rule of :func:`beast.tune.sim.counters.global_sectors`)."""
    addr = np.asarray(byte_addresses, dtype=np.int64)
    if addr.size == 0:
        return 0
    return counters.global_sectors(addr[:, None], np.full((addr.size, 1), width))


def _per_warp(threads: int, fn) -> list:
    """``fn(lanes)`` for each warp of a block of ``threads`` threads (lanes: the thread ids)."""
    out = []
    for w0 in range(0, threads, WARP):
        out.append(fn(np.arange(w0, min(threads, w0 + WARP))))
    return out


# --------------------------------------------------------------------------- the paper's template

def gemm_counters(layout, size, bank_bytes: int = 4) -> Counters:
    """Per-block, per-k-tile counters of a :class:`~beast.tune.kernels.paper.GemmLayout` for an
    ``(M, N, K)`` problem (the leading dimensions of A and B are those of a packed column-major
    problem: M or K for A, K or N for B)."""
    L = layout
    s = L.settings
    m, n, k = size
    esz = s.itemsize
    threads = L.threads
    warps = -(-threads // WARP)
    cx = 4 if s.is_complex else 1
    lda_s = getattr(L, "lda_s", L.blk_m)
    ldb_s = getattr(L, "ldb_s", L.blk_n)
    async_copy = int(getattr(L, "async_copy", 0))
    buffers = int(getattr(L, "smem_buffers", 1))
    va, vb = L.vec_a, L.vec_b

    # multiply phase: per k, THR_M / VEC_A reads of A and THR_N / VEC_B of B per thread
    def lds_a(lanes):
        tx = lanes % L.dim_m
        return smem_wavefronts(tx * va * esz, va * esz, bank_bytes)

    def lds_b(lanes):
        ty = lanes // L.dim_m
        return smem_wavefronts(ty * vb * esz, vb * esz, bank_bytes)

    reads_a, reads_b = L.thr_m // va, L.thr_n // vb
    wf_a, wf_b = sum(_per_warp(threads, lds_a)), sum(_per_warp(threads, lds_b))
    lds = warps * L.blk_k * (reads_a + reads_b)
    lds_wf = L.blk_k * (reads_a * wf_a + reads_b * wf_b)

    # stores of the prefetched stripe (element by element), or cp.async copies
    def store_index(x, lanes, e):
        dm, trans, row = (L.dim_m_a, s.trans_a, lda_s) if x == "a" else (L.dim_m_b, s.trans_b, ldb_s)
        t_m, t_n = lanes % dm, lanes // dm
        c = t_m * L.dim_vec + e
        if x == "a":
            return (t_n * row + c) if not trans else (c * row + t_n)
        return (c * row + t_n) if not trans else (t_n * row + c)

    sts = sts_wf = 0.0
    per_a, per_b = L.a_i * L.a_j, L.b_i * L.b_j          # loads per thread per stripe
    for x, per in (("a", per_a), ("b", per_b)):
        contiguous = (x == "a" and not s.trans_a) or (x == "b" and s.trans_b)
        if async_copy and contiguous:
            width, copies = L.dim_vec * esz, per
            wf = sum(_per_warp(threads, lambda ln: smem_wavefronts(store_index(x, ln, 0) * esz, width, bank_bytes)))
        else:
            width, copies = esz, per * L.dim_vec
            wf = sum(_per_warp(threads, lambda ln: smem_wavefronts(store_index(x, ln, 0) * esz, width, bank_bytes)))
        sts += warps * copies
        sts_wf += copies * wf

    # stripe loads from device memory: lane (t_m, t_n) reads DIM_VEC elements at (t_m * DIM_VEC, t_n)
    def sectors(x, lanes):
        dm, ld = (L.dim_m_a, m if not s.trans_a else k) if x == "a" else (L.dim_m_b, k if not s.trans_b else n)
        t_m, t_n = lanes % dm, lanes // dm
        return global_sectors((t_n * ld + t_m * L.dim_vec) * esz, L.dim_vec * esz)

    requests = warps * (per_a + per_b)
    sect = per_a * sum(_per_warp(threads, lambda ln: sectors("a", ln))) \
        + per_b * sum(_per_warp(threads, lambda ln: sectors("b", ln)))
    fma = warps * L.thr_m * L.thr_n * L.blk_k * cx
    # address arithmetic and bounds checks of each stripe load and store, loop control
    other = warps * (4 * (per_a + per_b) + 2 * (per_a + per_b) * L.dim_vec + 8)
    return Counters(warps=warps, fma=float(fma), mma=0.0, lds=float(lds), lds_wavefronts=float(lds_wf),
                    sts=float(sts), sts_wavefronts=float(sts_wf), global_requests=float(requests),
                    global_sectors=float(sect), barriers=1.0 if buffers == 2 else 2.0, other=float(other))


# --------------------------------------------------------------------------- the tensor-core template

#: (row, col) offsets of a lane's A fragment registers from (g, q), and B's row offsets (PTX ISA)
_A_FRAG = {(8, 4): [(0, 0)], (16, 4): [(0, 0), (8, 0)], (16, 8): [(0, 0), (8, 0), (0, 4), (8, 4)],
           (16, 16): [(8 * (r % 2), 4 * (r // 2)) for r in range(8)]}
_B_FRAG = {4: [0], 8: [0, 4], 16: [0, 4, 8, 12]}


def mma_counters(layout, size, config: Mapping | None = None, bank_bytes: int = 4,
                 simulate: bool = False) -> Counters:
    """Per-block, per-k-tile counters of a :class:`~beast.tune.kernels.mma.MmaLayout`:
    :func:`mma_counters_analytic`, or with ``simulate`` ``beast.tune.sim.counters.simulate_counters``
    (the host simulator: a C++ build per configuration, seconds each; per warp, multiplied by the
    warps), the analytic counters where that cannot run."""
    simulate_counters = None
    if simulate:
        try:
            from ..sim.counters import simulate_counters      # optional: builds the host simulator
        except ImportError:
            simulate_counters = None
    if simulate_counters is not None:
        try:
            sim = simulate_counters(config if config is not None else layout.config(), layout.settings,
                                    family="gemm_mma")
        except Exception:                                  # a template it does not know yet
            sim = None
        if sim is not None:
            return _from_simulated(layout, sim, size, config, bank_bytes)
    return mma_counters_analytic(layout, size, config, bank_bytes)


def _from_simulated(layout, sim, size, config, bank_bytes) -> Counters:
    base = mma_counters_analytic(layout, size, config, bank_bytes)
    w = base.warps

    def get(name, fallback):
        v = sim.get(name) if isinstance(sim, Mapping) else getattr(sim, name, None)
        return fallback if v is None else float(v) * w

    return Counters(warps=w, fma=get("fma", base.fma), mma=get("mma", base.mma), lds=get("lds_requests", base.lds),
                    lds_wavefronts=get("lds_wavefronts", base.lds_wavefronts),
                    sts=get("cp_async_requests", base.sts),
                    sts_wavefronts=get("cp_async_wavefronts", base.sts_wavefronts),
                    global_requests=get("global_requests", base.global_requests),
                    global_sectors=get("global_sectors", base.global_sectors),
                    barriers=float(sim.get("barriers", base.barriers) if isinstance(sim, Mapping)
                                   else getattr(sim, "barriers", base.barriers)),
                    other=base.other, mma_flops=base.mma_flops, source="simulated")


def mma_counters_analytic(layout, size, config: Mapping | None = None, bank_bytes: int = 4) -> Counters:
    """The analytic counters of the tensor-core template: each fragment load (one element per
    lane at ``(g, q)`` offsets of the PTX ISA's tables) and each ``cp.async`` copy simulated for
    one warp, at the offsets of the layout's ``stage_offset`` (its XOR swizzle with ``swizzle=1``)
    where the template has it, else at ``row * ld + col``."""
    L = layout
    s = L.settings
    m, n, k = size
    esz = s.itemsize
    warps = L.warps_m * L.warps_n
    threads = WARP * warps
    cx = 4 if s.is_complex else 1
    fm, fn = L.warp_m // L.mma_m, L.warp_n // 8
    ksteps = L.blk_k // L.mma_k
    lane = np.arange(WARP)
    g, q = lane >> 2, lane & 3

    def at(x, row, col):
        """Offsets (elements) of (row, col) of a stage: the layout's own (swizzled) map where it has one."""
        if hasattr(L, "stage_offset"):
            return np.array([L.stage_offset(x, int(r), int(c)) for r, c in zip(np.broadcast_to(row, lane.shape),
                                                                               np.broadcast_to(col, lane.shape))])
        return row * getattr(L, f"{x}_ld") + col

    def wf(index):
        return smem_wavefronts(index * esz, esz, bank_bytes)

    # the first warp tile's first MMA; the others repeat the pattern shifted by whole rows
    wa = []
    for dm, dk in _A_FRAG[(L.mma_m, L.mma_k)]:
        mm, kk = g + dm, q + dk
        wa.append(wf(at("a", mm, kk) if s.trans_a else at("a", kk, mm)))
    wb = []
    for dk in _B_FRAG[L.mma_k]:
        nn, kk = g, q + dk
        wb.append(wf(at("b", kk, nn) if s.trans_b else at("b", nn, kk)))
    lds = warps * ksteps * (fm * len(wa) + fn * len(wb))
    lds_wf = warps * ksteps * (fm * sum(wa) + fn * sum(wb))

    sts = sts_wf = req = sect = 0.0
    for x in ("a", "b"):
        ce, ld_s, copies = getattr(L, f"{x}_ce"), getattr(L, f"{x}_ld"), getattr(L, f"{x}_copies")
        ld_g = (m if not s.trans_a else k) if x == "a" else (k if not s.trans_b else n)
        per_row = ce // L.vec

        def one(lanes):
            c, r = (lanes % per_row) * L.vec, lanes // per_row
            if hasattr(L, "stage_offset"):
                dst = np.array([L.stage_offset(x, int(rr), int(cc)) for rr, cc in zip(r, c)])
            else:
                dst = r * ld_s + c
            return (smem_wavefronts(dst * esz, L.vec * esz, bank_bytes),
                    global_sectors((r * ld_g + c) * esz, L.vec * esz))

        per = _per_warp(threads, one)
        sts += warps * copies
        sts_wf += copies * sum(p[0] for p in per)
        req += warps * copies
        sect += copies * sum(p[1] for p in per)
    mma = warps * fm * fn * ksteps * cx
    other = warps * (6 * (sts / warps) + 10)
    return Counters(warps=warps, fma=0.0, mma=float(mma), lds=float(lds), lds_wavefronts=float(lds_wf),
                    sts=float(sts), sts_wavefronts=float(sts_wf), global_requests=float(req),
                    global_sectors=float(sect), barriers=1.0, other=float(other),
                    mma_flops=2 * L.mma_m * 8 * L.mma_k)
