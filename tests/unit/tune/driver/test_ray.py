"""``beast tune --ray``: the tuning work spread over the GPUs of a Ray cluster (beast.tune.driver.ray).

A local Ray instance with two CPUs and three fake GPUs; in each GPU worker the host simulator
stands in for the device (tests/support/ray_hostsim.py: CupyBackend over the stand-in cupy of
test_tune_gpu, kernels run on CPU threads), and the kernels are compiled by Ray tasks on CPU
workers whose stand-in cupy has no device (its NVRTC builds the host library as the "cubin").
Checked against the JSONL log and the workers' journals: every configuration once, none lost,
when a GPU worker or a compile task dies mid-run; compile errors logged once; a run interrupted
and resumed; an ask/tell strategy driving the workers."""
import os
import json
import sys
from pathlib import Path

import pytest
from conftest import TESTS as TESTS_DIR

ray = pytest.importorskip("ray")

import beast  # noqa: E402
from beast.cli import main  # noqa: E402
from beast.lang.devices import resolve_device  # noqa: E402
from beast.errors import BeastError  # noqa: E402
from beast.tune import tune  # noqa: E402
from beast.tune.sim.hostsim import host_compiler  # noqa: E402
from beast.tune.driver.log import config_key, read_log  # noqa: E402
from beast.tune.device.measure import COMPILE_ERROR, CONTEXT_LOST, CRASHED, OK  # noqa: E402
from beast.tune.driver.ray import format_ray_summary, tune_ray  # noqa: E402
from beast.tune.driver.candidates import candidates  # noqa: E402
from beast.tune.driver.session import search_strategy  # noqa: E402
from beast.search import strategy_stream  # noqa: E402

from ray_hostsim import HostsimFactory, read_journal  # noqa: E402
from unit.tune.driver.test_session import Factory  # noqa: E402
from unit.tune.device.test_gpu import GEMM, SMALL, make_fake_cupy  # noqa: E402

# each xdist worker that runs some of these tests starts a local Ray instance of its own (cluster)
pytestmark = [pytest.mark.skipif(host_compiler() is None, reason="no C++20 host compiler to stand in for the GPU")]

SUPPORT = os.path.join(TESTS_DIR, "support")     # the workers import ray_hostsim from there
SIZE = (8, 8, 8)
GPUS = 3
HANG_TIMEOUT = 5.0
TIME_LIMIT = 3.0


