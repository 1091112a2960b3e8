"""The speed model (beast.tune.model.speed) against the real H200 times of bench/gpu_runs, no GPU.

    python bench/model_check.py                      # the table: one row per log
    python bench/model_check.py --logs dgemm_random sgemm_random --json out.json
    python bench/model_check.py --replay             # the lower-bound gate and the model's order, replayed
    python bench/model_check.py --fit dgemm          # refit the constants on the DGEMM logs, show all
    python bench/model_check.py --fit sgemm zgemm    # ... on the others, to see DGEMM out of sample
    python bench/model_check.py --predict-mma        # the tensor-core family's predicted best (samples the space)

For each log: Spearman's rank correlation of the predicted GFLOP/s with the measured, how many
of the measured top 10 are among the model's top 10 %, and the limiting resource of the
measured best.  ``--replay`` walks each log in its order and skips a configuration whose
lower bound exceeds the best time measured so far: the time saved (the skipped
configurations' ``launches x ms + compile_s``), whether a measured top-10 configuration was
skipped, and the margin (the least ratio of a top-10 configuration's measured time to its
lower bound); then the model's order against the log's: after how many measured
configurations the log's best (or one within 5 % of it) is found.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from beast.lang.devices import get_profile  # noqa: E402
from beast.tune.model import speed as sm  # noqa: E402
from beast.tune.driver.log import read_log  # noqa: E402

RUNS = os.path.join(HERE, "gpu_runs", "h200_2026-11-27")
#: launches a measurement takes (the warm-up and timed batches; bench/gpu_runs README)
LAUNCHES = 8


def load_log(path: str) -> dict:
    """Header, settings, size and the verified records of one tuning log (read as ``beast tune``
    reads it: a torn last line dropped, the ``started``/``interrupted`` marks left out)."""
    header, lines, _ = read_log(path)
    records = [r for r in lines if "config" in r and r.get("status") == "ok" and r.get("ms")]
    settings = {k: v for k, v in header["settings"].items() if k in ("precision", "arithmetic", "trans_a", "trans_b")}
    return {"name": os.path.basename(path).rsplit(".", 1)[0], "header": header, "settings": settings,
            "size": tuple(header["size"]), "records": records,
            "family": header.get("kernel_family", "gemm")}


def log_paths(names=None) -> list[str]:
    """The H200 logs (of ``names`` only, when given: file names with or without .jsonl)."""
    paths = sorted(glob.glob(os.path.join(RUNS, "*.jsonl")))
    if names:
        wanted = {n.removesuffix(".jsonl") for n in names}
        paths = [p for p in paths if os.path.basename(p).removesuffix(".jsonl") in wanted]
    return paths


def predictions(log: dict, profile, params=sm.DEFAULT_PARAMS, facts: bool = True) -> list:
    """One :class:`Prediction` per record of ``log`` (with its logged regs/local_bytes when ``facts``)."""
    out = []
    for r in log["records"]:
        f = {"regs": r["regs"], "local_bytes": r["local_bytes"]} if facts and "regs" in r else None
        out.append(sm.predict_ms(r["config"], log["settings"], log["size"], profile, facts=f,
                                 family=log["family"], params=params))
    return out


def check(log: dict, profile, params=sm.DEFAULT_PARAMS, facts: bool = True, preds=None) -> dict:
    """Spearman, top-10 capture and the limits of one log (``preds``: its predictions, if made)."""
    preds = preds or predictions(log, profile, params, facts)
    measured = np.array([r["gflops"] for r in log["records"]])
    predicted = np.array([p.gflops for p in preds])
    n = len(measured)
    top = set(np.argsort(-measured)[:10].tolist())
    k = max(1, int(np.ceil(0.1 * n)))
    model_top = set(np.argsort(-predicted, kind="stable")[:k].tolist())
    best = int(np.argmax(measured))
    ratio = np.array([r["ms"] for r in log["records"]]) / np.array([p.ms for p in preds])
    return {"log": log["name"], "n": n, "spearman": sm.spearman(predicted, measured),
            "top10_in_model_top10pct": len(top & model_top), "model_top10pct": k,
            "best_measured_gflops": float(measured[best]), "best_predicted_gflops": float(predicted[best]),
            "best_limit": preds[best].limit, "measured_over_predicted_median": float(np.median(ratio)),
            "measured_over_predicted_min": float(ratio.min())}


def gate_lowers(log: dict, profile, params=sm.DEFAULT_PARAMS) -> list[float]:
    """The lower bound ``beast tune``'s gate applies to each record of ``log`` before compiling:
    :meth:`~beast.tune.model.speed.ModelGate.lower_ms`, on the fewest registers and no spill."""
    gate = sm.ModelGate(log["family"], log["settings"], log["size"], profile, params=params)
    return [gate.lower_ms(r["config"]) for r in log["records"]]


def replay(log: dict, profile, params=sm.DEFAULT_PARAMS, facts: bool = True, near: float = 0.05,
           first: int = 20, preds=None) -> dict:
    """The lower-bound gate and the model's order, replayed on one log (see the module docstring):
    the first ``first`` configurations form the first batch.  Without ``facts``, the bound is the
    tuner's before compiling (:func:`gate_lowers`) and the order the estimate's."""
    preds = preds or predictions(log, profile, params, facts)
    lower = np.array([p.lower_ms for p in preds] if facts else gate_lowers(log, profile, params))
    recs = log["records"]
    ms = np.array([r["ms"] for r in recs])
    cost = ms * 1e-3 * LAUNCHES + np.array([r.get("compile_s", 0.0) for r in recs])
    kernel_cost = ms * 1e-3 * LAUNCHES
    top = set(np.argsort(ms)[:10].tolist())
    best = None
    skipped = []
    for i in range(len(recs)):
        if best is not None and lower[i] > best:
            skipped.append(i)
            continue
        best = ms[i] if best is None else min(best, ms[i])
    margin = float(min(ms[i] / lower[i] for i in top))
    target = ms.min() * (1 + near)

    def found_after(order):
        hit_best = next(j for j, i in enumerate(order, 1) if ms[i] == ms.min())
        hit_near = next(j for j, i in enumerate(order, 1) if ms[i] <= target)
        return hit_best, hit_near

    log_order = list(range(len(recs)))
    # the first batch (``first`` candidates) in the model's order, the rest in the log's
    batch = sorted(log_order[:first], key=lambda i: preds[i].ms) + log_order[first:]
    model_order = sorted(log_order, key=lambda i: preds[i].ms)
    return {"log": log["name"], "n": len(recs), "skipped": len(skipped),
            "saved_s": float(cost[skipped].sum()), "total_s": float(cost.sum()),
            "saved_kernel_s": float(kernel_cost[skipped].sum()), "total_kernel_s": float(kernel_cost.sum()),
            "skipped_top10": len(top & set(skipped)), "margin": margin,
            "log_order": found_after(log_order), "first_batch_model": found_after(batch),
            "model_order": found_after(model_order), "first": first}


#: the hand-set physical values the constants started from, before any fit (``--fit ... --neutral``)
NEUTRAL = sm.Params(lat_global=700.0, lat_barrier=40.0, efficiency=0.85, l2_bytes_per_clock=40.0, spill_touch=0.25,
                    lat_local=10.0, warp_slack=0.5, overlap=4.0)


def fit(logs, profile, names=("warp_slack", "lat_global", "lat_barrier", "efficiency", "l2_bytes_per_clock",
                              "spill_touch", "lat_local", "overlap"),
        start=sm.DEFAULT_PARAMS, rounds: int = 2) -> sm.Params:
    """Coordinate search of ``names`` over a log-spaced grid around the start, maximizing the mean
    Spearman of ``logs`` minus small penalties on the spread and the median of log(measured /
    predicted) (so that the times, not only their order, come out right)."""
    def score(p):
        vals = []
        for log in logs:
            preds = predictions(log, profile, p)
            rho = sm.spearman([q.gflops for q in preds], [r["gflops"] for r in log["records"]])
            ratio = np.log([r["ms"] / q.ms for r, q in zip(log["records"], preds)])
            vals.append(rho - 0.05 * float(np.std(ratio)) - 0.2 * abs(float(np.median(ratio))))
        return float(np.mean(vals))

    best, best_score = start, score(start)
    for _ in range(rounds):
        for name in names:
            v0 = getattr(best, name)
            for f in (0.5, 0.7, 0.85, 1.2, 1.4, 2.0):
                v = v0 * f
                if (name == "efficiency" and v > 1) or (name == "overlap" and v < 1):
                    continue
                cand = sm.with_params(best, **{name: v})
                sc = score(cand)
                if sc > best_score + 1e-4:
                    best, best_score = cand, sc
    return best


def markdown_checks(rows) -> str:
    """The correlation table of :func:`check` rows, in Markdown."""
    out = ["| log | configs | Spearman | measured top 10 in model's top 10 % | best: measured / predicted GFLOP/s | "
           "best's limit | measured / predicted ms (median) |",
           "|---|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        out.append(f"| {r['log']} | {r['n']} | {r['spearman']:.3f} | {r['top10_in_model_top10pct']} of 10 "
                   f"(top {r['model_top10pct']}) | "
                   f"{r['best_measured_gflops']:,.0f} / {r['best_predicted_gflops']:,.0f} | "
                   f"{r['best_limit']} | {r['measured_over_predicted_median']:.2f} |")
    return "\n".join(out)


def markdown_replay(rows) -> str:
    """The lower bound's replay table of :func:`replay` rows, in Markdown."""
    out = ["| log | configs | skipped | time saved (s) | kernel time saved (s) | top 10 skipped | margin | "
           "best found after: log order / model's first batch / model order | within 5 %: same |",
           "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        out.append(f"| {r['log']} | {r['n']} | {r['skipped']} | {r['saved_s']:.1f} of {r['total_s']:.1f} | "
                   f"{r['saved_kernel_s']:.1f} of {r['total_kernel_s']:.1f} | {r['skipped_top10']} | "
                   f"{r['margin']:.2f} | {r['log_order'][0]} / {r['first_batch_model'][0]} / {r['model_order'][0]} | "
                   f"{r['log_order'][1]} / {r['first_batch_model'][1]} / {r['model_order'][1]} |")
    return "\n".join(out)


