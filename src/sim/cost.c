/*
 * cost.c — from (model, plan, hardware) to per-(stage, chunk) task costs,
 * then the schedule engine, then metrics (sim.h layer 2).
 *
 * Legend: L layers, H hidden, A heads, G kv heads, D head dim, F ffn,
 * V padded vocab, E experts, K top-k, B micro-batch, S seq, t TP, c CP.
 * T = B*S/c tokens of one micro-batch on one GPU (before SP splitting);
 * Tsp = T/t under sequence parallelism (norms, dropout, residuals).
 *
 * Each distinct layer kind (dense, MoE) is costed ONCE per plan with the hw
 * model (hw_gemm_time_s, hw_attention_time_s, hw_memory_time_s per kernel)
 * and the collective model (hw_coll_time_s, hw_p2p_time_s,
 * hw_alltoall_time_s, hw_cp_step_time_s); chunks are sums of layers plus the
 * embedding (first chunk) and LM head + loss (last chunk).
 *
 * Overlap rules (docs/simulate.md):
 *   TP  exposed unless plan.tp_overlap; then hidden up to the layer's GEMM
 *       time, and the hidden part slows compute by opt.overlap_slowdown.
 *   CP  K/V ring steps hidden under the attention core (exposed remainder).
 *   EP  all-to-all dispatch + combine exposed (fwd 2, bwd 2 per MoE layer).
 *   PP  activation send per micro-batch and chunk: dependency delay in the
 *       schedule (SP-sharded tensor, Megatron scatter/gather).
 *   DP  per-chunk gradient reduce in buckets under the last backward
 *       (schedule.c); dist-opt / ZeRO-1/2: reduce-scatter + parameter
 *       all-gather after the step (hidden under the next forward when
 *       opt.param_gather_overlap); ZeRO-3: per-layer gathers and reduces
 *       every micro-batch, hidden under the layer's compute where they fit.
 *   Recompute: selective = attention core forward again; full = the whole
 *       layer forward again, including its TP/CP/EP forward communication.
 *   Optimizer: opt.optimizer_bytes_per_param over HBM per local parameter;
 *       Shampoo adds preconditioner GEMM work spread over DP ranks.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "trainsim/partition.h"

void sim_options_init(SimOptions *o)
{
    memset(o, 0, sizeof *o);
    o->dp_overlap = true;           /* Megatron --overlap-grad-reduce; PyTorch DDP/FSDP default */
    o->param_gather_overlap = true; /* Megatron --overlap-param-gather (NeMo recipes) */
    o->bucket_bytes = 0;            /* Megatron-Core's rule, sim_dp_bucket_bytes */
    o->fp32_grad_reduce = true;     /* Megatron accumulate_allreduce_grads_in_fp32 (bf16 runs) */
    /* calibration_facts.md section 5: Lee et al. measure 18.9 % mean compute
     * slow-down under overlap with SM-driven collectives on 4 GPUs; Calculon
     * uses 0.15 for NVLink and 0.02 for IB. Our overlapped traffic is mostly
     * NIC-bound DP buckets and TE TP overlap on few SMs: 0.10. */
    o->overlap_slowdown = 0.10;
    /* calibration_facts.md section 6: fused Adam moves ~16-18 B per parameter
     * (fp32 master, m, v read+written, bf16 param written, grad read) plus
     * the grad-norm read and the zeroing of the fp32 grad buffer: 24 B. */
    o->optimizer_bytes_per_param = 24;
    /* calibration_facts.md section 0: "5 %+ MAMF spread between GPUs" of one
     * node (persistent chip-to-chip variation). The microbenchmarks time one
     * typical GPU; a synchronous job runs at the pace of its slowest GPU. */
    o->gpu_spread = 0.05;
    o->cp_comm = SIM_CP_P2P; /* Megatron / Transformer Engine default cp_comm_type "p2p" */
}

double sim_dp_bucket_bytes(const SimOptions *o, int64_t dp_size)
{
    if (o->bucket_bytes > 0) return o->bucket_bytes;
    /* megatron/core/distributed/distributed_data_parallel.py: bucket_size =
     * max(40000000, 1000000 * data-parallel world size) elements */
    return fmax(4e7, 1e6 * (double)dp_size) * (o->fp32_grad_reduce ? 4.0 : 2.0);
}

static const char *const CP_COMM[] = {"p2p", "allgather", "a2a"};

enum { N_CP_COMM = sizeof CP_COMM / sizeof CP_COMM[0] };
_Static_assert((int)N_CP_COMM == (int)SIM_CP_COMM_COUNT, "cp_comm names");

const char *sim_cp_comm_name(SimCpComm c) { return (unsigned)c < N_CP_COMM ? CP_COMM[c] : "?"; }