@pytest.fixture(scope="module")
def cluster():
    """One local Ray instance for the module: 2 CPUs, three fake GPUs, workers that can import
    the test helpers."""
    if ray.is_initialized():
        ray.shutdown()
    # in the environment the local instance's processes inherit, not a runtime_env: Ray starts
    # workers of their own for a runtime_env and leaves its two prestarted ones idle
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join((SUPPORT, TESTS_DIR)), prepend=os.pathsep)
        ray.init(num_cpus=2, num_gpus=GPUS, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def space():
    return beast.load(GEMM, device=resolve_device("k40c").replace(**SMALL), settings=dict(precision="single"))


def factory(space, tmp_path, journal="journal.jsonl", **kw):
    return HostsimFactory(dict(space.settings), SIZE, str(tmp_path / journal), **kw)


def log_keys(path, names):
    header, records, torn = read_log(str(path))
    assert header is not None and not torn
    keys = [config_key(r["config"], names) for r in records if "config" in r]
    return header, records, keys


def first_random(space, n, seed):
    """What the random strategy measures first, as tune() in one process runs it."""
    search = search_strategy(space, "random", seed, n, [])
    if search is None:
        return {config_key(c, space.iterators) for c in candidates(space, "random", n, {}, seed=seed)}
    return {config_key(c, space.iterators) for c in strategy_stream(search, n, batch=n)}


def test_a_killed_worker_loses_nothing_and_nothing_is_measured_twice(cluster, space, tmp_path):
    """Worker 1 dies in the middle of its second measurement; worker 2's "CUDA context" is poisoned
    at its second one (FatalBackendError): the first is dropped, the second restarted."""
    log = tmp_path / "r.jsonl"
    fac = factory(space, tmp_path, die_marker=str(tmp_path / "died"), fatal_marker=str(tmp_path / "fatal"),
                  fail_at=2)
    report = tune_ray(space, SIZE, budget=5, strategy="random", seed=3, log_path=log, backend_factory=fac)
    names = space.iterators
    assert os.path.exists(tmp_path / "died") and os.path.exists(tmp_path / "fatal")
    assert len(report.workers) == GPUS and len(report.lost_workers) == 1 and report.retried >= 1
    assert report.replaced_workers == 1
    assert report.complete and report.measured == 5
    assert report.counts[OK] == 4 and report.counts[CONTEXT_LOST] == 1
    failed = next(r for r in report.results if r.status == CONTEXT_LOST)
    assert "illegal address (simulated)" in failed.measurement.error
    header, records, keys = log_keys(log, names)
    assert header["device"]["gpu"] == "Host CPU threads"
    assert len(keys) == 5 and len(set(keys)) == 5             # nothing logged twice
    assert set(keys) == first_random(space, 5, 3)             # nothing lost
    assert sum(1 for r in records if "reference" in r) == 1
    # every logged time was measured in a worker; the only repeats possible are results the dead
    # worker finished but could not deliver before it died
    journal = read_journal(fac.journal)
    dead = int((tmp_path / "died").read_text())
    ok_keys = {config_key(r["config"], names) for r in records if r.get("status") == OK and "config" in r}
    assert len(ok_keys) == 4
    assert {config_key(j["config"], names) for j in journal} == ok_keys
    by_others = [config_key(j["config"], names) for j in journal if j["pid"] != dead]
    assert len(by_others) == len(set(by_others))
    workers = {r["worker"] for r in records if "config" in r}
    assert len(workers) >= 2 and len({j["pid"] for j in journal}) >= 2
    assert sum(report.per_worker.values()) == 5
    # compiled in Ray tasks without a GPU, in processes other than the GPU workers; every logged
    # configuration compiled, and what the dead worker had in flight compiled again
    compiles = read_journal(fac.journal + ".compiles")
    assert compiles and all(c["ok"] and c["gpus"] == [] for c in compiles)
    assert not {c["pid"] for c in compiles} & ({j["pid"] for j in journal} | {dead})
    compiled_keys = [config_key(c["config"], names) for c in compiles]
    assert set(compiled_keys) == set(keys) and len(compiled_keys) == 5 + report.retried
    assert sum(report.compiled.values()) == len(compiles)
    compile_pids = {f"pid{c['pid']}" for c in compiles}
    measured = [r for r in records if r.get("status") == OK and "config" in r]
    assert all(r["compiled_on"].split("/")[-1] in compile_pids for r in measured)
    summary = format_ray_summary(report)
    assert "lost 1 worker(s)" in summary and "restarted 1 worker(s)" in summary
    assert f"compiled {len(compiles)} on" in summary


def test_an_interrupted_run_resumes_from_its_log(cluster, space, tmp_path):
    log = tmp_path / "r.jsonl"
    names = space.iterators

    def stop_after_three(done, total, best):
        if done >= 3:
            raise KeyboardInterrupt

    first = tune_ray(space, SIZE, budget=5, strategy="random", seed=11, log_path=log, num_workers=2,
                     backend_factory=factory(space, tmp_path), progress=stop_after_three)
    assert first.interrupted and first.measured == 3
    _, _, before = log_keys(log, names)
    assert len(before) == 3
    seen = []
    second = tune_ray(space, SIZE, budget=5, strategy="random", seed=11, log_path=log, num_workers=2,
                      backend_factory=factory(space, tmp_path, journal="second.jsonl"),
                      progress=lambda d, t, b: seen.append((d, t)))
    assert second.complete and second.resumed == 3 and second.measured == 2 and second.tried == 5
    assert seen[0] == (3, 5) and seen[-1] == (5, 5)
    _, records, keys = log_keys(log, names)
    assert len(keys) == 5 and set(keys) == first_random(space, 5, 11)
    # the resumed run measured exactly the two configurations the log lacked, once each
    journal = [config_key(j["config"], names) for j in read_journal(str(tmp_path / "second.jsonl"))]
    assert sorted(journal) == sorted(set(keys) - set(before))
    # the single-process runner reads the same log: nothing left to measure
    sys.modules["cupy"] = make_fake_cupy()
    try:
        from beast.tune.device.gpu import CupyBackend
        local = tune(space, SIZE, budget=5, strategy="random", seed=11, log_path=log,
                     backend=CupyBackend(space.settings, SIZE, max_samples=3, max_seconds=0.1))
    finally:
        del sys.modules["cupy"]
    assert local.resumed == 5 and local.measured == 0
    assert local.best_result.gflops == second.best_result.gflops


def test_a_configuration_that_kills_its_workers_is_logged_as_lost(cluster, space, tmp_path):
    log = tmp_path / "r.jsonl"
    poison = next(candidates(space, "exhaustive", 1, {}))
    report = tune_ray(space, SIZE, budget=3, log_path=log, max_attempts=2,
                      backend_factory=factory(space, tmp_path, poison=poison))
    assert report.complete and report.measured == 3 and len(report.lost_workers) == 2
    _, records, keys = log_keys(log, space.iterators)
    assert len(keys) == 3 == len(set(keys))
    rec = next(r for r in records if r.get("config") == poison)
    assert rec["status"] == CRASHED and "died 2 times" in rec["error"]


def test_compile_tasks_that_die_are_retried_and_compile_errors_logged_once(cluster, space, tmp_path):
    """The first compile task dies mid-compile (compiled again elsewhere), one configuration
    kills every compile task that takes it (logged as lost after max_attempts), one does not
    compile (a compile_error, compiled once, never retried)."""
    log = tmp_path / "r.jsonl"
    names = space.iterators
    first = [dict(c) for c in candidates(space, "exhaustive", 5, {})]
    poison, broken = first[1], first[3]
    fac = factory(space, tmp_path, compile_die_marker=str(tmp_path / "died"), compile_poison=poison,
                  compile_broken=broken)
    report = tune_ray(space, SIZE, budget=5, log_path=log, num_workers=2, max_attempts=2, backend_factory=fac)
    assert os.path.exists(tmp_path / "died")
    assert report.complete and report.measured == 5 and not report.lost_workers
    assert report.compile_retried == 2                      # the poison's first death, the marker's
    assert report.counts[OK] == 3 and report.counts[COMPILE_ERROR] == 2
    _, records, keys = log_keys(log, names)
    assert len(keys) == 5 == len(set(keys)) and set(keys) == {config_key(c, names) for c in first}
    by_key = {config_key(r["config"], names): r for r in records if "config" in r}
    lost = by_key[config_key(poison, names)]
    assert lost["status"] == COMPILE_ERROR and "the compile task died 2 times" in lost["error"]
    failed = by_key[config_key(broken, names)]
    assert failed["status"] == COMPILE_ERROR and "NVRTC_ERROR_COMPILATION" in failed["error"]
    assert "/cpu-pid" in failed["compiled_on"]
    compiles = read_journal(fac.journal + ".compiles")
    assert [c["ok"] for c in compiles if c["config"] == broken] == [False]       # not retried
    assert not any(c["config"] == poison for c in compiles)
    assert sorted(config_key(j["config"], names) for j in read_journal(fac.journal)) == \
        sorted(k for k, r in by_key.items() if r["status"] == OK)                 # each measured once
    assert "2 compile(s) retried" in format_ray_summary(report)


def test_a_compile_that_hangs_is_cancelled_and_logged(cluster, space, tmp_path):
    """A compile task still running ``compile_timeout`` seconds after it was submitted is
    cancelled and logged as a compile_error (not retried); the others are measured."""
    log = tmp_path / "r.jsonl"
    names = space.iterators
    first = [dict(c) for c in candidates(space, "exhaustive", 3, {})]
    hang = first[1]
    # The timeout counts from submission, and a loaded machine needs seconds for each healthy
    # compile: they are compiled here, before the run, and the run's compile tasks hand the
    # artefacts back, so that only the hung one meets the timeout.
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "cupy", make_fake_cupy(devices=0))
        backend = factory(space, tmp_path)()
        compiler = backend.compiler().inner
        ready = tuple((tuple(c.items()), compiler.build(c)) for c in first if c != hang)
        backend.close()
    report = tune_ray(space, SIZE, budget=3, log_path=log, num_workers=1, compile_timeout=HANG_TIMEOUT,
                      backend_factory=factory(space, tmp_path, compile_hang=hang, compile_ready=ready))
    assert report.complete and report.measured == 3 and report.compile_timeouts == 1
    assert report.counts[OK] == 2 and report.counts[COMPILE_ERROR] == 1
    _, records, keys = log_keys(log, names)
    assert sorted(keys) == sorted(config_key(c, names) for c in first)
    rec = next(r for r in records if r.get("config") == hang)
    assert rec["status"] == COMPILE_ERROR and f"did not finish within {HANG_TIMEOUT:g} s" in rec["error"]
    assert "1 compile(s) cancelled after the timeout" in format_ray_summary(report)


