"""Tuning on every GPU of a Ray cluster: compiles on CPU workers, one measuring actor per GPU,
one resumable log.

:func:`tune_ray` is what ``beast tune ... --ray [ADDRESS]`` runs.  It writes the same JSONL log
as :func:`beast.tune.driver.local.tune` (a log started by one can be resumed by the other) and
returns the same :class:`~beast.tune.driver.local.TuneReport` (a :class:`RayTuneReport`).

How the work is spread:

* One :class:`GpuWorker` actor per GPU of the cluster (``num_gpus=1``; Ray sets
  ``CUDA_VISIBLE_DEVICES``, so its backend measures on device 0).  Each holds its own backend
  (default :class:`beast.tune.device.gpu.CupyBackend`) and only loads and measures, one kernel at a
  time.
* Compiling is apart from the GPUs: the backend's ``compiler()`` (for CuPy an
  :class:`~beast.tune.device.gpu.NvrtcCompiler` for the GPU's architecture) is shipped once to the
  object store, and every configuration is compiled by a Ray task (:func:`compile_config`,
  ``num_cpus=1``, no GPU) on any CPU of the cluster.  The task returns a small status and the
  artefact (cubin bytes) as two objects: the driver reads the status, and passes the artefact's
  reference to a GPU actor, so the bytes go from the compiling node to the measuring one.
* The driver (:func:`run_distributed`) pipelines: up to ``prefetch`` configurations per GPU
  actor are compiling or compiled and waiting, and up to ``lookahead`` calls are queued on each
  actor, so a GPU never waits for a compile while CPUs keep up.  Configurations are pulled
  from any iterator -- a strategy's candidates -- only when there is room, and every outcome
  goes to a callback at once; :func:`tune_ray` appends it to the log there.
* A configuration that does not compile is a ``compile_error`` result, logged once.  A compile
  task whose process dies is submitted again; after ``max_attempts`` deaths the configuration
  is logged as ``compile_error`` (lost).  A compile task that fails otherwise (CuPy missing on
  a CPU node, a bug) stops the run before anything wrong is logged: rerun to resume.
* A GPU worker that dies (process killed, node lost) loses only what it had in flight: those
  configurations are compiled again and measured by the others.  Nothing is logged before its
  measurement came back, and nothing in the log or in flight is dispatched again, so no
  configuration is logged twice, and none is measured again unless its worker died after
  measuring it but before the answer arrived.  A configuration in flight on ``max_attempts``
  dead workers is logged as ``crashed`` (it may be what kills them).  A worker whose
  backend raises :class:`~beast.tune.device.measure.FatalBackendError` (a poisoned CUDA context; the
  configuration is logged as ``context_lost``) takes no more work, hands back what it had queued (their artefacts go to the others), and
  is replaced by a fresh actor.

Ray is optional (``pip install 'beast-autotune[ray]'``) and imported only here.
"""
from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable, Iterable, Iterator, Mapping

from ...errors import BeastError

from .log import TuneLog, config_key, make_header
from ..device.measure import (COMPILE_ERROR, CONTEXT_LOST, CRASHED, LAUNCH_ERROR, OK, STATUSES, CompileFailure, FatalBackendError, Measurement)
from .local import (STRATEGIES, ProgressFn, TuneReport, TuneResult, _device_identity, _takes, _is_better, _message, _peak, _progress_caller, _resume, _search_strategy, candidates, check_count, check_tune_arguments, run_summary, tune_family)
from ...search import strategy_stream

#: how many dead workers (GPU or compile) a configuration may have been in flight on before it
#: is logged as lost.
MAX_ATTEMPTS = 3
COMPILE_TIMEOUT = 600.0     # seconds a compile task may take from its submission


