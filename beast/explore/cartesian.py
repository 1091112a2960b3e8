"""The cartesian size of a space: the number of leaf iterations of its loop nest with every
condition removed (``Stats.cartesian``), counted exactly without walking the nest.

With no condition, the count is a sum of products over the loops' sequences, each evaluated at the
values of the loops it reads (``blk_m``'s range follows ``dim_m``). Three exact rewrites keep it
small (Python integers, so no overflow):

- *absorb*: a loop whose value only one other loop reads is summed into that loop's sequence,
  which becomes a multiset (``dim_m`` into ``blk_m``: how many ``dim_m`` give each ``blk_m``);
- *split*: loops that do not read each other, directly or through others, are independent given
  the values bound so far: their counts multiply;
- *branch*: otherwise bind one loop that reads nothing unbound, the one most others read first
  (``blk_k`` in GEMM), and add up; every count is memoised on the values its loops read.

:func:`cartesian` gives up (None) after ``budget`` steps, or when a sequence or a derived value
fails at values that the conditions would have rejected before it.
"""
from __future__ import annotations

from ..errors import BeastError
from ..expr.nodes import evaluate
from ..expr.sequences import CallSeq, RangeSeq, ScalarSeq, SetOpSeq, ValuesSeq, free_vars
from ..ir import Let, Loop, build_program

CARTESIAN_BUDGET = 3_000_000     # steps (values bound or sequences evaluated) before giving up


class _TooLarge(Exception):
    pass


class _Unit:
    """A loop, or a loop with the loops absorbed into it: ``values(env) -> {value: weight}`` and
    ``total(env)``, the sum of the weights (a range's length, without its values)."""

    def __init__(self, var, reads, fn, total=None):
        self.var, self.reads, self.fn, self.total_fn = var, frozenset(reads), fn, total
        self.memo, self.totals = {}, {}

    def key(self, env):
        return tuple(sorted((k, env[k]) for k in self.reads))

    def values(self, env):
        key = self.key(env)
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = self.fn(env)
        return got

    def total(self, env):
        if self.total_fn is None:
            return sum(self.values(env).values())
        key = self.key(env)
        got = self.totals.get(key)
        if got is None:
            got = self.totals[key] = self.total_fn(env)
        return got