def test_compile_tasks_that_cannot_run_stop_the_run_before_logging(cluster, space, tmp_path):
    """A CPU worker without a working compiler is not the kernels' fault: nothing is logged for
    them, and the run stops saying why (rerun to resume)."""
    log = tmp_path / "r.jsonl"
    report = tune_ray(space, SIZE, budget=3, log_path=log, num_workers=1,
                      backend_factory=factory(space, tmp_path, compile_env_error=True))
    assert not report.complete and report.measured == 0
    assert "compiling on a Ray CPU worker failed" in report.stopped and "no NVRTC here" in report.stopped
    _, records, keys = log_keys(log, space.iterators)
    assert keys == []


class Neighbours:
    """A toy ask/tell strategy: starts from two survivors, then proposes only survivors that share
    blk_m with an already measured one -- it has nothing to propose until results come back."""

    def __init__(self, space, limit=6):
        self.rows = [dict(c) for c in candidates(space, "exhaustive", None, {})]
        self.told = []
        self.proposed = []
        self.limit = limit

    def ask(self, n):
        if not self.proposed:
            pick = [self.rows[0], self.rows[-1]]
        elif len(self.proposed) >= self.limit:
            return None
        else:
            blk = {c["blk_m"] for c, _ in self.told}
            pick = [r for r in self.rows if r["blk_m"] in blk and r not in self.proposed]
            pick = pick[:min(n, self.limit - len(self.proposed))]
        self.proposed += pick
        return pick

    def tell(self, config, measurement):
        self.told.append((config, measurement))


