"""beast.ir.ops: the decisions of every typed operation (type, folding, checks, intervals), checked
against Python's own arithmetic. The soundness tests use a tiny integer width so that every pair of
operand values can be tried: a check that is left out must be one that cannot fire."""
from __future__ import annotations

import itertools

import pytest

from beast.expr.nodes import BINOPS, BinOp, BoolOp, Call, Compare, Const, Not, Select, UnOp, Var, binop_type
from beast.ir import ops, storage
from beast.ir.body import Untranslatable

TINY = ops.Target(-8, 7, 4)                       # asymmetric, like int64: -(-8) does not fit
TINY_SYM = ops.Target(-7, 7, 4)                   # symmetric, like LuaJIT's exact doubles
INTERVALS = [(0, 0), (1, 3), (-3, -1), (-2, 2), (0, 7), (-8, -5), (2, 2), (-1, -1), (5, 7), (-8, 7)]


def _int(iv):
    return ops.operand("int", iv[0] == iv[1], iv[0] if iv[0] == iv[1] else None, iv)


@pytest.mark.parametrize("target", [TINY, TINY_SYM], ids=["asym", "sym"])
@pytest.mark.parametrize("op", ["+", "-", "*", "//", "%", "/", "**"])
def test_dropped_checks_cannot_fire(target, op):
    """Whenever arith() leaves a check out, no operand values in the intervals make it fire, and
    the result interval it claims holds every result."""
    for ia, ib in itertools.product(INTERVALS, repeat=2):
        if not (target.fits(ia[0]) and target.fits(ib[0])):
            continue
        if op == "**" and ib[0] != ib[1]:
            continue                              # int ** int is exact only for a constant exponent
        d = ops.arith(op, _int(ia), _int(ib), target)
        for a, b in itertools.product(range(ia[0], ia[1] + 1), range(ib[0], ib[1] + 1)):
            try:
                r = BINOPS[op](a, b)
            except ZeroDivisionError:
                assert d.kind == "binop" and d.check in ("zero", "pow"), (op, ia, ib)
                continue
            if d.kind == "const":
                assert d.value == r and type(d.value) is type(r)
                continue
            assert d.type == binop_type(op, "int", "int", ib[0] if ib[0] == ib[1] else None)
            if isinstance(r, int) and d.check is None:
                assert target.fits(r), (op, a, b, r)
                if op == "%":                     # computed as a - floor(a / b) * b
                    assert target.fits(abs(a) + abs(b))
            if d.iv is not None:
                assert d.iv[0] <= r <= d.iv[1], (op, ia, ib, d.iv, r)


@pytest.mark.parametrize("target", [TINY, TINY_SYM], ids=["asym", "sym"])
def test_negate_and_abs_check_only_what_can_overflow(target):
    for ia in INTERVALS + [None]:
        v = _int(ia) if ia else ops.operand("int")
        values = range(ia[0], ia[1] + 1) if ia else range(target.lo, target.hi + 1)
        for d, fn in ((ops.negate(v, target), lambda x: -x), (ops.negate(v, target, kind="abs"), abs)):
            fits = all(target.fits(fn(x)) for x in values)
            assert (d.check is None) == (fits or ia is not None and target.fits(-ia[0])), (d, ia)
            if d.check is None:
                assert fits
            if d.iv is not None:
                assert all(d.iv[0] <= fn(x) <= d.iv[1] for x in values)


def test_folding_stays_inside_the_width_and_the_target_fold_set():
    big = ops.operand("int", True, ops.C64.hi)
    one = ops.operand("int", True, 1)
    assert ops.arith("+", one, one, ops.C64).value == 2
    out = ops.arith("+", big, one, ops.C64)           # 2**63 is no int64: computed (and checked)
    assert out.kind == "binop" and out.check == "overflow"
    lua = ops.Target(-(2 ** 53 - 1), 2 ** 53 - 1, 53, fold=frozenset("+"))
    assert ops.arith("**", one, one, lua).kind == "binop"     # not in that target's fold set
    assert ops.arith("**", one, one, ops.C64).value == 1
    assert ops.arith("/", one, ops.operand("int", True, 0), ops.C64).check == "zero"


def test_forms_and_types():
    i, f, n = ops.operand("int"), ops.operand("float"), ops.operand("num")
    neg = ops.operand("int", True, -1)
    two = ops.operand("int", True, 2)
    assert (ops.arith("**", i, neg, ops.C64).form, ops.arith("**", i, neg, ops.C64).type) == ("nn", "num")
    assert (ops.arith("**", i, two, ops.C64).form, ops.arith("**", i, two, ops.C64).type) == ("ii", "int")
    assert ops.arith("+", i, f, ops.C64).form == "dd"
    assert ops.arith("+", i, n, ops.C64).form == "nn"
    assert ops.arith("/", i, i, ops.C64).type == "float"
    assert ops.arith("/", f, ops.operand("float", True, 0.5), ops.C64).check is None
    assert ops.minmax("min", ops.operand("bool"), ops.operand("bool"), ops.C64).type == "bool"
    assert ops.minmax("max", i, f, ops.C64).type == "num"


