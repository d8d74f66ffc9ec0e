/* template.c — the per-rank kernels of one micro-batch, block by block
 * (part_template): the one place per-rank shapes are derived. The costing
 * (cost.h) times them for the simulator and the workload writers alike.
 *
 * Legend: B micro-batch, S seq, c CP, t TP, T = B*S/c tokens of the rank,
 * Tsp = T/t under sequence parallelism (norms, residuals, dropout), H
 * hidden, A / G query / key-value heads, D head dim, F ffn, V padded vocab,
 * E experts, K top-k, ab activation bytes per element.
 *
 * Memory-bound traffic per kernel, in activation tensors read or written
 * (docs/simulate.md, "memory-bound kernels"): norm 2 fwd / 3 bwd (eager
 * RMSNorm with its fp32 upcast 18 / 36), residual add 3 / 3, dropout
 * 2.5 / 2.5 (1-byte mask; only when the model's dropout is positive: p = 0
 * runs no kernel), GeLU 2 / 3, SwiGLU 3 / 5 (eager silu then multiply 5 / 8),
 * RoPE 2 / 2 (eager complex RoPE 10 / 10), fused scale-mask-softmax 2 / 3. */
#include <math.h>
#include <string.h>

#include "template_int.h"

TS_ENUM_NAMES(part_block, PartBlock, PART_BLOCK_LIST, PART_BLOCK_COUNT)

void part_runtime_init(PartRuntime *rt)
{
    memset(rt, 0, sizeof *rt);
    rt->grad_bytes = 4.0;
}

PartKernel *tpl_add(PartBlockT *b, const char *name, PartKernelKind kind, PartKernelPart part)
{
    if (b->n_k >= PART_MAX_KERNELS) return &b->k[PART_MAX_KERNELS - 1]; /* never: blocks hold < 20 */
    PartKernel *k = &b->k[b->n_k++];
    memset(k, 0, sizeof *k);
    k->name = name;
    k->kind = (uint8_t)kind;
    k->part = (uint8_t)part;
    k->count = 1;
    return k;
}

/* `batch` products (M x K) @ (K x N); K*N parameters each. */
PartKernel *tpl_gemm(PartBlockT *b, const char *name, int64_t batch, int64_t M, int64_t N, int64_t K)
{
    PartKernel *k = tpl_add(b, name, PART_K_GEMM, PART_KP_GEMM);
    k->batch = batch, k->m = M, k->n = N, k->k = K;
    double fl = 2.0 * (double)batch * (double)M * (double)N * (double)K;
    k->flops[0] = k->flops[1] = k->flops[2] = fl;
    return k;
}

PartKernel *tpl_mem(PartBlockT *b, const char *name, double fwd, double bwd, double flops)
{
    PartKernel *k = tpl_add(b, name, PART_K_MEM, PART_KP_MEM);
    k->fwd_bytes = fwd, k->bwd_bytes = bwd;
    k->flops[0] = k->flops[1] = flops;
    return k;
}

/* Norm(s), residual add and dropout of one half layer on the rank's Tsp
 * tokens (a sandwich normalises the sublayer's input and its output). */
static void half_layer(const Tx *x, PartBlockT *b)
{
    double th = (double)x->Tsp * (double)x->m->hidden * x->ab, el = (double)x->Tsp * (double)x->m->hidden;
    double nn = (double)model_sublayer_norms(x->m);
    PartKernel *nk = plan_eager(x->p) ? tpl_mem(b, "norm", nn * 18 * th, nn * 36 * th, nn * 5.0 * el) /* x.float() pow mean rsqrt type_as *w */
                                      : tpl_mem(b, "norm", nn * 2 * th, nn * 3 * th, nn * 5.0 * el);
    nk->rc = PLAN_RC_LAYERNORM;
    PartKernel *rk = tpl_mem(b, "residual", 3 * th, 3 * th, 0);
    if (!plan_eager(x->p)) { /* fused kernels: a calibration file's tables of them */
        if (nn == 1) nk->calib = x->m->norm == MODEL_NORM_LAYERNORM ? "layernorm" : "rmsnorm";
        rk->calib = "add";
    }
    if (x->m->hidden_dropout > 0) tpl_mem(b, "dropout", 2.5 * th, 2.5 * th, 0);
}

int64_t tpl_kv_heads(const ModelSpec *m) { return m->kv_heads > 0 ? m->kv_heads : m->heads; }

/* The flash core of the sliding-window layers (their share `sh` of the
 * layers): each of the rank's `sq` queries attends to at most w keys, the
 * S*w - w^2/2 pairs of the causal band (model_attn_keys: its FLOPs); the
 * kernel walks whole key tiles, w + PART_ATTN_KEY_TILE keys a query
 * (part_swa_keys), timed as that rectangle scaled to its band. The S^2
 * scores are never stored.
 * With learned sinks the core is cuDNN's (Transformer Engine has no other
 * backend for them), whose windowed forward skips no tile left of the band:
 * it runs as the causal kernel over every key, masked (PART_CUDNN_SWA_FWD);
 * its backward walks the band. */
double part_swa_keys(int64_t S, int64_t w, double *wide)
{
    double s = (double)S, wt = (double)w + PART_ATTN_KEY_TILE;
    *wide = wt > s ? s : wt;
    return model_band_keys(s, *wide);
}