def import_ray():
    """The ``ray`` module, or a BeastError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise BeastError("--ray needs Ray, which is not installed",
                         hint="pip install 'beast-autotune[ray]'") from None
    return ray


# --------------------------------------------------------------------------- worker side

def cupy_backend_factory(settings: Mapping, size, seed: int = 0, family: str = "gemm") -> Callable[[], object]:
    """A picklable factory of the default backend: CuPy on the actor's GPU (device 0 of it),
    generating the kernels of ``family`` (:mod:`beast.tune.kernels.families`)."""
    return _CupyFactory(dict(settings), tuple(int(x) for x in size), int(seed), family)


@dataclass(frozen=True)
class _CupyFactory:
    settings: dict
    size: tuple
    seed: int
    family: str = "gemm"

    def __call__(self):
        from ..device.gpu import CupyBackend
        return CupyBackend(self.settings, self.size, seed=self.seed, family=self.family)


def compile_config(compiler, config: dict):
    """The body of a compile task (run as a Ray task on a CPU worker, ``num_returns=2``).

    Returns ``(status, artefact)``: status ``{"error", "worker", "compile_s"}`` with ``error``
    the compiler's message when the configuration does not compile (artefact None then).
    Anything but a :class:`CompileFailure` propagates: the environment, not the kernel, is
    wrong."""
    where = f"{socket.gethostname()}/cpu-pid{os.getpid()}"
    try:
        artifact = compiler.build(config)
    except CompileFailure as err:
        return {"error": err.message, "worker": where, "compile_s": None}, None
    return {"error": None, "worker": where, "compile_s": getattr(artifact, "compile_s", None)}, artifact


@dataclass
class Outcome:
    """What a worker sends back for one configuration: its measurement (None when the worker
    refused it after a fatal error), the worker's name, and the message of a fatal backend
    error (None when the worker can go on)."""

    measurement: Measurement | None
    worker: str
    fatal: str | None = None


class GpuWorker:
    """The body of the Ray actor that owns one GPU (run as ``ray.remote(GpuWorker)``).

    It loads artefacts compiled elsewhere (``backend.load``) and measures them, one at a time
    (``run`` may be called concurrently: the calls take turns on the GPU).  A backend that
    cannot be created (no CuPy, no device) or cannot compile apart from its GPU is reported by
    :meth:`info` rather than raised, so that the driver can say why.
    """

    def __init__(self, backend_factory: Callable[[], object]):
        self.error = None
        self.fatal = None
        self.backend = None
        try:
            self.backend = backend_factory()
        except BeastError as err:
            self.error = err.message
        except Exception as err:  # noqa: BLE001 - reported to the driver as text
            self.error = f"{type(err).__name__}: {err}"
        if self.backend is not None and not (hasattr(self.backend, "compiler") and hasattr(self.backend, "load")):
            self.error = (f"the backend {type(self.backend).__name__} cannot compile apart from its GPU "
                          "(it needs compiler() and load(artifact))")
        self._gpu = threading.Lock()
        self.name = _worker_name()

    def info(self) -> dict:
        """``{"worker", "device_name", "pid", "error", "compiler"}`` (``compiler``: the picklable
        object whose ``build(config)`` compiles for this GPU on a CPU worker)."""
        compiler = None
        if self.error is None:
            try:
                compiler = self.backend.compiler()
            except Exception as err:  # noqa: BLE001 - reported to the driver as text
                self.error = _message(err)
        return {"worker": self.name, "device_name": getattr(self.backend, "device_name", None),
                "pid": os.getpid(), "error": self.error, "compiler": compiler}

    def reference(self):
        """The backend's reference (cuBLAS) measurement, or None when it has none."""
        fn = getattr(self.backend, "reference", None)
        if fn is None:
            return None
        try:
            with self._gpu:
                return fn()
        except Exception as err:  # noqa: BLE001 - the table then lacks "% of cuBLAS"
            return Measurement(LAUNCH_ERROR, error=f"cuBLAS reference: {_message(err)}")

    def run(self, artifact, best_ms: float | None = None) -> Outcome:
        """Load one compiled configuration and measure it (GPU, one at a time); ``best_ms``
        goes to a backend whose ``measure`` takes it (the early cut of clear losers).

        After a fatal backend error the worker measures nothing more: it answers with
        ``measurement`` None, and the driver sends the artefact elsewhere."""
        fatal = None
        with self._gpu:
            if self.fatal is not None:
                return Outcome(None, self.name)
            try:
                compiled = self.backend.load(artifact)
            except CompileFailure as err:               # the driver refused the image
                return Outcome(Measurement(COMPILE_ERROR, error=err.message), self.name)
            started = time.perf_counter()
            try:
                if best_ms is not None and _takes(self.backend.measure, "best_ms"):
                    meas = self.backend.measure(compiled, best_ms=best_ms)
                else:
                    meas = self.backend.measure(compiled)
            except FatalBackendError as err:
                meas = Measurement(CONTEXT_LOST, error=err.message)
                fatal = self.fatal = str(err)
            except Exception as err:  # noqa: BLE001 - recorded as launch_error
                meas = Measurement(LAUNCH_ERROR, error=_message(err))
            meas.extra.setdefault("measure_s", round(time.perf_counter() - started, 4))
        if meas.status not in STATUSES:
            meas = Measurement(LAUNCH_ERROR, error=f"backend returned unknown status {meas.status!r}")
        built_by = getattr(artifact, "built_by", None)
        if built_by is not None:
            meas.extra.setdefault("compiled_on", built_by)
        return Outcome(meas, self.name, fatal)

    def close(self) -> None:
        if self.backend is not None and hasattr(self.backend, "close"):
            self.backend.close()


