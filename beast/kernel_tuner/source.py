"""Kernel Tuner's ``tune_params`` and ``restrictions`` written as a beast space file.

Each parameter becomes an iterator: over its own values when they are all integers, otherwise
over the indices ``0..n-1`` of its values, with the values in a constant tuple
(``_kt_v_<name>``) that the conditions index. Each restriction becomes a ``@condition`` function
that returns ``not (<restriction>)`` (a restriction says what to keep, a condition what to
reject):

- a string is a Python expression over the parameter names (Kernel Tuner evaluates it so);
- a lambda or function is translated from its source: named parameters are bound by name (or by
  position, as Kernel Tuner calls them), ``p["name"]`` of a parameter-dict argument becomes the
  parameter; constants it reads from its module or closure are copied into the file;
- python-constraint objects (``MaxProdConstraint(1024)``, ``ExactSumConstraint(42)``, ...) become
  the sums, products and comparisons they stand for;
- Kernel Tuner's implicit ``block_size_x * block_size_y * block_size_z <= max_threads``.

What cannot be translated (no source, names of modules or functions, syntax beast does not
compile, values that are not literals) becomes a :class:`PythonCheck`, evaluated in Python on the
survivors of the rest. So does a restriction whose integers may not fit in 64 bits (beast's
integers are 64-bit, Kernel Tuner's are Python's): for a restriction that is one expression
(strings, lambdas, ``return <expression>`` functions, constraints), :func:`int_bounds` bounds every
integer it computes from the parameters' values; a function of several statements is not bounded,
and an overflow there is an error naming the restriction.

A parameter keeps its name in the file where that is an ordinary module-level name; keywords,
builtins and beast's vocabulary (``range``, ``min``), dunders (``__file__``: a space file's dunders
are not declarations), names that are not identifiers (``block-size``) and the file's own prefixes
become ``kt_param_<i>`` there. Rows, errors and ``to_kernel_tuner`` always use the user's names.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import keyword
import math
import numbers
import textwrap
from dataclasses import dataclass, field

import numpy as np

from ..errors import EvaluationError, SpaceError

DEFAULT_BLOCK_SIZE_NAMES = ("block_size_x", "block_size_y", "block_size_z")

# Builtins a translated restriction may call (beast's function-body vocabulary).
_CALLABLE_BUILTINS = {"min", "max", "abs", "int", "float", "bool", "round", "len", "sum", "all",
                      "any", "divmod", "range", "list", "sorted", "reversed", "enumerate", "zip"}
_SCALAR_TYPES = (bool, int, float, str, type(None))


@dataclass
class Param:
    """One tunable parameter: its user name, the identifier in the generated file, its values."""
    name: str
    ident: str
    values: list
    kind: str                  # "int": the iterator runs over the values; "index": over indices
    dtype: object              # the output column's dtype
    table: np.ndarray | None   # index -> value (kind "index")
    literal: bool              # every value can be written in the generated file

    @property
    def table_name(self) -> str:
        return f"_kt_v_{self.ident}"


@dataclass
class PythonCheck:
    """A restriction evaluated in Python on a configuration dict: True keeps it."""
    label: str
    func: object

    def __call__(self, config: dict) -> bool:
        try:
            return bool(self.func(config))
        except Exception as exc:  # noqa: BLE001 - the user's restriction failed: say which one
            raise EvaluationError(f"restriction {self.label} raised {type(exc).__name__}: {exc}",
                                  config=config) from None


@dataclass
class Generated:
    """The generated space file and what it stands for."""
    source: str
    params: list
    checks: list = field(default_factory=list)          # PythonCheck, in restriction order
    untranslated: list = field(default_factory=list)    # (label, reason)
    origins: list = field(default_factory=list)         # per line of source: what the user
                                                        # wrote ("restriction 'a < b'") or None


class _Untranslatable(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Parameters

def _literal(value) -> bool:
    """Whether ``repr(value)`` reads back as an equal value of the same type."""
    if isinstance(value, (tuple, list)):
        return all(_literal(v) for v in value)
    if not isinstance(value, _SCALAR_TYPES) or type(value) not in _SCALAR_TYPES:
        return False
    try:
        back = ast.literal_eval(repr(value))
    except (ValueError, SyntaxError):
        return False
    return type(back) is type(value) and (back == value or value != value)


def _dedupe(values):
    out, seen = [], set()
    for v in values:
        try:
            k = (type(v), v)
            if k in seen:
                continue
            seen.add(k)
        except TypeError:
            pass
        out.append(v)
    return out


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) \
        and -(1 << 62) <= int(v) < (1 << 62)


def _is_float(v) -> bool:
    return isinstance(v, (float, np.floating))


_RESERVED = set(dir(builtins)) | set(keyword.kwlist) | {"condition", "iterator", "setting",
                                                        "device", "select", "union", "intersection",
                                                        "difference"}
_GENERATED_PREFIXES = ("_kt_", "_b_", "kt_restriction", "kt_param_")


def _ident(name: str, i: int, taken: set) -> str:
    """The identifier of the ``i``-th parameter, ``name``, in the generated file: the name itself
    where it is an ordinary module-level name there, else ``kt_param_<i>``: keywords, builtins and
    beast's vocabulary, dunders (a space file's dunders are not declarations), non-identifiers
    (``block-size``) and the file's own prefixes."""
    plain = name.isidentifier() and name not in _RESERVED and not name.startswith("__") \
        and not name.startswith(_GENERATED_PREFIXES)
    ident = name if plain else f"kt_param_{i}"
    while ident in taken:
        ident = f"kt_param_{i}_{len(taken)}"
    taken.add(ident)
    return ident


