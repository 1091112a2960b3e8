"""One tuning run, whichever front measures it: what :func:`beast.tune.driver.local.tune` (this
machine's GPU) and :func:`beast.tune.driver.ray.tune_ray` (the GPUs of a Ray cluster) share.

The fronts differ only in how configurations get compiled and measured.  Everything else is a
:class:`Session`: the checks of the shared arguments, the log's header, resuming from the log,
the cuBLAS reference, the choice of the candidate stream (the enumeration, a strategy of
:mod:`beast.search`, or a given ask/tell object, all through one
:class:`~beast.search.base.StrategyStream`), the speed model's gate, and the steps that follow
every result: twins (one binary and launch measured once), early cuts counted, ``started``
records, the strategy told, the best so far, progress, and the ``run`` record at the end.

A front runs a session so::

    session = Session(space, size, family, settings, strategy=..., device_name=..., ...)
    session.set_reference(...)                    # the backend's cuBLAS time, or None
    for cfg in session.begin(batch):              # None: nothing to propose until a result
        ...                                       # compile; session.prune(cfg) once more
        twin = session.twins.copy(identity)       # the same binary and launch measured before
        session.started(cfg)                      # before the measurement begins
        session.settle(cfg, measurement)          # logged, counted, told, shown
    session.finish()                              # interrupted marks, the run record, closed
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
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

from ...errors import BeastError
from ...runtime import check_chunk_size, check_integer
from ...search import EXHAUSTIVE, STRATEGIES, StrategyStream, check_seed, make_strategy
from ...search.base import check_count
from ..device.measure import LAUNCH_ERROR, OK, PRUNED, STATUSES, Measurement
from ..kernels.families import DEFAULT_FAMILY, KernelFamily, family_of, get_family
from ..kernels.paper import GemmSettings
from .candidates import candidates
from .log import TuneLog, config_key, make_header


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
    """Everything a tuning run learned; :func:`beast.tune.driver.report.format_report` renders it.

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


# --------------------------------------------------------------------------- argument checks

def check_size(size) -> tuple[int, int, int]:
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


def check_tune_arguments(size, *, budget=None, seed=0, time_limit=None, chunk_size=65536,
                         progress=None, **counts) -> tuple[tuple[int, int, int], int | None, float | None]:
    """Check the arguments both fronts share, before any work: ``size`` three positive
    integers, ``budget`` a positive integer or None (every survivor), ``seed`` a non-negative
    integer, ``time_limit`` positive seconds or None, ``chunk_size`` a positive integer,
    ``progress`` None or callable, and each of ``counts`` (``compile_workers=...``,
    ``lookahead=...``) a positive integer or None (its default).  Integers may be numpy
    integers, never bools or floats.  Returns ``((M, N, K), budget, time_limit)`` as ints and
    float; a BeastError names the first argument that is wrong."""
    m, n, k = check_size(size)
    budget = check_count(budget, "budget", "every survivor")
    check_seed(seed)
    time_limit = check_time_limit(time_limit)
    check_chunk_size(chunk_size)
    if progress is not None and not callable(progress):
        raise BeastError(f"progress must be a function (done, total, best) or None, not {progress!r}")
    for name, value in counts.items():
        check_count(value, name, "the default")
    return (m, n, k), budget, time_limit


def check_strategy(strategy):
    """``strategy`` as both fronts take it: :data:`~beast.search.EXHAUSTIVE`, a name of
    :data:`beast.search.STRATEGIES`, or an object with ``ask(n)`` and ``tell(config, measurement)``
    (the convention of :class:`~beast.search.base.StrategyStream`); a BeastError otherwise."""
    if isinstance(strategy, str):
        if strategy == EXHAUSTIVE or strategy in STRATEGIES:
            return strategy
    elif callable(getattr(strategy, "ask", None)) and callable(getattr(strategy, "tell", None)):
        return strategy
    raise BeastError(f"unknown strategy {strategy!r:.60}",
                     hint=f"use one of {', '.join((EXHAUSTIVE, *STRATEGIES))}, or an object with "
                          f"ask(n) and tell(config, measurement)")


