# PYTHON_ARGCOMPLETE_OK
"""The ``beast`` command: a thin face over :mod:`beast.space`.

Shell completion (bash, zsh) through argcomplete, an optional extra: ``pip install
'beast-autotune[completion]'`` and ``eval "$(register-python-argcomplete beast)"``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .errors import BeastError, DeviceError, Terminated, show_beast_warnings
from .ui.output import cannot_write, check_output, is_stream, write_output

OUTPUT_FORMATS = ("csv", "npy", "jsonl")


def _settings(pairs):
    out = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise BeastError(f"-D expects NAME=VALUE, got {pair!r}")
        out[name.strip()] = value.strip()
    return out


def _load(args):
    from .space import load
    return load(args.space, device=args.device, settings=_settings(args.define))


def _space_args(p, tune=False):
    from .lang.devices import DEFAULT_DEVICE
    p.add_argument("space", help="the space file (.py)")
    if tune:
        device_help = (f"the device profile the space is pruned for (default: {DEFAULT_DEVICE}, the paper's "
                       "Tesla K40c, whatever GPU measures): 'auto' reads the local GPU, the one tune "
                       "measures on; or a name (see `beast devices`) or a JSON file")
    else:
        device_help = ("the device profile the space is pruned for: a name (see `beast devices`), a JSON "
                       f"file, or 'auto' for the local GPU (default: {DEFAULT_DEVICE}, the paper's Tesla K40c)")
    p.add_argument("--device", default=None, help=device_help)
    p.add_argument("-D", dest="define", action="append", metavar="NAME=VALUE",
                   help="override a setting declared by the space (repeatable)")


def _backend_args(p, default=None, threads=True):
    from .runtime import CHOICES, DEFAULT_BACKEND
    p.add_argument("--backend", choices=list(CHOICES), default=default or DEFAULT_BACKEND,
                   help=f"enumerator backend (default: {default or DEFAULT_BACKEND})")
    if not threads:                   # compile only writes source: nothing runs on threads
        return
    p.add_argument("--threads", type=_threads, default=None, help="threads for the C backend (default: all cores)")


def cmd_count(args):
    from .ui.progress import Busy
    space = _load(args)
    with Busy("count", quiet=args.quiet):     # one compiled call: the time it has taken, no fraction
        start = time.perf_counter()
        n = space.count(backend=args.backend, threads=args.threads)
        seconds = time.perf_counter() - start
    if args.json:
        say(json.dumps({"space": args.space, "survivors": n, "iterators": list(space.iterators),
                          "conditions": list(space.conditions), "backend": args.backend,
                          "backend_used": getattr(space.enumerator(args.backend), "backend", args.backend),
                          "threads": args.threads, "device": space.device.name,
                          "settings": space.settings, "seconds": round(seconds, 6)}))
    else:
        say(n)
    return 0


def _int_in(low: int, high: int | None = None):
    """An argparse type: an integer from ``low`` (to ``high``), said in the option's error."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, not {text!r}") from None
        if n < low or high is not None and n > high:
            within = f"between {low} and {high}" if high is not None else \
                "a non-negative integer" if low == 0 else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {within}, not {n}")
        return n
    return parse


def _threads(text: str) -> int:
    """--threads N: checked whichever backend runs (only C uses it)."""
    from .runtime import MAX_THREADS
    return _int_in(1, MAX_THREADS)(text)


def say(*values, **kw) -> None:
    """print() to standard output, where a failed write (a full disk, a closed descriptor) is
    the output's fault, said as such, not an internal error; a reader that left (| head) ends
    the command quietly (main)."""
    try:
        print(*values, **kw)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise cannot_write("standard output", exc) from None


def _flush_stdout() -> None:
    if sys.stdout is not None:
        say(end="", flush=True)


def _sampled(space, args):
    """``--sample N --seed S``: N survivors drawn uniformly at random (see Space.sample)."""
    from .ui.progress import Busy
    with Busy("sample", quiet=args.quiet):
        return space.sample(args.sample, seed=args.seed, backend=args.backend, threads=args.threads)


