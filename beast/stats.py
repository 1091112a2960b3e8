"""Pruning statistics of a space (``space.stats()``, ``beast stats``).

The numbers are defined on the plan *without tightening* (see :mod:`beast.ir.instrument`): every
loop scans its whole sequence, every condition is evaluated at the depth the plan hoists it to.
They are exact, and the same in every backend and for every thread count:

- ``cartesian``: the number of leaf iterations of the loop nest with every condition removed (each
  loop's sequence evaluated at the values of the loops around it, so ``blk_m``'s range follows
  ``dim_m``); computed by a memoised count in Python, and None when that would take more than
  :data:`CARTESIAN_BUDGET` steps or a sequence fails without the conditions that guard it;
- ``levels``: per loop, outermost first: ``tried`` (values the loop bound, over all its runs) and
  ``passed`` (those that got past the checks at that depth into the next loop, or were emitted);
- ``conditions``: per condition: ``depth`` (0: before any loop), ``evaluated``, ``rejected``;
- ``survivors``: the configurations that pass every condition (``space.count()``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .errors import BeastError
from .expr import CallSeq, RangeSeq, ScalarSeq, SetOpSeq, ValuesSeq, evaluate, free_vars
from .ir import Check, Let, Loop, build_program
from .ir.instrument import instrument

CARTESIAN_BUDGET = 300_000     # loop steps the exact cartesian count may take


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
        lines = [f"space {self.space}: {self.survivors} survivors",
                 f"cartesian (no condition): {self.cartesian if self.cartesian is not None else 'too large to count'}",
                 "", f"{'level':<{width}}  {'tried':>16}  {'passed':>16}"]
        for lv in self.levels:
            lines.append(f"{lv.iterator:<{width}}  {lv.tried:>16}  {lv.passed:>16}")
        lines += ["", f"{'condition':<{width}}  {'depth':>5}  {'evaluated':>16}  {'rejected':>16}"]
        for name, c in self.conditions.items():
            lines.append(f"{name:<{width}}  {c.depth:>5}  {c.evaluated:>16}  {c.rejected:>16}")
        return "\n".join(lines)


def collect(space, backend=None, threads=None, with_values=True) -> Stats:
    """Run the instrumented program of ``space`` and assemble its :class:`Stats`."""
    from .runtime import DEFAULT_BACKEND, get_backend
    backend = backend or DEFAULT_BACKEND
    program, layout = instrument(space.plan, space.name)
    survivors, counts = get_backend(backend).build(program).tally(threads=threads)
    levels = [Level(lv.iterator, lv.depth, counts[lv.tried], counts[lv.passed]) for lv in layout.levels]
    conditions = {c.name: Condition(c.depth, counts[c.before], counts[c.before] - counts[c.after], c.kind)
                  for c in layout.conditions}
    stats = Stats(space.name, survivors, cartesian(space.plan), levels, conditions, backend)
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


# ---------------------------------------------------------------------------------------------
# The cartesian size: a memoised count of the nest without its checks

class _TooLarge(Exception):
    pass


def cartesian(plan, budget=CARTESIAN_BUDGET):
    """The number of leaf iterations of the plan's loop nest with every condition removed, or None
    (more than ``budget`` steps, or a sequence or derived value fails where no condition guards it).

    f(d) = the leaves under loop d given the values of the outer loops it reads (memoised on
    those); a loop whose value no deeper loop reads multiplies its length by one count below."""
    from .runtime.python_backend import _b_vals, compile_functions
    from .lang import set_operation
    program = build_program(plan, "cartesian", tighten=False)
    funcs = compile_functions(program)
    loops, lets = [], {}
    block = program.body
    while True:
        for s in block:
            if isinstance(s, Let):
                lets[s.var] = s.expr
        last = block[-1] if block else None
        if not isinstance(last, Loop):
            break
        loops.append(last)
        block = last.body
    loop_vars = {l.var for l in loops}

    def roots(names, seen=()):
        """The loop variables a set of names reads, through the lets."""
        out = set()
        for n in names:
            if n in loop_vars:
                out.add(n)
            elif n in lets and n not in seen:
                out |= roots(free_vars(lets[n]), seen + (n,))
        return out

    reads = [roots(free_vars(l.seq)) for l in loops]
    below = [set() for _ in range(len(loops) + 1)]          # loop vars read by loops >= d
    for d in range(len(loops) - 1, -1, -1):
        below[d] = below[d + 1] | reads[d]
    keys = [sorted(below[d] - {l.var for l in loops[d:]}) for d in range(len(loops) + 1)]
    memo = [dict() for _ in loops]
    steps = [0]

    def value(name, env):
        if name not in env:
            env[name] = evaluate(lets[name], env, funcs)
        return env[name]

    def seq_values(seq, env):
        for n in free_vars(seq):
            if n not in loop_vars:
                value(n, env)
        if isinstance(seq, RangeSeq):
            return range(*(evaluate(x, env, funcs) for x in seq.exprs()))
        if isinstance(seq, ValuesSeq):
            return seq.values
        if isinstance(seq, ScalarSeq):
            return (evaluate(seq.value, env, funcs),)
        if isinstance(seq, CallSeq):
            result = funcs[seq.func](*(evaluate(a, env, funcs) for a in seq.args))
            return list(result) if seq.closure else _b_vals(result)
        if isinstance(seq, SetOpSeq):
            return set_operation(seq.op, list(seq_values(seq.left, env)), list(seq_values(seq.right, env)))
        raise BeastError(f"internal error: unknown sequence {seq!r}")

    def count(d, env):
        if d == len(loops):
            return 1
        key = tuple(env[k] for k in keys[d])
        got = memo[d].get(key)
        if got is not None:
            return got
        loop = loops[d]
        values = seq_values(loop.seq, {k: env[k] for k in keys[d]})
        steps[0] += 1
        if loop.var not in below[d + 1]:
            n = len(values)
            total = n * count(d + 1, env) if n else 0
        else:
            total = 0
            for v in values:
                steps[0] += 1
                if steps[0] > budget:
                    raise _TooLarge
                env[loop.var] = v
                total += count(d + 1, env)
            env.pop(loop.var, None)
        if steps[0] > budget:
            raise _TooLarge
        memo[d][key] = total
        return total

    try:
        return count(0, {})
    except _TooLarge:
        return None
    except Exception:  # noqa: BLE001 - a sequence that fails where a condition would have guarded it
        return None


__all__ = ["Stats", "Level", "Condition", "collect", "cartesian", "value_counts", "CARTESIAN_BUDGET"]
