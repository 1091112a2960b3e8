"""Build and run enumerators: one backend per target, all behind the same small interface.

A backend's ``build(program, python_source)`` returns an enumerator with ``count(threads)`` and
``chunks(chunk_size, threads)`` (NumPy structured arrays, in enumeration order); for sampling
(:mod:`beast.sampling`), on programs whose outer loops are bound to a prefix
(:func:`beast.ir.prefix.bind`), also ``count_each(prefixes, threads)`` and ``rows_under(prefix, n)``."""
from __future__ import annotations

import importlib

from ..errors import BeastError

BACKENDS = {"python": "beast.runtime.python_backend", "c": "beast.runtime.c_backend",
            "lua": "beast.runtime.lua_backend"}
#: ``auto`` (:mod:`beast.runtime.auto`) picks one of BACKENDS per program: Python for the
#: smallest work, C when its build is cached or the work is large, else LuaJIT (Python without
#: it) while C builds in the background.
AUTO = "auto"
CHOICES = (AUTO,) + tuple(BACKENDS)
DEFAULT_BACKEND = AUTO
MAX_THREADS = 4096          # worker threads one (C) enumerator may start


def get_backend(name: str):
    """The backend module for ``name`` ('auto', 'python', 'c' or 'lua')."""
    if name == AUTO:
        from . import auto
        return auto
    if name not in BACKENDS:
        raise BeastError(f"unknown backend '{name}'", hint=f"choose one of: {', '.join(CHOICES)}")
    try:
        return importlib.import_module(BACKENDS[name])
    except ModuleNotFoundError as exc:
        if exc.name == BACKENDS[name]:
            raise BeastError(f"the {name} backend is not available in this version of beast") from None
        raise