class _Stream:
    """Only the ``write`` of a file: np.save then writes in chunks through it, where on a real
    file it calls tofile, which needs a file position (a FIFO has none) and turns a closed pipe
    into a plain OSError."""

    def __init__(self, fh):
        self.write = fh.write


def cmd_enumerate(args):
    import numpy as np
    from .ui import rows_text
    fmt = args.format or os.path.splitext(args.output)[1].lstrip(".").lower()
    if fmt not in OUTPUT_FORMATS and not args.format and is_stream(args.output):
        fmt = "csv"                       # -, /dev/stdout, /dev/null, a FIFO: no name to go by
    if fmt not in OUTPUT_FORMATS:
        raise BeastError(f"cannot tell the output format of {args.output!r}",
                         hint=f"use a .csv, .npy or .jsonl file name, or --format {'|'.join(OUTPUT_FORMATS)}")
    if args.seed is not None and args.sample is None:
        raise BeastError("--seed needs --sample N", hint="beast enumerate SPACE.py --sample N --seed S -o FILE")
    check_output(args.output)
    _not_the_space(args.output, args)
    space = _load(args)
    names = space.iterators
    progress = _progress_chunks(space, args)

    def write(fh):
        if fmt == "npy" and args.sample is not None:
            np.save(_Stream(fh), _sampled(space, args), allow_pickle=False)
            return
        total = None
        if fmt == "npy":                      # streamed: the header needs the row count first
            total = space.count(backend=args.backend, threads=args.threads)
            header, block = rows_text.npy_header(space.dtype, total), None
        else:
            header = rows_text.csv_header(names) if fmt == "csv" else b""
            block = rows_text.csv_block if fmt == "csv" else rows_text.jsonl_block
        rows = 0
        for chunk in (progress(space.iterate(backend=args.backend, threads=args.threads), known=total)
                      if args.sample is None else [_sampled(space, args)]):
            if not len(chunk):
                continue
            rows += len(chunk)
            if block is None and rows > total:
                break
            fh.write(header)                  # with the first rows: nothing is written before an error
            header = b""
            fh.write(np.ascontiguousarray(chunk, dtype=space.dtype).tobytes() if block is None
                     else block(chunk, names))
        if block is None and rows != total:
            raise BeastError(f"the enumeration gave {'more than ' if rows > total else ''}{rows:,} rows "
                             f"where the count says {total:,}: the .npy file would be wrong",
                             hint="this is a bug in beast; please report it with the space file")
        fh.write(header)                      # no rows: the header alone

    write_output(args.output, write)
    return 0


def _not_the_space(output: str, args) -> None:
    """Refuse an output that is the space file itself (-o space.py would replace it)."""
    try:
        same = output != "-" and os.path.exists(output) and os.path.samefile(output, args.space)
    except OSError:
        same = False
    if same:
        raise BeastError(f"cannot write {output}: it is the space file itself",
                         hint="give another output file name")


DAG_FORMATS = {".txt": "text", ".dot": "dot", ".gv": "dot", ".json": "json", ".png": "png", ".svg": "svg"}


def _text_extension(ext: str) -> bool:
    """Whether a file name ending ``ext`` may hold dag's text: an unknown ending (``.out``) or
    a text type, not a picture or document (``.pdf``, ``.jpg``) that only a renderer writes."""
    import mimetypes
    kind = mimetypes.guess_type("dag" + ext, strict=False)[0]
    return kind is None or kind.startswith("text/")


def cmd_dag(args):
    if args.format is None:             # from the output's extension, as enumerate does; else text
        ext = os.path.splitext(args.output or "")[1].lower()
        if ext and ext not in DAG_FORMATS and not _text_extension(ext) and not is_stream(args.output):
            raise BeastError(f"cannot write a {ext} file: dag writes {', '.join(DAG_FORMATS)}",
                             hint="name the file with one of these extensions, or give --format")
        args.format = DAG_FORMATS.get(ext, "text")
    picture = args.format in ("png", "svg")
    if picture and not args.output:
        args.output = f"{os.path.splitext(os.path.basename(args.space))[0]}_dag.{args.format}"
    if args.output:
        check_output(args.output)
        _not_the_space(args.output, args)
    space = _load(args)
    if picture:
        from .ui.graphviz import draw
        say(draw(space.dag("dot"), args.output, args.format))
        return 0
    text = space.dag(args.format)
    if args.output:
        write_output(args.output, lambda fh: fh.write((text.rstrip("\n") + "\n").encode()))
        say(args.output)
        return 0
    say(text)
    return 0


