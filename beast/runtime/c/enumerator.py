"""The C backend: print the loop nest as C (:mod:`beast.codegen.c`), compile it once with the
system's C compiler (``cc -O2``; ``CC`` overrides) into a shared object cached by content hash
(:mod:`beast.runtime.cache`), load it with cffi (ABI mode), and run it on worker threads.

The runtime (worker threads, row blocks, the entry points; ``c_driver.c``) is the same for every
space: it is compiled once per compiler into an object in the cache (:func:`runtime_entry`) and
linked into each enumerator, whose own compile is then only its loop nest. Both are checked before
use (:mod:`beast.runtime.cache_check`): a truncated or empty object, or an enumerator that does not
hold its entry's key (``beast_key``, appended to the printed C), is rebuilt once with a notice.

Work splitting. The printed walk has *claim points* before its outer loops (a chain of lets and
checks, then one loop). A run probes for the shallowest depth whose claim point is reached at
least ``TARGET_PER_THREAD * threads`` times (else the one reached most often), and every worker
walks the loops above it; each time the walk reaches that claim point is a *work item*, numbered in
enumeration order, and a worker runs an item's loop only when it holds that number, taken from a
shared counter. So the work is split dynamically and finely (an item is, e.g., one value of
``dim_m``, or one ``(dim_m, dim_n, blk_m)`` for many threads), and the items' rows are handed out
in item order: the output and the reported error (the earliest in enumeration order) are the same
for every thread count.

Rows are written into fixed-size C blocks that the consumer copies, in order, straight into the
NumPy arrays ``chunks`` yields (no Python object per row); the oldest item's blocks are handed over
while it runs and workers wait when too many blocks are buffered, so memory stays bounded.
Counting writes nothing. Calls into C wait at most ``WAIT_MS``, so Ctrl-C stops a run: the walks
poll a cancel flag in every iterating loop (every ``BN_TICKS`` iterations), and the calls that
walk on the calling thread (sampling, stats' outer walk) run on a thread of their own
(:func:`interruptible`) while the caller waits where a signal reaches it.
"""
from __future__ import annotations

import functools
import os
import shlex
import sys
import threading

# subprocess, shutil and tempfile (about 5 ms of imports together) are imported where they are
# used: a run that finds its enumerator in the cache needs none of them.

import numpy as np

from ..._version import __version__
from ...codegen.c import print_c, runtime_prelude
from ...ir.sites import KINDS, ExcSite, LoopValueSite, NodeSite, TableSite, UserSite
from ...errors import BeastError, EvaluationError
from ...expr.nodes import evaluate
from ...ir.literals import check_integer_width
from ...ir.tabulate import MAX_VALUES
from .. import cache
from ..registry import MAX_CHUNK_ROWS, check_chunk_size, check_threads
from ..cache_check import damaged, elf_problem, key_line
from ..errors import (COMPLEX_POW, ComplexPowerError, COUNT_HINT, COUNT_OVERFLOW, OVERFLOW_HINT, ROLE_NAMES, caret_in_statement, explain, failed_operation, node_error, node_location, overflow_position)
from ..python import compile_functions

NAME = "c"
ABI_VERSION = "6"
WAIT_MS = 100               # how long one call waits in C before Python may handle a signal
# -ffp-contract=off: no fused multiply-add (gnu99's default lets GCC fuse a*b + c where the
# target has FMA, on aarch64 always), which rounds once where Python rounds twice
CFLAGS = ("-O2", "-std=gnu99", "-ffp-contract=off", "-fPIC", "-shared", "-pthread")
RUNTIME_CFLAGS = ("-O2", "-std=gnu99", "-ffp-contract=off", "-fPIC", "-pthread", "-c")      # the runtime's object
LIBS = ("-lm",)
WINDOW_PER_THREAD = 64      # work items in flight per worker while rows are streamed
BLOCK_ROWS = 4096           # rows per block of streamed output
TARGET_PER_THREAD = 256     # work items per worker the split aims at (at least)

_DRIVER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_driver.c")
with open(_DRIVER_PATH, encoding="utf-8") as _fh:
    _DRIVER = _fh.read()

