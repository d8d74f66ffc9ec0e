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
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

struct SimWork {
    int32_t *order;      /* [p][n_tasks] */
    size_t order_cap;
    double *fend, *bend; /* [p*v*m] */
    size_t t_cap;
    int32_t *vmb;        /* interleaved forward mapping: [m*v] packed (mb<<8|c<<1) */
    size_t vmb_cap;
    double *bst_last;    /* start of B(s, m-1, c): [p*v] */
    size_t sc_cap;
    SimStageResult *stages;
    int64_t *pos;
    double *tfree;
    size_t st_cap;
    SimSpan *spans;
    size_t span_n, span_cap;
    SimChunkCost *costs;   /* for sim_simulate */
    size_t costs_cap;
    SimStageCost *scosts;
    size_t scosts_cap;
};

static const char *const SCHED_NAMES[] = {
#define X(e, n) n,
    SIM_SCHED_LIST(X)
#undef X
};
_Static_assert(sizeof SCHED_NAMES / sizeof SCHED_NAMES[0] == SIM_SCHED_COUNT, "schedule names");
static const char *const STREAM_NAMES[] = {
#define X(e, n) n,
    SIM_STREAM_LIST(X)
#undef X
};
_Static_assert(sizeof STREAM_NAMES / sizeof STREAM_NAMES[0] == SIM_STREAM_COUNT, "stream names");
static const char *const BD_KEYS[] = {
#define X(f, k) k,
    SIM_BREAKDOWN_LIST(X)
#undef X
};
_Static_assert(sizeof BD_KEYS / sizeof BD_KEYS[0] == SIM_BD_COUNT, "breakdown keys");

const char *sim_schedule_name(SimSchedule s)
{
    return (unsigned)s < SIM_SCHED_COUNT ? SCHED_NAMES[s] : "?";
}

bool sim_schedule_parse(const char *s, SimSchedule *out)
{
    for (int i = 0; i < SIM_SCHED_COUNT; i++)
        if (strcmp(s, SCHED_NAMES[i]) == 0) {
            *out = (SimSchedule)i;
            return true;
        }
    if (strcmp(s, "vpp") == 0 || strcmp(s, "interleaved-1f1b") == 0) {
        *out = SIM_SCHED_INTERLEAVED;
        return true;
    }
    return false;
}

const char *sim_stream_name(SimStream s)
{
    return (unsigned)s < SIM_STREAM_COUNT ? STREAM_NAMES[s] : "?";
}

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
    free(w->fend);
    free(w->bend);
    free(w->vmb);
    free(w->bst_last);
    free(w->stages);
    free(w->pos);
    free(w->tfree);
    free(w->spans);
    free(w->costs);
    free(w->scosts);
    free(w);
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

static bool grow(void **p, size_t *cap, size_t n, size_t elem);

SimChunkCost *sim_work_costs(SimWork *w, int32_t n_chunks, int32_t n_stages, SimStageCost **stages)
{
    if (!grow((void **)&w->costs, &w->costs_cap, (size_t)n_chunks, sizeof(SimChunkCost)) ||
        !grow((void **)&w->scosts, &w->scosts_cap, (size_t)n_stages, sizeof(SimStageCost)))
        return NULL;
    memset(w->costs, 0, (size_t)n_chunks * sizeof(SimChunkCost));
    memset(w->scosts, 0, (size_t)n_stages * sizeof(SimStageCost));
    *stages = w->scosts;
    return w->costs;
}

/* Grow *p to hold n elements of size elem; false on allocation failure. */
static bool grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < n) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

#define PACK(mb, c, b) ((int32_t)(((mb) << 8) | ((c) << 1) | (b)))

