"""Tightened loops (solved equalities, monotone breaks) give exactly the plain loops' output."""
import numpy as np
import pytest

import beast
from beast.ir import Check, Loop, build_program, walk_statements
from beast.lang.devices import resolve_device
from beast.expr.sequences import SolveSeq
from beast.runtime.python import PythonEnumerator

SMALL = resolve_device("k40c").replace(max_threads_dim_x=32, max_threads_dim_y=32,
                                       max_threads_per_block=128, warp_size=8,
                                       max_shared_mem_per_block=4096, max_shmem_per_multi_processor=8192,
                                       max_regs_per_block=4096, max_registers_per_multi_processor=8192,
                                       max_registers_per_thread=64)


def rows(program):
    out = [r for chunk in PythonEnumerator(program).rows(1 << 16) for r in chunk]
    return out


@pytest.mark.parametrize("settings", [{}, {"precision": "single"}, {"arithmetic": "complex"},
                                      {"trans_a": "1", "trans_b": "1", "precision": "single"}])
def test_gemm_tightening_changes_nothing(settings):
    space = beast.load("spaces/gemm.py", device=SMALL, settings=settings)
    plain = build_program(space.plan, "gemm", tighten=False)
    tight = build_program(space.plan, "gemm", tighten=True)
    assert rows(plain) == rows(tight)
    assert len(rows(tight)) > 0


def test_gemm_is_tightened():
    """The equalities of Fig. 15 solve dim_n_a and dim_n_b; the hard limits break their loops."""
    space = beast.load("spaces/gemm.py", device="k40c")
    stmts = list(walk_statements(space.program.body))
    solved = {s.var for s in stmts if isinstance(s, Loop) and isinstance(s.seq, SolveSeq)}
    assert solved == {"dim_n_a", "dim_n_b"}
    breaking = {s.name for s in stmts if isinstance(s, Check) and s.exit == "break"}
    assert {"over_max_threads", "over_max_shmem", "over_max_regs_per_thread"} <= breaking
    assert "partial_warps" not in breaking and "cant_reshape_a2" not in breaking


def test_break_not_used_when_a_later_division_could_fail(tmp_path):
    """A let that divides by something that may become zero later keeps the plain 'continue'."""
    path = tmp_path / "s.py"
    path.write_text(
        "from beast import *\n"
        "a = range(1, 6)\n"
        "b = range(0, 8)\n"
        "y = 12 // (4 - b)\n"
        "odd = condition(y < -100)\n"
        "big = condition(b > 2)\n")
    space = beast.load(path)
    checks = {s.name: s.exit for s in walk_statements(space.program.body) if isinstance(s, Check)}
    assert checks["big"] == "continue"
    with pytest.raises(beast.EvaluationError) as err:
        space.count()
    assert err.value.config == {"b": 4}     # a reads nothing: it is the innermost loop


def test_negative_step_breaks_in_iteration_order(tmp_path):
    path = tmp_path / "s.py"
    path.write_text(
        "from beast import *\n"
        "a = range(10, 0, -1)\n"
        "b = range(1, 4)\n"
        "small = condition(a * b < 6)\n")
    space = beast.load(path)
    plain = build_program(space.plan, "s", tighten=False)
    assert rows(plain) == rows(space.program)
    got = space.enumerate()
    assert np.all(got["a"] * got["b"] >= 6)


@pytest.mark.parametrize("body", ["c = condition(b * a != 0)", "c = condition(a * b != a + 1)",
                                  "c = condition(b * (a - 1) != 2 * a - 2)"])
def test_a_product_whose_factor_may_be_zero_is_not_solved(space_file, body, backend):
    """``b * a != 0`` rejects nothing when a == 0: every b survives there (a single solved
    candidate would lose them), in every backend."""
    path = space_file(f"from beast import *\na = range(0, 3)\nb = range(0, 4)\n{body}\n")
    space = beast.load(path)
    plain = rows(build_program(space.plan, "s", tighten=False))
    expected = [(a, b) for a in range(3) for b in range(4)
                if not eval(body.split("(", 1)[1].rsplit(")", 1)[0], {"a": a, "b": b})]  # noqa: S307
    assert sorted(plain) == sorted(expected)
    got = space.enumerate(backend=backend)
    assert sorted(zip(got["a"].tolist(), got["b"].tolist())) == sorted(expected)


def test_a_product_with_a_positive_factor_is_still_solved(space_file):
    space = beast.load(space_file("from beast import *\na = range(1, 5)\nb = range(0, 20)\n"
                                  "c = condition(b * a != 12)\n"))
    loops = [s for s in walk_statements(space.program.body) if isinstance(s, Loop)]
    assert any(isinstance(s.seq, SolveSeq) for s in loops)
    got = space.enumerate()
    assert sorted(zip(got["a"].tolist(), got["b"].tolist())) == [(1, 12), (2, 6), (3, 4), (4, 3)]
