"""CUDA source for the GEMM kernel of the paper's Fig. 7, generated for one configuration.

``C <- alpha * op(A) * op(B) + beta * C`` in column-major storage (as in BLAS), where
``op(X)`` is ``X`` when ``trans_x == 0`` and ``X^T`` (plain transpose, no conjugation)
when ``trans_x == 1``.  ``op(A)`` is M x K, ``op(B)`` is K x N, ``C`` is M x N.

Tiling (Fig. 7).  A thread block of ``dim_m x dim_n`` threads computes a ``blk_m x blk_n``
tile of C in registers (``thr_m x thr_n`` elements per thread, ``thr_m = blk_m // dim_m``).
It streams ``blk_m x blk_k`` stripes of op(A) and ``blk_k x blk_n`` stripes of op(B) through
one flat shared-memory array of exactly ``blk_k * (blk_m + blk_n)`` elements (the space's
``shmem_per_block``): ``sA[k * blk_m + m]`` then ``sB[k * blk_n + n]``.  A stripe of A is
read from device memory by the same threads viewed as a ``dim_m_a x dim_n_a`` grid: thread
``t = ty * dim_m + tx`` has ``(t % dim_m_a, t // dim_m_a)``; the first coordinate runs along
the dimension that is contiguous in memory (m when ``trans_a == 0``, k otherwise) in steps
of ``dim_vec`` elements, each thread loading ``dim_vec`` consecutive elements (one vector
load), the second along the other dimension.  B likewise with ``dim_m_b x dim_n_b`` (the
contiguous dimension of B is k when ``trans_b == 0``, n otherwise).  The next stripe is
prefetched into registers while the current one is multiplied out of shared memory.

Parameters, all compile-time constants of the generated source:

* ``dim_vec``: width of the device-memory loads (``float2/float4/double2`` vector types,
  ``float4`` holding two single-complex numbers); the vector load is taken when the whole
  vector lies inside the matrix, element-wise guarded loads otherwise.
* ``vec_mul``: the multiply phase reads shared memory with vector types.  Each thread then
  owns ``w`` consecutive rows (columns) of C per step instead of rows strided by ``dim_m``,
  where ``w`` is the largest power of two dividing both ``dim_vec`` and ``thr_m``
  (``thr_n``); when ``w == 1`` that side reads scalars.
* ``tex_a``/``tex_b``: reads of A/B through the read-only data cache (``__ldg`` on a
  ``const __restrict__`` pointer), the modern form of texture reads.
* ``shmem_l1``: the shared-memory/L1 preference of ``cudaFuncSetCacheConfig``; recorded on
  the kernel as ``carveout`` (0 -> prefer L1: carveout 0 %, 1 -> prefer shared: 100 %), which
  the GPU layer sets as ``preferred_shared_memory_carveout`` before launching.
* ``shmem_banks``: the 4-byte (0) or 8-byte (1) bank size of ``cudaDeviceSetSharedMemConfig``;
  recorded as ``bank_size_bytes`` only: GPUs since Maxwell have fixed 4-byte banks and CUDA 12
  deprecated the call.  Neither of these two changes the source text, so configurations that
  differ only in them share one compiled binary.

Rules the caller must keep (the harness in :mod:`beast.tune.device.gpu` enforces them):

* any ``M, N, K >= 0`` works: edge tiles and a partial last stripe are handled with bounds
  checks (elements outside the matrices read as zero, stores outside C are skipped);
* alignment: when ``dim_vec > 1``, ``lda`` and ``ldb`` must be multiples of ``dim_vec`` and
  ``A``, ``B`` aligned to ``dim_vec * sizeof(T)`` bytes, so that every vector load address
  is aligned (the in-stripe offsets of a vector are multiples of ``dim_vec`` for every
  configuration that passes the correctness conditions of Fig. 15);
* grid ``(ceil(M / blk_m), ceil(N / blk_n))`` of blocks ``(dim_m, dim_n)``, dynamic shared
  memory of ``smem_bytes`` (above 48 KiB this needs the opt-in attribute
  ``max_dynamic_shared_size_bytes``); ``ceil(N / blk_n) <= 65535``.

Switches beyond the paper (``spaces/gemm_magma.py``; absent, each takes the paper's value and the
text is the paper's kernel, byte for byte), after what MAGMA's kernels do:

* ``pad_a``/``pad_b``: shared-memory rows of ``blk_m + pad_a`` (``blk_n + pad_b``) elements, so
  that the transposed stores (element by element, threads ``blk_m`` apart) spread over the banks;
* ``smem_buffers``: 2 keeps two shared-memory buffers, so that storing the prefetched stripe into
  one while others still read the other needs one ``__syncthreads`` per stripe instead of two;
* ``async_copy``: 1 (with two buffers, compute capability 8.0 and later) copies the next stripe
  straight from device to shared memory with ``cp.async`` (``dim_vec`` elements at a time where
  the stripe is stored contiguously, one element where it is stored transposed; zero-filled past
  the matrix) instead of through registers.

The kernel assumes the correctness conditions of Fig. 15 (``dim_m_a * dim_n_a == dim_m *
dim_n`` and the stripe divisibility rules, likewise for B).  Like MAGMA's, its stripe loads
step through the stripe (``for (s = 0; s < extent; s += dim_n_a)``, ceil-many iterations,
unrolled), so a reading grid that does not tile the stripe exactly leaves elements unloaded
or stores outside the stripe; configurations that break the conditions still compile but
compute wrong results -- :mod:`beast.tune.sim.emulate` mirrors the index arithmetic below to
show both.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping

from ...errors import BeastError

#: bumped whenever the generated code changes meaning or speed; tuning logs record it.
KERNEL_VERSION = 1
#: the ``extern "C"`` name of the generated kernel.
KERNEL_NAME = "beast_gemm"


# the settings and the layout (re-exported: every caller imports them from here)
from .layout import OPTIONAL, GemmLayout, GemmSettings, read_parameters, vec_type  # noqa: F401


# --------------------------------------------------------------------------- source

PRELUDE = r"""// Generated by beast.tune.kernel (template version %(version)d): GEMM kernel of
// Luszczek et al. 2016, Fig. 7.  C <- alpha*op(A)*op(B) + beta*C, column-major.
#ifndef BEAST_GEMM_PRELUDE
#define BEAST_GEMM_PRELUDE
#ifndef BEAST_DYNAMIC_SMEM
#define BEAST_DYNAMIC_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#endif
#ifndef BEAST_LDG
#define BEAST_LDG(p) __ldg(p)
#endif
__device__ __forceinline__ float2 beast_c2f(float x, float y) { float2 r; r.x = x; r.y = y; return r; }
__device__ __forceinline__ double2 beast_c2d(double x, double y) { double2 r; r.x = x; r.y = y; return r; }
#endif
"""

_SCALAR_OPS = {
    "s": r"""