def make_params(tune_params) -> list:
    """The :class:`Param` of each entry of ``tune_params``, in order."""
    if not isinstance(tune_params, dict) or not tune_params:
        raise SpaceError("tune_params must be a non-empty dict: parameter name -> list of values")
    params, taken = [], set()
    for i, (name, values) in enumerate(tune_params.items()):
        if not isinstance(name, str) or not name:
            raise SpaceError(f"tune_params has a parameter named {name!r}: parameter names are "
                             "non-empty strings (they name the columns of the rows)")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise SpaceError(f"tune_params[{name!r}] must be a list of values, got {values!r}")
        # NumPy scalars become the Python values they stand for (equal, and writable as literals)
        values = _dedupe([v.item() if isinstance(v, np.generic) else v for v in values])
        ident = _ident(name, i, taken)
        if all(_is_int(v) for v in values):
            values = [int(v) for v in values]
            params.append(Param(name, ident, values, "int", np.int64, None, True))
            continue
        if values and all(_is_float(v) for v in values):
            dtype = np.float64
            table = np.array(values, dtype=np.float64)
        else:
            dtype = object
            table = np.empty(len(values), dtype=object)
            for j, v in enumerate(values):
                table[j] = v
        params.append(Param(name, ident, values, "index", dtype, table,
                            all(_literal(v) for v in values)))
    return params


# ---------------------------------------------------------------------------------------------
# Restrictions: normalise every form Kernel Tuner accepts

@dataclass
class _Restriction:
    label: str
    kind: str                   # "expr" | "func" | "constraint"
    obj: object                 # the string, the callable, or the Constraint
    names: list | None = None   # tuple form / Constraint variables: the parameters, positionally
    dict_style: bool = False    # a function of the parameter dict


def _is_constraint(obj) -> bool:
    return any(c.__module__.split(".")[0] == "constraint" and c.__name__ == "Constraint"
               for c in type(obj).__mro__)


def _label(obj) -> str:
    if isinstance(obj, str):
        return repr(obj)
    name = getattr(obj, "__qualname__", None) or type(obj).__name__
    return f"<{name}>"


