"""What the ``beast`` command writes (beast/ui/output.py and the commands that use it): a regular file
replaced whole with the umask's mode, a link's target written and the link kept, a device or FIFO
written in place and never replaced, a folder or socket refused; nothing half-written, no
temporary file left; and the small command-line fixes around outputs."""
from __future__ import annotations

import os
import socket
import stat
import threading

import numpy as np
import pytest

import beast
from beast.errors import BeastError
from beast.ui.output import open_output, write_output
from conftest import ROOT, run_beast, write_space

SPACE = "from beast import *\na = range(3)\nb = range(2)\n"
CSV = "a,b\n0,0\n0,1\n1,0\n1,1\n2,0\n2,1\n"


@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_new_file_gets_the_umask_mode_and_a_replaced_one_keeps_its_own(tmp_path, umask022):
    out = tmp_path / "x.csv"
    write_output(out, lambda fh: fh.write(b"one\n"))
    assert out.read_bytes() == b"one\n" and stat.S_IMODE(out.stat().st_mode) == 0o644
    out.chmod(0o640)
    write_output(out, lambda fh: fh.write(b"two\n"))
    assert out.read_bytes() == b"two\n" and stat.S_IMODE(out.stat().st_mode) == 0o640
    os.umask(0o077)
    write_output(tmp_path / "y.csv", lambda fh: fh.write(b"y"))
    assert stat.S_IMODE((tmp_path / "y.csv").stat().st_mode) == 0o600
    assert listing(tmp_path) == ["x.csv", "y.csv"]


def test_an_error_or_an_interrupt_leaves_the_old_file_and_nothing_else(tmp_path):
    out = tmp_path / "x.csv"
    out.write_bytes(b"old\n")
    for exc in (BeastError("the enumeration failed"), KeyboardInterrupt()):
        def write(fh, exc=exc):
            fh.write(b"partial")
            raise exc
        with pytest.raises(type(exc)):
            write_output(out, write)
        assert out.read_bytes() == b"old\n" and listing(tmp_path) == ["x.csv"]


def test_a_link_writes_its_target_and_stays_a_link(tmp_path):
    target, link, dangling = tmp_path / "target.csv", tmp_path / "l.csv", tmp_path / "d.csv"
    target.write_bytes(b"old")
    link.symlink_to("target.csv")
    dangling.symlink_to("new.csv")
    write_output(link, lambda fh: fh.write(b"new"))
    write_output(dangling, lambda fh: fh.write(b"created"))
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert dangling.is_symlink() and (tmp_path / "new.csv").read_bytes() == b"created"


def test_a_fifo_and_a_device_are_written_in_place(tmp_path):
    fifo = tmp_path / "f.csv"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    write_output(fifo, lambda fh: fh.write(b"through the pipe"))
    reader.join(10)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(fifo.stat().st_mode)
    write_output("/dev/null", lambda fh: fh.write(b"gone"))
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    if os.path.exists("/dev/full"):
        with pytest.raises(BeastError, match="cannot write /dev/full: No space left on device"):
            write_output("/dev/full", lambda fh: fh.write(b"x" * 65536))
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert listing(tmp_path) == ["f.csv"]


def test_a_folder_and_a_socket_are_refused(tmp_path):
    with pytest.raises(BeastError, match="it is a folder"):
        write_output(tmp_path, lambda fh: fh.write(b""))
    sock_path = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(BeastError, match="it is a socket"):
            with open_output(sock_path) as fh:
                fh.write(b"")
        assert stat.S_ISSOCK(sock_path.stat().st_mode)


def test_enumerate_to_special_files_and_links(tmp_path):
    path = write_space(tmp_path, SPACE)
    (tmp_path / "t.csv").write_text("old")
    os.symlink("t.csv", tmp_path / "l.csv")
    proc = run_beast("enumerate", path, "-o", tmp_path / "l.csv", "--backend", "python")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "t.csv").read_text() == CSV and (tmp_path / "l.csv").is_symlink()
    proc = run_beast("enumerate", path, "-o", "/dev/null", "--format", "csv")
    assert proc.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    proc = run_beast("enumerate", path, "-o", tmp_path / "nowhere" / "x.csv")
    assert proc.returncode == 2 and "cannot write" in proc.stderr and "no folder" in proc.stderr
    assert listing(tmp_path) == ["l.csv", "space.py", "t.csv"]


