"""The compile/measure pipeline of `beast tune`, simulated on the compile and kernel times of real
logs (no GPU): how long a run takes and how busy the GPU is, by compile threads, early cut and
whether the measuring loop waits for the oldest compile (in order) or takes one that is done.

    python3 bench/pipeline_sim.py                  # the H200 random-search logs of bench/gpu_runs/
    python3 bench/pipeline_sim.py LOG.jsonl ... [--overhead 0.03]

Each configuration's compile takes its logged ``compile_s`` (measured with 8 compiles at once on
the 16-core H200 machine; ``compile_scaling.log`` there found 16 at once no slower each), and its
measurement ``launches x ms`` plus ``--overhead`` seconds of host work (verification, copies).
The runner's rules: ``lookahead = 2 x threads + 2`` configurations submitted in order to a pool
of ``threads``; the GPU measures one at a time; with ``ready`` order it takes the oldest compile
unless that one is still running ``HEAD_WAIT`` seconds on while a later one is done.
"""
import argparse
import heapq
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from beast.tune.device.cut_replay import UNCOUNTED_LAUNCHES, replay_cut  # noqa: E402
from beast.tune.driver.log import read_log  # noqa: E402
from beast.tune.driver.local import HEAD_WAIT  # noqa: E402

LOGS = [ROOT / "bench" / "gpu_runs" / "h200_2026-11-27" / f"{n}_random.jsonl" for n in ("dgemm", "sgemm", "zgemm")]


def simulate(compile_s, measure_s, threads: int, ready: bool, head_wait: float = HEAD_WAIT):
    """(wall seconds, GPU busy seconds) of the pipeline over configurations in this order."""
    n = len(compile_s)
    lookahead = 2 * threads + 2
    free = [0.0] * threads                   # when each compile thread is next free
    heapq.heapify(free)
    done_at = {}
    submitted = 0
    pending = []                             # indices in submission order
    t = 0.0
    busy = 0.0

    def submit(now):
        nonlocal submitted
        while len(pending) < lookahead and submitted < n:
            start = max(now, heapq.heappop(free))
            finish = start + compile_s[submitted]
            heapq.heappush(free, finish)
            done_at[submitted] = finish
            pending.append(submitted)
            submitted += 1

    submit(0.0)
    while pending:
        head = pending[0]
        if not ready or done_at[head] <= t + head_wait:
            pick, start = head, max(t, done_at[head])
        else:                                # the oldest done after the wait, else the first to finish
            done = [i for i in pending if done_at[i] <= t + head_wait]
            pick = done[0] if done else min(pending, key=lambda i: done_at[i])
            start = t + head_wait if done else done_at[pick]
        pending.remove(pick)
        submit(start)                        # a slot opened: the next configuration starts compiling
        t = start + measure_s[pick]
        busy += measure_s[pick]
    return t, busy


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="*", type=Path, default=LOGS)
    ap.add_argument("--overhead", type=float, default=0.03, help="host seconds per measured configuration")
    args = ap.parse_args(argv)
    print("| log | configs | threads | early cut | order | wall s | configs/s | GPU busy |")
    print("|---|---:|---:|---|---|---:|---:|---:|")
    for path in args.logs:
        _, records, _ = read_log(str(path))
        recs = [r for r in records if "config" in r and r.get("status") == "ok"]
        compile_s = [float(r.get("compile_s") or 0.0) for r in recs]
        full = [((r.get("reps") or 1) + UNCOUNTED_LAUNCHES) * r["ms"] / 1e3 + args.overhead for r in recs]
        cut = replay_cut(recs, path.name, draws=0)
        cut_flags = set(cut.cut_indices)
        short = [(UNCOUNTED_LAUNCHES * r["ms"] / 1e3 + args.overhead) if i in cut_flags else full[i]
                 for i, r in enumerate(recs)]
        for threads, use_cut, ready in ((8, False, False), (16, False, False), (16, False, True), (16, True, False),
                                       (16, True, True)):
            wall, busy = simulate(compile_s, short if use_cut else full, threads, ready)
            print(f"| {path.stem} | {len(recs)} | {threads} | {'yes' if use_cut else 'no'} "
                  f"| {'ready first' if ready else 'in order'} | {wall:.0f} | {len(recs) / wall:.2f} "
                  f"| {100 * busy / wall:.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
