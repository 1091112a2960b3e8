"""Pruning statistics of a space (``space.stats()``, ``beast stats``).

The numbers are defined on the plan *without tightening* (see :mod:`beast.ir.instrument`): every
loop scans its whole sequence, every condition is evaluated at the depth the plan hoists it to.
They are exact, and the same in every backend and for every thread count:

- ``cartesian``: the number of leaf iterations of the loop nest with every condition removed (each
  loop's sequence evaluated at the values of the loops around it, so ``blk_m``'s range follows
  ``dim_m``); counted exactly by :mod:`beast.explore.cartesian`, None when that would take more than
  :data:`~beast.explore.cartesian.CARTESIAN_BUDGET` steps or a sequence fails without the conditions
  that guard it;
- ``levels``: per loop, outermost first: ``tried`` (values the loop bound, over all its runs) and
  ``passed`` (those that got past the checks at that depth into the next loop, or were emitted);
- ``conditions``: per condition: ``depth`` (0: before any loop), ``evaluated``, ``rejected``;
- ``survivors``: the configurations that pass every condition (``space.count()``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .cartesian import CARTESIAN_BUDGET, cartesian
from ..ir.instrument import instrument

_INT64_MAX = 2**63 - 1


@dataclass
class Level:
    iterator: str
    depth: int
    tried: int
    passed: int


@dataclass
class Condition:
    depth: int
    evaluated: int
    rejected: int
    kind: str | None = None


@dataclass
class Stats:
    """What :meth:`beast.Space.stats` returns; :meth:`to_dict` is what ``beast stats --json`` prints."""
    space: str
    survivors: int
    cartesian: int | None
    levels: list = field(default_factory=list)          # Level, outermost first
    conditions: dict = field(default_factory=dict)      # name -> Condition, in evaluation order
    backend: str = ""
    values: dict = field(default_factory=dict)          # iterator -> {value: survivors} (with_values)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["values"] = {k: {str(v): n for v, n in d.items()} for k, d in self.values.items()}
        return out

    def funnel(self) -> list:
        """(label, count) from the cartesian size through every level to the survivors."""
        out = [("cartesian", self.cartesian)] if self.cartesian is not None else []
        for lv in self.levels:
            out.append((f"{lv.iterator} tried", lv.tried))
            out.append((f"{lv.iterator} passed", lv.passed))
        out.append(("survivors", self.survivors))
        return out

    def __str__(self):
        width = max([len(lv.iterator) for lv in self.levels] + [len(c) for c in self.conditions] + [10])
        cart = f"{self.cartesian:,}" if self.cartesian is not None else "too large to count"
        lines = [f"space {self.space}: {self.survivors:,} survivors",
                 f"cartesian (the loop nest with no condition): {cart}",
                 "", f"{'level':<{width}}  {'tried':>16}  {'passed':>16}"]
        for lv in self.levels:
            lines.append(f"{lv.iterator:<{width}}  {lv.tried:>16,}  {lv.passed:>16,}")
        lines += ["", f"{'condition':<{width}}  {'depth':>5}  {'evaluated':>16}  {'rejected':>16}"]
        for name, c in self.conditions.items():
            lines.append(f"{name:<{width}}  {c.depth:>5}  {c.evaluated:>16,}  {c.rejected:>16,}")
        return "\n".join(lines)


def collect(space, backend=None, threads=None, with_values=True) -> Stats:
    """Run the instrumented program of ``space`` and assemble its :class:`Stats`."""
    from ..runtime import DEFAULT_BACKEND, get_backend
    backend = backend or DEFAULT_BACKEND
    cart = cartesian(space.plan)
    if cart is None or cart > _INT64_MAX:
        # the survivors may not fit in 64 bits: count refuses that at once (it counts an innermost
        # loop by its length), where the instrumented nest would first visit every leaf
        space.count(backend=backend, threads=threads)
    program, layout = instrument(space.plan, space.name)
    survivors, counts = get_backend(backend).build(program).tally(threads=threads)
    levels = [Level(lv.iterator, lv.depth, counts[lv.tried], counts[lv.passed]) for lv in layout.levels]
    conditions = {c.name: Condition(c.depth, counts[c.before], counts[c.before] - counts[c.after], c.kind)
                  for c in layout.conditions}
    stats = Stats(space.name, survivors, cart, levels, conditions, backend)
    if with_values:
        stats.values = value_counts(space, backend, threads)
    return stats


def value_counts(space, backend=None, threads=None, limit=10_000_000) -> dict:
    """iterator -> {value: how many survivors have it} (empty when there are more than ``limit``)."""
    import numpy as np
    totals = {name: {} for name in space.iterators}
    seen = 0
    for chunk in space.iterate(1 << 18, backend=backend, threads=threads):
        seen += len(chunk)
        if seen > limit:
            return {}
        for name in space.iterators:
            vals, ns = np.unique(chunk[name], return_counts=True)
            d = totals[name]
            for v, n in zip(vals.tolist(), ns.tolist()):
                d[v] = d.get(v, 0) + n
    return {k: dict(sorted(d.items())) for k, d in totals.items()}


__all__ = ["Stats", "Level", "Condition", "collect", "cartesian", "value_counts", "CARTESIAN_BUDGET"]
