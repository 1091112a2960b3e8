"""Recorded measurements of a space (a Kernel Tuner cache file or a beast tune log, gzip or
not): the configurations with their times, matched to a space's configurations as a pool."""
from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import BeastError
from .base import Pool


@dataclass
class RecordedRun:
    """A brute-forced tuning run: parameter names, one row of values per configuration
    (``X``), and its time in ms (NaN: the configuration failed on the device, or its recorded
    time is not a finite positive number), and the parameters that keep one value throughout
    (:attr:`constants`)."""

    names: tuple[str, ...]
    X: np.ndarray
    times: np.ndarray
    path: str | None = None
    device: str | None = None
    kernel: str | None = None
    #: every parameter with a single value in the data (such as CLBlast's ``PRECISION``): its
    #: value.  Integer ones are also columns of ``X``; others (a string) are only here.
    constants: dict = field(default_factory=dict)

    @property
    def optimum(self) -> float:
        """The best recorded time (ms)."""
        ok = self.times[np.isfinite(self.times)]
        if not len(ok):
            raise BeastError("no configuration of the data has a time", filename=self.path)
        return float(ok.min())

    def __len__(self) -> int:
        return len(self.times)


def _time(entry) -> float:
    """The recorded time of a cache entry in ms, or NaN for a failed configuration: an error
    string (RuntimeFailedConfig, ...) or a time that is not a finite positive number (0, a
    negative time, Kernel Tuner's huge failure value), as Kernel Tuner's strategy interface
    (:func:`beast.kernel_tuner.strategy._cost`) and :func:`replay` count them."""
    t = entry.get("time") if isinstance(entry, dict) else None
    if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t < 1e19:
        return float(t)
    return math.nan


def load_recorded(path: str | os.PathLike) -> RecordedRun:
    """Read a Kernel Tuner cache file (``.json``, or gzip-compressed ``.json.gz``: the content
    decides, not the name).  A file that cannot be read, is not gzip or JSON as it claims, or
    is not in the cache format raises a BeastError that names the file and what is wrong."""
    path = os.fspath(path)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise BeastError(f"not a Kernel Tuner cache file (the JSON is {_json_type(data)}, not "
                         f"an object with 'cache')", filename=path)
    if not isinstance(data.get("cache"), dict):
        what = "no 'cache' object" if "cache" not in data else \
            f"'cache' is {_json_type(data['cache'])}, not an object"
        raise BeastError(f"not a Kernel Tuner cache file ({what})", filename=path)
    source = "tune_params_keys" if data.get("tune_params_keys") else "tune_params"
    names = data.get(source) or []
    if isinstance(names, dict):
        names = list(names)              # tune_params: name -> values
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BeastError(f"not a Kernel Tuner cache file ({source!r} does not name the "
                         f"parameters: {names!r:.60})", filename=path)
    if not names:
        raise BeastError("the data names no tuning parameters (tune_params_keys)", filename=path)
    if not data["cache"]:
        raise BeastError("the data has no configurations ('cache' is empty)", filename=path)
    raw, times = [], []
    for key, entry in data["cache"].items():
        if not isinstance(entry, dict) or "time" not in entry:
            raise BeastError(f"configuration {key!r} of the data has no 'time' (each entry of "
                             f"'cache' is an object with the time in ms or an error)", filename=path)
        if all(n in entry for n in names):
            raw.append([entry[n] for n in names])
        else:
            raw.append(key.split(","))
            if len(raw[-1]) != len(names):
                raise BeastError(f"configuration {key!r} of the data does not have "
                                 f"{len(names)} values", filename=path)
        times.append(_time(entry))
    columns, keep, constants = [], [], {}
    for j, name in enumerate(names):
        values = [row[j] for row in raw]
        ints = _integers(values)
        distinct = set(ints) if ints is not None else set(map(repr, values))
        if len(distinct) == 1:
            constants[name] = ints[0] if ints is not None else values[0]
        if ints is None:
            if len(distinct) > 1:
                raise BeastError(f"parameter {name!r} of the data is not all integers "
                                 f"(e.g. {values[0]!r})", filename=path)
            continue                      # a constant that is no integer (a string): not a column
        keep.append(name)
        columns.append(ints)
    X = np.array(columns, dtype=np.int64).T.reshape(-1, len(keep))
    return RecordedRun(tuple(keep), X, np.array(times, dtype=np.float64), path,
                       data.get("device_name"), data.get("kernel_name"), constants)


