"""Tabulation: a user function that cannot be translated is run in Python at compile time over the
finite domains of its arguments (supersets of the values the loop nest can pass), and its results
become a table the target looks up. Conditions are ignored when computing domains, so a table
may hold entries the enumeration never reaches; errors a call raised are kept and reported only
when the configuration is reached. Tabulated functions are assumed to be pure."""
from __future__ import annotations

import itertools
import os
import struct
from beast.ir.record import record

from ..errors import frame_position
from ..expr.nodes import evaluate
from ..expr.sequences import (CallSeq, DivisorSeq, RangeSeq, ScalarSeq, SetOpSeq, SolveSeq, ValuesSeq, free_vars)
from .nest import Let, Loop, walk_statements
from .sites import ExcSite

MAX_VALUES = 1 << 24         # values one call of a closure/deferred function may produce
TABLE_ENTRIES = 1 << 16      # argument tuples a tabulated function may have
TABLE_VALUES = 1 << 20       # values all entries of one table may hold
DOMAIN_EVALS = 1 << 20       # evaluations spent on one node's value superset
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INTISH = ("int", "bool")


class Untabulatable(Exception):
    """A function that cannot be tabulated (the message says why)."""


def float_bits(v: float) -> int:
    return struct.unpack("<q", struct.pack("<d", v))[0]


@record
class Table:
    """A tabulated function: ``entries`` are ``(key, (kind, payload, error))`` sorted by key, the key
    being the arguments as 64-bit integers (a float as its bits; a 'num' argument as a tag, then
    its value or bits)."""
    info: object
    ptypes: list
    entries: list


class Domains:
    """Supersets of the values every node can take, computed bottom-up in Python (None: too many
    or unknown). Conditions are ignored, so these are supersets of what the loop nest reaches;
    values the nest cannot hold are left out (:func:`_storable`)."""

    def __init__(self, program, pyfuncs):
        self.program = program
        self.pyfuncs = pyfuncs
        self.defs = {}
        for st in walk_statements(program.body):
            if isinstance(st, Loop):
                self.defs[st.var] = ("seq", st.seq)
            elif isinstance(st, Let):
                self.defs[st.var] = ("expr", st.expr)
        self.memo = {}

    def values(self, name):
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = None          # cycles cannot happen; this also caps recursion
        if name not in self.defs:
            return None
        kind, d = self.defs[name]
        deps = free_vars(d)
        doms = [self.values(x) for x in deps]
        if any(x is None for x in doms):
            return None
        size = 1
        for x in doms:
            size *= len(x)
        if size > DOMAIN_EVALS:
            return None
        out = {}
        for combo in itertools.product(*doms):
            env = dict(zip(deps, combo))
            try:
                if kind == "expr":
                    vals = [evaluate(d, env, self.pyfuncs)]
                else:
                    vals = [int(v) for v in self.seq_values(d, env) if type(v) in (int, bool)]
            except Exception:  # noqa: BLE001 - such a configuration stops the enumeration there
                continue
            for v in vals:
                if not _storable(v):        # the nest stops there (a complex power, an overflow)
                    continue
                out[(1, float_bits(v)) if type(v) is float else (0, v)] = v
                if len(out) > DOMAIN_EVALS:
                    self.memo[name] = None
                    return None
        self.memo[name] = list(out.values())
        return self.memo[name]

    def seq_values(self, seq, env):
        if isinstance(seq, RangeSeq):
            return range(*(evaluate(x, env) for x in seq.exprs()))
        if isinstance(seq, ValuesSeq):
            return seq.values
        if isinstance(seq, ScalarSeq):
            return [evaluate(seq.value, env)]
        if isinstance(seq, SolveSeq):
            if not evaluate(seq.guard, env):
                return []
            v = evaluate(seq.value, env)
            return [v] if v in self.seq_values(seq.base, env) else []
        if isinstance(seq, CallSeq):
            result = self.pyfuncs[seq.func](*(evaluate(a, env) for a in seq.args))
            if seq.closure:
                return _yielded(result)
            kind, vals = classify_return(result)
            return vals if kind in ("values", "range") else []
        if isinstance(seq, DivisorSeq):
            n = evaluate(seq.n, env)
            return [d for d in range(evaluate(seq.base.start, env), evaluate(seq.base.stop, env))
                    if n == 0 or (d != 0 and n % d == 0)]
        if isinstance(seq, SetOpSeq):
            from ..lang.vocabulary import set_operation
            return set_operation(seq.op, list(self.seq_values(seq.left, env)),
                                 list(self.seq_values(seq.right, env)))
        return []


def _yielded(gen) -> list:
    """The values a closure yields (at most MAX_VALUES), those before an error included: the nest's
    loop sees them before the error is raised, so a function of them may be called with them."""
    out = []
    try:
        for v in itertools.islice(gen, MAX_VALUES):
            out.append(v)
    except Exception:  # noqa: BLE001 - the error is the nest's to raise, after these values
        pass
    return out


