"""What the CUDA compiler allocates for a generated kernel: registers, spills, local and shared memory.

A space can only estimate registers; ptxas knows them.  :func:`kernel_facts` compiles one
kernel (anything with ``name`` and ``source``, e.g. :func:`beast.tune.kernels.mma.generate`'s) to
a cubin and reads ptxas's verbose report (``nvcc -cubin -arch=ARCH -Xptxas -v``);
:func:`many_kernel_facts` does the same for many kernels, several to a translation unit
(:func:`beast.tune.kernels.paper.translation_unit`) on a pool of threads, one ``nvcc`` per batch.

* Compiler: ``nvcc`` first (``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, ``PATH``, ``/usr/local/cuda/bin``),
  else NVRTC through CuPy with ``--ptxas-options=-v`` (its program log carries the same report).
  With neither, a :class:`~beast.errors.BeastError` says what to install.
* Cache: facts are kept in ``$BEAST_CACHE_DIR/facts/`` (:func:`beast.runtime.cache.cache_dir`),
  one JSON file per kernel keyed by the SHA-256 of the kernel's text, its name, the architecture
  and the compiler's version; written through a temporary file and a rename.  A damaged entry is
  ignored and recomputed.
* :func:`parse_ptxas` reads the report; it is independent of the compiler run, so that captured
  text can be checked without CUDA.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields

from ...errors import BeastError
from ...runtime import cache

#: bumped when what is cached (the fields, how they are read) changes meaning
FACTS_VERSION = 1


@dataclass(frozen=True)
class KernelFacts:
    """What ptxas allocated for one kernel (per thread unless said otherwise)."""

    registers: int        # per thread, as ptxas allocates
    spill_stores: int     # bytes
    spill_loads: int      # bytes
    local_bytes: int      # stack frame / local memory per thread
    shared_bytes: int     # static shared memory (the kernels' stages are dynamic: not counted here)
    arch: str             # e.g. "sm_90"

    @property
    def spills(self) -> bool:
        """True when ptxas moved registers to local memory."""
        return self.spill_stores > 0 or self.spill_loads > 0


_ARCH = re.compile(r"sm_\d+[a-z]?")
_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(.*)")
_ITEM = re.compile(r"(\d+) bytes (smem|cumulative stack size)")


def parse_ptxas(text: str, arch: str | None = None) -> dict[str, KernelFacts]:
    """The facts of every entry function (kernel) in ptxas's verbose report ``text``.

    Reads ``Compiling entry function 'NAME' for 'ARCH'``, the ``Function properties for NAME``
    line that follows it (stack frame, spill stores, spill loads) and the ``Used N registers, ...``
    line (static ``smem``, ``cumulative stack size`` where callees add to the frame).  Other lines
    (warnings, ``gmem``, compile times, non-entry functions) are skipped; so are kernels whose
    report is incomplete.  ``arch`` stands in where a report names none.
    """
    out: dict[str, KernelFacts] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    entry, entry_arch, props_for = None, arch, None
    for line in text.replace("\r", "\n").splitlines():
        m = _ENTRY.search(line)
        if m:
            entry, entry_arch, props_for = m.group(1), m.group(2), None
            continue
        m = _PROPS.search(line)
        if m:
            props_for = m.group(1)
            continue
        m = _FRAME.search(line)
        if m and props_for is not None:
            frames[props_for] = tuple(int(x) for x in m.groups())
            props_for = None
            continue
        m = _USED.search(line)
        if m and entry is not None:
            items = {what: int(n) for n, what in _ITEM.findall(m.group(2))}
            frame, stores, loads = frames.get(entry, (0, 0, 0))
            out[entry] = KernelFacts(registers=int(m.group(1)), spill_stores=stores, spill_loads=loads,
                                     local_bytes=max(frame, items.get("cumulative stack size", 0)),
                                     shared_bytes=items.get("smem", 0), arch=entry_arch or arch or "")
            entry = None
    return out


# --------------------------------------------------------------------------- the compiler

def find_nvcc() -> str | None:
    """The nvcc this module runs, or None."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root and os.access(os.path.join(root, "bin", "nvcc"), os.X_OK):
            return os.path.join(root, "bin", "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    fallback = "/usr/local/cuda/bin/nvcc"
    return fallback if os.access(fallback, os.X_OK) else None


def _nvrtc():
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
    except Exception:
        return None
    return nvrtc


_VERSIONS: dict = {}
_VERSIONS_LOCK = threading.Lock()


def compiler() -> tuple[str, str]:
    """(kind, version text) of the compiler used: ``("nvcc", path + --version)`` or ``("nvrtc", ...)``."""
    nvcc = find_nvcc()
    with _VERSIONS_LOCK:
        if nvcc is not None:
            try:
                stamp = os.stat(nvcc).st_mtime_ns
            except OSError:
                stamp = 0
            memo = ("nvcc", nvcc, stamp)
            if memo not in _VERSIONS:
                try:
                    proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
                    _VERSIONS[memo] = f"{nvcc}\n{proc.stdout.strip()}"
                except (OSError, subprocess.SubprocessError) as err:
                    raise BeastError(f"cannot run {nvcc} --version: {err}") from None
            return "nvcc", _VERSIONS[memo]
    nvrtc = _nvrtc()
    if nvrtc is not None:
        return "nvrtc", "nvrtc %d.%d" % tuple(nvrtc.getVersion())
    raise BeastError("no CUDA compiler found to read a kernel's registers and spills",
                     hint="install the CUDA toolkit (nvcc on PATH or $CUDA_HOME/bin), "
                          "or CuPy with NVRTC (pip install cupy-cuda12x)")


def _check_arch(arch: str) -> str:
    if not isinstance(arch, str) or not _ARCH.fullmatch(arch):
        raise BeastError(f"architecture {arch!r} is not of the form sm_XY (e.g. sm_90)")
    return arch


def _compile_nvcc(nvcc: str, source: str, arch: str) -> str:
    with tempfile.TemporaryDirectory(prefix="beast-facts-") as tmp:
        src = os.path.join(tmp, "kernels.cu")
        with open(src, "w", encoding="utf-8") as fh:
            fh.write(source)
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", "-o", os.path.join(tmp, "kernels.cubin"), src]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.SubprocessError) as err:
            raise BeastError(f"cannot run nvcc: {err}") from None
    log = proc.stderr + proc.stdout
    if proc.returncode != 0:
        raise BeastError(f"nvcc failed for {arch} (exit {proc.returncode}):\n{log[-3000:]}")
    return log


def _compile_nvrtc(source: str, arch: str) -> str:
    nvrtc = _nvrtc()
    prog = nvrtc.createProgram(source, "kernels.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, (f"-arch={arch}", "--ptxas-options=-v"))
        except nvrtc.NVRTCError as err:
            raise BeastError(f"NVRTC failed for {arch}: {err}\n{nvrtc.getProgramLog(prog)[-3000:]}") from None
        return nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def _compile(source: str, arch: str, kind: str) -> str:
    return _compile_nvcc(find_nvcc(), source, arch) if kind == "nvcc" else _compile_nvrtc(source, arch)


# --------------------------------------------------------------------------- the cache

def _key(kernel, arch: str, version: str) -> str:
    return cache.key("kernel-facts", FACTS_VERSION, kernel.name, kernel.source, arch, version)


def _path(key: str) -> str:
    return os.path.join(cache.cache_dir("facts", create=False), key[:48] + ".json")


_FIELDS = tuple(f.name for f in fields(KernelFacts))


def _load(key: str, arch: str) -> KernelFacts | None:
    """The cached facts, or None where there are none or the entry does not read as facts."""
    try:
        with open(_path(key), encoding="utf-8") as fh:
            data = json.load(fh)
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        facts = KernelFacts(**{name: data[name] for name in _FIELDS})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    ints = [getattr(facts, n) for n in _FIELDS if n != "arch"]
    if facts.arch != arch or not all(type(v) is int and v >= 0 for v in ints):
        return None
    return facts


def _store(key: str, facts: KernelFacts) -> None:
    try:
        cache.cache_dir("facts")
        cache.atomic_write_text(_path(key), json.dumps({"key": key, **asdict(facts)}, sort_keys=True))
    except OSError:
        pass                        # a read-only cache costs a compile next time, nothing else


# --------------------------------------------------------------------------- the API

def _renamed(kernel, name: str):
    """``kernel`` generated again under ``name`` (same family, layout and settings), or None when
    it is not a kernel of a beast family (it then compiles alone)."""
    try:
        from ..kernels.families import get_family
        layout = kernel.layout
        return get_family(kernel.family).generate(layout.config(), layout.settings, name=name)
    except Exception:
        return None


def _describe(kernel) -> str:
    """The kernel's name and, for a kernel of a beast family, its configuration."""
    try:
        config = kernel.layout.config()
    except Exception:
        return kernel.name
    return f"{kernel.name} ({', '.join(f'{n}={v}' for n, v in config.items())})"


def _batch_facts(kernels, arch: str, kind: str) -> list[KernelFacts]:
    """Compile ``kernels`` as one translation unit (each under a name of its own) and read them."""
    from ..kernels.paper import translation_unit
    if len(kernels) > 1 and not all(hasattr(k, "prelude") and hasattr(k, "body") for k in kernels):
        return [f for k in kernels for f in _batch_facts([k], arch, kind)]   # not of a beast family
    if len(kernels) == 1 or len({k.name for k in kernels}) == len(kernels):
        units = kernels
    else:
        # Kernels of one name (the tuner's default) are generated again under names of their own:
        # ptxas's allocation can depend on a kernel's name, by a register or two, so a distinct
        # name is kept where there is one.
        units = [_renamed(k, f"beast_facts_{i}") for i, k in enumerate(kernels)]
        if any(u is None for u in units):
            return [f for k in kernels for f in _batch_facts([k], arch, kind)]
    source = units[0].source if len(units) == 1 else translation_unit(units)
    try:
        log = _compile(source, arch, kind)
    except BeastError as err:
        if len(kernels) == 1:
            raise BeastError(f"kernel {_describe(kernels[0])}: {err.message}", hint=err.hint) from None
        return [f for k in kernels for f in _batch_facts([k], arch, kind)]   # name the one that fails
    found = parse_ptxas(log, arch)
    out = []
    for k, u in zip(kernels, units):
        if u.name not in found:
            raise BeastError(f"the compiler's report has no register count for kernel {_describe(k)} ({arch})",
                             hint="nvcc -Xptxas -v (or NVRTC's --ptxas-options=-v) prints one per kernel; "
                                  "install the CUDA toolkit's nvcc if this NVRTC does not")
        out.append(found[u.name])
    return out


def kernel_facts(kernel, arch: str = "sm_90") -> KernelFacts:
    """Registers, spills, local and static shared memory of ``kernel`` (with ``name`` and
    ``source``) compiled for ``arch``, from the compiler (cached; see the module's docstring)."""
    return many_kernel_facts([kernel], arch, workers=1)[0]


def many_kernel_facts(kernels, arch: str = "sm_90", workers: int | None = None,
                      batch: int | None = None) -> list[KernelFacts]:
    """:func:`kernel_facts` of each of ``kernels``, in order.

    Kernels not in the cache compile ``batch`` to a translation unit (default: an even share of
    them per worker, at most 16) on ``workers`` threads (default: the CPU count): a batch pays
    nvcc's start and front end once.  A batch that fails compiles again one kernel at a time, so that the
    error names the kernel that fails."""
    _check_arch(arch)
    kernels = list(kernels)
    if not kernels:
        return []
    for k in kernels:
        if not isinstance(getattr(k, "name", None), str) or not isinstance(getattr(k, "source", None), str):
            raise BeastError(f"{type(k).__name__} is not a generated kernel (it needs a name and a source)",
                             hint="pass kernels from beast.tune.kernels.paper.generate or beast.tune.kernels.mma.generate")
    kind, version = compiler()
    keys = [_key(k, arch, version) for k in kernels]
    facts = {key: _load(key, arch) for key in dict.fromkeys(keys)}
    todo = {}
    for k, key in zip(kernels, keys):
        if facts[key] is None:
            todo.setdefault(key, k)
    if todo:
        workers = max(1, min(workers or os.cpu_count() or 1, len(todo)))
        size = batch or min(16, -(-len(todo) // workers))
        items = list(todo.items())
        chunks = [items[i:i + size] for i in range(0, len(items), size)]

        def run(chunk):             # each batch is kept as it finishes, whatever another does
            for (key, _), f in zip(chunk, _batch_facts([k for _, k in chunk], arch, kind)):
                facts[key] = f
                _store(key, f)

        if len(chunks) == 1:
            run(chunks[0])
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for done in [pool.submit(run, chunk) for chunk in chunks]:
                    done.result()
    return [facts[key] for key in keys]


def arch_of(profile) -> str | None:
    """``sm_XY`` of a device profile's compute capability, or None when it has none."""
    try:
        return f"sm_{int(profile.cudamajor)}{int(profile.cudaminor)}"
    except (AttributeError, TypeError, ValueError):
        return None


def facts_or_none(kernel, arch: str | None) -> KernelFacts | None:
    """:func:`kernel_facts`, or None where there is no architecture or no CUDA compiler (for
    callers to whom the facts are a bonus: ``--explain``, the speed model)."""
    if arch is None:
        return None
    try:
        return kernel_facts(kernel, arch)
    except BeastError:
        return None


__all__ = ["KernelFacts", "kernel_facts", "arch_of", "facts_or_none", "many_kernel_facts", "parse_ptxas", "find_nvcc", "compiler",
           "FACTS_VERSION"]
