"""beast.ir.translate: which user functions a target translates (C: else tabulated; Lua: else called
in Python), decided before any printing."""
from __future__ import annotations

import ast

import pytest

import beast
from beast.codegen.c import print_c
from beast.codegen.lua import print_lua
from beast.errors import BeastError, SpaceError
from beast.ir import targets
from beast.ir.ops import C64, can_fail, minmax_order
from beast.ir.nestplan import NestPlan, prepare
from beast.ir.prefix import truncate
from beast.ir.record import replace
from beast.ir.tabulate import Table, Tabulator
from beast.ir.targets import C_FUNCS, C_LOOPS, LUA_BODY, LUA_FUNCS, LUA_LOOPS
from beast.ir.body import Untranslatable, walk_body
from beast.ir.sites import user_position
from beast.ir.translate import NONE, Decided, decide, decide_all, known_truth, param_types, place, translate
from beast.runtime.python import compile_functions
from conftest import write_space

SPACE = """
from beast import *
a = range(8)
b = range(8)

@condition
def fine(a, b):
    s = 0
    for i in range(a):
        if i % 2:
            s += i
    return s < b

@condition
def stores(a, b):
    x = [a, b]
    x[0] = 3
    return sorted(x)[0] > 1
"""


def _funcs(tmp_path):
    program = beast.load(write_space(tmp_path, SPACE)).program
    return program, {f.name: f for f in program.funcs.values()}


def test_a_translated_body_has_every_printed_expression_lowered(tmp_path):
    program, funcs = _funcs(tmp_path)
    info = funcs["fine"]
    done = translate(info, param_types(info, program.types))
    assert isinstance(done, Decided) and done.reason is None
    for st in walk_body(done.body.body):
        for name in ("value", "test", "iterable"):
            e = getattr(st, name, None)
            if e is not None:
                assert id(e) in done.ops, (st, name)
    # a bare return is lowered too (the None the printer asks for)
    assert all(id(NONE) in done.ops for st in walk_body(done.body.body)
               if type(st).__name__ == "Return" and st.value is None)


def test_the_first_refusal_in_print_order_decides(tmp_path):
    program, funcs = _funcs(tmp_path)
    info = funcs["stores"]
    with pytest.raises(Untranslatable) as why:
        translate(info, param_types(info, program.types))
    assert why.value.reason == "this assignment target"      # x[0] = 3 comes before sorted()
    assert why.value.node.lineno == SPACE.lstrip("\n").splitlines().index("    x[0] = 3") + 1


def test_a_branch_a_constant_decides_away_is_not_walked(tmp_path):
    program = beast.load(write_space(tmp_path, """
        from beast import *
        a = range(4)
        @condition
        def c(a):
            s = 0
            for i in range(a):
                s += i
            if False:
                x = [a]
                x[0] = 1
            return s > 1
        """)).program
    (info,) = program.funcs.values()
    done = translate(info, param_types(info, program.types))
    assert isinstance(done, Decided) and done.reason is None


# -- Lua: lists are tables (item assignment holds), a refused function is called in Python

LUA_SPACE = """
from beast import *
a = range(8)
b = range(8)
PRIMES = [2, 3, 5]

@condition
def stores(a, b):
    x = [a, b]
    x[0] = 3
    return sorted(x)[0] > 1

@condition
def refused(a, b):
    s = 0
    for i in range(a):
        s += i
    x = PRIMES
    if (1, 2):
        s += 1
    return s in x

@condition
def dead(a, b):
    s = 0
    for i in range(a):
        s += i
    if 3 in (1, 2, 3):
        return s > b
    x = PRIMES
    return s in x
"""


def _decided(tmp_path, force=()):
    program = beast.load(write_space(tmp_path, LUA_SPACE)).program
    ptypes = {f.name: {a: program.types.get(a, "num") for a in f.node_args} for f in program.funcs.values()}
    return program, {f.name: decide(f, ptypes[f.name], LUA_BODY, f.name in force) for f in program.funcs.values()}


def test_lua_a_translated_body_has_every_printed_expression_lowered(tmp_path):
    program, done = _decided(tmp_path)
    stores = done["stores"]
    assert stores.reason is None            # item assignment and sorted() hold in Lua's tables
    for st in walk_body(stores.body.body):
        for name in ("value", "test", "iterable", "container", "index"):
            e = getattr(st, name, None)
            if e is not None:
                assert id(e) in stores.ops, (st, name)
    assert stores.types["x"] == "list"


def test_lua_the_first_refusal_in_print_order_decides_and_the_printer_says_so(tmp_path):
    program, done = _decided(tmp_path)
    assert done["refused"].reason == "a local bound to a module-level list"     # before the truth of a tuple
    source = print_lua(program)
    reasons = {program.funcs[i].name: why for i, why in source.untranslated_reasons.items()}
    assert reasons == {"refused": "a local bound to a module-level list"}
    assert "called in Python (a local bound to a module-level list)" in source.text


