"""Tuning: stream a space's survivors through compile-ahead and measurement, log, report.

:func:`tune` is what ``beast tune`` runs.  The survivors come from ``space.iterate`` (never
materialized for the exhaustive strategy) or a search strategy; a thread pool (one thread per
CPU) compiles the next configurations (NVRTC, CPU) while the main thread measures one on the
GPU -- the oldest compiled, or a later one when the oldest compile lags (:func:`next_ready`);
the backend is told the best time so far, so that it can cut a clear loser short, and a
configuration that runs a binary and launch measured before is not measured again; every
outcome is appended to the log at once, and a ``run`` record at the end says how busy the GPU
was; a resumed run skips what its log already holds; ``time_limit`` ends a run cleanly.  It
prints nothing: progress goes to the ``progress`` callback, the summary to :func:`format_report`.

The backend protocol (:class:`beast.tune.gpu.CupyBackend` is the real one; tests pass fakes):

* ``device_name`` -- the GPU that measures (recorded in the log header);
* ``compile(config) -> compiled`` -- called on worker threads; raises on failure (recorded
  as ``compile_error``);
* ``measure(compiled) -> Measurement`` -- called on the calling thread, one at a time;
  raising :class:`~beast.tune.measure.FatalBackendError` stops the run after recording the
  configuration (``context_lost``), any other exception is recorded as ``launch_error``; a ``started`` record
  is logged before each call, so that a configuration that kills the process is logged as
  ``crashed`` by the next run rather than tried again;
* ``reference() -> Measurement`` (optional) -- cuBLAS on the same problem;
* ``close()`` (optional).

On a GPU, :func:`tune` wraps the CuPy backend in :class:`beast.tune.isolate.IsolatedBackend`
(``isolate``): measurements run in a worker process killed at a time limit, and a hang, an
illegal address or a crash is logged as ``timeout``, ``context_lost`` or ``crashed``.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import math
import numbers
import os
import re
import time
import queue
import threading
from concurrent.futures import FIRST_COMPLETED, Future, TimeoutError as FutureTimeout, wait as futures_wait
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

import numpy as np

from beast.errors import BeastError
from beast.runtime import check_chunk_size, check_integer

from .families import DEFAULT_FAMILY, FAMILIES, KernelFamily, family_of, get_family
from .kernel import GemmSettings
from .log import TuneLog, make_header
from .strategies import check_seed, make_strategy, strategy_stream
from .strategies.prior import check_prior_strategy
from .measure import COMPILE_ERROR, CONTEXT_LOST, LAUNCH_ERROR, OK, PRUNED, STATUSES, FatalBackendError, Measurement
from .reporting import format_report, pace, progress_line  # noqa: F401 - re-exported

#: ``exhaustive`` and ``random`` stream the enumeration here (``random`` goes through
#: :mod:`beast.tune.strategies` when the space can sample); the others are search strategies.
STRATEGIES = ("exhaustive", "random", "local", "model", "hybrid", "portfolio")

#: the most compile-ahead threads :func:`default_compile_workers` gives.
MAX_COMPILE_WORKERS = 32
#: how long the measuring loop waits for the oldest compile before it takes a later one that is done.
HEAD_WAIT = 0.25


@dataclass
class TuneResult:
    """One configuration's outcome (from this run or a resumed log)."""

    config: dict
    measurement: Measurement

    @property
    def status(self) -> str:
        return self.measurement.status

    @property
    def gflops(self) -> float | None:
        return self.measurement.gflops

    @property
    def ms(self) -> float | None:
        return self.measurement.ms


