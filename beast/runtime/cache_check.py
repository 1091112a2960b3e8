"""Checks of cache entries on load, so that a damaged entry is rebuilt instead of breaking runs.

Every writer installs whole files atomically (:mod:`beast.runtime.cache`), so a damaged entry comes
from outside beast: a full disk under another tool, a copy by hand, a file system that lost data.

- :func:`elf_problem`: an object or shared object is whole when its ELF header's section table
  ends where the file does (assemblers and linkers write that table last, so any truncation cuts
  it); a shared object built for one entry also holds that entry's key (:func:`key_line`), so a
  valid library copied over another space's entry is refused before it is loaded.
- :func:`damaged`: the one-line notice (a :class:`~beast.errors.BeastWarning`, through beast's
  warning path) and the removal of the entry, which its caller then rebuilds once.
"""
from __future__ import annotations

import os
import struct
import sys

KEY_SYMBOL = "beast_key"
_ELF_MAGIC = b"\x7fELF"


def key_bytes(entry: str) -> bytes:
    """The bytes a shared object built for cache entry ``entry`` holds (:func:`key_line`)."""
    return f"beast-key:{entry}\0".encode("ascii")


def key_line(entry: str) -> str:
    """A C definition that puts ``entry``'s key (:func:`key_bytes`) into the object, exported so
    that neither the compiler nor the linker drops it."""
    return (f'\n__attribute__((used, visibility("default"))) const char {KEY_SYMBOL}[] = '
            f'"beast-key:{entry}";\n')


def elf_problem(path: str, entry: str | None = None) -> str | None:
    """Why the object at ``path`` is not a whole entry (built for ``entry`` when given), or None
    when it is (or when it does not exist: nothing to rebuild)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if not data:
        return "empty"
    if data[:4] == _ELF_MAGIC:
        if len(data) < 64:
            return f"truncated ({len(data)} bytes)"
        order = "<" if data[5] == 1 else ">"
        if data[4] == 2:       # ELFCLASS64
            (shoff,) = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        else:
            (shoff,) = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        end = shoff + shentsize * shnum
        if end > len(data):
            return f"truncated ({len(data)} of at least {end} bytes)"
    elif sys.platform.startswith("linux"):
        return "not an ELF object"
    if entry is not None and key_bytes(entry) not in data:
        if b"beast-key:" in data:
            return "built for another entry"
        return "built by an older beast, without an entry key"
    return None


def damaged(path: str, why: str) -> None:
    """Say (one line, through beast's warnings) that the cache entry ``path`` is damaged and will
    be rebuilt, and remove it so that the rebuild installs a fresh copy."""
    from ..errors import BeastWarning, warn
    warn(BeastWarning(f"cache entry {path} is damaged ({why}); rebuilding it"))
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = ["KEY_SYMBOL", "key_bytes", "key_line", "elf_problem", "damaged"]
