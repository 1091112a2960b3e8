"""CLBlast's XgemmDirect kernel (GEMM without pre/post-processing), tuner variation V=2:
parameters and constraints of src/tuning/kernels/xgemm_direct.hpp in
github.com/CNugteren/CLBlast (XgemmDirectGetTunerSettings / XgemmDirectSetConstraints /
XgemmDirectComputeLocalMemSize), local memory limited to 48 KiB in single precision and the
work-group (MDIMCD x NDIMCD threads) to 1024."""
from beast import *

LOCAL_MEMORY = 49152
BYTES = 4            # single precision
MAX_THREADS = 1024

WGD = iterator([8, 16, 32, 64])        # tile size in M, N and K
MDIMCD = iterator([8, 16, 32])         # threads per work-group in M
NDIMCD = iterator([8, 16, 32])         # threads per work-group in N
MDIMAD = iterator([8, 16, 32])         # re-shaped tile of A
NDIMBD = iterator([8, 16, 32])         # re-shaped tile of B
KWID = iterator([2, 8, 16])            # unroll factor of the WGD loop
VWMD = iterator([1, 2, 4, 8])          # vector width of A and C
VWND = iterator([1, 2, 4, 8])          # vector width of B
PADA = range(0, 2)                     # padding of A in local memory
PADB = range(0, 2)                     # padding of B in local memory

wgd_not_unrollable = condition(WGD % KWID != 0)
mwid_not_integer = condition(WGD % (MDIMCD * VWMD) != 0)
nwid_not_integer = condition(WGD % (NDIMCD * VWND) != 0)
mwiad_not_integer = condition(WGD % (MDIMAD * VWMD) != 0)
nwibd_not_integer = condition(WGD % (NDIMBD * VWND) != 0)
kdimad_not_a_divisor = condition(WGD % ((MDIMCD * NDIMCD) // MDIMAD) != 0)
kdimbd_not_a_divisor = condition(WGD % ((MDIMCD * NDIMCD) // NDIMBD) != 0)
over_local_memory = condition(BYTES * (WGD * (WGD + PADA) + WGD * (WGD + PADB)) > LOCAL_MEMORY)
over_max_threads = condition(MDIMCD * NDIMCD > MAX_THREADS)

KERNEL_TUNER = {
    "tune_params": {
        "WGD": [8, 16, 32, 64], "MDIMCD": [8, 16, 32], "NDIMCD": [8, 16, 32],
        "MDIMAD": [8, 16, 32], "NDIMBD": [8, 16, 32], "KWID": [2, 8, 16],
        "VWMD": [1, 2, 4, 8], "VWND": [1, 2, 4, 8], "PADA": [0, 1], "PADB": [0, 1],
    },
    "restrictions": [
        "WGD % KWID == 0",
        "WGD % (MDIMCD * VWMD) == 0",
        "WGD % (NDIMCD * VWND) == 0",
        "WGD % (MDIMAD * VWMD) == 0",
        "WGD % (NDIMBD * VWND) == 0",
        "WGD % ((MDIMCD * NDIMCD) // MDIMAD) == 0",
        "WGD % ((MDIMCD * NDIMCD) // NDIMBD) == 0",
        f"{BYTES} * (WGD * (WGD + PADA) + WGD * (WGD + PADB)) <= {LOCAL_MEMORY}",
    ],
    "max_threads": MAX_THREADS,
    "block_size_names": ["MDIMCD", "NDIMCD"],
}
