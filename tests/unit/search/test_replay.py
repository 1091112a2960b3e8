"""Replaying strategies on recorded GPU times: reproducible, failures count, the CLI, and
clear errors for broken data files, seeds and budgets to report."""
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import beast
from beast.cli import main
from beast.errors import BeastError
from beast.search.replay import (check_checkpoints, default_checkpoints, format_replay, load_recorded, match_space, replay)
from beast.search import Pool, make_strategy
from conftest import TESTS as TESTS_DIR

ROOT = Path(TESTS_DIR).parent
DATA = Path(TESTS_DIR) / "data" / "benchmark_hub"
CONV_SPACE = str(ROOT / "spaces" / "real" / "convolution.py")
CONV_DATA = str(DATA / "convolution_A4000.json.gz")


@pytest.fixture(scope="module")
def conv():
    return match_space(beast.load(CONV_SPACE), load_recorded(CONV_DATA))


def test_recorded_data_keeps_failures_as_nan():
    run = load_recorded(CONV_DATA)
    assert run.names[:2] == ("block_size_x", "block_size_y") and len(run) == 4362
    assert (~np.isfinite(run.times)).sum() == 161          # 155 runtime + 6 compilation failures
    assert run.optimum == pytest.approx(1.021172, rel=1e-6)


@pytest.mark.parametrize("name", ["random", "local", "hybrid"])
def test_replay_is_reproducible_and_monotone(conv, name):
    pool, times = conv
    a = replay(pool, times, name, 30, repeats=2, seed=5, batch=5)
    b = replay(pool, times, name, 30, repeats=2, seed=5, batch=5)
    assert np.array_equal(a.fractions, b.fractions) and a.fractions.shape == (2, 30)
    assert (np.diff(a.fractions, axis=1) >= 0).all() and (a.fractions <= 1.0).all()
    assert not np.array_equal(a.fractions[0], a.fractions[1])   # the repeats use different seeds
    assert a.optimum == pytest.approx(float(np.nanmin(times)))


def test_hybrid_leaves_a_local_optimum_once_it_stalls(conv):
    # seed 12 of the convolution data: the neighbour walk and the exploring model settle within
    # 0.4 % of the optimum (block_size_x 32, where 256 is best: 48..240 in between are slower);
    # once the best stalls, one-parameter moves in the model's order and greedy model picks
    # reach the optimum within 5 % of the space
    pool, times = conv
    before = dict(design="random", start=3, wide=0, exploit=0.0, stall=0)
    stuck = replay(pool, times, "hybrid", 218, repeats=1, seed=12, **before)
    assert 0.99 < stuck.at(218)[0] < 1.0
    assert replay(pool, times, "hybrid", 218, repeats=1, seed=12).at(218)[0] == 1.0
    with pytest.raises(BeastError, match="design must be"):
        make_strategy("hybrid", pool=pool, design="sobol")


def test_failed_configurations_are_evaluations_that_find_nothing():
    X = np.arange(20).reshape(-1, 1)
    times = np.full(20, np.nan)
    times[7] = 2.0
    times[13] = 1.0
    pool = Pool(("p",), X)
    res = replay(pool, times, "random", 20, repeats=1, seed=9)
    order = [c["p"] for c in make_strategy("random", pool=pool, seed=9).ask(20)]
    curve = res.fractions[0]
    first = min(order.index(7), order.index(13))
    assert (curve[:first] == 0).all() and curve[first] > 0
    assert res.evaluations_to(1.0)[0] == order.index(13) + 1
    assert curve[-1] == 1.0


def test_whole_budget_always_finds_the_optimum_and_the_table(conv):
    pool, times = conv
    res = replay(pool, times, "random", len(pool), repeats=1, seed=0)
    assert res.fractions[0, -1] == 1.0
    text = format_replay(res)
    assert "evaluations to 95% of optimum" in text and "  4362 " in text.replace("\n", " ")
    assert default_checkpoints(4362, 100) == [44, 87, 100]


def test_space_that_does_not_match_the_data_is_refused():
    dedisp = beast.load(str(ROOT / "spaces" / "real" / "dedispersion.py"))
    with pytest.raises(BeastError, match="not the data's parameters"):
        match_space(dedisp, load_recorded(CONV_DATA))
    run = load_recorded(CONV_DATA)
    run.X = run.X[1:]
    run.times = run.times[1:]
    with pytest.raises(BeastError, match="1 survivor"):
        match_space(beast.load(CONV_SPACE), run)


