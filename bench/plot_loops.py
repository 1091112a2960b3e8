"""Plot the loop experiment (Figs. 17-19 of Luszczek et al. 2016) from pytest-benchmark JSON.

    python3 -m pytest bench/bench_loops.py --benchmark-only --benchmark-json=bench/results/loops.json
    python3 bench/plot_loops.py bench/results/loops.json -o bench/loops.png

The rate of a case is its iteration count (loop length ** depth) over its fastest round
("min" in pytest-benchmark's stats: the least disturbed by other processes); the median is in
the table too.  Also prints the table as Markdown (``--markdown FILE`` writes it).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

LANGS = ("Python", "Lua", "C")
VARIANT_LABEL = {("Python", "for"): "for ... in range()", ("Python", "while"): "while",
                 ("Lua", "for"): "numeric for", ("Lua", "while"): "while",
                 ("Lua", "repeat"): "repeat ... until",
                 ("C", "for"): "for", ("C", "while"): "while", ("C", "dowhile"): "do ... while",
                 ("C", "for-O3"): "for, -O3 (vectorized)"}


def load_rows(paths):
    rows = []
    for path in paths:
        data = json.loads(Path(path).read_text())
        for b in data.get("benchmarks", []):
            info = b.get("extra_info", {})
            if info.get("experiment") != "loops":
                continue
            st = b["stats"]
            rows.append(dict(language=info["language"], variant=info["variant"],
                             depth=int(info["depth"]), length=int(info["length"]),
                             iterations=int(info["iterations"]), min_s=st["min"],
                             median_s=st["median"], rounds=st["rounds"],
                             rate=info["iterations"] / st["min"],
                             rate_median=info["iterations"] / st["median"]))
    order = {lang: i for i, lang in enumerate(LANGS)}
    vorder = {key: i for i, key in enumerate(VARIANT_LABEL)}
    rows.sort(key=lambda r: (order.get(r["language"], 9),
                             vorder.get((r["language"], r["variant"]), 99), r["depth"]))
    return rows


def markdown(rows) -> str:
    out = ["| language | loop | depth | length | iterations | best s | median s | "
           "Miter/s (best) | Miter/s (median) |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        label = VARIANT_LABEL.get((r["language"], r["variant"]), r["variant"])
        out.append(f"| {r['language']} | {label} | {r['depth']} | {r['length']} | "
                   f"{r['iterations']:.3e} | {r['min_s']:.3f} | {r['median_s']:.3f} | "
                   f"{r['rate'] / 1e6:.1f} | {r['rate_median'] / 1e6:.1f} |")
    return "\n".join(out) + "\n"


def pivot(rows) -> str:
    """Iterations per second (best round), one row per loop variant, one column per depth."""
    depths = sorted({r["depth"] for r in rows})
    out = ["| language | loop | iterations | " + " | ".join(f"depth {d}" for d in depths) + " |",
           "|---|---|---:|" + "---:|" * len(depths)]
    seen = []
    for r in rows:
        key = (r["language"], r["variant"])
        if key not in seen:
            seen.append(key)
    for lang, variant in seen:
        mine = {r["depth"]: r for r in rows if (r["language"], r["variant"]) == (lang, variant)}
        total = _pow10(max(r["iterations"] for r in mine.values()))
        cells = [_short(mine[d]["rate"]) if d in mine else "" for d in depths]
        out.append(f"| {lang} | {VARIANT_LABEL.get((lang, variant), variant)} | ~{total} | "
                   + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot(rows, output, title_note=""):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = [lang for lang in LANGS if any(r["language"] == lang for r in rows)]
    fig, axes = plt.subplots(1, len(langs), figsize=(4.2 * len(langs), 4.2), sharey=True,
                             squeeze=False)
    for ax, lang in zip(axes[0], langs):
        mine = [r for r in rows if r["language"] == lang]
        variants = list(dict.fromkeys(r["variant"] for r in mine))
        depths = sorted({r["depth"] for r in mine})
        width = 0.8 / len(variants)
        for k, variant in enumerate(variants):
            xs, ys = [], []
            for r in mine:
                if r["variant"] == variant:
                    xs.append(depths.index(r["depth"]) + (k - (len(variants) - 1) / 2) * width)
                    ys.append(r["rate"])
            bars = ax.bar(xs, ys, width, label=VARIANT_LABEL.get((lang, variant), variant))
            for bar, y in zip(bars, ys):
                ax.text(bar.get_x() + bar.get_width() / 2, y * 1.08, _short(y), ha="center",
                        va="bottom", fontsize=6.5, rotation=90)
        total = max(r["iterations"] for r in mine)
        ax.set_title(f"{lang} (~{_pow10(total)} iterations)")
        ax.set_xticks(range(len(depths)), [str(d) for d in depths])
        ax.set_xlabel("loop nest depth")
        ax.set_yscale("log")
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7.5, loc="upper left", ncol=2, frameon=False)
    axes[0][0].set_ylabel("iterations per second (best round)")
    lo = min(r["rate"] for r in rows)
    hi = max(r["rate"] for r in rows)
    axes[0][0].set_ylim(10 ** math.floor(math.log10(lo)), hi * 40)
    fig.suptitle("Loop nests, after Figs. 17-19 of Luszczek et al. 2016" + title_note,
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    return output


def _short(rate):
    """Iterations per second, short: 1.22G, 733M, 12.4M."""
    if rate >= 1e9:
        return f"{rate / 1e9:.2f}G"
    return f"{rate / 1e6:.0f}M" if rate >= 1e8 else f"{rate / 1e6:.1f}M"


def _pow10(n):
    e = round(math.log10(n))
    return f"10^{e}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", help="pytest-benchmark JSON file(s)")
    ap.add_argument("-o", "--output", default=str(Path(__file__).with_name("loops.png")))
    ap.add_argument("--markdown", help="also write the table here")
    ap.add_argument("--note", default="", help="text appended to the title")
    args = ap.parse_args(argv)
    rows = load_rows(args.json)
    if not rows:
        sys.exit("no loop benchmarks (extra_info experiment=loops) in " + ", ".join(args.json))
    table = pivot(rows) + "\n" + markdown(rows)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    print("wrote", plot(rows, args.output, args.note))


if __name__ == "__main__":
    main()
