"""The small things a user of the command line expects (issue 39): the tuning install brings what
the default strategy needs, outputs refuse what they cannot write and take devices as plain
outputs, ``compile`` offers no option that does nothing, the exit codes are the documented ones,
and ``beast devices --dump`` prints a profile that ``--device FILE.json`` reads back."""
from __future__ import annotations

import json
import os
import re
import sys

import pytest

from beast import cli
from beast.lang.devices import get_profile, load_profile_json, profile_names
from beast.errors import BeastError, Terminated
from conftest import ROOT

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
