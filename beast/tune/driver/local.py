"""Tuning on this machine: :func:`tune` (what ``beast tune`` runs) measures a space's survivors on
one backend, compiling ahead on a thread pool.

What a run does apart from compiling and measuring -- the log and its resume, the reference,
the candidates, the speed model's gate, twins, early cuts, progress -- is the shared
:class:`~beast.tune.driver.session.Session`.  Here, a thread pool (one thread per CPU)
compiles the next configurations (NVRTC, CPU) while the calling thread measures one on the
GPU -- the oldest compiled, or a later one when the oldest compile lags (:func:`next_ready`);
the backend is told the best time so far, so that it can cut a clear loser short, and a
configuration that runs a binary and launch measured before is not measured again.  It prints
nothing: progress goes to the ``progress`` callback, the summary to :func:`format_report`.

The backend protocol (:class:`beast.tune.device.gpu.CupyBackend` is the real one; tests pass fakes):

* ``device_name`` -- the GPU that measures (recorded in the log header);
* ``compile(config) -> compiled`` -- called on worker threads; raises on failure (recorded
  as ``compile_error``);
* ``measure(compiled) -> Measurement`` -- called on the calling thread, one at a time;
  raising :class:`~beast.tune.device.measure.FatalBackendError` stops the run after recording the
  configuration (``context_lost``), any other exception is recorded as ``launch_error``; a ``started`` record
  is logged before each call, so that a configuration that kills the process is logged as
  ``crashed`` by the next run rather than tried again;
* ``identity(compiled)`` (optional) -- what the GPU runs: configurations of one identity are
  measured once;
* ``reference() -> Measurement`` (optional) -- cuBLAS on the same problem;
* ``close()`` (optional).

On a GPU, :func:`tune` wraps the CuPy backend in :class:`beast.tune.device.isolate.IsolatedBackend`
(``isolate``): measurements run in a worker process killed at a time limit, and a hang, an
illegal address or a crash is logged as ``timeout``, ``context_lost`` or ``crashed``.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, TimeoutError as FutureTimeout, wait as futures_wait

from ...errors import BeastError
from ..device.measure import COMPILE_ERROR, CONTEXT_LOST, LAUNCH_ERROR, FatalBackendError, Measurement
from ..kernels.families import KernelFamily
from ..kernels.paper import GemmSettings
from .candidates import candidates, random_keys  # noqa: F401 - re-exported
from .report import format_report, pace, progress_line  # noqa: F401 - re-exported
from .session import (ProgressFn, Session, TuneReport, TuneResult, check_count, check_strategy,  # noqa: F401
                      check_switch, check_time_limit, check_tune_arguments, checked, gpu_compute_capability,
                      measure_reference, message, parse_duration, peak_gflops, run_summary, takes, tune_family)

#: the most compile-ahead threads :func:`default_compile_workers` gives.
MAX_COMPILE_WORKERS = 32
#: how long the measuring loop waits for the oldest compile before it takes a later one that is done.
HEAD_WAIT = 0.25


class CompilePool:
    """``workers`` daemon threads running submitted calls, each answered by a
    :class:`concurrent.futures.Future`.  ThreadPoolExecutor's threads hold the interpreter's exit
    up until their calls end (an NVRTC compile can take many seconds); these do not, so Ctrl-C
    ends ``beast tune`` at once."""

    def __init__(self, workers: int):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"beast-compile-{i}", daemon=True)
                         for i in range(max(1, int(workers)))]
        for t in self._threads:
            t.start()

    def submit(self, fn, *args) -> Future:
        """Run ``fn(*args)`` on a pool thread; its future."""
        future: Future = Future()
        self._queue.put((future, fn, args))
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Cancel what has not started and let the threads end (a call in flight finishes on its
        own, or dies with the process)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._queue.put(None)


def default_compile_workers() -> int:
    """Compile-ahead threads: one per CPU this process may run on (at most
    :data:`MAX_COMPILE_WORKERS`): NVRTC releases the GIL, so the threads compile in parallel."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(MAX_COMPILE_WORKERS, n))


def next_ready(pending, time_left, head_wait: float = HEAD_WAIT) -> int:
    """The position in ``pending`` (``(config, future)`` in submission order) of the next
    configuration to measure: the oldest, unless its compile still runs ``head_wait`` seconds on
    while a later one's is done -- then the oldest of those done, so that one slow compile does
    not hold the GPU up.  ``time_left()``: seconds until the time limit (None: none);
    FutureTimeout when it passes with no compile done."""
    left = time_left()
    futures_wait([pending[0][1]], timeout=head_wait if left is None else max(0.0, min(head_wait, left)))
    while True:
        for i, (_, future) in enumerate(pending):
            if future.done():
                return i
        left = time_left()
        if left is not None and left <= 0:
            raise FutureTimeout()
        futures_wait([f for _, f in pending], timeout=left, return_when=FIRST_COMPLETED)


