"""CUDA source of the FP64 tensor-core GEMM (``spaces/gemm_mma.py``), generated for one configuration.

``C <- alpha * op(A) * op(B) + beta * C`` in column-major storage, ``op(X)`` being ``X``
(``trans_x == 0``) or ``X^T`` (``trans_x == 1``), for double real (DGEMM) and double complex
(ZGEMM) on compute capability 8.0 and later.  The interface is that of :mod:`beast.tune.kernel`
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
registers is the one kept negated as well).

The fragments are those of the PTX ISA ("Matrix Fragments for mma.m8n8k4 / m16n8k4 / m16n8k8 /
m16n8k16", .f64), with ``g = laneid >> 2`` and ``q = laneid % 4``; the tables
:data:`A_FRAGMENT`, :data:`B_FRAGMENT` and :data:`C_FRAGMENT` give each register's offset from
``(g, q)`` (A: row, col; B: row; C: row, col from ``(g, 2q)``).  The host simulator
(:mod:`beast.tune.hostsim`) implements the MMA from the ISA's own formulas, independently.

Rules of a launch (:func:`beast.tune.gpu.check_launch_rules` checks them): any ``M, N, K >=
0``; ``lda`` and ``ldb`` multiples of ``vec`` and A, B aligned to ``vec * sizeof(T)`` bytes;
grid ``(ceil(M / blk_m), ceil(N / blk_n))`` of ``(NT, 1, 1)`` threads with ``smem_bytes`` of
dynamic shared memory (the opt-in attribute above 48 KiB).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from beast.errors import BeastError

from .kernel import CP_ASYNC, GemmKernel, GemmSettings, _indent, read_parameters
from .kernel import translation_unit  # noqa: F401  (one source of several kernels of this family)

#: bumped whenever the generated code changes meaning or speed; tuning logs record it.
KERNEL_VERSION = 1
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
#define BEAST_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
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


def _copy_fn(L: MmaLayout, x: str) -> str:
    """Device function issuing one thread's cp.async copies of a stage of A (x='a') or B."""
    X = x.upper()
    nbytes = L.vec * L.settings.itemsize
    return f"""\
// A stage of {X}: copy v = i*NT + t covers elements (c .. c+VEC-1, r) of the stage, c along a row
// (contiguous in device memory: element (c_org + c, s_org + r) at {X}[(s_org + r) * ld + c_org + c]).
// Elements past c_lim or s_lim are zero-filled (cp.async with fewer source bytes).
__device__ __forceinline__ void copy_{x}(T* s{X}, const T* {X}, int ld, int c_org, int c_lim, int s_org, int s_lim,
                                       int t) {{
  #pragma unroll
  for (int i = 0; i < {X}_COPIES; ++i) {{
    const int v = i * NT + t;
    const int c = (v % ({X}_CE / VEC)) * VEC, r = v / ({X}_CE / VEC);
    const int gc = c_org + c, gs = s_org + r;
    int n = gs < s_lim ? c_lim - gc : 0;
    n = n < 0 ? 0 : (n > VEC ? VEC : n);
    const T* src = n > 0 ? {X} + (long long)gs * ld + gc : {X};
    beast_cp_async<{nbytes}>(s{X} + r * {X}_LD + c, src, n * (int)sizeof(T));
  }}
}}
"""


def _a_offset(L: MmaLayout, i: int, ks: int, r: int) -> str:
    """Offset in a stage of A of register r of MMA row-block i at k-step ks, from the lane's base."""
    dm, dk = A_FRAGMENT[(L.mma_m, L.mma_k)][r]
    m = i * L.mma_m + dm
    k = ks * L.mma_k + dk
    return str(m * L.a_ld + k) if L.settings.trans_a else str(k * L.a_ld + m)


def _b_offset(L: MmaLayout, j: int, ks: int, r: int) -> str:
    dk = B_FRAGMENT[L.mma_k][r]
    n = j * MMA_N
    k = ks * L.mma_k + dk
    return str(k * L.b_ld + n) if L.settings.trans_b else str(n * L.b_ld + k)


def _negate_a(L: MmaLayout) -> bool:
    """ZGEMM's real part takes ``-Im(a) * Im(b)``: negate the operand with fewer fragment registers
    (A: ``warp_m * mma_k / 32`` per lane, B: ``warp_n * mma_k / 32``)."""
    return L.warp_m <= L.warp_n


def _fragments(L: MmaLayout, ks: int) -> str:
    """Load one k-step's fragments of A and B from shared memory into registers."""
    cx = L.settings.is_complex
    fm, fn = L.warp_m // L.mma_m, L.warp_n // MMA_N
    na, nb = len(A_FRAGMENT[(L.mma_m, L.mma_k)]), len(B_FRAGMENT[L.mma_k])
    lines = []
    for i in range(fm):
        for r in range(na):
            at = f"BEAST_LDS(a_lane[{_a_offset(L, i, ks, r)}])"
            if cx and _negate_a(L):
                lines.append(f"{{ const T v = {at}; ar[{i}][{r}] = v.x; ai[{i}][{r}] = v.y; an[{i}][{r}] = -v.y; }}")
            elif cx:
                lines.append(f"{{ const T v = {at}; ar[{i}][{r}] = v.x; ai[{i}][{r}] = v.y; }}")
            else:
                lines.append(f"ar[{i}][{r}] = {at};")
    for j in range(fn):
        for r in range(nb):
            at = f"BEAST_LDS(b_lane[{_b_offset(L, j, ks, r)}])"
            if cx and not _negate_a(L):
                lines.append(f"{{ const T v = {at}; br[{j}][{r}] = v.x; bi[{j}][{r}] = v.y; bn[{j}][{r}] = -v.y; }}")
            elif cx:
                lines.append(f"{{ const T v = {at}; br[{j}][{r}] = v.x; bi[{j}][{r}] = v.y; }}")
            else:
                lines.append(f"br[{j}][{r}] = {at};")
    return "\n".join(lines)


