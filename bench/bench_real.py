"""Real-world spaces (spaces/real/*.py): a first run of beast against Kernel Tuner's Searchspace.

Every number comes from a fresh Python process, seen two ways, both tools side by side:

- **whole** (view a): a complete ``python -c`` process, interpreter start and every import
  included, timed by this script (wall clock around the child; CPU time: the child's user +
  system time from ``getrusage``). beast: ``import beast; space = beast.load(file);
  space.count(); space.enumerate()`` (default backend, ``auto``). Kernel Tuner 1.5:
  ``import kernel_tuner; from kernel_tuner.searchspace import Searchspace;
  Searchspace(tune_params, restrictions, max_threads, ...)`` on the file's ``KERNEL_TUNER`` form
  (its default solver; the build makes the full list of configurations).
- **work** (view b): the same work, timed inside the child after every module it needs is
  imported: the child first imports the modules that the same work imported in an earlier
  process (found by a discovery run per space, tool and cache state: for beast the front end,
  code generators, runtimes, lupa, NumPy, ...; for Kernel Tuner what ``Searchspace`` imports),
  then runs ``gc.collect()`` (so that neither tool pays the collector for its imports), then
  times the work with ``perf_counter`` and ``process_time``.

Both tools' children run with ``OPENBLAS_NUM_THREADS=1`` (see :func:`_env`).

beast runs **cold** (a new empty ``BEAST_CACHE_DIR``) and **warm** (a cache that an earlier run
filled, including the C enumerator that ``auto``'s background build left); **hot** is
``count()`` and ``enumerate()`` again in the warm work process, the best of 9 and 5 calls each
timed alone (what a tuner repeats). After every beast run the script waits for the background C build, so that it does not compete with the next
measurement. Every run checks that both tools find the same survivors. Each number is the best of
``--rounds`` runs (the JSON has the medians too).

    python bench/bench_real.py --rounds 5 --json bench/results/real.json --markdown bench/results/real.md
    python -m pytest bench/bench_real.py --benchmark-only     # whole processes, pytest-benchmark
"""
from __future__ import annotations

import argparse
import compileall
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cold import wait_for_builds  # noqa: E402 - the same wait as the cold-start bench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = sorted(p for p in glob.glob(os.path.join(ROOT, "spaces", "real", "*.py"))
              if not os.path.basename(p).startswith("_"))

# -- the children ------------------------------------------------------------------------------
# Whole runs: nothing but the user's program (the script prints what it found to be checked).

_BEAST_WHOLE = """
import sys
import beast
space = beast.load(sys.argv[1])
n = space.count()
rows = space.enumerate()
print(n, len(rows), getattr(space.enumerator(), "backend", "?"))
"""

_KT_WHOLE = """
import sys
import kernel_tuner
from kernel_tuner.searchspace import Searchspace
kt = eval(sys.argv[1])
kw = {} if kt.get("block_size_names") is None else {"block_size_names": kt["block_size_names"]}
space = Searchspace(kt["tune_params"], kt.get("restrictions") or [], kt.get("max_threads", 1024), **kw)
print(len(space.list), len(space.list), "kt")
"""

# Work only: import what the work imports (argv[2], comma-separated), collect, then time.

_PRELUDE = """
import gc, importlib, json, sys, time
for _m in filter(None, sys.argv[2].split(",")):
    try:
        importlib.import_module(_m)
    except Exception:
        pass
gc.collect()
T, C = time.perf_counter, time.process_time
"""

_BEAST_WORK = _PRELUDE + """
import beast
t0, c0 = T(), C()
space = beast.load(sys.argv[1])
n = space.count()
rows = space.enumerate()
t1, c1 = T(), C()
def best(f, times):     # what a tuner repeats: the best of a few calls, each timed alone
    out = []
    for _ in range(times):
        t = T()
        f()
        out.append(T() - t)
    return min(out)
hot_count = best(space.count, 9)
hot_enumerate = best(space.enumerate, 5)
print(json.dumps(dict(wall=t1 - t0, cpu=c1 - c0, hot_count=hot_count, hot_enumerate=hot_enumerate, n=n,
                      rows=len(rows), used=getattr(space.enumerator(), "backend", "?"))))
"""

