"""Transfer: a search that starts from what was measured before (``--prior FILE...``).

A *prior* is an earlier tuning run of the same space on another device or problem size: a
beast tune log (:mod:`beast.tune.log`) or a Kernel Tuner cache file (``.json`` or ``.json.gz``).
Absolute times differ between GPUs, so only each configuration's *rank* within its prior is
kept: :func:`prior_scores` maps every prior onto a pool (0 the prior's fastest configuration,
1 its slowest or a failure there; the mean over several priors; NaN where no prior has it).

:class:`PriorPortfolio` is beast's default strategy (:class:`~.portfolio.Portfolio`) given
such scores.  It uses them in three ways, each bounded so that a prior from a different
landscape costs little:

* right after the design's first (central) configuration, up to ``prior_top`` of the
  configurations best in the prior: the first always, each next one only while one of them is
  the best so far.  The design's other points are chosen as if these were not there, and the
  design keeps its length;
* the surrogate model gets the prior score as one more input, but only while the rank
  correlation between the prior scores and this device's measured log times (on the
  configurations its model is fitted on) is at least ``prior_gate`` and three standard errors
  of an unrelated prior's (3 / sqrt(n)), over at least ``prior_min`` configurations; otherwise
  (a prior of another landscape, or too few measurements to tell) the model is fitted without
  it, as without a prior.  The trees split on the prior score only where it explains this
  device's times, so this device's measurements take over as they come;
* while the prior agrees so, the design ends early (after ``prior_cut`` of its points, the
  prior's picks not counted): the model and the moves take over from there.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from ..errors import BeastError

from .base import Pool, record_cost
from .portfolio import Portfolio

_HINT = ("a prior is a beast tune log or a Kernel Tuner cache file of the same space (the same "
         "parameters and values) measured on another device or problem size")


@dataclass
class PriorData:
    """An earlier run's configurations (parameter -> value, as recorded) and their times in ms
    (None: the configuration failed there)."""

    configs: list[dict]
    times: list[float | None]
    path: str | None = None
    kind: str = "kernel_tuner"
    names: tuple[str, ...] = field(default_factory=tuple)


def read_prior(path: str | os.PathLike) -> PriorData:
    """Read a prior: a beast tune log (JSON lines with a ``beast_tune_log`` header) or a Kernel
    Tuner cache file (JSON or gzip-compressed JSON with ``cache``); the content decides.  A
    file that is neither is a BeastError naming it."""
    path = os.fspath(path)
    if _is_tune_log(path):
        from beast.tune.log import read_log
        header, records, _ = read_log(path)
        configs, times = [], []
        for rec in records:
            if not isinstance(rec.get("config"), dict) or rec.get("status") == "pruned":
                continue                    # pruned: predicted slow, never measured
            configs.append(dict(rec["config"]))
            times.append(record_cost(rec))
        names = tuple((header or {}).get("iterators") or ())
        if not configs:
            raise BeastError("the prior (a beast tune log) holds no measured configuration",
                             filename=path, hint=_HINT)
        return PriorData(configs, times, path, "beast_log", names)
    from .recorded import _json_type, _read_json, _time
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("cache"), dict):
        what = _json_type(data) if not isinstance(data, dict) else "an object without a 'cache' object"
        raise BeastError(f"the prior is neither a beast tune log nor a Kernel Tuner cache file "
                         f"(its JSON is {what})", filename=path, hint=_HINT)
    names = data.get("tune_params_keys") or list(data.get("tune_params") or ())
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise BeastError("the prior (a Kernel Tuner cache file) does not name its parameters "
                         "(tune_params_keys)", filename=path, hint=_HINT)
    configs, times = [], []
    for key, entry in data["cache"].items():
        if not isinstance(entry, dict):
            continue
        if all(n in entry for n in names):
            configs.append({n: entry[n] for n in names})
        else:
            values = str(key).split(",")
            if len(values) != len(names):
                continue
            configs.append({n: _number(v) for n, v in zip(names, values)})
        t = _time(entry)
        times.append(t if math.isfinite(t) else None)
    if not configs:
        raise BeastError("the prior (a Kernel Tuner cache file) has no configurations",
                         filename=path, hint=_HINT)
    return PriorData(configs, times, path, "kernel_tuner", tuple(names))


def _is_tune_log(path: str) -> bool:
    """Whether ``path`` starts like a beast tune log (its first line a JSON header)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except FileNotFoundError:
        raise BeastError("no such prior file", filename=path, hint=_HINT) from None
    except OSError as err:
        raise BeastError(f"cannot read the prior: {err.strerror or err}", filename=path) from None
    return head[:2] != b"\x1f\x8b" and b'"beast_tune_log"' in head.split(b"\n", 1)[0]


