/* counts.c — per-layer parameter and activation counts from a ModelSpec.
 *
 * Dimension legend: B micro-batch, S seq, H hidden, A heads, G kv heads,
 * D head dim, F ffn, V vocab, E experts, K top-k, t TP, c CP.
 * The parameter split mirrors Megatron-Core's layer specs (ColumnParallel
 * QKV/fc1/q_up/kv_up, RowParallel proj/fc2, duplicated MLA down-projections
 * and norms, replicated router); totals agree with model_count_params()
 * (tests/unit/test_partition.c checks it). */
#include "part_int.h"

double part_norm_params(const ModelSpec *m)
{
    return m->norm == MODEL_NORM_LAYERNORM ? 2.0 * (double)m->hidden : (double)m->hidden;
}

static double norm_w(const ModelSpec *m) { return part_norm_params(m); }

double part_sublayer_norm_params(const ModelSpec *m) { return (double)model_sublayer_norms(m) * norm_w(m); }

static bool is_mla(const ModelSpec *m) { return m->q_lora_rank > 0 || m->kv_lora_rank > 0; }

void part_attn_params(const ModelSpec *m, PartAttnParams *o)
{
    double H = (double)m->hidden, A = (double)m->heads, G = (double)m->kv_heads;
    double D = (double)m->head_dim;
    o->rep = part_sublayer_norm_params(m);
    o->tp = 0;
    if (is_mla(m)) {
        double qk = (double)(m->qk_nope_dim + m->qk_rope_dim), qr = (double)m->q_lora_rank;
        double kvr = (double)m->kv_lora_rank, vd = (double)m->v_head_dim;
        if (m->q_lora_rank > 0) { o->rep += H * qr + qr; o->tp += qr * A * qk; }
        else o->tp += H * A * qk;
        o->rep += H * (kvr + (double)m->qk_rope_dim) + kvr;
        o->proj_tp = A * vd * H;
        o->proj_rep = 0;
        o->tp += kvr * A * ((double)m->qk_nope_dim + vd) + o->proj_tp;
        return;
    }
    double qkv = A * D + 2 * G * D;
    o->proj_tp = A * D * H;
    o->proj_rep = m->proj_bias ? H : 0;
    o->tp += H * qkv + (m->qkv_bias ? qkv : 0) + o->proj_tp;
    o->rep += o->proj_rep;
    if (m->qk_norm && m->qk_norm_full) o->tp += (A + G) * D; /* OLMo 2: split with the heads */
    else if (m->qk_norm) o->rep += 2 * D;
    if (m->attn_sinks) o->tp += A; /* a sink logit per head, split with the heads */
}

void part_mlp_params(const ModelSpec *m, double F, bool bias, PartMlpParams *o)
{
    double H = (double)m->hidden;
    bool gated = model_act_gated(m->act);
    o->tp = (gated ? 3 : 2) * H * F + (bias ? (gated ? 2 : 1) * F : 0);
    o->rep = bias ? H : 0;
    o->fc2_tp = H * F;
    o->fc2_rep = o->rep;
}

/* Attention block including its input norm: tp-split and replicated parts. */
static void attn_counts(const ModelSpec *m, double *tp, double *rep)
{
    PartAttnParams a;
    part_attn_params(m, &a);
    *tp = a.tp;
    *rep = a.rep;
}

static void mlp_counts(const ModelSpec *m, double F, bool bias, double *tp, double *rep)
{
    PartMlpParams p;
    part_mlp_params(m, F, bias, &p);
    *tp = p.tp;
    *rep = p.rep;
}