def test_cli_replay_json(capsys, tmp_path):
    rc = main(["replay", CONV_SPACE, "--data", CONV_DATA, "--strategy", "local", "--budget", "50",
               "--repeats", "2", "--at", "10", "50", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["size"] == 4362 and set(out["budgets"]) == {"10", "50"}
    assert 0 < out["budgets"]["50"]["mean"] <= 1 and len(out["evaluations_to_95"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["replay", CONV_SPACE, "--data", str(bad), "--budget", "5"]) == 2
    assert "not a Kernel Tuner cache file" in capsys.readouterr().err


def test_cli_tune_offers_the_search_strategies():
    from beast.cli import build_parser
    for name in ("random", "local", "model", "hybrid"):
        args = build_parser().parse_args(["tune", CONV_SPACE, "--size", "8", "8", "8", "--strategy", name,
                                          "--budget", "5"])
        assert args.strategy == name and args.budget == 5
    assert main(["replay", CONV_SPACE, "--data", CONV_DATA, "--budget", "5", "--strategy", "nope"]) == 2


# --- parameters with one value in the data (constants) --------------------------------------

def _data_file(tmp_path, configs, extra=None):
    """A small cache file over a in 1..4, b in 1..3 (a + b <= 5), with the constants ``extra``."""
    extra = extra or {}
    names = ["a", "b"] + list(extra)
    cache = {}
    for i, (a, b) in enumerate(configs):
        entry = dict(a=a, b=b, **extra, time=1.0 + i)
        cache[",".join(str(entry[n]) for n in names)] = entry
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"tune_params_keys": names, "cache": cache}))
    return str(path)


AB = [(a, b) for a in range(1, 5) for b in range(1, 4) if a + b <= 5]


def _space_file(tmp_path, text):
    path = tmp_path / "space.py"
    path.write_text("from beast import *\n" + text)
    return str(path)


def test_constant_parameters_of_the_data_may_be_left_out_of_the_space(tmp_path):
    data = _data_file(tmp_path, AB, {"PRECISION": 32, "kind": "single"})
    run = load_recorded(data)
    assert run.constants == {"PRECISION": 32, "kind": "single"}
    assert run.names == ("a", "b", "PRECISION")           # a string constant is no column
    space = beast.load(_space_file(tmp_path, "a = range(1, 5)\nb = range(1, 4)\n"
                                             "too_big = condition(a + b > 5)\n"))
    pool, times = match_space(space, run)
    assert pool.names == ("a", "b") and len(pool) == len(AB) and np.isfinite(times).all()
    # a space that has the integer constant as a one-value iterator matches as well
    with_p = beast.load(_space_file(tmp_path, "a = range(1, 5)\nb = range(1, 4)\nPRECISION = iterator([32])\n"
                                              "too_big = condition(a + b > 5)\n"))
    assert len(match_space(with_p, run)[0]) == len(AB)


def test_a_varying_parameter_missing_from_the_space_is_refused(tmp_path):
    run = load_recorded(_data_file(tmp_path, AB, {"PRECISION": 32}))
    only_a = beast.load(_space_file(tmp_path, "a = range(1, 5)\n"))
    with pytest.raises(BeastError, match=r"only in the data, where they vary: \['b'\]") as err:
        match_space(only_a, run)
    assert "constant such as PRECISION" in str(err.value)


def test_a_varying_parameter_that_is_not_an_integer_is_refused(tmp_path):
    path = tmp_path / "strings.json"
    path.write_text(json.dumps({"tune_params_keys": ["a", "kind"], "cache": {
        "1,x": {"a": 1, "kind": "x", "time": 1.0}, "2,y": {"a": 2, "kind": "y", "time": 2.0}}}))
    with pytest.raises(BeastError, match="parameter 'kind' of the data is not all integers"):
        load_recorded(path)


