"""C enumerators built and cached: the runtime shared by every space (``c_driver.c`` after the
prelude; compiled once per compiler into an object in the cache, :func:`runtime_entry`), each
space's printed loop nest compiled and linked with it into a shared object cached by content hash
(:mod:`beast.runtime.cache`), both checked before use (:mod:`beast.runtime.cache_check`: a
truncated or empty object, or a library without its entry's key, is rebuilt once with a notice),
and loaded with cffi (ABI mode)."""
from __future__ import annotations

import functools
import os
import threading

from ..._version import __version__
from ...codegen.c import print_c, runtime_prelude
from ...errors import BeastError
from ...ir.literals import check_integer_width
from .. import cache
from ..cache_check import damaged, elf_problem, key_line
from ..python import compile_functions
from .toolchain import CFLAGS, LIBS, RUNTIME_CFLAGS, compiler, run_compiler


ABI_VERSION = "6"


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


_ffi = None


_libs = {}


_lock = threading.Lock()


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


def _python_functions(program):
    return lambda: compile_functions(program)


RUNTIME_FILE = "beast_runtime.c"


def render(program) -> dict:
    """The generated C, for people to read (``beast compile``): file name -> text. The runtime
    (the same for every space) comes first, the enumerator last; ``cc -O2 -fPIC -shared -pthread
    NAME_enumerator.c beast_runtime.c -lm`` builds the shared object beast loads."""
    return {RUNTIME_FILE: driver_text(), f"{program.name}_enumerator.c": prepare(program).text}
