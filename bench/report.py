"""Markdown tables of the GEMM and Kernel Tuner benchmarks from pytest-benchmark JSON.

    python3 bench/report.py bench/results/*.json

(The loop experiment's table comes from ``bench/plot_loops.py``.)  Times are the fastest round
("best"; least disturbed by other processes) and the median; with one round they are equal.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def _load(paths):
    out = []
    for path in paths:
        for b in json.loads(Path(path).read_text()).get("benchmarks", []):
            out.append(b)
    return out


def _t(s):
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def _ratio(r):
    return f"{r:,.0f}x" if r >= 10 else f"{r:.2g}x"


def gemm_table(benchmarks) -> str:
    rows = [b for b in benchmarks if b.get("extra_info", {}).get("experiment") == "gemm"]
    if not rows:
        return ""
    border = {"c": 0, "lua": 1, "python": 2}
    morder = {"cold": 0, "warm": 1, "count": 2}
    rows.sort(key=lambda b: (b["extra_info"]["device"], b["extra_info"]["precision"],
                             border.get(b["extra_info"]["backend"], 9), b["extra_info"]["threads"],
                             morder.get(b["extra_info"]["mode"], 9)))
    out = ["| profile | backend | threads | mode | count | best | median | rounds |",
           "|---|---|---:|---|---:|---:|---:|---:|"]
    for b in rows:
        i, st = b["extra_info"], b["stats"]
        prof = f"{i['device']} {i['precision']}" + (" opt-in smem" if i["shared_memory"] == "optin"
                                                     else "")
        out.append(f"| {prof} | {i['backend']} | {i['threads']} | {i['mode']} | {i['count']:,} | "
                   f"{_t(st['min'])} | {_t(st['median'])} | {st['rounds']} |")
    return "\n".join(out) + "\n"


def kt_table(benchmarks) -> str:
    rows = [b for b in benchmarks if b.get("extra_info", {}).get("experiment") == "kernel_tuner"]
    if not rows:
        return ""
    by_dim: dict = {}
    for b in rows:
        i = b["extra_info"]
        by_dim.setdefault(i["dim"], {})[i["tool"]] = b
    tools = ["beast-python-cold", "beast-lua-cold", "beast-c-cold", "beast-c-warm"]
    ratios = ["beast-python-cold", "beast-c-cold", "beast-c-warm"]
    out = ["| max dim | survivors | Kernel Tuner | " + " | ".join(tools) + " | "
           + " | ".join(f"KT / {t}" for t in ratios) + " |",
           "|---:|---:|---:|" + "---:|" * (len(tools) + len(ratios))]
    for dim in sorted(by_dim):
        d = by_dim[dim]
        kt = d.get("kernel_tuner")
        count = kt["extra_info"]["count"] if kt else next(iter(d.values()))["extra_info"]["count"]
        cells = [str(dim), f"{count:,}", _t(kt["stats"]["min"]) if kt else "n/a"]
        for t in tools:
            cells.append(_t(d[t]["stats"]["min"]) if t in d else "n/a")
        for t in ratios:
            if kt and t in d:
                cells.append(_ratio(kt["stats"]["min"] / d[t]["stats"]["min"]))
            else:
                cells.append("n/a")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv=None):
    paths = (argv if argv is not None else sys.argv[1:])
    if not paths:
        sys.exit("usage: python3 bench/report.py RESULTS.json ...")
    benchmarks = _load(paths)
    for title, table in (("GEMM", gemm_table(benchmarks)), ("Kernel Tuner", kt_table(benchmarks))):
        if table:
            print(f"### {title}\n\n{table}")


if __name__ == "__main__":
    main()
