"""Tuning: stream a space's survivors through compile-ahead and measurement, log, report.

:func:`tune` is what ``beast tune`` runs.  The survivors come from ``space.iterate`` (never
materialized for the exhaustive strategy); a thread pool compiles the next configurations
(NVRTC, CPU) while the main thread measures the current one on the GPU; every outcome is
appended to the log at once; a resumed run skips what its log already holds.  It prints
nothing: progress goes to the ``progress`` callback, the summary to :func:`format_report`.

The backend protocol (:class:`beast.tune.gpu.CupyBackend` is the real one; tests pass fakes):

* ``device_name`` -- the GPU that measures (recorded in the log header);
* ``compile(config) -> compiled`` -- called on worker threads; raises on failure (recorded
  as ``compile_error``);
* ``measure(compiled) -> Measurement`` -- called on the calling thread, one at a time;
  raising :class:`~beast.tune.measure.FatalBackendError` stops the run after recording the
  configuration, any other exception is recorded as ``launch_error``;
* ``reference() -> Measurement`` (optional) -- cuBLAS on the same problem;
* ``close()`` (optional).
"""
from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

import numpy as np

from beast.errors import BeastError

from .kernel import KERNEL_VERSION, GemmLayout, GemmSettings
from .log import TuneLog, make_header
from .strategies import make_strategy, strategy_stream
from .measure import (COMPILE_ERROR, LAUNCH_ERROR, OK, STATUSES, WRONG, FatalBackendError, Measurement)

#: ``exhaustive`` and ``random`` stream the enumeration here (``random`` goes through
#: :mod:`beast.tune.strategies` when the space can sample); the others are search strategies.
STRATEGIES = ("exhaustive", "random", "local", "model", "hybrid")


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
    ``peak_gflops`` the device profile's peak for the precision (None when unknown);
    ``interrupted`` whether Ctrl-C ended the run early; ``stopped`` the message of a fatal
    backend error that ended it early.
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
    log_path: str | None = None
    interrupted: bool = False
    stopped: str | None = None
    candidates_left: int | None = None

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


def _peak(space, settings: GemmSettings) -> float | None:
    profile = getattr(space, "device", None)
    fn = getattr(profile, "peak_gflops", None)
    if fn is None:
        return None
    try:
        return fn(settings.precision)
    except Exception:
        return None


def _check_size(size) -> tuple[int, int, int]:
    try:
        m, n, k = (int(x) for x in size)
    except (TypeError, ValueError):
        raise BeastError(f"--size needs three integers M N K, got {size!r}") from None
    if min(m, n, k) < 1:
        raise BeastError(f"--size M N K must be positive, got {m} {n} {k}")
    return m, n, k


def _is_better(r: TuneResult, best: TuneResult | None) -> bool:
    return r.status == OK and r.gflops is not None and (best is None or r.gflops > best.gflops)