/* A causal core over every key of the rank's queries, as the CP exchange
 * runs it: per CP rank, c blocks of (S/c x S/c) causal-balanced. The ring
 * exchange (p2p) runs them as its steps run: the rank's own block causal,
 * then c - 1 blocks of its queries against half a peer's keys (`ring`, the
 * load-balanced chunking's off-diagonal work, no mask); the all-gather
 * exchange as c causal blocks; the all-to-all exchange whole sequences over
 * heads/c. Head dim d; `share` scales both kernels (0: 1); `fl` the FLOPs of
 * the whole sequence's queries per key (0: none counted here); `flags` added
 * to both. */
static void causal_core(const Tx *x, PartBlockT *b, const char *name, const char *ring_name, int64_t d,
                        double share, double fl, uint32_t flags)
{
    int64_t Ah = x->m->heads / x->t, c = x->p->cp;
    bool uly = c > 1 && x->rt->cp_comm == 2, ring = c > 1 && x->rt->cp_comm == 0;
    PartKernel *k = tpl_add(b, name, PART_K_ATTN, PART_KP_CORE);
    k->batch = x->B, k->m = uly ? Ah / c : Ah, k->n = k->k = uly ? x->S : x->Sl, k->d = d;
    k->causal = true, k->drop = x->m->attn_dropout;
    k->count = uly || ring ? 1 : (int32_t)c;
    k->flops[0] = fl * (double)(ring ? x->Sl : x->S), k->flops[1] = 2.5 * k->flops[0];
    k->share = share, k->flags |= flags;
    if (!ring) return;
    PartKernel *o = tpl_add(b, ring_name, PART_K_ATTN, PART_KP_CORE);
    o->batch = x->B, o->m = Ah, o->n = x->Sl, o->k = x->Sl / 2, o->d = d, o->drop = k->drop;
    o->count = (int32_t)(c - 1);
    o->flops[0] = fl * (double)(x->S - x->Sl), o->flops[1] = 2.5 * o->flops[0];
    o->share = share, o->flags |= flags;
}

static void swa_core(const Tx *x, PartBlockT *b, int64_t heads, int64_t sq, int64_t d, double sh)
{
    const ModelSpec *m = x->m;
    double kw = model_attn_keys(m, 0, x->S, true), wt, kt = part_swa_keys(x->S, m->sliding_window, &wt);
    PartKernel *k = tpl_add(b, "core.swa", PART_K_ATTN, PART_KP_CORE);
    k->batch = x->B, k->m = heads, k->n = sq, k->k = (int64_t)wt, k->d = d, k->drop = m->attn_dropout;
    k->share = sh * kt / wt;
    double fl = 2.0 * (double)x->B * (double)(m->heads / x->t) * (double)x->Sl * kw * (double)(2 * d) * sh;
    k->flops[0] = fl, k->flops[1] = 2.5 * fl;
    if (!m->attn_sinks) return;
    /* cuDNN's windowed forward with sinks: the causal core over every key,
     * masked, exchanged as the full layers' core is (its FLOPs counted on
     * core.swa) */
    k->flags |= PART_KF_BWD_ONLY;
    causal_core(x, b, "core.swa_fwd", "core.swa_fwd_ring", d, sh * PART_CUDNN_SWA_FWD, 0, PART_KF_FWD_ONLY);
}

/* Attention block: norm, QKV (MLA: down / up projections), core, output
 * projection. Parameters as the module counts them (part_counts), per rank. */
