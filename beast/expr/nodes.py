"""Symbolic expressions over iterator values: what module-level arithmetic on iterators builds.

The same tree is the expression language of the loop-nest IR: the front end replaces the leaves
(iterator and derived objects) by :class:`Var` and the printers turn it into Python, C or Lua.
"""
from __future__ import annotations

import ast
import builtins
import operator

from ..errors import SpaceError
from .callsite import user_frame

BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow}
COMPARES = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}
BITWISE = {"&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
           ">>": operator.rshift}
BUILTIN_CALLS = ("min", "max", "abs")


def fold_binop(op, a, b):
    """Python's value of ``a op b`` for two constants, as every target folds it; None when Python
    raises (the compiled code raises at run time instead) or when the result would be a huge
    integer (an exponent or a shift that no 64-bit target holds: not computed)."""
    fn = BINOPS.get(op) or BITWISE.get(op)
    if fn is None:
        return None
    ints = type(a) in (int, bool) and type(b) in (int, bool)
    if ints and (op == "**" and abs(a) > 1 and b > 128 or op == "<<" and b > 128):
        return None
    try:
        return fn(a, b)
    except (ArithmeticError, ValueError, TypeError):
        return None


class IteratorTruthError(SpaceError):
    """Raised when module-level code asks for the truth value of an iterator expression."""


class Expr:
    """Base of the symbolic expression tree. Operators build new nodes; nothing is evaluated."""

    __slots__ = ("__weakref__", "pos")

    # arithmetic
    def __add__(self, o): return _written(BinOp("+", self, wrap(o)))
    def __radd__(self, o): return _written(BinOp("+", wrap(o), self))
    def __sub__(self, o): return _written(BinOp("-", self, wrap(o)))
    def __rsub__(self, o): return _written(BinOp("-", wrap(o), self))
    def __mul__(self, o): return _written(BinOp("*", self, wrap(o)))
    def __rmul__(self, o): return _written(BinOp("*", wrap(o), self))
    def __truediv__(self, o): return _written(BinOp("/", self, wrap(o)))
    def __rtruediv__(self, o): return _written(BinOp("/", wrap(o), self))
    def __floordiv__(self, o): return _written(BinOp("//", self, wrap(o)))
    def __rfloordiv__(self, o): return _written(BinOp("//", wrap(o), self))
    def __mod__(self, o): return _written(BinOp("%", self, wrap(o)))
    def __rmod__(self, o): return _written(BinOp("%", wrap(o), self))
    def __pow__(self, o): return _written(BinOp("**", self, wrap(o)))
    def __rpow__(self, o): return _written(BinOp("**", wrap(o), self))
    def __neg__(self): return _written(UnOp("-", self))
    def __pos__(self): return self
    def __abs__(self): return Call("abs", (self,))
    # relational
    def __lt__(self, o): return _written(Compare("<", self, wrap(o)))
    def __le__(self, o): return _written(Compare("<=", self, wrap(o)))
    def __gt__(self, o): return _written(Compare(">", self, wrap(o)))
    def __ge__(self, o): return _written(Compare(">=", self, wrap(o)))
    def __eq__(self, o): return _written(Compare("==", self, wrap(o)))  # type: ignore[override]
    def __ne__(self, o): return _written(Compare("!=", self, wrap(o)))  # type: ignore[override]
    # & | ~: logical on truth values (the overloadable stand-ins for and/or/not), & | bitwise on
    # integers (Python's meaning); anything else is refused (see _logic)
    def __and__(self, o): return _logic("&", self, wrap(o))
    def __rand__(self, o): return _logic("&", wrap(o), self)
    def __or__(self, o): return _logic("|", self, wrap(o))
    def __ror__(self, o): return _logic("|", wrap(o), self)
    def __invert__(self): return _invert(self)
    # the other operators of Python's ints: not beast's (a clear error, not a TypeError)
    def __lshift__(self, o): _no_operator("<<")
    __rlshift__ = __lshift__
    def __rshift__(self, o): _no_operator(">>")
    __rrshift__ = __rshift__
    def __xor__(self, o): _no_operator("^")
    __rxor__ = __xor__
    def __matmul__(self, o): _no_operator("@")
    __rmatmul__ = __matmul__
    # the numeric conversions: not beast's either (int() took __index__'s message, the others a TypeError)
    def __int__(self): _no_conversion("int")
    def __float__(self): _no_conversion("float")
    def __round__(self, n=None): _no_conversion("round")
    def __trunc__(self): _no_conversion("trunc")
    def __floor__(self): _no_conversion("floor")
    def __ceil__(self): _no_conversion("ceil")

    __hash__ = object.__hash__

    def __getattr__(self, name):
        if name == "pos":
            return None
        raise AttributeError(name)

    def __bool__(self):
        raise IteratorTruthError(
            "the truth value of an iterator expression is not known at module level",
            hint="use select(cond, a, b) for a value, & | ~ between comparisons instead of and/or/not, "
                 "or a @condition function for a test")

    def __index__(self):
        raise IteratorTruthError("an iterator expression cannot be used as a plain integer here",
                                 hint="use the iterator in a range(), an expression or a @condition")


    def children(self) -> tuple:
        return ()


