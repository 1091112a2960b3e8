"""Progress of long work on a terminal (``beast enumerate``, ``beast tune``): a bar with rate and
ETA; :class:`Busy` for work that is mostly quick (``beast count``, ``stats``, ``replay``, a sample),
drawn only once it has run for a second. tqdm draws it when installed (the optional ``[progress]`` extra); otherwise one plain line on
stderr, rewritten in place. Silent when stderr is not a terminal, or with ``quiet``.

How far an enumeration is comes from its outermost loops: :func:`loop_fraction` places the last
row of each chunk in the sequences of the first loops whose values are known before the run
(constant ranges and lists), e.g. ``dim_m = 37 of 1024`` and ``dim_n = 512 of 1024`` is 3.6%.
"""
from __future__ import annotations

import sys
import threading
import time

from ..expr.nodes import Const
from ..expr.sequences import RangeSeq, ValuesSeq

OUTER_LOOPS = 3          # loops whose position makes the estimate
AFTER = 1.0              # seconds of work before a Busy line appears


def _positions(seq):
    """(value -> its index or None, length) for a sequence known before the run, else None."""
    if isinstance(seq, ValuesSeq):
        pos = {}
        for i, v in enumerate(seq.values):
            pos.setdefault(v, i)
        return pos.get, len(seq.values)
    if isinstance(seq, RangeSeq) and all(isinstance(x, Const) and type(x.value) is int for x in seq.exprs()) \
            and seq.step.value != 0:
        r = range(seq.start.value, seq.stop.value, seq.step.value)
        return (lambda v: r.index(v) if v in r else None), len(r)
    return None


def loop_fraction(program):
    """A function ``chunk -> fraction done`` (0..1) from the outermost loops of ``program`` whose
    values are constant, or None when the outermost loop's values are not known in advance."""
    from ..ir import Loop
    index = []
    block = program.body
    while len(index) < OUTER_LOOPS:
        loop = next((s for s in block if isinstance(s, Loop)), None)
        known = _positions(loop.seq) if loop is not None else None
        if not known or not known[1]:
            break
        index.append((loop.var, known[0], known[1]))
        block = loop.body
    if not index:
        return None

    def fraction(chunk):
        if len(chunk) == 0:
            return None
        row = chunk[-1]
        done, scale = 0.0, 1.0
        for var, pos, n in index:
            i = pos(int(row[var]))
            if i is None:
                break
            scale /= n
            done += i * scale
        return min(done, 1.0)
    return fraction


class Progress:
    """``update(fraction, items)``; ``close()``. Draws only on a terminal and when not ``quiet``."""

    def __init__(self, desc: str, unit: str = "rows", quiet: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = not quiet and getattr(self.stream, "isatty", lambda: False)()
        self.desc, self.unit = desc, unit
        self.start = time.monotonic()
        self.last = 0.0
        self.items = 0
        self.fraction = 0.0
        self.bar = None
        if self.enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=1000, desc=desc, file=self.stream, leave=False,
                                bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]")

    def update(self, fraction=None, items=None, exact: bool = False, force: bool = False):
        """Say how far the work is (``fraction`` of 1) and how many ``items`` are done; an
        estimate never moves the bar back, an ``exact`` fraction replaces it."""
        if items is not None:
            self.items = items
        if fraction is not None:
            fraction = min(1.0, fraction)
            self.fraction = fraction if exact else max(self.fraction, fraction)
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.2 and not force:
            return
        self.last = now
        rate = self.items / max(now - self.start, 1e-9)
        if self.bar is not None:
            self.bar.n = int(self.fraction * 1000)
            self.bar.set_postfix_str(f"{self.items:,} {self.unit}, {rate:,.0f} {self.unit}/s", refresh=False)
            self.bar.refresh()
            return
        self.stream.write("\r" + self.line(now - self.start, rate) + "\x1b[K")
        self.stream.flush()

    def finish(self, items=None):
        """The work is done: the bar shows 100 %."""
        self.update(1.0, items, exact=True, force=True)

    def line(self, elapsed, rate) -> str:
        """The plain progress line (no tqdm)."""
        eta = "?"
        if 0 < self.fraction < 1:
            eta = _clock(elapsed * (1 - self.fraction) / self.fraction)
        width = 24
        full = int(self.fraction * width)
        bar = "#" * full + "-" * (width - full)
        return (f"{self.desc}: {self.fraction * 100:5.1f}% [{bar}] {self.items:,} {self.unit}, "
                f"{rate:,.0f} {self.unit}/s, elapsed {_clock(elapsed)}, ETA {eta}")

    def close(self):
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.close()
        elif self.last:                     # a line was drawn: clear it
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        self.enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Busy:
    """A context manager around work that may or may not be quick: nothing at all unless it is
    still running after ``after`` seconds (default :data:`AFTER`); then a watcher thread draws
    ``desc: 0:03 elapsed``, or the :class:`Progress` bar once :meth:`update` has said how far
    the work is, and the line is cleared when the work ends, by an error or Ctrl-C too (the
    exception goes on). Only on a terminal and when not ``quiet``; the work itself runs as
    fast as without it (the watcher sleeps between draws)."""

    def __init__(self, desc: str, unit: str = "items", quiet: bool = False, stream=None,
                 after: float | None = None, every: float = 0.25):
        self.stream = stream or sys.stderr
        self.enabled = not quiet and getattr(self.stream, "isatty", lambda: False)()
        self.desc, self.unit = desc, unit
        self.after = AFTER if after is None else after
        self.every = every
        self.state = (0, None)          # (done, total): one tuple, so the watcher reads a pair
        self.start = time.monotonic()
        self.drawn = False
        self._bar = None
        self._text = None
        self._stop = threading.Event()
        self._thread = None

    def update(self, done: int, total: int | None = None) -> None:
        """``done`` of ``total`` steps are done (the bar's fraction); cheap enough for each step."""
        self.state = (done, total)

    def _watch(self):
        if self._stop.wait(self.after):
            return
        try:
            while True:
                self._draw()
                if self._stop.wait(self.every):
                    return
        except (OSError, ValueError):   # stderr closed or gone: no line, the work goes on
            return

    def _draw(self):
        done, total = self.state
        if total:
            if self._bar is None:
                self._bar = Progress(self.desc, self.unit, stream=self.stream)
                self._bar.start = self.start
            self._bar.update(done / total, done, exact=True, force=True)
        else:
            text = f"{self.desc}: {_clock(time.monotonic() - self.start)} elapsed"
            if text == self._text:
                return
            self._text = text
            self.stream.write(f"\r{text}\x1b[K")
            self.stream.flush()
        self.drawn = True

    def close(self):
        """Stop the watcher and clear its line (if it drew one)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        try:
            if self._bar is not None:
                self._bar.close()
            elif self.drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
        except (OSError, ValueError):
            pass

    def __enter__(self):
        self.start = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._watch, name="beast-busy", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self.close()


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
