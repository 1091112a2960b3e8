"""Ctrl-C (SIGINT) and SIGTERM reach every long run of the ``beast`` command: real child processes
running ``count``, ``enumerate``, ``--sample`` and ``stats`` in every backend (C with one thread and
two), on dense spaces and on spaces whose survivors are rare (a loop of 10**12 values that keeps
one in a million), are sent the signal while they work. Each must stop promptly with status 130
(SIGINT) or 143 (SIGTERM), one line on stderr, and nothing left in its folder: no output file, no
temporary file.

The trials run a few at a time (the machine has two cores); ``LATENCY`` is the most a process may
take from the signal to its exit here (measured: well under 0.2 s on an idle machine; the bound
leaves room for a loaded CI machine)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, backend_available, have_cc, write_space

LATENCY = 2.0
#: CPU seconds a child has used before it is signalled: past its start, in its loops
BUSY_CPU = 0.6
BATCH = 3

SPACES = {
    "sparse": "from beast import *\na = range(10**12)\nc = condition(a % 1000003 != 3)\n",
    "square": "from beast import *\na = range(10**6)\nb = range(10**6)\nc = condition((a * b) % 1000003 != 3)\n",
    "dense": "from beast import *\na = range(10**9)\nb = range(10)\n",
    # a user function whose own loop runs long (translated to C and Lua, or run in Python)
    "body": ("from beast import *\na = range(3)\nb = range(1000)\n\n@condition\ndef slow(a, b):\n"
             "    n = 0\n    while n < 10**12 + a + b:\n        n += 1\n    return n < 0\n"),
}
INT, TERM = signal.SIGINT, signal.SIGTERM

# (backend, threads, command, space, signal)
TRIALS = [
    ("python", None, "count", "sparse", INT), ("python", None, "enumerate", "dense", TERM),
    ("python", None, "sample", "sparse", INT), ("python", None, "stats", "square", TERM),
    ("c", 1, "count", "sparse", TERM), ("c", 1, "enumerate", "sparse", INT),
    ("c", 1, "sample", "sparse", TERM), ("c", 1, "stats", "square", INT),
    ("c", 2, "count", "square", INT), ("c", 2, "enumerate", "dense", TERM),
    ("c", 2, "stats", "sparse", TERM),
    ("lua", None, "count", "sparse", INT), ("lua", None, "enumerate", "sparse", TERM),
    ("lua", None, "sample", "square", INT), ("lua", None, "stats", "sparse", TERM),
    ("lua", None, "enumerate", "dense", INT),
    ("auto", None, "count", "sparse", TERM),
    ("c", 1, "count", "body", INT), ("lua", None, "count", "body", TERM),
]


def _argv(backend, threads, command, space):
    args = [sys.executable, "-m", "beast"]
    if command == "sample":
        args += ["enumerate", space, "--sample", "5", "-o", "rows.csv"]
    elif command == "enumerate":
        args += ["enumerate", space, "-o", "rows.csv"]
    else:
        args += [command, space]
    args += ["--backend", backend]
    if threads is not None:
        args += ["--threads", str(threads)]
    return args


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _default_signals():
    """In the child: SIGINT and SIGTERM as a terminal's foreground command gets them.  A suite
    started in the background by a shell without job control (``(python -m pytest &)`` in a
    script) inherits SIGINT ignored, and Python then never turns it into KeyboardInterrupt:
    every SIGINT trial would run on to its 30 s timeout."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_batch(batch, tmp_path, first):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("BEAST_DEBUG", None)
    procs = []
    for i, (backend, threads, command, space, sig) in enumerate(batch):
        folder = tmp_path / f"t{first + i}-{backend}-{command}"
        folder.mkdir()
        path = write_space(folder, SPACES[space])
        proc = subprocess.Popen(_argv(backend, threads, command, path), cwd=folder, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_default_signals)
        procs.append((proc, folder, sig))
    results = []
    try:
        deadline = time.monotonic() + 120
        for proc, folder, sig in procs:
            while _cpu_seconds(proc.pid) < BUSY_CPU and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            running = proc.poll() is None
            proc.send_signal(sig)
            sent = time.monotonic()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            results.append((running, time.monotonic() - sent, proc.returncode))
    finally:                    # a failing test must not leave 10**12-row runs behind
        for proc, _, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [(proc.stderr.read(), folder, sig, *r) for (proc, folder, sig), r in zip(procs, results)]


def _available(backend):
    if backend in ("c", "auto"):
        return have_cc()
    return backend == "python" or backend_available(backend)


def test_signals_stop_every_command_in_every_backend(tmp_path):
    trials = [t for t in TRIALS if _available(t[0])]
    if not trials:
        pytest.skip("no backend")
    failures = []
    for lo in range(0, len(trials), BATCH):
        batch = trials[lo:lo + BATCH]
        for trial, (stderr, folder, sig, running, latency, rc) in zip(batch, _run_batch(batch, tmp_path, lo)):
            want_rc, line = (130, "beast: interrupted") if sig == INT else (143, "beast: terminated")
            left = sorted(p.name for p in folder.iterdir())
            if not running or rc != want_rc or stderr.strip() != line or latency > LATENCY or left != ["space.py"]:
                failures.append(f"{trial}: running={running} rc={rc} after {latency:.2f} s, "
                                f"stderr={stderr.strip()[-300:]!r}, left={left}")
    assert not failures, "\n".join(failures)


def test_an_interrupted_tune_prints_its_table_and_exits_130_or_143(monkeypatch, capsys):
    """The runner catches Ctrl-C to keep the log whole and print the table; the command then
    exits as the others do (a fake tune: no GPU needed)."""
    import beast.tune as tune_pkg
    from beast import cli
    from beast.errors import Terminated
    from beast.tune.driver.local import TuneReport

    for exc, code, line in ((KeyboardInterrupt(), 130, "beast: interrupted"), (Terminated(), 143, "beast: terminated")):
        def fake_tune(space, size, **kw):
            return TuneReport(iterators=("a",), settings={}, size=size, device_profile="x", device_name="Fake",
                              strategy="random", budget=3, interrupted=True, interruption=exc)
        monkeypatch.setattr(tune_pkg, "tune", fake_tune)
        assert cli.main(["tune", os.path.join(ROOT, "spaces", "fig03_primes.py"), "--size", "8", "8", "8",
                         "--quiet"]) == code
        out, err = capsys.readouterr()
        assert "interrupted: run the same command again" in out and err.strip().endswith(line)