_CDEF = """
typedef struct { int site, kind, nbound, bad_f; int64_t bad_i; double bad_d; int64_t *cfg; } bn_err;
int bn_abi(void);
void *bn_open(int rows, int nthreads, int64_t window);
int bn_wait(void *h, int timeout_ms, int64_t *out, bn_err *err);
int64_t bn_fetch(void *h, int64_t *out, int64_t max_rows, int timeout_ms, int *state, bn_err *err);
void bn_close(void *h);
int bn_tally(void *h, int64_t *out);
int bn_outer(int split, int64_t *out, const int *cancel);
int bn_count_each(const int64_t *pre, int64_t npre, int width, int nthreads, int64_t *out, bn_err *err,
                  const int *cancel);
int64_t bn_rows_under(const int64_t *pre, int64_t cap, int64_t *out, bn_err *err, const int *cancel);
int bn_pick_each(const int64_t *pre, int64_t npre, int width, const int64_t *nsel, const int64_t *sel,
                 int64_t *scratch, int64_t *out, bn_err *err, const int *cancel);
"""


def driver_text() -> str:
    """The runtime's C file: the prelude (without a space's sizes), then ``c_driver.c``."""
    return runtime_prelude() + _DRIVER.replace("@TARGET@", str(TARGET_PER_THREAD)) \
        .replace("@ABI@", ABI_VERSION).replace("@BLOCK_ROWS@", str(BLOCK_ROWS))


def interruptible(call):
    """``call(cancel)`` (a C function that polls ``*cancel``) on a thread of its own, the calling
    thread waiting where Ctrl-C and SIGTERM reach it: on one, ``*cancel`` is set, the call stops
    at its next poll, and the interrupt goes on.  cffi releases the GIL around the C call."""
    cancel = _get_ffi().new("int[1]")
    box = []
    worker = threading.Thread(target=lambda: box.append(call(cancel)), name="beast-c-call", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(WAIT_MS / 1000)
    except BaseException:
        cancel[0] = 1
        worker.join()
        raise
    if not box:
        raise BeastError("internal error: a call into the C enumerator failed")
    return box[0]


# ---------------------------------------------------------------------------------------------
# Compiler, cache, loading

_ffi = None
_libs = {}
_lock = threading.Lock()
_compiler_id = {}


def _get_ffi():
    global _ffi
    if _ffi is None:
        try:
            import cffi
        except ImportError:   # pragma: no cover - cffi is a dependency
            raise BeastError("the C backend needs the 'cffi' package", hint="pip install cffi") from None
        ffi = _stored_ffi(cffi)
        if ffi is None:
            ffi = cffi.FFI()
            ffi.cdef(_CDEF)
        _ffi = ffi
    return _ffi


def _stored_ffi(cffi):
    """The FFI of :data:`_CDEF` from cffi's out-of-line ABI module, kept in the cache: parsing the
    declarations in-line imports pycparser and takes tens of milliseconds in every process, the
    stored module loads in well under one. None when it cannot be written or loaded."""
    import importlib.util
    name = "_beast_ffi_" + cache.key("beast ffi", _CDEF, cffi.__version__)[:24]
    try:
        path = os.path.join(cache.cache_dir("ffi"), name + ".py")
        if not os.path.exists(path):
            builder = cffi.FFI()
            builder.cdef(_CDEF)
            builder.set_source(name, None)
            with cache.private_dir(os.path.dirname(path)) as tmp:
                out = os.path.join(tmp, name + ".py")
                import contextlib
                import io
                with contextlib.redirect_stdout(io.StringIO()):     # cffi says "generating ..."
                    builder.emit_python_code(out)
                cache.install(out, path)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.ffi
    except Exception:  # noqa: BLE001 - an unusable cache: parse in-line instead
        return None


def compiler():
    """(argv of the C compiler, an identity string for the cache key: path and version).

    ``cc --version`` costs a process start (several ms), so its first line is kept in the cache,
    keyed by the compiler's path, size and modification time."""
    argv = shlex.split(os.environ.get("CC") or "cc")
    path = _which(argv[0]) if argv else None
    if path is None:
        raise BeastError(f"no C compiler found ({' '.join(argv) or 'cc'!r} is not on PATH)",
                         hint="install gcc or clang, set CC, or use --backend python")
    ident = _compiler_id.get(tuple(argv))
    if ident is None:
        st = os.stat(path)
        stamp = f"{' '.join(argv)}|{path}|{st.st_size}|{int(st.st_mtime)}"
        version = _stored_version(stamp)
        if version is None:
            import subprocess
            try:
                version = "".join(subprocess.run(argv + ["--version"], capture_output=True, text=True,
                                                 timeout=60).stdout.splitlines()[:1])
            except (OSError, subprocess.SubprocessError):
                version = ""
            _store_version(stamp, version)
        ident = f"{stamp}|{version}"
        _compiler_id[tuple(argv)] = ident
    return [path] + argv[1:], ident


def _which(cmd):
    """``shutil.which(cmd)`` on POSIX (without importing shutil): a name with a slash is checked
    as it is, a bare name is looked up along ``PATH``."""
    def runnable(path):
        return os.path.exists(path) and os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path)
    if os.path.dirname(cmd):
        return cmd if runnable(cmd) else None
    search = os.environ.get("PATH")
    if search is None:
        try:
            search = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            search = os.defpath
    if not search:
        return None
    seen = set()
    for directory in search.split(os.pathsep):
        directory = directory or os.curdir
        if directory in seen:
            continue
        seen.add(directory)
        path = os.path.join(directory, cmd)
        if runnable(path):
            return path
    return None


