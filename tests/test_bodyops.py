"""beast.ir.bodyops: which user functions the Lua backend translates, decided before any printing."""
from __future__ import annotations

import pytest

pytest.importorskip("lupa")

import beast  # noqa: E402
from beast.codegen.lua import print_lua  # noqa: E402
from beast.codegen.lua_body import BODY  # noqa: E402
from beast.ir.body import walk_body  # noqa: E402
from beast.ir.bodyops import decide, known_truth  # noqa: E402
from conftest import write_space  # noqa: E402

SPACE = """
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
    program = beast.load(write_space(tmp_path, SPACE)).program
    ptypes = {f.name: {a: program.types.get(a, "num") for a in f.node_args} for f in program.funcs.values()}
    return program, {f.name: decide(f, ptypes[f.name], BODY, f.name in force) for f in program.funcs.values()}


def test_a_translated_body_has_every_printed_expression_lowered(tmp_path):
    program, done = _decided(tmp_path)
    stores = done["stores"]
    assert stores.reason is None            # item assignment and sorted() hold in Lua's tables
    for st in walk_body(stores.body.body):
        for name in ("value", "test", "iterable", "container", "index"):
            e = getattr(st, name, None)
            if e is not None:
                assert id(e) in stores.ops, (st, name)
    assert stores.types["x"] == "list"


def test_the_first_refusal_in_print_order_decides_and_the_printer_says_so(tmp_path):
    program, done = _decided(tmp_path)
    assert done["refused"].reason == "a local bound to a module-level list"     # before the truth of a tuple
    source = print_lua(program)
    reasons = {program.funcs[i].name: why for i, why in source.untranslated_reasons.items()}
    assert reasons == {"refused": "a local bound to a module-level list"}
    assert "called in Python (a local bound to a module-level list)" in source.text


def test_what_follows_a_return_a_constant_decides_is_not_walked(tmp_path):
    program, done = _decided(tmp_path)
    assert done["dead"].reason is None      # `x = PRIMES` is dead: 3 in (1, 2, 3) is known true
    test = next(st.test for st in walk_body(done["dead"].body.body) if type(st).__name__ == "If")
    assert known_truth(done["dead"].ops[id(test)]) is True


def test_forced_functions_are_not_lowered(tmp_path):
    program, done = _decided(tmp_path, force={"stores"})
    assert done["stores"].reason == "forced" and done["stores"].ops is None
