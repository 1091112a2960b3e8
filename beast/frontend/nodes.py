"""From an executed space file to its nodes: iterators, derived variables and conditions, each
with its lowered definition (expressions over named Vars) and its direct dependencies."""
from __future__ import annotations

from ..ir.record import field, record

from ..errors import SpaceError
from ..expr.nodes import (BinOp, BoolOp, Call, Compare, Const, Expr, FuncCall, Not, Select, UnOp, Var, static_type)
from ..expr.sequences import CallSeq, RangeSeq, ScalarSeq, SetOpSeq, ValuesSeq, free_vars
from ..lang.vocabulary import (Condition, FunctionSource, Iterator, RangeSource, ScalarSource, SetOpSource, ValuesSource)
from .functions import FuncInfo, analyze_function, tree_index
from .inline import inline_condition, inline_iterator, returned_node
from .loader import LoadedModule


@record
class Node:
    """One vertex of the dependency DAG."""
    name: str
    role: str                        # "iterator" | "derived" | "condition"
    index: int                       # declaration order within its role
    filename: str
    lineno: int | None
    deps: tuple = ()                 # names of the nodes it reads directly
    seq: object = None               # iterators: the lowered value sequence
    expr: Expr | None = None         # derived and conditions: the lowered expression
    func: FuncInfo | None = None     # @iterator / @condition functions
    kind: str | None = None          # conditions: hard / soft / correctness
    type: str = "int"                # derived: static type


@record
class SpaceModel:
    """Everything the front end knows about a space, independent of any backend."""
    module: LoadedModule
    nodes: dict = field(default_factory=dict)       # name -> Node, in declaration order
    aliases: dict = field(default_factory=dict)     # extra module names -> node name
    funcs: dict = field(default_factory=dict)       # ident -> FuncInfo
    constants: dict = field(default_factory=dict)   # constant names read by functions -> values

    def by_role(self, role):
        return [n for n in self.nodes.values() if n.role == role]

    @property
    def iterators(self):
        return [n.name for n in self.by_role("iterator")]

    @property
    def conditions(self):
        return [n.name for n in self.by_role("condition")]

    @property
    def derived(self):
        return [n.name for n in self.by_role("derived")]


_IDENT_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _ident(prefix, name, taken):
    """A generated name that cannot clash with a user name (user names never start with '_b_')."""
    base = f"_b_{prefix}_{''.join(c if c in _IDENT_CHARS else '_' for c in name)}"
    ident, i = base, 1
    while ident in taken:
        i += 1
        ident = f"{base}{i}"
    taken.add(ident)
    return ident


class _Lowering:
    """Replace iterator and derived objects inside expressions by Vars of their names."""

    def __init__(self, names_by_id, filename):
        self.names_by_id = names_by_id
        self.filename = filename

    def expr(self, e, root=None):
        out = self._expr(e, root)
        if isinstance(e, Expr) and out is not e and e.pos is not None and not isinstance(out, Var):
            out.pos = e.pos
        return out

    def _expr(self, e, root=None):
        if not isinstance(e, Expr):
            return Const(e)
        name = self.names_by_id.get(id(e))
        if isinstance(e, Iterator):
            if name is None:
                raise SpaceError("an iterator used in an expression must be bound to a module-level "
                                 "name", e.filename, e.lineno)
            return Var(name)
        if name is not None and e is not root:
            return Var(name)
        if isinstance(e, (Const, Var)):
            return e
        if isinstance(e, BinOp):
            return BinOp(e.op, self.expr(e.left), self.expr(e.right))
        if isinstance(e, Compare):
            return Compare(e.op, self.expr(e.left), self.expr(e.right))
        if isinstance(e, BoolOp):
            return BoolOp(e.op, self.expr(e.left), self.expr(e.right))
        if isinstance(e, UnOp):
            return UnOp(e.op, self.expr(e.operand))
        if isinstance(e, Not):
            return Not(self.expr(e.operand))
        if isinstance(e, Call):
            return Call(e.func, tuple(self.expr(a) for a in e.args))
        if isinstance(e, Select):
            return Select(self.expr(e.cond), self.expr(e.then), self.expr(e.orelse))
        raise SpaceError(f"unsupported expression {e!r}", self.filename)

    def seq(self, it: Iterator, funcs_by_iter):
        src = it.source
        if isinstance(src, RangeSource):
            return RangeSeq(self.expr(src.start), self.expr(src.stop), self.expr(src.step))
        if isinstance(src, ValuesSource):
            return ValuesSeq(src.values)
        if isinstance(src, ScalarSource):
            return ScalarSeq(self.expr(src.value))
        if isinstance(src, SetOpSource):
            return SetOpSeq(src.op, self.seq(src.left, funcs_by_iter), self.seq(src.right, funcs_by_iter))
        if isinstance(src, FunctionSource):
            info = funcs_by_iter[id(it)]
            args = dict.fromkeys(self.aliases.get(a, a) for a in info.node_args)
            return CallSeq(info.ident, tuple(Var(a) for a in args), info.closure)
        raise SpaceError(f"unsupported iterator definition {src!r}", it.filename, it.lineno)


