"""The bodies of @iterator and @condition functions: find their AST, check the supported syntax,
and resolve parameters and free names to nodes (dependencies) or constants."""
from __future__ import annotations

import ast
import builtins
from ..ir.record import field, record

from ..errors import SpaceError

# What a function body may contain: the subset that every backend translates (or tabulates).
# Sets and dicts are not translated: C tabulates such a function, Lua calls it in Python.
_ALLOWED_STMTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.If, ast.While, ast.For, ast.Break,
                  ast.Continue, ast.Return, ast.Expr, ast.Pass)
_REJECTED_EXPRS = {ast.Lambda: "lambda", ast.Await: "await", ast.NamedExpr: "':=' assignment",
                   ast.YieldFrom: "'yield from'", ast.Starred: "'*' unpacking",
                   ast.JoinedStr: "f-string"}
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
    """True for beast's own functions (range, min, ...) and Python's builtins. A value that is
    no function (``FLAG = True``, a setting) is a constant: a body reads it from the space."""
    if not callable(value) or not isinstance(value, (type(len), type(is_vocabulary))):
        return False
    module = getattr(value, "__module__", None)
    return module == "builtins" or module.startswith("beast.lang.")


_INDEX: list = [None]      # (the last tree indexed, its index)


def tree_index(tree: ast.Module) -> dict:
    """The tree's FunctionDefs by name and its assignments (``"="``), each in ``ast.walk``
    order; computed once per tree (a space's model looks up every function and binding in the
    same tree, and a walk per look-up was most of ``beast.load`` on a 15-parameter space)."""
    last = _INDEX[0]
    if last is not None and last[0] is tree:
        return last[1]
    funcs, assigns, lambdas = {}, [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            funcs.setdefault(node.name, []).append(node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            assigns.append(node)
        elif isinstance(node, ast.Lambda):
            lambdas.setdefault(node.lineno, []).append(node)
    index = {"def": funcs, "=": assigns, "lambda": lambdas}
    _INDEX[0] = (tree, index)       # one tuple: a thread never sees one tree with another's index
    return index


def find_function_def(tree: ast.Module, func, filename=None) -> ast.FunctionDef | None:
    """The module-level (possibly inside if/else) FunctionDef that defined ``func``; for a lambda
    of the file ``filename``, a FunctionDef that returns its body (:func:`lambda_def`)."""
    first = func.__code__.co_firstlineno
    if func.__name__ == "<lambda>":
        if filename is None or func.__code__.co_filename != filename:
            return None
        found = _the_lambda(tree_index(tree)["lambda"].get(first, ()), func.__code__)
        return lambda_def(found) if found is not None else None
    for node in tree_index(tree)["def"].get(func.__name__, ()):
        starts = [node.lineno] + [d.lineno for d in node.decorator_list]
        if first in starts:
            return node
    return None


def _the_lambda(candidates, code):
    """Of the lambdas that start on one line, the one whose body compiled to ``code`` (the
    columns of its instructions lie inside it), or the only one (None when it is unclear)."""
    if len(candidates) == 1:
        return candidates[0]
    try:
        spots = [(p[0], p[2]) for p in code.co_positions() if p[2] is not None and p[0] is not None
                 and (p[2], p[3]) != (0, 0)]
    except AttributeError:          # Python 3.10: no columns
        return None
    inside = [lam for lam in candidates if spots and all(
        (lam.body.lineno, lam.body.col_offset) <= spot <= (lam.body.end_lineno, lam.body.end_col_offset)
        for spot in spots)]
    return min(inside, key=lambda lam: (lam.end_lineno - lam.lineno, lam.end_col_offset - lam.col_offset),
               default=None)


def lambda_def(lam: ast.Lambda) -> ast.FunctionDef:
    """``lambda a: a > 1`` as ``def <lambda>(a): return a > 1``, at the lambda's place; the
    lambda itself is kept as ``fdef.lambda_node`` (its errors point at it)."""
    ret = ast.Return(lam.body)
    ast.copy_location(ret, lam.body)
    fdef = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ret], decorator_list=[], returns=None,
                           type_comment=None)
    ast.copy_location(fdef, lam)
    fdef.end_lineno, fdef.end_col_offset = lam.end_lineno, lam.end_col_offset
    if hasattr(fdef, "type_params"):
        fdef.type_params = []
    fdef.lambda_node = lam
    return fdef


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


