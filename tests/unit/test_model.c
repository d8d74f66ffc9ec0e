/* Unit tests for the model subsystem: parameter counts of every preset
 * against reference/models_and_hardware.md A.3, HF config parsing, the
 * module-tree and parameter-table parsers, JSON round trip, error positions.
 * Counts are exact where the reference gives an exact figure; otherwise
 * they must round to the reference's printed figure (tolerance: half a unit
 * of its last digit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/model.h"

static ModelCounts counts_of(const char *preset)
{
    ModelSpec m;
    TsError e = {0};
    TsStatus st = model_preset(preset, &m, &e);
    if (st != TS_OK) fail_msg("preset %s: %s", preset, e.msg);
    ModelCounts c;
    model_count_params(&m, &c);
    return c;
}

/* |got/unit - want| <= half a unit of the last printed digit (`decimals`). */
static void near(const char *what, int64_t got, double want, double unit, int decimals)
{
    double tol = 0.5 * pow(10.0, -decimals);
    double v = (double)got / unit;
    if (fabs(v - want) > tol + 1e-12)
        fail_msg("%s: got %.6f, reference %.*f (tolerance %g)", what, v, decimals, want, tol);
}

static void test_counts_reference_a3(void **state)
{
    (void)state;
    const double M = 1e6, B = 1e9;
    /* Exact figures. */
    assert_int_equal(counts_of("gpt2").total, 124439808);
    assert_int_equal(counts_of("bert-base-uncased").total, 109482240); /* with pooler: DeepSpeed profiler example 109.48 M */
    assert_int_equal(counts_of("llama2-7b").total, 6738415616);
    assert_int_equal(counts_of("gpt-neox-20b").total, 20554567680); /* HF card: 20,554,567,680 */
    /* Rounded figures of A.3 "our count". */
    near("gpt2-medium", counts_of("gpt2-medium").total, 354.8, M, 1);
    near("gpt2-large", counts_of("gpt2-large").total, 774.0, M, 1);
    near("gpt2-xl", counts_of("gpt2-xl").total, 1557.6, M, 1);
    /* A.3 prints bert-large 334.1M without pooler (+1.0M pooler); our preset has the pooler. */
    near("bert-large no pooler", counts_of("bert-large-uncased").total - (1024 * 1024 + 1024), 334.1, M, 1);
    near("llama2-13b", counts_of("llama2-13b").total, 13.016, B, 3);
    near("llama2-70b", counts_of("llama2-70b").total, 68.977, B, 3);
    near("llama3-8b", counts_of("llama3-8b").total, 8.030, B, 3);
    near("llama3-70b", counts_of("llama3-70b").total, 70.554, B, 3);
    near("llama3-405b", counts_of("llama3-405b").total, 405.85, B, 2);
    near("mistral-7b", counts_of("mistral-7b").total, 7.242, B, 3);
    near("qwen2-7b", counts_of("qwen2-7b").total, 7.616, B, 3);
    near("gpt3-175b", counts_of("gpt3-175b").total, 174.6, B, 1);
    ModelCounts n = counts_of("nemotron4-340b");
    near("nemotron4 embedding", n.embedding + n.lm_head, 9.44, B, 2);
    near("nemotron4 non-embedding", n.non_embedding, 331.59, B, 2);
    near("nemotron4 total", n.total, 341.0, B, 1);
    ModelCounts x = counts_of("mixtral-8x7b");
    near("mixtral total", x.total, 46.70, B, 2);
    near("mixtral active", x.active, 12.88, B, 2);
    ModelCounts q = counts_of("qwen3-30b-a3b");
    near("qwen3 total", q.total, 30.53, B, 2);
    near("qwen3 active", q.active, 3.35, B, 2);
    near("qwen3 non-embedding", q.non_embedding, 29.91, B, 2);
    ModelCounts d = counts_of("deepseek-v3");
    near("deepseek-v3 total", d.total, 671.03, B, 2);
    near("deepseek-v3 active", d.active, 37.55, B, 2);
}