def test_cli_replay_names_the_constants_it_fixed(tmp_path, capsys):
    data = _data_file(tmp_path, AB, {"PRECISION": 32})
    space = _space_file(tmp_path, "a = range(1, 5)\nb = range(1, 4)\ntoo_big = condition(a + b > 5)\n")
    assert main(["replay", space, "--data", data, "--strategy", "random", "--budget", "4",
                 "--repeats", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["constants"] == {"PRECISION": 32} and out["size"] == len(AB)
    assert main(["replay", space, "--data", data, "--strategy", "random", "--budget", "4",
                 "--repeats", "1"]) == 0
    assert capsys.readouterr().out.startswith("constant in the data, not in the space: PRECISION=32\n")
    only_a = _space_file(tmp_path, "a = range(1, 5)\n")
    assert main(["replay", only_a, "--data", data, "--budget", "4"]) == 2
    err = capsys.readouterr().err
    assert "where they vary: ['b']" in err and "Traceback" not in err


def test_clblast_gemm_replays_without_its_precision(tmp_path):
    # Kernel Tuner's CLBlast GEMM data records PRECISION (always 32) as a parameter
    source = (ROOT / "spaces" / "real" / "kt_gemm.py").read_text()
    lines = [ln for ln in source.splitlines() if not ln.startswith("PRECISION")]
    path = tmp_path / "gemm.py"
    path.write_text("\n".join(lines).replace(', "PRECISION": [32]', "") + "\n")
    run = load_recorded(DATA / "kt_gemm_RTX_3090.json.gz")
    assert run.constants == {"KWG": 32, "KWI": 2, "STRM": 0, "STRN": 0, "PRECISION": 32}
    pool, times = match_space(beast.load(str(path)), run)
    assert "PRECISION" not in pool.names and len(pool) == 17956 and np.isfinite(times).all()


# --- bad input: a clear error (status 2), never an internal error ----------------------------

def _cli(capsys, *args):
    """``beast replay ...`` through main: (status, stderr); an argparse refusal counts too."""
    try:
        rc = main(["replay", *args])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    return rc, err


def _flipped(data: bytes, at: int) -> bytes:
    out = bytearray(data)
    out[at:at + 8] = bytes(b ^ 0xFF for b in out[at:at + 8])
    return bytes(out)


GZ = Path(CONV_DATA).read_bytes()
GOOD = {"tune_params_keys": ["a"], "cache": {"1": {"a": 1, "time": 1.5}}}
BROKEN = {
    "truncated.json.gz": (GZ[:5000], "truncated"),
    "inflate.json.gz": (_flipped(GZ, 1000), r"corrupt \(gzip: Error -3"),    # zlib.error
    "crc.json.gz": (_flipped(GZ, len(GZ) // 2), "corrupt"),
    "empty.json": (b"", "the data file is empty"),
    "empty.json.gz": (b"", "the data file is empty"),
    "blank.json.gz": (gzip.compress(b" \n"), "the data file is empty"),
    "text.json": (b"time,a\n1.0,1\n", r"not valid JSON: .* at line 1 column 1"),
    "latin1.json": (b'{"kernel_name": "caf\xe9"}', "not JSON text"),
    "list.json": (b"[1, 2]", r"the JSON is an array, not an object with 'cache'"),
    "nocache.json": (b'{"tune_params_keys": ["a"]}', "no 'cache' object"),
    "cachelist.json": (b'{"tune_params_keys": ["a"], "cache": []}', "'cache' is an array"),
    "emptycache.json": (b'{"tune_params_keys": ["a"], "cache": {}}', "'cache' is empty"),
    "keys.json": (b'{"tune_params_keys": "a", "cache": {"1": {"a": 1, "time": 1}}}',
                  "'tune_params_keys' does not name the parameters"),
    "params.json": (b'{"tune_params": 3, "cache": {"1": {"a": 1, "time": 1}}}',
                    "'tune_params' does not name the parameters"),
    "notime.json": (b'{"tune_params_keys": ["a"], "cache": {"1": {"a": 1}}}',
                    "configuration '1' of the data has no 'time'"),
    "number.json": (b'{"tune_params_keys": ["a"], "cache": {"1": 2.5}}',
                    "configuration '1' of the data has no 'time'"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_data_file_is_a_clear_error_naming_it(tmp_path, name):
    content, message = BROKEN[name]
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(BeastError, match=message) as err:
        load_recorded(path)
    assert err.value.filename == str(path) and str(err.value).startswith(f"{path}: error: ")


def test_a_directory_as_data_file_is_a_clear_error(tmp_path):
    with pytest.raises(BeastError, match="cannot read the data file: Is a directory"):
        load_recorded(tmp_path)


def test_gzip_is_recognised_by_content_not_by_name(tmp_path):
    plain, packed = tmp_path / "plain.json.gz", tmp_path / "packed.json"
    plain.write_text(json.dumps(GOOD))
    packed.write_bytes(gzip.compress(json.dumps(GOOD).encode()))
    for path in (plain, packed):
        run = load_recorded(path)
        assert run.names == ("a",) and run.times.tolist() == [1.5]


@pytest.mark.parametrize("name", ["truncated.json.gz", "inflate.json.gz", "list.json", "notime.json"])
def test_cli_replay_of_a_broken_data_file_exits_2(tmp_path, capsys, name):
    path = tmp_path / name
    path.write_bytes(BROKEN[name][0])
    rc, err = _cli(capsys, CONV_SPACE, "--data", str(path), "--budget", "10", "--repeats", "2")
    assert rc == 2 and err.startswith(f"{path}: error: ")


def _tiny():
    times = np.arange(1.0, 21.0)
    return Pool(("p",), np.arange(20).reshape(-1, 1)), times


@pytest.mark.parametrize("seed", [-1, 1.5, True, None, "3"])
def test_replay_refuses_a_seed_that_is_not_a_non_negative_integer(seed):
    pool, times = _tiny()
    with pytest.raises(BeastError, match=r"seed must be a non-negative integer \(0, 1, 2, \.\.\.\)"):
        replay(pool, times, "random", 5, repeats=2, seed=seed)
    assert replay(pool, times, "random", 5, repeats=2, seed=np.int64(7)).seeds == [7, 8]


def test_replay_names_the_setting_that_is_not_positive():
    pool, times = _tiny()
    for setting in ("budget", "repeats", "batch"):
        kw = {**dict(budget=5, repeats=1, batch=1), setting: 0}
        with pytest.raises(BeastError, match=f"{setting} must be at least 1, not 0"):
            replay(pool, times, "random", **kw)


def test_budgets_to_report_are_from_1_to_the_replays_budget():
    pool, times = _tiny()
    res = replay(pool, times, "random", 10, repeats=2, seed=0)
    assert check_checkpoints(res, (1, np.int64(5), 10)) == [1, 5, 10]
    assert res.at(10).tolist() == res.fractions[:, 9].tolist()
    for bad in ([0, -3, 100000], [11], [2.5], [True]):
        with pytest.raises(BeastError, match="must be from 1 to the replay's budget, 10; not "):
            format_replay(res, bad)
        with pytest.raises(BeastError, match="from 1 to the replay's budget"):
            res.at(bad[0])
    with pytest.raises(BeastError, match=r"not 0, -3, 100000$"):
        check_checkpoints(res, [1, 0, -3, 100000])
    whole = replay(pool, times, "random", 50, repeats=1, seed=0)     # the budget is cut to 20
    with pytest.raises(BeastError, match=r"budget, 20 \(the whole space: 20 configurations\); not 21"):
        whole.at(21)


def test_cli_replay_refuses_a_negative_seed_and_budgets_outside_the_run(capsys):
    base = [CONV_SPACE, "--data", CONV_DATA, "--budget", "10", "--repeats", "2"]
    rc, err = _cli(capsys, *base, "--seed", "-1")
    assert rc == 2 and "non-negative integer" in err and "-1" in err
    for extra in (["--at", "5", "100000"], ["--at", "100000", "--json"]):
        rc, err = _cli(capsys, *base, *extra)
        assert rc == 2 and "--at" in err and "100000" in err and "from 1 to" in err
    assert capsys.readouterr().out == ""


# --- recorded times that are not a finite positive number: failed configurations -------------

PNPOLY_SPACE = str(ROOT / "spaces" / "real" / "kt_pnpoly.py")
PNPOLY_DATA = DATA / "kt_pnpoly_RTX_3090.json.gz"


def _pnpoly_with(tmp_path, change):
    """A copy of the pnpoly data with ``change(entries)`` applied to its timed entries, sorted
    fastest first; returns (path, the times left positive, the entries)."""
    data = json.loads(gzip.decompress(PNPOLY_DATA.read_bytes()))
    timed = sorted((e for e in data["cache"].values() if not isinstance(e["time"], str)),
                   key=lambda e: e["time"])
    change(timed)
    path = tmp_path / "pnpoly.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return str(path), [e["time"] for e in timed if e["time"] > 0], timed


def _zero_best(timed):
    timed[0]["time"] = 0.0


def _negative_three(timed):
    for e in timed[:3]:
        e["time"] = -e["time"]


@pytest.mark.parametrize("change, failed", [(_zero_best, 1), (_negative_three, 3)])
def test_a_recorded_time_of_zero_or_less_is_a_failed_configuration(tmp_path, capsys, change, failed):
    path, positive, timed = _pnpoly_with(tmp_path, change)
    good = load_recorded(PNPOLY_DATA)
    run = load_recorded(path)
    assert (~np.isfinite(run.times)).sum() == (~np.isfinite(good.times)).sum() + failed
    assert run.optimum == pytest.approx(min(positive)) and run.optimum > 0
    pool, times = match_space(beast.load(PNPOLY_SPACE), run)
    res = replay(pool, times, "random", len(pool), repeats=1, seed=0)
    assert res.optimum == run.optimum and (res.fractions <= 1.0).all() and res.fractions[0, -1] == 1.0
    assert main(["replay", PNPOLY_SPACE, "--data", path, "--strategy", "random", "--budget", "200",
                 "--repeats", "2", "--json"]) == 0      # was: internal error: ZeroDivisionError
    captured = capsys.readouterr()
    assert captured.err == ""
    out = json.loads(captured.out)
    assert out["optimum_ms"] == pytest.approx(min(positive))
    assert all(0 <= b["mean"] <= 1 for b in out["budgets"].values())


def test_a_data_file_whose_times_are_all_zero_or_less_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "zero.json"
    path.write_text(json.dumps({"tune_params_keys": ["a"], "cache": {
        "1": {"a": 1, "time": 0.0}, "2": {"a": 2, "time": -1.5}}}))
    with pytest.raises(BeastError, match="no configuration of the data has a time"):
        load_recorded(path).optimum
    space = _space_file(tmp_path, "a = range(1, 3)\n")
    rc, err = _cli(capsys, space, "--data", str(path), "--budget", "2")
    assert rc == 2 and "has a time" in err


def test_times_given_to_replay_that_are_zero_or_less_are_failures():
    pool, times = _tiny()
    failed = times.copy()
    failed[[0, 4, 9]] = np.nan
    odd = times.copy()
    odd[[0, 4, 9]] = [0.0, -3.0, -np.inf]
    expected = replay(pool, failed, "random", 20, repeats=3, seed=2)
    got = replay(pool, odd, "random", 20, repeats=3, seed=2)
    assert got.optimum == 2.0 and np.array_equal(got.fractions, expected.fractions)
    assert (got.fractions <= 1.0).all()
    assert odd[0] == 0.0                                   # the caller's array is left as it was
    with pytest.raises(BeastError, match="no configuration has a time"):
        replay(pool, -times, "random", 5)
    with pytest.raises(BeastError, match="no configuration has a time"):
        replay(pool, np.zeros(20), "random", 5)


# --- replay's arguments: a BeastError naming the argument ------------------------------------

@pytest.mark.parametrize("name", ["budget", "repeats", "batch"])
@pytest.mark.parametrize("value", ["5", None, float("nan"), float("inf"), 2.5, 2.0, True, -1, 0])
def test_replay_refuses_counts_that_are_not_integers_of_at_least_1(name, value):
    pool, times = _tiny()
    kw = {**dict(budget=5, repeats=2, batch=1), name: value}
    for strategy in ("random", "local"):
        with pytest.raises(BeastError, match=rf"error: {name} must be (an integer of )?at least 1, not "):
            replay(pool, times, strategy, **kw)


def test_replay_takes_numpy_integers_and_a_list_of_times():
    pool, times = _tiny()
    a = replay(pool, times, "local", np.int64(6), repeats=np.int32(2), seed=3, batch=np.uint8(2))
    b = replay(pool, times.tolist(), "local", 6, repeats=2, seed=3, batch=2)
    assert a.fractions.shape == (2, 6) and np.array_equal(a.fractions, b.fractions)


@pytest.mark.parametrize("times, words", [
    (np.arange(1.0, 11.0), r"one entry per configuration of the pool \(20\), not 10$"),
    (np.arange(1.0, 31.0), r"one entry per configuration of the pool \(20\), not 30$"),
    (np.ones((20, 1)), r"a sequence of numbers, .* \(20\), not an array of shape \(20, 1\)$"),
    (3.0, r"a sequence of numbers, one per configuration of the pool \(20\), not 3.0$"),
    (None, r"a sequence of numbers, .* not None$"),
    (["fast"] * 20, r"a sequence of numbers, .* not \['fast', "),
    ([[1.0], [1.0, 2.0]], r"a sequence of numbers, .* not \[\[1.0\], "),
])
def test_replay_refuses_times_that_are_not_one_number_per_configuration(times, words):
    pool, _ = _tiny()
    with pytest.raises(BeastError, match=words):
        replay(pool, times, "random", 5)
