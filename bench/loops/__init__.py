"""The loop-nest experiment of Luszczek et al. 2016, Section XI, Figs. 17-19.

``depth`` (1 to 4) nested loops, each of length ``ceil(total ** (1 / depth))``, so that about
``total`` iterations run in all (exactly ``length ** depth``, which is what the rates divide by).
The innermost body does integer arithmetic on locals only, the same in every language::

    t = base + i                      # base: the sum of the outer loop variables (0 for depth 1)
    acc += (t ^ (t >> 1)) & 1023      # Gray code of t, low 10 bits

and every function returns ``acc``, so a C compiler cannot drop the loop, and the XOR keeps it
from replacing the loop by a closed form (a plain ``acc += i`` it would).  The sums of the outer
variables are formed once per outer iteration (hoisted), so the innermost body is the same for
every depth.  Every language computes the same ``acc`` for the same ``length`` and ``depth``;
the benchmarks check this.

Variants: Python ``for`` over ``range`` and ``while``; Lua (LuaJIT through lupa) numeric ``for``,
``while`` and ``repeat ... until``; C ``for``, ``while`` and ``do ... while``, compiled with
``cc -O2 -march=native`` (the paper's flags, less ``-mtune=native`` which ``-march`` implies).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

DEPTHS = (1, 2, 3, 4)
PY_VARIANTS = ("for", "while")
LUA_VARIANTS = ("for", "while", "repeat")
C_VARIANTS = ("for", "while", "dowhile")
C_FLAGS = ("-O2", "-march=native")


def loop_length(total: int, depth: int) -> int:
    """The paper's ceil(total ** (1/depth)), exact for integers (no float round-off)."""
    n = max(1, round(total ** (1.0 / depth)))
    while n ** depth < total:
        n += 1
    while n > 1 and (n - 1) ** depth >= total:
        n -= 1
    return n


# -- Python ---------------------------------------------------------------------------------
def python_source(depth: int, variant: str) -> str:
    """def py_<variant>_<depth>(n): the loop nest, returning acc."""
    lines = [f"def py_{variant}_{depth}(n):", "    acc = 0", "    b0 = 0"]

    def level(k, ind):
        i = f"i{k}"
        body = ind + "    "
        if variant == "for":
            lines.append(f"{ind}for {i} in range(n):")
        elif variant == "while":
            lines.append(f"{ind}{i} = 0")
            lines.append(f"{ind}while {i} < n:")
        else:
            raise ValueError(variant)
        if k < depth - 1:
            lines.append(f"{body}b{k + 1} = b{k} + {i}")
            level(k + 1, body)
        else:
            lines.append(f"{body}t = b{k} + {i}")
            lines.append(f"{body}acc += (t ^ (t >> 1)) & 1023")
        if variant == "while":
            lines.append(f"{body}{i} += 1")

    level(0, "    ")
    lines.append("    return acc")
    return "\n".join(lines) + "\n"


def python_function(depth: int, variant: str):
    env: dict = {}
    exec(compile(python_source(depth, variant), f"<loops py_{variant}_{depth}>", "exec"), env)
    return env[f"py_{variant}_{depth}"]


# -- Lua ------------------------------------------------------------------------------------
def lua_source(depth: int, variant: str) -> str:
    """A Lua chunk that evaluates to function(n) ... return acc end."""
    lines = ["local band, bxor, rshift = bit.band, bit.bxor, bit.rshift",
             "return function(n)", "  local acc = 0", "  local b0 = 0"]

    def level(k, ind):
        i = f"i{k}"
        body = ind + "  "
        if variant == "for":
            lines.append(f"{ind}for {i} = 0, n - 1 do")
        elif variant == "while":
            lines.append(f"{ind}local {i} = 0")
            lines.append(f"{ind}while {i} < n do")
        elif variant == "repeat":
            lines.append(f"{ind}local {i} = 0")
            lines.append(f"{ind}repeat")
        else:
            raise ValueError(variant)
        if k < depth - 1:
            lines.append(f"{body}local b{k + 1} = b{k} + {i}")
            level(k + 1, body)
        else:
            lines.append(f"{body}local t = b{k} + {i}")
            lines.append(f"{body}acc = acc + band(bxor(t, rshift(t, 1)), 1023)")
        if variant == "for":
            lines.append(f"{ind}end")
        elif variant == "while":
            lines.append(f"{body}{i} = {i} + 1")
            lines.append(f"{ind}end")
        else:
            lines.append(f"{body}{i} = {i} + 1")
            lines.append(f"{ind}until {i} >= n")

    level(0, "  ")
    lines += ["  return acc", "end"]
    return "\n".join(lines) + "\n"


