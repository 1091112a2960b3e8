"""The tuning log (header check, resume) and the runner with a fake GPU backend."""
import json
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.lang.devices import resolve_device
from beast.errors import BeastError, DeviceError
from beast.tune import Measurement, format_report, gpu_available, progress_line, tune
from beast.tune.driver.log import TuneLog, make_header, read_log
from beast.tune.device.measure import (COMPILE_ERROR, CONTEXT_LOST, LAUNCH_ERROR, OK, WRONG, CompileFailure, FatalBackendError, t_quantile_975, time_until_stable)
from beast.tune.driver.local import candidates, random_keys
from conftest import TESTS as TESTS_DIR

GEMM = str(Path(TESTS_DIR).parent / "spaces" / "gemm.py")
SMALL = dict(max_threads_per_block=64, max_threads_dim_x=16, max_threads_dim_y=16, warp_size=4,
             max_shared_mem_per_block=2048, max_shmem_per_multi_processor=16384)
NAMES = ["a", "b"]


def small_space(**settings):
    return beast.load(GEMM, device=resolve_device("k40c").replace(**SMALL),
                      settings=dict(dict(precision="single"), **settings))


@pytest.fixture(scope="module")
def space():
    return small_space()


def header(**changes):
    base = dict(device={"profile": "k40c", "gpu": "Fake"}, size=(64, 64, 64), space_hash="abc",
                iterators=NAMES, settings={"precision": "double", "trans_a": 0}, kernel_version=1,
                space_path="spaces/gemm.py")
    base.update(changes)
    return make_header(**base)


# ------------------------------------------------------------------ log

def test_new_log_starts_with_header_and_appends_records(tmp_path):
    path = tmp_path / "r.jsonl"
    with TuneLog.open(path, header()) as log:
        log.append({"a": 1, "b": 2, "extra": 9}, Measurement(OK, ms=1.5, gflops=10.0, ci_rel=0.01, reps=7))
        log.append({"a": 2, "b": 2}, Measurement(WRONG, error="bad"))
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["size"] == [64, 64, 64]
    rec = json.loads(lines[1])
    assert rec["config"] == {"a": 1, "b": 2} and rec["status"] == "ok" and rec["gflops"] == 10.0
    assert json.loads(lines[2])["status"] == "wrong"


@pytest.mark.parametrize("field, value, words", [
    ("size", (64, 64, 32), "problem size (M N K) (log has 64 64 64, this run has 64 64 32)"),
    ("device", {"profile": "h100", "gpu": "Fake"}, 'device (profile: log has "k40c", this run has "h100")'),
    ("settings", {"precision": "single", "trans_a": 0}, "settings (precision"),
    ("space_hash", "xyz", "space file"),
    ("iterators", ["a", "c"], "iterator list"),
    ("kernel_version", 2, "kernel template version"),
])
def test_mismatched_log_is_refused_naming_the_field(tmp_path, field, value, words):
    path = tmp_path / "r.jsonl"
    TuneLog.open(path, header()).close()
    with pytest.raises(BeastError) as err:
        TuneLog.open(path, header(**{field: value}))
    text = str(err.value)
    assert text.startswith(f"{path}: error: refusing to resume")
    assert words in text
    assert "hint:" in text


def test_space_path_and_creation_time_may_differ(tmp_path):
    path = tmp_path / "r.jsonl"
    TuneLog.open(path, header()).close()
    log = TuneLog.open(path, header(space_path="elsewhere/gemm.py"))
    assert log.resumed
    log.close()


def test_resume_reads_done_configs_and_drops_a_torn_line(tmp_path):
    path = tmp_path / "r.jsonl"
    with TuneLog.open(path, header()) as log:
        log.append({"a": 1, "b": 1}, Measurement(OK, gflops=1.0, ms=1.0))
        log.append({"a": 1, "b": 2}, Measurement(COMPILE_ERROR, error="x"))
    with open(path, "a") as f:
        f.write('{"config": {"a": 9, "b"')                 # interrupted mid-write
    log = TuneLog.open(path, header())
    assert set(log.done) == {(1, 1), (1, 2)} and log.resumed_count == 2
    log.append({"a": 3, "b": 3}, Measurement(OK, gflops=2.0, ms=0.5))
    log.close()
    hdr, records, dropped = read_log(str(path))
    assert not dropped and [r["config"]["a"] for r in records] == [1, 1, 3]