static void attention_kernels(const Tx *x, PartBlockT *b)
{
    const ModelSpec *m = x->m;
    int64_t t = x->t, H = m->hidden, A = m->heads, G = tpl_kv_heads(m), D = m->head_dim, T = x->T;
    int64_t dqk = D, dv = D;
    half_layer(x, b);
    if (m->pos == MODEL_POS_ROPE) { /* q and k rotated */
        double qk = (plan_eager(x->p) ? 10.0 : 2.0) * (double)T * (double)((A + G) * D / t) * x->ab;
        tpl_mem(b, "rope", qk, qk, 0);
    }
    if (m->kv_lora_rank > 0) { /* MLA (DeepSeek): down / up projections */
        dqk = m->qk_nope_dim + m->qk_rope_dim;
        dv = m->v_head_dim;
        if (m->q_lora_rank > 0) {
            tpl_gemm(b, "q_down", 1, T, m->q_lora_rank, H);
            tpl_gemm(b, "q_up", 1, T, A * dqk / t, m->q_lora_rank)->rc = PLAN_RC_MLA_UP_PROJ;
        } else {
            tpl_gemm(b, "q", 1, T, A * dqk / t, H);
        }
        tpl_gemm(b, "kv_down", 1, T, m->kv_lora_rank + m->qk_rope_dim, H);
        tpl_gemm(b, "kv_up", 1, T, A * (m->qk_nope_dim + dv) / t, m->kv_lora_rank)->rc = PLAN_RC_MLA_UP_PROJ;
    } else if (plan_eager(x->p)) { /* torchtitan: wq, wk, wv separate nn.Linear */
        tpl_gemm(b, "wq", 1, T, A * D / t, H);
        tpl_gemm(b, "wk", 1, T, G * D / t, H);
        tpl_gemm(b, "wv", 1, T, G * D / t, H);
    } else {
        tpl_gemm(b, "qkv", 1, T, (A + 2 * G) * D / t, H)->flags |= PART_KF_COL_IN;
    }
    /* core (causal_core): Q.K runs at head dim dqk, P.V at dv (MLA: 192
     * and 128): the kernel's head dim is their mean, so its FLOPs are both
     * products' */
    int64_t Ah = A / t, c = x->p->cp;
    if (x->p->flash_attn) {
        bool uly = c > 1 && x->rt->cp_comm == 2;
        int64_t hq = uly ? Ah / c : Ah, sq = uly ? x->S : x->Sl, dm = (dqk + dv) / 2;
        double nw = x->S > m->sliding_window ? (double)model_windowed_layer_count(m) : 0, L = (double)m->layers;
        if (nw < L) {
            double full = (L - nw) / L, bf = (double)x->B * (double)Ah * (double)x->Sl * (double)(dqk + dv) * full;
            causal_core(x, b, "core", "core.ring", dm, nw > 0 ? full : 0, bf, 0);
        }
        if (nw > 0) swa_core(x, b, hq, sq, dm, nw / L);
        if (m->attn_sinks) { /* the sink's backward, every layer's whatever its window (hw.h attn_sink_bwd_row_s) */
            PartKernel *k = tpl_add(b, "core.sink", PART_K_ATTN, PART_KP_CORE);
            k->batch = x->B, k->m = hq, k->n = sq;
            k->flags |= PART_KF_SINK;
        }
    } else { /* unfused: two batched GEMMs, softmax (and dropout) over the S^2 scores */
        PartKernel *qk = tpl_gemm(b, "core.qk", x->B * Ah, x->Sl, x->S, dqk), *pv = tpl_gemm(b, "core.pv", x->B * Ah, x->Sl, dv, x->S);
        qk->part = pv->part = PART_KP_CORE;
        qk->flags |= PART_KF_ACT;
        pv->flags |= PART_KF_ACT;
        double sc = (double)(x->B * Ah) * (double)x->Sl * (double)x->S * x->ab;
        tpl_mem(b, "core.softmax", 2 * sc, 3 * sc, 0)->part = PART_KP_CORE;
        if (m->attn_dropout > 0) tpl_mem(b, "core.dropout", 2.5 * sc, 2.5 * sc, 0)->part = PART_KP_CORE;
    }
    tpl_gemm(b, "proj", 1, T, H, A * dv / t)->flags |= PART_KF_ROW_OUT;
    if (plan_eager(x->p)) { /* GQA repeat_kv copies of K and V; the output made contiguous */
        double kv = G < A ? 2.0 * (double)T * (double)(A * D / t) * x->ab * 2.0 : 0.0;
        double o = 2.0 * (double)T * (double)(A * dv / t) * x->ab;
        tpl_mem(b, "repeat_kv", kv + o, kv + o, 0);
    }
}

static void attention(const Tx *x, PartBlockT *b)
{
    const ModelSpec *m = x->m;
    int64_t t = x->t;
    if (plan_hf(x->p)) tpl_hf_attention(x, b);
    else attention_kernels(x, b);
    /* parameters (part_attn_params: biases, QK norms, MLA's replicated
     * down-projections and norms): the output projection is the first
     * gradient tensor of the backward, then QKV with the input norm (Transformer
     * Engine's fused layernorm_linear holds both) */
    PartAttnParams ap;
    part_attn_params(m, &ap);
    double proj = ap.proj_tp / (double)t + ap.proj_rep;
    b->params = ap.tp / (double)t + ap.rep;
    b->grad_t[0] = proj;
    b->grad_t[1] = b->params - proj;
}

/* Dense MLP of width ffn (ffn/tp per rank) on `tokens` tokens, without its
 * half-layer kernels: fc1 (gate + up), activation, fc2. */
static void mlp(const Tx *x, PartBlockT *b, int64_t tokens, int64_t ffn, const char *const nm[4])
{
    int64_t H = x->m->hidden, t = x->t;
    if (x->gated && plan_eager(x->p)) { /* w1 and w3 separate nn.Linear */
        tpl_gemm(b, nm[0], 1, tokens, ffn / t, H);
        tpl_gemm(b, nm[1], 1, tokens, ffn / t, H);
    } else {
        tpl_gemm(b, nm[0], 1, tokens, (x->gated ? 2 : 1) * ffn / t, H);
    }
    double act = (double)tokens * (double)(ffn / t) * x->ab, el = (double)tokens * (double)(ffn / t);
    if (x->gated && plan_eager(x->p)) {
        tpl_mem(b, nm[2], act * 5.0, act * 8.0, 8.0 * el); /* silu(a) then * b */
    } else {
        PartKernel *ak = tpl_mem(b, nm[2], act * (x->gated ? 3.0 : 2.0), act * (x->gated ? 5.0 : 3.0), 8.0 * el);
        if (!plan_eager(x->p) && (x->m->act == MODEL_ACT_SWIGLU || x->m->act == MODEL_ACT_GELU))
            ak->calib = x->gated ? "swiglu" : "gelu"; /* TE's fused activation, timed by name */
    }
    tpl_gemm(b, nm[3], 1, tokens, H, ffn / t);
}