def check_switch(value, name: str):
    """``value`` of a True/False/None (the default) argument such as ``model``; BeastError otherwise."""
    if value is not None and not isinstance(value, bool):
        raise BeastError(f"{name} must be True, False or None (the default), not {value!r}")
    return value


def strategy_name(strategy) -> str:
    """The name of a strategy in the report and the log's ``run`` record: its name, or the class
    of an ask/tell object."""
    return strategy if isinstance(strategy, str) else type(strategy).__name__


# --------------------------------------------------------------------------- what is tuned, where

def tune_family(space) -> tuple[KernelFamily, GemmSettings]:
    """The kernel family ``space`` asks for and its settings, checked: the template's parameter
    names among the space's iterators, the precision, and the device profile's compute capability
    (BeastError saying what is wrong)."""
    family = family_of(space)
    settings = family.settings(space.settings)
    family.check_names(tuple(space.iterators), settings)       # names the template lacks
    profile = getattr(space, "device", None)
    family.check_device(compute_capability(space), getattr(profile, "name", None))
    return family, settings


def device_identity(space, device_name: str | None) -> dict:
    """The log header's device: the profile the space was pruned for (name and a hash of all
    its fields, so that a scaled-down or edited profile of the same name differs) and the GPU
    that measures."""
    profile = getattr(space, "device", None)
    name = getattr(profile, "name", None) or (str(profile) if profile is not None else None)
    fields = profile.as_dict() if hasattr(profile, "as_dict") else repr(profile)
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return {"profile": name, "profile_hash": digest, "gpu": device_name}


def compute_capability(space) -> tuple[int, int] | None:
    """(major, minor) of the device profile the space was pruned for (None: unknown)."""
    profile = getattr(space, "device", None)
    try:
        return int(profile.cudamajor), int(profile.cudaminor)
    except (AttributeError, TypeError, ValueError):
        return None


def gpu_compute_capability(backend) -> tuple[int, int] | None:
    """(major, minor) of the GPU that measures (None: a backend that does not say)."""
    try:
        major, minor = backend.compute_capability
        return int(major), int(minor)
    except (AttributeError, TypeError, ValueError):
        return None


def peak_gflops(space, settings: GemmSettings, family: KernelFamily | None = None) -> float | None:
    """The device profile's peak GFLOP/s for the kernels of ``family`` (default: the paper's)."""
    family = family or get_family(DEFAULT_FAMILY)
    return family.peak_gflops(getattr(space, "device", None), settings.precision)


# --------------------------------------------------------------------------- small shared steps

def message(err: Exception) -> str:
    """The text a log records for an exception: a BeastError's message, else type and text."""
    if isinstance(err, BeastError):
        return err.message
    return f"{type(err).__name__}: {err}"


