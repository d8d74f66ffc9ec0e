/* Profile figures: op latencies from the hw compute model, per-module stats with
 * DeepSpeed semantics, and training FLOPs with the closed forms.
 * Legend: B micro-batch, s sequence, l layers, h hidden, V vocabulary. */
#include "trainsim/report.h"

#include <stdlib.h>
#include <string.h>

TsStatus rep_compute_init(RepCompute *c, const char *gpu, TsDtype dtype, TsError *err)
{
    memset(c, 0, sizeof *c);
    hw_model_init(&c->hw);
    c->dtype = dtype;
    return hw_gpu_load(gpu, &c->hw.gpu, err);
}

/* The one place the profile turns an op into time: the hw subsystem's
 * compute model, forward pass (GEMM tile/wave quantization and efficiency
 * curve, FlashAttention core with causality read from the op's exact FLOPs,
 * memory-bound ops as bytes / effective HBM bandwidth, launch overhead;
 * calibration table when c->hw.calib is set). */
double rep_op_time_s(const RepCompute *c, const GraphOp *op)
{
    return hw_op_time_s(&c->hw, op, HW_PASS_FWD, c->dtype);
}

/* Op times memoized by what hw_op_time_s reads in the forward pass (kind,
 * dims, exact forward FLOPs): routed experts repeat the same few ops tens
 * of thousands of times. Direct-mapped, full-key compare. */
enum { MEMO_SLOTS = 256 };
typedef struct Memo {
    GraphOpKind kind[MEMO_SLOTS];
    int64_t dims[MEMO_SLOTS][6];
    double fwd[MEMO_SLOTS], t[MEMO_SLOTS];
    bool used[MEMO_SLOTS];
} Memo;

static double memo_time(Memo *mm, const RepCompute *c, const GraphOp *op)
{
    const uint64_t *d = (const uint64_t *)op->dims; /* independent products: no serial chain */
    uint64_t h = (uint64_t)op->kind * 0x9e3779b97f4a7c15ull + d[0] * 0xc2b2ae3d27d4eb4full +
                 d[1] * 0x165667b19e3779f9ull + d[2] * 0xd6e8feb86659fd93ull + d[3] * 0xff51afd7ed558ccdull +
                 d[4] * 0xc4ceb9fe1a85ec53ull + d[5] * 0x9fb21c651e98df25ull;
    h ^= h >> 29;
    unsigned s = (unsigned)(h % MEMO_SLOTS);
    if (mm->used[s] && mm->kind[s] == op->kind && mm->fwd[s] == op->fwd_flops &&
        memcmp(mm->dims[s], op->dims, sizeof op->dims) == 0)
        return mm->t[s];
    double t = rep_op_time_s(c, op);
    mm->used[s] = true;
    mm->kind[s] = op->kind;
    mm->fwd[s] = op->fwd_flops;
    memcpy(mm->dims[s], op->dims, sizeof op->dims);
    mm->t[s] = t;
    return t;
}

void rep_profile_options_init(RepProfileOptions *o)
{
    memset(o, 0, sizeof *o);
    o->module_depth = -1;
    o->top_modules = 1;
    o->detailed = true;
    o->profile_step = 1;
    o->recompute = PLAN_RECOMPUTE_NONE;
}

static void training_from_sums(const ModuleGraph *g, double base, double core, double layers, RepTraining *t);

void rep_module_stats(const ModuleGraph *g, const RepCompute *c, RepModuleStats *st)
{
    rep_stats_and_training(g, c, st, NULL);
}

void rep_stats_and_training(const ModuleGraph *g, const RepCompute *c, RepModuleStats *st, RepTraining *tr)
{
    int32_t n = g->n_mods;
    double base = 0, core = 0, layers = 0; /* training sums, same order as rep_training_flops */
    for (int32_t i = 0; i < n; i++) memset(&st[i], 0, sizeof st[i]);
    Memo *memo = calloc(1, sizeof *memo); /* NULL: no memo, same figures */
    /* ops: credit each op to its owner, then add subtrees bottom-up (ids are pre-order) */
    for (int32_t i = 0; i < g->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        RepModuleStats *s = &st[op->module];
        s->macs += op->ds_macs;
        s->flops += op->ds_flops;
        s->latency_s += memo ? memo_time(memo, c, op) : rep_op_time_s(c, op);
        if (tr) {
            base += op->fwd_flops + op->dgrad_flops + op->wgrad_flops;
            if (op->part == GRAPH_PART_ATTN_CORE) core += op->fwd_flops;
            if (op->role == GRAPH_ROLE_LAYER) layers += op->fwd_flops;
        }
    }
    free(memo);
    if (tr) training_from_sums(g, base, core, layers, tr);
    int32_t tied = 0;
    for (int32_t p = 0; p < g->n_params; p++) {
        st[g->params[p].module].params += (double)g->params[p].numel;
        tied += g->params[p].tied;
    }
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t p = g->mods[i].parent;
        st[p].macs += st[i].macs;
        st[p].flops += st[i].flops;
        st[p].latency_s += st[i].latency_s;
        st[p].params += st[i].params;
    }
    /* a tied tensor counts once in any subtree that also holds its owner */
    for (int32_t p = 0; p < g->n_params && tied > 0; p++) {
        const GraphParam *gp = &g->params[p];
        if (!gp->tied) continue;
        tied--;
        int32_t om = g->params[gp->tied_to].module;
        for (int32_t a = gp->module; a >= 0; a = g->mods[a].parent)
            if (om >= a && om < g->mods[a].end_mod) st[a].params -= (double)gp->numel;
    }
}

void rep_training_flops(const ModuleGraph *g, RepTraining *t)
{
    double base = 0, core = 0, layers = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        base += op->fwd_flops + op->dgrad_flops + op->wgrad_flops;
        if (op->part == GRAPH_PART_ATTN_CORE) core += op->fwd_flops;
        if (op->role == GRAPH_ROLE_LAYER) layers += op->fwd_flops;
    }
    training_from_sums(g, base, core, layers, t);
}

static void training_from_sums(const ModuleGraph *g, double base, double core, double layers, RepTraining *t)
{
    memset(t, 0, sizeof *t);
    t->exact_flops[PLAN_RECOMPUTE_NONE] = base;
    t->exact_flops[PLAN_RECOMPUTE_SELECTIVE] = base + core;
    t->exact_flops[PLAN_RECOMPUTE_FULL] = base + layers;
    /* reference/flops_profiler.md §4: Korthikanti 2022 (none; selective by the
     * note's derivation) and Narayanan 2021 (full recompute). */
    double B = (double)g->opt.batch, s = (double)g->opt.seq, l = (double)g->spec.layers, h = (double)g->spec.hidden;
    double V = g->spec.lm_head ? (double)g->vocab : 0;
    double k = B * s * l * h * h;
    t->closed_flops[PLAN_RECOMPUTE_NONE] = 72 * k * (1 + s / (6 * h) + V / (12 * l * h));
    t->closed_flops[PLAN_RECOMPUTE_SELECTIVE] = 72 * k * (1 + 2 * s / (9 * h) + V / (12 * l * h));
    t->closed_flops[PLAN_RECOMPUTE_FULL] = 96 * k * (1 + s / (6 * h) + V / (16 * l * h));
}