def normalise_restrictions(restrictions, names) -> list:
    if restrictions is None:
        return []
    if not isinstance(restrictions, (list, tuple)):
        restrictions = [restrictions]
    restrictions = list(restrictions)
    out = []
    for r in restrictions:
        if isinstance(r, str):
            out.append(_Restriction(repr(r), "expr", r))
        elif isinstance(r, tuple) and len(r) in (2, 3) and isinstance(r[1], (list, tuple)):
            func, selected = r[0], list(r[1])
            unknown = [n for n in selected if n not in names]
            if unknown:
                raise SpaceError(f"restriction {_label(func)} names {unknown}, which are not tunable "
                                 "parameters")
            kind = "constraint" if _is_constraint(func) else "func"
            if kind == "func" and not callable(func):
                raise SpaceError(f"unsupported restriction {r!r}")
            if kind == "constraint" and type(func).__name__ == "FunctionConstraint":
                func, kind = func._func, "func"
            out.append(_Restriction(_label(func), kind, func, selected))
        elif _is_constraint(r):
            if type(r).__name__ == "FunctionConstraint":
                out.append(_Restriction(_label(r._func), "func", r._func, list(names)))
            else:
                out.append(_Restriction(_label(r), "constraint", r, list(names)))
        elif callable(r):
            out.append(_Restriction(_label(r), "func", r))
        else:
            raise SpaceError(f"unsupported restriction {r!r} (of type {type(r).__name__})",
                             hint="restrictions are strings, functions, (function, [names]) tuples "
                                  "or python-constraint Constraint objects")
    for r in out:
        if r.kind == "func" and r.names is None:
            r.names, r.dict_style = _bind(r.obj, names)
    return out


def _bind(func, names):
    """How Kernel Tuner passes a configuration to a function: by the parameter dict (one argument
    that is not a parameter name), else by name, else positionally over all parameters."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None, True
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) == 1 and params[0].name not in names and len(names) >= 1:
        return None, True
    if params and all(p.name in names for p in params):
        return [p.name for p in params], False
    if len(params) == len(names):
        return list(names), False
    raise SpaceError(f"restriction {_label(func)} takes parameters {[p.name for p in params]}; "
                     f"Kernel Tuner calls it with all {len(names)} tunable parameters",
                     hint="name its parameters after tunable parameters, or take the parameter dict")


# ---------------------------------------------------------------------------------------------
# Restrictions: translate to condition functions

class _Rewriter(ast.NodeTransformer):
    """Rewrite a restriction body over the generated file's names."""

    def __init__(self, bound, params_by_name, dict_arg, free_param_names, constants_env):
        self.bound = bound                      # local name -> parameter name
        self.params = params_by_name
        self.dict_arg = dict_arg
        self.free_param_names = free_param_names   # strings: free names are parameters
        self.env = constants_env                # free name -> value (functions' globals/closure)
        self.locals = set()
        self.used = []                          # parameter names read
        self.constants = {}                     # name -> value to write in the file

    def _param(self, pname, node):
        p = self.params[pname]
        if pname not in self.used:
            self.used.append(pname)
        if p.kind == "int":
            return ast.copy_location(ast.Name(p.ident, ast.Load()), node)
        if not p.literal:
            raise _Untranslatable(f"the values of '{pname}' cannot be written as literals")
        return ast.copy_location(ast.Subscript(ast.Name(p.table_name, ast.Load()),
                                               ast.Name(p.ident, ast.Load()), ast.Load()), node)

    def visit_Subscript(self, node):
        if self.dict_arg and isinstance(node.value, ast.Name) and node.value.id == self.dict_arg:
            key = node.slice
            if isinstance(key, ast.Constant) and key.value in self.params:
                if not isinstance(node.ctx, ast.Load):
                    raise _Untranslatable(f"it assigns to {self.dict_arg}[{key.value!r}]")
                return self._param(key.value, node)
            raise _Untranslatable(f"it reads {ast.unparse(node)}")
        return self.generic_visit(node)

    def visit_Name(self, node):
        name = node.id
        if name == self.dict_arg:
            raise _Untranslatable(f"it uses the parameter dict '{name}' other than as {name}['...']")
        if name in self.bound:
            if not isinstance(node.ctx, ast.Load):
                raise _Untranslatable(f"it assigns to the parameter '{name}'")
            return self._param(self.bound[name], node)
        if name in self.locals:
            return node
        if self.free_param_names and name in self.params:
            return self._param(name, node)
        if name in self.env:
            value = self.env[name]
            if name in _CALLABLE_BUILTINS and value is getattr(builtins, name, None):
                return node
            if not _literal(value):
                raise _Untranslatable(f"it reads '{name}', which is not a constant number, string "
                                      "or tuple")
            if name.startswith(("_kt_", "_b_", "kt_")) or any(p.ident == name
                                                               for p in self.params.values()):
                raise _Untranslatable(f"its constant '{name}' clashes with a generated name")
            self.constants[name] = value
            return node
        if name in _CALLABLE_BUILTINS or name in ("True", "False", "None"):
            return node
        if hasattr(builtins, name):
            raise _Untranslatable(f"it calls '{name}'")
        raise _Untranslatable(f"'{name}' is neither a tunable parameter nor a constant")


