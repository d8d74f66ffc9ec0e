/* HuggingFace transformers naming: BertModel, GPT2LMHeadModel, GPTNeoXForCausalLM
 * and the Llama family (LlamaForCausalLM, MixtralForCausalLM, Qwen2/Qwen3(-MoE),
 * DeepseekV3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM (the text
 * decoder), Phi3ForCausalLM with its fused qkv_proj and gate_up_proj,
 * Olmo2ForCausalLM), modules registered in __init__ order. Not traced:
 * Gemma 2's tanh soft-capping of the logits and attention scores, Granite's
 * scalar multipliers (no parameters, elementwise work only).
 *
 * Legend: T = B*S tokens, H hidden, A heads, G kv heads, D head dim, F ffn,
 * V vocab (unpadded), E experts, K top-k.
 *
 * DeepSpeed counts under transformers: nn.Linear -> F.linear (2*MACs);
 * GPT-2 Conv1D -> torch.addmm (2*MACs + numel(bias)); nn.LayerNorm 5*numel;
 * RMSNorm, RoPE, residual '+' and SwiGLU's '*' 0; nn.SiLU calls F.silu
 * (numel); GELUActivation stores F.gelu at construction, before the profiler
 * patches it, so it counts 0 (the seed BERT report: 89.45 G, not 89.47 G);
 * NewGELUActivation (tanh/pow) 0; BERT eager attention = matmul + F.softmax
 * + matmul; Llama/GPT-2/Mixtral use SDPA (two matmuls); embeddings 0.
 */
#include "graph_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct Hf {
    ModuleGraph *g;
    const ModelSpec *m;
    const char *P;         /* class prefix: "Llama", "Mixtral", ... */
    const char *norm_cls, *norm_extra, *drop_extra;
    bool ln;
    bool gpt_oss;          /* GptOss*: its MLP is router + stacked experts */
    GraphNames idx;
    /* strings formatted once per build and shared by every layer */
    struct { const char *suffix, *s; } cls_memo[16];
    struct { int64_t in, out; bool bias; const char *s; } lin_memo[16];
    int n_cls, n_lin;
} Hf;

static const char *cls(Hf *c, const char *suffix)
{
    for (int i = 0; i < c->n_cls; i++)
        if (c->cls_memo[i].suffix == suffix || strcmp(c->cls_memo[i].suffix, suffix) == 0) return c->cls_memo[i].s;
    const char *s = ts_arena_printf(c->g->arena, "%s%s", c->P, suffix);
    if (s && c->n_cls < 16) c->cls_memo[c->n_cls].suffix = suffix, c->cls_memo[c->n_cls++].s = s;
    return s;
}

static const char *linear_extra(ModuleGraph *g, int64_t in, int64_t out, bool bias)
{
    return ts_arena_printf(g->arena, "in_features=%lld, out_features=%lld, bias=%s", (long long)in,
                           (long long)out, bias ? "True" : "False");
}

static int32_t lin(Hf *c, int32_t parent, const char *name, int64_t in, int64_t out, bool bias, GraphSplit split)
{
    const char *ex = NULL;
    for (int i = 0; i < c->n_lin && !ex; i++)
        if (c->lin_memo[i].in == in && c->lin_memo[i].out == out && c->lin_memo[i].bias == bias) ex = c->lin_memo[i].s;
    if (!ex) {
        ex = linear_extra(c->g, in, out, bias);
        if (ex) {
            int k = c->n_lin < 16 ? c->n_lin++ : (int)(in % 16); /* full: overwrite one */
            c->lin_memo[k].in = in, c->lin_memo[k].out = out, c->lin_memo[k].bias = bias, c->lin_memo[k].s = ex;
        }
    }
    return gb_linear_mod(c->g, parent, name, "Linear", ex, in, out, bias, split);
}

static const char *ln_extra(ModuleGraph *g, int64_t w, double eps)
{
    char e[32];
    graph_fmt_eps(e, sizeof e, eps);
    return ts_arena_printf(g->arena, "(%lld,), eps=%s, elementwise_affine=True", (long long)w, e);
}

static const char *emb_extra(ModuleGraph *g, int64_t rows, int64_t w, int64_t pad)
{
    if (pad >= 0) return ts_arena_printf(g->arena, "%lld, %lld, padding_idx=%lld", (long long)rows, (long long)w, (long long)pad);
    return ts_arena_printf(g->arena, "%lld, %lld", (long long)rows, (long long)w);
}

static void emb_op(ModuleGraph *g, int32_t mod, const char *name, int64_t H, GraphSplit split)
{
    graph_op_eltwise(g, mod, GRAPH_OP_EMBEDDING, name, (double)g->tokens * (double)H, 1, 0.0, split);
}

static void residual(ModuleGraph *g, int32_t mod, int64_t H)
{
    graph_op_eltwise(g, mod, GRAPH_OP_ELEMENTWISE, "residual", (double)g->tokens * (double)H, 2, 0.0, GRAPH_SPLIT_SEQ);
}

/* ---- BERT --------------------------------------------------------------------------------- */

/* BERT's masked-LM head ("cls", ModelSpec.lm_head: BertForMaskedLM, or
 * BertForPreTraining with the pooler): the transform (dense H x H with its
 * bias, GELU, LayerNorm), the decoder tied to the word embedding with the
 * head's own bias over the vocabulary, and for pre-training the
 * next-sentence head (H x 2) on the pooled token; then the loss. */
static void bert_mlm_head(Hf *c, int32_t top, int32_t wp, const char *lne)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t H = m->hidden, V = m->vocab;
    double T = (double)g->tokens;
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
    int32_t cl = graph_add_module(g, top, "cls", m->pooler ? "BertPreTrainingHeads" : "BertOnlyMLMHead", "");
    int32_t pr = graph_add_module(g, cl, "predictions", "BertLMPredictionHead", "");
    int32_t tr = graph_add_module(g, pr, "transform", "BertPredictionHeadTransform", "");
    int32_t td = lin(c, tr, "dense", H, H, true, GRAPH_SPLIT_NONE);
    int32_t ta = graph_add_module(g, tr, "transform_act_fn", "GELUActivation", "");
    int32_t tl = gb_norm_mod(g, tr, "LayerNorm", "LayerNorm", lne, H, true);
    int32_t bias = graph_add_param(g, pr, "bias", V, 0, GRAPH_SPLIT_NONE);
    int32_t dec = graph_add_module(g, pr, "decoder", "Linear", linear_extra(g, H, V, true));
    graph_add_tied_param(g, dec, "weight", wp);
    graph_add_tied_param(g, dec, "bias", bias);
    graph_op_gemm(g, td, "dense", T, H, H, true, GRAPH_SPLIT_NONE);
    graph_op_eltwise(g, ta, GRAPH_OP_ACTIVATION, "gelu", T * (double)H, 1, 0.0, GRAPH_SPLIT_NONE);
    graph_op_norm(g, tl, "LayerNorm", T, H, true, 5.0);
    graph_op_gemm(g, dec, "decoder", T, H, V, true, GRAPH_SPLIT_COL);
    if (m->pooler) {
        int32_t ns = lin(c, cl, "seq_relationship", H, 2, true, GRAPH_SPLIT_NONE);
        graph_op_gemm(g, ns, "seq_relationship", (double)g->opt.batch, H, 2, true, GRAPH_SPLIT_NONE);
    }
    gb_loss_op(g, top, T, V);
}

