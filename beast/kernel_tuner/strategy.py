"""beast's search strategy as a Kernel Tuner strategy.

Kernel Tuner (1.5) takes as ``strategy`` any object with a ``tune(searchspace, runner,
tuning_options)`` function; this module is one.  It runs beast's default strategy
(:data:`beast.search.DEFAULT_STRATEGY`) through Kernel Tuner's own runner, cache and
budget, on any kernel: the configurations are those of Kernel Tuner's ``Searchspace`` (built by
beast when called through :func:`beast.kernel_tuner.tune_kernel`), whatever the parameters' values
(integers, floats, strings, booleans)::

    import beast.kernel_tuner
    results, env = beast.kernel_tuner.tune_kernel(name, source, size, args, tune_params,
                                                  strategy="beast",
                                                  strategy_options={"max_fevals": 200})

    import kernel_tuner, beast.kernel_tuner.strategy    # Kernel Tuner's own tune_kernel
    kernel_tuner.tune_kernel(..., strategy=beast.kernel_tuner.strategy)

``strategy_options``: Kernel Tuner's ``max_fevals`` and ``time_limit`` (seconds) end the search
(checked before and after every evaluation, as Kernel Tuner's strategies do); beast's own are
``strategy`` (a name of :data:`beast.search.STRATEGIES`, default the default strategy),
``seed`` (a non-negative integer; default: ``tune_kernel``'s ``seed``, else drawn from NumPy's
global generator), ``batch`` (configurations proposed at a time, default 1) and ``prior`` (a path
or a list of paths: Kernel Tuner cache files or beast tune logs of the same space on other devices
or sizes, which the portfolio search starts from: :mod:`beast.search.prior`); any other
option goes to the beast strategy's constructor.  One objective is optimized, in the direction Kernel Tuner gives it
(``objective``, ``objective_higher_is_better``); a configuration that fails counts as evaluated.
"""
from __future__ import annotations

import math
import numbers
import sys

import numpy as np

from ..errors import BeastError
from ..search import DEFAULT_STRATEGY, STRATEGIES, Pool, check_seed, make_strategy

__all__ = ["tune", "searchspace_pool"]

#: strategy_options that Kernel Tuner itself acts on (its budget, its search-space construction)
KERNEL_TUNER_OPTIONS = ("max_fevals", "time_limit", "searchspace_construction_options")


def _code(values: list):
    """A parameter's values -> distinct integers that keep their order where they have one:
    integers stay themselves, other numbers become their rank, anything else (strings,
    booleans, mixed types) its position in ``tune_params``."""
    def plain_number(v, kind):
        return isinstance(v, kind) and not isinstance(v, (bool, np.bool_))

    if all(plain_number(v, numbers.Integral) for v in values):
        return int
    if all(plain_number(v, numbers.Real) for v in values):
        return {v: i for i, v in enumerate(sorted(set(values)))}.__getitem__
    rank: dict = {}
    for v in values:
        rank.setdefault((type(v), v), len(rank))
    return lambda v: rank[(type(v), v)]


def searchspace_pool(searchspace) -> tuple[Pool, dict]:
    """A beast :class:`~beast.search.Pool` of every configuration of Kernel Tuner's
    ``searchspace``, and the map from a pool configuration's values (a tuple) back to Kernel
    Tuner's configuration (a tuple of the user's values)."""
    names = list(searchspace.tune_params)
    configs = [tuple(c) for c in searchspace.list]
    codes = [_code(list(searchspace.tune_params[n])) for n in names]
    X = np.array([[code(v) for code, v in zip(codes, c)] for c in configs],
                 dtype=np.int64).reshape(len(configs), len(names))
    pool = Pool(names, X, complete=True)
    return pool, dict(zip(map(tuple, X.tolist()), configs))


def _cost(value: float, higher_is_better: bool) -> float | None:
    """Kernel Tuner's cost of a result (negated when higher is better; the largest float for
    a failure) as beast's: positive, lower is better (beast's model learns its logarithm), or
    None for a failure."""
    if value == sys.float_info.max or not math.isfinite(value):
        return None
    if higher_is_better:
        return 1.0 / -value if value < 0 else None
    return value if value > 0 else None


