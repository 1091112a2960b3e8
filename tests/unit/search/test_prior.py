"""Transfer (``--prior``): earlier runs of the same space on another GPU, read, matched to a pool
and used by the portfolio search (beast.search.prior); a prior from another landscape
(shuffled times) must not make it worse."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.cli import main
from beast.errors import BeastError
from beast.search.replay import load_recorded, match_space, replay
from beast.search import Pool, make_strategy
from conftest import TESTS as TESTS_DIR
from beast.search.prior import (PriorData, PriorPortfolio, prior_scores, rank_correlation, read_prior,
                                         source_ranks)

pytest.importorskip("sklearn")

ROOT = Path(TESTS_DIR).parent
DATA = Path(TESTS_DIR) / "data" / "benchmark_hub"
CONV_SPACE = str(ROOT / "spaces" / "real" / "convolution.py")
A4000, A6000 = str(DATA / "convolution_A4000.json.gz"), str(DATA / "convolution_A6000.json.gz")


@pytest.fixture(scope="module")
def conv():
    """The convolution space on the A4000 (pool, times) and the A6000's file as its prior."""
    pool, times = match_space(beast.load(CONV_SPACE), load_recorded(A4000))
    return pool, times, prior_scores(pool, [A6000])


def small_pool():
    return Pool(["a", "b"], np.array([[a, b] for a in range(4) for b in range(3)]))


def test_ranks_are_scaled_failures_last_and_missing_unknown():
    pool = small_pool()
    configs = [{"a": 0, "b": 0}, {"a": 1, "b": 2}, {"a": 3, "b": 1}, {"a": 2, "b": 2}, {"a": 9, "b": 9}]
    got = source_ranks(pool, PriorData(configs, [3.0, 1.0, None, 2.0, 0.5]))
    at = {tuple(pool.X[i]): got[i] for i in range(len(pool))}
    assert at[(1, 2)] < at[(2, 2)] < at[(0, 0)] < at[(3, 1)] == 1.0     # (9, 9): not in the pool
    assert 0 < at[(1, 2)] and np.isnan(at[(0, 1)]) and np.isfinite(got).sum() == 4
    # two priors: the mean where both have a configuration, the one where only one has it
    other = PriorData([{"a": 0, "b": 0}, {"a": 0, "b": 1}], [1.0, 2.0])
    both = prior_scores(pool, [PriorData(configs, [3.0, 1.0, None, 2.0, 0.5]), other])
    i00, i01 = pool.find({"a": 0, "b": 0}), pool.find({"a": 0, "b": 1})
    assert both[i00] == pytest.approx((got[i00] + 0.25) / 2) and both[i01] == pytest.approx(0.75)


def test_a_prior_sharing_no_configuration_is_a_clear_error():
    pool = small_pool()
    with pytest.raises(BeastError, match="shares no configuration"):
        source_ranks(pool, PriorData([{"a": 7, "b": 0}, {"x": 1}], [1.0, 2.0], "old.json"))
    with pytest.raises(BeastError, match="every one failed"):
        source_ranks(pool, PriorData([{"a": 0, "b": 0}], [None], "old.json"))


def test_kernel_tuner_cache_files_and_beast_tune_logs_are_read(tmp_path):
    data = read_prior(A6000)
    assert data.kind == "kernel_tuner" and len(data.configs) == 4362 and sum(t is None for t in data.times) == 473
    log = tmp_path / "old.jsonl"
    lines = [{"beast_tune_log": 1, "iterators": ["a", "b"]},
             {"config": {"a": 1, "b": 1}, "status": "ok", "ms": 2.0},
             {"config": {"a": 2, "b": 0}, "status": "ok", "ms": 1.0},
             {"config": {"a": 0, "b": 0}, "status": "pruned"},
             {"config": {"a": 3, "b": 0}, "status": "failed", "error": "x"}]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = read_prior(log)
    assert got.kind == "beast_log" and got.times == [2.0, 1.0, None] and got.names == ("a", "b")
    for text, match in [("", "neither"), ("[1, 2]", "neither"), ('{"cache": {}}', "does not name")]:
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(BeastError, match=match if text else "empty"):
            read_prior(bad)
    with pytest.raises(BeastError, match="no such prior"):
        read_prior(tmp_path / "missing.json")