def predict_mma(profile, settings, size, sample: int, seed: int = 0, top: int = 5, compiled: int = 0) -> list[dict]:
    """The tensor-core space's survivors (a uniform sample of ``sample``), ranked by the model with
    estimated registers; with ``compiled``, the best ``compiled`` of them are compiled (nvcc, sm_90:
    :mod:`beast.tune.model.compiler_facts`) and ranked again with the compiler's registers and spills."""
    from beast import load
    from beast.tune.kernels.families import get_family
    space = load(os.path.join(os.path.dirname(HERE), "spaces", "gemm_mma.py"), device=profile, settings=settings)
    fam = get_family("gemm_mma")
    peak = fam.peak_gflops(profile, "double")
    rows = space.sample(sample, seed=seed)
    names = list(space.iterators)
    gate = sm.ModelGate("gemm_mma", space.settings, size, profile)
    out = []
    for values in zip(*(rows[nm].tolist() for nm in names)):
        cfg = dict(zip(names, values))
        p = gate.predict(cfg)
        out.append({"config": cfg, "ms": p.ms, "gflops": p.gflops, "fraction_of_peak": p.gflops / peak,
                    "limit": p.limit, "blocks_per_sm": p.blocks_per_sm, "facts": "estimated"})
    out.sort(key=lambda r: r["ms"])
    if compiled:
        from beast.tune.model.compiler_facts import many_kernel_facts
        head = out[:compiled]
        kernels = [fam.generate(r["config"], gate.settings, name=f"k{i}") for i, r in enumerate(head)]
        cc = tuple(profile.cc)
        for r, f in zip(head, many_kernel_facts(kernels, f"sm_{cc[0]}{cc[1]}")):
            p = gate.predict(r["config"], facts=f)
            r.update(ms=p.ms, gflops=p.gflops, fraction_of_peak=p.gflops / peak, limit=p.limit,
                     blocks_per_sm=p.blocks_per_sm, facts=f"regs {f.registers}, local {f.local_bytes} B")
        out = sorted(head, key=lambda r: r["ms"])
    return out[:top]


