"""The ``auto`` backend: pick the enumerator that answers soonest, and prepare C for next time.

A first run pays for everything it builds: compiling the C enumerator takes a compiler's start and
a few tenths of a second, while LuaJIT runs a small or medium space in milliseconds. ``auto`` therefore chooses, for a program:

0. **Python** when the estimated work (:func:`estimate_work`) is below :data:`PYTHON_WORK`:
   printing, compiling and running the Python loop nest costs less than starting a LuaJIT state
   and compiling the Lua chunk (bench/README.md has the figures); **Lua** (or Python, see 3) when it is below :data:`BACKGROUND_C_WORK`:
   LuaJIT is done in about a millisecond. C is not even looked up in either case.
1. **C** when its shared object is already in the cache (:func:`c_backend.cached_library`):
   loading it costs a ``dlopen``, and C is the fastest backend, multithreaded.
2. **C**, compiled now, when the estimated work (:func:`estimate_work`, the size of the loop
   nest's cartesian product) is at least :data:`FOREGROUND_C_WORK`: there the compile is paid back
   in the same run.
3. Otherwise **Lua** (LuaJIT through lupa), or **Python** where LuaJIT is not available; and when
   the estimated work is at least :data:`BACKGROUND_C_WORK`, a background process compiles the C
   enumerator into the cache (:func:`c_background.build_in_background`), so that the next run takes
   case 1.

When the C build fails (cases 1 and 2), ``auto`` runs case 3's backend and says so in one warning
line, with the compiler's first error.

Every backend gives the same rows in the same order and the same errors; :class:`AutoEnumerator`
also covers the two places where a backend has a limit of its own (Lua computes integers exactly
only within +-2**53, the C enumerator buffers a bounded number of values per iterator-function
call): when the chosen backend stops at such a limit, the run is redone by the Python backend
(the reference), skipping the rows already handed out. ``BEAST_AUTO_BACKEND=c|lua|python``
forces the choice (for tests and benchmarks), ``BEAST_BACKGROUND_BUILD=0`` turns the background
build off.
"""
from __future__ import annotations

import itertools
import os

from ..errors import BeastError, EvaluationError

NAME = "auto"
FOREGROUND_C_WORK = 2 * 10 ** 9      # cartesian size from which compiling C now pays back at once
BACKGROUND_C_WORK = 10 ** 5          # from which a C build for next time is worth a background process
PYTHON_WORK = 2048                   # below which Python's set-up (no LuaJIT state) answers soonest
UNKNOWN_LENGTH = 16                  # a loop whose length cannot be estimated without running it
_MAX_SAMPLES = 16                    # combinations of outer values tried per loop


# ---------------------------------------------------------------------------------------------
# The work estimate

def _seq_lengths(seq, envs, funcs):
    """Lengths of ``seq`` under each sample environment (None where it cannot be evaluated), and
    sample values (first and last) of the sequence."""
    from ..expr.nodes import evaluate
    from ..expr.sequences import (CallSeq, DivisorSeq, RangeSeq, ScalarSeq, SetOpSeq, SolveSeq, ValuesSeq, range_length)
    if isinstance(seq, ValuesSeq):
        vals = seq.values
        return [len(vals)], list({vals[0], vals[-1]}) if vals else []
    if isinstance(seq, (ScalarSeq, SolveSeq)):
        expr = seq.value
        samples = []
        for env in envs:
            try:
                value = evaluate(expr, env, funcs)
            except Exception:  # noqa: BLE001 - an estimate: a failure here is not the user's error
                continue
            if isinstance(value, int) and value not in samples:
                samples.append(value)
        return [1], samples
    if isinstance(seq, RangeSeq):
        lengths, samples = [], []
        for env in envs:
            try:
                rng = range(*(evaluate(e, env, funcs) for e in (seq.start, seq.stop, seq.step)))
            except Exception:  # noqa: BLE001
                continue
            lengths.append(range_length(rng))
            for v in ((rng[0], rng[-1]) if rng else ()):
                if v not in samples:
                    samples.append(v)
        return lengths or [None], samples
    if isinstance(seq, DivisorSeq):
        lengths, samples = _seq_lengths(seq.base, envs, funcs)
        return [None if n is None else min(n, UNKNOWN_LENGTH) for n in lengths], samples
    if isinstance(seq, SetOpSeq):
        left, ls = _seq_lengths(seq.left, envs, funcs)
        right, rs = _seq_lengths(seq.right, envs, funcs)
        known = [n for n in left + right if n is not None]
        return [max(known) * 2 if known else None], ls + [v for v in rs if v not in ls]
    if isinstance(seq, CallSeq):
        return [None], []
    return [None], []


