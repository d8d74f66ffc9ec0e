/* Unit tests for the module graph: DeepSpeed op counting rules, totals, tied
 * parameters, the three namings, op spans and linearity in the batch.
 * Exact comparisons are on integers held in doubles (all < 2^53). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/graph.h"
#include "trainsim/hw.h"

static ModelSpec flags(ModelArch arch, int64_t L, int64_t H, int64_t A)
{
    ModelSpec m;
    model_defaults(&m, arch);
    m.layers = L;
    m.hidden = H;
    m.heads = A;
    model_finalize(&m);
    return m;
}

static ModuleGraph *build(const ModelSpec *m, GraphNaming n, int64_t B, int64_t S)
{
    GraphOptions o;
    graph_options_init(&o);
    o.naming = n;
    o.naming_set = true;
    o.batch = B;
    o.seq = S;
    ModuleGraph *g = NULL;
    TsError err = {0};
    assert_int_equal(graph_build(m, &o, &g, &err), TS_OK);
    return g;
}

/* The graph of m in naming n, or NULL where that naming does not apply. */
static ModuleGraph *try_build(const ModelSpec *m, GraphNaming n, int64_t S)
{
    GraphOptions o;
    graph_options_init(&o);
    o.naming = n;
    o.naming_set = true;
    o.seq = S;
    ModuleGraph *g = NULL;
    TsError err = {0};
    return graph_build(m, &o, &g, &err) == TS_OK ? g : NULL;
}

static const GraphOp *own_op(const ModuleGraph *g, const char *path, int k)
{
    int32_t id = graph_find(g, path);
    assert_true(id >= 0);
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].module == id && k-- == 0) return &g->ops[i];
    fail_msg("no op %d in %s", k, path);
    return NULL;
}

static void test_bert_seed_totals(void **state)
{
    (void)state;
    ModelSpec m = flags(MODEL_ARCH_BERT, 12, 768, 12);
    ModuleGraph *g = build(&m, GRAPH_NAMING_HF, 4, 128);
    GraphTotals t;
    graph_model_totals(g, &t);
    /* the seed report: 109.48 M params, 44.7 GMACs, 89.45 G flops */
    assert_int_equal(t.params, 109482240);
    assert_true(t.ds_macs == 44696862720.0);
    assert_true(t.ds_flops == 89452314624.0);
    /* rules: linear 2*MACs without bias; F.softmax numel; LayerNorm 5*numel; GELUActivation 0 */
    const GraphOp *q = own_op(g, "encoder.layer.0.attention.self.query", 0);
    assert_true(q->ds_macs == 512.0 * 768 * 768 && q->ds_flops == 2 * q->ds_macs);
    const GraphOp *sm = own_op(g, "encoder.layer.0.attention.self", 1); /* matmul, softmax, matmul */
    assert_int_equal(sm->kind, GRAPH_OP_SOFTMAX);
    assert_true(sm->ds_flops == 4.0 * 12 * 128 * 128);
    const GraphOp *ln = own_op(g, "embeddings.LayerNorm", 0);
    assert_true(ln->ds_flops == 5.0 * 512 * 768);
    assert_true(own_op(g, "encoder.layer.0.intermediate.intermediate_act_fn", 0)->ds_flops == 0);
    /* pooler runs on the first token only: 2.36 MMACs */
    GraphTotals p;
    graph_totals(g, graph_find(g, "pooler"), &p);
    assert_true(p.ds_macs == 4.0 * 768 * 768);
    assert_string_equal(g->mods[graph_find(g, "embeddings.word_embeddings")].extra_repr, "30522, 768, padding_idx=0");
    assert_string_equal(g->mods[graph_find(g, "encoder.layer.3.output.LayerNorm")].extra_repr,
                        "(768,), eps=1e-12, elementwise_affine=True");
    graph_destroy(g);
}

