/* Profile figures: the first compute model (roofline), per-module stats with
 * DeepSpeed semantics, and training FLOPs with the closed forms.
 * Legend: B micro-batch, s sequence, l layers, h hidden, V vocabulary. */
#include "trainsim/report.h"

#include <stdlib.h>
#include <string.h>

TsStatus rep_compute_init(RepCompute *c, const char *gpu, TsDtype dtype, TsError *err)
{
    memset(c, 0, sizeof *c);
    c->dtype = dtype;
    return hw_gpu_load(gpu, &c->gpu, err);
}

static double peak_for(const GpuSpec *g, TsDtype dt)
{
    if (g->peak_flops[dt] > 0) return g->peak_flops[dt];
    if (g->peak_flops[TS_DTYPE_BF16] > 0) return g->peak_flops[TS_DTYPE_BF16];
    return g->peak_flops[TS_DTYPE_FP32] > 0 ? g->peak_flops[TS_DTYPE_FP32] : 1e12;
}

/* The one place the profile turns an op into time. A roofline: tensor-core
 * ops at peak[dtype] x the GPU's large-GEMM (or FlashAttention forward)
 * efficiency, everything bounded below by its bytes at HBM bandwidth x
 * mem_eff (efficiencies: data/gpus/<gpu>.json, calibration_facts.md §1-3),
 * plus the GPU's per-kernel launch overhead (launch_s) for every op that
 * touches memory. Replaced by hw_op_time_s once the full compute model lands. */
double rep_op_time_s(const RepCompute *c, const GraphOp *op)
{
    const GpuSpec *g = &c->gpu;
    double peak = peak_for(g, c->dtype), tc;
    double geff = g->gemm_eff[c->dtype] > 0 ? g->gemm_eff[c->dtype] : 0.8;
    switch (op->kind) {
    case GRAPH_OP_GEMM:
    case GRAPH_OP_BATCHED_GEMM:
    case GRAPH_OP_ROUTER: tc = op->fwd_flops / (peak * geff); break;
    case GRAPH_OP_ATTENTION_CORE:
        tc = op->fwd_flops / (peak * (g->attn_fwd_eff > 0 ? g->attn_fwd_eff : 0.6));
        break;
    default: /* CUDA-core arithmetic; these are memory-bound in practice */
        tc = op->fwd_flops / (g->peak_flops[TS_DTYPE_FP32] > 0 ? g->peak_flops[TS_DTYPE_FP32] : peak);
        break;
    }
    double bw = g->hbm_bw_bytes_per_s > 0 ? g->hbm_bw_bytes_per_s : 1e12;
    double tm = op->fwd_bytes / (bw * (g->mem_eff > 0 ? g->mem_eff : 0.8));
    double t = tc > tm ? tc : tm;
    return t > 0 ? t + g->launch_s : 0;
}

void rep_profile_options_init(RepProfileOptions *o)
{
    memset(o, 0, sizeof *o);
    o->module_depth = -1;
    o->top_modules = 1;
    o->detailed = true;
    o->profile_step = 1;
    o->recompute = REP_RECOMPUTE_NONE;
}

void rep_module_stats(const ModuleGraph *g, const RepCompute *c, RepModuleStats *st)
{
    int32_t n = g->n_mods;
    for (int32_t i = 0; i < n; i++) memset(&st[i], 0, sizeof st[i]);
    /* ops: credit each op to its owner, then add subtrees bottom-up (ids are pre-order) */
    for (int32_t i = 0; i < g->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        RepModuleStats *s = &st[op->module];
        s->macs += op->ds_macs;
        s->flops += op->ds_flops;
        s->latency_s += rep_op_time_s(c, op);
    }
    for (int32_t i = 0; i < n; i++) {
        const GraphModule *m = &g->mods[i];
        for (int32_t p = m->first_param; p < m->first_param + m->n_params; p++)
            st[i].params += (double)g->params[p].numel;
    }
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t p = g->mods[i].parent;
        st[p].macs += st[i].macs;
        st[p].flops += st[i].flops;
        st[p].latency_s += st[i].latency_s;
        st[p].params += st[i].params;
    }
    /* a tied tensor counts once in any subtree that also holds its owner */
    for (int32_t p = 0; p < g->n_params; p++) {
        const GraphParam *gp = &g->params[p];
        if (!gp->tied) continue;
        int32_t om = g->params[gp->tied_to].module;
        for (int32_t a = gp->module; a >= 0; a = g->mods[a].parent)
            if (om >= a && om < g->mods[a].end_mod) st[a].params -= (double)gp->numel;
    }
}

void rep_training_flops(const ModuleGraph *g, RepTraining *t)
{
    memset(t, 0, sizeof *t);
    double base = 0, core = 0, layers = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        base += op->fwd_flops + op->dgrad_flops + op->wgrad_flops;
        if (op->part == GRAPH_PART_ATTN_CORE) core += op->fwd_flops;
        if (op->role == GRAPH_ROLE_LAYER) layers += op->fwd_flops;
    }
    t->exact_flops[REP_RECOMPUTE_NONE] = base;
    t->exact_flops[REP_RECOMPUTE_SELECTIVE] = base + core;
    t->exact_flops[REP_RECOMPUTE_FULL] = base + layers;
    /* reference/flops_profiler.md §4: Korthikanti 2022 (none; selective by the
     * note's derivation) and Narayanan 2021 (full recompute). */
    double B = (double)g->opt.batch, s = (double)g->opt.seq, l = (double)g->spec.layers, h = (double)g->spec.hidden;
    double V = g->spec.lm_head ? (double)g->vocab : 0;
    double k = B * s * l * h * h;
    t->closed_flops[REP_RECOMPUTE_NONE] = 72 * k * (1 + s / (6 * h) + V / (12 * l * h));
    t->closed_flops[REP_RECOMPUTE_SELECTIVE] = 72 * k * (1 + 2 * s / (9 * h) + V / (12 * l * h));
    t->closed_flops[REP_RECOMPUTE_FULL] = 96 * k * (1 + s / (6 * h) + V / (16 * l * h));
}
