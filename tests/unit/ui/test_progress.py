"""Progress bars, ``beast stats --plot`` and ``beast dag --format png`` (Ctrl-C: tests/behaviour/test_interrupts.py)."""
from __future__ import annotations

import io
import os
import sys

import pytest

import beast
from beast.ui.graphviz import dot_program
from beast.ui.progress import Progress, loop_fraction
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
    from beast.ui.plots import plot_stats
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
    from beast.ui.plots import plot_stats
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
    from beast.ui import plots
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
    monkeypatch.setattr("beast.ui.progress.Progress.update", _recording_update)
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
    monkeypatch.setattr("beast.ui.progress.Progress.update", update)
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


def _slow_work(drawn=None):
    """Work that lasts until ``drawn()`` says the watcher drew (2 s at most), else 0.08 s."""
    import time
    end = time.monotonic() + (2.0 if drawn else 0.08)
    while time.monotonic() < end and not (drawn and drawn()):
        time.sleep(0.005)


def test_busy_line_appears_after_the_threshold_and_is_cleared():
    from beast.ui.progress import Busy
    tty = _Tty()
    with Busy("count", stream=tty, after=0.01, every=0.01) as busy:
        _slow_work(tty.getvalue)
    text = tty.getvalue()
    assert busy.drawn and text.startswith("\rcount: 0:00 elapsed\x1b[K") and text.endswith("\r\x1b[K")
    assert text.count("elapsed") == 1               # the same text is not redrawn


def test_busy_draws_nothing_for_quick_work_off_a_terminal_or_quiet():
    from beast.ui.progress import Busy
    tty = _Tty()
    with Busy("count", stream=tty, after=30) as quick:
        pass
    assert tty.getvalue() == "" and not quick.drawn
    for stream, quiet in ((io.StringIO(), False), (_Tty(), True)):
        with Busy("stats", stream=stream, quiet=quiet, after=0, every=0.01) as busy:
            _slow_work()
        assert stream.getvalue() == "" and busy._thread is None


def test_busy_shows_the_fraction_once_it_is_known(monkeypatch):
    from beast.ui.progress import Busy
    monkeypatch.setitem(sys.modules, "tqdm", None)        # the built-in line
    tty = _Tty()
    with Busy("replay", unit="evaluations", stream=tty, after=0.01, every=0.01) as busy:
        busy.update(30, 40)
        _slow_work(tty.getvalue)
    text = tty.getvalue()
    assert "replay:  75.0%" in text and "30 evaluations" in text and "elapsed" in text
    assert text.endswith("\r\x1b[K")


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_busy_clears_its_line_on_an_error_and_lets_it_through(error):
    from beast.ui.progress import Busy
    tty = _Tty()
    with pytest.raises(error):
        with Busy("sample", stream=tty, after=0.01, every=0.01) as busy:
            _slow_work(tty.getvalue)
            raise error()
    assert busy.drawn and tty.getvalue().endswith("\r\x1b[K") and busy._thread is None


def _slowed(monkeypatch, cls, name, quiet):
    """Make ``cls.name`` wait, before its work, until the watcher drew on the fake terminal
    (0.08 s, past the threshold, when ``quiet[0]``: no line is expected)."""
    real = getattr(cls, name)

    def slow(*a, **kw):
        _slow_work(None if quiet[0] else sys.stderr.getvalue)
        return real(*a, **kw)
    monkeypatch.setattr(cls, name, slow)


@pytest.mark.parametrize("command, method, extra", [
    ("count", "count", []), ("stats", "stats", []), ("enumerate", "sample", ["--sample", "5", "-o", "-"])])
def test_count_stats_sample_show_elapsed_on_a_terminal_not_with_quiet(monkeypatch, capsys, command, method, extra):
    from beast import cli
    from beast.ui import progress
    from beast.space import Space
    monkeypatch.setattr(progress, "AFTER", 0.01)
    now_quiet = [False]
    _slowed(monkeypatch, Space, method, now_quiet)
    args = [command, os.path.join(SPACES, "features.py"), "--backend", "python", *extra]
    outs = []
    for quiet in ([], ["-q"]):
        now_quiet[0] = bool(quiet)
        tty = _Tty()
        monkeypatch.setattr(sys, "stderr", tty)
        assert cli.main(args + quiet + (["--seed", "1"] if extra else [])) == 0
        outs.append(capsys.readouterr().out)
        desc = "sample" if extra else command
        if quiet:
            assert tty.getvalue() == ""
        else:
            assert tty.getvalue().startswith(f"\r{desc}: 0:00 elapsed") and tty.getvalue().endswith("\r\x1b[K")
    assert outs[0] == outs[1] and outs[0]


def test_replay_reports_repeats_times_budget_to_its_bar(monkeypatch, capsys, tmp_path):
    from beast import cli
    from beast.ui.progress import Busy
    from unit.search.test_replay import AB, _data_file, _space_file
    data = _data_file(tmp_path, AB)
    space = _space_file(tmp_path, "a = range(1, 5)\nb = range(1, 4)\ntoo_big = condition(a + b > 5)\n")
    seen = []
    monkeypatch.setattr(Busy, "update", lambda self, done, total=None: seen.append((done, total)))
    args = ["replay", space, "--data", data, "--strategy", "random", "--budget", "4", "--repeats", "3",
            "--batch", "2"]
    assert cli.main(args) == 0
    assert seen == [(0, 12), (2, 12), (4, 12), (6, 12), (8, 12), (10, 12), (12, 12)]
    out = capsys.readouterr().out
    assert cli.main(args + ["-q"]) == 0 and capsys.readouterr().out == out