def test_lowering_of_expressions():
    types = {"x": "int", "y": "float", "b": "bool"}
    low = ops.Lowering(lambda name: types[name])
    op = low(BinOp("+", Var("x"), Const(1)))
    assert (op.kind, op.type, op.form, op.check) == ("binop", "int", "ii", "overflow")
    assert [(a.kind, a.value, a.iv) for a in op.args] == [("var", "x", None), ("const", 1, (1, 1))]
    ivs = ops.Target(-(2 ** 53 - 1), 2 ** 53 - 1, 53, var_iv={"x": (0, 10)}.get)
    op = ops.Lowering(lambda name: types[name], target=ivs)(BinOp("+", Var("x"), Const(1)))
    assert op.check is None and op.iv == (1, 11)
    op = low(Compare("<", Var("x"), Var("b")))                            # a bool compares as an int
    assert (op.kind, op.type, op.op, op.form, [(a.kind, a.type) for a in op.args]) == \
        ("cmp", "bool", "<", "ii", [("var", "int"), ("var", "bool")])
    op = low(BoolOp("and", Compare("<", Var("x"), Const(3)), Not(Var("b"))))   # integer tests: plain ops
    assert (op.kind, op.type, [a.kind for a in op.args], op.args[1].args[0].value) == \
        ("and", "bool", ["cmp", "not"], "b")
    op = low(Select(Var("b"), Var("x"), Const(3)))
    assert (op.kind, op.type, [a.kind for a in op.args]) == ("select", "int", ["var", "var", "const"])
    assert low(Compare("<", Var("x"), Var("y"))).form == "id"             # exact int/double comparison
    assert low(Select(Const(True), Var("y"), Var("x"))).kind == "var"     # a constant choice folds
    assert low(UnOp("-", Const(-(2 ** 63)))).check == "overflow"          # -(-2**63) is no int64
    assert low(Call("min", (Const(3), Const(2)))).value[-1].value == 2
    with pytest.raises(Untranslatable):
        low(BinOp("&", Var("y"), Var("x")))
    with pytest.raises(Untranslatable, match="does not fit in 64 bits"):
        low(Const(2 ** 63))


def test_comparisons_fold_what_the_types_decide():
    i, f, n, s = ops.operand("int"), ops.operand("float"), ops.operand("num"), ops.operand("str")
    one, a = ops.operand("int", True, 1), ops.operand("str", True, "a")
    assert ops.compare("<", one, a) is None                       # Python raises: no target compares
    assert ops.compare("==", i, s).value is False                 # a number never equals a string
    assert ops.compare("!=", ops.operand("none", True, None), s).value is True
    assert [ops.compare("<", x, y).form for x, y in ((i, i), (f, f), (i, f), (f, i), (n, i))] == \
        ["ii", "dd", "id", "di", "nn"]
    assert ops.compare("<", s, a).form == "ss"
    assert ops.compare(">=", ops.operand("float", True, 2.5), one).value is True


def test_a_53_bit_target_with_intervals():
    """What the Lua printer asks for: bools converted to 0/1 in arithmetic (with their interval), a
    literal beyond the width failing at run time, choices that keep their branches' hull."""
    types = {"x": "int", "b": "bool", "s": "str"}
    lua = ops.Target(-(2 ** 53 - 1), 2 ** 53 - 1, 53, var_iv={"x": (0, 10)}.get,
                     intervals=True, bools_are_ints=False, huge_fails=True, strings=True, eval_dead=True)
    low = ops.Lowering(lambda name: types[name], target=lua)
    op = low(BinOp("+", Var("b"), Var("x")))
    assert op.args[0].kind == "conv" and op.args[0].iv == (0, 1) and op.check is None and op.iv == (0, 11)
    assert low(Const(2 ** 60)).kind == "huge"
    pick = low(Select(Const(False), Var("x"), BinOp("//", Var("x"), Const(0))))
    assert pick.kind == "pick" and pick.value == 1 and pick.args[2].check == "zero"
    assert low(Select(Var("b"), Var("x"), Const(20))).iv == (0, 20)
    assert low(Compare("<", Var("s"), Const("a"))).form == "ss"
    c_bool = ops.Lowering(lambda name: types[name])(BinOp("+", Var("b"), Var("x"))).args[0]
    assert (c_bool.kind, c_bool.type) == ("var", "bool")                # on C a bool is an int: no conv


