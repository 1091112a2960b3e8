"""The bodies of @iterator and @condition functions: find their AST, check the supported syntax,
and resolve parameters and free names to nodes (dependencies) or constants."""
from __future__ import annotations

import ast
import builtins
from ..ir.record import field, record

from ..errors import SpaceError

# What a function body may contain: the subset that every backend translates (or tabulates).
_ALLOWED_STMTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.If, ast.While, ast.For, ast.Break,
                  ast.Continue, ast.Return, ast.Expr, ast.Pass)
_REJECTED_EXPRS = {ast.Lambda: "lambda", ast.Await: "await", ast.NamedExpr: "':=' assignment",
                   ast.YieldFrom: "'yield from'", ast.Starred: "'*' unpacking",
                   ast.JoinedStr: "f-string", ast.Dict: "dict", ast.Set: "set",
                   ast.DictComp: "dict comprehension", ast.SetComp: "set comprehension"}
_STMT_NAMES = {ast.Import: "import", ast.ImportFrom: "import", ast.Global: "global",
               ast.Nonlocal: "nonlocal", ast.Try: "try", ast.With: "with", ast.Raise: "raise",
               ast.Delete: "del", ast.Assert: "assert", ast.ClassDef: "class",
               ast.FunctionDef: "nested def", ast.AsyncFunctionDef: "async def",
               ast.AsyncFor: "async for", ast.AsyncWith: "async with"}

# Names of beast's vocabulary that mean the builtin inside a function body.
VOCABULARY = ("range", "min", "max", "abs", "select", "iterator", "union", "intersection",
              "difference", "len", "all", "any", "list", "int", "bool", "float", "sum", "sorted",
              "reversed", "enumerate", "zip", "True", "False", "None", "divmod", "round")


@record
class FuncInfo:
    """A user function after analysis: how to call it from a loop nest."""
    name: str                 # the user's name
    ident: str                # the generated, clash-free name
    role: str                 # "iterator" or "condition"
    closure: bool             # a generator (closure iterator)
    pyfunc: object
    fdef: ast.FunctionDef
    filename: str
    params: list              # the user's parameter names
    node_args: list           # node names passed in, in order: node parameters, then free node names
    constants: dict = field(default_factory=dict)   # constant names it reads -> values


def is_vocabulary(value) -> bool:
    """True for beast's own functions (range, min, ...) and Python's builtins."""
    if value is None:
        return False
    if not callable(value) or not isinstance(value, (type(len), type(is_vocabulary))):
        return value is True or value is False
    module = getattr(value, "__module__", None)
    return module in ("beast.lang", "builtins")


_INDEX: list = [None]      # (the last tree indexed, its index)


def tree_index(tree: ast.Module) -> dict:
    """The tree's FunctionDefs by name and its assignments (``"="``), each in ``ast.walk``
    order; computed once per tree (a space's model looks up every function and binding in the
    same tree, and a walk per look-up was most of ``beast.load`` on a 15-parameter space)."""
    last = _INDEX[0]
    if last is not None and last[0] is tree:
        return last[1]
    funcs, assigns = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            funcs.setdefault(node.name, []).append(node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            assigns.append(node)
    index = {"def": funcs, "=": assigns}
    _INDEX[0] = (tree, index)       # one tuple: a thread never sees one tree with another's index
    return index


def find_function_def(tree: ast.Module, func) -> ast.FunctionDef | None:
    """The module-level (possibly inside if/else) FunctionDef that defined ``func``."""
    first = func.__code__.co_firstlineno
    for node in tree_index(tree)["def"].get(func.__name__, ()):
        starts = [node.lineno] + [d.lineno for d in node.decorator_list]
        if first in starts:
            return node
    return None


def check_body(fdef: ast.FunctionDef, filename: str):
    """Reject syntax that a backend cannot translate, at its line with a caret."""
    args = fdef.args
    for bad, what in ((args.vararg, "*args"), (args.kwarg, "**kwargs")):
        if bad is not None:
            raise SpaceError.at(bad, filename, f"unsupported syntax in a beast function: {what}",
                                hint="parameters name iterators, derived variables, settings or constants")
    if args.kwonlyargs or args.posonlyargs or args.defaults:
        node = (args.kwonlyargs or args.posonlyargs or args.defaults)[0]
        raise SpaceError.at(node, filename, "unsupported syntax in a beast function: "
                            "defaults, keyword-only or positional-only parameters",
                            hint="parameters name iterators, derived variables, settings or constants")
    for stmt in ast.walk(ast.Module(body=fdef.body, type_ignores=[])):
        if isinstance(stmt, ast.stmt) and not isinstance(stmt, _ALLOWED_STMTS):
            what = _STMT_NAMES.get(type(stmt), type(stmt).__name__)
            raise SpaceError.at(stmt, filename, f"unsupported syntax in a beast function: '{what}'",
                                hint="function bodies may use assignments, if/elif/else, while, for, "
                                     "break, continue, return and yield")
        if isinstance(stmt, (ast.For, ast.While)) and stmt.orelse:
            raise SpaceError.at(stmt, filename, "unsupported syntax in a beast function: "
                                "'else' on a loop", hint="use a flag variable")
        for kind, what in _REJECTED_EXPRS.items():
            if isinstance(stmt, kind):
                raise SpaceError.at(stmt, filename, f"unsupported syntax in a beast function: {what}")
        if isinstance(stmt, ast.UnaryOp) and isinstance(stmt.op, ast.Invert) and _is_truth(stmt.operand):
            raise SpaceError.at(stmt, filename, "'~' of a truth value in a function body is Python's bitwise "
                                "not: ~True is -2 and ~False is -1, and both are true",
                                hint=f"use not: not {_operand_text(stmt.operand)} "
                                     "(at module level, ~ is beast's logical not)")


def _is_truth(node) -> bool:
    """Whether ``node`` is a truth value by its syntax: a comparison, and/or/not, True or False."""
    return isinstance(node, (ast.Compare, ast.BoolOp)) or \
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) or \
        isinstance(node, ast.Constant) and isinstance(node.value, bool)


