/* test_template_oracle.c — the ModuleGraph (the profile's source) as the
 * oracle of the layer template (part_template): at TP 1, for dense, GQA,
 * MoE, MLA and encoder models, the template's parameters and its forward
 * GEMM and attention-core FLOPs over the whole model equal the graph's
 * exactly (relative 1e-12: both add the same integers in doubles). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "trainsim/graph.h"
#include "trainsim/partition.h"

static void near(double got, double want, double tol, const char *what)
{
    double e = fabs(got - want) / (fabs(want) > 0 ? fabs(want) : 1);
    if (e > tol) {
        print_error("%s: got %.17g want %.17g (rel err %.3g > %.3g)\n", what, got, want, e, tol);
        fail();
    }
}

typedef struct Sums {
    double params, gemm, core;
} Sums;

/* The template's sums over the model: layers x (attention + MLP or MoE
 * block), embedding and head; SAC-only GEMMs are not forward work. */
static void template_sums(const ModelSpec *m, const ParallelPlan *p, Sums *s)
{
    static PartTemplate t;
    part_template(m, p, NULL, &t);
    double nm = (double)model_moe_layer_count(m), nd = (double)m->layers - nm;
    double n[PART_BLOCK_COUNT] = {(double)m->layers, nd, nm, 1, 1};
    memset(s, 0, sizeof *s);
    for (int b = 0; b < PART_BLOCK_COUNT; b++) {
        const PartBlockT *bl = &t.b[b];
        s->params += n[b] * bl->params;
        for (int i = 0; i < bl->n_k; i++) {
            const PartKernel *k = &bl->k[i];
            if (k->flags & PART_KF_SAC_ONLY) continue;
            if (k->kind == PART_K_GEMM && strcmp(k->name, "router")) s->gemm += n[b] * k->flops[0];
            if (k->kind == PART_K_ATTN) s->core += n[b] * k->flops[0] * (double)k->count;
        }
    }
}

static void graph_sums(const ModelSpec *m, int64_t B, int64_t S, Sums *s)
{
    GraphOptions o;
    graph_options_init(&o);
    o.naming = GRAPH_NAMING_MEGATRON, o.naming_set = true;
    o.batch = B, o.seq = S, o.causal = true, o.flash = true, o.tp = 1;
    ModuleGraph *g;
    TsError err = {0};
    assert_int_equal(graph_build(m, &o, &g, &err), TS_OK);
    GraphTotals tot;
    graph_model_totals(g, &tot);
    memset(s, 0, sizeof *s);
    s->params = (double)tot.params;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        if (op->kind == GRAPH_OP_GEMM) s->gemm += op->fwd_flops;
        if (op->kind == GRAPH_OP_ATTENTION_CORE) s->core += op->fwd_flops;
    }
    graph_destroy(g);
}

static void check_spec(const char *preset, ModelSpec m)
{
    /* the graph is the model the checkpoint's forward runs: DeepSeek-V3's
     * multi-token-prediction module trains beside it (test_mtp) */
    m.mtp_layers = 0;
    ParallelPlan p;
    plan_init(&p);
    p.gpus = 1, p.micro_batch = 2, p.global_batch = 2, p.seq = 512;
    TsError err = {0};
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    Sums t, g;
    template_sums(&m, &p, &t);
    graph_sums(&m, p.micro_batch, p.seq, &g);
    char what[96];
    snprintf(what, sizeof what, "%s parameters", preset);
    near(t.params, g.params, 1e-12, what);
    snprintf(what, sizeof what, "%s forward GEMM FLOPs", preset);
    near(t.gemm, g.gemm, 1e-12, what);
    snprintf(what, sizeof what, "%s attention-core FLOPs", preset);
    near(t.core, g.core, 1e-12, what);
}

static void check(const char *preset, int64_t layers)
{
    ModelSpec m;
    assert_int_equal(model_preset(preset, &m, NULL), TS_OK);
    if (layers > 0) m.layers = layers;
    check_spec(preset, m);
}

static void test_dense(void **state)
{
    (void)state;
    check("gpt3-175b", 4);
    check("llama3-8b", 4);
    check("gpt2-medium", 0);
}

static void test_moe(void **state)
{
    (void)state;
    check("mixtral-8x7b", 4);
    check("qwen3-30b-a3b", 4);
}

/* Gemma's sandwich norms and GeGLU, OLMo 2's reordered norms with q/k norms
 * over all heads, Qwen3-style per-head q/k norms on a sandwich. */
static void test_norm_layouts(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("llama3-8b", &m, NULL), TS_OK);
    m.layers = 4;
    ModelSpec s = m, r = m, q = m;
    s.norm_layout = MODEL_NORM_LAYOUT_SANDWICH;
    s.act = MODEL_ACT_GEGLU;
    check_spec("llama3-8b sandwich geglu", s);
    r.norm_layout = MODEL_NORM_LAYOUT_REORDERED;
    r.qk_norm = r.qk_norm_full = true;
    check_spec("llama3-8b reordered, full q/k norms", r);
    q.norm_layout = MODEL_NORM_LAYOUT_SANDWICH;
    q.qk_norm = true;
    check_spec("llama3-8b sandwich, per-head q/k norms", q);
}

static void test_mla(void **state)
{
    (void)state;
    check("deepseek-v3", 5);
}

/* One MTP module adds, at TP 1 on one stage: its layer (the chunk's last,
 * an MoE layer for DeepSeek-V3), its 2H x H projection and three norms,
 * and no second embedding (one stage holds the shared one); its GEMMs: the
 * projection and the output head again. */
static void test_mtp(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("deepseek-v3", &m, NULL), TS_OK);
    m.layers = 5;
    ParallelPlan p;
    plan_init(&p);
    p.gpus = 1, p.micro_batch = 2, p.global_batch = 2, p.seq = 512;
    TsError err = {0};
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    static PartTemplate with, without;
    part_template(&m, &p, NULL, &with);
    assert_int_equal(plan_model_chunk_layers(&p, &m, 0), 6);
    ModelSpec m0 = m;
    m0.mtp_layers = 0;
    part_template(&m0, &p, NULL, &without);
    double H = (double)m.hidden, T = 2.0 * 512.0, V = (double)model_padded_vocab(&m, 1);
    near(with.b[PART_BLOCK_HEAD].params - without.b[PART_BLOCK_HEAD].params, 2 * H * H + 3 * H, 1e-12, /* RMSNorm: H weights */
         "MTP head parameters");
    double gw = 0, g0 = 0;
    for (int i = 0; i < with.b[PART_BLOCK_HEAD].n_k; i++)
        if (with.b[PART_BLOCK_HEAD].k[i].kind == PART_K_GEMM) gw += with.b[PART_BLOCK_HEAD].k[i].flops[0];
    for (int i = 0; i < without.b[PART_BLOCK_HEAD].n_k; i++)
        if (without.b[PART_BLOCK_HEAD].k[i].kind == PART_K_GEMM) g0 += without.b[PART_BLOCK_HEAD].k[i].flops[0];
    near(gw - g0, 2 * T * H * 2 * H + 2 * T * V * H, 1e-12, "MTP head GEMM FLOPs");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_mla),
        cmocka_unit_test(test_mtp),
        cmocka_unit_test(test_norm_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
