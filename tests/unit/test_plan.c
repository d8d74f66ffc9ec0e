/* test_plan.c — plan derivation, every validation rule with its message,
 * Megatron rank layout and process groups vs hand-computed layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "trainsim/plan.h"

static ModelSpec gpt3(void)
{
    ModelSpec m;
    assert_int_equal(model_preset("gpt3-175b", &m, NULL), TS_OK);
    return m;
}

static void test_derive(void **state)
{
    (void)state;
    ModelSpec m = gpt3();
    ParallelPlan p;
    plan_init(&p);
    p.tp = 8; p.pp = 8; p.vpp = 3; p.gpus = 64; p.seq = 2048; p.global_batch = 64;
    p.schedule = PLAN_SCHED_INTERLEAVED;
    TsError err = {0};
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(p.dp, 1);
    assert_int_equal(p.grad_accum, 64);
    assert_true(p.sp);
    assert_int_equal(p.etp, 8);
    assert_int_equal(p.n_chunks, 24);
    plan_init(&p);
    p.tp = 4; p.gpus = 32; p.micro_batch = 2; p.global_batch = 256;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(p.dp, 8);
    assert_int_equal(p.grad_accum, 16);
    assert_int_equal(p.seq, 2048); /* min(max positions 2048, 4096) */
}

/* Each rule: a plan tweak and the message it must produce. */
typedef struct { const char *what; void (*tweak)(ParallelPlan *, ModelSpec *); const char *msg; } Rule;
static void r_tp(ParallelPlan *p, ModelSpec *m) { (void)m; p->tp = 5; p->gpus = 40; }
static void r_kv(ParallelPlan *p, ModelSpec *m) { m->kv_heads = 4; p->tp = 8; p->gpus = 8; }
static void r_layers(ParallelPlan *p, ModelSpec *m) { (void)m; p->pp = 5; p->gpus = 5; }
static void r_stage_sum(ParallelPlan *p, ModelSpec *m)
{ (void)m; static const int64_t sl[2] = {40, 40}; p->pp = 2; p->gpus = 2; p->stage_layers = sl; p->n_stage_layers = 2; }
static void r_stage_n(ParallelPlan *p, ModelSpec *m)
{ (void)m; static const int64_t sl[3] = {32, 32, 32}; p->pp = 2; p->gpus = 2; p->stage_layers = sl; p->n_stage_layers = 3; }
static void r_gpus(ParallelPlan *p, ModelSpec *m) { (void)m; p->tp = 8; p->pp = 8; p->gpus = 100; }
static void r_gpus_dp(ParallelPlan *p, ModelSpec *m) { (void)m; p->tp = 8; p->dp = 2; p->gpus = 8; }
static void r_gb(ParallelPlan *p, ModelSpec *m) { (void)m; p->dp = 4; p->gpus = 4; p->global_batch = 6; }
static void r_vpp_pp(ParallelPlan *p, ModelSpec *m) { (void)m; p->vpp = 2; p->schedule = PLAN_SCHED_INTERLEAVED; }
static void r_vpp_sched(ParallelPlan *p, ModelSpec *m) { (void)m; p->pp = 2; p->gpus = 2; p->vpp = 2; }
static void r_interleaved(ParallelPlan *p, ModelSpec *m) { (void)m; p->pp = 2; p->gpus = 2; p->schedule = PLAN_SCHED_INTERLEAVED; }
static void r_sp(ParallelPlan *p, ModelSpec *m) { (void)m; p->sp = true; p->sp_set = true; }
static void r_cp_seq(ParallelPlan *p, ModelSpec *m) { (void)m; p->cp = 3; p->gpus = 3; p->seq = 2044; }
static void r_ep_dense(ParallelPlan *p, ModelSpec *m) { (void)m; p->ep = 2; p->gpus = 2; }
static void r_ep_div(ParallelPlan *p, ModelSpec *m) { m->experts = 6; m->topk = 2; m->moe_ffn = 1024; p->ep = 4; p->gpus = 4; }
static void r_ep_carve(ParallelPlan *p, ModelSpec *m) { m->experts = 8; m->topk = 2; m->moe_ffn = 1024; p->ep = 8; p->gpus = 4; }
static void r_zero(ParallelPlan *p, ModelSpec *m) { (void)m; p->zero = 4; }
static void r_zero_dist(ParallelPlan *p, ModelSpec *m) { (void)m; p->zero = 1; p->dist_opt = true; }
static void r_zero_pp(ParallelPlan *p, ModelSpec *m) { (void)m; p->zero = 2; p->pp = 2; p->gpus = 2; }
static void r_shampoo(ParallelPlan *p, ModelSpec *m) { (void)m; p->optimizer = PLAN_OPTIM_SHAMPOO; p->shampoo_blocks = 0; }
static void r_rl(ParallelPlan *p, ModelSpec *m) { (void)m; p->recompute_layers = 2; }
static void r_seq_pos(ParallelPlan *p, ModelSpec *m) { (void)m; p->seq = 4096; }
static void r_deg(ParallelPlan *p, ModelSpec *m) { (void)m; p->pp = 0; }

