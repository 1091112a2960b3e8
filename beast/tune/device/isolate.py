"""Measuring in a worker process that the tuner can kill: hangs, illegal addresses and crashes
become logged statuses, and the run goes on.

A kernel that never returns, one that writes out of bounds (an illegal address leaves the CUDA
context unusable for the rest of its process) or a driver crash would otherwise end ``beast
tune`` without a record.  :class:`IsolatedBackend` speaks the runner's backend protocol
(:mod:`beast.tune.driver.local`) while the GPU work happens in a child process made with
:mod:`multiprocessing` in the *spawn* context (CUDA does not survive ``fork``):

* the tuning process compiles, on its compile threads, with the worker's picklable compiler
  (for CuPy an :class:`~beast.tune.device.gpu.NvrtcCompiler`: NVRTC without a CUDA context) and sends
  the :class:`~beast.tune.device.gpu.Artifact` to the worker, which loads and measures it and sends
  the :class:`~beast.tune.device.measure.Measurement` back.  A backend without
  ``compiler()``/``load()`` (a stand-in) gets the configuration and compiles it in the worker;
* the worker keeps its backend -- the CUDA context, the problem's operands, loaded modules --
  from one measurement to the next, and runs ``reference()`` (cuBLAS) too;
* the tuner waits for each answer up to a time limit (:class:`MeasureLimits`).  Past it the
  worker is stopped (SIGTERM, then SIGKILL after ``grace_s``) and the configuration is
  ``timeout``; a worker that dies is ``crashed``; a backend that raises
  :class:`~beast.tune.device.measure.FatalBackendError` (the context is lost) makes the worker answer
  ``context_lost`` and exit.  The next measurement starts a fresh worker;
* Ctrl-C reaches the tuner only (the worker ignores SIGINT): the worker is stopped and the
  ``KeyboardInterrupt`` goes on to the runner, which ends the run as without isolation.  A
  worker also dies with its tuner (Linux: ``PR_SET_PDEATHSIG``; elsewhere at its next message).

The time limit of one measurement (:meth:`MeasureLimits.measure_s`), in seconds::

    overhead_s + loop_s + launches * max(slow_factor * best_ms / 1000, flops / floor rate)

where ``loop_s`` is the backend's own cap on its timing loop (CuPy: 10 s), ``launches`` the
launches a measurement makes outside that loop (verification, warm-up, the sample that crosses
the cap), ``best_ms`` the best time so far, and the floor rate ``floor_share`` of the device's
peak (``floor_gflops`` without one): a launch is granted the longer of a generous multiple of
the best time and the time the problem's FLOPs take at a small share of the peak.  Before any
best time, in a fresh worker (its problem set up on the first call) and for the reference, the
limit is at least ``first_s``.  The constants are the fields' defaults of
:class:`MeasureLimits`; tests pass smaller ones.
"""
from __future__ import annotations

import inspect
import multiprocessing
import os
import signal
import time
import weakref
from dataclasses import dataclass
from multiprocessing.connection import wait as wait_for
from typing import Callable, Mapping

from ...errors import BeastError, DeviceError

from .measure import (COMPILE_ERROR, CONTEXT_LOST, CRASHED, LAUNCH_ERROR, LOST, STATUSES, TIMEOUT, FatalBackendError, Measurement)


