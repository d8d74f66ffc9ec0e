/*
 * schedule.c — the pipeline schedule engine (sim.h layer 1).
 *
 * Tasks are (stage s, micro-batch mb, chunk c, F|B), packed in an int32:
 *   mb << 8 | c << 1 | is_backward          (c < 128, mb < 2^23)
 * Each stage's task order is written once into an array (GPipe, 1F1B,
 * Megatron interleaved 1F1B). Finish times live in flat arrays indexed
 * [(s*v + c)*m + mb]; -1 means "not yet run". Stages are swept alternately
 * 0..p-1 and p-1..0; a stage runs tasks in its order while their
 * dependency is known:
 *   F(s,mb,c): F(s-1,mb,c) + p2p           (s > 0)
 *              F(p-1,mb,c-1) + p2p         (s = 0, c > 0)
 *   B(s,mb,c): B(s+1,mb,c) + p2p           (s < p-1)
 *              B(0,mb,c+1) + p2p           (s = p-1, c < v-1)
 *              F(s,mb,c)                   (s = p-1, c = v-1)
 * start = max(stage free, dependency); the schedule orders are deadlock-free,
 * so every sweep makes progress (checked: no progress -> TS_ERR_INTERNAL).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "../common/common_int.h"

/* One task of a compiled schedule (see compile()). */
typedef struct SimOp {
    int32_t self;  /* finish slot: F at idx, B at nt + idx, idx = (s*v + c)*m + mb */
    int32_t dep;   /* finish slot it waits for, -1 none */
    int32_t xi;    /* transfer on that edge: xf[] index (2*sender + is_bwd), zero slot if none */
    int32_t di;    /* duration: dur[] index (2*(s*v + c) + is_bwd) */
    int16_t stage;
    int16_t last;  /* 1: backward of the last micro-batch (DP buckets start under it);
                      2: forward of the first (the parameter gathers arrive under it) */
} SimOp;

/* A compiled schedule for (p, v, m, schedule). */
typedef struct SimProg {
    SimOp *ops;
    size_t cap;
    int64_t n, m;        /* n == 0: empty slot */
    int32_t p, v, sched;
    uint64_t used;       /* LRU stamp */
} SimProg;

/* Compiled schedules kept per work space: a sweep alternates schedules and
 * vpp within a shape, and the periodic fast path runs few distinct m. */
#define SIM_PROG_CACHE 16

struct SimWork {
    SimProg progs[SIM_PROG_CACHE];
    uint64_t clock;
    double *dur, *xf;    /* [2*p*v (+1)] */
    size_t dx_cap;
    int32_t *order;      /* [p][n_tasks] */
    size_t order_cap;
    double *fend, *bend; /* [p*v*m] */
    size_t t_cap;
    int32_t *vmb;        /* interleaved forward mapping: [m*v] packed (mb<<8|c<<1) */
    size_t vmb_cap;
    double *bst_last;    /* start of B(s, m-1, c): [p*v] */
    size_t sc_cap;
    double *bfin_last;   /* finish of B(s, m-1, c): [p*v] */
    size_t bl_cap;
    double *fst_first;   /* start of F(s, 0, c): [p*v] */
    size_t ff_cap;
    double *ppc;         /* per-task transfer wait (fast path): [2*p*v*m] */
    size_t ppc_cap;
    SimStageResult *stages;
    int64_t *pos;
    double *tfree;
    double *ppwait;      /* idle time spent waiting for a transfer in flight, per stage */
    size_t st_cap;
    SimSpan *spans;
    size_t span_n, span_cap;
    SimChunkCost *costs;   /* for sim_simulate */
    size_t costs_cap;
    SimStageCost *scosts;
    size_t scosts_cap;
    void *cost_cache;      /* layer_cost.c's layer-cost cache (sim_work_cache_costs) */
    bool cost_cache_on;
};

TS_ENUM_NAMES(sim_stream, SimStream, SIM_STREAM_LIST, SIM_STREAM_COUNT)

static const char *const BD_KEYS[] = {
#define X(f, k) k,
    SIM_BREAKDOWN_LIST(X)
#undef X
};
_Static_assert(sizeof BD_KEYS / sizeof BD_KEYS[0] == SIM_BD_COUNT, "breakdown keys");

const char *sim_breakdown_key(int i)
{
    return i >= 0 && i < SIM_BD_COUNT ? BD_KEYS[i] : "?";
}

double sim_breakdown_get(const SimBreakdown *b, int i)
{
    switch (i) {
#define X(f, k) \
    case SIM_BD_##f: return b->f;
        SIM_BREAKDOWN_LIST(X)
#undef X
    default: return 0;
    }
}

SimWork *sim_work_create(void)
{
    return calloc(1, sizeof(SimWork));
}

void sim_work_destroy(SimWork *w)
{
    if (!w) return;
    free(w->order);
    for (int i = 0; i < SIM_PROG_CACHE; i++) free(w->progs[i].ops);
    free(w->bfin_last);
    free(w->ppc);
    free(w->dur);
    free(w->xf);
    free(w->fend);
    free(w->bend);
    free(w->vmb);
    free(w->bst_last);
    free(w->fst_first);
    free(w->stages);
    free(w->pos);
    free(w->tfree);
    free(w->ppwait);
    free(w->spans);
    free(w->costs);
    free(w->scosts);
    free(w->cost_cache);
    free(w);
}

void sim_work_cache_costs(SimWork *w, bool on)
{
    if (w) w->cost_cache_on = on;
}

void **sim_work_cost_cache(SimWork *w)
{
    return w && w->cost_cache_on ? &w->cost_cache : NULL;
}

