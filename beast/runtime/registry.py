"""The backends by name, and the argument checks every backend shares.

Backends are named here by module path and imported only when asked for: the registry depends on
none of them, and each of them (and ``auto``, which picks among them) imports the registry.
A new backend is a module with ``build(program, python_source)`` and one entry in
:data:`BACKENDS`."""
from __future__ import annotations

import importlib

from ..errors import BeastError

BACKENDS = {"python": "beast.runtime.python", "c": "beast.runtime.c.enumerator",
            "lua": "beast.runtime.lua"}
AUTO_MODULE = "beast.runtime.auto"
#: ``auto`` (:mod:`beast.runtime.auto`) picks one of BACKENDS per program: Python for the
#: smallest work, C when its build is cached or the work is large, else LuaJIT (Python without
#: it) while C builds in the background.
AUTO = "auto"
CHOICES = (AUTO,) + tuple(BACKENDS)
DEFAULT_BACKEND = AUTO
MAX_THREADS = 4096          # worker threads one (C) enumerator may start
MAX_CHUNK_ROWS = 1 << 20    # rows of one buffer of the C and Lua backends (a larger chunk_size: more chunks)


def check_integer(value, name: str, low: int, high: int | None = None, kind: str = "an integer") -> int:
    """``value`` as an int from ``low`` (to ``high``): numpy integers too, never a bool or a float;
    a BeastError names ``name`` and says ``kind`` where ``value`` is no integer at all."""
    import numbers
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise BeastError(f"{name} must be {kind}, not {value!r}")
    value = int(value)
    if value < low or high is not None and value > high:
        within = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise BeastError(f"{name} must be {within}, not {value}")
    return value


def check_threads(threads) -> int | None:
    """``threads`` as an int from 1 to :data:`MAX_THREADS` (numpy integers too), or None (every
    core): the same check whichever backend runs (only C uses it)."""
    return None if threads is None else check_integer(threads, "threads", 1, MAX_THREADS)


def check_chunk_size(chunk_size) -> int:
    """``chunk_size`` as a positive int (numpy integers too)."""
    return check_integer(chunk_size, "chunk_size", 1)


def get_backend(name: str):
    """The backend module for ``name`` ('auto', 'python', 'c' or 'lua')."""
    if name == AUTO:
        return importlib.import_module(AUTO_MODULE)
    if name not in BACKENDS:
        raise BeastError(f"unknown backend '{name}'", hint=f"choose one of: {', '.join(CHOICES)}")
    try:
        return importlib.import_module(BACKENDS[name])
    except ModuleNotFoundError as exc:
        if exc.name == BACKENDS[name]:
            raise BeastError(f"the {name} backend is not available in this version of beast") from None
        raise