def function_locals(fdef: ast.FunctionDef) -> set:
    """The names local to the function's own scope: its parameters and every name its body
    stores, except a comprehension's targets, which are local to the comprehension."""
    names = {a.arg for a in fdef.args.args}
    comprehensions = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
    todo = list(fdef.body)
    while todo:
        node = todo.pop()
        if isinstance(node, comprehensions):
            # only the first iterable is evaluated in the function's scope
            todo.append(node.generators[0].iter)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return names


def free_names(fdef: ast.FunctionDef) -> list:
    """(name, ast.Name) for every name the body reads but does not bind, in order of appearance.
    Python's scopes: a comprehension binds its targets for itself (``[b for b in range(3)]`` leaves
    a later ``b`` free), and its first iterable is read in the enclosing scope
    (``[b for b in range(b)]`` reads the free ``b``)."""
    out = {}

    def visit(node, bound):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            gens = node.generators
            visit(gens[0].iter, bound)
            inner = bound | {t.id for g in gens for t in ast.walk(g.target) if isinstance(t, ast.Name)}
            for i, g in enumerate(gens):
                if i:
                    visit(g.iter, inner)
                for cond in g.ifs:
                    visit(cond, inner)
            for part in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)):
                visit(part, inner)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            out.setdefault(node.id, node)
        for child in ast.iter_child_nodes(node):
            visit(child, bound)

    bound = frozenset(function_locals(fdef))
    for stmt in fdef.body:
        visit(stmt, bound)
    return sorted(out.items(), key=lambda item: (item[1].lineno, item[1].col_offset))


def analyze_function(func, role: str, ident: str, tree, filename, nodes: set, namespace: dict,
                     node_name: str | None = None) -> FuncInfo:
    """Resolve a user function's parameters and free names against the space's nodes and constants
    (``node_name``: the node's name, which a lambda goes by)."""
    import inspect
    fdef = find_function_def(tree, func, filename)
    label = node_name if func.__name__ == "<lambda>" and node_name else func.__name__
    if fdef is None:
        raise _no_source(func, role, filename, tree)
    check_body(fdef, filename)
    info = FuncInfo(label, ident, role, inspect.isgeneratorfunction(func), func, fdef,
                    filename, [a.arg for a in fdef.args.args], [])
    for arg in fdef.args.args:
        name = arg.arg
        _not_a_condition(name, arg, label, namespace, filename)
        if name in nodes:
            info.node_args.append(name)
        elif name in namespace and not name.startswith("__") and not is_vocabulary(namespace[name]):
            info.constants[name] = namespace[name]
        else:
            raise SpaceError.at(arg, filename, f"parameter '{name}' of '{label}' names no "
                                "iterator, derived variable, setting or constant",
                                hint="parameters are bound by name to the space's module-level names")
    for name, use in free_names(fdef):
        if is_vocabulary(namespace.get(name, getattr(builtins, name, None))):
            continue
        _not_a_condition(name, use, label, namespace, filename)
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


def _no_source(func, role, filename, tree) -> SpaceError:
    """The error for a function whose source beast cannot read: one of another file, or a lambda
    it cannot tell from another on the same line (Python 3.10 has no columns to tell them by)."""
    code = func.__code__
    if func.__name__ != "<lambda>" or code.co_filename != filename:
        return SpaceError(f"cannot find the source of function '{func.__name__}'", filename, code.co_firstlineno,
                          hint="@iterator and @condition functions must be defined in the space file")
    message = f"cannot tell this {role}'s lambda from the other lambdas on line {code.co_firstlineno}"
    hint = f"write one lambda a line, or an @{role} function (def name(a): return ...)"
    lambdas = tree_index(tree)["lambda"].get(code.co_firstlineno)
    if lambdas:
        return SpaceError.at(lambdas[0], filename, message, hint=hint)
    return SpaceError(message, filename, code.co_firstlineno, hint=hint)


def _not_a_condition(name, where, label, namespace, filename):
    """A function cannot read a condition: it has no value at a configuration that survives."""
    from ..lang.vocabulary import Condition
    if isinstance(namespace.get(name), Condition):
        raise SpaceError.at(where, filename, f"'{label}' reads '{name}', which is a condition: "
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
            from ..lang.devices import unknown_attribute
            message, hint = unknown_attribute(node.attr)
            raise SpaceError.at(node, filename, message, hint=hint)