def _worker_name() -> str:
    try:
        import ray
        gpus = ray.get_gpu_ids()
    except Exception:  # noqa: BLE001 - outside Ray
        gpus = []
    gpu = ",".join(str(g) for g in gpus) if gpus else "?"
    return f"{socket.gethostname()}/gpu{gpu}"


# --------------------------------------------------------------------------- driver side

@dataclass
class _Slot:
    actor: object
    name: str
    inflight: int = 0
    dispatched: int = 0
    alive: bool = True
    draining: bool = False


@dataclass
class DistributedStats:
    """What :func:`run_distributed` did: GPU workers used and lost, configurations retried
    after a GPU worker died (``retried``) or a compile task died (``compile_retried``),
    artefacts built per CPU worker (``compiled``), compiles cancelled after the timeout
    (``compile_timeouts``)."""

    workers: list[str] = field(default_factory=list)
    lost_workers: list[str] = field(default_factory=list)
    replaced_workers: int = 0
    retried: int = 0
    compile_retried: int = 0
    compile_timeouts: int = 0
    compiled: dict = field(default_factory=dict)
    stopped: str | None = None
    time_up: bool = False


class WorkerPool:
    """One :class:`GpuWorker` actor per GPU of the connected Ray cluster, and the compile task.

    ``num_workers`` (default: the cluster's GPU count) actors are started, each reserving one
    GPU and ``cpus_per_worker`` CPUs (default 0: measuring mostly waits on the GPU, and every
    CPU is left to the compile tasks, one CPU each).  ``prefetch``: configurations compiling or
    compiled ahead per actor (default: the cluster's CPUs per actor, at least 2); ``lookahead``:
    calls queued on each actor (default 2: the next kernel is there when one finishes).
    Workers that have not started after ``start_timeout`` seconds (their GPU busy elsewhere)
    are given up; none started is an error.
    """

    def __init__(self, backend_factory: Callable[[], object], *, num_workers: int | None = None,
                 cpus_per_worker: int | None = None, prefetch: int | None = None,
                 lookahead: int | None = None, start_timeout: float = 300.0):
        ray = import_ray()
        self.ray = ray
        nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
        gpu_nodes = [r for r in nodes if r.get("GPU", 0) >= 1]
        gpus = sum(int(r["GPU"]) for r in gpu_nodes)
        if gpus < 1:
            raise BeastError("the Ray cluster has no GPU to measure on",
                             hint="start the Ray nodes on GPU machines (ray start --num-gpus N)")
        if num_workers is None:
            num_workers = gpus
        if not 1 <= num_workers <= gpus:
            raise BeastError(f"cannot start {num_workers} GPU workers: the Ray cluster has {gpus} GPU(s)")
        cpus = sum(int(r.get("CPU", 0)) for r in nodes)
        if cpus < 1:
            raise BeastError("the Ray cluster has no CPU to compile on",
                             hint="start a Ray node with CPUs (ray start --num-cpus N)")
        self.cpus_per_worker = cpus_per_worker or 0
        self.prefetch = prefetch or max(2, math.ceil(cpus / num_workers))
        self.lookahead = lookahead or 2
        self.factory = backend_factory
        self._remote = ray.remote(GpuWorker).options(num_gpus=1, num_cpus=self.cpus_per_worker,
                                                     max_concurrency=self.lookahead + 2)
        self.compile_task = ray.remote(compile_config).options(num_cpus=1, num_gpus=0, num_returns=2,
                                                               max_retries=0)
        actors = [self._start() for _ in range(num_workers)]
        calls = {a.info.remote(): a for a in actors}
        started, late = ray.wait(list(calls), num_returns=len(calls), timeout=start_timeout)
        for ref in late:
            ray.kill(calls[ref])
        if not started:
            raise BeastError(f"no Ray GPU worker started within {start_timeout:g} s",
                             hint="are the cluster's GPUs taken by other jobs? (ray status)")
        actors = [calls[ref] for ref in started]
        try:
            infos = ray.get(started)
        except ray.exceptions.RayActorError as err:
            for a in actors:
                ray.kill(a)
            raise BeastError(f"a Ray GPU worker died while starting: {err}") from None
        errors = [i["error"] for i in infos if i["error"]]
        if errors:
            for a in actors:
                ray.kill(a)
            raise BeastError(f"a Ray worker could not start its backend: {errors[0]}",
                             hint="every GPU node needs beast and CuPy (pip install 'beast-autotune[ray,gpu]')")
        names = {i["device_name"] for i in infos}
        if len(names) > 1:
            for a in actors:
                ray.kill(a)
            raise BeastError(f"the Ray cluster mixes GPUs ({', '.join(sorted(map(str, names)))}); "
                             "one tuning log holds the times of one device",
                             hint="tune each kind of GPU in its own run (a cluster of one kind)")
        self.device_name = infos[0]["device_name"]
        self.compiler = ray.put(infos[0]["compiler"])     # shipped once, shared by every compile task
        self.slots = [_Slot(a, i["worker"]) for a, i in zip(actors, infos)]

    def _start(self):
        return self._remote.remote(self.factory)

    def compile(self, config: dict):
        """Submit the compile task of ``config``: (status ref, artefact ref)."""
        return self.compile_task.remote(self.compiler, config)

    def replace(self, slot: _Slot) -> bool:
        """Kill the slot's actor and start a fresh one (its GPU context is lost); False, and the
        slot given up, when the new one cannot start its backend."""
        self.ray.kill(slot.actor)
        slot.actor = self._start()
        slot.draining = False
        try:
            info = self.ray.get(slot.actor.info.remote())
        except self.ray.exceptions.RayActorError:
            info = {"error": "died"}
        if info["error"]:
            slot.alive = False
            self.ray.kill(slot.actor)
            return False
        return True

    def reference(self):
        """The reference measurement from the first live worker."""
        for slot in self.slots:
            if slot.alive:
                try:
                    return self.ray.get(slot.actor.reference.remote())
                except self.ray.exceptions.RayActorError:
                    slot.alive = False
        return None

    def shutdown(self, grace: float = 5.0) -> None:
        """Close every live worker's backend (its GPU context and the folder of loaded kernels:
        killing a process runs no finalizer), waiting at most ``grace`` seconds, then kill them
        (also when a second Ctrl-C cuts the wait short)."""
        try:
            closing = [slot.actor.close.remote() for slot in self.slots if slot.alive]
            if closing:
                self.ray.wait(closing, num_returns=len(closing), timeout=grace)
        except Exception:  # noqa: BLE001 - a dead worker: killed below all the same
            pass
        finally:
            for slot in self.slots:
                try:
                    self.ray.kill(slot.actor)
                except Exception:  # noqa: BLE001 - already gone
                    pass


