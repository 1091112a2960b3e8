"""Progress bars, ``beast stats --plot`` and ``beast dag --format png`` (Ctrl-C: tests/test_interrupts.py)."""
from __future__ import annotations

import io
import os
import sys

import pytest

import beast
from beast.graphviz import dot_program
from beast.progress import Progress, loop_fraction
from conftest import ROOT, run_beast

SPACES = os.path.join(ROOT, "spaces")


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_plain_progress_line_has_rate_and_eta(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)        # the built-in line, not tqdm
    out = _Tty()
    bar = Progress("enumerate", stream=out)
    bar.start -= 10.0                                    # ten seconds in
    bar.update(0.25, 1000)
    text = out.getvalue()
    assert "25.0%" in text and "1,000 rows" in text and "rows/s" in text
    assert "ETA 0:30" in text                            # 10 s for a quarter: 30 s to go
    bar.close()


def test_progress_is_silent_off_a_terminal_or_quiet():
    for stream, quiet in ((io.StringIO(), False), (_Tty(), True)):
        with Progress("enumerate", stream=stream, quiet=quiet) as bar:
            bar.update(0.5, 10)
        assert stream.getvalue() == ""


def test_fraction_from_the_outer_loops(space_file):
    space = beast.load(space_file("from beast import *\na = range(10)\nb = range(4)\n"))
    fraction = loop_fraction(space.program)
    chunk = space.enumerate(backend="python")
    assert fraction(chunk[:1]) == 0.0
    assert fraction(chunk[: 5 * 4 + 2 + 1]) == pytest.approx(0.5 + 2 / 40)


def test_enumerate_quiet_and_piped_writes_no_progress(tmp_path):
    out = tmp_path / "rows.csv"
    proc = run_beast("enumerate", os.path.join(SPACES, "features.py"), "-o", out, "--backend", "python")
    assert proc.returncode == 0 and proc.stderr == ""
    assert out.read_text().count("\n") == 77


def test_stats_plot_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib comes with the test extra")
    from beast.plots import plot_stats
    png = tmp_path / "stats.png"
    proc = run_beast("stats", os.path.join(SPACES, "features.py"), "--backend", "python", "--plot", png)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes().startswith(b"\x89PNG") and f"plot: {png}" in proc.stdout
    stats = beast.load(os.path.join(SPACES, "fig03_primes.py")).stats(backend="python")
    svg = plot_stats(stats, str(tmp_path / "stats.svg"))
    assert b"<svg" in open(svg, "rb").read(2000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats.png", "stats.svg"]
    bad = run_beast("stats", os.path.join(SPACES, "features.py"), "--plot", tmp_path / "stats.pdf")
    assert bad.returncode == 2 and "png or .svg" in bad.stderr


@pytest.mark.parametrize("name, shown", [("cost$^$", "cost$^$"), ("a$x$b", "a$x$b"),
                                         (os.fsdecode(b"bad\xff"), "bad\\xff")])
def test_stats_plot_shows_an_odd_file_name_literally(name, shown, tmp_path):
    """A file name is no mathtext, and its byte that is not UTF-8 shows as \\xff: the command draws
    the picture, and the title (text in an SVG drawn with svg.fonttype none) is the name as it is."""
    matplotlib = pytest.importorskip("matplotlib", reason="matplotlib comes with the test extra")
    from beast.plots import plot_stats
    path = os.path.join(str(tmp_path), name + ".py")
    with open(path, "w") as fh:
        fh.write("from beast import *\na = range(3)\nb = range(a, 4)\n")
    png = tmp_path / "stats.png"
    # (the summary names the space on stdout: written so that any locale's stdout takes it)
    proc = run_beast("stats", path, "--backend", "python", "--plot", png,
                     env={"PYTHONIOENCODING": "utf-8:backslashreplace"})
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes().startswith(b"\x89PNG")
    stats = beast.load(path).stats(backend="python")
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        svg = open(plot_stats(stats, str(tmp_path / "stats.svg")), encoding="utf-8").read()
    assert f">beast stats: {shown} (9 survivors)</text>" in svg       # drawn as it is, not as mathtext


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch, tmp_path):
    from beast import plots
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    stats = beast.load(os.path.join(SPACES, "fig03_primes.py")).stats(backend="python")
    with pytest.raises(beast.BeastError) as info:
        plots.plot_stats(stats, str(tmp_path / "x.png"))
    assert "matplotlib" in str(info.value) and "beast-autotune[plot]" in str(info.value)