/* Fill order[0..2*m*v) for stage s; returns the count. */
static int64_t make_order(const SimPipeline *pl, const int32_t *vmb, int32_t s, int32_t *o)
{
    int64_t m = pl->micro_batches, p = pl->stages, v = pl->chunks, n = 0;
    if (pl->schedule == SIM_SCHED_GPIPE) {
        for (int64_t i = 0; i < m; i++) o[n++] = PACK(i, 0, 0);
        for (int64_t i = 0; i < m; i++) o[n++] = PACK(i, 0, 1);
        return n;
    }
    if (pl->schedule == SIM_SCHED_1F1B) {
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
    if (!grow((void **)&w->spans, &w->span_cap, w->span_n + 1, sizeof(SimSpan))) {
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
}

/* One pass of the schedule. With no_p2p, transfers cost nothing (used to
 * measure how much of the idle time pipeline transfers cause). */
static TsStatus run_pass(const SimPipeline *pl, SimWork *w, bool no_p2p, bool record, TsError *err)
{
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t m = pl->micro_batches, ntask = 2 * m * v, nt = (int64_t)p * v * m;
    const SimChunkCost *cc = pl->chunk;
    for (int64_t i = 0; i < nt; i++) w->fend[i] = w->bend[i] = -1.0;
    for (int32_t s = 0; s < p; s++) {
        w->pos[s] = 0;
        w->tfree[s] = 0;
    }
    int64_t remaining = ntask * p;
    bool oom = false;
    for (int64_t sweep = 0; remaining > 0; sweep++) {
        int64_t before = remaining;
        for (int32_t i = 0; i < p; i++) {
            int32_t s = (sweep & 1) ? p - 1 - i : i;
            const int32_t *o = w->order + (int64_t)s * ntask;
            int64_t k = w->pos[s];
            double tf = w->tfree[s];
            while (k < ntask) {
                int32_t t = o[k];
                int64_t mb = t >> 8;
                int32_t c = (t >> 1) & 127;
                double dep, dur;
                int64_t idx = ((int64_t)s * v + c) * m + mb;
                const SimChunkCost *me = &cc[s * v + c];
                if (!(t & 1)) {
                    if (s > 0) {
                        double e = w->fend[idx - (int64_t)v * m];
                        if (e < 0) break;
                        dep = e + (no_p2p ? 0 : cc[(s - 1) * v + c].p2p_fwd_s);
                    } else if (c > 0) {
                        double e = w->fend[((int64_t)(p - 1) * v + c - 1) * m + mb];
                        if (e < 0) break;
                        dep = e + (no_p2p ? 0 : cc[(p - 1) * v + c - 1].p2p_fwd_s);
                    } else {
                        dep = 0;
                    }
                    dur = me->fwd_s;
                    double st = tf > dep ? tf : dep;
                    tf = st + dur;
                    w->fend[idx] = tf;
                    if (record) {
                        push_span(w, &oom, s, SIM_STREAM_COMPUTE, c, mb, 'F', st, tf);
                        if (me->p2p_fwd_s > 0 && !(s == p - 1 && c == v - 1))
                            push_span(w, &oom, s, SIM_STREAM_PP, c, mb, 'S', tf, tf + me->p2p_fwd_s);
                    }
                } else {
                    if (s < p - 1) {
                        double e = w->bend[idx + (int64_t)v * m];
                        if (e < 0) break;
                        dep = e + (no_p2p ? 0 : cc[(s + 1) * v + c].p2p_bwd_s);
                    } else if (c < v - 1) {
                        double e = w->bend[(int64_t)(c + 1) * m + mb];
                        if (e < 0) break;
                        dep = e + (no_p2p ? 0 : cc[c + 1].p2p_bwd_s);
                    } else {
                        dep = w->fend[idx];
                        if (dep < 0) break;
                    }
                    dur = me->bwd_s;
                    double st = tf > dep ? tf : dep;
                    tf = st + dur;
                    w->bend[idx] = tf;
                    if (mb == m - 1) w->bst_last[s * v + c] = st;
                    if (record) {
                        push_span(w, &oom, s, SIM_STREAM_COMPUTE, c, mb, 'B', st, tf);
                        if (me->p2p_bwd_s > 0 && !(s == 0 && c == 0))
                            push_span(w, &oom, s, SIM_STREAM_PP, c, mb, 'S', tf, tf + me->p2p_bwd_s);
                    }
                }
                k++;
            }
            remaining -= k - w->pos[s];
            w->pos[s] = k;
            w->tfree[s] = tf;
        }
        if (remaining == before)
            return ts_err(err, TS_ERR_INTERNAL, "pipeline schedule deadlocked (schedule %s, p=%d, v=%d, m=%lld)",
                          sim_schedule_name(pl->schedule), p, v, (long long)m);
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
    if (pl->chunks > 1 && pl->schedule != SIM_SCHED_INTERLEAVED)
        return ts_err(err, TS_ERR_PLAN, "%d model chunks per stage need the interleaved schedule", pl->chunks);
    if (pl->micro_batches >= (1 << 23))
        return ts_err(err, TS_ERR_PLAN, "too many micro-batches (%lld)", (long long)pl->micro_batches);
    if ((unsigned)pl->schedule >= SIM_SCHED_COUNT) return ts_err(err, TS_ERR_PLAN, "unknown schedule");
    return TS_OK;
}

/* DP gradient reduction of stage s after (or under) its last backward. */
static void stage_dp(const SimPipeline *pl, SimWork *w, int32_t s, SimStageResult *sr)
{
    const int32_t v = pl->chunks;
    double pipe_end = sr->pipe_end_s, total = 0, free_t = 0;
    for (int32_t c = v - 1; c >= 0; c--) {
        const SimChunkCost *cc = &pl->chunk[s * v + c];
        double dp = cc->dp_grad_s;
        if (dp <= 0) continue;
        total += dp;
        if (!pl->dp_overlap) {
            free_t = (free_t > pipe_end ? free_t : pipe_end) + dp;
            continue;
        }
        double n = cc->dp_buckets > 0 ? (double)cc->dp_buckets : 1.0;
        double t0 = w->bst_last[s * v + c], t1 = w->bend[((int64_t)s * v + c) * pl->micro_batches +
                                                          pl->micro_batches - 1];
        double r = (t1 - t0) / n, d = dp / n;
        double e1 = free_t + n * d, e2 = t0 + r + n * d, e3 = t0 + n * r + d;
        double e = e1 > e2 ? e1 : e2;
        free_t = e > e3 ? e : e3;
    }
    double exposed = free_t > pipe_end ? free_t - pipe_end : 0;
    double overlapped = total - exposed > 0 ? total - exposed : 0;
    sr->dp_exposed_s = exposed;
    sr->slowdown_s = pl->overlap_slowdown * overlapped;
}

TsStatus sim_pipeline_run(const SimPipeline *pl, SimWork *wk, SimResult *out, TsError *err)
{
    memset(out, 0, sizeof *out);
    TsStatus st = check(pl, err);
    if (st) return st;
    SimWork *w = wk ? wk : sim_work_create();
    if (!w) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    const int32_t p = pl->stages, v = pl->chunks;
    const int64_t m = pl->micro_batches, ntask = 2 * m * v;
    size_t nt = (size_t)p * (size_t)v * (size_t)m;
    size_t fcap = w->t_cap, bcap = w->t_cap;
    bool ok = grow((void **)&w->order, &w->order_cap, (size_t)ntask * (size_t)p, sizeof(int32_t)) &&
              grow((void **)&w->fend, &fcap, nt, sizeof(double)) &&
              grow((void **)&w->bend, &bcap, nt, sizeof(double)) &&
              grow((void **)&w->vmb, &w->vmb_cap, (size_t)(m * v), sizeof(int32_t)) &&
              grow((void **)&w->bst_last, &w->sc_cap, (size_t)p * (size_t)v, sizeof(double));
    if (ok) w->t_cap = fcap < bcap ? fcap : bcap;
    size_t stc = w->st_cap, stc2 = w->st_cap, stc3 = w->st_cap;
    ok = ok && grow((void **)&w->stages, &stc, (size_t)p, sizeof(SimStageResult)) &&
         grow((void **)&w->pos, &stc2, (size_t)p, sizeof(int64_t)) &&
         grow((void **)&w->tfree, &stc3, (size_t)p, sizeof(double));
    if (ok) w->st_cap = stc < stc2 ? (stc < stc3 ? stc : stc3) : (stc2 < stc3 ? stc2 : stc3);
    if (!ok) {
        if (!wk) sim_work_destroy(w);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory for a %lld-task pipeline", (long long)(ntask * p));
    }
    if (pl->schedule == SIM_SCHED_INTERLEAVED) {
        int64_t n = 0;
        for (int64_t start = 0; start < m; start += p) {
            int64_t g = m - start < p ? m - start : p;
            for (int32_t c = 0; c < v; c++)
                for (int64_t j = 0; j < g; j++) w->vmb[n++] = PACK(start + j, c, 0);
        }
    }
    for (int32_t s = 0; s < p; s++) make_order(pl, w->vmb, s, w->order + (int64_t)s * ntask);

    /* Pass without transfers first (only needed to attribute idle time to
     * pipeline transfers), then the real pass. */
    bool any_p2p = false;
    for (int32_t i = 0; i < p * v && p > 1; i++)
        if (pl->chunk[i].p2p_fwd_s > 0 || pl->chunk[i].p2p_bwd_s > 0) any_p2p = true;
    double pipe_nop2p = 0;
    w->span_n = 0;
    if (any_p2p) {
        st = run_pass(pl, w, true, false, err);
        if (st) goto fail;
        for (int32_t s = 0; s < p; s++)
            if (w->tfree[s] > pipe_nop2p) pipe_nop2p = w->tfree[s];
    }
    st = run_pass(pl, w, false, pl->record, err);
    if (st) goto fail;

    double pipe_max = 0, opt = 0, ag_exposed = 0, ag_hidden = 0;
    int32_t crit = 0;
    for (int32_t s = 0; s < p; s++) {
        SimStageResult *sr = &w->stages[s];
        memset(sr, 0, sizeof *sr);
        double busy = 0;
        for (int32_t c = 0; c < v; c++) busy += pl->chunk[s * v + c].fwd_s + pl->chunk[s * v + c].bwd_s;
        sr->busy_s = busy * (double)m;
        sr->pipe_end_s = w->tfree[s];
        if (sr->pipe_end_s > pipe_max) pipe_max = sr->pipe_end_s;
        stage_dp(pl, w, s, sr);
        sr->end_s = sr->pipe_end_s + sr->slowdown_s + sr->dp_exposed_s;
        if (sr->end_s > w->stages[crit].end_s) crit = s;
        const SimStageCost *sc = pl->stage ? &pl->stage[s] : NULL;
        if (sc) {
            if (sc->optimizer_s > opt) opt = sc->optimizer_s;
            if (pl->param_gather_overlap) {
                if (sc->param_gather_s > ag_hidden) ag_hidden = sc->param_gather_s;
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
            if (oom) {
                st = ts_err(err, TS_ERR_INTERNAL, "out of memory recording the timeline");
                goto fail;
            }
        }
    }
    const SimStageResult *cs = &w->stages[crit];
    double slow_ag = pl->overlap_slowdown * ag_hidden; /* the hidden gather slows the next forward */
    out->iteration_time_s = cs->end_s + opt + ag_exposed + slow_ag;
    out->pipeline_time_s = pipe_max;
    out->critical_stage = crit;
    out->n_stages = p;
    out->stages = w->stages;

    SimBreakdown *bd = &out->breakdown;
    double rec = 0, tp = 0, cp = 0, ep = 0, fsdp = 0, slow = 0;
    for (int32_t c = 0; c < v; c++) {
        const SimChunkCost *cc = &pl->chunk[crit * v + c];
        rec += cc->recompute_s;
        tp += cc->tp_exposed_s;
        cp += cc->cp_exposed_s;
        ep += cc->ep_exposed_s;
        fsdp += cc->fsdp_exposed_s;
        slow += cc->slowdown_s;
    }
    double md = (double)m;
    bd->recompute_s = rec * md;
    bd->tp_comm_exposed_s = tp * md;
    bd->cp_comm_exposed_s = cp * md;
    bd->ep_comm_exposed_s = ep * md;
    bd->compute_s = cs->busy_s - (rec + tp + cp + ep + fsdp + slow) * md;
    double idle = cs->pipe_end_s - cs->busy_s;
    if (idle < 0) idle = 0;
    double pp = any_p2p ? cs->pipe_end_s - pipe_nop2p : 0;
    if (pp < 0) pp = 0;
    if (pp > idle) pp = idle;
    bd->pp_comm_exposed_s = pp;
    bd->bubble_s = idle - pp;
    bd->dp_comm_exposed_s = cs->dp_exposed_s + ag_exposed + fsdp * md;
    bd->optimizer_s = opt;
    bd->overlap_slowdown_s = cs->slowdown_s + slow_ag + slow * md;
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