void part_counts(const ModelSpec *m, int64_t tp, PartCounts *c)
{
    double H = (double)m->hidden;
    double atp, arep, mtp, mrep;
    attn_counts(m, &atp, &arep);
    mlp_counts(m, (double)m->ffn, m->mlp_bias, &mtp, &mrep);
    c->dense_tp = atp + mtp;
    c->dense_rep = arep + mrep + part_sublayer_norm_params(m);
    c->moe_tp = c->moe_rep = c->moe_exp = 0;
    if (m->experts > 0) {
        double etp, erep, stp = 0, srep = 0;
        mlp_counts(m, (double)m->moe_ffn, m->moe_bias, &etp, &erep);
        if (m->shared_experts > 0)
            mlp_counts(m, (double)(m->moe_ffn * m->shared_experts), false, &stp, &srep);
        c->moe_tp = atp + stp;
        c->moe_rep = arep + part_sublayer_norm_params(m) + (H + (m->moe_bias ? 1 : 0)) * (double)m->experts +
                     (m->shared_experts > 0 && m->shared_gate ? H : 0);
        c->moe_exp = (double)m->experts * (etp + erep);
    }
    c->vocab_padded = (double)model_padded_vocab(m, tp);
    c->embed_tp = c->vocab_padded * H;
    c->embed_rep = (m->pos == MODEL_POS_LEARNED ? (double)m->max_positions * H : 0) +
                   (double)m->type_vocab * H + (m->arch == MODEL_ARCH_BERT ? norm_w(m) : 0);
    /* the output layer, the final norm; BERT's pooler, its masked-LM head's
     * transform (dense, LayerNorm) and decoder bias (split with the vocab) */
    bool mlm = m->arch == MODEL_ARCH_BERT && m->lm_head;
    c->head_tp = ((m->lm_head && !m->tied_embeddings) ? c->vocab_padded * H : 0) + (mlm ? c->vocab_padded : 0);
    c->head_rep = (m->arch == MODEL_ARCH_BERT ? 0 : norm_w(m)) + (m->pooler ? H * H + H : 0) +
                  (mlm ? H * H + H + norm_w(m) : 0);
    c->n_moe = model_moe_layer_count(m);
}

double part_moe_rank_load(const ModelSpec *m, const ParallelPlan *p)
{
    if (m->experts <= 0) return 1.0;
    double f = p->moe_imbalance > 1.0 ? p->moe_imbalance : 1.0, c = p->moe_capacity;
    if (c > 0 && p->moe_pad) return c;
    if (c > 0 && f > c) f = c;
    double local = (double)(m->experts / (p->ep > 0 ? p->ep : 1));
    if (local < 1) local = 1;
    return (f + local - 1.0) / local;
}

int64_t part_moe_in_range(const ModelSpec *m, int64_t a, int64_t b)
{
    if (m->experts <= 0) return 0;
    int64_t f = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1, dl = m->dense_layers;
    if (a < dl) a = dl;
    if (b <= a) return 0;
    /* count k in [a, b) with (k - dl) % f == 0 */
    int64_t lo = (a - dl + f - 1) / f, hi = (b - 1 - dl) / f;
    return hi >= lo ? hi - lo + 1 : 0;
}

/* ---- Shampoo ---------------------------------------------------------------- */
/* One matrix of per-rank shape rows x cols split into K blocks along dim
 * (0: rows, 1: cols): K blocks, factors a x a and b x b, 8 bytes per factor
 * element (fp32 statistic + fp32 inverse root). */
static double shampoo_matrix(double rows, double cols, int dim, double K)
{
    double a = dim == 0 ? rows / K : rows, b = dim == 1 ? cols / K : cols;
    return K * 8.0 * (a * a + b * b);
}

double part_shampoo_layer_bytes(const ModelSpec *m, const ParallelPlan *p, bool moe)
{
    double H = (double)m->hidden, A = (double)m->heads, G = (double)m->kv_heads;
    double D = (double)m->head_dim, t = (double)p->tp, K = (double)p->shampoo_blocks;
    bool gated = model_act_gated(m->act);
    double s = 0;
    if (is_mla(m)) {
        double qk = (double)(m->qk_nope_dim + m->qk_rope_dim), vd = (double)m->v_head_dim;
        double qr = (double)m->q_lora_rank, kvr = (double)m->kv_lora_rank;
        if (m->q_lora_rank > 0) {
            s += shampoo_matrix(qr, H, 0, K);
            s += shampoo_matrix(A * qk / t, qr, 0, K);
        } else {
            s += shampoo_matrix(A * qk / t, H, 0, K);
        }
        s += shampoo_matrix(kvr + (double)m->qk_rope_dim, H, 0, K);
        s += shampoo_matrix(A * ((double)m->qk_nope_dim + vd) / t, kvr, 0, K);
        s += shampoo_matrix(H, A * vd / t, 1, K);
    } else {
        s += shampoo_matrix((A + 2 * G) * D / t, H, 0, K);
        s += shampoo_matrix(H, A * D / t, 1, K);
    }
    if (!moe) {
        double F = (double)m->ffn;
        s += shampoo_matrix((gated ? 2 : 1) * F / t, H, 0, K);
        s += shampoo_matrix(H, F / t, 1, K);
    } else {
        double F = (double)m->moe_ffn, e = (double)p->etp;
        double local = (double)m->experts / (double)p->ep;
        s += local * (shampoo_matrix((gated ? 2 : 1) * F / e, H, 0, K) +
                      shampoo_matrix(H, F / e, 1, K));
        if (m->shared_experts > 0) {
            double Fs = F * (double)m->shared_experts;
            s += shampoo_matrix((gated ? 2 : 1) * Fs / t, H, 0, K) + shampoo_matrix(H, Fs / t, 1, K);
        }
        s += shampoo_matrix((double)m->experts, H, 0, K); /* router */
    }
    return s;
}

