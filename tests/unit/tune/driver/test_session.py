"""The one tuning driver behind both fronts: tune() on this machine and tune_ray() on a Ray
cluster run the same Session, so twins, early cuts, strategy objects, the reference, the
speed model's gate, ``started`` records and resume behave the same in both.  Each such test
runs against both fronts (the ``front`` fixture), over a pure-Python stand-in backend whose
measurements are journalled to a file (Ray measures in other processes); the adapter of
ask/tell strategies and the one strategy registry are checked on their own."""
from __future__ import annotations

import ast
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from beast.errors import BeastError
from beast.search import EXHAUSTIVE, STRATEGIES, Strategy, StrategyStream, make_strategy, strategy_stream
from beast.tune import format_report, tune
from beast.tune.device.measure import (COMPILE_ERROR, CRASHED, LAUNCH_ERROR, OK, PRUNED, CompileFailure,
                                       Measurement)
from beast.tune.driver.candidates import candidates
from beast.tune.driver.log import TuneLog, config_key, read_log
from beast.tune.driver.session import check_strategy

from unit.tune.driver.test_log import small_space
from conftest import TESTS as TESTS_DIR

TESTS = str(Path(TESTS_DIR))
DRIVER = Path(TESTS).parent / "beast" / "tune" / "driver"
SIZE = (64, 64, 64)


# ------------------------------------------------------------------ the stand-in backend

def fake_ms(cfg) -> float:
    """A time that ignores shmem_banks, as twins share their binary and launch."""
    return 1.0 + 0.3 * cfg["vec_mul"] + 0.2 * cfg["shmem_l1"] + 0.1 * cfg["tex_b"] + 0.01 * cfg["blk_k"]


@dataclass(frozen=True)
class FakeCompiler:
    """Compiles nothing (the artefact is the configuration); blk_k == 3 does not compile."""

    def build(self, cfg):
        if cfg["blk_k"] == 3:
            raise CompileFailure("error: expected a ';'")
        return dict(cfg)


@dataclass(frozen=True)
class BanksBlind:
    """The identity of an artefact: everything but shmem_banks (the harness does not apply it)."""

    def __call__(self, compiled):
        return tuple(sorted((k, v) for k, v in compiled.items() if k != "shmem_banks"))


def append(path: str, record: dict) -> None:
    fd = os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)


def journal(path) -> list[dict]:
    path = str(path)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class FakeBackend:
    """Measures ``fake_ms``; cuts a configuration slower than the best so far times ``cut``
    (marked ``early_cut``, as CupyBackend does); ``instant``: its first measurement takes 1 ns
    (every one after it 1 s), so that the speed model prunes the rest; ``reference_fails``: the
    cuBLAS reference raises; ``sleep``: seconds each measurement takes.  Every measurement goes
    to ``journal`` with the best time it was told."""

    device_name = "Fake GPU"

    def __init__(self, journal: str, cut: float | None = None, instant: bool = False,
                 reference_fails: bool = False, sleep: float = 0.0):
        self.journal, self.cut, self.instant, self.reference_fails = journal, cut, instant, reference_fails
        self.sleep = sleep
        self.count = 0

    def compile(self, cfg):
        return FakeCompiler().build(cfg)

    def compiler(self):
        return FakeCompiler()

    def load(self, artifact):
        return artifact

    def measure(self, cfg, best_ms=None):
        self.count += 1
        if self.sleep:
            time.sleep(self.sleep)
        append(self.journal, {"config": cfg, "best_ms": best_ms, "pid": os.getpid()})
        ms = (1e-6 if self.count == 1 else 1000.0) if self.instant else fake_ms(cfg)
        meas = Measurement(OK, ms=ms, gflops=1.0 / ms, ci_rel=0.01, reps=5)
        if self.cut is not None and best_ms is not None and ms > self.cut * best_ms:
            meas.ci_rel = None
            meas.extra.update(early_cut=True, cutoff_ms=self.cut * best_ms)
        return meas

    def reference(self):
        if self.reference_fails:
            raise RuntimeError("CUBLAS_STATUS_NOT_INITIALIZED")
        return Measurement(OK, ms=0.5, gflops=2.0)


class TwinsBackend(FakeBackend):
    """A FakeBackend that says what each compiled configuration runs (here and on Ray)."""

    def identity(self, compiled):
        return BanksBlind()(compiled)

    def identifier(self):
        return BanksBlind()