def _version_file(stamp):
    return os.path.join(cache.cache_dir("compilers", create=False), cache.key("cc --version", stamp)[:32])


def _stored_version(stamp):
    try:
        with open(_version_file(stamp), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def _store_version(stamp, version):
    try:
        cache.atomic_write_text(_version_file(stamp), version)
    except OSError:
        pass    # an unwritable cache: ask the compiler again next time


def run_compiler(argv):
    """Run the compiler (tests replace this to see whether a build compiles)."""
    import subprocess
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BeastError("the C compiler failed on the generated enumerator:\n" +
                         (proc.stderr or proc.stdout).strip()[-4000:],
                         hint="this is a bug in beast's C backend; --backend python still works")


def _fallback_path():
    """The private cache used when the cache directory cannot be written."""
    import tempfile
    return os.path.join(tempfile.gettempdir(), f"beast-cache-{os.getuid()}", "c")


def _fallback_dir():
    path = _fallback_path()
    os.makedirs(path, exist_ok=True)
    return path


@functools.lru_cache(maxsize=None)
def runtime_entry(ident: str) -> str:
    """The cache entry name (without ``.o``) of the runtime's object built by compiler ``ident``."""
    digest = cache.key("beast C runtime", ABI_VERSION, __version__, ident, " ".join(RUNTIME_CFLAGS), driver_text())
    return f"runtime-{digest[:32]}"


def _entry(text: str, name: str):
    """(compiler argv, cache entry name, file stem, the runtime's entry) of the build of ``text``,
    linked with the runtime's object (:func:`runtime_entry`), whose name is part of the key."""
    argv, ident = compiler()
    runtime = runtime_entry(ident)
    digest = cache.key("beast C enumerator", ABI_VERSION, __version__, ident, " ".join(CFLAGS + LIBS),
                       runtime, text)
    stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:40] or "space"
    return argv, f"{stem}-{digest[:32]}", stem, runtime


def _in_cache(build):
    """``build(directory)`` in the cache, or in a private temporary one where the cache cannot be
    written (read-only, full)."""
    try:
        return build(cache.cache_dir("c"))
    except OSError:
        try:
            return build(_fallback_dir())
        except OSError as exc:
            raise BeastError(f"cannot write the compiled enumerator: {exc}",
                             hint=f"set {cache.ENV_VAR} to a writable directory") from None


def library_path(text: str, name: str) -> str:
    """Compile ``text`` (unless an identical build is cached); the path of the shared object."""
    argv, entry, stem, runtime = _entry(text, name)
    text += key_line(entry)
    return _in_cache(lambda directory: _build(argv, text, directory, entry, stem, runtime))


