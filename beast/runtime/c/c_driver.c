/* beast's C runtime: worker threads, work items in enumeration order, streamed row blocks, and the
   entry points cffi calls (statistics and sampling included). Compiled once, after the prelude
   (beast/codegen/c_prelude.h), into an object that every generated enumerator is linked with
   (beast.runtime.c.enumerator, which fills in @TARGET@, @ABI@ and @BLOCK_ROWS@): the space's sizes,
   deepest claim point and walk are the enumerator's bn_the_space. The rows are found and written
   by the enumerator's walk (with the prelude's bn_row); this code runs per work item, claim and
   block of rows, and per row only to copy a sampled one (bn_pick_each). */
#include <pthread.h>
#include <time.h>

#define BN_SP (&bn_the_space)

typedef struct { int site, kind, nbound, bad_f; int64_t bad_i; double bad_d; int64_t *cfg; } bn_err;
/* an error: cfg holds ncols + 1 values, in storage its owner allocated */
typedef struct { int site, kind, nbound; bn_num bad; int64_t *cfg; } bn_rec;

/* Rows are written into fixed-size blocks; an item's full blocks are handed to the consumer as
   they fill, so the oldest item streams while it runs and memory stays bounded. */
#define BN_BLOCK_ROWS @BLOCK_ROWS@
typedef struct bn_block { struct bn_block *next; int64_t n; int64_t rows[]; } bn_block;

enum { BN_SLOT_FREE = 0, BN_SLOT_BUSY, BN_SLOT_DONE };
typedef struct {
    int64_t item;
    int state, failed;
    bn_rec err;
    bn_block *head, *tail;  /* published blocks, in row order */
    int64_t nblocks;
} bn_slot;

typedef struct bn_run {
    pthread_mutex_t mu;
    pthread_cond_t cv_space, cv_done;
    int rows, split;
    int cancel;             /* set by bn_close; read by the walks at claim points */
    int64_t window;         /* rows: items in flight */
    int64_t next_claim;     /* the next work item to hand out */
    int64_t consumed;       /* rows: items the consumer has taken */
    int64_t cur_off;        /* rows: rows of the head block of item `consumed` already taken */
    int64_t n_items;        /* -1 until a worker has walked to the end */
    int64_t err_key;        /* the first error outside items (count: any), 2k = before item k */
    int64_t stop_key;       /* the first error seen at all: no item after it is needed */
    bn_rec err;
    int64_t count;
    int64_t *tally;         /* beast stats: the workers' counters, summed (ntally + 1) */
    int64_t *cfgs;          /* the errors' bound values: the slots', then err's (ncols + 1 each) */
    bn_slot *slots;
    bn_block *pool;         /* free blocks */
    int64_t npool, buffered, limit;
    pthread_t *threads;
    int nthreads, started, active;
} bn_run;

typedef struct {
    bn_run *run; int64_t k, claim, item, target; int probe;
    bn_slot *slot; bn_block *blk; bn_rowbuf out;
} bn_drv;
typedef struct { bn_w w; bn_drv d; } bn_worker;

static const int bn_never = 0;

static void bn_w_free(bn_w *w) {
    if (w->seqs)
        for (int i = 0; i <= BN_SP->nseq; i++) free(w->seqs[i].v);
    free(w->seqs); free(w->cfg);
    w->seqs = NULL; w->cfg = w->tally = NULL;
}

/* a worker's walk state; 0 when out of memory */
static int bn_worker_init(bn_worker *x, bn_run *run, int rows, int split) {
    memset(x, 0, sizeof *x);
    x->w.cfg = (int64_t *)calloc((size_t)BN_SP->ncols + 1 + (size_t)BN_SP->ntally + 1, sizeof(int64_t));
    x->w.seqs = (bn_seq *)calloc((size_t)BN_SP->nseq + 1, sizeof(bn_seq));
    if (!x->w.cfg || !x->w.seqs) { bn_w_free(&x->w); return 0; }
    x->w.tally = x->w.cfg + BN_SP->ncols + 1;
    x->w.rows = rows; x->w.split = split; x->w.drv = &x->d;
    x->w.cancel = run ? &run->cancel : &bn_never;
    x->w.out = &x->d.out;
    x->d.run = run; x->d.claim = -1; x->d.item = -1;
    return 1;
}

