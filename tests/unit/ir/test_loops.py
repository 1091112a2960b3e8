"""The loop forms of beast.ir.loops: every per-loop decision (checks, widths, step signs,
counting nests, fused chains, work items) made once, for a target described as data."""
import pytest

import beast
from beast.errors import BeastError
from beast.ir import Check, Let, Loop, walk_statements
from beast.ir import ops as ir_ops
from beast.ir.loops import (Array, Bind, Call, Counted, Divisors, LoopLowering, Scratch, SetOp, Solved,
                            LoopTarget, claim_chain)
from beast.ir.nestplan import Refused, prepare
from beast.ir.targets import C_FUNCS, C_LOOPS as C, LUA_FUNCS, LUA_LOOPS as LUA, PY_LOOPS


def loops(path, text):
    path.write_text("from beast import *\n" + text)
    program = beast.load(path).program
    return program, {s.var: s for s in walk_statements(program.body) if isinstance(s, Loop)}


def test_forms_and_their_checks(tmp_path):
    program, ls = loops(tmp_path / "s.py", (
        "a = range(1, 9)\n"
        "b = range(a, 20, a)\n"
        "c = iterator([1, 2**60])\n"
        "d = a / 2\n"
        "@iterator\n"
        "def e(a):\n"
        "    yield a\n"
        "f = union(range(a), [7])\n"
        "g = range(10, 0, -a)\n"
        "h = range(0, 10, a - 4)\n"))
    lua = LoopLowering(program, LUA)
    b = lua.form(ls["b"])
    assert isinstance(b, Counted) and [x.kind for x in b.bounds] == ["int"] * 3
    assert b.step_sign == 1 and b.length is None          # a >= 1: no step-zero check
    g = lua.form(ls["g"])
    assert g.step_sign == -1 and g.length is None
    assert lua.form(ls["h"]).step_sign == 0                # may be zero: checked when it runs
    assert (b.last, g.last, lua.form(ls["h"]).last) == ("-", "+", None)   # for-loop limit: stop -/+ 1
    assert lua.form(ls["a"]).length == 8 and lua.form(ls["a"]).unit_step and not b.unit_step
    c = lua.form(ls["c"])
    assert isinstance(c, Array) and c.wide == 2**60       # beyond Lua's exact integers ...
    assert LoopLowering(program, C).form(ls["c"]).wide is None     # ... not beyond C's
    assert LoopLowering(program, C).form(ls["b"]).step_sign == 0   # no intervals: checked
    e = lua.form(ls["e"])
    assert isinstance(e, Scratch) and e.pending and e.fill == Call(e.fill.func, e.fill.args, True)
    f = lua.form(ls["f"])
    assert isinstance(f, Scratch) and not f.pending and isinstance(f.fill, SetOp)
    assert isinstance(f.fill.left, Counted) and isinstance(f.fill.right, Array)


def test_intervals_come_from_the_ops_and_decide_the_for_loop_limit(tmp_path):
    program, ls = loops(tmp_path / "s.py", (
        "a = range(1, 9)\n"
        "b = a * 3 + 1\n"
        "c = range(b, 2**52, max(a, 2))\n"
        "d = range(0, a > 4)\n"
        "e = range(0, 2**53 - 1 - a)\n"
        "f = range(1, 2**53 - 1, a)\n"
        "h = range(0, a * 2**50)\n"))
    lua = LoopLowering(program, LUA)
    assert lua.ivs.vars["a"] == (1, 8) and lua.ivs.vars["b"] == (4, 25)
    assert lua.ivs.vars["c"] == (4, 2**52 - 1)           # max(a, 2) >= 2: counts up
    assert lua.ivs.vars["d"] == (0, 0)                    # a bool bound is 0 or 1
    assert lua.ops(ls["c"].seq.step) is lua.ops(ls["c"].seq.step)   # lowered once, for the printer too
    c, d, e, f, h = (lua.last_op(lua.form(ls[v])) for v in "cdefh")
    assert c.kind == "const" and c.value == 2**52 - 1          # stop - 1, folded
    assert (d.kind, d.check, d.iv) == ("binop", None, (-1, 0))  # (a > 4) - 1
    assert (e.kind, e.check, e.iv) == ("binop", None, (2**53 - 10, 2**53 - 3))
    assert f.kind == "const" and f.value == 2**53 - 2
    assert (h.kind, h.check) == ("binop", None)          # a * 2**50 may reach 2**53: the stop is
    assert lua.ops(ls["h"].seq.stop).check == "overflow"        # checked, and one past it is exact
    assert lua.last_op(lua.form(ls["c"])) is c                   # decided once