def _logic(symbol, left, right):
    """``left & right`` or ``left | right`` written at module level. Python's own meaning where it is
    one: on two truth values (bools: comparisons, & | ~ of them, True/False) the logical and/or
    (short-circuit, a bool: what Python's & | give on bools), on two integers the bitwise and/or.
    A truth value with an integer, or a float, is refused at its caret: the text reads as logical
    where Python's value is bitwise (``True & 4`` is 0), or Python has no value at all."""
    types = static_type(left), static_type(right)
    if types == ("bool", "bool"):
        return _written(BoolOp("and" if symbol == "&" else "or", left, right))
    if types == ("int", "int"):
        return _written(BinOp(symbol, left, right))
    word = "and" if symbol == "&" else "or"
    if "bool" in types and "int" in types:
        number = left if types[0] == "int" else right
        _logic_error(symbol, left, right,
                     f"'{symbol}' of a truth value and an integer at module level: '{symbol}' is logical "
                     f"{word} on truth values and bitwise {word} on integers",
                     f"for logical {word}, make the integer a truth value: {_operand(number)[1]} != 0; for "
                     f"Python's bitwise {word} of the two, write it in a @condition function")
    bad, operand = next((t, e) for t, e in zip(types, (left, right)) if t not in ("bool", "int"))
    what = {"float": "a float", "str": "a string", "num": "a value that may be a float"}.get(bad, bad)
    raw, text = _operand(operand)
    _logic_error(symbol, left, right,
                 f"'{symbol}' on {what} ({raw}) at module level: '{symbol}' takes truth values "
                 f"(logical {word}) or integers (bitwise {word})",
                 f"compare it for a truth value ({text} > 0), or use // for an integer quotient")


def _invert(operand):
    """``~x`` at module level: logical not of a truth value (Python's ``~True``, -2, is always true:
    beast keeps its stand-in for ``not``). Of an integer it is refused: read as ``not``, it would
    mean ``x == 0`` where Python's is -x - 1; of a float too."""
    t = static_type(operand)
    if t == "bool":
        return Not(operand)
    focus = spell(Not(operand), user_names())       # the source of ~x, for the caret
    raw, text = _operand(operand)
    if t == "int":
        _not_beasts("'~' on an integer at module level: beast's ~ is logical not (of a truth value), "
                    "Python's ~ of an integer is -x - 1",
                    f"for logical not write {text} == 0; for Python's bitwise not write -{text} - 1",
                    operator="~", focus=focus)
    what = {"float": "a float", "str": "a string", "num": "a value that may be a float"}.get(t, t)
    _not_beasts(f"'~' on {what} at module level: ~ is logical not of a truth value",
                f"compare the value for a truth value: ~({raw} > 0)", operator="~", focus=focus)


def _operand(e):
    """``e`` spelled as the user wrote it: as it is, and in parentheses unless it is a name, a
    constant or a call (to be written next to an operator)."""
    import ast
    text = spell(e, user_names())
    try:
        atom = isinstance(ast.parse(text, mode="eval").body, (ast.Name, ast.Constant, ast.Call))
    except SyntaxError:         # an unnamed iterator: <iterator>
        atom = True
    return text, (text if atom else f"({text})")


