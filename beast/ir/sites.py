"""Sites: where an error can happen while enumerating. A printer gives each site it prints a number;
the runtime maps (site, kind) back to the user-facing error."""
from __future__ import annotations

from beast.ir.record import record


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
