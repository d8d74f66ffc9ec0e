/*
 * layer_cost.c — what one transformer layer (dense or MoE), the embedding
 * and the LM head cost on one GPU for one micro-batch, with the hw model
 * (hw_gemm_time_s, hw_attention_time_s, hw_memory_time_s per kernel) and
 * the collective model; the overlap rules of TP, CP, EP and ZeRO-3 within a
 * layer; and the layer-cost cache a sweep reuses (docs/sweep.md). cost.c
 * assembles chunks from these. Legend as in cost.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

double sim_coll(const Ctx *x, TsColl c, double bytes, const PlanGroupInfo *g, const char *kind)
{
    return hw_coll_time_s(x->net, c, bytes, g->size, g->nodes, 1, kind);
}

/* GEMM (M x K) @ (K x N) at dtype dt: forward and backward (dgrad + wgrad)
 * times, tensor-core work scaled by x->tc (sustained clock, stragglers). */
static void gemm_as(const Ctx *x, TsDtype dt, int64_t batch, int64_t M, int64_t N, int64_t K, double *f, double *b)
{
    *f += x->tc * hw_gemm_time_s(x->hw, batch, M, N, K, dt);
    *b += x->tc * (hw_gemm_time_s(x->hw, batch, M, K, N, dt) + hw_gemm_time_s(x->hw, batch, K, N, M, dt));
    if (dt == TS_DTYPE_FP8) {
        /* Transformer Engine FP8 recipe: the input is cast to fp8 with an
         * amax (read 2 B, write 1 B per element); in backward the output
         * gradient is cast and transposed (read 2, write 1 + 1) and the saved
         * input transposed for wgrad (read 1, write 1). Weight casts are
         * cached across micro-batches and not counted. */
        double mk = (double)batch * (double)M * (double)K, mn = (double)batch * (double)M * (double)N;
        *f += hw_memory_time_s(x->hw, 3 * mk);
        *b += hw_memory_time_s(x->hw, 4 * mn) + hw_memory_time_s(x->hw, 2 * mk);
    }
}

/* A transformer-layer GEMM: at the plan's GEMM dtype (fp8 under FP8). */
static void gemm(const Ctx *x, int64_t batch, int64_t M, int64_t N, int64_t K, double *f, double *b)
{
    gemm_as(x, x->dt, batch, M, N, K, f, b);
}

/* A memory-bound kernel moving `fwd` bytes in forward and `bwd` bytes in
 * backward (its gradient kernel; 0 = none). Per-kernel traffic in units of
 * one activation tensor read or written (docs/simulate.md, "memory-bound
 * kernels"): norm 2 fwd / 3 bwd (read x, dy, write dx); residual add 3 / 3
 * (the backward adds the branch gradient into the residual stream); dropout
 * 2.5 / 2.5 (1-byte mask); GeLU 2 / 3; SwiGLU 3 / 5; RoPE 2 / 2; fused
 * scale-mask-softmax 2 / 3 (Megatron's fused kernel). */
static void mem(const Ctx *x, double fwd, double bwd, double *f, double *b)
{
    *f += hw_memory_time_s(x->hw, fwd);
    *b += hw_memory_time_s(x->hw, bwd);
}

/* Norm, dropout and residual add of one half-layer (attention or MLP) on the
 * Tsp tokens of this rank: norm 2/3, residual 3/3, dropout 2.5/2.5 (only
 * when the model's hidden dropout is positive: p = 0 runs no kernel). */
static void half_layer_mem(const Ctx *x, double *f, double *b)
{
    double th = (double)x->Tsp * (double)x->m->hidden * x->ab;
    if (x->o->eager_elementwise) /* x.float() -> pow -> mean -> x*rsqrt -> type_as -> *w: 36 B/elem */
        mem(x, 18 * th, 36 * th, f, b);
    else
        mem(x, 2 * th, 3 * th, f, b);
    mem(x, 3 * th, 3 * th, f, b);
    if (x->m->hidden_dropout > 0) mem(x, 2.5 * th, 2.5 * th, f, b);
}

