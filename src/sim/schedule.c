/*
 * schedule.c — the pipeline schedule engine (sim.h layer 1).
 *
 * Tasks are (stage s, micro-batch mb, chunk c, kind), packed in an int32 as
 * plan.h's PLAN_TASK(mb, c, kind) (c < 128, mb < 2^21); kinds: F forward, B
 * whole backward, I the input-gradient part of a backward (zb-h1, dualpipe:
 * its weight gradient runs later as a W task), W, and PF: the forward of an
 * overlapped F&B pair whose backward is the next entry (dualpipe). Each
 * stage's task order is written once into an array (GPipe, 1F1B, Megatron
 * interleaved 1F1B by plan_order_megatron; ZB-H1, DualPipe, DualPipeV by
 * plan_order; the workload builder runs both too). Finish times live in flat arrays indexed
 * [(s*v + c)*mc + mb] (mc micro-batches per chunk: m, or m/2 for dualpipe's
 * two copies): forwards, then backwards (B or I), then W; -1 means "not yet
 * run". Stages are swept alternately 0..p-1 and p-1..0; a stage runs tasks
 * in its order while their dependencies are known. Along the model, chunks
 * are placed in a line (1F1B, interleaved: chunk c of stage s follows chunk
 * c of stage s-1, then chunk c-1 of stage p-1), in two lines run in opposite
 * directions (dualpipe: chunk 0 enters at stage 0, chunk 1 at stage p-1) or
 * in a V (dualpipev: chunk 0 down stages 0..p-1, chunk 1 back up p-1..0):
 *   F(s,mb,c): F of the chunk before on its stage + p2p   (none for the first chunk)
 *   B(s,mb,c): B of the chunk after on its stage + p2p    (the last chunk: its own F)
 *   W(s,mb,c): B(s,mb,c)
 *   F&B pair:  both its forward's and its backward's dependency
 * Transfers between chunks on one stage (the V's turn) are free.
 * start = max(stage free, dependency); the schedule orders are deadlock-free,
 * so every sweep makes progress (checked: no progress -> TS_ERR_INTERNAL).
 * A pair becomes three operations of one kind of step (compile()): a zero-
 * length one waiting for the forward's input, the pair's time after the
 * backward's input, a zero-length one giving the forward its finish.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "../common/common_int.h"

/* Operation kinds of a compiled schedule (what record_spans draws). */
enum { OP_F, OP_B, OP_I, OP_W, OP_PAIR_OPEN, OP_PAIR, OP_PAIR_CLOSE, OP_X };

/* One operation of a compiled schedule (see compile()). */
typedef struct SimOp {
    int32_t self;  /* finish slot: F at idx, B (or I) at nt + idx, W at 2*nt + idx, the
                      opening of a pair at 3*nt + idx, idx = (s*v + c)*mc + mb */
    int32_t dep;   /* finish slot it waits for, -1 none */
    int32_t xi;    /* transfer on that edge: xf[] index (2*sender + is_bwd), zero slot if none */
    int32_t di;    /* duration: dur[] index (DUR_* of the chunk, a pair, or the zero slot) */
    int16_t stage;
    int8_t last;   /* 1: the last micro-batch's last gradient work of its chunk (B, or W after
                      an I: DP buckets start under it); 2: forward of the first (the
                      parameter gathers arrive under it) */
    int8_t kind;   /* OP_* */
} SimOp;

/* dur[] per chunk i = s*v + c: 4*i + DUR_F, _B, _I, _W; then the pairs of
 * stage s, 4*p*v + (s*v + cf)*v + cb; then the zero slot; then DeepSpeed's
 * steps of stage s (ds_pipe), DUR_DS * s + F with 0, 1, 2 transfers, B with
 * 0, 1, 2, an exchange of one transfer alone (forward step, backward step). */
enum { DUR_DS = 8 };
enum { DUR_F, DUR_B, DUR_I, DUR_W };

/* A compiled schedule for (p, v, m, schedule). */
typedef struct SimProg {
    SimOp *ops;
    size_t cap;
    int64_t n, m, g;     /* n == 0: empty slot; g: the interleaved group */
    int32_t p, v, sched;
    uint64_t used;       /* LRU stamp */
    uint8_t *wlast;      /* [p*v]: the chunk's last gradient work is a W task */
    size_t wl_cap;
    int64_t *by_stage;   /* [n]: the ops' indices stage by stage, each stage's in program order */
    size_t bs_cap;
    int64_t *stage_at;   /* [p + 1]: stage s's ops are by_stage[stage_at[s] .. stage_at[s + 1]) */
    size_t sa_cap;
} SimProg;

/* Compiled schedules kept per work space: a sweep alternates schedules and
 * vpp within a shape, and the periodic fast path runs few distinct m. */
#define SIM_PROG_CACHE 16

