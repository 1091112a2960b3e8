"""The tuning log: JSON lines, one header then one record per configuration.

Line 1 is the header::

    {"beast_tune_log": 1, "kernel_version": 1, "kernel_family": "gemm",
     "device": {"profile": "h100", "gpu": "NVIDIA H100 80GB HBM3"},
     "size": [4096, 4096, 4096], "space_hash": "...", "space_path": "spaces/gemm.py",
     "iterators": ["dim_m", ...], "settings": {"precision": "double", ...}, "created": "..."}

then records::

    {"config": {"dim_m": 16, ...}, "status": "ok", "ms": 1.23, "gflops": 456.7, "ci_rel": 0.01, ...}
    {"reference": "cublas", "status": "ok", "ms": 1.01, "gflops": 540.2, ...}
    {"run": {"measured": 200, "wall_s": 61.2, "gpu_busy": 0.83, "configs_per_s": 3.27, ...}}

``kernel_family`` names the template measured (:mod:`beast.tune.kernels.families`: ``gemm``, the
paper's, or ``gemm_mma``, FP64 tensor cores); a log without it, from before families, is of
``gemm``.

A record with ``"early_cut": true`` was timed from its warm-up launches only (slower than the
cut-off; ``cutoff_ms`` says which), one with ``"twin_of"`` copies the measurement of a
configuration that runs the same binary and launch; both count as measured.  The ``run``
records (one per command) say how long each run took and how busy the GPU was.

Before a configuration's measurement begins, a ``started`` record is written and flushed::

    {"started": {"dim_m": 16, ...}}

and its result record follows.  A ``started`` record without a result means the configuration
ended the run that measured it (the process died: a driver crash, a kill): the next run logs it
once as ``crashed`` (``"ended_run": true``), counted in the budget and not measured again
(:meth:`TuneLog.settle_started`).  Ctrl-C during a measurement writes ``{"interrupted": {...}}``
instead, so that configuration is measured again on resume.  :func:`read_log` leaves both
kinds out of the records it returns (unless asked), so readers that look for ``"config"``
records see the same log as before; logs without them resume as they always did.

A record is appended and flushed as soon as the configuration is measured (and fsync'ed at
most once a second), so an interruption loses at most the configuration in flight; a torn last line is dropped when
the log is opened again.  Opening an existing log checks its header against the run's: a
log written for another device, size, space, iterator list, settings or kernel version is
refused with a :class:`~beast.errors.BeastError` naming the field that differs.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import time
from typing import Iterable, Mapping

from ...errors import BeastError

from ..device.measure import CRASHED, Measurement

LOG_FORMAT = 1
#: header fields that must agree for a log to be resumed (in the order they are checked).
MATCH_FIELDS = ("beast_tune_log", "kernel_family", "kernel_version", "device", "size", "space_hash", "iterators",
                "settings")
#: what a header without the field means (logs written before the field existed)
FIELD_DEFAULTS = {"kernel_family": "gemm"}

_FIELD_WORDS = {
    "beast_tune_log": "log format", "kernel_family": "GEMM kernel family",
    "kernel_version": "GEMM kernel template version",
    "device": "device", "size": "problem size (M N K)", "space_hash": "space file (its text hash)",
    "iterators": "iterator list", "settings": "settings",
}


def _jsonable(value):
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, bool)) or value is None:
        return value
    if hasattr(value, "item"):                 # numpy scalars
        return value.item()
    if isinstance(value, (int, float)):
        return value
    return str(value)


def make_header(*, device: Mapping, size: Iterable[int], space_hash: str, iterators: Iterable[str],
                settings: Mapping, kernel_version: int, space_path: str | None = None,
                kernel_family: str = "gemm") -> dict:
    """The header of a log for one tuning problem (``kernel_family``: the template measured)."""
    return {
        "beast_tune_log": LOG_FORMAT,
        "kernel_family": kernel_family,
        "kernel_version": kernel_version,
        "device": _jsonable(device),
        "size": [int(x) for x in size],
        "space_hash": space_hash,
        "space_path": space_path,
        "iterators": [str(x) for x in iterators],
        "settings": _jsonable(settings),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def config_key(config: Mapping, iterators: Iterable[str]) -> tuple:
    """The identity of a configuration: its values in iterator order."""
    return tuple(int(config[name]) for name in iterators)


def _show(value) -> str:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return " ".join(map(str, value))
    return json.dumps(value, sort_keys=True)


def compare_headers(found: Mapping, wanted: Mapping, path: str | None = None) -> None:
    """Raise BeastError naming the first header field in which ``found`` differs from ``wanted``."""
    for field in MATCH_FIELDS:
        a, b = found.get(field, FIELD_DEFAULTS.get(field)), wanted.get(field, FIELD_DEFAULTS.get(field))
        if a != b:
            what = _FIELD_WORDS[field]
            detail = ""
            if isinstance(a, Mapping) and isinstance(b, Mapping):
                keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
                detail = "; ".join(f"{k}: log has {_show(a.get(k))}, this run has {_show(b.get(k))}"
                                   for k in keys)
            else:
                detail = f"log has {_show(a)}, this run has {_show(b)}"
            raise BeastError(
                f"refusing to resume: the log was written for a different {what} ({detail})",
                filename=path,
                hint="pass a new --log file, or delete this one to start over")


#: the record kinds that mark a measurement's start and its interruption (not results).
MARKS = ("started", "interrupted")


def read_log(path: str, marks: bool = False) -> tuple[dict | None, list[dict], bool]:
    """Read a log: (header or None when empty, records, whether a torn last line was dropped).

    ``marks``: keep the ``started`` and ``interrupted`` records (:data:`MARKS`), which are left
    out by default: they are not results."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.strip():
        return None, [], False
    lines = data.split(b"\n")
    entries = []
    dropped = False
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            entries.append(json.loads(raw))
        except (json.JSONDecodeError, UnicodeDecodeError):
            if number == len(lines) and number > 1:    # the record in flight when interrupted
                dropped = True
                break
            raise BeastError(f"line {number} is not valid JSON; this is not an intact beast tune log",
                             filename=path, lineno=number,
                             hint="pass a new --log file") from None
    if not entries or not isinstance(entries[0], dict) or "beast_tune_log" not in entries[0]:
        raise BeastError("this file is not a beast tune log (no header line)", filename=path,
                         hint="pass a new --log file; beast does not overwrite other files")
    records = [e for e in entries[1:] if isinstance(e, dict) and (marks or not _is_mark(e))]
    return entries[0], records, dropped


