"""Kernel Tuner in and out.

*In*: :func:`from_kernel_tuner` takes Kernel Tuner's ``tune_params`` and ``restrictions`` (every
form Kernel Tuner 1.5 accepts: strings, lambdas, functions with named parameters, functions of
the parameter dict, ``(function, [names])`` tuples and python-constraint ``Constraint`` objects)
and returns a :class:`KernelTunerSpace`, a :class:`beast.space.Space` with exactly the
configurations that Kernel Tuner's ``Searchspace(tune_params, restrictions, max_threads,
block_size_names)`` keeps. The space is written as an ordinary beast space file (one iterator per
parameter, one ``@condition`` per restriction, see :mod:`beast.kernel_tuner.source`), so its
restrictions are hoisted and compiled like any other condition. A restriction that cannot be
translated is still honoured exactly: it is evaluated in Python on what the others let through,
with a warning that names it.

*Out*: :meth:`beast.space.Space.to_kernel_tuner` gives ``(tune_params, list_of_tuples)``, and
:func:`tune_kernel` runs ``kernel_tuner.tune_kernel`` with beast's configurations as its search
space, so that every Kernel Tuner strategy, backend and cache works unchanged; its
``strategy="beast"`` runs beast's own search strategy there (:mod:`beast.kernel_tuner.strategy`).

Where Kernel Tuner 1.5's ``Searchspace`` raises, beast is more lenient, and otherwise keeps the
same configurations: a function whose parameters name only some tunable parameters is called
with those (Kernel Tuner passes all of them positionally); ``(function, [names])`` tuples work
(``Searchspace`` drops them with an error); a lambda may read module constants; duplicate
values in a parameter's list are dropped (Kernel Tuner reports duplicate configurations).

Limits of "the same configurations", each an error that names the restriction as the user wrote
it and the configuration in the user's values (never the generated file):

- a restriction that raises (``b / a`` with ``a == 0``) is an error, as in Kernel Tuner; which
  configurations reach it depends on the order restrictions are checked in: beast checks each as
  soon as its parameters are bound (``['b / a > 0', 'a != 0']`` never divides by zero), Kernel
  Tuner in its solver's order;
- beast's integers are 64-bit: a restriction that is one expression and, from the parameters'
  values, may compute an integer beyond 64 bits is evaluated in Python (exact, with a warning);
  where that cannot be told (a function of several statements, ``int()`` of a float), an overflow
  is an error;
- what beast refuses where Python computes a value (``(-a) ** 0.5``, complex in Python, see
  docs/semantics.md) is an error too.

Parameter names need not be Python identifiers (``block-size``, ``range``, ``__file__``): the
generated file renames what it cannot declare. ``max_threads`` must be a number (not NaN).

Kernel Tuner itself is needed only by :func:`tune_kernel` (``pip install 'beast-autotune[kt]'``).
"""
from __future__ import annotations

import contextlib
import os
import re
import warnings

import numpy as np

from ..errors import BeastError, EvaluationError
from ..explore.rows import as_tuples
from ..expr.callsite import user_stacklevel
from ..runtime.errors import OVERFLOW_HINT
from ..space import Space, config_rows, load
from .source import DEFAULT_BLOCK_SIZE_NAMES, generate_source

__all__ = ["from_kernel_tuner", "KernelTunerSpace", "tune_kernel", "to_kernel_tuner",
           "DEFAULT_BLOCK_SIZE_NAMES"]