static void dense_mlp(const Tx *x, PartBlockT *b)
{
    static const char *const NM[4] = {"fc1", "fc3", "act", "fc2"};
    if (plan_hf(x->p)) {
        tpl_hf_mlp(x, b);
    } else {
        half_layer(x, b);
        int32_t k0 = b->n_k;
        mlp(x, b, x->T, x->m->ffn, NM);
        if (!plan_eager(x->p)) b->k[k0].flags |= PART_KF_COL_IN; /* fc1 (gate and up fused) */
        b->k[b->n_k - 1].flags |= PART_KF_ROW_OUT_MLP;          /* fc2 */
    }
    PartMlpParams mp;
    part_mlp_params(x->m, (double)x->m->ffn, x->m->mlp_bias, &mp);
    double t = (double)x->t;
    b->params = mp.tp / t + mp.rep + part_sublayer_norm_params(x->m);
    b->grad_t[0] = mp.fc2_tp / t + mp.fc2_rep; /* fc2, then fc1 with the norm */
    b->grad_t[1] = b->params - b->grad_t[0];
}

/* What the host dispatches in Megatron-Core's MoE layer (the token_dispatcher
 * "alltoall" or "flex", TEGroupedMLP, permute and router fusion on as the
 * Megatron-Bridge performance recipes set them; cost_step turns it into
 * the GPU's wait), read from Megatron-LM core_r0.15 (router.py,
 * token_dispatcher.py, moe_utils.py, experts.py) and Transformer Engine
 * 2.9-2.11 (GroupedLinear, split_quantize, multi_stream_cublas_gemm):
 * forward, before the dispatcher's host sync on the tokens per expert,
 * about 57 Python-level calls (router 18, count preprocessing and its
 * all-gather 15, the device-to-host copies 15, the fused permute 9) that
 * launch about 25 kernels; after it 43 (the two all-to-alls, the chunk
 * sorts, the experts' Python, the unpermute), 6 kernels beside the
 * experts'; backward about 25 autograd nodes, 15 kernels. Each GroupedLinear launches
 * its E local experts' GEMMs one by one from C++ (cuBLAS over 4 streams),
 * with per-expert quantization in FP8: forward / backward kernels per
 * expert 1 / 2 in 16 bit, 1 / 2 plus one fused multi-tensor cast-transpose
 * under delayed scaling, 5 / 6 current scaling (zero amax, amax, scale,
 * cast), 2 / 3 plus 2 / 4 swizzles blockwise. SequentialMLP calls each expert's modules from
 * Python: 3 calls forward, 3 backward per expert. fc: experts.fc1 and .fc2. */
static void mcore_moe_host(const ParallelPlan *p, PartKernel *topk, PartKernel *fc[2], PartKernel *act, PartKernel *pm,
                           int64_t local, bool seq)
{
    topk->launches[0] = 25, topk->host_calls[0] = 32; /* 57 calls, 25 of them kernels */
    topk->launches[1] = 15, topk->host_calls[1] = 10; /* 25 autograd nodes, 15 kernels */
    pm->launches[0] = 6, pm->host_calls[0] = 37;      /* 43 calls, 6 kernels (sorts, unpermute) */
    pm->flags |= PART_KF_AFTER_SYNC;
    act->flags |= PART_KF_AFTER_SYNC;
    int64_t f = 1, b = 2, f0 = 0, b0 = 0;
    if (p->dtype == TS_DTYPE_FP8) {
        if (p->fp8_recipe == PLAN_FP8_CURRENT) f = 5, b = 6;
        else if (p->fp8_recipe == PLAN_FP8_BLOCKWISE) f = 2, b = 3, f0 = 2, b0 = 4;
        else f0 = 1, b0 = 1;
    }
    for (int i = 0; i < 2; i++) {
        fc[i]->flags |= PART_KF_AFTER_SYNC | (seq ? 0 : PART_KF_INNER | PART_KF_STREAMS);
        int64_t nf = seq ? (i ? 2 : 1) * local : f * local + f0, nb = seq ? (i ? 2 : 1) * local : b * local + b0;
        fc[i]->launches[0] = part_launches(nf);
        fc[i]->launches[1] = part_launches(nb);
    }
}

/* The experts' fc2 bias (GPT-OSS) in Megatron-Core's grouped MLP over `el`
 * output elements (the rank's token-expert pairs x H) of `ab` bytes. fc1's
 * bias is added in its GEMM's epilogue (TE's GroupedLinear); fc2's after
 * the GEMM, weighted by each pair's routing probability, one local expert at
 * a time in eager PyTorch: TEGroupedMLP._apply_bias (experts.py, core_r0.14
 * to the 2026-08 packed path), torch.cat([t + b * p for each expert]). The
 * probabilities are in the router's dtype (16 bit: GPT-OSS's provider sets
 * no moe_router_dtype). Forward, per expert a broadcast multiply b * p and
 * an add, then the cat: 6 tensors of the output; backward the product's two
 * gradients, each a broadcast multiply and a reduction (the bias over rows,
 * the probability over H: 6), and the cat of the split's gradients (2). The
 * broadcast multiplies take PyTorch's generic path (PART_KF_GENERIC); the
 * host calls each op from the loop, with no module (PART_KF_PYLOOP). */
static void grouped_fc2_bias(PartBlockT *b, double el, double ab, int64_t local)
{
    PartKernel *k = tpl_mem(b, "experts.fc2_bias", 6.0 * el * ab, 8.0 * el * ab, 2.0 * el);
    k->flags |= PART_KF_GENERIC | PART_KF_AFTER_SYNC | PART_KF_PYLOOP;
    k->elems[0] = el, k->elems[1] = 2.0 * el;
    k->launches[0] = part_launches(2 * local + 1);
    k->launches[1] = part_launches(4 * local + 1);
    k->host_calls[0] = 4, k->host_calls[1] = 3; /* the two splits, view, to; split, cat and view nodes */
}