static TsStatus build_bert(Hf *c)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t B = g->opt.batch, S = g->opt.seq, H = m->hidden, A = m->heads, D = m->head_dim, F = m->ffn;
    double T = (double)g->tokens;
    const char *lne = ln_extra(g, H, m->norm_eps);
    const char *dr = gb_drop_extra(g, m->hidden_dropout), *adr = gb_drop_extra(g, m->attn_dropout);
    double hp = m->hidden_dropout;
    if (!dr || !adr) return TS_ERR_INTERNAL;
    /* BertForMaskedLM / BertForPreTraining hold the encoder as "bert" */
    int32_t top = m->lm_head ? graph_add_module(g, -1, "", m->pooler ? "BertForPreTraining" : "BertForMaskedLM", "")
                             : -1;
    int32_t root = graph_add_module(g, top, m->lm_head ? "bert" : "", "BertModel", "");
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_EMBED);
    int32_t emb = graph_add_module(g, root, "embeddings", "BertEmbeddings", "");
    int32_t we = graph_add_module(g, emb, "word_embeddings", "Embedding", emb_extra(g, m->vocab, H, 0));
    int32_t wp = graph_add_param(g, we, "weight", m->vocab, H, GRAPH_SPLIT_VOCAB);
    int32_t pe = graph_add_module(g, emb, "position_embeddings", "Embedding", emb_extra(g, m->max_positions, H, -1));
    graph_add_param(g, pe, "weight", m->max_positions, H, GRAPH_SPLIT_NONE);
    int32_t te = graph_add_module(g, emb, "token_type_embeddings", "Embedding", emb_extra(g, m->type_vocab, H, -1));
    graph_add_param(g, te, "weight", m->type_vocab, H, GRAPH_SPLIT_NONE);
    int32_t eln = gb_norm_mod(g, emb, "LayerNorm", "LayerNorm", lne, H, true);
    int32_t edr = graph_add_module(g, emb, "dropout", "Dropout", dr);
    emb_op(g, we, "word_embeddings", H, GRAPH_SPLIT_VOCAB);
    emb_op(g, te, "token_type_embeddings", H, GRAPH_SPLIT_NONE);
    graph_op_eltwise(g, emb, GRAPH_OP_ELEMENTWISE, "add", T * (double)H, 2, 0.0, GRAPH_SPLIT_SEQ);
    emb_op(g, pe, "position_embeddings", H, GRAPH_SPLIT_NONE);
    graph_op_eltwise(g, emb, GRAPH_OP_ELEMENTWISE, "add", T * (double)H, 2, 0.0, GRAPH_SPLIT_SEQ);
    graph_op_norm(g, eln, "LayerNorm", T, H, true, 5.0);
    gb_dropout_op(g, edr, "dropout", T * (double)H, hp, GRAPH_SPLIT_SEQ);

    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_OTHER);
    int32_t enc = graph_add_module(g, root, "encoder", "BertEncoder", "");
    int32_t list = graph_add_module(g, enc, "layer", "ModuleList", "");
    for (int64_t l = 0; l < m->layers && !g->oom; l++) {
        int32_t L = (int32_t)l;
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        int32_t bl = graph_add_module(g, list, graph_idx(g, &c->idx, l), "BertLayer", "");
        int32_t at = graph_add_module(g, bl, "attention", "BertAttention", "");
        int32_t self = graph_add_module(g, at, "self", "BertSelfAttention", "");
        int32_t q = lin(c, self, "query", H, A * D, m->qkv_bias, GRAPH_SPLIT_COL);
        int32_t k = lin(c, self, "key", H, A * D, m->qkv_bias, GRAPH_SPLIT_COL);
        int32_t v = lin(c, self, "value", H, A * D, m->qkv_bias, GRAPH_SPLIT_COL);
        int32_t sd = graph_add_module(g, self, "dropout", "Dropout", adr);
        graph_op_gemm(g, q, "query", T, H, A * D, m->qkv_bias, GRAPH_SPLIT_COL);
        graph_op_gemm(g, k, "key", T, H, A * D, m->qkv_bias, GRAPH_SPLIT_COL);
        graph_op_gemm(g, v, "value", T, H, A * D, m->qkv_bias, GRAPH_SPLIT_COL);
        graph_at(g, L, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
        double ss = (double)(B * A) * (double)S * (double)S;
        graph_op_bmm(g, self, "matmul_qk", B * A, S, D, S, false);
        graph_op_eltwise(g, self, GRAPH_OP_SOFTMAX, "softmax", ss, 1, 1.0, GRAPH_SPLIT_HEADS);
        gb_dropout_op(g, sd, "dropout", ss, m->attn_dropout, GRAPH_SPLIT_HEADS);
        graph_op_bmm(g, self, "matmul_av", B * A, S, S, D, false);
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        int32_t so = graph_add_module(g, at, "output", "BertSelfOutput", "");
        int32_t sod = lin(c, so, "dense", A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        int32_t soln = gb_norm_mod(g, so, "LayerNorm", "LayerNorm", lne, H, true);
        int32_t sodr = graph_add_module(g, so, "dropout", "Dropout", dr);
        graph_op_gemm(g, sod, "dense", T, A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        gb_dropout_op(g, sodr, "dropout", T * (double)H, hp, GRAPH_SPLIT_SEQ);
        residual(g, so, H);
        graph_op_norm(g, soln, "LayerNorm", T, H, true, 5.0);
        graph_at(g, L, GRAPH_PART_MLP, GRAPH_ROLE_LAYER);
        int32_t im = graph_add_module(g, bl, "intermediate", "BertIntermediate", "");
        int32_t imd = lin(c, im, "dense", H, F, m->mlp_bias, GRAPH_SPLIT_COL);
        int32_t act = graph_add_module(g, im, "intermediate_act_fn", "GELUActivation", "");
        graph_op_gemm(g, imd, "dense", T, H, F, m->mlp_bias, GRAPH_SPLIT_COL);
        graph_op_eltwise(g, act, GRAPH_OP_ACTIVATION, "gelu", T * (double)F, 1, 0.0, GRAPH_SPLIT_COL);
        int32_t ou = graph_add_module(g, bl, "output", "BertOutput", "");
        int32_t oud = lin(c, ou, "dense", F, H, m->mlp_bias, GRAPH_SPLIT_ROW);
        int32_t ouln = gb_norm_mod(g, ou, "LayerNorm", "LayerNorm", lne, H, true);
        int32_t oudr = graph_add_module(g, ou, "dropout", "Dropout", dr);
        graph_op_gemm(g, oud, "dense", T, F, H, m->mlp_bias, GRAPH_SPLIT_ROW);
        gb_dropout_op(g, oudr, "dropout", T * (double)H, hp, GRAPH_SPLIT_SEQ);
        residual(g, ou, H);
        graph_op_norm(g, ouln, "LayerNorm", T, H, true, 5.0);
    }
    if (m->pooler) {
        graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
        int32_t po = graph_add_module(g, root, "pooler", "BertPooler", "");
        int32_t pd = lin(c, po, "dense", H, H, true, GRAPH_SPLIT_NONE);
        int32_t pa = graph_add_module(g, po, "activation", "Tanh", "");
        graph_op_gemm(g, pd, "dense", (double)B, H, H, true, GRAPH_SPLIT_NONE); /* first token only */
        graph_op_eltwise(g, pa, GRAPH_OP_ACTIVATION, "tanh", (double)(B * H), 1, 0.0, GRAPH_SPLIT_NONE);
    }
    if (m->lm_head) bert_mlm_head(c, top, wp, lne);
    return TS_OK;
}

/* The vocabulary projection every HF causal LM ends with (`lm_head`,
 * `embed_out`): tied to the word embedding `wp` or its own [V, H] weight,
 * followed by the loss. */
static void hf_lm_head(ModuleGraph *g, int32_t root, const char *name, int64_t H, int64_t V, double T, int32_t wp)
{
    const ModelSpec *m = &g->spec;
    int32_t head = graph_add_module(g, root, name, "Linear", linear_extra(g, H, V, false));
    if (m->tied_embeddings)
        graph_add_tied_param(g, head, "weight", wp);
    else
        graph_add_param(g, head, "weight", V, H, GRAPH_SPLIT_COL);
    graph_op_gemm(g, head, name, T, H, V, false, GRAPH_SPLIT_COL);
    gb_loss_op(g, root, T, V);
}

/* HF's rotary embedding module computes cos/sin once per forward as
 * inv_freq[B, half, 1] @ positions[B, 1, S] (a batched matmul DeepSpeed
 * counts); it runs right after the embedding, so the op moves to op index
 * `first_op` (execution order). */
static void hf_rotary_op(ModuleGraph *g, int32_t rot, int64_t half, int32_t first_op)
{
    GraphOp *r = graph_add_op(g, rot, GRAPH_OP_BATCHED_GEMM, "inv_freq_matmul");
    if (!r) return;
    int64_t B = g->opt.batch, S = g->opt.seq;
    r->dims[0] = B, r->dims[1] = half, r->dims[2] = 1, r->dims[3] = S;
    r->ds_macs = (double)(B * half) * (double)S;
    r->ds_flops = r->fwd_flops = 2 * r->ds_macs;
    r->fwd_bytes = 4.0 * (double)(B * half) * (double)S * 3;
    GraphOp tmp = *r;
    memmove(&g->ops[first_op + 1], &g->ops[first_op], sizeof *g->ops * (size_t)(g->n_ops - 1 - first_op));
    g->ops[first_op] = tmp;
}

/* ---- GPT-2 ------------------------------------------------------------------------------------ */

static int32_t conv1d(Hf *c, int32_t parent, const char *name, int64_t nx, int64_t nf, GraphSplit split)
{
    int32_t id = gb_linear_mod(c->g, parent, name, "Conv1D", "", nx, nf, true, split);
    if (id >= 0) c->g->mods[id].repr = ts_arena_printf(c->g->arena, "Conv1D(nf=%lld, nx=%lld)", (long long)nf, (long long)nx);
    return id;
}

static void conv1d_op(Hf *c, int32_t mod, const char *name, int64_t nx, int64_t nf, GraphSplit split)
{
    GraphOp *op = graph_op_gemm(c->g, mod, name, (double)c->g->tokens, nx, nf, true, split);
    if (op) op->ds_flops += (double)nf; /* torch.addmm(bias, x, W): + numel(bias) */
}

static TsStatus build_gpt2(Hf *c)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t B = g->opt.batch, S = g->opt.seq, H = m->hidden, A = m->heads, D = m->head_dim, F = m->ffn, V = m->vocab;
    double T = (double)g->tokens;
    const char *lne = ln_extra(g, H, m->norm_eps);
    const char *dr = gb_drop_extra(g, m->hidden_dropout), *adr = gb_drop_extra(g, m->attn_dropout);
    double hp = m->hidden_dropout;
    if (!dr || !adr) return TS_ERR_INTERNAL;
    int32_t root = graph_add_module(g, -1, "", "GPT2LMHeadModel", "");
    int32_t tr = graph_add_module(g, root, "transformer", "GPT2Model", "");
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_EMBED);
    int32_t wte = graph_add_module(g, tr, "wte", "Embedding", emb_extra(g, V, H, -1));
    int32_t wp = graph_add_param(g, wte, "weight", V, H, GRAPH_SPLIT_VOCAB);
    int32_t wpe = graph_add_module(g, tr, "wpe", "Embedding", emb_extra(g, m->max_positions, H, -1));
    graph_add_param(g, wpe, "weight", m->max_positions, H, GRAPH_SPLIT_NONE);
    int32_t drop = graph_add_module(g, tr, "drop", "Dropout", dr);
    emb_op(g, wte, "wte", H, GRAPH_SPLIT_VOCAB);
    emb_op(g, wpe, "wpe", H, GRAPH_SPLIT_NONE);
    graph_op_eltwise(g, tr, GRAPH_OP_ELEMENTWISE, "add", T * (double)H, 2, 0.0, GRAPH_SPLIT_SEQ);
    gb_dropout_op(g, drop, "drop", T * (double)H, hp, GRAPH_SPLIT_SEQ);
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_OTHER);
    int32_t list = graph_add_module(g, tr, "h", "ModuleList", "");
    for (int64_t l = 0; l < m->layers && !g->oom; l++) {
        int32_t L = (int32_t)l;
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        int32_t blk = graph_add_module(g, list, graph_idx(g, &c->idx, l), "GPT2Block", "");
        int32_t ln1 = gb_norm_mod(g, blk, "ln_1", "LayerNorm", lne, H, true);
        int32_t at = graph_add_module(g, blk, "attn", "GPT2Attention", "");
        int32_t ca = conv1d(c, at, "c_attn", H, 3 * A * D, GRAPH_SPLIT_COL);
        int32_t cp = conv1d(c, at, "c_proj", A * D, H, GRAPH_SPLIT_ROW);
        graph_add_module(g, at, "attn_dropout", "Dropout", adr);
        int32_t rd = graph_add_module(g, at, "resid_dropout", "Dropout", dr);
        graph_op_norm(g, ln1, "ln_1", T, H, true, 5.0);
        conv1d_op(c, ca, "c_attn", H, 3 * A * D, GRAPH_SPLIT_COL);
        graph_at(g, L, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
        graph_op_attention(g, at, "sdpa", B, A, A, S, S, D, D);
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        conv1d_op(c, cp, "c_proj", A * D, H, GRAPH_SPLIT_ROW);
        gb_dropout_op(g, rd, "resid_dropout", T * (double)H, hp, GRAPH_SPLIT_SEQ);
        residual(g, blk, H);
        graph_at(g, L, GRAPH_PART_MLP, GRAPH_ROLE_LAYER);
        int32_t ln2 = gb_norm_mod(g, blk, "ln_2", "LayerNorm", lne, H, true);
        int32_t mlp = graph_add_module(g, blk, "mlp", "GPT2MLP", "");
        int32_t fc = conv1d(c, mlp, "c_fc", H, F, GRAPH_SPLIT_COL);
        int32_t fp = conv1d(c, mlp, "c_proj", F, H, GRAPH_SPLIT_ROW);
        int32_t act = graph_add_module(g, mlp, "act", "NewGELUActivation", "");
        int32_t md = graph_add_module(g, mlp, "dropout", "Dropout", dr);
        graph_op_norm(g, ln2, "ln_2", T, H, true, 5.0);
        conv1d_op(c, fc, "c_fc", H, F, GRAPH_SPLIT_COL);
        graph_op_eltwise(g, act, GRAPH_OP_ACTIVATION, "gelu", T * (double)F, 1, 0.0, GRAPH_SPLIT_COL);
        conv1d_op(c, fp, "c_proj", F, H, GRAPH_SPLIT_ROW);
        gb_dropout_op(g, md, "dropout", T * (double)H, hp, GRAPH_SPLIT_SEQ);
        residual(g, blk, H);
    }
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
    int32_t lnf = gb_norm_mod(g, tr, "ln_f", "LayerNorm", lne, H, true);
    graph_op_norm(g, lnf, "ln_f", T, H, true, 5.0);
    if (m->lm_head) hf_lm_head(g, root, "lm_head", H, V, T, wp);
    return TS_OK;
}