def tune(space, size, *, budget: int | None = None, strategy: str = "exhaustive",
         log_path: str | os.PathLike | None = None, seed: int = 0, compile_workers: int | None = None,
         progress: ProgressFn | None = None, backend=None, lookahead: int | None = None,
         chunk_size: int = 65536) -> TuneReport:
    """Tune the GEMM kernel over the survivors of ``space`` for an M x N x K problem.

    ``space``: a :class:`beast.space.Space` (its iterators name the GEMM parameters; its
    settings give precision, arithmetic and transposes).  ``size``: (M, N, K).  ``budget``:
    how many configurations the log should hold in the end (resumed ones count), or None
    for all survivors.  ``strategy``: ``"exhaustive"`` (enumeration order) or ``"random"``
    (uniform sample, ``seed``).  ``log_path``: JSONL log to write, or resume when it exists
    (a log of another problem is refused).  ``compile_workers``: compile-ahead threads
    (default: CPU count, at most 8).  ``progress(done, total, best)`` is called after every
    configuration (``total`` is None when unknown).  ``backend``: the measuring backend
    (default :class:`beast.tune.gpu.CupyBackend`, which raises DeviceError "no GPU found"
    without a GPU).  Ctrl-C stops the run and returns the report with ``interrupted`` set.
    """
    if strategy not in STRATEGIES:
        raise BeastError(f"unknown strategy {strategy!r}", hint="use one of " + ", ".join(STRATEGIES))
    if budget is not None and (isinstance(budget, bool) or int(budget) != budget or budget < 1):
        raise BeastError(f"--budget must be a positive integer, got {budget!r}")
    m, n, k = _check_size(size)
    names = tuple(space.iterators)
    settings = GemmSettings.from_mapping(space.settings)
    GemmLayout.from_config(_probe_config(names), settings)   # names the template lacks -> BeastError

    own_backend = backend is None
    if backend is None:
        from .gpu import CupyBackend
        backend = CupyBackend(settings, (m, n, k), seed=seed)
    workers = compile_workers or min(8, os.cpu_count() or 1)
    lookahead = lookahead or 2 * workers + 2

    header = make_header(device=_device_identity(space, backend), size=(m, n, k),
                         space_hash=space.source_hash, iterators=names,
                         settings=space.settings, kernel_version=KERNEL_VERSION,
                         space_path=getattr(space, "path", None))
    log = TuneLog.open(log_path, header)
    report = TuneReport(iterators=names, settings=dict(space.settings), size=(m, n, k),
                        device_profile=header["device"]["profile"], device_name=header["device"]["gpu"],
                        strategy=strategy, budget=budget, peak_gflops=_peak(space, settings),
                        log_path=os.fspath(log_path) if log_path is not None else None)
    best = _resume(report, log)

    pool = None
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
        if progress is not None:
            progress(done_count, total, best)

        search = _search_strategy(space, strategy, seed, budget, log.records)
        if search is not None:
            stream = strategy_stream(search, need, batch=lookahead)
        else:
            stream = candidates(space, strategy, need, log.done, seed=seed, chunk_size=chunk_size)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="beast-compile")
        pending: deque = deque()

        def fill():
            while len(pending) < lookahead:
                cfg = next(stream, None)
                if cfg is None:
                    return
                pending.append((cfg, pool.submit(backend.compile, cfg)))

        fill()
        while pending:
            cfg, future = pending.popleft()
            fill()                                   # keep compiling ahead while measuring
            fatal = None
            try:
                compiled = future.result()
            except Exception as err:
                meas = Measurement(COMPILE_ERROR, error=_message(err))
            else:
                try:
                    meas = backend.measure(compiled)
                except FatalBackendError as err:
                    meas = Measurement(LAUNCH_ERROR, error=err.message)
                    fatal = err
                except Exception as err:
                    meas = Measurement(LAUNCH_ERROR, error=_message(err))
            if meas.status not in STATUSES:
                meas = Measurement(LAUNCH_ERROR, error=f"backend returned unknown status {meas.status!r}")
            log.append(cfg, meas)
            if search is not None:
                search.tell(cfg, meas.ms if meas.status == OK else None)
            r = TuneResult(dict(cfg), meas)
            report.results.append(r)
            report.measured += 1
            if _is_better(r, best):
                best = r
            done_count += 1
            if progress is not None:
                progress(done_count, total, best)
            if fatal is not None:
                report.stopped = str(fatal)
                break
    except KeyboardInterrupt:
        report.interrupted = True
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        log.close()
        if own_backend and hasattr(backend, "close"):
            backend.close()
    return report


def _resume(report, log) -> TuneResult | None:
    """Put the results the log already holds into ``report``; the best of them (None: none)."""
    best = None
    for rec in log.records:
        r = TuneResult(dict(rec["config"]), Measurement.from_dict(rec))
        report.results.append(r)
        if _is_better(r, best):
            best = r
    report.resumed = len(report.results)
    return best


def _search_strategy(space, strategy: str, seed: int, budget: int | None, records):
    """The :mod:`beast.tune.strategies` object for ``strategy`` (told what the log holds), or
    None for the strategies that stream the enumeration (exhaustive; random over every
    survivor or without ``space.sample``)."""
    if strategy == "exhaustive" or (strategy == "random" and (budget is None or not hasattr(space, "sample"))):
        return None
    search = make_strategy(strategy, space, seed=seed, budget=budget)
    search.resume(records)
    return search