void sim_result_free(SimResult *r)
{
    if (!r || !r->owned) return;
    free(r->stages);
    free(r->spans);
    r->stages = NULL;
    r->spans = NULL;
    r->owned = false;
}

SimChunkCost *sim_work_costs(SimWork *w, int32_t n_chunks, int32_t n_stages, SimStageCost **stages)
{
    if (!ts_grow((void **)&w->costs, &w->costs_cap, (size_t)n_chunks, sizeof(SimChunkCost)) ||
        !ts_grow((void **)&w->scosts, &w->scosts_cap, (size_t)n_stages, sizeof(SimStageCost)))
        return NULL;
    memset(w->costs, 0, (size_t)n_chunks * sizeof(SimChunkCost));
    memset(w->scosts, 0, (size_t)n_stages * sizeof(SimStageCost));
    *stages = w->scosts;
    return w->costs;
}

#define PACK(mb, c, b) ((int32_t)(((mb) << 8) | ((c) << 1) | (b)))

/* Fill order[0..2*m*v) for stage s; returns the count. */
static int64_t make_order(const SimPipeline *pl, const int32_t *vmb, int32_t s, int32_t *o)
{
    int64_t m = pl->micro_batches, p = pl->stages, v = pl->chunks, n = 0;
    if (pl->schedule == PLAN_SCHED_GPIPE) {
        for (int64_t i = 0; i < m; i++) o[n++] = PACK(i, 0, 0);
        for (int64_t i = 0; i < m; i++) o[n++] = PACK(i, 0, 1);
        return n;
    }
    if (pl->schedule == PLAN_SCHED_1F1B) {
        int64_t w = p - s - 1 < m ? p - s - 1 : m;
        for (int64_t i = 0; i < w; i++) o[n++] = PACK(i, 0, 0);
        for (int64_t i = 0; i < m - w; i++) {
            o[n++] = PACK(w + i, 0, 0);
            o[n++] = PACK(i, 0, 1);
        }
        for (int64_t i = m - w; i < m; i++) o[n++] = PACK(i, 0, 1);
        return n;
    }
    /* Megatron interleaved 1F1B (schedules.py,
     * forward_backward_pipelining_with_interleaving), group size p. */
    int64_t total = m * v, warm;
    if (m == p) {
        warm = total;
    } else {
        warm = (p - s - 1) * 2 + (v - 1) * p;
        if (warm > total) warm = total;
    }
    int32_t vm1 = (int32_t)(v - 1);
#define FWD(k) (vmb[k])
#define BWD(k) (vmb[k] + (vm1 - ((vmb[k] >> 1) & 127) * 2) * 2 + 1)
    /* BWD: same mb, chunk v-1-c: the packed 2c becomes 2(v-1-c), i.e. plus
     * 2(v-1-2c); plus the backward bit. */
    for (int64_t k = 0; k < warm; k++) o[n++] = FWD(k);
    for (int64_t k = 0; k < total - warm; k++) {
        o[n++] = FWD(warm + k);
        o[n++] = BWD(k);
    }
    for (int64_t k = total - warm; k < total; k++) o[n++] = BWD(k);
#undef FWD
#undef BWD
    return n;
}

static void push_span(SimWork *w, bool *oom, int32_t s, SimStream st, int c, int64_t mb, char kind,
                      double t0, double t1)
{
    if (*oom) return;
    if (!ts_grow((void **)&w->spans, &w->span_cap, w->span_n + 1, sizeof(SimSpan))) {
        *oom = true;
        return;
    }
    SimSpan *sp = &w->spans[w->span_n++];
    sp->stage = s;
    sp->stream = (int16_t)st;
    sp->chunk = (int16_t)c;
    sp->micro_batch = (int32_t)mb;
    sp->kind = kind;
    sp->start_s = t0;
    sp->end_s = t1;
    sp->name = NULL;
}

/* Compile the schedule into a program: the tasks of all stages in one
 * dependency-respecting order, found by sweeping the per-stage orders with
 * "done" flags only. The order depends on (p, v, m, schedule), not on the
 * durations, so it is cached in the work space (SIM_PROG_CACHE programs,
 * least recently used replaced) and reused by every plan of the same shape;
 * running a plan is then one branch-light linear pass. */
