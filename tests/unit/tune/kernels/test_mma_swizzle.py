"""The tensor-core GEMM's XOR-swizzled shared memory (``swizzle``), its double-buffered fragments
(``frag_buf``) and its hoisted copy addresses: what the template refuses, that its fragment and
cp.async addresses are free of bank conflicts (an address-level model), and the very text run on
CPU threads against exact products, races and a mismatched swizzle included."""
import itertools
import tempfile
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.errors import BeastError
from beast.tune.kernels import mma as kernel_mma
from beast.tune.kernels.mma import MmaKernel, MmaLayout, generate
from conftest import host_case
from conftest import TESTS as TESTS_DIR

MMA = str(Path(TESTS_DIR).parent / "spaces" / "gemm_mma.py")
TRANS = list(itertools.product((0, 1), (0, 1)))
BASE = dict(mma_m=8, mma_k=4, warps_m=2, warps_n=2, warp_m=16, warp_n=32, blk_k=16, stages=2, vec=2,
            pad_a=0, pad_b=0, swizzle=1, frag_buf=2)


def st(arithmetic="real", ta=0, tb=0):
    return dict(precision="double", arithmetic=arithmetic, trans_a=ta, trans_b=tb)


def test_template_refuses_what_the_swizzle_cannot_do():
    cases = [(dict(BASE, pad_a=2), st(), "swizzle=1 needs pad_a=0 and pad_b=0"),
             (dict(BASE, warps_m=1, warp_m=24, vec=1), st(), "24 elements of 8 bytes do neither"),
             (dict(BASE, swizzle=2), st(), "swizzle=2 must be 0"),
             (dict(BASE, frag_buf=3), st(), "frag_buf=3 must be 1")]
    for cfg, settings, message in cases:
        with pytest.raises(BeastError, match=message):
            generate(cfg, settings)
    # 24 double2 elements are 3 bank rows: complex takes what real refuses
    assert generate(dict(BASE, warps_m=1, warp_m=24, vec=1), st("complex")).layout.swizzle == 1
    assert generate(dict(BASE, swizzle=0, pad_a=2), st()).layout.a_ld == 34


def test_parameters_match_the_space():
    space = beast.load(MMA, device="h100")
    assert set(MmaLayout.required_names()) == set(space.iterators)
    assert "swizzle" in space.iterators and "frag_buf" in space.iterators
    rows = space.sample(400, seed=3)
    assert set(rows["swizzle"]) == {0, 1} and set(rows["frag_buf"]) == {1, 2}
    assert not np.any((rows["swizzle"] == 1) & ((rows["pad_a"] != 0) | (rows["pad_b"] != 0)))
    for row in rows[rows["swizzle"] == 1][:40]:
        generate({n: int(row[n]) for n in space.iterators}, space.settings)    # refuses nothing
    a, b = generate(BASE, st()), generate(dict(reversed(list(BASE.items()))), st())
    assert a.source == b.source


# ------------------------------------------------------------------ bank conflicts, address by address

