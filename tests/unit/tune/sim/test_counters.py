"""Counters without a GPU (beast.tune.sim.counters): the host simulator's traces of the hooks, the
wavefront and sector model, the simulator's numbers against hand counts for an unpadded and a
padded tensor-core configuration and one of the paper's template, and ``beast tune --explain``."""
import json

import numpy as np
import pytest

from beast.cli import main
from beast.errors import BeastError
from beast.tune.sim.counters import (EVENT, KTileCounters, format_counters, global_sectors, simulate_counters, smem_wavefronts, warp_totals)
from beast.tune.sim.hostsim import COUNT_DEFINE, HOST_SHIM, host_compiler, shim_text
from beast.tune.kernels.mma import MmaLayout
from conftest import SPACES

needs_cxx = pytest.mark.skipif(host_compiler() is None, reason="no C++20 host compiler")
DNN = dict(precision="double", arithmetic="real", trans_a=0, trans_b=0)
MMA = f"{SPACES}/gemm_mma.py"


def mma_config(**kw) -> dict:
    """A tensor-core configuration: m8n8k4, 2 x 2 warps of 16 x 16, blk_k 16, 2 stages, 16-byte
    copies; the parameters that later templates add at the values that keep the text of before."""
    cfg = dict(mma_m=8, mma_k=4, warps_m=2, warps_n=2, warp_m=16, warp_n=16, blk_k=16, stages=2, vec=2,
               pad_a=0, pad_b=0)
    names = MmaLayout.required_names()
    cfg.update({n: v for n, v in dict(swizzle=0, frag_buf=1).items() if n in names})
    cfg.update(kw)
    return cfg


# ------------------------------------------------------------------ the model

def test_wavefronts_follow_the_bank_model():
    lanes = np.arange(32)[:, None]
    assert smem_wavefronts(4 * lanes, 4) == (1, 1)                  # 32 words, 32 banks
    assert smem_wavefronts(8 * lanes, 4) == (2, 1)                  # stride 2 words: 2-way
    assert smem_wavefronts(128 * lanes, 4) == (32, 1)               # one bank, 32 words
    assert smem_wavefronts(np.zeros((32, 1)), 4) == (1, 1)          # one word: a broadcast
    assert smem_wavefronts(np.zeros((32, 1)), 8) == (1, 1)          # one double: the passes merge
    assert smem_wavefronts(8 * lanes, 8) == (2, 2)                  # 64-bit: two half-warps
    assert smem_wavefronts(16 * lanes, 16) == (4, 4)                # 128-bit: four quarter-warps
    assert smem_wavefronts(256 * lanes, 8) == (32, 2)               # 16 lanes on one bank pair, twice
    assert smem_wavefronts(np.hstack([4 * lanes, 8 * lanes]), 4) == (3, 2)   # two requests


def test_sectors_count_the_32_byte_chunks_a_request_touches():
    lanes = np.arange(32)[:, None]
    full = np.full((32, 1), 16)
    assert global_sectors(16 * lanes, full) == 16                   # 512 contiguous bytes
    assert global_sectors(256 * lanes, full) == 32                  # a sector per lane
    assert global_sectors(16 * lanes + 24, full) == 17              # misaligned: one more
    assert global_sectors(16 * lanes, np.zeros((32, 1))) == 0       # zero-fill reads nothing


def test_a_warp_whose_lanes_disagree_is_reported_not_counted():
    one = np.zeros(2, EVENT)
    one["kind"], one["bytes"] = (1, 1), 8
    other = one.copy()
    other["kind"][1] = 2
    assert warp_totals([one] * 32, 32)["lds_requests"] == 2
    with pytest.raises(BeastError, match="lane 5.*not warp-uniform"):
        warp_totals([one] * 5 + [other] + [one] * 26, 32)
    with pytest.raises(BeastError, match="lane 31 records 1 counted events, lane 0 2"):
        warp_totals([one] * 31 + [one[:1]], 32)


def test_the_ordinary_shim_has_no_counting():
    assert shim_text() == HOST_SHIM and shim_text(True) == COUNT_DEFINE + HOST_SHIM
    assert "#ifdef BEAST_HOST_COUNT" in HOST_SHIM and "#define BEAST_HOST_COUNT" not in HOST_SHIM
    counters = KTileCounters(*[2.0] * 11, warps=4)
    assert counters.block()["mma"] == 8.0 and counters.as_dict()["sectors_per_request"] == 1.0


# ------------------------------------------------------------------ the simulator against hand counts

