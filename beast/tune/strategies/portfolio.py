"""``portfolio``: beast's default strategy -- a fixed mix of four kinds of proposal, so that no
single guess about the landscape (smooth, rugged, a narrow optimum, a flat plateau) decides
the search.  Needs the optional extra ``[tune]`` (scikit-learn) for its model."""
from __future__ import annotations

import numpy as np

from beast.errors import BeastError

from .local import best_first_neighbours
from .model import Hybrid

#: the kinds of proposal after the design, in the order a slot falls back when its kind has
#: nothing to offer
KINDS = ("near", "bound", "greedy", "random")


class Portfolio(Hybrid):
    """A space-filling start, then a fixed mix of local moves, a surrogate model and chance.

    * **design**: the first proposal is the configuration closest to the middle of every
      parameter's range (ties at random); the next ones, up to ``start`` configurations told,
      each as far as possible from all before it (maximin in the unit cube,
      :meth:`Strategy.central_free`) among the ``spread`` fraction of the pool closest to the
      middle (by default all of it: the extremes, where a kernel's best often sits -- the
      longest tile, the widest block -- are tried early), which also gives the model varied
      points;
    * **then** each proposal is drawn, with weights ``mix`` = (near, bound, greedy, random):
      *near*, a free move of the best configurations (:meth:`Pool.near`: the adjacent value of
      one parameter, or any other value of a parameter of at most four values), best first;
      *bound*, the configuration with the best lower confidence bound of an extremely
      randomized trees model of log(time) (:class:`~.model.ModelGuided`); *greedy*, the one
      the model predicts fastest; *random*, a uniform draw.  A kind with nothing to offer
      hands its slot on to the next (:data:`KINDS`);
    * once the best has not improved for ``stall`` evaluations, the moves of the best also try
      every other value of one of its parameters (:meth:`Pool.line`), in the model's order.

    The weights are not adapted to the file at hand: every kind keeps its share, so a
    landscape that fools one of them (the model on a plateau, the local moves in a rugged
    region) costs only that share.  Like every strategy, its proposals are a function of the
    seed and of what it was told, so a run resumes exactly from its log.
    """

    name = "portfolio"

    def __init__(self, pool, seed=0, start: int = 20, spread: float = 1.0,
                 mix: tuple = (2.0, 2.0, 1.0, 1.0), stall: int = 32, few: int = 4, **options):
        super().__init__(pool, seed, start=start, stall=stall, **options)
        mix = tuple(float(w) for w in mix)
        if len(mix) != len(KINDS) or min(mix) < 0 or sum(mix) <= 0:
            raise BeastError(f"mix must be {len(KINDS)} non-negative weights ({', '.join(KINDS)}), not {mix!r}")
        self.mix = np.array(mix) / sum(mix)
        self.spread, self.few = float(spread), int(few)

    def _near(self, i: int) -> list[int]:
        return self.pool.near(i, self.few)

    def _propose(self, n, rng):
        told = len(self.costs) + len(self.pending)
        taken: set[int] = set()
        out: list[int] = []
        if told < self.start:
            first = self.central_free(1, rng, quantile=self.central) if told == 0 else []
            out = first + self.central_free(min(n, self.start - told) - len(first), rng,
                                            exclude=set(first), quantile=self.spread)
            taken.update(out)
        stalled = self.stalled() >= self.stall
        kinds = rng.choice(len(KINDS), size=n - len(out), p=self.mix)
        for kind in kinds.tolist():
            got: list[int] = []
            for k in range(kind, len(KINDS)):            # fall back in KINDS order
                got = self._one(KINDS[k], rng, taken, stalled)
                if got:
                    break
            if not got:
                got = self._one("near", rng, taken, stalled) or self._one("bound", rng, taken, stalled)
            if not got:
                break
            taken.update(got)
            out += got
        return out

    def _one(self, kind: str, rng, taken: set, stalled: bool) -> list[int]:
        """One free configuration (not in ``taken``) of the given kind, or [] when it has none."""
        if kind == "near":
            return best_first_neighbours(self, 1, rng, set(taken), wide=self.wide if stalled else 0,
                                         order=self._model_order, moves=self._near)
        if kind in ("bound", "greedy"):
            return self._model_picks(1, taken, greedy=kind == "greedy")
        return self.random_free(1, rng, exclude=taken)