# -- progress (beast enumerate, beast tune) and statistics (beast stats)

def _progress_chunks(space, args):
    """A wrapper of a chunk iterator that shows a progress bar (a terminal, not --quiet): the
    share of the survivors written once a count on a thread of its own has them (a count costs a
    small fraction of writing the rows); the position of the outermost loops, a rougher guess,
    only when the count takes more than a second.  ``known``: the count, when the caller has it
    (no second count then)."""
    from .ui.progress import Progress, loop_fraction
    fraction = loop_fraction(space.program)

    def wrap(chunks, known=None):
        rows = 0
        with Progress("enumerate", quiet=args.quiet) as bar:
            total = [] if not bar.enabled else [known] if known is not None else _count_aside(space, args)
            guess_after = time.monotonic() + 1.0    # the count comes within a second, mostly
            for chunk in chunks:
                rows += len(chunk)
                if total:
                    bar.update(rows / total[0] if total[0] else 1.0, rows, exact=True)
                elif fraction and time.monotonic() > guess_after:
                    bar.update(fraction(chunk), rows)
                else:
                    bar.update(None, rows)
                yield chunk
            bar.finish(rows)
    return wrap


def _count_aside(space, args) -> list:
    """A list that receives the space's count from a daemon thread (it stays empty if the count
    fails: the enumeration reports the error)."""
    import threading
    box: list = []

    def run():
        try:
            box.append(space.count(backend=args.backend, threads=args.threads))
        except Exception:  # noqa: BLE001 - the enumeration itself meets and reports it
            pass
    threading.Thread(target=run, name="beast-progress-count", daemon=True).start()
    return box


def cmd_stats(args):
    if args.plot is not None:
        from .ui.plots import check_plot
        check_plot(args.plot)          # before the work: matplotlib is there, the name says png or svg
        check_output(args.plot)
    from .ui.progress import Busy
    space = _load(args)
    with Busy("stats", quiet=args.quiet):
        stats = space.stats(backend=args.backend, threads=args.threads, values=bool(args.plot))
    if args.plot:
        from .ui.plots import plot_stats
        plot_stats(stats, args.plot)
    if args.json:
        data = stats.to_dict()
        if not args.plot:
            data.pop("values", None)
        say(json.dumps({**data, "device": space.device.name, "settings": space.settings}))
    else:
        say(stats)
        if args.plot:
            say(f"\nplot: {args.plot}")
    return 0


def cmd_cache(args):
    """``beast cache``: where beast's cache is, what it holds, and ``--clear``."""
    from .runtime import cache
    root = cache.cache_dir(create=False)
    if args.clear:
        freed = cache.clear(root)
        if args.json:
            say(json.dumps({"path": root, "cleared_bytes": freed}))
        else:
            say(f"cleared {root}: {_size(freed)} freed (entries are rebuilt when next needed)")
        return 0
    rows = cache.usage(root)
    if args.json:
        say(json.dumps({"path": root, "env": cache.ENV_VAR,
                        "entries": [dict(folder=f, files=n, bytes=b, holds=w) for f, n, b, w in rows]}))
        return 0
    lines = [f"beast's cache: {root}  (set {cache.ENV_VAR} to move it; `beast cache --clear` empties it)"]
    for folder, files, size, what in rows:
        lines.append(f"  {folder:<15} {files:>7,} file{'s' * (files != 1)} {_size(size):>10}  {what}")
    lines.append(f"  {'total':<15} {sum(r[1] for r in rows):>7,} files {_size(sum(r[2] for r in rows)):>10}")
    say("\n".join(lines))
    return 0


def _size(n: int) -> str:
    """``n`` bytes for a person: bytes below 1 KiB, else KiB, MiB or GiB with one decimal."""
    if n < 1024:
        return f"{n:,} bytes"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"


