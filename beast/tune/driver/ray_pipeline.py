"""The pipeline of :func:`beast.tune.driver.ray.tune_ray`: configurations compiled by Ray tasks on
CPU workers and measured by the GPU actors of a :class:`~beast.tune.driver.ray_workers.WorkerPool`
(:func:`run_distributed`), with what the run did (:class:`DistributedStats`)."""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping

from ..device.measure import COMPILE_ERROR, CRASHED, LAUNCH_ERROR, Measurement
from .log import config_key
from .ray_workers import Outcome, WorkerPool
from .session import Twins

#: how many dead workers (GPU or compile) a configuration may have been in flight on before it
#: is logged as lost.
MAX_ATTEMPTS = 3
COMPILE_TIMEOUT = 600.0     # seconds a compile task may take from its submission


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


def run_distributed(pool: WorkerPool, configs: Iterable[dict | None], iterators,
                    on_result: Callable[[dict, Measurement, str], None], *,
                    skip: Mapping | None = None, limit: int | None = None,
                    max_attempts: int = MAX_ATTEMPTS,
                    compile_timeout: float = COMPILE_TIMEOUT,
                    best_ms: Callable[[], float | None] | None = None,
                    stop_at: float | None = None,
                    on_dispatch: Callable[[dict], None] | None = None,
                    screen: Callable[[dict], bool] | None = None,
                    twins: Twins | None = None) -> DistributedStats:
    """Compile ``configs`` on CPU workers and measure them on the pool's GPU workers;
    ``on_result(config, measurement, worker)`` for each.  ``best_ms()`` (optional): the best
    time so far, sent with each artefact so that a worker can cut a clear loser short.
    ``on_dispatch(config)`` (optional) is called as a compiled configuration is sent to a GPU
    worker; ``screen(config)`` (optional) just before: True when it settled the configuration
    itself (the speed model ruled it out), which then counts as reported and is not measured.

    ``twins`` (the session's :class:`~beast.tune.driver.session.Twins`): configurations whose
    compile task found the same identity (``pool.identifier``: the binary and launch the GPU
    runs) are measured once.  A later one waits until the first is measured and is then
    reported with a copy of its measurement (worker None); when the first is lost or its
    worker's context is poisoned, the next of them is measured instead.

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
    ready: deque = deque()                   # (cfg, key, artefact ref, identity) compiled, waiting for a GPU
    compiling: dict = {}                     # status ref -> (cfg, key, artefact ref)
    deadline: dict = {}                      # status ref -> when its compile times out
    measuring: dict = {}                     # outcome ref -> (slot, cfg, key, artefact ref, identity)
    owner: dict = {}                         # identity -> key of the configuration measuring it
    owned: dict = {}                         # that key -> its identity
    parked: dict = {}                        # identity -> deque of its twins (cfg, key, artefact ref)
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
        parked.clear()
        return True

    def fill():
        if time_is_up():
            return
        live = [s for s in pool.slots if s.alive and not s.draining]
        while ready:                         # compiled: to the least loaded GPU with room, in turn
            room = [s for s in live if s.inflight < pool.lookahead]
            if not room:
                break
            cfg, key, art, ident = ready.popleft()
            if screen is not None and screen(cfg):
                settled(key)
                resolve(key, cfg, None)
                continue
            slot = min(room, key=lambda s: (s.inflight, s.dispatched))
            if on_dispatch is not None:
                on_dispatch(cfg)
            measuring[slot.actor.run.remote(art, best_ms() if best_ms is not None else None)] = \
                (slot, cfg, key, art, ident)
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

    def settled(key):
        nonlocal reported
        reported += 1
        inflight_keys.discard(key)

    def report(cfg, key, meas, worker, measured=False):
        """Hand an outcome on; ``measured``: a worker measured it, so its twins may copy it."""
        settled(key)
        on_result(cfg, meas, worker)
        resolve(key, cfg, meas if measured else None)

    def claim(cfg, key, art, ident):
        """Queue a compiled configuration for a GPU, or, when a twin of it is measured or being
        measured, copy that measurement or wait for it."""
        if twins is not None and ident is not None:
            copy = twins.copy(ident)
            if copy is not None:
                report(cfg, key, copy, None)
                return
            if owner.setdefault(ident, key) != key:
                parked.setdefault(ident, deque()).append((cfg, key, art))
                return
            owned[key] = ident
        ready.append((cfg, key, art, ident))

    def resolve(key, cfg, meas):
        """``key`` is settled: when it measured an identity, its waiting twins get copies of
        ``meas``; without a measurement to copy (lost, refused, pruned), the next of them is
        measured instead."""
        ident = owned.pop(key, None)
        if ident is None:
            return
        del owner[ident]
        if meas is not None:
            twins.remember(ident, cfg, meas)
            for pcfg, pkey, _ in parked.pop(ident, ()):
                report(pcfg, pkey, twins.copy(ident), None)
            return
        waiting = parked.get(ident)
        if waiting:
            cfg, key, art = waiting.popleft()
            if not waiting:
                del parked[ident]
            owner[ident], owned[key] = key, ident
            ready.append((cfg, key, art, ident))

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
            claim(cfg, key, art, status.get("identity"))

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
        slot, cfg, key, art, ident = measuring.pop(ref)
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
                ready.appendleft((cfg, key, art, ident))
            else:
                report(cfg, key, outcome.measurement, outcome.worker,
                       measured=outcome.fatal is None and outcome.measurement.status != COMPILE_ERROR)
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
    work_left = bool(retry or ready or compiling or parked) or (not exhausted and (limit is None or reported < limit))
    if halted is not None:
        stats.stopped = halted
    elif stats.time_up:
        pass
    elif work_left and not any(s.alive for s in pool.slots):
        stats.stopped = "every Ray worker was lost; rerun the same command to resume from the log"
    return stats


__all__ = ["run_distributed", "DistributedStats", "MAX_ATTEMPTS", "COMPILE_TIMEOUT"]