def build_space_model(module: LoadedModule) -> SpaceModel:
    """Collect the nodes of an executed space file and lower their definitions."""
    ns = module.namespace
    filename = module.filename
    model = SpaceModel(module)
    names_by_id = {}
    for name, value in ns.items():
        if name.startswith("__") or not isinstance(value, (Expr, Condition)):
            continue
        if id(value) in names_by_id:
            model.aliases[name] = names_by_id[id(value)]
        else:
            names_by_id[id(value)] = name
    taken = set(ns)
    iterators = [(n, v) for n, v in ns.items() if isinstance(v, Iterator) and names_by_id.get(id(v)) == n]
    derived = [(n, v) for n, v in ns.items() if isinstance(v, Expr) and not isinstance(v, Iterator)
               and names_by_id.get(id(v)) == n]
    if not iterators:
        from ..errors import BeastWarning, warn
        warn(BeastWarning("the space declares no iterators, so its one configuration is the empty one",
                          filename, hint="declare one at module level: name = range(...) or "
                                         "name = iterator([...])"))
    conditions = []
    for cond in module.conditions:
        name = names_by_id.get(id(cond)) or cond.name or f"condition_line_{cond.lineno}"
        conditions.append((name, cond))
    # Conditions created in an imported helper module but bound here still count.
    seen = {id(c) for _, c in conditions}
    conditions += [(n, v) for n, v in ns.items() if isinstance(v, Condition) and id(v) not in seen
                   and names_by_id.get(id(v)) == n]

    node_names = {n for n, _ in iterators} | {n for n, _ in derived} | {n for n, _ in conditions}
    node_names |= set(model.aliases)
    lower = _Lowering(names_by_id, filename)
    lower.aliases = model.aliases

    funcs_by_iter = {}
    for name, it in iterators:
        it.name = name
        if isinstance(it.source, FunctionSource):
            info = analyze_function(it.source.func, "iterator", _ident("it", name, taken),
                                    module.tree, filename, node_names, ns, name)
            funcs_by_iter[id(it)] = info
    for name, cond in conditions:
        if cond.func is not None:
            cond.info = analyze_function(cond.func, "condition", _ident("cond", name, taken),
                                         module.tree, filename, node_names, ns, name)

    def resolve(deps):
        return tuple(dict.fromkeys(model.aliases.get(d, d) for d in deps))

    def add(node):
        if node.name in model.nodes:
            raise SpaceError(f"'{node.name}' is defined twice", filename, node.lineno)
        model.nodes[node.name] = node

    types = {}
    inlined = set()
    for i, (name, it) in enumerate(iterators):
        seq = lower.seq(it, funcs_by_iter)
        info = funcs_by_iter.get(id(it))
        deps = resolve(free_vars(seq))
        add(Node(name, "iterator", i, it.filename or filename, it.lineno, deps,
                 seq=_alias_seq(seq, model.aliases), func=info))
        types[name] = "int"
    for i, (name, value) in enumerate(derived):
        expr = _alias(lower.expr(value, root=value), model.aliases)
        pos = value.pos
        line = pos[1] if pos and pos[0] == filename else _assign_line(module.tree, name)
        add(Node(name, "derived", i, filename, line, resolve(free_vars(expr)), expr=expr))
    for i, (name, cond) in enumerate(conditions):
        if cond.func is not None:
            info = cond.info
            expr = inline_condition(info)
            if expr is not None:
                inlined.add(info.ident)
            else:
                expr = FuncCall(info.ident, tuple(Var(a) for a in
                                                  dict.fromkeys(model.aliases.get(a, a) for a in info.node_args)))
            expr = _alias(expr, model.aliases)
            node = Node(name, "condition", i, cond.filename, cond.lineno, resolve(info.node_args),
                        expr=expr, func=info, kind=cond.kind)
        else:
            expr = _alias(lower.expr(cond.test), model.aliases)
            node = Node(name, "condition", i, cond.filename, cond.lineno, resolve(free_vars(expr)),
                        expr=expr, kind=cond.kind)
        add(node)
    _infer_types(model)
    _refuse_type_errors(model)
    types = {n.name: ("int" if n.role == "iterator" else n.type) for n in model.nodes.values()}
    _check_inlined_truth(model, inlined, types)
    for node in model.by_role("iterator"):
        if node.func is not None:
            simple = inline_iterator(node.func, types)
            if simple is not None:
                node.seq = _alias_seq(simple, model.aliases)
                inlined.add(node.func.ident)
    for node in model.by_role("iterator"):
        inlined -= _called(node.seq)
    for info in list(funcs_by_iter.values()) + [c.info for _, c in conditions if c.func is not None]:
        _rename_aliases(info, model.aliases)
        info.node_args = list(dict.fromkeys(model.aliases.get(a, a) for a in info.node_args))
        if info.ident not in inlined:
            model.funcs[info.ident] = info
            model.constants.update(info.constants)
    return model