def main(argv=None) -> int:
    """The command line (``--help``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--logs", nargs="*", help="log names (default: every log of bench/gpu_runs/h200_2026-11-27)")
    ap.add_argument("--json", help="write the results to this JSON file")
    ap.add_argument("--replay", action="store_true", help="replay the lower-bound gate and the model's order")
    ap.add_argument("--no-facts", action="store_true", help="estimate registers and spills instead of the logged ones")
    ap.add_argument("--fit", nargs="+", metavar="PREFIX",
                    help="refit the constants on the logs whose names start with these (dgemm, sgemm, zgemm, all)")
    ap.add_argument("--neutral", action="store_true", help="start the fit from the hand-set values, not the defaults")
    ap.add_argument("--predict-mma", action="store_true", help="rank a sample of spaces/gemm_mma.py by the model")
    ap.add_argument("--sample", type=int, default=3000, help="survivors sampled for --predict-mma")
    ap.add_argument("--compile", type=int, default=0, metavar="N",
                    help="--predict-mma: compile the model's best N (nvcc) and rank them again with their registers")
    args = ap.parse_args(argv)
    profile = get_profile("h200")
    t0 = time.perf_counter()
    logs = [load_log(p) for p in log_paths(args.logs)]
    params = sm.DEFAULT_PARAMS
    result: dict = {}
    if args.fit:
        train = [lg for lg in logs if "all" in args.fit or lg["name"].startswith(tuple(args.fit))]
        if not train:
            ap.error(f"no log starts with {' or '.join(args.fit)}")
        params = fit(train, profile, start=NEUTRAL if args.neutral else sm.DEFAULT_PARAMS)
        print(f"fitted on {', '.join(lg['name'] for lg in train)}: {params}")
        result["params"] = params.as_dict()
    preds = [predictions(lg, profile, params, facts=not args.no_facts) for lg in logs]
    rows = [check(lg, profile, params, preds=p) for lg, p in zip(logs, preds)]
    result["checks"] = rows
    print(markdown_checks(rows))
    if args.replay:
        reps = [replay(lg, profile, params, preds=p) for lg, p in zip(logs, preds)]
        result["replay"] = reps
        print()
        print(markdown_replay(reps))
    if args.predict_mma:
        result["mma"] = {}
        for name, settings, size in (("DGEMM NN 4096^3", {"arithmetic": "real"}, (4096,) * 3),
                                     ("ZGEMM NN 2048^3", {"arithmetic": "complex"}, (2048,) * 3)):
            best = predict_mma(profile, settings, size, args.sample, compiled=args.compile)
            result["mma"][name] = best
            print(f"\n{name}: the model's best of {args.sample} sampled survivors")
            for r in best:
                cfg = " ".join(f"{k}={v}" for k, v in r["config"].items())
                print(f"  {r['gflops']:9,.0f} GFLOP/s  {100 * r['fraction_of_peak']:5.1f} % of peak  "
                      f"limit {r['limit']:8s} {r['blocks_per_sm']} blocks/SM  ({r['facts']})  {cfg}")
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1, default=str)
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
