"""The C enumerator built in the background: ``auto`` runs LuaJIT on a first run and leaves the
compiled C enumerator in the cache for the next one (:func:`build_in_background`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

from .. import cache
from .build import Prepared, cached_library, driver_text, link_argv, object_argv

_lock = threading.Lock()

STALE_SECONDS = 3600        # a private build directory this old belongs to a build that died
_background = {}            # entry -> BackgroundBuild started by this process


class BackgroundBuild:
    """A compile of one enumerator running in a detached process.

    The parent writes the C file into a private directory of the cache and starts the compiler
    through a small Python process in its own session, which compiles the runtime's object first
    when the cache lacks it (installing it the same way), installs the ``.c`` and then the
    ``.so`` by atomic rename and removes the directory. The build goes on if this interpreter
    exits (the next run finds the entry); if the build dies, only its private ``.tmp-*``
    directory is left, which a later build removes once it is :data:`STALE_SECONDS` old. Readers
    see no entry or a whole one, never a part."""

    def __init__(self, prepared: Prepared, directory: str):
        self.path = os.path.join(directory, prepared.entry + ".so")
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=directory)
        c_path = os.path.join(tmp, f"{prepared.stem}.c")
        with open(c_path, "w", encoding="utf-8") as fh:
            fh.write(prepared.text)
        obj = os.path.join(directory, prepared.runtime + ".o")
        runtime = None
        if not os.path.exists(obj):
            with open(os.path.join(tmp, "runtime.c"), "w", encoding="utf-8") as fh:
                fh.write(driver_text())
            runtime = object_argv(prepared.argv, os.path.join(tmp, "runtime.o"), os.path.join(tmp, "runtime.c"))
        spec = {"tmp": tmp, "stem": prepared.stem, "so": self.path, "root": _PACKAGE_ROOT, "obj": obj,
                "runtime": runtime,
                "link": link_argv(prepared.argv, os.path.join(tmp, f"{prepared.stem}.so"), c_path, obj)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BACKGROUND_SCRIPT, json.dumps(spec)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True)
        # reap the process when it ends, without holding up the interpreter's exit
        threading.Thread(target=self.process.wait, name="beast-c-build", daemon=True).start()

    def wait(self, timeout=None) -> bool:
        """Wait for the build; True when the shared object is in the cache."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return os.path.exists(self.path)


# the directory that holds the beast package (the build process imports beast from there)
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# After installing the shared object, the build process also writes the cffi declarations module
# into the cache (build._get_ffi): otherwise the next run, the first to load C, would write it,
# importing pycparser and cffi's code generator, which a warm run should not pay for. The private directory is removed last,
# so a waiting reader (bench/, tests) sees the build finished only when both are in place.
_BACKGROUND_SCRIPT = r"""
import json, os, shutil, subprocess, sys
spec = json.loads(sys.argv[1])
tmp, stem, so_path, root, obj = spec["tmp"], spec["stem"], spec["so"], spec["root"], spec["obj"]
def ok(argv):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0
try:
    if not os.path.exists(obj) and spec["runtime"] and ok(spec["runtime"]):
        os.replace(os.path.join(tmp, "runtime.c"), obj[:-2] + ".c")
        os.replace(os.path.join(tmp, "runtime.o"), obj)
    if not os.path.exists(so_path) and os.path.exists(obj) and ok(spec["link"]):
        os.replace(os.path.join(tmp, stem + ".c"), so_path[:-3] + ".c")
        os.replace(os.path.join(tmp, stem + ".so"), so_path)
        try:
            sys.path.insert(0, root)
            from beast.runtime.c.build import _get_ffi
            _get_ffi()
        except Exception:
            pass
finally:
    shutil.rmtree(tmp, ignore_errors=True)
"""


def _remove_stale(directory):
    import time
    now = time.time()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        try:
            if name.startswith(".tmp-") and now - os.stat(path).st_mtime > STALE_SECONDS:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def build_in_background(prepared: Prepared):
    """Start compiling ``prepared`` into the cache in a detached process (at most once per entry
    and process); the :class:`BackgroundBuild`, or None when the entry exists or the cache
    cannot be written."""
    if cached_library(prepared) is not None:
        return None
    with _lock:
        running = _background.get(prepared.entry)
        if running is not None:
            return running
        try:
            directory = cache.cache_dir("c")
            _remove_stale(directory)
            running = BackgroundBuild(prepared, directory)
        except OSError:
            return None
        _background[prepared.entry] = running
    return running
