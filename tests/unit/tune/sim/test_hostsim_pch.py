"""The host simulator's shim, precompiled once per compiler into beast's cache
(beast.tune.sim.hostsim.precompiled_shim): built on first use, reused, rebuilt when the cache lost it,
and left out (the shim compiled with each kernel) where the cache cannot be written."""
import os
import shutil
import subprocess

import pytest

from beast.tune.sim import hostsim
from beast.tune.sim.hostsim import HOST_FLAGS, HOST_SHIM, host_compiler, precompiled_shim

CXX = host_compiler()
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++20 host compiler")


def is_gcc() -> bool:
    return "Free Software Foundation" in subprocess.run([CXX, "--version"], capture_output=True, text=True).stdout


def test_the_shim_is_precompiled_once_used_and_rebuilt_when_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("BEAST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(hostsim, "_shims", {})
    header = precompiled_shim(CXX)
    assert header is not None and header.startswith(str(tmp_path / "cache"))
    with open(header) as f:
        assert f.read() == HOST_SHIM
    built = os.stat(header + ".gch").st_mtime_ns
    assert precompiled_shim(CXX) == header and os.stat(header + ".gch").st_mtime_ns == built
    monkeypatch.setattr(hostsim, "_shims", {})                 # another process: found in the cache
    assert precompiled_shim(CXX) == header and os.stat(header + ".gch").st_mtime_ns == built
    assert [p for p in os.listdir(os.path.dirname(header)) if p.startswith(".tmp")] == []

    src = tmp_path / "k.cpp"
    src.write_text("int twice(int x) { return 2 * x; }\n")
    proc = subprocess.run([CXX, *HOST_FLAGS, "-Winvalid-pch", "-H", "-fsyntax-only", "-include", header, str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if is_gcc():                                                # gcc -H marks a precompiled header it used with "!"
        assert f"! {header}.gch" in proc.stderr

    shutil.rmtree(tmp_path / "cache")                           # the cache was cleared: built again
    again = precompiled_shim(CXX)
    assert again == header and os.path.exists(again + ".gch")


def test_an_unwritable_cache_compiles_the_shim_with_each_kernel(tmp_path, monkeypatch):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setenv("BEAST_CACHE_DIR", str(not_a_dir))
    monkeypatch.setattr(hostsim, "_shims", {})
    assert precompiled_shim(CXX) is None
    seen = {}
    real_run = subprocess.run

    def run(cmd, **kw):
        seen["cmd"] = cmd
        src = next(a for a in cmd if a.endswith(".cpp"))
        with open(src) as f:
            seen["text"] = f.read()
        return real_run(cmd, **kw)

    monkeypatch.setattr(hostsim.subprocess, "run", run)
    ok, log = hostsim.build_host_library("// no kernels\n", [], str(tmp_path / "k.so"))
    assert ok, log
    assert "-include" not in seen["cmd"] and seen["text"].startswith(HOST_SHIM)