static TsStatus compile(const SimPipeline *pl, SimWork *w, const SimProg **out, TsError *err)
{
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t m = pl->micro_batches, ntask = 2 * m * v, nt = (int64_t)p * v * m;
    SimProg *pg = &w->progs[0];
    for (int i = 0; i < SIM_PROG_CACHE; i++) {
        SimProg *q = &w->progs[i];
        if (q->n == ntask * p && q->p == p && q->v == v && q->m == m && q->sched == (int)pl->schedule) {
            q->used = ++w->clock;
            *out = q;
            return TS_OK;
        }
        if (q->used < pg->used) pg = q;
    }
    pg->n = 0;
    pg->used = ++w->clock;
    if (!ts_grow((void **)&pg->ops, &pg->cap, (size_t)(ntask * p), sizeof(SimOp)))
        return ts_err(err, TS_ERR_INTERNAL, "out of memory for a %lld-task pipeline", (long long)(ntask * p));
    if (pl->schedule == PLAN_SCHED_INTERLEAVED) {
        int64_t n = 0;
        for (int64_t start = 0; start < m; start += p) {
            int64_t g = m - start < p ? m - start : p;
            for (int32_t c = 0; c < v; c++)
                for (int64_t j = 0; j < g; j++) w->vmb[n++] = PACK(start + j, c, 0);
        }
    }
    for (int32_t s = 0; s < p; s++) make_order(pl, w->vmb, s, w->order + (int64_t)s * ntask);
    double *fdone = w->fend, *bdone = w->bend; /* used as flags: < 0 not done */
    for (int64_t i = 0; i < nt; i++) fdone[i] = bdone[i] = -1.0;
    for (int32_t s = 0; s < p; s++) w->pos[s] = 0;
    int64_t remaining = ntask * p, n = 0;
    const int32_t xzero = 2 * p * v; /* index of a zero transfer */
    for (int64_t sweep = 0; remaining > 0; sweep++) {
        int64_t before = remaining;
        for (int32_t i = 0; i < p; i++) {
            int32_t s = (sweep & 1) ? p - 1 - i : i;
            const int32_t *o = w->order + (int64_t)s * ntask;
            int64_t k = w->pos[s];
            for (; k < ntask; k++) {
                int32_t t = o[k], c = (t >> 1) & 127;
                int64_t mb = t >> 8, idx = ((int64_t)s * v + c) * m + mb, dep = -1;
                int32_t xi = xzero;
                if (!(t & 1)) {
                    if (s > 0) {
                        dep = idx - (int64_t)v * m;
                        xi = 2 * ((s - 1) * v + c);
                    } else if (c > 0) {
                        dep = ((int64_t)(p - 1) * v + c - 1) * m + mb;
                        xi = 2 * ((p - 1) * v + c - 1);
                    }
                    if (dep >= 0 && fdone[dep] < 0) break;
                    fdone[idx] = 1;
                } else {
                    if (s < p - 1) {
                        dep = nt + idx + (int64_t)v * m;
                        xi = 2 * ((s + 1) * v + c) + 1;
                    } else if (c < v - 1) {
                        dep = nt + (int64_t)(c + 1) * m + mb;
                        xi = 2 * (c + 1) + 1;
                    } else {
                        dep = idx;
                    }
                    if (dep >= nt ? bdone[dep - nt] < 0 : fdone[dep] < 0) break;
                    bdone[idx] = 1;
                }
                SimOp *op = &pg->ops[n++];
                op->self = (int32_t)((t & 1) ? nt + idx : idx);
                op->dep = (int32_t)dep;
                op->xi = xi;
                op->di = 2 * (s * v + c) + (t & 1);
                op->stage = (int16_t)s;
                op->last = (int16_t)((t & 1) ? mb == m - 1 : 2 * (mb == 0));
            }
            remaining -= k - w->pos[s];
            w->pos[s] = k;
        }
        if (remaining == before)
            return ts_err(err, TS_ERR_INTERNAL, "pipeline schedule deadlocked (schedule %s, p=%d, v=%d, m=%lld)",
                          plan_sched_name(pl->schedule), p, v, (long long)m);
    }
    pg->n = n;
    pg->p = p;
    pg->v = v;
    pg->m = m;
    pg->sched = (int)pl->schedule;
    *out = pg;
    return TS_OK;
}

/* Run the compiled program with this plan's durations. Idle time before a
 * task whose input is still in flight is charged to the pipeline transfer up
 * to the transfer's duration (ppwait); the rest of the idle time is bubble.
 * ppc (may be NULL) receives each task's charge, indexed like fin. Fills
 * tfree, ppwait, bst_last, bfin_last and fst_first. */
static void run_ops(const SimPipeline *pl, SimWork *w, const SimProg *pg, double *ppc)
{
    const int32_t p = pl->stages, v = pl->chunks, pv = p * v;
    const int64_t m = pl->micro_batches, nt = (int64_t)pv * m;
    double *dur = w->dur, *xf = w->xf, *fin = w->fend; /* fin: [2*nt], F then B */
    for (int32_t i = 0; i < pv; i++) {
        dur[2 * i] = pl->chunk[i].fwd_s;
        dur[2 * i + 1] = pl->chunk[i].bwd_s;
        xf[2 * i] = p > 1 ? pl->chunk[i].p2p_fwd_s : 0;
        xf[2 * i + 1] = p > 1 ? pl->chunk[i].p2p_bwd_s : 0;
    }
    xf[2 * pv] = 0;
    double *fr = w->tfree, *ppw = w->ppwait;
    for (int32_t s = 0; s < p; s++) fr[s] = ppw[s] = 0;
    const SimOp *prog = pg->ops;
    const int64_t n = pg->n;
    for (int64_t k = 0; k < n; k++) {
        const SimOp *op = &prog[k];
        double x = xf[op->xi], d = op->dep >= 0 ? fin[op->dep] + x : 0, f = fr[op->stage];
        double st = f > d ? f : d, wait = d - f;
        double c = wait > 0 && x > 0 ? (wait < x ? wait : x) : 0; /* x < 0: a rendezvous (ds_pipe) */
        ppw[op->stage] += c;
        if (ppc) ppc[op->self] = c;
        double en = st + dur[op->di];
        fin[op->self] = en;
        fr[op->stage] = en;
        if (op->last) {
            if (op->last == 1) w->bst_last[op->di >> 1] = st;
            else w->fst_first[op->di >> 1] = st;
        }
    }
    for (int32_t i = 0; i < pv; i++) w->bfin_last[i] = fin[nt + (int64_t)i * m + m - 1];
}