static void test_gpt2_tied_and_conv1d(void **state)
{
    (void)state;
    ModelSpec m = flags(MODEL_ARCH_GPT, 2, 768, 12);
    m.max_positions = 1024;
    ModuleGraph *g = build(&m, GRAPH_NAMING_HF, 1, 64);
    ModelCounts c;
    model_count_params(&m, &c);
    GraphTotals t;
    graph_model_totals(g, &t);
    assert_int_equal(t.params, c.total); /* tied lm_head counted once */
    int32_t head = graph_find(g, "lm_head");
    assert_int_equal(graph_params(g, head), 50257 * 768); /* but shown in the module holding it */
    assert_true(g->params[g->mods[head].first_param].tied);
    /* Conv1D is torch.addmm: 2*MACs + numel(bias) */
    const GraphOp *ca = own_op(g, "transformer.h.0.attn.c_attn", 0);
    assert_true(ca->ds_flops == 2.0 * 64 * 768 * 2304 + 2304);
    assert_string_equal(g->mods[graph_find(g, "transformer.h.0.attn.c_attn")].repr, "Conv1D(nf=2304, nx=768)");
    /* SDPA: two matmuls, no softmax, no causal halving */
    const GraphOp *sd = own_op(g, "transformer.h.1.attn", 0);
    assert_int_equal(sd->kind, GRAPH_OP_ATTENTION_CORE);
    assert_true(sd->ds_macs == 2.0 * 12 * 64 * 64 * 64);
    graph_destroy(g);
}

static void test_llama_gqa_swiglu(void **state)
{
    (void)state;
    ModelSpec m = flags(MODEL_ARCH_LLAMA, 2, 4096, 32);
    m.kv_heads = 8;
    m.ffn = 14336;
    m.vocab = 128256;
    ModuleGraph *g = build(&m, GRAPH_NAMING_HF, 1, 128);
    assert_true(graph_find(g, "model.layers.1.self_attn.k_proj") >= 0);
    assert_true(own_op(g, "model.layers.0.self_attn.k_proj", 0)->ds_macs == 128.0 * 4096 * 1024);
    /* RMSNorm, RoPE, residual and SwiGLU's mul count 0; SiLU counts numel */
    assert_true(own_op(g, "model.layers.0.input_layernorm", 0)->ds_flops == 0);
    assert_true(own_op(g, "model.layers.0.mlp.act_fn", 0)->ds_flops == 128.0 * 14336);
    assert_true(own_op(g, "model.layers.0.mlp", 0)->ds_flops == 0); /* act(g) * u */
    const GraphOp *dn = own_op(g, "model.layers.0.mlp.down_proj", 0);
    assert_int_equal(dn->split, GRAPH_SPLIT_ROW);
    assert_int_equal(dn->part, GRAPH_PART_MLP);
    assert_int_equal(dn->layer, 0);
    assert_string_equal(g->mods[graph_find(g, "model.norm")].extra_repr, "(4096,), eps=1e-05");
    /* ops run in order: input norm first in a layer, the head last */
    int32_t l1 = graph_find(g, "model.layers.1");
    assert_string_equal(g->ops[g->mods[l1].first_op].name, "input_layernorm");
    assert_int_equal(g->ops[g->n_ops - 1].kind, GRAPH_OP_LOSS);
    graph_destroy(g);
}

/* RoPE ops carry dims {tokens, heads, D} in every naming and every
 * attention kind (GQA: q and k heads; MLA: the q heads and the shared
 * k_pe), so the cost model charges one read and one write of exactly those
 * elements. The shape was once {numel, heads, D}: a Megatron-named
 * DeepSeek-V3 profile spent 0.65 s per layer on rotary. */
/* Dropout ops and reprs follow the model's probabilities in every naming:
 * a p = 0 module stays in the tree ("p=0.0") but runs no op. */