def _whole(path, entry=None) -> bool:
    """True when the cache entry ``path`` exists and is whole (built for ``entry`` when given);
    a damaged one is removed with a notice, for the caller to rebuild."""
    why = elf_problem(path, entry)
    if why is not None:
        damaged(path, why)
        return False
    return os.path.exists(path)


def _build_runtime(argv, directory, entry):
    obj = os.path.join(directory, entry + ".o")
    if not _whole(obj):
        with cache.private_dir(directory) as tmp:
            c_path, out = os.path.join(tmp, "runtime.c"), os.path.join(tmp, "runtime.o")
            with open(c_path, "w", encoding="utf-8") as fh:
                fh.write(driver_text())
            run_compiler(object_argv(argv, out, c_path))
            cache.install(c_path, obj[:-2] + ".c")
            cache.install(out, obj)
    return obj


def object_argv(argv, out, c_path) -> list:
    """The compiler's command line that compiles ``c_path`` into the object ``out`` (the runtime,
    or an enumerator compiled beside it)."""
    return argv + list(RUNTIME_CFLAGS) + ["-o", out, c_path]


def link_argv(argv, out, c_path, obj) -> list:
    """The compiler's command line that builds an enumerator ``c_path`` (or its object) linked
    with ``obj``."""
    return argv + list(CFLAGS) + ["-o", out, c_path, obj] + list(LIBS)


def _build(argv, text, directory, entry, stem, rt_entry):
    so_path = os.path.join(directory, entry + ".so")
    if _whole(so_path, entry):
        return so_path
    obj = os.path.join(directory, rt_entry + ".o")
    with cache.private_dir(directory) as tmp:
        c_path = os.path.join(tmp, f"{stem}.c")
        out = os.path.join(tmp, f"{stem}.so")
        with open(c_path, "w", encoding="utf-8") as fh:
            fh.write(text)
        if _whole(obj):
            run_compiler(link_argv(argv, out, c_path, obj))
        else:
            # the first enumerator built by this compiler: the runtime's object is compiled on a
            # thread while the enumerator is, then both are linked
            box = []
            worker = threading.Thread(target=_catching, args=(box, _build_runtime, argv, directory, rt_entry),
                                      name="beast-c-runtime")
            worker.start()
            try:
                run_compiler(object_argv(argv, c_path[:-2] + ".o", c_path))
            finally:
                worker.join()
            if isinstance(box[0], BaseException):
                raise box[0]
            run_compiler(link_argv(argv, out, c_path[:-2] + ".o", obj))
        cache.install(c_path, so_path[:-3] + ".c")
        cache.install(out, so_path)
    return so_path


def _catching(box, fn, *args):
    try:
        box.append(fn(*args))
    except BaseException as exc:        # noqa: BLE001 - raised again on the calling thread
        box.append(exc)


# ---------------------------------------------------------------------------------------------
# Printed once, looked up without compiling (the ``auto`` backend; its background build is
# :mod:`beast.runtime.c.background`)

class Prepared:
    """A program printed as C: the :class:`~beast.codegen.c.CSource`, the whole file, and the
    cache entry its shared object has (or will have)."""

    def __init__(self, program):
        self.program = program
        check_integer_width(program, 64, "C")
        self.source = print_c(program, _python_functions(program))
        # runtime: the cache entry of the runtime's object it is linked with
        self.argv, self.entry, self.stem, self.runtime = _entry(self.source.text, program.name)
        # compiled, then linked with the runtime's object; ends with the entry's key
        self.text = self.source.text + key_line(self.entry)


def prepare(program) -> Prepared:
    """Print ``program`` as C and find its cache entry (nothing is compiled)."""
    return Prepared(program)


def cached_library(prepared: Prepared):
    """The path of ``prepared``'s shared object when the cache already holds it whole, else None
    (a damaged entry, or a damaged runtime object it would be linked with, is removed with a
    notice, so that the next build replaces it)."""
    # the fallback's path only when needed: it imports tempfile, which a warm run does not need
    for where in (lambda: cache.cache_dir("c", create=False), _fallback_path):
        directory = where()
        path = os.path.join(directory, prepared.entry + ".so")
        if _whole(path, prepared.entry):
            return path
        _whole(os.path.join(directory, prepared.runtime + ".o"))
    return None


