"""Cold start: beast on real tuning spaces in fresh processes, against Kernel Tuner's Searchspace.

The spaces are ``spaces/real/dedispersion.py`` and ``spaces/real/hotspot.py`` (the two spaces of
the Kernel Tuner search-space paper, Willemsen et al., ICPP 2025); Kernel Tuner gets each file's
``KERNEL_TUNER`` form (``tune_params`` and restriction strings). ``bench/bench_real.py`` times
every file of ``spaces/real/`` with the default backend; this script compares the backends.

Every measurement is a fresh Python process (``subprocess``) that times its own steps with
``time.perf_counter``:

- beast: ``import numpy`` (both tools need it; a tuning script has it loaded), ``import beast``,
  ``beast.load``, ``space.count(backend)``, ``space.enumerate(backend)`` (all rows as a NumPy
  array), then ``count`` and ``enumerate`` again in the same process (*hot*);
- Kernel Tuner 1.5: ``import numpy``, ``from kernel_tuner.searchspace import Searchspace``,
  ``Searchspace(tune_params, restrictions, 1024)`` (its default solver; ``.list`` holds every
  configuration), when ``kernel_tuner`` is installed (``pip install -e '.[bench]'``).

*cold*: a new empty ``BEAST_CACHE_DIR`` for each run. *warm*: a cache that a previous run
filled (for ``auto``: including the C enumerator its background build left). After each cold
``auto`` run the harness waits for the background build, so that it does not compete with the
next measurement, and checks that it landed in the cache. The bytecode of beast is compiled
first and the children may use it (``PYTHONDONTWRITEBYTECODE`` is removed from their
environment), as for an installed package. Reported: the best of ``--repeat`` runs (and the
median in the JSON), wall clock, and the process CPU time of the same steps (all threads; less
disturbed than the wall clock when other work shares the machine).

    python3 bench/bench_cold.py --repeat 5 --json bench/results/cold.json --markdown bench/results/cold.md
    python3 -m pytest bench/bench_cold.py --benchmark-only     # whole fresh processes, pytest-benchmark
"""
from __future__ import annotations

import argparse
import compileall
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH_DIR)
sys.path[:0] = [p for p in (BENCH_DIR, ROOT) if p not in sys.path]

REAL = os.path.join(ROOT, "spaces", "real")

#: name -> (beast space file, device, expected survivors)
SPACES = {
    "dedispersion": (os.path.join(REAL, "dedispersion.py"), None, 11130),
    "hotspot": (os.path.join(REAL, "hotspot.py"), None, 349853),
}


def kernel_tuner_form(name) -> str:
    """The space file's KERNEL_TUNER dict as a Python literal, for the Kernel Tuner child (which
    then imports nothing of beast's)."""
    import ast
    import runpy
    text = repr(runpy.run_path(SPACES[name][0])["KERNEL_TUNER"])
    ast.literal_eval(text)
    return text

BACKENDS = ("auto", "lua", "python", "c")

_BEAST_CHILD = r"""
import json, sys, time
t, cpu = time.perf_counter, time.process_time
path, device, backend = sys.argv[1], sys.argv[2] or None, sys.argv[3]
a = t(); import numpy; b = t()
import beast; c = t()
c0 = cpu(); space = beast.load(path, device=device); d = t(); d0 = cpu()
n = space.count(backend=backend); e = t()
rows = space.enumerate(backend=backend); f = t(); f0 = cpu()
g = t(); space.count(backend=backend); h = t(); space.enumerate(backend=backend); i = t()
used = getattr(space.enumerator(backend), "backend", backend)
print(json.dumps(dict(numpy=b - a, import_=c - b, load=d - c, count=e - d, enumerate=f - e,
                      count_hot=h - g, enumerate_hot=i - h, cpu_load=d0 - c0, cpu_all=f0 - c0,
                      n=n, rows=len(rows), used=used)))
"""

