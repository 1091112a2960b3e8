"""The search-strategy interface and the candidate pool every strategy draws from.

A strategy proposes configurations and learns their costs::

    strategy = make_strategy("model", space, seed=1)
    strategy.resume(log.records)          # optional: what a log already holds
    while budget_left:
        for config in strategy.ask(4):     # distinct survivors never proposed before
            strategy.tell(config, measure(config))   # cost (lower is better) or None: failed

Costs are times (ms): lower is better; ``None`` is a configuration that failed (compile,
launch or a wrong result): it counts as evaluated and is never proposed again.

Every proposal is a function of the seed and of what the strategy was told (its random
generator is re-seeded from ``(seed, told, pending)`` at every ``ask``), so a run resumed
from its log proposes what the uninterrupted run would have.

:class:`Pool` holds the configurations a strategy can propose: all survivors when the space
is small enough to enumerate (``limit``), otherwise a uniform sample of ``limit`` of them
(``space.sample``).  It indexes them for look-up and knows each one's neighbours: the
configurations that differ in one parameter, moved to the adjacent value of that parameter.
"""
from __future__ import annotations

import itertools
import math
import numbers
import reprlib
from collections import deque
from typing import Iterable, Iterator, Mapping

import numpy as np

from ..errors import BeastError
from ..explore.sampling import int64_matrix
from ..runtime.registry import check_integer

#: a space with at most this many survivors is enumerated whole into the pool.
POOL_LIMIT = 1_000_000
#: a space-filling design (:meth:`Strategy.central_free`) looks at most this many candidates:
#: every survivor of the recorded spaces, a sample of the larger ones (each design point over a
#: million rows took a second)
DESIGN_LIMIT = 50_000

_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1


def survivors_sample(space, n: int, seed: int) -> np.ndarray:
    """``n`` distinct survivors of ``space`` drawn uniformly (all of them when fewer).

    Uses ``space.sample`` when the space has it (no full enumeration); otherwise streams the
    enumeration and keeps the ``n`` rows with the smallest pseudo-random keys."""
    if hasattr(space, "sample"):
        return space.sample(n, seed=seed)
    rng = np.random.default_rng([int(seed), 0x5A3])
    kept, keys = None, None
    for rows in space.iterate(chunk_size=65536):     # keep the n smallest random keys
        k = rng.random(len(rows))
        if kept is not None:
            rows, k = np.concatenate([kept, rows]), np.concatenate([keys, k])
        if len(rows) > n:
            sel = np.argpartition(k, n - 1)[:n]
            rows, k = rows[sel], k[sel]
        kept, keys = rows, k
    if kept is None:
        return np.empty(0, dtype=space.dtype)
    return kept[np.argsort(keys, kind="stable")]


def check_count(value, name: str, none: str | None = None) -> int | None:
    """``value`` as an int of at least 1 (numpy integers too; a bool or a float is refused), or
    None when ``none`` is given: what None means, said in the error.  A BeastError names
    ``name`` and what it may be otherwise."""
    if value is None and none is not None:
        return None
    alt = f" or None ({none})" if none is not None else ""
    return check_integer(value, name, 1, kind=f"an integer of at least 1{alt}")


def check_seed(seed, what: str = "the seed") -> int:
    """``seed`` as an int; a clear error unless it is a non-negative integer (a NumPy integer
    too; not a bool).  ``what`` names it in the message."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise BeastError(f"{what} must be a non-negative integer (0, 1, 2, ...), not {seed!r}")
    return int(seed)


def _int_value(v) -> int | None:
    """A configuration's value as the int64 it equals (``2``, ``np.int64(2)``, ``2.0``, ``True``),
    or None when it equals none (``2.7``, ``"2"``, ``None``, ``nan``): a value no pool holds."""
    if isinstance(v, (numbers.Integral, np.bool_)):
        v = int(v)
    elif isinstance(v, numbers.Real) and math.isfinite(v) and v == int(v):
        v = int(v)
    else:
        return None
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def _key(values) -> bytes:
    """The pool's index key of one configuration: its values as int64 bytes."""
    return np.asarray(values, dtype=np.int64).tobytes()


def _keys(X: np.ndarray) -> list[bytes]:
    """:func:`_key` of every row of ``X`` (a third of the time of hashing tuples)."""
    if X.shape[1] == 0:
        return [b""] * len(X)
    return np.ascontiguousarray(X, dtype=np.int64).view(np.dtype((np.void, 8 * X.shape[1]))).ravel().tolist()


