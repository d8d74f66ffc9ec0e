/* Megatron-Core GPTModel naming (local layer spec, as in the seed tree dump
 * megatron_gpt_module_tree.txt): embedding / decoder.layers.N / output_layer.
 *
 * Legend: T = B*S tokens, H hidden, A heads, G kv heads, D head dim, F ffn,
 * V padded vocab, E experts, K top-k, Fe expert ffn.
 *
 * DeepSpeed counts under Megatron: ColumnParallel/RowParallelLinear call
 * torch.matmul (2*MACs, bias added by '+' = 0); apex FusedLayerNorm and
 * RMSNorm are custom kernels (0); the local core attention is baddbmm
 * (addmm rule: 2*MACs + numel) + fused softmax (0) + bmm (2*MACs); the
 * bias-gelu/swiglu and bias-dropout-add fusions are TorchScript (0);
 * embeddings and the vocab-parallel cross entropy are 0.
 */
#include "graph_int.h"

#include <string.h>

typedef struct Mg {
    ModuleGraph *g;
    const ModelSpec *m;
    const char *norm_cls, *norm_extra, *drop_extra, *attn_drop_extra;
    bool ln;
    GraphNames idx;
} Mg;

static int32_t norm_mod(Mg *c, int32_t parent, const char *name)
{
    return gb_norm_mod(c->g, parent, name, c->norm_cls, c->norm_extra, c->m->hidden, c->ln);
}

static void norm_op(Mg *c, int32_t mod, const char *name)
{
    graph_op_norm(c->g, mod, name, (double)c->g->tokens, c->m->hidden, c->ln, 0.0);
}

static double swiglu_mult(const ModelSpec *m) { return model_act_gated(m->act) ? 2.0 : 1.0; }

/* MLP(linear_fc1, linear_fc2): module declared, ops emitted. tokens may be fractional (experts). */
static int32_t mlp_block(Mg *c, int32_t parent, const char *name, const char *cls, int64_t ffn, double tokens,
                         bool bias)
{
    ModuleGraph *g = c->g;
    int64_t H = c->m->hidden, f1 = ffn * (int64_t)swiglu_mult(c->m);
    int32_t mlp = graph_add_module(g, parent, name, cls, "");
    int32_t fc1 = gb_linear_mod(g, mlp, "linear_fc1", "ColumnParallelLinear", "", H, f1, bias, GRAPH_SPLIT_COL);
    int32_t fc2 = gb_linear_mod(g, mlp, "linear_fc2", "RowParallelLinear", "", ffn, H, bias, GRAPH_SPLIT_ROW);
    if (fc2 < 0) return -1;
    graph_op_gemm(g, fc1, "linear_fc1", tokens, H, f1, bias, GRAPH_SPLIT_COL);
    bool gated = model_act_gated(c->m->act);
    const char *an = c->m->act == MODEL_ACT_SWIGLU ? "swiglu" : c->m->act == MODEL_ACT_GEGLU ? "geglu" : "gelu";
    GraphOp *act = graph_op_eltwise(g, mlp, GRAPH_OP_ACTIVATION, an, tokens * (double)ffn, gated ? 2 : 1, 0.0,
                                    GRAPH_SPLIT_COL);
    if (act && gated) act->act_bytes = (double)g->opt.dtype_bytes * 2 * tokens * (double)ffn;
    graph_op_gemm(g, fc2, "linear_fc2", tokens, ffn, H, bias, GRAPH_SPLIT_ROW);
    return mlp;
}