def run_distributed(pool: WorkerPool, configs: Iterable[dict | None], iterators,
                    on_result: Callable[[dict, Measurement, str], None], *,
                    skip: Mapping | None = None, limit: int | None = None,
                    max_attempts: int = MAX_ATTEMPTS,
                    compile_timeout: float = COMPILE_TIMEOUT,
                    best_ms: Callable[[], float | None] | None = None,
                    stop_at: float | None = None) -> DistributedStats:
    """Compile ``configs`` on CPU workers and measure them on the pool's GPU workers;
    ``on_result(config, measurement, worker)`` for each.  ``best_ms()`` (optional): the best
    time so far, sent with each artefact so that a worker can cut a clear loser short.

    ``configs`` is pulled lazily, one item whenever the pipeline has room (``pool.prefetch``
    compiling or compiled per live GPU worker), so a strategy may decide what to propose from
    the results told so far; it may yield ``None`` for "nothing to propose until the next
    result comes back".  Configurations whose key (values in ``iterators`` order) is in
    ``skip`` (a log's ``done``) or already in flight are not dispatched.  At most ``limit``
    outcomes are reported (None: until ``configs`` runs out).

    Every call is settled one by one: a result that came back is reported even when its worker
    died or failed afterwards, so nothing is measured twice.  A configuration whose GPU worker
    died before answering is compiled again and goes to another worker, one whose compile task
    died is compiled again; after ``max_attempts`` such deaths it is reported as
    ``crashed`` (GPU) or ``compile_error`` (compile).  A worker that reported a fatal
    backend error takes no new work, its queued artefacts come back unmeasured and go to the
    others, and once it is idle it is replaced by a fresh actor.  The run stops early when
    every GPU worker is lost, or when a compile task fails for a reason other than the kernel
    (``stopped`` says so; nothing is reported for the configuration). A compile task that has
    not finished ``compile_timeout`` seconds after its submission is cancelled (its worker
    process killed) and reported as a ``compile_error``, not retried: a compiler that hangs on
    a kernel hangs on it again. At ``stop_at`` (``time.monotonic()``) no more is dispatched,
    compiles are cancelled, and the measurements under way are awaited (``time_up``); what was
    not measured is not logged, so a resumed run proposes it again.
    """
    ray = pool.ray
    names = tuple(iterators)
    source: Iterator = iter(configs)
    skip = skip if skip is not None else {}
    stats = DistributedStats(workers=[s.name for s in pool.slots])
    retry: deque = deque()                   # (cfg, key) to compile again
    ready: deque = deque()                   # (cfg, key, artefact ref) compiled, waiting for a GPU
    compiling: dict = {}                     # status ref -> (cfg, key, artefact ref)
    deadline: dict = {}                      # status ref -> when its compile times out
    measuring: dict = {}                     # outcome ref -> (slot, cfg, key, artefact ref)
    gpu_deaths: dict[tuple, int] = {}
    compile_deaths: dict[tuple, int] = {}
    inflight_keys: set = set()
    reported = 0
    exhausted = False
    halted = None

    def take():
        nonlocal exhausted
        if retry:
            return retry.popleft()
        while not exhausted and halted is None:
            try:
                cfg = next(source)
            except StopIteration:
                exhausted = True
                return None
            if cfg is None:
                return None
            key = config_key(cfg, names)
            if key in skip or key in inflight_keys:
                continue
            inflight_keys.add(key)
            return dict(cfg), key
        return None

    def time_is_up():
        if stats.time_up or stop_at is None or time.monotonic() < stop_at:
            return stats.time_up
        stats.time_up = True
        for ref in list(compiling):
            compiling.pop(ref)
            deadline.pop(ref, None)
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - finished meanwhile
                pass
        ready.clear()
        retry.clear()
        return True

    def fill():
        if time_is_up():
            return
        live = [s for s in pool.slots if s.alive and not s.draining]
        while ready:                         # compiled: to the least loaded GPU with room, in turn
            room = [s for s in live if s.inflight < pool.lookahead]
            if not room:
                break
            slot = min(room, key=lambda s: (s.inflight, s.dispatched))
            cfg, key, art = ready.popleft()
            measuring[slot.actor.run.remote(art, best_ms() if best_ms is not None else None)] = (slot, cfg, key, art)
            slot.inflight += 1
            slot.dispatched += 1
        ahead = pool.prefetch * max(1, len(live))
        while len(compiling) + len(ready) < ahead:
            if retry:
                cfg, key = retry.popleft()
            elif limit is not None and reported + len(inflight_keys) >= limit:
                return
            else:
                item = take()
                if item is None:
                    return
                cfg, key = item
            status, art = pool.compile(cfg)
            compiling[status] = (cfg, key, art)
            deadline[status] = time.monotonic() + compile_timeout

    def report(cfg, key, meas, worker):
        nonlocal reported
        reported += 1
        inflight_keys.discard(key)
        on_result(cfg, meas, worker)

    def timed_out(now):
        for ref in [r for r in compiling if deadline[r] <= now]:
            cfg, key, _ = compiling.pop(ref)
            deadline.pop(ref)
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - finished meanwhile: the timeout stands
                pass
            stats.compile_timeouts += 1
            report(cfg, key, Measurement(COMPILE_ERROR, error=f"the compile did not finish within "
                                                              f"{compile_timeout:g} s (cancelled)"), "compile")

    def compiled(ref):
        nonlocal halted
        cfg, key, art = compiling.pop(ref)
        deadline.pop(ref, None)
        try:
            status = ray.get(ref)
        except ray.exceptions.RayTaskError as err:       # the environment, not the kernel
            inflight_keys.discard(key)
            if halted is None:
                halted = (f"compiling on a Ray CPU worker failed: {str(err)[-1500:]}\n"
                          "fix the CPU workers and rerun the same command to resume from the log")
            return
        except ray.exceptions.RayError:                  # its process died: compile it again
            if retry_or_lose(compile_deaths, cfg, key, COMPILE_ERROR, "the compile task died", "compile"):
                stats.compile_retried += 1
            return
        stats.compiled[status["worker"]] = stats.compiled.get(status["worker"], 0) + 1
        if status["error"] is not None:
            report(cfg, key, Measurement(COMPILE_ERROR, error=status["error"],
                                         extra={"compiled_on": status["worker"]}), status["worker"])
        else:
            ready.append((cfg, key, art))

    def retry_or_lose(deaths, cfg, key, status, why, worker) -> bool:
        """Queue it to be compiled (and measured) again, or after ``max_attempts`` such losses
        report it as lost with ``status``; True when it was queued."""
        deaths[key] = deaths.get(key, 0) + 1
        if deaths[key] >= max_attempts:
            report(cfg, key, Measurement(status, error=f"lost: {why} {deaths[key]} times"), worker)
            return False
        retry.appendleft((cfg, key))
        return True

    def again(slot, cfg, key, why):
        """Compile and measure it again (its artefact may have died with a node), or after
        ``max_attempts`` such losses report it as lost."""
        if retry_or_lose(gpu_deaths, cfg, key, CRASHED, why, slot.name):
            stats.retried += 1

    def measured(ref):
        slot, cfg, key, art = measuring.pop(ref)
        slot.inflight -= 1
        try:
            outcome: Outcome = ray.get(ref)
        except ray.exceptions.RayActorError:               # died before answering: measure elsewhere
            if slot.alive:
                slot.alive = False
                stats.lost_workers.append(slot.name)
                try:
                    ray.kill(slot.actor)
                except Exception:  # noqa: BLE001 - already gone
                    pass
            again(slot, cfg, key, "the Ray worker measuring it died")
        except ray.exceptions.RayTaskError as err:         # a bug in the backend, not the device
            report(cfg, key, Measurement(LAUNCH_ERROR, error=f"Ray worker: {err}"[-2000:]), slot.name)
        except ray.exceptions.RayError as err:             # its artefact was lost with its node
            again(slot, cfg, key, f"its compiled kernel was lost ({type(err).__name__})")
        else:
            if outcome.measurement is None:                # refused after a fatal error: not measured
                ready.appendleft((cfg, key, art))
            else:
                report(cfg, key, outcome.measurement, outcome.worker)
                if outcome.fatal is not None:
                    slot.draining = True
        if slot.alive and slot.draining and slot.inflight == 0:
            if pool.replace(slot):
                stats.replaced_workers += 1
            else:
                stats.lost_workers.append(slot.name)

    try:
        fill()
        while compiling or measuring:
            if not any(s.alive for s in pool.slots) and not measuring:
                break                                      # nothing left to measure on
            wakes = list(deadline.values()) + ([stop_at] if stop_at is not None and not stats.time_up else [])
            wait = max(0.0, min(wakes) - time.monotonic()) if wakes else None
            done, _ = ray.wait(list(measuring) + list(compiling), num_returns=1, timeout=wait)
            if not done:
                if not time_is_up():
                    timed_out(time.monotonic())
                fill()
                continue
            ref = done[0]
            if ref in measuring:
                measured(ref)
            else:
                compiled(ref)
            fill()
    finally:                 # stopped early (interrupted, every GPU lost): free the CPUs they hold
        for ref in compiling:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - finished meanwhile
                pass
    work_left = bool(retry or ready or compiling) or (not exhausted and (limit is None or reported < limit))
    if halted is not None:
        stats.stopped = halted
    elif stats.time_up:
        pass
    elif work_left and not any(s.alive for s in pool.slots):
        stats.stopped = "every Ray worker was lost; rerun the same command to resume from the log"
    return stats


