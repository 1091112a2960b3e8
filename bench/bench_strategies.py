"""beast's search strategies against Kernel Tuner's, replayed on brute-forced GPU data.

Both tools "measure" a configuration by looking its recorded time up in the same file of the
FAIR Benchmark Hub (the directory ``$BEAST_BENCHMARK_HUB``, by default the trimmed copies in
``tests/data/benchmark_hub``, see bench/README.md): beast through
:func:`beast.search.replay.replay`, Kernel Tuner through its own simulation mode
(``tune_kernel(..., simulation_mode=True, cache=FILE, strategy=S,
strategy_options={"max_fevals": B})``).  Each run goes to the largest budget B (5 % of the
space); the best-so-far curve of that run gives the fraction of the optimum (best time overall
/ best time found) after every smaller number of evaluations.  A failed configuration counts
as an evaluation for both; a configuration Kernel Tuner evaluates twice counts once.

    python bench/bench_strategies.py [--repeats 20] [--tools beast,kt] [--only NAME,...] [--files STEM,...]
    python bench/bench_strategies.py --cost --files kt_gemm_RTX_3090 --repeats 3   # ms per proposal
    python bench/plot_strategies.py          # the tables (bench/results/strategies.md) and bench/strategies.png
    python bench/bench_strategies.py --dev '{"stall": 16}' --repeats 10   # a variant of the default, tuning files
    python bench/bench_strategies.py --prior loo        # transfer: each file's other GPUs as the prior
    python bench/bench_strategies.py --prior shuffled   # the same prior with its scores shuffled

``--dev OPTIONS`` is the development loop: beast's default (or ``--only NAME``) with the JSON
``OPTIONS``, on the tuning files (unless ``--files``) with the development seeds 0, 1, ... (never
the benchmark's, 1000 on), each file's four metrics against Kernel Tuner's best stored in
``--output``, and how many points are not behind (and in how many of 2,000 resampled draws each
point is behind: :func:`plot_strategies.chance_behind`); it writes nothing.  ``--seed S`` starts its seeds
at S instead (``--seed 1000 --files`` the held-out files: the table's seeds, to judge a candidate
there once it is chosen).

Writes ``bench/results/strategies/STEM.TOOL.json`` (STEM: the data file's name without
``.json.gz``): per strategy, the curves (one row per repeat, fraction of the optimum after
1..B evaluations), the seeds and the seconds it took.  Files marked ``held-out`` were never
looked at while choosing beast's default strategy and its settings.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
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
RESULTS = os.path.join(HERE, "results", "strategies")

#: data file stem -> (space in spaces/real, role): "tuning" files were used to choose beast's
#: default strategy, "held-out" ones (one per kernel) only to judge it.
FILES = {
    "dedispersion_A4000": ("dedispersion", "tuning"),
    "dedispersion_A6000": ("dedispersion", "tuning"),
    "dedispersion_W6600": ("dedispersion", "held-out"),
    "convolution_A4000": ("convolution", "tuning"),
    "convolution_A6000": ("convolution", "tuning"),
    "convolution_W6600": ("convolution", "held-out"),
    "kt_gemm_RTX_3090": ("kt_gemm", "tuning"),
    "kt_gemm_RTX_2080_Ti": ("kt_gemm", "held-out"),
    "kt_pnpoly_RTX_3090": ("kt_pnpoly", "tuning"),
    "kt_pnpoly_RTX_2080_Ti": ("kt_pnpoly", "held-out"),
    "kt_convolution_RTX_3090": ("kt_convolution", "held-out"),
}
BEAST_STRATEGIES = ["random", "local", "hybrid", "portfolio"]
#: every single-objective strategy of Kernel Tuner 1.5 that needs nothing more (not brute_force,
#: the multi-objective nsga2/nsga3, pyatf_strategies or skopt)
KT_STRATEGIES = ["random_sample", "genetic_algorithm", "dual_annealing", "pso", "simulated_annealing",
                 "greedy_ils", "greedy_mls", "mls", "ordered_greedy_mls", "diff_evo", "firefly_algorithm",
                 "basinhopping", "minimize", "adaptive_tabu_greywolf", "hybrid_vndx", "bayes_opt"]
BUDGET_FRACTION = 0.05
SEED = 1000
#: ``--prior`` modes: "loo", the other GPUs' files of the same kernel (leave one GPU out);
#: "shuffled", the same with the scores shuffled over the configurations (a misleading prior)
PRIOR_MODES = ("loo", "shuffled")
TRANSFER = os.path.join(HERE, "results", "transfer")


def space_path(stem):
    return os.path.join(ROOT, "spaces", "real", f"{FILES[stem][0]}.py")


def recorded(stem):
    """(pool, times): the survivors of the file's space matched to its recorded times."""
    import beast
    from beast.search.replay import load_recorded, match_space
    return match_space(beast.load(space_path(stem)), load_recorded(os.path.join(DATA_DIR, stem + ".json.gz")))