# Both configurations: DGEMM NN, blk_m = blk_n = 32, blk_k = 16, 128 threads (4 warps).  Warp w has
# wm = w % 2, wn = w / 2; lane l has g = l >> 2 (0..7) and q = l & 3 (0..3).  Elements are 8 bytes,
# two 4-byte words: element e covers words 2e, 2e + 1, banks 2e % 32 and 2e % 32 + 1, so the bank
# pair of e is e % 16.  A stage of A is 16 rows (k) of 32 elements (m), rows A_LD = 32 + pad_a
# apart; a stage of B is 32 rows (n) of 16 elements (k), rows B_LD = 16 + pad_b apart.  A stage
# starts at a multiple of 128 bytes, so it does not move a bank.
#
# Per warp and k-tile, whatever the padding: 4 k-steps (16 / mma_k) x (FM + FN = 2 + 2) fragment
# loads, one element each: 16 requests of 8 bytes, each two half-warps (lanes 0-15: g 0..3, q 0..3;
# lanes 16-31: g 4..7): 2 wavefronts ideal, 32 in all.  MMAs: 4 k-steps x 2 x 2 = 16.  One barrier.
#
# pad 0 (A_LD = 32, B_LD = 16):
#   A, register of MMA row-block i at k-step ks: e = (4ks + q) * 32 + 16wm + 8i + g, so e % 16 =
#   8i + g: in a half-warp the four q of one g ask one bank pair for four distinct words: 4
#   wavefronts per half, 8 per request.
#   B, MMA column-block j: e = (16wn + 8j + g) * 16 + 4ks + q, so e % 16 = 4ks + q: the four g of one
#   q share a bank pair: 8 per request.
#   16 requests x 8 = 128 wavefronts per warp (ideal 32).
# pad 4 (A_LD = 36, B_LD = 20):
#   A: 36 % 16 = 4, e % 16 = (4q + 8i + g) % 16: for g 0..3 (or 4..7) and q 0..3, 4q + g takes 16
#   distinct values mod 16: 16 bank pairs, one word each: 1 wavefront per half, 2 per request.
#   B: 20 % 16 = 4, e % 16 = (4g + q + 4ks) % 16 (the 64wn and 32j vanish): distinct over a half: 2.
#   16 requests x 2 = 32 wavefronts per warp: the ideal.
# cp.async (both): 16-byte copies, A_COPIES = B_COPIES = (256 copies of a stage) / 128 = 2 per thread,
#   4 requests per warp, each four quarter-warps of 8 lanes.  Copy v = i*128 + 32w + l of A has
#   c = 2 (v % 16), r = v / 16: lanes 8p .. 8p+7 store 16 contiguous elements of one row (128
#   bytes, 32 distinct banks): 1 wavefront per quarter, 4 per request, 16 per warp, the ideal, with
#   or without padding (a row's start moves, its 128 bytes stay contiguous).  B: c = 2 (v % 8),
#   r = v / 8: 8 lanes, one row of 16 elements: likewise 16.
# Global (both): A's copies read A[(k0 + r) * lda + c]: lanes 0-15 one row (c 0..30: 256 bytes, 8
#   sectors), lanes 16-31 the next: 16 sectors per request; B's read B[(col0 + r) * ldb + k0 + c]:
#   four rows of 128 bytes: 16.  4 requests, 64 sectors per warp, 16 per request.
HAND = {
    0: dict(lds_requests=16, lds_wavefronts=128, lds_ideal_wavefronts=32),
    4: dict(lds_requests=16, lds_wavefronts=32, lds_ideal_wavefronts=32),
}
BOTH = dict(cp_async_requests=4, cp_async_wavefronts=16, cp_async_ideal_wavefronts=16, global_requests=4,
            global_sectors=64, mma=16, fma=0, barriers=1, warps=4)


@needs_cxx
@pytest.mark.parametrize("pad", [0, 4])
def test_tensor_core_counters_match_the_hand_count(pad):
    got = simulate_counters(mma_config(pad_a=pad, pad_b=pad), DNN)
    assert got == KTileCounters(**HAND[pad], **BOTH)
    assert got.sectors_per_request() == 16.0
    assert got.block()["lds_wavefronts"] == 4 * HAND[pad]["lds_wavefronts"]


@needs_cxx
def test_the_review_figure_of_a_128_by_128_block():
    """Warps 4 x 2 of 32 x 64, m16n8k16, blk_k 16, pad 0: per warp 2 x 8 A-fragment registers and
    8 x 4 B registers, 48 loads of 8 wavefronts (ideal 2) = 384; 8 cp.async requests of 4: with
    the block's 8 warps, 3,072 + 256 = 3,328 shared-memory wavefronts per k-tile, for 128 MMAs."""
    cfg = mma_config(mma_m=16, mma_k=16, warps_m=4, warps_n=2, warp_m=32, warp_n=64, stages=3)
    block = simulate_counters(cfg, dict(DNN, trans_a=0, trans_b=0)).block()
    assert block["lds_wavefronts"] == 3072 and block["lds_ideal_wavefronts"] == 768
    assert block["lds_wavefronts"] + block["cp_async_wavefronts"] == 3328 and block["mma"] == 128


