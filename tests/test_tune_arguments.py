"""tune()'s arguments: each wrong one is a BeastError naming it, before any compile, GPU work
or log file (a negative thread count ran nothing and said nothing; a float budget, a NaN or a
string raised Python's own errors; a float or bool size was truncated)."""
import numpy as np
import pytest

from beast.cli import main
from beast.errors import BeastError
from beast.tune import tune
from beast.tune.driver.local import check_tune_arguments

from test_tune_log import GEMM, FakeBackend, small_space


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