static void test_dropout_ops(void **state)
{
    (void)state;
    TsError err = {0};
    ModelSpec m;
    assert_int_equal(model_preset("gpt2", &m, &err), TS_OK);
    m.layers = 2;
    for (int n = 0; n < GRAPH_NAMING_COUNT; n++) {
        int count[2];
        for (int zero = 0; zero < 2; zero++) {
            m.hidden_dropout = zero ? 0.0 : 0.1;
            m.attn_dropout = zero ? 0.0 : 0.05;
            GraphOptions o;
            graph_options_init(&o);
            o.naming = (GraphNaming)n;
            o.naming_set = true;
            o.seq = 128;
            o.flash = false;
            ModuleGraph *g = NULL;
            assert_int_equal(graph_build(&m, &o, &g, &err), TS_OK);
            count[zero] = 0;
            for (int32_t i = 0; i < g->n_ops; i++) count[zero] += g->ops[i].kind == GRAPH_OP_DROPOUT;
            int reprs = 0;
            for (int32_t i = 0; i < g->n_mods; i++) {
                if (strcmp(g->mods[i].cls, "Dropout") != 0) continue;
                bool attn = strstr(g->mods[i].name, "attn_dropout") || strstr(g->mods[i].name, "attention_dropout") ||
                            (n == GRAPH_NAMING_HF && strcmp(g->mods[i].name, "dropout") == 0 &&
                             strstr(g->mods[g->mods[i].parent].name, "self"));
                const char *want = zero ? "p=0.0, inplace=False" : attn ? "p=0.05, inplace=False" : "p=0.1, inplace=False";
                assert_string_equal(g->mods[i].extra_repr, want);
                reprs++;
            }
            assert_true(reprs > 0);
            graph_destroy(g);
        }
        assert_true(count[0] > 0);
        assert_int_equal(count[1], 0);
    }
}

static void test_rope_dims(void **state)
{
    (void)state;
    static const struct { const char *preset; int64_t heads, dim; } C[] = {
        {"llama3-8b", 32 + 8, 128}, {"deepseek-v3", 128 + 1, 64}, {"gpt-neox-20b", 64 + 64, 24}};
    HwModel hw;
    hw_model_init(&hw);
    TsError err = {0};
    assert_int_equal(hw_gpu_load("h100-sxm5-80gb", &hw.gpu, &err), TS_OK);
    for (size_t k = 0; k < sizeof C / sizeof C[0]; k++) {
        ModelSpec m;
        assert_int_equal(model_preset(C[k].preset, &m, &err), TS_OK);
        for (int n = 0; n < GRAPH_NAMING_COUNT; n++) {
            ModuleGraph *g = try_build(&m, (GraphNaming)n, 256);
            if (!g) continue; /* MoE not deepspeed */
            int found = 0;
            for (int32_t i = 0; i < g->n_ops; i++) {
                const GraphOp *op = &g->ops[i];
                if (op->kind != GRAPH_OP_ROPE) continue;
                found++;
                assert_int_equal(op->dims[0], 256);
                assert_int_equal(op->dims[1], C[k].heads);
                assert_int_equal(op->dims[2], C[k].dim);
                double want = hw_memory_time_s(&hw, 256.0 * (double)C[k].heads * (double)C[k].dim * 2 * 2);
                assert_true(hw_op_time_s(&hw, op, HW_PASS_FWD, TS_DTYPE_BF16) == want);
            }
            assert_int_equal(found, m.layers);
            graph_destroy(g);
        }
    }
}

static void test_spans_and_batch_linearity(void **state)
{
    (void)state;
    ModelSpec m = flags(MODEL_ARCH_MIXTRAL, 2, 512, 8);
    m.kv_heads = 2;
    m.experts = 4;
    m.topk = 2;
    m.moe_ffn = 1024;
    for (int n = 0; n < 2; n++) {
        GraphNaming nm = n ? GRAPH_NAMING_MEGATRON : GRAPH_NAMING_HF;
        ModuleGraph *g1 = build(&m, nm, 1, 256), *g3 = build(&m, nm, 3, 256);
        assert_int_equal(g1->n_ops, g3->n_ops);
        for (int32_t i = 0; i < g1->n_ops; i++) {
            assert_true(g3->ops[i].ds_flops == 3 * g1->ops[i].ds_flops ||
                        g1->ops[i].kind == GRAPH_OP_BATCHED_GEMM); /* HF rotary inv_freq */
            assert_true(g3->ops[i].fwd_bytes <= 3 * g1->ops[i].fwd_bytes + 1e-6 * g3->ops[i].fwd_bytes ||
                        g1->ops[i].kind == GRAPH_OP_GEMM || g1->ops[i].kind == GRAPH_OP_ROUTER);
        }
        /* every module's op span holds only ops of its subtree */
        for (int32_t md = 0; md < g1->n_mods; md++) {
            const GraphModule *x = &g1->mods[md];
            for (int32_t i = x->first_op; i < x->first_op + x->n_ops; i++)
                assert_true(g1->ops[i].module >= md && g1->ops[i].module < x->end_mod);
        }
        int experts = 0;
        for (int32_t i = 0; i < g1->n_ops; i++)
            if (g1->ops[i].expert) {
                experts++;
                assert_true(g1->ops[i].expert_id >= 0 && g1->ops[i].expert_id < 4);
            }
        assert_true(experts >= 2 * 4 * 3);
        ModelCounts c;
        model_count_params(&m, &c);
        GraphTotals t;
        graph_model_totals(g1, &t);
        if (nm == GRAPH_NAMING_HF) assert_int_equal(t.params, c.total);
        graph_destroy(g1);
        graph_destroy(g3);
    }
}