def _prior(pool: Pool, to_kernel_tuner: dict, paths, name: str) -> np.ndarray:
    """strategy_options' ``prior`` (a path or a list of them) as scores of ``pool``: each prior
    configuration (the user's values, as in Kernel Tuner's cache) matched to the pool's."""
    from ..search.prior import check_prior_strategy, prior_scores
    check_prior_strategy(name)
    if isinstance(paths, (str, bytes)) or not isinstance(paths, (list, tuple)):
        paths = [paths]
    to_pool = {kt: pool.find(dict(zip(pool.names, coded))) for coded, kt in to_kernel_tuner.items()}

    def key(config):
        try:
            return to_pool.get(tuple(config[n] for n in pool.names))
        except (KeyError, TypeError):           # a parameter missing, or a value no tuple can hold
            return None
    return prior_scores(pool, paths, key=key)


def tune(searchspace, runner, tuning_options):
    """Kernel Tuner's strategy interface: search ``searchspace`` with beast's strategy,
    evaluating through ``runner`` (Kernel Tuner's cost function, cache and budget); returns
    the results of every configuration evaluated, as Kernel Tuner's strategies do."""
    from kernel_tuner.strategies.common import CostFunc
    from kernel_tuner.util import StopCriterionReached

    options = dict(tuning_options.strategy_options or {})
    for key in KERNEL_TUNER_OPTIONS:
        options.pop(key, None)
    name = options.pop("strategy", DEFAULT_STRATEGY)
    if name not in STRATEGIES:
        raise BeastError(f"unknown beast strategy {name!r} in strategy_options",
                         hint="use one of: " + ", ".join(STRATEGIES))
    seed = options.pop("seed", None)
    if seed is not None:
        seed = check_seed(seed, "strategy_options seed")
    elif tuning_options.get("seed") is not None:
        seed = check_seed(tuning_options.get("seed"), "tune_kernel's seed")
    else:
        seed = int(np.random.randint(2 ** 31 - 1))
    batch = options.pop("batch", 1)
    if isinstance(batch, bool) or not isinstance(batch, numbers.Integral) or batch < 1:
        raise BeastError(f"strategy_options batch must be a positive integer, not {batch!r}")
    objectives = tuning_options.objective
    directions = tuning_options.objective_higher_is_better
    if isinstance(objectives, (list, tuple)):
        if len(objectives) != 1:
            raise BeastError(f"beast's strategy optimizes one objective, not {len(objectives)}",
                             hint="give Kernel Tuner one objective (objective=..., "
                                  "objective_higher_is_better=...)")
        higher = bool(directions[0])
    else:
        higher = bool(directions)

    pool, to_kernel_tuner = searchspace_pool(searchspace)
    if options.get("prior") is not None:
        options["prior"] = _prior(pool, to_kernel_tuner, options["prior"], name)
    try:
        strategy = make_strategy(name, pool=pool, seed=seed, **options)
    except BeastError as err:
        raise BeastError(f"strategy_options: {err.message}",
                         hint="Kernel Tuner's max_fevals and time_limit; beast's strategy, seed "
                              "and batch; and the constructor's options of beast's strategy "
                              f"{name!r} ({STRATEGIES[name].__name__})") from None
    cost_func = CostFunc(searchspace, tuning_options, runner, snap=False)
    try:
        while True:
            proposed = strategy.ask(int(batch))
            if not proposed:
                break                              # every configuration evaluated
            configs = [to_kernel_tuner[tuple(c[n] for n in pool.names)] for c in proposed]
            costs = cost_func.eval_all(configs, check_restrictions=False)
            for config, cost in zip(proposed, costs):
                strategy.tell(config, _cost(float(cost), higher))
    except StopCriterionReached as stop:
        if tuning_options.verbose:
            print(stop)
    return cost_func.results
