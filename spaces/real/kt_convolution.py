"""Kernel Tuner's older 2D convolution space (8 parameters: 15 x 15 filter, 4096 x 4096 image;
brute-forced on an RTX 3090).

Source: the FAIR Benchmark Hub for Auto-Tuning (https://github.com/AutoTuningAssociation/benchmark_hub,
MIT licence), ``kernels/convolution.py`` (the parameters and restrictions) and the data
``cachefiles/KernelTuner data/convolution/RTX_3090.json.gz``.  It is the older of the hub's two
convolution spaces; ``convolution.py`` here is the newer one (block sizes in steps of 16, shared
and constant memory switches).
beast keeps exactly the 6,768 configurations that the data holds (``tests/behaviour/test_real_data.py``
checks it).

    beast count spaces/real/kt_convolution.py        # 6768
"""
from beast import *

MIN_THREADS = 64
MAX_THREADS = 1024

block_size_x = iterator([1, 2, 4, 8, 16, 32, 48, 64, 96, 112, 128])
block_size_y = iterator([1, 2, 4, 8, 16, 32])
filter_height = iterator([15])
filter_width = iterator([15])
read_only = range(0, 2)
tile_size_x = range(1, 9)
tile_size_y = range(1, 9)
use_padding = range(0, 2)

threads = block_size_x * block_size_y

too_few_threads = condition(threads < MIN_THREADS)
too_many_threads = condition(threads > MAX_THREADS)
tile_too_big = condition(tile_size_x * tile_size_y >= 30)

#: the same space in Kernel Tuner's form (tune_params + restrictions).
KERNEL_TUNER = {
    "tune_params": {
        "block_size_x": [1, 2, 4, 8, 16, 32, 48, 64, 96, 112, 128],
        "block_size_y": [1, 2, 4, 8, 16, 32],
        "filter_height": [15],
        "filter_width": [15],
        "read_only": [0, 1],
        "tile_size_x": [1, 2, 3, 4, 5, 6, 7, 8],
        "tile_size_y": [1, 2, 3, 4, 5, 6, 7, 8],
        "use_padding": [0, 1],
    },
    "restrictions": ["block_size_x*block_size_y>=64", "block_size_x*block_size_y<=1024",
                     "tile_size_x*tile_size_y<30"],
    "max_threads": MAX_THREADS,
    "block_size_names": None,
}
