"""Tuning on every GPU of a Ray cluster: one measuring actor per GPU, one resumable log.

:func:`tune_ray` is what ``beast tune ... --ray [ADDRESS]`` runs.  It writes the same JSONL log
as :func:`beast.tune.runner.tune` (a log started by one can be resumed by the other) and
returns the same :class:`~beast.tune.runner.TuneReport` (a :class:`RayTuneReport`).

How the work is spread:

* One :class:`GpuWorker` actor per GPU of the cluster (``num_gpus=1``; Ray sets
  ``CUDA_VISIBLE_DEVICES``, so its backend measures on device 0).  Each holds its own backend
  (default :class:`beast.tune.gpu.CupyBackend`), compiles ahead on CPU threads of its node
  (``compile_workers`` at a time: NVRTC runs on the CPU) and measures one kernel at a time on
  its GPU.
* The driver (:func:`run_distributed`) pulls configurations from any iterator -- a strategy's
  candidates -- only when a worker has room (``lookahead`` in flight per worker), and hands
  every outcome to a callback at once; :func:`tune_ray` appends it to the log there.
* A worker that dies (process killed, node lost) loses only what it had in flight: those
  configurations go back to the front of the queue and are measured by the others.  Nothing is
  logged before its measurement came back, and nothing in the log or in flight is dispatched
  again, so no configuration is logged twice, and none is measured again unless its worker
  died after measuring it but before the answer arrived.  A configuration in flight on
  ``max_attempts`` dead workers is logged as ``launch_error`` (it may be what kills them).  A
  worker whose backend raises :class:`~beast.tune.measure.FatalBackendError` (a poisoned CUDA
  context) takes no more work, hands back what it had queued, and is replaced by a fresh actor.

Ray is optional (``pip install 'beast-autotune[ray]'``) and imported only here.
"""
from __future__ import annotations

import os
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable, Iterable, Iterator, Mapping

from beast.errors import BeastError

from .kernel import KERNEL_VERSION, GemmLayout, GemmSettings
from .log import TuneLog, config_key, make_header
from .measure import COMPILE_ERROR, LAUNCH_ERROR, OK, STATUSES, FatalBackendError, Measurement
from .runner import (STRATEGIES, ProgressFn, TuneReport, TuneResult, _check_size, _device_identity,
                     _is_better, _message, _peak, _probe_config, _resume, _search_strategy,
                     candidates)
from .strategies import strategy_stream

#: how many dead workers a configuration may have been in flight on before it is logged as lost.
MAX_ATTEMPTS = 3


def import_ray():
    """The ``ray`` module, or a BeastError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise BeastError("--ray needs Ray, which is not installed",
                         hint="pip install 'beast-autotune[ray]'") from None
    return ray


# --------------------------------------------------------------------------- worker side

def cupy_backend_factory(settings: Mapping, size, seed: int = 0) -> Callable[[], object]:
    """A picklable factory of the default backend: CuPy on the actor's GPU (device 0 of it)."""
    return _CupyFactory(dict(settings), tuple(int(x) for x in size), int(seed))


@dataclass(frozen=True)
class _CupyFactory:
    settings: dict
    size: tuple
    seed: int

    def __call__(self):
        from .gpu import CupyBackend
        return CupyBackend(self.settings, self.size, seed=self.seed)


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

    Its ``run`` method is called concurrently (a threaded actor): compiles overlap on up to
    ``compile_workers`` CPU threads, measurements take turns on the GPU.  A backend that cannot
    be created (no CuPy, no device) is reported by :meth:`info` rather than raised, so that the
    driver can say why.
    """

    def __init__(self, backend_factory: Callable[[], object], compile_workers: int = 1):
        self.error = None
        self.fatal = None
        self.backend = None
        try:
            self.backend = backend_factory()
        except BeastError as err:
            self.error = err.message
        except Exception as err:  # noqa: BLE001 - reported to the driver as text
            self.error = f"{type(err).__name__}: {err}"
        self._compile_slots = threading.BoundedSemaphore(max(1, int(compile_workers)))
        self._gpu = threading.Lock()
        self.name = _worker_name()

    def info(self) -> dict:
        """``{"worker", "device_name", "pid", "error"}``."""
        return {"worker": self.name, "device_name": getattr(self.backend, "device_name", None),
                "pid": os.getpid(), "error": self.error}

    def reference(self):
        """The backend's reference (cuBLAS) measurement, or None when it has none."""
        fn = getattr(self.backend, "reference", None)
        if fn is None:
            return None
        try:
            return fn()
        except Exception as err:  # noqa: BLE001 - the table then lacks "% of cuBLAS"
            return Measurement(LAUNCH_ERROR, error=f"cuBLAS reference: {_message(err)}")

    def run(self, config: dict) -> Outcome:
        """Compile (CPU slot) then measure (GPU, one at a time) one configuration.

        After a fatal backend error the worker measures nothing more: it answers with
        ``measurement`` None, and the driver sends the configuration elsewhere."""
        if self.fatal is not None:
            return Outcome(None, self.name)
        with self._compile_slots:
            try:
                compiled = self.backend.compile(config)
            except Exception as err:  # noqa: BLE001 - recorded as compile_error
                return Outcome(Measurement(COMPILE_ERROR, error=_message(err)), self.name)
        fatal = None
        with self._gpu:
            if self.fatal is not None:
                return Outcome(None, self.name)
            try:
                meas = self.backend.measure(compiled)
            except FatalBackendError as err:
                meas = Measurement(LAUNCH_ERROR, error=err.message)
                fatal = self.fatal = str(err)
            except Exception as err:  # noqa: BLE001 - recorded as launch_error
                meas = Measurement(LAUNCH_ERROR, error=_message(err))
        if meas.status not in STATUSES:
            meas = Measurement(LAUNCH_ERROR, error=f"backend returned unknown status {meas.status!r}")
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
    alive: bool = True
    draining: bool = False