def _default_backend(space, settings: GemmSettings, size, seed: int, family: KernelFamily, isolate):
    """The CuPy backend of :func:`tune`: in a worker process (:mod:`beast.tune.device.isolate`) unless
    ``isolate`` is False; its time limits know the problem's FLOPs and the profile's peak."""
    if isolate is None or isolate:
        from ..device.gpu import CupyFactory
        from ..device.isolate import IsolatedBackend, MeasureLimits
        from ..device.measure import gemm_flops
        limits = MeasureLimits(flops=gemm_flops(*size, settings.is_complex),
                               peak_gflops=peak_gflops(space, settings, family))
        return IsolatedBackend(CupyFactory(dict(space.settings), tuple(size), seed, family.name), limits)
    from ..device.gpu import CupyBackend
    return CupyBackend(settings, size, seed=seed, family=family.name)


def tune(space, size, *, budget: int | None = None, strategy="exhaustive",
         log_path: str | os.PathLike | None = None, seed: int = 0, compile_workers: int | None = None,
         progress: ProgressFn | None = None, backend=None, lookahead: int | None = None,
         chunk_size: int = 65536, time_limit: float | None = None, isolate: bool | None = None,
         model: bool | None = None, prior=None) -> TuneReport:
    """Tune the GEMM kernel over the survivors of ``space`` for an M x N x K problem.

    ``space``: a :class:`beast.space.Space` (its iterators name the GEMM parameters; its
    settings give precision, arithmetic and transposes).  ``size``: (M, N, K), positive
    integers.  ``budget``: how many configurations the log should hold in the end (resumed
    ones count), a positive integer, or None for all survivors.  ``strategy``:
    ``"exhaustive"`` (:data:`beast.search.EXHAUSTIVE`), a name of :data:`beast.search.STRATEGIES`
    (``seed``, a non-negative integer, seeds it), or an object with ``ask(n)`` and
    ``tell(config, measurement)`` (:class:`beast.search.base.StrategyStream` says how it is
    driven; it is told the log's results first).  ``log_path``: JSONL log
    to write, or resume when it exists (a log of another problem is refused).
    ``compile_workers``: compile-ahead threads (default :func:`default_compile_workers`: every
    CPU); ``lookahead``: the most configurations compiling or compiled and waiting to be
    measured (default ``2 * compile_workers + 2``); ``chunk_size``: rows per enumeration
    chunk.  These are positive integers.  ``time_limit``: positive seconds; the run stops
    cleanly once they have passed (a measurement in flight finishes, compiles not yet
    measured are dropped), with ``report.time_up`` set.  ``progress(done, total, best)`` --
    or ``progress(done, total, best, report)`` when it takes four arguments, to show the
    GPU's busy share -- is called after every configuration (``total`` is None when unknown).
    ``backend``: the measuring backend (default :class:`beast.tune.device.gpu.CupyBackend`, which
    raises DeviceError "no GPU found" without a GPU); a backend whose ``measure`` takes
    ``best_ms`` is told the best time so far (it may then cut a clear loser short), and one
    with ``identity(compiled)`` has configurations of equal identity (the same binary and
    launch) measured once.  ``isolate``: measure in a worker process that is killed at a time
    limit (:mod:`beast.tune.device.isolate`), so that a hung, crashing or context-poisoning kernel is
    logged and the run goes on; None (the default) isolates the CuPy backend made here and runs
    a given ``backend`` in this process (True with a given backend needs an
    :class:`~beast.tune.device.isolate.IsolatedBackend`).  ``model``: use the speed model
    (:class:`beast.tune.model.speed.ModelGate`) to order the first ``lookahead`` candidates by
    predicted time, and to log a candidate whose optimistic lower bound exceeds the best time so
    far as ``pruned``, neither compiled nor measured (it counts in the budget, as a configuration
    tried); None (the default) uses it with the GPU backend made here and not with a given
    ``backend``; it is off where the device profile lacks what the model needs or is another
    compute capability than the measuring GPU's.  Ctrl-C stops the run and returns the report
    with ``interrupted`` set.  An argument that is not as said here is a BeastError
    naming it, before any compile or GPU work (:func:`check_tune_arguments`).  ``prior``: earlier
    runs of the space (paths of beast tune logs or Kernel Tuner cache files) that the
    ``portfolio`` strategy starts from (:mod:`beast.search.prior`).
    """
    strategy = check_strategy(strategy)
    check_switch(isolate, "isolate")
    check_switch(model, "model")
    if prior:
        from ...search.prior import check_prior_strategy
        check_prior_strategy(strategy)
    size, budget, time_limit = check_tune_arguments(
        size, budget=budget, seed=seed, time_limit=time_limit, chunk_size=chunk_size, progress=progress,
        compile_workers=compile_workers, lookahead=lookahead)
    family, settings = tune_family(space)

    own_backend = backend is None
    if backend is None:
        backend = _default_backend(space, settings, size, seed, family, isolate)
    elif isolate and not getattr(backend, "isolated", False):
        raise BeastError("isolate=True needs a backend that measures in a worker process",
                         hint="pass backend=IsolatedBackend(factory) (beast.tune.device.isolate), or no backend")
    workers = default_compile_workers() if compile_workers is None else compile_workers
    lookahead = 2 * workers + 2 if lookahead is None else lookahead
    try:
        session = Session(space, size, family, settings, strategy=strategy, budget=budget, seed=seed,
                          prior=prior, log_path=log_path, time_limit=time_limit, chunk_size=chunk_size,
                          device_name=getattr(backend, "device_name", None),
                          gpu_cc=gpu_compute_capability(backend), model=own_backend if model is None else model,
                          progress=progress, compile_workers=workers)
        pool = None
        try:
            if hasattr(backend, "reference"):
                session.set_reference(measure_reference(backend))
            stream = session.begin(lookahead)
            pool = CompilePool(workers)
            _measure(session, backend, stream, pool, lookahead)
        except KeyboardInterrupt as exc:
            session.interrupt(exc)
        finally:
            if pool is not None:
                pool.shutdown()
            session.finish()
    finally:
        if own_backend and hasattr(backend, "close"):
            backend.close()
    return session.report