/* Spans of the timeline from the finish times of the last run_ops. */
static TsStatus record_spans(const SimPipeline *pl, SimWork *w, const SimProg *pg, TsError *err)
{
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t nt = (int64_t)p * v * pl->micro_batches;
    const double *fin = w->fend, *dur = w->dur, *xf = w->xf;
    bool oom = false;
    for (int64_t k = 0; k < pg->n; k++) {
        const SimOp *op = &pg->ops[k];
        bool bw = op->self >= nt;
        int64_t idx = bw ? op->self - nt : op->self;
        int32_t c = (int32_t)((idx / pl->micro_batches) % v);
        int64_t mb = idx % pl->micro_batches;
        double en = fin[op->self], st = en - dur[op->di];
        push_span(w, &oom, op->stage, SIM_STREAM_COMPUTE, c, mb, bw ? 'B' : 'F', st, en);
        /* the task's exposed TP / CP / EP communication (inside its time, the
         * chunk's exposure shared by its tasks as their durations), drawn on
         * the stream tracks at the task's end */
        const SimChunkCost *cc = &pl->chunk[op->stage * v + c];
        double busy = cc->fwd_s + cc->bwd_s, share = busy > 0 ? dur[op->di] / busy : 0, t1 = en;
        const struct { SimStream st; char k; double x; } X[3] = {{SIM_STREAM_EP, 'E', cc->ep_exposed_s},
                                                                  {SIM_STREAM_CP, 'C', cc->cp_exposed_s},
                                                                  {SIM_STREAM_TP, 'T', cc->tp_exposed_s}};
        for (int j = 0; j < 3; j++) {
            double d = X[j].x * share;
            if (!(d > 0)) continue;
            push_span(w, &oom, op->stage, X[j].st, c, mb, X[j].k, t1 - d, t1);
            t1 -= d;
        }
        double x = xf[op->di];
        bool edge = bw ? (op->stage == 0 && c == 0) : (op->stage == p - 1 && c == v - 1);
        if (x > 0 && !edge) push_span(w, &oom, op->stage, SIM_STREAM_PP, c, mb, 'S', en, en + x);
    }
    if (oom) return ts_err(err, TS_ERR_INTERNAL, "out of memory recording the timeline");
    return TS_OK;
}

static TsStatus check(const SimPipeline *pl, TsError *err)
{
    if (pl->stages < 1) return ts_err(err, TS_ERR_PLAN, "pipeline needs at least 1 stage (got %d)", pl->stages);
    if (pl->micro_batches < 1)
        return ts_err(err, TS_ERR_PLAN, "pipeline needs at least 1 micro-batch (got %lld)",
                      (long long)pl->micro_batches);
    if (pl->chunks < 1 || pl->chunks > 127)
        return ts_err(err, TS_ERR_PLAN, "model chunks per stage must be 1..127 (got %d)", pl->chunks);
    if (pl->chunks > 1 && pl->schedule != PLAN_SCHED_INTERLEAVED)
        return ts_err(err, TS_ERR_PLAN, "%d model chunks per stage need the interleaved schedule", pl->chunks);
    if (pl->micro_batches >= (1 << 23))
        return ts_err(err, TS_ERR_PLAN, "too many micro-batches (%lld)", (long long)pl->micro_batches);
    if ((unsigned)pl->schedule >= PLAN_SCHED_COUNT) return ts_err(err, TS_ERR_PLAN, "unknown schedule");
    return TS_OK;
}

/* The share of a task's busy seconds that is compute: traffic hidden under
 * the task slows compute only where it runs beside compute, not beside the
 * exposed TP / CP / EP collectives (or blocking pipeline transfers) that fill
 * the rest (as the replay measures it, replay_dag.c comm_overlap). */
static double compute_share(double comp, double busy)
{
    return busy > 0 && comp < busy ? comp / busy : 1.0;
}

double sim_dp_end_uniform(int32_t n, double dp_s, double window_s)
{
    if (n < 1) n = 1;
    double end = 0, d = dp_s / n;
    for (int32_t k = 1; k <= n; k++) {
        double ready = window_s * k / n;
        end = (end > ready ? end : ready) + d;
    }
    return end;
}

/* DP gradient reduction of stage s after (or under) its last backward; the
 * part that hides slows compute by overlap_slowdown times the compute share. */
static void stage_dp(const SimPipeline *pl, SimWork *w, int32_t s, SimStageResult *sr)
{
    const int32_t v = pl->chunks;
    double pipe_end = sr->pipe_end_s, total = 0, free_t = 0, share = 0;
    for (int32_t c = v - 1; c >= 0; c--) {
        const SimChunkCost *cc = &pl->chunk[s * v + c];
        double dp = cc->dp_grad_s;
        if (dp <= 0) continue;
        total += dp;
        share += dp * compute_share(cc->compute_bwd_s + cc->recompute_s, cc->bwd_s);
        if (!pl->dp_overlap) {
            free_t = (free_t > pipe_end ? free_t : pipe_end) + dp;
            continue;
        }
        /* the buckets become ready through the chunk's last backward,
         * after the LM head's own backward (dp_end_s counts from there);
         * the stream may still be busy with a later chunk's buckets: then
         * they follow those back to back (the end is max-plus linear in
         * the stream's start) */
        double t0 = w->bst_last[s * v + c] + cc->head_bwd_s, e = free_t + dp;
        free_t = e > t0 + cc->dp_end_s ? e : t0 + cc->dp_end_s;
    }
    double exposed = free_t > pipe_end ? free_t - pipe_end : 0;
    double overlapped = total - exposed > 0 ? total - exposed : 0;
    sr->dp_exposed_s = exposed;
    sr->slowdown_s = total > 0 ? pl->overlap_slowdown * overlapped * share / total : 0;
}

/* The compute share of stage s's forward tasks: a hidden parameter gather
 * slows compute only beside compute, not beside the exposed TP / CP / EP
 * collectives of the forward. */
static double fwd_compute_share(const SimPipeline *pl, int32_t s)
{
    double busy = 0, comp = 0;
    for (int32_t c = 0; c < pl->chunks; c++) {
        busy += pl->chunk[s * pl->chunks + c].fwd_s;
        comp += pl->chunk[s * pl->chunks + c].compute_fwd_s;
    }
    return compute_share(comp, busy);
}