static void test_counts_other_presets(void **state)
{
    (void)state;
    const double B = 1e9;
    /* BLOOM: 176,247,271,424 (HF card) needs the embedding LayerNorm. */
    assert_int_equal(counts_of("bloom-176b").total, 176247271424);
    /* AICB llama_405B: reference/simai_aicb.md gives per-(stage, TP rank) terms for TP 8;
     * per layer 352,354,304 x 8 = 12H^2*... whole layer = 8 x the TP-8 slice of the
     * linears + 2 LayerNorms of 2H. */
    ModelSpec a;
    TsError e = {0};
    assert_int_equal(model_preset("aicb-llama-405b", &a, &e), TS_OK);
    ModelCounts c;
    model_count_params(&a, &c);
    assert_int_equal(c.per_layer_dense, 8LL * (100663296 + 33554432 + 2LL * 109051904) + 2 * 2 * 16384);
    assert_int_equal(model_padded_vocab(&a, 8), 51200);
    /* Narayanan et al. 2021 Table 1 names: within 1% of the name (their P formula). */
    static const struct { const char *name; double b; } N21[] = {
        {"gpt-1.7b", 1.7}, {"gpt-3.6b", 3.6}, {"gpt-7.5b", 7.5}, {"gpt-18.4b", 18.4}, {"gpt-39.1b", 39.1},
        {"gpt-76.1b", 76.1}, {"gpt-145.6b", 145.6}, {"gpt-310.1b", 310.1}, {"gpt-529.6b", 529.6}, {"gpt-1t", 1008.0},
    };
    for (size_t i = 0; i < sizeof N21 / sizeof N21[0]; i++) {
        double got = (double)counts_of(N21[i].name).total / B;
        if (fabs(got / N21[i].b - 1.0) > 0.03) fail_msg("%s: %.2f B vs %.1f B", N21[i].name, got, N21[i].b);
    }
}

/* Every preset loads, validates, cites a source, and names itself after its file. */
static void test_all_presets_valid(void **state)
{
    (void)state;
    static char names[512][64];
    int n = model_preset_names(names, 512);
    assert_true(n >= 37);
    for (int i = 0; i < n; i++) {
        ModelSpec m;
        TsError e = {0};
        if (model_preset(names[i], &m, &e) != TS_OK) fail_msg("%s: %s", names[i], e.msg);
        assert_string_equal(m.name, names[i]);
        assert_true(strlen(m.source) > 20);
        if (i > 0) assert_true(strcmp(names[i - 1], names[i]) < 0);
    }
}

/* model_to_json writes a preset that reads back to the same spec. */
static void test_json_round_trip(void **state)
{
    (void)state;
    static const char *some[] = {"deepseek-v3", "bert-base-uncased", "qwen3-30b-a3b", "nemotron4-340b", "bloom-176b"};
    for (size_t i = 0; i < sizeof some / sizeof some[0]; i++) {
        ModelSpec a, b;
        TsError e = {0};
        assert_int_equal(model_preset(some[i], &a, &e), TS_OK);
        TsBuf buf = {0};
        model_to_json(&a, &buf);
        char path[] = "/tmp/ts_model_rt_XXXXXX.json";
        int fd = mkstemps(path, 5);
        assert_true(fd >= 0);
        FILE *fp = fdopen(fd, "w");
        fputs(buf.data, fp);
        fclose(fp);
        assert_int_equal(model_parse_preset_json(path, &b, NULL, &e), TS_OK);
        model_finalize(&b);
        remove(path);
        TsBuf buf2 = {0};
        model_to_json(&b, &buf2);
        assert_string_equal(buf.data, buf2.data);
        ts_buf_free(&buf);
        ts_buf_free(&buf2);
    }
}

static void load_file(const char *rel, ModelSpec *m)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TS_TEST_DIR, rel);
    TsError e = {0};
    ModelOverrides ov;
    model_overrides_init(&ov);
    if (model_load(path, &ov, m, &e) != TS_OK) fail_msg("%s: %s", rel, e.msg);
}

