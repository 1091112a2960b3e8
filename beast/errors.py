"""Errors that beast shows to users: a message at the user's file:line:col with the source line and a caret."""
from __future__ import annotations

import linecache


class BeastError(Exception):
    """An error in the user's input (space file, settings, device), located in the user's file when known.

    ``str(err)`` is the full user-facing report::

        spaces/bad.py:12:9: error: undefined name 'blk_q'
            x = blk_q + 1
                ^^^^^
        hint: ...
    """

    kind = "error"

    def __init__(self, message: str, filename: str | None = None, lineno: int | None = None,
                 col: int | None = None, end_col: int | None = None, hint: str | None = None,
                 source_line: str | None = None):
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col            # 0-based column in UTF-8 bytes of the line, as in ast
        self.end_col = end_col    # 0-based, exclusive
        self.hint = hint
        self.source_line = source_line

    @classmethod
    def at(cls, node, filename: str | None, message: str, hint: str | None = None, **kw):
        """Build an error located at an ``ast`` node (uses lineno/col_offset/end_col_offset)."""
        lineno = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        end = getattr(node, "end_col_offset", None)
        if end is not None and getattr(node, "end_lineno", lineno) != lineno:
            end = None
        return cls(message, filename, lineno, col, end, hint=hint, **kw)

    def _line(self) -> str:
        line = self.source_line
        if line is None and self.filename and self.lineno:
            linecache.checkcache(self.filename)     # the file may have been edited since it was read
            line = linecache.getline(self.filename, self.lineno)
        return (line or "").rstrip("\n")

    def _columns(self, line: str) -> tuple[int | None, int | None]:
        """(col, end_col) in characters of ``line`` (they are counted in its UTF-8 bytes)."""
        def chars(n):
            return None if n is None else len(line.encode("utf-8", "surrogatepass")[:n].decode("utf-8", "ignore"))
        return (self.col, self.end_col) if line.isascii() else (chars(self.col), chars(self.end_col))

    def location(self) -> str:
        if self.filename is None:
            return ""
        parts = [self.filename]
        if self.lineno is not None:
            parts.append(str(self.lineno))
            if self.col is not None:
                parts.append(str(self._columns(self._line())[0] + 1))
        return ":".join(parts) + ": "

    def __str__(self) -> str:
        out = [f"{self.location()}{self.kind}: {self.message}"]
        line = self._line()
        if line.strip():
            col, end = self._columns(line)
            line = line.expandtabs(1)
            out.append("    " + line)
            if col is not None:
                width = max(1, (end or (col + 1)) - col)
                width = min(width, max(1, len(line) - col))
                out.append("    " + " " * col + "^" * width)
        if self.hint:
            out.append(f"hint: {self.hint}")
        return "\n".join(out)


class _WarningReport(BeastError):
    """The text of a :class:`BeastWarning`: a report like an error's, headed ``warning:``."""

    kind = "warning"


class BeastWarning(UserWarning):
    """A likely mistake in the user's input that beast still accepts (a list where an iterator
    was probably meant, an empty space), located like a :class:`BeastError`. ``str(w)`` is the
    full report, ``file:line:col: warning: ...`` with the source line and a caret; the ``beast``
    command prints it so. ``warnings.simplefilter("error", BeastWarning)`` turns them into errors."""

    def __init__(self, message: str, filename: str | None = None, lineno: int | None = None,
                 col: int | None = None, end_col: int | None = None, hint: str | None = None):
        super().__init__(message)
        self.report = _WarningReport(message, filename, lineno, col, end_col, hint=hint)
        self.message, self.hint = message, hint
        self.filename, self.lineno = filename, lineno

    @classmethod
    def at(cls, node, filename: str | None, message: str, hint: str | None = None):
        """A warning located at an ``ast`` node."""
        err = _WarningReport.at(node, filename, message, hint=hint)
        return cls(message, filename, err.lineno, err.col, err.end_col, hint=hint)

    def __str__(self) -> str:
        return str(self.report)


def warn(warning: BeastWarning) -> None:
    """Issue ``warning`` through Python's :mod:`warnings` (shown once per place and text)."""
    import warnings
    warnings.warn(warning, stacklevel=3)


def show_beast_warnings(stream=None) -> None:
    """Print BeastWarnings as their full report (file:line:col: warning: ..., caret, hint) on
    ``stream`` (stderr); other warnings as Python prints them. Used by the ``beast`` command."""
    import sys
    import warnings
    previous = warnings.showwarning
    if getattr(previous, "beast", False):       # installed already (main() called again)
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if isinstance(message, BeastWarning):
            print(str(message), file=stream or file or sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)

    show.beast = True
    warnings.showwarning = show


class SpaceError(BeastError):
    """The space file is not a valid beast space (syntax, names, cycles, types)."""


class SettingError(BeastError):
    """A ``-D NAME=VALUE`` setting that the space does not declare, or a value outside its choices."""


class DeviceError(BeastError):
    """A device profile that cannot be found, read or queried."""


class EvaluationError(BeastError):
    """A configuration could not be evaluated (division by zero, overflow, non-integer iterator value).

    ``config`` holds the iterator values bound when it happened (name -> value)."""

    def __init__(self, message: str, filename=None, lineno=None, col=None, end_col=None,
                 hint=None, config: dict | None = None, source_line=None):
        super().__init__(message, filename, lineno, col, end_col, hint, source_line)
        self.config = dict(config or {})

    def __str__(self) -> str:
        text = super().__str__()
        if self.config:
            # (a string an iterator yielded is quoted: b='a', not b=a)
            cfg = ", ".join(f"{k}={repr(v) if isinstance(v, str) else v}" for k, v in self.config.items())
            text += f"\nconfiguration: {cfg}"
        return text


def frame_position(tb):
    """(file, line, col, end_col) of the operation a traceback entry was executing."""
    code = tb.tb_frame.f_code
    col = end = None
    try:
        pos = list(code.co_positions())[tb.tb_lasti // 2]
        if pos[0] == tb.tb_lineno and pos[2] is not None and pos[1] == pos[0]:
            col, end = pos[2], pos[3]
    except (AttributeError, IndexError):
        pass
    return code.co_filename, tb.tb_lineno, col, end


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C (the ``beast`` command installs the handler) so that partial
    output is removed on the way out; the command then exits with status 143, not 130."""


def short_int(n: int, digits: int = 40) -> str:
    """``n`` for a message: in full up to ``digits`` digits, else ``10**309``, ``-2**70``,
    ``(10**308 + 1)`` where it is a power of 10 or 2 give or take a little, else its digit count.
    A message never prints a huge integer in full (nor hits Python's int-to-str digit limit)."""
    m = abs(n)
    bits = m.bit_length()
    count = int(max(bits - 1, 0) * 0.30102999566398120) + 1     # log10(2): the digit count, or one less
    if m >= 10 ** count:
        count += 1
    if count <= digits:
        return str(n)
    sign = "-" if n < 0 else ""
    for base, k in ((10, count - 1), (2, bits - 1)):
        rest = m - base ** k
        if rest < 10 ** 6:
            return f"{sign}{base}**{k}" if rest == 0 else f"{sign}({base}**{k} + {rest})"
    return f"a {count}-digit {'negative ' if n < 0 else ''}integer"
