"""Where a deep loop nest moves into a function of its own, decided once for every target.

A target's functions hold only so much: Python refuses more than 20 nested blocks, LuaJIT allows
200 locals per function. A :class:`Budget` (``LoopTarget.split``) says what each statement costs in
the function being printed (a level of nesting, or the locals its spelling declares) and how much
the function may hold; :func:`parts` walks one enumerator function (count or rows) as the printer
will and names the loops that start a function of their own (a *part*), with the variables the
part takes as parameters. The printer only spells "call the part" and "define the part".
"""
from __future__ import annotations

from beast.ir.record import field, record

from .loops import Call, LoopLowering, Scratch
from .nest import Let, Loop, reads


@record(frozen=True)
class Budget:
    """What a function of the target holds. A loop starts a part when the cost in scope exceeds
    ``limit``. In scope: ``top`` when count/rows start; ``part`` (``part_rows`` more in rows) and
    each parameter (``param``, ``num_param`` for a num-typed one) when a part starts; each let
    (``let``, ``num_let`` for a num-typed one); each loop, by its form's class name in ``loops``
    (``Call``/``Closure``: a scratch loop over a deferred/closure function's values; other forms:
    ``loop``); a fused chain, ``fused_one`` for one loop, else ``fused`` plus one per loop.
    ``params``: "all" variables bound so far, or only those the part "read"s. A part whose
    parameters alone cost more than ``max_start`` does not fit (``Part.fits``)."""
    limit: int
    top: int = 0
    part: int = 0
    part_rows: int = 0
    param: int = 0
    num_param: int = 0
    let: int = 0
    num_let: int = 0
    loop: int = 1
    loops: dict = field(default_factory=dict)
    fused_one: int = 1
    fused: int = 0
    params: str = "all"
    max_start: int | None = None


@record
class Part:
    """``loop`` runs in a function of its own that takes ``params`` (in order of binding);
    ``flagged``: per parameter, whether it is a num (it comes with its "is a float" flag)."""
    loop: Loop
    params: tuple
    fits: bool = True
    flagged: tuple = ()


def parts(lowering: LoopLowering, body, mode) -> dict:
    """id(loop) -> :class:`Part` for the loops of ``body`` printed as ``mode`` ("count": a pure
    counting nest is a product, not a loop; "rows") that start a part; empty when the target has
    no budget. A part's first loop is never fused."""
    budget = lowering.target.split
    out = {}
    if budget is None:
        return out
    types = lowering.types
    # the most one loop (or one loop of a fused chain) can cost
    per_loop = max(budget.loop, budget.fused_one, budget.fused + 1, *budget.loops.values())
    if _fits(body, budget, types, budget.top, per_loop):
        return out                  # no loop can start a part: the walk below would find none

    def block(stmts, cost, scope):
        scope = list(scope)
        for s in stmts:
            if isinstance(s, Let):
                cost += budget.num_let if types.get(s.var, "num") == "num" else budget.let
                scope.append(s.var)
            elif isinstance(s, Loop):
                if mode == "count" and lowering.count(s) is not None:
                    continue
                if cost <= budget.limit:
                    loop(s, cost, scope, True)
                    continue
                used = reads(s) if budget.params == "read" else None
                params = tuple(n for n in scope if used is None or n in used)
                flagged = tuple(lowering.var_type(n) == "num" for n in params)
                start = budget.part + (budget.part_rows if mode == "rows" else 0) + sum(
                    budget.num_param if f else budget.param for f in flagged)
                fits = budget.max_start is None or start <= budget.max_start
                out[id(s)] = Part(s, params, fits, flagged)
                loop(s, start, scope, False)

    def loop(s, cost, scope, fuse):
        fused = lowering.fused(s) if fuse else None
        if fused is not None:
            chain = fused.chain
            cost += budget.fused_one if len(chain) == 1 else budget.fused + len(chain)
            block(chain[-1][0].body, cost, scope + [l.var for l, _ in chain])
            return
        form = lowering.form(s)
        key = type(form).__name__
        if isinstance(form, Scratch) and isinstance(form.fill, Call):
            key = "Closure" if form.fill.closure else "Call"
        block(s.body, cost + budget.loops.get(key, budget.loop), scope + [s.var])

    block(body, budget.top, [])
    return out


def _fits(stmts, budget, types, cost, per_loop) -> bool:
    """Whether the cost in scope stays within ``budget.limit`` when any loop of ``stmts`` starts,
    with each loop around it costing ``per_loop`` (an upper bound of what it costs)."""
    for s in stmts:
        if isinstance(s, Let):
            cost += budget.num_let if types.get(s.var, "num") == "num" else budget.let
        elif isinstance(s, Loop) and (cost > budget.limit or
                                      not _fits(s.body, budget, types, cost + per_loop, per_loop)):
            return False
    return True