def test_a_body_target_with_tables():
    """What the Lua body translator asks for: lists as tables (fresh literals, shared constants,
    other constant sequences as tuples), `in` over a literal as == in order, `is None` by type,
    ~x as -x - 1, bit operations refused, constant indexes, lengths and conversions folded; the
    64-bit target keeps refusing all of it."""
    from beast.ir.body import ConstArr, Conv, Fold, Identity, In, Index, ListLit
    types = {"x": "int", "f": "float", "s": "str", "L": "list"}
    body = ops.Target(-(2 ** 53 - 1), 2 ** 53 - 1, 53, bools_are_ints=False, strings=True, tables=True,
                      objects=True, member=True, is_none=True, bitwise=False, invert=False,
                      fold_conv=True, index_nums=True)
    low, c = ops.Lowering(lambda name: types[name], target=body), ops.Lowering(lambda name: types[name])
    fresh, shared = ConstArr([1, -2], False, literal=True), ConstArr([1, -2], True, literal=False)
    assert (low(fresh).kind, low(fresh).type, low(fresh).value) == ("table", "list", (1, -2))
    assert (low(shared).kind, low(shared).type) == ("carray", "list") and c(shared).type == "carray"
    huge = low(ConstArr([2 ** 60], True, literal=True))
    assert (huge.kind, huge.type, huge.value) == ("const", "tuple", (2 ** 60,))
    mixed = ListLit([Const(1), Const("a"), Const(None)], is_tuple=True)
    assert low(mixed).type == "tuple" and low(Fold("len", mixed)).value == 3
    member = low(In(Var("s"), ListLit([Var("s"), Const(2)]), True))     # == in order, negated
    assert member.kind == "member" and member.value[1] is True
    tests = member.value[0]
    assert (tests[0].kind, tests[0].form) == ("cmp", "ss") and tests[1].value is False   # a str is never 2
    with pytest.raises(Untranslatable):
        c(In(Var("s"), ListLit([Var("s"), Const(2)]), False))
    assert low(In(Var("x"), mixed, False)).kind == "member"
    assert low(In(Var("x"), Var("L"), False)).kind == "in"
    assert low(BinOp("+", Var("L"), Var("L"))).kind == "concat"
    with pytest.raises(Untranslatable):
        c(BinOp("+", Var("L"), Var("L")))
    with pytest.raises(Untranslatable, match="operator &"):
        low(BinOp("&", Var("x"), Var("x")))
    assert low(Identity(False, Var("x"), Const(None))).value is False
    assert low(Identity(True, Const(None), Const(None))).value is False
    with pytest.raises(Untranslatable):
        c(Identity(False, Var("x"), Const(None)))
    inv = low(UnOp("~", Var("x")))
    assert (inv.kind, inv.op, inv.args[0].kind, inv.args[1].value) == ("binop", "-", "neg", 1)
    assert c(UnOp("~", Var("x"))).kind == "invert"
    assert low(Index(shared, Const(1))).value == -2                    # folded: a constant index
    assert low(Index(shared, Const(5))).check == "index"                # fails at run time, as Python
    assert low(Index(Var("L"), Var("f"))).kind == "index"               # a float index fails at run time
    with pytest.raises(Untranslatable):
        c(Index(Var("L"), Var("f")))
    assert low(Conv("float", Const(2))).value == 2.0 and low(Conv("bool", Const(""))).value is False
    assert low(Conv("bool", Var("s"))).kind == "conv" and c(Conv("float", Const(2))).kind == "conv"
    assert low(Const(1j)).type == "obj"
    with pytest.raises(Untranslatable):
        c(Const(1j))


def test_statement_decisions():
    """How a body stores, returns, appends and yields by static type (c_body and lua_body spell them)."""
    assert storage.store_kind("list", "carray") == "fill" and storage.store_kind("list", "list", shared=True) == "fill"
    assert storage.store_kind("list", "list") == "list" and storage.store_kind("list", "int") is None
    assert [storage.store_kind(local, "bool") for local in ("int", "num", "bool", "float")] == \
        ["number", "number", "number", "widen"]
    assert storage.store_kind("int", "float") == "widen" and storage.store_kind("num", "float") == "number"
    assert storage.store_kind("str", "str") == "str" and storage.store_kind("int", "str") is None
    assert [storage.return_kind(t) for t in ("none", "range", "list", "carray", "bool", "num", "str")] == \
        ["none", "range", "list", "list", "number", "number", None]
    assert [storage.element_ok(t) for t in ("int", "bool", "float", "num")] == [True, True, False, False]
    assert [storage.yield_ok(t) for t in ("bool", "num", "list", "str")] == [True, True, False, False]