static void test_megatron_naming(void **state)
{
    (void)state;
    ModelSpec m = flags(MODEL_ARCH_GPT, 2, 768, 12);
    ModuleGraph *g = build(&m, GRAPH_NAMING_MEGATRON, 2, 128);
    int32_t sa = graph_find(g, "decoder.layers.0.self_attention");
    /* Megatron's registration order */
    const char *want[] = {"core_attention", "linear_proj", "linear_qkv", "q_layernorm", "k_layernorm"};
    int k = 0;
    for (int32_t c = g->mods[sa].first_child; c >= 0; c = g->mods[c].next_sibling, k++)
        assert_string_equal(g->mods[c].name, want[k]);
    assert_int_equal(k, 5);
    /* but linear_qkv runs first */
    assert_string_equal(g->ops[g->mods[sa].first_op].name, "linear_qkv");
    assert_int_equal(own_op(g, "decoder.layers.0.self_attention.linear_qkv", 0)->split, GRAPH_SPLIT_COL);
    assert_int_equal(own_op(g, "decoder.layers.0.mlp.linear_fc2", 0)->split, GRAPH_SPLIT_ROW);
    assert_int_equal(own_op(g, "embedding.word_embeddings", 0)->split, GRAPH_SPLIT_VOCAB);
    assert_true(own_op(g, "decoder.layers.0.input_layernorm", 0)->ds_flops == 0); /* apex */
    assert_int_equal(g->vocab, 50304); /* padded to 128 */
    /* core attention: DeepSpeed counts baddbmm (+numel) + bmm */
    const GraphOp *core = own_op(g, "decoder.layers.1.self_attention.core_attention", 0);
    double ss = 2.0 * 12 * 128 * 128;
    assert_true(core->ds_flops == 2 * (ss * 64 * 2) + ss);
    assert_true(core->dgrad_flops == 2.5 * core->fwd_flops);
    char path[256];
    graph_module_path(g, graph_find(g, "decoder.final_layernorm"), path, sizeof path);
    assert_string_equal(path, "decoder.final_layernorm");
    graph_destroy(g);
}

static void test_deepspeed_pipe_params(void **state)
{
    (void)state;
    ModelSpec m = flags(MODEL_ARCH_GPT, 4, 1024, 16);
    m.max_positions = 1024;
    GraphOptions o;
    graph_options_init(&o);
    o.naming = GRAPH_NAMING_DEEPSPEED;
    o.naming_set = true;
    o.seq = 1024;
    o.tp = 4;
    ModuleGraph *g;
    TsError err = {0};
    assert_int_equal(graph_build(&m, &o, &g, &err), TS_OK);
    /* seed deepspeed_pipe_param_partition.csv: per-rank (12672, 1024) = 50688 / 4 */
    const GraphParam *p = &g->params[0];
    char path[256];
    graph_module_path(g, p->module, path, sizeof path);
    assert_string_equal(path, "tied_modules.embed.word_embeddings");
    assert_true(p->shape[0] == 50688 && p->shape[1] == 1024 && p->split == GRAPH_SPLIT_VOCAB);
    assert_string_equal(g->mods[g->params[1].module].extra_repr, "1024, 1024");
    const GraphParam *n = &g->params[2];
    graph_module_path(g, n->module, path, sizeof path);
    assert_string_equal(path, "2.input_layernorm");
    assert_string_equal(g->mods[n->module].extra_repr, "torch.Size([1024]), eps=1e-05, elementwise_affine=True");
    const GraphParam *qkv = &g->params[4];
    graph_module_path(g, qkv->module, path, sizeof path);
    assert_string_equal(path, "2.attention.query_key_value");
    assert_true(qkv->shape[0] == 3072 && qkv->shape[1] == 1024 && qkv->split == GRAPH_SPLIT_COL);
    const GraphParam *dn = &g->params[6];
    assert_true(dn->shape[0] == 1024 && dn->shape[1] == 1024 && dn->split == GRAPH_SPLIT_ROW);
    assert_int_equal(g->params[7].split, GRAPH_SPLIT_NONE); /* row-parallel bias is replicated */
    assert_true(graph_find(g, "6") >= 0);                  /* final norm after layers 2..5 */
    graph_destroy(g);
}

