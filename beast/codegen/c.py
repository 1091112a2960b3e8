"""Print the loop-nest IR as C99 with Python's semantics (the C backend's enumerator).

What the printed file holds, in order:

- a prelude of helpers: 64-bit integer arithmetic with Python's ``//``, ``%`` and ``**`` and
  overflow detection (``__builtin_*_overflow``), CPython's float floor division, modulo and power,
  exact int/float comparisons, a tagged number (``bn_num``) for values whose static type is
  ``num`` (int or float), value sequences and the set operations;
- the user's @iterator/@condition functions that inlining left as calls: translated to C
  (integers, floats, if/elif/else, while, for over range/lists, break/continue, return, yield,
  local lists of integers, all/any/sum/min/max/len/in over them), or, where a body uses
  something that does not translate, *tabulated*: run in Python at compile time over the finite
  domains of its arguments and printed as a sorted lookup table;
- ``bn_walk(w)``: the loop nest itself, one function for counting and for writing rows
  (``w->rows``), with hooks for the runtime's work splitting (``bn_claim``/``bn_end`` before and
  after the outer loops, see :func:`claim_depths`).

Errors never wrap: every operation that Python would refuse (division by zero, ``range()`` step
zero, a non-integer iterator value) and every 64-bit overflow stores a *site* (which statement or
which user operation), a *kind* (:data:`KINDS`) and the bound loop values in ``w``, and the walk
returns 1; the runtime turns the site into the same :class:`~beast.errors.EvaluationError` that the
Python backend raises. The printer knows nothing of compilers or threads.

Where C cannot be Python (documented, and tested where it matters):

- 64-bit integers: every ``+ - * ** -x abs << sum`` is checked, in lets, conditions, sequence
  bounds and function bodies alike ("integer overflow"); the Python backend checks only the final
  value of integer lets, so an intermediate overflow whose let value fits, or an overflow inside a
  condition or a function body, is an error in C only.
- ``int / int`` converts both operands to double first (Python rounds the exact quotient when an
  operand exceeds 2**53); a negative float raised to a fractional power is an error (Python makes a
  complex number); NaNs are never equal to each other in union/intersection/difference.
- A closure iterator runs to its end (at most 2**24 values) before its loop starts: the same values
  and errors, in the same order, unless its loop is left early by a breaking check.
- In a translated function a local read before any assignment is 0 (Python: UnboundLocalError).
  Tabulated functions are assumed to be pure (the same arguments give the same result).
- Counting a nest of loops that only multiply (no checks) gives exactly the rows-mode result, errors
  included: lengths outside in, each sequence at the first value of the loops around it.
"""
from __future__ import annotations

import ast
import builtins
import itertools
import math
import os
import re
import struct
from dataclasses import dataclass

from ..errors import BeastError, SpaceError, frame_position
from ..expr import (BINOPS, COMPARES, BinOp, BoolOp, Call, CallSeq, Compare, Const, DivisorSeq, Expr,
                    Not, RangeSeq, ScalarSeq, Select, SetOpSeq, SolveSeq, UnOp, ValuesSeq, Var,
                    evaluate, free_vars)
from .exprs import ATOM, ExprPrinter
from ..ir import Check, Emit, Let, Loop, Program, pure_nest, walk_statements
from .python import PyExpr

# ---------------------------------------------------------------------------------------------
# Error kinds shared with the runtime (the C enum is generated from this tuple).

KINDS = ("overflow", "zero_floordiv", "zero_mod", "zero_truediv", "zero_ffloordiv", "zero_fmod",
         "zero_ftruediv", "zero_pow", "fpow_overflow", "complex_pow", "range_step_zero",
         "range_not_int", "non_integer", "returned_none", "bad_return", "exception", "table_miss",
         "no_memory", "list_index", "tuple_index", "empty_min", "empty_max", "float_inf_to_int",
         "float_nan_to_int", "too_many_values", "count_overflow", "negative_shift")
KIND = {name: i + 1 for i, name in enumerate(KINDS)}

MAX_CLAIM_DEPTH = 3          # work items are split at most this many loops deep
MAX_VALUES = 1 << 24         # values one call of a closure/deferred function may produce
TABLE_ENTRIES = 1 << 16      # argument tuples a tabulated function may have
TABLE_VALUES = 1 << 20       # values all entries of one table may hold
DOMAIN_EVALS = 1 << 20       # evaluations spent on one node's value superset

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
CTYPE = {"int": "int64_t", "bool": "int64_t", "float": "double", "num": "bn_num"}
ZERO = {"int": "0", "bool": "0", "float": "0.0", "num": "BN_NUM0"}
INTISH = ("int", "bool")
NUMERIC = ("int", "bool", "float", "num")
CMP_CODE = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5}

# Tests may set this to exercise tabulation on functions that translate.
FORCE_TABULATE = False


# ---------------------------------------------------------------------------------------------
# Sites: where an error can happen. The runtime maps (site, kind) to the user-facing error.

@dataclass
class NodeSite:
    """An IR statement (a derived variable, a condition, an iterator's sequence): errors name the
    node; ``lets`` are the lets in scope before it (to recompute the environment)."""
    node: object
    stmt: object
    lets: tuple = ()


@dataclass
class LoopValueSite:
    """A loop's values: a non-integer value or a deferred function that returned no sequence."""
    node: object
    var: str


@dataclass
class UserSite:
    """An operation inside a translated user function (file, line and columns of its source)."""
    filename: str
    lineno: int
    col: int | None
    end: int | None


@dataclass
class ExcSite:
    """An exception that a tabulated function raised for some arguments, already located."""
    exc: BaseException
    filename: str | None
    lineno: int | None
    col: int | None
    end: int | None


@dataclass
class TableSite:
    """Arguments outside a tabulated function's computed domain (an internal error)."""
    name: str


@dataclass
class CSource:
    """The printed enumerator and what the runtime needs to explain its errors."""
    text: str
    sites: list                 # site id -> NodeSite | LoopValueSite | UserSite | ExcSite | TableSite
    objects: list               # Python values a tabulated function produced that C cannot hold
    columns: tuple
    claim_depth: int            # deepest claim point (-1: the walk is one work item)
    tabulated: tuple = ()       # functions printed as tables
    translated: tuple = ()      # functions translated to C


# ---------------------------------------------------------------------------------------------
# Literals and names

def c_int(v: int) -> str:
    if not INT64_MIN <= v <= INT64_MAX:
        raise OverflowError(v)
    if v == INT64_MIN:
        return "INT64_MIN"
    if -(1 << 31) < v < (1 << 31):
        return str(v)
    return f"INT64_C({v})"


def c_float(v: float) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = repr(v)
    return text if text[0] != "-" else f"({text})"


def c_comment(text: str) -> str:
    text = text.replace("*/", "* /").replace("??", "? ?")
    text = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)
    return f"/* {text} */"


def _mangle(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", lambda m: f"_{ord(m.group()):x}_", name)


def _float_bits(v: float) -> int:
    return struct.unpack("<q", struct.pack("<d", v))[0]


def _join(a, b):
    """The type of a variable that holds values of types a and b."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if a in INTISH and b in INTISH:
        return "int"
    if a in NUMERIC and b in NUMERIC:
        return "num"
    raise _Untranslatable(None, f"a variable that holds both {a} and {b} values")


def _select_type(a, b):
    """static_type's rule for select(): int/bool parts give int (bool only if both are bool)."""
    if a in INTISH and b in INTISH:
        return "bool" if a == b == "bool" else "int"
    if a == b == "float":
        return "float"
    if a in NUMERIC and b in NUMERIC:
        return "num"
    raise _Untranslatable(None, f"a choice between {a} and {b} values")


class _Untranslatable(Exception):
    def __init__(self, node, reason):
        super().__init__(reason)
        self.node, self.reason = node, reason


class _Untabulatable(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The C prelude: Python's arithmetic on 64-bit integers and doubles.

_PRELUDE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define BN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BN_INLINE static inline
#define BN_HOT static inline __attribute__((always_inline))
#define BN_UNUSED __attribute__((unused))

@KINDS@

/* A number whose static type is unknown: f = 0 int (i), 1 float (d), 2 a Python object (index i). */
typedef struct { int f; int64_t i; double d; } bn_num;
#define BN_NUM0 {0, 0, 0.0}
BN_HOT bn_num bn_ni(int64_t i) { bn_num r; r.f = 0; r.i = i; r.d = 0.0; return r; }
BN_HOT bn_num bn_nf(double d) { bn_num r; r.f = 1; r.i = 0; r.d = d; return r; }
BN_HOT double bn_tod(bn_num a) { return a.f ? a.d : (double)a.i; }
BN_INLINE int bn_truth(bn_num a) { return a.f == 0 ? a.i != 0 : (a.f == 1 ? a.d != 0.0 : 1); }
BN_INLINE int64_t bn_dbits(double d) { int64_t b; memcpy(&b, &d, sizeof b); return b; }
BN_INLINE double bn_bitsd(int64_t b) { double d; memcpy(&d, &b, sizeof d); return d; }

/* ---- integers: Python's // and % (floor), ** (exact), shifts; overflow is an error */
BN_HOT int bn_floordiv_ii(int64_t *r, int64_t a, int64_t b) {
    if (BN_UNLIKELY(b == 0)) return BN_K_ZERO_FLOORDIV;
    if (__builtin_expect((((uint64_t)a | (uint64_t)b) >> 32) == 0, 1)) {   /* both in [0, 2**32) */
        *r = (int64_t)((uint32_t)a / (uint32_t)b); return 0;
    }
    if (BN_UNLIKELY(b == -1)) { if (a == INT64_MIN) return BN_K_OVERFLOW; *r = -a; return 0; }
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    *r = q; return 0;
}
BN_HOT int bn_mod_ii(int64_t *r, int64_t a, int64_t b) {
    if (BN_UNLIKELY(b == 0)) return BN_K_ZERO_MOD;
    if (__builtin_expect((((uint64_t)a | (uint64_t)b) >> 32) == 0, 1)) {
        *r = (int64_t)((uint32_t)a % (uint32_t)b); return 0;
    }
    if (BN_UNLIKELY(b == -1)) { *r = 0; return 0; }
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    *r = m; return 0;
}
BN_INLINE int bn_pow_ii(int64_t *r, int64_t a, int64_t e) {   /* e >= 0 */
    int64_t acc = 1;
    while (e > 0) {
        if ((e & 1) && __builtin_mul_overflow(acc, a, &acc)) return BN_K_OVERFLOW;
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(a, a, &a)) return BN_K_OVERFLOW;
    }
    *r = acc; return 0;
}
BN_INLINE int bn_lshift_ii(int64_t *r, int64_t a, int64_t n) {
    if (n < 0) return BN_K_NEGATIVE_SHIFT;
    if (a == 0) { *r = 0; return 0; }
    if (n > 63) return BN_K_OVERFLOW;
    int64_t v = (int64_t)((uint64_t)a << n);
    if ((v >> n) != a) return BN_K_OVERFLOW;
    *r = v; return 0;
}
BN_INLINE int bn_rshift_ii(int64_t *r, int64_t a, int64_t n) {
    if (n < 0) return BN_K_NEGATIVE_SHIFT;
    *r = n > 63 ? (a < 0 ? -1 : 0) : (a >> n); return 0;
}
BN_INLINE int bn_d2i(int64_t *r, double d) {   /* int(d) */
    if (d != d) return BN_K_FLOAT_NAN_TO_INT;
    if (isinf(d)) return BN_K_FLOAT_INF_TO_INT;
    double t = trunc(d);
    if (t < -9223372036854775808.0 || t >= 9223372036854775808.0) return BN_K_OVERFLOW;
    *r = (int64_t)t; return 0;
}

/* ---- floats: CPython's float_floor_div, float_rem and float_pow */
BN_INLINE int bn_floordiv_dd(double *r, double vx, double wx) {
    if (BN_UNLIKELY(wx == 0.0)) return BN_K_ZERO_FFLOORDIV;
    double mod = fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0.0) { if ((wx < 0) != (mod < 0)) { mod += wx; div -= 1.0; } }
    double fl;
    if (div != 0.0) { fl = floor(div); if (div - fl > 0.5) fl += 1.0; }
    else fl = copysign(0.0, vx / wx);
    *r = fl; return 0;
}
BN_INLINE int bn_mod_dd(double *r, double vx, double wx) {
    if (BN_UNLIKELY(wx == 0.0)) return BN_K_ZERO_FMOD;
    double mod = fmod(vx, wx);
    if (mod != 0.0) { if ((wx < 0) != (mod < 0)) mod += wx; }
    else mod = copysign(0.0, wx);
    *r = mod; return 0;
}
BN_INLINE int bn_odd_d(double w) { return fmod(fabs(w), 2.0) == 1.0; }
BN_INLINE int bn_pow_dd(double *r, double iv, double iw) {
    if (iw == 0.0) { *r = 1.0; return 0; }
    if (iv != iv) { *r = iv; return 0; }
    if (iw != iw) { *r = iv == 1.0 ? 1.0 : iw; return 0; }
    if (isinf(iw)) {
        iv = fabs(iv);
        *r = iv == 1.0 ? 1.0 : (((iw > 0.0) == (iv > 1.0)) ? fabs(iw) : 0.0);
        return 0;
    }
    if (isinf(iv)) {
        int odd = bn_odd_d(iw);
        *r = iw > 0.0 ? (odd ? iv : fabs(iv)) : (odd ? copysign(0.0, iv) : 0.0);
        return 0;
    }
    if (iv == 0.0) {
        if (iw < 0.0) return BN_K_ZERO_POW;
        *r = bn_odd_d(iw) ? iv : 0.0; return 0;
    }
    if (iv == 1.0) { *r = 1.0; return 0; }
    int neg = 0;
    if (iv < 0.0) {
        if (iw != floor(iw)) return BN_K_COMPLEX_POW;
        iv = -iv; neg = bn_odd_d(iw);
    }
    if (iv == 1.0) { *r = neg ? -1.0 : 1.0; return 0; }
    double ix = pow(iv, iw);
    if (isinf(ix)) return BN_K_FPOW_OVERFLOW;
    *r = neg ? -ix : ix; return 0;
}

/* ---- comparisons: -1, 0, 1, or 2 when unordered (NaN); int with float is exact */
BN_HOT int bn_cmp_ii(int64_t a, int64_t b) { return a < b ? -1 : (a > b); }
BN_HOT int bn_cmp_dd(double a, double b) { return a < b ? -1 : (a > b ? 1 : (a == b ? 0 : 2)); }
BN_HOT int bn_cmp_id(int64_t i, double d) {
    if (d != d) return 2;
    if (d >= 9223372036854775808.0) return -1;
    if (d < -9223372036854775808.0) return 1;
    double t = trunc(d);
    int64_t ti = (int64_t)t;
    if (i != ti) return i < ti ? -1 : 1;
    return d > t ? -1 : (d < t ? 1 : 0);
}
BN_HOT int bn_cmp_di(double d, int64_t i) { int c = bn_cmp_id(i, d); return c == 2 ? 2 : -c; }
BN_HOT int bn_cmp_nn(bn_num a, bn_num b) {
    if (!a.f) return b.f ? bn_cmp_id(a.i, b.d) : bn_cmp_ii(a.i, b.i);
    return b.f ? bn_cmp_dd(a.d, b.d) : bn_cmp_di(a.d, b.i);
}
BN_HOT int bn_cmpres(int c, int op) {   /* op: < <= > >= == != */
    switch (op) {
    case 0: return c == -1;
    case 1: return c == -1 || c == 0;
    case 2: return c == 1;
    case 3: return c == 1 || c == 0;
    case 4: return c == 0;
    default: return c != 0;
    }
}

