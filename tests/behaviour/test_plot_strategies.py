"""bench/plot_strategies.py: the stored strategy results give the committed tables, and the
resampled certainty of a point says behind only where the repeats are."""
import os
import sys

import numpy as np
from conftest import TESTS as TESTS_DIR

ROOT = os.path.dirname(TESTS_DIR)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import plot_strategies as ps  # noqa: E402


def test_the_stored_results_give_the_committed_tables():
    results = ps.load(os.path.join(ROOT, "bench", "results", "strategies"))
    with open(os.path.join(ROOT, "bench", "results", "strategies.md")) as fh:
        assert ps.table(results) + "\n" == fh.read()


def entry(curve_rows, size=1000):
    return {"curves": np.asarray(curve_rows, dtype=float).tolist(), "size": size}


def curves(levels, length=60):
    """One best-so-far curve per level: the level from the first evaluation on."""
    return [[lv] * length for lv in levels]


def test_chance_behind_is_certain_only_where_every_repeat_says_so():
    rng = np.random.default_rng(0)
    low = curves(0.90 + 0.01 * rng.random(20))
    high = curves(0.97 + 0.01 * rng.random(20))
    behind = ps.chance_behind({ps.DEFAULT: entry(low), "kt:a": entry(high), "kt:b": entry(low)})
    assert behind[:3] == [1.0, 1.0, 1.0]          # below 95 % at every budget: never reaches it
    assert behind[3] == 1.0                         # never (inf) against evaluation 1
    ahead = ps.chance_behind({ps.DEFAULT: entry(high), "kt:a": entry(low)})
    assert ahead == [0.0, 0.0, 0.0, 0.0]
    # the same repeats on both sides: behind in about half the draws, no certainty either way
    same = ps.chance_behind({ps.DEFAULT: entry(low), "kt:a": entry(low)})
    assert all(0.3 < b < 0.7 for b in same[:3])
    # the same repeats under another name: the pick of the best among equals is no certainty
    many = {ps.DEFAULT: entry(low), **{f"kt:{k}": entry(low) for k in range(8)}}
    assert all(0.3 < b < 0.7 for b in ps.chance_behind(many)[:3])


def test_the_single_strategy_bar_is_against_each_strategy_on_its_own():
    rng = np.random.default_rng(1)
    low, high = curves(0.90 + 0.01 * rng.random(20)), curves(0.97 + 0.01 * rng.random(20))
    each = ps.chance_behind_each({ps.DEFAULT: entry(high), "kt:a": entry(low), "kt:b": entry(high)})
    assert [p["kt:a"] for p in each] == [0.0] * 4
    assert all(0.2 < p["kt:b"] < 0.8 for p in each[:3])      # the same repeats: no certainty
    text = ps.single_bar({"f": {ps.DEFAULT: dict(entry(low), role="tuning"), "kt:a": dict(entry(high), role="tuning")}})
    assert "| f (tuning) | **100% (a)** | **100% (a)** | **100% (a)** |" in text and "at 4 of 4 points" in text
