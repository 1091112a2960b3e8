"""Fig. 1 of Luszczek et al. 2016: forms of iterator definitions.

An expression iterator over ``range(N)`` and an iterator over an explicit list of values. The list
repeats 1, and an iterator is a loop: every configuration with ``fibonacci == 1`` comes twice.

    beast count spaces/fig01_iterators.py            # 8 * 7 = 56
    beast count spaces/fig01_iterators.py -D N=3     # 21
"""
from beast import *

N = setting("N", 8, help="r takes the values 0 .. N-1")

r = range(N)
fibonacci = iterator([1, 1, 2, 3, 5, 8, 13])
