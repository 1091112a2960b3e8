"""Counting and listing under a prefix (:mod:`beast.ir.prefix`) for backends that run one walk at a
time from Python (Python, Lua); the C backend does both in C."""
from __future__ import annotations

import numpy as np

from ..errors import BeastError


class PrefixWalks:
    """``count_each`` and ``rows_under`` from a backend's ``_set_prefix(prefix)``, ``count()`` and
    ``chunks(n)``."""

    def _set_prefix(self, prefix):
        raise NotImplementedError

    def count_each(self, prefixes, threads=None) -> np.ndarray:
        """The count under each prefix (rows of an int64 array), for a program made by
        :func:`beast.ir.prefix.bind`."""
        out = np.zeros(len(prefixes), dtype=np.int64)
        for j, prefix in enumerate(np.asarray(prefixes, dtype=np.int64).tolist()):
            self._set_prefix(prefix)
            out[j] = self.count()
        return out

    def rows_under(self, prefix, n) -> np.ndarray:
        """The first ``n`` survivors under ``prefix`` (``n`` at most their count), in order; the
        walk stops there."""
        n = int(n)
        if n <= 0:
            return np.empty(0, dtype=self.dtype)
        self._set_prefix(prefix)
        gen = self.chunks(n)
        try:
            out = next(gen, None)
        finally:
            gen.close()
        if out is None or len(out) != n:
            raise BeastError(f"internal error: fewer than {n} survivors under a prefix")
        return out