def _number(text: str):
    """A cache key's value as the int or float it spells, else the string."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def source_ranks(pool: Pool, source: PriorData, key: Callable[[dict], int | None] | None = None) -> np.ndarray:
    """One prior on ``pool``: per pool index its rank in the prior scaled to [0, 1] (0 the
    fastest; a configuration that failed there 1), NaN where the prior lacks it.  ``key``
    maps a prior configuration to its pool index (None: not in the pool); by default the
    pool's look-up (:meth:`Pool.find`, or :meth:`Pool.adopt` for a sampled pool, which adds a
    prior's configuration that the sample lacks).  A configuration of the prior that is not
    in the pool is ignored; a prior that shares none with it, or none with a time, is a
    BeastError."""
    if key is None:
        key = pool.find if pool.complete else pool.adopt
    best: dict[int, float] = {}
    for config, t in zip(source.configs, source.times):
        i = key(config)
        if i is None:
            continue
        t = math.inf if t is None or not t > 0 else float(t)
        if t < best.get(i, math.inf) or i not in best:
            best[i] = t
    where = source.path or "the prior"
    if not best:
        raise BeastError(f"{where} shares no configuration with the space", filename=source.path,
                         hint=_HINT + f"; the space's parameters: {', '.join(pool.names)}"
                         + (f"; the prior's: {', '.join(source.names)}" if source.names else ""))
    idx = np.fromiter(best.keys(), dtype=np.int64, count=len(best))
    t = np.fromiter(best.values(), dtype=np.float64, count=len(best))
    ok = np.isfinite(t)
    if not ok.any():
        raise BeastError(f"no configuration {where} shares with the space has a time (every one "
                         f"failed there)", filename=source.path, hint=_HINT)
    ranks = np.empty(len(t))
    ranks[ok] = _average_ranks(t[ok]) / max(1, int(ok.sum()))
    ranks[~ok] = 1.0
    out = np.full(len(pool), np.nan)
    out[idx] = ranks
    return out


def prior_scores(pool: Pool, sources: Iterable, key: Callable[[dict], int | None] | None = None) -> np.ndarray:
    """Every prior of ``sources`` (:class:`PriorData` or paths, read with :func:`read_prior`)
    on ``pool`` (:func:`source_ranks`), averaged where several have a configuration: per pool
    index a score in [0, 1], lower is faster there, NaN where no prior has it."""
    sources = [s if isinstance(s, PriorData) else read_prior(s) for s in sources]
    if not sources:
        raise BeastError("no prior given", hint=_HINT)
    ranks = [source_ranks(pool, s, key) for s in sources]
    n = len(pool)                                  # a sampled pool may have grown meanwhile
    stack = np.full((len(ranks), n), np.nan)
    for k, r in enumerate(ranks):
        stack[k, :len(r)] = r
    have = np.isfinite(stack)
    with np.errstate(invalid="ignore"):
        return np.where(have.any(axis=0), np.nansum(stack, axis=0) / np.maximum(have.sum(axis=0), 1), np.nan)


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """0.5, 1.5, ...: the mean position of each value among the sorted ``x`` (ties share it)."""
    order = np.argsort(x, kind="stable")
    sx = x[order]
    start = np.r_[0, np.flatnonzero(np.diff(sx)) + 1]
    end = np.r_[start[1:], len(x)]
    mean = (start + end - 1) / 2.0
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(mean, end - start)
    return ranks + 0.5


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of ``a`` and ``b`` (0 when either is constant)."""
    ra, rb = _average_ranks(np.asarray(a, float)), _average_ranks(np.asarray(b, float))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / den) if den > 0 else 0.0


