"""The ``auto`` backend (the default) and what makes a first run cheap: the work estimate, the
choice, the fallback at a backend's own limits, the C build in the background, the cache keys."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import beast
from beast.errors import BeastError, EvaluationError
from beast.runtime import CHOICES, DEFAULT_BACKEND, auto
from beast.runtime import cache
from beast.runtime.c import background as c_background, enumerator as c_backend, toolchain
from conftest import ROOT, SPACES, available_backends, have_cc, rows, run_beast, write_space


needs_cc = pytest.mark.skipif(not have_cc(), reason="no C compiler")


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    """Each test gets an empty cache and the default rules (no forced choice)."""
    path = tmp_path / "cache"
    monkeypatch.setenv("BEAST_CACHE_DIR", str(path))
    monkeypatch.delenv("BEAST_AUTO_BACKEND", raising=False)
    monkeypatch.delenv("BEAST_BACKGROUND_BUILD", raising=False)
    return path


def outcome(space, backend, chunk_size=1 << 20):
    """('ok', rows, count) or ('error', message, file, line, col, config, hint)."""
    try:
        parts = list(space.iterate(chunk_size, backend=backend))
        arr = np.concatenate(parts) if parts else np.empty(0, dtype=space.dtype)
    except EvaluationError as err:
        return ("error", err.message, err.filename, err.lineno, err.col, dict(err.config), err.hint)
    return ("ok", rows(arr), space.count(backend=backend))


def _wait_for(path_glob, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(path_glob())
        if found:
            return found
        time.sleep(0.05)
    return []


# ---------------------------------------------------------------------------------------------
# The default and the choices

def test_auto_is_the_default_and_explicit_choices_stay():
    assert DEFAULT_BACKEND == "auto"
    assert set(CHOICES) == {"auto", "c", "lua", "python"}
    space = beast.load(os.path.join(SPACES, "fig01_iterators.py"))
    enumerator = space.enumerator()
    assert enumerator.backend in ("lua", "python")         # a tiny space: no compiler
    assert "estimated work" in enumerator.reason
    for backend in available_backends():                   # an explicit choice is that backend
        assert not hasattr(space.enumerator(backend), "reason")


def test_estimate_is_the_cartesian_size_when_bounds_are_constants(space_file):
    space = beast.load(space_file("""
        from beast import *
        a = range(10)
        b = iterator([1, 2, 3])
        c = range(2, 9, 3)
        condition(a + b > 100)
    """))
    assert auto.estimate_work(space.program) == 10 * 3 * 3


def test_estimate_bounds_dependent_loops(space_file):
    space = beast.load(space_file("""
        from beast import *
        a = range(1, 33)
        b = range(a, 65, a)
        c = range(b)
    """))
    work = auto.estimate_work(space.program)
    assert work >= space.count(backend="python")
    assert work <= 32 * 64 * 64


def test_choice_by_estimated_work(space_file, monkeypatch):
    space = beast.load(space_file("from beast import *\na = range(50)\nb = range(60)\n"))
    backend, reason, _ = auto.choose(space.program)
    assert backend in ("lua", "python") and "3e+03" in reason
    monkeypatch.setenv("BEAST_AUTO_BACKEND", "python")
    assert auto.choose(space.program)[0] == "python"
    monkeypatch.setenv("BEAST_AUTO_BACKEND", "fortran")
    with pytest.raises(BeastError, match="not a backend"):
        auto.choose(space.program)


def test_smallest_work_runs_python_then_lua_then_c(space_file, monkeypatch):
    """The thresholds in order: Python below PYTHON_WORK (no LuaJIT state to start), LuaJIT up to
    BACKGROUND_C_WORK (no C looked up), then C (cached, compiled now, or built for next time)."""
    monkeypatch.setenv("BEAST_BACKGROUND_BUILD", "0")
    assert 0 < auto.PYTHON_WORK < auto.BACKGROUND_C_WORK < auto.FOREGROUND_C_WORK
    side = int(auto.PYTHON_WORK ** 0.5)
    below = beast.load(space_file(f"from beast import *\na = range({side - 1})\nb = range({side})\n",
                                  "below.py"))
    assert auto.estimate_work(below.program) < auto.PYTHON_WORK
    assert auto.choose(below.program)[0] == "python"
    above = beast.load(space_file(f"from beast import *\na = range({side + 1})\nb = range({side})\n",
                                  "above.py"))
    assert auto.PYTHON_WORK <= auto.estimate_work(above.program) < auto.BACKGROUND_C_WORK
    assert auto.choose(above.program)[0] == ("lua" if "lua" in available_backends() else "python")
    for space in (below, above):
        assert outcome(space, "auto") == outcome(space, "python")


@needs_cc
def test_large_work_compiles_c_now_and_a_cached_build_is_used(space_file, monkeypatch, fresh_cache):
    path = space_file("from beast import *\na = range(400)\nb = range(400)\ncondition((a + b) % 7 == 0)\n")
    monkeypatch.setenv("BEAST_BACKGROUND_BUILD", "0")
    space = beast.load(path)
    assert space.enumerator().backend == ("lua" if "lua" in available_backends() else "python")
    assert not list(fresh_cache.glob("c/*.so"))          # nothing compiled, nothing started
    monkeypatch.setattr(auto, "FOREGROUND_C_WORK", 1000)
    space = beast.load(path)
    assert space.enumerator().backend == "c"
    expected = beast.load(path).count(backend="python")
    assert space.count() == expected
    monkeypatch.setattr(auto, "FOREGROUND_C_WORK", 10 ** 18)
    again = beast.load(path).enumerator()
    assert again.backend == "c" and "in the cache" in again.reason


# ---------------------------------------------------------------------------------------------
# Same rows, order and errors as every explicit backend

CASES = {
    "deferred_and_closures": """
        from beast import *
        a = range(1, 6)
        @iterator
        def b(a):
            return range(a, 12, a)
        @iterator
        def c(b):
            n = 1
            while n <= b:
                yield n
                n *= 2
        s = a * b + c
        condition(s % 3 == 0)
    """,
    "set_operations": """
        from beast import *
        a = range(1, 8)
        b = union(range(a), iterator([9, 3, 1]))
        condition((a + b) % 4 == 1)
    """,
    "division_by_zero": """
        from beast import *
        a = range(4)
        b = range(3)
        q = 10 // (a - b)
        condition(q > 4)
    """,
    "non_integer": """
        from beast import *
        a = range(1, 4)
        @iterator
        def b(a):
            return a / 2
    """,
}


@pytest.mark.parametrize("python_work", [auto.PYTHON_WORK, 0], ids=["small_to_python", "small_to_lua"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_auto_agrees_with_every_backend(space_file, name, python_work, monkeypatch):
    # these spaces are small: by default auto runs them in Python; with PYTHON_WORK at 0 it takes
    # the route of the medium spaces (LuaJIT, with the fallback to Python at Lua's limits)
    monkeypatch.setattr(auto, "PYTHON_WORK", python_work)
    space = beast.load(space_file(CASES[name], f"{name}.py"))
    expected = outcome(space, "python")
    assert outcome(space, "auto") == expected
    assert outcome(space, "auto", chunk_size=3) == expected
    for backend in available_backends():
        assert outcome(space, backend) == expected, backend


@pytest.mark.parametrize("name", ["fig01_iterators.py", "fig02_deferred.py", "fig03_primes.py",
                                  "fig06_fibonacci.py", "features.py"])
def test_auto_agrees_on_the_example_spaces(name):
    space = beast.load(os.path.join(SPACES, name))
    assert outcome(space, "auto") == outcome(space, "python")


@pytest.mark.skipif("lua" not in available_backends(), reason="no LuaJIT")
def test_lua_limit_falls_back_to_python_mid_stream(space_file, monkeypatch):
    # values beyond 2**53 are exact in Python and C, and an error in Lua: auto must not differ
    space = beast.load(space_file("""
        from beast import *
        a = range(12)
        b = range(2)
        big = select(a > 6, a * 2 ** 55, a)
        condition(big % 3 == 1)
    """))
    with pytest.raises(EvaluationError):
        space.count(backend="lua")
    monkeypatch.setenv("BEAST_AUTO_BACKEND", "lua")
    expected = outcome(space, "python")
    assert expected[0] == "ok"
    fresh = beast.load(space.path)
    assert fresh.enumerator().backend == "lua"
    assert outcome(fresh, "auto", chunk_size=2) == expected
    assert beast.load(space.path).count() == expected[2]


# ---------------------------------------------------------------------------------------------
# The background build

@needs_cc
def test_background_build_lands_a_whole_entry(space_file, fresh_cache):
    space = beast.load(space_file("from beast import *\na = range(30)\nb = range(a, 40)\n"))
    prepared = c_backend.prepare(space.program)
    assert c_backend.cached_library(prepared) is None
    build = c_background.build_in_background(prepared)
    assert c_background.build_in_background(prepared) is build        # once per entry and process
    assert build.wait(timeout=120)
    path = c_backend.cached_library(prepared)
    assert path is not None and path.endswith(".so")
    assert os.path.exists(path[:-3] + ".c")
    # the fresh cache lacked the runtime's object: the build compiled it and left it for the next
    runtime = fresh_cache / "c" / (prepared.runtime + ".o")
    assert runtime.exists() and runtime.with_suffix(".c").exists()
    assert not list((fresh_cache / "c").glob(".tmp-*"))
    assert c_background.build_in_background(prepared) is None          # already there
    enumerator = c_backend.build(space.program, source=prepared)
    assert enumerator.path == path
    assert enumerator.count() == space.count(backend="python")


@needs_cc
def test_a_killed_build_leaves_no_entry_and_is_cleaned_later(space_file, fresh_cache):
    space = beast.load(space_file("from beast import *\na = range(31)\nb = range(a, 41)\n"))
    prepared = c_backend.prepare(space.program)
    build = c_background.BackgroundBuild(prepared, cache.cache_dir("c"))
    os.killpg(build.process.pid, 9)          # the build dies (its own session: the compiler too)
    build.process.wait()
    assert c_backend.cached_library(prepared) is None
    leftovers = list((fresh_cache / "c").glob(".tmp-*"))
    assert leftovers                          # only its private directory is left
    old = time.time() - 2 * c_background.STALE_SECONDS
    for path in leftovers:
        os.utime(path, (old, old))
    again = c_background.build_in_background(prepared)
    assert again is not None and again.wait(timeout=120)
    assert not [p for p in (fresh_cache / "c").glob(".tmp-*") if p in leftovers]
    assert c_backend.build(space.program, source=prepared).count() == space.count(backend="python")


@needs_cc
def test_a_short_process_leaves_c_for_the_next_one(tmp_path, fresh_cache):
    path = write_space(tmp_path, "from beast import *\na = range(100)\nb = range(100)\nc = range(30)\n"
                                 "condition((a * b + c) % 11 != 0)\n")
    code = (f"import beast; e = beast.load({path!r}).enumerator(); "
            "print(e.backend, beast.load({path!r}).count())".replace("{path!r}", repr(path)))
    env = dict(os.environ, BEAST_CACHE_DIR=str(fresh_cache), PYTHONPATH=ROOT)
    env.pop("BEAST_AUTO_BACKEND", None)
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == 0, first.stderr
    used, count = first.stdout.split()
    assert used in ("lua", "python")       # it did not wait for the compiler
    assert _wait_for(lambda: (fresh_cache / "c").glob("*.so"))
    assert _wait_for(lambda: [True] if not list((fresh_cache / "c").glob(".tmp-*")) else [])
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            timeout=120)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["c", count]


# ---------------------------------------------------------------------------------------------
# Cache keys: a change of source, settings or device is a miss, the same program a hit

@needs_cc
def test_cache_hit_and_miss(space_file, fresh_cache):
    text = """
        from beast import *
        dev = device()
        width = setting("width", 8, choices=[8, 16])
        a = range(1, width + 1)
        b = range(1, dev.warp_size + 1)
        condition(a * b > dev.max_threads_per_block // 8)
    """
    path = space_file(text)
    base = beast.load(path, device="k40c")
    prepared = c_backend.prepare(base.program)
    c_backend.build(base.program, source=prepared)
    assert c_backend.cached_library(c_backend.prepare(beast.load(path, device="k40c").program))
    changed = {
        "settings": beast.load(path, device="k40c", settings={"width": 16}),
        "device": beast.load(path, device="h100"),
        "source": beast.load(space_file(text.replace("// 8", "// 4"), "other.py"), device="k40c"),
    }
    for what, space in changed.items():
        other = c_backend.prepare(space.program)
        if other.text == prepared.text:      # a device change that the program does not read
            continue
        assert c_backend.cached_library(other) is None, what
        assert other.entry != prepared.entry, what


def test_compiler_version_is_kept(fresh_cache):
    if not have_cc():
        pytest.skip("no C compiler")
    toolchain._compiler_id.clear()
    _, ident = c_backend.compiler()
    assert list((fresh_cache / "compilers").iterdir())
    toolchain._compiler_id.clear()
    assert c_backend.compiler()[1] == ident


def test_python_rows_become_the_same_arrays(space_file):
    """The Python backend (auto's route for small spaces) fills its arrays through one flat int64
    buffer: the same rows, dtype and chunking as building them from the row tuples, and a value
    past 64 bits is the same EvaluationError."""
    space = beast.load(space_file("""
        from beast import *
        a = range(-3, 4)
        b = iterator([1, 5, 2 ** 40])
        c = range(a, 5)
        d = select(c > 1, c * b, -b)
        e = range(0)
        condition((a + c) % 3 == 0)
    """))
    enumerator = space.enumerator("python")
    expected = [np.array(rows_, dtype=space.dtype) for rows_ in enumerator.rows(4)]
    chunks = list(space.iterate(4, backend="python"))
    assert [len(c) for c in chunks] == [len(c) for c in expected]
    for got, want in zip(chunks, expected):
        assert got.dtype == space.dtype and got.flags["C_CONTIGUOUS"] and rows(got) == rows(want)
    for backend in available_backends():
        assert rows(space.enumerate(backend="python")) == rows(space.enumerate(backend=backend))
    big = beast.load(space_file("""
        from beast import *
        a = range(3)
        @iterator
        def b(a):
            return [a, 2 ** 63 + a] if a == 2 else [a]
    """, "big.py"))
    # the same error in every backend: at the constant past 64 bits, when it is reached
    for backend in available_backends():
        with pytest.raises(EvaluationError) as info:
            big.enumerate(backend=backend)
        err = info.value
        assert (err.message, err.lineno, err.col, err.config) == ("integer overflow", 5, 15, {"a": 2}), backend


@needs_cc
def test_which_is_shutil_which(tmp_path, monkeypatch):
    import shutil
    tool = tmp_path / "bin" / "mycc"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (tmp_path / "bin" / "plain").write_text("not executable")
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "empty"), str(tool.parent),
                                                os.environ.get("PATH", "")]))
    for name in ("cc", "mycc", "plain", "no-such-compiler", str(tool), str(tool.parent), "sh"):
        assert toolchain._which(name) == shutil.which(name), name


# ---------------------------------------------------------------------------------------------
# What a first run imports and parses

_IMPORTS = """
import sys, beast
space = beast.load(sys.argv[1])
n = space.count()
rows = space.enumerate()
print(n, len(rows), getattr(space.enumerator(), "backend", "?"))
print(" ".join(m for m in ("subprocess", "shutil", "tempfile", "beast.lang.devices", "beast.codegen.c",
                           "lupa") if m in sys.modules))
"""


def _first_run(path, cache):
    env = dict(os.environ, BEAST_CACHE_DIR=str(cache), PYTHONPATH=ROOT, BEAST_BACKGROUND_BUILD="1")
    env.pop("BEAST_AUTO_BACKEND", None)
    proc = subprocess.run([sys.executable, "-c", _IMPORTS, path], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    counts, imported = (proc.stdout.splitlines() + [""])[:2]
    return counts.split(), set(imported.split())


def test_a_small_first_run_imports_only_what_it_runs(tmp_path, fresh_cache):
    # no device profile read, Python chosen: no device tables, no LuaJIT, no C printer, no processes
    path = write_space(tmp_path, "from beast import *\na = range(8)\nb = range(a, 8)\n"
                                 "condition((a + b) % 3 == 0)\n")
    (n, rows_, used), imported = _first_run(path, fresh_cache)
    assert n == rows_ == str(beast.load(path).count(backend="python")) and used == "python"
    assert imported == set()


@needs_cc
def test_a_warm_c_run_starts_no_process_and_writes_nothing(tmp_path, fresh_cache):
    path = write_space(tmp_path, "from beast import *\na = range(200)\nb = range(200)\nc = range(5)\n"
                                 "condition((a * b + c) % 7 == 0)\n")
    space = beast.load(path)
    expected = str(space.count(backend="python"))
    (n, _, used), _ = _first_run(path, fresh_cache)       # fills the cache as a user's first run does
    assert used != "c" and n == expected
    assert _wait_for(lambda: (fresh_cache / "c").glob("*.so"))
    assert _wait_for(lambda: [True] if not list((fresh_cache / "c").glob(".tmp-*")) else [])
    (n, _, used), imported = _first_run(path, fresh_cache)
    assert used == "c" and n == expected
    assert not imported & {"subprocess", "shutil", "tempfile", "lupa", "beast.lang.devices"}


def test_the_ast_is_parsed_only_when_needed(space_file):
    import ast
    plain = beast.load(space_file("from beast import *\na = range(4)\nb = a * 2\ncondition(b > 5)\n"))
    assert plain.module._tree is None
    assert ast.dump(plain.module.tree) == ast.dump(ast.parse(plain.module.source))
    with_function = beast.load(space_file("""
        from beast import *
        a = range(1, 6)
        @iterator
        def b(a):
            return range(a, 10, a)
    """, "functions.py"))
    assert with_function.module._tree is not None
    assert with_function.count() == sum(len(range(a, 10, a)) for a in range(1, 6))


def test_the_device_is_resolved_only_when_read(space_file):
    path = space_file("from beast import *\na = range(3)\n")
    assert beast.load(path).device.name == "k40c"
    assert beast.load(path, device="h100").device.name == "h100"
    with pytest.raises(beast.DeviceError):
        beast.load(path, device="no-such-gpu")          # still reported before the file runs


# ---------------------------------------------------------------------------------------------
# The command line

def test_cli_backend_auto_and_explicit(tmp_path):
    path = write_space(tmp_path, "from beast import *\na = range(5)\nb = range(a)\n")
    for backend in ("auto", *available_backends()):
        out = run_beast("count", path, "--backend", backend)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "10"
    bad = run_beast("count", path, "--backend", "fortran")
    assert bad.returncode != 0 and "auto" in bad.stderr
