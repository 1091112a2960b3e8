"""Fig. 4 of Luszczek et al. 2016: the global lexical scope.

Iterators are module-level names; ``range()`` takes constants and other iterators. The figure uses
``dim_m`` without defining it: here it is 1 .. 8.

    beast count spaces/fig04_global_scope.py         # 8 * (64 + 32 + 21 + 16 + 12 + 10 + 9 + 8)
"""
from beast import *

WARP_SIZE = 32
MAX_THREADS = 256
MAX_M = 64

dim = range(WARP_SIZE, MAX_THREADS + 1, WARP_SIZE)
dim_m = range(1, 9)
blk_m = range(dim_m, MAX_M + 1, dim_m)
