"""Hotspot (Rodinia's thermal stencil with temporal tiling): the search space of the Kernel Tuner
search-space paper (Willemsen et al., ICPP 2025), as defined for its benchmarks
(benvanwerkhoven/hotspot_kernel, hotspot.py), device limits of an A4000. Used by
bench/bench_cold.py; 349,853 configurations survive.
"""
from beast import *

MAX_THREADS = 1024
MAX_SHARED_MEMORY_PER_BLOCK = 49152
MAX_SHARED_MEMORY = 102400

grid_width = iterator([4096])
grid_height = iterator([4096])
block_size_x = iterator([1, 2, 4, 8, 16] + [32 * i for i in range(1, 33)])
block_size_y = iterator([1, 2, 4, 8, 16, 32])
tile_size_x = range(1, 11)
tile_size_y = range(1, 11)
temporal_tiling_factor = range(1, 11)
max_tfactor = iterator([10])
loop_unroll_factor_t = range(1, 11)
sh_power = range(0, 2)
blocks_per_sm = range(0, 5)

threads = block_size_x * block_size_y
shared = ((block_size_x * tile_size_x + temporal_tiling_factor * 2)
          * (block_size_y * tile_size_y + temporal_tiling_factor * 2) * (2 + sh_power) * 4)
too_few_threads = condition(threads < 32)
unroll_not_divisor = condition(temporal_tiling_factor % loop_unroll_factor_t != 0)
too_many_threads = condition(threads > MAX_THREADS)
too_much_shared = condition(shared > MAX_SHARED_MEMORY_PER_BLOCK)
too_much_shared_per_sm = condition((blocks_per_sm != 0) & (shared * blocks_per_sm > MAX_SHARED_MEMORY))
