"""``model``: a surrogate model (scikit-learn's extremely randomized trees) ranks unmeasured
survivors.  Needs the optional extra: ``pip install 'beast-autotune[tune]'``."""
from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import BeastError

from .base import Strategy


def _sklearn_tree():
    try:
        from sklearn.tree import ExtraTreeRegressor
    except ImportError:
        raise BeastError("the model-guided strategy needs scikit-learn",
                         hint="pip install 'beast-autotune[tune]' (or '[gpu]', which brings it too)") from None
    return ExtraTreeRegressor


def _threads() -> int:
    """Threads for fitting and querying the trees: scikit-learn's tree builder and its
    predict() release the GIL, and each tree is independent, so the results do not depend
    on it (at most 8: a proposal must stay cheap beside the compile workers)."""
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _quiet():
    """scikit-learn's parameter checks off (the parameters are beast's own; their check is a
    third of a fit).  A context per thread: scikit-learn's configuration is thread-local."""
    import contextlib
    import sklearn
    try:
        return sklearn.config_context(skip_parameter_validation=True)
    except TypeError:                   # scikit-learn before 1.3
        return contextlib.nullcontext()


def _map(fn, items: list) -> list:
    """``[fn(x) for x in items]``, on :func:`_threads` threads, each taking one contiguous
    share of ``items`` (a task per item cost more than the small fits of a small space)."""
    workers = min(_threads(), len(items))
    if workers < 2:
        return [fn(x) for x in items]
    shares = [items[k * len(items) // workers:(k + 1) * len(items) // workers] for k in range(workers)]
    with ThreadPoolExecutor(workers) as ex:
        return [y for done in ex.map(lambda share: [fn(x) for x in share], shares) for y in done]


def extra_trees(tree_class, X: np.ndarray, y: np.ndarray, n: int, seed: int) -> list:
    """The ``n`` trees of ``sklearn.ensemble.ExtraTreesRegressor(n_estimators=n,
    min_samples_leaf=1, max_features=1.0, random_state=seed)`` fitted on ``X``, ``y``: tree k
    gets the k-th ``randint(2**31 - 1)`` of ``RandomState(seed)`` and every sample (no bootstrap),
    as the ensemble gives them. Built here, the forest's per-tree cloning and input checks (half
    of a replay's time) are left out; the trees and their predictions are the same.  They are
    fitted on several threads (:func:`_threads`), as the ensemble's ``n_jobs`` would."""
    rs = np.random.RandomState(seed)
    states = [rs.randint(np.iinfo(np.int32).max) for _ in range(n)]
    X = np.ascontiguousarray(X, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1, 1)

    def fit(state):
        with _quiet():
            return tree_class(min_samples_leaf=1, max_features=1.0, random_state=state).fit(X, y, check_input=False)
    return _map(fit, states)


def predict_trees(trees: list, X: np.ndarray) -> np.ndarray:
    """Each tree's predictions of the rows of ``X`` (one row per tree), on several threads."""
    X = np.ascontiguousarray(X, dtype=np.float32)     # what each tree's predict() converts to
    return np.stack(_map(lambda tree: tree.predict(X, check_input=False), trees))


class ModelGuided(Strategy):
    """Model-guided search: a forest of extremely randomized trees (scikit-learn) learns
    log(time) from the configurations measured so far and ranks the unmeasured ones by a
    lower confidence bound, mean - ``kappa`` x spread over the trees (optimistic where the
    trees disagree).

    * the first ``init`` proposals are random;
    * then the forest scores the candidates: every configuration when the pool has at most
      ``candidates``, otherwise a random ``candidates`` of the free ones plus every free
      neighbour of the ``top`` best configurations; it is refitted after every configuration
      told up to ``refit_all``, then after every ``1/refit_ratio`` more (6 %), each time on
      the first p configurations told, so that a resumed run fits the same models;
    * a fraction ``explore`` of proposals stays random;
    * the inputs are the parameter values, (``interactions``) the products of every pair of
      them, which trees cannot form themselves (threads = block_x x block_y, tile widths, ...),
      and (``alignment``) the largest power of two dividing each value;
    * failed configurations are left out of the training set (a failure says where the device
      refuses, not how fast its neighbours run; they are never proposed again), or, with
      ``fail_penalty`` p, learned as worse than the worst time seen (log time + p).
    """

    name = "model"

    def __init__(self, pool, seed=0, init: int = 16, kappa: float = 2.0, explore: float = 0.05,
                 trees: int = 48, candidates: int = 20000, top: int = 8,
                 fail_penalty: float | None = None, refit_all: int = 64, refit_ratio: int = 16,
                 interactions: bool = True, alignment: bool = True):
        super().__init__(pool, seed)
        self.alignment = bool(alignment)
        self.interactions = bool(interactions)
        self.refit_all, self.refit_ratio = int(refit_all), int(refit_ratio)
        self._cache = None
        self._cache_pos = None
        self._feat = None
        self.fail_penalty = None if fail_penalty is None else float(fail_penalty)
        self.init, self.kappa, self.explore = int(init), float(kappa), float(explore)
        self.trees, self.candidates, self.top = int(trees), int(candidates), int(top)
        self._Tree = _sklearn_tree()

    def _fit_point(self, told: int) -> int:
        """The number of told configurations the model in use was fitted on: every one up to
        ``refit_all``, then ever sparser (each refit after about 1/``refit_ratio`` more).  A
        function of ``told`` alone, so a run resumed from its log fits the same models."""
        p = min(told, self.refit_all)
        while p < told:
            nxt = p + max(1, -(-p // self.refit_ratio))
            if nxt > told:
                break
            p = nxt
        return p

    def _training_set(self, p: int):
        idx = np.fromiter(itertools.islice(self.costs.keys(), p), dtype=np.int64, count=p)
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
        return self._pool_features(idx), y

    def _pool_features(self, idx: np.ndarray) -> np.ndarray:
        """:meth:`_features` of the pool's rows ``idx`` as float32 (what the trees read), computed
        once per row: every refit reads them again, and a pool only grows at its end.  Not kept
        for a pool larger than ``candidates`` (a sample of a large space: each refit reads a few
        of its rows, and a million rows' features would take gigabytes)."""
        n = len(self.pool)
        if n > self.candidates:
            return np.ascontiguousarray(self._features(self.pool.X[idx]), dtype=np.float32)
        if self._feat is None or len(self._feat) < n:
            done = 0 if self._feat is None else len(self._feat)
            new = np.ascontiguousarray(self._features(self.pool.X[done:n]), dtype=np.float32)
            self._feat = new if self._feat is None else np.concatenate([self._feat, new])
        return self._feat[idx]

    def _features(self, X: np.ndarray) -> np.ndarray:
        """The model's inputs: the parameter values; with ``interactions`` the product of every
        pair of parameters that takes more than one value (block x tile sizes, ...); with
        ``alignment`` the power of two that divides each value (GPU code runs at different
        speeds on multiples of 32, 64, ...: warps, memory transactions)."""
        cols = [j for j, v in enumerate(self.pool.values) if len(v) > 1]
        parts = [X.astype(np.float64)]
        if self.interactions:
            F = parts[0]
            parts += [F[:, a] * F[:, b] for a, b in itertools.combinations(cols, 2)]
        if self.alignment:
            for j in cols:
                x = np.abs(X[:, j])
                parts.append(np.log2(np.where(x == 0, 1 << 16, x & -x)).astype(np.float64))
        return np.column_stack(parts)

    def _scores(self):
        """(candidate pool indices, their scores; lower is better) of the model fitted on the
        first :meth:`_fit_point` told configurations, or None before ``init`` or any success."""
        told = len(self.costs)
        if told < self.init:
            return None
        p = self._fit_point(told)
        if self._cache is not None and self._cache[0] == p:
            return self._cache[1:]
        data = self._training_set(p)
        if data is None:
            return None
        rng = np.random.default_rng([self.seed, p, 0x7EE5])
        X, y = data
        trees = extra_trees(self._Tree, X, y, self.trees, int(rng.integers(2**31 - 1)))
        cand = np.arange(len(self.pool))
        if len(cand) > self.candidates:
            # neighbours first: over a sampled pool they may add configurations to it
            near = [k for i in self.ranked()[: self.top] for k in self.pool.neighbours(i)]
            free = self.free_mask()
            near = [k for k in near if free[k]]
            pick = rng.choice(np.flatnonzero(free), size=min(self.candidates, int(free.sum())), replace=False)
            cand = np.unique(np.concatenate([pick, np.asarray(near, dtype=np.int64)]))
        per_tree = predict_trees(trees, self._pool_features(cand))
        score = per_tree.mean(axis=0) - self.kappa * per_tree.std(axis=0)
        score += rng.random(len(score)) * 1e-9                 # ties: random, reproducibly
        order = np.argsort(score, kind="stable")
        mean = per_tree.mean(axis=0) + rng.random(len(score)) * 1e-9
        self._cache = (p, cand[order], score[order], cand[np.argsort(mean, kind="stable")])
        return self._cache[1:]

    def _model_order(self, indices: list[int]) -> list[int]:
        """``indices`` best-scored first by the current model (unscored ones last, in the
        order given); unchanged before the model is fitted."""
        got = self._scores()
        if got is None or not indices:
            return indices
        cand = got[0]
        if self._cache_pos is None or self._cache_pos[0] is not cand or len(self._cache_pos[1]) < len(self.pool):
            pos = np.full(len(self.pool), len(cand), dtype=np.int64)
            pos[cand] = np.arange(len(cand))
            self._cache_pos = (cand, pos)
        pos = self._cache_pos[1]
        return sorted(indices, key=lambda k: int(pos[k]))

    def _model_picks(self, n: int, exclude: set, greedy: bool = False) -> list[int]:
        """The ``n`` free configurations (not in ``exclude``) the model scores best (with
        ``greedy``: predicts fastest, without the bonus for uncertainty)."""
        got = self._scores() if n > 0 else None
        if got is None:
            return []
        out = []
        for i in got[2 if greedy else 0].tolist():
            if self.is_free(i) and i not in exclude:
                out.append(i)
                if len(out) == n:
                    break
        return out

    def _propose(self, n, rng):
        n_random = int(sum(rng.random() < self.explore for _ in range(n)))
        out = self._model_picks(n - n_random, set())
        out.extend(self.random_free(n - len(out), rng, exclude=set(out)))
        return out


class Hybrid(ModelGuided):
    """Model-guided and local search together: each proposal is, with probability
    ``local_share``, a free neighbour of the best configurations (as ``local`` proposes it)
    and otherwise the model's best-scored configuration (as ``model``).  The model looks
    everywhere, the neighbour walk refines the best region even where the model is wrong.

    * the first ``start`` proposals: with ``design="centre"``, the configuration closest to
      the middle of every parameter's range, then (``start`` > 1) configurations of the central
      ``central`` fraction of the pool spread apart (:meth:`Strategy.central_free`); with
      ``design="random"``, random ones;
    * then, until the model is fitted (``init`` configurations told), a fraction
      ``warmup_share`` of the proposals are neighbours of the best and the rest random;
    * once the best has not improved for ``stall`` evaluations (0: always), the neighbour walk
      also tries every other value of one parameter of the ``wide`` best configurations, in
      the model's order, before the next configuration's neighbours (:meth:`Pool.line`: it
      jumps over bad values in between, e.g. from block size 128 to 256 across 144..240), and
      a fraction ``exploit`` of the model's proposals take the fastest predicted time instead
      of the lower confidence bound."""

    name = "hybrid"

    def __init__(self, pool, seed=0, init: int = 10, local_share: float = 0.5, start: int = 1,
                 warmup_share: float = 1.0, design: str = "centre", central: float = 0.05,
                 wide: int = 1, exploit: float = 0.5, stall: int = 32, **options):
        super().__init__(pool, seed, init=init, **options)
        if design not in ("centre", "random"):
            raise BeastError(f"design must be 'centre' or 'random', not {design!r}")
        self.wide, self.exploit, self.stall = int(wide), float(exploit), int(stall)
        self.design, self.central = str(design), float(central)
        self.local_share = float(local_share)
        self.warmup_share = float(warmup_share)
        self.start = int(start)

    def stalled(self) -> int:
        """How many configurations were told since the best one (0 before any success)."""
        r = self.ranked()
        if not r:
            return 0
        order = list(self.costs)
        return len(order) - 1 - order.index(r[0])

    def _propose(self, n, rng):
        from .local import best_first_neighbours
        share = self.local_share if self._scores() is not None else self.warmup_share
        n_local = int(sum(rng.random() < share for _ in range(n)))
        taken: set[int] = set()
        told = len(self.costs) + len(self.pending)
        if len(self.costs) < self.start:                 # the very first: the design
            n_local = 0
        out = []
        if self.design == "centre" and told < self.start:
            out = self.central_free(min(n, self.start - told), rng, quantile=self.central)
            taken.update(out)
            n_local = min(n_local, n - len(out))
        stalled = self.stall <= 0 or self.stalled() >= self.stall
        out += best_first_neighbours(self, n_local, rng, taken, wide=self.wide if stalled else 0,
                                     order=self._model_order)
        n_greedy = int(sum(rng.random() < (self.exploit if stalled else 0.0) for _ in range(n - len(out))))
        out += self._model_picks(n_greedy, taken, greedy=True)
        out += self._model_picks(n - len(out), taken | set(out))      # nothing before the model is fitted
        out.extend(self.random_free(n - len(out), rng, exclude=set(out)))
        return out
