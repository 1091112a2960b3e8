"""CLBlast's Xgemm kernel as Kernel Tuner tunes it (single precision, 4096 x 4096 x 4096;
brute-forced on an RTX 3090 and an RTX 2080 Ti).

Source: the FAIR Benchmark Hub for Auto-Tuning (https://github.com/AutoTuningAssociation/benchmark_hub,
MIT licence), ``currently_unused/kernels/gemm.py`` (the parameters and restrictions) and the data
``cachefiles/KernelTuner data/gemm/RTX_3090.json.gz`` and ``RTX_2080_Ti.json.gz``.  It is the
space of ``clblast_xgemm.py`` (CLBlast's own tuner) with KWG fixed to 32 and no strided access
(STRM = STRN = 0), and ``PRECISION`` as a tunable parameter of one value, as the data records
it.  beast keeps exactly the 17,956 configurations that the data holds
(``tests/behaviour/test_real_data.py`` checks it).

    beast count spaces/real/kt_gemm.py               # 17956
"""
from beast import *

MAX_THREADS = 1024         # Kernel Tuner's default limit on MDIMC x NDIMC (its block_size_names)

MWG = iterator([16, 32, 64, 128])      # tile size in M
NWG = iterator([16, 32, 64, 128])      # tile size in N
KWG = iterator([32])                   # tile size in K
MDIMC = iterator([8, 16, 32])          # threads per work-group in M
NDIMC = iterator([8, 16, 32])          # threads per work-group in N
MDIMA = iterator([8, 16, 32])          # re-shaped tile of A
NDIMB = iterator([8, 16, 32])          # re-shaped tile of B
KWI = iterator([2])                    # unroll factor of the KWG loop
VWM = iterator([1, 2, 4, 8])           # vector width of A and C
VWN = iterator([1, 2, 4, 8])           # vector width of B
STRM = iterator([0])                   # strided access in M
STRN = iterator([0])                   # strided access in N
SA = range(0, 2)                       # A in local memory
SB = range(0, 2)                       # B in local memory
PRECISION = iterator([32])             # single precision (a compile-time constant of the kernel)

kwg_not_unrollable = condition(KWG % KWI != 0)
mwi_not_integer = condition(MWG % (MDIMC * VWM) != 0)
nwi_not_integer = condition(NWG % (NDIMC * VWN) != 0)
mwia_not_integer = condition(MWG % (MDIMA * VWM) != 0)
nwib_not_integer = condition(NWG % (NDIMB * VWN) != 0)
# the source divides with /: MDIMC * NDIMC (64 .. 1024) is always a multiple of MDIMA and NDIMB
kdima_not_a_divisor = condition(KWG % ((MDIMC * NDIMC) // MDIMA) != 0)
kdimb_not_a_divisor = condition(KWG % ((MDIMC * NDIMC) // NDIMB) != 0)
over_max_threads = condition(MDIMC * NDIMC > MAX_THREADS)

#: the same space in Kernel Tuner's form (tune_params + restrictions), as the source writes it.
KERNEL_TUNER = {
    "tune_params": {
        "MWG": [16, 32, 64, 128], "NWG": [16, 32, 64, 128], "KWG": [32],
        "MDIMC": [8, 16, 32], "NDIMC": [8, 16, 32], "MDIMA": [8, 16, 32], "NDIMB": [8, 16, 32],
        "KWI": [2], "VWM": [1, 2, 4, 8], "VWN": [1, 2, 4, 8],
        "STRM": [0], "STRN": [0], "SA": [0, 1], "SB": [0, 1], "PRECISION": [32],
    },
    "restrictions": [
        "KWG % KWI == 0",
        "MWG % (MDIMC * VWM) == 0",
        "NWG % (NDIMC * VWN) == 0",
        "MWG % (MDIMA * VWM) == 0",
        "NWG % (NDIMB * VWN) == 0",
        "KWG % ((MDIMC * NDIMC)/MDIMA) == 0",
        "KWG % ((MDIMC * NDIMC)/NDIMB) == 0",
    ],
    "max_threads": MAX_THREADS,
    "block_size_names": ["MDIMC", "NDIMC"],      # the source adds block_size_z, as Kernel Tuner does
}
