"""The vocabulary of a space file: ``from beast import *``.

A space file stays importable as plain Python: these functions build symbolic iterators,
expressions and conditions that the front end later compiles. See docs/language.md for the meaning.
"""
from __future__ import annotations

import builtins
import inspect
import os
import sys
import threading

from ..errors import SettingError, SpaceError, short_int
from ..expr.callsite import user_frame
from ..expr.nodes import Call, Expr, IteratorTruthError, Select, spell, static_type, user_names, wrap

__all__ = ["range", "iterator", "condition", "select", "union", "intersection", "difference",
           "setting", "device", "min", "max", "sum", "Iterator", "Condition"]

COMPENSATED_SUM = sys.version_info >= (3, 12)   # Python's sum() of floats: Neumaier's summation
CONDITION_KINDS = ("hard", "soft", "correctness")


def _caller():
    """(filename, lineno) of the first frame outside the beast package: the user's line."""
    f = user_frame()
    return (f.f_code.co_filename, f.f_lineno) if f is not None else (None, None)


# ---------------------------------------------------------------------------------------------
# The compilation context: which device and settings a load asked for, and what the file declared.

class _Context:
    def __init__(self, device=None, overrides=None):
        self.device_spec = device
        self.overrides = dict(overrides or {})
        self.settings = {}        # name -> SettingDecl, in declaration order
        self.conditions = []      # every Condition created, in creation order
        self._device = None

    def device(self):
        if self._device is None:
            from .devices import resolve_device
            self._device = resolve_device(self.device_spec)
        return self._device


class SettingDecl:
    """A setting declared by the space: name, default, choices, chosen value and where."""

    def __init__(self, name, default, choices, value, where, help):
        self.name, self.default, self.choices, self.value = name, default, choices, value
        self.filename, self.lineno = where
        self.help = help


_local = threading.local()


def _context() -> _Context:
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        ctx = _local.ctx = _Context(device=os.environ.get("BEAST_DEVICE") or None)
    return ctx


class compiling:
    """``with compiling(device, settings) as ctx:`` — run a space file under these choices."""

    def __init__(self, device=None, overrides=None):
        self.ctx = _Context(device, overrides)
        self.ctx.loading = True     # (a plain import of several space files shares the default one)

    def __enter__(self):
        self.saved = getattr(_local, "ctx", None)
        _local.ctx = self.ctx
        return self.ctx

    def __exit__(self, *exc):
        _local.ctx = self.saved
        return False


# ---------------------------------------------------------------------------------------------
# Iterators

class Source:
    """Where an iterator's values come from."""

    def constant_values(self):
        """The values as a list when they depend on nothing; otherwise None."""
        return None

    def depends(self):
        return ()


class RangeSource(Source):
    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def depends(self):
        return (self.start, self.stop, self.step)

    def constant_values(self):
        if any(isinstance(x, Expr) for x in self.depends()):
            return None
        return builtins.range(self.start, self.stop, self.step)     # a sequence, never materialized


class ValuesSource(Source):
    def __init__(self, values):
        self.values = tuple(values)

    def constant_values(self):
        return list(self.values)


class ScalarSource(Source):
    def __init__(self, value):
        self.value = value

    def depends(self):
        return (self.value,)

    def constant_values(self):
        return None if isinstance(self.value, Expr) else [self.value]


class SetOpSource(Source):
    def __init__(self, op, left: "Iterator", right: "Iterator"):
        self.op, self.left, self.right = op, left, right

    def depends(self):
        return (self.left, self.right)

    def constant_values(self):
        a, b = self.left.source.constant_values(), self.right.source.constant_values()
        if a is None or b is None:
            return None
        return set_operation(self.op, a, b)


class FunctionSource(Source):
    """A deferred (``return``) or closure (``yield``) iterator function."""

    def __init__(self, func):
        self.func = func
        self.closure = inspect.isgeneratorfunction(func)


def set_operation(op, a, b):
    """union/intersection/difference of two value sequences: a's order, each value once."""
    seen, out = set(), []
    bset = set(b)
    if op == "union":
        for v in list(a) + list(b):
            if v not in seen:
                seen.add(v)
                out.append(v)
        return out
    keep = (lambda v: v in bset) if op == "intersection" else (lambda v: v not in bset)
    for v in a:
        if v not in seen and keep(v):
            seen.add(v)
            out.append(v)
    return out


