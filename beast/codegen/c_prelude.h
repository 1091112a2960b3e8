/* beast's C prelude: Python's arithmetic on 64-bit integers and doubles, value sequences, set
   operations, divisor loops, lists, tables, and the walk's state. Included (as text) at the top of
   every generated enumerator by beast.codegen.c, which fills in the error kinds and the value limit,
   and of beast's runtime (beast.runtime.c.enumerator), which is compiled once without a space's sizes. */
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

/* a / b of integers (b != 0): the exact quotient rounded once, as Python's int / int. Past 2**53
   an operand would round on its conversion to double (twice in all): the quotient of |a| shifted to
   bit 126 by |b| keeps 63 bits or more, its remainder a sticky bit, rounded by the one conversion. */
BN_INLINE double bn_truediv_ii(int64_t a, int64_t b) {
    const int64_t lim = (int64_t)1 << 53;
    if (a >= -lim && a <= lim && b >= -lim && b <= lim) return (double)a / (double)b;
    uint64_t x = a < 0 ? 0u - (uint64_t)a : (uint64_t)a, y = b < 0 ? 0u - (uint64_t)b : (uint64_t)b;
    if (x == 0) return (b < 0) ? -0.0 : 0.0;
    int s = 63 + __builtin_clzll(x);
    unsigned __int128 n = (unsigned __int128)x << s, q = n / y;
    if (n % y != 0) q |= 1u;
    double r = ldexp((double)q, -s);
    return (a < 0) != (b < 0) ? -r : r;
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
    if (!a.f && !b.f) { if (b.i == 0) return BN_K_ZERO_TRUEDIV; *r = bn_truediv_ii(a.i, b.i); return 0; }
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

/* ---- the walk's state (one per worker thread) and the runtime's hooks. The runtime
   (beast/runtime/c/c_driver.c) is compiled once into an object every enumerator is linked with, so
   nothing here depends on the space: its sizes are in bn_space, defined by each enumerator. */
#define BN_HIDDEN __attribute__((visibility("hidden")))
typedef struct { int64_t *rows; int64_t n, cap; } bn_rowbuf;
typedef struct bn_w {
    int rows;                   /* 1: write rows into out, 0: count */
    int split;                  /* depth of the claim point that delimits work items, -1: none */
    int64_t count;
    bn_rowbuf *out;
    int site, kind, nbound;     /* the error: where, what, how many loops were bound */
    bn_num bad;                 /* non-integer value */
    int64_t *cfg;               /* bound loop values (loop order; ncols + 1) */
    int64_t *tally;             /* beast stats: the Tally counters of this worker (ntally + 1) */
    bn_seq *seqs;               /* scratch sequences, one per loop over a function or set (nseq + 1) */
    void *drv;                  /* the runtime's per-worker state */
    const int *cancel;          /* set by the runtime to stop the walk (read at claim points and polls) */
    const int64_t *pre;         /* sampling: the values bound to the outer loops (beast.ir.prefix) */
    int64_t tick;               /* iterations left before the next poll of cancel */
} bn_w;
/* the enumerator, as the runtime sees it: its sizes, its deepest claim point and its walk */
typedef struct {
    int ncols, nseq, ntally, claim_depth;
    int (*walk)(bn_w *w);
} bn_space;
BN_HIDDEN extern const bn_space bn_the_space;    /* defined by the enumerator */
/* every iterating loop polls: a walk stops within BN_TICKS iterations of a cancel (Ctrl-C);
   the loop nest's loops leave the walk (BN_POLL), a user function's loops fail (BN_STOPPED) */
#define BN_TICKS 65536
static inline int bn_stop(bn_w *w) {
    w->tick = BN_TICKS;
    return __atomic_load_n(w->cancel, __ATOMIC_RELAXED);
}
#define BN_STOPPED() (BN_UNLIKELY(--w->tick < 0) && bn_stop(w))
#define BN_POLL() do { if (BN_STOPPED()) return 2; } while (0)
BN_HIDDEN int bn_claim(bn_w *w);   /* at a claim point of depth w->split: 1 run, 0 skip, -1 stop */
BN_HIDDEN int bn_end(bn_w *w);     /* after the claimed loop: 0 go on walking, -1 stop */
BN_HIDDEN int64_t *bn_row_slow(bn_w *w);   /* out is full: a new block (NULL: out of memory, stopped) */
#ifdef BN_NCOLS
BN_HOT int64_t *bn_row(bn_w *w) {
    bn_rowbuf *b = w->out;
    if (BN_UNLIKELY(b->n == b->cap)) return bn_row_slow(w);
    return b->rows + (b->n++) * BN_NCOLS;
}
#endif

/* ---- a tabulated function (beast.codegen.c_body): its entries' sorted keys (nk per entry), the
   site of the exception each raised (0: none); a condition's results (r), or an iterator's entry
   kinds (r: 0 values, 1 a range, 2 None, 3 a bad return), value offsets (o), values (v) and their
   tags (t: 0 an integer, 1 a float's bits) */
typedef struct {
    const int64_t *k; const int32_t *e; const unsigned char *r;
    const int64_t *o, *v; const unsigned char *t;
    int64_t n; int nk, miss;
} bn_tab;
BN_INLINE int bn_tab_fail(bn_w *w, int site, int kind) { w->site = site; w->kind = kind; return 1; }
BN_INLINE int bn_tab_cond(bn_w *w, const bn_tab *t, const int64_t *key, int64_t *out) {
    int64_t e = bn_tab_find(t->k, t->n, t->nk, key);
    if (BN_UNLIKELY(e < 0)) return bn_tab_fail(w, t->miss, BN_K_TABLE_MISS);
    *out = t->r[e];
    return t->e[e] ? bn_tab_fail(w, t->e[e], BN_K_EXCEPTION) : 0;
}
BN_INLINE int bn_tab_seq(bn_w *w, const bn_tab *t, const int64_t *key, bn_seq *out) {
    int64_t e = bn_tab_find(t->k, t->n, t->nk, key), r;
    if (BN_UNLIKELY(e < 0)) return bn_tab_fail(w, t->miss, BN_K_TABLE_MISS);
    int64_t o = t->o[e], m = t->o[e + 1] - o;
    switch (t->r[e]) {
    case 1: bn_seq_range(out, t->v[o], t->v[o + 1], t->v[o + 2]); break;
    case 2: out->kind = BN_SEQ_NONE; break;
    case 3: out->kind = BN_SEQ_BADRET; out->extra = t->v[o]; break;
    default:
        for (int64_t i = 0; i < m; i++) {
            bn_num x = BN_NUM0;
            x.f = t->t[o + i]; x.i = t->v[o + i];
            if (x.f == 1) { x.d = bn_bitsd(x.i); x.i = 0; }
            if (BN_UNLIKELY(r = bn_seq_push(out, x))) return bn_tab_fail(w, t->miss, (int)r);
        }
    }
    return t->e[e] ? bn_tab_fail(w, t->e[e], BN_K_EXCEPTION) : 0;
}
