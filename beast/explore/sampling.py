"""Uniform sampling of survivors without enumerating the space: ``space.sample(n, seed)``.

How a sample is drawn (the same rows in every backend, for the same seed and NumPy version):

1. ``k = min(n, count)`` distinct *ranks* are drawn uniformly from ``[0, count)`` with
   ``numpy.random.default_rng(seed).choice(count, k, replace=False)``; the rank of a survivor is
   its position in the enumeration order (``space.enumerate()``).
2. Each rank is mapped to its survivor by descending the loop nest by weight: the survivors of the
   subtree under a prefix (values of the outer loops, :mod:`beast.ir.prefix`) are contiguous in
   enumeration order, so with the subtree counts of the prefixes, in order, a binary search over
   their running sums picks the prefix holding the rank and the rank within it.

The counts of the prefixes at one shallow depth (the deepest one with at most :data:`TABLE_LIMIT`
prefixes) are computed once per space and backend -- a walk of the whole space, like ``count``
-- and kept in memory and in ``$BEAST_CACHE_DIR/sample/`` (keyed by the generated enumerator, so a
later process reads them back instead of counting again; a table that is unreadable or holds
another entry's key is counted again, with a notice); their sum is ``count``. Under a chosen
prefix, the descent goes one loop deeper at a time, counting the children of that prefix only
(kept too, up to :data:`MEMO_LIMIT` prefixes), until a subtree holds at most :data:`LEAF_ROWS`
survivors; that subtree is enumerated and the rows at the wanted ranks are taken. So after the
first call, drawing ``n`` survivors costs about ``n`` small walks of the nest below the table's
depth, not a walk of the whole space.

When ``n >= count`` the result holds every survivor once, in random order (a uniform random
permutation of ``space.enumerate()``): asking for more than there is is not an error. When ``n``
is more than a quarter of ``count``, the space is enumerated once and indexed (the same rows).

Backends provide, besides ``count`` and ``chunks``, ``count_each(prefixes)`` (the count under each
prefix, for a program made by :func:`~beast.ir.prefix.bind`) and ``rows_under(prefix, n)``.
"""
from __future__ import annotations

import io
import os
import sys

import numpy as np

from ..errors import BeastError
from ..ir.prefix import bind, truncate
from ..runtime import DEFAULT_BACKEND, cache, get_backend

TABLE_LIMIT = 1 << 18     # prefixes the table of counts computed for the whole space may hold
LEAF_ROWS = 8192          # a subtree with at most this many survivors is enumerated to pick from
MEMO_LIMIT = 1 << 16      # child tables of prefixes kept between calls (cleared when exceeded)
TABLE_FORMAT = 2          # of the tables kept in the cache directory (2: with their key)


