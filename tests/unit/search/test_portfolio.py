"""The default search strategy, ``portfolio``: its design, its near moves, its mix and its
results on recorded data (tests/data/benchmark_hub)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import beast
from beast.errors import BeastError
from beast.search.replay import load_recorded, match_space, replay
from beast.search import DEFAULT_STRATEGY, Pool, Portfolio, make_strategy
from beast.search.portfolio import KINDS
from conftest import TESTS as TESTS_DIR

pytest.importorskip("sklearn")

ROOT = Path(TESTS_DIR).parent
DATA = Path(TESTS_DIR) / "data" / "benchmark_hub"


def recorded(space_name, file_name):
    space = beast.load(str(ROOT / "spaces" / "real" / f"{space_name}.py"))
    return match_space(space, load_recorded(DATA / file_name))


@pytest.fixture(scope="module")
def pnpoly():
    return recorded("kt_pnpoly", "kt_pnpoly_RTX_3090.json.gz")


def test_it_is_the_default():
    assert DEFAULT_STRATEGY == "portfolio"
    pool = Pool(["x"], np.arange(10).reshape(-1, 1))
    assert isinstance(make_strategy(DEFAULT_STRATEGY, pool=pool), Portfolio)


def test_near_moves_take_any_value_of_a_switch_and_adjacent_values_of_the_rest(pnpoly):
    pool, _ = pnpoly
    survivors = {tuple(r) for r in pool.X.tolist()}
    for i in np.random.default_rng(2).choice(len(pool), 30, replace=False).tolist():
        row = pool.X[i].tolist()
        expect = set()
        for j, vals in enumerate(pool.values):
            r = int(np.searchsorted(vals, row[j]))
            qs = [q for q in range(len(vals)) if q != r] if len(vals) <= 4 else [r - 1, r + 1]
            for q in qs:
                if 0 <= q < len(vals):
                    cand = list(row)
                    cand[j] = int(vals[q])
                    if tuple(cand) in survivors:
                        expect.add(tuple(cand))
        got = [tuple(pool.X[k].tolist()) for k in pool.near(i)]
        assert len(got) == len(set(got)) and set(got) == expect
        assert set(pool.neighbours(i)) <= set(pool.near(i)) <= set(pool.line(i))
    # between_method has four values, use_method three: every other one is a near move
    names = list(pool.names)
    moved = {names[int(np.flatnonzero(pool.X[k] != pool.X[0])[0])] for k in pool.near(0)}
    assert set(moved) == set(names)


def test_the_design_starts_in_the_middle_then_spreads_out(pnpoly):
    pool, _ = pnpoly
    strategy = make_strategy("portfolio", pool=pool, seed=3)
    first = strategy.ask(1)[0]
    assert pool.centrality[pool.find(first)] == pool.centrality.min()
    design = [first] + strategy.ask(strategy.start - 1)
    idx = [pool.find(c) for c in design]
    U = pool.unit
    # each point is as far from those before it as any configuration (maximin)
    for k in range(1, len(idx)):
        before = np.min([((U - U[i]) ** 2).sum(axis=1) for i in idx[:k]], axis=0)
        assert before[idx[k]] == pytest.approx(before.max()), k
    # the extremes: the longest tile, the widest and narrowest blocks are in the design
    values = {n: {c[n] for c in design} for n in pool.names}
    assert 20 in values["tile_size"] and {32, 992} <= values["block_size_x"]


def test_after_the_design_every_kind_gets_its_share(pnpoly):
    pool, times = pnpoly
    strategy = make_strategy("portfolio", pool=pool, seed=1)
    kinds = []
    real = strategy._one

    def spy(kind, *args):
        got = real(kind, *args)
        if got:
            kinds.append(kind)
        return got
    strategy._one = spy
    for _ in range(220):
        for cfg in strategy.ask(1):
            t = float(times[pool.find(cfg)])
            strategy.tell(cfg, t if np.isfinite(t) else None)
    counts = np.array([kinds.count(k) for k in KINDS])
    share = counts / counts.sum()
    assert counts.sum() == 200
    assert np.allclose(share, strategy.mix, atol=0.08), dict(zip(KINDS, counts))


def test_bad_mix_is_a_clear_error(pnpoly):
    pool, _ = pnpoly
    for mix in [(1, 1, 1), (1, -1, 1, 1), (0, 0, 0, 0)]:
        with pytest.raises(BeastError, match="mix must be 4 non-negative weights"):
            make_strategy("portfolio", pool=pool, mix=mix)


@pytest.mark.parametrize("space_name, file_name", [
    ("kt_pnpoly", "kt_pnpoly_RTX_3090.json.gz"),
    ("convolution", "convolution_A4000.json.gz"),
])
def test_within_five_percent_of_the_optimum_after_five_percent_of_the_space(space_name, file_name):
    # random sampling needs about 5 % of either space to get this close on average
    pool, times = recorded(space_name, file_name)
    res = replay(pool, times, "portfolio", round(0.05 * len(pool)), repeats=3, seed=0)
    assert (res.fractions[:, -1] >= 0.95).all()
    assert np.median((res.fractions >= 0.95).argmax(axis=1) + 1) <= round(0.02 * len(pool))


def test_replay_and_the_ask_tell_loop_agree(pnpoly):
    pool, times = pnpoly
    res = replay(pool, times, "portfolio", 60, repeats=1, seed=7, batch=4)
    strategy = make_strategy("portfolio", pool=pool, seed=7)
    best, curve = np.inf, []
    while len(curve) < 60:
        for cfg in strategy.ask(4):
            t = float(times[pool.find(cfg)])
            strategy.tell(cfg, t if np.isfinite(t) else None)
            best = min(best, t) if np.isfinite(t) else best
            curve.append(float(np.nanmin(times)) / best if np.isfinite(best) else 0.0)
    assert np.allclose(curve, res.fractions[0])


FAST = (1, 0, 0, 1)          # near moves and random draws only: no model to fit


def _grid_pool(n=9):
    xs, ys = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return Pool(["x", "y"], np.column_stack([xs.ravel(), ys.ravel()]))


def _run(strategy, cost, steps):
    """Ask and tell one at a time; the number told before the first proposal that was not the
    design's (one made by ``_one``), None if all were."""
    kinds = []
    real = strategy._one
    strategy._one = lambda kind, *a: kinds.append(kind) or real(kind, *a)
    first = None
    for k in range(steps):
        (cfg,) = strategy.ask(1)
        strategy.tell(cfg, cost(cfg))
        if kinds and first is None:
            first = k
    strategy._one = real
    return first


