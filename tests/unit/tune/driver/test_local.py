"""tune()'s arguments: each wrong one is a BeastError naming it, before any compile, GPU work
or log file (a negative thread count ran nothing and said nothing; a float budget, a NaN or a
string raised Python's own errors; a float or bool size was truncated)."""
import numpy as np
import pytest
from beast.cli import main
from beast.errors import BeastError
from beast.tune import tune
from beast.tune.driver.local import check_tune_arguments
from unit.tune.driver.test_log import GEMM, FakeBackend, small_space
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from beast.tune import format_report, progress_line, tune
from beast.tune.device.cut_replay import format_cut_table, replay_cut
from beast.tune.driver.log import read_log
from beast.tune.device.measure import EARLY_CUT, OK, SPILL_CUT, cutoff_ms, time_until_stable
from beast.tune.driver.local import (MAX_COMPILE_WORKERS, default_compile_workers, parse_duration, run_summary)
from unit.tune.driver.test_log import FakeBackend, fake_speed, small_space
import beast
from beast.tune.device.measure import OK, WRONG, Measurement
from beast.search import POOL_LIMIT, STRATEGIES, Pool, make_strategy
from conftest import TESTS as TESTS_DIR


@pytest.fixture(scope="module")
def space():
    return small_space()


SIZE = (64, 64, 64)

BAD = [
    # (the arguments changed from a valid call, words the error has)
    (dict(compile_workers=-2), "compile_workers must be at least 1, not -2"),
    (dict(compile_workers=0), "compile_workers must be at least 1, not 0"),
    (dict(compile_workers=2.5), r"compile_workers must be an integer of at least 1 or None \(the default\), not 2.5"),
    (dict(compile_workers=True), "compile_workers must be an integer of at least 1 or None"),
    (dict(lookahead=-1), "lookahead must be at least 1, not -1"),
    (dict(lookahead="4"), "lookahead must be an integer of at least 1 or None .*, not '4'"),
    (dict(budget=0), "budget must be at least 1, not 0"),
    (dict(budget=-3), "budget must be at least 1, not -3"),
    (dict(budget=2.0), r"budget must be an integer of at least 1 or None \(every survivor\), not 2.0"),
    (dict(budget=float("nan")), "budget must be an integer of at least 1 or None .*, not nan"),
    (dict(budget=float("inf")), "budget must be an integer of at least 1 or None .*, not inf"),
    (dict(budget="x"), "budget must be an integer of at least 1 or None .*, not 'x'"),
    (dict(budget=True), "budget must be an integer of at least 1 or None .*, not True"),
    (dict(strategy="random", seed=-1), r"seed must be a non-negative integer \(0, 1, 2, \.\.\.\), not -1"),
    (dict(seed=-1), r"seed must be a non-negative integer"),
    (dict(seed=1.5), r"seed must be a non-negative integer .*, not 1.5"),
    (dict(seed=None), r"seed must be a non-negative integer .*, not None"),
    (dict(size=(2.5, 64, 64)), r"size M N K must be three integers, got \(2.5, 64, 64\)"),
    (dict(size=(True, 64, 64)), r"size M N K must be three integers, got \(True, 64, 64\)"),
    (dict(size=(64, 64)), r"size M N K must be three integers, got \(64, 64\)"),
    (dict(size=64), "size M N K must be three integers, got 64"),
    (dict(size="64"), "size M N K must be three integers, got '64'"),
    (dict(size=(64, -1, 64)), "size M N K must be positive, got 64 -1 64"),
    (dict(time_limit=0), "time limit must be a positive number of seconds, got 0"),
    (dict(time_limit=float("nan")), "time limit must be a positive number of seconds, got nan"),
    (dict(chunk_size=0), "chunk_size must be at least 1, not 0"),
    (dict(progress=5), r"progress must be a function \(done, total, best\) or None, not 5"),
    (dict(strategy="genetic"), "unknown strategy 'genetic'"),
]