def load_library(text: str, name: str):
    path = library_path(text, name)
    with _lock:
        lib = _libs.get(path)
        if lib is None:
            ffi = _get_ffi()
            try:
                lib = ffi.dlopen(path)
            except OSError as exc:
                # a damaged entry that passed the checks (not one of ours: ours are installed
                # atomically): rebuild it once
                damaged(path, f"cannot be loaded: {str(exc).splitlines()[0] if str(exc) else exc!r}")
                path = library_path(text, name)
                lib = ffi.dlopen(path)
            if lib.bn_abi() != int(ABI_VERSION):
                raise BeastError(f"the cached enumerator {path} has another ABI version")
            _libs[path] = lib
    return lib, path


# ---------------------------------------------------------------------------------------------
# Errors: the same EvaluationError the Python backend raises

_SAMPLES = {"zero_floordiv": "1 // 0", "zero_mod": "1 % 0", "zero_truediv": "1 / 0",
            "zero_ffloordiv": "1.0 // 0.0", "zero_fmod": "1.0 % 0.0", "zero_ftruediv": "1.0 / 0.0",
            "zero_pow": "0.0 ** -1", "fpow_overflow": "10.0 ** 400", "range_step_zero": "range(0, 1, 0)",
            "range_not_int": "range(0.5)", "list_index": "[][0]", "tuple_index": "()[0]",
            "empty_min": "min([])", "empty_max": "max([])", "float_inf_to_int": "int(float('inf'))",
            "float_nan_to_int": "int(float('nan'))", "negative_shift": "1 << -1"}
OWN_MESSAGES = {"complex_pow": COMPLEX_POW,
                 "too_many_values": "an iterator function produced more values than the C backend "
                                    "buffers in one call",
                 "no_memory": "out of memory while enumerating"}


def _sample(kind):
    try:
        eval(_SAMPLES[kind], {"__builtins__": __builtins__})  # noqa: S307 - fixed snippets
    except Exception as exc:  # noqa: BLE001
        return exc.with_traceback(None)
    raise AssertionError(kind)


