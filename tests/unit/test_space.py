"""The Python API's arguments: the same check whichever backend runs (an error must not depend on
the space's size, through what ``auto`` picks), a clear BeastError naming the argument, and
what a user naturally passes accepted (a row of ``enumerate()``, numpy integers, bytes paths)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import beast
from beast.errors import BeastError
from conftest import ROOT, available_backends

FIG01 = os.path.join(ROOT, "spaces", "fig01_iterators.py")


@pytest.fixture(scope="module")
def fig01():
    return beast.load(FIG01)


@pytest.mark.parametrize("backend", available_backends())
def test_threads_are_checked_in_every_backend(fig01, backend):
    for bad, says in ((0, "from 1 to 4096, not 0"), (5000, "from 1 to 4096"), (1.5, "an integer, not 1.5"),
                      (True, "an integer, not True"), ("2", "an integer, not '2'")):
        for call in (lambda: fig01.count(backend=backend, threads=bad),
                     lambda: list(fig01.iterate(backend=backend, threads=bad)),
                     lambda: fig01.sample(3, seed=1, backend=backend, threads=bad)):
            with pytest.raises(BeastError, match=f"threads must be {says}"):
                call()
    assert fig01.count(backend=backend, threads=np.int64(2)) == fig01.count(backend=backend)


@pytest.mark.parametrize("backend", available_backends())
def test_chunk_size_is_checked_and_a_huge_one_is_not_allocated(fig01, backend):
    """C allocated chunk_size rows up front (2**40: 16 TiB, MemoryError), Lua too; a float ran as
    chunks of 2 in Python, 1 in Lua and failed in C."""
    rows = fig01.enumerate(backend="python")
    for size in (2 ** 40, 10 ** 20, np.int64(7)):
        got = np.concatenate(list(fig01.iterate(size, backend=backend)))
        assert got.tolist() == rows.tolist()
    for bad, says in ((0, "at least 1, not 0"), (1.5, "an integer, not 1.5"), (None, "an integer, not None")):
        with pytest.raises(BeastError, match=f"chunk_size must be {says}"):
            list(fig01.iterate(bad, backend=backend))


def test_contains_takes_a_row_of_enumerate_and_says_what_a_configuration_is(fig01):
    rows = fig01.enumerate()
    assert rows[0] in fig01 and fig01.contains(rows).all()
    for bad in ((1, 2), None, 5, "r", [{"r": 0, "fibonacci": 1}, 3]):
        with pytest.raises(BeastError, match="a configuration is a mapping of iterator names to values"):
            fig01.contains(bad)


def test_dag_formats_and_load_arguments(fig01):
    with pytest.raises(BeastError, match="unknown DAG format 'svg'"):
        fig01.dag("svg")
    assert fig01.dag("json").lstrip().startswith("{")
    for settings in ("N=3", 5, {3: 3}):
        with pytest.raises(BeastError, match="settings are a mapping of setting names to values"):
            beast.load(FIG01, settings=settings)
    for path in (None, 3):
        with pytest.raises(BeastError, match="the space file is a path"):
            beast.load(path)
    assert beast.load(os.fsencode(FIG01)).count() == fig01.count()


def test_a_space_imports_a_module_beside_it_from_any_folder(tmp_path, monkeypatch):
    """`import helper` beside the space file works as it does for `python space.py` (it depended on
    the current folder), and sys.path is left as it was."""
    import sys
    from conftest import run_beast, write_space
    folder = tmp_path / "spaces"
    folder.mkdir()
    (folder / "beast_test_helper_mod.py").write_text("N = 4\n")
    path = write_space(folder, "from beast import *\nimport beast_test_helper_mod as h\na = range(h.N)\n")
    before = list(sys.path)
    monkeypatch.chdir(tmp_path)
    try:
        assert beast.load(path).count(backend="python") == 4 and sys.path == before
    finally:
        sys.modules.pop("beast_test_helper_mod", None)
    proc = run_beast("count", path, cwd=str(tmp_path))
    assert proc.returncode == 0 and proc.stdout == "4\n", proc.stderr


def test_a_bool_seed_is_refused(fig01):
    with pytest.raises(BeastError, match="invalid seed True"):
        fig01.sample(2, seed=True)
