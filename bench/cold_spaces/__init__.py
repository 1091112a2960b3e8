"""Two real tuning spaces of the Kernel Tuner search-space paper (Willemsen et al., ICPP 2025),
written once in beast (``dedispersion.py``, ``hotspot.py``) and once the Kernel Tuner way
(:data:`KERNEL_TUNER`: ``tune_params`` and restriction strings, as in the paper's benchmark set),
for ``bench/bench_cold.py``."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

#: name -> (beast space file, device, expected survivors)
SPACES = {
    "dedispersion": (os.path.join(HERE, "dedispersion.py"), None, 11130),
    "hotspot": (os.path.join(HERE, "hotspot.py"), None, 349853),
}


def _dedispersion():
    tune_params = {
        "block_size_x": [1, 2, 4, 8] + [16 * i for i in range(1, 3)],
        "block_size_y": [8 * i for i in range(4, 33)],
        "block_size_z": [1],
        "tile_size_x": [i for i in range(1, 5)],
        "tile_size_y": [i for i in range(1, 9)],
        "tile_stride_x": [0, 1],
        "tile_stride_y": [0, 1],
        "loop_unroll_factor_channel": [0],
    }
    restrictions = ["32 <= block_size_x * block_size_y <= 1024",
                    "tile_size_x > 1 or tile_stride_x == 0",
                    "tile_size_y > 1 or tile_stride_y == 0"]
    return tune_params, restrictions


def _hotspot():
    tune_params = {
        "grid_width": [4096], "grid_height": [4096],
        "block_size_x": [1, 2, 4, 8, 16] + [32 * i for i in range(1, 33)],
        "block_size_y": [2 ** i for i in range(6)],
        "tile_size_x": [i for i in range(1, 11)],
        "tile_size_y": [i for i in range(1, 11)],
        "temporal_tiling_factor": [i for i in range(1, 11)],
        "max_tfactor": [10],
        "loop_unroll_factor_t": [i for i in range(1, 11)],
        "sh_power": [0, 1],
        "blocks_per_sm": [0, 1, 2, 3, 4],
    }
    shared = ("(block_size_x*tile_size_x + temporal_tiling_factor * 2) * "
              "(block_size_y*tile_size_y + temporal_tiling_factor * 2) * (2+sh_power) * 4")
    restrictions = ["block_size_x*block_size_y >= 32",
                    "temporal_tiling_factor % loop_unroll_factor_t == 0",
                    "block_size_x*block_size_y <= 1024",
                    f"{shared} <= 49152",
                    f"blocks_per_sm == 0 or (({shared}) * blocks_per_sm <= 102400)"]
    return tune_params, restrictions


#: name -> function returning (tune_params, restrictions) for kernel_tuner's Searchspace
KERNEL_TUNER = {"dedispersion": _dedispersion, "hotspot": _hotspot}