__device__ __forceinline__ T zero() { return 0.0f; }
__device__ __forceinline__ T mul_add(T a, T b, T c) { return fmaf(a, b, c); }
__device__ __forceinline__ T scale(R re, R im, T x) { return re * x; }
__device__ __forceinline__ T add(T x, T y) { return x + y; }
""",
    "d": r"""
__device__ __forceinline__ T zero() { return 0.0; }
__device__ __forceinline__ T mul_add(T a, T b, T c) { return fma(a, b, c); }
__device__ __forceinline__ T scale(R re, R im, T x) { return re * x; }
__device__ __forceinline__ T add(T x, T y) { return x + y; }
""",
    "c": r"""
__device__ __forceinline__ T zero() { return beast_c2f(0.0f, 0.0f); }
__device__ __forceinline__ T mul_add(T a, T b, T c) {
  c.x = fmaf(a.x, b.x, c.x); c.x = fmaf(-a.y, b.y, c.x);
  c.y = fmaf(a.x, b.y, c.y); c.y = fmaf(a.y, b.x, c.y);
  return c;
}
__device__ __forceinline__ T scale(R re, R im, T x) { return beast_c2f(re * x.x - im * x.y, re * x.y + im * x.x); }
__device__ __forceinline__ T add(T x, T y) { return beast_c2f(x.x + y.x, x.y + y.y); }
""",
    "z": r"""
