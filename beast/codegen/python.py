"""Print the loop-nest IR as a Python module (the reference backend).

The module defines ``_b_count()`` (how many configurations survive) and ``_b_rows(chunk)`` (a
generator of lists of row tuples). User functions are called by their generated names; the runtime
supplies them, compiled from the user's own AST so that errors point at the user's lines.
"""
from __future__ import annotations

import ast
import copy
import math
from ..ir.record import record

from ..ir import Check, Emit, Let, Loop, Program, Tally
from ..ir.loops import Array, Bind, Call, Counted, Divisors, LoopLowering, Scratch, SetOp, Solved
from ..ir.split import parts
from ..ir.ops import may_overflow
from ..ir.targets import PY_CHECKS, PY_LOOPS
from ..expr.nodes import static_type
from .exprs import ATOM, ExprPrinter

HELPERS = ("_b_range", "_b_len", "_b_clen", "_b_min", "_b_max", "_b_abs", "_b_bool", "_b_int", "_b_wide", "_b_vals",
           "_b_setop", "_b_overflow", "_b_divisors", "_b_pow", "_b_ck")


class PyExpr(ExprPrinter):
    PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "|": 5, "&": 5.5, "+": 6, "-": 6, "*": 7, "/": 7,
            "//": 7, "%": 7, "unary": 8, "**": 9}
    NONASSOC = {"cmp"}

    def __init__(self, types=None, to_bool=None, checks=None):
        super().__init__(types)
        self.to_bool = to_bool      # (sub) -> whether an operand of & or | is converted (beast.ir.loops)
        self.checks = checks        # the 64-bit targets' lowering (PY_CHECKS): which operations overflow

    def fmt_const(self, v):
        if isinstance(v, float) and not math.isfinite(v):
            return f"float({str(v)!r})", ATOM
        text = repr(v)
        return text, (self.PREC["unary"] if text.startswith("-") else ATOM)

    def fmt_boolop(self, e, left, right):
        # The value of & and | is a bool in every backend; Python's own and/or return an operand.
        def as_bool(sub, text):
            return f"_b_bool({text})" if self.to_bool(sub) else text
        return f"{as_bool(e.left, left)} {e.op} {as_bool(e.right, right)}"

    def fmt_call(self, func, args):
        return f"_b_{func}({', '.join(args)})"

    def fmt_binop(self, e, left, right, prec):
        if e.op == "**":        # a complex result, an integer past 64 bits: errors, as in C and Lua
            return f"_b_pow({self(e.left)}, {self(e.right)})", ATOM
        text, prec = super().fmt_binop(e, left, right, prec)
        if e.op in ("+", "-", "*", "<<", "//") and self.overflows(e):
            return f"_b_ck({text})", ATOM
        return text, prec

    def p_UnOp(self, e):
        text, prec = super().p_UnOp(e)
        return (f"_b_ck({text})", ATOM) if self.overflows(e) else (text, prec)

    def p_Call(self, e):
        text, prec = super().p_Call(e)
        return (f"_b_ck({text})", ATOM) if e.func == "abs" and self.overflows(e) else (text, prec)

    def overflows(self, e) -> bool:
        """Whether the integer operation ``e`` may leave 64 bits where C checks it: Python's
        unbounded integers are checked there too (``_b_ck``), so that every backend fails alike."""
        if self.checks is None or static_type(e, self.types) == "float":     # (comments: no checks)
            return False
        try:
            op = self.checks(e)
        except Exception:  # noqa: BLE001 - what the 64-bit targets do not lower is checked as it runs
            return True
        return may_overflow(op)

    def fmt_select(self, cond, then, orelse):
        return f"({then} if {cond} else {orelse})"

    def p_PrefixValue(self, e):
        # sampling (beast.ir.prefix): a value of the prefix the runtime stores in _b_pre
        return f"_b_pre[{e.index}]", ATOM


@record
class PythonSource:
    """Generated Python: the loop nest (``text``), a readable copy of the user functions
    (``funcs_text``), and which generated line belongs to which node (``line_nodes``)."""
    text: str
    funcs_text: str
    line_nodes: dict

    def full_text(self):
        return self.funcs_text + "\n\n" + self.text if self.funcs_text else self.text