static void bn_record(bn_rec *r, const bn_w *w) {
    r->site = w->site; r->kind = w->kind; r->nbound = w->nbound; r->bad = w->bad;
    for (int i = 0; i < BN_SP->ncols && i < w->nbound; i++) r->cfg[i] = w->cfg[i];
}

static void bn_export(bn_err *e, const bn_rec *r) {
    e->site = r->site; e->kind = r->kind; e->nbound = r->nbound;
    e->bad_f = r->bad.f; e->bad_i = r->bad.i; e->bad_d = r->bad.d;
    for (int i = 0; i < BN_SP->ncols && i < r->nbound; i++) e->cfg[i] = r->cfg[i];
}

static void bn_export_walk(bn_err *e, const bn_w *w) {
    bn_rec r = {w->site, w->kind, w->nbound, w->bad, w->cfg};
    bn_export(e, &r);
}

static void bn_export_oom(bn_err *e) {
    bn_rec r = {0, BN_K_NO_MEMORY, 0, BN_NUM0, NULL};
    bn_export(e, &r);
}

/* blocks: taken from and given back to the pool with the lock held */
static bn_block *bn_block_get(bn_run *run) {
    bn_block *b = run->pool;
    if (b) { run->pool = b->next; run->npool--; }
    else b = (bn_block *)malloc(sizeof *b + (size_t)BN_BLOCK_ROWS * (size_t)BN_SP->ncols * sizeof(int64_t));
    if (b) { b->next = NULL; b->n = 0; }
    return b;
}

static void bn_block_put(bn_run *run, bn_block *b) {
    if (run->npool < run->limit + 2 * (int64_t)run->nthreads) { b->next = run->pool; run->pool = b; run->npool++; }
    else free(b);
}

/* the next work item for a worker (-1: none); called with the lock held */
static int64_t bn_next_locked(bn_run *run) {
    for (;;) {
        int64_t c = run->next_claim;
        if (run->cancel || (run->n_items >= 0 && c >= run->n_items)
                || (run->stop_key >= 0 && 2 * c + 1 > run->stop_key))
            return -1;
        if (!run->rows || c < run->consumed + run->window) {
            run->next_claim = c + 1;
            if (run->rows) {
                bn_slot *s = &run->slots[c % run->window];
                s->item = c; s->state = BN_SLOT_BUSY; s->failed = 0;
                s->head = s->tail = NULL; s->nblocks = 0;
            }
            return c;
        }
        pthread_cond_wait(&run->cv_space, &run->mu);
    }
}

/* hand the current block (n rows) to the item's slot; lock held */
static void bn_hand_over(bn_drv *d) {
    bn_run *run = d->run; bn_block *b = d->blk;
    if (!b) return;
    d->blk = NULL;
    b->n = d->out.n;
    d->out.rows = NULL; d->out.n = d->out.cap = 0;
    if (b->n == 0) { bn_block_put(run, b); return; }
    if (d->slot->tail) d->slot->tail->next = b; else d->slot->head = b;
    d->slot->tail = b;
    d->slot->nblocks++; run->buffered++;
    pthread_cond_broadcast(&run->cv_done);
}

/* a fresh block for the worker; lock held; 0 when out of memory */
static int bn_fresh(bn_drv *d) {
    d->blk = bn_block_get(d->run);
    if (!d->blk) return 0;
    d->out.rows = d->blk->rows; d->out.n = 0; d->out.cap = BN_BLOCK_ROWS;
    return 1;
}

static void bn_start_item(bn_w *w, int64_t item) {
    bn_drv *d = (bn_drv *)w->drv;
    d->item = item;
    if (w->rows) {
        bn_run *run = d->run;
        d->slot = &run->slots[item % run->window];
        pthread_mutex_lock(&run->mu);
        bn_fresh(d);     /* without a block, the first row reports out of memory */
        pthread_mutex_unlock(&run->mu);
    }
}

BN_HIDDEN int64_t *bn_row_slow(bn_w *w) {
    bn_drv *d = (bn_drv *)w->drv;
    bn_run *run = d->run;
    if (!run || !w->rows || d->item < 0) return NULL;
    pthread_mutex_lock(&run->mu);
    bn_hand_over(d);
    /* backpressure: the oldest item may keep a few blocks waiting, the others share a budget */
    while (!run->cancel && (d->item == run->consumed ? d->slot->nblocks >= 4 : run->buffered >= run->limit))
        pthread_cond_wait(&run->cv_space, &run->mu);
    int ok = !run->cancel && bn_fresh(d);
    pthread_mutex_unlock(&run->mu);
    if (!ok) return NULL;
    return d->out.rows + (d->out.n++) * BN_SP->ncols;
}

