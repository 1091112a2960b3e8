"""Dedispersion (a radio-astronomy kernel): the search space of the Kernel Tuner search-space paper
(Willemsen et al., "Efficient Construction of Large Search Spaces for Auto-Tuning", ICPP 2025),
as defined in the paper's benchmark set (benvanwerkhoven/benchmark_kernels, dedisp/dedispersion.py).
Used by bench/bench_cold.py; 11,130 configurations survive.
"""
from beast import *

block_size_x = iterator([1, 2, 4, 8, 16, 32])
block_size_y = range(32, 257, 8)
block_size_z = iterator([1])
tile_size_x = range(1, 5)
tile_size_y = range(1, 9)
tile_stride_x = range(0, 2)
tile_stride_y = range(0, 2)
loop_unroll_factor_channel = iterator([0])

threads = block_size_x * block_size_y
block_too_small = condition(threads < 32)
block_too_large = condition(threads > 1024)
useless_stride_x = condition((tile_size_x <= 1) & (tile_stride_x != 0))
useless_stride_y = condition((tile_size_y <= 1) & (tile_stride_y != 0))
