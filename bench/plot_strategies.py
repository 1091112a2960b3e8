"""The tables and the plot of bench/bench_strategies.py's results.

    python bench/plot_strategies.py [DIR]     # default: bench/results/strategies

Writes ``bench/results/strategies.md``: first beast's default strategy against the best Kernel
Tuner strategy at each budget of every data file (tuning files, then held-out ones), then one
table per file with every strategy (the fraction of the optimum reached at budgets of 1, 2 and
5 % of the space, mean +- std over repeats, and the evaluations it took to reach 95 % of the
optimum: median with quartiles, mean +- std, how many repeats reached it); and
``bench/strategies.png`` (mean best-so-far fraction of the optimum against evaluations, one
panel per file).
"""
from __future__ import annotations

import glob
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
PERCENTS = (1, 2, 5)
DEFAULT = "beast:portfolio"


def load(directory):
    """stem -> {"tool:strategy": entry}, in the order of bench_strategies.FILES."""
    from bench.bench_strategies import FILES
    merged: dict = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        stem = os.path.basename(path).split(".")[0]
        with open(path) as fh:
            for strategy, entry in json.load(fh).items():
                merged.setdefault(stem, {})[f"{entry['tool']}:{strategy}"] = entry
    order = list(FILES)
    return {k: merged[k] for k in sorted(merged, key=lambda k: (order.index(k) if k in order else 99, k))}


def evaluations(size, p):
    """The budget of ``p`` % of a space of ``size`` configurations (at least 1)."""
    return max(1, round(size * p / 100))


def bold(text, win):
    return f"**{text}**" if win else text


def evals_to(curves, target=0.95):
    """Evaluations each repeat took to reach ``target`` of the optimum (inf: never)."""
    hit = curves >= target - 1e-12
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, np.inf)


def per_repeat(entry) -> np.ndarray:
    """(4, repeats): each repeat's fraction of the optimum at 1, 2, 5 % and evaluations to 95 %."""
    c = np.array(entry["curves"])
    at = [c[:, min(evaluations(entry["size"], p), c.shape[1]) - 1] for p in PERCENTS]
    return np.vstack(at + [evals_to(c)])


def metrics(entry):
    """(mean fraction at 1, 2, 5 % of the space, median evaluations to 95 %) of one entry."""
    v = per_repeat(entry)
    return [float(x.mean()) for x in v[:-1]] + [float(np.median(v[-1]))]


def row(key, entry):
    c = np.array(entry["curves"])
    v = per_repeat(entry)
    cells = [key.replace(":", " "), str(c.shape[0])]
    cells += [f"{x.mean():.4f} ± {x.std():.4f}" for x in v[:-1]]
    ev = v[-1]
    reached = np.isfinite(ev)
    med = np.median(ev)
    q1, q3 = np.percentile(np.where(reached, ev, c.shape[1] + 1), [25, 75])
    quart = f" [{q1:g}–{q3:g}]" if reached.all() else ""
    cells.append((f"{med:g}" if np.isfinite(med) else f">{c.shape[1]}") + quart)
    cells.append(f"{ev[reached].mean():.1f} ± {ev[reached].std():.1f}" if reached.all() else
                 (f"≥{np.where(reached, ev, c.shape[1]).mean():.1f}" if reached.any() else "—"))
    cells.append(f"{int(reached.sum())}/{len(ev)}")
    cells.append(f"{entry['seconds'] / c.shape[0]:.1f}")
    return cells


def against_best(mine, kt):
    """Per metric of ``mine`` (:func:`metrics`), against ``kt`` ({name: metrics}): (the name of
    the Kernel Tuner strategy best at it, its value, whether ``mine`` is at least as good), the
    highest fraction of the optimum at each budget, then the fewest evaluations to 95 %."""
    out = []
    for j in range(len(PERCENTS) + 1):
        fewest = j == len(PERCENTS)
        name, best = (min if fewest else max)(kt.items(), key=lambda kv: kv[1][j])
        out.append((name, best[j], mine[j] <= best[j] if fewest else mine[j] >= best[j]))
    return out


