"""A second GEMM kernel family: FP64 tensor cores (warp-level ``mma.sync ... .f64``), sm_80 and later.

Not in the paper.  DGEMM and ZGEMM, ``C <- alpha * op(A) * op(B) + beta * C`` (column-major,
``op(X)`` is ``X`` or ``X^T``), by the template of :mod:`beast.tune.kernel_mma`: a block of
``warps_m x warps_n`` warps computes a ``blk_m x blk_n`` tile of C, each warp a ``warp_m x warp_n``
tile of it as ``mma_m x 8 x mma_k`` MMAs whose fragments come from shared memory; ``stages``
shared-memory buffers of ``blk_k``-deep slices of A and B are filled ahead with ``cp.async``
copies of ``vec`` elements each, and their rows are padded by ``pad_a``/``pad_b`` elements
against bank conflicts.  ZGEMM runs each complex MMA as four real ones.

Every limit is a condition below (True rejects), so that every survivor compiles and launches.
A device older than compute capability 8.0 has no FP64 tensor cores: there the space is empty
(condition ``no_fp64_tensor_cores``) and ``beast tune`` says why.

    beast count spaces/gemm_mma.py --device h100
    beast stats spaces/gemm_mma.py --device a100 -D arithmetic=complex
    beast tune spaces/gemm_mma.py --device auto --size 4096 4096 4096 --budget 200
"""
from beast import *

#: which kernel template ``beast tune`` generates for this space (beast.tune.families).
KERNEL_FAMILY = "gemm_mma"

dev = device()
warp_size = dev.warp_size
max_threads_per_block = dev.max_threads_per_block
max_threads_per_multi_processor = dev.max_threads_per_multi_processor
max_blocks_per_multi_processor = dev.max_blocks_per_multi_processor
max_registers_per_thread = dev.max_registers_per_thread
max_regs_per_block = dev.max_regs_per_block
max_registers_per_multi_processor = dev.max_registers_per_multi_processor
max_shmem_per_multi_processor = dev.max_shmem_per_multi_processor
# The kernel asks for its shared memory as dynamic shared memory with the opt-in attribute
# (the tuner sets max_dynamic_shared_size_bytes), so the opt-in limit is the one that holds.
max_shared_mem_per_block = dev.max_shared_mem_per_block_optin

# -- settings: the same names as spaces/gemm.py, so that logs and tools read both alike ----------
precision = setting("precision", "double", choices=["double"],
                    help="FP64 tensor cores: double precision only (use spaces/gemm.py for single)")
arithmetic = setting("arithmetic", "real", choices=["real", "complex"])
trans_a = setting("trans_a", 0, choices=[0, 1])
trans_b = setting("trans_b", 0, choices=[0, 1])

if arithmetic == "complex":
    elem_bytes = 16          # double2: (re, im)
else:
    elem_bytes = 8

# -- iterators ------------------------------------------------------------------------------------
mma_m = iterator([8, 16])             # MMA shape: m8n8k4 (sm_80+), m16n8k4/k8/k16 (sm_90)
mma_k = iterator([4, 8, 16])
warps_m = iterator([1, 2, 4, 8])      # warp layout of the block
warps_n = iterator([1, 2, 4, 8])
warp_m = range(8, 65, 8)              # warp tile
warp_n = range(8, 65, 8)
blk_k = iterator([4, 8, 16, 32])      # k-tile: the depth of one shared-memory stage
stages = range(2, 6)                  # cp.async pipeline depth
vec = iterator([1, 2])                # elements per cp.async copy (8 or 16 bytes)
pad_a = iterator([0, 2, 4])           # shared-memory row padding (elements) against bank conflicts
pad_b = iterator([0, 2, 4])

# -- derived variables ----------------------------------------------------------------------------
threads = warp_size * warps_m * warps_n
blk_m = warps_m * warp_m
blk_n = warps_n * warp_n
# Shared memory follows the layout in device memory, so that cp.async copies contiguous vectors:
# a stage of A is a_se rows of a_ce contiguous elements (a_ld apart), likewise B.
if trans_a == 0:
    a_ce = blk_m
    a_se = blk_k
else:
    a_ce = blk_k
    a_se = blk_m
if trans_b == 0:
    b_ce = blk_k
    b_se = blk_n
else:
    b_ce = blk_n
    b_se = blk_k
a_ld = a_ce + pad_a
b_ld = b_ce + pad_b
smem_bytes = stages * (a_se * a_ld + b_se * b_ld) * elem_bytes
a_copies = a_ce // vec * a_se         # cp.async copies of one stage of A (of all threads)
b_copies = b_ce // vec * b_se

