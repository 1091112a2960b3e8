"""Measuring in a worker process (beast.tune.device.isolate): kernels that hang, abort, crash or lose the
CUDA context are logged and the run goes on; a configuration that killed the tuning process is
logged as crashed on resume, not tried again.  Stand-in backends (tests/support/isolate_standins.py);
each bad kernel costs one spawned worker (about 0.5 s), so the cases share runs."""
import multiprocessing
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

import beast
from beast.lang.devices import resolve_device
from beast.errors import BeastError, DeviceError
from beast.tune import format_report, tune
from beast.tune.device.isolate import IsolatedBackend, MeasureLimits
from beast.tune.driver.log import read_log
from beast.tune.device.measure import (COMPILE_ERROR, CONTEXT_LOST, CRASHED, LOST, OK, STATUSES, TIMEOUT, Measurement)

from isolate_standins import BadKernels, NoDevice, speed, tune_and_die
from conftest import TESTS as TESTS_DIR

GEMM = str(Path(TESTS_DIR).parent / "spaces" / "gemm.py")
SMALL = dict(max_threads_per_block=64, max_threads_dim_x=16, max_threads_dim_y=16, warp_size=4,
             max_shared_mem_per_block=2048, max_shmem_per_multi_processor=16384)
SETTINGS = dict(precision="single")
#: a hung kernel is killed after 0.6 s (1.5 s in a fresh worker or before any best time)
QUICK = MeasureLimits(first_s=1.5, overhead_s=0.6, loop_s=0.0, launches=1, slow_factor=1.0, flops=0.0,
                      start_s=60.0, grace_s=1.0)


@pytest.fixture(scope="module")
def space():
    return beast.load(GEMM, device=resolve_device("k40c").replace(**SMALL), settings=SETTINGS)


@pytest.fixture(scope="module")
def first(space):
    """The first 10 survivors in enumeration order (what an exhaustive run measures)."""
    rows = next(space.iterate(chunk_size=10))
    return [dict(zip(space.iterators, map(int, row))) for row in rows.tolist()]


def items(cfg):
    return tuple(sorted(cfg.items()))


def log_of(path, marks=False):
    _, records, _ = read_log(str(path), marks=marks)
    return records


def test_the_time_limit_rule():
    lim = MeasureLimits(flops=2.0e12, peak_gflops=1000.0)          # 2 TFLOP at 1 % of 1 TFLOP/s: 200 s
    assert lim.launch_s(None) == pytest.approx(200.0)
    assert lim.launch_s(5000.0) == pytest.approx(500.0)             # 100 x a 5 s best time
    assert lim.measure_s(1.0, loop_s=10.0) == pytest.approx(20 + 10 + 4 * 200)
    small = MeasureLimits(flops=2.0e6, peak_gflops=1000.0)
    assert small.measure_s(0.01, loop_s=10.0) == pytest.approx(30.0 + 4 * 0.001)
    assert small.measure_s(None, loop_s=10.0) == small.first_s == small.reference_s()
    assert small.measure_s(0.01, fresh=True) == small.first_s
    assert MeasureLimits(flops=1e10).launch_s(None) == pytest.approx(1.0)   # no peak: 10 GFLOP/s
    assert set(LOST) <= set(STATUSES) and {TIMEOUT, CRASHED, CONTEXT_LOST} == set(LOST)