def siblings(stem):
    """The other files of the same kernel (other GPUs): the priors of leave-one-GPU-out."""
    return [s for s, (space, _) in FILES.items() if space == FILES[stem][0] and s != stem]


def prior_of(stem, pool, mode):
    """Pool scores of ``stem``'s prior (:data:`PRIOR_MODES`), or None when the kernel has no
    other GPU's file."""
    from beast.search.prior import prior_scores
    others = siblings(stem) if mode in PRIOR_MODES else mode.split(",")
    if not others:
        return None
    scores = prior_scores(pool, [os.path.join(DATA_DIR, s + ".json.gz") for s in others])
    if mode == "shuffled":
        scores = np.random.default_rng(12345).permutation(scores)
    return scores


def beast_curves(stem, strategy, budget, repeats, seed=SEED, prior=None, **options):
    """beast's curves on ``stem``; ``prior``: a mode of :data:`PRIOR_MODES` (None: no prior)."""
    from beast.search.replay import replay
    pool, times = recorded(stem)
    if prior is not None:
        options["prior"] = prior_of(stem, pool, prior)
    return replay(pool, times, strategy, budget, repeats=repeats, seed=seed, **options).fractions


def develop(stems, strategy, options, repeats, results_dir, seed=0, prior=None):
    """The ``--dev`` loop: print each file's metrics (plot_strategies.metrics) for ``strategy``
    with ``options`` on development seeds, against Kernel Tuner's best stored per metric."""
    import beast
    from plot_strategies import DEFAULT, against_best, chance_behind, metrics
    ahead = points = sure = 0
    for stem in stems:
        size = beast.load(space_path(stem)).count()
        start = time.perf_counter()
        curves = beast_curves(stem, strategy, int(round(BUDGET_FRACTION * size)), repeats, seed=seed,
                              prior=prior, **options)
        mine = metrics({"curves": curves, "size": size})
        line = f"{stem:24s} {time.perf_counter() - start:6.1f}s  " + " ".join(f"{x:.4f}" for x in mine[:3]) \
            + f" {mine[3]:6.1f}"
        path = os.path.join(results_dir, f"{stem}.kt.json")
        if os.path.exists(path):
            with open(path) as fh:
                kt = {f"kt:{name}": entry for name, entry in json.load(fh).items()}
            versus = against_best(mine, {name: metrics(entry) for name, entry in kt.items()})
            best = [b for _, b, _ in versus]
            wins = [w for _, _, w in versus]
            behind = chance_behind({DEFAULT: {"curves": curves, "size": size}, **kt})
            ahead, points = ahead + sum(wins), points + len(wins)
            sure += sum(b > 0.95 for b in behind)
            line += "   Kernel Tuner's best: " + " ".join(f"{x:.4f}" for x in best[:3]) + f" {best[3]:6.1f}  " \
                + "".join("+" if w else "-" for w in wins) + "  behind in " + " ".join(f"{b:.0%}" for b in behind)
        print(line, flush=True)
    print(f"not behind at {ahead} of {points} points; surely behind (in over 95 % of resampled draws) at {sure}")