def test_not_a_log_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(BeastError, match="not valid JSON|not a beast tune log"):
        TuneLog.open(path, header())
    path.write_text('{"some": "json"}\n')
    with pytest.raises(BeastError, match="not a beast tune log"):
        TuneLog.open(path, header())


# ------------------------------------------------------------------ timing rule

def test_time_until_stable_converges_and_caps():
    rng = np.random.default_rng(0)
    calls = []

    def steady(n):
        calls.append(n)
        return n * 2.0 * (1 + 0.01 * rng.standard_normal())

    t = time_until_stable(steady, rel_ci=0.03)
    assert t.converged and abs(t.mean_ms - 2.0) < 0.1 and t.ci_rel <= 0.03 and t.samples >= 5
    assert calls[:2] == [1, 1]                              # warm-up

    def noisy(n):
        return n * float(rng.choice([1.0, 10.0]))

    t = time_until_stable(noisy, rel_ci=0.03, max_samples=30)
    assert not t.converged and t.samples == 30
    t = time_until_stable(lambda n: n * 0.01, rel_ci=0.03)          # 10 us kernels: batched
    assert t.launches_per_sample == 100
    assert t_quantile_975(1) == pytest.approx(12.706) and t_quantile_975(1000) == pytest.approx(1.962, abs=1e-3)


# ------------------------------------------------------------------ runner with a fake backend

def fake_speed(cfg):
    return float(cfg["blk_m"] * cfg["blk_n"] + 3 * cfg["blk_k"] + cfg["dim_m"] + 0.5 * cfg["tex_a"])


class FakeBackend:
    """Compiles nothing; blk_k == 3 fails to compile, blk_k == 5 to launch, blk_k == 7 is wrong."""

    device_name = "Fake GPU"

    def __init__(self, fail_fatal_after=None, interrupt_after=None):
        self.measured = []
        self.compiled = []
        self.fail_fatal_after = fail_fatal_after
        self.interrupt_after = interrupt_after

    def compile(self, cfg):
        self.compiled.append(dict(cfg))
        if cfg["blk_k"] == 3:
            raise CompileFailure("error: expected a ';'")
        return dict(cfg)

    def measure(self, cfg):
        self.measured.append(cfg)
        if self.interrupt_after is not None and len(self.measured) > self.interrupt_after:
            raise KeyboardInterrupt
        if self.fail_fatal_after is not None and len(self.measured) > self.fail_fatal_after:
            raise FatalBackendError("the CUDA context is unusable after launch: illegal address")
        if cfg["blk_k"] == 5:
            raise RuntimeError("too many resources requested for launch")
        if cfg["blk_k"] == 7:
            return Measurement(WRONG, error="result differs from cuBLAS")
        g = fake_speed(cfg)
        return Measurement(OK, ms=1000.0 / g, gflops=g, ci_rel=0.02, reps=10)

    def reference(self):
        return Measurement(OK, ms=0.1, gflops=300.0)


def keys(configs, names):
    return [tuple(c[n] for n in names) for c in configs]


def test_exhaustive_budget_follows_enumeration_order(space, tmp_path):
    backend = FakeBackend()
    seen = []
    report = tune(space, (256, 256, 256), budget=40, log_path=tmp_path / "r.jsonl", backend=backend,
                  compile_workers=2, progress=lambda done, total, best: seen.append((done, total, best)))
    first = next(space.iterate(chunk_size=40))
    assert keys(backend.measured, space.iterators) == [tuple(int(v) for v in row) for row in first.tolist()]
    assert report.tried == 40 and report.measured == 40 and report.resumed == 0
    assert seen[0][0] == 0 and seen[-1][:2] == (40, 40)
    best = seen[-1][2]
    assert progress_line(*seen[0]) == "[ 0/40]  no verified configuration yet"
    assert progress_line(*seen[-1]).startswith(f"[40/40]  best {best.gflops:.1f} GFLOP/s  dim_m=")
    assert best.gflops == max(fake_speed(c) for c in backend.measured if c["blk_k"] not in (3, 5, 7))


