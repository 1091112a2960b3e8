"""The C backend's enumerator: a loaded shared object (:mod:`.build`) run on worker threads.

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
(:func:`interruptible`) while the caller waits where a signal reaches it."""
from __future__ import annotations

import os
import sys
import threading
import numpy as np

from ...ir.sites import KINDS, ExcSite, LoopValueSite, NodeSite, TableSite, UserSite
from ...errors import BeastError, EvaluationError
from ...expr.nodes import evaluate
from ...ir.tabulate import MAX_VALUES
from ..registry import MAX_CHUNK_ROWS, check_chunk_size, check_threads
from ..errors import (COMPLEX_POW, COUNT_HINT, COUNT_OVERFLOW, OVERFLOW_HINT, ROLE_NAMES, ComplexPowerError,
                      caret_in_statement, explain, failed_operation, node_error, node_location, overflow_position)
# the build's and the toolchain's names, re-exported for callers of the backend module
from .build import (ABI_VERSION, BLOCK_ROWS, RUNTIME_FILE, TARGET_PER_THREAD, WINDOW_PER_THREAD,  # noqa: F401
                    Prepared, cached_library, driver_text, library_path, link_argv, load_library, object_argv,
                    prepare, render, runtime_entry)
from .build import _get_ffi
from .toolchain import CFLAGS, LIBS, RUNTIME_CFLAGS, compiler, run_compiler  # noqa: F401


NAME = "c"


WAIT_MS = 100               # how long one call waits in C before Python may handle a signal


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


def build(program, threads=None, source: Prepared | None = None) -> CEnumerator:
    """Print, compile (or find in the cache) and load the C enumerator of ``program``
    (``source``: the program already printed by :func:`prepare`)."""
    prepared = source if source is not None else prepare(program)
    lib, path = load_library(prepared.source.text, program.name)
    return CEnumerator(program, prepared.source, prepared.text, lib, path)


if sys.platform == "win32":   # pragma: no cover
    raise ImportError("the C backend needs POSIX threads")


__all__ = ["build", "render", "CEnumerator", "compiler", "library_path", "driver_text", "CFLAGS",
           "prepare", "cached_library", "Prepared", "runtime_entry", "object_argv", "link_argv"]