_KT_WORK = _PRELUDE + """
from kernel_tuner.searchspace import Searchspace
kt = eval(sys.argv[1])
kw = {} if kt.get("block_size_names") is None else {"block_size_names": kt["block_size_names"]}
t0, c0 = T(), C()
space = Searchspace(kt["tune_params"], kt.get("restrictions") or [], kt.get("max_threads", 1024), **kw)
n = len(space.list)
t1, c1 = T(), C()
print(json.dumps(dict(wall=t1 - t0, cpu=c1 - c0, n=n, rows=n, used="kt")))
"""

# Discovery: the modules the work imports, in the order it imports them.

_BEAST_DISCOVER = """
import sys
import beast
before = set(sys.modules)
space = beast.load(sys.argv[1])
space.count()
space.enumerate()
print(",".join(m for m in sys.modules if m not in before and not m.startswith("_beast_")))
"""

_KT_DISCOVER = """
import sys
import kernel_tuner
from kernel_tuner.searchspace import Searchspace
kt = eval(sys.argv[1])
before = set(sys.modules)
kw = {} if kt.get("block_size_names") is None else {"block_size_names": kt["block_size_names"]}
Searchspace(kt["tune_params"], kt.get("restrictions") or [], kt.get("max_threads", 1024), **kw)
print(",".join(["kernel_tuner", "kernel_tuner.searchspace"]
               + [m for m in sys.modules if m not in before]))
"""


def _env(cache_dir=None):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # as for an installed package: bytecode is used
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("BEAST_AUTO_BACKEND", None)
    # NumPy's import otherwise starts a BLAS thread that spins for tens of milliseconds: the CPU
    # clock counts it (8-12 ms of CPU during a 20 ms sleep just after ``import numpy``, 2 cores)
    # and it competes for the cores. Neither tool uses BLAS here; both children get the setting.
    env["OPENBLAS_NUM_THREADS"] = "1"
    if cache_dir is not None:
        env["BEAST_CACHE_DIR"] = cache_dir
    return env


def _run(code, args, env):
    """(stdout's last line, wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"child failed: {proc.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.stdout.strip().splitlines()[-1], wall, cpu


def kernel_tuner_form(path) -> str:
    """The file's KERNEL_TUNER dict as a Python literal (the child evaluates it: the Kernel Tuner
    child imports nothing of beast's)."""
    import ast
    import runpy
    text = repr(runpy.run_path(path)["KERNEL_TUNER"])
    ast.literal_eval(text)       # only literals: the child's eval() sees exactly this dict
    return text