def test_lua_what_follows_a_return_a_constant_decides_is_not_walked(tmp_path):
    program, done = _decided(tmp_path)
    assert done["dead"].reason is None      # `x = PRIMES` is dead: 3 in (1, 2, 3) is known true
    stmts = list(walk_body(done["dead"].body.body))
    known = next(st for st in stmts if type(st).__name__ == "Known")       # the if, pruned to its live branch
    assert known_truth(done["dead"].ops[id(known.test)]) is True
    assert not any(type(st).__name__ in ("If", "Assign") and st.node.lineno == known.node.lineno + 2
                   for st in stmts)     # neither `x = PRIMES` nor the return after it is printed
    assert type(stmts[-1]).__name__ == "Return" and stmts[-1].node.lineno == known.node.lineno + 1


def test_what_each_return_of_an_iterator_gives_is_decided(tmp_path):
    program = beast.load(write_space(tmp_path, """
from beast import *
a = range(4)

@iterator
def b():
    if a == 0:
        return range(a)
    if a == 1:
        return [a, 2]
    if a == 2:
        return a + 1
    if a == 3:
        return None
    return
""")).program
    info = next(iter(program.funcs.values()))
    for target in (C64, LUA_BODY):
        done = translate(info, param_types(info, program.types), target)
        returns = [st for st in walk_body(done.body.body) if type(st).__name__ == "Return"]
        assert [done.return_kind(st) for st in returns] == ["range", "list", "number", "none", "none"]


def test_lua_extending_a_list_is_refused_by_the_lowering(tmp_path):
    """``l += m`` on a list never reaches the walk's 'extend' store (lua_body has no spelling for it):
    the lowering's types refuse list + list, whatever the right side is."""
    program = beast.load(write_space(tmp_path, """
from beast import *
K = [1, 2]
a = range(4)

@iterator
def literal():
    l = [1]
    l += [a, 3]
    return l

@iterator
def constant():
    l = [1]
    l += K
    return l

@iterator
def built():
    l = [1]
    l += list(range(a))
    return l
""")).program
    source = print_lua(program)
    reasons = {program.funcs[i].name: why for i, why in source.untranslated_reasons.items()}
    assert reasons == dict.fromkeys(("literal", "constant", "built"), "'+' on list and list values")


def test_lua_forced_functions_are_not_lowered(tmp_path):
    program, done = _decided(tmp_path, force={"stores"})
    assert done["stores"].reason == "forced" and done["stores"].ops is None


# -- every target's functions decided in one place, before printing (decide_all, beast.ir.nestplan)

CALLS = """
from beast import *
a = range(4)
b = range(4)
h = a / 2

@condition
def f(a, h):
    return str(a) == "1" or h > 1

@condition
def g(a, b):
    t = 0
    for i in range(b):
        t += a * i
    return t % 2 == 1
"""


def _calls(tmp_path):
    program = beast.load(write_space(tmp_path, CALLS)).program
    return program, {f.name: i for i, f in program.funcs.items()}


def _c_plan(program):
    return prepare(program, C_LOOPS, C_FUNCS, ("both",), Tabulator(program, lambda: compile_functions(program)))


def test_decide_all_for_each_target(tmp_path):
    program, ident = _calls(tmp_path)
    lua = decide_all(program, LUA_FUNCS)
    assert list(lua) == list(program.funcs)                          # every function, in order
    assert lua[ident["f"]].ptypes == {"a": "int", "h": "float"}
    assert lua[ident["f"]].done.reason == "the call str()" and lua[ident["g"]].done.reason is None
    assert (C_FUNCS.params, LUA_FUNCS.params) == (("int", "bool", "float", "num"),
                                                  ("int", "float", "num", "bool", "str"))   # else num
    tabulator = Tabulator(program, lambda: compile_functions(program))
    c = decide_all(program, C_FUNCS, tabulator, idents=[ident["g"], ident["f"]])
    assert list(c) == [ident["g"], ident["f"]]                       # those asked for, in that order
    assert isinstance(c[ident["f"]].done, Table) and isinstance(c[ident["g"]].done, Decided)
    forced = decide_all(program, C_FUNCS, tabulator, forced={ident["g"]}, idents=[ident["g"]])
    assert isinstance(forced[ident["g"]].done, Table)