# Registers per thread (32-bit): what the kernel keeps live across its k loop.  Exact: a warp's
# accumulators (warp_m x warp_n doubles over 32 lanes) and one k-step's fragments (warp_m x mma_k
# doubles of A, warp_n x mma_k of B, over 32 lanes); complex doubles the accumulators and keeps
# (re, im) of both operands and -im of the one with fewer fragments.  Fitted: the compiler keeps
# the address and bounds of each of a thread's cp.async copies live (REGS_PER_COPY each), plus
# indices, pointers and counters (REG_OVERHEAD).  Fitted to nvcc 13 for sm_90 on 40 sampled
# survivors (bench/README.md, "The tensor-core space"): the estimate is within 40 registers of
# what ptxas used, and above 255 for all but one of those that spilled.
REG_OVERHEAD = 32
REGS_PER_COPY = 5
if arithmetic == "complex":
    acc_regs = 4 * warp_m * warp_n // warp_size
    frag_regs = 2 * (2 * warp_m + 2 * warp_n + min(warp_m, warp_n)) * mma_k // warp_size
else:
    acc_regs = 2 * warp_m * warp_n // warp_size
    frag_regs = 2 * (warp_m + warp_n) * mma_k // warp_size
copies_per_thread = (a_copies + b_copies) // threads
regs_per_thread = acc_regs + frag_regs + REGS_PER_COPY * copies_per_thread + REG_OVERHEAD
regs_allocated = (regs_per_thread + 7) // 8 * 8     # registers are allocated 8 per thread at a time
regs_per_block = regs_allocated * threads

# Resident blocks per SM; from compute capability 8.0 on the CUDA runtime reserves 1 KB of each
# SM's shared memory per resident block.
SMEM_RESERVED_PER_BLOCK = 1024
blocks_by_regs = max_registers_per_multi_processor // regs_per_block
blocks_by_smem = max_shmem_per_multi_processor // (smem_bytes + SMEM_RESERVED_PER_BLOCK)
blocks_by_threads = max_threads_per_multi_processor // threads
blocks_per_sm = min(min(blocks_by_regs, blocks_by_smem), min(blocks_by_threads, max_blocks_per_multi_processor))


# -- hard conditions: what the device cannot run --------------------------------------------------
@condition(kind="hard")
def no_fp64_tensor_cores():
    # mma.sync with .f64 needs sm_80 or later (PTX ISA, "Warp-level matrix multiply-accumulate").
    return dev.cudamajor < 8


@condition(kind="hard")
def no_such_mma(mma_m, mma_k):
    # f64 MMA shapes: m8n8k4 from sm_80 on; m16n8k4, m16n8k8 and m16n8k16 on sm_90 (Hopper; the
    # kernel emulated on the host and cuBLASDx use them there only).
    if mma_m == 8:
        return mma_k != 4
    return dev.cudamajor != 9


@condition(kind="hard")
def over_max_threads(threads):
    return threads > max_threads_per_block


@condition(kind="hard")
def over_max_shmem(smem_bytes):
    return smem_bytes > max_shared_mem_per_block


@condition(kind="hard")
def over_max_regs_per_thread(regs_per_thread):
    return regs_per_thread > max_registers_per_thread


@condition(kind="hard")
def over_max_regs_per_block(regs_per_block):
    return regs_per_block > max_regs_per_block


@condition(kind="hard")
def no_resident_block(blocks_per_sm):
    return blocks_per_sm < 1


# -- correctness conditions: what the template needs ----------------------------------------------
@condition(kind="correctness")
def mma_does_not_tile_warp(warp_m, mma_m):
    # warp_n is a multiple of 8 (the MMA's n) by construction
    return warp_m % mma_m != 0


@condition(kind="correctness")
def mma_does_not_tile_k(blk_k, mma_k):
    return blk_k % mma_k != 0


@condition(kind="correctness")
def copy_too_wide(vec):
    # cp.async copies 4, 8 or 16 bytes: two doubles or one double complex at most
    return vec * elem_bytes > 16


@condition(kind="correctness")
def misaligned_copies(a_ce, b_ce, a_ld, b_ld, vec):
    # a copy of vec elements must start on a multiple of vec * elem_bytes bytes in shared memory
    # (rows a_ld, b_ld apart) and not straddle a row (a_ce, b_ce)
    return a_ce % vec != 0 or b_ce % vec != 0 or a_ld % vec != 0 or b_ld % vec != 0


@condition(kind="correctness")
def uneven_a_copies(a_copies, threads):
    return a_copies % threads != 0


@condition(kind="correctness")
def uneven_b_copies(b_copies, threads):
    return b_copies % threads != 0


# -- soft conditions: what runs but cannot be fast ------------------------------------------------
MIN_WARPS_PER_SM = 4


@condition(kind="soft")
def idle_sm_quadrants(blocks_per_sm, threads):
    # An SM has four processing blocks, each with its own tensor cores: fewer than four resident
    # warps leave some of them without work.
    return blocks_per_sm * threads < MIN_WARPS_PER_SM * warp_size