/* Attention block: projections, core, norms; fills gemm/attn/mem parts. */
static void attention(const Ctx *x, LayerCost *lc)
{
    const ModelSpec *m = x->m;
    int64_t t = x->t, H = m->hidden, A = m->heads, G = m->kv_heads, D = m->head_dim, T = x->T;
    double gf = 0, gb = 0, af = 0, ab = 0, mf = 0, mb = 0;
    int64_t dqk = D, dv = D;
    if (m->kv_lora_rank > 0) { /* MLA (DeepSeek): down/up projections */
        dqk = m->qk_nope_dim + m->qk_rope_dim;
        dv = m->v_head_dim;
        if (m->q_lora_rank > 0) {
            gemm(x, 1, T, m->q_lora_rank, H, &gf, &gb);
            gemm(x, 1, T, A * dqk / t, m->q_lora_rank, &gf, &gb);
        } else {
            gemm(x, 1, T, A * dqk / t, H, &gf, &gb);
        }
        gemm(x, 1, T, m->kv_lora_rank + m->qk_rope_dim, H, &gf, &gb);
        gemm(x, 1, T, A * (m->qk_nope_dim + dv) / t, m->kv_lora_rank, &gf, &gb);
        lc->params += (double)(H * (m->q_lora_rank ? m->q_lora_rank : 0) +
                               (m->q_lora_rank ? m->q_lora_rank : H) * A * dqk / t +
                               H * (m->kv_lora_rank + m->qk_rope_dim) +
                               m->kv_lora_rank * A * (m->qk_nope_dim + dv) / t);
    } else if (x->o->eager_elementwise) {
        /* eager model code (torchtitan Llama): wq, wk, wv are separate
         * nn.Linear modules, three GEMMs instead of Megatron's fused QKV */
        gemm(x, 1, T, A * D / t, H, &gf, &gb);
        gemm(x, 1, T, G * D / t, H, &gf, &gb);
        gemm(x, 1, T, G * D / t, H, &gf, &gb);
        lc->params += (double)(H * (A + 2 * G) * D / t);
    } else {
        gemm(x, 1, T, (A + 2 * G) * D / t, H, &gf, &gb);
        lc->params += (double)(H * (A + 2 * G) * D / t);
    }
    gemm(x, 1, T, H, A * dv / t, &gf, &gb);
    lc->grad_t[3] = lc->params; /* QKV (MLA: its projections), then the output projection + norm */
    lc->grad_t[2] = (double)(A * dv * H / t) + 2.0 * (double)H;
    lc->params += lc->grad_t[2];
    lc->fwd_flops_token += 2.0 * lc->params * (double)t; /* approx: projections, unsharded */

    /* core: per CP rank, c blocks of (S/c x S/c) causal-balanced; with the
     * all-to-all exchange whole sequences over heads/c instead */
    int64_t Ah = A / t, c = x->p->cp, Sl = x->Sl;
    if (x->p->flash_attn && c > 1 && x->o->cp_comm == SIM_CP_A2A) {
        af = x->tc * hw_attention_time_s(x->hw, x->B, Ah / c, x->S, x->S, dqk, true, false, x->adt);
        ab = x->tc * hw_attention_time_s(x->hw, x->B, Ah / c, x->S, x->S, dqk, true, true, x->adt);
    } else if (x->p->flash_attn) {
        af = x->tc * (double)c * hw_attention_time_s(x->hw, x->B, Ah, Sl, Sl, dqk, true, false, x->adt);
        ab = x->tc * (double)c * hw_attention_time_s(x->hw, x->B, Ah, Sl, Sl, dqk, true, true, x->adt);
    } else { /* unfused: two batched GEMMs, softmax/mask/dropout over S^2 scores */
        double f2 = 0, b2 = 0;
        int64_t S = x->S;
        gemm_as(x, x->adt, x->B * Ah, Sl, S, dqk, &f2, &b2);
        gemm_as(x, x->adt, x->B * Ah, Sl, dv, S, &f2, &b2);
        double sc = (double)(x->B * Ah) * (double)Sl * (double)S * x->ab;
        mem(x, 2 * sc, 3 * sc, &f2, &b2); /* fused scale+mask+softmax */
        if (m->attn_dropout > 0) mem(x, 2.5 * sc, 2.5 * sc, &f2, &b2); /* dropout */
        af = f2;
        ab = b2;
    }
    /* full (non-causal) attention FLOPs per token: QK^T and AV, 2 FLOPs/MAC */
    lc->fwd_flops_token += 4.0 * (double)x->S * (double)A * (double)dqk;
    lc->attn_fwd += af;
    lc->attn_bwd += ab;
    lc->gemm_fwd += gf;
    lc->gemm_bwd += gb;
    /* norm + residual (+dropout) on Tsp tokens; rope on q,k */

    half_layer_mem(x, &mf, &mb);
    if (m->pos == MODEL_POS_ROPE) {
        /* eager complex RoPE: upcast, complex multiply, downcast (20 B/elem) */
        double qk = (x->o->eager_elementwise ? 10.0 : 2.0) * (double)T * (double)((A + G) * D / t) * x->ab;
        mem(x, qk, qk, &mf, &mb);
    }
    if (x->o->eager_elementwise) {
        /* GQA repeat_kv copies of K and V, and the attention output made
         * contiguous after the head transpose */
        double kv = G < A ? 2.0 * (double)T * (double)(A * D / t) * x->ab * 2.0 : 0.0;
        double o = 2.0 * (double)T * (double)(A * dv / t) * x->ab;
        mem(x, kv + o, kv + o, &mf, &mb);
    }
    lc->fwd += gf + af + mf;
    lc->bwd += gb + ab + mb;
}