class Iterator(Expr):
    """A tunable parameter: a loop over integer values, named by the module-level name it is bound to."""

    __slots__ = ("source", "filename", "lineno", "name")

    def __init__(self, source: Source, where=None):
        self.source = source
        self.filename, self.lineno = where or _caller()
        self.name = None

    def static_type(self):
        return "int"

    def _values(self):
        values = self.source.constant_values()
        if values is None:
            raise SpaceError("cannot list the values of an iterator that depends on other iterators "
                             "at module level", hint="use it in an expression, a range() or a @condition")
        return values

    def __iter__(self):
        return iter(self._values())

    def __len__(self):
        return builtins.len(self._values())

    def __contains__(self, item):
        if isinstance(item, Expr):
            raise IteratorTruthError("`in` on an iterator value at module level",
                                     hint="test membership in a @condition function: return x in range(...)")
        return item in self._values()

    def __repr__(self):
        return f"<beast iterator {self.name or '?'} at line {self.lineno}>"


def _check_int_arg(value, what):
    if isinstance(value, Expr):
        t = static_type(value)
        if t == "float":
            raise SpaceError(f"{what} is not an integer (it is a float expression)",
                             hint="use // for integer division")
        if t == "str":
            raise SpaceError(f"{what} is a string, not an integer")
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        raise SpaceError(f"{what} is not an integer: {value!r}", hint="use // for integer division")
    import numbers
    hint = _value_hint(value) if isinstance(value, numbers.Integral) else None
    raise SpaceError(f"{what} must be an integer or an iterator expression, not {type(value).__name__}",
                     hint=hint)


def range(*args):  # noqa: A001 - the point is to overload the builtin
    """Python's ``range`` whose bounds may be iterators or expressions of iterators."""
    if not 1 <= builtins.len(args) <= 3:
        raise SpaceError(f"range expected 1 to 3 arguments, got {builtins.len(args)}")
    names = ("start", "stop", "step")
    if builtins.len(args) == 1:
        args = (0, args[0], 1)
    elif builtins.len(args) == 2:
        args = (args[0], args[1], 1)
    start, stop, step = (_check_int_arg(a, f"range() {n}") for a, n in zip(args, names))
    if not isinstance(step, Expr) and step == 0:
        raise SpaceError("range() step must not be zero")
    return Iterator(RangeSource(start, stop, step))


def _as_iterator(value, what="iterator"):
    if isinstance(value, Iterator):
        return value
    if isinstance(value, builtins.range):
        return Iterator(ValuesSource(value))
    if isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, Expr):
                raise _expr_in_list(v, what)
            if not isinstance(v, (int, bool)):
                raise SpaceError(f"{what} values must be integers, got {v!r}", hint=_value_hint(v))
        return Iterator(ValuesSource(int(v) for v in value))
    if isinstance(value, Expr):
        if static_type(value) in ("float", "str"):
            raise SpaceError(f"{what} value is not an integer",
                             hint=_value_hint("") if static_type(value) == "str" else
                             "use // for integer division")
        return Iterator(ScalarSource(value))
    if isinstance(value, (int, bool)):
        return Iterator(ScalarSource(int(value)))
    raise SpaceError(f"{what} values must be integers, got {value!r}", hint=_value_hint(value))


def _value_hint(v) -> str:
    """What to do about ``v``, a value an iterator cannot take, by what it is."""
    import numbers
    if isinstance(v, numbers.Integral):
        return (f"{type(v).__module__}.{type(v).__name__} is not a Python int: convert the values "
                "with int(), as in iterator([int(v) for v in values])")
    if isinstance(v, str):
        return ("an iterator's values are integers; for a choice among names, declare a setting "
                "with choices: setting('precision', 'float', choices=['float', 'double'])")
    if isinstance(v, numbers.Real):
        return "iterator values are integers; use // for integer division"
    return "iterator values are integers: a list, a range() or an iterator expression of them"


def _expr_in_list(v, what):
    """The error for an iterator expression in a list of values, spelled as the user wrote it;
    ``focus`` lets the loader put the caret under it."""
    text = spell(v, user_names())
    if static_type(v) in ("float", "str"):
        err = SpaceError(f"{what} values must be integers, got {text}",
                         hint=_value_hint("" if static_type(v) == "str" else 0.5))
    else:
        err = SpaceError(f"{what} values in a list must be constants, got {text}",
                         hint=f"a value computed from iterators is an iterator of one value: "
                              f"union([...], {text})")
    err.focus = text
    return err


def iterator(values):
    """Declare an iterator: ``iterator([1, 2, 4])``, ``iterator(expr)`` (one value), or as the
    decorator ``@iterator`` of a function returning a scalar, list or range (deferred iterator)
    or yielding values (closure iterator)."""
    if inspect.isfunction(values):
        filename, lineno = values.__code__.co_filename, values.__code__.co_firstlineno
        it = Iterator(FunctionSource(values), where=(filename, lineno))
        it.name = values.__name__
        return it
    return _as_iterator(values)


def union(a, b):
    """a's values, then b's values not yet seen (each value once)."""
    return Iterator(SetOpSource("union", _as_iterator(a), _as_iterator(b)))