@dataclass(frozen=True)
class MeasureLimits:
    """The time limits of a worker's calls, in seconds (the rule: the module's docstring).

    ``flops``: floating-point operations of one launch (one GEMM); ``peak_gflops``: the device's
    peak for them (None: ``floor_gflops`` is the floor rate); ``loop_s``: the backend's cap on
    its timing loop (None: the worker's backend says, ``timing_cap_s``, else 10 s);
    ``start_s``: a worker's start (importing CuPy, the CUDA context); ``grace_s``: between
    SIGTERM and SIGKILL; ``lost_in_a_row``: after this many measurements in a row lost (timed
    out, crashed, context lost) the device is taken to be unusable and the run stops."""

    first_s: float = 120.0
    overhead_s: float = 20.0
    loop_s: float | None = None
    launches: int = 4
    slow_factor: float = 100.0
    floor_share: float = 0.01
    floor_gflops: float = 10.0
    flops: float | None = None
    peak_gflops: float | None = None
    start_s: float = 300.0
    grace_s: float = 2.0
    lost_in_a_row: int = 10

    def launch_s(self, best_ms: float | None) -> float:
        """The longest one launch is granted: ``slow_factor`` x the best time, or the FLOPs at
        the floor rate, whichever is longer."""
        by_best = self.slow_factor * best_ms / 1000.0 if best_ms is not None and best_ms > 0 else 0.0
        rate = self.floor_share * self.peak_gflops if self.peak_gflops else self.floor_gflops
        by_flops = (self.flops or 0.0) / (rate * 1e9) if rate > 0 else 0.0
        return max(by_best, by_flops)

    def measure_s(self, best_ms: float | None, loop_s: float | None = None, fresh: bool = False) -> float:
        """The time limit of one measurement, told the best time so far (``best_ms``, None
        before any) and the backend's timing-loop cap (``loop_s``, when :attr:`loop_s` is None);
        ``fresh``: the worker's first measurement."""
        loop = self.loop_s if self.loop_s is not None else (10.0 if loop_s is None else loop_s)
        limit = self.overhead_s + loop + self.launches * self.launch_s(best_ms)
        return max(limit, self.first_s) if best_ms is None or fresh else limit

    def reference_s(self, loop_s: float | None = None) -> float:
        """The time limit of the reference (cuBLAS) measurement."""
        return self.measure_s(None, loop_s)


@dataclass(frozen=True)
class Job:
    """What the tuner sends for one configuration: ``("load", artefact)`` or, for a backend
    that cannot compile apart from its device, ``("compile", config)``."""

    config: dict
    how: str
    item: object


