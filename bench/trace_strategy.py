"""Where a strategy's evaluations go on one brute-forced data file: every improvement of the best
(evaluation number, fraction of the optimum, the varying parameters' values), and with
``--kinds`` every proposal in a range with the kind of proposal that made it (``portfolio``'s
near / bound / greedy / random) and its distance (parameters changed) from the best so far.

    BEAST_BENCHMARK_HUB=<hub dir> python bench/trace_strategy.py kt_gemm_RTX_3090 --seeds 0-5
    BEAST_BENCHMARK_HUB=<hub dir> python bench/trace_strategy.py kt_gemm_RTX_3090 --seeds 3 --kinds 50-92
    ... --options '{"kappa": 1}'       # a variant of the default, as bench_strategies.py --dev

Development seeds only (as ``--dev``): the benchmark's seeds start at 1000.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from beast.search.replay import load_recorded  # noqa: E402
from beast.search import make_strategy  # noqa: E402
from beast.search import portfolio  # noqa: E402
from beast.search.base import Pool  # noqa: E402
from bench_strategies import DATA_DIR  # noqa: E402  (the hub, as bench_strategies.py finds it)


def _range(text: str) -> range:
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def trace(stem: str, strategy: str, seed: int, budget: int, options: dict, kinds: range | None):
    rec = load_recorded(os.path.join(DATA_DIR, stem + ".json.gz"))
    pool = Pool(rec.names, rec.X)
    times = np.asarray(rec.times, dtype=float)
    optimum = float(np.nanmin(times))
    varying = [j for j, v in enumerate(pool.values) if len(v) > 1]
    made: list[str] = []
    original = portfolio.Portfolio._one

    def one(self, kind, rng, taken, stalled):       # records the kind that made each proposal
        got = original(self, kind, rng, taken, stalled)
        if got:
            made.append(kind)
        return got

    portfolio.Portfolio._one = one
    try:
        strat = make_strategy(strategy, pool=pool, seed=seed, **options)
        best, best_i = math.inf, None
        print(f"seed {seed}: {', '.join(pool.names[j] for j in varying)}")
        for k in range(1, budget + 1):
            made.clear()
            cfg, = strat.ask(1)
            i = pool.find(cfg)
            t = times[i]
            strat.tell(cfg, t if math.isfinite(t) else None)
            values = tuple(int(pool.X[i, j]) for j in varying)
            frac = round(optimum / t, 3) if math.isfinite(t) else None
            if kinds is not None and k in kinds:
                dist = int((pool.ranks[i] != pool.ranks[best_i]).sum()) if best_i is not None else "-"
                print(f"  {k:4d} {'/'.join(made) or 'design':7s} distance {dist}  {frac}  {values}")
            if math.isfinite(t) and t < best:
                best, best_i = t, i
                if kinds is None:
                    print(f"  {k:4d}  {frac}  {values}")
    finally:
        portfolio.Portfolio._one = original


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", help="data file stem, e.g. kt_gemm_RTX_3090")
    ap.add_argument("--strategy", default="portfolio")
    ap.add_argument("--seeds", default="0-2", help="a seed or a range, e.g. 0-5")
    ap.add_argument("--budget", type=int, default=150)
    ap.add_argument("--options", default="{}", help="the strategy's JSON options")
    ap.add_argument("--kinds", default=None, help="print every proposal in this range of evaluations, e.g. 50-92")
    args = ap.parse_args(argv)
    kinds = _range(args.kinds) if args.kinds else None
    budget = max(args.budget, kinds.stop - 1) if kinds else args.budget
    for seed in _range(args.seeds):
        trace(args.file, args.strategy, seed, budget, json.loads(args.options), kinds)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:              # `| head`: the reader has what it wanted
        sys.stderr.close()