/* Op spans (against the ancestor walk), the per-layer index and the expert
 * runs, for every preset family and naming that has it. */
static void check_index(const ModuleGraph *g)
{
    int32_t *first = calloc((size_t)g->n_mods, sizeof *first), *last = calloc((size_t)g->n_mods, sizeof *last);
    assert_non_null(first);
    assert_non_null(last);
    for (int32_t m = 0; m < g->n_mods; m++) first[m] = last[m] = -1;
    for (int32_t i = 0; i < g->n_ops; i++)
        for (int32_t m = g->ops[i].module; m >= 0; m = g->mods[m].parent) {
            if (first[m] < 0) first[m] = i;
            last[m] = i;
        }
    for (int32_t m = 0; m < g->n_mods; m++) {
        assert_int_equal(g->mods[m].n_ops, first[m] < 0 ? 0 : last[m] - first[m] + 1);
        if (first[m] >= 0) assert_int_equal(g->mods[m].first_op, first[m]);
    }
    free(first);
    free(last);
    int64_t L = g->spec.layers;
    const int32_t *lf = g->layer_first_op, *x = g->layer_expert_ops;
    for (int32_t i = 0; i < g->n_ops; i++) {
        int32_t l = g->ops[i].layer;
        if (l < 0) {
            assert_true(i < lf[0] || i >= lf[L]);
            continue;
        }
        assert_true(i >= lf[l] && i < lf[l + 1]);
        bool in_run = i >= x[2 * l] && i < x[2 * l + 1];
        assert_int_equal(in_run, g->ops[i].expert);
        if (in_run && i > x[2 * l]) /* expert by expert */
            assert_true(g->ops[i].expert_id == g->ops[i - 1].expert_id ||
                        g->ops[i].expert_id == g->ops[i - 1].expert_id + 1);
    }
    for (int64_t l = 0; l < L; l++) {
        assert_true(lf[l] <= lf[l + 1]);
        assert_true(x[2 * l] >= lf[l] && x[2 * l] <= x[2 * l + 1] && x[2 * l + 1] <= lf[l + 1]);
        if (x[2 * l] < x[2 * l + 1]) assert_int_equal(g->ops[x[2 * l]].expert_id, 0);
    }
}

static void test_layer_index(void **state)
{
    (void)state;
    static const char *const presets[] = {"gpt2", "bert-base-uncased", "llama2-7b", "mixtral-8x7b",
                                          "qwen3-30b-a3b", "deepseek-v3", "gpt-1t", "gpt-neox-20b"};
    for (size_t k = 0; k < sizeof presets / sizeof presets[0]; k++) {
        ModelSpec m;
        TsError err = {0};
        assert_int_equal(model_preset(presets[k], &m, &err), TS_OK);
        for (int n = 0; n < GRAPH_NAMING_COUNT; n++) {
            ModuleGraph *g = try_build(&m, (GraphNaming)n, 128);
            if (!g) continue; /* BERT only hf, MoE not deepspeed */
            check_index(g);
            graph_destroy(g);
        }
    }
    /* GPT-NeoX in HF naming: its own module names, parallel residual (one 3-input add) */
    ModelSpec nx = flags(MODEL_ARCH_NEOX, 2, 256, 4);
    ModuleGraph *g = build(&nx, GRAPH_NAMING_HF, 2, 64);
    check_index(g);
    assert_string_equal(g->mods[0].cls, "GPTNeoXForCausalLM");
    static const char *const paths[] = {"gpt_neox.embed_in", "gpt_neox.layers.1.input_layernorm",
                                        "gpt_neox.layers.1.post_attention_layernorm",
                                        "gpt_neox.layers.0.attention.query_key_value", "gpt_neox.layers.0.attention.dense",
                                        "gpt_neox.layers.0.mlp.dense_h_to_4h", "gpt_neox.layers.0.mlp.dense_4h_to_h",
                                        "gpt_neox.final_layer_norm", "embed_out"};
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) assert_true(graph_find(g, paths[k]) > 0);
    assert_string_equal(g->mods[graph_find(g, "gpt_neox.layers.0")].cls, "GPTNeoXLayer");
    assert_string_equal(g->mods[graph_find(g, "gpt_neox.layers.0.attention")].cls, "GPTNeoXAttention");
    assert_string_equal(g->mods[graph_find(g, "gpt_neox.layers.0.mlp")].cls, "GPTNeoXMLP");
    GraphTotals t;
    graph_model_totals(g, &t);
    ModelCounts mc;
    model_count_params(&nx, &mc);
    assert_true(t.params == mc.total);
    int adds = 0;
    for (int32_t i = g->layer_first_op[0]; i < g->layer_first_op[1]; i++)
        if (g->ops[i].kind == GRAPH_OP_ELEMENTWISE) adds++, assert_int_equal(g->ops[i].dims[1], 3);
    assert_int_equal(adds, 1);
    graph_destroy(g);
}