def test_the_prior_best_come_right_after_the_first_configuration(conv):
    pool, _, prior = conv
    strategy = make_strategy("portfolio", pool=pool, seed=1, prior=prior)
    assert isinstance(strategy, PriorPortfolio)
    first = strategy.ask(1)[0]
    assert pool.centrality[pool.find(first)] == pool.centrality.min()
    top = [pool.find(c) for c in strategy.ask(strategy.prior_top)]
    assert sorted(prior[top]) == sorted(np.sort(prior[np.isfinite(prior)])[:strategy.prior_top])
    # a prior whose first pick is worse here than the first configuration is not followed further
    follow = make_strategy("portfolio", pool=pool, seed=1, prior=prior)
    centre, pick = follow.ask(2)
    follow.tell(centre, 1.0)
    follow.tell(pick, 2.0)
    assert pool.find(follow.ask(1)[0]) not in set(np.argsort(np.where(np.isfinite(prior), prior, 2))[:9].tolist())
    # a batch that spans the prior's share and the design repeats nothing
    batch = make_strategy("portfolio", pool=pool, seed=1, prior=prior).ask(12)
    assert len({pool.find(c) for c in batch}) == 12


def test_the_model_drops_a_prior_that_disagrees_with_the_measurements(conv):
    pool, times, prior = conv
    shuffled = np.random.default_rng(0).permutation(prior)
    for scores, agrees in ((prior, True), (shuffled, False)):
        strategy = make_strategy("portfolio", pool=pool, seed=2, prior=scores)
        for i in np.random.default_rng(5).choice(len(pool), 40, replace=False).tolist():
            strategy.tell(pool.config(i), float(times[i]) if np.isfinite(times[i]) else None)
        assert strategy.prior_agrees(40) is agrees
    assert rank_correlation(np.arange(5), np.arange(5) ** 2) == pytest.approx(1.0)
    assert rank_correlation(np.ones(4), np.arange(4)) == 0.0


def at_budget(conv, scores, budget=24, repeats=4):
    """Mean fraction of the optimum after ``budget`` evaluations (the design's end), seeds 0-3."""
    pool, times, _ = conv
    options = {} if scores is None else {"prior": scores}
    return replay(pool, times, "portfolio", budget, repeats=repeats, seed=0, **options).fractions[:, -1].mean()


@pytest.fixture(scope="module")
def without(conv):
    return at_budget(conv, None)


def test_another_gpus_prior_helps(conv, without):
    assert at_budget(conv, conv[2]) > max(0.97, without + 0.1)


def test_a_misleading_prior_costs_little(conv, without):
    for seed in (1, 2):                  # the A6000's ranking shuffled over the configurations
        assert at_budget(conv, np.random.default_rng(seed).permutation(conv[2])) >= without - 0.03


def test_cli_replay_takes_priors(capsys):
    assert main(["replay", CONV_SPACE, "--data", A4000, "--budget", "6", "--repeats", "1", "--json",
                 "--prior", A6000, A6000]) == 0
    assert json.loads(capsys.readouterr().out)["budgets"]["6"]["mean"] > 0.9
    assert main(["replay", CONV_SPACE, "--data", A4000, "--budget", "6", "--strategy", "random",
                 "--prior", A6000]) == 2
    assert "portfolio" in capsys.readouterr().err


def test_cli_tune_refuses_a_prior_it_cannot_use(tmp_path, capsys):
    space = str(ROOT / "spaces" / "gemm.py")
    assert main(["tune", space, "--size", "64", "64", "64", "--strategy", "exhaustive", "--prior", A6000]) == 2
    assert "portfolio" in capsys.readouterr().err
    assert main(["tune", space, "--size", "64", "64", "64", "--prior", str(tmp_path / "none.json")]) == 2
    assert "no such prior" in capsys.readouterr().err