def test_failures_are_recorded_and_the_run_goes_on(space, tmp_path):
    rows = space.enumerate()
    # pick a budget that reaches configurations with blk_k = 3, 5 and 7
    need = max(int(np.argmax(rows["blk_k"] == k)) for k in (3, 5, 7)) + 1
    backend = FakeBackend()
    report = tune(space, (64, 64, 64), budget=need, log_path=tmp_path / "r.jsonl", backend=backend)
    counts = report.counts
    assert counts[COMPILE_ERROR] == int(np.sum(rows["blk_k"][:need] == 3))
    assert counts[LAUNCH_ERROR] == int(np.sum(rows["blk_k"][:need] == 5))
    assert counts[WRONG] == int(np.sum(rows["blk_k"][:need] == 7))
    assert counts[OK] == need - counts[COMPILE_ERROR] - counts[LAUNCH_ERROR] - counts[WRONG]
    _, records, _ = read_log(str(tmp_path / "r.jsonl"))
    assert records[-1]["run"]["measured"] == need and records[-1]["run"]["ended"] == "done"
    records = records[:-1]                            # the run's summary
    errors = {r["status"]: r.get("error") for r in records}
    assert "expected a ';'" in errors[COMPILE_ERROR]
    assert "too many resources" in errors[LAUNCH_ERROR]
    assert len(records) == need + 1                   # + the cuBLAS reference
    assert len(backend.measured) == need - counts[COMPILE_ERROR]     # compile errors are not measured


def test_random_strategy_is_a_seeded_sample_without_repeats(space):
    a = FakeBackend()
    tune(space, (64, 64, 64), budget=60, strategy="random", seed=5, backend=a)
    b = FakeBackend()
    tune(space, (64, 64, 64), budget=60, strategy="random", seed=5, backend=b)
    c = FakeBackend()
    tune(space, (64, 64, 64), budget=60, strategy="random", seed=6, backend=c)
    names = space.iterators
    # compared as sets: the compile-ahead threads (one per CPU) may compile them in any order
    ka, kb, kc = keys(a.compiled, names), keys(b.compiled, names), keys(c.compiled, names)
    assert set(ka) == set(kb) and set(ka) != set(kc) and len(ka) == len(set(ka)) == 60
    survivors = set(map(tuple, space.enumerate().tolist()))
    assert set(ka) <= survivors
    # not the enumeration order: spread over the space
    first60 = set(map(tuple, space.enumerate()[:60].tolist()))
    assert len(set(ka) & first60) < 10
    if hasattr(space, "sample"):     # random goes through beast.search (tests/unit/search/test_base.py)
        return
    # independent of chunking
    rows = space.enumerate()
    order = np.argsort(random_keys(rows, names, 5), kind="stable")[:60]
    assert ka == [tuple(int(v) for v in rows[i].tolist()) for i in order]
    assert [tuple(c.values()) for c in candidates(space, "random", 60, {}, seed=5, chunk_size=97)] == ka


def test_resume_skips_done_configs(space, tmp_path):
    log = tmp_path / "r.jsonl"
    first = FakeBackend(interrupt_after=25)
    report = tune(space, (64, 64, 64), budget=70, strategy="random", seed=1, log_path=log, backend=first)
    assert report.interrupted and report.tried == 25
    second = FakeBackend()
    progress = []
    report = tune(space, (64, 64, 64), budget=70, strategy="random", seed=1, log_path=log, backend=second,
                  progress=lambda d, t, b: progress.append((d, t)))
    assert report.complete and report.resumed == 25 and report.measured == 45 and report.tried == 70
    names = space.iterators
    done_first = set(keys(first.measured[:25], names))
    assert not done_first & set(keys(second.compiled, names))
    assert progress[0] == (25, 70) and progress[-1] == (70, 70)
    # the union is exactly the uninterrupted run's sample
    whole = FakeBackend()
    tune(space, (64, 64, 64), budget=70, strategy="random", seed=1, backend=whole)
    assert done_first | set(keys(second.measured, names)) == set(keys(whole.measured, names))
    # a third run with the same budget has nothing left to do
    third = FakeBackend()
    report = tune(space, (64, 64, 64), budget=70, strategy="random", seed=1, log_path=log, backend=third)
    assert third.compiled == [] and report.tried == 70
    # and the log is refused for another size or other settings
    with pytest.raises(BeastError, match="problem size"):
        tune(space, (64, 64, 32), budget=70, log_path=log, backend=FakeBackend())
    with pytest.raises(BeastError, match="different settings"):
        tune(small_space(trans_a=1), (64, 64, 64), budget=70, log_path=log, backend=FakeBackend())