def test_dag_without_dot_says_how_to_get_it(tmp_path):
    proc = run_beast("dag", os.path.join(SPACES, "features.py"), "--format", "png", "-o", tmp_path / "d.png",
                     env={"BEAST_DOT": "no-such-dot-program"})
    assert proc.returncode == 2
    assert "Graphviz" in proc.stderr and "apt-get install graphviz" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "d.png").exists()


@pytest.mark.skipif(dot_program() is None, reason="Graphviz's dot is not installed (apt-get install graphviz)")
@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_dag_drawn_by_graphviz(tmp_path, fmt):
    path = tmp_path / f"dag.{fmt}"
    proc = run_beast("dag", os.path.join(SPACES, "features.py"), "--format", fmt, "-o", path)
    assert proc.returncode == 0, proc.stderr
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") if fmt == "png" else b"<svg" in data


def test_tune_progress_hook_draws_a_bar_on_a_terminal_only(monkeypatch, capsys):
    """`beast tune` hands its progress callback to the bar (a fake tune, no GPU needed)."""
    import beast.tune as tune_pkg
    from beast import cli
    calls = []

    def fake_tune(space, size, budget, strategy, log_path, seed, progress, time_limit=None):
        for done in range(1, 4):
            progress(done, 3, None)
        calls.append(size)
        return "report"

    monkeypatch.setitem(sys.modules, "tqdm", None)        # the built-in line, whether tqdm is here or not
    monkeypatch.setattr(tune_pkg, "tune", fake_tune)
    monkeypatch.setattr(tune_pkg, "format_report", lambda report, top: f"{report} top={top}")
    monkeypatch.setattr("beast.progress.Progress.update", _recording_update)
    _recording_update.seen = []
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert cli.main(["tune", os.path.join(SPACES, "features.py"), "--size", "8", "8", "8"]) == 0
    assert calls == [(8, 8, 8)] and _recording_update.seen == [(1 / 3, 1), (2 / 3, 2), (1.0, 3)]
    _recording_update.seen = []
    assert cli.main(["tune", os.path.join(SPACES, "features.py"), "--size", "8", "8", "8", "--quiet"]) == 0
    assert _recording_update.seen == [] and tty.getvalue() == ""
    assert capsys.readouterr().out.count("report top=10") == 2


def _recording_update(self, fraction=None, items=None):
    _recording_update.seen.append((fraction, items))


def test_enumerate_progress_is_the_share_of_rows_once_counted_and_ends_at_100(monkeypatch, tmp_path):
    """Rows per outer value grow as a**2 here, so the outer loop's position alone would say 50 %
    with an eighth of the rows written; the bar takes the share of the survivors once a count
    on its own thread has them, and ends at 100 %."""
    import types
    from beast import cli
    from conftest import write_space
    space = beast.load(write_space(tmp_path, "from beast import *\na = range(1, 120)\nb = range(a * a * 4)\n"))
    total = space.count(backend="python")
    seen = []

    def update(self, fraction=None, items=None, exact=False, force=False):
        seen.append((fraction, items, exact))
    monkeypatch.setattr("beast.progress.Progress.update", update)
    monkeypatch.setattr(sys, "stderr", _Tty())
    args = types.SimpleNamespace(quiet=False, backend="python", threads=None)
    wrap = cli._progress_chunks(space, args)
    rows = 0
    for chunk in wrap(space.iterate(chunk_size=2000, backend="python")):
        rows += len(chunk)
    assert rows == total and seen[-1] == (1.0, total, True)
    exact = [(f, n) for f, n, e in seen[:-1] if e]
    assert exact, "the count never arrived"
    assert all(f == pytest.approx(n / total) for f, n in exact)