def test_list_statement_decisions():
    """Clearing, refusals of list assignments, local entry and checked stores (c_body spells them)."""
    from beast.ir.body import Assign, ListLit

    assert storage.list_store(Assign(None, ["a"], ListLit([]))) == "clear"
    assert storage.list_store(Assign(None, ["a"], ListLit([Const(1)]))) == "value"
    with pytest.raises(Untranslatable, match="two names for one list"):
        storage.list_store(Assign(None, ["a"], Var("b")))
    assert storage.list_store(Assign(None, ["a"], Var("b")), aliases=True) == "value"
    with pytest.raises(Untranslatable, match="'\\+=' on a list"):
        storage.list_store(Assign(None, ["a"], BinOp("+", Var("a"), Var("b")), aug=True))
    with pytest.raises(Untranslatable, match="'\\+=' on a list"):      # Lua's tables alias, and still refuse it
        storage.list_store(Assign(None, ["a"], BinOp("+", Var("a"), Var("b")), aug=True), aliases=True)
    assert [storage.local_init("x", t, ["x"]) for t in ("list", "int", "num")] == ["list", "param", "param"]
    assert storage.local_init("y", "float", ["x"]) == "zero"
    with pytest.raises(Untranslatable, match="the local 'y' \\(a str\\)"):
        storage.local_init("y", "str", [])
    assert storage.checked_store("a", "list", "carray") == "fill" and storage.checked_store("n", "int", "float") == "widen"
    with pytest.raises(Untranslatable, match="assigning a int to the list 'a'"):
        storage.checked_store("a", "list", "int")
    with pytest.raises(Untranslatable, match="assigning a list to 'n'"):
        storage.checked_store("n", "int", "list")


def test_let_and_parameter_entry_decisions():
    """A nest Let's binding by the types of its variable and value; a widened parameter's entry."""
    assert [storage.let_kind("num", t) for t in ("int", "bool", "float", "num")] == ["flagged"] * 4
    assert [storage.let_kind("int", t) for t in ("int", "bool", "float", "num")] == ["number", "number", None, None]
    assert [storage.let_kind("float", t) for t in ("int", "bool", "float", "num")] == ["number"] * 3 + [None]
    assert storage.let_kind("bool", "bool") == "same" and storage.let_kind("bool", "int") is None
    assert storage.let_kind("str", "str") == "same" and storage.let_kind("str", "int") is None
    assert storage.param_entry("int", "int") == (False, None) and storage.param_entry("num", "num") == (False, None)
    assert storage.param_entry("int", "bool") == (True, None) and storage.param_entry("num", "bool") == (True, False)
    assert storage.param_entry("num", "int") == (False, False) and storage.param_entry("num", "float") == (False, True)
    assert storage.param_entry("float", "int") == (False, None)


def test_table_values_lay_out_every_result_kind():
    """A tabulated iterator's results as flat arrays: kinds, offsets, values and their tags."""
    from beast.ir.tabulate import Table, float_bits

    objects = []

    def intern(v):
        objects.append(v)
        return len(objects) - 1

    entries = [([0], ("values", [1, True, 2.5, 1 << 70], None)), ([1], ("range", (0, 9, 3), None)),
               ([2], ("none", None, None)), ([3], ("badret", "not iterable", None))]
    kinds, offs, vals, tags = storage.table_values(Table(None, ["int"], entries), intern)
    assert kinds == [0, 1, 2, 3] and offs == [0, 4, 7, 7, 8]
    assert vals == [1, 1, float_bits(2.5), 0, 0, 9, 3, 1] and tags == [0, 0, 1, 2, 0, 0, 0, 0]
    assert objects == [1 << 70, "not iterable"]


@pytest.mark.parametrize("target", [TINY, TINY_SYM], ids=["asym", "sym"])
def test_len_of_a_range_is_checked_unless_every_length_fits(target):
    """len(range(a, b, c)) (Python's len() raises past its width): a length op without a check has
    every length of the ends' intervals inside the width, and its interval holds them all."""
    lowering = ops.Lowering(lambda name: "int", target=target)
    steps = [ops.operand("int", True, c, (c, c)) for c in (1, -1, 2, -3)] + [ops.operand("int")]
    for ia, ib in itertools.product(INTERVALS, repeat=2):
        for step in steps:
            d = lowering.range_len(ops.new_op("range", "range", (_int(ia), _int(ib), step)), None)
            cs = [step.value] if step.kind == "const" else [c for c in range(-8, 8) if c]
            lengths = [len(range(a, b, c)) for a in range(ia[0], ia[1] + 1) for b in range(ib[0], ib[1] + 1)
                       for c in cs]
            if d.check is None:
                assert all(target.fits(n) for n in lengths), (ia, ib, step.value)
                assert all(d.iv[0] <= n <= d.iv[1] for n in lengths), (ia, ib, step.value, d.iv)
            else:
                assert d.check == "overflow" and d.iv is None
    unknown = ops.operand("int")
    assert lowering.range_len(ops.new_op("range", "range", (unknown, unknown, unknown)), None).check == "overflow"