def _logic_error(symbol, left, right, message, hint):
    """Refuse ``left symbol right``; ``focus``, its source as ast.unparse writes it, puts the caret
    under the whole operation (the line may have others)."""
    _not_beasts(message, hint, operator=symbol, focus=spell(BinOp(symbol, left, right), user_names()))


def _no_operator(symbol):
    _not_beasts(f"'{symbol}' on an iterator value at module level: beast's expressions have + - * / // % **, "
                "comparisons, abs, min and max (& | are and/or of truth values and bitwise and/or of "
                "integers, ~ is not)",
                "write 2**n for 1 << n and x // 2**n for x >> n, or compute it in a @condition or @iterator "
                "function, where Python's operators all work", operator=symbol)


def _no_conversion(name):
    _not_beasts(f"{name}() of an iterator value at module level: the value is not known before the space is "
                "enumerated",
                "use // for an integer quotient (a * 0.5 -> a // 2) or * 1.0 for a float, or compute it in a "
                "@condition or @iterator function, where Python's functions all work", call=name)


def _not_beasts(message, hint, **focus):
    """Raise the error of a Python operation that module-level expressions do not have; ``focus``
    (``operator`` or ``call``) tells the loader which node of the line gets the caret."""
    err = SpaceError(message, hint=hint)
    for key, value in focus.items():
        setattr(err, key, value)
    raise err


def _written(node):
    """Record where the user wrote an operation built at module level: (file, line, col, end_col),
    the columns those of the operation the user's frame is running (its errors get a caret there;
    None where Python does not say, or the operation spans lines)."""
    f = user_frame()
    if f is None:
        node.pos = None
        return node
    col = end = None
    try:
        from itertools import islice
        line, end_line, c, e = next(islice(f.f_code.co_positions(), f.f_lasti // 2, None))
        if line == end_line == f.f_lineno and c is not None:
            col, end = c, e
    except (AttributeError, StopIteration, ValueError):     # Python 3.10: no co_positions
        pass
    node.pos = (f.f_code.co_filename, f.f_lineno, col, end)
    return node


def wrap(value) -> Expr:
    """Turn a plain value (int, float, bool, str) into a :class:`Const`; leave expressions alone."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float, str)):
        return Const(value)
    raise SpaceError(f"cannot use a value of type {type(value).__name__} in an iterator expression",
                     hint="only numbers, strings and other iterator expressions combine with iterators")


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Const({self.value!r})"


class Var(Expr):
    """A reference by name to an iterator, derived variable or constant (after lowering)."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"Var({self.name})"


class BinOp(Expr):
    """``left op right``. Divisions and powers carry ``pos`` = (filename, lineno, col, end_col) of the user's
    source when known, so that a division by zero (a complex power) is reported where it was written."""
    __slots__ = ("op", "left", "right")

    def __init__(self, op, left, right, pos=None):
        self.op, self.left, self.right, self.pos = op, left, right, pos

    def children(self):
        return (self.left, self.right)


class UnOp(Expr):
    __slots__ = ("op", "operand")

    def __init__(self, op, operand):
        self.op, self.operand = op, operand

    def children(self):
        return (self.operand,)


class Compare(Expr):
    __slots__ = ("op", "left", "right")

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right

    def children(self):
        return (self.left, self.right)


class BoolOp(Expr):
    """Short-circuit ``and``/``or`` whose value is a bool (True/False), in every backend."""
    __slots__ = ("op", "left", "right")

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right

    def children(self):
        return (self.left, self.right)


class Not(Expr):
    __slots__ = ("operand",)

    def __init__(self, operand):
        self.operand = operand

    def children(self):
        return (self.operand,)


class Call(Expr):
    """A call of ``min``, ``max`` or ``abs`` (the builtins every backend provides)."""
    __slots__ = ("func", "args")

    def __init__(self, func: str, args: tuple):
        assert func in BUILTIN_CALLS
        self.func, self.args = func, tuple(args)

    def children(self):
        return self.args


class Select(Expr):
    """``select(cond, a, b)``: a if cond else b, evaluating only the branch taken."""
    __slots__ = ("cond", "then", "orelse")

    def __init__(self, cond, then, orelse):
        self.cond, self.then, self.orelse = cond, then, orelse

    def children(self):
        return (self.cond, self.then, self.orelse)


class FuncCall(Expr):
    """A call of a user function (the body of a @condition, after lowering) with node arguments."""
    __slots__ = ("func", "args")

    def __init__(self, func: str, args: tuple):
        self.func, self.args = func, tuple(args)

    def children(self):
        return self.args


def walk(expr: Expr):
    """Yield every node of an expression tree, parents first."""
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(e.children()))


def evaluate(expr: Expr, env: dict, funcs: dict | None = None):
    """Evaluate an expression with Python semantics; ``env`` maps Var names to values.

    This is the reference meaning of every node; the brute-force oracle and constant folding use it."""
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Var):
        return env[expr.name]
    if isinstance(expr, BinOp):
        fn = BINOPS.get(expr.op) or BITWISE[expr.op]
        return fn(evaluate(expr.left, env, funcs), evaluate(expr.right, env, funcs))
    if isinstance(expr, UnOp):
        return -evaluate(expr.operand, env, funcs)
    if isinstance(expr, Compare):
        return COMPARES[expr.op](evaluate(expr.left, env, funcs), evaluate(expr.right, env, funcs))
    if isinstance(expr, BoolOp):
        left = bool(evaluate(expr.left, env, funcs))
        if expr.op == "and":
            return left and bool(evaluate(expr.right, env, funcs))
        return left or bool(evaluate(expr.right, env, funcs))
    if isinstance(expr, Not):
        return not evaluate(expr.operand, env, funcs)
    if isinstance(expr, Call):
        return getattr(builtins, expr.func)(*(evaluate(a, env, funcs) for a in expr.args))
    if isinstance(expr, Select):
        if evaluate(expr.cond, env, funcs):
            return evaluate(expr.then, env, funcs)
        return evaluate(expr.orelse, env, funcs)
    if isinstance(expr, FuncCall):
        return funcs[expr.func](*(evaluate(a, env, funcs) for a in expr.args))
    raise TypeError(f"cannot evaluate {expr!r}")