TsStatus sim_cp_comm_check(const ModelSpec *m, const ParallelPlan *p, SimCpComm c, TsError *err)
{
    if (p->cp <= 1 || c != SIM_CP_A2A) return TS_OK;
    int64_t ah = m->heads / p->tp, gh = (m->kv_lora_rank > 0 ? m->heads : m->kv_heads) / p->tp;
    if (ah % p->cp == 0 && gh >= 1 && gh % p->cp == 0) return TS_OK;
    ts_err(err, TS_ERR_PLAN, "--cp-comm a2a splits the heads over --cp %lld: %lld query and %lld key/value heads per TP rank",
           (long long)p->cp, (long long)ah, (long long)gh);
    ts_err_hint(err, "the all-to-all (Ulysses) needs both divisible by cp: use --cp-comm p2p or allgather, "
                     "or a cp that divides them");
    return TS_ERR_PLAN;
}

bool sim_cp_comm_parse(const char *s, SimCpComm *out)
{
    int i = ts_name_index(s, CP_COMM, N_CP_COMM);
    if (i >= 0) *out = (SimCpComm)i;
    return i >= 0;
}

/* Slow-down of the slowest of n GPUs against a typical one, when the spread
 * (max - min) among the 8 GPUs of a node is `spread`: chip speeds ~ normal,
 * the range of 8 samples is ~2.85 sigma, the slowest of n lies
 * sigma * sqrt(2 ln n) below the mean. 8 GPUs: 3.6 %, 64: 5.0 %, 1024: 6.5 %
 * at spread 0.05. */
double sim_straggler(double spread, int64_t n)
{
    if (n <= 1 || !(spread > 0)) return 0;
    return spread / 2.85 * sqrt(2.0 * log((double)n));
}

TsDtype sim_activation_dtype(TsDtype dt) { return dt == TS_DTYPE_FP8 ? TS_DTYPE_BF16 : dt; }

void sim_mem_options(const SimOptions *o, TsDtype dt, PartMemOptions *mo)
{
    /* Megatron's grad buffer has the reduction dtype (grad_reduce_in_fp32);
     * DeepSpeed's BF16 optimizer keeps fp32 gradients beside the bf16 ones */
    TsDtype adt = sim_activation_dtype(dt);
    mo->grad_bytes = o->fp32_grad_reduce ? 4.0 : (double)ts_dtype_bytes(adt);
    mo->fp32_grad_copy = o->ds_pipe && dt == TS_DTYPE_BF16;
    mo->selective_ops = o->selective_ops;
}

double sim_tensor_factor(const GpuSpec *g, const SimOptions *o, int64_t gpus)
{
    double f = g->sustained_clock_mhz > 0 && g->clock_mhz > 0 ? g->clock_mhz / g->sustained_clock_mhz : 1.0;
    return f * (1.0 + sim_straggler(o->gpu_spread, gpus));
}

typedef struct Ctx {
    const ModelSpec *m;
    const ParallelPlan *p;
    const HwModel *hw;
    const HwNet *net;
    const SimOptions *o;
    TsDtype dt;             /* GEMM dtype */
    TsDtype adt;            /* attention / activation dtype (bf16 under fp8) */
    double tc;              /* tensor-core time factor: clock / sustained clock x (1 + straggler) */
    double ab;              /* activation bytes per element, 2 */
    int64_t t, T, Tsp, S, Sl, B;
    PlanGroupInfo tpg, cpg, epg, dpg, edpg, ppg;
    bool gated;
} Ctx;

typedef struct LayerCost {
    double fwd, bwd;           /* compute busy (no comm), one micro-batch */
    double attn_fwd, attn_bwd; /* attention core alone */
    double gemm_fwd, gemm_bwd; /* GEMMs alone (what TP overlap can hide under) */
    double tp_f, tp_b;         /* exposed TP */
    double cp_f, cp_b;         /* exposed CP */
    double ep_f, ep_b;         /* exposed EP */
    double slow;               /* slow-down from overlapped TP/CP */
    double recompute;          /* extra forward in backward */
    double fsdp;               /* ZeRO-3 exposed */
    double fsdp_ag, fsdp_rs;   /* ZeRO-3 all-gather / reduce-scatter of this layer */
    double params;             /* parameter elements on this GPU */
    double expert_params;      /* of which routed experts */
    double fwd_flops_token;    /* model FLOPs per token, forward, whole layer (unsharded) */
    double recompute_flops_token;
} LayerCost;

static double coll(const Ctx *x, TsColl c, double bytes, const PlanGroupInfo *g, const char *kind)
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
 * Tsp tokens of this rank: norm 2/3, residual 3/3, dropout 2.5/2.5. */