static void moe_block(Mg *c, int32_t layer_mod, int32_t layer)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    double T = (double)g->tokens;
    int64_t H = m->hidden, E = m->experts, K = m->topk;
    double Te = T * (double)K / (double)E;
    graph_at(g, layer, GRAPH_PART_MOE, GRAPH_ROLE_LAYER);
    int32_t moe = graph_add_module(g, layer_mod, "mlp", "MoELayer", "");
    int32_t router = graph_add_module(g, moe, "router", "TopKRouter", "");
    graph_add_param(g, router, "weight", E, H, GRAPH_SPLIT_NONE);
    gb_router_op(g, router, T, H, E, K, true, 0.0);
    graph_op_eltwise(g, moe, GRAPH_OP_ELEMENTWISE, "dispatch", T * (double)K * (double)H, 1, 0.0, GRAPH_SPLIT_NONE);
    int32_t experts = graph_add_module(g, moe, "experts", "SequentialMLP", "");
    int32_t list = graph_add_module(g, experts, "local_experts", "ModuleList", "");
    int32_t m0 = g->n_mods, o0 = g->n_ops, p0 = g->n_params;
    g->at.expert_id = 0;
    mlp_block(c, list, graph_idx(g, &c->idx, 0), "MLP", m->moe_ffn, Te, false);
    gb_clone_experts(g, list, m0, o0, p0, E, &c->idx);
    g->at.expert_id = -1;
    graph_op_eltwise(g, moe, GRAPH_OP_ELEMENTWISE, "combine", T * (double)K * (double)H, 2, 0.0, GRAPH_SPLIT_NONE);
    if (m->shared_experts > 0)
        mlp_block(c, moe, "shared_experts", "SharedExpertMLP", m->moe_ffn * m->shared_experts, T, false);
}