@pytest.mark.parametrize("seed", [0, 1])
def test_the_design_ends_early_when_its_centre_beats_its_first_points(seed):
    pool = _grid_pool()
    bowl = lambda c: 1.0 + (c["x"] - 4) ** 2 + (c["y"] - 4) ** 2     # the best in the middle
    corner = lambda c: 1.0 + c["x"] + c["y"]                          # the best at an extreme
    short = make_strategy("portfolio", pool=pool, seed=seed, start=20, mix=FAST, design_stop=5)
    assert _run(short, bowl, 30) == 5 and short.design_over()
    full = make_strategy("portfolio", pool=pool, seed=seed, start=20, mix=FAST, design_stop=5)
    assert _run(full, corner, 30) == 20 and not full.design_over()
    never = make_strategy("portfolio", pool=pool, seed=seed, start=20, mix=FAST, design_stop=0)
    assert _run(never, bowl, 30) == 20 and not never.design_over()
    # a resumed run decides the same from the same first results
    again = make_strategy("portfolio", pool=pool, seed=seed, start=20, mix=FAST, design_stop=5)
    again.resume([{"config": pool.config(i), "status": "ok", "ms": c} for i, c in list(short.costs.items())[:5]])
    assert again.design_over()


@pytest.mark.parametrize("reshape", [True, False])
def test_at_a_local_optimum_the_best_takes_other_shapes_of_the_same_product(reshape):
    powers = [1 << k for k in range(9)]
    pool = Pool(["x", "y"], np.array([[x, y] for x in powers for y in powers]))
    # any x * y == 256 is a local optimum of one-parameter moves; the best is 16 x 16
    cost = lambda c: 1 + (np.log2(c["x"] * c["y"]) - 8) ** 2 + 0.1 * (np.log2(c["x"]) - 4) ** 2
    strategy = make_strategy("portfolio", pool=pool, seed=0, start=0, mix=(1, 0, 0, 0), reshape=reshape)
    best = pool.find({"x": 2, "y": 128})
    told = [best] + pool.near(best)
    strategy.resume([{"config": pool.config(i), "status": "ok", "ms": cost(pool.config(i))} for i in told])
    (cfg,) = strategy.ask(1)
    if reshape:
        assert pool.find(cfg) in pool.reshape(best) and cfg["x"] * cfg["y"] == 256
    else:                                   # the next best's near moves instead
        assert any(pool.find(cfg) in pool.near(i) for i in strategy.ranked()[1:2])
