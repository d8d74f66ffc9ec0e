/* rep_emit (report_emit.h) on every valid plan of sweep spaces of four
 * models (dense, MoE, MLA + MoE with dense layers and MTP, learned
 * positions; DeepSeek-V3 also without its MTP module) for
 * every target, each plan run with the target's framework and precision:
 * the answer is a recipe or a plan error, never anything else; an error
 * names the target first and has a hint, and appends nothing; a recipe names
 * itself, closes its array, and places every layer exactly once (Megatron's
 * layout string, torchtitan's module lists). Every target must write some
 * plans and refuse others, or the test proves nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/report_emit.h"
#include "trainsim/search.h"
#include "../../src/search/search_int.h"

static int64_t count(const char *s, const char *needle)
{
    int64_t n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* Layers the recipe places: the t's of a --pipeline-model-parallel-layout,
 * the "layers.N" of torchtitan's module lists; -1 when it gives no list. */
static int64_t placed_layers(RepEmitTarget t, const char *r)
{
    if (t == REP_EMIT_TORCHTITAN) return strstr(r, "module_fqns_per_model_part") ? count(r, "\"layers.") : -1;
    const char *lay = strstr(r, t == REP_EMIT_NEMO ? "pipeline_model_parallel_layout=\"" : "-layout '");
    if (!lay) return -1;
    int64_t n = 0;
    for (const char *c = strchr(lay, t == REP_EMIT_NEMO ? '"' : '\'') + 1; *c && *c != '"' && *c != '\''; c++)
        n += *c == 't';
    return n;
}

/* The MTP modules ("m") of the recipe's layout string; -1 without one. */
static int64_t placed_mtp(RepEmitTarget t, const char *r)
{
    if (t == REP_EMIT_TORCHTITAN || t == REP_EMIT_DEEPSPEED) return -1;
    const char *lay = strstr(r, t == REP_EMIT_NEMO ? "pipeline_model_parallel_layout=\"" : "-layout '");
    if (!lay) return -1;
    int64_t n = 0;
    for (const char *c = strchr(lay, t == REP_EMIT_NEMO ? '"' : '\'') + 1; *c && *c != '"' && *c != '\''; c++)
        n += *c == 'm';
    return n;
}

/* mtp >= 0 replaces the model's MTP layers. */
static void check_model(const char *model, int64_t mtp, int64_t gpus, int64_t gb, int64_t seq, int64_t max_plans)
{
    TsError err = {0};
    ModelSpec m;
    assert_int_equal(model_load(model, NULL, &m, &err), TS_OK);
    if (mtp >= 0) m.mtp_layers = mtp;
    ClusterSpec cl;
    HwNet net;
    HwModel hw;
    hw_model_init(&hw);
    assert_int_equal(hw_cluster_load("dgx-h100", gpus, &cl, &err), TS_OK);
    hw_net_init(&net, &cl);
    hw.gpu = cl.gpu;
    SearchConfig c;
    search_config_init(&c);
    c.gpus.n = 1;
    c.gpus.v[0] = gpus;
    c.global_batch = gb;
    c.seq = seq;
    c.layers = m.layers;
    c.experts = m.experts;
    c.pp.max = 16;
    SearchSpace s;
    assert_int_equal(search_space_build(&c, &s, &err), TS_OK);
    for (int t = 0; t < REP_EMIT_COUNT; t++) {
        SearchEvalCtx x;
        search_eval_init(&x, &m, &hw, gb, seq);
        assert_true(search_eval_add_net(&x, gpus, &net));
        x.framework = rep_emit_framework((RepEmitTarget)t);
        x.precision = rep_emit_precision((RepEmitTarget)t);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "--emit %s: ", rep_emit_name((RepEmitTarget)t));
        int64_t written = 0, refused = 0;
        for (int64_t j = 0, k = 0; j < s.total && k < max_plans; j++) {
            SearchKnobs kn;
            search_space_decode(&s, j, &kn);
            SimSetup in;
            assert_true(search_sim_setup(&x, &kn, &in));
            TsError pe = {0};
            ParallelPlan p = in.plan;
            if (plan_resolve(&m, &p, &pe) != TS_OK) continue;
            k++;
            TsBuf out = {0};
            ts_buf_puts(&out, "before\n");
            size_t len0 = out.len;
            TsError e = {0};
            TsStatus st = rep_emit((RepEmitTarget)t, &in, "trainsim test", &out, &e);
            if (st == TS_ERR_PLAN) {
                refused++;
                assert_int_equal(out.len, len0);
                assert_int_equal(strncmp(e.msg, prefix, strlen(prefix)), 0);
                assert_true(e.hint[0] != '\0');
            } else {
                assert_int_equal(st, TS_OK);
                written++;
                const char *r = out.data + len0;
                assert_int_equal(strncmp(r, "# ", 2), 0);
                assert_non_null(strstr(r, "written by trainsim test --emit "));
                if (t != REP_EMIT_TORCHTITAN) assert_int_equal(strcmp(out.data + out.len - 2, ")\n"), 0);
                int64_t placed = placed_layers((RepEmitTarget)t, r);
                if (placed >= 0) assert_int_equal(placed, m.layers);
                int64_t mtps = placed_mtp((RepEmitTarget)t, r);
                if (mtps >= 0) assert_int_equal(mtps, m.mtp_layers);
                if (p.n_chunks > 1 && m.layers % p.n_chunks != 0 && t != REP_EMIT_DEEPSPEED)
                    assert_true(placed == m.layers); /* an uneven split is always spelt out */
            }
            ts_buf_free(&out);
        }
        print_message("%s --emit %s: %lld written, %lld refused\n", model, rep_emit_name((RepEmitTarget)t),
                      (long long)written, (long long)refused);
        assert_true(refused > 0);
        bool runs = !(t == REP_EMIT_TORCHTITAN && !strcmp(model, "gpt3-175b")) && /* no torchtitan flavor */
                    !(t == REP_EMIT_TORCHTITAN && m.mtp_layers > 0) &&            /* no MTP module */
                    !(t == REP_EMIT_DEEPSPEED && (m.experts > 0));                /* no MoE in its pipeline */
        if (runs) assert_true(written > 0);
    }
    search_space_free(&s);
}

