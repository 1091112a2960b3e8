"""The Ray side of :func:`beast.tune.driver.ray.tune_ray`: the actor that owns one GPU
(:class:`GpuWorker`), the compile task run on CPU workers (:func:`compile_config`), the pool of
actors (:class:`WorkerPool`) and the connection to the cluster (:func:`connect`).

Ray is optional (``pip install 'beast-autotune[ray]'``) and imported only here, when called.
"""
from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, Mapping

from ...errors import BeastError
from ..device.measure import COMPILE_ERROR, CONTEXT_LOST, LAUNCH_ERROR, CompileFailure, FatalBackendError, Measurement
from .session import checked, measure_reference, message, takes


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


def compile_config(compiler, config: dict, identify=None):
    """The body of a compile task (run as a Ray task on a CPU worker, ``num_returns=2``).

    Returns ``(status, artefact)``: status ``{"error", "worker", "compile_s", "identity"}`` with
    ``error`` the compiler's message when the configuration does not compile (artefact None
    then) and ``identity`` what ``identify(artefact)`` says the GPU will run (None without
    ``identify``, or when it fails): the driver measures one configuration per identity.
    Anything but a :class:`CompileFailure` propagates: the environment, not the kernel, is
    wrong."""
    where = f"{socket.gethostname()}/cpu-pid{os.getpid()}"
    try:
        artifact = compiler.build(config)
    except CompileFailure as err:
        return {"error": err.message, "worker": where, "compile_s": None, "identity": None}, None
    identity = None
    if identify is not None:
        try:
            identity = identify(artifact)
            hash(identity)
        except Exception:  # noqa: BLE001 - no identity: measured on its own
            identity = None
    return {"error": None, "worker": where, "compile_s": getattr(artifact, "compile_s", None),
            "identity": identity}, artifact


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
        """``{"worker", "device_name", "compute_capability", "pid", "error", "compiler",
        "identifier"}`` (``compiler``: the picklable object whose ``build(config)`` compiles for
        this GPU on a CPU worker; ``identifier``: the backend's picklable function of an
        artefact to what the GPU runs, None when it has none)."""
        compiler = identifier = None
        if self.error is None:
            try:
                compiler = self.backend.compiler()
            except Exception as err:  # noqa: BLE001 - reported to the driver as text
                self.error = message(err)
            if hasattr(self.backend, "identifier"):
                try:
                    identifier = self.backend.identifier()
                except Exception:  # noqa: BLE001 - then every configuration is measured
                    identifier = None
        return {"worker": self.name, "device_name": getattr(self.backend, "device_name", None),
                "compute_capability": getattr(self.backend, "compute_capability", None),
                "pid": os.getpid(), "error": self.error, "compiler": compiler, "identifier": identifier}

    def reference(self):
        """The backend's reference (cuBLAS) measurement (:func:`~.session.measure_reference`)."""
        with self._gpu:
            return measure_reference(self.backend)

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
                if best_ms is not None and takes(self.backend.measure, "best_ms"):
                    meas = self.backend.measure(compiled, best_ms=best_ms)
                else:
                    meas = self.backend.measure(compiled)
            except FatalBackendError as err:
                meas = Measurement(CONTEXT_LOST, error=err.message)
                fatal = self.fatal = str(err)
            except Exception as err:  # noqa: BLE001 - recorded as launch_error
                meas = Measurement(LAUNCH_ERROR, error=message(err))
            spent = round(time.perf_counter() - started, 4)
        if isinstance(meas, Measurement):
            meas.extra.setdefault("measure_s", spent)
        meas = checked(meas)
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



@dataclass
class _Slot:
    actor: object
    name: str
    inflight: int = 0
    dispatched: int = 0
    alive: bool = True
    draining: bool = False



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
        self.identifier = infos[0]["identifier"]
        self.compute_capability = infos[0]["compute_capability"]
        self.slots = [_Slot(a, i["worker"]) for a, i in zip(actors, infos)]

    def _start(self):
        return self._remote.remote(self.factory)

    def compile(self, config: dict):
        """Submit the compile task of ``config``: (status ref, artefact ref)."""
        return self.compile_task.remote(self.compiler, config, self.identifier)

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


def connect(address: str | None):
    """Connect to (or start) Ray: ``address`` None or "" starts a local instance (or joins the one
    named by $RAY_ADDRESS); "auto" or "host:port" joins a running cluster.  Returns whether this
    call initialized Ray (and so should shut it down)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    try:
        with signals_deferred():
            ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    except ConnectionError as err:
        raise BeastError(f"cannot connect to the Ray cluster at {address!r}: {err}",
                         hint="start it with `ray start --head`, or pass --ray without an address "
                              "to start a local one") from None
    return True


@contextlib.contextmanager
def signals_deferred():
    """Ctrl-C and SIGTERM held back until the block ends, then handled: interrupted in the middle
    of ``ray.init``, a local instance leaves agent processes running after beast exits; held
    back, Ray comes up, is shut down, and then the interrupt is raised."""
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


__all__ = ["GpuWorker", "Outcome", "WorkerPool", "compile_config", "connect", "cupy_backend_factory", "import_ray",
           "signals_deferred"]
