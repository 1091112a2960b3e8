"""The early cut of clear losers replayed on real GPU logs (no GPU needed).

    python3 bench/early_cut.py                       # the H200 logs of bench/gpu_runs/
    python3 bench/early_cut.py LOG.jsonl ... [--early-cut 2 --spill-cut 1.25 --draws 1000]

For each log (measured without the cut): which configurations the cut would have timed from
their warm-up launches only, the launches and kernel time that saves, whether the best is kept,
and in how many of ``--draws`` replays (warm-up launches drawn from each configuration's own
measured spread) the ten fastest came out in the same order.  Prints a Markdown table.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from beast.tune.device.cut_replay import format_cut_table, replay_cut  # noqa: E402
from beast.tune.driver.log import read_log  # noqa: E402
from beast.tune.device.measure import EARLY_CUT, SPILL_CUT  # noqa: E402

LOGS = sorted((ROOT / "bench" / "gpu_runs" / "h200_2026-11-27").glob("*.jsonl"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="*", type=Path, default=LOGS)
    ap.add_argument("--early-cut", type=float, default=EARLY_CUT)
    ap.add_argument("--spill-cut", type=float, default=SPILL_CUT)
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args(argv)
    results = []
    for path in args.logs:
        _, records, _ = read_log(str(path))
        results.append(replay_cut(records, path.name, early_cut=args.early_cut, spill_cut=args.spill_cut,
                                  draws=args.draws))
    print(format_cut_table(results))
    for r in results:
        if r.cut_ranks:
            print(f"{r.name}: final ranks of the cut configurations: {r.cut_ranks[:12]}"
                  f"{' ...' if len(r.cut_ranks) > 12 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