/* Norm layouts and q/k norms on a small Llama (vocab a multiple of 128: no
 * padding): both namings hold exactly model_count_params' parameters, HF
 * registers the norms after the sublayers and runs them where transformers
 * does (Gemma's sandwich, OLMo 2's reordered norms), and an OLMo 2 q_norm
 * spans all heads, split with them. */
static void test_norm_layouts(void **state)
{
    (void)state;
    static const struct {
        ModelNormLayout layout;
        bool qk, full;
        const char *run[7]; /* layer 0's hidden-wide norms and residual adds, in order */
    } C[] = {
        {MODEL_NORM_LAYOUT_PRE, false, false,
         {"input_layernorm", "residual", "post_attention_layernorm", "residual"}},
        {MODEL_NORM_LAYOUT_REORDERED, true, true,
         {"post_attention_layernorm", "residual", "post_feedforward_layernorm", "residual"}},
        {MODEL_NORM_LAYOUT_SANDWICH, true, false,
         {"input_layernorm", "post_attention_layernorm", "residual", "pre_feedforward_layernorm",
          "post_feedforward_layernorm", "residual"}},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        ModelSpec m = flags(MODEL_ARCH_LLAMA, 2, 256, 8);
        m.kv_heads = 2;
        m.vocab = 1024;
        m.norm_layout = C[i].layout;
        m.qk_norm = C[i].qk;
        m.qk_norm_full = C[i].full;
        ModelCounts c;
        model_count_params(&m, &c);
        assert_int_equal(c.per_layer_dense, 2 * 256 * 256 + 2 * 256 * 64 + 3 * 256 * m.ffn + 256 * model_sublayer_norms(&m) * 2 +
                                                (C[i].qk ? (C[i].full ? 256 + 64 : 2 * 32) : 0));
        GraphTotals t;
        for (int n = 0; n < 2; n++) {
            ModuleGraph *g = build(&m, n ? GRAPH_NAMING_MEGATRON : GRAPH_NAMING_HF, 1, 64);
            graph_model_totals(g, &t);
            assert_int_equal(t.params, c.total);
            if (n == 0) {
                int k = 0;
                for (int32_t j = g->layer_first_op[0]; j < g->layer_first_op[1]; j++) {
                    const char *nm = g->ops[j].name;
                    if (!strstr(nm, "layernorm") && strcmp(nm, "residual")) continue;
                    assert_non_null(C[i].run[k]);
                    assert_string_equal(nm, C[i].run[k++]);
                }
                assert_null(C[i].run[k]);
                int32_t l0 = graph_find(g, "model.layers.0");
                assert_string_equal(g->mods[g->mods[l0].first_child].name, "self_attn");
                if (C[i].full) {
                    int32_t qn = graph_find(g, "model.layers.0.self_attn.q_norm");
                    const GraphParam *w = &g->params[g->mods[qn].first_param];
                    assert_int_equal(w->numel, 256);
                    assert_int_equal(w->split, GRAPH_SPLIT_COL);
                }
            } else if (C[i].layout == MODEL_NORM_LAYOUT_REORDERED) {
                assert_string_equal(g->mods[graph_find(g, "decoder.layers.0.input_layernorm")].cls, "IdentityOp");
                assert_true(graph_find(g, "decoder.layers.1.post_mlp_layernorm") > 0);
            }
            graph_destroy(g);
        }
        /* GPT2ModelPipe has neither */
        ModuleGraph *d = try_build(&m, GRAPH_NAMING_DEEPSPEED, 64);
        assert_true((d == NULL) == (C[i].qk || C[i].layout != MODEL_NORM_LAYOUT_PRE));
        graph_destroy(d);
    }
}