_KT_CHILD = r"""
import json, sys, time
t, cpu = time.perf_counter, time.process_time
a = t(); import numpy; b = t()
from kernel_tuner.searchspace import Searchspace; c = t()
kt = eval(sys.argv[1])
tune_params, restrictions = kt["tune_params"], kt["restrictions"]
d = t(); d0 = cpu(); space = Searchspace(tune_params, restrictions, kt["max_threads"]); e = t(); e0 = cpu()
print(json.dumps(dict(numpy=b - a, import_=c - b, build=e - d, cpu_build=e0 - d0, n=len(space.list))))
"""


def _env(cache_dir=None):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    # NumPy's import otherwise starts a BLAS thread that spins for tens of milliseconds: the CPU
    # clock counts it (8-12 ms of CPU during a 20 ms sleep just after ``import numpy``, 2 cores)
    # and it competes for the cores. Neither tool uses BLAS here; both children get the setting.
    env["OPENBLAS_NUM_THREADS"] = "1"
    if cache_dir is not None:
        env["BEAST_CACHE_DIR"] = cache_dir
    return env


def _child(code, args, env) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          timeout=600)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"child failed: {proc.stderr.strip()[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def wait_for_builds(cache_dir, timeout=30.0) -> bool:
    """Wait until no background build is left in ``cache_dir`` (no private ``.tmp-*`` directory)."""
    deadline = time.monotonic() + timeout
    while glob.glob(os.path.join(cache_dir, "c", ".tmp-*")):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def beast_run(name, backend, cache_dir) -> dict:
    path, device, expected = SPACES[name]
    out = _child(_BEAST_CHILD, [path, device or "", backend], _env(cache_dir))
    if out["n"] != expected or out["rows"] != expected:
        raise AssertionError(f"{name} {backend}: {out['n']} / {out['rows']} survivors, expected {expected}")
    return out


def beast_cold(name, backend) -> dict:
    cache_dir = tempfile.mkdtemp(prefix="beast-cold-")
    try:
        out = beast_run(name, backend, cache_dir)
        if backend == "auto":
            wait_for_builds(cache_dir)
            out["background_so"] = len(glob.glob(os.path.join(cache_dir, "c", "*.so")))
        return out
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def kt_run(name) -> dict:
    out = _child(_KT_CHILD, [kernel_tuner_form(name)], _env())
    expected = SPACES[name][2]
    if out["n"] != expected:
        raise AssertionError(f"Kernel Tuner {name}: {out['n']} survivors, expected {expected}")
    return out


def kt_available() -> bool:
    return subprocess.run([sys.executable, "-c", "import kernel_tuner"], capture_output=True).returncode == 0


def _summary(runs) -> dict:
    keys = [k for k, v in runs[0].items() if isinstance(v, float)]
    best = {k: min(r[k] for r in runs) for k in keys}
    median = {k: statistics.median(r[k] for r in runs) for k in keys}
    extra = {k: v for k, v in runs[-1].items() if not isinstance(v, float)}
    return {"best": best, "median": median, **extra, "runs": len(runs)}


def measure(names, backends, repeat) -> dict:
    compileall.compile_dir(os.path.join(ROOT, "beast"), quiet=1)
    results = {"python": sys.version.split()[0], "repeat": repeat, "beast": {}, "kernel_tuner": {}}
    for name in names:
        for backend in backends:
            cold = [beast_cold(name, backend) for _ in range(repeat)]
            cache_dir = tempfile.mkdtemp(prefix="beast-warm-")
            try:
                beast_run(name, backend, cache_dir)          # fills the cache
                wait_for_builds(cache_dir)
                warm = [beast_run(name, backend, cache_dir) for _ in range(repeat)]
            finally:
                shutil.rmtree(cache_dir, ignore_errors=True)
            results["beast"][f"{name}/{backend}"] = {"cold": _summary(cold), "warm": _summary(warm)}
            print(f"{name:13s} {backend:7s} cold {_fmt(_total(cold, 'count'))} "
                  f"(+enumerate {_fmt(_total(cold, 'enumerate'))}, used {cold[-1]['used']}) "
                  f"warm {_fmt(_total(warm, 'enumerate'))} (used {warm[-1]['used']})", flush=True)
        if kt_available():
            runs = [kt_run(name) for _ in range(repeat)]
            results["kernel_tuner"][name] = _summary(runs)
            print(f"{name:13s} Kernel Tuner build {_fmt(min(r['build'] for r in runs))} "
                  f"(import {_fmt(min(r['import_'] for r in runs))})", flush=True)
    return results