BN_HIDDEN int bn_claim(bn_w *w) {
    bn_drv *d = (bn_drv *)w->drv;
    int64_t k = d->k++;
    if (d->probe) return d->k >= d->target ? -1 : 0;
    if (d->claim < 0) return -1;
    if (k < d->claim) return 0;
    bn_start_item(w, k);
    return 1;
}

BN_HIDDEN int bn_end(bn_w *w) {
    bn_drv *d = (bn_drv *)w->drv;
    bn_run *run = d->run;
    pthread_mutex_lock(&run->mu);
    if (w->rows) {
        bn_hand_over(d);
        d->slot->state = BN_SLOT_DONE;
        pthread_cond_broadcast(&run->cv_done);
    }
    d->item = -1;
    d->claim = bn_next_locked(run);
    pthread_mutex_unlock(&run->mu);
    return d->claim < 0 ? -1 : 0;
}

static void bn_work(bn_worker *x) {
    bn_w *w = &x->w; bn_drv *d = &x->d; bn_run *run = d->run;
    int rc;
    pthread_mutex_lock(&run->mu);
    d->claim = bn_next_locked(run);
    pthread_mutex_unlock(&run->mu);
    if (d->claim < 0) rc = 2;
    else {
        if (run->split < 0) bn_start_item(w, 0);     /* the whole walk is item 0 */
        rc = BN_SP->walk(w);
    }
    pthread_mutex_lock(&run->mu);
    if (rc == 0) {
        if (run->split < 0) {
            if (w->rows) { bn_hand_over(d); d->slot->state = BN_SLOT_DONE; }
            d->k = 1;
        }
        if (run->n_items < 0) run->n_items = d->k;
    } else if (rc == 1) {
        int64_t key = d->item >= 0 ? 2 * d->item + 1 : 2 * d->k;
        if (w->rows && d->item >= 0) {
            bn_hand_over(d);     /* the rows before the error come out first */
            bn_record(&d->slot->err, w);
            d->slot->failed = 1; d->slot->state = BN_SLOT_DONE;
        } else if (run->err_key < 0 || key < run->err_key) {
            run->err_key = key; bn_record(&run->err, w);
        }
        if (run->stop_key < 0 || key < run->stop_key) run->stop_key = key;
    }
    if (d->blk) { bn_block_put(run, d->blk); d->blk = NULL; }
    run->count += w->count;
    for (int i = 0; i < BN_SP->ntally; i++) run->tally[i] += w->tally[i];
    run->active--;
    pthread_cond_broadcast(&run->cv_done);
    pthread_cond_broadcast(&run->cv_space);
    pthread_mutex_unlock(&run->mu);
    bn_w_free(w);
}

static void *bn_thread(void *arg) {
    bn_work((bn_worker *)arg);
    return NULL;
}

/* the claim depth whose claim point is reached at least target times (or the most often) */
static int bn_choose_split(int nthreads) {
    if (BN_SP->claim_depth < 0) return -1;
    if (nthreads <= 1) return 0;
    int64_t target = (int64_t)@TARGET@ * nthreads, best_n = 0;
    int best = 0;
    for (int depth = 1; depth <= BN_SP->claim_depth; depth++) {
        bn_worker x;
        if (!bn_worker_init(&x, NULL, 0, depth)) break;
        x.d.probe = 1; x.d.target = target;
        int rc = BN_SP->walk(&x.w);
        bn_w_free(&x.w);
        if (x.d.k > best_n) { best = depth; best_n = x.d.k; }
        if (x.d.k >= target || rc == 1) break;
    }
    return best;
}

static void bn_free_run(bn_run *run) {
    if (run->slots)
        for (int64_t i = 0; i < run->window; i++)
            while (run->slots[i].head) { bn_block *b = run->slots[i].head; run->slots[i].head = b->next; free(b); }
    while (run->pool) { bn_block *b = run->pool; run->pool = b->next; free(b); }
    free(run->slots); free(run->threads); free(run->tally); free(run->cfgs);
    pthread_mutex_destroy(&run->mu);
    pthread_cond_destroy(&run->cv_space);
    pthread_cond_destroy(&run->cv_done);
    free(run);
}