class KernelTunerSpace(Space):
    """A space built from Kernel Tuner's ``tune_params`` and ``restrictions``.

    Columns are the tunable parameters with the user's values: int64 for parameters whose values
    are all integers, float64 for all-float parameters, ``object`` for the rest (strings,
    booleans, mixed types). Restrictions that beast could not compile are applied in Python to
    every chunk (listed in :attr:`python_restrictions`).

    An error while evaluating (a restriction that divides by zero, as in Kernel Tuner, which
    raises too) names the restriction as the user wrote it and the configuration in the user's
    names and values, not the generated file."""

    def __init__(self, path, params, checks, kernel_tuner_args, device=None, origins=()):
        super().__init__(path, device=device)
        self._params = params
        self._checks = checks
        self._origins = list(origins)
        self.kernel_tuner_args = kernel_tuner_args

    @contextlib.contextmanager
    def _user_errors(self):
        """Turn an error located in the generated file into the user's terms (see the class)."""
        try:
            yield
        except EvaluationError as err:
            if err.filename is None or os.path.abspath(err.filename) != os.path.abspath(self.path):
                raise
            raise self._user_error(err) from None

    def _user_error(self, err: EvaluationError) -> EvaluationError:
        """``err`` (at a line of the generated file, with its encoded values) as the user wrote
        it: the restriction or parameter, and the configuration in the user's values."""
        lineno = err.lineno
        origin = self._origins[lineno - 1] if lineno and 0 < lineno <= len(self._origins) else None
        message = re.sub(r" in (condition|iterator|derived variable) '[^']*'$", "", err.message)
        config = {}
        for p in self._params:                  # tune_params order
            if p.ident in err.config:
                raw = err.config[p.ident]
                config[p.name] = raw if p.kind == "int" else p.values[raw]
        hint = err.hint
        if hint == OVERFLOW_HINT and origin and origin.startswith("restriction"):
            hint = ("beast's integers are 64-bit, Kernel Tuner's are Python's; beast evaluates a "
                    "restriction in Python where it can tell from the parameters' values that it "
                    "may need more, and could not tell here")
        return EvaluationError(f"{origin or 'Kernel Tuner space'}: {message}", hint=hint,
                               config=config)

    @property
    def iterators(self) -> tuple:
        """The tunable parameters' names, in ``tune_params`` order (the output columns)."""
        return tuple(p.name for p in self._params)

    @property
    def tune_params(self) -> dict:
        """The tunable parameters and their values, as given (duplicates dropped)."""
        return {p.name: list(p.values) for p in self._params}

    @property
    def python_restrictions(self) -> tuple:
        """Labels of the restrictions evaluated in Python (not compiled into the enumerator)."""
        return tuple(c.label for c in self._checks)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype([(p.name, p.dtype) for p in self._params])

    def _decode(self, raw: np.ndarray) -> np.ndarray:
        out = np.empty(len(raw), dtype=self.dtype)
        for p in self._params:
            column = raw[p.ident]
            out[p.name] = column if p.kind == "int" else p.table[column]
        return out

    def _keep(self, rows: np.ndarray) -> np.ndarray:
        names = [p.name for p in self._params]
        mask = np.ones(len(rows), dtype=bool)
        for i, row in enumerate(rows.tolist()):
            config = dict(zip(names, row))
            mask[i] = all(check(config) for check in self._checks)
        return rows[mask]

    def iterate(self, chunk_size: int = 65536, backend: str | None = None, threads: int | None = None):
        """Yield the survivors, with the user's values, as NumPy structured arrays of at most
        ``chunk_size`` rows, in order."""
        with self._user_errors():
            for raw in super().iterate(chunk_size, backend=backend, threads=threads):
                rows = self._decode(raw)
                if self._checks:
                    rows = self._keep(rows)
                if len(rows):
                    yield rows

    def stats(self, backend: str | None = None, threads: int | None = None, values: bool = True):
        """:meth:`beast.Space.stats` in the user's terms: parameters by their names and values,
        restrictions by how they were written; the restrictions evaluated in Python come last
        (depth: after every loop), each evaluated on what the ones before it kept, and the
        survivors are Kernel Tuner's."""
        from ..explore.stats import Condition
        with self._user_errors():
            st = super().stats(backend=backend, threads=threads, values=values)
        by_ident = {p.ident: p for p in self._params}
        for lv in st.levels:
            lv.iterator = by_ident[lv.iterator].name if lv.iterator in by_ident else lv.iterator
        lines = self.module.source.splitlines()
        conditions = {}
        for name, cond in st.conditions.items():       # the label on the line that defines it
            at = next((i for i, line in enumerate(lines) if f" {name}(" in line or line.startswith(f"{name} =")), None)
            label = self._origins[at] if at is not None and at < len(self._origins) else None
            conditions[label.removeprefix("restriction ") if label else name] = cond
        if self._checks:
            with self._user_errors():
                rows = [self._decode(raw) for raw in Space.iterate(self, 1 << 16, backend=backend, threads=threads)]
            rows = np.concatenate(rows) if rows else np.empty(0, dtype=self.dtype)
            names = [p.name for p in self._params]
            configs = [dict(zip(names, row)) for row in rows.tolist()]
            keep = np.ones(len(rows), dtype=bool)
            for check in self._checks:
                live = np.flatnonzero(keep)
                passed = np.array([check(configs[i]) for i in live], dtype=bool)
                keep[live[~passed]] = False
                conditions[f"{check.label} (in Python)"] = Condition(len(st.levels), len(live), int((~passed).sum()))
            st.survivors = int(keep.sum())     # (the values were counted on self.iterate: the users')
        st.conditions = conditions
        return st

    def count(self, backend: str | None = None, threads: int | None = None) -> int:
        """How many configurations Kernel Tuner's ``Searchspace`` would keep."""
        if not self._checks:
            with self._user_errors():
                return super().count(backend=backend, threads=threads)
        return sum(len(rows) for rows in self.iterate(1 << 16, backend=backend, threads=threads))

    def sample(self, n: int, seed=None, backend: str | None = None, threads: int | None = None) -> np.ndarray:
        """``n`` distinct survivors, uniformly at random, with the user's values (see
        :meth:`beast.Space.sample`). With restrictions evaluated in Python, the compiled space's
        survivors are drawn in random order and the first ``n`` that pass them are kept; when
        ``n`` is at least the compiled space's count, every survivor, in random order."""
        with self._user_errors():
            if not self._checks:
                return self._decode(super().sample(n, seed=seed, backend=backend, threads=threads))
            return self._sample_checked(n, seed, backend, threads)

    def _sample_checked(self, n, seed, backend, threads) -> np.ndarray:
        """:meth:`sample` where restrictions are evaluated in Python."""
        from ..explore.sampling import sample_rng
        rng = sample_rng(n, seed)
        sampler = self._sampler(backend, threads)
        total, seen, parts, have = sampler.count(), set(), [], 0
        if n >= total:
            return self._keep(self._decode(sampler.rows_at(rng.permutation(total))))
        while have < n and len(seen) < total:
            want = max(2 * (n - have), 64)
            if 2 * len(seen) > total:
                ranks = rng.permutation(np.setdiff1d(np.arange(total), np.fromiter(seen, np.int64)))
            else:
                draw = rng.integers(0, total, size=2 * want)
                _, first = np.unique(draw, return_index=True)
                ranks = np.array([r for r in draw[np.sort(first)].tolist() if r not in seen], dtype=np.int64)
            ranks = ranks[:want]
            seen.update(ranks.tolist())
            rows = self._keep(self._decode(sampler.rows_at(ranks)))[:n - have]
            parts.append(rows)
            have += len(rows)
        return np.concatenate(parts) if parts else np.empty(0, dtype=self.dtype)

    def contains(self, configs, backend: str | None = None):
        """Whether configurations (with the user's values) are survivors: Kernel Tuner's
        ``is_param_config_valid`` (see :meth:`beast.Space.contains`)."""
        names = [p.name for p in self._params]
        single, table, missing = config_rows(configs, names)
        if missing:
            raise BeastError(f"a configuration has no value for {', '.join(map(repr, missing))}",
                             hint=f"give every parameter a value: {', '.join(names)}")
        raw, known = [], np.ones(len(table), dtype=bool)
        for i, values in enumerate(table):
            enc = {}
            for p, value in zip(self._params, values):
                v = _encode(p, value)
                if v is None:
                    known[i] = False
                    v = 0
                enc[p.ident] = v
            raw.append(enc)
        out = np.zeros(len(table), dtype=bool)
        if known.any():
            idx = np.flatnonzero(known)
            with self._user_errors():
                out[idx] = super().contains([raw[i] for i in idx], backend=backend)
            for i in np.flatnonzero(out):
                config = {name: _plain(v) for name, v in zip(names, table[i])}
                out[i] = all(check(config) for check in self._checks)
        return bool(out[0]) if single else out

    def to_kernel_tuner(self, backend: str | None = None, threads: int | None = None):
        """``(tune_params, list_of_tuples)``: the declared ``tune_params`` and the survivors."""
        return self.tune_params, as_tuples(self.enumerate(backend=backend, threads=threads))

    def __repr__(self):
        return (f"<beast.KernelTunerSpace {len(self._params)} parameters, "
                f"{len(self.conditions)} compiled restrictions, {len(self._checks)} in Python>")


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _encode(param, value):
    """The value the compiled space uses for a user's value of ``param`` (the value itself, or
    its index in the declared values), None when it is not one of them."""
    value = _plain(value)
    if param.kind == "int":
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value == int(value) else None
    same = [j for j, v in enumerate(param.values) if type(v) is type(value) and v == value]
    if not same:
        same = [j for j, v in enumerate(param.values) if _equal(v, value)]
    return same[0] if same else None


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values that cannot be compared are different
        return False


