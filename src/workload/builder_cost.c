/* builder_cost.c — the costed step's blocks as the generator emits them:
 * each block's times from cost.h (cost_step), its FLOPs, bytes, parameters
 * and gradient tensors from the layer template (partition.h). The generator
 * costs nothing itself: a generated task graph carries the kernel times the
 * simulator assumes. */
#include "builder_int.h"

double wl_gen_grad_bytes(const Gen *g) { return g->o->grad_bytes > 0 ? (double)g->o->grad_bytes : 4.0; }

static void block_of(const PartBlockT *b, const CostBlock *c, double recompute, double db, Block *o)
{
    *o = (Block){.fwd_s = c->fwd, .ig_s = c->ig, .wg_s = c->wg, .recompute_s = recompute,
                 .gemm_fwd_s = c->gemm_fwd, .gemm_ig_s = c->gemm_ig, .gemm_wg_s = c->gemm_wg, .core_fwd_s = c->core_fwd,
                 .core_ig_s = c->core_ig, .params = b->params, .eparams = b->expert_params,
                 .grad_t = {b->grad_t[0], b->grad_t[1]}, .egrad_t = {b->egrad_t[0], b->egrad_t[1]}};
    for (int32_t i = 0; i < b->n_k; i++) {
        const PartKernel *k = &b->k[i];
        if (k->flags & PART_KF_SAC_ONLY) continue;
        o->fwd_flops += k->flops[0];
        o->ig_flops += k->flops[1];
        o->wg_flops += k->flops[2];
        if (k->kind == PART_K_MEM) {
            o->fwd_bytes += k->fwd_bytes * k->count;
            o->bwd_bytes += k->bwd_bytes * k->count;
        } else if (k->kind == PART_K_GEMM) { /* operands read, result written; backward twice that */
            double e = (double)k->batch * ((double)k->m * (double)k->k + (double)k->k * (double)k->n +
                                           (double)k->m * (double)k->n) * k->count;
            o->fwd_bytes += db * e;
            o->bwd_bytes += 2.0 * db * e;
        }
    }
}

void wl_gen_blocks(Gen *g, const CostStep *cs)
{
    Block *dst[PART_BLOCK_COUNT] = {&g->attn, &g->mlp, &g->moe, &g->embed, &g->head};
    for (int b = 0; b < PART_BLOCK_COUNT; b++)
        block_of(&g->t->b[b], &cs->b[b], cs->recompute[b], g->t->act_bytes, dst[b]);
    /* ZeRO-3's root unit (embedding, head) copies, one kernel per chunk as
     * the simulator charges them: the embedding's chunk holds the head too
     * when there is one chunk */
    if (part_fsdp_copies(g->p) && g->dpn > 1) {
        double e = g->embed.params, h = g->head.params;
        double on[2] = {e + (g->n_chunks == 1 ? h : 0), g->n_chunks > 1 ? h : 0};
        Block *at[2] = {&g->embed, &g->head};
        for (int i = 0; i < 2; i++) {
            if (!(on[i] > 0)) continue;
            PartKernel k;
            double t[3];
            part_fsdp_copy_kernel(on[i], g->t->act_bytes, wl_gen_grad_bytes(g), true, &k);
            cost_kernel(g->cc, &k, t);
            at[i]->fwd_s += t[0];
            at[i]->wg_s += t[1] + t[2];
        }
    }
    /* ZeRO-3 with --recompute-layers: the layers past the first k run the
     * FSDP copy kernel as without recompute (its copy-out again in backward) */
    const ParallelPlan *p = g->p;
    if (p->zero >= 3 && p->recompute == PLAN_RECOMPUTE_FULL && p->recompute_layers > 0)
        for (int b = PART_BLOCK_MLP; b <= PART_BLOCK_MOE; b++)
            for (int32_t i = 0; i < g->t->b[b].n_k; i++) {
                const PartKernel *k = &g->t->b[b].k[i];
                if (!(k->flags & PART_KF_FSDP)) continue;
                PartKernel kn = *k;
                kn.bwd_bytes += k->fwd_bytes;
                double t0[3], t1[3];
                cost_kernel(g->cc, k, t0);
                cost_kernel(g->cc, &kn, t1);
                dst[b]->nr_ig_s = t1[1] - t0[1];
                dst[b]->nr_wg_s = t1[2] - t0[2];
            }
    /* BF16 optimizer (DeepSpeed): every micro-batch's bf16 gradients added
     * into the fp32 ones after its backward (cast: read 2 write 4; add: read
     * 8 write 4; bf16 zeroed: write 2), as the simulator charges it */
    if (g->o->fp32_grad_accum)
        for (int b = 0; b < PART_BLOCK_COUNT; b++)
            if (dst[b]->params > 0) dst[b]->wg_s += hw_memory_time_s(g->cc->hw, 20.0 * dst[b]->params);
}

void wl_step_make(const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt, const CostCtx *cc,
                  WlStepStore *st, WlStep *s)
{
    part_template(m, p, rt, &st->tpl);
    cost_step(cc, m, p, rt, &st->tpl, &st->cost);
    *s = (WlStep){.model = m, .plan = p, .tpl = &st->tpl, .cost = &st->cost, .cc = *cc};
}