def cmd_devices(args):
    from .lang.devices import describe_devices, describe_fields, profile_json
    if args.dump:
        say(profile_json(args.dump), end="")
        return 0
    say(describe_fields() if args.fields else describe_devices())
    return 0


def cmd_compile(args):
    from .runtime import get_backend
    space = _load(args)
    files = get_backend(args.backend).render(space.program)
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise cannot_write(args.output, "it is not a folder (compile writes a folder of files)")
    try:
        os.makedirs(args.output, exist_ok=True)
    except OSError as exc:
        raise cannot_write(args.output, exc) from None
    for name, text in files.items():
        path = os.path.join(args.output, name)
        write_output(path, lambda fh, t=text: fh.write(t.encode()))
        say(path)
    return 0


# `--device auto` without a local GPU: naming a profile lets count and enumerate run, not tune
_TUNE_NO_GPU = ("`beast tune` compiles and times kernels on this machine's NVIDIA GPU through CuPy "
                "(pip install cupy-cuda12x), so it needs one whatever --device names; without a GPU, "
                "`beast count` and `beast enumerate` can prune the space for a named profile "
                "(--device h100; see `beast devices`)")
_TUNE_NO_GPU_RAY = ("with --ray the kernels run on the cluster's GPUs: name their profile "
                    "(--device h100; see `beast devices`) when this machine has none")


def _explain(args):
    """``beast tune SPACE --explain CONFIG``: the counters of one survivor, no GPU, no tuning."""
    from .tune.model.explain import explain
    say(explain(_load(args), args.explain, args.size))
    return 0


def _prior_strategy(args) -> str:
    """``beast tune``'s strategy: the one named, else portfolio with ``--prior`` (a prior needs a
    search that learns) and exhaustive without; a clear error for a prior it cannot use."""
    if not args.prior:
        return args.strategy or "exhaustive"
    from .search.prior import check_prior_strategy, read_prior
    strategy = args.strategy or "portfolio"
    check_prior_strategy(strategy)
    for path in args.prior:                 # before any GPU work: a bad prior file fails now
        read_prior(path)
    return strategy


def cmd_tune(args):
    if getattr(args, "explain", None) is not None:
        return _explain(args)
    if args.size is None:
        raise BeastError("beast tune needs --size M N K",
                         hint="beast tune SPACE --size M N K (--explain CONFIG needs none)")
    from .tune import format_report, tune
    from .tune.driver.local import pace, parse_duration
    if args.budget is not None and args.all:
        raise BeastError("give --budget N or --all, not both")
    time_limit = parse_duration(args.time) if args.time is not None else None   # before any work
    if args.log is not None:
        from .tune.driver.log import check_log
        check_log(args.log)
    args.strategy = _prior_strategy(args)
    try:
        space = _load(args)
    except DeviceError as err:
        if (args.device or "").strip().lower() == "auto" and err.message.startswith("no GPU found"):
            err.hint = _TUNE_NO_GPU_RAY if getattr(args, "ray", None) is not None else _TUNE_NO_GPU
        raise
    interactive = sys.stderr.isatty() and not args.quiet
    last = [0.0]
    from .ui.progress import Progress
    bar = Progress("tune", unit="configs", quiet=args.quiet)

    def progress(done, total, best, report=None):
        now = time.monotonic()
        best_text = f"{best.gflops:.1f} GFLOP/s best" if best is not None and best.gflops else "no best yet"
        busy = f", {pace(report)}" if report is not None and report.gpu_busy is not None else ""
        fraction = done / total if total else None
        if time_limit is not None and report is not None:   # the clock or the budget, whichever ends first
            fraction = max(fraction or 0.0, min(1.0, report.wall_s / time_limit))
        if interactive:
            bar.desc = f"tune ({best_text}{busy})"
            bar.update(fraction, done)
            return
        if args.quiet or (now - last[0] < 10 and done != total):
            return
        last[0] = now
        of = f"/{total}" if total else ""
        print(f"[{done}{of}] {best_text}{busy}", file=sys.stderr, flush=True)

    budget = None if args.all else args.budget
    if budget is None and not args.all and time_limit is None:
        budget = 100
    kwargs = dict(budget=budget, strategy=args.strategy, log_path=args.log, seed=args.seed, progress=progress,
                  time_limit=time_limit)
    if args.model is not None:
        kwargs["model"] = args.model
    if args.prior:
        kwargs["prior"] = args.prior
    with bar:
        if getattr(args, "ray", None) is not None:          # --ray [ADDRESS]: every GPU of a Ray cluster
            from .tune.driver.ray import format_ray_summary, tune_ray
            report = tune_ray(space, tuple(args.size), address=args.ray or None, **kwargs)
        else:
            if args.isolate is not None:
                kwargs["isolate"] = args.isolate
            report = tune(space, tuple(args.size), **kwargs)
    say(format_report(report, top=args.top))
    if getattr(args, "ray", None) is not None:
        say(format_ray_summary(report))
    if getattr(report, "interrupted", False):       # the log is complete and the table printed
        return _interrupted(report.interruption or KeyboardInterrupt())
    return 0


