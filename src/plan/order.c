/* order.c — which model chunks a pipeline rank holds, and the per-rank task
 * order of the zero-bubble, DualPipe and EP-overlap schedules and of
 * Megatron's own (plan.h). The schedule
 * engine (src/sim/schedule.c) and the task-graph builder
 * (src/workload/builder.c) both run these orders, so the two agree by
 * construction. Sources: Qi et al. 2024, "Zero Bubble Pipeline
 * Parallelism" (arXiv 2401.10241) section 3.1 and its authors' DeepSpeed
 * port (ZeroBubbleH1Pipeline); DeepSeek-V3 technical report section 3.2.1
 * (arXiv 2412.19437) and github deepseek-ai/DualPipe (dualpipe/dualpipe.py,
 * dualpipe/dualpipev.py, the eight steps of step()); Megatron-Core's
 * pipeline_parallel/schedules.py (get_pp_rank_microbatches,
 * get_schedule_table, the combined 1F1B of --overlap-moe-expert-parallel-
 * comm). */
#include "trainsim/plan.h"

int64_t plan_rank_chunks(const ParallelPlan *p)
{
    if (p->schedule == PLAN_SCHED_DUALPIPE) return 2;
    return p->vpp > 1 ? p->vpp : 1;
}

int64_t plan_rank_chunk(const ParallelPlan *p, int64_t s, int64_t k)
{
    if (p->schedule == PLAN_SCHED_DUALPIPE) return k == 0 ? s : p->pp - 1 - s;
    if (p->schedule == PLAN_SCHED_DUALPIPEV) return k == 0 ? s : 2 * p->pp - 1 - s;
    return k * p->pp + s;
}

int64_t plan_chunk_micro_batches(const ParallelPlan *p)
{
    return p->schedule == PLAN_SCHED_DUALPIPE ? p->grad_accum / 2 : p->grad_accum;
}

void plan_ds_step(int64_t k, int64_t s, int64_t pp, bool *fwd, int64_t *mb)
{
    bool ek = k % 2 == 0, es = s % 2 == 0;
    *fwd = ek == es;
    if (*fwd) *mb = (ek ? k / 2 : (k - 1) / 2) - s / 2;
    else if (ek) *mb = k / 2 - pp + (s + 1) / 2;
    else *mb = (k - 1) / 2 - pp + 1 + s / 2;
}

int64_t plan_order_cap(PlanSchedule sched, int64_t micro_batches, int64_t v)
{
    /* every (micro-batch, chunk) has an F, a B or I, at most one W */
    if (sched == PLAN_SCHED_DUALPIPEV) return 6 * micro_batches;
    if (sched == PLAN_SCHED_1F1B_A2A) return 2 * micro_batches * (v > 1 ? v : 1);
    return 3 * micro_batches;
}

/* ZB-H1 on stage s of p (ZeroBubbleH1Pipeline.steps with
 * enable_zbh1_exact_semantics: a W pass runs the oldest waiting W). */
static int64_t zb_h1(int64_t p, int64_t m, int64_t s, int32_t *o)
{
    int64_t n = 0, f = 0, b = 0, w = 0, warm = p - s - 1 < m ? p - s - 1 : m;
    for (; f < warm; f++) o[n++] = PLAN_TASK(f, 0, PLAN_TASK_F);
    for (int64_t k = 0; k < s && f < m; k++) { /* the W of these wait */
        o[n++] = PLAN_TASK(f++, 0, PLAN_TASK_F);
        o[n++] = PLAN_TASK(b++, 0, PLAN_TASK_I);
    }
    while (f < m) {
        o[n++] = PLAN_TASK(f++, 0, PLAN_TASK_F);
        o[n++] = PLAN_TASK(b++, 0, PLAN_TASK_I);
        o[n++] = PLAN_TASK(w++, 0, PLAN_TASK_W);
    }
    while (b < m) {
        o[n++] = PLAN_TASK(b++, 0, PLAN_TASK_I);
        o[n++] = PLAN_TASK(w++, 0, PLAN_TASK_W);
    }
    while (w < m) o[n++] = PLAN_TASK(w++, 0, PLAN_TASK_W);
    return n;
}

/* One rank's DualPipe / DualPipeV emission: phases 0 and 1 map to the rank's
 * chunks k[0], k[1]; next forward / backward micro-batch per phase; the W
 * queue (first in, first out: WeightGradStore). */
typedef struct Dual {
    int32_t *o, *fifo;
    int64_t n, head, tail;
    int64_t f[2], b[2];
    int32_t k[2];
} Dual;

static void d_fwd(Dual *d, int ph) { d->o[d->n++] = PLAN_TASK(d->f[ph]++, d->k[ph], PLAN_TASK_F); }

