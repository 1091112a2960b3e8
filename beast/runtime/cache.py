"""A content-addressed cache of compiled artefacts (the C backend's shared objects; reusable by any
backend that builds something worth keeping).

- :func:`cache_dir` is ``$BEAST_CACHE_DIR``, else ``$XDG_CACHE_HOME/beast``, else ``~/.cache/beast``.
- :func:`key` hashes any number of parts (text, bytes, numbers) into a hex digest; put into it
  everything the artefact depends on (source text, compiler, flags, beast's version).
- Writers never expose a partial file: they write a private temporary file in the destination's
  directory and ``os.replace`` it into place, so concurrent processes building the same entry each
  install a complete copy and readers see either no file or a whole one.
"""
from __future__ import annotations

import contextlib
import hashlib
import os

# shutil and tempfile are imported by the writers only: looking an entry up needs neither.

ENV_VAR = "BEAST_CACHE_DIR"


def cache_dir(*sub: str, create: bool = True) -> str:
    """The cache directory (or a subdirectory of it), created on demand."""
    root = os.environ.get(ENV_VAR)
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "beast")
    path = os.path.join(os.path.abspath(root), *sub)
    if create:
        os.makedirs(path, exist_ok=True)
    return path


def key(*parts) -> str:
    """A SHA-256 hex digest of ``parts``; each part is length-prefixed, so ("ab", "c") != ("a", "bc")."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            data = part.encode("utf-8")
        elif isinstance(part, (bytes, bytearray, memoryview)):
            data = bytes(part)
        else:
            data = repr(part).encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


@contextlib.contextmanager
def private_dir(directory: str, prefix: str = ".tmp-"):
    """A fresh temporary directory inside ``directory`` (same file system as the final entry, so
    that :func:`install` is an atomic rename), removed afterwards with whatever is left in it."""
    import shutil
    import tempfile
    os.makedirs(directory, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=prefix, dir=directory)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def install(src: str, dest: str) -> str:
    """Atomically move the finished file ``src`` to ``dest`` (replacing any previous copy)."""
    os.replace(src, dest)
    return dest


def atomic_write_bytes(path: str, data: bytes) -> str:
    """Write ``data`` to ``path`` atomically (temporary file in the same directory + rename)."""
    import tempfile
    directory = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.splitext(path)[1], dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str, text: str) -> str:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


#: what each top-level folder of the cache holds (``beast cache`` prints it)
KINDS = {
    "c": "C enumerators (.so), the C runtime object (runtime-*.o), their source",
    "ffi": "cffi's declarations of the enumerators' interface",
    "compilers": "what each C compiler was found to be",
    "sample": "sampling tables (counts of loop prefixes)",
    "facts": "registers and spills from nvcc/ptxas",
    "hostsim": "the host simulator's precompiled headers",
    "hostsim-count": "the host simulator's counting builds",
}


def usage(root: str | None = None) -> list[tuple[str, int, int, str]]:
    """(folder, files, bytes, what it holds) for each top-level entry of the cache, largest first;
    a cache that does not exist yet is empty."""
    root = cache_dir(create=False) if root is None else root
    out = []
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return out
    for name in names:
        path = os.path.join(root, name)
        files = size = 0
        if os.path.isdir(path) and not os.path.islink(path):
            for folder, _, entries in os.walk(path):
                for entry in entries:
                    try:
                        size += os.lstat(os.path.join(folder, entry)).st_size
                        files += 1
                    except OSError:
                        pass
        else:
            try:
                size, files = os.lstat(path).st_size, 1
            except OSError:
                continue
        out.append((name, files, size, KINDS.get(name, "")))
    return sorted(out, key=lambda row: -row[2])


def clear(root: str | None = None) -> int:
    """Remove every entry of the cache (the folder itself stays); the bytes freed.  Each entry is
    rebuilt when it is next needed."""
    import shutil
    root = cache_dir(create=False) if root is None else root
    freed = sum(row[2] for row in usage(root))
    for name in os.listdir(root) if os.path.isdir(root) else ():
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return freed
