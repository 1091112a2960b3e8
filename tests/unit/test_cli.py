"""The ``beast`` command end to end, in subprocesses: count (plain and --json), -D, --device (a
name and a JSON file), enumerate to .csv/.npy/.jsonl (header, content, atomic output), dag in three
formats, devices, compile, and ``python -m beast`` as well as the ``beast`` script."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import numpy as np
import pytest
import beast
from conftest import SPACES, rows, run_beast, write_space
from beast import cli
from beast.lang.devices import get_profile, load_profile_json, profile_names
from beast.errors import BeastError, Terminated
from conftest import ROOT


FIG01 = os.path.join(SPACES, "fig01_iterators.py")
FIG05 = os.path.join(SPACES, "fig05_local_scope.py")
GEMM = os.path.join(SPACES, "gemm.py")

# a GEMM device small enough to enumerate in a moment (the small-a profile of test_gemm_oracle)
SMALL = dict(max_threads_dim_x=8, max_threads_dim_y=8, max_threads_per_block=12, warp_size=2,
             max_registers_per_thread=32, max_regs_per_block=48,
             max_registers_per_multi_processor=4096, max_blocks_per_multi_processor=128,
             max_shared_mem_per_block=192, max_shmem_per_multi_processor=8192, float_size=2)


def ok(*args, **kw):
    proc = run_beast(*args, **kw)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def small_json(tmp_path_factory):
    from beast.lang.devices import resolve_device
    profile = resolve_device("k40c").replace(name="k40c-tiny", **SMALL)
    path = tmp_path_factory.mktemp("dev") / "tiny.json"
    path.write_text(json.dumps(profile.as_dict(), indent=2))
    return str(path)


# -- count -------------------------------------------------------------------------------------

def test_count_plain():
    proc = ok("count", FIG01)
    assert proc.stdout == "56\n" and proc.stderr == ""


def test_count_json():
    out = json.loads(ok("count", FIG01, "--json").stdout)
    assert {"survivors", "iterators", "backend", "seconds"} <= set(out)
    assert out["survivors"] == 56
    assert out["iterators"] == ["r", "fibonacci"]
    assert out["backend"] == "auto"       # the default backend
    assert out["backend_used"] in ("c", "lua", "python")
    assert isinstance(out["seconds"], (int, float)) and out["seconds"] >= 0


def test_count_with_settings():
    assert ok("count", FIG01, "-D", "N=3").stdout == "21\n"
    out = json.loads(ok("count", FIG05, "-D", "trans_a=1", "--json").stdout)
    assert out["survivors"] == 3 * (1 + 2 + 3 + 4) and out["settings"] == {"trans_a": 1}


def test_count_each_backend(backend):
    out = json.loads(ok("count", os.path.join(SPACES, "fig02_deferred.py"), "-D", "architecture=fermi",
                        "--backend", backend, "--json").stdout)
    assert out["survivors"] == 496 * 45 and out["backend"] == backend


def test_count_device_by_name_and_by_json(small_json, tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        dev = device()
        cc = range(dev.cudamajor * 10 + dev.cudaminor)
    """)
    assert ok("count", path).stdout == "35\n"                  # the default: the paper's K40c
    assert ok("count", path, "--device", "k40c").stdout == "35\n"
    assert ok("count", path, "--device", "h100").stdout == "90\n"
    assert ok("count", path, "--device", small_json).stdout == "35\n"
    expected = beast.load(GEMM, device=small_json, settings={"precision": "single"}).enumerate()
    out = json.loads(ok("count", GEMM, "--device", small_json, "-D", "precision=single", "--json").stdout)
    assert out["survivors"] == len(expected) > 0
    assert out["device"] == "k40c-tiny"


# -- enumerate ---------------------------------------------------------------------------------

def _expected(path, settings=None, device=None):
    return beast.load(path, settings=settings, device=device).enumerate()


@pytest.mark.parametrize("fmt", ["csv", "npy", "jsonl"])
def test_enumerate_formats(fmt, tmp_path, small_json):
    out = tmp_path / f"gemm.{fmt}"
    ok("enumerate", GEMM, "--device", small_json, "-o", out)
    expected = _expected(GEMM, device=small_json)
    names = list(expected.dtype.names)
    assert names[:3] == ["dim_m", "dim_n", "blk_m"] and len(names) == 15
    if fmt == "csv":
        with open(out, newline="") as fh:
            table = list(csv.reader(fh))
        assert table[0] == names
        assert [tuple(map(int, r)) for r in table[1:]] == rows(expected)
    elif fmt == "npy":
        arr = np.load(out)
        assert arr.dtype == expected.dtype and np.array_equal(arr, expected)
    else:
        lines = out.read_text().splitlines()
        objs = [json.loads(line) for line in lines]
        assert all(list(o) == names for o in objs)
        assert [tuple(o[n] for n in names) for o in objs] == rows(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name], "no temporary files are left"


