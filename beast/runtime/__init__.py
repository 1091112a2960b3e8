"""Build and run enumerators: one backend per target, all behind the same small interface.

A backend's ``build(program, python_source)`` returns an enumerator with ``count(threads)`` and
``chunks(chunk_size, threads)`` (NumPy structured arrays, in enumeration order); for sampling
(:mod:`beast.explore.sampling`), on programs whose outer loops are bound to a prefix
(:func:`beast.ir.prefix.bind`), also ``count_each(prefixes, threads)`` and ``rows_under(prefix, n)``."""
from __future__ import annotations

from .registry import (AUTO, BACKENDS, CHOICES, DEFAULT_BACKEND, MAX_CHUNK_ROWS, MAX_THREADS, check_chunk_size,
                       check_integer, check_threads, get_backend)

__all__ = ["AUTO", "BACKENDS", "CHOICES", "DEFAULT_BACKEND", "MAX_CHUNK_ROWS", "MAX_THREADS", "check_chunk_size",
           "check_integer", "check_threads", "get_backend"]