# --------------------------------------------------------------------------- tune

@dataclass
class RayTuneReport(TuneReport):
    """A :class:`TuneReport` with what the Ray run did: ``workers`` (host/gpu names),
    ``lost_workers``, ``retried`` (configurations dispatched again after their worker died),
    ``compile_retried`` (compiled again after their compile task died), ``replaced_workers``
    (restarted after a fatal backend error), ``per_worker`` (configurations measured by each
    worker in this run; compile errors under the CPU worker that found them) and
    ``compiled`` (compile tasks finished per CPU worker, host/pid)."""

    workers: list = field(default_factory=list)
    lost_workers: list = field(default_factory=list)
    replaced_workers: int = 0
    retried: int = 0
    compile_retried: int = 0
    compile_timeouts: int = 0
    per_worker: dict = field(default_factory=dict)
    compiled: dict = field(default_factory=dict)

    @property
    def gpu_busy(self) -> float | None:
        """The share of this run's wall time the GPUs spent measuring, over all workers."""
        gpus = max(1, len(self.workers))
        return min(1.0, self.gpu_s / (self.wall_s * gpus)) if self.wall_s > 0 and self.gpu_s > 0 else None


def strategy_source(strategy, batch: int) -> tuple[Iterator, Callable[[dict, Measurement], None]]:
    """Adapt an ask/tell strategy object to (config iterator, result callback).

    ``strategy.ask(n)`` returns up to ``n`` configurations to measure next (an empty list when
    it waits for results, None when it is done); ``strategy.tell(config, measurement)`` is
    called with every outcome.  The runner pulls configurations one at a time as it has
    room, so up to ``batch - 1`` of a batch asked for wait here, proposed but not yet
    compiling (pending for the strategy)."""
    def configs():
        while True:
            got = strategy.ask(batch)
            if got is None:
                return
            if not got:
                yield None
                continue
            yield from got

    return configs(), strategy.tell