class CEnumerator:
    """Runs a compiled C enumerator: ``count(threads)`` and ``chunks(chunk_size, threads)``."""

    def __init__(self, program, source, text, lib, path):
        self.program = program
        self.source = source          # the CSource (sites, tabulated functions, printed text)
        self.text = text              # the whole compiled file
        self.lib = lib
        self.path = path
        self.dtype = np.dtype([(c, np.int64) for c in program.columns])
        self.ncols = len(program.columns)
        self._pyfuncs = None

    # -- running
    @staticmethod
    def threads(threads=None) -> int:
        if threads is None:
            try:
                return max(1, len(os.sched_getaffinity(0)))
            except (AttributeError, OSError):
                return max(1, os.cpu_count() or 1)
        return check_threads(threads)

    def _err(self):
        ffi = _get_ffi()
        err = ffi.new("bn_err *")
        cfg = ffi.new("int64_t[]", self.ncols + 1)
        err.cfg = cfg
        return err, cfg

    def _open(self, rows, n, window):
        handle = self.lib.bn_open(rows, n, window)
        if handle == _get_ffi().NULL:
            raise BeastError("the C enumerator could not start its threads (out of memory?)")
        return handle

    def count(self, threads=None) -> int:
        """How many configurations survive (nothing is written; Ctrl-C stops the workers)."""
        ffi = _get_ffi()
        n = self.threads(threads)
        err, cfg = self._err()
        out = ffi.new("int64_t *")
        handle = self._open(0, n, 1)
        try:
            while True:
                rc = self.lib.bn_wait(handle, WAIT_MS, out, err)
                if rc > 0:
                    return int(out[0])
                if rc < 0:
                    raise self.error(err).with_traceback(None)
        finally:
            self.lib.bn_close(handle)

    def tally(self, threads=None):
        """(survivors, counters) of an instrumented program (:mod:`beast.ir.instrument`): the
        counters inside work items summed over the workers, those above them from one walk."""
        ffi = _get_ffi()
        n = self.threads(threads)
        err, cfg = self._err()
        out = ffi.new("int64_t *")
        depths = self.program.tallies
        inner = ffi.new("int64_t[]", len(depths) + 1)
        handle = self._open(0, n, 1)
        try:
            while True:
                rc = self.lib.bn_wait(handle, WAIT_MS, out, err)
                if rc > 0:
                    break
                if rc < 0:
                    raise self.error(err).with_traceback(None)
            split = self.lib.bn_tally(handle, inner)
        finally:
            self.lib.bn_close(handle)
        counters = [int(inner[i]) for i in range(len(depths))]
        if split >= 0:
            outer = ffi.new("int64_t[]", len(depths) + 1)
            if interruptible(lambda cancel: self.lib.bn_outer(split, outer, cancel)) < 0:
                raise BeastError(OWN_MESSAGES["no_memory"])
            counters = [int(outer[i]) if d <= split else c for i, (d, c) in enumerate(zip(depths, counters))]
        return int(out[0]), counters

    def chunks(self, chunk_size=65536, threads=None):
        """NumPy structured arrays of at most ``chunk_size`` rows, in enumeration order."""
        ffi = _get_ffi()
        n = self.threads(threads)
        chunk_size = min(check_chunk_size(chunk_size), MAX_CHUNK_ROWS)
        handle = self._open(1, n, max(WINDOW_PER_THREAD * n, 16))
        err, cfg = self._err()
        state = ffi.new("int *")
        dummy = ffi.new("int64_t[1]")
        width = self.ncols
        try:
            arr, filled = np.empty(chunk_size, dtype=self.dtype), 0
            base = ffi.cast("int64_t *", ffi.from_buffer(arr)) if width else dummy
            while True:
                got = self.lib.bn_fetch(handle, base + filled * width, chunk_size - filled, WAIT_MS,
                                        state, err)
                if got < 0:
                    raise self.error(err).with_traceback(None)
                filled += got
                if filled == chunk_size:
                    yield arr
                    arr, filled = np.empty(chunk_size, dtype=self.dtype), 0
                    base = ffi.cast("int64_t *", ffi.from_buffer(arr)) if width else dummy
                if state[0] == 1:
                    if filled:
                        yield arr[:filled].copy() if filled < chunk_size // 2 else arr[:filled]
                    return
        finally:
            self.lib.bn_close(handle)

    # -- sampling (beast.ir.prefix): programs whose outer loops are bound to a given prefix
    EACH_CALL = 1 << 14          # prefixes per call into C

    def count_each(self, prefixes, threads=None) -> np.ndarray:
        """The count under each prefix (rows of an int64 array), for a program made by
        :func:`beast.ir.prefix.bind`; the prefixes are shared out among ``threads`` workers."""
        ffi = _get_ffi()
        pre = np.ascontiguousarray(prefixes, dtype=np.int64)
        npre = len(pre)
        width = pre.shape[1] if pre.ndim == 2 else 0
        out = np.zeros(npre, dtype=np.int64)
        n = self.threads(threads)
        err, cfg = self._err()
        dummy = ffi.new("int64_t[1]")
        for lo in range(0, npre, self.EACH_CALL):
            hi = min(npre, lo + self.EACH_CALL)
            part = pre[lo:hi]
            base = ffi.cast("int64_t *", ffi.from_buffer(part)) if part.size else dummy
            dst = ffi.cast("int64_t *", ffi.from_buffer(out[lo:hi]))
            if interruptible(lambda cancel: self.lib.bn_count_each(base, hi - lo, width, n, dst, err, cancel)) < 0:
                raise self.error(err).with_traceback(None)
        return out

    def rows_under(self, prefix, n) -> np.ndarray:
        """The first ``n`` survivors under ``prefix`` (``n`` at most their count), in order; the
        walk stops there."""
        ffi = _get_ffi()
        pre = np.ascontiguousarray(prefix, dtype=np.int64)
        arr = np.empty(int(n), dtype=self.dtype)
        err, cfg = self._err()
        dummy = ffi.new("int64_t[1]")
        pbase = ffi.cast("int64_t *", ffi.from_buffer(pre)) if pre.size else dummy
        obase = ffi.cast("int64_t *", ffi.from_buffer(arr)) if arr.size and self.ncols else dummy
        got = interruptible(lambda cancel: self.lib.bn_rows_under(pbase, int(n), obase, err, cancel))
        if got < 0:
            raise self.error(err).with_traceback(None)
        if got != n:
            raise BeastError(f"internal error: {got} survivors under a prefix, not {n}")
        return arr

    def pick_each(self, prefixes, selections) -> np.ndarray:
        """For each prefix, the rows at the given ranks (ascending) of its subtree, one list after
        the other, in one call (each walk stops after its last rank)."""
        ffi = _get_ffi()
        pre = np.ascontiguousarray(prefixes, dtype=np.int64)
        width = pre.shape[1] if pre.ndim == 2 else 0
        nsel = np.ascontiguousarray([len(s) for s in selections], dtype=np.int64)
        sel = np.ascontiguousarray(np.concatenate(selections) if len(selections) else [], dtype=np.int64)
        out = np.empty(len(sel), dtype=self.dtype)
        if len(sel) == 0:
            return out
        scratch = np.empty(int(max(s[-1] for s in selections if len(s))) + 1, dtype=self.dtype)
        err, cfg = self._err()
        dummy = ffi.new("int64_t[1]")

        def ptr(a):
            return ffi.cast("int64_t *", ffi.from_buffer(a)) if a.size and a.dtype.itemsize else dummy
        if interruptible(lambda cancel: self.lib.bn_pick_each(ptr(pre), len(pre), width, ptr(nsel), ptr(sel),
                                                              ptr(scratch), ptr(out), err, cancel)) < 0:
            if err.kind == 0:
                raise BeastError("internal error: fewer survivors under a prefix than its count")
            raise self.error(err).with_traceback(None)
        return out

    # -- errors
    def error(self, err) -> BeastError:
        sites = self.source.sites
        kind = KINDS[err.kind - 1] if 1 <= err.kind <= len(KINDS) else None
        order = self.program.loop_order
        config = {order[i]: int(err.cfg[i]) for i in range(min(err.nbound, len(order)))}
        site = sites[err.site] if 0 < err.site < len(sites) else None
        if kind is None:
            return BeastError("internal error in the C enumerator (a work item was lost)")
        if kind == "cancelled":         # a user function's loop saw the stop request of Ctrl-C
            return KeyboardInterrupt()
        if isinstance(site, LoopValueSite):
            return self._loop_value_error(site, kind, err, config)
        if isinstance(site, TableSite):
            return BeastError(f"internal error: '{site.name}' was called with arguments outside the "
                              "values it was tabulated for", hint="please report this bug")
        if isinstance(site, ExcSite):
            exc = site.exc
            if isinstance(exc, BeastError):
                return EvaluationError(exc.message, site.filename, site.lineno, site.col, site.end,
                                       hint=exc.hint, config=config)
            message = explain(exc)          # with the hint the Python backend gives it
            return EvaluationError(message, site.filename, site.lineno, site.col, site.end,
                                   hint=OVERFLOW_HINT if message == "integer overflow" else None, config=config)
        if kind == "count_overflow":     # the space's, not one configuration's
            return EvaluationError(COUNT_OVERFLOW, hint=COUNT_HINT)
        if kind == "too_many_values" and isinstance(site, UserSite):        # at the yield or return
            return EvaluationError(OWN_MESSAGES[kind], site.filename, site.lineno, site.col, site.end,
                                   hint=f"the C backend holds at most {MAX_VALUES:,} values of one call; "
                                        "--backend python or lua enumerate it (auto falls back by itself)",
                                   config=config)
        if kind in OWN_MESSAGES and kind != "complex_pow":
            return EvaluationError(OWN_MESSAGES[kind], config=config)
        if isinstance(site, UserSite):
            if kind == "overflow":
                return EvaluationError("integer overflow", site.filename, site.lineno, site.col, site.end,
                                       hint=OVERFLOW_HINT, config=config)
            message = OWN_MESSAGES.get(kind) or explain(_sample(kind))
            return EvaluationError(message, site.filename, site.lineno, site.col, site.end, config=config)
        if isinstance(site, NodeSite):
            return self._node_error(site, kind, config)
        return EvaluationError(OWN_MESSAGES.get(kind) or kind, config=config)

    def _loop_value_error(self, site, kind, err, config):
        node = site.node
        where = node_location(node) if node is not None else (None, None, None, None)
        if kind == "non_integer":
            if err.bad_f == 1:
                bad = float(err.bad_d)
            elif err.bad_f == 2:
                bad = self.source.objects[err.bad_i]
            else:
                bad = int(err.bad_i)
            if isinstance(bad, int) and not isinstance(bad, bool):     # an integer past 64 bits
                return EvaluationError(f"integer overflow in iterator '{site.var}'", *where,
                                       hint=OVERFLOW_HINT, config=config)
            config[site.var] = bad
            return EvaluationError(f"iterator '{site.var}' yields a non-integer value {bad!r}", *where,
                                   hint="iterator values are integers; use // for integer division",
                                   config=config)
        if kind == "returned_none":
            return EvaluationError("an @iterator function returned None", *where,
                                   hint="return a scalar, a list or a range on every path", config=config)
        if kind == "bad_return":
            return EvaluationError(str(self.source.objects[err.bad_i]), *where, config=config)
        return EvaluationError(kind, *where, config=config)

    def _env(self, site, config):
        """The variables in scope at a statement: the loop values, then its lets recomputed."""
        env = dict(config)
        for let in site.lets:
            try:
                env[let.var] = evaluate(let.expr, env)
            except Exception:  # noqa: BLE001 - it ran in C; a value Python cannot redo is left out
                pass
        return env

    def _node_error(self, site, kind, config):
        node = site.node
        role = ROLE_NAMES.get(getattr(node, "role", None), "node")
        if kind == "overflow":
            if node is None:
                return EvaluationError("integer overflow", hint=OVERFLOW_HINT, config=config)
            return EvaluationError(f"integer overflow in {role} '{node.name}'",
                                   *overflow_position(node, self._env(site, config)),
                                   hint=OVERFLOW_HINT, config=config)
        exc = ComplexPowerError() if kind == "complex_pow" else _sample(kind)
        failed = failed_operation(node, self._env(site, config), exc) if node is not None else None
        message = explain(exc, failed.op if failed is not None else None)
        if failed is not None and failed.pos is not None:
            filename, lineno, col, end = failed.pos
            if col is None:
                col, end = caret_in_statement(filename, lineno, exc)
            return EvaluationError(f"{message} in {role} '{node.name}'", filename, lineno, col, end,
                                   config=config)
        if node is None:
            return EvaluationError(message, config=config)
        return node_error(message, node, exc, config)


def _python_functions(program):
    return lambda: compile_functions(program)


def build(program, threads=None, source: Prepared | None = None) -> CEnumerator:
    """Print, compile (or find in the cache) and load the C enumerator of ``program``
    (``source``: the program already printed by :func:`prepare`)."""
    prepared = source if source is not None else prepare(program)
    lib, path = load_library(prepared.source.text, program.name)
    return CEnumerator(program, prepared.source, prepared.text, lib, path)


RUNTIME_FILE = "beast_runtime.c"


def render(program) -> dict:
    """The generated C, for people to read (``beast compile``): file name -> text. The runtime
    (the same for every space) comes first, the enumerator last; ``cc -O2 -fPIC -shared -pthread
    NAME_enumerator.c beast_runtime.c -lm`` builds the shared object beast loads."""
    return {RUNTIME_FILE: driver_text(), f"{program.name}_enumerator.c": prepare(program).text}


__all__ = ["build", "render", "CEnumerator", "compiler", "library_path", "driver_text", "CFLAGS",
           "prepare", "cached_library", "Prepared", "runtime_entry", "object_argv", "link_argv"]
if sys.platform == "win32":   # pragma: no cover
    raise ImportError("the C backend needs POSIX threads")