class Bench:
    """One space: discovery once, then whole and work runs of both tools."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)[:-3]
        self.kt = kernel_tuner_form(path)
        self.modules = {}

    def _cache(self, warm):
        cache = tempfile.mkdtemp(prefix="beast-bench-real-")
        if warm:
            _run(_BEAST_WHOLE, [self.path], _env(cache))
            wait_for_builds(cache, timeout=60.0)
        return cache

    def discover(self):
        for state in ("cold", "warm"):
            cache = self._cache(state == "warm")
            try:
                line, _, _ = _run(_BEAST_DISCOVER, [self.path], _env(cache))
                wait_for_builds(cache, timeout=60.0)
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            self.modules[state] = line
        self.modules["kt"] = _run(_KT_DISCOVER, [self.kt], _env())[0]

    def beast_whole(self, warm=False) -> dict:
        cache = self._cache(warm)
        try:
            return self.beast_whole_in(cache)
        finally:
            wait_for_builds(cache, timeout=60.0)
            shutil.rmtree(cache, ignore_errors=True)

    def beast_whole_in(self, cache) -> dict:
        """One whole beast process on the cache directory ``cache`` (its background build, if it
        starts one, is left running)."""
        line, wall, cpu = _run(_BEAST_WHOLE, [self.path], _env(cache))
        n, rows, used = line.split()
        return dict(wall=wall, cpu=cpu, n=int(n), rows=int(rows), used=used)

    def beast_work(self, warm=False) -> dict:
        cache = self._cache(warm)
        try:
            line, _, _ = _run(_BEAST_WORK, [self.path, self.modules["warm" if warm else "cold"]],
                              _env(cache))
            wait_for_builds(cache, timeout=60.0)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        return json.loads(line)

    def kt_whole(self) -> dict:
        line, wall, cpu = _run(_KT_WHOLE, [self.kt], _env())
        n, rows, used = line.split()
        return dict(wall=wall, cpu=cpu, n=int(n), rows=int(rows), used=used)

    def kt_work(self) -> dict:
        return json.loads(_run(_KT_WORK, [self.kt, self.modules["kt"]], _env())[0])


KINDS = ("kt_whole", "kt_work", "cold_whole", "cold_work", "warm_whole", "warm_work")


def measure(paths, rounds) -> dict:
    compileall.compile_dir(os.path.join(ROOT, "beast"), quiet=1)
    out = {"python": sys.version.split()[0], "rounds": rounds, "loadavg_start": os.getloadavg(),
           "start": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "spaces": {}}
    for path in paths:
        bench = Bench(path)
        bench.discover()
        calls = {"kt_whole": bench.kt_whole, "kt_work": bench.kt_work,
                 "cold_whole": bench.beast_whole, "cold_work": bench.beast_work,
                 "warm_whole": lambda: bench.beast_whole(True), "warm_work": lambda: bench.beast_work(True)}
        runs = {k: [] for k in KINDS}
        for _ in range(rounds):           # interleaved, so that a burst of load hits every column
            for kind in KINDS:
                runs[kind].append(calls[kind]())
        counts = {(r["n"], r["rows"]) for rs in runs.values() for r in rs}
        if len(counts) != 1 or len(set(next(iter(counts)))) != 1:
            raise AssertionError(f"{bench.name}: survivors differ between runs/tools: {counts}")
        res = {"survivors": runs["kt_whole"][0]["n"], "modules": bench.modules}
        for kind, rs in runs.items():
            keys = [k for k, v in rs[0].items() if isinstance(v, float)]
            res[kind] = {"best": {k: min(r[k] for r in rs) for k in keys},
                         "median": {k: statistics.median(r[k] for r in rs) for k in keys},
                         "used": sorted({r["used"] for r in rs})}
        out["spaces"][bench.name] = res
        print(row(bench.name, res), flush=True)
    out["loadavg_end"] = os.getloadavg()
    out["end"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return out


def _ms(s):
    return f"{s * 1e3:.1f} ms" if s < 0.1 else f"{s * 1e3:.0f} ms" if s < 10 else f"{s:.1f} s"


def _ms_fine(s):
    return f"{s * 1e3:.3f} ms" if s < 0.001 else f"{s * 1e3:.2f} ms" if s < 0.01 else _ms(s)


def _ratio(kt, beast):
    x = kt / beast
    return f"**{x:.2g}×**" if x >= 1 else f"{x:.2g}×"


def row(name, res):
    b = {k: res[k]["best"] for k in KINDS}
    return (f"{name}: {res['survivors']} survivors | whole: KT {_ms(b['kt_whole']['wall'])} "
            f"beast cold {_ms(b['cold_whole']['wall'])} warm {_ms(b['warm_whole']['wall'])} | "
            f"work: KT {_ms_fine(b['kt_work']['wall'])} beast cold {_ms_fine(b['cold_work']['wall'])} "
            f"warm {_ms_fine(b['warm_work']['wall'])} hot count {_ms_fine(b['warm_work']['hot_count'])} "
            f"enumerate {_ms_fine(b['warm_work']['hot_enumerate'])}")


def markdown(results) -> str:
    """The two tables of bench/README.md, section 6."""
    lines = ["**(a) whole first run**: a fresh `python -c` process, interpreter start and imports "
             "included (wall / CPU).", "",
             "| space | survivors | Kernel Tuner | beast cold | KT / beast cold | beast warm | "
             "KT / beast warm | beast ran (cold, warm) |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, res in results["spaces"].items():
        b = {k: res[k]["best"] for k in KINDS}
        lines.append(
            f"| {name} | {res['survivors']:,} | {_ms(b['kt_whole']['wall'])} / {_ms(b['kt_whole']['cpu'])} "
            f"| {_ms(b['cold_whole']['wall'])} / {_ms(b['cold_whole']['cpu'])} "
            f"| {_ratio(b['kt_whole']['wall'], b['cold_whole']['wall'])} / "
            f"{_ratio(b['kt_whole']['cpu'], b['cold_whole']['cpu'])} "
            f"| {_ms(b['warm_whole']['wall'])} / {_ms(b['warm_whole']['cpu'])} "
            f"| {_ratio(b['kt_whole']['wall'], b['warm_whole']['wall'])} / "
            f"{_ratio(b['kt_whole']['cpu'], b['warm_whole']['cpu'])} "
            f"| {', '.join(res['cold_whole']['used'])}; {', '.join(res['warm_whole']['used'])} |")
    lines += ["", "**(b) work only**: the same work after each process's imports (wall / CPU); "
              "*hot*: `count()`, then `enumerate()`, again in the warm process (wall; best of 9 and 5 calls).", "",
              "| space | Kernel Tuner build | beast cold | KT / beast cold | beast warm | "
              "KT / beast warm | hot count | KT / hot count | hot enumerate | KT / hot enumerate |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, res in results["spaces"].items():
        b = {k: res[k]["best"] for k in KINDS}
        kt, cold, warm = b["kt_work"], b["cold_work"], b["warm_work"]
        lines.append(
            f"| {name} | {_ms_fine(kt['wall'])} / {_ms_fine(kt['cpu'])} "
            f"| {_ms_fine(cold['wall'])} / {_ms_fine(cold['cpu'])} "
            f"| {_ratio(kt['wall'], cold['wall'])} / {_ratio(kt['cpu'], cold['cpu'])} "
            f"| {_ms_fine(warm['wall'])} / {_ms_fine(warm['cpu'])} "
            f"| {_ratio(kt['wall'], warm['wall'])} / {_ratio(kt['cpu'], warm['cpu'])} "
            f"| {_ms_fine(warm['hot_count'])} | {_ratio(kt['wall'], warm['hot_count'])} "
            f"| {_ms_fine(warm['hot_enumerate'])} | {_ratio(kt['wall'], warm['hot_enumerate'])} |")
    return "\n".join(lines) + "\n"


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the measurements here")
    parser.add_argument("--markdown", help="write the tables here")
    parser.add_argument("spaces", nargs="*", default=REAL)
    args = parser.parse_args(argv)
    results = measure([os.path.abspath(p) for p in args.spaces], args.rounds)
    table = markdown(results)
    print(table)
    if args.json:
        _write(args.json, json.dumps(results, indent=1))
    if args.markdown:
        _write(args.markdown, table)


# --- pytest-benchmark: one whole fresh process per round -------------------------------------------

try:
    import pytest
except ImportError:   # the script mode needs no pytest
    pytest = None

if pytest is not None:
    @pytest.mark.parametrize("path", REAL, ids=[os.path.basename(p)[:-3] for p in REAL])
    @pytest.mark.parametrize("tool", ["kernel_tuner", "beast_cold", "beast_warm"])
    def test_real_space(benchmark, path, tool):
        """Each round is one whole child process (interpreter start and imports included); a
        round's cache (empty, or filled by an untimed run) is made in its setup, and the
        background C build of the round before is waited for there, outside the timing."""
        bench = Bench(path)
        benchmark.group = f"real space {bench.name}"
        caches = []

        def setup():
            for cache in caches:
                wait_for_builds(cache, timeout=60.0)
                shutil.rmtree(cache, ignore_errors=True)
            caches[:] = [bench._cache(tool == "beast_warm")]
            return (caches[0],), {}

        try:
            if tool == "kernel_tuner":
                pytest.importorskip("kernel_tuner")
                result = benchmark.pedantic(bench.kt_whole, rounds=3, iterations=1)
            else:
                result = benchmark.pedantic(bench.beast_whole_in, setup=setup, rounds=3, iterations=1)
        finally:
            for cache in caches:
                wait_for_builds(cache, timeout=60.0)
                shutil.rmtree(cache, ignore_errors=True)
        assert result["n"] == result["rows"] > 0
        benchmark.extra_info.update(space=bench.name, tool=tool, count=result["n"], used=result["used"])


if __name__ == "__main__":
    main()
