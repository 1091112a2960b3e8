"""The point-in-polygon kernel (pnpoly, Ben van Werkhoven's host/device-tuned CUDA code) as
Kernel Tuner tunes it: 20 million points, brute-forced on an RTX 3090 and an RTX 2080 Ti.

Source: the FAIR Benchmark Hub for Auto-Tuning (https://github.com/AutoTuningAssociation/benchmark_hub,
MIT licence), ``currently_unused/kernels/pnpoly.py`` (the parameters; it has no restrictions)
and the data ``cachefiles/pnpoly/RTX_3090.json.gz`` and ``RTX_2080_Ti.json.gz``.  Every
combination is a configuration: beast keeps exactly the 4,092 that the data holds
(``tests/behaviour/test_real_data.py`` checks it).

    beast count spaces/real/kt_pnpoly.py             # 4092
"""
from beast import *

MAX_THREADS = 1024         # Kernel Tuner's default limit on block_size_x (never reached here)

between_method = range(0, 4)           # four variants of the kernel's edge test (between_method)
block_size_x = range(32, 993, 32)      # threads per block, a multiple of 32
tile_size = union(iterator([1]), range(2, 21, 2))   # points per thread
use_method = range(0, 3)               # three variants of the kernel (the source's use_method)

over_max_threads = condition(block_size_x > MAX_THREADS)

#: the same space in Kernel Tuner's form (tune_params + restrictions).
KERNEL_TUNER = {
    "tune_params": {
        "between_method": [0, 1, 2, 3],
        "block_size_x": [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480,
                         512, 544, 576, 608, 640, 672, 704, 736, 768, 800, 832, 864, 896, 928, 960, 992],
        "tile_size": [1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20],
        "use_method": [0, 1, 2],
    },
    "restrictions": [],
    "max_threads": MAX_THREADS,
    "block_size_names": None,
}