def _values_and_ranks(column: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an int64 ``column``; each entry's position among them is
    written into ``ranks``. ``np.unique(column, return_inverse=True)``, without its sorts where
    the values span a short range (a parameter's values usually do): a table of that range."""
    if len(column) == 0:
        return column[:0].copy()
    lo, hi = int(column.min()), int(column.max())
    if hi - lo > 4 * len(column) + 1024:
        values, inverse = np.unique(column, return_inverse=True)
        ranks[:] = inverse.reshape(-1)
        return values
    present = np.zeros(hi - lo + 1, dtype=bool)
    shifted = column - lo           # no overflow: hi - lo is small
    present[shifted] = True
    ranks[:] = (np.cumsum(present) - 1)[shifted]
    return np.flatnonzero(present).astype(np.int64) + lo


def _int64_rows(X, d: int) -> np.ndarray:
    """``X`` as a contiguous (N, ``d``) int64 matrix (a 1-D ``X`` is one column; an empty one
    no rows); a clear error for another shape or for values that are not integers."""
    A = np.asarray(X)
    if A.ndim == 1 and (d == 1 or A.size == 0):
        A = A.reshape(-1 if d else 0, d)
    if A.ndim != 2 or A.shape[1] != d:
        raise BeastError(f"a pool's X must be a matrix with one column per parameter ({d}), "
                         f"not an array of shape {A.shape}")
    try:
        with np.errstate(invalid="ignore"):         # NaN: not an integer, reported below
            M = np.ascontiguousarray(A, dtype=np.int64)
        exact = A.dtype == np.int64 or bool((M == A).all())
    except (TypeError, ValueError, OverflowError):
        exact = False
    if not exact:
        raise BeastError("a pool's X must hold integers (the parameters' values), "
                         f"not values such as {reprlib.repr(A.ravel()[:8].tolist())}")
    return M


def _grown(a: np.ndarray, rows: int) -> np.ndarray:
    """A copy of the 2-D ``a`` with room for ``rows`` rows (those past ``a``'s uninitialized;
    ``np.resize`` fills them with repeats of ``a``, several times slower on a million rows)."""
    out = np.empty((rows, a.shape[1]), dtype=a.dtype)
    out[:len(a)] = a
    return out


class Pool:
    """Configurations a strategy may propose, indexed.

    ``names``: the parameter (iterator) names; ``X``: an (N, d) int64 matrix of their values;
    ``complete``: whether the pool holds every survivor of the space (then neighbours are
    exact).  ``values[j]`` are the sorted distinct values of parameter j, ``ranks`` the (N, d)
    position of each value in them.

    A pool that is a sample (not ``complete``) with a ``member`` test (a configuration's values
    -> whether it is a survivor, e.g. :meth:`beast.Space.contains`) still has exact
    neighbours: a neighbour that the sample lacks is tested against the space and, when it is
    a survivor, added to the pool (new indices at the end).
    """

    def __init__(self, names: Iterable[str], X: np.ndarray, complete: bool = True, member=None):
        self.names = tuple(names)
        self.X = _int64_rows(X, len(self.names))
        self.complete = complete
        self.member = None if complete else member
        self._refused: set[bytes] = set()
        self._room = None                           # (X, ranks) with room to add configurations
        #: a configuration's values (as int64 bytes, :func:`_key`) -> its index
        self.index = dict(zip(_keys(self.X), range(len(self.X))))
        if len(self.index) != len(self.X):
            raise BeastError("the pool of configurations holds duplicates",
                             hint="a space whose iterators repeat values yields the same "
                                  "configuration twice; strategies need distinct configurations")
        self.ranks = np.empty(self.X.shape, dtype=np.int64)
        self.values = [_values_and_ranks(self.X[:, j], self.ranks[:, j]) for j in range(self.X.shape[1])]
        self._neighbours: dict[int, list[int]] = {}
        self._lines: dict[int, list[int]] = {}
        self._near: dict[int, dict[int, list[int]]] = {}
        self._reshapes: dict[int, list[int]] = {}
        self._unit: np.ndarray | None = None
        self._centrality: np.ndarray | None = None

    @property
    def unit(self) -> np.ndarray:
        """(N, d') positions in the unit cube: each parameter that takes more than one value,
        its value's rank scaled to [0, 1] (the parameter's smallest value 0, its largest 1)."""
        if self._unit is None:
            cols = [j for j, v in enumerate(self.values) if len(v) > 1]
            self._unit = np.column_stack([self.ranks[:, j] / (len(self.values[j]) - 1) for j in cols]) \
                if cols else np.zeros((len(self.X), 0))
        return self._unit

    @property
    def centrality(self) -> np.ndarray:
        """Squared distance of every configuration from the centre of the unit cube
        (:attr:`unit`): small for middling values of every parameter."""
        if self._centrality is None:
            self._centrality = ((self.unit - 0.5) ** 2).sum(axis=1)
        return self._centrality

    def _values_of(self, config: Mapping) -> list[int] | None:
        """The values of ``config`` (parameter -> value) in the order of :attr:`names`, as ints;
        None when one is missing or equals no integer (then it is no configuration of the
        pool).  A clear error when ``config`` is not a mapping."""
        if not isinstance(config, Mapping):
            raise BeastError(f"a configuration must be a mapping of parameter name to value (a dict), "
                             f"not {reprlib.repr(config)}", hint="parameters: " + ", ".join(self.names))
        cand = [config.get(n) for n in self.names]
        if not all(type(v) is int and _INT64_MIN <= v <= _INT64_MAX for v in cand):   # (the usual case fast)
            cand = [_int_value(v) for v in cand]
        return None if None in cand else cand

    def _lookup(self, cand: list) -> int | None:
        """The pool index of the configuration ``cand``; one the sample lacks is tested with
        :attr:`member` and added when it is a survivor."""
        key = _key(cand)
        k = self.index.get(key)
        if k is not None or self.member is None or key in self._refused:
            return k
        if not self.member(cand):
            self._refused.add(key)
            return None
        return self._append(cand)

    def adopt(self, config: Mapping) -> int | None:
        """The pool index of ``config``, added to a sampled pool when the sample lacks it and
        it is a survivor (by :attr:`member`; taken on trust without one): a configuration a
        tuning log holds.  None when it is no survivor, or when one of its values is not among
        the pool's :attr:`values` (a strategy could never propose it), or one of its values is
        missing or not an integer."""
        cand = self._values_of(config)
        if cand is None:
            return None
        k = self.index.get(_key(cand))
        if k is not None or self.complete:
            return k
        if any(len(v) == 0 or v[min(int(np.searchsorted(v, c)), len(v) - 1)] != c
               for v, c in zip(self.values, cand)):
            return None
        if self.member is not None:
            return self._lookup(cand)
        self._neighbours.clear()                # memoized moves may lack it
        self._lines.clear()
        self._near.clear()
        self._reshapes.clear()
        return self._append(cand)

    def _append(self, cand: list) -> int:
        """Add the configuration ``cand`` (values; not in the pool yet) at the end; its index."""
        k = len(self.X)
        if self._room is None or k == len(self._room[0]):   # grow by a quarter: amortized copies
            cap = k + k // 4 + 64
            self._room = tuple(_grown(a, cap) for a in (self.X, self.ranks))
        self._room[0][k] = cand
        self._room[1][k] = [int(np.searchsorted(v, c)) for v, c in zip(self.values, cand)]
        self.X, self.ranks = self._room[0][:k + 1], self._room[1][:k + 1]
        self.index[_key(cand)] = k
        self._unit = self._centrality = None
        return k

    @classmethod
    def from_rows(cls, rows: np.ndarray, complete: bool = True, member=None) -> "Pool":
        """The pool of a structured array's rows (one field per parameter, as :meth:`beast.Space.enumerate`)."""
        return cls(rows.dtype.names, int64_matrix(rows), complete, member)

    @classmethod
    def from_space(cls, space, limit: int = POOL_LIMIT, seed: int = 0) -> "Pool":
        """All survivors of ``space`` when there are at most ``limit``, else a uniform sample."""
        count = None
        try:
            count = int(space.count())
        except Exception:                          # a space that cannot count: sample it
            pass
        if count is not None and count <= limit:
            return cls.from_rows(space.enumerate(), complete=True)
        rows = survivors_sample(space, limit, seed)
        contains, names = getattr(space, "contains", None), rows.dtype.names
        member = None if contains is None else (lambda cand: bool(contains(dict(zip(names, cand)))))
        return cls.from_rows(rows, complete=False, member=member)

    def __len__(self) -> int:
        return len(self.X)

    def config(self, i: int) -> dict:
        """Configuration ``i`` as a dict (parameter -> int)."""
        return dict(zip(self.names, (int(v) for v in self.X[i])))

    def find(self, config: Mapping) -> int | None:
        """The pool index of ``config`` (None when it is not in the pool: a value is missing,
        not an integer, or not the pool's); a value matches the integer it equals (2.0 is 2)."""
        cand = self._values_of(config)
        return None if cand is None else self.index.get(_key(cand))

    def neighbours(self, i: int) -> list[int]:
        """Pool indices of the configurations that differ from ``i`` in exactly one parameter,
        set to the next smaller or larger value of that parameter: every such survivor when
        the pool is complete or has a ``member`` test, else those in the sample."""
        return self._moves(i, self._neighbours,
                           lambda vals, r: [vals[q] for q in (r - 1, r + 1) if 0 <= q < len(vals)])

    def near(self, i: int, few: int = 4) -> list[int]:
        """:meth:`neighbours` of ``i``, and for each parameter of at most ``few`` values every
        other value of it: a switch of two to four settings (a kernel variant, a cache flag, a
        vector width) has no order in which "adjacent" means "similar"."""
        memo = self._near.setdefault(few, {})
        return self._moves(i, memo, lambda vals, r: [v for q, v in enumerate(vals) if q != r]
                           if len(vals) <= few else [vals[q] for q in (r - 1, r + 1) if 0 <= q < len(vals)])

    def line(self, i: int) -> list[int]:
        """Pool indices of the configurations that differ from ``i`` in exactly one parameter,
        set to any other value of it (a superset of :meth:`neighbours`: the moves of a
        coordinate search, which jump over values that are bad in between, such as block
        sizes that are not powers of two between two that are)."""
        return self._moves(i, self._lines, lambda vals, r: [v for q, v in enumerate(vals) if q != r])

    def reshape(self, i: int) -> list[int]:
        """Pool indices of the configurations that differ from ``i`` in exactly two parameters
        of positive values whose product they keep: the same threads in another block shape
        (8 x 96 for 2 x 384), the same work per thread in another tile shape.  A kernel's speed
        often depends on such a product more than on either factor, and no one-parameter move
        reaches the other shapes of a good one without passing through worse products."""
        got = self._reshapes.get(i)
        if got is not None:
            return got
        row = self.X[i].tolist()
        cols = [j for j, v in enumerate(self.values) if len(v) > 1 and v[0] > 0]
        out = []
        for a, b in itertools.combinations(cols, 2):
            product, in_b = row[a] * row[b], set(self.values[b].tolist())
            for va in self.values[a].tolist():
                if va == row[a] or product % va or product // va not in in_b:
                    continue
                cand = list(row)
                cand[a], cand[b] = va, product // va
                k = self._lookup(cand)
                if k is not None:
                    out.append(k)
        self._reshapes[i] = out
        return out

    def _moves(self, i: int, memo: dict, choices) -> list[int]:
        """Pool indices of ``i`` with one parameter ``j`` set to each of ``choices(values[j],
        rank of i's value)``, in parameter order (memoized in ``memo``)."""
        got = memo.get(i)
        if got is not None:
            return got
        row = self.X[i].tolist()
        out = []
        for j, vals in enumerate(self.values):
            for v in choices(vals, int(self.ranks[i, j])):
                cand = list(row)
                cand[j] = int(v)
                k = self._lookup(cand)
                if k is not None:
                    out.append(k)
        memo[i] = out
        return out


class Strategy:
    """Base class of the search strategies (see the module docstring for the protocol).

    Subclasses implement :meth:`_propose`; the base keeps the bookkeeping: ``costs`` maps a
    pool index to its cost (None: failed), ``pending`` holds indices proposed but not yet told.
    """

    name = "base"

    def __init__(self, pool: Pool, seed: int = 0):
        self.pool = pool
        self.seed = check_seed(seed)
        self.costs: dict[int, float | None] = {}
        self.pending: set[int] = set()
        self.outside = 0                            # told configurations the pool lacks

    # -- the protocol
    def ask(self, n: int = 1) -> list[dict]:
        """Up to ``n`` distinct configurations to evaluate next, none proposed before (fewer
        only when the pool runs out); ``n`` a non-negative integer."""
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise BeastError(f"ask(n): n (how many configurations) must be a non-negative integer, not {n!r}")
        n = int(n)
        if n < 1:
            return []
        free = len(self.pool) - len(self.costs) - len(self.pending)
        n = min(n, free)
        if n <= 0:
            return []
        rng = np.random.default_rng([self.seed, len(self.costs), len(self.pending), 0x5EA7])
        picks = [int(i) for i in self._propose(n, rng)]
        assert len(set(picks)) == len(picks) and not (set(picks) & self.pending) \
            and not any(i in self.costs for i in picks), f"{self.name} proposed a repeat"
        self.pending.update(picks)
        return [self.pool.config(i) for i in picks]

    def tell(self, config: Mapping, cost) -> None:
        """The outcome of ``config`` (a mapping parameter -> value): its cost, a number (lower is
        better; NaN or infinite: failed), or None when it failed; or a measurement (an object with
        ``status`` and ``ms``, as a tuning loop hands it to :class:`StrategyStream`): its ``ms``
        when its status is ``"ok"``, else failed.

        Over a sampled pool, a configuration the sample lacks (one a resumed log holds: a
        neighbour the run added) joins the pool, so that it is never proposed again.  One that
        is no configuration of the pool (a value missing, not an integer, or outside the space)
        is counted in :attr:`outside` and otherwise ignored."""
        if cost is not None and not isinstance(cost, numbers.Real) and hasattr(cost, "status"):
            cost = getattr(cost, "ms", None) if cost.status == "ok" else None
        if cost is not None:
            if isinstance(cost, bool) or not isinstance(cost, numbers.Real):
                raise BeastError(f"the cost must be a number (lower is better) or None (failed), not {cost!r}")
            cost = float(cost)
            if not math.isfinite(cost):
                cost = None
        i = self.pool.adopt(config)
        if i is None:
            self.outside += 1
            return
        self.pending.discard(i)
        self.costs[i] = cost

    def resume(self, records: Iterable[Mapping]) -> int:
        """Tell every configuration of a tuning log's records (``{"config":..., "status":...,
        "ms":...}``); returns how many were told."""
        n = 0
        for rec in records:
            if "config" not in rec:
                continue
            self.tell(rec["config"], record_cost(rec))
            n += 1
        return n

    # -- helpers for subclasses
    def is_free(self, i: int) -> bool:
        """Whether pool index ``i`` is neither evaluated nor pending."""
        return i not in self.costs and i not in self.pending

    def free_mask(self) -> np.ndarray:
        """A boolean mask over the pool: True where :meth:`is_free`."""
        mask = np.ones(len(self.pool), dtype=bool)
        if self.costs:
            mask[np.fromiter(self.costs.keys(), dtype=np.int64)] = False
        if self.pending:
            mask[np.fromiter(self.pending, dtype=np.int64)] = False
        return mask

    def random_free(self, n: int, rng: np.random.Generator, exclude: set | None = None) -> list[int]:
        """``n`` free pool indices drawn uniformly (not in ``exclude``)."""
        taken = set(exclude or ())
        out: list[int] = []
        N = len(self.pool)
        tries = 0
        while len(out) < n and tries < 8 * n + 64:     # rejection while most of the pool is free
            i = int(rng.integers(N))
            tries += 1
            if self.is_free(i) and i not in taken:
                taken.add(i)
                out.append(i)
        if len(out) < n:                               # dense: draw from the free list
            free = np.flatnonzero(self.free_mask())
            free = np.array([i for i in free.tolist() if i not in taken], dtype=np.int64)
            out.extend(rng.choice(free, size=min(n - len(out), len(free)), replace=False).tolist())
        return out

    def central_free(self, n: int, rng: np.random.Generator, exclude: set | None = None,
                     quantile: float = 0.05, ignore: set | None = None) -> list[int]:
        """``n`` free configurations (not in ``exclude``) for a first design: the first the
        one closest to the centre of the space (:attr:`Pool.centrality`; ties at random),
        each next one the configuration of the central ``quantile`` of the pool farthest (in
        :attr:`Pool.unit`) from every configuration evaluated or proposed so far (maximin).

        Middling values of every parameter are a better first guess than a random or an
        extreme configuration (neither the smallest nor the largest block, tile, unroll, ...)
        and the spread keeps the design from sampling one corner of that middle.  Of more
        than :data:`DESIGN_LIMIT` candidates (a sample of a large space), the most central
        and a random ``DESIGN_LIMIT - 1`` of the others are considered.  Configurations in
        ``ignore`` are never proposed but do not push the design away from them."""
        pool = self.pool
        if n <= 0 or not len(pool):
            return []
        cen = pool.centrality + rng.random(len(pool)) * 1e-9
        free = self.free_mask()
        for i in exclude or ():
            free[i] = False
        k = max(1, int(np.ceil(quantile * len(pool))))
        idx = np.flatnonzero(free)
        if len(idx) > k:
            idx = idx[np.argpartition(cen[idx], k - 1)[:k]]
        if len(idx) > DESIGN_LIMIT:                   # a sampled pool: spread over a sample of it
            head = idx[np.argmin(cen[idx])]
            idx = np.append(rng.choice(idx[idx != head], DESIGN_LIMIT - 1, replace=False), head)
        idx = idx[np.argsort(cen[idx], kind="stable")]
        U = pool.unit
        Ui = U[idx]
        chosen = [i for i in itertools.chain(self.costs, self.pending, exclude or ()) if not ignore or i not in ignore]
        out: list[int] = []
        dmin = np.full(len(idx), np.inf)
        for i in chosen:
            dmin = np.minimum(dmin, ((Ui - U[i]) ** 2).sum(axis=1))
        while len(out) < n and len(idx):
            j = int(np.argmax(dmin)) if np.isfinite(dmin).any() else 0
            i = int(idx[j])
            out.append(i)
            dmin = np.minimum(dmin, ((Ui - U[i]) ** 2).sum(axis=1))
            dmin[j] = -1.0
            if len(out) >= len(idx):
                break
        return out

    def ranked(self) -> list[int]:
        """Evaluated pool indices that succeeded, best (lowest cost) first."""
        ok = [(c, i) for i, c in self.costs.items() if c is not None]
        ok.sort()
        return [i for _, i in ok]

    @property
    def best(self) -> tuple[dict, float] | None:
        """The best configuration told so far and its cost (None before any success)."""
        r = self.ranked()
        return (self.pool.config(r[0]), self.costs[r[0]]) if r else None

    def _propose(self, n: int, rng: np.random.Generator) -> list[int]:
        raise NotImplementedError


def record_cost(rec: Mapping) -> float | None:
    """The cost of a log record: its time in ms when it verified and was timed, else None."""
    if rec.get("status", "ok") != "ok":
        return None
    ms = rec.get("ms")
    return float(ms) if isinstance(ms, (int, float)) else None


class StrategyStream:
    """The one adapter between an ask/tell strategy and a tuning loop: an iterator over the
    configurations to measure next, pulled one at a time whenever the loop has room, and
    :meth:`tell` to hand each outcome back (both fronts of ``beast tune`` drive every strategy
    through it: a :class:`Strategy` and any object with ``ask`` and ``tell``).

    The convention:

    * ``strategy.ask(n)`` returns a list of up to ``n`` configurations (dicts).  An empty list
      means "nothing to propose now": while a configuration given out is still waiting for its
      outcome, the stream yields ``None`` (wait: pull again after the next outcome); when none
      is, the stream ends.  ``None`` ends the stream at once.
    * ``strategy.tell(config, outcome)`` is called with every outcome the loop hands to
      :meth:`tell`: a measurement (``status``, ``ms``, ...;
      :class:`beast.tune.device.measure.Measurement`).  :meth:`Strategy.tell` takes its cost
      from it.

    At most ``need`` configurations are given out (None: no limit), asked ``batch`` at a time
    (fewer near ``need``); what a batch holds beyond what was pulled waits here, proposed but
    not yet given out.  A strategy re-seeded from what it was told (:class:`Strategy`) proposes
    the same for the same ``batch`` and outcomes, so a resumed run asks as the first would have.
    """

    def __init__(self, strategy, need: int | None = None, batch: int = 8):
        self.strategy = strategy
        self.left = None if need is None else max(0, int(need))
        self.batch = max(1, int(batch))
        self.waiting = 0                 # given out, outcome not told yet
        self._buffer: deque = deque()
        self._done = False

    def __iter__(self) -> Iterator:
        return self

    def __next__(self) -> dict | None:
        if not self._buffer:
            if self._done or self.left == 0:
                raise StopIteration
            got = self.strategy.ask(self.batch if self.left is None else min(self.batch, self.left))
            got = None if got is None else list(got)
            if not got:
                if got is not None and self.waiting > 0:
                    return None
                self._done = True
                raise StopIteration
            self._buffer.extend(got)
        cfg = self._buffer.popleft()
        self.waiting += 1
        if self.left is not None:
            self.left -= 1
        return cfg

    def tell(self, config: Mapping, outcome) -> None:
        """Hand ``config``'s outcome (a measurement) to the strategy; one told before any was
        given out (a resumed log's) only informs it."""
        if self.waiting > 0:
            self.waiting -= 1
        self.strategy.tell(config, outcome)
