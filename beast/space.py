"""The Python API: ``beast.load(path, device=..., settings=...)`` and :class:`Space`."""
from __future__ import annotations

import os

from .ir import build_program
from .errors import BeastError
from .frontend import build_space_model, load_module, make_plan
from .runtime import DEFAULT_BACKEND, check_chunk_size, check_threads, get_backend

TYPE_CHECKING = False     # (typing is not imported at start; the annotations are strings anyway)
if TYPE_CHECKING:
    import numpy

# NumPy and the backends are imported when a space is first run, not
# when it is loaded: ``beast.load`` stays a few milliseconds (see bench/bench_cold.py).


class Space:
    """A compiled search space: its iterators, conditions, plan, and enumerators per backend."""

    def __init__(self, path, device=None, settings=None):
        self.path = os.fspath(path)
        self.module = load_module(path, device=device, settings=settings)
        self.model = build_space_model(self.module)
        self.plan = make_plan(self.model)
        name = os.path.splitext(os.path.basename(self.path))[0]
        self.program = build_program(self.plan, name)
        self._enumerators = {}

    # -- what the space is
    @property
    def name(self) -> str:
        """The space's name: its file name without ``.py``."""
        return self.program.name

    @property
    def iterators(self) -> tuple:
        """Iterator names in declaration order (the output columns)."""
        return tuple(self.model.iterators)

    @property
    def conditions(self) -> tuple:
        """Condition names in declaration order."""
        return tuple(self.model.conditions)

    @property
    def derived(self) -> tuple:
        """Derived variable names in declaration order."""
        return tuple(self.model.derived)

    @property
    def settings(self) -> dict:
        """The settings in effect: name -> value."""
        return {name: decl.value for name, decl in self.module.settings.items()}

    @property
    def device(self):
        """The :class:`~beast.lang.devices.DeviceProfile` the space was compiled for."""
        return self.module.device

    @property
    def source_hash(self) -> str:
        """SHA-256 of the space file's text (a tuning log records it: a resumed run checks it)."""
        import hashlib
        return hashlib.sha256(self.module.source.encode()).hexdigest()

    @property
    def dtype(self):
        """The NumPy structured dtype of the rows: one int64 field per iterator."""
        import numpy as np
        return np.dtype([(c, np.int64) for c in self.iterators])

    @property
    def dag(self) -> "DagView":
        """The dependency DAG and hoisting plan: ``space.dag.level_sets``, ``.loop_order``,
        ``.depth``; ``print(space.dag)`` or ``space.dag("dot")`` / ``space.dag("json")``."""
        return DagView(self.plan)

    # -- enumeration
    def enumerator(self, backend: str | None = None):
        """The (cached) enumerator of ``backend``: 'auto' (the default: see
        :mod:`beast.runtime.auto`; its ``.backend`` says which backend it chose), 'python', 'c'
        or 'lua'."""
        backend = backend or DEFAULT_BACKEND
        if backend not in self._enumerators:
            self._enumerators[backend] = get_backend(backend).build(self.program)
        return self._enumerators[backend]

    def count(self, backend: str | None = None, threads: int | None = None) -> int:
        """How many configurations survive every condition (``threads``: for the C backend, 1 to
        4096; None: every core)."""
        return self.enumerator(backend).count(threads=check_threads(threads))

    def iterate(self, chunk_size: int = 65536, backend: str | None = None, threads: int | None = None):
        """Yield the survivors as NumPy structured arrays of at most ``chunk_size`` rows, in order."""
        chunk_size, threads = check_chunk_size(chunk_size), check_threads(threads)
        yield from self.enumerator(backend).chunks(chunk_size, threads=threads)

    def enumerate(self, backend: str | None = None, threads: int | None = None) -> "numpy.ndarray":
        """All survivors as one NumPy structured array (fields: the iterators, int64), in order."""
        import numpy as np
        parts = list(self.iterate(1 << 20, backend=backend, threads=threads))
        if len(parts) == 1:
            return parts[0]
        rows = np.empty(sum(len(p) for p in parts), dtype=self.dtype)
        # The result's pages are touched only as each part is copied in and dropped: the peak is
        # the rows once plus a part, not twice the rows as with np.concatenate.
        parts.reverse()
        at = 0
        while parts:
            part = parts.pop()
            rows[at:at + len(part)] = part
            at += len(part)
            del part
        return rows

    def to_kernel_tuner(self, backend: str | None = None, threads: int | None = None):
        """``(tune_params, list_of_tuples)`` for Kernel Tuner: each iterator's values that occur
        in a survivor, and the survivors as tuples of Python values (see beast.kernel_tuner)."""
        from .explore.rows import kernel_tuner_form
        return kernel_tuner_form(self, backend=backend, threads=check_threads(threads))

    # -- statistics (beast stats)
    def stats(self, backend: str | None = None, threads: int | None = None, values: bool = True):
        """How the space is pruned: a :class:`beast.explore.stats.Stats` (``cartesian``, per loop level
        ``tried``/``passed``, per condition ``depth``/``evaluated``/``rejected``, ``survivors``;
        with ``values``, how many survivors have each value of each iterator). It runs a separate,
        instrumented build of the untightened loop nest (see :mod:`beast.explore.stats`)."""
        from .explore.stats import collect
        return collect(self, backend=backend, threads=check_threads(threads), with_values=values)

    # -- uniform sampling (beast/explore/sampling.py)
    def sample(self, n: int, seed=None, backend: str | None = None, threads: int | None = None) -> "numpy.ndarray":
        """``n`` distinct survivors drawn uniformly at random, without enumerating the space, as a
        NumPy structured array like :meth:`enumerate` (rows in the order drawn). ``seed`` (an int,
        or None for fresh randomness) makes the draw reproducible: the same seed gives the same
        rows in every backend. When ``n`` is at least :meth:`count`, every survivor is returned
        once, in random order. The first call on a space counts it once (cached in memory and in
        beast's cache directory); later calls cost about ``n`` small walks of the nest."""
        try:
            return self._sampler(backend, check_threads(threads)).sample(n, seed=seed)
        except BeastError as err:
            raise err.with_traceback(None) from None

    def _sampler(self, backend, threads):
        """The space's :class:`beast.explore.sampling.Sampler` on ``backend`` (built once)."""
        backend = backend or DEFAULT_BACKEND
        samplers = self.__dict__.setdefault("_samplers", {})
        if backend not in samplers:
            from .explore.sampling import Sampler
            samplers[backend] = Sampler(self.program, backend, threads)
        samplers[backend].threads = threads
        return samplers[backend]

    # -- membership (Kernel Tuner's is_param_config_valid)
    def contains(self, configs, backend: str | None = None):
        """Whether a configuration survives: ``configs`` is a mapping (iterator -> value) or one row
        of :meth:`enumerate`'s array, giving a bool, or many of them (a structured array like
        :meth:`enumerate`'s, or a sequence of mappings), giving a bool array. Exact, and without enumerating the space: each test walks
        the loops' sequences once (:func:`beast.ir.prefix.member`). A value that is not an integer
        is in no survivor; an error of the space at that configuration is raised, and so is a
        name that is no iterator of the space (a misspelt one would otherwise go unseen)."""
        import numpy as np
        from collections.abc import Iterable, Mapping
        order = self.program.loop_order
        if isinstance(configs, Iterable) and not isinstance(configs, (Mapping, np.ndarray, np.void, str, bytes)):
            configs = list(configs)         # (read twice: for its keys, then for its values)
        single, table, missing = config_rows(configs, order)
        unknown = _unknown_keys(configs, set(order) | set(self.iterators))
        if unknown:
            import difflib
            close = [difflib.get_close_matches(str(k), list(self.iterators), 1) for k in unknown]
            guess = [f"{k!r} -> {c[0]!r}" for k, c in zip(unknown, close) if c]
            raise BeastError(f"a configuration names {', '.join(map(repr, unknown))}, which "
                             f"{'is not an iterator' if len(unknown) == 1 else 'are not iterators'} "
                             f"of space '{self.name}'",
                             hint=(f"did you mean {', '.join(guess)}? " if guess else "") +
                                  f"the space's iterators: {', '.join(self.iterators)}")
        if missing:
            raise BeastError(f"a configuration has no value for {', '.join(map(repr, sorted(missing)))}",
                             hint=f"give every iterator a value: {', '.join(self.iterators)}")
        ok = np.array([all(_integral(v) for v in r) for r in table], dtype=bool)
        prefixes = np.array([[int(v) for v in r] if good else [0] * len(order)
                             for r, good in zip(table, ok)], dtype=np.int64).reshape(len(table), len(order))
        out = np.zeros(len(table), dtype=bool)
        if ok.any():
            backend = backend or DEFAULT_BACKEND
            members = self.__dict__.setdefault("_members", {})
            try:
                if backend not in members:
                    from .ir.prefix import member
                    members[backend] = get_backend(backend).build(member(self.program))
                out[ok] = members[backend].count_each(prefixes[ok]) > 0
            except BeastError as err:
                raise err.with_traceback(None) from None
        return bool(out[0]) if single else out

    def __contains__(self, config) -> bool:
        return self.contains(config)

    def __repr__(self):
        return f"<beast.Space {self.name}: {len(self.iterators)} iterators, {len(self.conditions)} conditions>"