@pytest.mark.parametrize("changes, words", BAD, ids=[repr(c) for c, _ in BAD])
def test_a_wrong_argument_is_a_beast_error_before_any_work(space, tmp_path, changes, words):
    kw = {"budget": 5, "log_path": tmp_path / "r.jsonl", **changes}
    size = kw.pop("size", SIZE)
    backend = FakeBackend()
    with pytest.raises(BeastError, match=words):
        tune(space, size, backend=backend, **kw)
    assert backend.compiled == [] and backend.measured == []
    assert not (tmp_path / "r.jsonl").exists()


NO_BACKEND = [(c, w) for c, w in BAD if set(c) & {"compile_workers", "lookahead", "seed"}
              or c in (dict(budget=2.0), dict(size=(2.5, 64, 64)))]


@pytest.mark.parametrize("changes, words", NO_BACKEND, ids=[repr(c) for c, _ in NO_BACKEND])
def test_without_a_backend_the_argument_is_named_before_the_gpu_is_looked_for(space, changes, words):
    kw = {"budget": 5, **changes}
    size = kw.pop("size", SIZE)
    with pytest.raises(BeastError, match=words):
        tune(space, size, **kw)


def test_numpy_integers_and_small_counts_are_valid(space):
    backend = FakeBackend()
    report = tune(space, np.array([64, 64, 64]), budget=np.int64(6), seed=np.int64(2), strategy="random",
                  compile_workers=np.int32(1), lookahead=np.int64(1), chunk_size=np.int64(7), backend=backend)
    assert report.size == (64, 64, 64) and all(type(x) is int for x in report.size)
    assert report.tried == 6 and type(report.budget) is int and report.compile_workers == 1
    same = FakeBackend()
    tune(space, SIZE, budget=6, seed=2, strategy="random", compile_workers=1, lookahead=1, backend=same)
    assert sorted(map(str, backend.compiled)) == sorted(map(str, same.compiled))


def test_defaults_stay_the_defaults(space):
    report = tune(space, SIZE, budget=4, compile_workers=None, lookahead=None, time_limit=None,
                  backend=FakeBackend())
    assert report.tried == 4 and report.compile_workers >= 1


def test_check_tune_arguments_takes_other_counts_by_name():
    # what tune_ray (beast.tune.driver.ray) shares: its own counts are checked by their names
    assert check_tune_arguments(SIZE, budget=None, seed=0, num_workers=None, prefetch=3) == (SIZE, None, None)
    assert check_tune_arguments([8, 8, 8], budget=np.int16(2), time_limit=5) == ((8, 8, 8), 2, 5.0)
    with pytest.raises(BeastError, match="num_workers must be at least 1, not 0"):
        check_tune_arguments(SIZE, num_workers=0)
    with pytest.raises(BeastError, match="prefetch must be an integer of at least 1 or None"):
        check_tune_arguments(SIZE, prefetch=1.5)


def test_cli_tune_names_a_budget_below_1(capsys):
    assert main(["tune", GEMM, "--size", "8", "8", "8", "--budget", "0"]) == 2
    err = capsys.readouterr().err
    assert "budget must be at least 1, not 0" in err and "Traceback" not in err
    assert main(["tune", GEMM, "--size", "8", "0", "8", "--budget", "3"]) == 2
    assert "size M N K must be positive, got 8 0 8" in capsys.readouterr().err


@pytest.mark.parametrize("kw, says", [(dict(budget="x"), "budget must be an integer"),
                                      (dict(lookahead=-1), "lookahead must be at least 1"),
                                      (dict(prefetch=0), "prefetch must be at least 1"),
                                      (dict(num_workers=1.5), "num_workers must be an integer"),
                                      (dict(max_attempts=0), "max_attempts must be at least 1"),
                                      (dict(compile_timeout=-1), "compile_timeout must be a positive number")])