/* Dense MLP of width ffn (per TP rank ffn/t) on T tokens. */
static void mlp(const Ctx *x, int64_t tokens, int64_t ffn, int64_t tp, LayerCost *lc, double *gf, double *gb)
{
    int64_t H = x->m->hidden;
    double mf = 0, mb = 0;
    if (x->gated && x->o->eager_elementwise) { /* eager: w1 and w3 are separate nn.Linear */
        gemm(x, 1, tokens, ffn / tp, H, gf, gb);
        gemm(x, 1, tokens, ffn / tp, H, gf, gb);
    } else {
        gemm(x, 1, tokens, (x->gated ? 2 : 1) * ffn / tp, H, gf, gb);
    }
    gemm(x, 1, tokens, H, ffn / tp, gf, gb);
    double act = (double)tokens * (double)(ffn / tp) * x->ab;
    if (x->gated && x->o->eager_elementwise) /* silu(a) then * b: two kernels */
        mem(x, act * 5.0, act * 8.0, &mf, &mb);
    else
        mem(x, act * (x->gated ? 3.0 : 2.0), act * (x->gated ? 5.0 : 3.0), &mf, &mb);
    lc->fwd += mf;
    lc->bwd += mb;
    double p = (double)((x->gated ? 3 : 2) * H * ffn / tp);
    lc->params += p;
    lc->fwd_flops_token += 2.0 * p * (double)tp;
}

/* The time a ZeRO-3 layer's gathers (and its gradients' reduce-scatter) can
 * hide under, one layer ahead on the DP stream: the layer's whole forward,
 * compute and its exposed TP / CP / EP communication (other links), and its
 * whole backward, the recompute included. */
static void fsdp_window(const LayerCost *lc, double *wf, double *wb)
{
    *wf = lc->fwd + lc->tp_f + lc->cp_f + lc->ep_f;
    *wb = lc->bwd + lc->tp_b + lc->cp_b + lc->ep_b + lc->recompute;
}

/* The compute share of those windows: what is hidden there slows compute
 * only where it overlaps compute (the rest of the window is exposed TP / CP /
 * EP traffic on other links). Full recompute's forward is compute, its
 * collectives are not. */
static void fsdp_compute_share(const ParallelPlan *p, const LayerCost *lc, double wf, double wb, double *cf,
                               double *cb)
{
    double rc = p->recompute == PLAN_RECOMPUTE_FULL ? lc->fwd : lc->recompute;
    *cf = wf > 0 ? lc->fwd / wf : 0;
    *cb = wb > 0 ? (lc->bwd + rc) / wb : 0;
}