/* ---- Llama family ------------------------------------------------------------------------------ */

/* gate_proj/up_proj/down_proj/act_fn MLP (names w1/w2/w3 for Mixtral experts). */
static void gated_mlp(Hf *c, int32_t parent, const char *name, const char *klass, int64_t ffn, double tokens,
                      bool mixtral_names)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t H = m->hidden;
    bool glu = model_act_gated(m->act), geglu = m->act == MODEL_ACT_GEGLU;
    bool bias = g->at.expert_id < 0 ? m->mlp_bias : m->moe_bias;
    int32_t mlp = graph_add_module(g, parent, name, klass, "");
    int32_t gp = -1, up, dn;
    double n = tokens * (double)ffn;
    if (m->arch == MODEL_ARCH_PHI3 && glu) { /* Phi3MLP: gate_up_proj (2F), chunk, up * act(gate), down_proj */
        up = lin(c, mlp, "gate_up_proj", H, 2 * ffn, bias, GRAPH_SPLIT_COL);
        dn = lin(c, mlp, "down_proj", ffn, H, bias, GRAPH_SPLIT_ROW);
        int32_t act = graph_add_module(g, mlp, "activation_fn", geglu ? "GELUTanh" : "SiLU", "");
        graph_op_gemm(g, up, "gate_up_proj", tokens, H, 2 * ffn, bias, GRAPH_SPLIT_COL);
        graph_op_eltwise(g, act, GRAPH_OP_ACTIVATION, geglu ? "gelu" : "silu", n, 1, geglu ? 0.0 : 1.0, GRAPH_SPLIT_COL);
        GraphOp *mul = graph_op_eltwise(g, mlp, GRAPH_OP_ELEMENTWISE, "mul", n, 2, 0.0, GRAPH_SPLIT_COL);
        if (mul) mul->act_bytes = (double)g->opt.dtype_bytes * 2 * n;
        graph_op_gemm(g, dn, "down_proj", tokens, ffn, H, bias, GRAPH_SPLIT_ROW);
        return;
    }
    if (mixtral_names) {
        gp = lin(c, mlp, "w1", H, ffn, false, GRAPH_SPLIT_COL);
        dn = lin(c, mlp, "w2", ffn, H, false, GRAPH_SPLIT_ROW);
        up = lin(c, mlp, "w3", H, ffn, false, GRAPH_SPLIT_COL);
    } else {
        if (glu) gp = lin(c, mlp, "gate_proj", H, ffn, bias, GRAPH_SPLIT_COL);
        up = lin(c, mlp, "up_proj", H, ffn, bias, GRAPH_SPLIT_COL);
        dn = lin(c, mlp, "down_proj", ffn, H, bias, GRAPH_SPLIT_ROW);
    }
    /* transformers 5: ACT2FN["silu"] is nn.SiLU (F.silu at call time, which
     * DeepSpeed counts); "gelu_pytorch_tanh" is GELUTanh, which binds F.gelu at
     * construction like GELUActivation (0) */
    int32_t act = graph_add_module(g, mlp, "act_fn", geglu ? "GELUTanh" : glu ? "SiLU" : "GELUActivation", "");
    const char *gn = mixtral_names ? "w1" : "gate_proj", *un = mixtral_names ? "w3" : "up_proj";
    if (glu) {
        graph_op_gemm(g, gp, gn, tokens, H, ffn, bias, GRAPH_SPLIT_COL);
        graph_op_eltwise(g, act, GRAPH_OP_ACTIVATION, geglu ? "gelu" : "silu", n, 1, geglu ? 0.0 : 1.0, GRAPH_SPLIT_COL);
        graph_op_gemm(g, up, un, tokens, H, ffn, bias, GRAPH_SPLIT_COL);
        GraphOp *mul = graph_op_eltwise(g, mlp, GRAPH_OP_ELEMENTWISE, "mul", n, 2, 0.0, GRAPH_SPLIT_COL);
        if (mul) mul->act_bytes = (double)g->opt.dtype_bytes * 2 * n;
    } else {
        graph_op_gemm(g, up, un, tokens, H, ffn, bias, GRAPH_SPLIT_COL);
        graph_op_eltwise(g, act, GRAPH_OP_ACTIVATION, "gelu", n, 1, 0.0, GRAPH_SPLIT_COL);
    }
    graph_op_gemm(g, dn, mixtral_names ? "w2" : "down_proj", tokens, ffn, H, bias, GRAPH_SPLIT_ROW);
}