@dataclass
class TuneReport:
    """Everything :func:`tune` learned; :func:`format_report` renders it.

    ``results`` holds every configuration of the log (resumed ones first); ``measured`` how
    many this run measured; ``reference`` the cuBLAS measurement (None without one);
    ``peak_gflops`` the device profile's peak for the precision and the kernel ``family``'s
    units (None when unknown);
    ``interrupted`` whether Ctrl-C ended the run early; ``stopped`` the message of a fatal
    backend error that ended it early; ``time_up`` whether ``time_limit`` (seconds) ended it.
    ``wall_s`` is this run's time in its measuring loop and ``gpu_s`` the part of it spent in
    the backend's ``measure`` (the GPU busy); ``cut`` how many configurations were cut short
    as clear losers and ``twins`` how many ran a binary and launch measured before (copied);
    ``pruned`` how many the speed model kept from being compiled and measured (status ``pruned``).
    """

    iterators: tuple[str, ...]
    settings: dict
    size: tuple[int, int, int]
    device_profile: str
    device_name: str
    strategy: str
    budget: int | None
    results: list[TuneResult] = field(default_factory=list)
    measured: int = 0
    resumed: int = 0
    reference: Measurement | None = None
    peak_gflops: float | None = None
    family: str = DEFAULT_FAMILY
    log_path: str | None = None
    interrupted: bool = False
    stopped: str | None = None
    candidates_left: int | None = None
    time_limit: float | None = None
    time_up: bool = False
    compile_workers: int | None = None
    wall_s: float = 0.0
    gpu_s: float = 0.0
    cut: int = 0
    twins: int = 0
    pruned: int = 0
    compute_capability: tuple | None = None
    gpu_compute_capability: tuple | None = None
    interruption: BaseException | None = None

    @property
    def gpu_busy(self) -> float | None:
        """The share of this run's wall time the GPU spent measuring (None before any)."""
        return min(1.0, self.gpu_s / self.wall_s) if self.wall_s > 0 and self.gpu_s > 0 else None

    @property
    def rate(self) -> float | None:
        """Configurations this run measured per second of wall time."""
        return self.measured / self.wall_s if self.wall_s > 0 and self.measured else None

    @property
    def counts(self) -> dict[str, int]:
        """Configurations per status (every status present, zero included)."""
        out = {s: 0 for s in STATUSES}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    @property
    def tried(self) -> int:
        return len(self.results)

    def best(self, top: int = 10) -> list[TuneResult]:
        """The fastest verified configurations, best first."""
        ok = [r for r in self.results if r.status == OK and r.gflops is not None]
        return sorted(ok, key=lambda r: -r.gflops)[:top]

    @property
    def best_result(self) -> TuneResult | None:
        best = self.best(1)
        return best[0] if best else None

    @property
    def complete(self) -> bool:
        return not self.interrupted and self.stopped is None


ProgressFn = Callable[[int, "int | None", "TuneResult | None"], None]


# --------------------------------------------------------------------------- candidates

def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)).astype(np.uint64)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def random_keys(rows: np.ndarray, names, seed: int) -> np.ndarray:
    """A pseudo-random uint64 key per configuration, a function of its values and ``seed`` only.

    Sorting by it gives the random strategy's order: the same for any chunking of the
    enumeration, and the same when a run is resumed with the same seed."""
    h = _splitmix64(np.full(len(rows), seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64))
    for name in names:
        h = _splitmix64(h ^ rows[name].astype(np.int64).view(np.uint64))
    return h


def _rows_to_configs(rows: np.ndarray, names) -> Iterator[dict]:
    cols = [rows[n].tolist() for n in names]
    for values in zip(*cols):
        yield dict(zip(names, values))


def _not_done_mask(rows: np.ndarray, names, done: Mapping) -> np.ndarray:
    if not done:
        return np.ones(len(rows), dtype=bool)
    cols = [rows[n].tolist() for n in names]
    return np.fromiter((tuple(v) not in done for v in zip(*cols)), dtype=bool, count=len(rows))


