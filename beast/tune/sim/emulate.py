"""NumPy emulation of the GEMM kernel's tiling (:mod:`beast.tune.kernels.paper`), to check correctness without a GPU.

:func:`emulate_gemm` runs one configuration on small integer-valued matrices (exact in
floating point) with the kernel's own index arithmetic: the same thread -> element mapping
of the A and B stripe loads (including the vector/element-wise bounds logic and the
alignment of every vector load), the same flat shared-memory array of ``blk_k * (blk_m +
blk_n)`` elements, the same per-thread rows and columns of C in the multiply phase and the
final guarded store with alpha and beta.  All thread blocks and stripes are emulated at once
(vectorized over ``(block_m, block_n, stripe)``), one configuration in about a millisecond.

Shared memory starts each stripe poisoned (NaN): an element that no thread loaded poisons
the C entries that read it.  Besides comparing C with ``alpha * op(A) @ op(B) + beta * C0``
exactly, the emulation reports *hazards*: shared-memory writes outside the array, two
threads writing different data to one shared-memory element in the same stripe (a race
whose outcome depends on scheduling), misaligned vector loads, C elements stored twice or
never.  A configuration is correct when there are no hazards and C is exact.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

from ...errors import BeastError

from ..kernels.paper import GemmLayout, GemmSettings


@dataclass(frozen=True)
class EmulationResult:
    """Outcome of emulating one configuration on an M x N x K problem."""

    size: tuple[int, int, int]
    hazards: tuple[str, ...] = ()
    mismatches: int = 0          # entries of C that differ from the exact result (NaN included)
    config: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when C is exactly ``alpha*op(A)op(B) + beta*C0`` and no hazard occurred."""
        return not self.hazards and self.mismatches == 0

    def describe(self) -> str:
        if self.ok:
            return "exact"
        parts = list(self.hazards)
        if self.mismatches:
            parts.append(f"{self.mismatches} of {self.size[0] * self.size[1]} entries of C wrong")
        return "; ".join(parts)


def default_size(layout: GemmLayout) -> tuple[int, int, int]:
    """A problem with two blocks per dimension, the second partial, and a partial second stripe.

    The first block row/column and the first stripe are full, so that anything a full tile
    misses shows; the partial ones exercise the bounds checks (and odd sizes the element-wise
    fallback of vector loads).
    """
    def two(blk: int) -> int:
        return 2 * blk - 1 if blk > 1 else 2
    return two(layout.blk_m), two(layout.blk_n), two(layout.blk_k)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


@dataclass
class _Operand:
    """One stored operand: flat column-major storage with leading dimension ``ld``."""

    flat: np.ndarray      # storage, padding poisoned with NaN
    ld: int
    rows: int             # rows of the stored matrix (contiguous dimension)
    cols: int


def _make_operand(rng, rows: int, cols: int, ld: int, dtype) -> tuple[_Operand, np.ndarray]:
    vals = rng.integers(1, 4, size=(rows, cols)) * rng.choice([-1, 1], size=(rows, cols))
    if np.dtype(dtype).kind == "c":
        im = rng.integers(-3, 4, size=(rows, cols))
        vals = vals + 1j * im
    mat = np.asarray(vals, dtype=dtype)
    flat = np.full(ld * max(cols, 1), np.nan, dtype=dtype)
    if rows and cols:
        flat.reshape(max(cols, 1), ld)[:cols, :rows] = mat.T
    return _Operand(flat, ld, rows, cols), mat


def _stripe_writes(L: GemmLayout, which: str):
    """Per-thread loads of one stripe, in the kernel's order: (t, j, i, e) flattened.

    Returns stripe-local (c, s) coordinates in the stored matrix's (contiguous, strided)
    frame and the shared-memory index each element is stored at.
    """
    v = L.dim_vec
    t = np.arange(L.threads)
    if which == "a":
        dm, dn, ni, nj, trans = L.dim_m_a, L.dim_n_a, L.a_i, L.a_j, L.settings.trans_a
    else:
        dm, dn, ni, nj, trans = L.dim_m_b, L.dim_n_b, L.b_i, L.b_j, L.settings.trans_b
    t_m, t_n = t % dm, t // dm
    tt, jj, ii, ee = np.meshgrid(np.arange(L.threads), np.arange(nj), np.arange(ni), np.arange(v),
                                 indexing="ij")
    c = ii * (dm * v) + t_m[tt] * v + ee           # load_x: c - c_org
    s = jj * dn + t_n[tt]                           # load_x: s - s_org
    if which == "a":
        # store_a: sA[s * BLK_M + c] (trans_a == 0: m = c, k = s) or sA[c * BLK_M + s]
        idx = s * L.blk_m + c if not trans else c * L.blk_m + s
    else:
        # store_b: sB[c * BLK_N + s] (trans_b == 0: k = c, n = s) or sB[s * BLK_N + c]
        idx = (c * L.blk_n + s if not trans else s * L.blk_n + c) + L.smem_a
    return c.ravel(), s.ravel(), idx.ravel()