def takes(fn, name: str) -> bool:
    """Whether ``fn`` accepts the keyword argument ``name`` (fake backends may not)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def progress_caller(progress):
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


def is_better(r: TuneResult, best: TuneResult | None) -> bool:
    """Whether ``r`` verified and is faster than ``best`` (None: anything verified is)."""
    return r.status == OK and r.gflops is not None and (best is None or r.gflops > best.gflops)


def checked(meas) -> Measurement:
    """``meas`` when it is a Measurement of a known status, else a ``launch_error`` saying what
    the backend returned."""
    if isinstance(meas, Measurement) and meas.status in STATUSES:
        return meas
    status = getattr(meas, "status", meas)
    return Measurement(LAUNCH_ERROR, error=f"backend returned unknown status {status!r}")


def measure_reference(backend) -> Measurement | None:
    """The backend's cuBLAS reference on the problem (None: it has none); a reference that
    fails is a ``launch_error`` measurement, so the run goes on and its table lacks "% of cuBLAS"."""
    fn = getattr(backend, "reference", None)
    if fn is None:
        return None
    try:
        return fn()
    except Exception as err:
        return Measurement(LAUNCH_ERROR, error=f"cuBLAS reference: {message(err)}")


def run_summary(report: TuneReport) -> dict:
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


def search_strategy(space, strategy: str, seed: int, budget: int | None, records, bounded: bool = False,
                    prior=None):
    """The :mod:`beast.search` object for the named ``strategy`` (told what the log holds), or
    None for the orders that stream the enumeration (exhaustive; random over every survivor or
    without ``space.sample``).  ``bounded``: the run ends by a time limit, so ``random`` without
    a budget still draws from a sample rather than ordering every survivor.  ``prior``: earlier
    runs of the space that the strategy starts from (:mod:`beast.search.prior`)."""
    every = budget is None and not bounded
    if strategy == EXHAUSTIVE or (strategy == "random" and (every or not hasattr(space, "sample"))):
        return None
    search = make_strategy(strategy, space, seed=seed, budget=budget, **({"prior": prior} if prior else {}))
    search.resume(records)
    return search


class Twins:
    """The first measurement of each identity (what the GPU runs: binary and launch).  A later
    configuration of an identity measured before gets :meth:`copy` instead of a measurement:
    the same numbers, marked ``twin_of`` (the configuration measured)."""

    def __init__(self):
        self._first: dict = {}

    def __contains__(self, identity) -> bool:
        return identity in self._first

    def copy(self, identity) -> Measurement | None:
        """The measurement of ``identity``'s first configuration, copied for a twin (None:
        ``identity`` is None or not measured yet)."""
        if identity is None or identity not in self._first:
            return None
        first_cfg, first = self._first[identity]
        twin = Measurement.from_dict(first.as_dict())
        twin.extra.pop("measure_s", None)
        twin.extra["twin_of"] = dict(first_cfg)
        return twin

    def remember(self, identity, config: Mapping, meas: Measurement) -> None:
        """``config`` measured ``identity`` as ``meas`` (the first one is kept)."""
        if identity is not None:
            self._first.setdefault(identity, (dict(config), meas))


# --------------------------------------------------------------------------- the session

class Session:
    """One tuning run's log, report and per-result steps (see the module docstring).

    Opening it writes or resumes the log (``log_path``; None: in memory) with the header of
    ``space``, ``size`` and ``device_name`` (the GPU that measures), puts the log's results into
    :attr:`report` (a configuration a previous run left ``started`` is logged ``crashed``
    first), and sets up the speed model's gate when ``model`` and the space's profile has the
    compute capability ``gpu_cc`` of the measuring GPU (None: unknown, taken as the same).
    ``report_type`` and ``report_fields``: the front's report class and its own fields.
    """

    def __init__(self, space, size, family: KernelFamily, settings: GemmSettings, *, strategy,
                 budget: int | None, seed: int, log_path, time_limit: float | None, chunk_size: int,
                 device_name: str | None, gpu_cc: tuple | None = None, model: bool = False,
                 progress: ProgressFn | None = None, prior=None, report_type=TuneReport, **report_fields):
        self.space = space
        self.prior = prior
        self.names = tuple(space.iterators)
        self.strategy = strategy
        self.seed = seed
        self.budget = budget
        self.chunk_size = chunk_size
        self.progress = progress_caller(progress)
        self.clock = time.monotonic
        opened = self.clock()
        self.deadline = None if time_limit is None else opened + time_limit
        self.started_at = opened
        header = make_header(device=device_identity(space, device_name), size=size,
                             space_hash=space.source_hash, iterators=self.names, settings=space.settings,
                             kernel_version=family.version, space_path=getattr(space, "path", None),
                             kernel_family=family.name)
        self.gate = None
        if model and gpu_cc in (None, compute_capability(space)):
            # off when the space's profile is not the measuring GPU's (the default is the K40c): a
            # bound from that profile's peaks would exceed this GPU's times and prune its winners
            from ..model.speed import tuning_gate
            self.gate = tuning_gate(space, size)
        self.log = TuneLog.open(log_path, header)
        self.report = report_type(
            iterators=self.names, settings=dict(space.settings), size=tuple(size),
            device_profile=header["device"]["profile"], device_name=header["device"]["gpu"],
            strategy=strategy_name(strategy), budget=budget, peak_gflops=peak_gflops(space, settings, family),
            family=family.name, log_path=os.fspath(log_path) if log_path is not None else None,
            time_limit=time_limit, compute_capability=compute_capability(space),
            gpu_compute_capability=gpu_cc, **report_fields)
        self.twins = Twins()
        self.best: TuneResult | None = None
        self.search: StrategyStream | None = None
        self._in_flight: dict = {}                  # key -> config: started, no result yet
        self._given: set | None = None              # keys an ask/tell object proposed this run
        self.log.settle_started()
        for rec in self.log.records:
            self._count(TuneResult(dict(rec["config"]), Measurement.from_dict(rec)))
        self.report.resumed = len(self.report.results)
        if self.log.reference is not None:
            self.report.reference = Measurement.from_dict(self.log.reference)
        self.need = None if budget is None else max(0, budget - len(self.log.done))
        self.total = budget
        if budget is None:
            try:
                self.total = int(space.count())
            except Exception:  # noqa: BLE001 - progress then shows no total
                self.total = None

    # -- before the loop
    def set_reference(self, meas: Measurement | None) -> None:
        """This run's cuBLAS reference (:func:`measure_reference`), logged; None keeps the log's."""
        if meas is not None:
            self.report.reference = meas
            self.log.append_reference(meas)

    def begin(self, batch: int) -> Iterator:
        """The candidates to measure, pulled one at a time: at most the budget left, none the
        log holds; ``None`` for "nothing to propose until a result comes back" (an ask/tell
        strategy waiting).  ``batch``: configurations asked of a strategy at a time, and how
        many of the first the speed model puts in order.  A candidate the model rules out is
        settled as ``pruned`` here, not given out.  Starts the loop's clock."""
        strategy, log = self.strategy, self.log
        if isinstance(strategy, str):
            search = search_strategy(self.space, strategy, self.seed, self.budget, log.records,
                                     bounded=self.deadline is not None, prior=self.prior)
            if search is None:
                stream = candidates(self.space, strategy, self.need, log.done, seed=self.seed,
                                    chunk_size=self.chunk_size)
            else:
                stream = self.search = StrategyStream(search, self.need, batch)
        else:
            self.search = StrategyStream(strategy, self.need, batch)
            for r in self.report.results:          # what the log already holds
                self.search.tell(dict(r.config), r.measurement)
            self._given = set()
            stream = self._fresh(self.search)
        if self.gate is not None:
            stream = self._ordered(stream, batch)
        if self.progress is not None:
            self.progress(len(self.report.results), self.total, self.best, self.report)
        self.started_at = self.clock()              # the loop's own time: what busy shares divide
        return self._unpruned(stream)

    def _fresh(self, stream) -> Iterator:
        """An ask/tell object's proposals less those the log holds (told their outcome) and
        those it proposed before in this run."""
        for cfg in stream:
            if cfg is not None:
                key = config_key(cfg, self.names)
                done = self.log.done.get(key)
                if done is not None:
                    self.search.tell(dict(cfg), Measurement.from_dict(done))
                    continue
                if key in self._given:
                    continue
                self._given.add(key)
            yield cfg

    def _ordered(self, stream, n: int) -> Iterator:
        """``stream`` with its first ``n`` candidates (up to a wait) fastest predicted first."""
        head = []
        stop = False
        for cfg in stream:
            if cfg is None:
                stop = True
                break
            head.append(cfg)
            if len(head) >= n:
                break
        yield from self.gate.order_first(iter(head), len(head))
        if stop:
            yield None
        yield from stream

    def _unpruned(self, stream) -> Iterator:
        for cfg in stream:
            if cfg is None or not self.prune(cfg):
                yield cfg

    # -- in the loop
    @property
    def best_ms(self) -> float | None:
        """The best time so far (ms), what a backend's early cut compares against."""
        return self.best.ms if self.best is not None else None

    def time_left(self) -> float | None:
        """Seconds until the time limit (None: no limit)."""
        return None if self.deadline is None else self.deadline - self.clock()

    def prune(self, cfg) -> bool:
        """Settle ``cfg`` unmeasured (``pruned``) when the speed model's lower bound cannot beat
        the best so far; whether it did."""
        gate, best_ms = self.gate, self.best_ms
        if gate is None or best_ms is None or gate.keeps(cfg, best_ms):
            return False
        self.settle(cfg, Measurement(PRUNED, error="the speed model's lower bound exceeds the best time so far",
                                     extra={"lower_ms": round(gate.lower_ms(cfg), 6), "best_ms": round(best_ms, 6)}),
                    measured=False)
        self.report.pruned += 1
        return True

    def started(self, cfg) -> None:
        """Log that ``cfg``'s measurement begins (flushed): a run that dies now has it logged
        ``crashed`` by the next one; one that ends otherwise marks it ``interrupted``."""
        self._in_flight[config_key(cfg, self.names)] = dict(cfg)
        self.log.append_started(cfg)

    def settle(self, cfg, meas: Measurement, *, measured: bool = True, spent: float | None = None) -> TuneResult:
        """Log one configuration's outcome and count it: measured (``measured``; ``spent``
        seconds of GPU time, default its ``measure_s``), an early cut or a twin, the strategy
        told, the best, the progress shown."""
        report = self.report
        self.log.append(cfg, meas)
        self._in_flight.pop(config_key(cfg, self.names), None)
        if measured:
            report.measured += 1
            report.gpu_s += float(meas.extra.get("measure_s") or 0.0) if spent is None else spent
        if meas.extra.get("twin_of"):
            report.twins += 1
        elif meas.extra.get("early_cut"):
            report.cut += 1
        if self.search is not None:
            self.search.tell(dict(cfg), meas)
        r = TuneResult(dict(cfg), meas)
        self._count(r)
        report.wall_s = self.clock() - self.started_at
        if self.progress is not None:
            self.progress(len(report.results), self.total, self.best, report)
        return r

    def _count(self, r: TuneResult) -> None:
        self.report.results.append(r)
        if is_better(r, self.best):
            self.best = r

    # -- after the loop
    def interrupt(self, exc: BaseException) -> None:
        """Ctrl-C ended the run: the report says so (the front returns it)."""
        self.report.interrupted, self.report.interruption = True, exc

    def finish(self) -> None:
        """End the run: what was started and has no result is marked ``interrupted`` (measured
        again on resume), the ``run`` record written when anything was measured, the log closed."""
        report = self.report
        report.wall_s = self.clock() - self.started_at
        try:
            for cfg in self._in_flight.values():
                self.log.append_interrupted(cfg)
            self._in_flight.clear()
            if report.measured:
                self.log.append_run(run_summary(report))
        finally:
            self.log.close()


__all__ = ["Session", "TuneReport", "TuneResult", "ProgressFn", "Twins", "check_tune_arguments", "check_count",
           "check_size", "check_time_limit", "check_strategy", "check_switch", "parse_duration", "tune_family",
           "device_identity", "compute_capability", "gpu_compute_capability", "peak_gflops", "run_summary",
           "measure_reference", "search_strategy", "strategy_name", "checked", "message", "takes",
           "progress_caller", "is_better"]