def _measure(session: Session, backend, stream, pool: CompilePool, lookahead: int) -> None:
    """The loop of :func:`tune`: keep ``lookahead`` configurations compiling, measure the next
    ready one, settle every outcome in ``session``; returns when the stream ends, the time is
    up or a fatal backend error stopped the run."""
    report = session.report
    takes_best = takes(backend.measure, "best_ms")
    identity = getattr(backend, "identity", None)
    pending: deque = deque()
    clock = time.monotonic

    def fill():
        while len(pending) < lookahead:
            cfg = next(stream, None)
            if cfg is None:                          # the end, or a strategy waiting for results
                return
            pending.append((cfg, pool.submit(backend.compile, cfg)))

    fill()
    while pending:
        left = session.time_left()
        if left is not None and left <= 0:
            report.time_up = True
            return
        try:
            index = next_ready(pending, session.time_left)
        except FutureTimeout:                        # the limit passed while they compiled
            report.time_up = True
            return
        cfg, future = pending[index]
        del pending[index]
        fill()                                       # keep compiling ahead while measuring
        if session.prune(cfg):                       # the best improved since it was queued
            future.cancel()
            continue
        fatal = None
        try:
            compiled = future.result()
        except Exception as err:
            session.settle(cfg, Measurement(COMPILE_ERROR, error=message(err)), spent=0.0)
            fill()
            continue
        key = _identity(identity, compiled)
        twin = session.twins.copy(key)
        if twin is not None:
            session.settle(cfg, twin, spent=0.0)
            fill()
            continue
        session.started(cfg)                         # flushed: a crash now is found on resume
        t0 = clock()
        try:
            if takes_best:
                meas = backend.measure(compiled, best_ms=session.best_ms)
            else:
                meas = backend.measure(compiled)
        except FatalBackendError as err:
            if not err.measured:                     # not tried: nothing to record
                report.stopped = str(err)
                return
            meas = Measurement(CONTEXT_LOST, error=err.message)
            fatal = err
        except Exception as err:
            meas = Measurement(LAUNCH_ERROR, error=message(err))
        spent = clock() - t0
        if isinstance(meas, Measurement):
            meas.extra.setdefault("measure_s", round(spent, 4))
        meas = checked(meas)
        if fatal is None:
            session.twins.remember(key, cfg, meas)
        session.settle(cfg, meas, spent=spent)
        if fatal is not None:
            report.stopped = str(fatal)
            return
        fill()                                       # a strategy that waited may propose now


def _identity(identity, compiled):
    """The backend's identity of a compiled configuration (None: it has none, or it failed)."""
    if identity is None:
        return None
    try:
        return identity(compiled)
    except Exception:
        return None


__all__ = ["tune", "TuneReport", "TuneResult", "CompilePool", "next_ready", "default_compile_workers",
           "check_tune_arguments", "check_count", "check_time_limit", "parse_duration", "run_summary",
           "tune_family", "candidates", "random_keys", "format_report", "progress_line", "pace",
           "MAX_COMPILE_WORKERS", "HEAD_WAIT"]
