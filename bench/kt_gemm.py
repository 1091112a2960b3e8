"""The K40c GEMM space of spaces/gemm.py written the way a Kernel Tuner user must write it:
``tune_params`` (every parameter's full cartesian domain, a list) plus ``restrictions``
(strings, which Kernel Tuner hands to python-constraint2's parser), for
``kernel_tuner.searchspace.Searchspace``.

Settings as in the paper (Fig. 10): double precision, real arithmetic, A and B not transposed.
The derived variables of Fig. 12 have no place in Kernel Tuner, so they are written out inside
each restriction; beast's conditions reject a configuration, Kernel Tuner's restrictions keep
one, so each is negated.  ``max_dim`` scales the profile (max_threads_dim_x/y: 1024 on the K40c)
for the same space on a smaller device; beast gets the same scaled profile.
"""
from __future__ import annotations

PRECISION_FACTOR = 2      # double (Fig. 12: regs and shmem double)
FLOAT_SIZE = 4


def device_facts(profile) -> dict:
    return dict(
        max_threads_per_block=profile.max_threads_per_block,
        max_dim_x=profile.max_threads_dim_x,
        max_dim_y=profile.max_threads_dim_y,
        max_shared_mem_per_block=profile.max_shared_mem_per_block,
        warp_size=profile.warp_size,
        max_regs_per_block=profile.max_regs_per_block,
        max_regs_per_sm=profile.max_registers_per_multi_processor,
        max_shmem_per_sm=profile.max_shmem_per_multi_processor,
        max_blocks_per_sm=profile.max_blocks_per_multi_processor,
        max_regs_per_thread=profile.max_registers_per_thread,
    )


def tune_params(profile) -> dict:
    d = device_facts(profile)
    x, y = d["max_dim_x"], d["max_dim_y"]
    k = min(x, y)
    return {
        "dim_m": list(range(1, x + 1)),
        "dim_n": list(range(1, y + 1)),
        "blk_m": list(range(1, x + 1)),
        "blk_n": list(range(1, y + 1)),
        "blk_k": list(range(1, k + 1)),
        "dim_vec": [1, 2],                      # double real: double, double2
        "vec_mul": [0, 1],
        "dim_m_a": list(range(1, x + 1)),      # <= blk_m // dim_vec
        "dim_n_a": list(range(1, k + 1)),      # <= blk_k
        "dim_m_b": list(range(1, k + 1)),      # <= blk_k // dim_vec
        "dim_n_b": list(range(1, y + 1)),      # <= blk_n
        "tex_a": [0, 1],
        "tex_b": [0, 1],
        "shmem_l1": [0, 1],
        "shmem_banks": [0, 1],
    }


def restrictions(profile) -> list[str]:
    d = device_facts(profile)
    f = PRECISION_FACTOR
    regs_per_thread = f"(blk_m // dim_m) * (blk_n // dim_n) * {f}"
    threads = "dim_m * dim_n"
    regs_per_block = f"{regs_per_thread} * {threads}"
    shmem_per_block = f"blk_k * (blk_m + blk_n) * {FLOAT_SIZE * f}"
    loads_per_block = f"((blk_m // dim_m) + (blk_n // dim_n)) * blk_k // dim_vec * {threads}"
    fmas_per_block = f"(blk_m // dim_m) * (blk_n // dim_n) * blk_k * {threads}"
    return [
        # Fig. 11: the iterators' dependent ranges
        "blk_m % dim_m == 0",
        "blk_n % dim_n == 0",
        "dim_vec == 2 or vec_mul == 0",
        "dim_m_a <= blk_m // dim_vec",
        "dim_n_a <= blk_k",
        "dim_m_b <= blk_k // dim_vec",
        "dim_n_b <= blk_n",
        # Fig. 13: hard conditions (threads per block: Kernel Tuner's own max_threads, below)
        f"{regs_per_thread} <= {d['max_regs_per_thread']}",
        f"{regs_per_block} <= {d['max_regs_per_block']}",
        f"{shmem_per_block} <= {d['max_shared_mem_per_block']}",
        # Fig. 14: soft conditions
        f"min({d['max_regs_per_sm']} // ({regs_per_block}), {d['max_blocks_per_sm']}) * {threads} >= 256",
        f"min({d['max_shmem_per_sm']} // ({shmem_per_block}), {d['max_blocks_per_sm']}) * {threads} >= 256",
        f"{fmas_per_block} >= 2 * {loads_per_block}",
        f"({threads}) % {d['warp_size']} == 0",
        # Fig. 15: correctness conditions (trans_a = trans_b = 0)
        f"dim_m_a * dim_n_a == {threads}",
        f"dim_m_b * dim_n_b == {threads}",
        "blk_m % (dim_m_a * dim_vec) == 0 and blk_k % dim_n_a == 0",
        "blk_k % (dim_m_b * dim_vec) == 0 and blk_n % dim_n_b == 0",
    ]


def searchspace(profile, **kwargs):
    """Build Kernel Tuner's Searchspace (this is the timed part): dim_m x dim_n are the block
    size, so Kernel Tuner adds its own dim_m * dim_n <= max_threads (Fig. 13's first condition)."""
    from kernel_tuner.searchspace import Searchspace
    return Searchspace(tune_params(profile), restrictions(profile),
                       profile.max_threads_per_block, block_size_names=["dim_m", "dim_n"],
                       **kwargs)


def scaled_profile(max_dim: int, name: str = "k40c"):
    """The K40c profile with max_threads_dim_x = max_threads_dim_y = max_dim."""
    from beast.lang.devices import get_profile
    return get_profile(name).replace(max_threads_dim_x=max_dim, max_threads_dim_y=max_dim)


PARAM_ORDER = ("dim_m", "dim_n", "blk_m", "blk_n", "blk_k", "dim_vec", "vec_mul", "dim_m_a",
               "dim_n_a", "dim_m_b", "dim_n_b", "tex_a", "tex_b", "shmem_l1", "shmem_banks")


def main(argv=None):
    """``python3 bench/kt_gemm.py [MAX_DIM]``: time Kernel Tuner's constructor on the K40c GEMM
    space scaled to MAX_DIM (default 1024: the full K40c space; wrap it in ``timeout``)."""
    import sys
    import time
    args = sys.argv[1:] if argv is None else argv
    dim = int(args[0]) if args else 1024
    profile = scaled_profile(dim)
    t0 = time.perf_counter()
    ss = searchspace(profile)
    print(f"max dim {dim}: Kernel Tuner keeps {ss.size} configurations in "
          f"{time.perf_counter() - t0:.2f} s", flush=True)


if __name__ == "__main__":
    main()