static void hf_norm_op(Hf *c, int32_t mod, const char *name, double rows, int64_t width)
{
    graph_op_norm(c->g, mod, name, rows, width, c->ln, c->ln ? 5.0 : 0.0);
}

static int32_t hf_norm_mod(Hf *c, int32_t parent, const char *name, int64_t width)
{
    const char *ex = width == c->m->hidden ? c->norm_extra : NULL;
    if (!ex) {
        char e[32];
        graph_fmt_eps(e, sizeof e, c->m->norm_eps);
        ex = c->ln ? ln_extra(c->g, width, c->m->norm_eps)
                   : ts_arena_printf(c->g->arena, "(%lld,), eps=%s", (long long)width, e);
    }
    return gb_norm_mod(c->g, parent, name, c->norm_cls, ex, width, c->ln);
}

static void llama_attention(Hf *c, int32_t layer_mod)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t B = g->opt.batch, S = g->opt.seq, H = m->hidden, A = m->heads, G = m->kv_heads, D = m->head_dim;
    double T = (double)g->tokens;
    int32_t at = graph_add_module(g, layer_mod, "self_attn", cls(c, "Attention"), "");
    int32_t L = g->at.layer;
    int64_t Dqk = D, Dv = D;
    if (m->q_lora_rank > 0 || m->kv_lora_rank > 0) { /* DeepSeek MLA */
        int64_t nope = m->qk_nope_dim, rope = m->qk_rope_dim, ql = m->q_lora_rank, kvl = m->kv_lora_rank;
        Dqk = nope + rope;
        Dv = m->v_head_dim;
        int32_t qa = -1, qan = -1, qb;
        if (ql > 0) {
            qa = lin(c, at, "q_a_proj", H, ql, false, GRAPH_SPLIT_NONE);
            qan = hf_norm_mod(c, at, "q_a_layernorm", ql);
            qb = lin(c, at, "q_b_proj", ql, A * Dqk, false, GRAPH_SPLIT_COL);
        } else {
            qb = lin(c, at, "q_proj", H, A * Dqk, false, GRAPH_SPLIT_COL);
        }
        int32_t kva = lin(c, at, "kv_a_proj_with_mqa", H, kvl + rope, false, GRAPH_SPLIT_NONE);
        int32_t kvan = hf_norm_mod(c, at, "kv_a_layernorm", kvl);
        int32_t kvb = lin(c, at, "kv_b_proj", kvl, A * (nope + Dv), false, GRAPH_SPLIT_COL);
        int32_t o = lin(c, at, "o_proj", A * Dv, H, false, GRAPH_SPLIT_ROW);
        if (ql > 0) {
            graph_op_gemm(g, qa, "q_a_proj", T, H, ql, false, GRAPH_SPLIT_NONE);
            hf_norm_op(c, qan, "q_a_layernorm", T, ql);
            graph_op_gemm(g, qb, "q_b_proj", T, ql, A * Dqk, false, GRAPH_SPLIT_COL);
        } else {
            graph_op_gemm(g, qb, "q_proj", T, H, A * Dqk, false, GRAPH_SPLIT_COL);
        }
        graph_op_gemm(g, kva, "kv_a_proj_with_mqa", T, H, kvl + rope, false, GRAPH_SPLIT_NONE);
        hf_norm_op(c, kvan, "kv_a_layernorm", T, kvl);
        graph_op_gemm(g, kvb, "kv_b_proj", T, kvl, A * (nope + Dv), false, GRAPH_SPLIT_COL);
        graph_op_rope(g, at, T, A + 1, rope);
        graph_at(g, L, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
        graph_op_attention(g, at, "sdpa", B, A, A, S, S, Dqk, Dv);
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        graph_op_gemm(g, o, "o_proj", T, A * Dv, H, false, GRAPH_SPLIT_ROW);
        return;
    }
    if (m->arch == MODEL_ARCH_PHI3) { /* Phi3Attention registers o_proj, then the fused qkv_proj */
        int64_t qkv = A * D + 2 * G * D;
        int32_t o = lin(c, at, "o_proj", A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        int32_t qk = lin(c, at, "qkv_proj", H, qkv, m->qkv_bias, GRAPH_SPLIT_COL);
        graph_op_gemm(g, qk, "qkv_proj", T, H, qkv, m->qkv_bias, GRAPH_SPLIT_COL);
        if (m->pos == MODEL_POS_ROPE) graph_op_rope(g, at, T, A + G, (int64_t)((double)D * m->rotary_pct));
        graph_at(g, L, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
        graph_op_attention(g, at, "sdpa", B, A, G, S, S, D, D);
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        graph_op_gemm(g, o, "o_proj", T, A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        return;
    }
    int32_t q = lin(c, at, "q_proj", H, A * D, m->qkv_bias, GRAPH_SPLIT_COL);
    int32_t k = lin(c, at, "k_proj", H, G * D, m->qkv_bias, GRAPH_SPLIT_COL);
    int32_t v = lin(c, at, "v_proj", H, G * D, m->qkv_bias, GRAPH_SPLIT_COL);
    int32_t o = lin(c, at, "o_proj", A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
    /* q_norm / k_norm: per head, D wide (Qwen3, Gemma 3), or over all heads
     * before the view, A*D and G*D wide and split with them (OLMo 2) */
    int32_t qn = -1, kn = -1;
    int64_t qw = m->qk_norm_full ? A * D : D, kw = m->qk_norm_full ? G * D : D;
    if (m->qk_norm) {
        qn = hf_norm_mod(c, at, "q_norm", qw);
        if (m->qk_norm_full && qn >= 0) g->params[g->n_params - 1].split = GRAPH_SPLIT_COL;
        kn = hf_norm_mod(c, at, "k_norm", kw);
        if (m->qk_norm_full && kn >= 0) g->params[g->n_params - 1].split = GRAPH_SPLIT_COL;
    }
    graph_op_gemm(g, q, "q_proj", T, H, A * D, m->qkv_bias, GRAPH_SPLIT_COL);
    graph_op_gemm(g, k, "k_proj", T, H, G * D, m->qkv_bias, GRAPH_SPLIT_COL);
    graph_op_gemm(g, v, "v_proj", T, H, G * D, m->qkv_bias, GRAPH_SPLIT_COL);
    if (m->qk_norm) {
        hf_norm_op(c, qn, "q_norm", T * (double)(A * D / qw), qw);
        hf_norm_op(c, kn, "k_norm", T * (double)(G * D / kw), kw);
        g->ops[g->n_ops - 1].split = g->ops[g->n_ops - 2].split = GRAPH_SPLIT_HEADS;
    }
    int64_t rd = (int64_t)((double)D * m->rotary_pct);
    if (m->pos == MODEL_POS_ROPE) graph_op_rope(g, at, T, A + G, rd);
    if (m->attn_sinks) graph_add_param(g, at, "sinks", A, 0, GRAPH_SPLIT_COL); /* GPT-OSS: a logit per head */
    graph_at(g, L, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
    gb_attn_window(g, graph_op_attention(g, at, "sdpa", B, A, G, S, S, D, D), m, L);
    graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
    graph_op_gemm(g, o, "o_proj", T, A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
}

/* GPT-OSS's MLP as transformers declares it (modeling_gpt_oss.py): GptOssMLP
 * holds `router` (GptOssTopKRouter: weight (E, H), bias (E)) and `experts`
 * (GptOssExperts: every expert's tensors stacked, gate_up_proj (E, H, 2F),
 * gate_up_proj_bias (E, 2F), down_proj (E, F, H), down_proj_bias (E, H)).
 * The router is F.linear (DeepSpeed counts it), top-k and F.softmax over the
 * K chosen logits. The eager experts loop over the experts hit: x @
 * gate_up_proj[e] + bias (the `@` DeepSpeed patches, the `+` it does not;
 * transformers' grouped_mm implementation calls torch._grouped_mm instead,
 * which the profiler does not patch: it would count 0), the
 * clamped gate (gate * sigmoid(1.702 gate) * (up + 1): clamp, sigmoid and `*`,
 * none patched, so 0), @ down_proj[e] + bias, the routing weight and index_add_
 * (the combine). */
static void gpt_oss_mlp(Hf *c, int32_t layer_mod)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t H = m->hidden, E = m->experts, K = m->topk, F = m->moe_ffn;
    double T = (double)g->tokens, Te = T * (double)K / (double)E, dt = (double)g->opt.dtype_bytes;
    int32_t mlp = graph_add_module(g, layer_mod, "mlp", cls(c, "MLP"), "");
    int32_t router = graph_add_module(g, mlp, "router", cls(c, "TopKRouter"), "");
    graph_add_param(g, router, "weight", E, H, GRAPH_SPLIT_NONE);
    graph_add_param(g, router, "bias", E, 0, GRAPH_SPLIT_NONE);
    int32_t ex = graph_add_module(g, mlp, "experts", cls(c, "Experts"), "");
    graph_add_packed_param(g, ex, "gate_up_proj", E, H, 2 * F, GRAPH_SPLIT_COL);
    graph_add_packed_param(g, ex, "gate_up_proj_bias", E, 2 * F, 0, GRAPH_SPLIT_COL);
    graph_add_packed_param(g, ex, "down_proj", E, F, H, GRAPH_SPLIT_ROW);
    graph_add_packed_param(g, ex, "down_proj_bias", E, H, 0, GRAPH_SPLIT_NONE);
    gb_router_op(g, router, T, H, E, K, true, (double)K / (double)E);
    for (int64_t e = 0; e < E && !g->oom; e++) {
        g->at.expert_id = (int32_t)e;
        graph_op_gemm(g, ex, "gate_up_proj", Te, H, 2 * F, true, GRAPH_SPLIT_COL);
        GraphOp *gate = graph_op_eltwise(g, ex, GRAPH_OP_ACTIVATION, "gate", Te * (double)F, 2, 0.0, GRAPH_SPLIT_COL);
        if (gate) gate->act_bytes = dt * 2 * Te * (double)F;
        graph_op_gemm(g, ex, "down_proj", Te, F, H, true, GRAPH_SPLIT_ROW);
    }
    g->at.expert_id = -1;
    graph_op_eltwise(g, ex, GRAPH_OP_ELEMENTWISE, "combine", T * (double)K * (double)H, 2, 0.0, GRAPH_SPLIT_NONE);
}

static void llama_moe(Hf *c, int32_t layer_mod)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t H = m->hidden, E = m->experts, K = m->topk;
    double T = (double)g->tokens, Te = T * (double)K / (double)E;
    bool mixtral = m->arch == MODEL_ARCH_MIXTRAL, ds = m->arch == MODEL_ARCH_DEEPSEEK;
    const char *name = mixtral ? "block_sparse_moe" : "mlp";
    int32_t moe = graph_add_module(g, layer_mod, name, cls(c, mixtral ? "SparseMoeBlock" : ds ? "MoE" : "SparseMoeBlock"), "");
    int32_t gate = -1, list;
    const char *ecls = cls(c, mixtral ? "BlockSparseTop2MLP" : "MLP");
    if (!ds) gate = lin(c, moe, "gate", H, E, m->moe_bias, GRAPH_SPLIT_NONE);
    list = graph_add_module(g, moe, "experts", "ModuleList", "");
    /* experts are declared and run one by one (HF loops over experts) */
    if (!ds) {
        graph_op_gemm(g, gate, "gate", T, H, E, m->moe_bias, GRAPH_SPLIT_NONE);
        gb_router_op(g, moe, T, H, E, K, false, 1.0); /* F.softmax over router logits */
        g->ops[g->n_ops - 1].fwd_flops = 5 * T * (double)E;
        g->ops[g->n_ops - 1].dgrad_flops = 10 * T * (double)E;
        g->ops[g->n_ops - 1].wgrad_flops = 0;
    }
    int32_t first_expert_op = g->n_ops;
    int32_t m0 = g->n_mods, p0 = g->n_params;
    g->at.expert_id = 0;
    gated_mlp(c, list, graph_idx(g, &c->idx, 0), ecls, m->moe_ffn, Te, mixtral);
    gb_clone_experts(g, list, m0, first_expert_op, p0, E, &c->idx);
    g->at.expert_id = -1;
    if (ds) {
        /* DeepseekV3TopkRouter is registered after the experts but runs first:
         * move its op in front of the expert ops. */
        gate = graph_add_module(g, moe, "gate", cls(c, "TopkRouter"), "");
        graph_add_param(g, gate, "weight", E, H, GRAPH_SPLIT_NONE);
        GraphOp *r = gb_router_op(g, gate, T, H, E, K, true, 0.0);
        if (r) {
            GraphOp tmp = *r;
            memmove(&g->ops[first_expert_op + 1], &g->ops[first_expert_op],
                    sizeof *g->ops * (size_t)(g->n_ops - 1 - first_expert_op));
            g->ops[first_expert_op] = tmp;
        }
    }
    graph_op_eltwise(g, moe, GRAPH_OP_ELEMENTWISE, "combine", T * (double)K * (double)H, 2, 0.0, GRAPH_SPLIT_NONE);
    if (m->shared_experts > 0)
        gated_mlp(c, moe, m->shared_gate ? "shared_expert" : "shared_experts", cls(c, "MLP"),
                  m->moe_ffn * m->shared_experts, T, false);
    if (m->shared_experts > 0 && m->shared_gate) { /* Qwen2-MoE: sigmoid(shared_expert_gate(x)) * shared */
        int32_t sg = lin(c, moe, "shared_expert_gate", H, 1, false, GRAPH_SPLIT_NONE);
        graph_op_gemm(g, sg, "shared_expert_gate", T, H, 1, false, GRAPH_SPLIT_NONE);
    }
}

/* Put the ops [first, n_ops) in the order of `seg`: n runs given as
 * {start, length} in the layer's op array. False (g->oom) when out of memory. */
static bool order_ops(ModuleGraph *g, int32_t first, const int32_t (*seg)[2], int n)
{
    int32_t len = g->n_ops - first;
    GraphOp *tmp = malloc(sizeof *tmp * (size_t)(len > 0 ? len : 1));
    if (!tmp) {
        g->oom = true;
        return false;
    }
    int32_t k = 0;
    for (int i = 0; i < n; i++)
        for (int32_t j = 0; j < seg[i][1]; j++) tmp[k++] = g->ops[seg[i][0] + j];
    assert(k == len);
    memcpy(&g->ops[first], tmp, sizeof *tmp * (size_t)len);
    free(tmp);
    return true;
}

/* One decoder layer. HF registers self_attn, mlp, then the norms (and
 * Phi-3's resid_attn_dropout, resid_mlp_dropout); their modules and ops are
 * emitted after the sublayers and the ops moved into execution order:
 *   pre        input_layernorm, attn, +, post_attention_layernorm, mlp, +
 *   reordered  attn, post_attention_layernorm, +, mlp, post_feedforward_layernorm, +
 *   sandwich   input_layernorm, attn, post_attention_layernorm, +,
 *              pre_feedforward_layernorm, mlp, post_feedforward_layernorm, +
 * (in Llama post_attention_layernorm is the MLP's input norm; in Gemma and
 * OLMo 2 it normalises the attention's output). */
static bool llama_layer(Hf *c, int32_t list, int64_t l)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t H = m->hidden;
    double T = (double)g->tokens;
    int32_t L = (int32_t)l;
    bool moe = model_layer_is_moe(m, l);
    GraphPart mp = moe ? GRAPH_PART_MOE : GRAPH_PART_MLP;
    graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
    int32_t dl = graph_add_module(g, list, graph_idx(g, &c->idx, l), cls(c, "DecoderLayer"), "");
    int32_t a0 = g->n_ops;
    llama_attention(c, dl);
    int32_t r1 = g->n_ops;
    residual(g, dl, H);
    graph_at(g, L, mp, GRAPH_ROLE_LAYER);
    int32_t m0 = g->n_ops;
    if (moe && c->gpt_oss)
        gpt_oss_mlp(c, dl);
    else if (moe)
        llama_moe(c, dl);
    else
        gated_mlp(c, dl, "mlp", cls(c, "MLP"), m->ffn, T, false);
    int32_t r2 = g->n_ops;
    residual(g, dl, H);
    /* the norms, in registration order; ni/no: the attention's input and
     * output norm ops, fi/fo: the MLP's (-1: none) */
    int32_t ni = -1, no = -1, fi = -1, fo = -1;
    bool sandwich = m->norm_layout == MODEL_NORM_LAYOUT_SANDWICH;
    if (m->norm_layout != MODEL_NORM_LAYOUT_REORDERED) {
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        ni = g->n_ops;
        hf_norm_op(c, hf_norm_mod(c, dl, "input_layernorm", H), "input_layernorm", T, H);
    }
    graph_at(g, L, model_output_norms(m) ? GRAPH_PART_ATTN : mp, GRAPH_ROLE_LAYER);
    *(model_output_norms(m) ? &no : &fi) = g->n_ops;
    hf_norm_op(c, hf_norm_mod(c, dl, "post_attention_layernorm", H), "post_attention_layernorm", T, H);
    graph_at(g, L, mp, GRAPH_ROLE_LAYER);
    if (sandwich) {
        fi = g->n_ops;
        hf_norm_op(c, hf_norm_mod(c, dl, "pre_feedforward_layernorm", H), "pre_feedforward_layernorm", T, H);
    }
    if (model_output_norms(m)) {
        fo = g->n_ops;
        hf_norm_op(c, hf_norm_mod(c, dl, "post_feedforward_layernorm", H), "post_feedforward_layernorm", T, H);
    }
    int32_t d1 = -1, d2 = -1, n1 = 0, n2 = 0;
    if (m->arch == MODEL_ARCH_PHI3) { /* each sublayer's output dropped out before the add */
        const char *dr = gb_drop_extra(g, m->hidden_dropout);
        int32_t da = graph_add_module(g, dl, "resid_attn_dropout", "Dropout", dr);
        int32_t dm = graph_add_module(g, dl, "resid_mlp_dropout", "Dropout", dr);
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        d1 = g->n_ops;
        gb_dropout_op(g, da, "resid_attn_dropout", T * (double)H, m->hidden_dropout, GRAPH_SPLIT_SEQ);
        n1 = g->n_ops - d1;
        graph_at(g, L, mp, GRAPH_ROLE_LAYER);
        d2 = g->n_ops;
        gb_dropout_op(g, dm, "resid_mlp_dropout", T * (double)H, m->hidden_dropout, GRAPH_SPLIT_SEQ);
        n2 = g->n_ops - d2;
    }
    if (g->oom) return false;
    int32_t seg[10][2], n = 0;
#define SEG(at, len)                                                                                                   \
    do {                                                                                                               \
        if ((at) >= 0) seg[n][0] = (at), seg[n++][1] = (len);                                                          \
    } while (0)
    SEG(ni, 1);
    SEG(a0, r1 - a0);
    SEG(no, 1);
    SEG(d1, n1);
    SEG(r1, 1);
    SEG(fi, 1);
    SEG(m0, r2 - m0);
    SEG(fo, 1);
    SEG(d2, n2);
    SEG(r2, 1);
#undef SEG
    return order_ops(g, a0, (const int32_t(*)[2])seg, n);
}

static TsStatus build_llama(Hf *c)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t H = m->hidden, V = m->vocab, D = m->head_dim;
    double T = (double)g->tokens;
    /* Gemma scales the embeddings by sqrt(H) (a '*', DeepSpeed 0): Gemma 3's
     * Gemma3TextScaledWordEmbedding inside its forward, Gemma 2's model after
     * the rotary tables */
    bool gemma = m->arch == MODEL_ARCH_GEMMA, gemma3 = gemma && m->qk_norm;
    int32_t root = graph_add_module(g, -1, "", cls(c, "ForCausalLM"), "");
    int32_t model = graph_add_module(g, root, "model", cls(c, gemma3 ? "TextModel" : "Model"), "");
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_EMBED);
    int32_t et = graph_add_module(g, model, "embed_tokens", gemma3 ? "Gemma3TextScaledWordEmbedding" : "Embedding",
                                  emb_extra(g, V, H, -1));
    int32_t wp = graph_add_param(g, et, "weight", V, H, GRAPH_SPLIT_VOCAB);
    emb_op(g, et, "embed_tokens", H, GRAPH_SPLIT_VOCAB);
    if (gemma3) graph_op_eltwise(g, et, GRAPH_OP_ELEMENTWISE, "embed_scale", T * (double)H, 1, 0.0, GRAPH_SPLIT_SEQ);
    /* rotary_emb runs before the layers (registered after norm): one tiny
     * matmul inv_freq[B, D/2, 1] @ positions[B, 1, S] that DeepSpeed counts
     * (Gemma 3: two, its global and local RoPE bases). */
    int32_t rot_first_op = g->n_ops;
    if (gemma && !gemma3)
        graph_op_eltwise(g, model, GRAPH_OP_ELEMENTWISE, "normalizer", T * (double)H, 1, 0.0, GRAPH_SPLIT_SEQ);
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_OTHER);
    int32_t list = graph_add_module(g, model, "layers", "ModuleList", "");
    for (int64_t l = 0; l < m->layers && !g->oom; l++) {
        if (!llama_layer(c, list, l)) break;
    }
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
    int32_t nm = hf_norm_mod(c, model, "norm", H);
    hf_norm_op(c, nm, "norm", T, H);
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_EMBED);
    int32_t rot = graph_add_module(g, model, "rotary_emb", cls(c, "RotaryEmbedding"), "");
    int64_t half = (m->q_lora_rank > 0 || m->kv_lora_rank > 0 ? m->qk_rope_dim : D) / 2;
    if (m->pos == MODEL_POS_ROPE && !g->oom) hf_rotary_op(g, rot, half, rot_first_op);
    if (m->pos == MODEL_POS_ROPE && gemma3 && !g->oom) hf_rotary_op(g, rot, half, rot_first_op + 1);
    if (m->lm_head) {
        graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
        hf_lm_head(g, root, "lm_head", H, V, T, wp);
    }
    return TS_OK;
}