def test_bad_kernels_are_logged_and_the_run_goes_on(space, first, tmp_path):
    """One run meets a hang, an abort, a lost context and a segfault, each in a worker of its
    own, and a compile error in the tuning process; every other configuration is measured, the
    log says which were started, and Ctrl-C during a hang stops the worker and the run."""
    what = {1: "hang", 3: "abort", 4: "illegal", 6: "segfault"}
    behaviour = {items(first[i]): w for i, w in what.items()}
    fac = BadKernels(behaviour, broken=(items(first[8]),))
    log = tmp_path / "bad.jsonl"
    with IsolatedBackend(fac, QUICK) as backend:
        assert backend.device_name == "Stand-in GPU" and backend.compute_capability == (9, 0)
        report = tune(space, (64, 64, 64), budget=10, log_path=log, backend=backend, compile_workers=1)
        starts = list(backend.starts)
        assert backend.restarts == 4 and len(starts) == 5
        print(f"worker start-up: {', '.join(f'{s:.2f}' for s in starts)} s")
    assert report.complete and report.tried == 10 and report.measured == 10
    by_key = {items(r["config"]): r for r in log_of(log) if "config" in r}
    status = [by_key[items(c)]["status"] for c in first]
    assert status == [OK, TIMEOUT, OK, CRASHED, CONTEXT_LOST, OK, CRASHED, OK, COMPILE_ERROR, OK]
    assert "no answer within the time limit of 0.6" in by_key[items(first[1])]["error"]
    assert "killed by SIGABRT" in by_key[items(first[3])]["error"]
    assert "illegal memory access" in by_key[items(first[4])]["error"]
    assert "killed by SIGSEGV" in by_key[items(first[6])]["error"]
    # every measurement ran in a worker; each bad kernel took its worker down with it
    pids = [by_key[items(first[i])]["pid"] for i in (0, 2, 5, 7, 9)]
    assert os.getpid() not in pids and len(set(pids)) == 4 and pids[3] == pids[4]
    assert by_key[items(first[2])]["told_best"]
    assert report.reference is not None and report.reference.status == OK
    # a started record before each measurement (not before the compile error), none left open
    marks = log_of(log, marks=True)
    started = [items(r["started"]) for r in marks if "started" in r]
    assert started == [items(c) for i, c in enumerate(first) if i != 8]
    for key in started:
        at = next(i for i, r in enumerate(marks) if "started" in r and items(r["started"]) == key)
        assert items(marks[at + 1]["config"]) == key
    text = format_report(report)
    assert ("10 configuration(s): 5 verified and timed, 5 failed (1 compile errors, 0 launch errors, "
            "0 wrong results, 1 timed out, 2 crashed, 1 lost the CUDA context)") in text
    assert report.best_result.gflops == max(speed(first[i]) for i in (0, 2, 5, 7, 9))

    # Ctrl-C while a kernel hangs: the worker is stopped, the run ends interrupted, and the
    # configuration is marked interrupted (measured again on resume, not "crashed")
    patient = MeasureLimits(first_s=30.0, overhead_s=30.0, loop_s=0.0, start_s=60.0, grace_s=1.0)
    log2 = tmp_path / "ctrl-c.jsonl"
    hang_first = BadKernels({items(first[0]): "hang"})
    with IsolatedBackend(hang_first, patient) as backend:
        pid = backend.pid
        # Python's own handler (an earlier test in this process may have left another), and the
        # signal once the hang is being measured, however long the run took to get there
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        done = threading.Event()
        killer = threading.Thread(target=_ctrl_c_once_started, args=(log2, done), daemon=True)
        killer.start()
        try:
            report = tune(space, (64, 64, 64), budget=3, log_path=log2, backend=backend, compile_workers=1)
        finally:
            done.set()
            killer.join()
            signal.signal(signal.SIGINT, previous)
        assert report.interrupted and report.tried == 0 and backend.pid is None
    assert not _alive(pid)
    marks = log_of(log2, marks=True)
    assert [list(r) for r in marks] == [["reference", "status", "ms", "gflops", "pid"], ["started"], ["interrupted"]]
    assert "config" not in str(log_of(log2))


def test_a_worker_that_cannot_be_restarted_stops_the_run(space, first, tmp_path):
    """After a crash, no fresh worker starts (the GPU is gone): the run stops before the next
    configuration, which is not logged, and a rerun measures it."""
    from isolate_standins import StartsOnce
    fac = StartsOnce({items(first[1]): "abort"}, marker=str(tmp_path / "started-once"))
    log = tmp_path / "r.jsonl"
    with IsolatedBackend(fac, QUICK) as backend:
        report = tune(space, (64, 64, 64), budget=4, log_path=log, backend=backend, compile_workers=1)
    assert not report.complete and "cannot start a fresh measuring process: no GPU found" in report.stopped
    assert [r.status for r in report.results] == [OK, CRASHED]
    marks = log_of(log, marks=True)
    assert [items(r["interrupted"]) for r in marks if "interrupted" in r] == [items(first[2])]
    assert marks[-1]["run"]["ended"] == "stopped"
    with IsolatedBackend(BadKernels(), QUICK) as backend:
        report = tune(space, (64, 64, 64), budget=4, log_path=log, backend=backend, compile_workers=1)
    assert report.complete and [r.status for r in report.results] == [OK, CRASHED, OK, OK]
    # two lost in a row, and the third is not tried: the device seems unusable
    fac = BadKernels({items(first[0]): "abort", items(first[1]): "abort"})
    with IsolatedBackend(fac, replace(QUICK, lost_in_a_row=2)) as backend:
        report = tune(space, (64, 64, 64), budget=4, backend=backend, compile_workers=1)
    assert [r.status for r in report.results] == [CRASHED, CRASHED] and "the last 2 measurements were lost" in report.stopped


