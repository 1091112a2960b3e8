"""Replay: play a search strategy against recorded times, without a GPU.

The data is a brute-forced tuning run in Kernel Tuner's cache format (``tune_params``,
``tune_params_keys``, ``cache``: one entry per configuration with its ``time`` in ms, or an
error string for a configuration that failed on the device), as in the FAIR Benchmark Hub
for Auto-Tuning.  A strategy "measures" a configuration by looking its time up; a failed one
counts as an evaluation that found nothing.  Its quality after b evaluations is the fraction
of the optimum it reached: best time overall / best time found (1.0 = the optimum, 0 before
any success).  ``beast replay`` runs this; :func:`replay` is the API.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..errors import BeastError

from ..tune.driver.local import check_count
from . import Pool, check_seed, make_strategy


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


@dataclass
class ReplayResult:
    """Best-so-far fraction of the optimum after each evaluation, one row per repeat."""

    strategy: str
    size: int
    optimum: float
    fractions: np.ndarray                    # (repeats, budget)
    seeds: list[int] = field(default_factory=list)

    @property
    def budget(self) -> int:
        return self.fractions.shape[1]

    def at(self, b: int) -> np.ndarray:
        """The fraction of the optimum of every repeat after ``b`` evaluations (1 to
        :attr:`budget`; BeastError otherwise)."""
        check_checkpoints(self, [b])
        return self.fractions[:, int(b) - 1]

    def evaluations_to(self, target: float) -> np.ndarray:
        """Per repeat, the evaluations needed to reach ``target`` x optimum (inf: not within
        the budget)."""
        hit = self.fractions >= target - 1e-12
        first = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, np.inf)
        return first.astype(np.float64)


def replay(pool: Pool, times, strategy: str, budget: int, repeats: int = 10,
           seed: int = 0, batch: int = 1, progress: Callable[[int, int], None] | None = None,
           **options) -> ReplayResult:
    """Play ``strategy`` ``repeats`` times (seeds ``seed``, ``seed+1``, ...) for ``budget``
    evaluations each, asking ``batch`` configurations at a time, against ``times``.

    ``times``: the time in ms of each pool configuration, in pool order (an array or a list,
    one entry per configuration).  An entry that is not a finite positive number -- NaN, inf,
    0 or negative -- marks a configuration that failed, as in a recorded file (see
    :func:`load_recorded`) and in Kernel Tuner's strategy interface: evaluating it finds
    nothing.  ``budget``, ``repeats`` and ``batch`` are integers of at least 1 (numpy integers
    too), ``seed`` a non-negative integer; a budget beyond the pool is cut to the pool's size.
    Anything else is a BeastError naming the argument.  ``progress(done, total)``, when given,
    is called after each batch with the evaluations done of ``repeats`` x ``budget``."""
    budget, repeats, batch = (check_count(value, name) for name, value in
                              (("budget", budget), ("repeats", repeats), ("batch", batch)))
    seed = check_seed(seed)
    times = _failed_as_nan(times, len(pool))
    budget = min(budget, len(pool))
    finite = times[np.isfinite(times)]
    if not len(finite):
        raise BeastError("no configuration has a time (every one failed: none is a finite "
                         "positive number)")
    optimum = float(finite.min())
    fractions = np.zeros((repeats, budget))
    seeds = [seed + r for r in range(repeats)]
    total = repeats * budget
    if progress is not None:
        progress(0, total)
    for r, s in enumerate(seeds):
        strat = make_strategy(strategy, pool=pool, seed=s, **options)
        best = math.inf
        done = 0
        while done < budget:
            configs = strat.ask(min(batch, budget - done))
            if not configs:
                break
            for cfg in configs:
                t = float(times[pool.find(cfg)])
                ok = math.isfinite(t)
                strat.tell(cfg, t if ok else None)
                if ok and t < best:
                    best = t
                fractions[r, done] = optimum / best if math.isfinite(best) else 0.0
                done += 1
            if progress is not None:
                progress(r * budget + done, total)
        if done < budget:
            fractions[r, done:] = fractions[r, done - 1] if done else 0.0
    return ReplayResult(strategy, len(pool), optimum, fractions, seeds)


def _failed_as_nan(times, size: int) -> np.ndarray:
    """``times`` as a new float array of ``size`` entries, NaN where a time is not a finite
    positive number (a failed configuration); BeastError when it is not one number per
    configuration."""
    try:
        out = np.array(times, dtype=np.float64)
    except (TypeError, ValueError):
        out = None
    if out is None or out.ndim != 1:
        what = f"an array of shape {times.shape}" if isinstance(times, np.ndarray) else f"{times!r:.60}"
        raise BeastError(f"times must be a sequence of numbers, one per configuration of the pool "
                         f"({size}), not {what}")
    if len(out) != size:
        raise BeastError(f"times must have one entry per configuration of the pool ({size}), "
                         f"not {len(out)}")
    out[~(out > 0)] = np.nan           # 0, negative (and NaN) times: failed
    return out


def default_checkpoints(size: int, budget: int) -> list[int]:
    """Budgets to report: 1, 2, 5, 10, 20 and 50 % of the space (those within ``budget``)
    and ``budget`` itself."""
    points = {max(1, round(size * p / 100)) for p in (1, 2, 5, 10, 20, 50)}
    return sorted(b for b in points | {budget} if b <= budget)


def check_checkpoints(result: ReplayResult, checkpoints: Sequence[int]) -> list[int]:
    """``checkpoints`` (budgets to report, ``beast replay --at``) as a list, after checking that
    each is a whole number from 1 to the replay's budget; a BeastError names the others."""
    points = list(checkpoints)
    bad = [b for b in points if isinstance(b, bool) or not isinstance(b, (int, np.integer))
           or not 1 <= b <= result.budget]
    if bad:
        capped = (f" (the whole space: {result.size} configurations)"
                  if result.budget == result.size else "")
        raise BeastError(f"budgets to report (--at) must be from 1 to the replay's budget, "
                         f"{result.budget}{capped}; not {', '.join(map(str, bad))}")
    return points


def format_replay(result: ReplayResult, checkpoints: Sequence[int] | None = None,
                  targets: Sequence[float] = (0.9, 0.95, 0.99, 1.0)) -> str:
    """A table per budget (fraction of the optimum: mean, std, min, max over repeats) and the
    evaluations each target took (median over repeats; '>B' when not reached)."""
    cps = (check_checkpoints(result, checkpoints) if checkpoints
           else default_checkpoints(result.size, result.budget))
    reps = result.fractions.shape[0]
    lines = [f"strategy {result.strategy}: {reps} repeat(s), budget {result.budget} of {result.size} "
             f"configurations, optimum {result.optimum:.6g} ms",
             f"{'budget':>8} {'% space':>8} {'mean':>7} {'std':>7} {'min':>7} {'max':>7}"]
    for b in cps:
        f = result.at(b)
        lines.append(f"{b:>8} {100 * b / result.size:>8.2f} {f.mean():>7.4f} {f.std():>7.4f} "
                     f"{f.min():>7.4f} {f.max():>7.4f}")
    for t in targets:
        ev = result.evaluations_to(t)
        reached = np.isfinite(ev)
        med = np.median(ev)
        med_text = f"{med:.0f}" if np.isfinite(med) else f">{result.budget}"
        lines.append(f"evaluations to {100 * t:g}% of optimum: median {med_text}, "
                     f"reached in {int(reached.sum())}/{reps} repeat(s)")
    return "\n".join(lines)