/* SelfAttention or MLASelfAttention; children in Megatron's registration order. */
static void attention(Mg *c, int32_t layer_mod)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    double T = (double)g->tokens;
    int64_t B = g->opt.batch, S = g->opt.seq, H = m->hidden, A = m->heads, G = m->kv_heads, D = m->head_dim;
    bool mla = m->q_lora_rank > 0 || m->kv_lora_rank > 0;
    int32_t sa = graph_add_module(g, layer_mod, "self_attention", mla ? "MLASelfAttention" : "SelfAttention", "");
    int32_t core = graph_add_module(g, sa, "core_attention", "DotProductAttention", "");
    int32_t smax = graph_add_module(g, core, "scale_mask_softmax", "FusedScaleMaskSoftmax", "");
    int32_t adrop = graph_add_module(g, core, "attention_dropout", "Dropout", c->attn_drop_extra);
    int64_t Dqk = D, Dv = D;
    if (mla) {
        int64_t nope = m->qk_nope_dim, rope = m->qk_rope_dim, vd = m->v_head_dim, ql = m->q_lora_rank,
                kvl = m->kv_lora_rank;
        Dqk = nope + rope;
        Dv = vd;
        int32_t proj = gb_linear_mod(g, sa, "linear_proj", "RowParallelLinear", "", A * vd, H, m->proj_bias, GRAPH_SPLIT_ROW);
        int32_t qd = -1, qu, kvd, kvu, qn = -1, kvn;
        if (ql > 0) {
            qd = gb_linear_mod(g, sa, "linear_q_down_proj", "ColumnParallelLinear", "", H, ql, false, GRAPH_SPLIT_NONE);
            qu = gb_linear_mod(g, sa, "linear_q_up_proj", "ColumnParallelLinear", "", ql, A * Dqk, false, GRAPH_SPLIT_COL);
        } else {
            qu = gb_linear_mod(g, sa, "linear_q_proj", "ColumnParallelLinear", "", H, A * Dqk, false, GRAPH_SPLIT_COL);
        }
        kvd = gb_linear_mod(g, sa, "linear_kv_down_proj", "ColumnParallelLinear", "", H, kvl + rope, false, GRAPH_SPLIT_NONE);
        kvu = gb_linear_mod(g, sa, "linear_kv_up_proj", "ColumnParallelLinear", "", kvl, A * (nope + vd), false, GRAPH_SPLIT_COL);
        if (ql > 0) qn = gb_norm_mod(g, sa, "q_layernorm", "RMSNorm", "", ql, false);
        kvn = gb_norm_mod(g, sa, "kv_layernorm", "RMSNorm", "", kvl, false);
        if (ql > 0) {
            graph_op_gemm(g, qd, "linear_q_down_proj", T, H, ql, false, GRAPH_SPLIT_NONE);
            graph_op_norm(g, qn, "q_layernorm", T, ql, false, 0.0);
            graph_op_gemm(g, qu, "linear_q_up_proj", T, ql, A * Dqk, false, GRAPH_SPLIT_COL);
        } else {
            graph_op_gemm(g, qu, "linear_q_proj", T, H, A * Dqk, false, GRAPH_SPLIT_COL);
        }
        graph_op_gemm(g, kvd, "linear_kv_down_proj", T, H, kvl + rope, false, GRAPH_SPLIT_NONE);
        graph_op_norm(g, kvn, "kv_layernorm", T, kvl, false, 0.0);
        graph_op_gemm(g, kvu, "linear_kv_up_proj", T, kvl, A * (nope + vd), false, GRAPH_SPLIT_COL);
        graph_op_rope(g, sa, T, A + 1, rope); /* q heads and the shared k_pe */
        G = A;
        graph_at(g, g->at.layer, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
        (void)proj;
        goto core_ops;
    }
    {
        int64_t qkv_out = A * D + 2 * G * D;
        int32_t proj = gb_linear_mod(g, sa, "linear_proj", "RowParallelLinear", "", A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        int32_t qkv = gb_linear_mod(g, sa, "linear_qkv", "ColumnParallelLinear", "", H, qkv_out, m->qkv_bias, GRAPH_SPLIT_COL);
        int32_t qn, kn;
        /* per head (D wide, replicated), or over all heads (OLMo 2: A*D and
         * G*D wide, split with the heads) */
        int64_t qw = m->qk_norm_full ? A * D : D, kw = m->qk_norm_full ? G * D : D;
        if (m->qk_norm) {
            qn = gb_norm_mod(g, sa, "q_layernorm", "RMSNorm", "", qw, false);
            if (m->qk_norm_full && qn >= 0) g->params[g->n_params - 1].split = GRAPH_SPLIT_COL;
            kn = gb_norm_mod(g, sa, "k_layernorm", "RMSNorm", "", kw, false);
            if (m->qk_norm_full && kn >= 0) g->params[g->n_params - 1].split = GRAPH_SPLIT_COL;
        } else {
            qn = graph_add_module(g, sa, "q_layernorm", "IdentityOp", "");
            kn = graph_add_module(g, sa, "k_layernorm", "IdentityOp", "");
        }
        (void)proj;
        graph_op_gemm(g, qkv, "linear_qkv", T, H, qkv_out, m->qkv_bias, GRAPH_SPLIT_COL);
        if (m->qk_norm) {
            GraphOp *o1 = graph_op_norm(g, qn, "q_layernorm", T * (double)(A * D / qw), qw, false, 0.0);
            GraphOp *o2 = graph_op_norm(g, kn, "k_layernorm", T * (double)(G * D / kw), kw, false, 0.0);
            if (o1) o1->split = GRAPH_SPLIT_HEADS;
            if (o2) o2->split = GRAPH_SPLIT_HEADS;
        }
        if (m->pos == MODEL_POS_ROPE) {
            int64_t rd = (int64_t)((double)D * m->rotary_pct);
            graph_op_rope(g, sa, T, A + G, rd);
        }
        graph_at(g, g->at.layer, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
    }
core_ops:
    if (g->opt.flash) {
        GraphOp *op = graph_op_attention(g, core, "core_attention", B, A, G, S, S, Dqk, Dv);
        /* DeepSpeed sees the local path: baddbmm adds numel(S x S scores) */
        if (op) op->ds_flops += (double)(B * A) * (double)S * (double)S;
        gb_attn_window(g, op, m, g->at.layer);
    } else {
        graph_op_bmm(g, core, "baddbmm_qk", B * A, S, Dqk, S, true);
        graph_op_eltwise(g, smax, GRAPH_OP_SOFTMAX, "scale_mask_softmax", (double)(B * A) * (double)S * (double)S, 1,
                         0.0, GRAPH_SPLIT_HEADS);
        gb_dropout_op(g, adrop, "attention_dropout", (double)(B * A) * (double)S * (double)S, m->attn_dropout,
                      GRAPH_SPLIT_HEADS);
        graph_op_bmm(g, core, "bmm_av", B * A, S, S, Dv, false);
    }
    graph_at(g, g->at.layer, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
    /* linear_proj was declared before linear_qkv: find it by name */
    int32_t proj = -1;
    for (int32_t ch = g->mods[sa].first_child; ch >= 0; ch = g->mods[ch].next_sibling)
        if (strcmp(g->mods[ch].name, "linear_proj") == 0) proj = ch;
    graph_op_gemm(g, proj, "linear_proj", T, A * Dv, H, m->proj_bias, GRAPH_SPLIT_ROW);
}

/* A sublayer's input norm, or IdentityOp when the layout has none (OLMo 2's
 * reordered norms). */
static void input_norm(Mg *c, int32_t tl, const char *name)
{
    if (c->m->norm_layout == MODEL_NORM_LAYOUT_REORDERED) {
        graph_add_module(c->g, tl, name, "IdentityOp", "");
        return;
    }
    norm_op(c, norm_mod(c, tl, name), name);
}

/* The norm on a sublayer's output, before the residual add (OLMo 2, Gemma).
 * Megatron-Core's TransformerLayer has no such submodule (NeMo's Gemma 2
 * folds it into TERowParallelLinearLayerNorm); named after what it follows. */
static void output_norm(Mg *c, int32_t tl, const char *name)
{
    if (model_output_norms(c->m)) norm_op(c, norm_mod(c, tl, name), name);
}

static void layer(Mg *c, int32_t list, int64_t l)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int32_t L = (int32_t)l;
    double T = (double)g->tokens;
    graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
    int32_t tl = graph_add_module(g, list, graph_idx(g, &c->idx, l), "TransformerLayer", "");
    input_norm(c, tl, "input_layernorm");
    attention(c, tl);
    output_norm(c, tl, "post_self_attn_layernorm");
    GraphOp *bda = graph_op_eltwise(g, tl, GRAPH_OP_ELEMENTWISE, "self_attn_bda", T * (double)m->hidden, 2, 0.0,
                                    GRAPH_SPLIT_SEQ);
    double mask = m->hidden_dropout > 0 ? T * (double)m->hidden : 0; /* bda's 1-byte dropout mask */
    if (bda) bda->act_bytes = mask;
    graph_add_module(g, tl, "pre_cross_attn_layernorm", "IdentityOp", "");
    graph_add_module(g, tl, "cross_attention", "IdentityOp", "");
    graph_add_module(g, tl, "cross_attn_bda", "IdentityFuncOp", "");
    bool moe = model_layer_is_moe(m, l);
    graph_at(g, L, moe ? GRAPH_PART_MOE : GRAPH_PART_MLP, GRAPH_ROLE_LAYER);
    input_norm(c, tl, "pre_mlp_layernorm");
    if (moe)
        moe_block(c, tl, L);
    else
        mlp_block(c, tl, "mlp", "MLP", m->ffn, T, m->mlp_bias);
    graph_at(g, L, moe ? GRAPH_PART_MOE : GRAPH_PART_MLP, GRAPH_ROLE_LAYER);
    output_norm(c, tl, "post_mlp_layernorm");
    bda = graph_op_eltwise(g, tl, GRAPH_OP_ELEMENTWISE, "mlp_bda", T * (double)m->hidden, 2, 0.0, GRAPH_SPLIT_SEQ);
    if (bda) bda->act_bytes = mask;
}

TsStatus graph_build_megatron(ModuleGraph *g, TsError *err)
{
    (void)err;
    const ModelSpec *m = &g->spec;
    Mg c = {.g = g, .m = m, .ln = m->norm == MODEL_NORM_LAYERNORM};
    char eps[32];
    graph_fmt_eps(eps, sizeof eps, m->norm_eps);
    c.norm_cls = c.ln ? "FusedLayerNorm" : "RMSNorm";
    c.norm_extra = ts_arena_printf(g->arena, "torch.Size([%lld]), eps=%s, elementwise_affine=True",
                                   (long long)m->hidden, eps);
    c.drop_extra = gb_drop_extra(g, m->hidden_dropout);
    c.attn_drop_extra = gb_drop_extra(g, m->attn_dropout);
    int64_t n_idx = m->layers > m->experts ? m->layers : m->experts;
    if (!c.norm_extra || !c.drop_extra || !c.attn_drop_extra || !graph_names_init(g, &c.idx, n_idx))
        return TS_ERR_INTERNAL;

    int64_t H = m->hidden, V = g->vocab;
    double T = (double)g->tokens;
    int32_t root = graph_add_module(g, -1, "", "GPTModel", "");

    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_EMBED);
    int32_t emb = graph_add_module(g, root, "embedding", "LanguageModelEmbedding", "");
    int32_t we = graph_add_module(g, emb, "word_embeddings", "VocabParallelEmbedding", "");
    int32_t wparam = graph_add_param(g, we, "weight", V, H, GRAPH_SPLIT_VOCAB);
    graph_op_eltwise(g, we, GRAPH_OP_EMBEDDING, "word_embeddings", T * (double)H, 1, 0.0, GRAPH_SPLIT_VOCAB);
    if (m->pos == MODEL_POS_LEARNED) {
        char *ex = ts_arena_printf(g->arena, "%lld, %lld", (long long)m->max_positions, (long long)H);
        int32_t pe = graph_add_module(g, emb, "position_embeddings", "Embedding", ex);
        graph_add_param(g, pe, "weight", m->max_positions, H, GRAPH_SPLIT_NONE);
        graph_op_eltwise(g, pe, GRAPH_OP_EMBEDDING, "position_embeddings", T * (double)H, 1, 0.0, GRAPH_SPLIT_NONE);
        graph_op_eltwise(g, emb, GRAPH_OP_ELEMENTWISE, "add", T * (double)H, 2, 0.0, GRAPH_SPLIT_SEQ);
    }
    int32_t ed = graph_add_module(g, emb, "embedding_dropout", "Dropout", c.drop_extra);
    gb_dropout_op(g, ed, "embedding_dropout", T * (double)H, m->hidden_dropout, GRAPH_SPLIT_SEQ);
    if (m->pos == MODEL_POS_ROPE) graph_add_module(g, root, "rotary_pos_emb", "RotaryEmbedding", "");

    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_OTHER);
    int32_t dec = graph_add_module(g, root, "decoder", "TransformerBlock", "");
    int32_t list = graph_add_module(g, dec, "layers", "ModuleList", "");
    for (int64_t l = 0; l < m->layers && !g->oom; l++) layer(&c, list, l);

    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
    int32_t fn = norm_mod(&c, dec, "final_layernorm");
    norm_op(&c, fn, "final_layernorm");
    if (m->lm_head) {
        int32_t out = graph_add_module(g, root, "output_layer", "ColumnParallelLinear", "");
        if (m->tied_embeddings)
            graph_add_tied_param(g, out, "weight", wparam);
        else
            graph_add_param(g, out, "weight", V, H, GRAPH_SPLIT_COL);
        graph_op_gemm(g, out, "output_layer", T, H, V, false, GRAPH_SPLIT_COL);
        gb_loss_op(g, root, T, V);
    }
    return g->oom ? TS_ERR_INTERNAL : TS_OK;
}
