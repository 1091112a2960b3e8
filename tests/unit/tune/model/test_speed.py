"""The speed model (beast.tune.model.speed, speed_features): its pieces on hand-checkable cases,
the Spearman helper, and the lower-bound gate replayed on the real H200 logs."""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

from beast.lang.devices import get_profile
from beast.errors import BeastError
from beast.tune.model import speed as sm
from beast.tune.kernels.paper import GemmLayout
from beast.tune.kernels.mma import MmaLayout
from beast.tune.model.features import (gemm_counters, global_sectors, mma_counters_analytic, smem_wavefronts)
from conftest import TESTS as TESTS_DIR

ROOT = os.path.dirname(TESTS_DIR)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import model_check  # noqa: E402

H200 = get_profile("h200")
DOUBLE = {"precision": "double", "arithmetic": "real", "trans_a": 0, "trans_b": 0}
LANES = np.arange(32)

#: a one-warp DGEMM tile: 16 x 2 threads, 2 x 8 elements each, k-tile 2
SMALL = dict(dim_m=16, dim_n=2, blk_m=32, blk_n=16, blk_k=2, dim_vec=1, vec_mul=0, dim_m_a=32, dim_n_a=1,
             dim_m_b=2, dim_n_b=16, tex_a=0, tex_b=0, shmem_l1=1, shmem_banks=0)


