"""Turn an exception raised while enumerating into an EvaluationError at the user's line."""
from __future__ import annotations

import ast
import linecache
import os

from ..errors import BeastError, EvaluationError, frame_position
from ..frontend.locate import node_location

_DIV_OPS = (ast.Div, ast.FloorDiv, ast.Mod)
ROLE_NAMES = {"iterator": "iterator", "derived": "derived variable", "condition": "condition"}
# what C and Lua report where Python makes a complex number (and fails later, or not at all)
COMPLEX_POW = "a negative number raised to a fractional power (the result is complex)"


class ComplexPowerError(ArithmeticError):
    """A power whose Python result would be complex: beast stops there in every backend."""

    def __init__(self):
        super().__init__(COMPLEX_POW)


class IntegerOverflowError(OverflowError):
    """An integer result past 64 bits: beast stops there in every backend."""

    def __init__(self):
        super().__init__("integer overflow")


def checked_int(v):
    """``v``, unless it is an integer past 64 bits (:class:`IntegerOverflowError`): the Python
    backend checks every integer operation C checks, so that it fails where C and Lua fail."""
    if v.__class__ is int and not -0x8000000000000000 <= v <= 0x7fffffffffffffff:
        raise IntegerOverflowError()
    return v


def checked_pow(base, exp, mod=None):
    """``base ** exp`` (``pow(base, exp, mod)``) as the Python backend computes it: Python's value,
    except that a complex result raises :class:`ComplexPowerError` and an integer past 64 bits
    :class:`IntegerOverflowError`, as C and Lua do."""
    out = pow(base, exp) if mod is None else pow(base, exp, mod)
    if out.__class__ is complex:
        raise ComplexPowerError()
    return checked_int(out)


OVERFLOW_HINT = "integers are 64-bit in every backend"
COUNT_OVERFLOW = "the number of configurations does not fit in 64 bits"
COUNT_HINT = ("no backend counts past 2**63 - 1 configurations: prune the space with conditions, or narrow "
              "it with -D settings")


def explain(exc, op=None):
    """The user-facing text of an exception raised while evaluating (``op``: the failed operator)."""
    text = str(exc)
    if isinstance(exc, ComplexPowerError):
        return COMPLEX_POW
    if isinstance(exc, IntegerOverflowError):
        return "integer overflow"
    if isinstance(exc, ZeroDivisionError):
        if op is not None:
            return "modulo by zero" if op == "%" else "division by zero"
        return "modulo by zero" if text == "integer modulo by zero" else "division by zero"
    if isinstance(exc, ValueError) and "must not be zero" in text:
        return "range() step is zero"
    if isinstance(exc, TypeError) and "cannot be interpreted as an integer" in text:
        return f"range() bound is not an integer ({text.split(' object')[0].strip()})"
    if isinstance(exc, OverflowError):
        if "too large to convert to C" in text:     # len() of a range of 2**63 values or more: as C and Lua say
            return "integer overflow"
        if "Numerical result out of range" in text:     # a float ** float past 1.8e308 ((34, '...'))
            return "float overflow (the result is beyond the largest float, about 1.8e308)"
        return f"numeric overflow ({text})"
    return f"{type(exc).__name__}: {text}"


def caret_in_statement(filename, lineno, exc):
    """Column span of the operation that most likely failed on a user line (for derived values)."""
    line = linecache.getline(filename, lineno)
    if not line:
        return None, None
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None, None
    indent = len(line) - len(line.lstrip())
    power = None                # 0 ** -1 is a ZeroDivisionError too: where no division is on the line
    for node in ast.walk(tree):
        if isinstance(exc, ComplexPowerError) and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            power = power or node
        if isinstance(exc, ZeroDivisionError) and isinstance(node, ast.BinOp) and isinstance(node.op, _DIV_OPS):
            return indent + node.col_offset, indent + node.end_col_offset
        if isinstance(exc, ZeroDivisionError) and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            power = power or node
        if isinstance(exc, (TypeError, ValueError)) and isinstance(node, ast.Call) \
                and getattr(node.func, "id", None) == "range":
            return indent + node.col_offset, indent + node.end_col_offset
    if power is not None:
        return indent + power.col_offset, indent + power.end_col_offset
    return None, None