def candidates(space, strategy: str, need: int | None, done: Mapping, seed: int = 0,
               chunk_size: int = 65536) -> Iterator[dict]:
    """The configurations to measure, in order, skipping ``done`` (keys in iterator order).

    ``exhaustive``: enumeration order, streamed.  ``random``: the ``need`` configurations
    with the smallest :func:`random_keys` (all of them when ``need`` is None), in key order --
    a uniform sample without replacement, kept in a bounded buffer while streaming.
    """
    names = tuple(space.iterators)
    if need is not None and need <= 0:
        return
    if strategy == "exhaustive":
        left = need
        for rows in space.iterate(chunk_size=chunk_size):
            rows = rows[_not_done_mask(rows, names, done)]
            if left is not None:
                rows = rows[:left]
                left -= len(rows)
            yield from _rows_to_configs(rows, names)
            if left == 0:
                return
        return
    if strategy != "random":
        raise BeastError(f"unknown strategy {strategy!r}", hint="use exhaustive or random")
    kept_rows, kept_keys = None, None
    for rows in space.iterate(chunk_size=chunk_size):
        rows = rows[_not_done_mask(rows, names, done)]
        keys = random_keys(rows, names, seed)
        if kept_rows is not None:
            rows = np.concatenate([kept_rows, rows])
            keys = np.concatenate([kept_keys, keys])
        if need is not None and len(rows) > need:
            sel = np.argpartition(keys, need - 1)[:need]
            rows, keys = rows[sel], keys[sel]
        kept_rows, kept_keys = rows, keys
    if kept_rows is None:
        return
    order = np.argsort(kept_keys, kind="stable")
    yield from _rows_to_configs(kept_rows[order], names)


# --------------------------------------------------------------------------- tune

def _device_identity(space, backend) -> dict:
    """The log header's device: the profile the space was pruned for (name and a hash of all
    its fields, so that a scaled-down or edited profile of the same name differs) and the GPU
    that measures."""
    profile = getattr(space, "device", None)
    name = getattr(profile, "name", None) or (str(profile) if profile is not None else None)
    fields = profile.as_dict() if hasattr(profile, "as_dict") else repr(profile)
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return {"profile": name, "profile_hash": digest, "gpu": getattr(backend, "device_name", None)}


def _compute_capability(space) -> tuple[int, int] | None:
    """(major, minor) of the device profile the space was pruned for (None: unknown)."""
    profile = getattr(space, "device", None)
    try:
        return int(profile.cudamajor), int(profile.cudaminor)
    except (AttributeError, TypeError, ValueError):
        return None


def _gpu_compute_capability(backend) -> tuple[int, int] | None:
    """(major, minor) of the GPU that measures (None: a backend that does not say)."""
    try:
        major, minor = backend.compute_capability
        return int(major), int(minor)
    except (AttributeError, TypeError, ValueError):
        return None


def _peak(space, settings: GemmSettings, family: KernelFamily | None = None) -> float | None:
    """The device profile's peak GFLOP/s for the kernels of ``family`` (default: the paper's)."""
    family = family or get_family(DEFAULT_FAMILY)
    return family.peak_gflops(getattr(space, "device", None), settings.precision)


def tune_family(space) -> tuple[KernelFamily, GemmSettings]:
    """The kernel family ``space`` asks for and its settings, checked: the template's parameter
    names among the space's iterators, the precision, and the device profile's compute capability
    (BeastError saying what is wrong)."""
    family = family_of(space)
    settings = family.settings(space.settings)
    family.check_names(tuple(space.iterators), settings)       # names the template lacks
    profile = getattr(space, "device", None)
    family.check_device(_compute_capability(space), getattr(profile, "name", None))
    return family, settings


def _check_size(size) -> tuple[int, int, int]:
    """``size`` (M, N, K) as three positive ints (numpy integers too; a bool or a float is
    refused); BeastError otherwise."""
    try:
        dims = tuple(size)
    except TypeError:
        dims = ()
    if len(dims) != 3 or any(isinstance(x, bool) or not isinstance(x, numbers.Integral) for x in dims):
        raise BeastError(f"the size M N K must be three integers, got {size!r:.60}")
    if min(dims) < 1:
        raise BeastError(f"the size M N K must be positive, got {' '.join(map(str, dims))}")
    return tuple(int(x) for x in dims)


