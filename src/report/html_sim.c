/*
 * html_sim.c — SimResult -> RepPlanView (see report.h, HTML part): the only place
 * where the HTML report knows about the simulator's structures.
 */
#include <stdlib.h>
#include <string.h>

#include "trainsim/report.h"
#include "trainsim/report_html.h"
#include "trainsim/report_sim.h"

typedef struct Span2 {
    int32_t stage;
    double s, e;
} Span2;

static int cmp_span(const void *a, const void *b)
{
    const Span2 *x = a, *y = b;
    if (x->stage != y->stage) return x->stage < y->stage ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s ? 1 : 0;
}

static RepKind span_kind(const SimSpan *sp)
{
    if (sp->stream != SIM_STREAM_COMPUTE) return REP_COMM;
    switch (sp->kind) {
    case 'F':
    case 'P': return REP_FWD; /* an F&B pair's forward share */
    case 'B':
    case 'W':                 /* a split backward's weight-gradient pass */
    case 'Q': return REP_BWD; /* an F&B pair's backward share */
    case 'O': return REP_OPTIMIZER;
    default: return REP_COMM;
    }
}

/* Intervals from the spans, plus the idle gaps of each stage's compute
 * stream before its last backward (the pipeline bubble). */
static TsStatus timeline(const SimResult *r, TsArena *a, RepPlanView *v)
{
    int64_t n = r->n_spans;
    RepInterval *iv = ts_arena_alloc(a, (size_t)(2 * n + 1) * sizeof *iv);
    Span2 *cs = malloc((size_t)(n + 1) * sizeof *cs);
    if (!iv || !cs) {
        free(cs);
        return TS_ERR_INTERNAL;
    }
    int64_t k = 0, nc = 0;
    for (int64_t i = 0; i < n; i++) {
        const SimSpan *sp = &r->spans[i];
        RepKind kind = span_kind(sp);
        iv[k++] = (RepInterval){sp->stage, kind, sp->start_s, sp->end_s, sp->micro_batch};
        if (kind == REP_FWD || kind == REP_BWD) cs[nc++] = (Span2){sp->stage, sp->start_s, sp->end_s};
    }
    qsort(cs, (size_t)nc, sizeof *cs, cmp_span);
    for (int64_t i = 0; i < nc;) {
        int32_t st = cs[i].stage;
        double t = 0;
        for (; i < nc && cs[i].stage == st; i++) {
            if (cs[i].s > t + 1e-12) iv[k++] = (RepInterval){st, REP_BUBBLE, t, cs[i].s, -1};
            if (cs[i].e > t) t = cs[i].e;
        }
    }
    free(cs);
    v->timeline = iv;
    v->n_timeline = (int)k;
    return TS_OK;
}

/* The simulation's warnings, the text of simulate's "warning:" lines. */
static TsStatus warnings(const SimResult *r, TsArena *a, RepPlanView *v)
{
    if (r->n_warnings <= 0) return TS_OK;
    const char **w = ts_arena_alloc(a, (size_t)r->n_warnings * sizeof *w);
    if (!w) return TS_ERR_INTERNAL;
    for (int i = 0; i < r->n_warnings; i++) {
        char t[320];
        rep_sim_warning(r, i, t, sizeof t);
        if (!(w[i] = ts_arena_strdup(a, t))) return TS_ERR_INTERNAL;
    }
    v->warnings = w;
    v->n_warnings = r->n_warnings;
    return TS_OK;
}

static const char *fmt(TsArena *a, const char *f, double x)
{
    return ts_arena_printf(a, f, x);
}