static bn_run *bn_new_run(int rows, int nthreads, int64_t window) {
    bn_run *run = (bn_run *)calloc(1, sizeof *run);
    if (!run) return NULL;
    pthread_mutex_init(&run->mu, NULL);
    pthread_cond_init(&run->cv_space, NULL);
    pthread_cond_init(&run->cv_done, NULL);
    run->rows = rows;
    run->split = bn_choose_split(nthreads);
    run->nthreads = run->split < 0 ? 1 : nthreads;
    run->window = window < 1 ? 1 : window;
    run->n_items = -1; run->err_key = -1; run->stop_key = -1;
    run->limit = 8 * (int64_t)run->nthreads;
    run->threads = (pthread_t *)calloc((size_t)run->nthreads, sizeof *run->threads);
    int64_t nslots = rows ? run->window : 0, width = BN_SP->ncols + 1;
    if (rows) run->slots = (bn_slot *)calloc((size_t)nslots, sizeof *run->slots);
    run->tally = (int64_t *)calloc((size_t)BN_SP->ntally + 1, sizeof(int64_t));
    run->cfgs = (int64_t *)calloc((size_t)(nslots + 1) * (size_t)width, sizeof(int64_t));
    if (!run->threads || (rows && !run->slots) || !run->tally || !run->cfgs) { bn_free_run(run); return NULL; }
    for (int64_t i = 0; i < nslots; i++) { run->slots[i].item = -1; run->slots[i].err.cfg = run->cfgs + i * width; }
    run->err.cfg = run->cfgs + nslots * width;
    return run;
}

/* start every worker on its own thread */
static bn_worker *bn_start(bn_run *run) {
    bn_worker *xs = (bn_worker *)calloc((size_t)run->nthreads, sizeof *xs);
    if (!xs) return NULL;
    run->active = run->nthreads;
    for (int i = 0; i < run->nthreads; i++) {
        /* a worker that cannot start leaves its work items to the others */
        if (bn_worker_init(&xs[i], run, run->rows, run->split)
                && pthread_create(&run->threads[i], NULL, bn_thread, &xs[i]) == 0) run->started++;
        else {
            pthread_mutex_lock(&run->mu); run->active--; pthread_mutex_unlock(&run->mu);
            bn_w_free(&xs[i].w);
            xs[i].d.run = NULL;
        }
    }
    return xs;
}

int bn_abi(void) { return @ABI@; }

typedef struct { bn_run *run; bn_worker *xs; } bn_handle;

/* start an enumeration: rows = 1 streams rows (bn_fetch), 0 counts (bn_wait) */
void *bn_open(int rows, int nthreads, int64_t window) {
    bn_handle *h = (bn_handle *)calloc(1, sizeof *h);
    if (!h) return NULL;
    h->run = bn_new_run(rows, nthreads < 1 ? 1 : nthreads, rows ? window : 1);
    if (!h->run) { free(h); return NULL; }
    h->xs = bn_start(h->run);
    if (!h->xs || h->run->started == 0) { free(h->xs); bn_free_run(h->run); free(h); return NULL; }
    return h;
}

static int bn_timed_wait(bn_run *run, const struct timespec *deadline) {
    return pthread_cond_timedwait(&run->cv_done, &run->mu, deadline) != 0;
}

static void bn_deadline(struct timespec *t, int timeout_ms) {
    clock_gettime(CLOCK_REALTIME, t);
    t->tv_sec += timeout_ms / 1000;
    t->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) { t->tv_sec += 1; t->tv_nsec -= 1000000000L; }
}

/* counting: 0 still running after timeout_ms, 1 done (count in *out), -1 failed (err) */
int bn_wait(void *hv, int timeout_ms, int64_t *out, bn_err *err) {
    bn_run *run = ((bn_handle *)hv)->run;
    struct timespec deadline;
    bn_deadline(&deadline, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&run->mu);
    while (run->active > 0)
        if (bn_timed_wait(run, &deadline)) break;
    if (run->active == 0) {
        if (run->err_key >= 0) { bn_export(err, &run->err); rc = -1; }
        else { *out = run->count; rc = 1; }
    }
    pthread_mutex_unlock(&run->mu);
    return rc;
}

/* streaming: copy up to max_rows rows, in order, into out, waiting at most timeout_ms; returns the
   rows copied, *state = 1 at the end, -1 (and returns -1) when the enumeration fails first */