def check_count(value, name: str, none: str | None = None) -> int | None:
    """``value`` as an int of at least 1 (numpy integers too; a bool or a float is refused), or
    None when ``none`` is given: what None means, said in the error.  A BeastError names
    ``name`` and what it may be otherwise."""
    if value is None and none is not None:
        return None
    alt = f" or None ({none})" if none is not None else ""
    return check_integer(value, name, 1, kind=f"an integer of at least 1{alt}")


def check_tune_arguments(size, *, budget=None, seed=0, time_limit=None, chunk_size=65536,
                         progress=None, **counts) -> tuple[tuple[int, int, int], int | None, float | None]:
    """Check the arguments :func:`tune` and :func:`beast.tune.ray_runner.tune_ray` share, before
    any work: ``size`` three positive integers, ``budget`` a positive integer or None (every
    survivor), ``seed`` a non-negative integer, ``time_limit`` positive seconds or None,
    ``chunk_size`` a positive integer, ``progress`` None or callable, and each of ``counts``
    (``compile_workers=...``, ``lookahead=...``) a positive integer or None (its default).
    Integers may be numpy integers, never bools or floats.  Returns ``((M, N, K), budget,
    time_limit)`` as ints and float; a BeastError names the first argument that is wrong."""
    m, n, k = _check_size(size)
    budget = check_count(budget, "budget", "every survivor")
    check_seed(seed)
    time_limit = check_time_limit(time_limit)
    check_chunk_size(chunk_size)
    if progress is not None and not callable(progress):
        raise BeastError(f"progress must be a function (done, total, best) or None, not {progress!r}")
    for name, value in counts.items():
        check_count(value, name, "the default")
    return (m, n, k), budget, time_limit


def _is_better(r: TuneResult, best: TuneResult | None) -> bool:
    return r.status == OK and r.gflops is not None and (best is None or r.gflops > best.gflops)


class CompilePool:
    """``workers`` daemon threads running submitted calls, each answered by a
    :class:`concurrent.futures.Future`.  ThreadPoolExecutor's threads hold the interpreter's exit
    up until their calls end (an NVRTC compile can take 13 s); these do not, so Ctrl-C ends
    ``beast tune`` at once."""

    def __init__(self, workers: int):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"beast-compile-{i}", daemon=True)
                         for i in range(max(1, int(workers)))]
        for t in self._threads:
            t.start()

    def submit(self, fn, *args) -> Future:
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
    :data:`MAX_COMPILE_WORKERS`).  NVRTC releases the GIL; on a 16-core H200 machine 16 threads
    compiled 7.6 configurations/s against 5.6/s for 8 (``bench/gpu_runs``)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(MAX_COMPILE_WORKERS, n))