/* ---- numbers of unknown type (int or float), as Python mixes them */
BN_INLINE int bn_add_nn(bn_num *r, bn_num a, bn_num b) {
    if (!a.f && !b.f) { int64_t t; if (__builtin_add_overflow(a.i, b.i, &t)) return BN_K_OVERFLOW; *r = bn_ni(t); }
    else *r = bn_nf(bn_tod(a) + bn_tod(b));
    return 0;
}
BN_INLINE int bn_sub_nn(bn_num *r, bn_num a, bn_num b) {
    if (!a.f && !b.f) { int64_t t; if (__builtin_sub_overflow(a.i, b.i, &t)) return BN_K_OVERFLOW; *r = bn_ni(t); }
    else *r = bn_nf(bn_tod(a) - bn_tod(b));
    return 0;
}
BN_INLINE int bn_mul_nn(bn_num *r, bn_num a, bn_num b) {
    if (!a.f && !b.f) { int64_t t; if (__builtin_mul_overflow(a.i, b.i, &t)) return BN_K_OVERFLOW; *r = bn_ni(t); }
    else *r = bn_nf(bn_tod(a) * bn_tod(b));
    return 0;
}
BN_INLINE int bn_truediv_nn(double *r, bn_num a, bn_num b) {
    if (!a.f && !b.f) { if (b.i == 0) return BN_K_ZERO_TRUEDIV; *r = (double)a.i / (double)b.i; return 0; }
    double y = bn_tod(b);
    if (y == 0.0) return BN_K_ZERO_FTRUEDIV;
    *r = bn_tod(a) / y; return 0;
}
BN_INLINE int bn_floordiv_nn(bn_num *r, bn_num a, bn_num b) {
    int e;
    if (!a.f && !b.f) { int64_t t; if ((e = bn_floordiv_ii(&t, a.i, b.i))) return e; *r = bn_ni(t); return 0; }
    double d; if ((e = bn_floordiv_dd(&d, bn_tod(a), bn_tod(b)))) return e; *r = bn_nf(d); return 0;
}
BN_INLINE int bn_mod_nn(bn_num *r, bn_num a, bn_num b) {
    int e;
    if (!a.f && !b.f) { int64_t t; if ((e = bn_mod_ii(&t, a.i, b.i))) return e; *r = bn_ni(t); return 0; }
    double d; if ((e = bn_mod_dd(&d, bn_tod(a), bn_tod(b)))) return e; *r = bn_nf(d); return 0;
}
BN_INLINE int bn_pow_nn(bn_num *r, bn_num a, bn_num b) {
    int e;
    if (!a.f && !b.f && b.i >= 0) { int64_t t; if ((e = bn_pow_ii(&t, a.i, b.i))) return e; *r = bn_ni(t); return 0; }
    double d; if ((e = bn_pow_dd(&d, bn_tod(a), bn_tod(b)))) return e; *r = bn_nf(d); return 0;
}
BN_INLINE int bn_neg_n(bn_num *r, bn_num a) {
    if (!a.f) { if (a.i == INT64_MIN) return BN_K_OVERFLOW; *r = bn_ni(-a.i); } else *r = bn_nf(-a.d);
    return 0;
}
BN_INLINE int bn_abs_n(bn_num *r, bn_num a) {
    if (!a.f) { if (a.i == INT64_MIN) return BN_K_OVERFLOW; *r = bn_ni(a.i < 0 ? -a.i : a.i); } else *r = bn_nf(fabs(a.d));
    return 0;
}
BN_INLINE bn_num bn_min_nn(bn_num a, bn_num b) { return bn_cmp_nn(b, a) == -1 ? b : a; }
BN_INLINE bn_num bn_max_nn(bn_num a, bn_num b) { return bn_cmp_nn(b, a) == 1 ? b : a; }

/* ---- value sequences: what a loop over a function or a set operation runs over */
enum { BN_SEQ_BUF = 0, BN_SEQ_RANGE, BN_SEQ_INTS, BN_SEQ_NONE, BN_SEQ_BADRET };
typedef struct {
    int kind;               /* BN_SEQ_* */
    int psite, pkind;       /* a closure's pending error, raised after its values */
    int64_t n;              /* number of values */
    int64_t start, step;    /* BN_SEQ_RANGE */
    const int64_t *iv;      /* BN_SEQ_INTS */
    bn_num *v;              /* BN_SEQ_BUF */
    int64_t cap;
    int64_t extra;          /* BN_SEQ_BADRET: the object that explains it */
} bn_seq;
#define BN_MAX_VALUES ((int64_t)@MAX_VALUES@)
BN_HOT uint64_t bn_range_len(int64_t a, int64_t b, int64_t c) {   /* c != 0 */
    if (c > 0) return a < b ? ((uint64_t)b - (uint64_t)a - 1u) / (uint64_t)c + 1u : 0u;
    return a > b ? ((uint64_t)a - (uint64_t)b - 1u) / (0u - (uint64_t)c) + 1u : 0u;
}
BN_HOT int64_t bn_range_at(int64_t a, int64_t c, uint64_t i) {
    return (int64_t)((uint64_t)a + i * (uint64_t)c);
}
BN_HOT int bn_range_has(int64_t a, int64_t b, int64_t c, int64_t x) {
    if (c > 0) return x >= a && x < b && ((uint64_t)x - (uint64_t)a) % (uint64_t)c == 0u;
    return x <= a && x > b && ((uint64_t)a - (uint64_t)x) % (0u - (uint64_t)c) == 0u;
}
BN_HOT int bn_range_has_d(int64_t a, int64_t b, int64_t c, double x) {
    if (x != x || x < -9223372036854775808.0 || x >= 9223372036854775808.0 || x != trunc(x)) return 0;
    return bn_range_has(a, b, c, (int64_t)x);
}
BN_INLINE void bn_seq_reset(bn_seq *q) { q->kind = BN_SEQ_BUF; q->n = 0; q->psite = 0; q->pkind = 0; q->extra = 0; }
BN_INLINE int bn_seq_push(bn_seq *q, bn_num x) {
    if (BN_UNLIKELY(q->n == q->cap)) {
        if (q->cap >= BN_MAX_VALUES) return BN_K_TOO_MANY_VALUES;
        int64_t cap = q->cap ? 2 * q->cap : 16;
        bn_num *v = (bn_num *)realloc(q->v, (size_t)cap * sizeof *v);
        if (!v) return BN_K_NO_MEMORY;
        q->v = v; q->cap = cap;
    }
    q->v[q->n++] = x; return 0;
}
BN_INLINE void bn_seq_range(bn_seq *q, int64_t a, int64_t b, int64_t c) {
    uint64_t n = bn_range_len(a, b, c);
    q->kind = BN_SEQ_RANGE; q->start = a; q->step = c; q->n = n > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)n;
}
BN_INLINE void bn_seq_ints(bn_seq *q, const int64_t *v, int64_t n) { q->kind = BN_SEQ_INTS; q->iv = v; q->n = n; }
BN_HOT bn_num bn_seq_get(const bn_seq *q, int64_t i) {
    if (q->kind == BN_SEQ_RANGE) return bn_ni(bn_range_at(q->start, q->step, (uint64_t)i));
    if (q->kind == BN_SEQ_INTS) return bn_ni(q->iv[i]);
    return q->v[i];
}

/* divisors of n in [a, b), ascending, as the Python backend's _b_divisors: all of range(a, b)
   when n == 0; a direct scan when b - a <= 48 (the caller reports n % 0 when 0 is in it); else
   the divisors up to sqrt(|n|), then their cofactors */
typedef struct { int mode; uint64_t m, d, s; int64_t a, b, cur; } bn_divs;
BN_HOT uint64_t bn_umod(uint64_t m, uint64_t d) {
    return ((m | d) >> 32) == 0 ? (uint64_t)((uint32_t)m % (uint32_t)d) : m % d;
}
BN_INLINE int bn_divs_direct(int64_t a, int64_t b) {
    return b <= a || (uint64_t)b - (uint64_t)a <= 48u;
}
BN_INLINE void bn_divs_init(bn_divs *it, int64_t n, int64_t a, int64_t b) {
    it->a = a; it->b = b; it->cur = a;
    it->m = n < 0 ? 0u - (uint64_t)n : (uint64_t)n;
    if (n == 0) { it->mode = 0; return; }
    if (bn_divs_direct(a, b)) { it->mode = 1; return; }
    uint64_t r = (uint64_t)sqrt((double)it->m);
    while (r > 0 && r * r > it->m) r--;
    while ((r + 1) * (r + 1) <= it->m) r++;
    it->mode = 2; it->d = 1; it->s = r;
}
BN_HOT int bn_divs_in(const bn_divs *it, uint64_t y) {
    return it->b > 0 && y < (uint64_t)it->b && (it->a <= 0 || y >= (uint64_t)it->a);
}
BN_INLINE int bn_divs_next(bn_divs *it, int64_t *v) {
    switch (it->mode) {
    case 0:
        if (it->cur < it->b) { *v = it->cur++; return 1; }
        return 0;
    case 1:
        while (it->cur < it->b) {
            int64_t d = it->cur++;
            uint64_t ad = d < 0 ? 0u - (uint64_t)d : (uint64_t)d;
            if (bn_umod(it->m, ad) == 0) { *v = d; return 1; }
        }
        return 0;
    case 2:
        while (it->d <= it->s) {
            uint64_t x = it->d++;
            if (bn_umod(it->m, x) == 0 && bn_divs_in(it, x)) { *v = (int64_t)x; return 1; }
        }
        it->mode = 3; it->d = it->s;
        /* fall through */
    default:
        while (it->d >= 1) {
            uint64_t x = it->d--;
            if (bn_umod(it->m, x) == 0 && x * x != it->m) {
                uint64_t y = it->m / x;
                if (bn_divs_in(it, y)) { *v = (int64_t)y; return 1; }
            }
        }
        return 0;
    }
}

/* set operations: Python's equality (1 == 1.0), left operand's order, each value once */
typedef struct { uint64_t *k; unsigned char *t; int64_t cap; } bn_hset;
BN_INLINE int bn_key(bn_num x, uint64_t *k) {   /* 1 int-valued, 2 other float, 0 never equal (NaN) */
    if (x.f == 0) { *k = (uint64_t)x.i; return 1; }
    if (x.f == 2) { *k = (uint64_t)x.i; return 3; }
    if (x.d != x.d) return 0;
    if (x.d >= -9223372036854775808.0 && x.d < 9223372036854775808.0 && x.d == trunc(x.d)) {
        *k = (uint64_t)(int64_t)x.d; return 1;
    }
    *k = (uint64_t)bn_dbits(x.d); return 2;
}
BN_INLINE int bn_hset_init(bn_hset *h, int64_t n) {
    h->cap = 16;
    while (h->cap < 2 * n + 2) h->cap *= 2;
    h->k = (uint64_t *)calloc((size_t)h->cap, sizeof *h->k);
    h->t = (unsigned char *)calloc((size_t)h->cap, 1);
    return h->k && h->t ? 0 : BN_K_NO_MEMORY;
}
BN_INLINE void bn_hset_free(bn_hset *h) { free(h->k); free(h->t); }
BN_INLINE int bn_hset_probe(bn_hset *h, bn_num x, int add) {   /* 1 if present (add: if it was) */
    uint64_t k; int t = bn_key(x, &k);
    if (t == 0) return 0;
    uint64_t m = (uint64_t)h->cap - 1u, i = (k * 0x9E3779B97F4A7C15ull + (uint64_t)t) & m;
    while (h->t[i]) {
        if (h->t[i] == t && h->k[i] == k) return 1;
        i = (i + 1u) & m;
    }
    if (add) { h->t[i] = (unsigned char)t; h->k[i] = k; }
    return 0;
}
BN_INLINE int bn_setop(bn_seq *dst, int op, const bn_seq *a, const bn_seq *b) {   /* 0 union, 1 intersection, 2 difference */
    bn_hset seen, other; int e = 0; int64_t i;
    bn_seq_reset(dst);
    if ((e = bn_hset_init(&seen, a->n + b->n))) { bn_hset_free(&seen); return e; }
    if (op == 0) {
        for (i = 0; i < a->n + b->n && !e; i++) {
            bn_num x = i < a->n ? bn_seq_get(a, i) : bn_seq_get(b, i - a->n);
            if (!bn_hset_probe(&seen, x, 1)) e = bn_seq_push(dst, x);
        }
        bn_hset_free(&seen); return e;
    }
    if ((e = bn_hset_init(&other, b->n))) { bn_hset_free(&seen); bn_hset_free(&other); return e; }
    for (i = 0; i < b->n; i++) bn_hset_probe(&other, bn_seq_get(b, i), 1);
    for (i = 0; i < a->n && !e; i++) {
        bn_num x = bn_seq_get(a, i);
        if (bn_hset_probe(&other, x, 0) == (op == 1) && !bn_hset_probe(&seen, x, 1)) e = bn_seq_push(dst, x);
    }
    bn_hset_free(&seen); bn_hset_free(&other); return e;
}

/* ---- lists of integers (locals of user functions) */
typedef struct { int64_t *v; int64_t n, cap; } bn_list;
#define BN_LIST0 {NULL, 0, 0}
BN_INLINE int bn_list_push(bn_list *l, int64_t x) {
    if (BN_UNLIKELY(l->n == l->cap)) {
        if (l->cap >= BN_MAX_VALUES) return BN_K_TOO_MANY_VALUES;
        int64_t cap = l->cap ? 2 * l->cap : 16;
        int64_t *v = (int64_t *)realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return BN_K_NO_MEMORY;
        l->v = v; l->cap = cap;
    }
    l->v[l->n++] = x; return 0;
}
BN_INLINE int bn_list_copy(bn_list *dst, const bn_list *src) {
    int e; int64_t i; dst->n = 0;
    for (i = 0; i < src->n; i++) if ((e = bn_list_push(dst, src->v[i]))) return e;
    return 0;
}
BN_INLINE int bn_list_has(const bn_list *l, int64_t x) {
    for (int64_t i = 0; i < l->n; i++) if (l->v[i] == x) return 1;
    return 0;
}
BN_INLINE int bn_list_has_d(const bn_list *l, double x) {
    for (int64_t i = 0; i < l->n; i++) if (bn_cmp_id(l->v[i], x) == 0) return 1;
    return 0;
}
BN_INLINE int bn_ints_has(const int64_t *v, int64_t n, int64_t x) {
    for (int64_t i = 0; i < n; i++) if (v[i] == x) return 1;
    return 0;
}
BN_INLINE int bn_ints_has_d(const int64_t *v, int64_t n, double x) {
    for (int64_t i = 0; i < n; i++) if (bn_cmp_id(v[i], x) == 0) return 1;
    return 0;
}