class PriorPortfolio(Portfolio):
    """:class:`~.portfolio.Portfolio` started from a prior (see the module docstring).

    ``prior``: one score per pool configuration (:func:`prior_scores`; lower is better there,
    NaN unknown).  ``prior_top``: how many of the prior's best configurations are proposed
    after the first; ``prior_gate``: the least rank correlation between the prior and this
    device's times for the model to use the prior, measured on at least ``prior_min``
    configurations."""

    name = "portfolio"

    def __init__(self, pool, seed=0, prior=None, prior_top: int = 4, prior_gate: float = 0.3,
                 prior_min: int = 12, prior_cut: int = 12, **options):
        super().__init__(pool, seed, **options)
        self._design = self.start
        scores = np.asarray(prior, dtype=np.float64) if prior is not None else None
        if scores is None or scores.ndim != 1 or len(scores) != len(pool):
            raise BeastError(f"the prior must give one score per configuration of the pool ({len(pool)})",
                             hint="build it with beast.search.prior.prior_scores(pool, files)")
        self.prior = scores
        self.prior_top, self.prior_gate, self.prior_min = int(prior_top), float(prior_gate), int(prior_min)
        self.prior_cut = int(prior_cut)
        known = np.flatnonzero(np.isfinite(scores))
        tie = np.random.default_rng([self.seed, 0x9A10]).random(len(known))
        self._prior_order = known[np.lexsort((tie, scores[known]))].tolist()
        self._prior_on = False
        self._gates: dict[int, bool] = {}

    def _prior_column(self, idx: np.ndarray) -> np.ndarray:
        """The prior score of pool rows ``idx`` (0.5, the middle, where unknown)."""
        idx = np.asarray(idx, dtype=np.int64)
        col = np.full(len(idx), 0.5)
        inside = idx < len(self.prior)
        got = self.prior[idx[inside]]
        col[inside] = np.where(np.isfinite(got), got, 0.5)
        return col

    def prior_agrees(self, p: int) -> bool:
        """Whether the prior ranks the first ``p`` told configurations that succeeded like this
        device does (rank correlation at least ``prior_gate`` over at least ``prior_min``)."""
        got = self._gates.get(p)
        if got is None:
            idx, costs = [], []
            for i, c in list(self.costs.items())[:p]:
                if c is not None and c > 0 and i < len(self.prior) and math.isfinite(self.prior[i]):
                    idx.append(i)
                    costs.append(c)
            # 3 / sqrt(n): three standard errors from the correlation of an unrelated prior
            got = len(idx) >= self.prior_min and rank_correlation(
                self.prior[np.array(idx)], np.log(costs)) >= max(self.prior_gate, 3 / math.sqrt(len(idx)))
            self._gates[p] = got
        return got

    def _scores(self):
        told = len(self.costs)
        if told >= self.init:
            self._prior_on = self.prior_agrees(self._fit_point(told))
        return super()._scores()

    def _pool_features(self, idx: np.ndarray) -> np.ndarray:
        F = super()._pool_features(idx)
        if not self._prior_on:
            return F
        return np.column_stack([F, self._prior_column(idx).astype(np.float32)])

    def _picked(self) -> set[int]:
        """The prior's picks told or pending (its best that are no longer free)."""
        return {i for i in self._prior_order[:2 * self.prior_top + 1] if not self.is_free(i)}

    def _design_points(self) -> list[int]:
        # the prior's picks are not the design's: the centre must beat the design's own points
        picked = self._picked()
        return [i for i in self.costs if i not in picked]

    def _picking(self, told: int) -> bool:
        """Whether the next proposal is one of the prior's best: in the ``prior_top`` after the
        first, and, after the first of them, only while one of them is the best so far (a
        prior whose best is not good here is not followed further)."""
        if not 1 <= told < 1 + self.prior_top:
            return False
        ranked = self.ranked()
        picked = self._picked()
        return not (picked & set(self.costs)) or bool(ranked) and ranked[0] in picked

    def central_free(self, n, rng, exclude=None, quantile=0.05, ignore=None):
        # the design as without a prior: its picks do not push the design's points away
        return super().central_free(n, rng, exclude, quantile, ignore=self._picked() | set(ignore or ()))

    def _propose(self, n, rng):
        out: list[int] = []
        try:                                   # what is in ``out`` is pending for the rest of the batch
            if not self.costs and not self.pending and n > 1 and self.prior_top > 0:
                out = [int(i) for i in self._design_step(1, rng)]      # the centre, then the picks
                self.pending.update(out)
            told = len(self.costs) + len(self.pending)
            if self._picking(told):
                want = min(n - len(out), 1 + self.prior_top - told)
                picks = []
                for i in self._prior_order:
                    if len(picks) == want:
                        break
                    if self.is_free(i):
                        picks.append(i)
                out += picks
                self.pending.update(picks)
            if len(out) < n:
                out += [int(i) for i in self._design_step(n - len(out), rng)]
            return out
        finally:
            self.pending.difference_update(out)

    def _design_step(self, n, rng):
        """The portfolio's proposals, its design as long as without a prior plus the prior's
        picks, ended early once the prior agrees with this device."""
        told = len(self.costs) + len(self.pending)
        picked = len(self._picked())
        self.start = self._design + picked
        if self.prior_cut + picked <= told < self.start and self.prior_agrees(len(self.costs)):
            self.start = told
        return super()._propose(n, rng)


def check_prior_strategy(name: str) -> None:
    """A clear error unless ``name`` is a strategy that can use a prior."""
    if name != "portfolio":
        raise BeastError(f"a prior (--prior) is used by the portfolio strategy, not {name!r}",
                         hint="use --strategy portfolio (beast's default search), or leave --prior out")


def as_scores(pool: Pool, prior) -> np.ndarray:
    """``prior`` as pool scores: an array of one score per configuration as it is; a path, a
    :class:`PriorData` or a list of them read and matched (:func:`prior_scores`)."""
    if isinstance(prior, (str, os.PathLike, PriorData)):
        prior = [prior]
    if isinstance(prior, np.ndarray) and prior.dtype.kind == "f":
        return prior
    if isinstance(prior, Sequence) and prior and all(isinstance(p, (str, os.PathLike, PriorData)) for p in prior):
        return prior_scores(pool, prior)
    return np.asarray(prior, dtype=np.float64)
