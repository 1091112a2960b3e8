"""The Lua backend: run the generated LuaJIT chunk (:mod:`beast.codegen.lua`) through lupa.

``build(program)`` returns an enumerator with ``count(threads)`` and ``chunks(chunk_size, threads)``
(``threads`` is accepted and ignored: a Lua state runs one enumeration at a time). Lua writes the
rows straight into NumPy buffers (an FFI ``int64_t*`` to the array's memory), one preallocated
chunk at a time: the enumeration runs in a coroutine that yields when the buffer is full, so no
Python object is made per row, and counting writes nothing.

User functions that the printer could not translate are called back in Python (the same code
objects as the Python backend's, so the same exceptions with the same tracebacks).

Errors raised by the Lua code are tables ``{k, operands...}``; an ``xpcall`` handler adds the
current line of the innermost count/rows frame and the locals of the loop-nest frames.
:meth:`LuaEnumerator._error` replays the failed operation in Python and passes the exception to the
Python backend's :func:`~beast.runtime.errors.map_exception` from a frame whose locals are the Lua
frame's variables, so message, file, line, column and configuration are the Python backend's;
errors inside translated user functions carry the user's line and columns themselves.
"""
from __future__ import annotations

import numpy as np

from ..codegen.lua import print_lua
from ..errors import BeastError, EvaluationError
from ..ir.literals import check_integer_width
from .registry import MAX_CHUNK_ROWS, check_chunk_size
from .errors import (COMPLEX_POW, ComplexPowerError, OVERFLOW_HINT as OVERFLOW_HINT_64, ROLE_NAMES, explain, map_exception, overflow_position)
from .prefix_walks import PrefixWalks
from .python import compile_functions, iterator_values

NAME = "lua"
LIMIT = 2 ** 53
NEGZERO = "_b_negzero"     # the Lua side's mark of a -0.0 for Python (the prelude's _b_k0, the handler's keep)

OVERFLOW_HINT = ("integers are 64-bit in every backend, and the Lua backend computes them exactly "
                 "within +-2**53 (LuaJIT numbers are doubles): a larger value is reported, never rounded")
_FRAME = "<beast lua frame>"
_RAISE = compile("raise _b_exc", _FRAME, "exec")
NONINT_HINT = "iterator values are integers; use // for integer division"

_DRIVER = r"""
local count, rows, parts = ...
local ffi = require("ffi")
local main = {[count] = true, [rows] = true}
for _, f in ipairs(parts) do main[f] = true end
-- lupa hands a Lua -0.0 to Python as the int 0: the handler marks it (read back by _signed)
local function keep(v) if v == 0 and 1 / v < 0 then return "_b_negzero" end return v end
local function handler(e)
  -- the innermost frame of the loop nest gives the line; it and the frames around it the locals
  if type(e) == "table" then e[2], e[3] = keep(e[2]), keep(e[3]) end
  local info = {err = e}
  local vars = {}
  local level = 2
  while true do
    local ar = debug.getinfo(level, "fl")
    if not ar then break end
    if main[ar.func] then
      if info.line == nil then info.line = ar.currentline end
      local i = 1
      while true do
        local name, value = debug.getlocal(level, i)
        if not name then break end
        if vars[name] == nil then vars[name] = keep(value) end
        i = i + 1
      end
      info.vars = vars
    end
    level = level + 1
  end
  if type(e) ~= "table" then info.trace = debug.traceback(tostring(e), 2) end
  return info
end
local function run_count()
  return xpcall(count, handler)
end
local function start_rows(cap)
  local co = coroutine.create(function(buf) return xpcall(rows, handler, buf, cap) end)
  return function(addr)
    return coroutine.resume(co, ffi.cast("int64_t *", addr))
  end
end
return run_count, start_rows
"""


def _luajit():
    """lupa's LuaJIT module (the generated code needs LuaJIT's FFI and goto)."""
    try:
        from lupa import luajit21 as module
    except ImportError:  # pragma: no cover - depends on the lupa build
        from lupa import luajit20 as module
    return module


try:
    _LUAJIT = _luajit()
except ImportError as _exc:  # pragma: no cover - get_backend() then says "not available"
    raise ModuleNotFoundError("the Lua backend needs lupa built with LuaJIT (pip install lupa)",
                              name=__name__) from _exc


#: iterations of a loop between two calls of :func:`_poll`
TICKS = 1 << 16


