"""Enumerated rows in the forms other tools take: tuples of plain Python values, and Kernel
Tuner's ``(tune_params, list_of_tuples)``."""
from __future__ import annotations


def as_tuples(rows) -> list:
    """Rows of a structured array as tuples of plain Python values (what Kernel Tuner keys on)."""
    return [tuple(row) for row in rows.tolist()]


def kernel_tuner_form(space, backend: str | None = None, threads: int | None = None):
    """``(tune_params, list_of_tuples)`` of ``space``: each iterator's values that occur in a
    survivor (sorted), and the survivors in enumeration order."""
    rows = space.enumerate(backend=backend, threads=threads)
    tune_params = {name: sorted(set(rows[name].tolist())) for name in space.iterators}
    return tune_params, as_tuples(rows)