def lua_runtime():
    """A LuaJIT 2.1 runtime (lupa), or None when lupa has no LuaJIT."""
    try:
        from lupa import luajit21
    except ImportError:
        return None
    return luajit21.LuaRuntime()


def lua_function(runtime, depth: int, variant: str):
    return runtime.execute(lua_source(depth, variant))


# -- C --------------------------------------------------------------------------------------
def c_source() -> str:
    """All C variants and depths, one function each: int64_t c_<variant>_<depth>(int64_t n)."""
    out = ["#include <stdint.h>", ""]
    for variant in C_VARIANTS:
        for depth in DEPTHS:
            out += _c_function(depth, variant) + [""]
    return "\n".join(out)


def _c_function(depth: int, variant: str) -> list[str]:
    lines = [f"int64_t c_{variant}_{depth}(int64_t n)", "{", "    int64_t acc = 0;",
             "    int64_t b0 = 0;"]

    def level(k, ind):
        i = f"i{k}"
        body = ind + "    "
        if variant == "for":
            lines.append(f"{ind}for (int64_t {i} = 0; {i} < n; {i}++) {{")
        elif variant == "while":
            lines.append(f"{ind}int64_t {i} = 0;")
            lines.append(f"{ind}while ({i} < n) {{")
        elif variant == "dowhile":
            lines.append(f"{ind}int64_t {i} = 0;")
            lines.append(f"{ind}do {{")
        else:
            raise ValueError(variant)
        if k < depth - 1:
            lines.append(f"{body}int64_t b{k + 1} = b{k} + {i};")
            level(k + 1, body)
        else:
            lines.append(f"{body}int64_t t = b{k} + {i};")
            lines.append(f"{body}acc += (t ^ (t >> 1)) & 1023;")
        if variant == "for":
            lines.append(f"{ind}}}")
        elif variant == "while":
            lines.append(f"{body}{i}++;")
            lines.append(f"{ind}}}")
        else:
            lines.append(f"{body}{i}++;")
            lines.append(f"{ind}}} while ({i} < n);")

    level(0, "    ")
    lines += ["    return acc;", "}"]
    return lines


def c_compiler() -> str | None:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


class CLoops:
    """The C loop functions, compiled with ``cc -O2 -march=native`` into a shared library and
    loaded with cffi's ABI mode.  ``vectorized`` lists the loops the compiler reported as
    vectorized (``-fopt-info-vec-optimized``, GCC only)."""

    def __init__(self, workdir: str | None = None, flags=C_FLAGS):
        import cffi

        cc = c_compiler()
        if cc is None:
            raise RuntimeError("no C compiler (cc, gcc or clang) on PATH")
        self.cc = cc
        self.flags = tuple(flags)
        self.workdir = workdir or tempfile.mkdtemp(prefix="beast-bench-loops-")
        src = os.path.join(self.workdir, "loops.c")
        lib = os.path.join(self.workdir, "libloops.so")
        with open(src, "w") as f:
            f.write(c_source())
        cmd = [cc, *self.flags, "-fPIC", "-shared", src, "-o", lib]
        info = ["-fopt-info-vec-optimized"] if "gcc" in _cc_version(cc).lower() else []
        proc = subprocess.run(cmd + info, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
        self.command = " ".join(cmd)
        self.vectorized = [line for line in proc.stderr.splitlines() if "vectorized" in line]
        self.version = _cc_version(cc)
        self.ffi = cffi.FFI()
        self.ffi.cdef("\n".join(f"int64_t c_{v}_{d}(int64_t n);"
                                for v in C_VARIANTS for d in DEPTHS))
        self.lib = self.ffi.dlopen(lib)

    def function(self, depth: int, variant: str):
        return getattr(self.lib, f"c_{variant}_{depth}")


def _cc_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    return out.splitlines()[0] if out else "unknown"


def iterations(total: int, depth: int) -> tuple[int, int]:
    """(loop length, iterations actually run) for about ``total`` iterations at ``depth``."""
    n = loop_length(total, depth)
    return n, n ** depth


def reference(total: int, depth: int) -> int:
    """acc for ``loop_length(total, depth)``, computed without running the nest: the outer
    loops are collapsed into a histogram of ``base`` values, and each row is summed once.
    bench/conftest.py checks the C loops against it before any benchmark uses them."""
    n = loop_length(total, depth)
    acc = 0
    # sum over all outer tuples of sum_{i<n} gray(base + i) & 1023, grouped by base
    from collections import Counter
    bases = Counter({0: 1})
    for _ in range(depth - 1):
        nxt = Counter()
        for b, c in bases.items():
            for i in range(n):
                nxt[b + i] += c
        bases = nxt
    for b, c in bases.items():
        acc += c * sum(((t ^ (t >> 1)) & 1023) for t in range(b, b + n))
    return acc