static void layer_cost(const Ctx *x, bool moe, LayerCost *lc)
{
    const ModelSpec *m = x->m;
    const ParallelPlan *p = x->p;
    memset(lc, 0, sizeof *lc);
    attention(x, lc);
    int64_t H = m->hidden, t = x->t;
    double gf = 0, gb = 0;
    /* residual + norm of the MLP half */
    double mf = 0, mb = 0;
    half_layer_mem(x, &mf, &mb);
    lc->fwd += mf;
    lc->bwd += mb;
    double ep_f = 0, attn_p = lc->params;
    if (!moe) {
        mlp(x, x->T, m->ffn, t, lc, &gf, &gb);
        lc->grad_t[0] = (double)(H * m->ffn / t); /* fc2, then fc1 */
    } else {
        int64_t E = m->experts, K = m->topk, ep = p->ep, etp = p->etp;
        int64_t tok = p->sp ? x->Tsp : x->T;            /* tokens this rank routes */
        double pairs = (double)tok * (double)K * (double)etp; /* token-expert pairs it computes */
        int64_t local = E / ep > 0 ? E / ep : 1;
        int64_t me = (int64_t)ceil(pairs / (double)local);
        gemm(x, 1, tok, E, H, &gf, &gb); /* router */
        /* the local experts' fc1 and fc2: one grouped GEMM each over the
         * `local` experts, or (SequentialMLP) `local` GEMMs one after
         * another, each expert's activation its own kernel */
        bool seq = x->o->sequential_experts;
        double ef = 0, eb = 0, nk = seq ? (double)local : 1.0;
        gemm(x, seq ? 1 : local, me, (x->gated ? 2 : 1) * m->moe_ffn / etp, H, &ef, &eb);
        gemm(x, seq ? 1 : local, me, H, m->moe_ffn / etp, &ef, &eb);
        ef *= nk;
        eb *= nk;
        /* expert activation and permute / unpermute traffic (these were
         * computed but never added to the layer before the workload round
         * trip showed the generator 5.5 % slower on Mixtral) */
        double ea = pairs * (double)(m->moe_ffn / etp) * x->ab, ef2 = 0, eb2 = 0;
        mem(x, ea * (x->gated ? 3.0 : 2.0) / nk, ea * (x->gated ? 5.0 : 3.0) / nk, &ef2, &eb2);
        ef2 *= nk;
        eb2 *= nk;
        mem(x, 4.0 * pairs * (double)H * x->ab, 4.0 * pairs * (double)H * x->ab, &ef2, &eb2);
        lc->fwd += ef2;
        lc->bwd += eb2;
        gf += ef;
        gb += eb;
        double ex = (double)((x->gated ? 3 : 2) * H * m->moe_ffn / etp) * (double)local;
        lc->params += ex + (double)(H * E);
        lc->expert_params += ex;
        lc->fwd_flops_token += 2.0 * (double)K * (double)((x->gated ? 3 : 2) * H * m->moe_ffn) + 2.0 * (double)(H * E);
        if (m->shared_experts > 0) mlp(x, x->T, m->moe_ffn * m->shared_experts, t, lc, &gf, &gb);
        lc->egrad_t[0] = (double)(H * m->moe_ffn / etp) * (double)local; /* all local fc2, then fc1 */
        lc->egrad_t[1] = ex - lc->egrad_t[0];
        /* EP all-to-all: dispatch + combine forward, the same backward */
        if (ep > 1) {
            double a2a = hw_alltoall_time_s(x->net, (double)tok * (double)K * (double)H * x->ab, ep, x->epg.nodes);
            ep_f = 2 * a2a;
        }
    }
    /* DP bucket tensors in backward order (dp_buckets.c): the MLP (MoE:
     * router and shared experts as one), then the attention */
    double mlp_p = lc->params - lc->expert_params - attn_p;
    if (moe) lc->grad_t[0] = mlp_p;
    lc->grad_t[1] = mlp_p - lc->grad_t[0];
    lc->n_grad_t = 4;
    lc->gemm_fwd += gf;
    lc->gemm_bwd += gb;
    lc->fwd += gf;
    lc->bwd += gb;
    lc->ep_f = ep_f;
    lc->ep_b = ep_f;

    /* TP: 2 all-reduces per pass, or 2 all-gathers + 2 reduce-scatters with SP */
    double X = (double)x->T * (double)H * x->ab, tpc = 0;
    if (t > 1)
        tpc = p->sp ? 2 * (sim_coll(x, TS_COLL_ALLGATHER, X, &x->tpg, "tp") + sim_coll(x, TS_COLL_REDUCESCATTER, X, &x->tpg, "tp"))
                    : 2 * sim_coll(x, TS_COLL_ALLREDUCE, X, &x->tpg, "tp");
    double sig = x->o->overlap_slowdown;
    if (p->tp_overlap && tpc > 0) {
        /* each block's all-gather and reduce-scatter (or all-reduce), half
         * of tpc, hide under that block's own GEMMs (Transformer Engine
         * overlaps a GEMM with its own communication), not under the
         * layer's: the attention GEMMs are gf short of the layer's */
        double half = tpc / 2, af = lc->gemm_fwd - gf, ab = lc->gemm_bwd - gb;
        double hf = fmin(half, af) + fmin(half, gf), hb = fmin(half, ab) + fmin(half, gb);
        lc->tp_f = tpc - hf;
        lc->tp_b = tpc - hb;
        lc->slow += sig * (hf + hb);
    } else {
        lc->tp_f = lc->tp_b = tpc;
    }
    /* CP: (c-1) ring steps of the local K and V, hidden under the attention;
     * or an exposed all-gather (backward: again, and a reduce-scatter of the
     * K/V gradients); or all-to-alls of Q, K, V and of the output, forward
     * and backward (Ulysses) */
    if (p->cp > 1) {
        int64_t kvd = m->kv_lora_rank > 0 ? m->heads * (m->qk_nope_dim + m->qk_rope_dim + m->v_head_dim) / 2
                                          : m->kv_heads * m->head_dim;
        double kv = 2.0 * (double)(x->B * x->Sl) * (double)(kvd / (kvd >= t ? t : 1)) * x->ab;
        if (x->o->cp_comm == SIM_CP_ALLGATHER) {
            double ag = sim_coll(x, TS_COLL_ALLGATHER, kv * (double)p->cp, &x->cpg, "cp");
            lc->cp_f = ag;
            lc->cp_b = ag + sim_coll(x, TS_COLL_REDUCESCATTER, kv * (double)p->cp, &x->cpg, "cp");
        } else if (x->o->cp_comm == SIM_CP_A2A) {
            int64_t qd = m->kv_lora_rank > 0 ? m->heads * (m->qk_nope_dim + m->qk_rope_dim) : m->heads * m->head_dim;
            int64_t od = m->kv_lora_rank > 0 ? m->heads * m->v_head_dim : m->heads * m->head_dim;
            double tok = (double)(x->B * x->Sl);
            double q = tok * (double)(qd / t) * x->ab, o = tok * (double)(od / t) * x->ab;
            lc->cp_f = lc->cp_b = hw_alltoall_time_s(x->net, q + kv, p->cp, x->cpg.nodes) +
                                  hw_alltoall_time_s(x->net, o, p->cp, x->cpg.nodes);
        } else {
            /* the ring's cp - 1 steps move what an all-gather of the K/V
             * blocks moves, over the same links: costed as that all-gather
             * (as the task graph's replay costs its "cp.kv") */
            double step = sim_coll(x, TS_COLL_ALLGATHER, kv * (double)p->cp, &x->cpg, "cp");
            double hid_f = fmin(step, lc->attn_fwd * (double)(p->cp - 1) / (double)p->cp);
            double hid_b = fmin(2 * step, lc->attn_bwd * (double)(p->cp - 1) / (double)p->cp);
            lc->cp_f = step - hid_f;
            lc->cp_b = 2 * step - hid_b;
            lc->slow += sig * (hid_f + hid_b);
        }
    }
    /* ZeRO-3 / FSDP: gather this layer's parameters in forward and backward,
     * reduce-scatter its gradients, every micro-batch; prefetch hides them
     * under the layer's compute where they fit. */
    if (p->zero >= 3 && (x->dpg.size > 1 || x->edpg.size > 1)) {
        /* dense parameters are sharded over DP, expert parameters over the
         * expert-data-parallel group (EDP = DP*CP/EP) */
        double gr = x->o->fp32_grad_reduce ? 4.0 : x->ab;
        double dense_p = x->dpg.size > 1 ? lc->params - lc->expert_params : 0;
        double exp_p = x->edpg.size > 1 ? lc->expert_params : 0;
        double ag = 0, rs = 0;
        if (dense_p > 0) {
            ag += sim_coll(x, TS_COLL_ALLGATHER, dense_p * x->ab, &x->dpg, "dp");
            rs += sim_coll(x, TS_COLL_REDUCESCATTER, dense_p * gr, &x->dpg, "dp");
        }
        if (exp_p > 0) {
            ag += sim_coll(x, TS_COLL_ALLGATHER, exp_p * x->ab, &x->edpg, "dp");
            rs += sim_coll(x, TS_COLL_REDUCESCATTER, exp_p * gr, &x->edpg, "dp");
        }
        /* copy-out of the gathered flat buffer into the parameters (read +
         * write) before each use, copy-in of the gradients (cast to the
         * reduction dtype) before the reduce-scatter: on the compute stream */
        double gp = dense_p + exp_p;
        double cf = 0, cb = 0;
        /* (under full recompute the backward's copy-out is the recompute's) */
        double out_b = p->recompute == PLAN_RECOMPUTE_FULL ? 0.0 : 2.0 * x->ab;
        mem(x, 2.0 * gp * x->ab, gp * (out_b + x->ab + gr), &cf, &cb);
        lc->fwd += cf;
        lc->bwd += cb;
        lc->fsdp_ag = ag;
        lc->fsdp_rs = rs;
    }
    /* recompute */
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE && x->o->selective_ops && !moe && m->kv_lora_rank == 0) {
        /* op-level SAC (torchtitan "selective op"): matmul outputs are saved
         * except every second one (wq wk wv wo w1 w3 w2 -> wk, wo, w3; GeLU
         * MLP: wk, wo, fc2), attention outputs are saved, every other op is
         * recomputed */
        double ef = 0, eb = 0;
        int64_t D = m->head_dim, Gk = m->kv_heads, F = m->ffn;
        gemm(x, 1, x->T, Gk * D / t, H, &ef, &eb);
        gemm(x, 1, x->T, H, m->heads * D / t, &ef, &eb);
        if (x->gated) gemm(x, 1, x->T, F / t, H, &ef, &eb);
        else gemm(x, 1, x->T, H, F / t, &ef, &eb);
        lc->recompute = ef + (lc->fwd - lc->gemm_fwd - lc->attn_fwd);
        double even = (double)(Gk * D * H + H * m->heads * D + F * H) / (double)t;
        lc->recompute_flops_token = 2.0 * even * (double)t;
    } else if (p->recompute == PLAN_RECOMPUTE_SELECTIVE) {
        lc->recompute = lc->attn_fwd;
        lc->recompute_flops_token = 4.0 * (double)x->S * (double)m->heads * (double)m->head_dim;
    } else if (p->recompute == PLAN_RECOMPUTE_FULL) {
        lc->recompute = lc->fwd + lc->tp_f + lc->cp_f + lc->ep_f;
        lc->recompute_flops_token = lc->fwd_flops_token;
    }
    /* ZeRO-3: what the layer's stream time does not cover is exposed */
    if (lc->fsdp_ag > 0 || lc->fsdp_rs > 0) {
        double wf, wb, ag = lc->fsdp_ag, rs = lc->fsdp_rs;
        fsdp_window(lc, &wf, &wb);
        double ef = fmax(0, ag - wf), eb = fmax(0, ag + rs - wb);
        lc->fsdp = ef + eb;
        double cf, cb;
        fsdp_compute_share(p, lc, wf, wb, &cf, &cb);
        lc->slow += sig * ((ag - ef) * cf + (ag + rs - eb) * cb);
    }
}

