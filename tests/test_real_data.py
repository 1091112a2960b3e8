"""The benchmark-hub spaces of spaces/real/ (dedispersion, convolution) against the brute-forced data
they come from, and their KERNEL_TUNER form against their beast form."""
import itertools
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.tune.replay import load_recorded, match_space

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "benchmark_hub"
CASES = [("dedispersion", 11130), ("convolution", 4362)]


def load(name):
    return beast.load(str(ROOT / "spaces" / "real" / f"{name}.py"))


@pytest.mark.parametrize("name, count", CASES)
def test_survivors_are_exactly_the_configurations_of_the_data(name, count):
    space = load(name)
    run = load_recorded(DATA / f"{name}_A4000.json.gz")
    assert len(run) == count and space.count() == count
    pool, times = match_space(space, run)          # raises when any configuration differs
    assert len(pool) == count
    ours = {tuple(r) for r in pool.X.tolist()}
    cols = [run.names.index(n) for n in space.iterators]
    assert ours == {tuple(r) for r in run.X[:, cols].tolist()}
    assert np.isfinite(times).sum() == np.isfinite(run.times).sum()


@pytest.mark.parametrize("name, count", CASES)
def test_kernel_tuner_form_is_the_same_space(name, count):
    space = load(name)
    kt = space.module.namespace["KERNEL_TUNER"]
    assert set(kt) == {"tune_params", "restrictions", "max_threads", "block_size_names"}
    params = kt["tune_params"]
    assert list(params) == list(space.iterators)
    names = list(params)
    keep = set()
    for values in itertools.product(*params.values()):
        env = dict(zip(names, values))
        if all(eval(r, {}, env) for r in kt["restrictions"]):
            keep.add(values)
    assert len(keep) == count
    assert keep == {tuple(r) for r in space.enumerate().tolist()}