/* MoE MLP: router over the tokens the rank routes (Tsp under SP), the local
 * experts (E/EP of them, balanced) as one grouped GEMM per projection over
 * the token-expert pairs the rank computes (tokens x K x ETP) at width
 * moe_ffn/ETP, or one GEMM per expert (SequentialMLP); their activation, the
 * permute / unpermute traffic; then the shared experts as a dense MLP. */
static void moe_mlp(const Tx *x, PartBlockT *b)
{
    static const char *const NM[4] = {"shared.fc1", "shared.fc3", "shared.act", "shared.fc2"};
    const ModelSpec *m = x->m;
    const ParallelPlan *p = x->p;
    int64_t H = m->hidden, E = m->experts, ep = p->ep, etp = p->etp > 0 ? p->etp : x->t;
    int64_t tok = p->sp ? x->Tsp : x->T;
    /* the busiest EP rank's share (imbalance, capacity): its experts' work */
    double pairs = (double)tok * (double)m->topk * (double)etp * part_moe_rank_load(m, p);
    int64_t local = E / ep > 0 ? E / ep : 1, me = (int64_t)ceil(pairs / (double)local), EF = m->moe_ffn / etp;
    bool seq = x->rt->sequential_experts;
    int32_t nk = seq ? (int32_t)local : 1;
    if (plan_hf(p)) {
        tpl_hf_moe(x, b);
    } else {
        half_layer(x, b);
        tpl_gemm(b, "router", 1, tok, E, H);
        /* the scores in fp32: softmax or sigmoid, the balancing bias or
         * auxiliary loss, top-k (read and write per pass, 3 passes), and
         * their gradient (2 passes) */
        PartKernel *topk = tpl_mem(b, "router.topk", 24.0 * (double)tok * (double)E, 16.0 * (double)tok * (double)E, 0);
        PartKernel *f1 = tpl_gemm(b, "experts.fc1", seq ? 1 : local, me, (x->gated ? 2 : 1) * EF, H);
        PartKernel *f2 = tpl_gemm(b, "experts.fc2", seq ? 1 : local, me, H, EF);
        double ea = pairs * (double)EF * x->ab / (double)nk;
        PartKernel *ac = tpl_mem(b, "experts.act", ea * (x->gated ? 3.0 : 2.0), ea * (x->gated ? 5.0 : 3.0),
                             8.0 * pairs * (double)EF / (double)nk);
        f1->count = f2->count = ac->count = nk;
        ac->rc = PLAN_RC_MOE_ACT;
        for (int i = 0; i < 3; i++) {
            f1->flops[i] *= nk;
            f2->flops[i] *= nk;
            ac->flops[i] *= nk;
        }
        PartKernel *pm = tpl_mem(b, "permute", 4.0 * pairs * (double)H * x->ab, 4.0 * pairs * (double)H * x->ab, 0);
        pm->flags |= PART_KF_PERMUTE;
        PartKernel *fc[2] = {f1, f2};
        if (p->framework == PLAN_FRAMEWORK_MEGATRON) mcore_moe_host(p, topk, fc, ac, pm, local, seq);
        if (m->moe_bias && !seq && p->framework == PLAN_FRAMEWORK_MEGATRON)
            grouped_fc2_bias(b, pairs * (double)H, x->ab, local);
    }
    double shared = 0;
    if (m->shared_experts > 0) {
        if (!plan_hf(p)) mlp(x, b, x->T, m->moe_ffn * m->shared_experts, NM);
        PartMlpParams sp;
        part_mlp_params(m, (double)(m->moe_ffn * m->shared_experts), false, &sp);
        shared = sp.tp / (double)x->t + sp.rep;
    }
    double ex = (double)((x->gated ? 3 : 2) * H * EF + (m->moe_bias ? (x->gated ? 2 : 1) * EF + H : 0)) * (double)local;
    if (m->shared_experts > 0 && m->shared_gate) shared += (double)H; /* the shared experts' gate */
    b->expert_params = ex;
    b->params = ex + (double)(H * E + (m->moe_bias ? E : 0)) + shared + part_sublayer_norm_params(m);
    b->grad_t[0] = b->params - ex; /* norm, router and shared experts, as one */
    b->egrad_t[0] = (double)(H * EF) * (double)local; /* all local fc2, then fc1 */
    b->egrad_t[1] = ex - b->egrad_t[0];
}

/* Op-level SAC (torchtitan "selective op"): every second matmul output is
 * recomputed (wq wk wv wo w1 w3 w2 -> wk, wo, w3; GeLU MLP: wk, wo, fc2),
 * with every non-matmul op; dense non-MLA layers. The GEMMs are listed as
 * backward-only kernels of their blocks. */
static void sac_gemms(const Tx *x, PartBlockT *attn, PartBlockT *mlp_b)
{
    const ModelSpec *m = x->m;
    int64_t t = x->t, H = m->hidden, D = m->head_dim, F = m->ffn;
    tpl_gemm(attn, "sac.wk", 1, x->T, tpl_kv_heads(m) * D / t, H)->flags |= PART_KF_SAC_ONLY;
    tpl_gemm(attn, "sac.wo", 1, x->T, H, m->heads * D / t)->flags |= PART_KF_SAC_ONLY;
    if (x->gated) tpl_gemm(mlp_b, "sac.w3", 1, x->T, F / t, H)->flags |= PART_KF_SAC_ONLY;
    else tpl_gemm(mlp_b, "sac.fc2", 1, x->T, H, F / t)->flags |= PART_KF_SAC_ONLY;
}

