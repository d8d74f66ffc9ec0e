/* The layer-cost cache of a SimWork (sim_work_cache_costs) changes nothing:
 * every valid plan of two sweep spaces (a dense and a MoE model, two GPU
 * counts each, so the straggler factor, group spans, ZeRO-3 DP groups and
 * expert parallelism all vary) is simulated on one caching work space, in
 * enumeration order and again in reverse (the CP exchange changing from plan
 * to plan), and on a non-caching one; every
 * scalar of the results, the breakdown and every stage must be bit-identical
 * (tolerance 0). The cache must have hit, or the test proves nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/search.h"
#include "trainsim/sim.h"
#include "../../src/search/search_int.h"

static void same_result(const SimResult *a, const SimResult *b)
{
    assert_memory_equal(&a->iteration_time_s, &b->iteration_time_s, sizeof(double));
    assert_memory_equal(&a->pipeline_time_s, &b->pipeline_time_s, sizeof(double));
    assert_memory_equal(&a->mfu, &b->mfu, sizeof(double));
    assert_memory_equal(&a->hfu, &b->hfu, sizeof(double));
    assert_memory_equal(&a->model_flops_per_iteration, &b->model_flops_per_iteration, sizeof(double));
    assert_memory_equal(&a->hardware_flops_per_iteration, &b->hardware_flops_per_iteration, sizeof(double));
    assert_memory_equal(&a->bubble_fraction, &b->bubble_fraction, sizeof(double));
    assert_memory_equal(&a->breakdown, &b->breakdown, sizeof a->breakdown);
    assert_int_equal(a->n_stages, b->n_stages);
    assert_memory_equal(a->stages, b->stages, (size_t)a->n_stages * sizeof *a->stages);
}

static int64_t check_model(const char *model, int64_t gb, int64_t seq, int64_t max_plans)
{
    TsError err = {0};
    ModelSpec m;
    assert_int_equal(model_load(model, NULL, &m, &err), TS_OK);
    const int64_t gpus[2] = {64, 96};
    ClusterSpec cl[2];
    HwNet net[2];
    HwModel hw;
    hw_model_init(&hw);
    SearchEvalCtx x;
    SearchConfig c;
    search_config_init(&c);
    c.gpus.n = 2;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(hw_cluster_load("dgx-h100", gpus[i], &cl[i], &err), TS_OK);
        hw_net_init(&net[i], &cl[i]);
        c.gpus.v[i] = gpus[i];
    }
    hw.gpu = cl[0].gpu;
    search_eval_init(&x, &m, &hw, gb, seq);
    for (int i = 0; i < 2; i++) assert_true(search_eval_add_net(&x, gpus[i], &net[i]));
    c.global_batch = gb;
    c.seq = seq;
    c.layers = m.layers;
    c.experts = m.experts;
    c.pp.max = 8;
    SearchSpace s;
    assert_int_equal(search_space_build(&c, &s, &err), TS_OK);
    SimWork *cw = sim_work_create(), *pw = sim_work_create();
    sim_work_cache_costs(cw, true);
    int64_t n = 0;
    SimResult a, b;
    for (int pass = 0; pass < 2; pass++) {
        int64_t k = 0;
        for (int64_t j = 0; j < s.total && k < max_plans; j++) {
            int64_t idx = pass ? s.total - 1 - j : j;
            SearchKnobs kn;
            search_space_decode(&s, idx, &kn);
            SimSetup in1, in2;
            if (!search_sim_setup(&x, &kn, &in1)) continue;
            /* the CP exchange varies from plan to plan: the key must tell them apart */
            in1.opt.cp_comm = (SimCpComm)(idx % 3);
            in2 = in1;
            TsError e1 = {0}, e2 = {0};
            TsStatus s1 = sim_simulate(&in1, cw, &a, &e1), s2 = sim_simulate(&in2, pw, &b, &e2);
            assert_int_equal(s1, s2);
            if (s1 != TS_OK) continue;
            /* a's stages live in cw, b's in pw: both still valid here */
            same_result(&a, &b);
            k++;
        }
        n += k;
    }
    int64_t hits = 0, misses = 0;
    sim_work_cost_stats(cw, &hits, &misses);
    print_message("%s: %lld plans compared, cache %lld hits, %lld misses\n", model, (long long)n, (long long)hits, (long long)misses);
    assert_true(hits > 0);
    assert_true(misses > 0);
    sim_work_cost_stats(pw, &hits, &misses);
    assert_int_equal(hits + misses, 0);
    sim_work_destroy(cw);
    sim_work_destroy(pw);
    search_space_free(&s);
    return n;
}

static void test_cache_dense(void **state)
{
    (void)state;
    assert_true(check_model("llama3-8b", 192, 4096, 4000) > 1000);
}

static void test_cache_moe(void **state)
{
    (void)state;
    assert_true(check_model("mixtral-8x7b", 192, 4096, 4000) > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_dense),
        cmocka_unit_test(test_cache_moe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
