"""The system's C compiler: which one (``cc``; ``CC`` overrides), its identity for cache keys
(path and version; ``cc --version`` is remembered in the cache, keyed by the compiler file's path,
size and modification time, since a process start costs several ms), the flags, and running it."""
from __future__ import annotations

import os
import shlex

from ...errors import BeastError
from .. import cache


# -ffp-contract=off: no fused multiply-add (gnu99's default lets GCC fuse a*b + c where the
# target has FMA, on aarch64 always), which rounds once where Python rounds twice
CFLAGS = ("-O2", "-std=gnu99", "-ffp-contract=off", "-fPIC", "-shared", "-pthread")


RUNTIME_CFLAGS = ("-O2", "-std=gnu99", "-ffp-contract=off", "-fPIC", "-pthread", "-c")      # the runtime's object


LIBS = ("-lm",)


_compiler_id = {}


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