def transfer(stems, mode, repeats, out_dir=TRANSFER, options=None):
    """``--prior MODE`` without ``--dev``: beast's default with the prior of each file (its other
    GPUs' files, :func:`prior_of`), the table's seeds; written to ``out_dir/STEM.beast.json`` as
    strategy ``portfolio+MODE`` (bench/plot_transfer.py reads them)."""
    import beast
    os.makedirs(out_dir, exist_ok=True)
    for stem in stems:
        if not siblings(stem):
            print(f"{stem:24s} no other GPU's file of this kernel: no prior", flush=True)
            continue
        size = beast.load(space_path(stem)).count()
        budget = int(round(BUDGET_FRACTION * size))
        start = time.perf_counter()
        curves = beast_curves(stem, "portfolio", budget, repeats, prior=mode, **(options or {}))
        seconds = time.perf_counter() - start
        path = os.path.join(out_dir, f"{stem}.beast.json")
        results = {}
        if os.path.exists(path):
            with open(path) as fh:
                results = json.load(fh)
        key = f"portfolio+{mode}"
        results[key] = {"tool": "beast", "strategy": key, "space": FILES[stem][0], "role": FILES[stem][1],
                        "size": size, "budget": budget, "repeats": repeats, "seeds": [SEED, SEED + repeats - 1],
                        "prior": siblings(stem), "seconds": round(seconds, 2),
                        "curves": np.round(curves, 5).tolist()}
        write_json(path, results)
        print(f"{stem:24s} {key:20s} {seconds:7.1f}s  {summary(curves, size)}", flush=True)
    return 0


def proposal_cost(stem, strategy, repeats, prior=None):
    """Milliseconds per proposal (``ask(1)``; the ``tell`` and the time look-up left out) over
    ``repeats`` runs of 5 % of the space each: (budget, mean, each run's mean)."""
    from beast.search import make_strategy
    pool, times = recorded(stem)
    budget = int(round(BUDGET_FRACTION * len(pool)))
    options = {} if prior is None else {"prior": prior_of(stem, pool, prior)}
    runs = []
    for r in range(repeats):
        strat = make_strategy(strategy, pool=pool, seed=SEED + r, **options)
        spent = 0.0
        for _ in range(budget):
            start = time.perf_counter()
            config = strat.ask(1)[0]
            spent += time.perf_counter() - start
            t = float(times[pool.find(config)])
            strat.tell(config, t if np.isfinite(t) else None)
        runs.append(1000 * spent / budget)
    return budget, float(np.mean(runs)), runs


