"""beast's search strategies against Kernel Tuner's, replayed on brute-forced GPU data.

Both tools "measure" a configuration by looking its recorded time up in the same file of the
FAIR Benchmark Hub (RTX A4000; the directory ``$BEAST_BENCHMARK_HUB``, by default the trimmed
copies in ``tests/data/benchmark_hub``, see bench/README.md): beast through
:func:`beast.tune.replay.replay`, Kernel Tuner through its own simulation mode
(``tune_kernel(..., simulation_mode=True, cache=FILE, strategy=S,
strategy_options={"max_fevals": B})``).  Each run goes to the largest budget B (10 % of the
space); the best-so-far curve of that run gives the fraction of the optimum (best time overall
/ best time found) after every smaller number of evaluations.  A failed configuration counts
as an evaluation for both.

    python bench/bench_strategies.py [--repeats 10] [--tools beast,kt] [--only NAME]
    python bench/plot_strategies.py          # the table (bench/results/strategies.md) and bench/strategies.png

Writes ``bench/results/strategies.json``: per data set and strategy, the curves (one row per
repeat, fraction of the optimum after 1..B evaluations) and the seconds it took.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# beast needs only each configuration's time, which the trimmed copies in tests/data keep; Kernel
# Tuner's simulation mode also reads the compile, verification and benchmark times of the full files.
DATA_DIR = os.environ.get("BEAST_BENCHMARK_HUB") or os.path.join(ROOT, "tests", "data", "benchmark_hub")
KT_FIELDS = ("compile_time", "verification_time", "benchmark_time")
RESULTS = os.path.join(HERE, "results", "strategies.json")

DATASETS = {"dedispersion": "dedispersion_A4000.json.gz", "convolution": "convolution_A4000.json.gz"}
BEAST_STRATEGIES = ["random", "local", "model", "hybrid"]
KT_STRATEGIES = ["random_sample", "genetic_algorithm", "dual_annealing", "bayes_opt"]
BUDGET_FRACTION = 0.10


def beast_curves(name, strategy, budget, repeats):
    import beast
    from beast.tune.replay import load_recorded, match_space, replay
    space = beast.load(os.path.join(ROOT, "spaces", "real", f"{name}.py"))
    pool, times = match_space(space, load_recorded(os.path.join(DATA_DIR, DATASETS[name])))
    res = replay(pool, times, strategy, budget, repeats=repeats, seed=1000)
    return res.fractions


def _kt_cache(name, workdir):
    path = os.path.join(workdir, f"{name}.json")
    with gzip.open(os.path.join(DATA_DIR, DATASETS[name]), "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def kt_curves(name, strategy, budget, repeats, workdir):
    import kernel_tuner
    import beast
    ns = beast.load(os.path.join(ROOT, "spaces", "real", f"{name}.py")).module.namespace["KERNEL_TUNER"]
    cache = _kt_cache(name, workdir)
    with open(cache) as fh:
        data = json.load(fh)
    keys = data["tune_params_keys"]
    if not all(f in entry for entry in data["cache"].values() for f in KT_FIELDS):
        raise SystemExit(f"{os.path.join(DATA_DIR, DATASETS[name])} lacks the {', '.join(KT_FIELDS)} that "
                         "Kernel Tuner's simulation mode needs: fetch the full files and set "
                         "BEAST_BENCHMARK_HUB (bench/README.md)")
    times = {}
    for entry in data["cache"].values():
        t = entry["time"]
        times[tuple(entry[k] for k in keys)] = t if isinstance(t, (int, float)) else None
    optimum = min(t for t in times.values() if t is not None)
    out = np.zeros((repeats, budget))
    for r in range(repeats):
        np.random.seed(1000 + r)                  # KT's strategies draw from numpy's global state
        import random
        random.seed(1000 + r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results, _ = kernel_tuner.tune_kernel(
                data["kernel_name"], f"__global__ void {data['kernel_name']}() {{}}", data["problem_size"], [],
                ns["tune_params"], restrictions=ns["restrictions"], cache=cache, simulation_mode=True,
                strategy=strategy, strategy_options={"max_fevals": budget}, verbose=False, quiet=True,
                lang="CUDA")
        best = np.inf
        seen = set()
        n = 0
        for res in results:
            key = tuple(res[k] for k in keys)
            if key in seen:
                continue
            seen.add(key)
            t = times.get(key)
            if t is not None and t < best:
                best = t
            if n < budget:
                out[r, n] = optimum / best if np.isfinite(best) else 0.0
            n += 1
        if n < budget:
            out[r, n:] = out[r, n - 1] if n else 0.0
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--tools", default="beast,kt")
    ap.add_argument("--only", default=None, help="comma-separated strategy names")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--output", default=RESULTS)
    args = ap.parse_args(argv)
    tools = args.tools.split(",")
    only = set(args.only.split(",")) if args.only else None
    results = {}
    if os.path.exists(args.output):
        with open(args.output) as fh:
            results = json.load(fh)
    workdir = tempfile.mkdtemp(prefix="beast-kt-")
    try:
        for name in args.datasets.split(","):
            import beast
            size = beast.load(os.path.join(ROOT, "spaces", "real", f"{name}.py")).count()
            budget = int(round(BUDGET_FRACTION * size))
            jobs = [("beast", s) for s in BEAST_STRATEGIES if "beast" in tools] + \
                   [("kt", s) for s in KT_STRATEGIES if "kt" in tools]
            for tool, strategy in jobs:
                if only and strategy not in only:
                    continue
                start = time.perf_counter()
                if tool == "beast":
                    curves = beast_curves(name, strategy, budget, args.repeats)
                else:
                    curves = kt_curves(name, strategy, budget, args.repeats, workdir)
                seconds = time.perf_counter() - start
                entry = {"tool": tool, "strategy": strategy, "size": size, "budget": budget,
                         "repeats": args.repeats, "seconds": round(seconds, 2),
                         "curves": np.round(curves, 5).tolist()}
                results.setdefault(name, {})[f"{tool}:{strategy}"] = entry
                at95 = np.where((curves >= 0.95).any(axis=1), (curves >= 0.95).argmax(axis=1) + 1, np.inf)
                print(f"{name:13s} {tool}:{strategy:18s} {seconds:7.1f}s  median evals to 95%: "
                      f"{np.median(at95)}  mean at 1%/2%/5%: "
                      + " ".join(f"{curves[:, max(1, round(size * p)) - 1].mean():.4f}"
                                 for p in (0.01, 0.02, 0.05)), flush=True)
                tmp = args.output + ".tmp"
                with open(tmp, "w") as fh:
                    json.dump(results, fh, separators=(",", ":"))
                os.replace(tmp, args.output)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