def _json_type(value) -> str:
    """What ``value`` is in JSON's words: an array, a string, ..."""
    return {list: "an array", dict: "an object", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "a value")


def _read_json(path: str):
    """The JSON in ``path``, decompressed first when it is gzip data; BeastError otherwise."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        if raw[:2] == b"\x1f\x8b":                  # gzip's magic number
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise BeastError("no such data file", filename=path) from None
    except EOFError:
        raise BeastError("the data file is truncated (its gzip data ends early)",
                         filename=path) from None
    except (zlib.error, gzip.BadGzipFile) as err:
        raise BeastError(f"the data file is corrupt (gzip: {err})", filename=path) from None
    except OSError as err:
        raise BeastError(f"cannot read the data file: {err.strerror or err}", filename=path) from None
    except UnicodeDecodeError as err:
        raise BeastError(f"the data file is not JSON text (byte {err.start} is not UTF-8)",
                         filename=path) from None
    if not text.strip():
        raise BeastError("the data file is empty", filename=path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise BeastError(f"the data file is not valid JSON: {err.msg} at line {err.lineno} "
                         f"column {err.colno}", filename=path) from None
    except RecursionError:
        raise BeastError("the data file is not valid JSON: nested too deeply", filename=path) from None


def _integers(values: list) -> list[int] | None:
    """``values`` as ints (integers, or strings of integers as in a cache key), or None when
    one of them is something else."""
    out = []
    for v in values:
        if isinstance(v, bool):
            return None
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, str):
            try:
                out.append(int(v))
            except ValueError:
                return None
        else:
            return None
    return out


def match_space(space, run: RecordedRun) -> tuple[Pool, np.ndarray]:
    """The space's survivors as a pool, and the recorded time of each (NaN: failed).

    The space's iterators must be parameters of the data, and its survivors exactly the data's
    configurations; a parameter of the data that the space lacks must be one of its
    :attr:`~RecordedRun.constants` (one value throughout, such as ``PRECISION``: the space
    stands for that value).  Otherwise a BeastError says what differs."""
    names = tuple(space.iterators)
    only_space = [n for n in names if n not in run.names]
    varying = [n for n in run.names if n not in names and n not in run.constants]
    if only_space or varying:
        parts = ([f"only in the space: {sorted(only_space)}"] if only_space else []) + \
            ([f"only in the data, where they vary: {sorted(varying)}"] if varying else [])
        raise BeastError("the space's iterators are not the data's parameters: " + "; ".join(parts),
                         filename=run.path,
                         hint="a parameter of the data that the space lacks must keep one value "
                              "in the data (a constant such as PRECISION)")
    pool = Pool.from_rows(space.enumerate(), complete=True)
    cols = [run.names.index(n) for n in names]
    recorded = {tuple(row): t for row, t in zip(run.X[:, cols].tolist(), run.times.tolist())}
    times = np.full(len(pool), np.nan)
    missing = []
    for i, row in enumerate(pool.X.tolist()):
        t = recorded.pop(tuple(row), None)
        if t is None:
            missing.append(row)
        else:
            times[i] = t
    if missing or recorded:
        example = (f"e.g. {dict(zip(names, missing[0]))} is a survivor the data lacks" if missing
                   else f"e.g. {dict(zip(names, next(iter(recorded))))} is in the data but not a survivor")
        raise BeastError(f"the space's survivors are not the data's configurations: {len(missing)} "
                         f"survivor(s) not in the data, {len(recorded)} configuration(s) of the data "
                         f"not survivors ({example})", filename=run.path)
    return pool, times