# The paper's template, DGEMM NN, async_copy=1: a 16 x 8 thread grid (4 warps: warp w has tx = l % 16,
# ty = 2w + l / 16), blk 32 x 32 x 8, thr_m = 2, thr_n = 4, scalar reads (vec_mul=0), no padding.
# Reads per thread and k: a[i] = cA[k*32 + 16i + tx] (2) and b[i] = cB[k*32 + 8i + ty] (4): 8 x 6 =
#   48 requests of 8 bytes.  A: each half-warp reads 16 consecutive elements, 128 bytes, and the two
#   halves the same ones: the second pass is served with the first, 1 wavefront per request; B: a
#   half-warp shares one ty, one element, a broadcast, and the halves differ: 2.  8 x (2 + 4 x 2) =
#   80 wavefronts, the ideal.  FMA: 8 x 2 x 4 = 64 per thread, one instruction per warp each.
# cp.async: A is stored as in memory: one 16-byte copy per thread, (c, s) = (2 (t % 16), t / 16),
#   8 lanes one row of 128 bytes: 4 wavefronts (ideal).  B is stored transposed, element by element:
#   two 8-byte copies per thread (e = 0, 1), t_m = l % 4, t_n = 8w + l / 4, at sB[(2 t_m + e)*32 +
#   t_n]: bank pair t_n % 16; a half-warp has 4 t_n, each asked for 4 words (t_m): 4 + 4 = 8
#   wavefronts per copy (ideal 2): 4 + 16 = 20 per warp, ideal 8.
# Global: A 16 sectors (two rows of 256 bytes); each B copy: 8 columns t_n, elements 2 t_m + e of
#   each (bytes 0..63 of a column): 2 sectors each, 16.  48 sectors over 3 requests.
PAPER = dict(dim_m=16, dim_n=8, blk_m=32, blk_n=32, blk_k=8, dim_vec=2, vec_mul=0, dim_m_a=16, dim_n_a=8,
             dim_m_b=4, dim_n_b=32, tex_a=0, tex_b=0, shmem_l1=0, shmem_banks=0, pad_a=0, pad_b=0,
             smem_buffers=2, async_copy=1)


@needs_cxx
def test_the_papers_template_counters_match_the_hand_count():
    got = simulate_counters(PAPER, DNN, family="gemm")
    assert got == KTileCounters(lds_requests=48, lds_wavefronts=80, lds_ideal_wavefronts=80, cp_async_requests=3,
                                cp_async_wavefronts=20, cp_async_ideal_wavefronts=8, global_requests=3,
                                global_sectors=48, mma=0, fma=64, barriers=1, warps=4)


# ------------------------------------------------------------------ beast tune --explain

def explain_args(cfg):
    return ["tune", MMA, "--device", "a100", "--explain", ",".join(f"{k}={v}" for k, v in cfg.items())]


@needs_cxx
def test_explain_prints_the_kernel_and_its_counters(capsys, monkeypatch):
    from beast.tune.model import compiler_facts
    facts = compiler_facts.KernelFacts(registers=56, spill_stores=0, spill_loads=0, local_bytes=0, shared_bytes=0,
                                       arch="sm_80")
    monkeypatch.setattr(compiler_facts, "kernel_facts", lambda kernel, arch: facts)
    assert main(explain_args(mma_config())) == 0
    out = capsys.readouterr().out
    assert "128 threads (4 warps) per block, 16,384 bytes of dynamic shared memory" in out
    assert "compiler (sm_80): 56 registers per thread, no spills" in out
    assert format_counters(simulate_counters(mma_config(), DNN)) in out
    assert "ideal 32 per warp (4.00x)" in out and "16.00 per request" in out

    def missing(kernel, arch):
        raise BeastError("no CUDA compiler found")
    monkeypatch.setattr(compiler_facts, "kernel_facts", missing)        # no compiler: no such line
    assert main(["tune", MMA, "--device", "a100", "--explain", json.dumps(mma_config())]) == 0
    out = capsys.readouterr().out
    assert "compiler (" not in out and "16,384 bytes" in out


@pytest.mark.parametrize("config, message", [
    ("mma_m=8", "the configuration has no value for mma_k, warps_m"),
    ("mma_m=8,bogus=1", "'bogus' is not an iterator of the space"),
    ("mma_m=eight", "mma_m='eight' is not an integer"),
    ("mma_m", "'mma_m' is not name=value"),
    ("[1, 2]", "the JSON configuration is not an object"),
    ('{"mma_m": true}', "mma_m=true is not an integer"),
    ("{oops", "is not valid JSON"),
])
def test_explain_refuses_a_configuration_it_cannot_read(config, message, capsys):
    assert main(["tune", MMA, "--device", "a100", "--explain", config]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_explain_refuses_a_configuration_that_is_not_a_survivor(capsys):
    assert main(explain_args(mma_config(mma_m=16))) == 2        # m16n8k4 is sm_90's; a100 is 8.0
    err = capsys.readouterr().err
    assert "is not a survivor of gemm_mma for a100 with precision=double" in err
    assert main(["tune", MMA, "--device", "a100"]) == 2         # without --explain, --size is needed
    assert "beast tune needs --size M N K" in capsys.readouterr().err
    assert main(explain_args(mma_config()) + ["--size", "0", "64", "64"]) == 2   # the model's size is checked
    assert "the size M N K must be positive, got 0 64 64" in capsys.readouterr().err