def connect(address: str | None):
    """Connect to (or start) Ray: ``address`` None or "" starts a local instance (or joins the one
    named by $RAY_ADDRESS); "auto" or "host:port" joins a running cluster.  Returns whether this
    call initialized Ray (and so should shut it down)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    try:
        with _signals_deferred():
            ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    except ConnectionError as err:
        raise BeastError(f"cannot connect to the Ray cluster at {address!r}: {err}",
                         hint="start it with `ray start --head`, or pass --ray without an address "
                              "to start a local one") from None
    return True


@contextlib.contextmanager
def _signals_deferred():
    """Ctrl-C and SIGTERM held back until the block ends, then handled: interrupted in the middle
    of ``ray.init``, a local instance left agent processes running for a minute after beast
    exited; held back, Ray is up, shut down, and the interrupt raised (seconds later)."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except SystemExit as stop:          # ray.init's own SIGTERM handler (sys.exit), met before ours
        if stop.code != signal.SIGTERM:
            raise
        got.append(signal.SIGTERM)
    finally:
        for s, handler in old.items():  # ours again: ray.init installs its own for SIGTERM
            signal.signal(s, handler)
    if got and old[got[0]] != signal.SIG_IGN:
        import ray
        ray.shutdown()
        signal.raise_signal(got[0])     # to the handler it would have met: KeyboardInterrupt, ...