class PythonPrinter:
    """Print a :class:`~beast.ir.Program` as Python source."""

    def __init__(self, program: Program):
        self.program = program
        self.lower = LoopLowering(program, PY_LOOPS)
        self.printer = PyExpr(program.types, self.lower.to_bool, LoopLowering(program, PY_CHECKS).ops)
        self.lines = []
        self.line_nodes = {}
        self.texts = {}             # id(expr or form) -> (it, its text): count and rows print the same

    def memo(self, key, make):
        """``make(key)``, once per expression or loop form (the entry keeps ``key`` alive)."""
        hit = self.texts.get(id(key))
        if hit is None:
            hit = self.texts[id(key)] = (key, make(key))
        return hit[1]

    def ex(self, e):
        """The Python text of an expression."""
        return self.memo(e, self.printer)

    def emit(self, depth, text, node=None, bound=0):
        self.lines.append("    " * depth + text)
        if node is not None:
            # the node this line evaluates, and how many loops (outermost first) are bound there
            self.line_nodes[len(self.lines)] = (node, bound)

    def seq(self, f):
        """A Python iterable for a loop form (beast.ir.loops) or a scratch loop's fill."""
        if isinstance(f, Counted):
            start, stop, step = (self.ex(b.expr) for b in f.bounds)
            if step == "1":
                return f"_b_range({stop})" if start == "0" else f"_b_range({start}, {stop})"
            return f"_b_range({start}, {stop}, {step})"
        if isinstance(f, Array):
            return "(" + "".join(f"{v}, " for v in f.values).rstrip(" ") + ")"
        if isinstance(f, Bind):
            return f"({self.ex(f.value)},)"
        if isinstance(f, Call):
            call = f"{f.func}({', '.join(self.ex(a) for a in f.args)})"
            return call if f.closure else f"_b_vals({call})"
        if isinstance(f, Solved):
            value = self.ex(f.value)
            return f"((({value}),) if {self.ex(f.guard)} and ({value}) in {self.seq(f.base)} else ())"
        if isinstance(f, Divisors):
            return f"_b_divisors({self.ex(f.n)}, {self.ex(f.base.start.expr)}, {self.ex(f.base.stop.expr)})"
        if isinstance(f, SetOp):
            return f"_b_setop({f.op!r}, {self.seq(f.left)}, {self.seq(f.right)})"
        return self.seq(f.fill)

    def pure_count(self, count):
        """Text counting a loop nest that only emits (a product of lengths)."""
        # _b_clen: len() also past sys.maxsize (a range of 2**63 values is a count past 64 bits,
        # said as C says it, not an OverflowError of its iterator)
        return " * ".join("1" if isinstance(form, Bind) else f"_b_clen({self.memo(form, self.seq)})"
                          for _, form in count.parts)

    def block(self, stmts, depth, mode, outer_loop, nloops=0):
        """Print statements at indentation ``depth`` with ``nloops`` loops bound."""
        for s in stmts:
            if isinstance(s, Let):
                self.emit(depth, f"{s.var} = {self.ex(s.expr)}", s.node, nloops)
                if s.may_overflow:
                    # C and Lua compute in 64 bits; Python reports the same overflow they do
                    is_int = f"{s.var}.__class__ is int and " if s.type == "num" else ""
                    self.emit(depth, f"if {is_int}not -0x8000000000000000 <= {s.var} <= 0x7fffffffffffffff:",
                              s.node, nloops)
                    self.emit(depth + 1, f"_b_overflow({s.var!r})", s.node, nloops)
            elif isinstance(s, Check):
                self.emit(depth, f"if {self.ex(s.expr)}:", s.node, nloops)
                exit_ = s.exit if outer_loop else ("return 0" if mode == "count" else "return")
                self.emit(depth + 1, exit_)
            elif isinstance(s, Loop):
                count = self.lower.count(s) if mode == "count" else None
                if count is not None:
                    self.emit(depth, f"_b_n += {self.pure_count(count)}", s.node, nloops)
                    continue
                part = self.parts[mode].get(id(s))      # beast.ir.split
                if part is not None and s is not self.opened:
                    self.split(part, depth, mode, nloops)
                    continue
                form = self.lower.form(s)
                self.emit(depth, f"for {s.var} in {self.memo(form, self.seq)}:", s.node, nloops)
                # Python's values keep their class: check (and turn a bool into an int) at run time
                if isinstance(form, Scratch) or isinstance(form, Bind) and form.check == "class":
                    self.emit(depth + 1, f"if {s.var}.__class__ is not int:", s.node, nloops + 1)
                    self.emit(depth + 2, f"{s.var} = _b_int({s.var}, {s.var!r})", s.node, nloops + 1)
                    # a user function's value past 64 bits fails where the loop binds it, as in C,
                    # in count and rows alike (its configuration: the loops around it)
                    self.emit(depth + 1, f"if not -0x8000000000000000 <= {s.var} <= 0x7fffffffffffffff:",
                              s.node, nloops)
                    self.emit(depth + 2, f"_b_wide({s.var!r})", s.node, nloops)
                self.block(s.body, depth + 1, mode, True, nloops + 1)
            elif isinstance(s, Tally):
                self.emit(depth, f"_b_T[{s.slot}] += 1")    # a global list (beast stats)
            elif isinstance(s, Emit):
                if mode == "count":
                    self.emit(depth, "_b_n += 1")
                else:
                    row = ", ".join(s.columns) + ("," if len(s.columns) == 1 else "")
                    self.emit(depth, f"_b_append(({row}))")
                    self.emit(depth, "if _b_len(_b_buf) >= _b_chunk:")
                    self.emit(depth + 1, "yield _b_buf")
                    self.emit(depth + 1, "_b_buf = _b_st[0] = []")
                    self.emit(depth + 1, "_b_append = _b_buf.append")

    def split(self, part, depth, mode, nloops):
        """Call a new function that runs ``part.loop``; it is printed after the current one."""
        name = f"_b_{mode}_{len(self.pending) + 1}"
        params = ", ".join(part.params)
        if mode == "count":
            self.emit(depth, f"_b_n += {name}({params})")
        else:
            sep = ", " if params else ""
            self.emit(depth, f"yield from {name}(_b_chunk, _b_st{sep}{params})")
            self.emit(depth, "_b_buf = _b_st[0]")
            self.emit(depth, "_b_append = _b_buf.append")
        self.pending.append((name, part, mode, nloops))

    def function(self, header, stmts, mode, nloops=0):
        self.emit(0, "")
        self.emit(0, header)
        if mode == "count":
            self.emit(1, "_b_n = 0")
        else:
            self.emit(1, "_b_buf = _b_st[0]")
            self.emit(1, "_b_append = _b_buf.append")
        self.block(stmts, 1, mode, False, nloops)
        if mode == "count":
            self.emit(1, "return _b_n")

    def render(self) -> PythonSource:
        p = self.program
        self.pending, self.opened = [], None
        self.parts = {mode: parts(self.lower, p.body, mode) for mode in ("count", "rows")}
        self.emit(0, f"# beast enumerator for space {p.name!r}: generated code, do not edit")
        self.emit(0, f"# loop order: {', '.join(p.loop_order) or '(no loops)'}")
        self.function("def _b_count():", p.body, "count")
        self.emit(0, "")
        self.emit(0, "def _b_rows(_b_chunk):")
        self.emit(1, "_b_st = [[]]")
        self.emit(1, "yield from _b_rows_0(_b_chunk, _b_st)")
        self.emit(1, "if _b_st[0]:")
        self.emit(2, "yield _b_st[0]")
        self.function("def _b_rows_0(_b_chunk, _b_st):", p.body, "rows")
        done = 0
        while done < len(self.pending):
            name, part, mode, nloops = self.pending[done]
            done += 1
            params = ", ".join(part.params)
            if mode == "count":
                header = f"def {name}({params}):"
            else:
                header = f"def {name}(_b_chunk, _b_st{', ' if params else ''}{params}):"
            self.opened = part.loop          # the loop this function runs (not a call of itself)
            self.function(header, [part.loop], mode, nloops)
        return PythonSource("\n".join(self.lines) + "\n", render_functions(p), self.line_nodes)