/* ---- activations (Korthikanti et al. 2022, Table 2, generalized) --------------- */

/* Dropout masks (1 byte per element) exist only where the model's
 * probability is positive: ModelSpec.hidden_dropout for the two residual
 * branches, attn_dropout for the S x S probabilities. */
void part_layer_act(const ModelSpec *m, const ParallelPlan *p, bool moe, bool sac_ops, PartLayerAct *out)
{
    double t = (double)p->tp, r = p->sp ? 1.0 / t : 1.0;
    double S = (double)p->seq, cpd = (double)p->cp;
    double sb = S / cpd * (double)p->micro_batch;                /* tokens on this CP rank */
    double H = (double)m->hidden, A = (double)m->heads, G = (double)m->kv_heads;
    double Dq = (double)m->head_dim, Dv = Dq;
    double d = p->dtype == TS_DTYPE_FP32 ? 4.0 : 2.0;         /* fp8 recipes keep bf16 activations */
    bool gated = model_act_gated(m->act);
    double mask = m->hidden_dropout > 0 ? 1.0 : 0.0;          /* 1-byte dropout masks */
    bool attn_drop = m->attn_dropout > 0;

    /* Transformer Engine FP8 saves the fp8 copy of each GEMM input for the
     * weight gradient (1 B): QKV in, proj in, fc1 in, fc2 in; norm inputs,
     * Q/K/V and the gated halves stay bf16. */
    double g8 = p->dtype == TS_DTYPE_FP8 ? 1.0 : d;
    uint32_t mods = plan_rc_modules(p);
    /* recomputed norms: their outputs (the next GEMMs' inputs) are not kept */
    double norm_out = (mods & PLAN_RC_LAYERNORM) ? 0.0 : 2 * g8;
    /* SP-shardable (else TP-replicated): LN1 in, QKV in, LN2 in, fc1/router in,
     * 2 masks; a sandwich's output norms keep their inputs too */
    double rep = sb * H * (2.0 * (double)model_sublayer_norms(m) * d + norm_out + 2 * mask) * r;
    double extra = 0;                                          /* never sharded */
    if (is_mla(m)) {
        G = A;
        Dq = (double)(m->qk_nope_dim + m->qk_rope_dim);
        Dv = (double)m->v_head_dim;
        extra += sb * (double)(m->q_lora_rank + m->kv_lora_rank + m->qk_rope_dim) * d;
    }
    /* TP-partitioned: Q, K, V, proj input; MLA's up-projections recomputed:
     * Q, K, V rebuilt from the kept latents */
    double qkv = (mods & PLAN_RC_MLA_UP_PROJ) ? 0.0 : (A * Dq + G * Dq + G * Dv) * d;
    double tpb = sb * (qkv + A * Dv * g8) / t;
    /* attention core: FlashAttention keeps only the fp32 log-sum-exp; otherwise
     * softmax output (d) + dropout mask (1) + dropout output (d) per score,
     * dropped by selective recompute. */
    double lse = sb * A * 4.0 / t, scores = A * sb * S * (attn_drop ? 2 * d + 1 : d) / t;
    double core_kept = p->flash_attn ? lse : scores; /* without recompute */
    double core = !p->flash_attn && p->recompute == PLAN_RECOMPUTE_SELECTIVE ? 0 : core_kept;
    double mlp;
    if (!moe) {
        double F = (double)m->ffn;
        mlp = sb * F * (d * (gated ? 2.0 : 1.0) + g8) / t;     /* fc1 out (gate+up), act out = fc2 in */
    } else {
        double K = (double)m->topk, E = (double)m->experts, Fe = (double)m->moe_ffn;
        double e = (double)p->etp;
        /* routed token copies on the busiest EP rank */
        double tok = sb * K * (p->sp ? e / t : 1.0) * part_moe_rank_load(m, p);
        /* fc1 out (gate and up) for the activation's backward: FP8 with
         * 1x128 scales when moe_act recomputes the activation under
         * blockwise FP8 (DeepSeek-V3 §3.3.3), else at the activation dtype;
         * the activation's output (fc2 in) kept as fc2's input (its FP8
         * copy under FP8) unless moe_act recomputes it */
        bool blk = p->dtype == TS_DTYPE_FP8 && p->fp8_recipe == PLAN_FP8_BLOCKWISE, ract = mods & PLAN_RC_MOE_ACT;
        double fc1o = (gated ? 2.0 : 1.0) * (ract && blk ? 1.0 + 4.0 / 128.0 : d), acto = ract ? 0.0 : g8;
        mlp = sb * r * E * 4.0                                  /* fp32 router probabilities */
            + tok * (H * g8 + Fe / e * (fc1o + acto));          /* expert fc1 in, fc1 out, act out */
        if (m->shared_experts > 0)
            mlp += sb * Fe * (double)m->shared_experts * (d * (gated ? 2.0 : 1.0) + g8) / t;
    }
    out->full = rep + extra + tpb + core + mlp;
    out->input = sb * H * d * r;
    out->remat = 0;
    if (sac_ops && p->recompute == PLAN_RECOMPUTE_SELECTIVE && !moe && !is_mla(m)) {
        /* op-level SAC (torchtitan "selective op", the policy sim/cost.c
         * times): the checkpoint keeps the layer input, the policy keeps the
         * outputs of every second matmul (wq wk wv wo w1 w3 w2 -> wq, wv, w1,
         * w2; GeLU MLP: wq, wv, fc1) and of the flash attention (output and
         * fp32 log-sum-exp); the backward re-materializes the rest, one
         * layer at a time. w2's output is the row-parallel partial sum, whole
         * on every TP rank. */
        double F = (double)m->ffn;
        double saved = out->input + sb * d * (A * Dq + G * Dv) / t + sb * d * (gated ? F / t + H : F / t);
        if (p->flash_attn) saved += sb * A * Dv * d / t + lse;
        double none = out->full - core + core_kept;
        out->full = saved;
        out->remat = none > saved ? none - saved : 0;
    }
}