def test_fatal_backend_error_stops_after_recording(space, tmp_path):
    log = tmp_path / "r.jsonl"
    backend = FakeBackend(fail_fatal_after=10)
    report = tune(space, (64, 64, 64), budget=30, log_path=log, backend=backend)
    assert report.stopped and "illegal address" in report.stopped and report.tried == 11
    _, records, _ = read_log(str(log))
    assert records[-1]["run"]["ended"] == "stopped" and records[-2]["status"] == CONTEXT_LOST
    report = tune(space, (64, 64, 64), budget=30, log_path=log, backend=FakeBackend())
    assert report.tried == 30 and report.resumed == 11


def test_report_table(space):
    report = tune(space, (128, 128, 128), budget=50, backend=FakeBackend())
    text = format_report(report, top=5)
    lines = text.splitlines()
    assert lines[0].startswith("sgemm_NN  M=128 N=128 K=128  on Fake GPU (profile k40c)")
    assert "cuBLAS:      300.0 GFLOP/s" in text
    assert "tried 50 configuration(s)" in text
    head = next(i for i, l in enumerate(lines) if l.lstrip().startswith("rank"))
    cols = lines[head].split()
    assert cols[:4] == ["rank", "GFLOP/s", "%", "cuBLAS"]
    assert lines[head].split("CI %")[1].split() == list(space.iterators)
    table = lines[head + 1:]
    assert len(table) == 5
    best = report.best(5)
    top = table[0].split()
    assert float(top[1]) == pytest.approx(best[0].gflops, abs=0.05)
    assert float(top[2]) == pytest.approx(100 * best[0].gflops / 300.0, abs=0.05)
    peak = space.device.peak_gflops("single")
    assert float(top[3]) == pytest.approx(100 * best[0].gflops / peak, abs=0.05)
    speeds = [float(row.split()[1]) for row in table]
    assert speeds == sorted(speeds, reverse=True)


def test_all_without_budget_uses_the_space_count(space):
    seen = []
    small = small_space(precision="double", arithmetic="complex")
    report = tune(small, (32, 32, 32), backend=FakeBackend(), progress=lambda d, t, b: seen.append(t))
    assert report.tried == small.count() == seen[-1]


def test_space_without_gemm_parameters_is_refused():
    class Other:
        iterators = ("dim_m", "dim_n", "blk_m", "blk_n", "tile_k")
        settings = {"precision": "single", "arithmetic": "real", "trans_a": 0, "trans_b": 0}
        source_hash = "x"
        device = None

    with pytest.raises(BeastError) as err:
        tune(Other(), (8, 8, 8), backend=FakeBackend())
    assert "blk_k, dim_vec, vec_mul, dim_m_a" in str(err.value)


def test_bad_arguments(space):
    with pytest.raises(BeastError, match="strategy"):
        tune(space, (8, 8, 8), strategy="genetic", backend=FakeBackend())
    with pytest.raises(BeastError, match="budget"):
        tune(space, (8, 8, 8), budget=0, backend=FakeBackend())
    with pytest.raises(BeastError, match="positive"):
        tune(space, (8, 0, 8), backend=FakeBackend())


def test_without_gpu_tune_says_no_gpu_found(space):
    if gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(DeviceError) as err:
        tune(space, (64, 64, 64), budget=1)
    assert "no GPU found" in str(err.value)