static void half_layer_mem(const Ctx *x, double *f, double *b)
{
    double th = (double)x->Tsp * (double)x->m->hidden * x->ab;
    if (x->o->eager_elementwise) /* x.float() -> pow -> mean -> x*rsqrt -> type_as -> *w: 36 B/elem */
        mem(x, 18 * th, 36 * th, f, b);
    else
        mem(x, 2 * th, 3 * th, f, b);
    mem(x, 3 * th, 3 * th, f, b);
    if (x->m->arch == MODEL_ARCH_GPT || x->m->arch == MODEL_ARCH_BERT) mem(x, 2.5 * th, 2.5 * th, f, b);
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
    lc->params += (double)(A * dv * H / t) + 2.0 * (double)H;
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
        if (m->arch == MODEL_ARCH_GPT || m->arch == MODEL_ARCH_BERT) mem(x, 2.5 * sc, 2.5 * sc, &f2, &b2); /* dropout */
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
    double ep_f = 0;
    if (!moe) {
        mlp(x, x->T, m->ffn, t, lc, &gf, &gb);
    } else {
        int64_t E = m->experts, K = m->topk, ep = p->ep, etp = p->etp;
        int64_t tok = p->sp ? x->Tsp : x->T;            /* tokens this rank routes */
        double pairs = (double)tok * (double)K * (double)etp; /* token-expert pairs it computes */
        int64_t local = E / ep > 0 ? E / ep : 1;
        int64_t me = (int64_t)ceil(pairs / (double)local);
        gemm(x, 1, tok, E, H, &gf, &gb); /* router */
        double ef = 0, eb = 0;
        gemm(x, local, me, (x->gated ? 2 : 1) * m->moe_ffn / etp, H, &ef, &eb);
        gemm(x, local, me, H, m->moe_ffn / etp, &ef, &eb);
        /* expert activation and permute / unpermute traffic (these were
         * computed but never added to the layer before the workload round
         * trip showed the generator 5.5 % slower on Mixtral) */
        double ea = pairs * (double)(m->moe_ffn / etp) * x->ab, ef2 = 0, eb2 = 0;
        mem(x, ea * (x->gated ? 3.0 : 2.0), ea * (x->gated ? 5.0 : 3.0), &ef2, &eb2);
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
        /* EP all-to-all: dispatch + combine forward, the same backward */
        if (ep > 1) {
            double a2a = hw_alltoall_time_s(x->net, (double)tok * (double)K * (double)H * x->ab, ep, x->epg.nodes);
            ep_f = 2 * a2a;
        }
    }
    lc->gemm_fwd += gf;
    lc->gemm_bwd += gb;
    lc->fwd += gf;
    lc->bwd += gb;
    lc->ep_f = ep_f;
    lc->ep_b = ep_f;

    /* TP: 2 all-reduces per pass, or 2 all-gathers + 2 reduce-scatters with SP */
    double X = (double)x->T * (double)H * x->ab, tpc = 0;
    if (t > 1)
        tpc = p->sp ? 2 * (coll(x, TS_COLL_ALLGATHER, X, &x->tpg, "tp") + coll(x, TS_COLL_REDUCESCATTER, X, &x->tpg, "tp"))
                    : 2 * coll(x, TS_COLL_ALLREDUCE, X, &x->tpg, "tp");
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
            double ag = coll(x, TS_COLL_ALLGATHER, kv * (double)p->cp, &x->cpg, "cp");
            lc->cp_f = ag;
            lc->cp_b = ag + coll(x, TS_COLL_REDUCESCATTER, kv * (double)p->cp, &x->cpg, "cp");
        } else if (x->o->cp_comm == SIM_CP_A2A) {
            int64_t qd = m->kv_lora_rank > 0 ? m->heads * (m->qk_nope_dim + m->qk_rope_dim) : m->heads * m->head_dim;
            int64_t od = m->kv_lora_rank > 0 ? m->heads * m->v_head_dim : m->heads * m->head_dim;
            double tok = (double)(x->B * x->Sl);
            double q = tok * (double)(qd / t) * x->ab, o = tok * (double)(od / t) * x->ab;
            lc->cp_f = lc->cp_b = hw_alltoall_time_s(x->net, q + kv, p->cp, x->cpg.nodes) +
                                  hw_alltoall_time_s(x->net, o, p->cp, x->cpg.nodes);
        } else {
            double step = hw_cp_step_time_s(x->net, kv, p->cp, x->cpg.nodes) * (double)(p->cp - 1);
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
            ag += coll(x, TS_COLL_ALLGATHER, dense_p * x->ab, &x->dpg, "dp");
            rs += coll(x, TS_COLL_REDUCESCATTER, dense_p * gr, &x->dpg, "dp");
        }
        if (exp_p > 0) {
            ag += coll(x, TS_COLL_ALLGATHER, exp_p * x->ab, &x->edpg, "dp");
            rs += coll(x, TS_COLL_REDUCESCATTER, exp_p * gr, &x->edpg, "dp");
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
        lc->slow += sig * (ag - ef + ag + rs - eb);
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
    if (t > 1) tp += x->p->sp ? coll(x, TS_COLL_REDUCESCATTER, th, &x->tpg, "tp") : coll(x, TS_COLL_ALLREDUCE, th, &x->tpg, "tp");
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
        if (x->p->sp) tp += coll(x, TS_COLL_ALLGATHER, th, &x->tpg, "tp");
        tp += 3 * coll(x, TS_COLL_ALLREDUCE, (double)T * 4.0, &x->tpg, "tp"); /* vocab-parallel CE */
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
static double fsdp_root(const Ctx *x, double emb_params, double head_params, const LayerCost *first, SimChunkCost *c)
{
    double rp = emb_params + head_params, gr = x->o->fp32_grad_reduce ? 4.0 : x->ab, f = 0, b = 0;
    if (rp > 0) {
        f = coll(x, TS_COLL_ALLGATHER, rp * x->ab, &x->dpg, "dp");
        b = coll(x, TS_COLL_REDUCESCATTER, rp * gr, &x->dpg, "dp");
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
    c->slowdown_s -= x->o->overlap_slowdown * ((ag - ef) + (ag + rs - eb) - fmin(ag, wb));
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
    uint8_t sp, flash, tp_overlap, zero3, pp1, eager, selective_ops, fp32_grad, cp_comm;
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
static void layer_costs(const Ctx *x, SimWork *w, LayerCost *dense, LayerCost *moe, double edge[8])
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

/* DP gradient reduction, parameter gather and optimizer step of a chunk
 * holding params parameter elements (eparams of them routed experts). */
typedef struct ChunkDp {
    bool valid, has_ag, has_eag, has_shampoo;
    double params, eparams;
    double t_dp, ag, eag, opt, shampoo, shampoo_ag;
    int32_t buckets;
} ChunkDp;

static void chunk_dp_costs(const Ctx *x, const SimSetup *in, double params, double eparams, ChunkDp *d)
{
    const ParallelPlan *p = x->p;
    const ModelSpec *m = x->m;
    memset(d, 0, sizeof *d);
    d->valid = true;
    d->params = params;
    d->eparams = eparams;
    double gbytes = in->opt.fp32_grad_reduce ? 4.0 : 2.0;
    bool shard_opt = p->dist_opt || p->zero >= 1;
    double bucket = sim_dp_bucket_bytes(&in->opt, x->dpg.size);
    /* not for ZeRO-3: per layer in layer_cost */
    if (p->zero < 3) {
        double dense_b = (params - eparams) * gbytes, exp_b = eparams * gbytes;
        /* DeepSpeed's pipeline engine all-reduces (buffered_allreduce_fallback)
         * even under ZeRO-1 */
        TsColl rc = shard_opt && !in->opt.ds_pipe ? TS_COLL_REDUCESCATTER : TS_COLL_ALLREDUCE;
        double nb = ceil(dense_b / bucket);
        double t_dp = 0;
        if (x->dpg.size > 1 && dense_b > 0) t_dp += nb * coll(x, rc, dense_b / nb, &x->dpg, "dp");
        double ne = ceil(exp_b / bucket);
        if (x->edpg.size > 1 && exp_b > 0) t_dp += ne * coll(x, rc, exp_b / ne, &x->edpg, "dp");
        d->t_dp = t_dp;
        d->buckets = (int32_t)(nb + ne > 1 ? nb + ne : 1);
        /* dist-opt: gather updated bf16 parameters after the step */
        d->has_ag = shard_opt && x->dpg.size > 1 && dense_b > 0;
        if (d->has_ag) d->ag = nb * coll(x, TS_COLL_ALLGATHER, (params - eparams) * x->ab / nb, &x->dpg, "dp");
        d->has_eag = shard_opt && x->edpg.size > 1 && exp_b > 0;
        if (d->has_eag) d->eag = ne * coll(x, TS_COLL_ALLGATHER, eparams * x->ab / ne, &x->edpg, "dp");
    }
    /* optimizer on the local shard */
    double local = shard_opt ? (params - eparams) / (double)x->dpg.size + eparams / (double)x->edpg.size : params;
    d->opt = hw_memory_time_s(in->hw, local * in->opt.optimizer_bytes_per_param);
    if (p->optimizer == PLAN_OPTIM_SHAMPOO) {
        /* Distributed Shampoo: each DP rank preconditions its share of the
         * blocks, then the search directions (fp32, one per parameter) are
         * all-gathered: dense over DP, experts over expert DP */
        d->has_shampoo = true;
        d->shampoo = sim_shampoo_s_per_param(in->hw, m, p) * params / (double)x->dpg.size;
        if (x->dpg.size > 1 && params - eparams > 0)
            d->shampoo_ag += coll(x, TS_COLL_ALLGATHER, (params - eparams) * 4.0, &x->dpg, "dp");
        if (x->edpg.size > 1 && eparams > 0) d->shampoo_ag += coll(x, TS_COLL_ALLGATHER, eparams * 4.0, &x->edpg, "dp");
    }
}

double sim_shampoo_s_per_param(const HwModel *hw, const ModelSpec *m, const ParallelPlan *p)
{
    if (p->optimizer != PLAN_OPTIM_SHAMPOO) return 0;
    /* apply L^-1/4 G R^-1/4 on blocks of side bs: 4*P*bs FLOPs per step;
     * root (eigendecomposition ~10 n^3 per factor) every 100 steps: 0.2*P*bs;
     * fp32 GEMMs of side bs */
    double bs = (double)m->hidden / (double)(p->shampoo_blocks > 0 ? p->shampoo_blocks : 1);
    int64_t n = (int64_t)bs;
    if (n < 1) return 0;
    double one = hw_gemm_time_s(hw, 1, n, n, n, TS_DTYPE_FP32);
    return one * 4.2 * bs / (2.0 * (double)n * (double)n * (double)n);
}

static void warn(SimResult *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(SimResult *r, const char *fmt, ...)
{
    if (r->n_warnings >= SIM_MAX_WARNINGS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->warnings[r->n_warnings++], sizeof r->warnings[0], fmt, ap);
    va_end(ap);
}

static SimSchedule sched_of(PlanSchedule s)
{
    return s == PLAN_SCHED_GPIPE ? SIM_SCHED_GPIPE : s == PLAN_SCHED_INTERLEAVED ? SIM_SCHED_INTERLEAVED : SIM_SCHED_1F1B;
}

TsStatus sim_setup_resolve(SimSetup *in, TsError *err)
{
    const ModelSpec *m = in->model;
    ParallelPlan *p = &in->plan;
    TsStatus st = plan_resolve(m, p, err);
    if (st) return st;
    if (p->cp > 1 && p->seq % p->cp)
        return ts_err(err, TS_ERR_PLAN, "--seq %lld is not a multiple of --cp %lld", (long long)p->seq, (long long)p->cp);
    if ((st = sim_cp_comm_check(m, p, in->opt.cp_comm, err))) return st;
    if (in->opt.ds_pipe && (p->vpp > 1 || p->schedule != PLAN_SCHED_1F1B)) {
        ts_err(err, TS_ERR_PLAN, "--deepspeed-pipe runs DeepSpeed's 1F1B schedule only (got %s, vpp %lld)",
               plan_sched_name(p->schedule), (long long)p->vpp);
        ts_err_hint(err, "DeepSpeed's PipelineEngine (TrainSchedule) has no interleaved or GPipe schedule: drop "
                         "--schedule and --vpp");
        return TS_ERR_PLAN;
    }
    return TS_OK;
}

/* sim_simulate, or with lb != NULL sim_lower_bound: stop after the costing. */
static TsStatus simulate(SimSetup *in, SimWork *wk, SimResult *out, double *lb, TsError *err)
{
    memset(out, 0, sizeof *out);
    const ModelSpec *m = in->model;
    ParallelPlan *p = &in->plan;
    TsStatus st = sim_setup_resolve(in, err);
    if (st) return st;
    Ctx x = {.m = m, .p = p, .hw = in->hw, .net = in->net, .o = &in->opt};
    x.dt = p->dtype;
    x.adt = sim_activation_dtype(p->dtype);
    x.ab = (double)ts_dtype_bytes(x.adt);
    const GpuSpec *g = &in->hw->gpu;
    x.tc = sim_tensor_factor(g, &in->opt, p->gpus);
    x.t = p->tp;
    x.B = p->micro_batch;
    x.S = p->seq;
    x.Sl = p->seq / p->cp;
    x.T = x.B * x.Sl;
    x.Tsp = p->sp ? x.T / p->tp : x.T;
    x.gated = m->act == MODEL_ACT_SWIGLU;
    int64_t gpn = in->net->cl.gpus_per_node;
    plan_group(p, PLAN_GROUP_TP, 0, gpn, &x.tpg);
    plan_group(p, PLAN_GROUP_CP, 0, gpn, &x.cpg);
    plan_group(p, PLAN_GROUP_EP, 0, gpn, &x.epg);
    plan_group(p, PLAN_GROUP_DPCP, 0, gpn, &x.dpg);
    plan_group(p, PLAN_GROUP_EDP, 0, gpn, &x.edpg);
    plan_group(p, PLAN_GROUP_PP, 0, gpn, &x.ppg);

    SimWork *w = wk ? wk : sim_work_create();
    if (!w) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    LayerCost dense, moe;
    bool has_moe = m->experts > 0;
    double edge[8];
    layer_costs(&x, w, &dense, &moe, edge);
    const double emb_f = edge[0], emb_b = edge[1], emb_tp = edge[2], head_f = edge[3], head_b = edge[4],
                 head_tp = edge[5], emb_params = edge[6], head_params = edge[7];
    const int32_t pp = (int32_t)p->pp, v = (int32_t)p->vpp;
    SimStageCost *sc = NULL;
    SimChunkCost *cc = sim_work_costs(w, pp * v, pp, &sc);
    if (!cc) {
        if (!wk) sim_work_destroy(w);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    }
    /* pipeline transfer: SP-sharded (or scatter/gather) boundary activation;
     * DeepSpeed's pipeline engine sends the whole tensor from every TP rank */
    double p2p_bytes = (double)x.T * (double)m->hidden * x.ab / (in->opt.ds_pipe ? 1.0 : (double)p->tp);
    double p2p = pp > 1 ? hw_p2p_time_s(in->net, p2p_bytes, x.ppg.nodes > 1) : 0;
    double fl_token = 0, rfl_token = 0; /* model / recompute FLOPs per token, whole model */
    int64_t l0 = 0; /* first layer of the chunk */
    ChunkDp dpm = {0};
    for (int32_t vs = 0; vs < v; vs++)
        for (int32_t s = 0; s < pp; s++) {
            int64_t chunk = (int64_t)vs * pp + s;
            int64_t nl = plan_chunk_layers(p, m->layers, chunk);
            int64_t n_moe = 0;
            if (has_moe)
                for (int64_t l = l0; l < l0 + nl; l++) n_moe += model_layer_is_moe(m, l);
            l0 += nl;
            double nd = (double)(nl - n_moe), nm = (double)n_moe;
            SimChunkCost *c = &cc[s * v + vs];
            c->layers = (int32_t)nl;
#define SUM(f) (nd * dense.f + (has_moe ? nm * moe.f : 0))
            double rk = p->recompute == PLAN_RECOMPUTE_FULL && p->recompute_layers > 0 && p->recompute_layers < nl
                            ? (double)p->recompute_layers / (double)nl : 1.0;
            c->compute_fwd_s = SUM(fwd);
            c->compute_bwd_s = SUM(bwd);
            c->recompute_s = SUM(recompute);
            c->recompute_s *= rk; /* --recompute-num-layers k (block): k layers of the chunk */
            c->tp_exposed_s = SUM(tp_f) + SUM(tp_b);
            c->cp_exposed_s = SUM(cp_f) + SUM(cp_b);
            c->ep_exposed_s = SUM(ep_f) + SUM(ep_b);
            c->fsdp_exposed_s = SUM(fsdp);
            c->slowdown_s = SUM(slow);
            double params = SUM(params), eparams = SUM(expert_params);
            fl_token += SUM(fwd_flops_token);
            rfl_token += rk * SUM(recompute_flops_token);
#undef SUM
            double tp_f = nd * dense.tp_f + (has_moe ? nm * moe.tp_f : 0);
            if (chunk == 0) {
                c->edge_fwd_s[0] = emb_f + emb_tp;
                c->compute_fwd_s += emb_f;
                c->compute_bwd_s += emb_b;
                c->tp_exposed_s += 2 * emb_tp;
                tp_f += emb_tp;
                params += emb_params;
            }
            if (chunk == (int64_t)pp * v - 1) {
                c->edge_fwd_s[1] = head_f + head_tp;
                c->head_bwd_s = head_b + head_tp;
                c->compute_fwd_s += head_f;
                c->compute_bwd_s += head_b;
                c->tp_exposed_s += 2 * head_tp;
                tp_f += head_tp;
                params += head_params;
                fl_token += 2.0 * (double)m->hidden * (double)model_padded_vocab(m, 1);
            }
            /* BF16 optimizer under DeepSpeed's pipeline engine: after each
             * micro-batch's backward, update_hp_grads adds the bf16 gradients
             * into the fp32 ones (cast: read 2 write 4; add: read 8 write 4)
             * and the bf16 grads are zeroed (write 2): 20 B per parameter */
            if (in->opt.ds_pipe && p->dtype == TS_DTYPE_BF16) c->compute_bwd_s += hw_memory_time_s(in->hw, 20.0 * params);
            double root_f = 0; /* exposed FSDP time in the forward task */
            if (p->zero >= 3 && x.dpg.size > 1 && nl > 0)
                root_f = fsdp_root(&x, chunk == 0 ? emb_params : 0, chunk == (int64_t)pp * v - 1 ? head_params : 0,
                                   has_moe && model_layer_is_moe(m, l0 - nl) ? &moe : &dense, c);
            double exp_fwd_comm = root_f + tp_f + (nd * dense.cp_f + nm * (has_moe ? moe.cp_f : 0)) +
                                  (has_moe ? nm * moe.ep_f : 0);
            double fsdp_f = nd * dense.fsdp + (has_moe ? nm * moe.fsdp : 0);
            c->fwd_s = c->compute_fwd_s + exp_fwd_comm + 0.5 * fsdp_f + (nd * dense.slow + (has_moe ? nm * moe.slow : 0)) * 0.5;
            c->p2p_fwd_s = c->p2p_bwd_s = p2p;
            if (in->opt.ds_pipe && pp > 1) {
                /* blocking sends/receives on the compute stream: the forward
                 * receives its input and sends its output, the backward
                 * receives the output gradient and sends the input gradient
                 * (none beyond the first / last chunk of the model) */
                double sides = (chunk > 0 ? 1.0 : 0.0) + (chunk < (int64_t)pp * v - 1 ? 1.0 : 0.0);
                c->pp_blocked_s = 2.0 * sides * p2p;
                c->fwd_s += sides * p2p;
                c->p2p_fwd_s = c->p2p_bwd_s = 0;
            }
            /* everything else runs in the backward task; the parts sum to fwd_s + bwd_s */
            c->bwd_s = c->compute_fwd_s + c->compute_bwd_s + c->recompute_s + c->tp_exposed_s + c->cp_exposed_s +
                       c->ep_exposed_s + c->fsdp_exposed_s + c->slowdown_s + c->pp_blocked_s - c->fwd_s;
            /* DP gradient reduction and optimizer step of this chunk: a
             * function of (params, eparams) alone, which most chunks share
             * (equal layer counts): computed once per distinct pair. */
            if (!dpm.valid || params != dpm.params || eparams != dpm.eparams)
                chunk_dp_costs(&x, in, params, eparams, &dpm);
            if (p->zero < 3) {
                c->dp_grad_s = dpm.t_dp;
                c->dp_buckets = dpm.buckets;
                if (chunk == 0 && emb_params > 0 && x.dpg.size > 1) {
                    TsColl rc = (p->dist_opt || p->zero >= 1) && !in->opt.ds_pipe ? TS_COLL_REDUCESCATTER
                                                                                  : TS_COLL_ALLREDUCE;
                    c->dp_tail_s = coll(&x, rc, emb_params * (in->opt.fp32_grad_reduce ? 4.0 : 2.0), &x.dpg, "dp");
                }
                c->param_gather_s = (dpm.has_ag ? dpm.ag : 0) + (dpm.has_eag ? dpm.eag : 0);
                /* the edges' shares of the dense gather, by parameters */
                double dense_p = params - eparams, ag_d = dpm.has_ag ? dpm.ag : 0;
                if (chunk == 0 && dense_p > 0) c->edge_gather_s[0] = ag_d * emb_params / dense_p;
                if (chunk == (int64_t)pp * v - 1 && dense_p > 0) c->edge_gather_s[1] = ag_d * head_params / dense_p;
                sc[s].param_gather_s += c->param_gather_s;
            }
            sc[s].optimizer_s += dpm.opt;
            if (dpm.has_shampoo) {
                sc[s].optimizer_s += dpm.shampoo;
                sc[s].step_comm_s += dpm.shampoo_ag;
            }
        }

    /* tied word embeddings split over the first and last stage: Megatron
     * (_allreduce_embedding_grads) and DeepSpeed (_exec_reduce_tied_grads)
     * all-reduce their gradients in the main-grad dtype over that 2-rank
     * group, on both stages, outside any overlap */
    if (m->tied_embeddings && pp > 1 && p->zero < 3) {
        double wbytes = (double)(model_padded_vocab(m, x.t) / x.t) * (double)m->hidden *
                        (in->opt.fp32_grad_reduce ? 4.0 : x.ab);
        PlanGroupInfo eg = {.size = 2, .nodes = x.ppg.nodes > 1 ? 2 : 1, .per_node = x.ppg.nodes > 1 ? 1 : 2};
        double t_emb = coll(&x, TS_COLL_ALLREDUCE, wbytes, &eg, "pp");
        sc[0].embed_sync_s += t_emb;
        sc[pp - 1].embed_sync_s += t_emb;
    }
    SimPipeline pl = {.stages = pp, .chunks = v, .micro_batches = p->grad_accum, .schedule = sched_of(p->schedule),
                      .chunk = cc, .stage = sc, .dp_overlap = in->opt.dp_overlap && !in->opt.ds_pipe,
                      .param_gather_overlap = in->opt.param_gather_overlap && !in->opt.ds_pipe,
                      .overlap_slowdown = in->opt.overlap_slowdown, .record = in->opt.record};
    if (lb) { /* sim_lower_bound: the engine's bound on these costs, no run */
        *lb = sim_pipeline_lower_bound(&pl);
        if (!wk) sim_work_destroy(w);
        return TS_OK;
    }
    st = sim_pipeline_run(&pl, w, out, err);
    if (st) {
        if (!wk) sim_work_destroy(w);
        return st;
    }
    if (!wk) {
        /* the work dies here: copy what the result keeps */
        SimResult tmp = *out;
        SimStageResult *stages = malloc((size_t)pp * sizeof *stages);
        SimSpan *spans = tmp.n_spans ? malloc((size_t)tmp.n_spans * sizeof *spans) : NULL;
        if (!stages || (tmp.n_spans && !spans)) {
            free(stages);
            free(spans);
            sim_work_destroy(w);
            memset(out, 0, sizeof *out);
            return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        }
        memcpy(stages, tmp.stages, (size_t)pp * sizeof *stages);
        if (spans) memcpy(spans, tmp.spans, (size_t)tmp.n_spans * sizeof *spans);
        out->stages = stages;
        out->spans = spans;
        out->owned = true;
        sim_work_destroy(w);
    }

    /* metrics */
    double T = out->iteration_time_s, tokens = (double)p->global_batch * (double)p->seq;
    double gpus = (double)p->gpus;
    out->tokens_per_s = tokens / T;
    out->tokens_per_s_per_gpu = out->tokens_per_s / gpus;
    out->samples_per_s = (double)p->global_batch / T;
    /* fl_token summed the layers of every chunk once: it is the whole model */
    out->model_flops_per_iteration = 3.0 * fl_token * tokens;
    out->hardware_flops_per_iteration = out->model_flops_per_iteration + rfl_token * tokens;
    const TsDtype gdt = hw_usable_dtype(&in->hw->gpu, p->dtype); /* fp8 on an A100: bf16 */
    double peak = in->hw->gpu.peak_flops[gdt];
    out->model_tflops_per_gpu = out->model_flops_per_iteration / T / gpus / 1e12;
    out->hardware_tflops_per_gpu = out->hardware_flops_per_iteration / T / gpus / 1e12;
    out->mfu = out->model_tflops_per_gpu * 1e12 / peak;
    out->hfu = out->hardware_tflops_per_gpu * 1e12 / peak;

    /* memory (partition.h) */
    PartMemOptions mo;
    part_mem_options_init(&mo);
    mo.capacity_bytes = in->hw->gpu.hbm_bytes;
    sim_mem_options(&in->opt, p->dtype, &mo);
    PartMemory pk;
    TsError merr = {0};
    if (part_memory(m, p, &mo, NULL, &pk, &merr) == TS_OK) {
        SimMemory *sm = &out->memory;
        sm->weights_bytes = pk.weights_bytes;
        sm->gradients_bytes = pk.gradients_bytes;
        sm->optimizer_bytes = pk.optimizer_bytes;
        sm->activations_bytes = pk.activations_bytes;
        sm->other_bytes = pk.other_bytes;
        sm->total_bytes = pk.total_bytes;
        sm->capacity_bytes = in->hw->gpu.hbm_bytes;
        sm->fits = sm->capacity_bytes <= 0 || sm->total_bytes <= sm->capacity_bytes;
        if (!sm->fits)
            warn(out, "does not fit: %.1f GiB per GPU needed, %.1f GiB available (stage %d)",
                 sm->total_bytes / 1073741824.0, sm->capacity_bytes / 1073741824.0, pk.stage);
    } else {
        warn(out, "memory not estimated: %s", merr.msg);
    }
    /* warnings */
    if (gdt != p->dtype)
        warn(out, "%s has no %s tensor cores: its GEMMs are timed at %s, MFU/HFU are of the %s peak",
             in->hw->gpu.name, ts_dtype_name(p->dtype), ts_dtype_name(gdt), ts_dtype_name(gdt));
    if (p->pp > 1 && p->grad_accum < p->pp)
        warn(out, "only %lld micro-batches for %lld pipeline stages: the bubble dominates (%.0f%%)",
             (long long)p->grad_accum, (long long)p->pp, 100 * out->bubble_fraction);
    else if (out->bubble_fraction > 0.25) {
        /* the schedule's own fill and drain, (p-1)/(v*m + p-1) of the step;
         * beyond that, stages wait for slower ones */
        double fill = (double)(p->pp - 1) / (double)(p->vpp * p->grad_accum + p->pp - 1);
        if (out->bubble_fraction > 2 * fill)
            warn(out, "pipeline bubble is %.0f%% of the step, fill and drain %.0f%%: the rest is waiting for "
                      "slower stages (slowest: %d); balance the work per stage (--stage-layers)",
                 100 * out->bubble_fraction, 100 * fill, out->slowest_stage);
        else
            warn(out, "pipeline bubble is %.0f%% of the step: more micro-batches%s would help",
                 100 * out->bubble_fraction, in->opt.ds_pipe ? "" : " or interleaving");
    }
    if (x.tpg.nodes > 1)
        warn(out, "tensor parallel group of %lld spans %lld nodes: TP traffic crosses the network",
             (long long)x.tpg.size, (long long)x.tpg.nodes);
    if (p->cp > 1 && x.cpg.nodes > 1)
        warn(out, "context parallel group spans %lld nodes", (long long)x.cpg.nodes);
    if (p->ep > 1 && x.epg.nodes > 1)
        warn(out, "expert parallel all-to-all spans %lld nodes", (long long)x.epg.nodes);
    return TS_OK;
}

TsStatus sim_simulate(SimSetup *in, SimWork *w, SimResult *out, TsError *err)
{
    return simulate(in, w, out, NULL, err);
}

TsStatus sim_lower_bound(SimSetup *in, SimWork *w, double *lower_bound_s, TsError *err)
{
    SimResult r;
    *lower_bound_s = 0;
    return simulate(in, w, &r, lower_bound_s, err);
}
