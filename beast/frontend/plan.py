"""Dependency DAG, level sets, loop order and the hoisting plan shared by every backend.

The plan says, for each loop depth, which derived variables are computed and which conditions are
checked there: each at the innermost loop that binds its last dependency, never deeper.
"""
from __future__ import annotations

from ..ir.record import field, record

from ..errors import SpaceError
from .nodes import SpaceModel


@record
class Plan:
    """The shared schedule: loop order and, per depth, the evaluation order of lets and checks.

    ``steps[d]`` lists ``("let", name)`` and ``("check", name)`` evaluated after the d-th loop opens
    (``steps[0]`` runs once, before any loop). ``depth[name]`` is where each node sits."""
    model: SpaceModel
    levels: dict
    level_sets: list
    loop_order: list
    depth: dict
    steps: list
    unused: list = field(default_factory=list)

    @property
    def columns(self):
        return self.model.iterators


def check_cycles(model: SpaceModel):
    """Raise a SpaceError naming the cycle if the dependencies are not a DAG."""
    state = {}
    stack = []

    def visit(name):
        state[name] = 1
        stack.append(name)
        for dep in model.nodes[name].deps:
            if dep not in model.nodes:
                continue
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                raise _cycle_error(model, cycle)
            if dep not in state:
                visit(dep)
        stack.pop()
        state[name] = 2

    for name in model.nodes:
        if name not in state:
            visit(name)


def _cycle_error(model, cycle):
    """Report a cycle at the place where its first node reads the next one."""
    message = "dependency cycle: " + " -> ".join(cycle)
    hint = "an iterator cannot depend, directly or through others, on itself"
    # say where the last node of the cycle reads the first
    node, nxt = model.nodes[cycle[-2]], cycle[-1]
    if node.func is not None:
        from .functions import free_names
        fdef = node.func.fdef
        uses = [a for a in fdef.args.args if a.arg == nxt] + [n for name, n in free_names(fdef) if name == nxt]
        if uses:            # (a comprehension's own variable of that name is not the read)
            return SpaceError.at(uses[0], node.filename, message, hint=hint)
    return SpaceError(message, node.filename, node.lineno, hint=hint)


def level_sets(model: SpaceModel):
    """Level 0: nodes without dependencies; level k+1: nodes whose dependencies are in levels <= k."""
    levels = {}

    def level(name):
        if name not in levels:
            deps = [d for d in model.nodes[name].deps if d in model.nodes]
            levels[name] = 0 if not deps else 1 + max(level(d) for d in deps)
        return levels[name]

    for name in model.nodes:
        level(name)
    sets = [[] for _ in range(max(levels.values(), default=-1) + 1)]
    for name in model.nodes:
        sets[levels[name]].append(name)
    return levels, sets


def _iterator_ancestors(model: SpaceModel):
    """For every node, the set of iterators it reads directly or through derived variables."""
    memo = {}

    def anc(name):
        if name not in memo:
            node = model.nodes[name]
            out = set()
            for dep in node.deps:
                if model.nodes[dep].role == "iterator":
                    out.add(dep)
                out |= anc(dep)
            memo[name] = out
        return memo[name]

    for name in model.nodes:
        anc(name)
    return memo


def _loop_order(model, levels, ancestors):
    """Nearest condition first: repeatedly open the loops that complete the condition needing the
    fewest unopened iterators; iterators no condition reads go innermost (they only multiply)."""
    iterators = model.by_role("iterator")
    conditions = model.by_role("condition")
    placed, order = set(), []
    while len(order) < len(iterators):
        ready = [it for it in iterators if it.name not in placed and ancestors[it.name] <= placed]
        target = None
        for cond in conditions:
            missing = ancestors[cond.name] - placed
            if missing and (target is None or len(missing) < len(target)):
                target = missing
        pool = [it for it in ready if target is None or it.name in target] or ready
        choice = min(pool, key=lambda it: (levels[it.name], it.index))
        placed.add(choice.name)
        order.append(choice.name)
    return order


def make_plan(model: SpaceModel) -> Plan:
    """Compute levels, loop order and the placement of every derived variable and condition."""
    check_cycles(model)
    levels, sets = level_sets(model)
    ancestors = _iterator_ancestors(model)
    order = _loop_order(model, levels, ancestors)
    position = {name: i + 1 for i, name in enumerate(order)}
    depth = {}
    for name in model.nodes:
        if name in position:
            depth[name] = position[name]
        else:
            depth[name] = max((position[a] for a in ancestors[name]), default=0)

    # Derived variables that some condition or iterator actually reads (transitively).
    needed = set()

    def need(name):
        for dep in model.nodes[name].deps:
            if model.nodes[dep].role == "derived" and dep not in needed:
                needed.add(dep)
                need(dep)

    for node in model.nodes.values():
        if node.role in ("condition", "iterator"):
            need(node.name)

    steps = [[] for _ in range(len(order) + 1)]
    emitted = set()

    def emit_let(name, d):
        if name in emitted:
            return
        for dep in model.nodes[name].deps:
            if model.nodes[dep].role == "derived" and depth[dep] == d:
                emit_let(dep, d)
        emitted.add(name)
        steps[d].append(("let", name))

    for cond in model.by_role("condition"):
        d = depth[cond.name]
        for dep in cond.deps:
            if model.nodes[dep].role == "derived" and depth[dep] == d:
                emit_let(dep, d)
        steps[d].append(("check", cond.name))
    for node in model.by_role("derived"):
        if node.name in needed:
            emit_let(node.name, depth[node.name])
    # Lets must precede the checks of deeper depths that read them; a let emitted after the checks of
    # its own depth is still before the next loop opens, so the order above is sound.
    unused = [n.name for n in model.by_role("derived") if n.name not in needed]
    return Plan(model, levels, sets, order, depth, steps, unused)