TsStatus rep_plan_view_from_sim(const SimSetup *in, const SimResult *r, const char *title, TsArena *a,
                                RepPlanView *out, TsError *err)
{
    memset(out, 0, sizeof *out);
    const ParallelPlan *k = &in->plan;
    char buf[3][32];
    rep_fmt_seconds(buf[0], sizeof buf[0], r->iteration_time_s);
    rep_fmt_si(buf[1], sizeof buf[1], r->tokens_per_s);
    rep_fmt_bytes(buf[2], sizeof buf[2], r->memory.total_bytes);
    RepKV *m = ts_arena_alloc(a, 8 * sizeof *m);
    RepKV *kn = ts_arena_alloc(a, 24 * sizeof *kn);
    RepAmount *bd = ts_arena_alloc(a, SIM_BD_COUNT * sizeof *bd);
    RepAmount *mem = ts_arena_alloc(a, 5 * sizeof *mem);
    RepAmount *sbd = r->stages && r->n_stages > 1 ? ts_arena_alloc(a, (size_t)r->n_stages * SIM_BD_COUNT * sizeof *sbd)
                                                   : NULL;
    if (!m || !kn || !bd || !mem || (r->stages && r->n_stages > 1 && !sbd))
        return ts_err(err, TS_ERR_INTERNAL, "out of memory building the report");
    for (int32_t s = 0; sbd && s < r->n_stages; s++)
        for (int i = 0; i < SIM_BD_COUNT; i++)
            sbd[s * SIM_BD_COUNT + i] = (RepAmount){sim_breakdown_key(i), sim_breakdown_get(&r->stages[s].breakdown, i)};
    int nm = 0, nk = 0;
    m[nm++] = (RepKV){"iteration time", ts_arena_strdup(a, buf[0])};
    m[nm++] = (RepKV){"tokens/s", ts_arena_strdup(a, buf[1])};
    m[nm++] = (RepKV){"tokens/s per GPU", fmt(a, "%.0f", r->tokens_per_s_per_gpu)};
    m[nm++] = (RepKV){"MFU", fmt(a, "%.1f%%", 100.0 * r->mfu)};
    m[nm++] = (RepKV){"HFU", fmt(a, "%.1f%%", 100.0 * r->hfu)};
    m[nm++] = (RepKV){"model TFLOP/s per GPU", fmt(a, "%.0f", r->model_tflops_per_gpu)};
    m[nm++] = (RepKV){"memory per GPU", ts_arena_printf(a, "%s%s", buf[2], r->memory.fits ? "" : " (does not fit)")};
    if (r->host_wait_s > 0) /* of the compute: the GPU idle while the host dispatches */
        m[nm++] = (RepKV){"host wait", ts_arena_printf(a, "%.3f s (%.1f%%)", r->host_wait_s,
                                                      r->iteration_time_s > 0 ? 100.0 * r->host_wait_s / r->iteration_time_s
                                                                              : 0)};
    kn[nk++] = (RepKV){"gpu", ts_arena_strdup(a, in->hw ? in->hw->gpu.name : "?")};
#define KI(name, v) kn[nk++] = (RepKV){name, ts_arena_printf(a, "%lld", (long long)(v))}
    KI("gpus", k->tp * k->pp * k->dp * k->cp);
    KI("tp", k->tp);
    KI("pp", k->pp);
    KI("vpp", k->vpp);
    if (plan_vpp_group_shown(k)) KI("vpp group", plan_vpp_group_shown(k));
    KI("dp", k->dp);
    KI("cp", k->cp);
    KI("ep", k->ep);
    KI("micro batch", k->micro_batch);
    KI("grad accumulation", k->grad_accum);
    KI("global batch", k->global_batch);
    KI("seq", k->seq);
    KI("zero", k->zero);
#undef KI
    kn[nk++] = (RepKV){"sp", k->sp ? "on" : "off"};
    kn[nk++] = (RepKV){"recompute", plan_recompute_name(k->recompute)};
    kn[nk++] = (RepKV){"schedule", plan_sched_name(k->schedule)};
    kn[nk++] = (RepKV){"tp overlap", k->tp_overlap ? "on" : "off"};
    kn[nk++] = (RepKV){"dtype", ts_dtype_name(k->dtype)};
    for (int i = 0; i < SIM_BD_COUNT; i++) bd[i] = (RepAmount){sim_breakdown_key(i), sim_breakdown_get(&r->breakdown, i)};
    mem[0] = (RepAmount){"weights", r->memory.weights_bytes};
    mem[1] = (RepAmount){"gradients", r->memory.gradients_bytes};
    mem[2] = (RepAmount){"optimizer", r->memory.optimizer_bytes};
    mem[3] = (RepAmount){"activations", r->memory.activations_bytes};
    mem[4] = (RepAmount){"other", r->memory.other_bytes};
    *out = (RepPlanView){.title = title, .metrics = m, .n_metrics = nm, .knobs = kn, .n_knobs = nk,
                         .n_stages = (int)k->pp, .iteration_s = r->iteration_time_s, .breakdown = bd,
                         .n_breakdown = SIM_BD_COUNT, .memory = mem, .n_memory = 5,
                         .capacity_bytes = r->memory.capacity_bytes > 0 ? r->memory.capacity_bytes
                                                                        : in->hw ? in->hw->gpu.hbm_bytes : 0,
                         .stage_breakdown = sbd, .slowest_stage = sbd ? r->slowest_stage : -1};
    if (warnings(r, a, out) != TS_OK) return ts_err(err, TS_ERR_INTERNAL, "out of memory building the report");
    SimSlowest sw;
    double fill, wait;
    if (sbd && sim_slowest(r, &sw) && sim_critical_bubble(in, r, &fill, &wait))
        out->stage_note = ts_arena_printf(a,
                                          "Stage %d works %.3g s, the critical stage %d %.3g s: of the critical "
                                          "stage's %.3g s bubble, %.3g s is the schedule's fill and drain and %.3g s "
                                          "waiting for stage %d, whose largest part is %s (%.3g s).",
                                          sw.stage, sw.busy_s, r->critical_stage, sw.critical_busy_s, fill + wait,
                                          fill, wait, sw.stage, sim_breakdown_what(sw.dominant), sw.dominant_s);
    if (r->spans && timeline(r, a, out) != TS_OK)
        return ts_err(err, TS_ERR_INTERNAL, "out of memory building the report timeline");
    return TS_OK;
}