def chance_behind(entries, draws=2000, seed=0) -> list[float]:
    """Per point (1, 2, 5 %, evaluations to 95 %), how often beast's default is behind the
    Kernel Tuner strategy best there (as the summary names it) when the repeats of both are
    resampled with replacement (bootstrap, ``draws`` times).  That strategy was picked as the
    best of 16 on these very repeats, which flatters it: a point behind in most draws may still
    be a tie with a lucky pick, while one the default wins in most draws is won."""
    rng = np.random.default_rng(seed)
    kt = kt_metrics(entries)
    repeats = {DEFAULT: per_repeat(entries[DEFAULT])}
    out = []
    for j, (name, _, _) in enumerate(against_best(metrics(entries[DEFAULT]), kt)):
        fewest = j == len(PERCENTS)
        draw = []
        if name not in repeats:
            repeats[name] = per_repeat(entries[name])
        for key in (DEFAULT, name):
            v = repeats[key][j]
            pick = v[rng.integers(0, len(v), size=(draws, len(v)))]
            draw.append(np.median(pick, axis=1) if fewest else pick.mean(axis=1))
        out.append(float((draw[0] > draw[1]).mean() if fewest else (draw[0] < draw[1]).mean()))
    return out


def chance_behind_each(entries, mine=DEFAULT, draws=2000, seed=0) -> list[dict]:
    """Per point (1, 2, 5 %, evaluations to 95 %), for every single Kernel Tuner strategy of the
    file, the share of ``draws`` bootstrap draws (each side's repeats resampled with replacement)
    in which ``mine`` is behind it: the bar "never surely behind any single strategy" (no pick of
    the best among 16 flatters the other side here)."""
    ours = per_repeat(entries[mine])
    out: list[dict] = [{} for _ in range(len(PERCENTS) + 1)]
    for name in sorted(k for k in entries if k.startswith("kt:")):
        theirs = per_repeat(entries[name])
        rng = np.random.default_rng(seed)
        for j in range(len(PERCENTS) + 1):
            fewest = j == len(PERCENTS)
            draw = []
            for v in (ours[j], theirs[j]):
                pick = v[rng.integers(0, len(v), size=(draws, len(v)))]
                draw.append(np.median(pick, axis=1) if fewest else pick.mean(axis=1))
            out[j][name] = float((draw[0] > draw[1]).mean() if fewest else (draw[0] < draw[1]).mean())
    return out


def single_bar(results, mine=DEFAULT) -> str:
    """The bar of issue 41 per file: at each point the single Kernel Tuner strategy ``mine`` is
    most likely behind and that share of draws; bold where it is surely behind (> 95 %)."""
    points = ["1 %", "2 %", "5 %", "evals to 95 %"]
    lines = ["| data (role) | " + " | ".join(points) + " | surely behind |", "|---|" + "---|" * (len(points) + 1)]
    totals: dict = {}
    for stem, entries in results.items():
        if mine not in entries or not kt_metrics(entries):
            continue
        role = entries[mine]["role"]
        cells, sure = [], 0
        for p in chance_behind_each(entries, mine):
            name, share = max(p.items(), key=lambda kv: (kv[1], kv[0]))
            many = sum(v > 0.95 for v in p.values())
            text = f"{share:.0%} ({name[3:]}{f'; {many} strategies' if many > 1 else ''})" if share > 0 else "0%"
            cells.append(f"**{text}**" if share > 0.95 else text)
            sure += share > 0.95
        t = totals.setdefault(role, [0, 0])
        t[0] += sure
        t[1] += len(points)
        lines.append(f"| {stem} ({role}) | " + " | ".join(cells) + f" | {sure} |")
    lines.append("")
    lines.append("Surely behind a single Kernel Tuner strategy (in over 95 % of 2,000 draws) at "
                 + ", ".join(f"{a} of {n} points on the {role} files" for role, (a, n) in totals.items())
                 + " (each cell: the largest share of draws in which it is behind one strategy, and that strategy).")
    return "\n".join(lines)


def certainty(results) -> str:
    """Each point of the summary table sorted by how sure the resampled repeats are of it."""
    points = ["1 %", "2 %", "5 %", "evals to 95 %"]
    lines = ["| data (role) | sure ahead or even (behind in < 5 % of draws) | within the noise | sure behind (> 95 %) |",
             "|---|---|---|---|"]
    totals: dict = {}
    for stem, entries in results.items():
        if DEFAULT not in entries or not kt_metrics(entries):
            continue
        role = entries[DEFAULT]["role"]
        cells = [[], [], []]
        for name, p in zip(points, chance_behind(entries)):
            k = 0 if p < 0.05 else (2 if p > 0.95 else 1)
            cells[k].append(name if k == 0 else f"{name} ({p:.0%})")
        t = totals.setdefault(role, [0, 0, 0])
        for k in range(3):
            t[k] += len(cells[k])
        lines.append(f"| {stem} ({role}) | " + " | ".join(", ".join(c) or "—" for c in cells) + " |")
    lines.append("")
    lines.append("; ".join(f"{role} files: {a} sure ahead or even, {m} within the noise, {b} sure behind"
                           for role, (a, m, b) in totals.items())
                 + " (in parentheses: the share of 2,000 draws in which beast's default is behind).")
    return "\n".join(lines)