def test_bind_checks_follow_the_static_type(tmp_path):
    program, ls = loops(tmp_path / "s.py", (
        "a = range(1, 5)\n"
        "b = iterator(a * 2)\n"
        "c = iterator(max(a, a / 2))\n"
        "d = iterator(a > 2)\n"))
    lower = LoopLowering(program, LoopTarget())
    forms = {v: lower.form(ls[v]) for v in "bcd"}     # int, num (int or float), bool
    assert all(isinstance(f, Bind) and f.single for f in forms.values())
    assert {v: f.check for v, f in forms.items()} == {"b": "none", "c": "flag", "d": "none"}


def test_solved_divisors_count_fused_and_work_items(tmp_path):
    program, ls = loops(tmp_path / "s.py", (
        "t = range(1, 33)\n"
        "m = range(1, 33)\n"
        "n = range(1, 33)\n"
        "exact = condition(m * n != t)\n"))
    lower = LoopLowering(program, LUA)
    assert isinstance(lower.form(ls["n"]), Solved) and lower.form(ls["n"]).single
    assert isinstance(lower.form(ls["m"]), Divisors)
    assert lower.count(ls["t"]) is None                   # a check: not a product of lengths
    assert [l.var for l in claim_chain(program, 3)] == list(program.loop_order)

    program, ls = loops(tmp_path / "p.py", "x = range(4)\ny = iterator([3, 5])\nz = iterator(1)\n")
    count = LoopLowering(program, LUA).count(ls["x"])
    forms = {l.var: f for l, f in count.parts}
    assert [type(forms[v]) for v in "xyz"] == [Counted, Array, Bind]
    assert forms["x"].length == 4
    assert count.factors == [8]                            # 1 * 2 * 4, folded: no Lua multiplication

    q, qs = loops(tmp_path / "q.py", "a = range(1, 5)\nb = range(a)\nc = iterator([3, 5])\nd = range(3)\n")
    assert q.loop_order == ("a", "c", "d", "b")            # b, the range(a), innermost
    factors = LoopLowering(q, LUA).count(qs["c"]).factors
    assert isinstance(factors[0], Counted) and factors[1:] == [3, 2]   # only the innermost run folds
    fused = LoopLowering(program, LUA).fused(ls["x"])
    assert fused is not None and len(fused.combinations) == 8 and not fused.single   # x, y: a bind ends it
    assert LoopLowering(program, C).fused(ls["x"]) is None     # only a fusing target fuses


def test_lets_that_may_leave_64_bits(tmp_path):
    """Let.may_overflow is decided in the IR: integer lets that add, subtract, multiply, power,
    negate, take abs() or floor-divide by what may be -1; the Python printer spells a 64-bit check
    for exactly those."""
    from beast.codegen.python import print_python
    from beast.ir import Let
    path = tmp_path / "s.py"
    path.write_text("from beast import *\na = range(1, 9)\n"
                    "p = a * 2\nq = a // 2\nr = a / 2\ns = -a\nt = a ** 3\nu = a > 2\nv = min(a, 3)\n"
                    "w = abs(a)\nx = a // -1\ny = 7 // a\n"
                    "c = condition(p + q + r + s + t + u + v + w + x + y > 100)\n")
    program = beast.load(path).program
    lets = {s.var: s for s in walk_statements(program.body) if isinstance(s, Let)}
    assert set(lets) == set("pqrstuvwxy")
    assert {v for v, s in lets.items() if s.may_overflow} == {"p", "s", "t", "w", "x", "y"}
    text = print_python(program).text
    for var, let in lets.items():
        assert (f"_b_overflow({var!r})" in text) == let.may_overflow, var


def test_a_divisor_loop_has_integer_bounds(tmp_path):
    # m's stop is an int at run time but a num statically: m stays a range (Counted, whose bound
    # check is at run time) instead of a divisor loop, which the C backend refused to print
    src = ("t = range(1, 33)\n"
           "s = select(t > 0, t + 1, t / 1)\n"
           "m = range(1, s)\n"
           "n = range(1, s)\n"
           "exact = condition(m * n != t)\n")
    program, ls = loops(tmp_path / "s.py", src)
    lower = LoopLowering(program, C)
    assert program.loop_order == ("t", "m", "n")
    assert isinstance(lower.form(ls["m"]), Counted) and isinstance(lower.form(ls["n"]), Solved)
    space = beast.load(tmp_path / "s.py")
    expected = sum(1 for t in range(1, 33) for m in range(1, t + 1) for n in range(1, t + 1) if m * n == t)
    assert [space.count(backend=b) for b in ("python", "c", "lua")] == [expected] * 3


