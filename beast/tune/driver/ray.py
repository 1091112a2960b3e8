"""Tuning on every GPU of a Ray cluster: compiles on CPU workers, one measuring actor per GPU,
one resumable log.

:func:`tune_ray` is what ``beast tune ... --ray [ADDRESS]`` runs.  It is the other front of the
same :class:`~beast.tune.driver.session.Session` as :func:`beast.tune.driver.local.tune`: the
same JSONL log (a log started by one can be resumed by the other), the same candidates,
reference, speed-model gate, twins, early cuts and ``started`` records, and the same
:class:`~beast.tune.driver.session.TuneReport` (a :class:`RayTuneReport`).  Only the measuring
differs:

* One :class:`~.ray_workers.GpuWorker` actor per GPU of the cluster (``num_gpus=1``; Ray sets
  ``CUDA_VISIBLE_DEVICES``, so its backend measures on device 0).  Each holds its own backend
  (default :class:`beast.tune.device.gpu.CupyBackend`) and only loads and measures, one kernel at a
  time.
* Compiling is apart from the GPUs: the backend's ``compiler()`` (for CuPy an
  :class:`~beast.tune.device.gpu.NvrtcCompiler` for the GPU's architecture) is shipped once to the
  object store, and every configuration is compiled by a Ray task
  (:func:`~.ray_workers.compile_config`, ``num_cpus=1``, no GPU) on any CPU of the cluster.  The
  task returns a small status (with the identity of what the GPU will run, from the backend's
  ``identifier()``) and the artefact (cubin bytes) as two objects: the driver reads the status,
  and passes the artefact's reference to a GPU actor, so the bytes go from the compiling node to
  the measuring one.
* The driver (:func:`~.ray_pipeline.run_distributed`) pipelines: up to ``prefetch``
  configurations per GPU actor are compiling or compiled and waiting, and up to ``lookahead``
  calls are queued on each actor, so a GPU never waits for a compile while CPUs keep up.
  Configurations are pulled from the session's candidates only when there is room, and every
  outcome is settled in the session at once.
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
  backend raises :class:`~beast.tune.device.measure.FatalBackendError` (a poisoned CUDA context;
  the configuration is logged as ``context_lost``) takes no more work, hands back what it had
  queued (their artefacts go to the others), and is replaced by a fresh actor.
* A ``started`` record is logged as a configuration is sent to a GPU actor; whatever was sent
  and has no result when the run ends (Ctrl-C, every worker lost) is marked ``interrupted``, so
  only a driver that dies leaves configurations for the next run to log as ``crashed``.

Ray is optional (``pip install 'beast-autotune[ray]'``) and imported only when called.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from ...errors import BeastError
from .ray_pipeline import COMPILE_TIMEOUT, MAX_ATTEMPTS, DistributedStats, run_distributed
from .ray_workers import (GpuWorker, Outcome, WorkerPool, compile_config, connect, cupy_backend_factory,
                          import_ray, signals_deferred)
from .session import (ProgressFn, Session, TuneReport, check_count, check_strategy, check_switch,
                      check_tune_arguments, gpu_compute_capability, tune_family)


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


def tune_ray(space, size, *, address: str | None = None, budget: int | None = None,
             strategy="exhaustive", log_path: str | os.PathLike | None = None, seed: int = 0,
             progress: ProgressFn | None = None, backend_factory: Callable[[], object] | None = None,
             num_workers: int | None = None, prefetch: int | None = None,
             lookahead: int | None = None, chunk_size: int = 65536,
             max_attempts: int = MAX_ATTEMPTS, compile_timeout: float = COMPILE_TIMEOUT,
             time_limit: float | None = None, model: bool | None = None, prior=None) -> RayTuneReport:
    """:func:`beast.tune.driver.local.tune` on every GPU of a Ray cluster.

    The arguments shared with :func:`~beast.tune.driver.local.tune` mean the same (``budget``,
    ``strategy`` -- a name or an ask/tell object --, ``log_path`` -- the same resumable log --,
    ``seed``, ``progress``, ``chunk_size``, ``time_limit``, ``prior``, ``model``: with None, the speed
    model is used with the default backend and not with a given ``backend_factory``).
    ``address``: see :func:`~.ray_workers.connect` (an already initialized Ray is used as it is).
    ``backend_factory``: a picklable callable that makes the backend inside each worker
    (default: CuPy on the worker's GPU); the backend's ``compiler()`` must give a picklable
    object whose ``build(config)`` compiles on a CPU worker, and its ``load(artefact)`` what
    ``measure`` takes; its ``identifier()`` (optional), a picklable function of an artefact to
    what the GPU runs, has configurations of one identity measured once.  ``num_workers``:
    actors to start (default: one per GPU of the cluster); ``prefetch``: configurations
    compiling or compiled ahead per actor; ``lookahead``: calls queued on each actor (see
    :class:`~.ray_workers.WorkerPool`); ``compile_timeout`` and ``max_attempts``: see
    :func:`~.ray_pipeline.run_distributed`.  At the time limit the measurements under way
    finish (``report.time_up``).
    """
    strategy = check_strategy(strategy)
    check_switch(model, "model")
    if prior:
        from ...search.prior import check_prior_strategy
        check_prior_strategy(strategy)
    size, budget, time_limit = check_tune_arguments(
        size, budget=budget, seed=seed, time_limit=time_limit, chunk_size=chunk_size, progress=progress,
        num_workers=num_workers, prefetch=prefetch, lookahead=lookahead)
    check_count(max_attempts, "max_attempts")
    if isinstance(compile_timeout, bool) or not isinstance(compile_timeout, (int, float)) \
            or not 0 < compile_timeout < float("inf"):
        raise BeastError(f"compile_timeout must be a positive number of seconds, not {compile_timeout!r}")
    family, settings = tune_family(space)
    own_backend = backend_factory is None
    if backend_factory is None:
        backend_factory = cupy_backend_factory(space.settings, size, seed, family.name)

    ray = import_ray()
    own_ray = connect(address)
    pool = None
    try:
        pool = WorkerPool(backend_factory, num_workers=num_workers, prefetch=prefetch, lookahead=lookahead)
        session = Session(space, size, family, settings, strategy=strategy, budget=budget, seed=seed,
                          prior=prior, log_path=log_path, time_limit=time_limit, chunk_size=chunk_size,
                          device_name=pool.device_name, gpu_cc=gpu_compute_capability(pool),
                          model=own_backend if model is None else model, progress=progress,
                          report_type=RayTuneReport, workers=[s.name for s in pool.slots])
        try:
            _measure(session, pool, max_attempts, compile_timeout)
        except KeyboardInterrupt as exc:
            session.interrupt(exc)
        finally:
            session.finish()
        return session.report
    finally:
        if pool is not None:
            pool.shutdown()
        if own_ray:
            ray.shutdown()


def _measure(session: Session, pool: WorkerPool, max_attempts: int, compile_timeout: float) -> None:
    """The Ray loop of :func:`tune_ray`: the reference from a worker, then the session's
    candidates through :func:`~.ray_pipeline.run_distributed`, every outcome settled."""
    report = session.report
    session.set_reference(pool.reference())
    stream = session.begin(pool.prefetch * len(pool.slots))

    def on_result(cfg, meas, worker):
        if worker is not None:                 # measured (or found not to compile) by that worker
            meas.extra.setdefault("worker", worker)
            report.per_worker[worker] = report.per_worker.get(worker, 0) + 1
        session.settle(cfg, meas)

    stats = run_distributed(pool, stream, session.names, on_result, skip=session.log.done, limit=session.need,
                            max_attempts=max_attempts, compile_timeout=compile_timeout,
                            best_ms=lambda: session.best_ms, stop_at=session.deadline,
                            on_dispatch=session.started, screen=session.prune, twins=session.twins)
    report.lost_workers = stats.lost_workers
    report.replaced_workers = stats.replaced_workers
    report.retried = stats.retried
    report.compile_retried = stats.compile_retried
    report.compile_timeouts = stats.compile_timeouts
    report.compiled = stats.compiled
    report.stopped = stats.stopped
    report.time_up = stats.time_up


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
           "DistributedStats", "connect", "cupy_backend_factory", "format_ray_summary", "compile_config",
           "import_ray", "signals_deferred", "MAX_ATTEMPTS", "COMPILE_TIMEOUT"]