def _is_mark(rec: Mapping) -> bool:
    return "config" not in rec and any(isinstance(rec.get(kind), Mapping) for kind in MARKS)


def _cannot_write(path: str, exc: OSError) -> BeastError:
    return BeastError(f"cannot write the tuning log {path}: {exc.strerror or exc}",
                      hint="rerun with the same --log once it can be written: the run resumes from it")


def check_log(path) -> None:
    """Refuse, before any work, a tuning log that cannot be one: it is read back to resume, so it
    must be a regular file (or a new one in a folder that exists and can be written)."""
    import stat
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise BeastError(f"cannot write the tuning log {path}: there is no folder "
                             f"{os.path.dirname(path) or '.'}") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise BeastError(f"cannot write the tuning log {path}: the folder "
                             f"{os.path.dirname(path) or '.'} is not writable") from None
        return
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise BeastError(f"cannot use {path} as the tuning log: it is {kind}",
                         hint="the log is read back to resume a run: give a file name")
    if not os.access(path, os.R_OK | os.W_OK):
        raise BeastError(f"cannot write the tuning log {path}: permission denied")


class TuneLog:
    """An open tuning log (or an in-memory one when ``path`` is None).

    ``done`` maps the key of every configuration already recorded (``config_key``) to its
    record; ``reference`` is the last cuBLAS reference record; ``unfinished`` maps the key of
    every configuration with a ``started`` record and no result after it to its values.
    :meth:`append` writes one record and flushes it.
    """

    def __init__(self, path: str | None, header: dict, records: list[dict], resumed: bool):
        self.path = path
        self.header = header
        self.iterators = list(header["iterators"])
        self.records: list[dict] = []
        self.done: dict[tuple, dict] = {}
        self.reference: dict | None = None
        self.runs: list[dict] = []
        self.unfinished: dict[tuple, dict] = {}
        self.resumed = resumed
        self._file = None
        self._synced = 0.0
        for rec in records:
            self._remember(rec)
        self.resumed_count = len(self.done)

    @classmethod
    def open(cls, path: str | os.PathLike | None, header: dict) -> "TuneLog":
        """Create ``path`` with ``header``, or resume it when it exists with a matching header."""
        if path is None:
            return cls(None, header, [], False)
        path = os.fspath(path)
        check_log(path)
        try:
            return cls._open(path, header)
        except OSError as exc:
            raise _cannot_write(path, exc) from None

    @classmethod
    def _open(cls, path: str, header: dict) -> "TuneLog":
        records: list[dict] = []
        resumed = False
        if os.path.exists(path) and os.path.getsize(path) > 0:
            found, records, dropped = read_log(path, marks=True)
            compare_headers(found, header, path)
            header = found
            resumed = True
            with open(path, "rb+") as f:          # make appends start on a line of their own
                data = f.read()
                if dropped:                        # drop the torn record
                    f.truncate(data.rfind(b"\n") + 1)
                elif not data.endswith(b"\n"):
                    f.write(b"\n")
        log = cls(path, header, records, resumed)
        log._file = open(path, "a", encoding="utf-8")
        if not resumed:
            log._write(header)
        return log

    def _remember(self, rec: dict) -> None:
        if "config" in rec:
            try:
                key = config_key(rec["config"], self.iterators)
            except (KeyError, TypeError, ValueError):
                return
            self.done[key] = rec
            self.records.append(rec)
            self.unfinished.pop(key, None)
        elif _is_mark(rec):
            kind = "started" if isinstance(rec.get("started"), Mapping) else "interrupted"
            try:
                key = config_key(rec[kind], self.iterators)
            except (KeyError, TypeError, ValueError):
                return
            if kind == "started":
                self.unfinished[key] = {name: int(rec[kind][name]) for name in self.iterators}
            else:
                self.unfinished.pop(key, None)
        elif "reference" in rec:
            self.reference = rec
        elif isinstance(rec.get("run"), dict):
            self.runs.append(rec["run"])

    def _write(self, obj: dict) -> None:
        if self._file is None:
            return
        try:
            self._file.write(json.dumps(_jsonable(obj), sort_keys=False) + "\n")
            self._file.flush()                   # survives the process being killed
        except OSError as exc:                   # a full disk: what was logged before stays whole
            raise _cannot_write(self.path, exc) from None
        now = time.monotonic()
        if now - self._synced > 1.0:             # and, within a second, the machine going down
            self._synced = now
            try:
                os.fsync(self._file.fileno())
            except OSError:
                pass

    def append(self, config: Mapping, measurement: Measurement) -> dict:
        """Record one configuration's outcome; returns the record written."""
        rec = {"config": {name: int(config[name]) for name in self.iterators}}
        rec.update(measurement.as_dict())
        rec = _jsonable(rec)
        self._write(rec)
        self._remember(rec)
        return rec

    def append_started(self, config: Mapping) -> dict:
        """Record that ``config``'s measurement begins (flushed before it does): if the process
        dies during it, the next run finds this record without a result."""
        return self._mark("started", config)

    def append_interrupted(self, config: Mapping) -> dict:
        """Record that ``config``'s measurement was interrupted (Ctrl-C), not crashed: a
        resumed run measures it again."""
        return self._mark("interrupted", config)

    def _mark(self, kind: str, config: Mapping) -> dict:
        rec = _jsonable({kind: {name: int(config[name]) for name in self.iterators}})
        self._write(rec)
        self._remember(rec)
        return rec

    def settle_started(self) -> list[dict]:
        """Log every configuration that a previous run started and never finished (a
        ``started`` record without a result: it ended that run) as ``crashed``, once; returns
        the records written.  They count as done, so they are not measured again."""
        written = []
        for config in list(self.unfinished.values()):
            meas = Measurement(CRASHED, error="the previous run ended while measuring it "
                                              "(its process died or was killed); not measured again",
                               extra={"ended_run": True})
            written.append(self.append(config, meas))
        return written

    def append_reference(self, measurement: Measurement, name: str = "cublas") -> dict:
        """Record the reference (cuBLAS) measurement of this run."""
        rec = {"reference": name}
        rec.update(measurement.as_dict())
        rec = _jsonable(rec)
        self._write(rec)
        self.reference = rec
        return rec

    def append_run(self, summary: Mapping) -> dict:
        """Record what one run (one ``beast tune`` command) did: ``{"run": {...}}`` with its
        wall time, GPU busy share, rate, early cuts and how it ended; a resumed log holds one
        per run."""
        rec = _jsonable({"run": dict(summary)})
        self._write(rec)
        self.runs.append(rec["run"])
        return rec

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