class Sampler:
    """Draws survivors of one program uniformly at random on one backend (see the module)."""

    def __init__(self, program, backend: str | None = None, threads: int | None = None,
                 table_limit: int = TABLE_LIMIT, leaf_rows: int = LEAF_ROWS):
        self.program = program
        self.table_limit, self.leaf_rows = table_limit, leaf_rows
        self.backend = backend or DEFAULT_BACKEND
        self._module = get_backend(self.backend)
        self.threads = threads
        self.nest_depth = len(program.loop_order)
        self._built = {}
        self._table = None         # (depth, prefixes (m, depth), counts, running sums)
        self._memo = {}            # (depth, prefix) -> (children (m, depth + 1), counts, sums)
        self._memo_size = 0
        self.enumerate_fraction = 0.25   # more ranks than this fraction of count: enumerate instead

    # -- the programs, built once each
    def _enumerator(self, kind, depth, bound=0):
        key = (kind, depth, bound)
        if key not in self._built:
            if kind == "bound":
                program = bind(self.program, depth)
            else:
                program = bind(truncate(self.program, depth), bound)
            self._built[key] = self._build(kind, program)
        return self._built[key]

    def _build(self, kind, program):
        """The enumerator of ``program``. Under ``auto``, the bound programs (counted under every
        prefix of the table, often hundreds of thousands of calls, which ``auto``'s estimate of one
        run does not see) are C's where C compiles them: LuaJIT's cost per call dominates there."""
        if self.backend == "auto" and kind == "bound":
            from ..runtime import auto
            if auto.available("c"):
                from ..runtime.c import enumerator as c_backend
                try:
                    return c_backend.build(program)
                except BeastError:       # no working compiler, or a space C refuses: auto's choice
                    pass
        return self._module.build(program)

    def _prefixes(self, depth, bound, prefix):
        """The prefixes of ``depth`` under ``prefix`` (of depth ``bound``) that pass the checks
        of their loops, in enumeration order, as an (m, depth) int64 array."""
        enum = self._enumerator("truncated", depth, bound)
        if bound == 0:
            parts = list(enum.chunks(1 << 20, threads=self.threads))
            rows = np.concatenate(parts) if parts else np.empty(0, dtype=enum.dtype)
        else:
            m = int(enum.count_each(np.asarray([prefix], dtype=np.int64), threads=1)[0])
            rows = enum.rows_under(prefix, m) if m else np.empty(0, dtype=enum.dtype)
        return int64_matrix(rows)

    def _weigh(self, depth, prefixes, threads):
        """Keep the prefixes with survivors under them: (prefixes, counts, running sums)."""
        counts = self._enumerator("bound", depth).count_each(prefixes, threads=threads)
        keep = counts > 0
        prefixes, counts = prefixes[keep], counts[keep]
        return prefixes, counts, np.cumsum(counts)

    # -- the table of the whole space
    def table_depth(self) -> int:
        """The deepest loop depth with at most :data:`TABLE_LIMIT` prefixes (0: the whole space)."""
        depth = 0
        for d in range(1, self.nest_depth + 1):
            if self._enumerator("truncated", d).count(threads=self.threads) > self.table_limit:
                break
            depth = d
        return depth

    def table(self):
        """(depth, prefixes, counts, running sums) of the prefixes of the table's depth; computed
        once (about the cost of a count) and kept in memory and in beast's cache directory."""
        if self._table is None:
            loaded = self._load_table()
            if loaded is not None:
                depth, prefixes, counts = loaded
                self._table = (depth, prefixes, counts, np.cumsum(counts))
            else:
                depth = self.table_depth()
                prefixes = self._prefixes(depth, 0, ())
                self._table = (depth,) + self._weigh(depth, prefixes, self.threads)
                self._save_table(*self._table[:3])
        return self._table

    # -- the table on disk: keyed by everything the enumeration depends on
    def _table_path(self):
        from .._version import __version__
        from ..codegen.python import print_python
        p = self.program
        # the interpreter too: the user's functions mean what its builtins do (sum() of floats
        # is compensated from Python 3.12 on)
        digest = cache.key("beast sampling table", TABLE_FORMAT, __version__, self.backend,
                           sys.implementation.name, sys.version_info[:2],
                           self.table_limit, print_python(p).full_text(),
                           sorted((k, repr(v)) for k, v in p.constants.items()))
        return os.path.join(cache.cache_dir("sample"), f"{p.name[:40]}-{digest[:32]}.npz")

    def _load_table(self):
        """The table kept in the cache, or None; a damaged one (truncated, empty, another
        space's) is removed with a notice and counted again."""
        import zipfile
        try:
            path = self._table_path()
            if not os.path.exists(path):
                return None
        except OSError:
            return None
        why = None
        try:
            with np.load(path, allow_pickle=False) as data:
                key = str(data["key"])
                depth = int(data["depth"])
                prefixes, counts = data["prefixes"], data["counts"]
        except (OSError, EOFError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as exc:
            why = f"unreadable: {type(exc).__name__}"
        else:
            if key != os.path.basename(path):
                why = "built for another entry"
            elif (prefixes.ndim != 2 or counts.ndim != 1 or prefixes.shape != (len(counts), depth)
                  or depth > self.nest_depth or (len(counts) and counts.min() < 0)):
                why = "its arrays do not fit the space"
        if why is not None:
            from ..runtime.cache_check import damaged
            damaged(path, why)
            return None
        return depth, prefixes.astype(np.int64), counts.astype(np.int64)

    def _save_table(self, depth, prefixes, counts):
        buf = io.BytesIO()
        try:
            path = self._table_path()
        except OSError:
            return
        # key: the entry's own name, so that a table copied over another entry is refused
        np.savez(buf, key=np.str_(os.path.basename(path)), depth=np.int64(depth), prefixes=prefixes,
                 counts=counts)
        try:
            cache.atomic_write_bytes(path, buf.getvalue())
        except OSError:
            pass     # an unusable cache directory only costs the next process a recount

    def count(self) -> int:
        """How many configurations survive (the sum of the table's counts)."""
        sums = self.table()[3]
        return int(sums[-1]) if len(sums) else 0

    # -- drawing
    def sample(self, n: int, seed=None) -> np.ndarray:
        """``min(n, count)`` distinct survivors drawn uniformly at random, in the order drawn."""
        rng = sample_rng(n, seed)
        total = self.count()
        k = min(int(n), total)
        ranks = rng.choice(total, size=k, replace=False) if k else np.empty(0, dtype=np.int64)
        return self.rows_at(np.asarray(ranks, dtype=np.int64))

    def rows_at(self, ranks) -> np.ndarray:
        """The survivors at the given ranks (positions in enumeration order), in the given order."""
        ranks = np.asarray(ranks, dtype=np.int64)
        out = np.empty(len(ranks), dtype=np.dtype([(c, np.int64) for c in self.program.columns]))
        if len(ranks) == 0:
            return out
        total = self.count()
        if ranks.min() < 0 or ranks.max() >= total:
            raise BeastError(f"a rank outside [0, {total})")
        if len(ranks) > total * self.enumerate_fraction:
            # most of the space: one enumeration costs less than a descent per rank
            enum = self._enumerator("bound", 0)
            order = np.argsort(ranks, kind="stable")
            wanted = ranks[order]
            start = 0
            flat = int64_view(out)                  # packed: made above
            for part in enum.chunks(1 << 20, threads=self.threads):   # each chunk's rows as it comes
                lo, hi = np.searchsorted(wanted, [start, start + len(part)])
                if hi > lo:
                    flat[order[lo:hi]] = int64_matrix(part)[wanted[lo:hi] - start]
                start += len(part)
            return out
        order = np.argsort(ranks, kind="stable")
        depth, prefixes, counts, sums = self.table()
        leaves = {}
        self._descend(depth, prefixes, counts, sums, ranks[order], order, leaves)
        for d, found in leaves.items():
            enum = self._enumerator("bound", d)
            pos = np.concatenate([p for _, _, p in found])
            if hasattr(enum, "pick_each"):      # one call for all the leaves of a depth
                out[pos] = enum.pick_each(np.array([x for x, _, _ in found], dtype=np.int64)
                                          .reshape(len(found), d), [w for _, w, _ in found])
            else:                               # one walk per leaf, each stopping after its last row
                out[pos] = np.concatenate([enum.rows_under(x, int(w[-1]) + 1)[w] for x, w, _ in found])
        return out

    def _descend(self, depth, prefixes, counts, sums, ranks, pos, leaves):
        """Find the subtrees of at most :attr:`leaf_rows` survivors holding ``ranks`` (sorted,
        relative to the first of ``prefixes``) under ``prefixes``: ``leaves[depth]`` gets
        (prefix, ranks within it, positions in the output) for each."""
        which = np.searchsorted(sums, ranks, side="right")
        bounds = np.flatnonzero(np.diff(which)) + 1
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(which)]):
            j = int(which[lo])
            within = ranks[lo:hi] - (sums[j] - counts[j])
            prefix, c = prefixes[j], int(counts[j])
            if c <= self.leaf_rows or depth >= self.nest_depth:
                leaves.setdefault(depth, []).append((prefix, within, pos[lo:hi]))
            else:
                kids, kcounts, ksums = self._children(depth, prefix)
                self._descend(depth + 1, kids, kcounts, ksums, within, pos[lo:hi], leaves)

    def _children(self, depth, prefix):
        key = (depth, tuple(int(v) for v in prefix))
        hit = self._memo.get(key)
        if hit is None:
            kids = self._prefixes(depth + 1, depth, prefix)
            hit = self._weigh(depth + 1, kids, threads=1)
            if self._memo_size + len(hit[0]) > MEMO_LIMIT:
                self._memo.clear()
                self._memo_size = 0
            self._memo[key] = hit
            self._memo_size += len(hit[0])
        return hit