__device__ __forceinline__ T zero() { return beast_c2d(0.0, 0.0); }
__device__ __forceinline__ T mul_add(T a, T b, T c) {
  c.x = fma(a.x, b.x, c.x); c.x = fma(-a.y, b.y, c.x);
  c.y = fma(a.x, b.y, c.y); c.y = fma(a.y, b.x, c.y);
  return c;
}
__device__ __forceinline__ T scale(R re, R im, T x) { return beast_c2d(re * x.x - im * x.y, re * x.y + im * x.x); }
__device__ __forceinline__ T add(T x, T y) { return beast_c2d(x.x + y.x, x.y + y.y); }
""",
}


def indent(text: str, n: int) -> str:
    """``text`` with each non-blank line indented by ``n`` spaces (generated code)."""
    pad = " " * n
    return "\n".join(pad + line if line.strip() else line for line in text.splitlines())


def _load_fn(L: GemmLayout, x: str) -> str:
    """Device function loading one stripe of A (x='a') or B (x='b') from device memory into registers.

    Thread coordinates (t_m, t_n) in the dim_m_x x dim_n_x reading grid; element (c, s) where c runs
    along the contiguous dimension of the stored matrix, s along the strided one (offset s*ld + c).
    """
    X = x.upper()
    tex = L.tex_a if x == "a" else L.tex_b
    s = L.settings
    ld = "BEAST_LDG(p)" if tex else "*(p)"
    qual = "const T* __restrict__" if tex else "const T*"
    v = L.dim_vec
    if v == 1:
        inner = f"""\
const int c = c_org + i * (DIM_M_{X} * DIM_VEC) + t_m * DIM_VEC;
if (s < s_lim && c < c_lim) {{
  const T* p = X + (long long)s * ld + c;
  r[j][i] = {ld};
}} else {{
  r[j][i] = zero();
}}"""
    else:
        vt, comps = vec_type(s, v)
        vld = f"BEAST_LDG(reinterpret_cast<const {vt}*>(p))" if tex else f"*reinterpret_cast<const {vt}*>(p)"
        unpack = "\n".join(f"  r[j][i * DIM_VEC + {e}] = {comp};" for e, comp in enumerate(comps))
        inner = f"""\
const int c = c_org + i * (DIM_M_{X} * DIM_VEC) + t_m * DIM_VEC;
if (s < s_lim && c + DIM_VEC <= c_lim) {{
  const T* p = X + (long long)s * ld + c;   // aligned: c % DIM_VEC == 0 and ld % DIM_VEC == 0
  const {vt} v = {vld};
{unpack}
}} else {{
  #pragma unroll
  for (int e = 0; e < DIM_VEC; ++e) {{
    if (s < s_lim && c + e < c_lim) {{
      const T* p = X + (long long)s * ld + c + e;
      r[j][i * DIM_VEC + e] = {ld};
    }} else {{
      r[j][i * DIM_VEC + e] = zero();
    }}
  }}
}}"""
    return f"""\
// Stripe of {X} -> registers: thread (t_m, t_n) loads elements (c, s) of the stored matrix,
// c = c_org + i*DIM_M_{X}*DIM_VEC + t_m*DIM_VEC + e (contiguous), s = s_org + j*DIM_N_{X} + t_n.
__device__ __forceinline__ void load_{x}(T (&r)[{X}_J][{X}_I * DIM_VEC], {qual} X, int ld,
                                       int c_org, int c_lim, int s_org, int s_lim, int t_m, int t_n) {{
  #pragma unroll
  for (int j = 0; j < {X}_J; ++j) {{
    const int s = s_org + j * DIM_N_{X} + t_n;
    #pragma unroll
    for (int i = 0; i < {X}_I; ++i) {{
{indent(inner, 6)}
    }}
  }}
}}
"""


def _store_fn(L: GemmLayout, x: str) -> str:
    """Device function storing the registers of one stripe into shared memory."""
    X = x.upper()
    index, what = _store_index(L, x)
    return f"""\