/* ---- tabulated functions: sorted keys, binary search */
BN_INLINE int64_t bn_tab_find(const int64_t *keys, int64_t n, int k, const int64_t *key) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2; int c = 0;
        for (int j = 0; j < k && !c; j++)
            c = keys[mid * k + j] < key[j] ? -1 : (keys[mid * k + j] > key[j]);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return -1;
}

/* ---- the walk's state (one per worker thread) and the runtime's hooks */
typedef struct { int64_t *rows; int64_t n, cap; } bn_rowbuf;
typedef struct bn_w {
    int rows;                   /* 1: write rows into out, 0: count */
    int split;                  /* depth of the claim point that delimits work items, -1: none */
    int64_t count;
    bn_rowbuf *out;
    int site, kind, nbound;     /* the error: where, what, how many loops were bound */
    bn_num bad;                 /* non-integer value */
    int64_t cfg[BN_NCOLS + 1];  /* bound loop values (loop order) */
    bn_seq seqs[BN_NSEQ + 1];   /* scratch sequences, one per loop over a function or set */
    void *drv;                  /* the runtime's per-worker state */
    const int *cancel;          /* set by the runtime to stop the walk (read at claim points) */
    const int64_t *pre;         /* sampling: the values bound to the outer loops (beast.ir.prefix) */
} bn_w;
static int bn_claim(bn_w *w);   /* at a claim point of depth w->split: 1 run, 0 skip, -1 stop */
static int bn_end(bn_w *w);     /* after the claimed loop: 0 go on walking, -1 stop */
static int64_t *bn_row_slow(bn_w *w);   /* out is full: a new block (NULL: out of memory, stopped) */
BN_HOT int64_t *bn_row(bn_w *w) {
    bn_rowbuf *b = w->out;
    if (BN_UNLIKELY(b->n == b->cap)) return bn_row_slow(w);
    return b->rows + (b->n++) * BN_NCOLS;
}
BN_INLINE void bn_w_free(bn_w *w) {
    for (int i = 0; i <= BN_NSEQ; i++) { free(w->seqs[i].v); w->seqs[i].v = NULL; w->seqs[i].cap = 0; }
}
"""


def _prelude(ncols, nseq):
    kinds = "enum {\n" + "".join(f"    BN_K_{k.upper()} = {KIND[k]},\n" for k in KINDS) + "};"
    text = _PRELUDE.replace("@KINDS@", kinds).replace("@MAX_VALUES@", str(MAX_VALUES))
    return f"#define BN_NCOLS {ncols}\n#define BN_NSEQ {nseq}\n" + text


# ---------------------------------------------------------------------------------------------
# Compiled values and code buffers

class CVal:
    """A compiled value: side-effect-free C text of a static type (int, bool, float, num; list or
    range inside functions; str and none only as constants)."""
    __slots__ = ("text", "type", "const", "parts")
    NONE = object()

    def __init__(self, text, type_, const=NONE, parts=None):
        self.text, self.type, self.const, self.parts = text, type_, const, parts

    @property
    def is_const(self):
        return self.const is not CVal.NONE

    def __str__(self):
        return self.text


class _Code:
    """Lines of C with indentation; ``capture`` collects a nested block to splice later."""

    def __init__(self, indent=1):
        self.lines = []
        self.indent = indent

    def __call__(self, text):
        self.lines.append("    " * self.indent + text)

    def open(self, text):
        self(text)
        self.indent += 1

    def close(self, text="}"):
        self.indent -= 1
        self(text)

    def capture(self):
        return _Capture(self)


class _Capture:
    def __init__(self, code):
        self.code = code

    def __enter__(self):
        self.saved = self.code.lines
        self.code.lines = []
        self.code.indent += 1
        return self

    def __exit__(self, *exc):
        self.lines = self.code.lines
        self.code.lines = self.saved
        self.code.indent -= 1
        return False


class CExpr(ExprPrinter):
    """C spelling of pure integer expressions (comparisons, logic, choices of variables and
    constants): they cannot fail, so they print as one C expression with minimal parentheses."""
    PREC = {"or": 1, "and": 2, "cmp": 4, "not": 9, "unary": 9}
    NONASSOC = {"cmp"}

    def __init__(self, resolve):
        super().__init__()
        self.resolve = resolve

    def p_Var(self, e):
        return self.resolve(e.name).text, ATOM

    def fmt_const(self, v):
        text = c_int(int(v))
        return text, (self.PREC["unary"] if text.startswith("-") else ATOM)

    def fmt_not(self, operand):
        return f"!{operand}"

    def fmt_boolop(self, e, left, right):
        return f"{left} {'&&' if e.op == 'and' else '||'} {right}"

    def fmt_select(self, cond, then, orelse):
        return f"({cond} ? {then} : {orelse})"


# ---------------------------------------------------------------------------------------------
# Extra expression nodes that only user function bodies produce (never in the IR)

class _X(Expr):
    __slots__ = ()


class _PyBool(_X):
    """Python's and/or: the value of the operand that decided."""
    __slots__ = ("op", "values")

    def __init__(self, op, values):
        self.op, self.values = op, tuple(values)

    def children(self):
        return self.values


class _Chain(_X):
    __slots__ = ("ops", "operands")

    def __init__(self, ops, operands):
        self.ops, self.operands = tuple(ops), tuple(operands)

    def children(self):
        return self.operands


class _Eager(_X):
    """select(c, a, b) called inside a function: every argument is evaluated."""
    __slots__ = ("args",)

    def __init__(self, args):
        self.args = tuple(args)

    def children(self):
        return self.args


class _Range(_X):
    __slots__ = ("args",)

    def __init__(self, args):
        self.args = tuple(args)

    def children(self):
        return self.args


class _ListLit(_X):
    __slots__ = ("elts", "is_tuple")

    def __init__(self, elts, is_tuple=False):
        self.elts, self.is_tuple = tuple(elts), is_tuple

    def children(self):
        return self.elts


class _ConstArr(_X):
    __slots__ = ("values", "is_tuple")

    def __init__(self, values, is_tuple):
        self.values, self.is_tuple = tuple(values), is_tuple


class _Comp(_X):
    """A list comprehension or generator expression: elt for target in iter if ... (nested)."""
    __slots__ = ("elt", "gens")

    def __init__(self, elt, gens):
        self.elt, self.gens = elt, tuple(gens)     # gens: (target name, iterable, (ifs...))

    def children(self):
        out = [self.elt]
        for _, it, ifs in self.gens:
            out.append(it)
            out.extend(ifs)
        return tuple(out)


class _ListOf(_X):
    __slots__ = ("iterable",)

    def __init__(self, iterable):
        self.iterable = iterable

    def children(self):
        return (self.iterable,)


class _Fold(_X):
    """len / all / any / sum / min / max over an iterable (or a comprehension)."""
    __slots__ = ("func", "iterable")

    def __init__(self, func, iterable):
        self.func, self.iterable = func, iterable

    def children(self):
        return (self.iterable,)


class _In(_X):
    __slots__ = ("item", "container", "negate")

    def __init__(self, item, container, negate):
        self.item, self.container, self.negate = item, container, negate

    def children(self):
        return (self.item, self.container)


class _Index(_X):
    __slots__ = ("container", "index")

    def __init__(self, container, index):
        self.container, self.index = container, index

    def children(self):
        return (self.container, self.index)


class _Conv(_X):
    __slots__ = ("to", "value")

    def __init__(self, to, value):
        self.to, self.value = to, value

    def children(self):
        return (self.value,)


_AST_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
               ast.LShift: "<<", ast.RShift: ">>"}
_AST_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
               ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in"}


# ---------------------------------------------------------------------------------------------
# The expression compiler: Python semantics, flattened into C statements with explicit checks.