def cmd_replay(args):
    from .search.replay import (check_checkpoints, default_checkpoints, format_replay, load_recorded, match_space, replay)
    from .search import DEFAULT_STRATEGY, STRATEGIES
    if args.strategy is None:
        args.strategy = DEFAULT_STRATEGY
    if args.strategy not in STRATEGIES:
        raise BeastError(f"unknown strategy {args.strategy!r}", hint="use one of: " + ", ".join(STRATEGIES))
    space = _load(args)
    run = load_recorded(args.data)
    pool, times = match_space(space, run)
    fixed = {n: v for n, v in run.constants.items() if n not in space.iterators}
    options = {}
    if args.prior:
        from .search.prior import check_prior_strategy, prior_scores
        check_prior_strategy(args.strategy)
        options["prior"] = prior_scores(pool, args.prior)      # read and matched once for every repeat
    from .ui.progress import Busy
    with Busy("replay", unit="evaluations", quiet=args.quiet) as bar:
        result = replay(pool, times, args.strategy, args.budget, repeats=args.repeats, seed=args.seed,
                        batch=args.batch, progress=bar.update, **options)
    points = check_checkpoints(result, args.at) if args.at else default_checkpoints(result.size, result.budget)
    if args.json:
        say(json.dumps({"space": args.space, "data": args.data, "strategy": args.strategy,
                          "constants": fixed, "size": result.size, "optimum_ms": result.optimum, "repeats": args.repeats,
                          "budgets": {str(b): {"mean": float(result.at(b).mean()), "std": float(result.at(b).std()),
                                               "min": float(result.at(b).min()), "max": float(result.at(b).max())}
                                      for b in points},
                          "evaluations_to_95": [None if e == float("inf") else int(e)
                                                for e in result.evaluations_to(0.95)]}))
    else:
        if fixed:
            say("constant in the data, not in the space: "
                  + ", ".join(f"{n}={v}" for n, v in fixed.items()))
        say(format_replay(result, points))
    return 0


def version() -> str:
    """The version of the installed distribution ``beast-autotune``; ``beast.__version__`` (from
    which pyproject.toml takes it) when the package runs from a source tree without installing."""
    from importlib.metadata import PackageNotFoundError, version as dist_version
    try:
        return dist_version("beast-autotune")
    except PackageNotFoundError:
        from ._version import __version__
        return __version__


