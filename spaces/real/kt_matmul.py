"""Kernel Tuner's matrix-multiplication example, examples/cuda/matmul.py in
github.com/KernelTuner/kernel_tuner: a shared-memory tiled kernel whose square tiles need
block_size_x == block_size_y * tile_size_y, with Kernel Tuner's implicit limit of 1024 threads
per block."""
from beast import *

MAX_THREADS = 1024

block_size_x = iterator([16, 32, 64])
block_size_y = iterator([1, 2, 4, 8, 16, 32])
tile_size_x = iterator([1, 2, 4, 8])
tile_size_y = iterator([1, 2, 4, 8])

not_square_tile = condition(block_size_x != block_size_y * tile_size_y)
over_max_threads = condition(block_size_x * block_size_y > MAX_THREADS)

KERNEL_TUNER = {
    "tune_params": {
        "block_size_x": [16 * 2 ** i for i in [0, 1, 2]],
        "block_size_y": [2 ** i for i in [0, 1, 2, 3, 4, 5]],
        "tile_size_x": [2 ** i for i in [0, 1, 2, 3]],
        "tile_size_y": [2 ** i for i in [0, 1, 2, 3]],
    },
    "restrictions": ["block_size_x==block_size_y*tile_size_y"],
    "max_threads": MAX_THREADS,
    "block_size_names": None,
}