def from_kernel_tuner(tune_params: dict, restrictions=None, max_threads: int = 1024,
                      block_size_names=None, device=None) -> KernelTunerSpace:
    """A beast space with exactly the configurations that Kernel Tuner 1.5's
    ``Searchspace(tune_params, restrictions, max_threads, block_size_names=...)`` keeps.

    ``tune_params``: parameter name -> list of values (integers, floats, strings, booleans, ...).
    ``restrictions``: a string, a callable, or a list of strings, lambdas, functions with named
    parameters, functions taking the parameter dict, ``(function, [names])`` tuples and
    python-constraint ``Constraint`` objects. ``block_size_names`` (default ``block_size_x/y/z``)
    name the thread-block dimensions whose product must not exceed ``max_threads`` (a number).

    A restriction beast cannot compile is evaluated in Python on the configurations the others
    keep, and a warning names it. Returns a :class:`KernelTunerSpace`; ``count()``,
    ``enumerate()`` and ``iterate()`` give the user's values."""
    from ..runtime.cache import atomic_write_bytes, cache_dir, key

    generated = generate_source(tune_params, restrictions, max_threads, block_size_names)
    for label, reason in generated.untranslated:
        warnings.warn(f"beast.from_kernel_tuner: restriction {label} cannot be compiled ({reason}); "
                      "it is evaluated in Python on the configurations the other restrictions keep",
                      stacklevel=user_stacklevel())
    digest = key("kernel_tuner", generated.source)[:20]
    path = os.path.join(cache_dir("kernel_tuner"), f"kernel_tuner_{digest}.py")
    if not os.path.exists(path):
        atomic_write_bytes(path, generated.source.encode("utf-8"))
    args = {"tune_params": tune_params, "restrictions": restrictions, "max_threads": max_threads,
            "block_size_names": block_size_names}
    try:
        return KernelTunerSpace(path, generated.params, generated.checks, args, device=device,
                                origins=generated.origins)
    except BeastError as err:
        raise err.with_traceback(None) from None