class _Found(Exception):
    def __init__(self, node):
        self.node = node


def failing_operation(expr: Expr, env: dict, limit: int = 1 << 63, error=None):
    """The first operation of ``expr``, in Python's order of evaluation in ``env`` (``select`` and
    ``&``/``|`` of truth values evaluate one side only where Python does), whose integer result
    leaves [-limit, limit) while its operands are inside: the one a checked backend reports as an
    integer overflow; or, with ``error`` (an exception class), the first that raises it. None when
    there is none, or when the expression cannot be evaluated here."""
    def op(e, args):
        if isinstance(e, BinOp):
            a, b = args
            if e.op in ("**", "<<") and type(a) in (int, bool) and type(b) in (int, bool) \
                    and b > 128 and (abs(a) > 1 or e.op == "<<" and a):
                raise _Found(e)     # past 64 bits, and too large to compute
            return (BINOPS.get(e.op) or BITWISE[e.op])(a, b)
        if isinstance(e, UnOp):
            return -args[0]
        if isinstance(e, Compare):
            return COMPARES[e.op](*args)
        if isinstance(e, Not):
            return not args[0]
        return getattr(builtins, e.func)(*args)

    def ev(e):
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Var):
            return env[e.name]
        if isinstance(e, BoolOp):
            left = bool(ev(e.left))
            return (left and bool(ev(e.right))) if e.op == "and" else (left or bool(ev(e.right)))
        if isinstance(e, Select):
            return ev(e.then) if ev(e.cond) else ev(e.orelse)
        if isinstance(e, (BinOp, UnOp, Compare, Not, Call)):
            args = [ev(k) for k in e.children()]
            try:
                out = op(e, args)
            except _Found:
                raise
            except Exception as exc:  # noqa: BLE001 - Python's error of this operation
                if error is not None and isinstance(exc, error):
                    raise _Found(e) from None
                raise
            if type(out) is int and not -limit <= out < limit and error is None:
                raise _Found(e)
            return out
        raise LookupError(f"cannot evaluate {e!r}")

    try:
        ev(expr)
    except _Found as found:
        return found.node
    except Exception:  # noqa: BLE001 - an operand this environment does not hold, or Python's error
        return None
    return None


