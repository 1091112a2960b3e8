"""How well candidate surrogate models predict the recorded times, apart from any search.

    BEAST_BENCHMARK_HUB=DIR python bench/surrogate_study.py                  # tuning files, every model
    BEAST_BENCHMARK_HUB=DIR python bench/surrogate_study.py --files kt_gemm_RTX_3090 --models et,gp

For each data file (by default the tuning files of bench_strategies.FILES: held-out files stay
out of development) and each training size n, ``--seeds`` random training sets of n working
configurations are drawn; each model learns log(time) from one and predicts the rest.  Reported,
as means over the seeds: Spearman's rank correlation between prediction and truth on the
configurations not trained on (``rho``), the fraction of the optimum of the best of the model's
ten fastest predictions among them (``top10``), and milliseconds per fit and prediction of the
whole rest (``ms``).  Random training sets are not what a search collects (it samples the good
regions more densely), so this judges the models' inductive bias, not a strategy.

Models: ``et`` the model of beast's strategies (48 extremely randomized trees over the parameter
values, their pairwise products and power-of-two alignments: :mod:`beast.search.model`),
``et-plain`` the same trees over the parameter values alone, ``rf`` a random forest (48 trees,
bootstrap) over beast's inputs, ``hgb`` histogram gradient boosting over them, ``gp`` a Gaussian
process (Matérn 5/2 with one length scale per parameter and a noise term, over the unit cube of
value ranks), ``ridge2`` a quadratic ridge regression (the unit coordinates, their squares and
pairwise products; penalty by generalized cross-validation), ``et+ridge2`` the two standardized
and weighed equally, ``stack`` the two weighed by :func:`stack_weight` -- all scikit-learn.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

MODELS = ("et", "et-plain", "rf", "hgb", "gp", "ridge2", "et+ridge2", "stack")


@functools.lru_cache(maxsize=2)
def quadratic(pool) -> np.ndarray:
    """The inputs of ``ridge2``: the pool's unit coordinates, their squares and pairwise products
    (computed once per pool: the stack fits the ridge five times a training set)."""
    from sklearn.preprocessing import PolynomialFeatures
    return PolynomialFeatures(2, include_bias=False).fit_transform(pool.unit)


def stack_weight(strategy, train, y, seed, folds=4):
    """The weight w in 0, 0.1, ..., 1 of ``ridge2`` against ``et`` (12 trees a fold here) whose
    blend (1 - w) et + w ridge2 has the least squared error out of fold on the training set."""
    from beast.search.model import extra_trees, predict_trees
    fold = np.arange(len(train)) % folds
    np.random.default_rng(seed).shuffle(fold)
    X = strategy._pool_features(np.arange(len(strategy.pool)))
    oof = np.zeros((2, len(train)))
    for f in range(folds):
        a, b = train[fold != f], train[fold == f]
        oof[0, fold == f] = predict_trees(extra_trees(strategy._Tree, X[a], y[fold != f], 12, seed), X[b]).mean(axis=0)
        oof[1, fold == f] = fit_predict("ridge2", strategy, a, b, y[fold != f], seed)
    ws = np.linspace(0, 1, 11)
    return float(ws[np.argmin([np.mean(((1 - w) * oof[0] + w * oof[1] - y) ** 2) for w in ws])])


def fit_predict(name, strategy, train, test, y, seed):
    """Predicted log(time) of the pool rows ``test`` by model ``name`` fitted on rows ``train``."""
    from beast.search.model import extra_trees, predict_trees
    pool = strategy.pool
    if name == "et+ridge2":             # the two, standardized, weighed equally
        parts = [fit_predict(m, strategy, train, test, y, seed) for m in ("et", "ridge2")]
        return np.mean([(q - q.mean()) / (q.std() + 1e-12) for q in parts], axis=0)
    if name == "stack":
        w = stack_weight(strategy, train, y, seed)
        return (1 - w) * fit_predict("et", strategy, train, test, y, seed) + w * fit_predict("ridge2", strategy, train, test, y, seed)
    if name == "ridge2":
        from sklearn.linear_model import RidgeCV
        U = quadratic(pool)
        return RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(U[train], y).predict(U[test])
    if name == "gp":
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
        U = pool.unit
        kernel = ConstantKernel() * Matern(length_scale=np.ones(U.shape[1]), nu=2.5) + WhiteKernel()
        with warnings.catch_warnings():         # length scales at their bounds: not an error here
            warnings.simplefilter("ignore")
            gp = GaussianProcessRegressor(kernel, normalize_y=True, random_state=seed).fit(U[train], y)
        return gp.predict(U[test])
    if name == "et-plain":
        cols = [j for j, v in enumerate(pool.values) if len(v) > 1]
        X = pool.X[:, cols].astype(np.float64)
    else:
        X = strategy._pool_features(np.arange(len(pool)))
    if name in ("et", "et-plain"):
        trees = extra_trees(strategy._Tree, X[train], y, 48, seed)
        return predict_trees(trees, X[test]).mean(axis=0)
    if name == "rf":
        from sklearn.ensemble import RandomForestRegressor
        model = RandomForestRegressor(48, random_state=seed, n_jobs=-1)
    elif name == "hgb":
        from sklearn.ensemble import HistGradientBoostingRegressor
        model = HistGradientBoostingRegressor(max_iter=200, min_samples_leaf=5, random_state=seed)
    else:
        raise SystemExit(f"unknown model {name!r}; one of: {', '.join(MODELS)}")
    return model.fit(X[train], y).predict(X[test])


def study(stem, models, sizes, seeds):
    """Rows (stem, n, model, rho, top10, ms) for one data file."""
    from scipy.stats import spearmanr

    from bench_strategies import recorded
    from beast.search.model import ModelGuided
    pool, times = recorded(stem)
    t = np.asarray(times, dtype=float)
    ok = np.flatnonzero(np.isfinite(t) & (t > 0))
    best = t[ok].min()
    strategy = ModelGuided(pool)
    rows = []
    for n in sizes:
        for name in models:
            rho, top, spent = [], [], 0.0
            for seed in range(seeds):
                train = np.random.default_rng([seed, n]).choice(ok, n, replace=False)
                test = np.setdiff1d(ok, train)
                start = time.perf_counter()
                pred = fit_predict(name, strategy, train, test, np.log(t[train]), seed)
                spent += time.perf_counter() - start
                rho.append(spearmanr(pred, np.log(t[test])).correlation)
                top.append(best / t[test][np.argsort(pred, kind="stable")[:10]].min())
            rows.append((stem, n, name, float(np.mean(rho)), float(np.mean(top)), 1000 * spent / seeds))
            print(f"{stem:24s} n={n:<4d} {name:9s} rho {rows[-1][3]:.3f}  top10 {rows[-1][4]:.3f}  "
                  f"{rows[-1][5]:6.0f} ms", flush=True)
    return rows


def main(argv=None):
    from bench_strategies import FILES
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", default=None, help="comma-separated data file stems (default: the tuning files)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--sizes", default="40,100,250", help="training set sizes")
    ap.add_argument("--seeds", type=int, default=8, help="training sets per size")
    args = ap.parse_args(argv)
    stems = args.files.split(",") if args.files else [s for s, (_, role) in FILES.items() if role == "tuning"]
    unknown = [s for s in stems if s not in FILES]
    if unknown:
        raise SystemExit(f"unknown data file {unknown[0]!r}; one of: {', '.join(FILES)}")
    models = args.models.split(",")
    bad = [m for m in models if m not in MODELS]
    if bad:
        raise SystemExit(f"unknown model {bad[0]!r}; one of: {', '.join(MODELS)}")
    rows = []
    for stem in stems:
        rows += study(stem, models, [int(x) for x in args.sizes.split(",")], args.seeds)
    print("\n| data | n | " + " | ".join(models) + " |")
    print("|---|---|" + "---|" * len(models))
    for stem in stems:
        for n in sorted({r[1] for r in rows}):
            got = {r[2]: r for r in rows if r[0] == stem and r[1] == n}
            print(f"| {stem} | {n} | " + " | ".join(f"{got[m][3]:.3f} / {got[m][4]:.3f} / {got[m][5]:.0f}"
                                                 for m in models) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
