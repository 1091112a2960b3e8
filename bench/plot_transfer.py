"""The transfer table and plot: beast's default with a prior from the other GPUs (leave one GPU
out), without one, with the prior shuffled, and Kernel Tuner's best.

    python bench/bench_strategies.py --prior loo          # bench/results/transfer/STEM.beast.json
    python bench/bench_strategies.py --prior shuffled
    python bench/plot_transfer.py                         # bench/results/transfer.md and bench/transfer.png

Without a prior: ``portfolio`` of bench/results/strategies (the same seeds, 1000-1019); Kernel
Tuner's best per point is the best of its 16 strategies there.
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from plot_strategies import (DEFAULT, PERCENTS, against_best, chance_behind_each, evaluations,  # noqa: E402
                             fmt_evals, kt_metrics, load, metrics, per_repeat, save_figure, write_text)

WITH, SHUFFLED = "beast:portfolio+loo", "beast:portfolio+shuffled"


def merged(strategies_dir, transfer_dir):
    """stem -> entries of both directories (only the files that have a prior)."""
    base, extra = load(strategies_dir), load(transfer_dir)
    return {stem: {**base.get(stem, {}), **entries} for stem, entries in extra.items()}


def versus(entries, mine, other, draws=2000, seed=0):
    """Per point, the share of bootstrap draws in which ``mine`` is behind ``other``."""
    rng = np.random.default_rng(seed)
    a, b = per_repeat(entries[mine]), per_repeat(entries[other])
    out = []
    for j in range(len(PERCENTS) + 1):
        fewest = j == len(PERCENTS)
        draw = []
        for v in (a[j], b[j]):
            pick = v[rng.integers(0, len(v), size=(draws, len(v)))]
            draw.append(np.median(pick, axis=1) if fewest else pick.mean(axis=1))
        out.append(float((draw[0] > draw[1]).mean() if fewest else (draw[0] < draw[1]).mean()))
    return out


def table(results) -> str:
    head = ["data (role; prior)"] + [f"{p} %: prior / none / shuffled / KT best" for p in PERCENTS] \
        + ["evals to 95 % (median): prior / none / shuffled / KT best"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sure = []
    for stem, entries in results.items():
        if WITH not in entries or DEFAULT not in entries:
            continue
        role = entries[DEFAULT]["role"]
        prior = ", ".join(p.split("_", 1)[1] if not p.startswith("kt_") else p.split("_", 2)[2]
                          for p in entries[WITH].get("prior", []))
        m = {k: metrics(entries[k]) for k in (WITH, DEFAULT, SHUFFLED) if k in entries}
        kt = kt_metrics(entries)
        best = against_best(m[WITH], kt) if kt else None
        cells = [f"{stem} ({role}; {prior})"]
        for j in range(len(PERCENTS) + 1):
            fewest = j == len(PERCENTS)
            show = fmt_evals if fewest else (lambda x: f"{x:.4f}")
            vals = [show(m[k][j]) if k in m else "—" for k in (WITH, DEFAULT, SHUFFLED)]
            vals.append(f"{show(best[j][1])} ({best[j][0][3:]})" if best else "—")
            cells.append(" / ".join(vals))
        lines.append("| " + " | ".join(cells) + " |")
        behind = versus(entries, WITH, DEFAULT)
        ahead = versus(entries, DEFAULT, WITH)
        shuffled = versus(entries, SHUFFLED, DEFAULT) if SHUFFLED in entries else None
        single = [max(p.values()) for p in chance_behind_each(entries, WITH)] if kt else None
        sure.append((stem, role, ahead, behind, shuffled, single))
    lines += ["", "How sure (2,000 bootstrap draws of the repeats; per point 1 %, 2 %, 5 %, evaluations to 95 %): "
              "the share of draws in which the run with the prior is ahead of the run without / behind it; "
              "the shuffled prior behind the run without; the largest share in which the run with the prior "
              "is behind a single Kernel Tuner strategy.", "",
              "| data | prior ahead of none | prior behind none | shuffled behind none | prior behind a single KT strategy |",
              "|---|---|---|---|---|"]
    pct = lambda v: " ".join(f"{x:.0%}" for x in v) if v is not None else "—"
    for stem, role, ahead, behind, shuffled, single in sure:
        lines.append(f"| {stem} ({role}) | {pct(ahead)} | {pct(behind)} | {pct(shuffled)} | {pct(single)} |")
    return "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = {k: v for k, v in results.items() if WITH in v}
    cols = 4
    rows = -(-len(shown) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax in axes.ravel()[len(shown):]:
        ax.axis("off")
    for ax, (stem, entries) in zip(axes.ravel(), shown.items()):
        size = entries[WITH]["size"]
        kt = kt_metrics(entries)
        lines = [(WITH, "beast portfolio, prior: other GPUs", "-", 2.2), (DEFAULT, "beast portfolio, no prior", "-", 1.4),
                 (SHUFFLED, "beast portfolio, shuffled prior", ":", 1.4)]
        if kt:
            lines.append((max(kt, key=lambda k: kt[k][0]), None, "--", 1.2))
        lows = []
        for key, label, ls, lw in lines:
            if key not in entries:
                continue
            mean = np.array(entries[key]["curves"]).mean(axis=0)
            lows.append(mean[min(len(mean), evaluations(size, 0.5)) - 1])
            ax.plot(np.arange(1, len(mean) + 1), mean, ls=ls, lw=lw,
                    label=label or f"Kernel Tuner {key[3:]} (best at 1 %)")
        for p in PERCENTS:
            ax.axvline(size * p / 100, color="grey", lw=0.6, ls=":")
        ax.axhline(0.95, color="grey", lw=0.6)
        ax.set_xscale("log")
        ax.set_ylim(max(0.3, np.floor(min(lows) * 20) / 20), 1.005)
        ax.set_xlabel("evaluations (dotted: 1, 2, 5 % of the space)", fontsize=8)
        ax.set_ylabel("optimum / best found (mean of 20)", fontsize=8)
        ax.set_title(f"{stem} ({entries[WITH]['role']}, prior: {', '.join(entries[WITH].get('prior', []))})",
                     fontsize=8)
        ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)


def main(argv=None):
    results = merged(os.path.join(HERE, "results", "strategies"), os.path.join(HERE, "results", "transfer"))
    text = table(results)
    write_text(os.path.join(HERE, "results", "transfer.md"), text)
    print(text)
    plot(results, os.path.join(HERE, "transfer.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