def _storable(v) -> bool:
    """Whether a node can hold ``v`` in the loop nest: a float or a 64-bit integer. Any other value
    (a complex power, an integer past 64 bits) stops the enumeration where it is computed, before
    a function is called with it, so it is left out of the domains."""
    return type(v) is float or (type(v) in (int, bool) and INT64_MIN <= v <= INT64_MAX)


def classify_return(result):
    """What the Python backend's iterator_values makes of a deferred function's return value."""
    cls = result.__class__
    if cls is range:
        return "range", result
    if cls is list or cls is tuple:
        return "values", list(result)
    if cls is int or cls is bool:
        return "values", [int(result)]
    if result is None:
        return "none", None
    if cls is float:
        return "values", [result]
    try:
        return "values", list(result)
    except TypeError:
        return "badret", f"an @iterator function returned a {cls.__name__}, not a scalar, list or range"


def user_location(exc, filename):
    """Where an exception raised in user code happened, as map_exception finds it."""
    tb = exc.__traceback__
    user_tb = None
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if os.path.isfile(fname) and "beast" + os.sep + "runtime" not in fname \
                and os.path.abspath(fname) != os.path.abspath(__file__):
            user_tb = tb
        tb = tb.tb_next
    if user_tb is None:
        return filename, None, None, None
    return frame_position(user_tb)


class Tabulator:
    """Tabulate user functions of one program (``pyfuncs()``: the functions compiled in Python)."""

    def __init__(self, program, pyfuncs):
        self.program = program
        self.pyfuncs = pyfuncs
        self._domains = None

    def domains(self):
        if self._domains is None:
            self._domains = Domains(self.program.origin or self.program, self.pyfuncs())
        return self._domains

    def key_of(self, value, type_):
        if type_ in INTISH:
            if type(value) not in (int, bool) or not INT64_MIN <= value <= INT64_MAX:
                raise Untabulatable(f"an argument value {value!r} that is not a 64-bit integer")
            return [int(value)]
        if type_ == "float":
            if type(value) is not float:
                raise Untabulatable(f"an argument value {value!r} that is not a float")
            return [float_bits(value)]
        if type(value) is float:
            return [1, float_bits(value)]
        if type(value) in (int, bool) and INT64_MIN <= value <= INT64_MAX:
            return [0, int(value)]
        raise Untabulatable(f"an argument value {value!r} that is not a number")

    def tabulate(self, info, ptypes) -> Table:
        """The table of ``info``'s function over the finite domains of its arguments (``ptypes``:
        their static types); raises :class:`Untabulatable` when it cannot be made."""
        pyfuncs = self.pyfuncs()
        if pyfuncs is None or info.ident not in pyfuncs:
            raise Untabulatable("the Python function is not available")
        func = pyfuncs[info.ident]
        doms = []
        for arg in info.node_args:
            d = self.domains().values(arg)
            if d is None:
                raise Untabulatable(f"the values of '{arg}' are not finite or too many to list")
            doms.append(d)
        size = 1
        for d in doms:
            size *= len(d)
        if size > TABLE_ENTRIES:
            raise Untabulatable(f"its arguments take {size} combinations of values "
                                 f"(at most {TABLE_ENTRIES} are tabulated)")
        entries = []
        nvalues = 0
        for combo in itertools.product(*doms):
            key = []
            for v, t in zip(combo, ptypes):
                key += self.key_of(v, t)
            outcome = self.run(info, func, combo)
            if outcome[0] in ("values",):
                nvalues += len(outcome[1])
                if nvalues > TABLE_VALUES:
                    raise Untabulatable(f"its results hold more than {TABLE_VALUES} values")
            entries.append((key, outcome))
        entries.sort(key=lambda kv: kv[0])
        return Table(info, list(ptypes), entries)

    def run(self, info, func, args):
        """(kind, payload, error): 'values' [python values], 'range' (a, b, c), 'none', 'badret'
        message, 'truth' bool; the error is an :class:`~beast.ir.sites.ExcSite` or None."""
        err = None
        values = []
        try:
            if info.role == "condition":
                return ("truth", bool(func(*args)), None)
            result = func(*args)
            if info.closure:
                for v in result:
                    values.append(v)
                    if len(values) > MAX_VALUES:
                        raise Untabulatable("a call yields too many values")
                return ("values", values, None)
            kind, payload = classify_return(result)
            if kind == "range":
                return ("range", (payload.start, payload.stop, payload.step), None)
            return (kind, payload, None)
        except Untabulatable:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded, raised when the configuration is reached
            filename, lineno, col, end = user_location(exc, info.filename)
            err = ExcSite(exc.with_traceback(None), filename, lineno, col, end)
        return ("values" if info.role != "condition" else "truth", values if info.role != "condition" else False,
                err)
