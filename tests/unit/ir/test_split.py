"""beast.ir.split: where a deep loop nest moves into a function of its own, decided once from a
target's Budget (Python: nesting depth; LuaJIT: locals in scope), and the printers that only spell
it giving the same configurations as the reference."""
import re

import beast
from beast.codegen.python import PY_LOOPS, print_python
from beast.ir import Loop, walk_statements
from beast.ir.loops import LoopLowering, LoopTarget
from beast.ir.split import Budget, parts
from beast.ir.targets import LUA_LOOPS
from conftest import available_backends


def deep(path, n, every=1):
    """A chain of n dependent loops (no constant chains, no pure counting nest) with a num let;
    the loops are two values long every ``every`` loops, else one."""
    lines = ["from beast import *", "a0 = range(2)", "e = select(a0 > 0, a0 * 2, a0 / 2)"]
    lines += [f"a{i} = range(a{i - 1}, a{i - 1} + {2 if i % every == 0 else 1})" for i in range(1, n)]
    lines += [f"c = condition(a{n - 1} + e > {n // every + 1})"]
    path.write_text("\n".join(lines) + "\n")
    program = beast.load(path).program
    return program, {s.var: s for s in walk_statements(program.body) if isinstance(s, Loop)}


def test_python_splits_by_depth_and_passes_every_bound_variable(tmp_path):
    program, ls = deep(tmp_path / "s.py", 40)
    found = parts(LoopLowering(program, PY_LOOPS), program.body, "rows")
    starts = sorted(int(found[k].loop.var[1:]) for k in found)
    assert starts == [15, 30]          # a0 at depth 1: a15 at depth 16; again 15 deeper
    first = found[id(ls["a15"])]
    assert first.params == ("a0", "e") + tuple(f"a{i}" for i in range(1, 15)) and first.fits
    assert found[id(ls["a30"])].params[-1] == "a29"
    assert parts(LoopLowering(program, LoopTarget()), program.body, "rows") == {}   # no budget


def test_lua_counts_locals_and_passes_what_the_part_reads(tmp_path):
    program, ls = deep(tmp_path / "s.py", 60)
    low = LoopLowering(program, LUA_LOOPS)
    rows, count = parts(low, program.body, "rows"), parts(low, program.body, "count")
    # 3 locals on top, 2 for the num let e, 4 per counted loop: 3 + 2 + 4 * 27 > 110 at a27
    assert min(int(p.loop.var[1:]) for p in rows.values()) == 27
    part = rows[id(ls["a27"])]
    assert part.params == ("a0", "e") + tuple(f"a{i}" for i in range(1, 27))   # every column read
    # a part of rows takes the buffer state too: its own budget is spent sooner than count's
    assert sorted(p.loop.var for p in count.values()) == ["a27", "a48"]
    assert sorted(p.loop.var for p in rows.values()) == ["a27", "a47"]
    tight = LoopTarget(split=Budget(limit=110, top=3, part=1, param=1, num_param=2, loop=4,
                                    params="read", max_start=2))
    assert not parts(LoopLowering(program, tight), program.body, "count")[id(ls["a27"])].fits


def test_split_code_gives_the_same_configurations(tmp_path):
    program, _ = deep(tmp_path / "s.py", 36, every=7)
    assert re.search(r"^def _b_rows_\d+\(_b_chunk, _b_st, a0, e, a1,", print_python(program).text, re.M)
    space = beast.load(tmp_path / "s.py")
    expected = list(space.enumerate(backend="python"))
    assert len(expected) > 0
    for backend in available_backends():
        assert list(space.enumerate(backend=backend)) == expected, backend


def test_lua_part_takes_only_what_it_reads(tmp_path):
    """A let that the nest below does not read (a condition's own value) is no parameter."""
    path = tmp_path / "s.py"
    lines = ["from beast import *", "a0 = range(2)"]
    lines += [f"a{i} = range(a{i - 1}, a{i - 1} + 2)" for i in range(1, 40)]
    lines += ["@condition", "def c(a0, a1):", "    t = a0 + a1", "    return t > 5"]
    path.write_text("\n".join(lines) + "\n")
    program = beast.load(path).program
    lets = [s.var for s in walk_statements(program.body) if not isinstance(s, Loop) and hasattr(s, "var")]
    found = parts(LoopLowering(program, LUA_LOOPS), program.body, "count")
    assert found
    for part in found.values():
        assert not set(lets) & set(part.params)