def test_enumerate_small_figure_to_csv_exact(tmp_path):
    out = tmp_path / "x.csv"
    ok("enumerate", FIG05, "-o", out, "-D", "trans_a=1")
    lines = out.read_text().splitlines()
    assert lines[0] == "blk_m,blk_k,blk_n_a"
    got = sorted(tuple(map(int, line.split(","))) for line in lines[1:])
    assert got == sorted((m, k, n) for m in range(1, 5) for k in range(1, 4) for n in range(m, 0, -1))


def test_enumerate_empty_space_writes_the_header(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        a = range(3)
        condition(a >= 0)
    """)
    out = tmp_path / "e.csv"
    ok("enumerate", path, "-o", out)
    assert out.read_text() == "a\n"
    ok("enumerate", path, "-o", tmp_path / "e.jsonl")
    assert (tmp_path / "e.jsonl").read_text() == ""
    ok("enumerate", path, "-o", tmp_path / "e.npy")
    arr = np.load(tmp_path / "e.npy")
    assert arr.shape == (0,) and arr.dtype.names == ("a",)


def test_enumerate_format_option_and_unknown_extension(tmp_path):
    out = tmp_path / "table.txt"
    ok("enumerate", FIG01, "-o", out, "--format", "csv")
    assert out.read_text().splitlines()[0] == "r,fibonacci"
    proc = run_beast("enumerate", FIG01, "-o", tmp_path / "table.dat")
    assert proc.returncode == 2 and "cannot tell the output format" in proc.stderr
    assert not (tmp_path / "table.dat").exists()


def test_enumerate_to_stdout(tmp_path):
    ok("enumerate", FIG05, "-o", tmp_path / "x.csv", "-D", "trans_a=1")
    assert ok("enumerate", FIG05, "-o", "-", "-D", "trans_a=1").stdout == (tmp_path / "x.csv").read_text()
    lines = ok("enumerate", FIG05, "-o", "-", "--format", "jsonl", "-D", "trans_a=1").stdout.splitlines()
    assert json.loads(lines[0]) == {"blk_m": 1, "blk_k": 1, "blk_n_a": 1}
    # a reader that stops early (| head): no error, no traceback
    proc = subprocess.Popen([sys.executable, "-m", "beast", "enumerate", GEMM, "-o", "-", "--backend", "c"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"dim_m,dim_n,")
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


def test_an_output_that_cannot_be_written_is_a_user_error(tmp_path):
    for target, why in ((tmp_path / "missing" / "x.csv", f"there is no folder {tmp_path / 'missing'}"),
                        (tmp_path, "it is a folder")):
        proc = run_beast("enumerate", FIG05, "-o", target, "--format", "csv")
        assert proc.returncode == 2 and proc.stderr == f"error: cannot write {target}: {why}\n", proc.stderr
    (tmp_path / "afile").write_text("")
    proc = run_beast("compile", FIG05, "-o", tmp_path / "afile")
    assert proc.returncode == 2 and "cannot write" in proc.stderr and "internal error" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.parametrize("fmt", ["csv", "npy", "jsonl"])
def test_enumerate_failure_keeps_an_existing_output(fmt, tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        a = range(2000, -1, -1)
        b = range(3)
        q = 100 // a
        condition(q > b + 1000)
    """, "bad.py")
    out = tmp_path / f"old.{fmt}"
    out.write_bytes(b"previous results\n")
    proc = run_beast("enumerate", path, "-o", out)
    assert proc.returncode == 2, proc.stderr
    assert "division by zero" in proc.stderr and "Traceback" not in proc.stderr
    assert out.read_bytes() == b"previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.py", out.name]


def test_enumerate_each_backend_gives_the_same_file(backend, tmp_path, small_json):
    ref = tmp_path / "ref.csv"
    ok("enumerate", GEMM, "--device", small_json, "-o", ref, "-D", "trans_b=1")
    out = tmp_path / f"{backend}.csv"
    ok("enumerate", GEMM, "--device", small_json, "-o", out, "-D", "trans_b=1", "--backend", backend)
    assert out.read_text() == ref.read_text()