/* Parses `text` as a config.json file. */
static TsStatus hf_text(const char *text, ModelSpec *m, TsError *e)
{
    char path[] = "/tmp/ts_model_hf_XXXXXX.json";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs(text, fp);
    fclose(fp);
    TsStatus st = model_parse_hf_config(path, m, NULL, e);
    remove(path);
    return st;
}

/* Each real HF config counts the same as the matching preset. */
static void test_hf_configs(void **state)
{
    (void)state;
    static const struct { const char *dir, *preset; int64_t total; } CASES[] = {
        {"model_hf_llama2_7b", "llama2-7b", 6738415616},
        {"model_hf_llama31_405b", "llama3-405b", 0},
        {"model_hf_mistral_7b", "mistral-7b", 0},
        {"model_hf_mixtral_8x7b", "mixtral-8x7b", 0},
        {"model_hf_qwen2_7b", "qwen2-7b", 0},
        {"model_hf_qwen3_30b_a3b", "qwen3-30b-a3b", 0},
        {"model_hf_qwen3_moe_tf5", "qwen3-30b-a3b", 0},
        {"model_hf_gpt2", "gpt2", 124439808},
        {"model_hf_gpt_neox_20b", "gpt-neox-20b", 20554567680},
        {"model_hf_deepseek_v3", "deepseek-v3", 671026404352},
        {"model_hf_text_config", "mistral-7b", 7241732096},
        {"model_hf_gemma2_9b", "gemma-2-9b", 9241705984},
        {"model_hf_gemma3_12b", "gemma-3-12b", 11766034176},
        {"model_hf_phi3_mini", "phi-3-mini-4k", 3821079552},
        {"model_hf_olmo2_7b", "olmo-2-7b", 7298617344},
        {"model_hf_mistral_nemo", "mistral-nemo-12b", 12247782400},
        {"model_hf_qwen3_8b", "qwen3-8b", 8190735360},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "golden/%s/config.json", CASES[i].dir);
        ModelSpec m;
        load_file(rel, &m);
        ModelCounts got, want = counts_of(CASES[i].preset);
        model_count_params(&m, &got);
        if (got.total != want.total || got.active != want.active)
            fail_msg("%s: %lld/%lld params, preset %s has %lld/%lld", CASES[i].dir, (long long)got.total,
                     (long long)got.active, CASES[i].preset, (long long)want.total, (long long)want.active);
        if (CASES[i].total) assert_int_equal(got.total, CASES[i].total);
    }
    /* bert-base-uncased's config.json was saved from BertForMaskedLM
     * ("architectures"): the preset's BertModel less the pooler, plus the
     * masked-LM head, 109514298 as transformers counts that class */
    ModelSpec m;
    load_file("golden/model_hf_bert_base/config.json", &m);
    assert_true(m.lm_head && !m.pooler);
    ModelCounts bc, pc;
    model_count_params(&m, &bc);
    assert_int_equal(bc.total, 109514298);
    assert_int_equal(model_preset("bert-base-uncased", &m, NULL), TS_OK);
    m.lm_head = true, m.pooler = false;
    model_count_params(&m, &pc);
    assert_int_equal(pc.total, bc.total);
    load_file("golden/model_hf_qwen2_7b/config.json", &m);
    assert_true(m.qkv_bias && !m.proj_bias);
    assert_int_equal(m.arch, MODEL_ARCH_QWEN);
    load_file("golden/model_hf_qwen3_moe_tf5/config.json", &m);
    assert_true(m.qk_norm);
    assert_int_equal(m.experts, 128);
    assert_true(m.rope_theta == 1e7);
    assert_int_equal(m.max_positions, 262144);
    load_file("golden/model_hf_deepseek_v3/config.json", &m);
    assert_int_equal(m.dense_layers, 3);
    assert_int_equal(m.q_lora_rank, 1536);
    assert_int_equal(m.head_dim, 192);
    assert_int_equal(m.mtp_layers, 1);
    load_file("golden/model_hf_gpt2/config.json", &m);
    assert_int_equal(m.ffn, 3072);
    assert_true(m.tied_embeddings);
    assert_string_equal(m.name, "model_hf_gpt2"); /* "<dir>/config.json" is named after <dir> */
    load_file("golden/model_hf_llama2_7b/config.json", &m);
    assert_string_equal(m.name, "Llama-2-7b-hf");
    /* Qwen3-8B: the card says 8.2 B total, 6.95 B non-embedding. */
    load_file("golden/model_hf_qwen3_8b/config.json", &m);
    ModelCounts q8;
    model_count_params(&m, &q8);
    assert_int_equal(q8.total, 8190735360);
    near("qwen3-8b non-embedding", q8.non_embedding, 6.95, 1e9, 2);
    assert_true(m.qk_norm && m.head_dim == 128);
    load_file("golden/model_hf_gpt_neox_20b/config.json", &m);
    assert_true(m.rotary_pct == 0.25);
    /* issue 20 item 8: the newer families against their published sizes */
    static const struct {
        const char *file;
        int64_t total;
    } NEW[] = {
        {"golden/model_hf_gemma2_9b/config.json", 9241705984},     /* gemma-2-9b: 9.24 B */
        {"golden/model_hf_gemma3_12b/config.json", 11766034176},   /* the text decoder of gemma-3-12b (12.2 B) */
        {"golden/model_hf_gemma3_1b/config.json", 999885952},      /* gemma-3-1b */
        {"golden/model_hf_granite_8b/config.json", 8170848256},    /* granite-3.1-8b: 8.17 B */
        {"golden/model_hf_mistral_nemo/config.json", 12247782400}, /* Mistral-NeMo: 12.2 B */
        {"golden/model_hf_olmo2_7b/config.json", 7298617344},      /* OLMo-2-1124-7B: 7.30 B */
        {"golden/model_hf_phi3_mini/config.json", 3821079552},     /* Phi-3-mini: 3.82 B */
    };
    for (size_t i = 0; i < sizeof NEW / sizeof NEW[0]; i++) {
        ModelCounts c;
        load_file(NEW[i].file, &m);
        model_count_params(&m, &c);
        assert_int_equal(c.total, NEW[i].total);
    }
    assert_int_equal(m.act, MODEL_ACT_SWIGLU); /* phi3's hidden_act silu */
    assert_int_equal(counts_of("granite-3.1-8b").total, 8170848256); /* the preset counts as its config */
    /* Gemma 3 in transformers 5: rope_parameters per layer type; the global layers' base */
    TsError e = {0};
    assert_int_equal(hf_text("{\"model_type\": \"gemma3_text\", \"rope_parameters\": {\"full_attention\":\n"
                             " {\"rope_theta\": 1000000.0}, \"sliding_attention\": {\"rope_theta\": 10000.0}}}",
                             &m, &e),
                     TS_OK);
    assert_true(m.rope_theta == 1e6);
    assert_true(m.act == MODEL_ACT_GEGLU && m.norm_layout == MODEL_NORM_LAYOUT_SANDWICH && m.qk_norm);
    assert_int_equal(m.hidden, 2304); /* Gemma3TextConfig's defaults */
    assert_int_equal(m.vocab, 262208);
}

