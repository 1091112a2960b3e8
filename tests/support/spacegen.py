"""Random spaces for hypothesis: the builder of a space file (statements, nodes, conditions) and
the strategy ``spaces``; its expressions are in spacegen_exprs."""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field

from hypothesis import strategies as st

from oracle import SETOPS, Model, ONode, OracleError, TooLarge, brute_force, values_of
from spacegen_exprs import (Bin, Bits, CMP_OPS, COMPREHENSIONS, Call, Cmp, Const, DIV_LITS, FLOAT_LITS, INT_LITS, KINDS, Lit, Logic, Neg, Not, PRUNE_LIMIT, Ref, STEPS, Sel, X, is_intlike)


# ---------------------------------------------------------------------------------------------
# The generated space

@dataclass
class Stmt:
    lines: list
    movable: bool = False          # a decorated function: may move up in the file
    defines: str | None = None     # the name a function or a condition defines
    reads: set = field(default_factory=set)   # names module-level code reads when it runs
    binds: list = field(default_factory=list)  # iterator names this statement binds (when run)


class Generated:
    """A generated space: ``source`` (the file), ``settings`` (the overrides to load it with),
    ``model`` (the oracle's model), ``columns`` (iterator names in declaration order)."""

    def __init__(self, source, settings, model, columns):
        self.source, self.settings, self.model, self.columns = source, settings, model, columns

    def numbered(self):
        return "\n".join(f"{i + 1:3d}  {line}" for i, line in enumerate(self.source.splitlines()))

    def __repr__(self):
        return f"<generated space, settings={self.settings!r}:\n{self.numbered()}\n>"


@dataclass
class NodeInfo:
    name: str       # file name
    key: str        # SSA key in the oracle environment (current binding)
    type: str
    role: str       # "iterator" | "derived"
    first_key: str = ""
    root: str = ""  # the node this name is bound to: itself, or what it aliases (``d = it``)


