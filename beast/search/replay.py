"""Replay: play a search strategy against recorded times, without a GPU.

The data is a brute-forced tuning run in Kernel Tuner's cache format (``tune_params``,
``tune_params_keys``, ``cache``: one entry per configuration with its ``time`` in ms, or an
error string for a configuration that failed on the device), as in the FAIR Benchmark Hub
for Auto-Tuning.  A strategy "measures" a configuration by looking its time up; a failed one
counts as an evaluation that found nothing.  Its quality after b evaluations is the fraction
of the optimum it reached: best time overall / best time found (1.0 = the optimum, 0 before
any success).  ``beast replay`` runs this; :func:`replay` is the API.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..errors import BeastError
from . import Pool, check_seed, make_strategy
from .base import check_count
from .recorded import RecordedRun, load_recorded, match_space  # noqa: F401 - re-exported


@dataclass
class ReplayResult:
    """Best-so-far fraction of the optimum after each evaluation, one row per repeat."""

    strategy: str
    size: int
    optimum: float
    fractions: np.ndarray                    # (repeats, budget)
    seeds: list[int] = field(default_factory=list)

    @property
    def budget(self) -> int:
        return self.fractions.shape[1]

    def at(self, b: int) -> np.ndarray:
        """The fraction of the optimum of every repeat after ``b`` evaluations (1 to
        :attr:`budget`; BeastError otherwise)."""
        check_checkpoints(self, [b])
        return self.fractions[:, int(b) - 1]

    def evaluations_to(self, target: float) -> np.ndarray:
        """Per repeat, the evaluations needed to reach ``target`` x optimum (inf: not within
        the budget)."""
        hit = self.fractions >= target - 1e-12
        first = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, np.inf)
        return first.astype(np.float64)


def replay(pool: Pool, times, strategy: str, budget: int, repeats: int = 10,
           seed: int = 0, batch: int = 1, progress: Callable[[int, int], None] | None = None,
           **options) -> ReplayResult:
    """Play ``strategy`` ``repeats`` times (seeds ``seed``, ``seed+1``, ...) for ``budget``
    evaluations each, asking ``batch`` configurations at a time, against ``times``.

    ``times``: the time in ms of each pool configuration, in pool order (an array or a list,
    one entry per configuration).  An entry that is not a finite positive number -- NaN, inf,
    0 or negative -- marks a configuration that failed, as in a recorded file (see
    :func:`load_recorded`) and in Kernel Tuner's strategy interface: evaluating it finds
    nothing.  ``budget``, ``repeats`` and ``batch`` are integers of at least 1 (numpy integers
    too), ``seed`` a non-negative integer; a budget beyond the pool is cut to the pool's size.
    Anything else is a BeastError naming the argument.  ``progress(done, total)``, when given,
    is called after each batch with the evaluations done of ``repeats`` x ``budget``."""
    budget, repeats, batch = (check_count(value, name) for name, value in
                              (("budget", budget), ("repeats", repeats), ("batch", batch)))
    seed = check_seed(seed)
    times = _failed_as_nan(times, len(pool))
    budget = min(budget, len(pool))
    finite = times[np.isfinite(times)]
    if not len(finite):
        raise BeastError("no configuration has a time (every one failed: none is a finite "
                         "positive number)")
    optimum = float(finite.min())
    fractions = np.zeros((repeats, budget))
    seeds = [seed + r for r in range(repeats)]
    total = repeats * budget
    if progress is not None:
        progress(0, total)
    for r, s in enumerate(seeds):
        strat = make_strategy(strategy, pool=pool, seed=s, **options)
        best = math.inf
        done = 0
        while done < budget:
            configs = strat.ask(min(batch, budget - done))
            if not configs:
                break
            for cfg in configs:
                t = float(times[pool.find(cfg)])
                ok = math.isfinite(t)
                strat.tell(cfg, t if ok else None)
                if ok and t < best:
                    best = t
                fractions[r, done] = optimum / best if math.isfinite(best) else 0.0
                done += 1
            if progress is not None:
                progress(r * budget + done, total)
        if done < budget:
            fractions[r, done:] = fractions[r, done - 1] if done else 0.0
    return ReplayResult(strategy, len(pool), optimum, fractions, seeds)


def _failed_as_nan(times, size: int) -> np.ndarray:
    """``times`` as a new float array of ``size`` entries, NaN where a time is not a finite
    positive number (a failed configuration); BeastError when it is not one number per
    configuration."""
    try:
        out = np.array(times, dtype=np.float64)
    except (TypeError, ValueError):
        out = None
    if out is None or out.ndim != 1:
        what = f"an array of shape {times.shape}" if isinstance(times, np.ndarray) else f"{times!r:.60}"
        raise BeastError(f"times must be a sequence of numbers, one per configuration of the pool "
                         f"({size}), not {what}")
    if len(out) != size:
        raise BeastError(f"times must have one entry per configuration of the pool ({size}), "
                         f"not {len(out)}")
    out[~(out > 0)] = np.nan           # 0, negative (and NaN) times: failed
    return out


def default_checkpoints(size: int, budget: int) -> list[int]:
    """Budgets to report: 1, 2, 5, 10, 20 and 50 % of the space (those within ``budget``)
    and ``budget`` itself."""
    points = {max(1, round(size * p / 100)) for p in (1, 2, 5, 10, 20, 50)}
    return sorted(b for b in points | {budget} if b <= budget)


def check_checkpoints(result: ReplayResult, checkpoints: Sequence[int]) -> list[int]:
    """``checkpoints`` (budgets to report, ``beast replay --at``) as a list, after checking that
    each is a whole number from 1 to the replay's budget; a BeastError names the others."""
    points = list(checkpoints)
    bad = [b for b in points if isinstance(b, bool) or not isinstance(b, (int, np.integer))
           or not 1 <= b <= result.budget]
    if bad:
        capped = (f" (the whole space: {result.size} configurations)"
                  if result.budget == result.size else "")
        raise BeastError(f"budgets to report (--at) must be from 1 to the replay's budget, "
                         f"{result.budget}{capped}; not {', '.join(map(str, bad))}")
    return points


def format_replay(result: ReplayResult, checkpoints: Sequence[int] | None = None,
                  targets: Sequence[float] = (0.9, 0.95, 0.99, 1.0)) -> str:
    """A table per budget (fraction of the optimum: mean, std, min, max over repeats) and the
    evaluations each target took (median over repeats; '>B' when not reached)."""
    cps = (check_checkpoints(result, checkpoints) if checkpoints
           else default_checkpoints(result.size, result.budget))
    reps = result.fractions.shape[0]
    lines = [f"strategy {result.strategy}: {reps} repeat(s), budget {result.budget} of {result.size} "
             f"configurations, optimum {result.optimum:.6g} ms",
             f"{'budget':>8} {'% space':>8} {'mean':>7} {'std':>7} {'min':>7} {'max':>7}"]
    for b in cps:
        f = result.at(b)
        lines.append(f"{b:>8} {100 * b / result.size:>8.2f} {f.mean():>7.4f} {f.std():>7.4f} "
                     f"{f.min():>7.4f} {f.max():>7.4f}")
    for t in targets:
        ev = result.evaluations_to(t)
        reached = np.isfinite(ev)
        med = np.median(ev)
        med_text = f"{med:.0f}" if np.isfinite(med) else f">{result.budget}"
        lines.append(f"evaluations to {100 * t:g}% of optimum: median {med_text}, "
                     f"reached in {int(reached.sum())}/{reps} repeat(s)")
    return "\n".join(lines)