def _takes(fn, name: str) -> bool:
    """Whether ``fn`` accepts the keyword argument ``name`` (fake backends may not)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _progress_caller(progress):
    """``progress`` called as ``(done, total, best, report)`` when it takes four arguments, else
    as ``(done, total, best)``; None stays None."""
    if progress is None:
        return None
    try:
        sig = inspect.signature(progress)
        sig.bind(0, None, None, None)
    except (TypeError, ValueError):
        return lambda done, total, best, report: progress(done, total, best)
    return progress


def _twin(first_cfg: Mapping, first: Measurement) -> Measurement:
    """The outcome of a configuration that runs the binary and launch of ``first_cfg``: not
    measured again, its measurement copied and marked ``twin_of``."""
    twin = Measurement.from_dict(first.as_dict())
    twin.extra.pop("measure_s", None)
    twin.extra["twin_of"] = dict(first_cfg)
    return twin


def _default_backend(space, settings: GemmSettings, size, seed: int, family: KernelFamily, isolate):
    """The CuPy backend of :func:`tune`: in a worker process (:mod:`beast.tune.isolate`) unless
    ``isolate`` is False; its time limits know the problem's FLOPs and the profile's peak."""
    if isolate is None or isolate:
        from .gpu import CupyFactory
        from .isolate import IsolatedBackend, MeasureLimits
        from .measure import gemm_flops
        limits = MeasureLimits(flops=gemm_flops(*size, settings.is_complex),
                               peak_gflops=_peak(space, settings, family))
        return IsolatedBackend(CupyFactory(dict(space.settings), tuple(size), seed, family.name), limits)
    from .gpu import CupyBackend
    return CupyBackend(settings, size, seed=seed, family=family.name)


def tune(space, size, *, budget: int | None = None, strategy: str = "exhaustive",
         log_path: str | os.PathLike | None = None, seed: int = 0, compile_workers: int | None = None,
         progress: ProgressFn | None = None, backend=None, lookahead: int | None = None,
         chunk_size: int = 65536, time_limit: float | None = None, isolate: bool | None = None,
         model: bool | None = None, prior=None) -> TuneReport:
    """Tune the GEMM kernel over the survivors of ``space`` for an M x N x K problem.

    ``space``: a :class:`beast.space.Space` (its iterators name the GEMM parameters; its
    settings give precision, arithmetic and transposes).  ``size``: (M, N, K), positive
    integers.  ``budget``: how many configurations the log should hold in the end (resumed
    ones count), a positive integer, or None for all survivors.  ``strategy``: one of
    :data:`STRATEGIES` (``seed``, a non-negative integer, seeds it).  ``log_path``: JSONL log
    to write, or resume when it exists (a log of another problem is refused).
    ``compile_workers``: compile-ahead threads (default :func:`default_compile_workers`: every
    CPU); ``lookahead``: the most configurations compiling or compiled and waiting to be
    measured (default ``2 * compile_workers + 2``); ``chunk_size``: rows per enumeration
    chunk.  These are positive integers.  ``time_limit``: positive seconds; the run stops
    cleanly once they have passed (a measurement in flight finishes, compiles not yet
    measured are dropped), with ``report.time_up`` set.  ``progress(done, total, best)`` --
    or ``progress(done, total, best, report)`` when it takes four arguments, to show the
    GPU's busy share -- is called after every configuration (``total`` is None when unknown).
    ``backend``: the measuring backend (default :class:`beast.tune.gpu.CupyBackend`, which
    raises DeviceError "no GPU found" without a GPU); a backend whose ``measure`` takes
    ``best_ms`` is told the best time so far (it may then cut a clear loser short), and one
    with ``identity(compiled)`` has configurations of equal identity (the same binary and
    launch) measured once.  ``isolate``: measure in a worker process that is killed at a time
    limit (:mod:`beast.tune.isolate`), so that a hung, crashing or context-poisoning kernel is
    logged and the run goes on; None (the default) isolates the CuPy backend made here and runs
    a given ``backend`` in this process (True with a given backend needs an
    :class:`~beast.tune.isolate.IsolatedBackend`).  ``model``: use the speed model
    (:class:`beast.tune.speed_model.ModelGate`) to order the first ``lookahead`` candidates by
    predicted time, and to log a candidate whose optimistic lower bound exceeds the best time so
    far as ``pruned``, neither compiled nor measured (it counts in the budget, as a configuration
    tried); None (the default) uses it with the GPU backend made here and not with a given
    ``backend``; it is off where the device profile lacks what the model needs or is another
    compute capability than the measuring GPU's.  Ctrl-C stops the run and returns the report
    with ``interrupted`` set.  An argument that is not as said here is a BeastError
    naming it, before any compile or GPU work (:func:`check_tune_arguments`).  ``prior``: earlier
    runs of the space (paths of beast tune logs or Kernel Tuner cache files) that the
    ``portfolio`` strategy starts from (:mod:`beast.tune.strategies.prior`).
    """
    if strategy not in STRATEGIES:
        raise BeastError(f"unknown strategy {strategy!r}", hint="use one of " + ", ".join(STRATEGIES))
    if isolate is not None and not isinstance(isolate, bool):
        raise BeastError(f"isolate must be True, False or None (the default), not {isolate!r}")
    if model is not None and not isinstance(model, bool):
        raise BeastError(f"model must be True, False or None (the default), not {model!r}")
    if prior:
        check_prior_strategy(strategy)
    (m, n, k), budget, time_limit = check_tune_arguments(
        size, budget=budget, seed=seed, time_limit=time_limit, chunk_size=chunk_size, progress=progress,
        compile_workers=compile_workers, lookahead=lookahead)
    names = tuple(space.iterators)
    family, settings = tune_family(space)

    own_backend = backend is None
    if backend is None:
        backend = _default_backend(space, settings, (m, n, k), seed, family, isolate)
    elif isolate and not getattr(backend, "isolated", False):
        raise BeastError("isolate=True needs a backend that measures in a worker process",
                         hint="pass backend=IsolatedBackend(factory) (beast.tune.isolate), or no backend")
    gate = None
    gpu_cc = _gpu_compute_capability(backend)
    if (model or (model is None and own_backend)) and gpu_cc in (None, _compute_capability(space)):
        # off when the space's profile is not the measuring GPU's (the default is the K40c): a
        # bound from that profile's peaks would exceed this GPU's times and prune its winners
        from .speed_model import tuning_gate
        gate = tuning_gate(space, (m, n, k))
    workers = default_compile_workers() if compile_workers is None else compile_workers
    lookahead = 2 * workers + 2 if lookahead is None else lookahead
    takes_best = _takes(backend.measure, "best_ms")
    identity = getattr(backend, "identity", None)
    progress = _progress_caller(progress)

    header = make_header(device=_device_identity(space, backend), size=(m, n, k),
                         space_hash=space.source_hash, iterators=names,
                         settings=space.settings, kernel_version=family.version,
                         space_path=getattr(space, "path", None), kernel_family=family.name)
    log = TuneLog.open(log_path, header)
    report = TuneReport(iterators=names, settings=dict(space.settings), size=(m, n, k),
                        device_profile=header["device"]["profile"], device_name=header["device"]["gpu"],
                        strategy=strategy, budget=budget, peak_gflops=_peak(space, settings, family),
                        family=family.name,
                        log_path=os.fspath(log_path) if log_path is not None else None,
                        time_limit=time_limit, compile_workers=workers,
                        compute_capability=_compute_capability(space),
                        gpu_compute_capability=gpu_cc)
    best = _resume(report, log)

    pool = None
    in_flight = None                                 # the configuration being measured
    clock = time.monotonic
    started = clock()
    deadline = None if time_limit is None else started + time_limit
    try:
        if log.reference is not None:
            report.reference = Measurement.from_dict(log.reference)
        if hasattr(backend, "reference"):
            try:
                ref = backend.reference()
            except Exception as err:                 # the table then lacks "% of cuBLAS"
                ref = Measurement(LAUNCH_ERROR, error=f"cuBLAS reference: {_message(err)}")
            if ref is not None:
                report.reference = ref
                log.append_reference(ref)

        need = None if budget is None else max(0, budget - len(log.done))
        if budget is not None:
            total = budget
        else:
            try:
                total = int(space.count())
            except Exception:
                total = None
        done_count = len(report.results)
        started = clock()                            # the loop's own time: what busy shares divide
        if progress is not None:
            progress(done_count, total, best, report)

        search = _search_strategy(space, strategy, seed, budget, log.records, bounded=time_limit is not None,
                                  prior=prior)
        if search is not None:
            stream = strategy_stream(search, need, batch=lookahead)
        else:
            stream = candidates(space, strategy, need, log.done, seed=seed, chunk_size=chunk_size)
        if gate is not None:
            stream = gate.order_first(stream, lookahead)
        pool = CompilePool(workers)
        pending: deque = deque()
        seen: dict = {}                              # identity -> (config, measurement)

        def settle(cfg, meas: Measurement) -> None:
            """Log one configuration's outcome and count it (best, strategy, progress)."""
            nonlocal best, done_count
            log.append(cfg, meas)
            if search is not None:
                search.tell(cfg, meas.ms if meas.status == OK else None)
            r = TuneResult(dict(cfg), meas)
            report.results.append(r)
            if _is_better(r, best):
                best = r
            done_count += 1
            report.wall_s = clock() - started
            if progress is not None:
                progress(done_count, total, best, report)

        def pruned(cfg) -> bool:
            """Settle ``cfg`` unmeasured when the model's lower bound cannot beat the best so far."""
            if gate is None or best is None or best.ms is None or gate.keeps(cfg, best.ms):
                return False
            settle(cfg, Measurement(PRUNED, error="the speed model's lower bound exceeds the best time so far",
                                    extra={"lower_ms": round(gate.lower_ms(cfg), 6), "best_ms": round(best.ms, 6)}))
            report.pruned += 1
            return True

        def fill():
            while len(pending) < lookahead:
                cfg = next(stream, None)
                if cfg is None:
                    return
                if not pruned(cfg):
                    pending.append((cfg, pool.submit(backend.compile, cfg)))

        def time_left() -> float | None:
            return None if deadline is None else deadline - clock()

        fill()
        while pending:
            left = time_left()
            if left is not None and left <= 0:
                report.time_up = True
                break
            try:
                index = next_ready(pending, time_left)
            except FutureTimeout:                    # the limit passed while they compiled
                report.time_up = True
                break
            cfg, future = pending[index]
            del pending[index]
            fill()                                   # keep compiling ahead while measuring
            if pruned(cfg):                          # the best improved since it was queued
                future.cancel()
                continue
            fatal = None
            key = None
            in_flight = None
            try:
                compiled = future.result()
            except Exception as err:
                meas = Measurement(COMPILE_ERROR, error=_message(err))
            else:
                key = _identity(identity, compiled)
                if key is not None and key in seen:
                    meas = _twin(*seen[key])
                    report.twins += 1
                else:
                    in_flight = cfg
                    log.append_started(cfg)          # flushed: a crash now is found on resume
                    t0 = clock()
                    try:
                        if takes_best:
                            meas = backend.measure(compiled, best_ms=best.ms if best is not None else None)
                        else:
                            meas = backend.measure(compiled)
                    except FatalBackendError as err:
                        if not err.measured:         # not tried: nothing to record
                            log.append_interrupted(cfg)
                            report.stopped = str(err)
                            break
                        meas = Measurement(CONTEXT_LOST, error=err.message)
                        fatal = err
                    except Exception as err:
                        meas = Measurement(LAUNCH_ERROR, error=_message(err))
                    spent = clock() - t0
                    report.gpu_s += spent
                    if isinstance(meas, Measurement):
                        meas.extra.setdefault("measure_s", round(spent, 4))
            if not isinstance(meas, Measurement) or meas.status not in STATUSES:
                status = getattr(meas, "status", meas)
                meas = Measurement(LAUNCH_ERROR, error=f"backend returned unknown status {status!r}")
            if key is not None and key not in seen and fatal is None:
                seen[key] = (dict(cfg), meas)
            if meas.extra.get("early_cut") and not meas.extra.get("twin_of"):
                report.cut += 1
            report.measured += 1
            settle(cfg, meas)
            in_flight = None
            if fatal is not None:
                report.stopped = str(fatal)
                break
    except KeyboardInterrupt as exc:
        report.interrupted, report.interruption = True, exc
        if in_flight is not None:                    # measured again on resume, not "crashed"
            log.append_interrupted(in_flight)
    finally:
        report.wall_s = clock() - started
        if pool is not None:
            pool.shutdown()
        try:
            if report.measured:
                log.append_run(run_summary(report))
        finally:
            log.close()
            if own_backend and hasattr(backend, "close"):
                backend.close()
    return report


