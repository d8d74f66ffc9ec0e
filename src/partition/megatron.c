/* megatron.c — Megatron-LM's theoretical memory formula, reproduced exactly
 * (megatron/training/theoretical_memory_usage.py: compute_weight_and_optimizer_memory
 * and compute_activation_memory; see /work/shared/reference/performance_model.md §4).
 *
 * Python evaluates these in floating point; so do we, in the same order, so
 * results match to the last bit for the same inputs. Deliberately kept as in
 * the source, including what it leaves out (docs/memory.md lists it):
 * expert params are not divided by EP, no CP term, no full-recompute branch,
 * other_bytes = 0. The formula is for the most loaded (first) stage; the
 * other stages are our extension: (block / (pp*tp)) params and the layer
 * term for their in-flight micro-batches. */
#include "part_int.h"

#include <math.h>
#include <string.h>

/* Attention parameters of one layer (self_attn_term). */
static double self_attn_term(const ModelSpec *m)
{
    double h = (double)m->hidden, A = (double)m->heads;
    if (m->q_lora_rank > 0 || m->kv_lora_rank > 0) {
        double qk = (double)m->qk_nope_dim, rope = (double)m->qk_rope_dim;
        double vd = (double)m->v_head_dim, kvr = (double)m->kv_lora_rank;
        double q_term;
        if (m->q_lora_rank <= 0) q_term = h * A * (qk + rope);
        else q_term = (double)m->q_lora_rank * (h + A * (qk + rope) + 1);
        return q_term + kvr * (h + A * (qk + vd) + 1) + h * rope + (A * vd) * h;
    }
    double qps = (double)(m->head_dim * m->heads);
    double ratio = qps / h;
    return 2 * h * h * ((1 + ((double)m->kv_heads / A)) * ratio);
}

/* num_parameters_in_transformer_block: all layers + final norm. */
static double block_params(const ModelSpec *m)
{
    double h = (double)m->hidden, L = (double)m->layers;
    double gated = model_act_gated(m->act) ? 3.0 / 2.0 : 1.0;
    double norm = m->norm == MODEL_NORM_RMSNORM ? 1.0 : 2.0;
    double n_moe = (double)model_moe_layer_count(m), n_dense = L - n_moe;
    double shared = (double)(m->shared_experts * m->moe_ffn);
    double mlp_dense = 2 * h * (double)m->ffn * gated;
    double mlp_moe = 2 * h * ((double)m->moe_ffn * (double)m->experts * gated + shared * gated);
    return n_dense * mlp_dense + n_moe * mlp_moe + self_attn_term(m) * L
         + 2 * norm * h * L /* transformer layernorms */
         + norm * h;        /* final layernorm */
}

static double megatron_vocab(const ModelSpec *m, const ParallelPlan *p)
{
    return (double)model_padded_vocab(m, p->tp);
}

static double embedding_size(const ModelSpec *m, const ParallelPlan *p)
{
    return (double)m->hidden * megatron_vocab(m, p);
}

static double shard_params(const ModelSpec *m, const ParallelPlan *p)
{
    double emb = embedding_size(m, p), tp = (double)p->tp;
    double most = (block_params(m) / (double)p->pp + emb) / tp;
    if (!m->tied_embeddings && p->pp == 1) most += emb / tp;
    return most;
}

static double bytes_per_param(const ParallelPlan *p)
{
    return !p->dist_opt ? 18.0 : 6 + (12 / (double)p->dp);
}

double part_megatron_weight_optimizer_bytes(const ModelSpec *m, const ParallelPlan *p)
{
    return shard_params(m, p) * bytes_per_param(p);
}

static bool sp_selective(const ParallelPlan *p)
{
    return p->sp && p->recompute == PLAN_RECOMPUTE_SELECTIVE;
}

/* Per-layer term (bytes, before the final / TP of the SP+selective branch). */
static double layer_term(const ModelSpec *m, const ParallelPlan *p)
{
    double s = (double)p->seq, b = (double)p->micro_batch, h = (double)m->hidden;
    if (sp_selective(p)) return (s * b * h) * (18 + (4 * ((double)m->ffn / h)));
    return (s * b * h) * (10 + 24 / (double)p->tp);
}

double part_megatron_activation_bytes(const ModelSpec *m, const ParallelPlan *p)
{
    double s = (double)p->seq, b = (double)p->micro_batch, h = (double)m->hidden;
    double pp = (double)p->pp, tp = (double)p->tp;
    double act = layer_term(m, p);
    act *= (double)m->layers;
    act += 8 * s * b * pp;     /* input to embedding (pp micro-batches in flight) */
    act += s * b * h * pp;     /* dropout in embedding layer */
    if (p->vpp > 1) {
        double penalty = 1 + ((pp - 1) / (pp * (double)p->vpp));
        act *= penalty;
    }
    if (p->vpp <= 1 && p->pp > 1) {
        double mb = (double)p->grad_accum;
        act *= fmin(1, mb / pp);
    }
    if (sp_selective(p)) {
        if (p->pp == 1) act += s * b * h * 4 * (1 + (megatron_vocab(m, p) / h));
        return act / tp;
    }
    /* Other combinations: the layer term already carries its TP split; the
     * output layer + CE term is vocab-parallel; 5% extra for temporaries. */
    if (p->pp == 1) act += s * b * h * 4 * (1 + (megatron_vocab(m, p) / h)) / tp;
    return act * 1.05;
}

TsStatus part_memory_megatron(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o,
                              PartMemory *stages, PartMemory *peak)
{
    (void)o;
    double bpp = bytes_per_param(p), tp = (double)p->tp, pp = (double)p->pp;
    double opt_b = bpp - 6; /* 12 or 12/DP */
    double blk = block_params(m);
    double act0 = part_megatron_activation_bytes(m, p);
    double layer = layer_term(m, p) / (sp_selective(p) ? tp : 1.0) * (sp_selective(p) ? 1 : 1.05);
    for (int64_t s = 0; s < p->pp; s++) {
        PartMemory x;
        memset(&x, 0, sizeof x);
        x.stage = (int32_t)s;
        if (s == 0) {
            x.params = shard_params(m, p);
            x.embed_params = (embedding_size(m, p) * ((!m->tied_embeddings && p->pp == 1) ? 2 : 1)) / tp;
            x.activations_bytes = act0;
            x.inflight = p->vpp > 1 ? pp * (1 + (pp - 1) / (pp * (double)p->vpp))
                                    : (p->pp > 1 ? fmin((double)p->grad_accum, pp) : 1);
        } else {
            x.params = blk / (pp * tp);
            double infl = fmin(pp - (double)s, (double)p->grad_accum);
            if (p->vpp > 1) {
                double u = (pp - (double)s - 1) * 2 + ((double)p->vpp - 1) * pp + 1;
                infl = fmin(u, (double)(p->grad_accum * p->vpp)) / (double)p->vpp;
            }
            x.inflight = infl;
            x.activations_bytes = layer * ((double)m->layers / pp) * infl;
        }
        x.act_layers_bytes = x.activations_bytes;
        x.weights_bytes = x.params * 2;
        x.gradients_bytes = x.params * 4;
        x.optimizer_bytes = x.params * opt_b;
        x.total_bytes = x.weights_bytes + x.gradients_bytes + x.optimizer_bytes + x.activations_bytes;
        if (stages) stages[s] = x;
        if (s == 0 || x.total_bytes > peak->total_bytes) *peak = x;
        if (!stages && s == 0) break; /* the formula's stage is the peak by construction */
    }
    return TS_OK;
}
