"""Every real-world space in spaces/real/ (files added later included): beast's count equals a
plain-Python brute force over the file's KERNEL_TUNER form (itertools.product + eval, Kernel
Tuner's implicit block-size limit included) and equals beast.from_kernel_tuner(...)'s count."""
from __future__ import annotations

import glob
import inspect
import itertools
import math
import os

import pytest

import beast
from conftest import TESTS as TESTS_DIR

ROOT = os.path.dirname(TESTS_DIR)
REAL = sorted(p for p in glob.glob(os.path.join(ROOT, "spaces", "real", "*.py"))
              if not os.path.basename(p).startswith("_"))
BRUTE_FORCE_LIMIT = 2_000_000
DEFAULT_BLOCK_SIZE_NAMES = ["block_size_x", "block_size_y", "block_size_z"]


def brute_force_count(kt: dict) -> int:
    """Survivors of the Kernel Tuner form, by trying every combination in plain Python."""
    tune_params = kt["tune_params"]
    names = list(tune_params)
    restrictions = kt.get("restrictions") or []
    if not isinstance(restrictions, list):
        restrictions = [restrictions]
    strings = [r for r in restrictions if isinstance(r, str)]
    block = [n for n in (kt.get("block_size_names") or DEFAULT_BLOCK_SIZE_NAMES) if n in names]
    if block:
        strings.append(" * ".join(block) + f" <= {kt.get('max_threads', 1024)}")
    keep_strings = eval(f"lambda {', '.join(names)}: "                # noqa: S307 - test oracle
                        + (" and ".join(f"({s})" for s in strings) or "True"))
    funcs = [r for r in restrictions if not isinstance(r, str)]

    def keep_func(func, config):
        params = list(inspect.signature(func).parameters)
        if len(params) == 1 and params[0] not in config:
            return func(dict(config))
        return func(**{p: config[p] for p in params})

    count = 0
    for combo in itertools.product(*tune_params.values()):
        if not keep_strings(*combo):
            continue
        if funcs:
            config = dict(zip(names, combo))
            if not all(keep_func(f, config) for f in funcs):
                continue
        count += 1
    return count


@pytest.fixture(scope="module", params=REAL, ids=[os.path.basename(p)[:-3] for p in REAL])
def real_space(request):
    space = beast.load(request.param)
    kt = space.module.namespace.get("KERNEL_TUNER")
    assert isinstance(kt, dict) and "tune_params" in kt, \
        f"{request.param} needs a module-level KERNEL_TUNER dict"
    return space, kt


def test_there_are_real_spaces():
    assert len(REAL) >= 5


def test_cites_its_source(real_space):
    space, _ = real_space
    with open(space.path, encoding="utf-8") as fh:
        head = fh.read(2000)
    assert "github.com" in head or "et al." in head, "say where the space comes from"


def test_same_parameters(real_space):
    space, kt = real_space
    assert list(space.iterators) == list(kt["tune_params"])


def test_count_equals_brute_force(real_space):
    space, kt = real_space
    combinations = math.prod(len(v) for v in kt["tune_params"].values())
    if combinations > BRUTE_FORCE_LIMIT:
        pytest.skip(f"{combinations:,} combinations: too many to brute-force in the test suite "
                    "(from_kernel_tuner and Kernel Tuner's own count still checked)")
    assert space.count() == brute_force_count(kt)


def test_count_equals_from_kernel_tuner(real_space):
    space, kt = real_space
    from_kt = beast.from_kernel_tuner(kt["tune_params"], kt.get("restrictions"),
                                      kt.get("max_threads", 1024), kt.get("block_size_names"))
    assert space.count() == from_kt.count()


def test_hotspot_matches_kernel_tuners_asserted_size():
    path = os.path.join(ROOT, "spaces", "real", "hotspot.py")
    assert beast.load(path).count() == 349853    # Kernel Tuner's test_full_searchspace
