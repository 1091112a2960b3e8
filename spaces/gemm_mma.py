"""A second GEMM kernel family: FP64 tensor cores (warp-level ``mma.sync ... .f64``), sm_80 and later.

Not in the paper.  DGEMM and ZGEMM, ``C <- alpha * op(A) * op(B) + beta * C`` (column-major,
``op(X)`` is ``X`` or ``X^T``), by the template of :mod:`beast.tune.kernels.mma`: a block of
``warps_m x warps_n`` warps computes a ``blk_m x blk_n`` tile of C, each warp a ``warp_m x warp_n``
tile of it as ``mma_m x 8 x mma_k`` MMAs whose fragments come from shared memory; ``stages``
shared-memory buffers of ``blk_k``-deep slices of A and B are filled ahead with ``cp.async``
copies of ``vec`` elements each, and their rows are padded by ``pad_a``/``pad_b`` elements
against bank conflicts.  ``swizzle=1`` instead stores the stages unpadded with their 32-byte
chunks XOR-permuted within each 128-byte bank row, so that copies and fragment loads are free of
bank conflicts.  ``frag_buf=2`` double-buffers the fragments: a warp loads the next k-step's
(across the k-tile's barrier, the next stage's first) before issuing this k-step's MMAs.  ZGEMM
runs each complex MMA as four real ones.

Every limit is a condition below (True rejects), so that every survivor compiles and launches.
A device older than compute capability 8.0 has no FP64 tensor cores: there the space is empty
(condition ``no_fp64_tensor_cores``) and ``beast tune`` says why.

    beast count spaces/gemm_mma.py --device h100
    beast stats spaces/gemm_mma.py --device a100 -D arithmetic=complex
    beast tune spaces/gemm_mma.py --device auto --size 4096 4096 4096 --budget 200
"""
from beast import *

#: which kernel template ``beast tune`` generates for this space (beast.tune.kernels.families).
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
swizzle = iterator([0, 1])            # 1: XOR-swizzled stages (no padding) instead of padded rows
frag_buf = iterator([1, 2])           # fragment buffers: 2 loads the next k-step's before the MMAs

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

# Registers per thread (32-bit): a lower bound, not an estimate.  Registers and spills are facts
# that only ptxas knows (beast.tune.model.compiler_facts reads them; the tuner records them and cuts a
# spilling kernel early), so the space prunes only what certainly cannot fit: across the k loop a
# thread keeps its accumulators live (warp_m x warp_n doubles over 32 lanes; complex: re and im),
# and at each MMA also that MMA's operands (mma_m x mma_k doubles of A, 8 x mma_k of B over 32
# lanes; a second fragment buffer or a whole k-step's fragments only add to this), plus
# REG_FLOOR for pointers, indices and counters.  REG_FLOOR lies well below the fewest ptxas used
# beyond those on calibration samples of survivors (nvcc 13, sm_80 and sm_90, real and complex,
# every transpose; the figures are in bench/gpu.md, "The tensor-core space"), so that the bound
# stays at or below what ptxas allocates for any configuration that does not spill.
REG_FLOOR = 16
if arithmetic == "complex":
    acc_regs = 4 * warp_m * warp_n // warp_size
else:
    acc_regs = 2 * warp_m * warp_n // warp_size
mma_operand_regs = 2 * (mma_m * mma_k + 8 * mma_k) // warp_size
min_regs_per_thread = acc_regs + mma_operand_regs + REG_FLOOR
min_regs_allocated = (min_regs_per_thread + 7) // 8 * 8   # registers are allocated 8 per thread at a time
min_regs_per_block = min_regs_allocated * threads

# Resident blocks per SM, at most (registers by their lower bound); from compute capability 8.0 on
# the CUDA runtime reserves 1 KB of each SM's shared memory per resident block.
SMEM_RESERVED_PER_BLOCK = 1024
blocks_by_regs = max_registers_per_multi_processor // min_regs_per_block
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
def over_max_regs_per_thread(min_regs_per_thread):
    # even the lower bound exceeds what a thread may have: the accumulators would spill
    return min_regs_per_thread > max_registers_per_thread


@condition(kind="hard")
def over_max_regs_per_block(min_regs_per_block):
    # The kernel has __launch_bounds__(NT): ptxas keeps a block's registers within the SM's file
    # (it spills instead), so every survivor launches.  What this rejects is a block that would
    # certainly spill: the lower bound does not fit its threads' share of the file.
    return min_regs_per_block > max_regs_per_block


@condition(kind="hard")
def no_resident_block(blocks_per_sm):
    # blocks_per_sm is an upper bound: this rejects only a block that certainly fits no SM
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


@condition(kind="correctness")
def swizzle_with_padding(swizzle, pad_a, pad_b):
    # the swizzle spreads a stage's rows over the banks itself, on rows exactly a_ce, b_ce apart
    return swizzle == 1 and (pad_a != 0 or pad_b != 0)


@condition(kind="correctness")
def swizzle_row_extent(swizzle, a_ce, b_ce):
    # the swizzle permutes 32-byte chunks within 128-byte bank rows: a stage's rows must fill
    # whole bank rows (a multiple of 128 bytes) or divide one
    line = 128 // elem_bytes
    return swizzle == 1 and ((a_ce % line != 0 and line % a_ce != 0) or (b_ce % line != 0 and line % b_ce != 0))


# -- soft conditions: what runs but cannot be fast ------------------------------------------------
MIN_WARPS_PER_SM = 4


@condition(kind="soft")
def idle_sm_quadrants(blocks_per_sm, threads):
    # An SM has four processing blocks, each with its own tensor cores: fewer than four resident
    # warps leave some of them without work.  With the upper bound of blocks_per_sm this rejects
    # only what certainly leaves them idle; the compiler's registers can leave fewer blocks still.
    return blocks_per_sm * threads < MIN_WARPS_PER_SM * warp_size