def test_an_ask_tell_strategy_drives_the_workers(cluster, space, tmp_path):
    strategy = Neighbours(space)
    workers_tmp = tmp_path / "tmp"
    workers_tmp.mkdir()
    report = tune_ray(space, SIZE, budget=4, strategy=strategy, num_workers=2,
                      backend_factory=factory(space, tmp_path, tmpdir=str(workers_tmp)))
    assert report.complete and report.measured == 4 and report.strategy == "Neighbours"
    assert len(strategy.told) == 4 and all(m.status == OK for _, m in strategy.told)
    assert {tuple(c.values()) for c, _ in strategy.told} == {tuple(r.config.values()) for r in report.results}
    # each worker loaded the kernels compiled elsewhere from a folder of its temporary directory,
    # and closed its backend, which removed the folder, before it was killed
    assert all(r.measurement.extra.get("compiled_on") for r in report.results)
    assert list(workers_tmp.iterdir()) == []
    first = {strategy.rows[0]["blk_m"], strategy.rows[-1]["blk_m"]}
    assert all(c["blk_m"] in first for c, _ in strategy.told)


class Counting:
    """Proposes survivors in enumeration order, as many as asked; records how many were in
    flight (proposed, not yet told) after each ask."""

    def __init__(self, space):
        self.rows = [dict(c) for c in candidates(space, "exhaustive", None, {})]
        self.proposed = self.told = 0
        self.inflight = []

    def ask(self, n):
        pick = self.rows[self.proposed:self.proposed + n]
        self.proposed += len(pick)
        self.inflight.append(self.proposed - self.told)
        return pick

    def tell(self, config, measurement):
        self.told += 1