/* ZeRO-3 / FSDP: the layer's gathered flat buffer copied out into the
 * parameters before each use (read + write), the gradients copied in (cast
 * to the reduction dtype) before the reduce-scatter. One kernel per layer,
 * on the layer's second block. */
static void fsdp_copy(const Tx *x, PartBlockT *b, double gp)
{
    if (!(gp > 0) || b->n_k >= PART_MAX_KERNELS) return;
    double gr = x->rt->grad_bytes > 0 ? x->rt->grad_bytes : x->ab;
    part_fsdp_copy_kernel(gp, x->ab, gr, x->p->recompute == PLAN_RECOMPUTE_FULL, &b->k[b->n_k++]);
}

/* A kernel run n times per micro-batch (its FLOPs those of all n). */
static void times(PartKernel *k, int64_t n)
{
    k->count = (int32_t)n;
    for (int i = 0; i < 3; i++) k->flops[i] *= (double)n;
}

/* The vocab-parallel cross-entropy over `logits` of the rank's logits, in
 * bytes per logit read and written (PartRuntime.ce_fusion):
 *   fp32 eager ops (Megatron's default, tensor_parallel/cross_entropy.py,
 *     the same since Megatron-LM v2.5's mpu/cross_entropy.py): the fp32
 *     upcast (ab + 4 B), the max (4), the subtraction in place (8), exp in
 *     place (8), the sum (4) and the normalisation in place (8) forward; the
 *     saved softmax scaled by the output gradient in place (8) and the
 *     upcast's backward, a downcast (4 + ab), backward;
 *   PyTorch's F.cross_entropy on the upcast logits (torchtitan: its
 *     Transformer returns self.output(h).float(), train.py's loss_fn): the
 *     upcast (ab + 4), log_softmax's three reads and a write (16) forward;
 *     nll_loss's zeroed gradient (4), log_softmax's backward (16) and the
 *     downcast (4 + ab) backward, as HF's loss (template_hf.c hf_loss);
 *   Megatron-Core's fused (megatron/core/fusions/fused_cross_entropy.py): the
 *     fp32 upcast with its max (6 B), exp in place (8), the sum (4) and the
 *     normalisation in place (8) forward; the gradient scaled in place (8)
 *     and cast to the logits' dtype (6) backward;
 *   Transformer Engine's (transformer_engine/pytorch/triton/
 *     cross_entropy.py, as the published Megatron-Bridge tables ran it):
 *     forward, an online softmax reads the 16-bit logits, then a second
 *     kernel reads them again and writes the gradient over them (3 ab);
 *     backward scales that gradient in place (2 ab). TE from July 2026
 *     (#3193) keeps the gradient in fp32 instead: 2 ab + 4 forward, 8 and
 *     the downcast (4 + ab) backward. */
static PartKernel *cross_entropy(const Tx *x, PartBlockT *h, const char *name, double logits)
{
    double ab = x->ab, f = ab + 36.0, b = ab + 12.0;
    if (plan_eager(x->p)) f = ab + 20.0, b = ab + 24.0;
    if (x->rt && x->rt->ce_fusion == PART_CE_NATIVE) f = 26.0, b = 14.0;
    if (x->rt && x->rt->ce_fusion == PART_CE_TE) f = 3.0 * ab, b = 2.0 * ab;
    return tpl_mem(h, name, logits * f, logits * b, 5.0 * logits);
}

/* The multi-token-prediction modules' own kernels (DeepSeek-V3 §2.2,
 * Megatron-Core's MultiTokenPredictionLayer), each module once per
 * micro-batch: the next tokens' rows of the shared embedding, the norms of
 * the embedding and of the hidden state, the 2H -> H projection of their
 * concatenation, then (after the module's transformer layer, one of the
 * chunk's layers) its final norm, the shared output head and its loss. */
static void mtp_kernels(const Tx *x, PartBlockT *h, double logits)
{
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, t = x->t, V = model_padded_vocab(m, t), T = x->T, n = m->mtp_layers;
    double th = (double)T * (double)H * x->ab, tsp = (double)x->Tsp * (double)H * x->ab;
    times(tpl_mem(h, "mtp.embed", 2 * th, (double)T * (double)H * 4.0, 0), n);
    times(tpl_mem(h, "mtp.norms", 6 * tsp, 9 * tsp, 15.0 * (double)x->Tsp * (double)H), n);
    times(tpl_gemm(h, "mtp.proj", 1, T, H / t, 2 * H), n);
    PartKernel *lm = tpl_gemm(h, "mtp.lm_head", 1, T, V / t, H);
    lm->flags |= PART_KF_ACT;
    times(lm, n);
    times(cross_entropy(x, h, "mtp.cross_entropy", logits), n);
}

/* Megatron-Core's embedding and head kernels (the vocab-parallel
 * cross-entropy as the runtime fuses it). */