def next_ready(pending, time_left, head_wait: float = HEAD_WAIT) -> int:
    """The position in ``pending`` (``(config, future)`` in submission order) of the next
    configuration to measure: the oldest, unless its compile still runs ``head_wait`` seconds on
    while a later one's is done -- then the oldest of those done, so that one slow compile (the
    H200's SGEMM compiles took up to 13 s against a median of 3) does not hold the GPU up.
    ``time_left()``: seconds until the time limit (None: none); FutureTimeout when it passes
    with no compile done."""
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


def _identity(identity, compiled):
    """The backend's identity of a compiled configuration (None: it has none, or it failed)."""
    if identity is None:
        return None
    try:
        return identity(compiled)
    except Exception:
        return None


def check_time_limit(time_limit) -> float | None:
    """``time_limit`` as positive seconds (None: no limit); BeastError for anything else."""
    if time_limit is None:
        return None
    try:
        value = float(time_limit)
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(time_limit, bool) or not (value > 0 and math.isfinite(value)):
        raise BeastError(f"the time limit must be a positive number of seconds, got {time_limit!r}")
    return value


def parse_duration(text: str) -> float:
    """Seconds of a duration written ``90``, ``90s``, ``10m``, ``1.5h`` or ``1h30m``."""
    s = str(text).strip().lower()
    parts = re.fullmatch(r"(?:(\d+(?:\.\d*)?)h)?\s*(?:(\d+(?:\.\d*)?)m)?\s*(?:(\d+(?:\.\d*)?)s?)?", s)
    if not s or parts is None or not any(parts.groups()):
        raise BeastError(f"cannot read the duration {text!r}",
                         hint="write seconds (600 or 600s), minutes (10m), hours (1.5h) or 1h30m")
    h, m, sec = (float(g) if g else 0.0 for g in parts.groups())
    return check_time_limit(3600 * h + 60 * m + sec)


