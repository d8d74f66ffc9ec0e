/* DeepSpeed GPT2ModelPipe naming (Megatron-DeepSpeed pipeline model), as in
 * the parameter table seed deepspeed_pipe_param_partition.csv:
 *   tied_modules.embed.{word_embeddings,position_embeddings,embedding_dropout}
 *   2 .. L+1   ParallelTransformerLayerPipe (input_layernorm, attention.
 *              {query_key_value, scale_mask_softmax, attention_dropout, dense},
 *              post_attention_layernorm, mlp.{dense_h_to_4h, dense_4h_to_h})
 *   L+2        the final FusedLayerNorm
 * Pipe index 0 is the _to_float16 function (no module); the LM head is the
 * tied embed module run again (TiedLayerSpec), so it adds no module: its
 * GEMM and the loss are owned by the root here.
 *
 * Legend: T = B*S tokens, H hidden, A heads, G kv heads, D head dim, F ffn,
 * V padded vocab.
 * DeepSpeed counts: F.linear 2*MACs; baddbmm 2*MACs + numel; fused softmax,
 * FusedLayerNorm, bias-gelu (TorchScript) and embeddings 0.
 */
#include "graph_int.h"

TsStatus graph_build_deepspeed(ModuleGraph *g, TsError *err)
{
    const ModelSpec *m = &g->spec;
    if (m->experts > 0) {
        ts_err(err, TS_ERR_USAGE, "naming 'deepspeed' (GPT2ModelPipe) has no MoE layers");
        ts_err_hint(err, "use --naming megatron or --naming hf for mixture-of-experts models");
        return TS_ERR_USAGE;
    }
    if (m->q_lora_rank > 0 || m->kv_lora_rank > 0) {
        ts_err(err, TS_ERR_USAGE, "naming 'deepspeed' (GPT2ModelPipe) has no multi-head latent attention");
        ts_err_hint(err, "use --naming megatron or --naming hf for DeepSeek models");
        return TS_ERR_USAGE;
    }
    if (m->qk_norm || m->norm_layout != MODEL_NORM_LAYOUT_PRE) {
        ts_err(err, TS_ERR_USAGE, "naming 'deepspeed' (GPT2ModelPipe) has only pre-norm layers without q/k norms");
        ts_err_hint(err, "use --naming megatron or --naming hf for Qwen3, OLMo 2 and Gemma models");
        return TS_ERR_USAGE;
    }
    GraphNames idx;
    if (!graph_names_init(g, &idx, m->layers + 3)) return TS_ERR_INTERNAL;
    bool ln = m->norm == MODEL_NORM_LAYERNORM, glu = model_act_gated(m->act);
    int64_t B = g->opt.batch, S = g->opt.seq, H = m->hidden, A = m->heads, G = m->kv_heads, D = m->head_dim,
            F = m->ffn, V = g->vocab;
    double T = (double)g->tokens;
    char eps[32];
    graph_fmt_eps(eps, sizeof eps, m->norm_eps);
    const char *ncls = ln ? "FusedLayerNorm" : "RMSNorm";
    const char *nex = ts_arena_printf(g->arena, "torch.Size([%lld]), eps=%s, elementwise_affine=True", (long long)H, eps);
    const char *dr = gb_drop_extra(g, m->hidden_dropout), *adr = gb_drop_extra(g, m->attn_dropout);
    if (!nex || !dr || !adr) return TS_ERR_INTERNAL;
    double mask = m->hidden_dropout > 0 ? T * (double)H : 0; /* bias_dropout_add's 1-byte mask */

    int32_t root = graph_add_module(g, -1, "", "GPT2ModelPipe", "");
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_EMBED);
    int32_t tied = graph_add_module(g, root, "tied_modules", "ModuleDict", "");
    int32_t emb = graph_add_module(g, tied, "embed", "EmbeddingPipe", "");
    int32_t we = graph_add_module(g, emb, "word_embeddings", "VocabParallelEmbedding", "");
    int32_t wp = graph_add_param(g, we, "weight", V, H, GRAPH_SPLIT_VOCAB);
    graph_op_eltwise(g, we, GRAPH_OP_EMBEDDING, "word_embeddings", T * (double)H, 1, 0.0, GRAPH_SPLIT_VOCAB);
    if (m->pos == MODEL_POS_LEARNED) {
        const char *ex = ts_arena_printf(g->arena, "%lld, %lld", (long long)m->max_positions, (long long)H);
        int32_t pe = graph_add_module(g, emb, "position_embeddings", "Embedding", ex);
        graph_add_param(g, pe, "weight", m->max_positions, H, GRAPH_SPLIT_NONE);
        graph_op_eltwise(g, pe, GRAPH_OP_EMBEDDING, "position_embeddings", T * (double)H, 1, 0.0, GRAPH_SPLIT_NONE);
        graph_op_eltwise(g, emb, GRAPH_OP_ELEMENTWISE, "add", T * (double)H, 2, 0.0, GRAPH_SPLIT_SEQ);
    }
    int32_t ed = graph_add_module(g, emb, "embedding_dropout", "Dropout", dr);
    gb_dropout_op(g, ed, "embedding_dropout", T * (double)H, m->hidden_dropout, GRAPH_SPLIT_SEQ);

    int64_t qkv_out = A * D + 2 * G * D, f1 = glu ? 2 * F : F;
    for (int64_t l = 0; l < m->layers && !g->oom; l++) {
        int32_t L = (int32_t)l;
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        int32_t tl = graph_add_module(g, root, graph_idx(g, &idx, l + 2), "ParallelTransformerLayerPipe", "");
        int32_t n1 = gb_norm_mod(g, tl, "input_layernorm", ncls, nex, H, ln);
        int32_t at = graph_add_module(g, tl, "attention", "ParallelSelfAttention", "");
        int32_t qkv = gb_linear_mod(g, at, "query_key_value", "ColumnParallelLinear", "", H, qkv_out, m->qkv_bias, GRAPH_SPLIT_COL);
        int32_t sm = graph_add_module(g, at, "scale_mask_softmax", "FusedScaleMaskSoftmax", "");
        int32_t ad = graph_add_module(g, at, "attention_dropout", "Dropout", adr);
        int32_t dn = gb_linear_mod(g, at, "dense", "RowParallelLinear", "", A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        graph_op_norm(g, n1, "input_layernorm", T, H, ln, 0.0);
        graph_op_gemm(g, qkv, "query_key_value", T, H, qkv_out, m->qkv_bias, GRAPH_SPLIT_COL);
        if (m->pos == MODEL_POS_ROPE) {
            int64_t rd = (int64_t)((double)D * m->rotary_pct);
            graph_op_rope(g, at, T, A + G, rd);
        }
        graph_at(g, L, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
        if (g->opt.flash) {
            GraphOp *op = graph_op_attention(g, at, "core_attention", B, A, G, S, S, D, D);
            if (op) op->ds_flops += (double)(B * A) * (double)S * (double)S; /* baddbmm: + numel */
        } else {
            double ss = (double)(B * A) * (double)S * (double)S;
            graph_op_bmm(g, at, "baddbmm_qk", B * A, S, D, S, true);
            graph_op_eltwise(g, sm, GRAPH_OP_SOFTMAX, "scale_mask_softmax", ss, 1, 0.0, GRAPH_SPLIT_HEADS);
            gb_dropout_op(g, ad, "attention_dropout", ss, m->attn_dropout, GRAPH_SPLIT_HEADS);
            graph_op_bmm(g, at, "bmm_av", B * A, S, S, D, false);
        }
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        graph_op_gemm(g, dn, "dense", T, A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        GraphOp *bda = graph_op_eltwise(g, tl, GRAPH_OP_ELEMENTWISE, "bias_dropout_add", T * (double)H, 2, 0.0, GRAPH_SPLIT_SEQ);
        if (bda) bda->act_bytes = mask;
        graph_at(g, L, GRAPH_PART_MLP, GRAPH_ROLE_LAYER);
        int32_t n2 = gb_norm_mod(g, tl, "post_attention_layernorm", ncls, nex, H, ln);
        int32_t mlp = graph_add_module(g, tl, "mlp", "ParallelMLP", "");
        int32_t h4 = gb_linear_mod(g, mlp, "dense_h_to_4h", "ColumnParallelLinear", "", H, f1, m->mlp_bias, GRAPH_SPLIT_COL);
        int32_t h1 = gb_linear_mod(g, mlp, "dense_4h_to_h", "RowParallelLinear", "", F, H, m->mlp_bias, GRAPH_SPLIT_ROW);
        graph_op_norm(g, n2, "post_attention_layernorm", T, H, ln, 0.0);
        graph_op_gemm(g, h4, "dense_h_to_4h", T, H, f1, m->mlp_bias, GRAPH_SPLIT_COL);
        GraphOp *act = graph_op_eltwise(g, mlp, GRAPH_OP_ACTIVATION, m->act == MODEL_ACT_GEGLU ? "geglu" : glu ? "swiglu" : "bias_gelu", T * (double)F,
                                        glu ? 2 : 1, 0.0, GRAPH_SPLIT_COL);
        if (act && glu) act->act_bytes = (double)g->opt.dtype_bytes * 2 * T * (double)F;
        graph_op_gemm(g, h1, "dense_4h_to_h", T, F, H, m->mlp_bias, GRAPH_SPLIT_ROW);
        bda = graph_op_eltwise(g, tl, GRAPH_OP_ELEMENTWISE, "bias_dropout_add", T * (double)H, 2, 0.0, GRAPH_SPLIT_SEQ);
        if (bda) bda->act_bytes = mask;
    }
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
    int32_t fn = gb_norm_mod(g, root, graph_idx(g, &idx, m->layers + 2), ncls, nex, H, ln);
    graph_op_norm(g, fn, "final_layernorm", T, H, ln, 0.0);
    if (m->lm_head) {
        GraphOp *op = graph_op_gemm(g, root, "tied_head", T, H, V, false, GRAPH_SPLIT_COL);
        (void)op;
        (void)wp;
        gb_loss_op(g, root, T, V);
    }
    return g->oom ? TS_ERR_INTERNAL : TS_OK;
}