def _ctrl_c_once_started(log, done: threading.Event, settle_s: float = 0.3) -> None:
    """SIGINT to this process once ``log`` holds a started mark and ``settle_s`` more passed
    (the measurement is then under way); nothing when ``done`` is set first."""
    while not done.wait(0.02):
        try:
            started = '{"started":' in Path(log).read_text()
        except OSError:
            continue
        if started:
            if not done.wait(settle_s):
                os.kill(os.getpid(), signal.SIGINT)
            return


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_configuration_that_killed_the_run_is_skipped_on_resume(space, first, tmp_path):
    """Without isolation a crash ends the tuning process; the rerun logs the configuration it
    was measuring as crashed (once, counted in the budget) and measures the others."""
    log = tmp_path / "died.jsonl"
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=tune_and_die, args=((GEMM, SMALL, SETTINGS), str(log), 6, items(first[2])))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 9
    marks = log_of(log, marks=True)
    assert [items(r["started"]) for r in marks if "started" in r] == [items(c) for c in first[:3]]
    assert [items(r["config"]) for r in marks if "config" in r] == [items(c) for c in first[:2]]

    measured = []

    class Fine:
        device_name = "Stand-in GPU"

        def compile(self, cfg):
            return dict(cfg)

        def measure(self, cfg):
            measured.append(items(cfg))
            return Measurement(OK, ms=1.0, gflops=speed(cfg))

    report = tune(space, (64, 64, 64), budget=6, log_path=log, backend=Fine(), compile_workers=1)
    assert report.tried == 6 and report.resumed == 3 and report.measured == 3
    assert measured == [items(c) for c in first[3:6]]
    crashed = [r for r in report.results if r.status == CRASHED]
    assert [items(r.config) for r in crashed] == [items(first[2])] and crashed[0].measurement.extra["ended_run"]
    assert "ended a previous run while measured: logged as crashed" in format_report(report)
    # logged once: a second resume finds nothing open and nothing to do
    tune(space, (64, 64, 64), budget=6, log_path=log, backend=Fine(), compile_workers=1)
    records = [r for r in log_of(log) if "config" in r]
    assert len(records) == 6 and sum(r["status"] == CRASHED for r in records) == 1
    assert measured == [items(c) for c in first[3:6]]


def test_interrupted_in_process_is_measured_again(space, first, tmp_path):
    """Ctrl-C during an in-process measurement marks it interrupted: the rerun measures it."""
    log = tmp_path / "r.jsonl"
    seen = []

    class Stops:
        device_name = "Stand-in GPU"

        def __init__(self, stop_at=None):
            self.stop_at = stop_at

        def compile(self, cfg):
            return dict(cfg)

        def measure(self, cfg):
            seen.append(items(cfg))
            if len(seen) == self.stop_at:
                raise KeyboardInterrupt
            return Measurement(OK, ms=1.0, gflops=speed(cfg))

    report = tune(space, (64, 64, 64), budget=4, log_path=log, backend=Stops(2), compile_workers=1)
    assert report.interrupted and report.tried == 1
    report = tune(space, (64, 64, 64), budget=4, log_path=log, backend=Stops(), compile_workers=1)
    assert report.tried == 4 and report.counts[OK] == 4 and report.counts[CRASHED] == 0
    assert seen == [items(c) for c in (first[0], first[1], first[1], first[2], first[3])]


def test_arguments_and_a_worker_that_cannot_start(space):
    with pytest.raises(BeastError, match="isolate must be True, False or None"):
        tune(space, (64, 64, 64), budget=1, isolate="yes")

    class InProcess:
        device_name = "x"

        def compile(self, cfg):
            return cfg

        def measure(self, cfg):
            return Measurement(OK, ms=1.0, gflops=1.0)

    with pytest.raises(BeastError, match="isolate=True needs a backend that measures in a worker"):
        tune(space, (64, 64, 64), budget=1, isolate=True, backend=InProcess())
    with pytest.raises(DeviceError, match="no GPU found: the CUDA driver sees no device"):
        IsolatedBackend(NoDevice(), QUICK)