static void test_rules(void **state)
{
    (void)state;
    const Rule rules[] = {
        {"tp heads", r_tp, "--tp 5 does not divide the 96 attention heads"},
        {"tp kv", r_kv, "--tp 8 does not divide the 4 key/value heads"},
        {"layers", r_layers, "pp*vpp = 5 does not divide the 96 layers"},
        {"stage sum", r_stage_sum, "--stage-layers adds up to 80 layers, the model has 96"},
        {"stage n", r_stage_n, "--stage-layers has 3 entries, expected pp*vpp = 2"},
        {"gpus", r_gpus, "--gpus 100 is not a multiple of tp*pp*cp = 64"},
        {"gpus dp", r_gpus_dp, "--gpus 8 is not tp*pp*cp*dp = 16"},
        {"global batch", r_gb, "--global-batch 6 is not divisible by micro-batch*dp = 4"},
        {"vpp pp", r_vpp_pp, "--vpp 2 needs --pp > 1 (got --pp 1)"},
        {"vpp sched", r_vpp_sched, "--vpp 2 needs the interleaved schedule"},
        {"interleaved", r_interleaved, "--schedule interleaved needs --vpp > 1"},
        {"sp", r_sp, "--sp needs --tp > 1"},
        {"cp seq", r_cp_seq, "--seq 2044 is not divisible by 2*cp = 6"},
        {"ep dense", r_ep_dense, "--ep 2 given for a dense model"},
        {"ep div", r_ep_div, "--ep 4 does not divide the 6 experts"},
        {"ep carve", r_ep_carve, "--ep * --etp = 8 does not divide tp*cp*dp = 4"},
        {"zero", r_zero, "--zero 4 is not a ZeRO stage (0..3)"},
        {"zero dist", r_zero_dist, "--dist-opt and --zero 1 both shard the optimizer state"},
        {"zero pp", r_zero_pp, "--zero 2 cannot be combined with --pp 2"},
        {"shampoo", r_shampoo, "--shampoo-blocks must be at least 1, got 0"},
        {"recompute layers", r_rl, "--recompute-layers 2 needs --recompute full"},
        {"seq positions", r_seq_pos, "--seq 4096 exceeds the model's 2048 learned positions"},
        {"degree", r_deg, "--pp must be at least 1, got 0"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        ModelSpec m = gpt3();
        ParallelPlan p;
        plan_init(&p);
        p.seq = 2048;
        rules[i].tweak(&p, &m);
        TsError err = {0};
        TsStatus st = plan_resolve(&m, &p, &err);
        if (st != TS_ERR_PLAN || strcmp(err.msg, rules[i].msg) != 0) {
            print_error("rule '%s': status %d msg '%s', want '%s'\n", rules[i].what, st, err.msg,
                        rules[i].msg);
            fail();
        }
    }
    /* ep x etp carved from tp*cp*dp: 8 GPUs, ep 4 x etp 4 = 16 > 8 */
    ModelSpec m = gpt3();
    m.experts = 8; m.topk = 2; m.moe_ffn = 1024;
    ParallelPlan p;
    plan_init(&p);
    p.seq = 2048; p.tp = 4; p.gpus = 8; p.ep = 4;
    TsError err = {0};
    assert_int_equal(plan_resolve(&m, &p, &err), TS_ERR_PLAN);
    assert_string_equal(err.msg, "--ep * --etp = 16 does not divide tp*cp*dp = 8");
    /* PyTorch FSDP's ZeRO-2 under a pipeline (Llama 3 §3.3.2): torchtitan
     * takes --zero 2 --pp; ZeRO-3 with a pipeline stays refused */
    m = gpt3();
    plan_init(&p);
    p.seq = 2048; p.pp = 2; p.dp = 2; p.gpus = 4; p.global_batch = 4; p.zero = 2;
    p.framework = PLAN_FRAMEWORK_TORCHTITAN;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    plan_init(&p);
    p.seq = 2048; p.pp = 2; p.dp = 2; p.gpus = 4; p.global_batch = 4; p.zero = 3;
    p.framework = PLAN_FRAMEWORK_TORCHTITAN;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_ERR_PLAN);
    assert_string_equal(err.msg, "--zero 3 cannot be combined with --pp 2");
}