def sample_rng(n, seed) -> np.random.Generator:
    """The generator of a draw of ``n`` survivors with ``seed``; a clear error for a bad size or
    seed."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise BeastError(f"the sample size must be a non-negative integer, not {n!r}")
    if isinstance(seed, bool):              # numpy takes True for 1
        raise BeastError(f"invalid seed {seed!r}", hint="use a non-negative integer, or None for a fresh random sample")
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise BeastError(f"invalid seed {seed!r}: {exc}",
                         hint="use a non-negative integer, or None for a fresh random sample") from None


def int64_matrix(rows: np.ndarray) -> np.ndarray:
    """A structured array's rows as an (n, fields) int64 matrix: :func:`int64_view` where the
    fields lie packed (every backend's rows), else a copy made field by field."""
    view = int64_view(rows)
    if view is not None:
        return view
    names = rows.dtype.names or ()
    out = np.empty((len(rows), len(names)), dtype=np.int64)
    for i, name in enumerate(names):
        out[:, i] = rows[name]
    return out


def int64_view(rows: np.ndarray) -> np.ndarray | None:
    """The rows of a structured array whose fields are all int64, packed in order (what every
    backend yields), as an (n, fields) int64 view of the same memory; None for any other layout.
    Copying and indexing rows through it is several times faster than through the fields."""
    dt = rows.dtype
    names = dt.names or ()
    if rows.ndim != 1 or not rows.flags.c_contiguous or dt.itemsize != 8 * len(names) or \
            any(dt.fields[n][0] != np.int64 or dt.fields[n][1] != 8 * i for i, n in enumerate(names)):
        return None
    return rows.view(np.int64).reshape(len(rows), len(names))
