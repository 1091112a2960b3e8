"""The ask/tell contract of every search strategy, its pool and neighbours, and beast tune
with a search strategy (fake GPU backend)."""
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.errors import BeastError
from beast.tune import tune
from beast.tune.driver.log import read_log
from beast.search.replay import load_recorded, match_space
from beast.search import STRATEGIES, Pool, make_strategy, record_cost, survivors_sample
from conftest import TESTS as TESTS_DIR

ROOT = Path(TESTS_DIR).parent
DATA = Path(TESTS_DIR) / "data" / "benchmark_hub"
NAMES = sorted(STRATEGIES)


@pytest.fixture(scope="module")
def conv():
    space = beast.load(str(ROOT / "spaces" / "real" / "convolution.py"))
    pool, times = match_space(space, load_recorded(DATA / "convolution_A4000.json.gz"))
    return space, pool, times


def run(strategy, pool, times, budget, batch):
    """Ask/tell ``budget`` evaluations; returns the proposals in order and log-like records."""
    asked, records = [], []
    while len(asked) < budget:
        got = strategy.ask(min(batch, budget - len(asked)))
        assert got, "the strategy ran dry with the pool far from exhausted"
        for cfg in got:
            t = float(times[pool.find(cfg)])
            cost = t if math.isfinite(t) else None
            strategy.tell(cfg, cost)
            asked.append(tuple(cfg.values()))
            records.append({"config": cfg, "status": "ok" if cost is not None else "launch_error",
                            **({"ms": cost} if cost is not None else {})})
    return asked, records


@pytest.mark.parametrize("name", NAMES)
def test_proposals_are_distinct_survivors_and_deterministic_by_seed(conv, name):
    space, pool, times = conv
    survivors = {tuple(r) for r in space.enumerate().tolist()}
    a, _ = run(make_strategy(name, pool=pool, seed=3), pool, times, 36, batch=4)
    b, _ = run(make_strategy(name, pool=pool, seed=3), pool, times, 36, batch=4)
    c, _ = run(make_strategy(name, pool=pool, seed=4), pool, times, 36, batch=4)
    assert len(set(a)) == len(a) == 36
    assert set(a) <= survivors
    assert a == b and a != c


@pytest.mark.parametrize("name", NAMES)
def test_resumes_from_a_log_as_if_never_interrupted(conv, name):
    space, pool, times = conv
    whole, records = run(make_strategy(name, pool=pool, seed=7), pool, times, 30, batch=1)
    resumed = make_strategy(name, pool=pool, seed=7)
    assert resumed.resume(records[:20] + [{"reference": "cublas", "status": "ok"}]) == 20
    rest, _ = run(resumed, pool, times, 10, batch=1)
    assert whole[20:] == rest
    assert not set(rest) & set(whole[:20])


@pytest.mark.parametrize("name", NAMES)
def test_failures_count_as_evaluated_and_the_pool_runs_out_cleanly(name):
    X = np.array(list(itertools.product(range(4), range(3))))
    pool = Pool(("a", "b"), X)
    strategy = make_strategy(name, pool=pool, seed=0, **({"init": 3} if name != "random" else {}))
    seen = []
    while True:
        got = strategy.ask(5)
        if not got:
            break
        for cfg in got:                                   # b == 1 fails, else cost a + b
            strategy.tell(cfg, None if cfg["b"] == 1 else float(cfg["a"] + cfg["b"] + 1))
            seen.append((cfg["a"], cfg["b"]))
    assert sorted(seen) == sorted(map(tuple, X.tolist()))
    assert strategy.best == ({"a": 0, "b": 0}, 1.0)
    assert sum(c is None for c in strategy.costs.values()) == 4


