"""The paper's GEMM space (spaces/gemm.py, Figs. 10-15) with switches after MAGMA's kernels.

Not in the paper (issue 25: SGEMM closer to cuBLAS on CUDA cores).  Everything of spaces/gemm.py,
whose counts stay the paper's, plus three switches of the same template (beast.tune.kernels.paper):

* pad_a, pad_b: shared-memory rows padded by 0, 1 or 4 elements, against bank conflicts in the
  transposed stores of a stripe (A when trans_a == 1, B when trans_b == 0);
* smem_buffers: 2 shared-memory buffers, one barrier per stripe instead of two (the next stripe,
  prefetched into registers as in the paper, is stored into the other buffer);
* async_copy: with two buffers, on compute capability 8.0 and later, cp.async copies the next
  stripe straight into shared memory (no staging registers).

    beast count spaces/gemm_magma.py --device h100 -D precision=single -D shared_memory=optin
    beast tune spaces/gemm_magma.py --device auto -D precision=single --size 4096 4096 4096 --budget 300
"""
from beast import *

#: the paper's template (beast.tune.kernels.paper), with its switches beyond the paper
KERNEL_FAMILY = "gemm"

# -- Fig. 8 / Fig. 9: the device -----------------------------------------------------------------
dev = device()
max_threads_per_block = dev.max_threads_per_block
max_threads_dim_x = dev.max_threads_dim_x
max_threads_dim_y = dev.max_threads_dim_y
warp_size = dev.warp_size
max_regs_per_block = dev.max_regs_per_block
max_registers_per_multi_processor = dev.max_registers_per_multi_processor
max_shmem_per_multi_processor = dev.max_shmem_per_multi_processor
float_size = dev.float_size
max_blocks_per_multi_processor = dev.max_blocks_per_multi_processor
max_registers_per_thread = dev.max_registers_per_thread

# -- Fig. 10: the settings -----------------------------------------------------------------------
precision = setting("precision", "double", choices=["single", "double"])
arithmetic = setting("arithmetic", "real", choices=["real", "complex"])
trans_a = setting("trans_a", 0, choices=[0, 1])
trans_b = setting("trans_b", 0, choices=[0, 1])
# Not in the paper: Volta and later let a kernel opt in to more shared memory per block than 48 KB.
shared_memory = setting("shared_memory", "default", choices=["default", "optin"])
if shared_memory == "optin":
    max_shared_mem_per_block = dev.max_shared_mem_per_block_optin
else:
    max_shared_mem_per_block = dev.max_shared_mem_per_block

# -- Fig. 11: the iterators ----------------------------------------------------------------------
dim_m = range(1, max_threads_dim_x + 1)
dim_n = range(1, max_threads_dim_y + 1)


@iterator
def blk_m(dim_m):
    return range(dim_m, max_threads_dim_x + 1, dim_m)


@iterator
def blk_n(dim_n):
    return range(dim_n, max_threads_dim_y + 1, dim_n)


blk_k = range(1, min(max_threads_dim_x, max_threads_dim_y) + 1)


@iterator
def dim_vec(arithmetic, precision):
    # Fig. 11 compares `arithmetic` with "double" and `precision` with "real": the two names are
    # swapped in the paper. This is the intent: double real 1-2, single real 1 or 4,
    # double complex 1, single complex 1-2 (the widths of double2, float4 and cuFloatComplex2).
    if precision == "double":
        if arithmetic == "real":
            return range(1, 3)
        else:
            return 1
    else:
        if arithmetic == "real":
            return range(1, 5, 3)
        else:
            return range(1, 3)


@iterator
def vec_mul(dim_vec):
    if dim_vec == 1:
        return 0
    else:
        return range(0, 2)