/* ---- GPT-NeoX (Pythia, GPT-NeoX-20B) -----------------------------------------------------------
 * transformers >= 4.48 layout: GPTNeoXForCausalLM(gpt_neox: GPTNeoXModel(embed_in, emb_dropout,
 * layers, final_layer_norm, rotary_emb), embed_out); GPTNeoXLayer registers input_layernorm,
 * post_attention_layernorm, post_attention_dropout, post_mlp_dropout, attention, mlp;
 * GPTNeoXAttention(query_key_value, dense) (attention dropout is a float there, not a module);
 * GPTNeoXMLP(dense_h_to_4h, dense_4h_to_h, act). Forward with use_parallel_residual (the
 * config default, true for every released NeoX/Pythia checkpoint): x + attn(ln1(x)) +
 * mlp(ln2(x)), one three-input add. ModelSpec keeps no hidden_act string, so act is
 * GELUActivation (NeoX-20B's gelu_fast is FastGELUActivation; DeepSpeed counts both 0). */
static TsStatus build_neox(Hf *c)
{
    ModuleGraph *g = c->g;
    const ModelSpec *m = c->m;
    int64_t B = g->opt.batch, S = g->opt.seq, H = m->hidden, A = m->heads, G = m->kv_heads, D = m->head_dim;
    int64_t F = m->ffn, V = m->vocab, qkv = A * D + 2 * G * D;
    double T = (double)g->tokens;
    const char *dr = gb_drop_extra(g, m->hidden_dropout);
    double hp = m->hidden_dropout;
    if (!dr) return TS_ERR_INTERNAL;
    int32_t root = graph_add_module(g, -1, "", "GPTNeoXForCausalLM", "");
    int32_t model = graph_add_module(g, root, "gpt_neox", "GPTNeoXModel", "");
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_EMBED);
    int32_t ei = graph_add_module(g, model, "embed_in", "Embedding", emb_extra(g, V, H, -1));
    int32_t wp = graph_add_param(g, ei, "weight", V, H, GRAPH_SPLIT_VOCAB);
    int32_t ed = graph_add_module(g, model, "emb_dropout", "Dropout", dr);
    emb_op(g, ei, "embed_in", H, GRAPH_SPLIT_VOCAB);
    gb_dropout_op(g, ed, "emb_dropout", T * (double)H, hp, GRAPH_SPLIT_SEQ);
    int32_t rot_first_op = g->n_ops; /* rotary_emb runs here, after emb_dropout */
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_OTHER);
    int32_t list = graph_add_module(g, model, "layers", "ModuleList", "");
    int64_t rd = (int64_t)((double)D * m->rotary_pct);
    for (int64_t l = 0; l < m->layers && !g->oom; l++) {
        int32_t L = (int32_t)l;
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        int32_t ly = graph_add_module(g, list, graph_idx(g, &c->idx, l), "GPTNeoXLayer", "");
        int32_t n1 = hf_norm_mod(c, ly, "input_layernorm", H);
        graph_at(g, L, GRAPH_PART_MLP, GRAPH_ROLE_LAYER);
        int32_t n2 = hf_norm_mod(c, ly, "post_attention_layernorm", H);
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        int32_t pad = graph_add_module(g, ly, "post_attention_dropout", "Dropout", dr);
        int32_t pmd = graph_add_module(g, ly, "post_mlp_dropout", "Dropout", dr);
        int32_t at = graph_add_module(g, ly, "attention", "GPTNeoXAttention", "");
        int32_t q = lin(c, at, "query_key_value", H, qkv, m->qkv_bias, GRAPH_SPLIT_COL);
        int32_t o = lin(c, at, "dense", A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        graph_at(g, L, GRAPH_PART_MLP, GRAPH_ROLE_LAYER);
        int32_t mlp = graph_add_module(g, ly, "mlp", "GPTNeoXMLP", "");
        int32_t up = lin(c, mlp, "dense_h_to_4h", H, F, m->mlp_bias, GRAPH_SPLIT_COL);
        int32_t dn = lin(c, mlp, "dense_4h_to_h", F, H, m->mlp_bias, GRAPH_SPLIT_ROW);
        int32_t act = graph_add_module(g, mlp, "act", "GELUActivation", "");
        /* execution order */
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        hf_norm_op(c, n1, "input_layernorm", T, H);
        graph_op_gemm(g, q, "query_key_value", T, H, qkv, m->qkv_bias, GRAPH_SPLIT_COL);
        if (m->pos == MODEL_POS_ROPE && rd > 0) graph_op_rope(g, at, T, A + G, rd);
        graph_at(g, L, GRAPH_PART_ATTN_CORE, GRAPH_ROLE_LAYER);
        graph_op_attention(g, at, "sdpa", B, A, G, S, S, D, D);
        graph_at(g, L, GRAPH_PART_ATTN, GRAPH_ROLE_LAYER);
        graph_op_gemm(g, o, "dense", T, A * D, H, m->proj_bias, GRAPH_SPLIT_ROW);
        gb_dropout_op(g, pad, "post_attention_dropout", T * (double)H, hp, GRAPH_SPLIT_SEQ);
        graph_at(g, L, GRAPH_PART_MLP, GRAPH_ROLE_LAYER);
        hf_norm_op(c, n2, "post_attention_layernorm", T, H);
        graph_op_gemm(g, up, "dense_h_to_4h", T, H, F, m->mlp_bias, GRAPH_SPLIT_COL);
        graph_op_eltwise(g, act, GRAPH_OP_ACTIVATION, "gelu", T * (double)F, 1, 0.0, GRAPH_SPLIT_COL);
        graph_op_gemm(g, dn, "dense_4h_to_h", T, F, H, m->mlp_bias, GRAPH_SPLIT_ROW);
        gb_dropout_op(g, pmd, "post_mlp_dropout", T * (double)H, hp, GRAPH_SPLIT_SEQ);
        graph_op_eltwise(g, ly, GRAPH_OP_ELEMENTWISE, "residual", T * (double)H, 3, 0.0, GRAPH_SPLIT_SEQ);
    }
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
    int32_t fn = hf_norm_mod(c, model, "final_layer_norm", H);
    hf_norm_op(c, fn, "final_layer_norm", T, H);
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_EMBED);
    int32_t rot = graph_add_module(g, model, "rotary_emb", "GPTNeoXRotaryEmbedding", "");
    if (m->pos == MODEL_POS_ROPE && rd > 0 && !g->oom) hf_rotary_op(g, rot, rd / 2, rot_first_op);
    if (m->lm_head) {
        graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_HEAD);
        hf_lm_head(g, root, "embed_out", H, V, T, wp);
    }
    return TS_OK;
}