/* Gemma 2/3, Phi-3 and OLMo 2 under HF naming: transformers' classes and
 * attribute names, Phi-3's fused linears, and exactly model_count_params'
 * parameters (Gemma ties the LM head). */
static void test_hf_new_archs(void **state)
{
    (void)state;
    static const struct {
        ModelArch arch;
        bool qk;
        const char *root, *layer_cls, *paths[5];
    } C[] = {
        {MODEL_ARCH_GEMMA, false, "Gemma2ForCausalLM", "Gemma2DecoderLayer",
         {"model.layers.0.pre_feedforward_layernorm", "model.layers.0.mlp.act_fn", "model.rotary_emb", "lm_head"}},
        {MODEL_ARCH_GEMMA, true, "Gemma3ForCausalLM", "Gemma3DecoderLayer",
         {"model.layers.1.self_attn.q_norm", "model.layers.0.post_feedforward_layernorm", "model.embed_tokens"}},
        {MODEL_ARCH_PHI3, false, "Phi3ForCausalLM", "Phi3DecoderLayer",
         {"model.layers.0.self_attn.qkv_proj", "model.layers.0.mlp.gate_up_proj", "model.layers.0.mlp.activation_fn",
          "model.layers.1.resid_mlp_dropout"}},
        {MODEL_ARCH_OLMO2, true, "Olmo2ForCausalLM", "Olmo2DecoderLayer",
         {"model.layers.0.self_attn.k_norm", "model.layers.0.post_feedforward_layernorm"}},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        ModelSpec m = flags(C[i].arch, 2, 256, 8);
        m.kv_heads = 4;
        m.ffn = 512;
        m.vocab = 1000;
        m.qk_norm = C[i].qk;
        ModuleGraph *g = build(&m, GRAPH_NAMING_HF, 1, 64);
        assert_string_equal(g->mods[0].cls, C[i].root);
        assert_string_equal(g->mods[graph_find(g, "model.layers.1")].cls, C[i].layer_cls);
        for (int k = 0; k < 5 && C[i].paths[k]; k++)
            if (graph_find(g, C[i].paths[k]) < 0) fail_msg("%s: no %s", C[i].root, C[i].paths[k]);
        ModelCounts c;
        model_count_params(&m, &c);
        GraphTotals t;
        graph_model_totals(g, &t);
        assert_int_equal(t.params, c.total);
        if (C[i].arch == MODEL_ARCH_PHI3) {
            const GraphOp *qkv = own_op(g, "model.layers.0.self_attn.qkv_proj", 0);
            assert_true(qkv->ds_macs == 64.0 * 256 * (256 + 2 * 128));
            assert_true(own_op(g, "model.layers.0.mlp.gate_up_proj", 0)->ds_macs == 64.0 * 256 * 1024);
        }
        if (C[i].arch == MODEL_ARCH_GEMMA) { /* GELUTanh binds F.gelu at construction: DeepSpeed counts 0 */
            assert_true(own_op(g, "model.layers.0.mlp.act_fn", 0)->ds_flops == 0);
            assert_true(m.tied_embeddings && c.lm_head == 0);
        }
        graph_destroy(g);
    }
}

/* GPT-OSS under hf naming as transformers declares it: GptOssMLP holds a
 * router (weight (E, H), bias (E)) and GptOssExperts, every expert's tensor
 * stacked on dim 0; the ops still run expert by expert. */