// Registers -> shared memory: {what} (stripe-local coordinates).
__device__ __forceinline__ void store_{x}(T* s{X}, const T (&r)[{X}_J][{X}_I * DIM_VEC], int t_m, int t_n) {{
  #pragma unroll
  for (int j = 0; j < {X}_J; ++j) {{
    const int s = j * DIM_N_{X} + t_n;
    #pragma unroll
    for (int i = 0; i < {X}_I; ++i) {{
      #pragma unroll
      for (int e = 0; e < DIM_VEC; ++e) {{
        const int c = i * (DIM_M_{X} * DIM_VEC) + t_m * DIM_VEC + e;
        s{X}[{index}] = r[j][i * DIM_VEC + e];
      }}
    }}
  }}
}}
"""


def _row(L: GemmLayout, x: str) -> str:
    """The name of the row length (k to k + 1) of a stripe in shared memory: the paper's BLK_M
    (BLK_N), or LDA_S (LDB_S) when padded."""
    if x == "a":
        return "LDA_S" if L.pad_a else "BLK_M"
    return "LDB_S" if L.pad_b else "BLK_N"


def _store_index(L: GemmLayout, x: str) -> tuple[str, str]:
    """Index in its stripe of element (c, s) (contiguous, strided) of A or B, and what it means."""
    row = _row(L, x)
    if x == "a":
        # sA[k * BLK_M + m]; contiguous c is m (trans_a == 0) or k (trans_a == 1)
        index = f"s * {row} + c" if not L.settings.trans_a else f"c * {row} + s"
        what = f"sA[k * {row} + m] with " + ("m = c, k = s" if not L.settings.trans_a else "k = c, m = s")
    else:
        # sB[k * BLK_N + n]; contiguous c is k (trans_b == 0) or n (trans_b == 1)
        index = f"c * {row} + s" if not L.settings.trans_b else f"s * {row} + c"
        what = f"sB[k * {row} + n] with " + ("k = c, n = s" if not L.settings.trans_b else "n = c, k = s")
    return index, what


def _copy_fn(L: GemmLayout, x: str) -> str:
    """async_copy: cp.async of one stripe of A or B straight into shared memory.  Where the stripe
    is stored as it lies in device memory (c contiguous in both), a copy moves DIM_VEC elements;
    where it is stored transposed, one element.  Sources past c_lim or s_lim are zero-filled."""
    X = x.upper()
    s = L.settings
    index, what = _store_index(L, x)
    contiguous = (x == "a" and not s.trans_a) or (x == "b" and s.trans_b)
    if contiguous:
        body = f"""const int c = i * (DIM_M_{X} * DIM_VEC) + t_m * DIM_VEC;
int n = s_org + s < s_lim ? c_lim - (c_org + c) : 0;
n = n < 0 ? 0 : (n > DIM_VEC ? DIM_VEC : n);
const T* p = n > 0 ? X + (long long)(s_org + s) * ld + c_org + c : X;
beast_cp_async<{L.dim_vec * s.itemsize}>(s{X} + {index}, p, n * (int)sizeof(T));"""
    else:
        body = f"""#pragma unroll
for (int e = 0; e < DIM_VEC; ++e) {{
  const int c = i * (DIM_M_{X} * DIM_VEC) + t_m * DIM_VEC + e;
  const bool in = s_org + s < s_lim && c_org + c < c_lim;
  const T* p = in ? X + (long long)(s_org + s) * ld + c_org + c : X;
  beast_cp_async<{s.itemsize}>(s{X} + {index}, p, in ? (int)sizeof(T) : 0);
}}"""
    return f"""// Stripe of {X} -> shared memory by cp.async: {what}; thread (t_m, t_n) copies elements