def _refuse_type_errors(model):
    """A module-level operation that Python refuses with TypeError whatever the values of its
    operands' types (``b = a + "x"``: an iterator's values are integers) is refused as the space
    loads, in Python's words and with a caret under it: Python raises it at every configuration
    that evaluates it, and every backend says the same at the same place."""
    from ..expr.nodes import python_types
    kinds = {n: "int" for n in model.iterators}
    found = []

    def check(expr, node):
        kind, error = python_types(expr, kinds)
        if error is not None:
            op, message = error
            pos = op.pos if op.pos is not None and op.pos[0] == node.filename else \
                (node.filename, node.lineno, None, None)
            found.append((pos[1] or 0, pos[2] or 0, pos, message))
        return kind

    pending = model.by_role("derived")
    for _ in range(len(pending) + 1):
        rest = []
        for node in pending:
            if all(d in kinds for d in node.deps):
                kinds[node.name] = check(node.expr, node)
            else:
                rest.append(node)
        pending = rest
    for node in model.by_role("condition"):
        if node.func is None:
            check(node.expr, node)
    for node in model.by_role("iterator"):
        if node.func is None:
            for e in node.seq.exprs():
                check(e, node)
    if found:
        _, _, (filename, lineno, col, end), message = min(found, key=lambda f: f[:2])
        raise SpaceError(f"TypeError: {message}", filename, lineno, col, end,
                         hint="Python raises this at every configuration, whatever the iterators' values "
                              "(integers), so the space is refused when it loads")


def _check_inlined_truth(model, inlined, types):
    """An inlined @condition that returns a float (``return a / b``) is refused at the value it
    returns, as ``condition(a / b)`` is (beast.lang): a float is true unless it is exactly 0.0."""
    for node in model.by_role("condition"):
        if node.func is None or node.func.ident not in inlined or static_type(node.expr, types) != "float":
            continue
        import ast
        value = returned_node(node.func)       # (an inlined body returns an expression)
        text = ast.unparse(value)
        raise SpaceError.at(value, node.filename,
                            f"the value of condition '{node.name}' is a float: {text}; a condition is a "
                            "truth value (True rejects) or an integer (not 0 rejects)",
                            hint=f"compare it (return {text} > 1), or use // for an integer quotient")


def _called(seq) -> set:
    """Idents of the functions a sequence calls (set operations may call inlined iterators)."""
    if isinstance(seq, CallSeq):
        return {seq.func}
    if isinstance(seq, SetOpSeq):
        return _called(seq.left) | _called(seq.right)
    return set()


def _rename_aliases(info, aliases):
    """A function that reads a node through an alias (``d0 = i0``) reads the node's own name."""
    import ast
    import copy
    mapping = {a: aliases[a] for a in info.node_args if a in aliases}
    if not mapping:
        return
    fdef = copy.deepcopy(info.fdef)
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
        elif isinstance(node, ast.arg) and node.arg in mapping:
            node.arg = mapping[node.arg]
    info.fdef = fdef
    info.params = [mapping.get(p, p) for p in info.params]


def _alias(expr, aliases):
    if not aliases:
        return expr
    from ..expr.nodes import walk
    for e in walk(expr):
        if isinstance(e, Var) and e.name in aliases:
            e.name = aliases[e.name]
    return expr


def _alias_seq(seq, aliases):
    for e in seq.exprs():
        _alias(e, aliases)
    return seq


def _assign_line(tree, name):
    """The line of the last module-level assignment to ``name`` (the binding that counts)."""
    import ast
    line = None
    for node in tree_index(tree)["="]:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if line is None or node.lineno > line:
                line = node.lineno
    return line


def _infer_types(model):
    """Static types of derived variables (int, float, bool or num), in dependency order."""
    types = {n: "int" for n in model.iterators}
    pending = model.by_role("derived")
    for _ in range(len(pending) + 1):
        rest = []
        for node in pending:
            if all(d in types for d in node.deps):
                node.type = static_type(node.expr, types)
                types[node.name] = node.type
            else:
                rest.append(node)
        pending = rest
    for node in pending:
        node.type = "num"