def _total(runs, upto) -> float:
    """Best over runs of load + count (+ enumerate when ``upto`` is 'enumerate')."""
    parts = ("load", "count") + (("enumerate",) if upto == "enumerate" else ())
    return min(sum(r[p] for p in parts) for r in runs)


def _fmt(seconds) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def markdown(results) -> str:
    """The tables of bench/README.md from the JSON."""
    lines = ["| space | backend | import beast | load | cold load+count | cold +enumerate | cold CPU | "
             "warm load+count+enumerate | warm CPU | hot count | hot enumerate | ran |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for key, res in results["beast"].items():
        name, backend = key.split("/")
        c, w = res["cold"]["best"], res["warm"]["best"]
        lines.append(f"| {name} | {backend} | {_fmt(c['import_'])} | {_fmt(c['load'])} | "
                     f"{_fmt(c['load'] + c['count'])} | {_fmt(c['load'] + c['count'] + c['enumerate'])} | "
                     f"{_fmt(c['cpu_all'])} | {_fmt(w['load'] + w['count'] + w['enumerate'])} | "
                     f"{_fmt(w['cpu_all'])} | {_fmt(w['count_hot'])} | "
                     f"{_fmt(w['enumerate_hot'])} | cold {res['cold']['used']}, warm {res['warm']['used']} |")
    if results["kernel_tuner"]:
        lines += ["", "| space | Kernel Tuner import | Kernel Tuner Searchspace build | build CPU |",
                  "|---|---:|---:|---:|"]
        for name, res in results["kernel_tuner"].items():
            lines.append(f"| {name} | {_fmt(res['best']['import_'])} | {_fmt(res['best']['build'])} | "
                         f"{_fmt(res['best']['cpu_build'])} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spaces", nargs="*", default=list(SPACES), choices=list(SPACES))
    parser.add_argument("--backends", nargs="*", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="write the measurements here")
    parser.add_argument("--markdown", help="write the tables here")
    args = parser.parse_args(argv)
    results = measure(args.spaces, args.backends, args.repeat)
    table = markdown(results)
    print(table)
    for path, text in ((args.json, json.dumps(results, indent=1)), (args.markdown, table)):
        if path:
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)


# -- pytest-benchmark: one fresh process per round (interpreter start-up included)

try:
    import pytest
except ImportError:  # pragma: no cover - the script needs no pytest
    pytest = None

if pytest is not None:
    @pytest.mark.parametrize("backend", BACKENDS)
    @pytest.mark.parametrize("name", list(SPACES))
    def test_cold_process(benchmark, name, backend):
        """Each round times one whole child on a new empty cache; the background build of the
        round before is waited for in the next round's setup, outside the timing."""
        compileall.compile_dir(os.path.join(ROOT, "beast"), quiet=1)
        caches = []

        def setup():
            for cache in caches:
                wait_for_builds(cache)
                shutil.rmtree(cache, ignore_errors=True)
            caches[:] = [tempfile.mkdtemp(prefix="beast-cold-")]
            return (name, backend, caches[0]), {}

        try:
            out = benchmark.pedantic(beast_run, setup=setup, rounds=3, iterations=1)
        finally:
            for cache in caches:
                wait_for_builds(cache)
                shutil.rmtree(cache, ignore_errors=True)
        assert out["n"] == SPACES[name][2]

    @pytest.mark.parametrize("name", list(SPACES))
    def test_kernel_tuner_process(benchmark, name):
        pytest.importorskip("kernel_tuner")
        out = benchmark.pedantic(kt_run, args=(name,), rounds=3, iterations=1)
        assert out["n"] == SPACES[name][2]


if __name__ == "__main__":
    main()
