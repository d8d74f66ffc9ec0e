/*
 * run.c — the search loop: threads take chunks of candidates, check and
 * simulate them, keep a per-thread top-k (and every point when asked), and
 * the results are merged into one ranking. Determinism: a point's values
 * depend only on its knobs, and the ranking's ties are broken by the
 * candidate index, so the merge order does not matter.
 *
 * Branch and bound (an evaluator with `bound`, no keep_all): the threads
 * check and bound every candidate instead (pass A), the plans that fit are
 * sorted by their optimistic key, and pass B simulates them in that order,
 * a batch at a time, until the next bound is worse than the k-th best plan
 * found: every plan left then is worse than k simulated ones. The threshold
 * is read at batch starts and batches have a fixed size, so what is
 * simulated does not depend on the thread count.
 */
#include "search_int.h"
#include "../common/common_int.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- ranking ---------------------------------------------------------------- */
static double key_of(SearchObjective o, const SearchPoint *p)
{
    switch (o) {
    case SEARCH_OBJ_THROUGHPUT: return -p->tokens_per_s;
    case SEARCH_OBJ_TIME: return p->iteration_s;
    case SEARCH_OBJ_MEMORY: return p->memory_bytes;
    case SEARCH_OBJ_COST: /* the run's GPU-hours (cost at one price), else GPU-seconds per token */
        if (p->train_gpu_hours > 0) return p->train_gpu_hours;
        return p->tokens_per_s > 0 ? (double)p->k.gpus / p->tokens_per_s : 1e300;
    case SEARCH_OBJ_TIME_TO_TRAIN: return p->train_wall_s > 0 ? p->train_wall_s : 1e300;
    default: return 0;
    }
}

int search_compare(SearchObjective o, const SearchPoint *a, const SearchPoint *b)
{
    double ka = key_of(o, a), kb = key_of(o, b);
    if (ka < kb) return -1;
    if (ka > kb) return 1;
    if (o == SEARCH_OBJ_MEMORY && a->tokens_per_s != b->tokens_per_s) /* equal memory: faster first */
        return a->tokens_per_s > b->tokens_per_s ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index ? 1 : 0;
}

/* Insert p into the sorted array top[0..*n) of capacity k. */
static void topk_insert(SearchObjective o, SearchPoint *top, int *n, int k, const SearchPoint *p)
{
    if (k <= 0) return;
    if (*n == k && search_compare(o, p, &top[k - 1]) >= 0) return;
    int i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && search_compare(o, p, &top[i - 1]) < 0) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = *p;
}

/* ---- workers ------------------------------------------------------------------ */
typedef struct Shared {
    const SearchConfig *c;
    const SearchEvaluator *ev;
    SearchSpace space;
    int64_t n_chunks;        /* chunks owned by this rank */
    int64_t mine;            /* candidates in those chunks */
    double t0;
    bool bnb;                /* branch and bound (pass A, then pass B) */
    /* written by every worker: on their own cache line, away from the
     * read-mostly fields above that every candidate reads */
    _Alignas(64) atomic_llong next_chunk; /* next local chunk to take */
    atomic_llong done;       /* candidates finished */
    atomic_int failed;       /* a worker could not allocate */
    char pad[64];
} Shared;

/* A plan that fits, waiting for pass B: its optimistic key and memory. */
typedef struct Cand {
    int64_t index;
    double key, memory, capacity;
    int8_t rc_layers; /* the memory check's (SearchKnobs.rc_layers): not in the index */
} Cand;

typedef struct Worker {
    Shared *sh;
    int id;
    pthread_t thread;
    void *scratch;           /* the evaluator's, for this worker */
    SearchPoint *top;
    int n_top;
    SearchPoint *all;
    int64_t n_all;
    size_t cap_all;
    Cand *cand;              /* pass A of branch and bound */
    int64_t n_cand;
    size_t cap_cand;
    int64_t enumerated, pruned, bounded, simulated;
    SearchPoint leanest; /* the rejected plan with the least memory (memory_bytes 0: none) */
    char pad[128]; /* workers sit side by side in one array: keep their hot
                      fields on different cache lines (no false sharing) */
} Worker;

static bool keep(Worker *w, const SearchPoint *p)
{
    if (!ts_grow((void **)&w->all, &w->cap_all, (size_t)w->n_all + 1, sizeof *w->all)) return false;
    w->all[w->n_all++] = *p;
    return true;
}

static bool keep_cand(Worker *w, const SearchPoint *p, SearchObjective o)
{
    if (!ts_grow((void **)&w->cand, &w->cap_cand, (size_t)w->n_cand + 1, sizeof *w->cand)) return false;
    w->cand[w->n_cand++] = (Cand){p->index, key_of(o, p), p->memory_bytes, p->capacity_bytes, p->k.rc_layers};
    return true;
}