class _Version(argparse.Action):
    """``--version``: the version is looked up only when asked for (the start of every other
    command stays as fast as it was)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        say(f"beast {version()}")
        parser.exit()


_PRIOR_HELP = ("earlier runs of the same space on other devices or sizes (beast tune logs or Kernel Tuner "
               "cache files): the portfolio search starts from their best configurations and its model "
               "uses their ranking while it agrees with this run's times")


def build_parser():
    parser = argparse.ArgumentParser(prog="beast", description="Declarative search-space compiler for autotuners.")
    parser.add_argument("--version", action=_Version, help="print beast's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("count", help="count the configurations that survive every condition")
    _space_args(p)
    _backend_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_count)

    p = sub.add_parser("enumerate", help="write the surviving configurations to .csv, .npy or .jsonl")
    _space_args(p)
    _backend_args(p)
    p.add_argument("-o", "--output", required=True, help="output file (.csv, .npy or .jsonl; - for stdout, csv unless --format)")
    p.add_argument("--format", choices=OUTPUT_FORMATS, help="output format (default: from the file name)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="write N survivors drawn uniformly at random (all, shuffled, if N >= the count)")
    p.add_argument("--seed", type=_int_in(0), default=None, metavar="S", help="seed of --sample (default: random)")
    p.set_defaults(func=cmd_enumerate)

    p = sub.add_parser("dag", help="show the level sets and where each condition and derived variable is evaluated")
    _space_args(p)
    p.add_argument("--format", choices=("text", "dot", "json", "png", "svg"), default=None,
                   help="png and svg are drawn by Graphviz's dot program (default: from the -o file's "
                        "extension, .txt .dot .gv .json .png .svg, else text)")
    p.add_argument("-o", "--output", default=None,
                   help="write it to this file (text, dot, json: default stdout; png, svg: default SPACE_dag.FORMAT)")
    p.set_defaults(func=cmd_dag)

    p = sub.add_parser("stats", help="how the space is pruned: values tried per loop level, rejections per condition")
    _space_args(p)
    _backend_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="draw the funnel, the rejections and the survivors' values (.png or .svg; needs matplotlib)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("compile", help="write the generated enumerator source for a person to read "
                                       "(--backend auto: the one auto runs for this space once C is cached)")
    _space_args(p)
    _backend_args(p, threads=False)
    p.add_argument("-o", "--output", required=True, help="output directory")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("cache", help="where beast's cache of compiled enumerators and tables is, what it holds; --clear")
    p.add_argument("--clear", action="store_true", help="remove every entry (each is rebuilt when next needed)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("devices", help="list the built-in device profiles and the local GPU")
    p.add_argument("--fields", action="store_true",
                   help="list instead every device attribute a space file can read, with its unit and meaning")
    p.add_argument("--dump", metavar="NAME",
                   help="print the profile NAME (a built-in name, a .json file or 'auto') as the JSON that "
                        "--device FILE.json reads: a template to edit (the file's name names the profile)")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("tune", help="compile, verify and time the GEMM kernel for each survivor on the GPU")
    _space_args(p, tune=True)
    p.add_argument("--size", nargs=3, type=int, default=None, metavar=("M", "N", "K"),
                   help="problem size (required, except with --explain)")
    p.add_argument("--explain", default=None, metavar="CONFIG",
                   help="no tuning and no GPU: for one survivor (CONFIG: name=value,name=value or a JSON "
                        "object, every iterator given) print the kernel's threads and shared memory, the "
                        "compiler's registers and spills when nvcc is installed, and the host simulator's "
                        "counters per k-tile (shared-memory wavefronts, global sectors, MMA, FMA, barriers)")
    p.add_argument("--budget", type=int, default=None,
                   help="configurations the log should hold (default: 100, or no limit with --time)")
    p.add_argument("--all", action="store_true", help="measure every survivor")
    p.add_argument("--time", default=None, metavar="DURATION",
                   help="stop cleanly after this long (600, 90s, 10m, 1.5h; with --budget, whichever "
                        "comes first); the log stays complete and the table is printed")
    p.add_argument("--strategy", choices=("exhaustive", "random", "local", "model", "hybrid", "portfolio"),
                   default=None,
                   help="exhaustive (enumeration order; the default without --prior), random, local (neighbours "
                        "of the best), model (a surrogate model ranks survivors; needs beast-autotune[tune]), hybrid, "
                        "portfolio (beast's default search: a mix of all of them; needs beast-autotune[tune]; "
                        "the default with --prior)")
    p.add_argument("--prior", nargs="+", default=None, metavar="FILE", help=_PRIOR_HELP)
    p.add_argument("--seed", type=_int_in(0), default=0, help="seed of the random, local, model, hybrid and portfolio strategies")
    p.add_argument("--log", default=None, help="JSONL log: written as it goes, resumed when it exists")
    p.add_argument("--top", type=_int_in(1), default=10, help="rows in the final table")
    p.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=None,
                   help="measure each kernel in a worker process that is killed at a time limit (the "
                        "default): a kernel that hangs, hits an illegal address or crashes the driver is "
                        "logged as timeout, context_lost or crashed and the run goes on with a fresh "
                        "worker; --no-isolate measures in this process, where such a kernel ends the run "
                        "(a rerun skips it: its 'started' record is logged as crashed). Ray's GPU workers "
                        "are processes of their own: --ray ignores this option")
    p.add_argument("--model", action=argparse.BooleanOptionalAction, default=None,
                   help="use the speed model (the default on a GPU): the first batch in order of predicted "
                        "time, and a configuration whose optimistic lower bound cannot beat the best time so far "
                        "is logged as 'pruned', neither compiled nor measured (it counts in --budget); off where "
                        "--device is another compute capability than the GPU's (the default k40c on a newer "
                        "GPU); --no-model measures every candidate in the strategy's order")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="spread the work over every GPU of a Ray cluster: ADDRESS (host:port or 'auto') "
                        "joins a running one; without it a local one starts (needs beast-autotune[ray])")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("replay", help="play a search strategy against recorded GPU times (no GPU needed)")
    _space_args(p)
    p.add_argument("--data", required=True, help="brute-forced times, Kernel Tuner cache format (.json or .json.gz)")
    p.add_argument("--strategy", default=None,
                   help="random, local, model, hybrid or portfolio (default: beast's default strategy, "
                        "beast.search.DEFAULT_STRATEGY)")
    p.add_argument("--budget", type=_int_in(1), required=True, help="evaluations per repeat")
    p.add_argument("--repeats", type=_int_in(1), default=10, help="independent runs, seeds SEED, SEED+1, ... (default: 10)")
    p.add_argument("--seed", type=_int_in(0), default=0, help="seed of the first repeat")
    p.add_argument("--batch", type=_int_in(1), default=1, help="configurations asked at a time (default: 1)")
    p.add_argument("--at", type=_int_in(1), nargs="+", default=None, metavar="B",
                   help="budgets to report (default: 1, 2, 5, 10, 20, 50%% of the space, and --budget)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("--prior", nargs="+", default=None, metavar="FILE", help=_PRIOR_HELP)
    p.set_defaults(func=cmd_replay)
    return parser


def _on_sigterm(signum, frame):
    raise Terminated()


def _interrupted(exc: BaseException) -> int:
    """Say that Ctrl-C (130) or SIGTERM (143) stopped the command, in one line; its status."""
    terminated = isinstance(exc, Terminated)
    print("beast: terminated" if terminated else "beast: interrupted", file=sys.stderr)
    return 143 if terminated else 130


def _complete(parser) -> None:
    """Answer the shell's completion request and exit (argcomplete's protocol); without
    argcomplete installed, nothing is completed."""
    try:
        import argcomplete
    except ImportError:
        raise SystemExit(1) from None
    argcomplete.autocomplete(parser)


def main(argv=None) -> int:
    """Entry point of the ``beast`` console script."""
    show_beast_warnings()       # file:line:col: warning: ..., with the caret, as errors print
    try:
        if argv is None:
            import signal
            signal.signal(signal.SIGTERM, _on_sigterm)
            if sys.stdout is not None and hasattr(sys.stdout, "reconfigure"):
                # a file name that is not UTF-8 (an escaped byte) printed in a result: \udcff, not
                # a UnicodeEncodeError after the work is done
                sys.stdout.reconfigure(errors="backslashreplace")
        parser = build_parser()
        if "_ARGCOMPLETE" in os.environ:   # a shell asks for completions (argcomplete sets it)
            _complete(parser)
        args = parser.parse_args(argv)
        status = args.func(args)
        _flush_stdout()                 # here, where a full disk is still the user's error
        return status
    except BeastError as err:
        print(str(err), file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except BrokenPipeError:         # (beast enumerate -o - | head): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - a bug in beast: say so briefly, traceback on request
        if os.environ.get("BEAST_DEBUG"):
            raise
        print(f"beast: internal error: {type(exc).__name__}: {exc}\n"
              "(set BEAST_DEBUG=1 to see the traceback, and please report it)", file=sys.stderr)
        return 3
