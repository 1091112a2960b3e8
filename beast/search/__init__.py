"""Search strategies: what to measure next (``beast tune --strategy``, ``beast replay``).

* ``random`` -- uniform random search (:class:`~.random_search.RandomSearch`);
* ``local`` -- best-first local search over neighbours in the space (:class:`~.local.LocalSearch`);
* ``model`` -- a surrogate model (scikit-learn trees) ranking unmeasured survivors
  (:class:`~.model.ModelGuided`; optional extra ``[tune]``);
* ``hybrid`` -- both: a central first design, then half the proposals from the model, half
  neighbours of the best (:class:`~.model.Hybrid`; optional extra ``[tune]``).

All share the ask/tell protocol of :class:`~.base.Strategy`; :func:`make_strategy` builds one
for a space, and :class:`~.base.StrategyStream` is how a tuning loop drives one (or any object
with ``ask``/``tell``).  ``beast tune`` also has :data:`EXHAUSTIVE`, which is no search.
"""
from __future__ import annotations

from ..errors import BeastError

from .base import POOL_LIMIT, Pool, Strategy, StrategyStream, check_seed, record_cost, survivors_sample
from .local import LocalSearch
from .model import Hybrid, ModelGuided
from .portfolio import Portfolio
from .random_search import RandomSearch

#: the strategy used when none is named (``beast replay``, ``strategy="beast"`` of
#: :func:`beast.kernel_tuner.tune_kernel`).
DEFAULT_STRATEGY = "portfolio"

#: the pool of ``random`` over a large space: a uniform sample of this many survivors.
RANDOM_POOL = 100_000

#: strategy name -> class
STRATEGIES = {"random": RandomSearch, "local": LocalSearch, "model": ModelGuided, "hybrid": Hybrid,
              "portfolio": Portfolio}

#: ``beast tune``'s default order, beside the searches of :data:`STRATEGIES`: every survivor (or
#: the first ``budget``) in enumeration order, streamed from the space.  It has no class: it
#: proposes from no pool and learns nothing, so :func:`make_strategy` does not build it.
EXHAUSTIVE = "exhaustive"


def make_strategy(name: str, space=None, *, seed: int = 0, pool: Pool | None = None,
                  budget: int | None = None, pool_limit: int = POOL_LIMIT, **options) -> Strategy:
    """The strategy ``name`` over ``space`` (or over a ready ``pool``).

    The pool holds every survivor when the space has at most ``pool_limit`` of them, otherwise
    a uniform sample (``space.sample``); ``random`` needs no more than a sample of
    :data:`RANDOM_POOL` (or twice its ``budget``).  ``seed``: a non-negative integer.
    ``options`` go to the strategy's constructor; ``prior`` (earlier runs of the space: paths,
    :class:`~.prior.PriorData` or pool scores, :mod:`.prior`) starts ``portfolio`` from them."""
    cls = STRATEGIES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise BeastError(f"unknown strategy {name!r}", hint="use one of: " + ", ".join(STRATEGIES))
    seed = check_seed(seed)
    if pool is None:
        if space is None:
            raise BeastError("make_strategy needs a space or a pool")
        limit = pool_limit
        if name == "random":                       # a uniform sample is all it needs
            limit = min(pool_limit, max(2 * int(budget or 0), RANDOM_POOL))
        pool = Pool.from_space(space, limit=limit, seed=seed)
    _check_options(name, cls, options)
    if options.get("prior") is not None:
        from .prior import PriorPortfolio, as_scores, check_prior_strategy
        check_prior_strategy(name)
        cls = PriorPortfolio
        options = dict(options, prior=as_scores(pool, options["prior"]))
    else:
        options.pop("prior", None)
    try:
        return cls(pool, seed=seed, **options)
    except TypeError as err:
        raise BeastError(f"bad option for strategy {name!r}: {err}") from None


def _check_options(name: str, cls, options: dict) -> None:
    """Each option of the same kind as its default in the constructors of ``cls`` and its bases:
    an integer where the default is one (not 2.5: the constructors would truncate it), a number
    where it is a float, True or False where it is a bool (None stands for 'not set')."""
    import inspect
    import numbers
    defaults = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is not None:
            for p in inspect.signature(init).parameters.values():
                if p.default is not inspect.Parameter.empty:
                    defaults[p.name] = p.default
    for key, value in options.items():
        default = defaults.get(key)
        if key not in defaults or default is None or value is None and default is None:
            continue
        if isinstance(default, bool):
            ok, kind = isinstance(value, bool), "True or False"
        elif isinstance(default, int):
            ok, kind = isinstance(value, numbers.Integral) and not isinstance(value, bool), "an integer"
        elif isinstance(default, float):
            ok, kind = isinstance(value, numbers.Real) and not isinstance(value, bool), "a number"
        else:
            continue
        if not ok:
            raise BeastError(f"option {key} of strategy {name!r} must be {kind} (its default is "
                             f"{default!r}), not {value!r}")


__all__ = ["STRATEGIES", "DEFAULT_STRATEGY", "EXHAUSTIVE", "make_strategy", "Strategy", "StrategyStream", "Pool",
           "RandomSearch", "LocalSearch", "ModelGuided", "Hybrid", "Portfolio", "record_cost", "survivors_sample",
           "POOL_LIMIT", "RANDOM_POOL", "strategy_stream"]


def strategy_stream(strategy, need: int | None, batch: int = 8) -> StrategyStream:
    """Up to ``need`` configurations (all the strategy proposes when None) from ``strategy``,
    asked ``batch`` at a time: a :class:`~.base.StrategyStream` (its ``tell`` hands outcomes
    back, so that later batches learn from them)."""
    return StrategyStream(strategy, need, batch)