def _wavefronts(addresses, width):
    """Shared memory: 32 banks of 4 bytes; an 8-byte warp access is served as two half-warps, a
    16-byte one as four quarter-warps; each group takes as many wavefronts as the most distinct
    4-byte words one bank is asked for."""
    per = 16 if width == 8 else 8
    total = 0
    for g in range(0, 32, per):
        banks = {}
        for a in addresses[g:g + per]:
            for word in range(a // 4, (a + width) // 4):
                banks.setdefault(word % 32, set()).add(word)
        total += max(len(w) for w in banks.values())
    return total


def _conflicts(L):
    """(wavefronts, conflict-free minimum) of one k-tile's fragment loads and cp.async stores of
    every warp, with the addresses the generated code forms (base per residue plus a constant)."""
    s, es = L.settings, L.settings.itemsize
    got = least = 0
    for warp in range(L.warps_m * L.warps_n):
        wm, wn = warp % L.warps_m, warp // L.warps_m
        for x, start in (("a", 0), ("b", L.stages * L.a_se * L.a_ld * es)):
            residues, loads = kernel_mma._loads(L, x)
            for v, d in loads.values():
                addresses = []
                for lane in range(32):
                    g, q = lane >> 2, lane & 3
                    if x == "a":
                        row, col = ((wm * L.warp_m + g, q) if s.trans_a else (q, wm * L.warp_m + g))
                    else:
                        row, col = ((q, wn * L.warp_n + g) if s.trans_b else (wn * L.warp_n + g, q))
                    base = row * getattr(L, f"{x}_ld") + col
                    element = L.stage_offset(x, 0, base + residues[v]) - residues[v] + d
                    assert element == L.stage_offset(x, 0, base + d)       # the loads find the stores
                    addresses.append(start + element * es)
                got += _wavefronts(addresses, es)
                least += 32 * es // 128
            ce, ld = getattr(L, f"{x}_ce"), getattr(L, f"{x}_ld")
            for i in range(getattr(L, f"{x}_copies")):
                vs = [(i * L.threads + warp * 32 + lane) * L.vec for lane in range(32)]
                addresses = [start + L.stage_offset(x, o // ce, o % ce) * es for o in vs]
                assert all(L.stage_offset(x, 0, o + e) == L.stage_offset(x, 0, o) + e      # vectors stay whole
                           for o in vs for e in range(L.vec))
                got += _wavefronts(addresses, L.vec * es)
                least += 32 * L.vec * es // 128
    return got, least


@pytest.mark.parametrize("arithmetic", ["real", "complex"])
def test_swizzle_is_free_of_bank_conflicts(arithmetic):
    vec = 2 if arithmetic == "real" else 1
    shapes = [dict(mma_m=16, mma_k=16, warps_m=2, warps_n=2, warp_m=32, warp_n=32, blk_k=16),
              dict(mma_m=16, mma_k=8, warps_m=1, warps_n=2, warp_m=32, warp_n=16, blk_k=8),
              dict(mma_m=8, mma_k=4, warps_m=2, warps_n=1, warp_m=8, warp_n=16, blk_k=4)]   # 32-byte rows
    for shape, (ta, tb) in itertools.product(shapes, TRANS):
        cfg = dict(shape, stages=2, vec=vec if shape["blk_k"] > 4 else 1, frag_buf=1)
        swizzled = MmaLayout.from_config(dict(cfg, swizzle=1, pad_a=0, pad_b=0), st(arithmetic, ta, tb))
        got, least = _conflicts(swizzled)
        assert got == least, (shape, ta, tb)
        if shape["blk_k"] == 16:          # padding 0 is not, on these shapes
            padded = MmaLayout.from_config(dict(cfg, swizzle=0, pad_a=0, pad_b=0), st(arithmetic, ta, tb))
            assert _conflicts(padded)[0] > least


# ------------------------------------------------------------------ the text, run on the CPU

def _variant(k, name, old, new):
    assert old in k.body, old
    return MmaKernel(k.layout, name, k.body.replace(k.name, name).replace(old, new))


def test_swizzle_and_double_buffering_run_on_cpu_threads_exactly():
    from beast.tune.sim.hostsim import HostKernels, host_compiler
    if host_compiler() is None:
        pytest.skip("no C++20 host compiler (g++/clang++)")
    rng = np.random.default_rng(7)
    kernels = []
    combos = itertools.cycle([(1, 2), (1, 1), (0, 2)])
    for i, (arithmetic, (ta, tb)) in enumerate(itertools.product(("real", "complex"), TRANS)):
        swizzle, frag_buf = next(combos)
        cfg = dict(BASE, swizzle=swizzle, frag_buf=frag_buf, pad_a=0 if swizzle else 2, pad_b=0 if swizzle else 4,
                   vec=2 if arithmetic == "real" and i % 2 == 0 else 1, stages=2 + i % 3, blk_k=(8, 4)[i % 2],
                   warp_n=16)
        if i in (2, 5):                                # the m16 shapes (sm_90); k-steps of 8 and 16
            cfg.update(mma_m=16, mma_k=(8, 16)[i == 5], warp_m=16, blk_k=(8, 16)[i == 5])
        kernels.append(generate(cfg, st(arithmetic, ta, tb), name=f"swz_{i}"))
    good = kernels[0]
    assert good.layout.swizzle == 1 and good.layout.frag_buf == 2
    broken = [_variant(good, "swz_no_barrier", "__syncthreads();                     // ... everyone's; every", "//"),
              _variant(good, "swz_no_wait", "beast_cp_async_wait<STAGES - 2>();   // slice kt + 1", "//"),
              _variant(good, "swz_loads_unswizzled", "const int a_w0 = swz_a(a_base + 0) - 0;",
                       "const int a_w0 = a_base;")]
    with tempfile.TemporaryDirectory() as tmp:
        host = HostKernels(kernels + broken, workdir=tmp)
        for k in kernels:
            # odd edges over several k-tiles; K smaller than a k-tile; K = 0 (beta * C)
            for size in ((37, 45, 29), (20, 9, 3), (5, 3, 0)):
                got, exact = host_case(host, k, size, rng)
                assert np.array_equal(got, exact), f"{k.name} {k.settings.routine} {k.layout.config()} {size}"
        for k in broken:
            got, exact = host_case(host, k, (37, 70, 61), rng)
            assert not np.array_equal(got, exact), k.name
    layouts = [k.layout for k in kernels]
    assert {(L.swizzle, L.frag_buf) for L in layouts} == {(1, 2), (1, 1), (0, 2)}
    assert {L.blk_k // L.mma_k % 2 for L in layouts if L.frag_buf == 2} == {0, 1}   # both loop forms
