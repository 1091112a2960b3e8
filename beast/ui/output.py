"""Writing what a command produces (``-o PATH``): whole or not at all, and never replacing what
is not a regular file.

* ``-``: standard output.
* A new path or an existing regular file: the bytes go to a temporary file in the same folder
  (unnamed where Linux allows, ``O_TMPFILE``, so that even SIGKILL leaves nothing behind),
  which then takes the name in one rename.  A new file gets the mode the umask gives
  (``0666 & ~umask``); a file that is replaced keeps its own mode.
* A symbolic link: what it points to is written by these rules; the link stays.
* A character or block device or a FIFO (``/dev/null``, ``mkfifo``): written in place, as a
  shell redirection would; never replaced.
* One of this process's open files by name (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
  ``/proc/self/fd/N``, a process substitution ``>(cmd)``): written through that descriptor, at
  its position and in its mode (``>>`` appends), whatever it is open on: a pipe, a terminal, a
  regular file.  Opening the name again would truncate a redirected file or, followed to its
  target, replace it.
* A folder or a socket: refused (``cannot write PATH: ...``).
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import sys
import tempfile
from typing import BinaryIO, Callable, Iterator

from ..errors import BeastError


def cannot_write(path, exc: OSError | str) -> BeastError:
    """The error of an output that cannot be written."""
    why = exc if isinstance(exc, str) else (exc.strerror or str(exc))
    return BeastError(f"cannot write {path}: {why}")


def new_file_mode() -> int:
    """The permission bits a new file gets under the process's umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


_FD_PATH = re.compile(r"/(?:proc/(self|\d+)|dev)/fd/(\d+)")
_STD_NAMES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def own_descriptor(path: str) -> int | None:
    """The descriptor N when ``path`` names one of this process's open files (``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/self/fd/N``, or a link to one of them), else None."""
    p = os.path.normpath(os.path.abspath(path))
    for _ in range(40):                       # links to links, as the kernel follows them
        if p in _STD_NAMES:
            return _STD_NAMES[p]
        m = _FD_PATH.fullmatch(p)
        if m is not None:
            if m.group(1) not in (None, "self") and int(m.group(1)) != os.getpid():
                return None                   # another process's: opened by name below
            return int(m.group(2))
        try:
            link = os.readlink(p)
        except OSError:
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), link))
    return None


def _target(path: str) -> tuple[str, os.stat_result | None]:
    """(the path to write, its stat or None when it does not exist): links followed, except the
    magic links of ``/proc/PID/fd`` (another process's open file: written in place by name)."""
    if _FD_PATH.fullmatch(os.path.normpath(os.path.abspath(path))):
        real = path
    else:
        real = os.path.realpath(path) if os.path.islink(path) else path
    try:
        return real, os.stat(real)
    except FileNotFoundError:
        return real, None
    except OSError as exc:
        raise cannot_write(path, exc) from None