class IsolatedBackend:
    """A backend whose ``measure`` and ``reference`` run in a worker process (module docstring).

    ``factory``: a picklable callable that makes the real backend in the worker (e.g.
    :class:`beast.tune.device.gpu.CupyFactory`); it is called once per worker.  ``limits``: the time
    limits (:class:`MeasureLimits`).  The first worker starts here, so that ``device_name`` is
    known; a backend that cannot be made there (no GPU) raises its error here.  ``starts`` holds
    each worker's start-up time in seconds.  Use :meth:`close` (or ``with``) to stop the worker.
    """

    isolated = True

    def __init__(self, factory: Callable[[], object], limits: MeasureLimits | None = None):
        self.factory = factory
        self.limits = limits or MeasureLimits()
        self.starts: list[float] = []
        self.restarts = 0
        self.lost_in_a_row = 0
        self._proc = None
        self._conn = None
        self._fresh = True
        self._finalizer = None
        info = self._start(first=True)
        self.device_name = info.get("device_name")
        cc = info.get("compute_capability")
        self.compute_capability = tuple(cc) if cc is not None else None
        self._compiler = info.get("compiler")
        self._identity = info.get("identity")
        self._has_reference = bool(info.get("reference"))
        self._loop_s = info.get("loop_s")

    # ---- the backend protocol
    def compile(self, config: Mapping) -> Job:
        """Compile here (a compile thread) when the worker's backend compiles apart from its
        device; otherwise hand the configuration on, to be compiled in the worker."""
        if self._compiler is not None:
            return Job(dict(config), "load", self._compiler.build(config))
        return Job(dict(config), "compile", dict(config))

    def identity(self, job: Job):
        """The worker backend's identity of an artefact (None: a backend without one)."""
        if self._identity is None or job.how != "load":
            return None
        return self._identity(job.item)

    def measure(self, job: Job, best_ms: float | None = None) -> Measurement:
        """Measure ``job`` in the worker within :meth:`MeasureLimits.measure_s`; a timeout, a
        dead worker or a lost context come back as a :class:`Measurement` of that status (the
        next call starts a fresh worker).  FatalBackendError (``measured`` False) when no fresh
        worker can be started, or after :attr:`MeasureLimits.lost_in_a_row` lost in a row."""
        if self.lost_in_a_row >= self.limits.lost_in_a_row:
            raise _not_measured(f"the last {self.lost_in_a_row} measurements were lost (timed out, crashed or "
                                f"lost the CUDA context): the device seems unusable", None)
        self._ensure_worker()
        limit = self.limits.measure_s(best_ms, self._loop_s, fresh=self._fresh)
        meas = self._call(("measure", job.how, job.item, best_ms), limit)
        self.lost_in_a_row = self.lost_in_a_row + 1 if meas.status in LOST else 0
        return meas

    def reference(self) -> Measurement | None:
        """The worker backend's reference (cuBLAS) measurement (None when it has none)."""
        if not self._has_reference:
            return None
        self._ensure_worker()
        meas = self._call(("reference",), self.limits.reference_s(self._loop_s))
        if meas.status != "ok" and meas.error and not meas.error.startswith("cuBLAS"):
            meas.error = f"cuBLAS reference: {meas.error}"
        return meas

    def _forget(self):
        """The current worker's (process, connection), no longer this backend's (None, None: none)."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        return proc, conn

    def close(self) -> None:
        """Stop the worker (it closes its backend)."""
        proc, conn = self._forget()
        if proc is None:
            return
        try:
            conn.send(("stop",))
        except (OSError, ValueError):
            pass
        proc.join(self.limits.grace_s)
        _stop(proc, conn, self.limits.grace_s)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def pid(self) -> int | None:
        """The process id of the current worker (None: none running)."""
        return self._proc.pid if self._proc is not None else None

    # ---- the worker's life
    def _start(self, first: bool = False) -> dict:
        ctx = multiprocessing.get_context("spawn")
        conn, child = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=worker_main, args=(self.factory, child, os.getpid()),
                           name="beast-measure", daemon=True)
        t0 = time.perf_counter()
        proc.start()
        child.close()
        try:
            ready = wait_for([conn, proc.sentinel], timeout=self.limits.start_s)
            reply = conn.recv() if conn in ready else None
        except (EOFError, OSError):
            reply = None
        except BaseException:
            _stop(proc, conn, self.limits.grace_s)
            raise
        if reply is None or reply[0] != "ready":
            why = _start_failure(reply, proc, self.limits.start_s)
            _stop(proc, conn, self.limits.grace_s)
            if first:
                raise why
            raise _not_measured(f"cannot start a fresh measuring process: {why.message}", why.hint)
        self.starts.append(time.perf_counter() - t0)
        self._proc, self._conn, self._fresh = proc, conn, True
        self._finalizer = weakref.finalize(self, _stop, proc, conn, self.limits.grace_s)
        return reply[1]

    def _ensure_worker(self) -> None:
        if self._proc is not None and not self._proc.is_alive():    # died between measurements
            self._lost()
        if self._proc is None:
            self.restarts += 1
            self._start()

    def _lost(self) -> None:
        """Forget the current worker, stopping it if it still runs."""
        proc, conn = self._forget()
        if proc is not None:
            _stop(proc, conn, self.limits.grace_s)

    def _call(self, message: tuple, limit: float) -> Measurement:
        proc, conn = self._proc, self._conn
        try:
            conn.send(message)
            ready = wait_for([conn, proc.sentinel], timeout=limit)
            reply = conn.recv() if conn in ready else None
        except (EOFError, OSError):
            ready, reply = [proc.sentinel], None
        except BaseException:                      # Ctrl-C: the worker goes with the run
            self._lost()
            raise
        if reply is not None and reply[0] == "result":
            self._fresh = False
            meas = reply[1]
            if not isinstance(meas, Measurement) or meas.status not in STATUSES:
                status = getattr(meas, "status", meas)
                meas = Measurement(LAUNCH_ERROR, error=f"backend returned unknown status {status!r}")
            return meas
        if reply is not None and reply[0] == "fatal":
            self._lost()
            return Measurement(CONTEXT_LOST, error=reply[1],
                               extra={"worker_replaced": True})
        if not ready:
            self._lost()
            return Measurement(TIMEOUT, error=f"no answer within the time limit of {limit:.3g} s: "
                                              f"the measuring process was killed",
                               extra={"time_limit_s": round(limit, 3)})
        proc.join(self.limits.grace_s)
        code = proc.exitcode
        self._lost()
        return Measurement(CRASHED, error=f"the measuring process died ({_exit_words(code)})",
                           extra={"exitcode": code})


# --------------------------------------------------------------------------- worker side

def worker_main(factory: Callable[[], object], conn, parent_pid: int | None = None) -> None:
    """The worker process: make the backend, say ``("ready", info)``, then answer ``measure``
    and ``reference`` messages with ``("result", Measurement)`` until ``stop`` or the tuner
    goes; after a FatalBackendError answer ``("fatal", message)`` and exit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # Ctrl-C is the tuner's to handle
    _die_with_parent(parent_pid)
    try:
        backend = factory()
        info = _info(backend)
    except BaseException as err:  # noqa: BLE001 - sent to the tuner as text
        kind = "device" if isinstance(err, DeviceError) else "beast" if isinstance(err, BeastError) else None
        conn.send(("error", kind, _message(err), getattr(err, "hint", None)))
        return
    conn.send(("ready", info))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):                      # the tuner went
            break
        if message[0] == "stop":
            break
        try:
            if message[0] == "measure":
                reply = ("result", _measure(backend, *message[1:]))
            else:
                reply = ("result", _reference(backend))
        except FatalBackendError as err:
            conn.send(("fatal", err.message))
            conn.close()
            os._exit(3)                                  # the context is gone: no clean-up in it
        conn.send(reply)
    if hasattr(backend, "close"):
        backend.close()


