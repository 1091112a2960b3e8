"""spaces/gemm.py against a plain-Python transcription of the paper's Figs. 10-15 (Luszczek et al.
2016), on device profiles scaled down so far that brute force takes seconds, chosen so that every
one of the 12 conditions bites.

The transcription is Python 3 (``//`` where the paper's Python 2 divides integers) and follows the
two documented deviations of spaces/gemm.py: ``dim_vec`` by the intent of Fig. 11 (double real 1-2,
single real 1 or 4, double complex 1, single complex 1-2: the paper swaps the names `precision` and
`arithmetic`), and ``low_fmas`` written as ``fmas_per_block < min_fmas_per_load * loads_per_block``
(the paper divides, and loads_per_block can be 0).

The brute force walks ``itertools.product`` of the iterators' supersets. Each condition reads
either only the "core" iterators (dim_m, dim_n, blk_m, blk_n, blk_k, dim_vec), or the core and
dim_m_a/dim_n_a, or the core and dim_m_b/dim_n_b; and vec_mul, tex_a, tex_b, shmem_l1 and
shmem_banks are read by none. So the product is walked group by group (core; then A; then B; then
the free iterators) -- the same set of configurations as the whole product, in seconds.
"""
from __future__ import annotations

import itertools
from collections import Counter

import pytest

import beast
from beast.lang.devices import resolve_device
from conftest import SPACES, rows
from oracle import rows_counter

GEMM = f"{SPACES}/gemm.py"

COLUMNS = ("dim_m", "dim_n", "blk_m", "blk_n", "blk_k", "dim_vec", "vec_mul", "dim_m_a", "dim_n_a",
           "dim_m_b", "dim_n_b", "tex_a", "tex_b", "shmem_l1", "shmem_banks")
CORE_CONDITIONS = ("over_max_threads", "over_max_regs_per_thread", "over_max_regs_per_block",
                   "over_max_shmem", "low_occupancy_regs", "low_occupancy_shmem", "low_fmas",
                   "partial_warps")
A_CONDITIONS = ("cant_reshape_a1", "cant_reshape_a2")
B_CONDITIONS = ("cant_reshape_b1", "cant_reshape_b2")
CONDITIONS = CORE_CONDITIONS + A_CONDITIONS + B_CONDITIONS

# Two K40cs shrunk to 8 x 8 threads (blk_k, blk_m, blk_n <= 8), warps of 2 and 4: small enough
# for brute force. In every case below each of the 12 conditions rejects configurations, and
# each condition is, in some case, the only one that rejects some configuration. (One device
# cannot do the last: with 8 x 8 threads, low_occupancy_regs works as a per-thread register
# limit of max_registers_per_multi_processor / 256, and over_max_threads needs a block that
# fits everything else.)
SMALL_A = dict(max_threads_dim_x=8, max_threads_dim_y=8, max_threads_per_block=12, warp_size=2,
               max_registers_per_thread=32, max_regs_per_block=48,
               max_registers_per_multi_processor=4096, max_blocks_per_multi_processor=128,
               max_shared_mem_per_block=192, max_shmem_per_multi_processor=8192, float_size=2)
SMALL_B = dict(max_threads_dim_x=8, max_threads_dim_y=8, max_threads_per_block=8, warp_size=4,
               max_registers_per_thread=6, max_regs_per_block=32,
               max_registers_per_multi_processor=8192, max_blocks_per_multi_processor=64,
               max_shared_mem_per_block=768, max_shmem_per_multi_processor=32768, float_size=4)
DEVICES = {"small-a": SMALL_A, "small-b": SMALL_B}


def small_device(which="small-a", **changes):
    return resolve_device("k40c").replace(name=f"k40c-{which}", **{**DEVICES[which], **changes})


# ---------------------------------------------------------------------------------------------
# Figs. 10-15, in plain Python 3

def dim_vec_values(precision, arithmetic):
    if precision == "double":
        return [1, 2] if arithmetic == "real" else [1]
    return [1, 4] if arithmetic == "real" else [1, 2]


