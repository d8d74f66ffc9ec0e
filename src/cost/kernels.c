/* kernels.c — a layer template's kernels in seconds (cost.h). */
#include <stddef.h>
#include <string.h>

#include "trainsim/cost.h"

void cost_kernel(const CostCtx *c, const PartKernel *k, double t[3])
{
    const HwModel *hw = c->hw;
    double n = (double)(k->count > 0 ? k->count : 1), f = c->tensor_factor;
    t[0] = t[1] = t[2] = 0;
    switch (k->kind) {
    case PART_K_GEMM: {
        TsDtype dt = (k->flags & PART_KF_ACT) ? c->act_dtype : c->dtype;
        t[0] = f * hw_gemm_time_s(hw, k->batch, k->m, k->n, k->k, dt);
        t[1] = f * hw_gemm_time_s(hw, k->batch, k->m, k->k, k->n, dt);
        t[2] = f * hw_gemm_time_s(hw, k->batch, k->k, k->n, k->m, dt);
        if (dt == TS_DTYPE_FP8) { /* Transformer Engine's casts; the weights' are cached */
            double mk = (double)k->batch * (double)k->m * (double)k->k, mn = (double)k->batch * (double)k->m * (double)k->n;
            t[0] += hw_memory_time_s(hw, 3 * mk);
            t[1] += hw_memory_time_s(hw, 4 * mn);
            t[2] += hw_memory_time_s(hw, 2 * mk);
        }
        break;
    }
    case PART_K_ATTN:
        t[0] = f * hw_attention_time_s(hw, k->batch, k->m, k->n, k->k, k->d, k->causal, false, c->act_dtype);
        t[1] = f * hw_attention_time_s(hw, k->batch, k->m, k->n, k->k, k->d, k->causal, true, c->act_dtype);
        break;
    default:
        t[0] = hw_memory_time_s(hw, k->fwd_bytes);
        t[(k->flags & PART_KF_WGRAD) ? 2 : 1] = hw_memory_time_s(hw, k->bwd_bytes);
        break;
    }
    for (int i = 0; i < 3; i++) t[i] *= n;
}

void cost_block(const CostCtx *c, const PartBlockT *b, CostBlock *o)
{
    memset(o, 0, offsetof(CostBlock, k)); /* the sums; k[] is written kernel by kernel */
    for (int32_t i = 0; i < b->n_k; i++) {
        const PartKernel *k = &b->k[i];
        double *t = o->k[i];
        cost_kernel(c, k, t);
        if (k->flags & PART_KF_SAC_ONLY) {
            o->sac_fwd += t[0];
            continue;
        }
        if (k->part == PART_KP_GEMM) o->gemm_fwd += t[0], o->gemm_ig += t[1], o->gemm_wg += t[2];
        else if (k->part == PART_KP_CORE) o->core_fwd += t[0], o->core_ig += t[1] + t[2];
        else o->mem_fwd += t[0], o->mem_ig += t[1], o->mem_wg += t[2];
        if (k->flags & PART_KF_FSDP) o->fsdp_fwd += t[0], o->fsdp_bwd += t[1] + t[2];
        o->fwd += t[0];
        o->ig += t[1];
        o->wg += t[2];
    }
}

bool cost_sac(const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt)
{
    return p->recompute == PLAN_RECOMPUTE_SELECTIVE && rt && rt->selective_ops && m->experts == 0 &&
           m->kv_lora_rank == 0;
}

void cost_step(const CostCtx *c, const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt,
               const PartTemplate *t, CostStep *o)
{
    bool sac = cost_sac(m, p, rt);
    for (int b = 0; b < PART_BLOCK_COUNT; b++) {
        CostBlock *cb = &o->b[b];
        cost_block(c, &t->b[b], cb);
        double rc = 0;
        if (sac && (b == PART_BLOCK_ATTN || b == PART_BLOCK_MLP))
            rc = cb->sac_fwd + (cb->fwd - cb->gemm_fwd - cb->core_fwd);
        else if (p->recompute == PLAN_RECOMPUTE_SELECTIVE)
            rc = cb->core_fwd;
        else if (p->recompute == PLAN_RECOMPUTE_FULL && b != PART_BLOCK_EMBED && b != PART_BLOCK_HEAD)
            rc = cb->fwd;
        o->recompute[b] = rc;
    }
}