/* A backward of phase ph: whole, or (zb) its input-gradient part with its W queued. */
static void d_bwd(Dual *d, int ph, bool zb)
{
    int32_t t = PLAN_TASK(d->b[ph]++, d->k[ph], zb ? PLAN_TASK_I : PLAN_TASK_B);
    d->o[d->n++] = t;
    if (zb) d->fifo[d->tail++] = (t & ~7) | PLAN_TASK_W;
}

static void d_w(Dual *d)
{
    if (d->head < d->tail) d->o[d->n++] = d->fifo[d->head++];
}

/* The forward of phase f overlapped with the (whole) backward of phase b. */
static void d_pair(Dual *d, int f, int b)
{
    d->o[d->n++] = PLAN_TASK(d->f[f]++, d->k[f], PLAN_TASK_PF);
    d->o[d->n++] = PLAN_TASK(d->b[b]++, d->k[b], PLAN_TASK_B);
}

/* DualPipe.step / DualPipeV.step for rank r of R ranks (DualPipe: the half
 * rank min(s, pp-1-s) of pp/2) and C micro-batches per phase; `middle`: the
 * rank whose first main-step pair runs apart (DualPipe's two middle ranks,
 * DualPipeV's last rank). */
static int64_t dual(Dual *d, int64_t R, int64_t r, int64_t C, bool middle)
{
    for (int64_t i = 0; i < 2 * (R - r - 1); i++) d_fwd(d, 0); /* step 1: nF0 */
    for (int64_t i = 0; i < r + 1; i++) {                       /* step 2: nF0F1 */
        d_fwd(d, 0);
        d_fwd(d, 1);
    }
    for (int64_t i = 0; i < R - r - 1; i++) { /* step 3: nB1W1F1, zero bubble */
        d_bwd(d, 1, true);
        d_w(d);
        d_fwd(d, 1);
    }
    for (int64_t i = 0; i < C - 2 * R + r + 1; i++) { /* step 4, the main step: nF0B1F1B0 */
        if (i == 0 && middle) {                        /* not overlapped: a smaller bubble */
            d_fwd(d, 0);
            d_bwd(d, 1, false);
        } else {
            d_pair(d, 0, 1);
        }
        d_pair(d, 1, 0);
    }
    for (int64_t i = 0; i < R - r - 1; i++) { /* step 5: nB1F1B0 */
        d_bwd(d, 1, false);
        d_pair(d, 1, 0);
    }
    bool zb = false; /* step 6: nB1B0, the second half input-gradient only */
    for (int64_t i = 0; i < r + 1; i++) {
        if (i == (r + 1) / 2 && r % 2 == 1) zb = true;
        d_bwd(d, 1, zb);
        if (i == (r + 1) / 2 && r % 2 == 0) zb = true;
        d_bwd(d, 0, zb);
    }
    for (int64_t i = 0; i < R - r - 1; i++) { /* step 7: nWB0, zero bubble */
        d_w(d);
        d_bwd(d, 0, true);
    }
    while (d->head < d->tail) d_w(d); /* step 8: nW */
    return d->n;
}

/* Rank s's parameters of dual(): ranks R, rank r, micro-batches C per phase,
 * the middle flag and the chunk of each phase; false for other schedules. */
static bool dual_shape(PlanSchedule sched, int64_t pp, int64_t m, int64_t s, int64_t *R, int64_t *r, int64_t *C,
                       bool *middle, int32_t k[2])
{
    if (sched == PLAN_SCHED_DUALPIPEV) {
        *R = pp, *r = s, *C = m, *middle = s == pp - 1;
        k[0] = 0, k[1] = 1;
        return true;
    }
    if (sched != PLAN_SCHED_DUALPIPE) return false;
    /* the second half of the ranks see the reverse copy's micro-batches first */
    int32_t second = s >= pp / 2;
    *R = pp / 2, *r = s < pp - 1 - s ? s : pp - 1 - s, *C = m / 2, *middle = *r == pp / 2 - 1;
    k[0] = second, k[1] = !second;
    return true;
}

static int32_t table_task(int64_t m, int64_t v, int64_t N, int64_t k, bool fwd);