def _operand_text(node) -> str:
    """The source of ``node`` to write after ``not``, in parentheses unless it is a constant."""
    text = ast.unparse(node)
    return text if isinstance(node, ast.Constant) else f"({text})"


def local_names(fdef: ast.FunctionDef) -> set:
    """Parameters and every name the body binds (Python makes them local for the whole body)."""
    names = {a.arg for a in fdef.args.args}
    for node in ast.walk(ast.Module(body=fdef.body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.comprehension):
            for t in ast.walk(node.target):
                if isinstance(t, ast.Name):
                    names.add(t.id)
    return names


def free_names(fdef: ast.FunctionDef) -> list:
    """(name, ast.Name) for every name the body reads but does not bind, in order of appearance."""
    bound = local_names(fdef)
    seen, out = set(), []
    for node in ast.walk(ast.Module(body=fdef.body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            if node.id not in seen:
                seen.add(node.id)
                out.append((node.id, node))
    return sorted(out, key=lambda item: (item[1].lineno, item[1].col_offset))


def analyze_function(func, role: str, ident: str, tree, filename, nodes: set, namespace: dict) -> FuncInfo:
    """Resolve a user function's parameters and free names against the space's nodes and constants."""
    import inspect
    fdef = find_function_def(tree, func)
    if fdef is None:
        raise SpaceError(f"cannot find the source of function '{func.__name__}'", filename,
                         func.__code__.co_firstlineno,
                         hint="@iterator and @condition functions must be defined in the space file")
    check_body(fdef, filename)
    info = FuncInfo(func.__name__, ident, role, inspect.isgeneratorfunction(func), func, fdef,
                    filename, [a.arg for a in fdef.args.args], [])
    for arg in fdef.args.args:
        name = arg.arg
        _not_a_condition(name, arg, func, namespace, filename)
        if name in nodes:
            info.node_args.append(name)
        elif name in namespace and not name.startswith("__") and not is_vocabulary(namespace[name]):
            info.constants[name] = namespace[name]
        else:
            raise SpaceError.at(arg, filename, f"parameter '{name}' of '{func.__name__}' names no "
                                "iterator, derived variable, setting or constant",
                                hint="parameters are bound by name to the space's module-level names")
    for name, use in free_names(fdef):
        if is_vocabulary(namespace.get(name, getattr(builtins, name, None))):
            continue
        _not_a_condition(name, use, func, namespace, filename)
        if name in nodes:
            if name not in info.node_args:
                info.node_args.append(name)
        elif name in namespace and not name.startswith("__"):
            info.constants[name] = namespace[name]
        elif name in VOCABULARY or hasattr(builtins, name):
            continue
        else:
            raise SpaceError.at(use, filename, f"undefined name '{name}'")
    _check_device_reads(fdef, info.constants, filename)
    return info


def _not_a_condition(name, where, func, namespace, filename):
    """A function cannot read a condition: it has no value at a configuration that survives."""
    from ..lang import Condition
    if isinstance(namespace.get(name), Condition):
        raise SpaceError.at(where, filename, f"'{func.__name__}' reads '{name}', which is a condition: "
                            "functions read iterators, derived variables, settings and constants",
                            hint=f"a condition prunes, it has no value: name its test as a derived variable "
                                 f"({name}_test = ...), read that, and write {name} = condition({name}_test)")


def _check_device_reads(fdef, constants, filename):
    """A device attribute the body reads that the device does not have (``dev.multiprocessor_count``)
    is an error at its caret now, not an AttributeError when the function first runs."""
    for node in ast.walk(fdef):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and type(constants.get(node.value.id)).__name__ == "DeviceProfile" \
                and not hasattr(constants[node.value.id], node.attr):
            from ..devices import unknown_attribute
            message, hint = unknown_attribute(node.attr)
            raise SpaceError.at(node, filename, message, hint=hint)
