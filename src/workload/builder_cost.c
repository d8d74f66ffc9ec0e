/* builder_cost.c — what one layer's blocks cost on one rank for one
 * micro-batch, as the simulator costs them (src/sim/cost.c): GEMMs through
 * the WlCost callbacks, memory-bound kernels, the attention core (CP and
 * Ulysses), MoE, MLA, eager model code, op-level SAC, ZeRO-3 copies, the
 * BF16 optimizer's accumulation. The emission is builder.c's. */
#include "builder_int.h"

#include <math.h>

/* Bytes per gradient element reduced over DP (fp32 main grads by default). */
double wl_gen_grad_bytes(const Gen *g) { return g->o->grad_bytes > 0 ? (double)g->o->grad_bytes : 4.0; }

/* The parameters of `params` (`eparams` of them routed experts) that ZeRO-3
 * shards: dense ones over the DP (x CP) group, experts over the expert-DP
 * group (DP_EP), each only where that group has more than one rank. */
static double fsdp_sharded(const Gen *g, double params, double eparams)
{
    return (g->dpn > 1 ? params - eparams : 0) + (g->edpn > 1 ? eparams : 0);
}

/* The forward, dgrad and wgrad times of `batch` (M x K) @ (K x N) products:
 * a transformer-layer GEMM (`layer`) or one at the activation dtype (the LM
 * head, the unfused attention's products). */
static void gemm_passes(const Gen *g, int64_t batch, int64_t M, int64_t N, int64_t K, bool layer, double t[3])
{
    const WlCost *c = g->c;
    if (c->gemm3_s) {
        c->gemm3_s(c->ctx, batch, M, N, K, layer, t);
    } else {
        t[0] = c->gemm_s(c->ctx, batch, M, N, K);
        t[1] = c->gemm_s(c->ctx, batch, M, K, N);
        t[2] = c->gemm_s(c->ctx, batch, K, N, M);
    }
}

/* `batch` GEMMs (M x K) @ (K x N): forward, dgrad, wgrad; K*N parameters
 * each. `layer`: a transformer-layer GEMM (else the LM head). */
static void gemm_as(const Gen *g, Block *b, int64_t batch, int64_t M, int64_t N, int64_t K, bool layer)
{
    double nb = (double)batch, db = g->p->dtype_bytes, fl = nb * 2.0 * (double)M * (double)N * (double)K;
    double t[3];
    gemm_passes(g, batch, M, N, K, layer, t);
    b->fwd_s += t[0];
    b->gemm_fwd_s += t[0];
    b->ig_s += t[1];
    b->gemm_ig_s += t[1];
    b->wg_s += t[2];
    b->fwd_flops += fl;
    b->ig_flops += fl;
    b->wg_flops += fl;
    b->fwd_bytes += nb * db * ((double)M * (double)K + (double)K * (double)N + (double)M * (double)N);
    b->bwd_bytes += nb * 2 * db * ((double)M * (double)K + (double)K * (double)N + (double)M * (double)N);
    b->params += nb * (double)K * (double)N;
}

static void gemm_b(const Gen *g, Block *b, int64_t batch, int64_t M, int64_t N, int64_t K)
{
    gemm_as(g, b, batch, M, N, K, true);
}

/* dst += k x src for the summed costs (times, FLOPs, bytes, parameters). */
static void block_add(Block *dst, const Block *src, double k)
{
    dst->fwd_s += k * src->fwd_s;
    dst->ig_s += k * src->ig_s;
    dst->wg_s += k * src->wg_s;
    dst->gemm_fwd_s += k * src->gemm_fwd_s;
    dst->gemm_ig_s += k * src->gemm_ig_s;
    dst->fwd_flops += k * src->fwd_flops;
    dst->ig_flops += k * src->ig_flops;
    dst->wg_flops += k * src->wg_flops;
    dst->fwd_bytes += k * src->fwd_bytes;
    dst->bwd_bytes += k * src->bwd_bytes;
    dst->params += k * src->params;
}

/* The forward time of a transformer-layer GEMM alone (recompute). */
static double gemm_fwd_s(const Gen *g, int64_t M, int64_t N, int64_t K)
{
    Block x = {0};
    gemm_as(g, &x, 1, M, N, K, true);
    return x.fwd_s;
}

static void gemm(const Gen *g, Block *b, int64_t M, int64_t N, int64_t K)
{
    gemm_as(g, b, 1, M, N, K, true);
}

/* A memory-bound kernel moving fb bytes forward and bb backward (its
 * gradient kernel), as the simulator charges it (src/sim/cost.c mem). */
static void mem2(const Gen *g, Block *b, double fb, double bb, double fwd_flops)
{
    b->fwd_s += g->c->mem_s(g->c->ctx, fb);
    b->ig_s += g->c->mem_s(g->c->ctx, bb);
    b->fwd_bytes += fb;
    b->bwd_bytes += bb;
    b->fwd_flops += fwd_flops;
    b->ig_flops += fwd_flops;
}