static void test_hf_gpt_oss_packed_experts(void **state)
{
    (void)state;
    ModelSpec m;
    TsError err = {0};
    assert_int_equal(model_preset("gpt-oss-20b", &m, &err), TS_OK);
    m.layers = 2;
    model_finalize(&m);
    ModuleGraph *g = build(&m, GRAPH_NAMING_HF, 1, 128);
    int32_t mlp = graph_find(g, "model.layers.1.mlp"), ex = graph_find(g, "model.layers.1.mlp.experts");
    int32_t rt = graph_find(g, "model.layers.1.mlp.router");
    assert_true(mlp >= 0 && ex >= 0 && rt >= 0);
    assert_string_equal(g->mods[mlp].cls, "GptOssMLP");
    assert_string_equal(g->mods[ex].cls, "GptOssExperts");
    assert_string_equal(g->mods[rt].cls, "GptOssTopKRouter");
    assert_int_equal(g->mods[ex].first_child, -1); /* no per-expert modules */
    int64_t E = m.experts, H = m.hidden, F = m.moe_ffn, K = m.topk;
    const int64_t want[4][3] = {{E, H, 2 * F}, {E, 2 * F, 1}, {E, F, H}, {E, H, 1}};
    assert_int_equal(g->mods[ex].n_params, 4);
    for (int i = 0; i < 4; i++) {
        const GraphParam *p = &g->params[g->mods[ex].first_param + i];
        assert_true(p->packed && !p->expert && p->expert_id == -1);
        assert_int_equal(p->ndim, want[i][2] > 1 ? 3 : 2);
        assert_int_equal(p->numel, want[i][0] * want[i][1] * want[i][2]);
    }
    /* every parameter counted once: the model's own count */
    ModelCounts c;
    model_count_params(&m, &c);
    GraphTotals t;
    graph_model_totals(g, &t);
    assert_int_equal(t.params, c.total);
    /* the experts' `@` GEMMs: T*K tokens through H x 2F and F x H; the gate 0 */
    graph_totals(g, ex, &t);
    assert_true(t.ds_macs == 128.0 * (double)K * (double)(3 * H * F));
    /* the router: F.linear T*H*E MACs, F.softmax over the K chosen logits */
    graph_totals(g, rt, &t);
    assert_true(t.ds_macs == 128.0 * (double)(H * E));
    assert_true(t.ds_flops == 2 * t.ds_macs + 128.0 * (double)K);
    /* one run of ops per expert, expert ids in order */
    int32_t n = 0, last = -1;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].layer == 1 && g->ops[i].expert) {
            assert_true(g->ops[i].module == ex && g->ops[i].expert_id >= last);
            last = g->ops[i].expert_id;
            n++;
        }
    assert_int_equal(n, 3 * E);
    assert_int_equal(last, E - 1);
    graph_destroy(g);
}

static void test_bad_options(void **state)
{
    (void)state;
    ModelSpec m = flags(MODEL_ARCH_BERT, 2, 128, 2);
    GraphOptions o;
    graph_options_init(&o);
    o.naming = GRAPH_NAMING_MEGATRON;
    o.naming_set = true;
    ModuleGraph *g = (ModuleGraph *)1;
    TsError err = {0};
    assert_int_equal(graph_build(&m, &o, &g, &err), TS_ERR_USAGE);
    assert_null(g);
    assert_string_equal(err.msg, "naming 'megatron' has no BERT model");
    GraphNaming nm;
    assert_false(graph_naming_parse("torch", &nm));
    assert_true(graph_naming_parse("deepspeed", &nm) && nm == GRAPH_NAMING_DEEPSPEED);
    assert_string_equal(graph_op_name(GRAPH_OP_ATTENTION_CORE), "attention_core");
    graph_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bert_seed_totals),   cmocka_unit_test(test_gpt2_tied_and_conv1d),
        cmocka_unit_test(test_llama_gqa_swiglu),
        cmocka_unit_test(test_rope_dims),   cmocka_unit_test(test_dropout_ops),   cmocka_unit_test(test_spans_and_batch_linearity),
        cmocka_unit_test(test_megatron_naming),    cmocka_unit_test(test_deepspeed_pipe_params),
        cmocka_unit_test(test_bad_options),        cmocka_unit_test(test_layer_index),
        cmocka_unit_test(test_norm_layouts),       cmocka_unit_test(test_hf_new_archs),
        cmocka_unit_test(test_hf_gpt_oss_packed_experts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