# -- dag, devices, compile ---------------------------------------------------------------------

def test_dag_formats():
    fig02 = os.path.join(SPACES, "fig02_deferred.py")
    text = ok("dag", fig02).stdout
    assert text.startswith("level sets:") and "for outer" in text and "for inner  <- outer" in text
    assert ok("dag", fig02, "--format", "text").stdout == text
    dot = ok("dag", fig02, "--format", "dot").stdout
    assert dot.startswith("digraph") and '"outer" -> "inner";' in dot
    data = json.loads(ok("dag", fig02, "--format", "json").stdout)
    assert data["iterators"] == ["inner", "outer", "ex_outer", "ex_inner"]
    assert data["level_sets"] == [["outer", "ex_outer"], ["inner", "ex_inner"]]
    assert data["loop_order"].index("outer") < data["loop_order"].index("inner")


def test_dag_of_gemm_with_settings(small_json):
    data = json.loads(ok("dag", GEMM, "--device", small_json, "-D", "arithmetic=complex",
                         "--format", "json").stdout)
    names = {n["name"] for n in data["nodes"]}
    assert "over_max_threads" in names and "dim_m_a" in names


def test_devices():
    out = ok("devices").stdout
    assert "k40c" in out and "h100" in out
    assert "local GPU:" in out


@pytest.mark.parametrize("space", ["fig03_primes.py", "gemm.py"])
def test_compile_python(space, tmp_path):
    out = tmp_path / "gen"
    proc = ok("compile", os.path.join(SPACES, space), "--backend", "python", "-o", out)
    files = proc.stdout.split()
    assert files and all(os.path.isfile(f) and os.path.dirname(f) == str(out) for f in files)
    for f in files:
        compile(open(f).read(), f, "exec")          # valid Python
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "no temporary files are left"


def test_compile_each_backend(backend, tmp_path):
    out = tmp_path / backend
    proc = ok("compile", FIG05, "--backend", backend, "-o", out)
    files = proc.stdout.split()
    assert files and all(os.path.getsize(f) > 0 for f in files)


# -- entry points and usage --------------------------------------------------------------------