/* Norm (2 / 3 tensor passes; eager RMSNorm, upcast to fp32 and five
 * kernels: 18 / 36), residual add (3 / 3) and dropout (2.5 / 2.5, when the
 * model's hidden dropout is positive)
 * of one half layer on th bytes of the rank's tokens (T/TP under SP): the
 * simulator's half_layer_mem. */
static void half_layer(const Gen *g, Block *b, double th, double elems)
{
    if (g->o->eager_elementwise) mem2(g, b, 18 * th, 36 * th, 5.0 * elems);
    else mem2(g, b, 2 * th, 3 * th, 5.0 * elems);
    mem2(g, b, 3 * th, 3 * th, 0);
    if (g->m->dropout) mem2(g, b, 2.5 * th, 2.5 * th, 0);
}

void wl_gen_layer_costs(Gen *g)
{
    const WlModelDims *m = g->m;
    const WlPlanDims *p = g->p;
    int64_t tp = p->tp, S = p->seq / p->cp, B = p->micro_batch, T = B * S, H = m->hidden;
    int64_t D = m->head_dim > 0 ? m->head_dim : H / m->heads;
    int64_t A = m->heads / tp, G = (m->kv_heads > 0 ? m->kv_heads : m->heads) / tp;
    if (G < 1) G = 1;
    double db = p->dtype_bytes, tok = (double)T * (double)H * db;
    int64_t Tsp = p->sp ? T / tp : T;                          /* tokens of the norms, residuals */
    double th = (double)Tsp * (double)H * db, el = (double)Tsp * (double)H;
    /* attention: norm, QKV (MLA: down/up projections), core, projection */
    Block *a = &g->attn;
    half_layer(g, a, th, el);
    bool eager = g->o->eager_elementwise;
    if (m->rope) { /* rotary on q and k (eager complex RoPE: upcast, multiply, downcast) */
        double qk = (eager ? 10.0 : 2.0) * (double)T * (double)((A + G) * D) * db;
        mem2(g, a, qk, qk, 0);
    }
    int64_t dv = D;
    if (m->kv_lora_rank > 0) {
        D = m->qk_nope_dim + m->qk_rope_dim; /* q.k width per head */
        dv = m->v_head_dim;
        if (m->q_lora_rank > 0) {
            gemm(g, a, T, m->q_lora_rank, H);
            gemm(g, a, T, A * D, m->q_lora_rank);
        } else {
            gemm(g, a, T, A * D, H);
        }
        gemm(g, a, T, m->kv_lora_rank + m->qk_rope_dim, H);
        gemm(g, a, T, A * (m->qk_nope_dim + dv), m->kv_lora_rank);
    } else if (eager) { /* separate wq, wk, wv */
        gemm(g, a, T, A * D, H);
        gemm(g, a, T, G * D, H);
        gemm(g, a, T, G * D, H);
    } else {
        gemm(g, a, T, (A + 2 * G) * D, H);
    }
    /* causal core over the whole sequence; with CP each rank holds 2 of the
     * 2cp load-balanced chunks (Megatron), so its share of the causal work
     * is cp times one causal S x S block, as the simulator counts it; after
     * the all-to-all (Ulysses) whole sequences over A/cp heads instead */
    double core_f, core_b;
    if (!p->flash) {
        /* unfused (Megatron's local core, --no-flash): Q K^T and (scores) V
         * as batched GEMMs at the activation dtype, the fused
         * scale-mask-softmax (2 / 3 passes over the scores) and, when the
         * model has one, the attention dropout (2.5 / 2.5), on this rank's S queries
         * against the whole S x cp keys (the simulator's rule) */
        int64_t Sf = S * p->cp;
        double q[3], v[3], sc = (double)(B * A) * (double)S * (double)Sf * db;
        gemm_passes(g, B * A, S, Sf, D, false, q);
        gemm_passes(g, B * A, S, dv, Sf, false, v);
        core_f = q[0] + v[0] + g->c->mem_s(g->c->ctx, 2 * sc);
        core_b = q[1] + q[2] + v[1] + v[2] + g->c->mem_s(g->c->ctx, 3 * sc);
        if (m->attn_dropout) {
            core_f += g->c->mem_s(g->c->ctx, 2.5 * sc);
            core_b += g->c->mem_s(g->c->ctx, 2.5 * sc);
        }
    } else if (p->cp > 1 && g->o->cp_comm == WL_CP_A2A) {
        core_f = g->c->attn_s(g->c->ctx, B, A / p->cp, S * p->cp, S * p->cp, D, true, false);
        core_b = g->c->attn_s(g->c->ctx, B, A / p->cp, S * p->cp, S * p->cp, D, true, true);
    } else {
        core_f = (double)p->cp * g->c->attn_s(g->c->ctx, B, A, S, S, D, true, false);
        core_b = (double)p->cp * g->c->attn_s(g->c->ctx, B, A, S, S, D, true, true);
    }
    double core_fl = 2.0 * (double)B * (double)A * (double)S * (double)(S * p->cp) * (double)D;
    a->fwd_s += core_f;
    a->ig_s += core_b;
    g->core_f = core_f;
    g->core_b = core_b;
    a->fwd_flops += core_fl;
    a->ig_flops += 2.5 * core_fl;
    double qkv_p = a->params;
    gemm(g, a, T, H, A * dv);
    a->grad_t[0] = a->params - qkv_p; /* output projection, then QKV + norm */
    if (eager) { /* GQA repeat_kv copies of K and V; the output made contiguous */
        double kv = G < A ? 2.0 * (double)T * (double)(A * D) * db * 2.0 : 0.0, o = 2.0 * (double)T * (double)(A * dv) * db;
        mem2(g, a, kv + o, kv + o, 0);
    }
    a->params += 2.0 * (double)H; /* norm */
    a->grad_t[1] = a->params - a->grad_t[0];
    if (p->recompute == WL_RECOMPUTE_SELECTIVE) a->recompute_s = core_f;
    /* dense MLP: norm, fc1 (gate+up for SwiGLU), activation, fc2 */
    int64_t F = m->ffn / tp;
    Block *f = &g->mlp;
    half_layer(g, f, th, el);
    bool split13 = eager && m->swiglu; /* eager: w1 and w3 separate, silu then multiply */
    if (split13) {
        gemm(g, f, T, F, H);
        gemm(g, f, T, F, H);
    } else {
        gemm(g, f, T, F * (m->swiglu ? 2 : 1), H);
    }
    double act = (double)T * (double)F * db; /* GeLU 2 / 3 passes, SwiGLU 3 / 5 (eager 5 / 8) */
    mem2(g, f, act * (split13 ? 5.0 : m->swiglu ? 3.0 : 2.0), act * (split13 ? 8.0 : m->swiglu ? 5.0 : 3.0),
         8.0 * (double)T * (double)F);
    double fc1_p = f->params;
    gemm(g, f, T, H, F);
    f->params += 2.0 * (double)H;
    f->grad_t[0] = f->params - fc1_p - 2.0 * (double)H; /* fc2, then fc1 + norm */
    f->grad_t[1] = f->params - f->grad_t[0];
    /* MoE MLP, as the simulator costs it: router over the tokens this rank
     * routes (T/TP under SP), the local experts (E/EP of them, balanced) as
     * one batched GEMM over the token-expert pairs this rank computes
     * (tokens x K x ETP) at width moe_ffn/ETP, the activation and the
     * permute/unpermute traffic, then the shared experts as a dense MLP */
    if (m->experts > 0) {
        Block *e = &g->moe;
        int64_t etp = p->etp > 0 ? p->etp : tp, EF = (m->moe_ffn > 0 ? m->moe_ffn : m->ffn) / etp;
        int64_t rt = p->sp ? T / tp : T, local = m->experts / (p->ep > 0 ? p->ep : 1);
        if (local < 1) local = 1;
        double pairs = (double)rt * (double)m->topk * (double)etp;
        int64_t me = (int64_t)ceil(pairs / (double)local);
        half_layer(g, e, th, el);
        gemm(g, e, rt, m->experts, H);
        double p0 = e->params;
        /* one grouped GEMM per projection, or SequentialMLP: each local
         * expert's fc1, activation and fc2 on its own */
        int64_t nk = g->o->sequential_experts ? local : 1;
        double ea = pairs * (double)EF * db / (double)nk;
        Block one = {0}; /* the grouped experts, or one of them: costed once */
        gemm_b(g, &one, local / nk, me, EF * (m->swiglu ? 2 : 1), H);
        gemm_b(g, &one, local / nk, me, H, EF);
        mem2(g, &one, ea * (m->swiglu ? 3.0 : 2.0), ea * (m->swiglu ? 5.0 : 3.0), 8.0 * pairs * (double)EF / (double)nk);
        block_add(e, &one, (double)nk);
        e->eparams = e->params - p0;
        e->egrad_t[0] = (double)local * (double)H * (double)EF; /* all local fc2, then fc1 */
        e->egrad_t[1] = e->eparams - e->egrad_t[0];
        mem2(g, e, 4.0 * pairs * (double)H * db, 4.0 * pairs * (double)H * db, 0); /* permute / unpermute */
        if (m->shared_experts > 0) {
            int64_t SF = (m->moe_ffn > 0 ? m->moe_ffn : m->ffn) * m->shared_experts / tp;
            gemm(g, e, T, SF * (m->swiglu ? 2 : 1), H);
            double sa = (double)T * (double)SF * db;
            mem2(g, e, sa * (m->swiglu ? 3.0 : 2.0), sa * (m->swiglu ? 5.0 : 3.0), 8.0 * (double)T * (double)SF);
            gemm(g, e, T, H, SF);
        }
        e->grad_t[0] = e->params - e->eparams; /* router + shared experts, as one */
    }
    if (p->recompute == WL_RECOMPUTE_FULL) {
        a->recompute_s = a->fwd_s;
        g->mlp.recompute_s = g->mlp.fwd_s;
        g->moe.recompute_s = g->moe.fwd_s;
    }
    /* embedding: gather rows (+ position add); backward scatters into the table */
    Block *em = &g->embed;
    mem2(g, em, 2 * tok, 0, 0);                                       /* gather rows (+ position add) */
    em->wg_s = g->c->mem_s(g->c->ctx, (double)T * (double)H * 4.0); /* scatter-add into the fp32 grad */
    em->params = (double)(m->vocab_padded / tp) * (double)H + (m->learned_pos ? (double)(S * p->cp) * (double)H : 0);
    /* head: final norm, LM head, vocab-parallel cross-entropy */
    Block *hd = &g->head;
    mem2(g, hd, 2 * th, 3 * th, 5.0 * el); /* final norm */
    gemm_as(g, hd, 1, T, m->vocab_padded / tp, H, false); /* not a TE module: the activation dtype */
    /* fp32 vocab-parallel cross-entropy: ~14 B per logit forward, 28 B backward */
    double logits = (double)T * (double)(m->vocab_padded / tp);
    mem2(g, hd, logits * (db + 12.0), 2.0 * logits * (db + 12.0), 5.0 * logits);
    if (m->tied && p->pp == 1) hd->params -= (double)(m->vocab_padded / tp) * (double)H;
    /* ZeRO-3 / FSDP, on the compute stream: copy-out of the gathered flat
     * buffer into the parameters before each use (read + write), copy-in of
     * the gradients cast to the reduction dtype before the reduce-scatter
     * (under full recompute the backward's copy-out is the recompute's) */
    if (p->zero >= 3) {
        double gr = wl_gen_grad_bytes(g), out_b = p->recompute == WL_RECOMPUTE_FULL ? 0.0 : 2.0 * db;
        Block *bl[5] = {a, f, &g->moe, em, hd};
        for (int i = 0; i < 5; i++) {
            double sh = fsdp_sharded(g, bl[i]->params, bl[i]->eparams); /* what is gathered */
            if (!(sh > 0)) continue;
            bl[i]->fwd_s += g->c->mem_s(g->c->ctx, 2.0 * sh * db);
            bl[i]->wg_s += g->c->mem_s(g->c->ctx, sh * ((i >= 3 ? 0.0 : out_b) + db + gr));
        }
    }
    if (p->recompute == WL_RECOMPUTE_SELECTIVE && g->o->selective_ops && m->kv_lora_rank == 0) {
        /* op-level SAC, as the simulator counts it: wk, wo and w3 (GeLU
         * MLP: fc2) again, with every non-matmul op (ZeRO-3 copies
         * included); the attention outputs are saved. MoE layers recompute
         * the attention core only (the simulator's rule): a model with
         * experts keeps that for all its layers. */
        if (m->experts == 0) {
            a->recompute_s = gemm_fwd_s(g, T, G * D, H) + gemm_fwd_s(g, T, H, A * dv) + (a->fwd_s - a->gemm_fwd_s - core_f);
            f->recompute_s = gemm_fwd_s(g, T, m->swiglu ? F : H, m->swiglu ? H : F) + (f->fwd_s - f->gemm_fwd_s);
        }
    }
    g->tpc = (double)B * (double)S * (double)H * db;
    /* BF16 optimizer (DeepSpeed): every micro-batch's bf16 gradients added
     * into the fp32 ones after its backward (cast: read 2 write 4; add: read
     * 8 write 4; bf16 zeroed: write 2), as the simulator charges it */
    if (g->o->fp32_grad_accum) {
        Block *bl[5] = {a, f, &g->moe, em, hd};
        for (int i = 0; i < 5; i++)
            if (bl[i]->params > 0) bl[i]->wg_s += g->c->mem_s(g->c->ctx, 20.0 * bl[i]->params);
    }
    /* the pipeline message: 1/TP of the activation per TP rank (SP-sharded,
     * or without SP Megatron's scatter/gather across the boundary,
     * Narayanan et al. 2021 section 4.1; the simulator's rule), or
     * (DeepSpeed's pipe) the whole activation on every TP rank */
    g->act_bytes = g->tpc / (!g->o->ds_pipe ? (double)tp : 1.0);
}