double part_layer_model_flops(const ModelSpec *m, int64_t S, bool moe, bool causal)
{
    double H = (double)m->hidden, A = (double)m->heads, G = (double)m->kv_heads, D = (double)m->head_dim;
    double dqk = D, dv = D, attn;
    double gw = model_act_gated(m->act) ? 3.0 : 2.0;
    if (m->kv_lora_rank > 0) {
        double qr = (double)m->q_lora_rank, kvr = (double)m->kv_lora_rank;
        dqk = (double)(m->qk_nope_dim + m->qk_rope_dim);
        dv = (double)m->v_head_dim;
        attn = H * qr + (qr > 0 ? qr : H) * A * dqk + H * (kvr + (double)m->qk_rope_dim) +
               kvr * A * ((double)m->qk_nope_dim + dv);
    } else {
        attn = H * (A + 2 * G) * D;
    }
    attn += A * dv * H + 2.0 * H;
    /* 2 FLOPs per product of Q.K and P.V, the mean layer's keys per query (sliding windows) */
    double f = 2.0 * attn + 2.0 * model_attn_keys_mean(m, S, causal) * A * (dqk + dv);
    if (!moe) return f + 2.0 * gw * H * (double)m->ffn;
    f += 2.0 * (double)m->topk * gw * H * (double)m->moe_ffn + 2.0 * H * (double)m->experts;
    if (m->shared_experts > 0) f += 2.0 * gw * H * (double)(m->moe_ffn * m->shared_experts);
    return f;
}

double part_model_flops_token(const ModelSpec *m, int64_t S, bool causal)
{
    double nm = (double)model_moe_layer_count(m), nd = (double)m->layers - nm;
    double H = (double)m->hidden, head = 2.0 * H * (double)model_padded_vocab(m, 1);
    /* each MTP module: a layer of the last layer's kind, the 2H -> H
     * projection and another pass through the output head */
    double mtp = (double)m->mtp_layers *
                 (part_layer_model_flops(m, S, model_layer_is_moe(m, m->layers), causal) + 4.0 * H * H + head);
    return nd * part_layer_model_flops(m, S, false, causal) +
           (nm > 0 ? nm * part_layer_model_flops(m, S, true, causal) : 0) + head + mtp;
}