def test_local_search_climbs_to_the_optimum_of_a_smooth_space():
    X = np.array(list(itertools.product(range(12), range(12), range(3))))
    pool = Pool(("x", "y", "z"), X)
    cost = lambda c: 1.0 + (c["x"] - 9) ** 2 + (c["y"] - 2) ** 2 + c["z"]
    strategy = make_strategy("local", pool=pool, seed=1, init=3, restart=0.0)
    for _ in range(60):
        for cfg in strategy.ask(1):
            strategy.tell(cfg, cost(cfg))
    assert strategy.best == ({"x": 9, "y": 2, "z": 0}, 1.0)   # 60 of 432 evaluations


def test_neighbours_change_one_parameter_to_an_adjacent_surviving_value(conv):
    space, pool, _ = conv
    survivors = {tuple(r) for r in space.enumerate().tolist()}
    rng = np.random.default_rng(0)
    for i in rng.choice(len(pool), 40, replace=False).tolist():
        row = pool.X[i]
        expect = set()
        for j, vals in enumerate(pool.values):
            r = int(np.searchsorted(vals, row[j]))
            for q in (r - 1, r + 1):
                if 0 <= q < len(vals):
                    cand = row.copy()
                    cand[j] = vals[q]
                    if tuple(cand.tolist()) in survivors:
                        expect.add(tuple(cand.tolist()))
        got = {tuple(pool.X[k].tolist()) for k in pool.neighbours(i)}
        assert got == expect


def test_line_moves_change_one_parameter_to_any_surviving_value(conv):
    space, pool, _ = conv
    survivors = {tuple(r) for r in space.enumerate().tolist()}
    for i in np.random.default_rng(1).choice(len(pool), 40, replace=False).tolist():
        row = tuple(pool.X[i].tolist())
        expect = {s for s in survivors if sum(a != b for a, b in zip(s, row)) == 1}
        got = [tuple(pool.X[k].tolist()) for k in pool.line(i)]
        assert len(got) == len(set(got)) and set(got) == expect
        assert set(pool.neighbours(i)) <= set(pool.line(i))


def test_reshape_moves_change_two_parameters_and_keep_their_product(conv):
    space, pool, _ = conv
    survivors = {tuple(r) for r in space.enumerate().tolist()}
    positive = [j for j, v in enumerate(pool.values) if len(v) > 1 and v[0] > 0]
    found = 0
    for i in np.random.default_rng(3).choice(len(pool), 40, replace=False).tolist():
        row = tuple(pool.X[i].tolist())
        expect = set()
        for s in survivors:
            moved = [j for j in range(len(row)) if s[j] != row[j]]
            if len(moved) == 2 and set(moved) <= set(positive):
                a, b = moved
                if s[a] * s[b] == row[a] * row[b]:
                    expect.add(s)
        got = [tuple(pool.X[k].tolist()) for k in pool.reshape(i)]
        assert len(got) == len(set(got)) and set(got) == expect
        found += len(got)
    assert found > 40                        # block and tile shapes of the same size


def test_central_design_starts_in_the_middle_and_spreads_out(conv):
    _, pool, _ = conv
    cen = pool.centrality
    strategy = make_strategy("hybrid", pool=pool, seed=5, design="centre", start=3, central=0.1)
    first = pool.find(strategy.ask(1)[0])
    assert cen[first] == cen.min()                     # the most central configuration
    strategy.tell(pool.config(first), 1.0)
    two = [pool.find(c) for c in strategy.ask(2)]
    inner = np.sort(cen)[int(np.ceil(0.1 * len(pool))) - 1]
    assert all(cen[k] <= inner for k in two)            # still in the central tenth
    dist = lambda a, b: float(((pool.unit[a] - pool.unit[b]) ** 2).sum())
    central = np.flatnonzero(cen <= inner)
    assert dist(two[0], first) == max(dist(k, first) for k in central if k != first)   # maximin
    assert min(dist(two[1], first), dist(two[1], two[0])) > 0
    # seeds break the ties among equally central configurations differently
    firsts = {pool.find(make_strategy("hybrid", pool=pool, seed=s, design="centre").ask(1)[0]) for s in range(12)}
    assert len(firsts) > 1 and all(cen[k] == cen.min() for k in firsts)