def _refuse(path: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise cannot_write(path, "it is a folder")
    if stat.S_ISSOCK(st.st_mode):
        raise cannot_write(path, "it is a socket")


def _in_place(st: os.stat_result | None) -> bool:
    """Whether an existing ``st`` is written in place (a device or a FIFO) rather than replaced."""
    return st is not None and not stat.S_ISREG(st.st_mode)


def _link_open_file(fd: int, name: str) -> None:
    """Give the unnamed (``O_TMPFILE``) file open as ``fd`` the name ``name``: ``linkat`` of
    its ``/proc/self/fd`` entry with ``AT_SYMLINK_FOLLOW``, which needs no privilege (Python's
    ``os.link`` calls ``link``, which would link the ``/proc`` entry itself)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, at_symlink_follow = -100, 0x400
    if libc.linkat(at_fdcwd, f"/proc/self/fd/{fd}".encode(), at_fdcwd, os.fsencode(name), at_symlink_follow):
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), name)


class _Staged:
    """A temporary file beside ``real`` that :meth:`publish` renames to it (see the module)."""

    def __init__(self, path: str, real: str, st: os.stat_result | None):
        self.path, self.real = path, real
        self.mode = stat.S_IMODE(st.st_mode) if st is not None else new_file_mode()
        self.directory = os.path.dirname(os.path.abspath(real)) or "."
        self.name = None                      # the named temporary file, when O_TMPFILE is out
        flags = getattr(os, "O_TMPFILE", 0)
        fd = -1
        if flags and os.path.isdir("/proc/self/fd"):
            try:
                fd = os.open(self.directory, flags | os.O_WRONLY, 0o600)
            except OSError:                   # a file system without unnamed files
                fd = -1
        if fd < 0:
            try:
                fd, self.name = tempfile.mkstemp(prefix=".beast-", suffix=os.path.splitext(real)[1],
                                                 dir=self.directory)
            except OSError as exc:
                raise cannot_write(path, exc) from None
        self.fd = fd

    def publish(self, fh: BinaryIO) -> None:
        """Give the finished temporary file its name (and mode)."""
        fh.flush()
        os.fchmod(self.fd, self.mode)
        if self.name is None:                 # link the unnamed file under a name, then rename it
            name = os.path.join(self.directory, f".beast-{os.getpid()}-{id(self):x}.tmp")
            _link_open_file(self.fd, name)
            self.name = name
        os.replace(self.name, self.real)
        self.name = None

    def discard(self) -> None:
        if self.name is not None and os.path.lexists(self.name):
            os.unlink(self.name)
        self.name = None


@contextlib.contextmanager
def open_output(path) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through (see the module): on a clean exit of the block the
    output takes its place; on an error or an interrupt nothing of it is left."""
    path = os.fspath(path)
    if path == "-":
        yield from _to_stdout()
        return
    fd = own_descriptor(path)
    if fd is not None:
        yield from _through_descriptor(path, fd)
        return
    real, st = _target(path)
    if st is not None:
        _refuse(path, st)
    if _in_place(st):
        try:
            fh = open(real, "wb")             # a device or a FIFO: written where it is
        except OSError as exc:
            raise cannot_write(path, exc) from None
        try:
            with fh:
                yield fh
        except OSError as exc:
            raise cannot_write(path, exc) from None
        return
    staged = _Staged(path, real, st)
    try:
        with os.fdopen(staged.fd, "wb", closefd=False) as fh:
            yield fh
            staged.publish(fh)
    except OSError as exc:                    # the disk is full, the folder went away, ...
        raise cannot_write(path, exc) from None
    finally:
        staged.discard()
        os.close(staged.fd)


def _to_stdout() -> Iterator[BinaryIO]:
    """Python's standard output (``-``); a failed write is the output's fault, not beast's."""
    if sys.stdout is None:
        raise cannot_write("standard output", "it is closed")
    out = sys.stdout.buffer
    try:
        yield out
        out.flush()
    except BrokenPipeError:                   # the reader left (| head): the caller stops quietly
        raise
    except OSError as exc:
        raise cannot_write("standard output", exc) from None


def _through_descriptor(name: str, fd: int) -> Iterator[BinaryIO]:
    """Write through this process's open descriptor ``fd`` (a duplicate of it, so that closing
    ours leaves it open), after what Python already buffered for standard output."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    try:
        fh = os.fdopen(os.dup(fd), "wb", closefd=True)
    except OSError as exc:
        raise cannot_write(name, "it is not open" if exc.errno == errno.EBADF else exc) from None
    try:
        with fh:
            yield fh
    except BrokenPipeError:                   # the reader left (| head): the caller stops quietly
        raise
    except OSError as exc:
        raise cannot_write(name, exc) from None


def check_output(path) -> None:
    """Refuse, before any work, an output that cannot be written: a folder or a socket, or a
    new file in a folder that does not exist or cannot be written to."""
    path = os.fspath(path)
    if path == "-":
        if sys.stdout is None:
            raise cannot_write("standard output", "it is closed")
        return
    fd = own_descriptor(path)
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError:
            raise cannot_write(path, "it is not open") from None
        return
    real, st = _target(path)
    if st is not None:
        _refuse(path, st)
        if _in_place(st):
            return
    directory = os.path.dirname(os.path.abspath(real)) or "."
    folder = os.path.dirname(real) or "."           # as written (a link's: its target's)
    if not os.path.isdir(directory):
        raise cannot_write(path, f"there is no folder {folder}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise cannot_write(path, f"the folder {folder} is not writable")


def is_stream(path) -> bool:
    """Whether ``path`` is written as a stream rather than as a file with a name's format:
    ``-``, one of this process's open files by name (``/dev/stdout``), or an existing device
    or FIFO (``/dev/null``).  Such an output has no extension to tell a format by."""
    path = os.fspath(path)
    if path == "-" or own_descriptor(path) is not None:
        return True
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or stat.S_ISFIFO(st.st_mode)


def write_output(path, write: Callable[[BinaryIO], None]) -> None:
    """Write ``path`` whole or not at all with ``write(fh)`` (see :func:`open_output`)."""
    with open_output(path) as fh:
        write(fh)


@contextlib.contextmanager
def output_file(path, suffix: str = "") -> Iterator[str]:
    """For programs that write a file by name (Graphviz, matplotlib): a temporary path to give
    them; after the block its bytes are written to ``path`` by :func:`open_output`'s rules."""
    path = os.fspath(path)
    check_output(path)
    scratch = tempfile.mkdtemp(prefix="beast-out-")   # not beside the output: nothing to leave there
    tmp = os.path.join(scratch, "out" + suffix)
    try:
        yield tmp
        with open(tmp, "rb") as src, open_output(path) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


__all__ = ["open_output", "write_output", "output_file", "check_output", "cannot_write", "new_file_mode",
           "own_descriptor", "is_stream"]
