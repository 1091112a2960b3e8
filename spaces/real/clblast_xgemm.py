"""CLBlast's Xgemm kernel 0, tuner variation V=2 (the large, randomly sampled set): parameters
and constraints of src/tuning/kernels/xgemm.hpp in github.com/CNugteren/CLBlast
(XgemmGetTunerSettings / XgemmSetConstraints / XgemmComputeLocalMemSize). The local memory
(SA*KWG*MWG + SB*KWG*NWG floats) is limited to 48 KiB, single precision, as CLTune checks it
against the device's local memory; the work-group (MDIMC x NDIMC threads) to 1024."""
from beast import *

LOCAL_MEMORY = 49152
BYTES = 4            # single precision
MAX_THREADS = 1024

MWG = iterator([16, 32, 64, 128])      # tile size in M
NWG = iterator([16, 32, 64, 128])      # tile size in N
KWG = iterator([16, 32])               # tile size in K
MDIMC = iterator([8, 16, 32])          # threads per work-group in M
NDIMC = iterator([8, 16, 32])          # threads per work-group in N
MDIMA = iterator([8, 16, 32])          # re-shaped tile of A
NDIMB = iterator([8, 16, 32])          # re-shaped tile of B
KWI = iterator([2])                    # unroll factor of the KWG loop
VWM = iterator([1, 2, 4, 8])           # vector width of A and C
VWN = iterator([1, 2, 4, 8])           # vector width of B
STRM = range(0, 2)                     # strided access in M
STRN = range(0, 2)                     # strided access in N
SA = range(0, 2)                       # A in local memory
SB = range(0, 2)                       # B in local memory

kwg_not_unrollable = condition(KWG % KWI != 0)
mwi_not_integer = condition(MWG % (MDIMC * VWM) != 0)
nwi_not_integer = condition(NWG % (NDIMC * VWN) != 0)
mwia_not_integer = condition(MWG % (MDIMA * VWM) != 0)
nwib_not_integer = condition(NWG % (NDIMB * VWN) != 0)
kdima_not_a_divisor = condition(KWG % ((MDIMC * NDIMC) // MDIMA) != 0)
kdimb_not_a_divisor = condition(KWG % ((MDIMC * NDIMC) // NDIMB) != 0)
over_local_memory = condition((SA * KWG * MWG + SB * KWG * NWG) * BYTES > LOCAL_MEMORY)
over_max_threads = condition(MDIMC * NDIMC > MAX_THREADS)

KERNEL_TUNER = {
    "tune_params": {
        "MWG": [16, 32, 64, 128], "NWG": [16, 32, 64, 128], "KWG": [16, 32],
        "MDIMC": [8, 16, 32], "NDIMC": [8, 16, 32], "MDIMA": [8, 16, 32], "NDIMB": [8, 16, 32],
        "KWI": [2], "VWM": [1, 2, 4, 8], "VWN": [1, 2, 4, 8],
        "STRM": [0, 1], "STRN": [0, 1], "SA": [0, 1], "SB": [0, 1],
    },
    "restrictions": [
        "KWG % KWI == 0",
        "MWG % (MDIMC * VWM) == 0",
        "NWG % (NDIMC * VWN) == 0",
        "MWG % (MDIMA * VWM) == 0",
        "NWG % (NDIMB * VWN) == 0",
        "KWG % ((MDIMC * NDIMC) // MDIMA) == 0",
        "KWG % ((MDIMC * NDIMC) // NDIMB) == 0",
        f"(SA * KWG * MWG + SB * KWG * NWG) * {BYTES} <= {LOCAL_MEMORY}",
    ],
    "max_threads": MAX_THREADS,
    "block_size_names": ["MDIMC", "NDIMC"],
}