def _load_values(L: GemmLayout, op: _Operand, c, s, c_org, c_lim, s_org, s_lim, id_base):
    """Values and provenance of the loaded elements for every (block, stripe) origin.

    ``c_org``/``s_org`` are 1-D arrays of origins (one per block/stripe instance).  Mirrors
    load_x: a vector of DIM_VEC elements is loaded at once when ``s < s_lim`` and the whole
    vector is below ``c_lim``, element by element with guards otherwise; elements outside the
    matrix read as zero.  Returns (values, source ids (-1 for zero), misaligned vector count).
    """
    v = L.dim_vec
    cg = c_org[:, None] + c[None, :]
    sg = s_org[:, None] + s[None, :]
    inside = (cg < c_lim) & (sg < s_lim)
    offset = sg.astype(np.int64) * op.ld + cg
    src = np.where(inside, offset, -1)
    values = np.where(inside, op.flat[np.where(inside, offset, 0)], 0)
    misaligned = 0
    if v > 1 and c.size:
        c_first = cg - (c[None, :] % v)             # first element of the element's vector
        vector_path = (sg < s_lim) & (c_first + v <= c_lim)
        first_off = sg.astype(np.int64) * op.ld + c_first
        first = (c % v == 0)[None, :]                 # count each vector once
        misaligned = int(np.count_nonzero(vector_path & first & (first_off % v != 0)))
    src = np.where(src >= 0, src + id_base, -1)
    return values, src, misaligned