/* The start-up delay of stage s from overlapped dist-opt parameter gathers
 * (param_gather_overlap). The gathers of the stage's chunks run back to back
 * from the iteration start, chunk by chunk in the order of their first
 * forward; a chunk whose gathers start at g and whose first forward starts
 * at t0 ends that forward max(0, g + gather_lag_s - t0) late (gather_lag_s:
 * its pieces waiting for their buckets). The largest shift of the stage's
 * chunks is its delay. */
static double stage_gather_delay(const SimPipeline *pl, const SimWork *w, int32_t s)
{
    const int32_t v = pl->chunks;
    double g = 0, delay = 0;
    for (int32_t c = 0; c < v; c++) {
        const SimChunkCost *cc = &pl->chunk[s * v + c];
        if (!(cc->param_gather_s > 0)) continue;
        double d = g + cc->gather_lag_s - w->fst_first[s * v + c];
        if (d > delay) delay = d;
        g += cc->param_gather_s;
    }
    return delay;
}

double sim_gather_lag_uniform(double gather_s, int32_t layers, double fwd_s)
{
    double L = layers > 0 ? (double)layers : 1.0, a = gather_s / L, f = fwd_s / L;
    double last = L * a - (L - 1) * f;
    return last > a ? last : a;
}

/* Grow the work arrays for a (p, v, m) pipeline; ppc too when with_ppc. */
static TsStatus prepare(SimWork *w, int32_t p, int32_t v, int64_t m, bool with_ppc, TsError *err)
{
    const int64_t ntask = 2 * m * v;
    size_t nt = (size_t)p * (size_t)v * (size_t)m;
    size_t fcap = w->t_cap, bcap = w->t_cap, blc = w->bl_cap;
    bool ok = ts_grow((void **)&w->order, &w->order_cap, (size_t)ntask * (size_t)p, sizeof(int32_t)) &&
              ts_grow((void **)&w->fend, &fcap, 2 * nt, sizeof(double)) &&
              ts_grow((void **)&w->bend, &bcap, nt, sizeof(double)) &&
              ts_grow((void **)&w->vmb, &w->vmb_cap, (size_t)(m * v), sizeof(int32_t)) &&
              ts_grow((void **)&w->bst_last, &w->sc_cap, (size_t)p * (size_t)v, sizeof(double)) &&
              ts_grow((void **)&w->bfin_last, &blc, (size_t)p * (size_t)v, sizeof(double)) &&
              ts_grow((void **)&w->fst_first, &w->ff_cap, (size_t)p * (size_t)v, sizeof(double)) &&
              (!with_ppc || ts_grow((void **)&w->ppc, &w->ppc_cap, 2 * nt, sizeof(double)));
    w->bl_cap = blc;
    if (ok) w->t_cap = fcap / 2 < bcap ? fcap / 2 : bcap;
    size_t d1 = w->dx_cap, d2 = w->dx_cap;
    ok = ok && ts_grow((void **)&w->dur, &d1, (size_t)(2 * p * v + 1), sizeof(double)) &&
         ts_grow((void **)&w->xf, &d2, (size_t)(2 * p * v + 1), sizeof(double));
    if (ok) w->dx_cap = d1 < d2 ? d1 : d2;
    size_t c1 = w->st_cap, c2 = w->st_cap, c3 = w->st_cap, c4 = w->st_cap;
    ok = ok && ts_grow((void **)&w->stages, &c1, (size_t)p, sizeof(SimStageResult)) &&
         ts_grow((void **)&w->pos, &c2, (size_t)p, sizeof(int64_t)) &&
         ts_grow((void **)&w->tfree, &c3, (size_t)p, sizeof(double)) &&
         ts_grow((void **)&w->ppwait, &c4, (size_t)p, sizeof(double));
    if (ok) {
        size_t mn = c1 < c2 ? c1 : c2;
        mn = mn < c3 ? mn : c3;
        w->st_cap = mn < c4 ? mn : c4;
    }
    if (!ok) return ts_err(err, TS_ERR_INTERNAL, "out of memory for a %lld-task pipeline", (long long)(ntask * p));
    return TS_OK;
}

/* ---- the periodic fast path ---------------------------------------------------
 * After warm-up, GPipe, 1F1B and interleaved 1F1B repeat themselves: moving
 * P micro-batches on (P a multiple of delta = 1, or p for interleaved: one
 * group) adds the same lambda to every task's finish time (GPipe: lambda_F
 * to forwards, lambda_B to backwards). P > delta happens: uniform stages
 * with transfers repeat every p rounds. The task graph is shift-invariant
 * between warm-up and cool-down, and max/+ commute with adding a constant,
 * so once a window of tasks repeats exactly, every later period does too,
 * and a run with m micro-batches equals a run with m_r = m - n*P whose
 * cool-down is shifted by n periods. So: run m_r micro-batches (a margin
 * for the warm-up, a few periods, a margin before the cool-down), find P
 * and a window where for EVERY (stage, chunk, F/B) task fin(mb + P) -
 * fin(mb) is the same lambda (1e-12 relative) and the transfer wait
 * repeats, then shift the end state by n*lambda and add n periods of
 * transfer wait. No window: double m_r; m_r >= m: the full pass.
 * tests/unit/test_sim_periodic.c compares both on random pipelines. */
#define PERIOD_TOL 1e-12

static bool same(double a, double b, double scale)
{
    return fabs(a - b) <= PERIOD_TOL * scale;
}