def test_c_decides_only_the_functions_its_nest_calls_in_the_order_of_their_calls(tmp_path, monkeypatch):
    program, ident = _calls(tmp_path)
    tabulated = []
    real = Tabulator.tabulate
    monkeypatch.setattr(Tabulator, "tabulate", lambda self, info, ptypes: tabulated.append(info.name) or
                        real(self, info, ptypes))
    assert _c_plan(program).calls == [ident["f"], ident["g"]] and tabulated == ["f"]
    first = truncate(program, 1)                       # sampling's prefix: g's check is below it
    tabulated.clear()
    plan = _c_plan(first)
    assert plan.calls == [ident["f"]] and list(plan.funcs) == [ident["f"]] and tabulated == ["f"]
    source = print_c(first, lambda: compile_functions(first))
    assert (source.tabulated, source.translated) == (("f",), ())
    monkeypatch.setattr(targets, "FORCE_TABULATE", True)
    assert print_c(program, lambda: compile_functions(program)).tabulated == ("f", "g")


def test_a_call_of_an_undefined_function(tmp_path):
    program, ident = _calls(tmp_path)
    gone = replace(program, funcs={ident["f"]: program.funcs[ident["f"]]})
    with pytest.raises(BeastError) as err:                  # C: an internal error, before printing
        _c_plan(gone)
    assert err.value.message == f"internal error: unknown function {ident['g']}"
    plan = prepare(gone, LUA_LOOPS, LUA_FUNCS, ("count", "rows"))      # Lua: a stub raising NameError
    assert plan.missing == [ident["g"]]
    assert f"local function {ident['g']}() _b_fail(" in print_lua(gone).text