TsStatus graph_build_hf(ModuleGraph *g, TsError *err)
{
    (void)err;
    const ModelSpec *m = &g->spec;
    Hf c = {.g = g, .m = m, .ln = m->norm == MODEL_NORM_LAYERNORM};
    int64_t n_idx = m->layers > m->experts ? m->layers : m->experts;
    if (!graph_names_init(g, &c.idx, n_idx)) return TS_ERR_INTERNAL;
    if (m->arch == MODEL_ARCH_BERT) return build_bert(&c);
    if (m->arch == MODEL_ARCH_GPT) return build_gpt2(&c);
    switch (m->arch) {
    case MODEL_ARCH_MIXTRAL: c.P = "Mixtral"; break;
    case MODEL_ARCH_DEEPSEEK: c.P = "DeepseekV3"; break;
    case MODEL_ARCH_QWEN: c.P = m->experts > 0 ? (m->qk_norm ? "Qwen3Moe" : "Qwen2Moe") : m->qk_norm ? "Qwen3" : "Qwen2"; break;
    case MODEL_ARCH_GEMMA: c.P = m->qk_norm ? "Gemma3" : "Gemma2"; break;
    case MODEL_ARCH_PHI3: c.P = "Phi3"; break;
    case MODEL_ARCH_OLMO2: c.P = "Olmo2"; break;
    case MODEL_ARCH_NEOX: c.P = "GPTNeoX"; break; /* GPT-NeoX layout: build_neox */
    default:
        c.gpt_oss = m->attn_sinks;
        c.P = c.gpt_oss ? "GptOss" : "Llama";
        break;
    }
    char e[32];
    graph_fmt_eps(e, sizeof e, m->norm_eps);
    if (c.ln) {
        c.norm_cls = "LayerNorm";
        c.norm_extra = ln_extra(g, m->hidden, m->norm_eps);
    } else {
        c.norm_cls = cls(&c, "RMSNorm");
        c.norm_extra = ts_arena_printf(g->arena, "(%lld,), eps=%s", (long long)m->hidden, e);
    }
    return m->arch == MODEL_ARCH_NEOX ? build_neox(&c) : build_llama(&c);
}