/* Embedding (first chunk) and final norm + LM head + loss (last chunk). */
static void edge_costs(const Ctx *x, double *emb_f, double *emb_b, double *emb_tp, double *head_f, double *head_b,
                       double *head_tp, double *emb_params, double *head_params)
{
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, t = x->t, V = model_padded_vocab(m, t), T = x->T;
    double th = (double)x->T * (double)H * x->ab, f = 0, b = 0, tp = 0;
    mem(x, 2 * th, 0, &f, &b); /* gather rows (+ position add) */
    b += hw_memory_time_s(x->hw, (double)T * (double)H * 4.0); /* scatter-add into the fp32 grad */
    if (t > 1) tp += x->p->sp ? sim_coll(x, TS_COLL_REDUCESCATTER, th, &x->tpg, "tp") : sim_coll(x, TS_COLL_ALLREDUCE, th, &x->tpg, "tp");
    *emb_f = f;
    *emb_b = b;
    *emb_tp = tp;
    *emb_params = (double)(V / t * H) + (m->pos == MODEL_POS_LEARNED ? (double)(m->max_positions * H) : 0);
    /* head */
    f = b = tp = 0;
    mem(x, 2 * (double)x->Tsp * (double)H * x->ab, 3 * (double)x->Tsp * (double)H * x->ab, &f, &b); /* final norm */
    /* the output layer is not a Transformer Engine module (Megatron-Core's
     * ColumnParallelLinear): it runs in bf16 even in FP8 training */
    gemm_as(x, x->adt, 1, T, V / t, H, &f, &b);
    double logits = (double)T * (double)(V / t);
    /* fp32 vocab-parallel cross-entropy: upcast, max, exp/sum, log-prob
     * (~14 B per logit) forward; softmax - one-hot and the downcast of the
     * logits gradient (~28 B) backward */
    mem(x, logits * (x->ab + 4.0 * 3.0), 2 * logits * (x->ab + 4.0 * 3.0), &f, &b);
    if (t > 1) {
        if (x->p->sp) tp += sim_coll(x, TS_COLL_ALLGATHER, th, &x->tpg, "tp");
        tp += 3 * sim_coll(x, TS_COLL_ALLREDUCE, (double)T * 4.0, &x->tpg, "tp"); /* vocab-parallel CE */
    }
    *head_f = f;
    *head_b = b;
    *head_tp = tp;
    *head_params = m->tied_embeddings && x->p->pp == 1 ? 0 : (double)(V / t * H);
}

