"""The dedispersion kernel's search space (radio astronomy; brute-forced on an RTX A4000).

Source: the FAIR Benchmark Hub for Auto-Tuning (https://github.com/AutoTuningAssociation/benchmark_hub,
MIT licence), file ``dedispersion_A4000.json.gz``: its ``tune_params``, with the restrictions
of Kernel Tuner's dedispersion example (a block holds 32 to 1024 threads; a tile stride only
matters when the tile has more than one element in that dimension).  beast keeps exactly the
11,130 configurations that the data holds (``tests/behaviour/test_real_data.py`` checks it).

    beast count spaces/real/dedispersion.py          # 11130
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

threads = block_size_x * block_size_y * block_size_z

too_few_threads = condition(threads < 32)
too_many_threads = condition(threads > 1024)
useless_stride_x = condition((tile_size_x == 1) & (tile_stride_x != 0))
useless_stride_y = condition((tile_size_y == 1) & (tile_stride_y != 0))

#: the same space in Kernel Tuner's form (tune_params + restrictions).
KERNEL_TUNER = {
    "tune_params": {
        "block_size_x": [1, 2, 4, 8, 16, 32],
        "block_size_y": [32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128,
                         136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256],
        "block_size_z": [1],
        "tile_size_x": [1, 2, 3, 4],
        "tile_size_y": [1, 2, 3, 4, 5, 6, 7, 8],
        "tile_stride_x": [0, 1],
        "tile_stride_y": [0, 1],
        "loop_unroll_factor_channel": [0],
    },
    "restrictions": [
        "32 <= block_size_x * block_size_y * block_size_z <= 1024",
        "tile_size_x > 1 or tile_stride_x == 0",
        "tile_size_y > 1 or tile_stride_y == 0",
    ],
    "max_threads": 1024,
    "block_size_names": None,
}