def test_tune_ray_checks_its_arguments_before_starting_ray(kw, says):
    """The same checks as tune(), and Ray's own counts, before a Ray instance is started."""
    pytest.importorskip("ray")
    from beast.tune.driver.ray import tune_ray
    space = small_space()
    with pytest.raises(BeastError, match=says):
        tune_ray(space, (64, 64, 64), **kw)


# ---------------------------------------------------------------------------------------------
# The tuner's pace: the early cut of clear losers, twins measured once, the compile
# pool sized to the machine, a time limit, and the GPU's busy share in the report, the progress
# line and the log.  Fake backends; the cut replayed on the real H200 logs of bench/gpu_runs.

ROOT = Path(TESTS_DIR).parent
H200_LOGS = sorted((ROOT / "bench" / "gpu_runs" / "h200_2026-11-27").glob("*.jsonl"))


# ------------------------------------------------------------------ the cut rule

def launches(times):
    """``run(n)`` over a list of per-launch times (ms), recording every launch."""
    done = []

    def run(n):
        t = [times[min(len(done) + i, len(times) - 1)] for i in range(n)]
        done.extend(t)
        return sum(t)
    return run, done


def test_a_long_kernel_slower_than_the_cutoff_stops_after_its_warm_up():
    run, done = launches([30.0, 25.0, 25.0])
    t = time_until_stable(run, cutoff_ms=20.0)
    assert t.cut and not t.converged and len(done) == 2
    assert t.mean_ms == 25.0 and math.isinf(t.half_width_ms)     # the faster warm-up launch
    run, done = launches([30.0, 19.0, 19.0])                         # one warm-up under it: no cut
    t = time_until_stable(run, cutoff_ms=20.0)
    assert not t.cut and t.converged and len(done) == 2 + 5


def test_a_short_kernel_is_judged_on_its_first_batched_sample():
    run, done = launches([0.05] * 100)                 # 50 us: one sample is 20 launches
    t = time_until_stable(run, cutoff_ms=0.04)
    assert t.cut and t.samples == 1 and t.launches_per_sample == 20 and len(done) == 2 + 20
    assert t.mean_ms == pytest.approx(0.05)
    run, done = launches([0.05] * 400)
    t = time_until_stable(run, cutoff_ms=0.06)
    assert not t.cut and t.samples == 5


def test_the_cutoff_is_the_best_so_far_times_a_factor_stricter_for_spilling_kernels():
    assert cutoff_ms(None, 0) == (None, None)                        # no best yet: no cut
    assert cutoff_ms(4.0, 0) == (4.0 * EARLY_CUT, EARLY_CUT)
    assert cutoff_ms(4.0, 120) == (4.0 * SPILL_CUT, SPILL_CUT)       # spills: local memory
    assert cutoff_ms(4.0, 0, early_cut=None) == (None, None)          # switched off
    assert 1 < SPILL_CUT < EARLY_CUT
    with pytest.raises(BeastError, match="at least 1"):
        cutoff_ms(4.0, 0, early_cut=0.5)


# ------------------------------------------------------------------ the runner

