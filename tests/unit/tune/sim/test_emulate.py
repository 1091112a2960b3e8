"""The NumPy emulation of the GEMM kernel's tiling: every survivor of the GEMM space computes
A.B exactly; configurations that only the correctness conditions (Fig. 15) reject do not."""
import itertools
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.lang.devices import resolve_device
from beast.errors import BeastError
from beast.tune.sim.emulate import default_size, emulate_gemm
from beast.tune.kernels.paper import GemmLayout, GemmSettings
from conftest import TESTS as TESTS_DIR

GEMM = str(Path(TESTS_DIR).parent / "spaces" / "gemm.py")

# A scaled-down K40c: 16 x 16 thread blocks of at most 64 threads, 4-thread warps, 2 KB of shared
# memory per block.  Survivors per setting: about 700 (double complex) to 8400 (single complex).
SMALL = dict(max_threads_per_block=64, max_threads_dim_x=16, max_threads_dim_y=16, warp_size=4,
             max_shared_mem_per_block=2048, max_shmem_per_multi_processor=16384)

ALL_SETTINGS = [dict(precision=p, arithmetic=a, trans_a=ta, trans_b=tb)
                for p, a, ta, tb in itertools.product(("single", "double"), ("real", "complex"), (0, 1), (0, 1))]
# parameters that change the emulated index arithmetic (tex/shmem flags do not)
INDEX_PARAMS = ("dim_m", "dim_n", "blk_m", "blk_n", "blk_k", "dim_vec", "vec_mul",
                "dim_m_a", "dim_n_a", "dim_m_b", "dim_n_b")


def small_device():
    return resolve_device("k40c").replace(**SMALL)


def settings_id(st):
    return GemmSettings.from_mapping(st).routine


def distinct_survivors(settings):
    """The space's survivors, one per distinct value of INDEX_PARAMS (as dicts)."""
    space = beast.load(GEMM, device=small_device(), settings=settings)
    rows = space.enumerate(backend="lua")     # auto would build C for each settings
    assert 300 <= len(rows) <= 20000, len(rows)
    keys = np.stack([rows[n] for n in INDEX_PARAMS], axis=1)
    _, first = np.unique(keys, axis=0, return_index=True)
    names = space.iterators
    return space, [{n: int(rows[n][i]) for n in names} for i in sorted(first)]


def fig15(cfg, st):
    """The four correctness conditions of Fig. 15, written out (True = rejected)."""
    threads = cfg["dim_m"] * cfg["dim_n"]
    v = cfg["dim_vec"]
    a1 = cfg["dim_m_a"] * cfg["dim_n_a"] != threads
    b1 = cfg["dim_m_b"] * cfg["dim_n_b"] != threads
    if st["trans_a"] == 0:
        a2 = cfg["blk_m"] % (cfg["dim_m_a"] * v) != 0 or cfg["blk_k"] % cfg["dim_n_a"] != 0
    else:
        a2 = cfg["blk_k"] % (cfg["dim_m_a"] * v) != 0 or cfg["blk_m"] % cfg["dim_n_a"] != 0
    if st["trans_b"] == 0:
        b2 = cfg["blk_k"] % (cfg["dim_m_b"] * v) != 0 or cfg["blk_n"] % cfg["dim_n_b"] != 0
    else:
        b2 = cfg["blk_n"] % (cfg["dim_m_b"] * v) != 0 or cfg["blk_k"] % cfg["dim_n_b"] != 0
    return {"cant_reshape_a1": a1, "cant_reshape_b1": b1, "cant_reshape_a2": a2, "cant_reshape_b2": b2}


