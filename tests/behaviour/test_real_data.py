"""The benchmark-hub spaces of spaces/real/ (dedispersion, convolution, Kernel Tuner's CLBlast GEMM,
pnpoly and older convolution) against the brute-forced data they come from, and their KERNEL_TUNER
form against their beast form.

Every file of the data (``configurations.json`` lists each one's configuration count and the
SHA-256 of its configurations) is checked against beast's survivors; the trimmed copies here are
replayed whole.  With ``BEAST_BENCHMARK_HUB`` naming a directory of the full files, each of them
is matched configuration by configuration too."""
import gzip
import hashlib
import itertools
import json
import os
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.search.replay import load_recorded, match_space
from conftest import TESTS as TESTS_DIR

ROOT = Path(TESTS_DIR).parent
DATA = Path(TESTS_DIR) / "data" / "benchmark_hub"
# the trimmed copies here: file -> (space in spaces/real/, configurations, with a time)
TRIMMED = {"dedispersion_A4000.json.gz": ("dedispersion", 11130, 11130),
           "convolution_A4000.json.gz": ("convolution", 4362, 4201),
           "kt_gemm_RTX_3090.json.gz": ("kt_gemm", 17956, 17956),
           "kt_pnpoly_RTX_3090.json.gz": ("kt_pnpoly", 4092, 3774),
           "kt_convolution_RTX_3090.json.gz": ("kt_convolution", 6768, 5220)}
SPACES = sorted({space for space, _, _ in TRIMMED.values()})
MANIFEST = json.loads((DATA / "configurations.json").read_text())


def load(name):
    return beast.load(str(ROOT / "spaces" / "real" / f"{name}.py"))


def space_of(file_name):
    """The space of a data file: the longest space name that prefixes it (kt_convolution_...
    is kt_convolution's, not convolution's)."""
    return max((s for s in SPACES if file_name.startswith(s + "_")), key=len)


def digest(keys) -> str:
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()


@pytest.mark.parametrize("file_name", sorted(TRIMMED))
def test_survivors_are_exactly_the_configurations_of_the_data(file_name):
    name, count, timed = TRIMMED[file_name]
    space = load(name)
    run = load_recorded(DATA / file_name)
    assert len(run) == count and space.count() == count
    pool, times = match_space(space, run)          # raises when any configuration differs
    assert len(pool) == count
    ours = {tuple(r) for r in pool.X.tolist()}
    cols = [run.names.index(n) for n in space.iterators]
    assert ours == {tuple(r) for r in run.X[:, cols].tolist()}
    assert np.isfinite(times).sum() == np.isfinite(run.times).sum() == timed


def test_the_manifest_lists_every_kernel_and_the_trimmed_copies():
    assert set(TRIMMED) <= set(MANIFEST)
    assert {space_of(f) for f in MANIFEST} == set(SPACES)
    for file_name in TRIMMED:
        with gzip.open(DATA / file_name, "rt", encoding="utf-8") as fh:
            keys = json.load(fh)["cache"]
        assert digest(keys) == MANIFEST[file_name]["sha256"], file_name


@pytest.mark.parametrize("file_name", sorted(MANIFEST))
def test_every_data_file_holds_exactly_the_survivors(file_name):
    """The survivors, written as the data's cache keys (values in tune_params_keys order), are
    the file's configurations: same count, same SHA-256 of the sorted keys."""
    entry = MANIFEST[file_name]
    space = load(space_of(file_name))
    rows = space.enumerate()
    assert list(space.iterators) == entry["tune_params_keys"]
    keys = [",".join(map(str, r)) for r in rows[entry["tune_params_keys"]].tolist()]
    assert len(keys) == len(set(keys)) == entry["configurations"]
    assert digest(keys) == entry["sha256"]


FULL = os.environ.get("BEAST_BENCHMARK_HUB")


@pytest.mark.skipif(not FULL, reason="BEAST_BENCHMARK_HUB does not name the full data files")
@pytest.mark.parametrize("file_name", sorted(MANIFEST))
def test_full_data_files_match(file_name):
    path = Path(FULL) / file_name
    if not path.exists():
        pytest.skip(f"{file_name} is not in {FULL}")
    pool, times = match_space(load(space_of(file_name)), load_recorded(path))
    assert len(pool) == MANIFEST[file_name]["configurations"] and np.isfinite(times).any()


@pytest.mark.parametrize("name", SPACES)
def test_kernel_tuner_form_is_the_same_space(name):
    space = load(name)
    kt = space.module.namespace["KERNEL_TUNER"]
    assert set(kt) == {"tune_params", "restrictions", "max_threads", "block_size_names"}
    params = kt["tune_params"]
    assert list(params) == list(space.iterators)
    names = list(params)
    restrictions = [compile(r, "<restriction>", "eval") for r in kt["restrictions"]]   # once, not per row
    keep = set()
    for values in itertools.product(*params.values()):
        env = dict(zip(names, values))
        if all(eval(r, {}, env) for r in restrictions):      # noqa: S307 - test oracle
            keep.add(values)
    assert keep == {tuple(r) for r in space.enumerate().tolist()}
