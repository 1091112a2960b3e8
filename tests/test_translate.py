"""beast.ir.translate: which user functions a target translates, decided before any printing."""
from __future__ import annotations

import pytest

import beast
from beast.ir.body import Untranslatable, walk_body
from beast.ir.translate import NONE, Translated, param_types, translate
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
    assert isinstance(done, Translated)
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
    assert isinstance(translate(info, param_types(info, program.types)), Translated)