struct SimWork {
    SimProg progs[SIM_PROG_CACHE];
    uint64_t clock;
    double *dur, *xf;    /* dur: see DUR_*; xf: [2*p*v + 1 + p*v*v] (2*sender + is_bwd, zero,
                            F&B pairs' two transfers back to back: pair_xfer) */
    size_t dur_cap, xf_cap;
    int32_t *order;      /* [p][order entries] */
    size_t order_cap;
    int32_t *fifo;       /* plan_order's W queue */
    size_t fifo_cap;
    double *fend;        /* finish times [nslots(pl)] (F, B, W, pairs' openings); compile's done flags */
    size_t t_cap;
    double *bst_last;    /* start of the last gradient work of (s, c) (B or W of mb mc-1): [p*v] */
    size_t sc_cap;
    uint8_t *wlast;      /* [p*v]: that work is a W (the last run's program) */
    size_t wl_cap;
    double *fst_first;   /* start of F(s, 0, c): [p*v] */
    size_t ff_cap;
    double *agwait;      /* [3p]: stage s's first forwards waiting for overlapped parameter
                            gathers (gather_wait); its gathers' seconds [p + s]; of them, the
                            seconds beside its compute [2p + s] (gather_overlap) */
    size_t agw_cap;
    double *ppc;         /* per-task transfer wait (fast path): like fend */
    size_t ppc_cap;
    SimStageResult *stages;
    size_t st_cap;
    int64_t *pos, *olen; /* per stage: compile's position in its order, the order's length */
    size_t pos_cap, olen_cap;
    double *tfree;       /* per stage: when its compute stream is free */
    size_t tf_cap;
    double *ppwait;      /* idle time spent waiting for a transfer in flight, per stage */
    size_t ppw_cap;
    SimSpan *spans;
    size_t span_n, span_cap;
    SimChunkCost *costs;   /* for sim_simulate */
    size_t costs_cap;
    SimStageCost *scosts;
    size_t scosts_cap;
    void *cost_cache;      /* layer_cost.c's layer-cost cache (sim_work_cache_costs) */
    bool cost_cache_on;
    const SimProg *tail_pg; /* the program of the last run_ops (the fast path's reduced run) */
    double tail_shift;      /* what its finish times lack at the end of the pipeline (the fast
                               path's skipped periods), 0 for a full pass */
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
    free(w->fifo);
    for (int i = 0; i < SIM_PROG_CACHE; i++) {
        free(w->progs[i].ops);
        free(w->progs[i].wlast);
        free(w->progs[i].by_stage);
        free(w->progs[i].stage_at);
    }
    free(w->ppc);
    free(w->dur);
    free(w->xf);
    free(w->fend);
    free(w->bst_last);
    free(w->wlast);
    free(w->fst_first);
    free(w->stages);
    free(w->pos);
    free(w->olen);
    free(w->tfree);
    free(w->ppwait);
    free(w->agwait);
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

const SimChunkCost *sim_work_chunk_costs(const SimWork *w)
{
    return w->costs;
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

double sim_pair_s(const SimChunkCost *f, const SimChunkCost *b, double share)
{
    double fe = f->ep_fwd_s, be = b->ep_bwd_s, comp = f->fwd_s - fe + b->bwd_s - be;
    if (!(fe + be > 0)) return comp;
    double c = comp / (1.0 - share);
    return c > fe + be ? c : fe + be;
}

/* ---- schedule shapes ---------------------------------------------------------- */
static bool sched_dual(const SimPipeline *pl)
{
    return pl->schedule == PLAN_SCHED_DUALPIPE || pl->schedule == PLAN_SCHED_DUALPIPEV;
}

/* The orders written by plan_order (W tasks, pairs). */
static bool sched_ordered(const SimPipeline *pl) { return plan_sched_ordered(pl->schedule); }

/* F&B pairs (DualPipe, DualPipeV, 1F1B with EP overlap). */
static bool sched_pairs(const SimPipeline *pl) { return plan_sched_pairs(pl->schedule); }

/* Megatron's interleaved table: the interleaved schedule, and 1F1B with EP
 * overlap over several chunks a stage. */
static bool interleaved(const SimPipeline *pl)
{
    return pl->schedule == PLAN_SCHED_INTERLEAVED || (pl->schedule == PLAN_SCHED_1F1B_A2A && pl->chunks > 1);
}

/* Micro-batches through each chunk: dualpipe's copies take half each. */
static int64_t chunk_mb(const SimPipeline *pl)
{
    return pl->schedule == PLAN_SCHED_DUALPIPE ? pl->micro_batches / 2 : pl->micro_batches;
}

/* Finish slots: F, B, W of every task, and the openings of F&B pairs. */
static size_t nslots(const SimPipeline *pl)
{
    return (sched_pairs(pl) || pl->ds_pipe ? 4 : 3) * (size_t)pl->stages * (size_t)pl->chunks * (size_t)chunk_mb(pl);
}

/* Order entries per stage, at most. */
static int64_t order_cap(const SimPipeline *pl)
{
    if (sched_ordered(pl)) return plan_order_cap(pl->schedule, pl->micro_batches, pl->chunks);
    return 2 * pl->micro_batches * pl->chunks;
}

/* Operations per stage, at most: a pair's two entries make three. */
static int64_t ops_cap(const SimPipeline *pl)
{
    if (pl->ds_pipe) return 2 * (pl->micro_batches + pl->stages);
    int64_t n = order_cap(pl);
    return sched_pairs(pl) ? n + n / 2 + 1 : n;
}

/* The interleaved schedule's micro-batch group (SimPipeline.group). */
static int64_t group_of(const SimPipeline *pl) { return pl->group > 0 ? pl->group : pl->stages; }

/* The finish slot task (s, mb, c) of a forward (bwd false) or a backward waits
 * for, -1 none, and the transfer on that edge (*xi; xzero when free): the
 * chunk before (forward) or after (backward) on the model's path, which is
 * a line, two opposite lines (dualpipe) or a V (dualpipev). */
static int64_t dep_of(const SimPipeline *pl, int64_t mc, int32_t s, int32_t c, int64_t mb, bool bwd, int32_t *xi)
{
    const int32_t p = pl->stages, v = pl->chunks, xzero = 2 * p * v;
    const int64_t nt = (int64_t)p * v * mc;
    int32_t ps = -1, pc = 0; /* the stage and chunk of the dependency */
    bool xfer = true;
    if (pl->schedule == PLAN_SCHED_DUALPIPE) { /* chunk 0 enters at stage 0, chunk 1 at stage p-1 */
        int32_t up = c == 0 ? !bwd : bwd, n = up ? s - 1 : s + 1;
        if (n >= 0 && n < p) ps = n, pc = c;
    } else if (pl->schedule == PLAN_SCHED_DUALPIPEV && c == 1) { /* the V's way back */
        if (!bwd) ps = s < p - 1 ? s + 1 : s, pc = s < p - 1 ? 1 : 0, xfer = s < p - 1;
        else if (s > 0) ps = s - 1, pc = 1;
    } else if (pl->schedule == PLAN_SCHED_DUALPIPEV) { /* the V's way down */
        if (!bwd && s > 0) ps = s - 1, pc = 0;
        if (bwd) ps = s < p - 1 ? s + 1 : s, pc = s < p - 1 ? 0 : 1, xfer = s < p - 1;
    } else if (!bwd) { /* a line: chunk c of stage s-1, or chunk c-1 of stage p-1 */
        if (s > 0) ps = s - 1, pc = c;
        else if (c > 0) ps = p - 1, pc = c - 1;
    } else {
        if (s < p - 1) ps = s + 1, pc = c;
        else if (c < v - 1) ps = 0, pc = c + 1;
    }
    if (ps < 0) { /* the first chunk's forward waits for nothing, the last one's backward for its forward */
        *xi = xzero;
        return bwd ? ((int64_t)s * v + c) * mc + mb : -1;
    }
    *xi = xfer ? 2 * (ps * v + pc) + bwd : xzero;
    return (bwd ? nt : 0) + ((int64_t)ps * v + pc) * mc + mb;
}

/* Fill order[0..) for stage s; returns the count. */
static int64_t make_order(const SimPipeline *pl, SimWork *w, int32_t s, int32_t *o)
{
    if (sched_ordered(pl))
        return plan_order(pl->schedule, pl->stages, pl->chunks, pl->micro_batches, group_of(pl), s, o, w->fifo);
    return plan_order_megatron(pl->schedule, pl->stages, pl->chunks, pl->micro_batches, group_of(pl), s, o);
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

/* Is the dependency slot done (compile's flags in fend: >= 0)? */
static bool done(const double *flag, int64_t dep)
{
    return dep < 0 || flag[dep] >= 0;
}

static void put_op(SimOp *op, int64_t self, int64_t dep, int32_t xi, int32_t di, int32_t s, int last, int kind)
{
    *op = (SimOp){.self = (int32_t)self, .dep = (int32_t)dep, .xi = xi, .di = di, .stage = (int16_t)s,
                  .last = (int8_t)last, .kind = (int8_t)kind};
}

/* Does the output of (s, c)'s forward (backward: its input gradient) cross
 * to another stage? Not from the model's last chunk (first, backward), nor
 * at the V's turn on stage p-1. */
static bool sends(const SimPipeline *pl, int32_t s, int32_t c, bool bwd)
{
    const int32_t p = pl->stages, v = pl->chunks;
    if (pl->schedule == PLAN_SCHED_DUALPIPE) return c == 0 ? (bwd ? s > 0 : s < p - 1) : (bwd ? s < p - 1 : s > 0);
    if (pl->schedule == PLAN_SCHED_DUALPIPEV) return c == 0 ? (bwd ? s > 0 : s < p - 1) : (bwd ? s < p - 1 : s > 0);
    return bwd ? !(s == 0 && c == 0) : !(s == p - 1 && c == v - 1);
}

/* A backward's input gradient from an F&B pair leaves after the pair's
 * forward output: a stage's sends run one after another on its send stream
 * (the GPU's egress link, the task graph's one send stream per rank), the
 * forward's first as the workload builder sends them. dep_of's edge *xi from
 * a backward slot that a pair finished (flag 2 + the pair's forward chunk)
 * becomes the pair's transfer slot, both transfers back to back. */
static void pair_xfer(const SimPipeline *pl, const double *flag, int64_t dep, int32_t *xi)
{
    const int32_t p = pl->stages, v = pl->chunks, pv = p * v;
    const int64_t nt = (int64_t)pv * chunk_mb(pl);
    if (dep < nt || *xi >= 2 * pv || !(*xi & 1) || !(flag[dep] >= 2)) return;
    int32_t i = *xi / 2, ps = i / v, pc = i % v, cf = (int32_t)flag[dep] - 2;
    if (sends(pl, ps, cf, false)) *xi = 2 * pv + 1 + (ps * v + cf) * v + pc;
}

/* Compile stage s's tasks from position *k on while their dependencies are
 * done; returns the operations written at ops. */
static int64_t compile_stage(const SimPipeline *pl, SimProg *pg, const int32_t *o, int64_t nk, int32_t s,
                             int64_t *k, double *flag, SimOp *ops)
{
    const int32_t p = pl->stages, v = pl->chunks, xzero = 2 * p * v;
    const int64_t mc = chunk_mb(pl), nt = (int64_t)p * v * mc;
    const int32_t dzero = 4 * p * v + p * v * v;
    int64_t n = 0;
    for (; *k < nk; (*k)++) {
        int32_t t = o[*k], c = PLAN_TASK_CHUNK(t), kind = PLAN_TASK_KIND(t), xi, xj;
        int64_t mb = PLAN_TASK_MB(t), idx = ((int64_t)s * v + c) * mc + mb;
        if (kind == PLAN_TASK_F) {
            int64_t dep = dep_of(pl, mc, s, c, mb, false, &xi);
            if (!done(flag, dep)) break;
            flag[idx] = 1;
            put_op(&ops[n++], idx, dep, xi, 4 * (s * v + c) + DUR_F, s, 2 * (mb == 0), OP_F);
        } else if (kind == PLAN_TASK_W) {
            put_op(&ops[n++], 2 * nt + idx, nt + idx, xzero, 4 * (s * v + c) + DUR_W, s, mb == mc - 1, OP_W);
        } else if (kind == PLAN_TASK_PF) { /* an F&B pair: this forward and the next entry's backward */
            int32_t tb = o[*k + 1], cb = PLAN_TASK_CHUNK(tb);
            int64_t mbb = PLAN_TASK_MB(tb), ib = ((int64_t)s * v + cb) * mc + mbb;
            int64_t df = dep_of(pl, mc, s, c, mb, false, &xi), db = dep_of(pl, mc, s, cb, mbb, true, &xj);
            if (!done(flag, df) || !done(flag, db)) break;
            pair_xfer(pl, flag, db, &xj);
            flag[idx] = 1;
            flag[nt + ib] = 2 + c;
            put_op(&ops[n++], 3 * nt + idx, df, xi, dzero, s, 2 * (mb == 0), OP_PAIR_OPEN);
            put_op(&ops[n++], nt + ib, db, xj, 4 * p * v + (s * v + c) * v + cb, s, mbb == mc - 1, OP_PAIR);
            put_op(&ops[n++], idx, nt + ib, xzero, dzero, s, 0, OP_PAIR_CLOSE);
            (*k)++;
        } else { /* B or I */
            int64_t dep = dep_of(pl, mc, s, c, mb, true, &xi);
            if (!done(flag, dep)) break;
            pair_xfer(pl, flag, dep, &xi);
            flag[nt + idx] = 1;
            bool in = kind == PLAN_TASK_I;
            if (in && mb == mc - 1) pg->wlast[s * v + c] = 1;
            put_op(&ops[n++], nt + idx, dep, xi, 4 * (s * v + c) + (in ? DUR_I : DUR_B), s, !in && mb == mc - 1,
                   in ? OP_I : OP_B);
        }
    }
    return n;
}

/* A compiled program's shape besides (p, v, m): the schedule, DeepSpeed's
 * steps apart. */
static int sched_key(const SimPipeline *pl) { return (int)pl->schedule + (pl->ds_pipe ? PLAN_SCHED_COUNT : 0); }

/* DeepSpeed's pipeline (plan_ds_step), step by step: a stage's exchange with
 * its neighbour and then its compute are one operation, which starts once
 * both stages are free (dep: the neighbour's latest operation; the exchange
 * is a rendezvous, its transfers one after another) and lasts the exchange
 * plus the compute (the DUR_DS durations). An exchange without compute (an
 * idle step sending the previous step's output) takes the W slot of that
 * micro-batch after a backward, the pair-opening slot after a forward.
 * Returns the operations written at ops. */
static int64_t compile_ds(const SimPipeline *pl, SimWork *w, SimOp *ops)
{
    const int32_t p = pl->stages;
    const int64_t m = pl->micro_batches, nt = (int64_t)p * m;
    const int32_t dds = 4 * p + p + 1, xzero = 2 * p; /* v = 1 */
    int64_t *last = w->pos, *prev = w->olen, n = 0;
    for (int32_t s = 0; s < p; s++) last[s] = -1, prev[s] = -1;
    for (int64_t k = 0; k < 2 * (m + p - 1); k++) {
        int64_t n0 = n;
        for (int32_t s = 0; s < p; s++) {
            bool fwd;
            int64_t mb;
            plan_ds_step(k, s, p, &fwd, &mb);
            bool ok = mb >= 0 && mb < m, pok = prev[s] >= 0 && prev[s] < m;
            int32_t nb = fwd ? s - 1 : s + 1, nx = nb >= 0 && nb < p ? (int32_t)ok + (int32_t)pok : 0;
            int64_t dep = nx > 0 ? last[nb] : -1;
            if (ok)
                put_op(&ops[n++], (fwd ? 0 : nt) + (int64_t)s * m + mb, dep, xzero, dds + DUR_DS * s + (fwd ? 0 : 3) + nx,
                       s, fwd ? 2 * (mb == 0) : mb == m - 1, fwd ? OP_F : OP_B);
            else if (nx > 0)
                put_op(&ops[n++], (fwd ? 2 : 3) * nt + (int64_t)s * m + prev[s], dep, xzero,
                       dds + DUR_DS * s + (fwd ? 6 : 7), s, 0, OP_X);
            prev[s] = mb;
        }
        for (int64_t i = n0; i < n; i++) last[ops[i].stage] = ops[i].self;
    }
    return n;
}

/* A compiled program of n ops: its key, and its ops indexed stage by stage
 * (stage_tail_compute walks one stage's from the end); w->pos is scratch. */
static TsStatus compiled(const SimPipeline *pl, SimWork *w, SimProg *pg, int64_t n, const SimProg **out,
                         TsError *err)
{
    const int32_t p = pl->stages;
    if (!ts_grow((void **)&pg->by_stage, &pg->bs_cap, (size_t)(n > 0 ? n : 1), sizeof(int64_t)) ||
        !ts_grow((void **)&pg->stage_at, &pg->sa_cap, (size_t)p + 1, sizeof(int64_t)))
        return ts_err(err, TS_ERR_INTERNAL, "out of memory for a %lld-task pipeline", (long long)n);
    int64_t *at = pg->stage_at, *cur = w->pos;
    for (int32_t s = 0; s <= p; s++) at[s] = 0;
    for (int64_t k = 0; k < n; k++) at[pg->ops[k].stage + 1]++;
    for (int32_t s = 0; s < p; s++) at[s + 1] += at[s], cur[s] = at[s];
    for (int64_t k = 0; k < n; k++) pg->by_stage[cur[pg->ops[k].stage]++] = k;
    pg->n = n;
    pg->p = p;
    pg->v = pl->chunks;
    pg->m = pl->micro_batches;
    pg->g = group_of(pl);
    pg->sched = sched_key(pl);
    *out = pg;
    return TS_OK;
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
    const int64_t m = pl->micro_batches, ncap = order_cap(pl), nt = (int64_t)p * v * chunk_mb(pl);
    SimProg *pg = &w->progs[0];
    for (int i = 0; i < SIM_PROG_CACHE; i++) {
        SimProg *q = &w->progs[i];
        if (q->n > 0 && q->p == p && q->v == v && q->m == m && q->g == group_of(pl) && q->sched == sched_key(pl)) {
            q->used = ++w->clock;
            *out = q;
            return TS_OK;
        }
        if (q->used < pg->used) pg = q;
    }
    pg->n = 0;
    pg->used = ++w->clock;
    if (!ts_grow((void **)&pg->ops, &pg->cap, (size_t)(ops_cap(pl) * p), sizeof(SimOp)) ||
        !ts_grow((void **)&pg->wlast, &pg->wl_cap, (size_t)(p * v), 1))
        return ts_err(err, TS_ERR_INTERNAL, "out of memory for a %lld-task pipeline", (long long)(ncap * p));
    memset(pg->wlast, 0, (size_t)(p * v));
    if (pl->ds_pipe) return compiled(pl, w, pg, compile_ds(pl, w, pg->ops), out, err);
    int64_t remaining = 0, n = 0;
    for (int32_t s = 0; s < p; s++) {
        w->pos[s] = make_order(pl, w, s, w->order + (int64_t)s * ncap);
        remaining += w->pos[s];
    }
    double *flag = w->fend; /* used as flags: < 0 not done */
    for (int64_t i = 0; i < 2 * nt; i++) flag[i] = -1.0;
    int64_t *len = w->olen;
    for (int32_t s = 0; s < p; s++) len[s] = w->pos[s], w->pos[s] = 0;
    for (int64_t sweep = 0; remaining > 0; sweep++) {
        int64_t before = remaining;
        for (int32_t i = 0; i < p; i++) {
            int32_t s = (sweep & 1) ? p - 1 - i : i;
            int64_t k = w->pos[s];
            n += compile_stage(pl, pg, w->order + (int64_t)s * ncap, len[s], s, &k, flag, pg->ops + n);
            remaining -= k - w->pos[s];
            w->pos[s] = k;
        }
        if (remaining == before)
            return ts_err(err, TS_ERR_INTERNAL, "pipeline schedule deadlocked (schedule %s, p=%d, v=%d, m=%lld)",
                          plan_sched_name(pl->schedule), p, v, (long long)m);
    }
    return compiled(pl, w, pg, n, out, err);
}

/* Durations and transfers of the plan's chunks (and pairs) into w. */
static void fill_durations(const SimPipeline *pl, SimWork *w)
{
    const int32_t p = pl->stages, v = pl->chunks, pv = p * v;
    double *dur = w->dur, *xf = w->xf;
    for (int32_t i = 0; i < pv; i++) {
        const SimChunkCost *cc = &pl->chunk[i];
        dur[4 * i + DUR_F] = cc->fwd_s;
        dur[4 * i + DUR_B] = cc->bwd_s;
        dur[4 * i + DUR_I] = cc->bwd_s - cc->wgrad_s;
        dur[4 * i + DUR_W] = cc->wgrad_s;
        xf[2 * i] = p > 1 ? cc->p2p_fwd_s : 0;
        xf[2 * i + 1] = p > 1 ? cc->p2p_bwd_s : 0;
    }
    if (sched_pairs(pl))
        for (int32_t s = 0; s < p; s++)
            for (int32_t cf = 0; cf < v; cf++)
                for (int32_t cb = 0; cb < v; cb++)
                    dur[4 * pv + (s * v + cf) * v + cb] =
                        sim_pair_s(&pl->chunk[s * v + cf], &pl->chunk[s * v + cb], pl->pair_sm_share);
    dur[4 * pv + pv * v] = 0;
    xf[2 * pv] = 0;
    if (pl->ds_pipe) /* v = 1; the blocked transfers are the exchanges' */
        for (int32_t s = 0; s < p; s++) {
            const SimChunkCost *cc = &pl->chunk[s];
            double blk = cc->pp_blocked_s / 2, xi = -cc->p2p_bwd_s, xo = -cc->p2p_fwd_s, *d = dur + 5 * p + 1 + DUR_DS * s;
            for (int32_t k = 0; k < 3; k++) d[k] = cc->fwd_s - blk + k * xi, d[3 + k] = cc->bwd_s - blk + k * xo;
            d[6] = xi;
            d[7] = xo;
        }
    if (sched_pairs(pl))
        for (int32_t i = 0; i < pv; i++) /* a pair's forward output, then its input gradient */
            for (int32_t cb = 0; cb < v; cb++) {
                int32_t s = i / v;
                xf[2 * pv + 1 + i * v + cb] = xf[2 * i] + xf[2 * (s * v + cb) + 1];
            }
}

/* How late chunk i's first forward, started at t0, ends for its overlapped
 * parameter gathers (param_gather_overlap). The gathers of the stage's
 * chunks run back to back from the iteration start, chunk by chunk in
 * forward order (c = 0, 1, ..), as the task graph issues them; the chunk's
 * pieces (embedding, layers, LM head) each wait for the last bucket holding
 * their parameters, so with its gathers starting at g the forward ends
 * max(0, g + gather_lag_s - t0) late (gather_lag_s: SimChunkCost). */
static double gather_wait(const SimPipeline *pl, int32_t i, double t0)
{
    const int32_t v = pl->chunks, s = i / v;
    const SimChunkCost *cc = &pl->chunk[i];
    if (!(cc->param_gather_s > 0)) return 0;
    double g = 0;
    for (int32_t c = 0; c < i % v; c++) g += pl->chunk[s * v + c].param_gather_s;
    double d = g + cc->gather_lag_s - t0;
    return d > 0 ? d : 0;
}

/* The share of a task's busy seconds that is compute: traffic hidden under
 * the task slows compute only where it runs beside compute, not beside the
 * exposed TP / CP / EP collectives (or blocking pipeline transfers) that fill
 * the rest (as the replay measures it, replay_dag.c comm_overlap). */
static double compute_share(double comp, double busy)
{
    return busy > 0 && comp < busy ? comp / busy : 1.0;
}

/* The compute share of an operation's busy time (its chunk's, by kind; an
 * F&B pair's from both chunks; none for the zero-time ops). */
static double op_share(const SimPipeline *pl, const SimOp *op)
{
    const int32_t pv = pl->stages * pl->chunks, v = pl->chunks;
    if (op->kind == OP_X || op->kind == OP_PAIR_OPEN || op->kind == OP_PAIR_CLOSE) return 0;
    if (op->kind == OP_PAIR) {
        int32_t k = op->di - 4 * pv, s = op->stage;
        const SimChunkCost *f = &pl->chunk[k / v], *b = &pl->chunk[s * v + k % v];
        return compute_share(f->compute_fwd_s + b->compute_bwd_s + b->recompute_s - b->recompute_comm_s,
                             f->fwd_s + b->bwd_s);
    }
    /* F, B, I, W at 4 (s v + c) + DUR_*; DeepSpeed's steps (v = 1) after the pairs */
    const SimChunkCost *cc = &pl->chunk[op->di < 4 * pv ? op->di / 4 : op->stage];
    return op->kind == OP_F   ? compute_share(cc->compute_fwd_s, cc->fwd_s)
           : op->kind == OP_W ? 1.0
                              : compute_share(cc->compute_bwd_s + cc->recompute_s - cc->recompute_comm_s, cc->bwd_s);
}

/* The seconds of stage s's overlapped parameter gathers (running from the
 * iteration start, agg[s] in all) beside the compute of an operation busy
 * over [a, b), by the task's compute share, into ago[s]: the gathers'
 * slow-down is overlap_slowdown times them. */
static void gather_overlap(const SimPipeline *pl, const SimOp *op, double a, double b, const double *agg, double *ago)
{
    const int32_t s = op->stage;
    if (b > agg[s]) b = agg[s];
    if (b > a) ago[s] += (b - a) * op_share(pl, op);
}

/* Run the compiled program with this plan's durations. Idle time before a
 * task whose input is still in flight is charged to the pipeline transfer up
 * to the transfer's duration (ppwait); the rest of the idle time is bubble.
 * ppc (may be NULL) receives each task's charge, indexed like fin. Fills
 * tfree, ppwait, bst_last, wlast and fst_first. */
/* The engine's loop: each task starts when its stage is free and its
 * dependency (plus the transfer) has finished. `gather` (parameter gathers
 * beside the forwards) and ppc are constants of the inlined copies, so
 * the common run carries no test of them per task. */
static inline __attribute__((always_inline)) void run_loop(const SimPipeline *pl, SimWork *w, const SimProg *pg,
                                                           double *restrict ppc, bool gather, double gmax)
{
    const int32_t p = pl->stages;
    const int64_t mc = chunk_mb(pl), nt = (int64_t)p * pl->chunks * mc;
    const double *restrict dur = w->dur, *restrict xf = w->xf;
    double *restrict fin = w->fend; /* F, then B, then W */
    double *restrict fr = w->tfree, *restrict ppw = w->ppwait, *agw = w->agwait, *agg = agw + p, *ago = agw + 2 * p;
    const SimOp *prog = pg->ops;
    const int64_t n = pg->n;
    /* the running stage's free time and transfer wait in registers: the
     * program runs a stage's tasks in a row, and a chain through memory
     * (store, then load of the same slot) would set the pace */
    int32_t cs = n > 0 ? prog[0].stage : 0;
    double f = fr[cs], pw = ppw[cs];
    for (int64_t k = 0; k < n; k++) {
        const SimOp *op = &prog[k];
        if (op->stage != cs) {
            fr[cs] = f, ppw[cs] = pw;
            cs = op->stage;
            f = fr[cs], pw = ppw[cs];
        }
        double x = xf[op->xi], d = op->dep >= 0 ? fin[op->dep] + x : 0;
        double st = f > d ? f : d, wait = d - f;
        /* the wait the transfer explains, min(max(wait, 0), x) as min and
         * max (no branch on the data); x <= 0 (none, or a ds_pipe
         * rendezvous): 0 */
        double cw = wait < x ? wait : x, c = cw > 0 ? cw : 0;
        pw += c;
        if (ppc) ppc[op->self] = c;
        double en = st + dur[op->di];
        if (op->last) {
            int32_t i = (op->self % (int32_t)nt) / (int32_t)mc; /* the chunk s*v + c */
            if (op->last == 1) w->bst_last[i] = st;
            else {
                w->fst_first[i] = st;
                if (gather) {
                    double g = gather_wait(pl, i, st);
                    en += g;
                    agw[op->stage] += g;
                }
            }
        }
        if (gather && st < gmax) gather_overlap(pl, op, en - dur[op->di], en, agg, ago);
        fin[op->self] = en;
        f = en;
    }
    if (n > 0) fr[cs] = f, ppw[cs] = pw;
}

static void run_ops(const SimPipeline *pl, SimWork *w, const SimProg *pg, double *ppc)
{
    const int32_t p = pl->stages, v = pl->chunks, pv = p * v;
    fill_durations(pl, w);
    double *fr = w->tfree, *ppw = w->ppwait, *agw = w->agwait, *agg = agw + p, *ago = agw + 2 * p, gmax = 0;
    for (int32_t s = 0; s < p; s++) {
        fr[s] = ppw[s] = agw[s] = ago[s] = agg[s] = 0;
        if (pl->param_gather_overlap)
            for (int32_t c = 0; c < v; c++) agg[s] += pl->chunk[s * v + c].param_gather_s;
        if (agg[s] > gmax) gmax = agg[s]; /* no gathers run after gmax */
    }
    if (pl->param_gather_overlap) run_loop(pl, w, pg, ppc, true, gmax);
    else if (ppc) run_loop(pl, w, pg, ppc, false, 0);
    else run_loop(pl, w, pg, NULL, false, 0);
    memcpy(w->wlast, pg->wlast, (size_t)pv);
    w->tail_pg = pg, w->tail_shift = 0; /* the fast path adds its skipped periods */
}

/* The task's exposed TP / CP / EP communication (inside its time, the
 * chunk's exposure shared by its tasks as their durations), drawn on the
 * stream tracks at the task's end. */
static void comm_spans(const SimPipeline *pl, SimWork *w, bool *oom, int32_t s, int32_t c, int64_t mb, double d,
                       double en)
{
    const SimChunkCost *cc = &pl->chunk[s * pl->chunks + c];
    double busy = cc->fwd_s + cc->bwd_s, share = busy > 0 ? d / busy : 0, t1 = en;
    const struct { SimStream st; char k; double x; } X[3] = {{SIM_STREAM_EP, 'E', cc->ep_exposed_s},
                                                              {SIM_STREAM_CP, 'C', cc->cp_exposed_s},
                                                              {SIM_STREAM_TP, 'T', cc->tp_exposed_s}};
    for (int j = 0; j < 3; j++) {
        double x = X[j].x * share;
        if (!(x > 0)) continue;
        push_span(w, oom, s, X[j].st, c, mb, X[j].k, t1 - x, t1);
        t1 -= x;
    }
}

/* Spans of the timeline from the finish times of the last run_ops. */
static TsStatus record_spans(const SimPipeline *pl, SimWork *w, const SimProg *pg, TsError *err)
{
    const int32_t v = pl->chunks;
    const int64_t mc = chunk_mb(pl), nt = (int64_t)pl->stages * v * mc;
    const double *fin = w->fend, *dur = w->dur, *xf = w->xf;
    bool oom = false;
    for (int64_t k = 0; k < pg->n; k++) {
        const SimOp *op = &pg->ops[k];
        if (op->kind == OP_PAIR_OPEN || op->kind == OP_PAIR_CLOSE || op->kind == OP_X) continue;
        int64_t idx = op->self % nt;
        int32_t c = (int32_t)((idx / mc) % v), s = op->stage;
        int64_t mb = idx % mc;
        double en = fin[op->self], st = en - dur[op->di];
        if (op->kind == OP_W) {
            push_span(w, &oom, s, SIM_STREAM_COMPUTE, c, mb, 'W', st, en);
            continue;
        }
        if (op->kind == OP_PAIR) {
            /* the pair's time split pro rata between its forward and backward */
            int64_t fi = pg->ops[k - 1].self;
            int32_t cf = (int32_t)((fi / mc) % v);
            int64_t mf = fi % mc;
            const SimChunkCost *a = &pl->chunk[s * v + cf], *b = &pl->chunk[s * v + c];
            double tot = a->fwd_s + b->bwd_s, mid = tot > 0 ? st + (en - st) * a->fwd_s / tot : st;
            push_span(w, &oom, s, SIM_STREAM_COMPUTE, cf, mf, 'P', st, mid);
            push_span(w, &oom, s, SIM_STREAM_COMPUTE, c, mb, 'Q', mid, en);
            double xa = xf[2 * (s * v + cf)], xb = xf[2 * (s * v + c) + 1];
            if (xa > 0 && sends(pl, s, cf, false)) push_span(w, &oom, s, SIM_STREAM_PP, cf, mf, 'S', en, en + xa);
            double t0 = xa > 0 && sends(pl, s, cf, false) ? en + xa : en; /* after the forward's (pair_xfer) */
            if (xb > 0 && sends(pl, s, c, true)) push_span(w, &oom, s, SIM_STREAM_PP, c, mb, 'S', t0, t0 + xb);
            continue;
        }
        bool bw = op->kind != OP_F;
        push_span(w, &oom, s, SIM_STREAM_COMPUTE, c, mb, bw ? 'B' : 'F', st, en);
        comm_spans(pl, w, &oom, s, c, mb, dur[op->di], en);
        double x = xf[2 * (s * v + c) + bw];
        if (x > 0 && sends(pl, s, c, bw)) push_span(w, &oom, s, SIM_STREAM_PP, c, mb, 'S', en, en + x);
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
    if ((unsigned)pl->schedule >= PLAN_SCHED_COUNT) return ts_err(err, TS_ERR_PLAN, "unknown schedule");
    if (pl->ds_pipe && (pl->chunks != 1 || pl->schedule != PLAN_SCHED_1F1B))
        return ts_err(err, TS_ERR_PLAN, "DeepSpeed's pipeline engine runs 1f1b on one chunk per stage");
    if (sched_dual(pl) && pl->chunks != 2)
        return ts_err(err, TS_ERR_PLAN, "%s runs 2 model chunks per stage (got %d)", plan_sched_name(pl->schedule),
                      pl->chunks);
    if (pl->chunks > 1 && !interleaved(pl) && !sched_dual(pl))
        return ts_err(err, TS_ERR_PLAN, "%d model chunks per stage need the interleaved schedule", pl->chunks);
    if (pl->micro_batches >= (1 << 21))
        return ts_err(err, TS_ERR_PLAN, "too many micro-batches (%lld)", (long long)pl->micro_batches);
    if (pl->group < 0 || (pl->group > 0 && !interleaved(pl)))
        return ts_err(err, TS_ERR_PLAN, "a micro-batch group (%lld) is the interleaved schedule's",
                      (long long)pl->group);
    if (pl->schedule == PLAN_SCHED_DUALPIPE && (pl->stages % 2 || pl->micro_batches % 2))
        return ts_err(err, TS_ERR_PLAN, "dualpipe needs an even number of stages and of micro-batches (got %d, %lld)",
                      pl->stages, (long long)pl->micro_batches);
    if (sched_dual(pl) && pl->micro_batches < 2 * (int64_t)pl->stages)
        return ts_err(err, TS_ERR_PLAN, "%s needs at least 2*p = %d micro-batches (got %lld)",
                      plan_sched_name(pl->schedule), 2 * pl->stages, (long long)pl->micro_batches);
    if (sched_pairs(pl) && !(pl->pair_sm_share >= 0 && pl->pair_sm_share < 1))
        return ts_err(err, TS_ERR_PLAN, "the pairs' SM share must be in [0, 1) (got %g)", pl->pair_sm_share);
    /* finish slots (F, B, W of every task) are int32 */
    if (3.0 * (double)pl->stages * (double)pl->chunks * (double)chunk_mb(pl) >= 2147483647.0)
        return ts_err(err, TS_ERR_PLAN, "pipeline too large: %d stages x %d chunks x %lld micro-batches", pl->stages,
                      pl->chunks, (long long)pl->micro_batches);
    return TS_OK;
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

/* Compute seconds of an operation that ended at en inside [a, b), by its
 * compute share. */
static double op_within(const SimPipeline *pl, const SimWork *w, const SimOp *op, double en, double a, double b)
{
    double st = en - w->dur[op->di], lo = st > a ? st : a, hi = en < b ? en : b;
    return hi > lo ? (hi - lo) * op_share(pl, op) : 0;
}

/* Compute seconds of stage s's operations inside [a, b), each by its
 * compute share, from the last run's finish times (the pipeline's tail:
 * the scan stops at the first of the stage's operations ending by a). */
static double stage_tail_compute(const SimPipeline *pl, const SimWork *w, int32_t s, double a, double b)
{
    const SimProg *pg = w->tail_pg;
    double ov = 0;
    for (int64_t i = pg ? pg->stage_at[s + 1] - 1 : -1; pg && i >= pg->stage_at[s]; i--) {
        const SimOp *op = &pg->ops[pg->by_stage[i]];
        double en = w->fend[op->self] + w->tail_shift;
        if (en <= a) break;
        ov += op_within(pl, w, op, en, a, b);
    }
    return ov;
}

/* The overlap slow-down of stage s's chunks' own windows (TP / CP, ZeRO-3
 * gathers), every micro-batch. */
static double chunks_slowdown(const SimPipeline *pl, int32_t s)
{
    double slow = 0;
    for (int32_t c = 0; c < pl->chunks; c++) slow += pl->chunk[s * pl->chunks + c].slowdown_s;
    return slow * (double)chunk_mb(pl);
}

/* DP gradient reduction of stage s after (or under) its chunks' last
 * gradient work (a backward, or the W of an input-gradient backward); the
 * part that hides slows compute by overlap_slowdown times the compute
 * share. Chunks take the DP stream in the order their last gradient work
 * starts: v-1 .. 0 for the interleaved schedule, sorted for the others. */
static void stage_dp(const SimPipeline *pl, SimWork *w, int32_t s, SimStageResult *sr)
{
    const int32_t v = pl->chunks;
    double pipe_end = sr->pipe_end_s, total = 0, free_t = 0, share = 0, beside = 0, within = 0;
    double after = 0, after_s = 0; /* beyond the windows, before the pipeline's end: compute met, seconds */
    int32_t ord[2] = {1, 0};
    if (sched_dual(pl) && w->bst_last[s * v] < w->bst_last[s * v + 1]) ord[0] = 0, ord[1] = 1;
    for (int32_t j = 0; j < v; j++) {
        int32_t c = v == 2 ? ord[j] : v - 1 - j;
        const SimChunkCost *cc = &pl->chunk[s * v + c];
        double dp = cc->dp_grad_s;
        if (dp <= 0) continue;
        total += dp;
        share += dp * compute_share(cc->compute_bwd_s + cc->recompute_s - cc->recompute_comm_s, cc->bwd_s);
        if (!pl->dp_overlap) {
            free_t = (free_t > pipe_end ? free_t : pipe_end) + dp;
            continue;
        }
        /* the buckets become ready through the chunk's last gradient work,
         * after the LM head's own part (dp_end_s, dp_end_w_s count from
         * there); the stream may still be busy with another chunk's
         * buckets: then they follow those back to back (the end is max-plus
         * linear in the stream's start) */
        bool wl = w->wlast[s * v + c];
        double t0 = w->bst_last[s * v + c] + (wl ? cc->head_wgrad_s : cc->head_bwd_s), e = free_t + dp;
        double end = t0 + (wl ? cc->dp_end_w_s : cc->dp_end_s);
        /* the stream free when the window opens: its buckets as walked,
         * each slowing the compute it meets there (dp_beside_s) */
        if (free_t <= t0) {
            beside += wl ? cc->dp_beside_w_s : cc->dp_beside_s;
            within += wl ? cc->dp_within_w_s : cc->dp_within_s;
            /* its buckets still running after the window, back to back (all
             * ready by then), beside the tasks that follow on the stage */
            double we = t0 + (wl ? cc->wgrad_s - cc->head_wgrad_s : cc->bwd_s - cc->head_bwd_s);
            double hi = end < pipe_end ? end : pipe_end;
            if (hi > we && (cc->dp_within_s > 0 || cc->dp_within_w_s > 0)) {
                after += stage_tail_compute(pl, w, s, we, hi);
                after_s += hi - we;
            }
        }
        free_t = e > end ? e : end;
    }
    double exposed = free_t > pipe_end ? free_t - pipe_end : 0;
    double overlapped = total - exposed > 0 ? total - exposed : 0;
    /* the rest of what hides (behind another chunk's buckets) by the
     * compute share of the backward */
    double rest = overlapped - within - after_s > 0 ? overlapped - within - after_s : 0;
    sr->dp_exposed_s = exposed;
    sr->slowdown_s = total > 0 ? pl->overlap_slowdown * (beside + after + rest * share / total) : 0;
    sr->slowdown_s += chunks_slowdown(pl, s);
}

/* The DP stream of a stage under stage_dp_rs: free at D; the stage's
 * operations from k on (to b) may still meet a collective; oom: recording. */
typedef struct RsWalk {
    double D, beside;
    int64_t k, b;
    int32_t s;
    bool *oom;
} RsWalk;

/* One reduce-scatter of chunk c on the stage's DP stream: it starts when
 * ready and the stream is free; what it runs beside the stage's operations
 * (in time order) counts by their compute share. */
static void rs_issue(const SimPipeline *pl, SimWork *w, RsWalk *r, int32_t c, double ready, double dur)
{
    if (!(dur > 0)) return;
    const SimProg *pg = w->tail_pg;
    double x = r->D > ready ? r->D : ready, y = x + dur;
    r->D = y;
    if (r->oom) push_span(w, r->oom, r->s, SIM_STREAM_DP, c, -1, 'R', x, y);
    for (; r->k < r->b && w->fend[pg->ops[pg->by_stage[r->k]].self] <= x; r->k++) {}
    for (int64_t i = r->k; i < r->b; i++) {
        const SimOp *op = &pg->ops[pg->by_stage[i]];
        double en = w->fend[op->self];
        if (en - w->dur[op->di] >= y) break;
        r->beside += op_within(pl, w, op, en, x, y);
    }
}

/* ZeRO-2 under a pipeline (SimPipeline.dp_shared): every backward of stage
 * s reduce-scatters its chunk's gradients on the stage's one DP stream,
 * first come first served behind the step's overlapped parameter gathers
 * (the task graph's fsdp.rs after each unit's backward): the LM head's
 * when its backward ends, a layer's as the layers' share of the task ends,
 * the embedding's at the task's end. Walked on the full run's finish
 * times; what ends after the pipeline is exposed, what runs beside the
 * stage's operations slows them (overlap_slowdown times their compute
 * share, the replay's measure). oom: record the collectives (NULL: not). */
static void stage_dp_rs(const SimPipeline *pl, SimWork *w, int32_t s, SimStageResult *sr, bool *oom)
{
    const SimProg *pg = w->tail_pg;
    const int32_t v = pl->chunks;
    RsWalk r = {.D = pl->param_gather_overlap && pl->stage ? pl->stage[s].param_gather_s : 0,
                .k = pg->stage_at[s], .b = pg->stage_at[s + 1], .s = s, .oom = oom};
    for (int64_t i = r.k; i < r.b; i++) {
        const SimOp *op = &pg->ops[pg->by_stage[i]];
        if (op->kind != OP_B) continue;
        const SimChunkCost *cc = &pl->chunk[op->di / 4];
        int32_t c = op->di / 4 % v;
        double en = w->fend[op->self], st = en - w->dur[op->di], t = st + cc->head_bwd_s;
        rs_issue(pl, w, &r, c, t, cc->rs_head_s);
        for (int32_t l = 1; l <= cc->rs_layers; l++)
            rs_issue(pl, w, &r, c, t + (en - t) * l / cc->rs_layers, cc->rs_layer_s);
        rs_issue(pl, w, &r, c, en, cc->rs_emb_s);
    }
    double pipe_end = sr->pipe_end_s;
    sr->dp_exposed_s = r.D > pipe_end ? r.D - pipe_end : 0;
    sr->slowdown_s = pl->overlap_slowdown * r.beside + chunks_slowdown(pl, s);
}

double sim_gather_lag_uniform(double gather_s, int32_t layers, double fwd_s)
{
    double L = layers > 0 ? (double)layers : 1.0, a = gather_s / L, f = fwd_s / L;
    double last = L * a - (L - 1) * f;
    return last > a ? last : a;
}

/* Grow the work arrays for pipeline pl; ppc too when with_ppc. */
static TsStatus prepare(SimWork *w, const SimPipeline *pl, bool with_ppc, TsError *err)
{
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t m = pl->micro_batches, ncap = order_cap(pl);
    const size_t ns = nslots(pl), pv = (size_t)p * (size_t)v;
    bool ok = ts_grow((void **)&w->order, &w->order_cap, (size_t)ncap * (size_t)p, sizeof(int32_t)) &&
              ts_grow((void **)&w->fifo, &w->fifo_cap, (size_t)(2 * m + 1), sizeof(int32_t)) &&
              ts_grow((void **)&w->fend, &w->t_cap, ns, sizeof(double)) &&
              ts_grow((void **)&w->bst_last, &w->sc_cap, pv, sizeof(double)) &&
              ts_grow((void **)&w->wlast, &w->wl_cap, pv, 1) &&
              ts_grow((void **)&w->fst_first, &w->ff_cap, pv, sizeof(double)) &&
              (!with_ppc || ts_grow((void **)&w->ppc, &w->ppc_cap, ns, sizeof(double))) &&
              ts_grow((void **)&w->dur, &w->dur_cap, 4 * pv + pv * (size_t)v + 1 + DUR_DS * (size_t)p, sizeof(double)) &&
              ts_grow((void **)&w->xf, &w->xf_cap, 2 * pv + 1 + pv * (size_t)v, sizeof(double)) &&
              ts_grow((void **)&w->stages, &w->st_cap, (size_t)p, sizeof(SimStageResult)) &&
              ts_grow((void **)&w->pos, &w->pos_cap, (size_t)p, sizeof(int64_t)) &&
              ts_grow((void **)&w->olen, &w->olen_cap, (size_t)p, sizeof(int64_t)) &&
              ts_grow((void **)&w->tfree, &w->tf_cap, (size_t)p, sizeof(double)) &&
              ts_grow((void **)&w->ppwait, &w->ppw_cap, (size_t)p, sizeof(double)) &&
              ts_grow((void **)&w->agwait, &w->agw_cap, 3 * (size_t)p, sizeof(double));
    if (!ok) return ts_err(err, TS_ERR_INTERNAL, "out of memory for a %lld-task pipeline", (long long)(ncap * p));
    return TS_OK;
}

/* ---- the periodic fast path ---------------------------------------------------
 * After warm-up, every schedule repeats itself (ZB-H1 in its (F, I, W)
 * steps, DualPipe and DualPipeV in their main step of pairs): moving P
 * micro-batches (of each chunk) on (P a multiple of delta = 1, or p for
 * interleaved: one group) adds the same lambda to every task's finish time
 * (GPipe: lambda_F to forwards, lambda_B to backwards). P > delta happens: uniform stages
 * with transfers repeat every p rounds. The task graph is shift-invariant
 * between warm-up and cool-down, and max/+ commute with adding a constant,
 * so once a window of tasks repeats exactly, every later period does too,
 * and a run with m micro-batches equals a run with m_r = m - n*P whose
 * cool-down is shifted by n periods. So: run m_r micro-batches (a margin
 * for the warm-up, a few periods, a margin before the cool-down), find P
 * and a window where for EVERY (stage, chunk, F/B/W) task fin(mb + P) -
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
    const int64_t m = chunk_mb(q), nt = (int64_t)pv * m;
    const double *fin = w->fend, *ppc = w->ppc;
    const bool wt = q->schedule == PLAN_SCHED_ZBH1; /* W tasks too (DualPipe's run in warm-up and cool-down only) */
    const bool pr = sched_pairs(q);                 /* pairs: the forward's wait at the opening */
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
            if (ok && wt) ok = same(fin[b + nt + P] - fin[b + nt], lb, sc);
            if (ok && pr) ok = same(ppc[b + 2 * nt + P], ppc[b + 2 * nt], sc);
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

/* Run m_r micro-batches (of each chunk) with transfer waits recorded. */
static TsStatus run_reduced(const SimPipeline *pl, SimWork *w, int64_t mr, SimPipeline *q, TsError *err)
{
    *q = *pl;
    q->micro_batches = pl->schedule == PLAN_SCHED_DUALPIPE ? 2 * mr : mr;
    const SimProg *pg = NULL;
    TsStatus st = prepare(w, q, true, err);
    if (!st) st = compile(q, w, &pg, err);
    if (st) return st;
    run_ops(q, w, pg, w->ppc);
    return TS_OK;
}

/* The fast path's margins in micro-batches of each chunk (run_periodic):
 * reach, head, tail, and the expected period's k0 (in units of delta). */
typedef struct Margins {
    int64_t reach, head, tail, k0;
} Margins;

static Margins periodic_margins(const SimPipeline *pl, int64_t delta)
{
    const int32_t p = pl->stages, v = pl->chunks;
    /* Margins in micro-batches (of each chunk). reach: how far ahead a
     * task's inputs can be, through its stage's order: a 1F1B or ZB-H1
     * stage runs up to p-1 forwards ahead of its backward, an interleaved
     * one up to (p-1)*2 + (v-1)*p tasks ahead, under 2 groups of p, a
     * DualPipe(V) one up to 2(p-1) forwards of a chunk (step 1). The window
     * starts after the warm-up (head), covers a period plus the reach, and
     * it and what it depends on end before the cool-down (tail). */
    const int64_t reach = pl->schedule == PLAN_SCHED_INTERLEAVED || sched_pairs(pl) ? 2 * (int64_t)p + 2 : p;
    /* 1F1B: a stage's only look-ahead is through forwards (its backward
     * of micro-batch j follows its forward of j + p - 1 - s), and no
     * forward is part of the cool-down (the last p - 1 - s backwards of
     * stage s, which nothing before them waits for); so every task of a
     * micro-batch up to m - p times as in an endless run (stage s's first
     * task unlike the endless run's is its backward of m - p + s + 1), and
     * the window only has to end there: a tail of p. Its head is p too:
     * from micro-batch p on, stage 0's forwards follow backwards, as every
     * later stage's do from earlier on. DeepSpeed's blocking p2p (a sender
     * waits for its receiver) keeps the wider margins.
     * Interleaved (m a multiple of p): the cool-down is the last
     * W_s = 2(p - s - 1) + (v - 1)p backward units of stage s, so the
     * earliest task unlike the endless run's is stage 0's backward unit
     * mv - W_0, of micro-batch m - 2p + 2; a backward reaches the same
     * unit on the stage before (inside that stage's cool-down, which starts
     * 2 units earlier), the wrap from chunk c on stage 0 to chunk c - 1 on
     * stage p - 1 a later unit of the same micro-batch, and the tasks after
     * a backward in a stage's order are later units (its forwards, of the
     * last group of p micro-batches). So every task of a micro-batch below
     * m - 2p + 2 times as in an endless run: a tail of 2p. At the start,
     * stage s's first W_s forward units are its warm-up and the first
     * steady forward follows a warm-up one; every later task sits where
     * its counterpart P later does, which on stage 0 (the longest warm-up)
     * is every unit from micro-batch 2p - 1 on: a head of 2p. The pair
     * schedules keep the wider margins. */
    int64_t head = reach + delta, tail = 2 * reach + delta; /* the pair schedules, ZB-H1, GPipe */
    if (pl->schedule == PLAN_SCHED_1F1B && v == 1) head = tail = pl->ds_pipe ? reach + delta : p;
    if (pl->schedule == PLAN_SCHED_INTERLEAVED) head = tail = 2 * (int64_t)p;
    /* 1F1B with several stages tied at the largest cost (an uneven layer
     * split: every middle stage one layer heavier than the first and last)
     * repeats with a period of as many micro-batches as the tied stages
     * span (measured: 13 of 15 stages -> 13); one heaviest stage gives 1.
     * The first reduced run leaves room for that period. */
    int64_t k0 = 1;
    if (pl->schedule == PLAN_SCHED_1F1B || pl->schedule == PLAN_SCHED_ZBH1) {
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
    return (Margins){reach, head, tail, k0};
}

/* Extends a reduced run of mr micro-batches by whole periods of P (from
 * micro-batch a; lf, lb: a period's forward and backward advance) to m. */
static void periodic_extend(const SimPipeline *pl, SimWork *w, int64_t m, int64_t mr, int64_t a, int64_t P,
                            double lf, double lb)
{
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t n = (m - mr) / P, ntr = (int64_t)p * v * mr;
    const double dn = (double)n, shift = dn * lb + (pl->schedule == PLAN_SCHED_GPIPE ? dn * lf : 0);
    for (int32_t s = 0; s < p; s++) {
        double round = 0; /* transfer wait of one period on stage s */
        for (int32_t c = 0; c < v; c++)
            for (int64_t mb = a; mb < a + P; mb++) {
                int64_t f = ((int64_t)s * v + c) * mr + mb;
                round += w->ppc[f] + w->ppc[ntr + f] + (sched_pairs(pl) ? w->ppc[3 * ntr + f] : 0);
            }
        w->tfree[s] += shift;
        w->ppwait[s] += dn * round;
    }
    for (int32_t i = 0; i < p * v; i++) w->bst_last[i] += shift;
    w->tail_shift = shift;
}

/* Try the fast path; *done = false when it does not apply (then the caller
 * runs the full pass). Fills what run_ops fills, for m micro-batches. */
static TsStatus run_periodic(const SimPipeline *pl, SimWork *w, bool *done, TsError *err)
{
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t m = chunk_mb(pl), delta = pl->schedule == PLAN_SCHED_INTERLEAVED ? p : 1;
    *done = false;
    /* partial groups, or groups other than p: the full pass decides; and
     * the interleaved schedule's F&B pairs (no margins derived for them) */
    if (pl->schedule == PLAN_SCHED_INTERLEAVED && (m % p || group_of(pl) != p)) return TS_OK;
    if (pl->schedule == PLAN_SCHED_1F1B_A2A && v > 1) return TS_OK;
    if (pl->schedule == PLAN_SCHED_GPIPE) {
        /* GPipe has no back-pressure: stage s forwards at the pace of the
         * slowest stage up to s, and backwards of the slowest from s on. One
         * lambda for all (what the extrapolation needs) only when stage 0 has
         * the longest forward and stage p-1 the longest backward. */
        for (int32_t s = 1; s < p; s++)
            if (pl->chunk[s].fwd_s > pl->chunk[0].fwd_s || pl->chunk[s - 1].bwd_s > pl->chunk[p - 1].bwd_s)
                return TS_OK;
    }
    const Margins mg = periodic_margins(pl, delta);
    const int64_t reach = mg.reach, head = mg.head, tail = mg.tail, k0 = mg.k0;
    const int64_t P0 = k0 * delta; /* the expected period */
    int64_t mr = head + reach + 2 * P0 + tail; /* room for it */
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
        periodic_extend(pl, w, m, mr, a, P, lf, lb);
        *done = true;
        return TS_OK;
    }
}

/* Stage s's F&B pairs summed (plan_order_pairs' callback). */
typedef struct PairSum {
    const SimPipeline *pl;
    int32_t s;
    double dt, dep, slow;
} PairSum;

static void pair_add(void *ctx, int32_t cf, int32_t cb, int64_t count)
{
    PairSum *ps = ctx;
    const SimPipeline *pl = ps->pl;
    const int32_t v = pl->chunks;
    const SimChunkCost *f = &pl->chunk[ps->s * v + cf], *b = &pl->chunk[ps->s * v + cb];
    const double sh = pl->pair_sm_share, n = (double)count;
    double ep = f->ep_fwd_s + b->ep_bwd_s, comp = f->fwd_s + b->bwd_s - ep;
    double pair = sim_pair_s(f, b, sh), sl = ep > 0 ? comp * sh / (1 - sh) : 0;
    ps->dt += n * (pair - f->fwd_s - b->bwd_s);
    ps->slow += n * sl;
    ps->dep += n * (pair - comp - sl - ep);
}

/* What stage s's F&B pairs change against running their forward and
 * backward apart: *dt the time (sim_pair_s - fwd_s - bwd_s, summed), *dep
 * the exposed EP time (what the pair leaves exposed of the all-to-alls,
 * minus Fe + Be) and *slow the compute slow-down (the SMs held by the
 * communication: (Fc + Bc) share / (1 - share)); their sum is *dt. */
static void stage_pair_delta(const SimPipeline *pl, int32_t s, double *dt, double *dep, double *slow)
{
    *dt = *dep = *slow = 0;
    if (!sched_pairs(pl)) return;
    PairSum ps = {.pl = pl, .s = s};
    plan_order_pairs(pl->schedule, pl->stages, pl->chunks, pl->micro_batches, group_of(pl), s, pair_add, &ps);
    *dt = ps.dt, *dep = ps.dep, *slow = ps.slow;
}

/* Where stage s spends its time up to its end (end_s): its busy time split
 * by what the chunk costs say each micro-batch holds (an F&B pair's hidden
 * all-to-alls and its SMs' slow-down: stage_pair_delta), its idle time split
 * into waiting for a transfer in flight (pp) and bubble, then its DP
 * reduction and slow-down; `ag` (the step's exposed collectives and parameter
 * gather) is the iteration's, 0 for a stage on its own; the wait of its first
 * forwards for overlapped gathers is DP. */
static void stage_breakdown(const SimPipeline *pl, const SimWork *w, int32_t s, double ag, SimBreakdown *bd)
{
    const SimStageResult *sr = &w->stages[s];
    const int32_t v = pl->chunks;
    double rec = 0, tp = 0, cp = 0, ep = 0, fsdp = 0, ppb = 0;
    for (int32_t c = 0; c < v; c++) {
        const SimChunkCost *cc = &pl->chunk[s * v + c];
        ppb += cc->pp_blocked_s;
        rec += cc->recompute_s;
        tp += cc->tp_exposed_s;
        cp += cc->cp_exposed_s;
        ep += cc->ep_exposed_s;
        fsdp += cc->fsdp_exposed_s;
    }
    double md = (double)chunk_mb(pl), dt, dep, dslow;
    stage_pair_delta(pl, s, &dt, &dep, &dslow);
    memset(bd, 0, sizeof *bd);
    bd->recompute_s = rec * md;
    bd->tp_comm_exposed_s = tp * md;
    bd->cp_comm_exposed_s = cp * md;
    bd->ep_comm_exposed_s = ep * md + dep;
    bd->compute_s = sr->busy_s - (rec + tp + cp + ep + fsdp + ppb) * md - dep - dslow;
    double idle = sr->pipe_end_s - sr->busy_s;
    if (idle < 0) idle = 0;
    double agw = w->agwait[s] < idle ? w->agwait[s] : idle; /* its first forwards waiting for gathers */
    idle -= agw;
    double pp = w->ppwait[s];
    if (pp > idle) pp = idle;
    bd->pp_comm_exposed_s = pp + ppb * md;
    bd->bubble_s = idle - pp;
    bd->dp_comm_exposed_s = sr->dp_exposed_s + sr->embed_sync_s + ag + agw + fsdp * md;
    bd->overlap_slowdown_s = sr->slowdown_s + dslow;
}

/* Compute-stream time of stage s: its tasks run one after another; a pair
 * takes sim_pair_s for its forward and backward. */
static double stage_busy(const SimPipeline *pl, int32_t s)
{
    double busy = 0, dt, dep, dslow;
    for (int32_t c = 0; c < pl->chunks; c++) busy += pl->chunk[s * pl->chunks + c].fwd_s + pl->chunk[s * pl->chunks + c].bwd_s;
    busy *= (double)chunk_mb(pl);
    stage_pair_delta(pl, s, &dt, &dep, &dslow);
    return busy + dt;
}

double sim_pipeline_lower_bound(const SimPipeline *pl)
{
    double busy = 0, opt = 0;
    for (int32_t s = 0; s < pl->stages; s++) {
        /* and the chunks' slow-down, which ends the stage after its pipeline */
        double slow = 0;
        for (int32_t c = 0; c < pl->chunks; c++) slow += pl->chunk[s * pl->chunks + c].slowdown_s;
        busy = fmax(busy, stage_busy(pl, s) + slow * (double)chunk_mb(pl));
        opt = fmax(opt, pl->stage[s].optimizer_s);
    }
    return busy + opt;
}

/* The published bubble of the zero-bubble and DualPipe schedules on stage
 * s's per-micro-batch figures (the mean of its chunks), into out->sched_*:
 * ZB-H1 (p-1)(F+B-2W) (Qi et al. 2024 section 3.1, with B the whole
 * backward); DualPipe (p/2-1)(F&B+B-3W) and DualPipeV (p-1)(F&B+B-3W) on
 * p ranks (github deepseek-ai/DualPipe, README table, "PP" stages: DualPipeV
 * runs 2p). */
static void sched_figures(const SimPipeline *pl, int32_t s, SimResult *out)
{
    if (!sched_ordered(pl)) return;
    const int32_t v = pl->chunks;
    double f = 0, b = 0, wg = 0, pair = 0;
    for (int32_t c = 0; c < v; c++) {
        const SimChunkCost *cc = &pl->chunk[s * v + c];
        f += cc->fwd_s / v;
        b += cc->bwd_s / v;
        wg += cc->wgrad_s / v;
        /* a pair: DualPipe(V)'s two chunks' crossed; the EP overlap's a chunk's own (its chunks alike) */
        if (sched_dual(pl)) pair += sim_pair_s(cc, &pl->chunk[s * v + 1 - c], pl->pair_sm_share) / 2;
        else if (sched_pairs(pl)) pair += sim_pair_s(cc, cc, pl->pair_sm_share) / v;
    }
    out->sched_f_s = f;
    out->sched_b_s = b;
    out->sched_w_s = wg;
    out->sched_pair_s = pair;
    double p = (double)pl->stages;
    if (pl->schedule == PLAN_SCHED_ZBH1) out->sched_formula_bubble_s = (p - 1) * (f + b - 2 * wg);
    else if (pl->schedule == PLAN_SCHED_DUALPIPE) out->sched_formula_bubble_s = (p / 2 - 1) * (pair + b - 3 * wg);
    else if (pl->schedule == PLAN_SCHED_1F1B_A2A) out->sched_formula_bubble_s = (p - 1) * (f + b);
    else out->sched_formula_bubble_s = (p - 1) * (pair + b - 3 * wg);
}

/* The step's tail after the pipelines: the stage whose optimizer, step
 * collectives and unoverlapped parameter gather take longest. */
typedef struct StepTail {
    double opt, step_comm, ag;
} StepTail;

/* Stage s after its pipeline: its DP reduction, slow-down and end, its
 * share of the step's tail, and (record) its DP spans. */
static TsStatus finish_stage(const SimPipeline *pl, SimWork *w, int32_t s, StepTail *tail, TsError *err)
{
    const int32_t v = pl->chunks, p = pl->stages;
    SimStageResult *sr = &w->stages[s];
    memset(sr, 0, sizeof *sr);
    sr->busy_s = stage_busy(pl, s);
    sr->pipe_end_s = w->tfree[s];
    bool oom = false;
    if (pl->dp_shared) stage_dp_rs(pl, w, s, sr, pl->record ? &oom : NULL);
    else stage_dp(pl, w, s, sr);
    sr->slowdown_s += pl->overlap_slowdown * w->agwait[2 * p + s]; /* its hidden parameter gathers' */
    const SimStageCost *sc = pl->stage ? &pl->stage[s] : NULL;
    sr->embed_sync_s = sc ? sc->embed_sync_s : 0;
    sr->end_s = sr->pipe_end_s + sr->slowdown_s + sr->dp_exposed_s + sr->embed_sync_s;
    if (sc) {
        /* the step meets every stage (the grad-norm all-reduce), then each
         * runs its own tail one part after another: optimizer, the step's
         * collectives, the parameter gather when not overlapped */
        double ag = pl->param_gather_overlap ? 0 : sc->param_gather_s;
        if (sc->optimizer_s + sc->step_comm_s + ag > tail->opt + tail->step_comm + tail->ag)
            *tail = (StepTail){sc->optimizer_s, sc->step_comm_s, ag};
    }
    if (pl->record && !oom) {
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
    }
    return oom ? ts_err(err, TS_ERR_INTERNAL, "out of memory recording the timeline") : TS_OK;
}

/* The step's tail on the timeline from t: each stage's optimizer, and its
 * parameter gather when not overlapped. */
static TsStatus record_tail(const SimPipeline *pl, SimWork *w, double t, TsError *err)
{
    bool oom = false;
    for (int32_t s = 0; s < pl->stages; s++) {
        const SimStageCost *sc = pl->stage ? &pl->stage[s] : NULL;
        if (!sc) break;
        if (sc->optimizer_s > 0) push_span(w, &oom, s, SIM_STREAM_COMPUTE, 0, -1, 'O', t, t + sc->optimizer_s);
        if (sc->param_gather_s > 0 && !pl->param_gather_overlap)
            push_span(w, &oom, s, SIM_STREAM_DP, 0, -1, 'G', t + sc->optimizer_s + sc->step_comm_s,
                      t + sc->optimizer_s + sc->step_comm_s + sc->param_gather_s);
    }
    return oom ? ts_err(err, TS_ERR_INTERNAL, "out of memory recording the timeline") : TS_OK;
}

/* A run on a temporary work space: copy what the caller keeps out of it
 * and free it. */
static TsStatus keep_results(const SimPipeline *pl, SimWork *w, SimResult *out, TsError *err)
{
    const int32_t p = pl->stages;
    SimStageResult *stages = malloc((size_t)p * sizeof *stages);
    SimSpan *spans = w->span_n ? malloc(w->span_n * sizeof *spans) : NULL;
    if (!stages || (w->span_n && !spans)) {
        free(stages);
        free(spans);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    }
    memcpy(stages, w->stages, (size_t)p * sizeof *stages);
    if (spans) memcpy(spans, w->spans, w->span_n * sizeof *spans);
    out->stages = stages;
    out->spans = spans; /* spans are pushed only when recording */
    sim_work_destroy(w);
    out->owned = true;
    return TS_OK;
}

TsStatus sim_pipeline_run(const SimPipeline *pl, SimWork *wk, SimResult *out, TsError *err)
{
    sim_result_clear(out);
    TsStatus st = check(pl, err);
    if (st) return st;
    SimWork *w = wk ? wk : sim_work_create();
    if (!w) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    const int32_t p = pl->stages;
    w->span_n = 0;
    bool done = false;
    if (!pl->record && !pl->full_pass && !pl->ds_pipe && !pl->dp_shared) {
        st = run_periodic(pl, w, &done, err);
        if (st) goto fail;
    }
    if (!done) {
        const SimProg *pg = NULL;
        st = prepare(w, pl, false, err);
        if (!st) st = compile(pl, w, &pg, err);
        if (st) goto fail;
        run_ops(pl, w, pg, NULL);
        if (pl->record && (st = record_spans(pl, w, pg, err)) != TS_OK) goto fail;
    }

    double pipe_max = 0;
    StepTail tail = {0};
    int32_t crit = 0, slowest = 0;
    for (int32_t s = 0; s < p; s++) {
        if ((st = finish_stage(pl, w, s, &tail, err)) != TS_OK) goto fail;
        const SimStageResult *sr = &w->stages[s];
        if (sr->busy_s > w->stages[slowest].busy_s) slowest = s;
        if (sr->pipe_end_s > pipe_max) pipe_max = sr->pipe_end_s;
        if (sr->end_s > w->stages[crit].end_s) crit = s;
    }
    double opt = tail.opt, ag_exposed = tail.ag, step_comm = tail.step_comm;
    const SimStageResult *cs = &w->stages[crit];
    ag_exposed += step_comm; /* the step's own collectives are exposed too */
    out->iteration_time_s = cs->end_s + opt + ag_exposed;
    out->pipeline_time_s = pipe_max;
    out->critical_stage = crit;
    out->periodic = done;
    out->n_stages = p;
    out->stages = w->stages;

    for (int32_t s = 0; s < p; s++) stage_breakdown(pl, w, s, 0, &w->stages[s].breakdown);
    SimBreakdown *bd = &out->breakdown;
    stage_breakdown(pl, w, crit, ag_exposed, bd);
    bd->optimizer_s = opt;
    out->slowest_stage = slowest;
    out->bubble_fraction = cs->pipe_end_s > 0 ? bd->bubble_s / cs->pipe_end_s : 0;
    sched_figures(pl, crit, out);

    if (pl->record) {
        if ((st = record_tail(pl, w, cs->end_s, err)) != TS_OK) goto fail;
        out->spans = w->spans;
        out->n_spans = (int64_t)w->span_n;
    }
    if (!wk && (st = keep_results(pl, w, out, err)) != TS_OK) goto fail;
    return TS_OK;
fail:
    if (!wk) sim_work_destroy(w);
    memset(out, 0, sizeof *out);
    return st;
}