/* ZeRO-3 / FSDP root unit of a stage (torchtitan: fully_shard on every block,
 * then on the whole model, so the embedding, final norm and output layer form
 * the root unit). FSDP2 keeps the root unsharded from forward to backward:
 * its all-gather opens the forward and its reduce-scatter closes the backward
 * (it fires from the end-of-backward callback), with no compute to hide
 * under. The stage's first block gathers behind it (only the embedding lookup
 * runs meanwhile) and its reduce-scatter overlaps only the embedding
 * backward: exposed too (the per-layer rule had hidden both). Adds to the
 * chunk's exposed FSDP time, compute (copy-out / copy-in of the root's
 * parameters) and overlap slow-down; returns the forward part. */
double sim_fsdp_root(const Ctx *x, double emb_params, double head_params, const LayerCost *first, SimChunkCost *c)
{
    double rp = emb_params + head_params, gr = x->o->fp32_grad_reduce ? 4.0 : x->ab, f = 0, b = 0;
    if (rp > 0) {
        f = sim_coll(x, TS_COLL_ALLGATHER, rp * x->ab, &x->dpg, "dp");
        b = sim_coll(x, TS_COLL_REDUCESCATTER, rp * gr, &x->dpg, "dp");
        double cf = 0, cb = 0;
        mem(x, 2.0 * rp * x->ab, rp * (x->ab + gr), &cf, &cb);
        c->compute_fwd_s += cf;
        c->compute_bwd_s += cb;
    }
    /* first block: forward gather and backward reduce-scatter exposed, the
     * backward re-gather still prefetched under the next block */
    double ag = first->fsdp_ag, rs = first->fsdp_rs, wf, wb;
    fsdp_window(first, &wf, &wb);
    double ef = fmax(0, ag - wf), eb = fmax(0, ag + rs - wb);
    double eb_new = rs + fmax(0, ag - wb);
    f += ag - ef;
    b += eb_new - eb;
    double sf, sb; /* take back what layer_cost charged the first block, as it charged it */
    fsdp_compute_share(x->p, first, wf, wb, &sf, &sb);
    c->slowdown_s -= x->o->overlap_slowdown * ((ag - ef) * sf + ((ag + rs - eb) - fmin(ag, wb)) * sb);
    if (c->slowdown_s < 0) c->slowdown_s = 0;
    c->fsdp_exposed_s += f + b;
    return f;
}