def test_bank_passes():
    assert smem_wavefronts(LANES * 4, 4) == 1                  # 32 words, one per bank
    assert smem_wavefronts(LANES * 128, 4) == 32               # all in bank 0
    assert smem_wavefronts(np.zeros(32, int), 4) == 1          # one word, broadcast
    assert smem_wavefronts(np.zeros(32, int), 8) == 1          # one double, broadcast: passes merge
    assert smem_wavefronts(np.zeros(32, int), 16) == 1
    assert smem_wavefronts(LANES // 16 * 8, 8) == 2            # two doubles, one per half-warp
    assert smem_wavefronts(LANES * 8, 8) == 2                  # 256 bytes
    assert smem_wavefronts(LANES * 16, 16) == 4                # 512 bytes
    assert smem_wavefronts((LANES % 16) * 8, 8) == 1           # 16 doubles, each read twice
    assert smem_wavefronts(LANES * 16 * 8, 8) == 32            # 32 doubles in one bank pair
    assert smem_wavefronts((LANES & 3) * 512 + (LANES >> 2) * 8, 8) == 8   # 4 rows 512 B apart, 2 passes


def test_sectors():
    assert global_sectors(LANES * 8, 8) == 8                   # 256 contiguous bytes
    assert global_sectors(LANES * 4096 * 8, 8) == 32           # one column each
    assert global_sectors(LANES * 16 + 8, 16) == 17            # misaligned by half a vector


def test_gemm_counters_by_hand():
    L = GemmLayout.from_config(SMALL, DOUBLE)
    c = gemm_counters(L, (64, 64, 64))
    assert c.warps == 1 and c.barriers == 2
    assert c.fma == 2 * 8 * 2                                  # thr_m x thr_n x blk_k
    # per k: 2 reads of A (16 distinct doubles, each half-warp the same 128 bytes: 1 wavefront) and
    # 8 of B (ty = 0 for lanes 0..15, 1 for 16..31: two passes of one broadcast double each)
    assert (c.lds, c.lds_wavefronts) == (2 * (2 + 8), 2 * (2 * 1 + 8 * 2))
    # A: 32 x 2 stripe, lanes along m: 2 loads of 256 contiguous bytes (8 sectors); B: 2 x 16, lanes
    # (t % 2, t // 2): one load, 16 columns of 16 bytes (one sector each)
    assert (c.global_requests, c.global_sectors) == (3, 2 * 8 + 16)
    # stores: A's 2 x 32 consecutive doubles (two passes of 128 bytes); B's sB[k * 16 + n] at
    # k = t % 2, n = t // 2: lanes 0..15 write doubles 0..7 and 16..23, banks 0..15 twice (2 + 2)
    assert (c.sts, c.sts_wavefronts) == (3, 2 * 2 + 4)


def test_carveout_and_occupancy():
    rates = sm.Rates.of(H200, "double")
    most = H200.max_shmem_per_multi_processor
    assert sm.shared_capacity(9 * 1024, 0, most) == 16 * 1024     # prefer L1: the smallest that fits
    assert sm.shared_capacity(9 * 1024, 100, most) == most
    cfg = dict(SMALL, dim_m=8, dim_n=16, blk_m=128, blk_n=64, blk_k=8, dim_vec=2, dim_m_a=64, dim_n_a=2,
               dim_m_b=2, dim_n_b=64)
    L = GemmLayout.from_config(cfg, DOUBLE)
    assert sm.blocks_per_sm(L, 238, rates) == 2                   # 4 warps x 240 regs x 32 lanes
    assert sm.blocks_per_sm(L, 64, rates, carveout=0) == 1        # 12 KB + 1 KB of shared memory: 16 KB
    assert rates.fp_lanes == pytest.approx(64) and rates.tensor_flops == pytest.approx(256)


def test_spearman_by_hand(monkeypatch):
    x, y = [1, 2, 3, 4, 5], [5, 6, 7, 8, 7]
    # ranks of y: 1, 2, 3.5, 5, 3.5 -> sum dx dy = 8, sum dx^2 = 10, sum dy^2 = 9.5
    want = 8 / math.sqrt(95)
    assert sm.spearman(x, y) == pytest.approx(want)
    assert list(sm.rankdata(y)) == [1, 2, 3.5, 5, 3.5]
    monkeypatch.setitem(sys.modules, "scipy.stats", None)       # the numpy fallback
    assert sm.spearman(x, y) == pytest.approx(want)
    assert sm.spearman([3, 2, 1], [1, 2, 3]) == pytest.approx(-1)
    with pytest.raises(BeastError):
        sm.spearman([1, 2], [1])


def test_prediction_and_gate():
    gate = sm.ModelGate("gemm", DOUBLE, (4096, 4096, 4096), H200)
    big = dict(SMALL, dim_m=8, dim_n=16, blk_m=128, blk_n=64, blk_k=8, dim_vec=2, dim_m_a=64, dim_n_a=2,
               dim_m_b=2, dim_n_b=64)
    p_small, p_big = gate.predict(SMALL), gate.predict(big)
    assert p_big.ms < p_small.ms and p_big.limit in sm.LIMITS
    assert p_big.lower_ms < p_big.ms and p_big.gflops < H200.peak_gflops("double")
    assert gate.order([SMALL, big]) == [big, SMALL]
    assert gate.can_beat(SMALL, None) and gate.can_beat(SMALL, 1e9)
    assert not gate.can_beat(SMALL, p_small.lower_ms / 2)
    spilled = gate.predict(big, facts={"regs": 255, "local_bytes": 2000})
    assert spilled.ms > p_big.ms


def test_tensor_core_counters_and_swizzle():
    cfg = dict(mma_m=16, mma_k=4, warps_m=2, warps_n=2, warp_m=32, warp_n=32, blk_k=16, stages=3, vec=1,
               pad_a=0, pad_b=0, swizzle=0, frag_buf=1)
    L = MmaLayout.from_config(cfg, DOUBLE)
    c = mma_counters_analytic(L, (4096, 4096, 4096), cfg)
    assert c.mma == 4 * 2 * 4 * 4 and c.mma_flops == 2 * 16 * 8 * 4   # warps x FM x FN x k-steps
    # B's fragment (n = g, k = q) with rows of 16 doubles (128 bytes): the 8 rows of a pass share banks
    swizzled = mma_counters_analytic(MmaLayout.from_config(dict(cfg, swizzle=1), DOUBLE), (4096, 4096, 4096))
    assert swizzled.lds == c.lds and swizzled.lds_wavefronts < c.lds_wavefronts
    # what beast.tune.sim.counters.simulate_counters counts for these two (host simulator, 4 warps)
    assert (c.lds_wavefronts, swizzled.lds_wavefronts) == (1024, 256)
    assert (c.sts_wavefronts, c.global_sectors) == (128, 512)
    p = sm.predict_ms(cfg, DOUBLE, (4096, 4096, 4096), H200)
    peak = 2 * H200.peak_gflops("double")
    assert 0 < p.gflops < peak and p.lower_ms < p.ms


@pytest.fixture(scope="module")
def logs():
    out = []
    for path in model_check.log_paths():
        log = model_check.load_log(path)
        out.append((log, model_check.predictions(log, H200)))
    return out


def test_real_logs_rank_and_gate(logs):
    for log, preds in logs:
        row = model_check.check(log, H200, preds=preds)
        if log["name"] in ("dgemm_random", "sgemm_random"):
            assert row["spearman"] >= 0.8, row
        rep = model_check.replay(log, H200, preds=preds)
        # the gate never skips a measured top-10 configuration, with room to spare
        assert rep["skipped_top10"] == 0 and rep["margin"] > 1.2, rep
        if log["name"] == "dgemm_random":
            assert rep["skipped"] > 20 and rep["saved_kernel_s"] > 0.3 * rep["total_kernel_s"]
        # no measured time is below its lower bound
        assert all(r["ms"] >= p.lower_ms for r, p in zip(log["records"], preds))


# ------------------------------------------------------------------ the gate in beast tune's loop

class _Instant:
    """A stand-in backend: the first configuration it measures takes 1 ns, every later one 1 s
    (so that, once the first is measured, the model's lower bound of any other exceeds it)."""

    device_name = "Fake GPU"

    def __init__(self):
        self.compiled, self.measured = [], []

    def compile(self, cfg):
        self.compiled.append(dict(cfg))
        return dict(cfg)

    def measure(self, cfg):
        from beast.tune.device.measure import OK, Measurement
        self.measured.append(dict(cfg))
        ms = 1e-6 if len(self.measured) == 1 else 1000.0
        return Measurement(OK, ms=ms, gflops=1.0 / ms, ci_rel=0.01, reps=5)


def test_the_tuner_orders_its_first_batch_and_prunes_by_the_lower_bound(tmp_path):
    from unit.tune.driver.test_log import small_space
    from beast.tune import tune
    from beast.tune.driver.log import read_log
    from beast.tune.device.measure import OK, PRUNED
    space = small_space()
    size = (64, 64, 64)
    backend, log = _Instant(), tmp_path / "gate.jsonl"
    report = tune(space, size, budget=12, strategy="random", log_path=log, backend=backend, model=True,
                  compile_workers=1, lookahead=4)
    gate = sm.tuning_gate(space, size)
    assert backend.measured[0] == backend.compiled[0] == gate.order(backend.compiled[:4])[0]
    # after the 1 ns measurement every lower bound exceeds the best: the rest is pruned, unmeasured
    assert report.counts[OK] == 1 and report.counts[PRUNED] == 11 and report.pruned == 11
    assert len(backend.measured) == 1 and report.measured == 1
    _, records, _ = read_log(str(log))
    pruned = [r for r in records if r.get("status") == PRUNED]
    assert len(pruned) == 11 and all(r["lower_ms"] > r["best_ms"] == 1e-6 for r in pruned)
    assert "11 pruned by the speed model" in __import__("beast.tune", fromlist=["x"]).format_report(report)
    # a rerun resumes: nothing is tried again, pruned ones included
    again = tune(space, size, budget=12, strategy="random", log_path=log, backend=_Instant(), model=True)
    assert again.measured == 0 and again.resumed == 12
    # without the model, every candidate is measured in the strategy's order
    plain = _Instant()
    off = tune(space, size, budget=12, strategy="random", backend=plain, model=False, compile_workers=1,
               lookahead=4)
    assert off.pruned == 0 and len(plain.measured) == 12
    # the same first batch: the model put it in order of predicted time
    assert backend.compiled[:4] == gate.order(plain.compiled[:4]) != plain.compiled[:4]


def test_the_gate_is_off_when_the_space_was_pruned_for_another_gpu():
    # the space's profile is the K40c (3.5); a 9.0 GPU measures: the K40c's bound would prune its winners
    from unit.tune.driver.test_log import small_space
    from beast.tune import format_report, tune

    class _OnH200(_Instant):
        compute_capability = (9, 0)

    backend = _OnH200()
    report = tune(small_space(), (64, 64, 64), budget=6, strategy="random", backend=backend, model=True,
                  compile_workers=1, lookahead=2)
    assert report.pruned == 0 and len(backend.measured) == 6
    assert "lets the speed model bound its times" in format_report(report)


def test_the_gate_keeps_what_it_cannot_judge_and_never_prunes_before_a_best():
    gate = sm.ModelGate("gemm", DOUBLE, (4096,) * 3, H200)
    assert gate.keeps({"dim_m": 16}, 1e-9)                  # the layout refuses it: kept
    assert gate.keeps(SMALL, None) and gate.can_beat(SMALL, None)
    assert not gate.keeps(SMALL, 1e-9)                       # nothing beats a nanosecond at 4096^3
    assert list(gate.order_first(iter([SMALL]), 4)) == [SMALL]
    with pytest.raises(BeastError, match="model must be True, False or None"):
        from unit.tune.driver.test_log import small_space
        from beast.tune import tune
        tune(small_space(), (64, 64, 64), budget=1, backend=_Instant(), model="yes")


def test_the_gate_bounds_a_tensor_core_kernel_on_its_fewest_registers():
    # the estimate says 128x128x32 spills (ptxas: 218 registers, no spill); the
    # bound must not: no time near cuBLAS's on the H200 (2.35 ms at 4096^3) may prune the sm_90 designs
    gate = sm.ModelGate("gemm_mma", DOUBLE, (4096,) * 3, H200)
    base = dict(mma_m=16, mma_k=16, warps_m=4, warps_n=2, warp_m=32, warp_n=64, blk_k=16, stages=3, vec=2,
                pad_a=2, pad_b=2, swizzle=0, frag_buf=1)
    designs = [base, dict(base, warps_m=2, warps_n=2, warp_m=64, warp_n=32),
               dict(base, blk_k=32)]
    # on the ranking's estimate (a spill) the bound would exceed such a time
    assert min(sm.LOWER_BOUND_FACTOR * gate.predict(dict(c, frag_buf=2)).ms for c in designs) > 2.35
    for cfg in designs + [dict(c, frag_buf=2) for c in designs]:
        assert gate.keeps(cfg, 2.35)
        assert gate.lower_ms(cfg) <= gate.predict(cfg, facts={"regs": 218, "local_bytes": 0}).ms
    lay = MmaLayout.from_config(designs[2], DOUBLE)
    assert sm.optimistic_facts(lay) == {"regs": 2 * 32 * 64 // 32 + 2 * (16 * 16 + 8 * 16) // 32 + 16,
                                        "local_bytes": 0, "estimated": True}
    # --explain without a compiler prints that bound, not the estimate's
    from beast.tune.model.explain import model_line
    line = model_line(designs[2], DOUBLE, (4096,) * 3, H200, None, lay)
    assert "(estimated registers)" in line and f"lower bound {gate.lower_ms(designs[2]):.4g} ms" in line