def kt_metrics(entries) -> dict:
    """{"kt:NAME": metrics} of a file's Kernel Tuner strategies."""
    return {k: metrics(e) for k, e in entries.items() if k.startswith("kt:")}


def fmt_evals(x):
    return f"{x:g}" if np.isfinite(x) else "never"


def summary(results):
    """beast's default against the best Kernel Tuner strategy at each budget, per file."""
    head = ["data (role)", "budget 1 / 2 / 5 %"] + [f"{p} %: beast / KT best" for p in PERCENTS] \
        + ["evals to 95 % (median): beast / KT best", "ahead"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    totals: dict = {}
    for stem, entries in results.items():
        kt = kt_metrics(entries)
        if DEFAULT not in entries or not kt:
            continue
        entry = entries[DEFAULT]
        mine = metrics(entry)
        size = entry["size"]
        cells = [f"{stem} ({entry['role']})",
                 " / ".join(str(evaluations(size, p)) for p in PERCENTS)]
        versus = against_best(mine, kt)
        for j, (name, best, win) in enumerate(versus[:-1]):
            cells.append(f"{bold(f'{mine[j]:.4f}', win)} / {best:.4f} ({name[3:]})")
        name, best, win = versus[-1]
        cells.append(f"{bold(fmt_evals(mine[-1]), win)} / {fmt_evals(best)} ({name[3:]})")
        ahead = sum(win for _, _, win in versus)
        cells.append(f"{ahead}/4")
        t = totals.setdefault(entry["role"], [0, 0])
        t[0] += ahead
        t[1] += 4
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Not behind at " + ", ".join(f"{a} of {n} points on the {role} files" for role, (a, n) in totals.items())
                 + " (bold: beast's default is at least as good as every Kernel Tuner strategy there).")
    return "\n".join(lines)