/* First window of W micro-batches in [lo, hi) (mb + P < hi) where every
 * task repeats with period P and the same increments. */
static bool find_window(const SimPipeline *q, const SimWork *w, int64_t P, int64_t lo, int64_t hi, int64_t W,
                        int64_t *a, double *lam_f, double *lam_b)
{
    const int32_t pv = q->stages * q->chunks;
    const int64_t m = q->micro_batches, nt = (int64_t)pv * m;
    const double *fin = w->fend, *ppc = w->ppc;
    int64_t run = 0;
    double rf = 0, rb = 0;
    for (int64_t mb = lo; mb + P < hi; mb++) {
        double lf = fin[mb + P] - fin[mb], lb = fin[nt + mb + P] - fin[nt + mb];
        double sc = fabs(lf) + fabs(lb);
        bool ok = q->schedule == PLAN_SCHED_GPIPE || same(lf, lb, sc);
        for (int32_t i = 0; ok && i < pv; i++) {
            int64_t f = (int64_t)i * m + mb, b = nt + f;
            ok = same(fin[f + P] - fin[f], lf, sc) && same(fin[b + P] - fin[b], lb, sc) &&
                 same(ppc[f + P], ppc[f], sc) && same(ppc[b + P], ppc[b], sc);
        }
        if (!ok) {
            run = 0;
            continue;
        }
        if (run > 0 && same(lf, rf, sc) && same(lb, rb, sc)) {
            run++;
        } else {
            run = 1;
            rf = lf;
            rb = lb;
        }
        if (run == W) {
            *a = mb - W + 1;
            *lam_f = rf;
            *lam_b = rb;
            return true;
        }
    }
    return false;
}

/* Does the scalar sequence x[lo..hi) repeat with period P (constant
 * x[mb+P] - x[mb]) over W consecutive micro-batches? A cheap filter before
 * find_window. */
static bool scalar_period(const double *x, int64_t P, int64_t lo, int64_t hi, int64_t W)
{
    int64_t run = 0;
    double r = 0;
    for (int64_t mb = lo; mb + P < hi; mb++) {
        double d = x[mb + P] - x[mb];
        if (run > 0 && same(d, r, fabs(d))) {
            if (++run == W) return true;
        } else {
            run = 1;
            r = d;
        }
    }
    return false;
}

/* Run m_r micro-batches with transfer waits recorded. */
static TsStatus run_reduced(const SimPipeline *pl, SimWork *w, int64_t mr, SimPipeline *q, TsError *err)
{
    *q = *pl;
    q->micro_batches = mr;
    const SimProg *pg = NULL;
    TsStatus st = prepare(w, pl->stages, pl->chunks, mr, true, err);
    if (!st) st = compile(q, w, &pg, err);
    if (st) return st;
    run_ops(q, w, pg, w->ppc);
    return TS_OK;
}

/* Try the fast path; *done = false when it does not apply (then the caller
 * runs the full pass). Fills what run_ops fills, for m micro-batches. */
static TsStatus run_periodic(const SimPipeline *pl, SimWork *w, bool *done, TsError *err)
{
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t m = pl->micro_batches, delta = pl->schedule == PLAN_SCHED_INTERLEAVED ? p : 1;
    /* Margins in micro-batches. reach: how far ahead (in micro-batches) a
     * task's inputs can be, through its stage's order: a 1F1B stage runs up
     * to p-1 forwards ahead of its backward, an interleaved one up to
     * (p-1)*2 + (v-1)*p tasks ahead, under 2 groups of p. The window starts
     * after the warm-up (head), covers a period plus the reach, and it and
     * what it depends on end before the cool-down (tail). */
    const int64_t reach = pl->schedule == PLAN_SCHED_INTERLEAVED ? 2 * (int64_t)p : p;
    const int64_t head = reach + delta, tail = 2 * reach + delta;
    /* 1F1B with several stages tied at the largest cost (an uneven layer
     * split: every middle stage one layer heavier than the first and last)
     * repeats with a period of as many micro-batches as the tied stages
     * span (measured: 13 of 15 stages -> 13); one heaviest stage gives 1.
     * The first reduced run leaves room for that period. */
    int64_t k0 = 1;
    if (pl->schedule == PLAN_SCHED_1F1B) {
        double top = 0;
        int32_t first = -1, last = 0;
        for (int32_t s = 0; s < p; s++) top = fmax(top, pl->chunk[s].fwd_s + pl->chunk[s].bwd_s);
        for (int32_t s = 0; s < p; s++)
            if (same(pl->chunk[s].fwd_s + pl->chunk[s].bwd_s, top, top)) {
                if (first < 0) first = s;
                last = s;
            }
        k0 = first < 0 ? 1 : last - first + 1;
    }
    const int64_t P0 = k0 * delta; /* the expected period */
    int64_t mr = head + reach + 2 * P0 + tail; /* room for it */
    *done = false;
    if (pl->schedule == PLAN_SCHED_INTERLEAVED && m % p) return TS_OK; /* partial groups: the full pass decides */
    if (pl->schedule == PLAN_SCHED_GPIPE) {
        /* GPipe has no back-pressure: stage s forwards at the pace of the
         * slowest stage up to s, and backwards of the slowest from s on. One
         * lambda for all (what the extrapolation needs) only when stage 0 has
         * the longest forward and stage p-1 the longest backward. */
        for (int32_t s = 1; s < p; s++)
            if (pl->chunk[s].fwd_s > pl->chunk[0].fwd_s || pl->chunk[s - 1].bwd_s > pl->chunk[p - 1].bwd_s)
                return TS_OK;
    }
    SimPipeline q;
    for (;;) {
        /* m - mr a whole number of expected periods: when that is the
         * period, the reduced run needs no second pass for the remainder */
        if (mr < m) mr += (m - mr) % P0;
        if (mr >= m) return TS_OK;
        TsStatus st = run_reduced(pl, w, mr, &q, err);
        if (st) return st;
        const int64_t nt = (int64_t)p * v * mr;
        int64_t a = 0, P = 0;
        double lf = 0, lb = 0;
        /* the smallest period that fits: hi - lo >= W + P = reach + 2P */
        for (int64_t k = 1; head + reach + 2 * k * delta + tail <= mr; k++) {
            int64_t Pk = k * delta, W = reach + Pk;
            if (!scalar_period(w->fend + nt, Pk, head, mr - tail, W)) continue; /* B of stage 0, chunk 0 */
            if (find_window(&q, w, Pk, head, mr - tail, W, &a, &lf, &lb)) {
                P = Pk;
                break;
            }
        }
        if (P == 0) {
            mr *= 2;
            continue;
        }
        if ((m - mr) % P) { /* whole periods only: add the rest to the reduced run */
            int64_t W = reach + P;
            mr += (m - mr) % P;
            if (mr >= m) return TS_OK;
            if ((st = run_reduced(pl, w, mr, &q, err)) != TS_OK) return st;
            if (!find_window(&q, w, P, a, a + W + P, W, &a, &lf, &lb)) return TS_OK; /* cannot happen */
        }
        const int64_t n = (m - mr) / P, ntr = (int64_t)p * v * mr;
        const double dn = (double)n, shift = dn * lb + (pl->schedule == PLAN_SCHED_GPIPE ? dn * lf : 0);
        for (int32_t s = 0; s < p; s++) {
            double round = 0; /* transfer wait of one period on stage s */
            for (int32_t c = 0; c < v; c++)
                for (int64_t mb = a; mb < a + P; mb++) {
                    int64_t f = ((int64_t)s * v + c) * mr + mb;
                    round += w->ppc[f] + w->ppc[ntr + f];
                }
            w->tfree[s] += shift;
            w->ppwait[s] += dn * round;
        }
        for (int32_t i = 0; i < p * v; i++) {
            w->bst_last[i] += shift;
            w->bfin_last[i] += shift;
        }
        *done = true;
        return TS_OK;
    }
}

