/* The op table of BERT: the fx nodes of HuggingFace's BERT pretraining
 * models with eager attention (transformers 4.40's modeling_bert.py, the
 * last release whose BertSelfAttention is only the eager one): with a pooler
 * in the spec BertForPreTraining (MLM and next-sentence heads, as
 * bert-base-uncased was trained), else BertForMaskedLM. A training step
 * needs a head, so the table has the MLM head even where the spec is a bare
 * BertModel (the profiler's preset).
 *
 *   prologue  ones (the attention mask), the token-type buffer's slice and
 *             expand, get_extended_attention_mask (slice, cast, 1 - m, * min);
 *             word/token-type/position embeddings, add, iadd, LayerNorm,
 *             dropout
 *   block     query, key, value linears (with bias), each transpose_for_scores
 *             (view, permute); matmul(q, k^T), truediv by sqrt(D), add of the
 *             mask, softmax, the attention dropout, matmul with v, permute +
 *             contiguous, view; output dense, dropout, residual add,
 *             LayerNorm; intermediate dense, gelu (erf: GELUActivation traced
 *             through), output dense, dropout, residual add, LayerNorm
 *   epilogue  pooler (first token slice, dense, tanh) when present; the MLM
 *             head: transform dense, gelu, LayerNorm, decoder (weight tied to
 *             the word embeddings: its gradient row is the bias, V); the
 *             next-sentence linear with the pooler
 *
 * Names are torch.fx's (optable_int.h): module paths snake-cased
 * (LayerNorm -> layer_norm), "bert_" prefixed. A dropout of probability 0
 * runs no kernel (a row of time 0).
 *
 * Legend: B micro-batch, S seq, H hidden, A heads, D head dim, F ffn,
 * V vocab, P positions, T = B*S tokens; per-rank widths divided by tp. */
#include "optable_int.h"

#include <stdio.h>

/* nn.Linear (bias) with its DP gradient row (params elements; < 0: none). */
static void linear(OtGen *g, const char *mod_path, double M, double in, double out, double params)
{
    char mod[160];
    snprintf(mod, sizeof mod, "%s", mod_path);
    if (params >= 0) wl_ot_grad(g, mod, params);
    OT(g, mod, R_GEMM, M, out, in);
}

static void layer_norm(OtGen *g, const char *mod_path, double rows, double H)
{
    char mod[160];
    snprintf(mod, sizeof mod, "%s", mod_path);
    wl_ot_grad(g, mod, 2 * H);
    OT(g, mod, R_NORM, rows, H);
}

/* nn.Dropout(p) on n elements: a kernel and a 1-byte mask, none when p = 0. */
static void dropout(OtGen *g, const char *mod, double n, double p)
{
    if (p > 0) OT(g, mod, R_DROP, n);
    else OT(g, mod, R_VIEW);
}

/* transpose_for_scores: x.size()[:-1] + (A, D), view, permute(0, 2, 1, 3). */
static void split_heads(OtGen *g)
{
    wl_ot_host(g, "size");
    wl_ot_host(g, "getitem");
    wl_ot_host(g, "add");
    OT(g, wl_ot_fn(g, "view"), R_VIEW);
    OT(g, wl_ot_fn(g, "permute"), R_VIEW);
}

