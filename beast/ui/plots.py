"""Pictures of a space's pruning (``beast stats --plot``), drawn with matplotlib (the optional
``[plot]`` extra): the pruning funnel, the rejections per condition, and the distribution of each
iterator's values among the survivors."""
from __future__ import annotations

import math
import os

from ..errors import BeastError

PLOT_FORMATS = ("png", "svg")
HINT = "pip install 'beast-autotune[plot]'"


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BeastError("plots need matplotlib, which is not installed", hint=HINT) from None
    return plt


def check_plot(path: str) -> str:
    """The format of ``path`` (png or svg), once matplotlib is known to be there (else BeastError)."""
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in PLOT_FORMATS:
        raise BeastError(f"cannot tell the picture format of {path!r}", hint="use a .png or .svg file name")
    _pyplot()
    return fmt


def _literal(text) -> str:
    """``text`` (a file, space or parameter name: the user's) as matplotlib shows it literally: a
    byte of a file name that is not UTF-8 as \\xff, a control character escaped, and ``$`` that
    would start mathtext escaped."""
    text = os.fsdecode(text)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:      # a surrogate that stands for no byte
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return text.replace("$", r"\$")


def _title(stats) -> str:
    """The title of ``beast stats --plot``: the space's name, literally, and its survivors."""
    return f"beast stats: {_literal(stats.space)} ({stats.survivors:,} survivors)"


def plot_stats(stats, path: str, title: str | None = None) -> str:
    """Draw ``stats`` (a :class:`beast.explore.stats.Stats`) into ``path`` (.png or .svg); returns it.
    Written to a temporary file first, then renamed. A ``title`` is drawn as matplotlib draws text
    (mathtext between ``$`` signs); the default one and the labels show the names literally."""
    fmt = check_plot(path)
    plt = _pyplot()
    names = [n for n, d in stats.values.items() if d]
    ncols = 5
    nrows = 2 + math.ceil(len(names) / ncols) if names else 2
    fig = plt.figure(figsize=(15, 4.2 + 2.1 * (nrows - 2) + 3.6), constrained_layout=True)
    grid = fig.add_gridspec(nrows, ncols, height_ratios=[2, 1.7] + [1] * (nrows - 2))
    fig.suptitle(title or _title(stats), fontsize=13)

    # the funnel: cartesian -> per level the values tried and passed -> survivors, log scale
    ax = fig.add_subplot(grid[0, :])
    labels = (["cartesian"] if stats.cartesian is not None else []) + \
        [f"{_literal(lv.iterator)}\n(depth {lv.depth})" for lv in stats.levels] + ["survivors"]
    xs = list(range(len(labels)))
    first = 1 if stats.cartesian is not None else 0
    if stats.cartesian is not None:
        ax.bar([0], [float(max(stats.cartesian, 0.8))], color="#888888", width=0.8)
    lx = [x for x in xs[first:first + len(stats.levels)]]
    ax.bar([x - 0.2 for x in lx], [max(lv.tried, 0.8) for lv in stats.levels], width=0.4,
           color="#4477aa", label="tried (values the loop bound)")
    ax.bar([x + 0.2 for x in lx], [max(lv.passed, 0.8) for lv in stats.levels], width=0.4,
           color="#66ccee", label="passed (went on past the checks at that depth)")
    ax.bar([xs[-1]], [max(stats.survivors, 0.8)], color="#228833", width=0.8)
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, fontsize=8, rotation=30, ha="right")
    ax.set_ylabel("partial configurations")
    ax.legend(fontsize=8, loc="upper right")
    note = "" if stats.cartesian is not None else " (cartesian size too large to count exactly)"
    ax.set_title("pruning funnel: values tried and passed at each loop level, log scale" + note, fontsize=10)

    # rejections per condition
    ax = fig.add_subplot(grid[1, :])
    conds = list(stats.conditions.items())
    kind_color = {"hard": "#cc3311", "soft": "#ee7733", "correctness": "#aa3377"}
    ax.barh(range(len(conds)), [max(c.rejected, 0.8) for _, c in conds],
            color=[kind_color.get(c.kind, "#777777") for _, c in conds])
    ax.set_yticks(range(len(conds)))
    ax.set_yticklabels([f"{_literal(n)} (depth {c.depth}, {c.kind or 'condition'})" for n, c in conds],
                       fontsize=8)
    ax.invert_yaxis()
    if any(c.rejected > 0 for _, c in conds):
        ax.set_xscale("log")
    ax.set_xlabel("partial configurations rejected")
    ax.set_title("rejections per condition (each cuts one partial configuration at its depth)", fontsize=10)

    # each iterator's values among the survivors
    for i, name in enumerate(names):
        ax = fig.add_subplot(grid[2 + i // ncols, i % ncols])
        d = stats.values[name]
        xs, ns = list(d), list(d.values())
        if len(xs) <= 24:
            ax.bar(range(len(xs)), ns, color="#228833")
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([str(x) for x in xs], fontsize=6, rotation=90 if len(xs) > 8 else 0)
        else:
            ax.bar(xs, ns, width=max(1, (max(xs) - min(xs)) / 200), color="#228833")
            ax.tick_params(labelsize=6)
        ax.set_title(f"{_literal(name)}: survivors per value", fontsize=9)
        ax.tick_params(axis="y", labelsize=6)

    from .output import output_file
    try:
        with output_file(path, "." + fmt) as tmp:
            fig.savefig(tmp, format=fmt, dpi=80)
    finally:
        plt.close(fig)
    return path
