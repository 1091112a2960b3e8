"""The early cut of clear losers, replayed on a tuning log measured without it.

A log of ``beast tune`` holds, for every configuration in the order it was measured, its time
(the mean of the confidence-interval loop), the half-width of that interval, how many timed
launches it took and whether its compile spilled registers (``local_bytes``).  Replaying the
rule of :func:`beast.tune.device.measure.cutoff_ms` over it says which configurations the cut would
have timed from their warm-up launches only, how many launches (and how much kernel time) that
saves, and -- with the warm-up launches drawn from each configuration's own measured spread --
how often the top of the ranking would have come out different.

The warm-up launches go through :func:`beast.tune.device.measure.time_until_stable` itself, so the
replay applies the rule the GPU backend applies, not a copy of it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

from .measure import EARLY_CUT, OK, SPILL_CUT, cutoff_ms, t_quantile_975, time_until_stable

#: launches of a configuration that the timing loop does not count in ``reps``: the verification
#: launch and the two warm-up launches
UNCOUNTED_LAUNCHES = 3
#: the relative spread of one launch when a record gives no confidence interval
DEFAULT_SPREAD = 0.01


@dataclass
class CutReplay:
    """What the early cut would have done to one log (see the module docstring).

    ``timed``: verified and timed configurations; ``cut`` of them cut (``cut_spill`` by the
    spill rule); ``launches``/``kernel_s``: (without, with) the cut, every launch counted;
    ``best_kept``: the fastest configuration is never cut; ``top_kept``: in this share of the
    ``draws`` noisy replays, the ``top`` fastest configurations came out in the same order;
    ``worst_rank_shift``: the largest move of a top-``top`` configuration over the draws;
    ``cut_indices``: the cut configurations' positions among the timed ones (log order),
    ``cut_ranks`` their final ranks (1: the fastest)."""

    name: str
    timed: int = 0
    cut: int = 0
    cut_spill: int = 0
    launches: tuple[int, int] = (0, 0)
    kernel_s: tuple[float, float] = (0.0, 0.0)
    best_kept: bool = True
    top: int = 10
    top_kept: float = 1.0
    worst_rank_shift: int = 0
    draws: int = 0
    cut_ranks: list = field(default_factory=list)
    cut_indices: list = field(default_factory=list)

    @property
    def saved_share(self) -> float:
        """The share of the log's kernel time the cut saves."""
        before, after = self.kernel_s
        return 1.0 - after / before if before > 0 else 0.0


def _spread(rec: Mapping) -> float:
    """One launch's relative standard deviation, from the record's 95 % interval of the mean
    of ``reps`` launches (``ci_rel = t * s / sqrt(n) / mean``)."""
    ci, reps = rec.get("ci_rel"), rec.get("reps")
    if not isinstance(ci, (int, float)) or not isinstance(reps, int) or reps < 2 or not math.isfinite(ci):
        return DEFAULT_SPREAD
    return max(1e-4, float(ci) * math.sqrt(reps) / t_quantile_975(reps - 1))


def _warm_up(ms: float, spread: float, rng: np.random.Generator | None, cutoff: float | None):
    """(cut, time) of one configuration whose launches take ``ms`` with ``spread``: the early
    cut of :func:`time_until_stable` on simulated launches (exact ones without ``rng``)."""
    def run(n: int) -> float:
        noise = 1.0 if rng is None else max(0.05, 1.0 + spread * float(rng.standard_normal()))
        return n * ms * noise

    if cutoff is None:
        return False, ms
    timing = time_until_stable(run, cutoff_ms=cutoff, max_samples=1, min_samples=1)
    return timing.cut, timing.mean_ms if timing.cut else ms


def replay_cut(records: Iterable[Mapping], name: str = "log", *, early_cut: float | None = EARLY_CUT,
               spill_cut: float | None = SPILL_CUT, top: int = 10, draws: int = 1000,
               seed: int = 0) -> CutReplay:
    """Replay the early cut over a log's ``records`` (in their order); see :class:`CutReplay`."""
    timed = [r for r in records if "config" in r and r.get("status") == OK
             and isinstance(r.get("ms"), (int, float)) and r["ms"] > 0]
    out = CutReplay(name, timed=len(timed), top=top, draws=draws)
    if not timed:
        return out
    ms = np.array([float(r["ms"]) for r in timed])
    reps = np.array([int(r.get("reps") or 1) for r in timed])
    spill = np.array([(r.get("local_bytes") or 0) > 0 for r in timed])
    spread = np.array([_spread(r) for r in timed])
    # the best time so far before each configuration (the cut never touches a new best, so the
    # run with the cut has the same best-so-far sequence as the log)
    best_before = np.r_[np.inf, np.minimum.accumulate(ms)[:-1]]
    cutoffs = [cutoff_ms(None if math.isinf(b) else b, 1 if s else 0, early_cut, spill_cut)[0]
               for b, s in zip(best_before, spill)]

    cut = np.array([_warm_up(m, 0.0, None, c)[0] for m, c in zip(ms, cutoffs)])
    before = reps + UNCOUNTED_LAUNCHES
    after = np.where(cut, UNCOUNTED_LAUNCHES, before)
    out.cut, out.cut_spill = int(cut.sum()), int((cut & spill).sum())
    out.launches = (int(before.sum()), int(after.sum()))
    out.kernel_s = (float((before * ms).sum() / 1e3), float((after * ms).sum() / 1e3))
    order = np.argsort(ms, kind="stable")
    out.best_kept = not bool(cut[order[0]])
    out.cut_indices = [int(i) for i in np.flatnonzero(cut)]
    out.cut_ranks = sorted(int(np.flatnonzero(order == i)[0]) + 1 for i in np.flatnonzero(cut))

    top_idx = order[:top]
    rng = np.random.default_rng(seed)
    kept = 0
    for _ in range(draws):
        est = ms.copy()
        for i, (m, c) in enumerate(zip(ms, cutoffs)):
            if c is not None:
                was_cut, t = _warm_up(m, float(spread[i]), rng, c)
                if was_cut:
                    est[i] = t
        new_order = np.argsort(est, kind="stable")
        if np.array_equal(new_order[:top], top_idx):
            kept += 1
        pos = np.empty(len(est), dtype=np.int64)
        pos[new_order] = np.arange(len(est))
        out.worst_rank_shift = max(out.worst_rank_shift,
                                   int(np.abs(pos[top_idx] - np.arange(len(top_idx))).max()))
    out.top_kept = kept / draws if draws else 1.0
    return out


def format_cut_table(results: Iterable[CutReplay]) -> str:
    """A Markdown table of :func:`replay_cut` results, one row per log."""
    lines = ["| log | timed | cut (spilling) | launches before → after | kernel time before → after | saved "
             "| best kept | top-10 order kept |",
             "|---|---:|---:|---:|---:|---:|---|---:|"]
    for r in results:
        lines.append(f"| {r.name} | {r.timed} | {r.cut} ({r.cut_spill}) | {r.launches[0]} → {r.launches[1]} "
                     f"| {r.kernel_s[0]:.1f} s → {r.kernel_s[1]:.1f} s | {100 * r.saved_share:.0f} % "
                     f"| {'yes' if r.best_kept else 'NO'} | {100 * r.top_kept:.1f} % of {r.draws} "
                     f"(largest move {r.worst_rank_shift}) |")
    return "\n".join(lines)


__all__ = ["CutReplay", "replay_cut", "format_cut_table"]