@dataclass(frozen=True)
class Factory:
    """The picklable maker of a stand-in backend (a Ray worker makes its own)."""

    journal: str
    twins: bool = False
    cut: float | None = None
    instant: bool = False
    reference_fails: bool = False
    sleep: float = 0.0

    def __call__(self):
        cls = TwinsBackend if self.twins else FakeBackend
        return cls(self.journal, cut=self.cut, instant=self.instant, reference_fails=self.reference_fails,
                   sleep=self.sleep)


# ------------------------------------------------------------------ the two fronts

@pytest.fixture(scope="module")
def cluster():
    """One local Ray instance for the module (2 CPUs, 1 fake GPU); its workers can import this file."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join((os.path.join(TESTS, "support"), TESTS)), prepend=os.pathsep)
        ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


class Local:
    name = "tune"

    def __call__(self, space, factory, batch=4, **kw):
        return tune(space, SIZE, backend=factory(), compile_workers=1, lookahead=batch, **kw)


class OnRay:
    name = "tune_ray"

    def __call__(self, space, factory, batch=4, **kw):
        from beast.tune.driver.ray import tune_ray
        return tune_ray(space, SIZE, backend_factory=factory, num_workers=1, prefetch=batch, **kw)


@pytest.fixture(params=["tune", "tune_ray"])
def front(request):
    """Each front in turn: tune() with a backend, tune_ray() with a factory on the module's cluster."""
    if request.param == "tune":
        return Local()
    request.getfixturevalue("cluster")
    return OnRay()


@pytest.fixture(scope="module")
def space():
    return small_space()


def records(path) -> list[dict]:
    header, recs, torn = read_log(str(path))
    assert header is not None and not torn
    return recs


def results(recs) -> list[dict]:
    return [r for r in recs if "config" in r]


def first(space, n) -> list[dict]:
    return [dict(c) for c in candidates(space, "exhaustive", n, {})]


# ------------------------------------------------------------------ per-result steps, both fronts

def test_twins_early_cuts_and_a_failed_reference(front, space, tmp_path):
    """Configurations of one identity are measured once (the others copy it, ``twin_of``),
    early cuts are counted, and a reference that fails is logged as such; a configuration that
    does not compile is a compile_error without a measurement."""
    log, jour = tmp_path / "r.jsonl", tmp_path / "measured.jsonl"
    report = front(space, Factory(str(jour), twins=True, cut=1.15, reference_fails=True), budget=12, log_path=log)
    assert report.complete and report.tried == report.measured == 12
    recs = records(log)
    twins = [r for r in results(recs) if r.get("twin_of")]
    measured = journal(jour)
    assert len(twins) == report.twins == 6 and len(measured) == 12 - 6
    keys = [config_key(m["config"], space.iterators) for m in measured]
    assert len(set(keys)) == len(keys)                                  # none measured twice
    by_config = {json.dumps(r["config"], sort_keys=True): r for r in results(recs)}
    for t in twins:
        original = by_config[json.dumps(t["twin_of"], sort_keys=True)]
        assert "twin_of" not in original and original["ms"] == t["ms"]
        assert dict(t["twin_of"], shmem_banks=t["config"]["shmem_banks"]) == t["config"]
    cut = [r for r in results(recs) if r.get("early_cut") and not r.get("twin_of")]
    assert cut and report.cut == len(cut)
    assert any(m["best_ms"] is not None for m in measured)             # the best so far was told
    run = recs[-1]["run"]
    assert run["twins"] == 6 and run["early_cut"] == len(cut) and run["measured"] == 12
    ref = [r for r in recs if "reference" in r]
    assert len(ref) == 1 and ref[0]["status"] == LAUNCH_ERROR and "cuBLAS reference: RuntimeError" in ref[0]["error"]
    assert report.reference.status == LAUNCH_ERROR
    text = format_report(report)
    assert "cuBLAS:      not measured" in text and "measured once" in text and "clear loser(s)" in text


class Waits:
    """A toy ask/tell strategy: proposes survivors two at a time and waits (``[]``) until both
    are told, ends (``None``) after ``limit``; records the most it ever had outstanding."""

    def __init__(self, rows, limit=6):
        self.rows, self.limit = rows, limit
        self.given, self.told, self.most = 0, [], 0

    def ask(self, n):
        if self.given >= self.limit:
            return None
        if self.given > len(self.told):
            return []
        pick = self.rows[self.given:self.given + min(n, 2, self.limit - self.given)]
        self.given += len(pick)
        self.most = max(self.most, self.given - len(self.told))
        return pick

    def tell(self, config, measurement):
        self.told.append((dict(config), measurement))