def _envs(names, samples):
    """Up to ``_MAX_SAMPLES`` environments over the sample values of ``names``."""
    pools = [samples.get(n) or [] for n in names]
    if any(not p for p in pools):
        return []
    combos = itertools.islice(itertools.product(*pools), _MAX_SAMPLES)
    return [dict(zip(names, combo)) for combo in combos]


def estimate_work(program) -> int:
    """The size of the cartesian product of ``program``'s loop nest: the product of the loops'
    lengths, each the largest it takes for the first and last values of the loops around it
    (conditions are ignored, so this is an upper bound on the innermost visits when every
    length is known; a length that needs a user function to compute counts as
    :data:`UNKNOWN_LENGTH`)."""
    from ..ir import Let, Loop
    from ..expr.nodes import evaluate
    from ..expr.sequences import free_vars
    funcs = None     # user functions are not run for an estimate: their loops count as unknown
    samples = {k: [v] for k, v in program.constants.items() if isinstance(v, (int, float))}
    work = 1
    body = program.body
    while body:
        loop = None
        for stmt in body:
            if isinstance(stmt, Let):
                names = free_vars(stmt.expr)
                values = []
                for env in (_envs(names, samples) if names else [{}]):
                    try:
                        value = evaluate(stmt.expr, env, funcs)
                    except Exception:  # noqa: BLE001 - an estimate, not the user's error
                        continue
                    if isinstance(value, (int, float)) and value not in values:
                        values.append(value)
                samples[stmt.var] = values[:4]
            elif isinstance(stmt, Loop):
                loop = stmt
        if loop is None:
            break
        names = free_vars(loop.seq)
        envs = _envs(names, samples) if names else [{}]
        lengths, values = _seq_lengths(loop.seq, envs or [{}], funcs)
        known = [n for n in lengths if n is not None]
        work *= max(known) if known else UNKNOWN_LENGTH
        samples[loop.var] = values[:4]
        body = loop.body
    return work


# ---------------------------------------------------------------------------------------------
# The choice

def available(name) -> bool:
    from .registry import get_backend
    try:
        get_backend(name)
    except BeastError:
        return False
    if name == "lua":
        try:
            import lupa.luajit21  # noqa: F401
        except ImportError:
            return False
    return True


def choose(program):
    """``(backend name, reason, C source or None)`` for ``program``; starts the background build
    of the C enumerator where :func:`the rules <beast.runtime.auto>` say so."""
    forced = os.environ.get("BEAST_AUTO_BACKEND")
    if forced:
        if forced not in ("c", "lua", "python"):
            raise BeastError(f"BEAST_AUTO_BACKEND={forced!r} is not a backend",
                             hint="use c, lua or python, or unset it")
        return forced, "forced by BEAST_AUTO_BACKEND", None
    work = estimate_work(program)
    try:
        reason = f"estimated work {work:.3g}"
    except OverflowError:       # past the floats (range(10**309)): the count refuses it later
        from ..errors import short_int
        reason = f"estimated work {short_int(work)}"
    if work < PYTHON_WORK:
        # measured crossover (first run, count + enumerate): Python wins up to 1-3 thousand visits
        return "python", reason, None
    if work < BACKGROUND_C_WORK:
        # LuaJIT finishes before a C compiler has started: no C at all, not even a cache look-up
        return _fallback(), reason, None
    source, why = _c_source(program)
    if source is None:
        return _fallback(), reason + f"; {why}", None
    from .c import enumerator as c_backend
    if c_backend.cached_library(source) is not None:
        return "c", reason + "; the C enumerator is in the cache", source
    if work >= FOREGROUND_C_WORK:
        return "c", reason + f" >= {FOREGROUND_C_WORK:.0e}: compiling C now pays back at once", source
    if os.environ.get("BEAST_BACKGROUND_BUILD", "1") != "0":
        from .c.background import build_in_background
        build_in_background(source)
        reason += "; C is being built in the background for the next run"
    return _fallback(), reason, None