def _poll():
    """Called by every iterating loop of the Lua nest each :data:`TICKS` iterations: Python runs
    its signal handlers as the call starts, so a KeyboardInterrupt (Ctrl-C, or beast's SIGTERM)
    raised there reaches the Lua code as an error, and :meth:`LuaEnumerator._raise` raises it."""
    return TICKS


def _new_runtime():
    rt = _LUAJIT.LuaRuntime(unpack_returned_tuples=True, register_eval=False)
    # no fused multiply-add (one rounding where Python rounds twice): off by default in LuaJIT
    # since 2.1's rolling releases of 2023, on by default on arm64 before; a build without the
    # flag refuses it, hence pcall
    rt.execute("pcall(jit.opt.start, '-fma')")
    return rt


class _Bad:
    """A non-integer value from a Python fallback, passed through Lua untouched (as userdata)."""

    def __init__(self, value):
        self.value = value


class LuaEnumerator(PrefixWalks):
    """Runs the generated Lua chunk."""

    def __init__(self, program, source=None, force_python=()):
        self.program = program
        # a constant past 64 bits is refused at its literal before anything runs, with the words and
        # the caret of the C and Python backends (past 2**53 alone it is Lua's overflow when reached)
        check_integer_width(program, 64, "Lua")
        self.source = source or print_lua(program, force_python)
        self.dtype = np.dtype([(c, np.int64) for c in program.columns])
        self.ncols = len(program.columns)
        self.lua = _new_runtime()
        self.stored = {}
        self._next_id = 0
        pyfuncs = compile_functions(program) if self.source.fallbacks else {}
        wrappers = {ident: self._wrapper(ident, kind, pyfuncs[ident])
                    for ident, kind in self.source.fallbacks.items()}
        self._tally = self.lua.table_from([0] * len(program.tallies))    # beast stats
        self._pre = self.lua.table()     # sampling: the prefix PrefixValue reads (beast.ir.prefix)
        runtime = self.lua.table_from({"py": self.lua.table_from(wrappers), "tally": self._tally,
                                       "pre": self._pre, "poll": _poll})
        try:
            count, rows, parts = self.lua.execute(self.source.text, runtime)
            self._run_count, self._start_rows = self.lua.execute(_DRIVER, count, rows, parts)
        except Exception as exc:  # noqa: BLE001 - LuaJIT's limits (200 locals, 60 upvalues, ...)
            raise BeastError(f"the Lua backend cannot compile space '{program.name}': LuaJIT rejects the "
                             f"generated code ({str(exc).splitlines()[0]})",
                             hint="the C and Python backends have no such limit") from None

    # -- Python fallbacks (user functions the printer could not translate)
    def _store(self, exc):
        self._next_id += 1
        self.stored[self._next_id] = exc
        return self._next_id

    def _wrapper(self, ident, kind, func):
        info = self.program.funcs[ident]
        types = [self.program.types.get(a, "num") for a in info.node_args]
        types = [t if t in ("int", "float", "num", "bool", "str") else "num" for t in types]
        lua = self.lua

        def convert(args):
            out, i = [], 0
            for t in types:
                v = args[i]
                floating = t == "float" or t == "num" and args[i + 1]
                i += 2 if t == "num" else 1
                if v == NEGZERO:        # marked by the prelude's _b_k0; an integer held as -0.0 is 0
                    v = -0.0 if floating else 0
                elif floating:
                    v = float(v)
                out.append(v)
            return out

        if kind == "cond":
            def call(*args):
                try:
                    return bool(func(*convert(args))), None
                except Exception as exc:  # noqa: BLE001 - mapped by _error
                    return None, self._store(exc)
        elif kind == "deferred":
            def call(*args):
                try:
                    vals = iterator_values(func(*convert(args)))
                    if vals.__class__ is range:
                        n = len(vals)
                        if n and (abs(vals[0]) >= LIMIT or abs(vals[-1]) >= LIMIT):
                            raise OverflowError("an iterator value does not fit in the Lua backend's "
                                                "exact integers (+-2**53)")
                        return vals.start, vals.step, n, None, -1, None
                    values, bad = _python_values(vals)
                    return 0, 0, len(values), lua.table_from(values), bad, None
                except Exception as exc:  # noqa: BLE001
                    return 0, 0, 0, None, -1, self._store(exc)
        else:
            def call(*args):
                values, bad, err = [], -1, None
                try:
                    for v in func(*convert(args)):
                        if v.__class__ is bool:
                            v = int(v)
                        if v.__class__ is not int:
                            bad = len(values)
                            values.append(_Bad(v))
                            break
                        if abs(v) >= LIMIT:
                            raise OverflowError("an iterator value does not fit in the Lua backend's "
                                                "exact integers (+-2**53)")
                        values.append(v)
                except Exception as exc:  # noqa: BLE001
                    err = self._store(exc)
                return len(values), lua.table_from(values), bad, err
        return call

    # -- errors
    def _env(self, lvars):
        """The Python values of the variables of the count/rows frame (name -> value)."""
        env = {}
        if lvars is None:
            return env
        types = self.program.types
        for name, lua in self.source.names.items():
            value = _signed(lvars[lua])
            if value is None:
                continue
            ty = types.get(name)
            if ty == "float" or ty == "num" and lvars["_b_f_" + lua]:
                if isinstance(value, int):
                    value = float(value)
            elif value.__class__ is float:      # an integer that LuaJIT holds as -0.0 (-x for x = 0)
                value = int(value)
            env[name] = value
        return env

    def _map(self, exc, node, bound, env):
        """map_exception of ``exc`` as if raised by the Python backend's generated line for
        ``node`` with ``bound`` loops bound and the frame locals ``env``."""
        exc = exc if exc is not None else EvaluationError("evaluation failed")
        namespace = dict(env)
        namespace["_b_exc"] = exc
        line_nodes = {1: (node, bound)} if node is not None else {}
        try:
            exec(_RAISE, namespace)
        except BaseException as raised:  # noqa: BLE001 - it is the exception raised just above
            return map_exception(raised, _FRAME, line_nodes, self.program.loop_order)
        return exc  # pragma: no cover

    def _error(self, info):
        err = info["err"]
        line = info["line"]
        entry = self.source.line_nodes.get(line) if line is not None else None
        node, bound = entry if entry is not None else (None, 0)
        env = self._env(info["vars"])
        if not hasattr(err, "keys"):   # not one of ours: a Lua runtime error (a bug)
            trace = info["trace"] or str(err)
            return BeastError(f"internal error in the Lua backend: {trace}")
        k = err[1]
        site = self.source.sites[k] if isinstance(k, int) and 0 < k < len(self.source.sites) else None
        a, b, fa, fb, extra = _signed(err[2]), _signed(err[3]), err[4], err[5], err[6]
        if site is None:
            return self._map(None, node, bound, env)
        kind = site.kind
        if kind == "count":             # the space's, not one configuration's
            return EvaluationError("the number of configurations does not fit in the Lua backend's exact "
                                   "integers (2**53)", hint=OVERFLOW_HINT)
        if kind == "python":
            return self._map(self.stored.pop(a, None), node, bound, env)
        if kind == "nonint":
            value = a.value if isinstance(a, _Bad) else (float(a) if fa and isinstance(a, (int, float)) else a)
            var = site.op
            env[var] = value
            return self._map(EvaluationError(f"iterator '{var}' yields a non-integer value {value!r}",
                                             hint=NONINT_HINT), node, bound, env)
        if kind == "none":
            return self._map(EvaluationError("an @iterator function returned None",
                                             hint="return a scalar, a list or a range on every path"),
                             node, bound, env)
        if kind == "overflow" or extra == "overflow":
            value = a if isinstance(a, (int, float)) else None
            hint = OVERFLOW_HINT_64 if value is not None and abs(value) >= 2 ** 63 else OVERFLOW_HINT
            if site.where is not None:
                return self._user_error("integer overflow", site, bound, env, hint)
            what = ROLE_NAMES.get(node.role, node.role) if node is not None else None
            message = f"integer overflow in {what} '{node.name}'" if node is not None else "integer overflow"
            return self._map(EvaluationError(message, *overflow_position(node, env), hint=hint), node, bound, env)
        if extra == "complex":
            if site.where is not None:
                return self._user_error(COMPLEX_POW, site, bound, env)
            return self._map(ComplexPowerError(), node, bound, env)
        exc = _replay(site, a, b, fa, fb)
        if site.where is not None:
            return self._user_error(explain(exc), site, bound, env)
        return self._map(exc, node, bound, env)

    def _user_error(self, message, site, bound, env, hint=None):
        """An error at an operation of a translated user function (the Python backend takes the
        same line and columns from the user frame's co_positions)."""
        filename, lineno, col, end = site.where
        config = {name: env[name] for name in self.program.loop_order[:bound] if name in env}
        return EvaluationError(message, filename, lineno, col, end, hint=hint, config=config)

    def _raise(self, info):
        err = info["err"]
        if isinstance(err, BaseException) and not isinstance(err, Exception):
            raise err               # Ctrl-C or SIGTERM, raised in Python while Lua ran (_poll)
        raise self._error(info).with_traceback(None) from None

    # -- the enumerator interface
    def count(self, threads=None) -> int:
        ok, result = self._run_count()
        if not ok:
            self._raise(result)
        return int(result)

    def tally(self, threads=None):
        """(survivors, counters) of an instrumented program (:mod:`beast.ir.instrument`)."""
        slots = range(1, len(self.program.tallies) + 1)
        for i in slots:
            self._tally[i] = 0
        n = self.count(threads)
        return n, [int(self._tally[i]) for i in slots]

    def chunks(self, chunk_size=65536, threads=None):
        """NumPy structured arrays of at most ``chunk_size`` rows, in enumeration order."""
        chunk_size = min(check_chunk_size(chunk_size), MAX_CHUNK_ROWS)
        ncols = max(1, self.ncols)
        step = self._start_rows(chunk_size * ncols)
        while True:
            arr = np.empty(chunk_size, dtype=self.dtype) if self.ncols else None
            addr = arr.ctypes.data if arr is not None else 0
            res = step(addr)
            if not isinstance(res, tuple):
                res = (res,)
            if not res[0]:   # the coroutine itself failed (outside xpcall)
                raise BeastError(f"internal error in the Lua backend: {res[1:]}")
            if isinstance(res[1], bool):
                done, value = True, res[2]
                if not res[1]:
                    self._raise(value)
            else:
                done, value = False, res[1]
            nrows = int(value) // ncols
            if nrows:
                if arr is None:
                    yield np.empty(nrows, dtype=self.dtype)
                elif nrows == chunk_size:
                    yield arr
                else:
                    yield arr[:nrows].copy()
            if done:
                return

    # -- sampling (beast.ir.prefix): programs whose outer loops are bound to a given prefix
    def _set_prefix(self, prefix):
        for i, v in enumerate(prefix):
            self._pre[i + 1] = int(v)