class _Counter:
    def __init__(self, plan, budget):
        from ..runtime.python import iterator_values, compile_functions
        self.iterator_values = iterator_values
        program = build_program(plan, "cartesian", tighten=False)
        self.funcs = compile_functions(program)
        self.budget, self.steps = budget, 0
        loops, self.lets = [], {}
        block = program.body
        while True:
            for s in block:
                if isinstance(s, Let):
                    self.lets[s.var] = s.expr
            last = block[-1] if block else None
            if not isinstance(last, Loop):
                break
            loops.append(last)
            block = last.body
        self.loops = loops
        self.loop_vars = {l.var for l in loops}
        self.units = {l.var: self.base_unit(l) for l in loops}
        self.first = {l.var: i for i, l in enumerate(loops)}     # a unit's outermost loop (absorbed ones too)
        self.absorb()
        self.memo = {}
        self.split_memo = {}

    def tick(self, n=1):
        self.steps += n
        if self.steps > self.budget:
            raise _TooLarge

    # -- sequences
    def roots(self, names, seen=()):
        """The loop variables a set of names reads, through the lets."""
        out = set()
        for n in names:
            if n in self.loop_vars:
                out.add(n)
            elif n in self.lets and n not in seen:
                out |= self.roots(free_vars(self.lets[n]), seen + (n,))
        return out

    def let_value(self, name, env):
        if name not in env:
            for dep in free_vars(self.lets[name]):
                if dep in self.lets:
                    self.let_value(dep, env)
            env[name] = evaluate(self.lets[name], env, self.funcs)
        return env[name]

    def seq_values(self, seq, env):
        for n in free_vars(seq):
            if n in self.lets:
                self.let_value(n, env)
        funcs = self.funcs
        if isinstance(seq, RangeSeq):
            return range(*(evaluate(x, env, funcs) for x in seq.exprs()))
        if isinstance(seq, ValuesSeq):
            return seq.values
        if isinstance(seq, ScalarSeq):
            return (evaluate(seq.value, env, funcs),)
        if isinstance(seq, CallSeq):
            result = funcs[seq.func](*(evaluate(a, env, funcs) for a in seq.args))
            return list(result) if seq.closure else self.iterator_values(result)
        if isinstance(seq, SetOpSeq):
            from ..lang.vocabulary import set_operation
            return set_operation(seq.op, list(self.seq_values(seq.left, env)),
                                 list(self.seq_values(seq.right, env)))
        raise BeastError(f"internal error: unknown sequence {seq!r}")

    def base_unit(self, loop):
        seq = loop.seq

        def values(env):
            out = {}
            for v in self.seq_values(seq, dict(env)):
                out[v] = out.get(v, 0) + 1
            self.tick(len(out) + 1)
            return out

        def total(env):
            self.tick()
            return len(self.seq_values(seq, dict(env)))
        return _Unit(loop.var, self.roots(free_vars(seq)), values, total)

    # -- absorb: a loop read by exactly one other loop becomes part of that loop's multiset
    def absorb(self):
        changed = True
        while changed:
            changed = False
            for x in list(self.units.values()):
                readers = [u for u in self.units.values() if x.var in u.reads]
                if len(readers) != 1:
                    continue
                y = readers[0]
                self.units[y.var] = self.merged(x, y)
                self.first[y.var] = min(self.first[x.var], self.first[y.var])
                del self.units[x.var]
                changed = True
                break

    def merged(self, x, y):
        def values(env):
            out = {}
            inner = dict(env)
            for v, w in x.values(env).items():
                inner[x.var] = v
                for u, wu in y.values(inner).items():
                    out[u] = out.get(u, 0) + w * wu
                self.tick()
            return out

        def total(env):
            inner = dict(env)
            n = 0
            for v, w in x.values(env).items():
                inner[x.var] = v
                n += w * y.total(inner)
            return n
        return _Unit(y.var, (x.reads | y.reads) - {x.var}, values, total)

    # -- split and branch
    def components(self, names):
        key = frozenset(names)
        got = self.split_memo.get(key)
        if got is not None:
            return got
        # in the order of their outermost loops (never of the names' hashes), so that the product
        # stops at an empty component before a later one, whose sequence may fail, is counted
        left = sorted(key, key=self.first.__getitem__)
        out = []
        while left:
            stack = [left.pop(0)]
            comp = set(stack)
            while stack:
                n = stack.pop()
                for m in list(left):
                    if m in self.units[n].reads or n in self.units[m].reads:
                        left.remove(m)
                        comp.add(m)
                        stack.append(m)
            out.append(frozenset(comp))
        self.split_memo[key] = out
        return out

    def count(self, names, env):
        total = 1
        for comp in self.components(names):
            total *= self.count_component(comp, env)
            if total == 0:
                return 0
        return total

    def count_component(self, comp, env):
        outside = sorted(set().union(*(self.units[n].reads for n in comp)) - comp)
        key = (comp, tuple(env[k] for k in outside))
        got = self.memo.get(key)
        if got is not None:
            return got
        if len(comp) == 1:
            (name,) = comp
            total = self.units[name].total(env)
        else:
            roots = [n for n in comp if not (self.units[n].reads & comp)]
            readers = {n: sum(1 for m in comp if n in self.units[m].reads) for n in roots}
            root = max(sorted(roots), key=lambda n: readers[n])
            unit = self.units[root]
            rest = comp - {root}
            total = 0
            for v, w in unit.values(env).items():
                self.tick()
                env[root] = v
                total += w * self.count(rest, env)
            env.pop(root, None)
        self.memo[key] = total
        return total

    def run(self):
        return self.count(list(self.units), {})

    def walk(self, depth=0, env=None):
        """The leaves counted one by one, in the nest's order (where run() failed: its shortcuts
        may count a sequence the nest never reaches, behind a loop that is empty)."""
        if depth == len(self.loops):
            return 1
        env, loop, total = env or {}, self.loops[depth], 0
        for v in self.seq_values(loop.seq, dict(env)):
            self.tick()
            total += self.walk(depth + 1, {**env, loop.var: v})
        return total


def cartesian(plan, budget=CARTESIAN_BUDGET):
    """The exact number of leaf iterations of ``plan``'s loop nest with every condition removed,
    or None (over ``budget`` steps, or a sequence fails without the conditions that guard it)."""
    try:
        counter = _Counter(plan, budget)
        try:
            return counter.run()
        except (_TooLarge, BeastError):
            raise
        except Exception:  # noqa: BLE001 - perhaps a sequence the nest never reaches: walk it in order
            counter.steps = 0
            return counter.walk()
    except _TooLarge:
        return None
    except BeastError:
        raise
    except Exception:  # noqa: BLE001 - a sequence that fails where a condition would have guarded it
        return None
