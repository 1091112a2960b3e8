"""The configurations of the enumeration in the two orders that need no search: ``exhaustive``
(enumeration order) and ``random`` over every survivor (an order fixed by the seed), streamed
chunk by chunk, never materialized whole."""
from __future__ import annotations

from typing import Iterator, Mapping

import numpy as np

from ...errors import BeastError


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)).astype(np.uint64)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def random_keys(rows: np.ndarray, names, seed: int) -> np.ndarray:
    """A pseudo-random uint64 key per configuration, a function of its values and ``seed`` only.

    Sorting by it gives the random strategy's order: the same for any chunking of the
    enumeration, and the same when a run is resumed with the same seed."""
    h = _splitmix64(np.full(len(rows), seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64))
    for name in names:
        h = _splitmix64(h ^ rows[name].astype(np.int64).view(np.uint64))
    return h


def _rows_to_configs(rows: np.ndarray, names) -> Iterator[dict]:
    cols = [rows[n].tolist() for n in names]
    for values in zip(*cols):
        yield dict(zip(names, values))


def _not_done_mask(rows: np.ndarray, names, done: Mapping) -> np.ndarray:
    if not done:
        return np.ones(len(rows), dtype=bool)
    cols = [rows[n].tolist() for n in names]
    return np.fromiter((tuple(v) not in done for v in zip(*cols)), dtype=bool, count=len(rows))


def candidates(space, strategy: str, need: int | None, done: Mapping, seed: int = 0,
               chunk_size: int = 65536) -> Iterator[dict]:
    """The configurations to measure, in order, skipping ``done`` (keys in iterator order).

    ``exhaustive``: enumeration order, streamed.  ``random``: the ``need`` configurations
    with the smallest :func:`random_keys` (all of them when ``need`` is None), in key order --
    a uniform sample without replacement, kept in a bounded buffer while streaming.
    """
    names = tuple(space.iterators)
    if need is not None and need <= 0:
        return
    if strategy == "exhaustive":
        left = need
        for rows in space.iterate(chunk_size=chunk_size):
            rows = rows[_not_done_mask(rows, names, done)]
            if left is not None:
                rows = rows[:left]
                left -= len(rows)
            yield from _rows_to_configs(rows, names)
            if left == 0:
                return
        return
    if strategy != "random":
        raise BeastError(f"unknown strategy {strategy!r}", hint="use exhaustive or random")
    kept_rows, kept_keys = None, None
    for rows in space.iterate(chunk_size=chunk_size):
        rows = rows[_not_done_mask(rows, names, done)]
        keys = random_keys(rows, names, seed)
        if kept_rows is not None:
            rows = np.concatenate([kept_rows, rows])
            keys = np.concatenate([kept_keys, keys])
        if need is not None and len(rows) > need:
            sel = np.argpartition(keys, need - 1)[:need]
            rows, keys = rows[sel], keys[sel]
        kept_rows, kept_keys = rows, keys
    if kept_rows is None:
        return
    order = np.argsort(kept_keys, kind="stable")
    yield from _rows_to_configs(kept_rows[order], names)


__all__ = ["candidates", "random_keys"]