_CHECKED = (ast.Add, ast.Sub, ast.Mult, ast.LShift, ast.FloorDiv)    # integer results C checks
_CHECKED_CALLS = ("abs", "sum", "int", "round")


def _folded(node):
    """A constant operation folded as the 64-bit targets fold it: the whole constant subtree's value
    when it is a float or fits in 64 bits (``-2**63`` and ``(2**64 - 5) // 2`` are constants, not
    overflows of ``2**63``, ``2**64``); None where it is not folded (an operand that is not a
    number, a power too large to compute now, an operation that raises, an integer past 64 bits:
    left to run, so the operation whose own value leaves 64 bits fails, at its caret, as in C)."""
    value = _constant_value(node)
    if value is None or (value.__class__ is int and not -0x8000000000000000 <= value <= 0x7fffffffffffffff):
        return None
    return ast.copy_location(ast.Constant(value), node)


def _constant_value(node):
    """The value of an expression of number literals and operators (Python's integers), or None."""
    if isinstance(node, ast.Constant):
        return node.value if node.value.__class__ in (int, float) else None
    if isinstance(node, ast.BinOp):
        left = _constant_value(node.left)
        right = _constant_value(node.right) if left is not None else None
        if right is None or isinstance(node.op, (ast.Pow, ast.LShift)) and right.__class__ is int \
                and abs(right) > 256:
            return None
        expr = ast.BinOp(ast.Constant(left), node.op, ast.Constant(right))
    elif isinstance(node, ast.UnaryOp):
        operand = _constant_value(node.operand)
        if operand is None:
            return None
        expr = ast.UnaryOp(node.op, ast.Constant(operand))
    else:
        return None
    try:
        value = eval(compile(ast.fix_missing_locations(ast.Expression(expr)), "<fold>", "eval"),  # noqa: S307
                     {"__builtins__": {}})
    except Exception:  # noqa: BLE001 - raised again where the operation runs
        return None
    return value if value.__class__ in (int, float) else None


