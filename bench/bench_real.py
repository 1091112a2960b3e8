"""Real-world spaces (spaces/real/*.py): Kernel Tuner's Searchspace build against beast.

Every measurement runs in a fresh Python process and times only the work, not the imports:

- ``kt``: ``kernel_tuner.searchspace.Searchspace(**KERNEL_TUNER)`` (Kernel Tuner 1.5, its
  default python-constraint solver), the file's Kernel Tuner form;
- ``beast cold``: ``beast.load(file).count()`` with an empty ``BEAST_CACHE_DIR`` (default backend);
- ``beast warm``: the same in a new process once the cache holds the compiled enumerator;
- ``beast count``: a second ``count()`` in the warm process (enumerator loaded).

Run as pytest-benchmark (``python -m pytest bench/bench_real.py --benchmark-only``; each round
is one child process, its own timing in extra_info) or as a script that prints the table of
bench/README.md: ``python bench/bench_real.py [--rounds 3] [--backend c] [--also python,lua]``
(each number the best of the rounds).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL = sorted(p for p in glob.glob(os.path.join(ROOT, "spaces", "real", "*.py"))
              if not os.path.basename(p).startswith("_"))

_KT_CHILD = """
import json, runpy, sys, time
kt = runpy.run_path(sys.argv[1])["KERNEL_TUNER"]
from kernel_tuner.searchspace import Searchspace
kw = {} if kt.get("block_size_names") is None else {"block_size_names": kt["block_size_names"]}
t = time.perf_counter()
ss = Searchspace(kt["tune_params"], kt.get("restrictions") or [], kt.get("max_threads", 1024), **kw)
print(json.dumps({"seconds": time.perf_counter() - t, "count": ss.size}))
"""

_BEAST_CHILD = """
import json, sys, time
import beast
backend = sys.argv[2] if sys.argv[2] != "default" else None
t = time.perf_counter()
space = beast.load(sys.argv[1])
n = space.count(backend=backend)
first = time.perf_counter() - t
t = time.perf_counter()
space.count(backend=backend)
print(json.dumps({"seconds": first, "again": time.perf_counter() - t, "count": n}))
"""


def _child(code, args, cache_dir=None):
    env = dict(os.environ)
    if cache_dir is not None:
        env["BEAST_CACHE_DIR"] = cache_dir
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def kernel_tuner_build(path):
    """Seconds and survivors of Kernel Tuner's Searchspace, in a fresh process."""
    return _child(_KT_CHILD, [path])


def beast_cold_warm(path, backend="default"):
    """(cold, warm) runs of beast.load + count, each in a fresh process: the first with an empty
    cache, the second with the cache the first filled."""
    with tempfile.TemporaryDirectory(prefix="beast-bench-real-") as cache:
        cold = _child(_BEAST_CHILD, [path, backend], cache)
        warm = _child(_BEAST_CHILD, [path, backend], cache)
    return cold, warm


# --- pytest-benchmark ----------------------------------------------------------------------------

try:
    import pytest
except ImportError:   # the script mode needs no pytest
    pytest = None

if pytest is not None:
    @pytest.mark.parametrize("path", REAL, ids=[os.path.basename(p)[:-3] for p in REAL])
    @pytest.mark.parametrize("tool", ["kernel_tuner", "beast_cold", "beast_warm"])
    def test_real_space(benchmark, path, tool, tmp_path):
        """Each round is one child process (interpreter start and imports included in the
        round's time; the child's own timing of the work is in extra_info)."""
        name = os.path.basename(path)[:-3]
        benchmark.group = f"real space {name}"
        counter = iter(range(1000))

        def cache(warm):
            directory = str(tmp_path / f"cache{next(counter)}")
            os.makedirs(directory)
            if warm:
                _child(_BEAST_CHILD, [path, "default"], directory)
            return (_BEAST_CHILD, [path, "default"], directory), {}

        if tool == "kernel_tuner":
            pytest.importorskip("kernel_tuner")
            result = benchmark.pedantic(kernel_tuner_build, args=(path,), rounds=3, iterations=1)
        else:
            result = benchmark.pedantic(_child, setup=lambda: cache(tool == "beast_warm"),
                                        rounds=3, iterations=1)
        benchmark.extra_info.update(space=name, tool=tool, seconds=result["seconds"],
                                    count=result["count"])


# --- the table -----------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", default="default", help="the backend of the cold/warm columns")
    parser.add_argument("--also", default="python,lua",
                        help="comma-separated backends to time cold as well (empty: none)")
    parser.add_argument("spaces", nargs="*", default=REAL)
    args = parser.parse_args(argv)
    also = [b for b in args.also.split(",") if b]
    print("| space | survivors | Kernel Tuner | beast cold | beast warm | count again | "
          + "".join(f"{b} cold | " for b in also) + "KT / cold | KT / warm |")
    print("|---|---:|---:|---:|---:|---:|" + "---:|" * len(also) + "---:|---:|")
    for path in args.spaces:
        kt = [kernel_tuner_build(path) for _ in range(args.rounds)]
        runs = [beast_cold_warm(path, args.backend) for _ in range(args.rounds)]
        kt_s = min(r["seconds"] for r in kt)
        cold = min(r[0]["seconds"] for r in runs)
        warm = min(r[1]["seconds"] for r in runs)
        again = min(r[1]["again"] for r in runs)
        counts = {r["count"] for r in kt} | {r[0]["count"] for r in runs}
        extra = []
        for backend in also:
            others = [beast_cold_warm(path, backend)[0] for _ in range(args.rounds)]
            counts |= {r["count"] for r in others}
            extra.append(min(r["seconds"] for r in others))
        assert len(counts) == 1, f"{path}: Kernel Tuner and beast disagree: {counts}"
        print(f"| {os.path.basename(path)[:-3]} | {counts.pop():,} | {kt_s:.3f} s | {cold:.3f} s "
              f"| {warm:.3f} s | {again:.4f} s | " + "".join(f"{x:.3f} s | " for x in extra)
              + f"{kt_s / cold:.2g}x | {kt_s / warm:.2g}x |", flush=True)


if __name__ == "__main__":
    main()