class DagView:
    """A read-only view of the plan; calling it renders 'text', 'dot' or 'json'."""

    def __init__(self, plan):
        self._plan = plan
        self.level_sets = [list(s) for s in plan.level_sets]
        self.levels = dict(plan.levels)
        self.loop_order = list(plan.loop_order)
        self.depth = dict(plan.depth)        # node -> loop depth where it is evaluated (0: before)
        self.unused = list(plan.unused)
        self.deps = {name: list(node.deps) for name, node in plan.model.nodes.items()}

    def __call__(self, fmt: str = "text") -> str:
        if fmt not in ("text", "dot", "json"):
            raise BeastError(f"unknown DAG format {fmt!r}", hint="use 'text', 'dot' or 'json'")
        from .frontend.report import render_dag
        return render_dag(self._plan, fmt)

    def __str__(self):
        return self("text")

    def to_dict(self) -> dict:
        """The DAG and plan as plain data (what ``dag("json")`` prints)."""
        from .frontend.report import dag_dict
        return dag_dict(self._plan)


def config_rows(configs, names):
    """``(single, table, missing)`` for ``configs``, a mapping (``single``) or many of them (a
    structured array, or a sequence of mappings): ``table`` holds each one's values in ``names``
    order, unless some lack a name: then it is None and ``missing`` lists those names."""
    import numpy as np
    from collections.abc import Iterable, Mapping
    if isinstance(configs, np.void) and configs.dtype.names:      # one row of a structured array
        configs = dict(zip(configs.dtype.names, configs.tolist()))
    single = isinstance(configs, Mapping)
    rows = [configs] if single else configs
    if isinstance(rows, np.ndarray) and rows.dtype.names:
        have = set(rows.dtype.names)
        missing = [n for n in names if n not in have]
    else:
        if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
            raise BeastError(f"a configuration is a mapping of iterator names to values, not {rows!r:.60}",
                             hint="{'blk_m': 64, ...}, a row of enumerate(), or a list or array of them")
        rows = list(rows)
        odd = next((r for r in rows if not isinstance(r, Mapping)), None)
        if odd is not None:
            raise BeastError(f"a configuration is a mapping of iterator names to values, not {odd!r:.60}",
                             hint="a list of configurations holds mappings: [{'blk_m': 64, ...}, ...]")
        missing = [n for n in names if any(n not in r for r in rows)]
    table = None if missing else [[r[n] for n in names] for r in rows]
    return single, table, missing