class _HugeConstants(ast.NodeTransformer):
    """An integer constant past 64 bits (written, or folded) fails where it is reached, as it does
    in C and Lua: ``_b_ck(constant)``."""

    def visit_Constant(self, node):
        if node.value.__class__ is int and not -0x8000000000000000 <= node.value <= 0x7fffffffffffffff:
            return _call("_b_ck", [node], node)
        return node


def _call(name, args, where):
    return ast.copy_location(ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[]), where)


class _CheckedArithmetic(ast.NodeTransformer):
    """The user's function as C and Lua compute it: ``a ** b`` -> ``_b_pow(a, b)`` (a complex
    result is an error), and every integer result C checks (``+ - * << //``, unary minus,
    ``abs``, ``sum``, ``int``, ``round``; their augmented assignments) wrapped in ``_b_ck``,
    which stops at an integer past 64 bits.  The calls keep the operator's position, so an
    error's caret does too."""

    def visit_BinOp(self, node):
        folded = _folded(node)
        if folded is not None:
            return folded
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            return _call("_b_pow", [node.left, node.right], node)
        return _call("_b_ck", [node], node) if isinstance(node.op, _CHECKED) else node

    def visit_UnaryOp(self, node):
        folded = _folded(node)
        if folded is not None:
            return folded
        self.generic_visit(node)
        return _call("_b_ck", [node], node) if isinstance(node.op, ast.USub) else node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in _CHECKED_CALLS:
            return _call("_b_ck", [node], node)
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, (ast.Pow,) + _CHECKED) or not isinstance(node.target, ast.Name):
            return node
        load = ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node.target)
        if isinstance(node.op, ast.Pow):
            value = _call("_b_pow", [load, node.value], node)
        else:
            value = _call("_b_ck", [ast.copy_location(ast.BinOp(load, node.op, node.value), node)], node)
        return ast.copy_location(ast.Assign(targets=[node.target], value=value), node)


def function_ast(info) -> ast.FunctionDef:
    """The user's function as the enumerator calls it: renamed, with node arguments only, and
    its arithmetic checked as C's (:class:`_CheckedArithmetic`)."""
    fdef = _HugeConstants().visit(_CheckedArithmetic().visit(copy.deepcopy(info.fdef)))
    fdef.name = info.ident
    fdef.decorator_list = []
    fdef.returns = None
    fdef.args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in info.node_args],
                              vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    ast.copy_location(fdef.args, info.fdef.args)
    return fdef


def render_functions(program: Program) -> str:
    return "\n\n".join(ast.unparse(function_ast(info)) for info in program.funcs.values())


def print_python(program: Program) -> PythonSource:
    """Generate the Python source of a program."""
    return PythonPrinter(program).render()