def test_python_dash_m_and_the_script():
    assert ok("count", FIG01).stdout == "56\n"       # run_beast is `python -m beast`
    script = shutil.which("beast") or os.path.join(os.path.dirname(sys.executable), "beast")
    if not os.path.exists(script):
        pytest.skip("the beast script is not installed")
    proc = subprocess.run([script, "count", FIG01], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "56\n"


def test_device_help_says_what_the_default_is():
    for command in ("count", "enumerate", "dag", "stats", "compile", "replay", "tune"):
        text = " ".join(ok(command, "--help").stdout.split())
        assert "(default: k40c, the paper's Tesla K40c" in text and "'auto'" in text, command
    assert "whatever GPU measures" in " ".join(ok("tune", "--help").stdout.split())


def test_tune_without_a_gpu_does_not_suggest_naming_a_device():
    from beast.tune.device.gpu import gpu_available
    if gpu_available():
        pytest.skip("a GPU is present")
    proc = run_beast("tune", GEMM, "--device", "auto", "--size", "64", "64", "64")
    assert proc.returncode == 2 and "no GPU found" in proc.stderr and "Traceback" not in proc.stderr
    hint = " ".join(proc.stderr.split())
    assert "name a device" not in hint
    assert "NVIDIA GPU through CuPy" in hint and "so it needs one whatever --device names" in hint
    assert "`beast count` and `beast enumerate` can prune the space for a named profile" in hint
    # with --ray the GPUs are elsewhere: there naming their profile is the answer
    proc = run_beast("tune", GEMM, "--device", "auto", "--size", "64", "64", "64", "--ray")
    assert proc.returncode == 2 and "name their profile" in proc.stderr
    # count and enumerate keep their hint: a named profile is all they need
    proc = run_beast("count", FIG01, "--device", "auto")
    assert proc.returncode == 2 and "no GPU found" in proc.stderr
    if "CuPy is not installed" in proc.stderr:
        assert "name a device" in proc.stderr


def test_version():
    from importlib.metadata import PackageNotFoundError, version
    try:
        expected = version("beast-autotune")
    except PackageNotFoundError:          # a source tree that is not installed
        expected = beast.__version__
    proc = ok("--version")
    assert proc.stdout == f"beast {expected}\n" and proc.stderr == ""


def test_version_without_an_installed_distribution(monkeypatch):
    import importlib.metadata
    from beast.cli import version

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert version() == beast.__version__


def test_the_version_has_one_source():
    """pyproject.toml takes the distribution's version from beast.__version__ (also a part of the
    cache keys of compiled enumerators), so the two cannot disagree."""
    with open(os.path.join(os.path.dirname(SPACES), "pyproject.toml"), encoding="utf-8") as fh:
        text = fh.read()
    assert re.search(r'^dynamic = \["version"\]', text, re.M)
    assert 'version = {attr = "beast._version.__version__"}' in text
    assert not re.search(r'^version\s*=\s*"', text, re.M)     # no second, literal version
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", beast.__version__)


def test_usage_errors():
    proc = run_beast()
    assert proc.returncode == 2 and "usage" in proc.stderr.lower()
    proc = run_beast("count")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = run_beast("count", FIG01, "--backend", "fortran")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = run_beast("--help")
    assert proc.returncode == 0 and "count" in proc.stdout and "enumerate" in proc.stdout


# ---------------------------------------------------------------------------------------------
# The small things a user of the command line expects: the tuning install brings what
# the default strategy needs, outputs refuse what they cannot write and take devices as plain
# outputs, ``compile`` offers no option that does nothing, the exit codes are the documented ones,
# and ``beast devices --dump`` prints a profile that ``--device FILE.json`` reads back.

SPACE = """
from beast import *
dev = device()
a = range(1, dev.max_threads_dim_z + 1)
b = iterator([1, 2, 4])

@condition
def too_many(a, b):
    return a * b > dev.max_threads_dim_z
"""


@pytest.fixture
def space(space_file):
    return space_file(SPACE)


def _requirements(extra: str) -> set[str]:
    try:
        import tomllib
    except ImportError:                  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    return {re.split(r"[<>=!~ \[]", req, 1)[0].lower() for req in extras[extra]}


# -- the tuning install runs the default strategy

def test_gpu_extra_brings_what_the_default_strategy_needs():
    assert _requirements("tune") <= _requirements("gpu")
    assert "scikit-learn" in _requirements("gpu")


def test_missing_scikit_learn_names_the_extra(monkeypatch):
    from beast.search import model
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.tree", None)
    with pytest.raises(BeastError) as err:
        model._sklearn_tree()
    assert "scikit-learn" in str(err.value)
    assert "beast-autotune[" in str(err.value)


# -- outputs

def test_dag_refuses_an_extension_it_cannot_write(space, tmp_path, capsys):
    out = tmp_path / "x.pdf"
    assert cli.main(["dag", space, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot write a .pdf file" in err and ".dot" in err and ".png" in err
    assert not out.exists()
    assert cli.main(["dag", space, "-o", str(tmp_path / "x.jpg")]) == 2


def test_dag_writes_what_its_extension_names(space, tmp_path, capsys):
    out = tmp_path / "x.dot"
    assert cli.main(["dag", space, "-o", str(out)]) == 0
    assert out.read_text().lstrip().startswith(("digraph", "strict digraph"))
    assert cli.main(["dag", space, "-o", os.devnull]) == 0     # a device: text, no extension needed


def test_enumerate_to_devices_is_csv(space, capfd):
    assert cli.main(["enumerate", space, "-o", os.devnull]) == 0
    assert cli.main(["enumerate", space, "-o", "/dev/stdout"]) == 0
    lines = capfd.readouterr().out.splitlines()
    assert lines[0] == "a,b"
    # k40c: max_threads_dim_z 64; a * b <= 64 for b in 1, 2, 4
    assert len(lines) - 1 == 64 + 32 + 16
    assert lines[1] == "1,1"


def test_enumerate_still_asks_for_a_format_of_a_file(space, tmp_path, capsys):
    assert cli.main(["enumerate", space, "-o", str(tmp_path / "rows.foo")]) == 2
    assert "--format" in capsys.readouterr().err
    assert not (tmp_path / "rows.foo").exists()


def test_compile_offers_no_threads(space, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["compile", "--help"])
    assert "--threads" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["compile", space, "--threads", "2", "-o", str(tmp_path / "out")])
    assert exc.value.code == 2


# -- exit codes (README.md, "The command line")

@pytest.mark.parametrize("raised, status", [
    (BeastError("a user's mistake"), 2), (RuntimeError("a bug"), 3),
    (KeyboardInterrupt(), 130), (Terminated(), 143)])
def test_exit_codes(monkeypatch, capsys, raised, status):
    def cmd(args):
        raise raised
    monkeypatch.setattr(cli, "cmd_devices", cmd)
    monkeypatch.delenv("BEAST_DEBUG", raising=False)
    assert cli.main(["devices"]) == status
    err = capsys.readouterr().err
    assert ("internal error" in err) == (status == 3)


def test_usage_error_is_2_and_the_codes_are_documented(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["count"])
    assert exc.value.code == 2
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    section = readme.split("## The command line", 1)[1].split("\n## ", 1)[0]
    for code in ("0", "2", "3", "130", "143"):
        assert re.search(rf"`{code}`", section), code
    assert "devices --dump" in section


# -- the JSON device profile

def test_dump_round_trips_every_profile(tmp_path, capsys):
    for name in profile_names():
        assert cli.main(["devices", "--dump", name]) == 0
        text = capsys.readouterr().out
        assert "name" not in json.loads(text)
        path = tmp_path / f"my_{name}.json"
        path.write_text(text)
        assert load_profile_json(path) == get_profile(name).replace(name=f"my_{name}")


def test_dumped_profile_prunes_as_the_built_in_one(space, tmp_path, capsys):
    assert cli.main(["devices", "--dump", "h100"]) == 0
    path = tmp_path / "mine.json"
    path.write_text(capsys.readouterr().out)
    counts = []
    for device in ("h100", str(path)):
        assert cli.main(["count", space, "--device", device, "--backend", "python", "--json"]) == 0
        counts.append(json.loads(capsys.readouterr().out)["survivors"])
    assert counts[0] == counts[1] == 64 + 32 + 16            # h100: max_threads_dim_z 64 too


def test_dump_of_an_unknown_device_is_a_user_error(capsys):
    assert cli.main(["devices", "--dump", "k41"]) == 2
    assert "unknown device" in capsys.readouterr().err


# -- the README's strategy="beast" example runs as written

def test_readme_kernel_tuner_strategy_example_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("kernel_tuner")
    pytest.importorskip("sklearn")
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        blocks = [b for b in re.findall(r"```python\n(.*?)```", fh.read(), re.S) if 'strategy="beast"' in b]
    assert len(blocks) == 1
    for folder in ("tests", "spaces"):                # "from the repository root", in a scratch folder
        os.symlink(os.path.join(ROOT, folder), tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    results, env = namespace["results"], namespace["env"]
    assert len(results) == 50
    best = env["best_config"]
    assert best in results
    assert best["time"] == min(r["time"] for r in results if isinstance(r["time"], float))
    assert set(best) >= {"between_method", "block_size_x", "tile_size", "use_method"}


def test_beast_cache_shows_where_and_what_and_clears(tmp_path, monkeypatch, capsys):
    import json as _json
    import beast.cli as cli
    root = tmp_path / "cache"
    monkeypatch.setenv("BEAST_CACHE_DIR", str(root))
    assert cli.main(["cache", "--json"]) == 0                 # no cache yet: empty, nothing created
    got = _json.loads(capsys.readouterr().out)
    assert got["path"] == str(root) and got["entries"] == [] and not root.exists()
    (root / "c").mkdir(parents=True)
    (root / "c" / "x.so").write_bytes(b"\0" * 3000)
    (root / "sample").mkdir()
    (root / "sample" / "t.npz").write_bytes(b"\0" * 10)
    assert cli.main(["cache"]) == 0
    text = capsys.readouterr().out
    assert str(root) in text and "BEAST_CACHE_DIR" in text
    assert "c                     1 file    2.9 KiB  C enumerators" in text
    assert "total                 2 files" in text
    assert cli.main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out.startswith(f"cleared {root}: 2.9 KiB freed")
    assert root.is_dir() and list(root.iterdir()) == []       # the folder stays, its entries go


def test_shell_completion_through_argcomplete(tmp_path):
    pytest.importorskip("argcomplete")     # the test extra brings it
    import subprocess
    import sys as _sys

    def complete(line):
        out = tmp_path / "completions"
        script = os.path.join(os.path.dirname(_sys.executable), "beast")   # the console script
        env = dict(os.environ, _ARGCOMPLETE="1", _ARGCOMPLETE_IFS="\n", COMP_LINE=line,
                   COMP_POINT=str(len(line)), OUT=str(out), SCRIPT=script)
        proc = subprocess.run(["bash", "-c", '"$SCRIPT" 8>"$OUT" 9>/dev/null'], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return [word.strip() for word in out.read_text().split("\n")]

    assert complete("beast cou") == ["count"]
    assert "--device" in complete("beast count spaces/gemm.py --dev")
    assert {"--clear", "--json"} <= set(complete("beast cache --"))