/* Where stage s spends its time up to its end (end_s): its busy time split
 * by what the chunk costs say each micro-batch holds, its idle time split
 * into waiting for a transfer in flight (pp) and bubble, then its DP
 * reduction and slow-down; `ag` (an exposed parameter gather) and `slow_ag`
 * (a hidden one's slow-down) are the iteration's, 0 for a stage on its own. */
static void stage_breakdown(const SimPipeline *pl, const SimWork *w, int32_t s, double ag, double slow_ag,
                            SimBreakdown *bd)
{
    const SimStageResult *sr = &w->stages[s];
    const int32_t v = pl->chunks;
    double rec = 0, tp = 0, cp = 0, ep = 0, fsdp = 0, slow = 0, ppb = 0;
    for (int32_t c = 0; c < v; c++) {
        const SimChunkCost *cc = &pl->chunk[s * v + c];
        ppb += cc->pp_blocked_s;
        rec += cc->recompute_s;
        tp += cc->tp_exposed_s;
        cp += cc->cp_exposed_s;
        ep += cc->ep_exposed_s;
        fsdp += cc->fsdp_exposed_s;
        slow += cc->slowdown_s;
    }
    double md = (double)pl->micro_batches;
    memset(bd, 0, sizeof *bd);
    bd->recompute_s = rec * md;
    bd->tp_comm_exposed_s = tp * md;
    bd->cp_comm_exposed_s = cp * md;
    bd->ep_comm_exposed_s = ep * md;
    bd->compute_s = sr->busy_s - (rec + tp + cp + ep + fsdp + slow + ppb) * md;
    double idle = sr->pipe_end_s - sr->busy_s;
    if (idle < 0) idle = 0;
    double pp = w->ppwait[s];
    if (pp > idle) pp = idle;
    bd->pp_comm_exposed_s = pp + ppb * md;
    bd->bubble_s = idle - pp;
    bd->dp_comm_exposed_s = sr->dp_exposed_s + sr->embed_sync_s + ag + fsdp * md;
    bd->overlap_slowdown_s = sr->slowdown_s + slow_ag + slow * md;
}

/* Compute-stream time of stage s: its tasks run one after another. */
static double stage_busy(const SimPipeline *pl, int32_t s)
{
    double busy = 0;
    for (int32_t c = 0; c < pl->chunks; c++) busy += pl->chunk[s * pl->chunks + c].fwd_s + pl->chunk[s * pl->chunks + c].bwd_s;
    return busy * (double)pl->micro_batches;
}

double sim_pipeline_lower_bound(const SimPipeline *pl)
{
    double busy = 0, opt = 0;
    for (int32_t s = 0; s < pl->stages; s++) {
        busy = fmax(busy, stage_busy(pl, s));
        opt = fmax(opt, pl->stage[s].optimizer_s);
    }
    return busy + opt;
}

