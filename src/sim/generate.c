/*
 * generate.c — the task graph of what the simulator models: the glue from
 * the planner's nouns (ModelSpec, ParallelPlan, SimOptions, HwModel) to the
 * workload generators' flat dims, cost callbacks and options, and
 * sim_workload_build, which writes a plan as the JSON / Chakra task graph the
 * way sim_simulate costs it (its replay agrees with the simulation: golden
 * sim_workload_dag_roundtrip, test_properties' random round trips). The
 * generators themselves (src/workload/builder.c) stay free of plan.h.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "trainsim/sim.h"

void sim_wl_model_dims(const ModelSpec *m, int64_t tp, WlModelDims *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", m->name);
    d->layers = m->layers;
    d->hidden = m->hidden;
    d->heads = m->heads;
    d->kv_heads = m->kv_heads;
    d->head_dim = m->head_dim;
    d->ffn = m->ffn;
    d->vocab = m->vocab;
    d->vocab_padded = model_padded_vocab(m, tp);
    d->swiglu = m->act == MODEL_ACT_SWIGLU;
    d->tied = m->tied_embeddings;
    d->learned_pos = m->pos == MODEL_POS_LEARNED;
    d->rope = m->pos == MODEL_POS_ROPE;
    d->dropout = m->hidden_dropout > 0;
    d->attn_dropout = m->attn_dropout > 0;
    d->experts = m->experts;
    d->topk = m->topk;
    d->moe_ffn = m->moe_ffn;
    d->dense_layers = m->dense_layers;
    d->shared_experts = m->shared_experts;
    d->q_lora_rank = m->q_lora_rank;
    d->kv_lora_rank = m->kv_lora_rank;
    d->qk_nope_dim = m->qk_nope_dim;
    d->qk_rope_dim = m->qk_rope_dim;
    d->v_head_dim = m->v_head_dim;
}

TsStatus sim_wl_plan_dims(const ModelSpec *m, const ParallelPlan *p, WlPlanDims *d, int64_t **split, TsError *err)
{
    memset(d, 0, sizeof *d);
    *split = NULL;
    d->world = p->gpus;
    d->tp = p->tp;
    d->cp = p->cp;
    d->pp = p->pp;
    d->vpp = p->vpp;
    d->dp = p->dp;
    d->ep = p->ep;
    d->etp = p->etp;
    d->sp = p->sp;
    d->micro_batch = p->micro_batch;
    d->seq = p->seq;
    d->ga = p->grad_accum;
    d->dtype_bytes = ts_dtype_bytes(sim_activation_dtype(p->dtype)); /* activations, TP traffic: bf16 under fp8 */
    d->zero = p->zero;
    d->dist_opt = p->dist_opt;
    d->shampoo = p->optimizer == PLAN_OPTIM_SHAMPOO;
    d->shampoo_blocks = p->shampoo_blocks > 0 ? p->shampoo_blocks : 1;
    d->recompute = p->recompute == PLAN_RECOMPUTE_FULL        ? WL_RECOMPUTE_FULL
                   : p->recompute == PLAN_RECOMPUTE_SELECTIVE ? WL_RECOMPUTE_SELECTIVE
                                                              : WL_RECOMPUTE_NONE;
    d->schedule = p->schedule == PLAN_SCHED_GPIPE         ? WL_SCHED_GPIPE
                  : p->schedule == PLAN_SCHED_INTERLEAVED ? WL_SCHED_INTERLEAVED
                                                          : WL_SCHED_1F1B;
    d->flash = p->flash_attn;
    d->tp_overlap = p->tp_overlap;
    d->stage_layers = p->stage_layers;
    d->n_stage_layers = p->n_stage_layers;
    /* the plan's uneven rule, spelled out per chunk for the generators */
    int64_t chunks = p->pp * (p->vpp > 1 ? p->vpp : 1);
    if (p->n_stage_layers == 0 && chunks > 0 && m->layers % chunks != 0) {
        int64_t *s = malloc((size_t)chunks * sizeof *s);
        if (!s) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        for (int64_t c = 0; c < chunks; c++) s[c] = plan_chunk_layers(p, m->layers, c);
        d->stage_layers = s;
        d->n_stage_layers = (int32_t)chunks;
        *split = s;
    }
    return TS_OK;
}

/* ---- cost callbacks: hw.h's model, tensor-core kernels scaled as the
 * simulator scales them (sim_tensor_factor) ------------------------------- */
static double gemm_cb(const void *ctx, int64_t batch, int64_t m, int64_t n, int64_t k)
{
    const SimWlCostCtx *c = ctx;
    return c->tensor_factor * hw_gemm_time_s(c->hw, batch, m, n, k, c->dtype);
}