# ---------------------------------------------------------------------------------------------
# The nest prepared for a target before printing (beast.ir.nestplan): every decision a printer
# made on its way, made once, in the order the printer prints

PLANS = {"c": (C, C_FUNCS, ("both",)), "lua": (LUA, LUA_FUNCS, ("count", "rows"))}


def _plan(program, target):
    return prepare(program, *PLANS[target])


def test_every_printed_nest_expression_is_lowered_once_before_printing(tmp_path):
    program, ls = loops(tmp_path / "s.py", (
        "a = range(1, 9)\n"
        "b = range(a, 20, a)\n"
        "d = a / 2\n"
        "e = iterator(max(a, d))\n"
        "f = union(range(a), [7])\n"
        "c = condition(d + b > 9)\n"))
    for target in PLANS:
        plan = _plan(program, target)
        exprs = [s.expr for s in walk_statements(program.body) if isinstance(s, (Let, Check))]
        exprs += [x.expr for v in "bf" for x in (plan.lower.form(ls[v]).bounds if v == "b" else
                                                 plan.lower.form(ls[v]).fill.left.bounds)]
        exprs.append(plan.lower.form(ls["e"]).value)
        for e in exprs:
            assert plan.ops[id(e)] is plan.lower.ops(e), (target, e)    # one lowering, memoized
    # C's nest variables are stored as int64_t, double or bn_num; its ops read those types
    c = _plan(program, "c")
    assert {v: c.lower.var_type(v) for v in "abdef"} == dict(a="int", b="int", d="float", e="int", f="int")


def test_the_printers_only_look_ops_up(tmp_path, monkeypatch):
    from beast.codegen import c as cgen, lua as luagen
    path = tmp_path / "s.py"
    path.write_text("from beast import *\na = range(1, 9)\nb = range(a, 20, a)\nd = a / 2\n"
                    "e = iterator(max(a, d))\n@condition\ndef f(a, b):\n    s = 0\n"
                    "    for i in range(a):\n        s += i * b\n    return s % 3 == 0\n")
    program = beast.load(path).program
    printing = []
    real_call, real_prepare = ir_ops.Lowering.__call__, prepare

    def lower(self, e):
        assert not printing, f"lowered while printing: {e!r}"
        return real_call(self, e)

    def prepared(*args, **kw):
        plan = real_prepare(*args, **kw)
        printing.append(True)
        return plan

    monkeypatch.setattr(ir_ops.Lowering, "__call__", lower)
    for module, print_ in ((cgen, cgen.print_c), (luagen, luagen.print_lua)):
        monkeypatch.setattr(module, "prepare", prepared)
        printing.clear()
        print_(program)
        assert printing


def test_a_refusal_is_raised_before_printing_with_the_printers_words(tmp_path):
    from beast.codegen.c import print_c
    from beast.codegen.lua import print_lua
    program, _ = loops(tmp_path / "s.py", "a = range(1, 5)\ns = select(a > 2, 'ab', 'cd')\n"
                                          "t = condition(s == 'ab')\n")
    said = "the C backend cannot compile a choice between str and str values in the loop nest"
    for refuse in (lambda: _plan(program, "c"), lambda: print_c(program)):
        with pytest.raises(Refused) as err:
            refuse()
        assert err.value.message == said
    assert "local s = ((a > 2) and \"ab\" or \"cd\")" in print_lua(program).text     # Lua compares strings
    program, _ = loops(tmp_path / "t.py", "a = range(1, 5)\ns = select(a > 2, 'ab', 'cd')\n"
                                          "t = condition(s + 'x' == 'abx')\n")
    for refuse in (lambda: _plan(program, "lua"), lambda: print_lua(program)):
        with pytest.raises(Refused) as err:
            refuse()
        assert err.value.message == "the Lua backend cannot translate '+' on str and str values"
        assert (err.value.lineno, err.value.col) == (4, 14)       # under the '+' it cannot translate


def test_a_split_part_too_big_for_a_lua_function_is_refused_before_printing(tmp_path):
    lets = "".join(f"x{i} = max(a, a / {i + 2})\n" for i in range(100))     # nums: two locals each
    program, _ = loops(tmp_path / "s.py", "a = range(1, 5)\n" + lets + "b = range(4)\n"
                       f"c = condition({' + '.join(f'x{i}' for i in range(100))} + b > 5)\n")
    with pytest.raises(Refused) as err:
        _plan(program, "lua")
    assert err.value.message == "the loop over 'b' reads 101 variables: more than a LuaJIT function can take"