def test_wide_moves_jump_a_valley_of_bad_values_next_to_the_best():
    from beast.search.local import best_first_neighbours
    X = np.array(list(itertools.product(range(10), range(2))))
    pool = Pool(("a", "b"), X)
    strategy = make_strategy("local", pool=pool, seed=0)
    for a, b, cost in [(2, 0, 1.0), (1, 0, 5.0), (3, 0, 5.0), (2, 1, 5.0), (6, 1, 2.0)]:
        strategy.tell({"a": a, "b": b}, cost)
    rng = np.random.default_rng(0)
    # neighbours of the best (a=2, b=0) are all measured: without wide moves, the next best's
    narrow = [pool.config(k) for k in best_first_neighbours(strategy, 3, rng, set())]
    assert all(c["a"] in (5, 6, 7) for c in narrow)
    # with them, the best's own line first: every other a with b=0, in the order given
    order = lambda ks: sorted(ks, key=lambda k: -pool.X[k][0])
    wide = [pool.config(k) for k in best_first_neighbours(strategy, 3, rng, set(), wide=1, order=order)]
    assert wide == [{"a": 9, "b": 0}, {"a": 8, "b": 0}, {"a": 7, "b": 0}]


def test_a_sampled_pool_still_has_exact_neighbours():
    # GEMM (small device profile): blk_m runs over multiples of dim_m, dim_vec must divide it,
    # ... so a one-parameter change must be checked against the loops' own ranges, not only
    # the conditions
    from unit.tune.driver.test_log import small_space
    space = small_space()
    every = Pool.from_rows(space.enumerate())
    pool = Pool.from_space(space, limit=len(every) // 10, seed=3)
    assert not pool.complete and len(pool) == len(every) // 10
    sampled = len(pool)
    for i in np.random.default_rng(0).choice(sampled, 12, replace=False).tolist():
        whole = every.find(pool.config(i))
        for moves in ("neighbours", "line"):
            got = {tuple(pool.X[k].tolist()) for k in getattr(pool, moves)(i)}
            assert got == {tuple(every.X[k].tolist()) for k in getattr(every, moves)(whole)}
    assert len(pool) > sampled and len(pool.index) == len(pool)      # the rest were added
    assert all(every.find(pool.config(k)) is not None for k in range(sampled, len(pool)))
    row = pool.config(0)
    assert space.contains(row) and space.contains([row]).tolist() == [True]
    assert not space.contains(dict(row, blk_m=row["dim_m"] * 7 + 1))   # not a multiple of dim_m
    strategy = make_strategy("local", pool=pool, seed=2, init=2, restart=0.0)
    for _ in range(12):                                   # proposals beyond the sample are fine
        for cfg in strategy.ask(1):
            assert every.find(cfg) is not None
            strategy.tell(cfg, float(sum(cfg.values())))


def test_sampled_pool_for_a_large_space_and_unknown_names(conv):
    space, _, _ = conv
    pool = Pool.from_space(space, limit=500, seed=2)
    assert len(pool) == 500 and not pool.complete
    assert {tuple(r) for r in pool.X.tolist()} <= {tuple(r) for r in space.enumerate().tolist()}
    rows = survivors_sample(space, 500, seed=2)
    assert len({tuple(r) for r in rows.tolist()}) == 500
    with pytest.raises(BeastError, match="unknown strategy"):
        make_strategy("annealing", space)
    assert record_cost({"status": "ok", "ms": 2.5}) == 2.5
    assert record_cost({"status": "compile_error"}) is None


def test_tune_with_a_search_strategy_resumes_from_its_log(tmp_path):
    from unit.tune.driver.test_log import FakeBackend, keys, small_space
    space = small_space()
    log = tmp_path / "r.jsonl"
    first = FakeBackend(interrupt_after=15)
    report = tune(space, (64, 64, 64), budget=40, strategy="local", seed=2, log_path=log,
                  backend=first, compile_workers=1, lookahead=3)
    assert report.interrupted and report.tried == 15
    second = FakeBackend()
    report = tune(space, (64, 64, 64), budget=40, strategy="local", seed=2, log_path=log,
                  backend=second, compile_workers=1, lookahead=3)
    assert report.complete and report.resumed == 15 and report.tried == 40
    names = space.iterators
    done = keys(first.measured[:15], names)
    assert not set(done) & set(keys(second.compiled, names))
    _, records, _ = read_log(str(log))
    configs = [tuple(r["config"].values()) for r in records if "config" in r]
    assert len(configs) == len(set(configs)) == 40
    assert set(configs) <= {tuple(r) for r in space.enumerate().tolist()}


class _Sampling:
    """A space with ``sample(n, seed)`` (drawn here from the enumeration), the rest forwarded."""

    def __init__(self, space):
        self._space = space

    def __getattr__(self, name):
        return getattr(self._space, name)

    def sample(self, n, seed=None):
        rows = self._space.enumerate()
        pick = np.random.default_rng(seed).choice(len(rows), size=min(n, len(rows)), replace=False)
        return rows[pick]


def test_tune_random_uses_sampling_when_the_space_can_and_resumes(tmp_path):
    from unit.tune.driver.test_log import FakeBackend, keys, small_space
    space = _Sampling(small_space())
    names = space.iterators
    whole = FakeBackend()
    tune(space, (64, 64, 64), budget=30, strategy="random", seed=4, backend=whole)
    measured = keys(whole.measured, names)
    assert len(set(measured)) == 30 and set(measured) <= {tuple(r) for r in space.enumerate().tolist()}
    log = tmp_path / "r.jsonl"
    first = FakeBackend(interrupt_after=12)
    tune(space, (64, 64, 64), budget=30, strategy="random", seed=4, log_path=log, backend=first)
    second = FakeBackend()
    report = tune(space, (64, 64, 64), budget=30, strategy="random", seed=4, log_path=log, backend=second)
    assert report.complete and report.tried == 30
    assert set(keys(first.measured[:12], names)) | set(keys(second.measured, names)) == set(measured)


def test_the_model_trees_are_those_of_scikit_learns_extra_trees_ensemble():
    """beast fits the trees itself (the ensemble's per-tree cloning and checks were half of a
    replay): same trees as ExtraTreesRegressor with the same seed, so the same predictions."""
    ensemble = pytest.importorskip("sklearn.ensemble")
    from sklearn.tree import ExtraTreeRegressor
    from beast.search.model import extra_trees
    rng = np.random.default_rng(4)
    X = rng.integers(0, 64, size=(200, 6)).astype(np.float64)
    y = np.log(1 + X[:, 0] * X[:, 1] + rng.random(200))
    Xc = rng.integers(0, 64, size=(500, 6)).astype(np.float64)
    for seed in (0, 7, 2**31 - 2):
        ours = extra_trees(ExtraTreeRegressor, X, y, 12, seed)
        theirs = ensemble.ExtraTreesRegressor(n_estimators=12, min_samples_leaf=1, max_features=1.0,
                                              random_state=seed, n_jobs=1).fit(X, y).estimators_
        for a, b in zip(ours, theirs):
            assert np.array_equal(a.predict(Xc), b.predict(Xc))


@pytest.mark.parametrize("column", [[], [5], [3, -1, 3, 7], [2**62, -2**62, 5], [-2**63, 2**63 - 1, 0],
                                    list(range(-40, 40, 3)) * 2, [1 << k for k in range(40)]])
def test_a_pools_values_and_ranks_are_numpys_unique(column):
    """Pool's per-parameter values and ranks (a table of the range where it is short, np.unique
    where it is not) are exactly np.unique(..., return_inverse=True), at the int64 edges too."""
    from beast.search.base import _values_and_ranks
    col = np.array(column, dtype=np.int64)
    ranks = np.full(len(col), -7, dtype=np.int64)
    values = _values_and_ranks(col, ranks)
    expected, inverse = np.unique(col, return_inverse=True)
    assert values.dtype == np.int64 and values.tolist() == expected.tolist()
    assert ranks.tolist() == inverse.reshape(-1).tolist()


def test_a_pool_from_rows_of_any_layout_is_the_same():
    """Rows packed as the backends give them are read as one int64 view; any other layout (a
    field of another type, fields out of order) field by field: the same pool."""
    from beast.explore.sampling import int64_view
    rng = np.random.default_rng(3)
    packed = np.zeros(50, dtype=[("a", np.int64), ("b", np.int64), ("c", np.int64)])
    for n in packed.dtype.names:
        packed[n] = rng.integers(-3, 9, 50)
    packed = np.unique(packed)
    assert int64_view(packed) is not None and np.shares_memory(int64_view(packed), packed)
    other = packed.astype([("a", np.int32), ("b", np.int64), ("c", np.int64)])
    assert int64_view(other) is None and int64_view(packed[::2]) is None
    pools = [Pool.from_rows(r) for r in (packed, other, packed[::2].copy())]
    assert (pools[0].X == pools[1].X).all() and (pools[0].ranks == pools[1].ranks).all()
    assert (pools[2].X == pools[0].X[::2]).all()
    assert all(p.index[p.X[k].tobytes()] == k for p in pools for k in range(len(p.X)))


# --- bad input: clear errors, never a silently wrong configuration ------------------------------

def grid_pool():
    """The 5 x 4 grid of configurations a in 1..5, b in 1..4."""
    return Pool(["a", "b"], np.array(list(itertools.product(range(1, 6), range(1, 5)))))


@pytest.mark.parametrize("name", NAMES)
def test_a_value_matches_only_the_integer_it_equals(name):
    strategy = make_strategy(name, pool=grid_pool(), seed=0)
    for value in (2.7, "2", None, float("nan"), float("inf"), 1e30, 2**70, [2]):
        strategy.tell({"a": value, "b": 1}, 0.5)            # no configuration of the pool
    strategy.tell({"b": 1}, 0.5)                             # a parameter missing
    assert strategy.best is None and strategy.costs == {} and strategy.outside == 9
    strategy.tell({"a": 2.0, "b": np.int64(1)}, 0.25)        # equal to integers: the configuration
    assert strategy.best == ({"a": 2, "b": 1}, 0.25) and strategy.outside == 9
    pool = strategy.pool
    assert pool.find({"a": 2.7, "b": 1}) is None and pool.find({"a": "3", "b": 1}) is None
    assert pool.find({"a": np.float32(3.0), "b": np.uint8(2)}) == pool.find({"a": 3, "b": 2}) is not None


def test_a_sampled_pool_adopts_no_value_that_is_not_an_integer():
    every = grid_pool()
    asked = []
    pool = Pool(every.names, every.X[::3], complete=False,
                member=lambda cand: asked.append(cand) or every.find(dict(zip(every.names, cand))) is not None)
    size = len(pool)
    assert pool.adopt({"a": 1.5, "b": 2}) is None and pool.adopt({"a": "1", "b": 2}) is None
    assert len(pool) == size and asked == []                 # never tested, never added
    k = pool.adopt({"a": 1.0, "b": 2})                       # (1, 2) is a survivor the sample lacks
    assert k == size and pool.config(k) == {"a": 1, "b": 2} and asked == [[1, 2]]


@pytest.mark.parametrize("name", NAMES)
def test_tell_takes_a_mapping_and_a_number_or_none(name):
    strategy = make_strategy(name, pool=grid_pool(), seed=0)
    for config in ([1, 2], None, (1, 2), "a=1,b=2"):
        with pytest.raises(BeastError, match="configuration must be a mapping of parameter name to value"):
            strategy.tell(config, 1.0)
    for cost in ("fast", True, [1.0], {"ms": 1.0}):
        with pytest.raises(BeastError, match=r"the cost must be a number \(lower is better\) or None"):
            strategy.tell({"a": 1, "b": 1}, cost)
    assert strategy.costs == {} and strategy.outside == 0    # nothing was recorded
    strategy.tell({"a": 1, "b": 1}, np.float32(2.0))
    strategy.tell({"a": 1, "b": 2}, 3)
    strategy.tell({"a": 1, "b": 3}, float("nan"))            # failed, as None
    assert strategy.costs == {0: 2.0, 1: 3.0, 2: None}


@pytest.mark.parametrize("name", NAMES)
def test_ask_takes_a_non_negative_integer(name):
    strategy = make_strategy(name, pool=grid_pool(), seed=0)
    for n in (2.5, "2", None, -1, True, [2]):
        with pytest.raises(BeastError, match="n .* must be a non-negative integer"):
            strategy.ask(n)
    assert strategy.ask(0) == [] and not strategy.pending
    assert strategy.ask(np.int64(3)) == make_strategy(name, pool=grid_pool(), seed=0).ask(3)


@pytest.mark.parametrize("name", NAMES)
def test_the_seed_is_a_non_negative_integer(name, tmp_path):
    space = tmp_path / "s.py"
    space.write_text("from beast import *\na = iterator(range(1, 6))\n")
    for seed in (-1, None, 1.5, "x", True):
        with pytest.raises(BeastError, match=r"the seed must be a non-negative integer \(0, 1, 2, ...\), not"):
            make_strategy(name, pool=grid_pool(), seed=seed)
        with pytest.raises(BeastError, match="seed must be a non-negative integer"):
            make_strategy(name, beast.load(str(space)), seed=seed)
        with pytest.raises(BeastError, match="seed must be a non-negative integer"):
            STRATEGIES[name](grid_pool(), seed=seed)
    assert make_strategy(name, pool=grid_pool(), seed=np.int64(3)).ask(4) == \
        make_strategy(name, pool=grid_pool(), seed=3).ask(4)


@pytest.mark.parametrize("name", NAMES)
def test_a_space_without_parameters_has_one_empty_configuration(name, tmp_path):
    path = tmp_path / "s.py"
    path.write_text("from beast import *\nn = 4\n")
    for strategy in (make_strategy(name, beast.load(str(path)), seed=1),
                     make_strategy(name, pool=Pool([], np.empty((1, 0))), seed=1)):
        assert strategy.ask(3) == [{}] and strategy.ask(1) == []
        strategy.tell({}, 2.0)
        assert strategy.best == ({}, 2.0) and strategy.pool.find({"x": 1}) == 0


def test_a_pools_matrix_has_a_column_per_parameter_and_integers():
    with pytest.raises(BeastError, match=r"one column per parameter \(2\), not an array of shape \(4, 3\)"):
        Pool(["a", "b"], np.zeros((4, 3), dtype=np.int64))
    for X in ([1.5, 2], [[1], [np.nan]], [["x"], ["y"]], np.array([2**64 - 1], dtype=np.uint64)):
        with pytest.raises(BeastError, match="must hold integers"):
            Pool(["a"], X)
    assert Pool(["a"], [[1.0], [2.0]]).X.tolist() == Pool(["a"], [1, 2]).X.tolist() == [[1], [2]]
    assert len(Pool(["a", "b"], [])) == 0 and Pool(["a", "b"], []).X.shape == (0, 2)
    with pytest.raises(BeastError, match="duplicates"):
        Pool([], np.empty((2, 0)))


@pytest.mark.parametrize("option, value, says", [("init", 2.5, "must be an integer"), ("init", "x", "must be an integer"),
                                                 ("kappa", "1", "must be a number"),
                                                 ("interactions", 1, "must be True or False")])
def test_options_are_of_the_kind_of_their_defaults(option, value, says):
    """The constructors convert with int() and float(): 2.5 was truncated, 'x' a ValueError."""
    X = np.array([[a, b] for a in range(1, 6) for b in range(1, 5)])
    with pytest.raises(BeastError, match=f"option {option} of strategy 'portfolio' {says}"):
        make_strategy("portfolio", pool=Pool(["a", "b"], X), **{option: value})
    assert make_strategy("portfolio", pool=Pool(["a", "b"], X), init=np.int64(12), kappa=1, mix=[3, 2, 1, 1]).ask(1)