def each_against_best(results) -> str:
    """For scale: every strategy, beast's and Kernel Tuner's, against the best of the *other*
    Kernel Tuner strategies at each point (the bar the summary sets beast's default), counted
    over the files that have both tools' results."""
    counts: dict = {}
    points: dict = {}
    for entries in results.values():
        kt = kt_metrics(entries)
        if not kt or not any(k.startswith("beast:") for k in entries):
            continue
        role = next(iter(entries.values()))["role"]
        points[role] = points.get(role, 0) + len(PERCENTS) + 1
        for key, entry in entries.items():
            others = {k: m for k, m in kt.items() if k != key}
            wins = sum(w for _, _, w in against_best(kt.get(key) or metrics(entry), others))
            per_role = counts.setdefault(key, {})
            per_role[role] = per_role.get(role, 0) + wins
    roles = list(points)
    head = ["strategy"] + [f"not behind, {role} files (of {points[role]})" for role in roles] + ["all"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total = lambda k: sum(counts[k].values())
    for key in sorted(counts, key=lambda k: (-total(k), k)):
        lines.append("| " + " | ".join([key.replace(":", " ")] + [str(counts[key].get(r, 0)) for r in roles]
                                       + [f"{total(key)} of {sum(points.values())}"]) + " |")
    return "\n".join(lines)


def default_against_each(results) -> str:
    """beast's default against each Kernel Tuner strategy on its own: at how many points it is
    not behind that one strategy, and the files of the points where it is."""
    wins: dict = {}
    behind: dict = {}
    points = 0
    for stem, entries in results.items():
        if DEFAULT not in entries:
            continue
        mine = metrics(entries[DEFAULT])
        kt = kt_metrics(entries)
        if not kt:
            continue
        points += len(PERCENTS) + 1
        for key, theirs in kt.items():
            got = [w for _, _, w in against_best(mine, {key: theirs})]
            wins[key] = wins.get(key, 0) + sum(got)
            if not all(got):
                behind.setdefault(key, []).append(f"{stem} ({len(got) - sum(got)})")
    lines = ["| Kernel Tuner strategy | beast's default not behind it | behind it on (points) |", "|---|---|---|"]
    for key in sorted(wins, key=lambda k: (wins[k], k)):
        lines.append(f"| {key[3:]} | {wins[key]} of {points} | {', '.join(behind.get(key, [])) or '—'} |")
    return "\n".join(lines)


def table(results) -> str:
    lines = ["### beast's default (`portfolio`) against Kernel Tuner's best at each budget", "",
             summary(results), "",
             "How sure each point is: the repeats of beast's default and of the Kernel Tuner strategy best "
             "at that point resampled with replacement (bootstrap).", "",
             certainty(results), "",
             "The bar: never surely behind any *single* Kernel Tuner strategy. Per point, the single strategy "
             "beast's default is most often behind in 2,000 bootstrap draws of both sides' repeats.", "",
             single_bar(results), "",
             "### For scale: each strategy against the best of the other Kernel Tuner strategies", "",
             "The same four points per file (1, 2, 5 % and evaluations to 95 %); a strategy is not behind "
             "at a point when no *other* Kernel Tuner strategy is better there.", "",
             each_against_best(results), "",
             "And beast's default against each Kernel Tuner strategy on its own:", "",
             default_against_each(results), ""]
    for stem, entries in results.items():
        any_entry = next(iter(entries.values()))
        size, budget = any_entry["size"], any_entry["budget"]
        lines.append(f"**{stem}** ({any_entry['role']}; spaces/real/{any_entry['space']}.py, {size} configurations; "
                     f"budget {budget} = 5 % of the space)\n")
        head = ["strategy", "repeats"] + [f"{p} % ({evaluations(size, p)})" for p in PERCENTS] \
            + ["evals to 95 %: median [quartiles]", "mean ± std", "reached", "s / repeat"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        keys = sorted(entries, key=lambda k: (not k.startswith("beast"), -metrics(entries[k])[2], k))
        lines.extend("| " + " | ".join(row(k, entries[k])) + " |" for k in keys)
        lines.append("")
    return "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = 4
    rows = -(-len(results) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax in axes.ravel()[len(results):]:
        ax.axis("off")
    for ax, (stem, entries) in zip(axes.ravel(), results.items()):
        any_entry = next(iter(entries.values()))
        size = any_entry["size"]
        kt = kt_metrics(entries)
        shown = {k for k in entries if k.startswith("beast:")}
        for j in range(len(PERCENTS)):          # Kernel Tuner's best at each budget
            if kt:
                shown.add(max(kt, key=lambda k: kt[k][j]))
        if kt:
            shown.add(min(kt, key=lambda k: kt[k][3]))
        lows = []
        for key in sorted(shown):
            c = np.array(entries[key]["curves"])
            mean = c.mean(axis=0)
            lows.append(mean[min(len(mean), max(1, round(size * 0.005))) - 1])
            tool = key.split(":")[0]
            ax.plot(np.arange(1, c.shape[1] + 1), mean, ls="-" if tool == "beast" else "--",
                    lw=2.2 if key == DEFAULT else (1.4 if tool == "beast" else 1.2), label=key.replace(":", " "))
        for p in PERCENTS:
            ax.axvline(size * p / 100, color="grey", lw=0.6, ls=":")
        ax.axhline(0.95, color="grey", lw=0.6)
        ax.set_xscale("log")
        ax.set_ylim(max(0.5, np.floor(min(lows) * 20) / 20), 1.005)
        ax.set_xlabel("evaluations (dotted: 1, 2, 5 % of the space)", fontsize=8)
        ax.set_ylabel("optimum / best found (mean)", fontsize=8)
        ax.set_title(f"{stem} ({any_entry['role']}, {size})", fontsize=9)
        ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)


def save_figure(fig, path):
    """``fig`` written to ``path`` whole (a temporary file, then renamed)."""
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=90)
    os.replace(tmp, path)


def write_text(path, text):
    """``text`` written to ``path`` whole (a temporary file, then renamed)."""
    with open(path + ".tmp", "w") as fh:
        fh.write(text + "\n")
    os.replace(path + ".tmp", path)


def main(argv=None):
    directory = (argv[0] if argv else None) or os.path.join(HERE, "results", "strategies")
    results = load(directory)
    text = table(results)
    write_text(os.path.join(HERE, "results", "strategies.md"), text)
    print(text)
    plot(results, os.path.join(HERE, "strategies.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