class PacedBackend(FakeBackend):
    """FakeBackend whose measure takes ``best_ms`` and cuts (as CupyBackend does: configurations
    with blk_k > 4 spill) and whose identity ignores ``tex_a`` (two binaries that are one)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.best = []

    def identity(self, cfg):
        return tuple(v for k, v in sorted(cfg.items()) if k != "tex_a")

    def measure(self, cfg, best_ms=None):
        self.best.append(best_ms)
        meas = super().measure(cfg)
        if meas.status != OK:
            return meas
        cut, factor = cutoff_ms(best_ms, 8 if cfg["blk_k"] > 4 else 0)
        if cut is not None and meas.ms > cut:
            meas.ci_rel = None
            meas.extra.update(early_cut=True, cutoff_ms=cut, cut_factor=factor)
        return meas


def test_the_backend_is_told_the_best_time_so_far_and_cut_losers_are_logged_as_measured(tmp_path):
    space = small_space()
    log = tmp_path / "r.jsonl"
    backend = PacedBackend()
    report = tune(space, (64,) * 3, budget=60, strategy="random", seed=3, log_path=log, backend=backend)
    measured = [c for c in backend.measured]
    # every measure call got the best time of the configurations before it (None at first)
    best = None
    for cfg, told in zip(measured, backend.best):
        assert told == best
        if cfg["blk_k"] not in (3, 5, 7):
            ms = 1000.0 / fake_speed(cfg)
            best = ms if best is None else min(best, ms)
    _, records, _ = read_log(str(log))
    cut = [r for r in records if r.get("early_cut")]
    assert cut and report.cut == len(cut)
    assert all(r["status"] == OK and r["ms"] > r["cutoff_ms"] for r in cut)
    assert "cut" in format_report(report, top=60) and "clear loser(s)" in format_report(report)
    run = records[-1]["run"]
    assert run["early_cut"] == len(cut) and run["strategy"] == "random" and run["measured"] == 60
    # a resumed run counts the cut configurations as measured
    again = tune(space, (64,) * 3, budget=60, strategy="random", seed=3, log_path=log, backend=PacedBackend())
    assert again.measured == 0 and again.tried == 60


def test_twins_are_measured_once_and_their_time_copied(tmp_path):
    space = small_space()
    backend = PacedBackend()
    report = tune(space, (64,) * 3, budget=80, log_path=tmp_path / "r.jsonl", backend=backend,
                  compile_workers=1)
    configs = [r.config for r in report.results]
    twins = [r for r in report.results if r.measurement.extra.get("twin_of")]
    assert twins and report.twins == len(twins) and len(backend.measured) == 80 - len(twins) - report.counts["compile_error"]
    for r in twins:
        first = r.measurement.extra["twin_of"]
        assert first in configs and first != r.config and dict(first, tex_a=r.config["tex_a"]) == r.config
        original = next(o for o in report.results if o.config == first)
        assert r.ms == original.ms and r.status == original.status
    assert "measured once" in format_report(report)


def test_a_time_limit_stops_cleanly_with_the_log_complete(tmp_path):
    class Slow(FakeBackend):
        def measure(self, cfg):
            time.sleep(0.05)
            return super().measure(cfg)

    space = small_space()
    space.count()           # build its enumerator first: a cold C build alone can take 0.5 s of the limit
    log = tmp_path / "r.jsonl"
    t0 = time.monotonic()
    report = tune(space, (64,) * 3, budget=10_000, strategy="random", log_path=log, backend=Slow(),
                  time_limit=0.6, compile_workers=2)
    took = time.monotonic() - t0
    assert report.time_up and report.complete and not report.interrupted
    assert 3 <= report.measured < 40 and took < 3.0
    _, records, _ = read_log(str(log))
    assert sum("config" in r for r in records) == report.measured
    assert records[-1]["run"]["ended"] == "time limit" and records[-1]["run"]["time_limit_s"] == 0.6
    text = format_report(report)
    assert "stopped at the time limit (0.6 s)" in text and "GPU" in text and "% busy" in text
    # and the busy share is the measuring share of the loop's wall time
    assert 0.2 < report.gpu_busy <= 1.0 and report.rate == pytest.approx(report.measured / report.wall_s)
    with pytest.raises(BeastError, match="positive number of seconds"):
        tune(space, (64,) * 3, budget=5, backend=FakeBackend(), time_limit=0)


def test_progress_with_four_arguments_gets_the_report_and_shows_the_busy_share():
    space = small_space()
    seen = []
    tune(space, (64,) * 3, budget=12, backend=FakeBackend(),
         progress=lambda done, total, best, report: seen.append((done, total, best, report)))
    done, total, best, report = seen[-1]
    assert (done, total) == (12, 12) and report.measured == 12
    line = progress_line(done, total, best, report)
    assert line.startswith("[12/12]  GPU ") and "% busy" in line and "configs/s  best " in line
    three = []
    tune(space, (64,) * 3, budget=3, backend=FakeBackend(), progress=lambda d, t, b: three.append(d))
    assert three == [0, 1, 2, 3]


def test_the_compile_pool_is_sized_to_the_machine():
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default_compile_workers() == min(MAX_COMPILE_WORKERS, cpus)
    space = small_space()
    report = tune(space, (64,) * 3, budget=2, backend=FakeBackend())
    assert report.compile_workers == default_compile_workers()
    assert run_summary(report)["compile_workers"] == report.compile_workers


@pytest.mark.parametrize("text, seconds", [("600", 600), ("90s", 90), ("10m", 600), ("1.5h", 5400),
                                           ("1h30m", 5400), ("2m30s", 150), (" 45 ", 45)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "10x", "-5m", "0", "m"])
def test_bad_durations(text):
    with pytest.raises(BeastError):
        parse_duration(text)


def test_cli_time_limit_errors_are_for_users():
    from conftest import run_beast
    proc = run_beast("tune", str(ROOT / "spaces" / "gemm.py"), "--size", "64", "64", "64", "--time", "soon")
    assert proc.returncode == 2 and "cannot read the duration 'soon'" in proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------ the cut on real H200 logs

@pytest.mark.parametrize("path", H200_LOGS, ids=lambda p: p.stem)
def test_the_cut_replayed_on_the_h200_logs_keeps_the_best_and_the_top_ten(path):
    _, records, _ = read_log(str(path))
    got = replay_cut(records, path.name, draws=200)
    assert got.timed == sum("config" in r for r in records)
    assert got.best_kept and got.top_kept == 1.0 and got.worst_rank_shift == 0
    assert got.cut >= got.timed // 4 and got.saved_share > 0.4          # what it saves
    assert got.launches[1] < got.launches[0] and got.kernel_s[1] < got.kernel_s[0]
    assert "| yes |" in format_cut_table([got])


# ------------------------------------------------------------------ the prepared GPU check

def test_gpu_check_without_a_gpu_says_so_in_one_line_and_fails(tmp_path):
    env = dict(os.environ, PYTHON=sys.executable, OUT=str(tmp_path))
    proc = subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh")], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode != 0
    assert proc.stdout.strip().count("\n") == 0 and "no NVIDIA GPU" in proc.stdout and not proc.stderr
    assert not list(tmp_path.iterdir())                       # nothing measured, nothing written


def test_gpu_check_dry_run_lists_calls_of_at_most_five_minutes():
    proc = subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh"), "--dry-run"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    caps = [int(m) for m in re.findall(r"^call \d+ \(at most (\d+) s of 300\)", proc.stdout, re.M)]
    assert len(caps) == 3 and all(c <= 300 for c in caps)
    first = proc.stdout.split("call 2")[0]                    # the goals come first
    assert "gemm_mma.py" in first and "gemm_magma.py" in first and "-D precision=single" in first
    assert "-o addopts=-q" in proc.stdout                     # the tests need no pytest-xdist
    for line in proc.stdout.splitlines():                     # every run's own timeout is named
        if "beast tune" in line:
            assert re.match(r"\s+timeout -s INT \d+ ", line) and "--time " in line


def test_gpu_check_refuses_to_start_without_its_dependencies(tmp_path):
    # a Python that has none of them: the check names what is missing and measures nothing
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexec %s -S -I \"$@\"\n" % sys.executable)
    fake.chmod(0o755)
    env = dict(os.environ, PYTHON=str(fake), OUT=str(tmp_path / "out"))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh"), "--check"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "missing" in proc.stdout and "numpy" in proc.stdout
    assert not (tmp_path / "out").exists()


def test_gpu_table_summarizes_logs(tmp_path):
    space = small_space()
    for name in ("random", "local"):
        tune(space, (64,) * 3, budget=20, strategy=name, log_path=tmp_path / f"{name}.jsonl", backend=FakeBackend())
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_table.py"), str(tmp_path / "random.jsonl"),
                           str(tmp_path / "local.jsonl"), "--tests", "3 passed"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("| run | problem | strategy | configs | best GFLOP/s | cuBLAS GFLOP/s | % cuBLAS")
    random_row = next(line for line in lines if line.startswith("| random |")).split(" | ")
    assert random_row[1:4] == ["SGEMM NN 64³", "random", "20"]
    assert random_row[5] == "300" and float(random_row[7]) > 0 and 0 <= float(random_row[8]) <= 100
    assert lines[-1] == "GPU tests: 3 passed"


def test_a_slow_compile_does_not_hold_the_gpu_up(tmp_path):
    """The oldest configuration's compile runs on: the loop measures later ones that are ready,
    and the slow one when it is done; nothing is lost or measured twice."""
    space = small_space()
    first = {n: int(v) for n, v in zip(space.iterators, next(space.iterate(chunk_size=1))[0].tolist())}

    class SlowFirst(FakeBackend):
        def compile(self, cfg):
            if cfg == first:
                time.sleep(1.0)
            return super().compile(cfg)

    backend = SlowFirst()
    report = tune(space, (64,) * 3, budget=10, log_path=tmp_path / "r.jsonl", backend=backend,
                  compile_workers=2, lookahead=4)
    assert report.tried == 10 and report.complete
    assert backend.measured[0] != first and first in backend.measured[1:]
    configs = [tuple(r.config.values()) for r in report.results]
    assert len(set(configs)) == 10


def test_the_pipeline_simulation_runs_on_the_h200_logs():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "pipeline_sim.py")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(" | ") for line in proc.stdout.splitlines()[2:]]
    assert len(rows) == 15
    by = {(r[0].strip("| "), r[2], r[3], r[4]): float(r[6]) for r in rows}
    for log in ("dgemm_random", "sgemm_random", "zgemm_random"):     # the cut and the threads help
        assert by[(log, "16", "yes", "ready first")] > by[(log, "8", "no", "in order")]


def test_the_report_says_when_the_space_was_pruned_for_another_device(tmp_path):
    """The default profile is the paper's K40c: tuning on another GPU without --device auto
    prunes with the K40c's limits, and the report says so; the same GPU says nothing."""
    space = small_space()
    pruned = tuple(int(x) for x in (space.device.cudamajor, space.device.cudaminor))

    class OnGpu(FakeBackend):
        def __init__(self, cc):
            super().__init__()
            self.compute_capability = cc

    other = tune(space, (64,) * 3, budget=3, log_path=tmp_path / "a.jsonl", backend=OnGpu((9, 0)))
    assert f"pruned for the {other.device_profile} profile (compute capability {pruned[0]}.{pruned[1]}), " \
           "not for the GPU that measured it (9.0): --device auto" in format_report(other)
    same = tune(space, (64,) * 3, budget=3, log_path=tmp_path / "b.jsonl", backend=OnGpu(pruned))
    assert "--device auto" not in format_report(same)


