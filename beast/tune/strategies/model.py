"""``model``: a surrogate model (scikit-learn's extremely randomized trees) ranks unmeasured
survivors.  Needs the optional extra: ``pip install 'beast-autotune[tune]'``."""
from __future__ import annotations

import numpy as np

from beast.errors import BeastError

from .base import Strategy


def _sklearn_trees():
    try:
        from sklearn.ensemble import ExtraTreesRegressor
    except ImportError:
        raise BeastError("the model-guided strategy needs scikit-learn",
                         hint="pip install 'beast-autotune[tune]'") from None
    return ExtraTreesRegressor


class ModelGuided(Strategy):
    """Model-guided search: a forest of extremely randomized trees (scikit-learn) learns
    log(time) from the configurations measured so far and ranks the unmeasured ones by a
    lower confidence bound, mean - ``kappa`` x spread over the trees (optimistic where the
    trees disagree).

    * the first ``init`` proposals are random;
    * then each :meth:`ask` refits the forest and scores the candidates: every free
      configuration when the pool has at most ``candidates`` of them, otherwise a random
      ``candidates`` of them plus every free neighbour of the ``top`` best configurations;
    * a fraction ``explore`` of proposals stays random;
    * failed configurations are left out of the training set (a failure says where the device
      refuses, not how fast its neighbours run; they are never proposed again), or, with
      ``fail_penalty`` p, learned as worse than the worst time seen (log time + p).
    """

    name = "model"

    def __init__(self, pool, seed=0, init: int = 16, kappa: float = 1.0, explore: float = 0.05,
                 trees: int = 48, candidates: int = 20000, top: int = 8,
                 fail_penalty: float | None = None):
        super().__init__(pool, seed)
        self.fail_penalty = None if fail_penalty is None else float(fail_penalty)
        self.init, self.kappa, self.explore = int(init), float(kappa), float(explore)
        self.trees, self.candidates, self.top = int(trees), int(candidates), int(top)
        self._Forest = _sklearn_trees()

    def _training_set(self):
        idx = np.fromiter(self.costs.keys(), dtype=np.int64, count=len(self.costs))
        costs = [self.costs[i] for i in idx.tolist()]
        ok = [c for c in costs if c is not None and c > 0]
        if not ok:
            return None
        if self.fail_penalty is None:               # learn from the timed ones only
            keep = np.array([c is not None and c > 0 for c in costs])
            idx = idx[keep]
            y = np.log(np.array(ok))
        else:
            fail = float(np.log(ok).max()) + self.fail_penalty
            y = np.array([np.log(c) if c is not None and c > 0 else fail for c in costs])
        return self.pool.X[idx].astype(np.float64), y

    def _candidate_indices(self, rng, exclude):
        free = self.free_mask()
        if exclude:
            free[np.fromiter(exclude, dtype=np.int64)] = False
        cand = np.flatnonzero(free)
        if len(cand) <= self.candidates:
            return cand
        near = {k for i in self.ranked()[: self.top] for k in self.pool.neighbours(i)
                if free[k]}
        pick = rng.choice(cand, size=self.candidates, replace=False)
        return np.unique(np.concatenate([pick, np.fromiter(near, dtype=np.int64, count=len(near))]))

    def _propose(self, n, rng):
        told = len(self.costs) + len(self.pending)
        data = self._training_set() if told >= self.init else None
        if data is None:
            return self.random_free(n, rng)
        n_random = int(sum(rng.random() < self.explore for _ in range(n)))
        out = self._model_picks(n - n_random, rng, data, set())
        out.extend(self.random_free(n - len(out), rng, exclude=set(out)))
        return out

    def _model_picks(self, n_model, rng, data, exclude) -> list[int]:
        """The ``n_model`` free configurations (not in ``exclude``) with the best score."""
        if n_model <= 0:
            return []
        X, y = data
        forest = self._Forest(n_estimators=self.trees, min_samples_leaf=1, max_features=1.0,
                              random_state=int(rng.integers(2**31 - 1)), n_jobs=1)
        forest.fit(X, y)
        cand = self._candidate_indices(rng, exclude)
        Xc = self.pool.X[cand].astype(np.float64)
        per_tree = np.stack([t.predict(Xc) for t in forest.estimators_])
        score = per_tree.mean(axis=0) - self.kappa * per_tree.std(axis=0)
        score += rng.random(len(score)) * 1e-9                 # ties: random, reproducibly
        order = np.argsort(score, kind="stable")[:n_model]
        return [int(i) for i in cand[order]]


class Hybrid(ModelGuided):
    """Model-guided and local search together: each proposal is, with probability
    ``local_share``, a free neighbour of the best configurations (as ``local`` proposes it)
    and otherwise the model's best-scored configuration (as ``model``).  The model looks
    everywhere, the neighbour walk refines the best region even where the model is wrong."""

    name = "hybrid"

    def __init__(self, pool, seed=0, init: int = 10, local_share: float = 0.5, **options):
        super().__init__(pool, seed, init=init, **options)
        self.local_share = float(local_share)

    def _propose(self, n, rng):
        from .local import best_first_neighbours
        told = len(self.costs) + len(self.pending)
        data = self._training_set() if told >= self.init else None
        if data is None:
            return self.random_free(n, rng)
        n_local = int(sum(rng.random() < self.local_share for _ in range(n)))
        taken: set[int] = set()
        out = best_first_neighbours(self, n_local, rng, taken)
        out += self._model_picks(n - len(out), rng, data, taken)
        out.extend(self.random_free(n - len(out), rng, exclude=set(out)))
        return out