def _negate_returns(body: list) -> list:
    """A restriction returns what to keep; a condition what to reject."""

    class Neg(ast.NodeTransformer):
        def visit_Return(self, node):
            value = ast.Constant(True) if node.value is None else \
                ast.UnaryOp(ast.Not(), node.value)
            return ast.copy_location(ast.Return(value), node)

        def visit_FunctionDef(self, node):   # nested defs are rejected later; leave them alone
            return node

        visit_Lambda = visit_AsyncFunctionDef = visit_FunctionDef

    body = [Neg().visit(stmt) for stmt in body]
    if not body or not isinstance(body[-1], ast.Return):
        body.append(ast.Return(ast.Constant(True)))   # falling off the end returns None: rejected
    return body


def _all_different(text, params_by_name):
    """python-constraint reads ``a != b != c`` over *all* parameters as all-different."""
    if " and " in text or " or " in text or "==" in text or "!=" not in text:
        return None
    parts = [s.strip() for s in text.split("!=")]
    if len(parts) != len(params_by_name) or sorted(parts) != sorted(params_by_name):
        return None
    pairs = [f"({a} != {b})" for i, a in enumerate(parts) for b in parts[i + 1:]]
    return " and ".join(pairs)


def _string_body(text, params_by_name):
    text = text.strip()
    text = _all_different(text, params_by_name) or text
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        try:
            tree = ast.parse(f"({text})", mode="eval")
        except SyntaxError as exc:
            raise SpaceError(f"restriction {text!r} is not a Python expression: {exc.msg}") from None
    return [ast.Return(tree.body)]


def _function_source(func):
    """The FunctionDef or Lambda node of ``func``, or raise _Untranslatable."""
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        raise _Untranslatable("its source is not available") from None
    tree = None
    for attempt in (source, source.strip().rstrip(",")):
        try:
            tree = ast.parse(attempt)
            break
        except SyntaxError:
            continue
    if tree is None:
        raise _Untranslatable("its source does not parse on its own")
    code = func.__code__
    if func.__name__ != "<lambda>":
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == func.__name__:
                return node
        raise _Untranslatable("its definition was not found in its source")
    arg_names = list(code.co_varnames[:code.co_argcount])
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                  and [a.arg for a in n.args.args] == arg_names]
    if len(candidates) > 1:
        same = []
        for cand in candidates:
            try:
                compiled = compile(ast.Expression(cand), "<lambda>", "eval")
            except SyntaxError:
                continue
            inner = [c for c in compiled.co_consts if inspect.iscode(c)]
            if inner and inner[0].co_code == code.co_code and inner[0].co_names == code.co_names:
                same.append(cand)
        candidates = same
    if len(candidates) != 1:
        raise _Untranslatable("its lambda cannot be told apart from the others on its line")
    return candidates[0]