@iterator
def dim_m_a(blk_m, blk_k):
    if trans_a == 0:
        return range(1, blk_m // dim_vec + 1)
    else:
        return range(1, blk_k // dim_vec + 1)


@iterator
def dim_n_a(blk_m, blk_k):
    if trans_a == 0:
        return range(1, blk_k + 1)
    else:
        return range(1, blk_m + 1)


@iterator
def dim_m_b(blk_k, blk_n):
    if trans_b == 0:
        return range(1, blk_k // dim_vec + 1)
    else:
        return range(1, blk_n // dim_vec + 1)


@iterator
def dim_n_b(blk_k, blk_n):
    if trans_b == 0:
        return range(1, blk_n + 1)
    else:
        return range(1, blk_k + 1)


tex_a = range(0, 2)
tex_b = range(0, 2)
shmem_l1 = range(0, 2)
# Not in the paper: only Kepler (compute capability 3.x) lets a kernel choose 4- or 8-byte
# shared-memory banks. From Maxwell on the bank size is fixed, so both values would run the same
# kernel the same way: the space keeps one (the 4-byte bank), and its count says what is distinct.
if dev.cudamajor == 3:
    shmem_banks = range(0, 2)
else:
    shmem_banks = range(0, 1)

# -- not in the paper: MAGMA's tricks as switches ---------------------------------------------------
pad_a = iterator([0, 1, 4])
pad_b = iterator([0, 1, 4])
smem_buffers = range(1, 3)
async_copy = range(0, 2)

# -- Fig. 12: derived variables ------------------------------------------------------------------
threads_per_block = dim_m * dim_n
thr_m = blk_m // dim_m
thr_n = blk_n // dim_n
regs_per_thread = thr_m * thr_n
if precision == "double":
    regs_per_thread = regs_per_thread * 2
if arithmetic == "complex":
    regs_per_thread = regs_per_thread * 2
regs_per_block = regs_per_thread * threads_per_block
# one buffer: the A stripe (rows of blk_m + pad_a), then the B stripe, each rounded up to dim_vec
# elements as the kernel lays them out (beast.tune.kernels.paper.GemmLayout.smem_buffer)
smem_a = (blk_k * (blk_m + pad_a) + dim_vec - 1) // dim_vec * dim_vec
smem_buffer = (smem_a + blk_k * (blk_n + pad_b) + dim_vec - 1) // dim_vec * dim_vec
shmem_per_block = smem_buffers * smem_buffer * float_size
if precision == "double":
    shmem_per_block = shmem_per_block * 2
if arithmetic == "complex":
    shmem_per_block = shmem_per_block * 2
max_blocks_by_regs = max_registers_per_multi_processor // regs_per_block
max_blocks_by_regs = min(max_blocks_by_regs, max_blocks_per_multi_processor)
max_threads_by_regs = max_blocks_by_regs * threads_per_block
max_blocks_by_shmem = max_shmem_per_multi_processor // shmem_per_block
max_blocks_by_shmem = min(max_blocks_by_shmem, max_blocks_per_multi_processor)
max_threads_by_shmem = max_blocks_by_shmem * threads_per_block
loads_per_thread = (thr_m + thr_n) * blk_k // dim_vec
loads_per_block = loads_per_thread * threads_per_block
if arithmetic == "complex":
    loads_per_block = loads_per_block * 2
fmas_per_thread = thr_m * thr_n * blk_k
fmas_per_block = fmas_per_thread * threads_per_block
if arithmetic == "complex":
    fmas_per_block = fmas_per_block * 4


# -- Fig. 13: hard conditions --------------------------------------------------------------------
@condition(kind="hard")
def over_max_threads(threads_per_block):
    return threads_per_block > max_threads_per_block


@condition(kind="hard")
def over_max_regs_per_thread(regs_per_thread):
    return regs_per_thread > max_registers_per_thread


@condition(kind="hard")
def over_max_regs_per_block(regs_per_block):
    return regs_per_block > max_regs_per_block


@condition(kind="hard")
def over_max_shmem(shmem_per_block):
    return shmem_per_block > max_shared_mem_per_block


# -- Fig. 14: soft conditions --------------------------------------------------------------------
min_threads_per_multi_processor = 256
min_fmas_per_load = 2


@condition(kind="soft")
def low_occupancy_regs(max_threads_by_regs):
    return max_threads_by_regs < min_threads_per_multi_processor


@condition(kind="soft")
def low_occupancy_shmem(max_threads_by_shmem):
    return max_threads_by_shmem < min_threads_per_multi_processor


@condition(kind="soft")
def low_fmas(loads_per_block, fmas_per_block):
    # Fig. 14 divides: fmas_per_block / loads_per_block < min_fmas_per_load. With Python 3's `//`
    # in loads_per_thread, loads_per_block is 0 when (thr_m + thr_n) * blk_k < dim_vec, and the
    # division would fail; multiplying instead keeps the meaning (no loads: not low) and is exact.
    return fmas_per_block < min_fmas_per_load * loads_per_block


@condition(kind="soft")
def partial_warps(threads_per_block):
    return threads_per_block % warp_size != 0


# -- Fig. 15: correctness conditions -------------------------------------------------------------
@condition(kind="correctness")
def cant_reshape_a1(dim_m_a, dim_n_a, threads_per_block):
    return dim_m_a * dim_n_a != threads_per_block


@condition(kind="correctness")
def cant_reshape_b1(dim_m_b, dim_n_b, threads_per_block):
    return dim_m_b * dim_n_b != threads_per_block


@condition(kind="correctness")
def cant_reshape_a2(blk_m, blk_k, dim_m_a, dim_n_a):
    return (trans_a == 0 and
            ((blk_m % (dim_m_a * dim_vec) != 0) or (blk_k % dim_n_a != 0))) \
        or \
        (trans_a != 0 and
         ((blk_k % (dim_m_a * dim_vec) != 0) or (blk_m % dim_n_a != 0)))


@condition(kind="correctness")
def cant_reshape_b2(blk_k, blk_n, dim_m_b, dim_n_b):
    return (trans_b == 0 and
            ((blk_k % (dim_m_b * dim_vec) != 0) or (blk_n % dim_n_b != 0))) \
        or \
        (trans_b != 0 and
         ((blk_n % (dim_m_b * dim_vec) != 0) or (blk_k % dim_n_b != 0)))


# -- not in the paper: the switches' conditions ----------------------------------------------------
@condition(kind="hard")
def no_cp_async(async_copy):
    # cp.async exists from compute capability 8.0 on
    return async_copy == 1 and dev.cudamajor < 8


@condition(kind="correctness")
def async_needs_two_buffers(async_copy, smem_buffers):
    return async_copy == 1 and smem_buffers == 1


@condition(kind="correctness")
def misaligned_padding(pad_a, pad_b, dim_vec):
    # vector accesses to shared memory (vec_mul reads, cp.async vectors) need rows of whole vectors
    return pad_a % dim_vec != 0 or pad_b % dim_vec != 0


@condition(kind="soft")
def useless_padding(pad_a, pad_b):
    # padding spreads the transposed stores over the banks; a stripe stored as it lies in device
    # memory (A when trans_a == 0, B when trans_b == 1) has none, and the multiply phase reads rows
    return (pad_a > 0 and trans_a == 0) or (pad_b > 0 and trans_b == 1)


@condition(kind="soft")
def tex_unused_by_async(async_copy, tex_a, tex_b):
    # cp.async does not read through the read-only data cache: tex_a/tex_b would change nothing
    return async_copy == 1 and (tex_a == 1 or tex_b == 1)