static void test_hf_errors(void **state)
{
    (void)state;
    ModelSpec m;
    TsError e = {0};
    /* string where an integer is expected: positioned at the value */
    assert_int_equal(hf_text("{\"model_type\": \"llama\",\n  \"hidden_size\": \"4096\"}", &m, &e), TS_ERR_INPUT);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 18);
    assert_string_equal(e.msg, "'hidden_size' must be an integer, got a string");
    /* nested under text_config: the path names it */
    memset(&e, 0, sizeof e);
    assert_int_equal(hf_text("{\"text_config\": {\"model_type\": \"llama\", \"hidden_size\": 64,\n"
                             " \"num_hidden_layers\": 2, \"num_attention_heads\": 0}}",
                             &m, &e),
                     TS_ERR_INPUT);
    assert_string_equal(e.msg, "'text_config.num_attention_heads' is out of range (allowed 1..100000)");
    assert_int_equal(e.line, 2);
    /* GQA that does not divide */
    memset(&e, 0, sizeof e);
    assert_int_equal(hf_text("{\"model_type\": \"mistral\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
                             " \"num_attention_heads\": 8, \"num_key_value_heads\": 3}",
                             &m, &e),
                     TS_ERR_INPUT);
    assert_int_equal(e.line, 2);
    assert_non_null(strstr(e.msg, "must divide"));
    /* unsupported type lists the supported ones */
    memset(&e, 0, sizeof e);
    assert_int_equal(hf_text("{\"model_type\": \"falcon\"}", &m, &e), TS_ERR_INPUT);
    assert_non_null(strstr(e.hint, "qwen3_moe"));
    assert_non_null(strstr(e.hint, "granite; other models"));
}