def failed_operation(node, env, exc):
    """The operation of a node's expression that raised ``exc`` in ``env`` (the frame's locals): a
    division whose divisor is zero, a power whose result would be complex, an integer past 64 bits
    (:func:`overflowed_operation`) or Python's TypeError; None if none shows."""
    from ..expr.nodes import BinOp, evaluate, walk
    if isinstance(exc, IntegerOverflowError):
        return overflowed_operation(node, env)
    if isinstance(exc, TypeError) and node is not None and node.expr is not None:
        from ..expr.nodes import failing_operation
        return failing_operation(node.expr, env, error=TypeError)
    if node is None or not isinstance(exc, (ZeroDivisionError, ComplexPowerError)):
        return None
    ops = ("/", "//", "%") if isinstance(exc, ZeroDivisionError) else ("**",)
    roots = (node.expr,) if node.expr is not None else node.seq.exprs() if node.seq is not None else ()
    for e in (sub for root in roots for sub in walk(root)):
        if isinstance(e, BinOp) and e.op in ops:
            try:
                if ops[0] == "**":
                    base, exp = evaluate(e.left, env), evaluate(e.right, env)
                    if base < 0 and exp != int(exp):
                        return e
                elif evaluate(e.right, env) == 0:
                    return e
            except Exception:  # noqa: BLE001 - an operand that cannot be evaluated here
                continue
    return None


def overflowed_operation(node, env):
    """The operation of a derived variable's or a condition's expression whose integer result leaves
    64 bits in ``env`` (else 2**53, Lua's exact integers), in Python's order of evaluation; None if
    none shows (an iterator's sequence is reported at the iterator)."""
    from ..expr.nodes import failing_operation
    if node is None or node.expr is None:
        return None
    found = failing_operation(node.expr, env)
    return found if found is not None else failing_operation(node.expr, env, 1 << 53)


def overflow_position(node, env):
    """(file, line, col, end col) of an integer overflow of ``node`` in ``env``: under the operation
    that overflowed where the front end recorded its columns, else at the node (its name or call)."""
    failed = overflowed_operation(node, env)
    if failed is not None and failed.pos is not None and failed.pos[2] is not None:
        return failed.pos
    return node_location(node) if node is not None else (None, None, None, None)


def node_error(message, node, exc, config, hint=None):
    """``message`` for the node ``node`` (its role and name added), at the operation that failed
    where its line shows it (``exc``), else at the node's name or call (an inlined function's
    line is its decorator's: no operation of the body is on it)."""
    filename, lineno, col, end = node.filename, node.lineno, None, None
    if exc is not None and lineno:
        col, end = caret_in_statement(filename, lineno, exc)
    if col is None:
        filename, lineno, col, end = node_location(node)
    return EvaluationError(f"{message} in {ROLE_NAMES.get(node.role, 'node')} '{node.name}'", filename, lineno,
                           col, end, hint=hint, config=config)


def map_exception(exc, gen_filename, line_nodes, loop_order):
    """An EvaluationError for ``exc`` raised by generated code (file ``gen_filename``)."""
    tb = exc.__traceback__
    gen_tb, user_tb = None, None
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if fname == gen_filename:
            gen_tb, user_tb = tb, None
        elif gen_tb is not None and os.path.isfile(fname) and "beast" + os.sep + "runtime" not in fname:
            user_tb = tb
        tb = tb.tb_next
    config = {}
    node = None
    f_locals = {}
    if gen_tb is not None:
        entry = line_nodes.get(gen_tb.tb_lineno)
        if entry is not None:
            node, bound = entry
            f_locals = gen_tb.tb_frame.f_locals
            config = {name: f_locals[name] for name in loop_order[:bound] if name in f_locals}
    if isinstance(exc, BeastError):
        err = exc if isinstance(exc, EvaluationError) else EvaluationError(exc.message, hint=exc.hint)
        if err.filename is None and node is not None:
            err.filename, err.lineno, err.col, err.end_col = node_location(node)
        err.config = err.config or config
        return err
    division = failed_operation(node, f_locals, exc) if user_tb is None else None
    message = explain(exc, getattr(division, "op", None))
    hint = OVERFLOW_HINT if message == "integer overflow" else None
    if user_tb is None and division is not None and division.pos is not None:
        filename, lineno, col, end = division.pos
        if col is None:
            col, end = caret_in_statement(filename, lineno, exc)
        return EvaluationError(f"{message} in {ROLE_NAMES[node.role]} '{node.name}'", filename, lineno, col, end,
                               hint=hint, config=config)
    if user_tb is not None:
        return EvaluationError(message, *frame_position(user_tb), hint=hint, config=config)
    if node is not None:
        return node_error(message, node, exc, config, hint)
    return EvaluationError(message, hint=hint, config=config)