def tune_ray(space, size, *, address: str | None = None, budget: int | None = None,
             strategy="exhaustive", log_path: str | os.PathLike | None = None, seed: int = 0,
             progress: ProgressFn | None = None, backend_factory: Callable[[], object] | None = None,
             num_workers: int | None = None, prefetch: int | None = None,
             lookahead: int | None = None, chunk_size: int = 65536,
             max_attempts: int = MAX_ATTEMPTS,
             compile_timeout: float = COMPILE_TIMEOUT, time_limit: float | None = None) -> RayTuneReport:
    """:func:`beast.tune.driver.local.tune` on every GPU of a Ray cluster.

    The arguments shared with :func:`~beast.tune.driver.local.tune` mean the same (``budget``,
    ``log_path`` -- the same resumable log -- ``seed``, ``progress``).  ``strategy``: a name of
    :data:`~beast.tune.driver.local.STRATEGIES`, or an object with ``ask(n)``/``tell(config,
    measurement)`` (see :func:`strategy_source`), told the log's resumed results first.
    ``address``: see :func:`connect` (an already initialized Ray is used as it is).
    ``backend_factory``: a picklable callable that makes the backend inside each worker
    (default: CuPy on the worker's GPU); the backend's ``compiler()`` must give a picklable
    object whose ``build(config)`` compiles on a CPU worker, and its ``load(artefact)`` what
    ``measure`` takes.  ``num_workers``: actors to start (default: one per GPU of the
    cluster); ``prefetch``: configurations compiling or compiled ahead per actor;
    ``lookahead``: calls queued on each actor (see :class:`WorkerPool`); ``compile_timeout``
    and ``max_attempts``: see :func:`run_distributed`.  ``time_limit``: seconds, as in
    :func:`~beast.tune.driver.local.tune` (the measurements under way finish; ``report.time_up``).
    """
    named = isinstance(strategy, str)
    if named and strategy not in STRATEGIES:
        raise BeastError(f"unknown strategy {strategy!r}", hint=f"use one of {', '.join(STRATEGIES)}")
    (m, n, k), budget, time_limit = check_tune_arguments(
        size, budget=budget, seed=seed, time_limit=time_limit, chunk_size=chunk_size, progress=progress,
        num_workers=num_workers, prefetch=prefetch, lookahead=lookahead)
    check_count(max_attempts, "max_attempts")
    if isinstance(compile_timeout, bool) or not isinstance(compile_timeout, (int, float)) \
            or not 0 < compile_timeout < float("inf"):
        raise BeastError(f"compile_timeout must be a positive number of seconds, not {compile_timeout!r}")
    progress = _progress_caller(progress)
    names = tuple(space.iterators)
    family, settings = tune_family(space)
    if backend_factory is None:
        backend_factory = cupy_backend_factory(space.settings, (m, n, k), seed, family.name)

    ray = import_ray()
    own_ray = connect(address)
    pool = None
    log = None
    try:
        pool = WorkerPool(backend_factory, num_workers=num_workers, prefetch=prefetch, lookahead=lookahead)
        identity = _device_identity(space, SimpleNamespace(device_name=pool.device_name))
        header = make_header(device=identity, size=(m, n, k), space_hash=space.source_hash, iterators=names,
                             settings=space.settings, kernel_version=family.version,
                             space_path=getattr(space, "path", None), kernel_family=family.name)
        log = TuneLog.open(log_path, header)
        report = RayTuneReport(iterators=names, settings=dict(space.settings), size=(m, n, k),
                               device_profile=header["device"]["profile"],
                               device_name=header["device"]["gpu"],
                               strategy=strategy if named else type(strategy).__name__, budget=budget,
                               peak_gflops=_peak(space, settings, family), family=family.name,
                               log_path=os.fspath(log_path) if log_path is not None else None,
                               workers=[s.name for s in pool.slots], time_limit=time_limit)
        best = _resume(report, log)
        if log.reference is not None:
            report.reference = Measurement.from_dict(log.reference)
        ref = pool.reference()
        if ref is not None:
            report.reference = ref
            log.append_reference(ref)

        need = None if budget is None else max(0, budget - len(log.done))
        total = budget
        if total is None:
            try:
                total = int(space.count())
            except Exception:  # noqa: BLE001 - progress then shows no total
                total = None
        if progress is not None:
            progress(len(report.results), total, best, report)

        search = _search_strategy(space, strategy, seed, budget, log.records,
                                  bounded=time_limit is not None) if named else None
        if search is not None:            # local, model, hybrid, portfolio, random by sampling: as tune() runs them
            source = strategy_stream(search, need, batch=pool.prefetch * len(pool.slots))

            def tell(cfg, meas):
                search.tell(cfg, meas.ms if meas.status == OK else None)
        elif named:
            source = candidates(space, strategy, need, log.done, seed=seed, chunk_size=chunk_size)
            tell = None
        else:
            source, tell = strategy_source(strategy, pool.prefetch * len(pool.slots))
            for r in report.results:                   # what the log already holds
                tell(dict(r.config), r.measurement)

        def on_result(cfg, meas, worker):
            nonlocal best
            meas.extra.setdefault("worker", worker)
            log.append(cfg, meas)
            r = TuneResult(dict(cfg), meas)
            report.results.append(r)
            report.measured += 1
            report.per_worker[worker] = report.per_worker.get(worker, 0) + 1
            report.gpu_s += float(meas.extra.get("measure_s") or 0.0)
            report.wall_s = time.monotonic() - started
            if _is_better(r, best):
                best = r
            if tell is not None:
                tell(dict(cfg), meas)
            if progress is not None:
                progress(len(report.results), total, best, report)

        started = time.monotonic()
        try:
            stats = run_distributed(pool, source, names, on_result, skip=log.done, limit=need,
                                    max_attempts=max_attempts, compile_timeout=compile_timeout,
                                    best_ms=lambda: best.ms if best is not None else None,
                                    stop_at=None if time_limit is None else started + time_limit)
        except KeyboardInterrupt as exc:
            report.interrupted, report.interruption = True, exc
        else:
            report.lost_workers = stats.lost_workers
            report.replaced_workers = stats.replaced_workers
            report.retried = stats.retried
            report.compile_retried = stats.compile_retried
            report.compile_timeouts = stats.compile_timeouts
            report.compiled = stats.compiled
            report.stopped = stats.stopped
            report.time_up = stats.time_up
        report.wall_s = time.monotonic() - started
        if report.measured:
            log.append_run(run_summary(report))
        return report
    finally:
        if log is not None:
            log.close()
        if pool is not None:
            pool.shutdown()
        if own_ray:
            ray.shutdown()