static void test_module_tree(void **state)
{
    (void)state;
    ModelSpec m;
    char path[1024];
    snprintf(path, sizeof path, "%s/data/megatron_gpt_module_tree.txt", TS_TEST_DIR);
    TsError e = {0};
    ModelOverrides ov;
    model_overrides_init(&ov);
    /* without dims: the error names the flags */
    assert_int_equal(model_load(path, &ov, &m, &e), TS_ERR_INPUT);
    assert_non_null(strstr(e.msg, "--hidden N --heads N --vocab N"));
    ov.hidden = 768;
    ov.heads = 12;
    ov.vocab = 50257;
    ov.max_positions = 1024;
    memset(&e, 0, sizeof e);
    assert_int_equal(model_load(path, &ov, &m, &e), TS_OK);
    assert_int_equal(m.layers, 12);
    assert_int_equal(m.norm, MODEL_NORM_LAYERNORM);
    assert_int_equal(m.pos, MODEL_POS_LEARNED);
    assert_false(m.qk_norm);
    assert_int_equal(m.experts, 0);
    ModelCounts c;
    model_count_params(&m, &c);
    assert_int_equal(c.total, 124439808); /* = GPT-2 small */
}

static TsStatus tree_text(const char *text, ModelSpec *m, TsError *e)
{
    ModelKnown k;
    return model_parse_module_tree("t.txt", text, m, &k, e);
}

static void test_module_tree_moe_and_errors(void **state)
{
    (void)state;
    ModelSpec m;
    TsError e = {0};
    const char *moe = "Module: GPTModel\n"
                      "  Submodule: decoder (TransformerBlock)\n"
                      "    Module: TransformerBlock\n"
                      "      Submodule: layers (ModuleList)\n"
                      "        Module: ModuleList\n"
                      "          Submodule: 0 (TransformerLayer)\n"
                      "            Module: TransformerLayer\n"
                      "              Submodule: input_layernorm (RMSNorm)\n"
                      "                Module: RMSNorm\n"
                      "              Submodule: mlp (MoELayer)\n"
                      "                Module: MoELayer\n"
                      "                  Submodule: experts (SequentialMLP)\n"
                      "                    Module: SequentialMLP\n"
                      "                      Submodule: local_experts (ModuleList)\n"
                      "                        Module: ModuleList\n"
                      "                          Submodule: 0 (MLP)\n"
                      "                            Module: MLP\n"
                      "                          Submodule: 1 (MLP)\n"
                      "                            Module: MLP\n"
                      "                          Submodule: 2 (MLP)\n"
                      "                            Module: MLP\n"
                      "                  Submodule: shared_experts (SharedExpertMLP)\n"
                      "                    Module: SharedExpertMLP\n";
    assert_int_equal(tree_text(moe, &m, &e), TS_OK);
    assert_int_equal(m.experts, 3);
    assert_int_equal(m.shared_experts, 1);
    assert_int_equal(m.norm, MODEL_NORM_RMSNORM);
    assert_int_equal(m.pos, MODEL_POS_ROPE);
    /* odd indentation: caret at the first non-space */
    assert_int_equal(tree_text("Module: GPTModel\n   Submodule: decoder (TransformerBlock)\n", &m, &e), TS_ERR_INPUT);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 4);
    /* truncated after a Submodule line */
    assert_int_equal(tree_text("Module: GPTModel\n  Submodule: decoder (TransformerBlock)\n", &m, &e), TS_ERR_INPUT);
    assert_string_equal(e.msg, "'Submodule:' line without its 'Module:' line");
    /* class mismatch */
    assert_int_equal(tree_text("Module: GPTModel\n  Submodule: decoder (TransformerBlock)\n    Module: Foo\n", &m, &e),
                     TS_ERR_INPUT);
    assert_int_equal(e.line, 3);
    assert_int_equal(e.col, 13);
}