def _python_values(vals):
    """Values of a deferred iterator's result for a Lua table: ints, then (at most) one bad value."""
    out = []
    for v in vals:
        if v.__class__ is bool:
            v = int(v)
        if v.__class__ is not int:
            out.append(_Bad(v))
            return out, len(out) - 1
        if abs(v) >= LIMIT:
            raise OverflowError("an iterator value does not fit in the Lua backend's exact "
                                "integers (+-2**53)")
        out.append(v)
    return out, -1


def _signed(v):
    """A value from the Lua handler, its mark of -0.0 read back as the float."""
    return -0.0 if v == NEGZERO else v


def _typed(x, flag):
    if isinstance(x, bool) or x is None:
        return x
    return float(x) if flag else int(x) if isinstance(x, float) and x.is_integer() else x


def _replay(site, a, b, fa, fb):
    """Python's own exception for the failed operation (same class, same text)."""
    kind = site.kind
    try:
        if kind == "op":
            x, y = _typed(a, fa), _typed(b, fb)
            {"/": lambda: x / y, "//": lambda: x // y, "%": lambda: x % y,
             "**": lambda: x ** y}[site.op]()
        elif kind == "rstep":
            range(0, 1, 0)
        elif kind == "rbound":
            range(float(a) if a is not None else 0.5)
        elif kind == "index":       # (the index is a, its float flag fa: prelude _b_idx, _b_setidx)
            if fa:
                [][float(a)]
            [][0]
        elif kind == "setindex":
            if fa:
                x = []
                x[float(a)] = 0
            x = []
            x[0] = 0
        elif kind == "empty":
            {"min": min, "max": max}[site.op]([])
        elif kind == "conv":
            int(float(a))
        elif kind == "missing":
            raise NameError(f"name '{site.op}' is not defined")
    except Exception as exc:  # noqa: BLE001 - the exception is the point
        return exc
    return ArithmeticError(f"{kind} {site.op or ''}".strip())


def build(program, threads=None):
    return LuaEnumerator(program)


def render(program) -> dict:
    """The generated source, for people to read (``beast compile``): file name -> text."""
    return {f"{program.name}_enumerator.lua": print_lua(program).full_text()}