def intersection(a, b):
    """a's values that b also yields (each value once)."""
    return Iterator(SetOpSource("intersection", _as_iterator(a), _as_iterator(b)))


def difference(a, b):
    """a's values that b does not yield (each value once)."""
    return Iterator(SetOpSource("difference", _as_iterator(a), _as_iterator(b)))


# ---------------------------------------------------------------------------------------------
# Conditions

class Condition:
    """A pruning rule: a configuration for which it is True is rejected."""

    def __init__(self, test, kind=None, where=None, func=None):
        self.test = test          # an Expr or a constant (expression conditions)
        self.func = func          # the function (@condition)
        self.kind = kind
        self.filename, self.lineno = where or _caller()
        self.name = func.__name__ if func is not None else None
        _context().conditions.append(self)

    def __repr__(self):
        return f"<beast condition {self.name or '?'} at line {self.lineno}>"

    def __bool__(self):
        raise SpaceError("a condition has no truth value at module level",
                         hint="conditions prune configurations; they are not tested in module code")


def _check_kind(kind):
    if kind is not None and kind not in CONDITION_KINDS:
        raise SpaceError(f"condition kind must be one of {', '.join(CONDITION_KINDS)}, not {kind!r}")
    return kind


def condition(test=None, *, kind=None):
    """Declare a pruning condition (True rejects): ``condition(expr)``, ``@condition`` on a
    function of nodes, or ``@condition(kind="hard"|"soft"|"correctness")``."""
    _check_kind(kind)
    if inspect.isfunction(test):
        code = test.__code__
        return Condition(None, kind, where=(code.co_filename, code.co_firstlineno), func=test)
    if test is None:
        def decorate(func):
            if not inspect.isfunction(func):
                raise SpaceError("@condition(kind=...) decorates a function")
            code = func.__code__
            return Condition(None, kind, where=(code.co_filename, code.co_firstlineno), func=func)
        return decorate
    if isinstance(test, (Expr, bool, int, float)):
        return Condition(_truth_value(wrap(test)), kind)
    raise SpaceError(f"condition() takes an expression or a function, not {type(test).__name__}")


def _truth_value(test):
    """The test of ``condition(test)``: a truth value or an integer (Python's truth of an int,
    ``condition(a % 2)``: odd, is an idiom). A float (``a / b``) or a string is refused at its
    caret: a float is true unless it is exactly 0.0, which is rarely what was meant."""
    t = static_type(test)
    if t not in ("float", "str"):
        return test
    text = spell(test, user_names())
    what = "a float" if t == "float" else "a string"
    hint = (f"compare it (condition({text} > 1)), or use // for an integer quotient" if t == "float"
            else f"compare it: condition({text} == '...')")
    err = SpaceError(f"the value of a condition is {what}: {text}; a condition is a truth value "
                     "(True rejects) or an integer (not 0 rejects)", hint=hint)
    err.focus = text
    raise err


# ---------------------------------------------------------------------------------------------
# Expressions

def select(cond, then, orelse):
    """``then if cond else orelse`` for iterator expressions (module level cannot write ``if``)."""
    if not isinstance(cond, Expr):
        return then if cond else orelse
    return Select(cond, wrap(then), wrap(orelse))


def _minmax(name, args):
    if builtins.len(args) == 1 and not isinstance(args[0], Expr):
        args = tuple(args[0])
    if not any(isinstance(a, Expr) for a in args):
        return getattr(builtins, name)(*args)
    if builtins.len(args) < 2:
        raise SpaceError(f"{name}() of iterator expressions needs at least two arguments")
    out = wrap(args[0])
    for a in args[1:]:
        out = Call(name, (out, wrap(a)))
    return out


def min(*args):  # noqa: A001
    """The builtin ``min``, also over iterator expressions."""
    return _minmax("min", args)


def max(*args):  # noqa: A001
    """The builtin ``max``, also over iterator expressions."""
    return _minmax("max", args)


def sum(iterable, /, start=0):  # noqa: A001
    """The builtin ``sum``, also over iterator expressions: ``start + x0 + x1 + ...``, left to right.

    From Python 3.12 on, ``sum()`` of floats compensates the rounding of each addition
    (``sum([0.1] * 10) == 1.0``), which a loop nest's additions do not: there a sum of iterator
    expressions that may be floats is refused (integers are exact either way)."""
    items = builtins.list(iterable)
    terms = [start, *items]
    if COMPENSATED_SUM and any(isinstance(x, Expr) for x in terms) and not all(
            (static_type(x) if isinstance(x, Expr) else type(x).__name__) in ("int", "bool") for x in terms):
        err = SpaceError("sum() of iterator expressions that may be floats: from Python 3.12 on, sum() "
                         "compensates the rounding of each float addition, and beast's expressions add "
                         "one term at a time",
                         hint="write the additions out (a + b + c, each rounded) or sum in a @condition "
                              "function, where sum() is Python's own")
        err.call = "sum"
        raise err
    return builtins.sum(items, start)