def test_kernel_tuner_strategy_takes_a_prior(tmp_path):
    pytest.importorskip("kernel_tuner")
    from kernel_tuner.searchspace import Searchspace
    from beast.kernel_tuner import tune_kernel
    params = {"block_size_x": [32, 64, 128, 256], "scale": [0.5, 1.5, 1.0], "kind": ["a", "b"]}
    configs = Searchspace(params, ["block_size_x * scale <= 192"], 1024).list
    def cache_file(name, time):
        cache = {",".join(map(str, c)): dict(zip(params, c), time=time(k), compile_time=0.0,
                                             verification_time=0, benchmark_time=1.0)
                 for k, c in enumerate(configs)}
        path = tmp_path / name
        path.write_text(json.dumps({"device_name": "sim", "kernel_name": "vector_add", "problem_size": [1024],
                                    "tune_params_keys": list(params), "tune_params": params,
                                    "objective": "time", "cache": cache}))
        return str(path)
    here = cache_file("here.json", lambda k: 1.0 + (k * 7919 % 97) / 10.0)
    best = min(range(len(configs)), key=lambda k: (k * 7919 % 97))
    there = cache_file("there.json", lambda k: 5.0 if k != best else 2.0)   # its best is the same one
    args = [np.zeros(1024, np.float32)] * 3 + [np.int32(1024)]
    results, _ = tune_kernel("vector_add", "__global__ void vector_add(float *c, float *a, float *b, int n) {}",
                             1024, args, params, restrictions=["block_size_x * scale <= 192"],
                             simulation_mode=True, cache=here, quiet=True, strategy="beast",
                             strategy_options={"max_fevals": 2, "seed": 3, "prior": there})
    assert tuple(configs[best]) in [tuple(r[k] for k in params) for r in results]
    with pytest.raises(BeastError, match="portfolio"):
        tune_kernel("vector_add", "__global__ void vector_add(float *c, float *a, float *b, int n) {}",
                    1024, args, params, restrictions=["block_size_x * scale <= 192"], simulation_mode=True,
                    cache=here, quiet=True, strategy="beast",
                    strategy_options={"max_fevals": 2, "strategy": "random", "prior": [there]})


def test_a_first_batch_holds_the_centre_then_the_prior_best(conv):
    pool, _, prior = conv
    batch = [pool.find(c) for c in make_strategy("portfolio", pool=pool, seed=4, prior=prior).ask(10)]
    assert pool.centrality[batch[0]] == pool.centrality.min()
    assert sorted(prior[batch[1:5]]) == sorted(np.sort(prior[np.isfinite(prior)])[:4])
    assert len(set(batch)) == 10


def test_tune_starts_from_an_earlier_log(tmp_path):
    from unit.tune.driver.test_log import FakeBackend, small_space
    from beast.tune import tune
    from beast.tune.driver.log import read_log
    space = small_space()
    old = tmp_path / "old.jsonl"
    tune(space, (64, 64, 64), budget=12, strategy="random", seed=1, log_path=old, backend=FakeBackend(),
         compile_workers=1, lookahead=3)
    _, records, _ = read_log(str(old))
    timed = [r for r in records if "config" in r and r.get("status") == "ok"]
    best = min(timed, key=lambda r: r["ms"])["config"]
    new = tmp_path / "new.jsonl"
    report = tune(space, (64, 64, 64), budget=3, seed=1, log_path=new, backend=FakeBackend(), prior=[str(old)],
                  strategy="portfolio", compile_workers=1, lookahead=3)
    assert report.complete
    _, records, _ = read_log(str(new))
    assert best in [r["config"] for r in records if "config" in r][:3]       # the centre, then the prior's best
    with pytest.raises(BeastError, match="portfolio"):
        tune(space, (64, 64, 64), budget=6, log_path=tmp_path / "x.jsonl", backend=FakeBackend(), prior=[str(old)])