static void run_chunk(Worker *w, void *scratch, int64_t lo, int64_t hi)
{
    Shared *sh = w->sh;
    const SearchConfig *c = sh->c;
    const SearchEvaluator *ev = sh->ev;
    SearchCursor cur;
    SearchKnobs k;
    int64_t enumerated = 0, pruned = 0, simulated = 0; /* locals: no shared-line writes per plan */
    for (int64_t i = lo; i < hi; i++) {
        if (i == lo) search_cursor_seek(&sh->space, i, &cur, &k);
        else search_cursor_next(&sh->space, &cur, &k);
        SearchPoint p;
        memset(&p, 0, sizeof p);
        p.k = k;
        p.index = i;
        SearchEvalStatus st = ev->check(ev->ctx, scratch, &p);
        if (st == SEARCH_EVAL_INVALID) continue;
        enumerated++;
        if (st == SEARCH_EVAL_NOFIT) {
            pruned++;
            if (!(w->leanest.memory_bytes > 0) || p.memory_bytes < w->leanest.memory_bytes) w->leanest = p;
            continue;
        }
        if (sh->bnb) { /* pass A: the bound only (ranked by memory: check gave the key itself) */
            if (c->objective != SEARCH_OBJ_MEMORY && ev->bound(ev->ctx, scratch, &p) != SEARCH_EVAL_OK) continue;
            if (!keep_cand(w, &p, c->objective)) atomic_store(&sh->failed, 1);
            continue;
        }
        if (ev->simulate(ev->ctx, scratch, &p) != SEARCH_EVAL_OK) continue;
        simulated++;
        topk_insert(c->objective, w->top, &w->n_top, c->top_k, &p);
        if (c->keep_all && !keep(w, &p)) atomic_store(&sh->failed, 1);
    }
    w->enumerated += enumerated;
    w->pruned += pruned;
    w->simulated += simulated;
}

static void *worker_main(void *arg)
{
    Worker *w = arg;
    Shared *sh = w->sh;
    const SearchConfig *c = sh->c;
    void *scratch = w->scratch;
    double last = sh->t0;
    for (;;) {
        if (atomic_load(&sh->failed)) break;
        int64_t local = atomic_fetch_add(&sh->next_chunk, 1);
        if (local >= sh->n_chunks) break;
        int64_t chunk = (int64_t)c->rank + local * (int64_t)c->ranks;
        int64_t lo = chunk * SEARCH_CHUNK, hi = lo + SEARCH_CHUNK;
        if (hi > sh->space.total) hi = sh->space.total;
        run_chunk(w, scratch, lo, hi);
        int64_t done = atomic_fetch_add(&sh->done, hi - lo) + (hi - lo);
        if (w->id == 0 && c->progress) {
            double t = now_s();
            if (t - last >= 0.1) {
                last = t;
                c->progress(c->progress_user, done, sh->mine, t - sh->t0);
            }
        }
    }
    return NULL;
}

