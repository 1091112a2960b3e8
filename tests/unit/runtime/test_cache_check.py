"""A damaged cache heals itself: each kind of entry (the C runtime's object, an enumerator's shared
object, a sampling table, the host simulator's precompiled header) is checked on load; a
truncated, empty or swapped entry is rebuilt once with a one-line notice, and the result is right.
``auto`` says why it falls back when the C build fails."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import beast
from beast.errors import BeastError, BeastWarning
from conftest import ROOT, have_cc, write_space

needs_cc = pytest.mark.skipif(not have_cc(), reason="no C compiler")

SPACE_A = "from beast import *\na = range(5)\nb = range(a, 7)\n"          # 25 rows
SPACE_B = "from beast import *\na = range(4)\nb = range(3)\nc = range(a + 2)\n"   # 42 rows


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("BEAST_CACHE_DIR", str(path))
    return path


def _count(tmp_path, text, name, backend="c"):
    """(count, the notices beast gave) of the space ``text``."""
    space = beast.load(write_space(tmp_path, text, name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n = space.count(backend=backend)
    return n, [str(w.message) for w in caught if issubclass(w.category, BeastWarning)]


def _damage(path, how):
    # a new file in the entry's place: this process may have the old one mapped
    data = path.read_bytes()
    tmp = path.with_name(path.name + ".damaged")
    tmp.write_bytes(b"" if how == "empty" else data[:len(data) // 2])
    os.replace(tmp, path)


def _one_notice(notices, what):
    assert len(notices) == 1, notices
    assert "damaged" in notices[0] and what in notices[0] and "rebuilding" in notices[0]
    assert "\n" not in notices[0]


@needs_cc
@pytest.mark.parametrize("how", ["truncate", "empty"])
def test_runtime_object(tmp_path, cache, how):
    assert _count(tmp_path, SPACE_A, "a.py") == (25, [])
    (obj,) = (cache / "c").glob("runtime-*.o")
    _damage(obj, how)
    # a new space links with the runtime's object: rebuilt once, then the right count
    n, notices = _count(tmp_path, SPACE_B, "b.py")
    assert n == 42
    _one_notice(notices, obj.name)
    assert _count(tmp_path, SPACE_B.replace("range(3)", "range(2)"), "c.py") == (28, [])


@needs_cc
@pytest.mark.parametrize("how", ["truncate", "empty"])
def test_enumerator(tmp_path, cache, how):
    assert _count(tmp_path, SPACE_A, "a.py") == (25, [])
    (so,) = (cache / "c").glob("a-*.so")
    _damage(so, how)
    n, notices = _count(tmp_path, SPACE_A, "a.py")
    assert n == 25
    _one_notice(notices, so.name)
    assert so.stat().st_size > 0


@needs_cc
def test_swapped_enumerators_never_load(tmp_path, cache):
    assert _count(tmp_path, SPACE_A, "a.py")[0] == 25
    assert _count(tmp_path, SPACE_B, "b.py")[0] == 42
    (so_a,) = (cache / "c").glob("a-*.so")
    (so_b,) = (cache / "c").glob("b-*.so")
    # a valid library, built for another space (a new file: this process has B's mapped)
    shutil.copyfile(so_a, str(so_b) + ".swap")
    os.replace(str(so_b) + ".swap", so_b)
    # a fresh process, so that nothing is loaded already: B's own count, with a notice
    code = (f"import beast; print(beast.load({str(tmp_path / 'b.py')!r}).count(backend='c'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "42"
    assert "built for another entry" in proc.stderr and so_b.name in proc.stderr
    assert so_b.read_bytes() != so_a.read_bytes()


@pytest.mark.parametrize("how", ["truncate", "empty", "swap"])
def test_sampling_table(tmp_path, cache, how):
    space = beast.load(write_space(tmp_path, SPACE_B, "b.py"))
    expected = space.sample(5, seed=1, backend="python")
    other = beast.load(write_space(tmp_path, SPACE_A, "a.py"))
    other.sample(3, seed=1, backend="python")
    (table,) = (cache / "sample").glob("b-*.npz")
    if how == "swap":
        (theirs,) = (cache / "sample").glob("a-*.npz")
        shutil.copyfile(theirs, str(table) + ".swap")
        os.replace(str(table) + ".swap", table)
    else:
        _damage(table, how)
    again = beast.load(write_space(tmp_path, SPACE_B, "b.py"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = again.sample(5, seed=1, backend="python")
    notices = [str(w.message) for w in caught if issubclass(w.category, BeastWarning)]
    _one_notice(notices, table.name)
    assert np.array_equal(got, expected)
    with np.load(table) as data:         # the rebuilt table is whole and this space's own
        assert str(data["key"]) == table.name


def test_auto_says_why_it_falls_back(tmp_path, monkeypatch):
    from beast.runtime import auto
    from beast.runtime.c import enumerator as c_backend

    def broken(program, threads=None, source=None):
        raise BeastError("the C compiler failed on the generated enumerator:\n"
                         "x.c:1: error: something broke\nmore", hint="a hint")

    monkeypatch.setattr(auto, "choose", lambda program: ("c", "forced for the test", None))
    monkeypatch.setattr(c_backend, "build", broken)
    n, notices = _count(tmp_path, SPACE_A, "a.py", backend="auto")
    assert n == 25
    assert len(notices) == 1 and "\n" not in notices[0], notices
    assert "C build failed" in notices[0] and "something broke" in notices[0]
    assert ("running lua" in notices[0]) or ("running python" in notices[0])


def test_host_precompiled_header(tmp_path, cache, monkeypatch):
    from beast.tune.sim import hostsim
    cxx = hostsim.host_compiler()
    if cxx is None:
        pytest.skip("no C++20 host compiler")
    hostsim.toolchain_key(cxx)           # the compiler's identity, before the compiler is faked
    builds = []

    def fake_compile(cmd, **kw):         # a stand-in for the 2 s header build: its size is the point
        builds.append(cmd)
        with open(cmd[cmd.index("-o") + 1], "wb") as fh:
            fh.write(b"gpch" + bytes(4096))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(hostsim.subprocess, "run", fake_compile)

    def shim():
        monkeypatch.setattr(hostsim, "_shims", {})     # a new process: looked up in the cache
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            header = hostsim.precompiled_shim(cxx)
        return header, [str(w.message) for w in caught if issubclass(w.category, BeastWarning)]

    header, notices = shim()
    assert header is not None and notices == [] and len(builds) == 1
    gch = header + ".gch"
    for how in ("truncate", "empty"):
        _damage(type(cache)(gch), how)
        again, notices = shim()
        assert again == header and len(builds) == 2 + (how == "empty")
        _one_notice(notices, "shim.h.gch")
        assert os.path.getsize(gch) == 4100
    assert shim() == (header, []) and len(builds) == 3


def test_a_library_without_any_key_is_said_to_be_from_an_older_beast(tmp_path):
    """A shared object from before entry keys (or any foreign library) is refused by name of its
    cause, not as another entry's."""
    import ctypes.util
    from beast.runtime.cache_check import elf_problem
    found = ctypes.util.find_library("m")
    lib = next((os.path.join(d, found) for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                                                  "/usr/lib64") if found and os.path.exists(os.path.join(d, found))),
               None)
    if lib is None:
        pytest.skip("no libm found to stand for an old library")
    copy = tmp_path / "old.so"
    copy.write_bytes(open(lib, "rb").read())
    assert elf_problem(str(copy), "entry") == "built by an older beast, without an entry key"