// (c_org + c, s_org + s) of the stored matrix, c = i*DIM_M_{X}*DIM_VEC + t_m*DIM_VEC (+ e), s = j*DIM_N_{X} + t_n.
__device__ __forceinline__ void copy_{x}(T* s{X}, const T* X, int ld, int c_org, int c_lim, int s_org, int s_lim,
                                       int t_m, int t_n) {{
  #pragma unroll
  for (int j = 0; j < {X}_J; ++j) {{
    const int s = j * DIM_N_{X} + t_n;
    #pragma unroll
    for (int i = 0; i < {X}_I; ++i) {{
{indent(body, 6)}
    }}
  }}
}}
"""


def _smem_read(L: GemmLayout, x: str, arr: str | None = None, hook: bool = False) -> str:
    """Multiply phase: read this thread's THR_M (THR_N) elements of row k of sA (sB), or of the
    stripe at ``arr``; ``hook`` wraps each read in ``BEAST_LDS`` (the host simulator's counters)."""
    lds = (lambda e: f"BEAST_LDS({e})") if hook else (lambda e: e)
    if x == "a":
        arr, extent, dim, tid, thr, vw, reg = arr or "sA", _row(L, "a"), "DIM_M", "tx", "THR_M", L.vec_a, "a"
    else:
        arr, extent, dim, tid, thr, vw, reg = arr or "sB", _row(L, "b"), "DIM_N", "ty", "THR_N", L.vec_b, "b"
    if vw == 1:
        return f"""\
#pragma unroll
for (int i = 0; i < {thr}; ++i) {reg}[i] = {lds(f"{arr}[k * {extent} + i * {dim} + {tid}]")};"""
    vt, comps = vec_type(L.settings, vw)
    unpack = " ".join(f"{reg}[i * {vw} + {e}] = {comp};" for e, comp in enumerate(comps))
    return f"""\
#pragma unroll
for (int i = 0; i < {thr} / {vw}; ++i) {{
  const {vt} v = {lds(f"*reinterpret_cast<const {vt}*>({arr} + k * {extent} + i * ({dim} * {vw}) + {tid} * {vw})")};
  {unpack}
}}"""


#: parameters that act through launch attributes, not the source: configurations differing only
#: in them share one binary.
_HOST_SIDE = ("shmem_l1", "shmem_banks")


#: one stripe's product in registers, the part every main loop below shares (str.format template)
_STRIPE_PRODUCT = """\
    {unroll_k}
    for (int k = 0; k < BLK_K; ++k) {{
      T a[THR_M];
      T b[THR_N];
{read_a}
{read_b}
      #pragma unroll
      for (int n = 0; n < THR_N; ++n) {{
        #pragma unroll
        for (int m = 0; m < THR_M; ++m) rc[n][m] = mul_add(a[m], b[n], rc[n][m]);
      }}
    }}
"""

#: the main loop of the paper's kernel (str.format template): registers prefetch the next stripe,
#: one shared-memory buffer, two barriers per stripe
_PAPER_LOOP = """\
  int kk = 0;
  load_a(ra, A, lda, {a_args}, ta_m, ta_n);
  load_b(rb, B, ldb, {b_args}, tb_m, tb_n);
  for (; kk < K; kk += BLK_K) {{
    store_a(sA, ra, ta_m, ta_n);
    store_b(sB, rb, tb_m, tb_n);
    __syncthreads();
    if (kk + BLK_K < K) {{     // prefetch the next stripe while multiplying this one
      const int kn = kk + BLK_K;
      load_a(ra, A, lda, {an}, ta_m, ta_n);
      load_b(rb, B, ldb, {bn}, tb_m, tb_n);
    }}
""" + _STRIPE_PRODUCT + """\
    __syncthreads();
  }}"""

#: smem_buffers=2: the same prefetch into registers, stored into the other buffer: one barrier
_DOUBLE_LOOP = """\
  int kk = 0;
  load_a(ra, A, lda, {a_args}, ta_m, ta_n);
  load_b(rb, B, ldb, {b_args}, tb_m, tb_n);
  for (int buf = 0; kk < K; kk += BLK_K, buf ^= 1) {{
    store_a(sA + buf * SMEM_ELEMS, ra, ta_m, ta_n);
    store_b(sB + buf * SMEM_ELEMS, rb, tb_m, tb_n);
    __syncthreads();           // the one barrier per stripe: everyone is past the other buffer
    if (kk + BLK_K < K) {{     // prefetch the next stripe while multiplying this one
      const int kn = kk + BLK_K;
      load_a(ra, A, lda, {an}, ta_m, ta_n);
      load_b(rb, B, ldb, {bn}, tb_m, tb_n);
    }}
    const T* cA = sA + buf * SMEM_ELEMS;
    const T* cB = sB + buf * SMEM_ELEMS;
""" + _STRIPE_PRODUCT + """\
  }}"""

#: async_copy=1: cp.async straight into the other buffer, no staging registers
_ASYNC_LOOP = """\
  int kk = 0;
  copy_a(sA, A, lda, {a_args}, ta_m, ta_n);
  copy_b(sB, B, ldb, {b_args}, tb_m, tb_n);
  beast_cp_async_commit();
  for (int buf = 0; kk < K; kk += BLK_K, buf ^= 1) {{
    beast_cp_async_wait<0>();  // this thread's copies of the stripe have landed ...
    __syncthreads();           // ... everyone's, and everyone is past the other buffer
    if (kk + BLK_K < K) {{     // copy the next stripe while multiplying this one
      const int kn = kk + BLK_K;
      copy_a(sA + (buf ^ 1) * SMEM_ELEMS, A, lda, {an}, ta_m, ta_n);
      copy_b(sB + (buf ^ 1) * SMEM_ELEMS, B, ldb, {bn}, tb_m, tb_n);
    }}
    beast_cp_async_commit();
    const T* cA = sA + buf * SMEM_ELEMS;
    const T* cB = sB + buf * SMEM_ELEMS;
""" + _STRIPE_PRODUCT + """\
  }}"""

#: cp.async hooks (before a kernel that uses them; guarded, so they may appear more than once);
#: the host simulator (beast.tune.sim.hostsim) defines BEAST_HOST_SIM and its own.
CP_ASYNC = r"""#ifndef BEAST_CP_ASYNC
#define BEAST_CP_ASYNC
#ifndef BEAST_HOST_SIM
// cp.async: copy src_bytes (0 .. BYTES) bytes from global to shared memory, zero-fill the rest of BYTES.
template <int BYTES> __device__ __forceinline__ void beast_cp_async(void* dst, const void* src, int src_bytes);
template <> __device__ __forceinline__ void beast_cp_async<4>(void* dst, const void* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes) : "memory");
}
template <> __device__ __forceinline__ void beast_cp_async<8>(void* dst, const void* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes) : "memory");
}
template <> __device__ __forceinline__ void beast_cp_async<16>(void* dst, const void* src, int src_bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void beast_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void beast_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
#endif
#endif
"""


def kernel_body(L: GemmLayout, name: str = KERNEL_NAME, lds_hook: bool = False) -> str:
    """The kernel for one configuration: a namespace with its constants, helpers and the
    ``extern "C" __global__`` function ``name``.  Needs :data:`PRELUDE` before it.  ``lds_hook``
    (for :mod:`beast.tune.sim.counters` only, never the GPU text) wraps the multiply phase's
    shared-memory reads in ``BEAST_LDS``, the identity unless defined before."""
    s = L.settings
    unroll_k = "#pragma unroll" if L.blk_k * max(1, L.thr_m * L.thr_n) <= 8192 else "#pragma unroll 8"
    qa = "const T* __restrict__" if L.tex_a else "const T*"
    qb = "const T* __restrict__" if L.tex_b else "const T*"
    if s.trans_a:
        a_args = "kk, K, row0, M"          # contiguous k, strided m
    else:
        a_args = "row0, M, kk, K"          # contiguous m, strided k
    if s.trans_b:
        b_args = "col0, N, kk, K"          # contiguous n, strided k
    else:
        b_args = "kk, K, col0, N"          # contiguous k, strided n
    beta_nonzero = "beta_re != 0 || beta_im != 0" if s.is_complex else "beta_re != 0"
    ns = f"{name}_ns"
    params = ", ".join(f"{n}={getattr(L, n)}" for n in L.required_names() if n not in _HOST_SIDE)
    # the paper's text, and what the switches beyond it (pad_a/pad_b, smem_buffers, async_copy) change
    smem_enum = """\
  SMEM_A = BLK_M * BLK_K,                 // sA[k * BLK_M + m]
  SMEM_ELEMS = SMEM_A + BLK_K * BLK_N     // then sB[k * BLK_N + n]"""
    helpers = "\n".join([_load_fn(L, "a"), _load_fn(L, "b"), _store_fn(L, "a"), _store_fn(L, "b")])
    staging = "  T ra[A_J][A_I * DIM_VEC];\n  T rb[B_J][B_I * DIM_VEC];\n"
    cp_async = ""
    main_loop = _PAPER_LOOP.format(a_args=a_args, b_args=b_args, an=a_args.replace("kk", "kn"),
                                   bn=b_args.replace("kk", "kn"), unroll_k=unroll_k,
                                   read_a=indent(_smem_read(L, "a", hook=lds_hook), 6),
                                   read_b=indent(_smem_read(L, "b", hook=lds_hook), 6))
    if L.extended:
        smem_enum = f"""\
  PAD_A = {L.pad_a}, PAD_B = {L.pad_b}, LDA_S = BLK_M + PAD_A, LDB_S = BLK_N + PAD_B,   // shared-memory rows
  SMEM_A = {L.smem_a},      // sA[k * {_row(L, "a")} + m] (rounded up to DIM_VEC elements)
  SMEM_ELEMS = {L.smem_buffer},  // then sB[k * {_row(L, "b")} + n]: one buffer
  SMEM_BUFFERS = {L.smem_buffers}, ASYNC_COPY = {L.async_copy}"""
    if L.smem_buffers == 2:
        reads = dict(read_a=indent(_smem_read(L, "a", "cA", lds_hook), 6),
                     read_b=indent(_smem_read(L, "b", "cB", lds_hook), 6))
        if L.async_copy:
            cp_async = CP_ASYNC
            staging = ""
            helpers = "\n".join([_copy_fn(L, "a"), _copy_fn(L, "b")])
            main_loop = _ASYNC_LOOP.format(a_args=a_args, b_args=b_args, an=a_args.replace("kk", "kn"),
                                           bn=b_args.replace("kk", "kn"), unroll_k=unroll_k, **reads)
        else:
            main_loop = _DOUBLE_LOOP.format(a_args=a_args, b_args=b_args, an=a_args.replace("kk", "kn"),
                                            bn=b_args.replace("kk", "kn"), unroll_k=unroll_k, **reads)
    hook = "#ifndef BEAST_LDS\n#define BEAST_LDS(x) (x)\n#endif\n" if lds_hook else ""
    return f"""\
{hook}{cp_async}// {s.routine}: {params}
namespace {ns} {{
typedef {s.elem_type} T;   // element type
typedef {s.real_type} R;   // scalar type of alpha, beta parts
enum : int {{
  DIM_M = {L.dim_m}, DIM_N = {L.dim_n},                    // thread grid computing C
  BLK_M = {L.blk_m}, BLK_N = {L.blk_n}, BLK_K = {L.blk_k},  // C tile, stripe width
  DIM_VEC = {L.dim_vec}, VEC_MUL = {L.vec_mul},
  DIM_M_A = {L.dim_m_a}, DIM_N_A = {L.dim_n_a},            // thread grid reading A
  DIM_M_B = {L.dim_m_b}, DIM_N_B = {L.dim_n_b},            // thread grid reading B
  TEX_A = {L.tex_a}, TEX_B = {L.tex_b},   // shmem_l1, shmem_banks act on the host side only
  TRANS_A = {s.trans_a}, TRANS_B = {s.trans_b},
  NT = DIM_M * DIM_N,
  THR_M = BLK_M / DIM_M, THR_N = BLK_N / DIM_N,            // C elements per thread
  VEC_A = {L.vec_a}, VEC_B = {L.vec_b},                     // shared-memory read widths (vec_mul)
  A_I = {L.a_i}, A_J = {L.a_j},   // per-thread loads of a {L.a_ce} x {L.a_se} (contiguous x strided) stripe of A
  B_I = {L.b_i}, B_J = {L.b_j},   // per-thread loads of a {L.b_ce} x {L.b_se} stripe of B
{smem_enum}
}};
{_SCALAR_OPS[s.letter]}
{helpers}
extern "C" __global__ void __launch_bounds__(NT)
{name}(int M, int N, int K, R alpha_re, R alpha_im, {qa} A, int lda,
{" " * len(name)} {qb} B, int ldb, R beta_re, R beta_im, T* C, int ldc) {{
  BEAST_DYNAMIC_SMEM(beast_smem);
  T* sA = reinterpret_cast<T*>(beast_smem);
  T* sB = sA + SMEM_A;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int t = ty * DIM_M + tx;
  const int ta_m = t % DIM_M_A, ta_n = t / DIM_M_A;
  const int tb_m = t % DIM_M_B, tb_n = t / DIM_M_B;
  const int row0 = blockIdx.x * BLK_M, col0 = blockIdx.y * BLK_N;

{staging}  T rc[THR_N][THR_M];
  #pragma unroll
  for (int n = 0; n < THR_N; ++n) {{
    #pragma unroll
    for (int m = 0; m < THR_M; ++m) rc[n][m] = zero();
  }}

{main_loop}

  // thread (tx, ty) owns rows row0 + (m / VEC_A) * DIM_M * VEC_A + tx * VEC_A + m % VEC_A
  // and columns col0 + (n / VEC_B) * DIM_N * VEC_B + ty * VEC_B + n % VEC_B
  const bool beta_nonzero = {beta_nonzero};
  #pragma unroll
  for (int n = 0; n < THR_N; ++n) {{
    const int col = col0 + (n / VEC_B) * (DIM_N * VEC_B) + ty * VEC_B + n % VEC_B;
    #pragma unroll
    for (int m = 0; m < THR_M; ++m) {{
      const int row = row0 + (m / VEC_A) * (DIM_M * VEC_A) + tx * VEC_A + m % VEC_A;
      if (row < M && col < N) {{
        T* c = C + (long long)col * ldc + row;
        T value = scale(alpha_re, alpha_im, rc[n][m]);
        if (beta_nonzero) value = add(value, scale(beta_re, beta_im, *c));
        *c = value;
      }}
    }}
  }}
}}
}}  // namespace {ns}
"""


def prelude() -> str:
    """Definitions shared by every generated kernel (guarded: may appear more than once)."""
    return PRELUDE % {"version": KERNEL_VERSION}


@dataclass(frozen=True)
class GemmKernel:
    """Generated CUDA source of one configuration, and how to launch it."""

    layout: GemmLayout
    name: str
    body: str

    #: the name of the paper's kernel family in tuning logs (``kernel_family``)
    family = "gemm"

    @property
    def prelude(self) -> str:
        """The definitions the body needs before it (:func:`prelude`)."""
        return prelude()

    @property
    def source(self) -> str:
        """A complete translation unit (prelude + kernel), for NVRTC or nvcc."""
        return self.prelude + self.body

    @property
    def source_hash(self) -> str:
        """sha256 of :attr:`source`; configurations differing only in shmem_l1/shmem_banks share it."""
        return hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def settings(self) -> GemmSettings:
        return self.layout.settings

    @property
    def block(self) -> tuple[int, int, int]:
        return self.layout.block

    def grid(self, m: int, n: int) -> tuple[int, int, int]:
        return self.layout.grid(m, n)

    @property
    def smem_bytes(self) -> int:
        return self.layout.smem_bytes


def generate(config: Mapping, settings: GemmSettings | Mapping, name: str = KERNEL_NAME) -> GemmKernel:
    """Generate the CUDA kernel for one configuration.

    ``config`` maps the Fig. 11 parameter names to integers (a space's iterator values; extra
    names are ignored, missing ones are reported together).  ``settings`` is a
    :class:`GemmSettings` or the space's settings dict.  ``name`` is the ``extern "C"``
    kernel name (a C identifier).  The output is deterministic.
    """
    if not name.isidentifier():
        raise BeastError(f"kernel name {name!r} is not a C identifier")
    layout = GemmLayout.from_config(config, settings)
    return GemmKernel(layout, name, kernel_body(layout, name))


def translation_unit(kernels) -> str:
    """One source with several kernels (distinct names, of any family), e.g. to compile a sample
    at once: each family's prelude once, then the bodies."""
    kernels = list(kernels)
    names = [k.name for k in kernels]
    if len(set(names)) != len(names):
        raise BeastError("kernels in one translation unit need distinct names")
    preludes = list(dict.fromkeys(k.prelude for k in kernels))
    return "".join(preludes) + "\n".join(k.body for k in kernels)