def fig11_reading_ranges(cfg, st):
    """Fig. 11's ranges of dim_m_a, dim_n_a, dim_m_b, dim_n_b for the other values of cfg."""
    v = cfg["dim_vec"]
    if st["trans_a"] == 0:
        ma, na = range(1, cfg["blk_m"] // v + 1), range(1, cfg["blk_k"] + 1)
    else:
        ma, na = range(1, cfg["blk_k"] // v + 1), range(1, cfg["blk_m"] + 1)
    if st["trans_b"] == 0:
        mb, nb = range(1, cfg["blk_k"] // v + 1), range(1, cfg["blk_n"] + 1)
    else:
        mb, nb = range(1, cfg["blk_n"] // v + 1), range(1, cfg["blk_k"] + 1)
    return ma, na, mb, nb


@pytest.mark.parametrize("st", ALL_SETTINGS, ids=settings_id)
def test_every_survivor_computes_gemm_exactly(st):
    space, configs = distinct_survivors(st)
    assert space.iterators[:len(INDEX_PARAMS)] == INDEX_PARAMS
    bad = []
    for cfg in configs:
        assert not any(fig15(cfg, st).values())
        res = emulate_gemm(cfg, space.settings)
        if not res.ok:
            bad.append((cfg, res.describe()))
    assert not bad, f"{len(bad)} of {len(configs)} survivors miscompute, e.g. {bad[:3]}"


@pytest.mark.parametrize("st", ALL_SETTINGS, ids=settings_id)
def test_configurations_rejected_only_by_correctness_conditions_are_wrong(st):
    """Replace the reading grids (dim_m_a, dim_n_a, dim_m_b, dim_n_b) of survivors by other
    values of their Fig. 11 ranges.  No hard or soft condition reads these four iterators, so
    the new configuration is rejected by the correctness conditions only -- exactly one of
    them where possible; every such configuration must compute a wrong result."""
    space, configs = distinct_survivors(st)
    rng = np.random.default_rng(1234)
    kinds = ("cant_reshape_a1", "cant_reshape_a2", "cant_reshape_b1", "cant_reshape_b2")
    single = {name: [] for name in kinds}
    several = []
    for cfg in configs:
        ma, na, mb, nb = fig11_reading_ranges(cfg, st)
        alternatives = [dict(cfg, dim_m_a=x, dim_n_a=y) for x in ma for y in na] \
            + [dict(cfg, dim_m_b=x, dim_n_b=y) for x in mb for y in nb]
        for _ in range(4):      # and some with both reading grids changed
            alternatives.append(dict(cfg, dim_m_a=int(rng.choice(ma)), dim_n_a=int(rng.choice(na)),
                                     dim_m_b=int(rng.choice(mb)), dim_n_b=int(rng.choice(nb))))
        for new in alternatives:
            violated = [k for k, v in fig15(new, st).items() if v]
            if len(violated) == 1:
                single[violated[0]].append(new)
            elif violated:
                several.append(new)
    sample = []
    for name in kinds:
        # double complex has dim_vec = 1 and tiny stripes under this profile: every reading grid
        # with the block's thread count that fits the stripe also divides it
        if not (name.endswith("2") and st["precision"] == "double" and st["arithmetic"] == "complex"):
            assert single[name], f"no configuration violates only {name}"
        sample += [single[name][i] for i in rng.permutation(len(single[name]))[:40]]
    sample += [several[i] for i in rng.permutation(len(several))[:40]]
    for cfg in sample:
        res = emulate_gemm(cfg, space.settings)
        assert not res.ok, f"{cfg} violates {[k for k, v in fig15(cfg, st).items() if v]} but computes GEMM"


# ------------------------------------------------------------------ hand-written configurations

BASE = dict(dim_m=4, dim_n=4, blk_m=8, blk_n=8, blk_k=4, dim_vec=1, vec_mul=0, dim_m_a=4, dim_n_a=4,
            dim_m_b=4, dim_n_b=4, tex_a=0, tex_b=0, shmem_l1=0, shmem_banks=0)
DNN = dict(precision="double", arithmetic="real", trans_a=0, trans_b=0)


@pytest.mark.parametrize("size", [(1, 1, 1), (8, 8, 4), (15, 13, 9), (3, 17, 1), (16, 16, 13), (9, 2, 30)])
def test_edge_sizes(size):
    assert emulate_gemm(BASE, DNN, size).ok


def test_vector_loads_with_odd_sizes():
    cfg = dict(BASE, dim_vec=2, vec_mul=1, dim_m_a=2, dim_n_a=4 * 2, blk_k=8, dim_m_b=2, dim_n_b=8)
    # A: blk_m=8 % (2*2) == 0, blk_k=8 % 8 == 0; B: blk_k=8 % (2*2) == 0, blk_n=8 % 8 == 0
    assert not any(fig15(cfg, DNN).values())
    for size in [(7, 9, 11), (8, 8, 8), (17, 3, 5)]:
        res = emulate_gemm(cfg, DNN, size)
        assert res.ok, res.describe()


def test_misaligned_leading_dimension_is_a_hazard():
    cfg = dict(BASE, dim_vec=2, vec_mul=1, dim_m_a=2, dim_n_a=8, blk_k=8, dim_m_b=2, dim_n_b=8)
    res = emulate_gemm(cfg, DNN, (7, 9, 11), ld_multiple=1)
    assert any("misaligned" in h for h in res.hazards)


def test_hazard_kinds():
    # fewer reading threads than block threads: the rest store outside the stripe of A
    res = emulate_gemm(dict(BASE, dim_m_a=4, dim_n_a=2), DNN)
    assert any("same shared-memory location" in h for h in res.hazards)
    # a reading grid larger than the block: some elements of the stripe never loaded
    res = emulate_gemm(dict(BASE, dim_m_a=4, dim_n_a=8, blk_k=8), DNN)
    assert any("no thread stored" in h for h in res.hazards) and res.mismatches
    # a stripe the reading grid does not divide: the last row of loads falls outside it
    res = emulate_gemm(dict(BASE, dim_m_a=4, dim_n_a=4, blk_k=6), DNN)
    assert any("same shared-memory location" in h for h in res.hazards)
    # stores beyond the shared-memory array
    res = emulate_gemm(dict(BASE, dim_m_b=1, dim_n_b=8), DNN)
    assert not res.ok


def test_result_reports_exact():
    res = emulate_gemm(BASE, DNN)
    assert res.ok and res.describe() == "exact" and res.size == default_size(GemmLayout.from_config(BASE, DNN))


def test_missing_parameters_are_named():
    cfg = dict(BASE)
    del cfg["blk_k"], cfg["dim_vec"]
    with pytest.raises(BeastError) as err:
        emulate_gemm(cfg, DNN)
    assert "blk_k, dim_vec" in str(err.value)