static void embed_head_kernels(const Tx *x, PartTemplate *o)
{
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, t = x->t, V = model_padded_vocab(m, t), T = x->T;
    PartBlockT *e = &o->b[PART_BLOCK_EMBED], *h = &o->b[PART_BLOCK_HEAD];
    double th = (double)T * (double)H * x->ab;
    tpl_mem(e, "embed.gather", 2 * th, 0, 0); /* gather rows (+ position add) */
    tpl_mem(e, "embed.scatter", 0, (double)T * (double)H * 4.0, 0)->flags |= PART_KF_WGRAD; /* into the fp32 grad */
    double tsp = (double)x->Tsp * (double)H * x->ab;
    tpl_mem(h, "final_norm", 2 * tsp, 3 * tsp, 5.0 * (double)x->Tsp * (double)H);
    tpl_gemm(h, "lm_head", 1, T, V / t, H)->flags |= PART_KF_ACT; /* not a TE module: bf16 even under fp8 */
    double logits = (double)T * (double)(V / t);
    cross_entropy(x, h, "cross_entropy", logits);
    if (m->mtp_layers > 0) mtp_kernels(x, h, logits);
}

static void embed_head(const Tx *x, PartTemplate *o)
{
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, t = x->t, V = model_padded_vocab(m, t), T = x->T;
    PartBlockT *e = &o->b[PART_BLOCK_EMBED], *h = &o->b[PART_BLOCK_HEAD];
    if (plan_hf(x->p)) tpl_hf_embed_head(x, o);
    else embed_head_kernels(x, o);
    e->params = (double)(V / t * H) + (m->pos == MODEL_POS_LEARNED ? (double)(m->max_positions * H) : 0) +
                (double)(m->type_vocab * H) + (m->embed_norm ? part_norm_params(m) : 0);
    e->grad_t[0] = e->params;
    /* the output layer (tied: its own copy of the word embedding on the
     * last stage when there are several), the final norm; BERT's pooler,
     * and its masked-LM head's transform (dense, LayerNorm) and decoder
     * bias */
    bool mlm = m->arch == MODEL_ARCH_BERT && m->lm_head;
    h->params = (m->tied_embeddings && x->p->pp == 1 ? 0 : (double)(V / t * H)) +
                (m->arch == MODEL_ARCH_BERT ? 0 : part_norm_params(m)) + (m->pooler ? (double)(H * H + H) : 0) +
                (mlm ? (double)(H * H + H) + part_norm_params(m) + (double)(V / t) : 0);
    /* MTP modules: their projection and three norms; the shared embedding's
     * copy on the last stage when the pipeline has several (their layers
     * are the chunk's) */
    if (m->mtp_layers > 0 && !plan_hf(x->p))
        h->params += (double)m->mtp_layers * ((double)(2 * H * H / t) + 3.0 * part_norm_params(m)) +
                     (x->p->pp > 1 ? (double)(V / t * H) : 0);
    h->grad_t[0] = h->params;
    double th = (double)T * (double)H * x->ab;
    o->embed_tp_bytes = t > 1 ? th : 0;
    o->head_sp_bytes = t > 1 && x->p->sp ? th : 0;
    o->vocab_ar_bytes = t > 1 ? (double)T * 4.0 : 0;
}

/* The bytes CP exchanges per micro-batch on this TP rank: K and V of every
 * CP rank (MLA: the latent's share), and for the all-to-all Q and the
 * output. */
static void cp_bytes(const Tx *x, PartTemplate *o)
{
    const ModelSpec *m = x->m;
    if (x->p->cp <= 1) return;
    int64_t t = x->t;
    int64_t kvd = m->kv_lora_rank > 0 ? m->heads * (m->qk_nope_dim + m->qk_rope_dim + m->v_head_dim) / 2
                                      : tpl_kv_heads(m) * m->head_dim;
    double tok = (double)(x->B * x->Sl);
    double kv = 2.0 * tok * (double)(kvd / (kvd >= t ? t : 1)) * x->ab;
    int64_t qd = m->kv_lora_rank > 0 ? m->heads * (m->qk_nope_dim + m->qk_rope_dim) : m->heads * m->head_dim;
    int64_t od = m->kv_lora_rank > 0 ? m->heads * m->v_head_dim : m->heads * m->head_dim;
    o->cp_kv_bytes = kv * (double)x->p->cp;
    o->cp_q_bytes = tok * (double)(qd / t) * x->ab;
    o->cp_o_bytes = tok * (double)(od / t) * x->ab;
}

/* The per-unit shards (ZeRO-3's parameters, and the gradients of every plan
 * that reduce-scatters them per micro-batch: plan_rs_per_microbatch): dense
 * over DP x CP, experts over the expert-DP group, each only where that group
 * has more than one rank. */
static void fsdp_shards(const ParallelPlan *p, PartBlockT *b)
{
    int64_t dpcp = p->dp * p->cp, edp = p->dp * p->cp * p->tp / ((p->etp > 0 ? p->etp : p->tp) * p->ep);
    if (!plan_rs_per_microbatch(p)) return;
    b->fsdp_params = dpcp > 1 ? b->params - b->expert_params : 0;
    b->fsdp_eparams = edp > 1 ? b->expert_params : 0;
}

void part_block_counts(const ModelSpec *m, double n[PART_BLOCK_COUNT])
{
    double nm = (double)model_moe_layer_count(m);
    for (int b = 0; b < PART_BLOCK_COUNT; b++) n[b] = 0;
    n[PART_BLOCK_ATTN] = (double)m->layers, n[PART_BLOCK_MLP] = (double)m->layers - nm;
    n[PART_BLOCK_MOE] = nm, n[PART_BLOCK_EMBED] = n[PART_BLOCK_HEAD] = 1;
}