def test_a_function_called_before_a_refused_expression_is_decided_first(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        a = range(1000)
        b = range(1000)
        e = range(b, b + 2)
        @condition
        def c(a, b):
            return sorted([a, b])[0] == 3
        s = select(e > 1, "ab", "cd")
        t = condition(s == "ab")
        """)
    program = beast.load(path).program
    with pytest.raises(SpaceError, match="cannot tabulate 'c' instead"):      # c's check comes first
        print_c(program, lambda: compile_functions(program))
    plan = NestPlan(program, C_LOOPS, C_FUNCS, ("both",))
    assert plan.calls == list(program.funcs) and "a choice between str and str" in plan.error.message


# -- what each target prints, decided here: the printers only follow Decided

DECIDE_SPACE = """
from beast import *
a = range(1, 6)
b = range(4)

@condition
def known(a, b):
    s = 0
    if 2 > 1:
        s += a
    else:
        s += [b][5]
    while 0:
        s += 1
    while True:
        s += 1
        if s > 9:
            break
    return s > b
    s = 3

@condition
def falls_off(a, b):
    if a > b:
        return True

@condition
def ends(a, b):
    if a > b:
        return True
    else:
        return False

@iterator
def gen(a):
    for i in range(a, 0, -1):
        yield i
    return a // 0

@condition
def order(a, b):
    x = a
    x += 1
    return x + min(a, b // 2, 3) + min(a // b, b, a) + max(a, b ** a, 4) > 3
"""

LUA_STORES = """
from beast import *
a = range(1, 6)
b = range(4)

@condition
def stores(a, b):
    l = [a, b]
    m = [1, 2]
    l = []
    f = 0.5
    f = a
    for i in range(b, a, b + 1):
        f = i
    return len(l) + len(m) > f
"""


def _decide_all(tmp_path, target):
    program = beast.load(write_space(tmp_path, DECIDE_SPACE)).program
    out = {}
    for f in program.funcs.values():
        out[f.name] = decide(f, {a: program.types.get(a, "num") for a in f.node_args}, target)
        assert out[f.name].reason is None, (f.name, out[f.name].reason)
    return out


def _kinds(stmts):
    return [type(st).__name__ for st in stmts]


@pytest.mark.parametrize("target", [C64, LUA_BODY], ids=["c", "lua"])
def test_a_known_test_keeps_the_branch_that_runs(tmp_path, target):
    done = _decide_all(tmp_path, target)["known"]
    stmts = done.body.body
    known = next(st for st in stmts if type(st).__name__ == "Known")
    assert _kinds(known.body) == ["Assign"] and known.body[0].node.lineno == known.node.lineno + 1
    assert id(known.test) in done.ops            # the test is still evaluated (its errors)
    assert not any(type(st).__name__ == "Assign" and "[5]" in ast.unparse(st.node)
                   for st in walk_body(stmts))   # the dead branch is neither walked nor printed
    whiles = [st for st in stmts if type(st).__name__ == "While"]
    assert [w.known for w in whiles] == [False, True]
    ret = next(i for i, st in enumerate(stmts) if type(st).__name__ == "Return")
    # C prints what follows a return (it never runs); Lua does not
    assert _kinds(stmts[ret + 1:]) == ([] if target.tables else ["Assign", "Return"])


@pytest.mark.parametrize("target", [C64, LUA_BODY], ids=["c", "lua"])
def test_the_lowering_returns_where_the_end_is_reachable(tmp_path, target):
    done = _decide_all(tmp_path, target)
    falls = done["falls_off"].body.body
    assert _kinds(falls) == ["If", "Return"] and falls[-1].node is None and falls[-1].value is None
    assert _kinds(done["ends"].body.body) == ["If"]       # both branches return
    # a generator's `return v`: v is evaluated, then a bare return (the printers spell it by kind)
    gen = done["gen"].body.body
    assert _kinds(gen) == ["For", "Eval", "Return"] and gen[-1].value is None
    assert gen[1].node is gen[2].node and id(gen[1].value) in done["gen"].ops


def _store_kinds(done):
    return [done.stores[id(st)] for st in walk_body(done.body.body) if type(st).__name__ in ("Assign", "For")]


def _lua_stores(tmp_path):
    program = beast.load(write_space(tmp_path, LUA_STORES)).program
    (info,) = program.funcs.values()
    return decide(info, {a: program.types.get(a, "num") for a in info.node_args}, LUA_BODY)


def test_lua_store_kinds_are_decided_once_per_statement(tmp_path):
    done = _lua_stores(tmp_path)
    # l = [a, b]; m = [1, 2]; l = []; f = 0.5; f = a; for i ...; f = i (Lua's lists are tables: no copy)
    assert _store_kinds(done) == [("list",), ("list",), ("list",), ("number",), ("number",), ("number",),
                                  ("number",)]


def test_c_store_kinds_are_decided_once_per_statement(tmp_path):
    program = beast.load(write_space(tmp_path, """
        from beast import *
        a = range(1, 6)
        @condition
        def c(a):
            l = [a, 2]
            m = [1, 2]
            l = []
            f = 0.5
            x = y = a
            for i in range(a):
                f = i
            return len(l) + len(m) > f + x + y
        """)).program
    (info,) = program.funcs.values()
    done = translate(info, param_types(info, program.types))
    # a list from a list, from constants (copied: 'fill'), numbers
    assert _store_kinds(done) == [("list",), ("fill",), ("fill",), ("number",), ("number", "number"), ("number",),
                                  ("number",)]


def test_lua_a_numeric_for_gets_its_limit_from_the_ir(tmp_path):
    done = _decide_all(tmp_path, LUA_BODY)
    (counting_down,) = [st for st in walk_body(done["gen"].body.body) if type(st).__name__ == "For"]
    (last,) = done["gen"].limits[id(counting_down)]
    assert (last.kind, last.op, last.check) == ("binop", "+", None)      # stop + 1, unchecked
    (tmp_path / "stores").mkdir()
    stores = _lua_stores(tmp_path / "stores")
    (variable,) = [st for st in walk_body(stores.body.body) if type(st).__name__ == "For"]
    assert [(d.op, d.check) for d in stores.limits[id(variable)]] == [("-", None), ("+", None)]
    assert _decide_all(tmp_path, C64)["gen"].limits == {}       # C counts a range by its length


def test_lua_the_limit_one_past_the_width_is_exact(tmp_path):
    space = beast.load(write_space(tmp_path, """
        from beast import *
        a = iterator(range(3))
        @condition
        def c(a):
            n = 0
            for i in range(2**53 - 1, 2**53 - 1 - a, -1):
                n += 1
            for i in range(-(2**53 - 1), -(2**53 - 1) + a):
                n += 1
            return n != 2 * a
        """))
    assert space.enumerate(backend="lua").tolist() == space.enumerate(backend="python").tolist() == [(0,), (1,), (2,)]


def test_min_max_hold_an_argument_that_can_fail(tmp_path):
    done = _decide_all(tmp_path, LUA_BODY)["order"]
    calls = [op for op in _all_ops(done.ops.values()) if op.kind == "minmax_call"]
    # min(a, b // 2, 3): nothing can fail (b // 2 neither divides by 0 nor overflows); a // b can
    # (its value is held before b and a are evaluated); b ** a can overflow
    assert sorted(minmax_order(op) for op in calls) == [[False, False], [False, True], [True, True]]
    binops = {(a.op, a.args[1].kind): can_fail(a) for op in calls for a in op.args if a.kind == "binop"}
    assert binops == {("//", "const"): False, ("//", "var"): True, ("**", "var"): True}


def _all_ops(roots):
    seen, out = set(), []
    stack = list(roots)
    while stack:
        op = stack.pop()
        if id(op) not in seen:
            seen.add(id(op))
            out.append(op)
            stack.extend(op.args)
    return out


def test_a_statement_is_placed_as_the_lowering_places_its_operations():
    one, several = ast.parse("x = a // b\ny = (a //\n     b)\n").body
    assert user_position("f.py", one) == ("f.py", 1, 0, 10)
    assert user_position("f.py", several) == ("f.py", 2, 0, None)      # C keeps the column
    assert place("f.py", several) == ("f.py", 2, None, None)           # place drops it: not the same
    assert user_position("f.py", None) is None
