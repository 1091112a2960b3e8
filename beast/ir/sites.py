"""Sites: where an error can happen while enumerating. A printer gives each site it prints a number;
the runtime maps (site, kind) back to the user-facing error."""
from __future__ import annotations

from beast.ir.record import record

# The kinds of error a compiled enumerator reports with a site (the C enum BN_K_<KIND> is generated
# from this tuple, and the runtime reads it back).
KINDS = ("overflow", "zero_floordiv", "zero_mod", "zero_truediv", "zero_ffloordiv", "zero_fmod",
         "zero_ftruediv", "zero_pow", "fpow_overflow", "complex_pow", "range_step_zero",
         "range_not_int", "non_integer", "returned_none", "bad_return", "exception", "table_miss",
         "no_memory", "list_index", "tuple_index", "empty_min", "empty_max", "float_inf_to_int",
         "float_nan_to_int", "too_many_values", "count_overflow", "negative_shift", "cancelled")
KIND = {name: i + 1 for i, name in enumerate(KINDS)}


@record
class NodeSite:
    """An IR statement (a derived variable, a condition, an iterator's sequence): errors name the
    node; ``lets`` are the lets in scope before it (to recompute the environment)."""
    node: object
    stmt: object
    lets: tuple = ()


@record
class LoopValueSite:
    """A loop's values: a non-integer value or a deferred function that returned no sequence."""
    node: object
    var: str


@record
class UserSite:
    """An operation inside a translated user function (file, line and columns of its source)."""
    filename: str
    lineno: int
    col: int | None
    end: int | None


@record
class ExcSite:
    """An exception that a tabulated function raised for some arguments, already located."""
    exc: BaseException
    filename: str | None
    lineno: int | None
    col: int | None
    end: int | None


@record
class TableSite:
    """Arguments outside a tabulated function's computed domain (an internal error)."""
    name: str


def user_position(filename, node):
    """Where an error at the ast ``node`` of ``filename`` is reported: (filename, line, col, end col),
    no end col where the node spans several lines; None for a node without a line."""
    line = getattr(node, "lineno", None)
    if line is None:
        return None
    return filename, line, node.col_offset, node.end_col_offset if getattr(node, "end_lineno", line) == line else None