int64_t bn_fetch(void *hv, int64_t *out, int64_t max_rows, int timeout_ms, int *state, bn_err *err) {
    bn_run *run = ((bn_handle *)hv)->run;
    struct timespec deadline;
    bn_deadline(&deadline, timeout_ms);
    int64_t got = 0;
    *state = 0;
    pthread_mutex_lock(&run->mu);
    while (got < max_rows) {
        int64_t next = run->consumed;
        if (run->err_key >= 0 && run->err_key <= 2 * next) { bn_export(err, &run->err); got = -1; break; }
        if (run->n_items >= 0 && next >= run->n_items) { *state = 1; break; }
        bn_slot *s = &run->slots[next % run->window];
        if (s->item == next && s->head) {
            bn_block *b = s->head;
            int64_t take = b->n - run->cur_off;
            if (take > max_rows - got) take = max_rows - got;
            pthread_mutex_unlock(&run->mu);
            int64_t ncols = BN_SP->ncols;
            if (take > 0 && ncols > 0)
                memcpy(out + got * ncols, b->rows + run->cur_off * ncols, (size_t)(take * ncols) * sizeof *out);
            pthread_mutex_lock(&run->mu);
            got += take; run->cur_off += take;
            if (run->cur_off == b->n) {
                s->head = b->next;
                if (!s->head) s->tail = NULL;
                s->nblocks--; run->buffered--; run->cur_off = 0;
                bn_block_put(run, b);
                pthread_cond_broadcast(&run->cv_space);
            }
            continue;
        }
        if (s->item == next && s->state == BN_SLOT_DONE) {
            if (s->failed) { bn_export(err, &s->err); got = -1; break; }
            s->state = BN_SLOT_FREE; s->item = -1;
            run->consumed++;
            pthread_cond_broadcast(&run->cv_space);
            continue;
        }
        if (run->active == 0) { err->site = 0; err->kind = 0; err->nbound = 0; got = -1; break; }
        if (bn_timed_wait(run, &deadline)) break;
    }
    pthread_mutex_unlock(&run->mu);
    if (got < 0) *state = -1;
    return got;
}

/* beast stats, after bn_wait: the workers' counters (out[ntally]); returns the split depth.
   Statements at a depth <= the split are walked by every worker: count those with bn_outer. */
int bn_tally(void *hv, int64_t *out) {
    bn_run *run = ((bn_handle *)hv)->run;
    for (int i = 0; i < BN_SP->ntally; i++) out[i] = run->tally[i];
    return run->split;
}

/* beast stats: one walk of the loops above the claim points of depth `split` (every work item
   skipped): the counters of the statements there, each counted once; -1 when out of memory */
int bn_outer(int split, int64_t *out, const int *cancel) {
    bn_worker x;
    if (!bn_worker_init(&x, NULL, 0, split)) return -1;
    x.w.cancel = cancel;
    x.d.probe = 1; x.d.target = INT64_MAX;
    int rc = BN_SP->walk(&x.w);
    for (int i = 0; i < BN_SP->ntally; i++) out[i] = x.w.tally[i];
    bn_w_free(&x.w);
    return rc;
}

/* ---- sampling (beast.ir.prefix): walks whose outer loops are bound to given prefixes */
typedef struct {
    const int64_t *pre; int64_t npre; int width; int64_t *out;
    const int *cancel;      /* set by the caller (Ctrl-C): the walks stop at their next poll */
    int64_t next;           /* the next prefix to count (atomic) */
    int64_t err_j;          /* the first prefix whose walk failed, -1: none (lock held) */
    bn_rec err;
    pthread_mutex_t mu;
} bn_each;

static void *bn_each_thread(void *arg) {
    bn_each *e = (bn_each *)arg;
    bn_worker x;
    if (!bn_worker_init(&x, NULL, 0, -1)) return NULL;     /* the other threads take its prefixes */
    x.w.cancel = e->cancel;
    for (;;) {
        int64_t j = __atomic_fetch_add(&e->next, 1, __ATOMIC_RELAXED);
        if (j >= e->npre) break;
        pthread_mutex_lock(&e->mu);
        int stop = e->err_j >= 0 && e->err_j < j;
        pthread_mutex_unlock(&e->mu);
        if (stop) break;
        x.w.pre = e->pre + j * e->width;
        x.w.count = 0;
        int rc = BN_SP->walk(&x.w);
        if (rc == 2) break;         /* cancelled */
        if (rc == 1) {
            pthread_mutex_lock(&e->mu);
            if (e->err_j < 0 || j < e->err_j) { e->err_j = j; bn_record(&e->err, &x.w); }
            pthread_mutex_unlock(&e->mu);
            break;
        }
        e->out[j] = x.w.count;
    }
    bn_w_free(&x.w);
    return NULL;
}