# ---------------------------------------------------------------------------------------------
# Search strategies on the real GEMM spaces of today's GPUs (fake backend, no GPU): spaces over
# the sample of the strategies' pool (H100/H200: every one of them; a sample of 100,000 here, the
# 1 M of POOL_LIMIT with ``BEAST_TUNE_SPACES=all``) and under it, to a budget of 120, interrupted
# after 72 and resumed from the log.
#
# By default this runs the H200 double-precision space (2,561,720 survivors, so a sampled pool)
# and a small one; ``BEAST_TUNE_SPACES=all`` runs every strategy through ``tune`` on every H100
# and H200 space (double, single, complex, opt-in shared memory), a long probe of several minutes.

pytest.importorskip("sklearn")

GEMM = str(Path(TESTS_DIR).parent / "spaces" / "gemm.py")
INTERRUPT = 72           # past the design (20) and refit-after-every-one (64) phases
BUDGET = 120             # and on through the sparser refits after the resume
#: the sampled pool of these tests, smaller than POOL_LIMIT (BEAST_TUNE_SPACES=all keeps that): a pool
#: over the sample takes the same paths at any size (members outside it joining, resume adopting
#: them) as long as it exceeds the model's candidates, so that neighbours are scored first
SAMPLE = POOL_LIMIT if os.environ.get("BEAST_TUNE_SPACES") == "all" else 100_000