static void test_emit_dense(void **state)
{
    (void)state;
    check_model("llama3-8b", -1, 64, 256, 4096, 3000);
}

static void test_emit_learned_positions(void **state)
{
    (void)state;
    check_model("gpt3-175b", -1, 64, 128, 2048, 1500);
}

static void test_emit_moe(void **state)
{
    (void)state;
    check_model("qwen3-30b-a3b", -1, 64, 256, 4096, 3000);
}

static void test_emit_mla(void **state)
{
    (void)state;
    check_model("deepseek-v3", -1, 256, 512, 4096, 3000);
}

static void test_emit_mla_no_mtp(void **state)
{
    (void)state;
    check_model("deepseek-v3", 0, 256, 512, 4096, 3000);
}

/* One DeepSeek-V3 plan with main's MoE, FP8, recompute-module, moment and
 * MTP knobs: megatron and nemo write each with its own name; torchtitan and
 * deepspeed refuse, naming a knob. */
static TsStatus emit_one(RepEmitTarget t, const SimSetup *in, TsBuf *out, TsError *e)
{
    out->len = 0;
    if (out->data) out->data[0] = '\0';
    *e = (TsError){0};
    TsStatus st = rep_emit(t, in, "trainsim test", out, e);
    assert_true(st == TS_OK || st == TS_ERR_PLAN);
    return st;
}