def gemm_oracle(dev, precision="double", arithmetic="real", trans_a=0, trans_b=0, stats=None):
    """The surviving configurations as a Counter of rows (COLUMNS order). ``stats`` (a dict) gets
    ``alone``: per condition, how many configurations it alone rejects (every other condition
    passes), and ``hits``: per condition, whether it rejects any configuration at all."""
    X, Y = dev.max_threads_dim_x, dev.max_threads_dim_y
    double = precision == "double"
    complex_ = arithmetic == "complex"
    min_threads_per_multi_processor = 256
    min_fmas_per_load = 2
    if stats is not None:
        alone = stats["alone"] = {c: 0 for c in CONDITIONS}
        hit = stats["hits"] = {c: 0 for c in CONDITIONS}

    # Fig. 11: the iterators, as functions of the values they depend on
    def blk_m_values(dim_m):
        return range(dim_m, X + 1, dim_m)

    def blk_n_values(dim_n):
        return range(dim_n, Y + 1, dim_n)

    blk_k_values = range(1, min(X, Y) + 1)
    dim_vecs = dim_vec_values(precision, arithmetic)

    def vec_mul_values(dim_vec):
        return [0] if dim_vec == 1 else range(0, 2)

    def dim_m_a_values(blk_m, blk_k, dim_vec):
        return range(1, (blk_m if trans_a == 0 else blk_k) // dim_vec + 1)

    def dim_n_a_values(blk_m, blk_k):
        return range(1, (blk_k if trans_a == 0 else blk_m) + 1)

    def dim_m_b_values(blk_k, blk_n, dim_vec):
        return range(1, (blk_k if trans_b == 0 else blk_n) // dim_vec + 1)

    def dim_n_b_values(blk_k, blk_n):
        return range(1, (blk_n if trans_b == 0 else blk_k) + 1)

    # supersets: each iterator's values over the product of its dependencies' supersets
    def superset(fn, *deps):
        out = []
        for combo in itertools.product(*deps):
            for v in fn(*combo):
                if v not in out:
                    out.append(v)
        return out

    s_dim_m, s_dim_n = list(range(1, X + 1)), list(range(1, Y + 1))
    s_blk_m, s_blk_n = superset(blk_m_values, s_dim_m), superset(blk_n_values, s_dim_n)
    s_blk_k = list(blk_k_values)
    s_vec_mul = superset(vec_mul_values, dim_vecs)
    s_dim_m_a = superset(dim_m_a_values, s_blk_m, s_blk_k, dim_vecs)
    s_dim_n_a = superset(dim_n_a_values, s_blk_m, s_blk_k)
    s_dim_m_b = superset(dim_m_b_values, s_blk_k, s_blk_n, dim_vecs)
    s_dim_n_b = superset(dim_n_b_values, s_blk_k, s_blk_n)

    def core_conditions(dim_m, dim_n, blk_m, blk_n, blk_k, dim_vec):
        # Fig. 12: derived variables
        threads_per_block = dim_m * dim_n
        thr_m = blk_m // dim_m
        thr_n = blk_n // dim_n
        regs_per_thread = thr_m * thr_n
        if double:
            regs_per_thread = regs_per_thread * 2
        if complex_:
            regs_per_thread = regs_per_thread * 2
        regs_per_block = regs_per_thread * threads_per_block
        shmem_per_block = blk_k * (blk_m + blk_n) * dev.float_size
        if double:
            shmem_per_block = shmem_per_block * 2
        if complex_:
            shmem_per_block = shmem_per_block * 2
        max_blocks_by_regs = dev.max_registers_per_multi_processor // regs_per_block
        max_blocks_by_regs = min(max_blocks_by_regs, dev.max_blocks_per_multi_processor)
        max_threads_by_regs = max_blocks_by_regs * threads_per_block
        max_blocks_by_shmem = dev.max_shmem_per_multi_processor // shmem_per_block
        max_blocks_by_shmem = min(max_blocks_by_shmem, dev.max_blocks_per_multi_processor)
        max_threads_by_shmem = max_blocks_by_shmem * threads_per_block
        loads_per_thread = (thr_m + thr_n) * blk_k // dim_vec
        loads_per_block = loads_per_thread * threads_per_block
        if complex_:
            loads_per_block = loads_per_block * 2
        fmas_per_thread = thr_m * thr_n * blk_k
        fmas_per_block = fmas_per_thread * threads_per_block
        if complex_:
            fmas_per_block = fmas_per_block * 4
        # Figs. 13 and 14
        return {
            "over_max_threads": threads_per_block > dev.max_threads_per_block,
            "over_max_regs_per_thread": regs_per_thread > dev.max_registers_per_thread,
            "over_max_regs_per_block": regs_per_block > dev.max_regs_per_block,
            "over_max_shmem": shmem_per_block > dev.max_shared_mem_per_block,
            "low_occupancy_regs": max_threads_by_regs < min_threads_per_multi_processor,
            "low_occupancy_shmem": max_threads_by_shmem < min_threads_per_multi_processor,
            "low_fmas": fmas_per_block < min_fmas_per_load * loads_per_block,
            "partial_warps": threads_per_block % dev.warp_size != 0,
        }

    # Fig. 15
    def a_conditions(dim_m, dim_n, blk_m, blk_k, dim_vec, dim_m_a, dim_n_a):
        return {
            "cant_reshape_a1": dim_m_a * dim_n_a != dim_m * dim_n,
            "cant_reshape_a2": (trans_a == 0 and
                                ((blk_m % (dim_m_a * dim_vec) != 0) or (blk_k % dim_n_a != 0)))
            or (trans_a != 0 and
                ((blk_k % (dim_m_a * dim_vec) != 0) or (blk_m % dim_n_a != 0))),
        }

    def b_conditions(dim_m, dim_n, blk_k, blk_n, dim_vec, dim_m_b, dim_n_b):
        return {
            "cant_reshape_b1": dim_m_b * dim_n_b != dim_m * dim_n,
            "cant_reshape_b2": (trans_b == 0 and
                                ((blk_k % (dim_m_b * dim_vec) != 0) or (blk_n % dim_n_b != 0)))
            or (trans_b != 0 and
                ((blk_n % (dim_m_b * dim_vec) != 0) or (blk_k % dim_n_b != 0))),
        }

    def hits(conds):
        return [name for name, hit in conds.items() if hit]

    counter = Counter()
    free = list(itertools.product(range(2), range(2), range(2), range(2)))   # tex_a .. shmem_banks
    for core in itertools.product(s_dim_m, s_dim_n, s_blk_m, s_blk_n, s_blk_k, dim_vecs):
        dim_m, dim_n, blk_m, blk_n, blk_k, dim_vec = core
        if blk_m not in blk_m_values(dim_m) or blk_n not in blk_n_values(dim_n):
            continue
        core_hits = hits(core_conditions(*core))
        if stats is not None:
            for c in core_hits:
                hit[c] += 1
        if len(core_hits) > (1 if stats is not None else 0):
            continue
        a_side = []
        for dim_m_a, dim_n_a in itertools.product(s_dim_m_a, s_dim_n_a):
            if dim_m_a not in dim_m_a_values(blk_m, blk_k, dim_vec) or \
                    dim_n_a not in dim_n_a_values(blk_m, blk_k):
                continue
            a_side.append(((dim_m_a, dim_n_a),
                           hits(a_conditions(dim_m, dim_n, blk_m, blk_k, dim_vec, dim_m_a, dim_n_a))))
        b_side = []
        for dim_m_b, dim_n_b in itertools.product(s_dim_m_b, s_dim_n_b):
            if dim_m_b not in dim_m_b_values(blk_k, blk_n, dim_vec) or \
                    dim_n_b not in dim_n_b_values(blk_k, blk_n):
                continue
            b_side.append(((dim_m_b, dim_n_b),
                           hits(b_conditions(dim_m, dim_n, blk_k, blk_n, dim_vec, dim_m_b, dim_n_b))))
        vec_muls = [v for v in s_vec_mul if v in vec_mul_values(dim_vec)]
        for (a, a_hits), (b, b_hits) in itertools.product(a_side, b_side):
            every = core_hits + a_hits + b_hits
            if not every:
                for vec_mul, rest in itertools.product(vec_muls, free):
                    counter[core + (vec_mul,) + a + b + rest] += 1
            elif stats is not None:
                for c in a_hits + b_hits:
                    hit[c] += 1
                if len(every) == 1:
                    alone[every[0]] += len(vec_muls) * len(free)
    return counter


# ---------------------------------------------------------------------------------------------

# (device, precision, arithmetic, trans_a, trans_b): all four precision/arithmetic pairs, all
# four transpositions
CASES = [("small-a", "double", "real", 0, 0), ("small-a", "single", "real", 1, 0),
         ("small-a", "single", "complex", 0, 1), ("small-a", "double", "complex", 1, 1),
         ("small-b", "single", "complex", 0, 0), ("small-b", "single", "complex", 1, 1)]
CASE_IDS = ["-".join(map(str, c)) for c in CASES]


def _settings(precision, arithmetic, trans_a, trans_b):
    """The -D settings of a case."""
    return {"precision": precision, "arithmetic": arithmetic, "trans_a": trans_a, "trans_b": trans_b}


@pytest.fixture(scope="module")
def oracle_results():
    """case -> (Counter of the surviving rows, stats), computed once."""
    out = {}
    for case in CASES:
        stats = {}
        out[case] = (gemm_oracle(small_device(case[0]), *case[1:], stats=stats), stats)
    return out


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_small_device_makes_every_condition_reject(case, oracle_results):
    expected, stats = oracle_results[case]
    assert 20 <= sum(expected.values()) <= 6000, sum(expected.values())
    idle = [c for c in CONDITIONS if not stats["hits"][c]]
    assert not idle, f"conditions that reject nothing: {idle}"


def test_every_condition_alone_rejects_somewhere(oracle_results):
    alone = {c: sum(stats["alone"][c] for _, stats in oracle_results.values()) for c in CONDITIONS}
    assert all(alone.values()), f"conditions never the only reason to reject: {alone}"


def test_oracle_transcription_on_a_hand_checked_configuration():
    """Worked out by hand on small-a, double real, no transposition: dim 2 x 2 (4 threads),
    blk 4 x 4 x 2. thr 2 x 2: 8 registers per thread, 32 per block; shared memory
    2 * (4 + 4) * 2 * 2 = 64 bytes; 4096 // 32 = 128 blocks by registers and 8192 // 64 = 128 by
    shared memory: 512 threads. dim_vec 1: 8 loads and 8 fmas per thread, 8 < 2 * 8: low_fmas.
    dim_vec 2: 4 loads, 8 >= 2 * 4: survives; A is read as 2 x 2 (4 = blk_m // dim_vec... 2 x 2
    threads), B as 1 x 4 (blk_k // dim_vec = 1)."""
    expected = gemm_oracle(small_device("small-a"), "double", "real", 0, 0)
    prefix = (2, 2, 4, 4, 2)
    assert not [r for r in expected if r[:6] == prefix + (1,)]
    mine = sorted(r for r in expected if r[:6] == prefix + (2,))
    assert mine == sorted(prefix + (2, vm, 2, 2, 1, 4) + free for vm in (0, 1)
                          for free in itertools.product(range(2), repeat=4))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_gemm_matches_the_papers_figures(case, backend, oracle_results):
    expected, _ = oracle_results[case]
    space = beast.load(GEMM, device=small_device(case[0]), settings=_settings(*case[1:]))
    assert space.iterators == COLUMNS
    assert set(space.conditions) == set(CONDITIONS)
    arr = space.enumerate(backend=backend)
    got = rows_counter(arr, COLUMNS)
    assert got == expected, (f"beast has {sum((got - expected).values())} configurations the "
                             f"figures reject and misses {sum((expected - got).values())}")
    assert space.count(backend=backend) == sum(expected.values())


@pytest.mark.parametrize("case", CASES[:2], ids=CASE_IDS[:2])
def test_gemm_backends_agree_in_order(case, backend):
    """The same rows in the same order, whatever the number of threads."""
    space = beast.load(GEMM, device=small_device(case[0]), settings=_settings(*case[1:]))
    reference = rows(space.enumerate(backend="python"))
    for threads in (None, 1, 2, 5):
        assert rows(space.enumerate(backend=backend, threads=threads)) == reference, threads
        assert space.count(backend=backend, threads=threads) == len(reference), threads
        chunks = list(space.iterate(chunk_size=97, backend=backend, threads=threads))
        assert [r for c in chunks for r in rows(c)] == reference, threads


@pytest.mark.parametrize("condition", CONDITIONS)
def test_removing_a_condition_from_the_file_changes_the_survivors(condition, tmp_path, oracle_results):
    """Without its @condition decorator (the function stays, unused), the space keeps exactly the
    configurations that this condition alone rejected, on top of the survivors."""
    text = open(GEMM).read()
    start = text.index(f"def {condition}(")
    deco = text.rindex("@condition", 0, start)
    path = tmp_path / "gemm_without.py"
    path.write_text(text[:deco] + text[start:])
    totals = []
    for case in CASES:
        expected, stats = oracle_results[case]
        if not stats["alone"][condition]:
            continue
        space = beast.load(path, device=small_device(case[0]), settings=_settings(*case[1:]))
        assert condition not in space.conditions
        assert len(space.enumerate()) == sum(expected.values()) + stats["alone"][condition]
        totals.append(case)
        break
    assert totals, "no case where the condition alone rejects"
