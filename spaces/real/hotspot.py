"""The hotspot stencil (Rodinia's thermal simulation, temporal tiling) as tuned in
Willemsen et al., "Efficient Construction of Large Search Spaces for Auto-Tuning", ICPP 2025.
The space is the one of github.com/benvanwerkhoven/benchmark_kernels hotspot/hotspot.py, also
Kernel Tuner's test/test_searchspace.py::test_full_searchspace (KernelTuner/kernel_tuner), which
asserts its 349,853 configurations (NVIDIA A40 limits: 1024 threads, 48 KiB of shared memory per
block, 100 KiB per SM)."""
import builtins

from beast import *

MAX_THREADS = 1024
MAX_SHARED_MEMORY_PER_BLOCK = 49152
MAX_SHARED_MEMORY = 102400

block_size_x = union(iterator([1, 2, 4, 8, 16]), range(32, 32 * 32 + 1, 32))
block_size_y = iterator([1, 2, 4, 8, 16, 32])
tile_size_x = range(1, 11)
tile_size_y = range(1, 11)
temporal_tiling_factor = range(1, 11)
max_tfactor = iterator([10])
loop_unroll_factor_t = range(1, 11)
sh_power = range(0, 2)
blocks_per_sm = range(0, 5)

threads = block_size_x * block_size_y
too_few_threads = condition(threads < 32)
too_many_threads = condition(threads > MAX_THREADS)
unroll_not_a_divisor = condition(temporal_tiling_factor % loop_unroll_factor_t != 0)

# shared memory of one block: the tile plus its halo, (2 + sh_power) arrays of floats
shared_memory = ((block_size_x * tile_size_x + temporal_tiling_factor * 2)
                 * (block_size_y * tile_size_y + temporal_tiling_factor * 2) * (2 + sh_power) * 4)
over_shared_memory_per_block = condition(shared_memory > MAX_SHARED_MEMORY_PER_BLOCK)


@condition
def over_shared_memory_per_sm(blocks_per_sm, shared_memory):
    return blocks_per_sm != 0 and shared_memory * blocks_per_sm > MAX_SHARED_MEMORY


KERNEL_TUNER = {
    "tune_params": {
        "block_size_x": [1, 2, 4, 8, 16] + [32 * i for i in builtins.range(1, 33)],
        "block_size_y": [2 ** i for i in builtins.range(6)],
        "tile_size_x": list(builtins.range(1, 11)),
        "tile_size_y": list(builtins.range(1, 11)),
        "temporal_tiling_factor": list(builtins.range(1, 11)),
        "max_tfactor": [10],
        "loop_unroll_factor_t": list(builtins.range(1, 11)),
        "sh_power": [0, 1],
        "blocks_per_sm": [0, 1, 2, 3, 4],
    },
    "restrictions": [
        "block_size_x*block_size_y >= 32",
        "temporal_tiling_factor % loop_unroll_factor_t == 0",
        f"block_size_x*block_size_y <= {MAX_THREADS}",
        "(block_size_x*tile_size_x + temporal_tiling_factor * 2) * (block_size_y*tile_size_y + "
        f"temporal_tiling_factor * 2) * (2+sh_power) * 4 <= {MAX_SHARED_MEMORY_PER_BLOCK}",
        "blocks_per_sm == 0 or (((block_size_x*tile_size_x + temporal_tiling_factor * 2) * "
        "(block_size_y*tile_size_y + temporal_tiling_factor * 2) * (2+sh_power) * 4) * "
        f"blocks_per_sm <= {MAX_SHARED_MEMORY})",
    ],
    "max_threads": MAX_THREADS,
    "block_size_names": None,
}