def test_a_strategy_object_drives_both_fronts(front, space, tmp_path):
    """An object with ask/tell: it is told every outcome (a measurement), may wait with [] and
    ends with None; beast's own Strategy objects are taken the same way."""
    rows = [c for c in first(space, 40) if c["blk_k"] != 3]
    waits = Waits(rows)
    jour = tmp_path / "m.jsonl"
    report = front(space, Factory(str(jour)), budget=10, strategy=waits)
    assert report.complete and report.strategy == "Waits" and report.measured == 6 == len(waits.told)
    assert waits.most <= 2                                              # it was never asked while waiting
    assert all(isinstance(m, Measurement) and m.status == OK for _, m in waits.told)
    assert sorted(json.dumps(c, sort_keys=True) for c, _ in waits.told) == \
        sorted(json.dumps(r.config, sort_keys=True) for r in report.results)
    local = make_strategy("local", space, seed=1)
    log = tmp_path / "l.jsonl"
    report = front(space, Factory(str(tmp_path / "l_m.jsonl")), budget=5, strategy=local, log_path=log)
    assert report.complete and report.measured == 5 and report.strategy == "LocalSearch"
    assert len(local.costs) == 5 and not local.pending                  # told every outcome
    keys = [config_key(r["config"], space.iterators) for r in results(records(log))]
    assert len(set(keys)) == 5


def test_a_prior_log_starts_portfolio_in_both_fronts(front, space, tmp_path):
    """``prior=``: an earlier log of the space; the portfolio search proposes its best right after
    the centre, through either front (the session hands the prior to the strategy)."""
    earlier = tmp_path / "earlier.jsonl"
    done = front(space, Factory(str(tmp_path / "e_m.jsonl")), budget=12, strategy="random", seed=5, log_path=earlier)
    fastest = min(r.ms for r in done.results if r.ms is not None)
    best = [r.config for r in done.results if r.ms == fastest]          # (ties: any of them)
    log = tmp_path / "p.jsonl"
    report = front(space, Factory(str(tmp_path / "p_m.jsonl")), budget=3, strategy="portfolio", seed=1,
                   log_path=log, prior=[str(earlier)], batch=1)
    assert report.complete and report.measured == 3
    configs = [r["config"] for r in results(records(log))]
    assert any(c in best for c in configs[:2])


def test_the_model_gate_prunes_in_both_fronts_and_a_rerun_resumes(front, space, tmp_path):
    """model=True: once a 1 ns time is in, every candidate's lower bound exceeds it: logged as
    pruned (counted in the budget), neither compiled nor measured; a rerun tries nothing again."""
    log, jour = tmp_path / "g.jsonl", tmp_path / "m.jsonl"
    report = front(space, Factory(str(jour), instant=True), budget=12, strategy="random", seed=4, log_path=log,
                   model=True)
    assert report.complete and report.tried == 12
    measured = journal(jour)
    assert report.measured == len(measured) <= 3 and report.pruned == report.counts[PRUNED] == 12 - len(measured)
    pruned = [r for r in results(records(log)) if r["status"] == PRUNED]
    assert len(pruned) == report.pruned and all(r["lower_ms"] > r["best_ms"] == 1e-6 for r in pruned)
    again = front(space, Factory(str(jour), instant=True), budget=12, strategy="random", seed=4, log_path=log,
                  model=True)
    assert again.resumed == 12 and again.measured == 0 and len(journal(jour)) == len(measured)


def test_started_records_and_resume_behave_the_same(front, space, tmp_path):
    """Ctrl-C (here from the progress callback) ends a run with what was under way marked
    interrupted, so the resumed run measures it; a configuration a run started and never
    finished (its process died) is logged as crashed by the next, once, and not measured."""
    log, jour = tmp_path / "s.jsonl", tmp_path / "m.jsonl"

    def stop(done, total, best):
        if done >= 2:
            raise KeyboardInterrupt

    factory = Factory(str(jour))
    one = front(space, factory, budget=8, log_path=log, progress=stop)
    assert one.interrupted and not one.complete and one.measured == 2
    recs = records(log)
    assert not any(r.get("status") == CRASHED for r in recs)
    header, marks, _ = read_log(str(log), marks=True)
    started = [m["started"] for m in marks if "started" in m]
    assert len(started) >= 2                                            # written before each measurement
    done = {config_key(r["config"], space.iterators) for r in results(recs)}
    dead = next(c for c in first(space, 40) if config_key(c, space.iterators) not in done and c["blk_k"] != 3
                and c not in started)
    with TuneLog.open(log, header) as again:                            # as a run that died would leave it
        again.append_started(dead)
    seen = []
    two = front(space, factory, budget=8, log_path=log, progress=lambda d, t, b: seen.append(d))
    assert two.complete and two.tried == 8 and two.resumed == 3 and seen[0] == 3
    recs = results(records(log))
    crashed = [r for r in recs if r["status"] == CRASHED]
    assert [r["config"] for r in crashed] == [dead] and crashed[0]["ended_run"]
    assert dead not in [m["config"] for m in journal(jour)]
    keys = [config_key(r["config"], space.iterators) for r in recs]
    assert len(keys) == len(set(keys)) == 8
    assert all(r["status"] in (OK, COMPILE_ERROR, CRASHED) for r in recs)