class _Gen:
    """Compile expressions into ``code``. ``resolve(name) -> CVal``; ``ctx`` supplies the failure
    statements (``fail(site, kind)``, ``fail_prop()``) and, in functions, list temporaries."""

    def __init__(self, unit, code, resolve, ctx):
        self.unit, self.code, self.resolve, self.ctx = unit, code, resolve, ctx
        self.site = 0           # the statement's site (IR) or the function's fallback site
        self.pos = {}           # id(expr) -> site of that operation (function bodies)
        self.scopes = []        # comprehension variables: [{name: CVal}]
        self.pure_printer = CExpr(self.lookup)

    # -- helpers
    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.resolve(name)

    def site_of(self, e):
        return self.pos.get(id(e), self.site)

    def tmp(self, type_):
        name = self.unit.tmp()
        self.code(f"{CTYPE[type_]} {name};")
        return name

    def let(self, type_, text):
        name = self.unit.tmp()
        self.code(f"{CTYPE[type_]} {name} = {text};")
        return CVal(name, type_)

    def stable(self, v):
        """``v`` as a name or literal (so that it can be repeated without recomputation)."""
        if v.is_const or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v.text or ""):
            return v
        return self.let(v.type, v.text)

    def fail(self, site, kind):
        return self.ctx.fail(site, kind)

    def check(self, call, site, ret_type, out_type):
        """``out = helper(&out, ...)``: a helper returning an error kind (0: fine)."""
        t = self.tmp(out_type)
        self.code(f"if (BN_UNLIKELY(bn_e = {call.format(out='&' + t)})) {self.fail(site, 'bn_e')}")
        return CVal(t, ret_type)

    # -- conversions
    def to_num(self, v):
        if v.type == "num":
            return v.text
        if v.type == "float":
            return f"bn_nf({v.text})"
        if v.type in INTISH:
            return f"bn_ni({v.text})"
        raise _Untranslatable(None, f"a {v.type} used as a number")

    def to_double(self, v):
        if v.type == "float":
            return v.text
        if v.type in INTISH:
            return f"(double)({v.text})"
        if v.type == "num":
            return f"bn_tod({v.text})"
        raise _Untranslatable(None, f"a {v.type} used as a number")

    def convert(self, v, to):
        if v.type == to or (v.type in INTISH and to in INTISH):
            return v.text
        if to == "num":
            return self.to_num(v)
        if to == "float" and v.type in INTISH:
            return f"(double)({v.text})"
        raise BeastError(f"internal error: cannot store a {v.type} value as {to}")

    def truth_of(self, v):
        t = v.type
        if v.is_const and t in ("int", "bool", "float", "str", "none"):
            return "1" if v.const else "0"
        if t == "bool":
            return v.text
        if t == "int":
            return f"({v.text} != 0)"
        if t == "float":
            return f"({v.text} != 0.0)"
        if t == "num":
            return f"bn_truth({v.text})"
        if t == "list":
            return f"({v.text}.n != 0)"
        if t == "range":
            a, b, c = v.parts
            return f"(bn_range_len({a}, {b}, {c}) != 0u)"
        raise _Untranslatable(None, f"the truth value of a {t}")

    def truth(self, e):
        return self.truth_of(self.value(e))

    # -- entry point
    def value(self, e) -> CVal:
        if isinstance(e, Const):
            return self.v_Const(e)
        if self._pure(e):
            text, prec = self.pure_printer.p(e)
            return CVal(text if prec >= ATOM else f"({text})", self._pure_type(e))
        method = getattr(self, "v_" + type(e).__name__, None)
        if method is None:
            raise _Untranslatable(e, f"the expression {type(e).__name__}")
        return method(e)

    def _pure(self, e):
        if isinstance(e, Const):
            return type(e.value) in (int, bool) and INT64_MIN <= e.value <= INT64_MAX
        if isinstance(e, Var):
            try:
                v = self.lookup(e.name)
            except _Untranslatable:
                return False
            return v.type in INTISH and not v.is_const
        if isinstance(e, Compare):
            return all(self._pure(x) for x in (e.left, e.right))
        if isinstance(e, (BoolOp, Not, Select)) and type(e) in (BoolOp, Not, Select):
            return all(self._pure(x) for x in e.children())
        return False

    def _pure_type(self, e):
        if isinstance(e, (Compare, BoolOp, Not)):
            return "bool"
        if isinstance(e, Const):
            return "bool" if isinstance(e.value, bool) else "int"
        if isinstance(e, Var):
            return self.lookup(e.name).type
        return _select_type(self._pure_type(e.then), self._pure_type(e.orelse))

    # -- leaves
    def v_Const(self, e):
        v = e.value
        if isinstance(v, bool):
            return CVal("1" if v else "0", "bool", v)
        if isinstance(v, int):
            try:
                return CVal(c_int(v), "int", v)
            except OverflowError:
                raise _Untranslatable(e, f"the integer {v}, which does not fit in 64 bits") from None
        if isinstance(v, float):
            return CVal(c_float(v), "float", v)
        if isinstance(v, str):
            return CVal(None, "str", v)
        if v is None:
            return CVal(None, "none", None)
        raise _Untranslatable(e, f"a constant of type {type(v).__name__}")

    def v_Var(self, e):
        return self.lookup(e.name)

    def v_PrefixValue(self, e):
        # sampling (beast.ir.prefix): a value of the prefix the runtime passes in w->pre
        return CVal(f"w->pre[{e.index}]", "int")

    # -- arithmetic
    def v_BinOp(self, e):
        left = self.value(e.left)
        right = self.value(e.right)
        return self.binop(e.op, left, right, self.site_of(e), e)

    def _fold(self, op, left, right):
        fn = BINOPS.get(op) or {"&": int.__and__, "|": int.__or__, "^": int.__xor__,
                                "<<": int.__lshift__, ">>": int.__rshift__}.get(op)
        try:
            a, b = left.const, right.const
            if op in ("&", "|", "^", "<<", ">>"):
                value = fn(a, b) if not (isinstance(a, bool) and isinstance(b, bool) and op in "&|^") \
                    else bool(fn(a, b))
            else:
                value = fn(a, b)
        except (ArithmeticError, ValueError, TypeError):
            return None
        if isinstance(value, bool):
            return CVal("1" if value else "0", "bool", value)
        if isinstance(value, int) and INT64_MIN <= value <= INT64_MAX:
            return CVal(c_int(value), "int", value)
        if isinstance(value, float):
            return CVal(c_float(value), "float", value)
        return None

    def binop(self, op, left, right, site, node=None):
        lt, rt = left.type, right.type
        if lt not in NUMERIC or rt not in NUMERIC:
            raise _Untranslatable(node, f"'{op}' on {lt} and {rt} values")
        if left.is_const and right.is_const:
            folded = self._fold(op, left, right)
            if folded is not None:
                return folded
        if op == "/":
            return self._truediv(left, right, site)
        if op in ("&", "|", "^", "<<", ">>"):
            if lt not in INTISH or rt not in INTISH:
                raise _Untranslatable(node, f"'{op}' on {lt} values")
            if op in ("<<", ">>"):
                fn = "bn_lshift_ii" if op == "<<" else "bn_rshift_ii"
                return self.check(f"{fn}({{out}}, {left}, {right})", site, "int", "int")
            return CVal(f"({left} {op} {right})", "bool" if lt == rt == "bool" else "int")
        if lt in INTISH and rt in INTISH:
            if op in ("+", "-", "*"):
                name = {"+": "add", "-": "sub", "*": "mul"}[op]
                t = self.tmp("int")
                self.code(f"if (BN_UNLIKELY(__builtin_{name}_overflow({left}, {right}, &{t}))) "
                          f"{self.fail(site, 'BN_K_OVERFLOW')}")
                return CVal(t, "int")
            if op == "//":
                return self.check(f"bn_floordiv_ii({{out}}, {left}, {right})", site, "int", "int")
            if op == "%":
                return self.check(f"bn_mod_ii({{out}}, {left}, {right})", site, "int", "int")
            if op == "**":
                if right.is_const and right.const >= 0:
                    return self.check(f"bn_pow_ii({{out}}, {left}, {right})", site, "int", "int")
                return self.check(f"bn_pow_nn({{out}}, bn_ni({left}), bn_ni({right}))", site, "num", "num")
        if "float" not in (lt, rt):      # num with int or num: decided at run time
            fn = {"+": "add", "-": "sub", "*": "mul", "//": "floordiv", "%": "mod", "**": "pow"}[op]
            return self.check(f"bn_{fn}_nn({{out}}, {self.to_num(left)}, {self.to_num(right)})",
                              site, "num", "num")
        a, b = self.to_double(left), self.to_double(right)
        if op in ("+", "-", "*"):
            return CVal(f"({a} {op} {b})", "float")
        fn = {"//": "floordiv", "%": "mod", "**": "pow"}[op]
        return self.check(f"bn_{fn}_dd({{out}}, {a}, {b})", site, "float", "float")

    def _truediv(self, left, right, site):
        if left.type in INTISH and right.type in INTISH:
            if not (right.is_const and right.const != 0):
                self.code(f"if (BN_UNLIKELY({right} == 0)) {self.fail(site, 'BN_K_ZERO_TRUEDIV')}")
            return self.let("float", f"(double)({left}) / (double)({right})")
        if "float" not in (left.type, right.type):
            return self.check(f"bn_truediv_nn({{out}}, {self.to_num(left)}, {self.to_num(right)})",
                              site, "float", "float")
        b = self.stable(CVal(self.to_double(right), "float"))
        if not (right.is_const and right.const != 0):
            self.code(f"if (BN_UNLIKELY({b} == 0.0)) {self.fail(site, 'BN_K_ZERO_FTRUEDIV')}")
        return CVal(f"({self.to_double(left)} / {b})", "float")

    def v_UnOp(self, e):
        v = self.value(e.operand)
        site = self.site_of(e)
        if v.type not in NUMERIC:
            raise _Untranslatable(e, f"'{e.op}' on a {v.type} value")
        if v.is_const:
            try:
                value = {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x}[e.op](v.const)
                return self.v_Const(Const(value))
            except (TypeError, _Untranslatable):
                pass
        if e.op == "+":
            return CVal(v.text, "int" if v.type == "bool" else v.type)
        if e.op == "~":
            if v.type not in INTISH:
                raise _Untranslatable(e, "'~' on a float")
            return CVal(f"(~{v})", "int")
        if v.type in INTISH:
            s = self.stable(v)
            self.code(f"if (BN_UNLIKELY({s} == INT64_MIN)) {self.fail(site, 'BN_K_OVERFLOW')}")
            return CVal(f"(-{s})", "int")
        if v.type == "float":
            return CVal(f"(-{v})", "float")
        return self.check(f"bn_neg_n({{out}}, {v})", site, "num", "num")

    # -- comparisons and logic
    def v_Compare(self, e):
        return self.compare(e.op, self.value(e.left), self.value(e.right), e)

    def compare(self, op, a, b, node=None):
        if a.is_const and b.is_const:
            try:
                value = COMPARES[op](a.const, b.const)
                return CVal("1" if value else "0", "bool", bool(value))
            except TypeError:
                raise _Untranslatable(node, f"'{op}' between {a.type} and {b.type}") from None
        if a.type not in NUMERIC or b.type not in NUMERIC:
            if op in ("==", "!=") and (a.type in ("str", "none") or b.type in ("str", "none")) \
                    and a.type != b.type:
                value = op == "!="
                return CVal("1" if value else "0", "bool", value)
            raise _Untranslatable(node, f"'{op}' between {a.type} and {b.type} values")
        if a.type in INTISH and b.type in INTISH or a.type == b.type == "float":
            return CVal(f"({a} {op} {b})", "bool")
        if "num" in (a.type, b.type):
            cmp = f"bn_cmp_nn({self.to_num(a)}, {self.to_num(b)})"
        elif a.type == "float":
            cmp = f"bn_cmp_di({a}, {b})"
        else:
            cmp = f"bn_cmp_id({a}, {b})"
        return CVal(f"bn_cmpres({cmp}, {CMP_CODE[op]})", "bool")

    def _lazy(self, first_text, then_fn, negate):
        """``t = first; if (t) t = then()`` (and) or ``if (!t)`` (or), the second part lazily."""
        with self.code.capture() as cap:
            rest = then_fn()
        if not cap.lines:
            return CVal(f"({first_text} {'||' if negate else '&&'} {rest})", "bool")
        t = self.unit.tmp()
        self.code(f"int64_t {t} = {first_text};")
        self.code(f"if ({'!' if negate else ''}{t}) {{")
        self.code.lines.extend(cap.lines)
        self.code(f"    {t} = {rest};")
        self.code("}")
        return CVal(t, "bool")

    def v_BoolOp(self, e):
        left = self.value(e.left)
        if left.is_const and left.type in ("int", "bool", "float", "str", "none"):
            decided = bool(left.const) != (e.op == "and")
            if decided:
                return CVal("1" if left.const else "0", "bool", bool(left.const))
            right = self.value(e.right)
            if right.is_const:
                return CVal("1" if right.const else "0", "bool", bool(right.const))
            return CVal(self.truth_of(right), "bool")
        return self._lazy(self.truth_of(left), lambda: self.truth(e.right), e.op == "or")

    def v_Not(self, e):
        v = self.value(e.operand)
        if v.is_const:
            return CVal("0" if v.const else "1", "bool", not v.const)
        return CVal(f"(!{self.truth_of(v)})", "bool")

    def v_Select(self, e):
        cond = self.value(e.cond)
        if cond.is_const:
            return self.value(e.then if cond.const else e.orelse)
        c = self.truth_of(cond)
        with self.code.capture() as cap_then:
            then = self.value(e.then)
        with self.code.capture() as cap_else:
            orelse = self.value(e.orelse)
        rtype = _select_type(then.type, orelse.type)
        a, b = self.convert(then, rtype), self.convert(orelse, rtype)
        if not cap_then.lines and not cap_else.lines:
            return CVal(f"({c} ? {a} : {b})", rtype)
        t = self.tmp(rtype)
        self.code(f"if ({c}) {{")
        self.code.lines.extend(cap_then.lines)
        self.code(f"    {t} = {a};")
        self.code("} else {")
        self.code.lines.extend(cap_else.lines)
        self.code(f"    {t} = {b};")
        self.code("}")
        return CVal(t, rtype)

    def v_Call(self, e):
        args = [self.value(a) for a in e.args]
        site = self.site_of(e)
        for a in args:
            if a.type not in NUMERIC:
                raise _Untranslatable(e, f"{e.func}() of a {a.type}")
        if e.func == "abs":
            if len(args) != 1:
                raise _Untranslatable(e, "abs() with several arguments")
            v = args[0]
            if v.is_const:
                return self.v_Const(Const(abs(v.const)))
            if v.type in INTISH:
                s = self.stable(v)
                self.code(f"if (BN_UNLIKELY({s} == INT64_MIN)) {self.fail(site, 'BN_K_OVERFLOW')}")
                return CVal(f"({s} < 0 ? -{s} : {s})", "int")
            if v.type == "float":
                return CVal(f"fabs({v})", "float")
            return self.check(f"bn_abs_n({{out}}, {v})", site, "num", "num")
        out = args[0]
        for b in args[1:]:
            out = self.minmax(e.func, out, b)
        if len(args) == 1:
            raise _Untranslatable(e, f"{e.func}() of one number")
        return out

    def minmax(self, func, a, b):
        if a.is_const and b.is_const:
            return self.v_Const(Const(getattr(builtins, func)(a.const, b.const)))
        sign = "<" if func == "min" else ">"
        if a.type in INTISH and b.type in INTISH or a.type == b.type == "float":
            a, b = self.stable(a), self.stable(b)
            rtype = "float" if a.type == "float" else ("bool" if a.type == b.type == "bool" else "int")
            return CVal(f"({b} {sign} {a} ? {b} : {a})", rtype)
        return CVal(f"bn_{func}_nn({self.to_num(a)}, {self.to_num(b)})", "num")

    def v_FuncCall(self, e):
        info = self.unit.program.funcs.get(e.func)
        if info is None:
            raise BeastError(f"internal error: unknown function {e.func}")
        fname = self.unit.function(info)
        args = [self.value(a) for a in e.args]
        params = self.unit.param_types(info)
        texts = [self.convert(a, t) for a, t in zip(args, params)]
        t = self.tmp("int")
        self.code(f"if (BN_UNLIKELY({fname}(w, &{t}{''.join(', ' + x for x in texts)}))) {self.ctx.fail_prop()}")
        return CVal(t, "bool")

    # -- function-body constructs
    def v__PyBool(self, e):
        values = list(e.values)
        first = self.value(values[0])
        rest = values[1:]
        if not rest:
            return first
        if first.is_const and first.type in ("int", "bool", "float", "str", "none"):
            decided = bool(first.const) != (e.op == "and")
            if decided:
                return first
            return self.v__PyBool(_PyBool(e.op, rest)) if len(rest) > 1 else self.value(rest[0])
        # general case: the result type is the join of every operand's type
        with self.code.capture() as cap:
            tail = self.v__PyBool(_PyBool(e.op, rest)) if len(rest) > 1 else self.value(rest[0])
        rtype = _join(first.type, tail.type)
        if rtype not in NUMERIC:
            raise _Untranslatable(e, f"'{e.op}' of {first.type} and {tail.type} values")
        t = self.tmp(rtype)
        self.code(f"{t} = {self.convert(first, rtype)};")
        test = self.truth_of(CVal(t, rtype))
        self.code(f"if ({'' if e.op == 'and' else '!'}{test}) {{")
        self.code.lines.extend(cap.lines)
        self.code(f"    {t} = {self.convert(tail, rtype)};")
        self.code("}")
        return CVal(t, rtype)

    def v__Chain(self, e):
        operands = list(e.operands)
        a = self.value(operands[0])
        return self._chain(a, list(e.ops), operands[1:], e)

    def _chain(self, a, ops, rest, node):
        b = self.stable(self.value(rest[0]))
        op = ops[0]
        first = self._cmp_or_in(op, a, b, node)
        if len(ops) == 1:
            return first
        return self._lazy(self.truth_of(first), lambda: self.truth_of(self._chain(b, ops[1:], rest[1:], node)),
                          False)

    def _cmp_or_in(self, op, a, b, node):
        if op in ("in", "not in"):
            return self.contains(a, b, op == "not in", node)
        return self.compare(op, a, b, node)

    def v__In(self, e):
        item = self.value(e.item)
        cont = self.value(e.container)
        return self.contains(item, cont, e.negate, e)

    def contains(self, item, cont, negate, node):
        if item.type not in NUMERIC:
            if item.is_const and cont.is_const:
                try:
                    value = (item.const in cont.const) != negate
                except TypeError:
                    raise _Untranslatable(node, "'in' on these values") from None
                return CVal("1" if value else "0", "bool", value)
            raise _Untranslatable(node, f"'in' with a {item.type} value")
        x = self.stable(item)
        if cont.type == "range":
            a, b, c = cont.parts
            if x.type in INTISH:
                test = f"bn_range_has({a}, {b}, {c}, {x})"
            else:
                test = f"bn_range_has_d({a}, {b}, {c}, {self.to_double(x)})"
        elif cont.type == "list":
            test = f"bn_list_has(&{cont}, {x})" if x.type in INTISH else \
                f"bn_list_has_d(&{cont}, {self.to_double(x)})"
        elif cont.type == "carray":
            arr, n = cont.parts
            if n == 0:
                test = "0"
            else:
                test = f"bn_ints_has({arr}, {n}, {x})" if x.type in INTISH else \
                    f"bn_ints_has_d({arr}, {n}, {self.to_double(x)})"
        else:
            raise _Untranslatable(node, f"'in' on a {cont.type}")
        return CVal(f"(!{test})" if negate else test, "bool")

    def v__Eager(self, e):
        c, a, b = (self.value(x) for x in e.args)
        rtype = _select_type(a.type, b.type)
        return CVal(f"({self.truth_of(c)} ? {self.convert(a, rtype)} : {self.convert(b, rtype)})", rtype)

    def v__Range(self, e):
        args = [self.value(a) for a in e.args]
        a, b, c = self.range_args(args, self.site_of(e), e)
        return CVal(None, "range", parts=(a, b, c))

    def range_args(self, args, site, node=None):
        """Validate range(start, stop, step) as Python does (step first); C texts of the three."""
        start, stop, step = args
        for v in (step, start, stop):
            if v.type not in NUMERIC:
                raise _Untranslatable(node, f"range() of a {v.type}")
        out = {}
        for name, v in (("step", step), ("start", start), ("stop", stop)):
            if v.type == "float":
                self.code(self.fail(site, "BN_K_RANGE_NOT_INT"))
                out[name] = "0"
            elif v.type == "num":
                s = self.stable(v)
                self.code(f"if (BN_UNLIKELY({s}.f)) {self.fail(site, 'BN_K_RANGE_NOT_INT')}")
                out[name] = f"{s}.i"
            else:
                out[name] = self.stable(v).text
            if name == "step" and not (v.is_const and v.const != 0):
                self.code(f"if (BN_UNLIKELY({out['step']} == 0)) {self.fail(site, 'BN_K_RANGE_STEP_ZERO')}")
        return out["start"], out["stop"], out["step"]

    def v__ConstArr(self, e):
        arr = self.unit.int_array(e.values)
        return CVal(arr, "carray", e.values, parts=(arr, len(e.values)))

    def v__ListLit(self, e):
        return self.materialize(e)

    def v__Comp(self, e):
        return self.materialize(e)

    def v__ListOf(self, e):
        return self.materialize(e)

    def materialize(self, e):
        """A fresh list (function-level temporary) holding the values of ``e``."""
        lst = self.ctx.new_list()
        self.code(f"{lst}.n = 0;")
        site = self.site_of(e)

        def push(v):
            if v.type not in INTISH:
                raise _Untranslatable(e, f"a list of {v.type} values (lists of integers only)")
            self.code(f"if (BN_UNLIKELY(bn_e = bn_list_push(&{lst}, {v}))) {self.fail(site, 'bn_e')}")

        if isinstance(e, _ListLit):
            for x in e.elts:
                push(self.value(x))
        elif isinstance(e, _Comp):
            self.comprehension(e, push)
        else:
            self.iterate(e.iterable, lambda v: push(v), e)
        return CVal(lst, "list")

    def comprehension(self, e, body, gens=None):
        gens = list(e.gens if gens is None else gens)
        target, iterable, ifs = gens[0]

        def inner(v):
            var = self.unit.tmp()
            vt = "int" if v.type in INTISH else v.type
            if vt not in NUMERIC:
                raise _Untranslatable(e, f"a comprehension over {v.type} values")
            self.code(f"{CTYPE[vt]} {var} = {self.convert(v, vt)};")
            self.code(f"(void){var};")
            self.scopes.append({target: CVal(var, vt)})
            try:
                for cond in ifs:
                    self.code(f"if (!{self.truth(cond)}) continue;")
                if len(gens) > 1:
                    self.comprehension(e, body, gens[1:])
                else:
                    body(self.value(e.elt))
            finally:
                self.scopes.pop()

        self.iterate(iterable, inner, e)

    def iterate(self, iterable, body, node, value=None):
        """Run ``body(CVal)`` for each value of an iterable: a range, a list, a constant array."""
        cont = value if value is not None else self.value(iterable)
        i = self.unit.tmp()
        if cont.type == "range":
            a, b, c = cont.parts
            n = self.unit.tmp()
            self.code(f"uint64_t {n} = bn_range_len({a}, {b}, {c});")
            self.code.open(f"for (uint64_t {i} = 0; {i} < {n}; {i}++) {{")
            body(CVal(f"bn_range_at({a}, {c}, {i})", "int"))
            self.code.close()
        elif cont.type == "list":
            self.code.open(f"for (int64_t {i} = 0; {i} < {cont}.n; {i}++) {{")
            body(CVal(f"{cont}.v[{i}]", "int"))
            self.code.close()
        elif cont.type == "carray":
            arr, n = cont.parts
            if n:
                self.code.open(f"for (int64_t {i} = 0; {i} < {n}; {i}++) {{")
                body(CVal(f"{arr}[{i}]", "int"))
                self.code.close()
        else:
            raise _Untranslatable(node, f"iterating over a {cont.type}")

    def v__Fold(self, e):
        func = e.func
        site = self.site_of(e)
        it = e.iterable
        if func == "len":
            v = self.value(it)
            if v.type == "list":
                return CVal(f"{v}.n", "int")
            if v.type == "carray":
                return self.v_Const(Const(v.parts[1]))
            if v.type == "range":
                return CVal(f"(int64_t)bn_range_len({v.parts[0]}, {v.parts[1]}, {v.parts[2]})", "int")
            raise _Untranslatable(e, f"len() of a {v.type}")
        done = self.unit.tmp()
        if func in ("all", "any"):
            r = self.let("bool", "1" if func == "all" else "0")

            def body(v):
                test = self.truth_of(v)
                if func == "all":
                    self.code(f"if (!{test}) {{ {r} = 0; goto {done}; }}")
                else:
                    self.code(f"if ({test}) {{ {r} = 1; goto {done}; }}")
        elif func == "sum":
            r = self.let("int", "0")

            def body(v):
                if v.type not in INTISH:
                    raise _Untranslatable(e, f"sum() of {v.type} values")
                self.code(f"if (BN_UNLIKELY(__builtin_add_overflow({r}, {v}, &{r}))) "
                          f"{self.fail(site, 'BN_K_OVERFLOW')}")
        elif func in ("min", "max"):
            r = self.let("int", "0")
            seen = self.let("bool", "0")
            sign = "<" if func == "min" else ">"

            def body(v):
                if v.type not in INTISH:
                    raise _Untranslatable(e, f"{func}() of {v.type} values")
                x = self.stable(v)
                self.code(f"if (!{seen} || {x} {sign} {r}) {{ {r} = {x}; {seen} = 1; }}")
        else:
            raise _Untranslatable(e, f"{func}()")
        if isinstance(it, _Comp):
            self.comprehension(it, body)
        else:
            self.iterate(it, body, e)
        self.code(f"goto {done};")
        self.code(f"{done}:;")
        if func in ("min", "max"):
            kind = "BN_K_EMPTY_MIN" if func == "min" else "BN_K_EMPTY_MAX"
            self.code(f"if (BN_UNLIKELY(!{seen})) {self.fail(site, kind)}")
        return CVal(r.text, "bool" if func in ("all", "any") else "int")

    def v__Index(self, e):
        cont = self.value(e.container)
        idx = self.value(e.index)
        site = self.site_of(e)
        if idx.type not in INTISH:
            raise _Untranslatable(e, f"an index of type {idx.type}")
        if cont.type == "list":
            n, data, kind = f"{cont}.n", f"{cont}.v", "BN_K_LIST_INDEX"
        elif cont.type == "carray":
            if cont.parts[1] == 0:
                self.code(self.fail(site, "BN_K_TUPLE_INDEX" if e.container.is_tuple else "BN_K_LIST_INDEX"))
                return CVal("0", "int")
            n, data = str(cont.parts[1]), cont.parts[0]
            kind = "BN_K_TUPLE_INDEX" if isinstance(e.container, _ConstArr) and e.container.is_tuple \
                else "BN_K_LIST_INDEX"
        else:
            raise _Untranslatable(e, f"indexing a {cont.type}")
        i = self.let("int", idx.text)
        self.code(f"if ({i} < 0) {i} += {n};")
        self.code(f"if (BN_UNLIKELY({i} < 0 || {i} >= {n})) {self.fail(site, kind)}")
        return CVal(f"{data}[{i}]", "int")

    def v__Conv(self, e):
        v = self.value(e.value)
        site = self.site_of(e)
        if v.type not in NUMERIC:
            raise _Untranslatable(e, f"{e.to}() of a {v.type}")
        if e.to == "bool":
            return CVal(self.truth_of(v), "bool")
        if e.to == "float":
            return CVal(self.to_double(v), "float")
        if v.type in INTISH:
            return CVal(v.text, "int")
        if v.type == "float":
            return self.check(f"bn_d2i({{out}}, {v})", site, "int", "int")
        s = self.stable(v)
        t = self.tmp("int")
        self.code(f"if ({s}.f) {{ if (BN_UNLIKELY(bn_e = bn_d2i(&{t}, {s}.d))) {self.fail(site, 'bn_e')} }}"
                  f" else {t} = {s}.i;")
        return CVal(t, "int")