/* ---- pass B of branch and bound ------------------------------------------------ */
static int cmp_cand(const void *a, const void *b)
{
    const Cand *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* One batch of pass B: threads take its plans one at a time. */
typedef struct Batch {
    Shared *sh;
    const Cand *cand;
    SearchPoint *pts;
    SearchEvalStatus *st;
    int64_t n;
    atomic_llong next;
} Batch;

typedef struct BatchArg {
    Batch *b;
    void *scratch;
} BatchArg;

static void *batch_main(void *arg)
{
    BatchArg *a = arg;
    Batch *b = a->b;
    const SearchEvaluator *ev = b->sh->ev;
    for (;;) {
        int64_t j = atomic_fetch_add(&b->next, 1);
        if (j >= b->n) break;
        SearchPoint *p = &b->pts[j];
        memset(p, 0, sizeof *p);
        search_space_decode(&b->sh->space, b->cand[j].index, &p->k);
        p->k.rc_layers = b->cand[j].rc_layers;
        p->index = b->cand[j].index;
        p->memory_bytes = b->cand[j].memory;
        p->capacity_bytes = b->cand[j].capacity;
        b->st[j] = ev->simulate(ev->ctx, a->scratch, p);
    }
    return NULL;
}

/* Simulate the candidates of every worker in the order of their bound, a
 * batch at a time (2k plans, at least 16, doubling up to SEARCH_BATCH_MAX:
 * a fixed sequence, so the result does not depend on the threads), until the
 * next bound cannot beat the k-th best; the ranking and the counts go to
 * worker 0. */
#define SEARCH_BATCH_MAX 1024
static bool pass_b(Shared *sh, Worker *ws, int n)
{
    const SearchConfig *c = sh->c;
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += ws[i].n_cand;
    Cand *all = total ? malloc((size_t)total * sizeof *all) : NULL;
    SearchPoint *pts = malloc(SEARCH_BATCH_MAX * sizeof *pts);
    SearchEvalStatus *st = malloc(SEARCH_BATCH_MAX * sizeof *st);
    BatchArg *args = malloc((size_t)n * sizeof *args);
    pthread_t *th = malloc((size_t)n * sizeof *th);
    bool ok = (all || !total) && pts && st && args && th;
    int64_t k = 0;
    for (int i = 0; ok && i < n; i++) {
        if (ws[i].n_cand) memcpy(all + k, ws[i].cand, (size_t)ws[i].n_cand * sizeof *all);
        k += ws[i].n_cand;
    }
    if (ok && total > 1) qsort(all, (size_t)total, sizeof *all, cmp_cand);
    Worker *w0 = &ws[0];
    int64_t size = 2 * (int64_t)c->top_k < 16 ? 16 : 2 * (int64_t)c->top_k;
    if (size > SEARCH_BATCH_MAX) size = SEARCH_BATCH_MAX;
    for (int64_t i = 0; ok && i < total; i += size, size = 2 * size < SEARCH_BATCH_MAX ? 2 * size : SEARCH_BATCH_MAX) {
        /* the threshold at the batch start: the k-th best so far */
        double thr = w0->n_top == c->top_k ? key_of(c->objective, &w0->top[c->top_k - 1]) : INFINITY;
        int64_t end = i + size < total ? i + size : total, cut = i;
        while (cut < end && !(all[cut].key > thr)) cut++;
        if (cut < end) w0->bounded += total - cut; /* sorted: every later one too */
        Batch b = {.sh = sh, .cand = all + i, .pts = pts, .st = st, .n = cut - i};
        atomic_init(&b.next, 0);
        int started = 0;
        for (int t = 1; t < n && b.n > 1; t++, started++) {
            args[t] = (BatchArg){&b, ws[t].scratch};
            if (pthread_create(&th[t], NULL, batch_main, &args[t]) != 0) break;
        }
        args[0] = (BatchArg){&b, ws[0].scratch};
        batch_main(&args[0]);
        for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
        for (int64_t j = 0; j < b.n; j++) {
            if (st[j] != SEARCH_EVAL_OK) continue;
            w0->simulated++;
            topk_insert(c->objective, w0->top, &w0->n_top, c->top_k, &pts[j]);
        }
        if (cut < end) break;
    }
    free(all);
    free(pts);
    free(st);
    free(args);
    free(th);
    return ok;
}

static int cmp_index(const void *a, const void *b)
{
    int64_t x = ((const SearchPoint *)a)->index, y = ((const SearchPoint *)b)->index;
    return x < y ? -1 : x > y;
}

/* ---- merging ------------------------------------------------------------------- */
TsStatus search_merge(const SearchConfig *c, const SearchResult *parts, int n_parts, SearchResult *out,
                      TsError *err)
{
    memset(out, 0, sizeof *out);
    int64_t n_all = 0;
    for (int i = 0; i < n_parts; i++) n_all += parts[i].n_all;
    out->top = calloc((size_t)(c->top_k > 0 ? c->top_k : 1), sizeof *out->top);
    out->all = n_all ? malloc((size_t)n_all * sizeof *out->all) : NULL;
    if (!out->top || (n_all && !out->all)) {
        search_result_free(out);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory merging search results");
    }
    for (int i = 0; i < n_parts; i++) {
        const SearchResult *p = &parts[i];
        for (int j = 0; j < p->n_top; j++) topk_insert(c->objective, out->top, &out->n_top, c->top_k, &p->top[j]);
        if (p->n_all) memcpy(out->all + out->n_all, p->all, (size_t)p->n_all * sizeof *p->all);
        out->n_all += p->n_all;
        out->stats.candidates = p->stats.candidates; /* the same space on every part */
        out->stats.enumerated += p->stats.enumerated;
        out->stats.pruned += p->stats.pruned;
        out->stats.bounded += p->stats.bounded;
        out->stats.simulated += p->stats.simulated;
        if (p->stats.elapsed_s > out->stats.elapsed_s) out->stats.elapsed_s = p->stats.elapsed_s;
        out->stats.threads = p->stats.threads;
        out->stats.ranks += p->stats.ranks;
        const SearchStats *ps = &p->stats;
        if (ps->leanest_bytes > 0 &&
            (!(out->stats.leanest_bytes > 0) || ps->leanest_bytes < out->stats.leanest_bytes ||
             (ps->leanest_bytes == out->stats.leanest_bytes && ps->leanest_index < out->stats.leanest_index))) {
            out->stats.leanest_bytes = ps->leanest_bytes;
            out->stats.leanest = ps->leanest;
            out->stats.leanest_index = ps->leanest_index;
        }
    }
    if (out->n_all > 1) qsort(out->all, (size_t)out->n_all, sizeof *out->all, cmp_index);
    out->stats.plans_per_s = out->stats.elapsed_s > 0 ? (double)out->stats.enumerated / out->stats.elapsed_s : 0;
    return TS_OK;
}

void search_result_free(SearchResult *r)
{
    if (!r) return;
    free(r->top);
    free(r->all);
    r->top = r->all = NULL;
    r->n_top = 0;
    r->n_all = 0;
}

/* ---- the search ----------------------------------------------------------------- */
static TsStatus collect(Shared *sh, Worker *ws, int n, SearchResult *r, TsError *err)
{
    SearchResult *parts = calloc((size_t)n, sizeof *parts);
    if (!parts) return ts_err(err, TS_ERR_INTERNAL, "out of memory merging search results");
    for (int i = 0; i < n; i++) {
        parts[i] = (SearchResult){.top = ws[i].top, .n_top = ws[i].n_top, .all = ws[i].all, .n_all = ws[i].n_all};
        parts[i].stats = (SearchStats){.candidates = sh->space.total, .enumerated = ws[i].enumerated,
                                       .pruned = ws[i].pruned, .bounded = ws[i].bounded,
                                       .simulated = ws[i].simulated,
                                       .threads = n, .ranks = i == 0 ? 1 : 0,
                                       .leanest_bytes = ws[i].leanest.memory_bytes,
                                       .leanest = ws[i].leanest.k, .leanest_index = ws[i].leanest.index};
    }
    TsStatus st = search_merge(sh->c, parts, n, r, err);
    free(parts);
    return st;
}

TsStatus search_run(const SearchConfig *c, const SearchEvaluator *ev, SearchResult *r, TsError *err)
{
    memset(r, 0, sizeof *r);
    if (c->top_k < 0 || c->threads < 1 || c->ranks < 1 || c->rank < 0 || c->rank >= c->ranks)
        return ts_err(err, TS_ERR_USAGE, "bad search settings: top_k %d, threads %d, rank %d of %d", c->top_k,
                      c->threads, c->rank, c->ranks);
    Shared sh = {.c = c, .ev = ev, .t0 = now_s(), .bnb = ev->bound && !c->keep_all && c->top_k > 0};
    TsStatus st = search_space_build(c, &sh.space, err);
    if (st != TS_OK) return st;
    int64_t chunks = (sh.space.total + SEARCH_CHUNK - 1) / SEARCH_CHUNK;
    sh.n_chunks = chunks > c->rank ? (chunks - c->rank + c->ranks - 1) / c->ranks : 0;
    sh.mine = sh.n_chunks * SEARCH_CHUNK;
    if (chunks - 1 >= c->rank && (chunks - 1 - c->rank) % c->ranks == 0) sh.mine -= chunks * SEARCH_CHUNK - sh.space.total;
    atomic_init(&sh.next_chunk, 0);
    atomic_init(&sh.done, 0);
    atomic_init(&sh.failed, 0);

    int n = c->threads;
    Worker *ws = calloc((size_t)n, sizeof *ws);
    bool ok = ws != NULL;
    for (int i = 0; ok && i < n; i++) {
        ws[i] = (Worker){.sh = &sh, .id = i};
        ws[i].top = calloc((size_t)(c->top_k > 0 ? c->top_k : 1), sizeof *ws[i].top);
        ok = ws[i].top != NULL;
        /* scratch per worker, kept for pass B */
        if (ok && ev->thread_begin) ok = (ws[i].scratch = ev->thread_begin(ev->ctx)) != NULL;
    }
    int started = 1;
    for (int i = 1; ok && i < n; i++, started++)
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
            atomic_store(&sh.failed, 1);
            break;
        }
    if (ok) worker_main(&ws[0]);
    for (int i = 1; ok && i < started; i++) pthread_join(ws[i].thread, NULL);
    if (ok && !atomic_load(&sh.failed) && sh.bnb && !pass_b(&sh, ws, n)) atomic_store(&sh.failed, 1);
    if (!ok || atomic_load(&sh.failed)) st = ts_err(err, TS_ERR_INTERNAL, "the search ran out of memory or threads");
    else st = collect(&sh, ws, n, r, err);
    if (st == TS_OK) {
        r->stats.elapsed_s = now_s() - sh.t0;
        r->stats.plans_per_s = r->stats.elapsed_s > 0 ? (double)r->stats.enumerated / r->stats.elapsed_s : 0;
        r->stats.ranks = 1;
    }
    for (int i = 0; ws && i < n; i++) {
        if (ws[i].scratch && ev->thread_end) ev->thread_end(ev->ctx, ws[i].scratch);
        free(ws[i].top);
        free(ws[i].all);
        free(ws[i].cand);
    }
    free(ws);
    search_space_free(&sh.space);
    return st;
}