def test_stdout_gets_no_header_before_an_error(tmp_path):
    path = write_space(tmp_path, "from beast import *\na = range(-2, 3)\nb = iterator(10 // a)\n")
    proc = run_beast("enumerate", path, "-o", "-", "--backend", "python")
    assert proc.returncode == 2 and "division by zero in iterator 'b'" in proc.stderr
    assert proc.stdout == ""          # not even the header: the first chunk failed


def test_a_space_without_iterators_enumerates_its_one_configuration(tmp_path):
    path = write_space(tmp_path, "from beast import *\nn = 4\nc = condition(n > 5)\n")
    for fmt, want in (("csv", "\n\n"), ("jsonl", "{}\n")):
        proc = run_beast("enumerate", path, "-o", "-", "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == want
    assert run_beast("count", path).stdout.strip() == "1"
    npy = tmp_path / "x.npy"
    assert run_beast("enumerate", path, "-o", npy).returncode == 0 and len(np.load(npy)) == 1


def test_dag_writes_every_format_to_a_file(tmp_path):
    path = os.path.join(ROOT, "spaces", "fig03_primes.py")
    for fmt in ("text", "dot", "json"):
        out = tmp_path / f"dag.{fmt}"
        proc = run_beast("dag", path, "--format", fmt, "-o", out)
        assert proc.returncode == 0 and proc.stdout.strip() == str(out), proc.stderr
        assert out.read_text().strip() == run_beast("dag", path, "--format", fmt).stdout.strip()
    proc = run_beast("dag", path, "--format", "png", "-o", tmp_path / "missing" / "d.png")
    assert proc.returncode == 2 and "there is no folder" in proc.stderr and "Traceback" not in proc.stderr


def test_stats_plot_into_a_missing_or_read_only_folder_is_an_error(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib comes with the test extra")
    path = os.path.join(ROOT, "spaces", "fig03_primes.py")
    proc = run_beast("stats", path, "--plot", tmp_path / "missing" / "s.png")
    assert proc.returncode == 2 and "there is no folder" in proc.stderr
    if os.geteuid() != 0:                         # (root writes a read-only folder anyway)
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        proc = run_beast("stats", path, "--plot", ro / "s.png")
        assert proc.returncode == 2 and "not writable" in proc.stderr


def test_sampling_a_tabulated_condition_in_every_backend(tmp_path):
    path = write_space(tmp_path, """
        from beast import *
        a = range(1, 5)

        @condition
        def odd(a):
            return round(a / 2) == 1
        """)
    space = beast.load(path)
    every = space.enumerate(backend="python")
    for backend in ("python", "c", "lua", "auto"):
        got = space.sample(3, seed=2, backend=backend)
        assert sorted(got.tolist()) == sorted(every.tolist())
        proc = run_beast("enumerate", path, "--sample", 2, "--backend", backend, "-o", "-")
        assert proc.returncode == 0, proc.stderr


def test_compile_auto_writes_what_auto_runs(tmp_path):
    small = write_space(tmp_path, SPACE)
    proc = run_beast("compile", small, "--backend", "auto", "-o", tmp_path / "a")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("space_enumerator.py")
    gemm = os.path.join(ROOT, "spaces", "gemm.py")
    proc = run_beast("compile", gemm, "--backend", "auto", "-o", tmp_path / "g")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("gemm_enumerator.c")
    text = (tmp_path / "g" / "gemm_enumerator.c").read_text()
    assert text.count("BN_K_OVERFLOW = 1") == 1           # the enum once, not in a comment too


def test_auto_says_why_it_does_not_run_c(tmp_path, monkeypatch):
    from beast.runtime import auto
    from beast.runtime.c import enumerator as c_backend

    def refuse(program):
        raise BeastError("the C backend cannot compile a choice between str and str values")
    monkeypatch.setattr(c_backend, "prepare", refuse)
    monkeypatch.setattr(auto, "estimate_work", lambda program: 1e12)
    space = beast.load(os.path.join(ROOT, "spaces", "fig03_primes.py"))
    backend, reason, _ = auto.choose(space.program)
    assert backend != "c" and "no C compiler" not in reason and "choice between str" in reason


def _beast_argv(*args):
    import sys
    env = dict(os.environ)
    env.pop("BEAST_DEBUG", None)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return [sys.executable, "-m", "beast", *map(str, args)], env


def test_own_open_files_by_name_are_written_through_their_descriptor(tmp_path):
    """/dev/stdout, /dev/fd/N and /proc/self/fd/N are the files the process has open: a redirect
    with >> keeps what was there (opening the name again truncated it; following the link
    replaced it), a pipe gets the rows (following the link gave 'No such file'), and a
    descriptor that is not open is an error."""
    import subprocess
    path = write_space(tmp_path, SPACE)
    log = tmp_path / "app.log"
    log.write_text("hello\n")
    argv, env = _beast_argv("enumerate", path, "-o", "/dev/stdout", "--format", "csv", "-q")
    with open(log, "ab") as out:
        proc = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text() == "hello\n" + CSV and not log.is_symlink()
    for name in ("/dev/stdout", "/proc/self/fd/1"):
        argv, env = _beast_argv("enumerate", path, "-o", name, "--format", "jsonl", "-q")
        proc = subprocess.run(argv, env=env, capture_output=True, timeout=120)
        assert proc.returncode == 0 and proc.stdout.decode().count("\n") == 6, proc.stderr
    r, w = os.pipe()
    try:
        argv, env = _beast_argv("enumerate", path, "-o", f"/dev/fd/{w}", "--format", "csv", "-q")
        proc = subprocess.run(argv, env=env, capture_output=True, pass_fds=(w,), timeout=120)
        os.close(w)
        w = -1
        with os.fdopen(r, "rb") as fh:
            r = -1
            assert proc.returncode == 0 and fh.read().decode() == CSV, proc.stderr
    finally:
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)
    proc = run_beast("enumerate", path, "-o", "/dev/fd/97", "--format", "csv")
    assert proc.returncode == 2 and "cannot write /dev/fd/97: it is not open" in proc.stderr
    assert listing(tmp_path) == ["app.log", "space.py"]


def test_standard_output_that_cannot_be_written_is_the_users_error(tmp_path):
    """A full disk or a closed stdout: 'cannot write standard output', status 2, for printed
    results and -o - alike (not an internal error)."""
    import subprocess
    path = write_space(tmp_path, SPACE)
    if os.path.exists("/dev/full"):
        for args in (("count", path), ("enumerate", path, "-o", "-", "-q"), ("dag", path)):
            argv, env = _beast_argv(*args)
            with open("/dev/full", "wb") as full:
                proc = subprocess.run(argv, env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
            assert proc.returncode == 2 and "cannot write standard output: No space left on device" in proc.stderr, args
    argv, env = _beast_argv("enumerate", path, "-o", "-", "-q")
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2 and "cannot write standard output: it is closed" in proc.stderr


def test_npy_goes_through_a_fifo_and_stops_quietly_at_a_closed_pipe(tmp_path):
    """np.save's tofile needed a file position (a FIFO has none: 'obtaining file position
    failed', the reader left with a header) and made a closed pipe an internal error."""
    import subprocess
    path = write_space(tmp_path, "from beast import *\na = range(300)\nb = range(300)\n")
    fifo = tmp_path / "f.npy"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    proc = run_beast("enumerate", path, "-o", fifo, "-q", "--backend", "python")
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    import io
    arr = np.load(io.BytesIO(got[0]))
    assert len(arr) == 90000 and arr["b"][-1] == 299
    argv, env = _beast_argv("enumerate", path, "-o", "-", "--format", "npy", "-q", "--backend", "python")
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        head = p.stdout.read(100)
        p.stdout.close()
        err = p.stderr.read().decode()
        assert p.wait(120) == 0 and head.startswith(b"\x93NUMPY") and err == "", err


def test_threads_and_the_tuning_log_are_checked_before_any_work(tmp_path):
    path = write_space(tmp_path, SPACE)
    for n in ("0", "-3", "3000000000"):
        proc = run_beast("count", path, "--threads", n)
        assert proc.returncode == 2 and "--threads: must be between 1 and 4096" in proc.stderr, n
    with pytest.raises(BeastError, match="from 1 to 4096"):
        beast.load(path).count(backend="c", threads=5000)
    for log, says in ((tmp_path, "it is a folder"), ("/dev/null", "it is not a regular file"),
                      (tmp_path / "nowhere" / "t.jsonl", "there is no folder")):
        proc = run_beast("tune", ROOT + "/spaces/gemm.py", "--size", "64", "64", "64", "--log", log)
        assert proc.returncode == 2 and says in proc.stderr and "internal error" not in proc.stderr, proc.stderr


def test_dag_format_from_the_extension_and_outputs_that_are_not_outputs(tmp_path):
    """dag -o X.json writes JSON (it wrote text); -o SPACE.py is refused before it replaces the
    space file; compile -o FILE says the output must be a folder; a link into a missing folder
    names that folder; --plot '' is an error, not ignored."""
    import json
    path = write_space(tmp_path, SPACE)
    proc = run_beast("dag", path, "-o", tmp_path / "d.json")
    assert proc.returncode == 0 and json.loads((tmp_path / "d.json").read_text())["loop_order"] == ["a", "b"]
    proc = run_beast("dag", path, "-o", tmp_path / "d.dot")
    assert proc.returncode == 0 and (tmp_path / "d.dot").read_text().startswith("digraph")
    proc = run_beast("dag", path, "-o", tmp_path / "d.out")
    assert proc.returncode == 0 and "level sets" in (tmp_path / "d.out").read_text()
    before = open(path).read()
    for args in (("dag", path, "-o", path), ("enumerate", path, "--format", "csv", "-o", path)):
        proc = run_beast(*args)
        assert proc.returncode == 2 and "it is the space file itself" in proc.stderr, proc.stderr
    assert open(path).read() == before
    (tmp_path / "f").write_text("")
    proc = run_beast("compile", path, "--backend", "python", "-o", tmp_path / "f")
    assert proc.returncode == 2 and "it is not a folder" in proc.stderr
    os.symlink(os.path.join("nowhere", "x.csv"), tmp_path / "dl.csv")
    proc = run_beast("enumerate", path, "-o", tmp_path / "dl.csv")
    assert proc.returncode == 2 and f"there is no folder {tmp_path / 'nowhere'}" in proc.stderr
    proc = run_beast("stats", path, "--plot", "")
    assert proc.returncode == 2 and "picture format" in proc.stderr


def test_a_failing_dot_and_an_unencodable_file_name_are_said_plainly(tmp_path):
    """dot that fails silently: its exit status, not an empty message; a space file whose name is
    not UTF-8 printed by `stats` on a strict UTF-8 standard output: escaped, not an internal error."""
    path = write_space(tmp_path, SPACE)
    proc = run_beast("dag", path, "--format", "png", "-o", tmp_path / "d.png", env={"BEAST_DOT": "/bin/false"})
    assert proc.returncode == 2 and "dot failed (exit status 1): it said nothing" in proc.stderr
    odd = os.path.join(os.fsencode(tmp_path), b"bad\xff.py")
    with open(odd, "wb") as fh:
        fh.write(SPACE.encode())
    proc = run_beast("stats", os.fsdecode(odd), "--backend", "python", env={"PYTHONIOENCODING": "utf-8"})
    assert proc.returncode == 0 and "internal error" not in proc.stderr and "bad\\udcff" in proc.stdout, proc.stderr


# -- the rows' bytes (beast/ui/rows_text.py): CSV and JSON Lines a chunk at a time, .npy streamed

SIGNED = "from beast import *\na = range(-3, 2)\nb = range(-12, 13, 6)\nc = iterator(a * 1000 - b)\n"


def _savetxt(table) -> bytes:
    import io
    buf = io.BytesIO()
    np.savetxt(buf, table, fmt="%d", delimiter=",")
    return buf.getvalue()


def test_csv_and_jsonl_blocks_are_the_bytes_of_savetxt_and_json_dumps():
    import json
    from beast.ui.rows_text import csv_block, jsonl_block
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    values = [0, -1, 9, 10, -10, 99, 100, -999, 123456789, big, small, big - 1, small + 1, 7, -7]
    names = ("x", "why", "α")
    chunk = np.zeros(len(values), dtype=[(n, np.int64) for n in names])
    chunk["x"], chunk["why"], chunk["α"] = values, values[::-1], np.arange(len(values))
    table = np.column_stack([chunk[n] for n in names])
    assert csv_block(chunk, names) == _savetxt(table)
    assert csv_block(chunk, names[:1]) == _savetxt(table[:, :1])      # one column
    assert csv_block(chunk, ("α", "x")) == _savetxt(table[:, [2, 0]])  # the order given
    want = "".join(json.dumps(dict(zip(names, map(int, row)))) + "\n" for row in table)
    assert jsonl_block(chunk, names) == want.encode() and "\\u03b1" in want
    assert csv_block(chunk[:0], names) == b"" and jsonl_block(chunk[:0], names) == b""
    empty = np.zeros(3, dtype=[])                  # a space without iterators
    assert csv_block(empty, ()) == b"\n\n\n" and jsonl_block(empty, ()) == b"{}\n{}\n{}\n"


def test_npy_header_is_the_one_np_save_writes():
    import io
    import warnings
    from beast.ui.rows_text import npy_header
    for dtype in (np.dtype([("a", np.int64), ("b", np.int64)]), np.dtype([("α", np.int64)]),
                  np.dtype([(f"p{i}", np.int64) for i in range(4500)]), np.dtype([])):
        for rows in (0, 1, 12345) if len(dtype) < 10 else (3,):
            array = np.zeros(rows, dtype=dtype)
            buf = io.BytesIO()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)   # format 2.0 and 3.0 say so
                np.save(buf, array, allow_pickle=False)
                header = npy_header(dtype, rows)
            assert buf.getvalue() == header + array.tobytes(), (dtype, rows)


def test_enumerate_writes_the_bytes_of_savetxt_and_np_save_to_a_file_and_stdout(tmp_path):
    """CSV as np.savetxt of the rows wrote it (negative values), JSON Lines as json.dumps; .npy
    streamed chunk by chunk, with the count in its header, as np.save of Space.enumerate():
    through a file and through standard output; an empty space writes the CSV header alone."""
    import subprocess
    path = write_space(tmp_path, SIGNED)
    space = beast.load(path)
    every = space.enumerate(backend="python")
    assert every.dtype == space.dtype and len(every) == 25
    assert np.array_equal(every, np.concatenate(list(space.iterate(7, backend="python"))))
    table = np.column_stack([every[n] for n in space.iterators])
    buf = tmp_path / "want.npy"
    np.save(buf, every, allow_pickle=False)
    proc = run_beast("enumerate", path, "-o", tmp_path / "x.csv", "-q")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "x.csv").read_bytes() == b"a,b,c\n" + _savetxt(table)
    proc = run_beast("enumerate", path, "-o", tmp_path / "x.npy", "-q")
    assert proc.returncode == 0 and (tmp_path / "x.npy").read_bytes() == buf.read_bytes(), proc.stderr
    argv, env = _beast_argv("enumerate", path, "-o", "-", "--format", "npy", "-q")
    out = subprocess.run(argv, env=env, capture_output=True, timeout=120)
    assert out.returncode == 0 and out.stdout == buf.read_bytes(), out.stderr
    assert listing(tmp_path) == ["space.py", "want.npy", "x.csv", "x.npy"]
    none = write_space(tmp_path, "from beast import *\na = range(3)\nc = condition(a >= 0)\n", "none.py")
    proc = run_beast("enumerate", none, "-o", "-", "--format", "csv")
    assert proc.returncode == 0 and proc.stdout == "a\n", proc.stderr
    assert len(beast.load(none).enumerate()) == 0