def test_the_pipeline_runs_ahead_of_the_gpus_within_its_bounds(cluster, space, tmp_path):
    """With prefetch 2 and 2 calls queued per GPU worker, two workers never hold more than
    (2 + 2) x 2 configurations, yet more than one per worker: compiles run ahead.  The strategy
    is asked for prefetch x workers = 4 at a time, so up to 3 more of its proposals may wait
    in the source, not yet pulled (with compiles that return at once, they do)."""
    strategy = Counting(space)
    report = tune_ray(space, SIZE, budget=9, strategy=strategy, num_workers=2, prefetch=2, lookahead=2,
                      backend_factory=factory(space, tmp_path))
    assert report.complete and report.measured == 9 == strategy.told
    assert max(strategy.inflight) <= (2 + 2) * 2 + (2 * 2 - 1)
    assert max(strategy.inflight) > 2
    assert len(report.per_worker) == 2


def test_a_time_limit_ends_the_run_cleanly(cluster, space, tmp_path):
    """--time with --ray: nothing is dispatched after the limit, what was under way is measured
    and logged, and the log's run record says the clock ended it, with the GPUs' busy share."""
    log = tmp_path / "t.jsonl"
    seen = []
    # the stand-in backend of test_tune_driver compiles at once and measures for 50 ms: the
    # limit, not the compiles, decides how many of the survivors are measured
    report = tune_ray(space, SIZE, budget=None, strategy="random", seed=5, num_workers=2, log_path=log,
                      backend_factory=Factory(str(tmp_path / "measured.jsonl"), sleep=0.05),
                      time_limit=TIME_LIMIT, progress=lambda done, total, best, rep: seen.append(rep.gpu_busy))
    assert report.time_up and not report.stopped and 0 < report.measured < space.count()
    assert report.wall_s < TIME_LIMIT + 30          # the measurements under way, not the rest of the space
    assert report.gpu_busy is not None and 0 < report.gpu_busy <= 1 and seen[-1] is not None
    header, records, keys = log_keys(log, space.iterators)
    assert len(keys) == report.measured == len(set(keys))
    runs = [r["run"] for r in records if "run" in r]
    assert len(runs) == 1 and runs[0]["ended"] == "time limit" and runs[0]["time_limit_s"] == TIME_LIMIT
    assert runs[0]["gpu_busy"] == round(report.gpu_busy, 4)
    assert all("measure_s" in r for r in records if "config" in r and r["status"] != COMPILE_ERROR)