class Builder:
    def __init__(self, draw, n_iterators):
        self.draw = draw
        self.n_iterators = n_iterators
        self.mode = draw(st.sampled_from(["x", "y"]))
        self.lim = draw(st.integers(1, 6))
        self.flag = draw(st.booleans())             # setting("flag", False), overridden or not
        self.FLAG = draw(st.booleans())
        self.globals = {"__builtins__": builtins, "mode": self.mode, "lim": self.lim, "K": 3,
                        "flag": self.flag, "FLAG": self.FLAG}
        self.nodes = {}             # file name -> NodeInfo (current binding)
        self.onodes = []            # oracle nodes, topological order
        self.stmts = []
        self.functions_pending = []  # (ONode, names it reads, function, reads lim) resolved at the end
        self.counter = {"i": 0, "d": 0, "c": 0}
        self.late_deps = []          # (ONode, [ONode of named set operands]) resolved at the end

    # -- helpers
    def d(self, strategy):
        return self.draw(strategy)

    def chance(self, p):
        return self.d(st.floats(0, 1)) < p

    def new_name(self, prefix):
        n = self.counter[prefix]
        self.counter[prefix] += 1
        return f"{prefix}{n}"

    def refs_of(self, want):
        out = []
        for info in self.nodes.values():
            if want == "int" and not is_intlike(info.type):
                continue
            out.append(info)
        return out

    def compile_eval(self, text):
        code = compile(text, "<oracle>", "eval")
        g = self.globals
        return lambda env: eval(code, g, env)  # noqa: S307 - the oracle evaluates its own text

    # -- expressions
    def leaf(self, want, need_ref, pool):
        refs = [r for r in pool if (is_intlike(r.type) if want == "int" else True)]
        if need_ref or (refs and self.chance(0.55)):
            if not refs:
                return None
            r = self.d(st.sampled_from(refs))
            return Ref(r.name, r.key, r.type)
        if want == "bool":
            if self.chance(0.4):
                # a bool constant or setting: read as a truth value and, in arithmetic, as 0/1
                return Const(self.d(st.sampled_from(["FLAG", "flag"])), "bool")
            return Const(f"(mode == {self.d(st.sampled_from(['x', 'y']))!r})", "bool")
        if want == "num" and self.chance(0.25):
            return Lit(self.d(st.sampled_from(FLOAT_LITS)))
        if self.chance(0.15):
            return Const(self.d(st.sampled_from(["lim", "K"])), "int")
        return Lit(self.d(st.sampled_from(INT_LITS)))

    def divisor(self, want, depth, pool, func):
        """A nonzero constant, an expression that cannot be zero, or (a third of the time) one
        that can: a division by zero is an error whose line and configuration are checked."""
        if self.chance(0.45):
            return Lit(self.d(st.sampled_from(DIV_LITS))), False
        e = self.expr(want, depth - 1, True, pool, func)
        if e is not None and self.chance(0.4):
            return Bin("+", Call("abs", [e]), Lit(self.d(st.integers(1, 2)))), True
        return e, True

    def expr(self, want, depth, need_ref, pool, func=False):
        """An expression of type ``want`` ('int', 'num' or 'bool'). In module-level code
        (func=False) every operator node reads a node, so no constant subexpression is ever
        evaluated by Python itself (where ~True is -2 and 2 & 1 is 0)."""
        if want == "bool":
            return self.bool_expr(depth, need_ref, pool, func)
        if depth <= 0 or self.chance(0.3):
            return self.leaf(want, need_ref, pool)
        need = need_ref or not func
        kind = self.d(st.sampled_from(["+", "-", "*", "//", "%", "/", "**", "neg", "min", "max",
                                       "abs", "sel", "cmp", "logic"] + ["+", "-", "*"] + ["&", "|"]))
        if kind == "/" and want == "int":
            kind = "//"
        if kind in ("&", "|"):
            if want != "int":
                kind = "+"
            else:
                side = self.chance(0.5)
                a = self.expr("int", depth - 1, need and side, pool, func)
                b = self.expr("int", depth - 1, need and not side, pool, func)
                if a is None or b is None:
                    return self.leaf(want, need_ref, pool)
                return Bits(kind, a, b)
        if kind in ("+", "-", "*"):
            side = self.chance(0.5)
            a = self.expr(want, depth - 1, need and side, pool, func)
            b = self.expr(want, depth - 1, need and not side, pool, func)
            if a is None or b is None:
                return self.leaf(want, need_ref, pool)
            return Bin(kind, a, b)
        if kind in ("//", "%", "/"):
            b, b_ref = self.divisor(want, depth, pool, func)
            a = self.expr(want, depth - 1, need and not b_ref, pool, func)
            if a is None or b is None:
                return self.leaf(want, need_ref, pool)
            return Bin(kind, a, b)
        if kind == "**":
            a = self.expr("int", depth - 1, need, pool, func)
            if a is None:
                return self.leaf(want, need_ref, pool)
            return Bin("**", a, Lit(self.d(st.sampled_from([0, 1, 2]))))
        if kind == "neg":
            a = self.expr(want, depth - 1, need, pool, func)
            return Neg(a) if a is not None else self.leaf(want, need_ref, pool)
        if kind in ("min", "max"):
            n = self.d(st.integers(2, 3))
            first = self.d(st.integers(0, n - 1))
            args = [self.expr(want, depth - 1, need and i == first, pool, func) for i in range(n)]
            if any(a is None for a in args):
                return self.leaf(want, need_ref, pool)
            return Call(kind, args)
        if kind == "abs":
            a = self.expr(want, depth - 1, need, pool, func)
            return Call("abs", [a]) if a is not None else self.leaf(want, need_ref, pool)
        if kind == "sel":
            c = self.bool_expr(depth - 1, False, pool, func)
            taken = None
            if not func and not c.refs():
                taken = bool(eval(c.py({}, "bool"), self.globals))  # noqa: S307
                need_a, need_b = (need, False) if taken else (False, need)
            else:
                side = self.chance(0.5)
                need_a, need_b = need and side and not c.refs(), need and not side and not c.refs()
            a = self.expr(want, depth - 1, need_a, pool, func)
            b = self.expr(want, depth - 1, need_b, pool, func)
            if a is None or b is None:
                return self.leaf(want, need_ref, pool)
            return Sel(c, a, b, taken)
        if kind == "logic":
            # & | ~ of truth values used as a number (0/1): module-level code spells them & | ~
            if want != "int":
                return self.leaf(want, need_ref, pool)
            e = self.bool_expr(max(depth - 1, 1), need, pool, func)
            return e if (e.refs() or func) else self.leaf(want, need_ref, pool)
        # a comparison used as a number (bool counts as 0/1)
        return self.compare(depth - 1, need, pool, func) or self.leaf(want, need_ref, pool)

    def compare(self, depth, need_ref, pool, func):
        a = self.expr("num", depth, need_ref, pool, func)
        if a is None:
            return None
        b = self.expr("num", depth, False, pool, func)
        if func and self.chance(0.3):
            c = self.expr("num", depth, False, pool, func)
            return Cmp([self.d(st.sampled_from(CMP_OPS)), self.d(st.sampled_from(CMP_OPS))], [a, b, c])
        if self.chance(0.5):
            a, b = b, a
        return Cmp([self.d(st.sampled_from(CMP_OPS))], [a, b])

    def bool_expr(self, depth, need_ref, pool, func):
        need = need_ref or not func
        if depth <= 0:
            return self.compare(0, need, pool, func) or self.leaf("bool", False, pool)
        kind = self.d(st.sampled_from(["cmp", "cmp", "and", "or", "not", "cmp", "and", "num"]))
        if kind == "cmp":
            return self.compare(depth - 1, need, pool, func) or self.leaf("bool", False, pool)
        if kind in ("and", "or"):
            side = self.chance(0.5)
            a = self.bool_expr(depth - 1, need and side, pool, func)
            b = self.bool_expr(depth - 1, need and not side, pool, func)
            if not func and not (a.refs() or b.refs()):
                return self.compare(0, True, pool, func) or a
            return Logic(kind, a, b)
        if kind == "not":
            a = self.bool_expr(depth - 1, need, pool, func)
            if not func and not a.refs():
                return a
            return Not(a)
        # a number used as a truth value
        return self.expr("int", depth - 1, need, pool, func) or self.leaf("bool", False, pool)

    def alias_root(self, e):
        """The node ``e`` *is* when module-level Python evaluates it to an existing object: a bare
        name, or select() on a constant condition picking one (``d = select(mode == 'x', i0, 3)``
        binds d to i0 itself: an alias, not a derived variable)."""
        if isinstance(e, Ref):
            info = self.nodes.get(e.name)
            return (info.root or info.name) if info else e.name
        if isinstance(e, Sel) and e.taken is not None:
            return self.alias_root(e.then if e.taken else e.orelse)
        return None

    def nonbare(self, e):
        """``iterator(x)`` and a set operation's operand ``x`` mean x's values when x is an
        iterator (``iterator(it)`` is ``it`` itself); a scalar must be an expression, so wrap a
        bare name (or a select() that Python resolves to one)."""
        return Bin("+", e, Lit(0)) if self.alias_root(e) is not None else e

    # -- oracle nodes
    def add_onode(self, name, kind, deps, fn, source=""):
        node = ONode(name, kind, tuple(dict.fromkeys(deps)), fn, source)
        self.onodes.append(node)
        return node

    def keys(self, expr_or_refs):
        names = expr_or_refs.refs() if isinstance(expr_or_refs, X) else expr_or_refs
        return [self.nodes[n].key for n in sorted(names)]

    def names_map(self):
        return {n: info.key for n, info in self.nodes.items()}

    # -- module-level iterators
    def iterator_definition(self, name):
        """A module-level expression iterator: (beast text, oracle fn, names read when the line runs,
        oracle keys it depends on, named iterators whose definitions it uses as set operands)."""
        ipool = self.refs_of("int")
        kind = self.d(st.sampled_from(["range", "range", "range", "list", "list", "scalar", "setop"]))
        if not ipool and kind in ("scalar",):
            kind = "list"
        names = self.names_map()
        if kind == "range":
            text, otext, refs = self.range_text(ipool, names)
            return f"range({text})", self.compile_eval(f"range({otext})"), refs, self.keys(refs), []
        if kind == "list":
            vals = self.d(st.lists(st.sampled_from(INT_LITS[:7] + [True]), min_size=1, max_size=5))
            text = "[" + ", ".join(repr(v) for v in vals) + "]"
            return f"iterator({text})", self.compile_eval(text), set(), [], []
        if kind == "scalar":
            e = self.nonbare(self.expr("int", 2, self.chance(0.8), ipool))
            return (f"iterator({e.beast()})", self.compile_eval(e.py(names, "bool")), e.refs(),
                    self.keys(e), [])
        op = self.d(st.sampled_from(["union", "intersection", "difference", "union"]))
        parts = [self.setop_operand(ipool, names) for _ in range(2)]
        fa, fb = parts[0][1], parts[1][1]
        fn = (lambda env, fa=fa, fb=fb, op=op: SETOPS[op](values_of(fa(env)), values_of(fb(env))))
        late = [p[4] for p in parts if p[4] is not None]
        return (f"{op}({parts[0][0]}, {parts[1][0]})", fn, parts[0][2] | parts[1][2],
                parts[0][3] + parts[1][3], late)

    def range_text(self, ipool, names, func=False):
        nargs = self.d(st.integers(1, 3))
        args = [self.expr("int", 1, False, ipool, func) for _ in range(min(nargs, 2))]
        if nargs == 1:
            args = args[:1]
        step = None
        if nargs == 3:
            if self.chance(0.8):
                step = self.d(st.sampled_from(STEPS))
                args.append(Lit(step))
            else:
                c = self.bool_expr(1, False, ipool, func)
                taken = None if (func or c.refs()) else bool(eval(c.py({}, "bool"), self.globals))  # noqa: S307
                args.append(Sel(c, Lit(self.d(st.sampled_from(STEPS))), Lit(self.d(st.sampled_from(STEPS))), taken))
        if self.chance(0.93):
            # mostly non-empty: stop = start +- a few (else anything: often empty)
            k = Lit(self.d(st.integers(1, 4)))
            if nargs == 1:
                args[0] = Bin("+", Call("abs", [args[0]]), k) if (args[0].refs() or func) else k
            else:
                args[1] = Bin("-" if (step or 1) < 0 else "+", args[0], k)
        refs = set()
        for a in args:
            refs |= a.refs()
        if func:
            return ", ".join(a.py({}, "python") for a in args), refs
        return (", ".join(a.beast() for a in args), ", ".join(a.py(names, "bool") for a in args), refs)

    def setop_operand(self, ipool, names):
        """(text, oracle fn, names read, oracle keys, named iterator's ONode or None)."""
        kind = self.d(st.sampled_from(["list", "range", "named", "scalar"]))
        iters = [n for n in self.nodes.values() if n.role == "iterator"]
        if kind == "named" and iters:
            it = self.d(st.sampled_from(iters))
            onode = next(o for o in self.onodes if o.name == it.key)
            # the operand stands for the named iterator's values (its definition), not its value;
            # its dependencies are known once every function has been resolved (late binding)
            return it.name, (lambda env, o=onode: o.fn(env)), {it.name}, [], onode
        if kind == "range":
            text, otext, refs = self.range_text(ipool, names)
            return f"range({text})", self.compile_eval(f"range({otext})"), refs, self.keys(refs), None
        if kind == "scalar" and ipool:
            e = self.nonbare(self.expr("int", 1, True, ipool))
            return e.beast(), self.compile_eval(e.py(names, "bool")), e.refs(), self.keys(e), None
        # small values, so that an intersection or a difference is mostly not empty
        vals = self.d(st.lists(st.sampled_from(INT_LITS[:5]), min_size=int(self.chance(0.8)), max_size=4))
        text = "[" + ", ".join(repr(v) for v in vals) + "]"
        return text, self.compile_eval(text), set(), [], None

    def add_expression_iterator(self):
        name = self.new_name("i")
        text, fn, reads, keys, late = self.iterator_definition(name)
        onode = self.add_onode(name, "iterator", keys, fn, text)
        if late:
            self.late_deps.append((onode, late))
        lines = [f"{name} = {text}"]
        if self.chance(0.2):
            # module-level if on a setting picks the definition; the other branch is never run
            other = self.iterator_definition(name)[0]
            taken_first = self.chance(0.5)
            test = f"mode == {self.mode!r}" if taken_first else f"mode != {self.mode!r}"
            a, b = (text, other) if taken_first else (other, text)
            lines = [f"if {test}:", f"    {name} = {a}", "else:", f"    {name} = {b}"]
        self.stmts.append(Stmt(lines, reads=set(reads), binds=[name]))
        self.nodes[name] = NodeInfo(name, name, "int", "iterator", name, name)

    # -- function iterators and conditions
    def function_refs(self, want_int):
        pool = [n for n in self.nodes.values() if not want_int or is_intlike(n.type)]
        if not pool:
            return [], []
        chosen = self.d(st.lists(st.sampled_from(pool), max_size=3, unique_by=lambda n: n.name))
        params = [n for n in chosen if self.chance(0.7)]
        params = self.d(st.permutations(params)) if params else []
        return chosen, list(params)

    def func_header(self, decorator, name, params, extra_const):
        plist = [p.name for p in params] + (["lim"] if extra_const else [])
        return [decorator, f"def {name}({', '.join(plist)}):"]

    def ret_value(self, pool):
        kind = self.d(st.sampled_from(["scalar", "list", "range", "range"]))
        if kind == "scalar":
            return self.expr("int", 2, False, pool, True).py({}, "python")
        if kind == "list":
            n = self.d(st.integers(1, 4))
            items = [self.expr("int", 1, False, pool, True).py({}, "python") for _ in range(n)]
            if n > 1 and self.chance(0.5):
                items.append(items[0])
            return "[" + ", ".join(items) + "]"
        text, _ = self.range_text(pool, {}, func=True)
        return f"range({text})"

    def condition_expr(self, pool, func):
        """A condition's test: mostly a conjunction, so that it rejects part of the space."""
        if self.chance(0.6):
            a = self.bool_expr(1, True, pool, func)
            b = self.bool_expr(1, False, pool, func)
            return Logic("and", a, b) if (func or a.refs() or b.refs()) else a
        return self.bool_expr(2, True, pool, func)

    def bool_text(self, pool):
        return self.bool_expr(2, False, pool, True).py({}, "python")

    def int_text(self, pool, depth=1):
        return self.expr("int", depth, False, pool, True).py({}, "python")

    def add_function_iterator(self, closure):
        name = self.new_name("i")
        chosen, params = self.function_refs(True)
        pool = [NodeInfo(n.name, n.key, n.type, n.role) for n in chosen]
        extra_const = self.chance(0.15)
        if extra_const:
            pool.append(NodeInfo("lim", "lim", "int", "const"))
        body = self.closure_body(pool) if closure else self.deferred_body(pool)
        lines = self.func_header("@iterator", name, params, extra_const) + ["    " + b for b in body]
        self.add_function_node(name, "iterator", chosen, params, extra_const, body, lines)
        self.nodes[name] = NodeInfo(name, name, "int", "iterator", name, name)

    def deferred_body(self, pool):
        if self.chance(0.3):
            # Fig. 5: a local variable and a negative-step range
            x0 = self.int_text(pool)
            low = self.d(st.integers(-2, 1))
            ret = self.d(st.sampled_from([f"return range(x, {low - 3}, -1)",
                                          f"return range({low}, x + {self.d(st.integers(1, 3))})",
                                          f"return range(x, x + {self.d(st.integers(1, 6))}, "
                                          f"{self.d(st.integers(1, 3))})"]))
            return [f"x = {x0}", f"if {self.bool_text(pool)}:", f"    x = {self.int_text(pool)}", ret]
        body = [f"if {self.bool_text(pool)}:", f"    return {self.ret_value(pool)}"]
        for _ in range(self.d(st.integers(0, 2))):
            body += [f"elif {self.bool_text(pool)}:", f"    return {self.ret_value(pool)}"]
        if self.chance(0.5):
            body += ["else:", f"    return {self.ret_value(pool)}"]
        else:
            body += [f"return {self.ret_value(pool)}"]
        return body

    def closure_body(self, pool):
        body = self.closure_loop(pool)
        if self.chance(0.25):
            # a generator's return value is evaluated (its division may fail), then dropped
            body.append(f"return {self.returned(pool)}")
        return body

    def returned(self, pool):
        """A generator's return value: often a division by what may be zero."""
        d = self.expr("int", 1, True, pool, True)
        if d is None or self.chance(0.3):
            return self.int_text(pool)
        return f"{self.int_text(pool, 0)} // {d.py({}, 'python')}"

    def closure_loop(self, pool):
        kind = self.d(st.sampled_from(["while", "for", "state"]))
        n = self.d(st.integers(1, 5))
        if kind == "while":
            hi = (f"v + {self.d(st.integers(0, 6))}" if self.chance(0.8) else self.int_text(pool))
            return [f"v = {self.int_text(pool)}",
                    f"hi = {hi}",
                    "k = 0",
                    f"while k < {n} and v <= hi:",
                    "    yield v",
                    f"    v = v + {self.d(st.sampled_from(['k', '1', '2', 'k + 1', '-1']))}",
                    "    k += 1"]
        if kind == "for":
            m = self.d(st.integers(2, 3))
            start = self.int_text(pool)
            stop = (f"{start} + {self.d(st.integers(1, 6))}" if self.chance(0.8) else self.int_text(pool))
            cut = (f"{start} + {self.d(st.integers(1, 4))}" if self.chance(0.7) else self.int_text(pool))
            return [f"for j in range({start}, {stop}):",
                    f"    if j % {m} == {self.d(st.integers(0, m - 1))}:",
                    "        continue",
                    f"    if j > {cut}:",
                    "        break" if self.chance(0.7) else f"        return {self.returned(pool)}",
                    f"    yield j * {self.d(st.integers(-2, 2))} + {self.int_text(pool, 0)}"]
        return [f"a, b = {self.int_text(pool, 0)}, {self.int_text(pool, 0)}",
                "seen = []",
                "k = 0",
                f"while len(seen) < {n} and k < 8:",
                "    if a not in seen:",
                "        seen.append(a)",
                "        yield a",
                "    a, b = b, a + b",
                "    k += 1"]

    def add_function_condition(self):
        name = self.new_name("c")
        chosen, params = self.function_refs(False)
        if not chosen:
            return
        pool = [NodeInfo(n.name, n.key, n.type, n.role) for n in chosen]
        def test():
            return self.condition_expr(pool, True).py({}, "python")
        if self.chance(0.3):
            body = [f"if {self.bool_text(pool)}:", f"    return {test()}", f"return {test()}"]
        else:
            body = [f"return {test()}"]
        if self.chance(0.25):
            # a comprehension whose variable rebinds a node or a constant (its own scope: the
            # name keeps its meaning after it); w >= 0 always, so the truth is the test's
            v = self.d(st.sampled_from([n.name for n in pool if is_intlike(n.type)] + ["K"]))
            comp = self.d(st.sampled_from(COMPREHENSIONS)).format(v=v)
            body = [f"w = {comp}"] + body[:-1] + [f"return w >= 0 and {body[-1][len('return '):]}"]
        kind = self.d(st.sampled_from(KINDS))
        deco = "@condition" if kind is None else f"@condition(kind={kind!r})"
        lines = self.func_header(deco, name, params, False) + ["    " + b for b in body]
        self.add_function_node(name, "condition", chosen, params, False, body, lines)

    def add_function_node(self, name, kind, chosen, params, extra_const, body, lines):
        """A function node: the oracle calls the same body with every node it reads as an argument.
        Which binding of a derived variable it reads (the final one) is known only at the end."""
        text = "\n".join(body)
        readable = [n.name for n in chosen]
        used = [n for n in readable if _reads(text, n) or n in [p.name for p in params]]
        args = used + (["lim"] if extra_const else [])
        src = f"def _oracle_fn({', '.join(args)}):\n" + "\n".join("    " + b for b in body)
        ns = dict(self.globals)
        exec(compile(src, "<oracle fn>", "exec"), ns)  # noqa: S102
        pyfn = ns["_oracle_fn"]
        onode = self.add_onode(name, kind, [], None, src)
        self.functions_pending.append((onode, used, pyfn, extra_const))
        self.stmts.append(Stmt(lines, movable=True, defines=name, binds=[name] if kind == "iterator" else []))

    # -- derived variables
    def add_derived(self):
        name = self.new_name("d")
        pool = list(self.nodes.values())
        names = self.names_map()
        e = self.expr(self.d(st.sampled_from(["int", "int", "num"])), 2, True, pool)
        key = name
        if self.chance(0.2):
            # first binding chosen by a module-level if on a setting
            alt = self.expr("num" if e.type not in ("int", "bool") else "int", 1, True, pool)
            threshold = self.d(st.integers(1, 6))
            taken = self.lim > threshold
            then, orelse = (e, alt) if taken else (alt, e)
            lines = [f"if lim > {threshold}:", f"    {name} = {then.beast()}", "else:",
                     f"    {name} = {orelse.beast()}"]
            refs = then.refs() | orelse.refs()
            # the type a later reader may rely on: both branches' types must agree for ints
            if is_intlike(then.type) != is_intlike(orelse.type):
                lines = [f"{name} = {e.beast()}"]
                refs = e.refs()
        else:
            lines = [f"{name} = {e.beast()}"]
            refs = e.refs()
        self.add_onode(key, "derived", self.keys(e), self.compile_eval(e.py(names, "bool")), e.beast())
        self.stmts.append(Stmt(lines, reads=refs))
        self.nodes[name] = NodeInfo(name, key, e.type, "derived", key, self.alias_root(e) or name)

    def add_rebind(self):
        """``if mode == ...: d = f(d, ...)``: later module-level code and every function read the
        new binding; earlier module-level code keeps the old one."""
        derived = [n for n in self.nodes.values() if n.role == "derived" and n.key == n.first_key]
        if not derived:
            return
        info = self.d(st.sampled_from(derived))
        # only nodes that existed before the first binding (no cycle), and the old value itself
        first_index = next(i for i, o in enumerate(self.onodes) if o.name == info.first_key)
        before = {o.name for o in self.onodes[:first_index]}
        pool = [n for n in self.nodes.values() if n.key in before and n.role != "condition"]
        old = Ref(info.name, info.key, info.type)
        want = "int" if is_intlike(info.type) else "num"
        other = self.expr(want, 1, False, pool) if pool else Lit(self.d(st.sampled_from(DIV_LITS)))
        op = self.d(st.sampled_from(["+", "-", "*", "max", "min"]))
        e = Call(op, [old, other]) if op in ("max", "min") else Bin(op, old, other)
        test_value = self.d(st.sampled_from(["x", "y"]))
        lines = [f"if mode == {test_value!r}:", f"    {info.name} = {e.beast()}"]
        self.stmts.append(Stmt(lines, reads=e.refs()))
        if test_value != self.mode:
            return
        names = self.names_map()
        key = info.name + "_v2"
        onode = ONode(key, "derived", tuple(dict.fromkeys(self.keys(e))),
                      self.compile_eval(e.py(names, "bool")), e.beast())
        self.onodes.insert(first_index + 1, onode)
        self.nodes[info.name] = NodeInfo(info.name, key, info.type, "derived", info.first_key, info.name)

    # -- conditions
    def add_expression_condition(self):
        pool = list(self.nodes.values())
        names = self.names_map()
        e = self.condition_expr(pool, False)
        kind = self.d(st.sampled_from(KINDS))
        call = f"condition({e.beast()}" + (f", kind={kind!r})" if kind else ")")
        form = self.d(st.sampled_from(["named", "named", "bare"]))
        name = self.new_name("c")
        lines = [f"{name} = {call}" if form == "named" else call]
        self.add_onode(name, "condition", self.keys(e), self.compile_eval(e.py(names, "bool")), e.beast())
        self.stmts.append(Stmt(lines, defines=name, reads=e.refs()))

    def prune_conditions(self):
        """Most random spaces would keep no row (a few conditions that each reject about half):
        while the oracle says none survives, drop the condition that rejects the most, so that
        rows are checked as often as errors. A space that raises, or is too large to walk, stays."""
        columns = tuple(o.name for o in self.onodes if o.kind == "iterator")
        dropped = set()
        while True:
            conds = [o for o in self.onodes if o.kind == "condition" and o.name not in dropped]
            if not conds:
                break
            stats = {}
            try:
                kept = brute_force(Model([o for o in self.onodes if o.name not in dropped], columns),
                                   limit=PRUNE_LIMIT, stats=stats)
            except (TooLarge, OracleError):
                break
            if kept:
                break
            dropped.add(max(conds, key=lambda c: stats.get(c.name, 0)).name)
        self.onodes = [o for o in self.onodes if o.name not in dropped]
        self.stmts = [s for s in self.stmts if s.defines not in dropped]

    # -- the whole space
    def build(self):
        header = ["from beast import *", "",
                  'mode = setting("mode", "x", choices=["x", "y"])',
                  'lim = setting("lim", 3)',
                  'flag = setting("flag", False)',
                  f"FLAG = {self.FLAG!r}",
                  "K = 3", ""]
        for i in range(self.n_iterators):
            if i > 0:
                for _ in range(self.d(st.integers(0, 2))):
                    self.add_derived() if self.chance(0.8) else self.add_rebind()
                if self.chance(0.2):
                    self.add_expression_condition()
            kind = self.d(st.sampled_from(["expr", "expr", "expr", "deferred", "deferred", "closure"]))
            if kind == "expr":
                self.add_expression_iterator()
            else:
                self.add_function_iterator(closure=(kind == "closure"))
        if self.chance(0.5):
            self.add_derived()
        if self.chance(0.4):
            self.add_rebind()
        for _ in range(self.d(st.integers(0, 3))):
            if self.chance(0.5):
                self.add_expression_condition()
            else:
                self.add_function_condition()

        # functions read the final binding of every name
        for onode, used, pyfn, extra_const in self.functions_pending:
            keys = [self.nodes[n].key for n in used]
            onode.deps = tuple(dict.fromkeys(keys))
            lim = self.lim
            onode.fn = (lambda env, keys=tuple(keys), f=pyfn, x=extra_const:
                        f(*[env[k] for k in keys], *((lim,) if x else ())))
        for onode, late in self.late_deps:
            onode.deps = tuple(dict.fromkeys(list(onode.deps) + [d for o in late for d in o.deps]))
        # a node must follow every node it reads: functions were appended when made, but may
        # read the rebinding of a derived variable inserted earlier, so sort topologically
        self.onodes = _toposort(self.onodes)
        if self.chance(0.9):
            self.prune_conditions()

        # functions move up: anywhere before the first module-level statement that reads them
        stmts = [s for s in self.stmts if not s.movable]
        for s in [s for s in self.stmts if s.movable]:
            limit = next((i for i, t in enumerate(stmts) if not t.movable and s.defines in t.reads),
                         len(stmts))
            stmts.insert(self.d(st.integers(0, limit)), s)
        lines = list(header)
        columns = []
        for s in stmts:
            lines += s.lines
            if s.movable:
                lines.append("")
            columns += s.binds
        settings = {}
        if self.mode != "x" or self.chance(0.5):
            settings["mode"] = self.mode
        if self.lim != 3 or self.chance(0.5):
            settings["lim"] = str(self.lim) if self.chance(0.5) else self.lim
        if self.flag or self.chance(0.3):
            settings["flag"] = str(self.flag).lower() if self.chance(0.5) else self.flag
        model = Model(self.onodes, tuple(columns))
        return Generated("\n".join(lines) + "\n", settings, model, tuple(columns))


def _reads(text, name):
    import re
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _toposort(nodes):
    by_name = {n.name: n for n in nodes}
    out, done = [], set()

    def visit(n, stack=()):
        if n.name in done:
            return
        if n.name in stack:
            raise AssertionError(f"generated model has a cycle through {n.name}")
        for d in n.deps:
            visit(by_name[d], stack + (n.name,))
        done.add(n.name)
        out.append(n)

    for n in nodes:
        visit(n)
    return out


@st.composite
def spaces(draw, min_iterators=3, max_iterators=6):
    """A random small space: a :class:`Generated`."""
    n = draw(st.integers(min_iterators, max_iterators))
    return Builder(draw, n).build()
