"""A speed model of the GEMM kernels: predicted time, an optimistic lower bound, the limiting resource.

No GPU is needed.  For one configuration, :func:`predict_ms` takes its counters per block and
k-tile (:mod:`beast.tune.model.features`: FMA or MMA instructions, shared-memory wavefronts,
global sectors, barriers), its occupancy (registers and local memory from the compiler -- the
``regs``/``local_bytes`` a tuning log records, :func:`beast.tune.model.compiler_facts.kernel_facts`
for a new kernel, or :func:`estimate_facts` without a compiler -- and shared memory from the
layout) and the device profile's peaks, and returns a :class:`Prediction`.

The model, per SM and per *round* (each resident block doing one k-tile), in clock cycles:

* throughput terms, the resident blocks' demand on a shared unit divided by its rate: FMA or
  MMA issue (the CUDA cores' or the tensor cores' FLOP/s per SM, on the sub-partitions that
  have warps), instruction issue (one warp instruction per clock per sub-partition), the
  shared-memory/L1 data path (one wavefront per clock; a global or local request's 128-byte
  lines pass through it too) and L2 bandwidth (:attr:`Params.l2_bytes_per_clock` per SM);
* a latency term: one block's k-tile cannot finish faster than a global load's latency (hidden
  over ``stages - 1`` k-tiles by a ``cp.async`` pipeline), its barriers and its own dependent
  chain of FMAs (MMAs).

A round takes the p-norm of these terms (p = :attr:`Params.overlap`: the largest sets the pace,
and the others, when nearly as large, still delay it; the throughput terms are divided by
:attr:`Params.efficiency`, and a sub-partition with few warps issues at ``ws / (ws +
warp_slack)`` of its rate); a block takes its k-tiles' rounds plus a prologue and epilogue;
blocks run in waves of ``blocks_per_sm x SMs`` with a partial last wave.  Shared memory per SM is
what the kernel's carveout preference gives: ``shmem_l1=0`` (prefer L1) configures the smallest
capacity that holds one block, and so one resident block.  Spilled registers (``local_bytes``) add local
memory traffic through L1, and to L2 for the part of the resident footprint that does not fit
in L1.  The constants of :class:`Params` are few and physical (latencies in cycles, an
efficiency, a bandwidth, the fraction of spilled bytes touched per k, the p of the norm);
:data:`DEFAULT_PARAMS` were fitted on the four DGEMM logs of ``bench/gpu_runs/h200_2026-11-27``
only, so that the SGEMM and ZGEMM logs check the model out of sample (``bench/model_check.py
--fit dgemm`` refits them; ``--fit sgemm zgemm`` fits the other way round).

``lower_ms`` is optimistic: the larger of a hard bound (every FMA or MMA at the device's peak,
the compulsory DRAM traffic at peak bandwidth, no tail) and the prediction times
:data:`LOWER_BOUND_FACTOR`, a factor below every ratio of measured to predicted time seen on the
logs.  :class:`ModelGate` gives the tuner's loop what it needs of the model: an order for
candidates and ``can_beat(config, best_ms)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

import numpy as np

from ...errors import BeastError

from .features import WARP, Counters, gemm_counters, mma_counters

#: the lower bound's share of the prediction: the least ratio of measured to predicted time of any
#: configuration of the H200 logs over 1.5 (``bench/model_check.py --replay`` reports the margin
#: it leaves on each log's measured top 10).
LOWER_BOUND_FACTOR = 0.3


@dataclass(frozen=True)
class Params:
    """The model's constants: latencies in SM clock cycles, an efficiency, a bandwidth, shares.
    The defaults are a fit on the H200's DGEMM logs (``bench/model_check.py --fit dgemm``) except
    where a comment says otherwise; refitting moves several of them far (the logs pin the ranking
    better than each constant), so the set kept is the fit whose values stay physical."""

    lat_global: float = 816.0         # a global load's latency under load (L2 hit or DRAM), cycles
    lat_barrier: float = 112.0        # a __syncthreads and the shared-memory reads it waits on
    lat_fma: float = 8.0              # a dependent FMA's latency, one accumulator's chain (not fitted)
    lat_mma: float = 24.0             # a dependent FP64 MMA's latency (not fitted)
    lat_lds: float = 30.0             # a shared-memory load's latency (not fitted: no log exercises it)
    efficiency: float = 0.85          # the share of a unit's peak rate that a saturated unit reaches
    l2_bytes_per_clock: float = 47.5  # L2 -> SM bandwidth per SM, bytes per cycle
    spill_touch: float = 0.0875       # spilled bytes touched per k (read + write), share of the spilled accumulators
    lat_local: float = 27.4           # a spill load's wait (L1 latency over the loads in flight), cycles
    warp_slack: float = 0.25          # a sub-partition's warps issue at ws / (ws + slack) of its rate
    launch_us: float = 5.0            # a kernel launch's fixed cost (not fitted)
    overlap: float = 1.5              # a round's terms combine as their p-norm, p = overlap (inf: the max)
    # Not fitted (no log holds a tensor-core kernel's time): the rate of the m8n8k4 FP64 MMA on
    # compute capability 9.0 as a share of the tensor cores' peak.  Assumed to be the A100's per-SM
    # rate, half of Hopper's; the m16n8k* shapes, new in sm_90, are assumed to reach the peak.
    mma_m8_rate_sm90: float = 0.5

    def as_dict(self) -> dict:
        """The constants by name (for a fit's report)."""
        return dict(self.__dict__)


DEFAULT_PARAMS = Params()

#: names of the limiting resources a :class:`Prediction` reports
LIMITS = ("fma", "mma", "issue", "shared", "l2", "latency", "spill", "dram")


@dataclass(frozen=True)
class Prediction:
    """``ms``: predicted kernel time; ``lower_ms``: an optimistic lower bound on it; ``limit``: the
    resource that sets the round time of the full waves (one of :data:`LIMITS`); ``blocks_per_sm``:
    the occupancy; ``terms``: each term's cycles per round; ``gflops``: the predicted rate."""

    ms: float
    lower_ms: float
    limit: str
    blocks_per_sm: int
    gflops: float
    terms: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Rates:
    """What a device profile says per SM and clock."""

    sms: int
    clock_hz: float
    fp_lanes: float                  # FMA lanes per SM for the precision
    tensor_flops: float              # FP64 tensor-core FLOPs per SM per clock (0: none)
    dram_bytes_s: float | None
    smem_per_sm: int
    regs_per_sm: int
    max_warps: int
    max_blocks: int
    cc: tuple = (0, 0)

    @classmethod
    def of(cls, profile, precision: str) -> "Rates":
        """The rates of a :class:`beast.lang.devices.DeviceProfile` for ``precision``; BeastError when
        the profile lacks the SM count, clock or peak."""
        sms, clock = getattr(profile, "multi_processor_count", None), getattr(profile, "clock_rate_khz", None)
        peak = profile.peak_gflops(precision) if hasattr(profile, "peak_gflops") else None
        if not sms or not clock or not peak:
            raise BeastError(f"the speed model needs the device's SM count, clock and peak; the profile "
                             f"{getattr(profile, 'name', profile)!r} lacks them",
                             hint="use a built-in profile (a100, h100, h200, ...) or give multi_processor_count "
                                  "and clock_rate_khz in the JSON profile")
        hz = clock * 1e3
        lanes = peak * 1e9 / (2 * sms * hz)
        cc = tuple(getattr(profile, "cc", (0, 0)))
        dp = profile.peak_gflops("double")
        tensor = 2 * (2 * dp * 1e9 / (2 * sms * hz)) if cc in ((8, 0), (9, 0)) and dp else 0.0
        bw = getattr(profile, "memory_bandwidth_gbs", None)
        warps = (getattr(profile, "max_warps_per_multi_processor", None)
                 or profile.max_threads_per_multi_processor // WARP)
        return cls(sms=int(sms), clock_hz=hz, fp_lanes=lanes, tensor_flops=tensor,
                   dram_bytes_s=bw * 1e9 if bw else None, smem_per_sm=int(profile.max_shmem_per_multi_processor),
                   regs_per_sm=int(profile.max_registers_per_multi_processor), max_warps=int(warps),
                   max_blocks=int(profile.max_blocks_per_multi_processor), cc=cc)


# --------------------------------------------------------------------------- facts and occupancy

#: other names of a fact: :class:`beast.tune.model.compiler_facts.KernelFacts` says ``registers``,
#: CuPy's RawKernel ``num_regs`` and ``local_size_bytes``
_FACT_NAMES = {"regs": ("regs", "registers", "num_regs"), "local_bytes": ("local_bytes", "local_size_bytes")}


def _fact(facts, name: str):
    """A compiler fact (``regs``, ``local_bytes``) of a mapping or an object, under any of its names."""
    if facts is None:
        return None
    for alias in _FACT_NAMES.get(name, (name,)):
        value = facts.get(alias) if isinstance(facts, Mapping) else getattr(facts, alias, None)
        if value is not None:
            return int(value)
    return None


def estimate_facts(layout) -> dict:
    """Registers and local memory a kernel of ``layout`` is likely to get, without compiling: what
    stays live across the k loop (accumulators, one k's operands, the prefetch staging registers;
    for the tensor-core template a whole k-step's fragments and 5 per ``cp.async`` copy, which runs
    above ptxas's count on large tiles), against the cap ``__launch_bounds__`` sets; a large
    excess with a large accumulator tile demotes whole arrays to local memory.  For ranking only:
    the lower bound assumes :func:`optimistic_facts`."""
    s = layout.settings
    if hasattr(layout, "mma_m"):
        words = 2 if not s.is_complex else 4
        acc = words * layout.warp_m * layout.warp_n // WARP
        frag = 2 * (layout.warp_m + layout.warp_n) * layout.mma_k * (2 if s.is_complex else 1) // WARP
        frag *= layout.frag_buf
        need = acc + frag + 5 * (layout.a_copies + layout.b_copies) + 32
    else:
        w = s.itemsize // 4
        acc = layout.thr_m * layout.thr_n * w
        staged = (layout.a_i * layout.a_j + layout.b_i * layout.b_j) * layout.dim_vec * w
        staging = 0 if getattr(layout, "async_copy", 0) else staged
        need = acc + (layout.thr_m + layout.thr_n) * w + staging + 20
    cap = min(255, (65536 // layout.threads) // 8 * 8)
    if need <= cap:
        return {"regs": int(need), "local_bytes": 0, "estimated": True}
    if need > 1.15 * cap and acc > 0.6 * cap and layout.threads >= 128:
        return {"regs": 32, "local_bytes": int(4 * need * 8), "estimated": True}
    return {"regs": cap, "local_bytes": int(4 * (need - cap)), "estimated": True}


#: registers a tensor-core kernel needs beyond its accumulators and one MMA's operands, at least
#: (the ``REG_FLOOR`` of ``spaces/gemm_mma.py``, below every count ptxas gave)
MMA_REG_FLOOR = 16


def optimistic_facts(layout) -> dict:
    """Registers no kernel of ``layout`` can do with fewer of, and no spill: what the optimistic
    lower bound assumes before the compiler has spoken.  The tensor-core template's accumulators,
    one MMA's operands and :data:`MMA_REG_FLOOR` (the space's own lower bound); the paper's
    accumulators and one k's operands.  :func:`estimate_facts` can be far above ptxas's count, and
    a bound from it would keep the kernels the compiler fits from being compiled at all."""
    s = layout.settings
    if hasattr(layout, "mma_m"):
        acc = (4 if s.is_complex else 2) * layout.warp_m * layout.warp_n // WARP
        regs = acc + 2 * (layout.mma_m * layout.mma_k + 8 * layout.mma_k) // WARP + MMA_REG_FLOOR
    else:
        w = s.itemsize // 4
        regs = layout.thr_m * layout.thr_n * w + (layout.thr_m + layout.thr_n) * w
    return {"regs": int(min(regs, 255)), "local_bytes": 0, "estimated": True}


#: the shared-memory capacities (KB per SM) an SM can be configured with, by the largest (sm_90,
#: sm_80, sm_86/89, sm_70: CUDA C++ Programming Guide, "Shared Memory" of each compute capability)
_CARVEOUTS_KB = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)


def shared_capacity(block_bytes: int, carveout: int, most: int) -> int:
    """The shared memory an SM is configured with for a kernel whose block needs ``block_bytes``:
    ``carveout`` percent of the most (``most`` bytes), rounded up to a capacity the SM has, and at
    least one block's (the driver overrides a preference that would not run one block)."""
    caps = sorted({c * 1024 for c in _CARVEOUTS_KB if c * 1024 <= most} | {most})
    want = max(block_bytes, carveout * most / 100)
    return next((c for c in caps if c >= want), most)


def blocks_per_sm(layout, regs: int, rates: Rates, carveout: int | None = None) -> int:
    """Resident blocks per SM: registers (allocated 8 per thread, 256 per warp), shared memory (1 KB
    reserved per block, in the capacity the kernel's carveout preference gives: ``carveout``
    percent, default the layout's), warps and the block limit."""
    warps = -(-layout.threads // WARP)
    warp_regs = -(-max(1, regs) * WARP // 256) * 256
    by_regs = rates.regs_per_sm // (warps * warp_regs)
    smem = layout.smem_bytes + 1024
    if carveout is None:
        carveout = getattr(layout, "carveout", 100)
    by_smem = shared_capacity(smem, carveout, rates.smem_per_sm) // smem
    return max(0, min(by_regs, by_smem, rates.max_warps // warps, rates.max_blocks))


# --------------------------------------------------------------------------- the model

def _layout(config: Mapping, settings, family: str):
    from ..kernels.families import get_family
    fam = get_family(family)
    return fam.layout.from_config(config, fam.settings(dict(settings.as_dict() if hasattr(settings, "as_dict")
                                                            else settings)))


def family_of_config(config: Mapping) -> str:
    """``gemm_mma`` when ``config`` holds the tensor-core template's parameters, else ``gemm``."""
    from ..kernels.mma import MmaLayout
    return "gemm_mma" if all(n in config for n in MmaLayout.required_names()) else "gemm"


def counters_of(layout, size, config: Mapping | None = None) -> Counters:
    """The :class:`~beast.tune.model.features.Counters` of a layout of either family."""
    if hasattr(layout, "mma_m"):
        return mma_counters(layout, size, config)
    return gemm_counters(layout, size)


def predict_ms(config: Mapping, settings, size, profile, *, facts=None, family: str | None = None,
               params: Params = DEFAULT_PARAMS) -> Prediction:
    """Predict the time of one configuration (a mapping of the space's iterator names to values)
    for an ``(M, N, K)`` problem on ``profile`` (a :class:`beast.lang.devices.DeviceProfile`).

    ``settings``: the space's settings (precision, arithmetic, trans_a, trans_b).  ``facts``: a
    mapping or object with ``regs`` and ``local_bytes`` from the compiler (None: estimated,
    :func:`estimate_facts`).  ``family``: ``gemm`` or ``gemm_mma`` (None: read off the
    configuration's names)."""
    family = family or family_of_config(config)
    layout = _layout(config, settings, family)
    return predict_layout(layout, size, profile, facts=facts, params=params, config=config)


def predict_layout(layout, size, profile, *, facts=None, params: Params = DEFAULT_PARAMS,
                   config: Mapping | None = None, counters: Counters | None = None,
                   rates: Rates | None = None) -> Prediction:
    """:func:`predict_ms` for a ready layout (``counters``/``rates`` may be passed precomputed)."""
    m, n, k = (int(x) for x in size)
    s = layout.settings
    rates = rates or Rates.of(profile, s.precision)
    c = counters or counters_of(layout, (m, n, k), config)
    regs, local = _fact(facts, "regs"), _fact(facts, "local_bytes")
    if regs is None or local is None:
        est = estimate_facts(layout)
        regs = est["regs"] if regs is None else regs
        local = est["local_bytes"] if local is None else local
    bps = blocks_per_sm(layout, regs, rates)
    flops = (8 if s.is_complex else 2) * m * n * k
    grid = layout.grid(m, n)
    nblocks = grid[0] * grid[1]
    blk_k = layout.blk_k
    ktiles = -(-k // blk_k)
    stages = getattr(layout, "stages", 2)
    P = params

    acc_bytes = layout.blk_m * layout.blk_n * s.itemsize // layout.threads
    tensor = rates.tensor_flops
    if c.mma and getattr(layout, "mma_m", 0) == 8 and rates.cc == (9, 0):
        tensor *= P.mma_m8_rate_sm90

    def round_terms(b: int) -> dict:
        # warps on the busiest of the SM's four sub-partitions, and how well they hide latency
        ws = -(-b * c.warps // 4)
        hide = (ws + P.warp_slack) / ws / P.efficiency
        t = {}
        if c.fma:
            t["fma"] = ws * c.fma / c.warps * WARP / (rates.fp_lanes / 4) * hide
        if c.mma:
            t["mma"] = ws * c.mma / c.warps * c.mma_flops / (tensor / 4) * hide
        # spilled bytes touched per k-tile, per block (coalesced, 128 bytes per wavefront): a share
        # of what spilled, up to the accumulators, every k; all of it once
        spill = (P.spill_touch * min(local, acc_bytes) * blk_k + local) * layout.threads
        l1_left = max(0.0, 256 * 1024 - b * layout.smem_bytes)
        footprint = b * local * layout.threads
        miss = 0.0 if footprint <= l1_left else 1.0 - l1_left / footprint
        inst = c.fma + c.mma + c.lds + c.sts + c.global_requests + c.other + spill / 128
        t["issue"] = ws * inst / c.warps * hide
        t["shared"] = b * (c.lds_wavefronts + c.sts_wavefronts + c.global_sectors / 4) / P.efficiency
        t["l2"] = b * c.global_sectors * 32 / P.l2_bytes_per_clock / P.efficiency
        if spill:
            t["spill"] = b * (spill / 128 + miss * spill / P.l2_bytes_per_clock) / P.efficiency
        # one block's own k-tile: the load it waits on, its barriers, its dependent chain (a warp's
        # spill loads wait for L1, or for L2 where the footprint misses)
        per_warp = (c.fma + c.mma) / c.warps
        spill_wait = spill / 128 / c.warps * P.lat_local * (1 + miss * 4)
        if c.mma:
            steps = blk_k // layout.mma_k
            issue = per_warp * c.mma_flops / (tensor / 4)
            chain = max(issue, steps * P.lat_mma * (2 if s.is_complex else 1))
            if layout.frag_buf < 2:                # each k-step waits for its fragments
                chain += steps * P.lat_lds
            wait = P.lat_global / max(1, stages - 1)
        else:
            chain = max(per_warp * WARP / (rates.fp_lanes / 4), blk_k * P.lat_fma * (4 if s.is_complex else 1))
            wait = P.lat_global
        t["latency"] = max(wait, chain + spill_wait) + c.barriers * P.lat_barrier
        return t

    def block_cycles(b: int) -> tuple[float, dict]:
        t = round_terms(b)
        epilogue = P.lat_global + b * layout.blk_m * layout.blk_n * s.itemsize / P.l2_bytes_per_clock
        # the busiest unit sets the pace; the others, nearly as busy, still delay it (a p-norm)
        top = max(t.values())
        pace = top * sum((v / top) ** P.overlap for v in t.values()) ** (1 / P.overlap)
        return ktiles * pace + P.lat_global + epilogue, t

    if bps < 1:
        inf = float("inf")
        return Prediction(ms=inf, lower_ms=inf, limit="occupancy", blocks_per_sm=0, gflops=0.0)
    per_wave = bps * rates.sms
    full, rest = divmod(nblocks, per_wave)
    cycles = 0.0
    terms = {}
    if full:
        bc, terms = block_cycles(bps)
        cycles += full * bc
    if rest:
        bc, t_rest = block_cycles(-(-rest // rates.sms))
        cycles += bc
        terms = terms or t_rest
    ms = cycles / rates.clock_hz * 1e3 + P.launch_us * 1e-3
    if rates.dram_bytes_s:
        dram_ms = (m * k + k * n + m * n) * s.itemsize / rates.dram_bytes_s * 1e3
        if dram_ms > ms:
            ms, terms = dram_ms, {**terms, "dram": dram_ms / 1e3 * rates.clock_hz}
    limit = max(terms, key=terms.get) if terms else "latency"
    return Prediction(ms=ms, lower_ms=_lower(layout, c, (m, n, k), rates, ms, ktiles, nblocks),
                      limit=limit, blocks_per_sm=bps, gflops=flops / ms * 1e-6, terms=terms)


def _lower(layout, c: Counters, size, rates: Rates, ms: float, ktiles: int, nblocks: int) -> float:
    """The optimistic lower bound: every FMA (MMA) at the device's peak with no tail, the
    compulsory DRAM traffic at peak bandwidth, or :data:`LOWER_BOUND_FACTOR` of the prediction."""
    m, n, k = size
    work = nblocks * ktiles
    hard = 0.0
    if c.fma:
        hard = max(hard, work * c.fma * WARP / rates.fp_lanes / rates.sms)
    if c.mma:
        hard = max(hard, work * c.mma * c.mma_flops / rates.tensor_flops / rates.sms)
    hard_ms = hard / rates.clock_hz * 1e3
    if rates.dram_bytes_s:
        hard_ms = max(hard_ms, (m * k + k * n + m * n) * layout.settings.itemsize / rates.dram_bytes_s * 1e3)
    return max(hard_ms, LOWER_BOUND_FACTOR * ms)


# --------------------------------------------------------------------------- ranking statistics

def rankdata(x) -> np.ndarray:
    """Ranks 1..n of ``x``, ties by their average rank (scipy.stats.rankdata's ``average``)."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    sx = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sx[j + 1] == sx[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x, y) -> float:
    """Spearman's rank correlation of ``x`` and ``y`` (ties by average ranks): scipy's when it is
    installed, else the Pearson correlation of :func:`rankdata` ranks.  NaN for fewer than 2."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) != len(y):
        raise BeastError(f"spearman needs two sequences of one length, not {len(x)} and {len(y)}")
    if len(x) < 2:
        return math.nan
    try:
        from scipy.stats import spearmanr
    except ImportError:
        spearmanr = None
    if spearmanr is not None:
        return float(spearmanr(x, y).statistic)
    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    return float((rx * ry).sum() / den) if den else math.nan


# --------------------------------------------------------------------------- the tuner's gate

#: predictions a :class:`ModelGate` keeps (it forgets them all when full)
CACHE_SIZE = 65536


class ModelGate:
    """The model as a tuning loop uses it (after Telamon: a candidate whose optimistic lower bound
    exceeds the best time measured so far cannot win and need not be compiled or measured).

    ``ModelGate(family, settings, size, profile)``: ``family`` is a kernel family name (``gemm``,
    ``gemm_mma``), a :class:`~beast.tune.kernels.families.KernelFamily` or a space (its family is read off
    it, and ``settings``/``profile`` default to the space's).  ``facts``: ``"estimate"`` (default:
    :func:`estimate_facts`, no compiler) or ``"compiler"`` (:func:`beast.tune.model.compiler_facts.kernel_facts`,
    imported lazily; the estimate where that fails).  A ``facts=`` argument of a call wins over both.
    """

    def __init__(self, family, settings=None, size=(4096, 4096, 4096), profile=None, *,
                 facts: str = "estimate", params: Params = DEFAULT_PARAMS, margin: float = 1.0):
        from ..kernels.families import KernelFamily, family_of, get_family
        if isinstance(family, str):
            fam = get_family(family)
        elif isinstance(family, KernelFamily):
            fam = family
        else:                                         # a space
            fam = family_of(family)
            settings = family.settings if settings is None else settings
            profile = getattr(family, "device", None) if profile is None else profile
        if settings is None or profile is None:
            raise BeastError("ModelGate needs the space's settings and a device profile")
        if facts not in ("estimate", "compiler"):
            raise BeastError(f"ModelGate facts={facts!r}: use 'estimate' or 'compiler'")
        self.family = fam
        self.settings = fam.settings(dict(settings))
        self.size = tuple(int(x) for x in size)
        self.profile = profile
        self.params = params
        self.margin = float(margin)
        self.facts_mode = facts
        self.rates = Rates.of(profile, self.settings.precision)
        self._cache: dict = {}

    def _facts(self, layout, config):
        if self.facts_mode != "compiler":
            return None
        from .compiler_facts import arch_of, facts_or_none    # optional: compiles with nvcc
        try:
            return facts_or_none(self.family.generate(config, self.settings), arch_of(self.profile))
        except Exception:                                      # a kernel it cannot make: estimate
            return None

    def predict(self, config: Mapping, facts=None) -> Prediction:
        """The :class:`Prediction` of one configuration (memoized per configuration and facts)."""
        key = (tuple(sorted(config.items())), None if facts is None else
               (_fact(facts, "regs"), _fact(facts, "local_bytes")))
        hit = self._cache.get(key)
        if hit is None:
            layout = self.family.layout.from_config(config, self.settings)
            if facts is None:
                facts = self._facts(layout, config)
            hit = predict_layout(layout, self.size, self.profile, facts=facts, params=self.params,
                                 config=config, rates=self.rates)
            if len(self._cache) >= CACHE_SIZE:      # a long run asks about each candidate a few times, close together
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def order(self, configs: Iterable[Mapping]) -> list[dict]:
        """``configs`` fastest predicted first (ties keep their order)."""
        configs = [dict(c) for c in configs]
        times = [self.predict(c).ms for c in configs]
        return [configs[i] for i in sorted(range(len(configs)), key=lambda i: times[i])]

    def lower_ms(self, config: Mapping, facts=None) -> float:
        """The optimistic lower bound on the configuration's time, over ``margin``; without
        ``facts`` in the ``estimate`` mode, on :func:`optimistic_facts` (the fewest registers,
        no spill), not on the estimate the ranking uses."""
        if facts is None and self.facts_mode == "estimate":
            facts = optimistic_facts(self.family.layout.from_config(config, self.settings))
        return self.predict(config, facts).lower_ms / self.margin

    def can_beat(self, config: Mapping, best_ms: float | None, facts=None) -> bool:
        """False only when the configuration's lower bound exceeds ``best_ms`` (None: nothing
        measured yet, so anything can)."""
        if best_ms is None:
            return True
        return self.lower_ms(config, facts) <= best_ms


    def keeps(self, config: Mapping, best_ms: float | None) -> bool:
        """:meth:`can_beat` for a tuning loop: a configuration the model cannot judge (its layout
        refuses it, the profile lacks a fact) is kept, so that the model never stops a run."""
        try:
            return self.can_beat(config, best_ms)
        except Exception:
            return True

    def order_first(self, stream: Iterable[Mapping], n: int):
        """``stream`` with its first ``n`` configurations in :meth:`order` (fastest predicted
        first), the rest as they come; on any error of the model, the stream's own order."""
        stream = iter(stream)
        head = []
        for cfg in stream:
            head.append(cfg)
            if len(head) >= n:
                break
        try:
            head = self.order(head)
        except Exception:
            pass
        yield from head
        yield from stream


def tuning_gate(space, size) -> "ModelGate | None":
    """The :class:`ModelGate` of ``beast tune`` for ``space`` (its family, settings and device
    profile) and the problem ``size``, or None where the model cannot run for them (a profile
    without the peaks and SM count it needs, an unknown family)."""
    try:
        return ModelGate(space, size=size)
    except Exception:
        return None


def with_params(params: Params = DEFAULT_PARAMS, **changes) -> Params:
    """``params`` with some constants changed (for fitting)."""
    return replace(params, **changes)
