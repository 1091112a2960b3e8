"""``local``: best-first local search over neighbours in the space."""
from __future__ import annotations

from .base import Strategy


class LocalSearch(Strategy):
    """Best-first search over the neighbour graph of the survivors.

    A neighbour of a configuration changes one parameter to the adjacent value of that
    parameter and is still a survivor (:meth:`Pool.neighbours`).  After ``init`` random
    configurations, each proposal is an unevaluated neighbour of the best configuration that
    still has one (the best-ranked first: a hill climb that, at a local optimum, widens the
    region around the best points instead of stopping); with probability ``restart``, or when
    no evaluated configuration has a free neighbour, a random configuration instead.  Its state
    is a function of what it was told, so it resumes exactly from a log.
    """

    name = "local"

    def __init__(self, pool, seed=0, init: int = 10, restart: float = 0.05):
        super().__init__(pool, seed)
        self.init = int(init)
        self.restart = float(restart)

    def _propose(self, n, rng):
        taken: set[int] = set()
        told = len(self.costs) + len(self.pending)
        n_random = max(0, min(n, self.init - told))
        n_random += int(sum(rng.random() < self.restart for _ in range(n - n_random)))
        out = best_first_neighbours(self, n - n_random, rng, taken)
        out.extend(self.random_free(n - len(out), rng, exclude=taken))
        return out


def best_first_neighbours(strategy, n: int, rng, taken: set, wide: int = 0, order=None,
                          moves=None, escape=None) -> list[int]:
    """Up to ``n`` free neighbours (not in ``taken``, which grows) of the best-ranked
    configurations of ``strategy``, taking the best configuration's first (in random order).

    For the ``wide`` best configurations, once their adjacent neighbours are taken, the rest
    of their :meth:`Pool.line` (one parameter set to any other value) comes before the next
    configuration's neighbours, in the order of ``order(indices)`` when given (a model's
    ranking), else at random.  ``moves(i)`` gives a configuration's neighbours (by default
    :meth:`Pool.neighbours`); ``escape(i)`` more moves of the best configuration once none
    of its ``moves`` is free (it is a local optimum of them), after those."""
    moves = moves or strategy.pool.neighbours
    out: list[int] = []
    for rank, i in enumerate(strategy.ranked()):
        if len(out) >= n:
            break
        mine = moves(i)
        if rank == 0 and escape is not None and not any(strategy.is_free(k) for k in mine):
            mine = mine + escape(i)
        free = [k for k in mine if strategy.is_free(k) and k not in taken]
        rng.shuffle(free)
        if rank < wide and len(free) < n - len(out):
            near = set(free)
            more = [k for k in strategy.pool.line(i) if k not in near and strategy.is_free(k) and k not in taken]
            if order is not None:
                more = order(more)
            else:
                rng.shuffle(more)
            free += more
        for k in free[: n - len(out)]:
            taken.add(k)
            out.append(k)
    return out