def _mmas(L: MmaLayout) -> str:
    fn = f"beast_mma_m{L.mma_m}n8k{L.mma_k}"
    if L.settings.is_complex:
        minus = "an[i], bi[j]" if _negate_a(L) else "ai[i], bn[j]"
        body = (f"{fn}(cr[i][j], ar[i], br[j]); {fn}(cr[i][j], {minus});\n"
                f"{fn}(ci[i][j], ar[i], bi[j]); {fn}(ci[i][j], ai[i], br[j]);")
    else:
        body = f"{fn}(cr[i][j], ar[i], br[j]);"
    return f"""\
#pragma unroll
for (int i = 0; i < FM; ++i) {{
  #pragma unroll
  for (int j = 0; j < FN; ++j) {{
{_indent(body, 4)}
  }}
}}"""


def kernel_body(L: MmaLayout, name: str = KERNEL_NAME) -> str:
    """The kernel for one configuration: a namespace with its constants and helpers and the
    ``extern "C" __global__`` function ``name``.  Needs :func:`prelude` before it."""
    s = L.settings
    cx = s.is_complex
    c_frag = C_FRAGMENT[L.mma_m]
    a_args = "k0, K, row0, M" if s.trans_a else "row0, M, k0, K"
    b_args = "col0, N, k0, K" if s.trans_b else "k0, K, col0, N"
    # the lane's first element in a stage: A (m, k) = (wm*WARP_M + g, q), B (k, n) = (q, wn*WARP_N + g)
    a_base = "(wm * WARP_M + g) * A_LD + q" if s.trans_a else "q * A_LD + wm * WARP_M + g"
    b_base = "q * B_LD + wn * WARP_N + g" if s.trans_b else "(wn * WARP_N + g) * B_LD + q"
    ksteps = "\n".join(f"// k-step {ks}\n{_fragments(L, ks)}\n{_mmas(L)}" for ks in range(L.blk_k // L.mma_k))
    if not cx:
        regs = "double ar[FM][A_REGS], br[FN][B_REGS];"
    elif _negate_a(L):
        regs = "double ar[FM][A_REGS], ai[FM][A_REGS], an[FM][A_REGS], br[FN][B_REGS], bi[FN][B_REGS];"
    else:
        regs = "double ar[FM][A_REGS], ai[FM][A_REGS], br[FN][B_REGS], bi[FN][B_REGS], bn[FN][B_REGS];"
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
  STAGES = {L.stages}, VEC = {L.vec}, PAD_A = {L.pad_a}, PAD_B = {L.pad_b},
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
{_copy_fn(L, "a")}
{_copy_fn(L, "b")}
extern "C" __global__ void __launch_bounds__(NT)
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

  {acc}
  #pragma unroll
  for (int i = 0; i < FM; ++i) {{
    #pragma unroll
    for (int j = 0; j < FN; ++j) {{
      #pragma unroll
      for (int r = 0; r < C_REGS; ++r) {{ {zero} }}
    }}
  }}

  const int ktiles = (K + BLK_K - 1) / BLK_K;
  // prologue: the first STAGES - 1 slices in flight, one commit group each (empty past K)
  #pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {{
    if (st < ktiles) {{
      const int k0 = st * BLK_K;
      copy_a(sA + st * A_STAGE, A, lda, {a_args}, t);
      copy_b(sB + st * B_STAGE, B, ldb, {b_args}, t);
    }}
    beast_cp_async_commit();
  }}
  int read = 0, write = STAGES - 1;
  for (int kt = 0; kt < ktiles; ++kt) {{
    beast_cp_async_wait<STAGES - 2>();   // slice kt has landed (this thread's copies) ...
    __syncthreads();                     // ... everyone's, and stage `write` is no longer read
    if (kt + STAGES - 1 < ktiles) {{
      const int k0 = (kt + STAGES - 1) * BLK_K;
      copy_a(sA + write * A_STAGE, A, lda, {a_args}, t);
      copy_b(sB + write * B_STAGE, B, ldb, {b_args}, t);
    }}
    beast_cp_async_commit();
    const T* a_lane = sA + read * A_STAGE + a_base;
    const T* b_lane = sB + read * B_STAGE + b_base;
    {regs}
{_indent(ksteps, 4)}
    read = read + 1 == STAGES ? 0 : read + 1;
    write = write + 1 == STAGES ? 0 : write + 1;
  }}

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
    the cp.async hooks (:data:`beast.tune.kernel.CP_ASYNC`) and the warp MMAs."""
    return PRELUDE_HEAD % {"version": KERNEL_VERSION} + CP_ASYNC + PRELUDE_BODY


@dataclass(frozen=True)
class MmaKernel(GemmKernel):
    """Generated CUDA source of one tensor-core configuration, and how to launch it (the paper's
    kernel's interface: :class:`~beast.tune.kernel.GemmKernel`, over an :class:`MmaLayout`)."""

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
