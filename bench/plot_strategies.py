"""The table and the plot of bench/bench_strategies.py's results.

    python bench/plot_strategies.py [RESULTS.json ...]     # default: bench/results/strategies*.json

Writes ``bench/results/strategies.md`` (per data set and strategy: the fraction of the optimum
reached at budgets of 1, 2, 5 and 10 % of the space, mean +- std over repeats, and the
evaluations it took to reach 95 % of the optimum: median with quartiles, mean +- std) and ``bench/strategies.png`` (mean
best-so-far fraction of the optimum against evaluations).
"""
from __future__ import annotations

import glob
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PERCENTS = (1, 2, 5, 10)


def load(paths):
    merged: dict = {}
    for path in paths:
        with open(path) as fh:
            for name, entries in json.load(fh).items():
                merged.setdefault(name, {}).update(entries)
    order = ["dedispersion", "convolution"]
    return {k: merged[k] for k in sorted(merged, key=lambda k: (order.index(k) if k in order else 99, k))}


def evals_to(curves, target=0.95):
    hit = curves >= target - 1e-12
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, np.inf)


def table(results) -> str:
    lines = []
    for name, entries in results.items():
        any_entry = next(iter(entries.values()))
        size, budget = any_entry["size"], any_entry["budget"]
        lines.append(f"**{name}** ({size} configurations; budget {budget} = 10 % of the space)\n")
        head = ["strategy", "repeats"] + [f"{p} % ({max(1, round(size * p / 100))})" for p in PERCENTS] \
            + ["evals to 95 %: median [quartiles]", "mean ± std", "reached"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        rows = []
        for key, e in entries.items():
            c = np.array(e["curves"])
            cells = [key.replace(":", " "), str(c.shape[0])]
            for p in PERCENTS:
                b = min(max(1, round(size * p / 100)), c.shape[1])
                cells.append(f"{c[:, b - 1].mean():.4f} ± {c[:, b - 1].std():.4f}")
            ev = evals_to(c)
            reached = np.isfinite(ev)
            med = np.median(ev)
            q1, q3 = np.percentile(np.where(reached, ev, c.shape[1] + 1), [25, 75])
            quart = f" [{q1:g}–{q3:g}]" if reached.all() else ""
            cells.append((f"{med:.0f}" if np.isfinite(med) else f">{c.shape[1]}") + quart)
            cells.append(f"{ev[reached].mean():.1f} ± {ev[reached].std():.1f}" if reached.all() else
                         (f"≥{np.where(reached, ev, c.shape[1]).mean():.1f}" if reached.any() else "—"))
            cells.append(f"{int(reached.sum())}/{len(ev)}")
            rows.append(cells)
        lines.extend("| " + " | ".join(r) + " |" for r in rows)
        lines.append("")
    return "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 4.6), squeeze=False)
    for ax, (name, entries) in zip(axes[0], results.items()):
        size = next(iter(entries.values()))["size"]
        for key, e in sorted(entries.items()):
            c = np.array(e["curves"])
            x = np.arange(1, c.shape[1] + 1)
            tool = key.split(":")[0]
            ax.plot(x, c.mean(axis=0), ls="-" if tool == "beast" else "--", lw=1.8 if tool == "beast" else 1.3,
                    label=key.replace(":", " "))
        for p in (1, 2, 5):
            ax.axvline(size * p / 100, color="grey", lw=0.6, ls=":")
        ax.axhline(0.95, color="grey", lw=0.6)
        ax.set_xscale("log")
        low = min(np.array(e["curves"]).mean(axis=0)[0] for e in entries.values())
        ax.set_ylim(max(0.5, np.floor(low * 20) / 20), 1.005)
        ax.set_xlabel("evaluations (dotted: 1, 2, 5 % of the space)")
        ax.set_ylabel("best time overall / best time found (mean)")
        ax.set_title(f"{name} on RTX A4000 ({size} configurations)")
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def main(argv=None):
    paths = (argv if argv else None) or sorted(glob.glob(os.path.join(HERE, "results", "strategies*.json")))
    results = load(paths)
    text = table(results)
    out = os.path.join(HERE, "results", "strategies.md")
    with open(out + ".tmp", "w") as fh:
        fh.write(text + "\n")
    os.replace(out + ".tmp", out)
    print(text)
    plot(results, os.path.join(HERE, "strategies.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