def _function_env(func) -> dict:
    try:
        cv = inspect.getclosurevars(func)
    except (TypeError, ValueError):
        return {}
    env = dict(cv.globals)
    env.update(cv.nonlocals)
    env.update({k: v for k, v in cv.builtins.items() if k not in env})
    return env


def _check_translatable(fdef, filename="<kernel_tuner>"):
    from ..frontend.functions import check_body
    try:
        check_body(fdef, filename)
    except SpaceError as err:
        raise _Untranslatable(err.message.replace("in a beast function", "").strip()) from None


# ---------------------------------------------------------------------------------------------
# 64-bit integers: beast's limit, not Kernel Tuner's

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_NO_INT = ()        # a value that is never an integer (a float, a string)


def _check_64_bits(body, params, constants, local_names):
    """Raise _Untranslatable when a restriction that is one expression (a docstring aside) may
    compute an integer beyond 64 bits for some values of its parameters (see :func:`int_bounds`):
    Kernel Tuner computes it with Python's integers, so it is evaluated in Python."""
    stmts = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(stmts) != 1 or not isinstance(stmts[0], ast.Return) or stmts[0].value is None:
        return
    leaves = {}
    for p in params:
        ints = [int(v) for v in p.values if isinstance(v, int)]     # bools count as 0 and 1
        bounds = (min(ints), max(ints)) if ints else _NO_INT
        leaves[p.ident if p.kind == "int" else p.table_name] = bounds
    for name, value in constants.items():
        if isinstance(value, int):
            leaves[name] = (int(value), int(value))
    for name in local_names:
        leaves.pop(name, None)
    int_bounds(stmts[0].value, leaves)


def _hull(bounds):
    """The bounds of a value that is one of values with these bounds."""
    if any(b is None for b in bounds):
        return None
    ints = [b for b in bounds if b != _NO_INT]
    return (min(b[0] for b in ints), max(b[1] for b in ints)) if ints else _NO_INT


def int_bounds(node, leaves):
    """``(lo, hi)`` bounding the integers the expression ``node`` (over the generated file's names)
    can compute, ``()`` when it never computes one, None when unknown; ``leaves`` gives the bounds
    of names (a parameter's identifier or value table, an integer constant). Every subexpression is
    bounded, and one that may leave 64 bits raises _Untranslatable."""
    children = []
    for child in ast.iter_child_nodes(node):
        bounds = int_bounds(child, leaves)
        if isinstance(child, ast.expr):
            children.append(bounds)
    out = _combine(node, children, leaves) if isinstance(node, ast.expr) else None
    if out and (out[0] < _INT64_MIN or out[1] > _INT64_MAX):
        raise _Untranslatable("its integers may not fit in 64 bits: beast's integers are 64-bit, "
                              "Kernel Tuner's are Python's")
    return out