/* ---- layer-cost cache (sim_work_cache_costs) ---------------------------
 * layer_cost and edge_costs read the model, hw and net (by address), the
 * Ctx scalars (dtypes, tc, t, B, S, Sl; T, Tsp and ab follow from them and
 * sp), the plan knobs sp, cp, ep, etp, flash_attn, tp_overlap, zero >= 3,
 * recompute, pp == 1 (tied embeddings), the costing options below, and the
 * size / node span of the TP, CP, EP groups and, under ZeRO-3 only, of the
 * DP and expert-DP groups. The key holds exactly these; it is zeroed before
 * filling so it compares with memcmp. */
typedef struct CostKey {
    const void *m, *hw, *net;
    double tc, overlap_slowdown;
    int64_t t, B, S, Sl, cp, ep, etp;
    int64_t tp_size, tp_nodes, cp_nodes, ep_nodes, dp_size, dp_nodes, edp_size, edp_nodes;
    int32_t dt, adt, recompute;
    uint8_t sp, flash, tp_overlap, zero3, pp1, eager, selective_ops, fp32_grad, cp_comm, seq_experts;
} CostKey;

typedef struct CostEntry {
    CostKey key;
    bool valid;
    LayerCost dense, moe;
    double edge[8];
} CostEntry;

#define COST_CACHE_SIZE 1024 /* entries, direct-mapped: ~650 KB per work space */