def to_kernel_tuner(space: Space, backend: str | None = None, threads: int | None = None):
    """``(tune_params, list_of_tuples)`` of any beast space: each iterator's values that occur in
    a survivor (sorted), and the survivors in enumeration order."""
    return space.to_kernel_tuner(backend=backend, threads=threads)


# ---------------------------------------------------------------------------------------------
# Kernel Tuner out: its tune_kernel on beast's configurations

def _require_kernel_tuner():
    try:
        from kernel_tuner import interface
        from kernel_tuner.searchspace import Searchspace
    except ImportError:
        raise BeastError("Kernel Tuner is not installed",
                         hint="pip install 'beast-autotune[kt]'") from None
    return interface, Searchspace


class _Membership:
    """A monolithic Kernel Tuner restriction (a function of the parameter dict): True for the
    configurations of a beast space. Kernel Tuner's simulation runner and strategies that check
    restrictions get exactly beast's answer."""

    def __init__(self, names, configs):
        self.names = tuple(names)
        self.configs = frozenset(configs)

    def __call__(self, *args, **kwargs):
        # Kernel Tuner calls a restriction with the parameter dict, with keyword arguments, or
        # (python-constraint) positionally with every parameter's value
        if len(args) == 1 and isinstance(args[0], dict):
            config = tuple(args[0][n] for n in self.names)
        elif args:
            config = tuple(args)
        else:
            config = tuple(kwargs[n] for n in self.names)
        return config in self.configs


def _beast_searchspace_class(Searchspace, fixed_configs, block_size_names):
    """A Searchspace whose list comes from beast instead of Kernel Tuner's solver."""

    class BeastSearchspace(Searchspace):
        def __init__(self, tune_params, restrictions, max_threads, block_size_names=None, **options):
            if fixed_configs is not None:
                configs = fixed_configs
            else:
                space = from_kernel_tuner(tune_params, restrictions, max_threads,
                                          block_size_names=block_size_names or _block_names)
                configs = space.to_kernel_tuner()[1]
            names = list(tune_params)
            cache = {i: dict(zip(names, config)) for i, config in enumerate(configs)}
            super().__init__(None, None, None, from_cache={"tune_params": tune_params, "cache": cache},
                             **options)
            self.max_threads = max_threads
            self.block_size_names = block_size_names or _block_names
            kept = restrictions if isinstance(restrictions, list) else \
                ([] if restrictions is None else [restrictions])
            self.restrictions = list(kept)
            self.original_restrictions = list(kept)
            # as Kernel Tuner records it, for its runners' check_restrictions
            block = [n for n in self.block_size_names if n in tune_params]
            self._modified_restrictions = list(kept) + \
                ([f"{' * '.join(block)} <= {max_threads}"] if block and fixed_configs is None else [])

    _block_names = block_size_names
    return BeastSearchspace