static void test_emit_knobs(void **state)
{
    (void)state;
    TsError err = {0};
    ModelSpec m;
    assert_int_equal(model_load("deepseek-v3", NULL, &m, &err), TS_OK);
    ClusterSpec cl;
    HwNet net;
    HwModel hw;
    hw_model_init(&hw);
    assert_int_equal(hw_cluster_load("dgx-h100", 1024, &cl, &err), TS_OK);
    hw_net_init(&net, &cl);
    hw.gpu = cl.gpu;
    SimSetup in = {.model = &m, .hw = &hw, .net = &net};
    sim_options_init(&in.opt);
    ParallelPlan *p = &in.plan;
    plan_init(p);
    p->gpus = 1024;
    p->pp = 16;
    p->ep = 64; /* 8 nodes of 8 */
    p->seq = 4096;
    p->global_batch = 1024;
    p->uneven = true;
    p->dist_opt = true;
    p->dtype = TS_DTYPE_FP8;
    p->fp8_recipe = PLAN_FP8_BLOCKWISE;
    p->recompute = PLAN_RECOMPUTE_SELECTIVE;
    p->recompute_modules = PLAN_RC_LAYERNORM | PLAN_RC_MLA_UP_PROJ | PLAN_RC_MOE_ACT;
    p->moe_dispatch = PLAN_MOE_DISPATCH_DEEPEP;
    p->moe_node_limit = 4;
    p->moe_capacity = 1.5;
    p->adam_moments = TS_DTYPE_BF16;
    TsBuf out = {0};
    TsError e;
    assert_int_equal(emit_one(REP_EMIT_MEGATRON, &in, &out, &e), TS_OK);
    static const char *const MLM[] = {"--moe-token-dispatcher-type flex\n", "--moe-enable-deepep\n",
                                      "--moe-router-num-groups 8\n", "--moe-router-group-topk 4\n",
                                      "--moe-expert-capacity-factor 1.5\n", "--fp8-recipe blockwise\n",
                                      "--recompute-modules layernorm moe_act mla_up_proj\n",
                                      "--use-precision-aware-optimizer\n", "--exp-avg-dtype bf16\n",
                                      "--exp-avg-sq-dtype bf16\n", "--mtp-num-layers 1\n", "tttmL'"};
    for (size_t i = 0; i < sizeof MLM / sizeof MLM[0]; i++) assert_non_null(strstr(out.data, MLM[i]));
    assert_null(strstr(out.data, "--moe-pad-expert-input-to-capacity"));
    assert_int_equal(emit_one(REP_EMIT_NEMO, &in, &out, &e), TS_OK);
    static const char *const MB[] = {"model.moe_token_dispatcher_type=flex\n", "model.moe_enable_deepep=true\n",
                                     "model.moe_router_num_groups=8\n", "model.moe_router_group_topk=4\n",
                                     "model.moe_pad_expert_input_to_capacity=false\n",
                                     "mixed_precision=bf16_with_fp8_subchannel_scaling_mixed\n",
                                     "'model.recompute_modules=[layernorm,moe_act,mla_up_proj]'\n",
                                     "optimizer.exp_avg_sq_dtype=bf16\n", "model.mtp_num_layers=1\n"};
    for (size_t i = 0; i < sizeof MB / sizeof MB[0]; i++) assert_non_null(strstr(out.data, MB[i]));
    assert_int_equal(emit_one(REP_EMIT_TORCHTITAN, &in, &out, &e), TS_ERR_PLAN);
    assert_int_equal(out.len, 0);
    assert_non_null(strstr(e.msg, "--emit torchtitan: "));
    assert_int_equal(emit_one(REP_EMIT_DEEPSPEED, &in, &out, &e), TS_ERR_PLAN);
    assert_int_equal(out.len, 0);
    assert_non_null(strstr(e.msg, "--emit deepspeed: "));

    /* Megatron's own limits, each a refusal naming the knob */
    p->fp8_recipe = PLAN_FP8_DELAYED; /* with layernorm and moe_act recompute */
    emit_one(REP_EMIT_MEGATRON, &in, &out, &e);
    assert_non_null(strstr(e.msg, "--fp8-recipe delayed"));
    p->fp8_recipe = PLAN_FP8_CURRENT;
    assert_int_equal(emit_one(REP_EMIT_MEGATRON, &in, &out, &e), TS_OK);
    assert_non_null(strstr(out.data, "--fp8-recipe tensorwise\n"));
    emit_one(REP_EMIT_NEMO, &in, &out, &e); /* Bridge's current-scaling recipe keeps BF16 ends */
    assert_non_null(strstr(e.msg, "--fp8-recipe current"));
    p->moe_pad = true;
    emit_one(REP_EMIT_MEGATRON, &in, &out, &e);
    assert_non_null(strstr(e.msg, "--moe-pad-to-capacity with --moe-dispatcher deepep"));
    p->moe_dispatch = PLAN_MOE_DISPATCH_ALLTOALL;
    assert_int_equal(emit_one(REP_EMIT_MEGATRON, &in, &out, &e), TS_OK);
    assert_non_null(strstr(out.data, "--moe-pad-expert-input-to-capacity\n"));
    p->dist_opt = false;
    emit_one(REP_EMIT_MEGATRON, &in, &out, &e);
    assert_non_null(strstr(e.msg, "--adam-moments bf16"));
    ts_buf_free(&out);
}

/* The names round-trip and each target runs its framework. */
static void test_emit_names(void **state)
{
    (void)state;
    for (int t = 0; t < REP_EMIT_COUNT; t++) {
        RepEmitTarget back;
        assert_true(rep_emit_parse(rep_emit_name((RepEmitTarget)t), &back));
        assert_int_equal(back, t);
    }
    RepEmitTarget x;
    assert_false(rep_emit_parse("jax", &x));
    assert_int_equal(rep_emit_framework(REP_EMIT_NEMO), PLAN_FRAMEWORK_MEGATRON);
    assert_int_equal(rep_emit_precision(REP_EMIT_TORCHTITAN), PLAN_PRECISION_AMP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emit_names),
        cmocka_unit_test(test_emit_dense),
        cmocka_unit_test(test_emit_learned_positions),
        cmocka_unit_test(test_emit_moe),
        cmocka_unit_test(test_emit_mla),
        cmocka_unit_test(test_emit_mla_no_mtp),
        cmocka_unit_test(test_emit_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