typedef struct CostCache {
    int64_t hits, misses;
    CostEntry e[COST_CACHE_SIZE];
} CostCache;

static void cost_key(const Ctx *x, CostKey *k)
{
    const ParallelPlan *p = x->p;
    memset(k, 0, sizeof *k);
    k->m = x->m;
    k->hw = x->hw;
    k->net = x->net;
    k->tc = x->tc;
    k->overlap_slowdown = x->o->overlap_slowdown;
    k->t = x->t;
    k->B = x->B;
    k->S = x->S;
    k->Sl = x->Sl;
    k->cp = p->cp;
    k->ep = p->ep;
    k->etp = p->etp;
    k->tp_size = x->tpg.size;
    k->tp_nodes = x->tpg.nodes;
    k->cp_nodes = x->cpg.nodes;
    k->ep_nodes = x->epg.nodes;
    k->zero3 = p->zero >= 3;
    if (k->zero3) {
        k->dp_size = x->dpg.size;
        k->dp_nodes = x->dpg.nodes;
        k->edp_size = x->edpg.size;
        k->edp_nodes = x->edpg.nodes;
    }
    k->dt = (int32_t)x->dt;
    k->adt = (int32_t)x->adt;
    k->recompute = (int32_t)p->recompute;
    k->sp = p->sp;
    k->flash = p->flash_attn;
    k->tp_overlap = p->tp_overlap;
    k->pp1 = p->pp == 1;
    k->eager = x->o->eager_elementwise;
    k->selective_ops = x->o->selective_ops;
    k->fp32_grad = x->o->fp32_grad_reduce;
    k->cp_comm = (uint8_t)x->o->cp_comm;
    k->seq_experts = x->o->sequential_experts;
}

static size_t cost_hash(const CostKey *k)
{
    const unsigned char *b = (const unsigned char *)k;
    uint64_t h = 1469598103934665603ull; /* FNV-1a, 64-bit words */
    for (size_t i = 0; i + 8 <= sizeof *k; i += 8) {
        uint64_t v;
        memcpy(&v, b + i, 8);
        h = (h ^ v) * 1099511628211ull;
        h ^= h >> 29;
    }
    return (size_t)(h % COST_CACHE_SIZE);
}

/* Cost the layers and edges of x, through the cache of w when it is on. */
void sim_layer_costs(const Ctx *x, SimWork *w, LayerCost *dense, LayerCost *moe, double edge[8])
{
    void **slot = sim_work_cost_cache(w);
    CostEntry *e = NULL;
    CostKey k;
    if (slot) {
        if (!*slot) *slot = calloc(1, sizeof(CostCache));
        if (*slot) {
            CostCache *cc = *slot;
            cost_key(x, &k);
            e = &cc->e[cost_hash(&k)];
            if (e->valid && memcmp(&e->key, &k, sizeof k) == 0) {
                cc->hits++;
                *dense = e->dense;
                *moe = e->moe;
                memcpy(edge, e->edge, sizeof e->edge);
                return;
            }
            cc->misses++;
        }
    }
    layer_cost(x, false, dense);
    if (x->m->experts > 0) layer_cost(x, true, moe);
    else memset(moe, 0, sizeof *moe);
    edge_costs(x, &edge[0], &edge[1], &edge[2], &edge[3], &edge[4], &edge[5], &edge[6], &edge[7]);
    if (e) {
        e->key = k;
        e->valid = true;
        e->dense = *dense;
        e->moe = *moe;
        memcpy(e->edge, edge, sizeof e->edge);
    }
}

void sim_work_cost_stats(const SimWork *w, int64_t *hits, int64_t *misses)
{
    void **slot = sim_work_cost_cache((SimWork *)w);
    const CostCache *cc = slot ? *slot : NULL;
    if (hits) *hits = cc ? cc->hits : 0;
    if (misses) *misses = cc ? cc->misses : 0;
}