def _unknown_keys(configs, known) -> list:
    """The names ``configs`` (as :func:`config_rows` takes them) gives that are not in ``known``,
    sorted: a misspelt iterator would otherwise be ignored."""
    import numpy as np
    from collections.abc import Mapping
    if isinstance(configs, (np.void, np.ndarray)):
        names = configs.dtype.names or ()
    elif isinstance(configs, Mapping):
        names = configs.keys()
    else:
        names = {k for r in configs if isinstance(r, Mapping) for k in r}
    return sorted((k for k in names if k not in known), key=str)


def _integral(value) -> bool:
    """An int (not a bool), or a number equal to one (2.0, numpy integers), within 64 bits."""
    import numbers
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return value == int(value) and -(1 << 63) <= int(value) < (1 << 63)
    except (OverflowError, ValueError):
        return False


def load(path, device=None, settings=None) -> Space:
    """Compile a space file. ``device``: profile name, JSON path, 'auto' or a DeviceProfile;
    ``settings``: overrides of the file's ``setting()`` declarations (name -> value)."""
    from collections.abc import Mapping
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        raise BeastError(f"the space file is a path, not {path!r:.60}")
    if settings is not None and (not isinstance(settings, Mapping)
                                 or not all(isinstance(k, str) for k in settings)):
        raise BeastError(f"settings are a mapping of setting names to values, not {settings!r:.60}",
                         hint="settings={'precision': 'single', 'size': 4096}")
    try:
        return Space(path, device=device, settings=settings)
    except BeastError as err:
        raise err.with_traceback(None) from None