def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params=None, space=None,
                restrictions=None, **kwargs):
    """Run ``kernel_tuner.tune_kernel`` with beast's configurations as its search space.

    Either give ``tune_params`` (and optionally ``restrictions``), as to Kernel Tuner: beast
    builds the search space in place of Kernel Tuner's solver (with the device's ``max_threads``
    and ``block_size_names`` as Kernel Tuner would use them); or give ``space``, any beast
    :class:`~beast.space.Space` or the path of a space file (loaded with :func:`beast.load`): its
    survivors, each once, in enumeration order, are the search space (Kernel Tuner's has no
    duplicates), and ``tune_params`` (if not given) are their values per parameter. Given
    ``tune_params`` must name the space's parameters, in any order (the configurations follow
    it), and hold every value the survivors take. Every other keyword argument goes to Kernel Tuner
    unchanged (``strategy``, ``cache``, ``simulation_mode``, ``lang``, ...), except
    ``strategy="beast"``: beast's default search strategy, run inside Kernel Tuner's runner,
    cache and budget (``strategy_options`` ``max_fevals``, ``time_limit``; see
    :mod:`beast.kernel_tuner.strategy`). Returns what ``kernel_tuner.tune_kernel`` returns:
    ``(results, env)``."""
    interface, Searchspace = _require_kernel_tuner()
    if isinstance(kwargs.get("strategy"), str) and kwargs["strategy"] == "beast":
        from . import strategy as kernel_tuner_strategy
        kwargs["strategy"] = kernel_tuner_strategy
    if space is None and tune_params is None:
        raise BeastError("tune_kernel needs tune_params or a beast space")
    block_size_names = kwargs.get("block_size_names")
    if space is not None:
        if restrictions is not None:
            raise BeastError("give restrictions as conditions of the beast space, not to tune_kernel")
        space_params, configs = to_kernel_tuner(_as_space(space))
        configs = list(dict.fromkeys(configs))       # each configuration once, first come first
        if tune_params is None:
            tune_params = space_params
        else:
            configs = _reordered(configs, list(space_params), tune_params)
        restrictions = [_Membership(list(tune_params), configs)]
        fixed = configs
    else:
        fixed = None
    names = list(block_size_names) if block_size_names else list(DEFAULT_BLOCK_SIZE_NAMES)
    for i, default in enumerate(DEFAULT_BLOCK_SIZE_NAMES):   # as Kernel Tuner appends them
        if len(names) < i + 1:
            names.append(default)
    cls = _beast_searchspace_class(Searchspace, fixed, names)
    with _patched(interface, "Searchspace", cls):
        return interface.tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params,
                                     restrictions=restrictions, **kwargs)


def _as_space(space) -> Space:
    """``space`` itself, or the space file at that path."""
    if isinstance(space, Space):
        return space
    if isinstance(space, (str, bytes, os.PathLike)):
        return load(space)
    raise BeastError(f"space must be a beast Space or the path of a space file, not {space!r:.60}",
                     hint="space=beast.load('spaces/gemm.py') or space='spaces/gemm.py'")


def _reordered(configs, names, tune_params) -> list:
    """``configs`` (tuples over ``names``) over the user's ``tune_params`` order, checked: the same
    names, and every value a configuration takes among the user's values."""
    given = list(tune_params)
    if set(given) != set(names):
        missing = [n for n in names if n not in given]
        extra = [n for n in given if n not in names]
        raise BeastError(f"tune_params names {given} are not the space's parameters {names}"
                         + (f": missing {missing}" if missing else "")
                         + (f"{',' if missing else ':'} not in the space {extra}" if extra else ""))
    order = [names.index(n) for n in given]
    configs = [tuple(c[i] for i in order) for c in configs]
    for j, name in enumerate(given):
        values = list(tune_params[name])
        absent = [v for v in dict.fromkeys(c[j] for c in configs) if v not in values]
        if absent:
            raise BeastError(f"tune_params[{name!r}] lacks {absent[:8]}"
                             f"{' ...' if len(absent) > 8 else ''}, taken by configurations of the "
                             f"space", hint=f"give every value the space's '{name}' takes, or "
                                            "leave tune_params out (the space's values are used)")
    return configs


@contextlib.contextmanager
def _patched(module, name, value):
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)