def _info(backend) -> dict:
    compiler = None
    if hasattr(backend, "compiler") and hasattr(backend, "load"):
        compiler = backend.compiler()
    identifier = getattr(backend, "identifier", None)
    cc = getattr(backend, "compute_capability", None)
    return {"device_name": getattr(backend, "device_name", None),
            "compute_capability": tuple(cc) if cc is not None else None,
            "compiler": compiler, "identity": identifier() if identifier is not None else None,
            "reference": hasattr(backend, "reference"), "loop_s": getattr(backend, "timing_cap_s", None),
            "pid": os.getpid()}


def _message(err: Exception) -> str:
    if isinstance(err, BeastError):
        return err.message
    return f"{type(err).__name__}: {err}"


def _measure(backend, how: str, item, best_ms: float | None) -> Measurement:
    try:
        compiled = backend.load(item) if how == "load" else backend.compile(item)
    except Exception as err:  # noqa: BLE001 - the kernel's compile or load failed
        return Measurement(COMPILE_ERROR, error=_message(err))
    try:
        if best_ms is not None and _takes_best(backend.measure):
            meas = backend.measure(compiled, best_ms=best_ms)
        else:
            meas = backend.measure(compiled)
    except FatalBackendError:
        raise
    except Exception as err:  # noqa: BLE001 - recorded as launch_error
        meas = Measurement(LAUNCH_ERROR, error=_message(err))
    return meas


def _takes_best(fn) -> bool:
    """Whether ``fn`` accepts ``best_ms`` (stand-in backends may not)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "best_ms" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _reference(backend) -> Measurement | None:
    try:
        return backend.reference()
    except FatalBackendError:
        raise
    except Exception as err:  # noqa: BLE001 - the table then lacks "% of cuBLAS"
        return Measurement(LAUNCH_ERROR, error=f"cuBLAS reference: {_message(err)}")


def _die_with_parent(parent_pid: int | None) -> None:
    """Ask Linux to SIGKILL this process when the tuner ends, even by SIGKILL (a hung kernel
    would never read the closed pipe)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)       # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent_pid is not None and os.getppid() != parent_pid:   # it went before the call
        os._exit(1)


# --------------------------------------------------------------------------- helpers

def _stop(proc, conn, grace: float) -> None:
    """Stop ``proc``: SIGTERM, then SIGKILL after ``grace`` seconds; close ``conn``."""
    try:
        if proc.is_alive():
            proc.terminate()
            proc.join(grace)
        if proc.is_alive():
            proc.kill()
            proc.join(grace)
    finally:
        try:
            conn.close()
        except OSError:
            pass


def _exit_words(code: int | None) -> str:
    if code is None:
        return "it did not exit"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _start_failure(reply, proc, timeout: float) -> BeastError:
    if reply is not None and reply[0] == "error":
        _, kind, message, hint = reply
        if kind == "device":
            return DeviceError(message, hint=hint)
        if kind == "beast":
            return BeastError(message, hint=hint)
        return BeastError(f"the measuring process could not make its backend: {message}", hint=hint)
    if proc.is_alive():
        return BeastError(f"the measuring process did not start within {timeout:g} s")
    proc.join(1.0)
    return BeastError(f"the measuring process died while starting ({_exit_words(proc.exitcode)})")


def _not_measured(message: str, hint: str | None) -> FatalBackendError:
    err = FatalBackendError(message, hint=hint or "rerun the same command to resume from the log")
    err.measured = False
    return err


__all__ = ["IsolatedBackend", "MeasureLimits", "Job", "worker_main"]