# ---------------------------------------------------------------------------------------------
# User functions: AST -> C (translation)

class _FuncCtx:
    """Failure statements and list temporaries inside a translated function."""

    def __init__(self, unit):
        self.unit = unit
        self.lists = []

    def fail(self, site, kind):
        return f"{{ w->site = {site}; w->kind = {kind}; bn_rc = 1; goto bn_out; }}"

    def fail_prop(self):
        raise _Untranslatable(None, "a call of another beast function")

    def new_list(self):
        name = self.unit.tmp()
        self.lists.append(name)
        return name


class _FuncGen:
    """Translate one user function body to C (raises _Untranslatable when it cannot)."""

    def __init__(self, unit, info, fname):
        self.unit, self.info, self.fname = unit, info, fname
        self.fdef = info.fdef
        self.kind = "closure" if info.closure else ("iterator" if info.role == "iterator" else "condition")
        self.params = list(info.node_args)
        self.ptypes = dict(zip(self.params, unit.param_types(info)))
        self.consts = dict(info.constants)
        self.code = _Code(1)
        self.ctx = _FuncCtx(unit)
        self.gen = _Gen(unit, self.code, self.resolve, self.ctx)
        self.locals = {}          # name -> CVal (C variable)
        self.comp_targets = set()
        for node in ast.walk(ast.Module(body=self.fdef.body, type_ignores=[])):
            if isinstance(node, ast.comprehension):
                for t in ast.walk(node.target):
                    self.comp_targets.add(id(t))
        self.stored = set()
        for node in ast.walk(ast.Module(body=self.fdef.body, type_ignores=[])):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                    and id(node) not in self.comp_targets:
                self.stored.add(node.id)
        self.comp_names = []      # names bound by enclosing comprehensions (during conversion)

    # -- names
    def is_local(self, name):
        return name in self.stored or name in self.params or any(name in s for s in self.comp_names)

    def resolve(self, name):
        if name in self.locals:
            return self.locals[name]
        raise _Untranslatable(None, f"the name '{name}'")

    def site(self, node):
        if node is None or getattr(node, "lineno", None) is None:
            return self.gen.site
        end = node.end_col_offset if getattr(node, "end_lineno", node.lineno) == node.lineno else None
        return self.unit.user_site(self.info.filename, node.lineno, node.col_offset, end)

    def mark(self, expr, node):
        self.gen.pos[id(expr)] = self.site(node)
        self.unit.keep.append(expr)
        return expr

    # -- AST -> expression tree
    def fold(self, node):
        """The constant value of an expression that reads no local (None when it cannot fold)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and self.is_local(sub.id):
                return None
            if isinstance(sub, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Lambda,
                                ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
                return None
        if isinstance(node, ast.Name) and node.id not in self.consts and node.id not in ("True", "False", "None"):
            return None
        env = {"__builtins__": builtins, **self.consts,
               "select": lambda c, a, b: a if c else b}
        try:
            value = eval(compile(ast.Expression(body=node), self.info.filename, "eval"), env)  # noqa: S307
        except Exception:  # noqa: BLE001 - not a foldable constant (it fails at run time)
            return None
        if value is None or isinstance(value, (bool, int, float, str)):
            if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
                return None
            return Const(value)
        if isinstance(value, (tuple, list)) and all(type(v) in (int, bool) for v in value) \
                and all(INT64_MIN <= v <= INT64_MAX for v in value):
            return _ConstArr([int(v) for v in value], isinstance(value, tuple))
        if isinstance(value, range):
            return _Range([Const(value.start), Const(value.stop), Const(value.step)])
        return None

    def cv(self, node):
        folded = self.fold(node)
        if folded is not None:
            return folded
        method = getattr(self, "cv_" + type(node).__name__, None)
        if method is None:
            raise _Untranslatable(node, self._describe(node))
        return method(node)

    @staticmethod
    def _describe(node):
        names = {ast.Attribute: "attribute access", ast.Dict: "a dict", ast.Set: "a set",
                 ast.Starred: "'*' unpacking", ast.JoinedStr: "an f-string", ast.Lambda: "lambda",
                 ast.Yield: "a yield used as a value", ast.SetComp: "a set comprehension",
                 ast.DictComp: "a dict comprehension", ast.Slice: "a slice"}
        return names.get(type(node), f"the expression '{type(node).__name__}'")

    def cv_Name(self, node):
        if self.is_local(node.id):
            return Var(node.id)
        raise _Untranslatable(node, f"the name '{node.id}' as a value")

    def cv_Constant(self, node):
        return Const(node.value)

    def cv_BinOp(self, node):
        op = _AST_BINOPS.get(type(node.op))
        if op is None:
            raise _Untranslatable(node, "the '@' operator")
        return self.mark(BinOp(op, self.cv(node.left), self.cv(node.right)), node)

    def cv_UnaryOp(self, node):
        operand = self.cv(node.operand)
        if isinstance(node.op, ast.Not):
            return Not(operand)
        op = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}[type(node.op)]
        return self.mark(UnOp(op, operand), node)

    def cv_BoolOp(self, node):
        return _PyBool("and" if isinstance(node.op, ast.And) else "or", [self.cv(v) for v in node.values])

    def cv_Compare(self, node):
        ops = []
        for op in node.ops:
            if type(op) not in _AST_CMPOPS:
                raise _Untranslatable(node, "'is' comparisons")
            ops.append(_AST_CMPOPS[type(op)])
        operands = [self.cv(node.left)] + [self.cv(c) for c in node.comparators]
        if len(ops) == 1 and ops[0] not in ("in", "not in"):
            return Compare(ops[0], operands[0], operands[1])
        if len(ops) == 1:
            return _In(operands[0], operands[1], ops[0] == "not in")
        return _Chain(ops, operands)

    def cv_IfExp(self, node):
        return Select(self.cv(node.test), self.cv(node.body), self.cv(node.orelse))

    def cv_List(self, node):
        return self.mark(_ListLit([self.cv(e) for e in node.elts]), node)

    def cv_Tuple(self, node):
        return self.mark(_ListLit([self.cv(e) for e in node.elts], True), node)

    def cv_Subscript(self, node):
        if isinstance(node.slice, ast.Slice):
            raise _Untranslatable(node, "a slice")
        return self.mark(_Index(self.cv(node.value), self.cv(node.slice)), node)

    def _comp(self, node):
        gens = []
        self.comp_names.append(set())
        try:
            for g in node.generators:
                if g.is_async or not isinstance(g.target, ast.Name):
                    raise _Untranslatable(g, "a comprehension with a tuple target")
                it = self.cv(g.iter)
                self.comp_names[-1].add(g.target.id)
                gens.append((g.target.id, it, tuple(self.cv(c) for c in g.ifs)))
            elt = self.cv(node.elt)
        finally:
            self.comp_names.pop()
        return self.mark(_Comp(elt, gens), node)

    cv_ListComp = _comp
    cv_GeneratorExp = _comp

    def cv_Call(self, node):
        func = node.func
        if not isinstance(func, ast.Name) or self.is_local(func.id) or node.keywords \
                or any(isinstance(a, ast.Starred) for a in node.args):
            raise _Untranslatable(node, f"the call {ast.unparse(node.func)}()")
        name, args = func.id, node.args
        if name in ("min", "max") and len(args) >= 2:
            return self.mark(Call(name, tuple(self.cv(a) for a in args)), node)
        if name in ("min", "max", "all", "any", "sum", "len") and len(args) == 1:
            return self.mark(_Fold(name, self.cv(args[0])), node)
        if name == "abs" and len(args) == 1:
            return self.mark(Call("abs", (self.cv(args[0]),)), node)
        if name == "range" and 1 <= len(args) <= 3:
            parts = [self.cv(a) for a in args]
            if len(parts) == 1:
                parts = [Const(0), parts[0], Const(1)]
            elif len(parts) == 2:
                parts.append(Const(1))
            return self.mark(_Range(parts), node)
        if name in ("int", "float", "bool") and len(args) == 1:
            return self.mark(_Conv(name, self.cv(args[0])), node)
        if name in ("int", "float", "bool") and not args:
            return Const({"int": 0, "float": 0.0, "bool": False}[name])
        if name == "select" and len(args) == 3:
            return _Eager([self.cv(a) for a in args])
        if name == "list" and len(args) == 1:
            return self.mark(_ListOf(self.cv(args[0])), node)
        if name == "list" and not args:
            return _ListLit([])
        raise _Untranslatable(node, f"the call {name}()")

    # -- types of locals
    def infer(self, assigns):
        """Fixed point of the types of locals over every assignment."""
        env = {p: self.ptypes[p] for p in self.params if p in self.stored}
        for _ in range(20):
            changed = False
            for name, expr in assigns:
                t = self.type_of(expr, env)
                if t is None:
                    continue
                new = _join(env.get(name), t)
                if new != env.get(name):
                    env[name] = new
                    changed = True
            if not changed:
                break
        for name in self.stored:
            env.setdefault(name, "int")
        return env

    def type_of(self, e, env, scopes=None):
        """The static type of a converted expression (None when a local's type is not known yet)."""
        scopes = scopes or {}
        t = lambda x: self.type_of(x, env, scopes)  # noqa: E731
        if isinstance(e, tuple) and e and e[0] == "elem":
            return self.elem_type(e[1], env, scopes)
        if isinstance(e, Const):
            v = e.value
            return "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else \
                "float" if isinstance(v, float) else "str" if isinstance(v, str) else "none"
        if isinstance(e, Var):
            if e.name in scopes:
                return scopes[e.name]
            if e.name in env:
                return env[e.name]
            if e.name in self.params:
                return self.ptypes[e.name]
            return None
        if isinstance(e, (Compare, Not, _In, _Chain)):
            return "bool"
        if isinstance(e, BinOp):
            a, b = t(e.left), t(e.right)
            if a is None or b is None:
                return None
            if a not in NUMERIC or b not in NUMERIC:
                raise _Untranslatable(e, f"'{e.op}' on {a} and {b} values")
            if e.op == "/":
                return "float"
            if e.op in ("&", "|", "^"):
                return "bool" if a == b == "bool" else "int"
            if e.op in ("<<", ">>"):
                return "int"
            if "float" in (a, b):
                return "float"
            if e.op == "**":
                return "int" if a in INTISH and isinstance(e.right, Const) and type(e.right.value) is int \
                    and e.right.value >= 0 else "num"
            if "num" in (a, b):
                return "num"
            return "int"
        if isinstance(e, UnOp):
            a = t(e.operand)
            return None if a is None else ("int" if a == "bool" else a)
        if isinstance(e, (Select, _Eager)):
            parts = (e.then, e.orelse) if isinstance(e, Select) else e.args[1:]
            a, b = (t(p) for p in parts)
            return None if a is None or b is None else _select_type(a, b)
        if isinstance(e, Call):
            parts = [t(a) for a in e.args]
            if any(p is None for p in parts):
                return None
            if e.func == "abs":
                return "int" if parts[0] in INTISH else parts[0]
            out = parts[0]
            for p in parts[1:]:
                out = ("bool" if out == p == "bool" else "int") if out in INTISH and p in INTISH else \
                    ("float" if out == p == "float" else "num")
            return out
        if isinstance(e, _PyBool):
            out = None
            for v in e.values:
                x = t(v)
                if x is None:
                    return None
                out = _join(out, x)
            return out
        if isinstance(e, (_ListLit, _Comp, _ListOf, _ConstArr)):
            return "list"
        if isinstance(e, _Range):
            return "range"
        if isinstance(e, _Fold):
            return "bool" if e.func in ("all", "any") else "int"
        if isinstance(e, _Index):
            return "int"
        if isinstance(e, _Conv):
            return {"int": "int", "float": "float", "bool": "bool"}[e.to]
        raise _Untranslatable(e, f"the expression {type(e).__name__}")

    def elem_type(self, iterable, env, scopes):
        if isinstance(iterable, (_Range, _ListLit, _Comp, _ListOf, _ConstArr)):
            return "int"
        if isinstance(iterable, Var):
            t = self.type_of(iterable, env, scopes)
            if t is None:
                return None
            if t == "list":
                return "int"
        raise _Untranslatable(iterable, "a for loop over this iterable")

    def collect_assigns(self):
        out = []
        for node in ast.walk(ast.Module(body=self.fdef.body, type_ignores=[])):
            if isinstance(node, ast.Assign):
                value = self.cv(node.value)
                for tgt in node.targets:
                    if isinstance(tgt, ast.Name):
                        out.append((tgt.id, value))
                    elif isinstance(tgt, (ast.Tuple, ast.List)) and isinstance(value, _ListLit) \
                            and len(tgt.elts) == len(value.elts) \
                            and all(isinstance(x, ast.Name) for x in tgt.elts):
                        out.extend((x.id, v) for x, v in zip(tgt.elts, value.elts))
                    else:
                        raise _Untranslatable(tgt, "this assignment target")
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                if not isinstance(node.target, ast.Name):
                    raise _Untranslatable(node.target, "this assignment target")
                out.append((node.target.id, self.cv(node.value)))
            elif isinstance(node, ast.AugAssign):
                if not isinstance(node.target, ast.Name):
                    raise _Untranslatable(node.target, "this assignment target")
                op = _AST_BINOPS.get(type(node.op))
                if op is None:
                    raise _Untranslatable(node, "the '@=' operator")
                out.append((node.target.id, BinOp(op, Var(node.target.id), self.cv(node.value))))
            elif isinstance(node, ast.For):
                if not isinstance(node.target, ast.Name):
                    raise _Untranslatable(node.target, "a for loop with a tuple target")
                out.append((node.target.id, ("elem", self.cv(node.iter))))
            elif isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)) and not self.info.closure:
                raise _Untranslatable(node, "yield")
        return out

    # -- statements
    def translate(self):
        info = self.info
        assigns = self.collect_assigns()
        types = self.infer(assigns)
        decls = []
        for p in self.params:
            ptype = self.ptypes[p]
            if p in self.stored:
                continue
            self.locals[p] = CVal(f"p_{_mangle(p)}", ptype)
        for name in sorted(self.stored):
            ltype = types[name]
            if name in self.params:
                ltype = _join(ltype, self.ptypes[name])
            cname = f"l_{_mangle(name)}"
            if ltype == "list":
                decls.append(f"bn_list {cname} = BN_LIST0;")
                self.ctx.lists.append(cname)
            elif ltype in CTYPE:
                init = ZERO[ltype]
                if name in self.params:
                    init = self.gen.convert(CVal(f"p_{_mangle(name)}", self.ptypes[name]), ltype)
                decls.append(f"{CTYPE[ltype]} {cname} = {init};")
            else:
                raise _Untranslatable(None, f"the local '{name}' (a {ltype})")
            self.locals[name] = CVal(cname, ltype)
        self.gen.site = self.site(self.fdef)
        self.statements(self.fdef.body)
        # falling off the end
        if self.kind == "iterator":
            self.code("out->kind = BN_SEQ_NONE;")
        elif self.kind == "condition":
            self.code("*out = 0;")
        out_type = "bn_seq *out" if self.kind != "condition" else "int64_t *out"
        params = "".join(f", {CTYPE[self.ptypes[p]]} p_{_mangle(p)}" for p in self.params)
        lines = [f"static int {self.fname}(bn_w *w, {out_type}{params})",
                 "{", "    int bn_rc = 0, bn_e = 0;"]
        lines += ["    " + d for d in decls]
        lines += ["    " + f"bn_list {name} = BN_LIST0;" for name in self.ctx.lists
                  if not name.startswith("l_")]
        used = ["w", "out", "bn_e"] + [f"p_{_mangle(p)}" for p in self.params] + \
            [self.locals[n].text for n in sorted(self.stored)]
        lines.append("    " + " ".join(f"(void){u};" for u in used))
        lines += self.code.lines
        lines += ["    goto bn_out;", "bn_out:"]
        lines += [f"    free({name}.v);" for name in self.ctx.lists]
        lines += ["    return bn_rc;", "}"]
        return "\n".join(lines)

    def statements(self, body):
        for st in body:
            self.statement(st)

    def assign(self, name, value):
        target = self.locals[name]
        if target.type == "list":
            if value.type == "carray":
                arr, n = value.parts
                self.code(f"{target}.n = 0;")
                if n:
                    i = self.unit.tmp()
                    self.code(f"for (int64_t {i} = 0; {i} < {n}; {i}++)")
                    self.code(f"    if (BN_UNLIKELY(bn_e = bn_list_push(&{target}, {arr}[{i}]))) "
                              f"{self.ctx.fail(self.gen.site, 'bn_e')}")
                return
            if value.type != "list":
                raise _Untranslatable(None, f"assigning a {value.type} to the list '{name}'")
            self.code(f"if (BN_UNLIKELY(bn_e = bn_list_copy(&{target}, &{value}))) "
                      f"{self.ctx.fail(self.gen.site, 'bn_e')}")
            return
        if value.type not in NUMERIC:
            raise _Untranslatable(None, f"assigning a {value.type} to '{name}'")
        self.code(f"{target} = {self.gen.convert(value, target.type)};")

    def statement(self, st):
        gen = self.gen
        saved = gen.site
        gen.site = self.site(st)
        self.code(c_comment(f"line {st.lineno}: {ast.unparse(st).splitlines()[0]}"))
        try:
            self._statement(st)
        finally:
            gen.site = saved

    def _list_value(self, expr, name):
        """A list value for an assignment: a fresh list (aliasing a list variable is refused)."""
        if isinstance(expr, Var):
            raise _Untranslatable(None, f"'{name} = {expr.name}' (two names for one list)")
        if isinstance(expr, _ListLit) and not expr.elts:
            return None
        return self.gen.value(expr)

    def _statement(self, st):
        gen, code = self.gen, self.code
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            if isinstance(st, ast.AnnAssign) and st.value is None:
                return
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            expr = self.cv(st.value)
            if len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)):
                names = [x.id for x in targets[0].elts]
                values = []
                for v in expr.elts:      # every value first, then the assignments (a copy each)
                    v = gen.value(v)
                    if v.type not in NUMERIC:
                        raise _Untranslatable(st, f"unpacking a {v.type}")
                    values.append(v if v.is_const else gen.let(v.type, v.text))
                for n, v in zip(names, values):
                    self.assign(n, v)
                return
            names = [t.id for t in targets]
            if self.locals[names[0]].type == "list":
                value = self._list_value(expr, names[0])
                for n in names:
                    if value is None:
                        code(f"{self.locals[n]}.n = 0;")
                    else:
                        self.assign(n, value)
                return
            value = gen.value(expr)
            if len(names) > 1:
                value = gen.stable(value)
            for n in names:
                self.assign(n, value)
        elif isinstance(st, ast.AugAssign):
            name = st.target.id
            if self.locals[name].type == "list":
                raise _Untranslatable(st, "'+=' on a list")
            expr = self.mark(BinOp(_AST_BINOPS[type(st.op)], Var(name), self.cv(st.value)), st)
            self.assign(name, gen.value(expr))
        elif isinstance(st, ast.If):
            test = self.cv(st.test)
            v = gen.value(test)
            if v.is_const:
                self.statements(st.body if v.const else st.orelse)
                return
            code.open(f"if ({gen.truth_of(v)}) {{")
            self.statements(st.body)
            if st.orelse:
                code.close("} else {")
                code.indent += 1
                self.statements(st.orelse)
            code.close()
        elif isinstance(st, ast.While):
            test = self.cv(st.test)
            code.open("for (;;) {")
            v = gen.value(test)
            if v.is_const and not v.const:
                code("break;")
            elif not v.is_const:
                code(f"if (!{gen.truth_of(v)}) break;")
            self.statements(st.body)
            code.close()
        elif isinstance(st, ast.For):
            name = st.target.id
            iterable = self.cv(st.iter)
            if isinstance(iterable, Var):
                for sub in ast.walk(ast.Module(body=st.body, type_ignores=[])):
                    if isinstance(sub, ast.Name) and sub.id == iterable.name and isinstance(sub.ctx, ast.Store):
                        raise _Untranslatable(st, f"rebinding '{iterable.name}' while iterating over it")

            def body(v):
                self.assign(name, v)
                self.statements(st.body)
            gen.iterate(iterable, body, st)
        elif isinstance(st, ast.Break):
            code("break;")
        elif isinstance(st, ast.Continue):
            code("continue;")
        elif isinstance(st, ast.Return):
            self.ret(st)
        elif isinstance(st, ast.Expr):
            value = st.value
            if isinstance(value, ast.Constant):
                return
            if isinstance(value, ast.Yield):
                if self.kind != "closure":
                    raise _Untranslatable(value, "yield")
                v = gen.value(self.cv(value.value)) if value.value is not None else None
                if v is None or v.type not in NUMERIC:
                    raise _Untranslatable(value, "yielding a non-number")
                code(f"if (BN_UNLIKELY(bn_e = bn_seq_push(out, {gen.to_num(v)}))) {self.ctx.fail(gen.site, 'bn_e')}")
                return
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr == "append" and isinstance(value.func.value, ast.Name) \
                    and value.func.value.id in self.locals and self.locals[value.func.value.id].type == "list" \
                    and len(value.args) == 1 and not value.keywords:
                lst = self.locals[value.func.value.id]
                v = gen.value(self.cv(value.args[0]))
                if v.type not in INTISH:
                    raise _Untranslatable(value, f"appending a {v.type} (lists of integers only)")
                code(f"if (BN_UNLIKELY(bn_e = bn_list_push(&{lst}, {v}))) {self.ctx.fail(gen.site, 'bn_e')}")
                return
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                raise _Untranslatable(value, f"the method call .{value.func.attr}()")
            gen.value(self.cv(value))
        elif isinstance(st, ast.Pass):
            return
        else:
            raise _Untranslatable(st, f"the statement '{type(st).__name__}'")

    def ret(self, st):
        gen, code = self.gen, self.code
        if self.kind == "closure":
            if st.value is not None:
                gen.value(self.cv(st.value))
            code("goto bn_out;")
            return
        expr = self.cv(st.value) if st.value is not None else Const(None)
        if self.kind == "condition":
            v = gen.value(expr)
            code(f"*out = {gen.truth_of(v)};")
            code("goto bn_out;")
            return
        if isinstance(expr, Const) and expr.value is None:
            code("out->kind = BN_SEQ_NONE;")
        else:
            v = gen.value(expr)
            if v.type == "range":
                a, b, c = v.parts
                code(f"bn_seq_range(out, {a}, {b}, {c});")
            elif v.type == "carray":
                arr, n = v.parts
                code(f"bn_seq_ints(out, {arr if n else 'NULL'}, {n});")
            elif v.type == "list":
                i = self.unit.tmp()
                code(f"for (int64_t {i} = 0; {i} < {v}.n; {i}++)")
                code(f"    if (BN_UNLIKELY(bn_e = bn_seq_push(out, bn_ni({v}.v[{i}])))) "
                     f"{self.ctx.fail(gen.site, 'bn_e')}")
            elif v.type in NUMERIC:
                code(f"if (BN_UNLIKELY(bn_e = bn_seq_push(out, {gen.to_num(v)}))) {self.ctx.fail(gen.site, 'bn_e')}")
            else:
                raise _Untranslatable(st, f"returning a {v.type}")
        code("goto bn_out;")


