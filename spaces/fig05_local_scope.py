"""Fig. 5 of Luszczek et al. 2016: the local lexical scope.

A deferred iterator with a local variable; its values count down (a negative step): for
``trans_a == 0`` they are ``blk_k, blk_k - 1, ..., 1``, otherwise ``blk_m, ..., 1``.

    beast enumerate spaces/fig05_local_scope.py -o a.csv -D trans_a=1
"""
from beast import *

trans_a = setting("trans_a", 0, choices=[0, 1])

blk_m = range(1, 5)
blk_k = range(1, 4)


@iterator
def blk_n_a(blk_m, blk_k):
    x = blk_k
    if trans_a != 0:
        x = blk_m
    return range(x, 0, -1)