def _probe_config(names) -> dict:
    """A dummy configuration with the space's iterator names (values 1): lets the kernel
    template report which of its parameter names the space lacks."""
    return {name: 1 for name in names}


def _message(err: Exception) -> str:
    if isinstance(err, BeastError):
        return err.message
    return f"{type(err).__name__}: {err}"


# --------------------------------------------------------------------------- report

def progress_line(done: int, total: int | None, best: TuneResult | None) -> str:
    """One line for a progress display: ``[  120/4208]  best 812.3 GFLOP/s  dim_m=16 dim_n=8 ...``."""
    width = len(str(total)) if total is not None else 1
    count = f"[{done:>{width}}/{total}]" if total is not None else f"[{done}]"
    if best is None or best.gflops is None:
        return f"{count}  no verified configuration yet"
    cfg = " ".join(f"{k}={v}" for k, v in best.config.items())
    return f"{count}  best {best.gflops:.1f} GFLOP/s  {cfg}"


def _fmt(x: float | None, spec: str, missing: str = "n/a") -> str:
    return missing if x is None else format(x, spec)


def format_report(report: TuneReport, top: int = 10) -> str:
    """The summary of a tuning run: problem, device, counts, cuBLAS, and a table of the best
    configurations with GFLOP/s, % of cuBLAS and % of the device's peak."""
    st = report.settings
    try:
        routine = GemmSettings.from_mapping(st).routine
    except BeastError:
        routine = "gemm"
    m, n, k = report.size
    lines = [f"{routine}  M={m} N={n} K={k}  on {report.device_name or 'unknown GPU'}"
             f" (profile {report.device_profile})"]
    peak = report.peak_gflops
    precision = st.get("precision", "?")
    lines.append(f"device peak: {_fmt(peak, '.1f')} GFLOP/s ({precision}, CUDA cores)")
    ref = report.reference
    ref_gflops = ref.gflops if ref is not None and ref.status == OK else None
    if ref_gflops is not None:
        lines.append(f"cuBLAS:      {ref_gflops:.1f} GFLOP/s ({ref.ms:.4g} ms)")
    else:
        lines.append("cuBLAS:      not measured")
    c = report.counts
    failed = c[COMPILE_ERROR] + c[LAUNCH_ERROR] + c[WRONG]
    lines.append(f"tried {report.tried} configuration(s): {c[OK]} verified and timed, {failed} failed "
                 f"({c[COMPILE_ERROR]} compile errors, {c[LAUNCH_ERROR]} launch errors, "
                 f"{c[WRONG]} wrong results)")
    if report.resumed:
        lines.append(f"({report.resumed} resumed from {report.log_path}, {report.measured} measured now)")
    if report.interrupted:
        lines.append("interrupted: run the same command again to resume from the log")
    if report.stopped:
        lines.append(f"stopped: {report.stopped}")
    best = report.best(top)
    if not best:
        lines.append("no configuration verified")
        return "\n".join(lines)
    names = list(report.iterators)
    head = ["rank", "GFLOP/s", "% cuBLAS", "% peak", "ms", "CI %"] + names
    rows = []
    for i, r in enumerate(best, 1):
        g = r.gflops
        rows.append([str(i), f"{g:.1f}",
                     _fmt(100 * g / ref_gflops if ref_gflops else None, ".1f"),
                     _fmt(100 * g / peak if peak else None, ".1f"),
                     _fmt(r.ms, ".4g"),
                     _fmt(None if r.measurement.ci_rel is None else 100 * r.measurement.ci_rel, ".1f")]
                    + [str(r.config.get(name, "")) for name in names])
    widths = [max(len(h), *(len(row[j]) for row in rows)) for j, h in enumerate(head)]
    lines.append("")
    lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for row in rows:
        lines.append("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))
    return "\n".join(lines)