@pytest.mark.parametrize("name", ["local", "random"])
def test_a_named_search_strategy_drives_the_workers(cluster, space, tmp_path, name):
    """The strategies of beast.search run on Ray as in one process: distinct survivors,
    the budget measured, every result logged once."""
    log = tmp_path / f"{name}.jsonl"
    report = tune_ray(space, SIZE, budget=5, strategy=name, seed=3, num_workers=2, log_path=log,
                      backend_factory=Factory(str(tmp_path / "measured.jsonl")))
    assert report.complete and report.measured == 5 and report.strategy == name
    keys = [tuple(r.config.values()) for r in report.results]
    assert len(set(keys)) == 5
    rows = {tuple(int(v) for v in row) for row in space.enumerate().tolist()}
    assert set(keys) <= rows
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    measured = [tuple(r["config"].values()) for r in logged if "config" in r]
    assert sorted(measured) == sorted(keys)                   # every result logged once


def test_the_tensor_core_family_runs_on_the_workers(cluster, tmp_path):
    """spaces/gemm_mma.py on Ray: the workers generate, compile and verify that family's kernels
    (on CPU threads, the warp MMA emulated), and the log says which family it measured."""
    mma = beast.load(os.path.join(os.path.dirname(GEMM), "gemm_mma.py"), device="h100")
    log = tmp_path / "mma.jsonl"
    report = tune_ray(mma, (24, 16, 12), budget=2, strategy="random", seed=2, num_workers=2, log_path=log,
                      backend_factory=HostsimFactory(dict(mma.settings), (24, 16, 12),
                                                     str(tmp_path / "journal.jsonl"), family="gemm_mma"))
    assert report.complete and report.measured == 2
    assert all(r.status == OK for r in report.results), [r.error for r in report.results]
    header, records, keys = log_keys(log, mma.iterators)
    assert header["kernel_family"] == "gemm_mma" and len(keys) == 2


def test_cli_ray_without_cupy_on_the_workers_says_so(cluster, capsys):
    try:
        import cupy  # noqa: F401
    except Exception:
        pass
    else:
        pytest.skip("CuPy is installed: the workers would use it")
    code = main(["tune", GEMM, "--size", "8", "8", "8", "--budget", "2", "--ray"])
    err = capsys.readouterr().err
    assert code == 2
    assert "a Ray worker could not start its backend: no GPU found: CuPy is not installed" in err


def test_more_workers_than_gpus_is_refused(cluster, space, tmp_path):
    with pytest.raises(BeastError, match=f"cannot start 4 GPU workers: the Ray cluster has {GPUS} GPU"):
        tune_ray(space, SIZE, budget=1, num_workers=GPUS + 1, backend_factory=factory(space, tmp_path))


def test_no_ray_names_the_extra(monkeypatch, space):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(BeastError, match="Ray, which is not installed") as info:
        tune_ray(space, SIZE, budget=1, backend_factory=lambda: None)
    assert "beast-autotune[ray]" in info.value.hint


@pytest.mark.parametrize("how", ["signal", "ray's handler"])
def test_ctrl_c_or_sigterm_while_ray_starts_waits_for_it_then_stops_it(how, monkeypatch):
    """Interrupted in the middle of ray.init, a local instance left agents running after beast
    exited, and ray.init's own SIGTERM handler (sys.exit(15)) replaced beast's: the signal is now
    held back until Ray is up, then Ray is shut down and the signal handled as beast handles it."""
    import signal
    import time
    from beast.errors import Terminated
    from beast.tune.driver.ray import signals_deferred

    def on_term(signum, frame):
        raise Terminated()
    stopped = []
    monkeypatch.setattr(ray, "shutdown", lambda: stopped.append(True))    # not the module's cluster
    previous = signal.signal(signal.SIGTERM, on_term)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)   # (a worker may ignore it)
    try:
        ran_on = []
        with pytest.raises(Terminated):
            with signals_deferred():
                if how == "signal":
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.05)
                    ran_on.append(True)
                else:
                    raise SystemExit(signal.SIGTERM)
        assert stopped == [True] and ran_on == ([True] if how == "signal" else [])
        assert signal.getsignal(signal.SIGTERM) is on_term
        with pytest.raises(KeyboardInterrupt):
            with signals_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
