"""One Markdown table of `beast tune` logs: the GPU check's summary (`bench/gpu_check.sh`).

    python3 bench/gpu_table.py LOG.jsonl ... [--tests "37 passed, 2 skipped"]

One row per log: the problem (with the kernel family when it is not the paper's), the strategy and budget of its (last) run, the configurations
measured, the best GFLOP/s, cuBLAS and the best as a share of it, configurations per second,
the share of wall time the GPU was busy, early cuts, the configurations the speed model pruned
(not counted as measured), and the wall time.  The rate, the busy
share and the cuts come from the log's ``run`` records (beast from this version on).
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from beast.tune.driver.log import read_log  # noqa: E402
from beast.tune.device.measure import OK, PRUNED  # noqa: E402


def problem(header) -> str:
    st = header.get("settings", {})
    kind = {("single", "real"): "S", ("double", "real"): "D", ("single", "complex"): "C",
            ("double", "complex"): "Z"}.get((st.get("precision", "double"), st.get("arithmetic", "real")), "?")
    trans = "".join("T" if st.get(t) else "N" for t in ("trans_a", "trans_b"))
    m, n, k = header.get("size", (0, 0, 0))
    size = f"{m}³" if m == n == k else f"{m}×{n}×{k}"
    optin = " opt-in" if st.get("shared_memory") == "optin" else ""
    family = header.get("kernel_family", "gemm")
    kernels = "" if family == "gemm" else f", {family}"
    return f"{kind}GEMM {trans} {size}{optin}{kernels}"


def row(path: Path) -> list[str]:
    header, records, _ = read_log(str(path))
    configs = [r for r in records if "config" in r and r.get("status") != PRUNED]
    pruned = sum(1 for r in records if "config" in r and r.get("status") == PRUNED)
    timed = [r for r in configs if r.get("status") == OK and isinstance(r.get("gflops"), (int, float))]
    refs = [r for r in records if "reference" in r and r.get("status") == OK]
    runs = [r["run"] for r in records if isinstance(r.get("run"), dict)]
    best = max((r["gflops"] for r in timed), default=None)
    ref = refs[-1]["gflops"] if refs else None
    wall = sum(r.get("wall_s", 0.0) for r in runs)
    gpu = sum(r.get("gpu_s", 0.0) for r in runs)
    measured = sum(r.get("measured", 0) for r in runs)
    last = runs[-1] if runs else {}

    def f(x, spec):
        return "n/a" if x is None else format(x, spec)

    return [path.stem, problem(header or {}), str(last.get("strategy", "?")), str(len(configs)),
            f(best, ",.0f"), f(ref, ",.0f"), f(100 * best / ref if best and ref else None, ".1f"),
            f(measured / wall if wall else None, ".2f"), f(100 * gpu / wall if wall else None, ".0f"),
            str(sum(r.get("early_cut", 0) for r in runs)), str(pruned), f(wall if runs else None, ".0f"),
            (header or {}).get("device", {}).get("gpu") or "?"]


HEAD = ["run", "problem", "strategy", "configs", "best GFLOP/s", "cuBLAS GFLOP/s", "% cuBLAS",
        "configs/s", "GPU busy %", "early cuts", "pruned", "wall s", "GPU"]


def table(paths) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "|".join("---" if i < 3 else "---:" for i in range(len(HEAD) - 1)) + "|---|"]
    for p in paths:
        if not Path(p).exists():
            lines.append(f"| {Path(p).stem} | no log: the run failed (its output is beside the logs) |")
            continue
        try:
            lines.append("| " + " | ".join(row(Path(p))) + " |")
        except Exception as err:  # noqa: BLE001 - one broken log must not hide the others
            lines.append(f"| {Path(p).stem} | unreadable: {type(err).__name__}: {err} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--tests", default=None, help="the GPU tests' outcome, printed under the table")
    args = ap.parse_args(argv)
    print(table(args.logs))
    if args.tests:
        print(f"\nGPU tests: {args.tests}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