void plan_order_pairs(PlanSchedule sched, int64_t pp, int64_t v, int64_t micro_batches, int64_t group, int64_t s,
                      PlanPairFn fn, void *ctx)
{
    int64_t R, r, C;
    bool middle;
    int32_t k[2];
    if (sched == PLAN_SCHED_1F1B_A2A) { /* the table's steady forwards, each with the backward after it */
        v = v > 1 ? v : 1;
        int64_t N = group > 0 ? group : pp, total = micro_batches * v;
        int64_t warm = plan_order_warmup(sched, pp, v, micro_batches, group, s);
        for (int64_t kf = warm; kf < total; kf++)
            fn(ctx, PLAN_TASK_CHUNK(table_task(micro_batches, v, N, kf, true)),
               PLAN_TASK_CHUNK(table_task(micro_batches, v, N, kf - warm, false)), 1);
        return;
    }
    if (!dual_shape(sched, pp, micro_batches, s, &R, &r, &C, &middle, k)) return;
    int64_t n4 = C - 2 * R + r + 1; /* step 4's iterations */
    if (n4 < 0) n4 = 0;
    if (n4 - (middle && n4 > 0) > 0) fn(ctx, k[0], k[1], n4 - (middle && n4 > 0)); /* step 4: F0&B1 */
    if (n4 + (R - r - 1) > 0) fn(ctx, k[1], k[0], n4 + (R - r - 1));                 /* steps 4 and 5: F1&B0 */
}

int64_t plan_order(PlanSchedule sched, int64_t pp, int64_t v, int64_t micro_batches, int64_t group, int64_t s,
                   int32_t *out, int32_t *fifo)
{
    if (sched == PLAN_SCHED_ZBH1) return zb_h1(pp, micro_batches, s, out);
    if (sched == PLAN_SCHED_1F1B_A2A) return plan_order_megatron(sched, pp, v, micro_batches, group, s, out);
    Dual d = {.o = out, .fifo = fifo};
    int64_t R, r, C;
    bool middle;
    if (dual_shape(sched, pp, micro_batches, s, &R, &r, &C, &middle, d.k)) return dual(&d, R, r, C, middle);
    return 0;
}

/* Virtual micro-batch k of Megatron's interleaved table (get_schedule_table):
 * groups of N micro-batches, each through the rank's chunks 0 .. v-1 in turn
 * (the backward's in reverse); the last group holds the remainder. */
static int32_t table_task(int64_t m, int64_t v, int64_t N, int64_t k, bool fwd)
{
    int64_t full = m / N, grp = k / (N * v), g = N, in = k % (N * v);
    if (grp >= full) {
        grp = full;
        g = m - full * N;
        in = k - full * N * v;
    }
    int64_t c = in / g;
    return PLAN_TASK(grp * N + in % g, fwd ? c : v - 1 - c, fwd ? PLAN_TASK_F : PLAN_TASK_B);
}

int64_t plan_megatron_warmup(int64_t pp, int64_t v, int64_t m, int64_t group, int64_t s)
{
    int64_t warm = v > 1 ? (pp - s - 1) * 2 + (v - 1) * (group > 0 ? group : pp) : pp - s - 1;
    return warm < m * v ? warm : m * v;
}

/* Megatron-Core's EP communication overlap (--overlap-moe-expert-parallel-
 * comm, its combined 1F1B; schedules.py get_pp_rank_microbatches) runs one
 * warm-up forward more than 1F1B or the interleaved schedule, "to ensure the
 * forward and backward computations are independent in all 1f1b steps": the
 * forward a pair on the next stage waits for never sits in this stage's own
 * pair, and the last stage's pairs never wait for their own forward. */
int64_t plan_order_warmup(PlanSchedule sched, int64_t pp, int64_t v, int64_t m, int64_t group, int64_t s)
{
    v = v > 1 ? v : 1;
    int64_t warm = plan_megatron_warmup(pp, v, m, group, s) + (sched == PLAN_SCHED_1F1B_A2A);
    return warm < m * v ? warm : m * v;
}

int64_t plan_order_megatron(PlanSchedule sched, int64_t pp, int64_t v, int64_t m, int64_t group, int64_t s,
                            int32_t *out)
{
    int64_t n = 0, total = m * v, N = group > 0 ? group : pp;
    if (sched == PLAN_SCHED_GPIPE) {
        for (int64_t mb = 0; mb < m; mb++)
            for (int64_t k = 0; k < v; k++) out[n++] = PLAN_TASK(mb, k, PLAN_TASK_F);
        for (int64_t mb = 0; mb < m; mb++)
            for (int64_t k = v - 1; k >= 0; k--) out[n++] = PLAN_TASK(mb, k, PLAN_TASK_B);
        return n;
    }
    int64_t warm = plan_order_warmup(sched, pp, v, m, N, s), kf = 0, kb = 0;
    const int32_t pair = sched == PLAN_SCHED_1F1B_A2A ? PLAN_TASK_PF : PLAN_TASK_F; /* F&B pairs: PF then B */
    for (; kf < warm; kf++) out[n++] = table_task(m, v, N, kf, true);
    for (; kf < total; kf++, kb++) {
        out[n++] = (table_task(m, v, N, kf, true) & ~7) | pair;
        out[n++] = table_task(m, v, N, kb, false);
    }
    for (; kb < total; kb++) out[n++] = table_task(m, v, N, kb, false);
    return n;
}