def format_ray_summary(report: RayTuneReport) -> str:
    """One line on the workers of a Ray run: how many, what each measured, what was lost."""
    parts = [f"Ray: {len(report.workers)} worker(s)"]
    if report.compiled:
        parts.append(f"compiled {sum(report.compiled.values())} on {len(report.compiled)} CPU worker(s)")
    if report.per_worker:
        parts.append("measured " + ", ".join(f"{w}: {c}" for w, c in sorted(report.per_worker.items())))
    if report.lost_workers:
        parts.append(f"lost {len(report.lost_workers)} worker(s) ({', '.join(report.lost_workers)}), "
                     f"{report.retried} configuration(s) retried elsewhere")
    if report.compile_retried:
        parts.append(f"{report.compile_retried} compile(s) retried after their worker died")
    if report.compile_timeouts:
        parts.append(f"{report.compile_timeouts} compile(s) cancelled after the timeout")
    if report.replaced_workers:
        parts.append(f"restarted {report.replaced_workers} worker(s) after a fatal device error")
    return "; ".join(parts)


__all__ = ["tune_ray", "run_distributed", "WorkerPool", "GpuWorker", "Outcome", "RayTuneReport",
           "DistributedStats", "strategy_source", "connect", "cupy_backend_factory", "format_ray_summary",
           "compile_config", "import_ray", "MAX_ATTEMPTS"]