static void test_param_table(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/data/deepspeed_pipe_param_partition.csv", TS_TEST_DIR);
    char *text;
    size_t len;
    TsError e = {0};
    assert_int_equal(ts_read_file(path, 1 << 20, &text, &len, &e), TS_OK);
    ModelSpec m;
    ModelKnown k;
    int64_t tp = 0;
    assert_int_equal(model_parse_param_table("seed.csv", text, &m, &k, &tp, &e), TS_OK);
    free(text);
    assert_int_equal(tp, 4);
    assert_int_equal(m.hidden, 1024);
    assert_int_equal(m.ffn, 4096);
    assert_int_equal(m.vocab, 50257);
    assert_int_equal(model_padded_vocab(&m, 4), 50688);
    assert_int_equal(m.layers, 4);
    assert_int_equal(m.max_positions, 1024);
    assert_true(m.qkv_bias && m.proj_bias && m.mlp_bias && m.tied_embeddings);
    assert_int_equal(m.norm, MODEL_NORM_LAYERNORM);
    assert_true(k.layers && k.hidden && k.vocab && !k.heads);
    assert_non_null(strstr(m.source, "layers 2-5 present (4)"));

    /* 4-column variant with .weight/.bias names and a wrong element count */
    const char *t4 = "name;module;shape;parameters\n"
                     "embed.word_embeddings.weight;VocabParallelEmbedding();(25344, 2048);51904512\n"
                     "layers.0.attention.query_key_value.weight;ColumnParallelLinear();(3072, 2048);6291456\n"
                     "layers.0.attention.dense.weight;RowParallelLinear();(2048, 1024);2097152\n"
                     "layers.0.mlp.dense_h_to_4h.weight;ColumnParallelLinear();(4096, 2048);8388608\n"
                     "layers.0.mlp.dense_4h_to_h.weight;RowParallelLinear();(2048, 4096);8388608\n"
                     "layers.0.input_layernorm.weight;RMSNorm();(2048,);2048\n";
    assert_int_equal(model_parse_param_table("t4.csv", t4, &m, &k, &tp, &e), TS_OK);
    assert_int_equal(tp, 2);
    assert_int_equal(m.ffn, 8192);
    assert_int_equal(m.vocab, 50688); /* 50257 pads to 50432 under 256: keep the padded rows */
    assert_int_equal(m.norm, MODEL_NORM_RMSNORM);
    assert_false(m.qkv_bias);
    assert_int_equal(model_parse_param_table("t.csv", "name;module;shape;parameters\na;B();(2, 3);7\n", &m, &k, &tp, &e),
                     TS_ERR_INPUT);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 14);
    assert_int_equal(model_parse_param_table("t.csv", "a;B();(2, x);0;[]\n", &m, &k, &tp, &e), TS_ERR_INPUT);
    assert_int_equal(e.col, 11);
    assert_string_equal(e.msg, "shape dimension 'x' is not a positive integer");
}

/* Every prefix (in steps) and single-byte corruption of the seeds either
 * parses or fails with TS_ERR_INPUT and a position; never crashes (ASan). */
