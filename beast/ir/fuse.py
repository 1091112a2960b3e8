"""Which perfectly nested loops over constant values a target should run as one loop.

LuaJIT's trace recorder cannot compile a loop of 1 or 2 iterations ("leaving loop in root
trace": the loop exits before it loops back), and a nest of short loops defeats it at every level
until it blacklists them and interprets the nest (bench/README.md, section 6). So a printer for
such a target runs a chain of perfectly nested loops over constants, the innermost of them short,
as one loop over their combinations (each variable read from a constant table), and a loop of one
value as a block. This module decides which loops form such a chain; the printer only prints it.
"""
from __future__ import annotations

from ..expr.sequences import RangeSeq, ValuesSeq
from .constants import constant_values
from .nest import Check, Loop

FUSE_MAX = 256          # iterations of a fused loop (a table of that many values per variable)
FUSE_SHORT = 8          # fuse when the chain's innermost loop of 2+ values has fewer values


def loop_constants(seq, limit):
    """The values of a loop over compile-time integer constants strictly inside (-limit, limit),
    at most FUSE_MAX of them, or None."""
    if not isinstance(seq, (ValuesSeq, RangeSeq)):
        return None
    vals = constant_values(seq)
    if not vals or len(vals) > FUSE_MAX or any(type(v) is not int or abs(v) >= limit for v in vals):
        return None
    return tuple(vals)


def fusable(loop: Loop, limit):
    """[(loop, values), ...]: the loops from ``loop`` down to run as one (``loop`` alone when it
    has one value: a block), or None."""
    chain, cur = [], loop
    while True:
        vals = loop_constants(cur.seq, limit)
        if vals is None:
            break
        chain.append((cur, vals))
        if len(cur.body) == 1 and isinstance(cur.body[0], Loop):
            cur = cur.body[0]
            continue
        break
    # a check that leaves the innermost loop would have to skip to the next outer value
    while chain and len(chain[-1][1]) > 1 and any(isinstance(st, Check) and st.exit != "continue"
                                                  for st in chain[-1][0].body):
        chain.pop()
    total = 1
    for _, vals in chain:
        total *= len(vals)
    lengths = [len(vals) for _, vals in chain if len(vals) > 1]
    if len(chain) < 2 or total > FUSE_MAX or not lengths or lengths[-1] >= FUSE_SHORT:
        return chain[:1] if chain and len(chain[0][1]) == 1 else None
    return chain