def test_how_a_let_is_stored_is_decided_once_per_target(tmp_path):
    program, _ = loops(tmp_path / "s.py", (
        "a = range(1, 5)\n"
        "i = a * 2\n"
        "d = a / 2\n"
        "n = max(a, d)\n"
        "b = a > 2\n"
        "s = select(a > 2, 'ab', 'cd')\n"
        "t = condition((s == 'ab') & (i + d + n + b > 4))\n"))
    lets = {s.var: s for s in walk_statements(program.body) if isinstance(s, Let)}
    lua = _plan(program, "lua")
    assert {v: lua.store(s) for v, s in lets.items()} == dict(i="number", d="number", n="flagged", b="same",
                                                                s="same")
    assert LoopLowering(program, C).var_type("s") == "num" and lua.lower.var_type("s") == "str"
    program, _ = loops(tmp_path / "c.py", "a = range(1, 5)\ni = a * 2\nd = a / 2\nn = max(a, d)\nb = a > 2\n"
                                          "t = condition(i + d + n + b > 4)\n")
    c = _plan(program, "c")
    assert {v: c.lower.var_type(v) for v in "idnb"} == dict(i="int", d="float", n="num", b="bool")
    assert {s.var: c.store(s) for s in walk_statements(program.body) if isinstance(s, Let)} == \
        dict(i="number", d="number", n="flagged", b="same")


def test_whether_a_check_can_fire_comes_from_its_op(tmp_path):
    from beast.codegen.c import print_c
    from beast.codegen.lua import print_lua
    program, _ = loops(tmp_path / "s.py", "a = range(1, 5)\nk = 1 > 2\nnever = condition(k)\n"
                                          "odd = condition(a % 2 == 1)\n")
    checks = {s.name: s for s in walk_statements(program.body) if isinstance(s, Check)}
    for target in PLANS:
        plan = _plan(program, target)
        assert (plan.truth(checks["never"]), plan.truth(checks["odd"])) == (False, None)
    c, lua = print_c(program).text, print_lua(program).text
    assert "/* check never: False */\n    if (BN_UNLIKELY(__atomic_load_n(" in c      # nothing printed for it
    assert "if false" not in lua and lua.count("if a % 2 == 1 then goto") == 2


def test_a_constant_the_target_cannot_hold_is_the_loop_targets_policy(tmp_path):
    from beast.codegen.c import print_c
    program, ls = loops(tmp_path / "s.py", "a = range(1, 5)\nb = iterator([1, 2**70])\n")
    assert (C.wide, LUA.wide) == ("refuse", "check")
    assert LoopLowering(program, LUA).form(ls["b"]).wide == 2**70       # Lua: "integer overflow" when reached
    said = "iterator 'b' has the value 1180591620717411303424, which does not fit in 64 bits"
    with pytest.raises(BeastError) as err:
        LoopLowering(program, C).form(ls["b"])
    assert err.value.message == said
    # a set operation's constants too (the C printer failed on them with an OverflowError)
    program, ls = loops(tmp_path / "t.py", "a = range(1, 5)\nf = union(range(a), [2**70])\n")
    with pytest.raises(BeastError) as err:
        print_c(program)
    assert err.value.message == said.replace("'b'", "'f'")


def test_target_settings_live_in_the_ir(tmp_path):
    program, ls = loops(tmp_path / "s.py", (
        "a = range(1, 5)\n"
        "b = iterator(a * 2)\n"
        "c = iterator(max(a, a / 2))\n"
        "d = iterator(a > 2)\n"
        "@condition\ndef e(a):\n    return a > 2 or a % 2\n"))     # (inlined: `|` refuses a % 2)
    assert [l.var for l in LoopLowering(program, C).work_items()] == [l.var for l in claim_chain(program, 3)]
    assert LoopLowering(program, LUA).work_items() == []                 # one work item
    py = LoopLowering(program, PY_LOOPS)
    forms = {v: py.form(ls[v]) for v in "bcd"}       # Python's values keep their class: tested when they run
    assert {v: f.check for v, f in forms.items()} == {"b": "none", "c": "class", "d": "class"}
    e = next(s.expr for s in walk_statements(program.body) if isinstance(s, Check))
    assert (py.to_bool(e.left), py.to_bool(e.right)) == (False, True)   # a % 2: made a bool
    from beast.codegen.python import print_python
    text = print_python(program).text
    assert "_b_bool(a % 2)" in text and "_b_bool(a > 2)" not in text
    assert text.count("_b_int(") == 2 * 2            # c and d, in count and in rows
