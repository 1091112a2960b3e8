"""CUDA source of the FP64 tensor-core GEMM (``spaces/gemm_mma.py``), generated for one configuration.

``C <- alpha * op(A) * op(B) + beta * C`` in column-major storage, ``op(X)`` being ``X``
(``trans_x == 0``) or ``X^T`` (``trans_x == 1``), for double real (DGEMM) and double complex
(ZGEMM) on compute capability 8.0 and later.  The interface is that of :mod:`beast.tune.kernels.paper`
(:func:`generate` gives a kernel with ``source``, ``name``, ``grid``, ``block``, ``smem_bytes``
and the same ``extern "C"`` signature), so the GPU layer, the tuner and the host simulator run
either family.

Design.  A block of ``NT = 32 * warps_m * warps_n`` threads computes a ``blk_m x blk_n`` tile
of C (``blk_m = warps_m * warp_m``, ``blk_n = warps_n * warp_n``); warp ``w`` (``wm = w %
warps_m``, ``wn = w / warps_m``) owns a ``warp_m x warp_n`` sub-tile, computed as ``(warp_m /
mma_m) x (warp_n / 8)`` warp-level MMAs ``mma.sync.aligned.m{mma_m}n8k{mma_k}.row.col.f64``
per ``mma_k`` slice of k.  Slices of ``blk_k`` columns of op(A) and rows of op(B) go through
``stages`` shared-memory buffers, filled ahead by ``cp.async`` copies of ``vec`` elements (8 or
16 bytes) that zero-fill what lies outside the matrices (edge tiles, the last partial slice).
Shared memory keeps each operand's layout in device memory, so that copies are contiguous: a
stage of A is ``a_se`` rows of ``a_ce`` elements (m along a row when ``trans_a == 0``, k
otherwise), rows ``a_ce + pad_a`` elements apart; B likewise (k along a row when ``trans_b ==
0``).  ZGEMM keeps ``double2`` elements and runs each complex MMA as four real ones:
``re += ar*br + (-ai)*bi``, ``im += ar*bi + ai*br`` (the operand with fewer fragment
registers is the one kept negated as well).  Each thread works out its copies' sources,
destinations and bounds once, before the k loop: the sources advance a k-tile per issue, and only
the last, partial k-tile works out the zero-fill in k.  ``frag_buf=2`` double-buffers the
fragments (:func:`_main_loop`).

Bank conflicts.  Shared memory has 32 banks of 4 bytes; a warp's 8-byte loads are served as two
half-warps of 16 lanes, its 16-byte ones (ZGEMM's ``double2``) as four quarter-warps of 8 lanes,
each group in as many wavefronts as the most distinct 4-byte words one bank is asked for.  So
conflict-free is 2 wavefronts per 8-byte warp access and 4 per 16-byte one: for ``double2`` the 8
lanes of each quarter-warp on 8 distinct 16-byte slots of the 128-byte bank row (the row of all
32 banks).  A half-warp's fragment load (real) asks 4 rows of a stage (4 apart in the lane's
``q`` or ``g`` from a multiple of 4) for the same aligned 32-byte chunk each; a quarter-warp's
(complex) asks 4 rows for 32 bytes each or 2 rows for 64 bytes each.  ``swizzle=1`` stores the
stages unpadded, element ``o = row * ce + col`` of a stage at ``o`` with its 32-byte chunk index
within the 128-byte bank row XORed with a key: the row's index modulo 4 (for rows shorter than a
bank row, the bank row's index), its two bits swapped for ``double2`` so that two adjacent rows
also differ in which half of the bank row they use.  The four rows of a load then fall on four
distinct chunks (:meth:`MmaLayout.stage_offset`); copies, at most 16 bytes, stay whole inside a
chunk, and a warp's copies cover whole bank rows.  It needs padding 0 and rows of a whole number
of bank rows or a divisor of one.

The fragments are those of the PTX ISA ("Matrix Fragments for mma.m8n8k4 / m16n8k4 / m16n8k8 /
m16n8k16", .f64), with ``g = laneid >> 2`` and ``q = laneid % 4``; the tables
:data:`A_FRAGMENT`, :data:`B_FRAGMENT` and :data:`C_FRAGMENT` give each register's offset from
``(g, q)`` (A: row, col; B: row; C: row, col from ``(g, 2q)``).  The host simulator
(:mod:`beast.tune.sim.hostsim`) implements the MMA from the ISA's own formulas, independently.

Rules of a launch (:func:`beast.tune.device.gpu.check_launch_rules` checks them): any ``M, N, K >=
0``; ``lda`` and ``ldb`` multiples of ``vec`` and A, B aligned to ``vec * sizeof(T)`` bytes;
grid ``(ceil(M / blk_m), ceil(N / blk_n))`` of ``(NT, 1, 1)`` threads with ``smem_bytes`` of
dynamic shared memory (the opt-in attribute above 48 KiB).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...errors import BeastError

from .paper import CP_ASYNC, GemmKernel, GemmSettings, indent, read_parameters
from .paper import translation_unit  # noqa: F401  (one source of several kernels of this family)

#: bumped whenever the generated code changes meaning or speed; tuning logs record it.
KERNEL_VERSION = 2
#: the ``extern "C"`` name of the generated kernel.
KERNEL_NAME = "beast_gemm_mma"
#: the name of this family in tuning logs (``kernel_family``).
FAMILY = "gemm_mma"

WARP = 32
MMA_N = 8
#: the f64 MMA shapes (m, k) of the PTX ISA and the compute capability each needs
SHAPES = {(8, 4): (8, 0), (16, 4): (9, 0), (16, 8): (9, 0), (16, 16): (9, 0)}

# Register r of a lane's fragment, as an offset from (g, q): A (row, col), B row (col is g), C (row, col - 2q).
A_FRAGMENT = {
    (8, 4): [(0, 0)],
    (16, 4): [(0, 0), (8, 0)],
    (16, 8): [(0, 0), (8, 0), (0, 4), (8, 4)],
    (16, 16): [(8 * (r % 2), 4 * (r // 2)) for r in range(8)],
}
B_FRAGMENT = {4: [0], 8: [0, 4], 16: [0, 4, 8, 12]}
C_FRAGMENT = {8: [(0, 0), (0, 1)], 16: [(0, 0), (0, 1), (8, 0), (8, 1)]}


@dataclass(frozen=True)
class MmaLayout:
    """One configuration of the tensor-core template with the constants the kernel uses.

    Built by :meth:`from_config` from a configuration mapping (the iterator names of
    ``spaces/gemm_mma.py``); it refuses, with a :class:`~beast.errors.BeastError`, every
    configuration that breaks a rule of the template (the space's correctness conditions).
    """

    settings: GemmSettings
    mma_m: int
    mma_k: int
    warps_m: int
    warps_n: int
    warp_m: int
    warp_n: int
    blk_k: int
    stages: int
    vec: int
    pad_a: int
    pad_b: int
    swizzle: int
    frag_buf: int

    @classmethod
    def from_config(cls, config: Mapping, settings: GemmSettings | Mapping) -> "MmaLayout":
        """Read the parameters from ``config`` (name -> int); report all missing names at once."""
        if not isinstance(settings, GemmSettings):
            settings = GemmSettings.from_mapping(settings)
        values = read_parameters(config, cls.required_names(), kernel="tensor-core GEMM kernel",
                                 space="spaces/gemm_mma.py")
        layout = cls(settings=settings, **values)
        layout._check()
        return layout

    @classmethod
    def required_names(cls) -> tuple[str, ...]:
        """The parameter names the template reads."""
        return tuple(f for f in cls.__dataclass_fields__ if f != "settings")

    def _check(self) -> None:
        st = self.settings
        if st.precision != "double":
            raise BeastError(f"the tensor-core GEMM kernel computes in double precision only, not {st.precision}",
                             hint="tune single precision with spaces/gemm.py")
        if (self.mma_m, self.mma_k) not in SHAPES:
            shapes = ", ".join(f"m{m}n8k{k}" for m, k in SHAPES)
            raise BeastError(f"there is no f64 MMA of shape m{self.mma_m}n8k{self.mma_k} (there are {shapes})")
        for name in ("warps_m", "warps_n", "warp_m", "warp_n", "blk_k", "vec"):
            if getattr(self, name) < 1:
                raise BeastError(f"tensor-core GEMM parameter {name}={getattr(self, name)} must be at least 1")
        if self.pad_a < 0 or self.pad_b < 0:
            raise BeastError(f"padding pad_a={self.pad_a}, pad_b={self.pad_b} must not be negative")
        if self.swizzle not in (0, 1):
            raise BeastError(f"swizzle={self.swizzle} must be 0 (rows padded by pad_a, pad_b) or 1 (XOR swizzle)")
        if self.frag_buf not in (1, 2):
            raise BeastError(f"frag_buf={self.frag_buf} must be 1 (one k-step's fragments) or 2 (double-buffered)")
        if self.swizzle:
            if self.pad_a or self.pad_b:
                raise BeastError(f"swizzle=1 needs pad_a=0 and pad_b=0, not {self.pad_a} and {self.pad_b}: the "
                                 "swizzle itself spreads a stage's rows over the banks")
            for x in ("a", "b"):
                ce = getattr(self, f"{x}_ce")
                if ce % self.line and self.line % ce:
                    raise BeastError(f"swizzle=1 needs rows of {x.upper()} in shared memory that fill whole 128-byte "
                                     f"bank rows or divide one: {ce} elements of {st.itemsize} bytes do neither")
        if self.stages < 2:
            raise BeastError(f"stages={self.stages}: the cp.async pipeline needs at least 2 stages")
        if self.warp_m % self.mma_m or self.warp_n % MMA_N:
            raise BeastError(f"the warp tile {self.warp_m} x {self.warp_n} is not a multiple of the MMA's "
                             f"{self.mma_m} x {MMA_N}")
        if self.blk_k % self.mma_k:
            raise BeastError(f"blk_k={self.blk_k} is not a multiple of the MMA's k={self.mma_k}")
        if self.vec * st.itemsize not in (8, 16):
            raise BeastError(f"vec={self.vec}: cp.async copies 8 or 16 bytes, not {self.vec * st.itemsize}")
        for x in ("a", "b"):
            ce, ld, copies = getattr(self, f"{x}_ce"), getattr(self, f"{x}_ld"), getattr(self, f"{x}_copies")
            if ce % self.vec or ld % self.vec:
                raise BeastError(f"rows of {ce} elements {ld} apart in shared memory cannot be copied "
                                 f"{self.vec} elements at a time (alignment)")
            if copies * self.threads != (ce // self.vec) * getattr(self, f"{x}_se"):
                raise BeastError(f"the {ce // self.vec * getattr(self, f'{x}_se')} copies of a stage of "
                                 f"{x.upper()} do not divide among {self.threads} threads")

    # ---- derived constants (the names match the generated source)
    @property
    def threads(self) -> int:
        return WARP * self.warps_m * self.warps_n

    @property
    def blk_m(self) -> int:
        return self.warps_m * self.warp_m

    @property
    def blk_n(self) -> int:
        return self.warps_n * self.warp_n

    @property
    def a_ce(self) -> int:
        """Contiguous extent of a stage of A (elements along a shared-memory row)."""
        return self.blk_k if self.settings.trans_a else self.blk_m

    @property
    def a_se(self) -> int:
        return self.blk_m if self.settings.trans_a else self.blk_k

    @property
    def b_ce(self) -> int:
        return self.blk_n if self.settings.trans_b else self.blk_k

    @property
    def b_se(self) -> int:
        return self.blk_k if self.settings.trans_b else self.blk_n

    @property
    def a_ld(self) -> int:
        return self.a_ce + self.pad_a

    @property
    def b_ld(self) -> int:
        return self.b_ce + self.pad_b

    @property
    def line(self) -> int:
        """Elements in one 128-byte row of the 32 shared-memory banks (the swizzle's unit)."""
        return 128 // self.settings.itemsize

    def stage_offset(self, x: str, row: int, col: int) -> int:
        """Where element ``col`` of row ``row`` of a stage of operand x ('a' or 'b') lives, in
        elements from the stage's start: ``row * ld + col``, XOR-swizzled with swizzle=1."""
        o = row * getattr(self, f"{x}_ld") + col
        if not self.swizzle:
            return o
        key = (o // max(getattr(self, f"{x}_ce"), self.line)) % 4
        if self.settings.is_complex:
            key = ((key & 1) << 1) | (key >> 1)
        return o ^ (key * (self.line // 4))

    @property
    def a_copies(self) -> int:
        """cp.async copies per thread per stage of A."""
        return (self.a_ce // self.vec) * self.a_se // self.threads

    @property
    def b_copies(self) -> int:
        return (self.b_ce // self.vec) * self.b_se // self.threads

    @property
    def smem_elems(self) -> int:
        return self.stages * (self.a_se * self.a_ld + self.b_se * self.b_ld)

    @property
    def smem_bytes(self) -> int:
        return self.smem_elems * self.settings.itemsize

    @property
    def carveout(self) -> int:
        """``preferred_shared_memory_carveout``: all of it (the stages live in shared memory)."""
        return 100

    @property
    def vector_width(self) -> int:
        """Elements per device-memory copy: lda and ldb must be multiples of it (launch rule)."""
        return self.vec

    vector_name = "vec"

    @property
    def block(self) -> tuple[int, int, int]:
        return (self.threads, 1, 1)

    def grid(self, m: int, n: int) -> tuple[int, int, int]:
        """Thread-block grid for an M x N matrix C."""
        return (max(1, -(-m // self.blk_m)), max(1, -(-n // self.blk_n)), 1)

    def config(self) -> dict:
        return {name: getattr(self, name) for name in self.required_names()}


# --------------------------------------------------------------------------- source

PRELUDE_HEAD = r"""// Generated by beast.tune.kernel_mma (template version %(version)d): FP64 tensor-core GEMM.
// C <- alpha*op(A)*op(B) + beta*C, column-major.
"""

PRELUDE_BODY = r"""#ifndef BEAST_MMA_PRELUDE
#define BEAST_MMA_PRELUDE
#ifndef BEAST_DYNAMIC_SMEM
#define BEAST_DYNAMIC_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#endif
__device__ __forceinline__ double2 beast_mma_c2d(double x, double y) { double2 r; r.x = x; r.y = y; return r; }
#ifndef BEAST_LDS   // a shared-memory load of a fragment element; the host simulator counts them
#define BEAST_LDS(x) (x)
#endif
#ifndef BEAST_HOST_SIM   // the host simulator (beast.tune.hostsim) defines these hooks itself
// D = A * B + D for one warp; fragments as in the PTX ISA (beast.tune.kernel_mma).
__device__ __forceinline__ void beast_mma_m8n8k4(double* d, const double* a, const double* b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
               : "+d"(d[0]), "+d"(d[1]) : "d"(a[0]), "d"(b[0]));
}
// The m16n8 shapes need sm_90; they are inline and emitted only where a kernel calls them.
__device__ __forceinline__ void beast_mma_m16n8k4(double* d, const double* a, const double* b) {
  asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
               "{%0, %1, %2, %3};\n"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3]) : "d"(a[0]), "d"(a[1]), "d"(b[0]));
}
__device__ __forceinline__ void beast_mma_m16n8k8(double* d, const double* a, const double* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};\n"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}
__device__ __forceinline__ void beast_mma_m16n8k16(double* d, const double* a, const double* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                 "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}
#endif
#endif
"""

_OPS = {
    "d": r"""
__device__ __forceinline__ T scale(R re, R im, T x) { return re * x; }
__device__ __forceinline__ T add(T x, T y) { return x + y; }
""",
    "z": r"""
__device__ __forceinline__ T scale(R re, R im, T x) { return beast_mma_c2d(re * x.x - im * x.y, re * x.y + im * x.x); }
__device__ __forceinline__ T add(T x, T y) { return beast_mma_c2d(x.x + y.x, x.y + y.y); }
""",
}


def _copy_plan(L: MmaLayout, x: str) -> tuple[str, str, str]:
    """One thread's cp.async copies of a stage of A (x='a') or B, worked out once before the k
    loop: (set-up code, the copies of a whole k-tile, the copies of the last, partial one).

    Copy i (v = i*NT + t) covers elements (c .. c+VEC-1, r) of a stage, c along a row, which hold
    element (c_org + c, s_org + r) of the operand, at ``X[(s_org + r) * ld + c_org + c]`` in
    device memory.  The source pointer advances by one k-tile per issue; what lies outside the
    operand in its other dimension is fixed per thread (the byte counts ``x_nb<i>``), in k only the
    last k-tile can be partial (the zero-fill past K is worked out there alone)."""
    s = L.settings
    X = x.upper()
    ce, se, copies, vec = getattr(L, f"{x}_ce"), getattr(L, f"{x}_se"), getattr(L, f"{x}_copies"), L.vec
    cpr = ce // vec                                    # copies per row of a stage
    ld = f"ld{x}"
    other, lim = ("row0", "M") if x == "a" else ("col0", "N")
    k_along_c = bool(s.trans_a) if x == "a" else not s.trans_b
    uniform = L.threads % cpr == 0                     # every copy of a thread in the same column
    setup = []
    if uniform:
        rs = L.threads // cpr
        setup.append(f"const int {x}_c = (t % {cpr}) * VEC, {x}_r = t / {cpr};")
        cs = [f"{x}_c"] * copies
        rows = [f"{x}_r" if i == 0 else f"({x}_r + {i * rs})" for i in range(copies)]
    else:
        cs = [f"{x}_c{i}" for i in range(copies)]
        rows = [f"{x}_r{i}" for i in range(copies)]
        for i in range(copies):
            setup.append(f"const int {x}_c{i} = (({i} * NT + t) % {cpr}) * VEC, {x}_r{i} = ({i} * NT + t) / {cpr};")
    start = f"(long long){other} * {ld}" if k_along_c else other
    step = "BLK_K" if k_along_c else f"(long long)BLK_K * {ld}"
    setup.append(f"const long long {x}_step = {step};   // one k-tile")
    if uniform:
        setup.append(f"const T* {x}_src = {X} + {start} + (long long){x}_r * {ld} + {x}_c;")
        if copies > 1:
            setup.append(f"const long long {x}_rs = {rs}LL * {ld};   // copy i + 1 is {rs} rows below copy i")
        srcs = [f"{x}_src" if i == 0 else f"{x}_src + {i} * {x}_rs" for i in range(copies)]
    else:
        setup.append(f"const T* {x}_src = {X} + {start};")
        for i in range(copies):
            setup.append(f"const long long {x}_o{i} = (long long){rows[i]} * {ld} + {cs[i]};")
        srcs = [f"{x}_src + {x}_o{i}" for i in range(copies)]
    # byte counts of a whole k-tile (the other dimension's bound)
    nbs = []
    for i in range(copies):
        if k_along_c:
            expr = f"{other} + {rows[i]} < {lim} ? VEC * (int)sizeof(T) : 0"
        else:
            expr = f"({lim} - {other} - {cs[i]} > VEC ? (int)VEC : {lim} - {other} - {cs[i]} < 0 ? 0 : {lim} - {other} - {cs[i]}) * (int)sizeof(T)"
        if not k_along_c and uniform and i > 0:
            nbs.append(nbs[0])
            continue
        setup.append(f"const int {x}_nb{i} = {expr};")
        nbs.append(f"{x}_nb{i}")
    # destinations in a stage
    if L.swizzle:
        period = 4 * max(ce, L.line)
        if (L.threads * vec) % period == 0:
            setup.append(f"const int {x}_d = swz_{x}(t * VEC);")
            dsts = [f"{x}_d" if i == 0 else f"{x}_d + {i * L.threads * vec}" for i in range(copies)]
        else:
            for i in range(copies):
                setup.append(f"const int {x}_d{i} = swz_{x}(({i} * NT + t) * VEC);")
            dsts = [f"{x}_d{i}" for i in range(copies)]
    elif uniform:
        setup.append(f"const int {x}_d = {x}_r * {X}_LD + {x}_c;")
        dsts = [f"{x}_d" if i == 0 else f"{x}_d + {i * rs * getattr(L, f'{x}_ld')}" for i in range(copies)]
    else:
        for i in range(copies):
            setup.append(f"const int {x}_d{i} = {rows[i]} * {X}_LD + {cs[i]};")
        dsts = [f"{x}_d{i}" for i in range(copies)]
    nbytes = vec * s.itemsize
    full, edge = [], []
    for i in range(copies):
        full.append(f"beast_cp_async<{nbytes}>(s{x} + {dsts[i]}, {srcs[i]}, {nbs[i]});")
        if k_along_c:
            n = f"{cs[i]} >= kr ? 0 : kr - {cs[i]} >= VEC ? {nbs[i]} : {nbs[i]} ? (kr - {cs[i]}) * (int)sizeof(T) : 0"
        else:
            n = f"{rows[i]} < kr ? {nbs[i]} : 0"
        edge.append(f"beast_cp_async<{nbytes}>(s{x} + {dsts[i]}, {srcs[i]}, {n});")
    return "\n".join(setup), "\n".join(full), "\n".join(edge)


def _swizzle_fn(L: MmaLayout, x: str) -> str:
    """``swz_x(o)``: where element o (= row * X_CE + col) of a stage lives when swizzle=1."""
    period = max(getattr(L, f"{x}_ce"), L.line)
    chunk = L.line // 4
    if L.settings.is_complex:
        key = f"const int k = (o / {period}) & 3;\n  return o ^ ((((k & 1) << 1) | (k >> 1)) * {chunk});"
    else:
        key = f"return o ^ (((o / {period}) & 3) * {chunk});"
    return f"__device__ __forceinline__ int swz_{x}(int o) {{\n  {key}\n}}\n"


def _a_offset(L: MmaLayout, i: int, ks: int, r: int) -> int:
    """Offset in a stage of A (rows A_LD apart, unswizzled) of register r of MMA row-block i at
    k-step ks, from the lane's first element."""
    dm, dk = A_FRAGMENT[(L.mma_m, L.mma_k)][r]
    m = i * L.mma_m + dm
    k = ks * L.mma_k + dk
    return m * L.a_ld + k if L.settings.trans_a else k * L.a_ld + m


def _b_offset(L: MmaLayout, j: int, ks: int, r: int) -> int:
    dk = B_FRAGMENT[L.mma_k][r]
    n = j * MMA_N
    k = ks * L.mma_k + dk
    return k * L.b_ld + n if L.settings.trans_b else n * L.b_ld + k


def _variant_mod(L: MmaLayout, x: str) -> int:
    """With swizzle=1, ``swz(lane + d) == swz(lane + d % mod) + d - d % mod`` for every fragment
    offset d of a lane: a lane keeps one swizzled base per residue ``d % mod`` (at most four), and
    each fragment load is a base plus a constant.  Rows of a line or more: the XOR depends on the
    row modulo 4, and a fragment's rows are 4 apart (``q + 4r``) or 8 (``g + 8i``) from the
    lane's, so only the residue within the 128-byte line counts; shorter rows: the swizzle
    repeats every four lines."""
    if not L.swizzle:
        return 1
    return L.line if getattr(L, f"{x}_ce") >= L.line else 4 * L.line


def _loads(L: MmaLayout, x: str) -> tuple[list[int], dict]:
    """(residues, {(i, ks, r): (residue index, offset)}) of the fragment loads of operand x."""
    fm = L.warp_m // L.mma_m if x == "a" else L.warp_n // MMA_N
    nr = len(A_FRAGMENT[(L.mma_m, L.mma_k)]) if x == "a" else len(B_FRAGMENT[L.mma_k])
    off = _a_offset if x == "a" else _b_offset
    mod = _variant_mod(L, x)
    loads = {}
    for ks in range(L.blk_k // L.mma_k):
        for i in range(fm):
            for r in range(nr):
                d = off(L, i, ks, r)
                loads[i, ks, r] = d % mod, d
    residues = sorted({v for v, _ in loads.values()})
    return residues, {key: (residues.index(v), d) for key, (v, d) in loads.items()}


def _negate_a(L: MmaLayout) -> bool:
    """ZGEMM's real part takes ``-Im(a) * Im(b)``: negate the operand with fewer fragment registers
    (A: ``warp_m * mma_k / 32`` per lane, B: ``warp_n * mma_k / 32``)."""
    return L.warp_m <= L.warp_n


def _fragment_loads(L: MmaLayout, ks: int, buf: int) -> dict:
    """One k-step's fragment loads from shared memory into fragment buffer ``buf``: the lines
    of A's row-block i under ``("a", i)``, of B's column-block j under ``("b", j)``."""
    cx = L.settings.is_complex
    fm, fn = L.warp_m // L.mma_m, L.warp_n // MMA_N
    na, nb = len(A_FRAGMENT[(L.mma_m, L.mma_k)]), len(B_FRAGMENT[L.mma_k])
    _, a_loads = _loads(L, "a")
    _, b_loads = _loads(L, "b")
    out = {}
    for i in range(fm):
        lines = out.setdefault(("a", i), [])
        for r in range(na):
            v, d = a_loads[i, ks, r]
            at, reg = f"BEAST_LDS(a_p{v}[{d}])", f"[{buf}][{i}][{r}]"
            if cx and _negate_a(L):
                lines.append(f"{{ const T v = {at}; ar{reg} = v.x; ai{reg} = v.y; an{reg} = -v.y; }}")
            elif cx:
                lines.append(f"{{ const T v = {at}; ar{reg} = v.x; ai{reg} = v.y; }}")
            else:
                lines.append(f"ar{reg} = {at};")
    for j in range(fn):
        lines = out.setdefault(("b", j), [])
        for r in range(nb):
            v, d = b_loads[j, ks, r]
            at, reg = f"BEAST_LDS(b_p{v}[{d}])", f"[{buf}][{j}][{r}]"
            if cx and not _negate_a(L):
                lines.append(f"{{ const T v = {at}; br{reg} = v.x; bi{reg} = v.y; bn{reg} = -v.y; }}")
            elif cx:
                lines.append(f"{{ const T v = {at}; br{reg} = v.x; bi{reg} = v.y; }}")
            else:
                lines.append(f"br{reg} = {at};")
    return out


def _fragments(L: MmaLayout, ks: int, buf: int) -> str:
    """Load one k-step's fragments of A and B into fragment buffer ``buf``."""
    return "\n".join(line for lines in _fragment_loads(L, ks, buf).values() for line in lines)


def _mma(L: MmaLayout, buf: int, i: int, j: int) -> str:
    """The MMA (or ZGEMM's four) of row-block i and column-block j from fragment buffer ``buf``."""
    fn = f"beast_mma_m{L.mma_m}n8k{L.mma_k}"
    a, b, c = f"[{buf}][{i}]", f"[{buf}][{j}]", f"[{i}][{j}]"
    if not L.settings.is_complex:
        return f"{fn}(cr{c}, ar{a}, br{b});"
    minus = f"an{a}, bi{b}" if _negate_a(L) else f"ai{a}, bn{b}"
    return (f"{fn}(cr{c}, ar{a}, br{b}); {fn}(cr{c}, {minus}); "
            f"{fn}(ci{c}, ar{a}, bi{b}); {fn}(ci{c}, ai{a}, br{b});")


def _interleaved(L: MmaLayout, cur: int, loads: dict, barrier: str) -> str:
    """This k-step's MMAs (row-block by row-block) with the next k-step's loads ``loads`` woven in,
    each as soon as the register it fills is dead: A's row-block i after row i's MMAs, B's
    column-block j after the last row's MMA j (so two buffers cost little more than one).
    ``barrier`` goes before the first load (the next k-tile's stage)."""
    fm, fn = L.warp_m // L.mma_m, L.warp_n // MMA_N
    out, pending = [], [barrier] if barrier else []

    def load(key):
        out.extend(pending)
        pending.clear()
        out.extend(loads[key])

    for i in range(fm):
        for j in range(fn):
            out.append(_mma(L, cur, i, j))
            if i == fm - 1:
                load(("b", j))
        load(("a", i))
    return "\n".join(out)


def _mmas(L: MmaLayout, buf: int) -> str:
    fn = f"beast_mma_m{L.mma_m}n8k{L.mma_k}"
    a, b = f"[{buf}][i]", f"[{buf}][j]"
    if L.settings.is_complex:
        minus = f"an{a}, bi{b}" if _negate_a(L) else f"ai{a}, bn{b}"
        body = (f"{fn}(cr[i][j], ar{a}, br{b}); {fn}(cr[i][j], {minus});\n"
                f"{fn}(ci[i][j], ar{a}, bi{b}); {fn}(ci[i][j], ai{a}, br{b});")
    else:
        body = f"{fn}(cr[i][j], ar{a}, br{b});"
    return f"""\
#pragma unroll
for (int i = 0; i < FM; ++i) {{
  #pragma unroll
  for (int j = 0; j < FN; ++j) {{
{indent(body, 4)}
  }}
}}"""


def _pointers(L: MmaLayout, decl: str) -> str:
    """The lane's fragment pointers into stage ``read`` (one per residue of its loads)."""
    out = []
    for x in ("a", "b"):
        residues, _ = _loads(L, x)
        out += [f"{decl}{x}_p{v} = s{x.upper()} + read * {x.upper()}_STAGE + {x}_w{v};" for v in range(len(residues))]
    return "\n".join(out)


def _main_loop(L: MmaLayout) -> str:
    """The k loop.  frag_buf=1 loads each k-step's fragments just before its MMAs.  frag_buf=2
    loads the next k-step's fragments (the next k-tile's first, from the next stage) while this
    k-step's MMAs run, each into the other buffer as soon as its register is free: the wait and
    the k-tile's one barrier come just before the first load from the next stage, inside the last
    k-step's MMAs.  The copies into stage ``write`` are issued at the top of a k-tile, after the
    barrier that every warp passes only once it has loaded all of that stage's fragments.  In the
    last k-tile the barrier is skipped and those loads read stage ``read`` again, unused: no copy
    into it is pending any more."""
    ksteps = L.blk_k // L.mma_k
    issue = "if (kt + STAGES - 1 < ktiles) issue(write, (kt + STAGES - 1) * BLK_K);\nbeast_cp_async_commit();"
    advance = "read = read + 1 == STAGES ? 0 : read + 1;\nwrite = write + 1 == STAGES ? 0 : write + 1;"
    if L.frag_buf == 1:
        steps = "\n".join(f"// k-step {ks}\n{_fragments(L, ks, 0)}\n{_mmas(L, 0)}" for ks in range(ksteps))
        return f"""\
for (int kt = 0; kt < ktiles; ++kt) {{
  beast_cp_async_wait<STAGES - 2>();   // slice kt has landed (this thread's copies) ...
  __syncthreads();                     // ... everyone's, and stage `write` is no longer read
{indent(issue, 2)}
{indent(_pointers(L, "const T* "), 2)}
{indent(_regs(L), 2)}
{indent(steps, 2)}
{indent(advance, 2)}
}}"""

    def tile(parity: int) -> str:
        out = [issue]
        for ks in range(ksteps):
            cur = (parity + ks) % 2
            if ks + 1 < ksteps:
                out.append(f"// k-step {ks}: its MMAs, and k-step {ks + 1}'s fragments as registers free up")
                out.append(_interleaved(L, cur, _fragment_loads(L, ks + 1, 1 - cur), ""))
            else:
                out.append(f"// k-step {ks}: its MMAs, and the next k-tile's first fragments after its barrier")
                barrier = f"""\
if (kt + 1 < ktiles) {{
  beast_cp_async_wait<STAGES - 2>();   // slice kt + 1 has landed (this thread's copies) ...
  __syncthreads();                     // ... everyone's; every warp's reads of stage `read` are done
{indent(advance, 2)}
{indent(_pointers(L, ""), 2)}
}}"""
                out.append(_interleaved(L, cur, _fragment_loads(L, 0, 1 - cur), barrier))
        return "\n".join(out)

    if ksteps % 2 == 0:
        body = f"{tile(0)}\n++kt;"
    else:   # the next k-tile starts in the other buffer: two k-tiles per trip
        body = f"{tile(0)}\nif (++kt == ktiles) break;\n{tile(1)}\n++kt;"
    return f"""\
beast_cp_async_wait<STAGES - 2>();     // slice 0 has landed (this thread's copies) ...
__syncthreads();                       // ... everyone's
{_pointers(L, "const T* ")}
{_fragments(L, 0, 0)}
for (int kt = 0; kt < ktiles;) {{
{indent(body, 2)}
}}"""


def _regs(L: MmaLayout) -> str:
    """Fragment registers: FRAG_BUF buffers of one k-step's fragments."""
    if not L.settings.is_complex:
        names = ["ar", "br"]
    elif _negate_a(L):
        names = ["ar", "ai", "an", "br", "bi"]
    else:
        names = ["ar", "ai", "br", "bi", "bn"]
    dims = {"a": "[FRAG_BUF][FM][A_REGS]", "b": "[FRAG_BUF][FN][B_REGS]"}
    return "double " + ", ".join(f"{n}{dims[n[0]]}" for n in names) + ";"


def kernel_body(L: MmaLayout, name: str = KERNEL_NAME) -> str:
    """The kernel for one configuration: a namespace with its constants and helpers and the
    ``extern "C" __global__`` function ``name``.  Needs :func:`prelude` before it."""
    s = L.settings
    cx = s.is_complex
    c_frag = C_FRAGMENT[L.mma_m]
    # the lane's first element in a stage: A (m, k) = (wm*WARP_M + g, q), B (k, n) = (q, wn*WARP_N + g)
    a_base = "(wm * WARP_M + g) * A_LD + q" if s.trans_a else "q * A_LD + wm * WARP_M + g"
    b_base = "q * B_LD + wn * WARP_N + g" if s.trans_b else "(wn * WARP_N + g) * B_LD + q"
    bases = []
    for x in ("a", "b"):
        residues, _ = _loads(L, x)
        for v, res in enumerate(residues):
            bases.append(f"const int {x}_w{v} = swz_{x}({x}_base + {res}) - {res};" if L.swizzle
                         else f"const int {x}_w{v} = {x}_base;")
    plans = {x: _copy_plan(L, x) for x in ("a", "b")}
    swizzle_fns = (_swizzle_fn(L, "a") + _swizzle_fn(L, "b")) if L.swizzle else ""
    acc = "double cr[FM][FN][C_REGS];" if not cx else "double cr[FM][FN][C_REGS], ci[FM][FN][C_REGS];"
    zero = "cr[i][j][r] = 0.0;" if not cx else "cr[i][j][r] = 0.0; ci[i][j][r] = 0.0;"
    value = "cr[i][j][r]" if not cx else "beast_mma_c2d(cr[i][j][r], ci[i][j][r])"
    beta_nonzero = "beta_re != 0 || beta_im != 0" if cx else "beta_re != 0"
    c_rows = ", ".join(str(dm) for dm, _ in c_frag)
    c_cols = ", ".join(str(dn) for _, dn in c_frag)
    params = ", ".join(f"{n}={getattr(L, n)}" for n in L.required_names())
    ns = f"{name}_ns"
    return f"""\
// {s.routine} on FP64 tensor cores: {params}
namespace {ns} {{
typedef {s.elem_type} T;   // element type
typedef double R;   // scalar type of alpha, beta parts
enum : int {{
  MMA_M = {L.mma_m}, MMA_N = {MMA_N}, MMA_K = {L.mma_k},          // mma.sync.aligned.m{L.mma_m}n8k{L.mma_k}.row.col.f64
  WARPS_M = {L.warps_m}, WARPS_N = {L.warps_n}, WARP_M = {L.warp_m}, WARP_N = {L.warp_n},
  BLK_M = WARPS_M * WARP_M, BLK_N = WARPS_N * WARP_N, BLK_K = {L.blk_k},
  STAGES = {L.stages}, VEC = {L.vec}, PAD_A = {L.pad_a}, PAD_B = {L.pad_b}, FRAG_BUF = {L.frag_buf},
  TRANS_A = {s.trans_a}, TRANS_B = {s.trans_b},
  NT = 32 * WARPS_M * WARPS_N,
  FM = WARP_M / MMA_M, FN = WARP_N / MMA_N,                       // MMAs per warp per k-step
  A_REGS = MMA_M * MMA_K / 32, B_REGS = MMA_N * MMA_K / 32, C_REGS = MMA_M * MMA_N / 32,
  A_CE = {L.a_ce}, A_SE = {L.a_se}, A_LD = A_CE + PAD_A, A_STAGE = A_SE * A_LD,   // a stage of A
  B_CE = {L.b_ce}, B_SE = {L.b_se}, B_LD = B_CE + PAD_B, B_STAGE = B_SE * B_LD,
  A_COPIES = (A_CE / VEC) * A_SE / NT, B_COPIES = (B_CE / VEC) * B_SE / NT   // per thread per stage
}};
static_assert(FM * MMA_M == WARP_M && FN * MMA_N == WARP_N && BLK_K % MMA_K == 0, "MMA tiling");
static_assert(A_COPIES * NT * VEC == A_CE * A_SE && B_COPIES * NT * VEC == B_CE * B_SE, "copies per thread");
{_OPS[s.letter]}
{swizzle_fns}extern "C" __global__ void __launch_bounds__(NT)
{name}(int M, int N, int K, R alpha_re, R alpha_im, const T* __restrict__ A, int lda,
{" " * len(name)} const T* __restrict__ B, int ldb, R beta_re, R beta_im, T* C, int ldc) {{
  BEAST_DYNAMIC_SMEM(beast_smem);
  T* sA = reinterpret_cast<T*>(beast_smem);        // STAGES stages of A, then of B
  T* sB = sA + STAGES * A_STAGE;
  const int t = threadIdx.x;
  const int warp = t / 32, lane = t % 32;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;
  const int g = lane >> 2, q = lane & 3;           // groupID, threadID_in_group (PTX ISA)
  const int row0 = blockIdx.x * BLK_M, col0 = blockIdx.y * BLK_N;
  const int a_base = {a_base};
  const int b_base = {b_base};
  // the lane's fragment bases in a stage (with swizzle=1, one per residue of its offsets)
{indent(chr(10).join(bases), 2)}

  {acc}
  #pragma unroll
  for (int i = 0; i < FM; ++i) {{
    #pragma unroll
    for (int j = 0; j < FN; ++j) {{
      #pragma unroll
      for (int r = 0; r < C_REGS; ++r) {{ {zero} }}
    }}
  }}

  // this thread's cp.async copies, worked out once: A's, then B's
{indent(plans["a"][0], 2)}
{indent(plans["b"][0], 2)}
  // issue the copies of the k-tile at k0 into stage `stage` (in k order: the sources advance a k-tile)
  auto issue = [&](int stage, int k0) {{
    T* const sa = sA + stage * A_STAGE;
    T* const sb = sB + stage * B_STAGE;
    const int kr = K - k0;             // k left from k0 on
    if (kr >= BLK_K) {{
{indent(plans["a"][1], 6)}
{indent(plans["b"][1], 6)}
    }} else {{                         // the last k-tile, partial: zero-fill past K
{indent(plans["a"][2], 6)}
{indent(plans["b"][2], 6)}
    }}
    a_src += a_step;
    b_src += b_step;
  }};

  const int ktiles = (K + BLK_K - 1) / BLK_K;
  // prologue: the first STAGES - 1 slices in flight, one commit group each (empty past K)
  #pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {{
    if (st < ktiles) issue(st, st * BLK_K);
    beast_cp_async_commit();
  }}
  int read = 0, write = STAGES - 1;
{indent(_regs(L), 2) if L.frag_buf == 2 else ""}
{indent(_main_loop(L), 2)}

  // lane's C element of register r of MMA (i, j): row g + C_ROW[r], column 2q + C_COL[r]
  const int c_row[C_REGS] = {{{c_rows}}};
  const int c_col[C_REGS] = {{{c_cols}}};
  const bool beta_nonzero = {beta_nonzero};
  #pragma unroll
  for (int i = 0; i < FM; ++i) {{
    #pragma unroll
    for (int j = 0; j < FN; ++j) {{
      #pragma unroll
      for (int r = 0; r < C_REGS; ++r) {{
        const int row = row0 + wm * WARP_M + i * MMA_M + g + c_row[r];
        const int col = col0 + wn * WARP_N + j * MMA_N + 2 * q + c_col[r];
        if (row < M && col < N) {{
          T* c = C + (long long)col * ldc + row;
          T value = scale(alpha_re, alpha_im, {value});
          if (beta_nonzero) value = add(value, scale(beta_re, beta_im, *c));
          *c = value;
        }}
      }}
    }}
  }}
}}
}}  // namespace {ns}
"""


def prelude() -> str:
    """Definitions shared by every generated tensor-core kernel (guarded: may appear more than once):
    the cp.async hooks (:data:`beast.tune.kernels.paper.CP_ASYNC`) and the warp MMAs."""
    return PRELUDE_HEAD % {"version": KERNEL_VERSION} + CP_ASYNC + PRELUDE_BODY


@dataclass(frozen=True)
class MmaKernel(GemmKernel):
    """Generated CUDA source of one tensor-core configuration, and how to launch it (the paper's
    kernel's interface: :class:`~beast.tune.kernels.paper.GemmKernel`, over an :class:`MmaLayout`)."""

    layout: MmaLayout
    name: str
    body: str

    family = FAMILY

    @property
    def prelude(self) -> str:
        """The definitions the body needs before it (:func:`prelude`)."""
        return prelude()


def generate(config: Mapping, settings: GemmSettings | Mapping, name: str = KERNEL_NAME) -> MmaKernel:
    """Generate the tensor-core CUDA kernel for one configuration.

    ``config`` maps the parameter names of ``spaces/gemm_mma.py`` to integers (extra names are
    ignored, missing ones reported together); ``settings`` is a :class:`GemmSettings` or the
    space's settings dict; ``name`` the ``extern "C"`` kernel name.  The output is deterministic.
    """
    if not name.isidentifier():
        raise BeastError(f"kernel name {name!r} is not a C identifier")
    layout = MmaLayout.from_config(config, settings)
    return MmaKernel(layout, name, kernel_body(layout, name))