def _fallback() -> str:
    """The backend that runs when C does not: LuaJIT, else Python (looked up only when needed:
    importing the Lua backend costs a few milliseconds that a cached C run need not pay)."""
    return "lua" if available("lua") else "python"


def _limit_error(err, backend) -> bool:
    """True when ``err`` is a backend's own limit rather than the space's error."""
    if not isinstance(err, EvaluationError):
        return False
    if backend == "lua":
        from .lua import OVERFLOW_HINT
        return err.hint == OVERFLOW_HINT
    if backend == "c":
        from .c.enumerator import OWN_MESSAGES
        return err.message == OWN_MESSAGES["too_many_values"]
    return False


class AutoEnumerator:
    """The enumerator ``auto`` chose (``backend``, ``reason``), with the Python backend as the
    fallback when the chosen one stops at a limit of its own."""

    def __init__(self, program, threads=None):
        self.program = program
        self.backend, self.reason, source = choose(program)
        if self.backend == "c":
            from .c import enumerator as c_backend
            try:
                self.inner = c_backend.build(program, source=source)
            except BeastError as err:
                # a compiler that fails on this machine: the others give the same answer, more
                # slowly, so the user hears why
                self.backend = _fallback()
                self.reason += f"; the C build failed, using {self.backend}"
                _say_fallback(err, self.backend)
                self.inner = _build(self.backend, program)
        else:
            self.inner = _build(self.backend, program)
        self._reference = None

    def __getattr__(self, name):
        # what only some callers use (stats' tally, sampling's count_each and rows_under, dtype):
        # the chosen enumerator's own
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _reference_enumerator(self):
        if self._reference is None:
            self._reference = _build("python", self.program)
        return self._reference

    def count(self, threads=None) -> int:
        """How many configurations survive."""
        try:
            return self.inner.count(threads=threads)
        except EvaluationError as err:
            if not _limit_error(err, self.backend):
                raise
        return self._reference_enumerator().count(threads=threads)

    def chunks(self, chunk_size=65536, threads=None):
        """The survivors in order, as NumPy structured arrays of at most ``chunk_size`` rows."""
        done = 0
        try:
            for chunk in self.inner.chunks(chunk_size, threads=threads):
                done += len(chunk)
                yield chunk
            return
        except EvaluationError as err:
            if not _limit_error(err, self.backend):
                raise
        skip = done
        for chunk in self._reference_enumerator().chunks(chunk_size, threads=threads):
            if skip >= len(chunk):
                skip -= len(chunk)
                continue
            if skip:
                chunk, skip = chunk[skip:], 0
            yield chunk


def _say_fallback(err, backend):
    """One line on beast's warning path: auto runs ``backend`` because the C build failed."""
    from ..errors import BeastWarning, warn
    first = (err.message or "").strip().splitlines()
    why = first[0] if first else type(err).__name__
    rest = [line.strip() for line in first[1:] if line.strip()]
    if rest:     # the compiler's own words: its first error, else its last line
        why += " " + next((line for line in rest if "error" in line), rest[-1])
    warn(BeastWarning(f"backend auto: the C build failed ({why[:300]}); running {backend} instead"))


def _build(name, program):
    from .registry import get_backend
    return get_backend(name).build(program)


def build(program, threads=None) -> AutoEnumerator:
    """The enumerator of ``program`` on the backend :func:`choose` picks."""
    return AutoEnumerator(program, threads)


def steady_backend(program) -> str:
    """The backend ``auto`` runs for ``program`` once its C build (if any) is in the cache: Python
    for the smallest spaces, LuaJIT (else Python) below the C threshold, C above it where C
    compiles the space.  Starts nothing."""
    work = estimate_work(program)
    if work < PYTHON_WORK:
        return "python"
    if work >= BACKGROUND_C_WORK and _c_source(program)[0] is not None:
        return "c"
    return _fallback()


def _c_source(program):
    """(the C backend's prepared source of ``program``, None), or (None, why C cannot run it:
    no compiler, or a space the C printer refuses)."""
    if not available("c"):
        return None, "no C compiler"
    from .c import enumerator as c_backend
    try:
        return c_backend.prepare(program), None
    except BeastError as err:
        return None, f"the C backend cannot run this space ({err.message})"


def render(program) -> dict:
    """``beast compile --backend auto`` writes the enumerator of :func:`steady_backend`."""
    from .registry import get_backend
    return get_backend(steady_backend(program)).render(program)
