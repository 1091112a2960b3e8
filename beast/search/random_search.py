"""``random``: uniform random search without replacement."""
from __future__ import annotations

import numpy as np

from .base import Strategy


class RandomSearch(Strategy):
    """Proposes configurations in one random order of the pool fixed by the seed, skipping
    those already told (the baseline every other strategy must beat).  The order does not
    depend on what it was told, so a resumed run measures exactly what the uninterrupted run
    would have.  Over a sampled pool (large spaces) this is still uniform over the survivors.
    """

    name = "random"

    def __init__(self, pool, seed=0):
        super().__init__(pool, seed)
        self._order = np.random.default_rng([self.seed, 0xF00D]).permutation(len(pool))
        self._cursor = 0

    def _propose(self, n, rng):
        out = []
        while len(out) < n and self._cursor < len(self._order):
            i = int(self._order[self._cursor])
            self._cursor += 1
            if self.is_free(i):
                out.append(i)
        if len(out) < n:                      # told out of order (a log): rescan what is left
            self._cursor = 0
            out.extend(i for i in (int(k) for k in self._order) if self.is_free(i) and i not in out)
            out = out[:n]
        return out