/* the count under each of npre prefixes (width values each) into out; 0, -1 (err: the first
   failing prefix's error), or -2 when *cancel was set */
int bn_count_each(const int64_t *pre, int64_t npre, int width, int nthreads, int64_t *out, bn_err *err,
                  const int *cancel) {
    bn_each e;
    memset(&e, 0, sizeof e);
    e.pre = pre; e.npre = npre; e.width = width; e.out = out; e.err_j = -1; e.cancel = cancel;
    e.err.cfg = (int64_t *)calloc((size_t)BN_SP->ncols + 1, sizeof(int64_t));
    if (!e.err.cfg) { bn_export_oom(err); return -1; }
    pthread_mutex_init(&e.mu, NULL);
    pthread_t th[64];
    int started = 0;
    if (nthreads > 64) nthreads = 64;
    if (nthreads > npre) nthreads = (int)npre;
    for (int i = 1; i < nthreads; i++)
        if (pthread_create(&th[started], NULL, bn_each_thread, &e) == 0) started++;
    bn_each_thread(&e);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&e.mu);
    int rc = 0;
    if (__atomic_load_n(cancel, __ATOMIC_RELAXED)) rc = -2;
    else if (e.err_j >= 0) { bn_export(err, &e.err); rc = -1; }
    else if (e.next < npre) { bn_export_oom(err); rc = -1; }     /* no thread could walk */
    free(e.err.cfg);
    return rc;
}

/* the first cap survivors under one prefix, in order, into out: how many, -1 on error (the walk
   stops at the row after the cap-th: with no block left, bn_row fails with BN_K_NO_MEMORY), -2
   when *cancel was set */
int64_t bn_rows_under(const int64_t *pre, int64_t cap, int64_t *out, bn_err *err, const int *cancel) {
    bn_worker x;
    if (!bn_worker_init(&x, NULL, 1, -1)) { bn_export_oom(err); return -1; }
    x.w.pre = pre; x.w.cancel = cancel;
    x.d.out.rows = out; x.d.out.n = 0; x.d.out.cap = cap;
    int rc = BN_SP->walk(&x.w);
    int64_t n = x.d.out.n;
    if (rc == 2) n = -2;
    else if (rc == 1 && !(x.w.site == 0 && x.w.kind == BN_K_NO_MEMORY && n == cap)) {
        bn_export_walk(err, &x.w); n = -1;
    }
    bn_w_free(&x.w);
    return n;
}

/* for each of npre prefixes, the rows at nsel[j] ranks (ascending, in sel, one list after the
   other) of its subtree, into out, one after the other; scratch holds the largest rank + 1 rows.
   0, -1 on error, -2 when *cancel was set */
int bn_pick_each(const int64_t *pre, int64_t npre, int width, const int64_t *nsel, const int64_t *sel,
                 int64_t *scratch, int64_t *out, bn_err *err, const int *cancel) {
    int64_t k = 0;
    for (int64_t j = 0; j < npre; j++) {
        if (nsel[j] <= 0) continue;
        int64_t stop = sel[k + nsel[j] - 1] + 1;
        int64_t got = bn_rows_under(pre + j * width, stop, scratch, err, cancel);
        if (got == -2) return -2;
        if (got != stop) return -1;
        int64_t ncols = BN_SP->ncols;
        for (int64_t i = 0; i < nsel[j]; i++, k++)
            if (ncols > 0)
                memcpy(out + k * ncols, scratch + sel[k] * ncols, (size_t)ncols * sizeof *out);
    }
    return 0;
}

/* stop the workers (at their next claim point) and free everything */
void bn_close(void *hv) {
    bn_handle *h = (bn_handle *)hv;
    bn_run *run = h->run;
    pthread_mutex_lock(&run->mu);
    __atomic_store_n(&run->cancel, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&run->cv_space);
    pthread_cond_broadcast(&run->cv_done);
    pthread_mutex_unlock(&run->mu);
    for (int i = 0; i < run->nthreads; i++) if (h->xs[i].d.run) pthread_join(run->threads[i], NULL);
    free(h->xs);
    bn_free_run(run);
    free(h);
}