def test_the_cupy_backend_measures_in_a_worker(space, monkeypatch):
    """CupyBackend in the worker (stand-in cupy: the host simulator runs the kernels): the tuning
    process compiles artefacts with its NVRTC, the worker loads, verifies and times them, and
    two configurations of one binary and launch are measured once."""
    from unit.tune.device.test_gpu import make_fake_cupy

    from isolate_standins import HostsimCupy
    monkeypatch.setitem(sys.modules, "cupy", make_fake_cupy(devices=0))   # NVRTC here, no device
    rows = space.enumerate()
    cfg = {n: int(rows[n][0]) for n in space.iterators}
    twin = dict(cfg, shmem_banks=1 - cfg["shmem_banks"])          # the bank size is not applied
    assert space.contains(twin)
    with IsolatedBackend(HostsimCupy(dict(space.settings), (24, 16, 8)), QUICK) as backend:
        assert backend.device_name == "Host CPU threads"
        job = backend.compile(cfg)
        assert job.how == "load" and job.item.fmt in ("cubin", "ptx")
        meas = backend.measure(job)
        assert meas.status == OK and meas.extra["err_ratio"] <= 1, meas.error
        assert backend.identity(backend.compile(twin)) == backend.identity(job)
        ref = backend.reference()
        assert ref.status == OK and ref.extra["what"] == "cupy.matmul (cuBLAS)"
        assert backend.restarts == 0


def test_tune_isolates_the_cupy_backend_by_default(space, monkeypatch):
    """tune() without a backend measures CuPy in a worker, its time limits told the problem's
    FLOPs and the profile's peak; isolate=False keeps it in this process; so do the CLI's options."""
    from beast import cli
    from beast.tune.device import isolate
    from beast.tune.device.gpu import CupyFactory
    from beast.tune.driver.local import TuneReport
    made = []

    class Recorder(IsolatedBackend):
        def __init__(self, factory, limits=None):
            made.append((factory, limits))
            raise DeviceError("no GPU found: recorded")

    monkeypatch.setattr(isolate, "IsolatedBackend", Recorder)
    with pytest.raises(DeviceError, match="recorded"):
        tune(space, (64, 32, 16), budget=1)
    factory, limits = made[0]
    assert isinstance(factory, CupyFactory) and factory.size == (64, 32, 16) and factory.family == "gemm"
    assert limits.flops == 2 * 64 * 32 * 16 and limits.peak_gflops > 0
    with pytest.raises(DeviceError, match="no GPU found"):
        tune(space, (64, 32, 16), budget=1, isolate=False)       # CupyBackend here: no CuPy
    assert len(made) == 1

    import beast.tune as tune_pkg
    calls = []

    def fake_tune(space, size, **kw):
        calls.append(kw.get("isolate", "default"))
        return TuneReport(iterators=("a",), settings={}, size=size, device_profile="x", device_name="Fake",
                          strategy="exhaustive", budget=1)

    monkeypatch.setattr(tune_pkg, "tune", fake_tune)
    base = ["tune", GEMM, "--size", "8", "8", "8", "--quiet"]
    for extra in ([], ["--isolate"], ["--no-isolate"]):
        assert cli.main(base + extra) == 0
    assert calls == ["default", True, False]


def _have_gpu() -> bool:
    from beast.tune.device.gpu import gpu_available
    return gpu_available()


@pytest.mark.skipif(not _have_gpu(), reason="needs an NVIDIA GPU and CuPy")
def test_on_a_gpu_a_hang_an_illegal_address_and_an_abort_are_survived(space, first):
    """The real thing: CuPy in the worker; after each bad kernel a fresh worker measures a
    configuration again (about 30 s: four CUDA start-ups and one 7 s time limit)."""
    from beast.tune.device.gpu import CupyFactory
    from beast.tune.device.isolate import Job

    from isolate_standins import MisbehavingCupy
    fac = MisbehavingCupy(CupyFactory(dict(space.settings), (256, 256, 256)))
    limits = MeasureLimits(first_s=60.0, overhead_s=5.0, loop_s=2.0, start_s=120.0)
    with IsolatedBackend(fac, limits) as backend:
        good = backend.measure(backend.compile(first[0]))
        assert good.status == OK and good.extra["err_ratio"] <= 1, good.error
        for what, status in (("hang", TIMEOUT), ("illegal", CONTEXT_LOST), ("abort", CRASHED)):
            meas = backend.measure(Job({}, "compile", what), best_ms=good.ms)
            assert meas.status == status, (what, meas.status, meas.error)
            again = backend.measure(backend.compile(first[0]), best_ms=good.ms)
            assert again.status == OK, again.error
        assert backend.restarts == 3
        print(f"CUDA worker start-up: {', '.join(f'{s:.2f}' for s in backend.starts)} s")