/* The three passes of a GEMM as layer_cost.c's gemm_as costs them: layer GEMMs at
 * the plan's dtype, the LM head at the activation dtype; under FP8
 * Transformer Engine's casts: the input cast with its amax (3 B per element)
 * forward, the output gradient cast and transposed (4 B) and the saved input
 * transposed (2 B) backward. */
static void gemm3_cb(const void *ctx, int64_t batch, int64_t m, int64_t n, int64_t k, bool layer, double t[3])
{
    const SimWlCostCtx *c = ctx;
    TsDtype dt = layer ? c->dtype : sim_activation_dtype(c->dtype);
    double f = c->tensor_factor;
    t[0] = f * hw_gemm_time_s(c->hw, batch, m, n, k, dt);
    t[1] = f * hw_gemm_time_s(c->hw, batch, m, k, n, dt);
    t[2] = f * hw_gemm_time_s(c->hw, batch, k, n, m, dt);
    if (dt == TS_DTYPE_FP8) {
        double mk = (double)batch * (double)m * (double)k, mn = (double)batch * (double)m * (double)n;
        t[0] += hw_memory_time_s(c->hw, 3 * mk);
        t[1] += hw_memory_time_s(c->hw, 4 * mn);
        t[2] += hw_memory_time_s(c->hw, 2 * mk);
    }
}

static double attn_cb(const void *ctx, int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, bool causal, bool bwd)
{
    const SimWlCostCtx *c = ctx;
    return c->tensor_factor * hw_attention_time_s(c->hw, b, h, sq, sk, d, causal, bwd, sim_activation_dtype(c->dtype));
}

static double mem_cb(const void *ctx, double bytes)
{
    const SimWlCostCtx *c = ctx;
    return hw_memory_time_s(c->hw, bytes);
}

WlCost sim_wl_cost(const SimWlCostCtx *ctx)
{
    return (WlCost){.ctx = ctx, .gemm_s = gemm_cb, .attn_s = attn_cb, .mem_s = mem_cb, .gemm3_s = gemm3_cb};
}

void sim_wl_build_options(const SimOptions *o, WlBuildOptions *bo)
{
    _Static_assert((int)WL_CP_P2P == (int)SIM_CP_P2P && (int)WL_CP_ALLGATHER == (int)SIM_CP_ALLGATHER &&
                       (int)WL_CP_A2A == (int)SIM_CP_A2A,
                   "WlCpComm follows SimCpComm");
    int gb = o->fp32_grad_reduce ? 4 : 2;
    *bo = (WlBuildOptions){.cp_comm = (WlCpComm)o->cp_comm,
                           .grad_bytes = gb,
                           .bucket_params = o->bucket_bytes > 0 ? o->bucket_bytes / gb : 0,
                           .param_gather_at_step = !o->param_gather_overlap,
                           .dp_after_backward = !o->dp_overlap,
                           .eager_elementwise = o->eager_elementwise,
                           .optimizer_bytes = o->optimizer_bytes_per_param,
                           .selective_ops = o->selective_ops,
                           .sequential_experts = o->sequential_experts,
                           .ds_pipe = o->ds_pipe};
    if (o->ds_pipe) { /* the engine reduces after the flush and gathers at the step */
        bo->dp_after_backward = true;
        bo->param_gather_at_step = true;
    }
}

TsStatus sim_workload_build(SimSetup *in, Workload **out, TsError *err)
{
    *out = NULL;
    const ModelSpec *m = in->model;
    ParallelPlan *p = &in->plan;
    TsStatus st = sim_setup_resolve(in, err); /* the simulator's own checks */
    if (st) return st;
    WlModelDims md;
    WlPlanDims pd;
    int64_t *split = NULL;
    sim_wl_model_dims(m, p->tp, &md);
    if ((st = sim_wl_plan_dims(m, p, &pd, &split, err))) return st;
    SimWlCostCtx cc = {.hw = in->hw, .dtype = p->dtype, .tensor_factor = sim_tensor_factor(&in->hw->gpu, &in->opt, p->gpus)};
    WlCost cost = sim_wl_cost(&cc);
    WlBuildOptions bo;
    sim_wl_build_options(&in->opt, &bo);
    bo.shampoo_s_per_param = sim_shampoo_s_per_param(in->hw, m, p);
    bo.fp32_grad_accum = in->opt.ds_pipe && p->dtype == TS_DTYPE_BF16;
    st = wl_build(&md, &pd, &cost, &bo, out, err);
    free(split);
    return st;
}