# ---------------------------------------------------------------------------------------------
# User functions: tabulation over the finite domains of their arguments

class _Domains:
    """Supersets of the values every node can take, computed bottom-up in Python (None: too many
    or unknown). Conditions are ignored, so these are supersets of what the loop nest reaches."""

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
                out[(1, _float_bits(v)) if type(v) is float else (0, v)] = v
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
                return list(itertools.islice(result, MAX_VALUES))
            kind, vals = _classify_return(result)
            return vals if kind in ("values", "range") else []
        if isinstance(seq, DivisorSeq):
            n = evaluate(seq.n, env)
            return [d for d in range(evaluate(seq.base.start, env), evaluate(seq.base.stop, env))
                    if n == 0 or (d != 0 and n % d == 0)]
        if isinstance(seq, SetOpSeq):
            from ..lang import set_operation
            return set_operation(seq.op, list(self.seq_values(seq.left, env)),
                                 list(self.seq_values(seq.right, env)))
        return []


def _classify_return(result):
    """What the Python backend's _b_vals makes of a deferred function's return value."""
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


def _user_location(exc, filename):
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


class _Tabulator:
    def __init__(self, unit):
        self.unit = unit
        self._domains = None

    def domains(self):
        if self._domains is None:
            self._domains = _Domains(self.unit.program, self.unit.pyfuncs())
        return self._domains

    def key_of(self, value, type_):
        if type_ in INTISH:
            if type(value) not in (int, bool) or not INT64_MIN <= value <= INT64_MAX:
                raise _Untabulatable(f"an argument value {value!r} that is not a 64-bit integer")
            return [int(value)]
        if type_ == "float":
            if type(value) is not float:
                raise _Untabulatable(f"an argument value {value!r} that is not a float")
            return [_float_bits(value)]
        if type(value) is float:
            return [1, _float_bits(value)]
        if type(value) in (int, bool) and INT64_MIN <= value <= INT64_MAX:
            return [0, int(value)]
        raise _Untabulatable(f"an argument value {value!r} that is not a number")

    def tabulate(self, info, fname):
        unit = self.unit
        pyfuncs = unit.pyfuncs()
        if pyfuncs is None or info.ident not in pyfuncs:
            raise _Untabulatable("the Python function is not available")
        func = pyfuncs[info.ident]
        ptypes = unit.param_types(info)
        doms = []
        for arg in info.node_args:
            d = self.domains().values(arg)
            if d is None:
                raise _Untabulatable(f"the values of '{arg}' are not finite or too many to list")
            doms.append(d)
        size = 1
        for d in doms:
            size *= len(d)
        if size > TABLE_ENTRIES:
            raise _Untabulatable(f"its arguments take {size} combinations of values "
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
                    raise _Untabulatable(f"its results hold more than {TABLE_VALUES} values")
            entries.append((key, outcome))
        entries.sort(key=lambda kv: kv[0])
        return self.emit(info, fname, ptypes, entries)

    def run(self, info, func, args):
        """(kind, payload, error site): 'values' [python values], 'range' (a, b, c), 'none',
        'badret' message, 'truth' bool."""
        err = 0
        values = []
        try:
            if info.role == "condition":
                return ("truth", bool(func(*args)), 0)
            result = func(*args)
            if info.closure:
                for v in result:
                    values.append(v)
                    if len(values) > MAX_VALUES:
                        raise _Untabulatable("a call yields too many values")
                return ("values", values, 0)
            kind, payload = _classify_return(result)
            if kind == "range":
                return ("range", (payload.start, payload.stop, payload.step), 0)
            return (kind, payload, 0)
        except _Untabulatable:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded, raised when the configuration is reached
            filename, lineno, col, end = _user_location(exc, info.filename)
            err = self.unit.site(ExcSite(exc.with_traceback(None), filename, lineno, col, end))
        return ("values" if info.role != "condition" else "truth", values if info.role != "condition" else False,
                err)

    def value_tag(self, v):
        if type(v) in (int, bool) and INT64_MIN <= v <= INT64_MAX:
            return 0, int(v)
        if type(v) is float:
            return 1, _float_bits(v)
        self.unit.objects.append(v)
        return 2, len(self.unit.objects) - 1

    def emit(self, info, fname, ptypes, entries):
        unit = self.unit
        tid = unit.tmp()
        n = len(entries)
        width = sum(2 if t == "num" else 1 for t in ptypes)
        keys = [k for key, _ in entries for k in key]
        errs = [o[2] for _, o in entries]
        out = [c_comment(f"'{info.name}' tabulated over {n} argument tuples")]

        def array(ctype, name, values):
            body = ", ".join(str(v) if ctype != "int64_t" else c_int(v) for v in values) or "0"
            out.append(f"static const {ctype} {name}[] BN_UNUSED = {{{body}}};")

        array("int64_t", f"{tid}_k", keys)
        array("int32_t", f"{tid}_e", errs)
        params = "".join(f", {CTYPE[t]} p{i}" for i, t in enumerate(ptypes))
        key_parts = []
        for i, t in enumerate(ptypes):
            if t in INTISH:
                key_parts.append(f"p{i}")
            elif t == "float":
                key_parts.append(f"bn_dbits(p{i})")
            else:
                key_parts += [f"(int64_t)p{i}.f", f"p{i}.f ? bn_dbits(p{i}.d) : p{i}.i"]
        miss = unit.site(TableSite(info.name))
        body = [f"    int64_t key[{width + 1}] = {{{', '.join(key_parts + ['0'])}}};",
                f"    int64_t e = bn_tab_find({tid}_k, {n}, {width}, key);",
                "    (void)w; (void)key;",
                f"    if (BN_UNLIKELY(e < 0)) {{ w->site = {miss}; w->kind = BN_K_TABLE_MISS; return 1; }}"]
        if info.role == "condition":
            array("unsigned char", f"{tid}_v", [1 if o[1] else 0 for _, o in entries])
            sig = f"static int {fname}(bn_w *w, int64_t *out{params})"
            body.append(f"    *out = {tid}_v[e];")
        else:
            kinds, offs, vals, tags = [], [0], [], []
            for _, (kind, payload, _err) in entries:
                if kind == "range":
                    kinds.append(1)
                    vals += list(payload)
                    tags += [0, 0, 0]
                elif kind == "none":
                    kinds.append(2)
                elif kind == "badret":
                    kinds.append(3)
                    unit.objects.append(payload)
                    vals.append(len(unit.objects) - 1)
                    tags.append(0)
                else:
                    kinds.append(0)
                    for v in payload:
                        tag, bits = self.value_tag(v)
                        vals.append(bits)
                        tags.append(tag)
                offs.append(len(vals))
            array("unsigned char", f"{tid}_n", kinds)
            array("int64_t", f"{tid}_o", offs)
            array("int64_t", f"{tid}_v", vals)
            array("unsigned char", f"{tid}_t", tags)
            sig = f"static int {fname}(bn_w *w, bn_seq *out{params})"
            body += [f"    int64_t o = {tid}_o[e], m = {tid}_o[e + 1] - o, i;",
                     f"    switch ({tid}_n[e]) {{",
                     f"    case 1: bn_seq_range(out, {tid}_v[o], {tid}_v[o + 1], {tid}_v[o + 2]); break;",
                     "    case 2: out->kind = BN_SEQ_NONE; break;",
                     f"    case 3: out->kind = BN_SEQ_BADRET; out->extra = {tid}_v[o]; break;",
                     "    default:",
                     "        for (i = 0; i < m; i++) {",
                     "            bn_num x = BN_NUM0; int r;",
                     f"            x.f = {tid}_t[o + i]; x.i = {tid}_v[o + i];",
                     "            if (x.f == 1) { x.d = bn_bitsd(x.i); x.i = 0; }",
                     "            if (BN_UNLIKELY(r = bn_seq_push(out, x))) "
                     f"{{ w->site = {miss}; w->kind = r; return 1; }}",
                     "        }",
                     "    }"]
        body += [f"    if ({tid}_e[e]) {{ w->site = {tid}_e[e]; w->kind = BN_K_EXCEPTION; return 1; }}",
                 "    return 0;"]
        out += [sig, "{"] + body + ["}"]
        return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# The unit: global state of one printing

class _Unit:
    def __init__(self, program, pyfuncs):
        self.program = program
        self._pyfuncs = pyfuncs
        self.sites = [None]
        self.site_ids = {}
        self.objects = []
        self.statics = []
        self.functions = {}        # ident -> (C name, text)
        self.tabulated, self.translated = [], []
        self.ntmp = 0
        self.nseq = 0
        self.arrays = {}
        self.keep = []             # expression nodes whose ids key positions
        self.tabulator = _Tabulator(self)

    def pyfuncs(self):
        if callable(self._pyfuncs):
            self._pyfuncs = self._pyfuncs()
        return self._pyfuncs

    def tmp(self):
        self.ntmp += 1
        return f"bn_t{self.ntmp}"

    def seq_slot(self):
        slot = self.nseq
        self.nseq += 1
        return slot

    def site(self, info):
        self.sites.append(info)
        return len(self.sites) - 1

    def user_site(self, filename, lineno, col, end):
        k = (filename, lineno, col, end)
        if k not in self.site_ids:
            self.site_ids[k] = self.site(UserSite(*k))
        return self.site_ids[k]

    def int_array(self, values):
        values = tuple(values)
        if values not in self.arrays:
            name = f"bn_vals{len(self.arrays) + 1}"
            body = ", ".join(c_int(v) for v in values) or "0"
            self.statics.append(f"static const int64_t {name}[] BN_UNUSED = {{{body}}};")
            self.arrays[values] = name
        return self.arrays[values]

    def param_types(self, info):
        types = self.program.types
        out = []
        for a in info.node_args:
            t = types.get(a, "num")
            out.append(t if t in CTYPE else "num")
        return out

    def function(self, info):
        """The C function for a user function: translated, else tabulated, else an error."""
        if info.ident in self.functions:
            return self.functions[info.ident][0]
        fname = f"bn_fn_{_mangle(info.ident)}"
        self.functions[info.ident] = (fname, None)
        try:
            if FORCE_TABULATE:
                raise _Untranslatable(info.fdef, "(tabulation forced)")
            text = _FuncGen(self, info, fname).translate()
            self.translated.append(info.name)
        except _Untranslatable as why:
            node = why.node if why.node is not None and hasattr(why.node, "lineno") else info.fdef
            try:
                text = self.tabulator.tabulate(info, fname)
                self.tabulated.append(info.name)
            except _Untabulatable as tab:
                raise SpaceError.at(
                    node, info.filename,
                    f"the C backend cannot translate {why.reason} in '{info.name}', and cannot "
                    f"tabulate '{info.name}' instead: {tab}",
                    hint="use integers, if/elif/else, while, for over range() or a list, and local "
                         "lists of integers; or let the function's arguments take few values") from None
        self.functions[info.ident] = (fname, text)
        return fname


# ---------------------------------------------------------------------------------------------
# The loop nest

def claim_depths(program: Program) -> int:
    """The deepest block (0 = before the first loop) that is a chain: lets and checks, then one
    loop as its last statement. Work items are the runs of that loop; -1 when there is none."""
    depth, block = -1, program.body
    d = 0
    while d <= MAX_CLAIM_DEPTH and block and isinstance(block[-1], Loop) \
            and all(isinstance(s, (Let, Check)) for s in block[:-1]):
        depth = d
        block = block[-1].body
        d += 1
    return depth


class _WalkCtx:
    def __init__(self, printer):
        self.printer = printer
        self.bound = 0

    def fail(self, site, kind):
        self.printer.fail_used.add(self.bound)
        return f"{{ w->site = {site}; w->kind = {kind}; w->nbound = {self.bound}; goto bn_f{self.bound}; }}"

    def fail_prop(self):
        self.printer.fail_used.add(self.bound)
        return f"{{ w->nbound = {self.bound}; goto bn_f{self.bound}; }}"

    def new_list(self):
        raise _Untranslatable(None, "a list in the loop nest")


class CPrinter:
    """Print a :class:`~beast.ir.Program` as C."""

    def __init__(self, program: Program, pyfuncs=None):
        self.program = program
        self.unit = _Unit(program, pyfuncs)
        self.code = _Code(1)
        self.ctx = _WalkCtx(self)
        self.gen = _Gen(self.unit, self.code, self.resolve, self.ctx)
        self.py = PyExpr(program.types)
        self.loop_vars = {}        # var -> C name
        self.derived = {}          # var -> (C name, type)
        self.fail_used = set()
        self.nloops = 0
        self.claim_depth = claim_depths(program)
        for st in walk_statements(program.body):
            if isinstance(st, Loop):
                self.loop_vars[st.var] = f"v_{_mangle(st.var)}"
            elif isinstance(st, Let):
                t = program.types.get(st.var, st.type)
                self.derived[st.var] = (f"d_{_mangle(st.var)}", t if t in CTYPE else "num")

    def resolve(self, name):
        if name in self.loop_vars:
            return CVal(self.loop_vars[name], "int")
        if name in self.derived:
            cname, t = self.derived[name]
            return CVal(cname, t)
        raise BeastError(f"internal error: the loop nest reads '{name}', which it does not define")

    def compile(self, fn, site, bound):
        """Run ``fn`` with errors attributed to ``site`` and ``bound`` loops."""
        self.gen.site, self.ctx.bound = site, bound
        try:
            return fn()
        except _Untranslatable as why:
            raise BeastError(f"the C backend cannot compile {why.reason} in the loop nest") from None

    def node_site(self, stmt, lets):
        return self.unit.site(NodeSite(getattr(stmt, "node", None), stmt, tuple(lets)))

    # -- statements
    def block(self, stmts, depth, loops, lets):
        """``loops``: label ids of the enclosing loops (innermost last); ``lets``: lets in scope."""
        lets = list(lets)
        code = self.code
        for i, s in enumerate(stmts):
            if isinstance(s, Let):
                code(c_comment(f"let {s.var} = {self.py(s.expr)}"))
                site = self.node_site(s, lets)
                cname, t = self.derived[s.var]
                value = self.compile(lambda: self.gen.value(s.expr), site, depth)
                code(f"{cname} = {self.gen.convert(value, t)};")
                lets.append(s)
            elif isinstance(s, Check):
                code(c_comment(f"check {s.name}: {self.py(s.expr)}" + (" (break)" if s.exit == "break" else "")))
                site = self.node_site(s, lets)
                test = self.compile(lambda: self.gen.truth(s.expr), site, depth)
                if not loops:
                    target = "return 0;"
                elif s.exit == "break":
                    self.used_labels.add(f"bn_b{loops[-1]}")
                    target = f"goto bn_b{loops[-1]};"
                else:
                    self.used_labels.add(f"bn_n{loops[-1]}")
                    target = f"goto bn_n{loops[-1]};"
                if test == "1":
                    code(target)
                elif test != "0":
                    code(f"if ({test}) {target}")
            elif isinstance(s, Loop):
                claim = depth <= self.claim_depth and i == len(stmts) - 1 and self.chain_ok(stmts)
                if claim:
                    code(f"if (BN_UNLIKELY(__atomic_load_n(w->cancel, __ATOMIC_RELAXED))) return 2;")
                    code(f"if (w->split == {depth}) {{ int bn_c = bn_claim(w); if (bn_c < 0) return 2; "
                         f"if (bn_c == 0) goto bn_s{depth}; }}")
                self.loop(s, depth, loops, lets)
                if claim:
                    code(f"if (w->split == {depth} && bn_end(w) < 0) return 2;")
                    code(f"bn_s{depth}:;")
            elif isinstance(s, Emit):
                code("if (w->rows) {")
                code("    int64_t *bn_r = bn_row(w);")
                self.ctx.bound = depth
                code(f"    if (BN_UNLIKELY(!bn_r)) {self.ctx.fail(0, 'BN_K_NO_MEMORY')}")
                for j, col in enumerate(s.columns):
                    code(f"    bn_r[{j}] = {self.resolve(col).text};")
                code("} else {")
                code("    w->count++;")
                code("}")
            else:
                raise BeastError(f"internal error: unknown statement {s!r}")

    @staticmethod
    def chain_ok(stmts):
        return all(isinstance(s, (Let, Check)) for s in stmts[:-1])

    # -- pure counting (as the Python backend's count mode does it)
    def pure_nest(self, loop):
        return pure_nest(loop, self.program.types)

    def pure_count(self, nest, depth, lets):
        """Count a nest of loops that only multiply, as the loops would: lengths from the outside
        in, each sequence evaluated at the first value of the loops around it (its value does not
        depend on them), none after an empty one; an error names that loop and the values bound."""
        code = self.code
        pc, done = self.unit.tmp(), self.unit.tmp()
        code(f"int64_t {pc} = 1;")
        for j, l in enumerate(nest):
            seq = l.seq
            site = self.node_site(l, lets)
            var = self.loop_vars[l.var]

            def body():
                if isinstance(seq, ScalarSeq):
                    v = self.gen.value(seq.value)
                    code(f"{var} = {v};")
                    return
                if isinstance(seq, ValuesSeq):
                    values = list(seq.values)
                    if not values:
                        code(f"{pc} = 0;")
                        code(f"goto {done};")
                        return
                    code(f"{var} = {c_int(values[0])};")
                    code(f"if (BN_UNLIKELY(__builtin_mul_overflow({pc}, {len(values)}, &{pc}))) "
                         f"{self.ctx.fail(site, 'BN_K_COUNT_OVERFLOW')}")
                    return
                args = [self.gen.value(x) for x in seq.exprs()]
                a, b, c = self.gen.range_args(args, site)
                m = self.unit.tmp()
                code(f"uint64_t {m} = bn_range_len({a}, {b}, {c});")
                code(f"if ({m} == 0u) {{ {pc} = 0; goto {done}; }}")
                code(f"if (BN_UNLIKELY({m} > (uint64_t)INT64_MAX || __builtin_mul_overflow({pc}, (int64_t){m}, &{pc}))) "
                     f"{self.ctx.fail(site, 'BN_K_COUNT_OVERFLOW')}")
                code(f"{var} = {a};")
            self.compile(body, site, depth + j)
        code(f"goto {done};")
        code(f"{done}:")
        code(f"if (BN_UNLIKELY(__builtin_add_overflow(w->count, {pc}, &w->count))) "
             f"{{ w->site = 0; w->kind = BN_K_COUNT_OVERFLOW; w->nbound = {depth}; goto bn_f{depth}; }}")
        self.fail_used.add(depth)

    # -- loops
    def loop(self, s, depth, loops, lets):
        code = self.code
        self.nloops += 1
        lid = self.nloops
        var = self.loop_vars[s.var]
        site = self.node_site(s, lets)
        code(c_comment(f"for {s.var} in {self.describe(s.seq)}"))
        nest = self.pure_nest(s)
        if nest is not None:
            code.open("if (!w->rows) {")
            self.pure_count(nest, depth, lets)
            code.close("} else {")
            code.indent += 1
        code.open("{")
        inner_loops = loops + [lid]
        seq = s.seq

        def body():
            self.block(s.body, depth + 1, inner_loops, lets)
            if f"bn_n{lid}" in self.used_labels:
                code(f"bn_n{lid}:;")

        if isinstance(seq, RangeSeq):
            def setup():
                args = [self.gen.value(x) for x in seq.exprs()]
                return self.gen.range_args(args, site)
            a, b, c = self.compile(setup, site, depth)
            n, i = self.unit.tmp(), self.unit.tmp()
            code(f"uint64_t {n} = bn_range_len({a}, {b}, {c});")
            code.open(f"for (uint64_t {i} = 0; {i} < {n}; {i}++) {{")
            code(f"{var} = bn_range_at({a}, {c}, {i});")
            body()
            code.close()
        elif isinstance(seq, ValuesSeq):
            i = self.unit.tmp()
            values = list(seq.values)
            for v in values:
                if not INT64_MIN <= v <= INT64_MAX:
                    raise BeastError(f"iterator '{s.var}' has the value {v}, which does not fit in 64 bits")
            arr = self.unit.int_array(values) if values else None
            code.open(f"for (int64_t {i} = 0; {i} < {len(values)}; {i}++) {{")
            code(f"{var} = {arr}[{i}];" if arr else f"{var} = 0;")
            body()
            code.close()
        elif isinstance(seq, ScalarSeq):
            value = self.compile(lambda: self.gen.value(seq.value), site, depth)
            self.assign_value(var, value, s, depth)
            code.open("{")
            body()
            code.close()
        elif isinstance(seq, SolveSeq):
            def guard():
                return self.gen.truth(seq.guard)
            g = self.compile(guard, site, depth)
            code.open(f"if ({g}) {{")

            def solve():
                v = self.gen.value(seq.value)
                if v.type not in INTISH:
                    raise _Untranslatable(None, f"a solved loop over a {v.type} value")
                v = self.gen.stable(v)
                args = [self.gen.value(x) for x in seq.base.exprs()]
                a, b, c = self.gen.range_args(args, site)
                return v, a, b, c
            v, a, b, c = self.compile(solve, site, depth)
            code.open(f"if (bn_range_has({a}, {b}, {c}, {v})) {{")
            code(f"{var} = {v};")
            body()
            code.close()
            code.close()
        elif isinstance(seq, DivisorSeq):
            it = self.unit.tmp()
            self.compile(lambda: self.divisors(seq, it, site), site, depth)
            i = self.unit.tmp()
            code(f"int64_t {i};")
            code.open(f"while (bn_divs_next(&{it}, &{i})) {{")
            code(f"{var} = {i};")
            body()
            code.close()
        else:   # CallSeq, SetOpSeq: a scratch sequence
            slot = self.unit.seq_slot()
            q = f"bn_q{lid}"
            code(f"bn_seq *{q} = &w->seqs[{slot}];")
            self.compile(lambda: self.fill(seq, q, site, s), site, depth)
            i, x = self.unit.tmp(), self.unit.tmp()
            vsite = self.unit.site(LoopValueSite(s.node, s.var))
            code.open(f"for (int64_t {i} = 0; {i} < {q}->n; {i}++) {{")
            code(f"bn_num {x} = bn_seq_get({q}, {i});")
            self.ctx.bound = depth
            code(f"if (BN_UNLIKELY({x}.f)) {{ w->bad = {x}; {self.ctx.fail(vsite, 'BN_K_NON_INTEGER')[2:]}")
            code(f"{var} = {x}.i;")
            body()
            code.close()
            if isinstance(seq, CallSeq) and seq.closure:
                self.ctx.bound = depth
                self.fail_used.add(depth)
                code(f"if (BN_UNLIKELY({q}->pkind)) {{ w->site = {q}->psite; w->kind = {q}->pkind; "
                     f"w->nbound = {depth}; goto bn_f{depth}; }}")
        code.close()
        if nest is not None:
            code.close()
        if f"bn_b{lid}" in self.used_labels:
            code(f"bn_b{lid}:;")

    def assign_value(self, var, value, s, depth):
        code = self.code
        if value.type in INTISH:
            code(f"{var} = {value};")
            return
        vsite = self.unit.site(LoopValueSite(s.node, s.var))
        self.ctx.bound = depth
        if value.type == "float":
            code(f"w->bad = bn_nf({value}); {self.ctx.fail(vsite, 'BN_K_NON_INTEGER')}")
            code(f"{var} = 0;")
            return
        v = self.gen.stable(value)
        code(f"if (BN_UNLIKELY({v}.f)) {{ w->bad = {v}; {self.ctx.fail(vsite, 'BN_K_NON_INTEGER')[2:]}")
        code(f"{var} = {v}.i;")

    def divisors(self, seq, it, site):
        """Declare and start the divisor iteration ``it`` (n, then start and stop, as Python)."""
        gen, code = self.gen, self.code
        start, stop, _ = seq.base.exprs()
        vals = [gen.stable(gen.value(x)) for x in (seq.n, start, stop)]
        for v in vals:
            if v.type not in INTISH:
                raise _Untranslatable(None, f"a divisor loop over a {v.type} value")
        n, a, b = vals
        code(f"if (BN_UNLIKELY({n} != 0 && bn_divs_direct({a}, {b}) && {a} <= 0 && {b} > 0)) "
             f"{self.ctx.fail(site, 'BN_K_ZERO_MOD')}")
        code(f"bn_divs {it};")
        code(f"bn_divs_init(&{it}, {n}, {a}, {b});")

    def fill(self, seq, q, site, loop):
        """Fill the scratch sequence ``q`` (immediate errors fail now; a closure's stay pending)."""
        code, gen = self.code, self.gen
        if isinstance(seq, CallSeq):
            info = self.program.funcs.get(seq.func)
            if info is None:
                raise BeastError(f"internal error: unknown function {seq.func}")
            fname = self.unit.function(info)
            args = [gen.value(a) for a in seq.args]
            params = self.unit.param_types(info)
            texts = [gen.convert(a, t) for a, t in zip(args, params)]
            code(f"bn_seq_reset({q});")
            call = f"{fname}(w, {q}{''.join(', ' + t for t in texts)})"
            if seq.closure:
                code(f"if (BN_UNLIKELY({call})) {{ {q}->psite = w->site; {q}->pkind = w->kind; }}")
            else:
                code(f"if (BN_UNLIKELY({call})) {self.ctx.fail_prop()}")
                vsite = self.unit.site(LoopValueSite(loop.node, loop.var))
                code(f"if (BN_UNLIKELY({q}->kind == BN_SEQ_NONE)) {self.ctx.fail(vsite, 'BN_K_RETURNED_NONE')}")
                code(f"if (BN_UNLIKELY({q}->kind == BN_SEQ_BADRET)) {{ w->bad.i = {q}->extra; "
                     f"{self.ctx.fail(vsite, 'BN_K_BAD_RETURN')[2:]}")
            return
        if isinstance(seq, RangeSeq):
            args = [gen.value(x) for x in seq.exprs()]
            a, b, c = gen.range_args(args, site)
            code(f"bn_seq_range({q}, {a}, {b}, {c});")
            return
        if isinstance(seq, ValuesSeq):
            values = list(seq.values)
            code(f"bn_seq_ints({q}, {self.unit.int_array(values) if values else 'NULL'}, {len(values)});")
            return
        if isinstance(seq, ScalarSeq):
            v = gen.value(seq.value)
            code(f"bn_seq_reset({q});")
            code(f"if (BN_UNLIKELY(bn_e = bn_seq_push({q}, {gen.to_num(v)}))) {self.ctx.fail(site, 'bn_e')}")
            return
        if isinstance(seq, SolveSeq):
            code(f"bn_seq_reset({q});")
            g = gen.truth(seq.guard)
            code.open(f"if ({g}) {{")
            v = gen.stable(gen.value(seq.value))
            if v.type not in INTISH:
                raise _Untranslatable(None, f"a solved loop over a {v.type} value")
            args = [gen.value(x) for x in seq.base.exprs()]
            a, b, c = gen.range_args(args, site)
            code(f"if (bn_range_has({a}, {b}, {c}, {v}) && BN_UNLIKELY(bn_e = bn_seq_push({q}, bn_ni({v})))) "
                 f"{self.ctx.fail(site, 'bn_e')}")
            code.close()
            return
        if isinstance(seq, DivisorSeq):
            it, v = self.unit.tmp(), self.unit.tmp()
            self.divisors(seq, it, site)
            code(f"bn_seq_reset({q});")
            code(f"int64_t {v};")
            code(f"while (bn_divs_next(&{it}, &{v}))")
            code(f"    if (BN_UNLIKELY(bn_e = bn_seq_push({q}, bn_ni({v})))) {self.ctx.fail(site, 'bn_e')}")
            return
        if isinstance(seq, SetOpSeq):
            ql, qr = self.unit.tmp(), self.unit.tmp()
            code(f"bn_seq *{ql} = &w->seqs[{self.unit.seq_slot()}];")
            code(f"bn_seq *{qr} = &w->seqs[{self.unit.seq_slot()}];")
            self.fill(seq.left, ql, site, loop)
            self.fill(seq.right, qr, site, loop)
            for side in (ql, qr):
                self.fail_used.add(self.ctx.bound)
                code(f"if (BN_UNLIKELY({side}->pkind)) {{ w->site = {side}->psite; w->kind = {side}->pkind; "
                     f"w->nbound = {self.ctx.bound}; goto bn_f{self.ctx.bound}; }}")
            op = {"union": 0, "intersection": 1, "difference": 2}[seq.op]
            code(f"if (BN_UNLIKELY(bn_e = bn_setop({q}, {op}, {ql}, {qr}))) {self.ctx.fail(site, 'bn_e')}")
            return
        raise BeastError(f"internal error: unknown sequence {seq!r}")

    def describe(self, seq):
        if isinstance(seq, RangeSeq):
            return f"range({', '.join(self.py(x) for x in seq.exprs())})"
        if isinstance(seq, ValuesSeq):
            return repr(list(seq.values))
        if isinstance(seq, ScalarSeq):
            return f"({self.py(seq.value)},)"
        if isinstance(seq, CallSeq):
            return f"{seq.func}({', '.join(self.py(a) for a in seq.args)})"
        if isinstance(seq, SolveSeq):
            return f"({self.py(seq.value)},) if {self.py(seq.guard)} and in {self.describe(seq.base)}"
        if isinstance(seq, SetOpSeq):
            return f"{seq.op}({self.describe(seq.left)}, {self.describe(seq.right)})"
        if isinstance(seq, DivisorSeq):
            return f"divisors of {self.py(seq.n)} in {self.describe(seq.base)}"
        return type(seq).__name__

    # -- the file
    def render(self) -> CSource:
        p = self.program
        self.used_labels = set()
        self.block(p.body, 0, [], [])
        walk_lines = self.code.lines
        ncols = len(p.columns)
        out = [f"/* beast enumerator for space {p.name!r}: generated code, do not edit */",
               c_comment(f"loop order: {', '.join(p.loop_order) or '(no loops)'}"),
               c_comment(f"columns: {', '.join(p.columns) or '(none)'}"),
               _prelude(ncols, self.unit.nseq),
               f"#define BN_CLAIM_DEPTH {self.claim_depth}", ""]
        out += self.unit.statics
        out.append("")
        for ident, (fname, text) in self.unit.functions.items():
            out.append(text)
            out.append("")
        out.append("static int bn_walk(bn_w *w)")
        out.append("{")
        out.append("    int bn_e = 0;")
        for var, cname in self.loop_vars.items():
            out.append(f"    int64_t {cname} = 0;")
        for var, (cname, t) in self.derived.items():
            out.append(f"    {CTYPE[t]} {cname} = {ZERO[t]};")
        used = ["bn_e"] + list(self.loop_vars.values()) + [c for c, _ in self.derived.values()]
        out.append("    " + " ".join(f"(void){u};" for u in used))
        out += walk_lines
        out.append("    return 0;")
        # failures: record the bound loop values (loop order), deepest first, falling through
        order = list(p.loop_order)
        if self.fail_used:
            top = max(self.fail_used)
            for b in range(top, -1, -1):
                if b in self.fail_used:
                    out.append(f"bn_f{b}:")
                if b > 0:
                    name = order[b - 1] if b - 1 < len(order) else None
                    cname = self.loop_vars.get(name)
                    out.append(f"    w->cfg[{b - 1}] = {cname if cname else 0};")
            out.append("    return 1;")
        out.append("}")
        text = "\n".join(out) + "\n"
        return CSource(text, self.unit.sites, self.unit.objects, tuple(p.columns), self.claim_depth,
                       tuple(self.unit.tabulated), tuple(self.unit.translated))


def print_c(program: Program, pyfuncs=None) -> CSource:
    """Generate the C enumerator of a program. ``pyfuncs``: the user functions compiled in Python
    (ident -> callable, or a callable returning that dict), needed only to tabulate."""
    return CPrinter(program, pyfuncs).render()
