"""``beast tune SPACE --explain CONFIG``: why one configuration would be fast or slow, without a GPU.

:func:`explain` checks that ``CONFIG`` is a survivor of the space (under its device profile and
settings), then prints the kernel's threads and shared memory, the compiler's registers and
spills when a CUDA compiler is installed (:func:`beast.tune.model.compiler_facts.kernel_facts`, left
out otherwise), and the host simulator's per-k-tile counters (:mod:`beast.tune.sim.counters`).
"""
from __future__ import annotations

import json
from typing import Mapping

from ...errors import BeastError


def parse_config(text: str, names) -> dict:
    """``CONFIG`` of ``--explain``: ``name=value,name=value`` or a JSON object, every name one of
    the space's iterators ``names`` and every iterator given an integer value."""
    names = list(names)
    text = (text or "").strip()
    if text.startswith(("{", "[")):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as err:
            raise BeastError(f"--explain: the configuration is not valid JSON ({err.msg} at character {err.pos})",
                             hint='give name=value,name=value or a JSON object such as {"blk_k": 16, ...}') from None
        if not isinstance(raw, dict):
            raise BeastError("--explain: the JSON configuration is not an object",
                             hint='give a JSON object such as {"blk_k": 16, ...}')
        items = list(raw.items())
    else:
        items = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            if not sep or not name.strip():
                raise BeastError(f"--explain: {part!r} is not name=value",
                                 hint="give the configuration as name=value,name=value or as a JSON object")
            items.append((name.strip(), value.strip()))
    return config_of(items, names)


def config_of(items, names) -> dict:
    """``(name, value)`` pairs as a configuration of the iterators ``names`` (in their order):
    BeastError for a name that is not one of them, a value that is not an integer, a name left out."""
    names = list(names)
    config = {}
    for name, value in items:
        if name not in names:
            raise BeastError(f"--explain: {name!r} is not an iterator of the space",
                             hint="its iterators are " + ", ".join(names))
        config[name] = _integer(name, value.item() if hasattr(value, "item") else value)
    missing = [n for n in names if n not in config]
    if missing:
        raise BeastError(f"--explain: the configuration has no value for {', '.join(missing)}",
                         hint="give every iterator a value: " + ", ".join(names))
    return {n: config[n] for n in names}


def _integer(name: str, value) -> int:
    if isinstance(value, bool):
        raise BeastError(f"--explain: {name}={json.dumps(value)} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise BeastError(f"--explain: {name}={value!r} is not an integer")


def compiler_line(facts) -> str | None:
    """``compiler (sm_XY): N registers, ... spills`` for ``facts`` (None: None)."""
    if facts is None:
        return None
    spills = (f"spills {facts.spill_stores} bytes stored, {facts.spill_loads} loaded"
              if facts.spill_stores or facts.spill_loads else "no spills")
    local = f", {facts.local_bytes} bytes of local memory" if facts.local_bytes else ""
    return f"compiler ({facts.arch}): {facts.registers} registers per thread, {spills}{local}"


def model_line(config: Mapping, settings, size, profile, facts, layout=None) -> str | None:
    """The speed model's prediction for ``size`` (:mod:`beast.tune.model.speed`), or None where
    the model cannot run for this profile.  Without ``facts``, the lower bound is the one the
    tuner applies before compiling (on the ``layout``'s fewest registers)."""
    from .speed import optimistic_facts, predict_ms
    try:
        p = predict_ms(config, settings, size, profile, facts=facts)
        lower = p.lower_ms
        if facts is None and layout is not None:
            lower = predict_ms(config, settings, size, profile, facts=optimistic_facts(layout)).lower_ms
    except Exception:
        return None
    m, n, k = size
    where = "compiler's registers" if facts is not None else "estimated registers"
    return (f"speed model at {m} x {n} x {k} ({where}): {p.ms:.4g} ms, {p.gflops:,.0f} GFLOP/s, "
            f"limited by {p.limit}; {p.blocks_per_sm} block(s) per SM; lower bound {lower:.4g} ms")


def explain(space, config: Mapping | str, size=None) -> str:
    """The text ``--explain`` prints for ``config`` (a mapping, or ``CONFIG``'s text) of ``space``;
    the speed model predicts its time for ``size`` (M, N, K; default 4096 each)."""
    from ..sim.counters import format_counters, simulate_counters
    from ..driver.local import check_tune_arguments, tune_family
    size = check_tune_arguments(size)[0] if size is not None else (4096,) * 3
    family, settings = tune_family(space)
    if isinstance(config, str):
        config = parse_config(config, space.iterators)
    else:
        config = config_of(dict(config).items(), space.iterators)
    if not space.contains(config):
        profile = getattr(space.device, "name", None) or "the device profile"
        given = ", ".join(f"{k}={v}" for k, v in space.settings.items())
        raise BeastError(f"--explain: the configuration is not a survivor of {space.name} for {profile}"
                         + (f" with {given}" if given else "")
                         + ": a condition of the space rejects it",
                         hint="`beast enumerate SPACE --device ... -D ... -o FILE` lists the survivors")
    kernel = family.generate(config, settings)
    layout = kernel.layout
    threads = 1
    for d in kernel.block:
        threads *= d
    warps = -(-threads // 32)
    params = ", ".join(f"{k}={v}" for k, v in config.items())
    lines = [f"{space.name} ({settings.routine}, {family.name} kernels) on {getattr(space.device, 'name', '?')}:",
             f"  {params}",
             f"kernel: {threads} threads ({warps} warp{'s' * (warps != 1)}) per block, "
             f"{layout.smem_bytes:,} bytes of dynamic shared memory, "
             f"tile {layout.blk_m} x {layout.blk_n} x {layout.blk_k}"]
    from .compiler_facts import arch_of, facts_or_none
    facts = facts_or_none(kernel, arch_of(space.device))
    for line in (compiler_line(facts),
                 model_line(config, settings, size, space.device, facts, layout)):
        if line:
            lines.append(line)
    counters = simulate_counters(config, settings, family.name)
    lines.append(format_counters(counters))
    if family.name == "gemm":
        lines.append("  (the paper's template: FMAs from its layout; its stores to shared memory through registers "
                     "and its global loads into registers are not counted)")
    return "\n".join(lines)