static void robust(const char *rel, bool tree)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TS_TEST_DIR, rel);
    char *text;
    size_t len;
    TsError e = {0};
    assert_int_equal(ts_read_file(path, 1 << 20, &text, &len, &e), TS_OK);
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    static const char junk[] = {' ', '(', ')', ';', ',', 'x', '\t', '\n', '0', '\r'};
    for (size_t cut = 0; cut <= len; cut += (cut < 400 ? 1 : 29)) {
        for (int j = -1; j < (int)sizeof junk; j++) {
            memcpy(buf, text, cut);
            buf[cut] = '\0';
            if (j >= 0 && cut > 0) buf[((size_t)j + 1) * 7919 % cut] = junk[j];
            ModelSpec m;
            ModelKnown k;
            int64_t tp;
            memset(&e, 0, sizeof e);
            TsStatus st = tree ? model_parse_module_tree("f", buf, &m, &k, &e)
                               : model_parse_param_table("f", buf, &m, &k, &tp, &e);
            if (st != TS_OK && (st != TS_ERR_INPUT || e.line <= 0))
                fail_msg("%s cut %zu junk %d: status %d line %d: %s", rel, cut, j, st, e.line, e.msg);
        }
    }
    free(buf);
    free(text);
}

static void test_parsers_robust(void **state)
{
    (void)state;
    robust("data/megatron_gpt_module_tree.txt", true);
    robust("data/deepspeed_pipe_param_partition.csv", false);
}

static void test_preset_hint(void **state)
{
    (void)state;
    ModelSpec m;
    TsError e = {0};
    assert_int_equal(model_preset("lama3-70b", &m, &e), TS_ERR_INPUT);
    assert_non_null(strstr(e.hint, "did you mean llama3-70b"));
    char sim[5][64];
    assert_true(model_preset_similar("qwen", sim, 5) >= 2);
}

/* GeGLU (Gemma's tanh-GeLU gate) is a gated MLP like SwiGLU: the same three
 * F-wide matrices, the same default width. */
static void test_gated_acts(void **state)
{
    (void)state;
    assert_true(model_act_gated(MODEL_ACT_SWIGLU) && model_act_gated(MODEL_ACT_GEGLU));
    assert_false(model_act_gated(MODEL_ACT_GELU) || model_act_gated(MODEL_ACT_RELU2));
    ModelSpec s, g;
    assert_int_equal(model_preset("llama3-8b", &s, NULL), TS_OK);
    g = s;
    g.act = MODEL_ACT_GEGLU;
    ModelCounts cs, cg;
    model_count_params(&s, &cs);
    model_count_params(&g, &cg);
    assert_int_equal(cs.total, cg.total);
    g.ffn = 0;
    model_finalize(&g);
    assert_int_equal(g.ffn, 11008); /* 8H/3 rounded up to 256 */
    ModelAct a;
    assert_true(model_act_parse("geglu", &a) && a == MODEL_ACT_GEGLU);
}

static TsStatus preset_text(const char *text, ModelSpec *m, TsError *e)
{
    char path[] = "/tmp/ts_model_preset_XXXXXX.json";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs(text, fp);
    fclose(fp);
    TsStatus st = model_parse_preset_json(path, m, NULL, e);
    remove(path);
    if (st == TS_OK) {
        model_finalize(m);
        st = model_validate(m, e);
    }
    return st;
}

/* norm_layout and qk_norm_full in preset files: read, defaulted per family
 * (BERT is post-LN), checked against the family, carried across --arch. */