def _combine(node, children, leaves):
    """The bounds of the expression ``node`` from its children's (see :func:`int_bounds`)."""
    if isinstance(node, ast.Constant):
        return (int(node.value),) * 2 if isinstance(node.value, int) else _NO_INT
    if isinstance(node, ast.Name):
        return leaves.get(node.id)
    if isinstance(node, ast.Subscript):     # a value table indexed by its parameter's index
        return leaves.get(node.value.id) if isinstance(node.value, ast.Name) else None
    if isinstance(node, ast.Compare) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return (0, 1)
    if isinstance(node, ast.BoolOp):        # the value of one of the operands
        return _hull(children)
    if isinstance(node, ast.IfExp):
        return _hull(children[1:])
    if isinstance(node, ast.UnaryOp):
        if not children[0]:
            return children[0]
        lo, hi = children[0]
        return {ast.USub: (-hi, -lo), ast.UAdd: (lo, hi), ast.Invert: (-hi - 1, -lo - 1)}[type(node.op)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = children[1:]                 # (children[0] is the function's name)
        if node.func.id in ("min", "max") and len(args) >= 2:
            return _hull(args)
        if node.func.id == "abs" and len(args) == 1 and args[0]:
            return (0, max(abs(args[0][0]), abs(args[0][1])))
        return {"bool": (0, 1), "float": _NO_INT}.get(node.func.id)
    if isinstance(node, ast.BinOp):
        return _binop(node.op, *children)
    return None


def _binop(op, left, right):
    """The bounds of ``left <op> right`` (see :func:`int_bounds`)."""
    if left is None or right is None:
        return None
    if left == _NO_INT or right == _NO_INT or isinstance(op, ast.Div):
        return _NO_INT                      # float arithmetic (or str * int)
    (a, b), (c, d) = left, right
    big = max(abs(a), abs(b))
    if isinstance(op, ast.Add):
        return (a + c, b + d)
    if isinstance(op, ast.Sub):
        return (a - d, b - c)
    if isinstance(op, ast.Mult):
        corners = (a * c, a * d, b * c, b * d)
        return (min(corners), max(corners))
    if isinstance(op, ast.FloorDiv):       # |x // y| <= |x| for a divisor that is not 0
        return (-big, big)
    if isinstance(op, ast.Mod):            # |x % y| < |y|
        return (-max(abs(c), abs(d)), max(abs(c), abs(d)))
    if isinstance(op, ast.Pow):
        if d < 0:
            return _NO_INT                              # a float
        if big <= 1:
            return (-1, 1)
        if d > 64:
            return (-(1 << 64), 1 << 64)                # bounded without computing big ** d
        return (-big ** d, big ** d)
    if isinstance(op, ast.LShift):
        return (-(1 << 64), 1 << 64) if d > 64 else (-(big << max(d, 0)), big << max(d, 0))
    if isinstance(op, (ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)):
        top = 1 << max(big, abs(c), abs(d)).bit_length()
        return (-top, top)
    return None


def translate(r: _Restriction, params_by_name: dict, name: str):
    """(function source text, constants) of the condition for ``r``; raise _Untranslatable."""
    if r.kind == "expr":
        body = _string_body(r.obj, params_by_name)
        rw = _Rewriter({}, params_by_name, None, True, {})
        args_locals = set()
    elif r.kind == "constraint":
        body = [ast.Return(_constraint_expr(r.obj, r.names))]
        rw = _Rewriter({}, params_by_name, None, True, {})
        args_locals = set()
    else:
        node = _function_source(r.obj)
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise _Untranslatable("it takes *args, **kwargs or keyword-only parameters")
        arg_names = [a.arg for a in args.args]
        body = [ast.Return(node.body)] if isinstance(node, ast.Lambda) else list(node.body)
        env = _function_env(r.obj)
        if r.dict_style:
            if len(arg_names) != 1:
                raise _Untranslatable("it does not take exactly one argument")
            rw = _Rewriter({}, params_by_name, arg_names[0], False, env)
        else:
            if len(arg_names) != len(r.names):
                raise _Untranslatable("its parameters do not match")
            rw = _Rewriter(dict(zip(arg_names, r.names)), params_by_name, None, False, env)
        args_locals = set(arg_names)
    from ..frontend.functions import local_names
    probe = _fdef("probe", [], body, [])
    rw.locals = local_names(probe) - args_locals
    body = [rw.visit(stmt) for stmt in body]
    _check_64_bits(body, params_by_name.values(), rw.constants, rw.locals)
    body = _negate_returns(body)
    used = [p for p in params_by_name if p in rw.used]     # tune_params order
    fdef = _fdef(name, [params_by_name[p].ident for p in used], body,
                 [ast.Name("_kt_condition", ast.Load())])
    _check_translatable(fdef)
    return ast.unparse(fdef), rw.constants


def _fdef(name, arg_names, body, decorators):
    args = ast.arguments(posonlyargs=[], args=[ast.arg(a) for a in arg_names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    fdef = ast.FunctionDef(name=name, args=args, body=body, decorator_list=decorators, returns=None)
    if "type_params" in ast.FunctionDef._fields:
        fdef.type_params = []
    return ast.fix_missing_locations(fdef)


def _constraint_expr(c, names):
    """The python-constraint object ``c`` over ``names`` as an expression AST."""
    cls = type(c).__name__
    vars_ = [ast.Name(n, ast.Load()) for n in names]

    def sum_expr():
        mult = getattr(c, "_multipliers", None)
        terms = vars_ if not mult else [ast.BinOp(ast.Constant(m), ast.Mult(), v)
                                        for m, v in zip(mult, vars_)]
        out = terms[0]
        for t in terms[1:]:
            out = ast.BinOp(out, ast.Add(), t)
        return out

    def prod_expr():
        out = vars_[0]
        for v in vars_[1:]:
            out = ast.BinOp(out, ast.Mult(), v)
        return out

    def cmp(left, op, value):
        if not _literal(value):
            raise _Untranslatable(f"its bound {value!r} is not a literal")
        return ast.Compare(left, [op], [ast.Constant(value)])

    if not vars_:
        raise _Untranslatable("it constrains no parameters")
    table = {"ExactSumConstraint": (sum_expr, ast.Eq, "_exactsum"),
             "MinSumConstraint": (sum_expr, ast.GtE, "_minsum"),
             "MaxSumConstraint": (sum_expr, ast.LtE, "_maxsum"),
             "ExactProdConstraint": (prod_expr, ast.Eq, "_exactprod"),
             "MinProdConstraint": (prod_expr, ast.GtE, "_minprod"),
             "MaxProdConstraint": (prod_expr, ast.LtE, "_maxprod")}
    if cls in table:
        make, op, attr = table[cls]
        return cmp(make(), op(), getattr(c, attr))
    if cls in ("AllDifferentConstraint", "AllEqualConstraint"):
        op = ast.NotEq if cls == "AllDifferentConstraint" else ast.Eq
        pairs = [ast.Compare(a, [op()], [b]) for i, a in enumerate(vars_) for b in vars_[i + 1:]]
        if not pairs:
            return ast.Constant(True)
        return pairs[0] if len(pairs) == 1 else ast.BoolOp(ast.And(), pairs)
    if cls in ("InSetConstraint", "NotInSetConstraint"):
        values = tuple(sorted(c._set, key=repr))
        if not _literal(values):
            raise _Untranslatable("its set is not made of literals")
        op = ast.In if cls == "InSetConstraint" else ast.NotIn
        tests = [ast.Compare(v, [op()], [ast.Constant(values)]) for v in vars_]
        return tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)
    raise _Untranslatable(f"beast does not translate {cls}")


# ---------------------------------------------------------------------------------------------
# Python fallbacks

def python_check(r: _Restriction, names) -> PythonCheck:
    """``r`` evaluated in Python: a string or a constraint as the expression it stands for (with
    Python's integers), a function called as Kernel Tuner calls it."""
    expr = None
    if r.kind == "expr":
        expr = _string_body(r.obj.strip(), dict.fromkeys(names))[0].value
    elif r.kind == "constraint":
        with contextlib.suppress(_Untranslatable):
            expr = _constraint_expr(r.obj, r.names)
    if expr is not None:
        code = compile(ast.fix_missing_locations(ast.Expression(expr)), "<restriction>", "eval")
        return PythonCheck(r.label, lambda cfg: eval(code, {"__builtins__": builtins}, dict(cfg)))
    if r.kind == "constraint":
        c, selected = r.obj, r.names

        def check(cfg):
            from kernel_tuner.util import check_restriction
            return check_restriction((c, selected), dict(cfg))
        return PythonCheck(r.label, check)
    func = r.obj
    if r.dict_style:
        return PythonCheck(r.label, lambda cfg: func(dict(cfg)))
    selected = r.names
    return PythonCheck(r.label, lambda cfg: func(*[cfg[n] for n in selected]))


# ---------------------------------------------------------------------------------------------
# The file

def generate_source(tune_params, restrictions, max_threads, block_size_names) -> Generated:
    """The beast space file for a Kernel Tuner space, and what stays in Python."""
    params = make_params(tune_params)
    by_name = {p.name: p for p in params}
    names = list(by_name)
    bound = _max_threads_text(max_threads)
    rules = normalise_restrictions(restrictions, names)
    block_names = list(DEFAULT_BLOCK_SIZE_NAMES if block_size_names is None else block_size_names)
    block = [n for n in block_names if n in by_name]
    if block:
        rules.append(_Restriction(f"'{' * '.join(block)} <= {max_threads}' (max_threads)", "expr",
                                  f"{' * '.join(block)} <= {bound}"))
    # a string's names must be parameters: a string is evaluated over the parameters only
    lines = ["# Generated by beast.from_kernel_tuner from Kernel Tuner tune_params/restrictions.",
             "from beast import condition as _kt_condition, iterator as _kt_iterator, "
             "range as _kt_range", ""]
    origins = [None] * len(lines)       # what the user wrote that each line stands for
    for p in params:
        origin = f"tune_params[{p.name!r}]"
        if p.kind == "int":
            lines.append(f"{p.ident} = _kt_iterator({p.values!r})")
        else:
            if p.literal:
                lines.append(f"{p.table_name} = ({''.join(repr(v) + ', ' for v in p.values)})")
                origins.append(origin)
            lines.append(f"{p.ident} = _kt_range(0, {len(p.values)})   # indices of {p.name!r}")
        origins.append(origin)
    out = Generated("", params)
    constants = {}
    for i, r in enumerate(rules):
        if r.kind == "expr":
            _check_string_names(r.obj, by_name)
        cname = f"kt_restriction_{i}"
        try:
            text, consts = translate(r, by_name, cname)
            for k, v in consts.items():
                if k in constants and (constants[k] != v or type(constants[k]) is not type(v)):
                    raise _Untranslatable(f"its constant '{k}' differs from another restriction's")
        except _Untranslatable as why:
            out.checks.append(python_check(r, names))
            out.untranslated.append((r.label, str(why)))
            continue
        constants.update(consts)
        text = ["", f"# restriction {i}: {r.label}"[:200]] + text.split("\n")
        lines += text
        origins += [f"restriction {r.label}"] * len(text)
    const_lines = [f"{k} = {v!r}" for k, v in constants.items()]
    if const_lines:
        lines[3:3] = const_lines + [""]
        origins[3:3] = [None] * (len(const_lines) + 1)
    out.source = "\n".join(lines) + "\n"
    out.origins = origins
    return out


def _max_threads_text(max_threads) -> str:
    """``max_threads`` (the bound on the product of the block sizes) as the generated file writes
    it; a clear error for what is not a number."""
    if isinstance(max_threads, np.generic):
        max_threads = max_threads.item()
    if isinstance(max_threads, bool) or not isinstance(max_threads, (int, float)) \
            or max_threads != max_threads:
        raise SpaceError(f"max_threads must be a number, not {max_threads!r}",
                         hint="the largest number of threads in a block: the product of the "
                              "block_size_names parameters may not exceed it (max_threads=1024)")
    if isinstance(max_threads, float) and math.isinf(max_threads):
        return "1e999" if max_threads > 0 else "-1e999"     # (the literal reads back as inf)
    return repr(max_threads)


def _check_string_names(text, by_name):
    """A string restriction reads parameters and builtins; anything else is an error as in
    Kernel Tuner (where it raises NameError)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return   # reported by the translation
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            bound |= {t.id for t in ast.walk(node.target) if isinstance(t, ast.Name)}
        if isinstance(node, ast.Lambda):
            bound |= {a.arg for a in node.args.args}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in by_name and node.id not in bound \
                and not hasattr(builtins, node.id):
            raise SpaceError(f"restriction {text!r} reads '{node.id}', which is not a tunable "
                             "parameter", hint=f"tunable parameters: {', '.join(by_name)}")