def kt_curves(stem, strategy, budget, repeats, workdir):
    import kernel_tuner
    import beast
    ns = beast.load(space_path(stem)).module.namespace["KERNEL_TUNER"]
    cache = os.path.join(workdir, stem + ".json")
    with gzip.open(os.path.join(DATA_DIR, stem + ".json.gz"), "rb") as src, open(cache, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with open(cache) as fh:
        data = json.load(fh)
    keys = data["tune_params_keys"]
    if not all(f in entry for entry in data["cache"].values() for f in KT_FIELDS):
        raise SystemExit(f"{os.path.join(DATA_DIR, stem + '.json.gz')} lacks the {', '.join(KT_FIELDS)} that "
                         "Kernel Tuner's simulation mode needs: fetch the full files and set "
                         "BEAST_BENCHMARK_HUB (bench/README.md)")
    times = {}
    for entry in data["cache"].values():
        t = entry["time"]
        times[tuple(entry[k] for k in keys)] = t if isinstance(t, (int, float)) else None
    optimum = min(t for t in times.values() if t is not None)
    size = data["problem_size"]
    out = np.zeros((repeats, budget))
    for r in range(repeats):
        np.random.seed(SEED + r)                  # KT's strategies draw from numpy's and random's global state
        random.seed(SEED + r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results, _ = kernel_tuner.tune_kernel(
                data["kernel_name"], f"__global__ void {data['kernel_name']}() {{}}",
                tuple(size) if isinstance(size, list) else size, [],
                ns["tune_params"], restrictions=ns["restrictions"], cache=cache, simulation_mode=True,
                strategy=strategy, strategy_options={"max_fevals": budget}, verbose=False, quiet=True,
                block_size_names=ns.get("block_size_names"), lang="CUDA")
        best, seen = np.inf, set()
        for res in results:
            key = tuple(res[k] for k in keys)
            if key in seen:
                continue
            seen.add(key)
            t = times.get(key)
            if t is not None and t < best:
                best = t
            if len(seen) <= budget:
                out[r, len(seen) - 1] = optimum / best if np.isfinite(best) else 0.0
        n = min(len(seen), budget)
        if n < budget:                            # it stopped early: its best stays
            out[r, n:] = out[r, n - 1] if n else 0.0
    return out


def summary(curves, size):
    """The one-line report of a strategy's curves: median evaluations to 95 %, mean at 1/2/5 %."""
    at95 = np.where((curves >= 0.95).any(axis=1), (curves >= 0.95).argmax(axis=1) + 1, np.inf)
    return (f"median evals to 95%: {np.median(at95)}  mean at 1%/2%/5%: "
            + " ".join(f"{curves[:, min(curves.shape[1], max(1, round(size * p))) - 1].mean():.4f}"
                       for p in (0.01, 0.02, 0.05)))


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, separators=(",", ":"))
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--tools", default="beast,kt")
    ap.add_argument("--only", default=None, help="comma-separated strategy names")
    ap.add_argument("--files", default=None, help="comma-separated data file stems (default: every one; "
                                                  "with --dev, the tuning files)")
    ap.add_argument("--output", default=RESULTS, help="directory of the per-file results")
    ap.add_argument("--cost", action="store_true",
                    help="only report the milliseconds per proposal of beast's strategies (--only) at the 5 %% budget")
    ap.add_argument("--dev", metavar="OPTIONS", default=None,
                    help="the development loop: a strategy's JSON options on the tuning files, development seeds")
    ap.add_argument("--seed", type=int, default=0,
                    help="with --dev, the first seed (default 0; the tables use %d)" % SEED)
    ap.add_argument("--prior", default=None,
                    help="transfer: beast's default started from the other GPUs' files of the same kernel "
                         "(loo), or from them shuffled (a misleading prior), or from the files STEM,... "
                         "(with --dev); results in bench/results/transfer")
    args = ap.parse_args(argv)
    tools = args.tools.split(",")
    only = set(args.only.split(",")) if args.only else None
    stems = args.files.split(",") if args.files else list(FILES)
    unknown = [stem for stem in stems if stem not in FILES]
    if unknown:
        raise SystemExit(f"unknown data file {unknown[0]!r}; one of: {', '.join(FILES)}")
    if args.prior is not None and args.prior not in PRIOR_MODES and \
            (args.dev is None or any(p not in FILES for p in args.prior.split(","))):
        raise SystemExit(f"--prior is one of {', '.join(PRIOR_MODES)}, or (with --dev) data file stems")
    if args.dev is not None:
        if not args.files:
            stems = [stem for stem, (_, role) in FILES.items() if role == "tuning"]
        develop(stems, args.only or "portfolio", json.loads(args.dev), args.repeats, args.output, args.seed,
                args.prior)
        return 0
    if args.cost:
        for stem in stems:
            for strategy in (sorted(only) if only else ["portfolio"]):
                budget, mean, runs = proposal_cost(stem, strategy, args.repeats, args.prior)
                print(f"{stem:24s} {strategy:10s} budget {budget}: {mean:.2f} ms per proposal "
                      f"(runs: {min(runs):.2f}-{max(runs):.2f})", flush=True)
        return 0
    if args.prior is not None:
        return transfer(stems, args.prior, args.repeats)
    os.makedirs(args.output, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="beast-kt-")
    try:
        import beast
        for stem in stems:
            size = beast.load(space_path(stem)).count()
            budget = int(round(BUDGET_FRACTION * size))
            jobs = [("beast", s) for s in BEAST_STRATEGIES if "beast" in tools] + \
                   [("kt", s) for s in KT_STRATEGIES if "kt" in tools]
            for tool, strategy in jobs:
                if only and strategy not in only:
                    continue
                start = time.perf_counter()
                if tool == "beast":
                    curves = beast_curves(stem, strategy, budget, args.repeats)
                else:
                    try:
                        curves = kt_curves(stem, strategy, budget, args.repeats, workdir)
                    except Exception as err:          # one strategy's failure is a result, not the end
                        print(f"{stem:24s} kt:{strategy:20s} failed: {type(err).__name__}: {err}", flush=True)
                        continue
                seconds = time.perf_counter() - start
                path = os.path.join(args.output, f"{stem}.{tool}.json")
                results = {}
                if os.path.exists(path):
                    with open(path) as fh:
                        results = json.load(fh)
                results[strategy] = {"tool": tool, "strategy": strategy, "space": FILES[stem][0],
                                     "role": FILES[stem][1], "size": size, "budget": budget,
                                     "repeats": args.repeats, "seeds": [SEED, SEED + args.repeats - 1],
                                     "seconds": round(seconds, 2), "curves": np.round(curves, 5).tolist()}
                write_json(path, results)
                print(f"{stem:24s} {tool}:{strategy:20s} {seconds:7.1f}s  {summary(curves, size)}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