void part_template(const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt, PartTemplate *o)
{
    PartRuntime def;
    if (!rt) {
        part_runtime_init(&def);
        rt = &def;
    }
    /* no memset of the whole template (kernels are written as they are
     * added): the sweep builds one per plan it costs */
    for (int b = 0; b < PART_BLOCK_COUNT; b++) {
        PartBlockT *bl = &o->b[b];
        bl->n_k = bl->param_tensors = bl->modules = 0;
        bl->params = bl->expert_params = bl->fsdp_params = bl->fsdp_eparams = 0;
        bl->grad_t[0] = bl->grad_t[1] = bl->egrad_t[0] = bl->egrad_t[1] = 0;
    }
    o->tp_bytes = o->ep_bytes = o->cp_kv_bytes = o->cp_q_bytes = o->cp_o_bytes = 0;
    o->embed_tp_bytes = o->head_sp_bytes = o->vocab_ar_bytes = o->boundary_bytes = 0;
    o->fsdp_layer_params[0] = o->fsdp_layer_params[1] = 0;
    o->loss_workspace_bytes = 0;
    TsDtype adt = p->dtype == TS_DTYPE_FP8 ? TS_DTYPE_BF16 : p->dtype; /* activations: bf16 under fp8 */
    Tx x = {.m = m, .p = p, .rt = rt, .t = p->tp, .B = p->micro_batch, .S = p->seq, .Sl = p->seq / p->cp,
            .ab = (double)ts_dtype_bytes(adt), .gated = model_act_gated(m->act)};
    x.T = x.B * x.Sl;
    x.Tsp = p->sp ? x.T / p->tp : x.T;
    o->tokens = x.T;
    o->tokens_sp = x.Tsp;
    o->act_bytes = x.ab;
    attention(&x, &o->b[PART_BLOCK_ATTN]);
    dense_mlp(&x, &o->b[PART_BLOCK_MLP]);
    if (m->experts > 0) moe_mlp(&x, &o->b[PART_BLOCK_MOE]);
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE && rt->selective_ops && m->experts == 0 && m->kv_lora_rank == 0)
        sac_gemms(&x, &o->b[PART_BLOCK_ATTN], &o->b[PART_BLOCK_MLP]);
    embed_head(&x, o);
    if (plan_hf(p))
        for (int b = 0; b < PART_BLOCK_COUNT; b++) tpl_hf_accumulate(&x, &o->b[b], (PartBlock)b);
    for (int b = 0; b < PART_BLOCK_COUNT; b++) fsdp_shards(p, &o->b[b]);
    const PartBlockT *a = &o->b[PART_BLOCK_ATTN];
    for (int k = 0; k < 2; k++) {
        const PartBlockT *mb = &o->b[k ? PART_BLOCK_MOE : PART_BLOCK_MLP];
        o->fsdp_layer_params[k] = a->fsdp_params + a->fsdp_eparams + mb->fsdp_params + mb->fsdp_eparams;
    }
    if (part_fsdp_copies(p)) {
        fsdp_copy(&x, &o->b[PART_BLOCK_MLP], o->fsdp_layer_params[0]);
        if (m->experts > 0) fsdp_copy(&x, &o->b[PART_BLOCK_MOE], o->fsdp_layer_params[1]);
    }
    o->tp_bytes = p->tp > 1 ? (double)x.T * (double)m->hidden * x.ab : 0;
    o->ep_bytes = p->ep > 1 && m->experts > 0 ? (double)(p->sp ? x.Tsp : x.T) * (double)m->topk * (double)m->hidden * x.ab : 0;
    o->ep_dispatch_bytes = o->ep_bytes;
    if (p->moe_dispatch == PLAN_MOE_DISPATCH_DEEPEP && p->dtype == TS_DTYPE_FP8) /* FP8 + 1x128 scales */
        o->ep_dispatch_bytes = o->ep_bytes / x.ab * (1.0 + 4.0 / 128.0);
    o->moe_load = part_moe_rank_load(m, p);
    cp_bytes(&x, o);
    /* the pipeline message: 1/TP of the activation per TP rank (SP-sharded,
     * or Megatron's scatter/gather across the boundary), or the whole
     * activation on every TP rank (DeepSpeed's pipeline engine) */
    o->boundary_bytes = (double)x.T * (double)m->hidden * x.ab / (plan_ds_pipe(p) ? 1.0 : (double)p->tp);
}

bool part_fsdp_copies(const ParallelPlan *p)
{
    return p->zero >= 3 && (p->framework == PLAN_FRAMEWORK_TORCHTITAN || p->framework == PLAN_FRAMEWORK_DEEPSPEED);
}

void part_fsdp_copy_kernel(double params, double ab, double gr, bool full, PartKernel *k)
{
    memset(k, 0, sizeof *k);
    k->name = "fsdp.copy";
    k->kind = PART_K_MEM;
    k->part = PART_KP_MEM;
    k->flags = PART_KF_FSDP;
    k->count = 1;
    k->fwd_bytes = 2.0 * params * ab;
    k->bwd_bytes = params * ((full ? 0.0 : 2.0 * ab) + ab + gr);
}