static void test_norm_layout_fields(void **state)
{
    (void)state;
    ModelSpec m;
    TsError e = {0};
    const char *head = "{\"format\": \"trainsim-model\", \"version\": 1, \"source\": \"a test preset\", "
                       "\"layers\": 2, \"hidden\": 64, \"heads\": 4, \"vocab\": 1000, ";
    char text[512];
    snprintf(text, sizeof text, "%s\"arch\": \"llama\", \"norm_layout\": \"reordered\", \"qk_norm\": true, "
                                "\"qk_norm_full\": true}", head);
    assert_int_equal(preset_text(text, &m, &e), TS_OK);
    assert_int_equal(m.norm_layout, MODEL_NORM_LAYOUT_REORDERED);
    assert_true(m.qk_norm_full);
    snprintf(text, sizeof text, "%s\"arch\": \"llama\", \"qk_norm_full\": true}", head);
    assert_int_equal(preset_text(text, &m, &e), TS_ERR_INPUT);
    assert_non_null(strstr(e.msg, "qk_norm_full without qk_norm"));
    snprintf(text, sizeof text, "%s\"arch\": \"gpt\", \"norm_layout\": \"post\"}", head);
    assert_int_equal(preset_text(text, &m, &e), TS_ERR_INPUT);
    assert_non_null(strstr(e.msg, "norm_layout 'post' with arch gpt"));
    snprintf(text, sizeof text, "%s\"arch\": \"bert\"}", head);
    assert_int_equal(preset_text(text, &m, &e), TS_OK);
    assert_int_equal(m.norm_layout, MODEL_NORM_LAYOUT_POST);
    /* --arch gpt on BERT: the layout follows the family */
    ModelOverrides ov;
    model_overrides_init(&ov);
    ov.arch_set = true;
    ov.arch = MODEL_ARCH_GPT;
    assert_int_equal(model_load("bert-base-uncased", &ov, &m, &e), TS_OK);
    assert_int_equal(m.norm_layout, MODEL_NORM_LAYOUT_PRE);
    ModelNormLayout l;
    assert_true(model_norm_layout_parse("sandwich", &l) && l == MODEL_NORM_LAYOUT_SANDWICH);
    assert_false(model_norm_layout_parse("peri", &l));
}

/* The new MoE presets against their published totals / active counts
 * (B, one decimal; gpt-oss active as OpenAI counts it: without the input
 * embedding V*H), and the sliding window's keys per query. */
static void test_moe_presets_and_window(void **state)
{
    (void)state;
    const double B = 1e9;
    static const struct { const char *name; double total, active; bool no_embed; } T[] = {
        {"qwen3-235b-a22b", 235.1, 22.2, false}, {"gpt-oss-120b", 116.8, 5.1, true},
        {"gpt-oss-20b", 20.9, 3.6, true},        {"mixtral-8x22b", 140.6, 39.2, false},
        {"deepseek-v2", 235.7, 21.4, false},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        ModelSpec m;
        assert_int_equal(model_preset(T[i].name, &m, NULL), TS_OK);
        ModelCounts c = counts_of(T[i].name);
        near(T[i].name, c.total, T[i].total, B, 1);
        near(T[i].name, c.active - (T[i].no_embed ? c.embedding : 0), T[i].active, B, 1);
    }
    ModelSpec m;
    assert_int_equal(model_preset("gpt-oss-20b", &m, NULL), TS_OK);
    static const struct { int64_t layer, S; bool causal; double keys; } K[] = {
        {0, 4096, true, 128 - 128.0 * 128 / 8192}, {1, 4096, true, 2048}, {0, 4096, false, 128},
        {0, 64, true, 32}, {23, 4096, true, 2048}, {22, 4096, false, 128},
    };
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++)
        assert_true(fabs(model_attn_keys(&m, K[i].layer, K[i].S, K[i].causal) - K[i].keys) < 1e-9);
    assert_int_equal(model_windowed_layer_count(&m), 12);
    assert_true(fabs(model_attn_keys_mean(&m, 4096, true) - (K[0].keys + 2048) / 2) < 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_reference_a3),
        cmocka_unit_test(test_counts_other_presets),
        cmocka_unit_test(test_moe_presets_and_window),
        cmocka_unit_test(test_all_presets_valid),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_hf_configs),
        cmocka_unit_test(test_hf_errors),
        cmocka_unit_test(test_module_tree),
        cmocka_unit_test(test_module_tree_moe_and_errors),
        cmocka_unit_test(test_param_table),
        cmocka_unit_test(test_parsers_robust),
        cmocka_unit_test(test_preset_hint),
        cmocka_unit_test(test_gated_acts),
        cmocka_unit_test(test_norm_layout_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