# ---------------------------------------------------------------------------------------------
# Settings and the device

def _int_arithmetic(raw: str):
    """The value of ``raw`` when it is integer arithmetic (``2**20``, ``-3 * 64``, ``1 << 10``:
    + - * // % ** << >> and parentheses on integer literals), else None. Powers and shifts stay
    small enough to compute at once (about 65,536 bits at most)."""
    import ast
    try:
        tree = ast.parse(raw.strip(), mode="eval").body
    except SyntaxError:
        return None
    ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__,
           ast.Mod: int.__mod__, ast.Pow: int.__pow__, ast.LShift: int.__lshift__, ast.RShift: int.__rshift__}

    def value(node):
        if isinstance(node, ast.Constant) and node.value.__class__ is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = value(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            a, b = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and (b < 0 or a.bit_length() * b > 65536) or \
                    isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b <= 65536:
                raise ValueError(raw)
            return ops[type(node.op)](a, b)
        raise ValueError(raw)

    try:
        return value(tree)
    except (ValueError, ZeroDivisionError, RecursionError):
        return None


def _long_decimal(text: str):
    """``text`` as an int where it is a decimal integer longer than Python's int-to-str digit limit
    (which would refuse a valid integer as not one), else ``text`` unchanged: the setting's
    type check then runs on the int, and the literal check refuses it with a short message."""
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    digits = text.lstrip("+-").replace("_", "")
    if not limit or len(digits) <= limit or not (digits.isascii() and digits.isdigit()) \
            or text[:1] in "+-" and text[1:2] in "+-" or "__" in text or text.endswith("_"):
        return text
    value = 0
    for i in range(0, len(digits), limit):          # chunks under the limit, exactly
        chunk = digits[i:i + limit]
        value = value * 10 ** len(chunk) + int(chunk)
    return -value if text.startswith("-") else value


def _parse_override(raw, default):
    if not isinstance(raw, str):
        return raw
    if isinstance(default, int) and not isinstance(default, bool):
        raw = _long_decimal(raw.strip())
        if not isinstance(raw, str):
            return raw
    if isinstance(default, bool):
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise SettingError(f"expected a boolean, got {raw!r}")
    if isinstance(default, int):
        try:
            return int(raw, 0) if not raw.strip().isdigit() else int(raw)    # (base 10 takes 08)
        except ValueError:
            value = _int_arithmetic(raw)
            if value is None:
                raise SettingError(f"expected an integer, got {raw!r}",
                                   hint="a whole number (1000, 0x400, 1_000) or integer arithmetic "
                                        "on them (2**10, 4 * 256, 1 << 10)") from None
            return value
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise SettingError(f"expected a number, got {raw!r}") from None
    return raw


def _shown(value) -> str:
    """A value for a message: huge integers by their size, long texts cut in the middle."""
    if isinstance(value, int) and not isinstance(value, bool):
        return short_int(value)
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:28]}...{text[-28:]}"


def setting(name: str, default, choices=None, help: str | None = None):  # noqa: A002
    """Declare a setting (``-D NAME=VALUE`` on the command line) and return its value."""
    ctx = _context()
    where = _caller()
    first = ctx.settings.get(name)
    if first is not None and (first.filename, first.lineno) != where and getattr(ctx, "loading", False):
        # (one line run twice, as a helper function that reads the setting, is one declaration)
        place = f"line {first.lineno}" if first.filename == where[0] else f"{first.filename}:{first.lineno}"
        err = SettingError(f"setting '{name}' is declared twice: first at {place}",
                           hint="the two would share one value (one -D sets both); give each its own "
                                "name, or declare it once and use that variable")
        err.call = "setting"
        raise err
    value = default
    if name in ctx.overrides:
        try:
            value = _parse_override(ctx.overrides[name], default)
        except SettingError as err:
            raise SettingError(f"setting '{name}': {err.message}", hint=err.hint) from None
        if isinstance(default, int) and not isinstance(default, bool) and isinstance(value, float):
            raise SettingError(f"setting '{name}' = {value!r} is a float, and the setting is an integer "
                               f"(its default is {default})",
                               hint=f"give an integer: settings={{'{name}': "
                                    f"{int(value) if value.is_integer() else '...'}}}")
    if choices is not None and value not in choices:
        shown = ", ".join(_shown(c) for c in choices)
        given = _shown(value)
        raise SettingError(f"setting '{name}' = {given} is not one of its choices: {shown}")
    ctx.settings[name] = SettingDecl(name, default, tuple(choices) if choices else None, value,
                                     where, help)
    return value


def device():
    """The device profile selected for this compilation (``--device``; default: the paper's K40c)."""
    return _context().device()