def emulate_gemm(config: Mapping, settings: GemmSettings | Mapping,
                 size: tuple[int, int, int] | None = None, *, alpha=2, beta=-1, seed: int = 0,
                 ld_multiple: int = 4) -> EmulationResult:
    """Emulate the generated kernel for one configuration and report whether it computes GEMM exactly.

    ``size`` defaults to :func:`default_size`.  Leading dimensions are the stored rows rounded
    up to ``ld_multiple`` (the harness's alignment rule), the padding filled with NaN.
    """
    L = GemmLayout.from_config(config, settings)
    if L.extended:
        raise BeastError("the emulation follows the paper's kernel: it does not model pad_a, pad_b, "
                         "smem_buffers or async_copy",
                         hint="run such configurations on the host simulator (beast.tune.sim.hostsim)")
    st = L.settings
    M, N, K = size if size is not None else default_size(L)
    rng = np.random.default_rng(seed)
    dtype = np.complex128 if st.is_complex else np.float64
    a_rows, a_cols = (K, M) if st.trans_a else (M, K)
    b_rows, b_cols = (N, K) if st.trans_b else (K, N)
    A, a_mat = _make_operand(rng, a_rows, a_cols, _round_up(max(a_rows, 1), ld_multiple), dtype)
    B, b_mat = _make_operand(rng, b_rows, b_cols, _round_up(max(b_rows, 1), ld_multiple), dtype)
    c0 = np.asarray(rng.integers(-3, 4, size=(M, N)), dtype=dtype)
    op_a = a_mat.T if st.trans_a else a_mat
    op_b = b_mat.T if st.trans_b else b_mat
    expected = alpha * (op_a @ op_b) + beta * c0
    hazards: list[str] = []

    gx, gy = L.grid(M, N)[:2]
    n_stripes = -(-K // L.blk_k)                      # for (kk = 0; kk < K; kk += BLK_K)
    bx, by, ks = np.arange(gx), np.arange(gy), np.arange(n_stripes)
    row0, col0, kk = bx * L.blk_m, by * L.blk_n, ks * L.blk_k

    # ---- stripe loads: A depends on (bx, stripe), B on (by, stripe)
    ca, sa, idx_a = _stripe_writes(L, "a")
    cb, sb, idx_b = _stripe_writes(L, "b")
    ax_org, ak_org = np.repeat(row0, n_stripes), np.tile(kk, gx)          # instance (bx, stripe)
    if st.trans_a:
        va, srca, mis_a = _load_values(L, A, ca, sa, ak_org, K, ax_org, M, 0)
    else:
        va, srca, mis_a = _load_values(L, A, ca, sa, ax_org, M, ak_org, K, 0)
    by_org, bk_org = np.repeat(col0, n_stripes), np.tile(kk, gy)          # instance (by, stripe)
    b_base = A.flat.size + 1
    if st.trans_b:
        vb, srcb, mis_b = _load_values(L, B, cb, sb, by_org, N, bk_org, K, b_base)
    else:
        vb, srcb, mis_b = _load_values(L, B, cb, sb, bk_org, K, by_org, N, b_base)
    if mis_a or mis_b:
        hazards.append(f"{mis_a + mis_b} misaligned vector loads")

    # combine into per-(bx, by, stripe) write lists
    va = va.reshape(gx, 1, n_stripes, -1)
    srca = srca.reshape(gx, 1, n_stripes, -1)
    vb = vb.reshape(1, gy, n_stripes, -1)
    srcb = srcb.reshape(1, gy, n_stripes, -1)
    shape = (gx, gy, n_stripes)
    values = np.concatenate([np.broadcast_to(va, shape + va.shape[3:]),
                             np.broadcast_to(vb, shape + vb.shape[3:])], axis=-1)
    sources = np.concatenate([np.broadcast_to(srca, shape + srca.shape[3:]),
                              np.broadcast_to(srcb, shape + srcb.shape[3:])], axis=-1)
    index = np.concatenate([idx_a, idx_b])

    outside = (index < 0) | (index >= L.smem_elems)
    if np.any(outside):
        hazards.append(f"{int(np.count_nonzero(outside))} shared-memory stores per stripe fall outside "
                       f"the {L.smem_elems}-element array")
        keep = ~outside
        index, values, sources = index[keep], values[..., keep], sources[..., keep]
    if index.size and n_stripes:
        order = np.argsort(index, kind="stable")
        sidx = index[order]
        dup = np.nonzero(sidx[1:] == sidx[:-1])[0]
        if dup.size:
            first, second = order[dup], order[dup + 1]
            racing = sources[..., first] != sources[..., second]
            if np.any(racing):
                hazards.append("threads store different elements to the same shared-memory location "
                               f"({len(np.unique(sidx[dup][np.any(racing, axis=(0, 1, 2))]))} locations)")

    # ---- shared memory per (bx, by, stripe): poisoned, then the stores (last writer wins)
    smem = np.full(shape + (L.smem_elems,), np.nan, dtype=dtype)
    if index.size:
        smem[..., index] = values

    # ---- multiply phase: thread (tx, ty) reads rows R[tx, i] of sA, columns Cc[ty, j] of sB
    va_w, vb_w = L.vec_a, L.vec_b
    tx, i = np.arange(L.dim_m)[:, None], np.arange(L.thr_m)[None, :]
    rows = (i // va_w) * (L.dim_m * va_w) + tx * va_w + i % va_w          # (DIM_M, THR_M)
    ty, j = np.arange(L.dim_n)[:, None], np.arange(L.thr_n)[None, :]
    cols = (j // vb_w) * (L.dim_n * vb_w) + ty * vb_w + j % vb_w          # (DIM_N, THR_N)
    s_a = smem[..., :L.smem_a].reshape(shape + (L.blk_k, L.blk_m))
    s_b = smem[..., L.smem_a:].reshape(shape + (L.blk_k, L.blk_n))
    a_reg = s_a[..., rows]                      # (gx, gy, S, BLK_K, DIM_M, THR_M)
    b_reg = s_b[..., cols]                      # (gx, gy, S, BLK_K, DIM_N, THR_N)
    acc = np.einsum("xyskai,xyskbj->xyabij", a_reg, b_reg)   # sum over stripes and k

    # ---- store: rows/cols of C, guarded; every C element exactly once
    grow = row0[:, None, None, None, None, None] + rows[None, None, :, None, :, None]
    gcol = col0[None, :, None, None, None, None] + cols[None, None, None, :, None, :]
    grow, gcol = np.broadcast_arrays(grow, gcol)
    inside = (grow < M) & (gcol < N)
    target = (gcol.astype(np.int64) * M + grow)[inside]
    new = alpha * acc[inside]
    if beta != 0:
        new = new + beta * c0.T.ravel()[target]
    out = c0.T.ravel().copy()
    counts = np.bincount(target, minlength=M * N)
    if np.any(counts > 1):
        hazards.append(f"{int(np.count_nonzero(counts > 1))} entries of C stored by more than one thread")
    if np.any(counts == 0):
        hazards.append(f"{int(np.count_nonzero(counts == 0))} entries of C never stored")
    out[target] = new
    got = out.reshape(N, M).T
    wrong = int(np.count_nonzero(~(got == expected)))
    if np.isnan(got).any():
        hazards.append("C reads shared memory that no thread stored in that stripe")
    return EmulationResult((M, N, K), tuple(hazards), wrong, dict(L.config()))


def emulate_many(configs: Iterable[Mapping], settings: GemmSettings | Mapping, **kw) -> list[EmulationResult]:
    """:func:`emulate_gemm` over several configurations (same settings)."""
    if not isinstance(settings, GemmSettings):
        settings = GemmSettings.from_mapping(settings)
    return [emulate_gemm(c, settings, **kw) for c in configs]