# ------------------------------------------------------------------ the adapter and the registry

class Script:
    """Answers ask() from a script of replies, recording n and what it was told."""

    def __init__(self, *replies):
        self.replies, self.asked, self.told = list(replies), [], []

    def ask(self, n):
        self.asked.append(n)
        return self.replies.pop(0) if self.replies else []

    def tell(self, config, outcome):
        self.told.append(config)


def test_the_adapter_waits_while_outcomes_are_due_and_ends_when_none_are():
    a, b, c = {"x": 1}, {"x": 2}, {"x": 3}
    script = Script([a, b], [], [c], [])
    stream = StrategyStream(script, need=None, batch=2)
    assert next(stream) == a and next(stream) == b
    assert next(stream) is None                                         # [] with a and b out: wait
    stream.tell(a, Measurement(OK, ms=1.0))
    assert next(stream) == c
    stream.tell(b, Measurement(OK, ms=1.0))
    stream.tell(c, Measurement(OK, ms=1.0))
    assert list(stream) == []                                           # [] with nothing out: the end
    assert script.told == [a, b, c]
    ended = StrategyStream(Script([a], None, [b]), need=None, batch=1)
    assert list(ended) == [a]                                           # None: the end, at once
    capped = Script([a, b], [c])
    assert list(StrategyStream(capped, need=3, batch=2)) == [a, b, c] and capped.asked == [2, 1]


def test_a_beast_strategy_takes_a_measurement_or_a_cost(space):
    strategy = make_strategy("random", space, seed=2)
    picks = strategy.ask(3)
    strategy.tell(picks[0], Measurement(OK, ms=2.5))
    strategy.tell(picks[1], Measurement(COMPILE_ERROR, error="x"))
    strategy.tell(picks[2], 1.5)
    costs = {tuple(strategy.pool.config(i).values()): c for i, c in strategy.costs.items()}
    assert [costs[tuple(p.values())] for p in picks] == [2.5, None, 1.5]
    assert isinstance(strategy, Strategy) and isinstance(strategy_stream(strategy, 2), StrategyStream)


def test_one_registry_of_strategies(capsys):
    """``beast tune --strategy`` offers the registry's names and exhaustive, nothing else."""
    from beast.cli import build_parser
    parser = build_parser()
    for name in (EXHAUSTIVE, *STRATEGIES):
        assert parser.parse_args(["tune", "s.py", "--strategy", name]).strategy == name
    with pytest.raises(SystemExit):
        parser.parse_args(["tune", "s.py", "--strategy", "genetic"])
    offered = capsys.readouterr().err.split("choose from ")[-1]
    assert sorted(offered.replace("'", "").replace(")", "").replace(",", " ").split()) == \
        sorted((EXHAUSTIVE, *STRATEGIES))
    assert check_strategy("exhaustive") == "exhaustive" and check_strategy("portfolio") == "portfolio"
    with pytest.raises(BeastError, match="unknown strategy 'genetic'") as err:
        check_strategy("genetic")
    assert "exhaustive, random, local" in err.value.hint and "ask(n)" in err.value.hint
    with pytest.raises(BeastError, match="unknown strategy"):
        check_strategy(object())


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", [a.name for a in node.names]


def test_the_report_text_does_not_import_the_local_front_and_no_private_name_crosses_modules():
    assert not any(module == "local" for level, module, _ in _imports(DRIVER / "report.py") if level == 1)
    for path in DRIVER.glob("*.py"):
        for level, module, names in _imports(path):
            if level or module.startswith("beast"):
                private = [n for n in names if n.startswith("_") and n != "__future__"]
                assert not private, f"{path.name} imports {private} from {module}"


def test_the_old_paths_are_the_fronts():
    import importlib
    from beast.tune.driver import local, ray
    assert importlib.import_module("beast.tune.runner") is local and local.tune is tune
    assert importlib.import_module("beast.tune.ray_runner") is ray
