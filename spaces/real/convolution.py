"""A 2D convolution kernel's search space (15 x 15 filter, 4096 x 4096 image; brute-forced on
an RTX A4000).

Source: the FAIR Benchmark Hub for Auto-Tuning (https://github.com/AutoTuningAssociation/benchmark_hub, MIT
licence): ``convolution_A4000.json.gz`` gives the ``tune_params`` and ``convolution_T1.json``
the constraints (the space of Kernel Tuner's convolution example).  beast keeps exactly the
4,362 configurations that the data holds (``tests/behaviour/test_real_data.py`` checks it).

    beast count spaces/real/convolution.py           # 4362
"""
from beast import *

block_size_x = range(16, 257, 16)
block_size_y = iterator([1, 2, 4, 8, 16])
tile_size_x = range(1, 5)
tile_size_y = range(1, 5)
read_only = range(0, 2)
use_padding = range(0, 2)
use_shmem = range(0, 2)
use_cmem = iterator([1])
filter_height = iterator([15])
filter_width = iterator([15])

SHARED_FLOATS = 12 * 1024      # the kernel's shared-memory tile, in floats

threads = block_size_x * block_size_y
tile_floats = (block_size_x * tile_size_x + filter_width - 1) * (block_size_y * tile_size_y + filter_height - 1)

# T1 constraints (each must hold), written as beast conditions (True rejects)
padding_needs_odd_width = condition((use_padding != 0) & (block_size_x % 32 == 0))
too_many_threads = condition(threads > 1024)
padding_needs_shmem = condition((use_padding != 0) & (use_shmem == 0))
tile_too_big = condition((use_shmem != 0) & (tile_floats >= SHARED_FLOATS))

#: the same space in Kernel Tuner's form (tune_params + restrictions).
KERNEL_TUNER = {
    "tune_params": {
        "block_size_x": [16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256],
        "block_size_y": [1, 2, 4, 8, 16],
        "tile_size_x": [1, 2, 3, 4],
        "tile_size_y": [1, 2, 3, 4],
        "read_only": [0, 1],
        "use_padding": [0, 1],
        "use_shmem": [0, 1],
        "use_cmem": [1],
        "filter_height": [15],
        "filter_width": [15],
    },
    "restrictions": [
        "use_padding==0 or block_size_x % 32 != 0",
        "block_size_x*block_size_y<=1024",
        "use_padding==0 or use_shmem != 0",
        "use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))"
        "*((block_size_y*tile_size_y+(filter_height-1)))) < 12*1024",
    ],
    "max_threads": 1024,
    "block_size_names": None,
}