def run_summary(report: "TuneReport") -> dict:
    """What the log's ``run`` record holds about this run: time, rate, GPU busy share, cuts."""
    if report.interrupted:
        ended = "interrupted"
    elif report.stopped:
        ended = "stopped"
    elif report.time_up:
        ended = "time limit"
    else:
        ended = "done"
    out = {"strategy": report.strategy, "budget": report.budget,
           "measured": report.measured, "wall_s": round(report.wall_s, 3), "gpu_s": round(report.gpu_s, 3),
           "configs_per_s": report.rate, "gpu_busy": report.gpu_busy, "compile_workers": report.compile_workers,
           "early_cut": report.cut, "twins": report.twins, "pruned": report.pruned, "ended": ended}
    if report.time_limit is not None:
        out["time_limit_s"] = report.time_limit
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


def _resume(report, log) -> TuneResult | None:
    """Put the results the log already holds into ``report``; the best of them (None: none).
    A configuration that ended the previous run (``started``, no result) is logged as
    ``crashed`` first (:meth:`~beast.tune.log.TuneLog.settle_started`)."""
    log.settle_started()
    best = None
    for rec in log.records:
        r = TuneResult(dict(rec["config"]), Measurement.from_dict(rec))
        report.results.append(r)
        if _is_better(r, best):
            best = r
    report.resumed = len(report.results)
    return best


def _search_strategy(space, strategy: str, seed: int, budget: int | None, records, bounded=False, prior=None):
    """The :mod:`beast.tune.strategies` object for ``strategy`` (told what the log holds), or
    None for the strategies that stream the enumeration (exhaustive; random over every
    survivor or without ``space.sample``).  ``bounded``: the run ends by a time limit, so
    ``random`` without a budget still draws from a sample rather than ordering every survivor."""
    every = budget is None and not bounded
    if strategy == "exhaustive" or (strategy == "random" and (every or not hasattr(space, "sample"))):
        return None
    search = make_strategy(strategy, space, seed=seed, budget=budget, **({"prior": prior} if prior else {}))
    search.resume(records)
    return search


def _message(err: Exception) -> str:
    if isinstance(err, BeastError):
        return err.message
    return f"{type(err).__name__}: {err}"