_SAMPLES = {"int": (1,), "bool": (True,), "float": (1.5,), "num": (1, 1.5), "str": ("x",)}
_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str"}


def python_types(expr: Expr, types: dict):
    """``(type, error)``: the static type of ``expr`` with strings kept (int, bool, float, num, str;
    None where unknown or mixed), and ``(operation, Python's message)`` for its first operation (in
    Python's order of evaluation) that raises TypeError for every value of its operands' static
    types (``a + "x"``, ``s < a`` with a string ``s``), else None. ``types``: the same type of each
    Var (a name it lacks may hold anything)."""
    found = []

    def kind(e):
        """The static type of ``e`` with strings kept (None: unknown or mixed)."""
        if isinstance(e, Const):
            return _TYPE_NAMES.get(type(e.value))
        if isinstance(e, Var):
            return types.get(e.name)
        if isinstance(e, (Compare, BoolOp, Not)):
            for k in e.children():
                kind(k)
            if isinstance(e, Compare):
                _try(e, COMPARES[e.op], e.left, e.right)
            return "bool"
        if isinstance(e, Select):
            kinds = [kind(k) for k in e.children()][1:]
            if kinds[0] == kinds[1]:
                return kinds[0]
            return "num" if all(k in NUMERIC_TYPES for k in kinds) else None
        if isinstance(e, BinOp):
            if e.op == "%" and kind(e.left) == "str":
                kind(e.right)
                return "str"            # string formatting: whether it fails depends on the text
            return _try(e, BINOPS.get(e.op) or BITWISE[e.op], e.left, e.right)
        if isinstance(e, UnOp):
            return _try(e, lambda x: -x, e.operand)
        if isinstance(e, Call):
            return _try(e, getattr(builtins, e.func), *e.args)
        return None

    def _try(e, fn, *operands):
        """The result type of ``fn`` over samples of the operands' types; an error recorded
        where every sample raises TypeError."""
        kinds = [kind(o) for o in operands]
        if found or any(k not in _SAMPLES for k in kinds):
            return None
        samples = [o.value if isinstance(o, Const) else _SAMPLES[k][0] for o, k in zip(operands, kinds)]
        numeric = all(k in NUMERIC_TYPES for k in kinds)
        try:
            out = fn(*samples)
        except TypeError as exc:
            if not numeric:
                found.append((e, str(exc)))
            return None
        except Exception:  # noqa: BLE001 - a value error of this sample only (a division by zero)
            return None
        if not numeric:
            return _TYPE_NAMES.get(type(out))
        if isinstance(e, BinOp):
            exponent = e.right.value if isinstance(e.right, Const) else None
            return binop_type(e.op, *kinds, exponent) or "num"
        if isinstance(e, UnOp):
            return "int" if kinds[0] == "bool" else kinds[0]
        return "int" if all(k in ("int", "bool") for k in kinds) else \
            "float" if all(k == "float" for k in kinds) else "num"

    out = kind(expr)
    return out, (found[0] if found else None)


NUMERIC_TYPES = ("int", "bool", "float", "num")


def binop_type(op: str, left: str, right: str, exponent=None) -> str | None:
    """The static type of ``left op right`` from the operands' static types; ``exponent`` is the
    right operand's value when it is a constant. The one rule of the loop nest, the lowering of
    function bodies and every printer (None when an operand is not a number)."""
    if left not in NUMERIC_TYPES or right not in NUMERIC_TYPES:
        return None
    if op == "/":
        return "float"
    if op in ("&", "|", "^"):
        return "bool" if left == right == "bool" else "int"
    if op in ("<<", ">>"):
        return "int"
    if "float" in (left, right):
        return "float"
    if op == "**":      # 2 ** -1 is a float: an int only for a constant exponent >= 0
        nonneg = type(exponent) in (int, bool) and exponent >= 0
        return "int" if nonneg and left in ("int", "bool") and right in ("int", "bool") else "num"
    return "num" if "num" in (left, right) else "int"