static void test_layout(void **state)
{
    (void)state;
    ParallelPlan p;
    plan_init(&p);
    p.tp = 2; p.cp = 2; p.pp = 2; p.gpus = 16; p.seq = 2048;
    TsError err = {0};
    assert_int_equal(plan_resolve(NULL, &p, &err), TS_OK);
    assert_int_equal(p.dp, 2);
    PlanCoord c;
    plan_rank_coord(&p, 13, &c); /* 13 = 1 + 2*(0 + 2*(1 + 2*1)) */
    assert_int_equal(c.tp, 1); assert_int_equal(c.cp, 0);
    assert_int_equal(c.dp, 1); assert_int_equal(c.pp, 1);
    assert_int_equal(plan_rank_of(&p, 1, 0, 1, 1), 13);
    int64_t mem[16];
    const struct { PlanGroup g; int64_t n; int64_t m[4]; } want[] = {
        {PLAN_GROUP_TP, 2, {12, 13}}, {PLAN_GROUP_CP, 2, {13, 15}},
        {PLAN_GROUP_DP, 2, {9, 13}},  {PLAN_GROUP_PP, 2, {5, 13}},
        {PLAN_GROUP_DPCP, 4, {9, 11, 13, 15}}, {PLAN_GROUP_EMBED, 2, {5, 13}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(plan_group_members(&p, want[i].g, 13, mem, 16), want[i].n);
        for (int64_t k = 0; k < want[i].n; k++) assert_int_equal(mem[k], want[i].m[k]);
    }
    /* every member of every group sees the same group */
    for (int g = 0; g < PLAN_GROUP_COUNT; g++)
        for (int64_t r = 0; r < 16; r++) {
            PlanGroupInfo a, b;
            plan_group(&p, (PlanGroup)g, r, 8, &a);
            int64_t n = plan_group_members(&p, (PlanGroup)g, r, mem, 16);
            assert_int_equal(mem[a.index], r);
            for (int64_t k = 0; k < n; k++) {
                plan_group(&p, (PlanGroup)g, mem[k], 8, &b);
                assert_int_equal(a.base, b.base);
                assert_int_equal(b.index, k);
            }
        }
    /* expert layout: tp 2, dp 4, ep 2, etp 1 (8 ranks): ep_i = rank % 2, edp_i = rank / 2 */
    ModelSpec m;
    model_preset("mixtral-8x7b", &m, NULL);
    plan_init(&p);
    p.tp = 2; p.gpus = 8; p.ep = 2; p.etp = 1; p.seq = 4096;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(plan_group_members(&p, PLAN_GROUP_EP, 5, mem, 16), 2);
    assert_int_equal(mem[0], 4); assert_int_equal(mem[1], 5);
    assert_int_equal(plan_group_members(&p, PLAN_GROUP_EDP, 5, mem, 16), 4);
    assert_int_equal(mem[0], 1); assert_int_equal(mem[3], 7);
}

static void test_nodes(void **state)
{
    (void)state;
    ParallelPlan p;
    plan_init(&p);
    p.tp = 8; p.pp = 8; p.gpus = 64; p.seq = 2048;
    TsError err = {0};
    assert_int_equal(plan_resolve(NULL, &p, &err), TS_OK);
    PlanGroupInfo gi;
    plan_group(&p, PLAN_GROUP_TP, 9, 8, &gi);
    assert_int_equal(gi.nodes, 1); assert_int_equal(gi.per_node, 8); assert_int_equal(gi.base, 8);
    plan_group(&p, PLAN_GROUP_PP, 9, 8, &gi);
    assert_int_equal(gi.nodes, 8); assert_int_equal(gi.per_node, 1); assert_int_equal(gi.index, 1);
    plan_init(&p);
    p.tp = 2; p.gpus = 16; p.seq = 2048; /* dp 8, stride 2: 4 per node over 2 nodes */
    assert_int_equal(plan_resolve(NULL, &p, &err), TS_OK);
    plan_group(&p, PLAN_GROUP_DP, 3, 8, &gi);
    assert_int_equal(gi.size, 8); assert_int_equal(gi.nodes, 2); assert_int_equal(gi.per_node, 4);
    plan_group(&p, PLAN_GROUP_DP, 3, 6, &gi); /* irregular: stride 2, 6 GPUs per node */
    assert_int_equal(gi.nodes, 3); assert_int_equal(gi.per_node, 3);
}

/* The uneven rule (ParallelPlan.uneven): ceil(L/c) layers per chunk, one
 * fewer on the last, first, second-to-last, ... chunk; the counts add up to
 * L, first layers and the layer -> chunk map agree with them; without the
 * flag plan_resolve refuses the split. With L = c - 1 or c - 2 the last and
 * the first chunk hold no layer (the loss, the embedding alone). */
static void test_uneven(void **state)
{
    (void)state;
    static const struct {
        int64_t layers, pp, vpp;
        int64_t want[16];
    } cases[] = {
        {70, 12, 1, {5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5}},          /* BLOOM on 12 stages */
        {61, 16, 1, {3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3}}, /* DeepSeek-V3 */
        {126, 16, 1, {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}}, /* Llama 3 405B */
        {10, 2, 3, {1, 2, 2, 2, 2, 1}},                               /* interleaved: by chunk */
        {7, 7, 1, {1, 1, 1, 1, 1, 1, 1}},                             /* divides: the even split */
        {6, 4, 2, {0, 1, 1, 1, 1, 1, 1, 0}}, /* the embedding and the loss alone (Llama 3 405B's layout) */
        {7, 4, 2, {1, 1, 1, 1, 1, 1, 1, 0}}, /* the loss alone */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ModelSpec m;
        TsError err = {0};
        assert_int_equal(model_preset("llama2-7b", &m, &err), TS_OK);
        m.layers = cases[i].layers;
        ParallelPlan p;
        plan_init(&p);
        p.tp = 1;
        p.pp = cases[i].pp;
        p.vpp = cases[i].vpp;
        p.gpus = p.pp;
        p.global_batch = 64;
        p.seq = 2048;
        if (p.vpp > 1) p.schedule = PLAN_SCHED_INTERLEAVED;
        bool divides = cases[i].layers % (cases[i].pp * cases[i].vpp) == 0;
        assert_int_equal(plan_resolve(&m, &p, &err), divides ? TS_OK : TS_ERR_PLAN);
        p.uneven = true;
        assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
        int64_t c = p.pp * p.vpp, sum = 0;
        for (int64_t k = 0; k < c; k++) {
            assert_int_equal(plan_chunk_layers(&p, m.layers, k), cases[i].want[k]);
            assert_int_equal(plan_chunk_first_layer(&p, m.layers, k), sum);
            for (int64_t l = sum; l < sum + cases[i].want[k]; l++) assert_int_equal(plan_layer_chunk(&p, m.layers, l), k);
            sum += cases[i].want[k];
        }
        assert_int_equal(sum, m.layers);
    }
    /* fewer layers than the chunks but two: refused even with the rule */
    {
        ModelSpec m;
        TsError err = {0};
        assert_int_equal(model_preset("llama2-7b", &m, &err), TS_OK);
        m.layers = 5;
        ParallelPlan p;
        plan_init(&p);
        p.tp = 1, p.pp = 4, p.vpp = 2, p.gpus = 4, p.global_batch = 64, p.seq = 2048;
        p.schedule = PLAN_SCHED_INTERLEAVED, p.uneven = true;
        assert_int_equal(plan_resolve(&m, &p, &err), TS_ERR_PLAN);
    }
    /* the closed-form first layer equals the running sum for every split of
     * up to 200 layers */
    for (int64_t L = 1; L <= 200; L++)
        for (int64_t c = 1; c <= L + 2; c++) {
            ParallelPlan p;
            plan_init(&p);
            p.pp = c;
            p.uneven = true;
            int64_t sum = 0;
            for (int64_t k = 0; k < c; k++) {
                if (plan_chunk_first_layer(&p, L, k) != sum) fail_msg("L %lld c %lld chunk %lld", (long long)L, (long long)c, (long long)k);
                sum += plan_chunk_layers(&p, L, k);
            }
            assert_int_equal(sum, L);
        }
}

/* The default-length rule (plan.h), on a learned-position model of 1024
 * positions, a RoPE model of 8192, one of 2048 and a model that gives none. */
/* plan_least_vpp_group against the rule itself: the smallest N in [pp, m]
 * that leaves a last group of 0 or at least pp, 0 where pp's own groups
 * run m (or m < pp). */
static void test_least_vpp_group(void **state)
{
    (void)state;
    for (int64_t pp = 1; pp <= 16; pp++)
        for (int64_t m = 1; m <= 200; m++) {
            int64_t want = 0;
            if (m >= pp && m % pp != 0)
                for (int64_t n = pp; n <= m && !want; n++)
                    if (m % n == 0 || m % n >= pp) want = n;
            assert_int_equal(plan_least_vpp_group(pp, m), want);
        }
    assert_int_equal(plan_least_vpp_group(4, 10), 5);  /* 10 = 5 + 5 */
    assert_int_equal(plan_least_vpp_group(4, 11), 6);  /* 6 + 5 */
    assert_int_equal(plan_least_vpp_group(8, 12), 12); /* one group */
}

static void test_default_seq(void **state)
{
    (void)state;
    ModelSpec gpt2, llama, gpt3;
    assert_int_equal(model_preset("gpt2", &gpt2, NULL), TS_OK);
    assert_int_equal(model_preset("llama3-8b", &llama, NULL), TS_OK);
    assert_int_equal(model_preset("gpt3-175b", &gpt3, NULL), TS_OK);
    assert_int_equal(plan_default_seq(&gpt2), 1024);
    assert_int_equal(plan_default_seq(&llama), 4096);
    assert_int_equal(plan_default_seq(&gpt3), 2048);
    llama.max_positions = 0;
    assert_int_equal(plan_default_seq(&llama), 4096);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_derive), cmocka_unit_test(test_rules),
        cmocka_unit_test(test_layout), cmocka_unit_test(test_nodes), cmocka_unit_test(test_uneven),
        cmocka_unit_test(test_default_seq), cmocka_unit_test(test_least_vpp_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
