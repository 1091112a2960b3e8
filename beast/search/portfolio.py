"""``portfolio``: beast's default strategy -- a fixed mix of four kinds of proposal, so that no
single guess about the landscape (smooth, rugged, a narrow optimum, a flat plateau) decides
the search.  Needs the optional extra ``[tune]`` (scikit-learn) for its model."""
from __future__ import annotations

import numpy as np

from ..errors import BeastError

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
      every other value of one of its parameters (:meth:`Pool.line`), in the model's order;
    * with ``reshape`` (the default), once every near move of the best configuration is told
      (it is a local optimum of those moves), its moves also take the other shapes of the
      same product of two parameters (:meth:`Pool.reshape`: 8 x 96 threads for 2 x 384), a
      way out of a basin that no one-parameter move leaves;
    * with ``design_stop`` d > 0, the design ends early when the best of its first d points
      is the most central one (:meth:`design_over`).  Off by default: on the tuning files it
      won nothing in 20 repeats (bench/README.md).

    The weights are not adapted to the file at hand: every kind keeps its share, so a
    landscape that fools one of them (the model on a plateau, the local moves in a rugged
    region) costs only that share.  Like every strategy, its proposals are a function of the
    seed and of what it was told, so a run resumes exactly from its log.
    """

    name = "portfolio"

    def __init__(self, pool, seed=0, start: int = 20, spread: float = 1.0,
                 mix: tuple = (2.0, 2.0, 1.0, 1.0), stall: int = 32, few: int = 4,
                 design_stop: int = 0, reshape: bool = True, **options):
        super().__init__(pool, seed, start=start, stall=stall, **options)
        self.design_stop, self.reshape = int(design_stop), bool(reshape)
        self._stop: bool | None = None
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
        if told < self.start and not self.design_over():
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

    def _design_points(self) -> list[int]:
        """The told configurations that count for :meth:`design_over`, in the order told."""
        return list(self.costs)

    def design_over(self) -> bool:
        """Whether the design ends before ``start``: once ``design_stop`` of its points are told
        (0: never), if the best of those first ``design_stop`` is the most central of them (the
        optimum looks near the middle, so the moves around it and the model take over).
        Decided once, from those first results only, so a resumed run decides the same."""
        if self._stop is None:
            d = self.design_stop
            if d <= 0:
                self._stop = False
                return False
            points = self._design_points()[:d]
            if len(points) < d:
                return False
            ok = [(self.costs[i], i) for i in points if self.costs[i] is not None]
            centre = min(points, key=lambda i: self.pool.centrality[i])
            self._stop = bool(ok) and min(ok)[1] == centre
        return self._stop

    def _one(self, kind: str, rng, taken: set, stalled: bool) -> list[int]:
        """One free configuration (not in ``taken``) of the given kind, or [] when it has none."""
        if kind == "near":
            return best_first_neighbours(self, 1, rng, set(taken), wide=self.wide if stalled else 0,
                                         order=self._model_order, moves=self._near,
                                         escape=self.pool.reshape if self.reshape else None)
        if kind in ("bound", "greedy"):
            return self._model_picks(1, taken, greedy=kind == "greedy")
        return self.random_free(1, rng, exclude=taken)