def static_type(expr: Expr, types: dict | None = None) -> str:
    """The static type of an expression: 'int', 'float', 'bool', 'str' or 'num' (int or float).

    ``types`` gives the types of Var names; iterator leaves are always 'int'."""
    types = types or {}
    if isinstance(expr, Const):
        v = expr.value
        return "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else \
            "float" if isinstance(v, float) else "str"
    if isinstance(expr, Var):
        return types.get(expr.name, "num")
    if isinstance(expr, (Compare, BoolOp, Not)):
        return "bool"
    if isinstance(expr, BinOp):
        left, right = static_type(expr.left, types), static_type(expr.right, types)
        exponent = expr.right.value if isinstance(expr.right, Const) else None
        return binop_type(expr.op, left, right, exponent) or "num"
    if isinstance(expr, UnOp):
        t = static_type(expr.operand, types)
        return "int" if t == "bool" else t
    if isinstance(expr, (Call, Select)):
        parts = [static_type(a, types) for a in (expr.args if isinstance(expr, Call) else
                                                  (expr.then, expr.orelse))]
        if all(p in ("int", "bool") for p in parts):
            return "int" if isinstance(expr, Call) or "int" in parts else "bool"
        if all(p == "float" for p in parts):
            return "float"
        if all(p == "str" for p in parts):
            return "str"
        return "num"
    leaf_type = getattr(expr, "static_type", None)
    return leaf_type() if leaf_type else "num"


# ---------------------------------------------------------------------------------------------
# Value sequences: what a loop runs over (the lowered form of an iterator's definition).


# -- spelling: an expression as the source the user wrote (for messages)

_BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv,
           "%": ast.Mod, "**": ast.Pow, "&": ast.BitAnd, "|": ast.BitOr, "^": ast.BitXor,
           "<<": ast.LShift, ">>": ast.RShift}
_COMPARES = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}
# module-level code writes `and`/`or`/`not` of iterator expressions as & | ~
_LOGICAL = {"and": ast.BitAnd, "or": ast.BitOr}


def user_names() -> dict:
    """id -> name of the expressions bound to module-level names in the user's frame (the first
    frame outside the beast package)."""
    f = user_frame()
    if f is None:
        return {}
    return {id(v): k for k, v in f.f_globals.items() if isinstance(v, Expr) and not k.startswith("_")}


def spell(expr, names: dict | None = None) -> str:
    """Python source of ``expr``; a node bound to a module-level name (``names``: id -> name, as
    :func:`user_names` gives) is spelled by that name."""
    return ast.unparse(_tree(expr, names or {}))


def _tree(e, names):
    name = names.get(id(e)) or getattr(e, "name", None) if isinstance(e, Expr) else None
    if isinstance(name, str):
        return ast.Name(name)
    sub = lambda x: _tree(x, names)  # noqa: E731
    if isinstance(e, Const) or not isinstance(e, Expr):
        return ast.Constant(e.value if isinstance(e, Const) else e)
    if isinstance(e, Var):
        return ast.Name(e.name)
    if isinstance(e, BinOp) and e.op in _BINOPS:
        return ast.BinOp(sub(e.left), _BINOPS[e.op](), sub(e.right))
    if isinstance(e, BoolOp):
        return ast.BinOp(sub(e.left), _LOGICAL[e.op](), sub(e.right))
    if isinstance(e, Compare):
        return ast.Compare(sub(e.left), [_COMPARES[e.op]()], [sub(e.right)])
    if isinstance(e, UnOp):
        return ast.UnaryOp(ast.USub() if e.op == "-" else ast.UAdd(), sub(e.operand))
    if isinstance(e, Not):
        return ast.UnaryOp(ast.Invert(), sub(e.operand))
    if isinstance(e, (Call, FuncCall)):
        return ast.Call(ast.Name(e.func), [sub(a) for a in e.args], [])
    if isinstance(e, Select):
        return ast.Call(ast.Name("select"), [sub(e.cond), sub(e.then), sub(e.orelse)], [])
    return ast.Name("<iterator>")   # an unnamed iterator (a nested range() or union())
