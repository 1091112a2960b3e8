"""Every construct of the language on one small space (see docs/language.md).

    beast count spaces/features.py
    beast count spaces/features.py -D mode=thorough -D limit=5
    beast dag spaces/features.py
"""
from beast import *

# -- settings (-D NAME=VALUE) and a plain constant
mode = setting("mode", "fast", choices=["fast", "thorough"])
limit = setting("limit", 6)
LUCKY = 7

# -- iterators
n = range(1, limit + 1)                          # an expression iterator: 1 .. limit
m = range(n, 0, -2)                              # n, n - 2, ... > 0: a negative step
u = union(iterator([4, 2]), range(1, 4))         # 4, 2, 1, 3: each value once, in order
i = intersection(range(1, 10, 2), range(n, 8))   # the odd values in n .. 7
d = difference(range(0, 5), [0, 2])              # 1, 3, 4


@iterator
def tile(n):                                     # a deferred iterator (a local scope)
    if mode == "fast":
        return n * 2                             # a scalar is a one-value iterator
    return range(n, 2 * n + 1, n)                # n and 2n


# -- derived variables: Python 3 arithmetic (true division is a float), select, min/max
half = n / 2
area = n * tile
score = select(m > 2, area - m, max(area, u) + d)
if mode == "thorough":                           # a module-level if on a setting
    score = score * 2

# -- conditions: True rejects the configuration
too_big = condition(area > 4 * limit, kind="hard")
mixed = condition((half == 1.5) & ~(m == 3) | (u == i), kind="soft")


@condition(kind="correctness")
def unlucky(score, d):
    return score % LUCKY == 0 or 0 < d < 2 and not score > 10
