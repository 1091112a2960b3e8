"""Kernel Tuner's expdist example (the ExpDist kernel of a particle-localisation microscopy
pipeline), examples/cuda/expdist.py in github.com/KernelTuner/kernel_tuner: its first kernel's
parameters, with Kernel Tuner's implicit limit of 1024 threads per block as the only
restriction."""
from beast import *

MAX_THREADS = 1024

block_size_x = iterator([32, 64, 128, 256, 512])
block_size_y = iterator([1, 2, 4, 8, 16, 32])
tile_size_x = iterator([1, 2, 4, 8])
tile_size_y = iterator([1, 2, 4, 8])
use_shared_mem = range(0, 2)

over_max_threads = condition(block_size_x * block_size_y > MAX_THREADS)

KERNEL_TUNER = {
    "tune_params": {
        "block_size_x": [2 ** i for i in [5, 6, 7, 8, 9]],
        "block_size_y": [2 ** i for i in [0, 1, 2, 3, 4, 5]],
        "tile_size_x": [2 ** i for i in [0, 1, 2, 3]],
        "tile_size_y": [2 ** i for i in [0, 1, 2, 3]],
        "use_shared_mem": [0, 1],
    },
    "restrictions": [],
    "max_threads": MAX_THREADS,
    "block_size_names": None,
}