@dataclass
class DistributedStats:
    """What :func:`run_distributed` did: workers used, workers lost, configurations retried."""

    workers: list[str] = field(default_factory=list)
    lost_workers: list[str] = field(default_factory=list)
    replaced_workers: int = 0
    retried: int = 0
    stopped: str | None = None


class WorkerPool:
    """One :class:`GpuWorker` actor per GPU of the connected Ray cluster.

    ``num_workers`` (default: the cluster's GPU count) actors are started, each reserving one
    GPU and ``cpus_per_worker`` CPUs of its node (default: the fewest CPUs per GPU of the GPU
    nodes, possibly 0) and compiling on ``compile_workers`` threads (default:
    ``max(1, cpus_per_worker)``).  Workers that have not started after ``start_timeout``
    seconds (their GPU busy elsewhere) are given up; none started is an error.
    """

    def __init__(self, backend_factory: Callable[[], object], *, num_workers: int | None = None,
                 cpus_per_worker: int | None = None, compile_workers: int | None = None,
                 lookahead: int | None = None, start_timeout: float = 300.0):
        ray = import_ray()
        self.ray = ray
        gpu_nodes = [node["Resources"] for node in ray.nodes()
                     if node.get("Alive") and node.get("Resources", {}).get("GPU", 0) >= 1]
        gpus = sum(int(r["GPU"]) for r in gpu_nodes)
        if gpus < 1:
            raise BeastError("the Ray cluster has no GPU to measure on",
                             hint="start the Ray nodes on GPU machines (ray start --num-gpus N)")
        if num_workers is None:
            num_workers = gpus
        if not 1 <= num_workers <= gpus:
            raise BeastError(f"cannot start {num_workers} GPU workers: the Ray cluster has {gpus} GPU(s)")
        if cpus_per_worker is None:
            cpus_per_worker = min(int(r.get("CPU", 0)) // int(r["GPU"]) for r in gpu_nodes)
        self.compile_workers = compile_workers or max(1, cpus_per_worker)
        self.lookahead = lookahead or self.compile_workers + 2
        self.factory = backend_factory
        self.cpus_per_worker = cpus_per_worker
        self._remote = ray.remote(GpuWorker).options(num_gpus=1, num_cpus=cpus_per_worker,
                                                     max_concurrency=self.lookahead + 1)
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
        self.slots = [_Slot(a, i["worker"]) for a, i in zip(actors, infos)]

    def _start(self):
        return self._remote.remote(self.factory, self.compile_workers)

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

    def shutdown(self) -> None:
        for slot in self.slots:
            try:
                self.ray.kill(slot.actor)
            except Exception:  # noqa: BLE001 - already gone
                pass


def run_distributed(pool: WorkerPool, configs: Iterable[dict | None], iterators,
                    on_result: Callable[[dict, Measurement, str], None], *,
                    skip: Mapping | None = None, limit: int | None = None,
                    max_attempts: int = MAX_ATTEMPTS) -> DistributedStats:
    """Measure ``configs`` on the pool's workers; ``on_result(config, measurement, worker)`` for each.

    ``configs`` is pulled lazily, one item whenever a worker has room, so a strategy may decide
    what to propose from the results told so far; it may yield ``None`` for "nothing to propose
    until the next result comes back".  Configurations whose key (values in ``iterators``
    order) is in ``skip`` (a log's ``done``) or already in flight are not dispatched.  At most
    ``limit`` outcomes are reported (None: until ``configs`` runs out).

    Every call is settled one by one: a result that came back is reported even when its worker
    died or failed afterwards, so nothing is measured twice.  A configuration whose worker died
    before answering goes to the front of the queue for another worker; after ``max_attempts``
    such deaths it is reported as ``launch_error``.  A worker that reported a fatal backend
    error takes no new work, its queued configurations come back unmeasured and go to the
    others, and once it is idle it is replaced by a fresh actor.  The run stops early when
    every worker is lost (``stopped`` says so).
    """
    ray = pool.ray
    names = tuple(iterators)
    source: Iterator = iter(configs)
    skip = skip if skip is not None else {}
    stats = DistributedStats(workers=[s.name for s in pool.slots])
    retry: deque = deque()
    attempts: dict[tuple, int] = {}
    inflight_keys: set = set()
    pending: dict = {}                       # ObjectRef -> (slot, config, key)
    reported = 0
    exhausted = False

    def take():
        nonlocal exhausted
        if retry:
            return retry.popleft()
        while not exhausted:
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
            return dict(cfg), key
        return None

    def fill():
        # least loaded first, so that every worker starts at once
        while True:
            if limit is not None and reported + len(inflight_keys) >= limit:
                return
            ready = [s for s in pool.slots if s.alive and not s.draining and s.inflight < pool.lookahead]
            if not ready:
                return
            item = take()
            if item is None:
                return
            slot = min(ready, key=lambda s: s.inflight)
            cfg, key = item
            ref = slot.actor.run.remote(cfg)
            pending[ref] = (slot, cfg, key)
            inflight_keys.add(key)
            slot.inflight += 1

    def report(cfg, meas, worker):
        nonlocal reported
        reported += 1
        on_result(cfg, meas, worker)

    fill()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        ref = ready[0]
        slot, cfg, key = pending.pop(ref)
        inflight_keys.discard(key)
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
            attempts[key] = attempts.get(key, 0) + 1
            if attempts[key] >= max_attempts:
                report(cfg, Measurement(LAUNCH_ERROR, error=f"lost: the Ray worker measuring it died "
                                                            f"{attempts[key]} times"), slot.name)
            else:
                stats.retried += 1
                retry.appendleft((cfg, key))
        except ray.exceptions.RayTaskError as err:         # a bug in the backend, not the device
            report(cfg, Measurement(LAUNCH_ERROR, error=f"Ray worker: {err}"[-2000:]), slot.name)
        else:
            if outcome.measurement is None:                # refused after a fatal error: not measured
                retry.appendleft((cfg, key))
            else:
                report(cfg, outcome.measurement, outcome.worker)
                if outcome.fatal is not None:
                    slot.draining = True
        if slot.alive and slot.draining and slot.inflight == 0:
            if pool.replace(slot):
                stats.replaced_workers += 1
            else:
                stats.lost_workers.append(slot.name)
        fill()
    work_left = bool(retry) or (not exhausted and (limit is None or reported < limit))
    if work_left and not any(s.alive for s in pool.slots):
        stats.stopped = "every Ray worker was lost; rerun the same command to resume from the log"
    return stats


# --------------------------------------------------------------------------- tune

@dataclass
class RayTuneReport(TuneReport):
    """A :class:`TuneReport` with what the Ray run did: ``workers`` (host/gpu names),
    ``lost_workers``, ``retried`` (configurations dispatched again after their worker died)
    ``replaced_workers`` (restarted after a fatal backend error) and ``per_worker``
    (configurations measured by each worker in this run)."""

    workers: list = field(default_factory=list)
    lost_workers: list = field(default_factory=list)
    replaced_workers: int = 0
    retried: int = 0
    per_worker: dict = field(default_factory=dict)


def strategy_source(strategy, batch: int) -> tuple[Iterator, Callable[[dict, Measurement], None]]:
    """Adapt an ask/tell strategy object to (config iterator, result callback).

    ``strategy.ask(n)`` returns up to ``n`` configurations to measure next (an empty list when
    it waits for results, None when it is done); ``strategy.tell(config, measurement)`` is
    called with every outcome."""
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
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    except ConnectionError as err:
        raise BeastError(f"cannot connect to the Ray cluster at {address!r}: {err}",
                         hint="start it with `ray start --head`, or pass --ray without an address "
                              "to start a local one") from None
    return True


def tune_ray(space, size, *, address: str | None = None, budget: int | None = None,
             strategy="exhaustive", log_path: str | os.PathLike | None = None, seed: int = 0,
             progress: ProgressFn | None = None, backend_factory: Callable[[], object] | None = None,
             num_workers: int | None = None, compile_workers: int | None = None,
             lookahead: int | None = None, chunk_size: int = 65536,
             max_attempts: int = MAX_ATTEMPTS) -> RayTuneReport:
    """:func:`beast.tune.runner.tune` on every GPU of a Ray cluster.

    The arguments shared with :func:`~beast.tune.runner.tune` mean the same (``budget``,
    ``log_path`` -- the same resumable log -- ``seed``, ``progress``).  ``strategy``: a name of
    :data:`~beast.tune.runner.STRATEGIES`, or an object with ``ask(n)``/``tell(config,
    measurement)`` (see :func:`strategy_source`), told the log's resumed results first.
    ``address``: see :func:`connect` (an already initialized Ray is used as it is).
    ``backend_factory``: a picklable callable that makes the backend inside each worker
    (default: CuPy on the worker's GPU).  ``num_workers``: actors to start (default: one per
    GPU of the cluster); ``compile_workers``: compile threads per actor; ``lookahead``:
    configurations in flight per actor; ``max_attempts``: see :func:`run_distributed`.
    """
    named = isinstance(strategy, str)
    if named and strategy not in STRATEGIES:
        raise BeastError(f"unknown strategy {strategy!r}", hint=f"use one of {', '.join(STRATEGIES)}")
    if budget is not None and (isinstance(budget, bool) or int(budget) != budget or budget < 1):
        raise BeastError(f"--budget must be a positive integer, got {budget!r}")
    m, n, k = _check_size(size)
    names = tuple(space.iterators)
    settings = GemmSettings.from_mapping(space.settings)
    GemmLayout.from_config(_probe_config(names), settings)
    if backend_factory is None:
        backend_factory = cupy_backend_factory(space.settings, (m, n, k), seed)

    ray = import_ray()
    own_ray = connect(address)
    pool = None
    log = None
    try:
        pool = WorkerPool(backend_factory, num_workers=num_workers, compile_workers=compile_workers,
                          lookahead=lookahead)
        identity = _device_identity(space, SimpleNamespace(device_name=pool.device_name))
        header = make_header(device=identity, size=(m, n, k), space_hash=space.source_hash, iterators=names,
                             settings=space.settings, kernel_version=KERNEL_VERSION,
                             space_path=getattr(space, "path", None))
        log = TuneLog.open(log_path, header)
        report = RayTuneReport(iterators=names, settings=dict(space.settings), size=(m, n, k),
                               device_profile=header["device"]["profile"],
                               device_name=header["device"]["gpu"],
                               strategy=strategy if named else type(strategy).__name__, budget=budget,
                               peak_gflops=_peak(space, settings),
                               log_path=os.fspath(log_path) if log_path is not None else None,
                               workers=[s.name for s in pool.slots])
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
            progress(len(report.results), total, best)

        search = _search_strategy(space, strategy, seed, budget, log.records) if named else None
        if search is not None:            # local, model, hybrid, random by sampling: as tune() runs them
            source = strategy_stream(search, need, batch=pool.lookahead * len(pool.slots))

            def tell(cfg, meas):
                search.tell(cfg, meas.ms if meas.status == OK else None)
        elif named:
            source = candidates(space, strategy, need, log.done, seed=seed, chunk_size=chunk_size)
            tell = None
        else:
            source, tell = strategy_source(strategy, pool.lookahead * len(pool.slots))
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
            if _is_better(r, best):
                best = r
            if tell is not None:
                tell(dict(cfg), meas)
            if progress is not None:
                progress(len(report.results), total, best)

        try:
            stats = run_distributed(pool, source, names, on_result, skip=log.done, limit=need,
                                    max_attempts=max_attempts)
        except KeyboardInterrupt:
            report.interrupted = True
        else:
            report.lost_workers = stats.lost_workers
            report.replaced_workers = stats.replaced_workers
            report.retried = stats.retried
            report.stopped = stats.stopped
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
    if report.per_worker:
        parts.append("measured " + ", ".join(f"{w}: {c}" for w, c in sorted(report.per_worker.items())))
    if report.lost_workers:
        parts.append(f"lost {len(report.lost_workers)} worker(s) ({', '.join(report.lost_workers)}), "
                     f"{report.retried} configuration(s) retried elsewhere")
    if report.replaced_workers:
        parts.append(f"restarted {report.replaced_workers} worker(s) after a fatal device error")
    return "; ".join(parts)


__all__ = ["tune_ray", "run_distributed", "WorkerPool", "GpuWorker", "Outcome", "RayTuneReport",
           "DistributedStats", "strategy_source", "connect", "cupy_backend_factory", "format_ray_summary",
           "import_ray", "MAX_ATTEMPTS"]