void wl_ot_bert(OtGen *g)
{
    const ModelSpec *m = g->m;
    const ParallelPlan *p = g->p;
    double B = (double)p->micro_batch, S = (double)p->seq, H = (double)m->hidden, tp = g->tp;
    double A = (double)m->heads / tp, D = (double)m->head_dim, Af = (double)m->heads, F = (double)m->ffn;
    double V = (double)m->vocab, P = (double)m->max_positions, T = B * S, hp = m->hidden_dropout;
    double bq = m->qkv_bias ? 1 : 0, bo = m->proj_bias ? 1 : 0, bm = m->mlp_bias ? 1 : 0;
    unsigned ng = OT_NOGRAD;
    /* BertModel.forward */
    wl_ot_host(g, "size"); /* input_shape = input_ids.size(); batch_size, seq_length = input_shape */
    wl_ot_host(g, "getitem");
    wl_ot_host(g, "getitem");
    wl_ot_host(g, "getattr"); /* device */
    wl_ot_host(g, "add");     /* torch.ones((batch_size, seq_length + 0)): fp32 */
    OT(g, wl_ot_fn(g, "ones"), R_MEM, B * S, 0, 0, 0, OT_FP32 | ng);
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW); /* embeddings.token_type_ids[:, :seq_length].expand(B, S) */
    OT(g, wl_ot_fn(g, "expand"), R_VIEW);
    for (int i = 0; i < 3; i++) { /* get_extended_attention_mask: attention_mask.dim() == 2 / 3 / 2 */
        wl_ot_host(g, "dim");
        wl_ot_host(g, "eq");
    }
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW);                /* [:, None, None, :] */
    OT(g, wl_ot_fn(g, "to"), R_CAST, B * S, 0, 0, 0, ng); /* .to(dtype=self.dtype) */
    OT(g, wl_ot_fn(g, "sub"), R_VEC, B * S, 2, 0, 0, ng); /* (1.0 - mask) */
    OT(g, wl_ot_fn(g, "mul"), R_VEC, B * S, 2, 0, 0, ng); /* * torch.finfo(dtype).min */
    /* BertEmbeddings.forward */
    wl_ot_host(g, "size");
    wl_ot_host(g, "getitem");
    wl_ot_host(g, "add");
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW); /* position_ids = self.position_ids[:, 0:seq_length] */
    wl_ot_grad(g, "bert_embeddings_word_embeddings", V * H);
    OT(g, "bert_embeddings_word_embeddings", R_EMB, T, H);
    wl_ot_tp_allreduce(g, T * H); /* vocab-parallel embedding: partial rows */
    if (m->type_vocab > 0) {
        wl_ot_grad(g, "bert_embeddings_token_type_embeddings", (double)m->type_vocab * H);
        OT(g, "bert_embeddings_token_type_embeddings", R_EMB, T, H);
        OT(g, wl_ot_fn(g, "add"), R_VEC, T * H, 3);
    }
    wl_ot_grad(g, "bert_embeddings_position_embeddings", P * H);
    OT(g, "bert_embeddings_position_embeddings", R_EMB, S, H);       /* (1, S) positions */
    OT(g, wl_ot_fn(g, "iadd"), R_VEC, T * H, B == 1 ? 3 : 2);        /* (1, S, H) broadcast over the batch */
    layer_norm(g, "bert_embeddings_layer_norm", T, H);
    dropout(g, "bert_embeddings_dropout", T * H, hp);
    OtFx pro = g->fx;
    for (int64_t l = 0; l < m->layers && g->ok; l++) {
        wl_ot_layer(g, &pro, l);
        char pre[48];
        snprintf(pre, sizeof pre, "bert_encoder_layer_%lld", (long long)l);
        /* BertSelfAttention (eager) */
        linear(g, wl_ot_mod(g, "%s_attention_self_query", pre), T, H, A * D, H * Af * D + bq * Af * D);
        linear(g, wl_ot_mod(g, "%s_attention_self_key", pre), T, H, A * D, H * Af * D + bq * Af * D);
        split_heads(g);
        linear(g, wl_ot_mod(g, "%s_attention_self_value", pre), T, H, A * D, H * Af * D + bq * Af * D);
        split_heads(g);
        split_heads(g); /* the query */
        OT(g, wl_ot_fn(g, "transpose"), R_VIEW); /* key_layer.transpose(-1, -2) */
        OT(g, wl_ot_fn(g, "matmul"), R_BMM, B * A, S, S, D);
        OT(g, wl_ot_fn(g, "truediv"), R_VEC, B * A * S * S, 2); /* / sqrt(D) */
        OT(g, wl_ot_fn(g, "add"), R_VEC, B * A * S * S, 2);     /* + extended mask (B, 1, 1, S) */
        OT(g, wl_ot_fn(g, "softmax"), R_SOFTMAX, B * A * S * S);
        dropout(g, wl_ot_mod(g, "%s_attention_self_dropout", pre), B * A * S * S, m->attn_dropout);
        OT(g, wl_ot_fn(g, "matmul"), R_BMM, B * A, S, D, S);
        OT(g, wl_ot_fn(g, "permute"), R_VIEW);
        OT(g, wl_ot_fn(g, "contiguous"), R_MEM, 2 * T * A * D);
        wl_ot_host(g, "size"); /* context_layer.size()[:-2] + (all_head_size,) */
        wl_ot_host(g, "getitem");
        wl_ot_host(g, "add");
        OT(g, wl_ot_fn(g, "view"), R_VIEW);
        /* BertSelfOutput */
        linear(g, wl_ot_mod(g, "%s_attention_output_dense", pre), T, A * D, H, Af * D * H + bo * H);
        wl_ot_tp_allreduce(g, T * H);
        dropout(g, wl_ot_mod(g, "%s_attention_output_dropout", pre), T * H, hp);
        OT(g, wl_ot_fn(g, "add"), R_VEC, T * H, 3);
        layer_norm(g, wl_ot_mod(g, "%s_attention_output_layer_norm", pre), T, H);
        /* BertIntermediate, BertOutput */
        linear(g, wl_ot_mod(g, "%s_intermediate_dense", pre), T, H, F / tp, H * F + bm * F);
        OT(g, wl_ot_fn(g, "gelu"), R_ACT, T * F / tp);
        linear(g, wl_ot_mod(g, "%s_output_dense", pre), T, F / tp, H, F * H + bm * H);
        wl_ot_tp_allreduce(g, T * H);
        dropout(g, wl_ot_mod(g, "%s_output_dropout", pre), T * H, hp);
        OT(g, wl_ot_fn(g, "add"), R_VEC, T * H, 3);
        layer_norm(g, wl_ot_mod(g, "%s_output_layer_norm", pre), T, H);
        wl_ot_pp(g, l, T * H);
    }
    g->sfx[0] = 0;
    if (m->pooler) { /* BertPooler: tanh(dense(hidden_states[:, 0])) */
        OT(g, wl_ot_fn(g, "getitem"), R_VIEW);
        linear(g, "bert_pooler_dense", B, H, H, H * H + H);
        OT(g, "bert_pooler_activation", R_ACT, B * H);
    }
    /* BertLMPredictionHead: transform (dense, gelu, LayerNorm), tied decoder + bias */
    linear(g, "cls_predictions_transform_dense", T, H, H, H * H + H);
    OT(g, wl_ot_fn(g, "gelu"), R_ACT, T * H);
    layer_norm(g, "cls_predictions_transform_layer_norm", T, H);
    linear(g, "cls_predictions_decoder", T, H, V / tp, m->tied_embeddings ? V : H * V + V);
    if (m->pooler) linear(g, "cls_seq_relationship", B, H, 2, 2 * H + 2); /* next-sentence logits */
}