TsStatus sim_pipeline_run(const SimPipeline *pl, SimWork *wk, SimResult *out, TsError *err)
{
    memset(out, 0, sizeof *out);
    TsStatus st = check(pl, err);
    if (st) return st;
    SimWork *w = wk ? wk : sim_work_create();
    if (!w) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t m = pl->micro_batches;
    w->span_n = 0;
    bool done = false;
    if (!pl->record && !pl->full_pass) {
        st = run_periodic(pl, w, &done, err);
        if (st) goto fail;
    }
    if (!done) {
        const SimProg *pg = NULL;
        st = prepare(w, p, v, m, false, err);
        if (!st) st = compile(pl, w, &pg, err);
        if (st) goto fail;
        run_ops(pl, w, pg, NULL);
        if (pl->record && (st = record_spans(pl, w, pg, err)) != TS_OK) goto fail;
    }

    double pipe_max = 0, opt = 0, ag_exposed = 0, ag_hidden = 0, ag_start = 0, step_comm = 0;
    int32_t crit = 0, slowest = 0;
    for (int32_t s = 0; s < p; s++) {
        SimStageResult *sr = &w->stages[s];
        memset(sr, 0, sizeof *sr);
        sr->busy_s = stage_busy(pl, s);
        if (sr->busy_s > w->stages[slowest].busy_s) slowest = s;
        sr->pipe_end_s = w->tfree[s];
        if (sr->pipe_end_s > pipe_max) pipe_max = sr->pipe_end_s;
        stage_dp(pl, w, s, sr);
        const SimStageCost *sc = pl->stage ? &pl->stage[s] : NULL;
        sr->embed_sync_s = sc ? sc->embed_sync_s : 0;
        sr->end_s = sr->pipe_end_s + sr->slowdown_s + sr->dp_exposed_s + sr->embed_sync_s;
        if (sr->end_s > w->stages[crit].end_s) crit = s;
        if (sc) {
            if (sc->optimizer_s > opt) opt = sc->optimizer_s;
            if (sc->step_comm_s > step_comm) step_comm = sc->step_comm_s;
            if (pl->param_gather_overlap) {
                if (sc->param_gather_s > ag_hidden) ag_hidden = sc->param_gather_s;
                double d = stage_gather_delay(pl, w, s);
                if (d > ag_start) ag_start = d;
            } else if (sc->param_gather_s > ag_exposed) {
                ag_exposed = sc->param_gather_s;
            }
        }
        if (pl->record) {
            bool oom = false;
            double tot = 0;
            for (int32_t c = 0; c < v; c++) tot += pl->chunk[s * v + c].dp_grad_s;
            if (tot > 0) {
                double t1 = sr->pipe_end_s + sr->dp_exposed_s, t0 = t1 - tot;
                push_span(w, &oom, s, SIM_STREAM_DP, 0, -1, 'R', t0 > 0 ? t0 : 0, t1);
            }
            if (sr->embed_sync_s > 0) {
                double t0 = sr->pipe_end_s + sr->dp_exposed_s;
                push_span(w, &oom, s, SIM_STREAM_DP, 0, -1, 'R', t0, t0 + sr->embed_sync_s);
            }
            if (oom) {
                st = ts_err(err, TS_ERR_INTERNAL, "out of memory recording the timeline");
                goto fail;
            }
        }
    }
    const SimStageResult *cs = &w->stages[crit];
    /* the hidden part of an overlapped gather slows the next forward; the
     * start-up delay it causes (the same on every stage: the pipeline fills
     * behind it) is exposed */
    double slow_ag = pl->overlap_slowdown * (ag_hidden > ag_start ? ag_hidden - ag_start : 0) * fwd_compute_share(pl, crit);
    ag_exposed += ag_start + step_comm; /* the step's own collectives are exposed too */
    out->iteration_time_s = cs->end_s + opt + ag_exposed + slow_ag;
    out->pipeline_time_s = pipe_max;
    out->critical_stage = crit;
    out->periodic = done;
    out->n_stages = p;
    out->stages = w->stages;

    for (int32_t s = 0; s < p; s++) stage_breakdown(pl, w, s, 0, 0, &w->stages[s].breakdown);
    SimBreakdown *bd = &out->breakdown;
    stage_breakdown(pl, w, crit, ag_exposed, slow_ag, bd);
    bd->optimizer_s = opt;
    out->slowest_stage = slowest;
    out->bubble_fraction = cs->pipe_end_s > 0 ? bd->bubble_s / cs->pipe_end_s : 0;

    if (pl->record) {
        bool oom = false;
        double t = cs->end_s;
        for (int32_t s = 0; s < p; s++) {
            const SimStageCost *sc = pl->stage ? &pl->stage[s] : NULL;
            if (!sc) break;
            if (sc->optimizer_s > 0) push_span(w, &oom, s, SIM_STREAM_COMPUTE, 0, -1, 'O', t, t + sc->optimizer_s);
            if (sc->param_gather_s > 0 && !pl->param_gather_overlap)
                push_span(w, &oom, s, SIM_STREAM_DP, 0, -1, 'G', t + opt, t + opt + sc->param_gather_s);
        }
        if (oom) {
            st = ts_err(err, TS_ERR_INTERNAL, "out of memory recording the timeline");
            goto fail;
        }
        out->spans = w->spans;
        out->n_spans = (int64_t)w->span_n;
    }
    if (!wk) {
        /* Copy what the caller keeps out of the temporary work. */
        SimStageResult *stages = malloc((size_t)p * sizeof *stages);
        SimSpan *spans = w->span_n ? malloc(w->span_n * sizeof *spans) : NULL;
        if (!stages || (w->span_n && !spans)) {
            free(stages);
            free(spans);
            st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
            goto fail;
        }
        memcpy(stages, w->stages, (size_t)p * sizeof *stages);
        if (spans) memcpy(spans, w->spans, w->span_n * sizeof *spans);
        out->stages = stages;
        out->spans = pl->record ? spans : NULL;
        if (!pl->record) free(spans);
        sim_work_destroy(w);
        out->owned = true;
    }
    return TS_OK;
fail:
    if (!wk) sim_work_destroy(w);
    memset(out, 0, sizeof *out);
    return st;
}