def gemm_cost(cfg) -> float:
    """A made-up time (ms) with a landscape: large tiles with moderate per-thread work are fast."""
    thr = (cfg["blk_m"] // cfg["dim_m"]) * (cfg["blk_n"] // cfg["dim_n"])
    tile = cfg["blk_m"] * cfg["blk_n"]
    return 1.0 + 4000.0 / tile + abs(thr - 32) / 8 + 3.0 / cfg["blk_k"] + 0.1 * cfg["tex_a"] + 0.05 * cfg["dim_vec"]


class GemmFake:
    """Compiles nothing, measures :func:`gemm_cost`; every 17th configuration of blk_k is wrong."""

    device_name = "Fake GPU"

    def __init__(self, interrupt_after=None):
        self.measured = []
        self.interrupt_after = interrupt_after

    def compile(self, cfg):
        return dict(cfg)

    def measure(self, cfg):
        if self.interrupt_after is not None and len(self.measured) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.measured.append(cfg)
        if cfg["blk_k"] % 17 == 0:
            return Measurement(WRONG, error="result differs from cuBLAS")
        ms = gemm_cost(cfg)
        return Measurement(OK, ms=ms, gflops=1000.0 / ms, ci_rel=0.01, reps=5)


EVERY = os.environ.get("BEAST_TUNE_SPACES") == "all"
#: through tune() over a sampled pool (hybrid crashed there): the default and random; model, hybrid and local run
#: over the same kind of pool through ask/tell below; every strategy with BEAST_TUNE_SPACES=all
OVER = sorted(STRATEGIES) if EVERY else ["portfolio", "random"]


def spaces():
    every = EVERY
    devices = ("h100", "h200") if every else ("h200",)
    settings = [dict(precision="double")]
    if every:
        settings += [dict(precision="single"), dict(precision="double", arithmetic="complex"),
                     dict(precision="single", arithmetic="complex"),
                     dict(precision="double", shared_memory="optin")]
    return [(d, s) for d in devices for s in settings]


def configs_of(log):
    _, records, _ = read_log(str(log))
    return [tuple(r["config"].values()) for r in records if "config" in r]


@pytest.fixture(scope="module", params=spaces(), ids=lambda p: f"{p[0]}-" + "-".join(p[1].values()))
def big_space(request):
    device, settings = request.param
    space = beast.load(GEMM, device=device, settings=settings)
    if not EVERY:                                      # the default one is over the sample
        assert space.count() > POOL_LIMIT
    return space


@pytest.fixture
def sample_of_size(monkeypatch):
    """Strategies built by tune() sample at most SAMPLE survivors."""
    real = Pool.from_space.__func__
    monkeypatch.setattr(Pool, "from_space", classmethod(
        lambda cls, space, limit=POOL_LIMIT, seed=0: real(cls, space, min(limit, SAMPLE), seed)))


@pytest.mark.parametrize("name", OVER)
def test_every_strategy_tunes_a_space_over_the_sample_and_resumes(big_space, name, tmp_path, sample_of_size):
    log = tmp_path / "r.jsonl"
    first = tune(big_space, (4096,) * 3, budget=BUDGET, strategy=name, seed=5, log_path=log,
                 backend=GemmFake(interrupt_after=INTERRUPT), compile_workers=2)
    assert first.interrupted and first.measured == INTERRUPT
    second = tune(big_space, (4096,) * 3, budget=BUDGET, strategy=name, seed=5, log_path=log,
                  backend=GemmFake(), compile_workers=2)
    assert second.complete and second.resumed == INTERRUPT and second.tried == BUDGET
    configs = configs_of(log)
    assert len(configs) == len(set(configs)) == BUDGET            # nothing measured twice
    names = big_space.iterators
    assert big_space.contains([dict(zip(names, c)) for c in configs]).all()
    best = second.best_result
    assert best is not None and best.ms == min(gemm_cost(dict(zip(names, c))) for c in configs
                                               if dict(zip(names, c))["blk_k"] % 17)


@pytest.fixture(scope="module")
def h200_pool():
    space = beast.load(GEMM, device="h200")
    return space, Pool.from_space(space, limit=SAMPLE, seed=1)


@pytest.mark.parametrize("name", ["model", "hybrid", "portfolio"])
def test_neighbours_the_model_adds_to_a_sampled_pool_are_exact(h200_pool, name):
    """The neighbours of the best that the model scores may lie outside the sample: they join
    the pool (as survivors, each once) instead of indexing past its end."""
    space, pool = h200_pool
    assert not pool.complete and len(pool) >= SAMPLE
    sampled = SAMPLE
    strategy = make_strategy(name, pool=pool, seed=3)
    assert len(pool) > strategy.candidates            # the model scores a part: neighbours first
    for _ in range(12):
        for cfg in strategy.ask(8):
            strategy.tell(cfg, gemm_cost(cfg))
    added = [pool.config(k) for k in range(sampled, len(pool))]
    assert added and space.contains(added).all()
    assert len(pool.index) == len(pool) and strategy.outside == 0
    best = strategy.ranked()[0]
    moves = set(pool.neighbours(best))
    row = pool.config(best)
    expected = set()
    for j, name_j in enumerate(pool.names):
        vals = pool.values[j]
        r = int(np.searchsorted(vals, row[name_j]))
        for q in (r - 1, r + 1):
            if 0 <= q < len(vals):
                cand = dict(row, **{name_j: int(vals[q])})
                if space.contains(cand):
                    expected.add(tuple(cand[n] for n in pool.names))
    assert {tuple(pool.X[k].tolist()) for k in moves} == expected


def test_a_resumed_strategy_adopts_logged_configurations_the_sample_lacks(h200_pool):
    space, pool = h200_pool
    grown = make_strategy("local", pool=pool, seed=2)
    for _ in range(8):
        for cfg in grown.ask(4):
            grown.tell(cfg, gemm_cost(cfg))
    told = [pool.config(i) for i in grown.costs]
    # the sample again (Pool.from_space draws the same one), without what the walks added
    fresh = Pool(pool.names, pool.X[:SAMPLE], complete=False, member=pool.member)
    outside = [c for c in told if fresh.find(c) is None]
    assert outside, "the walk never left the sample: the test proves nothing"
    resumed = make_strategy("local", pool=fresh, seed=2)
    resumed.resume({"config": c, "status": "ok", "ms": gemm_cost(c)} for c in told)
    assert resumed.outside == 0 and all(fresh.find(c) is not None for c in outside)
    for _ in range(6):                                    # and never proposes them again
        for cfg in resumed.ask(4):
            assert cfg not in told
            resumed.tell(cfg, gemm_cost(cfg))


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_tunes_a_space_under_the_sample(name, tmp_path):
    from unit.tune.driver.test_log import small_space
    space = small_space()
    assert space.count() < 20_000
    log = tmp_path / "r.jsonl"
    budget = 120
    tune(space, (64,) * 3, budget=budget, strategy=name, seed=1, log_path=log,
         backend=GemmFake(interrupt_after=50), compile_workers=2)
    report = tune(space, (64,) * 3, budget=budget, strategy=name, seed=1, log_path=log,
                  backend=GemmFake(), compile_workers=2)
    assert report.complete and report.tried == budget
    configs = configs_of(log)
    assert len(set(configs)) == len(configs) == budget
